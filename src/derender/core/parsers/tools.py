"""What every tool-call format provides, so formats plug into the parser path alike.

A format is one module holding one incremental machine (docs/design.md, Parsers): a start state,
``feed`` (new text in; content, tool-call deltas and the next state out; ``final`` settles what was
held back) and the compact encoding of its state. Streaming feeds each chunk's text,
non-streaming feeds the whole text at once with ``final``, so the two always agree. A state
is plain data of a type only its format uses, bounded whatever the output's length, and its
encoding is preceded by the format's tag, so a decoded state says which format it belongs to
and is never read as another's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from derender.core.state.codec import Reader, Writer


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """Part of one tool call: its name on the first delta, then argument text."""

    index: int
    name: str | None
    arguments: str
    id: str | None = None
    """The call's id as the model wrote it (formats whose calls carry one, on the name's
    delta); None: derived (``parsers.tool_call_id``)."""


@dataclass(frozen=True, slots=True)
class ParsedDelta:
    """What the parsers make of a part of the output: reasoning, content, tool-call deltas."""

    reasoning: str
    content: str
    calls: list[ToolCallDelta]


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What the request and the vocabulary tell a format (the same on every call)."""

    forced_name: str | None = None
    """The named function of ``tool_choice``, whose bare JSON arguments may be the output."""
    required: bool = False
    """``tool_choice`` "required": the output may be a JSON list of ``{"name", "parameters"}``."""
    spell: Mapping[str, str] | None = None
    """Each marker and how it appears in the text (a stand-in character where the vocabulary
    has it as one token); None: as itself."""
    tools: Sequence[Any] = ()
    """The request's ``tools`` (for formats that type arguments by their schema; look a
    parameter up once, not on every chunk)."""
    keep: bool = True
    """Parsed calls are returned (``tool_choice`` is not "none")."""
    template: Any = None
    """Response-template formats (``hf``, ``beam``): the model's checked template."""
    parse_reasoning: bool = False
    """Response-template formats: the reasoning parser is the template's (else its thinking
    is content)."""
    parse_tools: bool = False
    """Response-template formats: calls are read (else a call's text is content)."""

    def spelled(self, marker: str) -> str:
        return marker if self.spell is None else self.spell.get(marker, marker)


_KEYS: list[tuple[Mapping[str, str], tuple[tuple[str, str], ...]]] = []
"""The last spelling tables keyed, by identity (held here, so an identity is never reused)."""


def spell_key(spell: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    """``spell`` as a hashable, order-free key for a format's tables built per spelling: worked
    out once per table object (``ParserSettings.spelling`` hands the same table to every
    chunk), not sorted again on every chunk."""
    if not spell:
        return ()
    for known, key in _KEYS:
        if known is spell:
            return key
    key = tuple(sorted(spell.items()))
    _KEYS[:] = [(spell, key), *_KEYS[:7]]
    return key


class ToolState:
    """Base of every format's state (each format has its own subclass)."""

    __slots__ = ()


S = TypeVar("S", bound=ToolState)

Feed = Callable[[S, str, bool, ToolContext], tuple[str, list[ToolCallDelta], S]]


@dataclass(frozen=True, slots=True)
class ToolFormat(Generic[S]):
    """One tool-call format as vLLM names it."""

    name: str
    state_type: type[S]
    start: Callable[[], S]
    feed: Feed[S]
    encode: Callable[[S, Writer], None]
    decode: Callable[[Reader], S]
    feed_reasoning: Callable[[S, str, bool, ToolContext],
                             tuple[str, str, list[ToolCallDelta], S]] | None = None
    """Formats whose machine reads reasoning too (the parser engine's): ``feed`` with the
    reasoning read first in what it returns ``(reasoning, content, calls, state)``."""
    start_in: Callable[[int], S] | None = None
    """Formats whose reading the request chooses (its record's ``mode``, e.g. k2_horizon's
    ``tool_call_format``): the start state in that mode, which the state then carries."""
    blank_content: Callable[[S], bool] | None = None
    """Formats whose message may have the content ``""`` beside calls (vLLM's ``xlam``: a
    block's calls with no other text): whether the state after the whole output says so (else
    a blank content is null)."""

    def step(self, state: ToolState, text: str, final: bool, context: ToolContext
             ) -> tuple[str, list[ToolCallDelta], S]:
        """``feed`` for a state of this format; another format's state is refused."""
        if not isinstance(state, self.state_type):
            raise ValueError(f"a {type(state).__name__} is not a {self.name} state")
        return self.feed(state, text, final, context)

    def write(self, state: ToolState, w: Writer) -> None:
        if not isinstance(state, self.state_type):
            raise ValueError(f"a {type(state).__name__} is not a {self.name} state")
        self.encode(state, w)
