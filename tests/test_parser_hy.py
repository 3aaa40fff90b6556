"""Tencent Hy3 on the parser engine (parsers/formats/hy.py, parsers/engine.py): ``hy_v3``'s
calls read with GLM's argument grammar, its reasoning parser ``deepseek_r1``'s rules switched
by ``reasoning_effort``.

The rules are vLLM 0.33's (``vllm/tool_parsers/hy_v3_tool_parser.py``,
``vllm/reasoning/hy_v3_reasoning_parser.py``, docs/vllm-compat/hy.md); the recorded cases
4280-4353 replay them against the real server (test_conformance) and each rule test below
names the cases it restates. Split invariance through the HTTP app on ``hy3-standin`` (every
marker a single token there), including the call without arguments under
``parallel_tool_calls`` false that an earlier attempt streamed differently from its message.
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
from derender.core.parsers.engine import MAX_NAME, MAX_SPACE, MAX_VALUE
from derender.core.parsers.formats import hy
from derender.core.parsers.tools import ToolContext
from derender_testing.chat_streams import (
    Chunking,
    check_equal,
    fold,
    non_streaming,
    streaming,
)
from derender_testing.models import tokenizer, vocabulary
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
MODEL = "hy3-standin"


def parse(text: str, context: ToolContext = AUTO, pieces: list[str] | None = None
          ) -> tuple[str, list[tuple[str, Any]]]:
    _, content, calls = feed_engine(hy.HY3, pieces or [text], context)
    return content, [(name, json.loads(args)) for name, args in calls]


def call(name: str, *params: tuple[str, str], nl: str = "\n") -> str:
    body = "".join(f"{nl}<arg_key>{k}</arg_key>{nl}<arg_value>{v}</arg_value>" for k, v in params)
    return f"<tool_call>{name}<tool_sep>{body}{nl}</tool_call>"


def block(*calls: str) -> str:
    return "<tool_calls>\n" + "\n".join(calls) + "\n</tool_calls>"


PARIS = call("get_weather", ("city", "Paris"), ("unit", "c"))
NO_ARGS = "<tool_calls><tool_call>get_weather<tool_sep></tool_call></tool_calls>"


def test_calls_need_the_wrapper_and_the_separator() -> None:
    """[4280, 4284] calls; [4310] no <tool_calls>: content; [4312] no <tool_sep>: no call;
    [4316] cut off in the name: no call; [4290] no arguments: {}."""
    assert parse(block(PARIS)) == ("", [("get_weather", {"city": "Paris", "unit": "c"})])
    assert parse(PARIS) == (PARIS, [])
    assert parse("<tool_calls><tool_call>get_weather</tool_call></tool_calls>") == ("", [])
    assert parse("Sure.<tool_calls>\n<tool_call>get_wea") == ("Sure.", [])
    assert parse(NO_ARGS) == ("", [("get_weather", {})])


def test_content_names_and_keys() -> None:
    """[4296] content before as written; [4298] text after dropped; [4300] whitespace alone:
    none; [4302] unknown names kept; [4304] names stripped, keys and values as written."""
    assert parse("Let me check.\n" + block(PARIS))[0] == "Let me check.\n"
    assert parse(block(PARIS) + "\nLater.")[0] == ""
    assert parse("\n\n" + block(PARIS))[0] == ""
    assert parse(block(call("get_stock", ("symbol", "ACME"))))[1] == [
        ("get_stock", {"symbol": "ACME"})]
    assert parse("<tool_calls><tool_call> get_weather <tool_sep><arg_key> city </arg_key> "
                 "<arg_value> Paris </arg_value></tool_call></tool_calls>")[1] == [
        ("get_weather", {" city ": " Paris "})]


@pytest.mark.parametrize(("key", "raw", "value"), [
    # [4286]
    ("count", "3", 3), ("ratio", "0.5", 0.5), ("enabled", "True", True),
    ("tags", '["a", "b"]', ["a", "b"]), ("meta", '{"k": 1}', {"k": 1}), ("note", "null", "null"),
    ("label", "42", "42"), ("level", "2", "2"),
    # [4288]
    ("count", "three", "three"), ("ratio", "1e3", 1000.0), ("enabled", "yes", "yes"),
    ("tags", "a, b", "a, b"), ("meta", "{'k': 1}", {"k": 1}), ("note", "None", "None"),
    ("level", "2.0", "2.0"), ("extra", "7", "7"),
])
def test_values_are_typed_as_vllm_types_them(key: str, raw: str, value: Any) -> None:
    got = parse(block(call("set_config", (key, raw))))[1]
    assert got == [("set_config", {key: value})]
    assert type(got[0][1][key]) is type(value)


@pytest.mark.parametrize(("schema", "raw", "value"), [
    ({"type": "int64"}, "7", 7), ({"type": "float"}, "7", 7), ({"type": "double"}, "7.5", 7.5),
    ({"type": "dict"}, '{"a": 1}', {"a": 1}), ({"anyOf": [{"type": "integer"},
                                                          {"type": "string"}]}, "x", "x"),
    ({"type": ["boolean", "null"]}, "FALSE", False), ({"type": "null"}, "(1, 2)", [1, 2]),
    ({"type": "null"}, "{1, 2}", "{1, 2}"), ({}, "3", "3"), (None, "3", "3"),
])
def test_the_typing_rules(schema: Any, raw: str, value: Any) -> None:
    """``HYV3ToolParser._parse_value``'s aliases and fallbacks, as vLLM 0.33's own function
    answers them in the peer's environment (a set, which vLLM cannot write as JSON, stays its
    text: see the README's compatibility table)."""
    assert json.dumps(hy.hy3_value(raw, schema)) == json.dumps(value)


