"""The pythonic family's other parser names (cases 3400-…, branch i19-pythonic).

``llama4_pythonic`` (3400-…): vLLM's ``Llama4PythonicToolParser``, ``pythonic``'s grammar with
``<|python_start|>`` stripped from the output's start and then every ``<|python_end|>``
removed. Llama 4's tokenizer is not redistributable: recorded on the derived Llama 3.1
tokenizer (``llama3.1-tools``, as ``tool_cases/llama3.py`` and ``llama4_json``), where
``<|python_start|>``/``<|python_end|>`` are plain text of several ids (vLLM matches them as
text, so the grammar is the same; whether Llama 4's special tokens survive in the text is the
request's ``skip_special_tokens``).

Usage (the peer folder is a copy of tests/models/llama3.1-tools, served under its name):

    mkdir -p $PEER_HOME/models/i19-llama4py
    cp tests/models/llama3.1-tools/*.json $PEER_HOME/models/i19-llama4py/
    "$VLLM_PEER"/start.sh i19-llama4py 8240 --served-model-name llama3.1-tools \\
        --tool-call-parser llama4_pythonic --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py pythonic_family 8240

Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import Case as _Case
from record_tool_fixtures import Format, Server, encode_plain

from tool_cases import llama3, no_tools
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

L4 = "llama4_pythonic"


def _server(parser: str) -> Server:
    server = llama3._server(parser)
    server.slug = f"i19-{parser}"
    return server


SERVERS = {L4: _server(L4)}

START, END = "<|python_start|>", "<|python_end|>"
SINGLE = "[get_weather(city='Paris', unit='c')]"
LONG = "Zürich 🌦 " * 70  # 630 characters, past the 512 held before a call streams
OUTPUTS = {
    "single": SINGLE,
    "parallel": "[get_weather(city=\"Zürich\"), get_weather(city='東京 🌦', unit='f'), get_time()]",
    "typed": "[set_config(count=3, ratio=0.5, enabled=True, tags=['a', 'b'], "
             "meta={'k': 1, 'nested': {'ok': False, 'x': None}}, note=None, label='42', "
             "level=2)]",
    "typed_strings": "[set_config(count='3', ratio='x', enabled='yes', level='2')]",
    "no_args": "[get_time()]",
    "unicode": "[get_weather(city='\\u00dfen \U0001f30d 𝔘', unit=\"c\")]",
    "long_value": f"[get_weather(city='{LONG}')]",
    "python_start": START + SINGLE + END,
    "python_start_no_end": START + SINGLE,
    "python_start_parallel": START + "[get_weather(city='Paris'), get_time()]" + END,
    "python_end_inside": START + "[get_weather(city='Pa" + END + "ris')]" + END,
    "python_start_text": START + "It is sunny in Paris." + END + " Anything else?",
    "python_end_only": SINGLE + END,
    "text_then_python_start": "Sure. " + START + SINGLE + END,
    "content_before": "Sure! " + SINGLE,
    "content_after": SINGLE + "\nLet me know if you need anything else.",
    "not_literal": "[get_weather(city=Paris)]",
    "bad_second_call": "[get_weather(city='Paris'), get_time(x=)]",
    "plain": "The weather in Paris is sunny, 22 °C. [Source: météo]",
}
CUT_NAME = "[get_wea"
CUT_ARGS = "[get_weather(city='Par"
STREAMS = {"single": "one", "parallel": "small", "typed": "mixed", "typed_strings": "small",
           "no_args": "one", "unicode": "one", "long_value": "mixed", "python_start": "one",
           "python_start_no_end": "small", "python_start_parallel": "small",
           "python_end_inside": "one", "python_start_text": "one", "python_end_only": "one",
           "text_then_python_start": "small", "content_before": "small",
           "content_after": "small", "not_literal": "small", "bad_second_call": "small",
           "plain": "small"}
MULTI_TURN: dict[str, Any] = {"messages": [
    {"role": "user", "content": "What's the weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call-1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call-1", "content": "sunny, 22 C"},
    {"role": "user", "content": "And in Tokyo?"}]}


def Case(shape: str, output: str, stream: str, **fields: Any) -> list[_Case]:  # noqa: N802
    return both(_Case(L4, shape, output, **{"eos": llama3.EOT, **fields}), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    for shape, stream in STREAMS.items():
        out += Case(shape, OUTPUTS[shape], stream)
    out += Case("cut_in_name", CUT_NAME, "one", eos=None)
    out += Case("cut_in_args", CUT_ARGS, "small", eos=None)
    out += Case("python_start_cut", START + CUT_ARGS, "small", eos=None)
    out += Case("tool_choice_none", SINGLE, "small", request=NONE)
    out += Case("no_tools", SINGLE, "small", tools=False)
    out += Case("empty_tools", SINGLE, "small", tools=False, request={"tools": []})
    out += Case("required", SINGLE, "small", request=REQUIRED)
    out += Case("required_json", '[{"name": "get_weather", "parameters": {"city": "Paris"}}]',
                "small", request=REQUIRED)
    out += Case("named_json", '{"city": "Paris", "unit": "f"}', "small", request=NAMED_CHOICE)
    out += Case("named_pythonic", SINGLE, "small", request=NAMED_CHOICE)
    out += Case("multi_turn", "[get_weather(city='Tokyo')]", "small", request=MULTI_TURN)
    out += Case("keep_special", START + SINGLE + END, "small",
                request={"skip_special_tokens": False})
    return out


FORMAT = Format(3400, SERVERS, cases(), tools=TOOLS, user=USER, encode=encode_plain,
                prompt=no_tools.prompt)
