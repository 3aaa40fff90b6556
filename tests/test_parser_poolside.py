"""poolside Laguna (parsers/formats/poolside.py): ``poolside_v1``'s GLM-4 calls read as vLLM's
regular expressions read them, each call held whole; its reasoning parser ``deepseek_v3``'s.

The rules are vLLM 0.33's (``vllm/tool_parsers/poolside_v1_tool_parser.py``,
``vllm/reasoning/poolside_v1_reasoning_parser.py``, docs/vllm-compat/poolside.md); the recorded
cases 6300-6383 replay them against the real server (test_conformance) and each rule test
below names the cases it restates. Split invariance on the machine and through the HTTP app
on ``poolside-standin`` (every marker a single token there).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers import registry
from derender.core.parsers.formats import poolside
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
MODEL = "poolside-standin"
CONFIG = [{"type": "function", "function": {"name": "set_config", "parameters": {
    "type": "object", "properties": {"count": {"type": "integer"}, "label": {"type": "string"},
                                     "note": {"type": ["string", "null"]}}}}}]


def parse(text: str, context: ToolContext = AUTO) -> tuple[str, list[tuple[str, Any]]]:
    content, calls = feed_all(poolside.FORMAT, [text], context, names_first=True)
    return content, [(name, json.loads(args)) for name, args in calls]


def call(name: str, *params: tuple[str, str], nl: str = "\n") -> str:
    body = "".join(f"<arg_key>{k}</arg_key>{nl}<arg_value>{v}</arg_value>{nl}" for k, v in params)
    return f"<tool_call>{name}{nl}{body}</tool_call>"


PARIS = call("get_weather", ("city", "Paris"), ("unit", "c"))
PARIS_CALL = ("get_weather", {"city": "Paris", "unit": "c"})


def test_calls_and_content() -> None:
    """[6300] a call; [6304] parallel; [6310, 6312] no arguments; [6316] content before as
    written; [6318, 6320] text after and between dropped; [6322] whitespace alone: none; [6324]
    unknown names kept; [6326] names and keys stripped, string values verbatim."""
    assert parse(PARIS) == ("", [PARIS_CALL])
    assert parse(PARIS + "\n" + call("get_time")) == ("", [PARIS_CALL, ("get_time", {})])
    assert parse("<tool_call>get_time</tool_call>") == ("", [("get_time", {})])
    assert parse("Let me check.\n" + PARIS) == ("Let me check.\n", [PARIS_CALL])
    assert parse(PARIS + "\nand then\n" + call("get_time") + "\nbye") == (
        "", [PARIS_CALL, ("get_time", {})])
    assert parse("\n\n" + PARIS) == ("", [PARIS_CALL])
    assert parse(call("get_stock", ("symbol", "ACME")))[1] == [("get_stock", {"symbol": "ACME"})]
    assert parse("<tool_call>  get_weather  \n <arg_key> city </arg_key>\n<arg_value> Paris "
                 "</arg_value></tool_call>")[1] == [("get_weather", {"city": " Paris "})]


def test_calls_that_do_not_read() -> None:
    """[6328] an empty call: all content; [6330] skipped, a later call read (content: before the
    first <tool_call>); [6332] text between the name and the parameters; [6334] a bad call
    before a good one; [6336] the inner of nested calls; [6338] no </arg_value>: the value runs
    on; [6340, 6344, 6346] no </tool_call>: content; [6342] a later unclosed call dropped."""
    assert parse("Hi.<tool_call></tool_call>") == ("Hi.<tool_call></tool_call>", [])
    assert parse("Hi.<tool_call></tool_call>\n" + PARIS) == ("Hi.", [PARIS_CALL])
    junk = ("<tool_call>get_weather\nnote: <arg_key>city</arg_key><arg_value>Paris</arg_value>"
            "</tool_call>")
    assert parse(junk) == (junk, [])
    assert parse("Sure.\n<tool_call>get_weather\nx\ny<arg_key>city</arg_key><arg_value>Oslo"
                 "</arg_value></tool_call>\n" + PARIS) == ("Sure.\n", [PARIS_CALL])
    assert parse("<tool_call>get_weather<tool_call>get_time</tool_call>") == (
        "", [("get_time", {})])
    assert parse("<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris\n<arg_key>"
                 "unit</arg_key>\n<arg_value>c</arg_value>\n</tool_call>")[1] == [
        ("get_weather", {"city": "Paris\n<arg_key>unit</arg_key>\n<arg_value>c"})]
    for text in ("Checking.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris"
                 "</arg_value>\n", "Sure.<tool_call>get_wea"):
        assert parse(text) == (text, [])
    assert parse(PARIS + "\n<tool_call>get_time\n") == ("", [PARIS_CALL])


@pytest.mark.parametrize(("raw", "value"), [
    (" 3 ", 3), ("true", True), ('["a", "b"]', ["a", "b"]), ("{'k': (1, 2)}", {"k": [1, 2]}),
    ("None", None), ("three", "three"), ("1e3", 1000.0),  # [6306, 6308]
])
def test_values_not_typed_string_are_read_as_json_or_literals(raw: str, value: Any) -> None:
    got = parse(call("set_config", ("count", raw)), ToolContext(tools=CONFIG))[1]
    assert got == [("set_config", {"count": value})]


def test_string_values_are_verbatim_and_a_set_spoils_the_first_call() -> None:
    """Only a schema ``type`` of exactly "string" keeps a value verbatim [6306]; a set in the
    first call read makes the whole output content [6308]; in a later call it drops that call
    (README compatibility)."""
    context = ToolContext(tools=CONFIG)
    assert parse(call("set_config", ("label", " 42 "), ("note", " 7 ")), context)[1] == [
        ("set_config", {"label": " 42 ", "note": 7})]
    spoilt = call("set_config", ("count", "{1, 2}"))
    assert parse(spoilt, context) == (spoilt, [])
    assert parse(call("set_config", ("count", "1")) + spoilt, context)[1] == [
        ("set_config", {"count": 1})]


def test_the_records() -> None:
    tool, reasoning = registry.TOOLS_BY_NAME["poolside_v1"], registry.REASONING_BY_NAME[
        "poolside_v1"]
    assert tool.format is not None and tool.format.load() is poolside.FORMAT
    assert tool.reads is registry.Reads.WITH_CALLS
    assert reasoning.switch is not None
    assert parsers.pairing_error("poolside_v1", "hermes") is None
    assert parsers.pairing_error("qwen3", "poolside_v1") is None


def test_held_text_is_bounded() -> None:
    """Text after the first <tool_call> is held until a call reads, at most ``MAX_HELD``
    bytes: a longer first call is content; after a call, a longer call is dropped."""
    fill = "😀" * (poolside.MAX_HELD // 4)
    long_call = call("get_weather", ("city", fill))
    assert parse(long_call) == (long_call, [])
    assert parse(PARIS + long_call + call("get_time"))[1] == [PARIS_CALL, ("get_time", {})]
    state, largest = poolside.FORMAT.start(), 0
    for k in range(0, len(long_call), 5):
        _, _, state = poolside.FORMAT.feed(state, long_call[k:k + 5], False, AUTO)
        writer = Writer()
        poolside.FORMAT.encode(state, writer)
        largest = max(largest, len(writer.out))
        assert poolside.FORMAT.decode(Reader(bytes(writer.out))) == state
    assert largest <= poolside.MAX_HELD + 64


TEXT_PIECES = ["<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
               "</arg_value>", "get_weather", "city", "count", "Paris", "3", "\n", " ", "<",
               "<tool_", "x", "{1, 2}", "😀" * 300]


@PROPS
@given(parts=st.lists(st.sampled_from(TEXT_PIECES), max_size=40), cuts=st.data())
@example(parts=[PARIS], cuts=None)
@example(parts=["\n", "<tool_call>", "</tool_call>", "<tool_call>", "x", "</tool_call>"],
         cuts=None)
def test_any_text_reads_the_same_whole_and_split(parts: list[str],
                                                 cuts: st.DataObject | None) -> None:
    text = "".join(parts)
    for context in (AUTO, ToolContext(tools=CONFIG)):
        whole = feed_all(poolside.FORMAT, [text], context, names_first=True)
        sizes = [cuts.draw(st.integers(1, 7))] if cuts is not None else list(range(1, 8))
        for size in sizes:
            pieces = [text[i:i + size] for i in range(0, len(text), size)] or [""]
            assert feed_all(poolside.FORMAT, pieces, context, names_first=True) == whole
            check_round_trips(poolside.FORMAT, pieces, context)
        for _, arguments in whole[1]:
            json.loads(arguments)


@st.composite
def outputs(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict[str, Any]]], bool]:
    text = draw(st.sampled_from(["", "<think>", "Hmm.</think>", "<think>Hmm.</think>\n"]))
    text += draw(st.sampled_from(["", "", "Sure.\n", " x <b>\n", "\n"]))
    written: list[tuple[str, dict[str, Any]]] = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["get_weather", "get_time", "get_stock"]))
        params = {} if name == "get_time" else draw(st.dictionaries(
            st.sampled_from(["city", "unit"]),
            st.sampled_from(["Paris", "Zürich", "a\nb", "", " < ", "🌦"]), max_size=2))
        text += call(name, *params.items(), nl=draw(st.sampled_from(["", "\n"])))
        text += draw(st.sampled_from(["", "\n", " and "]))
        written.append((name, params))
    change = draw(st.sampled_from(["", "", "cut", "trail", "dirty"]))
    if change == "cut":
        text = text[:draw(st.integers(0, len(text)))]
    elif change == "trail":
        text += "Anything else?"
    elif change == "dirty":
        text += draw(st.sampled_from(["<tool_call>x", "</tool_call>", "<tool_call></tool_call>"]))
    return text, written, change in ("", "trail", "dirty")


@pytest.mark.parametrize(("reasoning_parser", "tool_parser"), [
    ("poolside_v1", "poolside_v1"), (None, "poolside_v1"), ("poolside_v1", None)])
@PROPS
@given(data=st.data())
def test_poolside_stream_folds_to_message(client_for: Any, reasoning_parser: str | None,
                                          tool_parser: str | None, data: st.DataObject) -> None:
    client = client_for(MODEL, reasoning_parser, tool_parser)
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS, 3),
                        label="chat_request")
    if tool_parser is None:
        request.pop("tools", None)
        request.pop("tool_choice", None)
    thinks = data.draw(st.integers(0, 1)) == 0 and reasoning_parser is not None
    if thinks:
        request["chat_template_kwargs"] = {"thinking": True}
    text, written, clean = data.draw(outputs(), label="output")
    expected = run_text(client, MODEL, text, request, data)
    if clean and not thinks and "think" not in text and tool_parser is not None:
        check_written(expected, [[n, p] for n, p in written], request)
