"""MiniMax M2 on the parser engine (parsers/minimax.py, parsers/engine.py): ``minimax_m2``,
reasoning and tool calls in one machine, and the ``minimax_m2_append_think`` reasoning parser
(parsers/reasoning.py) before it.

The rules are vLLM 0.33's (``vllm/parser/minimax_m2.py``, docs/vllm-compat/minimax.md); the
recorded cases 727-780 replay them against the real server (test_conformance) and each rule
test below names the cases it restates. Split invariance through the HTTP app on MiniMax
M2.7's vocabulary (``<think>``, ``</think>``, ``<minimax:tool_call>``, ``</minimax:tool_call>``
single tokens there).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.contract.requests import ChatRequest
from derender.core import parsers
from derender.core.parsers import engine, reasoning
from derender.core.parsers.engine import MAX_SPACE, MAX_VALUE
from derender.core.parsers.formats import minimax
from derender.core.parsers.registry import MARKUP
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
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
NONE = ToolContext(tools=TOOLS, keep=False)
NO_TOOLS = ToolContext(keep=False)
THOUGHT = "The user wants Paris weather; call the tool."
THEN = THOUGHT + "\n</think>\n\n"
M2 = minimax.M2


def parse(text: str, context: ToolContext = AUTO, pieces: list[str] | None = None,
          mode: str = engine.BOTH) -> tuple[str, str, list[tuple[str, Any]]]:
    if mode == engine.BOTH:
        thought, content, calls = feed_engine(M2, pieces or [text], context, True)
    else:
        state = engine.start(M2, minimax.M2_CONFIG, True, mode)
        thought, content, deltas, _ = engine.feed(minimax.M2_CONFIG, state, text, True, context)
        merged: dict[int, list[str]] = {}
        for delta in deltas:
            entry = merged.setdefault(delta.index, ["", ""])
            entry[0] += delta.name or ""
            entry[1] += delta.arguments
        calls = [(n, a) for n, a in merged.values()]
    return thought, content, [(name, json.loads(args)) for name, args in calls]


def invoke(name: str, *params: tuple[str, str], quote: str = '"') -> str:
    body = "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in params)
    return f"<invoke name={quote}{name}{quote}>\n{body}</invoke>\n"


def block(*invokes: str) -> str:
    return "<minimax:tool_call>\n" + "".join(invokes) + "</minimax:tool_call>"


PARIS = block(invoke("get_weather", ("city", "Paris"), ("unit", "c")))
WEATHER = ("get_weather", {"city": "Paris", "unit": "c"})


# --------------------------------------------------------------------------- calls


def test_single_and_parallel_calls() -> None:
    """[727, 729]: reasoning up to </think>, one call per <invoke>, content null."""
    assert parse(THEN + PARIS) == (THOUGHT, "", [WEATHER])
    two = block(invoke("get_weather", ("city", "Zürich")),
                invoke("get_weather", ("city", '東京 "Tokyo"\nline two'), ("unit", "f")))
    assert parse(THEN + two)[2] == [("get_weather", {"city": "Zürich"}),
                                    ("get_weather", {"city": '東京 "Tokyo"\nline two',
                                                     "unit": "f"})]


@pytest.mark.parametrize(("key", "raw", "value"), [
    # [731]
    ("count", "3", 3), ("ratio", "0.5", 0.5), ("enabled", "true", True),
    ("tags", '["a", "b"]', ["a", "b"]), ("meta", '{"k": 1, "nested": {"ok": true}}',
                                         {"k": 1, "nested": {"ok": True}}),
    ("note", "null", None), ("label", "42", "42"), ("level", "2", 2),
    # [733]
    ("count", "three", "three"), ("ratio", "1e999", "1e999"), ("enabled", "yes", "yes"),
    ("tags", "a, b", "a, b"), ("meta", "{'k': 1}", "{'k': 1}"), ("note", "None", "None"),
    ("level", "2.0", 2.0), ("extra", "7", "7")])
def test_values_are_verbatim_then_typed_by_the_schema(key: str, raw: str, value: Any) -> None:
    assert parse(THEN + block(invoke("set_config", (key, raw))))[2] == [
        ("set_config", {key: value})]


def test_names_quotes_and_malformed_parameters() -> None:
    """Names in double, single or no quotes [749]; no parameters: {} [735]; a parameter
    without its close runs to the next <parameter name= [751]; an <invoke> without the wrapper
    is a call [743]; a missing </minimax:tool_call> is fine [753]."""
    quoted = block(invoke("get_weather", ("city", "Paris"), quote="'"),
                   invoke("get_time", quote=""))
    assert parse(THEN + quoted)[2] == [("get_weather", {"city": "Paris"}), ("get_time", {})]
    assert parse(THEN + block(invoke("get_time")))[2] == [("get_time", {})]
    unclosed = ('<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris\n'
                '<parameter name="unit">c</parameter>\n</invoke>\n</minimax:tool_call>')
    assert parse(THEN + unclosed)[2] == [("get_weather", {"city": "Paris\n", "unit": "c"})]
    bare = '<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n</invoke>\n'
    assert parse(THEN + bare) == (THOUGHT, "", [("get_weather", {"city": "Paris"})])
    assert parse(THEN + "<minimax:tool_call>\n" + bare)[2] == [
        ("get_weather", {"city": "Paris"})]


def test_unknown_tools_are_dropped() -> None:
    """[741]: no call, no content."""
    assert parse(THEN + block(invoke("get_stock", ("symbol", "ACME")))) == (THOUGHT, "", [])


def test_content_around_the_calls() -> None:
    """The message strips the content before the calls and drops the text after them
    [737, 739]; the whitespace starting the content stays (README: a stream cannot know a call
    follows); look-alike text is content [745, 747]."""
    assert parse(THEN + "Let me check the weather for you.\n" + PARIS) == (
        THOUGHT, "\n\nLet me check the weather for you.", [WEATHER])
    assert parse(THEN + PARIS + "\nI will report back shortly.") == (THOUGHT, "", [WEATHER])
    literal = '\n\nWrite <parameter name="x"> and </invoke> literally, then stop.'
    assert parse(THOUGHT + "\n</think>" + literal) == (THOUGHT, literal, [])
    assert parse(THOUGHT + "\n</think>\n\nThe answer is near. <invoke na") == (
        THOUGHT, "\n\nThe answer is near. <invoke na", [])


def test_cut_off_call() -> None:
    """[755]: the parameter cut off is dropped: {}."""
    text = THEN + '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Par'
    assert parse(text) == (THOUGHT, "", [("get_weather", {})])


def test_tool_choice_none_and_no_tools() -> None:
    """"none" hides the calls and their markup [757]; without tools they are dropped [763]."""
    assert parse(THEN + PARIS, NONE) == (THOUGHT, "\n\n", [])
    assert parse(THEN + PARIS, NO_TOOLS) == (THOUGHT, "", [])


def test_reasoning() -> None:
    """The output starts in reasoning [765]; no </think>: all reasoning [767, 769]; a generated
    <think> is absorbed [771]; <minimax:tool_call> ends reasoning [773]."""
    answer = "\n\nIt is sunny in Paris, 22 °C."
    assert parse(THOUGHT + "\n</think>" + answer) == (THOUGHT, answer, [])
    assert parse(THOUGHT) == (THOUGHT, "", [])
    assert parse("<think>\n" + THOUGHT + "\n</think>" + answer) == ("\n" + THOUGHT, answer, [])
    assert parse(THOUGHT + "\n" + PARIS) == (THOUGHT, "", [WEATHER])
    switch = parsers.reasoning_record("minimax_m2").switch  # type: ignore[union-attr]
    assert switch is not None and switch.load()({"enable_thinking": False})


def append_think(text: str, pieces: list[str] | None = None
                 ) -> tuple[str, str, list[tuple[str, Any]]]:
    """minimax_m2_append_think, then the minimax_m2 tool parser (engine.FOREIGN)."""
    fmt = reasoning.FORMATS["minimax_m2_append_think"]
    vocab = vocabulary("minimax-m2.7")
    split_state = reasoning.start(fmt, vocab, None, True)
    assert split_state is not None
    tool_state = engine.start(M2, minimax.M2_CONFIG, True, engine.FOREIGN)
    thought, content = "", ""
    merged: dict[int, list[str]] = {}
    chunks = pieces or [text]
    for k, piece in enumerate(chunks):
        final = k == len(chunks) - 1
        split, split_state = reasoning.feed(fmt, split_state, piece, final, {})
        thought += split.reasoning
        more, out, deltas, tool_state = engine.feed(minimax.M2_CONFIG, tool_state,
                                                    split.content, final, AUTO)
        thought += more
        content += out
        for delta in deltas:
            entry = merged.setdefault(delta.index, ["", ""])
            entry[0] += delta.name or ""
            entry[1] += delta.arguments
    return thought, content, [(n, json.loads(a)) for n, a in merged.values()]


def test_append_think() -> None:
    """No reasoning, the content is "<think>" + output; </think> is kept unless a returned
    call follows it [775, 777, 779] (vLLM's stream loses it: folded to the message)."""
    answer = "\n\nIt is sunny in Paris, 22 °C."
    assert append_think(THOUGHT + "\n</think>" + answer) == (
        "", "<think>" + THOUGHT + "\n</think>" + answer, [])
    assert append_think(THEN + PARIS) == ("", "<think>" + THOUGHT, [WEATHER])
    both = "<think>\n" + THOUGHT + "\n</think>" + answer
    assert append_think(both) == ("", "<think>" + both, [])
    for size in (1, 3, 7):
        text = THEN + PARIS
        assert append_think("", [text[i:i + size] for i in range(0, len(text), size)]) == (
            "", "<think>" + THOUGHT, [WEATHER])


def test_registry_pairing() -> None:
    assert parsers.tool_record("minimax_m2").family == "minimax_m2"  # type: ignore[union-attr]
    assert parsers.pairing_error("minimax_m2", "minimax_m2") is None
    assert parsers.pairing_error("minimax_m2", None) is None
    assert parsers.pairing_error("minimax_m2", "glm47") is None  # two machines (8266-8287)
    assert parsers.front("minimax_m2", "glm47") == "minimax_m2"
    assert parsers.engine_mode("minimax_m2", "minimax_m2") == engine.BOTH
    assert parsers.engine_mode("minimax_m2_append_think", "minimax_m2") == engine.FOREIGN
    assert parsers.engine_mode(None, "minimax_m2") == engine.TOOLS
    assert "minimax_m2_append_think" in parsers.REASONING_PARSERS
    assert parsers.tag_of("minimax_m2") == 55 and parsers.tool_format("minimax_m2") is M2


# --------------------------------------------------------------------------- bounds and states

SPELL = {marker: chr(0xE000 + MARKUP.index(marker)) for marker in MARKUP}


def test_think_tags_are_matched_as_their_single_tokens() -> None:
    vocab = vocabulary("minimax-m2.7")
    assert parsers.spelled(vocab, "</think>") == SPELL["</think>"]
    context = ToolContext(tools=TOOLS, spell=SPELL)
    assert parse(THOUGHT + SPELL["</think>"] + PARIS, context)[:2] == (THOUGHT, "")
    # spelled by ordinary tokens, </think> is reasoning text
    assert parse(THOUGHT + "</think>x", context) == (THOUGHT + "</think>x", "", [])


def test_states_round_trip_and_stay_bounded_over_a_long_stream() -> None:
    text = ("Reasoning goes on. " * 800 + "</think>" + "Content, " * 800
            + block(invoke("set_config", ("label", "x" * 6000),
                           ("meta", '{"k": "' + "v" * 900 + '"}')))
            + PARIS)
    thought, content, calls, largest = feed_long_stream(M2, "minimax-m2.7", text, AUTO)
    assert thought == ("Reasoning goes on. " * 800).rstrip()
    assert content == ("Content, " * 800).rstrip()
    assert [name for name, _ in calls] == ["set_config", "get_weather"]
    assert json.loads(calls[0][1]) == {"label": "x" * 6000, "meta": {"k": "v" * 900}}
    assert largest < MAX_VALUE + 2 * MAX_SPACE + 256


def test_garbage_state_is_refused() -> None:
    """A state that no feed reaches is refused: an unknown phase or argument sub-phase,
    unknown flags, held or kept text past its bound, non-whitespace held as whitespace."""
    good = engine.EngineState()
    for bad in (engine.EngineState(phase=7), engine.EngineState(sub=9),
                engine.EngineState(flags=1 << engine.FLAG_BITS),
                engine.EngineState(held="<" * (engine.MAX_HELD + 1)),
                engine.EngineState(acc="x" * (MAX_VALUE + 1)),
                engine.EngineState(space="x"), engine.EngineState(rspace="\n</think>")):
        writer = Writer()
        M2.encode(bad, writer)
        with pytest.raises(ValueError):
            M2.decode(Reader(bytes(writer.out)))
    writer = Writer()
    M2.encode(good, writer)
    assert M2.decode(Reader(bytes(writer.out))) == good
    with pytest.raises((ValueError, IndexError)):
        M2.decode(Reader(b"\xff\xff"))


TEXT_PIECES = ["<minimax:tool_call>", "</minimax:tool_call>", '<invoke name="', "<invoke name=",
               '">', "'>", ">", "</invoke>", '<parameter name="', "<parameter name=",
               "</parameter>", "<think>", "</think>", "get_weather", "city", "count", "Paris",
               "3", "\n", " ", "<", "<para", "x", "null", '"']


@settings(max_examples=300, deadline=None)
@given(context=st.sampled_from([AUTO, NONE, NO_TOOLS]), foreign=st.booleans(),
       parts=st.lists(st.sampled_from(TEXT_PIECES), max_size=40), cuts=st.data())
def test_any_text_reads_the_same_whole_and_split(context: ToolContext, foreign: bool,
                                                 parts: list[str], cuts: st.DataObject) -> None:
    text = "".join(parts)
    size = cuts.draw(st.integers(1, 7))
    pieces = [text[i:i + size] for i in range(0, len(text), size)] or [""]
    if foreign:
        assert append_think("", pieces) == append_think(text)
        return
    whole = feed_engine(M2, [text], context, True)
    assert feed_engine(M2, pieces, context, True) == whole
    for _, arguments in whole[2]:
        json.loads(arguments)
    check_round_trips(M2, pieces, context)


# --------------------------------------------------------------------------- split invariance


@st.composite
def outputs(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict[str, str]]], bool]:
    text = draw(st.sampled_from(["", "<think>\n"])) + draw(st.sampled_from(
        ["Hmm, weather.", "a < b \n", ""])) + draw(st.sampled_from(["</think>", "</think>\n\n",
                                                                    ""]))
    text += draw(st.sampled_from(["", "", "Sure.\n", " x <b>\n", "\n"]))
    written: list[tuple[str, dict[str, str]]] = []
    calls = [draw(st.sampled_from(["get_weather", "get_time", "set_config", "get_stock"]))
             for _ in range(draw(st.integers(0, 3)))]
    invokes = []
    for name in calls:
        params = {} if name == "get_time" else draw(st.dictionaries(
            st.sampled_from(["city", "unit"] if name != "set_config" else ["label", "note"]),
            st.sampled_from(["Paris", "Zürich", "a\nb", "", " < ", "🌦"]), max_size=2))
        invokes.append(invoke(name, *params.items(), quote=draw(st.sampled_from(['"', "'"]))))
        if name != "get_stock":
            written.append((name, params))
    if invokes:
        text += block(*invokes)
    text, clean = spoil(draw, text, [
        "<minimax:tool_call>", '<invoke name="x">', "</parameter>", "<", "</think>", "<think>"])
    return text, written, clean


