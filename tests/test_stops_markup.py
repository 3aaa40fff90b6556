"""Stop strings over parser markup (issue 24).

On the parser path derender decodes marked text (a single-token marker is one private-use
stand-in), while vLLM matches stop strings on the text itself. References:

- vLLM 0.33's non-streaming answers, recorded (cases 2300-2314, ``scripts/tool_cases/
  stops_markup.py``): replayed by ``test_conformance``; here every one of them is also
  streamed in several chunkings (vLLM refuses stop strings while streaming), and the stream
  must fold to the recorded message, finish and stop reason.
- The plain-text stop functions (themselves checked against vLLM's recordings): on any marked
  text the marked functions must give what they give on the text it stands for.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from derender.core.decoding.markers import pending_prefix
from derender.core.decoding.stops import (
    match_stop_string,
    pending_prefix_marked,
)
from derender.core.decoding.stops import (
    restore as _restore,
)
from derender.core.decoding.vocab import LITERAL, STAND_IN, restore_table
from derender.core.parsers.registry import MARKUP
from derender_testing.recorded import case_paths
from tests.conftest import load_case
from tests.test_conformance import _aggregate, _message_fold

TABLE = restore_table(MARKUP)
"""What the parser path's marked text stands for."""


def restore(text: str) -> str:
    return _restore(text, TABLE)


CASES = case_paths("23??-stops_markup-*")


def test_the_recordings_are_there() -> None:
    assert len(CASES) == 15


def chunkings(n: int, seed: int) -> list[list[int]]:
    """One id per chunk, all at once, and two random splits."""
    rng = random.Random(seed)
    out = [[1] * n, [n]]
    for _ in range(2):
        sizes: list[int] = []
        while sum(sizes) < n:
            sizes.append(min(rng.randint(1, 5), n - sum(sizes)))
        out.append(sizes)
    return out


def stream(client: Any, request: dict[str, Any], sizes: list[int]) -> list[dict[str, Any]]:
    response = request["generate_response"]
    choice = response["choices"][0]
    ids, prompt = choice["token_ids"], response["prompt_token_ids"]
    chunks, state, at = [], None, 0
    for k, size in enumerate(sizes):
        last = k == len(sizes) - 1
        body: dict[str, Any] = {
            "stream": True, "model": request["model"], "prompt_token_ids": prompt,
            "chat_request": request["chat_request"],
            "generate_chunk": {"request_id": response["request_id"], "choices": [
                {"index": 0, "token_ids": ids[at:at + size],
                 "finish_reason": choice["finish_reason"] if last else None}]}}
        if state is not None:
            body["stream_state"] = state
        got = client.post("/v1/chat/completions/derender", json=body)
        assert got.status_code == 200, got.text
        state = got.json()["stream_state"]
        chunks.append(got.json()["chunk"])
        at += size
    return chunks


def test_streams_fold_to_vllms_non_streaming_answers(qwen: Any) -> None:
    for number, path in enumerate(CASES):
        case = load_case(path)
        request = case["calls"][0]["request"]
        recorded = case["calls"][0]["response"]["choices"][0]
        expected = _message_fold(case["name"])
        for sizes in chunkings(len(request["generate_response"]["choices"][0]["token_ids"]),
                               number):
            chunks = stream(qwen, request, sizes)
            assert _aggregate(chunks) == expected, (case["name"], sizes)
            reasons = [c["stop_reason"] for chunk in chunks for c in chunk["choices"]
                       if c["finish_reason"] is not None]
            assert reasons == [recorded["stop_reason"]], (case["name"], sizes)


# ----------------------------------------------------------------------------- properties

MARKERS = [chr(STAND_IN + i) for i in range(4)]  # <think> </think> <tool_call> </tool_call>
LITERALS = [chr(LITERAL + i) for i in range(2)]  # a U+E000 / U+E001 the model wrote
PLAIN = list("<>/thinkol_ca \n")


def marked_texts() -> st.SearchStrategy[str]:
    """Marked text: markers' stand-ins, escaped private-use characters the model wrote (a
    bare U+E000 never occurs in marked text) and plain characters."""
    return st.lists(st.sampled_from(MARKERS + LITERALS + PLAIN), max_size=24).map("".join)


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, list[str], int, bool]:
    text = draw(marked_texts())
    plain = restore(text)
    stops = []
    for _ in range(draw(st.integers(1, 3))):
        if plain and draw(st.booleans()):
            start = draw(st.integers(0, len(plain) - 1))
            stops.append(plain[start:start + draw(st.integers(1, 10))])
        else:
            stops.append(draw(st.sampled_from([*MARKUP[:4], "k>", "</thi", "\ue000", "\ue001",
                                               "n", "<"])))
    return text, stops, draw(st.integers(0, len(text) + 3)), draw(st.booleans())


@given(cases())
def test_marked_matching_is_plain_matching_on_the_restored_text(
        case: tuple[str, list[str], int, bool]) -> None:
    text, stops, tail, include = case
    tail_plain = len(restore(text[max(0, len(text) - tail):])) + max(0, tail - len(text)) \
        if tail else 0
    marked = match_stop_string(text, tail, stops, include, TABLE)
    plain = match_stop_string(restore(text), tail_plain, stops, include, None)
    assert (None if marked is None else (restore(marked[0]), marked[1])) == plain
    if marked is not None:  # whole markers stay markers, a cut one is plain text
        assert all(ch in text for ch in marked[0] if ord(ch) >= LITERAL)


@given(marked_texts(), st.lists(st.sampled_from([*MARKUP[:4], "k>", "</think>X", "\ue000a",
                                                 "hi", "<tool"]), min_size=1, max_size=3))
def test_what_is_held_is_what_could_begin_a_stop_string_in_whole_characters(
        text: str, stops: list[str]) -> None:
    held = pending_prefix_marked(text, stops, TABLE)
    need = pending_prefix(restore(text), stops)
    assert len(restore(text[len(text) - held:])) >= need if held else need == 0
    if held:  # no fewer characters would do
        assert len(restore(text[len(text) - held + 1:])) < need
