"""Attacks on the signed ``stream_state`` token (README: Compatibility, ``stream_state``).

Every altered, truncated, re-encoded, foreign, forged, expired, oversized or wrongly typed
state is refused with a 400 in vLLM's error envelope and a message that says what is wrong;
never a 500, never a chunk. Keys rotate without breaking streams in flight, and the state of
the plain path stays small whatever the position in the stream.

Token layout (core/state/token.py): URL-safe base64 without padding of
``version | key id length | key id | payload | HMAC-SHA256``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

import derender.core.streaming as streaming_module
from derender.app.main import create_app
from derender.core.errors import BadRequestError
from derender.core.registry import ModelRegistry
from derender.core.state.stream import decode_state, encode_state
from derender.core.state.token import KeyRing, sign, verify
from derender.settings import Settings
from derender_testing.models import ROOT, model_folder, require_model

CHAT = "/v1/chat/completions/derender"
COMPLETIONS = "/v1/completions/derender"
SECRET_1 = "current-secret-0123456789abcdef"
SECRET_0 = "previous-secret-0123456789abcdef"
RING = f"k1:{SECRET_1},k0:{SECRET_0}"
MESSAGES = [{"role": "user", "content": "hi"}]
MAX_CHARS = Settings(models_dir=ROOT).max_state_chars

NOT_A_TOKEN = "state returned by the previous call"
NOT_THIS_STREAM = "stream_state does not belong to this stream"
BAD_ENCODING = "bad encoding"
UNKNOWN_VERSION = "unknown version"
TRUNCATED = "truncated"
UNKNOWN_KEY = "unknown key"
ALTERED = "signature does not match"
EXPIRED = "expired"
REFUSALS = (BAD_ENCODING, UNKNOWN_VERSION, TRUNCATED, UNKNOWN_KEY, ALTERED)


# --------------------------------------------------------------------------- apps


@pytest.fixture(scope="module")
def app_for(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``app_for(models=("qwen3",), **settings)``: an entered TestClient of an app serving
    those models with those settings (by default the ``RING`` key ring)."""
    root = tmp_path_factory.mktemp("state-token")
    clients: dict[tuple[Any, ...], TestClient] = {}
    with ExitStack() as stack:

        def get(models: tuple[str, ...] = ("qwen3",), **overrides: Any) -> TestClient:
            for name in models:
                require_model(name)
            options = {"signing_keys": RING, **overrides}
            key = (models, tuple(sorted(options.items())))
            if key not in clients:
                folder = root / f"app{len(clients)}"
                folder.mkdir()
                for name in models:
                    (folder / name).symlink_to(model_folder(name), target_is_directory=True)
                app = create_app(Settings(models_dir=folder, **options), ModelRegistry(folder))
                clients[key] = stack.enter_context(TestClient(app))
            return clients[key]

        yield get


def ids_of(model: str, text: str) -> list[int]:
    tokenizer = Tokenizer.from_file(str(model_folder(model) / "tokenizer.json"))
    return list(tokenizer.encode(text, add_special_tokens=False).ids)


def stream_body(route: str = "chat", model: str = "qwen3", request_id: str | None = "r1",
                ids: list[int] | None = None, fields: dict[str, Any] | None = None,
                index: int = 0, state: Any = None, with_state: bool = True) -> dict[str, Any]:
    chunk: dict[str, Any] = {"choices": [{"index": index,
                                          "token_ids": [9707] if ids is None else ids,
                                          "finish_reason": None}]}
    if request_id is not None:
        chunk["request_id"] = request_id
    body: dict[str, Any] = {"stream": True, "model": model, "generate_chunk": chunk}
    if route == "chat":
        body["chat_request"] = {"messages": MESSAGES, **(fields or {})}
    else:
        body["completion_request"] = {"prompt": "hi", **(fields or {})}
    if with_state:
        body["stream_state"] = state
    return body


