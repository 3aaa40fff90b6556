"""The HTTP surface: routes, the error envelope and its status codes (docs/vllm-compat/api.md
§2; README, Compatibility with vLLM 0.33).

Expected messages and params are vLLM's (api.md, or the recorded vLLM corpus README); the
fuzz tests assert that no input, however malformed, yields a 500, and every refusal is the
envelope with ``code`` equal to the HTTP status.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derender.app.main import create_app
from derender.settings import Settings
from derender_testing.models import LAYER_MODELS

CHAT = "/v1/chat/completions/derender"
COMPLETIONS = "/v1/completions/derender"
ROUTES = (CHAT, COMPLETIONS)
JSON_HEADERS = {"content-type": "application/json"}
MEDIA_TYPE_MESSAGE = ("1 validation error:\n  Unsupported Media Type: Only 'application/json' "
                      "is allowed")

HELLO_WORLD = (9707, 1879, 0)  # "Hello world!" (Qwen3)
IM_END = 151645
QWEN3_VOCAB = 151669  # tokenizer size incl. added tokens (api.md §5.1)


def chat_body(**extra: Any) -> dict[str, Any]:
    return {"generate_response": {"request_id": "req-1", "choices": [
        {"index": 0, "token_ids": [*HELLO_WORLD, IM_END]}]}, **extra}


def completion_body(**extra: Any) -> dict[str, Any]:
    return {"generate_responses": [{"request_id": "req-c", "choices": [
        {"index": 0, "token_ids": [*HELLO_WORLD, IM_END]}]}], **extra}


def valid_body(route: str) -> dict[str, Any]:
    return chat_body() if route == CHAT else completion_body()


def post(client: TestClient, route: str, body: Any,
         headers: dict[str, str] | None = None) -> Any:
    """Post JSON text the way a client would (lone surrogates as \\u escapes)."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode("ascii")
    return client.post(route, content=raw, headers=JSON_HEADERS if headers is None else headers)


def assert_envelope(response: Any, status: int, error_type: str | None = None,
                    param: Any = ..., message: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == status
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["type"], str)
    assert error["param"] is None or isinstance(error["param"], str)
    if error_type is not None:
        assert error["type"] == error_type
    if param is not ...:
        assert error["param"] == param
    if message is not None:
        assert error["message"] == message
    assert "Traceback" not in error["message"]
    return error


# --------------------------------------------------------------------------- routes


def test_health(default_client: TestClient) -> None:
    response = default_client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_models_list(default_client: TestClient) -> None:
    response = default_client.get("/v1/models")
    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == ["qwen3"]
    model = body["data"][0]
    assert model["object"] == "model"
    assert isinstance(model["created"], int)
    assert isinstance(model["owned_by"], str)
    assert model["max_model_len"] == 40960  # fixtures README table


def test_wrong_method_and_unknown_path(default_client: TestClient) -> None:
    """§2.1: the framework's plain bodies."""
    for route in ROUTES:
        response = default_client.get(route)
        assert response.status_code == 405
        assert response.json() == {"detail": "Method Not Allowed"}
    response = post(default_client, "/v1/nothing/derender", chat_body())
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


