"""The request contract of both derender routes, field by field (vLLM 0.33 compatible).

Each body is a plain union of a non-streaming and a streaming model dispatched on the literal
``stream``; unknown keys are ignored everywhere. Engine payloads (``generate_response``,
``generate_chunk``) are what ``/inference/v1/generate`` returned; the embedded
``chat_request``/``completion_request`` is the request ``/render`` produced, of which derender
reads only the post-processing fields declared here.

Responses are typed in ``derender.contract.responses`` (OpenAI's ``ChatCompletion``/
``Completion`` and their chunk types, as vLLM 0.33 fills them).
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

from derender.contract.errors import parameter_error
from derender.settings import MAX_BATCH_CHUNKS


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
    # allow_inf_nan False (here and on the metrics models): float fields refuse NaN and the
    # infinities also when given as strings ("NaN", "-inf", "1e400"), which pydantic would
    # otherwise coerce and no JSON answer can carry (issue 22)
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


def _random_request_id() -> str:
    return secrets.token_hex(8)


# --------------------------------------------------------------------------- engine payloads


class GenerateLogProbCandidate(_Model):
    """One top-k candidate at a position, by id."""

    token_id: int
    """Candidate token id (resolved to its string by derender)."""
    logprob: float
    """Log probability."""
    rank: int | None = None
    """Rank among the vocabulary (1 = most likely)."""


class GenerateLogProbEntry(_Model):
    """Logprobs of one generated position: the sampled id and the engine's candidates."""

    token_id: int
    """The sampled token id."""
    logprob: float
    """Log probability."""
    rank: int | None = None
    """Rank among the vocabulary (1 = most likely)."""
    top_logprobs: list[GenerateLogProbCandidate] = Field(default_factory=list)
    """Candidates in engine order (sampled token first, then by rank)."""


class GenerateLogProbs(_Model):
    """Integer-id logprobs as the engine returns them."""

    content: list[GenerateLogProbEntry] | None = None
    """One entry per generated position; null yields ``{"content": null}`` in chat."""


class SpeculativeDecodingMetrics(BaseModel):
    """Speculative decoding statistics, passed through (unknown keys kept)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    mean_acceptance_length: float
    """Mean accepted length per step."""
    draft_acceptance_rate: float
    """Share of draft tokens accepted."""
    acceptance_histogram: list[int]
    """Steps per accepted length."""
    num_spec_steps: int
    """Speculative steps."""
    num_accepted_draft_tokens: int
    """Draft tokens accepted."""
    num_draft_tokens: int
    """Draft tokens proposed."""
    num_spec_tokens: int
    """Speculative tokens per step."""
    per_step_accepted: list[Any] | None = None
    """Accepted tokens per step."""
    per_step_drafted: list[Any] | None = None
    """Drafted tokens per step."""


class GenerateMetrics(BaseModel):
    """Engine timing metrics, passed through to the response (unknown keys kept)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    time_to_first_token_ms: float | None = None
    """Milliseconds to the first token."""
    generation_time_ms: float | None = None
    """Milliseconds generating."""
    queue_time_ms: float | None = None
    """Milliseconds queued."""
    mean_itl_ms: float | None = None
    """Mean inter-token latency in milliseconds."""
    tokens_per_second: float | None = None
    """Generation throughput."""
    speculative_decoding: SpeculativeDecodingMetrics | None = None
    """Speculative decoding statistics."""


class PromptLogprob(_Model):
    """One prompt position's logprob as the engine reports it (echoed by chat)."""

    logprob: float
    """Log probability."""
    rank: int | None = None
    """Rank among the vocabulary (1 = most likely)."""
    decoded_token: str | None = None
    """The token's text, if the engine sent it."""


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
    """Per-position logprobs by id; null for none."""


class GenerateTokensResponse(_Model):
    """A non-streaming ``/inference/v1/generate`` result in ``tokens`` mode."""

    request_id: str = Field(default_factory=_random_request_id)
    """Becomes the response ``id``, verbatim."""
    output_mode: Literal["tokens"] = "tokens"
    """Only token output can be derendered; text outputs are already detokenized."""
    choices: list[GenerateChoice]
    """The engine's sequences (a stream chunk: at most one)."""
    prompt_token_ids: PromptIds = None
    """Seeding fallback; echoed as ``prompt_token_ids`` with ``return_token_ids``."""
    prompt_logprobs: list[dict[str, PromptLogprob] | None] | None = None
    """Echoed by chat, with ``rank``/``decoded_token`` filled as null."""
    metrics: GenerateMetrics | None = None
    """Engine metrics, passed through to the response."""
    kv_transfer_params: dict[str, Any] | None = None
    """KV transfer parameters, passed through to the response."""


