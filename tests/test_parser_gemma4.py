"""The ``gemma4`` tool-call and reasoning parsers. Expected values are vLLM 0.33's answers as
recorded in tests/fixtures/vllm-0.33 (cases 1153-1228, cited by number; the rules read in
``vllm/parser/gemma4.py`` are in docs/vllm-compat/gemma4.md) and, marked, the README
compatibility rows where we differ on purpose. Then: split invariance (machine and app), state
round trips, bounded state over a long stream, garbage, registry pairing. The model is
``gemma4-standin`` (Gemma 3's tokenizer with tokens renamed to Gemma 4's markers; a stand-in,
unverified against Gemma 4's own file).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers import reasoning
from derender.core.parsers.formats import gemma4
from derender.core.parsers.registry import MARKUP, TOOLS_BY_TAG
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.tool_streams import check_round_trips, feed_all, requests, run_both

GEMMA = "gemma4-standin"
TC, TE, Q, CH, CE, EOS = 48, 49, 52, 100, 101, 106
SPELL = {marker: chr(0xE000 + MARKUP.index(marker)) for marker in MARKUP}
S = {name: SPELL[m] for name, m in (("TC", gemma4.TOOL_START), ("TE", gemma4.TOOL_END),
                                     ("Q", gemma4.QUOTE), ("CH", gemma4.CHANNEL_START),
                                     ("CE", gemma4.CHANNEL_END))}
FMT = gemma4.FORMAT
SET_CONFIG = {"type": "function", "function": {"name": "set_config", "parameters": {
    "type": "object", "properties": {
        "count": {"type": "integer"}, "ratio": {"type": "number"},
        "enabled": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
        "meta": {"type": "object"}, "note": {"type": ["string", "null"]},
        "label": {"type": "string"}, "level": {"enum": [1, 2, 3]}}}}}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}}
TOOLS = [WEATHER, SET_CONFIG]
CONTEXT = ToolContext(spell=SPELL, tools=TOOLS)
MESSAGES = [{"role": "user", "content": "What's the weather in Paris? Then set the config."}]


def g(text: str) -> str:
    """Text with ``<|"|>`` and the markers as the marked vocabulary spells them."""
    for marker, stand_in in SPELL.items():
        text = text.replace(marker, stand_in)
    return text


def read(text: str, size: int = 0) -> tuple[str, list[tuple[str, Any]]]:
    """Content and calls (arguments parsed) of the tool machine fed ``g(text)``."""
    text = g(text)
    pieces = [text[i:i + size] for i in range(0, len(text), size)] if size else [text]
    content, calls = feed_all(FMT, pieces or [""], CONTEXT, names_first=True)
    return content, [(name, json.loads(args)) for name, args in calls]


def split_reasoning(text: str, sizes: tuple[int, ...] = (0, 1, 3)) -> tuple[str, str]:
    """(reasoning, content) of the gemma4 reasoning machine, the same for every split."""
    text = g(text)
    results = set()
    for size in sizes:
        pieces = [text[i:i + size] for i in range(0, len(text), size)] if size else [text]
        state = reasoning.ReasoningState(False, S["CH"] + S["CE"])
        out = ["", ""]
        for k, piece in enumerate(pieces or [""]):
            delta, state = reasoning.feed(gemma4.REASONING, state, piece, k == len(pieces) - 1,
                                          SPELL)
            out[0] += delta.reasoning
            out[1] += delta.content
        results.add(tuple(out))
    assert len(results) == 1
    return results.pop()  # type: ignore[return-value]


CALL = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,unit:<|"|>c<|"|>}<tool_call|>'
PARIS = {"city": "Paris", "unit": "c"}


# --------------------------------------------------------------------------- tool rules