@pytest.mark.parametrize(("reasoning_parser", "tool_parser"), [
    ("minimax_m2", "minimax_m2"), ("minimax_m2_append_think", "minimax_m2"),
    (None, "minimax_m2"), ("minimax_m2", None)])
@PROPS
@given(data=st.data())
def test_minimax_m2_stream_folds_to_message(client_for: Any, reasoning_parser: str | None,
                                            tool_parser: str | None,
                                            data: st.DataObject) -> None:
    model = "minimax-m2.7"
    client = client_for(model, reasoning_parser, tool_parser)
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS, 3),
                        label="chat_request")
    if tool_parser is None:
        request.pop("tools", None)
        request.pop("tool_choice", None)
    text, written, clean = data.draw(outputs(), label="output")
    expected = run_text(client, model, text, request, data)
    if (clean and "<think>" not in text and "</think>" in text
            and reasoning_parser == "minimax_m2" and tool_parser is not None):
        check_written(expected, [[n, p] for n, p in written], request)


# =========================================================================== MiniMax M3
# ``minimax_m3`` (vllm/parser/minimax_m3.py): the <mm:think> reasoning parser
# (reasoning.FORMATS["minimax_m3"]) reads first, then the engine (engine.FOREIGN) its content.
# Cases 781-834; streams that differ fold to the message (test_conformance STREAM_AS_MESSAGE).

