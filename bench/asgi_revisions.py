"""In-process cost of one call through the whole app (Starlette routing, the handler, the
core, ``json_response``) for two or more source trees, to compare revisions.

Each tree (a folder holding the ``derender`` package, e.g. ``git archive REV src | tar -x``)
runs in its own interpreter, the trees alternating for ``--rounds`` rounds so slow drifts of
the machine hit them alike. A run times ``--calls`` calls of each body (gc off, after 200
untimed calls) through the app's ASGI callable directly: no sockets, no event loop (the
calls never suspend), so the noise of HTTP on a shared machine is left out. Bodies: a
non-streaming chat derender of 256 qwen3 ids (``http_latency.py``'s) and a first streaming
chat call of 8 ids (verify nothing, sign the state).

    python bench/asgi_revisions.py --tree before=/tmp/base/src --tree after=src
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from _common import REPO, load_line, machine_line, real_text_ids

CHAT_PATH = "/v1/chat/completions/derender"
BODIES = ("non-streaming chat, 256 ids", "streaming chat, first call of 8 ids")


def asgi_call(app: Any, body: bytes) -> Coroutine[Any, Any, list[dict[str, Any]]]:
    scope = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1", "method": "POST", "scheme": "http", "path": CHAT_PATH,
        "raw_path": CHAT_PATH.encode(), "query_string": b"", "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000), "state": {},
    }
    messages: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if delivered:
            return {"type": "http.disconnect"}
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    async def call() -> list[dict[str, Any]]:
        await app(scope, receive, send)
        return messages

    return call()


def run_sync(coro: Coroutine[Any, Any, Any]) -> Any:
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("the ASGI call suspended; cannot time it synchronously")


def child(models: Path, calls: int) -> None:
    """Time the bodies with the ``derender`` on sys.path; print the medians in µs (JSON)."""
    from tokenizers import Tokenizer

    from derender.app.main import create_app
    from derender.settings import Settings

    tokenizer = Tokenizer.from_file(str(models / "qwen3" / "tokenizer.json"))
    ids = [*real_text_ids(tokenizer, 255), 151645]
    request = {"model": "qwen3", "messages": [{"role": "user", "content": "hi"}]}
    bodies = [
        {"model": "qwen3", "prompt_tokens": 12, "chat_request": request,
         "generate_response": {"request_id": "bench", "choices": [
             {"index": 0, "token_ids": ids, "finish_reason": "stop"}]}},
        {"model": "qwen3", "stream": True, "prompt_token_ids": [151644, 77091, 198],
         "chat_request": request,
         "generate_chunk": {"request_id": "s", "choices": [{"index": 0, "token_ids": ids[:8]}]}},
    ]
    app = create_app(Settings(models_dir=models, signing_keys="bench:" + "0" * 32))
    medians = []
    for body in (json.dumps(b).encode() for b in bodies):
        answer = run_sync(asgi_call(app, body))
        if answer[0]["status"] != 200:
            raise SystemExit(f"answered {answer[0]['status']}: {answer[1]['body'][:300]!r}")
        for _ in range(200):
            run_sync(asgi_call(app, body))
        samples = []
        gc.disable()
        for _ in range(calls):
            started = time.perf_counter_ns()
            run_sync(asgi_call(app, body))
            samples.append(time.perf_counter_ns() - started)
        gc.enable()
        medians.append(statistics.median(samples) / 1000)
    print(json.dumps(medians))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", required=True, metavar="NAME=DIR",
                        help="a source tree holding the derender package (repeat)")
    parser.add_argument("--models-dir", type=Path, default=REPO / "layers" / "tokenizers")
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per body and run")
    parser.add_argument("--rounds", type=int, default=6, help="runs per tree, alternating")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        child(args.models_dir, args.child)
        return 0
    trees = [tuple(t.split("=", 1)) for t in args.tree]
    runs: dict[str, list[list[float]]] = {name: [] for name, _ in trees}
    load_before = load_line()
    for r in range(args.rounds):
        for name, folder in (trees if r % 2 == 0 else trees[::-1]):
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [str(Path(folder).resolve()), str(Path(__file__).resolve().parent)]))
            done = subprocess.run(
                [sys.executable, __file__, "--tree", f"{name}={folder}", "--child",
                 str(args.calls), "--models-dir", str(args.models_dir)],
                env=env, capture_output=True, text=True, check=False)
            if done.returncode:
                raise SystemExit(f"{name}: {done.stderr[-2000:]}")
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"machine: {machine_line()}")
    print(f"before: {load_before}; after: {load_line()}")
    print()
    print(f"In-process ASGI call, median µs of {args.calls} calls per run; {args.rounds} runs "
          "per tree, alternating; the median of the runs, then every run's.")
    print()
    print("| tree | " + " | ".join(BODIES) + " |")
    print("|---|" + "---:|" * len(BODIES))
    for name, medians in runs.items():
        cells = []
        for i in range(len(BODIES)):
            values = [m[i] for m in medians]
            cells.append(f"**{statistics.median(values):.1f}** ("
                         + ", ".join(f"{v:.0f}" for v in values) + ")")
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
