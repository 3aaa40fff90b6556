"""Record the deepseek_v3 and deepseek_v31 conformance cases from the real vLLM 0.33 server.

Usage (four servers on the deepseek-v3 model folder, which has the markers as single tokens):

    for spec in "8210 deepseek_v3" "8211 deepseek_v31"; do set -- $spec
        ../shared/peer/start.sh deepseek-v3 $1 --tool-call-parser $2 --enable-auto-tool-choice
    done
    ../shared/peer/start.sh deepseek-v3 8212 --tool-call-parser deepseek_v3 \\
        --reasoning-parser deepseek_r1 --enable-auto-tool-choice
    ../shared/peer/start.sh deepseek-v3 8213 --tool-call-parser deepseek_v31 \\
        --reasoning-parser deepseek_r1 --enable-auto-tool-choice
    .venv/bin/python scripts/record_deepseek_fixtures.py 8210 8211 8212 8213

The cases, their encoding and chunking are those of scripts/record_tool_fixtures.py (whose
helpers this reuses), on the deepseek-v3 tokenizer (EOS 1), numbered from FIRST.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record_tool_fixtures import (
    FIXTURES,
    NAMED,
    ROOT,
    TOOLS,
    USER,
    chunk_sizes,
    layout,
    post,
)

MODEL = "deepseek-v3"
TOKENIZER = ROOT / "tests" / "models" / MODEL / "tokenizer.json"
FIRST = 200
EOS = 1

B, E = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
C, F, S = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"


def v3_call(name: str, args: str, kind: str = "function") -> str:
    return f"{C}{kind}{S}{name}\n```json\n{args}\n```{F}"


def v31_call(name: str, args: str) -> str:
    return f"{C}{name}{S}{args}{F}"


PARIS = '{"city": "Paris", "unit": "c"}'
NESTED = ('{\n  "title": "Zürich \\ud83c\\udf26 trip",\n  '
          '"body": "line1\\nline2 \\"quoted\\" 東京 🌦",'
          '\n  "tags": ["travel", "天気"],\n  "meta": {"priority": 2, "nested": {"ok": true, '
          '"ratio": -0.25, "none": null}}\n}')

V3_SINGLE = B + v3_call("get_weather", PARIS) + E
V3_PARALLEL = (B + v3_call("get_weather", '{"city": "Zürich"}') + "\n"
               + v3_call("get_weather", '{"city": "東京", "unit": "c"}') + E)
V3_BEFORE = "Let me check the weather for you.\n\n" + B + v3_call("get_weather",
                                                                 '{"city": "Paris"}') + E
V3_AFTER = V3_SINGLE + "\nI will report back shortly."
V3_NESTED = B + v3_call("create_note", NESTED) + E
V3_TRUNCATED = B + C + "function" + S + 'get_weather\n```json\n{"city": "Par'
V3_NO_FENCE = B + C + "function" + S + 'get_weather\n{"city": "Paris"}' + F + E
V3_NO_BEGIN = v3_call("get_weather", PARIS)

V31_SINGLE = B + v31_call("get_weather", PARIS) + E
V31_PARALLEL = (B + v31_call("get_weather", '{"city": "Zürich"}')
                + v31_call("create_note", '{"title": "東京 trip", "tags": ["x"]}') + E)
V31_BEFORE = "Let me check the weather for you.\n\n" + B + v31_call("get_weather",
                                                                   '{"city": "Paris"}') + E
V31_AFTER = V31_SINGLE + "\nI will report back shortly."
V31_NESTED = B + v31_call("create_note", NESTED) + E
V31_TRUNCATED = B + C + "get_weather" + S + '{"city": "Par'
V31_NO_BEGIN = v31_call("get_weather", PARIS)

THINK = "The user wants Paris weather; call the tool.\n</think>\n\n"


@dataclass
class Case:
    parser: str
    shape: str
    output: str
    eos: int | None = EOS
    request: dict[str, Any] = field(default_factory=dict)
    stream: str | None = None
    usage_chunk: bool = False
    finish_alone: bool = False
    reasoning: bool = False


def cases() -> list[Case]:
    v3, v31 = "deepseek_v3", "deepseek_v31"
    return [
        Case(v3, "single", V3_SINGLE),
        Case(v3, "parallel", V3_PARALLEL),
        Case(v3, "content_before", V3_BEFORE),
        Case(v3, "content_after", V3_AFTER),
        Case(v3, "nested_args", V3_NESTED),
        Case(v3, "truncated", V3_TRUNCATED, eos=None),
        Case(v3, "no_fence", V3_NO_FENCE),
        Case(v3, "no_begin", V3_NO_BEGIN),
        Case(v3, "tool_choice_none", V3_SINGLE, request={"tool_choice": "none"}),
        Case(v3, "required", V3_SINGLE, request={"tool_choice": "required"}),
        Case(v3, "named", V3_SINGLE, request={"tool_choice": NAMED}),
        Case(v3, "parallel_false", V3_PARALLEL, request={"parallel_tool_calls": False}),
        Case(v3, "single", V3_SINGLE, stream="one"),
        Case(v3, "parallel", V3_PARALLEL, stream="small", usage_chunk=True),
        Case(v3, "content_before", V3_BEFORE, stream="mixed"),
        Case(v3, "content_after", V3_AFTER, stream="small"),
        Case(v3, "nested_args", V3_NESTED, stream="small", finish_alone=True),
        Case(v3, "truncated", V3_TRUNCATED, eos=None, stream="one"),
        Case(v3, "no_fence", V3_NO_FENCE, stream="small"),
        Case(v31, "single", V31_SINGLE),
        Case(v31, "parallel", V31_PARALLEL),
        Case(v31, "content_before", V31_BEFORE),
        Case(v31, "content_after", V31_AFTER),
        Case(v31, "nested_args", V31_NESTED),
        Case(v31, "truncated", V31_TRUNCATED, eos=None),
        Case(v31, "no_begin", V31_NO_BEGIN),
        Case(v31, "named", V31_SINGLE, request={"tool_choice": NAMED}),
        Case(v31, "parallel_false", V31_PARALLEL, request={"parallel_tool_calls": False}),
        Case(v31, "single", V31_SINGLE, stream="small"),
        Case(v31, "parallel", V31_PARALLEL, stream="one", usage_chunk=True),
        Case(v31, "content_before", V31_BEFORE, stream="mixed"),
        Case(v31, "content_after", V31_AFTER, stream="small"),
        Case(v31, "nested_args", V31_NESTED, stream="small", finish_alone=True),
        Case(v31, "truncated", V31_TRUNCATED, eos=None, stream="one"),
        Case(v3, "r1_think", THINK + V3_PARALLEL, reasoning=True),
        Case(v3, "r1_think", THINK + V3_PARALLEL, reasoning=True, stream="small"),
        Case(v31, "r1_think", THINK + V31_PARALLEL, reasoning=True),
        Case(v31, "r1_think", THINK + V31_PARALLEL, reasoning=True, stream="mixed"),
    ]


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
    flags = ["--served-model-name", MODEL, "--tool-call-parser", case.parser]
    if case.reasoning:
        flags += ["--reasoning-parser", "deepseek_r1"]
    flags.append("--enable-auto-tool-choice")
    features = ["chat", "parser", f"parser:{case.parser}", f"parser:{case.shape}", "tool_call",
                "nonstream" if case.stream is None else "stream"]
    if case.reasoning:
        features += ["reasoning", "parser:deepseek_r1"]
    slug = f"{number:03d}-{case.parser}-chat-{case.shape}" if case.stream is None else \
        f"{number:03d}-{case.parser}-chat-stream-{case.shape}-{case.stream}"
    out: dict[str, Any] = {"name": slug, "model": MODEL,
                           "endpoint": "/v1/chat/completions/derender", "server_flags": flags}
    request_id = f"pub-{number:03d}-{'pn' if case.stream is None else 'ps'}"
    parsers = case.parser + (" + deepseek_r1 reasoning" if case.reasoning else "")
    if case.stream is None:
        body = {"model": MODEL, "generate_response": {
            "request_id": request_id, "prompt_token_ids": prompt,
            "choices": [{"index": 0, "token_ids": ids, "finish_reason": finish}]},
            "prompt_tokens": len(prompt), "chat_request": chat_request}
        status, response = post(port, "/v1/chat/completions/derender", body)
        out.update(kind="nonstream" if status == 200 else "error", features=sorted(features),
                   description=f"{parsers} parser, non-streaming, output shape "
                               f"{case.shape!r}. Raw output text: {case.output!r}",
                   calls=[{"request": body, "status": status, "response": response}])
        return out
    rng = random.Random(number)
    sizes = chunk_sizes(len(ids), case.stream, rng)
    engine: list[dict[str, Any]] = []
    at = 0
    for k, size in enumerate(sizes):
        last = k == len(sizes) - 1 and not case.finish_alone
        engine.append({"request_id": request_id, "choices": [{
            "index": 0, "token_ids": ids[at:at + size],
            "finish_reason": finish if last else None}]})
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
               description=f"{parsers} parser, streaming ({case.stream}: {sizes}), "
                           f"shape {case.shape!r}. Raw output text: {case.output!r}",
               calls=calls, chunks=chunks)
    return out


def main() -> None:
    v3, v31, v3_r1, v31_r1 = (int(port) for port in sys.argv[1:5])
    ports = {("deepseek_v3", False): v3, ("deepseek_v31", False): v31,
             ("deepseek_v3", True): v3_r1, ("deepseek_v31", True): v31_r1}
    target = Path(sys.argv[5]) if len(sys.argv) > 5 else FIXTURES
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    for offset, case in enumerate(cases()):
        case_json = record(case, FIRST + offset, ports[case.parser, case.reasoning], tokenizer)
        path = target / f"{case_json['name']}.json"
        path.write_text(layout(case_json), encoding="utf-8")
        print(path.name, case_json["kind"], len(case_json["calls"]))


if __name__ == "__main__":
    main()
