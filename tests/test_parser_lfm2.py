"""LiquidAI LFM2's ``lfm2`` tool parser (formats/lfm2.py), as vLLM 0.33's ``Lfm2ToolParser``
reads it.

Expected values are the recorded answers of cases 5800-5883 (named per test; on
``lfm2-standin``, where ``<|tool_call_start|>``/``<|tool_call_end|>`` are special tokens as in
LFM2) or vLLM's source (``lfm2_tool_parser.py``, ``utils.py``). Split invariance: the machine
fed any split of an output gives what it gives fed the whole (pure, every character boundary,
states round-tripped through their codec), and streams through the HTTP app fold to the
message (``run_both``).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core.parsers.formats import lfm2
from derender.core.parsers.tools import ToolCallDelta, ToolContext
from derender_testing.tool_streams import cut as cut_text
from derender_testing.tool_streams import feed_checked, requests, run_both
from tests.test_parser_properties import PROPS
from tests.test_parser_rules import calls, chat, fields, ids_of

MODEL = "lfm2-standin"
EOS, IM_START = 7, 6
START, END = "<|tool_call_start|>", "<|tool_call_end|>"
PARIS_C = ("get_weather", {"city": "Paris", "unit": "c"})
SINGLE = START + "[get_weather(city='Paris', unit='c')]" + END
TOOLS = [{"type": "function", "function": {"name": name, "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}}
    for name in ("get_weather", "get_time")]
MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]


def prompt() -> list[int]:
    """A stand-in ChatML prompt opening the assistant's turn."""
    return [IM_START, *ids_of("user\nWeather in Paris?", name=MODEL), EOS,
            *ids_of("\n", name=MODEL), IM_START, *ids_of("assistant\n", name=MODEL)]


@pytest.fixture(scope="module")
def tool(client_for: Any) -> Any:
    return client_for(MODEL, None, "lfm2")


def ask(client: Any, text: str, finish: str = "stop", **request: Any) -> dict[str, Any]:
    request.setdefault("tools", TOOLS)
    ids = ids_of(text, *([EOS] if finish == "stop" else []), name=MODEL)
    return chat(client, ids, model=MODEL, finish=finish, prompt=prompt(), **request)


def test_the_markers_are_single_special_tokens() -> None:
    assert ids_of(START, END, name=MODEL) == [10, 11]


def test_a_block_of_calls(tool: Any) -> None:  # 5800, 5802, 5830, 5832
    assert calls(ask(tool, SINGLE)) == [PARIS_C]
    parallel = START + "[get_weather(city='Paris'), get_time()]" + END
    assert calls(ask(tool, parallel)) == [("get_weather", {"city": "Paris"}), ("get_time", {})]
    no_end = START + "[get_weather(city='Paris')]"
    assert fields(ask(tool, no_end)) == (None, None, 1, "tool_calls")
    spaced = START + " \n[ get_weather( city='Paris' ) ,\n get_time() ]\n " + END
    assert fields(ask(tool, spaced)) == (None, None, 2, "tool_calls")


def test_the_text_around_the_block(tool: Any) -> None:  # 5816, 5818, 5820, 5822, 5824, 5828
    assert fields(ask(tool, "Let me check. " + SINGLE)) == ("Let me check.", None, 1,
                                                            "tool_calls")
    assert fields(ask(tool, SINGLE + "\nI will report back.")) == (
        "I will report back.", None, 1, "tool_calls")
    assert fields(ask(tool, "Checking.\n\n" + SINGLE + "  Done.  ")) == (
        "Checking.\nDone.", None, 1, "tool_calls")
    assert fields(ask(tool, " \n " + SINGLE)) == (None, None, 1, "tool_calls")
    echo = SINGLE + " [get_weather(city='Paris', unit='c')]" + END + " It is sunny."
    assert fields(ask(tool, echo)) == ("It is sunny.", None, 1, "tool_calls")
    second = SINGLE + " then " + START + "[get_time()]" + END
    assert fields(ask(tool, second)) == (None, None, 1, "tool_calls")


def test_vllms_repairs(tool: Any) -> None:  # 5834, 5836, 5838, 5840, 5842, 5844
    def one(body: str) -> list[tuple[str, Any]]:
        return calls(ask(tool, START + body + END))

    assert one("[weather.get_weather(city='Paris')]") == [
        ("weather.get_weather", {"city": "Paris"})]
    assert one("[get_weather(city='Pa\nris\tx')]") == [("get_weather", {"city": "Pa\nris\tx"})]
    assert one("[set_config(count=07, level=02, ratio=0.05, label='07')]") == [
        ("set_config", {"count": 7, "level": 2, "ratio": 0.05, "label": "07"})]
    assert one("[set_config(from=1, count=2, class='x')]") == [
        ("set_config", {"from": 1, "count": 2, "class": "x"})]
    assert one("[get_weather(city='sed -n '1,9p' f.py')]") == [
        ("get_weather", {"city": "sed -n '1,9p' f.py"})]
    assert one("[get_weather('Paris', unit='c')]") == [("get_weather", {"unit": "c"})]


