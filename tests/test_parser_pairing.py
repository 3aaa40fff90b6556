"""An engine format's reasoning parser with another family's tool parser (issue 19): the engine
reads the reasoning with its tool terminals off, the tool parser reads the content it leaves
(``parsers.front``; vLLM's ``DelegatingParser``). Expected values are vLLM 0.33's answers in
recordings 8200-8309 (cited by number; test_conformance replays them all); then split
invariance through the app for each pairing recorded on a vocabulary the repository holds.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender_testing.models import tokenizer
from derender_testing.recorded import load_case, numbered
from derender_testing.tool_streams import ids_of, requests, run_both
from tests.test_parser_properties import PROPS

THOUGHT = "The user wants Paris weather; call the tool."
HERMES = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n' \
         "</tool_call>"
CODER = ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
         "<parameter=unit>\nc\n</parameter>\n</function>\n</tool_call>")
K3_CALL = ('<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
           '<|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>'
           '<|open|>argument key="unit" type="string"<|sep|>c<|close|>argument<|sep|>'
           "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>")
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}}}}
MESSAGES = [{"role": "user", "content": "What's the weather in Paris?"}]

PAIRINGS = {  # (model, reasoning parser, tool parser): (EOS id, end of reasoning, call)
    ("glm-4.7-flash", "glm47", "hermes"): (154827, "</think>", HERMES),
    ("glm-4.7-flash", "glm45", "qwen3_coder"): (154827, "</think>", CODER),
    ("deepseek-v4-native", "deepseek_v4", "hermes"): (1, "</think>\n\n", HERMES),
    # pairing2 branch: an engine tool parser after another family's reasoning parser
    ("kimi-k3-standin", "qwen3", "kimi_k3"): (163586, "</think>\n\n", K3_CALL),
}


def message(number: int) -> dict[str, Any]:
    case = load_case(numbered(number))
    choice: dict[str, Any] = case["calls"][0]["response"]["choices"][0]
    return choice


@pytest.mark.parametrize(("number", "pairing"), [
    (8200, ("glm-4.7-flash", "glm47", "hermes")),
    (8222, ("glm-4.7-flash", "glm45", "qwen3_coder")),
    (8244, ("deepseek-v4-native", "deepseek_v4", "hermes")),
    (9800, ("kimi-k3-standin", "qwen3", "kimi_k3"))])
def test_the_engine_reads_the_reasoning_and_the_tool_parser_the_call(
        number: int, pairing: tuple[str, str, str], client_for: Any) -> None:
    """8200, 8222, 8244: the reasoning is the engine's, the call the other family's; 9800:
    an engine tool parser (kimi_k3) reads the content qwen3's reasoning parser leaves."""
    model, reasoning_parser, tool_parser = pairing
    eos, end, call = PAIRINGS[pairing]
    ids = tokenizer(model).encode(THOUGHT + end + call, add_special_tokens=False).ids
    recorded = load_case(numbered(number))["calls"][0]["request"]
    assert recorded["generate_response"]["choices"][0]["token_ids"] == [*ids, eos]
    got = client_for(model, reasoning_parser, tool_parser).post(
        "/v1/chat/completions/derender", json=recorded).json()["choices"][0]
    want = message(number)
    assert want["message"]["reasoning"] == THOUGHT and want["message"]["content"] is None
    assert got["message"]["reasoning"] == THOUGHT
    assert got["message"]["content"] is None
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in got["message"]["tool_calls"]] == [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in want["message"]["tool_calls"]]
    assert got["finish_reason"] == want["finish_reason"] == "tool_calls"


def test_glm_ends_its_reasoning_at_a_call_deepseek_does_not() -> None:
    """8220 / 8264: tool markup inside the reasoning ends GLM's (its engine's think terminals
    include ``<tool_call>``), and the tool parser reads the call; DeepSeek V4's keeps it."""
    glm, v4 = message(8220)["message"], message(8264)["message"]
    assert glm["reasoning"] == "I could write"
    assert [c["function"]["name"] for c in glm["tool_calls"]] == ["get_weather"]
    assert v4["reasoning"].startswith("I could write <tool_call>") and not v4.get("tool_calls")


@st.composite
def outputs(draw: st.DrawFn, end: str, call: str) -> list[int | str]:
    parts: list[int | str] = []
    if draw(st.booleans()):
        parts += [draw(st.sampled_from([THOUGHT, "", "a <tool_call> b", "𝄞 x"])), end]
    parts.append(draw(st.sampled_from(["", "Let me check.\n", "It is sunny, 22 °C.", " "])))
    if draw(st.integers(0, 3)):
        parts.append(call)
    if draw(st.integers(0, 3)) == 0:
        parts = parts[:draw(st.integers(0, len(parts)))]
    return [p for p in parts if p != ""]


@pytest.fixture(scope="module")
def clients(client_for: Any) -> dict[tuple[str, str, str], Any]:
    return {pairing: client_for(*pairing) for pairing in PAIRINGS}


@settings(PROPS, max_examples=60, deadline=None)
@given(data=st.data())
def test_any_split_of_a_paired_output_folds_to_the_message(
        clients: dict[tuple[str, str, str], Any], data: st.DataObject) -> None:
    pairing = data.draw(st.sampled_from(sorted(PAIRINGS)), label="pairing")
    model = pairing[0]
    eos, end, call = PAIRINGS[pairing]
    parts = data.draw(outputs(end, call), label="output")
    ids = ids_of(parts, lambda text: list(tokenizer(model).encode(
        text, add_special_tokens=False).ids))
    request = data.draw(requests(MESSAGES, [WEATHER]), label="chat_request")
    finish = data.draw(st.sampled_from(["stop", "length"]), label="finish") if ids else "stop"
    run_both(clients[pairing], model, ids + ([eos] if finish == "stop" else []), finish, [1],
             request, data)
