"""Reasoning and tool-call parsing of chat output: reasoning first, then tool calls in what
remains, each an incremental machine with plain-data state (vLLM §7, design §6).

Tool-call formats are registered in ``TOOL_FORMATS`` under vLLM's parser names, one module
each, all with the interface of ``tools.ToolFormat``; the stream state stores a format's tag
with its state. gpt-oss models (``model_type`` "gpt_oss") are parsed from token ids instead,
reasoning and tool calls at once (``harmony``), as vLLM's ``openai_gptoss`` and ``openai``
parsers do."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from derender.contract.requests import ChatRequest
from derender.core.decoding.vocab import MARKUP, RESTORE_MARKUP, Vocabulary
from derender.core.errors import BadRequestError
from derender.core.parsers import (
    engine,
    reasoning,
)
from derender.core.parsers.formats import (
    deepseek,
    dsml,
    gemma4,
    glm,
    harmony,
    hermes,
    llama3_json,
    minimax,
    mistral,
    pythonic,
    qwen3_coder,
)
from derender.core.parsers.reasoning import ReasoningFormat, ReasoningState
from derender.core.parsers.tools import (
    ParsedDelta,
    ToolCallDelta,
    ToolContext,
    ToolFormat,
    ToolState,
)

TOOL_FORMATS: dict[str, ToolFormat[Any]] = {
    fmt.name: fmt for fmt in (hermes.FORMAT, llama3_json.FORMAT, pythonic.FORMAT,
                              deepseek.V3, deepseek.V31, mistral.FORMAT, qwen3_coder.FORMAT,
                              qwen3_coder.MIMO_FORMAT, qwen3_coder.SEED_OSS_FORMAT,
                              dsml.V32, dsml.V4, dsml.V41, glm.GLM45, glm.GLM47,
                              deepseek.KIMI_K2, gemma4.FORMAT, minimax.M2, minimax.M3)}
"""The tool-call formats, by the name vLLM's ``--tool-call-parser`` gives them."""
TOOL_ALIASES = {"qwen3_xml": "qwen3_coder", "qwen3_json": "hermes", "llama4_json": "llama3_json",
                "step3p5": "qwen3_coder"}
"""Tool parser names that are another format's: vLLM 0.33's aliases, and ``step3p5``, whose
calls are ``qwen3_coder``'s unchanged. An alias is the same format (its states, its tag)."""
FORMATS_BY_TAG: dict[int, ToolFormat[Any]] = {fmt.tag: fmt for fmt in TOOL_FORMATS.values()}
if len(FORMATS_BY_TAG) != len(TOOL_FORMATS):
    raise RuntimeError("two tool-call formats share a state tag")
_FORMAT_OF_STATE: dict[type, ToolFormat[Any]] = {
    fmt.state_type: fmt for fmt in TOOL_FORMATS.values()}

OTHER_FORMAT = "stream_state holds the tool-call state of another format than this model's"

PARSED_UNDER_NONE = frozenset({"mistral", "qwen3_coder", "mimo", "seed_oss", "kimi_k2", "gemma4"})
"""Formats whose calls vLLM still parses under ``tool_choice`` "none", dropping them with
their markup (the others leave the output as content; mistral's older grammar too)."""
PARSED_WITHOUT_TOOLS = frozenset({"mistral", "qwen3_coder", "mimo", "seed_oss"})
"""Formats whose calls vLLM 0.33 still parses in a request without ``tools`` (its
``tool_choice`` is then "none" and nothing suppresses the calls), dropping them with their
markup, the text around them read as when calls are returned (qwen3_coder: 1524; mistral, both
grammars: 1530, 1534; mimo, seed_oss: 951, 1009; step3p5 is qwen3_coder: 895). hermes (1518),
llama3_json (1546), pythonic (1548), deepseek_v3 (1550), deepseek_v31 (1552) and openai (327)
leave the output as content. ``"tools": []`` is refused before any parsing (1520)."""
DROPPED_WITHOUT_TOOLS = frozenset({"kimi_k2", "gemma4"})
"""Formats whose calls vLLM reads and drops when the request has no ``tools``, the content
read as with calls not kept (docs/recording-issue14.md, 1113, 1195)."""

UNPARSED_WITHOUT_CALLS = frozenset({"minimax_m3"})
"""Engine formats vLLM does not run under ``tool_choice`` "none" or without ``tools``: the
markup stays in the content [811, 817] (the other engine formats read every output)."""

HARMONY_REASONING, HARMONY_TOOLS = "openai_gptoss", "openai"
"""vLLM's names for the Harmony parsers (gpt-oss models only; the reasoning one is their
default)."""

