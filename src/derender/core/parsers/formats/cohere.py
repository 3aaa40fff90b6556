"""Cohere Command A / Command 4's sections, as vLLM 0.33's ``cohere_command3`` and
``cohere_command4`` parsers read them (``vllm/parser/cohere_command.py``: the ``cohere_melody``
package's ``cmd3`` / ``cmd4`` filters, ``process_full_text`` for the message)::

    <|START_THINKING|>…reasoning…<|END_THINKING|>
    <|START_ACTION|>[{"tool_call_id": "0", "tool_name": "NAME", "parameters": {…}}, …]<|END_ACTION|>
    <|START_RESPONSE|>…answer…<|END_RESPONSE|>          (cmd4 also <|START_TEXT|>…<|END_TEXT|>)

The filter is a mode switched by these markers (``Preset``): answer text is content, thinking
text reasoning, action text calls, and text after ``<|END_RESPONSE|>`` / ``<|END_ACTION|>`` (and
cmd4's ``<|END_TEXT|>``) is dropped; after ``<|END_THINKING|>`` text is content again. Before any
marker, cmd3 reads content and cmd4 reasoning. What the recordings (9600-9799) and the filter
show, and this machine follows:

- each piece of text between two markers (a *segment*) loses its trailing whitespace; after
  ``<|START_THINKING|>`` leading whitespace is dropped up to the first text kept (of any mode);
- in answer and thinking text a citation ``<co>TEXT</co: SPEC>`` is ``TEXT`` (its markup
  dropped); ``<co>`` never closed drops ``<co>`` and anything from a (partial) ``</co: ``;
  a segment ending in a partial ``<co>`` keeps its text as written (``cite``);
- an action segment is read at once by melody's scanner (``parse_actions``): a call starts at
  ``"tool_call_id": "``, its id up to the next unescaped ``"``, then ``"tool_name": "``, its name
  (raw, escapes kept) up to the next unescaped ``"``; when ``"parameters": {"`` follows, the
  arguments are the raw text from that ``{`` to the end of the first complete JSON value (up
  to 8 whitespace characters dropped at the start of each line), or all of the rest when none
  completes; otherwise the call ends at the next ``}`` with no arguments. The scanner's state
  goes on across action segments. A segment ending in ``\\`` is not read.

A stream holds text so that it folds to the message: trailing whitespace (``MAX_SPACE``), a
segment's text from its first ``<`` (``MAX_HELD``), an action segment whole (``MAX_ACTION``);
past a bound the stream goes on as the README's compatibility table says.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from typing import Any

from derender.core.decoding.markers import Finder, pending_prefix
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer, utf8_size

START_THINKING, END_THINKING = "<|START_THINKING|>", "<|END_THINKING|>"
START_RESPONSE, END_RESPONSE = "<|START_RESPONSE|>", "<|END_RESPONSE|>"
START_ACTION, END_ACTION = "<|START_ACTION|>", "<|END_ACTION|>"
START_TEXT, END_TEXT = "<|START_TEXT|>", "<|END_TEXT|>"

MAX_SPACE = 256
"""Bytes (UTF-8) of trailing whitespace held (past them it is given)."""
MAX_HELD = 1024
"""Bytes of a segment's text held from its first ``<`` (a citation's markup); past them the
held text is given as written."""
MAX_ACTION = 2048
"""Bytes of an action segment held until it ends; past them it is read as far as it goes and
what is still open is kept (dropped past the bound again)."""


class Mode(IntEnum):
    CONTENT = 0
    REASONING = 1
    ACTION = 2
    IGNORE = 3


class Flag(IntFlag):
    LEFT_TRIM = 1 << 0
    """melody's ``left_trimmed``: set by ``<|START_THINKING|>``, cleared by the first text kept."""
    HOLDING = 1 << 1
    """The segment's text from its first ``<`` is held in ``seg``."""
    SPOKE = 1 << 2
    """The segment gave text before its held part."""
    SAW_TEXT = 1 << 3
    """melody's ``saw_non_whitespace_in_current_line`` (arguments' indentation)."""


class Scan(IntEnum):
    """melody's ``ActionMode`` (what its action scanner reads next)."""

    BEFORE = 0
    ID = 1
    ID_END = 2
    NAME = 3
    NAME_END = 4
    RAW = 5


@dataclass(frozen=True, slots=True)
class Preset:
    """A melody preset: the mode each marker switches to, and the mode before any."""

    name: str
    default: Mode
    switches: tuple[tuple[str, Mode], ...]


