"""MiniCPM5: ``minicpm5``, vLLM 0.33's ``MiniCPM5XMLToolParser``
(``vllm/tool_parsers/minicpm5xml_tool_parser.py``), XML calls read whole::

    <function name="NAME"><param name="KEY">VALUE</param>…</function>

The output is first normalized as vLLM does: ``Ġ`` (U+0120) is a space, ``Ċ`` (U+010A) a newline,
``<functionname=`` and ``<paramname=`` get their space back (``normalize``). A call is
``<function`` … the next ``</function>`` (``<function.*?</function>``), read as XML with the
standard library's ElementTree (vLLM's reading without lxml, which its peer lacks) and, where
that fails or finds no name, by vLLM's regular expressions (``read_call``). A call is refused
(its text stays content when no call is read) when it has no name, a ``<param>`` without a
name, a key twice, an unreadable ``properties``/``arguments`` wrapper, a name that is not a
tool's (after vLLM's alias table, ``ALIASES``) or lacks a required parameter. Keys that are not
the tool's properties are dropped; a value is typed by its property's ``type``: "string" keeps
the text (an XML reading keeps it unstripped, with entities and CDATA decoded), any other is
read as JSON, else a Python literal, else kept as text.

Held as ``poolside_v1``'s calls are (``poolside.py``, the machine shared, these rules its data):
text before the first ``<function`` is content; from there the text is held until a call reads
(then only calls are read, other text dropped: vLLM's message has no content with calls) or
the output ends (then it is content as written); each call is held whole until
its ``</function>``, at most ``poolside.MAX_HELD`` bytes.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from typing import Any

from derender.core.parsers.formats.poolside import (
    HeldCalls,
    PoolsideState,
    UnwritableError,
    held_format,
)
from derender.core.parsers.formats.qwen3_coder import MAX_VALUE, _listed_calls
from derender.core.parsers.primitives import MAX_LEADING_SPACE, forced_call
from derender.core.parsers.tools import ToolCallDelta, ToolContext

CALL, END_CALL = "<function", "</function>"
_COLLAPSED = (("<functionname=", "<function name="), ("<paramname=", "<param name="))
_SPACES = str.maketrans({"\u0120": " ", "\u010a": "\n"})
_REACH = max(len(collapsed) for collapsed, _ in _COLLAPSED) - 1
"""Characters of held text a collapsed tag completed by new text may begin in."""

_NAME = re.compile(r"<function\s+name=['\"]([^'\"]+)['\"][^>]*>")
_PARAM = re.compile(r"<param\s+name=['\"]([^'\"]+)['\"]>([\s\S]*?)</param>", re.DOTALL)
_NAMELESS = re.compile(r"<param(?![^>]*\bname=)[^>]*>", re.DOTALL)
_CDATA, _END_CDATA = "<![CDATA[", "]]>"


def normalize(held: str, text: str) -> str:
    """vLLM's ``_normalize_model_output`` (its condition only skips work that changes nothing)
    on ``held + text``, ``held`` already normalized: only the new text and the end of
    ``held`` a collapsed tag may begin in are read (O(delta))."""
    if "\u0120" in text or "\u010a" in text:
        text = text.translate(_SPACES)
    cut = max(0, len(held) - _REACH)
    tail = held[cut:] + text
    if "name=" in tail:
        for collapsed, spaced in _COLLAPSED:
            tail = tail.replace(collapsed, spaced)
    return held[:cut] + tail


def _literal(text: str) -> tuple[Any, bool]:
    """vLLM's ``_parse_arguments``: JSON, else a Python literal, else the text (not read)."""
    try:
        try:
            return json.loads(text), True
        except json.JSONDecodeError:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SyntaxWarning)
                return ast.literal_eval(text), True
    except Exception:  # vLLM catches every exception here
        return text, False


