"""step5 (cases 4600-…): vLLM 0.33's ``step5`` tool parser (``Step5ToolParser``: Qwen3's XML
calls, the qwen3 engine with the content before calls kept as written) with and without the
``step5`` reasoning parser (vLLM registers it as ``DeepSeekR1ReasoningParser``), both on the
Qwen3 vocabulary and template (Step 5's own vocabulary is not available offline).

Usage (``qwen3`` is the peer's own folder):

    "$VLLM_PEER"/start.sh qwen3 8300 --reasoning-parser step5 --tool-call-parser step5 \\
        --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh qwen3 8301 --tool-call-parser step5 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py step5 8300 8301

``<think>``, ``</think>``, ``<tool_call>``, ``</tool_call>`` become their ids, then
``<|im_end|>`` 151645, or none (finish "length"). Every case is recorded non-streaming and then
streamed (short chunkings; "one" only on short outputs, so every multi-token tag is split).
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.no_tools import prompt
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

QWEN = ROOT / "layers" / "tokenizers" / "qwen3" / "tokenizer.json"
IM_END = 151645
S5R, S5 = "step5+step5", "step5"


def _server(reasoning: bool) -> Server:
    r = ["--reasoning-parser", "step5"] if reasoning else []
    return Server("qwen3", ["--served-model-name", "qwen3", *r, "--tool-call-parser", "step5",
                            "--enable-auto-tool-choice"],
                  "step5 tool and reasoning parsers" if reasoning else "step5 tool parser",
                  "step5-r" if reasoning else "step5",
                  ("parser:step5", *(("reasoning", "reasoning_parser:step5") if reasoning
                                     else ())), QWEN)


SERVERS = {S5R: _server(True), S5: _server(False)}

THOUGHT = "The user wants Paris weather; call the tool."
LEAD = "<think>\n" + THOUGHT + "\n</think>\n\n"
PLAIN = "It is sunny in Paris, 22 °C 🌞."
NOT_THINKING: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": False}}
THINKING: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": True}}
KEEP_SPECIAL: dict[str, Any] = {"skip_special_tokens": False}
MULTI_TURN: dict[str, Any] = {"messages": [
    {"role": "user", "content": "What's the weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 22}'},
    {"role": "user", "content": "And in Zürich, in Fahrenheit?"}]}


def call(name: str, *params: tuple[str, str]) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params)
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


SINGLE = call("get_weather", ("city", "Paris"), ("unit", "c"))
PARALLEL = (call("get_weather", ("city", "Zürich")) + "\n"
            + call("get_weather", ("city", '東京 "Tokyo" 🗼\nline two'), ("unit", "f")))
TYPED = call("set_config", ("count", "3"), ("ratio", "0.5"), ("enabled", "true"),
             ("tags", '["a", "b"]'), ("meta", '{"k": 1, "nested": {"ok": true}}'),
             ("note", "null"), ("label", "42"), ("level", "2"))
FALLBACKS = call("set_config", ("count", "three"), ("ratio", "1e999"), ("enabled", "yes"),
                 ("tags", "a, b"), ("meta", "{'k': 1}"), ("note", "None"), ("level", "2.0"),
                 ("extra", "7"))
LONG = call("set_config", ("label", "Ωmega 𝄞 " * 60 + "end"), ("count", "12"))
OUTPUTS = {
    "single": SINGLE,
    "parallel": PARALLEL,
    "typed": TYPED,
    "typed_fallbacks": FALLBACKS,
    "long_value": LONG,
    "no_args": "<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
    "content_before": "  Let me check the weather for you. \n\n" + SINGLE,
    "space_before": " \n\n" + SINGLE,
    "content_after": SINGLE + "\nI will report back shortly.",
    "content_around": "Checking.\n" + SINGLE + "\nDone.",
    "unknown_tool": call("get_stock", ("symbol", "ACME")),
    "no_wrapper": "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>",
    "no_param_end": ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
                     "<parameter=unit>\nc\n</parameter>\n</function>\n</tool_call>"),
    "no_call_end": "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n",
    "tags_in_text": "Use <b>bold</b> when x > 3, and write <function=f> as text?",
    "partial_tag_text": "The answer is near. <tool_",
    "plain": PLAIN,
}


def Case(server: str, shape: str, output: str, stream: str,  # noqa: N802
         **fields: Any) -> list[_Case]:
    return both(_Case(server, shape, output, **{"eos": IM_END, "kind": "tool_call", **fields}),
                stream)


def reasoning_cases() -> list[_Case]:
    s = S5R
    out = OUTPUTS
    cases: list[_Case] = []
    for shape, stream in [("single", "one"), ("parallel", "small"), ("typed", "small"),
                          ("typed_fallbacks", "small"), ("long_value", "mixed"),
                          ("no_args", "one"), ("content_before", "small"),
                          ("space_before", "one"), ("content_after", "small"),
                          ("content_around", "mixed"), ("unknown_tool", "small"),
                          ("no_wrapper", "small"), ("no_param_end", "small"),
                          ("no_call_end", "small"), ("tags_in_text", "small"),
                          ("partial_tag_text", "one"), ("plain", "small")]:
        cases += Case(s, shape, LEAD + out[shape], stream, kind="reasoning")
    cases += Case(s, "cut_in_name", LEAD + "<tool_call>\n<function=get_wea", "one", eos=None)
    cases += Case(s, "cut_in_args", LEAD + "<tool_call>\n<function=get_weather>\n"
                  "<parameter=city>\nPar", "small", eos=None)
    cases += Case(s, "reasoning_only", "<think>\n" + THOUGHT, "small", eos=None)
    cases += Case(s, "no_think_start", THOUGHT + "\n</think>\n\n" + SINGLE, "small")
    cases += Case(s, "no_think_tags", PLAIN, "small")
    cases += Case(s, "tool_in_reasoning", "<think>\n" + THOUGHT + "\n" + SINGLE, "small")
    cases += Case(s, "tool_choice_none", LEAD + SINGLE, "small", request=NONE)
    cases += Case(s, "required", LEAD + SINGLE, "small", request=REQUIRED)
    cases += Case(s, "named", LEAD + SINGLE, "mixed", request=NAMED_CHOICE)
    cases += Case(s, "no_tools", LEAD + SINGLE, "small", tools=False)
    cases += Case(s, "empty_tools", LEAD + SINGLE, "small", tools=False,
                  request={"tools": []})
    cases += Case(s, "multi_turn", LEAD + call("get_weather", ("city", "Zürich"),
                                               ("unit", "f")), "small", request=MULTI_TURN)
    cases += Case(s, "keep_special", LEAD + "Sure. " + SINGLE, "small", request=KEEP_SPECIAL)
    cases += Case(s, "thinking_off", PLAIN, "small", request=NOT_THINKING)
    cases += Case(s, "thinking_off_tool", "Checking. " + SINGLE, "small", request=NOT_THINKING)
    cases += Case(s, "thinking_on_kwarg", LEAD + SINGLE, "small", request=THINKING)
    return cases


def tool_cases() -> list[_Case]:
    s = S5
    cases: list[_Case] = []
    cases += Case(s, "single", SINGLE, "one")
    cases += Case(s, "content_before", OUTPUTS["content_before"], "small")
    cases += Case(s, "space_before", OUTPUTS["space_before"], "small")
    cases += Case(s, "think_text", LEAD + "Sure.\n" + SINGLE, "small")
    cases += Case(s, "parallel", PARALLEL, "mixed")
    cases += Case(s, "plain", PLAIN, "small")
    cases += Case(s, "tool_choice_none", "Sure. " + SINGLE, "small", request=NONE)
    cases += Case(s, "no_tools", "Sure. " + SINGLE, "small", tools=False)
    cases += Case(s, "thinking_off", " Sure. " + SINGLE, "small", request=NOT_THINKING)
    return cases


FORMAT = Format(4600, SERVERS, [*reasoning_cases(), *tool_cases()], tools=TOOLS, user=USER,
                prompt=prompt)
"""``"tools": []`` is refused by the render step: its prompt is rendered without tools."""
