"""The Qwen3-grammar family: vLLM 0.33's aliases ``qwen3_xml``,
``qwen3_json``, ``llama4_json``; the ``mimo``, ``step3p5`` and ``seed_oss`` parsers and the
``nemotron_v3`` reasoning parser, each the ``qwen3`` reasoning machine or the ``qwen3_coder``
tool machine with its differences as data.

Expected values are vLLM's, as recorded in tests/fixtures/vllm-0.33 (case numbers in brackets,
docs/vllm-compat/qwen3_family.md); the replays themselves are in test_conformance.py. Here: the
rules
on the machines, the registry, split invariance through the app on the Qwen3 tokenizer,
state round trips, bounded state over a long stream, and garbage.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from derender.contract.requests import ChatRequest
from derender.core import parsers
from derender.core.parsers import reasoning
from derender.core.parsers.formats import hermes, llama3_json, qwen3_coder
from derender.core.parsers.reasoning import MAX_HELD_SPACE, MAX_SWAP, ReasoningState
from derender.core.parsers.registry import TOOL_RECORDS
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.models import vocabulary
from derender_testing.tool_streams import (
    check_round_trips,
    feed_all,
    ids_of,
    requests,
    run_both,
    split,
)
from tests.test_parser_properties import END_THINK, IM_END, PROMPTS, PROPS, QWEN, THINK, enc
from tests.test_parser_qwen3_coder import TOOLS, outputs

MIMO, SEED = qwen3_coder.MIMO_FORMAT, qwen3_coder.SEED_OSS_FORMAT
AUTO = ToolContext(tools=TOOLS)
R = "\nThe user wants Paris weather; call the tool.\n"
"""The recorded outputs' reasoning."""
WEATHER_XML = ("<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
               "<parameter=unit>\nc\n</parameter>\n</function>")


def calls_of(fmt: Any, text: str, context: ToolContext = AUTO, size: int = 0
             ) -> tuple[str, list[tuple[str, Any]]]:
    content, calls = feed_all(fmt, split(text, size), context)
    return content, [(name, json.loads(args)) for name, args in calls]


def think(name: str, text: str, *, thinking: bool = True, force: bool = False,
          prompt: str = "open", size: int = 0) -> tuple[str, str]:
    """(reasoning, content) of ``text`` under the reasoning format ``name`` (markers as text),
    fed whole or in pieces of ``size``."""
    fmt = reasoning.FORMATS[name]
    state = reasoning.start(fmt, vocabulary(QWEN), PROMPTS[prompt][0], thinking, force)
    if state is None:
        return "", text
    pieces = split(text, size)
    thought = content = ""
    for k, piece in enumerate(pieces):
        delta, state = reasoning.feed(fmt, state, piece, k == len(pieces) - 1, {})
        thought, content = thought + delta.reasoning, content + delta.content
    return thought, content


# --------------------------------------------------------------------------- the registry


def test_aliases_are_the_same_format() -> None:
    """vLLM's ``tool_parsers/__init__.py``: qwen3_xml is the qwen3_coder class, qwen3_json
    hermes, llama4_json llama3_json; step3p5's calls are qwen3_coder's grammar unchanged."""
    aliases = {alias: record.name for record in TOOL_RECORDS for alias in record.aliases}
    assert aliases == {"qwen3_xml": "qwen3_coder", "qwen3_json": "hermes",
                       "llama4_json": "llama3_json", "step3p5": "qwen3_coder",
                       "musespark1x": "muse"}  # (and Muse Spark's alias, issue 20)
    assert set(aliases) <= parsers.TOOL_PARSERS
    assert not set(aliases) & {record.name for record in TOOL_RECORDS}  # no tag of their own
    request = ChatRequest.model_validate({"messages": [{"role": "user", "content": "x"}],
                                          "tools": TOOLS})
    for alias, name in aliases.items():
        settings = parsers.parser_settings(None, alias, request, vocabulary(QWEN))
        assert settings.tool_format == name
        state = parsers.start(settings, vocabulary(QWEN), None)
        assert state.tools is not None
        assert state.tool_tag == parsers.tag_of(name) == parsers.tag_of(alias)
        assert isinstance(state.tools, parsers.tool_format(name).state_type)


