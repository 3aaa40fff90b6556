"""Stop handling: which trailing stop token leaves the text, and where stop strings cut it.

The engine already stopped; derender only reproduces what the coupled server would have shown:
the stop token that ended generation is dropped from the text (docs/vllm-compat/api.md §5.5) and the
text is cut at the earliest-ending stop string (docs/vllm-compat/api.md §5.6).

On the parser path the text is marked (``Vocabulary.marked_by``: a single-token marker is one
private-use stand-in, a private-use character the model wrote is escaped), while vLLM matches
stop strings on the text itself: the ``*_marked`` functions match on the text the marked text
stands for (the marked vocabulary's ``restoring`` table) and give positions back in marked
characters. A cut inside a marker's text keeps the part before the cut as plain characters
(no longer that marker), as vLLM's text would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from derender.core.decoding.markers import pending_prefix
from derender.core.decoding.vocab import Vocabulary

StopReason = int | str | None
Table = Mapping[int, str | int]
"""A restore table (``vocab.restore_table``): marked characters → what they stand for."""


@dataclass(frozen=True, slots=True)
class StopSettings:
    """The stop-related fields of the embedded chat/completion request."""

    has_request: bool = False
    stop: tuple[str, ...] = ()
    """Non-empty stop strings of the request, in request order."""
    stop_token_ids: frozenset[int] = frozenset()
    ignore_eos: bool = False
    include_stop_str_in_output: bool = False
    min_tokens: int = 0


def normalize_stop(stop: str | Sequence[str] | None) -> tuple[str, ...]:
    """A request's ``stop`` as a tuple of its non-empty strings."""
    if stop is None:
        return ()
    if isinstance(stop, str):
        return (stop,) if stop else ()
    return tuple(s for s in stop if s)


def is_stop_token(vocab: Vocabulary, token: int, settings: StopSettings) -> bool:
    """Whether a ``"stop"`` finish right after ``token`` would drop it (no reported reason)."""
    honor_eos = not settings.has_request or not settings.ignore_eos
    return token in settings.stop_token_ids or (honor_eos and (
        token == vocab.eos_id or token in vocab.model_eos_ids))


def drop_stop_token(
    vocab: Vocabulary,
    ids: Sequence[int],
    finish_reason: str | None,
    stop_reason: StopReason,
    settings: StopSettings,
) -> tuple[Sequence[int], StopReason]:
    """The ids whose text is shown, and the stop_reason to report.

    Only a ``"stop"`` finish ends on a stop token. The tokenizer's EOS leaves stop_reason null;
    another generation_config EOS id or a request ``stop_token_ids`` entry is reported as the
    int; an engine-reported int stop_reason is honoured when it is the last id. The token
    stays in the text with ``include_stop_str_in_output``, but stop_reason is still reported.
    """
    if finish_reason != "stop" or isinstance(stop_reason, str) or not ids:
        return ids, stop_reason
    last = ids[-1]
    if stop_reason is None:
        honor_eos = not settings.has_request or not settings.ignore_eos
        if honor_eos and last == vocab.eos_id:
            stopped = True
        elif last in settings.stop_token_ids or (honor_eos and last in vocab.model_eos_ids):
            stopped, stop_reason = True, last
        else:
            stopped = False
    else:
        stopped = last == stop_reason
    if stopped and not settings.include_stop_str_in_output:
        return ids[:-1], stop_reason
    return ids, stop_reason


def stop_string_candidates(finish_reason: str | None, stop_reason: StopReason,
                           settings: StopSettings) -> tuple[str, ...]:
    """Stop strings to cut at: a reported string wins over the request's list."""
    if finish_reason != "stop" or isinstance(stop_reason, int):
        return ()
    if isinstance(stop_reason, str):
        return (stop_reason,)
    return settings.stop


def match_stop_string(text: str, tail_len: int, candidates: Sequence[str], include: bool,
                      table: Table | None) -> tuple[str, str] | None:
    """The text cut at the earliest-ending stop string ending in the last ``tail_len``
    characters, and that string; None without a match. ``table``: ``text`` is marked, and
    stands for what this table restores (``Vocabulary.restoring``)."""
    if table is not None:
        match = find_stop_string_marked(text, tail_len, candidates, table)
        return None if match is None else (
            cut_at_stop_string_marked(text, match, include, table), match[2])
    match = find_stop_string(text, tail_len, candidates)
    return None if match is None else (cut_at_stop_string(text, match, include), match[2])


def find_stop_string(text: str, tail_len: int, candidates: Sequence[str]
                     ) -> tuple[int, int, str] | None:
    """Earliest-ending match that ends inside the last ``tail_len`` characters.

    Returns ``(start, end, string)``; ties on the end go to the earlier candidate.
    """
    if tail_len <= 0:
        return None
    best: tuple[int, int, str] | None = None
    for candidate in candidates:
        start = text.find(candidate, max(0, len(text) + 1 - tail_len - len(candidate)))
        if start < 0:
            continue
        end = start + len(candidate)
        if best is None or end < best[1]:
            best = (start, end, candidate)
    return best


def cut_at_stop_string(text: str, match: tuple[int, int, str], include: bool) -> str:
    """The text up to the match, keeping the stop string only when ``include``."""
    start, end, _ = match
    return text[:end] if include else text[:start]



def _spelled(char: str, table: Table) -> str:
    """The text one marked character stands for."""
    got = table.get(ord(char))
    if got is None:
        return char
    return got if isinstance(got, str) else chr(got)


def restore(text: str, table: Table) -> str:
    """The text a marked text stands for."""
    return text.translate(table)


def find_stop_string_marked(text: str, tail_len: int, candidates: Sequence[str], table: Table
                            ) -> tuple[int, int, str] | None:
    """:func:`find_stop_string` on what the marked ``text`` stands for (``tail_len`` in
    marked characters); the match's positions are in that restored text."""
    if tail_len <= 0 or not candidates:
        return None
    tail = text[max(0, len(text) - tail_len):]
    return find_stop_string(restore(text, table),
                            len(restore(tail, table)) + max(0, tail_len - len(text)), candidates)


def marked_prefix(text: str, length: int, table: Table) -> str:
    """The marked text standing for the first ``length`` characters of ``restore(text)``: a
    marker cut inside keeps its characters before the cut, plain."""
    at = 0
    for index, char in enumerate(text):
        spelled = _spelled(char, table)
        if at + len(spelled) > length:
            return text[:index] + (spelled[:length - at] if len(spelled) > 1 else "")
        at += len(spelled)
    return text


def cut_at_stop_string_marked(text: str, match: tuple[int, int, str], include: bool,
                              table: Table) -> str:
    """:func:`cut_at_stop_string` for a marked text and a match of
    :func:`find_stop_string_marked`."""
    start, end, _ = match
    return marked_prefix(text, end if include else start, table)


def matched_from(text: str, match: tuple[int, int, str], table: Table | None) -> int:
    """Characters of ``text`` before a match of :func:`find_stop_string` (``table`` None) or
    :func:`find_stop_string_marked`: a marker the match begins inside counts as after it."""
    if table is None:
        return match[0]
    at = 0
    for index, char in enumerate(text):
        at += len(_spelled(char, table))
        if at > match[0]:
            return index
    return len(text)


def pending_prefix_marked(text: str, stops: Sequence[str], table: Table) -> int:
    """Marked characters at the end of ``text`` to hold back because what they stand for
    could begin a stop string: whole characters, so a marker is held whole or not at all."""
    need = pending_prefix(restore(text, table), stops)
    held = 0
    while need > 0:
        held += 1
        need -= len(_spelled(text[-held], table))
    return held
