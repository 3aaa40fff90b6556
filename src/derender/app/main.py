"""The HTTP app: validate the body, select the model, call the core, map errors to the envelope.

Bodies are parsed and validated here rather than by FastAPI's body injection so that every
refusal has vLLM's shape (400 ``Bad Request``, never FastAPI's 422) and so the work per call
is one JSON parse and one pydantic validation.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.responses import Response
from pydantic import BaseModel, TypeAdapter, ValidationError

from derender import __version__
from derender.app.errors import body_errors, media_type_error_body, schema_error_body
from derender.app.keys import key_provider
from derender.app.observability import CallFacts, Metrics, Observed, facts_of, refusal_reason
from derender.aws.callers import caller_of
from derender.aws.models import download_models
from derender.contract import routes
from derender.contract.errors import BadRequestError, DerenderError, ErrorType, envelope
from derender.contract.requests import (
    ChatBody,
    CompletionBody,
    DerenderChatRequest,
    DerenderChatStreamBatchRequest,
    DerenderChatStreamRequest,
    DerenderCompletionRequest,
    DerenderCompletionStreamBatchRequest,
    DerenderCompletionStreamRequest,
)
from derender.core.bounds import RequestLimits, check_call_budget, check_request_limits
from derender.core.chat import derender_chat, derender_chat_stream
from derender.core.completions import derender_completion, derender_completion_stream
from derender.core.registry import DECODE_SPEC, ORIGINALS, ModelRegistry, ServedModel
from derender.core.state.stream import StreamState, decode_state, encode_state
from derender.core.state.token import KeyRing, as_state, sign, verify
from derender.core.streaming import abandoned, stream_chunks
from derender.settings import MAX_BODY_BYTES, SIGNING_KEYS, Settings

if TYPE_CHECKING:
    from derender.contract.responses import (
        ChatCompletion,
        ChatCompletionChunk,
        ChatStreamBatchResponse,
        ChatStreamResponse,
        CompletionChunk,
        CompletionStreamBatchResponse,
        CompletionStreamResponse,
        Health,
        ModelList,
        StreamStateToken,
        TextCompletion,
        Version,
    )

JSON = dict[str, Any]
Body = TypeVar("Body", bound=BaseModel)
Chunk = TypeVar("Chunk")


log = logging.getLogger("derender")

VERSION = __version__

NON_FINITE = "Out of range float values are not JSON compliant"
"""vLLM's 400 for a float field given NaN or an infinity as a string ("NaN", "-inf",
"1e400"): it coerces them, then cannot write its answer."""

_CHAT_BODY: TypeAdapter[ChatBody] = TypeAdapter(ChatBody)
_COMPLETION_BODY: TypeAdapter[CompletionBody] = TypeAdapter(CompletionBody)
_CHAT_BATCH: TypeAdapter[DerenderChatStreamBatchRequest] = TypeAdapter(
    DerenderChatStreamBatchRequest)
_COMPLETION_BATCH: TypeAdapter[DerenderCompletionStreamBatchRequest] = TypeAdapter(
    DerenderCompletionStreamBatchRequest)


_BATCHES = (DerenderChatStreamBatchRequest, DerenderCompletionStreamBatchRequest)


def chat_stream_answer(
    chunks: list[ChatCompletionChunk], token: StreamStateToken, batch: bool,
) -> ChatStreamResponse | ChatStreamBatchResponse:
    """A chat stream call's answer: its ``chunks`` (a batch call) or its one ``chunk``."""
    if batch:
        return {"chunks": chunks, "stream_state": token}
    return {"chunk": chunks[0], "stream_state": token}


def completion_stream_answer(
    chunks: list[CompletionChunk], token: StreamStateToken, batch: bool,
) -> CompletionStreamResponse | CompletionStreamBatchResponse:
    """A completions stream call's answer: its ``chunks`` (a batch call) or its ``chunk``."""
    if batch:
        return {"chunks": chunks, "stream_state": token}
    return {"chunk": chunks[0], "stream_state": token}


