"""Tencent Hy4 (parsers/formats/hy.py ``HY4``): ``hy_v4``'s calls, Hy3's without
``<tool_sep>``, suffixed markers, read strictly (the block held whole until ``</tool_calls>``);
its reasoning parser ``deepseek_r1``'s rules on the suffixed think markers unless
``reasoning_effort`` is "no_think".

The rules are vLLM 0.33's (``vllm/tool_parsers/hy_v4_tool_parser.py``,
``vllm/reasoning/hy_v4_reasoning_parser.py``, docs/vllm-compat/hy.md); the recorded cases
6200-6299 replay them against the real server (test_conformance) and each rule test below
names the cases it restates. Split invariance on the machine and through the HTTP app on
``hy4-standin`` (every marker a single token there).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from derender.contract.requests import ChatRequest
from derender.core import parsers
from derender.core.parsers import registry
from derender.core.parsers.formats import hy
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.tool_streams import (
    check_round_trips,
    check_written,
    feed_all,
    requests,
    run_text,
)
from tests.test_parser_dsml import TOOLS
from tests.test_parser_properties import PROPS

AUTO = ToolContext(tools=TOOLS)
MODEL = "hy4-standin"
S = hy.HY4_SUFFIX
CALLS, END_CALLS, CALL, END_CALL = hy.HY4_CALLS, hy.HY4_END_CALLS, hy.HY4_CALL, hy.HY4_END_CALL
KEY, END_KEY, VALUE, END_VALUE = hy.HY4_KEY, hy.HY4_END_KEY, hy.HY4_VALUE, hy.HY4_END_VALUE


def parse(text: str, context: ToolContext = AUTO) -> tuple[str, list[tuple[str, Any]]]:
    content, calls = feed_all(hy.HY4, [text], context, names_first=True)
    return content, [(name, json.loads(args)) for name, args in calls]


def call(name: str, *params: tuple[str, str], nl: str = "\n") -> str:
    body = "".join(f"{nl}{KEY}{k}{END_KEY}{VALUE}{v}{END_VALUE}" for k, v in params)
    return f"{CALL}{name}{body}{nl}{END_CALL}"


def block(*calls: str, nl: str = "\n") -> str:
    return CALLS + nl + nl.join(calls) + nl + END_CALLS


PARIS = call("get_weather", ("city", "Paris"), ("unit", "c"))
PARIS_CALL = ("get_weather", {"city": "Paris", "unit": "c"})


def test_a_whole_block_is_read() -> None:
    """[6200] a call; [6204] parallel; [6210] no arguments: {}; [6216] content before as
    written; [6218] text after dropped; [6220] whitespace alone: none; [6222] text between
    calls ignored; [6224] a second block dropped; [6226] unknown names kept."""
    assert parse(block(PARIS)) == ("", [PARIS_CALL])
    assert parse(block(PARIS, call("get_time"))) == ("", [PARIS_CALL, ("get_time", {})])
    assert parse(f"{CALLS}{CALL}get_time{END_CALL}{END_CALLS}") == ("", [("get_time", {})])
    assert parse("Let me check.\n" + block(PARIS)) == ("Let me check.\n", [PARIS_CALL])
    assert parse(block(PARIS) + "\nLater.") == ("", [PARIS_CALL])
    assert parse("\n\n" + block(PARIS)) == ("", [PARIS_CALL])
    assert parse(CALLS + PARIS + "\nand then\n" + call("get_time") + END_CALLS) == (
        "", [PARIS_CALL, ("get_time", {})])
    assert parse(block(PARIS) + block(call("get_time"))) == ("", [PARIS_CALL])
    assert parse(block(call("get_stock", ("symbol", "ACME"))))[1] == [
        ("get_stock", {"symbol": "ACME"})]


@pytest.mark.parametrize("text", [
    f"{CALLS}{CALL} get_weather {KEY} city {END_KEY} {VALUE} Paris {END_VALUE}{END_CALL}"
    f"{END_CALLS}",  # [6228] text between a key and its value
    f"{CALLS}\n{CALL}get_weather\n{KEY}city{END_KEY}\n{VALUE}Paris{END_VALUE}\n{END_CALL}\n"
    f"{END_CALLS}",  # [6230]
    CALLS + "\n" + END_CALLS,  # [6232] no call
    f"Hi.{CALLS}{CALL}  {KEY}city{END_KEY}{VALUE}Paris{END_VALUE}{END_CALL}{END_CALLS}",  # [6234]
    f"Hi.{CALLS}{CALL}get_weather{KEY}city{END_KEY}{VALUE}Paris{KEY}unit{END_KEY}{VALUE}c"
    f"{END_VALUE}{END_CALL}{END_CALLS}",  # [6236] unbalanced argument tags
    f"{CALLS}{CALL}get_weather{KEY}city{END_KEY}oops{VALUE}Paris{END_VALUE}{END_CALL}"
    f"{END_CALLS}",  # [6238]
    "Sure.\n" + block(PARIS, f"{CALL}get_time{KEY}x{END_CALL}"),  # [6240] a later call faulty
    block(f"{CALL}get_weather{CALL}get_time{END_CALL}{END_CALL}"),  # [6242] nested
    f"{CALLS}\n{CALL}get_weather\n{KEY}city{END_KEY}{VALUE}Paris{END_VALUE}\n{END_CALLS}",
    "Checking.\n" + CALLS + "\n" + PARIS + "\n",  # [6246] no </tool_calls>
    PARIS,  # [6248] no <tool_calls>
    f"Sure.{CALLS}\n{CALL}get_wea",  # [6252] cut off in the name
    f"{END_CALLS}x{CALLS}{PARIS}{END_CALLS}",  # vLLM's first end before its start
    "\n" + block(call("get_weather", ("city", "é" * hy.MAX_BLOCK))),  # longer than MAX_BLOCK
])
def test_a_faulty_block_makes_the_whole_output_content(text: str) -> None:
    assert parse(text) == (text, [])


def test_a_value_json_cannot_write_makes_the_output_content() -> None:
    """vLLM's ``json.dumps`` of a set (a Python literal of a type outside the schema's) fails
    and its extractor answers with the whole output as content."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "null"}}}}}]
    text = block(call("f", ("x", "{1, 2}")))
    assert parse(text, ToolContext(tools=tools)) == (text, [])
    assert parse(block(call("f", ("x", "(1, 2)"))), ToolContext(tools=tools)) == (
        "", [("f", {"x": [1, 2]})])