_COMMON = ((START_THINKING, Mode.REASONING), (END_THINKING, Mode.CONTENT),
           (START_RESPONSE, Mode.CONTENT), (END_RESPONSE, Mode.IGNORE),
           (START_ACTION, Mode.ACTION), (END_ACTION, Mode.IGNORE))
CMD3 = Preset("cohere_command3", Mode.CONTENT, _COMMON)
CMD4 = Preset("cohere_command4", Mode.REASONING,
              (*_COMMON, (START_TEXT, Mode.CONTENT), (END_TEXT, Mode.IGNORE)))


@dataclass(frozen=True, slots=True)
class CohereState(ToolState):
    mode: int
    flags: int = 0
    scan: int = Scan.BEFORE
    index: int = 0
    """melody's ``cur_tool_call_index``."""
    opened: int = 0
    """Calls whose first delta was given (indices below it)."""
    indent: int = 0
    """melody's ``raw_param_indent_length_removed``."""
    pend: str = ""
    """A possible marker's start, held."""
    space: str = ""
    """Trailing whitespace held."""
    seg: str = ""
    """The held part of the segment (text from its first ``<``, or the action segment)."""
    raw: str = ""
    """melody's ``param_value_buffer``: arguments not complete when an action segment ended."""


@dataclass(frozen=True, slots=True)
class Command4State(CohereState):
    """``cohere_command4``'s state: the same fields, its own type (each format's state is its
    own type, so one format's state is never fed to another's machine)."""


_ID = re.compile(r'"tool_call_id":\s*"')
_NAME = re.compile(r'"tool_name":\s*"')
_PARAMS_OBJECT = re.compile(r'"parameters":\s*\{\s*"')
_PARAMS = re.compile(r'"parameters":\s*')
_SURROGATE = re.compile("[\ud800-\udfff]")
_INDENT = 8


def _reject(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject)


def _lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, list):
        return any(_lone_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_lone_surrogate(k) or _lone_surrogate(v) for k, v in value.items())
    return False


def json_value_end(buffer: str, s: str, at: int = 0) -> int:
    """melody's ``find_valid_json_value``: where in ``s`` (read from ``at``) the first JSON
    value of ``buffer + s[at:]`` ends (serde_json's rules: no NaN, no lone surrogate), or -1."""
    text, start = (s, at) if not buffer else (buffer + s[at:], 0)
    while start < len(text) and text[start] in " \t\n\r":
        start += 1
    try:
        value, end = _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return -1
    if _lone_surrogate(value):
        return -1
    if not buffer:
        return end
    return -1 if end < len(buffer) else at + end - len(buffer)


def _unescaped_quote(s: str, lo: int) -> int:
    """melody's ``find_non_escaped_char(s[lo:], '"')``, as an index of ``s``."""
    at = s.find('"', lo)
    while at >= 0:
        slashes = 0
        while at - slashes - 1 >= lo and s[at - slashes - 1] == "\\":
            slashes += 1
        if slashes % 2 == 0:
            return at
        at = s.find('"', at + 1)
    return -1


def cite(s: str, spoke: bool) -> str:
    """A segment's kept text (trimmed) with its citations read (``spoke``: text before it was
    already given): each ``<co>TEXT</co: SPEC>`` is ``TEXT``; a ``<co>`` never closed drops
    ``<co>`` and what follows a (partial) ``</co: ``; a partial ``<co>`` ending the text, when
    no citation came before it, leaves the text as written (melody's no output), after one
    drops the rest."""
    out: list[str] = []
    found, at = False, 0
    while True:
        if s.find("<", at) < 0:
            out.append(s[at:])
            break
        start = s.find("<co>", at)
        if start < 0:
            if s.endswith(("<", "<c", "<co")):
                if not found:
                    return s
                break
            out.append(s[at:])
            break
        close = s.find("</co: ", start + 4)
        end = s.find(">", close + 1) if close >= 0 else -1
        if end < 0:
            if close < 0:
                close = len(s) - pending_prefix(s, ("</co: ",), start + 4)
            out.append(s[at:start] + s[start + 4:close])
            break
        out.append(s[at:start] + s[start + 4:close])
        found, at = True, end + 1
    text = "".join(out)
    return s if not text and not found and not spoke else text


