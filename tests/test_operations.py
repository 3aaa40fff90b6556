"""What an operator sees: start-up checks, what is served, the access line, metrics, the CLI."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

import derender
from derender.app.main import create_app
from derender.app.observability import refusal_reason
from derender.cli import main as cli
from derender.core.registry import ModelRegistry
from derender.core.state.token import KeyRing
from derender.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
QWEN3 = ROOT / "layers" / "tokenizers"
HELLO = [9707, 1879, 0, 2585, 525, 498, 151645]
"""Qwen3 ids of "Hello world! How are you" and <|im_end|> (the README's example)."""


def _client(**options: Any) -> TestClient:
    return TestClient(create_app(Settings(models_dir=QWEN3, **options)))


def _stream_body(ids: list[int], state: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"stream": True, "prompt_token_ids": [151644, 77091, 198],
                            "generate_chunk": {"request_id": "req-ops", "choices": [
                                {"index": 0, "token_ids": ids}]}}
    if state is not None:
        body["stream_state"] = state
    return body


def test_a_short_signing_key_stops_the_start_up() -> None:
    """Issue 23: ``DERENDER_SIGNING_KEYS=k1:short`` started, then every stream answered 500."""
    with pytest.raises(ValueError, match="DERENDER_SIGNING_KEYS: key 'k1' is shorter than 16"):
        create_app(Settings(models_dir=QWEN3, signing_keys="k1:short"))
    with pytest.raises(ValueError, match="DERENDER_SIGNING_KEYS: signing keys must be written"):
        create_app(Settings(models_dir=QWEN3, signing_keys="no-colon"))
    with pytest.raises(ValueError, match="not DERENDER_SIGNING_KEYS and "
                                         "DERENDER_SIGNING_KEYS_SSM_PARAMETER"):
        Settings(models_dir=QWEN3, signing_keys="k1:0123456789abcdef",
                 signing_keys_ssm_parameter="/derender/keys")


def test_settings_flags_are_checked() -> None:
    assert Settings.from_env({"DERENDER_ACCESS_LOG": "off"}).access_log is False
    assert Settings.from_env({}).metrics is None  # on where prometheus_client is installed
    assert Settings.from_env({"DERENDER_METRICS": "true"}).metrics is True
    with pytest.raises(ValueError, match="DERENDER_METRICS must be one of"):
        Settings.from_env({"DERENDER_METRICS": "maybe"})


def test_models_list_carries_parsers_and_version_answers() -> None:
    client = _client(parsers={"qwen3": ("qwen3", "hermes")})
    [entry] = client.get("/v1/models").json()["data"]
    assert (entry["id"], entry["reasoning_parser"], entry["tool_parser"]) == \
        ("qwen3", "qwen3", "hermes")
    version = client.get("/version").json()["version"]
    # the installed distribution's metadata (pyproject.toml reads the package's constant)
    assert version == metadata.version("derender") == derender.__version__


def test_start_up_names_every_served_model(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="derender"):
        create_app(Settings(models_dir=QWEN3))
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("serving ")]
    [line] = lines
    served = json.loads(line.removeprefix("serving "))
    assert served["served_names"] == ["qwen3"]
    assert served["default"] is True
    assert served["tokenizer"] == "tokenizer.json"
    assert served["max_model_len"] == 40960  # layers/tokenizers/qwen3/config.json
    assert (served["reasoning_parser"], served["tool_parser"]) == (None, None)


def test_one_access_line_per_request(caplog: pytest.LogCaptureFixture) -> None:
    client = _client()
    with caplog.at_level(logging.INFO, logger="derender.access"):
        first = client.post("/v1/chat/completions/derender", json=_stream_body(HELLO[:2]))
        client.post("/v1/chat/completions/derender",
                    json=_stream_body(HELLO[2:], "AQNkZXYtampered"))
        client.get("/health")
    records = [json.loads(r.getMessage()) for r in caplog.records
               if r.name == "derender.access"]
    assert [r["status"] for r in records] == [200, 400, 200]
    stream, refused, health = records
    assert first.status_code == 200
    assert stream["route"] == "/v1/chat/completions/derender"
    assert (stream["model"], stream["stream"], stream["chunks"], stream["tokens"]) == \
        ("qwen3", True, 1, 2)
    assert stream["request_id"] == first.json()["chunk"]["id"]
    assert refused["refusal"] == "bad_encoding" and refused["level"] == "WARNING"
    assert health["route"] == "/health" and health["model"] is None
    for record in records:  # never bodies, ids or keys
        assert "stream_state" not in json.dumps(record)
        assert "token_ids" not in json.dumps(record)
    quiet = _client(access_log=False)
    with caplog.at_level(logging.INFO, logger="derender.access"):
        caplog.clear()
        quiet.get("/health")
    assert not [r for r in caplog.records if r.name == "derender.access"]


