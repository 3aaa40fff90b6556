"""The ``kimi_k3`` tool and reasoning parsers (Kimi K3's XTML channels,
``parsers/formats/kimi_k3.py``). Expected values are vLLM 0.33's answers as recorded in
tests/fixtures/vllm-0.33 (cases 7000-7139, cited by number; its rules are in
docs/vllm-compat/kimi_k3.md) and, marked, the README compatibility rows where we differ on
purpose. Then split invariance of the machine (every mode, both spellings of the tags), state
round trips, bounded state, and streams folding to the message through the app on
``kimi-k3-standin`` (GPT-2's vocabulary with K3's special tokens at the ids public ports of its
tokenizer give: unverified against Moonshot's own file).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.decoding.vocab import STAND_IN
from derender.core.parsers import engine
from derender.core.parsers.engine import BOTH, REASONING_ONLY
from derender.core.parsers.engine import TOOLS as TOOLS_ONLY
from derender.core.parsers.formats import kimi_k3
from derender.core.parsers.formats.kimi_k3 import CLOSE, MAX_TAG, MAX_VALUE, OPEN, SEP
from derender.core.parsers.registry import MARKER_INDEX, TOOLS_BY_TAG
from derender.core.parsers.tools import ToolContext
from derender.core.registry import read_model_info
from derender.core.state.codec import Reader, Writer, utf8_size
from derender_testing.models import model_folder, tokenizer, vocabulary
from derender_testing.tool_streams import check_written, requests, run_both, spoil
from tests import cost_cases
from tests.test_parser_properties import PROPS
from tests.test_state_bounds import CAP, issued

MODEL = "kimi-k3-standin"
SPELL = {m: chr(STAND_IN + MARKER_INDEX[m]) for m in (OPEN, CLOSE, SEP)}
TOOLS = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
         for n in ("get_weather", "set_config", "get_time")]
AUTO = ToolContext(tools=TOOLS, spell=SPELL)
NONE = ToolContext(tools=TOOLS, keep=False, spell=SPELL)
LITERAL = ToolContext(tools=TOOLS)
"""The tags spelled as text (a vocabulary without K3's tokens)."""
THOUGHT = "The user wants Paris weather; call the tool."
SUNNY = "It is sunny in Paris, 22 °C."


def el(name: str, body: str, attrs: str = "") -> str:
    return f"{OPEN}{name}{attrs}{SEP}{body}{CLOSE}{name}{SEP}"


def arg(key: str, typ: str, value: str) -> str:
    return el("argument", value, f' key="{key}" type="{typ}"')


def call(tool: str, *args: str) -> str:
    return el("call", "".join(args), f' tool="{tool}" index="1"')


def resp(text: str) -> str:
    return el("response", text)


END, THINK_END = f"{CLOSE}message{SEP}", f"{CLOSE}think{SEP}"
PARIS = call("get_weather", arg("city", "string", "Paris"), arg("unit", "string", "c"))
WEATHER = ("get_weather", {"city": "Paris", "unit": "c"})


def spelled(text: str, context: ToolContext) -> str:
    for marker, spelling in (context.spell or {}).items():
        text = text.replace(marker, spelling)
    return text


def parse(text: str, context: ToolContext = AUTO, thinking: bool = True, mode: str = BOTH,
          size: int = 0) -> tuple[str, str, list[tuple[str, Any]]]:
    """Reasoning, content and calls (arguments parsed when JSON) of the machine fed ``text``
    (in pieces of ``size``; 0: whole), started as the service starts it."""
    text = spelled(text, context)
    pieces = [text[i:i + size] for i in range(0, len(text), size)] if size else [text]
    state = engine.start(kimi_k3.FORMAT, kimi_k3.FORMAT_CONFIG, thinking, mode)
    reasoning, content = "", ""
    calls: dict[int, list[str]] = {}
    for k, piece in enumerate(pieces or [""]):
        more, out, deltas, state = kimi_k3.feed(state, piece, k == len(pieces) - 1, context)
        reasoning += more
        content += out
        for delta in deltas:
            assert (delta.name is not None) == (delta.index not in calls)
            entry = calls.setdefault(delta.index, ["", ""])
            entry[0] += delta.name or ""
            entry[1] += delta.arguments
    restore = {ord(v): k for k, v in SPELL.items()}
    out_calls: list[tuple[str, Any]] = []
    for i in sorted(calls):
        name, arguments = calls[i]
        try:
            out_calls.append((name, json.loads(arguments.translate(restore))))
        except ValueError:
            out_calls.append((name, arguments.translate(restore)))
    return reasoning.translate(restore), content.translate(restore), out_calls


# --------------------------------------------------------------------------- the channels


def test_reasoning_response_and_calls() -> None:
    """[7000, 7002, 7004, 7056]"""
    assert parse(THOUGHT + THINK_END + el("tools", PARIS) + END) == (THOUGHT, "", [WEATHER])
    assert parse(THOUGHT + THINK_END + resp("Let me check.") + el("tools", PARIS) + END) == (
        THOUGHT, "Let me check.", [WEATHER])
    two = el("tools", call("get_weather", arg("city", "string", '東京 "Tokyo"\n😀𝄞')) + call(
        "get_weather", arg("city", "string", "Zürich"), arg("unit", "string", "f")))
    assert parse(THOUGHT + THINK_END + resp("Both.") + two + END)[1:] == ("Both.", [
        ("get_weather", {"city": '東京 "Tokyo"\n😀𝄞'}),
        ("get_weather", {"city": "Zürich", "unit": "f"})])
    assert parse(THOUGHT + THINK_END + resp(SUNNY) + END) == (THOUGHT, SUNNY, [])


def test_arguments_are_typed_by_their_type_attribute() -> None:
    """[7006, 7008, 7010, 7016, 7018]: string as written; else JSON (re-serialised), or the
    text when it is not JSON; no type is a string; no arguments is {}."""
    typed = call("set_config", arg("count", "number", "3"), arg("ratio", "number", "0.5"),
                 arg("enabled", "boolean", "true"), arg("tags", "array", '["a","b"]'),
                 arg("meta", "object", '{"k":1,"deep":{"x":[1,2]}}'), arg("note", "null", "null"),
                 arg("label", "string", "42"))
    _, _, calls = parse(THINK_END + el("tools", typed))
    assert calls == [("set_config", {"count": 3, "ratio": 0.5, "enabled": True,
                                     "tags": ["a", "b"], "meta": {"k": 1, "deep": {"x": [1, 2]}},
                                     "note": None, "label": "42"})]
    raw = parse(THINK_END + el("tools", typed), size=0)
    assert raw == parse(THINK_END + el("tools", typed), size=3)
    assert parse(THINK_END + el("tools", call("set_config", arg("count", "number", "three"),
                                              arg("meta", "object", "{'k': 1}"))))[2] == [
        ("set_config", {"count": "three", "meta": "{'k': 1}"})]
    untyped = el("argument", "untyped", ' key="label"')
    assert parse(THINK_END + el("tools", call("set_config", arg("n", "integer", "7"),
                                              untyped)))[2] == [
        ("set_config", {"n": 7, "label": "untyped"})]
    assert parse(THINK_END + el("tools", call("get_time")))[2] == [("get_time", {})]


def test_attributes_are_unescaped_and_values_raw() -> None:
    """[7014, 7042]"""
    header = call("get_weather", arg("a &quot;q&quot; &amp;amp; b", "string", "x & y"))
    assert parse(THINK_END + el("tools", header))[2] == [("get_weather", {'a "q" &amp; b':
                                                                          "x & y"})]
    value = call("get_weather", arg("city", "string", "a<b>c</b> & d|"))
    assert parse(THINK_END + el("tools", value))[2] == [("get_weather",
                                                         {"city": "a<b>c</b> & d|"})]


def test_tags_allow_whitespace_around_their_names() -> None:
    """[7028, 7072]"""
    out = (resp("Hi") + f"{OPEN} tools {SEP}\n{OPEN}call tool=\"get_weather\"{SEP}\n"
           f"{OPEN} argument key=\"city\" type=\"string\" {SEP}Paris{CLOSE} argument {SEP}\n"
           f"{CLOSE} call {SEP}\n{CLOSE} tools {SEP}")
    assert parse(THOUGHT + THINK_END + out) == (THOUGHT, "Hi", [("get_weather",
                                                                 {"city": "Paris"})])
    assert parse(THOUGHT + f"{CLOSE} think {SEP}" + resp(SUNNY)) == (THOUGHT, SUNNY, [])


def test_content_is_the_first_response_channel() -> None:
    """[7030, 7032, 7034, 7036, 7038, 7040, 7058, 7060, 7046]: its text as written, text around
    it dropped, whitespace alone with a call no content, a later channel read only when none
    came before the calls."""
    lead = THOUGHT + THINK_END
    assert parse(lead + resp("\nHi\n") + "\n" + el("tools", "\n" + PARIS + "\n"))[1] == "\nHi\n"
    assert parse(lead + resp("\n \n") + el("tools", PARIS)) == (THOUGHT, "", [WEATHER])
    assert parse(lead + resp("\n \n") + el("tools", PARIS), NONE)[1] == "\n \n"
    assert parse(lead + el("tools", PARIS) + resp("Done.") + END)[1] == "Done."
    assert parse(lead + resp("One.") + resp("Two.") + el("tools", PARIS))[1] == "One."
    assert parse(lead + el("tools", PARIS) + "\ntrailing text" + END)[1] == ""
    assert parse(lead + resp("Hi") + "loose text" + el("tools", PARIS))[1] == "Hi"
    assert parse(lead + f"{OPEN}response{SEP}" + SUNNY + END)[1] == SUNNY
    assert parse(lead + SUNNY)[1] == SUNNY
    assert parse(lead + resp("Hi") + el("tools", PARIS))[1] == "Hi"


def test_thinking_off_starts_in_the_response_channel() -> None:
    """[7092, 7094, 7096, 7110]: the prompt opens the response channel."""
    off = "Let me check." + f"{CLOSE}response{SEP}" + el("tools", PARIS) + END
    assert parse(off, thinking=False) == ("", "Let me check.", [WEATHER])
    assert parse(SUNNY + f"{CLOSE}response{SEP}" + END, thinking=False)[1] == SUNNY
    assert parse(resp(SUNNY) + END, thinking=False) == ("", SUNNY, [])


def test_reasoning_edges() -> None:
    """[7054, 7062, 7064, 7066, 7070, 7074]: reasoning cut off; an output opening with the
    response channel has none; a tools channel before the think closing is reasoning; a written
    opening tag is dropped; a second closing is content; trailing whitespace kept."""
    assert parse(THOUGHT + " 😀") == (THOUGHT + " 😀", "", [])
    assert parse(resp(SUNNY) + END) == ("", SUNNY, [])
    assert parse(el("tools", PARIS) + END) == (el("tools", PARIS) + END, "", [])
    assert parse(f"{OPEN}think{SEP}" + THOUGHT + THINK_END + resp(SUNNY)) == (THOUGHT, SUNNY,
                                                                              [])
    assert parse(THOUGHT + THINK_END + resp(SUNNY + THINK_END + "x"))[1] == SUNNY + THINK_END \
        + "x"
    assert parse(THOUGHT + "\n \n" + THINK_END + resp(SUNNY))[0] == THOUGHT + "\n \n"
    assert parse("\n" + THINK_END + resp(SUNNY)) == ("\n", SUNNY, [])


def test_calls_need_a_name_and_stream_from_their_header() -> None:
    """[7022, 7026, 7048]; README compatibility: a call left unclosed (7024) or cut off in its
    arguments (7050) keeps the arguments read so far (vLLM: no call)."""
    nameless = el("call", arg("city", "string", "Paris"), ' index="1"')
    assert parse(THINK_END + el("tools", nameless + PARIS))[2] == [WEATHER]
    assert parse(THINK_END + f"{OPEN}tools{SEP}" + PARIS)[2] == [WEATHER]
    assert parse(THINK_END + resp("Hi") + f'{OPEN}tools{SEP}{OPEN}call tool="get_wea')[1:] == (
        "Hi", [])
    unclosed = f'{OPEN}tools{SEP}{OPEN}call tool="get_weather"{SEP}' + arg("city", "string",
                                                                        "Paris")
    assert parse(THINK_END + unclosed + f"{CLOSE}tools{SEP}")[2] == [("get_weather",
                                                                       {"city": "Paris"})]
    cut = f'{OPEN}tools{SEP}{OPEN}call tool="get_weather"{SEP}' \
        + f'{OPEN}argument key="city" type="string"{SEP}Par'
    assert parse(THINK_END + resp("Hi") + cut)[1:] == ("Hi", [("get_weather",
                                                               '{"city": "Par')])


def test_the_reasoning_parser_alone_keeps_the_tools_channel_as_content() -> None:
    """[7128, 7136]: no tools channel read; the response channel's text is the content."""
    out = THOUGHT + THINK_END + resp("Let me check.") + el("tools", PARIS) + END
    assert parse(out, NONE, mode=REASONING_ONLY) == (THOUGHT, "Let me check.", [])
    loose = "Hi" + f"{CLOSE}response{SEP}" + el("tools", PARIS) + END
    assert parse(loose, NONE, thinking=False, mode=REASONING_ONLY) == (
        "", "Hi" + el("tools", PARIS), [])


def test_the_tool_parser_alone_reads_thinking_as_content() -> None:
    """[7118]; README compatibility (7112): text before a response channel stays content."""
    assert parse(THOUGHT + THINK_END + SUNNY, thinking=False, mode=TOOLS_ONLY) == (
        "", THOUGHT + THINK_END + SUNNY, [])


def test_switch() -> None:
    """[7092, 7100, 7102, 7104, 7106]: ``thinking``, else ``enable_thinking``, else on."""
    assert kimi_k3.thinking({}) is True
    assert kimi_k3.thinking({"thinking": False}) is False
    assert kimi_k3.thinking({"thinking": None, "enable_thinking": False}) is False
    assert kimi_k3.thinking({"thinking": True, "enable_thinking": False}) is True


# --------------------------------------------------------------------------- bounds


def test_long_headers_and_values_are_bounded() -> None:
    """README compatibility: a header over ``MAX_TAG`` bytes is text, a typed value over
    ``MAX_VALUE`` bytes the text as a string; either way the state stays bounded."""
    wide = "😀" * (MAX_TAG // 4 + 1)
    head = f'{OPEN}tools{SEP}{OPEN}call tool="{wide}"{SEP}'
    assert parse(THINK_END + head + f"{CLOSE}call{SEP}")[2] == []
    value = "1" * (MAX_VALUE + 1)
    out = THINK_END + el("tools", call("f", arg("n", "number", value)))
    assert parse(out)[2] == [("f", {"n": value})]
    assert parse(out, size=7)[2] == [("f", {"n": value})]


TEXT_PIECES = [OPEN, CLOSE, SEP, "think", "response", "tools", "message", " call", "call ",
               'tool="f"', ' key="k"', ' type="string"', ' type="number"', " type=\"object\"",
               "argument", " argument ", "call", "{", "}", "1", "x", "😀", "\n", " ", '"', "&amp;",
               '<|op', "<|", "|>"]


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.sampled_from(TEXT_PIECES), max_size=40),
       context=st.sampled_from([AUTO, NONE, LITERAL]), thinking=st.booleans(),
       mode=st.sampled_from([BOTH, TOOLS_ONLY, REASONING_ONLY]), size=st.integers(1, 7))
