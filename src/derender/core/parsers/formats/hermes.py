"""The ``hermes`` tool-call format: ``<tool_call>{"name": …, "arguments": …}</tool_call>``.

An incremental machine shared by streaming and non-streaming. Text before the first call is
content (whitespace alone before a call is not); a call's first delta carries its name as
soon as ``{"name": "…", "arguments":`` has been read, then the arguments stream as the model
writes them (``json_value.scan`` finds their end). Text between and after calls is dropped,
as vLLM does. A ``<tool_call>`` whose head cannot be read comes back as content, so no text
is lost. State: the mode, a short holdback, the call counter and the arguments scanner.

``granite4`` is the same grammar with one difference, ``between``: text between and after the
calls is content too (vLLM's ``Granite4ToolParser`` joins every text segment), and whitespace
is content only when the whole content is not whitespace alone (vLLM then answers null), so
whitespace not yet followed by other text is held (``pending``, at most ``MAX_LEADING_SPACE``
characters in all) across the calls.

``granite-20b-fc`` is the same grammar without a closing tag: ``<function_call>`` then the
call's JSON object, whose end ends the call; text after it up to the next ``<function_call>``
is dropped, as vLLM's ``raw_decode`` drops it.

``ernie45`` is hermes' tags read as vLLM's ``Ernie45ToolParser`` reads them (``whole``): a call
is its object up to ``</tool_call>``, read whole (keys in any order; no ``"name"``: ``""``, no
``"arguments"``: ``{}``; the arguments written anew with ``json.dumps``) once its closing tag
is within ``MAX_HEAD`` characters (a longer one streams as hermes'); a call never closed is
dropped, text in it not starting with ``{`` too; the newlines ending the content before the
first call are dropped (held meanwhile; at most ``MAX_LEADING_SPACE``, the first of more are
content), other whitespace before it is content.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TypeVar

from derender.core.decoding.markers import Finder, pending_prefix
from derender.core.parsers.json_value import STRING_PATTERN, ValueScan, loads, scan
from derender.core.parsers.primitives import (
    MAX_LEADING_SPACE,
    leading_text,
    leads_content,
    merge,
    scan_bits,
    skip_space,
    strip_end,
    unpack_scan,
)
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer

OPEN, CLOSE = "<tool_call>", "</tool_call>"
MAX_HEAD = 1024
"""Characters of a call read before its name must be known (or, for a call giving its
arguments first, the whole call); past that its text is content."""

_HEAD = re.compile(rf'\s*\{{\s*"name"\s*:\s*{STRING_PATTERN}\s*,\s*"arguments"\s*:\s*')

CONTENT, HEAD, ARGS, TAIL, AFTER = "content", "head", "args", "tail", "after"
LIST_HEAD, LIST_TAIL = "list-head", "list-tail"
MODES = (CONTENT, HEAD, ARGS, TAIL, AFTER, LIST_HEAD, LIST_TAIL)

TAGGED, LISTED, BARE = "tagged", "listed", "bare"
FORMS = (TAGGED, LISTED, BARE)
"""How calls are written: hermes tags; for ``tool_choice`` "required" a JSON list of
``{"name", "parameters"}``; for a named function the bare arguments object."""

_FLIPPED = re.compile(r'\s*\{\s*"arguments"\s*:\s*')
_LIST_HEAD = re.compile(rf'\s*\{{\s*"name"\s*:\s*{STRING_PATTERN}\s*,\s*"parameters"\s*:\s*')
_LIST_END = re.compile(r'\s*\]')


@dataclass(frozen=True, slots=True)
class HermesState(ToolState):
    mode: str = CONTENT
    held: str = ""
    calls: int = 0
    """Calls started so far (the next call's index)."""
    spoke: bool = False
    """Content other than whitespace was emitted."""
    scan: ValueScan = field(default_factory=ValueScan)
    form: str = TAGGED


@dataclass(frozen=True, slots=True)
class BetweenState(HermesState):
    """The state of a ``between`` format (``granite4``)."""

    pending: str = ""
    """Whitespace read before any other content (around calls), said with the next other
    text, dropped at the end when a call was read."""


def feed(state: HermesState, text: str, final: bool, forced_name: str | None = None,
         required: bool = False, tags: tuple[str, str] = (OPEN, CLOSE), between: bool = False,
         whole: bool = False) -> tuple[str, list[ToolCallDelta], HermesState]:
    """Content and tool-call deltas for new text; ``final`` settles what was held back.

    With a forced ``tool_choice`` the output may also be JSON (the engine may have constrained
    it to the schema instead of the model's format): its first character decides. ``tags``
    are the opening and closing tags as they appear in the text (no closing tag: ``""``, the
    end of the call's JSON ends it); ``between``: text between and after the calls is
    content (``granite4``), else it is dropped; ``whole``: ``ernie45``'s reading (the module's
    docstring).
    """
    open_tag, close_tag = tags
    closers = (close_tag,) if close_tag else ()
    buffer = state.held + text
    size = len(buffer)
    pos = 0
    """Where the text not read yet begins: ``buffer`` is read in place, by position (a copy
    of the rest at every marker is quadratic, issue 22), and markers are looked up in the
    whole text, each one's next place once."""
    finder = Finder(buffer)
    mode, calls, spoke, scanner = state.mode, state.calls, state.spoke, state.scan
    form = state.form
    pending = state.pending if isinstance(state, BetweenState) else ""
    space = ""
    """Whitespace before the ``<tool_call>`` being read (at most ``MAX_LEADING_SPACE``
    characters): dropped with a call, content if the call turns out unreadable. While the
    head waits for more text, the whitespace and the tag are held with it in CONTENT mode
    (read again with the next text)."""
    content: list[str] = []
    deltas: list[ToolCallDelta] = []
    held = ""
    while pos < size or final:
        if mode == CONTENT and not spoke and calls == 0 and (forced_name or required):
            at = skip_space(buffer, pos)
            first = buffer[at:at + 1]
            if required and first == "[":
                form, mode, pos = LISTED, LIST_HEAD, buffer.index("[", pos) + 1
                continue
            if forced_name and first == "{":
                deltas.append(ToolCallDelta(calls, forced_name, ""))
                calls += 1
                form, mode, pos, scanner = BARE, ARGS, skip_space(buffer, pos), ValueScan()
                continue
        if mode == CONTENT:
            found = finder.earliest((open_tag,), pos)
            if found is None and whole and calls == 0 and form == TAGGED:
                out, held = _trim_held(buffer[pos:], open_tag, final)
                if out:
                    content.append(out)
                    spoke = spoke or bool(out.strip())
                break
            if found is None:  # forced tool choice: whitespace alone is no content
                out, held, spoke = leading_text(buffer[pos:], (open_tag,), final, spoke,
                                                bool(forced_name or required) or calls > 0)
                if out:
                    content.append(pending + out)
                    pending = ""
                break
            before = buffer[pos:found[0]]
            if whole and calls == 0:  # its newlines dropped, other whitespace said
                kept = _unnewlined(before)
                if kept:
                    content.append(kept)
                    spoke = spoke or bool(kept.strip())
                space = before[len(kept):]
                mode, pos = HEAD, found[0] + len(open_tag)
                continue
            if leads_content(pending + before, spoke):
                content.append(pending + before)
                spoke, pending = True, ""
            elif between:  # said if other content follows
                pending += before
            else:  # dropped with the call, unless it turns out unreadable
                space = before
            mode, pos = HEAD, found[0] + len(open_tag)
        elif mode == LIST_HEAD and _LIST_END.match(buffer, pos):
            mode, pos = AFTER, size
        elif mode == HEAD and whole:
            closing = finder.earliest(closers, pos)
            close = -1 if closing is None else closing[0] - pos
            if 0 <= close <= MAX_HEAD:  # read whole, as vLLM reads it
                call = _whole_call(buffer[pos:pos + close])
                if call is _UNREADABLE:  # its text comes back as content
                    cut = close + len(close_tag)
                    content.append(space + open_tag + buffer[pos:pos + cut])
                    spoke, mode, pos, space = True, CONTENT, pos + cut, ""
                    continue
                if call is not None:
                    deltas.append(ToolCallDelta(calls, *call))
                    calls += 1
                mode, pos, space = AFTER, pos + close + len(close_tag), ""
                continue
            if size - pos <= MAX_HEAD + len(close_tag):
                if final:  # never closed: dropped
                    mode, pos, space = AFTER, size, ""
                else:
                    held = buffer[pos:]
                break
            match = _HEAD.match(buffer, pos)  # too long to hold: streamed as hermes'
            if match is None:
                mode, pos, space = AFTER, size, ""
                break
            deltas.append(ToolCallDelta(calls, json.loads(f'"{match.group(1)}"'), ""))
            calls += 1
            mode, pos, scanner, space = ARGS, match.end(), ValueScan(), ""
        elif mode in (HEAD, LIST_HEAD):
            match = (_HEAD if mode == HEAD else _LIST_HEAD).match(buffer, pos)
            if match is not None and match.end() - pos <= MAX_HEAD:
                deltas.append(ToolCallDelta(calls, json.loads(f'"{match.group(1)}"'), ""))
                calls += 1
                mode, pos, scanner, space = ARGS, match.end(), ValueScan(), ""
                continue
            closing = finder.earliest(closers, pos) if mode == HEAD and closers else None
            close = -1 if closing is None else closing[0] - pos
            closed = 0 <= close < MAX_HEAD
            if not (final or closed or size - pos >= MAX_HEAD + len(close_tag)):
                held = buffer[pos:]
                break
            flipped = None
            if mode == HEAD and closed:
                flipped = _flipped_call(buffer[pos:pos + close])
            elif mode == HEAD and final:
                flipped = _flipped_call(buffer, pos)
            if flipped is not None:  # {"arguments": …, "name": …}: read whole
                deltas.append(ToolCallDelta(calls, *flipped))
                calls += 1
                mode, pos = AFTER, pos + close + len(close_tag) if closed else size
                space = ""
                continue
            # Not a call we can read: its text (to its closing tag, or MAX_HEAD characters)
            # comes back as content, with the whitespace before it (as vLLM returns the
            # whole output then).
            cut = close + len(close_tag) if closed else min(size - pos, MAX_HEAD)
            content.append(pending + space + (open_tag if mode == HEAD else "[")
                           + buffer[pos:pos + cut])
            spoke, mode, pos, space, pending = True, CONTENT, pos + cut, "", ""
            if pos >= size:
                break
        elif mode == ARGS:
            started = scanner.started
            tag_at = _closing_tag(scanner, finder, close_tag, pos) if closers else None
            end, after = scan(scanner, buffer, pos, size if tag_at is None else tag_at)
            rest = size
            if end is not None and (tag_at is None or end <= tag_at):
                piece, rest, scanner = buffer[pos:end], end, ValueScan()
                mode = {TAGGED: TAIL if closers else AFTER, LISTED: LIST_TAIL, BARE: AFTER}[form]
            elif tag_at is not None:  # arguments cut short by the closing tag
                piece, rest = buffer[pos:tag_at].rstrip(), tag_at
                scanner, mode = ValueScan(), TAIL
            elif final or after.in_string:
                piece, scanner = buffer[pos:], after
            else:  # whitespace or a partial closing tag may end the arguments: wait
                cut = strip_end(buffer, pos, size - pending_prefix(buffer, closers, pos))
                piece, held = buffer[pos:cut], buffer[cut:]
                _, scanner = scan(scanner, buffer, pos, cut)
            if not started:
                piece = piece.lstrip()
            if piece:
                deltas.append(ToolCallDelta(calls - 1, None, piece))
            if mode == ARGS:
                break
            pos = rest
        elif mode == LIST_TAIL:  # the element's "}", then "," (next call) or "]"
            found = finder.earliest((",", "]"), pos)
            if found is None:
                break
            mode, pos = (LIST_HEAD if found[1] == "," else AFTER), found[0] + 1
        else:  # TAIL, AFTER: drop text up to the next marker
            marker = close_tag if mode == TAIL else open_tag
            found = finder.earliest((marker,), pos)
            if found is None:
                if not final:  # the end that may begin the marker
                    held = buffer[size - pending_prefix(buffer, (marker,), pos):]
                break
            pos = found[0] + len(marker)
            mode = (CONTENT if between else AFTER) if mode == TAIL else HEAD
    if mode == HEAD and space:  # the head waits: read again from the whitespace before it
        mode, held = CONTENT, space + open_tag + held
    new = (BetweenState(mode, held, calls, spoke, scanner, form, pending) if between
           else type(state)(mode, held, calls, spoke, scanner, form))
    return "".join(content), merge(deltas), new


_UNREADABLE = ("", "")
"""``_whole_call``'s answer for a call vLLM's ``json.loads`` refuses."""
_OBJECT = re.compile(r"\s*(\{.*\})\s*", re.DOTALL)


def _whole_call(text: str) -> tuple[str, str] | None:
    """``ernie45``: the name and arguments of the text between a call's tags, as vLLM reads it
    (``json.dumps`` of ``"arguments"``, ``{}`` without; ``""`` without a name); None: not an
    object (no call, dropped); ``_UNREADABLE``: not JSON, or a name that is no string."""
    match = _OBJECT.fullmatch(text)
    if match is None:
        return None
    try:
        call = json.loads(match.group(1))
    except ValueError:
        return _UNREADABLE
    if not isinstance(call, dict) or not isinstance(call.get("name", ""), str):
        return _UNREADABLE
    return call.get("name", ""), json.dumps(call.get("arguments", {}), ensure_ascii=False)


def _trim_held(text: str, open_tag: str, final: bool) -> tuple[str, str]:
    """``ernie45``'s content before its first call, no tag in ``text``: (said now, held: the
    newlines ending it, at most ``MAX_LEADING_SPACE``, and what may begin the tag)."""
    if final:
        return text, ""
    hold = pending_prefix(text, (open_tag,))
    body = text[:len(text) - hold]
    kept = _unnewlined(body)
    return kept, text[len(kept):]


def _unnewlined(text: str) -> str:
    """``text`` less the newlines ending it, at most ``MAX_LEADING_SPACE`` of them."""
    kept = text.rstrip("\n")
    return text[:max(len(kept), len(text) - MAX_LEADING_SPACE)]


def _flipped_call(text: str, start: int = 0) -> tuple[str, str] | None:
    """Name and raw arguments of a whole call written arguments first, if ``text[start:]``
    reads as one."""
    match = _FLIPPED.match(text, start)
    if match is None:
        return None
    try:
        call = loads(text, start)
    except ValueError:
        return None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return None
    end, _ = scan(ValueScan(), text, match.end())
    return None if end is None else (call["name"], text[match.end():end])


def _closing_tag(scanner: ValueScan, finder: Finder, close_tag: str, start: int
                 ) -> int | None:
    """Position of the first closing tag in the finder's text from ``start`` that is not
    inside a JSON string (the value scanned on from one tag to the next, once)."""
    at = finder.find(close_tag, start)
    while at >= 0:
        _, scanner = scan(scanner, finder.text, start, at)
        if not scanner.in_string:
            return at
        start, at = at, finder.find(close_tag, at + 1)
    return None


def _feed(state: HermesState, text: str, final: bool, context: ToolContext
          ) -> tuple[str, list[ToolCallDelta], HermesState]:
    return feed(state, text, final, context.forced_name, context.required,
                (context.spelled(OPEN), context.spelled(CLOSE)))


def _encode(state: HermesState, w: Writer) -> None:
    scan_ = state.scan
    w.uint(MODES.index(state.mode) | FORMS.index(state.form) << 4)
    w.text(state.held)
    w.uint(state.calls)
    w.uint(state.spoke | scan_bits(scan_))
    w.uint(scan_.depth)


def _decode(r: Reader) -> HermesState:
    mode_form, held, calls, bits, depth = r.uint(), r.text(), r.uint(), r.uint(), r.uint()
    return HermesState(MODES[mode_form & 15], held, calls, bool(bits & 1),
                       unpack_scan(bits, depth), FORMS[mode_form >> 4])


FORMAT = ToolFormat("hermes", HermesState, HermesState, _feed, _encode, _decode)
"""Tag 0: hermes states are laid out as before formats were tagged."""


@dataclass(frozen=True, slots=True)
class FunctionCallState(HermesState):
    """The state of ``granite-20b-fc`` (hermes' fields; its own type, its own tag)."""


@dataclass(frozen=True, slots=True)
class LongcatState(HermesState):
    """The state of ``longcat`` (hermes' fields; its own type, its own tag)."""


@dataclass(frozen=True, slots=True)
class Variant:
    """How a format of hermes' grammar differs from hermes (data for the one machine)."""

    name: str
    tags: tuple[str, str]
    """Opening and closing tags (``""``: no closing tag, the call's JSON ends it)."""
    between: bool = False
    """Text between and after the calls is content (``feed``'s ``between``)."""
    json_forms: bool = True
    """Under a forced ``tool_choice`` the JSON-schema forms are read too; False where vLLM
    constrains the output to the model's own tags (a structural tag) and reads only those."""
    whole: bool = False
    """Calls read whole, as ``ernie45`` reads them (``feed``'s ``whole``)."""


H = TypeVar("H", bound=HermesState)


def variant(v: Variant, kind: type[H]) -> ToolFormat[H]:
    """The ``ToolFormat`` of a variant whose states are ``kind``."""
    def step(state: H, text: str, final: bool, context: ToolContext
             ) -> tuple[str, list[ToolCallDelta], H]:
        tags = (context.spelled(v.tags[0]), context.spelled(v.tags[1]) if v.tags[1] else "")
        content, deltas, new = feed(state, text, final,
                                    context.forced_name if v.json_forms else None,
                                    context.required and v.json_forms, tags, v.between,
                                    v.whole)
        assert isinstance(new, kind)
        return content, deltas, new

    def encode(state: H, w: Writer) -> None:
        _encode(state, w)
        if isinstance(state, BetweenState):
            w.text(state.pending)

    def decode(r: Reader) -> H:
        s = _decode(r)
        fields = (s.mode, s.held, s.calls, s.spoke, s.scan, s.form)
        return kind(*fields, r.text()) if v.between else kind(*fields)  # type: ignore[call-arg]

    return ToolFormat(v.name, kind, kind, step, encode, decode)


FUNCTION_CALL = "<function_call>"
GRANITE4 = variant(Variant("granite4", (OPEN, CLOSE), between=True), BetweenState)
"""``granite4``: hermes' grammar, text between and after the calls kept as content."""
GRANITE_20B_FC = variant(Variant("granite-20b-fc", (FUNCTION_CALL, "")), FunctionCallState)
"""``granite-20b-fc``: ``<function_call>`` and a JSON object per call, no closing tag."""
LONGCAT = variant(Variant("longcat", ("<longcat_tool_call>", "</longcat_tool_call>"),
                          json_forms=False), LongcatState)
"""``longcat``: hermes with LongCat's tags; under a forced ``tool_choice`` only the tags are
read (vLLM's structural tag "longcat")."""


@dataclass(frozen=True, slots=True)
class Ernie45State(HermesState):
    """The state of ``ernie45`` (hermes' fields; its own type, its own tag)."""


ERNIE45 = variant(Variant("ernie45", (OPEN, CLOSE), whole=True), Ernie45State)
"""``ernie45``: hermes' tags, each call read whole up to its closing tag (``whole``)."""
