"""Concurrency inside one process: the registry and tokenizers under threads.

What concurrency the server has. uvicorn runs the app in one process on one asyncio event
loop, and the derender routes are ``async def`` handlers that do all their work (JSON,
validation, ``ModelRegistry.get`` including a model's first load, decoding, signing) on that
loop without awaiting in between. So requests are concurrent only between handler runs: many
connections are open and their calls interleave (tests/test_load.py drives 32 clients
mixing streams and non-streaming calls, with the second and third models loaded lazily
while those clients wait), but no two handlers run at the same instant and a first load
simply holds the loop for its duration. Nothing in the served path is ever called from two
threads at once there.

What this file shows. The same core must also be right where it *is* called from several
threads: a thread-pool server or sync routes, an application embedding the core, or free-
threaded Python later. With 32 threads on shared objects:

- concurrent first requests for a model through ``ModelRegistry.get`` load it exactly once
  (``load_vocabulary`` counted), every thread gets the same ``ServedModel``, and the count
  would catch a race: the same harness without the registry's lock loads several times;
- concurrent derendering of the load generator's cases (chat, completions, chat/completions
  streams with state tokens, n > 1, stop strings, logprobs, parser streams) on one shared
  registry, fresh so the models' first loads and the vocabularies' lazily built tables
  (``Vocabulary._ids``, ``Vocabulary.marked_by``) are raced as well, answers exactly what the
  same cases answer run one after another, with the thread switch interval lowered to make
  the threads interleave inside the core's calls.
"""

from __future__ import annotations

import contextlib
import json
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import TypeAdapter

import derender.core.chat as chat_module
import derender.core.completions as completions_module
import derender.core.registry as registry_module
import derender.core.streaming as streaming_module
from derender.app.main import parse_body
from derender.contract.requests import (
    ChatBody,
    CompletionBody,
    DerenderChatStreamBatchRequest,
    DerenderCompletionStreamBatchRequest,
)
from derender.core.chat import derender_chat, derender_chat_stream
from derender.core.completions import derender_completion, derender_completion_stream
from derender.core.decoding.vocab import Vocabulary
from derender.core.errors import DerenderError
from derender.core.registry import ModelRegistry, ServedModel
from derender.core.state.stream import decode_state, encode_state
from derender.core.state.token import KeyRing, sign, verify
from derender.settings import Settings
from derender_testing.loadgen import (
    CHAT,
    COMPLETIONS,
    KINDS,
    PARSED,
    SIGNING_KEYS,
    Answer,
    Call,
    Case,
    Texts,
    drive,
    make_case,
    make_models_dir,
    server_env,
)
from derender_testing.models import tokenizer

THREADS = 32
CASES = 60
ROUNDS = 2
FIXED_NOW = 1_800_000_000
SERVED = ("qwen3", "mistral-7b", PARSED)

_BATCHES = (DerenderChatStreamBatchRequest, DerenderCompletionStreamBatchRequest)
_ROUTES: dict[str, tuple[TypeAdapter[Any], TypeAdapter[Any], Any, Any]] = {
    CHAT: (TypeAdapter(ChatBody), TypeAdapter(DerenderChatStreamBatchRequest), derender_chat,
           derender_chat_stream),
    COMPLETIONS: (TypeAdapter(CompletionBody), TypeAdapter(DerenderCompletionStreamBatchRequest),
                  derender_completion, derender_completion_stream),
}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The load test's models folder and configuration (three models, one with parsers)."""
    return Settings.from_env(server_env(make_models_dir(tmp_path_factory.mktemp("threads"))))


def new_registry(settings: Settings) -> ModelRegistry:
    return ModelRegistry(settings.models_dir, settings.default_model, settings.parsers)


