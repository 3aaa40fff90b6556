"""The ``deepseek_v3`` and ``deepseek_v31`` tool-call formats, expected values written from vLLM
0.33's ``DeepSeekV3ToolParser`` and ``DeepSeekV31ToolParser``
(vllm/tool_parsers/deepseekv3_tool_parser.py, deepseekv31_tool_parser.py) and, marked, from the
README compatibility table where we differ on purpose:

- output without ``<｜tool▁calls▁begin｜>`` is all content (other markers included, as text);
- with it, content is the text before it (null when only whitespace), for v3 plus the text
  after ``<｜tool▁calls▁end｜>``; the calls are v3's ``<｜tool▁call▁begin｜>``, a
  type, ``<｜tool▁sep｜>``, the name, ``\\n```json\\n``, the arguments and
  ``\\n```<｜tool▁call▁end｜>``, and v3.1's ``<｜tool▁call▁begin｜>``, the name,
  ``<｜tool▁sep｜>``, the arguments and ``<｜tool▁call▁end｜>``; arguments are the raw text;
  a call that does not read so is dropped;
- ``tool_choice`` "required"/named: the formats have a structural tag, so vLLM reads them like
  "auto"; content then "" and a named choice finishes "stop";
- ours: a call cut short (end of output, next call, end of the calls) keeps the arguments read
  so far; an empty name is not a call.

Then the properties: every state round-trips through its encoding with its own tag, feeding
any split of a text gives what feeding it whole gives (machine level, many examples), and
through the HTTP app every split of the output ids folds to the non-streaming message (with
and without the ``deepseek_r1`` reasoning parser). The model is ``deepseek-v4`` (DeepSeek-V4's
vocabulary, served as ``deepseek-v3`` in fixtures 200-237), whose vocabulary has the markers as
single tokens.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers.formats import deepseek
from derender.core.parsers.registry import MARKUP, TOOLS_BY_TAG
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.models import tokenizer
from derender_testing.tool_streams import check_written, feed_all, requests, run_both
from tests.test_parser_properties import PROPS, json_strings, json_text, json_values
from tests.test_parser_rules import NAMED, TOOLS, calls, chat, fields, ids_of, stream_fold

DS = "deepseek-v4"
B, E, C, F, S = 128806, 128807, 128808, 128809, 128814
THINK, END_THINK, EOS = 128821, 128822, 1
PROMPT = ids_of("<｜User｜>Weather in Paris?<｜Assistant｜>", name=DS)
THINK_PROMPT = [*PROMPT, THINK, *ids_of("\n", name=DS)]
PARIS = '{"city": "Paris"}'
NOTE = '{"title": "Zürich 🌦", "tags": ["東京"]}'


def v3_call(name: str, args: str, kind: str = "function") -> list[str | int]:
    return [C, kind, S, f"{name}\n```json\n{args}\n```", F]


def v31_call(name: str, args: str) -> list[str | int]:
    return [C, name, S, args, F]


@pytest.fixture(scope="module")
def v3(client_for: Any) -> Any:
    return client_for(DS, None, "deepseek_v3")


@pytest.fixture(scope="module")
def v31(client_for: Any) -> Any:
    return client_for(DS, None, "deepseek_v31")


@pytest.fixture(scope="module")
def v3_r1(client_for: Any) -> Any:
    return client_for(DS, "deepseek_r1", "deepseek_v3")


@pytest.fixture(scope="module")
def v31_r1(client_for: Any) -> Any:
    return client_for(DS, "deepseek_r1", "deepseek_v31")


def ids(*parts: str | int) -> list[int]:
    return ids_of(*parts, name=DS)


def ask(client: Any, token_ids: list[int], finish: str = "stop",
        prompt: list[int] = PROMPT, **request: Any) -> dict[str, Any]:
    request.setdefault("tools", TOOLS)
    return chat(client, token_ids, model=DS, finish=finish, prompt=prompt, **request)


def both(client: Any, token_ids: list[int], finish: str = "stop", prompt: list[int] = PROMPT,
         **request: Any) -> dict[str, Any]:
    """The non-streaming choice, checked against streams of one and three ids a chunk."""
    request.setdefault("tools", TOOLS)
    choice = ask(client, token_ids, finish, prompt, **request)
    message = choice["message"]
    for size in (1, 3):
        folded, states = stream_fold(client, token_ids, prompt, size, finish, DS, **request)
        assert folded["content"] == (message["content"] or "")
        assert folded["reasoning"] == (message["reasoning"] or "")
        assert [tuple(folded["calls"][i]) for i in sorted(folded["calls"])] == [
            (c["function"]["name"], c["function"]["arguments"])
            for c in message.get("tool_calls") or []]
        assert folded["finish"] == choice["finish_reason"]
        assert max(len(state) for state in states) < 800
    return choice


# --------------------------------------------------------------------------- deepseek_v3


def test_v3_a_single_call(v3: Any) -> None:
    choice = both(v3, ids(B, *v3_call("get_weather", PARIS), E, EOS))
    assert fields(choice) == (None, None, 1, "tool_calls")
    assert calls(choice) == [("get_weather", {"city": "Paris"})]


def test_v3_parallel_calls_with_text_between_them_dropped(v3: Any) -> None:
    choice = both(v3, ids(B, *v3_call("get_weather", PARIS), "\n",
                          *v3_call("create_note", NOTE), E, EOS))
    assert fields(choice) == (None, None, 2, "tool_calls")
    assert calls(choice) == [("get_weather", {"city": "Paris"}),
                             ("create_note", {"title": "Zürich 🌦", "tags": ["東京"]})]


def test_v3_arguments_are_the_raw_text_between_the_fences(v3: Any) -> None:
    raw = '{\n  "title": "a ```b``` \\n c",\n  "n": [1,2]\n}'
    choice = both(v3, ids(B, *v3_call("create_note", raw), E, EOS))
    assert choice["message"]["tool_calls"][0]["function"]["arguments"] == raw


def test_v3_text_before_and_after_the_calls_is_content(v3: Any) -> None:
    choice = both(v3, ids("Checking 東京.\n\n", B, *v3_call("get_weather", PARIS), E,
                          "\nDone 🌦", EOS))
    assert fields(choice) == ("Checking 東京.\n\n\nDone 🌦", None, 1, "tool_calls")


def test_v3_whitespace_around_the_calls(v3: Any) -> None:
    alone = both(v3, ids("\n ", B, *v3_call("get_weather", PARIS), E, "\n", EOS))
    assert fields(alone) == (None, None, 1, "tool_calls")
    # whitespace before the calls is content when text follows them (vLLM joins the two)
    joined = both(v3, ids(" ", B, *v3_call("get_weather", PARIS), E, "\nok", EOS))
    assert fields(joined) == (" \nok", None, 1, "tool_calls")


def test_v3_the_type_before_the_separator_names_nothing(v3: Any) -> None:
    # the name follows the last separator of the call's first line, as vLLM's greedy type
    choice = both(v3, ids(B, C, "function", S, "x", S, "get_weather\n```json\n{}\n```", F, E,
                          EOS))
    assert calls(choice) == [("get_weather", {})]


def test_v3_a_call_without_its_fence_is_dropped(v3: Any) -> None:
    choice = both(v3, ids("Hi", B, C, "function", S, "get_weather\n" + PARIS, F,
                          *v3_call("create_note", NOTE), E, EOS))
    assert fields(choice) == ("Hi", None, 1, "tool_calls")
    assert calls(choice)[0][0] == "create_note"


def test_v3_an_unreadable_head_longer_than_the_bound_is_dropped(v3: Any) -> None:
    choice = both(v3, ids(B, C, "function", S, "x" * 700, F, *v3_call("get_weather", PARIS),
                          E, EOS))
    assert [name for name, _ in calls(choice)] == ["get_weather"]


def test_v3_a_call_cut_off_keeps_its_arguments(v3: Any) -> None:
    # ours (README): vLLM returns no call and content null; its stream sends this call
    choice = both(v3, ids(B, C, "function", S, 'get_weather\n```json\n{"city": "Par'),
                  finish="length")
    assert fields(choice) == (None, None, 1, "length")
    assert choice["message"]["tool_calls"][0]["function"]["arguments"] == '{"city": "Par'


def test_v3_a_call_cut_short_by_the_end_of_the_calls(v3: Any) -> None:
    # ours (README): the arguments read so far, less the closing fence; then content again
    choice = both(v3, ids(B, C, "function", S, "get_weather\n```json\n" + PARIS + "\n```", E,
                          "ok", EOS))
    assert fields(choice) == ("ok", None, 1, "tool_calls")
    assert calls(choice) == [("get_weather", {"city": "Paris"})]


def test_v3_calls_without_the_opening_marker_are_content(v3: Any) -> None:
    out = ids(*v3_call("get_weather", PARIS), EOS)
    choice = both(v3, out)
    assert fields(choice) == (tokenizer(DS).decode(out[:-1]), None, 0, "stop")


def test_v3_markers_spelled_by_ordinary_tokens_are_text(v3: Any) -> None:
    spelled = ["<｜tool▁calls", "▁begin｜>"]
    out = ids(*spelled, *v3_call("get_weather", PARIS), EOS)
    assert B not in out
    choice = both(v3, out)
    assert fields(choice)[2:] == (0, "stop")
    assert choice["message"]["content"].startswith("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>")


def test_v3_tool_choice_none_keeps_the_markup(v3: Any) -> None:
    out = ids(B, *v3_call("get_weather", PARIS), E, EOS)
    choice = both(v3, out, tool_choice="none")
    assert fields(choice) == (tokenizer(DS).decode(out[:-1]), None, 0, "stop")


def test_v3_required_and_named_read_the_format(v3: Any) -> None:
    out = ids(B, *v3_call("get_weather", PARIS), E, EOS)
    assert fields(both(v3, out, tool_choice="required")) == ("", None, 1, "tool_calls")
    assert fields(both(v3, out, tool_choice=NAMED)) == ("", None, 1, "stop")


def test_v3_parallel_false_keeps_the_first_call(v3: Any) -> None:
    out = ids(B, *v3_call("get_weather", PARIS), *v3_call("create_note", NOTE), E, EOS)
    choice = both(v3, out, parallel_tool_calls=False)
    assert calls(choice) == [("get_weather", {"city": "Paris"})]


def test_v3_with_r1_reasoning(v3_r1: Any) -> None:
    out = ids("Paris weather: call the tool.\n", END_THINK, "\n\n", B,
              *v3_call("get_weather", PARIS), E, EOS)
    choice = both(v3_r1, out, prompt=THINK_PROMPT)
    assert fields(choice) == (None, "Paris weather: call the tool.\n", 1, "tool_calls")


def test_long_arguments_keep_the_state_small(v3: Any, v31: Any) -> None:
    raw = json.dumps({"body": "🌦 Zürich " * 400}, ensure_ascii=False)
    for client, call in ((v3, v3_call), (v31, v31_call)):
        out = ids(B, *call("create_note", raw), E, EOS)
        folded, states = stream_fold(client, out, PROMPT, 7, "stop", DS, tools=TOOLS)
        assert folded["calls"][0] == ["create_note", raw]
        assert folded["argument_chunks"] > 100
        assert max(len(state) for state in states) < 400


# --------------------------------------------------------------------------- deepseek_v31


def test_v31_a_single_call(v31: Any) -> None:
    choice = both(v31, ids(B, *v31_call("get_weather", PARIS), E, EOS))
    assert fields(choice) == (None, None, 1, "tool_calls")
    assert calls(choice) == [("get_weather", {"city": "Paris"})]


def test_v31_parallel_calls(v31: Any) -> None:
    choice = both(v31, ids(B, *v31_call("get_weather", PARIS), *v31_call("create_note", NOTE),
                           E, EOS))
    assert calls(choice) == [("get_weather", {"city": "Paris"}),
                             ("create_note", {"title": "Zürich 🌦", "tags": ["東京"]})]


def test_v31_text_before_is_content_text_after_is_dropped(v31: Any) -> None:
    choice = both(v31, ids("Checking.\n", B, *v31_call("get_weather", PARIS), E, "\nDone", EOS))
    assert fields(choice) == ("Checking.\n", None, 1, "tool_calls")


def test_v31_calls_after_the_end_of_the_calls_are_still_read(v31: Any) -> None:
    choice = both(v31, ids(B, *v31_call("get_weather", PARIS), E, " ",
                           *v31_call("create_note", NOTE), EOS))
    assert [name for name, _ in calls(choice)] == ["get_weather", "create_note"]


def test_v31_arguments_are_raw(v31: Any) -> None:
    raw = ' {"city" :"Z\\u00fcrich"}\n'
    choice = both(v31, ids(B, *v31_call("get_weather", raw), E, EOS))
    assert choice["message"]["tool_calls"][0]["function"]["arguments"] == raw


def test_v31_unreadable_heads_are_dropped(v31: Any) -> None:
    # a line break in the name, an empty name (ours: vLLM returns a call named "")
    choice = both(v31, ids(B, C, "get\nweather", S, PARIS, F, C, S, PARIS, F,
                           *v31_call("create_note", NOTE), E, EOS))
    assert [name for name, _ in calls(choice)] == ["create_note"]


def test_v31_a_call_cut_off_keeps_its_arguments(v31: Any) -> None:
    choice = both(v31, ids(B, C, "get_weather", S, '{"city": "Par'), finish="length")
    assert fields(choice) == (None, None, 1, "length")
    assert choice["message"]["tool_calls"][0]["function"]["arguments"] == '{"city": "Par'


def test_v31_calls_without_the_opening_marker_are_content(v31: Any) -> None:
    out = ids(*v31_call("get_weather", PARIS), EOS)
    assert fields(both(v31, out)) == (tokenizer(DS).decode(out[:-1]), None, 0, "stop")


def test_v31_named_tool_choice(v31: Any) -> None:
    out = ids(B, *v31_call("get_weather", PARIS), E, EOS)
    assert fields(both(v31, out, tool_choice=NAMED)) == ("", None, 1, "stop")


def test_v31_with_r1_reasoning(v31_r1: Any) -> None:
    out = ids("Paris weather.\n", END_THINK, "\n\n", B, *v31_call("get_weather", PARIS), E,
              EOS)
    choice = both(v31_r1, out, prompt=THINK_PROMPT)
    assert fields(choice) == (None, "Paris weather.\n", 1, "tool_calls")


# --------------------------------------------------------------------------- the machines

FORMATS = (deepseek.V3, deepseek.V31)
SPELL = {marker: chr(0xE000 + MARKUP.index(marker)) for marker in MARKUP}
PIECES = ["Hi", " ", "\n", "\n\n", " " * 130, "```", "```json", "\n```json\n", "\n```", "`",
          PARIS, "{", "}", '"', "function", "get_weather", "x", *deepseek.MARKERS,
          "<｜tool", "▁sep｜>"]
contexts = st.sampled_from([ToolContext(spell=SPELL), ToolContext(),
                            ToolContext(forced_name="get_weather", spell=SPELL),
                            ToolContext(required=True, spell=SPELL)])
texts = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)


def test_both_formats_are_registered_with_their_own_tag_and_state() -> None:
    for fmt in FORMATS:
        assert parsers.tool_format(fmt.name) is fmt
        assert parsers.tool_format(TOOLS_BY_TAG[parsers.tag_of(fmt.name)].name) is fmt
    assert deepseek.V3.state_type is not deepseek.V31.state_type
    with pytest.raises(ValueError, match="not a deepseek_v31 state"):
        deepseek.V31.step(deepseek.V3.start(), "x", False, ToolContext())


def run(fmt: Any, pieces: list[str], context: ToolContext) -> tuple[str, list[Any]]:
    def check(state: Any) -> None:
        writer = Writer()
        fmt.encode(state, writer)
        reader = Reader(bytes(writer.out))
        assert fmt.decode(reader) == state and reader.pos == len(writer.out)
        assert len(state.held) <= deepseek.MAX_HEAD + deepseek.MAX_LEADING_SPACE

    return feed_all(fmt, pieces, context, check, names_first=True)


@settings(max_examples=600, deadline=None)
@given(fmt=st.sampled_from(FORMATS), context=contexts, text=texts, data=st.data())
def test_any_split_of_a_text_reads_as_the_whole(fmt: Any, context: ToolContext, text: str,
                                                data: st.DataObject) -> None:
    if context.spell:
        for marker, stand_in in SPELL.items():
            text = text.replace(marker, stand_in)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(text)]
    pieces = [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    assert run(fmt, pieces, context) == run(fmt, [text], context)


def test_malformed_states_are_refused() -> None:
    for fields_ in ((7, "", 0, ""), (1 << 7, "", 0, ""), (1 << 6, "", 0, ""), (0, "", 0, "x"),
                    (0, "x" * 1000, 0, "")):
        writer = Writer()
        writer.uint(fields_[0])
        writer.text(fields_[1])
        writer.uint(fields_[2])
        writer.text(fields_[3])
        with pytest.raises(ValueError, match="malformed"):
            deepseek.V3.decode(Reader(bytes(writer.out)))


# --------------------------------------------------------------------------- split invariance


def chat_requests() -> st.SearchStrategy[dict[str, Any]]:
    return requests([{"role": "user", "content": "Weather? 🌦"}], TOOLS, reasoning_off=3)


@st.composite
def outputs(draw: st.DrawFn, v3: bool) -> tuple[list[str | int], list[tuple[str, Any]], bool]:
    """(parts, calls written, clean)."""
    values = json_values(json_strings)
    written: list[tuple[str, Any]] = []
    parts: list[str | int] = []
    lead = draw(st.sampled_from(["", "", "", "\n\n", " ", "Sure — 🌦 checking.\n"]))
    parts += [lead] if lead else []
    begin = draw(st.integers(0, 6)) > 0
    parts += [B] if begin else []
    for k in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["get_weather", "create_note", "search_web"]))
        args = draw(st.dictionaries(st.sampled_from(["q", "city", "ß", "k\"q"]), values,
                                    max_size=3))
        text = draw(json_text(args))
        if draw(st.booleans()):
            text = json.dumps(args, ensure_ascii=False, indent=2)
        written.append((name, args))
        if k and draw(st.booleans()):
            parts.append(draw(st.sampled_from(["\n", " ", "junk"])))
        parts += v3_call(name, text) if v3 else v31_call(name, text)
    change = draw(st.sampled_from(["", "", "", "end", "end", "trail", "cut", "junk"]))
    if change in ("end", "trail"):
        parts.append(E)
    if change == "trail":
        parts.append(draw(st.sampled_from(["\n", "\nDone.", " 🌦"])))
    elif change == "cut" and parts:
        last = parts.pop()
        if isinstance(last, str) and len(last) > 1:
            parts.append(last[:draw(st.integers(1, len(last) - 1))])
    elif change == "junk":
        parts += [C, draw(st.sampled_from(["function", "get_weather\n", "x"])), S]
    clean = begin and change in ("", "end", "trail")
    return parts, written, clean


def check_splits(client: Any, v3: bool, data: st.DataObject, reasoning: bool = False) -> None:
    """Split invariance for a drawn request and output (with ``reasoning``, after a drawn
    thought and ``</think>``); where the output is clean, its calls are the message's."""
    request = data.draw(chat_requests(), label="chat_request")
    parts, written, clean = data.draw(outputs(v3), label="output")
    if reasoning:
        thought = data.draw(st.sampled_from(["", "Thinking 🌦.\n"]), label="reasoning")
        parts = [*([thought] if thought else []), END_THINK, "\n\n", *parts]
    ids = ids_of(*parts, name=DS)
    finish = data.draw(st.sampled_from(["stop", "stop", "length"]), label="finish")
    if finish == "stop" or not ids:
        ids.append(EOS)
        finish = "stop"
    expected = run_both(client, DS, ids, finish, THINK_PROMPT if reasoning else PROMPT, request,
                        data)
    if clean:
        check_written(expected, written, request)


SPLITS = settings(PROPS, max_examples=100)


@SPLITS
@given(data=st.data())
def test_deepseek_v3_stream_folds_to_message(v3: Any, data: st.DataObject) -> None:
    check_splits(v3, True, data)


@SPLITS
@given(data=st.data())
def test_deepseek_v31_stream_folds_to_message(v31: Any, data: st.DataObject) -> None:
    check_splits(v31, False, data)


@SPLITS
@given(data=st.data())
def test_deepseek_with_r1_reasoning_stream_folds_to_message(v3_r1: Any, v31_r1: Any,
                                                           data: st.DataObject) -> None:
    v3 = data.draw(st.booleans(), label="v3")
    check_splits(v3_r1 if v3 else v31_r1, v3, data, reasoning=True)
