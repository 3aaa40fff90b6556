"""HTTP latency of a 256-token non-streaming chat derender: our server against vLLM 0.33's.

Starts our server (uvicorn, this interpreter) on 127.0.0.1 unless ``--ours-url`` points at a
running one, checks that vLLM's render server answers at ``--vllm-url`` (optional: without it
only our figures are printed), verifies both return the same content for the body, then sends
the same body sequentially over one persistent HTTP/1.1 connection per server (``http.client``
for both), alternating servers in ABBA-ordered blocks of ``--block`` calls (default 50; 1
alternates call by call) so slow noise hits both alike. Per-call alternation lets work a
server does after answering (vLLM keeps busy for a while) land on the other server's call.

    python bench/http_latency.py                                  # vLLM expected on :8100
    python bench/http_latency.py --vllm-url http://127.0.0.1:8100 --calls 500
    python bench/http_latency.py --vllm-url http://127.0.0.1:PORT --other-name "derender (before)"

The last form compares two of our servers (say two revisions, the other one started by hand
on PORT) instead of ours and vLLM, under the same interleaving and idle gaps.

vLLM's reference server (from the shared peer install): ``start.sh qwen3 8100``.
Target: our p50 <= 0.5 × vLLM's p50.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from _common import REPO, load_line, machine_line, median, percentile, real_text_ids, revision
from tokenizers import Tokenizer

from derender.contract import routes

CHAT_PATH = routes.CHAT.path
EOS_QWEN3 = 151645
TARGET_RATIO = 0.5
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}


class Client:
    """One persistent keep-alive connection to a server; reconnects if the server closes it."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise SystemExit(f"only http://host:port URLs are supported, got {url!r}")
        self.url = url
        self.host = parts.hostname
        self.port = parts.port or 80
        self.timeout = timeout
        self.reconnects = 0
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=body,
                                  headers=JSON_HEADERS if body is not None else {})
                response = self.conn.getresponse()
                data = response.read()
                if response.will_close:
                    self._reconnect()
                return response.status, data
            except (ConnectionError, http.client.HTTPException, OSError):
                if attempt:
                    raise
                self._reconnect()
        raise AssertionError("unreachable")

    def _reconnect(self) -> None:
        self.conn.close()
        self.reconnects += 1
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def close(self) -> None:
        self.conn.close()


@dataclass
class Series:
    name: str
    samples: list[float] = field(default_factory=list)

    def stats(self) -> dict[str, float]:
        ordered = sorted(self.samples)
        return {"p50": median(ordered), "p90": percentile(ordered, 0.90),
                "p99": percentile(ordered, 0.99), "min": ordered[0],
                "mean": sum(ordered) / len(ordered)}


def healthy(url: str, timeout: float = 1.0) -> bool:
    parts = urlsplit(url)
    try:
        conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80,
                                          timeout=timeout)
        conn.request("GET", "/health")
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except (OSError, http.client.HTTPException):
        return False


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End a server we started: politely, then not."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def note_no_vllm(url: str) -> None:
    print(f"note: vLLM not reachable at {url}/health; measuring our server only (start it "
          "with the peer's `start.sh qwen3 8100`)", file=sys.stderr)


