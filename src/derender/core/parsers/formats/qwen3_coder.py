"""The ``qwen3_coder`` tool-call format (Qwen3-Coder, Qwen3.5): XML calls whose parameter
values are typed from the request's tool schema::

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>
    </tool_call>

vLLM 0.33's reference (``Qwen3EngineToolParser``, the qwen3 grammar of ``vllm/parser``) reads
``<tool_call>`` (by token id) or a bare ``<function=`` as the start of a call; the function's
name runs to its ``>``; its body to ``</function>`` (or the next ``<function=``, or the end of
the output); each ``<parameter=NAME>VALUE</parameter>`` of the body is a parameter (a value
also ends at the next ``<parameter=``), one newline at either end of the value trimmed. A
value is typed by its parameter's schema (``schema.coerce``, vLLM's ``coerce_to_schema_type``:
null, integer, number, boolean, object/array as JSON, else the string, with JSON as the last
resort); a parameter the schema does not know stays a string. Text before the first call is
content (whitespace around it dropped when calls are returned), text after it is dropped.

One O(delta) machine serves both modes (docs/design.md, Parsers). The function name and a typed
value are held until they end (at most ``MAX_NAME`` and ``MAX_VALUE`` characters); string values
stream as written. The parameter's type is looked up once, when its name has been read. Where vLLM
cannot be followed without unbounded holdback we differ (README): a parameter cut off by the
end of its call or of the output keeps the value read so far (vLLM drops it); a typed value
longer than ``MAX_VALUE`` is a string; whitespace before the content that precedes a call
stays. State: the mode, a short holdback, the name/value being read, the function's name, the
call counter, flags and the open parameter's types.

The other members of the family are this machine with their differences as data
(``Grammar``): ``mimo`` keeps values as written (no newline trimmed; still typed),
``seed_oss`` wraps calls in ``<seed:tool_call>`` and, having no structural tag in vLLM, takes
vLLM's JSON path under a forced ``tool_choice`` (named: the content as written is the call's
arguments; "required": only a JSON list would be read, other text is dropped). ``step3p5``'s
calls are ``qwen3_coder``'s unchanged (an alias in the registry). ``step5`` (StepFun Step 5,
vLLM's ``Step5ToolParser``: the qwen3 grammar with ``drop_whitespace_only_content_before_tools``
and ``strip_content_whitespace_with_tools`` off) keeps the content before a call as written,
but content of whitespace alone (up to ``MAX_SPACE``) is none when calls follow (vLLM's
``_extract_tool_calls`` drops it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import IntEnum, IntFlag
from typing import TypeVar

from derender.core.decoding.markers import Finder, pending_prefix
from derender.core.parsers import schema
from derender.core.parsers.primitives import (
    Run,
    escape,
    forced_call,
    member,
    merge,
    split_space,
    unread,
)
from derender.core.parsers.schema import STRING, TYPES, coerce
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer

TOOL_START, TOOL_END = "<tool_call>", "</tool_call>"
FUNC_PREFIX, FUNC_END = "<function=", "</function>"
MAX_NAME = 256
"""Characters of a function or parameter name; a longer one is not read."""
MAX_VALUE = 1024
"""Characters of a typed (not string) value held until its end; past that it is a string."""
MAX_SPACE = 256
"""Trailing whitespace of content held back (dropped if a call follows); more is content."""
MAX_TAG = 40



class Mode(IntEnum):
    """Where the machine is (its number is the stream-state encoding): content; after the
    call tag; in a function's name; in its body between parameters; in a parameter's name;
    in its value; after a call."""

    CONTENT = 0
    PREAMBLE = 1
    NAME = 2
    GAP = 3
    PNAME = 4
    PVALUE = 5
    BETWEEN = 6


CONTENT, PREAMBLE, NAME, GAP, PNAME, PVALUE, BETWEEN = Mode
MODES = tuple(Mode)
ARGS = (GAP, PNAME, PVALUE)


class Flag(IntFlag):
    """The state's flags (their bits are the stream-state encoding)."""

    SPOKE = 1
    """Content other than whitespace was emitted."""
    GHOST = 2
    """The open call is not returned (no name)."""
    COMMA = 4
    """A parameter of the open call was emitted."""
    STARTED = 8
    """The open value has begun."""
    NEWLINE = 16
    """A newline ending the open string value is held."""
    OVERFLOW = 32
    """The name being read is too long."""
    DROP = 64
    """A call with a name (if only whitespace) was read, so later text is dropped."""


