"""The ``olmo3`` tool-call format (OLMo 3): pythonic calls one per line, inside
``<function_calls>`` … ``</function_calls>``, read by the ``pythonic`` machine.

As vLLM 0.33's ``Olmo3PythonicToolParser``: the text inside the first ``<function_calls>`` …
``</function_calls>`` block (else the whole output) is cut into lines, each stripped, the
blank ones dropped, and the rest joined with ``", "`` inside ``[`` … ``]``: that list is read as
``pythonic`` reads one (``f(a=1)`` and ``g()`` on two lines are two calls, as are
``f(a=1), g()`` on one; a call written over several lines gets ``", "`` inside it and cannot be
read; a string literal over two lines reads ``"a, b"``). Calls read: no content (text around
the block is dropped). Else the output as written is the content. JSON literals ``true``,
``false``, ``null`` are read as Python's (``python_literals`` does).

This module is a filter in front of the ``pythonic`` machine (no grammar of its own):

- at the start, whitespace and what may still be ``<function_calls>`` are held; a block opening
  the output (after whitespace) is read as the list; an output opening with a name is read as
  lines without the tags when it opens with a name and ``(`` (vLLM's pattern: anything else
  there is never a call); anything else is content, in which ``<function_calls>`` still opens
  a block (the content before it stays: README compatibility);
- the lines are joined as vLLM joins them, on the fly: whitespace at a line's start is
  skipped, whitespace inside a line held until the line goes on (at most ``MAX_SPACE``
  characters, past that it is passed on), each line after the first led by ``", "``;
- the original text of the block is kept (its first ``MAX_RAW`` characters, whatever the
  chunks: a chunk that crosses the bound is read in two) until a call is read, so that a
  first call that cannot be read makes the output content as written; past that bound, or
  for a later call, the content is what the ``pythonic`` machine returns (from the
  unreadable call on, joined as above: README compatibility);
- ``</function_calls>`` closes the list (text after it is dropped when calls were read); a
  block never closed is cut off there: its last call is content (vLLM: the whole output is
  content; calls already returned stay, README).

Under a forced ``tool_choice`` an output starting with ``{`` or ``[`` is read by ``pythonic``
(the JSON-schema forms), anything else as above.

State: the phase, the held text, the join's position, the kept original text and the
``pythonic`` state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from derender.core.parsers.formats import pythonic
from derender.core.parsers.formats.pythonic import PythonicState
from derender.core.parsers.primitives import MAX_LEADING_SPACE, merge
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer

OPEN, CLOSE = "<function_calls>", "</function_calls>"
MAX_SPACE = 256
"""Whitespace inside a line held until the line goes on or ends."""
MAX_RAW = 1024
"""Characters of a block's original text kept until its first call is read."""

OPENING, SEARCH, BLOCK, LINES, PASS, DONE = "opening", "search", "block", "lines", "pass", "done"
"""Phases: at the output's start; content, looking for ``<function_calls>``; inside a block;
lines without tags; everything content (or the JSON forms) from here on; after the block."""
PHASES = (OPENING, SEARCH, BLOCK, LINES, PASS, DONE)

_NAME = re.compile(r"[a-zA-Z]\w*")
_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")
"""``str.splitlines``' line boundaries."""


@dataclass(frozen=True, slots=True)
class Olmo3State(ToolState):
    phase: str = OPENING
    held: str = ""
    """OPENING: the output so far; SEARCH/BLOCK: a possible start of the tag looked for."""
    lines: bool = False
    """A line has been passed on (the next one is led by ", ")."""
    at_start: bool = True
    """At a line's start (whitespace is skipped)."""
    space: str = ""
    """Whitespace inside the current line, held."""
    raw: str = ""
    """The block's original text so far, while no call is read."""
    kept: bool = True
    """``raw`` holds all of it (it stopped at ``MAX_RAW``)."""
    inner: PythonicState = field(default_factory=PythonicState)


def feed(state: Olmo3State, text: str, final: bool, context: ToolContext
         ) -> tuple[str, list[ToolCallDelta], Olmo3State]:
    """Content and tool-call deltas of new text; ``final`` settles what was held back."""
    s = _Run(state, context)
    buffer = state.held + text
    s.held = ""
    if s.phase == OPENING:
        buffer = s.opening(buffer, final)
    if s.phase == SEARCH:
        buffer = s.search(buffer, final)
    if s.phase in (BLOCK, LINES):
        room = MAX_RAW - len(s.raw)  # (the block's text so far is raw, then the buffer)
        if s.kept and s.inner.calls == 0 and 0 <= room < len(buffer):
            # MAX_RAW is a place in the block: the text within it is read first, so whether
            # an unreadable first call was kept as written does not depend on the chunks
            buffer, after = buffer[:room], buffer[room:]
            buffer = s.block(buffer, False)
            if s.phase in (BLOCK, LINES):
                buffer, s.held = s.held + after, ""
                buffer = s.block(buffer, final)
            elif s.phase == PASS:
                buffer += after
        else:
            buffer = s.block(buffer, final)
    if s.phase == PASS:
        out, more, s.inner = pythonic.feed(s.inner, buffer, final, context)
        s.content.append(out)
        s.deltas += more
    return "".join(s.content), merge(s.deltas), s.state()


