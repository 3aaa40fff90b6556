"""Muse Spark's channel framing with ATEM calls, as vLLM 0.33's ``muse`` tool and reasoning
parsers read it together (``vllm/tool_parsers/muse_tool_parser.py``,
``vllm/reasoning/muse_reasoning_parser.py``; ``musespark1x`` is their alias)::

     to=self<|message|>…reasoning…<|eom|>          (the prompt ends <|start|>assistant)
    <|start|>assistant to=commentary<|message|>…<|eom|>
    <|start|>assistant to=get_weather.get_weather<|message|><atem:function_calls>
    <atem:invoke name="get_weather.get_weather">
    <atem:parameter name="city">Paris</atem:parameter>
    </atem:invoke>
    </atem:function_calls><|eom|>
    <|start|>assistant to=user<|message|>…answer…<|eot|>

A message is a header (``<|start|>assistant`` and whitespace, then ``to=RECIPIENT``, both
optional, then ``<|message|>``) and a body ending at ``<|eom|>``, ``<|eot|>``, ``<|start|>``
or the next header; text between a body's end and the next header, and before the first
header, is no body. No recipient or ``self``: reasoning; ``user``, ``commentary``: content;
``developer``: dropped; any other recipient: a tool, whose body's ``<atem:invoke>`` blocks
are the calls (vLLM's regexes, applied to each complete invoke: the name attribute, each
``<atem:parameter name="KEY">VALUE</atem:parameter>``, a value JSON-decoded unless the tool's
schema types the parameter ``"string"``, ``KEY.KEY`` collapsed to a registered ``KEY``).

This machine folds to vLLM's non-streaming message (its stream differs: README
compatibility). The message's rules, which it follows:

- reasoning: the reasoning bodies, joined;
- an output without any header is content, all of it (and its invokes are calls);
- when the calls are read (``ToolContext.keep``) and at least one parses: content is the
  ``user``/``commentary`` bodies, joined (None when only whitespace);
- else, when a tool message's body holds ATEM markup, content is the *framed* text of every
  message but reasoning and developer ones (header, body, end marker and what follows up to
  the next header); otherwise the ``user``/``commentary`` bodies. Calls are also read from
  ``user``/``commentary`` bodies when no tool message holds ATEM markup (vLLM's tool parser
  then sees unframed text).

A stream cannot know how a turn ends, so: ``user``/``commentary`` bodies are content as they
come; a tool message's framed text is held until its body shows ATEM markup (calls not read:
from there on content is framed text) or until a call completes (calls read), for at most
``MAX_RAW`` bytes, and given as content at the end when no call parsed; an invoke is held until
``</atem:invoke>`` for at most ``MAX_CALL`` bytes; text before the first header for at most
``MAX_LEAD``. Past a bound the stream goes on as described in the README's compatibility table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum, IntFlag
from typing import Any

from derender.core.decoding.markers import Finder, pending_prefix
from derender.core.parsers.schema import tool_name
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer, utf8_prefix, utf8_size

START, MESSAGE, EOM, EOT = "<|start|>", "<|message|>", "<|eom|>", "<|eot|>"
FUNCTION_CALLS, INVOKE, INVOKE_END = "<atem:function_calls>", "<atem:invoke", "</atem:invoke>"

MAX_PEND = 160
"""Characters of possible framing held (a header's ``<|start|>assistant``, whitespace and
``to=RECIPIENT``): a longer recipient is not read as one."""
MAX_LEAD = 1024
"""Bytes (UTF-8) of text before the first header held: past them it is content."""
MAX_RAW = 1024
"""Bytes of a tool message's framed text held for the content of a turn whose calls do not
parse (a malformed or cut-off call message: short in practice)."""
MAX_CALL = 2048
"""Bytes of an invoke held until ``</atem:invoke>``: past them the call's arguments are the
parameters complete within them, and the rest of the invoke is skipped."""
MAX_SPACE = 256
"""Bytes of whitespace held at the start of content (dropped when calls are returned)."""
MAX_WHOLE = 2048
"""The tool parser without its reasoning parser (``ALONE``): bytes of the output held (and
beside them the content bodies read from them, no longer) until a call parses, for the whole
output as content when none does; with no call within them the output so far is content and
the rest follows as written."""
_ATEM_TAIL = len(FUNCTION_CALLS) - 1

_NAME_RE = re.compile(r'<atem:invoke\b[^>]*?\bname="([^"]+)"')
PARAMETER, PARAMETER_END = "<atem:parameter", "</atem:parameter>"
_PARAM_HEAD = re.compile(r'<atem:parameter\b[^>]*?\bname="(?P<key>[^"]+)"[^>]*?>')
"""vLLM's ``_PARAM_RE`` is this head, then the value up to the first ``</atem:parameter>``."""
_CALLABLE = re.compile(r"[A-Za-z0-9_.\-]+")
"""A recipient vLLM's tool parser reads a tool's body for (its header pattern's class)."""
_WORD = re.compile(r"\w")