def test_an_alias_state_reads_back_as_its_format() -> None:
    """A stream state written under an alias carries the aliased format's tag."""
    for fmt, text in ((qwen3_coder.FORMAT, "<tool_call>\n<function=get_weather>\n<param"),
                      (hermes.FORMAT, '<tool_call>\n{"name": "get_weather", "argu'),
                      (llama3_json.FORMAT, '{"name": "get_weather", "parameters": {"ci')):
        check_round_trips(fmt, split(text, 5), AUTO)


def test_mimo_and_seed_oss_are_formats_of_their_own() -> None:
    assert parsers.tool_format("mimo") is MIMO and parsers.tool_format("seed_oss") is SEED
    tags = {parsers.tag_of(fmt.name) for fmt in (MIMO, SEED, qwen3_coder.FORMAT)}
    assert len(tags) == 3
    for fmt in (MIMO, SEED):
        assert isinstance(fmt.start(), fmt.state_type)
        with pytest.raises(ValueError, match="not a qwen3_coder state"):
            qwen3_coder.FORMAT.step(fmt.start(), "x", False, AUTO)
    assert {"mimo", "step3p5", "seed_oss", "nemotron_v3"} <= set(reasoning.FORMATS)
    assert all(parsers.tool_record(n).under_none for n in ("mimo", "seed_oss"))  # type: ignore[union-attr]


# --------------------------------------------------------------------------- mimo


def test_mimo_keeps_values_as_written() -> None:
    """``_mimo_arg_converter``: no newline trimmed [875, 877, 879, 885]; compact [859]."""
    assert calls_of(MIMO, "<tool_call>\n" + WEATHER_XML + "\n</tool_call>")[1] == [
        ("get_weather", {"city": "\nParis\n", "unit": "\nc\n"})]  # 885
    assert calls_of(MIMO, "<tool_call>\n<function=get_weather>\n<parameter=city>Paris"
                          "</parameter>\n<parameter=unit>c</parameter>\n</function>\n"
                          "</tool_call>")[1] == [("get_weather", {"city": "Paris", "unit": "c"})]
    assert calls_of(MIMO, "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
                          "<parameter=unit>\nc\n</parameter>\n</function>\n</tool_call>")[1] == [
        ("get_weather", {"city": "\nParis\n", "unit": "\nc\n"})]  # 877
    assert calls_of(qwen3_coder.FORMAT, "<tool_call>\n" + WEATHER_XML)[1] == [
        ("get_weather", {"city": "Paris", "unit": "c"})]  # qwen3_coder trims them [835]


def test_mimo_values_are_still_typed() -> None:
    """[863] and [865]: schema typing applies to the strings as written."""
    text = ("<function=set_config>\n<parameter=count>3</parameter>\n<parameter=ratio>0.5"
            "</parameter>\n<parameter=enabled>true</parameter>\n<parameter=tags>[\"a\", \"b\"]"
            "</parameter>\n<parameter=note>null</parameter>\n<parameter=label>42</parameter>\n"
            "<parameter=level>2</parameter>\n</function>")
    assert calls_of(MIMO, text)[1] == [("set_config", {
        "count": 3, "ratio": 0.5, "enabled": True, "tags": ["a", "b"], "note": None,
        "label": "42", "level": 2})]
    assert calls_of(MIMO, "<function=set_config>\n<parameter=count>\n3\n</parameter>"
                          "</function>")[1] == [("set_config", {"count": 3})]


def test_mimo_streams_a_cut_off_value_as_written() -> None:
    """[888]: ``{"city": "\\nPar``."""
    _, deltas, _ = MIMO.feed(MIMO.start(), "<tool_call>\n<function=get_weather>\n"
                             "<parameter=city>\nPar", False, AUTO)
    assert "".join(d.arguments for d in deltas) == '{"city": "\\nPar'


