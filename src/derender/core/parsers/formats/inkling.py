"""Thinking Machines Inkling on the parser engine: ``inkling`` (tools and reasoning), as vLLM
0.33 configures it (``vllm/parser/inkling.py``, ``InklingParser``)::

    <|content_thinking|>…reasoning…<|end_message|>
    <|message_model|><|content_text|>…content…<|end_message|>
    <|message_model|>AUTHOR<|content_invoke_tool_json|>{"name": NAME, "args": {…}}<|end_message|>

Typed blocks, each opened by a content-kind marker after ``<|message_model|>`` (the output
continues the prompt's) and closed by ``<|end_message|>`` or ``<|content_model_end_sampling|>``;
every marker is one special token. A block's header (the text between ``<|message_model|>``
and its kind, the author) is dropped when the block opens, content when the block ends there
or the output does (``HEADER``). ``<|content_invoke_tool_text|>`` and ``<|content_tool_error|>``
blocks are content. The transition table is vLLM's (``inkling_config``), as data below.

A call's name and arguments come from its JSON (``InklingArgs``, held until the block ends,
at most ``MAX_VALUE`` characters): the name is the first ``"name": "…"`` in it (vLLM's
``_try_extract_name``), the arguments the ``args`` member's text as written (vLLM's
``_inkling_arg_converter``), re-serialised only where the tool's schema changes a value
(``_fix_arg_types``); a payload without a readable name is read as JSON
(``_extract_name_and_args``). Content is every text block in order, before, between and after
the calls (``_single_pass_parse``); whitespace alone is none when a call is returned.

vLLM's answer with both parsers is two passes, the reasoning parser's (``skip_tool_parsing``),
then the tool parser's over its content; the one machine here reads both at once, the
reasoning parser alone with ``REASONING_ALONE`` (a call block passed through as text, its
header dropped), the tool parser alone from content with the reasoning dropped (vLLM's
``ParserEngineToolAdapter``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from derender.core.parsers.engine import (
    ARGS,
    CONTENT,
    END,
    GHOST,
    HEADER,
    MAX_VALUE,
    REASONING,
    SHOW,
    SPAN,
    START,
    TEXT,
    EngineConfig,
    _Run,
    make_format,
)
from derender.core.parsers.schema import fix_arg_types, tool_properties

MESSAGE_MODEL = "<|message_model|>"
CONTENT_TEXT = "<|content_text|>"
CONTENT_THINKING = "<|content_thinking|>"
CONTENT_INVOKE_TOOL_JSON = "<|content_invoke_tool_json|>"
CONTENT_INVOKE_TOOL_TEXT = "<|content_invoke_tool_text|>"
CONTENT_TOOL_ERROR = "<|content_tool_error|>"
CONTENT_MODEL_END_SAMPLING = "<|content_model_end_sampling|>"
END_MESSAGE = "<|end_message|>"

TERMINALS = {
    "MSG_MODEL": (MESSAGE_MODEL,), "TEXT_START": (CONTENT_TEXT,),
    "THINK_START": (CONTENT_THINKING,), "THINK_END": (END_MESSAGE,),
    "END_SAMPLING": (CONTENT_MODEL_END_SAMPLING,), "TOOL_START": (CONTENT_INVOKE_TOOL_JSON,),
    "TOOL_TEXT": (CONTENT_INVOKE_TOOL_TEXT,), "TOOL_ERROR": (CONTENT_TOOL_ERROR,),
}
ENDS = ("THINK_END", "END_SAMPLING")
VISIBLE = ("TEXT_START", "TOOL_TEXT", "TOOL_ERROR")
"""Openers of blocks that are content."""

# vLLM's ``inkling_config`` transitions (MESSAGE_HEADER is HEADER, TOOL_ARGS is ARGS); a
# terminal without one is text of the phase
TRANSITIONS: dict[tuple[Any, str], tuple[Any, int]] = {
    (CONTENT, "MSG_MODEL"): (HEADER, 0),
    (CONTENT, "THINK_START"): (REASONING, 0),
    (CONTENT, "TOOL_START"): (ARGS, START),
    (HEADER, "MSG_MODEL"): (HEADER, 0),
    (HEADER, "THINK_START"): (REASONING, 0),
    (HEADER, "TOOL_START"): (ARGS, START),
    (REASONING, "THINK_START"): (REASONING, 0),
    (REASONING, "TOOL_START"): (ARGS, START),
    **{(phase, opener): (CONTENT, 0) for phase in (CONTENT, HEADER) for opener in VISIBLE},
    **{(CONTENT, end): (CONTENT, 0) for end in ENDS},
    **{(REASONING, end): (CONTENT, 0) for end in ENDS},
    **{(ARGS, end): (CONTENT, END) for end in ENDS},
    **{(HEADER, end): (CONTENT, SHOW) for end in ENDS},
    # the two passes: the reasoning parser drops a content block's opener inside a call
    # block, so the tool parser reads on in the call
    **{(ARGS, opener): (ARGS, 0) for opener in VISIBLE},
}

REASONING_ALONE: dict[tuple[Any, str], tuple[Any, int]] = {
    # vLLM's ``skip_tool_parsing``: a call block's opener ends reasoning and is content, the
    # block's text too, its end kept as text (SPAN); an end out of a call block is read
    **{key: move for key, move in TRANSITIONS.items()
       if move[0] != ARGS and key[0] != ARGS},
    **{(phase, "TOOL_START"): (SPAN, TEXT) for phase in (CONTENT, HEADER, REASONING, SPAN)},
    (SPAN, "MSG_MODEL"): (HEADER, 0),
    (SPAN, "THINK_START"): (REASONING, 0),
    **{(SPAN, opener): (CONTENT, 0) for opener in VISIBLE},
    **{(SPAN, end): (CONTENT, TEXT) for end in ENDS},
}

_NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')
"""vLLM's ``ParserEngine._NAME_RE``."""
_JSON_WS = " \t\r\n"


