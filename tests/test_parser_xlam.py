"""xLAM's JSON calls (``xlam``, issue 19, formats/xlam.py). What vLLM 0.33 answers is checked by
the conformance replay (recordings 10200-10278, every one: non-streaming equal, streams folded
to the message); here, what the recordings cannot show: the bound past which the held text is
content (README compatibility), the content streamed before an opener, the record, and that
every stream of any output in any chunking folds to the non-streaming message."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers import registry
from derender.core.parsers.formats import xlam
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.tool_streams import check_written, feed_all, requests, run_text
from tests.test_parser_dsml import TOOLS
from tests.test_parser_properties import PROPS

FMT = xlam.FORMAT
MODEL = "xlam-llama3.1"
AUTO = ToolContext(tools=TOOLS)
PARIS = '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}'
PARIS_CALL = ["get_weather", '{"city": "Paris", "unit": "c"}']


def test_the_record() -> None:
    tool = registry.TOOLS_BY_NAME["xlam"]
    assert tool.format is not None and tool.format.load() is FMT
    assert tool.markers == ()  # vLLM reads the decoded text: nothing is a marker
    assert parsers.pairing_error("deepseek_r1", "xlam") is None
    assert parsers.pairing_error("qwen3", "xlam") is None


def test_content_before_an_opener_streams() -> None:
    """Text before the first opener is content as it comes (its ending whitespace held); from
    the opener on the output is held to its end (README compatibility: the whitespace starting
    the content stays, vLLM strips it with a block's calls)."""
    state = FMT.start()
    out, calls, state = FMT.feed(state, "  Let me check. \n", False, AUTO)
    assert (out, calls) == ("  Let me check.", [])
    out, calls, state = FMT.feed(state, "```json\n[" + PARIS + "]\n```", False, AUTO)
    assert (out, calls) == ("", [])
    out, calls, state = FMT.feed(state, "", True, AUTO)
    assert out == "" and [[c.name, c.arguments] for c in calls] == [PARIS_CALL]
    assert feed_all(FMT, ["  Hi <tool_call>[" + PARIS + "]</tool_call> bye "], AUTO) == (
        "  Hi  bye", [PARIS_CALL])


def test_held_text_is_bounded() -> None:
    """An opener more than ``MAX_HELD`` bytes from the end of the output is content and
    reading goes on after it (README compatibility), in both modes: a longer list is content,
    a code block earlier in the content does not hide a list after it; the state stays
    small."""
    fill = "😀" * (xlam.MAX_HELD // 4)
    long_list = '[{"name": "get_weather", "arguments": {"city": "' + fill + '"}}]'
    assert feed_all(FMT, [long_list], AUTO) == (long_list, [])
    fence = "Sure. ```json\n" + long_list + "\n```"
    assert feed_all(FMT, [fence], AUTO) == (fence, [])
    short = "[" + PARIS + "]"
    assert feed_all(FMT, [short], AUTO) == ("", [PARIS_CALL])
    code = "Run ```print(1)``` first. " + fill + " Then:\n"
    assert feed_all(FMT, [code + "```json\n" + short + "\n```"], AUTO) == (
        code.rstrip(), [PARIS_CALL])
    for text in (long_list, fence, code + "```json\n" + short + "\n```", "`" * 5000 + short,
                 ("[TOOL_CALLS]" + fill[:40]) * 200 + "```" + short + "```"):
        whole = feed_all(FMT, [text], AUTO)
        for size in (7, 64, 1000):  # the bound decides alike in every chunking
            assert feed_all(FMT, [text[i:i + size] for i in range(0, len(text), size)],
                            AUTO) == whole
    state, largest = FMT.start(), 0
    for k in range(0, len(long_list), 5):
        _, _, state = FMT.feed(state, long_list[k:k + 5], False, AUTO)
        writer = Writer()
        FMT.encode(state, writer)
        largest = max(largest, len(writer.out))
        assert FMT.decode(Reader(bytes(writer.out))) == state
    assert largest <= xlam.MAX_HELD + 64


@st.composite
def outputs(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict[str, Any]]], bool]:
    """xLAM outputs: a list of calls bare or in each place vLLM looks, text around it,
    sometimes spoiled. Returns (text, the calls written, whether the message must hold them)."""
    written: list[tuple[str, dict[str, Any]]] = []
    elements = []
    for _ in range(draw(st.integers(0, 2))):
        name = draw(st.sampled_from(["get_weather", "get_time"]))
        arguments = {} if name == "get_time" else draw(st.dictionaries(
            st.sampled_from(["city", "unit"]), st.sampled_from(["Paris", "Zürich", "a\nb", "🌦"]),
            max_size=2))
        elements.append(json.dumps({"name": name, "arguments": arguments},
                                    ensure_ascii=draw(st.booleans())))
        written.append((name, arguments))
    listed = draw(st.sampled_from(["[", "[ "])) + ", ".join(elements) + "]"
    place = draw(st.sampled_from(["bare", "bare", "fence", "plain", "marker", "tag", "think"]))
    before = draw(st.sampled_from(["", "", " \n", "Sure. ", "Hmm.\n", "  x"]))
    after = draw(st.sampled_from(["", "", "\n", " Done.", "\n```x```"]))
    if place == "bare":
        text, clean = before + listed + after, not before.strip() and not after.strip()
    elif place == "think":
        # after </think> the rest, stripped, must be JSON as a whole (10254), or hold a
        # pattern that is (10256): a list followed by text is no call
        text, clean = before + "</think>" + listed + after, not after.strip()
    else:
        block = {"fence": "```json\n" + listed + "\n```", "plain": "```\n" + listed + "```",
                 "marker": "[TOOL_CALLS]" + listed + "\n",
                 "tag": "<tool_call>" + listed + "</tool_call>"}[place]
        text, clean = before + block + after, "```" not in after
    change = draw(st.sampled_from(["", "", "", "cut", "dirty"]))
    if change == "cut":
        text = text[:draw(st.integers(0, len(text)))]
    elif change == "dirty":
        text += draw(st.sampled_from(["```json\n[", "[TOOL_CALLS]{", "</think>", "<tool_call>"]))
    return text, written, clean and change == "" and bool(written)


