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
"""

from __future__ import annotations

import ast
import json
import warnings
from collections.abc import Mapping
from typing import Any

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
from derender.core.parsers.registry import REQUEST_EFFORT

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


def _literal(value: str) -> Any:
    """vLLM's ``_deserialize``: JSON, else a Python literal (only one JSON can write: a set,
    bytes or a complex number make vLLM's whole answer fail; here they stay the text), else
    the text."""
    try:
        return json.loads(value)
    except ValueError:
        pass
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            parsed = ast.literal_eval(value)
        json.dumps(parsed)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return value
    return parsed


def hy3_value(value: str, schema: Any) -> Any:
    """vLLM's ``HYV3ToolParser._parse_value``: boolean, integer, number (a float when the
    text has ``.``/``e``/``E``), JSON for other types, the text for strings, else
    ``_literal``; a parameter without a schema is a string."""
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
    return _literal(value)


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