def test_what_is_not_a_call_list_is_content_as_written(tool: Any) -> None:
    # 5846, 5848, 5850, 5852, 5854, 5856, 5858
    for body in ("[get_weather(city=Paris)]", "[get_weather(city='Paris'), get_time(x=)]",
                 "get_weather(city='Paris')", "[]", "[get_time()] x"):
        text = START + body + END + " after"
        assert fields(ask(tool, text)) == (text, None, 0, "stop")
    for text in ("The weather in Paris is sunny, 22 °C. [Source: météo]", "  Sunny.  "):
        assert fields(ask(tool, text)) == (text, None, 0, "stop")


def test_cut_off_and_not_called(tool: Any) -> None:  # 5860, 5862, 5864, 5866
    for cut in (START + "[get_wea", START + "[get_weather(city='Par"):
        assert fields(ask(tool, cut, finish="length")) == (cut, None, 0, "length")
    assert fields(ask(tool, SINGLE, tool_choice="none")) == (SINGLE, None, 0, "stop")
    assert fields(ask(tool, SINGLE, tools=None)) == (SINGLE, None, 0, "stop")


def test_a_long_block_is_read_as_it_arrives(tool: Any) -> None:
    """Past ``MAX_BLOCK`` the pythonic machine reads the block: a valid list gives the calls
    vLLM reads; an unreadable first call leaves the output as written."""
    long = "Zürich 🌦 " * 120
    text = "Sure. " + START + f"[get_weather(city='{long}'), get_time()]" + END + " Done."
    choice = ask(tool, text)
    assert fields(choice) == ("Sure.\nDone.", None, 2, "tool_calls")
    assert calls(choice) == [("get_weather", {"city": long}), ("get_time", {})]
    bad = START + f"[get_weather(city=Paris), get_time(x={long!r})]" + END + " Done."
    assert fields(ask(tool, bad)) == (bad, None, 0, "stop")


# --------------------------------------------------------------------------- split invariance

STAND_IN = "\uf8ff"
CONTEXTS = (ToolContext(tools=TOOLS), ToolContext(tools=TOOLS, spell={END: STAND_IN}))
PIECES = (START, END, STAND_IN, "<|tool_call", "_end|>", "[", "]", " ", "\n", "get_weather(",
          "weather.get(", "city='a'", 'unit="ü🌦"', "count=07", "from=1", ")", ", ",
          "get_time()", "x=y", "Sure. ", "'1,9p' ")


def _all(parts: list[str], context: ToolContext) -> tuple[str, list[ToolCallDelta]]:
    return feed_checked(lfm2.FORMAT, parts, context)


@settings(PROPS, max_examples=300)
@given(pieces=st.lists(st.sampled_from(PIECES), max_size=14), data=st.data())
def test_any_split_reads_as_the_whole(pieces: list[str], data: st.DataObject) -> None:
    text = "".join(pieces)
    context = data.draw(st.sampled_from(CONTEXTS), label="context")
    assert _all(cut_text(text, data), context) == _all([text], context)


@settings(PROPS, max_examples=60)
@given(size=st.integers(lfm2.MAX_AFTER - 40, lfm2.MAX_AFTER + 40), data=st.data())
def test_long_text_after_the_block_splits_alike(size: int, data: st.DataObject) -> None:
    text = SINGLE + " " + "é" * size + END + " tail  "
    context = data.draw(st.sampled_from(CONTEXTS), label="context")
    assert _all(cut_text(text, data), context) == _all([text], context)


@st.composite
def outputs(draw: st.DrawFn) -> str:
    calls_text = draw(st.lists(st.sampled_from(
        ["get_weather(city='Paris')", "get_time()", 'get_weather(city="東京 🌦", unit=null)',
         "get_weather(city=Paris)", "a.b(from=07)"]), min_size=1, max_size=3))
    body = "[" + draw(st.sampled_from([", ", ",\n "])).join(calls_text) + "]"
    shape = draw(st.sampled_from(["block", "before", "after", "echo", "cut", "plain"]))
    if shape == "block":
        return START + body + END
    if shape == "before":
        return "Let me check.\n" + START + body + END
    if shape == "after":
        return START + body + END + "\nDone. "
    if shape == "echo":
        return START + body + END + " " + body + END + " Sunny."
    if shape == "cut":
        text = START + body
        return text[:draw(st.integers(1, len(text)))]
    return "It is sunny in Paris (22 °C)."


@settings(PROPS, max_examples=100)
@given(data=st.data())
def test_stream_folds_to_message(tool: Any, data: st.DataObject) -> None:
    request = data.draw(requests(MESSAGES, TOOLS), label="chat_request")
    text = data.draw(outputs(), label="output")
    finish = data.draw(st.sampled_from(["stop", "stop", "length"]), label="finish")
    ids = ids_of(text, *([EOS] if finish == "stop" else []), name=MODEL)
    run_both(tool, MODEL, ids, finish, prompt(), request, data)
