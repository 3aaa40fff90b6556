"""GLM-4.5 / GLM-4.7 on the parser engine (parsers/glm.py, parsers/engine.py): ``glm45`` =
``glm47`` (and ``ling3``, Ling 3's copy of it: cases 4200-4273), reasoning and tool calls in
one machine.

The rules are vLLM 0.33's (``vllm/parser/glm47_moe.py``, docs/vllm-compat/glm.md); the
recorded cases 615-726 replay them against the real server (test_conformance) and each rule
test below names the cases it restates. Split invariance through the HTTP app on GLM-4.5V's
and GLM-4.7-Flash's vocabularies (every tag a single token there).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.contract.requests import ChatRequest
from derender.core import parsers
from derender.core.parsers import engine, registry
from derender.core.parsers.engine import MAX_NAME, MAX_SPACE, MAX_VALUE
from derender.core.parsers.formats import glm
from derender.core.parsers.registry import MARKUP
from derender.core.parsers.tools import ToolContext
from derender_testing.models import model_folder, vocabulary
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
NONE = ToolContext(tools=TOOLS, keep=False)
NO_TOOLS = ToolContext(keep=False)
THOUGHT = "The user wants Paris weather; call the tool."


def parse(text: str, context: ToolContext = AUTO, thinking: bool = True,
          pieces: list[str] | None = None) -> tuple[str, str, list[tuple[str, Any]]]:
    reasoning, content, calls = feed_engine(glm.GLM47, pieces or [text], context, thinking)
    return reasoning, content, [(name, json.loads(args)) for name, args in calls]


def call(name: str, *params: tuple[str, str], sep: str = "") -> str:
    body = "".join(f"<arg_key>{k}</arg_key>{sep}<arg_value>{v}</arg_value>{sep}"
                   for k, v in params)
    return f"<tool_call>{name}{sep}{body}</tool_call>"


PARIS = call("get_weather", ("city", "Paris"), ("unit", "c"))
THEN = THOUGHT + "</think>"


# --------------------------------------------------------------------------- calls


def test_single_and_parallel_calls_with_and_without_newlines() -> None:
    """[615, 617, 671, 673]: GLM-4.5 writes newlines after the name and between the tags."""
    for sep in ("", "\n"):
        text = "<think>" + THEN + sep + call("get_weather", ("city", "Paris"), ("unit", "c"),
                                             sep=sep)
        assert parse(text) == (THOUGHT, "", [("get_weather", {"city": "Paris", "unit": "c"})])
        two = THEN + call("get_weather", ("city", "Zürich"), sep=sep) + sep + call(
            "get_weather", ("city", '東京 "Tokyo"\nline two'), ("unit", "f"), sep=sep)
        assert parse(two)[2] == [("get_weather", {"city": "Zürich"}), (
            "get_weather", {"city": '東京 "Tokyo"\nline two', "unit": "f"})]


@pytest.mark.parametrize(("key", "raw", "value"), [
    ("count", "3", 3), ("ratio", "0.5", 0.5), ("enabled", "true", True),  # [619, 675]
    ("tags", '["a", "b"]', ["a", "b"]), ("meta", '{"k": 1, "nested": {"ok": true}}',
                                         {"k": 1, "nested": {"ok": True}}),
    ("note", "null", None), ("label", "42", "42"), ("level", "2", 2),
    ("count", "three", "three"), ("ratio", "1e999", "1e999"),  # [621, 677]
    ("enabled", "yes", "yes"), ("tags", "a, b", "a, b"), ("meta", "{'k': 1}", "{'k': 1}"),
    ("note", "None", "None"), ("level", "2.0", 2.0), ("extra", "7", "7"),
])
def test_values_are_typed_by_the_schema(key: str, raw: str, value: Any) -> None:
    got = parse(THEN + call("set_config", (key, raw)))[2][0][1][key]
    assert got == value and type(got) is type(value)


def test_names_keys_and_values() -> None:
    """[623, 679] no arguments: ``{}``; [631, 687] the name and keys stripped, values
    verbatim; [637, 693] a key without a value: ``{}``; [633, 689] a value without its close
    runs to the next ``</arg_value>``; [635, 691] a missing ``</tool_call>`` is closed by the
    end; [643, 699] a value cut off by the end is dropped."""
    assert parse(THEN + "<tool_call>get_time\n</tool_call>")[2] == [("get_time", {})]
    spaced = THEN + "<tool_call> get_weather \n<arg_key> city </arg_key>\n<arg_value> Paris " \
                    "</arg_value>\n</tool_call>"
    assert parse(spaced)[2] == [("get_weather", {"city": " Paris "})]
    assert parse(THEN + "<tool_call>get_weather<arg_key>city</arg_key></tool_call>")[2] == [
        ("get_weather", {})]
    no_close = THEN + ("<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris"
                       "<arg_key>unit</arg_key><arg_value>c</arg_value></tool_call>")
    assert parse(no_close)[2] == [
        ("get_weather", {"city": "Paris<arg_key>unit</arg_key><arg_value>c"})]
    assert parse(THEN + PARIS[:-len("</tool_call>")])[2] == [
        ("get_weather", {"city": "Paris", "unit": "c"})]
    cut = THEN + "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Par"
    for pieces in ([cut], list(cut)):
        assert parse(cut, pieces=pieces) == (THOUGHT, "", [("get_weather", {})])


def test_a_key_runs_on_until_a_value_follows_it() -> None:
    """vLLM's ``_ARG_RE``: a key is the shortest text up to a ``</arg_key>`` followed by
    whitespace and ``<arg_value>``."""
    text = THEN + ("<tool_call>get_weather<arg_key>a</arg_key>x<arg_key>b</arg_key> "
                   "<arg_value>v</arg_value></tool_call>")
    assert parse(text)[2] == [("get_weather", {"a</arg_key>x<arg_key>b": "v"})]


def test_unknown_tools_are_dropped() -> None:
    """[629, 685]: no call, no content (the whitespace before it goes too)."""
    text = THEN + "\n" + call("get_stock", ("symbol", "ACME"))
    assert parse(text) == (THOUGHT, "", [])


def test_content_around_the_calls() -> None:
    """[625, 681] content before a returned call loses its trailing whitespace (and keeps
    its leading whitespace: README); [627, 683] text after a returned call is dropped;
    [639, 641, 695, 697] tag text in content stays content."""
    before = THEN + "Let me check the weather for you.\n" + PARIS
    assert parse(before)[1] == "Let me check the weather for you."
    assert parse(THEN + "\nLet me check.\n" + PARIS)[1] == "\nLet me check."
    assert parse(THEN + PARIS + "\nI will report back shortly.")[1] == ""
    for text in ("\nWrite <arg_key> and </arg_value> literally, then stop.",
                 "\nThe answer is near. <tool_"):
        for pieces in ([THEN + text], [THEN, *text]):
            assert parse(THEN + text, pieces=pieces)[1] == text


def test_tool_choice_none_and_no_tools() -> None:
    """[645, 701]: the calls and their markup are gone, the text around stays as written;
    [651, 707]: without tools the calls are read and dropped, with the whitespace before."""
    text = "<think>" + THEN + "\n" + PARIS.replace("<tool_call>", "<tool_call>\n") + " ok\n"
    assert parse(text, NONE) == (THOUGHT, "\n ok\n", [])
    assert parse("<think>" + THEN + "\n" + PARIS, NO_TOOLS) == (THOUGHT, "", [])


# --------------------------------------------------------------------------- reasoning


def test_reasoning() -> None:
    """[653, 709] ``</think>`` ends reasoning; [655, 711] no end: all reasoning (a leading
    ``<think>`` absorbed); [657, 713] ``<tool_call>`` ends it; [659, 715] no think tags: all
    reasoning; [669, 725] a later ``<think>…</think>`` adds to the reasoning."""
    assert parse("<think>" + THEN + "\nIt is sunny.") == (THOUGHT, "\nIt is sunny.", [])
    assert parse("<think>" + THOUGHT) == (THOUGHT, "", [])
    assert parse(THOUGHT + "\n" + PARIS) == (
        THOUGHT, "", [("get_weather", {"city": "Paris", "unit": "c"})])
    assert parse("It is sunny.") == ("It is sunny.", "", [])
    assert parse(THEN + "\n<think>again</think>It is sunny.") == (
        THOUGHT + "again", "\nIt is sunny.", [])


def test_thinking_off() -> None:
    """[661, 717] all content; [663, 719] calls read; [665, 721] think tags are text."""
    assert parse("It is sunny.", thinking=False) == ("", "It is sunny.", [])
    assert parse(PARIS, thinking=False)[2] == [("get_weather", {"city": "Paris", "unit": "c"})]
    text = "<think>" + THEN + "It is sunny."
    assert parse(text, thinking=False) == ("", text, [])


@pytest.mark.parametrize(("kwargs", "on"), [
    ({}, True), ({"enable_thinking": False}, False),  # [661]
    ({"enable_thinking": True}, True),  # [667, 723]
    ({"thinking": False}, False), ({"thinking": True, "enable_thinking": False}, True),
])
def test_thinking_switch(kwargs: dict[str, Any], on: bool) -> None:
    request = ChatRequest(messages=[{"role": "user", "content": "hi"}],
                          chat_template_kwargs=kwargs)
    assert glm.thinking(parsers.template_kwargs(request)) is on


def test_ling3_is_glm47_under_its_own_name() -> None:
    """ling3 (vLLM's ``Ling3Parser``): GLM-4.7's config under its own record and state tag,
    its reasoning parser read by its own machine; the same reading [4200-4273: 4200 single,
    4202 parallel, 4248 calls with thinking off, 4250 think tags text with thinking off, 4270
    ``thinking`` false]."""
    tool, reasoning = registry.TOOLS_BY_NAME["ling3"], registry.REASONING_BY_NAME["ling3"]
    assert tool.config is not None and tool.config.load() is glm.LING3_CONFIG
    assert tool.tag not in (registry.TOOLS_BY_NAME["glm47"].tag, None)
    assert reasoning.family == tool.family == "ling3"
    assert reasoning.switch is not None and reasoning.switch.load() is glm.thinking
    assert glm.LING3_CONFIG.transitions == glm.GLM47_CONFIG.transitions
    for thinking in (True, False):
        for text in (THEN + PARIS, PARIS, "<think>" + THEN + "It is sunny."):
            assert feed_engine(glm.LING3, [text], AUTO, thinking) == feed_engine(
                glm.GLM47, [text], AUTO, thinking)


def test_one_parser_alone() -> None:
    """The tool parser alone reads no reasoning: the think tags are text [1300, 1302, 1304, 1306,
    1308]; the reasoning parser alone reads no calls: the tool markup is content text after the
    reasoning, unstripped [1310, 1312, 1314, 1316]."""
    def alone(text: str, mode: str, context: ToolContext = AUTO, thinking: bool = True
              ) -> tuple[str, str, list[tuple[str, Any]]]:
        state = engine.start(glm.GLM47, glm.GLM47_CONFIG, thinking, mode)
        reasoning, content, deltas, _ = engine.feed(glm.GLM47_CONFIG, state, text, True, context)
        calls: dict[int, list[str]] = {}
        for delta in deltas:
            entry = calls.setdefault(delta.index, ["", ""])
            entry[0] += delta.name or ""
            entry[1] += delta.arguments
        return reasoning, content, [(n, json.loads(a)) for n, a in calls.values()]

    called = [("get_weather", {"city": "Paris", "unit": "c"})]
    assert alone(THEN + PARIS, engine.TOOLS) == ("", THEN, called)
    assert alone(THEN + "Let me check the weather for you.\n" + PARIS, engine.TOOLS) == (
        "", THEN + "Let me check the weather for you.", called)
    assert alone(THEN + PARIS, engine.TOOLS, NO_TOOLS) == ("", THEN, [])
    before = "Let me check the weather for you.\n" + PARIS
    assert alone(THEN + before, engine.REASONING_ONLY, NO_TOOLS) == (THOUGHT, before, [])
    assert alone(PARIS, engine.REASONING_ONLY, NO_TOOLS, thinking=False) == ("", PARIS, [])
    # a tool tag ending reasoning stays as content (vLLM's skip_tool_parsing)
    assert alone(THOUGHT + "\n" + PARIS, engine.REASONING_ONLY, NO_TOOLS) == (
        THOUGHT, PARIS, [])


# --------------------------------------------------------------------------- bounds and states

SPELL = {marker: chr(0xE000 + MARKUP.index(marker)) for marker in MARKUP}


def test_tags_are_matched_as_their_single_tokens() -> None:
    vocab = vocabulary("glm-4.7-flash")
    for tag in ("<think>", "</think>", "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>",
                "<arg_value>", "</arg_value>"):
        assert parsers.spelled(vocab, tag) == SPELL[tag]
    marked = PARIS
    for tag in ("<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
                "</arg_value>"):
        marked = marked.replace(tag, SPELL[tag])
    context = ToolContext(tools=TOOLS, spell=SPELL)
    assert parse(marked, context, thinking=False)[2] == [
        ("get_weather", {"city": "Paris", "unit": "c"})]
    assert parse(PARIS, context, thinking=False) == ("", PARIS, [])


def test_long_values_and_names() -> None:
    """A value over MAX_VALUE characters is a string, streamed as written, kept when cut off
    (README); a name over MAX_NAME makes no call."""
    long = "[" + "1, " * MAX_VALUE + "1]"
    assert parse(THEN + call("set_config", ("tags", long), ("count", "2")))[2] == [
        ("set_config", {"tags": long, "count": 2})]
    cut = THEN + call("set_config", ("tags", long))
    assert parse(cut[:cut.index(long) + len(long)])[2] == [("set_config", {"tags": long})]
    assert parse(THEN + call("n" * (MAX_NAME + 1), ("city", "x")),
                 ToolContext(tools=[]))[2] == []


def test_states_round_trip_and_stay_bounded_over_a_long_stream() -> None:
    text = ("Reasoning goes on. " * 800 + "</think>" + "Content, " * 800
            + call("set_config", ("label", "x" * 6000), ("meta", '{"k": "' + "v" * 900 + '"}'))
            + PARIS)
    reasoning, content, calls, largest = feed_long_stream(glm.GLM47, "glm-4.7-flash", text,
                                                         AUTO)
    assert reasoning == ("Reasoning goes on. " * 800).rstrip()
    assert content == ("Content, " * 800).rstrip()
    assert [name for name, _ in calls] == ["set_config", "get_weather"]
    assert largest < MAX_VALUE + 2 * MAX_NAME + 2 * MAX_SPACE


TEXT_PIECES = ["<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
               "</arg_value>", "<think>", "</think>", "get_weather", "city", "count", "Paris",
               "3", "\n", " ", "<", "<arg_", "x", "1e999", "null"]


@settings(max_examples=300, deadline=None)
@given(fmt=st.sampled_from([glm.GLM45, glm.GLM47, glm.LING3]),
       context=st.sampled_from([AUTO, NONE, NO_TOOLS]), thinking=st.booleans(),
       parts=st.lists(st.sampled_from(TEXT_PIECES), max_size=40), cuts=st.data())
def test_any_text_reads_the_same_whole_and_split(fmt: Any, context: ToolContext, thinking: bool,
                                                 parts: list[str], cuts: st.DataObject) -> None:
    text = "".join(parts)
    whole = feed_engine(fmt, [text], context, thinking)
    size = cuts.draw(st.integers(1, 7))
    pieces = [text[i:i + size] for i in range(0, len(text), size)] or [""]
    assert feed_engine(fmt, pieces, context, thinking) == whole
    for _, arguments in whole[2]:
        json.loads(arguments)
    check_round_trips(fmt, pieces, context)


# --------------------------------------------------------------------------- split invariance


@st.composite
def outputs(draw: st.DrawFn, sep: str) -> tuple[str, list[tuple[str, dict[str, str]]], bool]:
    text = draw(st.sampled_from(["", "<think>"])) + draw(st.sampled_from(
        ["Hmm, weather.", "a < b \n", ""])) + draw(st.sampled_from(["</think>", "</think>\n",
                                                                    ""]))
    text += draw(st.sampled_from(["", "", "Sure.\n", " x <b>\n", "\n"]))
    written: list[tuple[str, dict[str, str]]] = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["get_weather", "get_time", "set_config", "get_stock"]))
        params = {} if name == "get_time" else draw(st.dictionaries(
            st.sampled_from(["city", "unit"] if name != "set_config" else ["label", "note"]),
            st.sampled_from(["Paris", "Zürich", "a\nb", "", " < ", "🌦"]), max_size=2))
        text += call(name, *params.items(), sep=sep) + draw(st.sampled_from(["", "\n"]))
        if name != "get_stock":
            written.append((name, params))
    text, clean = spoil(draw, text, [
        "<tool_call>", "<tool_call>x<arg_key>a", "</arg_value>", "<", "</think>", "<think>"])
    return text, written, clean


@pytest.mark.parametrize(("model", "reasoning_parser", "tool_parser", "sep"), [
    ("glm-4.5v", "glm45", "glm45", "\n"), ("glm-4.7-flash", "glm47", "glm47", ""),
    ("glm-4.7-flash", None, "glm47", ""), ("glm-4.7-flash", "glm47", None, ""),
    # ling3 (issue 19) on its stand-in vocabulary, GLM-4.7-Flash's
    ("glm-4.7-flash", "ling3", "ling3", ""), ("glm-4.7-flash", None, "ling3", ""),
    ("glm-4.7-flash", "ling3", None, "")])
@PROPS
@given(data=st.data())
def test_glm_stream_folds_to_message(client_for: Any, model: str, reasoning_parser: str | None,
                                     tool_parser: str | None, sep: str,
                                     data: st.DataObject) -> None:
    client = client_for(model, reasoning_parser, tool_parser)
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS, 3),
                        label="chat_request")
    if tool_parser is None:
        request.pop("tools", None)
        request.pop("tool_choice", None)
    if data.draw(st.integers(0, 3)) == 0:
        request["chat_template_kwargs"] = {"enable_thinking": False}
    text, written, clean = data.draw(outputs(sep), label="output")
    expected = run_text(client, model, text, request, data)
    if clean and "<think>" not in text and "</think>" in text and reasoning_parser is not None:
        check_written(expected, [[n, p] for n, p in written], request)


@pytest.mark.parametrize("name", ["glm-5", "glm-5.1", "glm-5.2"])
def test_glm5_folders_name_the_same_special_tokens_as_glm47(name: str) -> None:
    """GLM-5.x's ``tokenizer_config.json`` lists its special tokens as a list
    ``extra_special_tokens`` (transformers 5), GLM-4.7-Flash's the same 18 names as
    ``additional_special_tokens``: both are read, so ``skip_special_tokens`` drops the same
    ids."""
    config = json.loads((model_folder(name) / "tokenizer_config.json").read_text("utf-8"))
    older = json.loads((model_folder("glm-4.7-flash") / "tokenizer_config.json")
                       .read_text("utf-8"))
    assert config["extra_special_tokens"] == older["additional_special_tokens"]
    assert len(config["extra_special_tokens"]) == 18
    assert vocabulary(name).special_ids == vocabulary("glm-4.7-flash").special_ids
    v = vocabulary(name)
    assert {v.token_id(t) for t in config["extra_special_tokens"]} == set(v.special_ids)
