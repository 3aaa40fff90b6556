"""Signing keys from SSM / Secrets Manager and models from S3, against a real AWS API emulator.

A moto server (``moto[server]``) runs as a subprocess on a free local port for the session;
the service reaches it through ``AWS_ENDPOINT_URL`` with boto3 exactly as it reaches AWS.
"""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from derender.app.main import create_app
from derender.aws import keys as aws_keys
from derender.aws.models import MARKER, parse_s3_uri
from derender.core.registry import ModelRegistry
from derender.settings import Settings
from derender_testing.models import TEST_MODELS
from derender_testing.recorded import state_token
from derender_testing.servers import LocalServer, ServerStartError, free_port

COMPLETIONS = "/v1/completions/derender"
CHAT = "/v1/chat/completions/derender"
SECRET_0 = "previous-secret-0123456789abcdef"
SECRET_1 = "current-secret-0123456789abcdef"
TTL = 60
HELLO, WORLD, BANG = 15496, 995, 0  # gpt2 ids of "Hello", " world", "!"


@pytest.fixture(scope="session")
def moto_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A moto server subprocess for the session; its endpoint URL."""
    if importlib.util.find_spec("moto") is None or importlib.util.find_spec("boto3") is None:
        print("moto[server] / boto3 are not installed: pip install 'moto[server]>=5' boto3")
        pytest.skip("moto[server] / boto3 are not installed")
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1"}
    try:
        server = LocalServer(
            lambda port: [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                          str(port)],
            env, tmp_path_factory.mktemp("moto") / "moto.log", probe="/moto-api/", timeout=30)
    except ServerStartError as exc:
        print(f"the moto server did not start: {exc}")
        pytest.skip(f"the moto server did not start: {str(exc)[-500:]}")
    with server:
        yield server.url


@pytest.fixture
def aws(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The environment pointing boto3 at the moto server; ``aws(service)`` → a client."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    import boto3

    return boto3.client


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(aws_keys, "_clock", fake)
    return fake


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("aws-models")
    (folder / "gpt2").symlink_to(TEST_MODELS / "gpt2", target_is_directory=True)
    return folder


def _name(prefix: str) -> str:
    return f"{prefix}-{time.monotonic_ns()}"


def key_id(state: Any) -> str:
    token = state_token(state)
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    return raw[2:2 + raw[1]].decode("ascii")


def stream_body(ids: list[int], state: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "stream": True, "model": "gpt2", "completion_request": {"prompt": "hi"},
        "generate_chunk": {"request_id": "r1", "choices": [
            {"index": 0, "token_ids": ids, "finish_reason": None}]}}
    if state is not None:
        body["stream_state"] = state
    return body


def chat_body() -> dict[str, Any]:
    return {"model": "gpt2", "chat_request": {"messages": [{"role": "user", "content": "hi"}]},
            "generate_response": {"request_id": "r2", "choices": [
                {"index": 0, "token_ids": [HELLO, WORLD, BANG], "finish_reason": "stop"}]}}


def stream(client: TestClient, ids: list[int], state: Any) -> Any:
    return client.post(COMPLETIONS, json=stream_body(ids, state))


class Store:
    """One key-ring source in the emulator: create, overwrite, delete its value."""

    def __init__(self, kind: str, aws: Any) -> None:
        self.kind = kind
        self.name = _name(f"/derender/keys-{kind}" if kind == "ssm" else f"derender-{kind}")
        self.client = aws("ssm" if kind == "ssm" else "secretsmanager")
        self.created = False

    def put(self, value: str) -> None:
        if self.kind == "ssm":
            self.client.put_parameter(Name=self.name, Value=value, Type="SecureString",
                                      Overwrite=True)
        elif not self.created:
            self.client.create_secret(Name=self.name, SecretString=value)
        else:
            self.client.put_secret_value(SecretId=self.name, SecretString=value)
        self.created = True

    def delete(self) -> None:
        if self.kind == "ssm":
            self.client.delete_parameter(Name=self.name)
        else:
            self.client.delete_secret(SecretId=self.name, ForceDeleteWithoutRecovery=True)

    def settings(self, models_dir: Path, **extra: Any) -> Settings:
        source = ({"signing_keys_ssm_parameter": self.name} if self.kind == "ssm"
                  else {"signing_keys_secret": self.name})
        return Settings(models_dir=models_dir, signing_keys_ttl_seconds=TTL, **source, **extra)


def app_client(settings: Settings) -> TestClient:
    return TestClient(create_app(settings, ModelRegistry(settings.models_dir)))


# --------------------------------------------------------------------------- keys


@pytest.mark.parametrize("kind", ["ssm", "secret"])
def test_rotation_is_honoured_after_the_ttl(kind: str, aws: Any, clock: Clock,
                                            models_dir: Path) -> None:
    store = Store(kind, aws)
    store.put(f"k0:{SECRET_0}")
    client = app_client(store.settings(models_dir))

    first = stream(client, [HELLO], None)
    assert first.status_code == 200, first.text
    t0 = first.json()["stream_state"]
    assert key_id(t0) == "k0"
    second = stream(client, [WORLD], t0)
    assert second.status_code == 200, second.text
    assert second.json()["chunk"]["choices"][0]["text"] == " world"
    t1 = second.json()["stream_state"]

    # rotation: the new key first, the old one kept for the streams in flight
    store.put(f"k1:{SECRET_1},k0:{SECRET_0}")
    clock.now += TTL - 1  # still cached
    assert key_id(stream(client, [BANG], t1).json()["stream_state"]) == "k0"
    clock.now += 2  # past the TTL: re-read
    third = stream(client, [BANG], t1)
    assert third.status_code == 200, third.text
    t2 = third.json()["stream_state"]
    assert key_id(t2) == "k1"
    assert third.json()["chunk"]["choices"][0]["text"] == "!"
    # a new stream signs with the new key too
    assert key_id(stream(client, [HELLO], None).json()["stream_state"]) == "k1"

    # the old key retired: its tokens are refused, the new key's continue
    store.put(f"k1:{SECRET_1}")
    clock.now += TTL + 1
    refused = stream(client, [BANG], t1)
    assert refused.status_code == 400
    assert "unknown key" in refused.json()["error"]["message"]
    kept = stream(client, [BANG], t2)
    assert kept.status_code == 200, kept.text
    assert key_id(kept.json()["stream_state"]) == "k1"


@pytest.mark.parametrize("kind", ["ssm", "secret"])
def test_a_failed_refresh_keeps_the_cached_ring(kind: str, aws: Any, clock: Clock,
                                                models_dir: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    store = Store(kind, aws)
    store.put(f"k0:{SECRET_0}")
    client = app_client(store.settings(models_dir))
    token = stream(client, [HELLO], None).json()["stream_state"]
    store.delete()
    clock.now += TTL + 1
    with caplog.at_level(logging.WARNING, logger="derender"):
        answer = stream(client, [WORLD], token)
    assert answer.status_code == 200, answer.text
    assert key_id(answer.json()["stream_state"]) == "k0"
    assert any("keeping the cached ones" in r.getMessage() for r in caplog.records)
    assert SECRET_0 not in caplog.text


def _assert_streaming_unavailable(client: TestClient) -> None:
    answer = stream(client, [HELLO], None)
    assert answer.status_code == 503, answer.text
    error = answer.json()["error"]
    assert error["code"] == 503
    assert error["type"] == "ServiceUnavailableError"
    assert "signing keys could not be read" in error["message"]
    plain = client.post(CHAT, json=chat_body())
    assert plain.status_code == 200, plain.text
    assert plain.json()["choices"][0]["message"]["content"] == "Hello world!"


@pytest.mark.parametrize("kind", ["ssm", "secret"])
def test_an_absent_key_source_is_503_for_streaming_only(kind: str, aws: Any, clock: Clock,
                                                        models_dir: Path) -> None:
    store = Store(kind, aws)  # never created
    _assert_streaming_unavailable(app_client(store.settings(models_dir)))


def test_an_unreachable_key_source_is_503_for_streaming_only(
        aws: Any, clock: Clock, models_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    settings = Settings(models_dir=models_dir, signing_keys_ssm_parameter="/derender/keys")
    started = time.monotonic()
    _assert_streaming_unavailable(app_client(settings))
    assert time.monotonic() - started < 30


def test_an_invalid_stored_ring_is_503(aws: Any, clock: Clock, models_dir: Path) -> None:
    store = Store("ssm", aws)
    store.put("no-separator-here")
    _assert_streaming_unavailable(app_client(store.settings(models_dir)))


def test_settings_read_the_aws_variables() -> None:
    settings = Settings.from_env({
        "DERENDER_SIGNING_KEYS_SSM_PARAMETER": "/derender/keys",
        "DERENDER_SIGNING_KEYS_TTL_SECONDS": "30",
        "DERENDER_MODELS_S3_URI": "s3://bucket/models/",
        "DERENDER_MODELS_CACHE_DIR": "/tmp/elsewhere",
    })
    assert settings.signing_keys_ssm_parameter == "/derender/keys"
    assert settings.signing_keys_secret is None
    assert settings.signing_keys_ttl_seconds == 30
    assert settings.models_s3_uri == "s3://bucket/models/"
    assert settings.models_cache_dir == Path("/tmp/elsewhere")
    assert Settings.from_env({}).signing_keys_ttl_seconds == 300
    assert Settings.from_env({}).models_cache_dir == Path("/tmp/derender-models")
    with pytest.raises(ValueError, match="not DERENDER_SIGNING_KEYS_SSM_PARAMETER and "
                                         "DERENDER_SIGNING_KEYS_SECRET"):
        Settings.from_env({"DERENDER_SIGNING_KEYS_SSM_PARAMETER": "a",
                           "DERENDER_SIGNING_KEYS_SECRET": "b"})
    with pytest.raises(ValueError, match="not DERENDER_SIGNING_KEYS and "
                                         "DERENDER_SIGNING_KEYS_SECRET"):
        Settings.from_env({"DERENDER_SIGNING_KEYS": "k1:0123456789abcdef",
                           "DERENDER_SIGNING_KEYS_SECRET": "b"})


def test_lambda_without_any_key_source_refuses_streaming(models_dir: Path) -> None:
    client = app_client(Settings(models_dir=models_dir, on_lambda=True))
    answer = stream(client, [HELLO], None)
    assert answer.status_code == 503
    assert "DERENDER_SIGNING_KEYS_SSM_PARAMETER" in answer.json()["error"]["message"]


# --------------------------------------------------------------------------- models


def test_parse_s3_uri() -> None:
    assert parse_s3_uri("s3://bucket/models/") == ("bucket", "models/")
    assert parse_s3_uri("s3://bucket/a/b") == ("bucket", "a/b/")
    assert parse_s3_uri("s3://bucket") == ("bucket", "")
    for bad in ("bucket/models", "s3:///models", "https://bucket/models"):
        with pytest.raises(ValueError, match="S3 models URI"):
            parse_s3_uri(bad)


def test_models_from_s3_are_served_like_local_ones(aws: Any, tmp_path: Path,
                                                   models_dir: Path) -> None:
    s3 = aws("s3")
    bucket = _name("derender-models")
    s3.create_bucket(Bucket=bucket)
    for file in (TEST_MODELS / "gpt2").iterdir():
        s3.upload_file(str(file), bucket, f"models/gpt2/{file.name}")
    s3.put_object(Bucket=bucket, Key="models/README.txt", Body=b"not a model")
    s3.put_object(Bucket=bucket, Key="models/empty/", Body=b"")
    s3.put_object(Bucket=bucket, Key="elsewhere/gpt2/tokenizer.json", Body=b"{}")
    cache = tmp_path / "cache"
    settings = Settings(models_dir=tmp_path / "no-models-here", signing_keys="k:" + "s" * 32,
                        models_s3_uri=f"s3://{bucket}/models", models_cache_dir=cache)

    remote = TestClient(create_app(settings))
    local = app_client(Settings(models_dir=models_dir, signing_keys="k:" + "s" * 32))
    assert sorted(p.name for p in cache.iterdir()) == [MARKER, "gpt2"]
    assert remote.get("/v1/models").json()["data"][0]["id"] == "gpt2"
    ours, theirs = remote.post(CHAT, json=chat_body()), local.post(CHAT, json=chat_body())
    assert ours.status_code == 200, ours.text
    ours_json, theirs_json = ours.json(), theirs.json()
    ours_json.pop("created", None)
    theirs_json.pop("created", None)
    assert ours_json == theirs_json
    assert ours_json["choices"][0]["message"]["content"] == "Hello world!"
    assert stream(remote, [HELLO], None).json()["chunk"]["choices"][0]["text"] == "Hello"

    # once per container: a second app reuses the download without asking S3
    with contextlib.suppress(Exception):
        for item in s3.list_objects_v2(Bucket=bucket)["Contents"]:
            s3.delete_object(Bucket=bucket, Key=item["Key"])
    again = TestClient(create_app(settings))
    assert again.post(CHAT, json=chat_body()).json()["choices"] == ours_json["choices"]
