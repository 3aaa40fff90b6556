"""DeepSeek's DSML formats on the parser engine (parsers/dsml.py, parsers/engine.py):
``deepseek_v32``, ``deepseek_v4``, ``deepseek_v41``, and the ``deepseek_v3`` reasoning parser.

The rules are vLLM 0.33's, as docs/vllm-compat/dsml.md reads them in its source; the
recorded cases 405-614 replay them against the real server (test_conformance) and each rule
test below names the cases it restates. Split invariance through the HTTP app on DeepSeek
V3.2's and V4's own vocabularies (``｜DSML｜`` a single token there).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.contract.requests import ChatRequest
from derender.core import parsers
from derender.core.parsers import engine
from derender.core.parsers.engine import MAX_HEAD, MAX_NAME, MAX_SPACE, MAX_VALUE
from derender.core.parsers.formats import dsml
from derender.core.parsers.registry import MARKUP
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
from derender.settings import Settings
from derender_testing.models import tokenizer, vocabulary
from derender_testing.tool_streams import (
    check_round_trips,
    check_written,
    ended,
    feed_engine,
    feed_long_stream,
    requests,
    run_both,
    spoil,
)
from tests.test_parser_properties import PROPS

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}}
CONFIG = {"type": "function", "function": {"name": "set_config", "parameters": {
    "type": "object", "properties": {
        "count": {"type": "integer"}, "ratio": {"type": "number"}, "enabled": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}}, "meta": {"type": "object"},
        "note": {"type": ["string", "null"]}, "label": {"type": "string"},
        "level": {"enum": [1, 2, 3]}}}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {}}}}
TOOLS = [WEATHER, CONFIG, TIME]
AUTO = ToolContext(tools=TOOLS)
NONE = ToolContext(tools=TOOLS, keep=False)
NO_TOOLS = ToolContext(keep=False)


def parse(fmt: Any, text: str, context: ToolContext = AUTO, thinking: bool = False,
          pieces: list[str] | None = None) -> tuple[str, str, list[tuple[str, Any]]]:
    """Reasoning, content and calls (arguments parsed) of ``text``, whole or in ``pieces``."""
    reasoning, content, calls = feed_engine(fmt, pieces or [text], context, thinking)
    return reasoning, content, [(name, json.loads(args)) for name, args in calls]


def block(*invokes: str, wrapper: str = "function_calls", space: str = "") -> str:
    d = "<｜DSML｜" + space
    return f"{d}{wrapper}>\n" + "".join(invokes) + f"</｜DSML｜{space}{wrapper}>"


def invoke(name: str, *params: tuple[str, str, str | None], space: str = "") -> str:
    d = "<｜DSML｜" + space
    body = "".join(
        f'{d}parameter name="{k}"' + ("" if flag is None else f' string="{flag}"')
        + f">{v}</｜DSML｜{space}parameter>\n" for k, v, flag in params)
    return f'{d}invoke name="{name}">\n{body}</｜DSML｜{space}invoke>\n'


PARIS = invoke("get_weather", ("city", "Paris", "true"), ("unit", "c", "true"))
THOUGHT = "The user wants Paris weather; call the tool."


# --------------------------------------------------------------------------- calls


def test_single_and_parallel_calls() -> None:
    """[405, 407]"""
    assert parse(dsml.V32, block(PARIS)) == (
        "", "", [("get_weather", {"city": "Paris", "unit": "c"})])
    two = block(invoke("get_weather", ("city", "Zürich", "true")),
                invoke("get_weather", ("city", '東京 "Tokyo"\nline two', "true"),
                       ("unit", "f", "true")))
    assert parse(dsml.V32, two)[2] == [
        ("get_weather", {"city": "Zürich"}),
        ("get_weather", {"city": '東京 "Tokyo"\nline two', "unit": "f"})]


def test_values_typed_by_the_string_flag_then_the_schema() -> None:
    """[409, 411]: ``string="true"`` is the text, else JSON or the text; then the schema
    (a non-finite number is the string "Infinity"; an object under a string schema stays)."""
    typed = invoke("set_config", ("count", "3", "false"), ("ratio", "0.5", "false"),
                   ("enabled", "true", "false"), ("tags", '["a", "b"]', "false"),
                   ("meta", '{"k": 1, "nested": {"ok": true}}', "false"),
                   ("note", "null", "false"), ("label", "42", "true"), ("level", "2", "false"))
    assert parse(dsml.V32, block(typed))[2] == [("set_config", {
        "count": 3, "ratio": 0.5, "enabled": True, "tags": ["a", "b"],
        "meta": {"k": 1, "nested": {"ok": True}}, "note": None, "label": "42", "level": 2})]
    flags = invoke("set_config", ("count", "3", "true"), ("ratio", "1e999", "false"),
                   ("enabled", "yes", "false"), ("label", '{"a": 1}', "false"),
                   ("tags", '["x"]', None), ("note", "free text", None))
    assert parse(dsml.V32, block(flags))[2] == [("set_config", {
        "count": 3, "ratio": "Infinity", "enabled": "yes", "label": {"a": 1}, "tags": ["x"],
        "note": "free text"})]


def test_calls_without_arguments_unknown_tools_and_wrapped_arguments() -> None:
    """[413] no parameters: ``{}``; [419] an unknown tool is kept; [421] a lone
    ``arguments`` parameter holding the tool's properties is unwrapped."""
    assert parse(dsml.V32, block(invoke("get_time")))[2] == [("get_time", {})]
    assert parse(dsml.V32, block(invoke("get_stock", ("symbol", "ACME", "true"))))[2] == [
        ("get_stock", {"symbol": "ACME"})]
    wrapped = invoke("get_weather", ("arguments", '{"city": "Paris"}', "false"))
    assert parse(dsml.V32, block(wrapped))[2] == [("get_weather", {"city": "Paris"})]
    # not unwrapped: another parameter follows, or the object holds other keys
    two = invoke("get_weather", ("arguments", '{"city": "Paris"}', "false"),
                 ("unit", "c", "true"))
    assert parse(dsml.V32, block(two))[2] == [
        ("get_weather", {"arguments": {"city": "Paris"}, "unit": "c"})]
    other = invoke("get_weather", ("input", '{"town": "Paris"}', "false"))
    assert parse(dsml.V32, block(other))[2] == [("get_weather", {"input": {"town": "Paris"}})]


