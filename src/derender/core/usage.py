"""The OpenAI ``usage`` object, as every response and usage chunk reports it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from derender.core.errors import BadRequestError

if TYPE_CHECKING:
    from derender.contract.responses import Usage

MAX_COUNT = 2**63 - 1
"""Largest token count reported (a 64-bit integer, as clients read it). Counts come from the
request, unbounded; summed, two of Python's largest parseable integers (4300 digits) make
one that no JSON encoder here will write."""


def usage(prompt_tokens: int, completion_tokens: int) -> Usage:
    """Token counts; the details are never known to derender."""
    total = prompt_tokens + completion_tokens
    if max(abs(prompt_tokens), abs(completion_tokens), abs(total)) > MAX_COUNT:
        raise BadRequestError(f"usage token counts must lie within ±{MAX_COUNT} "
                              "(prompt_tokens, usage.prompt_tokens, usage.completion_tokens)")
    return {"prompt_tokens": prompt_tokens, "total_tokens": total,
            "completion_tokens": completion_tokens, "prompt_tokens_details": None,
            "completion_tokens_details": None}