@pytest.mark.parametrize(("key", "raw", "value"), [
    # [6206]
    ("count", "3", 3), ("ratio", "0.5", 0.5), ("enabled", "True", True),
    ("tags", '["a", "b"]', ["a", "b"]), ("meta", '{"k": 1}', {"k": 1}), ("note", "null", "null"),
    # [6208]
    ("count", "three", "three"), ("ratio", "1e3", 1000.0), ("enabled", "yes", "yes"),
    ("meta", "{'k': 1}", {"k": 1}), ("extra", "7", "7"),
])
def test_values_are_typed_as_hy3s(key: str, raw: str, value: Any) -> None:
    got = parse(block(call("set_config", (key, raw))))[1]
    assert got == [("set_config", {key: value})]
    assert type(got[0][1][key]) is type(value)


@pytest.mark.parametrize(("kwargs", "effort", "on"), [
    ({}, None, True), ({"reasoning_effort": "no_think"}, None, False),  # [6278, 6276]
    ({"reasoning_effort": "high"}, None, True), ({}, "low", True),  # [6290, 6288]
    ({}, "none", True),  # [6292]
    ({"reasoning_effort": "no_think"}, "high", False),
])
def test_the_reasoning_switch(kwargs: dict[str, Any], effort: str | None, on: bool) -> None:
    request = ChatRequest(messages=[{"role": "user", "content": "hi"}],
                          chat_template_kwargs=kwargs, reasoning_effort=effort)
    assert hy.thinking4(parsers.template_kwargs(request)) is on


def test_the_records() -> None:
    tool, reasoning = registry.TOOLS_BY_NAME["hy_v4"], registry.REASONING_BY_NAME["hy_v4"]
    assert tool.format is not None and tool.format.load() is hy.HY4
    assert tool.reads is registry.Reads.WITH_CALLS
    assert reasoning.switch is not None and reasoning.switch.load() is hy.thinking4
    assert {m.text for m in (*tool.markers, *reasoning.markers)} == {
        hy.HY4_THINK, hy.HY4_END_THINK, CALLS, END_CALLS, CALL, END_CALL, KEY, END_KEY, VALUE,
        END_VALUE}
    assert parsers.pairing_error("hy_v4", "hermes") is None
    assert parsers.pairing_error("qwen3", "hy_v4") is None


