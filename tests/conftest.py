"""Pytest fixtures: an app per test model, as vLLM serves one model each.

The test models, tokenizers and recorded cases themselves live in the support package
(``support/derender_testing``: ``models``, ``recorded``), which tests, bench and scripts import.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import tests.hypothesis_profiles  # noqa: F401  (first: test settings inherit the profile)
from derender.app.main import create_app
from derender.core.registry import ModelRegistry
from derender.settings import Settings
from derender_testing.models import (
    LAYER_MODELS,
    ROOT,
    TEST_MODELS,
    model_folder,
    prepare_all,
    reference,
    require_model,
    served_model,
    tokenizer,
    vocabulary,
)
from derender_testing.recorded import FIXTURES, load_case, pending_reason, state_token, summaries

__all__ = ["FIXTURES", "LAYER_MODELS", "ROOT", "TEST_MODELS", "load_case", "model_folder",
           "pending_reason", "reference", "require_model", "served_model", "state_token",
           "tokenizer", "vocabulary"]
"""Names tests imported from here before they moved to ``derender_testing``: still importable
from here while tests written against the old place are merged; new tests import them from
``derender_testing.models`` and ``derender_testing.recorded``."""

Parsers = tuple[str | None, str | None]


SPLIT = {"test_conformance": 6, "test_openapi": 3, "test_schema_fuzz": 2, "test_tool_formats": 2,
         "test_state_bounds": 2, "test_stream_state_form": 2, "test_compact": 2}
"""Modules whose tests are spread over this many worker groups (the largest ones); every
other module's tests run together on one worker, so that its module fixtures are built once."""
FIRST = ("test_schema_fuzz", "test_request_fuzz", "test_conformance", "test_state_bounds",
         "test_stream_state_form", "test_compact", "test_private_use_text")
"""Modules sent to the workers first (the longest tests), so that the run does not end with
one worker still in a long test while the other waits."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group tests for pytest-xdist's ``loadgroup`` distribution (``make test``): a module per
    group, the largest modules split in a few interleaved groups. Nothing without xdist."""
    if not config.pluginmanager.hasplugin("xdist") or config.getoption("dist", "no") == "no":
        return
    seen: dict[str, int] = {}
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if isinstance(
            item, pytest.Function) else item.nodeid
        parts = SPLIT.get(module, 1)
        index = seen.get(module, 0)
        seen[module] = index + 1
        group = module if parts == 1 else f"{module}-{index % parts}"
        item.add_marker(pytest.mark.xdist_group(group))
    rank = {module: at for at, module in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(
        item.module.__name__.rsplit(".", 1)[-1] if isinstance(item, pytest.Function) else "",
        len(FIRST)))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``-m serial`` (``make test``'s second phase) does not import a test module whose source
    never names the ``serial`` marker: none of its tests could be selected, and importing
    them all again (the recorded cases read at collection, tokenizers loaded) cost about a
    third of a minute of CPU before the few timing tests ran. Any other run collects as
    usual."""
    if (config.getoption("markexpr", "") or "").strip() != "serial":
        return None
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    if re.search(r"\bserial\b", collection_path.read_text(encoding="utf-8")):
        return None
    return True


def pytest_configure(config: pytest.Config) -> None:
    """The derived test models are made once, in the process that starts the test workers
    (``make test`` runs pytest-xdist), not by every worker at once; so are the recorded
    cases' summaries (``derender_testing.recorded.summaries``), which every worker reads while
    collecting the tests (``test_openapi``): parsed there once, not by each worker."""
    if not hasattr(config, "workerinput"):
        prepare_all()
        if config.pluginmanager.hasplugin("xdist") and config.getoption("dist", "no") != "no":
            summaries()


@functools.cache
def _single_model_dir(name: str, root: str, parsers: Parsers) -> Path:
    """A models folder serving only ``name``; with parsers, a manifest naming them."""
    folder = Path(root) / f"{name}-{parsers[0]}-{parsers[1]}"
    model = folder / name
    model.mkdir(parents=True)
    for file in model_folder(name).iterdir():
        if file.name != "derender.json":
            (model / file.name).symlink_to(file)
    manifest = {"served_names": [name], "reasoning_parser": parsers[0], "tool_parser": parsers[1]}
    (model / "derender.json").write_text(json.dumps(manifest))
    return folder


_CLIENTS: dict[tuple[str, str, Parsers], TestClient] = {}
"""The session's clients by model, models folder and parsers, each entered (``client_for``)."""


def _client(name: str, root: str, parsers: Parsers) -> TestClient:
    """The app serving ``name`` with ``parsers``, made once; entered, so that its requests
    share one event loop (a client not entered starts a thread and an event loop for every
    request: 2.1 ms of CPU per small request against 1.4 ms). Left by ``client_for``."""
    key = (name, root, parsers)
    if key not in _CLIENTS:
        models = _single_model_dir(name, root, parsers)
        settings = Settings(models_dir=models)
        client = TestClient(create_app(settings, ModelRegistry(models)))
        client.__enter__()
        _CLIENTS[key] = client
    return _CLIENTS[key]


@pytest.fixture(scope="session")
def client_for(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``client_for(name, reasoning_parser=None, tool_parser=None)``: a test client of an app
    serving only that model, as vLLM serves one model (with those parsers)."""
    root = str(tmp_path_factory.mktemp("models"))

    def get(name: str, reasoning: str | None = None, tool: str | None = None) -> TestClient:
        require_model(name)
        return _client(name, root, (reasoning, tool))

    yield get
    for client in _CLIENTS.values():
        client.__exit__(None, None, None)
    _CLIENTS.clear()


@pytest.fixture(scope="session")
def qwen(client_for: Any) -> TestClient:
    """Qwen3 served with the qwen3 reasoning and hermes tool parsers."""
    client: TestClient = client_for("qwen3", "qwen3", "hermes")
    return client


@pytest.fixture(scope="session")
def r1(client_for: Any) -> TestClient:
    """DeepSeek-V4's tokenizer (``deepseek-v4``) served with the deepseek_r1 reasoning parser."""
    client: TestClient = client_for("deepseek-v4", "deepseek_r1", None)
    return client


@pytest.fixture(scope="session")
def default_client() -> Iterator[TestClient]:
    """The app as `make run` serves it: the embedded models folder (entered: one event loop
    for its requests, as ``client_for``'s)."""
    with TestClient(create_app(Settings(models_dir=LAYER_MODELS))) as client:
        yield client


