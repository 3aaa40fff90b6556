"""Reasoning and tool-call parsing of chat output: reasoning first, then tool calls in what
remains, each an incremental machine with plain-data state (vLLM §7, design §6).

Tool-call formats are registered in ``TOOL_FORMATS`` under vLLM's parser names, one module
each, all with the interface of ``tools.ToolFormat``; the stream state stores a format's tag
with its state. gpt-oss models (``model_type`` "gpt_oss") are parsed from token ids instead,
reasoning and tool calls at once (``harmony``), as vLLM's ``openai_gptoss`` and ``openai``
parsers do."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from derender.core.errors import BadRequestError
from derender.core.parsers import (
    deepseek,
    harmony,
    hermes,
    llama3_json,
    mistral,
    pythonic,
    qwen3_coder,
    reasoning,
)
from derender.core.parsers.reasoning import ReasoningFormat, ReasoningState
from derender.core.parsers.tools import (
    ParsedDelta,
    ToolCallDelta,
    ToolContext,
    ToolFormat,
    ToolState,
)
from derender.core.vocab import MARKUP, RESTORE_MARKUP, Vocabulary
from derender.protocol import ChatRequest

TOOL_FORMATS: dict[str, ToolFormat[Any]] = {
    fmt.name: fmt for fmt in (hermes.FORMAT, llama3_json.FORMAT, pythonic.FORMAT,
                              deepseek.V3, deepseek.V31, mistral.FORMAT, qwen3_coder.FORMAT)}
"""The tool-call formats, by the name vLLM's ``--tool-call-parser`` gives them."""
FORMATS_BY_TAG: dict[int, ToolFormat[Any]] = {fmt.tag: fmt for fmt in TOOL_FORMATS.values()}
if len(FORMATS_BY_TAG) != len(TOOL_FORMATS):
    raise RuntimeError("two tool-call formats share a state tag")
_FORMAT_OF_STATE: dict[type, ToolFormat[Any]] = {
    fmt.state_type: fmt for fmt in TOOL_FORMATS.values()}

OTHER_FORMAT = "stream_state holds the tool-call state of another format than this model's"

PARSED_UNDER_NONE = frozenset({"mistral", "qwen3_coder"})
"""Formats whose calls vLLM still parses under ``tool_choice`` "none", dropping them with
their markup (the others leave the output as content; mistral's older grammar too)."""
PARSED_WITHOUT_TOOLS = frozenset({"mistral", "qwen3_coder"})
"""Formats whose calls vLLM 0.33 still parses in a request without ``tools``, dropping them
with their markup, the text around them read as when calls are returned (qwen3_coder: case
1524; mistral, both grammars: 1530, 1534). The others leave the output as content (hermes
1518, llama3_json 1546, pythonic 1548, deepseek_v3 1550, deepseek_v31 1552, openai 327).
``"tools": []`` is refused before any parsing (1520)."""

HARMONY_REASONING, HARMONY_TOOLS = "openai_gptoss", "openai"
"""vLLM's names for the Harmony parsers (gpt-oss models only; the reasoning one is their
default)."""
REASONING_PARSERS = frozenset({*reasoning.FORMATS, HARMONY_REASONING})
TOOL_PARSERS = frozenset({*TOOL_FORMATS, HARMONY_TOOLS})