def call(client: TestClient, body: dict[str, Any], route: str = "chat") -> Any:
    return client.post(CHAT if route == "chat" else COMPLETIONS, content=json.dumps(body),
                       headers={"content-type": "application/json"})


def inner(state: Any) -> str:
    """The token inside a state answered in the (default) object form."""
    assert isinstance(state, dict) and set(state) == {"prev_tokens"}, state
    assert len(state["prev_tokens"]) == 1 and state["prev_tokens"][0].startswith("derender:")
    token: str = state["prev_tokens"][0].removeprefix("derender:")
    return token


def first_token(client: TestClient, **kwargs: Any) -> str:
    """The token of a first call's state (answered in the object form; the tests send it back
    as the bare string, the form of earlier releases, which stays accepted)."""
    response = call(client, stream_body(**kwargs), kwargs.get("route", "chat"))
    assert response.status_code == 200, response.json()
    return inner(response.json()["stream_state"])


def raw_of(token: str) -> bytes:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def token_of(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def assert_refused(response: Any, *fragments: str) -> str:
    """400 in vLLM's envelope, a message about the state naming one of ``fragments``."""
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == 400
    assert error["type"] == "BadRequestError"
    assert error["param"] in (None, "stream_state")
    message = error["message"]
    assert "stream_state" in message
    assert "Traceback" not in message and "File \"" not in message
    assert any(f in message for f in fragments), message
    return str(message)


def refusal(ring: KeyRing, token: object, max_chars: int = MAX_CHARS) -> str:
    """The message ``verify`` refuses ``token`` with (it must refuse it)."""
    with pytest.raises(BadRequestError) as caught:
        verify(ring, token, max_chars)
    assert caught.value.status == 400
    return caught.value.message


# --------------------------------------------------------------------------- a valid token


def test_a_valid_token_is_compact_url_safe_base64_signed_by_the_current_key(app_for: Any
                                                                            ) -> None:
    token = first_token(app_for())
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    raw = raw_of(token)
    assert token_of(raw) == token
    assert raw[0] == 1  # version
    assert raw[1] == 2 and raw[2:4] == b"k1"  # the current (first) key of the ring signs
    mac = hmac.new(SECRET_1.encode(), raw[:-32], hashlib.sha256).digest()
    assert raw[-32:] == mac
    payload = verify(KeyRing.parse(RING), token, MAX_CHARS)
    assert payload == raw[4:-32]
    decode_state(payload)  # a well-formed payload


# --------------------------------------------------------------------------- tampering


def _flips(token: str) -> Iterator[tuple[int, str]]:
    raw = raw_of(token)
    for bit in range(len(raw) * 8):
        flipped = bytearray(raw)
        flipped[bit // 8] ^= 1 << (bit % 8)
        yield bit, token_of(bytes(flipped))


def _expected_flip_refusals(bit: int, id_len: int) -> tuple[str, ...]:
    """What a flip of ``bit`` must be refused for, by the byte it lands in."""
    byte = bit // 8
    if byte == 0:
        return (UNKNOWN_VERSION,)
    if byte == 1:  # the key id length: the id read is another one, or runs past the end
        return (UNKNOWN_KEY, TRUNCATED)
    if byte < 2 + id_len:  # the key id: unknown, or another key of the ring (k1 -> k0)
        return (UNKNOWN_KEY, ALTERED)
    return (ALTERED,)


def test_every_single_bit_flip_is_refused_by_verify(app_for: Any) -> None:
    ring = KeyRing.parse(RING)
    for request_id in ("r1", "another-stream"):
        token = first_token(app_for(), request_id=request_id,
                            ids=ids_of("qwen3", "Hello 世界 😀"))
        id_len = raw_of(token)[1]
        count = 0
        for bit, forged in _flips(token):
            message = refusal(ring, forged)
            assert any(f in message for f in _expected_flip_refusals(bit, id_len)), (bit,
                                                                                    message)
            count += 1
        assert count == len(raw_of(token)) * 8 >= 8 * (2 + id_len + 8 + 32)


def test_every_single_bit_flip_is_refused_over_http(app_for: Any) -> None:
    client = app_for()
    token = first_token(client)
    id_len = raw_of(token)[1]
    for bit, forged in _flips(token):
        response = call(client, stream_body(state=forged))
        assert_refused(response, *_expected_flip_refusals(bit, id_len))
    # the genuine token still works after all that
    assert call(client, stream_body(state=token)).status_code == 200


def test_every_truncation_is_refused(app_for: Any) -> None:
    client = app_for()
    ring = KeyRing.parse(RING)
    token = first_token(client)
    for size in range(len(token)):
        cut = token[:size]
        assert any(f in refusal(ring, cut) for f in REFUSALS), size
        assert_refused(call(client, stream_body(state=cut)), *REFUSALS)
    for size in range(1, 34):  # raw bytes cut from the end, re-encoded canonically
        cut = token_of(raw_of(token)[:-size])
        assert_refused(call(client, stream_body(state=cut)), ALTERED, TRUNCATED,
                       UNKNOWN_VERSION)


@pytest.mark.parametrize("suffix", ["A", "AA", "AAAA", "AAAAAA", "_", "-"])
def test_appended_characters_are_refused(app_for: Any, suffix: str) -> None:
    client = app_for()
    token = first_token(client)
    assert_refused(call(client, stream_body(state=token + suffix)), BAD_ENCODING, ALTERED)


def test_the_token_twice_is_refused(app_for: Any) -> None:
    client = app_for()
    token = first_token(client)
    assert_refused(call(client, stream_body(state=token + token)), BAD_ENCODING, ALTERED)


def _token_needing_reencoding(client: TestClient) -> tuple[str, str]:
    """A real token containing ``-`` or ``_`` and whose length needs base64 padding, so the
    standard alphabet and padding both change its text."""
    texts = ["Hello", "Hello world", "Hello world! How", "日本", "😀 ok", "a b c d e f"]
    for n in range(200):
        token = first_token(client, request_id=f"enc-{n}",
                            ids=ids_of("qwen3", texts[n % len(texts)]))
        if ("-" in token or "_" in token) and len(token) % 4:
            return token, f"enc-{n}"
    raise AssertionError("no token with - or _ and unpadded length in 200 tries")


def _reencodings(token: str) -> dict[str, str]:
    raw = raw_of(token)
    standard = base64.b64encode(raw).decode("ascii")
    urlsafe_padded = base64.urlsafe_b64encode(raw).decode("ascii")
    # the last character's unused low bits set: decodes to the same bytes, not canonical
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(token[-1])
    unused = 4 if len(token) % 4 == 2 else 2
    sloppy = token[:-1] + alphabet[last | ((1 << unused) - 1)]
    return {
        "standard alphabet with padding": standard,
        "standard alphabet without padding": standard.rstrip("="),
        "url-safe with padding": urlsafe_padded,
        "url-safe with extra padding": urlsafe_padded + "==",
        "leading space": " " + token,
        "trailing space": token + " ",
        "trailing newline": token + "\n",
        "line break inside (MIME style)": token[:40] + "\r\n" + token[40:],
        "tab inside": token[:20] + "\t" + token[20:],
        "non-canonical trailing bits": sloppy,
        "percent-encoded dash/underscore": token.replace("-", "%2D").replace("_", "%5F"),
    }


def test_reencoded_tokens_are_refused(app_for: Any) -> None:
    client = app_for()
    ring = KeyRing.parse(RING)
    token, request_id = _token_needing_reencoding(client)
    for label, variant in _reencodings(token).items():
        assert variant != token, label
        assert BAD_ENCODING in refusal(ring, variant), label
        message = assert_refused(call(client, stream_body(request_id=request_id,
                                                          state=variant)), BAD_ENCODING)
        assert "not a valid token" in message, label
    assert call(client, stream_body(request_id=request_id, state=token)).status_code == 200


# --------------------------------------------------------------------------- forged keys


def _payload(client: TestClient, **kwargs: Any) -> bytes:
    return verify(KeyRing.parse(RING), first_token(client, **kwargs), MAX_CHARS)


def test_a_token_signed_by_an_unknown_key_id_is_refused(app_for: Any) -> None:
    client = app_for()
    payload = _payload(client)
    stranger = KeyRing(current="zz", keys={"zz": SECRET_1.encode()})  # same secret, other id
    message = assert_refused(call(client, stream_body(state=sign(stranger, payload))),
                             UNKNOWN_KEY)
    assert "unknown key" in message


@pytest.mark.parametrize("id_len, key_id", [(0, b""), (2, b"k2"), (2, b"K1"), (3, b"k1 "),
                                             (1, b"k")])
def test_hand_made_key_ids_are_refused(app_for: Any, id_len: int, key_id: bytes) -> None:
    client = app_for()
    payload = _payload(client)
    head = bytes([1, id_len]) + key_id + payload
    forged = token_of(head + hmac.new(SECRET_1.encode(), head, hashlib.sha256).digest())
    assert_refused(call(client, stream_body(state=forged)), UNKNOWN_KEY)


def test_a_key_id_longer_than_the_token_is_refused(app_for: Any) -> None:
    client = app_for()
    head = bytes([1, 200]) + b"k1"
    forged = token_of(head + hmac.new(SECRET_1.encode(), head, hashlib.sha256).digest())
    assert_refused(call(client, stream_body(state=forged)), TRUNCATED)


def test_the_right_key_id_with_another_secret_is_refused(app_for: Any) -> None:
    client = app_for()
    payload = _payload(client)
    impostor = KeyRing(current="k1", keys={"k1": b"not-the-real-secret-0123456789"})
    assert_refused(call(client, stream_body(state=sign(impostor, payload))), ALTERED)
    old_secret_under_new_id = KeyRing(current="k1", keys={"k1": SECRET_0.encode()})
    assert_refused(call(client, stream_body(state=sign(old_secret_under_new_id, payload))),
                   ALTERED)


@pytest.mark.parametrize("version", [0, 2, 255])
def test_an_unknown_version_is_refused_even_with_a_valid_mac(app_for: Any, version: int
                                                            ) -> None:
    client = app_for()
    payload = _payload(client)
    head = bytes([version, 2]) + b"k1" + payload
    forged = token_of(head + hmac.new(SECRET_1.encode(), head, hashlib.sha256).digest())
    assert_refused(call(client, stream_body(state=forged)), UNKNOWN_VERSION)


# --------------------------------------------------------------------------- another stream


# (what the second call changes, relative to the call that produced the state)
OTHER_STREAMS: dict[str, dict[str, Any]] = {
    "different request_id": {"request_id": "r2"},
    "request_id omitted (random)": {"request_id": None},
    "different model": {"model": "gpt2", "ids": [15496]},
    "other route": {"route": "completions"},
    "skip_special_tokens false": {"fields": {"skip_special_tokens": False}},
    "stop strings": {"fields": {"stop": ["world"]}},
    "stop string as a plain string": {"fields": {"stop": "x"}},
    "stop_token_ids": {"fields": {"stop_token_ids": [498]}},
    "include_stop_str_in_output": {"fields": {"include_stop_str_in_output": True}},
    "ignore_eos": {"fields": {"ignore_eos": True}},
    "min_tokens": {"fields": {"min_tokens": 3}},
    "top_logprobs": {"fields": {"logprobs": True, "top_logprobs": 2}},
    "different choice index": {"index": 1},
}


@pytest.mark.parametrize("change", sorted(OTHER_STREAMS))
def test_the_state_of_another_stream_is_refused(app_for: Any, change: str) -> None:
    client = app_for(models=("qwen3", "gpt2"))
    token = first_token(client)
    assert call(client, stream_body(state=token)).status_code == 200  # its own stream: fine
    other = OTHER_STREAMS[change]
    route = other.get("route", "chat")
    response = call(client, stream_body(**other, state=token), route)
    assert_refused(response, NOT_THIS_STREAM)


def test_a_completions_state_is_refused_by_chat(app_for: Any) -> None:
    client = app_for()
    token = first_token(client, route="completions")
    assert_refused(call(client, stream_body(state=token)), NOT_THIS_STREAM)


def test_another_streams_state_is_refused_on_a_usage_only_chunk(app_for: Any) -> None:
    client = app_for()
    token = first_token(client)
    body = stream_body(request_id="r2", state=token)
    body["generate_chunk"]["choices"] = []
    body["generate_chunk"]["usage"] = {"prompt_tokens": 1, "completion_tokens": 1}
    assert_refused(call(client, body), NOT_THIS_STREAM)


def test_each_choice_index_keeps_its_own_state(app_for: Any) -> None:
    client = app_for()
    zero = first_token(client, index=0)
    one = first_token(client, index=1)
    assert call(client, stream_body(index=0, state=zero)).status_code == 200
    assert call(client, stream_body(index=1, state=one)).status_code == 200
    assert_refused(call(client, stream_body(index=0, state=one)), NOT_THIS_STREAM)
    assert_refused(call(client, stream_body(index=1, state=zero)), NOT_THIS_STREAM)


def test_a_state_from_another_deployment_is_refused(app_for: Any) -> None:
    """Another deployment (its own key) cannot feed states to this one."""
    ours = app_for()
    theirs = app_for(signing_keys="other:" + "z" * 32)
    assert_refused(call(ours, stream_body(state=first_token(theirs))), UNKNOWN_KEY)


# --------------------------------------------------------------------------- expiry


def _at(now: float) -> Any:
    return SimpleNamespace(time=lambda: now)


def test_a_state_expires_ttl_seconds_after_the_first_chunk(app_for: Any) -> None:
    client = app_for(state_ttl_seconds=60)
    start = time.time()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streaming_module, "time", _at(start))
        first = first_token(client)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streaming_module, "time", _at(start + 30))
        response = call(client, stream_body(state=first))
        assert response.status_code == 200, response.json()
        second = response.json()["stream_state"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streaming_module, "time", _at(start + 59))
        assert call(client, stream_body(state=second)).status_code == 200
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streaming_module, "time", _at(start + 61))
        # the stream expires from its first chunk: a later state gives no extra time
        for state in (first, second):
            message = assert_refused(call(client, stream_body(state=state)), EXPIRED)
            assert "60" in message


