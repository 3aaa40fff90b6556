"""The ``mistral`` tool-call format (Mistral, Mixtral, Magistral, Devstral; tokenizer v11+):
``[TOOL_CALLS]name[ARGS]{…}`` per call, or ``[TOOL_CALLS]name{…}``, several calls one after
the other, each after its own ``[TOOL_CALLS]``.

vLLM 0.33's reference (``MistralToolParser``, its ``MistralParser`` engine) reads this grammar
when the tokenizer has ``[ARGS]``: text before the first ``[TOOL_CALLS]`` is content (only
whitespace there is dropped when calls follow), the name runs to ``[ARGS]`` or the first
``{`` (which begins the arguments) and is stripped, the arguments run to the next
``[TOOL_CALLS]``; without streaming they are the first JSON value found there (text after it
is dropped), the text itself when it is not JSON, and ``{}`` when there is none. This machine
serves both modes alike (docs/design.md, Parsers) the way vLLM's non-streaming answer reads the
output:

- before the first call, text is content; whitespace alone before a call is dropped (held
  up to ``MAX_LEADING_SPACE`` characters);
- the name is held until ``[ARGS]``, ``{`` or the next ``[TOOL_CALLS]`` (at most ``MAX_NAME``
  characters; of a longer one the first ``MAX_NAME + 1`` are the name, the rest arguments,
  streamed or not), then sent stripped; a call without a name is one (named ``""``) only once it
  has arguments;
- arguments starting with ``{`` or ``[`` stream as written up to the end of that JSON value
  (``json_value.scan``), and what follows up to the next ``[TOOL_CALLS]`` is dropped; other
  arguments stream as written, their trailing whitespace dropped; none at all are ``{}``;
- the values of JSON arguments are typed by the tool's schema as vLLM types them without
  streaming (``fix_types``, its ``_fix_arg_types``): arguments of a tool whose schema has
  properties are held until they end (at most ``MAX_TYPED`` characters; longer ones stream
  as written, untyped). The older grammar's arguments are not typed (nor are they by vLLM).

With a vocabulary that has ``[TOOL_CALLS]`` but not ``[ARGS]`` (tokenizers before v11: Mistral
7B v0.3, Mixtral 8x22B, Nemo) vLLM reads the older grammar instead, a JSON list of
``{"name": …, "arguments": …}`` objects (or one bare object) after ``[TOOL_CALLS]``, without
streaming the first JSON value after the marker. Here: an object whose head
``{"name": "…", "arguments":`` is read within ``MAX_HEAD`` characters streams its arguments
(arguments written as a JSON string stream that string's value, as vLLM takes a string as
the arguments' text);
one with its keys in another order is read whole if it closes within ``MAX_HEAD``; listed
values that are no calls are skipped; after the list (or the bare object) everything is
dropped; text after the marker that is not JSON is content. Under ``tool_choice``
"required" or a named function the unmarked list (the JSON-schema output) is read too.

State: the mode, a short holdback (leading whitespace, the name, trailing whitespace, an object
head), the call counter, the spoke, nameless and listed flags, the JSON scanner, the typed
tool's index and the arguments held to be typed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from derender.core.decoding.markers import Finder, pending_prefix
from derender.core.parsers.json_value import (
    SPACE_PATTERN,
    STRING_PATTERN,
    ValueScan,
    could_be_head,
    scan,
)
from derender.core.parsers.primitives import (
    MAX_LEADING_SPACE,
    merge,
    scan_bits,
    skip_space,
    unpack_scan,
)
from derender.core.parsers.schema import fix_object, tool_index, tool_properties
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer

TOOL_CALLS, ARGS = "[TOOL_CALLS]", "[ARGS]"
MAX_NAME = 512
"""Characters of a name held before it is sent as it stands (the rest is arguments)."""
MAX_TRAILING_SPACE = 256
MAX_TYPED = 1024
"""Characters of JSON arguments held to be typed by the tool's schema when they end (as vLLM
types them without streaming); longer arguments stream as written, untyped."""
"""Whitespace at the end of non-JSON arguments held back to be dropped at their end."""



class Mode(IntEnum):
    """Where the machine is (its number is the stream-state encoding). From ``LIST_START``
    on, the modes of the older grammar (tokenizers without ``[ARGS]``): ``[TOOL_CALLS]`` then
    a JSON list of ``{"name": …, "arguments": …}`` objects (or one bare object);
    ``STRING_ARGS``: arguments written as a JSON string, whose value (decoded) is the
    arguments, as vLLM reads them."""

    CONTENT = 0
    NAME = 1
    ARGS_START = 2
    JSON = 3
    RAW = 4
    AFTER = 5
    LIST_START = 6
    LIST = 7
    OBJECT = 8
    LIST_ARGS = 9
    TAIL = 10
    DONE = 11
    STRING_ARGS = 12


(CONTENT, NAME, ARGS_START, JSON, RAW, AFTER, LIST_START, LIST, OBJECT, LIST_ARGS, TAIL, DONE,
 STRING_ARGS) = Mode
_MODES = tuple(Mode)
MAX_HEAD = 512
"""Characters of a listed object read before it must be known as a call."""
_W = SPACE_PATTERN
_HEAD = re.compile(rf'\{{{_W}"name"{_W}:{_W}{STRING_PATTERN}{_W},{_W}"arguments"{_W}:{_W}')

_ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


@dataclass(frozen=True, slots=True)
class MistralState(ToolState):
    mode: Mode = CONTENT
    held: str = ""
    """Leading whitespace (CONTENT), the name so far (NAME), trailing whitespace (RAW) or a
    marker's beginning, all read again with the next text."""
    calls: int = 0
    """Calls started so far (the next call's index)."""
    spoke: bool = False
    """Content other than whitespace was emitted."""
    scan: ValueScan = field(default_factory=ValueScan)
    """The JSON arguments being read (JSON)."""
    nameless: bool = False
    """The call being read has an empty name: it is a call (named ``""``, as vLLM returns it)
    only once it has arguments."""
    listed: bool = False
    """Older grammar: the calls are a JSON list (else one bare object)."""
    tool: int = 0
    """1 + the index in the request's ``tools`` of the open call's function when its schema
    has properties (its JSON arguments are then typed), else 0."""
    typed: str = ""
    """JSON arguments held until they end, to be typed (at most ``MAX_TYPED``)."""


