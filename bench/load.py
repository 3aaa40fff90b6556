"""Load: many concurrent clients against one server; throughput, latency per kind, memory.

The load generator of ``tests/test_load.py`` (``derender_testing/loadgen.py``), run for longer
and with its figures printed. A uvicorn server (this interpreter, uvloop + httptools when installed)
is started on a free port of 127.0.0.1 with a temporary models folder: qwen3, the test
Mistral-7B and ``qwen3-parsed`` (Qwen3 with the qwen3 reasoning and hermes tool parsers),
the last two loaded lazily by the first requests that name them, under load.

``--clients`` asyncio clients (one keep-alive connection each, in this process) run random
cases until ``--duration`` seconds have passed: non-streaming chat and completions, and chat /
completions / parser streams of corpus text cut into random chunks, sent one
``generate_chunk`` per call or in ``generate_chunks`` batches (stop strings, logprobs, n > 1
in some). Every stream is folded and checked against the non-streaming answer for the same
ids (that answer is one of the non-streaming calls counted). The server's RSS is sampled
every 0.25 s.

    python bench/load.py                           # 32 clients for 60 s
    python bench/load.py --clients 64 --duration 300

Exits 1 if any call failed or a stream differed, or if resident memory was not flat (the
criterion of tests/test_load.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from _common import load_line, machine_line, median, percentile, revision
from http_latency import server_stack

from derender_testing.loadgen import (
    KINDS,
    LoadReport,
    RssSampler,
    RssVerdict,
    Texts,
    cpu_seconds,
    load_tokenizer,
    make_models_dir,
    rss_verdict,
    run_load,
    start_server,
)

LABELS = ("chat", "completions", "chat chunk", "chat batch", "completions chunk",
          "completions batch", "chat (parser) chunk", "chat (parser) batch")
"""Latency rows in print order (non-streaming calls first; a batch is one generate_chunks
call)."""


def _row(name: str, values: list[float], share: float) -> str:
    values.sort()
    return (f"| {name} | {len(values)} | {share:.0%} | {median(values) * 1e3:.2f} "
            f"| {percentile(values, 0.90) * 1e3:.2f} | {percentile(values, 0.99) * 1e3:.2f} "
            f"| {values[-1] * 1e3:.1f} |")


def latency_table(report: LoadReport, after: float) -> list[str]:
    """Latency per kind of the calls started ``after`` seconds into the run or later."""
    lines = ["| request kind | calls | share | p50 ms | p90 ms | p99 ms | max ms |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    labels = [*LABELS, *sorted(set(report.latencies) - set(LABELS))]
    kept = {label: [s for t, s in report.latencies.get(label, []) if t >= after]
            for label in labels}
    total = sum(len(v) for v in kept.values())
    for label in labels:
        if kept[label]:
            lines.append(_row(label, kept[label], len(kept[label]) / total))
    lines.append(_row("all", [v for values in kept.values() for v in values], 1.0))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients")
    parser.add_argument("--duration", type=float, default=60.0,
                        help="seconds during which clients start new cases")
    parser.add_argument("--seed", type=int, default=0, help="seed of the clients' cases")
    parser.add_argument("--warmup", type=float, default=5.0,
                        help="seconds at the start left out of the latency table (the lazy "
                             "model loads); default %(default)s")
    args = parser.parse_args(argv)

    texts = Texts(load_tokenizer)
    load_before = load_line()
    with tempfile.TemporaryDirectory(prefix="derender-load-") as tmp:
        root = Path(tmp)
        server = start_server(make_models_dir(root), root / "server.log")
        try:
            server_cpu = cpu_seconds(server.pid)
            client_cpu = time.process_time()
            with RssSampler(server.pid) as sampler:
                report = run_load(server.url, args.clients, args.duration, texts, args.seed)
            server_cpu = cpu_seconds(server.pid) - server_cpu
            client_cpu = time.process_time() - client_cpu
            log = server.log()
        finally:
            server.stop()
    verdict: RssVerdict = rss_verdict(sampler.samples, args.duration)
    elapsed = report.elapsed

    print(f"machine: {machine_line()}; derender {revision()}")
    print(f"before: {load_before}; after: {load_line()}")
    print()
    print(f"{args.clients} clients for {args.duration:g} s (seed {args.seed}) against one "
          f"uvicorn server ({server_stack(sys.executable)}) on 127.0.0.1; the last cases ended "
          f"{elapsed - args.duration:.1f} s after that, {elapsed:.1f} s in all.")
    print()
    print("| | count | per second |")
    print("|---|---:|---:|")
    print(f"| requests (HTTP calls) | {report.requests} | {report.requests / elapsed:.0f} |")
    print(f"| chunks answered (OpenAI chunks of the stream calls) | {report.chunks} "
          f"| {report.chunks / elapsed:.0f} |")
    print(f"| streams checked against the non-streaming answer | {report.streams_checked} "
          f"| {report.streams_checked / elapsed:.1f} |")
    cases = sum(report.cases.values())
    print(f"| cases ({', '.join(f'{k} {report.cases.get(k, 0)}' for k in KINDS)}) | {cases} "
          f"| {cases / elapsed:.1f} |")
    print(f"| errors (non-2xx, exceptions, timeouts, stream mismatches) "
          f"| {len(report.errors)} | |")
    print()
    print(f"Latency of the calls started after the first {args.warmup:g} s (each call timed "
          "from sending its body to reading the whole answer):")
    print()
    print("\n".join(latency_table(report, args.warmup)))
    first = sorted(s for values in report.latencies.values() for t, s in values
                   if t < args.warmup)
    if first:
        print()
        print(f"The first {args.warmup:g} s (three models loaded on first use): "
              f"{len(first)} calls, p50 {median(first) * 1e3:.2f} ms, p99 "
              f"{percentile(first, 0.99) * 1e3:.2f} ms, max {first[-1] * 1e3:.1f} ms.")
    print()
    print(f"CPU: server {server_cpu:.1f} s ({server_cpu / elapsed:.0%} of one core, "
          f"{server_cpu / report.requests * 1e3:.3f} ms per request); load generator "
          f"{client_cpu:.1f} s ({client_cpu / elapsed:.0%} of one core, "
          f"{client_cpu / report.requests * 1e3:.3f} ms per request).")
    print(f"Memory: {verdict.describe()}: {'flat' if verdict.flat else 'NOT FLAT'}.")
    step = args.duration / 10
    windows = [[kib for t, kib in sampler.samples if k * step <= t < (k + 1) * step]
               for k in range(10)]
    print("Largest RSS sample (MiB) in each tenth of the run: " + ", ".join(
        f"{max(w) / 1024:.1f}" for w in windows if w) + ".")
    for error in report.errors[:20]:
        print(f"error: {error}", file=sys.stderr)
    bad_log = [m for m in ("Traceback", "ERROR", "derender failed") if m in log]
    if bad_log:
        print(f"server log contains {bad_log}:\n{log[-3000:]}", file=sys.stderr)
    return 0 if not report.errors and verdict.flat and not bad_log else 1


if __name__ == "__main__":
    sys.exit(main())
