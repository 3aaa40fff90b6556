"""JSON tool calls in a wrapper (issue 19): an opener, then a JSON list of call objects or
one call object. Each format is data (``Wrapper``) read by one machine:

- ``phi4_mini_json`` (Phi-4-mini): ``functools[{"name": …, "arguments"|"parameters": …}, …]``
  anywhere in the output (vLLM reads the first ``functools[`` up to the next ``]`` and streams
  nothing at all);
- ``jamba``: ``<tool_calls>`` (a single token), whitespace, a list of ``{"name", "arguments"}``,
  ``</tool_calls>``;
- ``internlm``: ``<|action_start|><|plugin|>``, text up to the ``{`` dropped, one object
  ``{"name", "parameters"|"arguments"}`` (neither: ``{}``), ``<|action_end|>``;
- ``gigachat3``: content, ``<|message_sep|>``, then ``function call<|role_sep|>\n`` or
  ``<|function_call|>`` and one object ``{"name", "arguments": {…}}`` (the arguments an
  object), the separator and its whitespace dropped when a call follows.
- ``granite`` (Granite 3.x): ``<tool_call>`` or ``<|tool_call|>``, a list of
  ``{"name", "arguments"}`` read as vLLM's parser engine reads it (``Wrapper.engine``;
  docs/vllm-compat/granite.md).
- ``apertus``: ``<|tools_prefix|>``, a list of one-key objects
  ``{"NAME": ARGUMENTS}`` (or one such object), ``<|tools_suffix|>`` (``Wrapper.keyed``): the
  content before the block and the text after the list and after the suffix are kept, each
  stripped, joined by a newline (``Wrapper.closer``); elements that are no call are skipped; a
  block that is not JSON makes the whole output content; arguments cut off are closed as
  partial JSON closes them (``Mode.SETTLED``; docs/vllm-compat/json_wrapped.md).

This machine serves streaming and non-streaming alike (docs/design.md, Parsers), with a small
state:

- before the opener, text is content (whitespace alone before it is not, up to
  ``MAX_LEADING_SPACE``: dropped when a call follows);
- after it, each element whose head ``{"name": "…", KEY:`` reads within ``MAX_HEAD``
  characters is a call: its first delta carries the name, then the arguments stream as the
  model wrote them (``json_value.scan`` finds their end, so a ``]`` inside them is theirs); an
  element with its keys in another order is read whole if it closes within ``MAX_HEAD``; in a
  list ``,`` goes on to the next element and ``]`` ends it;
- after the list or the one object (or an element that is not a call, once a call was read)
  all text is dropped; an empty list is no call and no content; a first element that is not a
  call comes back as content with the opener, and reading goes on after it.

Under a forced ``tool_choice`` vLLM does not run these parsers but its JSON path (recordings
3835-3842), and so does this machine: with a named function the output as written is that
function's arguments (leading whitespace dropped); under "required" the output's JSON list of
``{"name", "parameters"}`` objects are the calls and no text is content.

The differences from vLLM are rows of the README's compatibility table
(docs/vllm-compat/json_wrapped.md). State: the mode, a short holdback, the call counter, the
spoke flag and the JSON scanner; each format has its own state type.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any, TypeVar

from derender.core.decoding.markers import Finder, pending_prefix
from derender.core.parsers.json_value import (
    JSON_SPACE,
    MAX_OPEN,
    SPACE_PATTERN,
    START,
    STRING,
    STRING_PATTERN,
    Settled,
    ValueScan,
    could_be_head,
    scan,
    settle,
    settle_end,
)
from derender.core.parsers.primitives import (
    MAX_LEADING_SPACE,
    leading_text,
    leads_content,
    merge,
    scan_bits,
    split_space,
    unpack_scan,
)
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer

MAX_HEAD = 512
"""Characters of an element read before its head must be known; past that it is no call."""


@dataclass(frozen=True, slots=True)
class Wrapper:
    """One format of the family: how its calls are wrapped and keyed."""

    name: str
    opener: str
    """The text opening the list of calls (its ``[`` included)."""
    keys: tuple[str, ...]
    """The keys a call's arguments may come under, right after its ``"name"``."""
    bracket: bool = False
    """The list's ``[`` follows the opener, JSON whitespace between (else it is part of it)."""
    single: bool = False
    """Not a list: one call object after the opener; after it all text is dropped."""
    skip_to: str = ""
    """With ``single``: any text before the object's ``{`` is dropped, up to this end marker
    (internlm's ``<|action_end|>``), after which all text is dropped."""
    alt: tuple[str, ...] = ()
    """Another opener, as its parts (gigachat3's ``function call<|role_sep|>\n``)."""
    sep: str = ""
    """A marker ending the content (gigachat3's ``<|message_sep|>``): with the whitespace after
    it, dropped before an opener (held until known, up to ``MAX_LEADING_SPACE``); content as
    written when no opener follows."""
    object_args: bool = False
    """The arguments must be a JSON object, else the element is no call."""
    empty: str | None = None
    """The arguments of a call object with a name and none of ``keys`` (None: no call)."""
    parts: tuple[str, ...] = ()
    """The markers the opener is made of, each spelled on its own (else the opener is one)."""
    engine: bool = False
    """vLLM's parser engine reads the list (``granite``, ``tool_call_body_array``): with calls
    returned the whitespace ending the content before the list is dropped (held meanwhile, up
    to ``MAX_LEADING_SPACE``) and text after them too, but another opener starts more calls;
    an opener without a list, or with an empty one, is dropped (not content); an object
    element that is no call is dropped; any other element ends the list, its text content."""
    keyed: bool = False
    """A call is a one-key object ``{"NAME": ARGUMENTS}`` (apertus), its name the key and its
    arguments any JSON value; after the opener a list of them or one of them; an element that
    is no call is skipped; the content before the opener is stripped, and the text after the
    JSON value (up to ``closer``) and after ``closer`` (each ``closer`` removed) are content,
    each stripped, joined by a newline; a block that is not JSON leaves all text content."""
    closer: str = ""
    """The marker ending the block (``keyed``)."""

    @property
    def head(self) -> re.Pattern[str]:
        return _head(self.keys)


_KEYED_HEAD = re.compile(rf'\{{{SPACE_PATTERN}{STRING_PATTERN}{SPACE_PATTERN}:{SPACE_PATTERN}')
"""A keyed call's head (``Wrapper.keyed``): ``{"NAME":`` (group 1: the name's JSON body)."""
_KEYED_PARTIAL = re.compile(r'\{[ \t\n\r]*(?:"(?:[^"\\]|\\.)*\\?(?:"[ \t\n\r]*)?)?')
"""What a keyed head may begin with."""


@functools.cache
def _head(keys: tuple[str, ...]) -> re.Pattern[str]:
    w = SPACE_PATTERN
    alternatives = "|".join(re.escape(key) for key in keys)
    return re.compile(rf'\{{{w}"name"{w}:{w}{STRING_PATTERN}{w},{w}"(?:{alternatives})"{w}:{w}')


PHI4 = Wrapper("phi4_mini_json", "functools[", ("arguments", "parameters"))
JAMBA = Wrapper("jamba", "<tool_calls>", ("arguments",), bracket=True)
INTERNLM = Wrapper("internlm", "<|action_start|><|plugin|>", ("parameters", "arguments"),
                   single=True, skip_to="<|action_end|>", empty="{}",
                   parts=("<|action_start|>", "<|plugin|>"))
GIGACHAT3 = Wrapper("gigachat3", "<|function_call|>", ("arguments",), single=True,
                    alt=("function call", "<|role_sep|>", "\n"), sep="<|message_sep|>",
                    object_args=True)
APERTUS = Wrapper("apertus", "<|tools_prefix|>", (), bracket=True, keyed=True,
                  closer="<|tools_suffix|>")
"""``apertus``: one-key call objects in a list (or one alone) between
``<|tools_prefix|>`` and ``<|tools_suffix|>``."""
HUNYUAN_A13B = Wrapper("hunyuan_a13b", "<tool_calls>", ("arguments",), bracket=True)
"""``hunyuan_a13b`` (wrapped2): jamba's grammar as Hunyuan-A13B writes it (the markers text)."""
GRANITE = Wrapper("granite", "<tool_call>", ("arguments",), bracket=True,
                  alt=("<|tool_call|>",), empty="{}", engine=True)
REQUIRED = Wrapper("required", "[", ("parameters",))
"""vLLM's JSON path under ``tool_choice`` "required": a list of ``{"name", "parameters"}``."""
_REQUIRED_HEAD = REQUIRED.head
_ARGUMENTS_HEAD = _head(("arguments",))
"""A head ``could_be_head`` accepts that "required"'s does not."""


class Mode(IntEnum):
    CONTENT = 0
    HEAD = 1
    """An element of the list may begin: its head, or the list's end."""
    ARGS = 2
    TAIL = 3
    """The rest of a call's object after its arguments."""
    SEP = 4
    """After an element: ``,`` (another) or ``]`` (the end)."""
    AFTER = 5
    """After the list: text is dropped."""
    BARE = 6
    """A named ``tool_choice``: the output is the call's arguments."""
    LIST = 7
    """After an opener whose ``[`` follows it (``Wrapper.bracket``)."""
    SKIP = 8
    """After a single call's opener: text up to its ``{`` (``Wrapper.single``)."""
    SKIP_ELEMENT = 9
    """An object element that is no call, skipped to its end (``Wrapper.engine``)."""
    RAW = 10
    """A block that is not JSON (``Wrapper.keyed``): all text is content as written."""
    TRAIL = 11
    """After a keyed block's JSON value, up to its closer: stripped content."""
    TRAIL_ON = 12
    """``TRAIL`` once its text began (whitespace is held, dropped at its end)."""
    CLOSED = 13
    """After a keyed block's closer: stripped content, closers removed."""
    CLOSED_ON = 14
    """``CLOSED`` once its text began."""
    SETTLED = 15
    """A keyed call's arguments, read as partial JSON reads them (``settled``): a member not
    yet whole is held back, and a value cut off by the end of the output is closed."""


@dataclass(frozen=True, slots=True)
class WrappedState(ToolState):
    mode: Mode = Mode.CONTENT
    held: str = ""
    calls: int = 0
    """Calls started so far (the next call's index)."""
    spoke: bool = False
    """Content other than whitespace was emitted."""
    scan: ValueScan = field(default_factory=ValueScan)
    settled: Settled = field(default_factory=Settled)
    """``Mode.SETTLED``: where the arguments were last cut (``Wrapper.keyed`` formats only)."""


W = TypeVar("W", bound=WrappedState)


def feed(wrapper: Wrapper, state: W, text: str, final: bool, context: ToolContext
         ) -> tuple[str, list[ToolCallDelta], W]:
    """Content and tool-call deltas of new text; ``final`` settles what was held back."""
    if context.forced_name is not None:
        return _named(state, text, final, context.forced_name)
    required = context.required
    opener = REQUIRED.opener if required else "".join(
        context.spelled(part) for part in wrapper.parts or (wrapper.opener,))
    single = wrapper.single and not required
    skip_to = context.spelled(wrapper.skip_to) if wrapper.skip_to and single else ""
    openers = (opener,) if required or not wrapper.alt else (
        opener, "".join(context.spelled(part) for part in wrapper.alt))
    sep = context.spelled(wrapper.sep) if wrapper.sep and not required else ""
    object_args = wrapper.object_args and not required
    head = _REQUIRED_HEAD if required else wrapper.head
    keys = REQUIRED.keys if required else wrapper.keys
    engine = wrapper.engine and not required
    keyed = wrapper.keyed and not required
    closer = context.spelled(wrapper.closer) if keyed else ""
    quiet = (engine and context.keep) or keyed
    """Content before the opener is stripped (engine: after the calls it is dropped)."""
    buffer = state.held + text
    finder = Finder(buffer)
    mode, calls, spoke, scanner = state.mode, state.calls, state.spoke, state.scan
    settled = state.settled
    content: list[str] = []
    deltas: list[ToolCallDelta] = []
    held = ""
    space = ""
    """Whitespace and the opener before the element being read while no call was read:
    content if it turns out no call."""
    while buffer or (final and mode == Mode.SETTLED):  # (a value cut off is closed)
        if mode == Mode.CONTENT and required:  # only a list opening the output is read
            body = buffer.lstrip()
            if not body:
                if not final and len(buffer) <= MAX_LEADING_SPACE:
                    held = buffer
                break
            mode = Mode.HEAD if body[0] == "[" else Mode.AFTER
            buffer = body[1:]
        elif mode == Mode.CONTENT:
            found = finder.earliest_in(buffer, openers)
            if found is None:
                at = None if final or not sep else _sep_hold(buffer, sep, openers)
                if at is not None:  # a separator that may precede a call: held
                    if not leads_content(buffer[:at], spoke):
                        at = 0  # with the whitespace before it, dropped if a call follows
                    content.append(buffer[:at])
                    spoke = spoke or bool(buffer[:at].strip())
                    held = buffer[at:]
                    break
                # (a separator written as text may be cut by a chunk: its start is held too)
                out, held, spoke = leading_text(buffer, (*openers, sep) if sep else openers,
                                                final, spoke, False)
                if quiet and calls:
                    out = ""  # after the calls: dropped
                elif quiet and not final and spoke:  # its whitespace may end it before a call
                    out, space_ = split_space(out, MAX_LEADING_SPACE)
                    held = space_ + held
                content.append(out)
                break
            before = buffer[:found[0]]
            cut = before.rfind(sep) if sep else -1
            dropped = ""
            if cut >= 0 and not before[cut + len(sep):].strip():
                # the separator and its whitespace: dropped with a call, content without
                before, dropped = before[:cut], before[cut:]
            if quiet and calls:
                before = ""  # after the calls: dropped
            elif leads_content(before, spoke):
                body = before.rstrip() if quiet else before
                content.append(body)
                spoke = True
                before = before[len(body):]
            space = before + dropped + found[1]
            mode = Mode.LIST if wrapper.bracket else Mode.SKIP if skip_to else Mode.HEAD
            buffer = buffer[found[0] + len(found[1]):]
        elif mode == Mode.SKIP:  # text before the call's "{" is dropped, as vLLM does
            found = finder.earliest_in(buffer, ("{", skip_to))
            if found is None:
                buffer = buffer[len(buffer) - pending_prefix(buffer, (skip_to,)):]
                if not final and buffer:
                    held = buffer
                break
            if found[1] == skip_to:
                mode, buffer, space = Mode.AFTER, "", ""
                break
            mode, buffer = Mode.HEAD, buffer[found[0]:]  # (the text before it: dropped)
        elif mode == Mode.LIST:
            body = buffer.lstrip(JSON_SPACE)
            if body[:1] == "[" or (keyed and body[:1] == "{"):  # keyed: a list or one call
                bracket = body[0] == "["
                space += buffer[:len(buffer) - len(body) + bracket]
                mode, buffer = Mode.HEAD, body[bracket:]
            elif not body and not final and len(buffer) <= MAX_LEADING_SPACE:
                held = buffer
                break
            elif keyed:  # not JSON: the whole output is content
                content.append(space)
                spoke, mode, space = True, Mode.RAW, ""
            else:  # no list: the opener is content, read on after it
                content.append(_unopened(space, openers) if engine else space)
                spoke, mode, space = True, Mode.CONTENT, ""
                if engine:  # whitespace after the opener is the list's: dropped
                    buffer = body
        elif mode == Mode.HEAD and keyed:
            body = buffer.lstrip(JSON_SPACE)
            if body[:1] == "]":  # the list ends (an empty one: no call)
                mode, buffer, space = Mode.TRAIL, body[1:], ""
                continue
            match = _KEYED_HEAD.match(body)
            if match is not None and match.end() <= MAX_HEAD and len(body) == match.end():
                if final:  # a name without a value: no call (vLLM's partial JSON drops it)
                    mode, buffer, space = Mode.AFTER, "", ""
                    break
                held = buffer  # a call once its arguments begin
                break
            if match is not None and match.end() <= MAX_HEAD:
                deltas.append(ToolCallDelta(calls, json.loads(f'"{match.group(1)}"'), ""))
                calls += 1
                mode, buffer, settled, space = Mode.SETTLED, body[match.end():], Settled(), ""
                continue
            if not final and len(body) < MAX_HEAD and (
                    not body or _KEYED_PARTIAL.fullmatch(body) is not None):
                held = buffer
                break
            end, _ = scan(ValueScan(), body[:MAX_HEAD])
            if end is None and not final and len(body) < MAX_HEAD:
                held = buffer  # a value that is no call may close
                break
            if end is None and final and len(body) < MAX_HEAD:  # cut off: no call (vLLM's
                mode, buffer, space = Mode.AFTER, "", ""  # partial JSON drops it)
                break
            if end is None and body[0] in '{["':  # a long value that is no call: skipped
                # (streamed or not: a whole output's long element is no cut-off one)
                mode, buffer, scanner, space = Mode.SKIP_ELEMENT, body, ValueScan(), ""
                continue
            if end is None and final:
                mode, buffer, space = Mode.AFTER, "", ""
                break
            if end is not None and _is_json(body[:end]):  # a value that is no call: skipped
                mode, buffer, space = Mode.SEP, body[end:], ""
                continue
            if calls:  # not JSON after the calls: the rest is text after the block
                mode, buffer, space = Mode.TRAIL, body, ""
                continue
            content.append(space)  # not JSON: the whole output is content
            spoke, mode, space = True, Mode.RAW, ""
        elif mode == Mode.HEAD:
            body = buffer.lstrip(JSON_SPACE)
            if body[:1] == "]" and not single:
                if engine:  # an empty list: dropped, reading goes on after it
                    content.append(_unopened(space, openers))
                    mode, buffer, space = Mode.CONTENT, body[1:], ""
                    continue
                mode, buffer, space = Mode.AFTER, body[1:], ""
                continue
            match = head.match(body)
            value = body[match.end():].lstrip(JSON_SPACE)[:1] if match is not None else ""
            if match is not None and object_args and not value and not final \
                    and len(body) < MAX_HEAD:
                held = buffer  # whether the arguments are an object is not known yet
                break
            if match is not None and match.end() <= MAX_HEAD and (
                    not object_args or value == "{"):
                deltas.append(ToolCallDelta(calls, json.loads(f'"{match.group(1)}"'), ""))
                calls += 1
                mode, buffer, scanner, space = Mode.ARGS, body[match.end():], ValueScan(), ""
                continue
            if not final and len(body) < MAX_HEAD and could_be_head(body) and match is None \
                    and not (required and _ARGUMENTS_HEAD.match(body)):
                held = buffer
                break
            end, _ = scan(ValueScan(), body[:MAX_HEAD])
            if end is None and not final and len(body) < MAX_HEAD and body[:1] == "{":
                held = buffer  # an object with its keys in another order may close
                break
            call = None if end is None else _whole_call(body[:end], keys, wrapper.empty,
                                                        object_args)
            if call is not None and end is not None:
                deltas.append(ToolCallDelta(calls, *call))
                calls += 1
                mode, buffer, space = Mode.AFTER if single else Mode.SEP, body[end:], ""
                continue
            if engine and body[:1] == "{":  # an object that is no call: dropped
                content.append(_unopened(space, openers))  # (before it: content, as written)
                space = ""
                if end is None and (final or len(body) >= MAX_HEAD):
                    mode, buffer, scanner = Mode.SKIP_ELEMENT, body, ValueScan()
                    continue
                mode, buffer = Mode.SEP, body[end:]
                continue
            if engine:  # the list ends; the text from here on is content
                content.append(_unopened(space, openers))
                spoke, mode, buffer, space = spoke or bool(space), Mode.CONTENT, body, ""
                if not body:
                    break
                continue
            if calls or required:  # after the calls, what is not a call ends them
                mode, buffer = Mode.AFTER, ""
                break
            # not a call: the wrapper and the element's text are content, read on after it
            cut = max(end or 1, 1)
            content.append(space + buffer[:len(buffer) - len(body) + cut])
            spoke, mode, buffer, space = True, Mode.CONTENT, body[cut:], ""
        elif mode == Mode.ARGS:
            started = scanner.started
            end, after = scan(scanner, buffer)
            piece, rest = buffer, ""
            if end is None:
                scanner = after
            else:
                piece, rest = buffer[:end], buffer[end:]
                scanner, mode = ValueScan(started=True, depth=1), Mode.TAIL
            if not started:
                piece = piece.lstrip(JSON_SPACE)
            if piece:
                deltas.append(ToolCallDelta(calls - 1, None, piece))
            buffer = rest
        elif mode == Mode.SETTLED:
            cut, end, after_cut, whole = settle(settled, buffer)
            if buffer[:cut]:
                deltas.append(ToolCallDelta(calls - 1, None, buffer[:cut]))
            unsettled, settled = buffer[cut:], after_cut
            if end is not None:
                mode, buffer, settled = Mode.TAIL, unsettled, Settled()
                scanner = ValueScan(started=True, depth=1)
                continue
            if not whole or len(unsettled) > MAX_HEAD:  # not JSON, or too long to hold: as written
                mode, buffer, settled = Mode.ARGS, unsettled, Settled()
                scanner = ValueScan(started=after_cut.where != START, depth=len(after_cut.stack),
                                    in_string=after_cut.where == STRING)
                continue
            if final:  # cut off: closed as partial JSON closes it
                deltas.append(ToolCallDelta(calls - 1, None, settle_end(after_cut, unsettled)))
                mode, settled = Mode.AFTER, Settled()
                break
            held = unsettled
            break
        elif mode == Mode.TAIL:
            end, after = scan(scanner, buffer)
            if end is None:
                scanner = after
                break
            mode, buffer, scanner = Mode.AFTER if single else Mode.SEP, buffer[end:], ValueScan()
        elif mode == Mode.SEP:
            body = buffer.lstrip(JSON_SPACE)
            if not body:
                break
            if keyed:  # "," another element; "]" or any other text: after the JSON
                mode = Mode.HEAD if body[0] == "," else Mode.TRAIL
                buffer = body[1:] if body[0] in ",]" else body
                continue
            if engine and body[0] != ",":  # "]" ends the list, "{" starts an element
                mode = Mode.HEAD if body[0] == "{" else Mode.CONTENT
                buffer = body[1:] if body[0] == "]" else body
                continue
            mode = Mode.HEAD if body[0] == "," else Mode.AFTER
            buffer = body[1:]
        elif mode == Mode.SKIP_ELEMENT:
            end, after = scan(scanner, buffer)
            if end is None:
                scanner = after
                break
            mode, buffer, scanner = Mode.SEP, buffer[end:], ValueScan()
        elif mode == Mode.RAW:
            content.append(buffer)
            break
        elif mode in _TRAILS:
            step, out, held, spoke = _trail(mode, buffer, closer, final, spoke)
            mode, left = step
            content.append(out)
            if left is None:
                break
            buffer = left
        else:  # AFTER
            break
    if engine and final and mode in (Mode.LIST, Mode.HEAD) and space:  # an opener, no call
        content.append(_unopened(space, openers))
    if mode in (Mode.LIST, Mode.SKIP, Mode.HEAD) and space and not final:
        # waits: read again from before the wrapper
        mode, held = Mode.CONTENT, space + held
    return ("".join(content), merge(deltas),
            replace(state, mode=mode, held=held, calls=calls, spoke=spoke, scan=scanner,
                    settled=settled))


_TRAILS = (Mode.TRAIL, Mode.TRAIL_ON, Mode.CLOSED, Mode.CLOSED_ON)


def _trail(mode: Mode, buffer: str, closer: str, final: bool, spoke: bool
           ) -> tuple[tuple[Mode, str | None], str, str, bool]:
    """A keyed block's text after its JSON value (``TRAIL``: up to the closer; ``CLOSED``: after
    it, closers removed), as vLLM keeps it: each part stripped, after a newline when content
    came before. Returns (the next mode and the text left to read, None: wait), the content,
    the text held back and ``spoke``."""
    on = mode in (Mode.TRAIL_ON, Mode.CLOSED_ON)
    at = buffer.find(closer) if mode in (Mode.TRAIL, Mode.TRAIL_ON) else -1
    if at >= 0:
        piece, ends, tail = buffer[:at], True, ""
    else:
        keep = 0 if final else pending_prefix(buffer, (closer,))
        piece, ends, tail = buffer[:len(buffer) - keep], final, buffer[len(buffer) - keep:]
        if mode in (Mode.CLOSED, Mode.CLOSED_ON):
            piece = piece.replace(closer, "")
    out, space = "", ""
    if not on and piece.strip():
        out, piece, on = "\n" if spoke else "", piece.lstrip(), True
    if on:
        body, space = (piece.rstrip(), "") if ends else split_space(piece, MAX_LEADING_SPACE)
        out += body
    spoke = spoke or bool(out.strip())
    if at >= 0:
        return (Mode.CLOSED, buffer[at + len(closer):]), out, "", spoke
    second = mode in (Mode.CLOSED, Mode.CLOSED_ON)
    after = (Mode.CLOSED_ON if on else Mode.CLOSED) if second else (
        Mode.TRAIL_ON if on else Mode.TRAIL)
    return (after, None), out, space + tail, spoke


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _unopened(space: str, openers: tuple[str, ...]) -> str:
    """``space`` (the whitespace before an opener, the opener and what of the list was read)
    less the opener and what follows it."""
    return space[:max((space.rfind(opener) for opener in openers), default=-1)] \
        if any(opener in space for opener in openers) else space


def _sep_hold(buffer: str, sep: str, openers: tuple[str, ...]) -> int | None:
    """Where a held separator starts: the last ``sep`` of ``buffer`` when only whitespace and
    the beginning of an opener follow it (within ``MAX_LEADING_SPACE``); None: none is."""
    at = buffer.rfind(sep)
    if at < 0:
        return None
    tail = buffer[at + len(sep):]
    rest = tail.lstrip()
    if len(tail) > MAX_LEADING_SPACE or (rest and not any(o.startswith(rest) for o in openers)):
        return None
    return at


def _whole_call(region: str, keys: tuple[str, ...], empty: str | None = None,
                object_args: bool = False) -> tuple[str, str] | None:
    """Name and arguments of a whole element that is a call with its keys in any order (the
    arguments under the first of ``keys`` it has, written anew as vLLM writes them; ``empty``
    when it has none of them)."""
    try:
        call: Any = json.loads(region)
    except ValueError:
        return None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return None
    for key in keys:
        if key in call:
            if object_args and not isinstance(call[key], dict):
                return None
            return call["name"], json.dumps(call[key], ensure_ascii=False)
    return None if empty is None else (call["name"], empty)


def _named(state: W, text: str, final: bool, name: str) -> tuple[str, list[ToolCallDelta], W]:
    """vLLM's JSON path for a named ``tool_choice``: the output as written is the arguments
    of one call, once it is not blank (leading whitespace held meanwhile, up to
    ``MAX_LEADING_SPACE``, and dropped)."""
    if state.calls:
        return "", [ToolCallDelta(0, None, text)] if text else [], state
    space = state.held + text
    if not space.strip() and (final or len(space) <= MAX_LEADING_SPACE):
        return "", [], replace(state, mode=Mode.BARE, held="" if final else space)
    return "", [ToolCallDelta(0, name, space.lstrip())], replace(state, mode=Mode.BARE, held="",
                                                                 calls=1)


def _encode(state: WrappedState, w: Writer) -> None:
    w.uint(state.mode)
    w.text(state.held)
    w.uint(state.calls)
    w.uint(state.spoke | scan_bits(state.scan))
    w.uint(state.scan.depth)


def _encode_keyed(state: WrappedState, w: Writer) -> None:
    _encode(state, w)
    w.text(state.settled.stack)
    w.uint(state.settled.where)


def _format(wrapper: Wrapper, state_type: type[W]) -> ToolFormat[W]:
    def feed_(state: W, text: str, final: bool, context: ToolContext
              ) -> tuple[str, list[ToolCallDelta], W]:
        return feed(wrapper, state, text, final, context)

    def decode(r: Reader) -> W:
        mode, held, calls, bits, depth = r.uint(), r.text(), r.uint(), r.uint(), r.uint()
        if mode > max(Mode) or bits >> 5:
            raise ValueError(f"malformed {wrapper.name} state")
        settled = Settled()
        if wrapper.keyed:
            stack, where = r.text(), r.uint()
            if where > STRING or len(stack) > MAX_OPEN or stack.strip("{["):
                raise ValueError(f"malformed {wrapper.name} state")
            settled = Settled(stack, where)
        return state_type(Mode(mode), held, calls, bool(bits & 1), unpack_scan(bits, depth),
                          settled)

    return ToolFormat(wrapper.name, state_type, state_type, feed_,
                      _encode_keyed if wrapper.keyed else _encode, decode)


@dataclass(frozen=True, slots=True)
class Phi4State(WrappedState):
    pass


@dataclass(frozen=True, slots=True)
class JambaState(WrappedState):
    pass


@dataclass(frozen=True, slots=True)
class InternlmState(WrappedState):
    pass


@dataclass(frozen=True, slots=True)
class Gigachat3State(WrappedState):
    pass


PHI4_FORMAT = _format(PHI4, Phi4State)
GIGACHAT3_FORMAT = _format(GIGACHAT3, Gigachat3State)
INTERNLM_FORMAT = _format(INTERNLM, InternlmState)
JAMBA_FORMAT = _format(JAMBA, JambaState)


@dataclass(frozen=True, slots=True)
class HunyuanA13bState(WrappedState):
    pass


HUNYUAN_A13B_FORMAT = _format(HUNYUAN_A13B, HunyuanA13bState)
class GraniteState(WrappedState):
    pass


GRANITE_FORMAT = _format(GRANITE, GraniteState)


@dataclass(frozen=True, slots=True)
class ApertusState(WrappedState):
    pass


APERTUS_FORMAT = _format(APERTUS, ApertusState)