class _Run:
    """One feed: the state's fields, changed as the text is read."""

    def __init__(self, state: CohereState, preset: Preset) -> None:
        self.preset = preset
        self.kind = type(state)
        self.mode, self.flags = Mode(state.mode), Flag(state.flags)
        self.scan, self.index, self.opened = Scan(state.scan), state.index, state.opened
        self.indent, self.space, self.seg, self.raw = (state.indent, state.space, state.seg,
                                                       state.raw)
        self.reasoning: list[str] = []
        self.content: list[str] = []
        self.deltas: list[ToolCallDelta] = []

    # text

    def give(self, text: str) -> None:
        if not text:
            return
        (self.reasoning if self.mode == Mode.REASONING else self.content).append(text)

    def eager(self, text: str) -> None:
        """Answer or thinking text given as it comes (no ``<`` in it), its trailing whitespace
        held."""
        text = self.space + text
        body = text.rstrip()
        self.space = text[len(body):]
        if self.flags & Flag.LEFT_TRIM:
            body = body.lstrip()
            self.space = self.space if body else ""
        if body:
            self.flags &= ~Flag.LEFT_TRIM
            self.flags |= Flag.SPOKE
            self.give(body)

    def text(self, text: str) -> None:
        if not text or self.mode == Mode.IGNORE:
            return
        if self.mode == Mode.ACTION:
            self.seg += text
            return
        if not self.flags & Flag.HOLDING:
            lt = text.find("<")
            if lt < 0:
                self.eager(text)
                return
            self.eager(text[:lt])
            self.flags |= Flag.HOLDING
            self.seg, self.space, text = self.space, "", text[lt:]
        self.seg += text

    def bound(self) -> None:
        """A feed ends with text held: past its bound it is read or given now (a stream's
        state stays bounded; the message, read at once, never gets here)."""
        if self.mode == Mode.ACTION:
            if utf8_size(self.seg) > MAX_ACTION:
                self.seg = self.seg[self.actions(self.seg):]
                if utf8_size(self.seg) > MAX_ACTION:
                    self.seg = ""
        elif self.flags & Flag.HOLDING and utf8_size(self.seg) > MAX_HELD:
            self.flags &= ~(Flag.HOLDING | Flag.LEFT_TRIM)
            self.flags |= Flag.SPOKE
            self.give(self.seg)
            self.seg = ""
        if utf8_size(self.space) > MAX_SPACE:
            self.flags &= ~Flag.LEFT_TRIM
            self.flags |= Flag.SPOKE
            self.give(self.space)
            self.space = ""

    def end(self) -> None:
        """The segment ends (a marker, or the output's end)."""
        if self.mode == Mode.ACTION:
            self.actions(self.seg)
        elif self.flags & Flag.HOLDING:
            send = self.seg.rstrip()
            if self.flags & Flag.LEFT_TRIM:
                send = send.lstrip()
            if send:
                self.flags &= ~Flag.LEFT_TRIM
                self.give(cite(send, bool(self.flags & Flag.SPOKE)))
        self.seg = self.space = ""
        self.flags &= ~(Flag.HOLDING | Flag.SPOKE)

    # calls

    def actions(self, s: str) -> int:
        """melody's ``parse_actions`` on ``s``: calls given; how much of ``s`` was read."""
        if not s or s.endswith("\\"):
            return 0
        pos = 0
        parts: dict[int, list[str]] = {}
        while pos < len(s):
            if self.scan in (Scan.BEFORE, Scan.ID_END):
                found = (_ID if self.scan == Scan.BEFORE else _NAME).search(s, pos)
                if found is None:
                    break
                self.scan = Scan.ID if self.scan == Scan.BEFORE else Scan.NAME
                pos = found.end()
            elif self.scan in (Scan.ID, Scan.NAME):
                quote = _unescaped_quote(s, pos)
                if quote < 0:
                    break
                if quote > pos:  # (melody gives no empty part)
                    part = parts.setdefault(self.index, ["", "", ""])
                    part[0 if self.scan == Scan.ID else 1] = s[pos:quote]
                self.scan = Scan.ID_END if self.scan == Scan.ID else Scan.NAME_END
                pos = quote
            elif self.scan == Scan.NAME_END:
                raw = _PARAMS.search(s, pos) if _PARAMS_OBJECT.search(s, pos) else None
                if raw is not None:
                    self.scan = Scan.RAW
                    pos = raw.end()
                    continue
                brace = s.find("}", pos)
                if brace < 0:
                    break
                self.scan, self.index = Scan.BEFORE, self.index + 1
                pos = brace
            else:
                end = json_value_end(self.raw, s, pos)
                if end < 0:
                    self.argument(parts, self.dedent(s[pos:]))
                    self.raw += s[pos:]
                    if utf8_size(self.raw) > MAX_ACTION:
                        self.raw = ""
                    pos = len(s)
                    break
                self.argument(parts, self.dedent(s[pos:end]))
                self.raw, self.scan, self.index = "", Scan.BEFORE, self.index + 1
                pos = end
        for index, (call_id, name, arguments) in parts.items():
            first = index >= self.opened
            if first:
                self.opened = index + 1
            self.deltas.append(ToolCallDelta(index, name if first else None, arguments,
                                             call_id or None))
        return pos

    def argument(self, parts: dict[int, list[str]], text: str) -> None:
        if text:
            parts.setdefault(self.index, ["", "", ""])[2] += text

    def dedent(self, s: str) -> str:
        """melody's ``send_raw_param_chunk_without_indentation``."""
        out: list[str] = []
        for ch in s:
            if ch == "\n":
                self.indent = 0
                self.flags &= ~Flag.SAW_TEXT
            elif ch.isspace():
                if self.indent < _INDENT and not self.flags & Flag.SAW_TEXT:
                    self.indent += 1
                    continue
            else:
                self.flags |= Flag.SAW_TEXT
            out.append(ch)
        return "".join(out)

    # the run

    def read(self, s: str, final: bool, context: ToolContext) -> str:
        """Read ``s``; what may still be a marker's start is returned (held)."""
        switches = {context.spelled(m): mode for m, mode in self.preset.switches}
        thinking = context.spelled(START_THINKING)
        markers = tuple(switches)
        finder = Finder(s)
        pos = 0
        while True:
            found = finder.earliest(markers, pos)
            if found is None:
                break
            at, marker = found
            self.text(s[pos:at])
            self.end()
            self.mode = switches[marker]
            if marker == thinking:
                self.flags |= Flag.LEFT_TRIM
            pos = at + len(marker)
        keep = 0 if final else pending_prefix(s, markers, pos)
        self.text(s[pos:len(s) - keep])
        if final:
            self.end()
        else:
            self.bound()
        return s[len(s) - keep:]

    def state(self, pend: str) -> CohereState:
        return self.kind(int(self.mode), int(self.flags), int(self.scan), self.index,
                         self.opened, self.indent, pend, self.space, self.seg, self.raw)


