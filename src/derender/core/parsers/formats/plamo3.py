"""PLaMo 3 on the parser engine: ``plamo3`` (tools and reasoning), as vLLM 0.33 configures it
(``vllm/parser/plamo3.py``, ``Plamo3Parser``)::

    …reasoning…<|plamo:end_think:plamo|>content
    <|plamo:begin_tool_requests:plamo|>
      <|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>NAME
      <|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json
      <|plamo:msg|>{JSON}<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>
    <|plamo:end_tool_requests:plamo|>

Every marker is several tokens (the pieces ``<|plamo:begin_``, ``<|plamo:end_``,
``:plamo|>``), matched as text. Thinking (on unless the template kwargs set
``enable_thinking`` falsy) starts the output in reasoning; ``<|plamo:end_think:plamo|>`` or
the tool block ends it, a ``<|plamo:begin_think:plamo|>`` is dropped there and re-enters it
from content; the reasoning keeps its trailing whitespace. Off, the think markers are text.
The tool parser alone reads them from content (a ``</think>`` marker is dropped).

A call's name (stripped) is the text between its name markers; its arguments are the JSON as
written (``RawJsonArgs``): stripped, ``{}`` when empty, re-serialised only when the tool's
schema changes a value (vLLM's ``_fix_arg_types``); a call without arguments is ``{}``; names
are not checked against the tools. Content before the block as written (whitespace alone:
none), text after the calls dropped. At the end of the output a partial marker ending the
content, the reasoning or a name is dropped where vLLM's token-level test drops it
(``cut_marker``).
"""

from __future__ import annotations

import json
from typing import Any

from derender.core.parsers.engine import (
    ARGS,
    BETWEEN,
    CALL_OPEN,
    CONTENT,
    END,
    GHOST,
    MAX_SPACE,
    MAX_VALUE,
    NAME,
    NAMED,
    OPENED,
    PREAMBLE,
    REASONING,
    START,
    EngineConfig,
    _Run,
    make_format,
)
from derender.core.parsers.primitives import split_space
from derender.core.parsers.schema import fix_arg_types

LEAD = "<|plamo:"
PIECES = ("<|plamo:begin_", "<|plamo:end_")
CLOSE = ":plamo|>"


def tag(name: str, end: bool = False) -> str:
    return f"{PIECES[end]}{name}{CLOSE}"


TERMINALS = {
    "THINK_START": (tag("think"),), "THINK_END": (tag("think", True),),
    "TOOL_REQUESTS_START": (tag("tool_requests"),),
    "TOOL_REQUESTS_END": (tag("tool_requests", True),),
    "TOOL_REQUEST_START": (tag("tool_request"),), "TOOL_REQUEST_END": (tag("tool_request", True),),
    "TOOL_NAME_START": (tag("tool_name"),), "TOOL_NAME_END": (tag("tool_name", True),),
    "TOOL_ARGS_START": (tag("tool_arguments") + "<|plamo:constrain|>json<|plamo:msg|>",),
    "TOOL_ARGS_END": (tag("tool_arguments", True),),
    "EOT": ("<|plamo:tag|>",),
}
THINK_TERMINALS = ("THINK_START", "THINK_END")


def cut_marker(text: str, thinking: bool) -> str:
    """vLLM's ``_strip_unfinished_marker`` on text ending the output: from the last
    ``<|plamo:`` on it is dropped when its token ids (re-encoded) are a proper prefix of a
    marker's. Read on text, with the pieces as tokens: a piece alone, or a piece and the
    marker's text up to its ``:plamo|>`` or a following marker (where the ids split whatever
    the vocabulary)."""
    at = text.rfind(LEAD)
    if at < 0:
        return text
    tail = text[at:]
    for terminal, (literal,) in TERMINALS.items():
        if terminal in THINK_TERMINALS and not thinking:
            continue
        if (len(literal) > len(tail) and literal.startswith(tail)
                and (tail in PIECES or literal.startswith((CLOSE, LEAD), len(tail)))):
            return text[:at]
    return text