@pytest.mark.parametrize(("kwargs", "effort", "on"), [
    ({}, None, False), ({"reasoning_effort": "no_think"}, None, False),  # [4338, 4340]
    ({"reasoning_effort": "high"}, None, True), ({}, "low", True),  # [4342, 4350]
    ({"reasoning_effort": "no_think"}, "high", False), ({}, "none", True),
])
def test_the_reasoning_switch(kwargs: dict[str, Any], effort: str | None, on: bool) -> None:
    request = ChatRequest(messages=[{"role": "user", "content": "hi"}],
                          chat_template_kwargs=kwargs, reasoning_effort=effort)
    assert hy.thinking(parsers.template_kwargs(request)) is on


def test_the_records() -> None:
    tool, reasoning = registry.TOOLS_BY_NAME["hy_v3"], registry.REASONING_BY_NAME["hy_v3"]
    assert tool.config is not None and tool.config.load() is hy.HY3_CONFIG
    assert tool.reads is registry.Reads.WITH_CALLS
    assert reasoning.switch is not None and reasoning.switch.load() is hy.thinking
    assert parsers.engine_mode("hy_v3", "hy_v3") == "foreign"


def test_states_round_trip_and_stay_bounded_over_a_long_stream() -> None:
    text = ("Content, " * 1500 + "<tool_calls>" + call("set_config", ("label", "a b " * 2000))
            + call("get_weather", ("city", "Paris")) + "</tool_calls>")
    _, content, calls, largest = feed_long_stream(hy.HY3, MODEL, text, AUTO, thinking=False)
    assert content == "Content, " * 1500
    assert [name for name, _ in calls] == ["set_config", "get_weather"]
    assert largest < MAX_VALUE + 2 * MAX_NAME + 2 * MAX_SPACE


TEXT_PIECES = ["<tool_calls>", "</tool_calls>", "<tool_call>", "</tool_call>", "<tool_sep>",
               "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", "get_weather",
               "city", "count", "Paris", "3", "\n", " ", "<", "<tool_", "x", "(1, 2)"]


@PROPS
@given(context=st.sampled_from([AUTO, ToolContext(tools=TOOLS, forced_name="get_weather")]),
       parts=st.lists(st.sampled_from(TEXT_PIECES), max_size=40), cuts=st.data())
@example(context=AUTO, parts=[NO_ARGS], cuts=None)
def test_any_text_reads_the_same_whole_and_split(context: ToolContext, parts: list[str],
                                                 cuts: st.DataObject | None) -> None:
    text = "".join(parts)
    whole = feed_engine(hy.HY3, [text], context)
    sizes = [cuts.draw(st.integers(1, 7))] if cuts is not None else list(range(1, 8))
    for size in sizes:
        pieces = [text[i:i + size] for i in range(0, len(text), size)] or [""]
        assert feed_engine(hy.HY3, pieces, context) == whole
        check_round_trips(hy.HY3, pieces, context)
    if context is AUTO:  # a named choice's arguments are the output as written [4328]
        for _, arguments in whole[2]:
            json.loads(arguments)


