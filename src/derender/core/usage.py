"""The OpenAI ``usage`` object, as every response and usage chunk reports it."""

from __future__ import annotations

from typing import Any


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    """Token counts; the details are never known to derender."""
    return {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens, "prompt_tokens_details": None,
            "completion_tokens_details": None}
