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

``olmo3`` (3462-…): vLLM's ``Olmo3PythonicToolParser`` and ``Olmo3ReasoningParser`` on
``olmo3-standin`` (GPT-2's vocabulary with OLMo 3's added tokens at their ids, a stand-in
ChatML template; ``<think>``, ``</think>`` and ``<function_calls>`` are text, as in OLMo 3),
the two parsers together and the tool parser alone. EOS ``<|im_end|>`` 100265.

    mkdir -p $PEER_HOME/models/i19-olmo3
    cp tests/models/olmo3-standin/* $PEER_HOME/models/i19-olmo3/
    "$VLLM_PEER"/start.sh i19-olmo3 8241 --served-model-name olmo3-standin \\
        --tool-call-parser olmo3 --reasoning-parser olmo3 --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh i19-olmo3 8242 --served-model-name olmo3-standin \\
        --tool-call-parser olmo3 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py pythonic_family 8240 8241 8242

Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server, encode_plain
from record_tool_fixtures import Case as _Case

from tool_cases import llama3, no_tools
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

L4 = "llama4_pythonic"


def _server(parser: str) -> Server:
    server = llama3._server(parser)
    server.slug = f"i19-{parser}"
    return server


O3, O3T = "olmo3", "olmo3-tool"
OLMO = "olmo3-standin"
OLMO_EOS = 100265


def _olmo(reasoning: bool) -> Server:
    r = ["--reasoning-parser", "olmo3"] if reasoning else []
    return Server(OLMO, ["--served-model-name", OLMO, "--tool-call-parser", "olmo3", *r,
                         "--enable-auto-tool-choice"],
                  "olmo3 tool and reasoning parsers" if reasoning else "olmo3 tool parser",
                  "i19-olmo3" if reasoning else "i19-olmo3-tool",
                  ("parser:olmo3", *(("reasoning", "reasoning_parser:olmo3")
                                     if reasoning else ())),
                  ROOT / "tests" / "models" / OLMO / "tokenizer.json")


SERVERS = {L4: _server(L4), O3: _olmo(True), O3T: _olmo(False)}

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


def OCase(shape: str, output: str, stream: str, server: str = O3,  # noqa: N802
          reasoning: bool = False, **fields: Any) -> list[_Case]:
    return both(_Case(server, shape, output, **{
        "eos": OLMO_EOS, "kind": "reasoning" if reasoning else "tool_call", **fields}), stream)


def block(*lines: str) -> str:
    return "<function_calls>\n" + "\n".join(lines) + "\n</function_calls>"


O_SINGLE = block("get_weather(city='Paris', unit='c')")
O_OUTPUTS = {
    "single": O_SINGLE,
    "parallel": block('get_weather(city="Zürich")', "get_weather(city='東京 🌦', unit='f')",
                      "get_time()"),
    "same_line": block("get_weather(city='Paris'), get_time()"),
    "json_literals": block('set_config(count=3, ratio=0.5, enabled=true, tags=["a", "b"], '
                           'meta={"k": 1, "nested": {"ok": false, "x": null}}, note=null, '
                           'label="42", level=2)'),
    "python_literals": block("set_config(count=-1_000, ratio=1.5e3, enabled=True, "
                             "tags=('a', 'ß'), meta={'k': None}, note=None, level=3)"),
    "typed_strings": block("set_config(count='3', ratio='x', enabled='yes', level='2')"),
    "unicode": block("get_weather(city='\\u00dfen \U0001f30d 𝔘', unit=\"c\")"),
    "long_value": block(f"get_weather(city='{LONG}')"),
    "no_tags": "get_weather(city='Paris', unit='c')",
    "no_tags_lines": "get_weather(city='Paris')\nget_time()",
    "content_before": "Let me check the weather.\n" + O_SINGLE,
    "content_after": O_SINGLE + "\nI will report back.",
    "no_close": "<function_calls>\nget_weather(city='Paris')",
    "spaced": ("<function_calls>\n\n  get_weather(city='Paris')  \n\n\t get_time() \n"
               "</function_calls>"),
    "inline_tags": "<function_calls>get_weather(city='Paris')</function_calls>",
    "multiline_call": block("get_weather(", "city='Paris'", ")"),
    "string_newline": block("get_weather(city='Pa\nris')"),
    "not_literal": block("get_weather(city=Paris)"),
    "bad_second_call": block("get_weather(city='Paris')", "get_time(x=)"),
    "two_blocks": O_SINGLE + "\n" + block("get_time()"),
    "plain": "The weather in Paris is sunny, 22 °C.",
    "plain_word": "Sunny",
}
THOUGHT = "The user wants Paris weather; call the tool."
O_STREAMS = {"single": "one", "parallel": "small", "same_line": "small", "json_literals": "mixed",
             "python_literals": "mixed", "typed_strings": "small", "unicode": "one",
             "long_value": "mixed", "no_tags": "small", "no_tags_lines": "small",
             "content_before": "small", "content_after": "small", "no_close": "small",
             "spaced": "small", "inline_tags": "one", "multiline_call": "small",
             "string_newline": "small", "not_literal": "small", "bad_second_call": "small",
             "two_blocks": "small", "plain": "small", "plain_word": "one"}
O_REASONING = {
    "think_call": "<think>" + THOUGHT + "</think>" + O_SINGLE,
    "think_content": "<think>" + THOUGHT + "</think>It is sunny.",
    "think_newlines_call": "<think>\n" + THOUGHT + "\n</think>\n\n" + O_SINGLE,
    "no_start": THOUGHT + "</think>It is sunny.",
    "no_end": "<think>" + THOUGHT,
    "text_before_think": "Hmm. <think>" + THOUGHT + "</think>It is sunny.",
    "second_end": "<think>a</think>b</think>c",
    "think_inside": "<think>a<think>b</think>c",
    "empty_think": "<think></think>It is sunny.",
    "call_in_think": "<think>" + O_SINGLE + "</think>It is sunny.",
}
O_REASONING_STREAMS = {"think_call": "small", "think_content": "small",
                       "think_newlines_call": "mixed", "no_start": "small", "no_end": "small",
                       "text_before_think": "one", "second_end": "one", "think_inside": "one",
                       "empty_think": "one", "call_in_think": "mixed"}


def olmo_cases() -> list[_Case]:
    out: list[_Case] = []
    for shape, stream in O_STREAMS.items():
        out += OCase(shape, O_OUTPUTS[shape], stream)
    for shape, stream in O_REASONING_STREAMS.items():
        out += OCase(shape, O_REASONING[shape], stream, reasoning=True)
    out += OCase("cut_in_name", "<function_calls>\nget_wea", "one", eos=None)
    out += OCase("cut_in_args", "<function_calls>\nget_weather(city='Par", "small", eos=None)
    out += OCase("tool_choice_none", O_SINGLE, "small", request=NONE)
    out += OCase("no_tools", O_SINGLE, "small", tools=False)
    out += OCase("empty_tools", O_SINGLE, "small", tools=False, request={"tools": []})
    out += OCase("required", O_SINGLE, "small", request=REQUIRED)
    out += OCase("required_json", '[{"name": "get_weather", "parameters": {"city": "Paris"}}]',
                 "small", request=REQUIRED)
    out += OCase("named_json", '{"city": "Paris", "unit": "f"}', "small", request=NAMED_CHOICE)
    out += OCase("named_block", O_SINGLE, "small", request=NAMED_CHOICE)
    out += OCase("multi_turn", block("get_weather(city='Tokyo')"), "small", request=MULTI_TURN)
    out += OCase("keep_special", O_SINGLE, "small", request={"skip_special_tokens": False})
    out += OCase("thinking_off_kwarg", "<think>" + THOUGHT + "</think>It is sunny.", "small",
                 reasoning=True, request={"chat_template_kwargs": {"enable_thinking": False}})
    # the tool parser alone: the think tags are content text
    out += OCase("single", O_SINGLE, "small", server=O3T)
    out += OCase("think_call", O_REASONING["think_call"], "mixed", server=O3T)
    out += OCase("think_content", O_REASONING["think_content"], "small", server=O3T)
    return out


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


FORMAT = Format(3400, SERVERS, cases() + olmo_cases(), tools=TOOLS, user=USER,
                encode=encode_plain, prompt=no_tools.prompt)