def test_a_state_issued_more_than_the_ttl_ago_is_refused(app_for: Any) -> None:
    """A state built by the core codec with an old issue time and signed with the ring."""
    client = app_for()
    ring = KeyRing.parse(RING)
    state = decode_state(_payload(client))
    now = int(time.time())
    fresh = sign(ring, encode_state(replace(state, issued_at=now - 3000)))
    assert call(client, stream_body(state=fresh)).status_code == 200
    stale = sign(ring, encode_state(replace(state, issued_at=now - 3700)))
    assert_refused(call(client, stream_body(state=stale)), EXPIRED)
    ancient = sign(ring, encode_state(replace(state, issued_at=0)))
    assert_refused(call(client, stream_body(state=ancient)), EXPIRED)


# --------------------------------------------------------------------------- size and type


@pytest.mark.parametrize("size", [MAX_CHARS + 1, 100_000, 2_000_000])
def test_an_oversized_token_is_refused_before_decoding(app_for: Any, size: int) -> None:
    client = app_for()
    started = time.perf_counter()
    message = assert_refused(call(client, stream_body(state="A" * size)), str(MAX_CHARS))
    assert str(size) in message
    assert time.perf_counter() - started < 2.0


def test_the_state_size_cap_is_configurable(app_for: Any) -> None:
    token = first_token(app_for())
    exact = app_for(max_state_chars=len(token))
    assert call(exact, stream_body(state=token)).status_code == 200
    tight = app_for(max_state_chars=len(token) - 1)
    message = assert_refused(call(tight, stream_body(state=token)), str(len(token) - 1))
    assert str(len(token)) in message


