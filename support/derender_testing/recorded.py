"""The recorded vLLM 0.33 answers (``tests/fixtures/vllm-0.33/NNNN-*.json``, and from case
3000 on ``NNNN-*.json.gz``: a streamed case repeats the request on every call, so a plain file
of a long stream runs to megabytes that gzip shrinks about fiftyfold; the content is the same
JSON either way)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from derender_testing.models import ROOT, tokenizer

FIXTURES = ROOT / "tests" / "fixtures" / "vllm-0.33"

NOT_IMPLEMENTED: frozenset[str] = frozenset({
})
"""Fixture features recorded ahead of the code that serves them (a format recorded before its
parser is written): cases with one of them are skipped, saying so, until it lands."""


NOT_SERVED_SERVERS: dict[str, str] = {}
"""Recordings of a parser pairing derender refuses, by the server's slug in the case name:
kept for when it is served, skipped saying why."""


NOT_MATCHED_YET: dict[str, frozenset[str]] = {}
"""Drop-in recordings (2000-2299) derender does not match yet, by subject: the names of the
cases (docs/recording/dropin.md says what vLLM does in each)."""


def pending_reason(case: dict[str, Any]) -> str | None:
    """Why a recorded case cannot be replayed yet (a feature not implemented yet, or a
    recorded behaviour not matched yet), or None."""
    pending = sorted(NOT_IMPLEMENTED.intersection(case["features"]))
    if pending:
        return f"recorded ahead of its implementation: {', '.join(pending)} not implemented yet"
    for slug, pairing in NOT_SERVED_SERVERS.items():
        if slug in case["name"]:
            return f"recorded ahead of its implementation: {pairing}"
    for subject, names in NOT_MATCHED_YET.items():
        if case["name"] in names:
            return (f"{subject}: vLLM 0.33's answer not matched yet "
                    "(docs/recording/dropin.md)")
    return None


def state_token(state: Any) -> str:
    """The signed token inside a ``stream_state`` answered in the (default) object form
    ``{"prev_tokens": ["derender:<token>"]}``; fails on anything else."""
    assert isinstance(state, dict) and list(state) == ["prev_tokens"], state
    (entry,) = state["prev_tokens"]
    assert isinstance(entry, str) and entry.startswith("derender:"), state
    token: str = entry.removeprefix("derender:")
    return token


GZ = ".json.gz"


def case_paths(pattern: str = "*") -> list[Path]:
    """The recorded cases whose name matches ``pattern`` (a glob without the suffix), plain
    and gzipped, in name order."""
    paths = [*FIXTURES.glob(pattern + ".json"), *FIXTURES.glob(pattern + GZ)]
    return sorted(paths, key=case_name)


def case_name(path: Path) -> str:
    """A case's name: its file name without ``.json`` or ``.json.gz``."""
    name = path.name
    return name.removesuffix(GZ) if name.endswith(GZ) else name.removesuffix(".json")


def case_path(name: str) -> Path:
    """The file of the case named ``name`` (plain or gzipped)."""
    plain = FIXTURES / f"{name}.json"
    return plain if plain.exists() else FIXTURES / f"{name}{GZ}"


def numbered(number: int) -> Path:
    """The file of the case numbered ``number`` (written with at least three digits)."""
    (path,) = case_paths(f"{number:03d}-*")
    return path


def load_case(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    if path.name.endswith(GZ):
        raw = gzip.decompress(raw)
    data: dict[str, Any] = json.loads(raw.decode("utf-8"))
    return data


def write_case(into: Path, name: str, text: str) -> Path:
    """Write a recorded case's JSON text as ``into/name.json.gz``, byte-for-byte reproducible
    (no time or file name in the gzip header)."""
    out = into / f"{name}{GZ}"
    out.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    return out


def recorded_chat(number: int) -> dict[str, Any]:
    """The recorded non-streaming chat case ``number``: its output ids, message, request, the
    served model and the peer's flags."""
    case = load_case(numbered(number))
    call = case["calls"][0]
    ids = call["request"]["generate_response"]["choices"][0]["token_ids"]
    return {"model": case["model"], "ids": ids, "request": call["request"]["chat_request"],
            "message": call["response"]["choices"][0]["message"],
            "flags": case["server_flags"]}


def output_text(case: dict[str, Any], eos: int) -> str:
    """A ``recorded_chat`` case's output ids but ``eos``, decoded with the special tokens."""
    ids = [i for i in case["ids"] if i != eos]
    return str(tokenizer(case["model"]).decode(ids, skip_special_tokens=False))
