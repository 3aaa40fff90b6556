"""The error contract: every error type the service answers with, its HTTP status, the
envelope that carries it, and the exceptions the core raises with it.

Every refusal is vLLM's envelope ``{"error": {"message", "type", "param", "code"}}`` with the
HTTP status equal to ``code``, and ``code`` is a function of ``type`` (``ErrorType.status``).
Pure Python (no pydantic): it loads without the request models.

The exceptions deliberately do not derive from ``ValueError``: raised inside a pydantic
validator (the embedded ``chat_request`` checks), they propagate as themselves instead of
being folded into a schema error, which is how vLLM reports those checks
(``BadRequestError`` with ``param``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar

from typing_extensions import TypedDict

from derender.contract.schema import documented


class ErrorType(StrEnum):
    """``error.type`` of an envelope, with the HTTP status it is answered with (equal to
    ``error.code``) and what it means (the OpenAPI document's description of that status)."""

    status: int
    description: str

    def __new__(cls, value: str, status: int, description: str) -> ErrorType:
        member = str.__new__(cls, value)
        member._value_ = value
        member.status = status
        member.description = description
        return member

    SCHEMA = ("Bad Request", 400,
              "the body fails the schema (wrong content type, JSON syntax, types), or a "
              "Lambda event cannot be read")
    BAD_REQUEST = ("BadRequestError", 400,
                   "the body is well-formed but cannot be derendered (bounds, ids outside the "
                   "vocabulary, an invalid or foreign `stream_state`, …)")
    NOT_FOUND = ("NotFoundError", 404, "`model` is not a served name (`param: model`)")
    REQUEST_TOO_LARGE = ("RequestTooLargeError", 413,
                         "the body exceeds `DERENDER_MAX_BODY_BYTES`")
    CLIENT_CLOSED = ("ClientClosedRequest", 499,
                     "local server only: the client went away during a call worked on the "
                     "pool; nobody reads the answer (as nginx logs it)")
    INTERNAL = ("InternalServerError", 500,
                "never expected: a bug, reported without details")
    SERVICE_UNAVAILABLE = ("ServiceUnavailableError", 503,
                           "streaming only: no signing key could be read (non-streaming calls "
                           "still work)")


@documented
class ErrorInfo(TypedDict):
    """What went wrong."""

    message: str
    """Human-readable reason (schema errors: a count line, then up to ten entries)."""
    type: str
    """One of ``ErrorType``'s values: ``Bad Request`` (schema), ``BadRequestError``,
    ``NotFoundError``, ``RequestTooLargeError``, ``ServiceUnavailableError`` or
    ``InternalServerError``."""
    param: str | None
    """The offending parameter or location, when known."""
    code: int
    """Equal to the HTTP status."""


@documented
class ErrorResponse(TypedDict):
    """vLLM's error envelope; the HTTP status equals ``error.code``."""

    error: ErrorInfo
    """The error."""


def envelope(error_type: ErrorType, message: str, param: str | None = None) -> ErrorResponse:
    """The envelope of an ``error_type`` refusal (answer it with ``error_type.status``)."""
    return {"error": {"message": message, "type": error_type.value, "param": param,
                      "code": error_type.status}}


class DerenderError(Exception):
    """A request the service refuses, with the envelope fields it is reported with."""

    error_type: ClassVar[ErrorType] = ErrorType.BAD_REQUEST

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param

    @property
    def status(self) -> int:
        """The HTTP status of the answer."""
        return self.error_type.status

    def envelope(self) -> ErrorResponse:
        return envelope(self.error_type, self.message, self.param)


class BadRequestError(DerenderError):
    """400 ``BadRequestError``: the request is well-formed but cannot be derendered."""


class NotFoundError(DerenderError):
    """404 ``NotFoundError``: the requested model is not served here."""

    error_type = ErrorType.NOT_FOUND


class ServiceUnavailableError(DerenderError):
    """503 ``ServiceUnavailableError``: streaming cannot sign or verify its state now."""

    error_type = ErrorType.SERVICE_UNAVAILABLE


def parameter_error(message: str, parameter: str, value: object = None) -> BadRequestError:
    """vLLM's request-validator error: the message names the parameter (and value)."""
    suffix = f"parameter={parameter}" if value is None else f"parameter={parameter}, value={value}"
    return BadRequestError(f"{message} ({suffix})", param=parameter)
