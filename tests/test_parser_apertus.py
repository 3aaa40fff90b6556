"""The ``apertus`` tool parser (``formats/json_wrapped.py``, ``APERTUS``: one-key call objects
between ``<|tools_prefix|>`` and ``<|tools_suffix|>``, ``Wrapper.keyed``). Expected values are
vLLM 0.33's answers as recorded in tests/fixtures/vllm-0.33 (cases 8400-8485, cited by number;
the rules read in vLLM's ``apertus_tool_parser.py`` are in docs/vllm-compat/json_wrapped.md)
and, marked, the README compatibility rows where we differ on purpose. Then: split invariance
through the app and of the machine, state round trips, bounded state, the registry. The model
is ``apertus-standin`` (GPT-2's vocabulary with the two markers as added special tokens).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers.formats import json_wrapped
from derender.core.parsers.registry import TOOLS_BY_TAG
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Writer
from derender_testing.models import tokenizer
from derender_testing.tool_streams import check_round_trips, feed_all, requests, run_both
from tests.test_parser_json_wrapped import MESSAGES, NAMED, REQUIRED, WEATHER

MODEL = "apertus-standin"
EOS = 50256
FMT = json_wrapped.APERTUS_FORMAT
AUTO = ToolContext()
PARIS = '{"city": "Paris", "unit": "c"}'
CALL = '{"get_weather": ' + PARIS + "}"
PING = '{"get_time": {}}'
OPEN, CLOSE = "<|tools_prefix|>", "<|tools_suffix|>"


def read(text: str, context: ToolContext = AUTO) -> tuple[str, list[list[str]]]:
    return feed_all(FMT, [text, ""], context, names_first=True)


def block(*calls: str) -> str:
    return OPEN + "[" + ", ".join(calls) + "]" + CLOSE


def test_calls() -> None:  # 8400-8410, 8420, 8424, 8426, 8432-8436
    assert read(block(CALL)) == ("", [["get_weather", PARIS]])
    assert read(OPEN + '[{"get_weather":{"city":"Paris","unit":"c"}}]' + CLOSE)[1] == [
        ["get_weather", '{"city":"Paris","unit":"c"}']]  # the model's own JSON text
    assert read(block(CALL, PING))[1] == [["get_weather", PARIS], ["get_time", "{}"]]
    assert read(OPEN + "\n [" + CALL + "]\n" + CLOSE)[1] == [["get_weather", PARIS]]
    assert read(block('{"get_weather": "Paris"}'))[1] == [["get_weather", '"Paris"']]
    assert read(block('{"get_time": null}', CALL))[1] == [["get_time", "null"],
                                                          ["get_weather", PARIS]]
    # elements that are no call are skipped; a second key is not read
    assert read(block("{}", CALL))[1] == [["get_weather", PARIS]]
    assert read(block('"get_time"', "3", CALL))[1] == [["get_weather", PARIS]]
    assert read(block('{"get_weather": {"city": "Paris"}, "get_time": {}}'))[1] == [
        ["get_weather", '{"city": "Paris"}']]
    # one object without a list (8430)
    assert read("Hi " + OPEN + CALL + CLOSE) == ("Hi", [["get_weather", PARIS]])


def test_the_text_around_a_block() -> None:
    """Before the block: stripped; after the list and after the suffix: each stripped, after a
    newline when content came before; later suffixes removed, a later block is text."""
    assert read("Let me check the weather for you.\n" + block(CALL)) == (
        "Let me check the weather for you.", [["get_weather", PARIS]])  # 8412
    assert read("\n\n" + block(CALL))[0] == ""  # 8414
    assert read(block(CALL) + "\nI will report back shortly.")[0] == (
        "I will report back shortly.")  # 8416
    assert read("Hi " + OPEN + "[]" + CLOSE) == ("Hi", [])  # 8428
    assert read(OPEN + "[" + CALL + "] oops" + CLOSE + " after")[0] == "oops\nafter"  # 8440
    assert read("Hi " + OPEN + "[" + CALL + "]")[0] == "Hi"  # 8442
    assert read("Hi " + OPEN + "[" + CALL + "] and more text")[0] == "Hi\nand more text"  # 8444
    assert read(block(CALL) + " " + block(PING)) == (
        OPEN + '[{"get_time": {}}]', [["get_weather", PARIS]])  # 8446
    assert read(block(CALL) + " a " + CLOSE + " b")[0] == "a  b"  # 8448
    assert read("x " + CLOSE + " y " + block(CALL))[0] == "x " + CLOSE + " y"  # 8450


def test_text_that_is_no_block_of_calls_is_content() -> None:  # 8422, 8438, 8452
    for text in ("It is sunny in Paris [source: météo], 22 °C. 😀",
                 OPEN + "not json at all" + CLOSE + " trailing",
                 "Write <|tools_prefix as text and [brackets] too."):
        assert read(text) == (text, [])


def test_a_block_cut_off() -> None:
    """Read as vLLM's partial JSON reads it (8454-8464)."""
    assert read(OPEN + '[{"get_wea') == ("", [])
    assert read(OPEN + '[{"get_weather": ') == ("", [])
    assert read(OPEN + '[{"get_weather": {"city": "Par') == (
        "", [["get_weather", '{"city": "Par"}']])
    assert read(OPEN + '[{"set_config": {"count": 12')[1] == [["set_config", '{"count": 12}']]
    assert read(OPEN + "[" + CALL + ', {"get_time": {')[1] == [["get_weather", PARIS],
                                                               ["get_time", "{}"]]
    assert read("Sure. " + OPEN + '[{"get_weather": {"city": "Pa\\u00') == (
        "Sure.", [["get_weather", '{"city": "Pa"}']])
    # what partial JSON drops or completes (partial_json_parser's answers in vLLM 0.33's venv)
    for written, closed in (('{"a": 1, "b', '{"a": 1}'), ('{"a": 1, "b": ', '{"a": 1}'),
                            ('{"a": tr', '{"a": true}'), ('{"a": [1, 2, ', '{"a": [1, 2]}'),
                            ('{"a": -', "{}"), ('{"a": 1.5e-', '{"a": 1.5}'),
                            ('{"a": {"b": ["x', '{"a": {"b": ["x"]}}'), ('"Par', '"Par"'),
                            ("nu", "null")):
        assert read(OPEN + '[{"f": ' + written)[1] == [["f", closed]], written


