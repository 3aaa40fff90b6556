"""HTTP latency per streaming chunk: our server against vLLM 0.33's, side by side.

The same Qwen3 chat stream (``--chunks`` chunks of ``--per-chunk`` ids of real text from
``bench/corpus.txt``, the last one with finish_reason "length") is sent chunk after chunk to
both servers, each carrying its own ``stream_state`` (ours: the signed token; vLLM's: its JSON
object, echoed back verbatim). One persistent keep-alive ``http.client`` connection per
server; the servers alternate in ABBA-ordered blocks of ``--block`` consecutive chunks, so
slow noise hits both alike. Only the request/response exchange is timed: building the body
(with the previous state) and parsing the answer happen outside the timed region, for both.

Before timing, one untimed stream per server checks that both concatenated texts equal each
other (and a plain ``tokenizers`` decode of the ids); the timed streams are checked again.
Our server is started here (uvicorn, this interpreter, ``DERENDER_SIGNING_KEYS`` set) unless
``--ours-url`` is given; without vLLM only our figures are printed.

    start.sh qwen3 8100           # the vLLM reference peer (peer scripts, not in this repo)
    python bench/stream_http.py                           # 2 streams of 500 one-id chunks
    python bench/stream_http.py --profile                 # + cProfile of our server process

Target: our p50 per chunk <= 0.5 × vLLM's.
"""

from __future__ import annotations

import argparse
import io
import json
import linecache
import os
import pstats
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import (
    BENCH_DIR,
    REPO,
    load_line,
    machine_line,
    median,
    real_text_ids,
    revision,
)
from http_latency import (
    CHAT_PATH,
    Client,
    Series,
    healthy,
    note_no_vllm,
    server_stack,
    start_ours,
    stop,
    timed,
)
from tokenizers import Tokenizer

TARGET_RATIO = 0.5
SIGNING_KEYS = "bench:0123456789abcdef0123456789abcdef"
PROMPT_TEXT = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
EDGE = 50
"""Chunks at each end of a stream compared for flatness."""


@dataclass
class Side:
    """One server: its connection, model name and what its streams produced."""

    name: str
    client: Client
    model: str
    series: Series
    by_chunk: list[list[float]]
    """Latencies (ms) by chunk position, over all timed streams."""
    client_cpu: list[float] = field(default_factory=list)
    """CPU ms the benchmark's own thread spent in each timed exchange (http.client, syscalls)."""
    state_chars: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    finishes: list[str | None] = field(default_factory=list)


@dataclass
class Run:
    """One stream in progress on one server."""

    state: Any = None
    parts: list[str] = field(default_factory=list)
    finish: str | None = None


def chunk_body(model: str, request_id: str, ids: list[int], finish: str | None,
               prompt_ids: list[int], state: Any) -> bytes:
    body: dict[str, Any] = {
        "stream": True, "model": model,
        "generate_chunk": {"request_id": request_id, "choices": [
            {"index": 0, "token_ids": ids, "finish_reason": finish}]},
        "prompt_token_ids": prompt_ids, "prompt_tokens": len(prompt_ids),
        "chat_request": {"model": model, "messages": [{"role": "user", "content": "hi"}]},
    }
    if state is not None:
        body["stream_state"] = state
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def state_chars(state: Any) -> int:
    """Characters of a state as it travels in the JSON body."""
    return len(state) if isinstance(state, str) else len(json.dumps(state, separators=(",", ":")))


