"""Record the llama3_json and pythonic conformance cases from the real vLLM 0.33 render server.

Usage (two servers on the derived Llama 3.1 tokenizer, see tests/tokenizer_variants.py; its
model folder holds tests/models/llama3.1-tools/*.json):

    PEER=$HOME/vllm-peer; mkdir -p $PEER/models/llama3.1-tools
    cp tests/models/llama3.1-tools/*.json $PEER/models/llama3.1-tools/
    ../shared/peer/start.sh llama3.1-tools 8131 --tool-call-parser llama3_json \
        --enable-auto-tool-choice
    ../shared/peer/start.sh llama3.1-tools 8132 --tool-call-parser pythonic \
        --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py 8131 8132

Each case is a hand-written model output, encoded with the tokenizer (special tokens such as
``<|python_tag|>`` become their ids), followed by an EOS id (or none, finish "length"); the
prompt ids are the server's own render of the request. Streams are split into chunks by a
seeded generator. Cases are written to tests/fixtures/vllm-0.33/ in the corpus format,
numbered from FIRST.
"""

from __future__ import annotations

import json
import random
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "vllm-0.33"
MODEL = "llama3.1-tools"
TOKENIZER = ROOT / "tests" / "models" / MODEL / "tokenizer.json"
FIRST = 128
EOT, EOM = 128009, 128008

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
class Case:
    parser: str
    shape: str
    output: str
    eos: int | None = EOT
    request: dict[str, Any] = field(default_factory=dict)
    stream: str | None = None
    """None: non-streaming; else the chunking ("one", "small", "mixed")."""
    usage_chunk: bool = False
    finish_alone: bool = False
    features: tuple[str, ...] = ()


LLAMA_SINGLE = '{"name": "get_weather", "parameters": {"city": "Paris", "unit": "c"}}'
LLAMA_PARALLEL = ('<|python_tag|>{"name": "get_weather", "arguments": {"city": "Zürich"}}; '
                  '{"name": "get_weather", "parameters": {"city": "東京", "unit": "c"}}')
LLAMA_NESTED = ('{"name": "create_note", "parameters": {"title": "Zürich \\ud83c\\udf26 trip", '
                '"body": "line1\\nline2 \\"quoted\\" 東京 🌦", "tags": ["travel", "天気"], '
                '"meta": {"priority": 2, "nested": {"ok": true, "ratio": -0.25, "none": null}}}}')
LLAMA_BEFORE = ('Let me check the weather for you.\n\n'
                '{"name": "get_weather", "parameters": {"city": "Paris"}}')
LLAMA_LIST = ('[{"name": "get_weather", "parameters": {"city": "Paris"}}, '
              '{"name": "create_note", "parameters": {"title": "Paris trip"}}]')
LLAMA_NO_NAME = '{"city": "Paris", "unit": "c"}'
LLAMA_BRACES = "Use the {city} placeholder in your template, e.g. {\"city\": \"Paris\"}."
LLAMA_TRUNCATED = '{"name": "get_weather", "parameters": {"city": "Par'

PY_SINGLE = "[get_weather(city='Paris', unit='c')]"
PY_PARALLEL = ('[get_weather(city="Zürich"), get_weather(city=\'東京\', unit=None), '
               "create_note(title='Trip', tags=['x', \"y\"])]")
PY_LITERALS = ("[create_note(title='He said \"hi\" 🌦', body='line1\\nline2\\ttab \\u00df', "
               "tags=('a', 'ß'), meta={'priority': 2, 'nested': {'ok': True, 'ratio': -0.25, "
               "'none': None, 1: false}}, count=1_000, scale=-1.5e3)]")
PY_BEFORE = "Sure! [get_weather(city='Paris')]"
PY_NOT_LITERAL = "[get_weather(city=Paris)]"
PY_TRAILING = "[get_weather(city='Paris')]\nLet me know if you need anything else."
PY_TRUNCATED = "[get_weather(city='Par"
PY_JSON_LIST = '[{"name": "get_weather", "parameters": {"city": "Paris"}}]'
PY_PLAIN = "The weather in Paris is sunny, 22 °C. [Source: météo]"

