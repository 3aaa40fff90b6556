"""The service's OpenAPI 3.1 document, served at ``GET /openapi.json``.

The derender routes are plain Starlette routes (their bodies are parsed by the app), so
FastAPI cannot see them; this module describes them by hand. Request bodies are the real
unions of ``derender.contract.requests`` (field descriptions are its attribute
docstrings), tightened only where the handlers refuse what JSON schema can say (negative
token ids, a choice index out of range, a ``generate_chunks`` key outside the batch form).
Responses are the models below, which mirror the dicts ``derender.core.chat`` and
``derender.core.completions`` build:
every key is always present, nulls included; only an empty ``tool_calls`` is left out.

Imported on the first request of the document, never at cold start.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any, Literal

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.json_schema import JsonSchemaMode

from derender.contract import requests as protocol
from derender.contract.requests import MAX_BATCH_CHUNKS, GenerateMetrics, PromptLogprob

JSON = dict[str, Any]
REF = "#/components/schemas/{model}"
MAX_CHOICE_INDEX = (1 << 31) - 1
TOKEN_PATTERN = "^[A-Za-z0-9_-]+$"


class _Out(BaseModel):
    """A response object: exactly these keys, each always present."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


# --------------------------------------------------------------------------- shared parts


class Usage(_Out):
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


class ChatLogprobCandidate(_Out):
    """One kept top-k candidate."""

    token: str
    """The candidate's token string."""
    logprob: float
    """Its log probability, as the engine sent it."""
    bytes: list[int] | None
    """UTF-8 bytes of ``token``; null for an id without a vocabulary entry."""


class ChatLogprobEntry(_Out):
    """Logprobs of one generated position."""

    token: str
    """The sampled token's string."""
    logprob: float
    """Its log probability."""
    bytes: list[int] | None
    """UTF-8 bytes of ``token``; null for an id without a vocabulary entry."""
    top_logprobs: list[ChatLogprobCandidate]
    """Kept candidates in engine order; empty when none is kept."""


class ChatLogprobs(_Out):
    """Chat logprobs (OpenAI shape)."""

    content: list[ChatLogprobEntry] | None
    """One entry per position; null when the engine sent ``content: null``."""


class CompletionLogprobs(_Out):
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


class ToolCallFunction(_Out):
    """The function a tool call names."""

    name: str
    """Function name."""
    arguments: str
    """The arguments as the model wrote them (JSON text)."""


class ToolCall(_Out):
    """One parsed tool call."""

    id: str
    """``chatcmpl-tool-`` and 16 hex digits, stable across retries."""
    type: Literal["function"]
    """Always ``function``."""
    function: ToolCallFunction
    """Name and arguments."""


class ChatMessage(_Out):
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
    tool_calls: list[ToolCall] = Field(default_factory=list, min_length=1)
    """Parsed tool calls (tool parser configured); the key is left out when there is none."""
    reasoning: str | None
    """Reasoning text (reasoning parser configured); null otherwise or when empty."""


class ChatChoice(_Out):
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


class ChatCompletion(_Out):
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
    prompt_logprobs: list[dict[str, PromptLogprob] | None] | None
    """``generate_response.prompt_logprobs`` echoed, ``rank``/``decoded_token`` filled."""
    prompt_token_ids: list[int] | None
    """``generate_response.prompt_token_ids`` with ``return_token_ids``; else null."""
    prompt_text: None
    """Always null."""
    kv_transfer_params: dict[str, Any] | None
    """``generate_response.kv_transfer_params`` echoed."""
    ec_transfer_params: None
    """Always null."""
    metrics: GenerateMetrics | None
    """``generate_response.metrics`` echoed (unknown keys kept)."""


# --------------------------------------------------------------------------- text_completion


class CompletionChoice(_Out):
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


class TextCompletion(_Out):
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
    metrics: GenerateMetrics | None
    """The response's ``metrics`` when there is exactly one response, else null."""


# --------------------------------------------------------------------------- streaming


class DeltaFunction(_Out):
    """A tool call's function, or a fragment of its arguments."""

    name: str | None
    """Set on the call's first delta, null on continuations."""
    arguments: str | None
    """The next fragment of the arguments text; null when the delta has none."""


