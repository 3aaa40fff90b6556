"""The served models: Hugging Face style folders, selected by the request's ``model``.

A models folder holds one folder per model: ``tokenizer.json`` or its decode-only form
``decode.json``, or instead Mistral's ``tekken.json`` or a Kimi-style ``tiktoken.model``
(``core/decoding/bytevocab.py``; one of these is required, the first found in that order is read),
``tokenizer_config.json`` (special tokens, EOS),
``generation_config.json`` (extra EOS ids), ``config.json`` (``max_position_embeddings`` →
max_model_len) and an optional ``derender.json`` manifest (``served_names``,
``reasoning_parser``, ``tool_parser``, ``max_model_len``, ``max_logprobs``). A ``config.json``
with ``model_type`` "gpt_oss" makes the model a Harmony one, as in vLLM: its reasoning parser
is ``openai_gptoss`` unless the manifest names one, and only the Harmony parsers fit it.
Parser names are checked against the format records (``core/parsers/registry.py``) and the
machines of the formats the folders use are imported at start-up (no other format's module
is). Folders are listed at start-up; a model's tokenizer is loaded on its first request and
kept for the life of the process (a Lambda container).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from derender.core.decoding.bytevocab import tekken_spec, tiktoken_spec
from derender.core.decoding.vocab import Vocabulary, decode_spec
from derender.core.errors import NotFoundError
from derender.core.parsers import harmony_tokens, load, pairing_error
from derender.core.parsers.registry import (
    REASONING_BY_NAME,
    TOOLS_BY_NAME,
    Machine,
    ReasoningRecord,
    ToolRecord,
)

log = logging.getLogger("derender")

MANIFEST = "derender.json"
TOKENIZER = "tokenizer.json"
DECODE_SPEC = "decode.json"
"""A model's ``decode_spec`` (what ``derender.compact`` writes for the layer); preferred to
``tokenizer.json``, which it replaces there."""
TEKKEN = "tekken.json"
TIKTOKEN = "tiktoken.model"
ORIGINALS = (TOKENIZER, TEKKEN, TIKTOKEN)
"""The tokenizer files a decode spec is made from, in the order they are looked for."""
DEFAULT_MAX_MODEL_LEN = 2048
DEFAULT_MAX_LOGPROBS = 20
HARMONY_REASONING = next(r for r in REASONING_BY_NAME.values() if r.machine is Machine.HARMONY)
HARMONY_TOOLS = next(r for r in TOOLS_BY_NAME.values() if r.machine is Machine.HARMONY)
"""The Harmony parsers (gpt-oss models only; the reasoning one is their default)."""
_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                "max_target_positions", "max_sequence_length", "n_ctx")
"""``config.json`` keys that bound the context, as vLLM reads them (the smallest wins)."""


@dataclass(frozen=True)
class ModelInfo:
    """What the folder and its manifest say, known without loading the tokenizer."""

    folder: Path
    served_names: tuple[str, ...]
    max_model_len: int
    max_logprobs: int
    """Candidates allowed per logprob position; -1 means unlimited."""
    reasoning_parser: str | None
    tool_parser: str | None
    response_template: Any = None
    """The checked ``response_template`` of ``tokenizer_config.json``, read at start-up when a
    response-template parser (``hf``, ``beam``) is named (``formats/response_template.py``)."""

    @property
    def name(self) -> str:
        """Primary served name (the one responses carry when ``model`` is empty)."""
        return self.served_names[0]

    @property
    def has_parser(self) -> bool:
        return self.reasoning_parser is not None or self.tool_parser is not None


@dataclass(frozen=True)
class ServedModel:
    """A model ready to derender: its settings and its loaded vocabulary."""

    info: ModelInfo
    vocab: Vocabulary


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


ParserChoice = tuple[str | None, str | None]
"""(reasoning parser, tool parser) of a model; None for none."""


def read_model_info(folder: Path, parsers: ParserChoice | None = None,
                    overrides: Mapping[str, Any] | None = None) -> ModelInfo:
    """Describe one model folder from its config files and manifest; ``overrides`` (manifest
    entries from the command line) and then ``parsers`` (from configuration) replace the
    manifest's."""
    manifest = {**_read_json(folder / MANIFEST), **(overrides or {})}
    config = _read_json(folder / "config.json")
    names = manifest.get("served_names") or [folder.name]
    if parsers is not None:
        manifest["reasoning_parser"], manifest["tool_parser"] = parsers
    is_harmony = config.get("model_type") == "gpt_oss"
    if is_harmony and manifest.get("reasoning_parser") is None:
        manifest["reasoning_parser"] = HARMONY_REASONING.name
    known: Mapping[str, ToolRecord | ReasoningRecord]
    for key, known in (("reasoning_parser", REASONING_BY_NAME), ("tool_parser", TOOLS_BY_NAME)):
        name = manifest.get(key)
        if name is not None and name not in known:
            raise RuntimeError(f"{folder.name}: {key} {name!r} is not implemented "
                               f"(available: {', '.join(sorted(known))})")
        if name is not None and (known[name].machine is Machine.HARMONY) != is_harmony:
            raise RuntimeError(
                f"{folder.name}: {key} {name!r} does not fit the model: gpt-oss (model_type "
                f"gpt_oss) output is Harmony, read by the {HARMONY_REASONING.name!r} reasoning "
                f"and {HARMONY_TOOLS.name!r} tool parsers only, and they read nothing else")
    pairing = pairing_error(manifest.get("reasoning_parser"), manifest.get("tool_parser"))
    if pairing is not None:
        raise RuntimeError(f"{folder.name}: {pairing}")
    records = (REASONING_BY_NAME.get(manifest.get("reasoning_parser") or ""),
               TOOLS_BY_NAME.get(manifest.get("tool_parser") or ""))
    template = (_response_template(folder, manifest)
                if any(r is not None and r.machine is Machine.TEMPLATE for r in records)
                else None)
    # vLLM reads the context bound from the text model's config (``get_hf_text_config``):
    # ``text_config`` where the folder nests one (Kimi K3)
    text_config = config.get("text_config")
    bounds = text_config if isinstance(text_config, dict) else config
    lengths = [v for k in _LENGTH_KEYS if isinstance(v := bounds.get(k), int) and v > 0]
    max_len = manifest.get("max_model_len") or min(lengths, default=None)
    return ModelInfo(
        folder=folder,
        served_names=tuple(str(n) for n in names),
        max_model_len=int(max_len or DEFAULT_MAX_MODEL_LEN),
        max_logprobs=int(manifest.get("max_logprobs", DEFAULT_MAX_LOGPROBS)),
        reasoning_parser=manifest.get("reasoning_parser"),
        tool_parser=manifest.get("tool_parser"),
        response_template=template,
    )