M3 = minimax.M3
NS = minimax.M3_NS
M3_THINK = "<mm:think>" + THOUGHT + "</mm:think>"
M3_REASONING = reasoning.FORMATS["minimax_m3"]


def m3(text: str, context: ToolContext = AUTO, pieces: list[str] | None = None,
       enabled: bool = False, check: Any = None) -> tuple[str, str, list[tuple[str, Any]]]:
    """The minimax_m3 reasoning parser, then the minimax_m3 tool parser, fed ``pieces``."""
    split_state = reasoning.start(M3_REASONING, vocabulary("minimax-m3"), None, enabled)
    assert split_state is not None
    tool_state = engine.start(M3, minimax.M3_CONFIG, False, engine.FOREIGN)
    thought, content = "", ""
    merged: dict[int, list[str]] = {}
    chunks = pieces if pieces is not None else [text]
    for k, piece in enumerate(chunks):
        final = k == len(chunks) - 1
        split, split_state = reasoning.feed(M3_REASONING, split_state, piece, final,
                                            context.spell or {})
        thought += split.reasoning
        _, out, deltas, tool_state = engine.feed(minimax.M3_CONFIG, tool_state, split.content,
                                                 final, context)
        if check is not None:
            check(split_state, tool_state)
        content += out
        for delta in deltas:
            assert (delta.name is not None) == (delta.index not in merged)
            entry = merged.setdefault(delta.index, ["", ""])
            entry[0] += delta.name or ""
            entry[1] += delta.arguments
    return thought, content, [(n, json.loads(a)) for n, a in merged.values()]