class DeltaToolCall(_Out):
    """A tool call delta: the first of a call has ``id``, ``type`` and ``name``."""

    id: str | None
    """Set on the call's first delta (stable across retries), null on continuations."""
    type: Literal["function"] | None
    """``function`` on the call's first delta, null on continuations."""
    index: int
    """Which call of the choice this delta extends."""
    function: DeltaFunction
    """Name and arguments fragment."""


class ChatDelta(_Out):
    """What one chunk adds to the message."""

    role: Literal["assistant"] | None
    """``assistant`` on the stream's first chunk, then null."""
    content: str | None
    """New text (null when none)."""
    reasoning: str | None
    """New reasoning text (null when none)."""
    tool_calls: list[DeltaToolCall] = Field(default_factory=list, min_length=1)
    """Tool call deltas; the key is left out when there is none."""


class ChatChunkChoice(_Out):
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


class ChatCompletionChunk(_Out):
    """One OpenAI ``chat.completion.chunk``."""

    id: str
    """The engine chunk's ``request_id``."""
    object: Literal["chat.completion.chunk"]
    """Always ``chat.completion.chunk``."""
    created: int
    """Unix time of the stream's first chunk (the same on every chunk)."""
    model: str
    """The request's ``model``, or the default model's served name."""
    choices: list[ChatChunkChoice] = Field(max_length=1)
    """The chunk's choice; empty for a chunk without one (such as a usage chunk)."""
    usage: Usage | None
    """Set when the engine chunk carries usage, else null."""
    system_fingerprint: None
    """Always null."""
    prompt_token_ids: list[int] | None
    """The engine chunk's ``prompt_token_ids`` with ``return_token_ids``; else null."""
    prompt_text: None
    """Always null."""
    metrics: GenerateMetrics | None
    """The engine chunk's ``metrics`` echoed."""
    kv_transfer_params: None
    """Always null."""


class CompletionChunkChoice(_Out):
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


class CompletionChunk(_Out):
    """One ``text_completion`` chunk."""

    id: str
    """The engine chunk's ``request_id``."""
    object: Literal["text_completion"]
    """Always ``text_completion``."""
    created: int
    """Unix time of the stream's first chunk (the same on every chunk)."""
    model: str
    """The request's ``model``, or the default model's served name."""
    choices: list[CompletionChunkChoice] = Field(max_length=1)
    """The chunk's choice; empty for a chunk without one (such as a usage chunk)."""
    usage: Usage | None
    """Set when the engine chunk carries usage, else null."""
    system_fingerprint: None
    """Always null."""
    metrics: GenerateMetrics | None
    """The engine chunk's ``metrics`` echoed."""
    kv_transfer_params: None
    """Always null."""


STATE_DOC = ("The signed state to send with the stream's next call, as vLLM 0.33 types it "
             "(a JSON object, `DerenderStreamState`), or the bare string of earlier releases "
             "when `DERENDER_STATE_FORM=string`; send it back as it came.")
STATE_TOKEN_PATTERN = "^derender:[A-Za-z0-9_-]+$"


class StreamStateObject(_Out):
    """The signed stream state as a JSON object: vLLM 0.33's ``DerenderStreamState`` shape,
    opaque in content. Sent back with the fields vLLM's models add on dump (at their
    defaults) it is accepted too: only ``prev_tokens`` is read."""

    prev_tokens: list[str] = Field(min_length=1, max_length=1)
    """One entry: ``derender:`` and the signed token (URL-safe base64)."""


StreamStateOut = StreamStateObject | str


class ChatStreamResponse(_Out):
    """Answer to ``generate_chunk``: one chunk and the state to continue from."""

    chunk: ChatCompletionChunk
    """The chunk to forward to the client."""
    stream_state: StreamStateOut = Field(description=STATE_DOC)


class ChatStreamBatchResponse(_Out):
    """Answer to ``generate_chunks``: one chunk per engine chunk and the final state."""

    chunks: list[ChatCompletionChunk] = Field(min_length=1, max_length=MAX_BATCH_CHUNKS)
    """One chunk per engine chunk, in order."""
    stream_state: StreamStateOut = Field(description=STATE_DOC)


class CompletionStreamResponse(_Out):
    """Answer to ``generate_chunk``: one chunk and the state to continue from."""

    chunk: CompletionChunk
    """The chunk to forward to the client."""
    stream_state: StreamStateOut = Field(description=STATE_DOC)


