"""Tencent Hy3 on the parser engine: ``hy_v3``, vLLM 0.33's ``HYV3ToolParser``
(``vllm/tool_parsers/hy_v3_tool_parser.py``) read with GLM's argument grammar::

    <tool_calls><tool_call>NAME<tool_sep><arg_key>K</arg_key><arg_value>V</arg_value>…
    </tool_call>…</tool_calls>

Calls are read only after ``<tool_calls>`` (without it the output is content) and only when
calls may be returned (``tools`` given, ``tool_choice`` not "none"; else the markup stays in
the content); a call is ``<tool_call>`` NAME (stripped) ``<tool_sep>`` and the GLM parameters,
ended by ``</tool_call>`` or the output's end (a call cut off in its name, or a name ended by
``</tool_call>``, is none). Names are not checked against the tools; keys are kept as written
(the message does not strip them); values are typed by ``hy3_value`` (vLLM's
``HYV3ToolParser._parse_value``). The content is the text before ``<tool_calls>`` as written
(whitespace alone is none), the text after the calls dropped. Under a forced ``tool_choice``
vLLM's JSON path reads the output (``primitives.forced_call``).

Reasoning (``hy_v3`` reasoning parser, ``reasoning.FORMATS``): ``deepseek_r1``'s rules when
``reasoning_effort`` (the template kwargs', else the request's) is set and not "no_think";
else none (``thinking``).

Tencent Hy4 (``hy_v4``, vLLM 0.33's ``HYV4ToolParser`` in strict mode) writes the same calls
without ``<tool_sep>`` (the name ends at the first ``<arg_key>`` or at ``</tool_call>``), every
marker carrying a per-checkpoint suffix (``HY4_SUFFIX``), and reads them strictly: the first
``<tool_calls>`` … ``</tool_calls>`` block is read whole, and any fault (no ``</tool_calls>``, an
unclosed or nested call, an empty name, unbalanced argument tags, text between or around the
``<arg_key>K</arg_key><arg_value>V</arg_value>`` pairs, a value JSON cannot write, no call)
makes the whole output content. So its machine (``HY4``) holds the block until
``</tool_calls>`` (at most ``MAX_BLOCK`` bytes: a longer block is content) and then returns all
its calls at once, or the block as content. Values are typed as Hy3's (``hy3_value``).
Reasoning (``hy_v4``): ``deepseek_r1``'s rules on the suffixed think markers unless
``reasoning_effort`` is "no_think" (the default is "high": on; ``thinking4``).
"""

from __future__ import annotations

import ast
import functools
import json
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from derender.core.decoding.markers import pending_prefix
from derender.core.parsers.engine import (
    ARGS,
    BETWEEN,
    CONTENT,
    END,
    NAME,
    NAMED,
    START,
    EngineConfig,
    GlmArgs,
    make_format,
)
from derender.core.parsers.primitives import (
    MAX_LEADING_SPACE,
    leading_text,
    leads_content,
    split_space,
)
from derender.core.parsers.registry import REQUEST_EFFORT
from derender.core.parsers.schema import tool_properties
from derender.core.parsers.tools import Feed, ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer, utf8_size

_ALIASES = {"str": "string", "text": "string", "varchar": "string", "char": "string",
            "enum": "string", "bool": "boolean", "binary": "boolean", "int": "integer",
            "float": "number", "double": "number", "list": "array", "dict": "object",
            "map": "object"}
_INTEGER = ("int", "uint", "long", "short", "unsigned")
_NUMBER = ("num", "float")


def _normal(raw: Any) -> Any:
    exact = _ALIASES.get(raw) if isinstance(raw, str) else None
    if exact is not None:
        return exact
    lower = raw.lower() if isinstance(raw, str) else ""
    if lower.startswith(_INTEGER):
        return "integer"
    if lower.startswith(_NUMBER):
        return "number"
    return raw