def _response_template(folder: Path, manifest: Mapping[str, Any]) -> Any:
    """The folder's checked ``response_template`` (its ``tokenizer_config.json`` key, where
    Hugging Face tokenizers and vLLM read it); RuntimeError naming the folder and the reason
    when it is missing or derender cannot read it."""
    from derender.core.parsers.formats import response_template  # noqa: PLC0415 (served only)
    names = " and ".join(f"{key} {manifest[key]!r}" for key in ("reasoning_parser",
                                                                  "tool_parser")
                         if manifest.get(key))
    raw = _read_json(folder / "tokenizer_config.json").get("response_template")
    if raw is None:
        raise RuntimeError(f"{folder.name}: {names} requires `response_template` metadata in "
                           "the tokenizer configuration (tokenizer_config.json)")
    try:
        template = response_template.load_template(raw)
    except response_template.TemplateError as error:
        raise RuntimeError(f"{folder.name}: its response_template cannot be read: "
                           f"{error}") from None
    fields = {f.name for f in template.fields}
    for key, needed in (("reasoning_parser", "thinking"), ("tool_parser", "tool_calls")):
        if manifest.get(key) and needed not in fields:
            raise RuntimeError(f"{folder.name}: {key} {manifest[key]!r} requires a "
                               f"response_template with a {needed} field")
    return template


def original_tokenizer(folder: Path) -> Path | None:
    """The folder's tokenizer file other than ``decode.json`` (``ORIGINALS`` order), if any."""
    return next((folder / name for name in ORIGINALS if (folder / name).is_file()), None)


def original_spec(folder: Path) -> dict[str, Any]:
    """The decode spec of the folder's original tokenizer file."""
    path = original_tokenizer(folder)
    if path is None:
        raise FileNotFoundError(f"{folder}: no {', '.join(ORIGINALS)}")
    if path.name == TEKKEN:
        return tekken_spec(json.loads(path.read_bytes()))
    if path.name == TIKTOKEN:
        return tiktoken_spec(path.read_bytes(), _read_json(folder / "tokenizer_config.json"))
    return decode_spec(json.loads(path.read_bytes()))


def load_vocabulary(folder: Path) -> Vocabulary:
    """A folder's vocabulary, from its decode spec if it has one (the layer's folders), else
    from its original tokenizer file."""
    spec_file = folder / DECODE_SPEC
    spec = json.loads(spec_file.read_bytes()) if spec_file.is_file() else original_spec(folder)
    return Vocabulary.load(spec, _read_json(folder / "tokenizer_config.json"),
                           _read_json(folder / "generation_config.json"))


def is_model_folder(folder: Path) -> bool:
    return (folder / DECODE_SPEC).is_file() or original_tokenizer(folder) is not None