def start_ours(models_dir: Path, port: int, log_path: Path,
               extra_env: dict[str, str] | None = None,
               launcher: list[str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """Our server; ``launcher`` replaces ``python -m uvicorn --factory ...create_app`` (the
    host, port and ``--no-access-log`` flags follow it either way)."""
    if not port_free(port):
        chosen = free_port()
        print(f"note: port {port} is busy; starting our server on {chosen}", file=sys.stderr)
        port = chosen
    env = dict(os.environ, DERENDER_MODELS_DIR=str(models_dir), **(extra_env or {}))
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [*(launcher or [sys.executable, "-m", "uvicorn", "--factory",
                        "derender.app.main:create_app"]),
         "--host", "127.0.0.1", "--port", str(port), "--no-access-log"],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"our server exited during start-up; see {log_path}")
        if healthy(url):
            return proc, url
        time.sleep(0.1)
    proc.terminate()
    raise SystemExit(f"our server was not healthy after 60 s; see {log_path}")


def server_stack(python: str) -> str:
    """Which event loop and HTTP parser uvicorn's "auto" picks in our server's interpreter."""
    probe = ("import importlib.util as u;"
             "print(('uvloop' if u.find_spec('uvloop') else 'asyncio') + ' + ' +"
             "('httptools' if u.find_spec('httptools') else 'h11'))")
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def make_body(models_dir: Path, model: str, tokens: int) -> dict[str, Any]:
    tokenizer = Tokenizer.from_file(str(models_dir / "qwen3" / "tokenizer.json"))
    ids = [*real_text_ids(tokenizer, tokens - 1), EOS_QWEN3]
    return {
        "model": model,
        "generate_response": {"request_id": "bench", "choices": [
            {"index": 0, "token_ids": ids, "finish_reason": "stop"}]},
        "prompt_tokens": 12,
        "chat_request": {"model": model, "messages": [{"role": "user", "content": "hi"}]},
    }


def comparable(response: dict[str, Any]) -> dict[str, Any]:
    """The parts of a chat.completion that must agree between the two servers."""
    choice = response["choices"][0]
    return {"object": response.get("object"), "id": response.get("id"),
            "content": choice["message"].get("content"),
            "reasoning": choice["message"].get("reasoning"),
            "tool_calls": choice["message"].get("tool_calls") or [],
            "finish_reason": choice.get("finish_reason"),
            "stop_reason": choice.get("stop_reason"), "usage": response.get("usage")}


def call_ok(client: Client, data: bytes) -> dict[str, Any]:
    status, raw = client.request("POST", CHAT_PATH, data)
    if status != 200:
        raise SystemExit(f"{client.url}{CHAT_PATH} answered {status}: {raw[:500]!r}")
    result: dict[str, Any] = json.loads(raw)
    return result


def timed(calls: list[tuple[Series, Callable[[], object]]], count: int, warmup: int,
          block: int = 1) -> None:
    """``count`` timed calls of each function, in blocks of ``block`` consecutive calls.

    Blocks alternate in ABBA order (even block rounds in list order, odd ones reversed), so
    slow drifts of the machine hit every function alike.
    """
    clock = time.perf_counter_ns
    for _ in range(warmup):
        for _, f in calls:
            f()
    done = 0
    r = 0
    while done < count:
        size = min(block, count - done)
        for series, f in (calls if r % 2 == 0 else calls[::-1]):
            for _ in range(size):
                t0 = clock()
                f()
                series.samples.append((clock() - t0) / 1e6)
        done += size
        r += 1


def breakdown(models_dir: Path, data: bytes, rounds: int) -> str:
    """In-process cost of our handler's steps for the same body (no HTTP)."""
    from pydantic import TypeAdapter

    from derender.app.main import json_response
    from derender.contract.requests import ChatBody
    from derender.core.chat import derender_chat
    from derender.core.registry import ModelRegistry
    from derender.settings import Settings

    adapter: TypeAdapter[Any] = TypeAdapter(ChatBody)
    registry = ModelRegistry(models_dir)
    parsed = json.loads(data)
    body = adapter.validate_python(parsed)
    model = registry.get(body.model)
    limit = Settings.max_n_sequences
    result = derender_chat(body, model, limit)
    steps: list[tuple[str, Callable[[], object]]] = [
        ("json.loads of the body", lambda: json.loads(data)),
        ("pydantic validation (ChatBody union)", lambda: adapter.validate_python(parsed)),
        ("derender_chat (the core)", lambda: derender_chat(body, model, limit)),
        ("json_response (json.dumps + Response)", lambda: json_response(result)),
    ]
    series = [Series(label) for label, _ in steps]
    timed([(s, f) for s, (_, f) in zip(series, steps, strict=True)], rounds, 50)
    lines = ["| step (in process, no HTTP) | p50 ms |", "|---|---:|"]
    lines += [f"| {s.name} | {s.stats()['p50']:.3f} |" for s in series]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm-url", default="http://127.0.0.1:8100",
                        help="vLLM 0.33 render server serving qwen3 (default %(default)s)")
    parser.add_argument("--vllm-model", default="qwen3", help="its served model name")
    parser.add_argument("--other-name", default=None,
                        help="the server at --vllm-url is not vLLM but this one (e.g. our "
                             "previous revision): label it so, and print no target verdict")
    parser.add_argument("--ours-url", default=None,
                        help="use our server already running here instead of starting one")
    parser.add_argument("--port", type=int, default=8000,
                        help="port for our server (a free one is chosen if busy)")
    parser.add_argument("--models-dir", type=Path, default=REPO / "layers" / "tokenizers",
                        help="DERENDER_MODELS_DIR for our server (default %(default)s)")
    parser.add_argument("--calls", type=int, default=500, help="timed calls per server")
    parser.add_argument("--warmup", type=int, default=50, help="untimed calls per server")
    parser.add_argument("--block", type=int, default=50,
                        help="consecutive calls to one server before switching (ABBA order; "
                             "1 alternates call by call; default %(default)s)")
    parser.add_argument("--tokens", type=int, default=256, help="output ids incl. the EOS")
    parser.add_argument("--no-breakdown", action="store_true",
                        help="skip the in-process breakdown of our handler")
    args = parser.parse_args(argv)

    data = json.dumps(make_body(args.models_dir, "qwen3", args.tokens)).encode()
    vllm_data = json.dumps(make_body(args.models_dir, args.vllm_model, args.tokens)).encode()
    load_before = load_line()

    proc: subprocess.Popen[bytes] | None = None
    log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"derender-bench-{os.getpid()}.log"
    try:
        if args.ours_url:
            ours_url = args.ours_url
            if not healthy(ours_url):
                raise SystemExit(f"no healthy server at {ours_url}")
            stack = "external server"
        else:
            proc, ours_url = start_ours(args.models_dir, args.port, log_path)
            stack = server_stack(sys.executable)
        have_vllm = healthy(args.vllm_url)
        if not have_vllm:
            note_no_vllm(args.vllm_url)

        ours = Client(ours_url)
        servers: list[tuple[Series, Client, bytes]] = [(Series("derender (ours)"), ours, data)]
        if have_vllm:
            servers.append((Series(args.other_name or "vLLM 0.33 render"), Client(args.vllm_url),
                            vllm_data))

        # Sanity: same content from both before any timing.
        answers = [comparable(call_ok(client, body)) for _, client, body in servers]
        if len(answers) == 2 and answers[0] != answers[1]:
            for key in answers[0]:
                if answers[0][key] != answers[1][key]:
                    print(f"MISMATCH {key}: ours={answers[0][key]!r:.200} "
                          f"vllm={answers[1][key]!r:.200}", file=sys.stderr)
            raise SystemExit("the servers disagree on this body; not timing")
        verdict = "identical" if len(answers) == 2 else "ours only"
        print(f"sanity: {verdict}; content is {len(answers[0]['content'])} characters",
              file=sys.stderr)

        timed([(series, lambda c=client, b=body: call_ok(c, b))
               for series, client, body in servers], args.calls, args.warmup, args.block)
        health = [Series(f"{series.name} GET /health") for series, _, _ in servers]
        timed([(h, lambda c=client: c.request("GET", "/health"))
               for h, (_, client, _) in zip(health, servers, strict=True)],
              min(args.calls, 200), 20, args.block)
        for _, client, _ in servers:
            client.close()
    finally:
        if proc is not None:
            stop(proc)
    log_path.unlink(missing_ok=True)  # kept only when the run failed

    print(f"machine: {machine_line()}; derender {revision()}")
    print(f"before: {load_before}; after: {load_line()}")
    print()
    print(f"Non-streaming chat derender, {args.tokens} ids (incl. EOS), {args.calls} calls per "
          f"server, interleaved in ABBA blocks of {args.block}, one keep-alive http.client "
          f"connection each. "
          f"Our server: uvicorn, {stack}.")
    print()
    print("| server | p50 ms | p90 ms | p99 ms | min ms | mean ms | GET /health p50 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (series, client, _), h in zip(servers, health, strict=True):
        st = series.stats()
        print(f"| {series.name} | {st['p50']:.2f} | {st['p90']:.2f} | {st['p99']:.2f} "
              f"| {st['min']:.2f} | {st['mean']:.2f} | {h.stats()['p50']:.2f} |")
        if client.reconnects:
            print(f"note: {client.reconnects} reconnects to {series.name}", file=sys.stderr)
    if len(servers) == 2:
        a, b = servers[0][0].stats(), servers[1][0].stats()
        ratio = a["p50"] / b["p50"]
        print()
        if args.other_name:
            print(f"ours/{args.other_name}: p50 {ratio:.3f}×, p99 {a['p99'] / b['p99']:.3f}×, "
                  f"mean {a['mean'] / b['mean']:.3f}×")
            return _finish(args, data)
        print(f"ours/vLLM: p50 {ratio:.2f}×, p99 {a['p99'] / b['p99']:.2f}× "
              f"(target p50 ≤ {TARGET_RATIO:g}×: "
              + ("met" if ratio <= TARGET_RATIO
                 else f"MISSED, {ratio / TARGET_RATIO:.2f}× the target") + ")")
    return _finish(args, data)


def _finish(args: argparse.Namespace, data: bytes) -> int:
    if not args.no_breakdown:
        print()
        print(breakdown(args.models_dir, data, args.calls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