def test_any_text_reads_the_same_whole_and_split(parts: list[str], context: ToolContext,
                                                 thinking: bool, mode: str, size: int) -> None:
    text = "".join(parts)
    whole = parse(text, context, thinking, mode)
    assert parse(text, context, thinking, mode, size) == whole
    state = engine.start(kimi_k3.FORMAT, kimi_k3.FORMAT_CONFIG, thinking, mode)
    text = spelled(text, context)
    for at in range(0, len(text), size):
        _, _, _, state = kimi_k3.feed(state, text[at:at + size], False, context)
        writer = Writer()
        writer.uint(parsers.tag_of("kimi_k3"))
        kimi_k3.FORMAT.encode(state, writer)
        assert len(writer.out) < 2 * (MAX_TAG + kimi_k3.MAX_SPACE + MAX_VALUE)
        reader = Reader(bytes(writer.out))
        assert parsers.tool_format(TOOLS_BY_TAG[reader.uint()].name) is kimi_k3.FORMAT
        assert kimi_k3.FORMAT.decode(reader) == state
        assert reader.pos == len(writer.out)
        assert utf8_size(state.held) <= MAX_TAG + 2 * len(OPEN)


def test_a_malformed_state_is_refused() -> None:
    for bad in (kimi_k3.KimiK3State(phase=99), kimi_k3.KimiK3State(flags=1 << 20),
                kimi_k3.KimiK3State(space="x")):
        writer = Writer()
        kimi_k3.FORMAT.encode(bad, writer)
        with pytest.raises(ValueError, match="malformed"):
            kimi_k3.FORMAT.decode(Reader(bytes(writer.out)))


