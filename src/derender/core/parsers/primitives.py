"""The rules every tool-call machine applies, written once: the engine (``engine.py``) and the
hand-written machines (``formats/``) call these instead of keeping their own copies.

- Deltas: ``merge`` joins a chunk's deltas per call; ``member`` and ``escape`` write a call's
  arguments as JSON text piece by piece (a member's key, a string's body as it streams).
- Whitespace: before a format's first call it is held, up to ``MAX_LEADING_SPACE``, and
  dropped if a call follows (``leading_text``, ``leads_content``); at the end of content or
  reasoning it is held up to a format's bound (``split_space``).
- Names and keys are accumulated up to a bound; past it they are no name (``bounded``).
- A JSON value being scanned (``json_value.ValueScan``) is packed into a state's bits the same
  way by every format that streams JSON arguments (``scan_bits``, ``unpack_scan``).

Schema typing lives in ``schema.py``.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, TypeVar

from derender.core.decoding.markers import pending_prefix
from derender.core.parsers.json_value import ValueScan
from derender.core.parsers.tools import ToolCallDelta, ToolContext

MAX_LEADING_SPACE = 256
"""Whitespace before a format's first call that is dropped with it; more is content (a stream
cannot hold more and stay small, so the whole text must treat it alike)."""


# deltas

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


def escape(text: str) -> str:
    """``text`` as the body of a JSON string (what a string value streams as)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def member(key: str, first: bool, brace: bool = True) -> str:
    """The JSON text opening an arguments object's member ``key``: ``{"key": `` for the
    first (without ``brace``: its ``{`` was sent with the call's name), ``, "key": `` after
    it; its value follows."""
    return (("{" if brace else "") if first else ", ") + json.dumps(key, ensure_ascii=False) \
        + ": "


# whitespace

_SPACE = re.compile(r"\s*")
"""``str.isspace`` characters (``\\s`` matches exactly those)."""


def skip_space(text: str, pos: int, chars: str | None = None) -> int:
    """Where ``text[pos:].lstrip(chars)`` begins in ``text``: a machine reading a long text
    by position skips whitespace in place instead of stripping a copy of the rest."""
    if chars is None:
        match = _SPACE.match(text, pos)
        return pos if match is None else match.end()
    while pos < len(text) and text[pos] in chars:
        pos += 1
    return pos


def strip_end(text: str, start: int, end: int) -> int:
    """Where ``text[start:end].rstrip()`` ends in ``text`` (read in place)."""
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def unread(buffer: str, markers: tuple[str, ...], final: bool) -> tuple[str, str]:
    """``buffer`` as (the text to read now, the end held back because it may begin one of
    ``markers``: read again with the next text); at the end of the output nothing is held."""
    hold = 0 if final else pending_prefix(buffer, markers)
    return buffer[:len(buffer) - hold], buffer[len(buffer) - hold:]


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


def split_space(text: str, limit: int) -> tuple[str, str]:
    """``text`` less the whitespace ending it, and that whitespace, held back (it is dropped
    if a call follows, or if reasoning ends there), at most ``limit`` characters of it: what
    is longer is said."""
    body = text.rstrip()
    cut = len(body) if len(text) - len(body) <= limit else len(text) - limit
    return text[:cut], text[cut:]


# names

def bounded(acc: str, piece: str, limit: int) -> str | None:
    """A name or key read so far, ``piece`` added; None when it grew past ``limit`` characters
    (it is then no name: the call or parameter is not read)."""
    acc += piece
    return acc if len(acc) <= limit else None


# JSON values in a state

def scan_bits(scan: ValueScan) -> int:
    """The flags of a JSON value's scan, as bits 1-4 of a state's flag word (bit 0 is the
    format's own ``spoke``; its other flags go above)."""
    return scan.started << 1 | scan.in_string << 2 | scan.escaped << 3 | scan.scalar << 4


def unpack_scan(bits: int, depth: int) -> ValueScan:
    """The scan ``scan_bits`` packed (with its depth)."""
    return ValueScan(started=bool(bits & 2), depth=depth, in_string=bool(bits & 4),
                     escaped=bool(bits & 8), scalar=bool(bits & 16))


# a machine's working copy of its state

class Run:
    """What a machine's working copy of its state has while text is fed (the engine's and the
    Qwen3 XML family's subclass it): its flag word, the name or key being read (``acc``), the
    call counter (the next call's index) and the deltas made."""

    flags: int
    acc: str
    calls: int
    deltas: list[ToolCallDelta]

    def has(self, flag: int) -> bool:
        return bool(self.flags & flag)

    def set(self, flag: int, on: bool = True) -> None:
        self.flags = self.flags | flag if on else self.flags & ~flag

    def accumulate(self, piece: str, limit: int, overflow: int) -> None:
        """More of the name or key in ``acc``; past ``limit`` characters it is none (``acc``
        emptied, ``overflow`` set) until the next one begins (the machine clears the flag)."""
        if self.flags & overflow:
            return
        acc = bounded(self.acc, piece, limit)
        self.acc = acc or ""
        self.set(overflow, acc is None)

    def new_call(self, name: str, arguments: str = "") -> None:
        """A call is returned: its name's delta (with the first of its arguments)."""
        self.deltas.append(ToolCallDelta(self.calls, name, arguments))
        self.calls += 1

    def arguments(self, text: str) -> None:
        """More of the open call's arguments."""
        if text:
            self.deltas.append(ToolCallDelta(self.calls - 1, None, text))


F = TypeVar("F", bound=Any)


def forced_call(state: F, text: str, final: bool, context: ToolContext, max_space: int
                ) -> tuple[str, list[ToolCallDelta], F]:
    """vLLM's JSON path for a forced ``tool_choice`` (a format without a structural tag): a
    named function's arguments are the content as written, in one call, if it is not blank
    (its leading whitespace held meanwhile, up to ``max_space``); for "required" no call and
    no content (vLLM reads a JSON list there, which is not done here). ``state`` has
    ``space`` and ``calls`` fields."""
    if context.forced_name is None:
        return "", [], state
    if state.calls:
        return "", [ToolCallDelta(0, None, text)] if text else [], state
    space = state.space + text
    if not space.strip() and (final or len(space) <= max_space):
        return "", [], replace(state, space="" if final else space)
    return "", [ToolCallDelta(0, context.forced_name, space)], replace(state, calls=1, space="")