def test_an_element_longer_than_the_head_bound_is_skipped_whatever_the_cuts() -> None:
    """Docstring rule: an element that is no call is skipped, one longer than ``MAX_HEAD``
    too (a stream cannot hold it to read); read whole, such an element was once taken for a
    cut-off one, dropping the text after the block that every stream of it kept."""
    long = '{"' + "x" * (json_wrapped.MAX_HEAD + 50) + '": 1}'
    text = "Sure. " + OPEN + "[" + long + ", {}]  " + CLOSE + " d"
    whole = feed_all(FMT, [text], AUTO, names_first=True)  # (one final piece)
    assert whole == read("Sure. " + block("{}", "{}") + " d") == ("Sure.\nd", [])
    for cut in range(len(text) + 1):
        assert feed_all(FMT, [text[:cut], text[cut:]], AUTO, names_first=True) == whole, cut


def test_differences_on_purpose() -> None:
    """README apertus row (vLLM's message in brackets)."""
    # content before a block keeps its leading whitespace ["Checking.\nDone.", 8418]
    assert read("  Checking.  " + block(CALL) + "  Done.  ")[0] == "  Checking.\nDone."
    # arguments that are not JSON stream as written (no closing) [the whole output as content]
    assert read(OPEN + '[{"f": {"a": oops, "b": 1') == ("", [["f", '{"a": oops, "b": 1']])
    # after a call, a list that is not JSON ends there, the rest read as text after the block
    # [the whole output as content]
    assert read(block(CALL + " oops")) == ("oops]", [["get_weather", PARIS]])


@pytest.fixture(scope="module")
def apertus(client_for: Any) -> Any:
    return client_for(MODEL, None, "apertus")


ELEMENTS = [CALL, PING, "{}", '"x"', "3", '{"get_time": null}', "oops",
            '{"get_weather": "Zürich 😀"}']


@st.composite
def outputs(draw: st.DrawFn) -> str:
    """Text, ``<|tools_prefix|>`` with a list (or one object) of 0-3 elements, calls or not,
    ``<|tools_suffix|>`` (or not), maybe cut or followed by text."""
    parts = [draw(st.sampled_from(["", "", "Sure. ", "\n", " x ", "[1, 2] "]))]
    if draw(st.integers(0, 5)):
        items = ", ".join(draw(st.lists(st.sampled_from(ELEMENTS), max_size=3)))
        parts += [OPEN, draw(st.sampled_from(["[" + items + "]", " [" + items + "]", CALL,
                                              "x"]))]
        parts.append(draw(st.sampled_from(["", " tail ", "\n"])))
        if draw(st.integers(0, 3)):
            parts.append(CLOSE)
    parts.append(draw(st.sampled_from(["", "", " Done. ", " " + CLOSE + " b", " " + OPEN])))
    text = "".join(parts)
    if draw(st.integers(0, 4)) == 0:
        text = text[:draw(st.integers(0, len(text)))]
    return text


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_split_of_the_output_folds_to_the_message(apertus: Any, data: st.DataObject
                                                      ) -> None:
    text = data.draw(outputs(), label="output")
    request = data.draw(requests(MESSAGES, [WEATHER]), label="chat_request")
    ids = tokenizer(MODEL).encode(text, add_special_tokens=False).ids
    run_both(apertus, MODEL, [*ids, EOS], "stop", [1], request, data)


PIECES = ["Hi", " ", "\n", " " * 130, OPEN, CLOSE, "<|tools_", "[", "]", ",", CALL, PING, "{",
          "}", '"', '{"g', '": ', "null", "x", "𝄞", '{"a": [1', ', "b', "tr", "-1.5e", "\\u00",
          "\\"]


@settings(max_examples=150, deadline=None)
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
    """5,000 pieces of arguments, then of text after the list and after the suffix: the state
    never grows."""
    state = FMT.start()
    largest = 0
    pieces = ["Lead 🌦 ", OPEN, '[{"get_weather": {"city": "']
    for piece in (pieces + ["Zürich 東京 "] * 5000 + ['"}}] ', "and 😀 "] + ["and 😀 "] * 3000
                  + [CLOSE] + [" then 😀 "] * 3000):
        _, _, state = FMT.feed(state, piece, False, AUTO)
        w = Writer()
        FMT.encode(state, w)
        largest = max(largest, len(w.out))
    assert largest < 64


def test_registered_as_vllm_names_it() -> None:
    assert parsers.tool_format("apertus") is FMT
    assert TOOLS_BY_TAG[parsers.tag_of("apertus")].name == "apertus"
