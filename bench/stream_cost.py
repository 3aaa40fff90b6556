"""What a stream costs on Lambda: calls, added latency and dollars per streamed token.

A simulated engine emits one token per SSE event at a steady rate (20, 50, 100, 200 tokens/s);
``derender_client.astream_derender`` derenders the stream through a delay proxy standing in for
the network (a round trip of 10 ms: a Function URL called from the same region; 30 ms: API
Gateway) in front of the real local server (``bench/_timed_server.py``: our app under uvicorn,
timing each call as Lambda bills it). Client settings compared, each on its own run of the same
stream: one call per chunk (``max_batch=1``, what the client did before coalescing), the
defaults (coalescing, no waiting), and ``max_delay_ms`` 50 and 100.

Per run: calls per 1,000 tokens; the added latency per token, from the moment the engine
emitted it to the moment the client yielded its OpenAI chunk, p50 and p99; and the cost per
million streamed tokens from PRICES (Lambda requests and arm64 GB-seconds at the template's
1,769 MB, billed per started millisecond of each call as measured here; plus the HTTP API's
request fee for the API Gateway entry).

    python bench/stream_cost.py                      # every rate and round trip, ~6 min
    python bench/stream_cost.py --seconds 4 --rates 100 --rtts 30

Targets: at 100 tokens/s and a 30 ms round trip the defaults make at least 3x fewer
calls than one per chunk, with p99 added latency at most 2 round trips + 10 ms; with
``max_delay_ms`` 100 at least 8 tokens per call; through a Function URL at 100 tokens/s with
``max_delay_ms`` 100 at most $0.03 per million streamed tokens.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import REPO, load_line, machine_line, percentile, real_text_ids, revision
from tokenizers import Tokenizer

from derender_client import astream_derender
from derender_testing.servers import LocalServer, clean_env

MODELS = REPO / "layers" / "tokenizers"
PROMPT = [151644, 872, 198, 13048, 151645, 198, 151644, 77091, 198]  # Qwen3 ChatML "Hi"
EOS = 151645
MEMORY_MB = 1769  # template.yaml's MemorySize

PRICES = {
    # US East (N. Virginia), list prices read 2026-12-01 (unchanged since 2021-2022):
    "lambda_request": 0.20 / 1e6,  # per request
    "lambda_arm64_gb_second": 0.0000133334,  # first 7.5 billion GB-s a month
    "http_api_request": 1.00 / 1e6,  # first 300 million requests a month (per 512 KB)
}


@dataclass(frozen=True)
class Setting:
    name: str
    options: dict[str, Any]


SETTINGS = [
    Setting("one call per chunk", {"max_batch": 1}),
    Setting("coalescing (defaults)", {}),
    Setting("max_delay_ms 50", {"max_delay_ms": 50}),
    Setting("max_delay_ms 100", {"max_delay_ms": 100}),
]


class DelayProxy:
    """A TCP link with a fixed one-way delay each way (round trip = 2 x delay); nothing else."""

    def __init__(self, target_port: int, rtt_ms: float) -> None:
        self.target_port = target_port
        self.delay = rtt_ms / 2000.0
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer),
                                 return_exceptions=True)
        except asyncio.CancelledError:
            pass  # the run is over: the client's pooled connection is still open
        finally:
            writer.close()
            up_writer.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    break
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()
            writer.close()

        sender = asyncio.create_task(deliver())
        try:
            while data := await reader.read(65536):
                queue.put_nowait((loop.time() + self.delay, data))
        finally:
            queue.put_nowait((loop.time() + self.delay, b""))
            await sender


@dataclass
class Run:
    tokens: int
    calls: int
    added_ms: list[float]
    billed_ms: int
    """Sum over calls of each call's duration rounded up to a whole millisecond."""

    def per_million(self, api_gateway: bool) -> float:
        gb = MEMORY_MB / 1024
        lambda_cost = (self.calls * PRICES["lambda_request"]
                       + self.billed_ms / 1000 * gb * PRICES["lambda_arm64_gb_second"])
        api = self.calls * PRICES["http_api_request"] if api_gateway else 0.0
        return (lambda_cost + api) / self.tokens * 1e6


def durations(server_url: str) -> list[float]:
    with urllib.request.urlopen(server_url + "/bench/durations", timeout=10) as answer:
        values: list[float] = json.loads(answer.read())
        return values


async def one_run(proxy_url: str, server_url: str, ids: list[int], rate: float,
                  setting: Setting, request_id: str) -> Run:
    durations(server_url)  # forget earlier calls
    emitted: list[float] = []
    interval = 1.0 / rate

    async def engine() -> AsyncIterator[str]:
        start = time.perf_counter() + 0.05
        for i, token in enumerate(ids):
            due = start + i * interval
            wait = due - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            emitted.append(due)  # the engine's schedule: a late pull counts as added latency
            last = i == len(ids) - 1
            choice = {"index": 0, "token_ids": [token], "finish_reason": "stop" if last else None}
            yield "data: " + json.dumps({"request_id": request_id, "choices": [choice]}) + "\n"
        yield "data: [DONE]\n"

    yielded: list[float] = []
    async for _chunk in astream_derender(engine(), base_url=proxy_url, route="chat",
                                         model="qwen3", prompt_token_ids=PROMPT,
                                         chat_request={"messages": [
                                             {"role": "user", "content": "Hi"}]},
                                         **setting.options):
        yielded.append(time.perf_counter())
    if len(yielded) != len(ids):
        raise SystemExit(f"{setting.name}: {len(yielded)} chunks for {len(ids)} tokens")
    calls = durations(server_url)
    added = sorted((y - e) * 1000 for y, e in zip(yielded, emitted, strict=True))
    return Run(tokens=len(ids), calls=len(calls), added_ms=added,
               billed_ms=sum(math.ceil(d * 1000) for d in calls))


