"""One model's tokenizer, reduced to what derendering needs: pieces, special ids and the decoder.

vLLM decodes through a Hugging Face *fast* tokenizer. Everything it does on the derender path
maps onto three primitives of the `tokenizers` library, exposed here:

- ``piece``: the raw vocabulary string of an id (``Ġworld``, ``▁Tokyo``, ``<|im_end|>``);
- ``join``: the tokenizer's decoder over raw pieces (``convert_tokens_to_string``);
- ``decode``: an ordinary decode of ids with special tokens kept (``tokenizer.decode``).

Which ids count as *special* follows ``transformers`` (``all_special_ids``: the bos/eos/unk/pad
tokens and ``additional_special_tokens`` of ``tokenizer_config.json``), not the ``special`` flag
of ``tokenizer.json``, which marks many more added tokens (Llama 3's reserved tokens, Qwen3's
``<think>``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tokenizers import Tokenizer

REPLACEMENT_CHAR = "\ufffd"

MARKUP = ("<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_start|>", "<|im_end|>")
"""Parser markers. Where the vocabulary has one as a single token, parsers match that token,
not the same characters spelled by ordinary tokens (a model writing about ``<tool_call>``)."""
RESTORE_MARKUP = {0xE000 + i: marker for i, marker in enumerate(MARKUP)}
"""``str.translate`` table turning marker stand-ins back into the markers' text."""

# Decoders whose output for a valid-UTF-8 run of pieces is the concatenation of the pieces'
# texts apart from the very first piece (Strip/Metaspace drop one leading space there). The
# detokenizer's fast path relies on it; any other decoder takes the exact per-token path.
_PREFIX_CONSISTENT_DECODERS = frozenset(
    {"ByteLevel", "Metaspace", "Replace", "ByteFallback", "Fuse", "Strip", "Sequence"}
)

_SPECIAL_TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token",
                       "cls_token", "mask_token")


def _token_content(value: Any) -> str | None:
    """A special token in tokenizer_config.json is a string or an AddedToken dict."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


def _component(component: Any) -> Any:
    """A tokenizer component's own JSON (cheaper than parsing the whole tokenizer.json)."""
    return None if component is None else json.loads(component.__getstate__())


def _decoder_types(spec: Any) -> set[str]:
    if not isinstance(spec, dict):
        return set()
    types = {str(spec.get("type"))}
    for child in spec.get("decoders") or []:
        types |= _decoder_types(child)
    return types


def _space_marker(spec: Any) -> str | None:
    """The ``replacement`` of a Metaspace pre-tokenizer (also inside a Sequence), else None."""
    if not isinstance(spec, dict):
        return None
    if spec.get("type") == "Metaspace":
        return str(spec.get("replacement", "▁"))
    for child in spec.get("pretokenizers") or []:
        marker = _space_marker(child)
        if marker is not None:
            return marker
    return None


@dataclass(frozen=True)
class Vocabulary:
    """A loaded tokenizer with the lookup tables the derender hot path uses."""

    tokenizer: Tokenizer
    pieces: Sequence[str]
    """``pieces[id]``: raw vocabulary string; ``""`` for an id without an entry."""
    special_ids: frozenset[int]
    eos_id: int | None
    """The tokenizer's ``eos_token`` id: a stop on it leaves ``stop_reason`` null."""
    model_eos_ids: frozenset[int]
    """``eos_id`` plus ``generation_config.json``'s ``eos_token_id`` value(s)."""
    space_marker: str | None
    fast_path: bool
    """True when the decoder is prefix-consistent (see ``_PREFIX_CONSISTENT_DECODERS``)."""

    @functools.cached_property
    def marked(self) -> Vocabulary:
        """This vocabulary with each single-token marker decoding to a private-use stand-in
        (U+E000 + its index in ``MARKUP``), for the parser path."""
        pieces = list(self.pieces)
        for index, marker in enumerate(MARKUP):
            token = self.tokenizer.token_to_id(marker)
            if token is not None:
                pieces[token] = chr(0xE000 + index)
        return dataclasses.replace(self, pieces=pieces)

    def spelled(self, marker: str) -> str:
        """How ``marker`` appears in text decoded with ``marked``."""
        if self.tokenizer.token_to_id(marker) is None:
            return marker
        return chr(0xE000 + MARKUP.index(marker))

    @property
    def size(self) -> int:
        """Number of ids, added tokens included; ids at or above it are out of range."""
        return len(self.pieces)

    def join(self, pieces: list[str]) -> str:
        """The decoder over raw pieces (HF ``convert_tokens_to_string``)."""
        if not pieces:
            return ""
        return str(self.tokenizer.decoder.decode(pieces))

    def decode(self, ids: list[int]) -> str:
        """Ordinary decode, special tokens kept (HF ``decode``)."""
        return str(self.tokenizer.decode(ids, skip_special_tokens=False))

    def decode_each(self, ids: list[int]) -> list[str]:
        """``decode([id])`` for every id, in one call into the tokenizer."""
        return [str(s) for s in self.tokenizer.decode_batch([[i] for i in ids],
                                                            skip_special_tokens=False)]

    @classmethod
    def load(
        cls,
        tokenizer_json: str,
        tokenizer_config: dict[str, Any],
        generation_config: dict[str, Any],
    ) -> Vocabulary:
        """Build from the text of ``tokenizer.json`` and the two parsed config files."""
        tokenizer = Tokenizer.from_str(tokenizer_json)
        vocab = tokenizer.get_vocab(with_added_tokens=True)
        size = max(vocab.values(), default=-1) + 1
        pieces = [""] * size
        for piece, index in vocab.items():
            pieces[index] = piece

        special_names = {
            name
            for key in _SPECIAL_TOKEN_KEYS
            if (name := _token_content(tokenizer_config.get(key))) is not None
        }
        for extra in tokenizer_config.get("additional_special_tokens") or []:
            if (name := _token_content(extra)) is not None:
                special_names.add(name)
        extra_special = tokenizer_config.get("extra_special_tokens")
        if isinstance(extra_special, dict):
            special_names.update(
                name for value in extra_special.values()
                if (name := _token_content(value)) is not None
            )
        special_ids = frozenset(vocab[name] for name in special_names if name in vocab)

        eos_name = _token_content(tokenizer_config.get("eos_token"))
        eos_id = vocab.get(eos_name) if eos_name is not None else None
        configured = generation_config.get("eos_token_id")
        if isinstance(configured, int):
            configured = [configured]
        model_eos = {i for i in configured or [] if isinstance(i, int)}
        if eos_id is not None:
            model_eos.add(eos_id)

        decoders = _decoder_types(_component(tokenizer.decoder))
        return cls(
            tokenizer=tokenizer,
            pieces=pieces,
            special_ids=special_ids,
            eos_id=eos_id,
            model_eos_ids=frozenset(model_eos),
            space_marker=_space_marker(_component(tokenizer.pre_tokenizer)),
            fast_path=bool(decoders) and decoders <= _PREFIX_CONSISTENT_DECODERS,
        )