# --------------------------------------------------------------------------- seed_oss

SEED_CALL = "\n\n<seed:tool_call>\n" + WEATHER_XML + "\n</seed:tool_call>"


def test_seed_oss_reads_its_own_tags() -> None:
    """[973]; Qwen3's <tool_call> is content but the <function= in it is a call [999]."""
    assert calls_of(SEED, SEED_CALL) == ("", [("get_weather", {"city": "Paris", "unit": "c"})])
    content, calls = calls_of(SEED, "\n\n<tool_call>\n<function=get_weather>\n"
                                    "<parameter=city>\nParis\n</parameter>\n</function>\n"
                                    "</tool_call>")
    assert calls == [("get_weather", {"city": "Paris"})]
    assert content.strip() == "<tool_call>"  # vLLM's message: "<tool_call>" (we keep "\n\n")


def test_seed_oss_takes_vllms_json_path_when_forced() -> None:
    """No structural tag: named → the content as written is the arguments [1007]; "required"
    → no call, no content [1005]."""
    named = ToolContext(forced_name="get_weather", tools=TOOLS)
    for size in (0, 1, 7):
        content, calls = feed_all(SEED, split(SEED_CALL, size), named)
        assert (content, calls) == ("", [["get_weather", SEED_CALL]])
    assert feed_all(SEED, ["\n\n", ""], named) == ("", [])  # blank: no call (vLLM's source)
    required = ToolContext(required=True, tools=TOOLS)
    assert feed_all(SEED, split(SEED_CALL, 3), required) == ("", [])
    # the other family members read their own syntax when forced [893, 949]
    assert feed_all(MIMO, [SEED_CALL.replace("seed:", "")], named)[1] == [
        ["get_weather", '{"city": "\\nParis\\n", "unit": "\\nc\\n"}']]


# --------------------------------------------------------------------------- reasoning


def test_family_reasoning_splits_as_qwen3() -> None:
    """<think> absorbed, </think> ends reasoning, content as written [859, 897, 953, 1011];
    no start tag [901, 1015]; <tool_call> ends it and stays [903, 1017]; no tags: all
    reasoning [905, 961, 1019]."""
    for name, (start, end, tool) in {
            "mimo": ("<think>", "</think>", "<tool_call>"),
            "step3p5": ("<think>", "</think>", "<tool_call>"),
            "nemotron_v3": ("<think>", "</think>", "<tool_call>"),
            "seed_oss": ("<seed:think>", "</seed:think>", "<seed:tool_call>")}.items():
        strip = name in ("step3p5", "nemotron_v3")
        kept = R.rstrip() if strip else R
        for size in (0, 1, 5):
            assert think(name, f"{start}{R}{end}\n\nIt is sunny.", size=size) == (
                kept, "\n\nIt is sunny.")
            assert think(name, f"{R.lstrip()}{end}\n\nIt is sunny.", size=size) == (
                kept.lstrip(), "\n\nIt is sunny.")
            assert think(name, f"{start}{R}{tool}\n<function=f>", size=size) == (
                kept, f"{tool}\n<function=f>")
            assert think(name, "It is sunny.", size=size) == ("It is sunny.", "")


def test_trailing_reasoning_whitespace() -> None:
    """step3p5 and nemotron_v3 strip it [971, 1059]; mimo and seed_oss keep it [915, 1029]."""
    text = "<think>\nR.\n\n  \n</think>\nIt is sunny."
    assert think("step3p5", text) == think("nemotron_v3", text) == ("\nR.", "\nIt is sunny.")
    assert think("mimo", text) == ("\nR.\n\n  \n", "\nIt is sunny.")
    seed = text.replace("think>", "seed:think>")
    assert think("seed_oss", seed) == ("\nR.\n\n  \n", "\nIt is sunny.")


