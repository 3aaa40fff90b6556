"""IBM Granite 3.x's JSON-array calls (cases 5100-…, branch granite-inkling): vLLM 0.33's
``granite`` tool parser (``vllm/parser/granite.py`` on the parser engine,
``tool_call_body_array``) on ``granite4-standin`` (``<tool_call>`` 100270 a single token there;
Granite 3.0's ``<|tool_call|>`` is not a token of it, so it is text of several tokens; EOS
``<|end_of_text|>`` 100257).

Usage (`scripts/peer-model-folders.sh granite4-standin` first; the recording used a copy named
``i19gr-granite``):

    "$VLLM_PEER"/start.sh i19gr-granite 8311 --served-model-name granite4-standin \\
        --tool-call-parser granite --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py granite_array 8311

The output is text, then ``<|tool_call|>`` or ``<tool_call>`` and a JSON list of
``{"name", "arguments"}`` objects, then maybe more text, then EOS, or none (finish "length").
Every case is recorded non-streaming and streamed.

"""

from __future__ import annotations

import json
from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.granite import HISTORY, LONG, TYPED, prompt
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

MODEL = "granite4-standin"
END_OF_TEXT = 100257
GR = "granite"

SERVERS = {GR: Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", GR,
                              "--enable-auto-tool-choice"],
                      "granite tool parser", "granite", ("parser:granite",),
                      ROOT / "tests" / "models" / MODEL / "tokenizer.json")}

TOKEN, STRING = "<|tool_call|>", "<tool_call>"
PARIS = '{"city": "Paris", "unit": "c"}'


def item(name: str, args: str) -> str:
    return f'{{"name": "{name}", "arguments": {args}}}'


def calls(*items: str, marker: str = STRING, space: str = " ") -> str:
    return f"{marker}{space}[{', '.join(items)}]"


SINGLE = calls(item("get_weather", PARIS))
OUTPUTS = {
    "single": SINGLE,
    "token_marker": calls(item("get_weather", PARIS), marker=TOKEN),
    "compact": STRING + '[{"name":"get_weather","arguments":{"city":"Paris","unit":"c"}}]',
    "parallel": calls(item("get_weather", '{"city": "Zürich"}'),
                      item("get_weather", '{"city": "東京 \\"Tokyo\\"\\nline two", "unit": "f"}')),
    "typed": calls(item("set_config", TYPED)),
    "unicode": calls(item("get_weather", '{"city": "Zürich 東京 😀 \\u00e9\\ud83c\\udf89"}')),
    "long_value": calls(item("get_weather", json.dumps({"city": LONG}, ensure_ascii=False))),
    "no_args": calls(item("get_time", "{}")),
    "content_before": "Let me check the weather for you.\n" + SINGLE,
    "content_after": SINGLE + "\nI will report back shortly.",
    "whitespace_before": "\n\n" + SINGLE,
    "newline_array": STRING + "\n[\n  " + item("get_weather", PARIS) + "\n]\n",
    "no_call": "It is sunny in Paris, 22 °C. 😀",
    "flipped": calls('{"arguments": {"city": "Paris"}, "name": "get_weather"}'),
    "arguments_string": calls('{"name": "get_weather", "arguments": "x"}'),
    "no_arguments_key": calls('{"name": "get_time"}'),
    "unknown_tool": calls(item("get_stock", '{"symbol": "ACME"}')),
    "extra_keys": calls('{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": 7}'),
    "not_array": STRING + " " + item("get_weather", PARIS),
    "empty_array": "Hi " + STRING + " []",
    "marker_alone": "Hi " + STRING,
    "bracket_in_string": calls(item("get_weather", '{"city": "a]}b"}')),
    "two_markers": SINGLE + " " + calls(item("get_time", "{}")),
    "bad_element": calls(item("get_weather", PARIS), "7"),
}
TRUNCATED_NAME = STRING + ' [{"name": "get_wea'
TRUNCATED_ARGS = STRING + ' [{"name": "get_weather", "arguments": {"city": "Par'


def Case(shape: str, output: str, stream: str = "small", **fields: Any  # noqa: N802
         ) -> list[_Case]:
    return both(_Case(GR, shape, output, **{"eos": END_OF_TEXT, **fields}), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    streams = {"single": "one", "token_marker": "one", "long_value": "mixed",
               "parallel": "mixed", "unicode": "one", "typed": "mixed"}
    for shape, output in OUTPUTS.items():
        out += Case(shape, output, streams.get(shape, "small"))
    out += Case("truncated_name", TRUNCATED_NAME, "one", eos=None)
    out += Case("truncated_args", TRUNCATED_ARGS, "small", eos=None)
    out += Case("tool_choice_none", "Sure. " + SINGLE, request=NONE)
    out += Case("no_tools", "Sure. " + SINGLE, tools=False)
    out += Case("tools_empty", SINGLE, tools=False, request={"tools": []})
    out += Case("required", SINGLE, request=REQUIRED)
    out += Case("required_json", '[{"name": "get_weather", "parameters": {"city": "Paris"}}]',
                request=REQUIRED)
    out += Case("named", SINGLE, request=NAMED_CHOICE)
    out += Case("named_json", '{"city": "Paris", "unit": "c"}', request=NAMED_CHOICE)
    out += Case("history", SINGLE, request=HISTORY)
    out += Case("keep_special", "Hi." + SINGLE, request={"skip_special_tokens": False})
    out += Case("thinking_kwargs", SINGLE, request={"chat_template_kwargs":
                                                    {"enable_thinking": True}})
    return out


FORMAT = Format(5100, SERVERS, cases(), tools=TOOLS, user=USER, prompt=prompt)
