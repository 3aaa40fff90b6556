"""Google FunctionGemma's ``functiongemma`` tool parser (formats/functiongemma.py), as vLLM
0.33's ``FunctionGemmaToolParser`` reads it.

Expected values are the recorded answers of cases 5900-5967 (named per test; on
``functiongemma-standin``, where the markers are special tokens) or vLLM's source
(``functiongemma_tool_parser.py``: its argument pattern is the reference of ``_pairs``). Split
invariance: the machine fed any split of an output gives what it gives fed the whole (pure,
every character boundary, states round-tripped through their codec), and streams through the
HTTP app fold to the message (``run_both``).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core.parsers.formats import functiongemma
from derender.core.parsers.tools import ToolCallDelta, ToolContext
from derender_testing.tool_streams import cut, feed_checked, requests, run_both
from tests.test_parser_properties import PROPS
from tests.test_parser_rules import calls, chat, fields, ids_of

MODEL = "functiongemma-standin"
EOS, START_TURN = 106, 105
S, E, Q = "<start_function_call>", "<end_function_call>", "<escape>"
PARIS_C = ("get_weather", {"city": "Paris", "unit": "c"})
SINGLE = S + "call:get_weather{city:" + Q + "Paris" + Q + ",unit:" + Q + "c" + Q + "}" + E
TOOLS = [{"type": "function", "function": {"name": name, "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}}
    for name in ("get_weather", "get_time")]
MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]
VLLM_PAIRS = re.compile(r"(\w+):<escape>(.*?)<escape>", re.DOTALL)
"""vLLM's ``arg_regex``."""


def prompt() -> list[int]:
    return [START_TURN, *ids_of("user\nWeather in Paris?", name=MODEL), EOS,
            *ids_of("\n", name=MODEL), START_TURN, *ids_of("model\n", name=MODEL)]


@pytest.fixture(scope="module")
def tool(client_for: Any) -> Any:
    return client_for(MODEL, None, "functiongemma")


def ask(client: Any, text: str, finish: str = "stop", **request: Any) -> dict[str, Any]:
    request.setdefault("tools", TOOLS)
    ids = ids_of(text, *([EOS] if finish == "stop" else []), name=MODEL)
    return chat(client, ids, model=MODEL, finish=finish, prompt=prompt(), **request)


def call(name: str, body: str) -> str:
    return S + "call:" + name + "{" + body + "}" + E


def test_the_markers_are_single_special_tokens() -> None:
    assert ids_of(S, E, Q, name=MODEL) == [48, 49, 52]


def test_calls_and_their_pairs(tool: Any) -> None:  # 5900, 5902, 5904, 5908, 5914, 5928
    assert calls(ask(tool, SINGLE)) == [PARIS_C]
    parallel = call("get_weather", "city:" + Q + "Zürich" + Q) + call("get_time", "")
    assert calls(ask(tool, parallel)) == [("get_weather", {"city": "Zürich"}), ("get_time", {})]
    typed = call("set_config", f"count:{Q}3{Q},tags:{Q}[\"a\"]{Q},note:{Q}null{Q},label:{Q}42{Q}")
    assert calls(ask(tool, typed)) == [
        ("set_config", {"count": 3, "tags": ["a"], "note": None, "label": 42})]
    bare = call("set_config", "count:3,enabled:true,label:" + Q + "x" + Q)
    assert calls(ask(tool, bare)) == [("set_config", {"label": "x"})]
    spaced = call("get_weather", f" city:{Q}Paris{Q} , unit:{Q}c{Q} ")
    assert calls(ask(tool, spaced)) == [PARIS_C]


def test_where_a_call_ends(tool: Any) -> None:  # 5924, 5926, 5930, 5932, 5946
    no_end = S + "call:get_weather{city:" + Q + "Paris" + Q + "}"
    assert calls(ask(tool, no_end)) == [("get_weather", {"city": "Paris"})]
    spans = no_end + SINGLE
    assert fields(ask(tool, spans)) == (None, None, 1, "tool_calls")
    assert calls(ask(tool, call("get_weather", f"city:{Q}a}}b{{c{Q}"))) == [
        ("get_weather", {"city": "a}b{c"})]
    assert calls(ask(tool, S + "call:get_weather{city:" + Q + "Paris}" + E + " ok")) == [
        ("get_weather", {})]
    cut = S + "call:get_weather{city:" + Q + "Par"
    assert calls(ask(tool, cut, finish="length")) == [("get_weather", {})]