def _types(schema: Any) -> set[Any]:
    """vLLM's ``_get_types``: the schema's type names, normalized, less "null"."""
    if not isinstance(schema, Mapping):
        schema = {}
    if "type" in schema:
        kind = schema["type"]
        options: list[Any] = [{"type": t} for t in kind] if isinstance(kind, list) else [schema]
    elif "anyOf" in schema:
        options = list(schema["anyOf"])
    elif "oneOf" in schema:
        options = list(schema["oneOf"])
    else:
        options = [{"type": "string"}]
    names = set()
    for option in options:
        kind = option.get("type", "string") if isinstance(option, Mapping) else "string"
        names.add(_normal(kind) if isinstance(kind, str) else json.dumps(kind))
    return names - {"null"}


class UnwritableError(ValueError):
    """A value read as a Python literal JSON cannot write (Hy4: the output is then content)."""


def _literal(value: str, strict: bool = False) -> Any:
    """vLLM's ``_deserialize``: JSON, else a Python literal (only one JSON can write: a set,
    bytes or a complex number make vLLM's whole answer fail; here they stay the text, or with
    ``strict`` raise ``UnwritableError``), else the text."""
    try:
        return json.loads(value)
    except ValueError:
        pass
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            parsed = ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return value
    try:
        json.dumps(parsed)
    except (ValueError, TypeError, RecursionError):
        if strict:
            raise UnwritableError(value) from None
        return value
    return parsed


def hy3_value(value: str, schema: Any, strict: bool = False) -> Any:
    """vLLM's ``HYV3ToolParser._parse_value`` (and Hy4's ``_parse_value``): boolean, integer,
    number (a float when the text has ``.``/``e``/``E``), JSON for other types, the text for
    strings, else ``_literal``; a parameter without a schema is a string."""
    types = _types(schema)
    if "boolean" in types and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if "integer" in types:
        try:
            return int(value)
        except ValueError:
            pass
    if "number" in types:
        try:
            return float(value) if ("." in value or "e" in value or "E" in value) \
                else int(value)
        except ValueError:
            pass
    if types - {"string", "boolean", "integer", "number"}:
        try:
            return json.loads(value)
        except ValueError:
            pass
    if "string" in types:
        return value
    return _literal(value, strict)


def _config(name: str) -> EngineConfig:
    terminals = {
        "TOOLS_START": ("<tool_calls>",), "TOOL_START": ("<tool_call>",),
        "TOOL_SEP": ("<tool_sep>",), "TOOL_END": ("</tool_call>",),
    }
    calls = {
        (CONTENT, "TOOLS_START"): (BETWEEN, 0),
        (BETWEEN, "TOOL_START"): (NAME, START),
        (NAME, "TOOL_SEP"): (ARGS, NAMED),
        (NAME, "TOOL_END"): (BETWEEN, 0),
        (ARGS, "TOOL_END"): (BETWEEN, END),
    }
    return EngineConfig(name, terminals, calls, {}, GlmArgs(hy3_value, strip_keys=False,
                                                            at_key=False),
                        cut_name_calls=False, json_when_forced=True)


HY3_CONFIG = _config("hy_v3")
HY3 = make_format(HY3_CONFIG)


def thinking(kwargs: Mapping[str, object]) -> bool:
    """``HYV3ReasoningParser``: reasoning is read unless ``reasoning_effort`` (the template
    kwargs', else the request's) is unset or "no_think"."""
    effort = kwargs.get("reasoning_effort") or kwargs.get(REQUEST_EFFORT) or "no_think"
    return effort != "no_think"


# Tencent Hy4

