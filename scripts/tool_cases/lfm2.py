"""LiquidAI LFM2's ``lfm2`` tool parser (cases 5800-…, branch pythonic2).

vLLM 0.33's ``Lfm2ToolParser``: a pythonic list inside ``<|tool_call_start|>`` …
``<|tool_call_end|>`` (special tokens), read with ``ast`` after repairs (raw control characters
in strings, leading zeros, nested quotes, Python keywords as parameter names), text around the
block content (echoes after the block dropped). Recorded on ``lfm2-standin`` (GPT-2's
vocabulary with LFM2's special tokens at their ids, a stand-in ChatML template); EOS
``<|im_end|>`` 7.

    mkdir -p $PEER_HOME/models/i19py-lfm2
    cp tests/models/lfm2-standin/*.json tests/models/lfm2-standin/*.jinja \\
        $PEER_HOME/models/i19py-lfm2/
    "$VLLM_PEER"/start.sh i19py-lfm2 8331 --served-model-name lfm2-standin \\
        --tool-call-parser lfm2 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py lfm2 8331

Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server, encode_plain
from record_tool_fixtures import Case as _Case

from tool_cases import no_tools
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

LFM2 = "lfm2"
MODEL = "lfm2-standin"
EOS = 7
SERVERS = {LFM2: Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", "lfm2",
                                "--enable-auto-tool-choice"],
                        "lfm2 tool parser", "i19py-lfm2", ("parser:lfm2",),
                        ROOT / "tests" / "models" / MODEL / "tokenizer.json")}

START, END = "<|tool_call_start|>", "<|tool_call_end|>"


def block(calls: str) -> str:
    return START + calls + END


SINGLE = block("[get_weather(city='Paris', unit='c')]")
LONG = "Zürich 🌦 " * 70  # 630 characters, past the 512 held before a call streams
OUTPUTS = {
    "single": SINGLE,
    "parallel": block("[get_weather(city=\"Zürich\"), get_weather(city='東京 🌦', unit='f'), "
                      "get_time()]"),
    "typed": block("[set_config(count=3, ratio=0.5, enabled=True, tags=['a', 'b'], "
                   "meta={'k': 1, 'nested': {'ok': False, 'x': None}}, note=None, label='42', "
                   "level=2)]"),
    "json_literals": block('[set_config(count=-4, ratio=1.5e3, enabled=true, note=null, '
                           'tags=("a", "ß"))]'),
    "typed_strings": block("[set_config(count='3', ratio='x', enabled='yes', level='2')]"),
    "no_args": block("[get_time()]"),
    "unicode": block("[get_weather(city='\\u00dfen \U0001f30d 𝔘', unit=\"c\")]"),
    "long_value": block(f"[get_weather(city='{LONG}')]"),
    "content_before": "Let me check. " + SINGLE,
    "content_after": SINGLE + "\nI will report back.",
    "content_both": "Checking.\n\n" + SINGLE + "  Done.  ",
    "leading_space": " \n " + SINGLE,
    "echo": SINGLE + " [get_weather(city='Paris', unit='c')]" + END + " It is sunny.",
    "echo_open": SINGLE + "[get_weather(city='Paris'",
    "second_block": SINGLE + " then " + block("[get_time()]"),
    "no_end": START + "[get_weather(city='Paris')]",
    "spaced": START + " \n[ get_weather( city='Paris' ) ,\n get_time() ]\n " + END,
    "dotted": block("[weather.get_weather(city='Paris')]"),
    "ctrl_newline": block("[get_weather(city='Pa\nris\tx')]"),
    "leading_zero": block("[set_config(count=07, level=02, ratio=0.05, label='07')]"),
    "reserved": block("[set_config(from=1, count=2, class='x')]"),
    "nested_quotes": block("[get_weather(city='sed -n '1,9p' f.py')]"),
    "positional": block("[get_weather('Paris', unit='c')]"),
    "not_literal": block("[get_weather(city=Paris)]"),
    "bad_second_call": block("[get_weather(city='Paris'), get_time(x=)]"),
    "not_list": block("get_weather(city='Paris')"),
    "empty_list": block("[]"),
    "after_list": block("[get_time()] x"),
    "plain": "The weather in Paris is sunny, 22 °C. [Source: météo]",
    "plain_spaces": "  Sunny.  ",
}
STREAMS = {"single": "one", "parallel": "small", "typed": "mixed", "json_literals": "small",
           "typed_strings": "small", "no_args": "one", "unicode": "one", "long_value": "mixed",
           "content_before": "small", "content_after": "small", "content_both": "one",
           "leading_space": "one", "echo": "small", "echo_open": "small",
           "second_block": "small", "no_end": "small", "spaced": "one", "dotted": "small",
           "ctrl_newline": "one", "leading_zero": "small", "reserved": "small",
           "nested_quotes": "small", "positional": "small", "not_literal": "small",
           "bad_second_call": "small", "not_list": "small", "empty_list": "one",
           "after_list": "one", "plain": "small", "plain_spaces": "one"}
MULTI_TURN: dict[str, Any] = {"messages": [
    {"role": "user", "content": "What's the weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call-1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call-1", "content": "sunny, 22 C"},
    {"role": "user", "content": "And in Tokyo?"}]}


def Case(shape: str, output: str, stream: str, **fields: Any) -> list[_Case]:  # noqa: N802
    return both(_Case(LFM2, shape, output, **{"eos": EOS, **fields}), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    for shape, stream in STREAMS.items():
        out += Case(shape, OUTPUTS[shape], stream)
    out += Case("cut_in_name", START + "[get_wea", "one", eos=None)
    out += Case("cut_in_args", START + "[get_weather(city='Par", "small", eos=None)
    out += Case("tool_choice_none", SINGLE, "small", request=NONE)
    out += Case("no_tools", SINGLE, "small", tools=False)
    out += Case("empty_tools", SINGLE, "small", tools=False, request={"tools": []})
    out += Case("required", SINGLE, "small", request=REQUIRED)
    out += Case("required_json", '[{"name": "get_weather", "parameters": {"city": "Paris"}}]',
                "small", request=REQUIRED)
    out += Case("named_json", '{"city": "Paris", "unit": "f"}', "small", request=NAMED_CHOICE)
    out += Case("named_block", SINGLE, "small", request=NAMED_CHOICE)
    out += Case("multi_turn", block("[get_weather(city='Tokyo')]"), "small",
                request=MULTI_TURN)
    out += Case("keep_special", SINGLE, "small", request={"skip_special_tokens": False})
    out += Case("skip_special", "Sure. " + SINGLE, "small",
                request={"skip_special_tokens": True})
    return out


FORMAT = Format(5800, SERVERS, cases(), tools=TOOLS, user=USER, encode=encode_plain,
                prompt=no_tools.prompt)
