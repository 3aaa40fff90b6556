"""The response contract of both derender routes, field by field (vLLM 0.33 compatible).

Each answer is one of these types: OpenAI's ``chat.completion``, ``chat.completion.chunk``,
``text_completion`` and its chunk as vLLM 0.33's derender fills them, the two stream
answers (one chunk or a batch of them, with the signed ``stream_state``), and the health
and model list answers; the error envelope is ``derender.contract.errors``'.

The core builds exactly these ``TypedDict``s (``mypy --strict`` checks every key) and the app
serialises them with ``json.dumps``: a type costs nothing per call. The core and the app
import this module for type checking only (loading it costs milliseconds of cold start), so
only the document builder loads it: ``/openapi.json`` is derived from these types
(``derender.app.openapi``), and the docstring beside each field is its description there.

Every key is always present, nulls included; only an empty ``tool_calls`` is left out.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import BaseModel, Field, GetPydanticSchema
from typing_extensions import TypedDict

from derender.contract.requests import GenerateMetrics, PromptLogprob
from derender.contract.schema import documented
from derender.settings import MAX_BATCH_CHUNKS

TOKEN_PATTERN = "^[A-Za-z0-9_-]+$"
"""What a signed ``stream_state`` token is made of (URL-safe base64 without padding)."""


def _shaped_as(model: type[BaseModel]) -> GetPydanticSchema:
    """Schema of a request model for a value the core builds with its ``model_dump()``."""
    return GetPydanticSchema(lambda _source, handler: handler(model))


Metrics = Annotated[dict[str, Any], _shaped_as(GenerateMetrics)]
"""An engine ``metrics`` object echoed (``GenerateMetrics.model_dump()``, unknown keys kept)."""
PromptLogprobEcho = Annotated[dict[str, Any], _shaped_as(PromptLogprob)]
"""One prompt position's logprob echoed (``PromptLogprob.model_dump()``)."""
STATE_TOKEN_PATTERN = "^derender:[A-Za-z0-9_-]+$"
"""An entry of the object form's ``prev_tokens``: ``derender:`` and the signed token."""


@documented
class StreamStateObject(TypedDict):
    """The signed stream state as a JSON object: vLLM 0.33's ``DerenderStreamState`` shape,
    opaque in content (``DERENDER_STATE_FORM=object``, the default). Sent back with the fields
    vLLM's models add on dump (at their defaults) it is accepted too: only ``prev_tokens`` is
    read."""

    prev_tokens: Annotated[list[Annotated[str, Field(pattern=STATE_TOKEN_PATTERN)]],
                           Field(min_length=1, max_length=1)]
    """One entry: ``derender:`` and the signed token (URL-safe base64)."""


StreamStateToken = StreamStateObject | Annotated[str, Field(pattern=TOKEN_PATTERN)]
"""The signed stream state as the answers carry it: as vLLM 0.33 types it, a JSON object
(``DerenderStreamState``), or the bare token string of earlier releases
(``DERENDER_STATE_FORM=string``); either is sent back as it came."""


# --------------------------------------------------------------------------- shared parts


@documented
class Usage(TypedDict):
    """Token counts of the response (or of a stream's usage chunk)."""

    prompt_tokens: int
    """The request's ``prompt_tokens`` (0 when null; streaming: else the engine's)."""
    total_tokens: int
    """``prompt_tokens + completion_tokens``."""
    completion_tokens: int
    """Generated ids received (streaming: the engine's count)."""
    prompt_tokens_details: None
    """Always null: derender does not know them."""
    completion_tokens_details: None
    """Always null: derender does not know them."""


@documented
class ChatLogprobCandidate(TypedDict):
    """One kept top-k candidate."""

    token: str
    """The candidate's token string."""
    logprob: float
    """Its log probability, as the engine sent it."""
    bytes: list[int] | None
    """UTF-8 bytes of ``token``; null for an id without a vocabulary entry."""


@documented
class ChatLogprobEntry(TypedDict):
    """Logprobs of one generated position."""

    token: str
    """The sampled token's string."""
    logprob: float
    """Its log probability."""
    bytes: list[int] | None
    """UTF-8 bytes of ``token``; null for an id without a vocabulary entry."""
    top_logprobs: list[ChatLogprobCandidate]
    """Kept candidates in engine order; empty when none is kept."""