def el(name: str, body: str) -> str:
    return f"{NS}<{name}>{body}{NS}</{name}>"


def m3_invoke(name: str, *params: str, quote: str = '"') -> str:
    return f"{NS}<invoke name={quote}{name}{quote}>" + "".join(params) + f"{NS}</invoke>\n"


def m3_block(*invokes: str) -> str:
    return f"{NS}<tool_call>\n" + "".join(invokes) + f"{NS}</tool_call>"


M3_PARIS = m3_block(m3_invoke("get_weather", el("city", "Paris"), el("unit", "c")))


def test_m3_single_parallel_and_no_args() -> None:
    """[781, 783, 789]: one call per <invoke>, content null; no parameters: {}."""
    assert m3(M3_THINK + M3_PARIS) == (THOUGHT, "", [WEATHER])
    two = m3_block(m3_invoke("get_weather", el("city", "Zürich")),
                   m3_invoke("get_weather", el("city", '東京 "Tokyo"\nline two'),
                             el("unit", "f")))
    assert m3(M3_THINK + two)[2] == [
        ("get_weather", {"city": "Zürich"}),
        ("get_weather", {"city": '東京 "Tokyo"\nline two', "unit": "f"})]
    assert m3(M3_THINK + m3_block(m3_invoke("get_time")))[2] == [("get_time", {})]


