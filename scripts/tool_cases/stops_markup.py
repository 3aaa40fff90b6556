"""Issue 24 (cases 2300-…): stop strings over parser markup, non-streaming, on Qwen3 with the
``qwen3`` reasoning and ``hermes`` tool parsers. vLLM refuses stop strings while streaming, so
only its non-streaming answers are recorded; derender's stream must fold to them.

Usage (``qwen3`` is the peer's own folder):

    "$VLLM_PEER"/start.sh qwen3 8840 --reasoning-parser qwen3 --tool-call-parser hermes \\
        --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py stops_markup 8840

``<think>``, ``</think>``, ``<tool_call>``, ``</tool_call>`` are Qwen3 added tokens (not special:
their text stays in vLLM's output text) and become their ids; then ``<|im_end|>`` 151645, so
the engine's finish is "stop" without a stop reason and the derender looks for the request's
stop strings in the text. Each case's stop strings contain a marker's text, a part of one, or
a character of U+E000-U+E00F (the private-use range derender's marked text uses).
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, WEATHER, Format, Server
from record_tool_fixtures import Case as _Case

QWEN = ROOT / "layers" / "tokenizers" / "qwen3" / "tokenizer.json"
IM_END = 151645
SERVER = Server("qwen3", ["--served-model-name", "qwen3", "--reasoning-parser", "qwen3",
                          "--tool-call-parser", "hermes", "--enable-auto-tool-choice"],
                "qwen3 reasoning and hermes tool parsers, stop strings over markup",
                "stops_markup", ("parser:hermes", "reasoning", "reasoning_parser:qwen3",
                                 "stop_string", "stop_string:markup"), QWEN)
SERVERS = {"qwen3": SERVER}

THINK = "<think>\nLet me check the weather.\n</think>\n\nIt is sunny in Paris."
CALL = ('<think>\nI need the weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", '
        '"arguments": {"city": "Paris"}}\n</tool_call>')
PRIVATE = "<think>\nSymbols \ue000 and \ue001.\n</think>\n\nDone \ue000 here."


def case(shape: str, output: str, stop: list[str], include: bool = False,
         **request: Any) -> _Case:
    body: dict[str, Any] = {"stop": stop, **request}
    if include:
        body["include_stop_str_in_output"] = True
    return _Case("qwen3", shape, output, IM_END, body, kind="stop_string")


def cases() -> list[_Case]:
    return [
        case("think_close", THINK, ["</think>"]),
        case("think_close_included", THINK, ["</think>"], include=True),
        case("think_close_and_text", THINK, ["</think>\n\nIt is"]),
        case("think_close_and_text_included", THINK, ["</think>\n\nIt is"], include=True),
        case("inside_marker", THINK, ["k>"]),
        case("inside_marker_included", THINK, ["k>"], include=True),
        case("marker_prefix_included", THINK, ["weather.\n</thi"], include=True),
        case("tool_call_close", CALL, ["</tool_call>"]),
        case("tool_call_close_included", CALL, ["</tool_call>"], include=True),
        case("tool_call_open", CALL, ["<tool_call>"]),
        case("private_use_literal", PRIVATE, ["\ue000"]),
        case("private_use_literal_included", PRIVATE, ["\ue001."], include=True),
        case("private_use_not_written", THINK, ["\ue001"]),
        case("private_use_not_written_close", CALL, ["\ue003", "sunny"]),
        case("no_thinking_close", "It is sunny.</think> Really.", ["</think>"],
             chat_template_kwargs={"enable_thinking": False}),
    ]


FORMAT = Format(2300, SERVERS, cases(), tools=[WEATHER],
                user="What's the weather in Paris?")
