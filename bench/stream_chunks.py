"""Streaming core cost per chunk, and stream_state size, along a 4k-token Qwen3 chat stream.

A chat stream of 4096 ids of real text (``bench/corpus.txt`` encoded with the Qwen3
tokenizer, repeated as needed) is derendered chunk by chunk, at 1 and at 16 tokens per chunk,
through the same steps the HTTP handler runs for a streaming call, without HTTP or JSON:

  verify + decode   ``decode_state(verify(ring, body.stream_state, ...))``
  derender          ``derender_chat_stream(body, model, state, ttl)``
  encode + sign     ``sign(ring, encode_state(next_state))``

The request bodies (``DerenderChatStreamRequest``, carrying the previous call's token) are
validated before timing. Each measured chunk is replayed many times with the state the
stream had at that position (legal and deterministic: the same chunk with the same state
gives the same bytes; the script checks it). All positions of both streams are timed in one
loop, in rotating order, so machine noise hits them alike; figures are medians, gc disabled.

Positions: chunks 10, 1,000 and 4,000 of the 1-token stream (4096 chunks). The 16-token
stream has only 256 chunks, so it is measured at chunks 10, 100 and 250 (a 64k-id stream
would exceed Qwen3's max_model_len of 40,960). Chunks are numbered from 1.

Targets: per-chunk cost flat along the stream (last position / chunk 10 ≤ 1.2×), and the
largest ``stream_state`` ≤ 200 base64 characters, not growing with the stream's length.

    python bench/stream_chunks.py                 # default rounds
    python bench/stream_chunks.py --scale 0.2     # quicker
    python bench/stream_chunks.py --profile       # also cProfile the last position's call
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import (
    REPO,
    load_line,
    machine_line,
    median,
    real_text_ids,
    revision,
    time_interleaved,
)
from tokenizers import Tokenizer

from derender.contract.requests import DerenderChatStreamRequest
from derender.core.chat import derender_chat_stream
from derender.core.registry import ServedModel, load_vocabulary, read_model_info
from derender.core.state.stream import decode_state, encode_state
from derender.core.state.token import KeyRing, sign, verify
from derender.settings import Settings

MODEL_DIR = REPO / "layers" / "tokenizers" / "qwen3"
STREAM_IDS = 4096
PROMPT_TEXT = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
POSITIONS = {1: (10, 1000, 4000), 16: (10, 100, 250)}
"""Chunk numbers (from 1) measured for each tokens-per-chunk setting."""
ROUNDS = 20000
"""Rounds at ``--scale 1``; each round times every position once."""
TARGET_FLAT = 1.2
TARGET_STATE_CHARS = 200
EDGE = 100
TTL_SECONDS = 3600
MAX_STATE_CHARS = Settings.max_state_chars
"""The service's default cap (xlam2: a held text of 4,096 bytes of UTF-8 outgrows 4,096)."""
WARMUP = 200
RING = KeyRing(current="k", keys={"k": b"0" * 32})


@dataclass
class Stream:
    """One stream split into chunks, run once through the whole per-call path."""

    per_chunk: int
    bodies: list[DerenderChatStreamRequest]
    token_chars: list[int]
    """Base64 characters of the stream_state each call returned."""
    text: str


@dataclass
class Position:
    """One chunk of one stream, ready to replay."""

    per_chunk: int
    chunk: int
    ids_before: int
    piece: str
    body: DerenderChatStreamRequest
    samples: list[list[float]] = field(default_factory=lambda: [[], [], [], []])
    """ns of: verify + decode, derender, encode + sign, total."""
    passes: list[float] = field(default_factory=list)
    """Median total ns per pass."""

    def med(self, index: int) -> float:
        return median(self.samples[index])


def chunk_body(chunk_ids: list[int], finish: str | None, prompt_ids: list[int],
               token: str | None) -> DerenderChatStreamRequest:
    data: dict[str, Any] = {
        "stream": True, "model": "qwen3",
        "generate_chunk": {"request_id": "b1", "choices": [
            {"index": 0, "token_ids": chunk_ids, "finish_reason": finish}]},
        "prompt_token_ids": prompt_ids, "prompt_tokens": len(prompt_ids),
        "chat_request": {"model": "qwen3", "messages": [{"role": "user", "content": "hi"}]},
    }
    if token is not None:
        data["stream_state"] = token
    return DerenderChatStreamRequest.model_validate(data)


