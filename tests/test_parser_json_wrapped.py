"""The ``phi4_mini_json`` and ``jamba`` tool-call parsers (``formats/json_wrapped.py``).
Expected values are vLLM 0.33's answers as recorded in tests/fixtures/vllm-0.33 (cases
3800-3848 and 3849-3905, cited by number; the rules read in vLLM's ``phi4mini_tool_parser.py``
and ``jamba_tool_parser.py`` are in docs/vllm-compat/json_wrapped.md) and, marked, the README
compatibility rows where we differ on purpose. Then: split invariance through the app and of
the machine, state round trips, bounded state over a long stream, garbage states, the registry.
The models are stand-ins (tests/models/README.md): ``phi4-mini-standin`` (gpt-oss's o200k
vocabulary with Phi-4-mini's special tokens) and ``jamba-standin`` (GPT-2's with
``<tool_calls>`` 50257 and ``</tool_calls>`` 50258).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers.formats import json_wrapped
from derender.core.parsers.primitives import MAX_LEADING_SPACE
from derender.core.parsers.registry import MARKUP, TOOLS_BY_TAG
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.models import tokenizer
from derender_testing.tool_streams import (
    check_round_trips,
    every_split,
    feed_all,
    requests,
    run_both,
)

PHI4 = "phi4-mini-standin"
END = 200020
FMT = json_wrapped.PHI4_FORMAT
AUTO = ToolContext()
REQUIRED = ToolContext(required=True)
NAMED = ToolContext(forced_name="get_weather")
PARIS = '{"city": "Paris", "unit": "c"}'
CALL = '{"name": "get_weather", "arguments": ' + PARIS + "}"
TOKYO = '{"name": "get_weather", "parameters": {"city": "東京"}}'
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}}}}
MESSAGES = [{"role": "user", "content": "What's the weather in Paris?"}]


def read(text: str, context: ToolContext = AUTO, size: int = 0) -> tuple[str, list[list[str]]]:
    """Content and calls of the machine fed ``text`` whole (or in pieces of ``size``)."""
    pieces = [text[i:i + size] for i in range(0, len(text), size)] if size else [text]
    return feed_all(FMT, [*pieces, ""], context, names_first=True)


def wrapped(*calls: str) -> str:
    return "functools[" + ", ".join(calls) + "]"


# --------------------------------------------------------------------------- vLLM's rules


def test_calls_in_the_wrapper() -> None:  # 3800, 3802, 3843
    assert read(wrapped(CALL)) == ("", [["get_weather", PARIS]])
    assert read(wrapped(CALL, TOKYO)) == ("", [["get_weather", PARIS],
                                               ["get_weather", '{"city": "東京"}']])


def test_text_after_the_list_and_a_second_wrapper_are_dropped() -> None:  # 3806, 3847
    assert read(wrapped(CALL) + "\nDone, anything else?") == ("", [["get_weather", PARIS]])
    ping = '{"name": "get_time", "arguments": {}}'
    assert read(wrapped(CALL) + " " + wrapped(ping)) == ("", [["get_weather", PARIS]])


def test_no_wrapper_is_content() -> None:  # 3808
    text = "Paris is sunny today [source: météo], 22 °C 🌞."
    assert read(text) == (text, [])


def test_arguments_of_any_json_value() -> None:  # 3826, 3810
    assert read(wrapped('{"name": "get_weather", "arguments": "Paris"}'))[1] == [
        ["get_weather", '"Paris"']]
    args = '{"count": 3, "ratio": -0.25, "enabled": true, "meta": {"k": {"deep": null}}}'
    assert read(wrapped('{"name": "set_config", "arguments": ' + args + "}"))[1] == [
        ["set_config", args]]


def test_an_empty_list_is_nothing() -> None:  # 3824
    assert read("functools[]") == ("", [])


def test_an_element_that_is_no_call_and_a_cut_off_name_are_content() -> None:  # 3820, 3814
    assert read('functools[{"city": "Paris"}]') == ('functools[{"city": "Paris"}]', [])
    assert read('functools[{"name": "get_wea') == ('functools[{"name": "get_wea', [])


def test_required_reads_only_a_json_list() -> None:  # 3837, 3835
    listed = '[{"name": "get_weather", "parameters": {"city": "Paris"}}]'
    assert read(listed, REQUIRED) == ("", [["get_weather", '{"city": "Paris"}']])
    assert read(wrapped(CALL), REQUIRED) == ("", [])
    assert read("I cannot look that up.", REQUIRED) == ("", [])


def test_named_takes_the_output_as_the_arguments() -> None:  # 3839, 3841
    assert read(wrapped(CALL), NAMED) == ("", [["get_weather", wrapped(CALL)]])
    assert read('{"city": "Paris", "unit": "f"}', NAMED) == (
        "", [["get_weather", '{"city": "Paris", "unit": "f"}']])
    assert read("  \n", NAMED) == ("", [])


# --------------------------------------------------------------------------- where we differ
# (README compatibility rows for phi4_mini_json)


def test_text_before_the_wrapper_stays_content() -> None:  # 3804, 3828 (vLLM: null)
    assert read("Let me check that. " + wrapped(CALL)) == ("Let me check that. ",
                                                           [["get_weather", PARIS]])
    assert read("\n\n" + wrapped(CALL)) == ("", [["get_weather", PARIS]])


def test_a_cut_off_call_keeps_its_arguments() -> None:  # 3816 (vLLM: all content)
    assert read('functools[{"name": "get_weather", "arguments": {"city": "Pa') == (
        "", [["get_weather", '{"city": "Pa']])


def test_a_bracket_inside_the_arguments_is_theirs() -> None:  # 3822 (vLLM: no call)
    args = '{"tags": ["a", "b"], "count": 1}'
    assert read(wrapped('{"name": "set_config", "arguments": ' + args + "}"))[1] == [
        ["set_config", args]]


def test_an_unreadable_first_element_is_content() -> None:  # 3818 (vLLM: content null)
    text = "functools[not json at all] trailing"
    assert read(text) == (text, [])


def test_after_a_call_an_element_that_is_no_call_ends_the_list() -> None:
    assert read(wrapped(CALL, '{"city": "x"}', TOKYO)) == ("", [["get_weather", PARIS]])


def test_whitespace_before_the_wrapper_is_held_within_its_bound() -> None:
    long = " " * (MAX_LEADING_SPACE + 1)
    assert read(long + wrapped(CALL)) == (long, [["get_weather", PARIS]])


# --------------------------------------------------------------------------- through the app


@pytest.fixture(scope="module")
def phi4(client_for: Any) -> Any:
    return client_for(PHI4, None, "phi4_mini_json")


ELEMENTS = [CALL, TOKYO, '{"name": "get_time", "arguments": {}}', '{"city": "x"}',
            '{"name": "f", "arguments": {"tags": ["a]", "b"], "s": "}\\"]"}}',
            '{"name": "get_weather", "arguments": {"city": "Zürich 𝄞 \\ud83d\\ude00"}}']


@st.composite
def outputs(draw: st.DrawFn) -> str:
    """Phi-4-mini outputs: text, the wrapper with 0-3 elements (calls or not), maybe cut or
    followed by text."""
    text = draw(st.sampled_from(["", "", "Sure. ", "\n", "functools is a module. "]))
    if draw(st.integers(0, 5)):
        text += "functools[" + ", ".join(
            draw(st.lists(st.sampled_from(ELEMENTS), max_size=3))) + "]"
    text += draw(st.sampled_from(["", "", " Done.", " functools[]"]))
    if draw(st.integers(0, 4)) == 0:
        text = text[:draw(st.integers(0, len(text)))]
    return text


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_split_of_the_output_folds_to_the_message(phi4: Any, data: st.DataObject) -> None:
    text = data.draw(outputs(), label="output")
    request = data.draw(requests(MESSAGES, [WEATHER]), label="chat_request")
    ids = [*tokenizer(PHI4).encode(text, add_special_tokens=False).ids, END]
    run_both(phi4, PHI4, ids, "stop", [1], request, data)


# --------------------------------------------------------------------------- the machine

PIECES = ["Hi", " ", "\n", " " * 130, "functools", "[", "functools[", "]", ",", CALL, TOKYO,
          "{", "}", '"', '{"name": "g', '", "arguments": ', "[1, 2]", "𝄞"]
texts = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)
contexts = st.sampled_from([AUTO, AUTO, REQUIRED, NAMED])


@settings(max_examples=400, deadline=None)
@given(text=texts, context=contexts, data=st.data())
def test_any_split_of_a_text_reads_as_the_whole(text: str, context: ToolContext,
                                                data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(text)]
    pieces = [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    assert read(text, context) == feed_all(FMT, [*pieces, ""], context, names_first=True)
    check_round_trips(FMT, pieces, context)


def test_state_stays_small_over_a_long_stream() -> None:
    """5,000 pieces of arguments and of content: the state never grows with the output."""
    for context in (AUTO, REQUIRED, NAMED):
        state = FMT.start()
        pieces = ["Lead text 🌦 " * 50, "functools", "[", '{"name": "get_weather", ',
                  '"arguments": {"city": "', *["Zürich 東京 "] * 5000, '"}}', "]", "x" * 500]
        if context is REQUIRED:  # the JSON list of vLLM's "required" path
            pieces = ["[", '{"name": "get_weather", ', '"parameters": {"city": "',
                      *pieces[5:]]
        largest = 0
        for piece in pieces:
            _, _, state = FMT.feed(state, piece, False, context)
            writer = Writer()
            FMT.encode(state, writer)
            largest = max(largest, len(writer.out))
        assert largest < 64


def test_garbage_states_are_refused() -> None:
    for mode, bits in ((max(json_wrapped.Mode) + 1, 0), (0, 1 << 6)):
        writer = Writer()
        writer.uint(mode)
        writer.text("")
        writer.uint(0)
        writer.uint(bits)
        writer.uint(0)
        with pytest.raises(ValueError, match="malformed"):
            FMT.decode(Reader(bytes(writer.out)))


def test_registered_as_vllm_names_them() -> None:
    assert parsers.tool_format("phi4_mini_json") is FMT
    assert TOOLS_BY_TAG[parsers.tag_of("phi4_mini_json")].name == "phi4_mini_json"
    with pytest.raises(ValueError, match="not a phi4_mini_json state"):
        FMT.step(parsers.tool_format("hermes").start(), "x", False, AUTO)


# --------------------------------------------------------------------------- jamba

JAMBA = "jamba-standin"
JFMT = json_wrapped.JAMBA_FORMAT
JOPEN, JCLOSE, JEOS = 50257, 50258, 50256
TAG = chr(0xE000 + MARKUP.index("<tool_calls>"))
"""``<tool_calls>`` as the marked vocabulary spells it (its stand-in)."""
JAUTO = ToolContext(spell={"<tool_calls>": TAG})


def jread(text: str, context: ToolContext = JAUTO) -> tuple[str, list[list[str]]]:
    return feed_all(JFMT, [text, ""], context, names_first=True)


def block(*calls: str) -> str:
    return TAG + "[" + ", ".join(calls) + "]</tool_calls>"


def test_jamba_calls_and_the_text_around_them() -> None:  # 3849, 3851, 3853, 3855, 3857, 3902
    ping = '{"name": "get_time", "arguments": {}}'
    assert jread(block(CALL)) == ("", [["get_weather", PARIS]])
    assert jread(block(CALL, ping))[1] == [["get_weather", PARIS], ["get_time", "{}"]]
    assert jread("Let me check that.\n" + block(CALL)) == ("Let me check that.\n",
                                                           [["get_weather", PARIS]])
    assert jread("\n\n" + block(CALL)) == ("", [["get_weather", PARIS]])
    assert jread(block(CALL) + "\nDone, anything else?" + block(ping)) == (
        "", [["get_weather", PARIS]])


def test_jamba_list_shapes() -> None:  # 3865, 3879, 3881, 3883, 3885
    tags = '{"name": "set_config", "arguments": {"tags": ["a", "b"], "count": 1}}'
    assert jread(block(tags))[1] == [["set_config", '{"tags": ["a", "b"], "count": 1}']]
    flipped = '{"arguments": {"city": "Paris"}, "name": "get_weather"}'
    assert jread(block(flipped))[1] == [["get_weather", '{"city": "Paris"}']]
    assert jread(TAG + "[]</tool_calls>") == ("", [])
    assert jread(TAG + "\n [" + CALL + "]\n</tool_calls>")[1] == [["get_weather", PARIS]]
    assert jread(block('{"name": "get_weather", "arguments": "Paris"}'))[1] == [
        ["get_weather", '"Paris"']]


def test_jamba_text_that_is_no_list_of_calls_is_content() -> None:  # 3867, 3873, 3875, 3877
    for text in (TAG + '[{"name": "get_wea', TAG + "not json at all</tool_calls> trailing",
                 TAG + CALL + "</tool_calls>", block(TOKYO)):
        assert jread(text) == (text, [])


def test_jamba_a_cut_off_call_keeps_its_arguments() -> None:  # 3869, 3871 (README rows)
    assert jread(TAG + '[{"name": "get_weather", "arguments": {"city": "Pa') == (
        "", [["get_weather", '{"city": "Pa']])
    assert jread(TAG + "[" + CALL + "]") == ("", [["get_weather", PARIS]])


@pytest.fixture(scope="module")
def jamba(client_for: Any) -> Any:
    return client_for(JAMBA, None, "jamba")


@st.composite
def jamba_outputs(draw: st.DrawFn) -> list[int | str]:
    """Jamba outputs: text, ``<tool_calls>`` with a list of 0-3 elements (calls or not) and
    ``</tool_calls>`` (or not), maybe cut or followed by text; as parts (marker ids, text)."""
    parts: list[int | str] = [draw(st.sampled_from(["", "", "Sure. ", "\n", "[1, 2] "]))]
    if draw(st.integers(0, 5)):
        parts += [JOPEN, draw(st.sampled_from(["[", " [", "{", "x"])) + ", ".join(
            draw(st.lists(st.sampled_from(ELEMENTS), max_size=3))) + "]"]
        if draw(st.integers(0, 3)):
            parts.append(JCLOSE)
    parts.append(draw(st.sampled_from(["", "", " Done.", " <tool_calls>"])))
    if draw(st.integers(0, 4)) == 0:
        parts = parts[:draw(st.integers(0, len(parts)))]
    return [p for p in parts if p != ""]


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_split_of_a_jamba_output_folds_to_the_message(jamba: Any,
                                                          data: st.DataObject) -> None:
    parts = data.draw(jamba_outputs(), label="output")
    request = data.draw(requests(MESSAGES, [WEATHER]), label="chat_request")
    ids: list[int] = []
    for part in parts:
        ids += [part] if isinstance(part, int) else tokenizer(JAMBA).encode(
            part, add_special_tokens=False).ids
    run_both(jamba, JAMBA, [*ids, JEOS], "stop", [1], request, data)


JPIECES = [*PIECES[:4], TAG, "</tool_calls>", "[", "]", ",", CALL, TOKYO, "{", "}", '"',
           '{"name": "g', '", "arguments": ', '{"arguments": {}, "name": "h"}', "𝄞"]


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(JPIECES), max_size=14).map("".join),
       context=st.sampled_from([JAUTO, JAUTO, REQUIRED, NAMED]), data=st.data())
def test_any_split_of_a_jamba_text_reads_as_the_whole(text: str, context: ToolContext,
                                                      data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(text)]
    pieces = [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    assert jread(text, context) == feed_all(JFMT, [*pieces, ""], context, names_first=True)
    check_round_trips(JFMT, pieces, context)


def test_jamba_registered_as_vllm_names_it() -> None:
    assert parsers.tool_format("jamba") is JFMT
    assert TOOLS_BY_TAG[parsers.tag_of("jamba")].name == "jamba"
    with pytest.raises(ValueError, match="not a jamba state"):
        JFMT.step(FMT.start(), "x", False, AUTO)


# --------------------------------------------------------------------------- internlm

INTERNLM = "internlm2-standin"
IFMT = json_wrapped.INTERNLM_FORMAT
IA_START, IPLUGIN, IA_END, IEOS = 92541, 92538, 92540, 92542
ISPELL = {m: chr(0xE000 + MARKUP.index(m)) for m in ("<|action_start|>", "<|plugin|>",
                                                       "<|action_end|>")}
IAUTO = ToolContext(spell=ISPELL)
ACT = ISPELL["<|action_start|>"] + ISPELL["<|plugin|>"]
IEND = ISPELL["<|action_end|>"]
IWEATHER = '{"name": "get_weather", "parameters": ' + PARIS + "}"


def iread(text: str, context: ToolContext = IAUTO) -> tuple[str, list[list[str]]]:
    return feed_all(IFMT, [text, ""], context, names_first=True)


def test_internlm_call_and_the_text_around_it() -> None:  # 3906, 3908, 3910, 3912, 3926
    assert iread(ACT + "\n" + IWEATHER + IEND) == ("", [["get_weather", PARIS]])
    assert iread("Let me check that.\n" + ACT + "\n" + IWEATHER + IEND) == (
        "Let me check that.\n", [["get_weather", PARIS]])
    assert iread("\n\n" + ACT + IWEATHER + IEND) == ("", [["get_weather", PARIS]])
    assert iread(ACT + IWEATHER + IEND + "\nDone, anything else?") == (
        "", [["get_weather", PARIS]])
    assert iread(ACT + "call: " + IWEATHER + IEND) == ("", [["get_weather", PARIS]])


def test_internlm_keys() -> None:  # 3920, 3922, 3924, 3928, 3930
    assert iread(ACT + CALL + IEND)[1] == [["get_weather", PARIS]]
    flipped = '{"parameters": {"city": "Paris"}, "name": "get_weather"}'
    assert iread(ACT + flipped + IEND)[1] == [["get_weather", '{"city": "Paris"}']]
    assert iread(ACT + '{"name": "get_time"}' + IEND)[1] == [["get_time", "{}"]]
    assert iread(ACT + '{"name": "get_weather", "parameters": "Paris"}' + IEND)[1] == [
        ["get_weather", '"Paris"']]
    assert iread(ACT + "\n" + IWEATHER)[1] == [["get_weather", PARIS]]


def test_internlm_outputs_vllm_refuses() -> None:
    """vLLM's message raises on these (400 or 500, 3932-3937); we answer, as the README row
    says: a cut-off name is content (with the opener; text before its ``{`` is dropped), a
    cut-off call keeps its arguments so far, text that is no object is dropped, a second call
    and text after the object are dropped, an object without a name is content."""
    assert iread(ACT + '\n{"name": "get_wea') == (ACT + '{"name": "get_wea', [])
    assert iread(ACT + '\n{"name": "get_weather", "parameters": {"city": "Pa') == (
        "", [["get_weather", '{"city": "Pa']])
    assert iread(ACT + "not json at all" + IEND + " trailing") == ("", [])
    two = ACT + IWEATHER + IEND + ACT + '{"name": "get_time", "parameters": {}}' + IEND
    assert iread(two) == ("", [["get_weather", PARIS]])
    assert iread(ACT + IWEATHER + " and more" + IEND) == ("", [["get_weather", PARIS]])
    assert iread(ACT + '\n{"city": "Paris"}' + IEND) == (ACT + '{"city": "Paris"}' + IEND, [])


@pytest.fixture(scope="module")
def internlm(client_for: Any) -> Any:
    return client_for(INTERNLM, None, "internlm")


@st.composite
def internlm_outputs(draw: st.DrawFn) -> list[int | str]:
    parts: list[int | str] = [draw(st.sampled_from(["", "", "Sure. ", "\n", "{x} "]))]
    if draw(st.integers(0, 5)):
        parts += [IA_START, IPLUGIN, draw(st.sampled_from(["\n", "", "call: "])),
                  draw(st.sampled_from([*ELEMENTS, IWEATHER, '{"name": "get_time"}']))]
        if draw(st.integers(0, 3)):
            parts.append(IA_END)
    parts.append(draw(st.sampled_from(["", "", " Done.", " {}"])))
    if draw(st.integers(0, 4)) == 0:
        parts = parts[:draw(st.integers(0, len(parts)))]
    return [p for p in parts if p != ""]


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_split_of_an_internlm_output_folds_to_the_message(internlm: Any,
                                                              data: st.DataObject) -> None:
    parts = data.draw(internlm_outputs(), label="output")
    request = data.draw(requests(MESSAGES, [WEATHER]), label="chat_request")
    ids: list[int] = []
    for part in parts:
        ids += [part] if isinstance(part, int) else tokenizer(INTERNLM).encode(
            part, add_special_tokens=False).ids
    run_both(internlm, INTERNLM, [*ids, IEOS], "stop", [1], request, data)


IPIECES = [*PIECES[:4], ACT, ISPELL["<|action_start|>"], IEND, "call: ", IWEATHER, CALL,
           "{", "}", '"', '{"name": "g', '", "parameters": ', '{"name": "h"}', "𝄞"]


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(IPIECES), max_size=14).map("".join),
       context=st.sampled_from([IAUTO, IAUTO, REQUIRED, NAMED]), data=st.data())
def test_any_split_of_an_internlm_text_reads_as_the_whole(text: str, context: ToolContext,
                                                          data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(text)]
    pieces = [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    assert iread(text, context) == feed_all(IFMT, [*pieces, ""], context, names_first=True)
    check_round_trips(IFMT, pieces, context)


def test_internlm_registered_as_vllm_names_it() -> None:
    assert parsers.tool_format("internlm") is IFMT
    assert TOOLS_BY_TAG[parsers.tag_of("internlm")].name == "internlm"


# --------------------------------------------------------------------------- gigachat3

GIGA = "gigachat3-standin"
GFMT = json_wrapped.GIGACHAT3_FORMAT
GSEP, GROLE, GCALL, GEOS = 50257, 50258, 50259, 50256
GSPELL = {m: chr(0xE000 + MARKUP.index(m)) for m in ("<|message_sep|>", "<|role_sep|>",
                                                       "<|function_call|>")}
GAUTO = ToolContext(spell=GSPELL)
SEP, FCALL = GSPELL["<|message_sep|>"], GSPELL["<|function_call|>"]
FUNC = "function call" + GSPELL["<|role_sep|>"] + "\n"


def gread(text: str, context: ToolContext = GAUTO) -> tuple[str, list[list[str]]]:
    return feed_all(GFMT, [text, ""], context, names_first=True)


def test_gigachat3_calls_and_content() -> None:  # 3955, 3957, 3959, 3961, 3973, 3967
    assert gread(SEP + "\n\n" + FUNC + CALL) == ("", [["get_weather", PARIS]])
    assert gread("Let me check that." + SEP + "\n\n" + FUNC + CALL) == (
        "Let me check that.", [["get_weather", PARIS]])
    assert gread(FCALL + CALL) == ("", [["get_weather", PARIS]])
    assert gread("Let me check. " + FCALL + CALL) == ("Let me check. ", [["get_weather", PARIS]])
    flipped = '{"arguments": {"city": "Paris"}, "name": "get_weather"}'
    assert gread(FCALL + flipped)[1] == [["get_weather", '{"city": "Paris"}']]
    text = "Paris is sunny." + SEP + "\n\nAnything else?"
    assert gread(text) == (text, [])


def test_gigachat3_what_is_no_call_is_content() -> None:  # 3975, 3979, 3983
    for call in ('{"name": "get_weather", "arguments": "Paris"}', '{"name": "get_wea',
                 "not json at all"):
        text = SEP + "\n\n" + FUNC + call
        assert gread(text) == (text, [])


def test_gigachat3_where_we_differ() -> None:  # 3963, 3977, 3981 (README row)
    assert gread(FUNC + CALL) == ("", [["get_weather", PARIS]])
    assert gread(SEP + FUNC + CALL + " and more") == ("", [["get_weather", PARIS]])
    assert gread(SEP + FUNC + '{"name": "get_weather", "arguments": {"city": "Pa') == (
        "", [["get_weather", '{"city": "Pa']])


def test_gigachat3_whitespace_before_the_separator_goes_with_the_call() -> None:
    """Whitespace alone before the separator is no content when a call follows (README rows:
    whitespace before the first call, ``gigachat3``), however the text is split: a stream cut
    right after the separator once sent the newline before it."""
    text = "\n" + SEP + "\n\n" + FUNC + CALL
    for size in range(1, len(text) + 1):
        pieces = [text[:size], text[size:], ""]
        assert feed_all(GFMT, pieces, GAUTO, names_first=True) == (
            "", [["get_weather", PARIS]]), size
    assert set(map(repr, every_split(GFMT, text, GAUTO))) == {
        repr(("", [["get_weather", PARIS]]))}
    spoken = "\n" + SEP + "\n\nAnything else?"
    assert {repr(r) for r in every_split(GFMT, spoken, GAUTO)} == {repr((spoken, []))}


def test_gigachat3_a_separator_written_as_text_is_held_across_chunks() -> None:
    """Without the markers as tokens (``AUTO``: written as text) a chunk may end inside
    ``<|message_sep|>``: its start is held, so every cut reads as the whole (a cut in it once
    sent the separator out as content)."""
    text = "Sure.<|message_sep|>\n\nfunction call<|role_sep|>\n" + CALL
    assert gread(text, AUTO) == ("Sure.", [["get_weather", PARIS]])
    for size in range(len(text) + 1):
        pieces = [text[:size], text[size:], ""]
        assert feed_all(GFMT, pieces, AUTO, names_first=True) == (
            "Sure.", [["get_weather", PARIS]]), size


@pytest.fixture(scope="module")
def gigachat3(client_for: Any) -> Any:
    return client_for(GIGA, None, "gigachat3")


@st.composite
def gigachat3_outputs(draw: st.DrawFn) -> list[int | str]:
    parts: list[int | str] = [draw(st.sampled_from(["", "", "Sure.", "\n", "{x} "]))]
    if draw(st.integers(0, 5)):
        opener: list[int | str] = draw(st.sampled_from(
            [[GSEP, "\n\nfunction call", GROLE, "\n"], [GCALL], [GSEP, GCALL], [GSEP, " x"]]))
        parts += [*opener, draw(st.sampled_from([*ELEMENTS, '{"name": "get_time"}']))]
    parts.append(draw(st.sampled_from(["", "", " Done.", " {}"])))
    if draw(st.integers(0, 4)) == 0:
        parts = parts[:draw(st.integers(0, len(parts)))]
    return [p for p in parts if p != ""]


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_split_of_a_gigachat3_output_folds_to_the_message(gigachat3: Any,
                                                              data: st.DataObject) -> None:
    parts = data.draw(gigachat3_outputs(), label="output")
    request = data.draw(requests(MESSAGES, [WEATHER]), label="chat_request")
    ids: list[int] = []
    for part in parts:
        ids += [part] if isinstance(part, int) else tokenizer(GIGA).encode(
            part, add_special_tokens=False).ids
    run_both(gigachat3, GIGA, [*ids, GEOS], "stop", [1], request, data)


AS_TEXT = {ord(spelled): marker for marker, spelled in GSPELL.items()}
GPIECES = [*PIECES[:4], SEP, FCALL, FUNC, "function ca", "\n\n", CALL, "{", "}", '"',
           '{"name": "g', '", "arguments": ', '"x"', "𝄞", "Hi"]


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(GPIECES), max_size=14).map("".join),
       context=st.sampled_from([GAUTO, GAUTO, REQUIRED, NAMED]), data=st.data())
def test_any_split_of_a_gigachat3_text_reads_as_the_whole(text: str, context: ToolContext,
                                                          data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(text)]
    pieces = [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    assert gread(text, context) == feed_all(GFMT, [*pieces, ""], context, names_first=True)
    check_round_trips(GFMT, pieces, context)
    if context is GAUTO:  # the markers written as text
        plain = [piece.translate(AS_TEXT) for piece in pieces]
        assert gread("".join(plain), AUTO) == feed_all(GFMT, [*plain, ""], AUTO,
                                                       names_first=True)


def test_gigachat3_registered_as_vllm_names_it() -> None:
    assert parsers.tool_format("gigachat3") is GFMT
    assert TOOLS_BY_TAG[parsers.tag_of("gigachat3")].name == "gigachat3"
