"""Replays every event in ``events/`` through the real Lambda handlers, as Lambda calls them.

Each file is named ``<source>.<route>[.<variant>].json``; ``route`` picks the function (``health``
goes through both). The expectations below are written out by hand: the texts are the strings
whose Qwen3 token ids the event bodies carry (chat ids end with the EOS ``<|im_end|>``, which
never reaches the text; a streaming event carries one first chunk, so its text is the whole
delta), and the error envelopes are those of vLLM 0.33 (or ours, for stream states).
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from derender_testing.lambda_context import FakeLambdaContext
from derender_testing.recorded import state_token

ROOT = Path(__file__).resolve().parent.parent
EVENTS = ROOT / "events"
LAYER_MODELS = ROOT / "layers" / "tokenizers"

FUNCTIONS = {"chat": "chat_completions", "completions": "completions"}
"""Route segment of an event's file name → the function folder serving it."""

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]



@dataclass(frozen=True)
class Chat:
    text: str
    id: str
    prompt_tokens: int
    completion_tokens: int
    """Token ids in the body, the EOS included."""


@dataclass(frozen=True)
class Completion:
    text: str
    id: str
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class ChatChunk:
    """A first streaming chunk (no ``stream_state`` sent, no finish yet)."""

    text: str
    id: str


@dataclass(frozen=True)
class CompletionChunk:
    text: str
    id: str


@dataclass(frozen=True)
class Error:
    status: int
    type: str
    param: str | None
    message: str
    """The whole message, or its start when ``exact`` is false."""
    exact: bool = True


@dataclass(frozen=True)
class Health:
    pass


Expected = Chat | Completion | ChatChunk | CompletionChunk | Error | Health

GREETING = "Hello from Lambda! Grüße aus der Cloud ☁️"  # 12 ids
HELLO = "Hello world! How are you"  # 6 ids
BONJOUR = "Bonjour — ça va? 👋"  # 7 ids
PARIS = " Paris. It is known for the Eiffel Tower"  # 11 ids
CAPITAL = " the capital of France"  # 4 ids
STREAMING = "Streaming from Lambda, one chunk"  # 6 ids
AT_A_TIME = " one chunk at a time"  # 5 ids
HI = "Hi there"  # 2 ids
THROUGH = " through a function URL"  # 4 ids
NOT_A_TOKEN = Error(400, "BadRequestError", None,
                    "stream_state must be the state returned by the previous call of this "
                    "stream (the object, or the string of earlier releases); omit it on the "
                    "first call")
BAD_ENCODING = Error(400, "BadRequestError", None,
                     "stream_state is not a valid token (bad encoding)")

MEDIA_TYPE = Error(400, "Bad Request", None,
                   "1 validation error:\n  Unsupported Media Type: Only 'application/json' is "
                   "allowed")


def json_invalid(offset: int) -> Error:
    return Error(400, "Bad Request", f"body.{offset}",
                 f"1 validation error:\n  {{'type': 'json_invalid', 'loc': 'body.{offset}', "
                 "'msg': 'JSON decode error'", exact=False)


def not_found(model: str) -> Error:
    return Error(404, "NotFoundError", "model", f"The model `{model}` does not exist.",
                 exact=False)