class _Tools:
    """vLLM's ``_build_tool_maps``: the last tool so named wins."""

    __slots__ = ("allowed", "required", "schema")

    def __init__(self, tools: Any) -> None:
        self.schema: dict[str, dict[str, Any] | None] = {}
        self.allowed: dict[str, set[str]] = {}
        self.required: dict[str, set[str]] = {}
        for tool in tools:
            function = tool.get("function") if isinstance(tool, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(name, str) or not name:
                continue
            params = function.get("parameters") if isinstance(function, dict) else None
            self.schema[name] = params if isinstance(params, dict) else None
            params = params or {}
            props = params.get("properties", {}) if isinstance(params, dict) else {}
            if not isinstance(props, dict):  # vLLM fails on it: the whole output is content
                raise UnwritableError(name)
            self.allowed[name] = set(props)
            required = params.get("required", []) if isinstance(params, dict) else []
            try:
                self.required[name] = set(required)
            except TypeError:
                self.required[name] = set()

    def type_of(self, name: str, key: str) -> Any:
        """vLLM's ``_get_argument_type``."""
        params = self.schema.get(name)
        if params is None:
            return None
        props = params.get("properties", {})
        spec = props.get(key) if isinstance(props, dict) else None
        return spec.get("type") if isinstance(spec, dict) else None


def _coerce(tools: _Tools, name: str, key: str, value: Any) -> Any:
    """vLLM's ``_coerce_argument_value``."""
    if tools.type_of(name, key) == "string":
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return _literal(value)[0] if isinstance(value, str) else value


def _add(tools: _Tools, name: str, key: str, text: str, arguments: dict[str, Any],
         seen: set[str], allowed: set[str]) -> bool:
    """vLLM's ``_add_argument``: False when the parameter makes the call invalid."""
    if key in {"properties", "arguments"} and allowed and key not in allowed:
        wrapped, read = _literal(text)
        if not read or not isinstance(wrapped, dict):
            return False
        added = False
        for inner, value in wrapped.items():
            if inner not in allowed:
                continue
            if inner in seen:
                return False
            seen.add(inner)
            arguments[inner] = _coerce(tools, name, inner, value)
            added = True
        return added
    if allowed and key not in allowed:
        return True
    if key in seen:
        return False
    seen.add(key)
    arguments[key] = _coerce(tools, name, key, text)
    return True


ALIASES: dict[str, tuple[str, tuple[tuple[str, tuple[str, ...]], ...], dict[str, Any]]] = {
    "get_details_by_phone": ("get_customer_by_phone", (("phone_number", ("phone_number",
                                                                        "phone")),), {}),
    "get_line_details": ("get_details_by_id", (("id", ("line_id", "id")),), {}),
    "get_line_status": ("get_details_by_id", (("id", ("line_id", "id")),), {}),
    "get_roaming_status": ("get_details_by_id", (("id", ("line_id", "id")),), {}),
    "get_plan_details": ("get_details_by_id", (("id", ("plan_id", "id")),), {}),
    "enable_roaming": ("toggle_roaming", (("line_id", ("line_id", "id")),), {"enabled": True}),
    "disable_roaming": ("toggle_roaming", (("line_id", ("line_id", "id")),),
                        {"enabled": False}),
}
"""vLLM's ``_normalize_alias_tool_call`` for a single mapped argument: a name the tools lack →
(the tool it becomes, (its argument, the keys read for it, first truthy wins), fixed
arguments); the other aliases are ``_alias``'s."""


def _first(arguments: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """``arguments.get(a) or arguments.get(b) …`` as vLLM chains them."""
    value = None
    for key in keys:
        value = arguments.get(key)
        if value:
            return value
    return value


def _alias(name: str, arguments: dict[str, Any], names: set[str]
           ) -> tuple[str, dict[str, Any]]:
    """vLLM's ``_normalize_alias_tool_call`` (tau2-bench telecom names)."""
    if name in names:
        return name, arguments
    single = ALIASES.get(name)
    if single is not None and single[0] in names:
        target, ((key, keys),), fixed = single
        value = _first(arguments, keys)
        if value is not None:
            return target, {key: value, **fixed}
    if name == "get_details_by_name" and "get_customer_by_name" in names:
        full, dob = _first(arguments, ("full_name", "name")), _first(
            arguments, ("date_of_birth", "dob"))
        mapped: dict[str, Any] = {}
        if full is not None:
            mapped["full_name"] = full
        if dob is not None:
            mapped["date_of_birth"] = mapped["dob"] = dob
        if mapped:
            return "get_customer_by_name", mapped
    if name in {"add_refueled_data", "add_data_to_line"} and "refuel_data" in names:
        line = _first(arguments, ("line_id", "id"))
        amount = _first(arguments, ("amount_gb", "gb", "gb_amount", "amount"))
        mapped = {}
        if "customer_id" in arguments:
            mapped["customer_id"] = arguments["customer_id"]
        if line is not None:
            mapped["line_id"] = line
        if amount is not None:
            mapped["amount_gb"] = amount
        if mapped:
            return "refuel_data", mapped
    return name, arguments


def _by_xml(block: str, tools: _Tools) -> tuple[str, dict[str, Any], bool, bool]:
    """The XML reading: (name, arguments, a parameter invalid, read); raises where vLLM's
    ``ET.fromstring`` or its loop does (then the regular expressions read the block)."""
    root = ET.fromstring(block)  # no DTD can precede the <function root
    node = root if root.tag == "function" else root.find("function")
    if node is None:
        return "", {}, False, False
    name = (node.attrib.get("name") or "").strip()
    params = list(node.findall("param"))
    wrapper = node.find("arguments")
    if wrapper is not None and not params:
        params = list(wrapper.findall("param"))
    arguments: dict[str, Any] = {}
    seen: set[str] = set()
    allowed = tools.allowed.get(name, set())
    for param in params:
        key = param.attrib.get("name")
        if not key or not _add(tools, name, key, param.text or "", arguments, seen, allowed):
            return name, {}, True, bool(name)
    return name, arguments, False, bool(name)


def _by_pattern(block: str, tools: _Tools) -> tuple[str, dict[str, Any], bool, bool]:
    """vLLM's regular-expression reading."""
    found = _NAME.search(block)
    name = (found.group(1) or "").strip() if found else ""
    invalid = bool(_NAMELESS.search(block))
    arguments: dict[str, Any] = {}
    seen: set[str] = set()
    allowed = tools.allowed.get(name, set())
    try:
        for param in _PARAM.finditer(block):
            text = param.group(2) or ""
            if text.startswith(_CDATA) and text.endswith(_END_CDATA):
                text = text[len(_CDATA):-len(_END_CDATA)]
            else:
                text = text.strip()
            if not _add(tools, name, param.group(1).strip(), text, arguments, seen, allowed):
                invalid = True
                break
    except Exception:  # as vLLM: the block is not read
        return name, {}, invalid, False
    return name, {} if invalid else arguments, invalid, bool(name)


def read_call(block: str, context: ToolContext) -> tuple[str, str] | None:
    """One ``<function…</function>`` block as vLLM's ``_parse_function_block`` reads it: name
    and JSON arguments, or None (its text stays content); ``UnwritableError``: vLLM fails on
    the output (a value JSON cannot write), which is then all content."""
    tools = _Tools(context.tools)
    try:
        name, arguments, invalid, read = _by_xml(block, tools)
    except Exception:  # vLLM then reads the block by its patterns
        name, arguments, invalid, read = "", {}, False, False
    if not read:
        name, arguments, invalid, read = _by_pattern(block, tools)
    if not name or invalid:
        return None
    name, arguments = _alias(name, arguments, set(tools.allowed))
    if name not in tools.allowed or not read:
        return None
    if not tools.required.get(name, set()) <= arguments.keys():
        return None
    try:
        return name, json.dumps(arguments, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        raise UnwritableError(block) from None


@dataclass(frozen=True, slots=True)
class MiniCPM5State(PoolsideState):
    """``poolside_v1``'s state, its own type (a state is only ever read by its format)."""


def _forced(state: PoolsideState, text: str, final: bool, context: ToolContext
            ) -> tuple[str, list[ToolCallDelta], PoolsideState]:
    """vLLM's JSON path under a forced ``tool_choice`` (``supports_required_and_named``): a
    named function's arguments are the content as written (``forced_call``); under "required"
    the content is held to the end, at most ``MAX_VALUE`` characters (longer: no call, the
    state's ``skip``), and read as a JSON list of ``{"name", "parameters"}``; no content."""
    if context.forced_name is not None:
        return forced_call(state, text, final, context, MAX_LEADING_SPACE)
    if state.skip:
        return "", [], state
    listed = state.space + text
    if final:
        return "", _listed_calls(listed), replace(state, space="")
    if len(listed) > MAX_VALUE:
        return "", [], replace(state, space="", skip=True)
    return "", [], replace(state, space=listed)


MINICPM5 = HeldCalls(CALL, END_CALL, read_call, normalize=normalize,
                     hold=tuple(collapsed for collapsed, _ in _COLLAPSED), forced=_forced)
FORMAT = held_format("minicpm5", MINICPM5, MiniCPM5State)
