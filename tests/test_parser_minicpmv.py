"""MiniCPM-V's reasoning parser (``minicpmv``: parsers/reasoning.py, parsers/escapes.py): Qwen3's
grammar with its markers dropped, a thinking-off block dropped, and the model's escaped
newlines recovered in the reasoning and the content.

The rules are vLLM 0.33's (``vllm/parser/minicpmv.py``, docs/vllm-compat/minicpmv.md); the
recorded cases 6800-6845 replay them against the real server (test_conformance) and each rule
test below names the cases it restates. The escapes machine fed in any pieces reads as fed
whole, and its states round-trip; split invariance through the HTTP app on Qwen3's vocabulary
(a stand-in), with ``qwen3_coder`` calls and alone.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers import reasoning
from derender.core.parsers.escapes import recover
from derender.core.state.codec import Reader, Writer
from derender_testing.models import vocabulary
from derender_testing.tool_streams import ids_of, requests, run_both
from tests.test_parser_properties import END_THINK, IM_END, PROMPTS, PROPS, QWEN, THINK, enc
from tests.test_parser_qwen3_coder import TOOLS, outputs

FMT = reasoning.FORMATS["minicpmv"]
BS = "\\"
NL = BS + "n"


def think(text: str, thinking: bool = True, pieces: int = 0) -> tuple[str, str]:
    """Reasoning and content of ``text`` (whole, or in pieces of ``pieces`` characters)."""
    state = reasoning.start(FMT, vocabulary(QWEN), PROMPTS["open"][0], thinking)
    assert state is not None
    chunks = [text[i:i + pieces] for i in range(0, len(text), pieces)] if pieces else [text]
    thought, content = "", ""
    for k, chunk in enumerate([*chunks, ""]):
        delta, state = reasoning.feed(FMT, state, chunk, k == len(chunks), {})
        thought, content = thought + delta.reasoning, content + delta.content
    return thought, content


def test_the_grammar() -> None:
    """[6802] reasoning until </think>, content as written; [6818] <think> absorbed, a later
    </think> dropped; [6814] <|im_end|> and the reserved markers dropped; [6816] <tool_call>
    ends reasoning (its trailing whitespace kept) and stays for the tool parser; [6824]
    thinking off: a block dropped; [6822] no block: all content."""
    assert think("Hmm.</think>\n\nSunny.") == ("Hmm.", "\n\nSunny.")
    assert think("<think>Hmm.</think>Sunny.</think>") == ("Hmm.", "Sunny.")
    assert think("Hmm.<reserved_12>x<|im_end|>y</think>Sun<reserved_15>ny<|reserved_13|>.") \
        == ("Hmm.xy", "Sunny.")
    assert think("Hmm.\n<tool_call>x") == ("Hmm.\n", "<tool_call>x")
    assert think("<think>Hmm.</think>Sunny.", thinking=False) == ("", "Sunny.")
    assert think("Sunny.", thinking=False) == ("", "Sunny.")


@pytest.mark.parametrize(("text", "recovered"), [
    # [6804]
    ("Line one" + NL + "Line two `a" + NL + "b` $x" + NL + "y$ " + BS + BS + "n end " + BS
     + "r" + NL + "x " + BS + "t",
     "Line one\nLine two `a" + NL + "b` $x" + NL + "y$ " + BS + BS + "n end \nx " + BS + "t"),
    # [6806]
    ("```py" + NL + "x```" + NL + "after \\(a" + NL + "b\\) " + NL + "$$c" + NL + "$$ done",
     "```py" + NL + "x```\nafter \\(a" + NL + "b\\) \n$$c" + NL + "$$ done"),
    ("Sunny." + BS, "Sunny." + BS),  # [6808]
])
def test_escapes_as_vllm_recovers_them(text: str, recovered: str) -> None:
    assert recover("", "", text, True)[0] == recovered
    for size in range(1, 6):
        closing, pending, out = "", "", ""
        for i in range(0, len(text), size):
            piece, closing, pending = recover(closing, pending, text[i:i + size], False)
            out += piece
        out += recover(closing, pending, "", True)[0]
        assert out == recovered


ESCAPE_PIECES = [BS, "n", "r", "`", "$", "(", ")", "[", "]", "a", " ", "\n", NL, "```"]


@PROPS
@given(parts=st.lists(st.sampled_from(ESCAPE_PIECES), max_size=30), cuts=st.data())
def test_escapes_read_the_same_whole_and_split(parts: list[str], cuts: st.DataObject) -> None:
    text = "".join(parts)
    whole = recover("", "", text, True)[0]
    size = cuts.draw(st.integers(1, 7))
    closing, pending, out = "", "", ""
    for i in range(0, len(text), size):
        piece, closing, pending = recover(closing, pending, text[i:i + size], False)
        assert len(closing) <= 3 and len(pending) <= 3
        out += piece
    assert out + recover(closing, pending, "", True)[0] == whole


def test_states_with_escapes_round_trip() -> None:
    state = reasoning.ReasoningState(True, "<", stage=reasoning.HIDDEN,
                                     escapes=("```", "``", "", BS))
    w = Writer()
    reasoning.encode(state, w)
    assert reasoning.decode(True, Reader(bytes(w.out))) == state


def test_the_record_and_pairings() -> None:
    record = parsers.reasoning_record("minicpmv")
    assert record is not None and record.format is not None
    assert record.format.load() is FMT
    assert parsers.pairing_error("minicpmv", "qwen3_coder") is None
    assert parsers.pairing_error("minicpmv", None) is None


@pytest.mark.parametrize("tool_parser", ["qwen3_coder", None])
@PROPS
@given(data=st.data())
def test_minicpmv_stream_folds_to_message(client_for: Any, tool_parser: str | None,
                                          data: st.DataObject) -> None:
    client = client_for(QWEN, "minicpmv", tool_parser)
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS),
                        label="chat_request")
    if tool_parser is None:
        request.pop("tools", None)
        request.pop("tool_choice", None)
    request["chat_template_kwargs"] = data.draw(st.sampled_from([
        None, {"enable_thinking": False}]), label="kwargs")
    parts, _, _ = data.draw(outputs(), label="output")
    thought = data.draw(st.sampled_from([[], ["Hmm" + NL + "weather.\n"], [THINK, "a `<` b\n"]]))
    closing = data.draw(st.sampled_from([[], [END_THINK, "\n" + NL]]))
    extra = data.draw(st.sampled_from(["", "x" + NL + "y", "`" + NL + "`", BS, "<reserved_13>"]))
    parts = [*thought, *closing, extra, *parts]
    finish = data.draw(st.sampled_from(["stop", "length"]), label="finish")
    ids = ids_of(parts, enc)
    if finish == "stop" or not ids:
        ids.append(IM_END)
        finish = "stop"
    run_both(client, QWEN, ids, finish, PROMPTS["open"][0], request, data)
