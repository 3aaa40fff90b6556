"""Model registry: folders, manifests, served names, defaults (expected values from the
fixture corpus README's model table and the README's Models section)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from derender.core.errors import NotFoundError
from derender.core.registry import ModelRegistry, read_model_info
from derender.settings import Settings
from derender_testing.models import model_folder, require_model, vocabulary

# test model -> (primary EOS, generation_config EOS ids, max_model_len), fixture README table
# (``deepseek-v4`` is the folder the README's ``deepseek-v3`` server loaded)
MODELS = {
    "qwen3": (151645, {151645, 151643}, 40960),
    "mistral-7b": (2, {2}, 32768),
    "deepseek-v4": (1, {1}, 163840),
    "gpt2": (50256, {50256}, 1024),
    "llama3.1": (128009, {128001, 128008, 128009}, 131072),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_facts_match_the_recorded_servers(name: str) -> None:
    require_model(name)
    eos, model_eos, max_len = MODELS[name]
    vocab = vocabulary(name)
    assert vocab.eos_id == eos
    assert vocab.model_eos_ids == model_eos
    assert read_model_info(model_folder(name)).max_model_len == max_len


def _copy(src: str, dest: Path, manifest: dict[str, object] | None = None) -> Path:
    folder = dest / src
    shutil.copytree(model_folder(src), folder)
    if manifest is not None:
        (folder / "derender.json").write_text(json.dumps(manifest))
    return folder


def test_manifest_names_default_and_404(tmp_path: Path) -> None:
    _copy("gpt2", tmp_path, {"served_names": ["gpt-2", "gpt2-small"], "max_logprobs": 5})
    _copy("mistral-7b", tmp_path)
    registry = ModelRegistry(tmp_path)
    assert registry.names == ["gpt-2", "gpt2-small", "mistral-7b"]
    assert registry.info(None).name == "gpt-2"  # first folder by name
    assert registry.info("").name == "gpt-2"
    assert registry.info("gpt2-small").max_logprobs == 5
    assert registry.info("mistral-7b").served_names == ("mistral-7b",)
    with pytest.raises(NotFoundError) as caught:
        registry.info("gpt2")
    assert caught.value.message == ("The model `gpt2` does not exist. Valid aliases: gpt-2, "
                                    "gpt2-small, mistral-7b.")
    assert caught.value.param == "model"
    other = ModelRegistry(tmp_path, default_model="mistral-7b")
    assert other.info(None).name == "mistral-7b"
    assert other.names[0] == "mistral-7b"
    assert other.get("gpt-2") is other.get("gpt2-small")


def test_configuration_mistakes_stop_start_up(tmp_path: Path) -> None:
    _copy("gpt2", tmp_path, {"served_names": ["same"]})
    _copy("mistral-7b", tmp_path, {"served_names": ["same"]})
    with pytest.raises(RuntimeError, match="used by two model folders"):
        ModelRegistry(tmp_path)
    with pytest.raises(RuntimeError, match="missing does not exist or is not a folder"):
        ModelRegistry(tmp_path / "missing")
    single = tmp_path / "single"
    single.mkdir()
    _copy("gpt2", single)
    with pytest.raises(RuntimeError, match="not a served name"):
        ModelRegistry(single, default_model="gpt-4")
    parsers = tmp_path / "parsers"
    parsers.mkdir()
    _copy("gpt2", parsers, {"tool_parser": "no-such-parser"})
    with pytest.raises(RuntimeError, match="not implemented"):
        ModelRegistry(parsers)
    engine = tmp_path / "engine"
    engine.mkdir()
    # an engine reasoning parser with another family's tool parser serves, as in vLLM (the
    # engine reads the reasoning first: recordings 8200-8309)
    _copy("gpt2", engine, {"reasoning_parser": "deepseek_v4", "tool_parser": "deepseek_v32"})
    assert ModelRegistry(engine).info("gpt2").tool_parser == "deepseek_v32"
    (engine / "gpt2" / "derender.json").write_text(
        '{"reasoning_parser": "glm45", "tool_parser": "glm47"}')
    assert ModelRegistry(engine).info("gpt2").tool_parser == "glm47"


def test_settings_from_environment(tmp_path: Path) -> None:
    settings = Settings.from_env({"DERENDER_MODELS_DIR": str(tmp_path),
                                  "DERENDER_DEFAULT_MODEL": "gpt2",
                                  "DERENDER_MAX_N_SEQUENCES": "8",
                                  "DERENDER_STATE_TTL_SECONDS": "60"})
    assert settings.models_dir == tmp_path
    assert settings.default_model == "gpt2"
    assert settings.max_n_sequences == 8
    assert settings.state_ttl_seconds == 60
    assert not settings.on_lambda
    assert Settings.from_env({"AWS_LAMBDA_FUNCTION_NAME": "f"}).on_lambda
    with pytest.raises(ValueError, match="DERENDER_MAX_BODY_BYTES must be an integer"):
        Settings.from_env({"DERENDER_MAX_BODY_BYTES": "lots"})


def test_configuration_chooses_parsers_over_the_manifest(tmp_path: Path) -> None:
    _copy("gpt2", tmp_path, {"reasoning_parser": "qwen3"})
    _copy("mistral-7b", tmp_path)
    plain = ModelRegistry(tmp_path)
    assert (plain.info("gpt2").reasoning_parser, plain.info("gpt2").tool_parser) == ("qwen3", None)
    chosen = ModelRegistry(tmp_path, parsers={"gpt2": (None, None),
                                              "mistral-7b": ("deepseek_r1", "hermes")})
    assert not chosen.info("gpt2").has_parser
    assert (chosen.info("mistral-7b").reasoning_parser,
            chosen.info("mistral-7b").tool_parser) == ("deepseek_r1", "hermes")
    with pytest.raises(RuntimeError, match="unknown model folders: llama"):
        ModelRegistry(tmp_path, parsers={"llama": ("qwen3", None)})
    with pytest.raises(RuntimeError, match="not implemented"):
        ModelRegistry(tmp_path, parsers={"gpt2": ("no_such_parser", None)})
    spec = "qwen3:qwen3:hermes, deepseek-v4:deepseek_r1:"
    settings = Settings.from_env({"DERENDER_PARSERS": spec})
    assert settings.parsers == {"qwen3": ("qwen3", "hermes"), "deepseek-v4": ("deepseek_r1", None)}
    with pytest.raises(ValueError, match="folder:reasoning_parser:tool_parser"):
        Settings.from_env({"DERENDER_PARSERS": "qwen3=hermes"})


def test_unservable_folders_are_named_unless_skipping_is_asked(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A folder without a tokenizer file stops the start-up, named (issue 23: such folders
    were skipped without a word); DERENDER_SKIP_UNSERVABLE skips them, with a warning."""
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RuntimeError, match=r"no model folder with a decode\.json"):
        ModelRegistry(empty)
    models = tmp_path / "models"
    models.mkdir()
    _copy("gpt2", models)
    (models / "half-copied").mkdir()
    (models / "half-copied" / "config.json").write_text("{}")
    (models / ".cache").mkdir()  # hidden folders are not model folders
    (models / "README.md").write_text("not a folder")
    with pytest.raises(RuntimeError, match=r"cannot be served: half-copied \(remove them, "
                                           r"or set DERENDER_SKIP_UNSERVABLE=true"):
        ModelRegistry(models)
    with caplog.at_level("WARNING", logger="derender"):
        registry = ModelRegistry(models, skip_unservable=True)
    assert registry.names == ["gpt2"]
    assert "skipping" in caplog.text and "half-copied" in caplog.text


def test_explicit_folders_and_manifest_overrides(tmp_path: Path) -> None:
    """``derender serve DIR --served-model-name … --tool-call-parser …``: the folders given,
    with manifest entries from the command line replacing the folder's own."""
    gpt2 = _copy("gpt2", tmp_path, {"served_names": ["from-manifest"], "max_model_len": 64})
    registry = ModelRegistry(None, folders=[gpt2], manifests={"gpt2": {
        "served_names": ["cli-name"], "tool_parser": "hermes", "max_model_len": 32}})
    info = registry.info("cli-name")
    assert registry.names == ["cli-name"]
    assert (info.tool_parser, info.reasoning_parser, info.max_model_len) == ("hermes", None, 32)
    with pytest.raises(RuntimeError, match="not a model folder"):
        ModelRegistry(None, folders=[tmp_path])
    with pytest.raises(RuntimeError, match="unknown model folders: other"):
        ModelRegistry(None, folders=[gpt2], manifests={"other": {"max_model_len": 8}})