def test_the_content(tool: Any) -> None:  # 5916, 5918, 5920, 5922, 5936, 5938
    assert fields(ask(tool, "Let me check. " + SINGLE)) == ("Let me check.", None, 1,
                                                            "tool_calls")
    assert fields(ask(tool, SINGLE + " I will report back.")) == (None, None, 1, "tool_calls")
    between = "Checking.\n" + call("get_time", "") + " and " + SINGLE + "\nDone."
    assert fields(ask(tool, between)) == ("Checking.", None, 2, "tool_calls")
    assert fields(ask(tool, " \n " + SINGLE)) == (None, None, 1, "tool_calls")
    assert fields(ask(tool, "Hi " + S + "oops" + E + " " + SINGLE)) == ("Hi", None, 1,
                                                                       "tool_calls")
    assert calls(ask(tool, S + S + "call:get_time{}" + E)) == [("get_time", {})]


def test_no_call_is_content_as_written(tool: Any) -> None:  # 5934, 5940, 5942, 5944, 5948
    for text in (S + "get_weather{city:" + Q + "Paris" + Q + "}" + E + " ok",
                 "The weather in Paris is sunny, 22 °C. {Source: météo}", "  Sunny.  "):
        assert fields(ask(tool, text)) == (text, None, 0, "stop")
    cut = S + "call:get_wea"
    assert fields(ask(tool, cut, finish="length")) == (cut, None, 0, "length")
    assert fields(ask(tool, SINGLE, tool_choice="none")) == (SINGLE, None, 0, "stop")
    assert fields(ask(tool, SINGLE, tools=None)) == (SINGLE, None, 0, "stop")


def test_a_call_past_the_bound_is_read_from_its_first_characters(tool: Any) -> None:
    """README compatibility: the pairs within ``MAX_CALL`` characters of the ``{``."""
    long = "é" * functiongemma.MAX_CALL
    text = call("get_weather", f"city:{Q}Paris{Q},note:{Q}{long}{Q}") + call("get_time", "")
    assert fields(ask(tool, text)) == (None, None, 1, "tool_calls")
    assert calls(ask(tool, text)) == [("get_weather", {"city": "Paris"})]


@settings(PROPS, max_examples=300)
@given(st.lists(st.sampled_from(["a", "b1", "_", ":", Q, " ", "é", "}", ",", "\n", '"x"']),
                max_size=24))
def test_pairs_are_vllms_pattern(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert functiongemma._pairs(text) == VLLM_PAIRS.findall(text)


# --------------------------------------------------------------------------- split invariance

AUTO = ToolContext(tools=TOOLS)
PIECES = (S, E, Q, "<start_function", "_call>", "call:", "get_weather{", "call:get_time{",
          "city:", "unit:", "Paris", "3", "}", "{", " ", "\n", ",", "Sure. ", "oops", "é🌦")


def _all(parts: list[str]) -> tuple[str, list[ToolCallDelta]]:
    return feed_checked(functiongemma.FORMAT, parts, AUTO)


@settings(PROPS, max_examples=300)
@given(pieces=st.lists(st.sampled_from(PIECES), max_size=16), data=st.data())
def test_any_split_reads_as_the_whole(pieces: list[str], data: st.DataObject) -> None:
    text = "".join(pieces)
    assert _all(cut(text, data)) == _all([text])


@settings(PROPS, max_examples=60)
@given(size=st.integers(functiongemma.MAX_PENDING - 30, functiongemma.MAX_CALL + 30),
       shape=st.sampled_from(["call", "pending"]), data=st.data())
def test_long_calls_and_text_split_alike(size: int, shape: str, data: st.DataObject) -> None:
    if shape == "call":
        text = S + "call:f{a:" + Q + "é" * size + Q + "}" + E + SINGLE
    else:
        text = "Hi " + S + "x" * size + " " + SINGLE + " tail"
    assert _all(cut(text, data)) == _all([text])


@st.composite
def outputs(draw: st.DrawFn) -> str:
    calls_text = draw(st.lists(st.sampled_from(
        [call("get_weather", f"city:{Q}Paris{Q}"), call("get_time", ""),
         call("get_weather", f'city:{Q}東京 🌦{Q},unit:{Q}"f"{Q}'),
         S + "get_weather{}" + E, S + "call:get_weather{city:" + Q + "x}"]),
        min_size=1, max_size=3))
    body = draw(st.sampled_from(["", " ", "\n"])).join(calls_text)
    shape = draw(st.sampled_from(["calls", "before", "after", "cut", "plain"]))
    if shape == "calls":
        return body
    if shape == "before":
        return "Let me check.\n" + body
    if shape == "after":
        return body + "\nDone. "
    if shape == "cut":
        return body[:draw(st.integers(1, len(body)))]
    return "It is sunny in Paris {22 °C}."


@settings(PROPS, max_examples=100)
@given(data=st.data())
def test_stream_folds_to_message(tool: Any, data: st.DataObject) -> None:
    request = data.draw(requests(MESSAGES, TOOLS), label="chat_request")
    text = data.draw(outputs(), label="output")
    finish = data.draw(st.sampled_from(["stop", "stop", "length"]), label="finish")
    ids = ids_of(text, *([EOS] if finish == "stop" else []), name=MODEL)
    run_both(tool, MODEL, ids, finish, prompt(), request, data)
