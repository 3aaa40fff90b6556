"""The ``cohere_command3`` / ``cohere_command4`` tool and reasoning parsers: one machine,
``formats/cohere.py`` (vLLM 0.33 reads them with ``cohere_melody``'s ``cmd3`` / ``cmd4`` filters).
Expected values are vLLM 0.33's messages as recorded in tests/fixtures/vllm-0.33 (cases
9600-9799, cited by number; the conformance replay checks every one through the app) and,
marked, the README compatibility rows where we differ on purpose. Then: split invariance (any
split of any output folds to the whole output's answer, markers as single tokens and as text),
state round trips, the bounds (``MAX_*``) and pairing. The model is ``cohere-standin`` (a
stand-in vocabulary: GPT-2's with Cohere's special tokens, most ids unverified).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers.formats import cohere
from derender.core.parsers.registry import MARKUP
from derender.core.parsers.tools import ToolContext, ToolFormat
from derender.core.state.codec import Reader, Writer, utf8_size

SPELL = {marker: chr(0xE000 + MARKUP.index(marker)) for marker in MARKUP}
T, ET, R, ER, A, EA, TX, ETX = (SPELL[m] for m in (
    cohere.START_THINKING, cohere.END_THINKING, cohere.START_RESPONSE, cohere.END_RESPONSE,
    cohere.START_ACTION, cohere.END_ACTION, cohere.START_TEXT, cohere.END_TEXT))
KEEP = ToolContext(spell=SPELL)
PLAIN = ToolContext()  # no marker a single token: markers spelled as text
THOUGHT = "The user wants Paris weather; I will call the tool."
ANSWER = "It is sunny in Paris, 22 °C."
PARIS = '{"city": "Paris", "unit": "c"}'
CALL = '{"tool_call_id": "0", "tool_name": "get_weather", "parameters": ' + PARIS + "}"
SINGLE = T + THOUGHT + ET + A + "[\n    " + CALL + "\n]" + EA
Call = tuple[str | None, str, str]


def read(pieces: list[str], fmt: ToolFormat[cohere.CohereState] = cohere.CMD4_FORMAT,
         context: ToolContext = KEEP) -> tuple[str, str, list[Call]]:
    """Reasoning, content and calls (id, name, arguments) of the machine fed ``pieces``, the
    last one final; every state reached encodes and decodes to itself."""
    assert fmt.feed_reasoning is not None
    state = fmt.start()
    reasoning = content = ""
    calls: list[list[str | None]] = []
    for k, piece in enumerate(pieces):
        more, out, deltas, state = fmt.feed_reasoning(state, piece, k == len(pieces) - 1,
                                                      context)
        writer = Writer()
        cohere.encode(state, writer)
        reader = Reader(bytes(writer.out))
        assert fmt.decode(reader) == state and reader.pos == len(writer.out)
        reasoning, content = reasoning + more, content + out
        for delta in deltas:
            if delta.index == len(calls):
                assert delta.name is not None
                calls.append([delta.id, delta.name, delta.arguments])
            else:
                assert delta.index < len(calls) and delta.name is None
                calls[delta.index][2] = str(calls[delta.index][2]) + delta.arguments
    return reasoning, content, [(c[0], str(c[1]), str(c[2])) for c in calls]


def whole(text: str, fmt: ToolFormat[cohere.CohereState] = cohere.CMD4_FORMAT,
          context: ToolContext = KEEP) -> tuple[str, str, list[Call]]:
    return read([text], fmt, context)


def spelled(text: str) -> str:
    """``text`` with the markers written as text (a vocabulary without them as tokens)."""
    return text.translate({ord(SPELL[m]): m for m, _ in cohere.CMD4.switches})


# --------------------------------------------------------------------------- vLLM's messages


def test_reasoning_then_a_call() -> None:  # 9600, 9684
    for fmt in (cohere.CMD3_FORMAT, cohere.CMD4_FORMAT):
        assert whole(SINGLE, fmt) == (THOUGHT, "", [("0", "get_weather", PARIS)])


def test_arguments_are_the_raw_object() -> None:  # 9696, 9694, 9730, 9732
    compact = ('[{"tool_call_id":"0","tool_name":"get_weather","parameters":'
               '{ "city" :  "Paris","unit":"c"}}]')
    assert whole(A + compact + EA)[2] == [("0", "get_weather", '{ "city" :  "Paris","unit":"c"}')]
    empty = '[{"tool_call_id": "0", "tool_name": "get_time", "parameters": {}}]'
    assert whole(A + empty + EA)[2] == [("0", "get_time", "")]
    text = '[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": "Paris"}]'
    assert whole(A + text + EA)[2] == [("0", "get_weather", "")]
    broken = '[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": }]'
    assert whole(A + broken + EA)[2] == [("0", "get_weather", '{"city": }]')]


def test_melody_scan_order() -> None:  # 9726, 9728, 9746, 9748
    order = '[{"tool_name": "get_weather", "parameters": {"city": "Paris"}, "tool_call_id": "0"}]'
    assert whole(A + order + EA)[2] == [("0", "", "")]
    assert whole(A + '[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]' + EA
                 )[2] == []
    assert whole(A + '[\n    {"tool_call_id": "0", "tool_name": "get_we')[2] == [("0", "", "")]
    cut = A + '[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Par'
    assert whole(cut)[2] == [("0", "get_weather", '{"city": "Par')]


def test_sections_and_whitespace() -> None:  # 9614, 9704, 9616, 9706, 9624, 9722, 9630, 9720
    assert whole(ANSWER, cohere.CMD3_FORMAT) == ("", ANSWER, [])
    assert whole(ANSWER) == (ANSWER, "", [])
    before = "Let me check. " + A + "[\n    " + CALL + "\n]" + EA
    assert whole(before, cohere.CMD3_FORMAT)[:2] == ("", "Let me check.")
    assert whole(before)[:2] == ("Let me check.", "")
    spaced = T + "\n " + THOUGHT + " \n" + ET + "\n" + R + "\n" + ANSWER + "\n" + ER
    assert whole(spaced) == (THOUGHT, "\n" + ANSWER, [])
    assert whole(R + ANSWER + ER + " trailing") == ("", ANSWER, [])
    text = T + THOUGHT + ET + TX + ANSWER + ETX
    assert whole(text) == (THOUGHT, ANSWER, [])
    assert whole(spelled(text), cohere.CMD3_FORMAT, PLAIN)[1] == (
        cohere.START_TEXT + ANSWER + cohere.END_TEXT)


def test_citations() -> None:  # 9626, 9628
    text = (T + "I saw <co>rain</co: 1:[0]> in the notes." + ET
            + R + "It is <co>sunny</co: 0:[0,1]> today, <co: 0:[2]>22 °C</co: 0:[2]>." + ER)
    assert whole(text) == ("I saw rain in the notes.",
                           "It is sunny today, <co: 0:[2]>22 °C</co: 0:[2]>.", [])
    assert whole(R + "a < b and <b>bold</b> <co" + ER)[1] == "a < b and <b>bold</b> <co"


def test_calls_in_reasoning_and_after_answers() -> None:  # 9634, 9620, 9622
    inside = T + "I could " + A + "[\n    " + CALL + "\n]" + EA + ET + R + ANSWER + ER
    assert whole(inside) == ("I could", ANSWER, [("0", "get_weather", PARIS)])
    time = '{"tool_call_id": "1", "tool_name": "get_time", "parameters": {}}'
    two = SINGLE + A + "[\n    " + time + "\n]" + EA
    assert whole(two)[2] == [("0", "get_weather", PARIS), ("1", "get_time", "")]


# --------------------------------------------------------------------------- any split

PIECES = [T, ET, R, ER, A, EA, TX, ETX, THOUGHT, ANSWER, CALL, "[", "]", ", ", "\n    ", " ",
          "\n", "<co>", "</co: 0:[1]>", "<co", "</co", "<", ">", '"tool_call_id": "',
          '"tool_name": "', '"parameters": {"', "}", '\\"', "\\", '"', "Zürich 😀 ",
          "\U0001F600" * 300]
"""Markup pieces, and long runs that cross the bounds (``MAX_HELD``, ``MAX_ACTION``,
``MAX_SPACE``)."""
texts = st.lists(st.sampled_from(PIECES), max_size=16).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=texts, data=st.data())
def test_any_split_reads_as_the_whole(text: str, data: st.DataObject) -> None:
    fmt = data.draw(st.sampled_from([cohere.CMD3_FORMAT, cohere.CMD4_FORMAT]), label="fmt")
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=10), label="cuts"))
    bounds = [0, *cuts, len(text)]
    pieces = [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    expected = whole(text, fmt)
    if utf8_size(text) <= min(cohere.MAX_HELD, cohere.MAX_ACTION):
        assert read(pieces, fmt) == expected
        assert read([spelled(p) for p in pieces], fmt, PLAIN) == whole(spelled(text), fmt,
                                                                        PLAIN)
    else:  # past a bound only the state's size is promised (README compatibility)
        read(pieces, fmt)


# --------------------------------------------------------------------------- bounds

WIDE = "\U0001F600"


def _largest_state(pieces: list[str]) -> int:
    fmt = cohere.CMD4_FORMAT
    assert fmt.feed_reasoning is not None
    state, largest = fmt.start(), 0
    for piece in pieces:
        _, _, _, state = fmt.feed_reasoning(state, piece, False, KEEP)
        writer = Writer()
        cohere.encode(state, writer)
        largest = max(largest, len(writer.out))
    return largest


def test_held_text_is_bounded() -> None:
    """README compatibility: a citation's markup is held for ``MAX_HELD`` bytes, an action for
    ``MAX_ACTION``, whitespace for ``MAX_SPACE``; past them the stream goes on, the state
    bounded."""
    limit = 2 * cohere.MAX_ACTION + cohere.MAX_HELD + cohere.MAX_SPACE + 64
    assert _largest_state([R, "<co>"] + [WIDE] * 600) < limit
    assert _largest_state([A, '[{"tool_call_id": "0", "tool_name": "f", "parameters": {"a": "']
                          + [WIDE] * 800) < limit
    assert _largest_state([R, "x"] + [" "] * 400) < limit
    long = R + "<co>" + WIDE * 400 + "</co: 0:[1]>" + ER
    assert whole(long)[1] == WIDE * 400
    assert read([long[:5], long[5:]])[1] == WIDE * 400
    assert read([long[:-20], long[-20:]])[1] == "<co>" + WIDE * 400 + "</co: 0:[1]>"


def test_state_stays_small_over_a_long_stream() -> None:
    assert _largest_state([T] + ["Zürich 東京 😀 "] * 1000 + [ET, R] + ["x y "] * 1000) < 64


# --------------------------------------------------------------------------- registry


@pytest.mark.parametrize(("reasoning_parser", "tool_parser", "refused"), [
    ("cohere_command3", "cohere_command3", None), ("cohere_command4", "cohere_command4", None),
    ("cohere_command4", None, None), (None, "cohere_command4", None),
    ("cohere_command4", "hermes", None), ("cohere_command3", "cohere_command4", None),
    ("qwen3", "cohere_command4", "cannot be combined (vLLM reads cohere_command4 only alone "
     "or after cohere_command3, cohere_command4)"),
])
def test_pairing(reasoning_parser: str | None, tool_parser: str | None,
                 refused: str | None) -> None:
    error = parsers.pairing_error(reasoning_parser, tool_parser)
    assert (error is None) if refused is None else (error is not None and refused in error)
