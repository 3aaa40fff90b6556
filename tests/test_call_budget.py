"""The per-call work budget (issue 22): a call whose engine payload asks for more work than
``DERENDER_MAX_CALL_TOKENS`` (output ids, logprob positions and candidates, prompt logprob
candidates, over all its responses, choices and chunks) is a 400 naming the variable, before
anything is decoded; a call at the budget is served."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from derender.app.main import create_app
from derender.contract.requests import GenerateTokensResponse
from derender.core.bounds import call_work
from derender.settings import MAX_CALL_TOKENS, Settings
from tests.conftest import LAYER_MODELS
from tests.test_state_token import RING

CHAT = "/v1/chat/completions/derender"
COMPLETIONS = "/v1/completions/derender"
HELLO = [9707, 11, 1879, 0]
"""Qwen3 ids of "Hello, world!"."""
OUT_OF_VOCABULARY = 10**9


def client(budget: int) -> TestClient:
    return TestClient(create_app(Settings(models_dir=LAYER_MODELS, signing_keys=RING,
                                          max_call_tokens=budget)))


def choice(ids: list[int], top: int | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"index": 0, "token_ids": ids, "finish_reason": "length"}
    if top is not None:
        entry["logprobs"] = {"content": [
            {"token_id": i, "logprob": -1.0,
             "top_logprobs": [{"token_id": i, "logprob": -1.0}] * top} for i in ids]}
    return entry


def chat(ids: list[int], top: int | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}]}
    if top is not None:
        request.update(logprobs=True, top_logprobs=top)
    return {"model": "qwen3", "generate_response": {"request_id": "r", "choices": [
        choice(ids, top)]}, "chat_request": request}


def refused(response: Any, units: int, budget: int) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "BadRequestError"
    assert error["message"] == (
        f"the call carries {units} output ids and logprob candidates, more than the {budget} "
        f"one call may derender. Set {MAX_CALL_TOKENS} to increase this limit, or send the "
        "output in smaller calls.")


def test_the_default_budget_is_the_documented_one() -> None:
    assert Settings(models_dir=Path(".")).max_call_tokens == 262144
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert f"| `{MAX_CALL_TOKENS}` | 262144 |" in readme
    assert Settings.from_env({MAX_CALL_TOKENS: "7"}).max_call_tokens == 7
    with pytest.raises(ValueError, match=MAX_CALL_TOKENS):
        Settings.from_env({MAX_CALL_TOKENS: "0"})


def test_output_ids_count_against_the_budget() -> None:
    service = client(4)
    response = service.post(CHAT, json=chat(HELLO))
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "Hello, world!"
    refused(service.post(CHAT, json=chat([*HELLO, 0])), 5, 4)


def test_logprob_positions_and_candidates_count() -> None:
    """4 ids, each with a logprob position and 2 candidates: 4 + 4 × 3 = 16 units."""
    assert client(16).post(CHAT, json=chat(HELLO, 2)).status_code == 200
    refused(client(15).post(CHAT, json=chat(HELLO, 2)), 16, 15)


def test_the_budget_is_checked_before_anything_is_decoded() -> None:
    """An id outside the vocabulary would be refused while decoding; past the budget the
    budget's refusal comes first."""
    service = client(4)
    ids = [*HELLO, OUT_OF_VOCABULARY]
    refused(service.post(CHAT, json=chat(ids)), 5, 4)
    response = client(5).post(CHAT, json=chat(ids))
    assert response.status_code == 400
    assert MAX_CALL_TOKENS not in response.json()["error"]["message"]


def test_every_response_and_chunk_of_a_call_counts() -> None:
    service = client(6)
    completions = {"model": "qwen3", "generate_responses": [
        {"request_id": f"r{n}", "choices": [choice(HELLO[:3])]} for n in range(3)],
        "completion_request": {"prompt": "x"}}
    refused(service.post(COMPLETIONS, json=completions), 9, 6)
    completions["generate_responses"] = completions["generate_responses"][:2]
    assert service.post(COMPLETIONS, json=completions).status_code == 200
    batch = {"model": "qwen3", "stream": True, "chat_request": chat([])["chat_request"],
             "generate_chunks": [{"request_id": "s", "choices": [
                 {"index": 0, "token_ids": HELLO[:2]}]}] * 4}
    refused(service.post(CHAT, json=batch), 8, 6)
    batch["generate_chunks"] = batch["generate_chunks"][:3]
    assert service.post(CHAT, json=batch).status_code == 200


def test_prompt_logprobs_count() -> None:
    body = chat(HELLO[:2])
    body["generate_response"]["prompt_logprobs"] = [
        None, {"9707": {"logprob": -1.0}, "11": {"logprob": -2.0}}, {"0": {"logprob": -1.0}}]
    response = GenerateTokensResponse.model_validate(body["generate_response"])
    assert call_work(SimpleNamespace(generate_response=response)) == 2 + 3
    refused(client(4).post(CHAT, json=body), 5, 4)
    assert client(5).post(CHAT, json=body).status_code == 200
