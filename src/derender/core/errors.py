"""Typed errors the core raises; the HTTP app maps each to vLLM's error envelope.

They deliberately do not derive from ``ValueError``: raised inside a pydantic validator (the
embedded ``chat_request`` checks), they propagate as themselves instead of being folded into
a schema error, which is how vLLM reports those checks (``BadRequestError`` with ``param``).
"""

from __future__ import annotations


class DerenderError(Exception):
    """A request the service refuses, with the envelope fields it is reported with."""

    status: int = 400
    error_type: str = "BadRequestError"

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


class BadRequestError(DerenderError):
    """400 ``BadRequestError``: the request is well-formed but cannot be derendered."""


class NotFoundError(DerenderError):
    """404 ``NotFoundError``: the requested model is not served here."""

    status = 404
    error_type = "NotFoundError"


def parameter_error(message: str, parameter: str, value: object = None) -> BadRequestError:
    """vLLM's request-validator error: the message names the parameter (and value)."""
    suffix = f"parameter={parameter}" if value is None else f"parameter={parameter}, value={value}"
    return BadRequestError(f"{message} ({suffix})", param=parameter)
