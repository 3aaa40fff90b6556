"""holo2 (cases 4700-…): vLLM 0.33's ``holo2`` reasoning parser
(``DeepSeekV3ReasoningWithThinkingParser``: ``deepseek_v3``'s switch, on unless the template
kwargs set ``thinking`` or ``enable_thinking``) with the ``hermes`` tool parser (Holo2 is a
Qwen3-VL fine-tune writing Hermes calls), and with ``qwen3_coder`` for the pairing of a legacy
reasoning parser with an engine tool parser. On the Qwen3 vocabulary and template.

Usage (``qwen3`` is the peer's own folder):

    "$VLLM_PEER"/start.sh qwen3 8302 --reasoning-parser holo2 --tool-call-parser hermes \\
        --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh qwen3 8303 --reasoning-parser holo2 --tool-call-parser qwen3_coder \\
        --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py holo2 8302 8303

``<think>``, ``</think>``, ``<tool_call>``, ``</tool_call>`` become their ids, then
``<|im_end|>`` 151645, or none (finish "length"). Every case is recorded non-streaming and then
streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.no_tools import prompt
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both
from tool_cases.step5 import MULTI_TURN

QWEN = ROOT / "layers" / "tokenizers" / "qwen3" / "tokenizer.json"
IM_END = 151645
H, HC = "holo2+hermes", "holo2+qwen3_coder"


def _server(tool: str) -> Server:
    return Server("qwen3", ["--served-model-name", "qwen3", "--reasoning-parser", "holo2",
                            "--tool-call-parser", tool, "--enable-auto-tool-choice"],
                  f"holo2 reasoning parser with the {tool} tool parser", f"holo2-{tool}",
                  (f"parser:{tool}", "reasoning", "reasoning_parser:holo2"), QWEN)


SERVERS = {H: _server("hermes"), HC: _server("qwen3_coder")}

THOUGHT = "The user wants Paris weather; call the tool."
LEAD = "<think>\n" + THOUGHT + "\n</think>\n\n"
PLAIN = "It is sunny in Paris, 22 °C 🌞."


def hermes(name: str, arguments: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'


SINGLE = hermes("get_weather", '{"city": "Paris", "unit": "c"}')
PARALLEL = (hermes("get_weather", '{"city": "Zürich"}') + "\n"
            + hermes("set_config", '{"count": 3, "ratio": 0.5, "enabled": true, "tags": '
                     '["a", "東京 🗼"], "meta": {"k": null}, "note": null, "label": "x"}'))
LONG = hermes("set_config", '{"label": "' + "Ωmega 𝄞 " * 60 + 'end"}')
XML = ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
       "</function>\n</tool_call>")

NOT_THINKING: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": False}}
THINKING: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": True}}
THINKING_OFF: dict[str, Any] = {"chat_template_kwargs": {"thinking": False}}
THINKING_ON: dict[str, Any] = {"chat_template_kwargs": {"thinking": True}}
MIXED: dict[str, Any] = {"chat_template_kwargs": {"thinking": False, "enable_thinking": True}}
EFFORT_NONE: dict[str, Any] = {"reasoning_effort": "none"}
EFFORT_HIGH: dict[str, Any] = {"reasoning_effort": "high"}


def Case(server: str, shape: str, output: str, stream: str,  # noqa: N802
         **fields: Any) -> list[_Case]:
    return both(_Case(server, shape, output, **{"eos": IM_END, "kind": "reasoning", **fields}),
                stream)


def hermes_cases() -> list[_Case]:
    s = H
    cases: list[_Case] = []
    cases += Case(s, "single", LEAD + SINGLE, "one")
    cases += Case(s, "parallel", LEAD + PARALLEL, "small")
    cases += Case(s, "long_value", LEAD + LONG, "mixed")
    cases += Case(s, "content_before", LEAD + "Let me check. 🌦\n" + SINGLE, "small")
    cases += Case(s, "plain", LEAD + PLAIN, "small")
    cases += Case(s, "no_think_start", THOUGHT + "\n</think>\n\n" + PLAIN, "small")
    cases += Case(s, "no_think_tags", PLAIN, "small")
    cases += Case(s, "reasoning_only", "<think>\n" + THOUGHT, "small", eos=None)
    cases += Case(s, "cut_in_name", LEAD + '<tool_call>\n{"name": "get_wea', "one", eos=None)
    cases += Case(s, "cut_in_args", LEAD + '<tool_call>\n{"name": "get_weather", "arguments": '
                  '{"city": "Par', "small", eos=None)
    cases += Case(s, "malformed", LEAD + '<tool_call>\n{"name": "get_weather", "arguments": '
                  "{city: Paris}}\n</tool_call>", "small")
    cases += Case(s, "thinking_off", LEAD + PLAIN, "small", request=NOT_THINKING)
    cases += Case(s, "thinking_off_tool", "Sure.\n" + SINGLE, "small", request=NOT_THINKING)
    cases += Case(s, "thinking_kwarg_off", LEAD + PLAIN, "small", request=THINKING_OFF)
    cases += Case(s, "thinking_kwarg_on", LEAD + PLAIN, "small", request=THINKING_ON)
    cases += Case(s, "enable_thinking_on", LEAD + SINGLE, "small", request=THINKING)
    cases += Case(s, "mixed_kwargs", LEAD + PLAIN, "small", request=MIXED)
    cases += Case(s, "effort_none", LEAD + PLAIN, "small", request=EFFORT_NONE)
    cases += Case(s, "effort_high", LEAD + PLAIN, "small", request=EFFORT_HIGH)
    cases += Case(s, "tool_choice_none", LEAD + SINGLE, "small", request=NONE)
    cases += Case(s, "required", LEAD + SINGLE, "small", request=REQUIRED)
    cases += Case(s, "named", LEAD + SINGLE, "mixed", request=NAMED_CHOICE)
    cases += Case(s, "no_tools", LEAD + SINGLE, "small", tools=False)
    cases += Case(s, "empty_tools", LEAD + SINGLE, "small", tools=False, request={"tools": []})
    cases += Case(s, "multi_turn", LEAD + hermes("get_weather", '{"city": "Zürich", '
                                                  '"unit": "f"}'), "small", request=MULTI_TURN)
    cases += Case(s, "keep_special", LEAD + "Sure. " + SINGLE, "small",
                  request={"skip_special_tokens": False})
    return cases


def pairing_cases() -> list[_Case]:
    s = HC
    cases: list[_Case] = []
    cases += Case(s, "single", LEAD + XML, "small")
    cases += Case(s, "tool_choice_none", LEAD + XML, "small", request=NONE)
    cases += Case(s, "no_tools", LEAD + XML, "small", tools=False)
    return cases


FORMAT = Format(4700, SERVERS, [*hermes_cases(), *pairing_cases()], tools=TOOLS, user=USER,
                prompt=prompt)
