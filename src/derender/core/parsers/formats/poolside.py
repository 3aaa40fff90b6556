"""poolside Laguna: ``poolside_v1``, vLLM 0.33's ``PoolsideV1ToolParser``
(``vllm/tool_parsers/poolside_v1_tool_parser.py``), GLM-4's calls read by regular
expressions over the whole output::

    <tool_call>NAME\\n<arg_key>K</arg_key>\\n<arg_value>V</arg_value>…</tool_call>

A call is ``<tool_call>`` … the next ``</tool_call>`` (one without its end is none); in it the
last ``<tool_call>`` whose name (``[^\\n<]+``, stripped) is followed by nothing but whitespace
and then the parameters or the end is read, else the call is skipped. Parameters are every
``<arg_key>K</arg_key>``, whitespace, ``<arg_value>V</arg_value>`` after the name (other text
ignored); keys stripped; a value of a parameter whose schema type is exactly "string" is kept
verbatim, any other is read stripped as JSON, else a Python literal, else the text (``_value``).
Content is the text before the first ``<tool_call>`` (none when whitespace alone) once a call
is read; with no call read the whole output is content.

So the machine holds the text from the first ``<tool_call>`` until a call reads (then the
text before it is content, or dropped when whitespace alone, and every later text but the
calls is dropped) or the output ends (then it is content); each call is held whole until its
``</tool_call>``, at most ``MAX_HELD`` bytes (past it, before a call was read, the held text
is content and no call is read any more; after, the call is dropped: README compatibility). A
value JSON cannot write (a set) makes the whole output content, as in vLLM, when it is in the
first call read; in a later one that call is dropped (vLLM: the whole output is content).
Reasoning (``poolside_v1``) is ``deepseek_v3``'s (``reasoning.FORMATS``).

The machine (``held_feed``) takes its format's differences as data (``HeldCalls``: the call
markers, the reading of one call, a normalization of the text, the reading under a forced
``tool_choice``); ``minicpm5`` (``formats/minicpm5.py``) is read by it too.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from derender.core.decoding.markers import pending_prefix
from derender.core.parsers.primitives import (
    MAX_LEADING_SPACE,
    leading_text,
    leads_content,
    split_space,
)
from derender.core.parsers.schema import tool_index
from derender.core.parsers.tools import Feed, ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer, utf8_size

CALL, END_CALL = "<tool_call>", "</tool_call>"
KEY, END_KEY, VALUE, END_VALUE = "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"
MAX_HELD = 4096
"""Bytes (UTF-8, as the state holds them) of text held until a call reads."""

OPEN, PENDING, CALLED, TEXT = range(4)
"""Before the first ``<tool_call>``; after it, no call read yet (all held); a call was read
(only calls are read from here on); all content (the held text overflowed)."""


@dataclass(frozen=True, slots=True)
class PoolsideState(ToolState):
    mode: int = OPEN
    held: str = ""
    """OPEN: whitespace or a marker's beginning; PENDING: the text from the first
    ``<tool_call>``; CALLED: a call being read, or a marker's beginning."""
    space: str = ""
    """Whitespace alone before the first ``<tool_call>``."""
    spoke: bool = False
    calls: int = 0
    skip: bool = False
    """CALLED: the call being read is past the bound and dropped to its ``</tool_call>``."""
    size: int = field(default=-1, compare=False, repr=False)
    """``held``'s size in the state (``utf8_size``), -1 where not known: carried so that a
    chunk measures only its own text against ``MAX_HELD``. Not encoded (the decoder knows it
    from the bytes it read)."""


