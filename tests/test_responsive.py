"""The local server stays responsive (issue 22): large calls work on the worker pool.

A body larger than ``DERENDER_INLINE_BODY_BYTES`` is parsed and derendered on a thread of
the pool, so the event loop keeps answering ``/health`` while it runs; a streaming call
whose client goes away stops before its next chunk (499, nobody reads it).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from derender.app.main import create_app
from derender.contract.routes import CHAT
from derender.settings import Settings
from derender_testing.servers import LocalServer, clean_env, uvicorn_app
from tests.conftest import LAYER_MODELS

pytestmark = pytest.mark.serial  # timing: run alone, after the parallel phase (`make test`)

CHAT_PATH = CHAT.path

KEYS = "r1:responsive-test-key-0123456789abcdef"
CHUNKS = 4096  # MAX_BATCH_CHUNKS: the largest streaming call the schema allows


def maximal_body(per_chunk: int = 8) -> dict[str, Any]:
    """A plain chat stream call of the most chunks allowed, ``per_chunk`` ids each (at most
    9: with the prompt, 4,096 × 10 ids would pass max_model_len)."""
    ids = [9707, 1879, 0, 2585, 525, 498]  # Qwen3 text ids
    return {"stream": True, "model": "qwen3", "prompt_token_ids": [151644, 77091, 198],
            "generate_chunks": [{"request_id": "big", "choices": [
                {"index": 0, "token_ids": [ids[(i + j) % len(ids)] for j in range(per_chunk)]}]}
                for i in range(CHUNKS)]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("responsive") / "uvicorn.log"
    env = clean_env(DERENDER_MODELS_DIR=str(LAYER_MODELS), DERENDER_SIGNING_KEYS=KEYS)
    with LocalServer(uvicorn_app, env, log, timeout=60) as running:
        yield running.url


def _post(url: str, raw: bytes) -> tuple[int, float]:
    request = urllib.request.Request(url + CHAT_PATH, data=raw,
                                     headers={"content-type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as answer:
        answer.read()
        return answer.status, time.perf_counter() - started


def test_health_answers_while_a_maximal_call_runs(server: str) -> None:
    """``/health`` answers within 50 ms (median of the probes sent while the call ran)."""
    raw = json.dumps(maximal_body()).encode()
    _post(server, raw)  # warm: the model is loaded, the pool's threads started
    result: dict[str, Any] = {}

    def big() -> None:
        result["status"], result["seconds"] = _post(server, raw)

    caller = threading.Thread(target=big)
    caller.start()
    probes: list[float] = []
    time.sleep(0.05)
    while caller.is_alive():
        started = time.perf_counter()
        with urllib.request.urlopen(server + "/health", timeout=30) as answer:
            assert answer.status == 200
        if caller.is_alive():
            probes.append(time.perf_counter() - started)
        time.sleep(0.02)
    caller.join()
    assert result["status"] == 200
    print(f"\nmaximal call: {result['seconds'] * 1e3:.0f} ms; /health during it: "
          f"{len(probes)} probes, median {statistics.median(probes) * 1e3:.1f} ms, "
          f"max {max(probes) * 1e3:.1f} ms")
    assert len(probes) >= 3, result
    assert statistics.median(probes) < 0.050


def _asgi_call(app: Any, raw: bytes, disconnect_after: float | None) -> tuple[int, float]:
    """One POST through the ASGI interface; the client disconnects ``disconnect_after``
    seconds after sending the body (never with None). Returns the status and duration."""

    async def call() -> tuple[int, float]:
        sent = False
        started = time.perf_counter()
        status: list[int] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}
            while disconnect_after is None or time.perf_counter() - started < disconnect_after:
                await asyncio.sleep(0.01)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])

        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "POST", "path": CHAT_PATH, "raw_path": CHAT_PATH.encode(),
                 "query_string": b"", "root_path": "", "scheme": "http",
                 "headers": [(b"content-type", b"application/json"),
                             (b"content-length", str(len(raw)).encode())],
                 "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
        await app(scope, receive, send)
        return status[0], time.perf_counter() - started

    return asyncio.run(call())


def test_a_call_stops_when_its_client_goes_away() -> None:
    """A maximal call, its client gone a quarter of the way in: stopped before its next chunk
    (499: the answer of a call that did not run all its chunks; how much sooner than the whole
    call depends on the machine's load, so it is printed, not asserted)."""
    app = create_app(Settings(models_dir=LAYER_MODELS, signing_keys=KEYS))
    raw = json.dumps(maximal_body(per_chunk=9)).encode()
    _asgi_call(app, raw, None)  # warm: the model loaded
    status, whole = _asgi_call(app, raw, None)
    assert status == 200
    gone = whole / 4  # a fraction of the whole call, whatever this machine's speed
    status, cut = _asgi_call(app, raw, gone)
    print(f"\nwhole call {whole * 1e3:.0f} ms; client gone after {gone * 1e3:.0f} ms: "
          f"{status} in {cut * 1e3:.0f} ms")
    assert status == 499  # it stopped before its last chunk (a finished call answers 200)


def test_small_calls_stay_on_the_loop_and_lambda_has_no_pool() -> None:
    app = create_app(Settings(models_dir=LAYER_MODELS, signing_keys=KEYS))
    assert app.state.worker_pool is not None
    assert create_app(Settings(models_dir=LAYER_MODELS, signing_keys=KEYS,
                               on_lambda=True)).state.worker_pool is None
    assert create_app(Settings(models_dir=LAYER_MODELS, signing_keys=KEYS,
                               worker_threads=-1)).state.worker_pool is None
