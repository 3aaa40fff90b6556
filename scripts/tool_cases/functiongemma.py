"""Google FunctionGemma's ``functiongemma`` tool parser (cases 5900-…, branch pythonic2).

vLLM 0.33's ``FunctionGemmaToolParser``: calls
``<start_function_call>call:NAME{key:<escape>value<escape>,…}<end_function_call>`` read with
two regular expressions (a call up to the first ``}<end_function_call>``, else to the output's
end; its ``key:<escape>value<escape>`` pairs, each value JSON-decoded where it is JSON), the
text before the first call content. Recorded on ``functiongemma-standin`` (the Gemma 3
tokenizer with seven unused tokens renamed to FunctionGemma's markers, special; a stand-in
template); EOS ``<end_of_turn>`` 106.

    mkdir -p $PEER_HOME/models/i19py-fgemma
    cp tests/models/functiongemma-standin/* $PEER_HOME/models/i19py-fgemma/
    "$VLLM_PEER"/start.sh i19py-fgemma 8332 --served-model-name functiongemma-standin \\
        --tool-call-parser functiongemma --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py functiongemma 8332

Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server, encode_plain
from record_tool_fixtures import Case as _Case

from tool_cases import lfm2, no_tools
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

FG = "functiongemma"
MODEL = "functiongemma-standin"
EOS = 106
SERVERS = {FG: Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", FG,
                              "--enable-auto-tool-choice"],
                      "functiongemma tool parser", "i19py-functiongemma", ("parser:functiongemma",),
                      ROOT / "tests" / "models" / MODEL / "tokenizer.json")}

S, E, Q = "<start_function_call>", "<end_function_call>", "<escape>"


def call(name: str, *pairs: tuple[str, str]) -> str:
    return S + "call:" + name + "{" + ",".join(f"{k}:{Q}{v}{Q}" for k, v in pairs) + "}" + E


SINGLE = call("get_weather", ("city", "Paris"), ("unit", "c"))
LONG = "Zürich 🌦 " * 70
OUTPUTS = {
    "single": SINGLE,
    "parallel": call("get_weather", ("city", "Zürich")) + call(
        "get_weather", ("city", "東京 🌦"), ("unit", "f")) + call("get_time"),
    "typed": call("set_config", ("count", "3"), ("ratio", "0.5"), ("enabled", "true"),
                  ("tags", '["a", "b"]'), ("meta", '{"k": 1, "nested": {"ok": false}}'),
                  ("note", "null"), ("label", "42"), ("level", "2")),
    "quoted": call("set_config", ("label", '"42"'), ("note", '"a \\"b\\""'), ("count", "-1.5e3")),
    "bare_values": S + "call:set_config{count:3,enabled:true,label:<escape>x<escape>}" + E,
    "unicode": call("get_weather", ("city", "ßen 🌍 𝔘"), ("unit", "c")),
    "long_value": call("get_weather", ("city", LONG)),
    "no_args": call("get_time"),
    "content_before": "Let me check. " + SINGLE,
    "content_after": SINGLE + " I will report back.",
    "content_between": "Checking.\n" + call("get_time") + " and " + SINGLE + "\nDone.",
    "leading_space": " \n " + SINGLE,
    "no_end": S + "call:get_weather{city:" + Q + "Paris" + Q + "}",
    "spans_calls": S + "call:get_weather{city:" + Q + "Paris" + Q + "}" + SINGLE,
    "spaced": S + "call:get_weather{ city:" + Q + "Paris" + Q + " , unit:" + Q + "c" + Q + " }" + E,
    "value_brace": call("get_weather", ("city", "a}b{c"), ("unit", "c")),
    "value_unclosed": S + "call:get_weather{city:" + Q + "Paris}" + E + " ok",
    "bad_header": S + "get_weather{city:" + Q + "Paris" + Q + "}" + E + " ok",
    "bad_header_then_call": "Hi " + S + "oops" + E + " " + SINGLE,
    "two_starts": S + S + "call:get_time{}" + E,
    "plain": "The weather in Paris is sunny, 22 °C. {Source: météo}",
    "plain_spaces": "  Sunny.  ",
}
STREAMS = {"single": "one", "parallel": "small", "typed": "mixed", "quoted": "small",
           "bare_values": "small", "unicode": "one", "long_value": "mixed", "no_args": "one",
           "content_before": "small", "content_after": "small", "content_between": "small",
           "leading_space": "one", "no_end": "small", "spans_calls": "small",
           "spaced": "small", "value_brace": "small", "value_unclosed": "small",
           "bad_header": "small", "bad_header_then_call": "small", "two_starts": "one",
           "plain": "small", "plain_spaces": "one"}


def Case(shape: str, output: str, stream: str, **fields: Any) -> list[_Case]:  # noqa: N802
    return both(_Case(FG, shape, output, **{"eos": EOS, **fields}), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    for shape, stream in STREAMS.items():
        out += Case(shape, OUTPUTS[shape], stream)
    out += Case("cut_in_name", S + "call:get_wea", "one", eos=None)
    out += Case("cut_in_args", S + "call:get_weather{city:" + Q + "Par", "small", eos=None)
    out += Case("tool_choice_none", SINGLE, "small", request=NONE)
    out += Case("no_tools", SINGLE, "small", tools=False)
    out += Case("empty_tools", SINGLE, "small", tools=False, request={"tools": []})
    out += Case("required", SINGLE, "small", request=REQUIRED)
    out += Case("required_json", '[{"name": "get_weather", "parameters": {"city": "Paris"}}]',
                "small", request=REQUIRED)
    out += Case("named_json", '{"city": "Paris", "unit": "f"}', "small", request=NAMED_CHOICE)
    out += Case("named_call", SINGLE, "small", request=NAMED_CHOICE)
    out += Case("multi_turn", call("get_weather", ("city", "Tokyo")), "small",
                request=lfm2.MULTI_TURN)
    out += Case("keep_special", SINGLE, "small", request={"skip_special_tokens": False})
    out += Case("skip_special", "Sure. " + SINGLE, "small",
                request={"skip_special_tokens": True})
    return out


FORMAT = Format(5900, SERVERS, cases(), tools=TOOLS, user=USER, encode=encode_plain,
                prompt=no_tools.prompt)
