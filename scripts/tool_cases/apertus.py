"""Apertus (cases 8400-…): vLLM 0.33's ``apertus`` tool parser on ``apertus-standin`` (GPT-2's
vocabulary with ``<|tools_prefix|>`` 50257 and ``<|tools_suffix|>`` 50258 as added special
tokens; tests/models/README.md).

Usage (the peer's model folder is ``tests/models/apertus-standin`` with its derived tokenizer,
copied to ``j3-apertus``):

    "$VLLM_PEER"/start.sh j3-apertus 8710 --served-model-name apertus-standin \\
        --tool-call-parser apertus --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py apertus 8710

The output is ``<|tools_prefix|>[{"NAME": ARGUMENTS}, …]<|tools_suffix|>`` (each call a
one-key object, the key its name) with text around it, then ``<|endoftext|>`` 50256, or none
(finish "length"). Every case is recorded non-streaming and streamed.
"""

from __future__ import annotations

import json
from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.granite import HISTORY, LONG, PARIS, TYPED, prompt
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

MODEL = "apertus-standin"
EOS = 50256
A = "apertus"
SERVERS = {A: Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", A,
                             "--enable-auto-tool-choice"], "apertus tool parser", A,
                     (f"parser:{A}",), ROOT / "tests" / "models" / MODEL / "tokenizer.json")}
OPEN, CLOSE = "<|tools_prefix|>", "<|tools_suffix|>"


def calls(*items: str) -> str:
    return OPEN + "[" + ", ".join(items) + "]" + CLOSE


def item(name: str, args: str) -> str:
    return f'{{"{name}": {args}}}'


WEATHER = item("get_weather", PARIS)
SINGLE = calls(WEATHER)
OUTPUTS = {
    "single": SINGLE,
    "compact": OPEN + '[{"get_weather":{"city":"Paris","unit":"c"}}]' + CLOSE,
    "parallel": calls(item("get_weather", '{"city": "Zürich"}'),
                      item("get_weather", '{"city": "東京 \\"Tokyo\\"\\nline two", "unit": "f"}')),
    "typed": calls(item("set_config", TYPED), item("get_time", "{}")),
    "unicode": calls(item("get_weather", '{"city": "Zürich 東京 😀 \\u00e9\\ud83c\\udf89"}')),
    "long_value": calls(item("get_weather", json.dumps({"city": LONG}, ensure_ascii=False))),
    "content_before": "Let me check the weather for you.\n" + SINGLE,
    "space_before": "\n\n" + SINGLE,
    "content_after": SINGLE + "\nI will report back shortly.",
    "content_around": "  Checking.  " + SINGLE + "  Done.  ",
    "space_in_wrapper": OPEN + "\n [" + WEATHER + "]\n" + CLOSE,
    "no_call": "It is sunny in Paris [source: météo], 22 °C. 😀",
    "string_args": calls(item("get_weather", '"Paris"')),
    "null_args": calls(item("get_time", "null"), item("get_weather", PARIS)),
    "empty_list": "Hi " + OPEN + "[]" + CLOSE,
    "not_a_list": "Hi " + OPEN + WEATHER + CLOSE,
    "empty_element": calls("{}", WEATHER),
    "not_an_object": calls('"get_time"', "3", WEATHER),
    "two_keys": calls('{"get_weather": {"city": "Paris"}, "get_time": {}}'),
    "malformed": OPEN + "not json at all" + CLOSE + " trailing",
    "trailing_in_block": OPEN + "[" + WEATHER + "] oops" + CLOSE + " after",
    "no_end_tag": "Hi " + OPEN + "[" + WEATHER + "]",
    "no_end_tag_text": "Hi " + OPEN + "[" + WEATHER + "] and more text",
    "two_blocks": SINGLE + " " + calls(item("get_time", "{}")),
    "extra_suffix": SINGLE + " a " + CLOSE + " b",
    "suffix_first": "x " + CLOSE + " y " + SINGLE,
    "markers_in_text": "Write <|tools_prefix as text and [brackets] too.",
}
TRUNCATED = {
    "truncated_name": OPEN + '[{"get_wea',
    "truncated_key": OPEN + '[{"get_weather": ',
    "truncated_args": OPEN + '[{"get_weather": {"city": "Par',
    "truncated_number": OPEN + '[{"set_config": {"count": 12',
    "truncated_second": OPEN + "[" + WEATHER + ', {"get_time": {',
    "truncated_text": "Sure. " + OPEN + '[{"get_weather": {"city": "Pa\\u00',
}


def Case(shape: str, output: str, stream: str, **fields: Any) -> list[_Case]:  # noqa: N802
    return both(_Case(A, shape, output, **{"eos": EOS, **fields}), stream)


def apertus_cases() -> list[_Case]:
    cases: list[_Case] = []
    for shape, output in OUTPUTS.items():
        stream = "mixed" if shape in ("typed", "long_value") else "small"
        cases += Case(shape, output, stream)
    for shape, output in TRUNCATED.items():
        cases += Case(shape, output, "small", eos=None)
    cases += Case("tool_choice_none", "Sure. " + SINGLE, "small", request=NONE)
    cases += Case("no_tools", "Sure. " + SINGLE, "small", tools=False)
    cases += Case("tools_empty", SINGLE, "small", tools=False, request={"tools": []})
    cases += Case("required", SINGLE, "small", request=REQUIRED)
    cases += Case("required_json", '[{"name": "get_weather", "parameters": {"city": '
                  '"Paris"}}]', "small", request=REQUIRED)
    cases += Case("named", SINGLE, "small", request=NAMED_CHOICE)
    cases += Case("named_json", PARIS, "small", request=NAMED_CHOICE)
    cases += Case("history", SINGLE, "small", request=HISTORY)
    cases += Case("keep_special", "Hi.<|endoftext|>" + SINGLE, "small",
                  request={"skip_special_tokens": False})
    cases += Case("split_marker", "Sure. " + SINGLE, "one")
    return cases


FORMAT = Format(8400, SERVERS, apertus_cases(), tools=TOOLS, user=USER, prompt=prompt)
