"""MiniCPM-V (issue 19, cases 6800-…): vLLM 0.33's ``minicpmv`` reasoning parser
(``vllm/reasoning/minicpmv_reasoning_parser.py``, ``vllm/parser/minicpmv.py``: Qwen3's grammar,
``<|im_end|>`` and the reserved markers dropped, and, served through ``MiniCPMVUnifiedParser``,
literal ``\\n`` escapes in reasoning and content turned into newlines) with the ``qwen3_coder``
tool parser (MiniCPM-V writes Qwen3-Coder's XML calls), and alone. On Qwen3's vocabulary
(``qwen3``: MiniCPM-V 4.5 is built on Qwen3; its own files were not used).

Usage (``scripts/peer-model-folders.sh qwen3``, the folder renamed
``$PEER_HOME/models/i19qw-minicpmv``):

    "$VLLM_PEER"/start.sh i19qw-minicpmv 8352 --served-model-name qwen3 \\
        --reasoning-parser minicpmv --tool-call-parser qwen3_coder --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py minicpmv 8352 PORT2
    (PORT2: the same folder with ``--reasoning-parser minicpmv`` alone)

``<think>``, ``</think>``, ``<tool_call>``, ``</tool_call>`` are Qwen3 added tokens; then
``<|im_end|>`` 151645, or none (finish "length"). Every case is recorded non-streaming and then
streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

QWEN = ROOT / "layers" / "tokenizers" / "qwen3" / "tokenizer.json"
IM_END = 151645
MODEL = "qwen3"
PAIR, ALONE = "minicpmv", "minicpmv-alone"
SERVERS = {
    PAIR: Server(MODEL, ["--served-model-name", MODEL, "--reasoning-parser", "minicpmv",
                         "--tool-call-parser", "qwen3_coder", "--enable-auto-tool-choice"],
                 "minicpmv reasoning and qwen3_coder tool parsers", "minicpmv",
                 ("parser:qwen3_coder", "reasoning", "reasoning_parser:minicpmv"), QWEN),
    ALONE: Server(MODEL, ["--served-model-name", MODEL, "--reasoning-parser", "minicpmv"],
                  "minicpmv reasoning parser alone", "minicpmv-alone",
                  ("reasoning", "reasoning_parser:minicpmv"), QWEN),
}
OFF: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": False}}
BS = "\\"
NL = BS + "n"


def xml_call(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


PARIS = xml_call("get_weather", city="Paris")


def Case(shape: str, output: str, stream: str, server: str = PAIR,  # noqa: N802
         **fields: Any) -> list[_Case]:
    tools = fields.pop("tools", server == PAIR)
    return both(_Case(server, shape, output, **{"eos": IM_END, "kind": "reasoning",
                                                 "tools": tools, **fields}), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    out += Case("tool", "Hmm.</think>\n\n" + PARIS, "small")
    out += Case("answer", "Hmm.</think>\n\nSunny.", "small")
    out += Case("escapes", "Hmm." + NL + "more</think>\n\nLine one" + NL + "Line two `a" + NL
                + "b` $x" + NL + "y$ " + BS + BS + "n end " + BS + "r" + NL + "x " + BS + "t",
                "one")
    out += Case("escapes_code", "Hmm.</think>```py" + NL + "x```" + NL + "after \\(a" + NL
                + "b\\) " + NL + "$$c" + NL + "$$ done", "small")
    out += Case("escape_cut", "Hmm.</think>Sunny." + BS, "small", eos=None)
    out += Case("escape_in_args", "Hmm.</think>" + xml_call("get_weather", city="a" + NL + "b"),
                "small")
    out += Case("escape_before_tool", "Hmm." + NL + "</think>Let me check." + NL + PARIS,
                "small")
    out += Case("markers", "Hmm.<reserved_12>x<|im_end|>y</think>Sun<reserved_15>ny"
                "<|reserved_13|>.", "small")
    out += Case("tool_in_reasoning", "Hmm.\n" + PARIS, "small")
    out += Case("open_tag", "<think>Hmm.</think>Sunny.</think>", "small")
    out += Case("only_reasoning", "Hmm, thinking" + NL, "small", eos=None)
    out += Case("off_content", "Sunny." + NL + "Done.", "small", request=OFF)
    out += Case("off_think", "<think>Hmm.</think>Sunny.", "small", request=OFF)
    out += Case("off_tool", "Sure." + NL + PARIS, "small", request=OFF)
    out += Case("no_tools", "Hmm.</think>Sure." + PARIS, "small", tools=False)
    out += Case("tool_choice_none", "Hmm.</think>Sure." + PARIS, "small", request=NONE)
    out += Case("required", "Hmm.</think>" + PARIS, "small", request=REQUIRED)
    out += Case("named", "Hmm.</think>" + PARIS, "small", request=NAMED_CHOICE)
    out += Case("keep_special", "Hmm.</think>Sunny.", "small",
                request={"skip_special_tokens": False})
    out += Case("no_reasoning_out", "Hmm." + NL + "</think>Sunny." + NL, "small",
                request={"include_reasoning": False})
    out += Case("alone_tool", "Hmm." + NL + "</think>Sure." + NL + PARIS, "small", ALONE)
    out += Case("alone_answer", "Hmm.</think>Sunny." + NL + "x", "small", ALONE)
    out += Case("alone_off", "<think>Hmm.</think>Sunny." + NL, "small", ALONE, request=OFF)
    return out


FORMAT = Format(6800, SERVERS, cases(), tools=TOOLS, user=USER)
