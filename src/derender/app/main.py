"""The HTTP app: validate the body, select the model, call the core, map errors to the envelope.

Bodies are parsed and validated here rather than by FastAPI's body injection so that every
refusal has vLLM's shape (400 ``Bad Request``, never FastAPI's 422) and so the work per call
is one JSON parse and one pydantic validation.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.responses import Response
from pydantic import BaseModel, TypeAdapter, ValidationError

from derender.app.errors import (
    body_errors,
    envelope,
    error_body,
    media_type_error_body,
    schema_error_body,
)
from derender.app.keys import key_provider
from derender.aws.callers import caller_of
from derender.aws.models import download_models
from derender.contract.requests import (
    ChatBody,
    CompletionBody,
    DerenderChatStreamBatchRequest,
    DerenderCompletionStreamBatchRequest,
)
from derender.core.bounds import RequestLimits, check_request_limits
from derender.core.chat import derender_chat, derender_chat_stream
from derender.core.completions import derender_completion, derender_completion_stream
from derender.core.errors import DerenderError
from derender.core.registry import ModelRegistry, ServedModel
from derender.core.state.stream import StreamState, decode_state, encode_state
from derender.core.state.token import as_state, sign, verify
from derender.settings import MAX_BODY_BYTES, Settings

JSON = dict[str, Any]
Body = TypeVar("Body", bound=BaseModel)

CHAT_PATH = "/v1/chat/completions/derender"
COMPLETIONS_PATH = "/v1/completions/derender"

log = logging.getLogger("derender")

_CHAT_BODY: TypeAdapter[ChatBody] = TypeAdapter(ChatBody)
_COMPLETION_BODY: TypeAdapter[CompletionBody] = TypeAdapter(CompletionBody)
_CHAT_BATCH: TypeAdapter[DerenderChatStreamBatchRequest] = TypeAdapter(
    DerenderChatStreamBatchRequest)
_COMPLETION_BATCH: TypeAdapter[DerenderCompletionStreamBatchRequest] = TypeAdapter(
    DerenderCompletionStreamBatchRequest)


_BATCHES = (DerenderChatStreamBatchRequest, DerenderCompletionStreamBatchRequest)


class SchemaError(Exception):
    """The body failed validation; carries the error dicts to render."""

    def __init__(self, errors: list[JSON]) -> None:
        super().__init__(f"{len(errors)} validation errors")
        self.errors = errors


def json_response(content: JSON, status: int = 200) -> Response:
    try:
        text = json.dumps(content, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate echoed from the request
        data = json.dumps(content, separators=(",", ":"), allow_nan=False).encode("ascii")
    return Response(data, status_code=status, media_type="application/json")


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value - value != 0:  # 1e400 overflows to inf, which no JSON answer can carry
        raise ValueError(f"{text[:50]} is out of the range of a float")
    return value


def parse_body(raw: bytes, adapter: TypeAdapter[Any], batch: TypeAdapter[Any]) -> Any:
    """JSON text → validated request model, or SchemaError with FastAPI-style locations.

    A body with ``generate_chunks`` is our batched streaming call; every other body is
    validated exactly as vLLM's union of the route's two models.
    """
    try:
        data = (json.loads(raw, parse_constant=_reject_constant, parse_float=_finite_float)
                if raw else None)
    except json.JSONDecodeError as exc:
        raise SchemaError([{"type": "json_invalid", "loc": ("body", exc.pos),
                            "msg": "JSON decode error", "input": {},
                            "ctx": {"error": exc.msg}}]) from None
    except (ValueError, RecursionError) as exc:  # invalid UTF-8, NaN/Infinity, deep nesting
        raise SchemaError([{"type": "json_invalid", "loc": ("body", 0),
                            "msg": "JSON decode error", "input": {},
                            "ctx": {"error": str(exc)}}]) from None
    if data is None:
        raise SchemaError([{"type": "missing", "loc": ("body",), "msg": "Field required",
                            "input": None}])
    if isinstance(data, dict) and "generate_chunks" in data:
        adapter = batch
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        raise SchemaError(body_errors(exc)) from None


def _too_large(size: int | None, limit: int) -> Response:
    """413 naming the limit; ``size`` None when the body was not read to its end."""
    body = "Request body" if size is None else f"Request body of {size} bytes"
    return json_response(envelope(
        f"{body} exceeds the limit of {limit} bytes ({MAX_BODY_BYTES}).",
        "RequestTooLargeError", 413), 413)


async def _read_body(request: Request, limit: int) -> bytes | None:
    """The body, or None as soon as it grows past ``limit``: a body sent without
    Content-Length (chunked) is never held whole."""
    parts: list[bytes] = []
    size = 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            return None
        parts.append(part)
    return b"".join(parts)


def _is_json(request: Request) -> bool:
    content_type = request.headers.get("content-type", "")
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


def create_app(settings: Settings | None = None, registry: ModelRegistry | None = None
               ) -> FastAPI:
    """The service; ``settings`` default to the environment."""
    settings = settings or Settings.from_env()
    if registry is None:
        models_dir = settings.models_dir
        if settings.models_s3_uri:
            models_dir = download_models(settings.models_s3_uri, settings.models_cache_dir)
        registry = ModelRegistry(models_dir, settings.default_model, settings.parsers)
    app = FastAPI(title="derender", version="0.1.0", docs_url=None, redoc_url=None,
                  description="Token ids from a generate engine back into OpenAI responses.")
    app.state.registry = registry

    ring = key_provider(settings)
    app.state.key_provider = ring
    limits = RequestLimits(settings.max_stop_strings, settings.max_stop_string_chars,
                           settings.max_tools, settings.max_tool_schema_bytes)

    async def handle(request: Request, adapter: TypeAdapter[Any], batch: TypeAdapter[Any],
                     run: Callable[[Any, ServedModel], JSON],
                     run_stream: Callable[[Any, ServedModel, StreamState | None, int,
                                           str | None],
                                          tuple[list[JSON], StreamState]]) -> Response:
        if not _is_json(request):
            return json_response(media_type_error_body(), 400)
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > settings.max_body_bytes:
            return _too_large(int(declared), settings.max_body_bytes)  # before reading it
        raw = await _read_body(request, settings.max_body_bytes)
        if raw is None:
            return _too_large(None, settings.max_body_bytes)
        try:
            body = parse_body(raw, adapter, batch)
            model = registry.get(body.model)
            check_request_limits(getattr(body, "chat_request", None)
                                 or getattr(body, "completion_request", None), limits)
            if not body.stream:
                return json_response(run(body, model))
            keys = ring()
            state = None
            if body.stream_state is not None:
                state = decode_state(verify(keys, body.stream_state, settings.max_state_chars))
            chunks, state = run_stream(body, model, state, settings.state_ttl_seconds,
                                       caller_of(request.scope.get("aws.event")))
            token = sign(keys, encode_state(state))
            carried = as_state(token) if settings.state_form == "object" else token
            if isinstance(body, _BATCHES):
                return json_response({"chunks": chunks, "stream_state": carried})
            return json_response({"chunk": chunks[0], "stream_state": carried})
        except SchemaError as exc:
            return json_response(schema_error_body(exc.errors), 400)
        except DerenderError as exc:
            return json_response(error_body(exc), exc.status)
        except Exception:  # a bug: report it in the envelope, never a traceback
            log.exception("derender failed")
            return json_response(envelope("internal error", "InternalServerError", 500), 500)

    def chat(body: Any, model: ServedModel) -> JSON:
        return derender_chat(body, model, settings.max_n_sequences)

    def completion(body: Any, model: ServedModel) -> JSON:
        return derender_completion(body, model, settings.max_n_sequences)

    async def chat_derender(request: Request) -> Response:
        """Chat completion (or, with ``stream: true``, one chunk) from engine token ids."""
        return await handle(request, _CHAT_BODY, _CHAT_BATCH, chat, derender_chat_stream)

    async def completions_derender(request: Request) -> Response:
        """Text completion (or, with ``stream: true``, one chunk) from engine token ids."""
        return await handle(request, _COMPLETION_BODY, _COMPLETION_BATCH, completion,
                            derender_completion_stream)

    async def health(request: Request) -> Response:
        return json_response({"status": "ok"})

    created = int(time.time())

    async def models(request: Request) -> Response:
        return json_response({"object": "list", "data": [
            {"id": name, "object": "model", "created": created, "owned_by": "derender",
             "root": info.folder.name, "parent": None, "max_model_len": info.max_model_len}
            for info in registry.infos for name in info.served_names
        ]})

    def openapi() -> JSON:
        from derender.app.openapi import document  # noqa: PLC0415 - built on first use only
        return document(app)

    app.openapi = openapi  # type: ignore[method-assign]
    # Plain Starlette routes: the body is parsed above, so FastAPI's per-request dependency
    # solving would only add latency (about 50 µs a call).
    app.add_route(CHAT_PATH, chat_derender, methods=["POST"])
    app.add_route(COMPLETIONS_PATH, completions_derender, methods=["POST"])
    app.add_route("/health", health, methods=["GET"])
    app.add_route("/v1/models", models, methods=["GET"])
    return app
