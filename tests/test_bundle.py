"""The built Lambda layers, run the way Lambda runs them.

``scripts/build-layers.sh`` builds both layers for this machine's architecture (the deployed
arm64 build differs only in the wheels pip picks; CI builds it too, through ``sam build``).
Every event of ``events/`` then goes through the real handlers in a fresh Python 3.12 with
nothing on ``sys.path`` but the function's folder and the dependencies layer, and the models
folder of the tokenizer layer, and must get the answer ``test_lambda_events`` expects.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from derender_testing.models import ROOT
from tests.test_lambda_events import EVENTS, cases, check_response

ARCH = {"x86_64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine())

DROPPED = ("huggingface_hub", "hf_xet", "fsspec", "filelock", "tqdm", "yaml", "boto3",
           "botocore")
"""Top-level packages decoding never imports: huggingface-hub (``tokenizers`` requires it for
``from_pretrained`` downloads only) and what only it needs; boto3 is in Lambda's runtime."""

RUNNER = """
import json, sys
deps, events = sys.argv[1], sys.argv[2]
answers = {}
for function, names in json.loads(sys.argv[3]).items():
    sys.path[:0] = [sys.argv[4] + "/" + function, deps]
    sys.modules.pop("handler", None)
    import handler
    for name in names:
        event = json.load(open(f"{events}/{name}.json", encoding="utf-8"))
        answers[f"{name} {function}"] = handler.handler(event, None)
    del sys.path[:2]
print(json.dumps({"answers": answers, "modules": sorted(sys.modules)}))
"""


def _lambda_python() -> str | None:
    found = subprocess.run([str(ROOT / "scripts/lambda-python.sh")], capture_output=True,
                           text=True, check=False)
    return found.stdout.strip() if found.returncode == 0 else None


LAMBDA_PYTHON = _lambda_python()


@pytest.fixture(scope="module")
def layers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if ARCH is None:
        pytest.skip(f"no Lambda architecture matches this machine ({platform.machine()})")
    if LAMBDA_PYTHON is None:
        pytest.skip("no Python 3.12 (Lambda's runtime) on this machine: set LAMBDA_PYTHON")
    out = tmp_path_factory.mktemp("layers")
    subprocess.run([str(ROOT / "scripts/build-layers.sh"), ARCH, str(out), sys.executable,
                    LAMBDA_PYTHON], check=True, cwd=ROOT, capture_output=True, timeout=600)
    return out


@pytest.fixture(scope="module")
def served(layers: Path) -> dict[str, Any]:
    """Every event's answer from the built layers, and the modules that were imported."""
    assert LAMBDA_PYTHON is not None
    names: dict[str, list[str]] = {}
    for name, function in cases():
        names.setdefault(function, []).append(name)
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1",
           "DERENDER_MODELS_DIR": str(layers / "tokenizers/tokenizers"),
           "DERENDER_SIGNING_KEYS": "bundle:" + "0123456789abcdef" * 2}
    done = subprocess.run(
        [LAMBDA_PYTHON, "-S", "-c", RUNNER, str(layers / "deps/python"), str(EVENTS),
         json.dumps(names), str(ROOT / "functions")],
        capture_output=True, text=True, check=True, env=env, timeout=300)
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize(("name", "function"), list(cases()))
def test_every_event_through_the_built_layers(served: dict[str, Any], name: str,
                                              function: str) -> None:
    response = served["answers"][f"{name} {function}"]
    check_response(name, response, json.loads(response["body"]))


def test_the_dependencies_layer_leaves_out_what_decoding_never_uses(layers: Path) -> None:
    deps = layers / "deps/python"
    assert {"derender", "fastapi", "pydantic", "pydantic_core", "tokenizers", "mangum",
            "starlette"} <= {p.name for p in deps.iterdir()}
    assert not [name for name in DROPPED if (deps / name).exists()]
    assert not (deps / "bin").exists()


def test_serving_imports_nothing_that_was_left_out(served: dict[str, Any]) -> None:
    imported = {module.split(".")[0] for module in served["modules"]}
    assert not imported & set(DROPPED)


def test_the_dependencies_layer_is_byte_compiled_for_python_3_12(layers: Path) -> None:
    """Lambda's /opt is read-only: without these every cold start compiles every module.
    Unchecked hash-based .pyc files (PEP 552 flags 0b01) are used without reading the source's
    timestamp, which a zip file does not keep exactly."""
    sources = list((layers / "deps/python").rglob("*.py"))
    assert len(sources) > 100  # the libraries, not an empty folder
    for source in sources:
        compiled = source.parent / "__pycache__" / f"{source.stem}.cpython-312.pyc"
        assert compiled.is_file(), source
        assert int.from_bytes(compiled.read_bytes()[4:8], "little") == 0b01, compiled


def test_the_tokenizer_layer_ships_decode_only_folders(layers: Path) -> None:
    models = layers / "tokenizers/tokenizers"
    assert sorted(p.name for p in models.iterdir()) == ["qwen3"]
    shipped = {p.name for p in (models / "qwen3").iterdir()}
    assert "decode.json" in shipped and "tokenizer.json" not in shipped
    assert {"NOTICE.md", "tokenizer_config.json", "generation_config.json"} <= shipped