def model_folders(models_dir: Path, skip_unservable: bool = False) -> list[Path]:
    """The model folders of a models folder, in name order. A folder without a tokenizer
    file stops the start-up, named, unless ``skip_unservable`` (then it is logged and
    skipped); hidden folders and files are ignored."""
    if not models_dir.is_dir():
        raise RuntimeError(f"the models folder {models_dir} does not exist or is not a folder")
    try:
        entries = sorted(p for p in models_dir.iterdir()
                         if p.is_dir() and not p.name.startswith("."))
    except OSError as error:
        raise RuntimeError(f"the models folder {models_dir} cannot be read: {error}") from None
    folders = [p for p in entries if is_model_folder(p)]
    unservable = [p.name for p in entries if p not in folders]
    if unservable and not skip_unservable:
        raise RuntimeError(
            f"{models_dir}: folders without a {DECODE_SPEC} or {', '.join(ORIGINALS)} cannot "
            f"be served: {', '.join(unservable)} (remove them, or set "
            f"DERENDER_SKIP_UNSERVABLE=true to skip them)")
    for name in unservable:
        log.warning("skipping %s: no %s or %s", models_dir / name, DECODE_SPEC,
                    ", ".join(ORIGINALS))
    if not folders:
        raise RuntimeError(f"no model folder with a {DECODE_SPEC}, "
                           f"{', '.join(ORIGINALS)} in {models_dir}")
    return folders


class ModelRegistry:
    """Served names → models; loads each tokenizer once, safely under concurrent requests."""

    def __init__(self, models_dir: Path | None, default_model: str | None = None,
                 parsers: Mapping[str, ParserChoice] | None = None, *,
                 folders: list[Path] | None = None,
                 manifests: Mapping[str, Mapping[str, Any]] | None = None,
                 skip_unservable: bool = False) -> None:
        """``parsers``: per model folder name, parsers replacing its manifest's;
        ``folders``: model folders to serve instead of those of ``models_dir``;
        ``manifests``: per folder name, manifest entries replacing the folder's."""
        if folders is None:
            if models_dir is None:
                raise RuntimeError("no models folder and no model folders given")
            folders = model_folders(models_dir, skip_unservable)
        else:
            for folder in folders:
                if not is_model_folder(folder):
                    raise RuntimeError(f"{folder}: not a model folder (no {DECODE_SPEC} or "
                                       f"{', '.join(ORIGINALS)})")
            if len({folder.name for folder in folders}) != len(folders):
                raise RuntimeError("two model folders share a name: "
                                   f"{', '.join(str(f) for f in folders)}")
        parsers = parsers or {}
        manifests = manifests or {}
        unknown = (set(parsers) | set(manifests)) - {folder.name for folder in folders}
        if unknown:
            raise RuntimeError(f"parsers configured for unknown model folders: "
                               f"{', '.join(sorted(unknown))}")
        self._infos = [read_model_info(folder, parsers.get(folder.name),
                                       manifests.get(folder.name)) for folder in folders]
        for info in self._infos:  # the served formats' machines, and only theirs
            load(info.reasoning_parser, info.tool_parser)
        self._by_name: dict[str, ModelInfo] = {}
        for info in self._infos:
            for name in info.served_names:
                if name in self._by_name:
                    raise RuntimeError(f"served name {name!r} is used by two model folders")
                self._by_name[name] = info
        if default_model is not None and default_model not in self._by_name:
            raise RuntimeError(f"default model {default_model!r} is not a served name "
                               f"(served: {', '.join(self._by_name)})")
        self._default = self._by_name[default_model] if default_model else self._infos[0]
        self._loaded: dict[Path, ServedModel] = {}
        self._lock = threading.Lock()

    @property
    def names(self) -> list[str]:
        """Every served name, default model's first."""
        ordered = [self._default, *(i for i in self._infos if i is not self._default)]
        return [name for info in ordered for name in info.served_names]

    @property
    def infos(self) -> list[ModelInfo]:
        return list(self._infos)

    def info(self, requested: str | None) -> ModelInfo:
        """The model a request names (null or empty: the default); 404 for unknown names."""
        if not requested:
            return self._default
        info = self._by_name.get(requested)
        if info is None:
            raise NotFoundError(
                f"The model `{requested}` does not exist. Valid aliases: {', '.join(self.names)}.",
                param="model",
            )
        return info

    def get(self, requested: str | None) -> ServedModel:
        """The loaded model a request names."""
        info = self.info(requested)
        model = self._loaded.get(info.folder)
        if model is None:
            with self._lock:
                model = self._loaded.get(info.folder)
                if model is None:
                    model = ServedModel(info, load_vocabulary(info.folder))
                    if info.reasoning_parser == HARMONY_REASONING.name:
                        try:
                            harmony_tokens(model.vocab)
                        except ValueError as error:
                            raise RuntimeError(f"{info.folder.name}: {error}") from None
                    self._loaded[info.folder] = model
        return model
