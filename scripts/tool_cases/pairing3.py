"""More pairings of a tool parser with another family's reasoning parser (issue 19, branch
pair3, cases 10800-…): ``inkling`` tools after ``olmo3``'s reasoning and ``inkling``'s
reasoning before ``hermes``; ``dots`` and ``k2_horizon`` tools after ``olmo3``'s reasoning;
``step3`` tools after ``deepseek_r1``'s, ``minicpm5`` and ``dots`` tools after ``qwen3``'s.
vLLM refuses ``qwen3`` and ``deepseek_r1`` on the stand-ins without a ``<think>`` token
(``inkling-standin``, ``dots-standin``, ``k2h-standin``: ``BaseThinkingReasoningParser``
looks the markers up at start-up); ``olmo3`` reads ``</think>`` as text and is accepted
there. ``cohere_command4`` tools after another family's reasoning parser are refused by vLLM
at start-up (its ``CohereCommandParser`` asserts that the reasoning parser, when there is one,
is Cohere's): not recorded. Step 3 and MiniCPM5 are recorded on Qwen3's vocabulary (as their
own tables), and dots too (its markers are text of several ids on any vocabulary).

Usage (the peer folders are copies of the test model folders, as the families' own tables
say; ports in the order of ``PAIRS``):

    S="$VLLM_PEER/start.sh"; A="--enable-auto-tool-choice"
    $S ink-standin 8751 --served-model-name inkling-standin --reasoning-parser olmo3 \\
        --tool-call-parser inkling $A
    $S ink-standin 8752 --served-model-name inkling-standin --reasoning-parser inkling \\
        --tool-call-parser hermes $A
    $S dots-standin 8754 --served-model-name dots-standin --reasoning-parser olmo3 \\
        --tool-call-parser dots $A
    .venv/bin/python scripts/record_tool_fixtures.py pairing3 8751 8752 8754 0 0 0 \\
        --only $(seq 10800 10829)
    $S q3x-step3 8751 --served-model-name qwen3 --reasoning-parser deepseek_r1 \\
        --tool-call-parser step3 $A
    $S mc5-qwen3 8752 --served-model-name qwen3 --reasoning-parser qwen3 \\
        --tool-call-parser minicpm5 $A
    $S k2h-standin 8753 --served-model-name k2h-standin --reasoning-parser olmo3 \\
        --tool-call-parser k2_horizon $A
    .venv/bin/python scripts/record_tool_fixtures.py pairing3 0 0 0 8751 8752 8753 0 \\
        --only $(seq 10830 10859)
    $S q3x-step3 8751 --served-model-name qwen3 --reasoning-parser qwen3 \\
        --tool-call-parser dots $A
    .venv/bin/python scripts/record_tool_fixtures.py pairing3 0 0 0 0 0 0 8751 \\
        --only $(seq 10860 10869)

Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases import dots as dt
from tool_cases import inkling as ink
from tool_cases import k2_horizon as k2
from tool_cases import minicpm5 as m5
from tool_cases import step3_tools as s3
from tool_cases.no_tools import prompt
from tool_cases.shared import NONE, TOOLS, USER, both

QWEN = ROOT / "layers" / "tokenizers" / "qwen3" / "tokenizer.json"
PAIRS = {  # server key: (model, reasoning parser, tool parser, EOS id, extra flags)
    "olmo3_inkling": ("inkling-standin", "olmo3", "inkling", ink.EOS, []),
    "inkling_hermes": ("inkling-standin", "inkling", "hermes", ink.EOS, []),
    "olmo3_dots": ("dots-standin", "olmo3", "dots", dt.EOS, []),
    "r1_step3": ("qwen3", "deepseek_r1", "step3", s3.IM_END, []),
    "qwen3_minicpm5": ("qwen3", "qwen3", "minicpm5", m5.IM_END, []),
    "olmo3_k2h": ("k2h-standin", "olmo3", "k2_horizon", k2.EOS, []),
    "qwen3_dots": ("qwen3", "qwen3", "dots", m5.IM_END, []),
}


def _server(key: str) -> Server:
    model, reasoning, tool, _, extra = PAIRS[key]
    tokenizer = QWEN if model == "qwen3" else ROOT / "tests" / "models" / model / "tokenizer.json"
    return Server(model, ["--served-model-name", model, *extra, "--reasoning-parser", reasoning,
                          "--tool-call-parser", tool, "--enable-auto-tool-choice"],
                  f"{reasoning} reasoning parser with the {tool} tool parser",
                  f"{reasoning}-with-{tool}",
                  (f"parser:{tool}", "reasoning", f"reasoning_parser:{reasoning}",
                   "parser:pairing"), tokenizer)


SERVERS = {key: _server(key) for key in PAIRS}

THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
HERMES = ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n'
          "</tool_call>")
# per tool parser: (a call, an answer, a call cut off in its arguments)
SHAPES: dict[str, tuple[str, str, str]] = {
    "inkling": (ink.PARIS, ink.text(PLAIN),
                ink.MSG + "get_weather" + ink.JSON_CALL + '{"name": "get_weather", "args": '
                '{"city": "Par'),
    "hermes": (ink.text(HERMES), ink.text(PLAIN),
               ink.MSG + ink.TEXT + '<tool_call>\n{"name": "get_weather", "arguments": '
               '{"city": "Par'),
    "dots": (dt.PARIS, PLAIN,
             dt.START + '\n<invoke name="get_weather">\n<parameter name="city">Par'),
    "step3": (s3.SINGLE, PLAIN,
              s3.BEGIN + s3.CALL + "function" + s3.SEP
              + '<steptml:invoke name="get_weather">\n<steptml:parameter name="city">Par'),
    "minicpm5": (m5.PARIS, PLAIN, '<function name="get_weather"><param name="city">Par'),
    "k2_horizon": (k2.SINGLE, PLAIN,
                   k2.CALLS + "\n" + k2.CALL + "get_weather\n" + k2.KEY + "city" + k2.END_KEY
                   + k2.VALUE + "Par"),
}


def lead(reasoning: str) -> str:
    """The reasoning, closed as the reasoning parser reads it."""
    if reasoning == "inkling":
        return ink.think()
    return THOUGHT + "</think>" + ("\n\n" if reasoning == "qwen3" else "")


def server_cases(key: str) -> list[_Case]:
    _, reasoning, tool, eos, _ = PAIRS[key]
    single, answer, cut = SHAPES[tool]
    think = lead(reasoning)

    def case(shape: str, output: str, stream: str, **fields: Any) -> list[_Case]:
        return both(_Case(key, shape, output, **{"eos": eos, "kind": "reasoning", **fields}),
                    stream)

    return [
        *case("single", think + single, "one"),
        *case("reasoning_content", think + answer, "small"),
        *case("no_reasoning", single, "small"),
        *case("cut_in_arguments", think + cut, "small", eos=None),
        *case("tool_choice_none", think + single, "small", request=NONE),
    ]


FORMAT = Format(10800, SERVERS, [case for key in SERVERS for case in server_cases(key)],
                tools=TOOLS, user=USER, prompt=prompt)