def clean_name(name: str) -> str:
    """A call's name: a partial marker ending it dropped (vLLM strips names at the end), then
    stripped."""
    return cut_marker(name, False).strip()


def message_arguments(raw: str, properties: Any) -> str:
    """The arguments vLLM returns for the raw text of a call's arguments: a partial marker
    ending them dropped when the rest is JSON (``_handle_arg_chunk``), stripped, ``{}`` when
    empty (``_extract_args_json``), re-serialised when the schema changes a value
    (``_fix_arg_types``)."""
    at = raw.rfind(LEAD)
    if at >= 0:
        try:
            json.loads(raw[:at])
        except ValueError:
            pass
        else:
            raw = raw[:at]
    return fix_arg_types(raw.strip() or "{}", properties)


class RawJsonArgs:
    """The arguments as written (``tool_args_json``): held until the call ends (at most
    ``MAX_VALUE`` characters), then emitted as vLLM's message has them; a longer text is
    streamed as written from there (stripped, not re-typed)."""

    RAW, LONG = 0, 1
    subs = 2
    max_acc = MAX_VALUE
    closes_itself = True
    """The call's arguments are all emitted here (no ``{``/``}`` added by the machine)."""

    def terminals(self, spell: Any) -> tuple[str, ...]:
        return ()

    def enter(self, run: _Run, terminal: str) -> None:
        run.sub, run.acc = self.RAW, ""
        if not run.has(CALL_OPEN):  # arguments of no named call: read, not returned
            run.set(GHOST)

    def read(self, run: _Run, region: str, ended: bool) -> int:
        if run.sub == self.RAW:
            run.acc += region
            if len(run.acc) <= MAX_VALUE:
                return 0
            region, run.acc, run.sub = run.acc.lstrip(), "", self.LONG
        body, run.acc = split_space(run.acc + region, MAX_SPACE)
        if body:
            run.emit(body)
            run.set(OPENED)
        return 0

    def close(self, run: _Run) -> None:
        if run.sub == self.LONG:
            if not run.has(OPENED):
                run.emit("{}")
        else:
            run.emit(message_arguments(run.acc, run.properties()))
        run.acc, run.sub = "", self.RAW


_CALLS = {
    (CONTENT, "TOOL_REQUESTS_START"): (PREAMBLE, 0),
    (PREAMBLE, "TOOL_REQUEST_START"): (PREAMBLE, 0),
    (PREAMBLE, "TOOL_NAME_START"): (NAME, START),
    (NAME, "TOOL_NAME_END"): (PREAMBLE, NAMED),
    (PREAMBLE, "TOOL_ARGS_START"): (ARGS, 0),
    (ARGS, "TOOL_ARGS_END"): (BETWEEN, END),
    (BETWEEN, "TOOL_REQUEST_END"): (PREAMBLE, 0),
    (PREAMBLE, "TOOL_REQUESTS_END"): (CONTENT, 0),
    (CONTENT, "EOT"): (CONTENT, 0),
}
_THINK = {
    (REASONING, "THINK_START"): (REASONING, 0),
    (CONTENT, "THINK_START"): (REASONING, 0),
    (REASONING, "THINK_END"): (CONTENT, 0),
    (CONTENT, "THINK_END"): (CONTENT, 0),
    (REASONING, "TOOL_REQUESTS_START"): (PREAMBLE, 0),
    (REASONING, "EOT"): (CONTENT, 0),
}



def thinking(kwargs: dict[str, object]) -> bool:
    """``Plamo3Parser``: on unless ``enable_thinking`` is set falsy."""
    return bool(kwargs.get("enable_thinking", True))


PLAMO3_CONFIG = EngineConfig(
    "plamo3", TERMINALS, _CALLS, _THINK, RawJsonArgs(), clean_name=clean_name,
    keep_reasoning_space=True, tools_think=thinking, cut_marker=cut_marker,
    cut_hold=tuple(literal for (literal,) in TERMINALS.values()))
PLAMO3 = make_format(PLAMO3_CONFIG)
"""The format (its record: ``registry.TOOL_RECORDS``)."""