class Phase(IntEnum):
    LEAD = 0
    """Before the first header."""
    OUT = 1
    """After a body's end, before the next header."""
    BODY = 2


class Kind(IntEnum):
    REASONING = 0
    CONTENT = 1
    DROP = 2
    TOOL = 3


class Flag(IntFlag):
    ATEM = 1 << 0
    """A tool message's body held ATEM markup (vLLM's ``has_tool_call``)."""
    RAW_LOST = 1 << 1
    """The held framed text passed ``MAX_RAW``: it is no longer kept."""
    SPOKE = 1 << 2
    """Content other than whitespace was given."""
    UNFRAMED = 1 << 3
    """Text before the first header passed ``MAX_LEAD`` and was given as content."""
    CALLABLE = 1 << 4
    """The current message's recipient is one vLLM's tool parser reads calls from."""
    MSG_ATEM = 1 << 5
    """The current message's body held ATEM markup."""
    TOOL_SEEN = 1 << 6
    """A callable tool body was read (the next one is joined with a newline)."""
    IN_INVOKE = 1 << 7
    """``inv`` is an open invoke (else a possible start of one)."""
    SKIP = 1 << 8
    """An invoke past ``MAX_CALL``: skipped up to its ``</atem:invoke>``."""
    FROM_TOOL = 1 << 9
    """The invoke scanner reads tool bodies (else content bodies)."""
    ALONE = 1 << 10
    """The tool parser without the muse reasoning parser (``start_in(ALONE_MODE)``): vLLM's
    ``MuseToolParser`` on the whole output (or on another reasoning parser's content)."""
    CALLED = 1 << 11
    """``ALONE``: a call parsed; the content is the ``user``/``commentary`` bodies."""
    WHOLE_GIVEN = 1 << 12
    """``ALONE``: the output passed ``MAX_WHOLE`` with no call; it is content as written."""


@dataclass(frozen=True, slots=True)
class MuseState(ToolState):
    phase: int = Phase.LEAD
    kind: int = Kind.REASONING
    flags: int = 0
    calls: int = 0
    pend: str = ""
    """Held text that may still be framing."""
    held: str = ""
    """LEAD: the text before the first header; else the framed text of tool messages held."""
    inv: str = ""
    """The open invoke's text, or a possible start of one."""
    tail: str = ""
    """The current tool body's last characters (ATEM markup split across chunks)."""
    space: str = ""
    """Whitespace held at the start of content."""
    whole: str = ""
    """``ALONE``: the output as written, held until a call parses (``MAX_WHOLE``)."""
    bodies: str = ""
    """``ALONE``: the content read from it so far (the bodies), given when a call parses."""
    held_size: int = field(default=-1, compare=False, repr=False)
    """``held``'s size in the state (``utf8_size``), -1 where not known: carried so that a
    chunk measures only its own text against the hold's bound. Not encoded (the decoder
    knows it from the bytes it read)."""


@dataclass(frozen=True, slots=True)
class _Marks:
    start: str
    message: str
    boundaries: tuple[str, ...]
    every: tuple[str, ...]
    stand_ins: frozenset[str]