class CompletionStreamBatchResponse(_Out):
    """Answer to ``generate_chunks``: one chunk per engine chunk and the final state."""

    chunks: list[CompletionChunk] = Field(min_length=1, max_length=MAX_BATCH_CHUNKS)
    """One chunk per engine chunk, in order."""
    stream_state: StreamStateOut = Field(description=STATE_DOC)


# --------------------------------------------------------------------------- other routes


class ErrorInfo(_Out):
    """What went wrong."""

    message: str
    """Human-readable reason (schema errors: a count line, then up to ten entries)."""
    type: str
    """``Bad Request`` (schema), ``BadRequestError``, ``NotFoundError``,
    ``RequestTooLargeError``, ``ServiceUnavailableError`` or ``InternalServerError``."""
    param: str | None
    """The offending parameter or location, when known."""
    code: int
    """Equal to the HTTP status."""


class ErrorResponse(_Out):
    """vLLM's error envelope; the HTTP status equals ``error.code``."""

    error: ErrorInfo
    """The error."""


class Health(_Out):
    """Liveness."""

    status: Literal["ok"]
    """Always ``ok``."""


class ModelCard(_Out):
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


class ModelList(_Out):
    """The served models (OpenAI list shape)."""

    object: Literal["list"]
    """Always ``list``."""
    data: list[ModelCard]
    """One entry per served name."""


# --------------------------------------------------------------------------- request docs

# Fields of derender.contract.requests without a docstring of their own.
_FIELD_DOCS = {
    "stream": "Absent or false: the whole answer at once; true: one streaming call.",
    "model": "Served model name; null or empty selects the default model.",
    "chat_request": "The request `/v1/chat/completions/render` received (post-processing "
                    "settings); required when the model has a parser.",
    "completion_request": "The request `/v1/completions/render` received (post-processing "
                          "settings).",
    "generate_response": "The non-streaming `/inference/v1/generate` result.",
    "generate_chunk": "One SSE chunk of `/inference/v1/generate`.",
    "generate_chunks": f"Consecutive SSE chunks of one stream (at most {MAX_BATCH_CHUNKS}).",
    "GenerateTokensStreamResponse.request_id": "Becomes the chunk `id`, verbatim; binds the "
                                               "stream state.",
    "GenerateTokensStreamResponse.output_mode": "Only token output can be derendered.",
    "GenerateTokensStreamResponse.prompt_token_ids": "Seeding fallback; echoed with "
                                                     "`return_token_ids`.",
    "choices": "The engine's sequences (a stream chunk: at most one).",
    "index": "Choice index (a stream chunk: 0 to 2^31-1).",
    "token_ids": "Generated ids of this chunk.",
    "finish_reason": "Set on the sequence's last chunk.",
    "stop_reason": "Stop token id or stop string the engine reported.",
    "GenerateChoice.logprobs": "Per-position logprobs by id; null for none.",
    "GenerateStreamChoice.logprobs": "Per-position logprobs of this chunk by id; null for none.",
    "logprob": "Log probability.",
    "rank": "Rank among the vocabulary (1 = most likely).",
    "decoded_token": "The token's text, if the engine sent it.",
    "metrics": "Engine metrics, passed through to the response.",
    "usage": "Engine usage (the stream's final chunk); produces a usage chunk.",
    "kv_transfer_params": "KV transfer parameters, passed through to the response.",
    "prompt_tokens": "Prompt token count reported in usage.",
    "completion_tokens": "Generated token count.",
    "total_tokens": "Prompt plus generated tokens.",
    "time_to_first_token_ms": "Milliseconds to the first token.",
    "generation_time_ms": "Milliseconds generating.",
    "queue_time_ms": "Milliseconds queued.",
    "mean_itl_ms": "Mean inter-token latency in milliseconds.",
    "tokens_per_second": "Generation throughput.",
    "speculative_decoding": "Speculative decoding statistics.",
    "mean_acceptance_length": "Mean accepted length per step.",
    "draft_acceptance_rate": "Share of draft tokens accepted.",
    "acceptance_histogram": "Steps per accepted length.",
    "num_spec_steps": "Speculative steps.",
    "num_accepted_draft_tokens": "Draft tokens accepted.",
    "num_draft_tokens": "Draft tokens proposed.",
    "num_spec_tokens": "Speculative tokens per step.",
    "per_step_accepted": "Accepted tokens per step.",
    "per_step_drafted": "Drafted tokens per step.",
    "stop": "Stop strings that end the text; matched while streaming too.",
    "stop_token_ids": "Extra ids that stop generation and are dropped from the text.",
    "ignore_eos": "The engine ignored EOS: an EOS id is ordinary text.",
    "include_stop_str_in_output": "Keep the matched stop string in the text.",
    "min_tokens": "Stop tokens and strings count only after this many tokens.",
    "logprob_token_ids": "Logprobs were requested for these ids (then every candidate is "
                         "kept); non-empty, needs `logprobs`.",
    "return_token_ids": "Echo prompt and generated ids in the response.",
    "messages": "The chat messages (not read by derender).",
    "ChatRequest.logprobs": "Logprobs were requested.",
    "top_logprobs": "Candidates kept per position (-1: all); needs `logprobs`.",
    "include_reasoning": "False hides reasoning (and logprobs and token ids with it).",
    "tools": "Tools offered to the model; non-empty when given.",
    "parallel_tool_calls": "False keeps only the first tool call.",
    "chat_template_kwargs": "Template arguments; `enable_thinking: false` turns reasoning off.",
    "reasoning_effort": "Reasoning effort (`none` turns reasoning off where the template "
                        "says so).",
    "prompt": "The prompt; required and non-empty (not otherwise read by derender).",
    "CompletionRequest.logprobs": "Candidates kept per position is this plus one "
                                  "(-1 or with `logprob_token_ids`: all).",
}