def feed(state: MistralState, text: str, final: bool, context: ToolContext
         ) -> tuple[str, list[ToolCallDelta], MistralState]:
    """Content and tool-call deltas of new text; ``final`` settles what was held back."""
    tc, args = context.spelled(TOOL_CALLS), context.spelled(ARGS)
    older = args == ARGS and tc != TOOL_CALLS  # the vocabulary has [TOOL_CALLS], not [ARGS]
    forced = context.required or context.forced_name is not None
    buffer = state.held + text
    size = len(buffer)
    pos = 0
    """Where the text not read yet begins: ``buffer`` is read in place, by position (a copy
    of the rest at every marker is quadratic, issue 22), and markers are looked up in the
    whole text, each one's next place once."""
    finder = Finder(buffer)

    mode, calls, spoke, scanner = state.mode, state.calls, state.spoke, state.scan
    nameless, listed = state.nameless, state.listed
    tool, typed = state.tool, state.typed
    content: list[str] = []
    deltas: list[ToolCallDelta] = []
    held = ""

    def start_call(name: str, arguments: str) -> None:
        nonlocal calls, nameless, tool
        nameless = not name
        tool = 0 if older else _typed_tool(context.tools, name)
        if not nameless:
            deltas.append(ToolCallDelta(calls, name, arguments))
            calls += 1

    def add_json(piece: str, ended: bool) -> None:
        """JSON arguments: held while they may be typed, else as written."""
        nonlocal typed, tool
        if not tool:
            add(piece)
            return
        typed += piece
        if len(typed) > MAX_TYPED:  # too long to hold, whatever the split: as written
            add(typed)
        elif ended:
            add(fix_types(typed, context.tools[tool - 1]))
        else:
            return
        typed, tool = "", 0

    def add(arguments: str, written: bool = True) -> None:
        nonlocal calls, nameless
        if nameless and written and arguments:
            deltas.append(ToolCallDelta(calls, "", arguments))
            calls, nameless = calls + 1, False
        elif not nameless:
            deltas.append(ToolCallDelta(calls - 1, None, arguments))
    while True:
        if mode == CONTENT:
            found = finder.earliest((tc,), pos)
            if older and forced and not spoke and calls == 0 \
                    and buffer.startswith(("[", "{"), skip_space(buffer, pos)):
                mode, pos = LIST_START, skip_space(buffer, pos)  # the JSON-schema output, unmarked
                continue
            if found is None:
                hold = 0 if final else pending_prefix(buffer, (tc,), pos)
                out = buffer[pos:size - hold]
                if not spoke and not out.strip() and not final and len(out) <= MAX_LEADING_SPACE:
                    hold, out = size - pos, ""  # whitespace may precede a call
                content.append(out)
                spoke = spoke or bool(out.strip()) or len(out) > MAX_LEADING_SPACE
                held = buffer[size - hold:]
                break
            before = buffer[pos:found[0]]
            if spoke or before.strip() or len(before) > MAX_LEADING_SPACE:  # (a place: cuts
                # do not move it; longer whitespace is content, streamed or not)
                content.append(before)
                spoke = True
            mode, pos = (LIST_START if older else NAME), found[0] + len(tc)
        elif mode == LIST_START:  # older grammar: after [TOOL_CALLS]
            at = skip_space(buffer, pos)
            if buffer.startswith(tc, at):  # markers one after the other count as one
                pos = at + len(tc)
            elif at == size:
                break
            elif buffer[at] in "[{":
                listed = buffer[at] == "["
                mode, pos = (LIST if listed else OBJECT), at + 1 if listed else at
            else:  # no JSON: the text is content
                mode, pos = CONTENT, at
        elif mode == LIST:  # between listed objects
            at = skip_space(buffer, pos, " \t\n\r,")
            if at == size:
                break
            if buffer[at] == "]":
                mode, pos = DONE, at
            elif buffer[at] == "{":
                mode, pos = OBJECT, at
            else:  # a listed value that is no object: skipped
                mode, pos, scanner = TAIL, at, ValueScan()
        elif mode == OBJECT:
            match = _HEAD.match(buffer, pos)
            if match is not None and match.end() - pos <= MAX_HEAD:
                start_call(json.loads(f'"{match.group(1)}"'), "")
                mode, pos, scanner = LIST_ARGS, match.end(), ValueScan()
                continue
            if not final and size - pos < MAX_HEAD and could_be_head(buffer, pos):
                held = buffer[pos:]
                break
            end, _ = scan(ValueScan(), buffer, pos, pos + MAX_HEAD)
            if end is None and not final and size - pos < MAX_HEAD:
                held = buffer[pos:]
                break
            call = None if end is None else _whole_call(buffer[pos:end])
            if call is not None:
                start_call(call[0], "")
                add(call[1])
            mode = LIST if end is not None and listed else DONE
            pos = end if end is not None else size
        elif mode == LIST_ARGS and not scanner.started \
                and buffer.startswith('"', skip_space(buffer, pos)):
            mode, pos = STRING_ARGS, skip_space(buffer, pos) + 1
        elif mode == STRING_ARGS:  # the string's value is the arguments
            value, used, closed = _string_part(buffer, pos, final)
            add(value)
            if not closed:
                held = buffer[used:]
                break
            mode, pos, scanner = TAIL, used, ValueScan(started=True, depth=1)
        elif mode == LIST_ARGS:
            started = scanner.started
            end, scanner = scan(scanner, buffer, pos)
            piece = buffer[pos:] if end is None else buffer[pos:end]
            if not started:
                piece = piece.lstrip()
            add(piece)
            if end is None:
                break
            mode, pos, scanner = TAIL, end, ValueScan(started=True, depth=1)
        elif mode == TAIL:  # the rest of the call's object (or a listed value skipped)
            end, scanner = scan(scanner, buffer, pos)
            if end is None:
                break
            mode, pos, scanner = (LIST if listed else DONE), end, ValueScan()
        elif mode == DONE:  # after the calls' JSON everything is dropped
            break
        elif mode == NAME:
            found = finder.earliest((tc, args, "{"), pos)
            if found is None or found[0] - pos > MAX_NAME:
                if found is None and not final and size - pos <= MAX_NAME:
                    held = buffer[pos:]
                    break
                if found is None and size - pos <= MAX_NAME:  # (final) the output ends in it
                    start_call(buffer[pos:].strip(), "{}")
                    break
                # longer than MAX_NAME: its first MAX_NAME + 1 characters are the name (a
                # place in the output, whatever the chunks), the rest is read as arguments
                start_call(buffer[pos:pos + MAX_NAME + 1].strip(), "")
                mode, pos = ARGS_START, pos + MAX_NAME + 1
                continue
            at, marker = found
            start_call(buffer[pos:at].strip(), "{}" if marker == tc else "")
            if marker == tc:
                pos = at + len(tc)
            else:
                mode = ARGS_START
                pos = at + len(args) if marker == args else at
        elif mode == ARGS_START:
            at = skip_space(buffer, pos)
            if at == size:
                if final:
                    add("{}", written=False)
                break
            if buffer.startswith(tc, at):
                add("{}", written=False)
                mode, pos = NAME, at + len(tc)
            else:
                mode, pos, scanner = (JSON if buffer[at] in "{[" else RAW), at, ValueScan()
        elif mode in (JSON, RAW):
            tc_at = finder.earliest((tc,), pos)
            at = -1 if tc_at is None else tc_at[0]
            stop = size if at < 0 else at
            hold = 0 if final or at >= 0 else pending_prefix(buffer, (tc,), pos)
            stop -= hold
            if mode == JSON:
                end, scanner = scan(scanner, buffer, pos, stop)
                if end is not None:
                    add_json(buffer[pos:end], True)
                    mode, pos, scanner = AFTER, end, ValueScan()
                    continue
                add_json(buffer[pos:stop], False)
                if at >= 0 or final:  # the arguments never closed: as written
                    add(typed)
                    typed, tool = "", 0
                piece = ""
            else:
                region = buffer[pos:stop]
                piece = region.rstrip()
                if at < 0 and not final:
                    if len(region) - len(piece) <= MAX_TRAILING_SPACE:
                        hold += len(region) - len(piece)
                    else:
                        piece = region
            add(piece)
            if at >= 0:
                mode, pos, scanner = NAME, at + len(tc), ValueScan()
                continue
            held = buffer[size - hold:] if hold else ""
            break
        else:  # AFTER: dropped up to the next call
            found = finder.earliest((tc,), pos)
            if found is None:
                if not final:  # the end that may begin the marker
                    held = buffer[size - pending_prefix(buffer, (tc,), pos):]
                break
            mode, pos = NAME, found[0] + len(tc)
    return ("".join(content), merge(deltas),
            MistralState(mode, held, calls, spoke, scanner, nameless, listed, tool, typed))