EXPECTED: dict[str, Expected] = {
    "http-api-v2.chat": Chat(GREETING, "evt-http-chat", 5, 13),
    "http-api-v2.chat.base64": Chat(HELLO, "evt-http-chat-b64", 12, 7),
    # vLLM 0.33's plain JSON stream state, which we refuse
    "http-api-v2.chat.bad-stream-state": NOT_A_TOKEN,
    "http-api-v2.chat.stream": ChatChunk(STREAMING, "evt-http-chat-stream"),
    # the same call through an IAM-authorized route, and through a JWT-authorized one
    "http-api-v2.chat.stream.iam": ChatChunk(STREAMING, "evt-http-chat-stream"),
    "http-api-v2.chat.stream.jwt": ChatChunk(STREAMING, "evt-http-chat-stream"),
    "http-api-v2.chat.unknown-model": not_found("gpt-4o"),
    "http-api-v2.chat.wrong-content-type": MEDIA_TYPE,
    "http-api-v2.completions": Completion(PARIS, "evt-http-cmpl", 4, 11),
    "http-api-v2.completions.base64": Completion(CAPITAL, "evt-http-cmpl-b64", 6, 4),
    # a trailing comma: the parser stops at the closing brace, character 98
    "http-api-v2.completions.malformed-json": json_invalid(98),
    "http-api-v2.completions.stream": CompletionChunk(AT_A_TIME, "evt-http-cmpl-stream"),
    "http-api-v2.health": Health(),
    "rest-v1.chat": Chat(BONJOUR, "evt-rest-chat", 9, 8),
    "rest-v1.chat.base64": Chat(GREETING, "evt-rest-chat-b64", 5, 13),
    # cut off after 105 characters, inside the token id list
    "rest-v1.chat.malformed-json": json_invalid(105),
    "rest-v1.completions": Completion(CAPITAL, "evt-rest-cmpl", 3, 4),
    "rest-v1.completions.base64": Completion(PARIS, "evt-rest-cmpl-b64", 4, 11),
    "rest-v1.completions.unknown-model": not_found("llama-3-70b"),
    # what `curl -d` sends by default
    "rest-v1.completions.wrong-content-type": MEDIA_TYPE,
    "rest-v1.health": Health(),
    "function-url.chat": Chat(HELLO, "evt-url-chat", 7, 7),
    "function-url.chat.base64": Chat(BONJOUR, "evt-url-chat-b64", 3, 8),
    "function-url.chat.stream": ChatChunk(HI, "evt-url-chat-stream"),
    # function URLs base64-encode bodies of binary content types
    "function-url.chat.wrong-content-type.base64": MEDIA_TYPE,
    "function-url.completions": Completion(PARIS, "evt-url-cmpl", 4, 11),
    "function-url.completions.base64": Completion(CAPITAL, "evt-url-cmpl-b64", 2, 4),
    # a string, but not base64url of a signed token
    "function-url.completions.bad-stream-state": BAD_ENCODING,
    # cut off after 106 characters, inside the token id list
    "function-url.completions.malformed-json.base64": json_invalid(106),
    "function-url.completions.stream": CompletionChunk(THROUGH, "evt-url-cmpl-stream"),
    "function-url.completions.stream.iam": CompletionChunk(THROUGH, "evt-url-cmpl-stream"),
    "function-url.completions.unknown-model": not_found("qwen3-235b"),
    "function-url.health": Health(),
}


def event_names() -> list[str]:
    return sorted(path.name.removesuffix(".json") for path in EVENTS.glob("*.json"))


def cases() -> Iterator[tuple[str, str]]:
    for name in event_names():
        route = name.split(".")[1]
        for function in FUNCTIONS.values() if route == "health" else [FUNCTIONS[route]]:
            yield name, function


@pytest.fixture(scope="module")
def handlers() -> dict[str, Handler]:
    """Each function's ``handler``, imported fresh with the repository's models folder."""
    loaded: dict[str, Handler] = {}
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DERENDER_MODELS_DIR", str(LAYER_MODELS))
        env.delenv("DERENDER_DEFAULT_MODEL", raising=False)
        for function in FUNCTIONS.values():
            module_name = f"functions.{function}.handler"
            sys.modules.pop(module_name, None)
            loaded[function] = importlib.import_module(module_name).handler
    return loaded