SPOKE, GHOST, COMMA, STARTED, NEWLINE, OVERFLOW, DROP = (flag.value for flag in Flag)
"""The flags as plain ints, for the machine's bit arithmetic (``IntFlag`` arithmetic costs
about 40 times an int's)."""
KEPT = SPOKE | DROP
"""The flags that outlive a call."""

# vLLM's parameter tags allow whitespace inside (\s*); here at most 8 characters of it, so a
# tag is recognised within MAX_TAG characters whatever the chunking.
_W = r"\s{0,8}"
_OPENER = re.compile(rf"<{_W}parameter{_W}=")
_CLOSER = re.compile(rf"<{_W}/{_W}parameter{_W}>")
_OPENER_SEQ: tuple[str | int, ...] = ("<", 8, "parameter", 8, "=")
_CLOSER_SEQ: tuple[str | int, ...] = ("<", 8, "/", 8, "parameter", 8, ">")
_SWALLOWED = ("</parameter>", "<parameter=", "<think>", "</think>", "<tool_call>",
              "</tool_call>", "<|im_start|>", "<|im_end|>", "<|endoftext|>")
"""Other markup vLLM's lexer reads whole: inside a function name its ``>`` ends nothing."""


@dataclass(frozen=True, slots=True)
class Grammar:
    """What distinguishes a member of the Qwen3 XML family (vLLM's ``qwen3_config`` and the
    overrides of its ``Qwen3Parser`` subclasses)."""

    name: str
    tool_start: str = TOOL_START
    tool_end: str = TOOL_END
    trim_newlines: bool = True
    """One newline at either end of a value is markup, trimmed (mimo: kept as written)."""
    json_when_forced: bool = False
    """A forced ``tool_choice`` takes vLLM's JSON path instead of the XML (seed_oss)."""
    strip_content: bool = True
    """Whitespace around the content before a call is dropped when calls are returned (vLLM's
    ``strip_content_whitespace_with_tools`` and ``drop_whitespace_only_content_before_tools``;
    step5: both off, the content is kept as written)."""


QWEN3 = Grammar("qwen3_coder")
MIMO = Grammar("mimo", trim_newlines=False)
SEED_OSS = Grammar("seed_oss", tool_start="<seed:tool_call>", tool_end="</seed:tool_call>",
                   json_when_forced=True)
STEP5 = Grammar("step5", strip_content=False)


@dataclass(frozen=True, slots=True)
class XmlCallState(ToolState):
    """The machine's state; each format has its own subclass, so a state says its format."""

    mode: Mode = CONTENT
    held: str = ""
    """Unread text: what may still become a tag."""
    acc: str = ""
    """NAME/PNAME: the name so far; PVALUE: a typed value so far."""
    space: str = ""
    """Trailing whitespace of the content, held back (dropped if a call follows)."""
    fn: str = ""
    """The open call's function name (for its parameters' types)."""
    calls: int = 0
    """Calls returned so far (the next call's index)."""
    flags: int = 0
    types: int = 0
    """The open parameter's types (bits of TYPES)."""


@dataclass(frozen=True, slots=True)
class Qwen3CoderState(XmlCallState):
    pass


@dataclass(frozen=True, slots=True)
class MimoState(XmlCallState):
    pass


@dataclass(frozen=True, slots=True)
class SeedOssState(XmlCallState):
    pass


@dataclass(frozen=True, slots=True)
class Step5State(XmlCallState):
    pass


X = TypeVar("X", bound=XmlCallState)


