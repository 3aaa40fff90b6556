"""Fault tests: streams through the client helper and a fault-injecting
proxy (``derender_testing/faultproxy.py``) in front of the real local server equal the non-streaming
answer of the same ids: nothing lost, nothing duplicated, nothing out of order.

The server is the app under uvicorn as ``tests/test_load.py`` starts it
(``derender_testing/loadgen.py``:
qwen3, and ``qwen3-parsed`` with the qwen3 reasoning and hermes tool parsers). Each case is
real text of the corpus encoded by Qwen3's tokenizer, of one kind: plain, logprobs, stop
strings, reasoning and a tool call, ``n > 1`` (its choices' chunks interleaved, and a
usage-only last chunk); on both routes (the parser case: chat). Its engine chunks, of random
sizes, come paced from a sync or an async source; the client (sync or async, with or without
``max_delay_ms``) coalesces and retries them through the proxy, which refuses connections,
resets them after the server answered, holds answers past the client's timeout, answers 429
and 503 (with and without Retry-After) and trickles answers.

Two independent oracles, both asked of the server directly (no proxy, no client):

- the non-streaming answer for all the ids: each choice's fold of the stream (content,
  reasoning, tool calls, logprobs, text, the one finish_reason and stop_reason; loadgen's
  ``Fold``) must equal it;
- the same engine chunks sent one call per chunk in order: the client's chunks must equal
  that sequence exactly (but ``created``, the second the stream started), which pins order,
  loss and duplication chunk by chunk, the usage chunk included.

Seeds are fixed per test (``DERENDER_FAULT_SEED`` shifts them all). Runtime is dominated by the
held answers (each costs the client's timeout).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from derender_client import RetryPolicy, astream_derender, stream_derender
from derender_testing.faultproxy import FAULTS, FaultPlan, FaultProxy
from derender_testing.loadgen import (
    PATHS,
    Case,
    Choice,
    Fold,
    Texts,
    _embedded,
    _engine_choice,
    _expected,
    _logprob_entries,
    _parser_case,
    _spans,
    _stop_strings,
    oracle_body,
    served,
)
from derender_testing.models import tokenizer
from derender_testing.servers import LocalServer

JSON = dict[str, Any]
SEED = int(os.environ.get("DERENDER_FAULT_SEED") or 0)
TIMEOUT = 0.5
"""The client's timeout per attempt (a held answer waits PLAN.delay, longer). A slow machine
may time out a real call too: it is retried like the injected ones."""
PLAN = FaultPlan(delay=0.7)
POLICY: JSON = {"attempts": 12, "backoff_base": 0.01, "backoff_cap": 0.1, "deadline": 60.0,
                "retry_after_cap": 0.05}
"""Retry-After "1" is capped to 0.05 s, to keep the tests short."""
KINDS = ["plain", "logprobs", "stops", "parser", "n>1"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    yield from served(tmp_path_factory.mktemp("faults"))


@pytest.fixture(scope="module")
def texts() -> Texts:
    return Texts(tokenizer)


# ----------------------------------------------------------------------------- cases


def make(kind: str, route: str, rng: random.Random, texts: Texts, request_id: str) -> Case:
    """A case of ``kind`` on ``route`` from real text."""
    if kind == "parser":
        for _ in range(100):  # a case with a tool call (loadgen draws one 60 % of the time)
            case = _parser_case(rng, texts, request_id)
            if texts.markers[2] in case.choices[0].ids:
                return case
        raise AssertionError("no tool-call case in 100 draws")
    model = "qwen3"
    n = 3 if kind == "n>1" else 1
    fields: JSON = {}
    if kind == "logprobs":
        fields = ({"logprobs": True, "top_logprobs": 2} if route == "chat" else {"logprobs": 2})
    choices = []
    for _ in range(n):
        ids = texts.slice(rng, model, rng.randint(30, 80))
        finish = "stop" if kind == "stops" else "length"
        if rng.random() < 0.5:
            ids, finish = [*ids, texts.eos[model]], "stop"
        logprobs = (_logprob_entries(rng, texts.corpus[model], ids) if kind == "logprobs"
                    else None)
        choices.append(Choice(ids, finish, logprobs))
    if kind == "stops":
        fields["stop"] = _stop_strings(rng, texts.decode(model, choices[0].ids))
        fields["include_stop_str_in_output"] = rng.random() < 0.5
    return Case(f"{route} stream", route, model, request_id, choices, texts.prompts[model],
                fields)


def spans(rng: random.Random, count: int) -> list[tuple[int, int]]:
    """loadgen's random chunk sizes, drawn again (a few times at most) until there are at
    least 20 chunks: enough calls for faults to hit."""
    for _ in range(50):
        drawn = _spans(rng, count)
        if len(drawn) >= min(20, count):
            return drawn
    return [(k, k + 1) for k in range(count)]


def engine_chunks(case: Case, rng: random.Random) -> list[JSON]:
    """The engine's chunks: per choice random sizes, choices interleaved in random order
    (each in order); with n > 1 a usage-only last chunk, as vLLM sends it."""
    pending = [[(i, span) for span in spans(rng, len(c.ids))] for i, c in enumerate(case.choices)]
    order = [i for i, spans in enumerate(pending) for _ in spans]
    rng.shuffle(order)
    chunks = []
    for index in order:
        _, (start, end) = pending[index].pop(0)
        choice = case.choices[index]
        chunks.append({"request_id": case.request_id, "choices": [
            _engine_choice(choice, index, start, end, end == len(choice.ids))]})
    if len(case.choices) > 1:
        total = sum(len(c.ids) for c in case.choices)
        chunks.append({"request_id": case.request_id, "choices": [],
                       "usage": {"prompt_tokens": len(case.prompt or []),
                                 "completion_tokens": total}})
    return chunks


def session_fields(case: Case) -> JSON:
    embedded = _embedded(case)
    return {"route": case.route, "model": case.model, "prompt_token_ids": case.prompt,
            "chat_request": embedded.get("chat_request"),
            "completion_request": embedded.get("completion_request")}


def oracles(server: LocalServer, case: Case, chunks: list[JSON]) -> tuple[list[JSON], list[JSON]]:
    """The server's non-streaming answer (per choice, as a fold must equal it) and its chunks
    for one call per engine chunk."""
    with httpx.Client(base_url=server.url, timeout=60) as http:
        answer = http.post(PATHS[case.route], json=oracle_body(case))
        assert answer.status_code == 200, answer.text
        expected = [_expected(case.route, c) for c in answer.json()["choices"]]
        states: dict[int, str] = {}
        first: int | None = None
        sequence = []
        for chunk in chunks:
            index = chunk["choices"][0]["index"] if chunk["choices"] else first
            first = index if first is None else first
            body = {"stream": True, **session_fields(case), "generate_chunk": chunk}
            body.pop("route")
            if index in states:
                body["stream_state"] = states[index]
            reply = http.post(PATHS[case.route], json=body)
            assert reply.status_code == 200, reply.text
            states[index] = reply.json()["stream_state"]
            sequence.append(reply.json()["chunk"])
    return expected, sequence


def without_created(chunks: list[JSON]) -> list[JSON]:
    return [{k: v for k, v in c.items() if k != "created"} for c in chunks]


def check(case: Case, got: list[JSON], expected: list[JSON], sequence: list[JSON]) -> None:
    assert without_created(got) == without_created(sequence), "not the chunks of one call each"
    check_folds(case, got, expected)


def check_folds(case: Case, got: list[JSON], expected: list[JSON]) -> None:
    folds = [Fold(case.route, i) for i in range(len(case.choices))]
    for chunk in got:
        if chunk["choices"]:
            folds[chunk["choices"][0]["index"]].add(chunk)
        else:
            assert chunk is got[-1] and chunk["usage"] is not None
    for fold, want in zip(folds, expected, strict=True):
        result = fold.result()
        assert result == want, {k: (result[k], want[k]) for k in want if result[k] != want[k]}


# ----------------------------------------------------------------------------- streaming


def paced_sync(chunks: list[JSON], rng: random.Random) -> Iterator[str]:
    """The engine's SSE lines, a chunk every 0-3 ms."""
    pauses = [rng.choice([0.0, 0.0, 0.001, 0.003]) for _ in chunks]
    for chunk, pause in zip(chunks, pauses, strict=True):
        time.sleep(pause)
        yield f"data: {json.dumps(chunk)}\n\n"
    yield "data: [DONE]\n\n"


