"""The request contract of both derender routes, field by field (vLLM 0.33 compatible).

Each body is a plain union of a non-streaming and a streaming model dispatched on the literal
``stream``; unknown keys are ignored everywhere. Engine payloads (``generate_response``,
``generate_chunk``) are what ``/inference/v1/generate`` returned; the embedded
``chat_request``/``completion_request`` is the request ``/render`` produced, of which derender
reads only the post-processing fields declared here.

Responses are built as plain JSON by the core (see ``derender.core.responses``); their shapes
are OpenAI's ``ChatCompletion``/``Completion`` and their chunk types.
"""

from __future__ import annotations

import secrets
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)

from derender.core.errors import parameter_error

MAX_BATCH_CHUNKS = 4096
"""Most engine chunks in one ``generate_chunks`` call (a schema limit)."""


def _non_negative(ids: list[int] | None) -> list[int] | None:
    if ids and min(ids) < 0:
        raise ValueError("token_ids must not contain negative values")
    return ids


def _non_negative_prompt(ids: list[int] | None) -> list[int] | None:
    if ids and min(ids) < 0:
        raise ValueError("prompt_token_ids must not contain negative values")
    return ids


TokenIds = Annotated[list[int] | None, AfterValidator(_non_negative)]
PromptIds = Annotated[list[int] | None, AfterValidator(_non_negative_prompt)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


def _random_request_id() -> str:
    return secrets.token_hex(8)


# --------------------------------------------------------------------------- engine payloads


class GenerateLogProbCandidate(_Model):
    """One top-k candidate at a position, by id."""

    token_id: int
    """Candidate token id (resolved to its string by derender)."""
    logprob: float
    rank: int | None = None


class GenerateLogProbEntry(_Model):
    """Logprobs of one generated position: the sampled id and the engine's candidates."""

    token_id: int
    """The sampled token id."""
    logprob: float
    rank: int | None = None
    top_logprobs: list[GenerateLogProbCandidate] = Field(default_factory=list)
    """Candidates in engine order (sampled token first, then by rank)."""


class GenerateLogProbs(_Model):
    """Integer-id logprobs as the engine returns them."""

    content: list[GenerateLogProbEntry] | None = None
    """One entry per generated position; null yields ``{"content": null}`` in chat."""


class SpeculativeDecodingMetrics(BaseModel):
    """Speculative decoding statistics, passed through (unknown keys kept)."""

    model_config = ConfigDict(extra="allow")

    mean_acceptance_length: float
    draft_acceptance_rate: float
    acceptance_histogram: list[int]
    num_spec_steps: int
    num_accepted_draft_tokens: int
    num_draft_tokens: int
    num_spec_tokens: int
    per_step_accepted: list[Any] | None = None
    per_step_drafted: list[Any] | None = None


class GenerateMetrics(BaseModel):
    """Engine timing metrics, passed through to the response (unknown keys kept)."""

    model_config = ConfigDict(extra="allow")

    time_to_first_token_ms: float | None = None
    generation_time_ms: float | None = None
    queue_time_ms: float | None = None
    mean_itl_ms: float | None = None
    tokens_per_second: float | None = None
    speculative_decoding: SpeculativeDecodingMetrics | None = None


class PromptLogprob(_Model):
    """One prompt position's logprob as the engine reports it (echoed by chat)."""

    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


class GenerateChoice(_Model):
    """One sequence of a non-streaming engine result."""

    index: int
    """Choice index (chat keeps it; completions renumber choices flatly)."""
    token_ids: TokenIds = None
    """Generated ids, stop token included; empty or null is refused."""
    finish_reason: str | None = "stop"
    """Defaults to ``"stop"`` when omitted, which enables stop-token dropping."""
    stop_reason: int | str | None = None
    """Stop token id or stop string the engine reported."""
    logprobs: GenerateLogProbs | None = None


class GenerateTokensResponse(_Model):
    """A non-streaming ``/inference/v1/generate`` result in ``tokens`` mode."""

    request_id: str = Field(default_factory=_random_request_id)
    """Becomes the response ``id``, verbatim."""
    output_mode: Literal["tokens"] = "tokens"
    """Only token output can be derendered; text outputs are already detokenized."""
    choices: list[GenerateChoice]
    prompt_token_ids: PromptIds = None
    """Seeding fallback; echoed as ``prompt_token_ids`` with ``return_token_ids``."""
    prompt_logprobs: list[dict[str, PromptLogprob] | None] | None = None
    """Echoed by chat, with ``rank``/``decoded_token`` filled as null."""
    metrics: GenerateMetrics | None = None
    kv_transfer_params: dict[str, Any] | None = None


class GenerateStreamChoice(_Model):
    """The (single) sequence of one engine SSE chunk."""

    index: int
    token_ids: list[int] | None = None
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    logprobs: GenerateLogProbs | None = None


class GenerateUsage(_Model):
    """Engine usage of a stream's final chunk."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None


class GenerateTokensStreamResponse(_Model):
    """One SSE chunk of ``/inference/v1/generate`` in ``tokens`` mode."""

    request_id: str = Field(default_factory=_random_request_id)
    output_mode: Literal["tokens"] = "tokens"
    choices: list[GenerateStreamChoice]
    usage: GenerateUsage | None = None
    prompt_token_ids: PromptIds = None
    metrics: GenerateMetrics | None = None


# --------------------------------------------------------------------------- embedded requests


def _check_logprob_fields(token_ids: list[int] | None, logprobs: object, wording: str) -> None:
    if token_ids is None:
        return
    if not token_ids:
        raise parameter_error("`logprob_token_ids` must not be an empty list.",
                              "logprob_token_ids")
    if logprobs is None or logprobs is False:
        raise parameter_error(f"when using `logprob_token_ids`, `logprobs` must be {wording}.",
                              "logprob_token_ids")


class _SamplingParams(_Model):
    """Post-processing fields shared by chat and completion requests."""

    skip_special_tokens: bool | None = None
    """Null counts as true."""
    spaces_between_special_tokens: bool = True
    """Only consulted by slow tokenizers; every served tokenizer here is fast."""
    stop: str | list[str] | None = None
    """Count and length bounded by the service (``DERENDER_MAX_STOP_STRINGS``, 4 as in vLLM,
    and ``DERENDER_MAX_STOP_STRING_CHARS``), checked after the schema."""
    stop_token_ids: list[int] | None = None
    ignore_eos: bool = False
    include_stop_str_in_output: bool = False
    min_tokens: int = 0
    logprob_token_ids: list[int] | None = None
    return_token_ids: bool | None = None


class ChatRequest(_SamplingParams):
    """The chat completion request ``/v1/chat/completions/render`` received."""

    messages: list[Any]
    logprobs: bool | None = False
    top_logprobs: int | None = 0
    include_reasoning: bool = True
    tools: list[Any] | None = None
    """Count and each definition's JSON size bounded by the service (``DERENDER_MAX_TOOLS``,
    ``DERENDER_MAX_TOOL_SCHEMA_BYTES``), checked after the schema."""
    tool_choice: Any = "none"
    """``"none"``, ``"auto"``, ``"required"`` or a named function; ``"auto"`` when tools are
    given without it."""
    parallel_tool_calls: bool | None = True
    chat_template_kwargs: dict[str, Any] | None = None
    reasoning_effort: str | None = None

    @model_validator(mode="after")
    def _check(self) -> ChatRequest:
        _check_logprob_fields(self.logprob_token_ids, self.logprobs, "set to true")
        top = self.top_logprobs
        if top is not None and top < 0 and top != -1:
            raise parameter_error("`top_logprobs` must be a positive value or -1.",
                                  "top_logprobs", top)
        if top is not None and (top > 0 or top == -1) and not self.logprobs:
            raise parameter_error("when using `top_logprobs`, `logprobs` must be set to true.",
                                  "top_logprobs")
        if self.tools is not None and not self.tools:
            raise parameter_error("`tools` must not be an empty array. Either provide at least "
                                  "one tool or omit the field entirely.", "tools")
        if "tool_choice" not in self.model_fields_set:
            self.tool_choice = "auto" if self.tools else "none"
        elif self.tool_choice is not None and self.tool_choice != "none" and not self.tools:
            raise parameter_error("When using `tool_choice`, `tools` must be set.",
                                  "tool_choice")
        if isinstance(self.tool_choice, dict):
            function = self.tool_choice.get("function")
            name = function.get("name") if isinstance(function, dict) else None
            names = [(t.get("function") or {}).get("name") for t in self.tools or []
                     if isinstance(t, dict)]
            if name not in names:
                raise parameter_error("The tool specified in `tool_choice` does not match any "
                                      "of the specified `tools`", "tool_choice")
        return self


class CompletionRequest(_SamplingParams):
    """The completion request ``/v1/completions/render`` received."""

    prompt: Any = None
    logprobs: int | None = None

    @model_validator(mode="after")
    def _check(self) -> CompletionRequest:
        _check_logprob_fields(self.logprob_token_ids, self.logprobs, "set")
        if self.logprobs is not None and self.logprobs < 0 and self.logprobs != -1:
            raise parameter_error("`logprobs` must be a positive value or -1.", "logprobs",
                                  self.logprobs)
        if self.prompt is None or self.prompt == "":
            raise parameter_error("Either prompt or prompt_embeds must be provided and "
                                  "non-empty.", "prompt")
        return self


# --------------------------------------------------------------------------- derender requests


class DerenderChatRequest(_Model):
    """Non-streaming chat derender: one engine result into a ``chat.completion``."""

    stream: Literal[False] = False
    model: str | None = None
    """Served model name; null or empty selects the default model."""
    generate_response: GenerateTokensResponse
    prompt_tokens: int | None = None
    """Reported as ``usage.prompt_tokens`` (0 when null)."""
    prompt_token_ids: PromptIds = None
    """Seeds detokenization (its last ids); falls back to generate_response's."""
    chat_request: ChatRequest | None = None
    """Post-processing settings; required when the model has a parser."""