def _marks(context: ToolContext) -> _Marks:
    start, message = context.spelled(START), context.spelled(MESSAGE)
    boundaries = (start, context.spelled(EOM), context.spelled(EOT))
    every = (*boundaries, message)
    return _Marks(start, message, boundaries, every,
                  frozenset(m for m in every if len(m) == 1))


def _recipient_char(ch: str, marks: _Marks) -> bool:
    return not ch.isspace() and ch != "<" and ch not in marks.stand_ins


def _run_start(s: str, lo: int, end: int, marks: _Marks) -> int:
    """Start of the run of recipient characters ending at ``end`` (not before ``lo``)."""
    at = end
    while at > lo and _recipient_char(s[at - 1], marks):
        at -= 1
    return at


def _to_start(s: str, lo: int, end: int, marks: _Marks) -> int:
    """Where ``to=RECIPIENT`` ending at ``end`` (a ``<|message|>``) starts: the first ``to=``
    of the run with a recipient after it, within ``MAX_PEND`` characters of the marker's last
    one (what a stream holds, whatever its chunks); or -1."""
    run = max(_run_start(s, lo, end, marks), end + len(marks.message) - 1 - MAX_PEND)
    at = s.find("to=", run, end)
    return at if at >= 0 and at + 3 < end else -1


def _assistant_start(s: str, lo: int, end: int, marks: _Marks) -> int:
    """Where ``<|start|>assistant`` and whitespace ending at ``end`` start, or -1."""
    at = end
    while at > lo and s[at - 1].isspace():
        at -= 1
    head = marks.start + "assistant"
    return at - len(head) if at - len(head) >= lo and s.startswith(head, at - len(head)) else -1


def _header(s: str, lo: int, m: int, marks: _Marks, framing: bool) -> tuple[int, str | None]:
    """The header ending with the ``<|message|>`` at ``m``: its start and recipient."""
    to = _to_start(s, lo, m, marks)
    start, recipient = (m, None) if to < 0 else (to, s[to + 3:m])
    if framing:
        assistant = _assistant_start(s, lo, start, marks)
        if assistant >= 0 and m + len(marks.message) - 1 - assistant <= MAX_PEND:
            start = assistant
    return start, recipient


_PREFIX_OF_ASSISTANT = re.compile(r"(?:a(?:s(?:s(?:i(?:s(?:t(?:a(?:nt?)?)?)?)?)?)?)?)?\Z")
_AFTER_ASSISTANT = re.compile(r"assistant\s*(?:t(?:o(?:=\S*)?)?)?\Z")


def _hold_from(s: str, lo: int, marks: _Marks, framing: bool) -> int:
    """Where the end of ``s[lo:]`` that may still become framing starts (``len(s)``: none)."""
    end = len(s) - pending_prefix(s, marks.every, lo)
    hold = end
    window = max(lo, len(s) - MAX_PEND)  # held text is never longer (``MAX_PEND``)
    run = max(_run_start(s, lo, end, marks), window)
    to = s.find("to=", run, end)
    if to >= 0:
        hold = min(hold, to)
    elif s.endswith("to", run, end):
        hold = min(hold, end - 2)
    elif s.endswith("t", run, end):
        hold = min(hold, end - 1)
    if framing:
        at = s.rfind(marks.start, window)
        if at >= 0:
            rest = s[at + len(marks.start):]
            if _PREFIX_OF_ASSISTANT.match(rest) or _AFTER_ASSISTANT.match(rest):
                hold = min(hold, at)
    return hold


def _kind(recipient: str | None) -> Kind:
    if recipient is None or recipient == "self":
        return Kind.REASONING
    if recipient in ("user", "commentary"):
        return Kind.CONTENT
    if recipient == "developer":
        return Kind.DROP
    return Kind.TOOL


def _decode_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _registered(tools: Sequence[Any]) -> set[str]:
    return {name for name in (tool_name(t) for t in tools) if name}


