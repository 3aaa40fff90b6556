"""Checks shared by tests/test_vocab_tekken.py and tests/test_vocab_tiktoken.py.

Expected values come from the reference decoders (``mistral_common``'s ``Tekkenizer``,
``tiktoken.Encoding``) or from vLLM 0.33 itself (``tests/fixtures/byte-vocab/``, recorded by
``scripts/byte_vocab_fixtures.py``), never from derender.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from derender.app.main import create_app
from derender.core.decoding.detokenizer import DecodeWindow, detokenize, seed_window
from derender.core.decoding.vocab import Vocabulary
from derender.core.registry import ModelRegistry, load_vocabulary
from derender.settings import Settings
from derender_testing.byte_vocab_models import build
from derender_testing.models import ROOT, TEST_MODELS

FIXTURES = ROOT / "tests" / "fixtures" / "byte-vocab"
RANDOM_SEQUENCES = 3000


def folder(name: str) -> Path:
    return build(name, TEST_MODELS)


@functools.cache
def vocab(name: str) -> Vocabulary:
    return load_vocabulary(folder(name))


@functools.cache
def recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return data


def check_every_id(v: Vocabulary, expected: Sequence[str]) -> None:
    assert v.size == len(expected)
    wrong = [i for i in range(v.size) if v.decode([i]) != expected[i]]
    assert not wrong, [(i, v.decode([i]), expected[i]) for i in wrong[:5]]


def check_random(v: Vocabulary, reference: Callable[[list[int]], str], seed: str,
                 pool: Sequence[int] | None = None) -> None:
    """Random id sequences (half of them from ``pool``: lone bytes and special ids)."""
    rng = random.Random(seed)
    for n in range(RANDOM_SEQUENCES):
        length = rng.randrange(1, 48)
        ids = [rng.choice(pool) if pool and n % 2 and rng.random() < 0.5
               else rng.randrange(v.size) for _ in range(length)]
        assert v.decode(ids) == reference(ids), ids


def per_token(v: Vocabulary, prompt: list[int], ids: list[int], skip: bool,
              spaces: bool = True) -> list[str]:
    window = seed_window(v, prompt, skip)
    out = []
    for token in ids:
        text, window = detokenize(v, window, [token], skip, spaces)
        out.append(text)
    return out


def check_recorded(name: str, fixture: str | None = None) -> int:
    """Every recorded case: vLLM's per-token deltas, the whole decode, random chunkings
    (``fixture``: another recording of the folder ``name``, e.g. ``<name>-no-spaces``)."""
    v = vocab(name)
    rng = random.Random(fixture or name)
    cases = recorded(fixture or name)["cases"]
    for case in cases:
        prompt, ids, skip = case["prompt"], case["ids"], case["skip_special_tokens"]
        spaces = case.get("spaces_between_special_tokens", True)
        assert per_token(v, prompt, ids, skip, spaces) == case["deltas"], case
        seed = seed_window(v, prompt, skip)
        assert detokenize(v, seed, ids, skip, spaces)[0] == case["text"], case
        cuts = sorted(rng.sample(range(1, len(ids) + 1), min(len(ids), rng.randrange(1, 5))))
        window, parts = seed, []
        for start, end in itertools.pairwise([0, *cuts]):
            text, window = detokenize(v, window, ids[start:end], skip, spaces)
            parts.append(text)
        text, _ = detokenize(v, window, ids[cuts[-1]:], skip, spaces)
        assert "".join(parts) + text == case["text"], case
    return len(cases)


def spaces_matter(name: str) -> int:
    """How many no-spaces cases vLLM answered differently from the default: the recording
    exercises the option rather than cases it cannot change."""
    v = vocab(name)
    cases = recorded(f"{name}-no-spaces")["cases"]
    return sum(detokenize(v, seed_window(v, c["prompt"], c["skip_special_tokens"]), c["ids"],
                          c["skip_special_tokens"])[0] != c["text"] for c in cases)


def check_streaming_equals_whole(v: Vocabulary, texts: Sequence[list[int]], seed: str) -> None:
    """Long outputs (past the fast path's block), whole vs random chunks vs one id at a time."""
    rng = random.Random(seed)
    for ids in texts:
        for skip in (True, False):
            whole, _ = detokenize(v, DecodeWindow(), ids, skip)
            window, parts = DecodeWindow(), []
            at = 0
            while at < len(ids):
                step = rng.randrange(1, 40)
                text, window = detokenize(v, window, ids[at:at + step], skip)
                parts.append(text)
                at += step
            assert "".join(parts) == whole
            assert "".join(per_token(v, [], ids, skip)) == whole


def client(name: str, tmp: Path) -> TestClient:
    models = tmp / "models"
    models.mkdir(exist_ok=True)
    link = models / name
    if not link.exists():
        link.symlink_to(folder(name), target_is_directory=True)
    return TestClient(create_app(Settings(models_dir=models), ModelRegistry(models)))


def served_texts(http: TestClient, name: str, ids: list[int], prompt: list[int],
                 sampling: dict[str, Any] | None = None) -> tuple[str, str, str]:
    """(chat non-streaming, chat streamed one id per call, completion) content;
    ``sampling``: fields added to both requests (``skip_special_tokens``, ...)."""
    chat = {"messages": [{"role": "user", "content": "hi"}], **(sampling or {})}
    body = {"model": name, "prompt_token_ids": prompt, "chat_request": chat,
            "generate_response": {"request_id": "r", "choices": [
                {"index": 0, "token_ids": ids, "finish_reason": "length"}]}}
    response = http.post("/v1/chat/completions/derender", json=body)
    assert response.status_code == 200, response.text
    whole = response.json()["choices"][0]["message"]["content"] or ""
    state, streamed = None, []
    for k, token in enumerate(ids):
        last = k == len(ids) - 1
        chunk_body: dict[str, Any] = {
            "stream": True, "model": name, "prompt_token_ids": prompt, "chat_request": chat,
            "generate_chunk": {"request_id": "r", "choices": [
                {"index": 0, "token_ids": [token], "finish_reason": "length" if last else None}]}}
        if state is not None:
            chunk_body["stream_state"] = state
        response = http.post("/v1/chat/completions/derender", json=chunk_body)
        assert response.status_code == 200, response.text
        data = response.json()
        state = data["stream_state"]
        for choice in data["chunk"]["choices"]:
            streamed.append(choice.get("delta", {}).get("content") or "")
    completion = {"model": name, "prompt_token_ids": [prompt],
                  "completion_request": {"prompt": "hi", **(sampling or {})},
                  "generate_responses": [{"request_id": "r", "choices": [
                      {"index": 0, "token_ids": ids, "finish_reason": "length"}]}]}
    response = http.post("/v1/completions/derender", json=completion)
    assert response.status_code == 200, response.text
    return whole, "".join(streamed), response.json()["choices"][0]["text"]