def test_spec_row1_chat(default_client: TestClient) -> None:
    """§8 row 1: `Hello world!` + EOS → content `Hello world!`, usage 0/4/4."""
    response = post(default_client, CHAT, chat_body())
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == "req-1"
    assert body["model"] == "qwen3"
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["content"] == "Hello world!"
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["choices"][0]["stop_reason"] is None
    usage = body["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) \
        == (0, 4, 4)


def test_completion_minimal(default_client: TestClient) -> None:
    response = post(default_client, COMPLETIONS, completion_body())
    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "text_completion"
    assert body["id"] == "req-c"
    assert body["choices"][0]["text"] == "Hello world!"
    assert body["usage"]["completion_tokens"] == 4


# --------------------------------------------------------------------------- content type


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("content_type", [
    "text/plain", "application/x-www-form-urlencoded", "application/jsonx",
    "multipart/form-data; boundary=x", "application/json-patch+json", "",
])
def test_wrong_content_type(default_client: TestClient, route: str, content_type: str) -> None:
    """§2.2: 400 `Bad Request`, param null, the exact message."""
    raw = json.dumps(valid_body(route)).encode()
    response = default_client.post(route, content=raw, headers={"content-type": content_type})
    assert_envelope(response, 400, "Bad Request", None, MEDIA_TYPE_MESSAGE)


@pytest.mark.parametrize("route", ROUTES)
def test_missing_content_type(default_client: TestClient, route: str) -> None:
    raw = json.dumps(valid_body(route)).encode()
    response = default_client.post(route, content=raw)
    assert "content-type" not in response.request.headers
    assert_envelope(response, 400, "Bad Request", None, MEDIA_TYPE_MESSAGE)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("content_type", [
    "application/json", "Application/JSON; charset=utf-8", "APPLICATION/JSON",
    "application/json;charset=UTF-8",
])
def test_json_content_type_variants_accepted(default_client: TestClient, route: str,
                                             content_type: str) -> None:
    response = post(default_client, route, valid_body(route), {"content-type": content_type})
    assert response.status_code == 200, response.text


# --------------------------------------------------------------------------- body syntax


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("raw", [b"{", b"{\"a\": }", b"not json", b"{\"a\": 1,}", b"[1, 2",
                                 b"\xff\xfe{}", b"{\"a\": \"\xff\"}"])
def test_invalid_json(default_client: TestClient, route: str, raw: bytes) -> None:
    """§2.5: one `json_invalid` error located at `body.<offset>`."""
    error = assert_envelope(post(default_client, route, raw), 400, "Bad Request")
    assert error["param"].startswith("body")
    assert error["message"].startswith("1 validation error:")
    assert "json_invalid" in error["message"]


@pytest.mark.parametrize("route", ROUTES)
def test_null_body(default_client: TestClient, route: str) -> None:
    """Recorded (case 115): body `null` → 400, param `body`."""
    error = assert_envelope(post(default_client, route, b"null"), 400, "Bad Request", "body")
    assert error["message"].startswith("1 validation error:")


@pytest.mark.parametrize("route", ROUTES)
def test_empty_body(default_client: TestClient, route: str) -> None:
    error = assert_envelope(post(default_client, route, b""), 400, "Bad Request")
    assert error["param"].startswith("body")


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_literal_refused(default_client: TestClient, route: str, literal: str) -> None:
    """Non-standard JSON constants are refused (vLLM accepts them and fails later, §9.14)."""
    body = valid_body(route)
    text = json.dumps(body).replace('"token_ids"', f'"prompt_tokens": {literal}, "token_ids"')
    error = assert_envelope(post(default_client, route, text.encode()), 400, "Bad Request")
    assert error["param"].startswith("body")


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("value", [[], [1, 2], "text", 17, 1.5, True, False])
def test_non_object_json(default_client: TestClient, route: str, value: Any) -> None:
    error = assert_envelope(post(default_client, route, value), 400, "Bad Request")
    assert error["param"].startswith("body")
    assert error["message"].startswith(("1 validation error:", "2 validation errors:"))


# --------------------------------------------------------------------------- dispatch on stream


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("stream", [None, [], {}, [True], "yes"])
def test_stream_not_a_boolean(default_client: TestClient, route: str, stream: Any) -> None:
    """§2.3: 400 listing the errors of both union members. The completions non-streaming
    member carries a model validator, so its locations lose the model name, as recorded from
    vLLM (corpus case 106: param `body.stream`)."""
    body = valid_body(route)
    body["stream"] = stream
    error = assert_envelope(post(default_client, route, body), 400, "Bad Request")
    if route == CHAT:
        markers = ("'loc': 'body.DerenderChatRequest.stream'",
                   "'loc': 'body.DerenderChatStreamRequest.stream'")
        param = "body.DerenderChatRequest.stream"
    else:
        markers = ("'loc': 'body.stream'", "'loc': 'body.DerenderCompletionStreamRequest.stream'")
        param = "body.stream"
    first, *entries = error["message"].split("\n")
    assert first.endswith("validation errors:")
    assert int(first.split()[0]) >= 2
    for marker in markers:
        assert any(marker in entry for entry in entries), error["message"]
    assert error["param"] == param


@pytest.mark.parametrize("route", ROUTES)
def test_stream_true_alone(default_client: TestClient, route: str) -> None:
    error = assert_envelope(post(default_client, route, {"stream": True}), 400, "Bad Request")
    assert error["param"].startswith("body.")


@pytest.mark.parametrize("route", ROUTES)
def test_stream_false_and_unknown_keys_accepted(default_client: TestClient, route: str) -> None:
    body = valid_body(route)
    body.update({"stream": False, "something_else": {"x": [1]}})
    assert post(default_client, route, body).status_code == 200


# --------------------------------------------------------------------------- model selection


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", ["gpt-4o", "Qwen3", "qwen3 ", "x" * 300])
def test_unknown_model(default_client: TestClient, route: str, name: str) -> None:
    body = valid_body(route)
    body["model"] = name
    assert_envelope(post(default_client, route, body), 404, "NotFoundError", "model",
                    f"The model `{name}` does not exist. Valid aliases: qwen3.")


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(("name", "echoed"), [(None, "qwen3"), ("", "qwen3"),
                                              ("qwen3", "qwen3")])
def test_known_or_empty_model(default_client: TestClient, route: str, name: str | None,
                              echoed: str) -> None:
    body = valid_body(route)
    body["model"] = name
    response = post(default_client, route, body)
    assert response.status_code == 200
    assert response.json()["model"] == echoed


def test_unknown_model_via_client_for(client_for: Any) -> None:
    client = client_for("qwen3")
    body = chat_body(model="gpt2")
    assert_envelope(post(client, CHAT, body), 404, "NotFoundError", "model",
                    "The model `gpt2` does not exist. Valid aliases: qwen3.")


def test_model_checked_after_schema_before_handler(default_client: TestClient) -> None:
    """§2.6: schema → model → handler checks."""
    body = chat_body(model="nope")
    body["generate_response"]["choices"][0]["token_ids"] = []
    assert_envelope(post(default_client, CHAT, body), 404, "NotFoundError")
    body["generate_response"]["choices"][0]["token_ids"] = [-1]
    assert_envelope(post(default_client, CHAT, body), 400, "Bad Request")


# --------------------------------------------------------------------------- handler errors


@pytest.mark.parametrize("ids", [[], None])
def test_chat_empty_token_ids(default_client: TestClient, ids: list[int] | None) -> None:
    body = chat_body()
    body["generate_response"]["choices"][0]["token_ids"] = ids
    assert_envelope(post(default_client, CHAT, body), 400, "BadRequestError", None,
                    "choice 0 has empty or null token_ids")


def test_chat_empty_token_ids_names_choice_index(default_client: TestClient) -> None:
    body = chat_body()
    body["generate_response"]["choices"] = [
        {"index": 0, "token_ids": [9707]}, {"index": 5, "token_ids": []}]
    assert_envelope(post(default_client, CHAT, body), 400, "BadRequestError", None,
                    "choice 5 has empty or null token_ids")


def test_completion_empty_token_ids(default_client: TestClient) -> None:
    """§2.7 wording for completions."""
    body = completion_body()
    body["generate_responses"].append({"request_id": "second", "choices": [
        {"index": 2, "token_ids": []}]})
    assert_envelope(post(default_client, COMPLETIONS, body), 400, "BadRequestError", None,
                    "choice 2 in response second has empty or null token_ids")


def test_completion_empty_generate_responses(default_client: TestClient) -> None:
    assert_envelope(post(default_client, COMPLETIONS, {"generate_responses": []}), 400,
                    "BadRequestError", None, "generate_responses must not be empty")


def test_max_model_len(default_client: TestClient) -> None:
    body = chat_body()
    body["generate_response"]["choices"][0]["token_ids"] = [9707] * 40961
    assert_envelope(post(default_client, CHAT, body), 400, "BadRequestError", None,
                    "token_ids length (40961) in choice 0 exceeds max_model_len (40960).")


def test_too_many_candidates(default_client: TestClient) -> None:
    body = chat_body()
    body["generate_response"]["choices"][0]["logprobs"] = {"content": [
        {"token_id": 9707, "logprob": -1.0,
         "top_logprobs": [{"token_id": i, "logprob": -1.0} for i in range(21)]}]}
    assert_envelope(post(default_client, CHAT, body), 400, "BadRequestError", None,
                    "top_logprobs count (21) in choice 0 exceeds max_logprobs (20).")


@pytest.mark.parametrize("bad", [QWEN3_VOCAB, QWEN3_VOCAB + 5, 151936, 10**9, 2**70])
def test_token_id_out_of_vocabulary(default_client: TestClient, bad: int) -> None:
    """README, Compatibility: an id ≥ the tokenizer size is a 400 naming the id."""
    body = chat_body()
    body["generate_response"]["choices"][0]["token_ids"] = [9707, bad, 1879]
    error = assert_envelope(post(default_client, CHAT, body), 400, "BadRequestError")
    assert str(bad) in error["message"]


@pytest.mark.parametrize("where", ["logprob", "candidate", "prompt", "response_prompt"])
def test_token_id_out_of_vocabulary_elsewhere(default_client: TestClient, where: str) -> None:
    bad = QWEN3_VOCAB + 1
    body = chat_body()
    choice = body["generate_response"]["choices"][0]
    if where == "logprob":
        choice["logprobs"] = {"content": [{"token_id": bad, "logprob": -1.0}]}
    elif where == "candidate":
        choice["logprobs"] = {"content": [{"token_id": 9707, "logprob": -1.0,
                                           "top_logprobs": [{"token_id": bad, "logprob": -2}]}]}
    elif where == "prompt":
        body["prompt_token_ids"] = [9707, bad]
    else:
        body["generate_response"]["prompt_token_ids"] = [bad]
    error = assert_envelope(post(default_client, CHAT, body), 400, "BadRequestError")
    assert str(bad) in error["message"]


def test_completion_token_id_out_of_vocabulary(default_client: TestClient) -> None:
    bad = QWEN3_VOCAB
    body = completion_body()
    body["generate_responses"][0]["choices"][0]["token_ids"] = [bad]
    error = assert_envelope(post(default_client, COMPLETIONS, body), 400, "BadRequestError")
    assert str(bad) in error["message"]


def test_last_vocabulary_id_accepted(default_client: TestClient) -> None:
    body = chat_body()
    body["generate_response"]["choices"][0]["token_ids"] = [9707, QWEN3_VOCAB - 1]
    response = post(default_client, CHAT, body)
    assert response.status_code == 200
    assert response.json()["usage"]["completion_tokens"] == 2


def test_negative_token_id_spec_example(default_client: TestClient) -> None:
    """§2.5: 3 validation errors, param at the non-streaming member's token_ids."""
    body = chat_body()
    body["generate_response"]["choices"][0]["token_ids"] = [9707, -1]
    error = assert_envelope(post(default_client, CHAT, body), 400, "Bad Request",
                            "body.DerenderChatRequest.generate_response.choices.0.token_ids")
    assert error["message"].split("\n")[0] == "3 validation errors:"
    assert "token_ids must not contain negative values" in error["message"]


@pytest.mark.parametrize("where", ["completion", "prompt", "logprob"])
def test_negative_ids_elsewhere(default_client: TestClient, where: str) -> None:
    if where == "completion":
        route, body = COMPLETIONS, completion_body()
        body["generate_responses"][0]["choices"][0]["token_ids"] = [-5]
    elif where == "prompt":
        route, body = CHAT, chat_body(prompt_token_ids=[1, -2])
    else:
        route, body = CHAT, chat_body()
        body["generate_response"]["choices"][0]["logprobs"] = {
            "content": [{"token_id": -3, "logprob": -1.0}]}
    error = assert_envelope(post(default_client, route, body), 400)
    assert error["type"] in ("Bad Request", "BadRequestError")


def test_prompt_tokens_length_mismatch(default_client: TestClient) -> None:
    """Recorded (case 104): the model-level validator's error has loc and param `body`."""
    body = completion_body(prompt_tokens=[1, 2])
    error = assert_envelope(post(default_client, COMPLETIONS, body), 400, "Bad Request", "body")
    assert "prompt_tokens length (2) must equal generate_responses length (1)" \
        in error["message"]


# --------------------------------------------------------------------------- size limit


@pytest.fixture(scope="module")
def small_client() -> TestClient:
    return TestClient(create_app(Settings(models_dir=LAYER_MODELS, max_body_bytes=1000)))


@pytest.mark.parametrize("route", ROUTES)
def test_body_over_size_limit(small_client: TestClient, route: str) -> None:
    body = valid_body(route)
    body["padding"] = "x" * 1200
    error = assert_envelope(post(small_client, route, body), 413, param=None)
    assert "1000" in error["message"]
    # just under the limit is served
    assert post(small_client, route, valid_body(route)).status_code == 200


def test_invalid_json_over_size_limit_is_413(small_client: TestClient) -> None:
    assert_envelope(post(small_client, CHAT, b"{" * 5000), 413)


# --------------------------------------------------------------------------- lone surrogates


def test_lone_surrogate_stop_reason_echoed(default_client: TestClient) -> None:
    body = chat_body()
    body["generate_response"]["choices"][0]["stop_reason"] = "\ud800"
    response = post(default_client, CHAT, body)
    assert response.status_code == 200
    assert json.loads(response.content)["choices"][0]["stop_reason"] == "\ud800"


@pytest.mark.parametrize("route", ROUTES)
def test_lone_surrogate_stop_string(default_client: TestClient, route: str) -> None:
    body = valid_body(route)
    if route == CHAT:
        body["chat_request"] = {"messages": [], "stop": ["\udfff", "wor\ud83dld"]}
    else:
        body["completion_request"] = {"prompt": "p", "stop": ["\udfff"]}
    response = post(default_client, route, body)
    assert response.status_code == 200
    data = json.loads(response.content)
    assert data["choices"][0]["stop_reason"] is None


def test_lone_surrogate_in_model_name_and_request_id(default_client: TestClient) -> None:
    error = assert_envelope(post(default_client, CHAT, chat_body(model="m\udc80")), 404,
                            "NotFoundError", "model")
    assert error["message"] == "The model `m\udc80` does not exist. Valid aliases: qwen3."
    body = chat_body()
    body["generate_response"]["request_id"] = "id-\ud800"
    response = post(default_client, CHAT, body)
    assert response.status_code == 200
    assert json.loads(response.content)["id"] == "id-\ud800"


# --------------------------------------------------------------------------- deep nesting


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("raw", [
    "[" * 5000 + "]" * 5000,
    '{"a":' * 3000 + "1" + "}" * 3000,
    '{"generate_response": {"choices": [{"index": 0, "token_ids": [9707]}]}, '
    '"chat_request": {"messages": ' + "[" * 3000 + "]" * 3000 + "}}",
    '{"generate_responses": [{"choices": [{"index": 0, "token_ids": [9707]}], '
    '"kv_transfer_params": {"k": ' + "[" * 3000 + "]" * 3000 + "}}]}",
], ids=["array", "object", "chat_messages", "kv_params"])
def test_deeply_nested_json_is_a_client_error(default_client: TestClient, route: str,
                                              raw: str) -> None:
    """No input, however malformed, may produce a 500. A few kilobytes of nested
    brackets (far below the body limit) are a malformed body, not a server fault."""
    assert_envelope(post(default_client, route, raw.encode()), 400)


# --------------------------------------------------------------------------- fuzzing


def check_never_500(response: Any) -> None:
    assert response.status_code != 500, response.text
    assert response.status_code in (200, 400, 404, 413), response.text
    if response.status_code != 200:
        assert_envelope(response, response.status_code)
    else:
        data = json.loads(response.content)
        assert isinstance(data, dict)


TEXT = st.text(st.one_of(st.characters(), st.sampled_from(["\ud800", "\udfff", "\x00"])),
               max_size=12)
SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.integers(-3, 200_000), st.integers(-(2**80), 2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
    st.sampled_from(["stop", "length", "qwen3", "", "tokens", "text"]),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(TEXT, children, max_size=4)),
    max_leaves=12,
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += paths(child, (*prefix, index))
    return found


def rich_body(route: str) -> dict[str, Any]:
    """A valid body that touches most fields, for mutation."""
    logprobs = {"content": [
        {"token_id": i, "logprob": -0.5, "rank": 1,
         "top_logprobs": [{"token_id": i, "logprob": -0.5}, {"token_id": 33, "logprob": -2.0}]}
        for i in [*HELLO_WORLD, IM_END]]}
    choice = {"index": 0, "token_ids": [*HELLO_WORLD, IM_END], "finish_reason": "stop",
              "stop_reason": None, "logprobs": logprobs}
    response = {"request_id": "r", "choices": [choice], "prompt_token_ids": [9707, 151644],
                "kv_transfer_params": {"a": 1}, "metrics": {"queue_time_ms": 1.0}}
    if route == CHAT:
        return {"model": "qwen3", "generate_response": response, "prompt_tokens": 3,
                "prompt_token_ids": [9707], "chat_request": {
                    "messages": [{"role": "user", "content": "hi"}], "logprobs": True,
                    "top_logprobs": 1, "stop": ["world"], "stop_token_ids": [0],
                    "min_tokens": 1, "skip_special_tokens": False, "return_token_ids": True}}
    return {"model": "qwen3", "generate_responses": [response, copy.deepcopy(response)],
            "prompt_tokens": [2, 3], "prompt_token_ids": [[9707], None],
            "completion_request": {"prompt": "hi", "logprobs": 1, "stop": "world",
                                   "include_stop_str_in_output": True, "echo": True}}


def stream_body(route: str) -> dict[str, Any]:
    chunk = {"request_id": "s", "choices": [{"index": 0, "token_ids": list(HELLO_WORLD)}],
             "prompt_token_ids": [9707]}
    return {"stream": True, "generate_chunk": chunk, "prompt_tokens": 1,
            ("chat_request" if route == CHAT else "completion_request"):
                {"messages": []} if route == CHAT else {"prompt": "x"}}


def test_rich_bodies_are_valid(default_client: TestClient) -> None:
    for route in ROUTES:
        response = post(default_client, route, rich_body(route))
        assert response.status_code == 200, response.text


FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


@FUZZ
@given(route=st.sampled_from(ROUTES), value=JSON_VALUES)
def test_fuzz_random_json(default_client: TestClient, route: str, value: Any) -> None:
    check_never_500(post(default_client, route, value))


@FUZZ
@given(route=st.sampled_from(ROUTES), raw=st.binary(max_size=64))
def test_fuzz_random_bytes(default_client: TestClient, route: str, raw: bytes) -> None:
    check_never_500(post(default_client, route, raw))


@FUZZ
@given(data=st.data())
def test_fuzz_mutated_bodies(default_client: TestClient, data: st.DataObject) -> None:
    route = data.draw(st.sampled_from(ROUTES), label="route")
    maker = data.draw(st.sampled_from([rich_body, stream_body]), label="base")
    body: Any = copy.deepcopy(maker(route))
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        targets = paths(body)
        path = data.draw(st.sampled_from(targets), label="path")
        action = data.draw(st.sampled_from(["replace", "delete", "add"]), label="action")
        new = data.draw(JSON_VALUES, label="value")
        if not path:
            body = new
            break
        parent = body
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        if action == "delete":
            del parent[last]
        elif action == "add" and isinstance(parent[last], dict):
            parent[last][data.draw(TEXT, label="key")] = new
        elif action == "add" and isinstance(parent[last], list):
            parent[last].append(new)
        else:
            parent[last] = new
    check_never_500(post(default_client, route, body))


@pytest.mark.parametrize("index", [-1, -3, 2**31, 2**80])
def test_stream_choice_index_out_of_range_is_refused(default_client: TestClient,
                                                      index: int) -> None:
    """A negative or huge choice index once sent the state encoder into an endless loop."""
    for route in ROUTES:
        body = {"stream": True, "generate_chunk": {
            "request_id": "s", "choices": [{"index": index, "token_ids": list(HELLO_WORLD)}]}}
        response = post(default_client, route, body)
        assert_envelope(response, 400)
        assert f"choice index {index} is out of range" in response.json()["error"]["message"]
