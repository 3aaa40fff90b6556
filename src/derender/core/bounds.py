"""Limits checked before any decoding, with vLLM's messages, plus our token-range check."""

from __future__ import annotations

from collections.abc import Sequence

from derender.core.errors import BadRequestError
from derender.core.registry import ModelInfo
from derender.protocol import GenerateLogProbs, GenerateTokensResponse


def check_response_bounds(response: GenerateTokensResponse, info: ModelInfo,
                          max_n_sequences: int) -> None:
    """Choices count, then per choice ids / logprob positions / candidates, then prompt
    logprobs, in vLLM's order."""
    if len(response.choices) > max_n_sequences:
        raise BadRequestError(
            f"choices count ({len(response.choices)}) in response '{response.request_id}' "
            f"exceeds server maximum ({max_n_sequences})."
        )
    limit = info.max_model_len
    for choice in response.choices:
        if choice.token_ids and len(choice.token_ids) > limit:
            raise BadRequestError(f"token_ids length ({len(choice.token_ids)}) in choice "
                             f"{choice.index} exceeds max_model_len ({limit}).")
        if choice.token_ids and choice.logprobs is not None:
            check_logprob_bounds(choice.logprobs, choice.index, info)
    prompt_logprobs = response.prompt_logprobs
    if prompt_logprobs is not None and len(prompt_logprobs) > limit:
        raise BadRequestError(f"prompt_logprobs length ({len(prompt_logprobs)}) in response "
                         f"'{response.request_id}' exceeds max_model_len ({limit}).")


def check_logprob_bounds(logprobs: GenerateLogProbs, index: int, info: ModelInfo) -> None:
    content = logprobs.content or []
    if len(content) > info.max_model_len:
        raise BadRequestError(f"logprobs.content length ({len(content)}) in choice {index} "
                         f"exceeds max_model_len ({info.max_model_len}).")
    if info.max_logprobs < 0:
        return
    for entry in content:
        if len(entry.top_logprobs) > info.max_logprobs:
            raise BadRequestError(f"top_logprobs count ({len(entry.top_logprobs)}) in choice "
                             f"{index} exceeds max_logprobs ({info.max_logprobs}).")


def check_prompt_length(ids: Sequence[int] | None, info: ModelInfo) -> None:
    if ids is not None and len(ids) > info.max_model_len:
        raise BadRequestError(f"prompt_token_ids length ({len(ids)}) exceeds max_model_len "
                         f"({info.max_model_len}).")


def check_token_range(ids: Sequence[int] | None, vocab_size: int, where: str) -> None:
    """Refuse ids the tokenizer does not have (vLLM decodes them as empty text)."""
    if not ids:
        return
    low, high = min(ids), max(ids)
    if low < 0:
        raise BadRequestError(f"token id {low} in {where} is negative.")
    if high >= vocab_size:
        raise BadRequestError(f"token id {high} in {where} is out of range: the model's vocabulary "
                         f"has {vocab_size} ids (0 to {vocab_size - 1}).")


def check_logprob_range(logprobs: GenerateLogProbs | None, vocab_size: int, where: str) -> None:
    if logprobs is None or not logprobs.content:
        return
    ids = [i for entry in logprobs.content
           for i in (entry.token_id, *(c.token_id for c in entry.top_logprobs))]
    if min(ids) < 0:  # vLLM's own words for it (its tokenizer binding's message)
        raise BadRequestError("number too small to fit in target type")
    check_token_range(ids, vocab_size, f"{where} logprobs")
