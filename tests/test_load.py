"""Load and soak: concurrent clients against one real server.

A uvicorn subprocess on a free port of 127.0.0.1 serves a temporary models folder: qwen3, the
test Mistral-7B and ``qwen3-parsed`` (Qwen3 with the qwen3/hermes parsers through
``DERENDER_PARSERS``). No model is loaded before the load starts: the registry loads each on
the first request naming it, while the 32 clients are already sending requests.

``DERENDER_LOAD_CLIENTS`` clients (default 32) each run random cases
(``derender_testing/loadgen.py``) for
``DERENDER_LOAD_SECONDS`` (default 30; set it higher for a soak): non-streaming chat and
completions, and chat / completions / parser streams of real text split into random chunks,
one ``generate_chunk`` per call or ``generate_chunks`` batches, some with stop strings,
logprobs, n > 1. Every stream is folded and compared with the non-streaming answer for the
same ids. Asserted: no error at all (no non-2xx, no exception, no timeout: 120 s per call), no
error in the server's log, every case kind exercised, and resident memory flat.

Memory criterion. The server's VmRSS is sampled every 0.25 s. The first third of the run is
the warm-up: the two lazy model loads (each briefly holding a parsed ``tokenizer.json``),
pymalloc arenas and malloc's heaps growing to what 32 requests in flight need. After it the
working set is bounded by the concurrency, not by the number of requests served, so RSS should
stop moving: the largest sample of the last third may exceed the first sample after the
warm-up by at most max(6 MiB, 3 %). Allocator noise is far below that: glibc returns freed
heap tops only past its trim threshold and pymalloc keeps partly used arenas, so RSS moves in
steps of at most an arena or a few hundred KiB of response buffers (observed: under 0.1 MiB).
A leak of a few hundred bytes per request would not hide in it: at ~1,000 requests per second,
the 20 s after the warm-up send ~20,000 requests, and 300 bytes each exceed 6 MiB.

No timing is asserted: the machine may be small and busy (the throughput is printed, and
measured properly by ``bench/load.py``).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import httpx
import pytest

from derender_testing.loadgen import (
    KINDS,
    RssSampler,
    Texts,
    rss_verdict,
    run_load,
    served,
)
from derender_testing.models import tokenizer
from derender_testing.servers import LocalServer

pytestmark = pytest.mark.serial  # timing: run alone, after the parallel phase (`make test`)

DURATION = float(os.environ.get("DERENDER_LOAD_SECONDS") or 30)
CLIENTS = int(os.environ.get("DERENDER_LOAD_CLIENTS") or 32)
SEED = int(os.environ.get("DERENDER_LOAD_SEED") or random.randrange(1 << 30))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    yield from served(tmp_path_factory.mktemp("load"))


def test_concurrent_clients_get_no_errors_equal_streams_and_flat_memory(
        server: LocalServer) -> None:
    texts = Texts(tokenizer)
    with RssSampler(server.pid) as sampler:
        report = run_load(server.url, CLIENTS, DURATION, texts, seed=SEED)
    summary = (f"seed {SEED}: {CLIENTS} clients, {report.elapsed:.1f} s, {report.requests} "
               f"requests ({report.requests / report.elapsed:.0f}/s), {report.chunks} chunks "
               f"({report.chunks / report.elapsed:.0f}/s), {report.streams_checked} streams "
               f"checked, cases {report.cases}")
    print(summary)
    assert not report.errors, (f"{len(report.errors)} errors ({summary}):\n"
                               + "\n".join(report.errors[:20]))
    assert set(report.cases) == set(KINDS), summary
    assert report.streams_checked > 0
    assert report.chunks > 0

    log = server.log()
    for marker in ("Traceback", "ERROR", "derender failed"):
        assert marker not in log, log[-3000:]
    assert httpx.get(server.url + "/health", timeout=30).status_code == 200

    verdict = rss_verdict(sampler.samples, DURATION)
    print(verdict.describe())
    assert verdict.flat, f"resident memory grew: {verdict.describe()} ({summary})"


def test_rss_verdict_flags_growth_after_the_warm_up() -> None:
    """The criterion itself: steps during the warm-up are fine, growth after it is not."""
    warm = [(t / 4, 60_000 + (40_000 if t > 8 else 0)) for t in range(40)]  # a load at 2 s
    flat = [*warm, *((10 + t / 4, 100_000 + (t % 3) * 100) for t in range(80))]
    assert rss_verdict(flat, 30).flat
    leak = [*warm, *((10 + t / 4, 100_000 + t * 100) for t in range(80))]  # 0.4 MiB/s
    verdict = rss_verdict(leak, 30)
    assert not verdict.flat
    assert verdict.growth_kib == 7900

