"""The OpenAPI document: served, valid OpenAPI 3.1, and faithful.

Faithful is checked independently of schemathesis: every recorded vLLM case is replayed
through the app (plus the batched form of every recorded stream, and each kind of refusal)
and each answer is validated with ``jsonschema`` against the schema the document declares
for its route and status. The response models forbid unknown keys, so a key the code adds
without documenting it fails here.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi

from derender.app.main import create_app
from derender.contract import requests as protocol
from derender.settings import Settings
from derender_testing.models import LAYER_MODELS, ROOT
from derender_testing.recorded import (
    case_name,
    case_paths,
    load_case,
    pending_reason,
    summaries,
)
from tests.test_conformance import parsers_of, replayed_call, send_call

CHAT = "/v1/chat/completions/derender"
COMPLETIONS = "/v1/completions/derender"
JSON_HEADERS = {"content-type": "application/json"}
STATUSES = {"200", "400", "404", "413", "499", "500", "503"}
ALL_CASES = case_paths()


def _structures(paths: list[Path]) -> list[Path]:
    """Recorded cases that hold every answer structure the recordings hold: each answer's
    route, method and case kind, its status and its shape (keys and leaf types, recursively:
    ``answer_shape``), taken from the first case (in corpus order) that answers with it. The
    document is checked against each structure, not against each of the thousands of cases
    that repeat one (``test_conformance.py`` replays them all). Read from the corpus'
    ``summaries`` (parsed once per content, not by every test worker at collection)."""
    covered: set[Any] = set()
    chosen: list[Path] = []
    for path in sorted(paths, key=case_name):
        answers = {(*KIND_OF[path], status, shape) for status, shape in SUMMARY[path].answers}
        if not answers <= covered:
            covered |= answers
            chosen.append(path)
    return chosen


SUMMARY = summaries()
KIND_OF: dict[Path, tuple[str, str, str]] = {
    path: (summary.endpoint, summary.method, summary.kind) for path, summary in SUMMARY.items()}
"""Each recorded case's route, method and kind."""
CASES = _structures(ALL_CASES)

BODIES = {
    CHAT: ("ChatDerenderBody", ["DerenderChatRequest", "DerenderChatStreamRequest",
                                "DerenderChatStreamBatchRequest"]),
    COMPLETIONS: ("CompletionDerenderBody", ["DerenderCompletionRequest",
                                             "DerenderCompletionStreamRequest",
                                             "DerenderCompletionStreamBatchRequest"]),
}
ANSWERS = {
    CHAT: ("ChatDerenderResponse", ["ChatCompletion", "ChatStreamResponse",
                                    "ChatStreamBatchResponse"]),
    COMPLETIONS: ("CompletionDerenderResponse", ["TextCompletion", "CompletionStreamResponse",
                                                 "CompletionStreamBatchResponse"]),
}


@pytest.fixture(scope="module")
def document(default_client: TestClient) -> dict[str, Any]:
    response = default_client.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    doc: dict[str, Any] = response.json()
    return doc


def _ref(name: str) -> str:
    return f"#/components/schemas/{name}"


