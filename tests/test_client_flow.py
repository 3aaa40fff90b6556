"""Backpressure and interruption in the client helper (issue 24).

- **Backpressure.** An engine that has 20,000 chunks ready at once, a consumer that takes one
  chunk per 100 ms: what the client pulls from the engine stays within ``max_ahead`` of what
  the consumer took (counted at the engine: every ``next()`` it answered), sync and async.
- **Interruption.** An engine that blocks forever after its third chunk: closing the stream
  (from the consumer's thread, or from another thread while the consumer is blocked waiting)
  or the stream's ``deadline`` ends it at once; ``interrupt`` is called and the engine's
  thread ends; without ``interrupt`` the blocked read holds only a daemon thread and the
  process still exits.

The fake service answers every engine chunk (see ``test_client_coalescing``). Every wait is
bounded; no assertion depends on the machine being fast except "promptly" (under ``PROMPT``
seconds, far above what the steps take).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from derender_client import MAX_AHEAD, StreamDeadlineError, astream_derender, stream_derender
from tests.test_client_coalescing import WAIT, AsyncFake, SyncFake, chunk, out_seq

ROOT = Path(__file__).resolve().parents[1]
PROMPT = 2.0
"""Seconds within which closing or a passed deadline must have ended the stream."""
ENGINE_CHUNKS = 20_000
TAKEN = 12
"""Chunks the slow consumer takes (one per 100 ms) before it stops."""

JSON = dict[str, Any]


class Counting:
    """An engine with ``ENGINE_CHUNKS`` chunks ready at once, counting what was pulled."""

    def __init__(self) -> None:
        self.pulled = 0

    def __iter__(self) -> Iterator[JSON]:
        for seq in range(ENGINE_CHUNKS):
            self.pulled += 1
            yield chunk(seq, 0, "length" if seq == ENGINE_CHUNKS - 1 else None)

    async def aiter(self) -> AsyncIterator[JSON]:
        for item in self:
            yield item


@pytest.mark.parametrize("max_ahead", [None, 8])
def test_sync_reads_the_engine_no_further_ahead_than_max_ahead(max_ahead: int | None) -> None:
    bound = MAX_AHEAD if max_ahead is None else max_ahead
    options = {} if max_ahead is None else {"max_ahead": max_ahead}
    engine = Counting()
    fake = SyncFake()
    ahead: list[int] = []
    with fake.client() as http:
        stream = stream_derender(iter(engine), base_url="http://fake", client=http, **options)
        for taken in range(1, TAKEN + 1):
            assert out_seq(next(stream)) == taken - 1
            time.sleep(0.1)  # the slow consumer
            ahead.append(engine.pulled - taken)
        stream.close()
    assert max(ahead) <= bound
    assert engine.pulled <= TAKEN + bound
    assert engine.pulled > TAKEN  # it does read ahead, up to the bound
    assert sum(len(b.get("generate_chunks", [None])) for b in fake.calls) <= TAKEN + bound


@pytest.mark.parametrize("max_ahead", [None, 8])
def test_async_reads_the_engine_no_further_ahead_than_max_ahead(max_ahead: int | None) -> None:
    bound = MAX_AHEAD if max_ahead is None else max_ahead
    options = {} if max_ahead is None else {"max_ahead": max_ahead}
    engine = Counting()

    async def go() -> list[int]:
        fake = AsyncFake()
        ahead: list[int] = []
        async with fake.client() as http:
            stream = astream_derender(engine.aiter(), base_url="http://fake", client=http,
                                      **options)
            taken = 0
            async for out in stream:
                assert out_seq(out) == taken
                taken += 1
                await asyncio.sleep(0.1)
                ahead.append(engine.pulled - taken)
                if taken == TAKEN:
                    break
            await stream.aclose()
        return ahead

    ahead = asyncio.run(asyncio.wait_for(go(), 3 * WAIT))
    assert max(ahead) <= bound
    assert TAKEN < engine.pulled <= TAKEN + bound


def test_a_plain_iterable_in_the_async_client_is_bounded_too() -> None:
    engine = Counting()

    async def go() -> None:
        fake = AsyncFake()
        async with fake.client() as http:
            stream = astream_derender(iter(engine), base_url="http://fake", client=http,
                                      max_ahead=5)
            assert out_seq(await anext(stream)) == 0
            await asyncio.sleep(0.2)
            assert engine.pulled <= 1 + 5
            await stream.aclose()

    asyncio.run(asyncio.wait_for(go(), WAIT))


def test_max_ahead_and_deadline_are_checked() -> None:
    with pytest.raises(ValueError, match="max_ahead"):
        stream_derender([], base_url="http://fake", max_ahead=0)
    with pytest.raises(ValueError, match="deadline"):
        stream_derender([], base_url="http://fake", deadline=0)


# ----------------------------------------------------------------------------- interruption


class Stuck:
    """An engine that gives three chunks and then blocks forever in ``next()`` (until
    ``interrupt`` releases it, when that is wired)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.blocked = threading.Event()
        self.returned = threading.Event()
        self.interrupts = 0

    def interrupt(self) -> None:
        self.interrupts += 1
        self.release.set()

    def __iter__(self) -> Iterator[JSON]:
        for seq in range(3):
            yield chunk(seq)
        self.blocked.set()
        self.release.wait()  # forever, unless interrupted
        self.returned.set()
        raise ConnectionError("engine response closed")


