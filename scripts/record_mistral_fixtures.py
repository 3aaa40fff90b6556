"""Record the mistral conformance cases from the real vLLM 0.33 render server.

Usage (one server on the derived Mistral tokenizer, see tests/tokenizer_variants.py; its model
folder holds tests/models/mistral-tools/*.json):

    PEER=$HOME/vllm-peer; mkdir -p $PEER/models/mistral-tools
    cp tests/models/mistral-tools/*.json $PEER/models/mistral-tools/
    ../shared/peer/start.sh mistral-tools 8220 --tool-call-parser mistral \
        --enable-auto-tool-choice --reasoning-parser mistral
    # likewise tests/models/mistral-tools-v3/*.json into $PEER/models/mistral-tools-v3
    ../shared/peer/start.sh mistral-tools-v3 8221 --tool-call-parser mistral \
        --enable-auto-tool-choice
    .venv/bin/python scripts/record_mistral_fixtures.py 8220 8221 [CASE NUMBERS…]

The tokenizer has ``[ARGS]`` and ``[THINK]``, so vLLM's MistralParser reads the tokenizer-v11+
grammar (``[TOOL_CALLS]name[ARGS]{…}`` or ``[TOOL_CALLS]name{…}``) and special-token
reasoning (cases 240-272); ``mistral-tools-v3`` has ``[TOOL_CALLS]`` alone, the older grammar
of tokenizers before v11, ``[TOOL_CALLS][{"name": …, "arguments": …}, …]`` (cases 273-279).
Each case is a hand-written model output: the markers become their ids and the text
between them is encoded on its own without the ``▁`` this (pre-v3) tokenizer prepends to every
segment, so the decoded output is the text as written; then an EOS id (or none, finish
"length"). The prompt is ``<s>[INST] … [/INST]`` (the files have no chat template for vLLM to
render); chunking and layout as in scripts/record_tool_fixtures.py.
"""

from __future__ import annotations

import json
import random
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record_tool_fixtures import NAMED, TOOLS, USER, chunk_sizes, layout, post

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "vllm-0.33"
MODEL, OLDER = "mistral-tools", "mistral-tools-v3"
FIRST = 240
EOS = 2
MARKERS = ("[TOOL_CALLS]", "[ARGS]", "[THINK]", "[/THINK]")
FLAGS = {MODEL: ["--served-model-name", MODEL, "--tool-call-parser", "mistral",
                  "--enable-auto-tool-choice", "--reasoning-parser", "mistral"],
         OLDER: ["--served-model-name", OLDER, "--tool-call-parser", "mistral",
                 "--enable-auto-tool-choice"]}
PARSERS = {MODEL: "tool and reasoning parsers", OLDER: "tool parser (older grammar)"}


@dataclass
class Case:
    shape: str
    output: str
    eos: bool = True
    request: dict[str, Any] = field(default_factory=dict)
    stream: str | None = None
    usage_chunk: bool = False
    finish_alone: bool = False
    tools: bool = True
    model: str = MODEL


SINGLE = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "unit": "c"}'
PARALLEL = ('[TOOL_CALLS]get_weather[ARGS]{"city": "Zürich"}'
            '[TOOL_CALLS]get_weather[ARGS]{"city": "東京", "unit": "c"}'
            '[TOOL_CALLS]create_note[ARGS]{"title": "Trip", "tags": ["x", "y"]}')
BRACE = 'Sure.[TOOL_CALLS]get_weather{"city": "Paris"}'
BEFORE = ('Let me check the weather for you.\n\n'
          '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}')
NESTED = ('[TOOL_CALLS]create_note[ARGS]{"title": "Zürich \\ud83c\\udf26 trip", '
          '"body": "line1\\nline2 \\"quoted\\" 東京 🌦 {not: a call}", "tags": ["travel", "天気"], '
          '"meta": {"priority": 2, "nested": {"ok": true, "ratio": -0.25, "none": null}}}')
