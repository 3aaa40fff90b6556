"""Fuzzing the stream state (README: Compatibility, `stream_state`; no input yields a 500).

``test_state_token.py`` attacks the token case by case (every bit flip, every truncation,
each field of another stream, keys, expiry, size). Here hypothesis searches the space
around those cases:

* the verifier and the decoder directly: mutations of real tokens (byte flips, splices of
  two tokens, truncations, extensions, insertions, re-encodings, header edits) are refused
  with the typed error and nothing else; payloads signed with the test key (garbage, huge
  and over-long varints, lying lengths) decode to a state or to the typed error, and a
  decoded state survives a round trip through the encoder;
* over HTTP: genuine tokens replayed into other streams (request id, choice index, model,
  route, decode settings), tokens of other deployments and mutated tokens, as a random
  sequence of calls that tracks every token the service issued — a call is answered 200
  exactly when its state is null or a token the service issued for that very stream;
  signed payloads with extreme contents; oversized and deeply nested values where the
  token is expected.

Every refusal is a 400 (413 past the body limit) in the envelope, never a 5xx, and every
case finishes within a time bound (a hang fails the test instead of stalling it).
"""

from __future__ import annotations

import base64
import json
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from derender.app.main import create_app
from derender.core.errors import BadRequestError
from derender.core.state.stream import (
    FINGERPRINT_BYTES,
    StreamState,
    decode_state,
    encode_state,
)
from derender.core.state.token import KeyRing, sign, verify
from derender.settings import Settings
from derender_testing.models import LAYER_MODELS
from derender_testing.recorded import state_token
from tests import test_state_token
from tests.test_state_token import (
    ALTERED,
    MAX_CHARS,
    NOT_A_TOKEN,
    NOT_THIS_STREAM,
    REFUSALS,
    RING,
    SECRET_0,
    UNKNOWN_KEY,
    assert_refused,
    call,
    raw_of,
    stream_body,
    token_of,
)

app_for = test_state_token.app_for  # the fixture: apps by models and settings

RING_KEYS = KeyRing.parse(RING)
OVERSIZED = "more than the"
DIRECT_SECONDS = 0.5
"""Bound on one verify + decode of a token of at most a few kilobytes: microseconds when
healthy, the margin is for a loaded test machine."""
HTTP_SECONDS = 3.0
"""Bound on one HTTP call: milliseconds when healthy (the models are loaded beforehand),
the slowest case here (5 MB of JSON) well under a second."""
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