# --------------------------------------------------------------------------- split invariance


@st.composite
def outputs(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict[str, Any]]], bool]:
    text = draw(st.sampled_from(["", "<think>", "Hmm.</think>", "<think>Hmm.</think>\n"]))
    text += draw(st.sampled_from(["", "", "Sure.\n", " x <b>\n", "\n"]))
    written: list[tuple[str, dict[str, Any]]] = []
    calls = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["get_weather", "get_time", "get_stock"]))
        params = {} if name == "get_time" else draw(st.dictionaries(
            st.sampled_from(["city", "unit"]),
            st.sampled_from(["Paris", "Zürich", "a\nb", "", " < ", "🌦"]), max_size=2))
        nl = draw(st.sampled_from(["", "\n"]))
        calls.append(call(name, *params.items(), nl=nl))
        written.append((name, params))
    if calls:
        text += "<tool_calls>" + "".join(calls) + draw(st.sampled_from(["</tool_calls>", ""]))
    text, clean = spoil(draw, text, ["<tool_calls>", "<tool_call>x<tool_sep><arg_key>a",
                                     "</arg_value>", "<", "</think>", "<tool_sep>"])
    return text, written, clean


@pytest.mark.parametrize(("reasoning_parser", "tool_parser"), [
    ("hy_v3", "hy_v3"), (None, "hy_v3"), ("hy_v3", None)])
@PROPS
@given(data=st.data())
def test_hy3_stream_folds_to_message(client_for: Any, reasoning_parser: str | None,
                                     tool_parser: str | None, data: st.DataObject) -> None:
    client = client_for(MODEL, reasoning_parser, tool_parser)
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS, 3),
                        label="chat_request")
    if tool_parser is None:
        request.pop("tools", None)
        request.pop("tool_choice", None)
    thinks = data.draw(st.integers(0, 2)) == 0 and reasoning_parser is not None
    if thinks:  # then the output starts in reasoning, calls and all until </think>
        request["chat_template_kwargs"] = {"reasoning_effort": "high"}
    # the call without arguments under parallel_tool_calls false, streamed in every chunking
    # hypothesis draws (an earlier attempt's stream differed from its message here)
    if data.draw(st.integers(0, 3)) == 0:
        text, written, clean = NO_ARGS, [("get_weather", {})], True
        request["parallel_tool_calls"] = False
    else:
        text, written, clean = data.draw(outputs(), label="output")
    expected = run_text(client, MODEL, text, request, data)
    if clean and not thinks and "think>" not in text and tool_parser is not None:
        check_written(expected, [[n, p] for n, p in written], request)


@pytest.mark.parametrize("finish_alone", [False, True])
def test_a_call_without_arguments_under_serial_calls_streams_as_its_message(
        client_for: Any, finish_alone: bool) -> None:
    """``<tool_calls><tool_call>get_weather<tool_sep></tool_call></tool_calls>`` with
    ``parallel_tool_calls`` false [4292, 4293]: every split of its ids into chunks (all of
    them) folds to the message, one call ``get_weather`` with ``{}``."""
    client = client_for(MODEL, "hy_v3", "hy_v3")
    eos = vocabulary(MODEL).eos_id
    assert eos is not None
    ids = [*tokenizer(MODEL).encode(NO_ARGS, add_special_tokens=False).ids, eos]
    request = {"messages": [{"role": "user", "content": "Weather?"}], "tools": TOOLS,
               "parallel_tool_calls": False}
    prompt = tokenizer(MODEL).encode("Weather?", add_special_tokens=False).ids
    expected = non_streaming(client, MODEL, ids, "stop", prompt, request, "serial")
    assert [(c["function"]["name"], c["function"]["arguments"])
            for c in expected["message"]["tool_calls"]] == [("get_weather", "{}")]
    n = len(ids)
    for mask in range(1 << (n - 1)):
        bounds = [0, *(i for i in range(1, n) if mask >> (i - 1) & 1), n]
        spans = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
        chunking = Chunking(spans, finish_alone, [1] * (len(spans) + finish_alone))
        got = streaming(client, MODEL, ids, "stop", prompt, request, "serial", chunking)
        check_equal(fold(got, request), expected, ids, request, "stop")
