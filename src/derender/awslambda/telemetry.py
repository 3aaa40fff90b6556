"""One structured log line per Lambda invocation, carrying CloudWatch EMF metrics.

Pure functions: the Lambda adapter measures, these build the record. The line is a JSON
object that CloudWatch Logs Insights can query (``aws_request_id``, ``route``, ``status``,
``latency_ms``, ``cold_start``…) and that CloudWatch turns into metrics through its
Embedded Metric Format (the ``_aws`` member and the metric values at top level).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from derender.contract import routes

NAMESPACE = "derender"
"""CloudWatch namespace of the metrics."""
DIMENSION = "route"
"""The one metric dimension: the route (a known path, else ``other``)."""
METRICS: tuple[tuple[str, str], ...] = (
    ("Latency", "Milliseconds"),
    ("Errors", "Count"),
    ("ColdStart", "Count"),
    ("Tokens", "Count"),
    ("StreamCalls", "Count"),
    ("Chunks", "Count"),
    ("StateRefusals", "Count"),
)
"""(name, unit) of every metric of a record."""
ROUTES = frozenset(route.path for route in routes.ROUTES)
"""Paths reported as their own ``route``; any other path is ``other`` (bounded cardinality)."""
OTHER_ROUTE = "other"
MAX_USAGE_BODY_BYTES = 1 << 20
"""Bodies larger than this are not parsed for ``usage`` (Tokens is then 0)."""


def _http(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """``requestContext.http`` of a payload 2.0 event, else empty."""
    context = event.get("requestContext")
    http = context.get("http") if isinstance(context, Mapping) else None
    return http if isinstance(http, Mapping) else {}


def event_path(event: Any) -> str | None:
    """The request path of an API Gateway (REST 1.0, HTTP 2.0) or Function URL event."""
    if not isinstance(event, Mapping):
        return None
    for path in (event.get("rawPath"), event.get("path"), _http(event).get("path")):
        if isinstance(path, str):
            return path
    return None


def event_method(event: Any) -> str | None:
    """The HTTP method of the event, when it names one."""
    if not isinstance(event, Mapping):
        return None
    for method in (event.get("httpMethod"), _http(event).get("method")):
        if isinstance(method, str):
            return method
    return None


def route_of(path: str | None) -> str:
    """The metric dimension value of a path."""
    return path if path in ROUTES else OTHER_ROUTE


def completion_tokens(response: Mapping[str, Any], limit: int = MAX_USAGE_BODY_BYTES) -> int:
    """``usage.completion_tokens`` of the response body (a chunk's too), else 0.

    Only bodies up to ``limit`` characters are parsed; a larger or unreadable body counts 0.
    """
    raw = response.get("body")
    encoded = bool(response.get("isBase64Encoded"))
    if not isinstance(raw, str) or len(raw) > limit:
        return 0
    if not encoded and '"usage"' not in raw:  # the cheap read: no usage member at all
        return 0
    try:
        text = base64.b64decode(raw).decode("utf-8") if encoded else raw
        body = json.loads(text)
    except (binascii.Error, ValueError):
        return 0
    if not isinstance(body, dict):
        return 0
    usage = body.get("usage")
    if usage is None and isinstance(body.get("chunk"), dict):
        usage = body["chunk"].get("usage")
    if isinstance(usage, dict):
        tokens = usage.get("completion_tokens")
        if isinstance(tokens, int) and not isinstance(tokens, bool):
            return tokens
    return 0


def level_of(status: int) -> str:
    """``ERROR`` for 5xx, ``WARNING`` for 4xx, else ``INFO``."""
    if status >= 500:
        return "ERROR"
    return "WARNING" if status >= 400 else "INFO"


def invocation_record(*, aws_request_id: str | None, path: str | None, method: str | None,
                      status: int, latency_ms: float, cold_start: bool, tokens: int,
                      timestamp_ms: int, model: str | None = None, stream: bool = False,
                      chunks: int = 0, refusal: str | None = None) -> dict[str, Any]:
    """The log record of one invocation, with its EMF metadata and metric values; ``model``,
    ``stream``, ``chunks`` and ``refusal`` are what the call recorded of itself
    (``derender.app.observability.CallFacts``)."""
    route = route_of(path)
    streamed = stream and status == 200
    return {
        "level": level_of(status),
        "message": f"{method or '-'} {path or '-'} {status}",
        "aws_request_id": aws_request_id,
        "route": route,
        "path": path,
        "method": method,
        "status": status,
        "latency_ms": round(latency_ms, 3),
        "cold_start": cold_start,
        "model": model,
        "stream": stream,
        "state_refusal": refusal,
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [[DIMENSION]],
                "Metrics": [{"Name": name, "Unit": unit} for name, unit in METRICS],
            }],
        },
        "Latency": round(latency_ms, 3),
        "Errors": 1 if status >= 500 else 0,
        "ColdStart": 1 if cold_start else 0,
        "Tokens": tokens,
        "StreamCalls": 1 if streamed else 0,
        "Chunks": chunks if streamed else 0,
        "StateRefusals": 0 if refusal is None else 1,
    }


def log_line(record: Mapping[str, Any]) -> str:
    """The record as one compact, ASCII-only JSON line (no newline)."""
    return json.dumps(record, separators=(",", ":"), default=str)
