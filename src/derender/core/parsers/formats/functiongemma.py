"""The ``functiongemma`` tool-call format (Google FunctionGemma, Gemma 3 270M):
``<start_function_call>call:NAME{key:<escape>value<escape>,…}<end_function_call>``.

As vLLM 0.33's ``FunctionGemmaToolParser`` (the markers are special tokens, kept in the text
on the parser path, and matched as text), which reads the whole output with two regular
expressions:

- a call is ``<start_function_call>call:`` a name (``\\w+``) and ``{``, its arguments text up
  to the first ``}<end_function_call>`` after it (over any later call's markers), or, when
  none follows, to the output's end; a start marker not followed by such a header is skipped;
- the arguments are the ``key:<escape>value<escape>`` pairs found in that text (anything else
  there is ignored: bare values too), each value JSON-decoded where it is JSON, else the
  string (``json.dumps`` of the object, later keys overriding);
- calls read: the content is the text before the first start marker, stripped (null when
  empty); text after and between calls is dropped. No call: the output as written.

One machine for streaming and non-streaming (docs/design.md, Parsers):

- before the first start marker, content streams; whitespace at the output's start (at most
  ``MAX_LEADING_SPACE`` characters) and before the marker is held, and so is a possible start
  of the marker;
- from the first start marker, text that is no call is held while no call has been read (it
  is content if none ever is), at most ``MAX_PENDING`` characters, past that it is content
  (README compatibility);
- a call is held from its header to its ``}<end_function_call>`` and read whole, as vLLM reads
  it; one whose end does not start within ``MAX_CALL`` characters of its ``{`` is read from
  those characters and ends the reading (README compatibility).

Under a forced ``tool_choice`` an output starting with ``{`` or ``[`` (after whitespace) is
read by ``pythonic`` (the JSON-schema forms), anything else as above (vLLM reads only the JSON
forms there: README compatibility).

State: the phase, the held text, the pending text, the name of the call being read, the call
counter, and the ``pythonic`` state of the JSON forms.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from derender.core.parsers.formats import pythonic
from derender.core.parsers.formats.pythonic import PythonicState
from derender.core.parsers.primitives import MAX_LEADING_SPACE, merge
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer

START_MARK, END_MARK, ESCAPE = "<start_function_call>", "<end_function_call>", "<escape>"
CLOSE = "}" + END_MARK
MAX_NAME = 256
"""Characters of a call's name; a longer header is no call."""
MAX_CALL = 2048
"""A call whose ``}<end_function_call>`` starts within this many characters of its ``{`` is
read whole; a longer one is read from these characters."""
MAX_PENDING = 1024
"""Characters after the first start marker held while no call is read."""

OPENING, TEXT, SCAN, CALL, DONE, RAW = "opening", "text", "scan", "call", "done", "raw"
"""Phases: at the output's start (whitespace held); content before the first start marker;
looking for a call; inside a call; nothing more read; read by ``pythonic`` alone (the
JSON-schema forms under a forced ``tool_choice``)."""
PHASES = (OPENING, TEXT, SCAN, CALL, DONE, RAW)

_HEADER = re.compile(r"call:(\w+)\{")
_HEADER_PREFIX = re.compile(r"(c(a(l(l(:\w*)?)?)?)?)?\Z")
_WORD = re.compile(r"\w")


@dataclass(frozen=True, slots=True)
class FunctionGemmaState(ToolState):
    phase: str = OPENING
    held: str = ""
    """OPENING/TEXT: held whitespace and a possible start of the start marker; SCAN: a start
    marker whose header is not known yet, or a possible start of one; CALL: the arguments
    text so far."""
    pending: str = ""
    """Whitespace before the first start marker and the text after it that is no call, while
    no call is read (the content as written if none is)."""
    spilled: bool = False
    """The pending text passed ``MAX_PENDING`` and is content from then on."""
    name: str = ""
    calls: int = 0
    inner: PythonicState = field(default_factory=PythonicState)


def feed(state: FunctionGemmaState, text: str, final: bool, context: ToolContext
         ) -> tuple[str, list[ToolCallDelta], FunctionGemmaState]:
    """Content and tool-call deltas of new text; ``final`` settles what was held back."""
    run = _Run(state)
    buffer = state.held + text
    if run.phase == OPENING and (context.forced_name is not None or context.required):
        stripped = buffer.lstrip()
        if not stripped and not final and len(buffer) <= MAX_LEADING_SPACE:
            return "", [], FunctionGemmaState(OPENING, buffer)
        if stripped[:1] in ("{", "["):  # the JSON-schema forms
            run.phase = RAW
    if run.phase == RAW:
        out, more, run.inner = pythonic.feed(run.inner, buffer, final, context)
        run.content.append(out)
        run.deltas += more
    elif run.phase in (OPENING, TEXT):
        buffer = run.text(buffer, final)
    if run.phase in (SCAN, CALL):
        run.scan(buffer, final)
    return "".join(run.content), merge(run.deltas), run.state()