@documented
class ChatLogprobs(TypedDict):
    """Chat logprobs (OpenAI shape)."""

    content: list[ChatLogprobEntry] | None
    """One entry per position; null when the engine sent ``content: null``."""


@documented
class CompletionLogprobs(TypedDict):
    """Completions logprobs (OpenAI legacy shape): four parallel lists, one item per position."""

    text_offset: list[int]
    """Offset of each token string in the choice text, in code points."""
    token_logprobs: list[float]
    """The sampled token's log probability."""
    tokens: list[str]
    """The sampled token's string."""
    top_logprobs: list[dict[str, float] | None]
    """Candidate string → log probability; null where the engine sent no candidate."""


# --------------------------------------------------------------------------- chat.completion


@documented
class ToolCallFunction(TypedDict):
    """The function a tool call names."""

    name: str
    """Function name."""
    arguments: str
    """The arguments as the model wrote them (JSON text)."""


@documented
class ToolCall(TypedDict):
    """One parsed tool call."""

    id: str
    """``chatcmpl-tool-`` and 16 hex digits, stable across retries; a format that writes
    its own ids (or has its own id scheme) keeps those."""
    type: Literal["function"]
    """Always ``function``."""
    function: ToolCallFunction
    """Name and arguments."""


@documented
class ChatMessage(TypedDict):
    """The assistant message of a choice."""

    role: Literal["assistant"]
    """Always ``assistant``."""
    content: str | None
    """The text (stop token and stop string removed); with a parser, what is neither
    reasoning nor a tool call (null when empty)."""
    refusal: None
    """Always null."""
    annotations: None
    """Always null."""
    audio: None
    """Always null."""
    function_call: None
    """Always null."""
    reasoning: str | None
    """Reasoning text (reasoning parser configured); null otherwise or when empty."""
    tool_calls: NotRequired[Annotated[list[ToolCall], Field(min_length=1)]]
    """Parsed tool calls (tool parser configured); the key is left out when there is none."""


@documented
class ChatChoice(TypedDict):
    """One choice of a ``chat.completion``."""

    index: int
    """The engine choice's index."""
    message: ChatMessage
    """The assistant message."""
    logprobs: ChatLogprobs | None
    """Null when the engine sent none (or reasoning is hidden)."""
    finish_reason: str
    """The engine's reason (``stop`` when it sent null); ``tool_calls`` when a parsed call
    ended generation."""
    stop_reason: int | str | None
    """The stop token id or stop string that ended the choice, else null."""
    token_ids: list[int] | None
    """The generated ids, with ``chat_request.return_token_ids``; else null."""
    routed_experts: None
    """Always null."""
    weight_versions: None
    """Always null."""


@documented
class ChatCompletion(TypedDict):
    """A non-streaming chat answer (OpenAI ``chat.completion``)."""

    id: str
    """``generate_response.request_id``, verbatim."""
    object: Literal["chat.completion"]
    """Always ``chat.completion``."""
    created: int
    """Unix time of the call."""
    model: str
    """The request's ``model``, or the default model's served name when null or empty."""
    choices: list[ChatChoice]
    """One per engine choice, in engine order."""
    service_tier: None
    """Always null."""
    system_fingerprint: None
    """Always null."""
    usage: Usage
    """Token counts."""
    prompt_logprobs: list[dict[str, PromptLogprobEcho] | None] | None
    """``generate_response.prompt_logprobs`` echoed, ``rank``/``decoded_token`` filled."""
    prompt_token_ids: list[int] | None
    """``generate_response.prompt_token_ids`` with ``return_token_ids``; else null."""
    prompt_text: None
    """Always null."""
    kv_transfer_params: dict[str, Any] | None
    """``generate_response.kv_transfer_params`` echoed."""
    ec_transfer_params: None
    """Always null."""
    metrics: Metrics | None
    """``generate_response.metrics`` echoed (unknown keys kept)."""


# --------------------------------------------------------------------------- text_completion


