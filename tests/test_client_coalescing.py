"""Coalescing in the client helper, against a fake service that records every call's body.

The fake answers each engine chunk with ``{"ids": <its token ids>, "index": <its choice>}``
and a fresh ``stream_state`` per call (``s<call number>``), so the tests can read which chunks
went in which call, with which state, and in what order the OpenAI chunks came out. Calls can
be held open (``hold``) to put a call "in flight" while the engine stream goes on. Every wait
is bounded (``WAIT`` seconds), never a bare sleep that a slow machine could outrun.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from derender_client import astream_derender, stream_derender

WAIT = 10.0
"""Longest any test waits for an event that should come at once."""

JSON = dict[str, Any]


def chunk(seq: int, index: int | None = 0, finish: str | None = None) -> JSON:
    """Engine chunk number ``seq`` (its one token id), of choice ``index`` (None: no choice)."""
    if index is None:
        return {"request_id": "r", "choices": [], "usage": {"completion_tokens": seq}}
    return {"request_id": "r",
            "choices": [{"index": index, "token_ids": [seq], "finish_reason": finish}]}


def sent(body: JSON) -> list[JSON]:
    return body["generate_chunks"] if "generate_chunks" in body else [body["generate_chunk"]]


def seqs(body: JSON) -> list[int]:
    """The engine chunk numbers a call carried (a choice-less chunk: its usage count)."""
    return [c["choices"][0]["token_ids"][0] if c["choices"] else c["usage"]["completion_tokens"]
            for c in sent(body)]


def echo(engine_chunk: JSON) -> JSON:
    choices = engine_chunk["choices"]
    if not choices:
        return {"choices": [], "usage_of": engine_chunk["usage"]["completion_tokens"]}
    return {"choices": [{"index": choices[0]["index"], "ids": choices[0]["token_ids"]}]}


def out_seq(openai_chunk: JSON) -> int:
    if not openai_chunk["choices"]:
        return int(openai_chunk["usage_of"])
    return int(openai_chunk["choices"][0]["ids"][0])


def answer(body: JSON, number: int) -> httpx.Response:
    chunks = [echo(c) for c in sent(body)]
    data: JSON = ({"chunks": chunks} if "generate_chunks" in body else {"chunk": chunks[0]})
    data["stream_state"] = f"s{number}"
    return httpx.Response(200, json=data)


class AsyncFake:
    """The fake service for the async client; ``hold``: call numbers answered only once
    ``release(number)`` is called."""

    def __init__(self, hold: set[int] = frozenset()) -> None:  # type: ignore[assignment]
        self.calls: list[JSON] = []
        self.returned: list[int] = []
        self.hold = hold
        self.gates: dict[int, asyncio.Event] = {}
        self.changed = asyncio.Event()

    async def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        number = len(self.calls)
        self.calls.append(body)
        self.changed.set()
        if number in self.hold:
            await asyncio.wait_for(self.gate(number).wait(), WAIT)
        self.returned.append(number)
        return answer(body, number)

    def gate(self, number: int) -> asyncio.Event:
        return self.gates.setdefault(number, asyncio.Event())

    def release(self, number: int) -> None:
        self.gate(number).set()

    async def wait_calls(self, count: int) -> None:
        async def until() -> None:
            while len(self.calls) < count:
                self.changed.clear()
                await self.changed.wait()
        await asyncio.wait_for(until(), WAIT)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handler),
                                 base_url="http://fake")


def run(fake_factory: Any, source: Any, **options: Any) -> tuple[Any, list[JSON]]:
    """Run ``source(fake)`` (an async generator) through the async client; the fake and the
    OpenAI chunks."""

    async def go() -> tuple[Any, list[JSON]]:
        fake = fake_factory()
        async with fake.client() as http:
            out = [c async for c in astream_derender(source(fake), base_url="http://fake",
                                                     client=http, **options)]
        return fake, out

    return asyncio.run(asyncio.wait_for(go(), 3 * WAIT))


def test_chunks_arriving_during_a_call_go_in_the_next_call_as_one_batch() -> None:
    async def source(fake: AsyncFake) -> AsyncIterator[JSON]:
        yield chunk(0)
        await fake.wait_calls(1)  # call 0 is in flight (held)
        for seq in range(1, 6):
            yield chunk(seq)
        fake.release(0)

    fake, out = run(lambda: AsyncFake(hold={0}), source)
    assert [seqs(body) for body in fake.calls] == [[0], [1, 2, 3, 4, 5]]
    assert "generate_chunk" in fake.calls[0]
    assert "stream_state" not in fake.calls[0]
    assert fake.calls[1]["stream_state"] == "s0"
    assert [out_seq(c) for c in out] == [0, 1, 2, 3, 4, 5]


def test_max_batch_caps_a_call() -> None:
    async def source(fake: AsyncFake) -> AsyncIterator[JSON]:
        yield chunk(0)
        await fake.wait_calls(1)
        for seq in range(1, 10):
            yield chunk(seq)
        fake.release(0)

    fake, out = run(lambda: AsyncFake(hold={0}), source, max_batch=4)
    assert [seqs(body) for body in fake.calls] == [[0], [1, 2, 3, 4], [5, 6, 7, 8], [9]]
    assert [body.get("stream_state") for body in fake.calls] == [None, "s0", "s1", "s2"]
    assert [out_seq(c) for c in out] == list(range(10))


def test_chunks_already_there_go_together_at_once() -> None:
    """A plain list (everything available before the first call): batches of max_batch."""

    async def go() -> tuple[AsyncFake, list[JSON]]:
        fake = AsyncFake()
        async with fake.client() as http:
            out = [c async for c in astream_derender([chunk(s) for s in range(10)],
                                                     base_url="http://fake", client=http,
                                                     max_batch=4)]
        return fake, out

    fake, out = asyncio.run(go())
    assert [seqs(body) for body in fake.calls] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [out_seq(c) for c in out] == list(range(10))


def test_without_max_delay_nothing_waits_for_more() -> None:
    """Each chunk comes only after the previous call arrived: every call carries one chunk."""

    async def source(fake: AsyncFake) -> AsyncIterator[JSON]:
        for seq in range(4):
            yield chunk(seq)
            await fake.wait_calls(seq + 1)

    fake, out = run(AsyncFake, source)
    assert [seqs(body) for body in fake.calls] == [[0], [1], [2], [3]]
    assert [out_seq(c) for c in out] == [0, 1, 2, 3]


def test_max_delay_waits_a_little_for_more() -> None:
    async def source(fake: AsyncFake) -> AsyncIterator[JSON]:
        yield chunk(0)
        await asyncio.sleep(0.02)
        yield chunk(1)
        yield chunk(2)
        await fake.wait_calls(1)
        yield chunk(3)

    start = time.monotonic()
    fake, out = run(AsyncFake, source, max_delay_ms=400)
    assert [seqs(body) for body in fake.calls] == [[0, 1, 2], [3]]
    assert time.monotonic() - start >= 0.38  # the first call really waited
    assert [out_seq(c) for c in out] == [0, 1, 2, 3]


@pytest.mark.parametrize("stop", ["finish", "full batch", "choice-less chunk"])
def test_max_delay_ends_early_when_nothing_more_can_join(stop: str) -> None:
    """A finishing chunk, a full batch or a chunk without choices sends the call at once (the
    source waits for the call before going on: a wait of max_delay would time it out)."""

    async def source(fake: AsyncFake) -> AsyncIterator[JSON]:
        yield chunk(0)
        if stop == "finish":
            yield chunk(1, finish="stop")
        elif stop == "full batch":
            yield chunk(1)
        else:
            yield chunk(1, None)
        await fake.wait_calls(1)

    fake, out = run(AsyncFake, source, max_delay_ms=60_000,
                    max_batch=2 if stop == "full batch" else 64)
    assert [seqs(body) for body in fake.calls] == [[0, 1]]
    assert [out_seq(c) for c in out] == [0, 1]


def test_the_end_of_the_engine_stream_ends_the_wait() -> None:
    start = time.monotonic()
    fake, out = run(AsyncFake, lambda fake: _aiter([chunk(0), chunk(1)]), max_delay_ms=60_000)
    assert [seqs(body) for body in fake.calls] == [[0, 1]]
    assert [out_seq(c) for c in out] == [0, 1]
    assert time.monotonic() - start < WAIT


async def _aiter(items: list[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


def test_choices_proceed_concurrently_and_chunks_come_out_in_arrival_order() -> None:
    """Choice 0's first call is held; choice 1's calls go meanwhile and return first, yet the
    OpenAI chunks come out in the engine's order."""

    async def source(fake: AsyncFake) -> AsyncIterator[JSON]:
        yield chunk(0, 0)
        await fake.wait_calls(1)
        yield chunk(1, 1)
        await fake.wait_calls(2)  # choice 1's call arrived while choice 0's is in flight
        yield chunk(2, 0)
        yield chunk(3, 1)
        await fake.wait_calls(3)  # choice 1's second call (choice 0 still busy)
        yield chunk(4, 0, finish="stop")
        yield chunk(5, 1, finish="stop")
        fake.release(0)

    fake, out = run(lambda: AsyncFake(hold={0}), source)
    by_choice = {i: [(seqs(b), b.get("stream_state")) for b in fake.calls
                     if sent(b)[0]["choices"][0]["index"] == i] for i in (0, 1)}
    assert by_choice[1] == [([1], None), ([3], "s1"), ([5], "s2")]
    assert by_choice[0][0] == ([0], None)
    assert by_choice[0][1] == ([2, 4], "s0")  # queued behind the held call, then one batch
    assert fake.returned.index(1) < fake.returned.index(0)
    assert [out_seq(c) for c in out] == [0, 1, 2, 3, 4, 5]
    assert [c["choices"][0]["index"] for c in out] == [0, 1, 0, 1, 0, 1]