VLLM_STATE = {"prev_tokens": ["Hello"], "prefix_offset": 0, "read_offset": 1,
              "role_sent": True, "logprob_context_token_ids": [9707],
              "logprob_text_offset": 0, "output_token_ids": [], "output_chunk_lens": [],
              "tools_streamed": False, "last_tool_call_ids": []}


@pytest.mark.parametrize("state", [
    VLLM_STATE, {**VLLM_STATE, "prev_tokens": []}, {}, 0, 1, -7, 3.5, True, False, [],
    ["x"], [VLLM_STATE]], ids=repr)
@pytest.mark.parametrize("route", ["chat", "completions"])
def test_a_state_that_is_not_a_string_must_be_the_returned_token(
        app_for: Any, state: Any, route: str) -> None:
    client = app_for()
    message = assert_refused(call(client, stream_body(route=route, state=state), route),
                             NOT_A_TOKEN)
    assert "previous call" in message


def test_a_state_token_inside_a_list_or_object_is_refused(app_for: Any) -> None:
    client = app_for()
    token = first_token(client)
    for wrapped in ([token], {"token": token}, {"stream_state": token}):
        assert_refused(call(client, stream_body(state=wrapped)), NOT_A_TOKEN)


@pytest.mark.parametrize("text", ["", " ", "null", json.dumps(VLLM_STATE), "{}", "0", "AAAA",
                                  "=" * 8, "é" * 10, "\x00" * 8])
