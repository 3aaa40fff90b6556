"""MiniMax's formats: ``minimax_m2`` on the parser engine, as vLLM 0.33 configures it
(``vllm/parser/minimax_m2.py``)::

    <think>…</think>                    (the prompt opens <think>: only </think> is generated)
    <minimax:tool_call>
    <invoke name="NAME">                (double, single or no quotes)
    <parameter name="KEY">VALUE</parameter>
    </invoke>
    </minimax:tool_call>

The output starts in reasoning (the prompt ends ``<think>\\n``); a generated ``<think>`` is
absorbed, ``</think>`` and ``<minimax:tool_call>`` end it, a later ``</think>`` is dropped. An
``<invoke>`` without the wrapper is a call; a name that is not one of the request's tools
drops the call; values are verbatim (a value also ends at the next ``<parameter name=``) and
typed by the tool's schema (``engine.DsmlArgs`` with M2's tag pattern). Content is stripped
when calls are returned, text after them dropped (see ``engine``).

With the ``minimax_m2_append_think`` reasoning parser (``reasoning.py``: no reasoning, the
content is ``"<think>" + output``) the tool parser reads that content: a ``</think>`` followed
by a returned call is dropped (``EngineConfig.held_end``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from enum import IntEnum
from typing import Any, TypeAlias

from derender.core.parsers.engine import (
    ARGS,
    BETWEEN,
    CONTENT,
    END,
    NAME,
    NAMED,
    OPENED,
    PREAMBLE,
    REASONING,
    START,
    DsmlArgs,
    EngineConfig,
    _Run,
    make_format,
)
from derender.core.parsers.schema import coerce, fix_object, schema_mask, schema_types
from derender.core.state.codec import utf8_prefix, utf8_size

THINK_START, THINK_END = "<think>", "</think>"
M2_TOOL_START, M2_TOOL_END = "<minimax:tool_call>", "</minimax:tool_call>"

_M2_HEAD = re.compile(r"""\s*(?:"([^"]*)"|'([^']*)'|([^>\s]+))\s*>""", re.DOTALL)
"""A parameter tag after ``<parameter name=``: vLLM's ``_PARAM_RE`` name in double, single
or no quotes (the first group that matched is the name, stripped)."""


def _m2_name(text: str) -> str:
    """The name between ``<invoke name=`` and ``>``: stripped, its quotes removed (vLLM's
    ``NAME_END_DQ``/``NAME_END_SQ`` terminals)."""
    name = text.strip()
    for quote in ('"', "'"):
        if len(name) >= 2 and name[0] == quote and name[-1] == quote:
            return name[1:-1].strip()
    return name


def _m2_config() -> EngineConfig:
    terminals = {
        "THINK_START": (THINK_START,), "THINK_END": (THINK_END,),
        "TOOL_START": (M2_TOOL_START,), "TOOL_END": (M2_TOOL_END,),
        "INVOKE_PREFIX": ("<invoke name=",), "NAME_END": (">",),
        "INVOKE_END": ("</invoke>",),
    }
    calls = {
        (CONTENT, "TOOL_START"): (PREAMBLE, 0),
        (CONTENT, "INVOKE_PREFIX"): (NAME, START),
        (PREAMBLE, "INVOKE_PREFIX"): (NAME, START),
        (BETWEEN, "INVOKE_PREFIX"): (NAME, START),
        (NAME, "NAME_END"): (ARGS, NAMED),
        (ARGS, "INVOKE_END"): (BETWEEN, END),
        (PREAMBLE, "TOOL_END"): (CONTENT, 0),
        (BETWEEN, "TOOL_END"): (CONTENT, 0),
        (CONTENT, "TOOL_END"): (CONTENT, 0),
    }
    think = {
        (REASONING, "THINK_START"): (REASONING, 0),  # "some versions write both"
        (REASONING, "THINK_END"): (CONTENT, 0),
        (CONTENT, "THINK_END"): (CONTENT, 0),  # a later </think> is dropped
        (REASONING, "TOOL_START"): (PREAMBLE, 0),  # a block ends reasoning
    }
    return EngineConfig("minimax_m2", terminals, calls, think,
                        DsmlArgs("<parameter name=", "</parameter>", _M2_HEAD, verbatim=True,
                                 lookahead=False),
                        strip_content=True, validate_names=True, clean_name=_m2_name,
                        held_end="THINK_END")