class GenerateStreamChoice(_Model):
    """The (single) sequence of one engine SSE chunk."""

    index: int
    """Choice index (a stream chunk: 0 to 2^31-1)."""
    token_ids: list[int] | None = None
    """Generated ids of this chunk."""
    finish_reason: str | None = None
    """Set on the sequence's last chunk."""
    stop_reason: int | str | None = None
    """Stop token id or stop string the engine reported."""
    logprobs: GenerateLogProbs | None = None
    """Per-position logprobs of this chunk by id; null for none."""


class GenerateUsage(_Model):
    """Engine usage of a stream's final chunk."""

    prompt_tokens: int | None = None
    """Prompt token count reported in usage."""
    completion_tokens: int | None = None
    """Generated token count."""
    total_tokens: int | None = None
    """Prompt plus generated tokens."""


class GenerateTokensStreamResponse(_Model):
    """One SSE chunk of ``/inference/v1/generate`` in ``tokens`` mode."""

    request_id: str = Field(default_factory=_random_request_id)
    """Becomes the chunk ``id``, verbatim; binds the stream state."""
    output_mode: Literal["tokens"] = "tokens"
    """Only token output can be derendered."""
    choices: list[GenerateStreamChoice]
    """The engine's sequences (a stream chunk: at most one)."""
    usage: GenerateUsage | None = None
    """Engine usage (the stream's final chunk); produces a usage chunk."""
    prompt_token_ids: PromptIds = None
    """Seeding fallback; echoed with ``return_token_ids``."""
    metrics: GenerateMetrics | None = None
    """Engine metrics, passed through to the response."""


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
    """Consulted where vLLM detokenizes with a slow tokenizer (a tiktoken folder, special
    tokens kept): false joins its added tokens to the text without spaces."""
    stop: str | list[str] | None = None
    """Count and length bounded by the service (``DERENDER_MAX_STOP_STRINGS``, 4 as in vLLM,
    and ``DERENDER_MAX_STOP_STRING_CHARS``), checked after the schema."""
    stop_token_ids: list[int] | None = None
    """Extra ids that stop generation and are dropped from the text."""
    ignore_eos: bool = False
    """The engine ignored EOS: an EOS id is ordinary text."""
    include_stop_str_in_output: bool = False
    """Keep the matched stop string in the text."""
    min_tokens: int = 0
    """Stop tokens and strings count only after this many tokens."""
    logprob_token_ids: list[int] | None = None
    """Logprobs were requested for these ids (then every candidate is kept); non-empty, needs
    ``logprobs``."""
    return_token_ids: bool | None = None
    """Echo prompt and generated ids in the response."""


class ChatRequest(_SamplingParams):
    """The chat completion request ``/v1/chat/completions/render`` received."""

    messages: list[Any]
    """The chat messages (not read by derender)."""
    logprobs: bool | None = False
    """Logprobs were requested."""
    top_logprobs: int | None = 0
    """Candidates kept per position (-1: all); needs ``logprobs``."""
    include_reasoning: bool = True
    """False hides reasoning (and logprobs and token ids with it)."""
    tools: list[Any] | None = None
    """Count and each definition's JSON size bounded by the service (``DERENDER_MAX_TOOLS``,
    ``DERENDER_MAX_TOOL_SCHEMA_BYTES``), checked after the schema."""
    tool_choice: Any = "none"
    """``"none"``, ``"auto"``, ``"required"`` or a named function; ``"auto"`` when tools are
    given without it."""
    parallel_tool_calls: bool | None = True
    """False keeps only the first tool call."""
    chat_template_kwargs: dict[str, Any] | None = None
    """Template arguments; ``enable_thinking: false`` turns reasoning off."""
    reasoning_effort: str | None = None
    """Reasoning effort (``none`` turns reasoning off where the template says so)."""

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
            functions = [t.get("function") for t in self.tools or [] if isinstance(t, dict)]
            names = [f.get("name") for f in functions if isinstance(f, dict)]
            if name not in names:
                raise parameter_error("The tool specified in `tool_choice` does not match any "
                                      "of the specified `tools`", "tool_choice")
        return self


