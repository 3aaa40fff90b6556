"""The ``hunyuan_a13b`` tool parser (``formats/json_wrapped.py``, ``HUNYUAN_A13B``: jamba's
grammar as data) and reasoning parser (``reasoning.FORMATS["hunyuan_a13b"]``). Expected
values are vLLM 0.33's answers as recorded in
tests/fixtures/vllm-0.33 (cases 5520-5619, cited by number; the rules read in vLLM's
``hunyuan_a13b_tool_parser.py`` are in docs/vllm-compat/json_wrapped.md) and, marked, the
README compatibility rows where we differ on purpose. Then: split invariance through the app
and of the machine, state round trips, bounded state, the registry. The model is
``hunyuan-a13b-standin`` (GPT-2's vocabulary as it is: the markers are text there, as
Hunyuan's think and answer tags are in its own vocabulary).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers import reasoning
from derender.core.parsers.formats import json_wrapped
from derender.core.parsers.registry import REASONING_BY_NAME, TOOLS_BY_TAG
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.models import tokenizer, vocabulary
from derender_testing.tool_streams import check_round_trips, feed_all, requests, run_both
from tests.test_parser_json_wrapped import ELEMENTS, MESSAGES, NAMED, REQUIRED, WEATHER

MODEL = "hunyuan-a13b-standin"
EOS = 50256
FMT = json_wrapped.HUNYUAN_A13B_FORMAT
AUTO = ToolContext()
PARIS = '{"city": "Paris", "unit": "c"}'
CALL = '{"name": "get_weather", "arguments": ' + PARIS + "}"
PING = '{"name": "get_time", "arguments": {}}'
OPEN, CLOSE = "<tool_calls>", "</tool_calls>"


def read(text: str, context: ToolContext = AUTO) -> tuple[str, list[list[str]]]:
    return feed_all(FMT, [text, ""], context, names_first=True)


def block(*calls: str) -> str:
    return OPEN + "[" + ", ".join(calls) + "]" + CLOSE


def test_calls_and_the_text_around_them() -> None:  # 5520-5538, 5562, 5590
    assert read(block(CALL)) == ("", [["get_weather", PARIS]])
    assert read(block(CALL, PING))[1] == [["get_weather", PARIS], ["get_time", "{}"]]
    assert read("Let me check the weather for you.\n" + block(CALL)) == (
        "Let me check the weather for you.\n", [["get_weather", PARIS]])
    assert read("\n\n" + block(CALL)) == ("", [["get_weather", PARIS]])
    assert read(block(CALL) + "\nI will report back shortly.") == ("", [["get_weather", PARIS]])
    assert read(OPEN + "\n [" + CALL + "]\n" + CLOSE)[1] == [["get_weather", PARIS]]
    assert read(block(CALL) + " " + block(PING)) == ("", [["get_weather", PARIS]])
    flipped = '{"arguments": {"city": "Paris"}, "name": "get_weather"}'
    assert read(block(flipped))[1] == [["get_weather", '{"city": "Paris"}']]


def test_text_that_is_no_list_of_calls_is_content() -> None:  # 5540, 5542, 5554, 5556, 5568
    for text in ("It is sunny in Paris [source: météo], 22 °C. 😀",
                 "助手：It is sunny. 助手：again", "Hi " + OPEN + CALL + CLOSE,
                 OPEN + "not json at all" + CLOSE + " trailing",
                 OPEN + '[{"name": "get_wea'):
        assert read(text) == (text, [])


def test_differences_on_purpose() -> None:
    """README hunyuan_a13b row (vLLM's message in brackets)."""
    # an element without "arguments" ends the reading: all content [vLLM skips it, 5548]
    skipped = block('{"name": "get_time"}', CALL)
    assert read(skipped) == (skipped, [])
    # string arguments stay JSON ['Paris', 5550]
    assert read(block('{"name": "get_weather", "arguments": "Paris"}'))[1] == [
        ["get_weather", '"Paris"']]
    # an empty list is no content [the whole text, 5552]
    assert read("Hi " + OPEN + "[]" + CLOSE) == ("Hi ", [])
    # a list without its closing tag, or cut off, keeps its calls [the whole text, 5560, 5570]
    assert read("Hi " + OPEN + "[" + CALL + "]") == ("Hi ", [["get_weather", PARIS]])
    assert read(OPEN + '[{"name": "get_weather", "arguments": {"city": "Par') == (
        "", [["get_weather", '{"city": "Par']])
    # a list inside <think>…</think> is read [content, 5564]
    assert read("<think>maybe " + block(CALL) + "</think>ok") == (
        "<think>maybe ", [["get_weather", PARIS]])


@pytest.fixture(scope="module")
def hunyuan(client_for: Any) -> Any:
    return client_for(MODEL, None, "hunyuan_a13b")


@st.composite
def outputs(draw: st.DrawFn) -> str:
    """Text, ``<tool_calls>`` with a list of 0-3 elements (calls or not) and ``</tool_calls>``
    (or not), maybe cut or followed by text."""
    parts = [draw(st.sampled_from(["", "", "Sure. ", "\n", "[1, 2] "]))]
    if draw(st.integers(0, 5)):
        parts += [OPEN, draw(st.sampled_from(["[", " [", "{", "x"])) + ", ".join(
            draw(st.lists(st.sampled_from(ELEMENTS), max_size=3))) + "]"]
        if draw(st.integers(0, 3)):
            parts.append(CLOSE)
    parts.append(draw(st.sampled_from(["", "", " Done.", " <tool_calls>"])))
    text = "".join(parts)
    if draw(st.integers(0, 4)) == 0:
        text = text[:draw(st.integers(0, len(text)))]
    return text


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_split_of_the_output_folds_to_the_message(hunyuan: Any, data: st.DataObject
                                                      ) -> None:
    text = data.draw(outputs(), label="output")
    request = data.draw(requests(MESSAGES, [WEATHER]), label="chat_request")
    ids = tokenizer(MODEL).encode(text, add_special_tokens=False).ids
    run_both(hunyuan, MODEL, [*ids, EOS], "stop", [1], request, data)


PIECES = ["Hi", " ", "\n", " " * 130, OPEN, CLOSE, "<tool_", "[", "]", ",", CALL, PING, "{", "}",
          '"', '{"name": "g', '", "arguments": ', '{"arguments": {}, "name": "h"}', "𝄞"]


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(PIECES), max_size=14).map("".join),
       context=st.sampled_from([AUTO, AUTO, REQUIRED, NAMED]), data=st.data())