def call_id(request_id: str, choice_index: int, call_index: int) -> str:
    """Deterministic id in Mistral's form: nine alphanumeric characters (vLLM draws them at
    random; mistral-common's validator accepts only this form)."""
    digest = hashlib.sha256(f"{request_id}\x00{choice_index}\x00{call_index}".encode()).digest()
    number = int.from_bytes(digest[:8], "big")
    chars = []
    for _ in range(9):
        number, digit = divmod(number, len(_ALPHANUMERIC))
        chars.append(_ALPHANUMERIC[digit])
    return "".join(chars)


def _encode(state: MistralState, w: Writer) -> None:
    scan_ = state.scan
    w.uint(state.mode)
    w.text(state.held)
    w.uint(state.calls)
    w.uint(state.spoke | scan_bits(scan_) | state.nameless << 5 | state.listed << 6)
    w.uint(scan_.depth)
    w.uint(state.tool)
    w.text(state.typed)


def _decode(r: Reader) -> MistralState:
    mode, held, calls, bits, depth = r.uint(), r.text(), r.uint(), r.uint(), r.uint()
    tool, typed = r.uint(), r.text()
    if mode >= len(_MODES) or bits >> 7:
        raise ValueError("malformed mistral state")
    return MistralState(_MODES[mode], held, calls, bool(bits & 1), unpack_scan(bits, depth),
                        bool(bits & 32), bool(bits & 64), tool, typed)