def call(body: DerenderChatStreamRequest, model: ServedModel) -> tuple[dict[str, Any], str]:
    """The handler's streaming steps: verify + decode, derender, encode + sign."""
    state = None
    if body.stream_state is not None:
        state = decode_state(verify(RING, body.stream_state, MAX_STATE_CHARS))
    chunks, after = derender_chat_stream(body, model, state, TTL_SECONDS)
    return chunks[0], sign(RING, encode_state(after))


def run_stream(model: ServedModel, ids: list[int], prompt_ids: list[int],
               per_chunk: int) -> Stream:
    """Derender the whole stream once, call after call, keeping every body and token size."""
    bodies: list[DerenderChatStreamRequest] = []
    sizes: list[int] = []
    parts: list[str] = []
    token: str | None = None
    for start in range(0, len(ids), per_chunk):
        last = start + per_chunk >= len(ids)
        body = chunk_body(ids[start:start + per_chunk], "length" if last else None,
                          prompt_ids, token)
        chunk, token = call(body, model)
        bodies.append(body)
        sizes.append(len(token))
        parts.append(chunk["choices"][0]["delta"]["content"] or "")
    return Stream(per_chunk, bodies, sizes, "".join(parts))


def make_step(position: Position, model: ServedModel) -> Callable[[], tuple[int, int, int]]:
    body = position.body
    clock = time.perf_counter_ns

    def step() -> tuple[int, int, int]:
        t0 = clock()
        state = decode_state(verify(RING, body.stream_state, MAX_STATE_CHARS))
        t1 = clock()
        _, after = derender_chat_stream(body, model, state, TTL_SECONDS)
        t2 = clock()
        sign(RING, encode_state(after))
        t3 = clock()
        return t1 - t0, t2 - t1, t3 - t2

    return step


def time_passes(positions: list[Position], model: ServedModel, rounds: int, passes: int,
                label: str, load_before: str) -> None:
    """Time every position over ``passes`` passes of ``rounds`` rounds, then print the
    machine and load lines."""
    steps = [make_step(p, model) for p in positions]
    for number in range(passes):
        time_positions(positions, steps, rounds)
        print(f"  {label} {number + 1}/{passes} done", file=sys.stderr)
    print(f"machine: {machine_line()}; derender {revision()}")
    print(f"before: {load_before}; after: {load_line()}")
    print()


def time_positions(positions: list[Position], steps: list[Callable[[], tuple[int, int, int]]],
                   rounds: int) -> None:
    """One pass: ``rounds`` rounds, every position once per round, in rotating order."""
    for _ in range(WARMUP):
        for f in steps:
            f()
    order = list(range(len(steps)))
    pass_samples: list[list[int]] = [[] for _ in steps]
    gc.collect()
    gc.disable()
    try:
        for r in range(rounds):
            shift = r % len(order)
            for index in order[shift:] + order[:shift]:
                a, b, c = steps[index]()
                samples = positions[index].samples
                samples[0].append(a)
                samples[1].append(b)
                samples[2].append(c)
                samples[3].append(a + b + c)
                pass_samples[index].append(a + b + c)
    finally:
        gc.enable()
    for position, column in zip(positions, pass_samples, strict=True):
        position.passes.append(median([float(v) for v in column]))


