"""The ``kimi_k2`` tool-call and reasoning parsers. Expected values are vLLM 0.33's answers as
recorded in tests/fixtures/vllm-0.33 (cases 1063-1152, cited by number; the rules read in
``vllm/parser/kimi_k2.py`` are in docs/vllm-compat/kimi.md) and, marked, the README
compatibility rows where we differ on purpose. The tool machine is the DeepSeek marker
machine (``deepseek.KIMI_GRAMMAR``); the reasoning machine ``reasoning.FORMATS["kimi_k2"]``.
Then: ids through the app (the header, the same streaming and not), split invariance, state
round trips, bounded state over a long stream, garbage, registry pairing. The model is
``kimi-k2-standin`` (GPT-2's vocabulary with Kimi's special tokens at their real ids; a
stand-in, unverified against Kimi's own tiktoken file).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers import reasoning
from derender.core.parsers.formats import deepseek
from derender.core.parsers.primitives import MAX_LEADING_SPACE
from derender.core.parsers.registry import MARKUP, TOOLS_BY_TAG
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.tool_streams import check_round_trips, feed_all, requests, run_both
from tests.test_parser_rules import fields, ids_of, post

KIMI = "kimi-k2-standin"
SB, SE, CB, AB, CE = 163595, 163596, 163597, 163598, 163599
THINK, END_THINK, EOS = 163606, 163607, 163586
SPELL = {marker: chr(0xE000 + MARKUP.index(marker)) for marker in MARKUP}
M = dict(zip(("SB", "SE", "CB", "CE", "AB"), (SPELL[m] for m in deepseek.KIMI_MARKERS),
             strict=True))
CONTEXT = ToolContext(spell=SPELL)
FMT = deepseek.KIMI_K2
KIMI_REASONING = reasoning.FORMATS["kimi_k2"]
PARIS = '{"city": "Paris", "unit": "c"}'
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}}}}
MESSAGES = [{"role": "user", "content": "What's the weather in Paris? Then set the config."}]


def call(header: str, args: str) -> str:
    return f"{M['CB']}{header}{M['AB']}{args}{M['CE']}"


def section(*calls: str) -> str:
    return M["SB"] + "".join(calls) + M["SE"]


def read(text: str, size: int = 0) -> tuple[str, list[list[str]], list[str | None]]:
    """Content, calls and ids of the tool machine fed ``text`` (in pieces of ``size``)."""
    pieces = [text[i:i + size] for i in range(0, len(text), size)] if size else [text]
    state, ids = FMT.start(), []
    for k, piece in enumerate(pieces or [""]):
        _, deltas, state = FMT.feed(state, piece, k == len(pieces) - 1, CONTEXT)
        ids += [d.id for d in deltas if d.name is not None]
    content, calls = feed_all(FMT, pieces or [""], CONTEXT, names_first=True)
    return content, calls, ids


def think(text: str, thinking: bool = True) -> tuple[str, str]:
    """(reasoning, content) of the kimi_k2 reasoning machine, fed whole."""
    state = reasoning.ReasoningState(thinking)
    delta, _ = reasoning.feed(KIMI_REASONING, state, text, True, SPELL)
    return delta.reasoning, delta.content


# --------------------------------------------------------------------------- tool rules


def test_single_call_id_is_the_header() -> None:  # 1063
    assert read(section(call("functions.get_weather:0", PARIS))) == (
        "", [["get_weather", PARIS]], ["functions.get_weather:0"])


def test_header_and_arguments_are_stripped() -> None:  # 1075
    text = M["SB"] + "\n" + call(" functions.get_weather:0 \n", f"\n{PARIS}\n") + "\n" + M["SE"]
    assert read(text) == ("", [["get_weather", PARIS]], ["functions.get_weather:0"])


def test_headers_as_written() -> None:  # 1087, 1089, 1091
    assert read(section(call("get_weather:0", PARIS)))[2] == ["get_weather:0"]
    assert read(section(call("functions.get_weather:7", PARIS)))[2] == [
        "functions.get_weather:7"]
    _, calls, ids = read(section(call("functions.tools.get_weather:0", PARIS)))
    assert (calls[0][0], ids) == ("tools.get_weather", ["functions.tools.get_weather:0"])


def test_header_without_index_drops_the_call() -> None:  # 1085
    assert read(section(call("functions.get_weather", PARIS))) == ("", [], [])


def test_arguments_are_raw_and_empty_ones_are_braces() -> None:  # 1093, 1073, 1071
    assert read(section(call("functions.get_weather:0", "{'city': 'Paris'}")))[1] == [
        ["get_weather", "{'city': 'Paris'}"]]
    assert read(section(call("functions.get_time:0", "")))[1] == [["get_time", "{}"]]
    assert read(section(call("functions.get_time:0", "{}")))[1] == [["get_time", "{}"]]


def test_string_values_stay_as_written() -> None:  # 1069 (README: vLLM's message types them)
    args = '{"count": "3", "level": "2"}'
    assert read(section(call("functions.set_config:0", args)))[1] == [["set_config", args]]


def test_content_around_the_section() -> None:  # 1077, 1081, 1079, 1099
    written = section(call("functions.get_weather:0", PARIS))
    assert read("Let me check the weather for you.\n" + written)[0] == (
        "Let me check the weather for you.\n")
    assert read("\n\n" + written)[0] == ""
    assert read(written + "\nI will report back shortly.")[:2] == ("", [["get_weather", PARIS]])
    bare = call("functions.get_weather:0", PARIS)
    assert read(bare) == (bare, [], [])


def test_section_shapes() -> None:  # 1095, 1097, 1101, 1105, 1103
    head = M["CB"] + "functions.get_weather:0" + M["AB"]
    assert read(M["SB"] + head + PARIS + M["SE"])[1] == [["get_weather", PARIS]]
    assert read(M["SB"] + call("functions.get_weather:0", PARIS))[1] == [["get_weather", PARIS]]
    two = section(call("functions.get_weather:0", PARIS)) + section(
        call("functions.get_time:1", "{}"))
    assert read(two)[1:] == ([["get_weather", PARIS], ["get_time", "{}"]],
                             ["functions.get_weather:0", "functions.get_time:1"])
    assert read(M["SB"] + head + '{"city": "Par')[1] == [["get_weather", '{"city": "Par']]
    for size in (0, 1):  # cut off before its arguments: "{}" (as vLLM's empty arguments)
        assert read(M["SB"] + head, size)[1] == [["get_weather", "{}"]]
    prose = 'Kimi writes functions.get_weather:0 {"city": "Paris"} as text.'
    assert read(prose) == (prose, [], [])


# --------------------------------------------------------------------------- reasoning rules


def test_reasoning_rules() -> None:
    r = "The user wants Paris weather; call the tool."
    c = "It is sunny in Paris, 22 °C."
    assert think(f"{r}{SPELL['</think>']}\n\n{c}") == (r, f"\n\n{c}")  # 1123
    assert think(r) == (r, "")  # 1125
    assert think(f"{SPELL['<think>']}{r}{SPELL['</think>']}{c}") == (r, c)  # 1127
    assert think(f"{r}\n \n{SPELL['</think>']}{c}") == (r, c)  # 1129
    got = think(f"{r}\n{M['SB']}x")  # 1131: the section ends reasoning and stays for the tools
    assert got == (r, f"{M['SB']}x")
    assert think(f"{r}{SPELL['</think>']}{c}{SPELL['</think>']} more") == (r, f"{c} more")  # 1133


def test_thinking_switch() -> None:  # 1135, 1141, 1143 and the default
    on = reasoning.switched_on
    assert on(KIMI_REASONING, {}, False) is True
    assert on(KIMI_REASONING, {"thinking": False}, True) is False
    assert on(KIMI_REASONING, {"enable_thinking": False}, True) is False
    assert on(KIMI_REASONING, {"thinking": True}, True) is True
    assert on(KIMI_REASONING, {"thinking": False, "enable_thinking": True}, True) is True


# --------------------------------------------------------------------------- through the app


@pytest.fixture(scope="module")
def kimi(client_for: Any) -> Any:
    return client_for(KIMI, "kimi_k2", "kimi_k2")


def ask(client: Any, ids: list[int], messages: list[dict[str, Any]], stream: bool,
        **request: Any) -> list[tuple[str, str, str]]:
    """(id, name, arguments) of each call, non-streaming or one id a chunk."""
    chat = {"messages": messages, "tools": [WEATHER], **request}
    if not stream:
        body = {"model": KIMI, "chat_request": chat, "generate_response": {
            "request_id": "kimi-1", "prompt_token_ids": [1],
            "choices": [{"index": 0, "token_ids": ids, "finish_reason": "stop"}]}}
        message = post(client, body)["choices"][0]["message"]
        return [(c["id"], c["function"]["name"], c["function"]["arguments"])
                for c in message.get("tool_calls") or []]
    state, out = None, {}
    for k, token in enumerate(ids):
        body = {"stream": True, "model": KIMI, "prompt_token_ids": [1], "chat_request": chat,
                "generate_chunk": {"request_id": "kimi-1", "choices": [
                    {"index": 0, "token_ids": [token],
                     "finish_reason": "stop" if k == len(ids) - 1 else None}]}}
        if state is not None:
            body["stream_state"] = state
        data = post(client, body)
        state = data["stream_state"]
        for choice in data["chunk"]["choices"]:
            for c in choice["delta"].get("tool_calls") or []:
                entry = out.setdefault(c["index"], ["", "", ""])
                entry[0] += c["id"] or ""
                entry[1] += c["function"]["name"] or ""
                entry[2] += c["function"]["arguments"] or ""
    return [tuple(out[i]) for i in sorted(out)]  # type: ignore[misc]


def kimi_ids(header: str) -> list[int]:
    return ids_of(END_THINK, SB, CB, header, AB, PARIS, CE, SE, EOS, name=KIMI)


def test_ids_are_the_headers_streaming_and_not(kimi: Any) -> None:  # 1063/1064, 1089/1090
    for header in ("functions.get_weather:0", "functions.get_weather:7"):
        ids = kimi_ids(header)
        want = [(header, "get_weather", PARIS)]
        assert ask(kimi, ids, MESSAGES, False) == want
        folded = ask(kimi, ids, MESSAGES, True)
        assert [(i, n, json.loads(a)) for i, n, a in folded] == [
            (header, "get_weather", json.loads(PARIS))]


def test_ids_are_not_renumbered_by_the_conversation(kimi: Any) -> None:  # 1115, 1117
    history = [*MESSAGES, {"role": "assistant", "content": "", "tool_calls": [
        {"id": f"functions.get_weather:{i}", "type": "function",
         "function": {"name": "get_weather", "arguments": PARIS}} for i in range(2)]},
        *({"role": "tool", "tool_call_id": f"functions.get_weather:{i}", "content": "sunny"}
          for i in range(2))]
    for header in ("functions.get_weather:2", "functions.get_weather:0"):
        assert ask(kimi, kimi_ids(header), history, False)[0][0] == header
        assert ask(kimi, kimi_ids(header), history, True)[0][0] == header


def test_tool_choice_none_and_no_tools_drop_the_calls(kimi: Any) -> None:  # 1107, 1113
    ids = kimi_ids("functions.get_weather:0")
    for request in ({"tool_choice": "none"}, {"tools": None}):
        body = {"model": KIMI, "chat_request": {"messages": MESSAGES, "tools": [WEATHER],
                                                **request},
                "generate_response": {"request_id": "kimi-2", "prompt_token_ids": [1],
                                      "choices": [{"index": 0, "token_ids": ids,
                                                   "finish_reason": "stop"}]}}
        choice = post(kimi, body)["choices"][0]
        assert fields(choice) == (None, None, 0, "stop")


@st.composite
def outputs(draw: st.DrawFn) -> list[str | int]:
    parts: list[str | int] = []
    if draw(st.booleans()):
        parts += [draw(st.sampled_from(["", "\n", "Thinking 🌦.\n \n"]))]
        parts += [draw(st.sampled_from([END_THINK, SB, "x"]))]
    parts += [draw(st.sampled_from(["", "", "\n", "Let me check.\n"]))]
    if draw(st.integers(0, 5)):
        parts.append(SB)
    for k in range(draw(st.integers(0, 3))):
        header = draw(st.sampled_from(["functions.get_weather:", " get_weather:", "f"]))
        args = draw(st.sampled_from([PARIS, "", ' {"city": "Zürich 東京"} \n', '{"city": "Pa']))
        parts += [CB, f"{header}{k}", AB, args]
        if draw(st.integers(0, 3)):
            parts.append(CE)
    parts += draw(st.sampled_from([[SE], [SE, "\nDone."], [], [SE, SB, CB, "g:9", AB, "{}"]]))
    return [p for p in parts if p != ""]


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_split_of_the_output_folds_to_the_message(kimi: Any, data: st.DataObject) -> None:
    parts = data.draw(outputs(), label="output")
    request = data.draw(requests(MESSAGES, [WEATHER], reasoning_off=3), label="chat_request")
    ids = [*ids_of(*parts, name=KIMI), EOS]
    run_both(kimi, KIMI, ids, "stop", [1], request, data)


# --------------------------------------------------------------------------- the machine

PIECES = ["Hi", " ", "\n", " " * 130, PARIS, "{", "}", "functions.get_weather:0", ":1", "g",
          *M.values(), "<|tool_call", "_begin|>"]
texts = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=texts, data=st.data())
def test_any_split_of_a_text_reads_as_the_whole(text: str, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(text)]
    pieces = [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    assert read("".join(pieces)) == read_pieces(pieces)
    check_round_trips(FMT, pieces, CONTEXT)


def read_pieces(pieces: list[str]) -> tuple[str, list[list[str]], list[str | None]]:
    state, ids = FMT.start(), []
    for k, piece in enumerate(pieces):
        _, deltas, state = FMT.feed(state, piece, k == len(pieces) - 1, CONTEXT)
        ids += [d.id for d in deltas if d.name is not None]
    content, calls = feed_all(FMT, pieces, CONTEXT, names_first=True)
    return content, calls, ids


def test_state_stays_small_over_a_long_stream() -> None:
    """5,000 pieces of arguments and of content: the state never grows with the output."""
    state = FMT.start()
    pieces = ["Lead text 🌦 ", M["SB"], M["CB"], "functions.get_weather:0", M["AB"], '{"city": "']
    pieces += ["Zürich 東京 "] * 5000 + ['"}', M["CE"], M["SE"]]
    largest = 0
    for piece in pieces:
        _, _, state = FMT.feed(state, piece, False, CONTEXT)
        writer = Writer()
        FMT.encode(state, writer)
        largest = max(largest, len(writer.out))
    assert largest < 64


def test_a_long_run_of_whitespace_ending_the_arguments_is_kept_whatever_the_cuts() -> None:
    """The whitespace ending a call's arguments is dropped (vLLM strips them) while held, up
    to ``MAX_LEADING_SPACE`` characters; a longer run goes out whole, streamed or not (a
    stream once sent it where the whole output stripped it)."""
    head = M["SB"] + M["CB"] + "functions.get_weather:0" + M["AB"] + '{"city":'
    for size, kept in ((MAX_LEADING_SPACE, False), (MAX_LEADING_SPACE + 1, True)):
        run = "\u3000" * size
        for tail in ("", M["CE"] + M["SE"]):
            text = head + run + tail
            whole = feed_all(FMT, [text], CONTEXT, names_first=True)
            assert whole[1][0][1] == '{"city":' + (run if kept else ""), (size, tail)
            for cut in range(len(head), len(text) + 1):
                assert feed_all(FMT, [text[:cut], text[cut:]], CONTEXT,
                                names_first=True) == whole, (size, cut)


def test_garbage_states_are_refused() -> None:
    for bits, held in ((1 << 7, ""), (1 << 6, ""), (7, ""), (0, "x" * 1000)):
        writer = Writer()
        writer.uint(bits)
        writer.text(held)
        writer.uint(0)
        writer.text("")
        with pytest.raises(ValueError, match="malformed"):
            FMT.decode(Reader(bytes(writer.out)))


def test_registered_as_vllm_names_them() -> None:
    assert parsers.tool_format("kimi_k2") is FMT
    assert TOOLS_BY_TAG[parsers.tag_of("kimi_k2")].name == "kimi_k2"
    assert "kimi_k2" in parsers.REASONING_PARSERS
    assert parsers.reasoning_format("kimi_k2") is KIMI_REASONING
    with pytest.raises(ValueError, match="not a kimi_k2 state"):
        FMT.step(deepseek.V31.start(), "x", False, CONTEXT)