def _string_parameters(tools: Sequence[Any], name: str) -> set[str]:
    """The parameters the (last) tool named ``name`` types ``"string"``."""
    strings: set[str] = set()
    for tool in tools:
        if tool_name(tool) != name:
            continue
        parameters = tool["function"].get("parameters")
        properties = parameters.get("properties") if isinstance(parameters, dict) else None
        strings = {key for key, schema in (properties or {}).items()
                   if isinstance(schema, dict) and schema.get("type") == "string"} \
            if isinstance(properties, Mapping) else set()
    return strings


def _normalize(emitted: str, registered: set[str]) -> str:
    if not registered or emitted in registered:
        return emitted
    head, sep, tail = emitted.partition(".")
    return head if sep and head == tail and head in registered else emitted


def parse_invoke(text: str, tools: Sequence[Any]) -> tuple[str, str] | None:
    """The call an invoke's text makes (vLLM's ``_parse_tool_calls`` on one invoke): its name
    and arguments; None without a name."""
    found = _NAME_RE.search(text)
    if found is None:
        return None
    name = _normalize(found.group(1), _registered(tools))
    strings = _string_parameters(tools, name)
    args: dict[str, Any] = {}
    at = text.find(PARAMETER)
    while at >= 0:  # vLLM's finditer, without rescanning for closers that are not there
        head = _PARAM_HEAD.match(text, at)
        if head is None:
            at = text.find(PARAMETER, at + 1)
            continue
        end = text.find(PARAMETER_END, head.end())
        if end < 0:
            break  # no closer after this head: none after any later one either
        key, raw = head.group("key"), text[head.end():end]
        args[key] = raw if key in strings else _decode_value(raw)
        at = text.find(PARAMETER, end + len(PARAMETER_END))
    return name, json.dumps(args, ensure_ascii=False)