class _Run:
    """One feed's working copy of the state and what it returns."""

    def __init__(self, state: FunctionGemmaState) -> None:
        self.phase, self.pending, self.spilled = state.phase, state.pending, state.spilled
        self.name, self.calls, self.inner = state.name, state.calls, state.inner
        self.held = ""
        self.content: list[str] = []
        self.deltas: list[ToolCallDelta] = []

    def state(self) -> FunctionGemmaState:
        return FunctionGemmaState(self.phase, self.held, self.pending, self.spilled, self.name,
                                  self.calls, self.inner)

    def text(self, buffer: str, final: bool) -> str:
        """Content before the first start marker; returns the text from it on (phase SCAN)."""
        at = buffer.find(START_MARK)
        keep = "" if at >= 0 or final else _partial(buffer, START_MARK)
        head = buffer[:at] if at >= 0 else buffer[:len(buffer) - len(keep)]
        body = head.rstrip()
        if body:
            self.content.append(self.pending + body)
            self.pending, self.phase = "", TEXT
        self.pending += head[len(body):]
        if at >= 0:
            self.phase = SCAN
            return buffer[at:]
        if final or len(self.pending) > MAX_LEADING_SPACE:
            self.content.append(self.pending)
            self.pending, self.phase = "", TEXT
        self.held = keep
        return ""

    def scan(self, buffer: str, final: bool) -> None:
        """Calls from the first start marker on (read in place, by position)."""
        pos = 0
        while True:
            if self.phase == DONE:
                return
            if self.phase == CALL:
                pos = self._call(buffer, pos, final)
                if pos < 0:
                    return
                continue
            at = buffer.find(START_MARK, pos)
            if at < 0:
                keep = "" if final else _partial(buffer[pos:], START_MARK)
                self._other(buffer[pos:len(buffer) - len(keep)])
                self.held = keep
                break
            self._other(buffer[pos:at])
            header = _HEADER.match(buffer, at + len(START_MARK))
            if header is None or len(header.group(1)) > MAX_NAME:
                rest = buffer[at + len(START_MARK):]
                if not final and len(rest) <= MAX_NAME + 6 and _HEADER_PREFIX.match(rest):
                    self.held = buffer[at:]  # the header may still come
                    break
                self._other(START_MARK)
                pos = at + len(START_MARK)
                continue
            self.phase, self.name, pos = CALL, header.group(1), header.end()
        if final and self.calls == 0:
            self.content.append(self.pending + self.held)
            self.pending = self.held = ""

    def _call(self, buffer: str, pos: int, final: bool) -> int:
        """Read the call whose arguments start at ``pos``; where reading goes on, or -1."""
        end = buffer.find(CLOSE, pos)
        if 0 <= end - pos <= MAX_CALL:
            self._read(buffer[pos:end])
            self.phase = SCAN
            return end + len(CLOSE)
        if end >= 0 or len(buffer) - pos >= MAX_CALL + len(CLOSE):
            self._read(buffer[pos:pos + MAX_CALL])  # cut there: nothing more is read
            self.phase = DONE
            return -1
        if final:  # vLLM's second pattern: the arguments run to the output's end
            self._read(buffer[pos:])
            self.phase = DONE
            return -1
        self.held = buffer[pos:]
        return -1

    def _read(self, arguments: str) -> None:
        self.deltas.append(ToolCallDelta(self.calls, self.name, read_arguments(arguments)))
        self.calls += 1
        self.name, self.pending = "", ""

    def _other(self, text: str) -> None:
        """Text from the first start marker on that is no call."""
        if self.calls or not text:
            return
        if self.spilled:
            self.content.append(text)
            return
        self.pending += text
        if len(self.pending) > MAX_PENDING:
            self.content.append(self.pending)
            self.pending, self.spilled = "", True


def read_arguments(text: str) -> str:
    """The JSON arguments of a call's text, as vLLM's ``_parse_arguments`` reads them."""
    arguments: dict[str, Any] = {}
    for key, value in _pairs(text):
        try:
            decoded = json.loads(value)
            json.dumps(decoded)
        except ValueError:
            decoded = value
        except RecursionError:  # nested too deep for Python: the string (README)
            decoded = value
        arguments[key] = decoded
    return json.dumps(arguments, ensure_ascii=False)


_SEPARATOR = ":" + ESCAPE


def _pairs(text: str) -> list[tuple[str, str]]:
    """``re.findall(r"(\\w+):<escape>(.*?)<escape>", text, re.DOTALL)`` in linear time (the
    pattern backtracks over every start inside a long word): a key is the run of word
    characters ending at a ``:<escape>``, from where the search stands on."""
    found: list[tuple[str, str]] = []
    pos = 0
    while True:
        sep = text.find(_SEPARATOR, pos)
        if sep < 0:
            return found
        start = sep
        while start > pos and _WORD.match(text[start - 1]):
            start -= 1
        if start == sep:  # no key before it
            pos = sep + 1
            continue
        close = text.find(ESCAPE, sep + len(_SEPARATOR))
        if close < 0:
            return found
        found.append((text[start:sep], text[sep + len(_SEPARATOR):close]))
        pos = close + len(ESCAPE)


def _partial(text: str, marker: str) -> str:
    """The longest end of ``text`` that starts ``marker``."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-size:]):
            return text[-size:]
    return ""


def _encode(state: FunctionGemmaState, w: Writer) -> None:
    w.uint(PHASES.index(state.phase) | state.spilled << 3)
    w.text(state.held)
    w.text(state.pending)
    w.text(state.name)
    w.uint(state.calls)
    pythonic.FORMAT.encode(state.inner, w)


def _decode(r: Reader) -> FunctionGemmaState:
    bits = r.uint()
    if bits >> 4 or bits & 7 >= len(PHASES):
        raise ValueError("malformed functiongemma state")
    held, pending, name, calls = r.text(), r.text(), r.text(), r.uint()
    if len(held) >= MAX_CALL + len(CLOSE) + len(START_MARK) + MAX_NAME \
            or len(pending) > MAX_PENDING + len(START_MARK) + MAX_LEADING_SPACE \
            or len(name) > MAX_NAME:
        raise ValueError("malformed functiongemma state")
    return FunctionGemmaState(PHASES[bits & 7], held, pending, bool(bits & 8), name, calls,
                              pythonic.FORMAT.decode(r))


FORMAT = ToolFormat("functiongemma", FunctionGemmaState, FunctionGemmaState, feed, _encode,
                    _decode)
