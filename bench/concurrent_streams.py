"""Plain chunk calls per second under concurrent streams: our servers and vLLM 0.33 in one run.

``--streams`` asyncio clients (one keep-alive connection each, minimal HTTP/1.1 from
``tests/loadgen.py``) each run chat streams of Qwen3 corpus text, one id per
``generate_chunk`` call, carrying the ``stream_state`` each answer returns (``--chunks`` calls
per stream, then a new stream). Every target is measured in turn for ``--seconds`` per
phase, ``--rounds`` times round-robin (our servers and vLLM alternate, so the machine's other
load falls on all of them alike); each call has the same ``--gap`` of idle time before it.
Printed per target: calls/s of each phase, the median, its ratio to vLLM's, and errors.

Our servers are started here (uvicorn, this interpreter), one per ``--server``
``NAME=SRC[:WORKERS[:THREADS]]``: the app from the ``src`` folder SRC (another checkout's
for a before/after comparison), ``WORKERS`` uvicorn worker processes (default 1) and
``DERENDER_WORKER_THREADS`` THREADS (default: unset). vLLM is expected at ``--vllm-url``:

    "$VLLM_PEER"/start.sh qwen3 8980
    python bench/concurrent_streams.py --vllm-url http://127.0.0.1:8980 \\
        --server before=/path/to/main/src --server after=src --server after-2w=src:2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import REPO, load_line, machine_line, real_text_ids, revision
from tokenizers import Tokenizer

from derender_testing.loadgen import Connection
from derender_testing.servers import LocalServer, clean_env

PATH = "/v1/chat/completions/derender"
KEYS = "bench:0123456789abcdef0123456789abcdef"
MODELS = REPO / "layers" / "tokenizers"
PROMPT = [151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198]


def server_argv(workers: int) -> Any:
    def argv(port: int) -> list[str]:
        return [sys.executable, "-m", "uvicorn", "--factory", "derender.app.main:create_app",
                "--host", "127.0.0.1", "--port", str(port), "--no-access-log",
                "--workers", str(workers)]
    return argv


async def _stream_client(url: str, ids: list[int], offset: int, chunks: int, gap: float,
                         deadline: float, counts: list[int], errors: list[str]) -> None:
    host, _, port = url.removeprefix("http://").partition(":")
    connection = Connection(host, int(port))
    position = offset
    try:
        while time.monotonic() < deadline:
            state: Any = None
            request_id = f"bench-{offset}-{position}"
            for index in range(chunks):
                if time.monotonic() >= deadline:
                    break
                token = ids[position % len(ids)]
                position += 1
                body: dict[str, Any] = {
                    "stream": True, "model": "qwen3", "stream_state": state,
                    "prompt_token_ids": PROMPT,
                    "generate_chunk": {"request_id": request_id, "choices": [
                        {"index": 0, "token_ids": [token],
                         "finish_reason": "length" if index == chunks - 1 else None}]}}
                if gap:
                    await asyncio.sleep(gap)
                status, raw = await connection.post(PATH, json.dumps(body).encode())
                if status != 200:
                    errors.append(f"{status}: {raw[:200]!r}")
                    break
                state = json.loads(raw)["stream_state"]
                counts[0] += 1
    except Exception as exc:  # counted, the phase goes on without this client
        errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        await connection.close()


async def _phase(url: str, ids: list[int], streams: int, chunks: int, gap: float,
                 seconds: float) -> tuple[float, list[str]]:
    counts = [0]
    errors: list[str] = []
    started = time.monotonic()
    await asyncio.gather(*(_stream_client(url, ids, i * 997, chunks, gap, started + seconds,
                                          counts, errors) for i in range(streams)))
    return counts[0] / (time.monotonic() - started), errors


def run_phase(url: str, ids: list[int], args: argparse.Namespace) -> tuple[float, list[str]]:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(_phase(url, ids, args.streams, args.chunks, args.gap / 1e3,
                                  args.seconds))
    return uvloop.run(_phase(url, ids, args.streams, args.chunks, args.gap / 1e3,
                             args.seconds))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm-url", default="http://127.0.0.1:8980")
    parser.add_argument("--server", action="append", default=[],
                        help="NAME=SRC[:WORKERS[:THREADS]] (repeatable)")
    parser.add_argument("--streams", type=int, default=16)
    parser.add_argument("--chunks", type=int, default=200, help="calls per stream")
    parser.add_argument("--seconds", type=float, default=10.0, help="per phase")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gap", type=float, default=0.0, help="idle ms before each call")
    args = parser.parse_args()
    tokenizer = Tokenizer.from_file(str(MODELS / "qwen3" / "tokenizer.json"))
    ids = real_text_ids(tokenizer, 4000)

    servers: dict[str, LocalServer] = {}
    targets: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for spec in args.server or [f"ours={REPO / 'src'}"]:
                name, _, rest = spec.partition("=")
                src, _, more = rest.partition(":")
                workers, _, threads = more.partition(":")
                env = clean_env(PYTHONPATH=str(Path(src).resolve()),
                                DERENDER_MODELS_DIR=str(MODELS), DERENDER_SIGNING_KEYS=KEYS)
                if threads:
                    env["DERENDER_WORKER_THREADS"] = threads
                servers[name] = LocalServer(server_argv(int(workers or 1)), env,
                                            Path(tmp) / f"{name}.log", timeout=120)
                targets[name] = servers[name].url
            targets["vLLM 0.33"] = args.vllm_url.rstrip("/")
            for url in targets.values():  # warm: models loaded, connections made
                run_phase(url, ids, argparse.Namespace(**{**vars(args), "seconds": 1.0}))
            rates: dict[str, list[float]] = {name: [] for name in targets}
            failures: dict[str, list[str]] = {name: [] for name in targets}
            load_before = load_line()
            for _ in range(args.rounds):
                for name, url in targets.items():
                    rate, errors = run_phase(url, ids, args)
                    rates[name].append(rate)
                    failures[name] += errors
            load_after = load_line()
        finally:
            for server in servers.values():
                server.stop()

    print(f"{machine_line()}; revision {revision()}")
    print(f"{args.streams} concurrent streams, 1 id per call, {args.chunks} calls per stream, "
          f"{args.rounds} rounds of {args.seconds:.0f} s per target, gap {args.gap:g} ms; "
          f"{load_before} → {load_after}")
    vllm = statistics.median(rates["vLLM 0.33"])
    print("| target | calls/s per phase | median calls/s | × vLLM | errors |")
    print("|---|---|---:|---:|---:|")
    for name, values in rates.items():
        middle = statistics.median(values)
        print(f"| {name} | {', '.join(f'{v:.0f}' for v in values)} | {middle:.0f} | "
              f"{middle / vllm:.2f} | {len(failures[name])} |")
    for name, errors in failures.items():
        for error in errors[:3]:
            print(f"  {name}: {error}")
    return 1 if any(failures.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