def _validator(document: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    """A validator of ``schema`` whose ``#/components/...`` references resolve in the document."""
    return Draft202012Validator({**schema, "components": document["components"]})


def _response_schema(document: dict[str, Any], route: str, status: int) -> dict[str, Any]:
    responses = document["paths"][route]["post"]["responses"]
    assert str(status) in responses, f"{route} answered {status}, which is not documented"
    media = responses[str(status)]["content"]["application/json"]
    schema: dict[str, Any] = media["schema"]
    return schema


def assert_documented(document: dict[str, Any], route: str, response: Any) -> None:
    """The answer is JSON and valid against the schema declared for its route and status."""
    assert response.headers["content-type"].startswith("application/json")
    schema = _response_schema(document, route, response.status_code)
    errors = sorted(_validator(document, schema).iter_errors(response.json()), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


def _post(client: TestClient, route: str, body: Any) -> Any:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post(route, content=raw, headers=JSON_HEADERS)


# --------------------------------------------------------------------------- the document


def test_document_is_valid_openapi_3_1(document: dict[str, Any]) -> None:
    assert document["openapi"] == "3.1.0"
    assert document["info"]["title"] == "derender"
    validate_openapi(document)


def test_docs_pages_stay_off(default_client: TestClient) -> None:
    for path in ("/docs", "/redoc"):
        assert default_client.get(path).status_code == 404


def test_both_routes_with_their_unions(document: dict[str, Any]) -> None:
    paths = document["paths"]
    assert set(paths) == {CHAT, COMPLETIONS, "/health", "/v1/models", "/version"}
    schemas = document["components"]["schemas"]
    for route in (CHAT, COMPLETIONS):
        operation = paths[route]["post"]
        body = operation["requestBody"]
        assert body["required"] is True
        name, members = BODIES[route]
        assert body["content"]["application/json"]["schema"] == {"$ref": _ref(name)}
        assert schemas[name]["anyOf"] == [{"$ref": _ref(m)} for m in members]
        assert set(operation["responses"]) == STATUSES
        name, members = ANSWERS[route]
        assert operation["responses"]["200"]["content"]["application/json"]["schema"] \
            == {"$ref": _ref(name)}
        assert schemas[name]["anyOf"] == [{"$ref": _ref(m)} for m in members]
        for status in STATUSES - {"200"}:
            schema = operation["responses"][status]["content"]["application/json"]["schema"]
            assert schema["allOf"][0] == {"$ref": _ref("ErrorResponse")}
    for path in ("/health", "/v1/models"):
        assert set(paths[path]) == {"get"}


def test_request_components_are_the_protocol_models(document: dict[str, Any]) -> None:
    """Every request model a body reaches is a component with exactly its fields."""
    schemas = document["components"]["schemas"]
    models = {name: cls for name, cls in vars(protocol).items()
              if isinstance(cls, type) and issubclass(cls, protocol.BaseModel)
              and cls.__module__ == protocol.__name__ and name in schemas}
    assert len(models) >= 19
    for name, cls in models.items():
        schema = schemas[name]
        assert set(schema["properties"]) == set(cls.model_fields), name
        required = {f for f, info in cls.model_fields.items() if info.is_required()}
        assert required <= set(schema.get("required", [])), name
    # stated beyond the types: what the handlers refuse
    assert "token_ids" in schemas["GenerateChoice"]["required"]
    assert schemas["GenerateChoice"]["properties"]["token_ids"]["minItems"] == 1
    assert schemas["DerenderChatRequest"]["not"] == {"required": ["generate_chunks"]}
    assert "not" not in schemas["DerenderChatStreamBatchRequest"]


def test_every_component_and_field_is_described(document: dict[str, Any]) -> None:
    undocumented = [
        f"{name}.{field}"
        for name, schema in document["components"]["schemas"].items()
        for field, prop in schema.get("properties", {}).items()
        if not prop.get("description")
    ] + [name for name, schema in document["components"]["schemas"].items()
         if not schema.get("description")]
    assert undocumented == []


def test_served_names_are_the_model_examples(document: dict[str, Any]) -> None:
    model = document["components"]["schemas"]["DerenderChatRequest"]["properties"]["model"]
    assert model["examples"] == ["qwen3"]


def test_document_is_built_on_first_request_only() -> None:
    """Cold start: creating the app neither imports the builder nor builds the document."""
    script = (
        "import sys\n"
        "from fastapi.testclient import TestClient\n"
        "from derender.app.main import create_app\n"
        "from pathlib import Path\n"
        "from derender.settings import Settings\n"
        f"app = create_app(Settings(models_dir=Path({str(LAYER_MODELS)!r})))\n"
        "assert 'derender.app.openapi' not in sys.modules\n"
        "assert app.openapi_schema is None\n"
        "client = TestClient(app)\n"
        "first = client.get('/openapi.json').json()\n"
        "kept = app.openapi_schema\n"
        "assert kept is not None and client.get('/openapi.json').json() == first\n"
        "assert app.openapi_schema is kept\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------- real answers


@pytest.mark.parametrize("route", [CHAT, COMPLETIONS])
def test_request_examples_are_valid_and_answered(document: dict[str, Any],
                                                 default_client: TestClient,
                                                 route: str) -> None:
    media = document["paths"][route]["post"]["requestBody"]["content"]["application/json"]
    body_schema = _validator(document, media["schema"])
    assert set(media["examples"]) == {"non-streaming", "streaming", "streaming, batched"}
    for name, example in media["examples"].items():
        body_schema.validate(example["value"])
        response = _post(default_client, route, example["value"])
        assert response.status_code == 200, (name, response.text)
        assert_documented(document, route, response)


def _replay(case: dict[str, Any], client: TestClient) -> list[Any]:
    """Every call of a recorded case, streams carrying our state from call to call."""
    states: dict[int, str] = {}
    answers = []
    for i in range(len(case["calls"])):
        call, streaming = replayed_call(case, i, states)
        response = send_call(client, case["endpoint"], call)
        if streaming and response.status_code == 200:
            states[call.get("chain", 0)] = response.json()["stream_state"]
        answers.append(response)
    return answers


@pytest.mark.parametrize("path", CASES, ids=[case_name(p) for p in CASES])
def test_recorded_answers_match_the_document(path: Path, client_for: Any,
                                             document: dict[str, Any]) -> None:
    case = load_case(path)
    if (reason := pending_reason(case)) is not None:
        pytest.skip(reason)
    method = case["calls"][0].get("method", "POST").lower()
    if method not in document["paths"].get(case["endpoint"], {}):
        pytest.skip("an unknown route or method (issue 21): FastAPI's 404/405 {detail}, as "
                    "vLLM answers; outside the document")
    for response in _replay(case, client_for(case["model"], *parsers_of(case))):
        assert_documented(document, case["endpoint"], response)


STREAM_CASES = [p for p in CASES  # single streams answered 200 throughout (one per structure)
                if SUMMARY[p].single_stream_ok and "-error-" not in case_name(p)
                and pending_reason(SUMMARY[p]._asdict()) is None]


@pytest.mark.parametrize("path", STREAM_CASES, ids=[case_name(p) for p in STREAM_CASES])
def test_batched_streams_match_the_document(path: Path, client_for: Any,
                                            document: dict[str, Any]) -> None:
    """Each recorded stream sent as one ``generate_chunks`` call (our batch form)."""
    case = load_case(path)
    requests = case["chunks"]
    batch = {k: v for k, v in requests[0].items()
             if k not in ("generate_chunk", "stream_state", "chain")}
    batch["generate_chunks"] = [r["generate_chunk"] for r in requests]
    response = _post(client_for(case["model"], *parsers_of(case)), case["endpoint"], batch)
    assert response.status_code == 200, response.text
    assert len(response.json()["chunks"]) == len(requests)
    assert_documented(document, case["endpoint"], response)


def test_every_route_and_kind_recorded_is_checked() -> None:
    """The structures kept cover every route, method and kind the recordings hold."""
    assert {KIND_OF[p] for p in CASES} == set(KIND_OF.values())
    assert set(KIND_OF) == set(ALL_CASES)
    assert len(CASES) < len(ALL_CASES)


def test_refusals_match_the_document(document: dict[str, Any],
                                     default_client: TestClient) -> None:
    chat = {"generate_response": {"request_id": "r", "choices": [
        {"index": 0, "token_ids": [9707, 1879, 0]}]}}
    stream = {"stream": True, "generate_chunk": {"request_id": "s", "choices": [
        {"index": 0, "token_ids": [9707]}]}}
    refusals = [
        (400, default_client.post(CHAT, content=b"{}", headers={"content-type": "text/plain"})),
        (400, _post(default_client, CHAT, b"{")),
        (400, _post(default_client, CHAT, {"stream": "yes"})),
        (400, _post(default_client, CHAT, {**stream, "stream_state": "forged"})),
        (400, _post(default_client, COMPLETIONS, {"generate_responses": []})),
        (404, _post(default_client, CHAT, {**chat, "model": "nope"})),
        (404, _post(default_client, COMPLETIONS, {**stream, "model": "nope"})),
    ]
    small = TestClient(create_app(Settings(models_dir=LAYER_MODELS, max_body_bytes=100)))
    refusals.append((413, _post(small, CHAT, {**chat, "padding": "x" * 200})))
    keyless = TestClient(create_app(Settings(models_dir=LAYER_MODELS, on_lambda=True)))
    refusals.append((503, _post(keyless, CHAT, stream)))
    refusals.append((503, _post(keyless, COMPLETIONS, stream)))
    for status, response in refusals:
        assert response.status_code == status, response.text
        route = CHAT if response.request.url.path == CHAT else COMPLETIONS
        assert_documented(document, route, response)


def test_the_schemas_refuse_what_the_code_never_returns(document: dict[str, Any],
                                                       default_client: TestClient) -> None:
    """The check above has teeth: an extra key, a missing key, a wrong code all fail."""
    answer = _post(default_client, CHAT, {"generate_response": {"request_id": "r", "choices": [
        {"index": 0, "token_ids": [9707]}]}}).json()
    ok = _validator(document, _response_schema(document, CHAT, 200))
    ok.validate(answer)
    extra = copy.deepcopy(answer)
    extra["choices"][0]["message"]["surprise"] = 1
    missing = copy.deepcopy(answer)
    del missing["usage"]["prompt_tokens_details"]
    for wrong in (extra, missing, {**answer, "object": "chat.completion.chunk"}):
        assert not ok.is_valid(wrong)
    not_found = _validator(document, _response_schema(document, CHAT, 404))
    error = {"error": {"message": "m", "type": "NotFoundError", "param": "model", "code": 404}}
    assert not_found.is_valid(error)
    assert not not_found.is_valid({"error": {**error["error"], "code": 400}})


# --------------------------------------------------------------------------- found by fuzzing


@pytest.mark.parametrize("route", [CHAT, COMPLETIONS])
@pytest.mark.parametrize("number", ["1e400", "-1e400", "4e308"])
def test_overflowing_float_is_a_client_error(document: dict[str, Any],
                                             default_client: TestClient,
                                             route: str, number: str) -> None:
    """A float literal beyond the double range parsed to inf, which the answer could not
    encode: 500 InternalServerError. Now a JSON error like the NaN / Infinity literals."""
    response_part = ('{"request_id": "r", "choices": [{"index": 0, "token_ids": [9707], '
                     '"logprobs": {"content": [{"token_id": 9707, "logprob": NUMBER}]}}], '
                     '"metrics": {"queue_time_ms": NUMBER}}').replace("NUMBER", number)
    raw = (f'{{"generate_response": {response_part}}}' if route == CHAT
           else f'{{"generate_responses": [{response_part}]}}').encode()
    response = default_client.post(route, content=raw, headers=JSON_HEADERS)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "Bad Request"
    assert "json_invalid" in error["message"] and number in error["message"]
    assert_documented(document, route, response)


BIGGEST = "9" * 4300  # the longest integer Python's json parses


@pytest.mark.parametrize(("route", "body"), [
    (CHAT, {"prompt_tokens": "BIG", "generate_response": {"request_id": "r", "choices": [
        {"index": 0, "token_ids": [9707]}]}}),
    (COMPLETIONS, {"prompt_tokens": ["BIG", "BIG"], "generate_responses": [
        {"request_id": "r", "choices": [{"index": 0, "token_ids": [9707]}]},
        {"request_id": "s", "choices": [{"index": 0, "token_ids": [9707]}]}]}),
    (CHAT, {"stream": True, "prompt_tokens": "BIG", "generate_chunk": {
        "request_id": "r", "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 5}}}),
    (COMPLETIONS, {"stream": True, "generate_chunk": {
        "request_id": "r", "choices": [], "usage": {"completion_tokens": "BIG"}}}),
])
def test_usage_beyond_64_bits_is_a_client_error(document: dict[str, Any],
                                                default_client: TestClient, route: str,
                                                body: dict[str, Any]) -> None:
    """prompt_tokens + completion_tokens made an integer of 4301 digits, which json.dumps
    refuses to print: 500. Usage counts are now bounded to 64 bits."""
    raw = json.dumps(body).replace('"BIG"', BIGGEST).encode()
    response = default_client.post(route, content=raw, headers=JSON_HEADERS)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"].startswith("usage token counts must lie within")
    assert_documented(document, route, response)


def test_completions_logprobs_beyond_64_bits_streams(document: dict[str, Any],
                                                     default_client: TestClient) -> None:
    """Streaming with ``completion_request.logprobs`` of 4300 digits: the kept-candidates
    count (logprobs + 1) could not be printed into the stream's fingerprint: 500. It is
    capped, and keeps every candidate as any count past the list's length does."""
    candidates = [{"token_id": 9707, "logprob": -1.0}, {"token_id": 1879, "logprob": -2.0}]
    choice = {"index": 0, "token_ids": [9707], "logprobs": {"content": [
        {"token_id": 9707, "logprob": -1.0, "top_logprobs": candidates}]}}
    body = {"stream": True, "completion_request": {"prompt": "x", "logprobs": "BIG"},
            "generate_chunk": {"request_id": "r", "choices": [choice]}}
    raw = json.dumps(body).replace('"BIG"', BIGGEST).encode()
    response = default_client.post(COMPLETIONS, content=raw, headers=JSON_HEADERS)
    assert response.status_code == 200, response.text
    assert len(response.json()["chunk"]["choices"][0]["logprobs"]["top_logprobs"][0]) == 2
    assert_documented(document, COMPLETIONS, response)