class _Run(Run):
    """A working copy of the state while text is fed."""

    def __init__(self, state: XmlCallState, context: ToolContext, trim: bool = True,
                 strip: bool = True) -> None:
        self.trim, self.strip = trim, strip
        self.mode, self.acc, self.fn, self.space = state.mode, state.acc, state.fn, state.space
        self.pending = 0
        self.calls, self.flags, self.types = state.calls, state.flags, state.types
        self.context = context
        self.keep = context.keep
        self.content: list[str] = []
        self.deltas: list[ToolCallDelta] = []

    def args(self, text: str) -> None:
        if not self.has(GHOST):
            self.arguments(text)

    # content
    def text(self, piece: str) -> None:
        if self.keep and self.has(DROP):
            return  # after a call, text is dropped
        if not self.strip:  # content as written, but whitespace alone before a call is none
            if self.has(SPOKE):
                self.content.append(piece)
                return
            lead = self.space + piece
            if lead.strip() or len(lead) > MAX_SPACE:  # (longer: content, README)
                self.content.append(lead)
                self.space = ""
                self.set(SPOKE)  # (a long run too: the rest of it is content, whatever the cuts)
            else:
                self.space = lead
            return
        out, self.space = split_space(self.space + piece, MAX_SPACE)
        if out:
            self.content.append(out)
            self.set(SPOKE, self.has(SPOKE) or bool(out.strip()))

    def end_content(self) -> None:
        if not (self.keep and self.calls):
            self.content.append(self.space)
        self.space = ""

    # calls
    def start_call(self, mode: Mode) -> None:
        self.mode, self.acc, self.fn = mode, "", ""
        self.set(OVERFLOW, False)

    def name_piece(self, piece: str) -> None:
        self.accumulate(piece, MAX_NAME, OVERFLOW)

    def open_call(self) -> None:
        """The function's name has been read: the call begins (if it has a name)."""
        name = self.acc.strip()
        ghost = self.has(OVERFLOW) or not name
        if not ghost and self.keep:
            self.space = ""  # whitespace before the first call is not content
        drop = self.has(OVERFLOW) or bool(self.acc)
        self.acc, self.fn = "", "" if ghost else name
        self.flags &= KEPT
        self.set(GHOST, ghost)
        self.set(DROP, self.has(DROP) or drop)
        if not ghost:
            self.new_call(name, "{")

    def close_call(self) -> None:
        if self.mode == PVALUE:
            self.close_value()
        self.args("}")
        self.mode, self.acc, self.fn = BETWEEN, "", ""
        self.flags &= KEPT

    def open_param(self) -> None:
        raw = self.acc
        overflow = self.has(OVERFLOW)
        self.acc = ""
        self.set(OVERFLOW, False)
        if overflow:
            self.mode = GAP
            return
        name = raw.lstrip()
        self.types = schema.param_types(self.context.tools, self.fn, name)
        self.mode = PVALUE
        self.flags &= KEPT | GHOST | COMMA
        self.args(member(name, not self.has(COMMA), brace=False)
                  + ('"' if self.types == STRING else ""))
        self.set(COMMA, not self.has(GHOST))

    def value(self, piece: str) -> None:
        if not piece or self.has(GHOST):
            return
        if self.types != STRING:
            self.acc += piece
            if len(self.acc) <= MAX_VALUE:
                return
            self.types, piece, self.acc = STRING, self.acc, ""  # too long: a string
            self.args('"')
        if not self.trim:
            self.args(escape(piece))
            return
        if not self.has(STARTED):
            self.set(STARTED)
            piece = piece.removeprefix("\n")
        text = ("\n" if self.has(NEWLINE) else "") + piece
        self.set(NEWLINE, text.endswith("\n"))
        if text.endswith("\n"):
            text = text[:-1]
        self.args(escape(text))

    def close_value(self) -> None:
        if self.types == STRING:
            self.args('"')
        else:
            raw = self.acc.removeprefix("\n").removesuffix("\n") if self.trim else self.acc
            self.args(json.dumps(coerce(raw, self.types), ensure_ascii=False))
        self.acc = ""
        self.mode = GAP
        self.flags &= KEPT | GHOST | COMMA


