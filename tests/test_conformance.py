"""Replays the vLLM 0.33.0 recordings (tests/fixtures/vllm-0.33) and compares every field.

Normalisation follows the corpus README: ``created`` is ignored, tool-call ids only for
presence, and for schema errors (type ``Bad Request``) the message's first line only — its
entries are pydantic's wording. Where design.md deliberately differs from vLLM the expected
answer is ours, listed in ``DEVIATIONS`` with the reason.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from derender.core.state_token import NOT_A_TOKEN
from tests.conftest import FIXTURES, load_case
from tests.openai_types import check_openai_body, check_openai_chunk

# case name -> (status, error type, message start) of the call where we deliberately differ
# (design.md §4); calls before it in a stream must still match vLLM.
DEVIATIONS: dict[str, tuple[int, str, str]] = {
    # token id >= vocabulary size: 400 naming the id (vLLM decodes it as "")
    "125-error-out_of_vocab-chat-mistral-7b":
        (400, "BadRequestError", "token id 10000000 in choice 0 is out of range"),
    "127-error-out_of_vocab-logprobs-gpt2":
        (400, "BadRequestError", "token id 1000000000 in choice 0 of response pub-127-err "
                                 "logprobs is out of range"),
    "126-error-out_of_vocab-stream-deepseek-v3":
        (400, "BadRequestError", "token id 1000000 in choice 0 is out of range"),
    # negative ids are refused while streaming too, as they are without streaming
    "123-error-negative_token_ids-stream-qwen3":
        (400, "BadRequestError", "token id -"),
    # vLLM's JSON states (altered or not) are refused: the state is our signed token
    "106-error-stream_state_garbage-deepseek-v3": (400, "BadRequestError", NOT_A_TOKEN),
    "107-error-stream_state_bad_offsets-gpt2": (400, "BadRequestError", NOT_A_TOKEN),
    "108-error-stream_state_bad_lens-qwen3": (400, "BadRequestError", NOT_A_TOKEN),
    "109-error-stream_state_too_long-llama3.1": (400, "BadRequestError", NOT_A_TOKEN),
    "110-error-stream_state_fake_pieces-mistral-7b": (400, "BadRequestError", NOT_A_TOKEN),
}

# Cases where we answer 200 and vLLM refuses: stop strings while streaming (design.md §4).
SUPPORTED_BEYOND_VLLM = {"116-error-stream_stop_strings-deepseek-v3"}

CASES = sorted(FIXTURES.glob("*.json"))


def _pending_reason(case: dict[str, Any]) -> str | None:
    """Cases whose feature belongs to a later issue (said when skipped)."""
    if case.get("server_flags", [])[2:]:
        return "parser server (reasoning/tool parsers): issue #4"
    return None


def normalize(body: Any) -> Any:
    body = copy.deepcopy(body)
    if not isinstance(body, dict):
        return body
    body.pop("stream_state", None)
    inner = body.get("chunk", body)
    if isinstance(inner, dict):
        inner.pop("created", None)
    error = body.get("error")
    if isinstance(error, dict) and error.get("type") == "Bad Request":
        error["message"] = error["message"].split("\n", 1)[0]
    return body


def _send(client: Any, endpoint: str, call: dict[str, Any]) -> Any:
    headers = {"content-type": (call.get("request_headers") or {}).get(
        "content-type", "application/json")}
    raw = call["request_raw"] if "request_raw" in call else json.dumps(call["request"])
    return client.post(endpoint, content=raw.encode("utf-8"), headers=headers)


def _check_deviation(name: str, response: Any) -> None:
    status, error_type, message = DEVIATIONS[name]
    got = response.json()
    assert response.status_code == status, got
    assert got["error"]["type"] == error_type
    assert got["error"]["message"].startswith(message), got["error"]["message"]
    assert got["error"]["code"] == status


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_replay(path: Path, client_for: Any) -> None:
    case = load_case(path)
    reason = _pending_reason(case)
    if reason:
        pytest.skip(reason)
    client = client_for(case["model"])
    states: dict[int, str] = {}
    for i, call in enumerate(case["calls"]):
        request = call.get("request")
        streaming = isinstance(request, dict) and request.get("stream") is True
        tampered = case.get("state_tampered") and i == len(case["calls"]) - 1
        if streaming and not tampered:
            chain = call.get("chain", 0)
            request = dict(case["chunks"][i] if "chunks" in case else request)
            request.pop("chain", None)
            request.pop("stream_state", None)
            if chain in states:
                request["stream_state"] = states[chain]
        sent = {**call, "request": request} if streaming and not tampered else call
        response = _send(client, case["endpoint"], sent)
        got = response.json()
        last = i == len(case["calls"]) - 1
        if case["name"] in DEVIATIONS and (last or response.status_code != 200):
            _check_deviation(case["name"], response)
            return
        if case["name"] in SUPPORTED_BEYOND_VLLM:
            assert response.status_code == 200, got
            continue
        assert response.status_code == call["status"], got
        assert normalize(got) == normalize(call["response"])
        if response.status_code == 200 and streaming:
            assert isinstance(got["stream_state"], str)
            states[call.get("chain", 0)] = got["stream_state"]
            check_openai_chunk(got["chunk"])
        elif response.status_code == 200:
            check_openai_body(got)


def test_every_case_is_accounted_for() -> None:
    """The corpus is complete: 128 cases, each replayed, deviating on purpose or pending."""
    assert len(CASES) == 128
    replayed = [p for p in CASES if _pending_reason(load_case(p)) is None]
    assert set(DEVIATIONS) <= {p.stem for p in replayed}
    assert {p.stem for p in replayed} >= SUPPORTED_BEYOND_VLLM
    assert len(replayed) >= 88
