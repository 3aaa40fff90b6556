"""IBM Granite (cases 3000-…): the ``granite4`` tool parser on ``granite4-standin`` (GPT-2's
vocabulary padded to 100,256 ids, then Granite 4.0's added tokens at the ids a public listing
gives: ``<tool_call>`` 100270, ``</tool_call>`` 100271, EOS ``<|end_of_text|>`` 100257; a
GraniteMoeHybrid config and a minimal Granite 4-style template).

Usage (`scripts/peer-model-folders.sh granite4-standin` first copies the derived folder):

    "$VLLM_PEER"/start.sh granite4-standin 8220 --tool-call-parser granite4 \\
        --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py granite 8220

The output is ``<tool_call>{"name": …, "arguments": …}</tool_call>`` calls with text around
them, then EOS, or none (finish "length"). Every case is recorded non-streaming and streamed.
"""

from __future__ import annotations

import json
from typing import Any

from record_tool_fixtures import ROOT, Format, Server, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

MODEL = "granite4-standin"
END_OF_TEXT = 100257
G4 = "granite4"

SERVERS = {G4: Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", "granite4",
                              "--enable-auto-tool-choice"],
                      "granite4 tool parser", "granite4", ("parser:granite4",),
                      ROOT / "tests" / "models" / MODEL / "tokenizer.json")}

OPEN, CLOSE = "<tool_call>", "</tool_call>"


def call(name: str, args: str, around: str = "\n") -> str:
    return f'{OPEN}{around}{{"name": "{name}", "arguments": {args}}}{around}{CLOSE}'


PARIS = '{"city": "Paris", "unit": "c"}'
SINGLE = call("get_weather", PARIS)
TYPED = ('{"count": 3, "ratio": 0.5, "enabled": true, "tags": ["a", "b"], "meta": {"k": 1}, '
         '"note": null, "label": "42", "level": 2}')
LONG = "x" * 300 + " ünïcødé 東京 😀🎉 " + "y" * 300
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
    "whitespace_after": SINGLE + "\n\n",
    "no_call": "It is sunny in Paris, 22 °C. 😀",
    "flipped": OPEN + '{"arguments": {"city": "Paris"}, "name": "get_weather"}' + CLOSE,
    "arguments_string": OPEN + '{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}'
    + CLOSE,
    "arguments_null": OPEN + '{"name": "get_time", "arguments": null}' + CLOSE,
    "arguments_list": OPEN + '{"name": "get_time", "arguments": [1, 2]}' + CLOSE,
    "no_arguments_key": OPEN + '{"name": "get_time"}' + CLOSE,
    "extra_keys": OPEN + '{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": 7}' + CLOSE,
    "invalid_json": OPEN + "{'name': 'get_weather', 'arguments': {}}" + CLOSE,
    "invalid_after_valid": SINGLE + OPEN + '{"name": "get_time", "arguments": {' + CLOSE,
    "unclosed": "Checking.\n" + OPEN + '{"name": "get_weather", "arguments": ' + PARIS + "}",
    "stray_close": "Done." + CLOSE,
    "two_opens": OPEN + OPEN + '{"name": "get_time", "arguments": {}}' + CLOSE,
    "empty_call": "Hi " + OPEN + CLOSE,
    "close_in_string": call("get_weather", '{"city": "a</tool_call>b"}'),
    "markers_in_text": "Granite writes <tool call> and </ tool_call> as text.",
}
TRUNCATED_NAME = OPEN + '\n{"name": "get_wea'
TRUNCATED_ARGS = OPEN + '\n{"name": "get_weather", "arguments": {"city": "Par'

HISTORY: dict[str, Any] = {"messages": [
    {"role": "user", "content": USER},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": json.dumps({"city": "Rome"})}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    {"role": "user", "content": "And Paris?"}]}


def Case(server: str, shape: str, output: str, stream: str,  # noqa: N802
         **fields: Any) -> list[_Case]:
    return both(_Case(server, shape, output, **{"eos": END_OF_TEXT, **fields}), stream)


def granite4_cases() -> list[_Case]:
    cases: list[_Case] = []
    streams = {"single": "one", "compact": "small", "parallel": "small", "typed": "mixed",
               "unicode": "one", "long_value": "mixed", "no_args": "one",
               "content_before": "mixed", "content_after": "small", "content_between": "small",
               "whitespace_before": "one", "whitespace_after": "one", "no_call": "small",
               "flipped": "small", "arguments_string": "small", "arguments_null": "one",
               "arguments_list": "small", "no_arguments_key": "small", "extra_keys": "small",
               "invalid_json": "small", "invalid_after_valid": "small", "unclosed": "small",
               "stray_close": "one", "two_opens": "one", "empty_call": "one",
               "close_in_string": "one", "markers_in_text": "small"}
    for shape, stream in streams.items():
        cases += Case(G4, shape, OUTPUTS[shape], stream)
    cases += Case(G4, "truncated_name", TRUNCATED_NAME, "one", eos=None)
    cases += Case(G4, "truncated_args", TRUNCATED_ARGS, "small", eos=None)
    cases += Case(G4, "tool_choice_none", SINGLE, "small", request=NONE)
    cases += Case(G4, "no_tools", "Sure. " + SINGLE, "small", tools=False)
    cases += Case(G4, "tools_empty", SINGLE, "small", tools=False, request={"tools": []})
    cases += Case(G4, "required", SINGLE, "small", request=REQUIRED)
    cases += Case(G4, "required_json", '[{"name": "get_weather", "parameters": {"city": '
                  '"Paris"}}, {"name": "get_time", "parameters": {}}]', "small",
                  request=REQUIRED)
    cases += Case(G4, "named", SINGLE, "mixed", request=NAMED_CHOICE)
    cases += Case(G4, "named_json", '{"city": "Paris", "unit": "c"}', "small",
                  request=NAMED_CHOICE)
    cases += Case(G4, "history", call("get_weather", '{"city": "Paris"}'), "small",
                  request=HISTORY)
    cases += Case(G4, "keep_special", "Hi." + SINGLE, "small",
                  request={"skip_special_tokens": False})
    cases += Case(G4, "keep_special_eos_text", "Hi.<|start_of_role|>" + SINGLE, "small",
                  request={"skip_special_tokens": False})
    cases += Case(G4, "skip_special_eos_text", "Hi.<|start_of_role|>" + SINGLE, "small")
    cases += Case(G4, "thinking_kwargs", SINGLE, "small",
                  request={"chat_template_kwargs": {"thinking": True}})
    return cases


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    if chat_request.get("tools") == []:  # refused by the render step: rendered without
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(3000, SERVERS, granite4_cases(), tools=TOOLS, user=USER, prompt=prompt)