class Stream:
    """The chunk sequence every server is sent."""

    def __init__(self, ids: list[int], per_chunk: int, prompt_ids: list[int]) -> None:
        self.chunks = [ids[i:i + per_chunk] for i in range(0, len(ids), per_chunk)]
        self.prompt_ids = prompt_ids

    def call(self, side: Side, run: Run, request_id: str, index: int,
             record: bool) -> None:
        last = index == len(self.chunks) - 1
        data = chunk_body(side.model, request_id, self.chunks[index],
                          "length" if last else None, self.prompt_ids, run.state)
        c0 = time.thread_time_ns()
        t0 = time.perf_counter_ns()
        status, raw = side.client.request("POST", CHAT_PATH, data)
        elapsed = (time.perf_counter_ns() - t0) / 1e6
        client_cpu = (time.thread_time_ns() - c0) / 1e6
        if status != 200:
            raise SystemExit(f"{side.name}: chunk {index + 1} answered {status}: {raw[:500]!r}")
        answer = json.loads(raw)
        run.state = answer["stream_state"]
        choice = answer["chunk"]["choices"][0]
        run.parts.append(choice["delta"].get("content") or "")
        run.finish = choice.get("finish_reason") or run.finish
        if record:
            side.series.samples.append(elapsed)
            side.by_chunk[index].append(elapsed)
            side.client_cpu.append(client_cpu)
            side.state_chars.append(state_chars(run.state))


def run_streams(stream: Stream, sides: list[Side], count: int, block: int, record: bool,
                tag: str) -> None:
    """``count`` whole streams, every server in lockstep, ABBA blocks of ``block`` chunks."""
    rounds = 0
    for number in range(count):
        runs = [Run() for _ in sides]
        request_id = f"{tag}-{number}"
        for start in range(0, len(stream.chunks), block):
            pairs = list(zip(sides, runs, strict=True))
            for side, run in (pairs if rounds % 2 == 0 else pairs[::-1]):
                for index in range(start, min(start + block, len(stream.chunks))):
                    stream.call(side, run, request_id, index, record)
            rounds += 1
        for side, run in zip(sides, runs, strict=True):
            side.texts.append("".join(run.parts))
            side.finishes.append(run.finish)