def test_a_held_block_of_wide_characters_stays_bounded() -> None:
    """The block is held up to ``MAX_BLOCK`` bytes; one byte more makes it content."""
    fill = "😀" * (hy.MAX_BLOCK // 4 - 40)
    text = block(call("get_weather", ("city", fill)))
    state = hy.HY4.start()
    largest = 0
    held = text[:-len(END_CALLS)]
    for piece in [held[i:i + 3] for i in range(0, len(held), 3)]:
        _, calls, state = hy.HY4.feed(state, piece, False, AUTO)
        assert not calls
        writer = Writer()
        hy.HY4.encode(state, writer)
        largest = max(largest, len(writer.out))
        assert hy.HY4.decode(Reader(bytes(writer.out))) == state
    assert largest <= hy.MAX_BLOCK + 2 * len(END_CALLS.encode()) + 16
    assert parse(text)[1] == [("get_weather", {"city": fill})]


TEXT_PIECES = [CALLS, END_CALLS, CALL, END_CALL, KEY, END_KEY, VALUE, END_VALUE, "get_weather",
               "city", "count", "Paris", "3", "\n", " ", "<", "<tool_", "x", "{1, 2}",
               f"<tool_calls{S}", "</tool_calls"]


@PROPS
@given(parts=st.lists(st.sampled_from(TEXT_PIECES), max_size=40), cuts=st.data())
@example(parts=[block(PARIS)], cuts=None)
@example(parts=["\n", CALLS, CALL, "x", END_CALL, END_CALLS], cuts=None)
def test_any_text_reads_the_same_whole_and_split(parts: list[str],
                                                 cuts: st.DataObject | None) -> None:
    text = "".join(parts)
    whole = feed_all(hy.HY4, [text], AUTO, names_first=True)
    sizes = [cuts.draw(st.integers(1, 7))] if cuts is not None else list(range(1, 8))
    for size in sizes:
        pieces = [text[i:i + size] for i in range(0, len(text), size)] or [""]
        assert feed_all(hy.HY4, pieces, AUTO, names_first=True) == whole
        check_round_trips(hy.HY4, pieces, AUTO)
    content, calls = whole
    assert content in ("", text) or text.startswith(content) or not calls
    for _, arguments in calls:
        json.loads(arguments)


# --------------------------------------------------------------------------- split invariance


@st.composite
def outputs(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict[str, Any]]], bool]:
    thought = draw(st.sampled_from(["", "Hmm." + hy.HY4_END_THINK,
                                    hy.HY4_THINK + "Hmm." + hy.HY4_END_THINK + "\n"]))
    text = draw(st.sampled_from(["", "", "Sure.\n", " x <b>\n", "\n"]))
    written: list[tuple[str, dict[str, Any]]] = []
    calls = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["get_weather", "get_time", "get_stock"]))
        params = {} if name == "get_time" else draw(st.dictionaries(
            st.sampled_from(["city", "unit"]),
            st.sampled_from(["Paris", "Zürich", "a\nb", "", " < ", "🌦"]), max_size=2))
        calls.append(call(name, *params.items(), nl=draw(st.sampled_from(["", "\n"]))))
        written.append((name, params))
    clean = bool(calls)
    if calls:
        text += CALLS + "".join(calls) + END_CALLS
    change = draw(st.sampled_from(["", "", "cut", "trail", "dirty"]))
    if change == "cut":
        text = text[:draw(st.integers(0, len(text)))]
    elif change == "trail":
        text += "Anything else?"
    elif change == "dirty":
        text = text.replace(END_CALL, draw(st.sampled_from(["", END_KEY, "x" + END_CALL])), 1)
    return thought + text, written, clean and change in ("", "trail")


@pytest.mark.parametrize(("reasoning_parser", "tool_parser"), [
    ("hy_v4", "hy_v4"), (None, "hy_v4"), ("hy_v4", None)])
@PROPS
@given(data=st.data())
def test_hy4_stream_folds_to_message(client_for: Any, reasoning_parser: str | None,
                                     tool_parser: str | None, data: st.DataObject) -> None:
    client = client_for(MODEL, reasoning_parser, tool_parser)
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS, 3),
                        label="chat_request")
    if tool_parser is None:
        request.pop("tools", None)
        request.pop("tool_choice", None)
    thinks = data.draw(st.integers(0, 1)) == 0 and reasoning_parser is not None
    if not thinks:
        request["chat_template_kwargs"] = {"reasoning_effort": "no_think"}
    text, written, clean = data.draw(outputs(), label="output")
    expected = run_text(client, MODEL, text, request, data)
    if clean and not thinks and "think" not in text and tool_parser is not None:
        check_written(expected, [[n, p] for n, p in written], request)