def feed(state: X, text: str, final: bool, context: ToolContext, grammar: Grammar = QWEN3
         ) -> tuple[str, list[ToolCallDelta], X]:
    """Content and tool-call deltas of new text; ``final`` settles what was held back."""
    if grammar.json_when_forced and (context.forced_name or context.required):
        return _forced(state, text, final, context)
    open_tag, close_tag = context.spelled(grammar.tool_start), context.spelled(grammar.tool_end)
    run = _Run(state, context, grammar.trim_newlines, grammar.strip_content)
    buffer = state.held + text
    # read by position (no copies of the rest), each marker's next place looked up once
    finder, scan = Finder(buffer), _Scan(buffer)
    pos = 0
    held = ""
    while True:
        mode = run.mode
        if mode == CONTENT:
            found = finder.earliest((open_tag, FUNC_PREFIX), pos)
            if found is None:
                now, held = unread(buffer[pos:], (open_tag, FUNC_PREFIX), final)
                run.text(now)
                break
            at, marker = found
            run.text(buffer[pos:at])
            run.start_call(PREAMBLE if marker == open_tag else NAME)
            pos = at + len(marker)
        elif mode in (PREAMBLE, BETWEEN):
            markers = (FUNC_PREFIX, close_tag) + ((open_tag,) if mode == BETWEEN else ())
            found = finder.earliest(markers, pos)
            if found is None:
                _, held = unread(buffer[pos:], markers, final)
                break
            at, marker = found
            pos = at + len(marker)
            if marker == close_tag:
                run.mode = CONTENT
            else:
                run.start_call(NAME if marker == FUNC_PREFIX else PREAMBLE)
        elif mode == NAME:
            at, stop = _name_end(buffer, open_tag, close_tag, pos)
            if stop is None:
                if not final:
                    run.name_piece(buffer[pos:at])
                    held = buffer[at:]
                    break
                run.name_piece(buffer[pos:])
                run.open_call()
                run.close_call()
                break
            run.name_piece(buffer[pos:at])
            pos = at + len(stop)
            run.open_call()
            if stop == ">":
                run.mode = GAP
                continue
            run.close_call()
            _after_call(run, stop, open_tag, close_tag)
        else:  # GAP, PNAME, PVALUE: the call's body
            found = finder.earliest((FUNC_END, FUNC_PREFIX), pos)
            end = len(buffer) if found is None else found[0]
            after = _body(run, scan, pos, end, found is not None or final)
            if after is not None:  # a tag ended inside the region: go on after it
                pos = after
                continue
            if found is None:
                if final:
                    run.close_call()
                    break
                held = buffer[len(buffer) - run.pending:]
                break
            pos = found[0] + len(found[1])
            run.close_call()
            _after_call(run, found[1], open_tag, close_tag)
    if final:
        run.end_content()
        run.mode = CONTENT
    return ("".join(run.content), merge(run.deltas),
            replace(state, mode=run.mode, held=held, acc=run.acc, space=run.space, fn=run.fn,
                    calls=run.calls, flags=run.flags, types=run.types))


def _forced(state: X, text: str, final: bool, context: ToolContext
            ) -> tuple[str, list[ToolCallDelta], X]:
    """vLLM's JSON path for a forced ``tool_choice`` (a format without a structural tag): a
    named function's arguments are the content as written, in one call, if it is not blank
    (its leading whitespace held meanwhile, up to ``MAX_SPACE``); for "required" the content
    is held to the end (at most ``MAX_VALUE`` characters, else no call: README) and read as
    vLLM reads it, a JSON list of ``{"name", "parameters"}`` (``_listed_calls``); no content."""
    if context.forced_name is None:
        if state.flags & OVERFLOW:
            return "", [], state
        listed = state.space + text
        if final:
            return "", _listed_calls(listed), replace(state, space="")
        if len(listed) > MAX_VALUE:
            return "", [], replace(state, space="", flags=state.flags | OVERFLOW)
        return "", [], replace(state, space=listed)
    return forced_call(state, text, final, context, MAX_SPACE)