@pytest.mark.parametrize("size", [0, 1, 2, 5])
def test_calls(size: int) -> None:
    assert read(CALL, size) == ("", [("get_weather", PARIS)])  # 1153
    two = ('<|tool_call>call:get_weather{city:<|"|>Zürich<|"|>}<tool_call|><|tool_call>call:'
           'get_weather{city:<|"|>東京 "Tokyo"\nline two<|"|>,unit:<|"|>f<|"|>}<tool_call|>')
    assert read(two, size)[1] == [("get_weather", {"city": "Zürich"}), (  # 1155
        "get_weather", {"city": '東京 "Tokyo"\nline two', "unit": "f"})]
    assert read("<|tool_call>call:get_time{}<tool_call|>", size)[1] == [("get_time", {})]  # 1163
    assert read('<|tool_call>:get_weather{city:<|"|>Paris<|"|>}<tool_call|>', size)[1] == [
        ("get_weather", {"city": "Paris"})]  # 1175
    assert read('<|tool_call>call:get_weather(city:<|"|>Paris<|"|>)<tool_call|>', size)[1] == [
        ("get_weather", {"city": "Paris"})]  # 1177
    assert read('<|tool_call>call:get_stock{symbol:<|"|>ACME<|"|>}<tool_call|>', size)[1] == [
        ("get_stock", {"symbol": "ACME"})]  # 1173


@pytest.mark.parametrize("size", [0, 1, 3])
def test_values_typed_as_vllm_types_them(size: int) -> None:
    typed = ('<|tool_call>call:set_config{count:3,ratio:0.5,enabled:true,tags:[<|"|>a<|"|>,'
             '<|"|>b<|"|>],meta:{k:1,nested:{ok:true}},note:null,label:<|"|>42<|"|>,level:2}'
             '<tool_call|>')
    assert read(typed, size)[1] == [("set_config", {  # 1157
        "count": 3, "ratio": 0.5, "enabled": True, "tags": ["a", "b"],
        "meta": {"k": "1", "nested": {"ok": "true"}}, "note": None, "label": "42", "level": 2})]
    fallbacks = ('<|tool_call>call:set_config{count:three,ratio:1e999,enabled:yes,tags:<|"|>a, '
                 'b<|"|>,meta:<|"|>{k: 1}<|"|>,note:None,level:2.0,extra:7}<tool_call|>')
    assert read(fallbacks, size)[1] == [("set_config", {  # 1159
        "count": "three", "ratio": "1e999", "enabled": "yes", "tags": "a, b", "meta": "{k: 1}",
        "note": "None", "level": 2.0, "extra": "7"})]
    quoted = '<|tool_call>call:set_config{count:<|"|>3<|"|>,label:42,ratio:<|"|>x<|"|>}<tool_call|>'
    assert read(quoted, size)[1] == [("set_config", {"count": 3, "label": "42", "ratio": "x"})]
    braces = '<|tool_call>call:get_weather{city:<|"|>Paris {FR}, [x]: y<|"|>}<tool_call|>'
    assert read(braces, size)[1] == [("get_weather", {"city": "Paris {FR}, [x]: y"})]  # 1165
    spaced = '<|tool_call>call:get_weather{ city: <|"|>Paris<|"|> , unit: <|"|>c<|"|> }<tool_call|>'
    assert read(spaced, size)[1] == [("get_weather", PARIS)]  # 1167


@pytest.mark.parametrize("size", [0, 1, 4])
def test_ends_of_calls(size: int) -> None:
    assert read('<|tool_call>call:get_weather{city:<|"|>Paris}<tool_call|>', size)[1] == [
        ("get_weather", {"city": "Paris"})]  # 1179
    assert read('<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}', size)[1] == [
        ("get_weather", {"city": "Paris"})]  # 1181
    assert read('<|tool_call>call:get_weather{city:<|"|>Par', size)[1] == [
        ("get_weather", {"city": "Par"})]  # 1187


