"""dots (parsers/formats/poolside.py, ``DOTS``): vLLM 0.33's ``dots`` tool parser, blocks of
``<invoke>`` elements or one JSON object in ``<dots_function_call>``, read on poolside_v1's
held-call machine (``Held``) with its block reader and stripped content as data.

The rules are vLLM 0.33's (``vllm/tool_parsers/dots_tool_parser.py``,
docs/vllm-compat/dots.md); the recorded cases 10000-10081 replay them against the real server
(test_conformance) and each rule test below names the cases whose recorded message it restates.
Split invariance on the machine and through the HTTP app on ``dots-standin`` (both markers
single tokens there).
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

FMT = poolside.DOTS_FORMAT
MODEL = "dots-standin"
CONFIG = [{"type": "function", "function": {"name": "set_config", "parameters": {
    "type": "object", "properties": {
        "count": {"type": "integer"}, "ratio": {"type": "number"}, "enabled": {"type": "boolean"},
        "tags": {"type": "array"}, "label": {"type": "string"},
        "note": {"type": ["string", "null"]}, "level": {"enum": [1, 2, 3]}}}}}]
BOOK = [{"type": "function", "function": {"name": "book", "parameters": {
    "type": "object", "$defs": {"Day": {"type": "integer"}, "Money": {"type": "number"}},
    "properties": {"day": {"$ref": "#/$defs/Day"},
                   "seats": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
                   "price": {"oneOf": [{"$ref": "#/$defs/Money"}]},
                   "flags": {"allOf": [{"type": "array"}]}, "vip": {"type": ["null", "boolean"]},
                   "note": {"anyOf": [{"type": "null"}]}}}}}]
AUTO = ToolContext(tools=[*TOOLS, *CONFIG, *BOOK])
START, END = "<dots_function_call>", "</dots_function_call>"


def parse(text: str, context: ToolContext = AUTO) -> tuple[str, list[tuple[str, Any]]]:
    content, calls = feed_all(FMT, [text], context, names_first=True)
    return content, [(name, json.loads(args)) for name, args in calls]


def inv(name: str, *params: tuple[str, str], quote: str = '"') -> str:
    body = "".join(f"<parameter name={quote}{k}{quote}>{v}</parameter>\n" for k, v in params)
    return f"<invoke name={quote}{name}{quote}>\n{body}</invoke>"


def block(*parts: str) -> str:
    return START + "\n" + "\n".join(parts) + "\n" + END


PARIS = block(inv("get_weather", ("city", "Paris"), ("unit", "c")))
PARIS_CALL = ("get_weather", {"city": "Paris", "unit": "c"})


def test_blocks_and_content() -> None:
    """[10000] a call; [10004] two invokes in a block; [10006] two blocks; [10026] content
    before, stripped; [10028, 10030] text after and between dropped (before the first block
    kept, even when that block reads no call); [10032] whitespace alone: none; [10036] an
    unknown name: all content; [10038] only known names; [10040] names unquoted and stripped;
    [10042] a later duplicate wins."""
    assert parse(PARIS) == ("", [PARIS_CALL])
    assert parse(block(inv("get_weather", ("city", "Zürich")), inv("get_time")))[1] == [
        ("get_weather", {"city": "Zürich"}), ("get_time", {})]
    assert parse(PARIS + "\n" + block(inv("get_time"))) == ("", [PARIS_CALL, ("get_time", {})])
    assert parse("Let me check the weather for you.\n" + PARIS) == (
        "Let me check the weather for you.", [PARIS_CALL])
    assert parse("Hi " + block("nothing") + " mid " + PARIS + " end") == ("Hi", [PARIS_CALL])
    assert parse("\n\n" + PARIS) == ("", [PARIS_CALL])
    unknown = block(inv("get_stock", ("symbol", "ACME")))
    assert parse(unknown) == (unknown, [])
    assert parse(block(inv("get_stock"), inv("get_time")))[1] == [("get_time", {})]
    assert parse(block(inv("get_weather", ("city", " Paris "), quote="'"),
                       "<invoke  name = get_time >\n</invoke>"))[1] == [
        ("get_weather", {"city": "Paris"}), ("get_time", {})]
    assert parse(block(inv("get_weather", ("city", "Paris"), ("city", "Oslo"))))[1] == [
        ("get_weather", {"city": "Oslo"})]


def test_what_does_not_read() -> None:
    """No call read: the whole output is content. [10044] an empty block; [10046] a nested
    start; [10048] an invoke not closed; [10052, 10056, 10058] a block not closed or cut off;
    [10054] a later unclosed block dropped; [10060] a lone end tag; [10020, 10022] JSON that is
    not a call; [10050] a parameter not closed runs to the next </parameter>."""
    for text in ("Hi." + START + END, START + PARIS,
                 block('<invoke name="get_weather">\n<parameter name="city">Paris</parameter>'),
                 "Checking.\n" + START + "\n" + inv("get_time"),
                 "Sure." + START + '\n<invoke name="get_wea',
                 "Write " + END + " literally, then stop.",
                 block('{"name": "get_weather", "arguments": "Paris"}'),
                 block('[{"name": "get_time", "arguments": {}}]')):
        assert parse(text) == (text, [])
    assert parse(PARIS + "\n" + START + "\n" + inv("get_time")) == ("", [PARIS_CALL])
    assert parse(block('<invoke name="get_weather">\n<parameter name="city">Paris\n'
                       '<parameter name="unit">c</parameter>\n</invoke>'))[1] == [
        ("get_weather", {"city": 'Paris\n<parameter name="unit">c'})]


def test_json_blocks() -> None:
    """[10014] an object with arguments written anew; [10016] "parameters"; [10018] null
    arguments: {}; [10024] malformed JSON skipped, a later block read."""
    assert parse(block('{"name": "get_weather", "arguments": {"city": "Paris", "days": 3, '
                       '"x": [1.0, null]}}'))[1] == [
        ("get_weather", {"city": "Paris", "days": 3, "x": [1.0, None]})]
    assert parse(block('{"name": "get_weather", "parameters": {"city": "Oslo"}}'))[1] == [
        ("get_weather", {"city": "Oslo"})]
    assert parse(block('{"name": "get_time", "arguments": null}'))[1] == [("get_time", {})]
    assert parse(block('{"name": "get_weather", ') + "\n" + PARIS) == ("", [PARIS_CALL])


@pytest.mark.parametrize(("params", "want"), [
    ((("count", " 3 "), ("ratio", "0.5"), ("enabled", "True"), ("tags", '["a", "b"]'),
      ("note", "null"), ("label", " 42 "), ("level", "2")),  # [10008]
     {"count": 3, "ratio": 0.5, "enabled": True, "tags": ["a", "b"], "note": None,
      "label": "42", "level": "2"}),
    ((("count", "three"), ("ratio", "2.0"), ("enabled", "yes"), ("tags", "a, b"),
      ("label", "NULL"), ("level", "1_000"), ("extra", "7")),  # [10010]
     {"count": "three", "ratio": 2, "enabled": False, "tags": "a, b", "label": None,
      "level": "1_000", "extra": "7"}),
])
def test_values_typed_by_the_schema(params: tuple[tuple[str, str], ...],
                                    want: dict[str, Any]) -> None:
    assert parse(block(inv("set_config", *params)))[1] == [("set_config", want)]


def test_values_typed_through_refs_and_alternatives() -> None:
    """[10012] ``$ref`` into ``$defs``, ``anyOf`` skipping null, ``oneOf``, ``allOf``, a
    list type; only-null alternatives: a string."""
    assert parse(block(inv("book", ("day", "12"), ("seats", "4"), ("price", "1_000"),
                           ("flags", "[1, 2]"), ("vip", "1"), ("note", "5"))))[1] == [
        ("book", {"day": 12, "seats": 4, "price": 1000, "flags": [1, 2], "vip": True,
                  "note": "5"})]


def test_whitespace_starting_the_content_stays() -> None:
    """[10034] vLLM strips the content at both ends; a stream cannot know a call will follow,
    so the whitespace starting it stays (README compatibility); the whitespace ending it goes."""
    assert parse("  Sure.  \n" + PARIS) == ("  Sure.", [PARIS_CALL])
    assert parse("  Sure.  \n") == ("  Sure.  \n", [])


def test_the_record() -> None:
    tool = registry.TOOLS_BY_NAME["dots"]
    assert tool.format is not None and tool.format.load() is FMT
    assert tool.reads is registry.Reads.WITH_CALLS
    assert "dots" not in registry.REASONING_BY_NAME
    assert parsers.pairing_error("deepseek_r1", "dots") is None
    assert parsers.pairing_error("qwen3", "dots") is None


def test_held_text_is_bounded() -> None:
    """Text after the first block's start is held until a call reads, at most ``MAX_HELD``
    bytes: a longer first block is content; after a call, a longer block is dropped."""
    fill = "😀" * (poolside.MAX_HELD // 4)
    long_block = block(inv("get_weather", ("city", fill)))
    assert parse(long_block) == (long_block, [])
    assert parse(PARIS + long_block + block(inv("get_time")))[1] == [
        PARIS_CALL, ("get_time", {})]
    state, largest = FMT.start(), 0
    for k in range(0, len(long_block), 5):
        _, _, state = FMT.feed(state, long_block[k:k + 5], False, AUTO)
        writer = Writer()
        FMT.encode(state, writer)
        largest = max(largest, len(writer.out))
        assert FMT.decode(Reader(bytes(writer.out))) == state
    assert largest <= poolside.MAX_HELD + 64


TEXT_PIECES = [START, END, "<invoke name=", '"get_weather">', "get_time>", "</invoke>",
               '<parameter name="city">', '<parameter name="count">', "</parameter>", "Paris",
               "3", "\n", " ", "<", "<dots_", '{"name": "get_time"}', "😀" * 300]


@PROPS
@given(parts=st.lists(st.sampled_from(TEXT_PIECES), max_size=40), cuts=st.data())
@example(parts=[" x ", PARIS, " "], cuts=None)
@example(parts=["\n", START, '{"name": "get_time"}', END, "\n"], cuts=None)
def test_any_text_reads_the_same_whole_and_split(parts: list[str],
                                                 cuts: st.DataObject | None) -> None:
    text = "".join(parts)
    whole = feed_all(FMT, [text], AUTO, names_first=True)
    sizes = [cuts.draw(st.integers(1, 7))] if cuts is not None else list(range(1, 8))
    for size in sizes:
        pieces = [text[i:i + size] for i in range(0, len(text), size)] or [""]
        assert feed_all(FMT, pieces, AUTO, names_first=True) == whole
        check_round_trips(FMT, pieces, AUTO)
    for _, arguments in whole[1]:
        json.loads(arguments)


@st.composite
def outputs(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict[str, Any]]], bool]:
    text = draw(st.sampled_from(["", "", "Sure.", " x <b>", "\n"]))
    written: list[tuple[str, dict[str, Any]]] = []
    for _ in range(draw(st.integers(0, 2))):
        invokes = []
        for _ in range(draw(st.integers(1, 2))):
            name = draw(st.sampled_from(["get_weather", "get_time"]))
            params = {} if name == "get_time" else draw(st.dictionaries(
                st.sampled_from(["city", "unit"]),
                st.sampled_from(["Paris", "Zürich", "a\nb", "x", " < ", "🌦"]), max_size=2))
            invokes.append(inv(name, *params.items()))
            written.append((name, {k: v.strip() for k, v in params.items()}))
        text += draw(st.sampled_from(["", "\n"])) + block(*invokes)
    change = draw(st.sampled_from(["", "", "cut", "trail", "dirty"]))
    if change == "cut":
        text = text[:draw(st.integers(0, len(text)))]
    elif change == "trail":
        text += "Anything else?"
    elif change == "dirty":
        text += draw(st.sampled_from([START + "x", END, START + END]))
    return text, written, change in ("", "trail", "dirty")


@PROPS
@given(data=st.data())
def test_dots_stream_folds_to_message(client_for: Any, data: st.DataObject) -> None:
    client = client_for(MODEL, None, "dots")
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS, 3),
                        label="chat_request")
    text, written, clean = data.draw(outputs(), label="output")
    expected = run_text(client, MODEL, text, request, data)
    if clean:
        check_written(expected, [[n, p] for n, p in written], request)
