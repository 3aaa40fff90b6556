"""What an operator sees of the local server: one JSON access line per request and Prometheus
metrics, from the facts each derender call records about itself.

The app's handler fills a ``CallFacts`` (model, engine request id, stream or not, chunks,
output tokens, why a stream state was refused) in the request's ASGI scope; ``Observed``, a
pure ASGI middleware around the app, times the request, reads the status it answered and
those facts, then writes the access line (logger ``derender.access``; never a body, a token
id or a key) and counts the metrics. On Lambda the same facts reach the invocation line's
CloudWatch embedded metrics (``last_facts``), and ``prometheus_client`` is never imported:
it is imported only when the local server's ``/metrics`` is on.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import asdict, dataclass
from typing import Any

from derender.awslambda.telemetry import route_of
from derender.settings import METRICS

log = logging.getLogger("derender.access")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

FACTS_KEY = "derender.facts"
"""Where a call's ``CallFacts`` live in the ASGI scope."""

REFUSALS: tuple[tuple[str, str], ...] = (
    ("stream_state must be the token", "not_a_token"),
    ("characters, more than the", "too_long"),
    ("bad encoding", "bad_encoding"),
    ("unknown version", "bad_encoding"),
    ("(truncated)", "bad_encoding"),
    ("signed with an unknown key", "unknown_key"),
    ("signature does not match", "bad_signature"),
    ("payload is malformed", "malformed"),
    ("does not belong to this stream", "other_stream"),
    ("stream_state expired", "expired"),
    ("another format", "other_format"),
)
"""Reasons a ``stream_state`` is refused, by a phrase of the refusal's message (the
messages of ``core/state/token.py``, ``core/state/stream.py``, ``core/streaming.py`` and
``core/parsers``); a bounded set of metric label values."""
OTHER_REFUSAL = "other"


def refusal_reason(message: str) -> str:
    """The metric label of a refused ``stream_state``."""
    return next((reason for phrase, reason in REFUSALS if phrase in message), OTHER_REFUSAL)


@dataclass(slots=True)
class CallFacts:
    """What one derender call says about itself (filled in by the app's handler)."""

    model: str | None = None
    request_id: str | None = None
    """The engine's ``request_id`` of the call's first response or chunk."""
    stream: bool = False
    chunks: int = 0
    """OpenAI chunks answered (a streaming call)."""
    tokens: int = 0
    """Output token ids derendered."""
    refusal: str | None = None
    """Why the ``stream_state`` was refused (``refusal_reason``), if it was."""


def facts_of(scope: Scope) -> CallFacts:
    """The call's facts, created on first use."""
    facts = scope.get(FACTS_KEY)
    if not isinstance(facts, CallFacts):
        facts = CallFacts()
        scope[FACTS_KEY] = facts
    return facts


_last = threading.local()


def forget_facts() -> None:
    """Before an invocation: no facts until the app records this one's."""
    _last.facts = None


def last_facts() -> CallFacts | None:
    """The facts of the last request this thread completed (the Lambda adapter's reading:
    one invocation at a time per container)."""
    facts: CallFacts | None = getattr(_last, "facts", None)
    return facts


class Metrics:
    """The Prometheus metrics of the local server, in a registry of their own."""

    def __init__(self) -> None:
        from prometheus_client import (  # noqa: PLC0415 - local server only, never on Lambda
            CollectorRegistry,
            Counter,
            Histogram,
        )

        self.registry = CollectorRegistry()
        self.requests = Counter("derender_requests", "Requests answered, by route and status",
                                ("route", "status"), registry=self.registry)
        self.latency = Histogram(
            "derender_request_duration_seconds", "Time to answer a request, by route",
            ("route",), registry=self.registry,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                     2.5, 5.0, 10.0))
        self.tokens = Counter("derender_output_tokens", "Output token ids derendered",
                              ("route",), registry=self.registry)
        self.stream_calls = Counter("derender_stream_calls", "Streaming calls answered",
                                    ("route",), registry=self.registry)
        self.chunks = Counter("derender_stream_chunks", "OpenAI chunks answered by streaming "
                              "calls", ("route",), registry=self.registry)
        self.refusals = Counter("derender_state_refusals", "stream_state tokens refused, by "
                                "reason", ("reason",), registry=self.registry)

    @classmethod
    def create(cls, wanted: bool | None) -> Metrics | None:
        """Metrics as ``DERENDER_METRICS`` asks: None (unset) when ``prometheus_client`` is
        installed; True, or a start-up error naming what is missing; False, none."""
        if wanted is False:
            return None
        try:
            return cls()
        except ImportError:
            if wanted:
                raise ValueError(f"{METRICS} is true but prometheus_client is not installed "
                                 "(pip install 'derender[server]')") from None
            return None

    def observe(self, route: str, status: int, seconds: float, facts: CallFacts) -> None:
        self.requests.labels(route, str(status)).inc()
        self.latency.labels(route).observe(seconds)
        if facts.tokens:
            self.tokens.labels(route).inc(facts.tokens)
        if facts.stream and status == 200:
            self.stream_calls.labels(route).inc()
            self.chunks.labels(route).inc(facts.chunks)
        if facts.refusal is not None:
            self.refusals.labels(facts.refusal).inc()

    def exposition(self) -> tuple[bytes, str]:
        """The metrics in the text format, and its content type."""
        from prometheus_client import (  # noqa: PLC0415
            CONTENT_TYPE_LATEST,
            generate_latest,
        )

        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def access_record(*, method: str, path: str, status: int, seconds: float,
                  facts: CallFacts) -> dict[str, Any]:
    """The access line's fields: the Lambda invocation line's names where they mean the same."""
    return {"level": "ERROR" if status >= 500 else "WARNING" if status >= 400 else "INFO",
            "message": f"{method} {path} {status}", "route": route_of(path), "path": path,
            "method": method, "status": status, "latency_ms": round(seconds * 1000.0, 3),
            **asdict(facts)}


class Observed:
    """ASGI middleware: times each HTTP request, then logs and counts it."""

    def __init__(self, app: ASGIApp, *, access_log: bool, metrics: Metrics | None) -> None:
        self.app, self.access_log, self.metrics = app, access_log, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        facts = facts_of(scope)

        async def sending(message: Message) -> None:
            nonlocal status
            if message.get("type") == "http.response.start":
                status = int(message.get("status", 500))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            seconds = time.perf_counter() - started
            path = str(scope.get("path", ""))
            _last.facts = facts
            if self.metrics is not None:
                self.metrics.observe(route_of(path), status, seconds, facts)
            if self.access_log:
                record = access_record(method=str(scope.get("method", "")), path=path,
                                       status=status, seconds=seconds, facts=facts)
                log.log(logging.ERROR if status >= 500 else logging.INFO,
                        json.dumps(record, separators=(",", ":"), default=str))