def test_m3_nested_elements_typed_by_the_schema() -> None:
    """[785]: leaf text typed by the property's schema, <item> children of an array, children
    of an object without properties stay strings; [787]: untypable text stays a string, an
    empty element is []/{} for an array/object schema, a repeated name becomes a list, an
    element with children under a string schema is an object; [803]: mixed text under
    "$text"."""
    typed = m3_invoke("set_config", el("count", "3"), el("ratio", "0.5"), el("enabled", "true"),
                      el("tags", el("item", "a") + el("item", "b")),
                      el("meta", el("k", "1") + el("nested", el("ok", "true"))),
                      el("note", "null"), el("label", "42"), el("level", "2"))
    assert m3(M3_THINK + m3_block(typed))[2] == [("set_config", {
        "count": 3, "ratio": 0.5, "enabled": True, "tags": ["a", "b"],
        "meta": {"k": "1", "nested": {"ok": "true"}}, "note": None, "label": "42",
        "level": 2})]
    fallbacks = m3_invoke("set_config", el("count", "three"), el("enabled", "yes"),
                          el("tags", ""), el("meta", ""), el("label", el("x", "1")),
                          el("extra", "7"), el("extra", "8"))
    assert m3(M3_THINK + m3_block(fallbacks))[2] == [("set_config", {
        "count": "three", "enabled": "yes", "tags": [], "meta": {}, "label": {"x": "1"},
        "extra": ["7", "8"]})]
    mixed = m3_invoke("set_config", el("meta", "note " + el("k", "1") + " end"))
    assert m3(M3_THINK + m3_block(mixed))[2] == [
        ("set_config", {"meta": {"k": "1", "$text": "note  end"}})]