# --------------------------------------------------------------------------- through the app


@st.composite
def outputs(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict[str, Any]]], bool]:
    text = draw(st.sampled_from(["", f"{OPEN}think{SEP}"])) + draw(st.sampled_from(
        ["Hmm, weather.", "a < b \n", ""])) + draw(st.sampled_from([THINK_END, ""]))
    text += draw(st.sampled_from(["", resp("Sure."), resp(" x <b>\n"), resp("\n"), "Sure."]))
    written: list[tuple[str, dict[str, Any]]] = []
    calls = ""
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["get_weather", "get_time", "set_config"]))
        values = draw(st.dictionaries(st.sampled_from(["city", "unit", "n"]), st.sampled_from(
            ["Paris", "Zürich", "a\nb", "", " < ", "🌦", 3, True, None, [1, "x"]]), max_size=2))
        args = [arg(k, "string", v) if isinstance(v, str) else arg(k, "object", json.dumps(v))
                for k, v in values.items()]
        calls += call(name, *args) + draw(st.sampled_from(["", "\n"]))
        written.append((name, values))
    if written or draw(st.booleans()):
        text += el("tools", calls)
    text += draw(st.sampled_from([END, ""]))
    text, clean = spoil(draw, text, [OPEN, f"{OPEN}call", f"{CLOSE}argument", SEP, THINK_END])
    return text, written, clean


