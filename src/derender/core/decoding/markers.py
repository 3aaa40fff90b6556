"""Finding markers (stop strings, parser markup) in text that arrives in pieces.

A stream sees text a chunk at a time, and a marker such as ``</think>`` or a stop string may
be split over two chunks: whatever could still become one waits in the stream state.
"""

from __future__ import annotations

from collections.abc import Sequence


def earliest(text: str, markers: Sequence[str], start: int = 0) -> tuple[int, str] | None:
    """Position and marker of the first occurrence of any marker at or after ``start``."""
    best: tuple[int, str] | None = None
    for marker in markers:
        at = text.find(marker, start)
        if at >= 0 and (best is None or at < best[0]):
            best = (at, marker)
    return best


def pending_prefix(text: str, markers: Sequence[str], start: int = 0) -> int:
    """Length of the longest end of ``text[start:]`` that is a proper prefix of a marker."""
    longest = 0
    for marker in markers:
        for size in range(min(len(marker) - 1, len(text) - start), longest, -1):
            if text.endswith(marker[:size]):
                longest = size
                break
    return longest


class Finder:
    """``earliest`` over one text asked again and again with a start that only moves forward
    (a machine reading the text marker after marker): each marker's next occurrence is
    remembered until the start passes it, so the text is scanned about once per marker,
    not once per marker found (which is quadratic in a text of many markers)."""

    __slots__ = ("_next", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._next: dict[str, tuple[int, int]] = {}
        """Per marker: (the start it was looked for from, where it is; -1: nowhere after)."""

    def find(self, marker: str, start: int = 0) -> int:
        """``text.find(marker, start)``."""
        known = self._next.get(marker)
        if known is not None:
            since, at = known
            if since <= start and (at < 0 or at >= start):
                return at
        at = self.text.find(marker, start)
        self._next[marker] = (start, at)
        return at

    def earliest(self, markers: Sequence[str], start: int = 0) -> tuple[int, str] | None:
        """``earliest(self.text, markers, start)``."""
        best: tuple[int, str] | None = None
        for marker in markers:
            at = self.find(marker, start)
            if at >= 0 and (best is None or at < best[0]):
                best = (at, marker)
        return best

    def earliest_in(self, rest: str, markers: Sequence[str]) -> tuple[int, str] | None:
        """``earliest(rest, markers)`` for ``rest`` an end of the text (a machine that goes
        on with ``buffer[k:]``): looked up in the whole text, positions in ``rest``."""
        offset = len(self.text) - len(rest)
        found = self.earliest(markers, offset)
        return None if found is None else (found[0] - offset, found[1])