def test_strings_that_are_not_tokens_are_refused(app_for: Any, text: str) -> None:
    client = app_for()
    assert_refused(call(client, stream_body(state=text)), *REFUSALS)


def test_a_null_state_starts_a_new_stream(app_for: Any) -> None:
    """``null`` (or no state) is a first call, as in vLLM; it is not an attack."""
    client = app_for()
    for body in (stream_body(state=None), stream_body(with_state=False)):
        response = call(client, body)
        assert response.status_code == 200
        assert response.json()["chunk"]["choices"][0]["delta"]["role"] == "assistant"


GARBAGE = settings(max_examples=60, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow])


@GARBAGE
@given(text=st.text(max_size=300) | st.binary(max_size=300).map(token_of)
       | st.binary(min_size=34, max_size=200).map(lambda b: token_of(b"\x01\x02k1" + b)))
def test_arbitrary_strings_never_pass_and_never_fail_badly(app_for: Any, text: str) -> None:
    client = app_for()
    ring = KeyRing.parse(RING)
    assert any(f in refusal(ring, text) for f in REFUSALS)
    assert_refused(call(client, stream_body(state=text)), *REFUSALS)


# --------------------------------------------------------------------------- key rotation


def _continue(client: TestClient, token: str, ids: list[int]) -> tuple[str, str]:
    response = call(client, stream_body(ids=ids, state=token))
    assert response.status_code == 200, response.json()
    body = response.json()
    return body["chunk"]["choices"][0]["delta"]["content"], inner(body["stream_state"])


