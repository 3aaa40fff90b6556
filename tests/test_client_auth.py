"""Authentication in the client helper: the SigV4 headers it sends are checked against an
independent computation of Signature Version 4 from the AWS specification (canonical request
→ string to sign → HMAC chain, with hashlib/hmac only), itself checked against vectors of
AWS's published SigV4 test suite; and the bearer token."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from botocore.credentials import Credentials

from derender_client import BearerToken, RetryPolicy, SigV4, astream_derender, stream_derender

JSON = dict[str, Any]
CHUNK = {"request_id": "r", "choices": [{"index": 0, "token_ids": [5], "finish_reason": None}]}
OK = {"chunk": {"choices": [{"index": 0, "text": "ok"}]}, "stream_state": "s1"}
FROZEN = datetime(2024, 5, 6, 7, 8, 9)  # naive UTC, as botocore's clock gives it
FAST = RetryPolicy(backoff_base=0.001, backoff_cap=0.001)


# ----------------------------------------------------------------------------- the spec


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def sigv4(*, method: str, path: str, query: list[tuple[str, str]], headers: dict[str, str],
          body: bytes, access_key: str, secret_key: str, region: str, service: str,
          amz_date: str) -> str:
    """The ``Authorization`` header of Signature Version 4 for a request whose signed headers
    are exactly ``headers``: AWS General Reference, "Create a signed AWS API request"."""
    canonical_uri = quote(path, safe="/~")
    canonical_query = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
                               for k, v in sorted(query))
    items = sorted((name.lower(), " ".join(value.strip().split()))
                   for name, value in headers.items())
    canonical_headers = "".join(f"{name}:{value}\n" for name, value in items)
    signed_headers = ";".join(name for name, _ in items)
    canonical_request = "\n".join([method, canonical_uri, canonical_query, canonical_headers,
                                   signed_headers, hashlib.sha256(body).hexdigest()])
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    string_to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                                hashlib.sha256(canonical_request.encode("utf-8")).hexdigest()])
    key = _hmac(f"AWS4{secret_key}".encode(), amz_date[:8])
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    return (f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
            f"SignedHeaders={signed_headers}, Signature={signature}")


SUITE_KEY, SUITE_SECRET = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SUITE_HEADERS = {"Host": "example.amazonaws.com", "X-Amz-Date": "20150830T123600Z"}
SUITE_PREFIX = ("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
                "aws4_request, SignedHeaders=host;x-amz-date, Signature=")


@pytest.mark.parametrize(("name", "method", "query", "signature"), [
    ("get-vanilla", "GET", [],
     "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
    ("post-vanilla", "POST", [],
     "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
    ("get-vanilla-query-order-key-case", "GET", [("Param2", "value2"), ("Param1", "value1")],
     "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
])
def test_the_independent_sigv4_matches_the_aws_test_suite(
        name: str, method: str, query: list[tuple[str, str]], signature: str) -> None:
    """Vectors of the AWS SigV4 test suite (2015-08-30: example.amazonaws.com, AKIDEXAMPLE,
    region us-east-1, service "service"), their ``.authz`` files."""
    got = sigv4(method=method, path="/", query=query, headers=SUITE_HEADERS, body=b"",
                access_key=SUITE_KEY, secret_key=SUITE_SECRET, region="us-east-1",
                service="service", amz_date="20150830T123600Z")
    assert got == SUITE_PREFIX + signature, name


# ----------------------------------------------------------------------------- the client


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[datetime]]:
    """botocore's clock frozen: each signature takes the next time of the list (the last one
    repeats)."""
    import botocore.auth

    times = [FROZEN]
    used = [0]

    def now(remove_tzinfo: bool = True) -> datetime:
        when = times[min(used[0], len(times) - 1)]
        used[0] += 1
        return when

    monkeypatch.setattr(botocore.auth, "get_current_datetime", now)
    yield times


class Recorder:
    """Answers from a script of statuses (the last repeats), recording every request."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = statuses or (200,)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        code = self.statuses[min(len(self.requests) - 1, len(self.statuses) - 1)]
        if code != 200:
            return httpx.Response(code, json={"error": {"message": "later", "type": "Busy"}})
        return httpx.Response(200, json=OK)


def stream(mode: str, recorder: Recorder, base_url: str, auth: httpx.Auth) -> list[JSON]:
    transport = httpx.MockTransport(recorder)
    options: Any = {"base_url": base_url, "auth": auth, "retry": FAST,
                    "prompt_token_ids": [1, 2], "chat_request": {"messages": [
                        {"role": "user", "content": "héllo"}]}}
    if mode == "sync":
        with httpx.Client(transport=transport, base_url=base_url) as http:
            return list(stream_derender([CHUNK], client=http, **options))

    async def go() -> list[JSON]:
        async with httpx.AsyncClient(transport=transport, base_url=base_url) as http:
            return [c async for c in astream_derender([CHUNK], client=http, **options)]
    return asyncio.run(go())


