"""The recorded vLLM 0.33 answers (``tests/fixtures/vllm-0.33/NNNN-*.json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from derender_testing.models import ROOT, tokenizer

FIXTURES = ROOT / "tests" / "fixtures" / "vllm-0.33"

NOT_IMPLEMENTED: frozenset[str] = frozenset()
"""Fixture features recorded ahead of the code that serves them (a format recorded before its
parser is written): cases with one of them are skipped, saying so, until it lands."""


def pending_reason(case: dict[str, Any]) -> str | None:
    """Why a recorded case cannot be replayed yet (a feature not implemented yet), or None."""
    pending = sorted(NOT_IMPLEMENTED.intersection(case["features"]))
    if pending:
        return f"recorded ahead of its implementation: {', '.join(pending)} not implemented yet"
    return None


def load_case(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def recorded_chat(number: int) -> dict[str, Any]:
    """The recorded non-streaming chat case ``number``: its output ids, message, request, the
    served model and the peer's flags."""
    path = next(FIXTURES.glob(f"{number}-*.json"))
    case = load_case(path)
    call = case["calls"][0]
    ids = call["request"]["generate_response"]["choices"][0]["token_ids"]
    return {"model": case["model"], "ids": ids, "request": call["request"]["chat_request"],
            "message": call["response"]["choices"][0]["message"],
            "flags": case["server_flags"]}


def output_text(case: dict[str, Any], eos: int) -> str:
    """A ``recorded_chat`` case's output ids but ``eos``, decoded with the special tokens."""
    ids = [i for i in case["ids"] if i != eos]
    return str(tokenizer(case["model"]).decode(ids, skip_special_tokens=False))