def test_malformed_blocks() -> None:
    """[423] a value without its close runs to the next parameter; [425] a missing
    ``</｜DSML｜invoke>`` is closed by the block's end; [427] an invoke without the wrapper is
    a call; [433] a value cut off by the end is dropped (``{}``)."""
    no_close = block('<｜DSML｜invoke name="get_weather">\n'
                     '<｜DSML｜parameter name="city" string="true">Paris\n'
                     '<｜DSML｜parameter name="unit" string="true">c</｜DSML｜parameter>\n'
                     "</｜DSML｜invoke>\n")
    assert parse(dsml.V32, no_close)[2] == [("get_weather", {"city": "Paris\n", "unit": "c"})]
    no_invoke_close = ('<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
                       '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
                       "</｜DSML｜function_calls>")
    assert parse(dsml.V32, no_invoke_close)[2] == [("get_weather", {"city": "Paris"})]
    bare = invoke("get_weather", ("city", "Paris", "true")).rstrip("\n")
    assert parse(dsml.V32, bare) == ("", "", [("get_weather", {"city": "Paris"})])
    cut = ('<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
           '<｜DSML｜parameter name="city" string="true">Par')
    for pieces in ([cut], list(cut)):
        assert parse(dsml.V32, cut, pieces=pieces) == ("", "", [("get_weather", {})])


def test_text_around_the_block() -> None:
    """[415, 477] text before the block is content as written; [467] whitespace alone before
    it is not; [417] text after the block is dropped; [443] plain text is content."""
    before = "Let me check the weather for you.\n\n"
    assert parse(dsml.V32, before + block(PARIS))[1] == before
    assert parse(dsml.V32, "\n\n" + block(PARIS))[1] == ""
    assert parse(dsml.V32, block(PARIS) + "\nI will report back shortly.")[1] == ""
    assert parse(dsml.V32, "It is sunny in Paris, 22 °C.") == (
        "", "It is sunny in Paris, 22 °C.", [])


@pytest.mark.parametrize("text", ["The answer is near. <｜DSML｜func",
                                  "Use <｜DSML｜ as a marker and <｜DSML｜invoke> too, then stop."])
def test_tag_lookalikes_are_content(text: str) -> None:
    """[429, 431]: held while they may become a tag, released as content when they cannot
    (and at the end)."""
    for pieces in ([text], list(text)):
        assert parse(dsml.V32, text, pieces=pieces) == ("", text, [])


