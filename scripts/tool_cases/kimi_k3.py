"""Kimi K3 (issue 20, cases 7000-…): vLLM 0.33's ``kimi_k3`` tool and reasoning parsers
(``vllm/tool_parsers/kimi_k3_tool_parser.py``, ``vllm/reasoning/kimi_k3_reasoning_parser.py``,
composed by ``vllm/parser/kimi_k3.py``) on ``kimi-k3-standin`` (GPT-2's vocabulary padded to
163,584 ids with K3's special tokens at the ids public ports of its tokenizer give, unverified:
``<|end_of_msg|>`` 163586, ``<|open|>`` 163587, ``<|close|>`` 163588, ``<|sep|>`` 163589;
``model_type: kimi_k3``, served with ``--tokenizer-mode kimi_k3``), the tool parser alone and
the reasoning parser alone.

Usage (copy the derived folder ``tests/models/kimi-k3-standin`` to
``$PEER_HOME/models/i20k3-kimi-k3``):

    S="$VLLM_PEER/start.sh i20k3-kimi-k3"; F="--served-model-name kimi-k3-standin \\
        --tokenizer-mode kimi_k3"; T="--tool-call-parser kimi_k3 --enable-auto-tool-choice"
    $S 8361 $F $T --reasoning-parser kimi_k3
    $S 8362 $F $T
    .venv/bin/python scripts/record_tool_fixtures.py kimi_k3 8361 8362 8362 --only …
    (then 8362 again with --reasoning-parser kimi_k3 alone for the kimi_k3-reasoning cases)

The output is K3's XTML: reasoning (the stand-in template opens ``<|open|>think<|sep|>``, or
``<|open|>response<|sep|>`` with thinking off), ``<|close|>think<|sep|>``, a ``response``
channel, a ``tools`` channel of ``call`` elements with typed ``argument`` children, then
``<|close|>message<|sep|>`` and EOS ``<|end_of_msg|>`` 163586, or none (finish "length").
Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

MODEL = "kimi-k3-standin"
EOS = 163586
K, KT, KR = "kimi_k3", "kimi_k3-tool", "kimi_k3-reasoning"
_FLAGS = ["--served-model-name", MODEL, "--tokenizer-mode", "kimi_k3"]


def _server(tool: bool, reasoning: bool, label: str, slug: str) -> Server:
    flags = [*_FLAGS, *(("--tool-call-parser", "kimi_k3", "--enable-auto-tool-choice")
                         if tool else ()),
             *(("--reasoning-parser", "kimi_k3") if reasoning else ())]
    features = (*(("parser:kimi_k3",) if tool else ()),
                *(("reasoning", "reasoning_parser:kimi_k3") if reasoning else ()))
    return Server(MODEL, flags, label, slug, features,
                  ROOT / "tests" / "models" / MODEL / "tokenizer.json")


SERVERS = {K: _server(True, True, "kimi_k3 tool and reasoning parsers", K),
           KT: _server(True, False, "kimi_k3 tool parser", KT),
           KR: _server(False, True, "kimi_k3 reasoning parser", KR)}

OPEN, C, S = "<|open|>", "<|close|>", "<|sep|>"


def el(name: str, body: str, attrs: str = "") -> str:
    return f"{OPEN}{name}{attrs}{S}{body}{C}{name}{S}"


def arg(key: str, typ: str | None, value: str) -> str:
    return el("argument", value, f' key="{key}"' + ("" if typ is None else f' type="{typ}"'))


def call(tool: str, index: int, *args: str) -> str:
    return el("call", "".join(args), f' tool="{tool}" index="{index}"')


def tools(*calls: str) -> str:
    return el("tools", "".join(calls))


def resp(text: str) -> str:
    return el("response", text)


END = C + "message" + S
THINK_END = C + "think" + S
THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
PARIS = call("get_weather", 1, arg("city", "string", "Paris"), arg("unit", "string", "c"))
SINGLE = tools(PARIS)
WIDE = "😀𝄞🀄"
TYPED = call("set_config", 1, arg("count", "number", "3"), arg("ratio", "number", "0.5"),
             arg("enabled", "boolean", "true"), arg("tags", "array", '["a","b"]'),
             arg("meta", "object", '{"k":1,"deep":{"x":[1,2]}}'), arg("note", "null", "null"),
             arg("label", "string", "42"), arg("level", "number", "2"))
LONG = "Zürich " * 60 + WIDE
OUTPUTS = {
    "single": SINGLE,
    "content_before": resp("Let me check the weather for you.") + SINGLE,
    "parallel": resp("Checking both.") + tools(
        call("get_weather", 1, arg("city", "string", "東京 \"Tokyo\"\nline two " + WIDE)),
        call("get_weather", 2, arg("city", "string", "Zürich"), arg("unit", "string", "f"))),
    "typed": tools(TYPED),
    "string_values": tools(call("set_config", 1, arg("count", "string", "3"),
                                arg("enabled", "string", "true"),
                                arg("tags", "string", '["a"]'), arg("note", "string", ""))),
    "no_args": tools(call("get_time", 1)),
    "long_value": tools(call("get_weather", 1, arg("city", "string", LONG))),
    "escaped_attrs": tools(call("get_weather", 1,
                                arg("a &quot;q&quot; &amp;amp; b", "string", "x & y"))),
    "invalid_json": tools(call("set_config", 1, arg("count", "number", "three"),
                               arg("meta", "object", "{'k': 1}"))),
    "unknown_type": tools(call("set_config", 1, arg("count", "integer", "7"),
                               arg("label", None, "untyped"))),
    "unknown_tool": tools(call("get_stock", 1, arg("symbol", "string", "ACME"))),
    "no_tool_attr": tools(el("call", arg("city", "string", "Paris"), ' index="1"'), PARIS),
    "no_call_close": tools(f'{OPEN}call tool="get_weather" index="1"{S}'
                           + arg("city", "string", "Paris")),
    "no_tools_close": f"{OPEN}tools{S}" + PARIS,
    "spaced": resp("Hi") + f"{OPEN} tools {S}\n{OPEN}call tool=\"get_weather\" index=\"1\"{S}\n"
    + f"{OPEN} argument key=\"city\" type=\"string\" {S}Paris{C} argument {S}\n{C} call {S}\n"
    + f"{C} tools {S}",
    "newlines": resp("\nHi\n") + "\n" + tools("\n" + PARIS + "\n") + "\n",
    "blank_response": resp("\n \n") + SINGLE,
    "response_after": SINGLE + resp("Done."),
    "two_responses": resp("One.") + resp("Two.") + SINGLE,
    "text_after": SINGLE + "\ntrailing text",
    "text_between": resp("Hi") + "loose text" + SINGLE,
    "markers_in_value": tools(call("get_weather", 1, arg("city", "string", "a<b>c</b> & d|"))),
}
TRUNC_NAME = f'{OPEN}tools{S}{OPEN}call tool="get_wea'
TRUNC_ARGS = f'{OPEN}tools{S}{OPEN}call tool="get_weather" index="1"{S}' \
    + f'{OPEN}argument key="city" type="string"{S}Par'
LEAD = THOUGHT + THINK_END
NOT_THINKING: dict[str, Any] = {"chat_template_kwargs": {"thinking": False}}
NOT_ENABLED: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": False}}
THINKING: dict[str, Any] = {"chat_template_kwargs": {"thinking": True}}
EFFORT_NONE: dict[str, Any] = {"reasoning_effort": "none"}
EFFORT_HIGH: dict[str, Any] = {"reasoning_effort": "high"}
KEEP_SPECIAL: dict[str, Any] = {"skip_special_tokens": False}
SKIP_SPECIAL: dict[str, Any] = {"skip_special_tokens": True}
HISTORY: dict[str, Any] = {"messages": [
    {"role": "user", "content": USER},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    {"role": "user", "content": "And Paris, please."}]}


def Case(server: str, shape: str, output: str, stream: str,  # noqa: N802
         eos: int | None = EOS, **fields: Any) -> list[_Case]:
    kind = "tool_call" if server == KT else "reasoning"
    return both(_Case(server, shape, output, eos, kind=kind, **fields), stream)


def k3_cases() -> list[_Case]:
    cases: list[_Case] = []
    streams = {"single": "small", "content_before": "mixed", "parallel": "mixed",
               "typed": "mixed", "string_values": "small", "no_args": "small",
               "long_value": "mixed", "escaped_attrs": "small", "invalid_json": "small",
               "unknown_type": "small", "unknown_tool": "small", "no_tool_attr": "mixed",
               "no_call_close": "small", "no_tools_close": "small", "spaced": "small",
               "newlines": "small", "blank_response": "small", "response_after": "small",
               "two_responses": "small", "text_after": "small", "text_between": "small",
               "markers_in_value": "small"}
    for shape, stream in streams.items():
        cases += Case(K, shape, LEAD + OUTPUTS[shape] + END, stream)
    cases += Case(K, "split_markers", LEAD + OUTPUTS["content_before"] + END, "one")
    cases += Case(K, "no_message_close", LEAD + OUTPUTS["content_before"], "small")
    cases += Case(K, "truncated_name", LEAD + resp("Hi") + TRUNC_NAME, "small", None)
    cases += Case(K, "truncated_args", LEAD + resp("Hi") + TRUNC_ARGS, "small", None)
    cases += Case(K, "truncated_response", LEAD + OPEN + "response" + S + "Hello wor", "small",
                  None)
    cases += Case(K, "reasoning_only", THOUGHT + " " + WIDE, "small", None)
    cases += Case(K, "reasoning_content", LEAD + resp(PLAIN) + END, "small")
    cases += Case(K, "response_unclosed", LEAD + OPEN + "response" + S + PLAIN + END, "small")
    cases += Case(K, "bare_content", LEAD + PLAIN, "small")
    cases += Case(K, "no_reasoning_response", resp(PLAIN) + END, "small")
    cases += Case(K, "no_reasoning_tools", SINGLE + END, "small")
    cases += Case(K, "think_open_written", OPEN + "think" + S + LEAD + resp(PLAIN) + END, "small")
    cases += Case(K, "text_before_think_open", "abc" + OPEN + "think" + S + LEAD + resp(PLAIN)
                  + END, "small")
    cases += Case(K, "second_think_close", LEAD + resp(PLAIN + THINK_END + "x") + END, "small")
    cases += Case(K, "spaced_think_close", THOUGHT + C + " think " + S + resp(PLAIN) + END,
                  "small")
    cases += Case(K, "reasoning_trailing_space", THOUGHT + "\n \n" + THINK_END + resp(PLAIN)
                  + END, "small")
    cases += Case(K, "tool_choice_none", LEAD + OUTPUTS["content_before"] + END, "small",
                  request=NONE)
    cases += Case(K, "required", LEAD + SINGLE + END, "small", request=REQUIRED)
    cases += Case(K, "named", LEAD + SINGLE + END, "small", request=NAMED_CHOICE)
    cases += Case(K, "no_tools", LEAD + OUTPUTS["content_before"] + END, "small", tools=False)
    cases += Case(K, "empty_tools", LEAD + SINGLE + END, "small", request={"tools": []})
    cases += Case(K, "history", LEAD + OUTPUTS["content_before"] + END, "small",
                  request=HISTORY)
    cases += Case(K, "keep_special", LEAD + OUTPUTS["content_before"] + END, "small",
                  request=KEEP_SPECIAL)
    cases += Case(K, "skip_special", LEAD + OUTPUTS["content_before"] + END, "small",
                  request=SKIP_SPECIAL)
    # thinking off: the prompt opens the response channel
    off = "Let me check." + C + "response" + S + SINGLE + END
    cases += Case(K, "thinking_off", off, "small", request=NOT_THINKING)
    cases += Case(K, "thinking_off_plain", PLAIN + C + "response" + S + END, "small",
                  request=NOT_THINKING)
    cases += Case(K, "thinking_off_wrapped", resp(PLAIN) + END, "small", request=NOT_THINKING)
    cases += Case(K, "thinking_off_think_text", LEAD + resp(PLAIN) + END, "small",
                  request=NOT_THINKING)
    cases += Case(K, "enable_thinking_off", off, "small", request=NOT_ENABLED)
    cases += Case(K, "effort_none", off, "small", request=EFFORT_NONE)
    cases += Case(K, "effort_high", LEAD + resp(PLAIN) + END, "small", request=EFFORT_HIGH)
    cases += Case(K, "thinking_on_kwarg", LEAD + resp(PLAIN) + END, "small", request=THINKING)
    cases += Case(K, "thinking_off_none", off, "small", request={**NOT_THINKING, **NONE})
    cases += Case(K, "thinking_off_no_tools", off, "small", tools=False,
                  request=NOT_THINKING)
    # the tool parser alone: the think channel is text before the response
    cases += Case(KT, "single", LEAD + OUTPUTS["content_before"] + END, "small")
    cases += Case(KT, "parallel", OUTPUTS["parallel"] + END, "mixed")
    cases += Case(KT, "bare_text", PLAIN, "small")
    cases += Case(KT, "thinking_text", LEAD + PLAIN, "small")
    cases += Case(KT, "tool_choice_none", LEAD + OUTPUTS["content_before"] + END, "small",
                  request=NONE)
    cases += Case(KT, "no_tools", OUTPUTS["content_before"] + END, "small", tools=False)
    cases += Case(KT, "thinking_off", off, "small", request=NOT_THINKING)
    cases += Case(KT, "truncated_args", resp("Hi") + TRUNC_ARGS, "small", None)
    # the reasoning parser alone (without --enable-auto-tool-choice: render refuses tools
    # unless tool_choice is "none")
    cases += Case(KR, "tools_channel", LEAD + OUTPUTS["content_before"] + END, "small",
                  tools=False, request=THINKING)
    cases += Case(KR, "no_tools", LEAD + OUTPUTS["content_before"] + END, "small",
                  tools=False)
    cases += Case(KR, "tool_choice_none", LEAD + OUTPUTS["content_before"] + END, "small",
                  request=NONE)
    cases += Case(KR, "plain", LEAD + resp(PLAIN) + END, "small", tools=False)
    cases += Case(KR, "thinking_off", PLAIN + C + "response" + S + END, "small",
                  tools=False, request=NOT_THINKING)
    cases += Case(KR, "reasoning_only", THOUGHT, "small", None, tools=False)
    return cases


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    """The server's render; ``"tools": []`` (refused by render) rendered without tools."""
    if chat_request.get("tools") == []:
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(7000, SERVERS, k3_cases(), tools=TOOLS, user=USER, prompt=prompt)
