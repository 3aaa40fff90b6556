"""Test model folders without ``tokenizer.json``, derived from ``mistral_common``'s package data.

Standard library only: ``scripts/byte_vocab_fixtures.py`` runs this in the vLLM peer's
environment to record the references, and the tests build the same folders (git-ignored)
from the ``mistral_common`` wheel of the ``dev`` extra.

- ``tekken-v3``: ``mistral_common/data/tekken_240911.json`` as it is (Mistral Nemo's tekken,
  v3: no ``special_tokens`` list, so the 20 legacy names then ``<SPECIAL_20>``…; 131,072 ids).
- ``tekken-v13``: the same vocabulary with a v13 ``special_tokens`` list (the legacy 20, then
  ``[AUDIO]``, ``[BEGIN_AUDIO]``, ``[TRANSCRIBE]``, ``[ARGS]``, ``[CALL_ID]``, ``[THINK]``,
  ``[/THINK]``), as Magistral-era files have, so ``[ARGS]``/``[THINK]``/``[/THINK]`` are special.
- ``kimi-tiktoken``: a ``tiktoken.model`` written from the same file's 130,072 byte tokens
  (rank = tekken rank), with a Kimi K2-style ``tokenizer_config.json`` naming some of the 258
  special ids after them (one name, ``<|café|>``, has characters of GPT-2's byte alphabet).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
from pathlib import Path
from typing import Any

TEKKEN_SOURCE = "tekken_240911.json"
V13_EXTRA = ["[AUDIO]", "[BEGIN_AUDIO]", "[TRANSCRIBE]", "[ARGS]", "[CALL_ID]", "[THINK]",
             "[/THINK]"]
LEGACY = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
          "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
          "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
          "[TOOL_CONTENT]"]

KIMI_NAMES = {0: "[BOS]", 1: "[EOS]", 2: "<|im_end|>", 3: "<|im_user|>", 4: "<|im_assistant|>",
              6: "<|start_header_id|>", 7: "<|end_header_id|>", 9: "[EOT]", 10: "<|im_system|>",
              11: "<|tool_calls_section_begin|>", 12: "<|tool_calls_section_end|>",
              13: "<|tool_call_begin|>", 14: "<|tool_call_argument_begin|>",
              15: "<|tool_call_end|>", 17: "<|im_middle|>", 22: "<think>", 23: "</think>",
              40: "<|café|>", 254: "[UNK]", 255: "[PAD]"}
"""Special ids (offset from the first one) named in ``added_tokens_decoder``, Kimi K2's layout;
the others are ``<|reserved_token_{id}|>``."""
KIMI_ADDITIONAL = ["<|im_end|>", "<|im_user|>", "<|im_assistant|>", "<|start_header_id|>",
                   "<|end_header_id|>", "[EOT]", "<|im_system|>", "<|im_middle|>"]


def tekken_source() -> Path:
    import mistral_common

    return Path(mistral_common.__file__).parent / "data" / TEKKEN_SOURCE


def derive_tekken_v3(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(tekken_source(), folder / "tekken.json")


def derive_tekken_v13(folder: Path) -> None:
    data: dict[str, Any] = json.loads(tekken_source().read_bytes())
    data["config"]["version"] = "v13"
    data["special_tokens"] = [{"rank": i, "token_str": name, "is_control": True}
                              for i, name in enumerate(LEGACY + V13_EXTRA)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tekken.json").write_text(json.dumps(data), encoding="utf-8")


def derive_kimi_tiktoken(folder: Path) -> None:
    data: dict[str, Any] = json.loads(tekken_source().read_bytes())
    config = data["config"]
    count = config["default_vocab_size"] - config["default_num_special_tokens"]
    lines = [f"{entry['token_bytes']} {entry['rank']}" for entry in data["vocab"][:count]]
    assert all(base64.b64decode(entry["token_bytes"]) for entry in data["vocab"][:count])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tiktoken.model").write_text("\n".join(lines) + "\n", encoding="ascii")
    added = {str(count + offset): {"content": name, "lstrip": False, "normalized": False,
                                   "rstrip": False, "single_word": False,
                                   "special": name not in ("<think>", "</think>")}
             for offset, name in sorted(KIMI_NAMES.items())}
    config_json = {"added_tokens_decoder": added, "bos_token": "[BOS]", "eos_token": "[EOS]",
                   "unk_token": "[UNK]", "pad_token": "[PAD]",
                   "additional_special_tokens": KIMI_ADDITIONAL,
                   "tokenizer_class": "TikTokenTokenizer", "model_max_length": 131072}
    (folder / "tokenizer_config.json").write_text(json.dumps(config_json, indent=1),
                                                  encoding="utf-8")
    (folder / "generation_config.json").write_text(
        json.dumps({"eos_token_id": count + 2}), encoding="utf-8")


BYTE_VOCAB_MODELS = {"tekken-v3": derive_tekken_v3, "tekken-v13": derive_tekken_v13,
                     "kimi-tiktoken": derive_kimi_tiktoken}


def build(name: str, root: Path) -> Path:
    """``root/name``, derived unless it is already there."""
    folder = root / name
    marker = folder / ("tiktoken.model" if name == "kimi-tiktoken" else "tekken.json")
    if not marker.is_file():
        # derived aside and renamed into place whole, so that test workers building the same
        # folder at once never see one half-written; the first rename wins
        partial = root / f".{name}.{os.getpid()}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        BYTE_VOCAB_MODELS[name](partial)
        try:
            os.rename(partial, folder)
        except OSError:
            shutil.rmtree(partial, ignore_errors=True)
            if not marker.is_file():
                raise
    return folder
