"""Record the qwen3_coder conformance cases from the real vLLM 0.33 render server.

Usage (two servers on the Qwen3 tokenizer, the second with the qwen3 reasoning parser):

    ../shared/peer/start.sh qwen3 8230 --tool-call-parser qwen3_coder --enable-auto-tool-choice
    ../shared/peer/start.sh qwen3 8231 --reasoning-parser qwen3 --tool-call-parser qwen3_coder \
        --enable-auto-tool-choice
    .venv/bin/python scripts/record_qwen3_coder_fixtures.py 8230 8231

As scripts/record_tool_fixtures.py (whose helpers this uses): each case is a hand-written
model output encoded with the tokenizer (``<tool_call>`` and ``</think>`` become their ids),
then ``<|im_end|>`` (or nothing, finish "length"). The tools carry typed parameters, since
qwen3_coder types each parameter's value from the request's schema. Numbered from FIRST.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import record_tool_fixtures as common

ROOT = Path(__file__).resolve().parent.parent
MODEL = "qwen3"
TOKENIZER = ROOT / "layers" / "tokenizers" / MODEL / "tokenizer.json"
FIRST = 280
IM_END = 151645

WEATHER = common.WEATHER
CONFIG = {"type": "function", "function": {
    "name": "set_config", "description": "Set configuration values",
    "parameters": {"type": "object", "properties": {
        "count": {"type": "integer"}, "ratio": {"type": "number"},
        "enabled": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
        "meta": {"type": "object"}, "note": {"type": ["string", "null"]},
        "label": {"type": "string"}, "level": {"enum": [1, 2, 3]},
        "size": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "flag": {"type": "bool"}, "free": {}}}}}
FREE = {"type": "function", "function": {"name": "free_form", "description": "No schema",
                                          "parameters": {"type": "object"}}}
TOOLS = [WEATHER, CONFIG, FREE]
NAMED = {"type": "function", "function": {"name": "get_weather"}}
USER = "What's the weather in Paris? Then set the config."


@dataclass
class Case:
    shape: str
    output: str
    eos: int | None = IM_END
    request: dict[str, Any] = field(default_factory=dict)
    stream: str | None = None
    reasoning: bool = False
    usage_chunk: bool = False
    finish_alone: bool = False


def call(name: str, *params: tuple[str, str]) -> str:
    body = "".join(f"<parameter={p}>\n{v}\n</parameter>\n" for p, v in params)
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


SINGLE = call("get_weather", ("city", "Paris"), ("unit", "c"))
PARALLEL = (call("get_weather", ("city", "Zürich")) + "\n"
            + call("get_weather", ("city", "東京 \"Tokyo\"\nline two"), ("unit", "f")))
TYPED = call("set_config", ("count", "3"), ("ratio", "0.5"), ("enabled", "true"),
             ("tags", '["a", "b"]'), ("meta", '{"k": 1, "nested": {"ok": true}}'),
             ("note", "null"), ("label", "42"), ("level", "2"), ("size", "7"),
             ("flag", "False"), ("free", "12"))
FALLBACKS = call("set_config", ("count", "three"), ("ratio", "1e999"), ("enabled", "yes"),
                 ("tags", "['a', 'b']"), ("meta", "{'k': 1}"), ("note", "None"),
                 ("level", "2.0"), ("size", "seven"), ("flag", "1"))
NUMBERS = call("set_config", ("count", " 1_000 "), ("ratio", "5.0"), ("level", "-3"),
               ("enabled", "0"), ("note", "NULL"), ("size", "2.5"))
BEFORE = "Let me check the weather for you.\n\n" + SINGLE
AFTER = SINGLE + "\nI will tell you once I know."
NO_TAG = "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>"
NO_PARAM_END = ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
                "<parameter=unit>\nc\n</function>\n</tool_call>")
TRUNCATED = "<tool_call>\n<function=set_config>\n<parameter=count>\n3\n</parameter>\n" \
            "<parameter=label>\nhalf a la"
PLAIN = "Use <b>bold</b> when x > 3, and write <function=f> as text?"
UNKNOWN = call("lookup", ("query", "12"), ("page", "2")) + call("free_form", ("x", "1"))
EMPTY_VALUE = ("<tool_call>\n<function=get_weather>\n<parameter=city>\n\n</parameter>\n"
               "<parameter=unit>c</parameter>\n</function>\n</tool_call>")
THINK = "Let me think about the weather.\n</think>\n\n" + SINGLE
THINK_IMPLICIT = "I should call the tool.\n" + SINGLE

CASES = [
    Case("single", SINGLE),
    Case("parallel", PARALLEL),
    Case("typed", TYPED),
    Case("typed_fallbacks", FALLBACKS),
    Case("typed_numbers", NUMBERS),
    Case("content_before", BEFORE),
    Case("content_after", AFTER),
    Case("no_tool_call_tag", NO_TAG),
    Case("no_param_end", NO_PARAM_END),
    Case("truncated", TRUNCATED, eos=None),
    Case("plain_text", PLAIN),
    Case("unknown_tool", UNKNOWN),
    Case("empty_value", EMPTY_VALUE),
    Case("tool_choice_none", SINGLE, request={"tool_choice": "none"}),
    Case("required", SINGLE, request={"tool_choice": "required"}),
    Case("named", SINGLE, request={"tool_choice": NAMED}),
    Case("parallel_false", PARALLEL, request={"parallel_tool_calls": False}),
    Case("think", THINK, reasoning=True),
    Case("think_implicit", THINK_IMPLICIT, reasoning=True),
    Case("single", SINGLE, stream="small"),
    Case("parallel", PARALLEL, stream="one", usage_chunk=True),
    Case("typed", TYPED, stream="mixed"),
    Case("typed_fallbacks", FALLBACKS, stream="small", finish_alone=True),
    Case("content_before", BEFORE, stream="small"),
    Case("content_after", AFTER, stream="mixed"),
    Case("no_param_end", NO_PARAM_END, stream="small"),
    Case("truncated", TRUNCATED, eos=None, stream="one"),
    Case("plain_text", PLAIN, stream="small"),
    Case("named", SINGLE, stream="mixed", request={"tool_choice": NAMED}),
    Case("think", THINK, reasoning=True, stream="small"),
    Case("think_implicit", THINK_IMPLICIT, reasoning=True, stream="mixed"),
]


def to_common(case: Case) -> common.Case:
    return common.Case("qwen3_coder", case.shape, case.output, eos=case.eos,
                       request=case.request, stream=case.stream, usage_chunk=case.usage_chunk,
                       finish_alone=case.finish_alone,
                       features=("reasoning", "parser:qwen3") if case.reasoning else ())


def main() -> None:
    ports = (int(sys.argv[1]), int(sys.argv[2]))
    only = set(sys.argv[3:])
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    common.MODEL, common.TOOLS, common.USER = MODEL, TOOLS, USER
    for offset, case in enumerate(CASES):
        number = FIRST + offset
        if only and str(number) not in only:
            continue
        case_json = common.record(to_common(case), number, ports[case.reasoning], tokenizer)
        if case.reasoning:
            flags = case_json["server_flags"]
            case_json["server_flags"] = [*flags[:2], "--reasoning-parser", "qwen3", *flags[2:]]
            case_json["name"] = case_json["name"].replace("qwen3_coder-", "qwen3_coder-r-")
        path = common.FIXTURES / f"{case_json['name']}.json"
        path.write_text(common.layout(case_json), encoding="utf-8")
        print(path.name, case_json["kind"], len(case_json["calls"]))


if __name__ == "__main__":
    main()