class _Run:
    """One feed's work: the state's fields, mutable, and what is given out."""

    def __init__(self, state: MuseState, context: ToolContext) -> None:
        self.phase, self.kind, self.flags = state.phase, state.kind, Flag(state.flags)
        self.calls, self.inv = state.calls, state.inv
        self._held, self._held_size = state.held, state.held_size
        self.tail, self.space = state.tail, state.space
        self.context = context
        self.keep = context.keep
        self.reasoning: list[str] = []
        self.content: list[str] = []
        self.deltas: list[ToolCallDelta] = []

    @property
    def held(self) -> str:
        return self._held

    @held.setter
    def held(self, value: str) -> None:
        self._held, self._held_size = value, -1

    def hold(self, text: str) -> int:
        """``held`` with ``text`` after it; its size, measuring ``text`` only when known."""
        size = self._held_size
        self._held += text
        self._held_size = size + utf8_size(text) if size >= 0 else utf8_size(self._held)
        return self._held_size

    # framing

    def read(self, s: str, final: bool, marks: _Marks) -> str:
        """Read ``s`` (the held framing and the new text); the text still held."""
        i = 0
        finder = Finder(s)
        while True:
            if self.phase == Phase.BODY:
                m = finder.find(marks.message, i)
                b = min((at for at in (finder.find(x, i) for x in marks.boundaries)
                         if at >= 0), default=-1)
                if m >= 0 and (b < 0 or m < b):
                    start, recipient = _header(s, i, m, marks, False)
                    self.body(s[i:start])
                    self.open(s[start:m + len(marks.message)], recipient)
                    i = m + len(marks.message)
                    continue
                if b >= 0:
                    self.body(s[i:b])
                    self.phase = Phase.OUT
                    i = b
                    continue
                hold = len(s) if final else _hold_from(s, i, marks, False)
                self.body(s[i:hold])
                return s[hold:]
            m = finder.find(marks.message, i)
            if m >= 0:
                start, recipient = _header(s, i, m, marks, True)
                self.out(s[i:start])
                self.open(s[start:m + len(marks.message)], recipient)
                i = m + len(marks.message)
                continue
            hold = len(s) if final else _hold_from(s, i, marks, True)
            self.out(s[i:hold])
            return s[hold:]

    def open(self, header: str, recipient: str | None) -> None:
        """A header: a new message."""
        if self.phase == Phase.LEAD:
            self.held = ""  # text before the first header is no message's
        self.phase, self.kind = Phase.BODY, _kind(recipient)
        self.flags &= ~(Flag.CALLABLE | Flag.MSG_ATEM)
        self.tail = ""
        if self.kind == Kind.TOOL and recipient is not None and _CALLABLE.fullmatch(recipient):
            self.flags |= Flag.CALLABLE
        self.framed(header)
        if self.kind == Kind.TOOL and self.flags & Flag.CALLABLE:
            if self.flags & Flag.TOOL_SEEN and self.keep:
                self.scan("\n", True)  # vLLM joins the tool bodies with newlines
            self.flags |= Flag.TOOL_SEEN

    def out(self, text: str) -> None:
        if not text:
            return
        if self.phase == Phase.LEAD:
            if self.flags & Flag.UNFRAMED:
                self.bare(text)
                return
            if self.hold(text) > MAX_LEAD:
                self.flags |= Flag.UNFRAMED
                lead, self.held = self.held, ""
                self.bare(lead)
            return
        self.framed(text)

    def body(self, text: str) -> None:
        if not text:
            return
        if self.kind == Kind.REASONING:
            self.reasoning.append(text)
        elif self.kind == Kind.CONTENT:
            self.framed(text)
            self.bare(text)
        elif self.kind == Kind.TOOL:
            cut = self._atem_end(text)
            if 0 < cut < len(text):  # (the held text's bound is measured up to the markup)
                self.framed(text[:cut])
                self.tool(text[:cut])
                text = text[cut:]
            self.framed(text)
            self.tool(text)

    def _atem_end(self, text: str) -> int:
        """Where in a tool body's ``text`` its first ATEM markup ends (-1: not in it): the
        framed text held before it is measured against ``MAX_RAW`` up to there, whatever the
        chunk around it."""
        if self.flags & Flag.MSG_ATEM:
            return -1
        seen = self.tail + text
        ends = [at + len(mark) for mark in (FUNCTION_CALLS, INVOKE)
                if (at := seen.find(mark)) >= 0]
        return min(ends) - len(self.tail) if ends else -1

    # content

    def framed(self, text: str) -> None:
        """Framed text of the current message (a header, a body, what follows its end)."""
        if not text or self.kind in (Kind.REASONING, Kind.DROP):
            return
        if not self.keep and self.flags & Flag.ATEM:
            self.content.append(text)
            return
        if self.kind != Kind.TOOL or self.flags & Flag.RAW_LOST or (self.keep and self.calls):
            return
        if self.hold(text) > MAX_RAW:
            self.held = ""
            self.flags |= Flag.RAW_LOST

    def bare(self, text: str) -> None:
        """A ``user``/``commentary`` body (or unframed text): content."""
        if not self.keep and self.flags & Flag.ATEM:
            return  # given framed
        self.give(text)
        if self.keep and not self.flags & Flag.ATEM and not (
                self.flags & Flag.ALONE and self.phase != Phase.LEAD):
            # (alone, vLLM's tool parser reads content bodies only in an output without
            # any header)
            self.scan(text, False)

    def give(self, text: str) -> None:
        if not self.keep or self.flags & Flag.SPOKE:
            self.content.append(text)
            return
        self.space += text
        if not self.space.isspace() or utf8_size(self.space) > MAX_SPACE:
            self.content.append(self.space)
            self.space = ""
            self.flags |= Flag.SPOKE

    def tool(self, text: str) -> None:
        """A tool body's text."""
        if not self.flags & Flag.MSG_ATEM:
            seen = self.tail + text
            if FUNCTION_CALLS in seen or INVOKE in seen:
                self.flags |= Flag.MSG_ATEM
                if not self.flags & Flag.ATEM:
                    self.atem()
            self.tail = seen[-_ATEM_TAIL:]
        if self.keep and self.flags & Flag.CALLABLE:
            self.scan(text, True)

    def atem(self) -> None:
        """A tool message holds ATEM markup: content is framed unless calls parse."""
        self.flags |= Flag.ATEM
        if not self.keep:
            if not self.flags & Flag.RAW_LOST:
                self.content.append(self.held)
            self.held = ""
        elif not self.flags & Flag.FROM_TOOL:
            self.inv = ""  # calls come from tool bodies only now
            self.flags &= ~(Flag.IN_INVOKE | Flag.SKIP)

    # calls

    def scan(self, text: str, from_tool: bool) -> None:
        if bool(self.flags & Flag.FROM_TOOL) != from_tool:
            self.inv = ""
            self.flags &= ~(Flag.IN_INVOKE | Flag.SKIP)
            self.flags ^= Flag.FROM_TOOL
        s, self.inv = self.inv + text, ""
        while s:
            if self.flags & (Flag.IN_INVOKE | Flag.SKIP):
                end = s.find(INVOKE_END, max(0, len(s) - len(text) - len(INVOKE_END)))
                if end >= 0:
                    if not self.flags & Flag.SKIP:  # held as a stream holds it
                        self.call(utf8_prefix(s[:end + len(INVOKE_END)], MAX_CALL))
                    self.flags &= ~(Flag.IN_INVOKE | Flag.SKIP)
                    s, text = s[end + len(INVOKE_END):], s[end + len(INVOKE_END):]
                    continue
                if self.flags & Flag.SKIP:
                    self.inv = s[len(s) - pending_prefix(s, (INVOKE_END,)):]
                elif utf8_size(s) > MAX_CALL:
                    self.call(utf8_prefix(s, MAX_CALL))
                    self.flags = (self.flags & ~Flag.IN_INVOKE) | Flag.SKIP
                    self.inv = s[len(s) - pending_prefix(s, (INVOKE_END,)):]
                else:
                    self.inv = s
                return
            at = s.find(INVOKE)
            while at >= 0 and at + len(INVOKE) < len(s) and _WORD.match(s, at + len(INVOKE)):
                at = s.find(INVOKE, at + 1)
            if at < 0:
                self.inv = s[len(s) - pending_prefix(s, (INVOKE,)):]
                return
            if at + len(INVOKE) == len(s):  # \b not known yet
                self.inv = s[at:]
                return
            self.flags |= Flag.IN_INVOKE
            s, text = s[at:], s[at:]

    def call(self, text: str) -> None:
        parsed = parse_invoke(text, self.context.tools)
        if parsed is None:
            return
        name, arguments = parsed
        self.deltas.append(ToolCallDelta(self.calls, name, arguments))
        self.calls += 1
        self.held = ""

    def finish(self) -> None:
        """The output's end: what was held for an end is given or dropped."""
        if self.phase == Phase.LEAD and self.held:
            lead, self.held = self.held, ""
            self.bare(lead)
        self.inv = ""
        self.flags &= ~(Flag.IN_INVOKE | Flag.SKIP)
        if self.keep and not self.calls and self.flags & Flag.ATEM and self.held:
            self.content.append(self.held)
        self.held = ""
        if self.space:
            forced = self.context.forced_name is not None or self.context.required
            if not (self.keep and (self.calls or forced)):
                self.content.append(self.space)
            self.space = ""

    def state(self, pend: str, whole: str = "", bodies: str = "") -> MuseState:
        return MuseState(self.phase, self.kind, int(self.flags), self.calls, pend, self.held,
                         self.inv, self.tail, self.space, whole, bodies,
                         held_size=self._held_size)


