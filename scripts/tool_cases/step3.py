"""Step 3 reasoning (issue 19, cases 6900-…): vLLM 0.33's ``step3`` reasoning parser
(``vllm/reasoning/step3_reasoning_parser.py``, a legacy parser: everything before the first
``</think>`` is reasoning, a ``<think>`` included) alone and with the ``hermes`` tool parser, on
Qwen3's vocabulary (``qwen3``, a stand-in: Step 3's own is not available offline).

Usage (``scripts/peer-model-folders.sh qwen3``, the folder renamed
``$PEER_HOME/models/i19qw-minicpmv``):

    "$VLLM_PEER"/start.sh i19qw-minicpmv 8351 --served-model-name qwen3 --reasoning-parser step3
    "$VLLM_PEER"/start.sh i19qw-minicpmv 8352 --served-model-name qwen3 \\
        --reasoning-parser step3 --tool-call-parser hermes --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py step3 8351 8352

``<think>``, ``</think>``, ``<tool_call>``, ``</tool_call>`` are Qwen3 added tokens; then
``<|im_end|>`` 151645, or none (finish "length"). Every case is recorded non-streaming and then
streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.shared import NONE, TOOLS, USER, both

QWEN = ROOT / "layers" / "tokenizers" / "qwen3" / "tokenizer.json"
IM_END = 151645
MODEL = "qwen3"
ALONE, PAIR = "step3", "step3-hermes"
SERVERS = {
    ALONE: Server(MODEL, ["--served-model-name", MODEL, "--reasoning-parser", "step3"],
                  "step3 reasoning parser alone", "step3",
                  ("reasoning", "reasoning_parser:step3"), QWEN),
    PAIR: Server(MODEL, ["--served-model-name", MODEL, "--reasoning-parser", "step3",
                         "--tool-call-parser", "hermes", "--enable-auto-tool-choice"],
                 "step3 reasoning and hermes tool parsers", "step3-hermes",
                 ("parser:hermes", "reasoning", "reasoning_parser:step3"), QWEN),
}
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
OFF: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": False}}


def Case(shape: str, output: str, stream: str, server: str = ALONE,  # noqa: N802
         **fields: Any) -> list[_Case]:
    tools = fields.pop("tools", server == PAIR)
    return both(_Case(server, shape, output, **{"eos": IM_END, "kind": "reasoning",
                                                 "tools": tools, **fields}), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    out += Case("answer", "Hmm, the weather.</think>\n\nSunny.", "small")
    out += Case("open_tag", "<think>Hmm.\n</think>Sunny.", "small")
    out += Case("only_reasoning", "Hmm, no end.\n", "small")
    out += Case("cut", "Hmm, cut", "small", eos=None)
    out += Case("end_only", "</think>", "one")
    out += Case("empty_content", "Hmm.</think>", "small")
    out += Case("two_ends", "Hmm.</think>Sunny.</think>More.", "small")
    out += Case("split_end", "Hmm, 東京 😀.</think>Sunny 😀.", "one")
    out += Case("thinking_off", "Hmm.</think>Sunny.", "small", request=OFF)
    out += Case("keep_special", "Hmm.</think>Sunny.", "small",
                request={"skip_special_tokens": False})
    out += Case("no_reasoning_out", "Hmm.</think>Sunny.", "small",
                request={"include_reasoning": False})
    out += Case("tool", "Hmm.</think>\n" + CALL, "small", PAIR)
    out += Case("tool_in_reasoning", "Hmm.\n" + CALL, "small", PAIR)
    out += Case("tool_none", "Hmm.</think>Sure. " + CALL, "small", PAIR, request=NONE)
    out += Case("tool_no_tools", "Hmm.</think>Sure. " + CALL, "small", PAIR, tools=False)
    return out


FORMAT = Format(6900, SERVERS, cases(), tools=TOOLS, user=USER)