class SchemaError(Exception):
    """The body failed validation; carries the error dicts to render."""

    def __init__(self, errors: list[JSON]) -> None:
        super().__init__(f"{len(errors)} validation errors")
        self.errors = errors


def json_response(content: Mapping[str, object], status: int = 200) -> Response:
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
        if _only_non_finite(exc):
            raise BadRequestError(NON_FINITE) from None  # vLLM's answer (fixtures 2900-)
        raise SchemaError(body_errors(exc)) from None


_BRANCHES = frozenset(model.__name__ for model in (
    DerenderChatRequest, DerenderChatStreamRequest, DerenderCompletionRequest,
    DerenderCompletionStreamRequest))


def _only_non_finite(exc: ValidationError) -> bool:
    """The body would be valid but for non-finite floats: every error (of one branch of the
    route's union, when the errors are per branch) is ``finite_number``."""
    errors = exc.errors()
    # a branch's errors start with its name (``function-after[..., Name]`` with a validator)
    heads = [(re.findall(r"\w+", str(error["loc"][0])) or [""])[-1] if error["loc"] else ""
             for error in errors]
    per_branch = all(head in _BRANCHES for head in heads)
    groups: dict[object, list[bool]] = {}
    for error, head in zip(errors, heads, strict=True):
        key = head if per_branch else None
        groups.setdefault(key, []).append(error["type"] == "finite_number")
    return any(all(group) for group in groups.values())


def _too_large(size: int | None, limit: int) -> Response:
    """413 naming the limit; ``size`` None when the body was not read to its end."""
    body = "Request body" if size is None else f"Request body of {size} bytes"
    error = ErrorType.REQUEST_TOO_LARGE
    return json_response(envelope(
        error, f"{body} exceeds the limit of {limit} bytes ({MAX_BODY_BYTES})."), error.status)


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


DISCONNECT_POLL_SECONDS = 0.05
SWITCH_INTERVAL_SECONDS = 0.001
"""How often a call on the worker pool checks whether its client is still connected."""


def worker_pool(settings: Settings) -> ThreadPoolExecutor | None:
    """Threads for the CPU work of large calls (``DERENDER_WORKER_THREADS``; 0: one per
    core), so that one slow call does not hold up the event loop; None on Lambda (one call
    per container at a time: nothing to keep responsive) or with ``-1``.

    Threads share the interpreter lock: they keep the loop answering, they do not add cores.
    More throughput takes more processes (``uvicorn --workers N``, README).
    """
    count = settings.worker_threads
    if settings.on_lambda or count < 0:
        return None
    # the loop thread waits for the interpreter lock at most this long per turn (default
    # 5 ms, and answering /health takes several turns) while a worker computes
    sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_SECONDS))
    return ThreadPoolExecutor(max_workers=count or os.cpu_count() or 1,
                              thread_name_prefix="derender-work")