def feed_reasoning(state: MuseState, text: str, final: bool, context: ToolContext
                   ) -> tuple[str, str, list[ToolCallDelta], MuseState]:
    """Reasoning, content and calls of the output's next text (``final``: its end)."""
    if state.flags & Flag.ALONE:
        return _alone(state, text, final, context)
    run = _Run(state, context)
    pend = run.read(state.pend + text, final, _marks(context))
    if final:
        run.finish()
    return "".join(run.reasoning), "".join(run.content), run.deltas, run.state(pend)


def _alone(state: MuseState, text: str, final: bool, context: ToolContext
           ) -> tuple[str, str, list[ToolCallDelta], MuseState]:
    """The tool parser without its reasoning parser (vLLM's ``DelegatingParser`` with
    ``MuseToolParser`` alone, or after another family's reasoning parser): the channels are
    read as with both parsers, the reasoning dropped; with a call, the content is the
    ``user``/``commentary`` bodies; without one, or with the calls not read (``tool_choice``
    "none", no ``tools``), the text as it was handed over (vLLM's legacy path returns its
    input): held until a call parses, for the output's first ``MAX_WHOLE`` bytes.

    The bound is a place in the output, not a chunk: a chunk that crosses it is read in two,
    its part within the bound first, so that whether a call parsed within the bound does not
    depend on how the output was cut."""
    if not context.keep:
        return "", text, [], state
    if not state.flags & (Flag.CALLED | Flag.WHOLE_GIVEN):
        room = MAX_WHOLE - utf8_size(state.whole)
        if utf8_size(text) > room:
            head = utf8_prefix(text, room)
            _, content, calls, state = _held(state, head, False, context)
            if not state.flags & Flag.CALLED:  # no call within the bound
                content = state.whole
                state = replace(state, flags=state.flags | Flag.WHOLE_GIVEN, whole="",
                                bodies="")
            _, rest, more, state = _held(state, text[len(head):], final, context)
            return "", content + rest, calls + more, state
    return _held(state, text, final, context)