def engine_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "derender-client-engine"]


def test_closing_ends_a_stream_blocked_on_the_engine_and_releases_its_thread() -> None:
    before = len(engine_threads())
    engine = Stuck()
    fake = SyncFake()
    with fake.client() as http:
        stream = stream_derender(iter(engine), base_url="http://fake", client=http,
                                 interrupt=engine.interrupt)
        assert [out_seq(next(stream)) for _ in range(3)] == [0, 1, 2]
        assert engine.blocked.wait(WAIT)
        started = time.monotonic()
        stream.close()
        assert time.monotonic() - started < PROMPT
    assert engine.interrupts == 1 and engine.returned.wait(WAIT)
    deadline = time.monotonic() + WAIT
    while len(engine_threads()) > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(engine_threads()) == before
    assert not [t for t in threading.enumerate() if t.name == "derender-client-loop"]
    assert list(stream) == []  # closed: nothing more, no error


def test_closing_from_another_thread_wakes_a_consumer_blocked_waiting() -> None:
    engine = Stuck()
    fake = SyncFake()
    got: list[int] = []
    ended = threading.Event()
    with fake.client() as http:
        stream = stream_derender(iter(engine), base_url="http://fake", client=http,
                                 interrupt=engine.interrupt)

        def consume() -> None:
            got.extend(out_seq(c) for c in stream)  # blocks after the third chunk
            ended.set()

        consumer = threading.Thread(target=consume, daemon=True)
        consumer.start()
        assert engine.blocked.wait(WAIT)
        time.sleep(0.1)  # the consumer is now waiting for a fourth chunk
        assert not ended.is_set()
        started = time.monotonic()
        stream.close()
        assert ended.wait(PROMPT), "the blocked consumer was not woken"
        assert time.monotonic() - started < PROMPT
    assert got == [0, 1, 2]
    assert engine.interrupts == 1 and engine.returned.wait(WAIT)


def test_a_deadline_ends_a_stream_blocked_on_the_engine() -> None:
    engine = Stuck()
    fake = SyncFake()
    got: list[int] = []
    with fake.client() as http:
        started = time.monotonic()
        with pytest.raises(StreamDeadlineError, match=r"deadline of 0\.5 s"):
            got.extend(out_seq(c) for c in stream_derender(
                iter(engine), base_url="http://fake", client=http, deadline=0.5,
                interrupt=engine.interrupt))
        elapsed = time.monotonic() - started
    assert got == [0, 1, 2]
    assert 0.5 <= elapsed < 0.5 + PROMPT
    assert engine.interrupts == 1 and engine.returned.wait(WAIT)


def test_async_deadline_and_close_end_a_blocked_async_engine() -> None:
    interrupts: list[str] = []

    async def engine() -> AsyncIterator[JSON]:
        for seq in range(3):
            yield chunk(seq)
        await asyncio.Event().wait()  # forever

    async def go() -> None:
        fake = AsyncFake()
        async with fake.client() as http:
            got = []
            started = asyncio.get_running_loop().time()
            with pytest.raises(StreamDeadlineError):
                async for out in astream_derender(engine(), base_url="http://fake",
                                                  client=http, deadline=0.5,
                                                  interrupt=lambda: interrupts.append("d")):
                    got.append(out_seq(out))
            assert got == [0, 1, 2]
            assert asyncio.get_running_loop().time() - started < 0.5 + PROMPT
            stream = astream_derender(engine(), base_url="http://fake", client=http,
                                      interrupt=lambda: interrupts.append("c"))
            assert [out_seq(await anext(stream)) for _ in range(3)] == [0, 1, 2]
            waiting = asyncio.ensure_future(anext(stream))
            await asyncio.sleep(0.1)
            waiting.cancel()
            await asyncio.gather(waiting, return_exceptions=True)
            await stream.aclose()

    asyncio.run(asyncio.wait_for(go(), WAIT))
    assert interrupts == ["d", "c"]


def test_an_engine_that_ended_is_not_interrupted() -> None:
    calls: list[int] = []
    fake = SyncFake()
    with fake.client() as http:
        out = list(stream_derender([chunk(0), chunk(1, finish="stop")], base_url="http://fake",
                                   client=http, interrupt=lambda: calls.append(1)))
    assert [out_seq(c) for c in out] == [0, 1]
    assert calls == []


def test_a_read_that_never_returns_does_not_hold_the_process() -> None:
    """No ``interrupt``: the engine's thread stays blocked, but it is a daemon thread, so a
    program that closed its stream exits (checked in a child process, bounded)."""
    program = f"""
import sys, threading, time, httpx
sys.path[:0] = [{str(ROOT / 'src')!r}, {str(ROOT / 'client')!r}, {str(ROOT)!r}]
from derender_client import stream_derender
from tests.test_client_coalescing import SyncFake, chunk

def engine():
    yield chunk(0)
    threading.Event().wait()  # forever, and nothing can interrupt it

fake = SyncFake()
with fake.client() as http:
    stream = stream_derender(engine(), base_url="http://fake", client=http)
    next(stream)
    time.sleep(0.1)
    started = time.monotonic()
    stream.close()
    print("closed in", round(time.monotonic() - started, 3))
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("closed in")
    assert float(done.stdout.split()[-1]) < PROMPT