def test_any_split_of_a_text_reads_as_the_whole(text: str, context: ToolContext,
                                                data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(text)]
    pieces = [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    assert read(text, context) == feed_all(FMT, [*pieces, ""], context, names_first=True)
    check_round_trips(FMT, pieces, context)


def test_state_stays_small_over_a_long_stream() -> None:
    """5,000 pieces of arguments, then of text after the list: the state never grows."""
    state = FMT.start()
    largest = 0
    pieces = ["Lead 🌦 ", OPEN, '[{"name": "get_weather", "arguments": {"city": "']
    for piece in pieces + ["Zürich 東京 "] * 5000 + ['"}}]', CLOSE] + ["and 😀 "] * 5000:
        _, _, state = FMT.feed(state, piece, False, AUTO)
        w = Writer()
        FMT.encode(state, w)
        largest = max(largest, len(w.out))
    assert largest < 64


def test_registered_as_vllm_names_it() -> None:
    assert parsers.tool_format("hunyuan_a13b") is FMT
    assert TOOLS_BY_TAG[parsers.tag_of("hunyuan_a13b")].name == "hunyuan_a13b"
    with pytest.raises(ValueError, match="not a hunyuan_a13b state"):
        FMT.step(json_wrapped.JAMBA_FORMAT.start(), "x", False, AUTO)


# --------------------------------------------------------------------------- reasoning

REASONING = reasoning.FORMATS["hunyuan_a13b"]
THINK, ANSWER, END = "<think>\n", "\n</think>\n<answer>\n", "\n</answer>"
THOUGHT = "Paris weather; call the tool."


def think(parts: list[str]) -> tuple[str, str]:
    """Reasoning and content of the hunyuan_a13b reasoning machine fed ``parts`` (the last
    final), every state read back from its encoding."""
    state = reasoning.start(REASONING, vocabulary(MODEL), None, True)
    assert state is not None
    out: list[tuple[str, str]] = []
    for k, part in enumerate(parts):
        delta, state = reasoning.feed(REASONING, state, part, k == len(parts) - 1, {})
        out.append((delta.reasoning, delta.content))
        w = Writer()
        reasoning.encode(state, w)
        assert reasoning.decode(state.reasoning, Reader(bytes(w.out))) == state
    return "".join(r for r, _ in out), "".join(c for _, c in out)


def test_reasoning_as_vllm() -> None:  # 5592-5614
    assert think([THINK + THOUGHT + ANSWER + "It is sunny 🌞." + END]) == (
        THOUGHT, "It is sunny 🌞.")
    assert think([THINK + THOUGHT + ANSWER + "Sunny." + END + " tail"]) == (THOUGHT, "Sunny.")
    assert think([THINK + THOUGHT + ANSWER + "Sunny."]) == (THOUGHT, "Sunny.")
    assert think(["Sunny today." + END + " tail"]) == ("", "Sunny today.")
    assert think(["Sunny today, no tags."]) == ("", "Sunny today, no tags.")
    assert think([THINK + THOUGHT + " still thinking"]) == (
        "", THINK + THOUGHT + " still thinking")
    assert think([THINK + THOUGHT + END]) == ("", THINK + THOUGHT)
    assert think([THINK + ANSWER[1:] + "Sunny." + END]) == ("", THINK + ANSWER[1:] + "Sunny.")


def test_reasoning_differences_on_purpose() -> None:
    """README hunyuan_a13b reasoning row."""
    late = "Hmm. " + THINK + THOUGHT + ANSWER + "Sunny."
    assert think([late]) == ("", late)  # vLLM: reasoning and "Sunny." (5610)
    long = "x" * (reasoning.MAX_SWAP + 1)
    assert think([THINK + long]) == (long, "")  # vLLM: all content


R_PIECES = ["ok", " ", "\n", "x" * 200, "😀", THINK, ANSWER, END, "<think>", "</think>",
            "\n</", "<answer>"]


@settings(max_examples=400, deadline=None)
@given(text=st.lists(st.sampled_from(R_PIECES), max_size=12).map("".join), data=st.data())
def test_any_split_of_a_reasoning_text_reads_as_the_whole(text: str, data: st.DataObject
                                                          ) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(text)]
    assert think([text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]) == think(
        [text])


@pytest.fixture(scope="module")
def hunyuan_thinking(client_for: Any) -> Any:
    return client_for(MODEL, "hunyuan_a13b", "hunyuan_a13b")


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_any_split_with_reasoning_folds_to_the_message(hunyuan_thinking: Any,
                                                       data: st.DataObject) -> None:
    lead = data.draw(st.sampled_from(["", THINK + THOUGHT + ANSWER, THINK + THOUGHT,
                                      "Hmm. " + THINK]), label="lead")
    text = lead + data.draw(outputs(), label="output") + data.draw(
        st.sampled_from(["", END, END + " tail"]), label="end")
    request = data.draw(requests(MESSAGES, [WEATHER]), label="chat_request")
    ids = tokenizer(MODEL).encode(text, add_special_tokens=False).ids
    run_both(hunyuan_thinking, MODEL, [*ids, EOS], "stop", [1], request, data)


def test_reasoning_registered_as_vllm_names_it() -> None:
    assert REASONING_BY_NAME["hunyuan_a13b"].name == "hunyuan_a13b"