class DerenderCompletionRequest(_Model):
    """Non-streaming completions derender: one engine result per prompt."""

    stream: Literal[False] = False
    model: str | None = None
    generate_responses: list[GenerateTokensResponse]
    """One per prompt, in the order ``/v1/completions/render`` returned them."""
    prompt_tokens: list[int] | None = None
    """Per prompt; summed into ``usage.prompt_tokens``."""
    prompt_token_ids: list[PromptIds] | None = None
    """Per prompt seeding ids; a null entry falls back to that response's."""
    completion_request: CompletionRequest | None = None

    @model_validator(mode="after")
    def _lengths(self) -> DerenderCompletionRequest:
        count = len(self.generate_responses)
        for name in ("prompt_tokens", "prompt_token_ids"):
            value = getattr(self, name)
            if value is not None and len(value) != count:
                raise ValueError(
                    f"{name} length ({len(value)}) must equal generate_responses length ({count})"
                )
        return self


class _StreamFields(_Model):
    """Fields every streaming call repeats, whatever the route."""

    stream: Literal[True]
    model: str | None = None
    stream_state: Any = None
    """Null on the first call, then the state the previous call returned (opaque): the JSON
    object (as vLLM 0.33 types it) or the bare string of earlier releases."""
    prompt_tokens: int | None = None
    """Overrides ``usage.prompt_tokens`` of a usage chunk."""
    prompt_token_ids: PromptIds = None
    """Seeds the first call (fallback: the chunk's own)."""


