"""What the response and error types tell pydantic when ``/openapi.json`` is derived from them.

The types are ``TypedDict``s (from ``typing_extensions``, which pydantic needs before
Python 3.12): the core builds plain dicts and ``json.dumps`` them, so a type costs nothing
per call. Pydantic reads this configuration only when the document is built (on its first
request): exactly the declared keys (``additionalProperties: false``) and each field's
description from the docstring written beside it. Plain data, so ``contract.errors`` need not
import pydantic.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")

SCHEMA_CONFIG: dict[str, Any] = {"extra": "forbid", "use_attribute_docstrings": True}
"""A pydantic ``ConfigDict``: unknown keys refused, attribute docstrings as descriptions."""


def documented(cls: T) -> T:
    """Class decorator: ``SCHEMA_CONFIG`` is the type's pydantic config (what
    ``pydantic.with_config`` sets, without importing pydantic)."""
    cls.__pydantic_config__ = SCHEMA_CONFIG  # type: ignore[attr-defined]
    return cls