CASES = [
    Case("llama3_json", "single", LLAMA_SINGLE),
    Case("llama3_json", "python_tag_parallel", LLAMA_PARALLEL, eos=EOM),
    Case("llama3_json", "content_before", LLAMA_BEFORE),
    Case("llama3_json", "nested_args", LLAMA_NESTED),
    Case("llama3_json", "json_list", LLAMA_LIST),
    Case("llama3_json", "malformed_no_name", LLAMA_NO_NAME),
    Case("llama3_json", "text_with_braces", LLAMA_BRACES),
    Case("llama3_json", "truncated", LLAMA_TRUNCATED, eos=None),
    Case("llama3_json", "tool_choice_none", LLAMA_SINGLE, request={"tool_choice": "none"}),
    Case("llama3_json", "required", LLAMA_SINGLE, request={"tool_choice": "required"}),
    Case("llama3_json", "required_text", "I cannot look that up.",
         request={"tool_choice": "required"}),
    Case("llama3_json", "named", LLAMA_SINGLE, request={"tool_choice": NAMED}),
    Case("llama3_json", "parallel_false", LLAMA_PARALLEL, eos=EOM,
         request={"parallel_tool_calls": False}),
    Case("llama3_json", "single", LLAMA_SINGLE, stream="small"),
    Case("llama3_json", "python_tag_parallel", LLAMA_PARALLEL, eos=EOM, stream="one",
         usage_chunk=True),
    Case("llama3_json", "content_before", LLAMA_BEFORE, stream="mixed"),
    Case("llama3_json", "nested_args", LLAMA_NESTED, stream="small", finish_alone=True),
    Case("llama3_json", "json_list", LLAMA_LIST, stream="small"),
    Case("llama3_json", "malformed_no_name", LLAMA_NO_NAME, stream="small"),
    Case("llama3_json", "tool_choice_none", LLAMA_SINGLE, stream="mixed",
         request={"tool_choice": "none"}),
    Case("llama3_json", "named", LLAMA_SINGLE, stream="one", request={"tool_choice": NAMED}),
    Case("llama3_json", "parallel_false", LLAMA_PARALLEL, eos=EOM, stream="mixed",
         request={"parallel_tool_calls": False}),
    Case("pythonic", "single", PY_SINGLE),
    Case("pythonic", "parallel", PY_PARALLEL),
    Case("pythonic", "literals", PY_LITERALS),
    Case("pythonic", "content_before", PY_BEFORE),
    Case("pythonic", "not_literal", PY_NOT_LITERAL),
    Case("pythonic", "trailing_text", PY_TRAILING),
    Case("pythonic", "truncated", PY_TRUNCATED, eos=None),
    Case("pythonic", "plain_text", PY_PLAIN),
    Case("pythonic", "tool_choice_none", PY_SINGLE, request={"tool_choice": "none"}),
    Case("pythonic", "required_json", PY_JSON_LIST, request={"tool_choice": "required"}),
    Case("pythonic", "required_pythonic", PY_SINGLE, request={"tool_choice": "required"}),
    Case("pythonic", "named_json", '{"city": "Paris", "unit": "f"}',
         request={"tool_choice": NAMED}),
    Case("pythonic", "parallel_false", PY_PARALLEL, request={"parallel_tool_calls": False}),
    Case("pythonic", "single", PY_SINGLE, stream="one"),
    Case("pythonic", "parallel", PY_PARALLEL, stream="small", usage_chunk=True),
    Case("pythonic", "literals", PY_LITERALS, stream="mixed"),
    Case("pythonic", "content_before", PY_BEFORE, stream="small"),
    Case("pythonic", "not_literal", PY_NOT_LITERAL, stream="small"),
    Case("pythonic", "truncated", PY_TRUNCATED, eos=None, stream="one"),
    Case("pythonic", "required_json", PY_JSON_LIST, stream="small",
         request={"tool_choice": "required"}),
    Case("pythonic", "named_json", '{"city": "Paris", "unit": "f"}', stream="small",
         finish_alone=True, request={"tool_choice": NAMED}),
    Case("pythonic", "parallel_false", PY_PARALLEL, stream="mixed",
         request={"parallel_tool_calls": False}),
]


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