def _cuts(name: str, text: str) -> set[tuple[str, str]]:
    """The answers of ``text`` read whole and cut once anywhere (markers as text)."""
    fmt = reasoning.FORMATS[name]
    answers = set()
    for cut in range(len(text) + 1):
        state = reasoning.start(fmt, vocabulary(QWEN), PROMPTS["open"][0], True, False)
        assert state is not None
        thought = content = ""
        for k, piece in enumerate([text[:cut], text[cut:]]):
            delta, state = reasoning.feed(fmt, state, piece, k == 1, {})
            thought, content = thought + delta.reasoning, content + delta.content
        answers.add((thought, content))
    return answers


@pytest.mark.parametrize("name", ["step3p5", "kimi_k2", "granite_thinking_parser"])
def test_a_long_run_of_trailing_whitespace_is_kept_whatever_the_cuts(name: str) -> None:
    """README compatibility: whitespace ending the reasoning is dropped (as vLLM strips it)
    while it is held, up to ``MAX_HELD_SPACE`` characters; a longer run is kept whole, streamed
    or not. The bound is a run's length, not a chunk's: a stream once kept the run where the
    whole output dropped it."""
    fmt = reasoning.FORMATS[name]
    start = "" if fmt.always_open or name == "granite_thinking_parser" else "<think>"
    for size, kept in ((MAX_HELD_SPACE, False), (MAX_HELD_SPACE + 1, True)):
        run = "\u3000" * size
        ended = f"{start}R.{run}{fmt.end}A."
        cut_off = f"{start}R.{run}"
        assert _cuts(name, ended) == {(("R." + run) if kept else "R.", "A.")}, size
        assert _cuts(name, cut_off) == {(("R." + run) if kept else "R.", "")}, size


def test_thinking_off() -> None:
    """Content from the start; <think> stays text, </think> is dropped [911, 967, 1025, 1045];
    step3p5 ignores the switch, but the Qwen3 template's closed prompt starts it in content
    [963, 967]."""
    text = "<think>T</think>P"
    expected = ("", "<think>TP")
    assert think("mimo", text, thinking=False) == expected
    assert think("nemotron_v3", text, thinking=False) == expected
    assert think("step3p5", text, thinking=False, prompt="closed") == expected
    assert think("step3p5", text, thinking=False) == ("T", "P")  # prompt left open: thinking
    assert think("seed_oss", text.replace("think>", "seed:think>"), thinking=False) == (
        "", "<seed:think>TP")
    assert think("qwen3", text, thinking=False) == ("", text)  # qwen3: the parser is off


def test_seed_oss_does_not_read_the_prompt() -> None:
    """vLLM reads the prompt only with turn boundaries in the vocabulary; <seed:bos>/<seed:eos>
    are not Qwen3 tokens, so a closed Qwen3 prompt still starts seed_oss in reasoning."""
    assert think("seed_oss", "R</seed:think>C", prompt="closed") == ("R", "C")
    assert think("mimo", "R</think>C", prompt="closed") == ("", "RC")


# --------------------------------------------------------------------------- nemotron_v3


def test_nemotron_swaps_reasoning_into_blank_content() -> None:
    """``extract_reasoning`` with content forced: reasoning then "\\n\\n" → content the
    reasoning, reasoning "\\n\\n" [1051]; unterminated → content only [1053]; no swap with
    content [1055] or a call [1057], nor unforced [1035]."""
    body = f"<think>{R}</think>\n\n"
    for size in (0, 1, 4, 9):
        assert think("nemotron_v3", body, force=True, size=size) == ("\n\n", R.rstrip())
        assert think("nemotron_v3", f"<think>{R.rstrip()}", force=True, size=size) == (
            "", R.rstrip())
        assert think("nemotron_v3", body + "It is sunny.", force=True, size=size) == (
            R.rstrip(), "\n\nIt is sunny.")
        assert think("nemotron_v3", body + "<tool_call>", force=True, size=size) == (
            R.rstrip(), "\n\n<tool_call>")
        assert think("nemotron_v3", body, size=size) == (R.rstrip(), "\n\n")
    # thinking off also forces content: output is content [1047], a blank one becomes
    # reasoning (vLLM's source: content blank → swapped)
    assert think("nemotron_v3", "R\n</think>\n\n", thinking=False, force=True) == (
        "", "R\n\n\n")
    assert think("nemotron_v3", "\n\n", thinking=False, force=True) == ("\n\n", "")
    assert think("mimo", body, force=True) == (R, "\n\n")  # only nemotron_v3 swaps