class CompletionRequest(_SamplingParams):
    """The completion request ``/v1/completions/render`` received."""

    prompt: Any = None
    """The prompt; required and non-empty (not otherwise read by derender)."""
    logprobs: int | None = None
    """Candidates kept per position is this plus one (-1 or with ``logprob_token_ids``: all)."""

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
    """Absent or false: the whole answer at once; true: one streaming call."""
    model: str | None = None
    """Served model name; null or empty selects the default model."""
    generate_response: GenerateTokensResponse
    """The non-streaming ``/inference/v1/generate`` result."""
    prompt_tokens: int | None = None
    """Reported as ``usage.prompt_tokens`` (0 when null)."""
    prompt_token_ids: PromptIds = None
    """Seeds detokenization (its last ids); falls back to generate_response's."""
    chat_request: ChatRequest | None = None
    """Post-processing settings; required when the model has a parser."""


class DerenderCompletionRequest(_Model):
    """Non-streaming completions derender: one engine result per prompt."""

    stream: Literal[False] = False
    """Absent or false: the whole answer at once; true: one streaming call."""
    model: str | None = None
    """Served model name; null or empty selects the default model."""
    generate_responses: list[GenerateTokensResponse]
    """One per prompt, in the order ``/v1/completions/render`` returned them."""
    prompt_tokens: list[int] | None = None
    """Per prompt; summed into ``usage.prompt_tokens``."""
    prompt_token_ids: list[PromptIds] | None = None
    """Per prompt seeding ids; a null entry falls back to that response's."""
    completion_request: CompletionRequest | None = None
    """The request ``/v1/completions/render`` received (post-processing settings)."""

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
    """Absent or false: the whole answer at once; true: one streaming call."""
    model: str | None = None
    """Served model name; null or empty selects the default model."""
    stream_state: Any = None
    """Null on the first call, then the state the previous call returned (opaque): the JSON
    object (as vLLM 0.33 types it) or the bare string of earlier releases."""
    prompt_tokens: int | None = None
    """Overrides ``usage.prompt_tokens`` of a usage chunk."""
    prompt_token_ids: PromptIds = None
    """Seeds the first call (fallback: the chunk's own)."""


class _ChatStreamFields(_StreamFields):
    chat_request: ChatRequest | None = None
    """The request ``/v1/chat/completions/render`` received (post-processing settings);
    required when the model has a parser."""


class DerenderChatStreamRequest(_ChatStreamFields):
    """Streaming chat derender: one engine chunk into one ``chat.completion.chunk``."""

    generate_chunk: GenerateTokensStreamResponse
    """One SSE chunk of ``/inference/v1/generate``."""


class DerenderChatStreamBatchRequest(_ChatStreamFields):
    """Streaming chat derender of several consecutive engine chunks in one call (ours)."""

    generate_chunks: Annotated[list[GenerateTokensStreamResponse],
                               Field(min_length=1, max_length=MAX_BATCH_CHUNKS)]
    """Consecutive chunks of one stream; the answer lists one OpenAI chunk per entry."""


class _CompletionStreamFields(_StreamFields):
    completion_request: CompletionRequest | None = None
    """The request ``/v1/completions/render`` received (post-processing settings)."""


class DerenderCompletionStreamRequest(_CompletionStreamFields):
    """Streaming completions derender: one engine chunk into one ``text_completion`` chunk."""

    generate_chunk: GenerateTokensStreamResponse
    """One SSE chunk of ``/inference/v1/generate``."""


class DerenderCompletionStreamBatchRequest(_CompletionStreamFields):
    """Streaming completions derender of several consecutive engine chunks (ours)."""

    generate_chunks: Annotated[list[GenerateTokensStreamResponse],
                               Field(min_length=1, max_length=MAX_BATCH_CHUNKS)]
    """Consecutive chunks of one stream (at most ``MAX_BATCH_CHUNKS``); the answer lists
    one OpenAI chunk per entry."""


ChatBody = DerenderChatRequest | DerenderChatStreamRequest
CompletionBody = DerenderCompletionRequest | DerenderCompletionStreamRequest