def _listed_calls(text: str) -> list[ToolCallDelta]:
    """vLLM's ``TypeAdapter(list[FunctionDefinition]).validate_json(content)``: every element
    an object with a string ``name``, ``description`` a string or null, ``parameters`` an
    object or null (its arguments ``json.dumps`` of it: ``null`` when absent), or no call at
    all."""
    try:
        listed = json.loads(text)
    except ValueError:
        return []
    if not isinstance(listed, list):
        return []
    calls: list[ToolCallDelta] = []
    for index, item in enumerate(listed):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return []
        description, parameters = item.get("description"), item.get("parameters")
        if (description is not None and not isinstance(description, str)) or (
                parameters is not None and not isinstance(parameters, dict)):
            return []
        calls.append(ToolCallDelta(index, item["name"],
                                   json.dumps(parameters, ensure_ascii=False)))
    return calls


def _after_call(run: _Run, stop: str, open_tag: str, close_tag: str) -> None:
    """The mode after a call ended at ``stop``."""
    if stop == FUNC_PREFIX:
        run.start_call(NAME)
    elif stop == open_tag:
        run.start_call(PREAMBLE)
    elif stop == close_tag:
        run.mode = CONTENT


def _name_end(text: str, open_tag: str, close_tag: str, i: int = 0
              ) -> tuple[int, str | None]:
    """Where a function name that begins at ``i`` ends and what ends it, or (where unread
    text begins, None)."""
    firsts = re.compile("[" + re.escape("".join({"<", ">", open_tag[0], close_tag[0]})) + "]")
    while True:
        found = firsts.search(text, i)
        if found is None:
            return len(text), None
        j = found.start()
        for stop in (open_tag, close_tag, FUNC_END, FUNC_PREFIX, ">"):
            if text.startswith(stop, j):
                return j, stop
        swallowed = next((lit for lit in _SWALLOWED if text.startswith(lit, j)), None)
        if swallowed is not None:
            i = j + len(swallowed)
            continue
        rest = text[j:j + MAX_TAG]
        if len(text) - j <= MAX_TAG and any(
                lit.startswith(rest) for lit in (open_tag, close_tag, FUNC_END, FUNC_PREFIX,
                                                 *_SWALLOWED)):
            return j, None
        i = j + 1


