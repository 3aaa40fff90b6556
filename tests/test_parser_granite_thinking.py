"""Granite 4.2's reasoning parser ``granite_thinking_parser`` (vLLM 0.33's
``vllm/parser/granite_thinking.py``): ``nemotron_v3``'s format on the ``qwen3`` reasoning
machine with two differences as data, the content's leading newlines dropped and the swap
(content forced) only when no content was written at all.

Expected values are vLLM's, as recorded in tests/fixtures/vllm-0.33 (case numbers in brackets,
docs/vllm-compat/granite.md); the replays themselves are in test_conformance.py. Here: the
rules on the machine with the Granite stand-in vocabulary, split invariance through the app,
state round trips and garbage.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from derender.core.parsers import reasoning
from derender.core.parsers.reasoning import MAX_SWAP, ReasoningState
from derender.core.state.codec import Reader, Writer
from derender_testing.models import tokenizer, vocabulary
from derender_testing.tool_streams import ids_of, requests, run_both, split
from tests.test_parser_properties import MARKER_TEXT, PROPS
from tests.test_parser_qwen3_coder import TOOLS, outputs

GRANITE = "granite4-standin"
END_OF_TEXT = 100257
NAME = "granite_thinking_parser"
R = "\nThe user wants Paris weather; call the tool."
"""The recorded outputs' reasoning, as vLLM returns it (its trailing newline dropped)."""
PLAIN = "It is sunny in Paris, 22 °C."


def enc(text: str) -> list[int]:
    return list(tokenizer(GRANITE).encode(text, add_special_tokens=False).ids)


PROMPTS = {
    "plain": enc("<|start_of_role|>user<|end_of_role|>Weather?<|end_of_text|>\n"
                 "<|start_of_role|>assistant<|end_of_role|>"),
    # the tools' system text writes <tool_call> (a token of this vocabulary) [5000]
    "tools": enc("<|start_of_role|>system<|end_of_role|>return <tool_call></tool_call>"
                 "<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>"),
    "closed": enc("<|start_of_role|>assistant<|end_of_role|><think>\n</think>\n"),
}


def think(text: str, *, thinking: bool = True, force: bool = False, prompt: str = "tools",
          size: int = 0) -> tuple[str, str]:
    """(reasoning, content) of ``text`` (markers as text), fed whole or in pieces of
    ``size``."""
    fmt = reasoning.FORMATS[NAME]
    state = reasoning.start(fmt, vocabulary(GRANITE), PROMPTS[prompt], thinking, force)
    assert state is not None
    pieces = split(text, size)
    thought = content = ""
    for k, piece in enumerate(pieces):
        delta, state = reasoning.feed(fmt, state, piece, k == len(pieces) - 1, {})
        thought, content = thought + delta.reasoning, content + delta.content
    return thought, content


def test_the_prompt_is_not_read_without_chatml_turn_markers() -> None:
    """vLLM reads the prompt only where the vocabulary has turn boundaries (ChatML's); the
    Granite vocabulary has none, so a prompt writing <tool_call> or even </think> still
    starts the output in reasoning [5000]."""
    for prompt in PROMPTS:
        assert think(f"<think>{R}\n</think>\n{PLAIN}", prompt=prompt) == (R, PLAIN)


@pytest.mark.parametrize("size", [0, 1, 3, 7])
def test_newlines_starting_the_content_are_dropped(size: int) -> None:
    """``lstrip("\\n")`` of the content: newlines only [5002], a space stays [5004], blank
    content of newlines is none [5012], other whitespace stays [5014]; newlines later in the
    content stay [5026]."""
    assert think(f"{R.strip()}\n</think>\n\n\n{PLAIN}", size=size) == (R.strip(), PLAIN)
    assert think(f"{R.strip()}</think> \n{PLAIN}", size=size) == (R.strip(), " \n" + PLAIN)
    assert think(f"<think>{R}\n</think>\n\n", size=size) == (R, "")
    assert think(f"<think>{R}\n</think>\n  ", size=size) == (R, "  ")
    assert think(f"<think>{R}\n</think>\nA\n\nB", size=size) == (R, "A\n\nB")
    # thinking off: the whole output is content, its newlines dropped [5032]
    assert think(f"\n\n{PLAIN}", thinking=False, size=size) == ("", PLAIN)
    assert think(f"{R.strip()}\n</think>\n\n", thinking=False, size=size) == (
        "", R.strip() + "\n\n\n")  # [5036]: </think> dropped, the newlines after text stay


