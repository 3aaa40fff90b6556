"""MiniCPM5 (parsers/formats/minicpm5.py): ``minicpm5``'s ``<function name=…><param name=…>``
XML calls read as vLLM's ``MiniCPM5XMLToolParser`` reads them, each call held whole by
``poolside_v1``'s machine.

The rules are vLLM 0.33's (``vllm/tool_parsers/minicpm5xml_tool_parser.py``,
docs/vllm-compat/minicpm5.md); the recorded cases 8800-8885 replay them against the real server
(test_conformance) and each rule test below names the cases it restates. Split invariance on the
machine and through the HTTP app on Qwen3's vocabulary (a stand-in), with ``minicpmv`` and
alone.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers import registry
from derender.core.parsers.formats import minicpm5, poolside
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.tool_streams import check_round_trips, feed_all, ids_of, requests, run_both
from tests.test_parser_dsml import TOOLS
from tests.test_parser_properties import IM_END, PROMPTS, PROPS, QWEN, enc

DETAILS = {"type": "function", "function": {"name": "get_details_by_id", "parameters": {
    "type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
    "required": ["city"]}}}
AUTO = ToolContext(tools=[WEATHER, *TOOLS[1:], DETAILS])


def parse(text: str, context: ToolContext = AUTO) -> tuple[str, list[tuple[str, Any]]]:
    content, calls = feed_all(minicpm5.FORMAT, [text], context, names_first=True)
    return content, [(name, json.loads(args)) for name, args in calls]


def call(name: str, *params: tuple[str, str]) -> str:
    body = "".join(f'<param name="{k}">{v}</param>' for k, v in params)
    return f'<function name="{name}">{body}</function>'


PARIS = call("get_weather", ("city", "Paris"))
PARIS_CALL = ("get_weather", {"city": "Paris"})


def test_calls_and_content() -> None:
    """[8800] a call, whitespace before it dropped; [8804] parallel; [8808] text after dropped;
    [8830] a refused block before a call dropped; [8806, 8876] text before the first call is
    content (vLLM's message: none; README compatibility); [8802, 8884] no call: as written."""
    assert parse("\n\n" + PARIS) == ("", [PARIS_CALL])
    rome = call("get_weather", ("city", "Rome"), ("unit", "c"))
    assert parse(PARIS + "\n" + rome) == ("", [PARIS_CALL, ("get_weather", {
        "city": "Rome", "unit": "c"})])
    assert parse(PARIS + "\nDone.") == ("", [PARIS_CALL])
    assert parse(call("get_stock", ("symbol", "X")) + PARIS) == ("", [PARIS_CALL])
    assert parse("Let me check.\n" + PARIS) == ("Let me check.\n", [PARIS_CALL])
    assert parse("Sunny.\n") == ("Sunny.\n", [])


def test_values_typed_by_the_schema() -> None:
    """[8810] JSON values typed, "string" kept; [8812] Python literals, unread text kept; [8824]
    the XML reading keeps a string unstripped; [8818, 8820] entities and CDATA decoded; [8822]
    a raw ``<`` fails the XML reading: the patterns read it, stripped; [8814] wide
    characters."""
    got = parse(call("set_config", ("count", "3"), ("ratio", "0.5"), ("enabled", "true"),
                     ("tags", '["a", "b"]'), ("meta", '{"k": 1}'), ("note", "null"),
                     ("label", "7"), ("level", "2")))[1]
    assert got == [("set_config", {"count": 3, "ratio": 0.5, "enabled": True, "tags": ["a", "b"],
                                   "meta": {"k": 1}, "note": None, "label": "7", "level": 2})]
    got = parse(call("set_config", ("count", " 3 "), ("enabled", "True"), ("tags", "['a']"),
                     ("meta", "{'k': None}"), ("ratio", "abc")))[1]
    assert got == [("set_config", {"count": 3, "enabled": True, "tags": ["a"],
                                   "meta": {"k": None}, "ratio": "abc"})]
    for raw, city in (("\nParis\n", "\nParis\n"), ("A &amp; B &lt;x&gt;", "A & B <x>"),
                      ("<![CDATA[a < b]]>", "a < b"), (" a < b ", "a < b"),
                      ("Zürich 😀𝄞", "Zürich 😀𝄞")):
        assert parse(call("get_weather", ("city", raw)))[1] == [("get_weather", {"city": city})]


def test_blocks_that_are_no_call() -> None:
    """Content as written, no call: [8826] a required parameter missing; [8828] an unknown
    tool; [8834] a key twice; [8842] a nameless param; [8844] an unquoted name; [8852, 8854]
    cut off; [8856] no ``</function>``; [8848] a set value (vLLM fails: all content)."""
    for text in (call("get_weather", ("unit", "c")), call("get_stock", ("symbol", "X")),
                 call("get_weather", ("city", "Paris"), ("city", "Rome")),
                 '<function name="get_weather"><param>Paris</param></function>',
                 '<function name=get_weather><param name="city">Paris</param></function>',
                 '\n\n<function name="get_wea', 'Sure. <function name="get_weather"><param '
                 'name="city">Paris</param>', call("set_config", ("tags", "{1, 2}"))):
        assert parse(text) == (text, [])


def test_vllm_repairs() -> None:
    """[8832] unknown keys dropped; [8836] an ``arguments`` wrapper unwrapped; [8838] params in
    an ``<arguments>`` element; [8840] an alias name mapped; [8846] collapsed tags spaced;
    [8850] ``Ġ``/``Ċ`` read as space and newline, in the content too."""
    assert parse(call("get_weather", ("city", "Paris"), ("foo", "1")))[1] == [PARIS_CALL]
    assert parse(call("get_weather", ("arguments", "{'city': 'Paris', 'x': 1}")))[1] == [
        PARIS_CALL]
    assert parse('<function name="get_weather"><arguments><param name="city">Paris</param>'
                 "</arguments></function>")[1] == [PARIS_CALL]
    assert parse(call("get_line_details", ("line_id", "L1")))[1] == [
        ("get_details_by_id", {"id": "L1"})]
    assert parse('<functionname="get_weather"><paramname="city">Paris</param></function>'
                 )[1] == [PARIS_CALL]
    assert parse("Sun\u0120ny\u010a" + call("get_weather", ("city", "New\u0120York"))) == (
        "Sun ny\n", [("get_weather", {"city": "New York"})])
    assert parse("a<paramname=b") == ("a<param name=b", [])
    assert minicpm5.normalize("x" * 20 + "<functionna", 'me="f">\u0120') == (
        "x" * 20 + '<function name="f"> ')


def test_forced_choices_read_the_json_forms() -> None:
    """[8868] "required": a JSON list of calls; [8870] named: the content as the arguments."""
    required = ToolContext(required=True, tools=AUTO.tools)
    assert parse('\n\n[{"name": "get_weather", "parameters": {"city": "Paris"}}]',
                 required) == ("", [PARIS_CALL])
    named = ToolContext(forced_name="get_weather", tools=AUTO.tools)
    assert feed_all(minicpm5.FORMAT, ['\n\n{"city": "Paris"}'], named) == (
        "", [["get_weather", '\n\n{"city": "Paris"}']])


def test_the_record() -> None:
    tool = registry.TOOLS_BY_NAME["minicpm5"]
    assert tool.format is not None and tool.format.load() is minicpm5.FORMAT
    assert tool.reads is registry.Reads.ON_REQUEST and not tool.markers
    assert parsers.pairing_error("minicpmv", "minicpm5") is None
    assert parsers.pairing_error(None, "minicpm5") is None


def test_held_text_is_bounded() -> None:
    """A call is held at most ``MAX_HELD`` bytes: a longer first call is content."""
    long_call = call("get_weather", ("city", "😀" * (poolside.MAX_HELD // 4)))
    assert parse(long_call) == (long_call, [])
    state, largest = minicpm5.FORMAT.start(), 0
    for k in range(0, len(long_call), 7):
        _, _, state = minicpm5.FORMAT.feed(state, long_call[k:k + 7], False, AUTO)
        writer = Writer()
        minicpm5.FORMAT.encode(state, writer)
        largest = max(largest, len(writer.out))
        assert minicpm5.FORMAT.decode(Reader(bytes(writer.out))) == state
    assert largest <= poolside.MAX_HELD + 64


TEXT_PIECES = ['<function name="get_weather">', '<function name="set_config">', "</function>",
               '<param name="city">', '<param name="count">', "</param>", "<functionname=",
               '"get_weather">', "<paramname=", "Paris", "3", "\n", " ", "<", "<func", "&amp;",
               "x", "\u0120", "{1, 2}", "😀" * 300]


@PROPS
@given(parts=st.lists(st.sampled_from(TEXT_PIECES), max_size=40), cuts=st.data())
@example(parts=[PARIS], cuts=None)
@example(parts=["<functionname=", '"get_weather">', "<paramname=", "</function>"], cuts=None)
def test_any_text_reads_the_same_whole_and_split(parts: list[str],
                                                 cuts: st.DataObject | None) -> None:
    text = "".join(parts)
    whole = feed_all(minicpm5.FORMAT, [text], AUTO, names_first=True)
    sizes = [cuts.draw(st.integers(1, 7))] if cuts is not None else list(range(1, 8))
    for size in sizes:
        pieces = [text[i:i + size] for i in range(0, len(text), size)] or [""]
        assert feed_all(minicpm5.FORMAT, pieces, AUTO, names_first=True) == whole
        check_round_trips(minicpm5.FORMAT, pieces, AUTO)
    for _, arguments in whole[1]:
        json.loads(arguments)


@pytest.mark.parametrize("reasoning_parser", ["minicpmv", None])
@PROPS
@given(data=st.data())
def test_minicpm5_stream_folds_to_message(client_for: Any, reasoning_parser: str | None,
                                          data: st.DataObject) -> None:
    client = client_for(QWEN, reasoning_parser, "minicpm5")
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], AUTO.tools),
                        label="chat_request")
    if reasoning_parser is not None:
        request["chat_template_kwargs"] = data.draw(st.sampled_from([
            None, {"enable_thinking": False}]), label="kwargs")
    parts = data.draw(st.lists(st.sampled_from(
        ["Hmm.", "</think>", "\n\n", "Sure. ", PARIS, call("get_stock", ("symbol", "X")),
         call("set_config", ("count", "3"), ("label", "7")), "<functionname=", '"get_time">',
         "</function>", "\u0120", '{"city": "Paris"}']), max_size=8), label="output")
    finish = data.draw(st.sampled_from(["stop", "length"]), label="finish")
    ids = ids_of(parts, enc)
    if finish == "stop" or not ids:
        ids.append(IM_END)
        finish = "stop"
    run_both(client, QWEN, ids, finish, PROMPTS["open"][0], request, data)
