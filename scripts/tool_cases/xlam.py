"""xLAM's JSON calls (issue 19, cases 10200-…): ``xlam`` on ``xlam-llama3.1`` (the xLAM-2
Llama models use Llama 3.1's vocabulary and ids: ``tests/models/llama3.1``, copied to the
peer's models folder as ``xlam-llama3.1``; its own chat template renders the prompts).

Usage:

    mkdir -p "$VLLM_PEER"/models/xlam-llama3.1
    cp tests/models/llama3.1/*.json "$VLLM_PEER"/models/xlam-llama3.1/
    "$VLLM_PEER"/start.sh xlam-llama3.1 8796 --served-model-name xlam-llama3.1 \\
        --tool-call-parser xlam --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py xlam 8796

vLLM's xlam parser looks for a JSON list of ``{"name", "arguments"}`` objects in five places:
after ``</think>``, in a code fence, after ``[TOOL_CALLS]`` (to the line's end), between
``<tool_call>`` and ``</tool_call>``, or the whole output. Each output is recorded
non-streaming and then streamed (``both``), EOS ``<|eot_id|>`` 128009 or none (finish
"length").
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

MODEL = "xlam-llama3.1"
EOS = 128009
XLAM = "xlam"

SERVERS = {XLAM: Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", XLAM,
                                "--enable-auto-tool-choice"],
                        "xlam tool parser", XLAM, (f"parser:{XLAM}",),
                        ROOT / "tests" / "models" / "llama3.1" / "tokenizer.json")}


def Case(shape: str, output: str, stream: str = "small", **kw: Any) -> list[_Case]:  # noqa: N802
    kw.setdefault("eos", EOS)
    return both(_Case(XLAM, shape, output, **kw), stream)


W = '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}'
PING = '{"name": "get_time", "arguments": {}}'
CONFIG = ('{"name": "set_config", "arguments": {"count": 3, "ratio": -0.25, "enabled": true, '
          '"meta": {"k": {"deep": null}}, "note": null, "label": "Zürich \\u00df 🌦 \\ud83d\\ude00",'
          ' "level": 2, "tags": ["a", "b"]}}')
LONG = '{"name": "set_config", "arguments": {"label": "' + "long 𝄞 value " * 40 + '"}}'
HISTORY: dict[str, Any] = {"messages": [
    {"role": "user", "content": USER},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'},
    {"role": "user", "content": "And in Tokyo?"}]}


def ls(*calls: str) -> str:
    return "[" + ", ".join(calls) + "]"


def fence(body: str, lang: str = "json") -> str:
    return "```" + lang + "\n" + body + "\n```"


CASES = [
    *Case("single", ls(W)),
    *Case("parallel", ls(W, PING), stream="mixed"),
    *Case("space_around", "\n " + ls(W) + "\n"),
    *Case("no_call", "Paris is sunny today [source: météo], 22 °C 🌞."),
    *Case("typed_values", ls(CONFIG, PING), stream="mixed"),
    *Case("long_value", ls(LONG), stream="mixed"),
    *Case("cut_in_name", '[{"name": "get_wea', eos=None),
    *Case("cut_in_args", '[{"name": "get_weather", "arguments": {"city": "Pa', eos=None),
    *Case("malformed", "[not json at all] trailing"),
    *Case("list_then_text", ls(W) + " Done."),
    *Case("text_then_list", "Sure: " + ls(W)),
    *Case("not_a_call", '[{"city": "Paris"}]'),
    *Case("mixed_elements", ls('{"city": "Paris"}', W)),
    *Case("empty_list", "[]"),
    *Case("string_args", ls('{"name": "get_weather", "arguments": "Paris"}')),
    *Case("keys_flipped", ls('{"arguments": {"city": "Paris"}, "name": "get_weather"}')),
    *Case("object_alone", W),
    *Case("fence_before", "Let me check.\n" + fence(ls(W))),
    *Case("fence_after", fence(ls(W, PING)) + "\nDone, anything else?", stream="mixed"),
    *Case("fence_plain", fence(ls(W), "")),
    *Case("fence_object", fence(W)),
    *Case("fence_invalid_first", fence("not json") + "\n" + fence(ls(W))),
    *Case("fence_no_json", "Use " + fence("print(1)", "python") + " ok"),
    *Case("tool_calls_marker", "[TOOL_CALLS]" + ls(W)),
    *Case("tool_calls_marker_text", "Sure. [TOOL_CALLS]" + ls(W) + "\nDone."),
    *Case("tool_call_tag", "Hi <tool_call>" + ls(W) + "</tool_call> bye"),
    *Case("tool_call_tag_object", "<tool_call>" + W + "</tool_call>"),
    *Case("think_list", "I should call it.</think>" + ls(W)),
    *Case("think_fence", "Hmm.</think>\nOk " + fence(ls(W)) + " end"),
    *Case("think_text", "Hmm.</think>Paris is sunny."),
    *Case("marker_split", "Ok [TOOL_CALLS]" + ls(PING), stream="one"),
    *Case("tool_choice_none", ls(W), request=NONE),
    *Case("no_tools", ls(W), tools=False),
    _Case(XLAM, "empty_tools", ls(W), eos=EOS, tools=False, request={"tools": []}),
    *Case("required", ls(W), request=REQUIRED),
    *Case("required_params", '[{"name": "get_weather", "parameters": {"city": "Paris"}}]',
          request=REQUIRED),
    *Case("named", ls(W), request=NAMED_CHOICE),
    *Case("named_json", '{"city": "Paris", "unit": "f"}', request=NAMED_CHOICE),
    *Case("history", ls(W), request=HISTORY),
    *Case("skip_special_false", "<|python_tag|>" + ls(W), request={"skip_special_tokens": False}),
]


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    if chat_request.get("tools") == []:  # refused by the render step: rendered without
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(10200, SERVERS, CASES, tools=TOOLS, user=USER, prompt=prompt)