TRAILING = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"} Let me know if you need more.'
TRUNCATED = '[TOOL_CALLS]get_weather[ARGS]{"city": "Par'
PLAIN = "The weather in Paris is [sunny], {22 °C}."
THINK_TOOL = ("[THINK]The user wants the weather. I should call get_weather.  \n[/THINK]"
              '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}')
THINK_CONTENT = "[THINK]Let me think.  \n[/THINK]\n\nIt is sunny in Paris."
THINK_IMPLICIT = ('[THINK]Just call it. [THINK]again  '
                  '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}')
NONE_OUTPUT = 'Hello [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
NAME_ONLY = "[TOOL_CALLS]get_weather"
V3_LIST = ('Sure. [TOOL_CALLS] [{"name": "get_weather", "arguments": {"city":"Zürich"}}, '
           '{"arguments": {"title": "Trip", "tags": ["x"]}, "name": "create_note"}, '
           '{"name": "get_weather", "arguments": {"city": "東京", "unit": "c"}}]')
V3_OBJECT = '[TOOL_CALLS]{"name": "get_weather", "arguments": {"city": "Paris"}}'
V3_NONE = 'Hello [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]'
V3_BARE = '[{"name": "get_weather", "arguments": {"city": "Paris", "unit": "f"}}]'
SPACED = '[TOOL_CALLS] get_weather [ARGS] {"city": "Paris"} '

CASES = [
    Case("single", SINGLE),
    Case("parallel", PARALLEL),
    Case("brace", BRACE),
    Case("content_before", BEFORE),
    Case("nested_args", NESTED),
    Case("trailing_text", TRAILING),
    Case("truncated", TRUNCATED, eos=False),
    Case("plain_text", PLAIN),
    Case("think_tool", THINK_TOOL),
    Case("think_content", THINK_CONTENT),
    Case("think_implicit", THINK_IMPLICIT),
    Case("think_no_tools", THINK_CONTENT, tools=False),
    Case("tool_choice_none", NONE_OUTPUT, request={"tool_choice": "none"}),
    Case("required", SINGLE, request={"tool_choice": "required"}),
    Case("named", SINGLE, request={"tool_choice": NAMED}),
    Case("parallel_false", PARALLEL, request={"parallel_tool_calls": False}),
    Case("name_only", NAME_ONLY),
    Case("spaced", SPACED),
    Case("single", SINGLE, stream="small"),
    Case("parallel", PARALLEL, stream="one", usage_chunk=True),
    Case("brace", BRACE, stream="mixed"),
    Case("content_before", BEFORE, stream="small"),
    Case("nested_args", NESTED, stream="small", finish_alone=True),
    Case("trailing_text", TRAILING, stream="small"),
    Case("truncated", TRUNCATED, eos=False, stream="one"),
    Case("think_tool", THINK_TOOL, stream="one"),
    Case("think_content", THINK_CONTENT, stream="small"),
    Case("think_implicit", THINK_IMPLICIT, stream="mixed"),
    Case("think_no_tools", THINK_CONTENT, tools=False, stream="mixed"),
    Case("tool_choice_none", NONE_OUTPUT, request={"tool_choice": "none"}, stream="mixed"),
    Case("named", SINGLE, request={"tool_choice": NAMED}, stream="one"),
    Case("parallel_false", PARALLEL, request={"parallel_tool_calls": False}, stream="mixed"),
    Case("spaced", SPACED, stream="small"),
    # the older grammar (a tokenizer without [ARGS]): cases 273-279
    Case("v3_list", V3_LIST, model=OLDER),
    Case("v3_object", V3_OBJECT, model=OLDER),
    Case("v3_tool_choice_none", V3_NONE, model=OLDER, request={"tool_choice": "none"}),
    Case("v3_required", V3_BARE, model=OLDER, request={"tool_choice": "required"}),
    Case("v3_list", V3_LIST, model=OLDER, stream="small"),
    Case("v3_tool_choice_none", V3_NONE, model=OLDER, request={"tool_choice": "none"},
         stream="mixed"),
    Case("v3_required", V3_BARE, model=OLDER, request={"tool_choice": "required"},
         stream="mixed"),
]