def scan_object(text: str, start: int, depth: int, in_string: bool, escape: bool,
                max_depth: int) -> tuple[int | None, int, bool, bool]:
    """vLLM's ``scan_json_object_end`` from ``text[start]`` on, resumable: the scanner's depth
    and string state in and out. The index is just past the ``}`` that brings the depth to 0,
    or at a ``{`` that takes it past ``max_depth``; None: the text ended first."""
    for i in range(start, len(text)):
        ch = text[i]
        if escape:
            escape = False
        elif in_string:
            if ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
            if depth > max_depth:
                return i, depth, in_string, escape
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1, depth, in_string, escape
    return None, depth, in_string, escape


def _object_end(raw: str, start: int) -> int | None:
    """vLLM's ``scan_json_object_end``: the end of the object at ``raw[start]`` (``{``)."""
    return scan_object(raw, start, 0, False, False, len(raw))[0]


def member_start(raw: str, key: str) -> int | None:
    """Where the value of the top-level member ``key`` starts (vLLM's
    ``extract_json_member_object``); None: not begun; ValueError: not an object."""
    depth, in_string, escape = 0, False, False
    string_start = -1
    last: str | None = None
    for i, ch in enumerate(raw):
        if escape:
            escape = False
            continue
        if in_string:
            if ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
                if depth == 1:
                    last = raw[string_start + 1:i]
            continue
        if ch == '"':
            in_string, string_start = True, i
        elif ch == ":" and depth == 1 and last == key:
            start = i + 1
            while start < len(raw) and raw[start] in _JSON_WS:
                start += 1
            if start >= len(raw):
                return None
            if raw[start] != "{":
                raise ValueError(f"member {key!r} must be a JSON object")
            return start
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return None


def _args_value(parsed: dict[str, Any]) -> str | None:
    """Inkling's ``_extract_args_value``."""
    for key in ("args", "arguments", "parameters"):
        if key in parsed:
            value = parsed[key]
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return None


def _name_and_args(raw: str) -> tuple[Any, str]:
    """vLLM's ``_extract_name_and_args``."""
    raw = raw.strip()
    try:
        parsed = json.loads(raw)
    except ValueError:
        return "", raw
    if not isinstance(parsed, dict):
        return "", raw
    args = _args_value(parsed)
    if args is None:
        args = json.dumps({k: v for k, v in parsed.items() if k != "name"}, ensure_ascii=False)
    return parsed.get("name", ""), args