def check_texts(sides: list[Side], expected: str) -> None:
    for side in sides:
        for text, finish in zip(side.texts, side.finishes, strict=True):
            if text != expected or finish != "length":
                first = next((i for i, (a, b) in enumerate(zip(text, expected, strict=False))
                              if a != b), min(len(text), len(expected)))
                raise SystemExit(f"{side.name}: concatenated stream differs from the plain "
                                 f"decode at character {first} (finish {finish!r}): "
                                 f"{text[first:first + 40]!r} vs {expected[first:first + 40]!r}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ----------------------------------------------------------------- where our time goes


def run_sync(coro: Coroutine[Any, Any, Any]) -> Any:
    """Drive a coroutine that never really suspends (an in-process ASGI call) to its end."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("the ASGI call suspended; cannot time it synchronously")


def asgi_call(app: Any, method: str, path: str, body: bytes) -> Coroutine[Any, Any, Any]:
    scope = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1", "method": method, "scheme": "http", "path": path,
        "raw_path": path.encode(), "query_string": b"", "root_path": "",
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


def breakdown(models_dir: Path, stream: Stream, position: int, rounds: int
              ) -> tuple[str, dict[str, float]]:
    """In-process p50 of our app's layers and handler steps for chunk ``position`` (no HTTP)."""
    from pydantic import TypeAdapter

    from derender.app.main import create_app, json_response, parse_body
    from derender.contract.requests import ChatBody, DerenderChatStreamBatchRequest
    from derender.core.chat import derender_chat_stream
    from derender.core.registry import ModelRegistry
    from derender.core.state.stream import decode_state, encode_state
    from derender.core.state.token import KeyRing, sign, verify
    from derender.settings import Settings

    settings = Settings.from_env(dict(os.environ, DERENDER_MODELS_DIR=str(models_dir),
                                      DERENDER_SIGNING_KEYS=SIGNING_KEYS))
    registry = ModelRegistry(settings.models_dir, settings.default_model)
    app = create_app(settings, registry)
    ring = KeyRing.parse(SIGNING_KEYS)
    state: Any = None
    for index in range(position):  # the state at ``position``, through the app itself
        raw = chunk_body("qwen3", "bench-breakdown", stream.chunks[index], None,
                         stream.prompt_ids, state)
        sent = run_sync(asgi_call(app, "POST", CHAT_PATH, raw))
        state = json.loads(sent[1]["body"])["stream_state"]
    raw = chunk_body("qwen3", "bench-breakdown", stream.chunks[position], None,
                     stream.prompt_ids, state)
    chat: TypeAdapter[Any] = TypeAdapter(ChatBody)
    batch: TypeAdapter[Any] = TypeAdapter(DerenderChatStreamBatchRequest)
    parsed = json.loads(raw)
    body = parse_body(raw, chat, batch)
    model = registry.get(body.model)
    before = decode_state(verify(ring, body.stream_state, settings.max_state_chars))
    chunks, after = derender_chat_stream(body, model, before, settings.state_ttl_seconds)
    token = sign(ring, encode_state(after))
    result = {"chunk": chunks[0], "stream_state": token}

    def full_core() -> object:
        s = decode_state(verify(ring, body.stream_state, settings.max_state_chars))
        c, a = derender_chat_stream(body, model, s, settings.state_ttl_seconds)
        return json_response({"chunk": c[0], "stream_state": sign(ring, encode_state(a))})

    steps: list[tuple[str, Callable[[], object]]] = [
        ("ASGI app in process: POST chunk (FastAPI + Starlette + handler, no server)",
         lambda: run_sync(asgi_call(app, "POST", CHAT_PATH, raw))),
        ("ASGI app in process: GET /health", lambda: run_sync(asgi_call(app, "GET", "/health",
                                                                          b""))),
        ("json.loads of the body", lambda: json.loads(raw)),
        ("pydantic validation (ChatBody union)", lambda: chat.validate_python(parsed)),
        ("verify + decode_state", lambda: decode_state(
            verify(ring, body.stream_state, settings.max_state_chars))),
        ("derender_chat_stream (the core)", lambda: derender_chat_stream(
            body, model, before, settings.state_ttl_seconds)),
        ("encode_state + sign", lambda: sign(ring, encode_state(after))),
        ("json_response (json.dumps + Response)", lambda: json_response(result)),
        ("handler work without HTTP: parse_body → … → json_response",
         lambda: (parse_body(raw, chat, batch), full_core())),
    ]
    series = [Series(label) for label, _ in steps]
    timed([(s, f) for s, (_, f) in zip(series, steps, strict=True)], rounds, 200)
    p50 = {s.name: s.stats()["p50"] for s in series}
    lines = [f"In process, chunk {position + 1} of the stream ({len(raw)}-byte body; "
             f"{rounds} rounds, interleaved):", "",
             "| step (in process, no HTTP) | p50 µs |", "|---|---:|"]
    lines += [f"| {name} | {value * 1e3:.1f} |" for name, value in p50.items()]
    return "\n".join(lines), p50


GROUPS: list[tuple[str, tuple[str, ...]]] = [
    ("uvicorn (HTTP protocol, httptools callbacks)", ("/uvicorn/", "httptools")),
    ("starlette", ("/starlette/",)),
    ("fastapi", ("/fastapi/",)),
    ("pydantic validation", ("/pydantic/", "pydantic_core")),
    ("state token: verify + sign (HMAC, base64)", ("state_token.py", "/hmac.py", "/base64.py",
                                                    "_hashlib", "binascii")),
    ("state codec: encode_state / decode_state", ("stream_state.py",)),
    ("derender core (chat stream, detokenizer, stops)", ("/derender/core/", "tokenizers.")),
    ("derender app (handler, parse_body, json_response)", ("/derender/app/",)),
    ("json (stdlib)", ("/json/", "_json")),
    ("asyncio / uvloop / sockets", ("/asyncio/", "uvloop", "socket", "selectors")),
    ("anyio", ("/anyio/",)),
]


def group_of(label: str) -> str | None:
    for name, needles in GROUPS:
        if any(n in label for n in needles):
            return name
    return None


def profile_report(path: Path, calls: int) -> str:
    """Own time of our server's functions, grouped by layer; a C function counts for the
    layer of the Python function that called it most."""
    stats = pstats.Stats(str(path))
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    totals: dict[str, float] = {}
    others: dict[str, float] = {}
    for key, (_cc, _nc, tottime, _ct, callers) in raw.items():
        filename, _line, function = key
        label = f"{filename}:{function}"
        group = group_of(label) if filename != "~" else None
        if group is None and filename == "~":
            group = group_of(function)
            if group is None and callers:
                top = max(callers.items(), key=lambda kv: kv[1][2])[0]
                group = group_of(f"{top[0]}:{top[2]}")
        if group is None:
            group = "other"
            others[label] = others.get(label, 0.0) + tottime
        totals[group] = totals.get(group, 0.0) + tottime
    whole = sum(totals.values())
    lines = [f"cProfile of our server process over {calls} streaming calls (own CPU time by "
             f"layer; {whole / calls * 1e6:.0f} µs of profiled CPU time per call, profiler "
             "overhead included; the event loop's own C code between callbacks is not "
             "attributed):", "", "| layer | µs per call | share |", "|---|---:|---:|"]
    for name, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {name} | {seconds / calls * 1e6:.1f} | {seconds / whole:.0%} |")
    if others:
        top_others = sorted(others.items(), key=lambda kv: -kv[1])[:6]
        lines.append("")
        lines.append("largest 'other' entries: " + "; ".join(
            f"{label.rsplit('/', 1)[-1]} {seconds / calls * 1e6:.1f} µs"
            for label, seconds in top_others))
    out = io.StringIO()
    pstats.Stats(str(path), stream=out).sort_stats("tottime").print_stats(25)
    text = out.getvalue()
    lines += ["", "Top 25 by own time:", "", "```", text[text.find("   ncalls"):].rstrip(), "```"]
    return "\n".join(lines)



def profile_server(args: argparse.Namespace, stream: Stream, log_path: Path) -> str:
    """Start a profiled server, warm it up, profile ``--profile-streams`` streams, report."""
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"derender-stream-{os.getpid()}.prof"
    out.unlink(missing_ok=True)
    proc, url = start_ours(args.models_dir, args.port, log_path,
                           {"DERENDER_SIGNING_KEYS": SIGNING_KEYS},
                           [sys.executable, str(BENCH_DIR / "_profiled_server.py"), str(out)])
    try:
        side = Side("derender (ours, profiled)", Client(url), "qwen3", Series("profiled"),
                    [[] for _ in stream.chunks])
        run_streams(stream, [side], 1, len(stream.chunks), False, "warm")
        proc.send_signal(signal.SIGUSR1)
        time.sleep(0.2)
        run_streams(stream, [side], args.profile_streams, len(stream.chunks), False, "prof")
        proc.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + 30
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        side.client.close()
    finally:
        stop(proc)
    report = profile_report(out, args.profile_streams * len(stream.chunks))
    out.unlink(missing_ok=True)
    return report


LOOP_C = "event loop C code (uvloop: epoll, socket reads, dispatch)"
WRITES = "socket writes (uvicorn send → transport.write → write syscall)"


def source_line(where: str) -> str:
    """The source line py-spy names as ``relative/path.py:LINE`` (searched along sys.path)."""
    path, _, line = where.rpartition(":")
    for base in sys.path:
        candidate = Path(base or ".") / path
        if candidate.is_file():
            return linecache.getline(str(candidate), int(line))
    return ""


def frame_group(frame: str, leaf: bool) -> str | None:
    """Layer of one py-spy frame ``name (file:line)``."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    if leaf and ".transport.write(" in source_line(where):
        return WRITES
    if leaf and name == "Runner.run" and where.startswith("asyncio/runners.py"):
        return LOOP_C  # the loop's own C code is running below the Python stack
    return group_of("/" + where)


def pyspy_report(path: Path, calls: int, rate: int, errors: str) -> str:
    """Samples of our server by layer: the leaf-most frame with a known layer decides."""
    counts: dict[str, int] = {}
    total = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        stack, _, number = line.rpartition(" ")
        n = int(number)
        total += n
        frames = stack.split(";")
        group = "other Python"
        for depth, frame in enumerate(reversed(frames)):
            found = frame_group(frame, depth == 0)
            if found is not None:
                group = found
                break
        counts[group] = counts.get(group, 0) + n
    lines = [f"py-spy (sampling at {rate} Hz, non-blocking, Python frames; {errors}) of our "
             f"server process over {calls} streaming calls: {total} samples of the serving "
             "thread while running or runnable; a sample in C code counts for the Python line "
             "that called it. µs per call = samples × sampling period / calls:", "",
             "| layer | samples | µs per call | share |", "|---|---:|---:|---:|"]
    for name, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {name} | {n} | {n * 1e6 / rate / calls:.0f} | {n / total:.0%} |")
    return "\n".join(lines)


def sample_server(args: argparse.Namespace, stream: Stream, log_path: Path) -> str:
    """Start our server, warm it up, sample ``--profile-streams`` streams with py-spy."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        return "note: py-spy is not installed (pip install py-spy); no sampling profile"
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"derender-stream-{os.getpid()}.spy"
    out.unlink(missing_ok=True)
    rate = 1000
    proc, url = start_ours(args.models_dir, args.port, log_path,
                           {"DERENDER_SIGNING_KEYS": SIGNING_KEYS})
    try:
        side = Side("derender (ours, sampled)", Client(url), "qwen3", Series("sampled"),
                    [[] for _ in stream.chunks])
        run_streams(stream, [side], 1, len(stream.chunks), False, "warm")
        sampler = subprocess.Popen([spy, "record", "-p", str(proc.pid), "-r", str(rate),
                                    "--nonblocking", "-f", "raw", "-o", str(out)],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        time.sleep(1.0)
        t0 = time.perf_counter()
        run_streams(stream, [side], args.profile_streams, len(stream.chunks), False, "spy")
        wall = time.perf_counter() - t0
        sampler.send_signal(signal.SIGINT)
        err, _ = sampler.communicate(timeout=60)
        side.client.close()
    finally:
        stop(proc)
    if not out.exists():
        return f"note: py-spy wrote nothing: {err.decode(errors='replace')[-500:]}"
    summary = next((ln for ln in err.decode(errors="replace").splitlines()
                    if "Samples:" in ln), "")
    errors = summary.split("Samples:", 1)[-1].strip() or "no summary"
    calls = args.profile_streams * len(stream.chunks)
    report = pyspy_report(out, calls, rate, f"py-spy: samples {errors}; "
                          f"{wall / calls * 1e3:.3f} ms per call while sampled")
    out.unlink(missing_ok=True)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm-url", default="http://127.0.0.1:8100",
                        help="vLLM 0.33 render server serving qwen3 (default %(default)s)")
    parser.add_argument("--vllm-model", default="qwen3", help="its served model name")
    parser.add_argument("--ours-url", default=None,
                        help="use our server already running here (it must use "
                             "DERENDER_SIGNING_KEYS=" + SIGNING_KEYS + " for the breakdown)")
    parser.add_argument("--port", type=int, default=8000,
                        help="port for our server (a free one is chosen if busy)")
    parser.add_argument("--models-dir", type=Path, default=REPO / "layers" / "tokenizers",
                        help="DERENDER_MODELS_DIR for our server (default %(default)s)")
    parser.add_argument("--chunks", type=int, default=500, help="chunks per stream")
    parser.add_argument("--per-chunk", type=int, default=1, help="ids per chunk")
    parser.add_argument("--streams", type=int, default=2, help="timed streams per server")
    parser.add_argument("--block", type=int, default=50,
                        help="consecutive chunks to one server before switching (ABBA order; "
                             "1 alternates call by call; default %(default)s)")
    parser.add_argument("--no-breakdown", action="store_true",
                        help="skip the in-process breakdown of our handler")
    parser.add_argument("--profile", action="store_true",
                        help="afterwards, cProfile our server process over --profile-streams "
                             "streams (a separate, untimed phase)")
    parser.add_argument("--sample", action="store_true",
                        help="afterwards, sample our server with py-spy (if installed) over "
                             "--profile-streams streams (a separate, untimed phase)")
    parser.add_argument("--profile-streams", type=int, default=4)
    args = parser.parse_args(argv)

    tokenizer = Tokenizer.from_file(str(args.models_dir / "qwen3" / "tokenizer.json"))
    ids = real_text_ids(tokenizer, args.chunks * args.per_chunk)
    prompt_ids: list[int] = tokenizer.encode(PROMPT_TEXT, add_special_tokens=False).ids
    stream = Stream(ids, args.per_chunk, prompt_ids)
    expected = tokenizer.decode(ids, skip_special_tokens=True)
    load_before = load_line()

    proc: subprocess.Popen[bytes] | None = None
    log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"derender-bench-{os.getpid()}.log"
    cpu_per_call = None
    try:
        if args.ours_url:
            ours_url = args.ours_url
            if not healthy(ours_url):
                raise SystemExit(f"no healthy server at {ours_url}")
            stack = "external server"
        else:
            proc, ours_url = start_ours(args.models_dir, args.port, log_path,
                                        {"DERENDER_SIGNING_KEYS": SIGNING_KEYS})
            stack = server_stack(sys.executable)
        have_vllm = healthy(args.vllm_url)
        if not have_vllm:
            note_no_vllm(args.vllm_url)

        positions = len(stream.chunks)
        sides = [Side("derender (ours)", Client(ours_url), "qwen3", Series("ours"),
                      [[] for _ in range(positions)])]
        if have_vllm:
            sides.append(Side("vLLM 0.33 render", Client(args.vllm_url), args.vllm_model,
                              Series("vllm"), [[] for _ in range(positions)]))

        # Sanity and warm-up: one whole untimed stream each; the texts must agree.
        run_streams(stream, sides, 1, args.block, False, "warmup")
        check_texts(sides, expected)
        print(f"sanity: {'identical' if have_vllm else 'ours only'}; each stream's text is "
              f"{len(expected)} characters ({positions} chunks)", file=sys.stderr)
        for side in sides:
            side.texts.clear()
            side.finishes.clear()

        cpu_before = cpu_seconds(proc.pid) if proc is not None else None
        run_streams(stream, sides, args.streams, args.block, True, "bench")
        if proc is not None and cpu_before is not None:
            cpu_per_call = (cpu_seconds(proc.pid) - cpu_before) / len(sides[0].series.samples)
        check_texts(sides, expected)

        health = [Series(f"{side.name} GET /health") for side in sides]
        timed([(h, lambda c=side.client: c.request("GET", "/health"))
               for h, side in zip(health, sides, strict=True)], 200, 20, args.block)
        for side in sides:
            side.client.close()
    finally:
        if proc is not None:
            stop(proc)

    profile_text = []
    if args.profile and not args.ours_url:
        profile_text.append(profile_server(args, stream, log_path))
    if args.sample and not args.ours_url:
        profile_text.append(sample_server(args, stream, log_path))
    log_path.unlink(missing_ok=True)  # kept only when the run failed

    print(f"machine: {machine_line()}; derender {revision()}")
    print(f"before: {load_before}; after: {load_line()}")
    print()
    print(f"Streaming chat derender, Qwen3: {args.streams} stream(s) of {positions} chunks of "
          f"{args.per_chunk} id(s) of real text per server ({len(sides[0].series.samples)} "
          f"timed calls each), each server carrying its own stream_state; interleaved in "
          f"ABBA blocks of {args.block} chunks, one keep-alive http.client connection each. "
          f"Our server: uvicorn, {stack}. Concatenated texts: "
          f"{'identical to each other and to tokenizers.decode' if have_vllm else 'ours only'}"
          f" ({len(expected)} characters).")
    print()
    print(f"| server | p50 ms | p90 ms | p99 ms | min ms | mean ms | p50 chunks 1–{EDGE} "
          f"| p50 last {EDGE} | max stream_state chars | GET /health p50 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for side, h in zip(sides, health, strict=True):
        st = side.series.stats()
        head = median([v for column in side.by_chunk[:EDGE] for v in column])
        tail = median([v for column in side.by_chunk[-EDGE:] for v in column])
        print(f"| {side.name} | {st['p50']:.3f} | {st['p90']:.3f} | {st['p99']:.3f} "
              f"| {st['min']:.3f} | {st['mean']:.3f} | {head:.3f} | {tail:.3f} "
              f"| {max(side.state_chars)} | {h.stats()['p50']:.3f} |")
        if side.client.reconnects:
            print(f"note: {side.client.reconnects} reconnects to {side.name}", file=sys.stderr)
    print()
    print("Client side (this benchmark's thread CPU per timed exchange, p50): " + "; ".join(
        f"{side.name} {median(side.client_cpu):.3f} ms" for side in sides) + ".")
    if cpu_per_call is not None:
        print(f"Our server process used {cpu_per_call * 1e3:.3f} ms of CPU per call "
              "(user + system from /proc, mean over the timed streams).")
    if len(sides) == 2:
        a, b = sides[0].series.stats(), sides[1].series.stats()
        ratio = a["p50"] / b["p50"]
        print()
        print(f"ours/vLLM: p50 {ratio:.2f}×, p99 {a['p99'] / b['p99']:.2f}× "
              f"(target p50 ≤ {TARGET_RATIO:g}×: "
              + ("met" if ratio <= TARGET_RATIO
                 else f"MISSED, {ratio / TARGET_RATIO:.2f}× the target") + ")")
    if not args.no_breakdown:
        text, p50 = breakdown(args.models_dir, stream, min(positions - 2, 250), 3000)
        ours = sides[0].series.stats()["p50"]
        client = median(sides[0].client_cpu)

        def step(prefix: str) -> float:
            return p50[next(k for k in p50 if k.startswith(prefix))]

        asgi, handler = step("ASGI app in process: POST"), step("handler work")
        parts = {"json": step("json.loads") + step("json_response"),
                 "pydantic": step("pydantic"),
                 "state": step("verify") + step("encode_state"),
                 "core": step("derender_chat_stream")}
        print()
        print(text)
        print()
        print(f"Layers of our HTTP p50 ({ours:.3f} ms), by subtraction of medians:")
        print()
        print("| layer | ms | share of our HTTP p50 |")
        print("|---|---:|---:|")
        for label, value in (
            ("client side: http.client + its socket syscalls (bench thread CPU per call)",
             client),
            ("uvicorn + uvloop/httptools + loopback + wake-ups (HTTP p50 − ASGI in process − "
             "client side)", ours - asgi - client),
            ("FastAPI + Starlette: routing, Request, body read (ASGI in process − handler "
             "work)", asgi - handler),
            ("json.loads of the body + json_response", parts["json"]),
            ("pydantic validation", parts["pydantic"]),
            ("stream_state: verify + decode_state + encode_state + sign", parts["state"]),
            ("core: derender_chat_stream", parts["core"]),
            ("rest of the handler (handler work − the steps above)",
             handler - sum(parts.values())),
        ):
            print(f"| {label} | {value:.3f} | {value / ours:.0%} |")
    for text in profile_text:
        print()
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