def _attribute_docs() -> dict[str, dict[str, str]]:
    """Attribute docstrings of ``derender.contract.requests``' classes, as pydantic reads them."""
    try:
        tree = ast.parse(inspect.getsource(protocol))
    except (OSError, TypeError):  # no source shipped: the fallback texts only
        return {}
    docs: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        fields = docs.setdefault(node.name, {})
        for stmt, after in zip(node.body, node.body[1:], strict=False):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                fields[stmt.target.id] = after.value.value
    return docs


def _markdown(doc: str) -> str:
    return " ".join(inspect.cleandoc(doc).split()).replace("``", "`")


def _tidy(node: Any) -> None:
    """Every description as one Markdown line (docstrings use reST literals)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                node[key] = _markdown(value)
            else:
                _tidy(value)
    elif isinstance(node, list):
        for value in node:
            _tidy(value)


def _integers(node: Any, **bounds: int) -> None:
    """Add ``bounds`` to every integer schema under ``node``."""
    if isinstance(node, dict):
        if node.get("type") == "integer":
            node.update(bounds)
        for value in node.values():
            _integers(value, **bounds)
    elif isinstance(node, list):
        for value in node:
            _integers(value, **bounds)


def _describe_requests(schemas: dict[str, JSON], served: list[str]) -> None:
    """Every request field's description from contract/requests.py (else the texts above)."""
    docs = _attribute_docs()
    for name, schema in schemas.items():
        cls = getattr(protocol, name, None)
        if not isinstance(cls, type) or not issubclass(cls, BaseModel):
            continue
        for field, prop in schema.get("properties", {}).items():
            text = next((docs[c.__name__][field] for c in cls.__mro__
                         if field in docs.get(c.__name__, {})), None)
            prop["description"] = (text or _FIELD_DOCS.get(f"{name}.{field}")
                                   or _FIELD_DOCS.get(field, ""))
            if field == "model" and served:
                prop["examples"] = served


def _tighten_requests(schemas: dict[str, JSON]) -> None:
    """What the handlers refuse beyond the models' types, where JSON schema can say it."""
    for name, schema in schemas.items():
        properties = schema.get("properties", {})
        for field in ("token_ids", "prompt_token_ids", "token_id"):
            _integers(properties.get(field), minimum=0)  # a negative id is a 400
        if "stream_state" in properties:  # anything but a state of ours is a 400
            properties["stream_state"]["anyOf"] = [
                {"type": "object", "required": ["prev_tokens"], "properties": {"prev_tokens": {
                    "type": "array", "minItems": 1, "maxItems": 1,
                    "items": {"type": "string", "pattern": STATE_TOKEN_PATTERN}}}},
                {"type": "string", "pattern": TOKEN_PATTERN}, {"type": "null"}]
        if name.startswith("Derender") and "generate_chunks" not in properties:
            # A body with `generate_chunks` is validated as the batch form, whatever else.
            schema["not"] = {"required": ["generate_chunks"]}
    choice = schemas["GenerateChoice"]  # empty or null ids are a 400
    choice["properties"]["token_ids"] = {
        "type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1,
        "description": choice["properties"]["token_ids"]["description"]}
    choice["required"] = [*choice["required"], "token_ids"]
    _integers(schemas["GenerateStreamChoice"]["properties"]["index"],
              minimum=0, maximum=MAX_CHOICE_INDEX)
    schemas["DerenderCompletionRequest"]["properties"]["generate_responses"]["minItems"] = 1
    completion = schemas["CompletionRequest"]  # null or "" is a 400
    completion["properties"]["prompt"].pop("default", None)
    completion["properties"]["prompt"]["not"] = {"enum": [None, ""]}
    completion["required"] = [*completion.get("required", []), "prompt"]