@pytest.mark.parametrize(("reasoning_parser", "tool_parser"), [
    ("kimi_k3", "kimi_k3"), (None, "kimi_k3"), ("kimi_k3", None)])
@PROPS
@given(data=st.data())
def test_kimi_k3_stream_folds_to_message(client_for: Any, reasoning_parser: str | None,
                                         tool_parser: str | None, data: st.DataObject) -> None:
    client = client_for(MODEL, reasoning_parser, tool_parser)
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS, 3),
                        label="chat_request")
    if tool_parser is None:
        request.pop("tools", None)
        request.pop("tool_choice", None)
    if data.draw(st.integers(0, 3)) == 0:
        request["chat_template_kwargs"] = {"thinking": False}
    text, written, clean = data.draw(outputs(), label="output")
    finish = data.draw(st.sampled_from(["stop", "stop", "length"]), label="finish")
    ids = list(tokenizer(MODEL).encode(text, add_special_tokens=False).ids)
    if finish == "stop" or not ids:
        ids.append(163586)
        finish = "stop"
    prompt = tokenizer(MODEL).encode("Weather?", add_special_tokens=False).ids
    expected = run_both(client, MODEL, ids, finish, prompt, request, data)
    thinking = (request.get("chat_template_kwargs") or {}).get("thinking") is not False
    if clean and THINK_END in text and text.startswith(OPEN) is False and thinking \
            and reasoning_parser is not None and tool_parser is not None:
        check_written(expected, [[n, v] for n, v in written], request)


