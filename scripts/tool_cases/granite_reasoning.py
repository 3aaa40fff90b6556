"""IBM Granite 3.x's reasoning (issue 19, cases 9200-…, branch glimmer): vLLM 0.33's
``granite`` reasoning parser (``vllm/reasoning/granite_reasoning_parser.py``, a legacy parser:
the text markers "Here is my thought process:" / "Here's my thought process:" and "Here is my
response:" / "Here's my response:", ordinary text) alone and with the ``granite`` tool parser,
on ``granite4-standin`` (EOS ``<|end_of_text|>`` 100257; the markers are text of several ids).

Usage (``scripts/peer-model-folders.sh granite4-standin``; the recording used a copy named
``gg-granite``):

    "$VLLM_PEER"/start.sh gg-granite 8750 --served-model-name granite4-standin \\
        --reasoning-parser granite
    "$VLLM_PEER"/start.sh gg-granite 8751 --served-model-name granite4-standin \\
        --reasoning-parser granite --tool-call-parser granite --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py granite_reasoning 8750 8751

Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.granite import HISTORY, prompt
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

MODEL = "granite4-standin"
END_OF_TEXT = 100257
ALONE, PAIR = "granite", "granite-tools"
TOKENIZER = ROOT / "tests" / "models" / MODEL / "tokenizer.json"
SERVERS = {
    ALONE: Server(MODEL, ["--served-model-name", MODEL, "--reasoning-parser", "granite"],
                  "granite reasoning parser", "granite_reasoning",
                  ("reasoning", "reasoning_parser:granite"), TOKENIZER),
    PAIR: Server(MODEL, ["--served-model-name", MODEL, "--reasoning-parser", "granite",
                         "--tool-call-parser", "granite", "--enable-auto-tool-choice"],
                 "granite reasoning and tool parsers", "granite_reasoning-tools",
                 ("parser:granite", "reasoning", "reasoning_parser:granite"), TOKENIZER),
}
T, R = "Here is my thought process:", "Here is my response:"
T2, R2 = "Here's my thought process:", "Here's my response:"
THOUGHT = " The user wants Paris weather; I know it.\n\n"
PLAIN = " It is sunny in Paris, 22 °C."
UNICODE = " Zürich 東京 😀🎉 \U0001f9ea\n"
CALL = '<tool_call> [{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}]'


def Case(shape: str, output: str, stream: str, server: str = ALONE,  # noqa: N802
         **fields: Any) -> list[_Case]:
    tools = fields.pop("tools", server == PAIR)
    return both(_Case(server, shape, output, **{"eos": END_OF_TEXT, "kind": "reasoning",
                                                 "tools": tools, **fields}), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    out += Case("answer", T + THOUGHT + R + PLAIN, "small")
    out += Case("heres", T2 + THOUGHT + R2 + PLAIN, "mixed")
    out += Case("mixed_spellings", T + THOUGHT + R2 + PLAIN, "one")
    out += Case("plain", PLAIN.strip(), "small")
    out += Case("thought_only", T + THOUGHT, "small")
    out += Case("text_before", "Sure thing. " + T + THOUGHT + R + PLAIN, "small")
    out += Case("response_first", R + PLAIN + " " + T + THOUGHT, "small")
    out += Case("empty_reasoning", T + R + PLAIN, "one")
    out += Case("empty_content", T + THOUGHT + R, "small")
    out += Case("space_content", T + THOUGHT + R + "  ", "small")
    out += Case("two_responses", T + THOUGHT + R + PLAIN + "\n" + R + " again.", "small")
    out += Case("two_thoughts", T + " a. " + T + " b. " + R + PLAIN, "mixed")
    out += Case("almost_markers", "Here is my thought: x. " + T + " Here is my resp" + R + PLAIN,
                "one")
    out += Case("unicode", T + UNICODE + R + UNICODE, "one")
    out += Case("long_reasoning", T + THOUGHT * 14 + R + PLAIN, "mixed")
    out += Case("length_in_reasoning", T + THOUGHT, "small", eos=None)
    out += Case("length_in_marker", T + THOUGHT + "Here is my res", "one", eos=None)
    out += Case("length_in_content", T + THOUGHT + R + PLAIN[:12], "small", eos=None)
    out += Case("thinking_kwarg", T + THOUGHT + R + PLAIN, "small",
                request={"chat_template_kwargs": {"thinking": True}})
    out += Case("multi_turn", T + THOUGHT + R + PLAIN, "small", request=HISTORY)
    out += Case("keep_special", T + THOUGHT + R + PLAIN, "small",
                request={"skip_special_tokens": False})
    out += Case("no_reasoning_field", T + THOUGHT + R + PLAIN, "small",
                request={"include_reasoning": False})
    out += Case("tool", T + THOUGHT + R + " " + CALL, "small", PAIR)
    out += Case("tool_in_reasoning", T + THOUGHT + CALL + "\n" + R + PLAIN, "mixed", PAIR)
    out += Case("tool_no_response", T + THOUGHT + CALL, "small", PAIR)
    out += Case("tool_none", T + THOUGHT + R + " " + CALL, "small", PAIR, request=NONE)
    out += Case("tool_no_tools", T + THOUGHT + R + " " + CALL, "small", PAIR, tools=False)
    out += Case("tool_required", T + THOUGHT + R + " " + CALL, "small", PAIR, request=REQUIRED)
    out += Case("tool_named", T + THOUGHT + R + '{"city": "Paris"}', "small", PAIR,
                request=NAMED_CHOICE)
    out += Case("tool_empty_tools", T + THOUGHT + R + PLAIN, "small", PAIR, tools=False,
                request={"tools": []})
    return out


FORMAT = Format(9200, SERVERS, cases(), tools=TOOLS, user=USER, prompt=prompt)
