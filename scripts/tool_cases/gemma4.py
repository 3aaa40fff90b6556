"""Gemma 4 (cases 1153-…): the ``gemma4`` tool and reasoning parsers (one engine,
vllm/parser/gemma4.py) on ``gemma4-standin`` (Gemma 3's tokenizer with its unused added tokens
renamed to Gemma 4's markers; unverified against Gemma 4's own file), and the tool parser alone.

Usage (`scripts/peer-model-folders.sh gemma4-standin` first copies the derived folder):

    "$VLLM_PEER"/start.sh gemma4-standin 8851 --tool-call-parser gemma4 \\
        --reasoning-parser gemma4 --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh gemma4-standin 8853 --tool-call-parser gemma4 \\
        --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py gemma4 8851 8853

Calls are ``<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3}<tool_call|>`` (bare keys, strings
quoted by the ``<|"|>`` token, other values bare, nested ``{…}``/``[…]``); reasoning is
``<|channel>thought\\n…<channel|>``. ``<|tool_call>`` 48, ``<tool_call|>`` 49, ``<|"|>`` 52,
``<|channel>`` 100, ``<channel|>`` 101 become their ids; then EOS ``<turn|>`` 106, or none
(finish "length"). The stand-in template's prompt ends ``<|turn>model\\n``; with
``chat_template_kwargs.enable_thinking`` true its system turn opens with ``<|think|>``.
Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

MODEL = "gemma4-standin"
TURN_END = 106
G, GT = "gemma4", "gemma4-tool"


def _server(reasoning: bool) -> Server:
    r = ["--reasoning-parser", "gemma4"] if reasoning else []
    return Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", "gemma4", *r,
                          "--enable-auto-tool-choice"],
                  "gemma4 tool and reasoning parsers" if reasoning else "gemma4 tool parser",
                  "gemma4" if reasoning else "gemma4-tool",
                  ("parser:gemma4", *(("reasoning", "reasoning_parser:gemma4")
                                      if reasoning else ())),
                  ROOT / "tests" / "models" / MODEL / "tokenizer.json")


SERVERS = {G: _server(True), GT: _server(False)}

Q = '<|"|>'


def s(text: str) -> str:
    return Q + text + Q


def call(name: str, body: str) -> str:
    return f"<|tool_call>call:{name}{{{body}}}<tool_call|>"


SINGLE = call("get_weather", f"city:{s('Paris')},unit:{s('c')}")
OUTPUTS = {
    "single": SINGLE,
    "parallel": call("get_weather", f"city:{s('Zürich')}")
    + call("get_weather", "city:" + s('東京 "Tokyo"\nline two') + ",unit:" + s("f")),
    "typed": call("set_config", f"count:3,ratio:0.5,enabled:true,tags:[{s('a')},{s('b')}],"
                                f"meta:{{k:1,nested:{{ok:true}}}},note:null,label:{s('42')},"
                                "level:2"),
    "typed_fallbacks": call("set_config", f"count:three,ratio:1e999,enabled:yes,tags:{s('a, b')},"
                                          f"meta:{s('{k: 1}')},note:None,level:2.0,extra:7"),
    "string_numbers": call("set_config", f"count:{s('3')},label:42,ratio:{s('x')}"),
    "no_args": call("get_time", ""),
    "value_with_braces": call("get_weather", f"city:{s('Paris {FR}, [x]: y')}"),
    "spaced": f"<|tool_call>call:get_weather{{ city: {s('Paris')} , unit: {s('c')} }}"
              "<tool_call|>",
    "content_before": "Let me check the weather for you.\n" + SINGLE,
    "content_after": SINGLE + "\nI will report back shortly.",
    "unknown_tool": call("get_stock", f"symbol:{s('ACME')}"),
    "bare_colon": f"<|tool_call>:get_weather{{city:{s('Paris')}}}<tool_call|>",
    "paren_args": f"<|tool_call>call:get_weather(city:{s('Paris')})<tool_call|>",
    "unterminated_string": f"<|tool_call>call:get_weather{{city:{Q}Paris}}<tool_call|>",
    "no_call_end": f"<|tool_call>call:get_weather{{city:{s('Paris')}}}",
    "call_text": "Gemma writes call:get_weather{city:Paris} as text.",
    "quote_token_in_text": f"Say {s('hi')} to Paris.",
}
TRUNCATED = f"<|tool_call>call:get_weather{{city:{Q}Par"

THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
CHANNEL = "<|channel>thought\n" + THOUGHT + "<channel|>"
THINKING: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": True}}
NOT_THINKING: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": False}}


def Case(server: str, shape: str, output: str, stream: str,  # noqa: N802
         reasoning: bool = True, **fields: Any) -> list[_Case]:
    return both(_Case(server, shape, output, **{
        "eos": TURN_END, "kind": "reasoning" if reasoning else "tool_call", **fields}), stream)


def gemma_cases() -> list[_Case]:
    cases: list[_Case] = []
    streams = {"single": "one", "parallel": "small", "typed": "one", "typed_fallbacks": "small",
               "string_numbers": "small", "no_args": "one", "value_with_braces": "one",
               "spaced": "small", "content_before": "mixed", "content_after": "small",
               "unknown_tool": "small", "bare_colon": "one", "paren_args": "one",
               "unterminated_string": "one", "no_call_end": "small", "call_text": "one",
               "quote_token_in_text": "one"}
    for shape, stream in streams.items():
        cases += Case(G, shape, OUTPUTS[shape], stream, False)
    cases += Case(G, "truncated", TRUNCATED, "one", False, eos=None)
    cases += Case(G, "tool_choice_none", SINGLE, "small", False, request=NONE)
    cases += Case(G, "required", SINGLE, "small", False, request=REQUIRED)
    cases += Case(G, "named", SINGLE, "mixed", False, request=NAMED_CHOICE)
    cases += Case(G, "no_tools", SINGLE, "small", False, tools=False)
    cases += Case(G, "plain", PLAIN, "small", False)
    # reasoning
    cases += Case(G, "reasoning_content", CHANNEL + PLAIN, "small")
    cases += Case(G, "reasoning_then_tool", CHANNEL + SINGLE, "one")
    cases += Case(G, "tool_ends_reasoning", "<|channel>thought\n" + THOUGHT + SINGLE, "one")
    cases += Case(G, "reasoning_only", "<|channel>thought\n" + THOUGHT, "one", eos=None)
    cases += Case(G, "reasoning_no_prefix", "<|channel>" + THOUGHT + "<channel|>" + PLAIN,
                  "small")
    cases += Case(G, "empty_thought", "<|channel>thought\n<channel|>" + PLAIN, "one")
    cases += Case(G, "no_channel_start", "thought\n" + THOUGHT + "<channel|>" + PLAIN, "small")
    cases += Case(G, "stray_channel_end", PLAIN + "<channel|> more", "small")
    cases += Case(G, "thinking_on_kwarg", CHANNEL + PLAIN, "small", request=THINKING)
    cases += Case(G, "thinking_on_plain", PLAIN, "small", request=THINKING)
    cases += Case(G, "thinking_on_tool", CHANNEL + SINGLE, "mixed", request=THINKING)
    cases += Case(G, "thinking_off_kwarg", CHANNEL + PLAIN, "small", request=NOT_THINKING)
    # the tool parser alone: reasoning markup is content
    cases += Case(GT, "single", SINGLE, "small", False)
    cases += Case(GT, "reasoning_text", CHANNEL + PLAIN, "small", False)
    cases += Case(GT, "reasoning_then_tool", CHANNEL + SINGLE, "one", False)
    return cases


FORMAT = Format(1153, SERVERS, gemma_cases(), tools=TOOLS, user=USER)