ENGINE_FORMATS = frozenset(engine.CONFIGS)
"""Formats read by the parser engine (``engine``): their tool parser reads the whole output."""
ENGINE_REASONING: dict[str, tuple[str, Callable[[dict[str, Any]], bool]]] = {
    "deepseek_v4": ("deepseek_v4", dsml.thinking), "deepseek_v41": ("deepseek_v41", dsml.thinking),
    "glm45": ("glm", glm.thinking), "glm47": ("glm", glm.thinking),
    "minimax_m2": ("minimax_m2", minimax.m2_thinking)}
"""Reasoning parsers that are an engine format's own reasoning: parser name → (family, whether
the request's template kwargs turn thinking on). As in vLLM, one machine reads both when the
tool parser is of the same family."""
ENGINE_FAMILY = {"deepseek_v32": "deepseek_v32", "deepseek_v4": "deepseek_v4",
                 "deepseek_v41": "deepseek_v41", "glm45": "glm", "glm47": "glm",
                 "minimax_m2": "minimax_m2", "minimax_m3": "minimax_m3"}
REASONING_FORMATS = {**reasoning.FORMATS, gemma4.REASONING.name: gemma4.REASONING}
"""The reasoning formats by parser name (the engine formats' own reasoning is not here)."""
REASONING_PARSERS = frozenset({*REASONING_FORMATS, HARMONY_REASONING, *ENGINE_REASONING})
TOOL_PARSERS = frozenset({*TOOL_FORMATS, *TOOL_ALIASES, HARMONY_TOOLS})


def pairing_error(reasoning_parser: str | None, tool_parser: str | None) -> str | None:
    """Why a pair of parsers cannot serve a model (None: it can). An engine format's reasoning
    parser serves with its family's tool parser (one machine reads both) or alone; an engine
    tool parser with any reasoning parser (another family's reads first, then the engine the
    content) or alone."""
    family = ENGINE_FAMILY.get(tool_parser or "")
    own = ENGINE_REASONING.get(reasoning_parser or "")
    if own is not None and tool_parser is not None and own[0] != family:
        return (f"reasoning parser {reasoning_parser!r} is read by its family's tool parser "
                f"({', '.join(sorted(n for n, f in ENGINE_FAMILY.items() if f == own[0]))}) "
                f"and serves only with it or alone")
    return None


def engine_mode(reasoning_parser: str | None, tool_parser: str | None) -> str | None:
    """What the parser engine reads for these parsers: both (one family), the tools alone
    (an engine tool parser without its family's reasoning parser: think tags are text) or
    the reasoning alone (an engine reasoning parser without a tool parser: tool tags are
    text), or the tools after another family's reasoning parser (``FOREIGN``: as the tools
    alone, but a config's ``held_end`` is read); None: the engine is not used."""
    own = ENGINE_REASONING.get(reasoning_parser or "")
    if tool_parser in ENGINE_FORMATS:
        if own is not None:
            return engine.BOTH
        return engine.FOREIGN if reasoning_parser is not None else engine.TOOLS
    if own is not None and tool_parser is None:
        return engine.REASONING_ONLY
    return None


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
    as_called: bool = False
    """Calls are read and content treated as with calls kept, but the calls are dropped
    (``PARSED_WITHOUT_TOOLS``)."""
    force_content: bool = False
    """The template kwargs force content (``force_nonempty_content`` true or
    ``enable_thinking`` false), for reasoning formats that swap (nemotron_v3)."""
    engine_thinking: bool = False
    """An engine format reading reasoning: thinking is on for the request (the output starts
    in reasoning)."""
    engine_mode: str = "both"
    """What an engine format reads (``engine_mode``)."""

    @property
    def spelling(self) -> dict[str, str]:
        return dict(self.spell)

    @property
    def tools(self) -> bool:
        """Tool calls are parsed at all."""
        return self.tool_format is not None

    def tool_context(self) -> ToolContext:
        return ToolContext(self.forced_name, self.forced and not self.named, self.spelling,
                           self.request_tools, self.keep_calls or self.as_called)


@dataclass(frozen=True, slots=True)
class ParserState:
    reasoning: ReasoningState | None
    tools: ToolState | None
    """The tool-call format's state (the type says which format)."""
    calls_kept: bool = False
    """A kept tool call was emitted (finish_reason becomes "tool_calls")."""
    harmony: harmony.HarmonyState | None = None
    """The Harmony machine's state (gpt-oss models; then the other two are None)."""