async def paced_async(chunks: list[JSON], rng: random.Random) -> AsyncIterator[JSON]:
    pauses = [rng.choice([0.0, 0.0, 0.001, 0.003]) for _ in chunks]
    for chunk, pause in zip(chunks, pauses, strict=True):
        await asyncio.sleep(pause)
        yield chunk


def stream_through(proxy: FaultProxy, case: Case, chunks: list[JSON], mode: str,
                   max_delay_ms: float | None, seed: int, max_batch: int = 64) -> list[JSON]:
    rng = random.Random(seed)
    options: Any = {"base_url": proxy.url, "timeout": TIMEOUT, "max_batch": max_batch,
                    "max_delay_ms": max_delay_ms, **session_fields(case),
                    "retry": RetryPolicy(**POLICY, rng=random.Random(seed))}
    if mode == "sync":
        return list(stream_derender(paced_sync(chunks, rng), **options))

    async def go() -> list[JSON]:
        return [c async for c in astream_derender(paced_async(chunks, rng), **options)]
    return asyncio.run(asyncio.wait_for(go(), 120))


CASES = [(kind, route) for kind in KINDS for route in ("chat", "completions")
         if not (kind == "parser" and route == "completions")]


@pytest.mark.parametrize(("kind", "route"), CASES)
def test_streams_through_faults_equal_the_non_streaming_answer(
        server: LocalServer, texts: Texts, kind: str, route: str) -> None:
    base = SEED * 1000 + CASES.index((kind, route)) * 10
    case = make(kind, route, random.Random(base), texts, f"fault-{base}")
    chunks = engine_chunks(case, random.Random(base + 1))
    expected, sequence = oracles(server, case, chunks)
    if kind == "parser":
        assert any(want["tool_calls"] for want in expected), "the case has no tool call"
    faults = 0
    for variant, (mode, delay, batch) in enumerate([("sync", None, 3), ("async", None, 1),
                                                    ("sync", 5.0, 8), ("async", 5.0, 4)]):
        seed = base + 2 + variant
        with FaultProxy(server.url, seed, PLAN) as proxy:
            got = stream_through(proxy, case, chunks, mode, delay, seed, batch)
        context = (f"seed {seed}, {mode}, max_delay_ms={delay}, max_batch={batch}, "
                   f"faults {dict(proxy.counts)}")
        print(context)
        assert not proxy.errors, context
        check(case, got, expected, sequence)
        faults += proxy.faults
    assert faults > 0
    assert "Traceback" not in server.log()