DIRECT = settings(max_examples=400, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
HTTP = settings(max_examples=120, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail when the block takes longer than ``seconds``; a block still running after ten
    times that is interrupted (SIGALRM), so a hang is a failure, not a stalled run."""

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"still running after {10 * seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, 10 * seconds)
    started = time.perf_counter()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    elapsed = time.perf_counter() - started
    assert elapsed < seconds, f"took {elapsed:.3f} s (bound {seconds} s)"


def leb128(value: int) -> bytes:
    """Unsigned LEB128 of any size (the codec's own writer stops at 2**63)."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def refused_directly(token: str) -> str:
    """``verify`` + ``decode_state`` must raise BadRequestError (nothing else), quickly."""
    with within(DIRECT_SECONDS), pytest.raises(BadRequestError) as caught:
        decode_state(verify(RING_KEYS, token, MAX_CHARS))
    error = caught.value
    assert error.status == 400 and error.error_type == "BadRequestError"
    assert "stream_state" in error.message
    return error.message


def post(client: TestClient, body: Any, route: str = "chat") -> Any:
    with within(HTTP_SECONDS):
        return call(client, body, route)


def assert_envelope(response: Any, status: int = 400) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == status
    assert isinstance(error["message"], str) and error["message"]
    assert "Traceback" not in error["message"]
    return str(error["message"])


# --------------------------------------------------------------------------- real tokens


@dataclass(frozen=True)
class Pool:
    """Genuine tokens of several kinds of state, by kind."""

    named: dict[str, str]

    @property
    def tokens(self) -> tuple[str, ...]:
        return tuple(self.named.values())

    @property
    def plain(self) -> str:
        """A plain chat stream's state (the stream of ``stream_body()``)."""
        return self.named["plain"]


@pytest.fixture(scope="module")
def parser_client() -> Iterator[TestClient]:
    """Qwen3 with its reasoning and tool parsers, signing with ``RING``."""
    settings_ = Settings(models_dir=LAYER_MODELS, signing_keys=RING,
                         parsers={"qwen3": ("qwen3", "hermes")})
    with TestClient(create_app(settings_)) as client:
        yield client


PARSER_PROMPT = [151644, 77091, 198]  # <|im_start|>assistant\n
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def parser_body(state: Any = None, ids: list[int] | None = None,
                request_id: str = "p1") -> dict[str, Any]:
    body = stream_body(ids=ids or [151667, 9707], state=state, request_id=request_id)
    body["prompt_token_ids"] = PARSER_PROMPT
    body["chat_request"]["tools"] = TOOLS
    return body


def _issue(client: TestClient, body: dict[str, Any], route: str = "chat") -> str:
    response = call(client, body, route)
    assert response.status_code == 200, response.text
    token: str = state_token(response.json()["stream_state"])
    return token


@pytest.fixture(scope="module")
def pool(app_for: Any, parser_client: TestClient) -> Pool:
    client = app_for(models=("qwen3", "gpt2"))
    plain = _issue(client, stream_body())
    second = _issue(client, stream_body(state=plain, ids=[1879]))
    logprobs = stream_body(route="completions", fields={"logprobs": 1})
    logprobs["generate_chunk"]["choices"][0]["logprobs"] = {"content": [
        {"token_id": 9707, "logprob": -0.5, "top_logprobs": [{"token_id": 9707,
                                                              "logprob": -0.5}]}]}
    completions = _issue(client, logprobs, "completions")
    held = _issue(client, stream_body(fields={"stop": ["Hello world"]}, request_id="held"))
    gpt2 = _issue(client, stream_body(model="gpt2", ids=[15496], request_id="g"))
    parsed = _issue(parser_client, parser_body())
    parsed_more = _issue(parser_client, parser_body(parsed, ids=[151668, 151657]))
    old_key = sign(KeyRing(current="k0", keys={"k0": SECRET_0.encode()}),
                   verify(RING_KEYS, plain, MAX_CHARS))
    return Pool({"plain": plain, "second": second, "completions": completions, "held": held,
                 "gpt2": gpt2, "parsed": parsed, "parsed more": parsed_more,
                 "old key": old_key})


# --------------------------------------------------------------------------- mutations


def _b64_variant(token: str, data: st.DataObject) -> str:
    raw = raw_of(token)
    kind = data.draw(st.sampled_from(["standard", "padded", "space", "case", "char"]),
                     label="encoding")
    if kind == "standard":
        return base64.b64encode(raw).decode("ascii")
    if kind == "padded":
        return base64.urlsafe_b64encode(raw).decode("ascii") + "=" * data.draw(st.integers(0, 3))
    at = index(data, len(token) + 1, "at")
    if kind == "space":
        return token[:at] + data.draw(st.sampled_from([" ", "\n", "\r\n", "\t", "=", "."])) \
            + token[at:]
    if kind == "case":
        return token[:at] + token[at:at + 1].swapcase() + token[at + 1:]
    return token[:at] + data.draw(st.sampled_from(ALPHABET)) + token[at + 1:]


def index(data: st.DataObject, count: int, label: str) -> int:
    """A position below ``count``, drawn with the same constraints whatever ``count`` is: the
    tokens a run issues differ in length from run to run (they carry the time), and hypothesis
    replays a case only if every draw has the constraints it had."""
    return data.draw(st.integers(0, 2**16 - 1), label=label) % count


def mutate(tokens: tuple[str, ...], data: st.DataObject) -> str:
    """One of the ways a real token can be altered, drawn by hypothesis."""
    token = data.draw(st.sampled_from(tokens), label="token")
    other = data.draw(st.sampled_from(tokens), label="other")
    raw, raw2 = raw_of(token), raw_of(other)
    kind = data.draw(st.sampled_from([
        "flip", "splice", "truncate", "truncate text", "extend", "extend text", "insert",
        "delete", "re-encode", "concatenate", "header", "swap payload", "resign"]),
        label="kind")
    size = len(raw)
    if kind == "flip":
        out = bytearray(raw)
        for _ in range(data.draw(st.integers(1, 8), label="flips")):
            out[index(data, size, "byte")] ^= data.draw(st.integers(1, 255))
        return token_of(bytes(out))
    if kind == "splice":
        i = index(data, size + 1, "cut")
        j = index(data, len(raw2) + 1, "resume")
        return token_of(raw[:i] + raw2[j:])
    if kind == "truncate":
        return token_of(raw[:index(data, size, "keep")])
    if kind == "truncate text":
        return token[:index(data, len(token), "keep")]
    if kind == "extend":
        return token_of(raw + data.draw(st.binary(min_size=1, max_size=64), label="tail"))
    if kind == "extend text":
        return token + data.draw(st.text(ALPHABET + "=", min_size=1, max_size=8), label="tail")
    if kind == "insert":
        at = index(data, size + 1, "at")
        return token_of(raw[:at] + data.draw(st.binary(min_size=1, max_size=16)) + raw[at:])
    if kind == "delete":
        at = index(data, size, "at")
        return token_of(raw[:at] + raw[at + data.draw(st.integers(1, 16)):])
    if kind == "re-encode":
        return _b64_variant(token, data)
    if kind == "concatenate":
        return token + other
    if kind == "header":
        version, key = data.draw(st.sampled_from([(0, b"k1"), (2, b"k1"), (1, b"k0"),
                                                   (1, b"k2"), (1, b"k"), (1, b"")]))
        id_len = raw[1]
        return token_of(bytes([version, len(key)]) + key + raw[2 + id_len:])
    if kind == "swap payload":  # one token's header and MAC around another's payload
        head = 2 + raw[1]
        return token_of(raw[:head] + raw2[2 + raw2[1]:-32] + raw[-32:])
    # a genuine payload signed with a key this deployment does not have
    payload = verify(RING_KEYS, token, MAX_CHARS)
    stranger = data.draw(st.sampled_from([
        KeyRing(current="k1", keys={"k1": b"not-the-real-secret-0123456789"}),
        KeyRing(current="zz", keys={"zz": b"another-deployment-0123456789"})]))
    return sign(stranger, payload)


@DIRECT
@given(data=st.data())
def test_a_mutated_token_is_refused_by_the_verifier(pool: Pool, data: st.DataObject) -> None:
    forged = mutate(pool.tokens, data)
    assume(forged not in pool.tokens)
    message = refused_directly(forged)
    assert any(f in message for f in (*REFUSALS, OVERSIZED)), message


@DIRECT
@given(text=st.one_of(
    st.text(max_size=400),
    st.text(ALPHABET, max_size=400),
    st.text(ALPHABET, min_size=40, max_size=400).map(lambda t: "AQJrM" + t),  # \x01\x02k1
    st.binary(max_size=300).map(token_of),
    st.binary(min_size=0, max_size=300).map(lambda b: token_of(b"\x01\x02k0" + b)),
    st.binary(min_size=0, max_size=40).map(lambda b: token_of(b"\x01" + b)),
))
def test_arbitrary_text_is_refused_by_the_verifier(text: str) -> None:
    message = refused_directly(text)
    assert any(f in message for f in (*REFUSALS, OVERSIZED)), message


# --------------------------------------------------------------------------- signed garbage

EXTREMES = (0, 1, 127, 128, 2**31 - 1, 2**31, 2**32, 2**48 - 1, 2**48, 2**53, 2**62,
            2**63 - 1, 2**63, 2**64, 2**70)


def numbers() -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(EXTREMES), st.sampled_from(EXTREMES),
                     st.integers(0, 2**72))


def varints() -> st.SearchStrategy[bytes]:
    """A varint, canonical or not: of any size, padded with continuation bytes, or never
    ending (all continuation bytes, up to the end of the payload)."""
    return st.one_of(
        numbers().map(leb128),
        numbers().map(leb128),
        st.tuples(numbers(), st.integers(1, 12)).map(
            lambda v: bytes(b | 0x80 for b in leb128(v[0])) + b"\x80" * v[1] + b"\x00"),
        st.integers(1, 40).map(lambda n: b"\xff" * n),
    )


def texts() -> st.SearchStrategy[bytes]:
    """A length-prefixed text: honest, lying about its size, or not UTF-8."""
    return st.one_of(
        st.text(max_size=20).map(lambda t: t.encode("utf-8", "surrogatepass")).map(
            lambda b: leb128(len(b)) + b),
        st.tuples(numbers(), st.binary(max_size=20)).map(lambda v: leb128(v[0]) + v[1]),
        st.binary(max_size=8).map(lambda b: leb128(len(b)) + b),
    )


def lists() -> st.SearchStrategy[bytes]:
    """A counted list of varints: honest, or a count that lies."""
    return st.one_of(
        st.lists(numbers(), max_size=8).map(
            lambda v: leb128(len(v)) + b"".join(map(leb128, v))),
        st.tuples(numbers(), st.lists(varints(), max_size=4)).map(
            lambda v: leb128(v[0]) + b"".join(v[1])),
    )


def parser_parts() -> st.SearchStrategy[bytes]:
    """None, a parser state with fuzzed flags, texts and counters, or raw bytes."""
    return st.one_of(
        st.just(b"\x00"),
        st.tuples(numbers(), texts(), varints(), texts(), varints(), varints(), varints()).map(
            lambda v: leb128(v[0] | 1) + (v[1] if v[0] & 4 else b"")
            + (v[2] + v[3] + v[4] + v[5] + v[6] if v[0] & 16 else b"")),
        st.binary(max_size=40),
    )


def _text(value: str) -> bytes:
    data = value.encode("utf-8", "surrogatepass")
    return leb128(len(data)) + data


def _ints(values: tuple[int, ...]) -> bytes:
    return leb128(len(values)) + b"".join(map(leb128, values))


def fields_of(state: StreamState) -> dict[str, bytes]:
    """The payload of ``state`` field by field, in the codec's order (the fingerprint
    first, the parser state last; checked against ``encode_state`` below)."""
    stop = state.stop
    out = {
        "fingerprint": state.fingerprint,
        "issued_at": leb128(state.issued_at),
        "flags": leb128(int(state.role_sent) | int(stop.stopped) << 1),
        "choice": leb128(0 if state.choice_index is None else state.choice_index + 1),
        "window": _ints(state.window.ids),
        "read": leb128(state.window.read),
        "context": _ints(state.logprob_context),
        "text_offset": leb128(state.text_offset),
        "tokens_seen": leb128(state.tokens_seen),
        "pending": leb128(0 if state.pending is None else state.pending + 1),
        "text_chars": leb128(stop.text_chars),
        "head": leb128(0 if stop.head_chars is None else stop.head_chars + 1),
        "held": _text(stop.held),
    }
    out["parser"] = encode_state(state)[len(b"".join(out.values())):]
    return out


FUZZED_FIELDS: dict[str, Callable[[], st.SearchStrategy[bytes]]] = {
    "issued_at": varints, "flags": varints, "choice": varints, "window": lists,
    "read": varints, "context": lists, "text_offset": varints, "tokens_seen": varints,
    "pending": varints, "text_chars": varints, "head": varints, "held": texts,
    "parser": parser_parts,
}


@st.composite
def payloads(draw: st.DrawFn, sane: dict[str, bytes]) -> bytes:
    """A real state's payload with one to three fields fuzzed (the others stay sane, so
    the fuzzed ones are reached), maybe trailing bytes; or raw bytes after the real
    fingerprint and issue time."""
    if draw(st.integers(0, 5)) == 0:
        return sane["fingerprint"] + sane["issued_at"] + draw(st.binary(max_size=200))
    fuzzed = draw(st.sets(st.sampled_from(sorted(FUZZED_FIELDS)), min_size=1, max_size=3))
    parts = [draw(FUZZED_FIELDS[name]()) if name in fuzzed else value
             for name, value in sane.items()]
    return b"".join(parts) + draw(st.one_of(st.just(b""), st.binary(max_size=8)))


@DIRECT
@given(data=st.data())
def test_a_signed_payload_decodes_to_a_state_or_the_typed_error(pool: Pool,
                                                                 data: st.DataObject) -> None:
    """With the MAC right (a leaked key, or a bug), the decoder is the last line: it returns
    a state or refuses with BadRequestError, never another exception, and quickly. A state
    it returns is one the encoder can write back, and reads back the same."""
    token = data.draw(st.sampled_from(pool.tokens), label="real state")
    sane = fields_of(decode_state(verify(RING_KEYS, token, MAX_CHARS)))
    payload = data.draw(st.one_of(payloads(sane), st.binary(max_size=300)), label="payload")
    token = sign(RING_KEYS, payload)
    assume(len(token) <= MAX_CHARS)
    with within(DIRECT_SECONDS):
        try:
            state = decode_state(verify(RING_KEYS, token, MAX_CHARS))
        except BadRequestError as error:
            assert error.message == "stream_state payload is malformed"
            return
        again = decode_state(encode_state(state))
    assert isinstance(state, StreamState)
    assert again == state


# --------------------------------------------------------------------------- over HTTP


VARIANTS: dict[str, dict[str, dict[str, Any]]] = {
    # name -> route -> fields of the embedded request (decode settings: all bound)
    "plain": {"chat": {}, "completions": {}},
    "skip_special false": {"chat": {"skip_special_tokens": False},
                           "completions": {"skip_special_tokens": False}},
    "stop string": {"chat": {"stop": ["zz"]}, "completions": {"stop": ["zz"]}},
    "stop_token_ids": {"chat": {"stop_token_ids": [11]}, "completions": {"stop_token_ids": [11]}},
    "min_tokens": {"chat": {"min_tokens": 2}, "completions": {"min_tokens": 2}},
    "logprobs": {"chat": {"logprobs": True, "top_logprobs": 1}, "completions": {"logprobs": 1}},
}


@dataclass(frozen=True)
class Stream:
    """Everything a state is bound to: route, model, request id, choice, decode settings."""

    route: str
    model: str
    request_id: str | None
    index: int
    variant: str

    def body(self, state: Any, ids: list[int], batch: bool) -> dict[str, Any]:
        body = stream_body(route=self.route, model=self.model, request_id=self.request_id,
                           ids=ids, fields=VARIANTS[self.variant][self.route],
                           index=self.index, state=state)
        if batch:  # the same ids as two chunks of one call
            first = json.loads(json.dumps(body["generate_chunk"]))
            first["choices"][0]["token_ids"] = ids[:1]
            second = body.pop("generate_chunk")
            second["choices"][0]["token_ids"] = ids[1:]
            body["generate_chunks"] = [first, second]
        return body


STREAMS = st.builds(Stream, route=st.sampled_from(["chat", "completions"]),
                    model=st.sampled_from(["qwen3", "gpt2"]),
                    request_id=st.sampled_from(["a", "b", None]), index=st.sampled_from([0, 1]),
                    variant=st.sampled_from(sorted(VARIANTS)))
IDS = st.lists(st.sampled_from([9707, 1879, 11, 0, 220, 15496]), min_size=2, max_size=3)

FOREIGN_RINGS = {
    "same key id, another secret": ("k1:not-the-real-secret-0123456789", ALTERED),
    "another deployment's key": ("zz:another-deployment-0123456789", UNKNOWN_KEY),
}


@pytest.fixture(scope="module")
def apps(app_for: Any) -> dict[str, TestClient]:
    """Ours (qwen3 and gpt2, key ring ``RING``) and two foreign deployments, warmed up."""
    clients = {"ours": app_for(models=("qwen3", "gpt2"))}
    for name, (ring, _) in FOREIGN_RINGS.items():
        clients[name] = app_for(models=("qwen3", "gpt2"), signing_keys=ring)
    for client in clients.values():
        for model in ("qwen3", "gpt2"):
            _issue(client, stream_body(model=model, request_id="warm-up"))
    return clients


@HTTP
@given(data=st.data())
def test_only_a_token_issued_for_the_stream_is_accepted(apps: dict[str, TestClient],
                                                        data: st.DataObject) -> None:
    """A random sequence of calls over streams that differ in one or more bound fields.
    Each call's state is null, a token the service issued (for this stream or another), a
    token of another deployment, or a mutation of an issued token. The answer is 200
    exactly when the state is null or was issued for this very stream; otherwise a 400
    saying why (another stream's genuine token: it does not belong to this stream)."""
    ours = apps["ours"]
    issued: dict[Stream, list[str]] = {}
    owner: dict[str, Stream] = {}
    for _ in range(data.draw(st.integers(1, 8), label="calls")):
        known = sorted(issued, key=repr)
        stream = data.draw(st.sampled_from(known) if known and data.draw(st.booleans())
                           else STREAMS, label="stream")
        sources = ["null", "foreign"] + (["issued", "mutated"] if owner else [])
        source = data.draw(st.sampled_from(sources), label="source")
        expected: tuple[str, ...] = ()
        state: str | None = None
        if source == "issued":
            state = data.draw(st.sampled_from(sorted(owner)), label="token")
            if owner[state] != stream:
                expected = (NOT_THIS_STREAM,)
        elif source == "mutated":
            state = mutate(tuple(sorted(owner)), data)
            if state in owner:
                expected = () if owner[state] == stream else (NOT_THIS_STREAM,)
            else:
                expected = (*REFUSALS, OVERSIZED)
        elif source == "foreign":
            deployment = data.draw(st.sampled_from(sorted(FOREIGN_RINGS)), label="deployment")
            foreign = apps[deployment]
            response = post(foreign, stream.body(None, [9707, 1879], False), stream.route)
            assert response.status_code == 200, response.text
            state = response.json()["stream_state"]
            expected = (FOREIGN_RINGS[deployment][1],)
        ids = data.draw(IDS, label="ids")
        batch = data.draw(st.booleans(), label="batch")
        response = post(ours, stream.body(state, ids, batch), stream.route)
        if expected:
            assert_refused(response, *expected)
            continue
        assert response.status_code == 200, (stream, source, response.text)
        token = state_token(response.json()["stream_state"])
        issued.setdefault(stream, []).append(token)
        owner.setdefault(token, stream)
        assert owner[token] == stream  # a token is never issued for two streams


@HTTP
@given(data=st.data())
def test_a_mutated_token_sent_with_its_own_stream_is_refused(
        apps: dict[str, TestClient], pool: Pool, data: st.DataObject) -> None:
    """The strongest replay: the very stream the token was issued for, the token altered."""
    forged = mutate((pool.plain,), data)
    assume(forged != pool.plain)
    route_body = stream_body(state=forged)
    if data.draw(st.booleans(), label="batch"):
        route_body["generate_chunks"] = [route_body.pop("generate_chunk")]
    assert_refused(post(apps["ours"], route_body), *REFUSALS, OVERSIZED)


def _path(path: str, apps: dict[str, TestClient], parser_client: TestClient, pool: Pool
          ) -> tuple[TestClient, dict[str, Any], str, StreamState]:
    """Client, body (without state), route and a genuine state of that body's stream."""
    if path == "parser":
        client, body, route, token = parser_client, parser_body(ids=[9707]), "chat", "parsed"
    elif path == "completions":
        client, route, token = apps["ours"], "completions", "completions"
        body = stream_body(route="completions", fields={"logprobs": 1})
        body["generate_chunk"]["choices"][0]["logprobs"] = {"content": [
            {"token_id": 9707, "logprob": -0.5, "top_logprobs": []}]}
    else:
        client, body, route, token = apps["ours"], stream_body(), "chat", "plain"
    return client, body, route, decode_state(verify(RING_KEYS, pool.named[token], MAX_CHARS))


def _answered(client: TestClient, body: dict[str, Any], route: str) -> None:
    """A chunk and a next state, or a 400 in the envelope; nothing else."""
    response = post(client, body, route)
    assert response.status_code in (200, 400), response.text
    if response.status_code == 400:
        assert_envelope(response)
    else:
        assert state_token(response.json()["stream_state"])


PATHS = ("chat", "completions", "parser")


@settings(HTTP, max_examples=400)
@given(data=st.data())
def test_a_signed_state_with_fuzzed_fields_is_a_chunk_or_a_400(
        apps: dict[str, TestClient], parser_client: TestClient, pool: Pool,
        data: st.DataObject) -> None:
    """A genuine state of the stream with one to three fields fuzzed (huge, over-long and
    unterminated varints, lying counts and sizes, invalid UTF-8, parser garbage), signed
    with the real key so the binding and expiry checks pass: the route answers with a
    chunk or a 400, never a 500, on the plain chat, completions (whose counters grow with
    every chunk) and parser paths."""
    client, body, route, state = _path(data.draw(st.sampled_from(PATHS), label="path"),
                                       apps, parser_client, pool)
    body["stream_state"] = sign(RING_KEYS, data.draw(payloads(fields_of(state)),
                                                     label="payload"))
    assume(len(body["stream_state"]) <= MAX_CHARS)
    _answered(client, body, route)


BIG = (2**48 - 1, 2**48, 2**63 - 2)  # the last: +1 (choice, pending, head) still encodes


def _with(state: StreamState, name: str, value: int) -> StreamState:
    stop, window, parser = state.stop, state.window, state.parser
    if name in ("text_chars", "head_chars"):
        return replace(state, stop=replace(stop, **{name: value}))
    if name in ("window id", "read"):
        ids = (*window.ids, value) if name == "window id" else window.ids
        read = value if name == "read" else window.read
        return replace(state, window=replace(window, ids=ids, read=read))
    if name == "context id":
        return replace(state, logprob_context=(*state.logprob_context, value))
    if name in ("parser calls", "parser depth"):
        assert parser is not None and parser.tools is not None
        tools = parser.tools
        tools = (replace(tools, calls=value) if name == "parser calls" else
                 replace(tools, scan=replace(tools.scan, depth=value)))
        return replace(state, parser=replace(parser, tools=tools))
    return replace(state, **{name: value})


@pytest.mark.parametrize("path, name", [
    *((path, name) for path in PATHS for name in (
        "issued_at", "choice_index", "window id", "read", "context id", "text_offset",
        "tokens_seen", "pending", "text_chars", "head_chars")),
    ("parser", "parser calls"), ("parser", "parser depth")])
def test_every_number_of_a_signed_state_at_its_extremes(
        apps: dict[str, TestClient], parser_client: TestClient, pool: Pool, path: str,
        name: str) -> None:
    """Each number of a genuine state, alone, just below the decoder's bound, at it and far
    past it (the completions offsets once overflowed the encoder on the next chunk: a 500)."""
    client, body, route, state = _path(path, apps, parser_client, pool)
    for value in BIG:
        body["stream_state"] = sign(RING_KEYS, encode_state(_with(state, name, value)))
        _answered(client, body, route)


# --------------------------------------------------------------------------- not a token at all

JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**64), 2**64), st.floats(allow_nan=False,
                                                                 allow_infinity=False),
              st.text(max_size=20)),
    lambda children: st.one_of(st.lists(children, max_size=5),
                               st.dictionaries(st.text(max_size=5), children, max_size=5)),
    max_leaves=40)


