"""MBZUAI K2 Horizon: ``k2_horizon``, vLLM 0.33's ``K2HorizonToolParser`` and
``K2HorizonReasoningParser`` (``vllm/tool_parsers/k2_horizon_tool_parser.py``,
``vllm/reasoning/k2_horizon_reasoning_parser.py``)::

    <ifm|tool_calls><ifm|tool_call>BODY</ifm|tool_call>…</ifm|tool_calls>

Each request picks its forms in its template kwargs, and the stream state carries them (read
once, when the stream starts):

- the calls' form, ``tool_call_format`` (``call_form``): "xml" (the default) — BODY is NAME then
  ``<ifm|arg_key>K</ifm|arg_key><ifm|arg_value>V</ifm|arg_value>`` pairs, GLM's argument tags
  renamed; "xml_typed" — each pair has ``<ifm|arg_type>T</ifm|arg_type>`` between key and
  value; "json" — BODY is ``{"name": …, "arguments": {…}}``;
- the reasoning's markers, ``reasoning_effort`` (the top-level one, else the template kwarg's,
  else "high"; ``effort``): "high" ``<ifm|think>``…``</ifm|think>``, "medium"
  ``<ifm|think_fast>``…, "low" ``<ifm|think_faster>``… (``reasoning.FORMATS["k2_horizon"]``
  with ``ReasoningFormat.modes``).

Another value of either is refused (400, vLLM's message). The calls are read as Hy4's are, with
Hy4's held-block machine (``hy.HeldBlock``): the first group is held whole until
``</ifm|tool_calls>`` (at most ``hy.MAX_BLOCK`` bytes) and read at once by vLLM's rules
(``read``); any fault (no call, text between calls, a malformed or duplicated argument, a type
tag in "xml" or none in "xml_typed", a name that is empty, holds whitespace, is not one of the
request's tools or not the named ``tool_choice``, JSON that is not an object or has
non-object arguments, a value JSON cannot write) makes the whole output content. The content is
the text before and after the group (whitespace alone: none). Values are typed as vLLM types
them: by the tool's schema (``schema.coerce``), in "xml_typed" by the written type where the
schema allows it or has none; in "json" a value keeps its JSON type unless the schema retypes
its text.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from derender.core.errors import BadRequestError
from derender.core.parsers.formats.hy import (
    HY4_TEXT,
    HeldBlock,
    Hy4State,
    held_block_feed,
)
from derender.core.parsers.registry import REQUEST_EFFORT
from derender.core.parsers.schema import (
    coerce,
    names_mask,
    schema_types,
    tool_index,
    tool_properties,
)
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat
from derender.core.state.codec import Reader, Writer

CALLS, END_CALLS = "<ifm|tool_calls>", "</ifm|tool_calls>"
CALL, END_CALL = "<ifm|tool_call>", "</ifm|tool_call>"
KEY, END_KEY = "<ifm|arg_key>", "</ifm|arg_key>"
TYPE, END_TYPE = "<ifm|arg_type>", "</ifm|arg_type>"
VALUE, END_VALUE = "<ifm|arg_value>", "</ifm|arg_value>"
ARG_MARKERS = (KEY, END_KEY, TYPE, END_TYPE, VALUE, END_VALUE)

XML, XML_TYPED, JSON = range(3)
CALL_FORMS = ("xml", "xml_typed", "json")
"""``tool_call_format``'s values by form (the state's ``form``)."""
EFFORTS = {"high": ("<ifm|think>", "</ifm|think>"),
           "medium": ("<ifm|think_fast>", "</ifm|think_fast>"),
           "low": ("<ifm|think_faster>", "</ifm|think_faster>")}
"""``reasoning_effort``'s values and their think markers, by mode (the reasoning state's
``mode``: 0 "high", 1 "medium", 2 "low")."""


def call_form(kwargs: Mapping[str, Any]) -> int:
    """``K2HorizonToolParser._request_tool_format``: the template kwargs' ``tool_call_format``
    ("xml" when absent); another value is refused."""
    value = kwargs.get("tool_call_format", "xml")
    if not isinstance(value, str) or value not in CALL_FORMS:
        raise BadRequestError(f"Unsupported tool_call_format {value!r}. Supported values: "
                              f"{', '.join(sorted(CALL_FORMS))}.")
    return CALL_FORMS.index(value)


def effort(kwargs: Mapping[str, Any]) -> int:
    """``K2HorizonReasoningParser.__init__``: ``reasoning_effort`` as vLLM merges it into the
    template kwargs (the request's top-level one unless unset or "auto", else the kwarg's),
    "high" when absent; another value is refused."""
    value = kwargs.get(REQUEST_EFFORT)
    if value in (None, "auto"):
        value = kwargs.get("reasoning_effort", "high")
    if not isinstance(value, str) or value not in EFFORTS:
        raise BadRequestError(f"Unsupported reasoning_effort {value!r}. Supported values: "
                              f"{', '.join(EFFORTS)}.")
    return list(EFFORTS).index(value)


@functools.cache
def _patterns(call: str, end_call: str, key: str, end_key: str, type_: str, end_type: str,
              value: str, end_value: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """vLLM's ``_TOOL_CALL_RE`` and ``_ARG_RE`` on the markers as spelled."""
    e = re.escape
    return (re.compile(f"{e(call)}(.*?){e(end_call)}", re.DOTALL),
            re.compile(f"{e(key)}(.*?){e(end_key)}\\s*(?:{e(type_)}(.*?){e(end_type)}\\s*)?"
                       f"{e(value)}(.*?){e(end_value)}", re.DOTALL))


