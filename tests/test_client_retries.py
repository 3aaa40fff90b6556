"""Retries in the client helper: which failures are retried, with the same body, how long
it waits, and what it raises when it gives up. A fake service (httpx.MockTransport) plays a
script of answers and failures and records every attempt's body."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from derender_client import (
    DerenderError,
    DerenderUnavailableError,
    RetryPolicy,
    astream_derender,
    retry_after_seconds,
    stream_derender,
)

JSON = dict[str, Any]
FAST = RetryPolicy(attempts=12, backoff_base=0.001, backoff_cap=0.002, deadline=30.0,
                   retry_after_cap=0.01, rng=random.Random(12))
CHUNK = {"request_id": "r", "choices": [{"index": 0, "token_ids": [5], "finish_reason": None}]}
OK = {"chunk": {"choices": [{"index": 0, "text": "ok"}]}, "stream_state": "s1"}


def envelope(status: int, message: str = "refused") -> JSON:
    return {"error": {"message": message, "type": f"Error{status}", "param": None,
                      "code": status}}


Step = Callable[[httpx.Request], httpx.Response]


def status(code: int, headers: dict[str, str] | None = None) -> Step:
    return lambda request: httpx.Response(code, json=envelope(code), headers=headers)


def fail(error: type[httpx.TransportError]) -> Step:
    def step(request: httpx.Request) -> httpx.Response:
        raise error("injected", request=request)
    return step


def raw(code: int, body: bytes) -> Step:
    return lambda request: httpx.Response(code, content=body)


def ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json=OK)


class Script:
    """Answers attempt k with ``steps[k]`` (the last one repeats); records bodies and times."""

    def __init__(self, *steps: Step) -> None:
        self.steps = steps
        self.bodies: list[bytes] = []
        self.times: list[float] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(request.content)
        self.times.append(time.monotonic())
        return self.steps[min(len(self.bodies) - 1, len(self.steps) - 1)](request)


def run_sync(script: Script, **options: Any) -> list[JSON]:
    with httpx.Client(transport=httpx.MockTransport(script), base_url="http://fake") as http:
        return list(stream_derender([CHUNK], base_url="http://fake", client=http, **options))


def run_async(script: Script, **options: Any) -> list[JSON]:
    async def go() -> list[JSON]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(script),
                                     base_url="http://fake") as http:
            return [c async for c in astream_derender([CHUNK], base_url="http://fake",
                                                      client=http, **options)]
    return asyncio.run(go())


RUNNERS = {"sync": run_sync, "async": run_async}
TRANSIENT = {
    "429": status(429), "429 Retry-After": status(429, {"Retry-After": "1"}),
    "502": status(502), "503": status(503), "503 Retry-After": status(503, {"Retry-After": "0"}),
    "504": status(504),
    "connect error": fail(httpx.ConnectError), "connect timeout": fail(httpx.ConnectTimeout),
    "read timeout": fail(httpx.ReadTimeout), "read error (reset)": fail(httpx.ReadError),
    "closed without answer": fail(httpx.RemoteProtocolError),
    "write error": fail(httpx.WriteError),
    "200 cut short": raw(200, json.dumps(OK).encode()[:20]),
}


@pytest.mark.parametrize("mode", sorted(RUNNERS))
@pytest.mark.parametrize("kind", sorted(TRANSIENT))
def test_transient_failures_are_retried_with_the_same_body(mode: str, kind: str) -> None:
    script = Script(TRANSIENT[kind], TRANSIENT[kind], ok)
    out = RUNNERS[mode](script, retry=FAST)
    assert out == [OK["chunk"]]
    assert len(script.bodies) == 3
    assert script.bodies[0] == script.bodies[1] == script.bodies[2]
    assert json.loads(script.bodies[0])["generate_chunk"] == CHUNK


@pytest.mark.parametrize("mode", sorted(RUNNERS))
def test_every_transient_kind_in_one_call(mode: str) -> None:
    script = Script(*TRANSIENT.values(), ok)
    out = RUNNERS[mode](script, retry=RetryPolicy(attempts=len(TRANSIENT) + 1,
                                                  backoff_base=0.001, backoff_cap=0.005,
                                                  retry_after_cap=0.001))
    assert out == [OK["chunk"]]
    assert len(script.bodies) == len(TRANSIENT) + 1
    assert len(set(script.bodies)) == 1


@pytest.mark.parametrize("mode", sorted(RUNNERS))
@pytest.mark.parametrize("code", [400, 401, 403, 404, 409, 413, 422, 500, 501])
def test_other_refusals_raise_at_once_with_the_envelope(mode: str, code: int) -> None:
    script = Script(status(code), ok)
    with pytest.raises(DerenderError) as caught:
        RUNNERS[mode](script, retry=FAST)
    assert not isinstance(caught.value, DerenderUnavailableError)
    assert caught.value.status == code
    assert caught.value.error == envelope(code)["error"]
    assert len(script.bodies) == 1


def test_a_refusal_without_a_json_body_keeps_its_text() -> None:
    script = Script(raw(403, b"Forbidden by the gateway"))
    with pytest.raises(DerenderError) as caught:
        run_sync(script, retry=FAST)
    assert caught.value.status == 403
    assert caught.value.error == {"message": "Forbidden by the gateway"}


@pytest.mark.parametrize("mode", sorted(RUNNERS))
def test_attempts_run_out_with_the_last_answer(mode: str) -> None:
    script = Script(status(503))
    policy = RetryPolicy(attempts=4, backoff_base=0.001, deadline=None)
    with pytest.raises(DerenderUnavailableError) as caught:
        RUNNERS[mode](script, retry=policy)
    assert len(script.bodies) == 4
    assert caught.value.attempts == 4
    assert caught.value.status == 503
    assert caught.value.error == envelope(503)["error"]


@pytest.mark.parametrize("mode", sorted(RUNNERS))
def test_attempts_run_out_on_transport_errors_with_the_cause(mode: str) -> None:
    script = Script(fail(httpx.ConnectError))
    with pytest.raises(DerenderUnavailableError) as caught:
        RUNNERS[mode](script, retry=RetryPolicy(attempts=3, backoff_base=0.001))
    assert len(script.bodies) == 3
    assert caught.value.status == 0
    assert caught.value.error["type"] == "ConnectError"
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


def test_one_attempt_means_no_retry() -> None:
    script = Script(status(503), ok)
    with pytest.raises(DerenderUnavailableError):
        run_sync(script, retry=RetryPolicy(attempts=1))
    assert len(script.bodies) == 1


@pytest.mark.parametrize("mode", sorted(RUNNERS))
def test_the_deadline_bounds_all_attempts(mode: str) -> None:
    script = Script(status(503))
    policy = RetryPolicy(attempts=10_000, backoff_base=0.02, backoff_cap=0.05, deadline=0.4)
    start = time.monotonic()
    with pytest.raises(DerenderUnavailableError) as caught:
        RUNNERS[mode](script, retry=policy)
    elapsed = time.monotonic() - start
    assert elapsed < 5.0  # generous: the deadline is 0.4 s
    assert 2 <= len(script.bodies) < 10_000
    assert script.times[-1] - script.times[0] < 0.45  # no attempt starts past the deadline
    assert caught.value.status == 503


def test_the_deadline_cuts_a_hanging_attempt_short() -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(30)
        return httpx.Response(200, json=OK)

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(hang),
                                     base_url="http://fake") as http:
            async for _ in astream_derender([CHUNK], base_url="http://fake", client=http,
                                            retry=RetryPolicy(deadline=0.3)):
                pass

    start = time.monotonic()
    with pytest.raises(DerenderUnavailableError) as caught:
        asyncio.run(go())
    assert time.monotonic() - start < 10.0
    assert caught.value.error["type"] == "Timeout"


@pytest.mark.parametrize("header", ["1", "HTTP-date"])
def test_retry_after_is_honoured_up_to_its_cap(header: str) -> None:
    value = "1" if header == "1" else format_datetime(datetime.now(UTC) + timedelta(seconds=30),
                                                      usegmt=True)
    script = Script(status(429, {"Retry-After": value}), ok)
    policy = RetryPolicy(backoff_base=0.0, retry_after_cap=0.3)
    run_sync(script, retry=policy)
    assert len(script.bodies) == 2
    waited = script.times[1] - script.times[0]
    assert waited >= 0.29  # Retry-After (1 s, or 30 s away) capped at 0.3 s, not the backoff 0
    assert waited < 10.0  # and not the full 30 s


def test_retry_after_parsing() -> None:
    now = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(" 0 ") == 0.0
    assert retry_after_seconds("-3") == 0.0
    assert retry_after_seconds("Thu, 02 Jan 2025 03:04:15 GMT", now) == 10.0
    assert retry_after_seconds("Thu, 02 Jan 2025 03:04:00 GMT", now) == 0.0
    assert retry_after_seconds("soon") is None


def test_backoff_is_capped_exponential_with_full_jitter() -> None:
    policy = RetryPolicy(backoff_base=0.1, backoff_cap=1.0)
    rng = random.Random(3)
    for retry, ceiling in [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8), (5, 1.0), (9, 1.0),
                           (500, 1.0)]:
        waits = [policy.delay(retry, None, rng) for _ in range(2000)]
        assert all(0.0 <= w <= ceiling for w in waits)
        assert max(waits) > 0.9 * ceiling  # full jitter: the whole range is used
        assert min(waits) < 0.1 * ceiling
    # the jitter comes from the injected RNG: the same seed, the same waits
    first = [policy.delay(k, None, random.Random(5)) for k in range(1, 8)]
    assert first == [policy.delay(k, None, random.Random(5)) for k in range(1, 8)]
    assert policy.delay(3, 4.0, rng) == 4.0
    assert RetryPolicy(retry_after_cap=2.5).delay(1, 60.0, rng) == 2.5


def test_the_injected_rng_drives_the_waits() -> None:
    """Two streams with the same seeded policy wait the same, to the microsecond: read the
    gaps between attempts (each at least the drawn wait)."""
    policy = RetryPolicy(attempts=4, backoff_base=0.08, backoff_cap=0.08,
                         rng=random.Random(99))
    expected = [RetryPolicy(backoff_base=0.08, backoff_cap=0.08).delay(k, None, r)
                for r in [random.Random(99)] for k in (1, 2, 3)]
    script = Script(status(503), status(503), status(503), ok)
    run_sync(script, retry=policy)
    gaps = [b - a for a, b in zip(script.times, script.times[1:], strict=False)]
    assert all(gap >= want - 0.002 for gap, want in zip(gaps, expected, strict=True))


def test_policy_is_checked() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(deadline=0)
    with pytest.raises(ValueError):
        RetryPolicy(backoff_base=-1)


def test_an_answer_of_the_wrong_shape_is_not_retried() -> None:
    script = Script(lambda request: httpx.Response(200, json={"chunks": [], "stream_state": "s"}),
                    ok)
    with pytest.raises(DerenderError) as caught:
        run_sync(script, retry=FAST)
    assert caught.value.error["type"] == "UnexpectedAnswer"
    assert len(script.bodies) == 1


def test_a_batch_is_retried_whole_with_its_state() -> None:
    """After a failed batch call, the retry carries the same chunks and the same state."""
    chunks = [{"request_id": "r", "choices": [{"index": 0, "token_ids": [k]}]} for k in range(3)]
    answers = iter([{"chunks": [{"n": 0}, {"n": 1}, {"n": 2}], "stream_state": "after"}])

    def batch_ok(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=next(answers))

    script = Script(status(502), fail(httpx.ReadError), batch_ok)
    with httpx.Client(transport=httpx.MockTransport(script), base_url="http://fake") as http:
        out = list(stream_derender(chunks, base_url="http://fake", client=http, retry=FAST,
                                   max_delay_ms=60_000))  # the end of the list ends the wait
    assert out == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert len(set(script.bodies)) == 1
    assert json.loads(script.bodies[0])["generate_chunks"] == chunks