def invoke(handler: Handler, event: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """The handler's Lambda response and its body, parsed as JSON."""
    response = handler(event, FakeLambdaContext())
    raw = response["body"]
    text = base64.b64decode(raw).decode("utf-8") if response["isBase64Encoded"] else raw
    return response, json.loads(text)


def test_every_event_has_an_expectation() -> None:
    assert event_names() == sorted(EXPECTED)


@pytest.mark.parametrize(("name", "function"), list(cases()))
def test_event(handlers: dict[str, Handler], name: str, function: str) -> None:
    event = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    check_response(name, *invoke(handlers[function], event))


def check_response(name: str, response: dict[str, Any], body: Any) -> None:
    """Assert that a handler's Lambda response to event ``name`` is the expected one."""
    expected = EXPECTED[name]
    status = expected.status if isinstance(expected, Error) else 200
    assert response["statusCode"] == status
    assert response["headers"]["content-type"] == "application/json"
    if name.startswith("rest-v1."):  # payload 1.0 answers carry multiValueHeaders too
        assert response["multiValueHeaders"] == {}
    match expected:
        case Chat():
            assert body["object"] == "chat.completion"
            assert body["choices"][0]["message"]["role"] == "assistant"
            assert body["choices"][0]["message"]["content"] == expected.text
            assert body["choices"][0]["finish_reason"] == "stop"
        case Completion():
            assert body["object"] == "text_completion"
            assert body["choices"][0]["text"] == expected.text
            assert body["choices"][0]["finish_reason"] == "length"
        case ChatChunk():
            assert set(body) == {"chunk", "stream_state"}
            assert state_token(body["stream_state"])
            chunk = body["chunk"]
            assert (chunk["object"], chunk["id"], chunk["model"]) == (
                "chat.completion.chunk", expected.id, "qwen3")
            assert len(chunk["choices"]) == 1
            assert chunk["choices"][0]["delta"]["role"] == "assistant"
            assert chunk["choices"][0]["delta"]["content"] == expected.text
            assert chunk["choices"][0]["finish_reason"] is None
        case CompletionChunk():
            assert set(body) == {"chunk", "stream_state"}
            assert state_token(body["stream_state"])
            chunk = body["chunk"]
            assert (chunk["object"], chunk["id"], chunk["model"]) == (
                "text_completion", expected.id, "qwen3")
            assert len(chunk["choices"]) == 1
            assert chunk["choices"][0]["text"] == expected.text
            assert chunk["choices"][0]["finish_reason"] is None
        case Error():
            assert set(body) == {"error"}
            error = body["error"]
            assert set(error) == {"message", "type", "param", "code"}
            assert (error["code"], error["type"], error["param"]) == (
                expected.status, expected.type, expected.param)
            if expected.exact:
                assert error["message"] == expected.message
            else:
                assert error["message"].startswith(expected.message)
        case Health():
            assert body == {"status": "ok"}
    if isinstance(expected, Chat | Completion):
        assert len(body["choices"]) == 1
        assert body["id"] == expected.id
        assert body["model"] == "qwen3"
        usage = body["usage"]
        assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (
            expected.prompt_tokens, expected.completion_tokens,
            expected.prompt_tokens + expected.completion_tokens)


def test_handlers_are_built_once_per_container(handlers: dict[str, Handler]) -> None:
    """Container reuse: the module-scope app answers successive invocations alike."""
    event = json.loads((EVENTS / "http-api-v2.chat.json").read_text(encoding="utf-8"))
    first = invoke(handlers["chat_completions"], event)[1]
    second = invoke(handlers["chat_completions"], event)[1]
    assert first["choices"] == second["choices"]


def _with_body(name: str, body: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    event["body"] = body
    return event


def test_bad_base64_body_is_a_400(handlers: dict[str, Handler]) -> None:
    event = _with_body("http-api-v2.chat.base64", "eyJtb2RlbCI")  # 11 characters: bad padding
    response, body = invoke(handlers["chat_completions"], event)
    assert response["statusCode"] == 400
    assert body["error"]["type"] == "Bad Request"
    assert body["error"]["code"] == 400
    assert "base64" in body["error"]["message"]


@pytest.mark.parametrize("mutate", [
    pytest.param(lambda e: {**e, "headers": None}, id="null-headers"),
    pytest.param(lambda e: {**e, "body": '{"model": "\ud800"}', "isBase64Encoded": False},
                 id="text-body-escaped-surrogate"),
    pytest.param(lambda e: {**e, "body": "{\"model\": \"\ud800\"}", "isBase64Encoded": False},
                 id="text-body-lone-surrogate"),
    pytest.param(lambda e: {"foo": "bar"}, id="not-an-http-event"),
])
def test_odd_events_get_an_envelope_not_a_crash(handlers: dict[str, Handler],
                                                mutate: Callable[[dict[str, Any]],
                                                                 dict[str, Any]]) -> None:
    event = mutate(json.loads((EVENTS / "http-api-v2.chat.json").read_text()))
    response, body = invoke(handlers["chat_completions"], event)
    assert 400 <= response["statusCode"] < 500
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["code"] == response["statusCode"]


def test_replay_command_prints_the_lambda_response() -> None:
    """``python -m derender.awslambda.replay`` runs the real handler; stdout is the response."""
    event = EVENTS / "function-url.completions.stream.json"
    result = subprocess.run(
        [sys.executable, "-m", "derender.awslambda.replay", "completions", str(event),
         "--request-id", "replay-req-1"],
        capture_output=True, text=True, timeout=120, check=True, cwd=ROOT,
        env={**os.environ, "DERENDER_MODELS_DIR": str(LAYER_MODELS)})
    response = json.loads(result.stdout)
    assert response["statusCode"] == 200
    assert response["isBase64Encoded"] is False
    body = json.loads(response["body"])
    assert body["chunk"]["object"] == "text_completion"
    assert body["chunk"]["id"] == "evt-url-cmpl-stream"
    assert body["chunk"]["choices"][0]["text"] == THROUGH
    assert state_token(body["stream_state"])
    # the handler's log line went to stderr, with the context's request id
    logs = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert [(log["aws_request_id"], log["status"]) for log in logs] == [("replay-req-1", 200)]


def test_replay_infers_the_function_and_decodes_the_body() -> None:
    event = EVENTS / "http-api-v2.chat.bad-stream-state.json"
    result = subprocess.run(
        [sys.executable, "-m", "derender.awslambda.replay", str(event), "--body"],
        capture_output=True, text=True, timeout=120, check=True, cwd=ROOT,
        env={**os.environ, "DERENDER_MODELS_DIR": str(LAYER_MODELS)})
    first, _, rest = result.stdout.partition("\n")
    assert json.loads(first)["statusCode"] == 400
    assert json.loads(rest)["error"]["message"] == NOT_A_TOKEN.message


@pytest.mark.parametrize(("init_type", "key_source", "imported"), [
    ("snap-start", "DERENDER_SIGNING_KEYS_SSM_PARAMETER", True),
    ("provisioned-concurrency", "DERENDER_SIGNING_KEYS_SECRET", True),
    ("on-demand", "DERENDER_SIGNING_KEYS_SSM_PARAMETER", False),  # a caller waits for init
    ("snap-start", None, False),  # no AWS key source: boto3 is never needed
])
def test_boto3_is_imported_during_init_only_when_nobody_waits(
        init_type: str, key_source: str | None, imported: bool) -> None:
    env = {**os.environ, "DERENDER_MODELS_DIR": str(LAYER_MODELS),
           "AWS_LAMBDA_FUNCTION_NAME": "derender", "AWS_LAMBDA_INITIALIZATION_TYPE": init_type}
    for name in ("DERENDER_SIGNING_KEYS", "DERENDER_SIGNING_KEYS_SSM_PARAMETER",
                 "DERENDER_SIGNING_KEYS_SECRET"):
        env.pop(name, None)
    if key_source:
        env[key_source] = "/derender/signing-keys"
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from derender.awslambda.adapter import LambdaHandler; "
         "LambdaHandler(); print('boto3' in sys.modules)"],
        capture_output=True, text=True, timeout=120, check=True, cwd=ROOT, env=env)
    assert done.stdout.strip() == str(imported)
