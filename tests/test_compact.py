"""The layer's decode-only model folders (``derender.compact``) against the original tokenizers.

The reference is each model's own ``tokenizer.json`` loaded by the ``tokenizers`` library
(``verify_folder``), and the vocabulary the service builds from the original file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from derender.app.main import create_app
from derender.compact import SAMPLE, CompactionError, compact_folder, main, verify_folder
from derender.core.registry import DECODE_SPEC, TOKENIZER, ModelRegistry, load_vocabulary
from derender.settings import Settings
from derender_testing.models import (
    LAYER_MODELS,
    MODEL_NAMES,
    ROOT,
    model_folder,
    require_model,
    tokenizer,
    vocabulary,
)

CORPUS = (ROOT / "bench" / "corpus.txt").read_text(encoding="utf-8")


PADDED = {"kimi-k2-standin", "granite4-standin", "internlm2-standin", "olmo3-standin",
          "kimi-k3-standin",
          "muse-spark-standin",  # muse branch
          "cohere-standin"}  # cohere branch
"""Stand-ins whose GPT-2 vocabulary is padded with unreachable entries up to the real special
tokens' ids (Kimi K2: 113,327 of them): the padding does not compact."""


@pytest.fixture(scope="module")
def compacted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every test model's folder, compacted once."""
    root = tmp_path_factory.mktemp("compacted")
    for name in MODEL_NAMES:
        if (model_folder(name) / TOKENIZER).is_file():
            compact_folder(model_folder(name), root / name)
    return root


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_a_compacted_folder_decodes_as_the_original(compacted: Path, name: str) -> None:
    require_model(name)
    result = verify_folder(model_folder(name), compacted / name, [SAMPLE, CORPUS])
    assert result.ids == tokenizer(name).get_vocab_size(with_added_tokens=True)
    assert (result.texts, result.random_sequences) == (2, 2000)
    if name not in PADDED:
        assert result.compacted_bytes < result.original_bytes / 2


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_a_compacted_folder_has_the_same_vocabulary(compacted: Path, name: str) -> None:
    require_model(name)
    original, compact = vocabulary(name), load_vocabulary(compacted / name)
    for field in ("pieces", "holes", "added_ids", "special_ids", "eos_id", "model_eos_ids",
                  "space_marker", "fast_path"):
        assert getattr(compact, field) == getattr(original, field), field
    assert not (compacted / name / TOKENIZER).exists()
    kept = {p.name for p in model_folder(name).iterdir()} - {TOKENIZER}
    assert kept <= {p.name for p in (compacted / name).iterdir()}


def _tampered(tmp_path: Path, change: str) -> Path:
    folder = tmp_path / "qwen3"
    compact_folder(model_folder("qwen3"), folder)
    spec = json.loads((folder / DECODE_SPEC).read_text(encoding="utf-8"))
    if change == "piece":
        spec["pieces"][9707] = "Ġhello"  # was "Hello"
    elif change == "swap":
        spec["pieces"][100], spec["pieces"][101] = spec["pieces"][101], spec["pieces"][100]
    elif change == "decoder":
        spec["decoder"] = None
    elif change == "special":
        spec["added_ids"].remove(151645)  # <|im_end|>: an added token, the EOS
        spec["pieces"][151645] = "<|im_end|> "
    (folder / DECODE_SPEC).write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    return folder


@pytest.mark.parametrize("change", ["piece", "swap", "decoder", "special"])
def test_verification_catches_a_difference(tmp_path: Path, change: str) -> None:
    folder = _tampered(tmp_path, change)
    with pytest.raises(CompactionError):
        verify_folder(model_folder("qwen3"), folder, [SAMPLE])


def test_an_unknown_spec_version_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "qwen3"
    compact_folder(model_folder("qwen3"), folder)
    spec = json.loads((folder / DECODE_SPEC).read_text(encoding="utf-8"))
    for version in (3, 2):  # 2 is the version of tekken/tiktoken specs, which have a kind
        spec["version"] = version
        (folder / DECODE_SPEC).write_text(json.dumps(spec), encoding="utf-8")
        with pytest.raises(ValueError, match=r"rebuild it with derender\.compact"):
            load_vocabulary(folder)


def test_the_command_compacts_every_model_folder(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(LAYER_MODELS), str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in LAYER_MODELS.iterdir() if (p / TOKENIZER).is_file())
    assert "decode identically" in capsys.readouterr().out


def test_the_command_fails_on_a_folder_without_models(tmp_path: Path) -> None:
    assert main([str(tmp_path), str(tmp_path / "out")]) == 1


def test_a_compacted_folder_is_served_like_the_original(tmp_path: Path) -> None:
    """The README's first example, from the decode-only folder: same body as the original."""
    compact_folder(model_folder("qwen3"), tmp_path / "qwen3")
    body = {"model": "qwen3", "prompt_tokens": 12,
            "generate_response": {"request_id": "req-1", "choices": [
                {"index": 0, "token_ids": [9707, 1879, 0, 2585, 525, 498, 151645],
                 "finish_reason": "stop"}]},
            "chat_request": {"messages": [{"role": "user", "content": "hi"}]}}
    answers = []
    for models in (tmp_path, LAYER_MODELS):
        client = TestClient(create_app(Settings(models_dir=models), ModelRegistry(models)))
        response = client.post("/v1/chat/completions/derender", json=body)
        assert response.status_code == 200
        answers.append({k: v for k, v in response.json().items() if k != "created"})
    assert answers[0] == answers[1]
    assert answers[0]["choices"][0]["message"]["content"] == "Hello world! How are you"
