"""Streaming with the reasoning and tool-call parsers: core cost per chunk, stream_state size,
and HTTP latency per chunk against vLLM 0.33's parser server.

The stream is a 4096-id Qwen3 output, 1 id per chunk, as a thinking model writes a tool call:

  <think> (151667) + ~3,600 ids of reasoning (``bench/corpus.txt``) + </think> (151668)
  + "\\n\\n" + <tool_call> (151657)
  + '\\n{"name": "get_weather", "arguments": {"city": "Lisbon", "notes": "<corpus text>"}}\\n'
  + </tool_call> (151658) + <|im_end|> (EOS 151645, finish_reason "stop" on that last chunk)

served from a model folder whose ``derender.json`` names the parsers (``reasoning_parser``
"qwen3", ``tool_parser`` "hermes"); the script builds it in a temporary directory (symlinks to
``layers/tokenizers/qwen3``). Every call carries the 9-id prompt in ``prompt_token_ids`` and a
``chat_request`` with a ``get_weather`` tool, as the parser path requires.

(a) Core, as ``bench/stream_chunks.py`` does it: verify + decode, ``derender_chat_stream``,
    encode + sign, each measured chunk replayed with the state the stream had there; chunks
    10, 1,000 (reasoning) and 4,000 (tool-call arguments), interleaved, medians, gc off.
    Target: flat, chunk 4,000 / chunk 10 ≤ 1.2×.
(b) The largest ``stream_state`` over the whole stream, in base64 characters. Target ≤ 600.
(c) HTTP, our server (started here) against vLLM's (``--vllm-url``, started with
    ``start.sh qwen3 8101 --reasoning-parser qwen3 --tool-call-parser hermes
    --enable-auto-tool-choice``). One full stream per server first checks that the folded
    outputs agree (reasoning text equal, tool-call name equal, arguments equal as parsed JSON;
    vLLM's stream also emits the "\\n\\n" before the call as content, ours does not). Then
    chunks 10, 1,000 and 4,000 are each replayed ``--calls`` times per server with the state
    that server returned for the chunk before (for vLLM its JSON state, echoed verbatim), in
    ABBA blocks of ``--block`` calls; p50 per position. Target: ours ≥ 20× faster than vLLM
    at chunk 1,000.

    python bench/parser_stream.py                 # everything (vLLM expected on :8101)
    python bench/parser_stream.py --no-http       # core and state size only
    python bench/parser_stream.py --no-core --no-vllm --calls 1000 --block 50   # ours alone
    python bench/parser_stream.py --profile       # + pieces and cProfile of chunk 4,000
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import (
    CORPUS,
    REPO,
    load_line,
    machine_line,
    median,
    real_text_ids,
    revision,
    time_interleaved,
)
from http_latency import (
    CHAT_PATH,
    Client,
    Series,
    healthy,
    server_stack,
    start_ours,
    stop,
    timed,
)
from stream_chunks import (
    MAX_STATE_CHARS,
    RING,
    TTL_SECONDS,
    Position,
    call,
    make_step,
    profile_step,
    time_passes,
)
from tokenizers import Tokenizer

from derender.contract.requests import DerenderChatRequest, DerenderChatStreamRequest
from derender.core.chat import derender_chat
from derender.core.registry import ServedModel, load_vocabulary, read_model_info

QWEN3_DIR = REPO / "layers" / "tokenizers" / "qwen3"
MANIFEST = {"served_names": ["qwen3"], "reasoning_parser": "qwen3", "tool_parser": "hermes"}
THINK, END_THINK, TOOL_CALL, END_TOOL_CALL, EOS = 151667, 151668, 151657, 151658, 151645
STREAM_IDS = 4096
CALL_IDS = 480
"""Ids the tool call's text should reach at least (the notes grow paragraph by paragraph)."""
CITY = "Lisbon"
PROMPT_TEXT = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "notes": {"type": "string"}}, "required": ["city"]}}}]
POSITIONS = (10, 1000, 4000)
"""Chunk numbers (from 1) measured; 1 id per chunk."""
ROUNDS = 20000
"""Core rounds at ``--scale 1``; each round times every position once."""
TARGET_FLAT = 1.2
TARGET_STATE_CHARS = 600
TARGET_SPEEDUP = 20.0
TARGET_POSITION = 1000
EDGE = 100
WINDOW = 100
"""Chunks per window of the full-stream latency profile."""
SIGNING_KEYS = "bench:0123456789abcdef0123456789abcdef"