def create_app(settings: Settings | None = None, registry: ModelRegistry | None = None
               ) -> FastAPI:
    """The service; ``settings`` default to the environment."""
    settings = settings or Settings.from_env()
    if registry is None:
        models_dir = settings.models_dir
        if settings.models_s3_uri:
            models_dir = download_models(settings.models_s3_uri, settings.models_cache_dir)
        registry = ModelRegistry(models_dir, settings.default_model, settings.parsers,
                                 folders=list(settings.model_folders) or None,
                                 manifests=settings.manifests,
                                 skip_unservable=settings.skip_unservable)
    app = FastAPI(title="derender", version=VERSION, docs_url=None, redoc_url=None,
                  openapi_url=routes.OPENAPI.path,
                  description="Token ids from a generate engine back into OpenAI responses.")
    app.state.registry = registry
    check_key_ring(settings)  # a malformed ring stops the start-up, not the first stream

    ring = key_provider(settings)
    app.state.key_provider = ring
    limits = RequestLimits.of(settings)
    pool = worker_pool(settings)
    app.state.worker_pool = pool

    async def handle(request: Request, adapter: TypeAdapter[Any], batch: TypeAdapter[Any],
                     run: Callable[[Any, ServedModel], Mapping[str, object]],
                     run_stream: Callable[[Any, ServedModel, StreamState | None, int,
                                           str | None],
                                          tuple[list[Chunk], StreamState]],
                     answer: Callable[[list[Chunk], StreamStateToken, bool], Mapping[str, object]]
                     ) -> Response:
        if not _is_json(request):
            return json_response(media_type_error_body(), ErrorType.SCHEMA.status)
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > settings.max_body_bytes:
            return _too_large(int(declared), settings.max_body_bytes)  # before reading it
        raw = await _read_body(request, settings.max_body_bytes)
        if raw is None:
            return _too_large(None, settings.max_body_bytes)
        facts = facts_of(request.scope)
        event = request.scope.get("aws.event")
        if pool is None or len(raw) <= settings.inline_body_bytes:
            return work(raw, adapter, batch, run, run_stream, answer, event, facts)
        # a large body: its CPU work runs on the pool, the loop keeps answering (/health)
        gone = threading.Event()
        future = asyncio.get_running_loop().run_in_executor(
            pool, work, raw, adapter, batch, run, run_stream, answer, event, facts,
            gone.is_set)
        while True:
            done, _ = await asyncio.wait({future}, timeout=DISCONNECT_POLL_SECONDS)
            if done:
                return future.result()
            if not gone.is_set() and await request.is_disconnected():
                gone.set()  # a streaming call stops before its next chunk

    def work(raw: bytes, adapter: TypeAdapter[Any], batch: TypeAdapter[Any],
             run: Callable[[Any, ServedModel], Mapping[str, object]],
             run_stream: Callable[[Any, ServedModel, StreamState | None, int, str | None],
                                  tuple[list[Chunk], StreamState]],
             answer: Callable[[list[Chunk], StreamStateToken, bool], Mapping[str, object]],
             event: Any, facts: CallFacts,
             gone: Callable[[], bool] | None = None) -> Response:
        """A call's CPU work: parse, derender, sign and write the answer."""
        reset = None if gone is None else abandoned.set(gone)
        try:
            body = parse_body(raw, adapter, batch)
            facts.stream = bool(body.stream)
            model = registry.get(body.model)
            facts.model = model.info.name
            check_request_limits(getattr(body, "chat_request", None)
                                 or getattr(body, "completion_request", None), limits)
            check_call_budget(body, settings.max_call_tokens, model.info.max_model_len)
            if not body.stream:
                whole = run(body, model)
                facts.request_id = str(whole.get("id"))
                usage = whole.get("usage")
                facts.tokens = int(usage.get("completion_tokens") or 0) \
                    if isinstance(usage, dict) else 0
                return json_response(whole)
            keys = ring()
            state = None
            try:
                if body.stream_state is not None:
                    state = decode_state(verify(keys, body.stream_state,
                                                settings.max_state_chars))
                chunks, state = run_stream(body, model, state, settings.state_ttl_seconds,
                                           caller_of(event))
            except DerenderError as exc:
                if "stream_state" in exc.message:
                    facts.refusal = refusal_reason(exc.message)
                raise
            facts.chunks = len(chunks)
            facts.request_id = str(chunks[0]["id"]) if chunks else None  # type: ignore[index]
            facts.tokens = sum(len(choice.token_ids or ()) for chunk in stream_chunks(body)
                               for choice in chunk.choices)
            token = sign(keys, encode_state(state))
            carried: StreamStateToken = as_state(token) if settings.state_form == "object" \
                else token
            return json_response(answer(chunks, carried, isinstance(body, _BATCHES)))
        except SchemaError as exc:
            return json_response(schema_error_body(exc.errors), ErrorType.SCHEMA.status)
        except DerenderError as exc:
            return json_response(exc.envelope(), exc.status)
        except Exception:  # a bug: report it in the envelope, never a traceback
            log.exception("derender failed")
            return json_response(envelope(ErrorType.INTERNAL, "internal error"),
                                 ErrorType.INTERNAL.status)
        finally:
            if reset is not None:
                abandoned.reset(reset)

    def chat(body: Any, model: ServedModel) -> ChatCompletion:
        return derender_chat(body, model, settings.max_n_sequences)

    def completion(body: Any, model: ServedModel) -> TextCompletion:
        return derender_completion(body, model, settings.max_n_sequences)

    async def chat_derender(request: Request) -> Response:
        """Chat completion (or, with ``stream: true``, one chunk) from engine token ids."""
        return await handle(request, _CHAT_BODY, _CHAT_BATCH, chat, derender_chat_stream,
                            chat_stream_answer)

    async def completions_derender(request: Request) -> Response:
        """Text completion (or, with ``stream: true``, one chunk) from engine token ids."""
        return await handle(request, _COMPLETION_BODY, _COMPLETION_BATCH, completion,
                            derender_completion_stream, completion_stream_answer)

    async def health(request: Request) -> Response:
        alive: Health = {"status": "ok"}
        return json_response(alive)

    created = int(time.time())

    async def models(request: Request) -> Response:
        served: ModelList = {"object": "list", "data": [
            {"id": name, "object": "model", "created": created, "owned_by": "derender",
             "root": info.folder.name, "parent": None, "max_model_len": info.max_model_len,
             "reasoning_parser": info.reasoning_parser, "tool_parser": info.tool_parser}
            for info in registry.infos for name in info.served_names
        ]}
        return json_response(served)

    async def version(request: Request) -> Response:
        about: Version = {"version": VERSION}
        return json_response(about)

    metrics = None if settings.on_lambda else Metrics.create(settings.metrics)

    async def metrics_text(request: Request) -> Response:
        assert metrics is not None
        data, content_type = metrics.exposition()
        return Response(data, media_type=content_type)

    def openapi() -> JSON:
        from derender.app.openapi import document  # noqa: PLC0415 - built on first use only
        return document(app)

    app.openapi = openapi  # type: ignore[method-assign]
    # Plain Starlette routes: the body is parsed above, so FastAPI's per-request dependency
    # solving would only add latency (about 50 µs a call).
    handlers = {routes.CHAT: chat_derender, routes.COMPLETIONS: completions_derender,
                routes.HEALTH: health, routes.MODELS: models, routes.VERSION: version}
    for route in routes.ROUTES:
        app.add_route(route.path, handlers[route], methods=[route.method])
    if metrics is not None:
        app.add_route(routes.METRICS.path, metrics_text, methods=[routes.METRICS.method])
    app.add_middleware(Observed, access_log=settings.access_log and not settings.on_lambda,
                       metrics=metrics)
    log_served(registry)
    return app


def check_key_ring(settings: Settings) -> None:
    """Refuse a malformed ``DERENDER_SIGNING_KEYS`` now, naming it (a ring read from AWS is
    checked when it is read)."""
    if settings.signing_keys:
        try:
            KeyRing.parse(settings.signing_keys)
        except ValueError as error:
            raise ValueError(f"{SIGNING_KEYS}: {error}") from None


def log_served(registry: ModelRegistry) -> None:
    """One start-up line per served model (and the version)."""
    default = registry.info(None)
    for info in registry.infos:
        tokenizer = next((name for name in (DECODE_SPEC, *ORIGINALS)
                          if (info.folder / name).is_file()), None)
        log.info("serving %s", json.dumps({
            "served_names": list(info.served_names), "folder": str(info.folder),
            "tokenizer": tokenizer, "reasoning_parser": info.reasoning_parser,
            "tool_parser": info.tool_parser, "max_model_len": info.max_model_len,
            "default": info is default, "version": VERSION}, separators=(",", ":")))
