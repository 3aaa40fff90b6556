"""An engine format's reasoning parser with another family's tool parser (issue 19, cases
8200-…): what vLLM 0.33 does when ``--reasoning-parser`` names a parser-engine family
(``glm45``/``glm47``, ``deepseek_v4``/``deepseek_v41``, ``minimax_m2``, ``ling3``) and
``--tool-call-parser`` a parser of another family. vLLM composes the two in its
``DelegatingParser`` (``vllm/parser/parser_manager.py``): the engine reads the reasoning with
its tool parsing switched off (``ParserEngineReasoningAdapter._skip_tool_parsing``), the tool
parser reads the content that is left.

Usage (``scripts/peer-model-folders.sh glm-4.7-flash deepseek-v4-native
deepseek-v4.1-native minimax-m2.7`` first):

    "$VLLM_PEER"/start.sh glm-4.7-flash 8301 --reasoning-parser glm47 \\
        --tool-call-parser hermes --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh glm-4.7-flash 8302 --reasoning-parser glm45 \\
        --tool-call-parser qwen3_coder --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh deepseek-v4-native 8303 --reasoning-parser deepseek_v4 \\
        --tool-call-parser hermes --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh minimax-m2.7 8304 --reasoning-parser minimax_m2 \\
        --tool-call-parser pythonic --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh deepseek-v4.1-native 8305 --reasoning-parser deepseek_v41 \\
        --tool-call-parser qwen3_coder --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh kimi-k3-standin 8306 --tokenizer-mode kimi_k3 \\
        --reasoning-parser kimi_k3 --tool-call-parser hermes --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py pairing 8301 8302 8303 8304 8305 8306

Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

PAIRS = {  # server key: (model, reasoning parser, tool parser, EOS id)
    "glm47_hermes": ("glm-4.7-flash", "glm47", "hermes", 154827),
    "glm45_qwen3_coder": ("glm-4.7-flash", "glm45", "qwen3_coder", 154827),
    "v4_hermes": ("deepseek-v4-native", "deepseek_v4", "hermes", 1),
    "m2_pythonic": ("minimax-m2.7", "minimax_m2", "pythonic", 200020),
    "v41_qwen3_coder": ("deepseek-v4.1-native", "deepseek_v41", "qwen3_coder", 1),
    # Kimi K3's reasoning parser with hermes (vLLM's KimiK3Parser around both), on the
    # kimi-k3-standin folder (scripts/tool_cases/kimi_k3.py)
    "k3_hermes": ("kimi-k3-standin", "kimi_k3", "hermes", 163586),
}
EXTRA_FLAGS = {"k3_hermes": ["--tokenizer-mode", "kimi_k3"]}
LEADS = {"k3_hermes": "<|close|>think<|sep|>"}
"""The end of the reasoning where it is not ``</think>``."""


def _server(key: str) -> Server:
    model, reasoning, tool, _ = PAIRS[key]
    return Server(model, ["--served-model-name", model, *EXTRA_FLAGS.get(key, []),
                          "--reasoning-parser", reasoning,
                          "--tool-call-parser", tool, "--enable-auto-tool-choice"],
                  f"{reasoning} reasoning parser with the {tool} tool parser",
                  f"{reasoning}-with-{tool}",
                  (f"parser:{tool}", "reasoning", f"reasoning_parser:{reasoning}",
                   "parser:pairing"),
                  ROOT / "tests" / "models" / model / "tokenizer.json")


SERVERS = {key: _server(key) for key in PAIRS}

THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
CALLS = {
    "hermes": ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", '
               '"unit": "c"}}\n</tool_call>',
               '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'),
    "qwen3_coder": ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
                    "</parameter>\n<parameter=unit>\nc\n</parameter>\n</function>\n"
                    "</tool_call>",
                    "<tool_call>\n<function=get_time>\n</function>\n</tool_call>"),
    "pythonic": ('[get_weather(city="Paris", unit="c")]',
                 '[get_weather(city="Paris", unit="c"), get_time()]'),
}


def server_cases(key: str) -> list[_Case]:
    model, _, tool, eos = PAIRS[key]
    glm = model.startswith("glm")
    lead = THOUGHT + LEADS.get(key, "</think>" if glm else "</think>\n\n")
    call, second = CALLS[tool]
    parallel = second if tool == "pythonic" else call + "\n" + second
    off: dict[str, Any] = {"chat_template_kwargs": (
        {"enable_thinking": False} if glm else {"thinking": False})}

    def case(shape: str, output: str, stream: str, **fields: Any) -> list[_Case]:
        return both(_Case(key, shape, output, **{"eos": eos, "kind": "reasoning", **fields}),
                    stream)

    return [
        *case("single", lead + call, "one"),
        *case("content_before", lead + "Let me check the weather for you.\n" + call, "mixed"),
        *case("reasoning_content", lead + PLAIN, "small"),
        *case("parallel", lead + parallel, "small"),
        *case("thinking_off_tool", call, "small", request=off),
        *case("no_tools", lead + call, "small", tools=False),
        *case("tool_choice_none", lead + call, "small", request=NONE),
        *case("required", lead + '[{"name": "get_weather", "parameters": {"city": "Paris"}}]',
              "small", request=REQUIRED),
        *case("named", lead + '{"city": "Paris"}', "small", request=NAMED_CHOICE),
        *case("cut_in_reasoning", THOUGHT + " I will call get_weather", "small", eos=None),
        *case("markup_in_reasoning", "I could write " + call + " now." + lead + PLAIN, "mixed"),
    ]


def cases() -> list[_Case]:
    return [case for key in SERVERS for case in server_cases(key)]


FORMAT = Format(8200, SERVERS, cases(), tools=TOOLS, user=USER)
