"""Reasoning parsers: split ``<think>…</think>`` reasoning from the answer, incrementally.

One machine serves streaming and non-streaming (the latter is the whole text fed at once and
finished), so both always agree. Its entire state is the phase and the few characters that
could still become a marker. Formats, as vLLM 0.33 names them:

- ``qwen3``: starts in reasoning unless thinking is disabled or the prompt already closed it;
  ``<think>`` inside reasoning is absorbed, ``</think>`` ends it, ``<tool_call>`` ends it and
  stays in the content for the tool parser; a later ``</think>`` is dropped; ChatML turn
  markers are removed everywhere.
- ``deepseek_r1``: starts in reasoning; ``<think>`` is absorbed, the first ``</think>`` ends it.
- ``deepseek_v3``: ``deepseek_r1`` when the request turns thinking on, else off (all content).
- ``mistral``: ``[THINK]…[/THINK]`` (special tokens of Mistral's tokenizer v13+); starts in
  content, every ``[THINK]`` opens reasoning (again), one inside it is absorbed, ``[/THINK]``
  ends it and is dropped anywhere else, ``[TOOL_CALLS]`` ends it and stays for the tool
  parser; trailing whitespace of reasoning is dropped (held until more reasoning follows).
- the Qwen3-grammar engines, ``qwen3`` with their differences as data (vLLM's ``Qwen3Parser``
  subclasses): ``mimo`` (thinking off starts in content, where a ``</think>`` is still
  dropped), ``step3p5`` (always thinking: only the prompt closes it; trailing whitespace of
  reasoning dropped), ``seed_oss`` (``<seed:think>``/``</seed:think>``, ``<seed:tool_call>``
  ending reasoning; the prompt is not read: its turn markers are not in the vocabulary) and
  ``nemotron_v3`` (as ``step3p5`` but with the switch, and with its swap: when the request
  forces content, reasoning that ends with blank content becomes the content, see
  ``ReasoningState.swap``).
- ``kimi_k2``: ``deepseek_r1``'s rules (``<think>`` optional) with a later ``</think>`` dropped,
  ``<|tool_calls_section_begin|>`` ending reasoning (kept for the tool parser), trailing
  whitespace of reasoning dropped; off (all content) when the template kwargs set ``thinking``
  or ``enable_thinking`` and neither is truthy.
- ``olmo3``: the output starts in reasoning whatever the prompt (a ``<think>`` read only where
  it starts), the first ``</think>`` ends reasoning, nothing is read after it
  (``at_start_only``); reasoning never closed is held and the output is then content as
  written (``holds_reasoning``).
- ``ernie45``: ``deepseek_r1``'s rules; then the content is the answer inside
  ``<response>``…``</response>`` when both are there in that order (``response``, read by
  ``_answer``: text before the first ``<response>`` and after the last ``</response>``
  dropped, within bounds).
- ``granite`` (Granite 3.x): ``ernie45``'s answer machine on text markers ("Here is my thought
  process:" … "Here is my response:", also "Here's"), the answer being the reasoning and the
  text after it the content (``answer_is_reasoning``); without both markers all content.
- ``gemma4`` (``parsers/gemma4.py`` holds its data): ``<|channel>``…``<channel|>`` blocks with a
  ``thought\n`` prefix removed (``prefix``), output starting with the prefix opening reasoning.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from derender.core.decoding.markers import Finder, pending_prefix
from derender.core.decoding.vocab import STAND_IN, Vocabulary
from derender.core.parsers.registry import spelling
from derender.core.state.codec import Reader, Writer

THINK, END_THINK, TOOL_CALL = "<think>", "</think>", "<tool_call>"
MAX_HELD_SPACE = 256
"""Whitespace at the end of reasoning held back to be dropped if the block ends there."""
CHATML_TURN = ("<|im_start|>", "<|im_end|>")
SEED_THINK, SEED_END_THINK, SEED_TOOL_CALL = "<seed:think>", "</seed:think>", "<seed:tool_call>"
"""Seed-OSS's markers: single tokens of its own vocabulary, several on Qwen3's (matched as
text there, as vLLM's lexer does for a terminal that is not one token)."""
MAX_SWAP = 512
"""Characters of reasoning a stream holds back while it may still become the content
(nemotron_v3's swap); past that it streams as reasoning and the swap can no longer happen
(README compatibility). The whole text, fed at once, is never cut short."""


@dataclass(frozen=True, slots=True)
class ReasoningFormat:
    """What a reasoning parser's markers do."""

    name: str
    ends_implicitly: tuple[str, ...] = ()
    """Markers that end reasoning and stay in the content (for the tool parser)."""
    removed: tuple[str, ...] = ()
    """Markers removed from reasoning and content alike."""
    drops_late_end: bool = False
    """A ``</think>`` after reasoning ended is dropped (else kept as content)."""
    honours_prompt: bool = False
    """The prompt decides whether output starts inside reasoning."""
    honours_switch: bool = False
    """``enable_thinking: false`` turns the parser off."""
    start: str = THINK
    end: str = END_THINK
    starts_in_content: bool = False
    """Output starts as content (reasoning only inside ``start``…``end``)."""
    reopens: bool = False
    """``start`` in the content opens reasoning again."""
    strips_trailing_space: bool = False
    """Whitespace ending a reasoning block is dropped."""
    off_starts_content: bool = False
    """``enable_thinking: false`` starts the output in content (the parser stays on: a late
    ``end`` is still dropped), whatever the prompt."""
    content_prefix: str = ""
    """Text the content starts with (``minimax_m2_append_think``: ``<think>``, the prompt's
    opening, put back; no reasoning is read)."""
    swaps: bool = False
    """nemotron_v3: when the request forces content (``force_nonempty_content``, or thinking
    off) and the content is blank, reasoning and content change places."""
    switch: tuple[str, ...] = ()
    """Template kwargs of the parser's own switch (with ``honours_switch``): off when one is
    set and none is truthy (else ``enable_thinking`` as the template saw it)."""
    prefix: str = ""
    """Removed from the start of a block after ``start`` (its ``rstrip`` too if the block ends
    right after it); held until known."""
    prefix_opens: bool = False
    """Output starting with ``prefix`` (or only its ``rstrip``) is a block whose ``start`` was
    left out. The start state holds ``start`` + ``end`` (text that is never held otherwise)
    as the mark of the output's start until that is known."""
    prompt_closers: tuple[str, ...] = ()
    """gemma4: a prompt whose last ``start`` comes after all of these (vLLM's
    ``_prompt_ends_in_open_reasoning``: ``<channel|>``, ``<|tool_call>``, a turn marker) leaves
    the block open: the output starts in reasoning."""
    at_start_only: bool = False
    """olmo3: ``start`` is read only where the output starts (absorbed, opening reasoning) and
    is text anywhere else; the first ``end`` ends reasoning and after it no marker is read;
    the prompt's text ending with ``start`` starts the output inside reasoning."""
    content_end: str = ""
    """hunyuan_a13b (with ``at_start_only``): the content ends at this marker, the text from it
    on dropped (``DROPPED``)."""
    holds_reasoning: bool = False
    """hunyuan_a13b: reasoning is held (``ReasoningState.kept``) until its ``end``: an output
    that ends first is all content, as written (up to ``content_end``); past ``MAX_SWAP``
    characters it goes out as reasoning (``answer`` ``PLAIN``: released) and stays so."""
    prompt_opens: bool = True
    """``at_start_only``: the prompt's text ending with ``start`` starts the output inside
    reasoning (False: the prompt is not read)."""
    response: tuple[str, ...] = ()
    """ernie45: the content's answer markers (``_answer``); empty: none."""
    response_alternatives: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    """Further spellings of the opening and the closing ``response`` marker (any one of them
    opens or closes; granite: ``Here's`` for ``Here is``)."""
    answer_is_reasoning: bool = False
    """granite: the text between the ``response`` markers is the reasoning and the text after
    the closing one the content, read as written (no marker read again); the text before the
    opening one is dropped. Without the closing marker the output is content as written
    (within ``MAX_ANSWER``, past it the held text goes out as reasoning and stays so)."""
    swaps_absent_only: bool = False
    """With ``swaps``: only when no content was written at all (whitespace is content;
    granite_thinking_parser's ``content_was_absent``)."""
    strips_content_newlines: bool = False
    """granite_thinking_parser: newlines starting the content are dropped (held by nothing: once
    other content was written, ``ReasoningState.spoke``, newlines are content)."""
    opens_once: bool = False
    """minimax_m3: the first ``start`` in the content opens reasoning; once it ends no marker
    is read; an ``end`` opening the output (not started in reasoning) is dropped
    (``ReasoningState.stage``)."""
    off_hides: bool = False
    """minicpmv: with thinking off the output starts in content, where ``start`` opens a
    block that is dropped (``HIDDEN``)."""
    reads_start: bool = True
    """``start`` is read (absorbed); else it is text (``step3``)."""
    recovers_newlines: bool = False
    """minicpmv: ``\\n`` escapes in the reasoning and the content become newlines
    (``escapes.recover``, applied after the tool parser; its state is this one's)."""
    modes: tuple[tuple[str, str], ...] = ()
    """k2_horizon: the ``start`` and ``end`` of each mode the request may choose (its record's
    ``mode``; ``ReasoningState.mode``, carried by the state); empty: one mode, ``start`` and
    ``end``."""
    always_open: bool = False
    """``at_start_only``: the output starts inside reasoning whatever the prompt (k2_horizon:
    vLLM removes a leading ``start`` and reads reasoning up to ``end``)."""
    held_start: bool = True
    """``holds_reasoning``: an output whose reasoning never closes is content with ``start``
    put back (hunyuan_a13b, as written); False: without it (k2_horizon's ``removeprefix``)."""
    empty_reasoning: bool = False
    """The message's reasoning is "" rather than null when there is none (k2_horizon: vLLM's
    ``extract_reasoning`` always returns a string)."""
    holds_in_streams_only: bool = False
    """``holds_reasoning``: the ``MAX_SWAP`` bound cuts only a hold a stream would carry on
    (olmo3): text read at once, or with the stream's last chunk, is read as vLLM's message
    reads it however long; a stream whose reasoning passes the bound before it ends goes out
    as reasoning (as vLLM's stream does)."""

    def markers(self, reasoning: bool, stage: int = 0) -> tuple[str, ...]:
        if self.at_start_only:
            if reasoning:
                return (self.end, *self.ends_implicitly)
            return (self.content_end,) if self.content_end and stage != DROPPED else ()
        if reasoning:
            return ((self.start,) if self.reads_start else ()) + (
                self.end, *self.ends_implicitly, *self.removed)
        if self.opens_once:
            return (self.start,) if stage == BEFORE else ()
        return (((self.end,) if self.drops_late_end else ())
                + ((self.start,) if self.reopens or stage == HIDDEN else ()) + self.removed)


FORMATS = {
    "qwen3": ReasoningFormat("qwen3", ends_implicitly=(TOOL_CALL,), removed=CHATML_TURN,
                             drops_late_end=True, honours_prompt=True, honours_switch=True),
    "deepseek_r1": ReasoningFormat("deepseek_r1"),
    "mimo": ReasoningFormat("mimo", ends_implicitly=(TOOL_CALL,), removed=CHATML_TURN,
                            drops_late_end=True, honours_prompt=True, off_starts_content=True),
    "step3p5": ReasoningFormat("step3p5", ends_implicitly=(TOOL_CALL,), removed=CHATML_TURN,
                               drops_late_end=True, honours_prompt=True,
                               strips_trailing_space=True),
    "seed_oss": ReasoningFormat("seed_oss", ends_implicitly=(SEED_TOOL_CALL,),
                                removed=CHATML_TURN, drops_late_end=True,
                                off_starts_content=True, start=SEED_THINK, end=SEED_END_THINK),
    "nemotron_v3": ReasoningFormat("nemotron_v3", ends_implicitly=(TOOL_CALL,),
                                   removed=CHATML_TURN, drops_late_end=True, honours_prompt=True,
                                   off_starts_content=True, strips_trailing_space=True,
                                   swaps=True),
    # Granite 4.2 (granite-inkling): nemotron_v3 with the content's leading newlines dropped
    # and the swap only when no content was written [5000-5065]
    "granite_thinking_parser": ReasoningFormat(
        "granite_thinking_parser", ends_implicitly=(TOOL_CALL,), removed=CHATML_TURN,
        drops_late_end=True, honours_prompt=True, off_starts_content=True,
        strips_trailing_space=True, swaps=True, swaps_absent_only=True,
        strips_content_newlines=True),
    # DeepSeek V3/V3.1/V3.2: deepseek_r1's rules when the template kwargs turn thinking on
    # (``thinking`` or ``enable_thinking``; off by default), else none (``v3_thinking``)
    "deepseek_v3": ReasoningFormat("deepseek_v3", honours_switch=True),
    # Holo2, deepseek_v3's rules with its own switch (on by default,
    # ``holo2_switch``) [4708, 4722, 4726, 4732, 4734]
    "holo2": ReasoningFormat("holo2", honours_switch=True),
    # Tencent Hy3: deepseek_r1's rules when reasoning_effort is set and not
    # "no_think", else none (formats/hy.py ``thinking``) [4338-4353]
    "hy_v3": ReasoningFormat("hy_v3", honours_switch=True),
    # glm2: Tencent Hy4, the same on its suffixed think markers, thinking on unless
    # reasoning_effort is "no_think" (formats/hy.py thinking4)
    # glm2: poolside Laguna, deepseek_v3's rules
    "poolside_v1": ReasoningFormat("poolside_v1", honours_switch=True),
    "hy_v4": ReasoningFormat("hy_v4", honours_switch=True, start="<think:opensource>",
                             end="</think:opensource>"),
    "kimi_k2": ReasoningFormat("kimi_k2", ends_implicitly=("<|tool_calls_section_begin|>",),
                               drops_late_end=True, honours_switch=True,
                               strips_trailing_space=True, switch=("thinking", "enable_thinking")),
    # MiniMax M2's other reasoning parser: no reasoning, the content is "<think>" + output
    # [775, 777, 779] (the tool parser then reads it: engine.EngineConfig.held_end)
    "minimax_m2_append_think": ReasoningFormat("minimax_m2_append_think", starts_in_content=True,
                                               content_prefix=THINK),
    # MiniMax M3: <mm:think>…</mm:think> once, anywhere; "enabled" starts inside it
    # (parsers.m3_thinking) [819, 825, 827, 829, 831, 833]
    "minimax_m3": ReasoningFormat("minimax_m3", start="<mm:think>", end="</mm:think>",
                                  starts_in_content=True, opens_once=True),
    # OLMo 3: vLLM's message regex ``^(?:<think>)?(.*?)</think>(.*)$``: everything before the
    # first </think> is reasoning whatever the prompt, no </think> leaves the output content as
    # written (held, as hunyuan_a13b's; the bound for streams only) [3512-3516, 9826-9851]
    "olmo3": ReasoningFormat("olmo3", at_start_only=True, always_open=True,
                             holds_reasoning=True, holds_in_streams_only=True),
    # Hunyuan-A13B: olmo3's reading with its own tags, the answer ending at "\n</answer>"
    # (wrapped2)
    "hunyuan_a13b": ReasoningFormat("hunyuan_a13b", at_start_only=True, start="<think>\n",
                                    end="\n</think>\n<answer>\n", content_end="\n</answer>",
                                    prompt_opens=False, holds_reasoning=True),
    # ERNIE 4.5: deepseek_r1's rules, the content's <response>…</response> answer read
    # (``_answer``) [5478-5489]
    "ernie45": ReasoningFormat("ernie45", response=("<response>", "</response>")),
    # glimmer (issue 19): IBM Granite 3.x, text markers; the ``response`` machine with the
    # text between them as the reasoning (``answer_is_reasoning``) [9200-9257]
    "granite": ReasoningFormat("granite", starts_in_content=True,
                               response=("Here is my thought process:", "Here is my response:"),
                               response_alternatives=(("Here's my thought process:",),
                                                      ("Here's my response:",)),
                               answer_is_reasoning=True),
    # Step 3: everything before the first </think> is reasoning, a <think>
    # included [6900-6929]
    "step3": ReasoningFormat("step3", reads_start=False),
    # MiniCPM-V: Qwen3's grammar, the prompt not read, <|im_end|> and the
    # reserved markers dropped; thinking off: a <think> block in the content is dropped;
    # \\n escapes recovered [6800-6849]
    "minicpmv": ReasoningFormat("minicpmv", ends_implicitly=(TOOL_CALL,),
                                removed=("<|im_end|>", *(f"<reserved_{i}>" for i in range(12, 16)),
                                         *(f"<|reserved_{i}|>" for i in range(12, 16))),
                                drops_late_end=True, off_hides=True, recovers_newlines=True),
    "mistral": ReasoningFormat("mistral", ends_implicitly=("[TOOL_CALLS]",), drops_late_end=True,
                               start="[THINK]", end="[/THINK]", starts_in_content=True,
                               reopens=True, strips_trailing_space=True),
    # K2 Horizon, always in reasoning up to the effort's end marker or
    # <ifm|tool_calls> (kept for the tool parser), a leading start marker removed; an output
    # whose reasoning never ends is content (held, as hunyuan_a13b's) [9000-9101]
    "k2_horizon": ReasoningFormat(
        "k2_horizon", ends_implicitly=("<ifm|tool_calls>",), at_start_only=True,
        always_open=True, holds_reasoning=True, held_start=False, empty_reasoning=True,
        start="<ifm|think>", end="</ifm|think>",
        modes=(("<ifm|think>", "</ifm|think>"), ("<ifm|think_fast>", "</ifm|think_fast>"),
               ("<ifm|think_faster>", "</ifm|think_faster>"))),
}


FRESH, BEFORE, AFTER, DROPPED, HIDDEN, UNMARKED = range(6)
"""Stages of an ``opens_once`` format outside reasoning: at the output's start; before a
reasoning block; after it; (a ``content_end`` format) after the content's end. ``HIDDEN``: an
``off_hides`` format with thinking off (its blocks are dropped). ``UNMARKED``: an
``always_open`` format that puts its ``start`` back (``held_start``) in reasoning the output
did not open with ``start`` (nothing to put back)."""


@dataclass(frozen=True, slots=True)
class ReasoningState:
    """Where the text stands: inside reasoning or not, and what waits to be decided."""

    reasoning: bool
    held: str = ""
    swap: bool = False
    """nemotron_v3 with content forced: the content has been blank so far, so the reasoning
    read (``kept``) and the content's whitespace (``space``) wait; at the end they change
    places, or go out as they are once the content says something (or a bound is passed)."""
    kept: str = ""
    space: str = ""
    stage: int = FRESH
    """``opens_once`` formats: ``FRESH``, ``BEFORE`` or ``AFTER`` (outside reasoning);
    ``HIDDEN`` (``off_hides``, thinking off)."""
    answer: int = 0
    """``response`` formats: where the content stands (``PRE``, ``IN``, ``POST``, ``PLAIN``,
    ``OPEN``), its held text in ``kept`` (``mark``: where the answer begins in it)."""
    mark: int = 0
    spoke: bool = False
    """``strips_content_newlines`` formats: content other than newlines was written."""
    escapes: tuple[str, str, str, str] = ("", "", "", "")
    """``recovers_newlines``: the reasoning's and the content's open span and held text
    (``escapes.recover``)."""
    mode: int = 0
    """``modes`` formats: the request's mode (an index of ``ReasoningFormat.modes``)."""
    spill: bool = False
    """``strips_trailing_space`` formats: the whitespace ending the reasoning passed
    ``MAX_HELD_SPACE`` and went out; the run goes on as written (a run that long is kept whole,
    streamed or not, so the bound does not depend on the chunks)."""


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    reasoning: str
    content: str


def prompt_leaves_reasoning_open(vocab: Vocabulary, prompt_ids: Sequence[int] | None) -> bool:
    """qwen3: scanning the prompt backwards, ``</think>``/``<tool_call>`` close reasoning,
    ``<think>``, a ChatML turn marker or the start leave it open. A vocabulary without the
    ChatML turn markers leaves it open whatever the prompt (vLLM's ``set_prompt_token_ids``
    reads the prompt only with turn boundaries; Granite's [5000])."""
    token_id = vocab.token_id
    if all(token_id(m) is None for m in CHATML_TURN):
        return True
    closing = {token_id(m) for m in (END_THINK, TOOL_CALL)} - {None}
    opening = {token_id(m) for m in (THINK, *CHATML_TURN)} - {None}
    for token in reversed(prompt_ids or ()):
        if token in closing:
            return False
        if token in opening:
            return True
    return True


def prompt_opens_block(vocab: Vocabulary, prompt_ids: Sequence[int] | None,
                       fmt: ReasoningFormat) -> bool:
    """Scanning the prompt backwards, ``fmt.start`` comes before any of ``fmt.prompt_closers``
    (each a single token of the vocabulary; one that is not is never seen)."""
    opening = vocab.token_id(fmt.start)
    if opening is None:
        return False
    closing = {vocab.token_id(m) for m in fmt.prompt_closers} - {None}
    for token in reversed(prompt_ids or ()):
        if token == opening:
            return True
        if token in closing:
            return False
    return False


def start(fmt: ReasoningFormat, vocab: Vocabulary, prompt_ids: Sequence[int] | None,
          thinking: bool, force_content: bool = False, mode: int = 0) -> ReasoningState | None:
    """Initial state, or None when the parser is off (all text is content, untouched).
    ``force_content``: the request forces content (``force_nonempty_content``, or thinking
    off), for formats that swap; ``mode``: the request's (``modes`` formats)."""
    if fmt.modes:
        return ReasoningState(True, mode=mode) if fmt.always_open else replace(
            _start(moded(fmt, mode), vocab, prompt_ids, thinking, force_content)
            or ReasoningState(False), mode=mode)
    return _start(fmt, vocab, prompt_ids, thinking, force_content)


@functools.cache
def moded(fmt: ReasoningFormat, mode: int) -> ReasoningFormat:
    """``fmt`` in one of its ``modes`` (its ``start`` and ``end``); ValueError: no such mode."""
    if not fmt.modes:
        if mode:
            raise ValueError(f"{fmt.name} has one mode")
        return fmt
    if not 0 <= mode < len(fmt.modes):
        raise ValueError(f"{fmt.name} has no mode {mode}")
    begin, end = fmt.modes[mode]
    return replace(fmt, start=begin, end=end)


def _start(fmt: ReasoningFormat, vocab: Vocabulary, prompt_ids: Sequence[int] | None,
           thinking: bool, force_content: bool) -> ReasoningState | None:
    if fmt.honours_switch and not thinking:
        return None
    if fmt.content_prefix:  # held, so it leads the content (no markers are read)
        return ReasoningState(False, fmt.content_prefix)
    swap = fmt.swaps and force_content
    if fmt.off_hides and not thinking:
        return ReasoningState(False, stage=HIDDEN)
    if fmt.off_starts_content and not thinking:
        return ReasoningState(False, swap=swap)
    if fmt.honours_prompt:
        return ReasoningState(prompt_leaves_reasoning_open(vocab, prompt_ids), swap=swap)
    if fmt.prompt_closers and prompt_opens_block(vocab, prompt_ids, fmt):
        return ReasoningState(True, swap=swap)
    if fmt.prefix_opens:
        return ReasoningState(False, spelling(vocab.token_id, fmt.start, STAND_IN)
                              + spelling(vocab.token_id, fmt.end, STAND_IN),
                              swap=swap)
    if fmt.opens_once:
        return ReasoningState(thinking)
    if fmt.at_start_only:
        return ReasoningState(fmt.always_open or (
            fmt.prompt_opens and prompt_text_opens(vocab, prompt_ids, fmt.start)))
    return ReasoningState(not fmt.starts_in_content, swap=swap)


PROMPT_TAIL = 16
"""Prompt ids decoded to see whether the prompt's text ends with a start marker."""


def prompt_text_opens(vocab: Vocabulary, prompt_ids: Sequence[int] | None, marker: str) -> bool:
    """Whether the prompt's text ends with ``marker`` (whitespace after it allowed): its last
    ``PROMPT_TAIL`` ids decoded (the marker spelled by ordinary tokens, or as one token)."""
    tail = vocab.decode(list((prompt_ids or ())[-PROMPT_TAIL:])).rstrip()
    return tail.endswith((marker, spelling(vocab.token_id, marker, STAND_IN)))


def v3_switch(kwargs: Mapping[str, object]) -> bool:
    """``deepseek_v3``: thinking only when the template kwargs' ``thinking`` or
    ``enable_thinking`` is truthy."""
    return bool(kwargs.get("thinking")) or bool(kwargs.get("enable_thinking"))


def holo2_switch(kwargs: Mapping[str, object]) -> bool:
    """``holo2`` (vLLM's ``DeepSeekV3ReasoningWithThinkingParser``): ``v3_switch``, but on when
    the kwargs set neither ``thinking`` nor ``enable_thinking``."""
    if kwargs.get("thinking") is None and kwargs.get("enable_thinking") is None:
        return True
    return v3_switch(kwargs)


def switched_on(fmt: ReasoningFormat, kwargs: Mapping[str, object], thinking: bool) -> bool:
    """Whether a parser with a ``switch`` of its own is on (``thinking``: as the template saw
    ``enable_thinking``, for the others)."""
    if not fmt.switch:
        return thinking
    values = [kwargs.get(key) for key in fmt.switch]
    return all(v is None for v in values) or any(bool(v) for v in values)


def _prefix_skip(prefix: str, after: str, final: bool, ends: Sequence[str]) -> int | None:
    """How much of ``after`` (the text after ``start``) is the prefix; None: not known yet."""
    if after.startswith(prefix):
        return len(prefix)
    bare = prefix.rstrip()
    rest = after[len(bare):]
    if after.startswith(bare) and ((final and not rest) or any(map(rest.startswith, ends))):
        return len(bare)
    if not final and len(after) < len(prefix) and prefix.startswith(after):
        return None
    return 0


def feed(fmt: ReasoningFormat, state: ReasoningState, text: str, final: bool,
         spell: Mapping[str, str]) -> tuple[ReasoningDelta, ReasoningState]:
    """Split new text; ``final`` releases what was held back. ``spell`` maps each marker to
    how it appears in the text (a stand-in character where it is a single token). A
    ``modes`` format reads the markers of the state's mode (ValueError: not one of its
    modes), which the state keeps."""
    if fmt.modes or state.mode:
        delta, after = _feed(moded(fmt, state.mode), state, text, final, spell)
        return delta, replace(after, mode=state.mode)
    return _feed(fmt, state, text, final, spell)


def _feed(fmt: ReasoningFormat, state: ReasoningState, text: str, final: bool,
          spell: Mapping[str, str]) -> tuple[ReasoningDelta, ReasoningState]:
    delta, after = _split(fmt, state, text, final, spell)
    if state.spoke:
        after = replace(after, spoke=True)
    if fmt.holds_reasoning:
        return _held(fmt, state, delta, after, final, spell)
    if fmt.response and (delta.content or state.kept or final):
        thought, content, answered = _answer(fmt, state, delta.content, final, spell)
        return (ReasoningDelta(delta.reasoning + thought, content),
                ReasoningState(after.reasoning, after.held, answer=answered.answer,
                               kept=answered.kept, mark=answered.mark, stage=after.stage))
    if fmt.response:
        return delta, ReasoningState(after.reasoning, after.held, answer=state.answer,
                                     kept=state.kept, mark=state.mark, stage=after.stage)
    if not state.swap:
        return _lstrip(fmt, delta, after)
    kept, space = state.kept + delta.reasoning, state.space + delta.content
    written = space if fmt.swaps_absent_only else space.strip()
    if written or (not final and (len(kept) > MAX_SWAP or len(space) > MAX_HELD_SPACE)):
        return _lstrip(fmt, ReasoningDelta(kept, space), after)  # no swap: both go out
    if final:  # vLLM's extract_reasoning: blank content, so reasoning becomes the content
        return ReasoningDelta(space, kept), after
    return ReasoningDelta("", ""), ReasoningState(after.reasoning, after.held, True, kept, space,
                                                  after.stage, escapes=after.escapes,
                                                  spill=after.spill)


PRE, IN, POST, PLAIN, OPEN = range(5)
"""Where a ``response`` format's content stands: before ``<response>`` (held); inside the
answer, held until ``</response>``; after a ``</response>`` (held until another, dropped at the
end); as written (no marker read again); inside the answer, streamed."""
MAX_PRE = 256
"""Content read before ``<response>`` (more: the marker is not read, the content is as
written)."""
MAX_ANSWER = 512
"""Answer held until its ``</response>`` (more: streamed, as if it will close)."""
MAX_AFTER = 256
"""Text held after a ``</response>`` (more: content, as if another ``</response>`` follows)."""


def _first(text: str, options: Sequence[str], pos: int = 0) -> tuple[int, int]:
    """The earliest of ``options`` in ``text`` from ``pos``: where it starts and its length
    (the longest there), or ``(-1, 0)``."""
    best, size = -1, 0
    for option in options:
        at = text.find(option, pos)
        if at >= 0 and (best < 0 or at < best or (at == best and len(option) > size)):
            best, size = at, len(option)
    return best, size


def _answer(fmt: ReasoningFormat, state: ReasoningState, new: str, final: bool,
            spell: Mapping[str, str]) -> tuple[str, str, ReasoningState]:
    """ernie45's content, as vLLM's message reads it: with ``<response>`` and a later
    ``</response>``, what lies between the first and the last; else as written. Held text is
    ``state.kept`` (its answer from ``state.mark``); each hold is bounded (``MAX_PRE``,
    ``MAX_ANSWER``, ``MAX_AFTER``), past it the text goes out as if the markers say so, and the
    whole text read at once applies the same bounds. ``answer_is_reasoning`` (granite): the
    answer is the reasoning (returned first), the text after the closing marker the content.
    Returns the reasoning, the content and the state."""
    alternatives = fmt.response_alternatives
    openings = tuple(spell.get(m, m) for m in (fmt.response[0], *alternatives[0]))
    closings = tuple(spell.get(m, m) for m in (fmt.response[1], *alternatives[1]))
    closing = closings[0]
    text, answer, mark = state.kept + new, state.answer, state.mark
    out: list[str] = []
    thought: list[str] = []
    inner = thought if fmt.answer_is_reasoning else out
    while True:
        if answer == PLAIN:
            out.append(text)
            text = ""
            break
        if answer == PRE:
            at, size = _first(text, openings)
            if 0 <= at <= MAX_PRE:
                answer, mark = IN, at + size
                continue
            body = len(text) - (0 if final else pending_prefix(text, openings))
            if at >= 0 or final or body > MAX_PRE:
                answer = PLAIN
                continue
            break
        if answer in (IN, OPEN):
            at, size = _first(text, closings, mark)
            if at >= 0 and fmt.answer_is_reasoning:  # the reasoning, then content as written
                thought.append(text[mark:at])
                answer, text, mark = PLAIN, text[at + size:], 0
                continue
            if at >= 0:  # the answer, then hold from its closing marker
                out.append(text[mark:at])
                answer, text, mark = POST, text[at:], len(closing)
                continue
            if final:
                if answer == IN and len(text) - mark <= MAX_ANSWER:
                    out.append(text)  # never closed: the output as written
                else:
                    inner.append(text[mark:])
                text = ""
                break
            cut = len(text) - pending_prefix(text[mark:], closings)
            if answer == OPEN or cut - mark > MAX_ANSWER:
                inner.append(text[mark:cut])
                answer, text, mark = OPEN, text[cut:], 0
            break
        # POST: held from a closing marker until another (said with it) or the end (dropped)
        at = text.find(closing, mark)
        if at >= 0:
            out.append(text[:at])
            text, mark = text[at:], len(closing)
            continue
        if final:
            out.append(text if len(text) - len(closing) > MAX_AFTER else "")
            text = ""
            break
        cut = len(text) - pending_prefix(text[mark:], (closing,))
        if cut - len(closing) > MAX_AFTER:
            out.append(text[:cut])
            answer, text, mark = OPEN, text[cut:], 0
        break
    return "".join(thought), "".join(out), ReasoningState(
        state.reasoning, state.held, answer=answer, kept=text, mark=mark if text else 0,
        stage=state.stage)


def _held(fmt: ReasoningFormat, state: ReasoningState, delta: ReasoningDelta,
          after: ReasoningState, final: bool, spell: Mapping[str, str]
          ) -> tuple[ReasoningDelta, ReasoningState]:
    """A ``holds_reasoning`` format's reasoning, held until its end is known."""
    if state.answer == PLAIN or not (state.kept or delta.reasoning):
        return delta, replace(after, answer=state.answer)
    kept = state.kept + delta.reasoning
    too_long = len(kept) > MAX_SWAP and not (final and fmt.holds_in_streams_only)
    if not after.reasoning or too_long:  # closed, or too long to hold: reasoning
        return (ReasoningDelta(kept, delta.content),
                replace(after, answer=PLAIN if after.reasoning else state.answer))
    if not final:
        return ReasoningDelta("", delta.content), replace(after, kept=kept)
    # never closed: the whole output is content, as written, up to the content's end
    opened = fmt.held_start and after.stage != UNMARKED
    content = (spell.get(fmt.start, fmt.start) if opened else "") + kept
    end = content.find(spell.get(fmt.content_end, fmt.content_end)) if fmt.content_end else -1
    return ReasoningDelta("", content if end < 0 else content[:end]), replace(after, kept="")


def _lstrip(fmt: ReasoningFormat, delta: ReasoningDelta, after: ReasoningState
            ) -> tuple[ReasoningDelta, ReasoningState]:
    """``strips_content_newlines``: the newlines starting the content dropped."""
    if not fmt.strips_content_newlines or after.spoke or not delta.content:
        return delta, after
    content = delta.content.lstrip("\n")
    return ReasoningDelta(delta.reasoning, content), replace(after, spoke=bool(content))


def _split(fmt: ReasoningFormat, state: ReasoningState, text: str, final: bool,
           spell: Mapping[str, str]) -> tuple[ReasoningDelta, ReasoningState]:
    spell = {m: spell.get(m, m) for m in (fmt.start, fmt.end, *fmt.ends_implicitly,
                                          *fmt.removed, fmt.content_end)}
    end_think, start_think = spell[fmt.end], spell[fmt.start]
    implicit = {spell[m] for m in fmt.ends_implicitly}
    buffer = state.held + text
    in_reasoning = state.reasoning
    stage = state.stage
    spill = state.spill and in_reasoning  # (the run it speaks of goes on here)
    block = 0  # where the open block's pieces of ``reasoning`` begin
    reasoning: list[str] = []
    content: list[str] = []
    pos = 0
    fresh = start_think + end_think
    if fmt.prefix_opens and not in_reasoning and buffer.startswith(fresh):  # the output's start
        rest = buffer[len(fresh):]
        skip = _prefix_skip(fmt.prefix, rest, final, (end_think,))
        if skip is None:
            return ReasoningDelta("", ""), ReasoningState(False, buffer)
        buffer = (start_think if skip else "") + rest
    if fmt.at_start_only and stage == FRESH:  # the output's start: a start marker opens
        if buffer.startswith(start_think):
            pos, in_reasoning, stage = len(start_think), True, BEFORE
        elif start_think.startswith(buffer) and not final:
            return ReasoningDelta("", ""), ReasoningState(in_reasoning, buffer)
        else:
            stage = UNMARKED if fmt.always_open and fmt.held_start else BEFORE
    if fmt.opens_once and not in_reasoning and stage == FRESH:
        if buffer.startswith(end_think):  # a stray closer opening the output is dropped
            pos, stage = len(end_think), AFTER
        elif end_think.startswith(buffer) and not final:
            return ReasoningDelta("", ""), ReasoningState(False, buffer)
        else:
            stage = BEFORE
    finder = Finder(buffer)  # each marker's next place looked up once, not per marker found
    while True:
        markers = [spell[m] for m in fmt.markers(in_reasoning, stage)]
        found = finder.earliest(markers, pos) if markers else None
        if found is None:
            break
        at, marker = found
        (reasoning if in_reasoning else content).append(buffer[pos:at])
        spill = spill and in_reasoning and not buffer[pos:at].strip()
        pos, was = at + len(marker), in_reasoning
        if in_reasoning and marker == end_think:
            in_reasoning, stage = False, (HIDDEN if stage == HIDDEN else AFTER)
        elif not in_reasoning and fmt.content_end and marker == spell[fmt.content_end]:
            stage, pos = DROPPED, len(buffer)  # the rest of the output is dropped
            break
        elif in_reasoning and marker in implicit:
            in_reasoning = False
            content.append(marker)
        elif (not in_reasoning and (fmt.reopens or fmt.opens_once or stage == HIDDEN)
              and marker == start_think):
            in_reasoning = True
        if was and not in_reasoning and fmt.strips_trailing_space:
            if not spill and _run_end(reasoning, block) <= MAX_HELD_SPACE:
                _strip_end(reasoning, block)
            spill = False
        if in_reasoning and not was:
            block = len(reasoning)
        if fmt.prefix and in_reasoning and marker == start_think:
            ends = [end_think, *implicit]
            window = buffer[pos:pos + len(fmt.prefix) + max(map(len, ends)) + 1]  # not the rest
            skip = _prefix_skip(fmt.prefix, window, final, ends)
            if skip is None:  # held from the marker on, read again with what follows
                return (ReasoningDelta("".join(reasoning), "".join(content)),
                        ReasoningState(was, buffer[at:]))
            pos += skip
    markers = [spell[m] for m in fmt.markers(in_reasoning, stage)]
    hold = 0 if final else pending_prefix(buffer[pos:], markers)
    tail = "" if stage == DROPPED else buffer[pos:len(buffer) - hold]
    if in_reasoning and fmt.strips_trailing_space:
        kept = tail.rstrip()
        spill = spill and not kept
        if spill or len(tail) - len(kept) > MAX_HELD_SPACE:  # a run that long goes out whole
            spill = True
        elif final:
            tail = kept
        else:
            hold, tail = len(buffer) - pos - len(kept), kept
    (reasoning if in_reasoning else content).append(tail)
    thought = "" if stage == HIDDEN else "".join(reasoning)  # thinking off: blocks dropped
    return (ReasoningDelta(thought, "".join(content)),
            ReasoningState(in_reasoning, buffer[len(buffer) - hold:], stage=stage,
                           escapes=state.escapes, spill=spill and in_reasoning))


def _strip_end(pieces: list[str], start: int = 0) -> None:
    """Drop the whitespace ending the text of ``pieces[start:]`` (a reasoning block's end)."""
    for i in range(len(pieces) - 1, start - 1, -1):
        pieces[i] = pieces[i].rstrip()
        if pieces[i]:
            return


def _run_end(pieces: list[str], start: int) -> int:
    """The length of the whitespace ending the text of ``pieces[start:]``."""
    size = 0
    for piece in reversed(pieces[start:]):
        body = piece.rstrip()
        size += len(piece) - len(body)
        if body:
            break
    return size


_ANSWERING, _SPOKE, _ESCAPES, _MODE, _SPILL = 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8
"""Above the swap bit and the three stage bits (states issued before these had stages 0-2 and
none of them): a ``response`` format's answer follows; ``spoke``; the state holds
``escapes``; a ``modes`` format's mode other than 0 follows; ``spill``."""
MAX_MODE = 7
"""The largest mode a state may hold (a format's modes are fewer)."""
NO_ESCAPES = ("", "", "", "")


def encode(state: ReasoningState, w: Writer) -> None:
    """The state after its phase flag (written by the stream state)."""
    w.text(state.held)
    answering = bool(state.answer or state.kept) and not state.swap
    escapes = state.escapes != NO_ESCAPES
    w.uint(int(state.swap) | state.stage << 1 | (_ANSWERING if answering else 0)
           | (_SPOKE if state.spoke else 0) | (_ESCAPES if escapes else 0)
           | (_MODE if state.mode else 0) | (_SPILL if state.spill else 0))
    if state.swap:
        w.text(state.kept)
        w.text(state.space)
    elif answering:
        w.uint(state.answer)
        w.text(state.kept)
        w.uint(state.mark)
    if escapes:
        for text in state.escapes:
            w.text(text)
    if state.mode:
        w.uint(state.mode)


def decode(reasoning: bool, r: Reader) -> ReasoningState:
    held, bits = r.text(), r.uint()
    swap, stage = bits & 1, bits >> 1 & 7
    answering, spoke = bool(bits & _ANSWERING), bool(bits & _SPOKE)
    if bits >> 9 or stage > UNMARKED or (swap and (answering or stage == HIDDEN)):
        raise ValueError("malformed reasoning state")  # (no format both swaps and hides)
    kept, space, answer, mark = "", "", 0, 0
    if swap:
        kept, space = r.text(), r.text()
    elif answering:
        answer, kept, mark = r.uint(), r.text(), r.uint()
        if answer > OPEN or mark > len(kept):
            raise ValueError("malformed reasoning state")
    escapes = NO_ESCAPES
    if bits & _ESCAPES:
        rc, rp, cc, cp = r.text(), r.text(), r.text(), r.text()
        if any(len(part) > 3 for part in (rc, rp, cc, cp)):
            raise ValueError("malformed reasoning state")
        escapes = (rc, rp, cc, cp)
    mode = 0
    if bits & _MODE:
        mode = r.uint()
        if not 0 < mode <= MAX_MODE:
            raise ValueError("malformed reasoning state")
    spill = bool(bits & _SPILL)
    if spill and not reasoning:
        raise ValueError("malformed reasoning state")  # (a run of the reasoning's own)
    return ReasoningState(reasoning, held, bool(swap), kept, space, stage, answer=answer,
                          mark=mark, spoke=spoke, escapes=escapes, mode=mode, spill=spill)
