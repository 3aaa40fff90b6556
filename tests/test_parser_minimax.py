"""MiniMax M2 on the parser engine (parsers/minimax.py, parsers/engine.py): ``minimax_m2``,
reasoning and tool calls in one machine, and the ``minimax_m2_append_think`` reasoning parser
(parsers/reasoning.py) before it.

The rules are vLLM 0.33's (``vllm/parser/minimax_m2.py``, docs/recording-issue13.md); the
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

from derender.core import parsers
from derender.core.parsers import engine, minimax, reasoning
from derender.core.parsers.engine import MAX_SPACE, MAX_VALUE
from derender.core.parsers.tools import ToolContext
from derender.core.state_codec import Reader, Writer
from derender.core.vocab import MARKUP
from tests.conftest import tokenizer, vocabulary
from tests.test_parser_dsml import TOOLS
from tests.test_parser_properties import PROPS
from tests.tool_streams import check_round_trips, check_written, feed_engine, requests, run_both

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
        state = engine.start(M2, True, mode)
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
    assert parsers.ENGINE_REASONING["minimax_m2"][1]({"enable_thinking": False})


def append_think(text: str, pieces: list[str] | None = None
                 ) -> tuple[str, str, list[tuple[str, Any]]]:
    """minimax_m2_append_think, then the minimax_m2 tool parser (engine.FOREIGN)."""
    fmt = reasoning.FORMATS["minimax_m2_append_think"]
    vocab = vocabulary("minimax-m2.7")
    split_state = reasoning.start(fmt, vocab, None, True)
    assert split_state is not None
    tool_state = engine.start(M2, True, engine.FOREIGN)
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
    assert parsers.ENGINE_FAMILY["minimax_m2"] == "minimax_m2"
    assert parsers.pairing_error("minimax_m2", "minimax_m2") is None
    assert parsers.pairing_error("minimax_m2", None) is None
    assert parsers.pairing_error("minimax_m2", "glm47") is not None
    assert parsers.engine_mode("minimax_m2", "minimax_m2") == engine.BOTH
    assert parsers.engine_mode("minimax_m2_append_think", "minimax_m2") == engine.FOREIGN
    assert parsers.engine_mode(None, "minimax_m2") == engine.TOOLS
    assert "minimax_m2_append_think" in parsers.REASONING_PARSERS
    assert parsers.FORMATS_BY_TAG[55] is M2


# --------------------------------------------------------------------------- bounds and states

SPELL = {marker: chr(0xE000 + MARKUP.index(marker)) for marker in MARKUP}


def test_think_tags_are_matched_as_their_single_tokens() -> None:
    vocab = vocabulary("minimax-m2.7")
    assert vocab.spelled("</think>") == SPELL["</think>"]
    context = ToolContext(tools=TOOLS, spell=SPELL)
    assert parse(THOUGHT + SPELL["</think>"] + PARIS, context)[:2] == (THOUGHT, "")
    # spelled by ordinary tokens, </think> is reasoning text
    assert parse(THOUGHT + "</think>x", context) == (THOUGHT + "</think>x", "", [])


def test_states_round_trip_and_stay_bounded_over_a_long_stream() -> None:
    text = ("Reasoning goes on. " * 800 + "</think>" + "Content, " * 800
            + block(invoke("set_config", ("label", "x" * 6000),
                           ("meta", '{"k": "' + "v" * 900 + '"}')))
            + PARIS)
    ids = tokenizer("minimax-m2.7").encode(text, add_special_tokens=False).ids
    assert len(ids) > 5000
    pieces = [tokenizer("minimax-m2.7").decode([i], skip_special_tokens=False) for i in ids]
    largest = 0

    def check(state: Any) -> None:
        nonlocal largest
        writer = Writer()
        M2.encode(state, writer)
        largest = max(largest, len(writer.out))
        assert M2.decode(Reader(bytes(writer.out))) == state

    thought, content, calls = feed_engine(M2, pieces, AUTO, True, check)
    assert thought == ("Reasoning goes on. " * 800).rstrip()
    assert content == ("Content, " * 800).rstrip()
    assert [name for name, _ in calls] == ["set_config", "get_weather"]
    assert json.loads(calls[0][1]) == {"label": "x" * 6000, "meta": {"k": "v" * 900}}
    assert largest < MAX_VALUE + 2 * MAX_SPACE + 256


def test_garbage_state_is_refused() -> None:
    """A state that no feed reaches is refused: an unknown phase or argument sub-phase,
    unknown flags, held or kept text past its bound, non-whitespace held as whitespace."""
    good = minimax.MinimaxM2State()
    for bad in (minimax.MinimaxM2State(phase=7), minimax.MinimaxM2State(sub=9),
                minimax.MinimaxM2State(flags=1 << engine.FLAG_BITS),
                minimax.MinimaxM2State(held="<" * (engine.MAX_HELD + 1)),
                minimax.MinimaxM2State(acc="x" * (MAX_VALUE + 1)),
                minimax.MinimaxM2State(space="x"), minimax.MinimaxM2State(rspace="\n</think>")):
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
    change = draw(st.sampled_from(["", "", "", "cut", "trail", "dirty"]))
    clean = change in ("", "trail")
    if change == "cut":
        text = text[:draw(st.integers(0, len(text)))]
    elif change == "trail":
        text += "Anything else?"
    elif change == "dirty":
        text += draw(st.sampled_from(["<minimax:tool_call>", '<invoke name="x">',
                                      "</parameter>", "<", "</think>", "<think>"]))
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
    finish = data.draw(st.sampled_from(["stop", "stop", "length"]), label="finish")
    ids = list(tokenizer(model).encode(text, add_special_tokens=False).ids)
    eos = vocabulary(model).eos_id
    assert eos is not None
    if finish == "stop" or not ids:
        ids.append(eos)
        finish = "stop"
    prompt = tokenizer(model).encode("Weather?", add_special_tokens=False).ids
    expected = run_both(client, model, ids, finish, prompt, request, data)
    if (clean and "<think>" not in text and "</think>" in text
            and reasoning_parser == "minimax_m2" and tool_parser is not None):
        check_written(expected, [[n, p] for n, p in written], request)
