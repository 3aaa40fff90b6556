"""Streaming gpt-oss Harmony output: core cost per chunk, stream_state size, and HTTP latency
per chunk against vLLM 0.33's Harmony parser server.

The stream is a 4096-id gpt-oss output, 1 id per chunk, as the model writes a tool call:

  <|channel|>analysis<|message|> + ~3,500 ids of reasoning (``bench/corpus.txt``) + <|end|>
  + <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json
  + <|message|> + '{"city": "Lisbon", "notes": "<corpus text>"}' + <|call|> (EOS, finish "stop")

served from the test model ``tests/models/gpt-oss`` (``model_type`` gpt_oss) with the ``openai``
tool parser (the reasoning parser is ``openai_gptoss`` by default); the script builds the
models folder in a temporary directory. Every call carries the prompt ids and a
``chat_request`` with a ``get_weather`` tool.

(a) Core, as ``bench/stream_chunks.py`` times it (verify + decode, ``derender_chat_stream``,
    encode + sign; chunks 10, 1,000 and 4,000 interleaved, medians, gc off). Checked first:
    the folded stream and the non-streaming answer both give the reasoning text and one
    ``get_weather`` call with the arguments built. Target: flat, chunk 4,000 / chunk 10 ≤ 1.2×.
(b) The largest ``stream_state`` over the whole stream (base64 characters).
(c) HTTP, our server (started here) against vLLM's (``--vllm-url``, started with
    ``"$VLLM_PEER"/start.sh gpt-oss 8130 --reasoning-parser openai_gptoss --tool-call-parser
    openai --enable-auto-tool-choice``): each server is streamed up to chunk 1,000, then chunks
    10 and 1,000 are replayed ``--calls`` times each with the state that server returned for
    the chunk before, in ABBA blocks; p50 per position.

    python bench/harmony_stream.py                  # everything (vLLM expected on :8130)
    python bench/harmony_stream.py --no-http        # core and state size only
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import REPO, load_line, machine_line, real_text_ids, revision
from http_latency import CHAT_PATH, Client, Series, healthy, start_ours, stop, timed
from parser_stream import Folded
from stream_chunks import Position, call, time_passes
from tokenizers import Tokenizer

from derender.contract.requests import DerenderChatRequest, DerenderChatStreamRequest
from derender.core.chat import derender_chat
from derender.core.registry import ServedModel, load_vocabulary, read_model_info

SOURCE = REPO / "tests" / "models" / "gpt-oss"
MANIFEST = {"served_names": ["gpt-oss"], "tool_parser": "openai"}
STREAM_IDS = 4096
CALL_IDS = 480
POSITIONS = (10, 1000, 4000)
HTTP_POSITIONS = (10, 1000)
ROUNDS = 20000
TARGET_FLAT = 1.2
SIGNING_KEYS = "bench:0123456789abcdef0123456789abcdef"
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "notes": {"type": "string"}}, "required": ["city"]}}}]
CHAT_REQUEST = {"model": "gpt-oss", "messages": [{"role": "user", "content": "hi"}],
                "tools": TOOLS}
REASONING_HEAD = "<|channel|>analysis<|message|>"
CALL_HEAD = ("<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
             "<|constrain|>json<|message|>")
PROMPT = "<|start|>user<|message|>hi<|end|><|start|>assistant"
CALL_EOS = 200012


def models_folder(root: Path) -> Path:
    """A models folder serving the gpt-oss test model with the ``openai`` tool parser."""
    if not (SOURCE / "tokenizer.json").is_file():
        from derender_testing.tokenizer_variants import gunzip_tokenizer
        gunzip_tokenizer(SOURCE, SOURCE)
    model = root / "gpt-oss"
    model.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json",
                 "generation_config.json"):
        (model / name).symlink_to(SOURCE / name)
    (model / "derender.json").write_text(json.dumps(MANIFEST))
    return root


def build(tokenizer: Tokenizer) -> tuple[list[int], list[int], str, dict[str, Any], int]:
    """The ids, the prompt ids, the reasoning text, the arguments, the index of the call."""
    def encode(text: str) -> list[int]:
        return list(tokenizer.encode(text, add_special_tokens=False).ids)

    notes_ids = real_text_ids(tokenizer, CALL_IDS)
    notes = tokenizer.decode(notes_ids, skip_special_tokens=False)
    arguments = {"city": "Lisbon", "notes": notes}
    call_ids = encode(json.dumps(arguments, ensure_ascii=False))
    head, call_head = encode(REASONING_HEAD), encode(CALL_HEAD)
    count = STREAM_IDS - len(head) - len(call_head) - len(call_ids) - 1
    reasoning_ids = real_text_ids(tokenizer, count + 3000)[3000:]
    ids = [*head, *reasoning_ids, *call_head, *call_ids, CALL_EOS]
    if len(ids) != STREAM_IDS:
        raise SystemExit(f"built {len(ids)} ids, not {STREAM_IDS}")
    return (ids, encode(PROMPT), tokenizer.decode(reasoning_ids, skip_special_tokens=False),
            arguments, len(head) + len(reasoning_ids))


def body(ids: list[int], finish: str | None, prompt: list[int], state: Any
         ) -> dict[str, Any]:
    data: dict[str, Any] = {
        "stream": True, "model": "gpt-oss",
        "generate_chunk": {"request_id": "h1", "choices": [
            {"index": 0, "token_ids": ids, "finish_reason": finish}]},
        "prompt_token_ids": prompt, "prompt_tokens": len(prompt), "chat_request": CHAT_REQUEST}
    if state is not None:
        data["stream_state"] = state
    return data


def fold(chunks: list[dict[str, Any]]) -> tuple[str, str, list[tuple[str, str]]]:
    folded = Folded()
    for chunk in chunks:
        folded.add(chunk)
    return (folded.reasoning, folded.content,
            [(name, args) for _, (name, args) in sorted(folded.calls.items())])


def check(name: str, folded: tuple[str, str, list[tuple[str, str]]], reasoning: str,
          arguments: dict[str, Any]) -> None:
    got_reasoning, content, calls = folded
    if (got_reasoning != reasoning or content.strip() or len(calls) != 1
            or calls[0][0] != "get_weather" or json.loads(calls[0][1]) != arguments):
        raise SystemExit(f"{name}: the stream is not the reasoning and the call it was built of")


def core(args: argparse.Namespace, models: Path, tokenizer: Tokenizer) -> None:
    folder = models / "gpt-oss"
    model = ServedModel(read_model_info(folder), load_vocabulary(folder))
    ids, prompt, reasoning, arguments, call_at = build(tokenizer)
    load_before = load_line()
    bodies, sizes, chunks = [], [], []
    token = None
    for index, token_id in enumerate(ids):
        request = DerenderChatStreamRequest.model_validate(
            body([token_id], "stop" if index == len(ids) - 1 else None, prompt, token))
        chunk, token = call(request, model)
        bodies.append(request)
        sizes.append(len(token))
        chunks.append(chunk)
    check("core stream", fold(chunks), reasoning, arguments)
    whole = derender_chat(DerenderChatRequest.model_validate({
        "model": "gpt-oss", "generate_response": {"request_id": "h1", "choices": [
            {"index": 0, "token_ids": ids, "finish_reason": "stop"}]},
        "chat_request": CHAT_REQUEST}), model, 16)["choices"][0]["message"]
    check("core non-streaming", (whole["reasoning"] or "", whole["content"] or "",
                                 [(c["function"]["name"], c["function"]["arguments"])
                                  for c in whole.get("tool_calls") or []]),
          reasoning, arguments)
    positions = [Position(1, n, n - 1, tokenizer.decode(ids[n - 1:n], skip_special_tokens=False),
                          bodies[n - 1]) for n in POSITIONS]
    rounds = max(100, int(ROUNDS * args.scale))
    time_passes(positions, model, rounds, args.passes, "core pass", load_before)
    print(f"(a) Core. Harmony stream of {STREAM_IDS} ids, 1 id per chunk: analysis message of "
          f"{call_at} ids, then a get_weather call of {STREAM_IDS - call_at} ids ending in "
          f"<|call|> (finish \"stop\"); {rounds} rounds × {args.passes} passes, medians in µs. "
          "Checked: the folded stream and the non-streaming answer both give the reasoning "
          "text and the one call with the arguments built.")
    print()
    print("| chunk | part of | verify+decode µs | derender µs | encode+sign µs | total µs "
          "| total / chunk 10 |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    first = positions[0]
    for p in positions:
        part = "reasoning" if p.chunk <= call_at else "tool call"
        print(f"| {p.chunk} | {part} | {p.med(0) / 1e3:.2f} | {p.med(1) / 1e3:.2f} "
              f"| {p.med(2) / 1e3:.2f} | {p.med(3) / 1e3:.2f} | {p.med(3) / first.med(3):.2f}× |")
    ratio = positions[-1].med(3) / first.med(3)
    print()
    print(f"Target: flat, chunk {POSITIONS[-1]} / chunk 10 ≤ {TARGET_FLAT:g}×: {ratio:.2f}× → "
          + ("met" if ratio <= TARGET_FLAT else "MISSED"))
    print()
    print(f"(b) Largest stream_state: {max(sizes)} characters (chunk "
          f"{sizes.index(max(sizes)) + 1}); first 100 chunks {max(sizes[:100])}, last 100 "
          f"{max(sizes[-100:])}.")


def http(args: argparse.Namespace, models: Path, tokenizer: Tokenizer) -> None:
    ids, prompt, _, _, _ = build(tokenizer)
    head = len(tokenizer.encode(REASONING_HEAD, add_special_tokens=False).ids)
    ours, url = start_ours(models, args.port, Path(tempfile.gettempdir()) / "harmony-ours.log",
                           {"DERENDER_SIGNING_KEYS": SIGNING_KEYS})
    try:
        servers = [("derender", url)]
        if healthy(args.vllm_url):
            servers.append(("vLLM", args.vllm_url))
        else:
            print(f"note: no vLLM server at {args.vllm_url}; ours alone", file=sys.stderr)
        calls: list[tuple[Series, Any]] = []
        for name, server in servers:
            client = Client(server)
            state, chunks = None, []
            replay: dict[int, bytes] = {}
            for index, token_id in enumerate(ids[:max(HTTP_POSITIONS)]):
                data = json.dumps(body([token_id], None, prompt, state)).encode()
                if index + 1 in HTTP_POSITIONS:
                    replay[index + 1] = data
                status, raw = client.request("POST", CHAT_PATH, data)
                if status != 200:
                    raise SystemExit(f"{name}: {status} {raw[:200]!r}")
                answer = json.loads(raw)
                state = answer["stream_state"]
                chunks.append(answer["chunk"])
            got = fold(chunks)
            if got[0] != tokenizer.decode(ids[head:max(HTTP_POSITIONS)],
                                          skip_special_tokens=False):
                raise SystemExit(f"{name}: reasoning so far is not the ids' text")
            for position, data in replay.items():
                calls.append((Series(f"{name} chunk {position}"),
                              lambda c=client, d=data: c.request("POST", CHAT_PATH, d)))
        timed(calls, args.calls, 20, args.block)
        print()
        print(f"(c) HTTP p50 per call, ms ({args.calls} calls per row, ABBA blocks of "
              f"{args.block}; {machine_line()}; derender {revision()}):")
        print()
        print("| server | chunk | p50 ms | p90 ms |")
        print("|---|---:|---:|---:|")
        p50: dict[str, float] = {}
        for series, _ in calls:
            stats = series.stats()
            p50[series.name] = stats["p50"]
            server, _, chunk = series.name.partition(" chunk ")
            print(f"| {server} | {chunk} | {stats['p50']:.2f} | {stats['p90']:.2f} |")
        for position in HTTP_POSITIONS:
            if f"vLLM chunk {position}" in p50:
                print(f"\nchunk {position}: vLLM / derender = "
                      f"{p50[f'vLLM chunk {position}'] / p50[f'derender chunk {position}']:.1f}×")
    finally:
        stop(ours)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-core", action="store_true")
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--scale", type=float, default=0.1, help="core rounds × this")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--port", type=int, default=8360)
    parser.add_argument("--vllm-url", default="http://127.0.0.1:8130")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        models = models_folder(Path(tmp))
        tokenizer = Tokenizer.from_file(str(SOURCE / "tokenizer.json"))
        if not args.no_core:
            core(args, models, tokenizer)
        if not args.no_http:
            http(args, models, tokenizer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
