"""The ``granite`` tool-call parser (Granite 3.x's JSON list, ``formats/json_wrapped.py``:
``GRANITE``, the wrapper machine with vLLM's engine reading as data, ``Wrapper.engine``).
Expected values are vLLM 0.33's answers as recorded in tests/fixtures/vllm-0.33 (cases
5100-5171, cited by number; docs/vllm-compat/granite.md) and, marked, the README compatibility
rows where we differ on purpose. Then: split invariance of the machine and through the app on
``granite4-standin``, state round trips, bounded state over a long stream, the registry.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers.formats import json_wrapped
from derender.core.parsers.primitives import MAX_LEADING_SPACE
from derender.core.parsers.registry import TOOLS_BY_TAG
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Writer
from derender_testing.models import tokenizer
from derender_testing.tool_streams import check_round_trips, feed_all, requests, run_both

GRANITE = "granite4-standin"
END_OF_TEXT = 100257
FMT = json_wrapped.GRANITE_FORMAT
AUTO = ToolContext()
NONE = ToolContext(keep=False)
REQUIRED = ToolContext(required=True)
NAMED = ToolContext(forced_name="get_weather")
PARIS = '{"city": "Paris", "unit": "c"}'
CALL = '{"name": "get_weather", "arguments": ' + PARIS + "}"
TIME = '{"name": "get_time", "arguments": {}}'
OPEN = "<tool_call>"
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}}}}
MESSAGES = [{"role": "user", "content": "What's the weather in Paris?"}]


def read(text: str, context: ToolContext = AUTO, size: int = 0) -> tuple[str, list[list[str]]]:
    """Content and calls of the machine fed ``text`` whole (or in pieces of ``size``)."""
    pieces = [text[i:i + size] for i in range(0, len(text), size)] if size else [text]
    return feed_all(FMT, [*pieces, ""], context, names_first=True)


def listed(*calls: str, opener: str = OPEN) -> str:
    return f"{opener} [" + ", ".join(calls) + "]"


@pytest.mark.parametrize("size", [0, 1, 3, 8])
def test_calls_in_the_list(size: int) -> None:  # 5100, 5102, 5106, 5126, 5130, 5144
    assert read(listed(CALL), size=size) == ("", [["get_weather", PARIS]])
    assert read(listed(CALL, opener="<|tool_call|>"), size=size) == ("", [["get_weather", PARIS]])
    assert read(listed(CALL, TIME), size=size) == ("", [["get_weather", PARIS], ["get_time", "{}"]])
    flipped = '{"arguments": {"city": "Paris"}, "name": "get_weather"}'
    assert read(listed(flipped), size=size) == ("", [["get_weather", '{"city": "Paris"}']])
    assert read(listed('{"name": "get_time"}'), size=size) == ("", [["get_time", "{}"]])
    assert read(listed(CALL) + " " + listed(TIME), size=size) == (
        "", [["get_weather", PARIS], ["get_time", "{}"]])


@pytest.mark.parametrize("size", [0, 1, 3, 8])
def test_the_text_around_the_calls(size: int) -> None:  # 5116, 5118, 5146, 5152
    assert read("Let me check.\n" + listed(CALL), size=size) == (
        "Let me check.", [["get_weather", PARIS]])
    assert read(listed(CALL) + "\nI will report back.", size=size) == (
        "", [["get_weather", PARIS]])
    assert read(listed(CALL, "7"), size=size) == ("", [["get_weather", PARIS]])
    # under tool_choice "none" the calls are hidden, the text as written
    assert read("Sure. " + listed(CALL), NONE, size=size)[0] == "Sure. "


@pytest.mark.parametrize("size", [0, 1, 3, 8])
def test_an_opener_without_a_call_is_dropped(size: int) -> None:  # 5136, 5138, 5140, 5148
    assert read(OPEN + " " + CALL, size=size) == (CALL, [])
    assert read("Hi " + OPEN + " []", size=size) == ("Hi ", [])
    assert read("Hi " + OPEN, size=size) == ("Hi ", [])
    assert read(OPEN + ' [{"name": "get_wea', size=size) == ("", [])
    assert read(OPEN + ' [7, 8] ok', size=size) == ("7, 8] ok", [])


def test_a_cut_off_call_keeps_its_arguments() -> None:  # 5150
    assert read(OPEN + ' [{"name": "get_weather", "arguments": {"city": "Par') == (
        "", [["get_weather", '{"city": "Par']])


def test_whitespace_before_the_list_is_held_within_its_bound() -> None:
    """README compatibility: the whitespace ending the content is held up to
    MAX_LEADING_SPACE characters; more is content as the model wrote it."""
    held = "Hi" + " " * MAX_LEADING_SPACE
    assert read(held + listed(CALL), size=7)[0] == "Hi"
    long = "Hi" + " " * (MAX_LEADING_SPACE + 40)
    assert read(long + listed(CALL), size=7)[0].startswith("Hi ")
    assert read(long + listed(CALL))[0] == "Hi"


PIECES = ["Hi", " ", "\n", " " * 130, OPEN, "<|tool_call|>", "[", "]", ",", CALL, TIME, "{",
          "}", '"', '{"name": "g', '", "arguments": ', '{"foo": 1}', "7", "𝄞"]
texts = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=texts, context=st.sampled_from([AUTO, AUTO, NONE, REQUIRED, NAMED]),
       data=st.data())
def test_any_split_of_a_text_reads_as_the_whole(text: str, context: ToolContext,
                                                data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(text)]
    pieces = [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    assert read(text, context) == feed_all(FMT, [*pieces, ""], context, names_first=True)
    check_round_trips(FMT, pieces, context)


def test_state_stays_small_over_a_long_stream() -> None:
    """5,000 pieces of arguments, of content and of a dropped element: the state never grows
    with the output (an element is held while its head may still be read, at most
    ``MAX_HEAD`` characters)."""
    state = FMT.start()
    pieces = ["Lead text 🌦 " * 50, OPEN, " [", '{"foo": "', *["x 😀"] * 2000, '"}, ',
              '{"name": "get_weather", ', '"arguments": {"city": "', *["Zürich 東京 "] * 3000,
              '"}}', "]", "x" * 500]
    largest = 0
    for piece in pieces:
        _, _, state = FMT.feed(state, piece, False, AUTO)
        writer = Writer()
        FMT.encode(state, writer)
        largest = max(largest, len(writer.out))
    assert largest <= 4 * json_wrapped.MAX_HEAD + 64
    assert len(writer.out) < 64


def test_registered_as_vllm_names_it() -> None:
    assert parsers.tool_format("granite") is FMT
    assert TOOLS_BY_TAG[parsers.tag_of("granite")].name == "granite"
    with pytest.raises(ValueError, match="not a granite state"):
        FMT.step(json_wrapped.JAMBA_FORMAT.start(), "x", False, AUTO)


ELEMENTS = [CALL, TIME, '{"arguments": {}, "name": "get_time"}', '{"foo": 1}', "7",
            '{"name": "get_weather", "arguments": {"city": "a]}b"}}']


@st.composite
def outputs(draw: st.DrawFn) -> str:
    """Granite outputs: text, an opener with a list of 0-3 elements (or no list), maybe more
    text or another list, maybe cut."""
    text = draw(st.sampled_from(["", "", "Sure. ", "\n", "Hi\n\n"]))
    for _ in range(draw(st.integers(0, 2))):
        text += draw(st.sampled_from([OPEN, "<|tool_call|>"])) + draw(st.sampled_from(
            ["[", " [", "\n[\n", "{", ""])) + ", ".join(
            draw(st.lists(st.sampled_from(ELEMENTS), max_size=3))) + draw(st.sampled_from(
                ["]", "]", ""]))
        text += draw(st.sampled_from(["", "", " Done.", "\n"]))
    if draw(st.integers(0, 4)) == 0:
        text = text[:draw(st.integers(0, len(text)))]
    return text


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_split_of_the_output_folds_to_the_message(client_for: Any,
                                                      data: st.DataObject) -> None:
    client = client_for(GRANITE, None, "granite")
    text = data.draw(outputs(), label="output")
    request = data.draw(requests(MESSAGES, [WEATHER]), label="chat_request")
    ids = list(tokenizer(GRANITE).encode(text, add_special_tokens=False).ids)
    run_both(client, GRANITE, [*ids, END_OF_TEXT], "stop", [1], request, data)
