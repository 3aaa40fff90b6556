"""ERNIE 4.5 (cases 5400-…): vLLM 0.33's ``ernie45`` tool parser alone and with the ``ernie45``
reasoning parser, on ``ernie45-standin`` (GPT-2's vocabulary with ERNIE's markers appended as
added tokens, not special: tests/models/README.md).

Usage (the peer's model folder is ``tests/models/ernie45-standin`` with its derived tokenizer):

    "$VLLM_PEER"/start.sh i19wr-ernie45 8321 --served-model-name ernie45-standin \\
        --tool-call-parser ernie45 --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh i19wr-ernie45 8322 --served-model-name ernie45-standin \\
        --reasoning-parser ernie45 --tool-call-parser ernie45 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py ernie45 8321 8322

The output is ``<tool_call>\\n{"name": …, "arguments": …}\\n</tool_call>`` calls with text
around them (after ``…</think>`` and a ``<response>…</response>`` answer with reasoning), then
``<|endoftext|>`` 50256, or none (finish "length"). Every case is recorded non-streaming and
streamed.
"""

from __future__ import annotations

import json
from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.granite import HISTORY, LONG, PARIS, TYPED, prompt
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

MODEL = "ernie45-standin"
EOS = 50256
T, RT = "ernie45", "ernie45+ernie45"
TOKENIZER = ROOT / "tests" / "models" / MODEL / "tokenizer.json"


def _server(reasoning: bool) -> Server:
    flags = ["--served-model-name", MODEL, "--tool-call-parser", "ernie45",
             "--enable-auto-tool-choice"]
    if reasoning:
        return Server(MODEL, ["--reasoning-parser", "ernie45", *flags],
                      "ernie45 reasoning and tool parsers", "ernie45-reasoning",
                      ("parser:ernie45", "reasoning", "reasoning_parser:ernie45"), TOKENIZER)
    return Server(MODEL, flags, "ernie45 tool parser", "ernie45", ("parser:ernie45",), TOKENIZER)


SERVERS = {T: _server(False), RT: _server(True)}
OPEN, CLOSE = "<tool_call>", "</tool_call>"


def call(name: str, args: str, around: str = "\n") -> str:
    return f'{OPEN}{around}{{"name": "{name}", "arguments": {args}}}{around}{CLOSE}'


SINGLE = call("get_weather", PARIS)
THOUGHT = "The user wants Paris weather; call the tool."
LEAD = THOUGHT + "\n</think>\n\n\n"
OUTPUTS = {
    "single": SINGLE,
    "compact": OPEN + '{"name":"get_weather","arguments":{"city":"Paris","unit":"c"}}' + CLOSE,
    "parallel": call("get_weather", '{"city": "Zürich"}') + "\n"
    + call("get_weather", '{"city": "東京 \\"Tokyo\\"\\nline two", "unit": "f"}'),
    "typed": call("set_config", TYPED),
    "unicode": call("get_weather", '{"city": "Zürich 東京 😀 \\u00e9\\ud83c\\udf89"}'),
    "long_value": call("get_weather", json.dumps({"city": LONG}, ensure_ascii=False)),
    "no_args": call("get_time", "{}"),
    "content_before": "Let me check the weather for you.\n\n" + SINGLE,
    "content_before_space": "Checking now. \n \n" + SINGLE,
    "content_after": SINGLE + "\nI will report back shortly.",
    "content_between": call("get_weather", '{"city": "Rome"}') + "\nand then\n"
    + call("get_time", "{}"),
    "whitespace_before": "\n\n" + SINGLE,
    "no_call": "It is sunny in Paris, 22 °C. 😀",
    "no_call_newlines": "It is sunny.\n\n",
    "flipped": OPEN + '{"arguments": {"city": "Paris"}, "name": "get_weather"}' + CLOSE,
    "no_arguments_key": OPEN + '{"name": "get_time"}' + CLOSE,
    "no_name_key": OPEN + '{"arguments": {"city": "Paris"}}' + CLOSE,
    "string_args": OPEN + '{"name": "get_weather", "arguments": "Paris"}' + CLOSE,
    "invalid_json": OPEN + "{'name': 'get_weather', 'arguments': {}}" + CLOSE,
    "invalid_after_valid": SINGLE + OPEN + '{"name": "get_time", "arguments": {,}}' + CLOSE,
    "unclosed": "Checking.\n" + OPEN + '{"name": "get_weather", "arguments": ' + PARIS + "}",
    "valid_then_unclosed": SINGLE + "\n" + OPEN + '{"name": "get_time", "arguments": {}}',
    "not_an_object": OPEN + "get_weather(city='Paris')" + CLOSE,
    "markers_in_text": "ERNIE writes <tool_call as text and </response> too.",
}
TRUNCATED_NAME = OPEN + '\n{"name": "get_wea'
TRUNCATED_ARGS = OPEN + '\n{"name": "get_weather", "arguments": {"city": "Par'
ANSWER = "It is sunny in Paris, 22 °C 🌞."
REASONED = {
    "r_single": LEAD + SINGLE,
    "r_parallel": LEAD + OUTPUTS["parallel"],
    "r_content_before": LEAD + "Let me check.\n" + SINGLE,
    "r_response": THOUGHT + "\n</think>\n\n<response>\n" + ANSWER + "\n</response>\n",
    "r_plain": THOUGHT + "\n</think>\n" + ANSWER,
    "r_text_around_response": LEAD + "Intro. <response>" + ANSWER + "</response> outro",
    "r_response_unclosed": LEAD + "<response>" + ANSWER,
    "r_response_twice": LEAD + "<response>A</response> mid </response> end",
    "r_end_before_start": LEAD + "</response> x <response>" + ANSWER,
    "r_response_call": LEAD + "<response>\n" + SINGLE + "\n</response>\n",
    "r_think_tag": "<think>\n" + THOUGHT + "\n</think>\n\n" + ANSWER,
    "r_text_before_think": "Hmm. <think>" + THOUGHT + "</think>" + ANSWER,
    "r_no_end": THOUGHT + " still thinking",
    "r_call_in_reasoning": THOUGHT + SINGLE,
    "r_unicode": "Zürich 東京 😀 …\n</think>\n\n" + ANSWER + " 😀🎉",
}
CUT_REASONING = THOUGHT[:20]
NOT_THINKING: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": False}}


