"""Every reasoning and tool-call format as one frozen record: its names, its stream-state tag,
the markers it adds to the marked vocabulary, its policies and where its machine is.

Data only: this module imports no format module. A record names its machine by module and
attribute (``Ref``), imported on first use (``Ref.load``), so a process imports the modules
of the formats its models use and no others. Adding a format is its module and one record
here. Checked at import, naming both formats on a clash: names and aliases unique, tags
unique, each marker one index and each index one marker, the indices 0…n-1.

A marker's *stand-in* is ``STAND_IN + index`` (``core/decoding/vocab.py``): the marked
vocabulary decodes a single-token marker to it, and stream states hold it inside held text,
so an index, once given, never changes (``tests/test_format_registry.py`` pins them against
states issued before this module existed).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

# what the parser engine reads (``engine_mode``)
BOTH, TOOLS, REASONING_ONLY, FOREIGN = "both", "tools", "reasoning", "foreign"
"""vLLM serves an engine format as both parsers, as the tool parser alone, or as the
reasoning parser alone; ``FOREIGN``: as the tool parser after another family's reasoning
parser, which reads the think tags first."""


REQUEST_EFFORT = "\x00reasoning_effort"
"""The key under which ``parsers.template_kwargs`` adds the request's top-level
``reasoning_effort`` (as sent) for a switch that reads it apart from the template's
(``hy_v3``); no template kwarg can be spelled so by accident."""


@dataclass(frozen=True, slots=True)
class Ref:
    """An object of a format module, named so that nothing is imported until it is used."""

    module: str
    attr: str
    key: str | None = None
    """The object is ``getattr(module, attr)[key]`` (a table's entry)."""

    def load(self) -> Any:
        """The object (its module imported on first use; kept, so later loads cost a lookup)."""
        value = _LOADED.get(self)
        if value is None:
            value = getattr(importlib.import_module(self.module), self.attr)
            value = _LOADED.setdefault(self, value if self.key is None else value[self.key])
        return value


_LOADED: dict[Ref, Any] = {}


@dataclass(frozen=True, slots=True)
class Marker:
    """A marker of the marked vocabulary: its text and its index (its stand-in's offset)."""

    index: int
    text: str


class Machine(Enum):
    """What reads a format."""

    OWN = "own"
    """Its own incremental machine (``tools.ToolFormat``; for reasoning, ``ReasoningFormat``
    data read by ``reasoning.py``)."""
    ENGINE = "engine"
    """The parser engine (``engine.py``) with the format's ``EngineConfig``."""
    HARMONY = "harmony"
    """The Harmony machine, from token ids (gpt-oss models only)."""
    TEMPLATE = "template"
    """The response-template machine (``formats/response_template.py``) reading the model's
    own ``response_template``: reasoning, content and calls at once, whichever of the
    family's parsers is named (vLLM's ``ResponseTemplateParser``)."""
    FAMILY = "family"
    """Reasoning read by its family's tool-call machine (``ToolFormat.feed_reasoning``),
    with that tool parser or alone (its record's ``reasoning_config`` names the tool format);
    with another family's tool parser, that machine reads first (``parsers.front``) unless
    the record ``stands_for_tools``."""


class WithoutTools(Enum):
    """What vLLM 0.33 does with the format's calls when the request has no ``tools``."""

    CONTENT = "content"
    """Not parsed: the output is content (hermes 1518, llama3_json 1546, pythonic 1548,
    deepseek_v3 1550, deepseek_v31 1552, openai 327)."""
    AS_CALLED = "as called"
    """Parsed and dropped with their markup, the text around them read as when calls are
    returned (qwen3_coder 1524; mistral, both grammars, 1530, 1534; mimo, seed_oss 951,
    1009; step3p5 is qwen3_coder, 895)."""
    DROPPED = "dropped"
    """Read and dropped, the content read as with calls not kept
    (docs/recording-issue14.md, 1113, 1195)."""


class Reads(Enum):
    """Which outputs the tool parser reads."""

    ON_REQUEST = "on request"
    """As the request asks (``tools``, ``tool_choice``) and the record's policies say."""
    EVERY_OUTPUT = "every output"
    """Every output (the engine formats): without ``tools`` the calls are dropped, under
    ``tool_choice`` "none" hidden with their markup."""
    WITH_CALLS = "with calls"
    """Only when calls may be returned (``tools`` given, ``tool_choice`` not "none"): else the
    markup stays in the content (minimax_m3 [811, 817])."""


@dataclass(frozen=True, slots=True)
class ToolRecord:
    """A tool-call format, as vLLM's ``--tool-call-parser`` names it."""

    name: str
    tag: int | None
    """Its code in the stream state (never reused; None: Harmony, whose state has its own)."""
    machine: Machine
    format: Ref | None
    """The ``tools.ToolFormat`` (None: Harmony)."""
    config: Ref | None = None
    """``Machine.ENGINE``: the ``engine.EngineConfig``."""
    aliases: tuple[str, ...] = ()
    """Other parser names for this format: the same machine, states and tag."""
    markers: tuple[Marker, ...] = ()
    """The markers it matches as single tokens (added to the marked vocabulary)."""
    under_none: bool = False
    """Calls are still parsed under ``tool_choice`` "none" (dropped with their markup)."""
    older_grammar: Ref | None = None
    """A test of the vocabulary (``has_token(marker) -> bool``) saying the model writes an
    older grammar, whose output is content under "none" (mistral without ``[ARGS]``)."""
    without_tools: WithoutTools = WithoutTools.CONTENT
    reads: Reads = Reads.ON_REQUEST
    call_id: Ref | None = None
    """``(request_id, choice_index, call_index) -> id`` for calls in the model's own id form
    (else ``chatcmpl-tool-…``)."""
    family: str = ""
    """Engine formats: the family whose reasoning parser the same machine reads (pairing)."""
    alone_mode: int = 0
    """A format whose machine reads its family's reasoning too (``ToolFormat.feed_reasoning``):
    the mode its ``ToolFormat.start_in`` starts in when it reads without its family's
    reasoning parser (alone, or after another family's), as vLLM's tool parser then reads the
    output (``muse``, ``muse_glimmer``: every channel, the reasoning dropped); 0: as with
    it."""
    reasoning_from: tuple[str, ...] = ()
    """The only reasoning parsers vLLM accepts before this tool parser (besides none); empty:
    any. vLLM's ``CohereCommandParser`` asserts that a reasoning parser named with it is
    Cohere's (``ParserManager.validate_parser_tokenizer`` refuses the pair at start-up)."""
    mode: Ref | None = None
    """A format the request puts in one of its modes: ``(template kwargs) -> int`` (refusing
    a value it does not know with ``BadRequestError``), the mode its ``ToolFormat.start_in``
    starts in (k2_horizon's ``tool_call_format``)."""

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


class Thinking(Enum):
    """How a reasoning parser learns whether thinking is on."""

    TEMPLATE = "template"
    """``enable_thinking`` as the chat template saw it (else from ``reasoning_effort``, else
    on), then the format's own ``switch`` (``ReasoningFormat.switch``)."""
    KWARGS = "kwargs"
    """The record's ``switch`` applied to the template kwargs (``parsers.template_kwargs``)."""


@dataclass(frozen=True, slots=True)
class ReasoningRecord:
    """A reasoning format, as vLLM's ``--reasoning-parser`` names it."""

    name: str
    machine: Machine
    format: Ref | None = None
    """``Machine.OWN``: the ``reasoning.ReasoningFormat``."""
    thinking: Thinking = Thinking.TEMPLATE
    switch: Ref | None = None
    """``Thinking.KWARGS``: ``(template kwargs) -> bool``."""
    family: str = ""
    """``Machine.ENGINE``: the family of tool formats whose machine reads it (with one of them
    it is read by that machine; alone, by the family's engine config, ``reasoning_config``)."""
    reasoning_config: str = ""
    """``Machine.ENGINE``: the tool format whose engine config reads it when served alone."""
    aliases: tuple[str, ...] = ()
    markers: tuple[Marker, ...] = ()
    legacy: bool = False
    """vLLM's parser is not engine-based (``engine_based_streaming`` false): paired with it, a
    tool parser reads calls only when they may be returned (``tools`` given, ``tool_choice``
    not "none"), whatever its ``under_none`` and ``without_tools`` (vLLM's ``_engine_based``
    in ``parser/abstract_parser.py``; step5 4646, 4652)."""
    stands_for_tools: bool = False
    """``Machine.FAMILY``: with another family's tool parser, vLLM still reads the whole
    output with this family's parser, its calls included (the tool parser named only lets
    calls be returned: ``CohereCommandParser``), so derender reads the pair as this parser
    with its family's tool parser (``reasoning_config``). Else (``muse``) this format's
    machine reads the reasoning alone first and the other tool parser the content it leaves,
    as vLLM's ``DelegatingParser`` does."""
    foreign_tools_read_all: bool = False
    """Paired with another family's tool parser, that parser reads every output: without
    ``tools`` or under ``tool_choice`` "none" its calls are dropped and its content kept
    (vLLM's ``KimiK3Parser._extract_tool_calls``; recordings 8320, 8322)."""
    mode: Ref | None = None
    """``Machine.OWN`` formats with ``ReasoningFormat.modes``: ``(template kwargs) -> int``
    (refusing a value it does not know with ``BadRequestError``), the request's mode
    (k2_horizon's ``reasoning_effort``), which the reasoning state carries."""

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


# markers (a new one takes the next index; none is ever renumbered)

THINK, END_THINK = Marker(0, "<think>"), Marker(1, "</think>")
TOOL_CALL, END_TOOL_CALL = Marker(2, "<tool_call>"), Marker(3, "</tool_call>")
CHATML = (Marker(4, "<|im_start|>"), Marker(5, "<|im_end|>"))
PYTHON_TAG = Marker(6, "<|python_tag|>")
MISTRAL_CALLS = (Marker(7, "[TOOL_CALLS]"), Marker(8, "[ARGS]"))
MISTRAL_THINK = (Marker(9, "[THINK]"), Marker(10, "[/THINK]"))
DEEPSEEK_CALLS = (Marker(11, "<｜tool▁calls▁begin｜>"), Marker(12, "<｜tool▁calls▁end｜>"),
                  Marker(13, "<｜tool▁call▁begin｜>"), Marker(14, "<｜tool▁call▁end｜>"),
                  Marker(15, "<｜tool▁sep｜>"))
DSML = Marker(16, "｜DSML｜")
GLM_ARGS = (Marker(17, "<arg_key>"), Marker(18, "</arg_key>"), Marker(19, "<arg_value>"),
            Marker(20, "</arg_value>"))
KIMI_CALLS = (Marker(21, "<|tool_calls_section_begin|>"), Marker(22, "<|tool_calls_section_end|>"),
              Marker(23, "<|tool_call_begin|>"), Marker(24, "<|tool_call_end|>"),
              Marker(25, "<|tool_call_argument_begin|>"))
GEMMA4_CALLS = (Marker(26, "<|tool_call>"), Marker(27, "<tool_call|>"), Marker(28, '<|"|>'))
GEMMA4_CHANNEL = (Marker(29, "<|channel>"), Marker(30, "<channel|>"))
MINIMAX_M3_NS = Marker(31, "]<]minimax[>[")
MINIMAX_M3_THINK = (Marker(32, "<mm:think>"), Marker(33, "</mm:think>"))
# Hy3's call markers
HY3_CALLS = (Marker(34, "<tool_calls>"), Marker(35, "</tool_calls>"), Marker(36, "<tool_sep>"))
# JSON calls in a wrapper: Jamba's <tool_calls> is Hy3's marker, then InternLM2's and GigaChat 3's
JAMBA_CALLS = HY3_CALLS[0]
INTERNLM_ACTION = (Marker(37, "<|action_start|>"), Marker(38, "<|plugin|>"),
                   Marker(39, "<|action_end|>"))
GIGACHAT3_MARKERS = (Marker(40, "<|message_sep|>"), Marker(41, "<|role_sep|>"),
                     Marker(42, "<|function_call|>"))
# glm2: Tencent Hy4's markers, suffixed per checkpoint (the one served: formats/hy.py HY4_SUFFIX)
HY4_THINK = (Marker(43, "<think:opensource>"), Marker(44, "</think:opensource>"))
HY4_CALLS = (Marker(45, "<tool_calls:opensource>"), Marker(46, "</tool_calls:opensource>"),
             Marker(47, "<tool_call:opensource>"), Marker(48, "</tool_call:opensource>"),
             Marker(49, "<arg_key:opensource>"), Marker(50, "</arg_key:opensource>"),
             Marker(51, "<arg_value:opensource>"), Marker(52, "</arg_value:opensource>"))
# kimi3 (issue 20): Kimi K3's XTML tag tokens
KIMI_K3_XTML = (Marker(53, "<|open|>"), Marker(54, "<|close|>"), Marker(55, "<|sep|>"))
# Muse Spark's channel framing
MUSE_FRAMING = (Marker(56, "<|start|>"), Marker(57, "<|message|>"), Marker(58, "<|eom|>"),
                Marker(59, "<|eot|>"))
# wrapped2 (ERNIE 4.5): the answer markers of its content
ERNIE45_RESPONSE = (Marker(60, "<response>"), Marker(61, "</response>"))
# qwen3x (issue 19): Step 3's call markers
STEP3_CALLS = (Marker(62, "<｜tool_calls_begin｜>"), Marker(63, "<｜tool_calls_end｜>"),
               Marker(64, "<｜tool_call_begin｜>"), Marker(65, "<｜tool_call_end｜>"),
               Marker(66, "<｜tool_sep｜>"))
# Apertus' tool block markers
APERTUS_TOOLS = (Marker(67, "<|tools_prefix|>"), Marker(68, "<|tools_suffix|>"))
# K2 Horizon's IFM markers (issue 19)
K2H_THINK = (Marker(69, "<ifm|think>"), Marker(70, "</ifm|think>"),
             Marker(71, "<ifm|think_fast>"), Marker(72, "</ifm|think_fast>"),
             Marker(73, "<ifm|think_faster>"), Marker(74, "</ifm|think_faster>"))
K2H_CALLS = (Marker(75, "<ifm|tool_calls>"), Marker(76, "</ifm|tool_calls>"),
             Marker(77, "<ifm|tool_call>"), Marker(78, "</ifm|tool_call>"),
             Marker(79, "<ifm|arg_key>"), Marker(80, "</ifm|arg_key>"),
             Marker(81, "<ifm|arg_type>"), Marker(82, "</ifm|arg_type>"),
             Marker(83, "<ifm|arg_value>"), Marker(84, "</ifm|arg_value>"))
# Thinking Machines Inkling's block markers (issue 20)
INKLING_MARKERS = (Marker(85, "<|message_model|>"), Marker(86, "<|content_text|>"),
                   Marker(87, "<|content_thinking|>"), Marker(88, "<|content_invoke_tool_json|>"),
                   Marker(89, "<|content_invoke_tool_text|>"), Marker(90, "<|content_tool_error|>"),
                   Marker(91, "<|content_model_end_sampling|>"), Marker(92, "<|end_message|>"))
# Cohere Command A / Command 4's section markers (issue 20)
COHERE_CMD3 = (Marker(93, "<|START_THINKING|>"), Marker(94, "<|END_THINKING|>"),
               Marker(95, "<|START_RESPONSE|>"), Marker(96, "<|END_RESPONSE|>"),
               Marker(97, "<|START_ACTION|>"), Marker(98, "<|END_ACTION|>"))
COHERE_CMD4 = (*COHERE_CMD3, Marker(99, "<|START_TEXT|>"), Marker(100, "<|END_TEXT|>"))
# dots: its call block's markers (issue 19)
DOTS_CALLS = (Marker(101, "<dots_function_call>"), Marker(102, "</dots_function_call>"))

QWEN3_TOOLS = (TOOL_CALL, END_TOOL_CALL)
QWEN3_REASONING = (THINK, END_THINK, TOOL_CALL, *CHATML)

_F = "derender.core.parsers.formats."
_REASONING = "derender.core.parsers.reasoning"


def _own(name: str, module: str, attr: str, tag: int, **policy: Any) -> ToolRecord:
    return ToolRecord(name, tag, Machine.OWN, Ref(_F + module, attr), **policy)


def _engine(name: str, module: str, attr: str, tag: int, family: str, **policy: Any
            ) -> ToolRecord:
    return ToolRecord(name, tag, Machine.ENGINE, Ref(_F + module, attr),
                      Ref(_F + module, attr + "_CONFIG"), family=family, **policy)


_AS_CALLED, _DROPPED = WithoutTools.AS_CALLED, WithoutTools.DROPPED
_EVERY = Reads.EVERY_OUTPUT
_COHERE = ("cohere_command3", "cohere_command4")

TOOL_RECORDS: tuple[ToolRecord, ...] = (
    _own("hermes", "hermes", "FORMAT", 0, aliases=("qwen3_json",), markers=QWEN3_TOOLS),
    # Granite 4.0's <tool_call> JSON, text around the calls kept (hermes' machine)
    _own("granite4", "hermes", "GRANITE4", 60, markers=QWEN3_TOOLS),
    # granite-20b-functioncalling's <function_call> JSON, no closing tag
    _own("granite-20b-fc", "hermes", "GRANITE_20B_FC", 61),
    # LongCat-Flash, hermes with <longcat_tool_call> tags
    _own("longcat", "hermes", "LONGCAT", 62),
    _own("llama3_json", "llama3_json", "FORMAT", 1, aliases=("llama4_json",),
         markers=(PYTHON_TAG,)),
    _own("pythonic", "pythonic", "FORMAT", 2),
    # the pythonic family's other names (state tags 70-79)
    _own("llama4_pythonic", "llama4_pythonic", "FORMAT", 70),
    _own("olmo3", "olmo3", "FORMAT", 71),
    _own("deepseek_v3", "deepseek", "V3", 20, markers=DEEPSEEK_CALLS),
    _own("deepseek_v31", "deepseek", "V31", 21, markers=DEEPSEEK_CALLS),
    _own("kimi_k2", "deepseek", "KIMI_K2", 22, markers=KIMI_CALLS, under_none=True,
         without_tools=_DROPPED),
    _own("mistral", "mistral", "FORMAT", 24, markers=MISTRAL_CALLS, under_none=True,
         older_grammar=Ref(_F + "mistral", "older_grammar"), without_tools=_AS_CALLED,
         call_id=Ref(_F + "mistral", "call_id")),
    # step3p5's calls are qwen3_coder's unchanged
    _own("qwen3_coder", "qwen3_coder", "FORMAT", 28, aliases=("qwen3_xml", "step3p5"),
         markers=QWEN3_TOOLS, under_none=True, without_tools=_AS_CALLED),
    _own("mimo", "qwen3_coder", "MIMO_FORMAT", 40, markers=QWEN3_TOOLS, under_none=True,
         without_tools=_AS_CALLED),
    _own("seed_oss", "qwen3_coder", "SEED_OSS_FORMAT", 41, under_none=True,
         without_tools=_AS_CALLED),
    # step5 is qwen3_coder's grammar with the content before calls kept as written
    _own("step5", "qwen3_coder", "STEP5_FORMAT", 100, markers=QWEN3_TOOLS, under_none=True,
         without_tools=_AS_CALLED),
    _own("gemma4", "gemma4", "FORMAT", 45, markers=GEMMA4_CALLS, under_none=True,
         without_tools=_DROPPED),
    # JSON calls in a wrapper (tags 80-89)
    _own("phi4_mini_json", "json_wrapped", "PHI4_FORMAT", 80),
    _own("jamba", "json_wrapped", "JAMBA_FORMAT", 81, markers=(JAMBA_CALLS,)),
    _own("internlm", "json_wrapped", "INTERNLM_FORMAT", 82, markers=INTERNLM_ACTION),
    _own("gigachat3", "json_wrapped", "GIGACHAT3_FORMAT", 83, markers=GIGACHAT3_MARKERS),
    # granite-inkling: Granite 3.x's JSON list after <tool_call> or <|tool_call|> (vLLM's
    # engine: calls read under "none" and without tools)
    _own("granite", "json_wrapped", "GRANITE_FORMAT", 110, markers=(TOOL_CALL,), under_none=True,
         without_tools=_AS_CALLED),
    _engine("deepseek_v32", "dsml", "V32", 50, "deepseek_v32", markers=(DSML,), reads=_EVERY),
    _engine("deepseek_v4", "dsml", "V4", 51, "deepseek_v4", markers=(DSML, THINK, END_THINK),
            reads=_EVERY),
    _engine("deepseek_v41", "dsml", "V41", 52, "deepseek_v41",
            markers=(DSML, THINK, END_THINK), reads=_EVERY),
    _engine("glm45", "glm", "GLM45", 53, "glm", markers=(THINK, END_THINK, *QWEN3_TOOLS,
                                                         *GLM_ARGS), reads=_EVERY),
    _engine("glm47", "glm", "GLM47", 54, "glm", markers=(THINK, END_THINK, *QWEN3_TOOLS,
                                                         *GLM_ARGS), reads=_EVERY),
    # Ling 3 (vLLM's Ling3Parser: GLM-4.7's engine config under its own class, so
    # its own family: its reasoning parser is read by this record's machine)
    _engine("ling3", "glm", "LING3", 90, "ling3", markers=(THINK, END_THINK, *QWEN3_TOOLS,
                                                           *GLM_ARGS), reads=_EVERY),
    # Tencent Hy3 (a legacy vLLM parser, read with GLM's argument grammar)
    _engine("hy_v3", "hy", "HY3", 91, "hy_v3", markers=(*HY3_CALLS, *QWEN3_TOOLS, *GLM_ARGS),
            reads=Reads.WITH_CALLS),
    _engine("minimax_m2", "minimax", "M2", 55, "minimax_m2", markers=(THINK, END_THINK),
            reads=_EVERY),
    _engine("minimax_m3", "minimax", "M3", 56, "minimax_m3", markers=(MINIMAX_M3_NS,),
            reads=Reads.WITH_CALLS),
    # kimi3 (issue 20): Kimi K3's XTML channels (tags 160-169), its own machine started as an
    # engine record's (the engine's pairing rules)
    _engine("kimi_k3", "kimi_k3", "FORMAT", 160, "kimi_k3", markers=KIMI_K3_XTML,
            reads=_EVERY),
    # Muse Spark's channels and ATEM calls (tag 170), read with its reasoning
    _own("muse", "muse", "FORMAT", 170, aliases=("musespark1x",), markers=MUSE_FRAMING,
         reads=_EVERY, family="muse", alone_mode=1),
    # PLaMo 3 (issue 19, tags 150-159)
    _engine("plamo3", "plamo3", "PLAMO3", 150, "plamo3", reads=_EVERY),
    # Cohere Command A / 4 read as vLLM's melody filters do (issue 20, tags 220-224); the
    # tool parser alone reads the reasoning too
    _own("cohere_command3", "cohere", "CMD3_FORMAT", 220, markers=COHERE_CMD3, reads=_EVERY,
         family="cohere_command3", reasoning_from=_COHERE),
    _own("cohere_command4", "cohere", "CMD4_FORMAT", 221, markers=COHERE_CMD4, reads=_EVERY,
         family="cohere_command4", reasoning_from=_COHERE),
    ToolRecord("openai", None, Machine.HARMONY, None),
    # glm2: Tencent Hy4 (Hy3's calls without <tool_sep>, read strictly: the block held whole)
    _own("hy_v4", "hy", "HY4", 140, markers=HY4_CALLS, reads=Reads.WITH_CALLS),
    # glm2: poolside Laguna (GLM-4's calls read by vLLM's regular expressions; calls held whole)
    _own("poolside_v1", "poolside", "FORMAT", 141, markers=(*QWEN3_TOOLS, *GLM_ARGS),
         reads=Reads.WITH_CALLS),
    # LFM2's pythonic list between special tokens (state tags 130-139)
    _own("lfm2", "lfm2", "FORMAT", 130),
    # FunctionGemma's call:NAME{key:<escape>value<escape>} between special tokens
    _own("functiongemma", "functiongemma", "FORMAT", 131),
    # Grammars read from the checkpoint's response_template (tags 180-189)
    ToolRecord("hf", 180, Machine.TEMPLATE, Ref(_F + "response_template", "FORMAT"),
               family="hf", without_tools=_DROPPED),
    # Beam's: hf's machine (vLLM's BeamParser adds only a grammar for generation), its own
    # family (vLLM refuses it with hf)
    ToolRecord("beam", 181, Machine.TEMPLATE, Ref(_F + "response_template", "BEAM"),
               family="beam", without_tools=_DROPPED),
    # wrapped2 (tags 120-129): ERNIE 4.5's <tool_call> JSON, each call read whole (hermes'
    # machine)
    _own("ernie45", "hermes", "ERNIE45", 120, markers=QWEN3_TOOLS),
    # <invoke>/JSON blocks in <dots_function_call>, held whole (tags 230-234)
    # (poolside_v1's machine)
    _own("dots", "poolside", "DOTS_FORMAT", 230, markers=DOTS_CALLS, reads=Reads.WITH_CALLS),
    # Hunyuan-A13B's <tool_calls>[…]</tool_calls> JSON list (json_wrapped's machine, as jamba)
    _own("hunyuan_a13b", "json_wrapped", "HUNYUAN_A13B_FORMAT", 121, markers=(JAMBA_CALLS,)),
    # qwen3x (issue 19, tags 195-199): Step 3's block held whole (Hy4's machine, formats/step3.py)
    _own("step3", "step3", "FORMAT", 195, markers=STEP3_CALLS),
    # Apertus' one-key call objects between <|tools_prefix|> and <|tools_suffix|>
    # (json_wrapped's machine, Wrapper.keyed; tags 190-194)
    _own("apertus", "json_wrapped", "APERTUS_FORMAT", 190, markers=APERTUS_TOOLS),
    # MiniCPM5's <function name="…"> XML calls, each held whole (poolside_v1's machine;
    # its tags are text of several ids; tags 200-204)
    _own("minicpm5", "minicpm5", "FORMAT", 200),
    # MBZUAI K2 Horizon's IFM group, held whole as Hy4's (hy.HeldBlock), in the request's
    # tool_call_format (issue 19, tags 205-209)
    _own("k2_horizon", "k2_horizon", "FORMAT", 205, markers=K2H_CALLS, reads=Reads.WITH_CALLS,
         mode=Ref(_F + "k2_horizon", "call_form")),
    # Inkling's typed blocks (issue 20, tags 215-219)
    _engine("inkling", "inkling", "INKLING", 215, "inkling", markers=INKLING_MARKERS,
            reads=_EVERY),
    # xlam2 (issue 19, tags 235-239): xLAM's JSON list, found where vLLM looks for it (a
    # fence, [TOOL_CALLS], <tool_call>, after </think>, or the whole output), held from its
    # opener to the end (formats/xlam.py)
    _own("xlam", "xlam", "FORMAT", 235),
    # Muse Glimmer's reading of Muse's channels (issue 20, tags 240-249), with its reasoning
    _own("muse_glimmer", "muse_glimmer", "FORMAT", 240, markers=MUSE_FRAMING, reads=_EVERY,
         family="muse_glimmer", alone_mode=1),
)
"""The tool-call formats."""


def _reasoning(name: str, markers: tuple[Marker, ...] = (), **how: Any) -> ReasoningRecord:
    return ReasoningRecord(name, Machine.OWN, Ref(_REASONING, "FORMATS", name), markers=markers,
                           **how)


def _engine_reasoning(name: str, family: str, config: str, module: str, switch: str
                      ) -> ReasoningRecord:
    return ReasoningRecord(name, Machine.ENGINE, thinking=Thinking.KWARGS,
                           switch=Ref(_F + module, switch), family=family,
                           reasoning_config=config, markers=(THINK, END_THINK))


REASONING_RECORDS: tuple[ReasoningRecord, ...] = (
    _reasoning("qwen3", QWEN3_REASONING),
    # vLLM registers step5's reasoning parser as DeepSeekR1ReasoningParser
    _reasoning("deepseek_r1", (THINK, END_THINK), aliases=("step5",), legacy=True),
    _reasoning("mimo", QWEN3_REASONING),
    _reasoning("step3p5", QWEN3_REASONING),
    _reasoning("seed_oss", CHATML),
    _reasoning("nemotron_v3", QWEN3_REASONING),
    # Granite 4.2 (granite-inkling): nemotron_v3's with the content's leading newlines dropped
    _reasoning("granite_thinking_parser", QWEN3_REASONING),
    _reasoning("deepseek_v3", (THINK, END_THINK), thinking=Thinking.KWARGS,
               switch=Ref(_REASONING, "v3_switch")),
    # holo2 is deepseek_v3's format, thinking on unless the kwargs say otherwise
    _reasoning("holo2", (THINK, END_THINK), thinking=Thinking.KWARGS,
               switch=Ref(_REASONING, "holo2_switch"), legacy=True),
    _reasoning("kimi_k2", (THINK, END_THINK, KIMI_CALLS[0])),
    _reasoning("minimax_m2_append_think"),
    _reasoning("minimax_m3", MINIMAX_M3_THINK, thinking=Thinking.KWARGS,
               switch=Ref(_F + "minimax", "m3_thinking")),
    _reasoning("mistral", (*MISTRAL_THINK, MISTRAL_CALLS[0])),
    # deepseek_r1's rules, switched by reasoning_effort
    _reasoning("hy_v3", (THINK, END_THINK), thinking=Thinking.KWARGS,
               switch=Ref(_F + "hy", "thinking")),
    _reasoning("olmo3", (THINK, END_THINK), legacy=True),
    # wrapped2: deepseek_r1's rules, the content's <response> answer read
    _reasoning("ernie45", (THINK, END_THINK, *ERNIE45_RESPONSE)),
    # wrapped2: Hunyuan-A13B's "<think>\n"…"\n</think>\n<answer>\n" (text, no marker)
    _reasoning("hunyuan_a13b"),
    ReasoningRecord("gemma4", Machine.OWN, Ref(_F + "gemma4", "REASONING"),
                    markers=(*GEMMA4_CHANNEL, GEMMA4_CALLS[0])),
    _engine_reasoning("deepseek_v4", "deepseek_v4", "deepseek_v4", "dsml", "thinking"),
    _engine_reasoning("deepseek_v41", "deepseek_v41", "deepseek_v41", "dsml", "thinking"),
    _engine_reasoning("glm45", "glm", "glm45", "glm", "thinking"),
    _engine_reasoning("glm47", "glm", "glm47", "glm", "thinking"),
    _engine_reasoning("ling3", "ling3", "ling3", "glm", "thinking"),
    _engine_reasoning("minimax_m2", "minimax_m2", "minimax_m2", "minimax", "m2_thinking"),
    # kimi3 (issue 20): read by kimi_k3's machine (with its tool parser, or alone)
    ReasoningRecord("kimi_k3", Machine.ENGINE, thinking=Thinking.KWARGS,
                    switch=Ref(_F + "kimi_k3", "thinking"), family="kimi_k3",
                    reasoning_config="kimi_k3", markers=KIMI_K3_XTML,
                    foreign_tools_read_all=True),
    # Read by the muse tool format's machine
    ReasoningRecord("muse", Machine.FAMILY, thinking=Thinking.KWARGS,
                    switch=Ref(_F + "muse", "thinking"), family="muse", reasoning_config="muse",
                    aliases=("musespark1x",), markers=MUSE_FRAMING),
    # PLaMo 3 (issue 19)
    _engine_reasoning("plamo3", "plamo3", "plamo3", "plamo3", "thinking"),
    # Read by its tool format's machine (with that tool parser, or alone)
    ReasoningRecord("cohere_command3", Machine.FAMILY, thinking=Thinking.KWARGS,
                    switch=Ref(_F + "cohere", "thinking"), family="cohere_command3",
                    reasoning_config="cohere_command3", markers=COHERE_CMD3,
                    stands_for_tools=True),
    ReasoningRecord("cohere_command4", Machine.FAMILY, thinking=Thinking.KWARGS,
                    switch=Ref(_F + "cohere", "thinking"), family="cohere_command4",
                    reasoning_config="cohere_command4", markers=COHERE_CMD4,
                    stands_for_tools=True),
    # MiniCPM-V: Qwen3's grammar (its calls: qwen3_coder's), newline escapes recovered
    _reasoning("minicpmv", (THINK, END_THINK, TOOL_CALL, CHATML[1])),
    # Step 3: a legacy parser, everything before the first </think> reasoning
    _reasoning("step3", (END_THINK,), legacy=True),
    ReasoningRecord("openai_gptoss", Machine.HARMONY),
    # glm2: Tencent Hy4, deepseek_r1's rules on its suffixed think markers unless
    # reasoning_effort is "no_think" (formats/hy.py thinking4)
    _reasoning("hy_v4", HY4_THINK, thinking=Thinking.KWARGS, switch=Ref(_F + "hy", "thinking4")),
    # glm2: poolside Laguna, deepseek_v3's reasoning (its prompt check scoped to the turn)
    _reasoning("poolside_v1", (THINK, END_THINK), thinking=Thinking.KWARGS,
               switch=Ref(_REASONING, "v3_switch")),
    # The response-template family (read by its tool record's machine)
    ReasoningRecord("hf", Machine.TEMPLATE, family="hf", reasoning_config="hf"),
    ReasoningRecord("beam", Machine.TEMPLATE, family="beam", reasoning_config="beam"),
    # IBM Granite 3.x's text markers, a legacy parser (issue 19)
    _reasoning("granite", legacy=True),
    # K2 Horizon, its think markers chosen by reasoning_effort (issue 19)
    _reasoning("k2_horizon", (*K2H_THINK, K2H_CALLS[0]),
               mode=Ref(_F + "k2_horizon", "effort")),
    # Read by the inkling tool format's machine (issue 20)
    ReasoningRecord("inkling", Machine.ENGINE, thinking=Thinking.KWARGS,
                    switch=Ref(_F + "inkling", "thinking"), family="inkling",
                    reasoning_config="inkling", markers=INKLING_MARKERS),
    # Read by the muse_glimmer tool format's machine (issue 20)
    ReasoningRecord("muse_glimmer", Machine.FAMILY, thinking=Thinking.KWARGS,
                    switch=Ref(_F + "muse", "thinking"), family="muse_glimmer",
                    reasoning_config="muse_glimmer", markers=MUSE_FRAMING),
)
"""The reasoning formats."""


def _by_name(records: Iterable[ToolRecord | ReasoningRecord], kind: str
             ) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for record in records:
        for name in record.names:
            if name in table:
                raise RuntimeError(f"{kind} parser name {name!r} is both {table[name].name!r}'s "
                                   f"and {record.name!r}'s")
            table[name] = record
    return table


TOOLS_BY_NAME: dict[str, ToolRecord] = _by_name(TOOL_RECORDS, "tool")
"""Every tool parser name (aliases included) → its record."""
REASONING_BY_NAME: dict[str, ReasoningRecord] = _by_name(REASONING_RECORDS, "reasoning")


def _by_tag(records: Iterable[ToolRecord]) -> dict[int, ToolRecord]:
    table: dict[int, ToolRecord] = {}
    for record in records:
        if record.tag is None:
            continue
        if record.tag in table:
            raise RuntimeError(f"tool formats {table[record.tag].name!r} and {record.name!r} "
                               f"share the state tag {record.tag}")
        table[record.tag] = record
    return table


TOOLS_BY_TAG: dict[int, ToolRecord] = _by_tag(TOOL_RECORDS)


def _markup(records: Iterable[ToolRecord | ReasoningRecord]) -> tuple[str, ...]:
    """The marker table by index, checked: one index per marker, one marker per index, no
    gap."""
    by_index: dict[int, tuple[str, str]] = {}
    by_text: dict[str, tuple[int, str]] = {}
    for record in records:
        for marker in record.markers:
            seen = by_index.get(marker.index)
            if seen is not None and seen[0] != marker.text:
                raise RuntimeError(f"marker index {marker.index} is {seen[0]!r} for {seen[1]!r} "
                                   f"and {marker.text!r} for {record.name!r}")
            known = by_text.get(marker.text)
            if known is not None and known[0] != marker.index:
                raise RuntimeError(f"marker {marker.text!r} has index {known[0]} for "
                                   f"{known[1]!r} and {marker.index} for {record.name!r}")
            by_index.setdefault(marker.index, (marker.text, record.name))
            by_text.setdefault(marker.text, (marker.index, record.name))
    missing = sorted(set(range(len(by_index))) - set(by_index))
    if missing:
        raise RuntimeError(f"marker indices {missing} are not declared by any format")
    return tuple(by_index[i][0] for i in range(len(by_index)))


MARKUP: tuple[str, ...] = _markup((*TOOL_RECORDS, *REASONING_RECORDS))
"""Every marker by index: ``MARKUP[i]``'s stand-in is ``STAND_IN + i``. Where the vocabulary
has one as a single token, parsers match that token, not the same characters spelled by
ordinary tokens (a model writing about ``<tool_call>``)."""
MARKER_INDEX: dict[str, int] = {marker: i for i, marker in enumerate(MARKUP)}


def spelling(token_id: Callable[[str], int | None], marker: str, stand_in: int) -> str:
    """How ``marker`` appears in text decoded with the marked vocabulary whose token lookup
    is ``token_id`` (its stand-in where it is one token)."""
    if token_id(marker) is None:
        return marker
    return chr(stand_in + MARKER_INDEX[marker])
