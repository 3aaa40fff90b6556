"""vLLM's rendering of schema validation errors in its error envelope.

Every refusal is ``{"error": {"message", "type", "param", "code"}}`` with the HTTP status
equal to ``code`` (``derender.contract.errors``). Schema errors are type ``Bad Request``: a
first line counting the errors, then up to ten of pydantic's error dicts (location
flattened, input summarised), as vLLM prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from derender.contract.errors import ErrorResponse, ErrorType, envelope

JSON = dict[str, Any]

MAX_REPORTED_ERRORS = 10
MAX_ERROR_CHARS = 1000
MAX_INPUT_CHARS = 200
TRUNCATED = "...[truncated]"

_INTERNAL_LOC_SEGMENTS = frozenset({
    "function-wrap", "function-after", "function-before", "function-plain", "json-or-python",
    "lax-or-strict", "chain", "default", "nullable", "tagged-union", "union", "call",
    "arguments", "is-instance", "is-subclass", "callable", "str", "int", "float", "bool",
    "bytes", "bytearray", "list", "tuple", "dict", "set", "frozenset", "complex", "none",
    "nonetype",
})


def clean_loc(loc: Sequence[str | int]) -> str:
    """A location as vLLM reports it: framework-internal segments dropped, dot-joined."""
    kept = [
        str(part) for part in loc
        if not any(c in str(part) for c in "[]{}()")
        and str(part).lower() not in _INTERNAL_LOC_SEGMENTS
    ]
    return ".".join(kept or [str(part) for part in loc])


def _summarise(value: Any) -> str:
    if isinstance(value, list | tuple | set | frozenset | dict):
        return f"<{type(value).__name__} of {len(value)} items>"
    text = value if isinstance(value, str) else str(value)
    return text[:MAX_INPUT_CHARS] + TRUNCATED if len(text) > MAX_INPUT_CHARS else text


def _format(error: JSON) -> str:
    text = str(error)
    return text[:MAX_ERROR_CHARS] + TRUNCATED if len(text) > MAX_ERROR_CHARS else text


def schema_error_body(errors: Sequence[JSON]) -> ErrorResponse:
    """The ``Bad Request`` envelope for a list of pydantic-style error dicts."""
    count = len(errors)
    lines = [f"{count} validation {'error' if count == 1 else 'errors'}:"]
    for error in errors[:MAX_REPORTED_ERRORS]:
        entry = dict(error)
        entry["loc"] = clean_loc(error["loc"])
        if "input" in entry:
            entry["input"] = _summarise(entry["input"])
        lines.append("  " + _format(entry))
    if count > MAX_REPORTED_ERRORS:
        lines.append(f"  ...and {count - MAX_REPORTED_ERRORS} more errors")
    param = clean_loc(errors[0]["loc"]) if errors else None
    return envelope(ErrorType.SCHEMA, "\n".join(lines).rstrip(), param)


def body_errors(exc: ValidationError) -> list[JSON]:
    """Pydantic errors located under ``body`` as FastAPI reports them."""
    return [_with_body(e) for e in exc.errors(include_url=False)]


def _with_body(error: ErrorDetails) -> JSON:
    out: JSON = {"type": error["type"], "loc": ("body", *error["loc"]), "msg": error["msg"],
                 "input": error["input"]}
    if "ctx" in error:
        out["ctx"] = error["ctx"]
    return out


def media_type_error_body() -> ErrorResponse:
    return envelope(ErrorType.SCHEMA, "1 validation error:\n  Unsupported Media Type: Only "
                    "'application/json' is allowed")