def test_the_name_bounds_are_places_in_the_output() -> None:
    """README (gemma4 bounds): a call whose name, as held with the whitespace around it, or
    whose text before ``call:`` passes ``MAX_NAME`` characters is not read, whatever the
    chunks (a stream once dropped what the whole output read, and the text before ``call:``
    was measured a chunk at a time)."""
    space = "\u3000" * gemma4.MAX_NAME
    for written, called in (('<|tool_call>call:get_weather' + space[:-11], True),
                            ('<|tool_call>call:get_weather' + space, False),
                            ('<|tool_call>' + space + 'call:get_weather{}<tool_call|>', True),
                            ('<|tool_call> ' + space + 'call:get_weather{}<tool_call|>', False)):
        text = g(written)
        whole = feed_all(FMT, [text], CONTEXT, names_first=True)
        assert bool(whole[1]) is called, text
        for cut in range(len(text) + 1):
            assert feed_all(FMT, [text[:cut], text[cut:]], CONTEXT, names_first=True) == whole


def test_a_long_run_of_whitespace_ending_a_streamed_value_is_kept_whatever_the_cuts() -> None:
    """A value streamed as a string holds the whitespace ending it for ``MAX_SPACE`` (it is
    dropped where the call ends there, as vLLM strips it); a longer run goes out whole,
    streamed or not (a stream once dropped its last characters at the end)."""
    space = "\u3000" * (gemma4.MAX_SPACE + 3)
    text = g('<|tool_call>call:get_weather{city:<|"|>' + "x" * 1100 + space)
    whole = feed_all(FMT, [text], CONTEXT, names_first=True)
    assert json.loads(whole[1][0][1])["city"] == "x" * 1100 + space
    for cut in range(len(text) - 300, len(text) + 1):
        assert feed_all(FMT, [text[:cut], text[cut:]], CONTEXT, names_first=True) == whole, cut


@pytest.mark.parametrize("size", [0, 1, 3])
def test_content(size: int) -> None:
    # 1169 (the message; vLLM's stream keeps the "\n"), 1171 (the message drops the text after)
    assert read("Let me check the weather for you.\n" + CALL, size)[0] == (
        "Let me check the weather for you.")
    assert read(CALL + "\nI will report back shortly.", size)[0] == ""
    prose = "Gemma writes call:get_weather{city:Paris} as text."
    assert read(prose, size) == (prose, [])  # 1183
    assert read('Say <|"|>hi<|"|> to Paris.', size)[0] == g('Say <|"|>hi<|"|> to Paris.')  # 1185
    assert read("Done.\n", size)[0] == "Done.\n"


# --------------------------------------------------------------------------- reasoning rules


def test_reasoning_rules() -> None:
    r, c = "The user wants Paris weather; call the tool.", "It is sunny in Paris, 22 °C."
    assert split_reasoning(c) == ("", c)  # 1197
    assert split_reasoning(f"<|channel>thought\n{r}<channel|>{c}") == (r, c)  # 1199
    assert split_reasoning(f"<|channel>thought\n{r}<|tool_call>x") == (  # 1203
        r, g("<|tool_call>x"))
    assert split_reasoning(f"<|channel>thought\n{r}") == (r, "")  # 1205
    assert split_reasoning(f"<|channel>{r}<channel|>{c}") == (r, c)  # 1207
    assert split_reasoning(f"<|channel>thought\n<channel|>{c}") == ("", c)  # 1209
    assert split_reasoning(f"thought\n{r}<channel|>{c}") == (r, c)  # 1211
    # 1214 (vLLM's stream; its message makes the text before the stray tag reasoning)
    assert split_reasoning(f"{c}<channel|> more") == ("", f"{c} more")
    assert split_reasoning("<|channel>thought<channel|>x") == ("", "x")
    assert split_reasoning("thoughtful") == ("", "thoughtful")


# --------------------------------------------------------------------------- through the app


@pytest.fixture(scope="module")
def gemma(client_for: Any) -> Any:
    return client_for(GEMMA, "gemma4", "gemma4")


