"""The Lambda handler's per-invocation JSON log line and its CloudWatch EMF metrics.

Events from ``events/`` go through a real ``LambdaHandler``; the lines it prints on stdout are
parsed back and checked against the response and against the EMF specification (every
declared metric is a top-level number, every dimension a top-level string).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from derender.app.main import create_app
from derender.awslambda.adapter import LambdaHandler
from derender.awslambda.telemetry import MAX_USAGE_BODY_BYTES, completion_tokens, route_of
from derender.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
EVENTS = ROOT / "events"
LAYER_MODELS = ROOT / "layers" / "tokenizers"

EMF_UNITS = {"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes",
             "Gigabytes", "Terabytes", "Bits", "Kilobits", "Megabits", "Gigabits", "Terabits",
             "Percent", "Count", "Bytes/Second", "Kilobytes/Second", "Megabytes/Second",
             "Gigabytes/Second", "Terabytes/Second", "Bits/Second", "Kilobits/Second",
             "Megabits/Second", "Gigabits/Second", "Terabits/Second", "Count/Second", "None"}
"""The units CloudWatch accepts."""
METRICS = {"Latency": "Milliseconds", "Errors": "Count", "ColdStart": "Count", "Tokens": "Count",
           "StreamCalls": "Count", "Chunks": "Count", "StateRefusals": "Count"}


@dataclass(frozen=True)
class Context:
    aws_request_id: str
    function_name: str = "derender-chat-completions"
    function_version: str = "$LATEST"
    invoked_function_arn: str = (
        "arn:aws:lambda:us-east-1:123456789012:function:derender-chat-completions")
    memory_limit_in_mb: int = 1024
    log_group_name: str = "/aws/lambda/derender-chat-completions"
    log_stream_name: str = "2026/11/29/[$LATEST]0123456789abcdef0123456789abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


@pytest.fixture(scope="module")
def app() -> FastAPI:
    return create_app(Settings(models_dir=LAYER_MODELS))


@pytest.fixture
def handler(app: FastAPI) -> Iterator[LambdaHandler]:
    """A new handler (a new container) around the shared app."""
    yield LambdaHandler(app)


def event(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    return loaded


def log_lines(out: str) -> list[dict[str, Any]]:
    """Every printed line, each of which must be a JSON object."""
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert all(isinstance(line, dict) for line in lines)
    return lines


def invoke(handler: LambdaHandler, capsys: pytest.CaptureFixture[str], evt: dict[str, Any],
           request_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The response and the one log line its invocation printed."""
    capsys.readouterr()
    response = handler(evt, Context(request_id))
    lines = log_lines(capsys.readouterr().out)
    assert len(lines) == 1
    return response, lines[0]


def assert_valid_emf(record: dict[str, Any]) -> None:
    """EMF: ``_aws`` metadata, each declared metric a top-level number, dimensions strings."""
    meta = record["_aws"]
    assert isinstance(meta["Timestamp"], int)
    assert abs(meta["Timestamp"] - time.time() * 1000) < 60_000
    [directive] = meta["CloudWatchMetrics"]
    assert directive["Namespace"] == "derender"
    assert directive["Dimensions"] == [["route"]]
    for dimension_set in directive["Dimensions"]:
        for dimension in dimension_set:
            assert isinstance(record[dimension], str)
    declared = {metric["Name"]: metric["Unit"] for metric in directive["Metrics"]}
    assert declared == METRICS
    for name, unit in declared.items():
        assert unit in EMF_UNITS
        value = record[name]
        assert isinstance(value, int | float) and not isinstance(value, bool)
        assert value >= 0