def test_m3_unterminated_elements_and_cut_off_calls() -> None:
    """[805]: parsing stops at the first unterminated element, keeping the parameters before
    it; [809]: a call cut off inside its first parameter is {} (the stream folds to it)."""
    unclosed = m3_invoke("get_weather", el("city", "Paris"), f"{NS}<unit>c")
    assert m3(M3_THINK + m3_block(unclosed))[2] == [("get_weather", {"city": "Paris"})]
    cut = M3_THINK + f'{NS}<tool_call>\n{NS}<invoke name="get_weather">{NS}<city>Par'
    assert m3(cut) == (THOUGHT, "", [("get_weather", {})])


def test_m3_wrapper_namespace_and_content() -> None:
    """Only the wrapper starts calls: a bare <invoke> is content [797]; tags without the
    namespace are content [807]; content before the block is kept as written [791], text
    after it dropped [793]; look-alike and partial tags are content [799, 801]; unknown names
    are kept [795]."""
    bare = m3_invoke("get_weather", el("city", "Paris"))
    assert m3(M3_THINK + bare) == (THOUGHT, bare, [])
    plain = '<tool_call>\n<invoke name="get_weather"><city>Paris</city></invoke>\n</tool_call>'
    assert m3(M3_THINK + plain) == (THOUGHT, plain, [])
    before = "Let me check the weather for you.\n"
    assert m3(M3_THINK + before + M3_PARIS) == (THOUGHT, before, [WEATHER])
    assert m3(M3_THINK + M3_PARIS + "\nI will report back shortly.") == (THOUGHT, "", [WEATHER])
    for text in (f"Write {NS}<city> literally, then stop.", f"The answer is near. {NS}<tool"):
        assert m3(M3_THINK + text) == (THOUGHT, text, [])
    stock = m3_block(m3_invoke("get_stock", el("symbol", "ACME")))
    assert m3(M3_THINK + stock)[2] == [("get_stock", {"symbol": "ACME"})]


def test_m3_tool_choice_none_and_no_tools_leave_the_markup() -> None:
    """[811, 817]: not parsed at all, the markup is content (unlike the other engine formats);
    "required" and named still parse [813, 815]."""
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
               "tools": TOOLS}
    vocab = vocabulary("minimax-m3")
    for extra in ({"tool_choice": "none"}, {"tools": None}):
        chat = ChatRequest.model_validate({**request, **extra})
        settings_ = parsers.parser_settings("minimax_m3", "minimax_m3", chat, vocab)
        assert settings_.tool_format is None and not settings_.keep_calls
    for choice in ("auto", "required", {"type": "function", "function": {"name": "get_weather"}}):
        chat = ChatRequest.model_validate({**request, "tool_choice": choice})
        settings_ = parsers.parser_settings("minimax_m3", "minimax_m3", chat, vocab)
        assert settings_.tool_format == "minimax_m3" and settings_.keep_calls


