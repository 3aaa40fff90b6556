"""The qwen3_coder tool-call format (parsers/qwen3_coder.py): its rules, checked on the
machine, and split invariance through the HTTP app on the Qwen3 tokenizer.

The rules are vLLM 0.33's (Qwen3EngineToolParser); the recorded cases 280-310 replay them
against the real server and scripts/tool_cases/qwen3_coder.py names them. Values are
typed by the request's schema as vLLM's ``coerce_to_schema_type`` types them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from derender.core.parsers import schema
from derender.core.parsers.formats import qwen3_coder
from derender.core.parsers.formats.qwen3_coder import MAX_NAME, MAX_VALUE
from derender.core.parsers.schema import coerce
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.tool_streams import check_written, feed_all, ids_of, requests, run_both
from tests.test_parser_properties import END_TOOL, IM_END, PROMPTS, PROPS, QWEN, THINK, TOOL, enc

FORMAT = qwen3_coder.FORMAT
CONFIG = {"type": "function", "function": {"name": "set_config", "parameters": {
    "type": "object", "properties": {
        "count": {"type": "integer"}, "ratio": {"type": "number"}, "enabled": {"type": "boolean"},
        "tags": {"type": "array"}, "meta": {"type": "object"},
        "note": {"type": ["string", "null"]}, "label": {"type": "string"},
        "level": {"enum": [1, 2, 3]}, "size": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "flag": {"type": "bool"}, "odd": {"type": "widget"}}}}}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}
TOOLS = [WEATHER, CONFIG]
AUTO = ToolContext(tools=TOOLS)


def parse(text: str, context: ToolContext = AUTO, pieces: list[str] | None = None
          ) -> tuple[str, list[tuple[str, Any]]]:
    """Content and calls (arguments parsed) of ``text`` fed whole, or in ``pieces``."""
    content, calls = feed_all(FORMAT, pieces if pieces is not None else [text], context)
    return content, [(name, json.loads(args)) for name, args in calls]


def call(name: str, *params: tuple[str, str]) -> str:
    body = "".join(f"<parameter={p}>\n{v}\n</parameter>\n" for p, v in params)
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


def typed(param: str, raw: str) -> Any:
    _, calls = parse(call("set_config", (param, raw)))
    return calls[0][1][param]


# --------------------------------------------------------------------------- values and types


@pytest.mark.parametrize(("param", "raw", "value"), [
    ("count", "3", 3), ("count", " 1_000 ", 1000), ("count", "three", "three"),
    ("count", "2.0", 2.0),  # not an integer: read as JSON, vLLM's last resort
    ("ratio", "0.5", 0.5), ("ratio", "5.0", 5), ("ratio", "1e999", "1e999"), ("ratio", "-0", 0),
    ("enabled", "true", True), ("enabled", "False", False), ("enabled", "1", True),
    ("enabled", "yes", "yes"), ("flag", "0", False),  # "bool" is an alias of boolean
    ("tags", '["a", 1]', ["a", 1]), ("tags", "['a']", "['a']"), ("tags", "[1e999]", "[1e999]"),
    ("meta", '{"k": {"n": null}}', {"k": {"n": None}}), ("meta", "{'k': 1}", "{'k': 1}"),
    ("note", "null", None), ("note", "NULL", None), ("note", "None", "None"),
    ("label", "42", "42"), ("label", "null", "null"),
    ("level", "2", 2), ("size", "7", 7), ("size", "2.5", "2.5"),
    ("odd", "12", 12), ("odd", "x", "x"),  # no type vLLM knows: JSON if it reads as JSON
    ("other", "12", "12"),  # not in the schema: a string
])
def test_values_are_typed_by_the_schema(param: str, raw: str, value: Any) -> None:
    got = typed(param, raw)
    assert got == value and type(got) is type(value)


def test_the_coercion_is_vllms() -> None:
    assert coerce("12345678901234567890", 1 << 2) == 12345678901234567890
    assert coerce("1e20", 1 << 2) == 10**20
    assert coerce("NaN", 1 << 2) == "NaN"
    assert coerce("x", 0) == "x"


def test_one_newline_is_trimmed_at_either_end_of_a_value() -> None:
    text = ("<function=get_weather><parameter=city>\n\nZürich\n\n</parameter>"
            "<parameter=days>\n\n</parameter></function>")
    assert parse(text) == ("", [("get_weather", {"city": "\nZürich\n", "days": ""})])
    assert parse("<function=get_weather><parameter=city>\n</parameter></function>")[1] == [
        ("get_weather", {"city": ""})]


def test_without_a_schema_every_value_is_a_string() -> None:
    text = call("get_weather", ("days", "3")) + call("lookup", ("n", "3"))
    assert parse(text, ToolContext())[1] == [("get_weather", {"days": "3"}),
                                             ("lookup", {"n": "3"})]
    assert parse(text)[1] == [("get_weather", {"days": 3}), ("lookup", {"n": "3"})]


def test_a_long_typed_value_becomes_a_string() -> None:
    raw = "[" + "1, " * MAX_VALUE + "1]"
    assert typed("tags", raw) == raw


def test_the_type_is_looked_up_once_per_parameter(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, str]] = []
    lookup = schema.param_types

    def counting(tools: Any, function: str, param: str) -> int:
        seen.append((function, param))
        return lookup(tools, function, param)

    monkeypatch.setattr(schema, "param_types", counting)
    text = call("set_config", ("count", "12345"), ("label", "a b c d e f"))
    assert parse(text, pieces=list(text))[1] == [("set_config", {"count": 12345,
                                                                 "label": "a b c d e f"})]
    assert seen == [("set_config", "count"), ("set_config", "label")]


# --------------------------------------------------------------------------- calls and text


def test_calls_with_and_without_the_tool_call_tag() -> None:
    text = (call("get_weather", ("city", "Paris")) + "\n"
            + "<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>")
    assert parse(text) == ("", [("get_weather", {"city": "Paris"}),
                                ("get_weather", {"city": "Rome"})])


def test_content_before_the_first_call_is_kept_stripped_after_it_dropped() -> None:
    text = "Let me check.\n\n" + call("get_weather", ("city", "Paris")) + "\nDone."
    assert parse(text) == ("Let me check.", [("get_weather", {"city": "Paris"})])
    assert parse("  No tools needed.\n") == ("  No tools needed.\n", [])


def test_under_tool_choice_none_the_markup_is_dropped_and_text_kept() -> None:
    text = "A " + call("get_weather", ("city", "Paris")) + " B\n"
    content, _ = parse(text, ToolContext(tools=TOOLS, keep=False))
    assert content == "A  B\n"


def test_a_call_without_a_name_is_not_returned() -> None:
    assert parse("<tool_call>\n</tool_call>Hi") == ("Hi", [])
    assert parse("<tool_call>{\"name\": \"f\"}</tool_call> ok") == (" ok", [])
    assert parse("<function= ><parameter=a>1</parameter></function>") == ("", [])


def test_a_name_ends_at_its_angle_bracket_or_the_call() -> None:
    assert parse("Use <function=f> here") == ("Use", [("f", {})])
    assert parse("<tool_call><function=get_weather</tool_call>rest") == (
        "", [("get_weather", {})])
    long_name = "<function=" + "n" * (MAX_NAME + 1) + "><parameter=a>1</parameter></function>"
    assert parse(long_name) == ("", [])


def test_parameter_tags_with_spaces_and_a_value_ended_by_the_next_parameter() -> None:
    text = ("<function=get_weather>< parameter = city >Paris</ parameter >"
            "<parameter=days>\n2\n<parameter=city>Rome</parameter></function>")
    # a repeated parameter keeps its first place and its last value (a Python dict)
    assert parse(text)[1] == [("get_weather", {"city ": "Paris", "days": 2, "city": "Rome"})]


def test_a_cut_off_parameter_keeps_what_was_read() -> None:
    """Deliberate difference (README): vLLM drops a parameter without its </parameter>."""
    text = "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar"
    assert parse(text) == ("", [("get_weather", {"city": "Par"})])
    text = "<function=get_weather><parameter=days>\n4\n</function>"
    assert parse(text) == ("", [("get_weather", {"days": 4})])


def test_markup_inside_values_is_text() -> None:
    text = call("set_config", ("label", "<b>x</b> > y <tool_call> </parameter"))
    assert parse(text)[1] == [("set_config", {"label": "<b>x</b> > y <tool_call> </parameter"})]


def test_states_round_trip_and_stay_small() -> None:
    text = call("set_config", ("meta", '{"k": "' + "v" * 500 + '"}'), ("label", "x" * 5000))
    state = FORMAT.start()
    for k in range(0, len(text), 7):
        _, _, state = FORMAT.feed(state, text[k:k + 7], False, AUTO)
        writer = Writer()
        FORMAT.encode(state, writer)
        assert len(writer.out) < MAX_VALUE + 2 * MAX_NAME + 64
        assert FORMAT.decode(Reader(bytes(writer.out))) == state


# --------------------------------------------------------------------------- split invariance

VALUES = ["3", " 7 ", "0.5", "true", "False", "null", "[1, 2]", '{"k": "v"}', "Zürich 東京",
          "multi\nline", "", "<b>x</b> > 2", "'q' \"qq\"", "\\", "🌦 👍🏽", "1e999", "None"]
PARAMS = ["count", "ratio", "enabled", "tags", "meta", "note", "label", "level", "city",
          "days", "extra"]


@st.composite
def outputs(draw: st.DrawFn) -> tuple[list[int | str], list[tuple[str, dict[str, str]]], bool]:
    """(parts, calls written with their raw values, clean)."""
    parts: list[int | str] = []
    lead = draw(st.sampled_from(["", "", "Sure.\n\n", "x > 1 <b>\n", "\n"]))
    if lead:
        parts.append(lead)
    written: list[tuple[str, dict[str, str]]] = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["get_weather", "set_config", "other_tool"]))
        params = draw(st.lists(st.tuples(st.sampled_from(PARAMS), st.sampled_from(VALUES)),
                               max_size=3, unique_by=lambda p: p[0]))
        body = "".join(f"<parameter={p}>" + draw(st.sampled_from(["\n{}\n", "{}", "\n{}"]))
                       .format(v) + "</parameter>" + draw(st.sampled_from(["\n", ""]))
                       for p, v in params)
        tagged = draw(st.integers(0, 4)) > 0
        parts += [TOOL, "\n"] if tagged else []
        parts.append(f"<function={name}>\n{body}</function>")
        parts += ["\n", END_TOOL, "\n"] if tagged else ["\n"]
        written.append((name, dict(params)))
    change = draw(st.sampled_from(["", "", "", "cut", "trail", "dirty"]))
    clean = change in ("", "trail")
    if change == "cut" and parts and isinstance(parts[-1], str):
        parts[-1] = parts[-1][:draw(st.integers(0, len(parts[-1])))]
    elif change == "trail":
        parts.append("Anything else?")
    elif change == "dirty":
        parts.append(draw(st.sampled_from(["<function=", "<parameter=x>1", "</function>",
                                           "<tool_call>", "< parameter", "</"])))
    return parts, written, clean


def expected_calls(written: list[tuple[str, dict[str, str]]]) -> list[list[Any]]:
    """The calls as vLLM types them (the machine fed the raw text, with the schema)."""
    out = []
    for name, params in written:
        text = "<function=" + name + ">" + "".join(
            f"<parameter={p}>{v}</parameter>" for p, v in params.items()) + "</function>"
        out.append(list(parse(text)[1][0]))
    return out


@pytest.fixture(scope="module")
def coder(client_for: Any) -> Any:
    return client_for(QWEN, None, "qwen3_coder")


@pytest.fixture(scope="module")
def coder_thinking(client_for: Any) -> Any:
    return client_for(QWEN, "qwen3", "qwen3_coder")


def chat_requests() -> st.SearchStrategy[dict[str, Any]]:
    return requests([{"role": "user", "content": "Weather?"}], TOOLS)


def check_splits(client: Any, parts: list[int | str], request: dict[str, Any], finish: str,
                 data: st.DataObject) -> dict[str, Any]:
    ids = ids_of(parts, enc)
    if finish == "stop" or not ids:
        ids.append(IM_END)
        finish = "stop"
    return run_both(client, QWEN, ids, finish, PROMPTS["open"][0], request, data)


@PROPS
@given(data=st.data())
def test_qwen3_coder_stream_folds_to_message(coder: Any, data: st.DataObject) -> None:
    request = data.draw(chat_requests(), label="chat_request")
    parts, written, clean = data.draw(outputs(), label="output")
    finish = data.draw(st.sampled_from(["stop", "stop", "length"]), label="finish")
    expected = check_splits(coder, parts, request, finish, data)
    if clean:
        check_written(expected, expected_calls(written), request)


@PROPS
@given(data=st.data())
def test_qwen3_coder_with_reasoning_stream_folds_to_message(coder_thinking: Any,
                                                            data: st.DataObject) -> None:
    request = data.draw(chat_requests(), label="chat_request")
    parts, _, _ = data.draw(outputs(), label="output")
    thought = data.draw(st.sampled_from([[], ["Hmm, weather.\n"], [THINK, "a < b\n"]]))
    end = data.draw(st.sampled_from([[], ["</think>\n\n"]]))
    finish = data.draw(st.sampled_from(["stop", "length"]), label="finish")
    check_splits(coder_thinking, [*thought, *end, *parts], request, finish, data)