def template_kwargs(request: ChatRequest) -> dict[str, Any]:
    """The template kwargs vLLM's parsers see: the request's, with ``enable_thinking`` from a
    top-level ``reasoning_effort`` ("none": false) unless they set it."""
    kwargs = dict(request.chat_template_kwargs or {})
    effort = request.reasoning_effort
    if effort is not None and effort != "auto" and "enable_thinking" not in kwargs:
        kwargs["enable_thinking"] = effort != "none"
    return kwargs


def v3_thinking(request: ChatRequest) -> bool:
    """``deepseek_v3``: thinking only when the kwargs' ``thinking`` or ``enable_thinking`` is
    truthy."""
    kwargs = template_kwargs(request)
    return bool(kwargs.get("thinking")) or bool(kwargs.get("enable_thinking"))


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
    tool_parser = TOOL_ALIASES.get(tool_parser or "", tool_parser)
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
    tools = (tool_parser is not None
             and (bool(request.tools) or tool_parser in DROPPED_WITHOUT_TOOLS)
             and (choice != "none" or under_none))
    as_called = tool_parser in PARSED_WITHOUT_TOOLS and not request.tools
    tools = tools or as_called
    keep = forced or (choice == "auto" and tools and bool(request.tools))
    own = ENGINE_REASONING.get(reasoning_parser or "")
    mode = engine_mode(reasoning_parser, tool_parser)
    if tool_parser in UNPARSED_WITHOUT_CALLS:
        keep = tools and (forced or choice == "auto")
    elif tool_parser in ENGINE_FORMATS:
        # the engine reads every output: without tools its calls are dropped, under "none"
        # hidden with their markup
        tools, keep = True, bool(request.tools) and (forced or choice == "auto")
    elif mode == engine.REASONING_ONLY:
        tool_parser, tools, keep = reasoning_parser, True, False
    fmt = REASONING_FORMATS[reasoning_parser] if reasoning_parser and own is None else None
    thinking = (v3_thinking(request) if reasoning_parser == "deepseek_v3"
                else minimax.m3_thinking(template_kwargs(request))
                if reasoning_parser == "minimax_m3" else template_thinking(request))
    if fmt is not None:
        thinking = reasoning.switched_on(fmt, request.chat_template_kwargs or {}, thinking)
    return ParserSettings(
        reasoning=fmt, thinking=thinking, tool_format=tool_parser if tools else None,
        keep_calls=keep, forced=forced,
        named=named, forced_name=(choice.get("function") or {}).get("name") if named else None,
        parallel=request.parallel_tool_calls is not False,
        include_reasoning=request.include_reasoning,
        spell=tuple((marker, vocab.spelled(marker)) for marker in MARKUP),
        request_tools=tuple(request.tools or ()) if tools else (),
        force_content=forces_content(request), as_called=as_called,
        engine_thinking=own is not None and own[1](template_kwargs(request)),
        engine_mode=mode or engine.BOTH,
    )


def forces_content(request: ChatRequest) -> bool:
    """nemotron_v3's ``_should_force_content``: the template kwargs as sent."""
    kwargs = request.chat_template_kwargs or {}
    return kwargs.get("enable_thinking") is False or kwargs.get("force_nonempty_content") is True


def start(settings: ParserSettings, vocab: Vocabulary, prompt_ids: Sequence[int] | None
          ) -> ParserState:
    if settings.harmony:
        return ParserState(None, None, harmony=harmony.HarmonyState())
    fmt = settings.reasoning
    tools: ToolState | None = None
    if settings.tool_format in ENGINE_FORMATS:
        tools = engine.start(TOOL_FORMATS[settings.tool_format], settings.engine_thinking,
                             settings.engine_mode)
    elif settings.tool_format is not None:
        tools = TOOL_FORMATS[settings.tool_format].start()
    return ParserState(
        reasoning=None if fmt is None else reasoning.start(fmt, vocab, prompt_ids,
                                                           settings.thinking,
                                                           settings.force_content),
        tools=tools,
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
        if fmt.name in ENGINE_FORMATS and isinstance(tool_state, engine.EngineState):
            more, content, calls, tool_state = engine.feed(
                engine.CONFIGS[fmt.name], tool_state, content, final, settings.tool_context())
            thought += more
        else:
            content, calls, tool_state = fmt.step(tool_state, content, final,
                                                  settings.tool_context())
        calls = _kept(settings, calls)
    calls = [ToolCallDelta(c.index, c.name, c.arguments.translate(RESTORE_MARKUP), c.id)
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