M2_CONFIG = _m2_config()
M2 = make_format(M2_CONFIG)


def m2_thinking(kwargs: dict[str, object]) -> bool:
    """``minimax_m2``: always thinking (the config starts in REASONING; no switch)."""
    return True


# MiniMax M3

M3_NS = "]<]minimax[>["
"""The namespace prefixing every M3 tag: one added token (200058), a marker
(``registry.MARKUP``)."""
MM_THINK, MM_END_THINK = "<mm:think>", "</mm:think>"
MIXED_TEXT_FIELD = "$text"
MAX_ELEMENT_DEPTH = 128
MAX_CALL = 4096
"""Bytes (UTF-8, as the stream state holds it) of a call's parameter text held until its
``</invoke>`` (the arguments are emitted once, whole). Past it the call's arguments are the
parameters complete within its first ``MAX_CALL`` bytes, and the rest of the call is skipped
(README compatibility). Bounded in bytes, not characters: 4,096 CJK characters made a state
larger than ``DERENDER_MAX_STATE_CHARS`` (issue 22)."""

_Element: TypeAlias = "str | list[tuple[str, _Element]]"
"""An element: its text, or its ``(name, value)`` children in order."""


def _parse_element(text: str, pos: int, depth: int, ns: str
                   ) -> tuple[str, _Element, int] | None:
    """vLLM's ``_parse_element``: the element at ``pos``; None if malformed or unterminated."""
    if depth > MAX_ELEMENT_DEPTH:
        return None
    open_, close = ns + "<", ns + "</"
    name_start = pos + len(open_)
    name_end = text.find(">", name_start)
    if name_end <= name_start:
        return None
    name = text[name_start:name_end]
    if name.startswith("/") or not name.strip():
        return None
    close_tag = f"{close}{name}>"
    pos = name_end + 1
    text_parts: list[str] = []
    children: list[tuple[str, _Element]] = []
    while True:
        marker = text.find(ns, pos)
        if marker < 0:
            return None
        text_parts.append(text[pos:marker])
        if text.startswith(close_tag, marker):
            pos = marker + len(close_tag)
            break
        if not text.startswith(open_, marker):
            return None
        child = _parse_element(text, marker, depth + 1, ns)
        if child is None:
            return None
        child_name, child_value, pos = child
        children.append((child_name, child_value))
    body_text = "".join(text_parts)
    if not children:
        return name, body_text, pos
    if body_text.strip():  # mixed text under a field no child uses
        field = MIXED_TEXT_FIELD
        while any(child_name == field for child_name, _ in children):
            field = "$" + field
        children.append((field, body_text))
    return name, children, pos


def m3_params(raw: str, ns: str) -> list[tuple[str, _Element]]:
    """vLLM's ``_parse_invoke_params``: the parameter elements of an ``<invoke>`` body, up to
    the first malformed or unterminated one."""
    params: list[tuple[str, _Element]] = []
    pos = 0
    while True:
        while pos < len(raw) and raw[pos].isspace():
            pos += 1
        if not raw.startswith(ns + "<", pos):
            return params
        element = _parse_element(raw, pos, 1, ns)
        if element is None:
            return params
        name, value, pos = element
        params.append((name, value))