@pytest.mark.parametrize(("name", "status", "tokens"), [
    ("http-api-v2.chat", 200, 13),
    ("rest-v1.completions", 200, 4),
    ("function-url.chat.stream", 200, 0),  # chunks carry no usage unless asked
    ("http-api-v2.chat.bad-stream-state", 400, 0),
    ("function-url.completions.unknown-model", 404, 0),
])
def test_one_line_per_invocation(handler: LambdaHandler, capsys: pytest.CaptureFixture[str],
                                 name: str, status: int, tokens: int) -> None:
    evt = event(name)
    response, record = invoke(handler, capsys, evt, f"req-{name}")

    assert response["statusCode"] == status
    assert record["aws_request_id"] == f"req-{name}"
    assert record["status"] == status
    path = evt.get("rawPath") or evt["path"]
    assert record["path"] == record["route"] == path
    assert record["method"] == "POST"
    assert record["message"] == f"POST {path} {status}"
    assert record["level"] == ("INFO" if status < 400 else "WARNING")
    assert isinstance(record["latency_ms"], float) and record["latency_ms"] > 0
    assert record["Latency"] == record["latency_ms"]
    assert record["Errors"] == 0
    assert record["Tokens"] == tokens
    assert_valid_emf(record)


def test_cold_start_only_on_the_first_invocation(handler: LambdaHandler,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    records = [invoke(handler, capsys, event("http-api-v2.health"), f"req-{i}")[1]
               for i in range(3)]
    assert [r["cold_start"] for r in records] == [True, False, False]
    assert [r["ColdStart"] for r in records] == [1, 0, 0]
    assert [r["aws_request_id"] for r in records] == ["req-0", "req-1", "req-2"]
    assert {r["route"] for r in records} == {"/health"}
    assert {r["method"] for r in records} == {"GET"}


def test_unreadable_event_is_logged(handler: LambdaHandler,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    response, record = invoke(handler, capsys, {"foo": "bar"}, "req-odd")
    assert response["statusCode"] == record["status"] == 400
    assert (record["route"], record["path"], record["aws_request_id"]) == (
        "other", None, "req-odd")
    assert_valid_emf(record)


def test_unknown_path_has_a_bounded_route(handler: LambdaHandler,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    evt = event("function-url.health")
    evt["rawPath"] = evt["requestContext"]["http"]["path"] = "/wp-admin/setup.php"
    response, record = invoke(handler, capsys, evt, "req-scan")
    assert response["statusCode"] == record["status"] == 404
    assert (record["route"], record["path"]) == ("other", "/wp-admin/setup.php")


def test_escaping_exception_is_logged_as_an_error(handler: LambdaHandler,
                                                  capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(event: Any, context: Any) -> dict[str, Any]:
        raise MemoryError("out of memory")

    monkeypatch.setattr(handler, "_mangum", boom)
    capsys.readouterr()
    with pytest.raises(MemoryError):
        handler(event("http-api-v2.chat"), Context("req-boom"))
    [record] = log_lines(capsys.readouterr().out)
    assert (record["status"], record["level"], record["Errors"]) == (500, "ERROR", 1)
    assert record["aws_request_id"] == "req-boom"
    assert_valid_emf(record)


def test_completion_tokens() -> None:
    body = json.dumps({"usage": {"prompt_tokens": 3, "completion_tokens": 7}})
    assert completion_tokens({"body": body}) == 7
    encoded = base64.b64encode(body.encode()).decode()
    assert completion_tokens({"body": encoded, "isBase64Encoded": True}) == 7
    chunk = json.dumps({"chunk": {"usage": {"completion_tokens": 2}}, "stream_state": "x"})
    assert completion_tokens({"body": chunk}) == 2
    assert completion_tokens({"body": '{"usage": null}'}) == 0
    assert completion_tokens({"body": "not json, \"usage\""}) == 0
    assert completion_tokens({"body": '{"usage": {"completion_tokens": true}}'}) == 0
    big = json.dumps({"usage": {"completion_tokens": 5}, "pad": "x" * MAX_USAGE_BODY_BYTES})
    assert completion_tokens({"body": big}) == 0  # too large to parse
    assert completion_tokens({}) == 0


def test_route_of() -> None:
    assert route_of("/v1/chat/completions/derender") == "/v1/chat/completions/derender"
    assert route_of("/v1/completions/derender/") == "other"
    assert route_of(None) == "other"
