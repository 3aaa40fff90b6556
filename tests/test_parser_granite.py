"""The ``granite4``, ``granite-20b-fc`` and ``longcat`` tool-call parsers. Expected values are
vLLM 0.33's answers as recorded in tests/fixtures/vllm-0.33 (cases 3000-3211, cited by number;
the rules read in vLLM's parsers are in docs/vllm-compat/granite.md) and, marked,
the README compatibility rows where we differ on purpose. The machine is hermes'
(``hermes.GRANITE4``: ``between``, the text around the calls kept; ``hermes.GRANITE_20B_FC``:
``<function_call>``, no closing tag; ``hermes.LONGCAT``: LongCat's tags). Then: split invariance of
the machine and through the app, state round trips, bounded state over a long stream, the
registry. The model is ``granite4-standin`` (GPT-2's vocabulary with Granite 4.0's added
tokens at the ids a public listing gives; a stand-in, unverified against IBM's own file).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers.formats import hermes
from derender.core.parsers.primitives import MAX_LEADING_SPACE
from derender.core.parsers.registry import MARKUP, TOOLS_BY_TAG
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Writer
from derender_testing.tool_streams import check_round_trips, feed_all, requests, run_both
from tests.test_parser_rules import ids_of

GRANITE = "granite4-standin"
TC, END_TC, EOS = 100270, 100271, 100257
SPELL = {marker: chr(0xE000 + MARKUP.index(marker)) for marker in MARKUP}
OPEN, CLOSE = SPELL["<tool_call>"], SPELL["</tool_call>"]
CONTEXT = ToolContext(spell=SPELL)
FMT = hermes.GRANITE4
PARIS = '{"city": "Paris", "unit": "c"}'
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}}}}
PING = {"type": "function", "function": {
    "name": "get_time", "parameters": {"type": "object", "properties": {}}}}
MESSAGES = [{"role": "user", "content": "What's the weather in Paris? Then set the config."}]


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


P = json.loads(PARIS)


# --------------------------------------------------------------------------- as vLLM


def test_calls_alone() -> None:  # 3000, 3002, 3004, 3012
    assert read(call("get_weather", PARIS)) == ("", [["get_weather", P]])
    compact = OPEN + '{"name":"get_weather","arguments":{"city":"Paris","unit":"c"}}' + CLOSE
    assert read(compact) == ("", [["get_weather", P]])
    two = call("get_weather", '{"city": "Zürich"}') + "\n" + call("get_time", "{}")
    assert read(two) == ("", [["get_weather", {"city": "Zürich"}], ["get_time", {}]])


def test_text_around_the_calls_is_content() -> None:  # 3014, 3016, 3018
    single = call("get_weather", PARIS)
    assert read("Let me check the weather for you.\n" + single) == (
        "Let me check the weather for you.\n", [["get_weather", P]])
    assert read(single + "\nI will report back shortly.") == (
        "\nI will report back shortly.", [["get_weather", P]])
    between = call("get_weather", '{"city": "Rome"}') + "\nand then\n" + call("get_time", "{}")
    assert read(between) == ("\nand then\n", [["get_weather", {"city": "Rome"}],
                                              ["get_time", {}]])


def test_whitespace_alone_is_no_content() -> None:  # 3020, 3022, 3004
    single = call("get_weather", PARIS)
    assert read("\n\n" + single) == ("", [["get_weather", P]])
    assert read(single + "\n\n") == ("", [["get_weather", P]])
    # whitespace before the calls is said once other text follows them (vLLM joins every
    # segment; only a whole content of whitespace is null)
    assert read("\n" + single + " \n" + single + "ok") == (
        "\n \nok", [["get_weather", P], ["get_weather", P]])


def test_no_call() -> None:  # 3024, 3052, 3044
    for text in ("It is sunny in Paris, 22 °C. 😀",
                 "Granite writes <tool call> and </ tool_call> as text.", "Done." + CLOSE,
                 "\n \n"):
        assert read(text) == (text, [])


def test_keys_in_another_order_and_extra_keys() -> None:  # 3026, 3036, 3032
    flipped = OPEN + '{"arguments": {"city": "Paris"}, "name": "get_weather"}' + CLOSE
    assert read(flipped) == ("", [["get_weather", {"city": "Paris"}]])
    extra = OPEN + '{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": 7}' + CLOSE
    assert read(extra) == ("", [["get_weather", {"city": "Oslo"}]])
    listed = OPEN + '{"name": "get_time", "arguments": [1, 2]}' + CLOSE
    assert read(listed) == ("", [["get_time", [1, 2]]])


def test_an_unreadable_call_alone_is_the_whole_output() -> None:
    # 3034, 3038, 3046, 3048, 3054: vLLM makes the whole output content; here, with no other
    # call, that is the unreadable call's own text too
    for text in (OPEN + '{"name": "get_time"}' + CLOSE,
                 OPEN + "{'name': 'get_weather', 'arguments': {}}" + CLOSE,
                 OPEN + OPEN + '{"name": "get_time", "arguments": {}}' + CLOSE,
                 "Hi " + OPEN + CLOSE, OPEN + '\n{"name": "get_wea'):
        for size in (0, 1, 3):
            assert read(text, size) == (text, []), (text, size)


# --------------------------------------------------------------------------- README rows


def test_differences_on_purpose() -> None:
    """README "granite4" rows: vLLM makes the whole output content when any call is
    unreadable or unclosed, and types arguments written as a string or null otherwise."""
    single = call("get_weather", PARIS)
    bad = OPEN + '{"name": "get_time", "arguments": {' + CLOSE  # 3040
    assert read(single + bad) == ("", [["get_weather", P], ["get_time", "{"]])
    unclosed = "Checking.\n" + OPEN + '{"name": "get_weather", "arguments": ' + PARIS + "}"
    assert read(unclosed) == ("Checking.\n", [["get_weather", P]])  # 3042
    inside = call("get_weather", '{"city": "a' + CLOSE + 'b"}')  # 3050
    assert read(inside) == ("", [["get_weather", {"city": "a" + CLOSE + "b"}]])
    cut = OPEN + '\n{"name": "get_weather", "arguments": {"city": "Par'  # 3056
    assert read(cut) == ("", [["get_weather", '{"city": "Par']])
    string = OPEN + '{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}' + CLOSE
    assert read(string) == ("", [["get_weather", '{"city": "Paris"}']])  # 3028 (a JSON string)
    assert read(OPEN + '{"name": "get_time", "arguments": null}' + CLOSE) == (
        "", [["get_time", None]])  # 3030


def test_whitespace_held_is_bounded() -> None:
    """README "whitespace before the first tool call": past MAX_LEADING_SPACE characters in
    all, whitespace is content."""
    single = call("get_weather", PARIS)
    short = " " * (MAX_LEADING_SPACE // 2)
    assert read(short + single + short) == ("", [["get_weather", P]])
    long = " " * (MAX_LEADING_SPACE + 1)
    assert read(long + single) == (long, [["get_weather", P]])
    assert read(short + single + short + "\n" + single)[0] == short + short + "\n"


# --------------------------------------------------------------------------- through the app


@pytest.fixture(scope="module")
def granite(client_for: Any) -> Any:
    return client_for(GRANITE, None, "granite4")


@st.composite
def outputs(draw: st.DrawFn) -> tuple[list[str | int], list[list[Any]]]:
    """Outputs of text and calls, and the calls written (name, arguments as JSON)."""
    parts: list[str | int] = []
    written: list[list[Any]] = []
    complete = True
    for _ in range(draw(st.integers(0, 3))):
        parts.append(draw(st.sampled_from(["", "", "\n", " \n ", "Let me check 🌦.\n", "ok"])))
        name, args = draw(st.sampled_from([
            ("get_weather", PARIS), ("get_weather", '{"city": "Zürich 東京 😀"}'),
            ("get_time", "{}")]))
        parts += [TC, draw(st.sampled_from(["", "\n"])),
                  f'{{"name": "{name}", "arguments": {args}}}']
        written.append([name, json.loads(args)])
        if draw(st.integers(0, 4)):
            parts += [draw(st.sampled_from(["", "\n"])), END_TC]
        else:
            complete = False
            break
    if complete:
        parts.append(draw(st.sampled_from(["", "", "\n\n", "\nDone.", "It is sunny."])))
    return [p for p in parts if p != ""], written


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_split_of_the_output_folds_to_the_message(granite: Any, data: st.DataObject) -> None:
    parts, written = data.draw(outputs(), label="output")
    request = data.draw(requests(MESSAGES, [WEATHER, PING]), label="chat_request")
    ids = [*ids_of(*parts, name=GRANITE), EOS]
    choice = run_both(granite, GRANITE, ids, "stop", [1], request, data)
    if request.get("tools") and request.get("tool_choice", "auto") == "auto":
        calls = [[c["function"]["name"], json.loads(c["function"]["arguments"])]
                 for c in choice["message"].get("tool_calls") or []]
        want = written[:1] if request.get("parallel_tool_calls") is False else written
        assert calls == json.loads(json.dumps(want))


# --------------------------------------------------------------------------- the machine

PIECES = ["Hi", " ", "\n", " " * 130, PARIS, "{", "}", '{"name": "get_weather", "arguments": ',
          '{"name": "g", "arguments": {}}', '"', "😀", OPEN, CLOSE, "<tool_call"]
texts = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=texts, data=st.data())
def test_any_split_of_a_text_reads_as_the_whole(text: str, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(text)]
    pieces = [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    assert feed_all(FMT, [text], CONTEXT, names_first=True) == feed_all(
        FMT, pieces, CONTEXT, names_first=True)
    check_round_trips(FMT, pieces, CONTEXT)


def test_state_stays_small_over_a_long_stream() -> None:
    """5,000 pieces of arguments, then of content between calls: the state never grows with
    the output."""
    state = FMT.start()
    pieces = ["Lead text 🌦 ", OPEN, '{"name": "get_weather", "arguments": {"city": "']
    pieces += ["Zürich 東京 "] * 5000 + ['"}}', CLOSE, "\n"] + ["and 東京 😀 "] * 5000
    largest = 0
    for piece in pieces:
        _, _, state = FMT.feed(state, piece, False, CONTEXT)
        writer = Writer()
        FMT.encode(state, writer)
        largest = max(largest, len(writer.out))
    assert largest < 64


def test_registered_as_vllm_names_it() -> None:
    assert parsers.tool_format("granite4") is FMT
    assert TOOLS_BY_TAG[parsers.tag_of("granite4")].name == "granite4"
    with pytest.raises(ValueError, match="not a granite4 state"):
        FMT.step(hermes.FORMAT.start(), "x", False, CONTEXT)


# --------------------------------------------------------------------------- granite-20b-fc

FC = hermes.GRANITE_20B_FC
FCALL = "<function_call>"


def fc(name: str, args: str) -> str:
    return f'{FCALL} {{"name": "{name}", "arguments": {args}}}'


def read_fc(text: str, size: int = 0) -> tuple[str, list[list[Any]]]:
    pieces = [text[i:i + size] for i in range(0, len(text), size)] if size else [text]
    content, calls = feed_all(FC, pieces or [""], CONTEXT, names_first=True)
    return content, [[name, _json(args)] for name, args in calls]


def test_fc_as_vllm() -> None:
    for size in (0, 1, 5):
        assert read_fc(fc("get_weather", PARIS), size) == ("", [["get_weather", P]])  # 3082
        assert read_fc(fc("get_weather", '{"city": "Rome"}') + " and then " + fc(
            "get_time", "{}"), size) == ("", [["get_weather", {"city": "Rome"}],
                                              ["get_time", {}]])  # 3102
        assert read_fc("Let me check the weather for you.\n" + fc("get_weather", PARIS),
                       size) == ("Let me check the weather for you.\n",
                                 [["get_weather", P]])  # 3098
        assert read_fc("\n\n" + fc("get_weather", PARIS), size) == (
            "", [["get_weather", P]])  # 3104
        assert read_fc(fc("get_weather", PARIS) + "\nI will report back shortly.", size) == (
            "", [["get_weather", P]])  # 3100
        assert read_fc("<tool_call>" + fc("get_weather", PARIS) + "</tool_call>", size) == (
            "<tool_call>", [["get_weather", P]])  # 3122
        assert read_fc(FCALL + ' {"name": "get_weather", "arguments": "x"}', size) == (
            "", [["get_weather", "x"]])  # 3110
        for whole in (FCALL + ' {"name": "get_time"}', "Hi " + FCALL,  # 3112, 3120
                      FCALL + " {'name': 'get_weather', 'arguments': {}}",  # 3114
                      FCALL + ' {"name": "get_wea'):  # 3124
            assert read_fc(whole, size) == (whole, []), (whole, size)


def test_fc_differences_on_purpose() -> None:
    """README "granite-20b-fc calls": vLLM makes the whole output content instead."""
    single = fc("get_weather", PARIS)
    assert read_fc(single + " " + FCALL + " {oops}") == (
        FCALL + " {oops}", [["get_weather", P]])  # 3116
    inside = fc("get_weather", '{"city": "a<function_call>b"}')
    assert read_fc(inside) == ("", [["get_weather", {"city": "a<function_call>b"}]])  # 3118
    cut = FCALL + ' {"name": "get_weather", "arguments": {"city": "Par'
    assert read_fc(cut) == ("", [["get_weather", '{"city": "Par']])  # 3126


@pytest.fixture(scope="module")
def granite_fc(client_for: Any) -> Any:
    return client_for(GRANITE, None, "granite-20b-fc")


@st.composite
def fc_outputs(draw: st.DrawFn) -> tuple[list[str | int], list[list[Any]]]:
    parts: list[str | int] = [draw(st.sampled_from(["", "", "\n", "Let me check 🌦.\n"]))]
    written: list[list[Any]] = []
    for _ in range(draw(st.integers(0, 3))):
        name, args = draw(st.sampled_from([
            ("get_weather", PARIS), ("get_weather", '{"city": "Zürich 東京 😀"}'),
            ("get_time", "{}")]))
        parts.append(FCALL + draw(st.sampled_from(["", " ", "\n"]))
                     + f'{{"name": "{name}", "arguments": {args}}}')
        written.append([name, json.loads(args)])
        parts.append(draw(st.sampled_from(["", " ", "\n", " and "])))
    return [p for p in parts if p != ""], written


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_fc_any_split_of_the_output_folds_to_the_message(granite_fc: Any,
                                                         data: st.DataObject) -> None:
    parts, written = data.draw(fc_outputs(), label="output")
    request = data.draw(requests(MESSAGES, [WEATHER, PING]), label="chat_request")
    ids = [*ids_of(*parts, name=GRANITE), EOS]
    choice = run_both(granite_fc, GRANITE, ids, "stop", [1], request, data)
    if request.get("tools") and request.get("tool_choice", "auto") == "auto":
        calls = [[c["function"]["name"], json.loads(c["function"]["arguments"])]
                 for c in choice["message"].get("tool_calls") or []]
        want = written[:1] if request.get("parallel_tool_calls") is False else written
        assert calls == json.loads(json.dumps(want))


FC_PIECES = ["Hi", " ", "\n", " " * 130, PARIS, "{", "}", '{"name": "get_weather", '
             '"arguments": ', '{"name": "g", "arguments": {}}', '"', "😀", FCALL, "<function"]
fc_texts = st.lists(st.sampled_from(FC_PIECES), max_size=14).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=fc_texts, data=st.data())
def test_fc_any_split_of_a_text_reads_as_the_whole(text: str, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(text)]
    pieces = [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    assert feed_all(FC, [text], CONTEXT, names_first=True) == feed_all(
        FC, pieces, CONTEXT, names_first=True)
    check_round_trips(FC, pieces, CONTEXT)


def test_fc_registered_as_vllm_names_it() -> None:
    assert parsers.tool_format("granite-20b-fc") is FC
    assert TOOLS_BY_TAG[parsers.tag_of("granite-20b-fc")].name == "granite-20b-fc"
    with pytest.raises(ValueError, match="not a granite-20b-fc state"):
        FC.step(hermes.FORMAT.start(), "x", False, CONTEXT)


# --------------------------------------------------------------------------- longcat

LONGCAT = hermes.LONGCAT
LO, LC = "<longcat_tool_call>", "</longcat_tool_call>"
QWEN, IM_END = "qwen3", 151645


def lc(name: str, args: str) -> str:
    return f'{LO}\n{{"name": "{name}", "arguments": {args}}}\n{LC}'


def read_lc(text: str, size: int = 0, context: ToolContext = CONTEXT
            ) -> tuple[str, list[list[Any]]]:
    pieces = [text[i:i + size] for i in range(0, len(text), size)] if size else [text]
    content, calls = feed_all(LONGCAT, pieces or [""], context, names_first=True)
    return content, [[name, _json(args)] for name, args in calls]


def test_longcat_as_vllm() -> None:
    single = lc("get_weather", PARIS)
    for size in (0, 1, 4):
        assert read_lc(single, size) == ("", [["get_weather", P]])  # 3150
        assert read_lc("Let me check the weather for you.\n" + single, size) == (
            "Let me check the weather for you.\n", [["get_weather", P]])  # 3164
        assert read_lc("\n\n" + single + "\nI will report back shortly.", size) == (
            "", [["get_weather", P]])  # 3170, 3166
        unclosed = "Checking.\n" + LO + '{"name": "get_weather", "arguments": ' + PARIS + "}"
        assert read_lc(unclosed, size) == ("Checking.\n", [["get_weather", P]])  # 3182
        hermes_tags = OPEN + '{"name": "get_weather", "arguments": {}}' + CLOSE  # 3184
        assert read_lc(hermes_tags, size) == (hermes_tags, [])
        for whole in (LO + '{"name": "get_time"}' + LC,  # 3176
                      LO + "{'name': 'get_weather', 'arguments': {}}" + LC,  # 3178
                      LO + '\n{"name": "get_wea'):  # 3188
            assert read_lc(whole, size) == (whole, []), (whole, size)


def test_longcat_reads_only_its_tags_under_a_forced_choice() -> None:  # 3198-3205
    single = lc("get_weather", PARIS)
    for context in (ToolContext(spell=SPELL, required=True),
                    ToolContext(spell=SPELL, forced_name="get_weather")):
        assert read_lc(single, 0, context) == ("", [["get_weather", P]])
        for json_form in (PARIS, '[{"name": "get_weather", "parameters": {"city": "Paris"}}]'):
            assert read_lc(json_form, 0, context) == (json_form, [])


def test_longcat_differences_on_purpose() -> None:  # README hermes rows: 3180, 3190
    bad = LO + '{"oops": 1}' + LC
    assert read_lc(lc("get_weather", PARIS) + bad) == (bad, [["get_weather", P]])
    cut = LO + '\n{"name": "get_weather", "arguments": {"city": "Par'
    assert read_lc(cut) == ("", [["get_weather", '{"city": "Par']])


@pytest.fixture(scope="module")
def longcat(client_for: Any) -> Any:
    return client_for(QWEN, None, "longcat")


@st.composite
def lc_outputs(draw: st.DrawFn) -> tuple[list[str | int], list[list[Any]]]:
    parts: list[str | int] = [draw(st.sampled_from(["", "", "\n", "Let me check 🌦.\n"]))]
    written: list[list[Any]] = []
    for _ in range(draw(st.integers(0, 3))):
        name, args = draw(st.sampled_from([
            ("get_weather", PARIS), ("get_weather", '{"city": "Zürich 東京 😀"}'),
            ("get_time", "{}")]))
        parts.append(f'{LO}{draw(st.sampled_from(["", chr(10)]))}'
                     f'{{"name": "{name}", "arguments": {args}}}')
        written.append([name, json.loads(args)])
        parts.append(draw(st.sampled_from([LC, LC, "\n" + LC + "\n", ""])))
        if parts[-1] == "":
            break
    return [p for p in parts if p != ""], written


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_longcat_any_split_of_the_output_folds_to_the_message(longcat: Any,
                                                              data: st.DataObject) -> None:
    parts, written = data.draw(lc_outputs(), label="output")
    request = data.draw(requests(MESSAGES, [WEATHER, PING]), label="chat_request")
    ids = [*ids_of(*parts, name=QWEN), IM_END]
    choice = run_both(longcat, QWEN, ids, "stop", [1], request, data)
    if request.get("tools") and request.get("tool_choice", "auto") == "auto":
        calls = [[c["function"]["name"], json.loads(c["function"]["arguments"])]
                 for c in choice["message"].get("tool_calls") or []]
        want = written[:1] if request.get("parallel_tool_calls") is False else written
        assert calls == json.loads(json.dumps(want))


LC_PIECES = ["Hi", " ", "\n", " " * 130, PARIS, "{", "}", '{"name": "get_weather", '
             '"arguments": ', '{"name": "g", "arguments": {}}', '"', "😀", LO, LC, "<longcat_",
             "</longcat"]
lc_texts = st.lists(st.sampled_from(LC_PIECES), max_size=14).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=lc_texts, data=st.data())
def test_longcat_any_split_of_a_text_reads_as_the_whole(text: str, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(text)]
    pieces = [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    assert feed_all(LONGCAT, [text], CONTEXT, names_first=True) == feed_all(
        LONGCAT, pieces, CONTEXT, names_first=True)
    check_round_trips(LONGCAT, pieces, CONTEXT)


def test_longcat_registered_as_vllm_names_it() -> None:
    assert parsers.tool_format("longcat") is LONGCAT
    assert TOOLS_BY_TAG[parsers.tag_of("longcat")].name == "longcat"
    with pytest.raises(ValueError, match="not a longcat state"):
        LONGCAT.step(hermes.FORMAT.start(), "x", False, CONTEXT)
