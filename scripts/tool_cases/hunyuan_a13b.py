"""Hunyuan-A13B (cases 5520-…): vLLM 0.33's ``hunyuan_a13b`` tool parser alone and with the
``hunyuan_a13b`` reasoning parser (5592-…), on
``hunyuan-a13b-standin`` (GPT-2's vocabulary as it is: ``<tool_calls>`` and ``</tool_calls>``
are text of several tokens, as the think and answer tags are in Hunyuan's own vocabulary;
tests/models/README.md).

Usage (the peer's model folder is ``tests/models/hunyuan-a13b-standin`` with its derived
tokenizer):

    "$VLLM_PEER"/start.sh i19wr-hunyuan 8321 --served-model-name hunyuan-a13b-standin \\
        --tool-call-parser hunyuan_a13b --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh i19wr-hunyuan 8322 --served-model-name hunyuan-a13b-standin \\
        --reasoning-parser hunyuan_a13b --tool-call-parser hunyuan_a13b --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py hunyuan_a13b 8321 8322

With reasoning the output is ``<think>\\n…\\n</think>\\n<answer>\\n…\\n</answer>``; vLLM's streaming
reasoning parser takes one token per chunk (it asserts so), so those streams are "one".

The output is ``<tool_calls>[{"name": …, "arguments": …}, …]</tool_calls>`` with text around
it, then ``<|endoftext|>`` 50256, or none (finish "length"). Every case is recorded
non-streaming and streamed.
"""

from __future__ import annotations

import json
from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.granite import HISTORY, LONG, PARIS, TYPED, prompt
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

MODEL = "hunyuan-a13b-standin"
EOS = 50256
H = "hunyuan_a13b"
RH = "hunyuan_a13b+hunyuan_a13b"
SERVERS = {H: Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", H,
                             "--enable-auto-tool-choice"], "hunyuan_a13b tool parser", H,
                     (f"parser:{H}",), ROOT / "tests" / "models" / MODEL / "tokenizer.json"),
           RH: Server(MODEL, ["--served-model-name", MODEL, "--reasoning-parser", H,
                              "--tool-call-parser", H, "--enable-auto-tool-choice"],
                      "hunyuan_a13b reasoning and tool parsers", H + "-reasoning",
                      (f"parser:{H}", "reasoning", f"reasoning_parser:{H}"),
                      ROOT / "tests" / "models" / MODEL / "tokenizer.json")}


def calls(*items: str) -> str:
    return "<tool_calls>[" + ", ".join(items) + "]</tool_calls>"


def item(name: str, args: str) -> str:
    return f'{{"name": "{name}", "arguments": {args}}}'