@st.composite
def outputs(draw: st.DrawFn) -> list[str | int]:
    parts: list[str | int] = []
    lead = draw(st.sampled_from(["", "", "thought\nHm.", "Sure.\n"]))
    if draw(st.booleans()):
        parts += [CH, draw(st.sampled_from(["thought\nWeather 🌦.", "Hm", "thought\n"])),
                  draw(st.sampled_from([CE, CE, TC]))]
    parts.append(lead)
    for _ in range(draw(st.integers(0, 2))):
        body = draw(st.sampled_from([
            ["get_weather{city:", Q, "Zürich 東京", Q, ",unit:", Q, "c", Q, "}"],
            ["set_config{count:3,tags:[", Q, "a", Q, "],meta:{k:1},level:2.0}"],
            ["set_config(count:", Q, "3", Q, ",enabled:yes)"], ["get_time{}"],
            ["get_weather{city:", Q, "Par"]]))
        parts += [TC, draw(st.sampled_from(["call:", ":"])), *body]
        if draw(st.integers(0, 3)):
            parts.append(TE)
    parts.append(draw(st.sampled_from(["", "\nDone.", " "])))
    return [p for p in parts if p != ""]


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_split_of_the_output_folds_to_the_message(gemma: Any, data: st.DataObject) -> None:
    from tests.test_parser_rules import ids_of

    parts = data.draw(outputs(), label="output")
    request = data.draw(requests(MESSAGES, TOOLS, reasoning_off=3), label="chat_request")
    ids = [*ids_of(*parts, name=GEMMA), EOS]
    run_both(gemma, GEMMA, ids, "stop", [2], request, data)


# --------------------------------------------------------------------------- the machine

PIECES = ["Hi", " ", "\n", "call:", ":", "get_weather", "set_config", "{", "}", "(", ")", "[",
          "]", ",", "count:", "3", "city:", "Paris", "tags:", "meta:", "k:1", *S.values()]
texts = st.lists(st.sampled_from(PIECES), max_size=20).map("".join)


@settings(max_examples=500, deadline=None)
@given(text=texts, data=st.data())
def test_any_split_of_a_text_reads_as_the_whole(text: str, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(text)]
    pieces = [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    whole = feed_all(FMT, [text], CONTEXT, names_first=True)
    assert feed_all(FMT, pieces, CONTEXT, names_first=True) == whole
    for _, args in whole[1]:
        assert isinstance(json.loads(args), dict)
    check_round_trips(FMT, pieces, CONTEXT)


def test_state_stays_small_over_a_long_stream() -> None:
    """5,000 pieces of a string value, then of a typed value past ``MAX_VALUE``: bounded."""
    pieces = ["Lead 🌦 ", S["TC"], "call:set_config{label:", S["Q"]]
    pieces += ["Zürich 東京 "] * 5000 + [S["Q"], ",count:", S["Q"]] + ["9"] * 5000
    pieces += [S["Q"], "}", S["TE"]]
    state, largest, args = FMT.start(), 0, ""
    for piece in pieces:
        _, deltas, state = FMT.feed(state, piece, False, CONTEXT)
        args += "".join(d.arguments for d in deltas)
        writer = Writer()
        FMT.encode(state, writer)
        largest = max(largest, len(writer.out))
    assert largest < gemma4.MAX_VALUE + 64
    value = json.loads(args)
    assert value["label"] == "Zürich 東京 " * 5000
    assert value["count"] == "9" * 5000  # README: a typed value past MAX_VALUE is a string


def test_garbage_states_are_refused() -> None:
    for bits, space in ((15, ""), (1 << (4 + len(gemma4.Flag)), ""), (0, "x")):
        writer = Writer()
        writer.uint(bits)
        for text in ("", "", "", space, ""):
            writer.text(text)
        for _ in range(3):
            writer.uint(0)
        with pytest.raises(ValueError, match="malformed"):
            FMT.decode(Reader(bytes(writer.out)))


def test_registered_as_vllm_names_them() -> None:
    assert parsers.tool_format("gemma4") is FMT
    assert TOOLS_BY_TAG[parsers.tag_of("gemma4")].name == "gemma4"
    assert parsers.reasoning_format("gemma4") is gemma4.REASONING
    assert "gemma4" in parsers.REASONING_PARSERS
