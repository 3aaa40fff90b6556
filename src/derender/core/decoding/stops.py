"""Stop handling: which trailing stop token leaves the text, and where stop strings cut it.

The engine already stopped; derender only reproduces what the coupled server would have shown:
the stop token that ended generation is dropped from the text (vLLM §5.5) and the text is cut
at the earliest-ending stop string (vLLM §5.6).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from derender.core.decoding.vocab import Vocabulary

StopReason = int | str | None


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

