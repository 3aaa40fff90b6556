"""Schema fuzzing: schemathesis against a real local server, from /openapi.json.

One uvicorn server (``--factory derender.app.main:create_app``, the embedded models, a test
signing key) on a free port, and three schemathesis runs at once (generating bodies is
CPU-bound; completions bodies take about twice as long as chat ones, so that route gets two
runs and the three share the cores evenly). A run plays the document's examples, the
coverage phase (boundary and out-of-schema values of every field, wrong methods), then its
fuzzing cases, valid and invalid bodies mixed. Checks: no 5xx; every response matches the
schema, status and content type documented for it. The HAR reports are counted: at least
``MIN_REQUESTS`` requests per route, at least ``MIN_OK_SHARE`` of them answered 200.

The schemathesis CLI rather than its pytest plugin: the plugin's lazy schema
(``schemathesis.pytest.from_fixture``) reads ``Node._nodeid``, which pytest 9 no longer has,
and ``from_url`` at import time would need the server during collection. The Hypothesis
example database is off (``--generation-database none``): with it, Hypothesis's targeted
Pareto phase spends most of the budget re-shrinking stored examples.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from derender_testing.models import LAYER_MODELS
from derender_testing.servers import LocalServer, clean_env, uvicorn_app
from tests.hypothesis_profiles import PROFILE

CHAT = "/v1/chat/completions/derender"
COMPLETIONS = "/v1/completions/derender"
SIGNING_KEYS = "t1:0123456789abcdef0123456789abcdef"
ALL_PHASES = "examples,coverage,fuzzing"

RUNS = {  # name: (route counted, operations, phases, fuzzing cases)
    "chat": (CHAT, f"^({CHAT}|/health|/v1/models)$", ALL_PHASES, 1000),
    "completions": (COMPLETIONS, f"^{COMPLETIONS}$", ALL_PHASES, 600),
    "completions-more": (COMPLETIONS, f"^{COMPLETIONS}$", "fuzzing", 600),
}
"""The coverage phase sends about 1500 requests per route in 5 s; fuzzing takes about 60 s
of one core per 1000 chat cases, 110 s per 1000 completions cases."""
MIN_REQUESTS = 2500
MIN_OK_SHARE = 0.15
TIMEOUT_SECONDS = 600
"""A run still going after this fails the test (CI's whole suite has 20 minutes)."""
SEEDS = {"chat": 20261206, "completions": 20261207, "completions-more": 20261208}
"""Each run's schemathesis seed under the ``ci`` profile (``make test``, CI), so every run
sends the same requests and the test cannot fail at random; ``make explore`` draws anew."""
CHECKS = ("not_a_server_error,response_schema_conformance,status_code_conformance,"
          "content_type_conformance")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real uvicorn server of the app, as `make run` starts it; yields its base URL."""
    log = tmp_path_factory.mktemp("server") / "uvicorn.log"
    env = clean_env(DERENDER_MODELS_DIR=str(LAYER_MODELS), DERENDER_SIGNING_KEYS=SIGNING_KEYS)
    with LocalServer(uvicorn_app, env, log, timeout=60) as running:
        yield running.url


def _schemathesis(base: str, operations: str, phases: str, cases: int, workdir: Path,
                  seed: int | None) -> tuple[int, str, Path, float]:
    """One CLI run (``seed``: fixed, None: random); its exit code, output, HAR report and
    duration."""
    workdir.mkdir()
    har = workdir / "report.har"
    command = [
        sys.executable, "-m", "schemathesis.cli", "run", f"{base}/openapi.json",
        "--include-path-regex", operations,
        "--checks", CHECKS,
        "--phases", phases,
        "--mode", "all",
        "--max-examples", str(cases),  # no --max-time: it repeats fuzzing until spent
        "--workers", "1",
        "--generation-database", "none",
        "--suppress-health-check", "all",  # about generating data, not about the API
        "--request-timeout", "30",
        "--report", "har", "--report-har-path", str(har),
        "--no-color",
        *(["--seed", str(seed)] if seed is not None else []),
    ]
    started = time.monotonic()
    # cwd: an empty folder, so no schemathesis.toml of anyone's is picked up
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True,
                          timeout=TIMEOUT_SECONDS, check=False)
    return done.returncode, done.stdout + done.stderr, har, time.monotonic() - started


def _statuses(har: Path, route: str) -> collections.Counter[int]:
    entries = json.loads(har.read_text(encoding="utf-8"))["log"]["entries"]
    counts: collections.Counter[int] = collections.Counter()
    for entry in entries:
        if urlsplit(entry["request"]["url"]).path == route:
            counts[entry["response"]["status"]] += 1
    return counts


def test_schemathesis_finds_nothing(server: str, tmp_path: Path) -> None:
    """No 5xx and nothing off-schema over a few thousand generated requests per route."""
    with ThreadPoolExecutor(len(RUNS)) as pool:
        runs = {name: pool.submit(_schemathesis, server, operations, phases, cases,
                                  tmp_path / name, None if PROFILE == "explore" else SEEDS[name])
                for name, (_, operations, phases, cases) in RUNS.items()}
        results = {name: run.result() for name, run in runs.items()}

    for name, (code, output, _, _) in results.items():
        assert code == 0, f"schemathesis ({name}) found problems:\n{output[-20000:]}"
    statuses: dict[str, collections.Counter[int]] = collections.defaultdict(collections.Counter)
    for name, (_, _, har, _) in results.items():
        statuses[RUNS[name][0]] += _statuses(har, RUNS[name][0])
    print("\nschemathesis runs: " + ", ".join(f"{name} {seconds:.0f} s"
                                              for name, (*_, seconds) in results.items()))
    for route, counts in statuses.items():
        total = sum(counts.values())
        ok_share = counts[200] / total if total else 0.0
        print(f"{route}: {total} requests, {ok_share:.0%} answered 200, "
              f"statuses {dict(sorted(counts.items()))}")
        assert not any(status >= 500 for status in counts), counts
        assert total >= MIN_REQUESTS, f"{route}: only {total} requests"
        assert ok_share >= MIN_OK_SHARE, f"{route}: {dict(counts)}"
