"""Limits checked before any decoding, with vLLM's messages, plus our token-range check.

Every bound the service enforces is here (README, Limits), the per-call work budget
(``check_call_budget``) included, except the body size (413, read
by the app before parsing), the ``stream_state`` size (``state_token.verify``) and the
schema's own (``MAX_BATCH_CHUNKS``). A message names the limit and, when it is configurable,
its variable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from derender.contract.requests import (
    ChatRequest,
    CompletionRequest,
    GenerateLogProbs,
    GenerateTokensResponse,
    GenerateTokensStreamResponse,
)
from derender.core.errors import BadRequestError
from derender.core.registry import ModelInfo
from derender.settings import (
    MAX_CALL_TOKENS,
    MAX_N_SEQUENCES,
    MAX_STOP_STRING_CHARS,
    MAX_STOP_STRINGS,
    MAX_TOOL_SCHEMA_BYTES,
    MAX_TOOLS,
    Settings,
)


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """Bounds on the embedded ``chat_request`` / ``completion_request`` (defaults: the
    settings' defaults)."""

    max_stop_strings: int = Settings.max_stop_strings
    max_stop_string_chars: int = Settings.max_stop_string_chars
    max_tools: int = Settings.max_tools
    max_tool_schema_bytes: int = Settings.max_tool_schema_bytes

    @classmethod
    def of(cls, settings: Settings) -> RequestLimits:
        """The limits ``settings`` configure."""
        return cls(settings.max_stop_strings, settings.max_stop_string_chars,
                   settings.max_tools, settings.max_tool_schema_bytes)


def check_request_limits(request: ChatRequest | CompletionRequest | None,
                         limits: RequestLimits) -> None:
    """Stop strings (count, then each one's length), then tools (count, then each one's
    size), before anything is decoded."""
    if request is None:
        return
    stop = request.stop
    stops = [stop] if isinstance(stop, str) else stop or []
    if len(stops) > limits.max_stop_strings:
        raise BadRequestError(
            f"stop count ({len(stops)}) exceeds server maximum ({limits.max_stop_strings}). "
            f"Set {MAX_STOP_STRINGS} to increase this limit.", param="stop")
    for position, text in enumerate(stops):
        if len(text) > limits.max_stop_string_chars:
            raise BadRequestError(
                f"stop string {position} length ({len(text)} characters) exceeds server "
                f"maximum ({limits.max_stop_string_chars}). Set {MAX_STOP_STRING_CHARS} to "
                "increase this limit.", param="stop")
    tools = request.tools if isinstance(request, ChatRequest) else None
    if not tools:
        return
    if len(tools) > limits.max_tools:
        raise BadRequestError(
            f"tools count ({len(tools)}) exceeds server maximum ({limits.max_tools}). "
            f"Set {MAX_TOOLS} to increase this limit.", param="tools")
    for position, tool in enumerate(tools):
        size = _json_size(tool)
        if size is None:
            raise BadRequestError(f"tools[{position}] is nested too deeply to be measured "
                                  f"against {MAX_TOOL_SCHEMA_BYTES}.", param="tools")
        if size > limits.max_tool_schema_bytes:
            raise BadRequestError(
                f"tools[{position}] size ({size} bytes of JSON) exceeds server maximum "
                f"({limits.max_tool_schema_bytes} bytes). Set {MAX_TOOL_SCHEMA_BYTES} to "
                "increase this limit.", param="tools")


def _json_size(value: object) -> int | None:
    """UTF-8 size of ``value`` as compact JSON; None when nested deeper than the
    interpreter can write."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:
        return None
    return len(text.encode("utf-8", "surrogatepass"))


def check_response_bounds(response: GenerateTokensResponse, info: ModelInfo,
                          max_n_sequences: int) -> None:
    """Choices count, then per choice ids / logprob positions / candidates, then prompt
    logprobs, in vLLM's order."""
    if len(response.choices) > max_n_sequences:
        raise BadRequestError(
            f"choices count ({len(response.choices)}) in response '{response.request_id}' "
            f"exceeds server maximum ({max_n_sequences}). Set {MAX_N_SEQUENCES} to increase "
            "this limit.")
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
    prompt_ids = response.prompt_token_ids  # not bounded by vLLM
    if prompt_ids is not None and len(prompt_ids) > limit:
        raise BadRequestError(f"prompt_token_ids length ({len(prompt_ids)}) in response "
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


def check_prompt_length(ids: Sequence[int] | None, info: ModelInfo,
                        name: str = "prompt_token_ids") -> None:
    if ids is not None and len(ids) > info.max_model_len:
        raise BadRequestError(f"{name} length ({len(ids)}) exceeds max_model_len "
                         f"({info.max_model_len}).")


def check_stream_bounds(chunks: Sequence[GenerateTokensStreamResponse],
                        prompt_ids: Sequence[int] | None, tokens_seen: int,
                        info: ModelInfo) -> None:
    """Every chunk of a streaming call before any of them is decoded (each carries at most
    one choice, checked first): the chunk's own prompt ids, then the cumulative length
    (vLLM's message; also for chunks without a choice, whose prompt still seeds the stream),
    then the choice's logprob positions and candidates (vLLM bounds those only without
    streaming)."""
    limit = info.max_model_len
    prompt_len = len(prompt_ids or ())
    for chunk in chunks:
        check_prompt_length(chunk.prompt_token_ids, info, "generate_chunk.prompt_token_ids")
        choice = chunk.choices[0] if chunk.choices else None
        delta = len(choice.token_ids or ()) if choice is not None else 0
        if prompt_len + tokens_seen + delta > limit:
            raise BadRequestError(
                f"prompt_token_ids length ({prompt_len}) plus output_token_ids length "
                f"({tokens_seen}) plus delta ({delta}) exceeds max_model_len ({limit}).")
        if choice is not None and choice.logprobs is not None:
            check_logprob_bounds(choice.logprobs, choice.index, info)
        tokens_seen += delta


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


def call_work(body: object, max_model_len: int | None = None) -> int:
    """The work a call asks for, in units the size of its engine payload tells before any of
    it is decoded: every output id, every logprob position and candidate, every prompt
    logprob candidate, over all its responses, choices and chunks. Decoding, parsing and
    logprobs cost a bounded time per unit (the parsers are linear in their text: issue 22,
    ``tests/test_cost_linear.py``), so the units bound the call's time. With
    ``max_model_len``, a choice's ids and positions count up to it: more is refused by the
    model's own bound (vLLM's message) before anything is decoded."""
    responses: list[GenerateTokensResponse | GenerateTokensStreamResponse] = []
    for name in ("generate_response", "generate_chunk"):
        one = getattr(body, name, None)
        if one is not None:
            responses.append(one)
    for name in ("generate_responses", "generate_chunks"):
        responses.extend(getattr(body, name, None) or ())
    units = 0
    for response in responses:
        for choice in response.choices:
            units += len((choice.token_ids or [])[:max_model_len])
            logprobs = choice.logprobs
            if logprobs is not None and logprobs.content:
                units += sum(1 + len(entry.top_logprobs)
                             for entry in logprobs.content[:max_model_len])
        prompt_logprobs = getattr(response, "prompt_logprobs", None)
        if prompt_logprobs:
            units += sum(len(entry) for entry in prompt_logprobs[:max_model_len] if entry)
    return units


def check_call_budget(body: object, max_call_tokens: int, max_model_len: int | None = None
                      ) -> None:
    """Refuse a call whose work (``call_work``) passes the per-call budget, before any of it
    is done (README Limits: ``DERENDER_MAX_CALL_TOKENS``)."""
    units = call_work(body, max_model_len)
    if units > max_call_tokens:
        raise BadRequestError(
            f"the call carries {units} output ids and logprob candidates, more than the "
            f"{max_call_tokens} one call may derender. Set {MAX_CALL_TOKENS} to increase this "
            "limit, or send the output in smaller calls.")