class _ChatStreamFields(_StreamFields):
    chat_request: ChatRequest | None = None


class DerenderChatStreamRequest(_ChatStreamFields):
    """Streaming chat derender: one engine chunk into one ``chat.completion.chunk``."""

    generate_chunk: GenerateTokensStreamResponse


class DerenderChatStreamBatchRequest(_ChatStreamFields):
    """Streaming chat derender of several consecutive engine chunks in one call (ours)."""

    generate_chunks: Annotated[list[GenerateTokensStreamResponse],
                               Field(min_length=1, max_length=MAX_BATCH_CHUNKS)]
    """Consecutive chunks of one stream; the answer lists one OpenAI chunk per entry."""


class _CompletionStreamFields(_StreamFields):
    completion_request: CompletionRequest | None = None


class DerenderCompletionStreamRequest(_CompletionStreamFields):
    """Streaming completions derender: one engine chunk into one ``text_completion`` chunk."""

    generate_chunk: GenerateTokensStreamResponse


class DerenderCompletionStreamBatchRequest(_CompletionStreamFields):
    """Streaming completions derender of several consecutive engine chunks (ours)."""

    generate_chunks: Annotated[list[GenerateTokensStreamResponse],
                               Field(min_length=1, max_length=MAX_BATCH_CHUNKS)]


ChatBody = DerenderChatRequest | DerenderChatStreamRequest
CompletionBody = DerenderCompletionRequest | DerenderCompletionStreamRequest