def test_nemotron_stream_holds_at_most_max_swap() -> None:
    """README compatibility: a stream holds reasoning for the swap up to MAX_SWAP characters;
    longer reasoning streams as reasoning and is not swapped (vLLM's stream never swaps); the
    whole text fed at once swaps whatever its length."""
    long = "<think>" + "x" * (MAX_SWAP + 10) + "</think>\n\n"
    assert think("nemotron_v3", long, force=True) == ("\n\n", "x" * (MAX_SWAP + 10))
    assert think("nemotron_v3", long, force=True, size=16) == ("x" * (MAX_SWAP + 10), "\n\n")
    short = "<think>" + "x" * MAX_SWAP + "</think>\n\n"
    assert think("nemotron_v3", short, force=True, size=16) == ("\n\n", "x" * MAX_SWAP)


def test_forces_content_reads_the_kwargs_as_vllm() -> None:
    """``_should_force_content``: enable_thinking false or force_nonempty_content true."""
    def forced(kwargs: dict[str, Any] | None) -> bool:
        return parsers.forces_content(ChatRequest.model_validate(
            {"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": kwargs}))
    assert forced({"force_nonempty_content": True}) and forced({"enable_thinking": False})
    assert not forced(None) and not forced({"force_nonempty_content": 1})
    assert not forced({"enable_thinking": True})


# --------------------------------------------------------------------------- states


def _round_trip(state: ReasoningState) -> None:
    w = Writer()
    reasoning.encode(state, w)
    r = Reader(bytes(w.out))
    assert reasoning.decode(state.reasoning, r) == state and r.pos == len(w.out)


def test_reasoning_states_round_trip_and_stay_bounded() -> None:
    """Every state of a 5,000-token stream reads back, and stays within its bounds."""
    fmt = reasoning.FORMATS["nemotron_v3"]
    rng = random.Random(14)
    words = ["x", " y", "\n", "<", "</th", "ink", ">", "é", "🌦", "  \n"]
    text = "<think>" + "".join(rng.choice(words) for _ in range(2500)) + "</think>\n\n"
    text += "".join(rng.choice(words) for _ in range(2500))
    for force in (True, False):
        state = reasoning.start(fmt, vocabulary(QWEN), None, True, force)
        assert state is not None
        for piece in split(text, 3):
            _, state = reasoning.feed(fmt, state, piece, False, {})
            _round_trip(state)
            assert len(state.kept) <= MAX_SWAP + 3 and len(state.space) <= MAX_HELD_SPACE + 3
            assert len(state.held) <= MAX_HELD_SPACE + len("</think>")


def test_tool_states_round_trip_and_stay_bounded() -> None:
    """mimo and seed_oss states over a 5,000-token stream of calls."""
    rng = random.Random(41)
    for fmt, start, end in ((MIMO, "<tool_call>", "</tool_call>"),
                            (SEED, "<seed:tool_call>", "</seed:tool_call>")):
        body = "".join(f"{start}\n<function=set_config>\n<parameter=label>"
                       + "".join(rng.choice(["a", "\n", "<", "é"]) for _ in range(40))
                       + f"</parameter>\n</function>\n{end}\n" for _ in range(125))
        pieces = split(body, 4)
        check_round_trips(fmt, pieces, AUTO)
        state = fmt.start()
        for piece in pieces:
            _, _, state = fmt.feed(state, piece, False, AUTO)
            w = Writer()
            fmt.encode(state, w)
            assert len(w.out) < qwen3_coder.MAX_VALUE + 2 * qwen3_coder.MAX_NAME + 64