class _Scan:
    """The parameter tags of one text, each pattern's next match remembered until the reading
    passes it (``Finder`` for the patterns), so a body of many tags is scanned once."""

    __slots__ = ("_next", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._next: dict[re.Pattern[str], tuple[int, re.Match[str] | None]] = {}

    def search(self, pattern: re.Pattern[str], start: int, end: int) -> re.Match[str] | None:
        """The first match of ``pattern`` in ``text[start:end]`` (a tag holds one ``<``, its
        first character: the first match from ``start`` is it, if it ends by ``end``)."""
        known = self._next.get(pattern)
        if known is not None and known[0] <= start and (known[1] is None
                                                        or known[1].start() >= start):
            match = known[1]
        else:
            match = pattern.search(self.text, start)
            self._next[pattern] = (start, match)
        return match if match is not None and match.end() <= end else None


def _body(run: _Run, scan: _Scan, start: int, end: int, ended: bool) -> int | None:
    """Read a call's body from ``start`` up to a function tag at ``end`` (``ended``: the region
    is all of it until then). Returns where the text after a parameter tag found in the
    region begins (to be read next), or None when the region is used up; ``run.pending`` says
    how much of it waits for more."""
    run.pending = 0
    text = scan.text
    if run.mode == GAP:
        match = scan.search(_OPENER, start, end)
        if match is not None:
            run.mode, run.acc = PNAME, ""
            run.set(OVERFLOW, False)
            return match.end()
        if not ended:
            run.pending = end - _tag_start(text, start, end)
        return None
    if run.mode == PNAME:
        at = text.find(">", start, end)
        if at >= 0:
            run.name_piece(text[start:at])
            run.open_param()
            return at + 1
        if ended:
            run.name_piece(text[start:end])
            run.mode = GAP  # a parameter without its ">" is not read
            return None
        hold = pending_prefix(text[start:end], (FUNC_END, FUNC_PREFIX))
        run.name_piece(text[start:end - hold])
        run.pending = hold
        return None
    # PVALUE
    closer, opener = scan.search(_CLOSER, start, end), scan.search(_OPENER, start, end)
    match = min((m for m in (closer, opener) if m is not None), key=lambda m: m.start(),
                default=None)
    if match is not None:
        run.value(text[start:match.start()])
        run.close_value()
        if match is opener:
            run.mode, run.acc = PNAME, ""
        return match.end()
    if ended:
        run.value(text[start:end])
        return None
    at = _tag_start(text, start, end)
    run.value(text[start:at])
    run.pending = end - at
    return None


def _tag_start(text: str, start: int = 0, end: int | None = None) -> int:
    """Where the end of ``text[start:end]`` that may still become a tag begins (``end`` if
    none)."""
    end = len(text) if end is None else end
    low = max(start, end - MAX_TAG)
    at = text.find("<", low, end)
    while at >= 0:
        tail = text[at:end]
        if (FUNC_END.startswith(tail) or FUNC_PREFIX.startswith(tail)
                or _prefix_of(tail, _OPENER_SEQ) or _prefix_of(tail, _CLOSER_SEQ)):
            return at
        at = text.find("<", at + 1, end)
    return end


def _prefix_of(text: str, seq: tuple[str | int, ...]) -> bool:
    """Whether ``text`` may begin a match of ``seq`` (literals, and runs of at most N
    whitespace characters)."""
    states = {(0, 0)}
    for ch in text:
        expanded = set(states)
        for start, _ in states:  # a whitespace run may end anywhere
            at = start
            while at < len(seq) and isinstance(seq[at], int):
                at += 1
                expanded.add((at, 0))
        moved = set()
        for i, k in expanded:
            if i >= len(seq):
                continue
            element = seq[i]
            if isinstance(element, str):
                if element[k] == ch:
                    moved.add((i, k + 1) if k + 1 < len(element) else (i + 1, 0))
            elif ch.isspace() and k < element:
                moved.add((i, k + 1))
        states = moved
        if not states:
            return False
    return True


def _encode(state: XmlCallState, w: Writer) -> None:
    w.uint(state.mode)
    w.text(state.held)
    w.text(state.acc)
    w.text(state.space)
    w.text(state.fn)
    w.uint(state.calls)
    w.uint(state.flags)
    w.uint(state.types)


def _decoder(kind: type[X]) -> Callable[[Reader], X]:
    def decode(r: Reader) -> X:
        mode, held, acc, space, fn = r.uint(), r.text(), r.text(), r.text(), r.text()
        calls, flags, types = r.uint(), r.uint(), r.uint()
        if mode >= len(MODES) or flags >> len(Flag) or types >> len(TYPES):
            raise ValueError(f"malformed {kind.__name__}")
        return kind(MODES[mode], held, acc, space, fn, calls, flags, types)
    return decode


def _format(grammar: Grammar, kind: type[X]) -> ToolFormat[X]:
    def step(state: X, text: str, final: bool, context: ToolContext
             ) -> tuple[str, list[ToolCallDelta], X]:
        return feed(state, text, final, context, grammar)
    return ToolFormat(grammar.name, kind, kind, step, _encode, _decoder(kind))


FORMAT = _format(QWEN3, Qwen3CoderState)
MIMO_FORMAT = _format(MIMO, MimoState)
SEED_OSS_FORMAT = _format(SEED_OSS, SeedOssState)
STEP5_FORMAT = _format(STEP5, Step5State)
