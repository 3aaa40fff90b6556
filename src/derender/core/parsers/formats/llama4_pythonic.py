"""The ``llama4_pythonic`` tool-call format (Llama 4): ``pythonic``'s grammar, read by the
``pythonic`` machine, with Llama 4's Python-tag markers around the list.

As vLLM 0.33's ``Llama4PythonicToolParser``: an output that starts with ``<|python_start|>``
has that marker stripped and then every ``<|python_end|>`` removed before the call list is
read (``<|python_start|>[f(x='a<|python_end|>b')]<|python_end|>`` is ``f(x='ab')``); an
output that starts otherwise is read exactly as ``pythonic`` reads it. The markers are matched
as text, as vLLM does (with ``skip_special_tokens`` Llama 4's special tokens never reach the
text). What stays content is the output as written: markers included. The JSON-schema forms of
"required" and named ``tool_choice`` are read as ``pythonic`` reads them (vLLM does not strip
there either).

This module is a filter in front of the ``pythonic`` machine (no grammar of its own):

- at the start, the text is held until it shows whether it opens with ``<|python_start|>``
  (at most that marker's length less one);
- after the marker, text is fed to the machine in pieces between ``<|python_end|>`` markers,
  which are dropped; a possible start of one at the end of a chunk is held (at most the
  marker's length less one characters); once the machine has turned to content (the first
  call unreadable, or no call list at all), the rest is passed unfiltered and the stripped
  ``<|python_start|>`` is put back in front of that content when no call was read (an end
  marker removed before the machine turned to content is not put back: README
  compatibility, ``pythonic`` output).

State: the phase, the held characters, and the ``pythonic`` state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from derender.core.parsers.formats import pythonic
from derender.core.parsers.formats.pythonic import PythonicState
from derender.core.parsers.primitives import merge
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer

START_MARK, END_MARK = "<|python_start|>", "<|python_end|>"

OPENING, STRIPPED, RAW = "opening", "stripped", "raw"
"""Phases: deciding whether the output opens with the start marker; read with the markers
stripped; read as written (no marker at the start, or content already)."""
PHASES = (OPENING, STRIPPED, RAW)


@dataclass(frozen=True, slots=True)
class Llama4PythonicState(ToolState):
    phase: str = OPENING
    held: str = ""
    """OPENING: the output so far (a prefix of the start marker); STRIPPED: a possible start
    of an end marker."""
    inner: PythonicState = field(default_factory=PythonicState)


def feed(state: Llama4PythonicState, text: str, final: bool, context: ToolContext
         ) -> tuple[str, list[ToolCallDelta], Llama4PythonicState]:
    """Content and tool-call deltas of new text; ``final`` settles what was held back."""
    phase, inner = state.phase, state.inner
    buffer = state.held + text
    if phase == OPENING:
        if context.forced_name is not None or context.required:
            phase = RAW
        elif buffer.startswith(START_MARK):
            phase, buffer = STRIPPED, buffer[len(START_MARK):]
        elif START_MARK.startswith(buffer) and not final:
            return "", [], Llama4PythonicState(OPENING, buffer, inner)
        else:
            phase = RAW
    if phase == RAW:
        content, deltas, inner = pythonic.feed(inner, buffer, final, context)
        return content, deltas, Llama4PythonicState(RAW, "", inner)
    return _stripped(buffer, final, context, inner)


def _stripped(buffer: str, final: bool, context: ToolContext, inner: PythonicState
              ) -> tuple[str, list[ToolCallDelta], Llama4PythonicState]:
    """Feed ``buffer`` (after the start marker) in pieces between end markers."""
    content: list[str] = []
    deltas: list[ToolCallDelta] = []
    at = 0
    while True:
        found = buffer.find(END_MARK, at)
        if found < 0:
            held = "" if final else _partial(buffer, at)
            piece, last = buffer[at:len(buffer) - len(held)], final
        else:
            held, piece, last = "", buffer[at:found], False
        out, more, inner = pythonic.feed(inner, piece, last, context)
        deltas += more
        if inner.mode == pythonic.CONTENT:  # the rest is content, as written
            rest = buffer[found:] if found >= 0 else held
            content.append((START_MARK if inner.calls == 0 else "") + out)
            out, more, inner = pythonic.feed(inner, rest, final, context)
            content.append(out)
            return "".join(content), merge(deltas + more), \
                Llama4PythonicState(RAW, "", inner)
        content.append(out)
        if found < 0:
            return "".join(content), merge(deltas), \
                Llama4PythonicState(STRIPPED, held, inner)
        at = found + len(END_MARK)


def _partial(buffer: str, at: int) -> str:
    """The longest end of ``buffer[at:]`` that starts the end marker."""
    for size in range(min(len(END_MARK) - 1, len(buffer) - at), 0, -1):
        if END_MARK.startswith(buffer[-size:]):
            return buffer[-size:]
    return ""


def _encode(state: Llama4PythonicState, w: Writer) -> None:
    w.uint(PHASES.index(state.phase))
    w.text(state.held)
    pythonic.FORMAT.encode(state.inner, w)


def _decode(r: Reader) -> Llama4PythonicState:
    phase, held = r.choice(PHASES), r.text()
    if len(held) >= max(len(START_MARK), len(END_MARK)) or (phase == RAW and held):
        raise ValueError("malformed llama4_pythonic state")
    return Llama4PythonicState(phase, held, pythonic.FORMAT.decode(r))


FORMAT = ToolFormat("llama4_pythonic", Llama4PythonicState, Llama4PythonicState, feed, _encode,
                    _decode)
