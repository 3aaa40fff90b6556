"""The errors the core raises, defined by the wire contract (``derender.contract.errors``)
and re-exported here for the core's modules."""

from __future__ import annotations

from derender.contract.errors import (
    BadRequestError,
    DerenderError,
    ErrorType,
    NotFoundError,
    ServiceUnavailableError,
    parameter_error,
)

__all__ = ["BadRequestError", "DerenderError", "ErrorType", "NotFoundError",
           "ServiceUnavailableError", "parameter_error"]