async def measure(server_url: str, server_port: int, ids_all: list[int], rates: list[float],
                  rtts: list[float], seconds: float) -> list[tuple[float, float, Setting, Run]]:
    results = []
    for rtt in rtts:
        proxy = DelayProxy(server_port, rtt)
        await proxy.start()
        proxy_url = f"http://127.0.0.1:{proxy.port}"
        try:
            for rate in rates:
                count = max(50, int(rate * seconds))
                ids = [*ids_all[:count - 1], EOS]
                for setting in SETTINGS:
                    await asyncio.sleep(0.3)  # the same idle gap before every run
                    run = await one_run(proxy_url, server_url, ids, rate, setting,
                                        f"cost-{rtt:g}-{rate:g}-{len(results)}")
                    results.append((rtt, rate, setting, run))
                    print(f"  rtt {rtt:g} ms, {rate:g} tok/s, {setting.name}: "
                          f"{run.calls} calls for {run.tokens} tokens", file=sys.stderr)
        finally:
            await proxy.close()
    return results


def report(results: list[tuple[float, float, Setting, Run]]) -> None:
    print("| round trip | tokens/s | client | calls per 1,000 tokens | tokens per call | "
          "added latency p50 / p99 (ms) | $ per 1M tokens, Function URL | "
          "$ per 1M tokens, HTTP API |")
    print("|---|---|---|---|---|---|---|---|")
    for rtt, rate, setting, run in results:
        print(f"| {rtt:g} ms | {rate:g} | {setting.name} | {run.calls / run.tokens * 1000:.0f} | "
              f"{run.tokens / run.calls:.1f} | {percentile(run.added_ms, 0.5):.1f} / "
              f"{percentile(run.added_ms, 0.99):.1f} | ${run.per_million(False):.4f} | "
              f"${run.per_million(True):.4f} |")
    print()
    by = {(rtt, rate, s.name): run for rtt, rate, s, run in results}
    checks = []
    base = by.get((30.0, 100.0, "one call per chunk"))
    default = by.get((30.0, 100.0, "coalescing (defaults)"))
    if base and default:
        ratio = base.calls / default.calls
        p99 = percentile(default.added_ms, 0.99)
        checks.append(f"100 tok/s, 30 ms: defaults make {ratio:.1f}x fewer calls than one per "
                      f"chunk (target >= 3) {'met' if ratio >= 3 else 'MISSED'}; p99 added "
                      f"{p99:.1f} ms (target <= 70) {'met' if p99 <= 70 else 'MISSED'}")
    for rtt in (10.0, 30.0):
        delayed = by.get((rtt, 100.0, "max_delay_ms 100"))
        if delayed:
            per_call = delayed.tokens / delayed.calls
            checks.append(f"100 tok/s, {rtt:g} ms, max_delay_ms 100: {per_call:.1f} tokens per "
                          f"call (target >= 8) {'met' if per_call >= 8 else 'MISSED'}")
    url = by.get((10.0, 100.0, "max_delay_ms 100"))
    if url:
        cost = url.per_million(False)
        checks.append(f"Function URL (10 ms), 100 tok/s, max_delay_ms 100: ${cost:.4f} per "
                      f"million tokens (target <= 0.03) {'met' if cost <= 0.03 else 'MISSED'}")
    for line in checks:
        print(f"- {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[20, 50, 100, 200])
    parser.add_argument("--rtts", type=float, nargs="+", default=[10, 30])
    parser.add_argument("--seconds", type=float, default=6.0,
                        help="length of each simulated stream (tokens = rate x seconds)")
    args = parser.parse_args()

    tokenizer = Tokenizer.from_file(str(MODELS / "qwen3" / "tokenizer.json"))
    ids_all = real_text_ids(tokenizer, int(max(args.rates) * args.seconds) + 1)
    env = clean_env(DERENDER_MODELS_DIR=str(MODELS),
                    DERENDER_SIGNING_KEYS="bench:stream-cost-benchmark-key-0123456789")
    log = Path("/tmp/derender-stream-cost-server.log")
    script = str(Path(__file__).resolve().parent / "_timed_server.py")
    with LocalServer(lambda port: [sys.executable, script, "--port", str(port)], env,
                     log) as server:
        port = int(server.url.rsplit(":", 1)[1])
        print(f"# stream cost, {revision()}", file=sys.stderr)
        results = asyncio.run(measure(server.url, port, ids_all, args.rates, args.rtts,
                                      args.seconds))
    print(f"{machine_line()}; {load_line()}; revision {revision()}")
    print(f"Prices: {PRICES} (us-east-1); memory {MEMORY_MB} MB; calls billed per started ms "
          "as timed here")
    print()
    report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