def test_a_chunk_is_yielded_once_its_call_returned_without_waiting_for_later_calls() -> None:
    async def go() -> None:
        fake = AsyncFake(hold={1})
        release_source = asyncio.Event()

        async def source() -> AsyncIterator[JSON]:
            yield chunk(0, 0)
            await fake.wait_calls(1)
            yield chunk(1, 1)
            await asyncio.wait_for(release_source.wait(), WAIT)

        async with fake.client() as http:
            stream = astream_derender(source(), base_url="http://fake", client=http)
            first = await asyncio.wait_for(anext(stream), WAIT)
            assert out_seq(first) == 0
            await fake.wait_calls(2)
            assert 1 not in fake.returned  # chunk 0 came out while call 1 is still in flight
            fake.release(1)
            release_source.set()
            rest = [c async for c in stream]
        assert [out_seq(c) for c in rest] == [1]

    asyncio.run(asyncio.wait_for(go(), 3 * WAIT))


@pytest.mark.parametrize("first_choice", [1, None])
def test_a_chunk_without_choices_goes_with_the_first_choice_and_its_state(
        first_choice: int | None) -> None:
    """The usage chunk continues the stream of the choice seen first (choice 0 when it comes
    before any choice), after that choice's earlier chunks, as one call per chunk would."""
    if first_choice is None:
        engine = [chunk(7, None), chunk(0, 0), chunk(1, 1)]
    else:
        engine = [chunk(0, 1), chunk(1, 0), chunk(7, None)]

    async def source(fake: AsyncFake) -> AsyncIterator[JSON]:
        for number, item in enumerate(engine):
            yield item
            await fake.wait_calls(number + 1)

    fake, out = run(AsyncFake, source)
    lane = 1 if first_choice == 1 else 0
    lane_calls = [n for n, b in enumerate(fake.calls)
                  if sent(b)[0]["choices"] and sent(b)[0]["choices"][0]["index"] == lane]
    usage_call = next(n for n, b in enumerate(fake.calls) if not sent(b)[0]["choices"])
    if first_choice is None:
        assert usage_call == 0 and "stream_state" not in fake.calls[0]
        assert fake.calls[lane_calls[0]]["stream_state"] == "s0"  # choice 0 continues it
    else:
        assert fake.calls[usage_call]["stream_state"] == f"s{lane_calls[-1]}"
    assert [out_seq(c) for c in out] == [seqs({"generate_chunk": c})[0] for c in engine]