def test_garbage_states_are_refused() -> None:
    rng = random.Random(7)
    for _ in range(300):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 12)))
        for decode in (MIMO.decode, SEED.decode, lambda r: reasoning.decode(True, r)):
            try:
                decode(Reader(raw))
            except (ValueError, IndexError, UnicodeDecodeError):
                continue
    with pytest.raises(ValueError, match="malformed reasoning"):
        reasoning.decode(False, Reader(bytes([0, 0x80, 0x02])))  # no such flag (bit 8)
    with pytest.raises(ValueError, match="malformed reasoning"):
        reasoning.decode(False, Reader(bytes([0, (reasoning.UNMARKED + 1) << 1])))  # no such stage
    with pytest.raises(ValueError, match="malformed MimoState"):
        MIMO.decode(Reader(bytes([99, 0, 0, 0, 0, 0, 0, 0])))


@pytest.mark.parametrize("fmt", [MIMO, SEED])
def test_garbage_text_never_fails(fmt: Any) -> None:
    rng = random.Random(3)
    alphabet = ["<", ">", "/", "=", "function", "parameter", "tool_call", "seed:", "\n", "é",
                "{", "}", "\x00", "\ufffd"]
    for _ in range(50):
        text = "".join(rng.choice(alphabet) for _ in range(200))
        whole = feed_all(fmt, [text], AUTO)
        assert feed_all(fmt, split(text, rng.randrange(1, 9)), AUTO) == whole


# --------------------------------------------------------------------------- through the app


def seed_parts(parts: list[int | str]) -> list[int | str]:
    """Qwen3-coder outputs rewritten with Seed-OSS's tags (as text: not Qwen3 tokens)."""
    out: list[int | str] = []
    for part in parts:
        if part == 151657:
            out.append("<seed:tool_call>")
        elif part == 151658:
            out.append("</seed:tool_call>")
        else:
            out.append(part)
    return out


FAMILY = {"mimo": ("mimo", "mimo"), "step3p5": ("step3p5", "step3p5"),
          "seed_oss": ("seed_oss", "seed_oss"), "nemotron_v3": ("nemotron_v3", "qwen3_coder"),
          "qwen3_xml": ("qwen3", "qwen3_xml")}


@PROPS
@given(data=st.data())
def test_family_stream_folds_to_message(client_for: Any, data: st.DataObject) -> None:
    """Split invariance through the app on the Qwen3 tokenizer, every member, any request
    (thinking on or off, content forced or not)."""
    member = data.draw(st.sampled_from(sorted(FAMILY)), label="member")
    client = client_for(QWEN, *FAMILY[member])
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS),
                        label="chat_request")
    request["chat_template_kwargs"] = data.draw(st.sampled_from([
        None, {"enable_thinking": False}, {"force_nonempty_content": True}]), label="kwargs")
    parts, _, _ = data.draw(outputs(), label="output")
    seed = member == "seed_oss"
    start, end = ("<seed:think>", "</seed:think>") if seed else (THINK, END_THINK)
    thought = data.draw(st.sampled_from([[], ["Hmm, weather.\n"], [start, "a < b\n  "]]))
    closing = data.draw(st.sampled_from([[], [end, "\n\n"]]))
    parts = [*thought, *closing, *(seed_parts(parts) if seed else parts)]
    finish = data.draw(st.sampled_from(["stop", "length"]), label="finish")
    ids = ids_of(parts, enc)
    if finish == "stop" or not ids:
        ids.append(IM_END)
        finish = "stop"
    prompt = data.draw(st.sampled_from(["open", "closed"]), label="prompt")
    run_both(client, QWEN, ids, finish, PROMPTS[prompt][0], request, data)