FORMAT = ToolFormat("mistral", MistralState, MistralState, feed, _encode, _decode)


def _whole_call(region: str) -> tuple[str, str] | None:
    """Name and arguments of a listed object that is a call with its keys in any order (as
    vLLM reads it: a missing or non-string name is ``""``, missing arguments ``{}``)."""
    try:
        call: Any = json.loads(region)
    except ValueError:
        return None
    if not isinstance(call, dict) or not ("name" in call or "arguments" in call):
        return None
    name, arguments = call.get("name"), call.get("arguments")
    if arguments is None:
        arguments = "{}"
    elif not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return (name if isinstance(name, str) else ""), arguments


_STRING_RUN = re.compile(r'[^"\\]+')
_ESCAPE = re.compile(r'\\(?:["\\/bfnrt]|u(?:[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}'
                     r'|[0-9a-fA-F]{4}))')
MAX_ESCAPE = 12
"""Characters of an escape held until it is whole (``\\uD83C\\uDF26``: a surrogate pair)."""


def _string_part(text: str, start: int, final: bool) -> tuple[str, int, bool]:
    """The value of the beginning of a JSON string's body at ``text[start:]``: (value, where
    reading stopped in ``text``, whether its closing quote was read). An escape that may
    still grow waits (unless ``final``); one that is not JSON is kept as written."""
    out: list[str] = []
    at = start
    while at < len(text):
        run = _STRING_RUN.match(text, at)
        if run is not None:
            out.append(run.group())
            at = run.end()
            continue
        if text[at] == '"':
            return "".join(out), at + 1, True
        tail = text[at:at + MAX_ESCAPE]
        escape = _ESCAPE.match(tail)
        pair_pending = (escape is not None and len(escape.group()) == 6
                        and "\\ud800" <= escape.group().lower() < "\\udc00"
                        and len(tail) < MAX_ESCAPE
                        and (tail[6:] == "" or _could_escape(tail[6:])))
        if not final and (pair_pending or (escape is None and len(tail) < 6
                                           and _could_escape(tail))):
            break
        if escape is None:
            out.append(text[at])
            at += 1
            continue
        out.append(json.loads(f'"{escape.group()}"'))
        at += len(escape.group())
    return "".join(out), at, False