def expected_authorization(request: httpx.Request, *, access_key: str, secret_key: str,
                           region: str, service: str, token: str | None) -> str:
    """SigV4 of the request as it went on the wire, its signed headers those the client is
    documented to sign."""
    names = ["Content-Type", "Host", "X-Amz-Date"] + (["X-Amz-Security-Token"] if token else [])
    headers = {name: request.headers[name] for name in names}
    return sigv4(method=request.method, path=request.url.path,
                 query=list(request.url.params.multi_items()), headers=headers,
                 body=request.content, access_key=access_key, secret_key=secret_key,
                 region=region, service=service, amz_date=request.headers["X-Amz-Date"])


ENDPOINTS = {
    "execute-api": ("https://abc123.execute-api.eu-west-1.amazonaws.com/prod", "eu-west-1"),
    "lambda": ("https://xyz789.lambda-url.us-east-2.on.aws", "us-east-2"),
}


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("service", sorted(ENDPOINTS))
@pytest.mark.parametrize("token", [None, "session-token/with+chars=="])
def test_signed_headers_equal_an_independent_sigv4(
        clock: list[datetime], mode: str, service: str, token: str | None) -> None:
    base_url, region = ENDPOINTS[service]
    credentials = Credentials("AKIDTESTKEY", "test/secret+key", token)
    recorder = Recorder()
    out = stream(mode, recorder, base_url, SigV4(region, service, credentials))
    assert out == [OK["chunk"]]
    [request] = recorder.requests
    assert request.headers["X-Amz-Date"] == "20240506T070809Z"
    assert request.headers.get("X-Amz-Security-Token") == token
    assert request.url.path == ("/prod" if service == "execute-api" else "") + \
        "/v1/chat/completions/derender"
    assert json.loads(request.content)["generate_chunk"] == CHUNK
    assert request.headers["Authorization"] == expected_authorization(
        request, access_key="AKIDTESTKEY", secret_key="test/secret+key", region=region,
        service=service, token=token)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_attempt_is_signed_afresh(clock: list[datetime], mode: str) -> None:
    clock[:] = [FROZEN, FROZEN + timedelta(seconds=61), FROZEN + timedelta(hours=25)]
    base_url, region = ENDPOINTS["execute-api"]
    credentials = Credentials("AKIDTESTKEY", "test/secret+key")
    recorder = Recorder(503, 429, 200)
    stream(mode, recorder, base_url, SigV4(region, "execute-api", credentials))
    dates = [r.headers["X-Amz-Date"] for r in recorder.requests]
    assert dates == ["20240506T070809Z", "20240506T070910Z", "20240507T080809Z"]
    assert len({r.content for r in recorder.requests}) == 1  # the same body every time
    for request in recorder.requests:
        assert request.headers["Authorization"] == expected_authorization(
            request, access_key="AKIDTESTKEY", secret_key="test/secret+key", region=region,
            service="execute-api", token=None)


def test_credentials_come_from_botocores_default_chain(
        clock: list[datetime], monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN",
                 "AWS_SECURITY_TOKEN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDFROMENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-from-env")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    base_url, region = ENDPOINTS["lambda"]
    recorder = Recorder()
    stream("sync", recorder, base_url, SigV4(region, "lambda"))
    [request] = recorder.requests
    assert request.headers["Authorization"] == expected_authorization(
        request, access_key="AKIDFROMENV", secret_key="secret-from-env", region=region,
        service="lambda", token=None)


def test_botocore_is_imported_only_to_sign() -> None:
    code = (
        "import sys, httpx\n"
        "from derender_client import stream_derender, SigV4, BearerToken\n"
        "answer = {'chunk': {'choices': []}, 'stream_state': 's'}\n"
        "http = httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(200, "
        "json=answer)), base_url='http://x')\n"
        "list(stream_derender([{'choices': []}], base_url='http://x', client=http, "
        "auth=BearerToken('t')))\n"
        "SigV4('eu-west-1')\n"
        "print('botocore' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=True)
    assert result.stdout.strip() == "False", result.stderr


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_bearer_token_static_and_refreshed_per_attempt(mode: str) -> None:
    recorder = Recorder()
    stream(mode, recorder, "http://fake", BearerToken("tok.en.jwt"))
    assert recorder.requests[0].headers["Authorization"] == "Bearer tok.en.jwt"

    issued = iter(["first", "second"])
    recorder = Recorder(503, 200)
    stream(mode, recorder, "http://fake", BearerToken(lambda: next(issued)))
    assert [r.headers["Authorization"] for r in recorder.requests] == [
        "Bearer first", "Bearer second"]