@HTTP
@given(value=JSON_VALUES.filter(lambda v: v is not None and not isinstance(v, str)),
       route=st.sampled_from(["chat", "completions"]))
def test_any_json_value_that_is_not_a_string_is_not_a_token(
        apps: dict[str, TestClient], value: Any, route: str) -> None:
    assert_refused(post(apps["ours"], stream_body(route=route, state=value), route),
                   NOT_A_TOKEN)


def _raw_body(state_text: str, route: str = "chat") -> bytes:
    body = json.dumps(stream_body(route=route, state="@"))
    return body.replace('"@"', state_text).encode()


def _post_raw(client: TestClient, raw: bytes, route: str = "chat") -> Any:
    path = "/v1/chat/completions/derender" if route == "chat" else "/v1/completions/derender"
    with within(HTTP_SECONDS):
        return client.post(path, content=raw, headers={"content-type": "application/json"})


@pytest.mark.parametrize("route", ["chat", "completions"])
@pytest.mark.parametrize("depth", [1, 10, 100, 500, 900, 5_000, 200_000])
@pytest.mark.parametrize("shape", ["list", "object", "mixed"])
def test_a_deeply_nested_state_is_a_400(apps: dict[str, TestClient], route: str,
                                        depth: int, shape: str) -> None:
    """Nested as deep as the JSON parser allows, it is not a token; deeper, the body is
    not JSON we read. Either way a 400 in the envelope, quickly."""
    opening, closing = {"list": ("[", "]"), "object": ('{"a":', "}"),
                        "mixed": ('[{"a":', "}]")}[shape]
    text = opening * depth + '"AQJrMQ"' + closing * depth
    message = assert_envelope(_post_raw(apps["ours"], _raw_body(text, route), route))
    assert NOT_A_TOKEN.split(" (")[0] in message or "json_invalid" in message, message