@documented
class CompletionChoice(TypedDict):
    """One choice of a ``text_completion``."""

    index: int
    """Position over all responses' choices, counted from 0."""
    text: str
    """The text (stop token and stop string removed)."""
    logprobs: CompletionLogprobs | None
    """Null when the engine sent none."""
    finish_reason: str | None
    """The engine's reason, verbatim (``stop`` when omitted)."""
    stop_reason: int | str | None
    """The stop token id or stop string that ended the choice, else null."""
    token_ids: list[int] | None
    """The generated ids, with ``completion_request.return_token_ids``; else null."""
    prompt_logprobs: None
    """Always null."""
    prompt_token_ids: list[int] | None
    """The response's ``prompt_token_ids`` with ``return_token_ids``; else null."""
    routed_experts: None
    """Always null."""
    weight_versions: None
    """Always null."""


@documented
class TextCompletion(TypedDict):
    """A non-streaming completions answer (OpenAI ``text_completion``)."""

    id: str
    """The first response's ``request_id``."""
    object: Literal["text_completion"]
    """Always ``text_completion``."""
    created: int
    """Unix time of the call."""
    model: str
    """The request's ``model``, or the default model's served name when null or empty."""
    choices: list[CompletionChoice]
    """Every response's choices, in order."""
    service_tier: None
    """Always null."""
    system_fingerprint: None
    """Always null."""
    usage: Usage
    """Token counts (``prompt_tokens`` summed)."""
    kv_transfer_params: dict[str, Any] | None
    """The responses' ``kv_transfer_params`` when they all agree, else null."""
    ec_transfer_params: None
    """Always null."""
    metrics: Metrics | None
    """The response's ``metrics`` when there is exactly one response, else null."""


# --------------------------------------------------------------------------- streaming


@documented
class DeltaFunction(TypedDict):
    """A tool call's function, or a fragment of its arguments."""

    name: str | None
    """Set on the call's first delta, null on continuations."""
    arguments: str | None
    """The next fragment of the arguments text; null when the delta has none."""


@documented
class DeltaToolCall(TypedDict):
    """A tool call delta: the first of a call has ``id``, ``type`` and ``name``."""

    id: str | None
    """Set on the call's first delta (stable across retries), null on continuations."""
    type: Literal["function"] | None
    """``function`` on the call's first delta, null on continuations."""
    index: int
    """Which call of the choice this delta extends."""
    function: DeltaFunction
    """Name and arguments fragment."""


@documented
class ChatDelta(TypedDict):
    """What one chunk adds to the message."""

    role: Literal["assistant"] | None
    """``assistant`` on the stream's first chunk, then null."""
    content: str | None
    """New text (null when none)."""
    reasoning: str | None
    """New reasoning text (null when none)."""
    tool_calls: NotRequired[Annotated[list[DeltaToolCall], Field(min_length=1)]]
    """Tool call deltas; the key is left out when there is none."""


@documented
class ChatChunkChoice(TypedDict):
    """The choice of a chat chunk."""

    index: int
    """The engine choice's index."""
    delta: ChatDelta
    """What this chunk adds."""
    logprobs: ChatLogprobs | None
    """This chunk's positions; null when the engine sent none."""
    finish_reason: str | None
    """Set on the choice's last chunk (or when a stop string matched); else null."""
    stop_reason: int | str | None
    """The stop token id or stop string that ended the choice, else null."""
    token_ids: list[int] | None
    """This chunk's ids, with ``return_token_ids``; else null."""
    weight_versions: None
    """Always null."""


@documented
class ChatCompletionChunk(TypedDict):
    """One OpenAI ``chat.completion.chunk``."""

    id: str
    """The engine chunk's ``request_id``."""
    object: Literal["chat.completion.chunk"]
    """Always ``chat.completion.chunk``."""
    created: int
    """Unix time of the stream's first chunk (the same on every chunk)."""
    model: str
    """The request's ``model``, or the default model's served name."""
    choices: Annotated[list[ChatChunkChoice], Field(max_length=1)]
    """The chunk's choice; empty for a chunk without one (such as a usage chunk)."""
    usage: Usage | None
    """Set when the engine chunk carries usage, else null."""
    system_fingerprint: None
    """Always null."""
    prompt_token_ids: list[int] | None
    """The engine chunk's ``prompt_token_ids`` with ``return_token_ids``; else null."""
    prompt_text: None
    """Always null."""
    metrics: Metrics | None
    """The engine chunk's ``metrics`` echoed."""
    kv_transfer_params: None
    """Always null."""


