"""Record tool-call conformance cases from the real vLLM 0.33 render server.

One recorder for every tool-call format; each format's servers and cases are a table in
``scripts/tool_cases/<FORMAT>.py`` (which says how to start its servers with the vLLM peer's
``start.sh``; ``VLLM_PEER`` there is the folder of the peer's scripts, ``install.sh`` and
``start.sh`` of vLLM 0.33.0's render server):

    .venv/bin/python scripts/record_tool_fixtures.py FORMAT PORT... [--only N...] [--into DIR]

FORMAT is a module of ``scripts/tool_cases/`` (``llama3``, ``deepseek``, ``mistral``,
``qwen3_coder``, ``harmony``, ``deepseek_v31vocab``, ``deepseek_dsml``, ``glm``, ``minimax``,
``qwen3_family``, ``kimi``, ``gemma4``, ``engine_alone``, ``edge_cases``, ``no_tools``,
``granite``, ``longcat``, ``pythonic_family``, ``json_wrapped``, ``pairing``, ``ernie45``,
``hunyuan_a13b``, ``apertus``;
docs/recording/README.md lists them with their case numbers); one PORT per server of the
format, in the order its table lists them. ``--only`` records just the
cases so numbered, ``--into`` writes somewhere other than tests/fixtures/vllm-0.33/.

Each case is a hand-written model output, encoded with the tokenizer (special tokens such as
``<|python_tag|>`` become their ids; a format may encode otherwise), followed by an EOS id (or
none, finish "length"); the prompt ids are the server's own render of the request (or the
format's own prompt). Streams are split into chunks by a generator seeded with the case
number. Cases are written in the corpus format, numbered from the format's FIRST.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from derender_testing.recorded import write_case

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "vllm-0.33"
DERENDER = "/v1/chat/completions/derender"

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
        "required": ["city"]}}}
NOTE = {"type": "function", "function": {
    "name": "create_note", "description": "Create a note",
    "parameters": {"type": "object", "properties": {
        "title": {"type": "string"}, "body": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}}, "meta": {"type": "object"}},
        "required": ["title"]}}}
TOOLS = [WEATHER, NOTE]
NAMED = {"type": "function", "function": {"name": "get_weather"}}
USER = "What's the weather in Paris? Take a note too."


@dataclass
class Server:
    """One peer server of a format, and what its recordings say about it."""

    model: str
    flags: list[str]
    """The recorded ``server_flags``."""
    label: str
    """Names its parsers in descriptions: "<label>, non-streaming, …"."""
    slug: str
    """Names its files: "NNN-<slug>-chat-…"."""
    features: tuple[str, ...]
    tokenizer: Path


@dataclass
class Case:
    server: str
    """A key of the format's ``servers``."""
    shape: str
    output: str
    eos: int | None
    """The EOS id appended to the output; None: none, finish "length"."""
    request: dict[str, Any] = field(default_factory=dict)
    stream: str | None = None
    """None: non-streaming; else the chunking ("one", "small", "mixed")."""
    usage_chunk: bool = False
    finish_alone: bool = False
    tools: bool = True
    kind: str = "tool_call"
    """The feature naming what the output holds ("tool_call", "reasoning")."""


def encode_plain(tokenizer: Tokenizer, output: str) -> list[int]:
    return list(tokenizer.encode(output, add_special_tokens=False).ids)


def render_prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    """The server's own render of the request."""
    status, rendered = post(port, "/v1/chat/completions/render", chat_request)
    assert status == 200, rendered
    return rendered["token_ids"]


@dataclass
class Format:
    first: int
    servers: dict[str, Server]
    """In the order of the ports on the command line."""
    cases: list[Case]
    tools: list[dict[str, Any]] = field(default_factory=lambda: TOOLS)
    user: str = USER
    encode: Callable[[Tokenizer, str], list[int]] = encode_plain
    prompt: Callable[[int, Tokenizer, dict[str, Any]], list[int]] = render_prompt