def test_sse_lines_comments_and_done_are_read() -> None:
    lines = [": keep-alive\n", f"data: {json.dumps(chunk(0))}\n", "\n",
             f"data: {json.dumps(chunk(1, finish='length'))}\n", "data: [DONE]\n"]
    fake, out = run(AsyncFake, lambda fake: _aiter(lines))
    assert len(fake.calls) == 1
    assert [out_seq(c) for c in out] == [0, 1]


def test_a_refused_call_stops_the_stream_with_its_envelope() -> None:
    from derender_client import DerenderError

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if seqs(body)[0] == 2:
            return httpx.Response(400, json={"error": {"message": "no", "type": "BadRequestError",
                                                       "param": None, "code": 400}})
        return answer(body, 0)

    async def go() -> list[int]:
        got: list[int] = []
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler),
                                     base_url="http://fake") as http:
            with pytest.raises(DerenderError) as caught:
                async for c in astream_derender(_aiter([chunk(s) for s in range(5)]),
                                                base_url="http://fake", client=http,
                                                max_batch=1):
                    got.append(out_seq(c))
        assert caught.value.status == 400
        assert caught.value.error["message"] == "no"
        return got

    assert asyncio.run(go()) == [0, 1]


# ----------------------------------------------------------------------------- sync


class SyncFake:
    """The fake service for the sync client (a thread per call)."""

    def __init__(self, hold: set[int] = frozenset()) -> None:  # type: ignore[assignment]
        self.calls: list[JSON] = []
        self.hold = hold
        self.gates = {n: threading.Event() for n in hold}
        self.lock = threading.Condition()

    def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        with self.lock:
            number = len(self.calls)
            self.calls.append(body)
            self.lock.notify_all()
        if number in self.gates:
            assert self.gates[number].wait(WAIT)
        return answer(body, number)

    def wait_calls(self, count: int) -> None:
        with self.lock:
            assert self.lock.wait_for(lambda: len(self.calls) >= count, WAIT)

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self.handler), base_url="http://fake")