def _feed_reasoning(preset: Preset, state: CohereState, text: str, final: bool,
                    context: ToolContext) -> tuple[str, str, list[ToolCallDelta], CohereState]:
    run = _Run(state, preset)
    pend = run.read(state.pend + text, final, context)
    return "".join(run.reasoning), "".join(run.content), run.deltas, run.state(pend)


def encode(state: CohereState, w: Writer) -> None:
    w.ints((state.mode, state.flags, state.scan, state.index, state.opened, state.indent))
    for text in (state.pend, state.space, state.seg, state.raw):
        w.text(text)


def _decode(kind: type[CohereState], r: Reader) -> CohereState:
    mode, flags, scan, index, opened, indent = r.ints()
    if (mode not in tuple(Mode) or scan not in tuple(Scan) or flags >= Flag.SAW_TEXT << 1
            or indent > _INDENT):
        raise ValueError("not a cohere state")
    return kind(mode, flags, scan, index, opened, indent, r.text(), r.text(), r.text(), r.text())


def decode(r: Reader) -> CohereState:
    return _decode(CohereState, r)


def _format(preset: Preset, kind: type[CohereState]) -> ToolFormat[CohereState]:
    def feed_reasoning(state: CohereState, text: str, final: bool, context: ToolContext
                       ) -> tuple[str, str, list[ToolCallDelta], CohereState]:
        return _feed_reasoning(preset, state, text, final, context)

    def feed(state: CohereState, text: str, final: bool, context: ToolContext
             ) -> tuple[str, list[ToolCallDelta], CohereState]:
        _, content, calls, state = _feed_reasoning(preset, state, text, final, context)
        return content, calls, state

    def start() -> CohereState:
        return kind(int(preset.default))

    def decode_kind(r: Reader) -> CohereState:
        return _decode(kind, r)

    return ToolFormat(preset.name, kind, start, feed, encode, decode_kind,
                      feed_reasoning=feed_reasoning)


CMD3_FORMAT = _format(CMD3, CohereState)
CMD4_FORMAT = _format(CMD4, Command4State)


def thinking(kwargs: dict[str, object]) -> bool:
    """``cohere_command3``/``4``: the parser reads no template kwargs (the markers say what is
    reasoning)."""
    return True