@dataclass(frozen=True, slots=True)
class ParserSettings:
    """What the model's parsers and the request's tool settings ask for."""

    reasoning: ReasoningFormat | None
    thinking: bool
    """``enable_thinking`` from the template kwargs (vLLM §7.2)."""
    tool_format: str | None
    """The tool-call format parsing the output; None when tool calls are not parsed (no tool
    parser, no ``tools``, or ``tool_choice`` "none" unless ``PARSED_UNDER_NONE``)."""
    keep_calls: bool
    """Parsed calls are returned (else dropped, their markup gone, as vLLM does)."""
    forced: bool
    """``tool_choice`` is "required" or a named function: content is never null."""
    named: bool
    forced_name: str | None
    """The named function of ``tool_choice``, whose bare JSON arguments may be the output."""
    parallel: bool
    include_reasoning: bool
    spell: tuple[tuple[str, str], ...] = ()
    """Each marker and how it appears in text decoded with the marked vocabulary."""
    request_tools: tuple[Any, ...] = ()
    """The request's ``tools`` when calls are parsed (formats typing arguments read them)."""
    harmony: bool = False
    """A gpt-oss model: the output is Harmony, parsed from token ids (``tool_format``
    "openai" when function messages are tool calls)."""
    unrequested: bool = False
    """Calls are parsed though the request has no ``tools`` (``PARSED_WITHOUT_TOOLS``): the
    format reads the text as when calls are returned, and the calls are dropped."""

    @property
    def spelling(self) -> dict[str, str]:
        return dict(self.spell)

    @property
    def tools(self) -> bool:
        """Tool calls are parsed at all."""
        return self.tool_format is not None

    def tool_context(self) -> ToolContext:
        return ToolContext(self.forced_name, self.forced and not self.named, self.spelling,
                           self.request_tools, self.keep_calls or self.unrequested)


@dataclass(frozen=True, slots=True)
class ParserState:
    reasoning: ReasoningState | None
    tools: ToolState | None
    """The tool-call format's state (the type says which format)."""
    calls_kept: bool = False
    """A kept tool call was emitted (finish_reason becomes "tool_calls")."""
    harmony: harmony.HarmonyState | None = None
    """The Harmony machine's state (gpt-oss models; then the other two are None)."""


def template_thinking(request: ChatRequest) -> bool:
    """``enable_thinking`` as the chat template saw it: the request's kwargs, else derived
    from ``reasoning_effort`` ("none" switches thinking off), else on."""
    kwargs = request.chat_template_kwargs or {}
    value = kwargs.get("enable_thinking")
    if value is not None:
        return bool(value)
    effort = request.reasoning_effort
    if effort is not None and effort != "auto":
        return effort != "none"
    return True


def parser_settings(reasoning_parser: str | None, tool_parser: str | None,
                    request: ChatRequest, vocab: Vocabulary) -> ParserSettings:
    choice: Any = request.tool_choice
    named = isinstance(choice, dict)
    forced = named or choice == "required"
    if reasoning_parser == HARMONY_REASONING or tool_parser == HARMONY_TOOLS:
        return ParserSettings(
            reasoning=None, thinking=True, tool_format=tool_parser,
            keep_calls=forced or (choice == "auto" and tool_parser is not None
                                  and bool(request.tools)),
            forced=forced, named=named, forced_name=None,
            parallel=request.parallel_tool_calls is not False,
            include_reasoning=request.include_reasoning, harmony=True)
    under_none = tool_parser in PARSED_UNDER_NONE and not (
        tool_parser == "mistral"
        and mistral.older_grammar(lambda m: vocab.token_id(m) is not None))
    unrequested = not request.tools and tool_parser in PARSED_WITHOUT_TOOLS
    tools = unrequested or (tool_parser is not None and bool(request.tools)
                            and (choice != "none" or under_none))
    keep = forced or (choice == "auto" and tools and not unrequested)
    return ParserSettings(
        reasoning=reasoning.FORMATS[reasoning_parser] if reasoning_parser else None,
        thinking=template_thinking(request), tool_format=tool_parser if tools else None,
        keep_calls=keep, unrequested=unrequested, forced=forced,
        named=named, forced_name=(choice.get("function") or {}).get("name") if named else None,
        parallel=request.parallel_tool_calls is not False,
        include_reasoning=request.include_reasoning,
        spell=tuple((marker, vocab.spelled(marker)) for marker in MARKUP),
        request_tools=tuple(request.tools or ()) if tools else (),
    )