def encode(tokenizer: Tokenizer, output: str) -> list[int]:
    """Markers as their ids; each segment after one without the prepended ``▁``."""
    ids: list[int] = []
    for part in re.split("(" + "|".join(map(re.escape, MARKERS)) + ")", output):
        if part in MARKERS:
            ids.append(tokenizer.token_to_id(part))
        elif part and not ids:
            ids += tokenizer.encode(part, add_special_tokens=False).ids
        elif part:  # "\x00" takes the prepended "▁" and stands alone as <0x00>
            ids += tokenizer.encode("\x00" + part, add_special_tokens=False).ids[2:]
    assert tokenizer.decode(ids, skip_special_tokens=False) == output, output
    return ids


def record(case: Case, number: int, port: int, tokenizer: Tokenizer) -> dict[str, Any]:
    ids = encode(tokenizer, case.output) + ([EOS] if case.eos else [])
    finish = "stop" if case.eos else "length"
    model = case.model
    chat_request: dict[str, Any] = {"model": model,
                                    "messages": [{"role": "user", "content": USER}],
                                    **({"tools": TOOLS} if case.tools else {}), **case.request}
    # Mistral 7B v0.1's files carry no chat template (vLLM will not render): its prompt form
    prompt = [1, *tokenizer.encode(f"[INST] {USER} [/INST]", add_special_tokens=False).ids]
    features = ["chat", "parser", "parser:mistral", f"parser:{case.shape}",
                "reasoning" if "[THINK]" in case.output else "tool_call",
                "nonstream" if case.stream is None else "stream"]
    slug = f"{number:03d}-mistral-chat-{case.shape}" if case.stream is None else \
        f"{number:03d}-mistral-chat-stream-{case.shape}-{case.stream}"
    out: dict[str, Any] = {"name": slug, "model": model,
                           "endpoint": "/v1/chat/completions/derender",
                           "server_flags": FLAGS[model]}
    request_id = f"pub-{number:03d}-{'pn' if case.stream is None else 'ps'}"
    if case.stream is None:
        body = {"model": model, "generate_response": {
            "request_id": request_id, "prompt_token_ids": prompt,
            "choices": [{"index": 0, "token_ids": ids, "finish_reason": finish}]},
            "prompt_tokens": len(prompt), "chat_request": chat_request}
        status, response = post(port, "/v1/chat/completions/derender", body)
        out.update(kind="nonstream" if status == 200 else "error", features=sorted(features),
                   description=f"mistral {PARSERS[model]}, non-streaming, output "
                               f"shape {case.shape!r}. Raw output text: {case.output!r}",
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
        body = {"stream": True, "model": model, "generate_chunk": chunk,
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
               description=f"mistral {PARSERS[model]}, streaming ({case.stream}: "
                           f"{sizes}), shape {case.shape!r}. Raw output text: {case.output!r}",
               calls=calls, chunks=chunks)
    return out


def main() -> None:
    ports = {MODEL: int(sys.argv[1]), OLDER: int(sys.argv[2])}
    tokenizers = {name: Tokenizer.from_file(str(ROOT / "tests" / "models" / name /
                                                "tokenizer.json")) for name in ports}
    only = set(sys.argv[3:])
    for offset, case in enumerate(CASES):
        if only and str(FIRST + offset) not in only:
            continue
        case_json = record(case, FIRST + offset, ports[case.model], tokenizers[case.model])
        path = FIXTURES / f"{case_json['name']}.json"
        path.write_text(layout(case_json), encoding="utf-8")
        print(path.name, case_json["kind"], len(case_json["calls"]))


if __name__ == "__main__":
    main()