class _Run:
    """One feed's working copy of the state and what it returns."""

    def __init__(self, state: Olmo3State, context: ToolContext) -> None:
        self.phase, self.held, self.lines = state.phase, state.held, state.lines
        self.at_start, self.space, self.raw = state.at_start, state.space, state.raw
        self.kept, self.inner, self.context = state.kept, state.inner, context
        self.content: list[str] = []
        self.deltas: list[ToolCallDelta] = []

    def state(self) -> Olmo3State:
        return Olmo3State(self.phase, self.held, self.lines, self.at_start, self.space,
                          self.raw, self.kept, self.inner)

    def opening(self, buffer: str, final: bool) -> str:
        stripped = buffer.lstrip()
        forced = self.context.forced_name is not None or self.context.required
        lead = len(buffer) - len(stripped)
        if lead > MAX_LEADING_SPACE:  # (whitespace past the bound: content, whatever the cuts)
            self.phase = SEARCH
            return buffer
        if not stripped and not final:
            self.held = buffer
            return ""
        if forced and stripped[:1] in ("{", "["):
            self.phase = PASS
            return buffer
        if stripped.startswith(OPEN):
            self.phase, self.raw = BLOCK, buffer[:len(buffer) - len(stripped) + len(OPEN)]
            self._feed("[", False)
            return stripped[len(OPEN):]
        if OPEN.startswith(stripped) and not final:
            self.held = buffer
            return ""
        name = _NAME.match(stripped)
        if name is not None and name.end() < len(stripped) and stripped[name.end()] == "(" \
                and lead + name.end() <= MAX_LEADING_SPACE:  # (as a stream holds it)
            self.phase, self.at_start, self.lines = LINES, False, True
            self.raw = buffer[:len(buffer) - len(stripped)]
            self._feed("[", False)
            return stripped
        if name is not None and name.end() == len(stripped) and not final \
                and len(buffer) <= MAX_LEADING_SPACE:
            self.held = buffer
            return ""
        self.phase = SEARCH
        return buffer

    def search(self, buffer: str, final: bool) -> str:
        at = buffer.find(OPEN)
        if at < 0:
            hold = 0 if final else _partial(buffer, OPEN)
            self.content.append(buffer[:len(buffer) - hold])
            self.held = buffer[len(buffer) - hold:]
            return ""
        self.content.append(buffer[:at])
        self.phase, self.raw = BLOCK, OPEN
        self._feed("[", False)
        return buffer[at + len(OPEN):]

    def block(self, buffer: str, final: bool) -> str:
        """Join the lines of ``buffer`` into the list; returns what goes on to PASS."""
        end = buffer.find(CLOSE) if self.phase == BLOCK else -1
        if end >= 0:
            body, rest, closed = buffer[:end], buffer[end:], True
        else:
            hold = 0 if final or self.phase == LINES else _partial(buffer, CLOSE)
            body, rest, closed = buffer[:len(buffer) - hold], buffer[len(buffer) - hold:], False
        joined: list[str] = []
        for char in body:
            if char in _BREAKS:
                self.at_start, self.space = True, ""
            elif char.isspace():
                if not self.at_start:
                    self.space += char
                    if len(self.space) > MAX_SPACE:
                        joined.append(self.space)
                        self.space = ""
            else:
                if self.at_start:
                    if self.lines:
                        joined.append(", ")
                    self.at_start, self.lines = False, True
                joined.append(self.space + char)
                self.space = ""
        self._keep(body)
        last = final or closed  # a block never closed is cut off: no "]" (vLLM: content)
        close = "]" if closed or (final and self.phase == LINES) else ""
        if self._feed("".join(joined) + close, last, close):
            return rest
        if closed:  # after an unreadable call the rest is content too, as written
            self.phase = PASS if self.inner.mode == pythonic.CONTENT else DONE
            return rest if self.phase == PASS else ""
        self.held = rest
        return ""

    def _keep(self, text: str) -> None:
        if self.kept and self.inner.calls == 0:
            if len(self.raw) + len(text) > MAX_RAW:
                self.kept, self.raw = False, ""
            else:
                self.raw += text

    def _feed(self, text: str, final: bool, added: str = "") -> bool:
        """Feed the machine (``added``: the ``]`` ending ``text`` that the output does not
        hold); True when no call was read and the output so far is content as written (the
        phase is then PASS). After a call was read, the machine's content is the joined text
        from the unreadable call on, up to the block's end."""
        out, more, self.inner = pythonic.feed(self.inner, text, final, self.context)
        if added and out.endswith(added):
            out = out[:-len(added)]
        self.deltas += more
        if self.inner.calls:
            self.raw = ""
        if self.inner.mode != pythonic.CONTENT:
            return False
        if self.inner.calls == 0 and self.kept:
            self.content.append(self.raw)
            self.phase, self.raw = PASS, ""
            return True
        self.content.append(out)
        return False


def _partial(buffer: str, marker: str) -> int:
    """The length of the longest end of ``buffer`` that starts ``marker``."""
    for size in range(min(len(marker) - 1, len(buffer)), 0, -1):
        if marker.startswith(buffer[-size:]):
            return size
    return 0


def _encode(state: Olmo3State, w: Writer) -> None:
    w.uint(PHASES.index(state.phase) | state.lines << 3 | state.at_start << 4
           | state.kept << 5)
    w.text(state.held)
    w.text(state.space)
    w.text(state.raw)
    pythonic.FORMAT.encode(state.inner, w)


def _decode(r: Reader) -> Olmo3State:
    bits = r.uint()
    if bits >> 6 or bits & 7 >= len(PHASES):
        raise ValueError("malformed olmo3 state")
    held, space, raw = r.text(), r.text(), r.text()
    if len(held) > MAX_LEADING_SPACE + len(OPEN) or len(space) > MAX_SPACE \
            or len(raw) > MAX_RAW:
        raise ValueError("malformed olmo3 state")
    return Olmo3State(PHASES[bits & 7], held, bool(bits & 8), bool(bits & 16), space, raw,
                      bool(bits & 32), pythonic.FORMAT.decode(r))


FORMAT = ToolFormat("olmo3", Olmo3State, Olmo3State, feed, _encode, _decode)