WEATHER = item("get_weather", PARIS)
SINGLE = calls(WEATHER)
OUTPUTS = {
    "single": SINGLE,
    "compact": '<tool_calls>[{"name":"get_weather","arguments":{"city":"Paris","unit":"c"}}]'
    "</tool_calls>",
    "parallel": calls(item("get_weather", '{"city": "Zürich"}'),
                      item("get_weather", '{"city": "東京 \\"Tokyo\\"\\nline two", "unit": "f"}')),
    "typed": calls(item("set_config", TYPED), item("get_time", "{}")),
    "unicode": calls(item("get_weather", '{"city": "Zürich 東京 😀 \\u00e9\\ud83c\\udf89"}')),
    "long_value": calls(item("get_weather", json.dumps({"city": LONG}, ensure_ascii=False))),
    "content_before": "Let me check the weather for you.\n" + SINGLE,
    "space_before": "\n\n" + SINGLE,
    "content_after": SINGLE + "\nI will report back shortly.",
    "space_in_wrapper": "<tool_calls>\n [" + WEATHER + "]\n</tool_calls>",
    "no_call": "It is sunny in Paris [source: météo], 22 °C. 😀",
    "assistant_prefix": "助手：It is sunny. 助手：again",
    "assistant_prefix_call": "助手：Checking. " + SINGLE,
    "flipped": calls('{"arguments": {"city": "Paris"}, "name": "get_weather"}'),
    "no_arguments_key": calls('{"name": "get_time"}', WEATHER),
    "string_args": calls(item("get_weather", '"Paris"')),
    "empty_list": "Hi <tool_calls>[]</tool_calls>",
    "not_a_list": "Hi <tool_calls>" + WEATHER + "</tool_calls>",
    "malformed": "<tool_calls>not json at all</tool_calls> trailing",
    "malformed_then_valid": "<tool_calls>[oops]</tool_calls> then " + SINGLE,
    "no_end_tag": "Hi <tool_calls>[" + WEATHER + "]",
    "two_blocks": SINGLE + " " + calls(item("get_time", "{}")),
    "in_think": "<think>maybe " + SINGLE + "</think>ok",
    "markers_in_text": "Write <tool_calls as text and [brackets] too.",
}
THINK, ANSWER_START, ANSWER_END = "<think>\n", "\n</think>\n<answer>\n", "\n</answer>"
THOUGHT = "Paris weather; call the tool."
REASONED = {
    "r_answer": THINK + THOUGHT + ANSWER_START + "It is sunny 🌞." + ANSWER_END,
    "r_answer_tail": THINK + THOUGHT + ANSWER_START + "Sunny." + ANSWER_END + " tail",
    "r_call": THINK + THOUGHT + ANSWER_START + SINGLE + ANSWER_END,
    "r_call_text": THINK + THOUGHT + ANSWER_START + "Checking. " + SINGLE,
    "r_no_answer_end": THINK + THOUGHT + ANSWER_START + "Sunny.",
    "r_no_think": "Sunny today." + ANSWER_END + " tail",
    "r_plain": "Sunny today, no tags.",
    "r_unclosed": THINK + THOUGHT + " still thinking",
    "r_unclosed_answer_end": THINK + THOUGHT + ANSWER_END,
    "r_late_think": "Hmm. " + THINK + THOUGHT + ANSWER_START + "Sunny.",
    "r_empty_think": THINK + ANSWER_START[1:] + "Sunny." + ANSWER_END,
}
TRUNCATED_NAME = '<tool_calls>[{"name": "get_wea'
TRUNCATED_ARGS = '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Par'


def Case(shape: str, output: str, stream: str, **fields: Any) -> list[_Case]:  # noqa: N802
    return both(_Case(H, shape, output, **{"eos": EOS, **fields}), stream)


def hunyuan_cases() -> list[_Case]:
    cases: list[_Case] = []
    for shape, output in OUTPUTS.items():
        stream = "mixed" if shape in ("typed", "long_value") else "small"
        cases += Case(shape, output, stream)
    cases += Case("truncated_name", TRUNCATED_NAME, "small", eos=None)
    cases += Case("truncated_args", TRUNCATED_ARGS, "small", eos=None)
    cases += Case("tool_choice_none", SINGLE, "small", request=NONE)
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
    for shape, output in REASONED.items():
        cases += both(_Case(RH, shape, output, eos=EOS, kind="reasoning"), "one")
    cases += both(_Case(RH, "r_cut_in_reasoning", THINK + THOUGHT[:20], eos=None,
                        kind="reasoning"), "one")
    cases += both(_Case(RH, "r_no_tools", THINK + THOUGHT + ANSWER_START + "Sunny." + ANSWER_END,
                        eos=EOS, tools=False, kind="reasoning"), "one")
    cases += both(_Case(RH, "r_named", THINK + THOUGHT + ANSWER_START + PARIS + ANSWER_END,
                        eos=EOS, request=NAMED_CHOICE, kind="reasoning"), "one")
    return cases


FORMAT = Format(5520, SERVERS, hunyuan_cases(), tools=TOOLS, user=USER, prompt=prompt)