def test_tool_choice_none_and_no_tools() -> None:
    """[435, 497]: under "none" the calls and their markup are gone, the text before stays;
    [441, 503]: without tools the calls are read and dropped, whitespace before them too."""
    text = THOUGHT + "</think>\n\n" + block(PARIS, wrapper="tool_calls")
    assert parse(dsml.V4, text, NONE, thinking=True) == (THOUGHT, "\n\n", [])
    assert parse(dsml.V4, text, NO_TOOLS, thinking=True) == (THOUGHT, "", [])
    assert parse(dsml.V32, block(PARIS), NO_TOOLS) == ("", "", [])


def test_wrappers_of_each_version() -> None:
    """[445] V4's wrapper on V3.2 stays content, its invoke is read; [529] V3.2's on V4 too;
    [527] V4's variant spellings; V4.1 spells every tag with a space after ｜DSML｜ [531, 591]
    and V4's tags are all content there [593]."""
    v4_block = block(PARIS, wrapper="tool_calls")
    assert parse(dsml.V32, v4_block) == (
        "", "<｜DSML｜tool_calls>\n", [("get_weather", {"city": "Paris", "unit": "c"})])
    assert parse(dsml.V4, block(PARIS))[1:] == (
        "<｜DSML｜function_calls>\n", [("get_weather", {"city": "Paris", "unit": "c"})])
    variant = v4_block.replace("<｜DSML｜tool_calls>", "<｜DSML｜toolcalls>", 1)
    assert parse(dsml.V4, variant)[1:] == ("", [("get_weather", {"city": "Paris", "unit": "c"})])
    spaced = invoke("get_weather", ("city", "Paris", "true"), ("unit", "c", "true"), space=" ")
    assert parse(dsml.V41, block(spaced, wrapper="calls", space=" "))[2] == [
        ("get_weather", {"city": "Paris", "unit": "c"})]
    assert parse(dsml.V41, block(spaced, wrapper="toolcalls", space=" "))[1:] == (
        "<｜DSML｜ toolcalls>\n", [("get_weather", {"city": "Paris", "unit": "c"})])
    assert parse(dsml.V41, v4_block) == ("", v4_block, [])


# --------------------------------------------------------------------------- reasoning


def test_v4_reasoning_in_the_same_machine() -> None:
    """[505] ``</think>`` ends reasoning, the rest is content as written; [507] no end: all
    reasoning; [511] a repeated ``<think>`` is dropped; [513] a block inside reasoning ends
    it (its trailing whitespace dropped); [515] text between ``</think>`` and the block."""
    for fmt in (dsml.V4, dsml.V41):
        text = THOUGHT + "</think>\n\nIt is sunny in Paris, 22 °C."
        assert parse(fmt, text, thinking=True) == (
            THOUGHT, "\n\nIt is sunny in Paris, 22 °C.", [])
        assert parse(fmt, THOUGHT, thinking=True) == (THOUGHT, "", [])
        assert parse(fmt, "<think>" + THOUGHT + "</think>It is sunny.", thinking=True) == (
            THOUGHT, "It is sunny.", [])
    inside = THOUGHT + "\n\n" + block(PARIS, wrapper="tool_calls")
    assert parse(dsml.V4, inside, thinking=True) == (
        THOUGHT, "", [("get_weather", {"city": "Paris", "unit": "c"})])
    between = THOUGHT + "</think>Checking.\n\n" + block(PARIS, wrapper="tool_calls")
    assert parse(dsml.V4, between, thinking=True)[:2] == (THOUGHT, "Checking.\n\n")


def test_v4_thinking_off() -> None:
    """[517, 519] content from the start, calls read; [521] a stray ``</think>`` is dropped,
    the text around it joined."""
    assert parse(dsml.V4, "It is sunny.") == ("", "It is sunny.", [])
    assert parse(dsml.V4, block(PARIS, wrapper="tool_calls"))[2] == [
        ("get_weather", {"city": "Paris", "unit": "c"})]
    assert parse(dsml.V4, THOUGHT + "</think>It is sunny.") == ("", THOUGHT + "It is sunny.",
                                                                [])


def request(**fields: Any) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": "Weather?"}], **fields)


