"""StepFun Step 3's tool calls: ``step3``, vLLM 0.33's ``Step3ToolParser``
(``vllm/tool_parsers/step3_tool_parser.py``)::

    <｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="N">
    <steptml:parameter name="K">V</steptml:parameter>…</steptml:invoke><｜tool_call_end｜>…
    <｜tool_calls_end｜>

vLLM reads the first ``<｜tool_calls_begin｜>`` … ``<｜tool_calls_end｜>`` block whole (no end:
no call). Each part of it after a ``<｜tool_call_begin｜>`` (and the text before the first) that
holds a ``<｜tool_call_end｜>`` is a call when, up to that end, it has a ``<｜tool_sep｜>`` with
``function`` (stripped) before it and a ``<steptml:invoke name="N">`` after it; its arguments
are every ``<steptml:parameter name="K">V</steptml:parameter>`` after the separator, values
stripped and typed by the first tool so named (``_typed``). Names are not checked against the
tools. With a call read the content is the text before the block and the text after it,
joined and stripped (none when empty); with none, the whole output as written.

So it is Tencent Hy4's machine (``hy.held_block_feed``: the block held until its end, at most
``hy.MAX_BLOCK`` bytes, then its calls returned at once or the whole output said as content)
with this reader and the content stripped (``HeldBlock.stripped``): whitespace that may end the
content is held, bounded (``hy.MAX_BLOCK_SPACE``); whitespace opening it is held until
something else is said (``MAX_LEADING_SPACE``) and then kept (vLLM's message strips it there:
README compatibility table). Under a forced ``tool_choice`` vLLM's JSON path reads the output:
named, the content as written is the arguments; "required", a JSON list of ``{"name",
"parameters"}`` (held to the end, at most ``hy.MAX_BLOCK`` bytes, else no call). The calls are
read only when they may be returned (``tools`` given, ``tool_choice`` not "none").
Reasoning (``step3``) is ``reasoning.FORMATS["step3"]``.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, replace
from typing import Any

from derender.core.parsers.formats.hy import (
    HY4_AFTER,
    HY4_DONE,
    MAX_BLOCK,
    HeldBlock,
    Hy4State,
    held_block_feed,
)
from derender.core.parsers.formats.qwen3_coder import _listed_calls
from derender.core.parsers.primitives import MAX_LEADING_SPACE, forced_call
from derender.core.parsers.schema import tool_index
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat
from derender.core.state.codec import Reader, Writer, utf8_size

CALLS, END_CALLS = "<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"
CALL, END_CALL, SEP = "<｜tool_call_begin｜>", "<｜tool_call_end｜>", "<｜tool_sep｜>"
_INVOKE = re.compile(r'<steptml:invoke name="([^"]+)">')
_PARAMETER = re.compile(r'<steptml:parameter name="([^"]+)">(.*?)</steptml:parameter>',
                        re.DOTALL)


@dataclass(frozen=True, slots=True)
class Step3State(Hy4State):
    calls: int = 0
    """Under a named ``tool_choice``: the call was begun."""


def _typed(tools: Any, name: str, values: dict[str, Any]) -> dict[str, Any]:
    """vLLM's ``_cast_arguments``: by the ``type`` of the first tool so named, "string" kept,
    "integer" ``int``, "number" ``float``, "boolean" true/false, "null" null, each where the
    text reads so (else kept)."""
    index = tool_index(tools, name)
    if index < 0:
        return values
    schema = tools[index]["function"].get("parameters") or {}
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    for key, value in values.items():
        spec = properties.get(key, {}) if isinstance(properties, dict) else {}
        kind = spec.get("type") if isinstance(spec, dict) else None
        if kind == "integer":
            with contextlib.suppress(ValueError):
                values[key] = int(value)
        elif kind == "number":
            with contextlib.suppress(ValueError):
                values[key] = float(value)
        elif kind == "boolean":
            lower = value.lower()
            values[key] = lower == "true" if lower in ("true", "false") else value
        elif kind == "null":
            values[key] = None if value.lower() == "null" else value
    return values


def step3_calls(block: str, context: ToolContext) -> list[tuple[str, str]] | None:
    """vLLM's ``extract_tool_calls`` on the text between the block's markers: each call's name
    and JSON arguments; None when there is none."""
    sp = context.spelled
    call, end_call, sep = sp(CALL), sp(END_CALL), sp(SEP)
    calls: list[tuple[str, str]] = []
    for part in block.split(call):
        if end_call not in part:
            continue
        body = part.split(end_call, 1)[0]
        if sep not in body:
            continue
        kind, invoke = body.split(sep, 1)
        found = _INVOKE.search(invoke)
        if kind.strip() != "function" or found is None:
            continue
        values: dict[str, Any] = {}
        for key, value in _PARAMETER.findall(invoke):
            values[key] = value.strip()
        name = found.group(1)
        calls.append((name, json.dumps(_typed(context.tools, name, values),
                                       ensure_ascii=False)))
    return calls or None


def _forced(state: Step3State, text: str, final: bool, context: ToolContext
            ) -> tuple[str, list[ToolCallDelta], Step3State]:
    """vLLM's JSON path: named, ``primitives.forced_call``; "required", the output held to its
    end (at most ``MAX_BLOCK`` bytes, else no call: mode ``HY4_DONE``) and read as a JSON list
    of ``{"name", "parameters"}``; no content."""
    if context.forced_name is not None:
        return forced_call(state, text, final, context, MAX_LEADING_SPACE)
    if state.mode == HY4_DONE:
        return "", [], state
    listed = state.held + text
    if final:
        return "", _listed_calls(listed), replace(state, held="")
    if utf8_size(listed) > MAX_BLOCK:
        return "", [], replace(state, mode=HY4_DONE, held="")
    return "", [], replace(state, held=listed)


def _read(block: str, context: ToolContext, form: int) -> list[tuple[str, str]] | None:
    del form  # one form
    return step3_calls(block, context)


SPEC = HeldBlock(CALLS, END_CALLS, _read, stripped=True, forced=_forced)


def _feed(state: Step3State, text: str, final: bool, context: ToolContext
          ) -> tuple[str, list[ToolCallDelta], Step3State]:
    return held_block_feed(SPEC, state, text, final, context)


def _encode(state: Step3State, w: Writer) -> None:
    w.uint(state.mode)
    w.text(state.held)
    w.text(state.space)
    w.uint(int(state.spoke) | state.calls << 1)


def _decode(r: Reader) -> Step3State:
    mode, (held, size), space, bits = r.uint(), r.sized_text(), r.text(), r.uint()
    if mode > HY4_AFTER or bits > 3:
        raise ValueError("not a step3 state")
    return Step3State(mode, held, space, bool(bits & 1), calls=bits >> 1, size=size)


FORMAT: ToolFormat[Step3State] = ToolFormat("step3", Step3State, Step3State, _feed, _encode,
                                            _decode)