def test_a_rotated_key_keeps_streams_in_flight(app_for: Any) -> None:
    """Before rotation k0 signs; after it k1 signs and k0 still verifies; once k0 is
    retired its states are refused."""
    before = app_for(signing_keys=f"k0:{SECRET_0}")
    after = app_for(signing_keys=f"k1:{SECRET_1},k0:{SECRET_0}")
    retired = app_for(signing_keys=f"k1:{SECRET_1}")
    hello, world, excl = ids_of("qwen3", "Hello world!")[:3]

    old = first_token(before, ids=[hello])
    raw = raw_of(old)
    assert raw[1] == 2 and raw[2:4] == b"k0"

    text, new = _continue(after, old, [world])
    assert text == " world"
    raw = raw_of(new)
    assert raw[1] == 2 and raw[2:4] == b"k1"  # re-signed with the current key
    assert hmac.new(SECRET_1.encode(), raw[:-32], hashlib.sha256).digest() == raw[-32:]

    text, _ = _continue(after, new, [excl])
    assert text == "!"
    text, _ = _continue(retired, new, [excl])
    assert text == "!"
    assert_refused(call(retired, stream_body(ids=[world], state=old)), UNKNOWN_KEY)
    # the pre-rotation deployment does not know k1
    assert_refused(call(before, stream_body(ids=[excl], state=new)), UNKNOWN_KEY)


