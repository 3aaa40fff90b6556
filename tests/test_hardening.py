"""Inputs that once got a 500 (issue 22), each now a 400; the fuzzer's finds are kept here.

vLLM's answers to non-finite floats given as strings are recorded (fixtures 2900-2928,
replayed by test_conformance); these add the fields and forms the recordings do not show.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

CHAT = "/v1/chat/completions/derender"
COMPLETIONS = "/v1/completions/derender"
NON_FINITE = "Out of range float values are not JSON compliant"  # vLLM's words (2900-2928)


def _chat(**response: Any) -> dict[str, Any]:
    generate = {"request_id": "r", "choices": [{"index": 0, "token_ids": [9707, 151645]}]}
    generate.update(response)
    return {"model": "qwen3", "generate_response": generate}


SPECULATIVE = {"mean_acceptance_length": 1.5, "draft_acceptance_rate": 0.5,
               "acceptance_histogram": [1], "num_spec_steps": 1,
               "num_accepted_draft_tokens": 1, "num_draft_tokens": 1, "num_spec_tokens": 1}


@pytest.mark.parametrize("value", ["NaN", "-Infinity", "inf", "1e400", "-1E999"])
@pytest.mark.parametrize("field", ["queue_time_ms", "mean_itl_ms", "generation_time_ms",
                                   "tokens_per_second", "mean_acceptance_length",
                                   "draft_acceptance_rate", "rank-free logprob"])
def test_every_float_field_refuses_non_finite_strings(default_client: TestClient, field: str,
                                                     value: str) -> None:
    """Each float field of the engine payload, not only the recorded ones: vLLM's 400."""
    if field == "rank-free logprob":
        body = _chat(prompt_logprobs=[None, {"9707": {"logprob": value, "rank": None}}])
    elif field in SPECULATIVE:
        body = _chat(metrics={"speculative_decoding": {**SPECULATIVE, field: value}})
    else:
        body = _chat(metrics={field: value})
    answer = default_client.post(CHAT, json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == {"message": NON_FINITE, "type": "BadRequestError",
                                      "param": None, "code": 400}


def test_finite_strings_still_pass(default_client: TestClient) -> None:
    """Numbers as strings stay accepted (pydantic's lax floats, as vLLM's): only the
    non-finite ones are refused."""
    answer = default_client.post(CHAT, json=_chat(metrics={"queue_time_ms": "1.5e3"}))
    assert answer.status_code == 200, answer.text
    assert answer.json()["metrics"]["queue_time_ms"] == 1500.0


def test_non_finite_with_other_errors_is_a_schema_error(default_client: TestClient) -> None:
    """vLLM's message only where the body is valid but for non-finite numbers."""
    body = _chat(metrics={"queue_time_ms": "NaN"})
    body["generate_response"]["choices"][0]["index"] = "first"
    answer = default_client.post(CHAT, json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["type"] == "Bad Request"


def test_extra_metrics_keep_non_finite_strings(default_client: TestClient) -> None:
    """Unknown ``metrics`` keys pass through as given: a string stays a string."""
    answer = default_client.post(CHAT, json=_chat(metrics={"custom": "NaN"}))
    assert answer.status_code == 200, answer.text
    assert answer.json()["metrics"]["custom"] == "NaN"


@pytest.mark.parametrize("tool", ["get_weather", {"function": "get_weather"},
                                  {"function": ["get_weather"]}, {"function": None}])
def test_named_tool_choice_over_malformed_tools(default_client: TestClient, tool: Any) -> None:
    """Found by scripts/fuzz_requests.py: a tool whose ``function`` is no object, with a
    named ``tool_choice``, raised AttributeError (500). The name matches no tool: 400."""
    body = _chat()
    body["chat_request"] = {"messages": [], "tools": [tool], "tool_choice": {
        "type": "function", "function": {"name": "get_weather"}}}
    answer = default_client.post(CHAT, json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"].startswith(
        "The tool specified in `tool_choice` does not match any of the specified `tools`")
