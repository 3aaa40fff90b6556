"""Issue 21's holdbacks at and past their bounds (README, Compatibility): a matched stop
string waiting for the finish, a Kimi K2 call named in its body, Seed-OSS's JSON list under
``tool_choice`` "required"; and the stream states they issue stay under the cap. Inside the
bounds the recorded cases (2216-2221, 2230-2231, 2234-2239) are the expected answers
(``tests/test_conformance.py``); past them the README row is."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

import pytest

from derender.core import parsers
from derender.core.parsers.formats.deepseek import MAX_HEAD
from derender.core.parsers.formats.qwen3_coder import MAX_VALUE
from derender.core.streaming import MATCHED_HOLD_CHARS
from derender.settings import Settings
from derender_testing.models import tokenizer
from derender_testing.recorded import case_path, load_case
from tests import cost_cases
from tests.test_state_bounds import CAP, WIDE, issued

STOP_STREAM = "2217-i21-plain-chat-stream-i21_stop_then_length-small"


def test_the_matched_hold_is_the_stop_string_holdback_bound() -> None:
    assert Settings.max_stop_string_chars - 1 == MATCHED_HOLD_CHARS


def _stream(client: Any, first: dict[str, Any], parts: list[list[int]], finish: str
            ) -> list[dict[str, Any]]:
    state: Any = None
    out = []
    for at, part in enumerate(parts):
        request = copy.deepcopy(first)
        choice = request["generate_chunk"]["choices"][0]
        choice["token_ids"] = part
        choice["finish_reason"] = finish if at == len(parts) - 1 else None
        if state is not None:
            request["stream_state"] = state
        got = client.post("/v1/chat/completions/derender", json=request)
        assert got.status_code == 200, got.text
        state = got.json()["stream_state"]
        out.append(got.json()["chunk"]["choices"][0])
    return out


@pytest.mark.parametrize("after", [MATCHED_HOLD_CHARS - len("sunny"), MATCHED_HOLD_CHARS + 40])
def test_a_matched_stop_string_waits_for_the_finish_up_to_its_bound(after: int,
                                                                    client_for: Any) -> None:
    """"It is sunny" then ``after`` characters, one id a chunk, finish "length": within the
    bound the whole text (vLLM's non-streaming answer, as 2216); past it the stream cuts at
    the stop string in the chunk that overflows, finish "stop" (README)."""
    first = load_case(case_path(STOP_STREAM))["chunks"][0]
    tail = " x" * (after // 2)
    ids = tokenizer("qwen3").encode("It is sunny" + tail).ids
    chunks = _stream(client_for("qwen3"), first, [[i] for i in ids], "length")
    content = "".join(c["delta"].get("content") or "" for c in chunks)
    finishes = [(c["finish_reason"], c.get("stop_reason")) for c in chunks if c["finish_reason"]]
    if len("sunny" + tail) <= MATCHED_HOLD_CHARS:
        assert content == "It is sunny" + tail
        assert finishes == [("length", None)]
    else:
        assert content == "It is "
        assert finishes == [("stop", "sunny")]
        assert chunks[-1]["finish_reason"] is None  # the stream had already ended


def _feed(setup: parsers.ParserSettings, text: str, batch: int = 7
          ) -> tuple[list[parsers.ToolCallDelta], int]:
    """Tool-call deltas of ``text`` streamed in batches, and the largest state issued."""
    state = cost_cases.start(setup)
    calls: list[parsers.ToolCallDelta] = []
    largest = 0
    for at in range(0, len(text), batch):
        delta, state = parsers.feed(setup, state, text[at:at + batch], False)
        calls += delta.calls
        largest = max(largest, len(issued(state)))
    delta, state = parsers.feed(setup, state, "", True)
    return calls + delta.calls, largest


KIMI_CALL = ("</think><|tool_calls_section_begin|><|tool_call_begin|>"
             "<|tool_call_argument_begin|>{body}<|tool_call_end|><|tool_calls_section_end|>")


@pytest.mark.parametrize("fill", [MAX_HEAD - 60, MAX_HEAD + 10])
def test_a_kimi_k2_call_named_in_its_body_is_held_up_to_its_bound(fill: int) -> None:
    """A header naming nothing: the body's ``"name"`` names the call, the whole body its
    arguments (vLLM's message, 2230); a body over ``MAX_HEAD`` characters is no call."""
    body = json.dumps({"name": "get_weather", "arguments": {"city": WIDE * 1}},
                      ensure_ascii=False)
    body = body[:-1] + ', "pad": "' + WIDE * (fill - len(body) - 11) + '"}'
    assert len(body) == fill
    setup = cost_cases.settings("kimi_k2", "kimi_k2")
    calls, largest = _feed(setup, "reasoning" + KIMI_CALL.format(body=body))
    assert largest <= CAP
    if fill <= MAX_HEAD:
        assert [(c.index, c.name, c.id) for c in calls if c.name] == [
            (0, "get_weather", "functions.get_weather:0")]
        assert "".join(c.arguments for c in calls) == body
    else:
        assert calls == []


@pytest.mark.parametrize("fill", [MAX_VALUE - 10, MAX_VALUE + 10])
def test_seed_oss_reads_the_required_json_list_up_to_its_bound(fill: int) -> None:
    """Under "required" the content after the reasoning is read as a JSON list of calls
    (vLLM's message, 2234, 2238); a list over ``MAX_VALUE`` characters is no call."""
    listed = '[{"name": "get_weather", "parameters": {"city": "' + WIDE * (fill - 53) + '"}}]'
    assert len(listed) == fill
    setup = replace(cost_cases.settings("seed_oss", "seed_oss"), forced=True, keep_calls=True)
    calls, largest = _feed(setup, "<seed:think>reasoning</seed:think>" + listed)
    assert largest <= CAP
    if fill <= MAX_VALUE:
        ((name, arguments),) = [(c.name, c.arguments) for c in calls]
        assert (name, json.loads(arguments)) == ("get_weather", {"city": WIDE * (fill - 53)})
    else:
        assert calls == []


@pytest.mark.parametrize("listed", [
    '[{"name": "f", "parameters": null}]',  # arguments "null", as vLLM's json.dumps(None)
    '[{"name": "f"}, {"name": "g", "parameters": {"a": 1}}]',
    '[{"name": 1}]', '{"name": "f"}', "[", '[{"name": "f", "parameters": []}]', "[]"])
def test_seed_oss_required_list_validation(listed: str) -> None:
    """vLLM's ``TypeAdapter(list[FunctionDefinition])``: every element or no call."""
    setup = replace(cost_cases.settings("seed_oss", "seed_oss"), forced=True, keep_calls=True)
    calls, _ = _feed(setup, "<seed:think>r</seed:think>" + listed)
    got = [(c.name, json.loads(c.arguments)) for c in calls]
    try:
        value = json.loads(listed)
    except ValueError:
        value = None
    if listed in ('[{"name": 1}]', '{"name": "f"}', "[", '[{"name": "f", "parameters": []}]'):
        assert got == []
    else:
        assert got == [(item["name"], item.get("parameters")) for item in value]
