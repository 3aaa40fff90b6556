"""What every tool-call format provides, so formats plug into the parser path alike.

A format is one module holding one incremental machine (design §6): a start state, ``feed``
(new text in; content, tool-call deltas and the next state out; ``final`` settles what was
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

from derender.core.decoding.markers import pending_prefix
from derender.core.state.codec import Reader, Writer

MAX_LEADING_SPACE = 256
"""Whitespace before a format's first call that is dropped with it; more is content (a stream
cannot hold more and stay small, so the whole text must treat it alike)."""


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

    def spelled(self, marker: str) -> str:
        return marker if self.spell is None else self.spell.get(marker, marker)


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


def merge(deltas: list[ToolCallDelta]) -> list[ToolCallDelta]:
    """One delta per call index and chunk: name and argument text joined; empty ones gone."""
    merged: list[ToolCallDelta] = []
    for delta in deltas:
        if merged and merged[-1].index == delta.index:
            last = merged[-1]
            merged[-1] = ToolCallDelta(last.index,
                                       delta.name if last.name is None else last.name,
                                       last.arguments + delta.arguments,
                                       delta.id if last.id is None else last.id)
        else:
            merged.append(delta)
    return [d for d in merged if d.name is not None or d.arguments]


def leading_text(buffer: str, markers: tuple[str, ...], final: bool, spoke: bool,
                 drop_at_end: bool) -> tuple[str, str, bool]:
    """Content up to the end of ``buffer``, in which no marker starts: (content, text to hold
    back, spoke). Until something other than whitespace was said, whitespace is held back
    (a call may follow, and then it is no content) while within ``MAX_LEADING_SPACE``; at the
    end it is content unless ``drop_at_end``. ``spoke``: content was said (past the bound,
    whitespace counts)."""
    hold = 0 if final else pending_prefix(buffer, markers)
    out = buffer[:len(buffer) - hold]
    if not spoke and not out.strip() and len(out) <= MAX_LEADING_SPACE:
        if final and drop_at_end:
            out = ""
        elif not final:
            hold, out = len(buffer), ""
    spoke = spoke or bool(out.strip()) or len(out) > MAX_LEADING_SPACE
    return out, buffer[len(buffer) - hold:], spoke


def leads_content(before: str, spoke: bool) -> bool:
    """Whether the text before a format's opening marker is content (else it is dropped)."""
    return spoke or bool(before.strip()) or len(before) > MAX_LEADING_SPACE