@pytest.mark.parametrize(("fields", "on"), [
    ({}, True),
    ({"chat_template_kwargs": {"thinking": False}}, False),  # [517]
    ({"reasoning_effort": "none"}, False),  # [523]
    ({"chat_template_kwargs": {"enable_thinking": True}}, True),  # [525]
    ({"chat_template_kwargs": {"thinking": False, "enable_thinking": True}}, True),
    ({"chat_template_kwargs": {"reasoning_effort": "none"}}, False),
])
def test_v4_thinking_switch(fields: dict[str, Any], on: bool) -> None:
    assert dsml.thinking(parsers.template_kwargs(request(**fields))) is on


@pytest.mark.parametrize(("fields", "on"), [
    ({"chat_template_kwargs": {"thinking": True}}, True),  # [447]
    ({"chat_template_kwargs": {"thinking": False}}, False),  # [449]
    ({}, False),  # [451]
    ({"chat_template_kwargs": {"enable_thinking": True}}, True),  # [453]
    ({"reasoning_effort": "low"}, True),  # [455]
    ({"reasoning_effort": "none"}, False),  # [457]
])
def test_deepseek_v3_reasoning_thinks_only_when_asked(fields: dict[str, Any], on: bool) -> None:
    """``deepseek_v3`` delegates to ``deepseek_r1`` when the template kwargs turn thinking on,
    else reads nothing (all content, ``</think>`` included [449])."""
    assert parsers.v3_thinking(request(**fields)) is on
    fmt = parsers.reasoning.FORMATS["deepseek_v3"]
    assert fmt.honours_switch and fmt.start == "<think>" and fmt.end == "</think>"


def test_v4_one_parser_alone() -> None:
    """The tool parser alone reads no reasoning (``</think>`` is text) [1318, 1320, 1322, 1324,
    1326]; the reasoning parser alone no calls (the block is content text) [1328-1334]."""
    call = block(PARIS, wrapper="tool_calls")
    lead = THOUGHT + "</think>\n\n"

    def alone(text: str, mode: str, context: ToolContext = AUTO
              ) -> tuple[str, str, list[tuple[str, str]]]:
        state = engine.start(dsml.V4, dsml.V4_CONFIG, True, mode)
        reasoning, content, deltas, _ = engine.feed(dsml.V4_CONFIG, state, text, True, context)
        return reasoning, content, [(d.name or "", d.arguments) for d in deltas]

    assert alone(lead + call, engine.TOOLS) == (
        "", lead, [("get_weather", '{"city": "Paris", "unit": "c"}')])
    assert alone(lead + "Let me check the weather for you.\n" + call, engine.TOOLS)[1] == (
        lead + "Let me check the weather for you.\n")
    assert alone(lead + call, engine.TOOLS, NO_TOOLS) == ("", lead, [])
    assert alone(lead + call, engine.REASONING_ONLY, NO_TOOLS) == (THOUGHT, "\n\n" + call, [])


# --------------------------------------------------------------------------- bounds and states

SPELL = {marker: chr(0xE000 + MARKUP.index(marker)) for marker in MARKUP}
MARKED = ToolContext(tools=TOOLS, spell=SPELL)


def test_dsml_is_matched_as_its_single_token() -> None:
    """``｜DSML｜`` is one token of V3.2/V4's vocabularies: on the marked vocabulary the tags
    hold its stand-in, and the same characters written by other tokens are text."""
    vocab = vocabulary("deepseek-v3.2")
    assert vocab.token_id("｜DSML｜") == 128793
    assert parsers.spelled(vocab, "｜DSML｜") == SPELL["｜DSML｜"]
    marked = block(PARIS).replace("｜DSML｜", SPELL["｜DSML｜"])
    assert parse(dsml.V32, marked, MARKED)[2] == [("get_weather", {"city": "Paris", "unit": "c"})]
    assert parse(dsml.V32, block(PARIS), MARKED)[1:] == (block(PARIS), [])


def test_long_values_names_and_heads() -> None:
    """A value over MAX_VALUE characters is a string, streamed as written, and kept when cut
    off (README); a name over MAX_NAME makes no call; a parameter tag over MAX_HEAD is no
    parameter."""
    long = "[" + "1, " * MAX_VALUE + "1]"
    text = block(invoke("set_config", ("tags", long, "false"), ("count", "2", "false")))
    assert parse(dsml.V32, text)[2] == [("set_config", {"tags": long, "count": 2})]
    cut = text[:text.index(long) + len(long)]
    assert parse(dsml.V32, cut)[2] == [("set_config", {"tags": long})]
    named = block(invoke("n" * (MAX_NAME + 1), ("city", "Paris", "true")))
    assert parse(dsml.V32, named)[2] == []
    head = block(invoke("get_weather", ("city" + " " * MAX_HEAD, "Paris", "true")))
    assert parse(dsml.V32, head)[2] == [("get_weather", {})]