# ------------------------------------------------------------------------ the stream


@dataclass
class Output:
    """The stream's ids and what a parser should make of them."""

    ids: list[int]
    prompt_ids: list[int]
    reasoning: str
    arguments: dict[str, Any]
    reasoning_ids: int
    call_start: int
    """Index of the <tool_call> id."""

    def phase(self, chunk: int) -> str:
        """What the id of chunk ``chunk`` (from 1) is part of."""
        index = chunk - 1
        if index == 0:
            return "`<think>`"
        if index <= self.reasoning_ids:
            return "reasoning"
        if index < self.call_start:
            return "`</think>`, blank line"
        if index >= len(self.ids) - 2:
            return "`</tool_call>`, EOS"
        return "tool call"


def notes_text(tokenizer: Tokenizer) -> str:
    """Corpus paragraphs from a third of the way in, enough for the call to span CALL_IDS."""
    paragraphs = [p.strip() for p in CORPUS.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    start = len(paragraphs) // 3
    chosen: list[str] = []
    for paragraph in paragraphs[start:] + paragraphs[:start]:
        chosen.append(paragraph)
        if len(tokenizer.encode(call_text("\n\n".join(chosen)), add_special_tokens=False).ids
               ) >= CALL_IDS:
            break
    return "\n\n".join(chosen)


def call_text(notes: str) -> str:
    arguments = {"city": CITY, "notes": notes}
    return "\n" + json.dumps({"name": "get_weather", "arguments": arguments},
                             ensure_ascii=False) + "\n"


def build_output(tokenizer: Tokenizer) -> Output:
    def encode(text: str) -> list[int]:
        return list(tokenizer.encode(text, add_special_tokens=False).ids)

    notes = notes_text(tokenizer)
    call_ids = encode(call_text(notes))
    blank = encode("\n\n")
    reasoning_ids = STREAM_IDS - 1 - 1 - len(blank) - 1 - len(call_ids) - 2
    reasoning = real_text_ids(tokenizer, reasoning_ids)
    ids = [THINK, *reasoning, END_THINK, *blank, TOOL_CALL, *call_ids, END_TOOL_CALL, EOS]
    if len(ids) != STREAM_IDS:
        raise RuntimeError(f"built {len(ids)} ids, not {STREAM_IDS}")
    # The pieces must decode to exactly the text they were made of (no merge across them).
    if tokenizer.decode(call_ids, skip_special_tokens=False) != call_text(notes):
        raise RuntimeError("the tool call's ids do not decode to its text")
    return Output(ids=ids, prompt_ids=encode(PROMPT_TEXT),
                  reasoning=tokenizer.decode(reasoning, skip_special_tokens=False),
                  arguments={"city": CITY, "notes": notes}, reasoning_ids=len(reasoning),
                  call_start=ids.index(TOOL_CALL))


def body_data(ids: list[int], finish: str | None, prompt_ids: list[int], state: Any
              ) -> dict[str, Any]:
    data: dict[str, Any] = {
        "stream": True, "model": "qwen3",
        "generate_chunk": {"request_id": "b1", "choices": [
            {"index": 0, "token_ids": ids, "finish_reason": finish}]},
        "prompt_token_ids": prompt_ids, "prompt_tokens": len(prompt_ids),
        "chat_request": {"model": "qwen3", "messages": [{"role": "user", "content": "hi"}],
                         "tools": TOOLS},
    }
    if state is not None:
        data["stream_state"] = state
    return data


@dataclass
class Folded:
    """A stream's chunks joined as a client would."""

    reasoning: str = ""
    content: str = ""
    calls: dict[int, list[str]] = field(default_factory=dict)
    finish: str | None = None

    def add(self, chunk: dict[str, Any]) -> None:
        for choice in chunk["choices"]:
            delta = choice["delta"]
            self.reasoning += delta.get("reasoning") or ""
            self.content += delta.get("content") or ""
            for call_delta in delta.get("tool_calls") or []:
                entry = self.calls.setdefault(call_delta["index"], ["", ""])
                function = call_delta.get("function") or {}
                entry[0] += function.get("name") or ""
                entry[1] += function.get("arguments") or ""
            self.finish = choice.get("finish_reason") or self.finish


def check_folded(name: str, folded: Folded, output: Output) -> None:
    """The folded stream is the reasoning and the one call the ids were made of."""
    problems = []
    if folded.reasoning != output.reasoning:
        problems.append("reasoning differs from the decoded reasoning ids")
    if sorted(folded.calls) != [0] or folded.calls[0][0] != "get_weather":
        problems.append(f"tool calls {sorted(folded.calls)}, names "
                        f"{[c[0] for c in folded.calls.values()]}")
    else:
        try:
            if json.loads(folded.calls[0][1]) != output.arguments:
                problems.append("arguments differ (as parsed JSON)")
        except json.JSONDecodeError as error:
            problems.append(f"arguments are not JSON: {error}")
    if folded.content.strip():
        problems.append(f"content {folded.content[:80]!r}")
    if folded.finish != "tool_calls":
        problems.append(f"finish_reason {folded.finish!r}")
    if problems:
        raise SystemExit(f"{name}: " + "; ".join(problems))


# ------------------------------------------------------------------------------ core


@dataclass
class CoreStream:
    bodies: list[DerenderChatStreamRequest]
    token_chars: list[int]
    folded: Folded


def run_core_stream(model: ServedModel, output: Output) -> CoreStream:
    """The whole stream through the handler's steps, call after call."""
    bodies: list[DerenderChatStreamRequest] = []
    sizes: list[int] = []
    folded = Folded()
    token: str | None = None
    for index, token_id in enumerate(output.ids):
        last = index == len(output.ids) - 1
        body = DerenderChatStreamRequest.model_validate(
            body_data([token_id], "stop" if last else None, output.prompt_ids, token))
        chunk, token = call(body, model)
        bodies.append(body)
        sizes.append(len(token))
        folded.add(chunk)
    return CoreStream(bodies, sizes, folded)


def non_streaming(model: ServedModel, output: Output) -> Folded:
    """The same ids through the non-streaming core, as a folded stream."""
    body = DerenderChatRequest.model_validate({
        "model": "qwen3",
        "generate_response": {"request_id": "b1", "prompt_token_ids": output.prompt_ids,
                              "choices": [{"index": 0, "token_ids": output.ids,
                                           "finish_reason": "stop"}]},
        "prompt_token_ids": output.prompt_ids, "prompt_tokens": len(output.prompt_ids),
        "chat_request": {"model": "qwen3", "messages": [{"role": "user", "content": "hi"}],
                         "tools": TOOLS},
    })
    message = derender_chat(body, model, 16)["choices"][0]
    folded = Folded(reasoning=message["message"]["reasoning"] or "",
                    content=message["message"]["content"] or "",
                    finish=message["finish_reason"])
    for index, tool_call in enumerate(message["message"].get("tool_calls") or []):
        folded.calls[index] = [tool_call["function"]["name"], tool_call["function"]["arguments"]]
    return folded


def core_breakdown(position: Position, model: ServedModel, rounds: int) -> str:
    """Median µs of the pieces one parser-path call is made of (some are private helpers)."""
    from derender.core import parsers
    from derender.core.chat import chat_top_logprobs, derender_chat_stream
    from derender.core.decoding.detokenizer import detokenize
    from derender.core.decoding.sequence import decode_settings
    from derender.core.state.stream import decode_state, encode_state
    from derender.core.state.token import sign, verify
    from derender.core.streaming import StreamSettings, advance, open_stream

    body = position.body
    token = body.stream_state
    request = body.chat_request
    assert token is not None and request is not None
    payload = verify(RING, token, MAX_STATE_CHARS)
    state = decode_state(payload)
    info = model.info
    # parser_settings gained a vocabulary argument (marker stand-ins); take either form.
    extra = ((model.vocab,) if len(inspect.signature(parsers.parser_settings).parameters) > 3
             else ())
    parser_args = (info.reasoning_parser, info.tool_parser, request, *extra)
    parsing = parsers.parser_settings(*parser_args)
    settings = StreamSettings("chat", model, decode_settings(request, info.has_parser),
                              chat_top_logprobs(request), TTL_SECONDS, parsing,
                              request=request)
    text_vocab = getattr(settings, "text_vocab", model.vocab)
    chunk = body.generate_chunk
    choice = chunk.choices[0]
    ids = list(choice.token_ids or [])
    text, _ = detokenize(text_vocab, state.window, ids, settings.decode.skip_special)
    parser_state = state.parser
    assert parser_state is not None
    _, after = derender_chat_stream(body, model, state, TTL_SECONDS)
    encoded = encode_state(after)
    stages: list[tuple[str, Callable[[], object]]] = [
        ("whole call: verify + decode, derender, encode + sign", make_step(position, model)),
        ("verify (base64 decode, canonical re-encode, HMAC-SHA256)",
         lambda: verify(RING, token, MAX_STATE_CHARS)),
        ("decode_state (varint reader, parser state included)", lambda: decode_state(payload)),
        ("derender_chat_stream (all of it)",
         lambda: derender_chat_stream(body, model, state, TTL_SECONDS)),
        ("  parser_settings (from chat_request: tools, tool_choice, template kwargs)",
         lambda: parsers.parser_settings(*parser_args)),
        ("  StreamSettings: decode_settings + chat_top_logprobs + request digest",
         lambda: StreamSettings("chat", model, decode_settings(request, info.has_parser),
                                chat_top_logprobs(request), TTL_SECONDS, parsing,
                                request=request)),
        ("  open_stream (binding: request digest + request id, SHA-256)",
         lambda: open_stream(settings, state, chunk, body.prompt_token_ids)),
        ("  advance (checks, detokenize, stop hold-back, parsers, new state)",
         lambda: advance(settings, state, choice)),
        ("    detokenize alone", lambda: detokenize(text_vocab, state.window, ids,
                                                     settings.decode.skip_special)),
        ("    parsers.feed alone (reasoning split, then hermes)",
         lambda: parsers.feed(parsing, parser_state, text, final=False)),
        ("encode_state (varint writer, parser state included)", lambda: encode_state(after)),
        ("sign (HMAC-SHA256, base64)", lambda: sign(RING, encoded)),
    ]
    columns = time_interleaved([f for _, f in stages], rounds, 200)
    lines = [f"Pieces of one call, chunk {position.chunk} ({position.piece!r}; median µs, "
             f"{rounds} rounds, interleaved; ↳ rows are parts of the row above them):", "",
             "| piece | µs |", "|---|---:|"]
    for (label, _), column in zip(stages, columns, strict=True):
        depth = (len(label) - len(label.lstrip(" "))) // 2
        lines.append(f"| {'↳ ' * depth}{label.strip()} "
                     f"| {median([float(v) for v in column]) / 1e3:.1f} |")
    return "\n".join(lines)


def run_core(args: argparse.Namespace, model_dir: Path, tokenizer: Tokenizer,
             output: Output) -> bool:
    model = ServedModel(info=read_model_info(model_dir), vocab=load_vocabulary(model_dir))
    if not model.info.has_parser:
        raise SystemExit(f"{model_dir}: derender.json names no parser")
    load_before = load_line()
    stream = run_core_stream(model, output)
    check_folded("core stream", stream.folded, output)
    whole = non_streaming(model, output)
    check_folded("core non-streaming", whole, output)
    positions: list[Position] = []
    for number in POSITIONS:
        body = stream.bodies[number - 1]
        if call(body, model) != call(body, model):
            raise SystemExit(f"chunk {number}: replay is not deterministic")
        positions.append(Position(1, number, number - 1,
                                  tokenizer.decode(output.ids[number - 1:number],
                                                   skip_special_tokens=False), body))
    rounds = max(100, int(ROUNDS * args.scale))
    time_passes(positions, model, rounds, args.passes, "core pass", load_before)
    print(f"(a) Core. Qwen3 parser stream of {STREAM_IDS} ids, 1 id per chunk: `<think>`, "
          f"{output.reasoning_ids} ids of reasoning, `</think>`, blank line, a hermes call of "
          f"{len(output.ids) - output.call_start - 1} ids, EOS (finish \"stop\"); prompt of "
          f"{len(output.prompt_ids)} ids; {rounds} rounds × {args.passes} passes, positions "
          "interleaved; medians in µs (gc disabled while timing). Checked: the folded stream "
          "and the non-streaming derender_chat both give the reasoning text, one "
          "`get_weather` call with the arguments built, no content, finish_reason "
          "\"tool_calls\".")
    print()
    print("| chunk | ids before it | part of | chunk text | verify+decode µs | derender µs "
          "| encode+sign µs | total µs | total / chunk 10 | per pass |")
    print("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|")
    first = positions[0]
    for p in positions:
        per_pass = [a / b for a, b in zip(p.passes, first.passes, strict=True)]
        print(f"| {p.chunk} | {p.ids_before} | {output.phase(p.chunk)} | `{p.piece!r}`"
              f" | {p.med(0) / 1e3:.2f} | {p.med(1) / 1e3:.2f} | {p.med(2) / 1e3:.2f}"
              f" | {p.med(3) / 1e3:.2f} | {p.med(3) / first.med(3):.2f}×"
              f" | {min(per_pass):.2f}–{max(per_pass):.2f}× |")
    last = positions[-1]
    ratio = last.med(3) / first.med(3)
    flat_ok = ratio <= TARGET_FLAT
    print()
    print(f"Target: flat, chunk {last.chunk} / chunk {first.chunk} ≤ {TARGET_FLAT:g}×: "
          f"{ratio:.2f}× → " + ("met" if flat_ok else
                                f"MISSED ({ratio / TARGET_FLAT:.2f}× the target)"))

    sizes = stream.token_chars
    top = max(sizes)
    at = sizes.index(top) + 1
    state_ok = top <= TARGET_STATE_CHARS
    print()
    print("(b) stream_state (base64url characters of the token each call returns):")
    print()
    print("| chunks | max, first 100 chunks | max, last 100 chunks | max, whole stream "
          "| where the max is | target |")
    print("|---:|---:|---:|---:|---|---|")
    print(f"| {len(sizes)} | {max(sizes[:EDGE])} | {max(sizes[-EDGE:])} | {top} "
          f"| chunk {at} ({output.phase(at)}) | ≤ {TARGET_STATE_CHARS}: "
          + ("met" if state_ok else "MISSED") + " |")

    if args.profile:
        print()
        print(core_breakdown(last, model, max(2000, rounds // 2)))
        print()
        print(profile_step(last, model, max(2000, rounds // 2)))
    return flat_ok and state_ok


# ------------------------------------------------------------------------------ HTTP


@dataclass
class Side:
    name: str
    client: Client
    by_chunk: list[float] = field(default_factory=list)
    """Latency (ms) of each chunk of the checked full stream."""
    state_chars: list[int] = field(default_factory=list)
    folded: Folded = field(default_factory=Folded)
    replay: dict[int, tuple[bytes, dict[str, Any]]] = field(default_factory=dict)
    """Chunk number → (its body with the state before it, the chunk it answered)."""


def state_chars(state: Any) -> int:
    return len(state) if isinstance(state, str) else len(json.dumps(state, separators=(",", ":")))


def full_stream(sides: list[Side], output: Output, block: int) -> None:
    """One whole stream per server in lockstep, ABBA blocks of ``block`` chunks; keeps the
    bodies of the measured chunks and times every exchange (one sample per chunk)."""
    states: list[Any] = [None for _ in sides]
    total = len(output.ids)
    started = time.monotonic()
    for round_number, start in enumerate(range(0, total, block)):
        order = list(range(len(sides)))
        for s in (order if round_number % 2 == 0 else order[::-1]):
            side = sides[s]
            for index in range(start, min(start + block, total)):
                last = index == total - 1
                data = json.dumps(body_data([output.ids[index]], "stop" if last else None,
                                            output.prompt_ids, states[s]),
                                  separators=(",", ":")).encode()
                t0 = time.perf_counter_ns()
                status, raw = side.client.request("POST", CHAT_PATH, data)
                side.by_chunk.append((time.perf_counter_ns() - t0) / 1e6)
                if status != 200:
                    raise SystemExit(f"{side.name}: chunk {index + 1} answered {status}: "
                                     f"{raw[:500]!r}")
                answer = json.loads(raw)
                if index + 1 in POSITIONS:
                    side.replay[index + 1] = (data, answer["chunk"])
                states[s] = answer["stream_state"]
                side.state_chars.append(state_chars(states[s]))
                side.folded.add(answer["chunk"])
        if round_number % 10 == 9:
            print(f"  full stream: {min(start + block, total)}/{total} chunks, "
                  f"{time.monotonic() - started:.0f} s", file=sys.stderr)


def comparable_chunk(chunk: dict[str, Any]) -> Any:
    """A chunk's choices without the tool-call id (vLLM draws it at random)."""
    choices = json.loads(json.dumps(chunk["choices"]))
    for choice in choices:
        for call_delta in choice["delta"].get("tool_calls") or []:
            call_delta.pop("id", None)
    return choices


def replayer(client: Client, data: bytes, answers: list[tuple[int, bytes]]
             ) -> Callable[[], object]:
    """One timed exchange; the answer is kept (outside the clock's concern: an append)."""
    def replay() -> None:
        answers.append(client.request("POST", CHAT_PATH, data))
    return replay


def run_http(args: argparse.Namespace, models_dir: Path, output: Output) -> bool | None:
    load_before = load_line()
    log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"derender-bench-{os.getpid()}.log"
    proc: subprocess.Popen[bytes] | None = None
    have_vllm = not args.no_vllm and healthy(args.vllm_url)
    if not have_vllm and not args.no_vllm:
        print(f"note: vLLM not reachable at {args.vllm_url}/health; measuring our server "
              "only (start it with the peer's `start.sh qwen3 8101 --reasoning-parser qwen3 "
              "--tool-call-parser hermes --enable-auto-tool-choice`)", file=sys.stderr)
    try:
        proc, url = start_ours(models_dir, args.port, log_path,
                               {"DERENDER_SIGNING_KEYS": SIGNING_KEYS})
        sides = [Side("derender (ours)", Client(url))]
        if have_vllm:
            sides.append(Side("vLLM 0.33 render, parsers", Client(args.vllm_url)))

        full_stream(sides, output, args.stream_block)
        for side in sides:
            check_folded(side.name, side.folded, output)
        if have_vllm:
            a, b = sides[0].folded, sides[1].folded
            if (a.reasoning != b.reasoning or a.calls[0][0] != b.calls[0][0]
                    or json.loads(a.calls[0][1]) != json.loads(b.calls[0][1])):
                raise SystemExit("the servers' folded outputs disagree; not timing")
        contents = "; ".join(f"{side.name} content {side.folded.content!r}" for side in sides)
        print(f"sanity: folded outputs agree ({len(output.reasoning)} characters of reasoning, "
              f"one get_weather call, arguments equal as JSON); {contents}", file=sys.stderr)

        series: list[tuple[Side, int, Series, list[tuple[int, bytes]]]] = []
        for number in POSITIONS:
            for side in sides:
                series.append((side, number, Series(f"{side.name} chunk {number}"), []))
        calls = [(s, replayer(side.client, side.replay[n][0], answers))
                 for side, n, s, answers in series]
        timed(calls, args.calls, 3, args.block)
        for side, number, _, answers in series:
            expected = comparable_chunk(side.replay[number][1])
            for status, raw in answers:
                if status != 200 or comparable_chunk(json.loads(raw)["chunk"]) != expected:
                    raise SystemExit(f"{side.name}: a replay of chunk {number} answered "
                                     f"{status} with a different chunk: {raw[:300]!r}")
        for side in sides:
            side.client.close()
    finally:
        if proc is not None:
            stop(proc)
    log_path.unlink(missing_ok=True)

    print()
    print(f"before: {load_before}; after: {load_line()}")
    print()
    print(f"(c) HTTP. Each chunk replayed {args.calls} times per server with the state that "
          f"server returned for the chunk before, all positions and servers interleaved in "
          f"ABBA blocks of {args.block} calls; one keep-alive http.client connection each. Our "
          f"server: uvicorn, {server_stack(sys.executable)}. Checked first on one full stream "
          "per server: reasoning equal, tool call name equal, arguments equal as JSON; every "
          "replay answered the same chunk (tool-call ids aside).")
    print()
    header = "| chunk | part of | " + " | ".join(
        f"{side.name} p50 ms | p90 ms | state chars" for side in sides)
    if have_vllm:
        header += " | ours / vLLM p50 | vLLM / ours p50"
    print(header + " |")
    print("|---:|---|" + "---:|---:|---:|" * len(sides) + ("---:|---:|" if have_vllm else ""))
    speedups: dict[int, float] = {}
    for number in POSITIONS:
        row = [s for side, n, s, _ in series if n == number]
        cells = []
        for side, s in zip(sides, row, strict=True):
            st = s.stats()
            cells.append(f"{st['p50']:.3f} | {st['p90']:.3f} "
                         f"| {side.state_chars[number - 2] if number > 1 else 0}")
        line = f"| {number} | {output.phase(number)} | " + " | ".join(cells)
        if have_vllm:
            ours, theirs = row[0].stats()["p50"], row[1].stats()["p50"]
            speedups[number] = theirs / ours
            line += f" | {ours / theirs:.3f}× | {theirs / ours:.1f}×"
        print(line + " |")
    print()
    print("state chars: the stream_state each server was sent with that chunk (ours: the "
          "base64url token; vLLM's: its JSON object, compact).")

    print()
    print(f"Latency along the checked full stream (one sample per chunk, servers in lockstep, "
          f"ABBA blocks of {args.stream_block} chunks), p50 ms per window of {WINDOW} chunks:")
    print()
    windows = [(1, WINDOW), (951, 951 + WINDOW - 1), (1951, 1951 + WINDOW - 1),
               (2951, 2951 + WINDOW - 1), (STREAM_IDS - WINDOW + 1, STREAM_IDS)]
    print("| chunks | " + " | ".join(f"{side.name} p50 ms" for side in sides) + " |")
    print("|---|" + "---:|" * len(sides))
    for lo, hi in windows:
        print(f"| {lo}–{hi} | " + " | ".join(
            f"{median(side.by_chunk[lo - 1:hi]):.3f}" for side in sides) + " |")
    if not have_vllm:
        return None
    speedup = speedups[TARGET_POSITION]
    ok = speedup >= TARGET_SPEEDUP
    print()
    print(f"Target: ours ≥ {TARGET_SPEEDUP:g}× faster than vLLM at chunk {TARGET_POSITION} "
          f"(p50): {speedup:.1f}× → " + ("met" if ok else "MISSED"))
    return ok


def make_models_dir(root: Path) -> Path:
    """A models folder whose qwen3 folder is the embedded one plus a parser manifest."""
    folder = root / "qwen3"
    folder.mkdir(parents=True)
    for item in QWEN3_DIR.iterdir():
        if item.name != "derender.json":
            (folder / item.name).symlink_to(item)
    (folder / "derender.json").write_text(json.dumps(MANIFEST), encoding="utf-8")
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm-url", default="http://127.0.0.1:8101",
                        help="vLLM 0.33 render server with the qwen3 + hermes parsers "
                             "(default %(default)s)")
    parser.add_argument("--port", type=int, default=8000,
                        help="port for our server (a free one is chosen if busy)")
    parser.add_argument("--passes", type=int, default=3, help="core passes (default 3)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help=f"multiply the {ROUNDS} core rounds per pass (default 1.0)")
    parser.add_argument("--calls", type=int, default=200,
                        help="HTTP replays per position and server (default %(default)s)")
    parser.add_argument("--block", type=int, default=20,
                        help="consecutive replays to one server and position (ABBA order; "
                             "default %(default)s)")
    parser.add_argument("--stream-block", type=int, default=50,
                        help="chunks per block of the checked full stream (default %(default)s)")
    parser.add_argument("--no-vllm", action="store_true",
                        help="(c) with our server alone, even if vLLM is running")
    parser.add_argument("--no-core", action="store_true", help="skip (a) and (b)")
    parser.add_argument("--no-http", action="store_true", help="skip (c)")
    parser.add_argument("--profile", action="store_true",
                        help="also time the pieces of, and cProfile, the core call at chunk 4000")
    args = parser.parse_args(argv)

    tokenizer = Tokenizer.from_file(str(QWEN3_DIR / "tokenizer.json"))
    output = build_output(tokenizer)
    verdicts: list[bool | None] = []
    with tempfile.TemporaryDirectory(prefix="derender-parser-models-") as tmp:
        models_dir = make_models_dir(Path(tmp))
        if not args.no_core:
            verdicts.append(run_core(args, models_dir / "qwen3", tokenizer, output))
        if not args.no_http:
            if args.no_core:
                print(f"machine: {machine_line()}; derender {revision()}")
            verdicts.append(run_http(args, models_dir, output))
    return 0 if all(v is not False for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
