"""The stream binding (issue 22): one request-level digest per call, never recursive, 128 bits.

The digest is SHA-256 of the canonical JSON of the call's request-level parts; the reference
for the canonical JSON is the standard library's own ``json.dumps`` (compact separators,
ASCII), which the explicit-stack writer must equal byte for byte, deep values included.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.app.main import create_app
from derender.core import streaming
from derender.core.state.canonical import _iter_json, canonical_json
from derender.core.state.stream import FINGERPRINT_BYTES, decode_state
from derender.core.state.token import KeyRing, verify
from derender.settings import Settings
from tests.conftest import LAYER_MODELS, tokenizer

CHAT = "/v1/chat/completions/derender"
NOT_THIS_STREAM = "stream_state does not belong to this stream"
EOS = 151645  # Qwen3 <|im_end|>

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                 max_size=4),
    max_leaves=30)


@settings(max_examples=300)
@given(JSON_VALUES)
def test_canonical_json_is_json_dumps(value: Any) -> None:
    """Both writers give exactly ``json.dumps``' compact ASCII text (lone surrogates and
    non-finite floats as json writes them)."""
    expected = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    assert "".join(_iter_json(value)) == expected
    assert canonical_json(value) == expected.encode("ascii")


def _nested(depth: int, leaf: Any = "x") -> Any:
    value: Any = leaf
    for level in range(depth):
        value = {"k": value} if level % 2 else [value, level]
    return value


@pytest.mark.parametrize("depth", [950, 5000])
def test_canonical_json_deeper_than_the_interpreter(depth: int) -> None:
    """A value too deep for the C encoder at this depth is still written, the same bytes as
    ``json.dumps`` gives with room enough (the limit raised for the reference only)."""
    value = _nested(depth)
    if depth > sys.getrecursionlimit():
        with pytest.raises(RecursionError):
            json.dumps(value)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth * 3 + 1000)
    try:
        expected = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    finally:
        sys.setrecursionlimit(old)
    assert canonical_json(value) == expected.encode("ascii")


# --------------------------------------------------------------------------- through the app

KEYS = "b1:binding-test-signing-key-0123456789"
TOOL = {"type": "function", "function": {"name": "get_weather", "description": "weather",
                                         "parameters": {"type": "object", "properties": {
                                             "city": {"type": "string"}}}}}


@pytest.fixture(scope="module")
def qwen_tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """Qwen3 with the qwen3 reasoning and hermes tool parsers, a fixed signing key."""
    root = tmp_path_factory.mktemp("binding")
    model = root / "qwen3"
    model.mkdir()
    for file in (LAYER_MODELS / "qwen3").iterdir():
        if file.name != "derender.json":
            (model / file.name).symlink_to(file)
    (model / "derender.json").write_text(json.dumps(
        {"served_names": ["qwen3"], "reasoning_parser": "qwen3", "tool_parser": "hermes"}))
    with TestClient(create_app(Settings(models_dir=root, signing_keys=KEYS))) as client:
        yield client


def _ids(text: str) -> list[int]:
    return list(tokenizer("qwen3").encode(text, add_special_tokens=False).ids)


def _body(tools: list[Any], chunks: list[list[int]], state: str | None = None,
          request_id: str = "req-b") -> dict[str, Any]:
    return {"stream": True, "model": "qwen3", "stream_state": state,
            "prompt_token_ids": [151644, 77091, 198],
            "chat_request": {"messages": [{"role": "user", "content": "hi"}], "tools": tools},
            "generate_chunks": [{"request_id": request_id,
                                 "choices": [{"index": 0, "token_ids": ids}]}
                                for ids in chunks]}


def test_the_digest_is_made_once_per_call(qwen_tools: TestClient,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """256 chunks in one call serialise the request's parts once, not once per chunk."""
    calls: list[int] = []
    real = streaming.canonical_json

    def counted(value: Any) -> bytes:
        calls.append(1)
        return real(value)

    monkeypatch.setattr(streaming, "canonical_json", counted)
    word = _ids(" word")
    answer = qwen_tools.post(CHAT, json=_body([TOOL] * 8, [word] * 256))
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["chunks"]) == 256
    assert len(calls) == 1


def test_the_fingerprint_has_128_bits(qwen_tools: TestClient) -> None:
    answer = qwen_tools.post(CHAT, json=_body([TOOL], [_ids("Hello")]))
    assert answer.status_code == 200, answer.text
    payload = verify(KeyRing.parse(KEYS), answer.json()["stream_state"], 1 << 20)
    assert FINGERPRINT_BYTES * 8 >= 128
    state = decode_state(payload)
    assert len(state.fingerprint) == FINGERPRINT_BYTES


@pytest.mark.parametrize("change", ["deep leaf", "tool_choice", "template kwargs", "effort",
                                    "request id"])
def test_the_binding_covers_the_request_parts(qwen_tools: TestClient, change: str) -> None:
    """A state continues with the same request parts and is refused when any of them (here a
    leaf 200 levels down a tool's schema) differs."""
    deep = json.loads(json.dumps(TOOL))
    deep["function"]["parameters"]["properties"]["city"]["x"] = _nested(200)
    first = qwen_tools.post(CHAT, json=_body([deep], [_ids("Hello")]))
    assert first.status_code == 200, first.text
    state = first.json()["stream_state"]
    same = qwen_tools.post(CHAT, json=_body([deep], [_ids(" there")], state))
    assert same.status_code == 200, same.text
    other = _body([deep], [_ids(" there")], state)
    request = other["chat_request"]
    if change == "deep leaf":
        request["tools"] = [json.loads(json.dumps(deep).replace('["x", 0]', '["y", 0]'))]
        assert request["tools"] != [deep]
    elif change == "tool_choice":
        request["tool_choice"] = "required"
    elif change == "template kwargs":
        request["chat_template_kwargs"] = {"enable_thinking": False}
    elif change == "effort":
        request["reasoning_effort"] = "none"
    else:
        other["generate_chunks"][0]["request_id"] = "req-other"
    refused = qwen_tools.post(CHAT, json=other)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["message"] == NOT_THIS_STREAM


def test_deep_tool_schemas_never_500(qwen_tools: TestClient) -> None:
    """Issue 22 item 5: tool schemas nested 954-958 levels deep failed in the binding's
    ``repr`` (959-962 through this test client, whose stack is deeper). Every depth up to
    past the parser's own limit is answered 200, or a 400 for JSON too deep to read."""
    body = json.dumps(_body([TOOL], [_ids("Hello")]))
    statuses = set()
    for depth in range(900, 1010):
        deep = "[" * depth + '"x"' + "]" * depth  # too deep for this test's json.dumps
        answer = qwen_tools.post(CHAT, content=body.replace('"weather"', deep, 1),
                                 headers={"content-type": "application/json"})
        statuses.add(answer.status_code)
        assert answer.status_code in (200, 400), (depth, answer.text)
        if answer.status_code == 400:
            assert answer.json()["error"]["message"].startswith("1 validation error"), depth
    assert statuses == {200, 400}


def test_a_key_id_given_twice_is_refused_at_start_up() -> None:
    spec = "k1:first-secret-0123456789,k2:other-secret-012345678,k1:third-secret-012345678"
    with pytest.raises(ValueError, match="'k1' appears more than once"):
        KeyRing.parse(spec)
    with pytest.raises(ValueError, match="more than once"):
        create_app(Settings(models_dir=LAYER_MODELS, signing_keys=spec))