def test_the_stand_in_carries_k3_tokens_at_their_public_ids() -> None:
    vocab = vocabulary(MODEL)
    for token, token_id in (("<|end_of_msg|>", 163586), (OPEN, 163587), (CLOSE, 163588),
                            (SEP, 163589), ("[BOS]", 163584), ("[EOS]", 163585)):
        assert vocab.token_id(token) == token_id
    assert tokenizer(MODEL).encode(f"{OPEN}think{SEP}", add_special_tokens=False).ids == [
        163587, 14925, 163589]


def test_the_context_bound_is_read_from_the_text_config() -> None:
    """vLLM reads ``max_position_embeddings`` from the text model's config: K3's folder nests
    it under ``text_config`` (131072 in the stand-in's), not at the top."""
    assert read_model_info(model_folder(MODEL)).max_model_len == 131072


def test_holdbacks_full_of_wide_characters_degrade_within_the_state_cap() -> None:
    """A typed value, a tag header and whitespace of 4-byte (3-byte) characters past their
    bounds: every state the service would issue stays under ``DERENDER_MAX_STATE_CHARS`` (the
    value becomes a string, the header text, the whitespace is emitted: README
    compatibility), none is refused."""
    setup = cost_cases.settings("kimi_k3", "kimi_k3")
    wide, space = "\U0001F600" * 3000, "\u3000" * 400
    text = (space + THOUGHT + THINK_END + space + f'{OPEN}tools{SEP}{OPEN}call tool="{wide}"{SEP}'
            + call("f", arg("n", "number", wide), arg("s", "string", wide)) + space)
    state = cost_cases.start(setup)
    arguments = ""
    for at in range(0, len(text), 37):
        delta, state = parsers.feed(setup, state, text[at:at + 37], False)
        arguments += "".join(c.arguments for c in delta.calls)
        assert len(issued(state)) <= CAP
    assert json.loads(arguments) == {"n": wide, "s": wide}


def test_pairing() -> None:
    """README compatibility: the ``kimi_k3`` reasoning parser pairs with any tool parser (with
    another family's, the K3 machine reads the reasoning first: recordings 8310-8331); the
    tool parser after another family's reasoning parser reads the content as it does alone."""
    for pair in (("kimi_k3", "kimi_k3"), ("kimi_k3", None), (None, "kimi_k3"),
                 ("qwen3", "kimi_k3"), ("kimi_k3", "hermes")):
        assert parsers.pairing_error(*pair) is None
    assert parsers.front("kimi_k3", "hermes") == "kimi_k3"
    assert parsers.engine_mode("qwen3", "kimi_k3") == "foreign"
    out = "Let me check." + f"{CLOSE}response{SEP}" + el("tools", PARIS) + END
    assert parse(out, thinking=False, mode="foreign") == parse(out, thinking=False, mode=TOOLS_ONLY)
