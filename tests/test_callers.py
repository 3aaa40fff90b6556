"""Stream states are bound to the authenticated caller, through the real Lambda handlers.

The events are the ``events/*.iam.json`` / ``*.jwt.json`` files: requests that API Gateway (HTTP
API, payload 2.0) or a Function URL authenticated, with the principal AWS wrote into
``requestContext.authorizer``. A second principal is the same event with another identity. A
state one caller got must be refused for any other with exactly the 400 a state of another
stream gets; without a caller (the local server, ``AuthMode`` none) nothing changes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from derender.app.main import create_app
from derender.aws.callers import caller_of
from derender.awslambda.adapter import LambdaHandler
from derender.settings import Settings
from tests.test_lambda_events import EVENTS, LAYER_MODELS, FakeLambdaContext

Event = dict[str, Any]
NOT_THIS_STREAM = {"error": {"message": "stream_state does not belong to this stream",
                             "type": "BadRequestError", "param": None, "code": 400}}
KEYS = "k1:callers-test-signing-key-0123456789"
EOS = 151645  # Qwen3 <|im_end|>: ends a chat stream with finish_reason "stop"

AUTHENTICATED = ["http-api-v2.chat.stream.iam", "function-url.completions.stream.iam",
                 "http-api-v2.chat.stream.jwt"]


def load(name: str) -> Event:
    event: Event = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    return event


def as_other_caller(event: Event) -> Event:
    """The same request from another principal of the same account / issuer."""
    other = copy.deepcopy(event)
    authorizer = other["requestContext"]["authorizer"]
    if "iam" in authorizer:
        authorizer["iam"].update(
            userArn="arn:aws:sts::123456789012:assumed-role/other-team/intruder",
            userId="AROAEXAMPLEOTHERROLE:intruder", callerId="AROAEXAMPLEOTHERROLE:intruder")
    else:
        authorizer["jwt"]["claims"].update(sub="other-service", client_id="other-service")
    return other


def anonymous(event: Event) -> Event:
    """The same request with no authenticated caller (``AuthMode`` none)."""
    plain = copy.deepcopy(event)
    del plain["requestContext"]["authorizer"]
    return plain


def with_body(event: Event, **changes: Any) -> Event:
    """``event`` with its JSON body changed (``generate_chunk``, ``stream_state``...)."""
    changed = copy.deepcopy(event)
    body = json.loads(changed["body"])
    body.update(changes)
    changed["body"] = json.dumps(body)
    changed["headers"].pop("content-length", None)
    return changed


def next_call(event: Event, state: str) -> Event:
    """The stream's second call: the EOS, finishing it, with the state of the first."""
    chunk = json.loads(event["body"])["generate_chunk"]
    finish = {"request_id": chunk["request_id"],
              "choices": [{"index": 0, "token_ids": [EOS], "finish_reason": "stop"}]}
    return with_body(event, generate_chunk=finish, stream_state=state)


@pytest.fixture(scope="module")
def handler() -> Iterator[Callable[[Event], tuple[int, Any]]]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DERENDER_MODELS_DIR", str(LAYER_MODELS))
        env.setenv("DERENDER_SIGNING_KEYS", KEYS)
        env.delenv("DERENDER_DEFAULT_MODEL", raising=False)
        lambda_handler = LambdaHandler()

        def invoke(event: Event) -> tuple[int, Any]:
            response = lambda_handler(event, FakeLambdaContext())
            return response["statusCode"], json.loads(response["body"])

        yield invoke


@pytest.mark.parametrize("name", AUTHENTICATED)
def test_the_caller_that_started_a_stream_continues_it(
        handler: Callable[[Event], tuple[int, Any]], name: str) -> None:
    event = load(name)
    status, first = handler(event)
    assert status == 200
    status, second = handler(next_call(event, first["stream_state"]))
    assert status == 200
    assert second["chunk"]["choices"][0]["finish_reason"] in {"stop", "length"}


@pytest.mark.parametrize("name", AUTHENTICATED)
def test_another_caller_gets_the_400_of_another_stream(
        handler: Callable[[Event], tuple[int, Any]], name: str) -> None:
    event = load(name)
    state = handler(event)[1]["stream_state"]
    # the reference refusal: the same caller presenting a state of another of its streams
    other_stream = with_body(event, generate_chunk={
        **json.loads(event["body"])["generate_chunk"], "request_id": "another-stream"})
    assert handler(next_call(other_stream, state)) == (400, NOT_THIS_STREAM)
    assert handler(next_call(as_other_caller(event), state)) == (400, NOT_THIS_STREAM)
    assert handler(next_call(anonymous(event), state)) == (400, NOT_THIS_STREAM)


