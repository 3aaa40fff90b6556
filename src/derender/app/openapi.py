"""The service's OpenAPI 3.1 document, served at ``GET /openapi.json``, derived from the contract.

The derender routes are plain Starlette routes (their bodies are parsed by the app), so
FastAPI cannot see them; this module derives their description from the wire contract
(``derender.contract``): paths and methods from ``routes``, request bodies from the real
unions of ``requests`` (pydantic models), answers from the ``TypedDict``s of ``responses``
that the core builds, refusals from the envelope and the ``ErrorType``s of ``errors``
(each status documents the types answered with it). Field descriptions are the attribute
docstrings written beside the fields. The request bodies are tightened only where the
handlers refuse what JSON schema can say (negative token ids, a choice index out of range,
a ``generate_chunks`` key outside the batch form).

Imported on the first request of the document, never at cold start.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import JsonSchemaMode

from derender.contract import requests as protocol
from derender.contract import responses, routes
from derender.contract.errors import ErrorResponse, ErrorType
from derender.contract.responses import STATE_TOKEN_PATTERN, TOKEN_PATTERN

JSON = dict[str, Any]
REF = "#/components/schemas/{model}"
MAX_CHOICE_INDEX = (1 << 31) - 1


# --------------------------------------------------------------------------- request docs


def _attribute_docs() -> dict[str, dict[str, str]]:
    """Attribute docstrings of ``derender.contract.requests``' classes, as pydantic reads them.

    Read here, when the document is built, rather than by pydantic's
    ``use_attribute_docstrings`` on the request models: pydantic reads them while it
    creates each model class (``inspect.getsource`` of the module once per class), which
    measured about 90 ms of import at cold start. (The response types are ``TypedDict``s
    whose schema pydantic builds only here, so they use pydantic's reading.)
    """
    try:
        tree = ast.parse(inspect.getsource(protocol))
    except (OSError, TypeError):  # no source shipped: requests go undescribed
        return {}
    docs: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        fields = docs.setdefault(node.name, {})
        for stmt, after in zip(node.body, node.body[1:], strict=False):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                fields[stmt.target.id] = after.value.value
    return docs


def _markdown(doc: str) -> str:
    return " ".join(inspect.cleandoc(doc).split()).replace("``", "`")


def _tidy(node: Any) -> None:
    """Every description as one Markdown line (docstrings use reST literals)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                node[key] = _markdown(value)
            else:
                _tidy(value)
    elif isinstance(node, list):
        for value in node:
            _tidy(value)


def _integers(node: Any, **bounds: int) -> None:
    """Add ``bounds`` to every integer schema under ``node``."""
    if isinstance(node, dict):
        if node.get("type") == "integer":
            node.update(bounds)
        for value in node.values():
            _integers(value, **bounds)
    elif isinstance(node, list):
        for value in node:
            _integers(value, **bounds)


def _describe_requests(schemas: dict[str, JSON], served: list[str]) -> None:
    """Every request field's description: its docstring in contract/requests.py."""
    docs = _attribute_docs()
    for name, schema in schemas.items():
        cls = getattr(protocol, name, None)
        if not isinstance(cls, type) or not issubclass(cls, BaseModel):
            continue
        for field, prop in schema.get("properties", {}).items():
            text = next((docs[c.__name__][field] for c in cls.__mro__
                         if field in docs.get(c.__name__, {})), None)
            prop["description"] = text or ""
            if field == "model" and served:
                prop["examples"] = served


def _tighten_requests(schemas: dict[str, JSON]) -> None:
    """What the handlers refuse beyond the models' types, where JSON schema can say it."""
    for name, schema in schemas.items():
        properties = schema.get("properties", {})
        for field in ("token_ids", "prompt_token_ids", "token_id"):
            _integers(properties.get(field), minimum=0)  # a negative id is a 400
        if "stream_state" in properties:  # anything but a state of ours is a 400
            properties["stream_state"]["anyOf"] = [
                {"type": "object", "required": ["prev_tokens"], "properties": {"prev_tokens": {
                    "type": "array", "minItems": 1, "maxItems": 1,
                    "items": {"type": "string", "pattern": STATE_TOKEN_PATTERN}}}},
                {"type": "string", "pattern": TOKEN_PATTERN}, {"type": "null"}]
        if name.startswith("Derender") and "generate_chunks" not in properties:
            # A body with `generate_chunks` is validated as the batch form, whatever else.
            schema["not"] = {"required": ["generate_chunks"]}
    choice = schemas["GenerateChoice"]  # empty or null ids are a 400
    choice["properties"]["token_ids"] = {
        "type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1,
        "description": choice["properties"]["token_ids"]["description"]}
    choice["required"] = [*choice["required"], "token_ids"]
    _integers(schemas["GenerateStreamChoice"]["properties"]["index"],
              minimum=0, maximum=MAX_CHOICE_INDEX)
    schemas["DerenderCompletionRequest"]["properties"]["generate_responses"]["minItems"] = 1
    completion = schemas["CompletionRequest"]  # null or "" is a 400
    completion["properties"]["prompt"].pop("default", None)
    completion["properties"]["prompt"]["not"] = {"enum": [None, ""]}
    completion["required"] = [*completion.get("required", []), "prompt"]


# --------------------------------------------------------------------------- the document

_CHAT_BODY = (protocol.DerenderChatRequest | protocol.DerenderChatStreamRequest
              | protocol.DerenderChatStreamBatchRequest)
_COMPLETION_BODY = (protocol.DerenderCompletionRequest | protocol.DerenderCompletionStreamRequest
                    | protocol.DerenderCompletionStreamBatchRequest)
_TOP_LEVEL: dict[str, Any] = {
    "ChatDerenderBody": _CHAT_BODY,
    "CompletionDerenderBody": _COMPLETION_BODY,
    "ChatDerenderResponse": (responses.ChatCompletion | responses.ChatStreamResponse
                             | responses.ChatStreamBatchResponse),
    "CompletionDerenderResponse": (responses.TextCompletion | responses.CompletionStreamResponse
                                   | responses.CompletionStreamBatchResponse),
    "ErrorResponse": ErrorResponse,
    "Health": responses.Health,
    "ModelList": responses.ModelList,
    "Version": responses.Version,
}
_UNION_DOCS = {
    "ChatDerenderBody": "`DerenderChatRequest` (no `stream` or `stream: false`), "
                        "`DerenderChatStreamRequest` (`stream: true`, `generate_chunk`) or "
                        "`DerenderChatStreamBatchRequest` (`stream: true`, `generate_chunks`). "
                        "Unknown keys are ignored.",
    "CompletionDerenderBody": "`DerenderCompletionRequest` (no `stream` or `stream: false`), "
                              "`DerenderCompletionStreamRequest` (`stream: true`, "
                              "`generate_chunk`) or `DerenderCompletionStreamBatchRequest` "
                              "(`stream: true`, `generate_chunks`). Unknown keys are ignored.",
    "ChatDerenderResponse": "`chat.completion` (non-streaming), `{chunk, stream_state}` "
                            "(`generate_chunk`) or `{chunks, stream_state}` "
                            "(`generate_chunks`).",
    "CompletionDerenderResponse": "`text_completion` (non-streaming), `{chunk, stream_state}` "
                                  "(`generate_chunk`) or `{chunks, stream_state}` "
                                  "(`generate_chunks`).",
}

STATUSES = sorted({error.status for error in ErrorType})
"""Every status a refusal can have."""

# The README's calls (Qwen3 ids; any default model with a large enough vocabulary answers).
_HELLO = [9707, 1879, 0, 2585, 525, 498]
_EXAMPLES: dict[str, dict[str, Any]] = {
    "chat": {
        "non-streaming": {"prompt_tokens": 12, "generate_response": {
            "request_id": "req-1", "choices": [
                {"index": 0, "token_ids": [*_HELLO, 151645], "finish_reason": "stop"}]},
            "chat_request": {"messages": [{"role": "user", "content": "hi"}]}},
        "streaming": {"stream": True, "prompt_token_ids": [151644, 77091, 198],
                      "generate_chunk": {"request_id": "req-3", "choices": [
                          {"index": 0, "token_ids": [9707, 1879]}]}},
        "streaming, batched": {"stream": True, "generate_chunks": [
            {"request_id": "req-4", "choices": [{"index": 0, "token_ids": [9707, 1879]}]},
            {"request_id": "req-4", "choices": [
                {"index": 0, "token_ids": [0, 151645], "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 3, "completion_tokens": 4}}]},
    },
    "completions": {
        "non-streaming": {"generate_responses": [{"request_id": "req-2", "choices": [
            {"index": 0, "token_ids": _HELLO, "finish_reason": "stop",
             "logprobs": {"content": [{"token_id": 9707, "logprob": -0.1}]}}]}],
            "completion_request": {"prompt": "Say hi", "stop": ["!"], "logprobs": 0}},
        "streaming": {"stream": True, "generate_chunk": {"request_id": "req-5", "choices": [
            {"index": 0, "token_ids": [9707, 1879]}]}},
        "streaming, batched": {"stream": True, "generate_chunks": [
            {"request_id": "req-6", "choices": [{"index": 0, "token_ids": [9707]}]},
            {"request_id": "req-6", "choices": [
                {"index": 0, "token_ids": [1879, 0], "finish_reason": "length"}]}]},
    },
}


def _json(schema: str, description: str) -> JSON:
    """A response whose JSON body is the component ``schema``."""
    return {"description": description, "content": {"application/json": {
        "schema": {"$ref": REF.format(model=schema)}}}}


def _error(status: int) -> JSON:
    """The refusals answered with ``status``: the ``ErrorType``s that have it."""
    types = [error for error in ErrorType if error.status == status]
    description = "; ".join(f"`{error.value}`: {error.description}" for error in types)
    response = _json("ErrorResponse", description[0].upper() + description[1:] + ".")
    response["content"]["application/json"]["schema"] = {"allOf": [
        {"$ref": REF.format(model="ErrorResponse")},
        {"properties": {"error": {"properties": {"type": {"enum": [t.value for t in types]},
                                                 "code": {"const": status}}}}},
    ]}
    return response


def _derender(route: routes.Route, body: str, answer: str, summary: str) -> JSON:
    return {
        "operationId": f"{route.name}_derender",
        "summary": summary,
        "description": ("Without `stream` (or `stream: false`) the whole answer at once; "
                        "with `stream: true` one call per engine chunk (`generate_chunk`) or "
                        "per run of chunks (`generate_chunks`), each sending the "
                        "`stream_state` the previous call returned (none on the first)."),
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": REF.format(model=body)},
            "examples": {name: {"value": value}
                         for name, value in _EXAMPLES[route.name].items()}}}},
        "responses": {"200": _json(answer, _UNION_DOCS[answer]),
                      **{str(status): _error(status) for status in STATUSES}},
    }


_OPERATIONS: dict[routes.Route, Callable[[], JSON]] = {
    routes.CHAT: lambda: _derender(
        routes.CHAT, "ChatDerenderBody", "ChatDerenderResponse",
        "Engine token ids into a chat.completion, or into chat.completion.chunks"),
    routes.COMPLETIONS: lambda: _derender(
        routes.COMPLETIONS, "CompletionDerenderBody", "CompletionDerenderResponse",
        "Engine token ids into a text_completion, or into its chunks"),
    routes.HEALTH: lambda: {"operationId": routes.HEALTH.name, "summary": "Liveness",
                            "responses": {"200": _json("Health", "Alive.")}},
    routes.MODELS: lambda: {"operationId": routes.MODELS.name, "summary": "Served models",
                            "responses": {"200": _json("ModelList", "Every served name.")}},
    routes.VERSION: lambda: {"operationId": routes.VERSION.name, "summary": "Version",
                             "responses": {"200": _json("Version", "The service's version.")}},
}
"""Each route's operation."""


def build_document(title: str, version: str, description: str, served: list[str]) -> JSON:
    """The OpenAPI 3.1 document of a service serving the ``served`` model names."""
    mode: JsonSchemaMode = "validation"  # one schema per model, requests and responses alike
    keyed = [(name, mode, TypeAdapter(kind)) for name, kind in _TOP_LEVEL.items()]
    tops, defs = TypeAdapter.json_schemas(keyed, ref_template=REF)
    schemas: dict[str, JSON] = dict(defs.get("$defs", {}))
    _describe_requests(schemas, served)
    _tighten_requests(schemas)
    for (name, _), schema in tops.items():
        if name in _UNION_DOCS:  # the models are components already
            schemas[name] = {**schema, "description": _UNION_DOCS[name]}
    _tidy(schemas)
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version, "description": description},
        "paths": {route.path: {route.method.lower(): _OPERATIONS[route]()}
                  for route in routes.ROUTES},
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


def document(app: FastAPI) -> JSON:
    """The app's document, built on first use and kept on ``app.openapi_schema``."""
    if app.openapi_schema is None:
        app.openapi_schema = build_document(app.title, app.version, app.description,
                                            app.state.registry.names)
    return app.openapi_schema
