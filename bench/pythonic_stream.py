"""Streaming the pythonic family's formats: core cost per chunk and the largest stream_state, as
``bench/engine_stream.py`` measures them for the parser-engine formats.

One 4096-id output per format, 1 id per chunk, all of it one tool call whose ``notes`` value
is long corpus text (``bench/corpus.txt``, quotes and backslashes escaped):

  llama4_pythonic (``tests/models/llama3.1-tools``, fetched by ``make test``):
  ``<|python_start|>[get_weather(city='Lisbon', notes='…')]<|python_end|>`` + EOS 128009.

  olmo3 (``tests/models/olmo3-standin``, derived at first use; the tool and reasoning parsers):
  ``<function_calls>\nget_weather(city='Lisbon', notes='…')\n</function_calls>`` + EOS
  100265.

  lfm2 (``tests/models/lfm2-standin``, derived at first use):
  ``<|tool_call_start|>[get_weather(city='Lisbon', notes='…')]<|tool_call_end|>`` + EOS 7.

The stream is first derendered whole, call after call, and checked: the folded stream and the
non-streaming answer both give no content and the one ``get_weather`` call with the arguments
built. Then chunks 10, 1,000 and 4,000 (all inside the ``notes`` value) are replayed with the
state the stream had there (verify + decode, derender, encode + sign), interleaved, medians,
gc off. Target: flat, chunk 4,000 / chunk 10 ≤ 1.1×.

    python bench/pythonic_stream.py
    python bench/pythonic_stream.py --only llama4_pythonic --scale 0.1
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import CORPUS, REPO, load_line, real_text_ids, run_formats, stream_summary
from parser_stream import Folded
from stream_chunks import Position, call, time_passes
from tokenizers import Tokenizer

from derender.contract.requests import DerenderChatRequest, DerenderChatStreamRequest
from derender.core.chat import derender_chat
from derender.core.registry import ServedModel, load_vocabulary, read_model_info

MODELS = REPO / "tests" / "models"
STREAM_IDS = 4096
POSITIONS = (10, 1000, 4000)
ROUNDS = 20000
TARGET_FLAT = 1.1
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "notes": {"type": "string"}}, "required": ["city"]}}}]


@dataclass(frozen=True)
class Format:
    model: str
    parser: str
    eos: int
    head: str
    tail: str
    reasoning: str | None = None


FORMATS = {
    "llama4_pythonic": Format("llama3.1-tools", "llama4_pythonic", 128009,
                              "<|python_start|>[get_weather(city='Lisbon', notes='",
                              "')]<|python_end|>"),
    "olmo3": Format("olmo3-standin", "olmo3", 100265,
                    "<function_calls>\nget_weather(city='Lisbon', notes='", "')\n</function_calls>",
                    "olmo3"),
    # branch pythonic2: a block past MAX_BLOCK, read by the pythonic machine as it arrives
    "lfm2": Format("lfm2-standin", "lfm2", 7,
                   "<|tool_call_start|>[get_weather(city='Lisbon', notes='",
                   "')]<|tool_call_end|>"),
}


def models_folder(root: Path, key: str, fmt: Format) -> Path:
    from derender_testing.models import model_folder
    source = model_folder(fmt.model)
    folder = root / key / fmt.model
    folder.mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json",
                 "generation_config.json", "chat_template.jinja"):
        if (source / name).is_file():
            (folder / name).symlink_to(source / name)
    (folder / "derender.json").write_text(json.dumps({
        "served_names": [fmt.model], "tool_parser": fmt.parser,
        **({"reasoning_parser": fmt.reasoning} if fmt.reasoning else {})}))
    return folder


def build(fmt: Format, tokenizer: Tokenizer) -> tuple[list[int], str]:
    """The output's ids and its notes value (the corpus text, ASCII, no quotes, backslashes
    or newlines, cut to fill the stream)."""
    def encode(text: str) -> list[int]:
        return list(tokenizer.encode(text, add_special_tokens=False).ids)

    head, tail = encode(fmt.head), encode(fmt.tail)
    words = tokenizer.decode(real_text_ids(tokenizer, 2 * STREAM_IDS + 3000, CORPUS)[3000:],
                             skip_special_tokens=False)
    words = "".join(c if c.isascii() and c not in "\\'\n" else " " for c in words)
    ids = [*head, *encode(words)[:STREAM_IDS - len(head) - len(tail) - 1], *tail, fmt.eos]
    text = tokenizer.decode(ids[:-1], skip_special_tokens=False)
    if len(ids) != STREAM_IDS or not (text.startswith(fmt.head) and text.endswith(fmt.tail)):
        raise SystemExit(f"{fmt.parser}: the built output is not {STREAM_IDS} ids of the call")
    return ids, text[len(fmt.head):-len(fmt.tail)]


def body(fmt: Format, ids: list[int], finish: str | None, state: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "stream": True, "model": fmt.model,
        "generate_chunk": {"request_id": "p1", "choices": [
            {"index": 0, "token_ids": ids, "finish_reason": finish}]},
        "prompt_token_ids": [1], "prompt_tokens": 1,
        "chat_request": {"model": fmt.model, "messages": [{"role": "user", "content": "hi"}],
                         "tools": TOOLS}}
    if state is not None:
        data["stream_state"] = state
    return data


def check(name: str, folded: Folded, notes: str) -> None:
    calls = [folded.calls[i] for i in sorted(folded.calls)]
    if (folded.content.strip() or len(calls) != 1 or calls[0][0] != "get_weather"
            or json.loads(calls[0][1]) != {"city": "Lisbon", "notes": notes}):
        raise SystemExit(f"{name}: the stream is not the call it was built of")


def run(key: str, fmt: Format, args: argparse.Namespace, root: Path) -> None:
    folder = models_folder(root, key, fmt)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    model = ServedModel(read_model_info(folder), load_vocabulary(folder))
    ids, notes = build(fmt, tokenizer)
    load_before = load_line()
    bodies, sizes = [], []
    folded = Folded()
    token = None
    for index, token_id in enumerate(ids):
        request = DerenderChatStreamRequest.model_validate(body(
            fmt, [token_id], "stop" if index == len(ids) - 1 else None, token))
        chunk, token = call(request, model)
        bodies.append(request)
        sizes.append(len(token))
        folded.add(chunk)
    check(f"{key} stream", folded, notes)
    message = derender_chat(DerenderChatRequest.model_validate({
        "model": fmt.model, "prompt_token_ids": [1],
        "generate_response": {"request_id": "p1", "prompt_token_ids": [1], "choices": [
            {"index": 0, "token_ids": ids, "finish_reason": "stop"}]},
        "chat_request": {"model": fmt.model, "messages": [{"role": "user", "content": "hi"}],
                         "tools": TOOLS}}), model, 16)["choices"][0]["message"]
    whole = Folded(content=message["content"] or "")
    for i, tool_call in enumerate(message.get("tool_calls") or []):
        whole.calls[i] = [tool_call["function"]["name"], tool_call["function"]["arguments"]]
    check(f"{key} non-streaming", whole, notes)
    positions = [Position(1, n, n - 1, tokenizer.decode(ids[n - 1:n], skip_special_tokens=False),
                          bodies[n - 1]) for n in POSITIONS]
    rounds = max(100, int(ROUNDS * args.scale))
    time_passes(positions, model, rounds, args.passes, f"{key} pass", load_before)
    print(f"{key} on {fmt.model}: {STREAM_IDS} ids, 1 id per chunk, one get_weather call whose "
          f"notes value fills the stream; {rounds} rounds × {args.passes} passes, medians in µs. "
          "Checked: the folded stream and the non-streaming answer give no content and the one "
          "call with the arguments built.")
    print()
    print("| chunk | chunk text | verify+decode µs | derender µs | encode+sign µs | total µs "
          "| total / chunk 10 |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    first = positions[0]
    for p in positions:
        print(f"| {p.chunk} | `{p.piece!r}` | {p.med(0) / 1e3:.2f} | {p.med(1) / 1e3:.2f} "
              f"| {p.med(2) / 1e3:.2f} | {p.med(3) / 1e3:.2f} | {p.med(3) / first.med(3):.2f}× |")
    stream_summary(positions[-1].med(3) / first.med(3), POSITIONS[-1], TARGET_FLAT, sizes)


def main() -> None:
    run_formats(__doc__.split("\n")[0], list(FORMATS),
                lambda key, args, tmp: run(key, FORMATS[key], args, tmp))


if __name__ == "__main__":
    main()
