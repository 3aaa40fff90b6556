"""The light client is a distribution of its own (``client/``, ``derender-client``): httpx is
its one dependency, botocore only its ``sigv4`` extra, and it imports nothing of the service,
checked in a fresh interpreter where the service's packages cannot be imported at all. Its
dependency ranges admit the versions ``uv.lock`` pins (what the tests run)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from derender_testing.models import ROOT

CLIENT = ROOT / "client"
SERVICE = ("derender", "fastapi", "starlette", "pydantic", "pydantic_core", "tokenizers",
           "mangum", "huggingface_hub", "uvicorn", "prometheus_client", "boto3", "botocore")
"""Top-level packages of the service and its dependencies (botocore: only to sign)."""

PROGRAM = r"""
import importlib.abc, sys
BLOCKED = set(sys.argv[1].split(","))


class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} may not be imported by the client")
        return None


sys.meta_path.insert(0, Block())
import asyncio, json, httpx
with_httpx = sorted(sys.modules)
import derender_client
from derender_client import BearerToken, astream_derender, stream_derender

seen = []


def answer(request):
    body = json.loads(request.content)
    seen.append((request.url.path, request.headers.get("authorization"),
                 body.get("stream_state")))
    text = str(body["generate_chunk"]["choices"][0]["token_ids"])
    return httpx.Response(200, json={"chunk": {"choices": [{"index": 0, "delta": {
        "content": text}}]}, "stream_state": {"prev_tokens": [f"s{len(seen)}"]}})


engine = [f'data: {{"choices": [{{"index": 0, "token_ids": [{i}]}}]}}' for i in (1, 2)]
http = httpx.Client(transport=httpx.MockTransport(answer), base_url="http://derender")
sync = [c["choices"][0]["delta"]["content"] for c in stream_derender(
    [*engine, "data: [DONE]"], base_url="http://derender", client=http,
    auth=BearerToken("t"))]


async def run():
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer),
                                 base_url="http://derender") as client:
        return [c["choices"][0]["delta"]["content"] async for c in astream_derender(
            engine, base_url="http://derender", client=client, route="completions",
            max_batch=1)]

print(json.dumps({"sync": sync, "async": asyncio.run(run()), "seen": seen,
                  "with_httpx": with_httpx, "modules": sorted(sys.modules)}))
"""


def _project() -> dict[str, object]:
    data = tomllib.loads((CLIENT / "pyproject.toml").read_text(encoding="utf-8"))
    project: dict[str, object] = data["project"]
    return project


def _closure(name: str, extra: str = "") -> set[str]:
    """The distribution and everything it requires (with ``extra`` of its own), as installed."""
    found: set[str] = set()
    todo = [(name, extra)]
    while todo:
        current, wanted = todo.pop()
        current = canonicalize_name(current)
        if current in found and not wanted:
            continue
        found.add(current)
        environment = {**default_environment(), "extra": wanted}
        for line in metadata.requires(current) or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate(environment):
                todo.append((requirement.name, ""))
    return found


def test_the_client_imports_nothing_of_the_service() -> None:
    """A fresh interpreter where importing the service (or botocore) fails: the client loads
    and streams, sync and async, and loads nothing but the standard library beyond what
    ``import httpx`` itself loads (httpx and what it requires, its CLI's packages when they
    are installed)."""
    env = {"PYTHONPATH": str(CLIENT), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", PROGRAM, ",".join(SERVICE)], cwd=CLIENT,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["sync"] == ["[1]", "[2]"]
    assert result["async"] == ["[1]", "[2]"]
    assert [path for path, _, _ in result["seen"]] == [
        "/v1/chat/completions/derender"] * 2 + ["/v1/completions/derender"] * 2
    assert [auth for _, auth, _ in result["seen"]] == ["Bearer t", "Bearer t", None, None]
    assert [state for _, _, state in result["seen"]] == [
        None, {"prev_tokens": ["s1"]}, None, {"prev_tokens": ["s3"]}]
    tops = {name.split(".")[0] for name in result["modules"]}
    assert not tops & set(SERVICE)
    with_httpx = {name.split(".")[0] for name in result["with_httpx"]}
    added = tops - with_httpx - set(sys.stdlib_module_names) - {"derender_client"}
    assert not {top for top in added if not top.startswith("_")}, added
    # what httpx loaded is its own closure (its CLI's too, which it imports when installed)
    owners = metadata.packages_distributions()
    third_party = {canonicalize_name(dist) for top in with_httpx - set(sys.stdlib_module_names)
                   if not top.startswith("_") for dist in owners.get(top, [top])}
    assert third_party <= _closure("httpx", "cli"), third_party - _closure("httpx", "cli")


def test_httpx_is_the_one_dependency_and_botocore_the_sigv4_extra() -> None:
    project = _project()
    assert project["name"] == "derender-client"
    dependencies = [Requirement(line) for line in project["dependencies"]]  # type: ignore[attr-defined]
    extras = {name: [Requirement(line) for line in lines]
              for name, lines in project["optional-dependencies"].items()}  # type: ignore[attr-defined]
    assert [r.name for r in dependencies] == ["httpx"]
    assert {name: [r.name for r in lines] for name, lines in extras.items()} == {
        "sigv4": ["botocore"]}
    # bounded ranges (no lock of its own): the root uv.lock pins what the tests run
    assert not (CLIENT / "uv.lock").exists()
    locked = {package["name"]: Version(package["version"]) for package in tomllib.loads(
        (ROOT / "uv.lock").read_text(encoding="utf-8"))["package"] if "version" in package}
    for requirement in [*dependencies, *extras["sigv4"]]:
        assert any(spec.operator == "<" for spec in requirement.specifier), requirement
        assert requirement.specifier.contains(locked[requirement.name]), (
            requirement, locked[requirement.name])


def test_the_client_names_its_version_as_setuptools_reads_it() -> None:
    """``pyproject.toml`` takes the version from ``derender_client.__version__``, a literal
    (read without importing the module); ``tests/test_contract.py`` checks it is derender's."""
    project = _project()
    assert project["dynamic"] == ["version"]
    source = (CLIENT / "derender_client" / "__init__.py").read_text(encoding="utf-8")
    assert re.search(r'^__version__ = "\d+\.\d+\.\d+"$', source, re.M)
    assert (CLIENT / "derender_client" / "py.typed").exists()


def test_the_service_does_not_import_the_client() -> None:
    """Neither way round: the service's wheel and layers never need the client."""
    for path in sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "functions").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            assert not [n for n in names if n.split(".")[0] == "derender_client"], path
    assert not (ROOT / "src" / "derender" / "client.py").exists()