def read_call(raw: str) -> tuple[str, str] | None:
    """The call vLLM's message returns for a block's JSON (``_build_extracted_result``):
    its name and its arguments before typing; None: no call."""
    found = _NAME.search(raw)
    name = found.group(1).strip() if found else ""
    if not name:
        if not raw.strip():
            return None
        parsed, args = _name_and_args(raw)
        return (parsed, args) if isinstance(parsed, str) and parsed else None
    try:
        start = member_start(raw, "args")
    except ValueError:
        return name, _name_and_args(raw)[1]
    if start is None:
        return name, "{}"
    end = _object_end(raw, start)
    return name, raw[start:end]


MAX_DEPTH = 255
"""Nesting of a long call's arguments followed (deeper: the rest is not streamed)."""


class InklingArgs:
    """A call block's JSON: held until the block ends (at most ``MAX_VALUE`` characters), then
    read as vLLM's message reads it. Longer: the call is opened where its first
    ``MAX_VALUE + 1`` characters have its name and its ``args`` object begun, the object
    streamed as written up to its end (``LONG``, the scanner's depth and string state in
    ``sub``; not re-typed), else it is no call. The bound is a place in the JSON: a chunk
    that crosses it is read in two, so a whole output reads as any split of it."""

    RAW, DONE, DROPPED, LONG = 0, 1, 2, 3
    subs = LONG + 4 * (MAX_DEPTH + 1)
    max_acc = MAX_VALUE
    closes_itself = True

    def terminals(self, spell: Any) -> tuple[str, ...]:
        return ()

    def enter(self, run: _Run, terminal: str) -> None:
        run.sub, run.acc = self.RAW, ""

    def read(self, run: _Run, region: str, ended: bool) -> int:
        if run.sub == self.RAW:
            room = MAX_VALUE + 1 - len(run.acc)  # (decided on the first MAX_VALUE + 1
            run.acc += region[:room]  # characters, whatever the chunks)
            if len(run.acc) <= MAX_VALUE:
                return 0
            self._open_long(run)
            region = region[room:]
        if run.sub >= self.LONG:
            self._stream(run, region)
        return 0

    def _open_long(self, run: _Run) -> None:
        raw, run.acc = run.acc, ""
        found = _NAME.search(raw)
        name = found.group(1).strip() if found else ""
        try:
            start = member_start(raw, "args") if name else None
        except ValueError:
            start = None
        if start is None:
            run.sub = self.DROPPED
            run.set(GHOST)
            return
        run.acc = name
        run.open_call()
        run.sub = self.LONG
        self._stream(run, raw[start:])

    def _stream(self, run: _Run, text: str) -> None:
        state = run.sub - self.LONG
        end, depth, in_string, escape = scan_object(text, 0, state >> 2, bool(state & 2),
                                                    bool(state & 1), MAX_DEPTH)
        if end is not None:  # the object closed, or nested past MAX_DEPTH: the rest is dropped
            run.emit(text[:end])
            run.sub = self.DONE
            return
        run.emit(text)
        run.sub = self.LONG + (depth << 2 | in_string << 1 | escape)

    def close(self, run: _Run) -> None:
        if run.sub == self.RAW and not run.has(GHOST):
            call = read_call(run.acc)
            if call is None:
                run.set(GHOST)
            else:
                name, args = call
                run.acc = name
                run.open_call()
                tools = run.context.tools
                run.emit(fix_arg_types(args, tool_properties(tools, name) if tools else {}))
        run.acc, run.sub = "", self.RAW


def thinking(kwargs: dict[str, object]) -> bool:
    """``InklingParser`` reads no template switch: the output's blocks say what is reasoning
    (``reasoning_effort`` only changes the prompt)."""
    return True


INKLING_CONFIG = EngineConfig(
    "inkling", TERMINALS, TRANSITIONS, {}, InklingArgs(), keep_after_calls=True,
    start_phase=HEADER, reasoning_transitions=REASONING_ALONE)
INKLING = make_format(INKLING_CONFIG)
"""The format (its record: ``registry.TOOL_RECORDS``)."""
