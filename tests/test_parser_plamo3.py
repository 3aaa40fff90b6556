"""PLaMo 3 on the parser engine (parsers/formats/plamo3.py, parsers/engine.py): ``plamo3``'s
multi-token markers read as text, its JSON arguments held and typed as vLLM types them, a
partial marker ending the output cut.

The rules are vLLM 0.33's (``vllm/parser/plamo3.py``, docs/vllm-compat/plamo3.md); the
recorded cases 6600-6719 replay them against the real server (test_conformance) and each rule
test below names the cases it restates. Split invariance through the HTTP app on
``plamo3-standin`` (every marker several tokens there), with both parsers and each alone.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from derender.contract.requests import ChatRequest
from derender.core import parsers
from derender.core.parsers import registry
from derender.core.parsers.engine import MAX_VALUE
from derender.core.parsers.formats import plamo3
from derender.core.parsers.tools import ToolContext
from derender_testing.tool_streams import (
    check_round_trips,
    check_written,
    feed_engine,
    feed_long_stream,
    requests,
    run_text,
    spoil,
)
from tests.test_parser_dsml import TOOLS
from tests.test_parser_properties import PROPS

AUTO = ToolContext(tools=TOOLS)
MODEL = "plamo3-standin"
tag = plamo3.tag
THINK_END = tag("think", True)
ARGS = tag("tool_arguments") + "<|plamo:constrain|>json<|plamo:msg|>"


def call(name: str, args: str) -> str:
    return (tag("tool_request") + tag("tool_name") + name + tag("tool_name", True) + ARGS
            + args + tag("tool_arguments", True) + tag("tool_request", True))


def block(*calls: str) -> str:
    return tag("tool_requests") + "".join(calls) + tag("tool_requests", True)


def parse(text: str, context: ToolContext = AUTO, thinking: bool = True
          ) -> tuple[str, str, list[tuple[str, str]]]:
    return feed_engine(plamo3.PLAMO3, [text], context, thinking)


PARIS = call("get_weather", '{"city": "Paris", "unit": "c"}')


def test_reasoning_then_calls() -> None:
    """[6600] reasoning, then a call; [6624] the block ends reasoning, whose trailing
    whitespace stays; [6618] content before as written; [6620] text after dropped; [6622]
    whitespace alone: none; [6644] a call without the block is content."""
    assert parse("Hmm." + THINK_END + block(PARIS)) == (
        "Hmm.", "", [("get_weather", '{"city": "Paris", "unit": "c"}')])
    assert parse("Hmm.\n" + block(PARIS))[0] == "Hmm.\n"
    assert parse(THINK_END + "Let me check.\n" + block(PARIS))[1] == "Let me check.\n"
    assert parse(THINK_END + block(PARIS) + "\nLater.")[1] == ""
    assert parse(THINK_END + "\n\n" + block(PARIS))[1] == ""
    assert parse(THINK_END + PARIS) == ("", PARIS, [])


@pytest.mark.parametrize(("args", "message"), [
    ('{"city":"Paris"}', '{"city":"Paris"}'),  # [6610] as written
    ('\n  {"city": "Paris"}  \n', '{"city": "Paris"}'),  # [6612] stripped
    ("", "{}"), ("{}", "{}"),  # [6614, 6616]
    ("{city: Paris}", "{city: Paris}"),  # [6640] not JSON: as written
    ('{"count": "3", "ratio": "0.5", "enabled": "true", "tags": "[\\"a\\"]", "note": "null", '
     '"label": 42, "level": "2", "extra": "7"}',  # [6608] typed: re-serialised
     '{"count": 3, "ratio": 0.5, "enabled": true, "tags": ["a"], "note": null, '
     '"label": "42", "level": 2, "extra": "7"}'),
])
def test_arguments_as_vllm_returns_them(args: str, message: str) -> None:
    name = "set_config" if "count" in args else "get_weather"
    assert parse(THINK_END + block(call(name, args)))[2] == [(name, message)]


def test_cut_off_calls_and_partial_markers() -> None:
    """[6646] cut in the arguments: as written; [6648] in the name: the name so far, {};
    [6692] after the name: {}; [6694] a named call without arguments: {}; [6650] a partial
    marker within a piece kept, [6686, 6688] a piece alone cut from a name, [6678, 6680,
    6682, 6684] from the reasoning and content; [6690] from arguments that are JSON
    without it."""
    start = THINK_END + tag("tool_requests") + tag("tool_request") + tag("tool_name")
    assert parse(start + "get_weather" + tag("tool_name", True) + ARGS + '{"city": "Par')[
        2] == [("get_weather", '{"city": "Par')]
    assert parse(start + "get_wea")[2] == [("get_wea", "{}")]
    assert parse(start + "get_weather" + tag("tool_name", True))[2] == [("get_weather", "{}")]
    assert parse(start + "get_time" + tag("tool_name", True) + tag("tool_request", True)
                 + tag("tool_request") + tag("tool_name") + "get_weather"
                 + tag("tool_name", True) + ARGS + '{"city": "Oslo"}')[2] == [
        ("get_time", "{}"), ("get_weather", '{"city": "Oslo"}')]
    assert parse(start + "get_weather<|plamo:end_tool_na")[2] == [
        ("get_weather<|plamo:end_tool_na", "{}")]
    assert parse(start + "get_weather<|plamo:end_")[2] == [("get_weather", "{}")]
    assert parse("Hmm.<|plamo:end_")[0] == "Hmm."
    assert parse("Hmm.<|plamo:end_think")[0] == "Hmm."
    assert parse("Hmm.<|plamo:end_thi")[0] == "Hmm.<|plamo:end_thi"
    assert parse(THINK_END + "Sunny.<|plamo:begin_")[1] == "Sunny."
    assert parse(THINK_END + "Sunny. <|plamo:end_tool_name")[1] == "Sunny. "
    assert parse(THINK_END + "Sunny.<|plamo:begin_tool_re")[1] == "Sunny.<|plamo:begin_tool_re"
    assert parse(start + "get_weather" + tag("tool_name", True) + ARGS + '{"city": "Paris"}'
                 + "<|plamo:end_tool_argu")[2] == [("get_weather", '{"city": "Paris"}')]


def test_thinking_off_and_the_parsers_alone() -> None:
    """[6634, 6636] thinking off: all content, think markers text; [6630] a think marker
    re-enters reasoning from content; the tool parser alone [6700] drops the end marker."""
    text = tag("think") + "Hmm." + THINK_END + "Sunny."
    assert parse(text, thinking=False) == ("", text, [])
    assert parse(THINK_END + "Sunny." + tag("think") + "more" + THINK_END + "end")[:2] == (
        "more", "Sunny.end")


@pytest.mark.parametrize(("kwargs", "effort", "on"), [
    ({}, None, True), ({"enable_thinking": False}, None, False),  # [6600, 6634]
    ({"enable_thinking": True}, None, True), ({}, "none", False),
])
def test_the_thinking_switch(kwargs: dict[str, Any], effort: str | None, on: bool) -> None:
    request = ChatRequest(messages=[{"role": "user", "content": "hi"}],
                          chat_template_kwargs=kwargs, reasoning_effort=effort)
    assert plamo3.thinking(parsers.template_kwargs(request)) is on


def test_the_records() -> None:
    tool, reasoning = registry.TOOLS_BY_NAME["plamo3"], registry.REASONING_BY_NAME["plamo3"]
    assert tool.config is not None and tool.config.load() is plamo3.PLAMO3_CONFIG
    assert tool.reads is registry.Reads.EVERY_OUTPUT
    assert reasoning.switch is not None and reasoning.switch.load() is plamo3.thinking
    assert parsers.engine_mode("plamo3", "plamo3") == "both"


def test_states_round_trip_and_stay_bounded_over_a_long_stream() -> None:
    text = ("Thinking, " * 800 + THINK_END + "Content, " * 800 + tag("tool_requests")
            + call("set_config", '{"label": "' + "a b " * 1000 + '"}')
            + call("get_weather", '{"city": "Paris"}') + tag("tool_requests", True))
    reasoning, content, calls, largest = feed_long_stream(plamo3.PLAMO3, MODEL, text, AUTO)
    assert reasoning == "Thinking, " * 800
    assert content == "Content, " * 800
    assert calls == [("set_config", '{"label": "' + "a b " * 1000 + '"}'),
                     ("get_weather", '{"city": "Paris"}')]
    assert largest < 2 * MAX_VALUE


TEXT_PIECES = [tag("tool_requests"), tag("tool_requests", True), tag("tool_request"),
               tag("tool_request", True), tag("tool_name"), tag("tool_name", True), ARGS,
               tag("tool_arguments", True), THINK_END, tag("think"), "<|plamo:begin_",
               "<|plamo:end_", ":plamo|>", "<|plamo:", "get_weather", '{"city": "Paris"}',
               '{"count": "3"}', "set_config", "\n", " ", "x", "{"]


@PROPS
@given(parts=st.lists(st.sampled_from(TEXT_PIECES), max_size=40), thinking=st.booleans(),
       cuts=st.data())
def test_any_text_reads_the_same_whole_and_split(parts: list[str], thinking: bool,
                                                 cuts: st.DataObject) -> None:
    text = "".join(parts)
    whole = feed_engine(plamo3.PLAMO3, [text], AUTO, thinking)
    size = cuts.draw(st.integers(1, 9))
    pieces = [text[i:i + size] for i in range(0, len(text), size)] or [""]
    assert feed_engine(plamo3.PLAMO3, pieces, AUTO, thinking) == whole
    check_round_trips(plamo3.PLAMO3, pieces, AUTO)


# --------------------------------------------------------------------------- split invariance


@st.composite
def outputs(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict[str, Any]]], bool]:
    text = draw(st.sampled_from(["", "Hmm." + THINK_END, tag("think") + "Hmm.\n" + THINK_END]))
    text += draw(st.sampled_from(["", "", "Sure.\n", " x <b>\n", "\n"]))
    written: list[tuple[str, dict[str, Any]]] = []
    calls = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["get_weather", "get_time", "get_stock"]))
        params = {} if name == "get_time" else draw(st.dictionaries(
            st.sampled_from(["city", "unit"]),
            st.sampled_from(["Paris", "Zürich", "a\nb", "", " < ", "🌦"]), max_size=2))
        calls.append(call(name, json.dumps(params, ensure_ascii=False)))
        written.append((name, params))
    if calls:
        text += tag("tool_requests") + "".join(calls) + draw(
            st.sampled_from([tag("tool_requests", True), ""]))
    text, clean = spoil(draw, text, [tag("tool_requests"), "<|plamo:end_", THINK_END,
                                     tag("tool_name") + "x", "<|plamo:begin_tool"])
    return text, written, clean


@pytest.mark.parametrize(("reasoning_parser", "tool_parser"), [
    ("plamo3", "plamo3"), (None, "plamo3"), ("plamo3", None)])
@PROPS
@given(data=st.data())
def test_plamo3_stream_folds_to_message(client_for: Any, reasoning_parser: str | None,
                                        tool_parser: str | None, data: st.DataObject) -> None:
    client = client_for(MODEL, reasoning_parser, tool_parser)
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS, 3),
                        label="chat_request")
    if tool_parser is None:
        request.pop("tools", None)
        request.pop("tool_choice", None)
    if data.draw(st.integers(0, 3)) == 0:
        request["chat_template_kwargs"] = {"enable_thinking": False}
    text, written, clean = data.draw(outputs(), label="output")
    expected = run_text(client, MODEL, text, request, data)
    if clean and tool_parser is not None and reasoning_parser is not None:
        check_written(expected, [[n, p] for n, p in written], request)