def test_m3_reasoning() -> None:
    """<mm:think>…</mm:think> is split whatever the mode [819, 831]; no output think: all
    content [821, 829]; cut off inside it: reasoning [823]; "enabled" starts inside it [825,
    827]; <think> is plain text [833]; a stray closer opening the output is dropped, a later
    one kept (vllm/reasoning/minimax_m3_reasoning_parser.py, not recorded)."""
    answer = "It is sunny in Paris, 22 °C."
    assert m3(M3_THINK + answer) == (THOUGHT, answer, [])
    assert m3(answer) == ("", answer, [])
    assert m3("<mm:think>" + THOUGHT) == (THOUGHT, "", [])
    assert m3(THOUGHT + "</mm:think>" + answer, enabled=True) == (THOUGHT, answer, [])
    assert m3(THOUGHT + "</mm:think>" + M3_PARIS, enabled=True) == (THOUGHT, "", [WEATHER])
    think = "<think>" + THOUGHT + "</think>" + answer
    assert m3(think) == ("", think, [])
    assert m3("</mm:think>" + answer) == ("", answer, [])
    assert m3("a</mm:think>b") == ("", "a</mm:think>b", [])
    # README compatibility: "enabled" reads reasoning from the start, a generated <mm:think>
    # absorbed (vLLM's message makes the text before it content)
    assert m3("R<mm:think>X</mm:think>Y", enabled=True) == ("RX", "Y", [])
    # once: a second block is content
    assert m3("x" + M3_THINK + "y<mm:think>z</mm:think>") == (
        THOUGHT, "xy<mm:think>z</mm:think>", [])
    assert minimax.m3_thinking({"thinking_mode": "enabled"})
    assert not minimax.m3_thinking({"thinking_mode": "disabled"})
    assert not minimax.m3_thinking({})


def test_m3_registry_pairing() -> None:
    assert parsers.tag_of("minimax_m3") == 56 and parsers.tool_format("minimax_m3") is M3
    assert "minimax_m3" in parsers.REASONING_PARSERS
    assert parsers.pairing_error("minimax_m3", "minimax_m3") is None
    assert parsers.engine_mode("minimax_m3", "minimax_m3") == engine.FOREIGN
    assert parsers.engine_mode(None, "minimax_m3") == engine.TOOLS
    assert parsers.engine_mode("minimax_m3", None) is None


def test_m3_markers_are_single_tokens() -> None:
    """]<]minimax[>[ (200058), <mm:think> (200059) and </mm:think> (200060) are markers: only
    the single token is matched, and a text ending in the namespace is held (it may still
    become a tag), nothing more."""
    vocab = vocabulary("minimax-m3")
    for marker, token in ((NS, 200058), ("<mm:think>", 200059), ("</mm:think>", 200060)):
        assert vocab.token_id(marker) == token
        assert parsers.spelled(vocab, marker) == SPELL[marker]
    context = ToolContext(tools=TOOLS, spell=SPELL)
    marked = M3_THINK + M3_PARIS
    for marker in (NS, "<mm:think>", "</mm:think>", "<tool_call>", "</tool_call>"):
        marked = marked.replace(marker, SPELL[marker])
    assert m3(marked, context) == (THOUGHT, "", [WEATHER])
    # spelled by ordinary tokens they are text
    assert m3(M3_THINK + M3_PARIS, context) == ("", M3_THINK + M3_PARIS, [])
    state = engine.start(M3, minimax.M3_CONFIG, False, engine.FOREIGN)
    _, out, _, state = engine.feed(minimax.M3_CONFIG, state, "Hi " + SPELL[NS], False, context)
    assert (out, state.held) == ("Hi ", SPELL[NS])


def test_m3_held_call_is_bounded() -> None:
    """A call's parameter text is held until </invoke>, at most MAX_CALL bytes of UTF-8: past
    it the arguments are the parameters complete within the first MAX_CALL bytes and the
    rest of the call is skipped (README compatibility)."""
    long = m3_invoke("get_weather", el("city", "Paris"), el("unit", "x" * minimax.MAX_CALL),
                     el("city", "Rome"))
    assert m3(M3_THINK + m3_block(long))[2] == [("get_weather", {"city": "Paris"})]
    fits = m3_invoke("get_weather", el("city", "Paris"), el("unit", "x" * 4000))
    assert m3(M3_THINK + m3_block(fits))[2] == [
        ("get_weather", {"city": "Paris", "unit": "x" * 4000})]
    # bytes, not characters (issue 22): 1,300 CJK characters (3,900 bytes) fit, 1,400 do not
    cjk = m3_invoke("get_weather", el("city", "Paris"), el("unit", "\u4e2d" * 1300))
    assert m3(M3_THINK + m3_block(cjk))[2] == [
        ("get_weather", {"city": "Paris", "unit": "\u4e2d" * 1300})]
    cjk = m3_invoke("get_weather", el("city", "Paris"), el("unit", "\u4e2d" * 1400))
    assert m3(M3_THINK + m3_block(cjk))[2] == [("get_weather", {"city": "Paris"})]


