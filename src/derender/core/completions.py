"""Completions derender: engine results (one per prompt) into a ``text_completion``, or
engine chunks into ``text_completion`` chunks."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from derender.contract.requests import (
    CompletionRequest,
    DerenderCompletionRequest,
    DerenderCompletionStreamBatchRequest,
    DerenderCompletionStreamRequest,
    GenerateTokensStreamResponse,
)
from derender.core.bounds import (
    check_logprob_range,
    check_prompt_length,
    check_response_bounds,
    check_token_range,
)
from derender.core.decoding.detokenizer import seed_window
from derender.core.decoding.logprobs import completion_logprobs, resolve_logprobs
from derender.core.decoding.sequence import decode_settings, sequence_text
from derender.core.errors import BadRequestError
from derender.core.registry import ServedModel
from derender.core.state.stream import StreamState
from derender.core.streaming import (
    ChoiceStep,
    StreamSettings,
    run_stream,
    stream_chunks,
    stream_usage,
)
from derender.core.usage import usage
from derender.settings import MAX_N_SEQUENCES

if TYPE_CHECKING:
    from derender.contract.responses import (
        CompletionChoice,
        CompletionChunk,
        CompletionChunkChoice,
        CompletionLogprobs,
        TextCompletion,
    )


def completion_keep(request: CompletionRequest | None) -> int | None:
    """Candidates kept per position (None: all) — vLLM's completions rule."""
    if request is None or request.logprob_token_ids is not None:
        return None
    if request.logprobs is None or request.logprobs == -1:
        return None
    # capped: past a list's length any count keeps it whole, and the stream's fingerprint
    # prints it (logprobs + 1 of 4301 digits cannot be printed: a 500)
    return max(min(request.logprobs, sys.maxsize - 1) + 1, 0)


def derender_completion(body: DerenderCompletionRequest, model: ServedModel,
                        max_n_sequences: int) -> TextCompletion:
    info, vocab = model.info, model.vocab
    responses = body.generate_responses
    if not responses:
        raise BadRequestError("generate_responses must not be empty")
    if len(responses) > max_n_sequences:
        raise BadRequestError(f"generate_responses count ({len(responses)}) exceeds server maximum "
                              f"({max_n_sequences}). Set {MAX_N_SEQUENCES} to increase this "
                              "limit.")
    for response in responses:
        check_response_bounds(response, info, max_n_sequences)
    explicit_prompts = body.prompt_token_ids or [None] * len(responses)
    for ids in explicit_prompts:
        check_prompt_length(ids, info)

    request = body.completion_request
    settings = decode_settings(request)
    keep = completion_keep(request)
    return_ids = bool(request and request.return_token_ids)

    choices: list[CompletionChoice] = []
    completion_tokens = 0
    for response, explicit in zip(responses, explicit_prompts, strict=True):
        prompt_ids = explicit if explicit is not None else response.prompt_token_ids
        check_token_range(prompt_ids, vocab.size, "prompt_token_ids")
        seed = seed_window(vocab, prompt_ids, settings.skip_special)
        for choice in response.choices:
            ids = choice.token_ids
            if not ids:
                raise BadRequestError(f"choice {choice.index} in response {response.request_id} "
                                 "has empty or null token_ids")
            where = f"choice {choice.index} of response {response.request_id}"
            check_token_range(ids, vocab.size, where)
            check_logprob_range(choice.logprobs, vocab.size, where)
            completion_tokens += len(ids)
            text, stop_reason = sequence_text(vocab, seed, ids, choice.finish_reason,
                                              choice.stop_reason, settings)
            logprobs: CompletionLogprobs | None = None
            if choice.logprobs is not None:
                positions, _ = resolve_logprobs(vocab, choice.logprobs, keep, ())
                logprobs, _ = completion_logprobs(positions, 0)
            choices.append({
                "index": len(choices),
                "text": text,
                "logprobs": logprobs,
                "finish_reason": choice.finish_reason,
                "stop_reason": stop_reason,
                "token_ids": list(ids) if return_ids else None,
                "prompt_logprobs": None,
                "prompt_token_ids": response.prompt_token_ids if return_ids else None,
                "routed_experts": None,
                "weight_versions": None,
            })

    first = responses[0]
    kv = first.kv_transfer_params
    if any(r.kv_transfer_params != kv for r in responses[1:]):
        kv = None
    metrics = first.metrics if len(responses) == 1 else None
    return {
        "id": first.request_id,
        "object": "text_completion",
        "created": int(time.time()),
        "model": body.model or info.name,
        "choices": choices,
        "service_tier": None,
        "system_fingerprint": None,
        "usage": usage(sum(body.prompt_tokens or []), completion_tokens),
        "kv_transfer_params": kv,
        "ec_transfer_params": None,
        "metrics": None if metrics is None else metrics.model_dump(),
    }


def derender_completion_stream(
    body: DerenderCompletionStreamRequest | DerenderCompletionStreamBatchRequest,
    model: ServedModel,
    state: StreamState | None,
    ttl_seconds: int,
    caller: str | None = None,
) -> tuple[list[CompletionChunk], StreamState]:
    """One ``text_completion`` chunk per engine chunk, and the state to continue from (bound
    to ``caller`` when the call has an authenticated one)."""
    info = model.info
    request = body.completion_request
    check_prompt_length(body.prompt_token_ids, info)
    settings = StreamSettings("completions", model, decode_settings(request),
                              completion_keep(request), ttl_seconds, caller=caller,
                              request=request)
    return_ids = bool(request and request.return_token_ids)
    name = body.model or info.name

    def render(chunk: GenerateTokensStreamResponse, step: ChoiceStep | None,
               before: StreamState) -> CompletionChunk:
        choices: list[CompletionChunkChoice] = []
        if step is not None:
            logprobs: CompletionLogprobs | None = None
            if step.logprobs is not None or step.logprobs_null_content:
                logprobs, _ = completion_logprobs(step.logprobs or [], step.text_offset)
            choices.append({
                "index": step.index,
                "text": step.text,
                "logprobs": logprobs,
                "finish_reason": step.finish_reason,
                "stop_reason": step.stop_reason,
                "prompt_token_ids": chunk.prompt_token_ids if return_ids else None,
                "token_ids": step.token_ids if return_ids else None,
                "weight_versions": None,
            })
        return {
            "id": chunk.request_id,
            "object": "text_completion",
            "created": before.issued_at,
            "model": name,
            "choices": choices,
            "usage": stream_usage(chunk.usage, body.prompt_tokens),
            "system_fingerprint": None,
            "metrics": None if chunk.metrics is None else chunk.metrics.model_dump(),
            "kv_transfer_params": None,
        }

    return run_stream(settings, state, stream_chunks(body), body.prompt_token_ids, render)