def record(case: Case, number: int, port: int, tokenizer: Tokenizer) -> dict[str, Any]:
    ids = list(tokenizer.encode(case.output, add_special_tokens=False).ids)
    if case.eos is not None:
        ids.append(case.eos)
    finish = "stop" if case.eos is not None else "length"
    chat_request = {"model": MODEL, "messages": [{"role": "user", "content": USER}],
                    "tools": TOOLS, **case.request}
    status, rendered = post(port, "/v1/chat/completions/render", chat_request)
    assert status == 200, rendered
    prompt = rendered["token_ids"]
    flags = ["--served-model-name", MODEL, "--tool-call-parser", case.parser,
             "--enable-auto-tool-choice"]
    features = ["chat", "parser", f"parser:{case.parser}", f"parser:{case.shape}", "tool_call",
                "nonstream" if case.stream is None else "stream", *case.features]
    slug = f"{number:03d}-{case.parser}-chat-{case.shape}" if case.stream is None else \
        f"{number:03d}-{case.parser}-chat-stream-{case.shape}-{case.stream}"
    out: dict[str, Any] = {"name": slug, "model": MODEL,
                           "endpoint": "/v1/chat/completions/derender", "server_flags": flags}
    request_id = f"pub-{number:03d}-{'pn' if case.stream is None else 'ps'}"
    if case.stream is None:
        body = {"model": MODEL, "generate_response": {
            "request_id": request_id, "prompt_token_ids": prompt,
            "choices": [{"index": 0, "token_ids": ids, "finish_reason": finish}]},
            "prompt_tokens": len(prompt), "chat_request": chat_request}
        status, response = post(port, "/v1/chat/completions/derender", body)
        out.update(kind="nonstream" if status == 200 else "error", features=sorted(features),
                   description=f"{case.parser} tool parser, non-streaming, output shape "
                               f"{case.shape!r}. Raw output text: {case.output!r}",
                   calls=[{"request": body, "status": status, "response": response}])
        return out
    rng = random.Random(number)
    sizes = chunk_sizes(len(ids), case.stream, rng)
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
        features.append("finish_only_chunk")
    if case.usage_chunk:
        engine.append({"request_id": request_id, "choices": [], "usage": {
            "prompt_tokens": len(prompt), "completion_tokens": len(ids),
            "total_tokens": len(prompt) + len(ids)}})
        features.append("usage:final_chunk")
    calls: list[dict[str, Any]] = []
    chunks: list[dict[str, Any]] = []
    state = None
    for chunk in engine:
        body = {"stream": True, "model": MODEL, "generate_chunk": chunk,
                "prompt_token_ids": prompt, "prompt_tokens": len(prompt),
                "chat_request": chat_request}
        chunks.append(json.loads(json.dumps(body)))
        if state is not None:
            body["stream_state"] = state
        status, response = post(port, "/v1/chat/completions/derender", body)
        calls.append({"request": body, "status": status, "response": response})
        if status != 200:
            break
        state = response["stream_state"]
    features.append(f"chunks:{case.stream}")
    out.update(kind="stream" if all(c["status"] == 200 for c in calls) else "error",
               features=sorted(features),
               description=f"{case.parser} tool parser, streaming ({case.stream}: {sizes}), "
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


def main() -> None:
    ports = {"llama3_json": int(sys.argv[1]), "pythonic": int(sys.argv[2])}
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    for offset, case in enumerate(CASES):
        case_json = record(case, FIRST + offset, ports[case.parser], tokenizer)
        path = FIXTURES / f"{case_json['name']}.json"
        path.write_text(layout(case_json), encoding="utf-8")
        print(path.name, case_json["kind"], len(case_json["calls"]))


if __name__ == "__main__":
    main()
