"""SnapStart: the restore hooks renew what an init captured, driven as the runtime drives them.

The Lambda runtime, after restoring a snapshot, calls every ``(func, args, kwargs)`` that
``snapshot_restore_py.get_after_restore()`` holds. ``restore()`` below does exactly that. A
"snapshot" is the process state right after the handler's init; two restored containers are
two runs from that same state (``random.setstate``, the same cached key ring and client).
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import snapshot_restore_py

from derender.app import keys
from derender.app.keys import ConfiguredKeyRing
from derender.aws import keys as aws_keys
from derender.awslambda import snapstart
from derender.awslambda.adapter import LambdaHandler
from derender.core.state.token import KeyRing
from derender.settings import Settings
from tests.test_callers import EVENTS, LAYER_MODELS, next_call
from tests.test_lambda_events import FakeLambdaContext

PARAMETER = "/derender/signing-keys"
RING = "k1:snapstart-test-signing-key-0123"


def restore() -> None:
    """What the Lambda runtime does after a restore, before the first invocation."""
    for func, args, kwargs in snapshot_restore_py.get_after_restore():  # type: ignore[misc]
        func(*args, **kwargs)


class FakeSsm:
    """An SSM client: counts reads; ``clients`` counts how many were made."""

    clients = 0

    def __init__(self) -> None:
        FakeSsm.clients += 1
        self.reads = 0

    def get_parameter(self, Name: str, WithDecryption: bool) -> dict[str, Any]:  # noqa: N803
        assert (Name, WithDecryption) == (PARAMETER, True)
        self.reads += 1
        return {"Parameter": {"Value": RING}}


@pytest.fixture
def snapstarted(monkeypatch: pytest.MonkeyPatch) -> Iterator[LambdaHandler]:
    """A handler initialised as a SnapStart init does, keys from SSM (a fake client), with an
    empty hook registry and a clock that stands still (a snapshot does not age it)."""
    monkeypatch.setattr(snapshot_restore_py, "_after_restore_registry", [])
    monkeypatch.setenv("DERENDER_MODELS_DIR", str(LAYER_MODELS))
    monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "snap-start")
    monkeypatch.setenv("DERENDER_SIGNING_KEYS_SSM_PARAMETER", PARAMETER)
    monkeypatch.delenv("DERENDER_SIGNING_KEYS", raising=False)
    monkeypatch.delenv("DERENDER_DEFAULT_MODEL", raising=False)
    monkeypatch.setattr(aws_keys, "boto3_client", lambda service: FakeSsm())
    monkeypatch.setattr(aws_keys, "_clock", lambda: 1000.0)
    FakeSsm.clients = 0
    yield LambdaHandler()


def stream_call(handler: LambdaHandler, state: str | None = None) -> dict[str, Any]:
    event = json.loads((EVENTS / "http-api-v2.chat.stream.json").read_text(encoding="utf-8"))
    if state is not None:
        event = next_call(event, state)
    response = handler(event, FakeLambdaContext())
    assert response["statusCode"] == 200, response["body"]
    body: dict[str, Any] = json.loads(response["body"])
    return body


def test_the_handler_registers_one_restore_hook(snapstarted: LambdaHandler) -> None:
    hooks = snapshot_restore_py.get_after_restore()
    assert [func for func, _, _ in hooks] == [snapstarted.after_restore]  # type: ignore[misc]


def test_restored_containers_draw_different_random_numbers(snapstarted: LambdaHandler) -> None:
    snapshot = random.getstate()

    def container(hooks: bool) -> list[int]:
        random.setstate(snapshot)  # restored from the one snapshot
        if hooks:
            restore()
        return [random.getrandbits(64) for _ in range(4)]

    # without the hooks every restored container repeats the snapshot's sequence...
    assert container(hooks=False) == container(hooks=False)
    # ...with them each gets its own
    assert container(hooks=True) != container(hooks=True)


def test_key_ring_is_read_again_through_a_new_client_after_restore(
        snapstarted: LambdaHandler) -> None:
    first = stream_call(snapstarted)  # before the snapshot, say, a warm-up call
    assert FakeSsm.clients == 1
    again = stream_call(snapstarted)  # within the TTL: the cached ring, no read
    assert FakeSsm.clients == 1
    assert again["stream_state"] == first["stream_state"]
    restore()
    # the clock has not moved, yet the ring is due and comes through a new client
    second = stream_call(snapstarted, first["stream_state"])
    assert FakeSsm.clients == 2
    assert second["chunk"]["choices"][0]["finish_reason"] == "stop"  # old tokens still verify


def test_first_call_after_restore_counts_as_a_cold_start(
        snapstarted: LambdaHandler, capsys: pytest.CaptureFixture[str]) -> None:
    stream_call(snapstarted)
    stream_call(snapstarted)
    restore()
    stream_call(snapstarted)
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()
               if line.startswith("{")]
    assert [r["cold_start"] for r in records] == [True, False, True]


def test_no_hooks_where_the_runtime_library_is_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", None)  # import fails
    assert snapstart.on_restore(lambda: None) is False


def test_concurrent_first_calls_share_one_development_key(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without configured keys the first streaming calls, made at once from many threads (the
    sync client's concurrent choices), must all sign and verify with the same development key
    (making one takes a while here, so every thread finds none made yet)."""
    make = keys.key_ring

    def slow_key_ring(settings: Settings) -> KeyRing:
        time.sleep(0.02)
        return make(settings)

    monkeypatch.setattr(keys, "key_ring", slow_key_ring)
    provider = ConfiguredKeyRing(Settings.from_env({"DERENDER_MODELS_DIR": str(LAYER_MODELS)}))
    barrier = threading.Barrier(16)

    def first_call() -> KeyRing:
        barrier.wait()
        return provider()

    with ThreadPoolExecutor(16) as pool:
        rings = list(pool.map(lambda _: first_call(), range(16)))
    assert len({id(ring) for ring in rings}) == 1