@pytest.mark.parametrize("size", [0, 1, 4, 9])
def test_the_swap_needs_absent_content(size: int) -> None:
    """Content forced: no content at all swaps [5042], an unterminated block too [5044]; a
    newline after </think> is content, so no swap (and it is then dropped) [5040]; content
    [5046] or a call [5048] keeps them as they are."""
    assert think(f"{R.strip()}</think>", force=True, size=size) == ("", R.strip())
    assert think(f"<think>{R}", force=True, size=size) == ("", R)
    assert think(f"<think>{R}\n</think>\n\n", force=True, size=size) == (R, "")
    assert think(f"<think>{R}\n</think>\n{PLAIN}", force=True, size=size) == (R, PLAIN)
    assert think(f"<think>{R}\n</think>\n<tool_call>", force=True, size=size) == (
        R, "<tool_call>")
    # nemotron_v3 swaps blank content; this parser does not
    nemotron = reasoning.FORMATS["nemotron_v3"]
    state = reasoning.start(nemotron, vocabulary(GRANITE), None, True, True)
    assert state is not None
    delta, _ = reasoning.feed(nemotron, state, f"<think>{R}\n</think>\n\n", True, {})
    assert (delta.reasoning, delta.content) == ("\n\n", R)


def test_the_swap_holds_at_most_max_swap() -> None:
    """As nemotron_v3's (README compatibility): a stream holds reasoning for the swap up to
    MAX_SWAP characters; the whole text fed at once swaps whatever its length."""
    long = "<think>" + "x" * (MAX_SWAP + 10) + "</think>"
    assert think(long, force=True) == ("", "x" * (MAX_SWAP + 10))
    assert think(long, force=True, size=16) == ("x" * (MAX_SWAP + 10), "")


def _round_trip(state: ReasoningState) -> None:
    w = Writer()
    reasoning.encode(state, w)
    r = Reader(bytes(w.out))
    assert reasoning.decode(state.reasoning, r) == state and r.pos == len(w.out)


def test_states_round_trip() -> None:
    """Every state of a long stream of 4-byte characters, newlines and markers reads back."""
    fmt = reasoning.FORMATS[NAME]
    rng = random.Random(50)
    words = ["x", "\n", "\n\n", "</th", "ink>", "<tool_call>", "😀", " ", "é"]
    text = "".join(rng.choice(words) for _ in range(3000))
    for force in (True, False):
        state = reasoning.start(fmt, vocabulary(GRANITE), None, True, force)
        assert state is not None
        for piece in split(text, 5):
            _, state = reasoning.feed(fmt, state, piece, False, {})
            _round_trip(state)
        assert state.spoke


def test_a_spoke_bit_past_one_is_refused() -> None:
    with pytest.raises(ValueError, match="malformed reasoning"):
        reasoning.decode(False, Reader(bytes([0, 0x80, 0x02])))  # no flag above the mode (bit 7)
    state = reasoning.decode(False, Reader(bytes([0, 1 << 5])))  # the spoke bit
    assert state.spoke and not state.swap


@PROPS
@given(data=st.data())
def test_stream_folds_to_message(client_for: Any, data: st.DataObject) -> None:
    """Split invariance through the app on the Granite stand-in with qwen3_coder's calls, any
    request (thinking on or off, content forced or not), any prompt."""
    client = client_for(GRANITE, NAME, "qwen3_coder")
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS),
                        label="chat_request")
    request["chat_template_kwargs"] = data.draw(st.sampled_from([
        None, {"enable_thinking": False}, {"force_nonempty_content": True}]), label="kwargs")
    parts, _, _ = data.draw(outputs(), label="output")
    thought = data.draw(st.sampled_from([[], ["Hmm, 😀 weather.\n"], ["<think>", "a < b\n  "]]))
    closing = data.draw(st.sampled_from([[], ["</think>"], ["</think>", "\n\n"]]))
    lead = data.draw(st.sampled_from(["", "\n", "\n\n", " \n"]), label="lead")
    text = "".join(MARKER_TEXT[p] if isinstance(p, int) else p
                   for p in [*thought, *closing, lead, *parts])
    finish = data.draw(st.sampled_from(["stop", "length"]), label="finish")
    ids = ids_of([text], enc)
    if finish == "stop" or not ids:
        ids.append(END_OF_TEXT)
        finish = "stop"
    prompt = PROMPTS[data.draw(st.sampled_from(sorted(PROMPTS)), label="prompt")]
    run_both(client, GRANITE, ids, finish, prompt, request, data)