def test_metrics_count_requests_tokens_chunks_and_refusals() -> None:
    client = _client()
    first = client.post("/v1/chat/completions/derender", json=_stream_body(HELLO[:3]))
    client.post("/v1/chat/completions/derender",
                json=_stream_body(HELLO[3:], first.json()["stream_state"]))
    client.post("/v1/chat/completions/derender", json=_stream_body(HELLO[3:], "x" * 20000))
    client.post("/v1/chat/completions/derender", json={
        "generate_response": {"request_id": "r", "choices": [
            {"index": 0, "token_ids": HELLO, "finish_reason": "stop"}]}})
    text = client.get("/metrics")
    assert text.headers["content-type"].startswith("text/plain")
    metrics = text.text
    route = 'route="/v1/chat/completions/derender"'
    assert f'derender_requests_total{{{route},status="200"}} 3.0' in metrics
    assert f'derender_requests_total{{{route},status="400"}} 1.0' in metrics
    assert f"derender_stream_calls_total{{{route}}} 2.0" in metrics
    assert f"derender_stream_chunks_total{{{route}}} 2.0" in metrics
    assert f"derender_output_tokens_total{{{route}}} {3 + 4 + 7}.0" in metrics
    assert 'derender_state_refusals_total{reason="too_long"} 1.0' in metrics
    assert f"derender_request_duration_seconds_count{{{route}}} 4.0" in metrics
    assert _client(metrics=False).get("/metrics").status_code == 404


def test_refusal_reasons_name_every_state_refusal() -> None:
    ring = KeyRing.parse("k1:0123456789abcdef")
    assert refusal_reason("stream_state signature does not match: the token was altered") \
        == "bad_signature"
    assert refusal_reason("stream_state does not belong to this stream") == "other_stream"
    assert refusal_reason("stream_state expired: streams may last 3600 s") == "expired"
    assert refusal_reason("something new") == "other"
    assert ring.current == "k1"


def test_lambda_line_counts_stream_calls_and_refusals(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    from derender.awslambda.adapter import LambdaHandler

    app = create_app(Settings(models_dir=QWEN3, signing_keys="k1:0123456789abcdef",
                              on_lambda=True))
    handler = LambdaHandler(app)

    def invoke(body: dict[str, Any]) -> dict[str, Any]:
        event = {"version": "2.0", "routeKey": "$default",
                 "rawPath": "/v1/chat/completions/derender", "rawQueryString": "",
                 "headers": {"content-type": "application/json"},
                 "requestContext": {"http": {"method": "POST",
                                             "path": "/v1/chat/completions/derender",
                                             "sourceIp": "127.0.0.1"},
                                    "requestId": "r", "stage": "$default"},
                 "body": json.dumps(body), "isBase64Encoded": False}
        capsys.readouterr()
        response = handler(event, None)
        line = capsys.readouterr().out.strip().splitlines()[-1]
        record: dict[str, Any] = json.loads(line)
        record["_status"] = response["statusCode"]
        return record

    ok = invoke(_stream_body(HELLO[:2]))
    assert (ok["_status"], ok["StreamCalls"], ok["Chunks"], ok["StateRefusals"]) == (200, 1, 1, 0)
    assert ok["model"] == "qwen3" and ok["stream"] is True
    bad = invoke(_stream_body(HELLO[2:], "AQNrMQ"))
    assert (bad["_status"], bad["StreamCalls"], bad["StateRefusals"]) == (400, 0, 1)
    assert bad["state_refusal"] == "bad_encoding"


def test_keygen_prints_a_ring_entry_the_service_accepts(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    assert cli(["keygen", "--id", "k7"]) == 0
    entry = capsys.readouterr().out.strip()
    ring = KeyRing.parse(entry)
    assert ring.current == "k7" and len(ring.keys["k7"]) == 64
    create_app(Settings(models_dir=QWEN3, signing_keys=entry))  # accepted at start-up


def test_serve_flags_need_model_folders(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["serve", "--tool-call-parser", "hermes"]) == 2
    assert "need MODEL_DIR" in capsys.readouterr().err
    assert cli(["serve", str(QWEN3 / "qwen3"), str(QWEN3 / "qwen3"),
                "--served-model-name", "x"]) == 2
    assert cli(["serve", str(QWEN3), "--tool-call-parser", "hermes"]) == 1  # not a model
    assert "not a model folder" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_serve_runs_a_model_folder_with_vllm_flags(tmp_path: Path) -> None:
    """``derender serve DIR --served-model-name … --reasoning-parser … --tool-call-parser …``
    serves that folder under that name with those parsers, over real HTTP."""
    port = _free_port()
    command = [sys.executable, "-m", "derender.cli", "serve", str(QWEN3 / "qwen3"),
               "--port", str(port), "--served-model-name", "qwen3-tools",
               "--reasoning-parser", "qwen3", "--tool-call-parser", "hermes",
               "--max-model-len", "4096"]
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).json()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise AssertionError((tmp_path / "serve.log").read_text()) from None
                time.sleep(0.2)
        [entry] = models["data"]
        assert (entry["id"], entry["reasoning_parser"], entry["tool_parser"],
                entry["max_model_len"]) == ("qwen3-tools", "qwen3", "hermes", 4096)
        assert httpx.get(f"http://127.0.0.1:{port}/metrics").status_code == 200
    finally:
        server.terminate()
        server.wait(10)
        log.close()
    output = (tmp_path / "serve.log").read_text()
    assert '"served_names":["qwen3-tools"]' in output
    assert '"route":"/v1/models"' in output  # the access line
    # the ring is checked before anything is served
    env = {k: v for k, v in os.environ.items() if not k.startswith("DERENDER_")}
    failed = subprocess.run([*command[:5], "--port", str(port)], capture_output=True,
                            text=True, env={**env, "DERENDER_SIGNING_KEYS": "k1:short"},
                            timeout=60, check=False)
    assert failed.returncode == 1
    assert "DERENDER_SIGNING_KEYS: key 'k1' is shorter than 16 bytes" in failed.stderr


def test_model_registry_fails_fast_on_the_cli_path() -> None:
    with pytest.raises(RuntimeError, match="not a model folder"):
        ModelRegistry(None, folders=[QWEN3])