def core_post(registry: ModelRegistry, ring: KeyRing, settings: Settings
              ) -> Callable[[Call], Answer]:
    """The HTTP handler's steps without HTTP: parse, model, derender, state token."""

    def post(call: Call) -> Answer:
        _, path, body = call
        adapter, batch, run, run_stream = _ROUTES[path]
        try:
            parsed = parse_body(json.dumps(body).encode(), adapter, batch)
            model = registry.get(parsed.model)
            if not parsed.stream:
                out = run(parsed, model, settings.max_n_sequences)
            else:
                state = (None if parsed.stream_state is None else
                         decode_state(verify(ring, parsed.stream_state,
                                             settings.max_state_chars)))
                chunks, after = run_stream(parsed, model, state, settings.state_ttl_seconds)
                token = sign(ring, encode_state(after))
                out = ({"chunks": chunks, "stream_state": token} if isinstance(parsed, _BATCHES)
                       else {"chunk": chunks[0], "stream_state": token})
        except DerenderError as exc:
            return exc.status, dict(exc.envelope())
        return 200, json.loads(json.dumps(out))  # the shapes a client sees (tuples → lists)

    return post


@contextlib.contextmanager
def counting_loads(delay: float = 0.0, load: Callable[[Path], Vocabulary] | None = None
                   ) -> Iterator[dict[str, int]]:
    """Count ``load_vocabulary`` calls per model folder (after ``delay`` seconds, then the
    real load or ``load``)."""
    counts: dict[str, int] = {}
    load = load or registry_module.load_vocabulary
    lock = threading.Lock()

    def counted(folder: Path) -> Vocabulary:
        with lock:
            counts[folder.name] = counts.get(folder.name, 0) + 1
        time.sleep(delay)
        return load(folder)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry_module, "load_vocabulary", counted)
        yield counts


@contextlib.contextmanager
def fast_thread_switches() -> Iterator[None]:
    """Switch threads every 10 µs instead of 5 ms, so they interleave inside core calls."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def first_gets(registry: ModelRegistry) -> list[ServedModel]:
    """32 threads released together, each asking for one of the served models."""
    barrier = threading.Barrier(THREADS)

    def get(number: int) -> ServedModel:
        barrier.wait()
        return registry.get(SERVED[number % len(SERVED)])

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(get, range(THREADS)))


def test_concurrent_first_requests_load_each_model_once(settings: Settings) -> None:
    registry = new_registry(settings)
    with counting_loads(delay=0.05) as counts, fast_thread_switches():
        models = first_gets(registry)
    assert counts == dict.fromkeys(SERVED, 1)
    for number, model in enumerate(models):
        assert model is registry.get(SERVED[number % len(SERVED)])
    assert {m.info.name for m in models} == set(SERVED)
    assert models[0].vocab is not models[2].vocab  # qwen3 and qwen3-parsed: two folders

    # The count would see a race: without the registry's lock, the threads that find the
    # model missing before the first load ends all load it (a stand-in vocabulary here).
    unlocked = new_registry(settings)
    unlocked._lock = contextlib.nullcontext()  # type: ignore[assignment]
    with counting_loads(delay=0.05, load=lambda folder: models[0].vocab) as racy:
        first_gets(unlocked)
    assert max(racy.values()) > 1, racy


def _cases(texts: Texts) -> list[Case]:
    kinds = list(KINDS)
    return [make_case(random.Random(number), texts, f"thread-{number}",
                      kinds[number % len(kinds)]) for number in range(CASES)]


def test_threads_derender_exactly_as_one_thread(settings: Settings) -> None:
    texts = Texts(tokenizer)
    cases = _cases(texts)
    ring = KeyRing.parse(SIGNING_KEYS)
    clock = SimpleNamespace(time=lambda: FIXED_NOW)  # ``created`` and state issue times
    with pytest.MonkeyPatch.context() as patch:
        for module in (streaming_module, chat_module, completions_module):
            patch.setattr(module, "time", clock)

        sequential = core_post(new_registry(settings), ring, settings)
        expected = [drive(case, sequential) for case in cases]
        assert sum(streams for streams, _ in expected) >= CASES // 2

        shared = new_registry(settings)
        post = core_post(shared, ring, settings)
        order = [number for number in range(CASES) for _ in range(ROUNDS)]
        random.Random(7).shuffle(order)
        with counting_loads() as counts, fast_thread_switches(), \
                ThreadPoolExecutor(THREADS) as pool:
            results = list(pool.map(lambda number: drive(cases[number], post), order))
    assert counts == dict.fromkeys(SERVED, 1)
    for number, result in zip(order, results, strict=True):
        assert result == expected[number], cases[number].describe()