HY4_SUFFIX = ":opensource"
"""The marker suffix served: vLLM reads each checkpoint's from its vocabulary; this is the one
of vLLM's own Hy4 tests and of ``hy4-standin`` (another suffix's markup is content: README
compatibility table)."""
(HY4_THINK, HY4_END_THINK, HY4_CALLS, HY4_END_CALLS, HY4_CALL, HY4_END_CALL, HY4_KEY,
 HY4_END_KEY, HY4_VALUE, HY4_END_VALUE) = (
    f"<{tag}{HY4_SUFFIX}>" for tag in ("think", "/think", "tool_calls", "/tool_calls",
                                       "tool_call", "/tool_call", "arg_key", "/arg_key",
                                       "arg_value", "/arg_value"))
MAX_BLOCK = 4096
"""Bytes (UTF-8, as the state holds them) of a call block held until its ``</tool_calls>``; a
longer block is content (README compatibility table)."""
MAX_BLOCK_SPACE = 256
"""``stripped`` formats: characters of whitespace held where the content may end (longer is
said)."""

HY4_OPEN, HY4_BLOCK, HY4_DONE, HY4_TEXT = range(4)
"""Before the block; in it (held); after the returned calls (dropped, or content with
``HeldBlock.keeps_after``); all content (the block was faulty, or, with
``HeldBlock.end_first``, its end came first)."""


@dataclass(frozen=True, slots=True)
class Hy4State(ToolState):
    mode: int = HY4_OPEN
    held: str = ""
    """HY4_OPEN: text that may be whitespace before the block or begin a marker; HY4_BLOCK: the
    block after ``<tool_calls>``."""
    space: str = ""
    """Whitespace alone before the block (dropped if its calls are returned)."""
    spoke: bool = False
    """Content other than whitespace was emitted."""
    form: int = 0
    """The request's form of the calls (``HeldBlock.read``'s ``form``), read from its template
    kwargs when the stream starts and carried: k2_horizon's ``tool_call_format``; 0 for a
    grammar of one form (its own state type encodes it)."""
    size: int = field(default=-1, compare=False, repr=False)
    """HY4_BLOCK: ``held``'s size in the state (``utf8_size``), so that a chunk measures only
    its own text against ``MAX_BLOCK``; -1 where not known (measured then). Not encoded: the
    decoder knows it from the bytes it read (``Reader.sized_text``)."""


H = TypeVar("H", bound=Hy4State)