# --------------------------------------------------------------------------- state size


def _stream_sizes(client: TestClient, route: str, ids: list[int], fields: dict[str, Any],
                  logprobs: bool) -> list[int]:
    sizes = []
    state = None
    for position, token in enumerate(ids):
        body = stream_body(route=route, ids=[token], fields=fields, state=state,
                           request_id="long")
        if logprobs:
            body["generate_chunk"]["choices"][0]["logprobs"] = {"content": [
                {"token_id": token, "logprob": -0.5,
                 "top_logprobs": [{"token_id": token, "logprob": -0.5}]}]}
        if position == len(ids) - 1:
            body["generate_chunk"]["choices"][0]["finish_reason"] = "length"
        response = call(client, body, route)
        assert response.status_code == 200, response.json()
        state = response.json()["stream_state"]  # sent back in the object form
        sizes.append(len(inner(state)))
    return sizes


LONG_TEXT = ("The quick brown fox jumps over the lazy dog. 東京は日本の首都です。 "
             "Ça coûte 3,50 € 😀🫠👍🏽 — naïve façade. ")


@pytest.mark.parametrize("route, fields, logprobs", [
    ("chat", {}, False),
    ("completions", {"logprobs": 1}, True),
    ("chat", {"stop": ["never happens here", "Zebra"], "include_stop_str_in_output": True},
     False),
], ids=["chat-plain", "completions-logprobs", "chat-stop-strings"])
def test_the_plain_path_state_stays_small_and_does_not_grow(
        app_for: Any, route: str, fields: dict[str, Any], logprobs: bool) -> None:
    """Plain state is a few dozen bytes and must not grow with the number of
    tokens. Over 400 chunks of one id the largest token is at most 200 characters, and the
    last 50 are no larger than the first 50 apart from the position counters' varints (a
    byte each per 7 bits: at most 3 counters × 1 byte, 4 base64 characters)."""
    client = app_for()
    ids = (ids_of("qwen3", LONG_TEXT) * 40)[:400]
    assert len(ids) == 400
    sizes = _stream_sizes(client, route, ids, fields, logprobs)
    assert max(sizes) <= 200, max(sizes)
    assert max(sizes[-50:]) <= max(sizes[:50]) + 4, (max(sizes[:50]), max(sizes[-50:]))
    # between positions 200-250 and 350-400 the counters have the same width: no growth
    assert max(sizes[-50:]) <= max(sizes[200:250]), (max(sizes[200:250]), max(sizes[-50:]))


# --------------------------------------------------------------------------- signed garbage


@GARBAGE
@given(window=st.lists(st.integers(0, 2**40), max_size=10), read=st.integers(0, 12),
       context=st.lists(st.integers(0, 2**40), max_size=6),
       counters=st.tuples(*[st.integers(0, 2**62)] * 4), held=st.text(max_size=12),
       flags=st.tuples(st.booleans(), st.booleans(), st.none() | st.integers(0, 3)),
       head=st.none() | st.integers(0, 2**40))