def long_output() -> str:
    return ("<think>" + "Reasoning goes on. " * 800 + "</think>\n\n" + "Content, " * 800
            + block(invoke("set_config", ("label", "x" * 6000, "true"),
                           ("meta", '{"k": "' + "v" * 900 + '"}', "false")),
                    PARIS, wrapper="tool_calls"))


def test_states_round_trip_and_stay_bounded_over_a_long_stream() -> None:
    """Over 5,000 tokens of reasoning, content and long values, every state encodes small
    and decodes to itself."""
    reasoning, content, calls, largest = feed_long_stream(dsml.V4, "deepseek-v4",
                                                         long_output(), AUTO)
    assert reasoning == ("Reasoning goes on. " * 800).rstrip()
    assert content == "\n\n" + "Content, " * 800
    assert [name for name, _ in calls] == ["set_config", "get_weather"]
    assert largest < MAX_VALUE + 2 * MAX_NAME + 2 * MAX_SPACE


def test_the_largest_engine_state_fits_the_service_cap() -> None:
    """Every field at its bound in its widest characters (4-byte text, 3-byte whitespace):
    with the largest stop-string holdback beside it (511 characters, 2,044 bytes) and the
    rest of a stream state, the signed token stays under ``max_state_chars``. A held value
    and a held wrapper parameter never coexist (the wrapper is given up at the next tag)."""
    wide, space = "😀", "\u3000"
    state = engine.EngineState(
        phase=engine.ARGS, sub=engine.DsmlArgs.VALUE, held=wide * engine.MAX_HELD,
        acc=wide * MAX_VALUE, key=wide * MAX_HEAD, tool=1000, space=space * MAX_SPACE,
        rspace=space * MAX_SPACE, calls=1000, flags=(1 << engine.FLAG_BITS) - 1)
    writer = Writer()
    dsml.V4.encode(state, writer)
    assert dsml.V4.decode(Reader(bytes(writer.out))) == state
    payload = len(writer.out) + 511 * 4 + 256  # stop holdback, the rest of the state
    assert (payload + 2) // 3 * 4 < Settings.max_state_chars
    with pytest.raises(ValueError, match="malformed"):
        bigger = Writer()
        dsml.V4.encode(engine.EngineState(acc="x" * (MAX_VALUE + 1)), bigger)
        dsml.V4.decode(Reader(bytes(bigger.out)))


TEXT_PIECES = ["<｜DSML｜", "function_calls>", "tool_calls>", "invoke name=\"", "get_weather",
               "\">", "parameter name=\"city\"", " string=\"true\"", " string=\"false\"", ">",
               "</｜DSML｜", "parameter>", "invoke>", "Paris", "3", "{\"a\": [1", "]}", "\n",
               " ", "<think>", "</think>", "<", "\"", "x", "1e999", "arguments", "｜DSML｜"]


@settings(max_examples=300, deadline=None)
@given(fmt=st.sampled_from([dsml.V32, dsml.V4, dsml.V41]),
       context=st.sampled_from([AUTO, NONE, NO_TOOLS, MARKED]),
       thinking=st.booleans(),
       parts=st.lists(st.sampled_from(TEXT_PIECES), max_size=40), cuts=st.data())
def test_any_text_reads_the_same_whole_and_split(fmt: Any, context: ToolContext, thinking: bool,
                                                 parts: list[str], cuts: st.DataObject) -> None:
    """Garbage in: the machine never fails, every split reads the same, arguments are JSON,
    and every state it reaches round-trips."""
    text = "".join(parts)
    whole = feed_engine(fmt, [text], context, thinking)
    size = cuts.draw(st.integers(1, 7))
    split = feed_engine(fmt, [text[i:i + size] for i in range(0, len(text), size)] or [""],
                        context, thinking)
    assert split == whole
    for _, arguments in whole[2]:
        json.loads(arguments)
    check_round_trips(fmt, [text[i:i + size] for i in range(0, len(text), size)], context)


