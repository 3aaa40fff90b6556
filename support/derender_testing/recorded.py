"""The recorded vLLM 0.33 answers (``tests/fixtures/vllm-0.33/NNNN-*.json``, and from case
3000 on ``NNNN-*.json.gz``: a streamed case repeats the request on every call, so a plain file
of a long stream runs to megabytes that gzip shrinks about fiftyfold; the content is the same
JSON either way)."""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

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
    (path,) = _by_number(FIXTURES.stat().st_mtime_ns).get(f"{number:03d}", [])
    return path


@functools.cache
def _by_number(listed: int) -> dict[str, list[Path]]:
    """The cases by the number their name starts with, as ``case_paths`` lists them: one
    listing of the folder (per modification time ``listed``: a case added is seen), where a
    glob per number read the whole folder each time (1,300 numbers looked up while the
    conformance tests are collected: about 9 s of CPU)."""
    index: dict[str, list[Path]] = {}
    for path in case_paths():
        index.setdefault(path.name.split("-", 1)[0], []).append(path)
    return index


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


def answer_shape(value: Any) -> str:
    """A JSON value's structure: its keys (recursively) and leaf types, not its values; as
    canonical JSON text (an object's keys sorted, a list's item structures sorted and each
    once), so that two values have the same structure exactly when their texts are equal."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(key)}:{answer_shape(item)}"
                              for key, item in sorted(value.items())) + "}"
    if isinstance(value, list):
        return "[" + ",".join(sorted({answer_shape(item) for item in value})) + "]"
    return json.dumps(type(value).__name__)


class CaseSummary(NamedTuple):
    """What the tests that read every recorded case need of each (one reading of the corpus
    per content, kept in ``SUMMARIES``): the case's name, features, route, first method and
    kind, its answers' statuses and structures, and whether it is a single stream answered
    200 throughout (no chain, no tampered state)."""

    name: str
    features: list[str]
    endpoint: str
    method: str
    kind: str
    answers: list[tuple[int | None, str]]
    single_stream_ok: bool


def _summary(case: dict[str, Any]) -> CaseSummary:
    calls = case["calls"]
    answers = sorted({(call.get("status"), answer_shape(call.get("response"))) for call in calls},
                     key=lambda answer: (answer[0] or 0, answer[1]))
    single = (case["kind"] == "stream" and not case.get("state_tampered")
              and all(call.get("chain", 0) == 0 and call["status"] == 200 for call in calls))
    return CaseSummary(case["name"], list(case["features"]), case["endpoint"],
                       calls[0].get("method", "POST"), case["kind"], answers, single)


SUMMARIES = ROOT / ".pytest_cache" / "derender" / "recorded-summaries.json"
"""The summaries by case file and its content's digest (git-ignored; ``make clean`` removes
it): the corpus is about 370 MB of JSON, 13 s of CPU to parse, and was parsed whole while
collecting the tests by every test worker, then again by the tests that read every case."""


def summaries() -> dict[Path, CaseSummary]:
    """Every recorded case's ``CaseSummary``, in ``case_paths`` order: read from ``SUMMARIES``
    where the file's content is the one summarised, else read from the case (and stored)."""
    try:
        stored: dict[str, Any] = json.loads(SUMMARIES.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stored = {}
    result: dict[Path, CaseSummary] = {}
    fresh: dict[str, Any] = {}
    for path in case_paths():
        digest = hashlib.sha1(path.read_bytes(), usedforsecurity=False).hexdigest()
        entry = stored.get(path.name)
        if entry is None or entry[0] != digest:
            entry = [digest, list(_summary(load_case(path)))]
        name, features, endpoint, method, kind, answers, single = entry[1]
        result[path] = CaseSummary(name, features, endpoint, method, kind,
                                   [(status, shape) for status, shape in answers], single)
        fresh[path.name] = entry
    if fresh != stored:
        _store(fresh)
    return result


def _store(entries: dict[str, Any]) -> None:
    """Write ``SUMMARIES`` whole, atomically (test workers may read it meanwhile)."""
    try:
        SUMMARIES.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=SUMMARIES.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(entries, out)
        os.replace(temporary, SUMMARIES)
    except OSError:
        pass  # a read-only checkout: summarised again next time