def post(port: int, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                     data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def chunk_sizes(n: int, kind: str, rng: random.Random) -> list[int]:
    sizes: list[int] = []
    while sum(sizes) < n:
        size = {"one": 1, "small": rng.randint(1, 4), "mixed": rng.randint(1, 8)}[kind]
        sizes.append(min(size, n - sum(sizes)))
    return sizes


def engine_chunks(case: Case, request_id: str, ids: list[int], prompt: list[int],
                  sizes: list[int]) -> list[dict[str, Any]]:
    """The engine's chunks of ``ids`` in ``sizes``, then the finish and usage chunks asked."""
    finish = "stop" if case.eos is not None else "length"
    engine: list[dict[str, Any]] = []
    at = 0
    for k, size in enumerate(sizes):
        last = k == len(sizes) - 1 and not case.finish_alone
        choice = {"index": 0, "token_ids": ids[at:at + size],
                  "finish_reason": finish if last else None}
        engine.append({"request_id": request_id, "choices": [choice]})
        at += size
    if case.finish_alone:
        engine.append({"request_id": request_id,
                       "choices": [{"index": 0, "token_ids": [], "finish_reason": finish}]})
    if case.usage_chunk:
        engine.append({"request_id": request_id, "choices": [], "usage": {
            "prompt_tokens": len(prompt), "completion_tokens": len(ids),
            "total_tokens": len(prompt) + len(ids)}})
    return engine


def record(fmt: Format, case: Case, number: int, port: int,
           tokenizer: Tokenizer) -> dict[str, Any]:
    server = fmt.servers[case.server]
    model = server.model
    ids = fmt.encode(tokenizer, case.output) + ([] if case.eos is None else [case.eos])
    finish = "stop" if case.eos is not None else "length"
    chat_request: dict[str, Any] = {"model": model,
                                    "messages": [{"role": "user", "content": fmt.user}],
                                    **({"tools": fmt.tools} if case.tools else {}),
                                    **case.request}
    prompt = fmt.prompt(port, tokenizer, chat_request)
    features = ["chat", "parser", *server.features, f"parser:{case.shape}", case.kind,
                "nonstream" if case.stream is None else "stream"]
    slug = f"{number:03d}-{server.slug}-chat-{case.shape}" if case.stream is None else \
        f"{number:03d}-{server.slug}-chat-stream-{case.shape}-{case.stream}"
    out: dict[str, Any] = {"name": slug, "model": model, "endpoint": DERENDER,
                           "server_flags": server.flags}
    request_id = f"pub-{number:03d}-{'pn' if case.stream is None else 'ps'}"
    if case.stream is None:
        body = {"model": model, "generate_response": {
            "request_id": request_id, "prompt_token_ids": prompt,
            "choices": [{"index": 0, "token_ids": ids, "finish_reason": finish}]},
            "prompt_tokens": len(prompt), "chat_request": chat_request}
        status, response = post(port, DERENDER, body)
        out.update(kind="nonstream" if status == 200 else "error", features=sorted(features),
                   description=f"{server.label}, non-streaming, output shape "
                               f"{case.shape!r}. Raw output text: {case.output!r}",
                   calls=[{"request": body, "status": status, "response": response}])
        return out
    sizes = chunk_sizes(len(ids), case.stream, random.Random(number))
    engine = engine_chunks(case, request_id, ids, prompt, sizes)
    if case.finish_alone:
        features.append("finish_only_chunk")
    if case.usage_chunk:
        features.append("usage:final_chunk")
    calls: list[dict[str, Any]] = []
    chunks: list[dict[str, Any]] = []
    state = None
    for chunk in engine:
        body = {"stream": True, "model": model, "generate_chunk": chunk,
                "prompt_token_ids": prompt, "prompt_tokens": len(prompt),
                "chat_request": chat_request}
        chunks.append(json.loads(json.dumps(body)))
        if state is not None:
            body["stream_state"] = state
        status, response = post(port, DERENDER, body)
        calls.append({"request": body, "status": status, "response": response})
        if status != 200:
            break
        state = response["stream_state"]
    features.append(f"chunks:{case.stream}")
    out.update(kind="stream" if all(c["status"] == 200 for c in calls) else "error",
               features=sorted(features),
               description=f"{server.label}, streaming ({case.stream}: {sizes}), "
                           f"shape {case.shape!r}. Raw output text: {case.output!r}",
               calls=calls, chunks=chunks)
    return out


def layout(case: dict[str, Any]) -> str:
    """The corpus' layout: one top-level key a line, each call and chunk on one line."""
    lines = []
    for key, value in case.items():
        if key in ("calls", "chunks"):
            items = ",\n".join("    " + json.dumps(item, ensure_ascii=False) for item in value)
            lines.append(f'  "{key}": [\n{items}\n  ]')
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def load_format(name: str) -> Format:
    return importlib.import_module(f"tool_cases.{name}").FORMAT


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("format", help="a module of scripts/tool_cases/")
    parser.add_argument("ports", nargs="+", type=int, help="one per server of the format")
    parser.add_argument("--only", nargs="+", type=int, default=[], help="case numbers")
    parser.add_argument("--into", type=Path, default=FIXTURES, help="where to write")
    args = parser.parse_args(argv)
    fmt = load_format(args.format)
    if len(args.ports) != len(fmt.servers):
        parser.error(f"{args.format} takes {len(fmt.servers)} ports: {', '.join(fmt.servers)}")
    ports = dict(zip(fmt.servers, args.ports, strict=True))
    tokenizers: dict[Path, Tokenizer] = {}
    for offset, case in enumerate(fmt.cases):
        number = fmt.first + offset
        if args.only and number not in args.only:
            continue
        path = fmt.servers[case.server].tokenizer
        if path not in tokenizers:
            tokenizers[path] = Tokenizer.from_file(str(path))
        case_json = record(fmt, case, number, ports[case.server], tokenizers[path])
        out = write_case(args.into, case_json["name"], layout(case_json))
        print(out.name, case_json["kind"], len(case_json["calls"]))


if __name__ == "__main__":
    sys.modules.setdefault("record_tool_fixtures", sys.modules["__main__"])
    main()
