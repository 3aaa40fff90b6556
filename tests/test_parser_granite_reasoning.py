"""IBM Granite 3.x's reasoning parser ``granite`` (vLLM 0.33's
``vllm/reasoning/granite_reasoning_parser.py``, a legacy parser): "Here is my thought
process:" … "Here is my response:" (or "Here's …"), ordinary text, read by ernie45's
``response`` machine with the markers as data (``reasoning.FORMATS["granite"]``:
``answer_is_reasoning``, ``response_alternatives``).

Expected values are vLLM's, as recorded in tests/fixtures/vllm-0.33 (case numbers in brackets,
docs/vllm-compat/granite.md) or, marked, the README compatibility rows (the bounds); the
replays themselves are in test_conformance.py. Here: the rules on the machine, whole and in
pieces, state round trips, the bounds, the record, and split invariance through the app on
``granite4-standin``, alone and with the ``granite`` tool parser.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers import reasoning
from derender.core.parsers.reasoning import MAX_ANSWER, MAX_PRE
from derender.core.state.codec import Reader, Writer
from derender_testing.models import tokenizer, vocabulary
from derender_testing.tool_streams import ids_of, requests, run_both, split
from tests.test_parser_properties import PROPS

GRANITE = "granite4-standin"
END_OF_TEXT = 100257
FMT = reasoning.FORMATS["granite"]
T, R = "Here is my thought process:", "Here is my response:"
T2, R2 = "Here's my thought process:", "Here's my response:"
THOUGHT = " The user wants Paris weather; I know it.\n\n"
PLAIN = " It is sunny in Paris, 22 °C."
CALL = '<tool_call> [{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}]'


def enc(text: str) -> list[int]:
    return list(tokenizer(GRANITE).encode(text, add_special_tokens=False).ids)


def think(text: str, size: int = 0) -> tuple[str, str]:
    """(reasoning, content) of ``text``, fed whole or in pieces of ``size`` and then finished,
    every state read back from its encoding."""
    state = reasoning.start(FMT, vocabulary(GRANITE), None, True)
    assert state is not None
    thought = content = ""
    pieces = [*split(text, size), ""]
    for k, piece in enumerate(pieces):
        delta, state = reasoning.feed(FMT, state, piece, k == len(pieces) - 1, {})
        thought, content = thought + delta.reasoning, content + delta.content
        w = Writer()
        reasoning.encode(state, w)
        assert reasoning.decode(state.reasoning, Reader(bytes(w.out))) == state
    return thought, content


@pytest.mark.parametrize("size", [0, 1, 2, 3, 7])
def test_the_rules(size: int) -> None:
    """[9200, 9202, 9204] either spelling of either marker; [9206] no marker: content;
    [9208, 9230, 9232] no response marker: the output as written is content; [9210] text
    before the thought marker dropped; [9212] a response marker before it is text; [9214] an
    empty reasoning (vLLM: "", ours null, README); [9216, 9218] the content after the
    response marker as written; [9220] a second response marker is content; [9222] a second
    thought marker is reasoning; [9224] near-markers are text; [9226] unicode."""
    assert think(T + THOUGHT + R + PLAIN, size) == (THOUGHT, PLAIN)
    assert think(T2 + THOUGHT + R2 + PLAIN, size) == (THOUGHT, PLAIN)
    assert think(T + THOUGHT + R2 + PLAIN, size) == (THOUGHT, PLAIN)
    assert think(PLAIN.strip(), size) == ("", PLAIN.strip())
    assert think(T + THOUGHT, size) == ("", T + THOUGHT)
    assert think(T + THOUGHT + "Here is my res", size) == ("", T + THOUGHT + "Here is my res")
    assert think("Sure thing. " + T + THOUGHT + R + PLAIN, size) == (THOUGHT, PLAIN)
    out = R + PLAIN + " " + T + THOUGHT
    assert think(out, size) == ("", out)
    assert think(T + R + PLAIN, size) == ("", PLAIN)
    assert think(T + THOUGHT + R, size) == (THOUGHT, "")
    assert think(T + THOUGHT + R + "  ", size) == (THOUGHT, "  ")
    assert think(T + THOUGHT + R + PLAIN + "\n" + R + " again.", size) == (
        THOUGHT, PLAIN + "\n" + R + " again.")
    assert think(T + " a. " + T + " b. " + R + PLAIN, size) == (" a. " + T + " b. ", PLAIN)
    assert think("Here is my thought: x. " + T + " Here is my resp" + R + PLAIN, size) == (
        " Here is my resp", PLAIN)
    wide = " Zürich 東京 😀🎉 \U0001f9ea\n"
    assert think(T + wide + R + wide, size) == (wide, wide)


@pytest.mark.parametrize("size", [0, 1, 5, 64])
def test_the_bounds(size: int) -> None:
    """README compatibility ("granite" reasoning bounds): a thought marker is read only within
    ``MAX_PRE`` characters of the output's start; reasoning is held for its response marker
    up to ``MAX_ANSWER`` characters, past them it goes out as reasoning and stays so (vLLM,
    without a response marker: all content); with the marker, any length is read as vLLM
    does [9228]."""
    long = "x" * MAX_ANSWER
    assert think(T + long + "y" + R + PLAIN, size) == (long + "y", PLAIN)
    assert think(T + long, size) == ("", T + long)
    assert think(T + long + "😀", size) == (long + "😀", "")
    lead = "a" * (MAX_PRE - 1) + " "
    assert think(lead + T + THOUGHT + R + PLAIN, size) == (THOUGHT, PLAIN)
    far = lead + "b" + T + THOUGHT + R + PLAIN
    assert think(far, size) == ("", far)


def test_held_state_is_bounded() -> None:
    """The held text never passes the bounds (plus a marker's length), whatever is fed."""
    state = reasoning.start(FMT, vocabulary(GRANITE), None, True)
    assert state is not None
    for piece in ["😀" * 100] * 3 + [T] + ["😀" * 50] * 20:
        _, state = reasoning.feed(FMT, state, piece, False, {})
        assert len(state.kept) <= MAX_PRE + len(T) + MAX_ANSWER


def test_the_record() -> None:
    """A legacy parser (vLLM's is not engine-based): with the granite tool parser, calls are
    read only when they may be returned [9250, 9252]; any tool parser pairs with it."""
    record = parsers.reasoning_record("granite")
    assert record is not None and record.legacy
    assert record.format is not None and record.format.load() is FMT
    assert parsers.pairing_error("granite", "granite") is None
    assert parsers.pairing_error("granite", "hermes") is None


PARTS = [T, R, T2, R2, "Here", " is my", " thought process", ":", " response", "Hi 😀", "\n",
         " ", CALL, "Sunny."]


@pytest.mark.parametrize("tool_parser", ["granite", None])
@PROPS
@given(data=st.data())
def test_granite_stream_folds_to_message(client_for: Any, tool_parser: str | None,
                                         data: st.DataObject) -> None:
    client = client_for(GRANITE, "granite", tool_parser)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"},
                                         "unit": {"type": "string"}}}}}]
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], tools),
                        label="chat_request")
    if tool_parser is None:
        request.pop("tools", None)
        request.pop("tool_choice", None)
    parts = data.draw(st.lists(st.sampled_from(PARTS), max_size=8), label="parts")
    finish = data.draw(st.sampled_from(["stop", "length"]), label="finish")
    ids = ids_of(parts, enc)
    if finish == "stop" or not ids:
        ids.append(END_OF_TEXT)
        finish = "stop"
    run_both(client, GRANITE, ids, finish, enc("<|start_of_role|>assistant<|end_of_role|>"),
             request, data)
