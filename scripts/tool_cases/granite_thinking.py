"""Granite 4.2's reasoning (cases 5000-…, branch granite-inkling): vLLM 0.33's
``granite_thinking_parser`` reasoning parser (``vllm/parser/granite_thinking.py``: Nemotron 3's
engine config renamed, content's leading newlines stripped, reasoning and content swapped under
``force_nonempty_content`` / thinking off only when the content is absent) with the
``qwen3_coder`` tool parser (Granite 4.2 writes Qwen3's XML calls, as Nemotron 3 does), on
``granite4-standin`` (``<think>`` 100274, ``</think>`` 100275, ``<tool_call>`` 100270 single
tokens, not special; EOS ``<|end_of_text|>`` 100257).

Usage (`scripts/peer-model-folders.sh granite4-standin` first copies the derived folder; the
recording used a copy named ``i19gr-granite``):

    "$VLLM_PEER"/start.sh i19gr-granite 8312 --served-model-name granite4-standin \\
        --reasoning-parser granite_thinking_parser --tool-call-parser qwen3_coder \\
        --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py granite_thinking 8312

Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

MODEL = "granite4-standin"
END_OF_TEXT = 100257
GT = "granite_thinking_parser"

SERVERS = {GT: Server(MODEL, ["--served-model-name", MODEL, "--reasoning-parser", GT,
                              "--tool-call-parser", "qwen3_coder", "--enable-auto-tool-choice"],
                      "qwen3_coder tool parser with the granite_thinking_parser reasoning parser",
                      "granite_thinking", ("parser:qwen3_coder", "reasoning",
                                           f"reasoning_parser:{GT}"),
                      ROOT / "tests" / "models" / MODEL / "tokenizer.json")}

THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
UNICODE = "Zürich 東京 😀🎉 \U0001f9ea"
LEAD = "<think>\n" + THOUGHT + "\n</think>\n"
NOT_THINKING: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": False}}
THINKING: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": True}}
FORCE: dict[str, Any] = {"chat_template_kwargs": {"force_nonempty_content": True}}
TOOL = ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=unit>\nc\n</parameter>\n</function>\n</tool_call>")
TOOL2 = ("<tool_call>\n<function=get_weather>\n<parameter=city>\n東京 😀\n</parameter>\n"
         "</function>\n</tool_call>")
MULTI_TURN = {"messages": [
    {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! 😀"},
    {"role": "user", "content": USER}]}


def Case(shape: str, output: str, stream: str = "small", eos: int | None = END_OF_TEXT,  # noqa: N802
         **fields: Any) -> list[_Case]:
    return both(_Case(GT, shape, output, eos=eos, kind="reasoning", **fields), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    out += Case("reasoning_content", LEAD + PLAIN)
    out += Case("newlines_before_content", THOUGHT + "\n</think>\n\n\n" + PLAIN, "one")
    out += Case("space_before_content", THOUGHT + "</think> \n" + PLAIN, "mixed")
    out += Case("no_think_tags", PLAIN)
    out += Case("reasoning_only", "<think>\n" + THOUGHT, "one", eos=None)
    out += Case("reasoning_empty_content", THOUGHT + "</think>", "one")
    out += Case("reasoning_newline_content", LEAD + "\n", "one")
    out += Case("reasoning_space_content", LEAD + "  ", "one")
    out += Case("reasoning_trailing_space", THOUGHT + "\n\n  \n</think>\n" + PLAIN, "one")
    out += Case("unicode", "<think>" + UNICODE + "</think>\n" + UNICODE, "one")
    out += Case("long_reasoning", THOUGHT * 14 + " 😀\n</think>\n" + PLAIN, "mixed")
    out += Case("late_end_think", LEAD + PLAIN + "</think> more", "small")
    out += Case("reasoning_then_tool", LEAD + TOOL)
    out += Case("reasoning_content_tools", LEAD + "Checking.\n" + TOOL + "\n" + TOOL2, "mixed")
    out += Case("tool_ends_reasoning", "<think>\n" + THOUGHT + "\n" + TOOL, "one")
    out += Case("thinking_on", LEAD + PLAIN, request=THINKING)
    out += Case("thinking_off", "\n\n" + PLAIN, request=NOT_THINKING)
    out += Case("thinking_off_think_text", "<think>" + THOUGHT + "</think>\n" + PLAIN, "one",
                request=NOT_THINKING)
    out += Case("thinking_off_reasoning_only", THOUGHT + "\n</think>\n\n", "one",
                request=NOT_THINKING)
    out += Case("thinking_off_tool", "\n" + TOOL, "one", request=NOT_THINKING)
    out += Case("force_newline_content", LEAD + "\n", "small", request=FORCE)
    out += Case("force_empty_content", THOUGHT + "</think>", "small", request=FORCE)
    out += Case("force_unterminated", "<think>\n" + THOUGHT, "one", eos=None, request=FORCE)
    out += Case("force_with_content", LEAD + PLAIN, "small", request=FORCE)
    out += Case("force_tool", LEAD + TOOL, "small", request=FORCE)
    out += Case("tool_choice_none", LEAD + TOOL, "small", request=NONE)
    out += Case("tool_choice_required", LEAD + TOOL, "small", request=REQUIRED)
    out += Case("tool_choice_named", LEAD + '{"city": "Paris"}', "small", request=NAMED_CHOICE)
    out += Case("no_tools", LEAD + PLAIN, "small", tools=False)
    out += Case("multi_turn", LEAD + PLAIN, "small", request=MULTI_TURN)
    out += Case("keep_special", LEAD + PLAIN, "small", request={"skip_special_tokens": False})
    out += Case("length_in_reasoning", LEAD[:30], "one", eos=None)
    out += Case("length_in_tool", LEAD + TOOL[:40], "one", eos=None)
    return out


FORMAT = Format(5000, SERVERS, cases(), tools=TOOLS, user=USER)