def Case(server: str, shape: str, output: str, stream: str,  # noqa: N802
         **fields: Any) -> list[_Case]:
    return both(_Case(server, shape, output, **{"eos": EOS, **fields}), stream)


def ernie45_cases() -> list[_Case]:
    cases: list[_Case] = []
    streams = {"single": "small", "compact": "small", "parallel": "small", "typed": "mixed",
               "unicode": "small", "long_value": "mixed", "no_args": "small",
               "content_before": "mixed", "content_before_space": "small",
               "content_after": "small", "content_between": "small",
               "whitespace_before": "one", "no_call": "small", "no_call_newlines": "one",
               "flipped": "small", "no_arguments_key": "small", "no_name_key": "small",
               "string_args": "small", "invalid_json": "small", "invalid_after_valid": "small",
               "unclosed": "small", "valid_then_unclosed": "small", "not_an_object": "small",
               "markers_in_text": "small"}
    for shape, stream in streams.items():
        cases += Case(T, shape, OUTPUTS[shape], stream)
    cases += Case(T, "truncated_name", TRUNCATED_NAME, "one", eos=None)
    cases += Case(T, "truncated_args", TRUNCATED_ARGS, "small", eos=None)
    cases += Case(T, "tool_choice_none", SINGLE, "small", request=NONE)
    cases += Case(T, "no_tools", "Sure. " + SINGLE, "small", tools=False)
    cases += Case(T, "tools_empty", SINGLE, "small", tools=False, request={"tools": []})
    cases += Case(T, "required", SINGLE, "small", request=REQUIRED)
    cases += Case(T, "required_json", '[{"name": "get_weather", "parameters": {"city": '
                  '"Paris"}}]', "small", request=REQUIRED)
    cases += Case(T, "named", SINGLE, "mixed", request=NAMED_CHOICE)
    cases += Case(T, "named_json", PARIS, "small", request=NAMED_CHOICE)
    cases += Case(T, "history", call("get_weather", '{"city": "Paris"}'), "small",
                  request=HISTORY)
    cases += Case(T, "keep_special", "Hi.<|endoftext|>" + SINGLE, "small",
                  request={"skip_special_tokens": False})
    cases += Case(T, "split_marker", "Sure." + SINGLE, "one")
    for shape, output in REASONED.items():
        cases += Case(RT, shape, output, "small", kind="reasoning")
    cases += Case(RT, "r_cut_in_reasoning", CUT_REASONING, "small", eos=None, kind="reasoning")
    cases += Case(RT, "r_cut_in_args", LEAD + TRUNCATED_ARGS, "small", eos=None,
                  kind="reasoning")
    cases += Case(RT, "r_no_tools", LEAD + "<response>" + ANSWER + "</response>", "small",
                  tools=False, kind="reasoning")
    cases += Case(RT, "r_tool_choice_none", LEAD + SINGLE, "small", request=NONE,
                  kind="reasoning")
    cases += Case(RT, "r_thinking_off", "\n" + ANSWER, "small", request=NOT_THINKING,
                  kind="reasoning")
    cases += Case(RT, "r_required", LEAD + SINGLE, "small", request=REQUIRED, kind="reasoning")
    cases += Case(RT, "r_named", LEAD + PARIS, "small", request=NAMED_CHOICE, kind="reasoning")
    cases += Case(RT, "r_history", LEAD + SINGLE, "small", request=HISTORY, kind="reasoning")
    return cases


FORMAT = Format(5400, SERVERS, ernie45_cases(), tools=TOOLS, user=USER, prompt=prompt)