class _FaultError(ValueError):
    """The group is not read (vLLM's ``ValueError`` and ``JSONDecodeError`` paths)."""


def _name(name: Any, context: ToolContext) -> str:
    """``_validate_tool_name``."""
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        raise _FaultError(name)
    if context.tools and tool_index(context.tools, name) < 0:
        raise _FaultError(name)
    if context.forced_name is not None and name != context.forced_name:
        raise _FaultError(name)
    return name


def _base(written: str | None) -> str | None:
    """``_base_arg_type``."""
    return written.split("[", 1)[0].strip().lower() if written else None


def _xml_value(value: str, schema: Any, written: str | None) -> Any:
    """``_coerce_xml_value``: typed by the schema, or by the written type where the schema
    allows several types including it, or has none ("any": the text as written)."""
    base = _base(written)
    targets: Sequence[str] = schema_types(schema)
    if isinstance(schema, dict):
        if base is not None and base in targets and len(set(targets)) > 1:
            targets = [base]
    elif base == "any":
        return value
    elif base:
        targets = [base]
    return coerce(value if "string" in targets else value.strip(), names_mask(targets))


def _json_value(value: Any, schema: Any) -> Any:
    """``_coerce_json_value``."""
    if not isinstance(schema, dict):
        return value
    raw = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                          allow_nan=False)
    return coerce(raw, names_mask(schema_types(schema)))


def _xml_call(body: str, context: ToolContext, form: int, arg_re: re.Pattern[str]
              ) -> tuple[str, dict[str, Any]]:
    """``_parse_xml_call``."""
    sp = context.spelled
    key = sp(KEY)
    first = body.find(key)
    if first == -1:
        if any(sp(m) in body for m in ARG_MARKERS):
            raise _FaultError(body)
        return _name(body.strip(), context), {}
    name = _name(body[:first].strip(), context)
    properties = tool_properties(context.tools, name)
    arguments: dict[str, Any] = {}
    position = first
    for match in arg_re.finditer(body, first):
        if body[position:match.start()].strip():
            raise _FaultError(body)
        arg = match.group(1).strip()
        if not arg or arg in arguments:
            raise _FaultError(arg)
        written = match.group(2)
        if written is not None:
            written = written.strip()
        if (form == XML and written is not None) or (form == XML_TYPED and not written):
            raise _FaultError(written)
        arguments[arg] = _xml_value(match.group(3), properties.get(arg), written)
        position = match.end()
    if position == first or body[position:].strip():
        raise _FaultError(body)
    return name, arguments


def _json_call(body: str, context: ToolContext) -> tuple[str, dict[str, Any]]:
    """``_parse_json_call``."""
    call = json.loads(body.strip())
    if not isinstance(call, dict):
        raise _FaultError(body)
    name = _name(call.get("name"), context)
    arguments = call.get("arguments", {})
    if not isinstance(arguments, dict):
        raise _FaultError(body)
    properties = tool_properties(context.tools, name)
    return name, {k: _json_value(v, properties.get(k)) for k, v in arguments.items()}


def read(block: str, context: ToolContext, form: int) -> list[tuple[str, str]] | None:
    """``extract_tool_calls`` on the text between ``<ifm|tool_calls>`` and
    ``</ifm|tool_calls>``: each call's name and JSON arguments; None when the group is
    faulty."""
    sp = context.spelled
    call_re, arg_re = _patterns(*(sp(m) for m in (CALL, END_CALL, *ARG_MARKERS)))
    bodies = call_re.findall(block)
    if not bodies or call_re.sub("", block).strip():
        return None
    calls: list[tuple[str, str]] = []
    try:
        for body in bodies:
            name, arguments = (_json_call(body, context) if form == JSON
                               else _xml_call(body, context, form, arg_re))
            calls.append((name, json.dumps(arguments, ensure_ascii=False, allow_nan=False)))
    except (ValueError, TypeError, RecursionError):  # _Fault and JSON's errors
        return None
    return calls


GRAMMAR = HeldBlock(CALLS, END_CALLS, read, keeps_after=True)


def _feed(state: Hy4State, text: str, final: bool, context: ToolContext
          ) -> tuple[str, list[ToolCallDelta], Hy4State]:
    return held_block_feed(GRAMMAR, state, text, final, context)


class K2hState(Hy4State):
    """Hy4's held-block state, with the request's call form (``Hy4State.form``)."""

    __slots__ = ()


def _start(form: int = XML) -> K2hState:
    return K2hState(form=form)


def _encode(state: Hy4State, w: Writer) -> None:
    w.uint(state.mode)
    w.text(state.held)
    w.text(state.space)
    w.uint(int(state.spoke) | state.form << 1)


def _decode(r: Reader) -> K2hState:
    mode, (held, size), space, bits = r.uint(), r.sized_text(), r.text(), r.uint()
    if mode > HY4_TEXT or bits >> 1 > JSON:
        raise ValueError("not a k2_horizon state")
    return K2hState(mode, held, space, bool(bits & 1), form=bits >> 1, size=size)


FORMAT: ToolFormat[K2hState] = ToolFormat("k2_horizon", K2hState, _start, _feed,  # type: ignore[arg-type]
                                          _encode, _decode, start_in=_start)