@pytest.mark.parametrize("name", AUTHENTICATED)
def test_a_state_issued_without_a_caller_is_not_taken_by_one(
        handler: Callable[[Event], tuple[int, Any]], name: str) -> None:
    event = load(name)
    state = handler(anonymous(event))[1]["stream_state"]
    assert handler(next_call(event, state)) == (400, NOT_THIS_STREAM)


def test_one_principal_may_switch_between_api_and_function_url(
        handler: Callable[[Event], tuple[int, Any]]) -> None:
    """The binding is to the principal, not to the entry point it came through."""
    api = load("http-api-v2.chat.stream.iam")
    url = load("function-url.completions.stream.iam")
    url["requestContext"]["authorizer"] = copy.deepcopy(api["requestContext"]["authorizer"])
    url["rawPath"] = url["requestContext"]["http"]["path"] = api["rawPath"]
    url["body"] = api["body"]
    url["headers"].pop("content-length", None)
    state = handler(api)[1]["stream_state"]
    status, body = handler(next_call(url, state))
    assert status == 200
    assert body["chunk"]["object"] == "chat.completion.chunk"


def test_without_a_caller_lambda_and_the_local_server_bind_alike(
        handler: Callable[[Event], tuple[int, Any]]) -> None:
    """``AuthMode`` none behaves as before: a state the Lambda handler issued to an
    unauthenticated event continues on the local server (same keys) and back."""
    event = anonymous(load("http-api-v2.chat.stream.iam"))
    status, first = handler(event)
    assert status == 200
    settings = Settings.from_env({"DERENDER_MODELS_DIR": str(LAYER_MODELS),
                                  "DERENDER_SIGNING_KEYS": KEYS})
    local = TestClient(create_app(settings))
    body = json.loads(next_call(event, first["stream_state"])["body"])
    answer = local.post(event["rawPath"], json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["chunk"]["choices"][0]["finish_reason"] == "stop"


# caller_of on its own: what it reads, and what it refuses to guess


def test_iam_caller_is_the_principal_arn_not_the_access_key() -> None:
    event = load("http-api-v2.chat.stream.iam")
    caller = caller_of(event)
    assert caller == "iam:arn:aws:sts::123456789012:assumed-role/derender-router/router-1"
    rotated = copy.deepcopy(event)
    rotated["requestContext"]["authorizer"]["iam"]["accessKey"] = "ASIANEWKEYAFTERREFRESH"
    assert caller_of(rotated) == caller


def test_iam_caller_without_an_arn_is_account_and_user() -> None:
    iam = {"accountId": "123456789012", "userId": "AIDAEXAMPLEUSER", "userArn": None}
    event = {"requestContext": {"authorizer": {"iam": iam}}}
    assert caller_of(event) == "iam:123456789012:AIDAEXAMPLEUSER"


def test_jwt_caller_is_issuer_and_subject_else_client_id() -> None:
    event = load("http-api-v2.chat.stream.jwt")
    assert caller_of(event) == "jwt:https://auth.example.com/ sub=router-service"
    claims = event["requestContext"]["authorizer"]["jwt"]["claims"]
    del claims["sub"]
    assert caller_of(event) == "jwt:https://auth.example.com/ client_id=router-service"
    del claims["client_id"]
    assert caller_of(event) is None


@pytest.mark.parametrize("event", [
    None, "text", {}, {"requestContext": None}, {"requestContext": {"authorizer": None}},
    {"requestContext": {"authorizer": {"lambda": {"user": "x"}}}},
    {"requestContext": {"authorizer": {"iam": {}}}},
    {"requestContext": {"identity": {"userArn": "arn:aws:iam::1:user/rest"}}},
])
def test_events_without_an_authenticated_caller(event: object) -> None:
    assert caller_of(event) is None


def test_unauthenticated_events_have_no_caller() -> None:
    for path in sorted(EVENTS.glob("*.json")):
        if not path.name.endswith((".iam.json", ".jwt.json")):
            assert caller_of(json.loads(path.read_text(encoding="utf-8"))) is None, path.name
