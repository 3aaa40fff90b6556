"""The text of one generated sequence: decode flags, prompt seeding, stop handling.

Shared by chat and completions, non-streaming; streaming reuses the same pieces per chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from derender.contract.requests import ChatRequest, CompletionRequest
from derender.core.decoding.detokenizer import DecodeWindow, detokenize
from derender.core.decoding.stops import (
    StopReason,
    StopSettings,
    drop_stop_token,
    match_stop_string,
    normalize_stop,
    stop_string_candidates,
)
from derender.core.decoding.vocab import Vocabulary


@dataclass(frozen=True, slots=True)
class DecodeSettings:
    """How a request wants its ids turned into text."""

    skip_special: bool
    stops: StopSettings
    spaces: bool = True
    """``spaces_between_special_tokens``: see :meth:`Vocabulary.text_view`."""


def decode_settings(request: ChatRequest | CompletionRequest | None,
                    preserve_special: bool = False) -> DecodeSettings:
    """docs/vllm-compat/api.md §5.2: special tokens are skipped unless the request (or a parser)
    keeps them.

    ``spaces_between_special_tokens`` only matters where vLLM detokenizes with a slow
    tokenizer (a tiktoken folder keeping special tokens); a tokenizer loaded from
    ``tokenizer.json`` is fast and its text does not depend on it.
    """
    if request is None:
        return DecodeSettings(skip_special=not preserve_special, stops=StopSettings())
    return DecodeSettings(
        skip_special=not preserve_special and request.skip_special_tokens is not False,
        stops=StopSettings(
            has_request=True,
            stop=normalize_stop(request.stop),
            stop_token_ids=frozenset(request.stop_token_ids or ()),
            ignore_eos=request.ignore_eos,
            include_stop_str_in_output=request.include_stop_str_in_output,
            min_tokens=request.min_tokens,
        ),
        spaces=request.spaces_between_special_tokens is not False,
    )


def sequence_text(
    vocab: Vocabulary,
    seed: DecodeWindow,
    ids: Sequence[int],
    finish_reason: str | None,
    reported: StopReason,
    settings: DecodeSettings,
) -> tuple[str, StopReason]:
    """Text and stop_reason of a finished sequence (docs/vllm-compat/api.md §5.5 then §5.6)."""
    stops = settings.stops
    kept, stop_reason = drop_stop_token(vocab, ids, finish_reason, reported, stops)
    head_len = max(stops.min_tokens, 0)
    head, window = detokenize(vocab, seed, kept[:head_len], settings.skip_special,
                              settings.spaces)
    tail, _ = detokenize(vocab, window, kept[head_len:], settings.skip_special, settings.spaces)
    text = head + tail
    match = match_stop_string(text, len(tail),
                              stop_string_candidates(finish_reason, reported, stops),
                              stops.include_stop_str_in_output, vocab.restoring)
    if match is not None:
        text, stop_reason = match
    return text, stop_reason
