"""Decode specs of the two byte-level tokenizers that come without ``tokenizer.json``.

- Mistral's ``tekken.json`` (what vLLM serves with ``--tokenizer-mode mistral``, through
  ``mistral_common``'s ``Tekkenizer``): ``config.default_num_special_tokens`` special tokens take
  the first ids (the file's ``special_tokens`` list, or before v7 a fixed list of 20, padded
  with ``<SPECIAL_{id}>`` fillers); vocabulary rank ``r`` is id ``num_special + r``, cut to
  ``config.default_vocab_size`` ids in all. A run of ordinary ids decodes as the UTF-8 of its
  bytes with ``errors="replace"``; a special token decodes as its name (``KEEP`` policy).
- A ``tiktoken.model`` (a line ``base64(token bytes) rank`` per token) as Kimi's
  ``TikTokenTokenizer`` reads it: ranks are ids; 258 special ids follow the ``N`` ranks, named by
  ``tokenizer_config.json``'s ``added_tokens_decoder`` or ``<|reserved_token_{id}|>``. Decoding
  is tiktoken's: the ids' bytes (a special token's are its name's) as UTF-8, ``errors="replace"``.

Both become a ``Vocabulary`` like a byte-level ``tokenizer.json``: each ordinary piece spells
its bytes in GPT-2's byte alphabet (``ByteLevel`` decoder), and a special token's piece is its
name, which that decoder leaves as it is (a name it would misread, with characters of the
byte alphabet outside ASCII, is spelled in the alphabet instead). Only ``json`` and ``base64``
are used: ``mistral_common`` and ``tiktoken`` are never imported here.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from derender.core.decoding.vocab import (
    BYTE_SPEC_VERSION,
    TEKKEN,
    TEKKEN_SHOWN,
    TIKTOKEN,
)

BYTE_LEVEL_DECODER = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                      "use_regex": True}

TEKKEN_LEGACY_SPECIALS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]")
"""``Tekkenizer.DEPRECATED_SPECIAL_TOKENS``: the special tokens of files before v7, which do
not list them."""

KIMI_SPECIAL_COUNT = 256 + 2
"""``TikTokenTokenizer.num_reserved_special_tokens + 2`` special ids after the ranks."""


def _byte_alphabet() -> list[str]:
    """GPT-2's ``bytes_to_unicode``: byte → printable character."""
    kept = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars = {b: chr(b) for b in kept}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


BYTE_CHARS = _byte_alphabet()
_TO_BYTE_LEVEL = dict(enumerate(BYTE_CHARS))
"""``str.translate`` table from a latin-1 decoded byte string to its byte-level spelling."""
_MISREAD = frozenset(char for char in BYTE_CHARS if not "!" <= char <= "~")
"""Byte-alphabet characters that do not stand for their own UTF-8."""


def byte_piece(raw: bytes) -> str:
    """The byte-level spelling of a token's bytes."""
    return raw.decode("latin-1").translate(_TO_BYTE_LEVEL)


def text_piece(text: str) -> str:
    """The piece of a special token: its name, unless the ``ByteLevel`` decoder would misread it."""
    if _MISREAD.isdisjoint(text):
        return text
    return byte_piece(text.encode("utf-8"))


def _spec(kind: str, pieces: list[str], added_ids: list[int], **extra: Any) -> dict[str, Any]:
    return {"version": BYTE_SPEC_VERSION, "kind": kind, "pieces": pieces, "added_ids": added_ids,
            "decoder": BYTE_LEVEL_DECODER, "space_marker": None, **extra}


def tekken_spec(tekken: Mapping[str, Any]) -> dict[str, Any]:
    """The decode spec of a parsed ``tekken.json``."""
    config = tekken["config"]
    num_special = int(config["default_num_special_tokens"])
    inner = int(config["default_vocab_size"]) - num_special
    listed = tekken.get("special_tokens")
    names = [str(t["token_str"]) for t in listed] if listed is not None \
        else list(TEKKEN_LEGACY_SPECIALS)
    if listed is not None and [int(t["rank"]) for t in listed] != list(range(len(listed))):
        raise ValueError("tekken.json: special token ranks are not 0, 1, 2, …")
    if len(names) > num_special or len(set(names)) != len(names):
        raise ValueError("tekken.json: special tokens are not unique or exceed "
                         "default_num_special_tokens")
    names += [f"<SPECIAL_{i}>" for i in range(len(names), num_special)]
    vocab = tekken["vocab"]
    if len(vocab) < inner:
        raise ValueError(f"tekken.json: {len(vocab)} vocabulary entries, "
                         f"default_vocab_size needs {inner}")
    raws = [base64.b64decode(entry["token_bytes"]) for entry in vocab[:inner]]
    if any(int(entry["rank"]) != rank for rank, entry in enumerate(vocab[:inner])):
        raise ValueError("tekken.json: vocabulary ranks are not 0, 1, 2, …")
    pieces = [text_piece(name) for name in names] + [byte_piece(raw) for raw in raws]
    shown = set(TEKKEN_SHOWN)
    special_ids = [i for i, name in enumerate(names) if name not in shown]
    hidden_texts = {names[i].encode("utf-8"): i for i in special_ids}
    hidden_ids = special_ids + [num_special + rank for rank, raw in enumerate(raws)
                                if raw in hidden_texts]
    eos_id = names.index("</s>") if "</s>" in names else None
    return _spec(TEKKEN, pieces, list(range(num_special)), special_ids=special_ids,
                 eos_id=eos_id, hidden_ids=hidden_ids)


def tiktoken_spec(model: bytes, tokenizer_config: Mapping[str, Any]) -> dict[str, Any]:
    """The decode spec of a ``tiktoken.model`` with its ``tokenizer_config.json``."""
    raws: list[bytes | None] = []
    for number, line in enumerate(model.splitlines(), 1):
        if not line.strip():
            continue
        try:
            token, rank_text = line.split()
            raw, rank = base64.b64decode(token, validate=True), int(rank_text)
        except ValueError as error:
            raise ValueError(f"tiktoken.model line {number}: not 'base64 rank'") from error
        if rank >= len(raws):
            raws.extend([None] * (rank + 1 - len(raws)))
        raws[rank] = raw
    if not raws or None in raws:
        raise ValueError("tiktoken.model: ranks are not 0, 1, 2, … without gaps")
    base = len(raws)
    added = tokenizer_config.get("added_tokens_decoder") or {}
    names = {int(i): str(token["content"]) for i, token in added.items()}
    specials = [names.get(i, f"<|reserved_token_{i}|>")
                for i in range(base, base + KIMI_SPECIAL_COUNT)]
    pieces = [byte_piece(raw) for raw in raws if raw is not None]
    pieces += [text_piece(name) for name in specials]
    return _spec(TIKTOKEN, pieces, list(range(base, base + KIMI_SPECIAL_COUNT)))
