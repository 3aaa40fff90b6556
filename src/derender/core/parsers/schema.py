"""Typing parameter values by the request's tool schema, as vLLM 0.33 does it, for every format
that types values (the Qwen3 XML family, the parser-engine formats, mistral, gemma4, MiniMax).

vLLM's rules, each ported once here:

- ``find_tool_properties``: a function's ``parameters.properties`` (``tool_properties``);
- ``extract_types_from_schema``: a property's types from ``type``, ``enum`` values and
  ``anyOf``/``oneOf``/``allOf`` (``schema_types``), read as a bit set over ``TYPES``
  (``schema_mask``, what a state keeps of a parameter: ``param_types``);
- ``coerce_to_schema_type``: a string typed by the first of its types it reads as
  (``coerce``);
- ``ParserEngine._coerce_value`` and ``_coerce_dict``: a value typed through nested objects
  and arrays (``fix_value``, ``fix_object``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

TYPES = ("null", "integer", "number", "boolean", "object", "array", "string")
"""vLLM's priority order of schema types; a parameter's types are a bit set over these."""
STRING = 1 << TYPES.index("string")
_ALIASES = {
    "str": "string", "text": "string", "varchar": "string", "char": "string", "enum": "string",
    "int": "integer", "int32": "integer", "int64": "integer", "uint": "integer",
    "uint32": "integer", "uint64": "integer", "long": "integer", "short": "integer",
    "unsigned": "integer", "float": "number", "float32": "number", "float64": "number",
    "double": "number", "bool": "boolean", "dict": "object", "arr": "array", "list": "array",
    "sequence": "array",
}


# the request's tools

def tool_name(tool: Any) -> str | None:
    """A tool's function name (None: not a function tool with a string name)."""
    spec = tool.get("function") if isinstance(tool, dict) else None
    name = spec.get("name") if isinstance(spec, dict) else None
    return name if isinstance(name, str) else None


def tool_index(tools: Sequence[Any], name: str) -> int:
    """The index of the first tool named ``name`` (-1: none)."""
    return next((i for i, tool in enumerate(tools) if tool_name(tool) == name), -1)


def tool_properties(tools: Sequence[Any], name: str) -> Mapping[str, Any]:
    """vLLM's ``find_tool_properties``: the named tool's ``parameters.properties``, or {}."""
    index = tool_index(tools, name)
    if index < 0:
        return {}
    parameters = tools[index]["function"].get("parameters")
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    return properties if isinstance(properties, dict) else {}


def param_types(tools: Sequence[Any], function: str, param: str) -> int:
    """The types of a parameter of a function of the request's tools (STRING if unknown)."""
    schema = tool_properties(tools, function).get(param)
    return schema_mask(schema) if isinstance(schema, dict) else STRING


# a property's types

def schema_mask(schema: Any) -> int:
    """The types of a property's schema as a bit set over TYPES (what ``coerce`` reads)."""
    return names_mask(schema_types(schema))


def names_mask(names: Sequence[str]) -> int:
    """Type names (aliases read as vLLM's ``_TYPE_ALIASES``; others ignored) as a bit set over
    TYPES."""
    mask = 0
    for name in names:
        key = name.strip().lower()
        key = _ALIASES.get(key, key)
        if key in TYPES:
            mask |= 1 << TYPES.index(key)
    return mask