@PROPS
@given(data=st.data())
def test_xlam_stream_folds_to_message(client_for: Any, data: st.DataObject) -> None:
    """Every output, streamed in any chunking, folds to the non-streaming message; where the
    list is whole and alone in its place, that message holds exactly the calls written."""
    client = client_for(MODEL, None, "xlam")
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS, 3),
                        label="chat_request")
    text, written, clean = data.draw(outputs(), label="output")
    expected = run_text(client, MODEL, text, request, data)
    if clean:
        check_written(expected, [[n, a] for n, a in written], request)


VLLM_PATTERNS = {"```": r"```(?:json)?\s*([\s\S]*?)```",
                 "[TOOL_CALLS]": r"\[TOOL_CALLS\]([\s\S]*?)(?=\n|$)",
                 "<tool_call>": r"<tool_call>([\s\S]*?)</tool_call>"}
"""vLLM's ``json_code_block_patterns`` (vllm/tool_parsers/xlam_tool_parser.py)."""


@PROPS
@given(st.lists(st.sampled_from(["```", "`", "json", " ", "\n", "x", "[TOOL_CALLS]",
                                 "<tool_call>", "</tool_call>", "[1]"]), max_size=14))
def test_matches_are_vllms_patterns(parts: list[str]) -> None:
    """The one-pass reading finds what vLLM's regular expressions find and removes."""
    text = "".join(parts)
    for opener, pattern in VLLM_PATTERNS.items():
        found = xlam._matches(opener, text)
        assert [group for _, _, group in found] == re.findall(pattern, text)
        kept = "".join(text[end:start] for (_, end, _), (start, _, _)
                       in zip([(0, 0, ""), *found], [*found, (len(text), 0, "")], strict=True))
        assert kept == re.sub(pattern, "", text)