def test_sync_client_coalesces_the_same_way() -> None:
    fake = SyncFake(hold={0})

    def source() -> Iterator[JSON]:
        yield chunk(0, 0)
        fake.wait_calls(1)
        yield chunk(1, 1)
        fake.wait_calls(2)  # choice 1's call goes while choice 0's is held
        for seq in range(2, 6):
            yield chunk(seq, 0)
        fake.gates[0].set()

    with fake.client() as http:
        out = list(stream_derender(source(), base_url="http://fake", client=http))
    assert [(seqs(b), b.get("stream_state")) for b in fake.calls] == [
        ([0], None), ([1], None), ([2, 3, 4, 5], "s0")]
    assert [out_seq(c) for c in out] == [0, 1, 2, 3, 4, 5]


def test_sync_client_max_delay_and_max_batch() -> None:
    fake = SyncFake()
    with fake.client() as http:
        out = list(stream_derender([chunk(s) for s in range(7)], base_url="http://fake",
                                   client=http, max_batch=3, max_delay_ms=50))
    assert [seqs(b) for b in fake.calls] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [out_seq(c) for c in out] == list(range(7))


def test_sync_generator_closed_early_stops_cleanly() -> None:
    fake = SyncFake()
    with fake.client() as http:
        stream = stream_derender(iter([chunk(s) for s in range(50)]), base_url="http://fake",
                                 client=http, max_batch=1)
        assert out_seq(next(stream)) == 0
        stream.close()
    assert len(fake.calls) <= 50
    alive = [t.name for t in threading.enumerate() if t.name == "derender-client-loop"]
    assert not alive


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="max_batch"):
        list(stream_derender([], base_url="http://fake", max_batch=0))
    with pytest.raises(ValueError, match="max_batch"):
        list(stream_derender([], base_url="http://fake", max_batch=4097))
    with pytest.raises(ValueError, match="max_delay_ms"):
        list(stream_derender([], base_url="http://fake", max_delay_ms=-1))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_engine_stream_that_fails_ends_the_stream_with_its_error(mode: str) -> None:
    def engine() -> Iterator[JSON]:
        yield chunk(0)
        raise RuntimeError("engine went away")

    if mode == "sync":
        fake = SyncFake()
        with fake.client() as http, pytest.raises(RuntimeError, match="engine went away"):
            list(stream_derender(engine(), base_url="http://fake", client=http))
        return

    async def go() -> None:
        fake = AsyncFake()
        async with fake.client() as http:
            with pytest.raises(RuntimeError, match="engine went away"):
                async for _ in astream_derender(engine(), base_url="http://fake", client=http):
                    pass

    asyncio.run(asyncio.wait_for(go(), WAIT))