@functools.cache
def _patterns(call: str, end_call: str, key: str, end_key: str, value: str, end_value: str,
              angled: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """vLLM's ``func_detail_regex`` and ``func_arg_regex`` on the markers as spelled; a name
    holds no ``<``, so neither the stand-in of a marker that begins with one (``angled``)."""
    c, ec, k, ek, v, ev = (re.escape(m) for m in (call, end_call, key, end_key, value,
                                                  end_value))
    return (re.compile(rf"{c}\s*([^\n<{re.escape(angled)}]+?)\s*\n?\s*({k}.*?)?{ec}",
                       re.DOTALL),
            re.compile(rf"{k}(.*?){ek}\s*{v}(.*?){ev}", re.DOTALL))


class UnwritableError(ValueError):
    """A value read as a Python literal JSON cannot write (a set, bytes): vLLM's whole answer
    is then content."""


def _literal(text: str) -> Any:
    """vLLM's ``_deserialize``: JSON, else a Python literal (``UnwritableError`` when JSON
    cannot write it), else the text."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        import ast  # noqa: PLC0415
        import warnings  # noqa: PLC0415
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            parsed = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text
    try:
        json.dumps(parsed, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        raise UnwritableError(text) from None
    return parsed


def _string_typed(tools: Any, name: str, key: str) -> bool:
    """vLLM's ``_is_string_type``: the first tool so named has ``type`` "string" for it."""
    index = tool_index(tools, name)
    if index < 0:
        return False
    parameters = tools[index]["function"].get("parameters")
    if not isinstance(parameters, dict):
        return False
    properties = parameters.get("properties", {})
    spec = properties.get(key, {}) if isinstance(properties, dict) else {}
    return isinstance(spec, dict) and spec.get("type") == "string"


def read_call(text: str, context: ToolContext) -> tuple[str, str] | None:
    """One ``<tool_call>…</tool_call>`` as vLLM reads it: name and JSON arguments, or None
    (``UnwritableError``: a value JSON cannot write)."""
    sp = context.spelled
    angled = "".join(sorted(spelled for marker, spelled in (context.spell or {}).items()
                            if marker.startswith("<") and spelled != marker))
    detail, pair = _patterns(sp(CALL), sp(END_CALL), sp(KEY), sp(END_KEY), sp(VALUE),
                             sp(END_VALUE), angled)
    found = detail.search(text)
    if found is None:
        return None
    name, args = found.group(1).strip(), found.group(2)
    values: dict[str, Any] = {}
    for raw_key, value in pair.findall(args) if args else ():
        key = raw_key.strip()
        values[key] = value if _string_typed(context.tools, name, key) else _literal(
            value.strip())
    return name, json.dumps(values, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class HeldCalls:
    """What a format whose calls are held whole gives the machine (``poolside_v1``'s; also
    ``minicpm5``'s, ``formats/minicpm5.py``)."""

    call: str
    end_call: str
    read: Callable[[str, ToolContext], tuple[str, str] | None] | None
    """One whole call's text → (name, JSON arguments), or None (not a call);
    ``UnwritableError``: the whole output is content. None: ``read_block`` reads."""
    normalize: Callable[[str, str], str] | None = None
    """Rewrites the output before it is read: ``(held, text)`` → the two joined, ``held``
    already rewritten (a rewrite may begin in its last characters)."""
    hold: tuple[str, ...] = ()
    """Texts ``normalize`` rewrites: held at the end of a chunk of content."""
    forced: Feed[PoolsideState] | None = None
    """Reads the output instead under a forced ``tool_choice`` ("required" or named: vLLM's
    JSON path); None: the calls are read as under "auto"."""
    read_block: Callable[[str, ToolContext], list[tuple[str, str]]] | None = None
    """Instead of ``read``: the text from ``call`` to its ``end_call`` holds a block of calls
    (``dots``), read as their list (empty: no call)."""
    strip_before: bool = False
    """The whitespace ending the content before the first call is held and dropped with the
    calls (vLLM strips that content: ``dots``)."""

    def calls(self, text: str, context: ToolContext) -> list[tuple[str, str]]:
        if self.read_block is not None:
            return self.read_block(text, context)
        assert self.read is not None
        one = self.read(text, context)
        return [] if one is None else [one]


def held_feed(spec: HeldCalls, state: PoolsideState, text: str, final: bool,
              context: ToolContext) -> tuple[str, list[ToolCallDelta], PoolsideState]:
    """The machine: ``spec``'s calls held whole, content as the module docstring says."""
    if spec.forced is not None and (context.forced_name or context.required):
        return spec.forced(state, text, final, context)
    start, end = context.spelled(spec.call), context.spelled(spec.end_call)
    mode, space, spoke, count, skip = state.mode, state.space, state.spoke, state.calls, \
        state.skip
    buf = state.held + text if spec.normalize is None else spec.normalize(state.held, text)
    if mode == OPEN and spec.strip_before:  # the whitespace held comes before the held prefix
        buf, space = space + buf, ""
    # the size in the state of ``sized`` (a text is immutable: while ``buf is sized`` it is
    # buf's), so a chunk measures its own text only, not the whole held call
    sized, size = (buf, state.size + utf8_size(text)) if (
        state.size >= 0 and spec.normalize is None and buf is not text
        and not (mode == OPEN and spec.strip_before)) else ("", 0)

    def size_of(buf: str) -> int:
        nonlocal sized, size
        if buf is not sized:
            sized, size = buf, utf8_size(buf)
        return size
    # where the next call may begin (PENDING holds the calls already skipped before it)
    at = _skipped(state.held, start, end) if mode == PENDING else 0
    out: list[str] = []
    calls: list[ToolCallDelta] = []
    while True:
        if mode == TEXT:
            hold = 0 if final else pending_prefix(buf, spec.hold)
            out.append(buf[:len(buf) - hold])
            buf = buf[len(buf) - hold:]
            break
        if mode == OPEN:
            found = buf.find(start)
            if found == -1 and spec.strip_before:
                hold = 0 if final else pending_prefix(buf, (start, *spec.hold))
                piece, buf = buf[:len(buf) - hold], buf[len(buf) - hold:]
                if not final:
                    piece, space = split_space(piece, MAX_LEADING_SPACE)
                out.append(piece)
                spoke = spoke or bool(piece)
                break
            if found == -1:
                piece, buf, spoke = leading_text(buf, (start, *spec.hold), final, spoke, False)
                out.append(piece)
                break
            before = buf[:found]
            if spec.strip_before:
                body, space = split_space(before, MAX_LEADING_SPACE)
                out.append(body)
                spoke = spoke or bool(body)
            elif leads_content(before, spoke):
                out.append(before)
                spoke = True
            else:
                space = before
            mode, buf, at = PENDING, buf[found:], 0
            continue
        if skip:  # CALLED: a call past the bound, dropped to its end
            closed = buf.find(end)
            if closed == -1:
                buf = "" if final else buf[len(buf) - pending_prefix(buf, (end,)):]
                break
            buf, skip = buf[closed + len(end):], False
            continue
        opened = buf.find(start, at)
        closed = -1 if opened == -1 else buf.find(end, opened + len(start))
        if closed == -1:  # no complete call ahead: hold, or settle
            if mode == CALLED:
                buf = buf[opened:] if opened != -1 else buf[len(buf) - (
                    0 if final else pending_prefix(buf, (start,))):]
                if final:
                    buf = ""
                elif size_of(buf) > MAX_HELD:
                    buf, skip = "", True
                break
            if final or size_of(buf) > MAX_HELD:
                out.append(space + buf)
                mode, buf, space, spoke = TEXT, "", "", True
                continue
            break
        stop = closed + len(end)
        if utf8_size(buf[:stop] if mode == PENDING else buf[opened:stop]) > MAX_HELD:
            if mode == PENDING:
                out.append(space + buf)
                mode, buf, space, spoke = TEXT, "", "", True
            else:
                buf, at = buf[stop:], 0
            continue
        try:
            read = spec.calls(buf[opened:stop], context)
        except UnwritableError:
            if mode == PENDING:  # vLLM: the whole output is content
                out.append(space + buf)
                mode, buf, space, spoke = TEXT, "", "", True
                continue
            read = []  # after a returned call: dropped (README compatibility)
        if not read:
            at = stop
            continue
        for name, arguments in read:
            calls.append(ToolCallDelta(count, name, arguments))
            count += 1
        mode, buf, at, space = CALLED, buf[stop:], 0, ""
    return "".join(out), calls, type(state)(mode, buf, space, spoke, count, skip,
                                            size=size if buf is sized else -1)


def _skipped(held: str, start: str, end: str) -> int:
    """Where reading resumes in held PENDING text: after its complete (skipped) calls."""
    at = 0
    while True:
        opened = held.find(start, at)
        closed = -1 if opened == -1 else held.find(end, opened + len(start))
        if closed == -1:
            return at
        at = closed + len(end)


def _encode(state: PoolsideState, w: Writer) -> None:
    w.uint(state.mode)
    w.text(state.held)
    w.text(state.space)
    w.uint(int(state.spoke) | int(state.skip) << 1)
    w.uint(state.calls)


def _decode(r: Reader, state: type[PoolsideState] = PoolsideState) -> PoolsideState:
    mode, (held, size), space, bits, calls = (r.uint(), r.sized_text(), r.text(), r.uint(),
                                              r.uint())
    if mode > TEXT or bits > 3:
        raise ValueError("not a held-calls state")
    return state(mode, held, space, bool(bits & 1), calls, bool(bits & 2), size=size)


def held_format(name: str, spec: HeldCalls, state: type[PoolsideState]
                ) -> ToolFormat[PoolsideState]:
    """A format read by this machine with ``spec``'s data, its states of type ``state`` (a
    ``PoolsideState`` of its own)."""
    return ToolFormat(name, state, state, functools.partial(held_feed, spec), _encode,
                      functools.partial(_decode, state=state))


POOLSIDE = HeldCalls(CALL, END_CALL, read_call)
FORMAT: ToolFormat[PoolsideState] = held_format("poolside_v1", POOLSIDE, PoolsideState)

# dots: vLLM 0.33's DotsToolParser (vllm/tool_parsers/dots_tool_parser.py)

DOTS_CALL, DOTS_END_CALL = "<dots_function_call>", "</dots_function_call>"
_DOTS_INVOKE = re.compile(r"<invoke\s+name\s*=\s*(?P<name>[^>]+)>(?P<body>.*?)</invoke>",
                          re.DOTALL)
_DOTS_PARAMETER = re.compile(
    r"<parameter\s+name\s*=\s*(?P<name>[^>]+)>(?P<value>.*?)</parameter>", re.DOTALL)
_MAX_REF_DEPTH = 10


def _unquoted(value: str) -> str:
    """vLLM's ``_extract_name``: stripped, one pair of matching quotes removed."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in {'"', "'"}:
        return value[1:-1]
    return value


def _schema_type(schema: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    """vLLM's ``_resolve_param_type``: ``type``, else through a ``#/$defs/`` ``$ref``, else the
    first alternative of ``anyOf``/``oneOf``/``allOf`` (not ``{"type": "null"}``) that has one;
    None when none does."""
    if not isinstance(schema, dict) or depth > _MAX_REF_DEPTH:
        return None
    if "type" in schema:
        return schema["type"]
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _schema_type(defs.get(ref.rsplit("/", 1)[-1]), defs, depth + 1)
    for keyword in ("anyOf", "oneOf", "allOf"):
        alternatives = schema.get(keyword)
        if not isinstance(alternatives, list):
            continue
        for alternative in alternatives:
            if isinstance(alternative, dict) and alternative.get("type") == "null":
                continue
            resolved = _schema_type(alternative, defs, depth + 1)
            if resolved is not None:
                return resolved
    return None


def _typed(value: str, kind: Any) -> Any:
    """vLLM's ``_convert_param_value`` (``value`` stripped)."""
    if value.lower() == "null":
        return None
    if isinstance(kind, list):
        kind = next((item for item in kind if item != "null"), "string")
    kind = (kind if isinstance(kind, str) else str(kind)).lower()
    if kind in {"string", "str", "text"}:
        return value
    if kind in {"integer", "int"}:
        try:
            return int(value)
        except ValueError:
            return value
    if kind in {"number", "float"}:
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() else number
    if kind in {"boolean", "bool"}:
        return value.lower() in {"true", "1"}
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return value


def _dots_schema(tools: Any, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first tool so named: its parameters' ``properties`` and ``$defs``."""
    index = tool_index(tools, name)
    parameters = tools[index]["function"].get("parameters") if index >= 0 else None
    if not isinstance(parameters, dict):
        return {}, {}
    properties, defs = parameters.get("properties", {}), parameters.get("$defs", {})
    return (properties if isinstance(properties, dict) else {},
            defs if isinstance(defs, dict) else {})


def _dots_invoke(name: str, body: str, tools: Any) -> dict[str, Any]:
    properties, defs = _dots_schema(tools, name)
    arguments: dict[str, Any] = {}
    for found in _DOTS_PARAMETER.finditer(body):
        key = _unquoted(found.group("name"))
        kind = (_schema_type(properties[key], defs) or "string") if key in properties \
            else "string"
        arguments[key] = _typed(found.group("value").strip(), kind)
    return arguments


def read_dots_block(text: str, context: ToolContext) -> list[tuple[str, str]]:
    """One ``<dots_function_call>…</dots_function_call>`` as vLLM reads it: every
    ``<invoke>`` whose name is a tool's, or one JSON object naming a tool with object
    ``arguments`` (or ``parameters``; none or empty: ``{}``)."""
    start, end = context.spelled(DOTS_CALL), context.spelled(DOTS_END_CALL)
    inner = text[len(start):len(text) - len(end)]
    for marker, spelled in (context.spell or {}).items():
        if spelled != marker and spelled in inner:
            inner = inner.replace(spelled, marker)
    inner = inner.strip()
    known = {tool["function"].get("name") for tool in context.tools or ()
             if isinstance(tool, dict) and isinstance(tool.get("function"), dict)}
    calls: list[tuple[str, str]] = []
    if inner.startswith("<invoke"):
        for found in _DOTS_INVOKE.finditer(inner):
            name = _unquoted(found.group("name"))
            if name in known:
                arguments = _dots_invoke(name, found.group("body"), context.tools)
                calls.append((name, json.dumps(arguments, ensure_ascii=False)))
        return calls
    try:
        parsed = json.loads(inner)
    except (ValueError, RecursionError):
        return calls
    if not isinstance(parsed, dict):
        return calls
    called = parsed.get("name")
    arguments = parsed.get("arguments", parsed.get("parameters", {})) or {}
    if isinstance(called, str) and called in known and isinstance(arguments, dict):
        calls.append((called, json.dumps(arguments, ensure_ascii=False)))
    return calls


@dataclass(frozen=True, slots=True)
class DotsState(PoolsideState):
    """dots' state: poolside_v1's fields; ``space`` also holds the whitespace ending the
    content said before the first block (dropped when a call reads)."""


DOTS = HeldCalls(DOTS_CALL, DOTS_END_CALL, None, read_block=read_dots_block, strip_before=True)
DOTS_FORMAT: ToolFormat[PoolsideState] = held_format("dots", DOTS, DotsState)