def _could_escape(tail: str) -> bool:
    """Whether ``tail`` (shorter than an escape) may still become one."""
    return re.fullmatch(r'\\(?:u[0-9a-fA-F]{0,3})?', tail) is not None


def _typed_tool(tools: Any, name: str) -> int:
    """1 + the index of the first tool named ``name`` if its schema has properties, else 0
    (vLLM's ``find_tool_properties``)."""
    return tool_index(tools, name) + 1 if tool_properties(tools, name) else 0


def fix_types(arguments: str, tool: Any) -> str:
    """vLLM's ``_fix_arg_types``: the arguments' values typed by the tool's schema (JSON
    written anew when one changed, else the text as it stands), with the parser engine's port
    of its ``_coerce_dict`` (``schema.fix_object``)."""
    try:
        args = json.loads(arguments)
    except ValueError:
        return arguments
    if not isinstance(args, dict):
        return arguments
    typed = json.dumps(fix_object(args, tool["function"]["parameters"]["properties"]),
                       ensure_ascii=False)
    return arguments if typed == json.dumps(args, ensure_ascii=False) else typed


def older_grammar(has_token: Callable[[str], bool]) -> bool:
    """The vocabulary has ``[TOOL_CALLS]`` but not ``[ARGS]`` (Mistral's tokenizers before
    v11): calls are a JSON list, and vLLM leaves them unparsed under ``tool_choice`` "none"."""
    return has_token(TOOL_CALLS) and not has_token(ARGS)
