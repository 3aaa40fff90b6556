"""The ``llama4_pythonic`` tool-call format (formats/llama4_pythonic.py): ``pythonic`` with
Llama 4's ``<|python_start|>``/``<|python_end|>`` markers, as vLLM 0.33's
``Llama4PythonicToolParser`` (vllm/tool_parsers/llama4_pythonic_tool_parser.py) reads them.

Expected values are the recorded answers of cases 3400-3461 (named per test; on the Llama 3.1
vocabulary, where the markers are text) or vLLM's source: an output opening with
``<|python_start|>`` has it stripped and every ``<|python_end|>`` removed before the list is
read; what stays content is the output as written. Split invariance: the machine fed any split
of an output gives what it gives fed the whole (pure, every character boundary), and streams
through the HTTP app fold to the message (``run_both``).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core.parsers.formats import llama4_pythonic
from derender.core.parsers.formats.llama4_pythonic import END_MARK, START_MARK
from derender.core.parsers.primitives import merge
from derender.core.parsers.tools import ToolCallDelta, ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.tool_streams import check_written, requests, run_both
from tests.test_parser_properties import PROPS
from tests.test_parser_pythonic import ask
from tests.test_parser_rules import calls, fields
from tests.test_tool_formats import (
    LLAMA,
    MESSAGES,
    PROMPT,
    TOOLS,
    ids_and_finish,
    pythonic_outputs,
)

PARIS_C = ("get_weather", {"city": "Paris", "unit": "c"})
SINGLE = "[get_weather(city='Paris', unit='c')]"
WEATHER_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {
        "type": "object", "properties": {}}}}]


@pytest.fixture(scope="module")
def l4(client_for: Any) -> Any:
    return client_for(LLAMA, None, "llama4_pythonic")


def _ask(client: Any, text: str, **request: Any) -> dict[str, Any]:
    return ask(client, text, tools=WEATHER_TOOLS, **request)


def test_the_markers_around_the_list_are_stripped(l4: Any) -> None:  # 3414, 3416, 3418
    for text in (START_MARK + SINGLE + END_MARK, START_MARK + SINGLE):
        choice = _ask(l4, text)
        assert fields(choice) == (None, None, 1, "tool_calls")
        assert calls(choice) == [PARIS_C]
    choice = _ask(l4, START_MARK + "[get_weather(city='Paris'), get_time()]" + END_MARK)
    assert calls(choice) == [("get_weather", {"city": "Paris"}), ("get_time", {})]


def test_an_end_marker_inside_a_value_is_removed(l4: Any) -> None:  # 3420
    choice = _ask(l4, START_MARK + "[get_weather(city='Pa" + END_MARK + "ris')]" + END_MARK)
    assert calls(choice) == [("get_weather", {"city": "Paris"})]


def test_content_is_the_output_as_written(l4: Any) -> None:  # 3422, 3442, 3426, 3436
    text = START_MARK + "It is sunny in Paris." + END_MARK + " Anything else?"
    assert fields(_ask(l4, text)) == (text, None, 0, "stop")
    cut = START_MARK + "[get_weather(city='Par"
    assert fields(ask(l4, cut, finish="length", eos=False, tools=WEATHER_TOOLS)) == (
        cut, None, 0, "length")
    later = "Sure. " + START_MARK + SINGLE + END_MARK
    assert fields(_ask(l4, later)) == (later, None, 0, "stop")
    plain = "The weather in Paris is sunny, 22 °C. [Source: météo]"
    assert fields(_ask(l4, plain)) == (plain, None, 0, "stop")


def test_without_the_start_marker_it_is_pythonic(l4: Any) -> None:  # 3400, 3402, 3410
    assert calls(_ask(l4, SINGLE)) == [PARIS_C]
    choice = _ask(l4, "[get_weather(city='\\u00dfen \U0001f30d 𝔘', unit=\"c\")]")
    assert calls(choice) == [("get_weather", {"city": "ßen 🌍 𝔘", "unit": "c"})]


def test_tool_choice_none_and_no_tools_leave_the_text(l4: Any) -> None:  # 3444, 3446
    assert fields(_ask(l4, SINGLE, tool_choice="none")) == (SINGLE, None, 0, "stop")
    assert fields(ask(l4, SINGLE, tools=None)) == (SINGLE, None, 0, "stop")


# --------------------------------------------------------------------------- split invariance

AUTO = ToolContext(tools=TOOLS)
PIECES = (START_MARK, END_MARK, "<|python_", "_end|>", "[", "]", "get_weather(", "q='a'",
          "q=\"ü🌦\"", ")", ", ", "ping()", "x=y", "Sure. ", "\n")


def _feed_all(parts: list[str]) -> tuple[str, list[ToolCallDelta]]:
    """The machine fed ``parts`` one call each, the state round-tripped through its codec."""
    state = llama4_pythonic.FORMAT.start()
    content: list[str] = []
    deltas: list[ToolCallDelta] = []
    for k, part in enumerate(parts):
        out, more, state = llama4_pythonic.feed(state, part, k == len(parts) - 1, AUTO)
        content.append(out)
        deltas += more
        w = Writer()
        llama4_pythonic.FORMAT.encode(state, w)
        assert llama4_pythonic.FORMAT.decode(Reader(bytes(w.out))) == state
        assert len(state.held) < len(START_MARK)
    return "".join(content), merge(deltas)


@settings(PROPS, max_examples=300)
@given(pieces=st.lists(st.sampled_from(PIECES), max_size=12), data=st.data())
def test_any_split_reads_as_the_whole(pieces: list[str], data: st.DataObject) -> None:
    text = "".join(pieces)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8), label="cuts"))
    parts = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert _feed_all(parts) == _feed_all([text])


@settings(PROPS, max_examples=100)
@given(data=st.data())
def test_stream_folds_to_message(l4: Any, data: st.DataObject) -> None:
    request = data.draw(requests(MESSAGES, TOOLS), label="chat_request")
    parts, written, clean = data.draw(pythonic_outputs(), label="output")
    wrap = data.draw(st.sampled_from(["", "start", "both", "inside"]), label="markers")
    text = str(parts[0])
    if wrap == "start":
        text = START_MARK + text
    elif wrap == "both":
        text = START_MARK + text + END_MARK
    elif wrap == "inside":
        cut = data.draw(st.integers(0, len(text)), label="at")
        text = START_MARK + text[:cut] + END_MARK + text[cut:]
    finish = data.draw(st.sampled_from(["stop", "stop", "length"]), label="finish")
    ids, finish = ids_and_finish([text], finish, data)
    expected = run_both(l4, LLAMA, ids, finish, PROMPT, request, data)
    if clean and wrap in ("", "both") and check_written(expected, written, request):
        assert expected["message"]["content"] is None
