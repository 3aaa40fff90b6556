"""Thinking Machines Inkling on the parser engine (parsers/formats/inkling.py,
parsers/engine.py): typed blocks, their headers, a call's JSON read as vLLM's message reads
it, each parser alone.

The rules are vLLM 0.33's (``vllm/parser/inkling.py``, docs/vllm-compat/inkling.md); the
recorded cases 9400-9529 replay them against the real server (test_conformance) and each rule
test below names the cases it restates. Split invariance through the HTTP app on
``inkling-standin`` (every marker one special token there), with both parsers and each alone.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers import engine, registry
from derender.core.parsers.engine import MAX_HEADER, MAX_VALUE
from derender.core.parsers.formats import inkling
from derender.core.parsers.registry import REASONING_ONLY, TOOLS
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.models import tokenizer, vocabulary
from derender_testing.tool_streams import (
    check_written,
    requests,
    run_both,
    spoil,
)
from tests.test_parser_dsml import AUTO, NO_TOOLS, NONE
from tests.test_parser_dsml import TOOLS as REQUEST_TOOLS
from tests.test_parser_properties import PROPS

MODEL = "inkling-standin"
MSG, END, SAMPLING = inkling.MESSAGE_MODEL, inkling.END_MESSAGE, inkling.CONTENT_MODEL_END_SAMPLING
THINK, TEXT = inkling.CONTENT_THINKING, inkling.CONTENT_TEXT
JSON_CALL = inkling.CONTENT_INVOKE_TOOL_JSON
THOUGHT = THINK + "Hmm." + END


def call(name: str, args: Any, author: str | None = None, raw: str | None = None) -> str:
    payload = raw if raw is not None else json.dumps({"name": name, "args": args},
                                                     ensure_ascii=False)
    return MSG + (name if author is None else author) + JSON_CALL + payload + END


def text(body: str) -> str:
    return MSG + TEXT + body + END


def parse(pieces: str | list[str], context: ToolContext = AUTO, mode: str = registry.BOTH,
          check: Any = None) -> tuple[str, str, list[tuple[str, str]]]:
    """Reasoning, content and calls of the output, whole or in pieces (the last one final),
    read as the parsers of ``mode`` read it."""
    pieces = [pieces] if isinstance(pieces, str) else pieces
    config = inkling.INKLING_CONFIG
    state = engine.start(inkling.INKLING, config, True, mode)
    reasoning, content = "", ""
    calls: dict[int, list[str]] = {}
    for k, piece in enumerate(pieces):
        more, out, deltas, state = engine.feed(config, state, piece, k == len(pieces) - 1,
                                               context)
        if check is not None:
            check(state)
        reasoning, content = reasoning + more, content + out
        for delta in deltas:
            assert (delta.name is not None) == (delta.index not in calls)
            entry = calls.setdefault(delta.index, ["", ""])
            entry[0] += delta.name or ""
            entry[1] += delta.arguments
    return reasoning, content, [(calls[i][0], calls[i][1]) for i in sorted(calls)]


def round_trip(state: Any) -> None:
    """The state encodes to bytes that decode to it."""
    writer = Writer()
    inkling.INKLING.encode(state, writer)
    assert inkling.INKLING.decode(Reader(bytes(writer.out))) == state


PARIS = call("get_weather", {"city": "Paris", "unit": "c"})
PARIS_ARGS = '{"city": "Paris", "unit": "c"}'


def test_blocks_in_any_order() -> None:
    """[9400] thinking then a call; [9428, 9430, 9432] text blocks before, after and between
    calls, all content; [9434] whitespace alone with a call: none; [9440] two text blocks;
    [9442, 9444] no thinking block; [9450, 9452] thinking after text, twice; [9454] a block
    ended by end-of-sampling; [9456, 9458] raw-text and error tool blocks are content."""
    assert parse(THOUGHT + PARIS) == ("Hmm.", "", [("get_weather", PARIS_ARGS)])
    assert parse(THOUGHT + text("Before.") + PARIS + text("After."))[1] == "Before.After."
    assert parse(THOUGHT + call("get_time", {}) + text("Mid.") + PARIS) == (
        "Hmm.", "Mid.", [("get_time", "{}"), ("get_weather", PARIS_ARGS)])
    assert parse(THOUGHT + text("\n\n") + PARIS)[1] == ""
    assert parse(THOUGHT + text("A. ") + text("B."))[1] == "A. B."
    assert parse(TEXT + "Sunny." + END) == ("", "Sunny.", [])
    assert parse(JSON_CALL + '{"name": "get_time", "args": {}}' + END)[2] == [("get_time", "{}")]
    assert parse(THOUGHT + text("Sunny.") + MSG + THINK + "more" + END + text("end"))[:2] == (
        "Hmm.more", "Sunny.end")
    assert parse(THINK + "Hmm." + SAMPLING + text("Sunny."))[:2] == ("Hmm.", "Sunny.")
    assert parse(THOUGHT + MSG + "x" + inkling.CONTENT_INVOKE_TOOL_TEXT + "raw" + END)[1] == "raw"
    assert parse(THOUGHT + MSG + inkling.CONTENT_TOOL_ERROR + "failed" + END)[1] == "failed"


def test_block_headers() -> None:
    """[9424, 9426] a call's author is not its name; [9448] a header ended without a block
    is content; [9462] so is one the output ends in; [9446] output without markers is
    content; a header longer than ``MAX_HEADER`` is content, whatever the chunks (README
    compatibility: vLLM drops it where a block opens after it)."""
    assert parse(THOUGHT + call("get_weather", {"city": "P"}, author="lookup"))[2] == [
        ("get_weather", '{"city": "P"}')]
    assert parse(THOUGHT + MSG + "stray" + END + text("Sunny."))[1] == "straySunny."
    assert parse(THOUGHT + MSG + "get_wea")[1] == "get_wea"
    assert parse("Just words.") == ("", "Just words.", [])
    held = "h" * MAX_HEADER
    assert parse(THOUGHT + MSG + held + TEXT + "x" + END)[1] == "x"  # within the hold: dropped
    assert parse([THOUGHT + MSG + held, TEXT + "x" + END])[1] == "x"
    long = held + "h"
    for pieces in ([THOUGHT + MSG + long[:-1], long[-1] + TEXT + "x" + END],
                   [THOUGHT + MSG + long, TEXT + "x" + END],
                   [THOUGHT + MSG + long + TEXT + "x" + END]):
        assert parse(pieces)[1] == long + "x"  # past the hold


@pytest.mark.parametrize(("payload", "name", "args"), [
    ('\n { "name" : "get_weather" ,\n  "args" : { "city" : "Paris" } }  ', "get_weather",
     '{ "city" : "Paris" }'),  # [9410] as written
    ('{"args": {"city": "Paris"}, "name": "get_weather"}', "get_weather",
     '{"city": "Paris"}'),  # [9412]
    ('{"name": "get_weather", "arguments": {"city": "Paris"}}', "get_weather", "{}"),  # [9414]
    ('{"name": "get_time"}', "get_time", "{}"),  # [9416]
    ('{"name": "get_weather", "args": "Paris"}', "get_weather", "Paris"),  # [9420]
    ('{"name": "get_weather", "args": {city: Paris}}', "get_weather", "{city: Paris}"),  # 9472
    ('{"name": "get_weather", "args": {"city": "P"}} extra', "get_weather",
     '{"city": "P"}'),  # [9476]
    ('{"name": "get_stock", "args": {"s": "A"}}', "get_stock", '{"s": "A"}'),  # [9478]
    ('{"name": "set_config", "args": {"count": "3", "ratio": "0.5", "label": 42}}',
     "set_config", '{"count": 3, "ratio": 0.5, "label": "42"}'),  # [9408] typed
])
def test_call_json_as_vllm_reads_it(payload: str, name: str, args: str) -> None:
    assert parse(THOUGHT + call(name, None, raw=payload))[2] == [(name, args)]


@pytest.mark.parametrize("payload", [
    '{"args": {"city": "Paris"}}',  # [9422] no name
    "get_weather(Paris)",  # [9474] not JSON, no name
    "",  # [9464] nothing after the marker
    '{"name": "get_wea',  # [9466] cut in the name
])
def test_no_call(payload: str) -> None:
    assert parse(THOUGHT + MSG + "get_weather" + JSON_CALL + payload)[2] == []


def test_cut_off_call_and_requests() -> None:
    """[9468] cut in the arguments: as written so far; [9484] "none": the call hidden, the
    text kept; [9490] no tools: read and dropped."""
    cut = THOUGHT + MSG + JSON_CALL + '{"name": "get_weather", "args": {"city": "Par'
    assert parse(cut)[2] == [("get_weather", '{"city": "Par')]
    assert parse(THOUGHT + text("Checking.") + PARIS, NONE) == ("Hmm.", "Checking.", [])
    assert parse(THOUGHT + text("Checking.") + PARIS, NO_TOOLS) == ("Hmm.", "Checking.", [])


def test_each_parser_alone() -> None:
    """The tool parser alone [9506, 9510, 9514] starts in content and drops the reasoning; the
    reasoning parser alone [9518, 9522, 9528] passes a call block through as text, less its
    header."""
    out = THOUGHT + text("Sure.") + PARIS
    assert parse(out, mode=TOOLS) == ("", "Sure.", [("get_weather", PARIS_ARGS)])
    assert parse(JSON_CALL.join(["get_weather", '{"name": "get_weather", "args": {}}' + END])
                 + text("after"), mode=TOOLS) == ("", "get_weatherafter", [("get_weather", "{}")])
    assert parse(THOUGHT + MSG + "get_wea", mode=TOOLS)[1] == "get_wea"
    assert parse(out, mode=REASONING_ONLY) == (
        "Hmm.", "Sure." + JSON_CALL + json.dumps({"name": "get_weather", "args": {
            "city": "Paris", "unit": "c"}}) + END, [])
    assert parse(THOUGHT + text("A.") + MSG + THINK + "more" + END + text("B."),
                 mode=REASONING_ONLY)[:2] == ("Hmm.more", "A.B.")


def test_a_call_longer_than_the_hold_streams_as_written() -> None:
    """Past ``MAX_VALUE`` characters the call opens once its name and ``args`` object are
    read, which stream as written up to the object's end (not re-typed); without them by
    then it is no call (README compatibility). Every state on the way round-trips."""
    value = "東京 🌦" * (MAX_VALUE // 4)
    payload = '{"name": "set_config", "args": {"label": "' + value + '", "count": "3"}} tail'
    assert parse(THOUGHT + call("set_config", None, raw=payload))[2] == [
        ("set_config", '{"label": "' + value + '", "count": "3"}')]
    pieces = [THOUGHT + MSG + JSON_CALL, *(payload[i:i + 7] for i in range(0, len(payload), 7)),
              END]
    assert parse(pieces, check=round_trip)[2] == [
        ("set_config", '{"label": "' + value + '", "count": "3"}')]
    late = '{"args": {"label": "' + value + '"}, "name": "set_config"}'
    assert parse([THOUGHT + MSG + JSON_CALL + late[:-5], late[-5:] + END])[2] == []
    # README compatibility: whole too, the name is past the hold (vLLM reads the call)
    assert parse(THOUGHT + MSG + JSON_CALL + late + END)[2] == []


def test_the_records() -> None:
    tool, reasoning = registry.TOOLS_BY_NAME["inkling"], registry.REASONING_BY_NAME["inkling"]
    assert tool.config is not None and tool.config.load() is inkling.INKLING_CONFIG
    assert tool.reads is registry.Reads.EVERY_OUTPUT and tool.tag == 215
    assert reasoning.switch is not None and reasoning.switch.load() is inkling.thinking
    assert parsers.engine_mode("inkling", "inkling") == "both"


PIECES = [MSG, END, SAMPLING, THINK, TEXT, JSON_CALL, inkling.CONTENT_INVOKE_TOOL_TEXT,
          '{"name": "get_weather", "args": ', '{"city": "Paris"}', "}", '"', "\\", "get_time",
          '{"name": "set_config", "args": {"count": "3"}}', "\n", " ", "x", "🌦"]


@PROPS
@given(parts=st.lists(st.sampled_from(PIECES), max_size=40),
       mode=st.sampled_from([registry.BOTH, TOOLS, REASONING_ONLY]), cuts=st.data())
def test_any_text_reads_the_same_whole_and_split(parts: list[str], mode: str,
                                                 cuts: st.DataObject) -> None:
    """Split invariance of the machine, and every state reached round-trips its encoding."""
    out = "".join(parts)
    whole = parse(out, mode=mode)
    size = cuts.draw(st.integers(1, 9))
    pieces = [out[i:i + size] for i in range(0, len(out), size)] or [""]
    assert parse(pieces, mode=mode, check=round_trip) == whole


# --------------------------------------------------------------------------- through the app


@st.composite
def outputs(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict[str, Any]]], bool]:
    out = draw(st.sampled_from(["", THOUGHT, THINK + "Hmm.\n" + END]))
    written: list[tuple[str, dict[str, Any]]] = []
    for _ in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            out += text(draw(st.sampled_from(["Sure.", " x <b>\n", "\n", "🌦"])))
        name = draw(st.sampled_from(["get_weather", "get_time", "get_stock"]))
        params = {} if name == "get_time" else draw(st.dictionaries(
            st.sampled_from(["city", "unit"]),
            st.sampled_from(["Paris", "Zürich", "a\nb", "", " < ", "🌦"]), max_size=2))
        out += call(name, params)
        written.append((name, params))
    out, clean = spoil(draw, out, [MSG + "get_wea", JSON_CALL + '{"name": "x', END, TEXT])
    return out, written, clean


@PROPS
@given(data=st.data())
def test_inkling_stream_folds_to_message(client_for: Any, data: st.DataObject) -> None:
    """Both parsers through the app (each alone: the machine's split invariance above, and
    the recorded streams 9506-9529)."""
    reasoning_parser, tool_parser = "inkling", "inkling"
    client = client_for(MODEL, reasoning_parser, tool_parser)
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], REQUEST_TOOLS, 3),
                        label="chat_request")
    out, written, clean = data.draw(outputs(), label="output")
    finish = data.draw(st.sampled_from(["stop", "stop", "length"]), label="finish")
    ids = list(tokenizer(MODEL).encode(out, add_special_tokens=False).ids)
    eos = vocabulary(MODEL).eos_id
    assert eos == 200006
    if finish == "stop" or not ids:
        ids.append(eos)
        finish = "stop"
    prompt = [*tokenizer(MODEL).encode("Weather?", add_special_tokens=False).ids, 200001]
    expected = run_both(client, MODEL, ids, finish, prompt, request, data)
    if clean:
        check_written(expected, [[n, p] for n, p in written], request)


def test_only_configs_with_headers_accept_header_states() -> None:
    """The header and span phases decode for Inkling's states, and are refused as forged in
    another engine format's."""
    from derender.core.parsers.formats import dsml

    for phase in (engine.HEADER, engine.SPAN):
        writer = Writer()
        engine.encode(engine.EngineState(phase=phase), writer)
        assert inkling.INKLING.decode(Reader(bytes(writer.out))).phase == phase
        with pytest.raises(ValueError, match="malformed"):
            dsml.V4.decode(Reader(bytes(writer.out)))