@settings(max_examples=200, deadline=None)
@given(payload=st.binary(max_size=64))
def test_garbage_states_are_refused_or_read(payload: bytes) -> None:
    """A payload that is not a state raises ValueError (or the codec's IndexError /
    UnicodeDecodeError), never anything else; one that reads is a bounded state."""
    try:
        state = dsml.V4.decode(Reader(payload))
    except (ValueError, IndexError, UnicodeDecodeError):
        return
    assert isinstance(state, dsml.DeepSeekV4State)
    assert len(state.held) <= engine.MAX_HELD and len(state.wrap) <= MAX_VALUE


def test_a_forged_phase_is_refused() -> None:
    writer = Writer()
    engine.encode(engine.EngineState(phase=7), writer)
    with pytest.raises(ValueError, match="malformed"):
        dsml.V4.decode(Reader(bytes(writer.out)))


# --------------------------------------------------------------------------- split invariance

CITIES = ["Paris", "Zürich", '東京 "Tokyo"\nline two', "", " a < b ", "🌦"]


@st.composite
def outputs(draw: st.DrawFn, space: str, wrapper: str, thinking: bool
            ) -> tuple[str, list[tuple[str, dict[str, str]]], bool]:
    """(text, calls written with their string values, clean)."""
    text = ""
    if thinking:
        text += draw(st.sampled_from(["", "<think>"])) + draw(st.sampled_from(
            ["Hmm, weather.", "a < b \n", ""])) + draw(st.sampled_from(["</think>", "</think>\n\n",
                                                                       "\n\n", ""]))
    text += draw(st.sampled_from(["", "", "Sure.\n\n", " x <b>\n", "\n"]))
    written: list[tuple[str, dict[str, str]]] = []
    invokes = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["get_weather", "get_time", "set_config"]))
        params = {} if name == "get_time" else draw(st.dictionaries(
            st.sampled_from(["city", "unit"]) if name == "get_weather"
            else st.sampled_from(["label"]), st.sampled_from(CITIES), max_size=2))
        invokes.append(invoke(name, *((k, v, "true") for k, v in params.items()), space=space))
        written.append((name, params))
    if invokes:
        text += block(*invokes, wrapper=wrapper, space=space)
    text, clean = spoil(draw, text, [
        "<｜DSML｜", "<｜DSML｜invoke name=\"x", "</｜DSML｜", "<｜DSML｜parameter name=\"a\">1",
        "<", "</think>"])
    return text, written, clean


MODELS = {"deepseek_v32": "deepseek-v3.2", "deepseek_v4": "deepseek-v4-native",
          "deepseek_v41": "deepseek-v4.1-native"}


def check_splits(client: Any, model: str, text: str, request: dict[str, Any], finish: str,
                 data: st.DataObject) -> dict[str, Any]:
    ids, finish = ended(model, text, finish)
    prompt = tokenizer(model).encode("Weather?", add_special_tokens=False).ids
    return run_both(client, model, ids, finish, prompt, request, data)


@pytest.mark.parametrize(("reasoning_parser", "tool_parser", "space", "wrapper"), [
    (None, "deepseek_v32", "", "function_calls"),
    (None, "deepseek_v4", "", "tool_calls"),
    ("deepseek_v3", "deepseek_v32", "", "function_calls"),
    ("deepseek_v4", "deepseek_v4", "", "tool_calls"),
    ("deepseek_v41", "deepseek_v41", " ", "calls"),
])
@PROPS
@given(data=st.data())
def test_dsml_stream_folds_to_message(client_for: Any, reasoning_parser: str | None,
                                      tool_parser: str, space: str, wrapper: str,
                                      data: st.DataObject) -> None:
    model = MODELS[tool_parser]
    client = client_for(model, reasoning_parser, tool_parser)
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS, 3),
                        label="chat_request")
    if data.draw(st.booleans()):
        request["chat_template_kwargs"] = {"thinking": data.draw(st.booleans())}
    thinking = reasoning_parser is not None or tool_parser == "deepseek_v4"
    text, written, clean = data.draw(outputs(space, wrapper, thinking), label="output")
    finish = data.draw(st.sampled_from(["stop", "stop", "length"]), label="finish")
    expected = check_splits(client, model, text, request, finish, data)
    if clean and reasoning_parser is None and not thinking:
        check_written(expected, [[n, p] for n, p in written], request)
