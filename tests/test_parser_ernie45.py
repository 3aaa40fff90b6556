"""The ``ernie45`` tool and reasoning parsers. Expected values are vLLM 0.33's answers as
recorded in tests/fixtures/vllm-0.33 (cases 5400-5517, cited by number; the rules read in
vLLM's parsers are in docs/vllm-compat/ernie45.md) and, marked, the README
compatibility rows where we differ on purpose. The tool machine is hermes' (``hermes.ERNIE45``:
``whole``); the reasoning is ``reasoning.FORMATS["ernie45"]`` (deepseek_r1's rules and the
content's ``<response>`` answer). Then: split invariance of both machines and through the app,
state round trips, bounded state, the registry. The model is ``ernie45-standin`` (GPT-2's
vocabulary with ERNIE's markers appended; a stand-in, not ERNIE's ids).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers import reasoning
from derender.core.parsers.formats import hermes
from derender.core.parsers.primitives import MAX_LEADING_SPACE
from derender.core.parsers.registry import MARKUP, REASONING_BY_NAME, TOOLS_BY_TAG
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.tool_streams import check_round_trips, feed_all, requests, run_both
from tests.test_parser_rules import ids_of

MODEL = "ernie45-standin"
EOS = 50256
SPELL = {marker: chr(0xE000 + MARKUP.index(marker)) for marker in MARKUP}
OPEN, CLOSE = SPELL["<tool_call>"], SPELL["</tool_call>"]
R, END_R = SPELL["<response>"], SPELL["</response>"]
CONTEXT = ToolContext(spell=SPELL)
FMT = hermes.ERNIE45
REASONING = reasoning.FORMATS["ernie45"]
PARIS = '{"city": "Paris", "unit": "c"}'
P = json.loads(PARIS)
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}}}}
PING = {"type": "function", "function": {
    "name": "get_time", "parameters": {"type": "object", "properties": {}}}}
MESSAGES = [{"role": "user", "content": "What's the weather in Paris? Then set the config."}]
THOUGHT = "The user wants Paris weather; call the tool."
ANSWER = "It is sunny in Paris, 22 °C 🌞."


def call(name: str, args: str, around: str = "\n") -> str:
    return f'{OPEN}{around}{{"name": "{name}", "arguments": {args}}}{around}{CLOSE}'


def read(text: str, size: int = 0) -> tuple[str, list[list[Any]]]:
    """Content and calls (arguments as JSON where they are JSON) of the machine fed ``text``
    (in pieces of ``size``, 0: whole)."""
    pieces = [text[i:i + size] for i in range(0, len(text), size)] if size else [text]
    content, calls = feed_all(FMT, pieces or [""], CONTEXT, names_first=True)
    return content, [[name, _json(args)] for name, args in calls]


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def think(parts: list[str]) -> tuple[str, str]:
    """Reasoning and content of the ernie45 reasoning machine fed ``parts`` (the last final;
    markers as plain text), every state read back from its encoding."""
    state = reasoning.start(REASONING, parsers_vocab(), None, True)
    assert state is not None
    out: list[tuple[str, str]] = []
    for k, part in enumerate(parts):
        delta, state = reasoning.feed(REASONING, state, part, k == len(parts) - 1, {})
        out.append((delta.reasoning, delta.content))
        w = Writer()
        reasoning.encode(state, w)
        assert reasoning.decode(state.reasoning, Reader(bytes(w.out))) == state
    return "".join(r for r, _ in out), "".join(c for _, c in out)


def parsers_vocab() -> Any:
    from derender_testing.models import vocabulary
    return vocabulary(MODEL)


# --------------------------------------------------------------------------- as vLLM


def test_calls_as_vllm() -> None:  # 5400, 5402, 5404, 5412
    assert read(call("get_weather", PARIS)) == ("", [["get_weather", P]])
    compact = OPEN + '{"name":"get_weather","arguments":{"city":"Paris","unit":"c"}}' + CLOSE
    assert read(compact) == ("", [["get_weather", P]])
    two = call("get_weather", '{"city": "Zürich"}') + "\n" + call("get_time", "{}")
    assert read(two) == ("", [["get_weather", {"city": "Zürich"}], ["get_time", {}]])


def test_arguments_written_anew() -> None:  # 5402: vLLM's json.dumps, not the model's text
    compact = OPEN + '{"name":"get_weather","arguments":{"city":"Paris","unit":"c"}}' + CLOSE
    _, calls = feed_all(FMT, [compact], CONTEXT)
    assert calls == [["get_weather", '{"city": "Paris", "unit": "c"}']]


def test_text_around_the_calls() -> None:  # 5414, 5416, 5418, 5420, 5422
    single = call("get_weather", PARIS)
    assert read("Let me check the weather for you.\n\n" + single) == (
        "Let me check the weather for you.", [["get_weather", P]])
    assert read("Checking now. \n \n" + single) == ("Checking now. \n ", [["get_weather", P]])
    assert read(single + "\nI will report back shortly.") == ("", [["get_weather", P]])
    between = call("get_weather", '{"city": "Rome"}') + "\nand then\n" + call("get_time", "{}")
    assert read(between) == ("", [["get_weather", {"city": "Rome"}], ["get_time", {}]])
    assert read("\n\n" + single) == ("", [["get_weather", P]])
    assert read("It is sunny.\n\n") == ("It is sunny.\n\n", [])  # 5426


def test_fill_ins_and_key_order() -> None:  # 5428, 5430, 5432, 5434
    assert read(OPEN + '{"arguments": {"city": "Paris"}, "name": "get_weather"}' + CLOSE) == (
        "", [["get_weather", {"city": "Paris"}]])
    assert read(OPEN + '{"name": "get_time"}' + CLOSE) == ("", [["get_time", {}]])
    assert read(OPEN + '{"arguments": {"city": "Paris"}}' + CLOSE) == (
        "", [["", {"city": "Paris"}]])
    assert read(OPEN + '{"name": "get_weather", "arguments": "Paris"}' + CLOSE) == (
        "", [["get_weather", "Paris"]])


def test_calls_never_closed_or_not_objects_are_dropped() -> None:  # 5440-5450
    cut = OPEN + '{"name": "get_weather", "arguments": ' + PARIS + "}"
    assert read("Checking.\n" + cut) == ("Checking.", [])
    assert read(call("get_weather", PARIS) + "\n" + OPEN + '{"name": "get_time"') == (
        "", [["get_weather", P]])
    assert read(OPEN + "get_weather(city='Paris')" + CLOSE) == ("", [])
    assert read(OPEN + '\n{"name": "get_wea') == ("", [])
    assert read(OPEN + '\n{"name": "get_weather", "arguments": {"city": "Par') == ("", [])


def test_unreadable_calls_alone() -> None:  # 5436: its text is the content, as in vLLM
    bad = OPEN + "{'name': 'get_weather', 'arguments': {}}" + CLOSE
    assert read(bad) == (bad, [])


def test_differences_on_purpose() -> None:
    # README ernie45 row: an unreadable call after a readable one keeps the readable one
    # (vLLM: no call, the whole output as content, 5438)
    bad = OPEN + '{"name": "get_time", "arguments": {,}}' + CLOSE
    assert read(call("get_weather", PARIS) + bad) == (bad, [["get_weather", P]])
    # a call whose closing tag is not within MAX_HEAD characters streams as hermes' and keeps
    # the arguments read so far when cut off (vLLM drops it)
    long = '{"city": "' + "x" * hermes.MAX_HEAD + '"'
    assert read(OPEN + '{"name": "get_weather", "arguments": ' + long) == (
        "", [["get_weather", long]])
    # more than MAX_LEADING_SPACE newlines before a call: the first are content
    many = "\n" * (MAX_LEADING_SPACE + 3)
    assert read("Hi" + many + call("get_time", "{}")) == ("Hi\n\n\n", [["get_time", {}]])


def test_reasoning_as_vllm() -> None:  # 5472-5500
    lead = THOUGHT + "\n</think>\n\n\n"
    assert think([lead]) == (THOUGHT + "\n", "\n\n\n")
    assert think([THOUGHT + "\n</think>\n\n<response>\n" + ANSWER + "\n</response>\n"]) == (
        THOUGHT + "\n", "\n" + ANSWER + "\n")
    assert think([THOUGHT + "\n</think>\n" + ANSWER]) == (THOUGHT + "\n", "\n" + ANSWER)
    assert think([lead + "Intro. <response>" + ANSWER + "</response> outro"]) == (
        THOUGHT + "\n", ANSWER)
    assert think([lead + "<response>" + ANSWER]) == (
        THOUGHT + "\n", "\n\n\n<response>" + ANSWER)
    assert think([lead + "<response>A</response> mid </response> end"]) == (
        THOUGHT + "\n", "A</response> mid ")
    assert think([lead + "</response> x <response>" + ANSWER]) == (
        THOUGHT + "\n", "\n\n\n</response> x <response>" + ANSWER)
    assert think([THOUGHT + " still thinking"]) == (THOUGHT + " still thinking", "")


def test_reasoning_bounds() -> None:
    """README ernie45 row: past each hold's bound the content goes out as if the markers say
    so, and the whole text applies the same bounds."""
    lead = THOUGHT + "</think>"
    late = "x" * (reasoning.MAX_PRE + 1)
    assert think([lead + late + "<response>A</response>"]) == (
        THOUGHT, late + "<response>A</response>")
    long = "y" * (reasoning.MAX_ANSWER + 1)
    assert think([lead + "<response>" + long]) == (THOUGHT, long)
    after = "z" * (reasoning.MAX_AFTER + 1)
    assert think([lead + "<response>A</response>" + after]) == (THOUGHT, "A</response>" + after)


# --------------------------------------------------------------------------- split invariance

PIECES = ["Hi", " ", "\n", "\n\n", " " * 130, PARIS, "{", "}",
          '{"name": "get_weather", "arguments": ', '{"name": "g", "arguments": {}}',
          '{"arguments": 1}', "'", '"', "😀", OPEN, CLOSE, "<tool_call"]
texts = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)


def _cut(text: str, data: st.DataObject) -> list[str]:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(text)]
    return [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]


@settings(max_examples=400, deadline=None)
@given(text=texts, data=st.data())
def test_any_split_of_a_text_reads_as_the_whole(text: str, data: st.DataObject) -> None:
    pieces = _cut(text, data)
    assert feed_all(FMT, [text], CONTEXT, names_first=True) == feed_all(
        FMT, pieces, CONTEXT, names_first=True)
    check_round_trips(FMT, pieces, CONTEXT)


R_PIECES = ["ok", " ", "\n", "x" * 100, "😀", "</think>", "<think>", "<response>", "</response>",
            "<resp", "</resp",
            "y" * 300]
r_texts = st.lists(st.sampled_from(R_PIECES), max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=r_texts, data=st.data())
def test_any_split_of_a_reasoning_text_reads_as_the_whole(text: str, data: st.DataObject
                                                          ) -> None:
    assert think(_cut(text, data) or [""]) == think([text])


def test_state_stays_small_over_a_long_stream() -> None:
    """5,000 pieces of an answer after reasoning, and of a call's arguments: the states never
    grow with the output."""
    state = reasoning.start(REASONING, parsers_vocab(), None, True)
    assert state is not None
    largest = 0
    for piece in ["Hmm", "</think>", "\n", R] + ["Zürich 東京 😀 "] * 5000 + [END_R, " bye"]:
        _, state = reasoning.feed(REASONING, state, piece, False, SPELL)
        assert state.answer in (reasoning.PRE, reasoning.IN, reasoning.OPEN, reasoning.POST)
        w = Writer()
        reasoning.encode(state, w)
        largest = max(largest, len(w.out))
    assert largest < 2500
    tool = FMT.start()
    pieces = ["Lead text 🌦 ", OPEN, '{"name": "get_weather", "arguments": {"city": "']
    for piece in pieces + ["Zürich 東京 "] * 5000 + ['"}}', CLOSE, "\n"] + ["and 😀 "] * 5000:
        _, _, tool = FMT.feed(tool, piece, False, CONTEXT)
        w = Writer()
        FMT.encode(tool, w)
        largest = max(largest, len(w.out))
    assert largest < 5000


@pytest.fixture(scope="module")
def ernie(client_for: Any) -> Any:
    return client_for(MODEL, "ernie45", "ernie45")


@st.composite
def outputs(draw: st.DrawFn) -> tuple[list[str | int], list[list[Any]]]:
    parts: list[str | int] = [draw(st.sampled_from(["", THOUGHT + "\n</think>\n\n\n",
                                                    "<think>\n" + THOUGHT + "</think>"]))]
    parts.append(draw(st.sampled_from(["", "", "\n", "Let me check 🌦.\n\n"])))
    written: list[list[Any]] = []
    if draw(st.integers(0, 3)) == 0:
        parts.append(draw(st.sampled_from(["<response>\n" + ANSWER + "\n</response>\n",
                                           "<response>" + ANSWER, ANSWER + "</response>"])))
        return [p for p in parts if p != ""], written
    for _ in range(draw(st.integers(0, 3))):
        name, args = draw(st.sampled_from([
            ("get_weather", PARIS), ("get_weather", '{"city": "Zürich 東京 😀"}'),
            ("get_time", "{}")]))
        parts.append(f'<tool_call>{draw(st.sampled_from(["", chr(10)]))}'
                     f'{{"name": "{name}", "arguments": {args}}}')
        if draw(st.integers(0, 4)):
            parts.append(draw(st.sampled_from(["</tool_call>", "\n</tool_call>\n"])))
            written.append([name, json.loads(args)])
        else:
            break
    if not parts[0]:  # no </think>: the whole output is reasoning (5496, 5498)
        written = []
    return [p for p in parts if p != ""], written


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_split_of_the_output_folds_to_the_message(ernie: Any, data: st.DataObject) -> None:
    parts, written = data.draw(outputs(), label="output")
    request = data.draw(requests(MESSAGES, [WEATHER, PING]), label="chat_request")
    ids = [*ids_of(*parts, name=MODEL), EOS]
    choice = run_both(ernie, MODEL, ids, "stop", [1], request, data)
    if request.get("tools") and request.get("tool_choice", "auto") == "auto":
        calls = [[c["function"]["name"], json.loads(c["function"]["arguments"])]
                 for c in choice["message"].get("tool_calls") or []]
        want = written[:1] if request.get("parallel_tool_calls") is False else written
        assert calls == json.loads(json.dumps(want))


def test_registered_as_vllm_names_it() -> None:
    assert parsers.tool_format("ernie45") is FMT
    assert TOOLS_BY_TAG[parsers.tag_of("ernie45")].name == "ernie45"
    assert REASONING_BY_NAME["ernie45"].name == "ernie45"
    with pytest.raises(ValueError, match="not a ernie45 state"):
        FMT.step(hermes.FORMAT.start(), "x", False, CONTEXT)
