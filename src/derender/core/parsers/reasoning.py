"""Reasoning parsers: split ``<think>…</think>`` reasoning from the answer, incrementally.

One machine serves streaming and non-streaming (the latter is the whole text fed at once and
finished), so both always agree. Its entire state is the phase and the few characters that
could still become a marker. Formats, as vLLM 0.33 names them:

- ``qwen3``: starts in reasoning unless thinking is disabled or the prompt already closed it;
  ``<think>`` inside reasoning is absorbed, ``</think>`` ends it, ``<tool_call>`` ends it and
  stays in the content for the tool parser; a later ``</think>`` is dropped; ChatML turn
  markers are removed everywhere.
- ``deepseek_r1``: starts in reasoning; ``<think>`` is absorbed, the first ``</think>`` ends it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from derender.core.markers import earliest, pending_prefix
from derender.core.vocab import Vocabulary

THINK, END_THINK, TOOL_CALL = "<think>", "</think>", "<tool_call>"
CHATML_TURN = ("<|im_start|>", "<|im_end|>")


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

    def markers(self, reasoning: bool) -> tuple[str, ...]:
        if reasoning:
            return (THINK, END_THINK, *self.ends_implicitly, *self.removed)
        return ((END_THINK,) if self.drops_late_end else ()) + self.removed


FORMATS = {
    "qwen3": ReasoningFormat("qwen3", ends_implicitly=(TOOL_CALL,), removed=CHATML_TURN,
                             drops_late_end=True, honours_prompt=True, honours_switch=True),
    "deepseek_r1": ReasoningFormat("deepseek_r1"),
}


@dataclass(frozen=True, slots=True)
class ReasoningState:
    """Where the text stands: inside reasoning or not, and what waits to be decided."""

    reasoning: bool
    held: str = ""


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    reasoning: str
    content: str


def prompt_leaves_reasoning_open(vocab: Vocabulary, prompt_ids: Sequence[int] | None) -> bool:
    """qwen3: scanning the prompt backwards, ``</think>``/``<tool_call>`` close reasoning,
    ``<think>``, a ChatML turn marker or the start leave it open."""
    token_id = vocab.token_id
    closing = {token_id(m) for m in (END_THINK, TOOL_CALL)} - {None}
    opening = {token_id(m) for m in (THINK, *CHATML_TURN)} - {None}
    for token in reversed(prompt_ids or ()):
        if token in closing:
            return False
        if token in opening:
            return True
    return True


def start(fmt: ReasoningFormat, vocab: Vocabulary, prompt_ids: Sequence[int] | None,
          thinking: bool) -> ReasoningState | None:
    """Initial state, or None when the parser is off (all text is content, untouched)."""
    if fmt.honours_switch and not thinking:
        return None
    if fmt.honours_prompt:
        return ReasoningState(prompt_leaves_reasoning_open(vocab, prompt_ids))
    return ReasoningState(True)


def feed(fmt: ReasoningFormat, state: ReasoningState, text: str, final: bool,
         spell: Mapping[str, str]) -> tuple[ReasoningDelta, ReasoningState]:
    """Split new text; ``final`` releases what was held back. ``spell`` maps each marker to
    how it appears in the text (a stand-in character where it is a single token)."""
    end_think = spell[END_THINK]
    implicit = {spell[m] for m in fmt.ends_implicitly}
    buffer = state.held + text
    in_reasoning = state.reasoning
    reasoning: list[str] = []
    content: list[str] = []
    pos = 0
    while True:
        markers = [spell[m] for m in fmt.markers(in_reasoning)]
        found = earliest(buffer, markers, pos) if markers else None
        if found is None:
            break
        at, marker = found
        (reasoning if in_reasoning else content).append(buffer[pos:at])
        pos = at + len(marker)
        if in_reasoning and marker == end_think:
            in_reasoning = False
        elif in_reasoning and marker in implicit:
            in_reasoning = False
            content.append(marker)
    markers = [spell[m] for m in fmt.markers(in_reasoning)]
    hold = 0 if final else pending_prefix(buffer[pos:], markers)
    (reasoning if in_reasoning else content).append(buffer[pos:len(buffer) - hold])
    return (ReasoningDelta("".join(reasoning), "".join(content)),
            ReasoningState(in_reasoning, buffer[len(buffer) - hold:]))
