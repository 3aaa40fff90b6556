"""The wire contract is defined once (issue 18, items 3 and 5): ``derender.contract`` holds
requests, responses, errors and routes, imports nothing of the service around it, and the
app, the Lambda telemetry and the README agree with it; the light client (``client/``, a
distribution of its own that imports nothing of the service) writes its paths and limits itself,
checked here against the contract's."""

from __future__ import annotations

import ast
import dataclasses
import re
import subprocess
import sys
import typing
from pathlib import Path

from fastapi.testclient import TestClient
from starlette.routing import Route as StarletteRoute

import derender_client as client
from derender import __version__, settings
from derender.awslambda import replay, telemetry
from derender.contract import routes
from derender.contract.errors import (
    BadRequestError,
    ErrorType,
    NotFoundError,
    ServiceUnavailableError,
    envelope,
)
from derender.core import errors as core_errors
from derender.settings import Settings
from tests.conftest import ROOT

CONTRACT = ROOT / "src" / "derender" / "contract"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_contract_imports_nothing_of_the_service() -> None:
    """Only the contract itself and ``settings`` (limit constants, environment names)."""
    for path in sorted(CONTRACT.glob("*.py")):
        ours = {m for m in _imports(path) if m.split(".")[0] == "derender"}
        assert ours <= {"derender.contract", "derender.settings"} | {
            f"derender.contract.{p.stem}" for p in CONTRACT.glob("*.py")}, (path.name, ours)


def _modules_after(statement: str) -> set[str]:
    script = f"import sys\n{statement}\nprint('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=True)
    return set(done.stdout.split())


def test_errors_and_routes_load_without_pydantic_and_the_core_without_the_responses() -> None:
    """Errors and routes load without pydantic; the response types are for type checking
    and the document only (no cold-start cost)."""
    light = _modules_after("import derender.contract.errors, derender.contract.routes")
    assert "pydantic" not in light
    served = _modules_after("import derender.app.main")
    assert "derender.core.chat" in served
    assert "derender.contract.responses" not in served


def test_error_types_carry_their_status() -> None:
    """The statuses the README's error table and vLLM's envelope give each type."""
    assert {e.value: e.status for e in ErrorType} == {
        "Bad Request": 400, "BadRequestError": 400, "NotFoundError": 404,
        "RequestTooLargeError": 413, "ClientClosedRequest": 499, "InternalServerError": 500,
        "ServiceUnavailableError": 503}
    assert all(e.description for e in ErrorType)
    for error, status in ((BadRequestError("m"), 400), (NotFoundError("m", "model"), 404),
                          (ServiceUnavailableError("m"), 503)):
        assert error.status == status
        assert error.envelope() == {"error": {"message": "m", "type": error.error_type.value,
                                              "param": error.param, "code": status}}
    assert envelope(ErrorType.REQUEST_TOO_LARGE, "big")["error"]["code"] == 413
    assert core_errors.BadRequestError is BadRequestError  # one class, re-exported


def test_the_app_serves_exactly_the_contract_routes(default_client: TestClient) -> None:
    app = default_client.app
    served = {(r.path, method) for r in app.routes  # type: ignore[attr-defined]
              if isinstance(r, StarletteRoute) and r.methods
              for method in r.methods - {"HEAD"}}
    declared = {(r.path, r.method) for r in routes.ROUTES}
    assert declared <= served
    # the document itself, and the local server's /metrics (not in the document)
    assert served - declared == {(routes.OPENAPI.path, "GET"), (routes.METRICS.path, "GET")}
    assert default_client.get(routes.OPENAPI.path).status_code == 200


def test_telemetry_and_replay_name_the_contract_paths() -> None:
    assert {r.path for r in routes.ROUTES} == telemetry.ROUTES
    assert set(replay.PATHS) == {routes.CHAT.path, routes.COMPLETIONS.path}


def test_the_light_client_writes_the_contracts_paths_and_limits() -> None:
    """The client cannot import the contract (it is a distribution of its own, without the
    service); what it writes of it is checked against the service's own definitions here, so
    the two cannot drift."""
    assert {name: route.path for name, route in routes.DERENDER.items()} == client.PATHS
    assert all(routes.DERENDER[name].method == "POST" for name in client.PATHS)
    assert typing.get_args(client.Route) == typing.get_args(routes.DerenderRoute)
    assert client.MAX_BATCH == settings.MAX_BATCH_CHUNKS
    # Of the service's own refusals only the 503 (no signing key could be read) is retried:
    # every other one answers the same again; the rest it retries are a gateway's (throttling,
    # 502, 504), none of which the service answers itself.
    assert {e.status for e in ErrorType} & client.RETRY_STATUSES == {
        ErrorType.SERVICE_UNAVAILABLE.status}
    assert client.RETRY_STATUSES - {ErrorType.SERVICE_UNAVAILABLE.status} == {429, 502, 504}
    assert client.__version__ == __version__  # released together, one wire contract


def _environment_names() -> dict[str, str]:
    """Every ``DERENDER_*`` name settings.py defines, by constant."""
    return {name: value for name, value in vars(settings).items()
            if isinstance(value, str) and value.startswith("DERENDER_")}


def test_every_environment_variable_is_in_the_readme_with_its_default() -> None:
    """Each integer setting is found by setting its variable (no table of names here), and
    the README row of the variable shows the default the code has."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    names = _environment_names()
    assert len(names) >= 15
    for name in names.values():
        assert f"| `{name}` |" in readme, name
    base = Settings.from_env({})
    integers = 0
    for name in names.values():
        try:
            changed = Settings.from_env({name: "7"})
        except ValueError:  # not an integer setting (a parser spec)
            continue
        fields = [f.name for f in dataclasses.fields(Settings)
                  if getattr(changed, f.name) == 7 and getattr(base, f.name) != 7]
        if not fields:
            continue
        (field,) = fields
        integers += 1
        default = getattr(Settings, field)
        assert re.search(rf"\| `{name}` \| {default}( \([^|]*\))? \|", readme), (name, default)
    assert integers >= 9