# --------------------------------------------------------------------------- the document

_CHAT_BODY = (protocol.DerenderChatRequest | protocol.DerenderChatStreamRequest
              | protocol.DerenderChatStreamBatchRequest)
_COMPLETION_BODY = (protocol.DerenderCompletionRequest | protocol.DerenderCompletionStreamRequest
                    | protocol.DerenderCompletionStreamBatchRequest)
_TOP_LEVEL: dict[str, Any] = {
    "ChatDerenderBody": _CHAT_BODY,
    "CompletionDerenderBody": _COMPLETION_BODY,
    "ChatDerenderResponse": ChatCompletion | ChatStreamResponse | ChatStreamBatchResponse,
    "CompletionDerenderResponse": (TextCompletion | CompletionStreamResponse
                                   | CompletionStreamBatchResponse),
    "ErrorResponse": ErrorResponse,
    "Health": Health,
    "ModelList": ModelList,
}
_UNION_DOCS = {
    "ChatDerenderBody": "`DerenderChatRequest` (no `stream` or `stream: false`), "
                        "`DerenderChatStreamRequest` (`stream: true`, `generate_chunk`) or "
                        "`DerenderChatStreamBatchRequest` (`stream: true`, `generate_chunks`). "
                        "Unknown keys are ignored.",
    "CompletionDerenderBody": "`DerenderCompletionRequest` (no `stream` or `stream: false`), "
                              "`DerenderCompletionStreamRequest` (`stream: true`, "
                              "`generate_chunk`) or `DerenderCompletionStreamBatchRequest` "
                              "(`stream: true`, `generate_chunks`). Unknown keys are ignored.",
    "ChatDerenderResponse": "`chat.completion` (non-streaming), `{chunk, stream_state}` "
                            "(`generate_chunk`) or `{chunks, stream_state}` "
                            "(`generate_chunks`).",
    "CompletionDerenderResponse": "`text_completion` (non-streaming), `{chunk, stream_state}` "
                                  "(`generate_chunk`) or `{chunks, stream_state}` "
                                  "(`generate_chunks`).",
}

_ERRORS = {
    400: ("Invalid request: `Bad Request` for a body that fails the schema (wrong content "
          "type, JSON syntax, types), `BadRequestError` for one that cannot be derendered "
          "(bounds, ids outside the vocabulary, an invalid or foreign `stream_state`, …).",
          ["Bad Request", "BadRequestError"]),
    404: ("`model` is not a served name (`NotFoundError`, `param: model`).", ["NotFoundError"]),
    413: ("The body exceeds `DERENDER_MAX_BODY_BYTES` (`RequestTooLargeError`).",
          ["RequestTooLargeError"]),
    500: ("Never expected: a bug, reported without details (`InternalServerError`).",
          ["InternalServerError"]),
    503: ("Streaming only: no signing key could be read (`ServiceUnavailableError`); "
          "non-streaming calls still work.", ["ServiceUnavailableError"]),
}