def schema_types(schema: Any) -> list[str]:
    """vLLM's ``extract_types_from_schema``: ``type``, the kinds of ``enum`` values, and the
    types of ``anyOf``/``oneOf``/``allOf``; ["string"] when none."""
    if not isinstance(schema, dict):
        return ["string"]
    types: set[str] = set()
    value = schema.get("type")
    if isinstance(value, str):
        types.add(value)
    elif isinstance(value, list):
        types.update(t for t in value if isinstance(t, str))
    enum = schema.get("enum")
    if isinstance(enum, list):
        for item in enum:
            if item is None:
                types.add("null")
            elif isinstance(item, bool):
                types.add("boolean")
            elif isinstance(item, int):
                types.add("integer")
            elif isinstance(item, float):
                types.add("number")
            elif isinstance(item, str):
                types.add("string")
            elif isinstance(item, list):
                types.add("array")
            elif isinstance(item, dict):
                types.add("object")
    for key in ("anyOf", "oneOf", "allOf"):
        choices = schema.get(key)
        if isinstance(choices, list):
            for choice in choices:
                types.update(schema_types(choice))
    return list(types) if types else ["string"]


# typing values

def _finite(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (ValueError, TypeError):
        return False
    return True


def coerce(value: str, mask: int) -> Any:
    """vLLM's ``coerce_to_schema_type``: the first of the types (null, integer, number,
    boolean, object, array, string) the value reads as; else the value as JSON; else it."""
    for bit, kind in enumerate(TYPES):
        if not mask & 1 << bit:
            continue
        if kind == "null":
            if value.lower() == "null":
                return None
        elif kind == "string":
            return value
        elif kind == "integer":
            try:
                return int(value)
            except ValueError:
                continue
        elif kind == "number":
            try:
                return int(value)
            except ValueError:
                pass
            try:
                number = float(value)
            except ValueError:
                continue
            if not math.isfinite(number):
                continue
            return number if number != int(number) else int(number)
        elif kind == "boolean":
            lower = value.lower().strip()
            if lower in ("true", "1"):
                return True
            if lower in ("false", "0"):
                return False
        else:  # object, array
            try:
                parsed = json.loads(value)
            except ValueError:
                continue
            if _finite(parsed):
                return parsed
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    return parsed if _finite(parsed) else value


def fix_value(value: Any, schema: Any) -> Any:
    """vLLM's ``ParserEngine._coerce_value``: a string by ``coerce_to_schema_type``; an object
    or array through its ``properties``/``items``; another value through its JSON text."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, str):
        return coerce(value, schema_mask(schema))
    if isinstance(value, dict):
        nested = schema.get("properties")
        if isinstance(nested, dict):
            return fix_object(value, nested)
        return value
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            return [fix_value(item, items) for item in value]
        return value
    coerced = coerce(json.dumps(value, ensure_ascii=False), schema_mask(schema))
    if type(coerced) is not type(value) or coerced != value:
        return coerced
    return value


def fix_object(values: dict[str, Any], properties: Mapping[str, Any]) -> dict[str, Any]:
    """vLLM's ``_coerce_dict``: each value whose key has a schema."""
    return {key: fix_value(value, properties.get(key)) for key, value in values.items()}


def changes(value: Any, schema: Any) -> bool:
    """``fix_value`` changes ``value`` (vLLM's ``changed`` of ``_coerce_value``: a string
    coerced to another object, a nested value changed, another value of another type or
    value)."""
    if not isinstance(schema, dict):
        return False
    if isinstance(value, str):
        return coerce(value, schema_mask(schema)) is not value
    if isinstance(value, dict):
        nested = schema.get("properties")
        return isinstance(nested, dict) and any(changes(v, nested.get(k))
                                                for k, v in value.items())
    if isinstance(value, list):
        items = schema.get("items")
        return isinstance(items, dict) and any(changes(item, items) for item in value)
    return fix_value(value, schema) is not value


def fix_arg_types(args: str, properties: Any) -> str:
    """vLLM's ``_fix_arg_types`` (the parser engine's formats: PLaMo 3, Inkling): JSON
    arguments re-serialised only when the tool's schema changes a value, else as written."""
    if not properties:
        return args
    try:
        parsed = json.loads(args)
    except ValueError:
        return args
    if not isinstance(parsed, dict) or not changes(parsed, {"properties": properties}):
        return args
    return json.dumps(fix_object(parsed, properties), ensure_ascii=False)