def _container(schema: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """vLLM's ``_container_schema``: the first ``array``/``object`` alternative."""
    types = schema.get("type")
    for kind in ("array", "object"):
        if types == kind or (isinstance(types, list) and kind in types):
            return kind, schema
    if types is None:
        if "items" in schema:
            return "array", schema
        if "properties" in schema or "additionalProperties" in schema:
            return "object", schema
    for field in ("anyOf", "oneOf"):
        for choice in schema.get(field) or ():
            if isinstance(choice, dict) and (found := _container(choice)):
                return found
    return None


def _convert(value: _Element, schema: Any) -> Any:
    """vLLM's ``_convert_element``."""
    if not isinstance(schema, dict):
        schema = None
    container = _container(schema) if schema is not None else None
    if isinstance(value, str):
        if schema is None:
            return value
        # the template renders an empty list or dict as an empty element
        if container is not None and "string" not in schema_types(schema) \
                and not value.strip():
            return [] if container[0] == "array" else {}
        return coerce(value, schema_mask(schema))
    if container is not None and container[0] == "array":
        items = container[1].get("items")
        return [_convert(child, items) for _, child in value]
    return convert_object(value, container[1] if container is not None else None)


def convert_object(elements: list[tuple[str, _Element]], schema: Mapping[str, Any] | None
                   ) -> dict[str, Any]:
    """vLLM's ``_convert_object``: named elements → an object; a repeated name a list."""
    properties = (schema or {}).get("properties") or {}
    additional = (schema or {}).get("additionalProperties")
    result: dict[str, Any] = {}
    repeated: set[str] = set()
    for name, element in elements:
        converted = _convert(element, properties.get(name, additional))
        if name not in result:
            result[name] = converted
        elif name in repeated:
            result[name].append(converted)
        else:
            result[name] = [result[name], converted]
            repeated.add(name)
    return result


class M3Sub(IntEnum):
    """``M3Args``' sub-phases: the parameters are held; past ``MAX_CALL``, skipped."""

    HOLD = 0
    SKIP = 1


class M3Args:
    """M3's parameters: nested elements named after the arguments (``m3_params``), held whole
    until the call ends and emitted at once (vLLM's ``stream_arg_deltas=False``): converted by
    ``convert_object`` with the tool's properties, then typed by ``schema.fix_object`` (vLLM's
    ``_fix_arg_types``). A call cut off keeps its complete parameters (the message's rule)."""

    HOLD, SKIP = M3Sub
    subs = len(M3Sub)
    max_acc = MAX_CALL

    def terminals(self, spell: Callable[[str], str]) -> tuple[str, ...]:
        return (spell(M3_NS),)

    def enter(self, run: _Run, terminal: str) -> None:
        run.sub, run.acc = self.HOLD, ""

    def read(self, run: _Run, region: str, ended: bool) -> int:
        if run.sub == self.SKIP:
            return 0
        run.acc += region
        if utf8_size(run.acc[:MAX_CALL + 1]) > MAX_CALL:  # bounded: the parameters so far
            run.acc = utf8_prefix(run.acc, MAX_CALL)
            self._emit(run)
            run.sub = self.SKIP
        return 0

    def close(self, run: _Run) -> None:
        if run.sub == self.HOLD:
            self._emit(run)
        run.acc = ""

    @staticmethod
    def _emit(run: _Run) -> None:
        table = run.table
        assert table is not None
        properties = run.properties()
        arguments = convert_object(m3_params(run.acc, table.args[0]),
                                   {"properties": properties})
        if properties:
            arguments = fix_object(arguments, properties)
        run.acc = ""
        if arguments:
            run.emit(json.dumps(arguments, ensure_ascii=False)[:-1])
            run.set(OPENED)


def _m3_config() -> EngineConfig:
    ns = M3_NS
    terminals = {
        "TOOL_START": (ns + "<tool_call>",), "TOOL_END": (ns + "</tool_call>",),
        # on a tie the first spelling wins: the longest
        "INVOKE_PREFIX": (ns + '<invoke name="', ns + "<invoke name='", ns + "<invoke name="),
        "NAME_END": ('">', "'>", ">"),
        "INVOKE_END": (ns + "</invoke>",),
    }
    calls = {
        (CONTENT, "TOOL_START"): (PREAMBLE, 0),
        (PREAMBLE, "INVOKE_PREFIX"): (NAME, START),
        (BETWEEN, "INVOKE_PREFIX"): (NAME, START),
        (NAME, "NAME_END"): (ARGS, NAMED),
        (ARGS, "INVOKE_END"): (BETWEEN, END),
        (PREAMBLE, "TOOL_END"): (BETWEEN, 0),  # the block ends the message
        (BETWEEN, "TOOL_END"): (BETWEEN, 0),
    }
    return EngineConfig("minimax_m3", terminals, calls, {}, M3Args())


M3_CONFIG = _m3_config()
M3 = make_format(M3_CONFIG)


def m3_thinking(kwargs: Mapping[str, object]) -> bool:
    """``minimax_m3``'s reasoning parser: the output starts inside ``<mm:think>`` only when
    ``thinking_mode`` is "enabled" (the prompt opens it) [825, 827]."""
    return kwargs.get("thinking_mode") == "enabled"