@functools.cache
def _hy4_patterns(call: str, end_call: str, key: str, end_key: str, value: str,
                  end_value: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """vLLM's ``tool_call_regex`` and ``func_args_regex`` on the markers as spelled."""
    return (re.compile(f"{re.escape(call)}(.*?){re.escape(end_call)}", re.DOTALL),
            re.compile(f"{re.escape(key)}(.*?){re.escape(end_key)}{re.escape(value)}(.*?)"
                       f"{re.escape(end_value)}", re.DOTALL))


def hy4_calls(block: str, context: ToolContext) -> list[tuple[str, str]] | None:
    """vLLM's ``_extract_tool_calls_strict`` on the text between ``<tool_calls>`` and
    ``</tool_calls>``: each call's name and JSON arguments; None when it is faulty."""
    sp = context.spelled
    call, end_call, key, end_key, value, end_value = (
        sp(HY4_CALL), sp(HY4_END_CALL), sp(HY4_KEY), sp(HY4_END_KEY), sp(HY4_VALUE),
        sp(HY4_END_VALUE))
    call_re, args_re = _hy4_patterns(call, end_call, key, end_key, value, end_value)
    opened = block.count(call)
    if opened != block.count(end_call):
        return None
    bodies = call_re.findall(block)
    if opened != len(bodies) or not bodies:
        return None
    calls: list[tuple[str, str]] = []
    for body in bodies:
        at = body.find(key)
        name, args = (body.strip(), "") if at == -1 else (body[:at].strip(), body[at:].strip())
        if not name or args.count(key) != args.count(end_key) \
                or args.count(value) != args.count(end_value) \
                or args_re.sub("", args).strip():
            return None
        properties = tool_properties(context.tools, name)
        try:
            values = {k: hy3_value(v, properties.get(k, {}), strict=True)
                      for k, v in args_re.findall(args)}
            calls.append((name, json.dumps(values, ensure_ascii=False)))
        except (UnwritableError, ValueError, TypeError, RecursionError):
            return None
    return calls


@dataclass(frozen=True, slots=True)
class HeldBlock:
    """A format whose calls are one block held whole and read at its end (``hy_v4``; ``step3``,
    ``formats/step3.py``; ``k2_horizon``): what it differs in."""

    start: str
    end: str
    read: Callable[[str, ToolContext, int], list[tuple[str, str]] | None]
    """The block's text (between the markers as spelled), the context and the state's
    ``form`` → its calls, or None: no call (the whole output is content)."""
    end_first: bool = False
    """An end marker before the first start makes the whole output content (``hy_v4``)."""
    keeps_after: bool = False
    """The text after the block is content (else dropped), led by the whitespace before the
    block; content that is whitespace alone is dropped at the end (K2 Horizon's
    ``content_or_none`` and its stream's pending whitespace, ``formats/k2_horizon.py``)."""
    stripped: bool = False
    """The content is the text before the block and the text after it, the two joined and
    stripped (``step3``); else the text before as written (whitespace alone: none), the text
    after dropped."""
    forced: Feed[Any] | None = None
    """The machine under a forced ``tool_choice`` (vLLM's JSON path); None: this one."""


HY4_AFTER = HY4_TEXT + 1
"""``stripped`` formats: after the returned calls (content, stripped)."""


def _said(text: str, space: str, spoke: bool) -> tuple[str, str, bool]:
    """``stripped`` formats: what of ``space + text`` is said now, and the whitespace held,
    which may end the content (dropped if a returned call follows; leading whitespace is held
    until something else is said, up to ``MAX_LEADING_SPACE``; trailing, up to
    ``MAX_BLOCK_SPACE``)."""
    text = space + text
    if not spoke and not text.strip():
        return ("", text, False) if len(text) <= MAX_LEADING_SPACE else (text, "", True)
    said, held = split_space(text, MAX_BLOCK_SPACE)
    return said, held, True


def held_block_feed(spec: HeldBlock, state: H, text: str, final: bool, context: ToolContext
                    ) -> tuple[str, list[ToolCallDelta], H]:
    """Content and the calls of new text; ``final`` settles what was held back."""
    if spec.forced is not None and (context.forced_name is not None or context.required):
        forced: tuple[str, list[ToolCallDelta], H] = spec.forced(state, text, final, context)
        return forced
    start, end = context.spelled(spec.start), context.spelled(spec.end)
    mode, space, spoke = state.mode, state.space, state.spoke
    scan = max(0, len(state.held) - len(end) + 1) if mode == HY4_BLOCK else 0
    size = state.size + utf8_size(text) if mode == HY4_BLOCK and state.size >= 0 else -1
    buf = state.held + text
    out: list[str] = []
    calls: list[ToolCallDelta] = []
    keep = spec.keeps_after
    while buf or final:
        if mode == HY4_DONE:
            if keep:  # after the block: content, led by the whitespace held so far
                piece, buf, spoke = leading_text(space + buf, (), final, spoke, True)
                out.append(piece)
                space = ""
            else:
                buf = ""
            break
        if mode == HY4_TEXT:
            out.append(buf)
            buf = ""
            break
        if mode == HY4_AFTER:  # stripped: after the calls, the content's leading space dropped
            if not spoke:
                buf, space = buf.lstrip(), ""
            if buf:
                said, space, spoke = _said(buf, space, spoke)
                out.append(said)
            if final:
                space = ""
            buf = ""
            break
        if mode == HY4_OPEN:
            at = buf.find(start)
            if spec.end_first:
                ended = buf.find(end)
                if ended != -1 and (at == -1 or ended < at):  # vLLM's end before its start
                    mode, spoke = HY4_TEXT, True
                    continue
            if at == -1:
                if spec.stripped:
                    if final:
                        out.append(space + buf)
                        buf, space = "", ""
                        break
                    hold = pending_prefix(buf, (start,))
                    said, space, spoke = _said(buf[:len(buf) - hold], space, spoke)
                    out.append(said)
                    buf = buf[len(buf) - hold:]
                    break
                markers = (start, end) if spec.end_first else (start,)
                piece, buf, spoke = leading_text(buf, markers, final, spoke, keep)
                out.append(piece)
                break
            before = buf[:at]
            if spec.stripped:
                said, space, spoke = _said(before, space, spoke)
                out.append(said)
            elif leads_content(before, spoke):
                out.append(before)
                spoke = True
            else:
                space = before
            mode, buf, scan, size = HY4_BLOCK, buf[at + len(start):], 0, -1
            continue
        # HY4_BLOCK
        close = buf.find(end, scan)
        block = buf if close == -1 else buf[:close]
        if close == -1 and not final:
            if size < 0:  # entered in this chunk: what follows the start is this chunk's
                size = utf8_size(buf)
            held = len(buf) - pending_prefix(buf, (end,))
            if size - utf8_size(buf[held:]) <= MAX_BLOCK:
                break
        found = None if close == -1 or utf8_size(block) > MAX_BLOCK \
            else spec.read(block, context, state.form)
        if found is None:  # faulty, unclosed or too long: the whole output is content
            out.append(space + start + buf)
            mode, buf, space, spoke = HY4_TEXT, "", "", True
            continue
        calls = [ToolCallDelta(i, name, arguments) for i, (name, arguments) in enumerate(found)]
        if spec.stripped:
            mode, buf = HY4_AFTER, buf[close + len(end):]
            continue
        mode, buf = HY4_DONE, buf[close + len(end):]
        if not keep:
            space = ""
    if final and mode == HY4_OPEN and space:
        out.insert(0, space)
        space = ""
    if mode != HY4_BLOCK:
        size = -1
    elif size < 0:  # the block began with nothing after its start (nothing to measure)
        size = utf8_size(buf)
    return "".join(out), calls, replace(state, mode=mode, held=buf, space=space, spoke=spoke,
                                        size=size)


def _hy4_read(block: str, context: ToolContext, form: int) -> list[tuple[str, str]] | None:
    del form  # one form
    return hy4_calls(block, context)


HY4_BLOCK_SPEC = HeldBlock(HY4_CALLS, HY4_END_CALLS, _hy4_read, end_first=True)


def _hy4_feed(state: Hy4State, text: str, final: bool, context: ToolContext
              ) -> tuple[str, list[ToolCallDelta], Hy4State]:
    return held_block_feed(HY4_BLOCK_SPEC, state, text, final, context)


def _hy4_encode(state: Hy4State, w: Writer) -> None:
    w.uint(state.mode)
    w.text(state.held)
    w.text(state.space)
    w.uint(int(state.spoke))


def _hy4_decode(r: Reader) -> Hy4State:
    mode, (held, size), space, spoke = r.uint(), r.sized_text(), r.text(), r.uint()
    if mode > HY4_TEXT or spoke > 1:
        raise ValueError("not a hy_v4 state")
    return Hy4State(mode, held, space, bool(spoke), size=size)


HY4: ToolFormat[Hy4State] = ToolFormat("hy_v4", Hy4State, Hy4State, _hy4_feed, _hy4_encode,
                                       _hy4_decode)


def thinking4(kwargs: Mapping[str, object]) -> bool:
    """``HYV4ReasoningParser``: reasoning is read unless ``reasoning_effort`` (the template
    kwargs', else the request's, else "high") is "no_think"."""
    effort = kwargs.get("reasoning_effort") or kwargs.get(REQUEST_EFFORT) or "high"
    return effort != "no_think"
