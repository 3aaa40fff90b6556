"""IBM Granite (cases 3000-…): the ``granite4`` tool parser (3000-3081) and the
``granite-20b-fc`` tool parser (3082-…) on ``granite4-standin`` (GPT-2's
vocabulary padded to 100,256 ids, then Granite 4.0's added tokens at the ids a public listing
gives: ``<tool_call>`` 100270, ``</tool_call>`` 100271, EOS ``<|end_of_text|>`` 100257; a
GraniteMoeHybrid config and a minimal Granite 4-style template).

Usage (`scripts/peer-model-folders.sh granite4-standin` first copies the derived folder):

    "$VLLM_PEER"/start.sh granite4-standin 8220 --tool-call-parser granite4 \\
        --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh granite4-standin 8221 --tool-call-parser granite-20b-fc \\
        --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py granite 8220 8221

The output is ``<tool_call>{"name": …, "arguments": …}</tool_call>`` calls with text around
them, then EOS, or none (finish "length"). ``granite-20b-fc`` outputs are
``<function_call> {"name": …, "arguments": …}`` per call, no closing tag (granite-20b-
functioncalling's own vocabulary, StarCoder's, is not used: ``<function_call>`` is plain text
in both). Every case is recorded non-streaming and streamed.
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
G4, FC = "granite4", "granite-20b-fc"

SERVERS = {G4: Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", "granite4",
                              "--enable-auto-tool-choice"],
                      "granite4 tool parser", "granite4", ("parser:granite4",),
                      ROOT / "tests" / "models" / MODEL / "tokenizer.json"),
           FC: Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser",
                              "granite-20b-fc", "--enable-auto-tool-choice"],
                      "granite-20b-fc tool parser", "granite-20b-fc",
                      ("parser:granite-20b-fc",),
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


FCALL = "<function_call>"


def fc(name: str, args: str) -> str:
    return f'{FCALL} {{"name": "{name}", "arguments": {args}}}'


FC_OUTPUTS = {
    "single": fc("get_weather", PARIS),
    "compact": FCALL + '{"name":"get_weather","arguments":{"city":"Paris","unit":"c"}}',
    "parallel": fc("get_weather", '{"city": "Zürich"}') + " "
    + fc("get_weather", '{"city": "東京 \\"Tokyo\\"\\nline two", "unit": "f"}'),
    "parallel_newline": fc("get_weather", '{"city": "Rome"}') + "\n" + fc("get_time", "{}"),
    "typed": fc("set_config", TYPED),
    "unicode": fc("get_weather", '{"city": "Zürich 東京 😀 \\u00e9\\ud83c\\udf89"}'),
    "long_value": fc("get_weather", json.dumps({"city": LONG}, ensure_ascii=False)),
    "no_args": fc("get_time", "{}"),
    "content_before": "Let me check the weather for you.\n" + fc("get_weather", PARIS),
    "content_after": fc("get_weather", PARIS) + "\nI will report back shortly.",
    "content_between": fc("get_weather", '{"city": "Rome"}') + " and then "
    + fc("get_time", "{}"),
    "whitespace_before": "\n\n" + fc("get_weather", PARIS),
    "no_call": "It is sunny in Paris, 22 °C. 😀",
    "flipped": FCALL + ' {"arguments": {"city": "Paris"}, "name": "get_weather"}',
    "arguments_string": FCALL + ' {"name": "get_weather", "arguments": "x"}',
    "no_arguments_key": FCALL + ' {"name": "get_time"}',
    "invalid_json": FCALL + " {'name': 'get_weather', 'arguments': {}}",
    "invalid_after_valid": fc("get_weather", PARIS) + " " + FCALL + " {oops}",
    "marker_in_args": fc("get_weather", '{"city": "a<function_call>b"}'),
    "marker_alone": "Hi " + FCALL,
    "tags": "<tool_call>" + fc("get_weather", PARIS) + "</tool_call>",
}
FC_TRUNCATED_NAME = FCALL + ' {"name": "get_wea'
FC_TRUNCATED_ARGS = FCALL + ' {"name": "get_weather", "arguments": {"city": "Par'


def fc_cases() -> list[_Case]:
    cases: list[_Case] = []
    streams = {"single": "one", "compact": "small", "parallel": "small",
               "parallel_newline": "mixed", "typed": "mixed", "unicode": "small",
               "long_value": "mixed", "no_args": "one", "content_before": "mixed",
               "content_after": "small", "content_between": "small",
               "whitespace_before": "one", "no_call": "small", "flipped": "small",
               "arguments_string": "small", "no_arguments_key": "small",
               "invalid_json": "small", "invalid_after_valid": "small",
               "marker_in_args": "one", "marker_alone": "one", "tags": "small"}
    for shape, stream in streams.items():
        cases += Case(FC, shape, FC_OUTPUTS[shape], stream)
    cases += Case(FC, "truncated_name", FC_TRUNCATED_NAME, "one", eos=None)
    cases += Case(FC, "truncated_args", FC_TRUNCATED_ARGS, "small", eos=None)
    single = FC_OUTPUTS["single"]
    cases += Case(FC, "tool_choice_none", single, "small", request=NONE)
    cases += Case(FC, "no_tools", "Sure. " + single, "small", tools=False)
    cases += Case(FC, "required", single, "small", request=REQUIRED)
    cases += Case(FC, "named", single, "mixed", request=NAMED_CHOICE)
    cases += Case(FC, "named_json", PARIS, "small", request=NAMED_CHOICE)
    cases += Case(FC, "history", fc("get_weather", '{"city": "Paris"}'), "small",
                  request=HISTORY)
    cases += Case(FC, "keep_special", "Hi.<|start_of_role|>" + single, "small",
                  request={"skip_special_tokens": False})
    return cases


FORMAT = Format(3000, SERVERS, granite4_cases() + fc_cases(), tools=TOOLS, user=USER,
                prompt=prompt)