# The README's calls (Qwen3 ids; any default model with a large enough vocabulary answers).
_HELLO = [9707, 1879, 0, 2585, 525, 498]
_EXAMPLES: dict[str, dict[str, Any]] = {
    "chat": {
        "non-streaming": {"prompt_tokens": 12, "generate_response": {
            "request_id": "req-1", "choices": [
                {"index": 0, "token_ids": [*_HELLO, 151645], "finish_reason": "stop"}]},
            "chat_request": {"messages": [{"role": "user", "content": "hi"}]}},
        "streaming": {"stream": True, "prompt_token_ids": [151644, 77091, 198],
                      "generate_chunk": {"request_id": "req-3", "choices": [
                          {"index": 0, "token_ids": [9707, 1879]}]}},
        "streaming, batched": {"stream": True, "generate_chunks": [
            {"request_id": "req-4", "choices": [{"index": 0, "token_ids": [9707, 1879]}]},
            {"request_id": "req-4", "choices": [
                {"index": 0, "token_ids": [0, 151645], "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 3, "completion_tokens": 4}}]},
    },
    "completions": {
        "non-streaming": {"generate_responses": [{"request_id": "req-2", "choices": [
            {"index": 0, "token_ids": _HELLO, "finish_reason": "stop",
             "logprobs": {"content": [{"token_id": 9707, "logprob": -0.1}]}}]}],
            "completion_request": {"prompt": "Say hi", "stop": ["!"], "logprobs": 0}},
        "streaming": {"stream": True, "generate_chunk": {"request_id": "req-5", "choices": [
            {"index": 0, "token_ids": [9707, 1879]}]}},
        "streaming, batched": {"stream": True, "generate_chunks": [
            {"request_id": "req-6", "choices": [{"index": 0, "token_ids": [9707]}]},
            {"request_id": "req-6", "choices": [
                {"index": 0, "token_ids": [1879, 0], "finish_reason": "length"}]}]},
    },
}


def _json(schema: str, description: str) -> JSON:
    """A response whose JSON body is the component ``schema``."""
    return {"description": description, "content": {"application/json": {
        "schema": {"$ref": REF.format(model=schema)}}}}


def _error(status: int) -> JSON:
    description, types = _ERRORS[status]
    response = _json("ErrorResponse", description)
    response["content"]["application/json"]["schema"] = {"allOf": [
        {"$ref": REF.format(model="ErrorResponse")},
        {"properties": {"error": {"properties": {"type": {"enum": types},
                                                 "code": {"const": status}}}}},
    ]}
    return response


def _derender(route: str, body: str, answer: str, summary: str) -> JSON:
    return {"post": {
        "operationId": f"{route}_derender",
        "summary": summary,
        "description": ("Without `stream` (or `stream: false`) the whole answer at once; "
                        "with `stream: true` one call per engine chunk (`generate_chunk`) or "
                        "per run of chunks (`generate_chunks`), each sending the "
                        "`stream_state` the previous call returned (none on the first)."),
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": REF.format(model=body)},
            "examples": {name: {"value": value}
                         for name, value in _EXAMPLES[route].items()}}}},
        "responses": {"200": _json(answer, _UNION_DOCS[answer]),
                      **{str(s): _error(s) for s in (400, 404, 413, 500, 503)}},
    }}


def build_document(title: str, version: str, description: str, served: list[str]) -> JSON:
    """The OpenAPI 3.1 document of a service serving the ``served`` model names."""
    mode: JsonSchemaMode = "validation"  # one schema per model, requests and responses alike
    keyed = [(name, mode, TypeAdapter(kind)) for name, kind in _TOP_LEVEL.items()]
    tops, defs = TypeAdapter.json_schemas(keyed, ref_template=REF)
    schemas: dict[str, JSON] = dict(defs.get("$defs", {}))
    _describe_requests(schemas, served)
    _tighten_requests(schemas)
    for (name, _), schema in tops.items():
        if name in _UNION_DOCS:  # the models are components already
            schemas[name] = {**schema, "description": _UNION_DOCS[name]}
    _tidy(schemas)
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version, "description": description},
        "paths": {
            "/v1/chat/completions/derender": _derender(
                "chat", "ChatDerenderBody", "ChatDerenderResponse",
                "Engine token ids into a chat.completion, or into chat.completion.chunks"),
            "/v1/completions/derender": _derender(
                "completions", "CompletionDerenderBody", "CompletionDerenderResponse",
                "Engine token ids into a text_completion, or into its chunks"),
            "/health": {"get": {"operationId": "health", "summary": "Liveness",
                                "responses": {"200": _json("Health", "Alive.")}}},
            "/v1/models": {"get": {"operationId": "models", "summary": "Served models",
                                   "responses": {"200": _json("ModelList",
                                                              "Every served name.")}}},
        },
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


def document(app: FastAPI) -> JSON:
    """The app's document, built on first use and kept on ``app.openapi_schema``."""
    if app.openapi_schema is None:
        app.openapi_schema = build_document(app.title, app.version, app.description,
                                            app.state.registry.names)
    return app.openapi_schema