def test_every_fault_kind_is_met_and_survived(server: LocalServer, texts: Texts) -> None:
    """One call per chunk (max_batch=1) for long enough that every deck goes round: each
    kind of fault is dealt at least once, and the stream still equals both oracles."""
    rng = random.Random(SEED * 1000 + 999)
    case = make("plain", "chat", rng, texts, "fault-every")
    case.choices = [Choice(texts.slice(rng, "qwen3", 120), "length")]
    chunks = [{"request_id": case.request_id, "choices": [
        _engine_choice(case.choices[0], 0, k, k + 1, k + 1 == 120)]} for k in range(120)]
    expected, sequence = oracles(server, case, chunks)
    plan = FaultPlan(requests={**PLAN.requests, "ok": 8}, delay=PLAN.delay)
    with FaultProxy(server.url, SEED + 7, plan) as proxy:
        got = stream_through(proxy, case, chunks, "async", None, SEED + 7, max_batch=1)
    assert not proxy.errors
    assert {kind for kind in FAULTS if proxy.counts[kind] == 0} == set(), dict(proxy.counts)
    check(case, got, expected, sequence)


def test_the_proxy_really_breaks_an_unretried_client(server: LocalServer, texts: Texts) -> None:
    """The control: without retries the same stream through the proxy fails."""
    from derender_client import DerenderError

    rng = random.Random(SEED * 1000 + 555)
    case = make("plain", "completions", rng, texts, "fault-control")
    chunks = engine_chunks(case, rng)
    plan = FaultPlan(requests={"503": 1, "ok": 1}, connections={"ok": 1})
    with FaultProxy(server.url, SEED, plan) as proxy, pytest.raises(DerenderError):
        list(stream_derender(chunks, base_url=proxy.url, timeout=TIMEOUT, max_batch=1,
                             retry=RetryPolicy(attempts=1), **session_fields(case)))


@pytest.mark.parametrize("route", ["chat", "completions"])
def test_the_fold_alone_catches_a_lost_repeated_or_swapped_chunk(
        server: LocalServer, texts: Texts, route: str) -> None:
    """The first oracle by itself: one call per chunk folds to the non-streaming answer, and
    losing, repeating or swapping one chunk with text breaks that."""
    rng = random.Random(SEED * 1000 + 777)
    case = make("plain", route, rng, texts, "fault-check")
    chunks = engine_chunks(case, rng)
    expected, sequence = oracles(server, case, chunks)
    check_folds(case, sequence, expected)
    texts_of = [_text(route, c) for c in sequence]
    at = next(k for k in range(1, len(sequence) - 1)
              if texts_of[k] and texts_of[k + 1] and texts_of[k] != texts_of[k + 1])
    lost = sequence[:at] + sequence[at + 1:]
    repeated = sequence[:at + 1] + sequence[at:]
    swapped = [*sequence[:at], sequence[at + 1], sequence[at], *sequence[at + 2:]]
    for broken in (lost, repeated, swapped):
        with pytest.raises(AssertionError):
            check_folds(case, broken, expected)


def _text(route: str, chunk: JSON) -> str:
    choice = chunk["choices"][0]
    return str(choice["delta"]["content"] or "") if route == "chat" else str(choice["text"])
