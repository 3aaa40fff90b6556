"""Reasoning and tool-call parsing of chat output: reasoning first, then tool calls in what
remains, each an incremental machine with plain-data state (docs/vllm-compat/api.md §7;
docs/design.md, Parsers).

Every format is a record of ``registry`` (``TOOL_RECORDS``, ``REASONING_RECORDS``) under
vLLM's parser names: its tag, markers and policies, which this module reads, and where its
machine is, imported on first use (``tool_format``, ``engine_config``, ``reasoning_format``;
``load`` at start-up). A tool-call format is one module with the interface of
``tools.ToolFormat``; the stream state stores a format's tag with its state. gpt-oss models
(``model_type`` "gpt_oss") are parsed from token ids instead, reasoning and tool calls at
once (``harmony``), as vLLM's ``openai_gptoss`` and ``openai`` parsers do."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from derender.contract.requests import ChatRequest
from derender.core.decoding.vocab import STAND_IN, Vocabulary, restore_table
from derender.core.errors import BadRequestError
from derender.core.parsers import reasoning
from derender.core.parsers.reasoning import ReasoningFormat, ReasoningState
from derender.core.parsers.registry import (
    BOTH,
    FOREIGN,
    MARKUP,
    REASONING_BY_NAME,
    REASONING_ONLY,
    REQUEST_EFFORT,
    TOOLS,
    TOOLS_BY_NAME,
    Machine,
    Reads,
    ReasoningRecord,
    Ref,
    Thinking,
    ToolRecord,
    WithoutTools,
    spelling,
)
from derender.core.parsers.tools import (
    ParsedDelta,
    ToolCallDelta,
    ToolContext,
    ToolFormat,
    ToolState,
)

if TYPE_CHECKING:
    from derender.core.parsers.engine import EngineConfig
    from derender.core.parsers.formats.harmony import HarmonyState

OTHER_FORMAT = "stream_state holds the tool-call state of another format than this model's"

REASONING_PARSERS = frozenset(REASONING_BY_NAME)
"""Every reasoning parser name served (``registry.REASONING_RECORDS``)."""
TOOL_PARSERS = frozenset(TOOLS_BY_NAME)
"""Every tool parser name served, aliases included (``registry.TOOL_RECORDS``)."""

RESTORE_MARKUP: dict[int, str | int] = restore_table(MARKUP)
"""``str.translate`` table turning text decoded with the marked vocabulary back into the
model's text: stand-ins into the markers' text, escaped literals into what was written."""
_RESTORED = re.compile("[" + "".join(re.escape(chr(key)) for key in sorted(RESTORE_MARKUP)) + "]")


def restore(text: str) -> str:
    """``text.translate(RESTORE_MARKUP)``, skipped where no character of the table occurs
    (``str.translate`` looks every character of non-ASCII text up, several times slower than
    this search: a held-block format's long content)."""
    return text.translate(RESTORE_MARKUP) if _RESTORED.search(text) else text


def marked(vocab: Vocabulary) -> Vocabulary:
    """The vocabulary the parser path decodes with: each single-token marker of ``MARKUP``
    decoding to its stand-in (``Vocabulary.marked_by``)."""
    return vocab.marked_by(MARKUP)


def spelled(vocab: Vocabulary, marker: str) -> str:
    """How ``marker`` appears in text decoded with ``marked(vocab)``."""
    return spelling(vocab.token_id, marker, STAND_IN)


def tool_record(name: str | None) -> ToolRecord | None:
    """The record of a tool parser name (an alias's is its format's); None for None."""
    return None if name is None else TOOLS_BY_NAME[name]


def reasoning_record(name: str | None) -> ReasoningRecord | None:
    return None if name is None else REASONING_BY_NAME[name]


def tag_of(name: str) -> int:
    """The stream-state tag of a tool parser name (an alias's is its format's)."""
    tag = TOOLS_BY_NAME[name].tag
    if tag is None:
        raise ValueError(f"{name!r} has no tool-call state of its own")
    return tag


def _machine(ref: Ref | None, name: str, missing: str) -> Any:
    """The object a record's ``ref`` names, imported on first use; ValueError naming the
    format when the record has none."""
    if ref is None:
        raise ValueError(f"{name!r} {missing}")
    return ref.load()


@functools.cache
def tool_format(name: str) -> ToolFormat[Any]:
    """A tool-call format's machine (its module imported on first use)."""
    fmt: ToolFormat[Any] = _machine(TOOLS_BY_NAME[name].format, name,
                                    "has no tool-call machine of its own")
    return fmt


@functools.cache
def engine_config(name: str) -> EngineConfig:
    """An engine format's config (its module imported on first use)."""
    config: EngineConfig = _machine(TOOLS_BY_NAME[name].config, name,
                                    "is not read by the parser engine")
    return config


@functools.cache
def reasoning_format(name: str) -> ReasoningFormat:
    """A reasoning format's data for the reasoning machine (imported on first use)."""
    fmt: ReasoningFormat = _machine(REASONING_BY_NAME[name].format, name,
                                    "is not read by the reasoning machine")
    return fmt


def load(reasoning_parser: str | None, tool_parser: str | None) -> None:
    """Import the machines of a model's parsers (at start-up: SnapStart snapshots them)."""
    reasoning_parser, tool_parser = served_pair(reasoning_parser, tool_parser)
    tool, own = tool_record(tool_parser), reasoning_record(reasoning_parser)
    if tool is not None and tool.format is not None:
        tool_format(tool.name)
    if tool is not None and tool.config is not None:
        engine_config(tool.name)
    if own is not None and own.format is not None:
        reasoning_format(own.name)
    if own is not None and own.machine in (Machine.TEMPLATE, Machine.FAMILY):
        tool_format(own.reasoning_config)
    elif own is not None and own.reasoning_config:
        engine_config(own.reasoning_config)
        tool_format(own.reasoning_config)
    for ref in (own.switch if own else None, tool.call_id if tool else None,
                tool.older_grammar if tool else None):
        if ref is not None:
            ref.load()
    if Machine.HARMONY in (tool and tool.machine, own and own.machine):
        _harmony()


def _harmony() -> Any:
    from derender.core.parsers.formats import harmony  # noqa: PLC0415 (only for gpt-oss)
    return harmony


def harmony_tokens(vocab: Vocabulary) -> object:
    """The Harmony machine's token ids of a gpt-oss vocabulary (ValueError: not one)."""
    return _harmony().tokens(vocab)


_TABLES: list[tuple[tuple[tuple[str, str], ...], Mapping[str, str]]] = []
"""The last spelling tables built, by their tuple's identity (a few vocabularies per process)."""


def spelling_table(spell: tuple[tuple[str, str], ...]) -> Mapping[str, str]:
    """The table of a ``ParserSettings.spell`` tuple, built once per tuple object: a chunk no
    longer copies the 60-odd markers' spellings into a new dict (each chunk's fixed cost)."""
    for known, table in _TABLES:
        if known is spell:
            return table
    built: Mapping[str, str] = dict(spell)  # read-only by its type
    _TABLES[:] = [(spell, built), *_TABLES[:7]]
    return built


def served_pair(reasoning_parser: str | None, tool_parser: str | None
                ) -> tuple[str | None, str | None]:
    """The parsers that read a model's output: as named, but a reasoning parser that
    ``stands_for_tools`` (Cohere's) with another family's tool parser reads as with its
    family's own (vLLM's ``CohereCommandParser`` reads the output with the reasoning parser's
    melody preset, calls included; the tool parser named only lets calls be returned)."""
    own, tool = reasoning_record(reasoning_parser), tool_record(tool_parser)
    if (own is not None and own.stands_for_tools and tool is not None
            and tool.family != own.family):
        return reasoning_parser, own.reasoning_config
    return reasoning_parser, tool_parser


def pairing_error(reasoning_parser: str | None, tool_parser: str | None) -> str | None:
    """Why a pair of parsers cannot serve a model (None: it can). Every pair vLLM accepts
    can: an engine or family format's reasoning parser with its family's tool parser is one
    machine; with another family's, that machine reads the reasoning first (``front``), then
    that tool parser the content (Cohere's reads the pair as with its own tool parser,
    ``served_pair``); an engine tool parser after another family's reasoning parser reads as
    ``FOREIGN``, a family tool parser in its ``alone_mode``. vLLM refuses a response-template
    parser (``hf``, ``beam``) with any other parser, and a tool parser with ``reasoning_from``
    after a reasoning parser it does not list; derender refuses those and nothing else."""
    own, tool = reasoning_record(reasoning_parser), tool_record(tool_parser)
    if own is not None and tool is not None and (
            Machine.TEMPLATE in (own.machine, tool.machine) and own.family != tool.family):
        # vLLM's ParserManager: one response-template parser stands for both
        return (f"--reasoning-parser {reasoning_parser} and --tool-call-parser {tool_parser} "
                "cannot be combined (a response-template parser reads reasoning and calls "
                "at once: name it alone or as both)")
    if (own is not None and tool is not None and tool.reasoning_from
            and own.name not in tool.reasoning_from):
        # vLLM's CohereCommandParser asserts its reasoning parser is Cohere's (start-up)
        return (f"--tool-call-parser {tool_parser} and --reasoning-parser {reasoning_parser} "
                f"cannot be combined (vLLM reads {tool_parser} only alone or after "
                f"{', '.join(tool.reasoning_from)})")
    return None


def front(reasoning_parser: str | None, tool_parser: str | None) -> str | None:
    """The record reading an engine or family format's reasoning before another family's
    tool parser (vLLM's ``DelegatingParser``; an engine's tool parsing switched off, a family
    machine in its reasoning-alone reading); None: the pair needs no such first machine."""
    reasoning_parser, tool_parser = served_pair(reasoning_parser, tool_parser)
    own, tool = reasoning_record(reasoning_parser), tool_record(tool_parser)
    if (own is not None and own.machine in (Machine.ENGINE, Machine.FAMILY)
            and tool is not None and own.family != tool.family):
        return own.reasoning_config
    return None


def engine_mode(reasoning_parser: str | None, tool_parser: str | None) -> str | None:
    """What the parser engine reads for these parsers: both (one family), the tools alone
    (an engine tool parser without its family's reasoning parser: think tags are text) or
    the reasoning alone (an engine reasoning parser without a tool parser: tool tags are
    text), or the tools after another family's reasoning parser (``FOREIGN``: as the tools
    alone, but a config's ``held_end`` is read); None: the engine is not used."""
    reasoning_parser, tool_parser = served_pair(reasoning_parser, tool_parser)
    own, tool = reasoning_record(reasoning_parser), tool_record(tool_parser)
    engine_reasoning = own is not None and own.machine is Machine.ENGINE
    if tool is not None and tool.machine is Machine.ENGINE:
        if engine_reasoning and own is not None and own.family == tool.family:
            return BOTH
        return FOREIGN if reasoning_parser is not None else TOOLS
    if engine_reasoning and tool_parser is None:
        return REASONING_ONLY
    return None


@dataclass(frozen=True, slots=True)
class ParserSettings:
    """What the model's parsers and the request's tool settings ask for."""

    reasoning: ReasoningFormat | None
    thinking: bool
    """``enable_thinking`` from the template kwargs (docs/vllm-compat/api.md §7.2)."""
    tool_format: str | None
    """The tool-call format parsing the output; None when tool calls are not parsed (no tool
    parser, no ``tools``, or ``tool_choice`` "none" unless its record's ``under_none``)."""
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
    (``WithoutTools.AS_CALLED``)."""
    force_content: bool = False
    """The template kwargs force content (``force_nonempty_content`` true or
    ``enable_thinking`` false), for reasoning formats that swap (nemotron_v3)."""
    engine_thinking: bool = False
    """An engine format reading reasoning: thinking is on for the request (the output starts
    in reasoning)."""
    engine_mode: str = BOTH
    """What an engine format reads (``engine_mode``)."""
    front: str | None = None
    """An engine record reading the reasoning before ``tool_format`` reads the content
    (``front``: an engine format's reasoning parser with another family's tool parser)."""
    template: Any = None
    """Response-template formats: the model's checked template."""
    template_reasoning: bool = False
    """Response-template formats: its reasoning parser is named (thinking is reasoning)."""
    template_tools: bool = False
    """Response-template formats: calls are read (else their text is content)."""
    tool_mode: int = 0
    """The request's mode of a tool format with a ``ToolRecord.mode`` (its state carries it)."""
    reasoning_mode: int = 0
    """The request's mode of a reasoning format with ``ReasoningRecord.mode`` (its state
    carries it)."""

    @property
    def spelling(self) -> Mapping[str, str]:
        """``spell`` as a table, one per vocabulary: built once, then the same (read-only)
        table on every call (the tuple is the vocabulary's, ``Vocabulary.spellings``)."""
        return spelling_table(self.spell)

    @property
    def tools(self) -> bool:
        """Tool calls are parsed at all."""
        return self.tool_format is not None

    def tool_context(self) -> ToolContext:
        return ToolContext(self.forced_name, self.forced and not self.named, self.spelling,
                           self.request_tools, self.keep_calls or self.as_called,
                           self.template, self.template_reasoning, self.template_tools)


@dataclass(frozen=True, slots=True)
class ParserState:
    reasoning: ReasoningState | None
    tools: ToolState | None
    """The tool-call format's state."""
    calls_kept: bool = False
    """A kept tool call was emitted (finish_reason becomes "tool_calls")."""
    harmony: HarmonyState | None = None
    """The Harmony machine's state (gpt-oss models; then the other two are None)."""
    tool_tag: int | None = None
    """The tag of the format ``tools`` belongs to (its record's): the stream state stores it,
    and a state is only ever read by that format."""
    front: ToolState | None = None
    """The state of the engine reading the reasoning first (``ParserSettings.front``)."""
    front_tag: int | None = None


def template_kwargs(request: ChatRequest) -> dict[str, Any]:
    """The template kwargs vLLM's parsers see: the request's, with ``enable_thinking`` from a
    top-level ``reasoning_effort`` ("none": false) unless they set it, and that effort as sent
    under ``registry.REQUEST_EFFORT``."""
    kwargs = dict(request.chat_template_kwargs or {})
    effort = request.reasoning_effort
    if effort is not None and effort != "auto" and "enable_thinking" not in kwargs:
        kwargs["enable_thinking"] = effort != "none"
    if effort is not None:
        kwargs[REQUEST_EFFORT] = effort  # as sent, for a switch of its own (hy_v3)
    return kwargs


def v3_thinking(request: ChatRequest) -> bool:
    """``deepseek_v3``: thinking only when the kwargs' ``thinking`` or ``enable_thinking`` is
    truthy."""
    return reasoning.v3_switch(template_kwargs(request))


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


@dataclass(frozen=True, slots=True)
class _Pair:
    """What a model's parsers decide before any request, read from their records once."""

    tool: ToolRecord | None
    own: ReasoningRecord | None
    harmony: bool
    engine_reasoning: bool
    mode: str | None
    fmt: ReasoningFormat | None
    switch: Callable[[dict[str, Any]], bool] | None
    older_grammar: Callable[[Callable[[str], bool]], bool] | None
    front: str | None
    tool_mode: Callable[[dict[str, Any]], int] | None
    reasoning_mode: Callable[[dict[str, Any]], int] | None


@functools.cache
def _pair(reasoning_parser: str | None, tool_parser: str | None) -> _Pair:
    reasoning_parser, tool_parser = served_pair(reasoning_parser, tool_parser)
    tool, own = tool_record(tool_parser), reasoning_record(reasoning_parser)
    engine_reasoning = own is not None and own.machine is Machine.ENGINE
    return _Pair(
        tool, own, Machine.HARMONY in (tool and tool.machine, own and own.machine),
        engine_reasoning, engine_mode(reasoning_parser, tool_parser),
        reasoning_format(own.name) if own is not None and own.format is not None else None,
        own.switch.load() if own is not None and own.thinking is Thinking.KWARGS
        and own.switch is not None else None,
        tool.older_grammar.load() if tool is not None and tool.older_grammar else None,
        front(reasoning_parser, tool_parser),
        tool.mode.load() if tool is not None and tool.mode is not None else None,
        own.mode.load() if own is not None and own.mode is not None else None)


def parser_settings(reasoning_parser: str | None, tool_parser: str | None,
                    request: ChatRequest, vocab: Vocabulary, template: Any = None
                    ) -> ParserSettings:
    """``template``: the model's checked ``response_template`` (response-template formats)."""
    pair = _pair(reasoning_parser, tool_parser)
    tool, own = pair.tool, pair.own
    if Machine.TEMPLATE in (tool and tool.machine, own and own.machine):
        return _template_settings(tool, own, request, template)
    tool_parser = None if tool is None else tool.name
    choice: Any = request.tool_choice
    named = isinstance(choice, dict)
    forced = named or choice == "required"
    if pair.harmony:
        return ParserSettings(
            reasoning=None, thinking=True, tool_format=tool_parser,
            keep_calls=forced or (choice == "auto" and tool_parser is not None
                                  and bool(request.tools)),
            forced=forced, named=named, forced_name=None,
            parallel=request.parallel_tool_calls is not False,
            include_reasoning=request.include_reasoning, harmony=True)
    legacy = own is not None and own.legacy  # the tool parser reads only what may be called
    under_none = tool is not None and tool.under_none and not legacy and not (
        pair.older_grammar is not None
        and pair.older_grammar(lambda m: vocab.token_id(m) is not None))
    tools = (tool is not None
             and (bool(request.tools)
                  or (tool.without_tools is WithoutTools.DROPPED and not legacy))
             and (choice != "none" or under_none))
    as_called = (tool is not None and tool.without_tools is WithoutTools.AS_CALLED
                 and not request.tools and not legacy)
    tools = tools or as_called or (pair.front is not None and own is not None
                                   and own.foreign_tools_read_all)
    keep = forced or (choice == "auto" and tools and bool(request.tools))
    engine_reasoning, mode = pair.engine_reasoning, pair.mode
    if tool is not None and tool.reads is Reads.WITH_CALLS:
        keep = tools and (forced or choice == "auto")
    elif tool is not None and tool.reads is Reads.EVERY_OUTPUT and not legacy:
        # the engine reads every output: without tools its calls are dropped, under "none"
        # hidden with their markup (after a legacy reasoning parser it reads only what may be
        # called, as every tool parser: vLLM's _engine_based is false; 9838, 9840)
        tools, keep = True, bool(request.tools) and (forced or choice == "auto")
    first = pair.front if tools else None
    if (mode == REASONING_ONLY or (pair.front and first is None)) and own is not None:
        # the engine reads the reasoning alone (and with another family's tool parser when
        # that reads nothing: its front machine is all there is)
        tool_parser, tools, keep, mode = own.reasoning_config, True, False, REASONING_ONLY
    elif own is not None and own.machine is Machine.FAMILY and tool is None:
        tool_parser, tools, keep = own.reasoning_config, True, False  # alone: nothing called
    fmt = pair.fmt
    on = (pair.switch(template_kwargs(request)) if pair.switch is not None
          else template_thinking(request))
    thinking = on if engine_reasoning else (
        reasoning.switched_on(fmt, request.chat_template_kwargs or {}, on) if fmt else on)
    engine_thinking = engine_reasoning and thinking
    kwargs = template_kwargs(request) if pair.tool_mode or pair.reasoning_mode else {}
    reasoning_mode = pair.reasoning_mode(kwargs) if pair.reasoning_mode else 0
    tool_mode = pair.tool_mode(kwargs) if pair.tool_mode and tools else 0  # (vLLM: when read)
    reader = tool_record(tool_parser)
    if reader is not None and reader.alone_mode and (own is None or own.family != reader.family):
        tool_mode = reader.alone_mode  # without its family's reasoning parser
    if mode in (TOOLS, FOREIGN) and tool is not None and tools:
        # the tools alone (or after another family's reasoning parser, 9834) read think markers
        switch = engine_config(tool.name).tools_think
        engine_thinking = switch is not None and switch(template_kwargs(request))
    return ParserSettings(
        reasoning=fmt, thinking=template_thinking(request) if engine_reasoning else thinking,
        tool_format=tool_parser if tools else None,
        keep_calls=keep, forced=forced,
        named=named, forced_name=(choice.get("function") or {}).get("name") if named else None,
        parallel=request.parallel_tool_calls is not False,
        include_reasoning=request.include_reasoning,
        spell=vocab.spellings(MARKUP),
        request_tools=tuple(request.tools or ()) if tools else (),
        force_content=forces_content(request), as_called=as_called,
        engine_thinking=engine_thinking,
        engine_mode=mode or BOTH,
        front=first,
        tool_mode=tool_mode, reasoning_mode=reasoning_mode,
    )


def _template_settings(tool: ToolRecord | None, own: ReasoningRecord | None,
                       request: ChatRequest, template: Any) -> ParserSettings:
    """A response-template format (vLLM's ``ResponseTemplateParser``): one machine reads
    reasoning, content and calls whichever of its parsers is named. Calls are read unless
    there is no tool parser or ``tool_choice`` is "none" (then a call's text is content), and
    returned for "required", a named tool, or "auto" with ``tools`` (vLLM's
    ``keeps_tool_calls``); the reasoning is read only with the reasoning parser named (else
    the thinking is content)."""
    choice: Any = request.tool_choice
    named = isinstance(choice, dict)
    forced = named or choice == "required"
    reads = tool is not None and choice != "none"
    name = tool.name if tool is not None else own.reasoning_config if own else None
    return ParserSettings(
        reasoning=None, thinking=template_thinking(request), tool_format=name,
        keep_calls=reads and (forced or (choice == "auto" and bool(request.tools))),
        forced=forced, named=named,
        forced_name=(choice.get("function") or {}).get("name") if named else None,
        parallel=request.parallel_tool_calls is not False,
        include_reasoning=request.include_reasoning,
        request_tools=tuple(request.tools or ()) if reads else (),
        template=template, template_reasoning=own is not None, template_tools=reads)


def forces_content(request: ChatRequest) -> bool:
    """nemotron_v3's ``_should_force_content``: the template kwargs as sent."""
    kwargs = request.chat_template_kwargs or {}
    return kwargs.get("enable_thinking") is False or kwargs.get("force_nonempty_content") is True


def start(settings: ParserSettings, vocab: Vocabulary, prompt_ids: Sequence[int] | None
          ) -> ParserState:
    if settings.harmony:
        return ParserState(None, None, harmony=_harmony().HarmonyState())
    fmt = settings.reasoning
    tools: ToolState | None = None
    tool = tool_record(settings.tool_format)
    if tool is not None and tool.machine is Machine.TEMPLATE:
        from derender.core.parsers.formats import response_template  # noqa: PLC0415
        prompt = vocab.text_view(False, False).decode(list(prompt_ids or ()))
        tools = response_template.start(settings.template, prompt)
    elif tool is not None and tool.machine is Machine.ENGINE:
        from derender.core.parsers import engine  # noqa: PLC0415 (only when served)
        tools = engine.start(tool_format(tool.name), engine_config(tool.name),
                             settings.engine_thinking, settings.engine_mode)
    elif tool is not None:
        machine = tool_format(tool.name)
        tools = machine.start() if machine.start_in is None else machine.start_in(
            settings.tool_mode)
    first: ToolState | None = None
    front_record = tool_record(settings.front)
    if front_record is not None and front_record.machine is Machine.ENGINE:
        from derender.core.parsers import engine  # noqa: PLC0415 (only when served)
        first = engine.start(tool_format(front_record.name), engine_config(front_record.name),
                             settings.engine_thinking, REASONING_ONLY)
    elif front_record is not None:  # a family machine reading its reasoning alone
        first = tool_format(front_record.name).start()
    return ParserState(
        reasoning=None if fmt is None else reasoning.start(fmt, vocab, prompt_ids,
                                                           settings.thinking,
                                                           settings.force_content,
                                                           settings.reasoning_mode),
        tools=tools, tool_tag=None if tools is None or tool is None else tool.tag,
        front=first, front_tag=None if settings.front is None else tag_of(settings.front),
    )


def step(settings: ParserSettings, state: ParserState, vocab: Vocabulary, text: str,
         ids: Sequence[int], final: bool) -> tuple[ParsedDelta, ParserState]:
    """Reasoning, content and tool-call deltas of an output's next part: its text (decoded
    with ``marked(vocab)``) or, for Harmony, its token ids."""
    if not settings.harmony:
        return feed(settings, state, text, final)
    if state.harmony is None:
        raise BadRequestError(OTHER_FORMAT)
    harmony = _harmony()
    tool = tool_record(settings.tool_format)
    delta, machine = harmony.feed(state.harmony, tool is not None
                                  and tool.machine is Machine.HARMONY,
                                  harmony.tokens(vocab), ids, final)
    calls = _kept(settings, delta.calls)
    reasoning = delta.reasoning if settings.include_reasoning else ""
    return (ParsedDelta(reasoning, delta.content, calls),
            ParserState(None, None, state.calls_kept or bool(calls), machine))


def _kept(settings: ParserSettings, calls: list[ToolCallDelta]) -> list[ToolCallDelta]:
    """The calls the request keeps (docs/vllm-compat/api.md §7.1: ``tool_choice``,
    ``parallel_tool_calls``)."""
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
    first = state.front
    if settings.front is not None:  # the engine reads the reasoning, the rest is content
        engine = tool_format(settings.front)
        if (first is None or state.front_tag != tag_of(settings.front)
                or engine.feed_reasoning is None or not isinstance(first, engine.state_type)):
            raise BadRequestError(OTHER_FORMAT)
        # (a family machine reads as its reasoning parser alone: no call kept)
        keep = tool_record(settings.front).machine is Machine.ENGINE  # type: ignore[union-attr]
        thought, content, _, first = engine.feed_reasoning(first, text, final,
                                                           ToolContext(spell=spell, keep=keep))
    elif first is not None:
        raise BadRequestError(OTHER_FORMAT)
    reasoning_state = state.reasoning
    if (settings.reasoning is not None and reasoning_state is not None and reasoning_state.mode
            >= max(1, len(settings.reasoning.modes))):
        raise BadRequestError(OTHER_FORMAT)  # a mode this format does not have
    if settings.reasoning is not None and reasoning_state is not None:
        split, reasoning_state = reasoning.feed(settings.reasoning, reasoning_state, text, final,
                                                spell)
        thought, content = split.reasoning, split.content
    calls: list[ToolCallDelta] = []
    tool_state = state.tools
    if tool_state is not None:
        tool = tool_record(settings.tool_format)
        if tool is None or tool.tag is None or state.tool_tag != tool.tag:
            raise BadRequestError(OTHER_FORMAT)
        fmt = tool_format(tool.name)
        if fmt.feed_reasoning is not None:  # the engine: reasoning and calls
            if not isinstance(tool_state, fmt.state_type):
                raise BadRequestError(OTHER_FORMAT)
            more, content, calls, tool_state = fmt.feed_reasoning(
                tool_state, content, final, settings.tool_context())
            thought += more
        else:
            content, calls, tool_state = fmt.step(tool_state, content, final,
                                                  settings.tool_context())
        calls = _kept(settings, calls)
    calls = [ToolCallDelta(c.index, None if c.name is None else restore(c.name),
                           restore(c.arguments), c.id) for c in calls]
    thought, content = restore(thought), restore(content)
    if (reasoning_state is not None and settings.reasoning is not None
            and settings.reasoning.recovers_newlines):
        thought, content, reasoning_state = _recover(reasoning_state, thought, content,
                                                     bool(content or calls), final)
    delta = ParsedDelta(thought if settings.include_reasoning else "", content, calls)
    return delta, ParserState(reasoning_state, tool_state, state.calls_kept or bool(calls),
                              tool_tag=state.tool_tag if tool_state is not None else None,
                              front=first, front_tag=state.front_tag if first is not None else None)


def _recover(state: ReasoningState, thought: str, content: str, ended: bool, final: bool
             ) -> tuple[str, str, ReasoningState]:
    """minicpmv (vLLM's ``MiniCPMVOutputNormalizer``): escapes recovered in the reasoning
    (settled once content or calls follow) and in the content."""
    from derender.core.parsers.escapes import recover  # noqa: PLC0415 (only for minicpmv)
    rc, rp, cc, cp = state.escapes
    thought, rc, rp = recover(rc, rp, thought, final or ended)
    content, cc, cp = recover(cc, cp, content, final)
    return thought, content, replace(state, escapes=(rc, rp, cc, cp))


def tool_call_id(request_id: str, choice_index: int, call_index: int,
                 tool_format: str | None = None) -> str:
    """Deterministic id: the same across retries and between streaming and non-streaming."""
    tool = tool_record(tool_format)
    if tool is not None and tool.call_id is not None:
        own: str = tool.call_id.load()(request_id, choice_index, call_index)
        return own
    digest = hashlib.sha256(f"{request_id}\x00{choice_index}\x00{call_index}".encode()).hexdigest()
    return f"chatcmpl-tool-{digest[:16]}"


def blank_content(settings: ParserSettings, state: ParserState) -> bool:
    """Whether a whole output's blank content is ``""`` rather than null (its tool format's
    ``ToolFormat.blank_content``, read from the state after the output)."""
    tool = tool_record(settings.tool_format)
    if tool is None or tool.machine is not Machine.OWN or state.tools is None:
        return False
    fmt = tool_format(tool.name)
    return (fmt.blank_content is not None and isinstance(state.tools, fmt.state_type)
            and fmt.blank_content(state.tools))


def finish_reason(settings: ParserSettings, finish: str | None, has_calls: bool) -> str | None:
    """docs/vllm-compat/api.md §5.7: a "stop" that produced tool calls is "tool_calls" (not
    for a named tool)."""
    if finish == "stop" and has_calls and not settings.named:
        return "tool_calls"
    return finish