def stage_breakdown(position: Position, model: ServedModel, rounds: int) -> str:
    """Median µs of the pieces one streaming call is made of (some are private helpers)."""
    from derender.core.chat import chat_top_logprobs
    from derender.core.decoding.sequence import decode_settings
    from derender.core.streaming import StreamSettings, advance, open_stream, stream_chunks

    body = position.body
    token = body.stream_state
    payload = verify(RING, token, MAX_STATE_CHARS)
    state = decode_state(payload)
    settings = StreamSettings("chat", model, decode_settings(body.chat_request),
                              chat_top_logprobs(body.chat_request), TTL_SECONDS,
                              request=body.chat_request)
    chunk = body.generate_chunk
    choice = chunk.choices[0]
    _, after = derender_chat_stream(body, model, state, TTL_SECONDS)
    encoded = encode_state(after)
    ids = list(choice.token_ids or [])
    stages: list[tuple[str, Callable[[], object]]] = [
        ("whole call: verify + decode, derender, encode + sign",
         lambda: sign(RING, encode_state(derender_chat_stream(
             body, model, decode_state(verify(RING, token, MAX_STATE_CHARS)),
             TTL_SECONDS)[1]))),
        ("verify (base64 decode, canonical re-encode, HMAC-SHA256)",
         lambda: verify(RING, token, MAX_STATE_CHARS)),
        ("decode_state (Python varint reader)", lambda: decode_state(payload)),
        ("derender_chat_stream (all of it)",
         lambda: derender_chat_stream(body, model, state, TTL_SECONDS)),
        ("  StreamSettings: decode_settings + chat_top_logprobs + request digest",
         lambda: StreamSettings("chat", model, decode_settings(body.chat_request),
                                chat_top_logprobs(body.chat_request), TTL_SECONDS,
                                request=body.chat_request)),
        ("  stream_chunks(body) (getattr of an absent field on a pydantic model)",
         lambda: stream_chunks(body)),
        ("  open_stream (binding: request digest + request id, checks)",
         lambda: open_stream(settings, state, chunk, body.prompt_token_ids)),
        ("  advance (checks, stop token, detokenize, hold-back, new state)",
         lambda: advance(settings, state, choice)),
        ("    detokenize alone", lambda: detokenize_ids(model, state, ids)),
        ("encode_state (Python varint writer)", lambda: encode_state(after)),
        ("sign (HMAC-SHA256, base64)", lambda: sign(RING, encoded)),
    ]
    columns = time_interleaved([f for _, f in stages], rounds, WARMUP)
    lines = [f"Pieces of one call, {position.per_chunk} token(s)/chunk, chunk {position.chunk} "
             f"(median µs, {rounds} rounds, interleaved; ↳ rows are parts of the row "
             "above them):", "", "| piece | µs |", "|---|---:|"]
    for (label, _), column in zip(stages, columns, strict=True):
        depth = (len(label) - len(label.lstrip(" "))) // 2
        lines.append(f"| {'↳ ' * depth}{label.strip()} "
                     f"| {median([float(v) for v in column]) / 1e3:.1f} |")
    return "\n".join(lines)


def detokenize_ids(model: ServedModel, state: Any, ids: list[int]) -> object:
    from derender.core.decoding.detokenizer import detokenize

    return detokenize(model.vocab, state.window, ids, True)