@pytest.mark.parametrize("text", [
    "1" * 5000, "-" + "9" * 4400, "1e400", "-1e400", "1" + "0" * 400 + ".5",
    '"' + "A" * 5_000_000 + '"', '"' + "\\u0041" * 800_000 + '"',
    "[" + ",".join(['"AQJrMQ"'] * 100_000) + "]",
    '{"' + '":1,"'.join(f"k{i}" for i in range(50_000)) + '":1}',
], ids=["huge int", "huge negative int", "1e400", "-1e400", "long float", "5 MB string",
        "escaped string", "100k-item list", "50k-key object"])
def test_an_oversized_value_where_the_token_goes_is_a_400(apps: dict[str, TestClient],
                                                          text: str) -> None:
    message = assert_envelope(_post_raw(apps["ours"], _raw_body(text)))
    assert ("stream_state" in message or "json_invalid" in message), message


def test_a_state_past_the_body_limit_is_a_413(app_for: Any) -> None:
    client = app_for(max_body_bytes=100_000)
    message = assert_envelope(_post_raw(client, _raw_body('"' + "A" * 200_000 + '"')), 413)
    assert "DERENDER_MAX_BODY_BYTES" in message


def test_the_fuzz_helpers_build_what_they_claim(pool: Pool) -> None:
    """Guards the generators: the pool's tokens are genuine and distinct, ``fields_of``
    splits each payload exactly as the codec lays it out, and ``leb128`` is the codec's
    varint."""
    assert len(set(pool.tokens)) == len(pool.tokens) == 8
    for token in pool.tokens:
        payload = verify(RING_KEYS, token, MAX_CHARS)
        state = decode_state(payload)
        fields = fields_of(state)
        assert b"".join(fields.values()) == payload
        assert fields["fingerprint"] == payload[:FINGERPRINT_BYTES]
        assert list(fields)[1:] == list(FUZZED_FIELDS)
    parsed = decode_state(verify(RING_KEYS, pool.named["parsed more"], MAX_CHARS))
    assert parsed.parser is not None and parsed.parser.tools is not None
    assert decode_state(fields_of(parsed)["fingerprint"] + b"".join(
        leb128(v) for v in (5, 0, 0)) + b"\x00" * 10).issued_at == 5