def test_m3_states_round_trip_and_stay_bounded_over_a_long_stream() -> None:
    text = ("<mm:think>" + "Reasoning goes on. " * 800 + "</mm:think>" + "Content, " * 800
            + m3_block(m3_invoke("set_config", el("label", "x" * 3000),
                                 el("meta", el("k", "v" * 900))),
                       m3_invoke("get_weather", el("city", "y" * 6000)),
                       m3_invoke("get_weather", el("city", "Paris"), el("unit", "c"))))
    tok = tokenizer("minimax-m3")
    ids = tok.encode(text, add_special_tokens=False).ids
    assert len(ids) > 5000
    vocab = parsers.marked(vocabulary("minimax-m3"))
    pieces = [vocab.decode([i]) for i in ids]
    context = ToolContext(tools=TOOLS, spell=SPELL)
    largest = 0

    def check(split_state: Any, state: Any) -> None:
        nonlocal largest
        writer = Writer()
        M3.encode(state, writer)
        reasoning.encode(split_state, writer)
        largest = max(largest, len(writer.out))
        reader = Reader(bytes(writer.out))
        assert M3.decode(reader) == state
        assert reasoning.decode(split_state.reasoning, reader) == split_state

    thought, content, calls = m3("", context, pieces, check=check)
    assert thought == "Reasoning goes on. " * 800
    assert content == "Content, " * 800
    assert calls == [("set_config", {"label": "x" * 3000, "meta": {"k": "v" * 900}}),
                     ("get_weather", {}), WEATHER]
    assert largest < minimax.MAX_CALL * 3 + 512  # UTF-8 of at most MAX_CALL held characters


def test_m3_garbage_state_is_refused() -> None:
    for bad in (engine.EngineState(sub=2), engine.EngineState(phase=6),
                engine.EngineState(acc="x" * (minimax.MAX_CALL + 1)),
                engine.EngineState(held="<" * (engine.MAX_HELD + 1))):
        writer = Writer()
        M3.encode(bad, writer)
        with pytest.raises(ValueError):
            M3.decode(Reader(bytes(writer.out)))
    writer = Writer()
    writer.text("")
    writer.uint((reasoning.UNMARKED + 1) << 1)  # an unknown reasoning stage (past the last)
    with pytest.raises(ValueError):
        reasoning.decode(False, Reader(bytes(writer.out)))


M3_PIECES = [NS, "<tool_call>", "</tool_call>", '<invoke name="', "<invoke name='",
             "<invoke name=", '">', "'>", ">", "</invoke>", "<city>", "</city>", "<item>",
             "</item>", "<tags>", "</tags>", "<", "</", "<mm:think>", "</mm:think>",
             "get_weather", "set_config", "Paris", "3", "\n", " ", "x", "<mm:th"]


@settings(max_examples=300, deadline=None)
@given(context=st.sampled_from([AUTO, NONE, NO_TOOLS]), enabled=st.booleans(),
       parts=st.lists(st.sampled_from(M3_PIECES), max_size=40), cuts=st.data())
def test_m3_any_text_reads_the_same_whole_and_split(context: ToolContext, enabled: bool,
                                                    parts: list[str],
                                                    cuts: st.DataObject) -> None:
    text = "".join(parts)
    size = cuts.draw(st.integers(1, 7))
    pieces = [text[i:i + size] for i in range(0, len(text), size)] or [""]
    assert m3("", context, pieces, enabled) == m3(text, context, None, enabled)
    check_round_trips(M3, pieces, context)
