"""LongCat-Flash (cases 3150-…): the ``longcat`` tool parser (vLLM's hermes parser with
``<longcat_tool_call>``/``</longcat_tool_call>``) on ``qwen3``'s vocabulary, a stand-in:
LongCat's own vocabulary was not used, and there the tags are text of several tokens
(``<long`` ``cat`` ``_tool`` ``_call`` ``>{`` …, a tag's end merged with the JSON's brace).

Usage:

    "$VLLM_PEER"/start.sh qwen3 8222 --tool-call-parser longcat --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py longcat 8222

The output is ``<longcat_tool_call>{"name": …, "arguments": …}</longcat_tool_call>`` calls
with text around them, then ``<|im_end|>`` 151645, or none (finish "length"). Every case is
recorded non-streaming and streamed.
"""

from __future__ import annotations

import json
from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.granite import HISTORY, LONG, PARIS, TYPED, prompt
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

MODEL = "qwen3"
IM_END = 151645
LC = "longcat"

SERVERS = {LC: Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", "longcat",
                              "--enable-auto-tool-choice"],
                      "longcat tool parser", "longcat", ("parser:longcat",),
                      ROOT / "layers" / "tokenizers" / MODEL / "tokenizer.json")}

OPEN, CLOSE = "<longcat_tool_call>", "</longcat_tool_call>"


def call(name: str, args: str, around: str = "\n") -> str:
    return f'{OPEN}{around}{{"name": "{name}", "arguments": {args}}}{around}{CLOSE}'


SINGLE = call("get_weather", PARIS)
OUTPUTS = {
    "single": SINGLE,
    "compact": OPEN + '{"name":"get_weather","arguments":{"city":"Paris","unit":"c"}}' + CLOSE,
    "parallel": call("get_weather", '{"city": "Zürich"}') + "\n"
    + call("get_weather", '{"city": "東京 \\"Tokyo\\"\\nline two", "unit": "f"}'),
    "typed": call("set_config", TYPED),
    "unicode": call("get_weather", '{"city": "Zürich 東京 😀 \\u00e9\\ud83c\\udf89"}'),
    "long_value": call("get_weather", json.dumps({"city": LONG}, ensure_ascii=False)),
    "no_args": call("get_time", "{}"),
    "content_before": "Let me check the weather for you.\n" + SINGLE,
    "content_after": SINGLE + "\nI will report back shortly.",
    "content_between": call("get_weather", '{"city": "Rome"}') + "\nand then\n"
    + call("get_time", "{}"),
    "whitespace_before": "\n\n" + SINGLE,
    "no_call": "It is sunny in Paris, 22 °C. 😀",
    "flipped": OPEN + '{"arguments": {"city": "Paris"}, "name": "get_weather"}' + CLOSE,
    "no_arguments_key": OPEN + '{"name": "get_time"}' + CLOSE,
    "invalid_json": OPEN + "{'name': 'get_weather', 'arguments': {}}" + CLOSE,
    "invalid_after_valid": SINGLE + OPEN + '{"oops": 1}' + CLOSE,
    "unclosed": "Checking.\n" + OPEN + '{"name": "get_weather", "arguments": ' + PARIS + "}",
    "hermes_tags": '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
    "</tool_call>",
    "markers_in_text": "LongCat writes <longcat tool call> and </longcat_tool as text.",
}
TRUNCATED_NAME = OPEN + '\n{"name": "get_wea'
TRUNCATED_ARGS = OPEN + '\n{"name": "get_weather", "arguments": {"city": "Par'


def Case(server: str, shape: str, output: str, stream: str,  # noqa: N802
         **fields: Any) -> list[_Case]:
    return both(_Case(server, shape, output, **{"eos": IM_END, **fields}), stream)


def longcat_cases() -> list[_Case]:
    cases: list[_Case] = []
    streams = {"single": "one", "compact": "small", "parallel": "small", "typed": "mixed",
               "unicode": "small", "long_value": "mixed", "no_args": "one",
               "content_before": "mixed", "content_after": "small", "content_between": "small",
               "whitespace_before": "one", "no_call": "small", "flipped": "small",
               "no_arguments_key": "small", "invalid_json": "small",
               "invalid_after_valid": "small", "unclosed": "small", "hermes_tags": "small",
               "markers_in_text": "small"}
    for shape, stream in streams.items():
        cases += Case(LC, shape, OUTPUTS[shape], stream)
    cases += Case(LC, "truncated_name", TRUNCATED_NAME, "one", eos=None)
    cases += Case(LC, "truncated_args", TRUNCATED_ARGS, "small", eos=None)
    cases += Case(LC, "tool_choice_none", SINGLE, "small", request=NONE)
    cases += Case(LC, "no_tools", "Sure. " + SINGLE, "small", tools=False)
    cases += Case(LC, "tools_empty", SINGLE, "small", tools=False, request={"tools": []})
    cases += Case(LC, "required", SINGLE, "small", request=REQUIRED)
    cases += Case(LC, "required_json", '[{"name": "get_weather", "parameters": {"city": '
                  '"Paris"}}]', "small", request=REQUIRED)
    cases += Case(LC, "named", SINGLE, "mixed", request=NAMED_CHOICE)
    cases += Case(LC, "named_json", PARIS, "small", request=NAMED_CHOICE)
    cases += Case(LC, "history", call("get_weather", '{"city": "Paris"}'), "small",
                  request=HISTORY)
    cases += Case(LC, "keep_special", "Hi.<|im_start|>" + SINGLE, "small",
                  request={"skip_special_tokens": False})
    cases += Case(LC, "skip_special", "Hi.<|im_start|>" + SINGLE, "small")
    return cases


FORMAT = Format(3150, SERVERS, longcat_cases(), tools=TOOLS, user=USER, prompt=prompt)