def start(settings: ParserSettings, vocab: Vocabulary, prompt_ids: Sequence[int] | None
          ) -> ParserState:
    if settings.harmony:
        return ParserState(None, None, harmony=harmony.HarmonyState())
    fmt = settings.reasoning
    return ParserState(
        reasoning=None if fmt is None else reasoning.start(fmt, vocab, prompt_ids,
                                                           settings.thinking),
        tools=None if settings.tool_format is None else
        TOOL_FORMATS[settings.tool_format].start(),
    )


def step(settings: ParserSettings, state: ParserState, vocab: Vocabulary, text: str,
         ids: Sequence[int], final: bool) -> tuple[ParsedDelta, ParserState]:
    """Reasoning, content and tool-call deltas of an output's next part: its text (decoded
    with ``vocab.marked``) or, for Harmony, its token ids."""
    if not settings.harmony:
        return feed(settings, state, text, final)
    if state.harmony is None:
        raise BadRequestError(OTHER_FORMAT)
    delta, machine = harmony.feed(state.harmony, settings.tool_format == HARMONY_TOOLS,
                                  harmony.tokens(vocab), ids, final)
    calls = _kept(settings, delta.calls)
    reasoning = delta.reasoning if settings.include_reasoning else ""
    return (ParsedDelta(reasoning, delta.content, calls),
            ParserState(None, None, state.calls_kept or bool(calls), machine))


def _kept(settings: ParserSettings, calls: list[ToolCallDelta]) -> list[ToolCallDelta]:
    """The calls the request keeps (vLLM §7.1: ``tool_choice``, ``parallel_tool_calls``)."""
    if not settings.keep_calls:
        return []
    if not settings.parallel:
        return [c for c in calls if c.index == 0]
    return calls


def feed(settings: ParserSettings, state: ParserState, text: str, final: bool
         ) -> tuple[ParsedDelta, ParserState]:
    """Reasoning, content and tool-call deltas of new text."""
    spell = settings.spelling
    thought, content = "", text
    reasoning_state = state.reasoning
    if settings.reasoning is not None and reasoning_state is not None:
        split, reasoning_state = reasoning.feed(settings.reasoning, reasoning_state, text, final,
                                                spell)
        thought, content = split.reasoning, split.content
    calls: list[ToolCallDelta] = []
    tool_state = state.tools
    if tool_state is not None:
        fmt = TOOL_FORMATS.get(settings.tool_format or "")
        if fmt is None or not isinstance(tool_state, fmt.state_type):
            raise BadRequestError(OTHER_FORMAT)
        content, calls, tool_state = fmt.step(tool_state, content, final,
                                              settings.tool_context())
        calls = _kept(settings, calls)
    calls = [ToolCallDelta(c.index, c.name, c.arguments.translate(RESTORE_MARKUP))
             for c in calls]
    delta = ParsedDelta((thought if settings.include_reasoning else "").translate(RESTORE_MARKUP),
                        content.translate(RESTORE_MARKUP), calls)
    return delta, ParserState(reasoning_state, tool_state, state.calls_kept or bool(calls))


def format_of(state: ToolState) -> ToolFormat[Any]:
    """The format a tool-call state belongs to."""
    return _FORMAT_OF_STATE[type(state)]


CALL_IDS = {"mistral": mistral.call_id}
"""Formats whose calls carry ids of the model's own form (else ``chatcmpl-tool-…``)."""


def tool_call_id(request_id: str, choice_index: int, call_index: int,
                 tool_format: str | None = None) -> str:
    """Deterministic id: the same across retries and between streaming and non-streaming."""
    if tool_format in CALL_IDS:
        return CALL_IDS[tool_format](request_id, choice_index, call_index)
    digest = hashlib.sha256(f"{request_id}\x00{choice_index}\x00{call_index}".encode()).hexdigest()
    return f"chatcmpl-tool-{digest[:16]}"


def finish_reason(settings: ParserSettings, finish: str | None, has_calls: bool) -> str | None:
    """vLLM §5.7: a "stop" that produced tool calls is "tool_calls" (not for a named tool)."""
    if finish == "stop" and has_calls and not settings.named:
        return "tool_calls"
    return finish