@documented
class CompletionChunkChoice(TypedDict):
    """The choice of a completions chunk."""

    index: int
    """The engine choice's index."""
    text: str
    """New text."""
    logprobs: CompletionLogprobs | None
    """This chunk's positions (``text_offset`` continues the stream's); null when none."""
    finish_reason: str | None
    """Set on the choice's last chunk (or when a stop string matched); else null."""
    stop_reason: int | str | None
    """The stop token id or stop string that ended the choice, else null."""
    prompt_token_ids: list[int] | None
    """The engine chunk's ``prompt_token_ids`` with ``return_token_ids``; else null."""
    token_ids: list[int] | None
    """This chunk's ids, with ``return_token_ids``; else null."""
    weight_versions: None
    """Always null."""


@documented
class CompletionChunk(TypedDict):
    """One ``text_completion`` chunk."""

    id: str
    """The engine chunk's ``request_id``."""
    object: Literal["text_completion"]
    """Always ``text_completion``."""
    created: int
    """Unix time of the stream's first chunk (the same on every chunk)."""
    model: str
    """The request's ``model``, or the default model's served name."""
    choices: Annotated[list[CompletionChunkChoice], Field(max_length=1)]
    """The chunk's choice; empty for a chunk without one (such as a usage chunk)."""
    usage: Usage | None
    """Set when the engine chunk carries usage, else null."""
    system_fingerprint: None
    """Always null."""
    metrics: Metrics | None
    """The engine chunk's ``metrics`` echoed."""
    kv_transfer_params: None
    """Always null."""


@documented
class ChatStreamResponse(TypedDict):
    """Answer to ``generate_chunk``: one chunk and the state to continue from."""

    chunk: ChatCompletionChunk
    """The chunk to forward to the client."""
    stream_state: StreamStateToken
    """The signed state to send with the stream's next call (opaque, URL-safe base64)."""


@documented
class ChatStreamBatchResponse(TypedDict):
    """Answer to ``generate_chunks`` (ours): one chunk per engine chunk and the final state."""

    chunks: Annotated[list[ChatCompletionChunk],
                      Field(min_length=1, max_length=MAX_BATCH_CHUNKS)]
    """One chunk per engine chunk, in order."""
    stream_state: StreamStateToken
    """The signed state to send with the stream's next call (opaque, URL-safe base64)."""


@documented
class CompletionStreamResponse(TypedDict):
    """Answer to ``generate_chunk``: one chunk and the state to continue from."""

    chunk: CompletionChunk
    """The chunk to forward to the client."""
    stream_state: StreamStateToken
    """The signed state to send with the stream's next call (opaque, URL-safe base64)."""


@documented
class CompletionStreamBatchResponse(TypedDict):
    """Answer to ``generate_chunks`` (ours): one chunk per engine chunk and the final state."""

    chunks: Annotated[list[CompletionChunk], Field(min_length=1, max_length=MAX_BATCH_CHUNKS)]
    """One chunk per engine chunk, in order."""
    stream_state: StreamStateToken
    """The signed state to send with the stream's next call (opaque, URL-safe base64)."""


# --------------------------------------------------------------------------- other routes


@documented
class Health(TypedDict):
    """Liveness."""

    status: Literal["ok"]
    """Always ``ok``."""


@documented
class ModelCard(TypedDict):
    """One served name."""

    id: str
    """The served name (what requests put in ``model``)."""
    object: Literal["model"]
    """Always ``model``."""
    created: int
    """Unix time the app started."""
    owned_by: str
    """Always ``derender``."""
    root: str
    """The model folder's name."""
    parent: None
    """Always null."""
    max_model_len: int
    """Longest prompt plus output, in tokens."""
    reasoning_parser: str | None
    """vLLM's name of the model's reasoning parser (null: none)."""
    tool_parser: str | None
    """vLLM's name of the model's tool-call parser (null: none)."""


@documented
class Version(TypedDict):
    """The service's version."""

    version: str
    """The package's version (``derender.__version__``, which ``pyproject.toml`` reads)."""


@documented
class ModelList(TypedDict):
    """The served models (OpenAI list shape)."""

    object: Literal["list"]
    """Always ``list``."""
    data: list[ModelCard]
    """One entry per served name."""