def test_a_signed_state_with_impossible_contents_is_never_a_500(
        app_for: Any, window: list[int], read: int, context: list[int],
        counters: tuple[int, int, int, int], held: str,
        flags: tuple[bool, bool, int | None], head: int | None) -> None:
    """Defence in depth (no input may produce a 500): a state whose MAC is
    valid but whose contents no call of this service would produce (ids beyond the
    vocabulary, offsets past the window, huge counters) — as a leaked key or a bug elsewhere
    could create — is answered with a chunk or a 400, never an internal error."""
    client = app_for()
    ring = KeyRing.parse(RING)
    state = decode_state(_payload(client))
    role_sent, stopped, index = flags
    text_offset, tokens_seen, text_chars, _ = counters
    forged = replace(
        state, role_sent=role_sent, choice_index=index,
        window=replace(state.window, ids=tuple(window), read=min(read, len(window))),
        logprob_context=tuple(context), text_offset=text_offset, tokens_seen=tokens_seen,
        stop=replace(state.stop, held=held, text_chars=text_chars, head_chars=head,
                     stopped=stopped))
    body = stream_body(state=sign(ring, encode_state(forged)))
    body["generate_chunk"]["choices"][0]["logprobs"] = {"content": [
        {"token_id": 9707, "logprob": -1.0, "top_logprobs": []}]}
    response = call(client, body)
    assert response.status_code in (200, 400), (forged, response.text)
    if response.status_code == 400:
        body = response.json()
        assert body["error"]["code"] == 400 and body["error"]["type"] == "BadRequestError"


def test_a_never_ending_byte_sequence_keeps_the_state_bounded(app_for: Any) -> None:
    """Adversarial output: Mistral byte-fallback tokens that never complete a UTF-8
    character (``<0x80>`` continuation bytes). The detokenizer must hold them back, but the
    state stops growing once its window is full (bounded whatever the generation
    length)."""
    client = app_for(models=("mistral-7b",))
    continuation = 3 + 0x80  # <0x80>
    assert Tokenizer.from_file(str(model_folder("mistral-7b") / "tokenizer.json")).id_to_token(
        continuation) == "<0x80>"
    sizes = []
    state = None
    for _ in range(400):
        response = call(client, stream_body(model="mistral-7b", ids=[continuation],
                                            state=state, request_id="bytes"))
        assert response.status_code == 200, response.json()
        state = response.json()["stream_state"]  # sent back in the object form
        sizes.append(len(inner(state)))
    assert max(sizes) <= 400, max(sizes)
    assert max(sizes[-50:]) <= max(sizes[100:150]), (max(sizes[100:150]), max(sizes[-50:]))


def test_the_largest_state_a_stream_can_reach_is_accepted(client_for: Any) -> None:
    """Every holdback at its bound at once, in 4-byte characters: 511 characters that could
    begin the longest stop string allowed (512) and a hermes call head held for its whole
    ``MAX_HEAD`` (1,024 characters). The service must accept every state it issues, so the
    default size cap has to hold this one (4,096 did not: this stream broke at 4,364)."""
    client = client_for("qwen3", None, "hermes")
    tokenizer = Tokenizer.from_file(str(model_folder("qwen3") / "tokenizer.json"))
    ids = tokenizer.encode('<tool_call>{"name": "' + "😀" * 1700,
                           add_special_tokens=False).ids
    prompt = tokenizer.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
                              add_special_tokens=False).ids
    request = {"messages": [{"role": "user", "content": "hi"}], "stop": ["😀" * 511 + "!"],
               "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}
    state, largest = None, 0
    for start in range(0, len(ids), 40):
        response = client.post(CHAT, json={
            "stream": True, "model": "qwen3", "prompt_token_ids": prompt,
            "chat_request": request, "stream_state": state,
            "generate_chunk": {"request_id": "big", "choices": [
                {"index": 0, "token_ids": ids[start:start + 40]}]}})
        assert response.status_code == 200, (start, response.text)
        state = response.json()["stream_state"]  # sent back in the object form
        largest = max(largest, len(inner(state)))
    print(f"largest stream_state: {largest} characters")
    assert 4096 < largest <= MAX_CHARS
