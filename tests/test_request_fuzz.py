"""Mutation fuzzing of both routes (issue 22), the suite's deterministic share of it.

``scripts/fuzz_requests.py`` mutates recorded vLLM requests (non-finite numbers as strings
and literals, JSON nested up to 3,000 levels in every free-form field, swapped types, dropped
and unknown keys) and counts the answers; its 20,000-requests-per-route run is in
docs/benchmarks.md. Here a fixed seed and a few hundred requests per route: no 5xx, and the
mutations reach the decoders (some answers are 200).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("fuzz_requests", ROOT / "scripts/fuzz_requests.py")
assert _spec is not None and _spec.loader is not None
fuzz = importlib.util.module_from_spec(_spec)
sys.modules["fuzz_requests"] = fuzz
_spec.loader.exec_module(fuzz)

REQUESTS_PER_ROUTE = 300


def test_generation_is_deterministic() -> None:
    first = list(fuzz.generate(fuzz.CHAT, 40, 7))
    assert first == list(fuzz.generate(fuzz.CHAT, 40, 7))
    assert first != list(fuzz.generate(fuzz.CHAT, 40, 8))


def test_mutations_cover_what_the_issue_names() -> None:
    """Over a few hundred bodies: non-finite strings and literals, nesting past the
    interpreter's recursion limit, lone surrogates."""
    bodies = list(fuzz.generate(fuzz.CHAT, 400, 22)) + list(
        fuzz.generate(fuzz.COMPLETIONS, 400, 22))
    text = b"\n".join(bodies)
    for needle in (b'"NaN"', b'"-inf"', b'"1e400"', b": NaN", b"Infinity", b"[" * 1001,
                   b'{"k":' * 1001):
        assert needle in text, needle
    swapped = sum(1 for body in bodies if b'"\xed\xa0\x80"' in body)  # a lone surrogate
    assert swapped > 0


def test_no_server_error() -> None:
    statuses = fuzz.run(REQUESTS_PER_ROUTE, seed=2022, quiet=True)
    for route, counts in statuses.items():
        print(f"{route}: {dict(sorted(counts.items()))}")
        assert sum(counts.values()) == REQUESTS_PER_ROUTE
        assert not [status for status in counts if status >= 500], (route, counts)
        assert counts[200] >= REQUESTS_PER_ROUTE // 20, (route, counts)