def profile_step(position: Position, model: ServedModel, calls: int) -> str:
    step = make_step(position, model)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        step()
    profiler.disable()
    parts = []
    for order, restrict in (("tottime", 18), ("cumulative", 24)):
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out).sort_stats(order)
        if order == "cumulative":
            stats.print_stats("derender|hmac|base64|hashlib|dataclasses", restrict)
        else:
            stats.print_stats(restrict)
        text = out.getvalue()
        parts.append(f"sorted by {order}:\n\n```\n{text[text.find('   ncalls'):].rstrip()}"
                     "\n```")
    return (f"cProfile of {calls} × one streaming call (verify+decode, derender, encode+sign), "
            f"{position.per_chunk} token(s)/chunk, chunk {position.chunk}, "
            + "\n\n".join(parts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR,
                        help="Qwen3 model folder (default %(default)s)")
    parser.add_argument("--passes", type=int, default=3, help="passes (default 3)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help=f"multiply the {ROUNDS} rounds per pass (default 1.0)")
    parser.add_argument("--profile", action="store_true",
                        help="also cProfile the call at each stream's last measured position")
    args = parser.parse_args(argv)

    tokenizer = Tokenizer.from_file(str(args.model_dir / "tokenizer.json"))
    model = ServedModel(info=read_model_info(args.model_dir),
                        vocab=load_vocabulary(args.model_dir))
    ids = real_text_ids(tokenizer, STREAM_IDS)
    prompt_ids: list[int] = tokenizer.encode(PROMPT_TEXT, add_special_tokens=False).ids
    expected = tokenizer.decode(ids, skip_special_tokens=True)
    load_before = load_line()

    streams = [run_stream(model, ids, prompt_ids, k) for k in POSITIONS]
    positions: list[Position] = []
    for stream in streams:
        # Sanity: the concatenated stream is the plain decode of all ids.
        if stream.text != expected:
            raise SystemExit(f"{stream.per_chunk} token(s)/chunk: the concatenated stream "
                             "differs from tokenizers.decode of the same ids")
        for number in POSITIONS[stream.per_chunk]:
            body = stream.bodies[number - 1]
            start = (number - 1) * stream.per_chunk
            # Sanity: replaying a chunk with its state is deterministic.
            if call(body, model) != call(body, model):
                raise SystemExit(f"chunk {number}: replay is not deterministic")
            positions.append(Position(stream.per_chunk, number, start,
                                      tokenizer.decode(ids[start:start + stream.per_chunk]),
                                      body))

    rounds = max(100, int(ROUNDS * args.scale))
    time_passes(positions, model, rounds, args.passes, "pass", load_before)
    print(f"Qwen3 chat stream of {STREAM_IDS} ids of real text, prompt of {len(prompt_ids)} "
          f"ids; {rounds} rounds × {args.passes} passes, all positions interleaved; medians "
          "in µs (gc disabled while timing).")
    print()
    print("| tokens/chunk | chunk | ids before it | chunk text | verify+decode µs "
          "| derender µs | encode+sign µs | total µs | total / chunk 10 | per pass |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    verdicts: list[str] = []
    for per_chunk in POSITIONS:
        group = [p for p in positions if p.per_chunk == per_chunk]
        first = group[0]
        for p in group:
            per_pass = [a / b for a, b in zip(p.passes, first.passes, strict=True)]
            print(f"| {p.per_chunk} | {p.chunk} | {p.ids_before} | `{p.piece!r}`"
                  f" | {p.med(0) / 1e3:.2f} | {p.med(1) / 1e3:.2f} | {p.med(2) / 1e3:.2f}"
                  f" | {p.med(3) / 1e3:.2f} | {p.med(3) / first.med(3):.2f}×"
                  f" | {min(per_pass):.2f}–{max(per_pass):.2f}× |")
        last = group[-1]
        ratio = last.med(3) / first.med(3)
        verdicts.append(
            f"- {per_chunk} token(s)/chunk: chunk {last.chunk} / chunk {first.chunk} = "
            f"{ratio:.2f}× → " + ("met" if ratio <= TARGET_FLAT else
                                  f"MISSED ({ratio / TARGET_FLAT:.2f}× the target)"))
    print()
    print(f"Target: flat, last position / chunk 10 ≤ {TARGET_FLAT:g}×.")
    print("\n".join(verdicts))

    print()
    print("| tokens/chunk | chunks | max stream_state chars, first 100 chunks "
          "| max, last 100 chunks | max, whole stream | target |")
    print("|---:|---:|---:|---:|---:|---|")
    for stream in streams:
        sizes = stream.token_chars
        top = max(sizes)
        print(f"| {stream.per_chunk} | {len(sizes)} | {max(sizes[:EDGE])} | {max(sizes[-EDGE:])}"
              f" | {top} | ≤ {TARGET_STATE_CHARS}: "
              + ("met" if top <= TARGET_STATE_CHARS else "MISSED") + " |")
    print()
    print("stream_state: base64url characters of the token each call returns; the largest "
          "must not grow with the stream's length.")

    if args.profile:
        for per_chunk in POSITIONS:
            last = [p for p in positions if p.per_chunk == per_chunk][-1]
            print()
            print(stage_breakdown(last, model, max(2000, rounds // 2)))
            print()
            print(profile_step(last, model, max(2000, rounds // 2)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
