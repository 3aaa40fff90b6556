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


def pending_prefix(text: str, markers: Sequence[str]) -> int:
    """Length of the longest end of ``text`` that is a proper prefix of a marker."""
    longest = 0
    for marker in markers:
        for size in range(min(len(marker) - 1, len(text)), longest, -1):
            if text.endswith(marker[:size]):
                longest = size
                break
    return longest