def _held(state: MuseState, text: str, final: bool, context: ToolContext
          ) -> tuple[str, str, list[ToolCallDelta], MuseState]:
    """``_alone`` for text that does not cross ``MAX_WHOLE``."""
    run = _Run(state, context)
    pend = run.read(state.pend + text, final, _marks(context))
    if final:
        run.finish()
    content, calls = "".join(run.content), run.deltas
    whole, bodies = "", ""
    if run.flags & Flag.CALLED:
        pass  # the bodies, as they come
    elif run.flags & Flag.WHOLE_GIVEN:
        content = text  # past the bound: the output as written (README compatibility)
    elif calls:
        content = state.bodies + content
        run.flags |= Flag.CALLED
    elif final:
        content = state.whole + text
    else:
        whole, bodies, content = state.whole + text, state.bodies + content, ""
    return "", content, calls, run.state(pend, whole, bodies)


def feed(state: MuseState, text: str, final: bool, context: ToolContext
         ) -> tuple[str, list[ToolCallDelta], MuseState]:
    _, content, calls, state = feed_reasoning(state, text, final, context)
    return content, calls, state


def encode(state: MuseState, w: Writer) -> None:
    w.ints((state.phase, state.kind, state.flags, state.calls))
    texts = (state.pend, state.held, state.inv, state.tail, state.space)
    for text in (*texts, state.whole, state.bodies) if state.flags & Flag.ALONE else texts:
        w.text(text)  # (a state with both parsers is encoded as before ALONE existed)


def decode(r: Reader) -> MuseState:
    phase, kind, flags, calls = r.ints()
    if phase not in tuple(Phase) or kind not in tuple(Kind) or flags >= Flag.WHOLE_GIVEN << 1:
        raise ValueError("not a muse state")
    if not flags & Flag.ALONE and flags & (Flag.CALLED | Flag.WHOLE_GIVEN):
        raise ValueError("not a muse state")
    pend, (held, size) = r.text(), r.sized_text()
    inv, tail, space = r.text(), r.text(), r.text()
    whole, bodies = (r.text(), r.text()) if flags & Flag.ALONE else ("", "")
    return MuseState(phase, kind, flags, calls, pend, held, inv, tail, space, whole, bodies,
                     held_size=size)


def start() -> MuseState:
    return MuseState()


ALONE_MODE = 1
"""The mode of the tool parser without its reasoning parser (``ToolRecord.alone_mode``)."""


def start_in(mode: int) -> MuseState:
    return MuseState(flags=Flag.ALONE) if mode == ALONE_MODE else MuseState()


FORMAT: ToolFormat[MuseState] = ToolFormat("muse", MuseState, start, feed, encode, decode,
                                           feed_reasoning=feed_reasoning, start_in=start_in)


def thinking(kwargs: dict[str, object]) -> bool:
    """``muse``: the parsers read no template kwargs (channels say what is reasoning)."""
    return True


