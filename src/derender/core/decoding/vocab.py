"""One model's tokenizer, reduced to what derendering needs: pieces, special ids and the decoder.

vLLM decodes through a Hugging Face *fast* tokenizer. Everything it does on the derender path
maps onto the vocabulary's pieces and the tokenizer's decoder, exposed here:

- ``pieces[id]``: the raw vocabulary string of an id (``Ġworld``, ``▁Tokyo``, ``<|im_end|>``);
- ``join``: the tokenizer's decoder over raw pieces (``convert_tokens_to_string``);
- ``decode``: an ordinary decode of ids with special tokens kept (``tokenizer.decode``), which
  in the ``tokenizers`` library is exactly the decoder over the ids' pieces.

Only those parts of ``tokenizer.json`` are read (``decode_spec``): the pieces, the added tokens'
ids, the decoder and the pre-tokenizer's space marker. Building the whole
``tokenizers.Tokenizer`` (BPE merges, normalizer, regexes) takes several times as long and as
much memory and is never used to decode, which matters for a Lambda cold start.

Which ids count as *special* follows ``transformers`` (``all_special_ids``: the bos/eos/unk/pad
tokens and ``additional_special_tokens`` of ``tokenizer_config.json``), not the ``special`` flag
of ``tokenizer.json``, which marks many more added tokens (Llama 3's reserved tokens, Qwen3's
``<think>``).

Two tokenizers without ``tokenizer.json`` load into the same shape (``core/decoding/bytevocab.py``):
Mistral's ``tekken.json`` and a Kimi-style ``tiktoken.model``. Both are byte-level BPEs, so their
pieces are written in GPT-2's byte alphabet and decoded by the ``ByteLevel`` decoder; their
special tokens are pieces holding their text. Their decode specs (version 2) say which
(``kind``), because vLLM detokenizes them with other code than a fast HF tokenizer
(``Vocabulary.text_view``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from tokenizers import Tokenizer
from tokenizers.decoders import Decoder

REPLACEMENT_CHAR = "\ufffd"
DECODE_SPEC_VERSION = 1
BYTE_SPEC_VERSION = 2
"""Decode specs of ``tekken.json``/``tiktoken.model`` vocabularies
(``core/decoding/bytevocab.py``): the fields of version 1 plus ``kind`` and, for tekken,
``special_ids``, ``eos_id`` and ``hidden_ids``. A reader that only knows
version 1 refuses them instead of misreading them."""
HF, TEKKEN, TIKTOKEN = "hf", "tekken", "tiktoken"

TEKKEN_SHOWN = ("[TOOL_CALLS]", "[ARGS]", "[THINK]", "[/THINK]")
"""Special tokens vLLM's Mistral tokenizer keeps in text (``convert_tokens_to_string`` drops
every other special token, whatever ``skip_special_tokens`` says)."""

STAND_IN = 0xE000
"""The marked vocabulary (``Vocabulary.marked_by``) decodes marker ``markup[i]``'s token to
the private-use character ``STAND_IN + i``. The marker table is the parsers'
(``core/parsers/registry.py``: each marker's index is fixed there)."""
LITERAL = 0xD800
"""The marked vocabulary decodes a literal ``STAND_IN + i`` of the model's text (written by
ordinary tokens) to ``LITERAL + i``, a lone surrogate: no tokenizer decodes to one (the text
of a decoder is valid UTF-8), so it stands for that character alone, one character for one,
and no marker ever reads as model text or model text as a marker."""
MAX_MARKERS = 0xFF
"""Markers a table may have (their stand-ins lie below ``_PLACEHOLDER``)."""


@functools.cache
@functools.cache
def restore_table(markup: tuple[str, ...]) -> dict[int, str | int]:
    """``str.translate`` table turning text decoded by ``marked_by(markup)`` back into the
    model's text: stand-ins into the markers' text, escaped literals into what was written."""
    return {**{STAND_IN + i: marker for i, marker in enumerate(markup)},
            **{LITERAL + i: STAND_IN + i for i in range(len(markup))}}


def _stand_ins(count: int) -> tuple[re.Pattern[str], dict[int, int]]:
    """The stand-ins of a table of ``count`` markers (a pattern), and the ``str.translate``
    table escaping them in model text."""
    if not 0 < count <= MAX_MARKERS:
        raise ValueError(f"a marker table holds 1 to {MAX_MARKERS} markers, not {count}")
    return (re.compile(f"[{chr(STAND_IN)}-{chr(STAND_IN + count - 1)}]"),
            {STAND_IN + i: LITERAL + i for i in range(count)})


_PLACEHOLDER = "\ue0ff"
"""What a marker's token decodes to in ``_MarkedJoin``'s second decode (no stand-in)."""

# Decoders whose output for a valid-UTF-8 run of pieces is the concatenation of the pieces'
# texts apart from the very first piece (Strip/Metaspace drop one leading space there). The
# detokenizer's fast path relies on it; any other decoder takes the exact per-token path.
_PREFIX_CONSISTENT_DECODERS = frozenset(
    {"ByteLevel", "Metaspace", "Replace", "ByteFallback", "Fuse", "Strip", "Sequence"}
)

KIMI_DEFAULTS: dict[str, Any] = {
    "bos_token": "[BOS]", "eos_token": "[EOS]",
    "additional_special_tokens": ["<|im_end|>", "<|im_user|>", "<|im_assistant|>",
                                  "<|start_header_id|>", "<|end_header_id|>", "[EOT]",
                                  "<|im_system|>", "<|im_middle|>"]}
"""The special tokens Kimi's ``TikTokenTokenizer.__init__`` assumes when ``tokenizer_config.json``
does not name them."""

_SPECIAL_TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token",
                       "cls_token", "mask_token")


def _token_content(value: Any) -> str | None:
    """A special token in tokenizer_config.json is a string or an AddedToken dict."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


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


def decode_spec(tokenizer: Mapping[str, Any]) -> dict[str, Any]:
    """What decoding reads of a parsed ``tokenizer.json``, as plain JSON.

    ``pieces``: id → piece from the model's vocabulary (a ``{piece: id}`` map, or Unigram's
    ``[[piece, score], …]`` list) overlaid with the added tokens, as ``id_to_token`` resolves
    them (null for an id without one); ``added_ids``: the added tokens' ids (they win a
    lookup by piece); ``decoder``: the decoder's own JSON; ``space_marker``: see
    ``Vocabulary.space_marker``. A list parses several times faster than the vocabulary's map,
    so the layer ships this (``derender.compact``) instead of ``tokenizer.json``.
    """
    model = tokenizer.get("model") or {}
    added = tokenizer.get("added_tokens") or []
    vocab = model.get("vocab") or {}
    pieces: list[str | None]
    if isinstance(vocab, dict):
        ids = list(vocab.values())
        if ids == list(range(len(ids))):  # written in id order, as tokenizers writes it
            pieces = list(vocab)
        else:
            pieces = [None] * (max(ids, default=-1) + 1)
            for piece, index in vocab.items():
                pieces[index] = piece
    else:
        pieces = [str(entry[0]) for entry in vocab]
    for token in added:
        index = int(token["id"])
        if index >= len(pieces):
            pieces.extend([None] * (index + 1 - len(pieces)))
        pieces[index] = str(token["content"])
    return {"version": DECODE_SPEC_VERSION, "pieces": pieces,
            "added_ids": [int(token["id"]) for token in added],
            "decoder": tokenizer.get("decoder"),
            "space_marker": _space_marker(tokenizer.get("pre_tokenizer"))}


class Joiner(Protocol):
    """What joins pieces into text: a ``tokenizers`` decoder or one of the joins below."""

    def decode(self, tokens: list[str]) -> str: ...


class _AddedJoin:
    """A slow HF tokenizer's ``convert_tokens_to_string`` with added tokens, as vLLM's
    ``_convert_tokens_to_string_with_added_encoders`` does it when special tokens are kept:
    each added token's piece is its own text, the runs between are decoded, and the parts are
    joined by a space (``spaces_between_special_tokens``, true by default) or by nothing."""

    def __init__(self, inner: Joiner, added: frozenset[str], separator: str = " ") -> None:
        self._inner = inner
        self._added = added
        self._separator = separator

    def decode(self, tokens: list[str]) -> str:
        parts: list[str] = []
        run: list[str] = []
        added = self._added
        for token in tokens:
            if token in added:
                if run:
                    parts.append(self._inner.decode(run))
                    run = []
                parts.append(token)
            else:
                run.append(token)
        if run:
            parts.append(self._inner.decode(run))
        return self._separator.join(parts)


class _MarkedJoin:
    """The join of the marked vocabulary: the tokenizer's, where a marker's piece is its
    stand-in and a stand-in character of the model's own text is escaped (``LITERAL``).

    A stand-in in the joined text is a marker's where the same pieces joined with every
    marker piece replaced by ``_PLACEHOLDER`` have the placeholder: both pieces are one
    character that every decoder here passes alike (no byte-alphabet character, no space,
    no byte token), so the two texts match character for character, and a literal stand-in
    is the same character in both."""

    def __init__(self, inner: Joiner | None, stand_ins: frozenset[str],
                 markup: tuple[str, ...]) -> None:
        self._inner = inner
        self._stand_ins = stand_ins
        self._pattern, self._escape = _stand_ins(len(markup))
        self.table = restore_table(markup)
        """What the marked text stands for (``restore_table``)."""

    def _join(self, tokens: list[str]) -> str:
        if self._inner is None:  # what ``tokenizers`` does without a decoder
            return " ".join(tokens)
        return str(self._inner.decode(tokens))

    def decode(self, tokens: list[str]) -> str:
        text = self._join(tokens)
        if self._pattern.search(text) is None:
            return text
        stand_ins = self._stand_ins
        if not any(token in stand_ins for token in tokens):
            return text.translate(self._escape)
        plain = self._join([_PLACEHOLDER if token in stand_ins else token for token in tokens])
        if len(plain) != len(text):  # not expected with these decoders: all markers
            return text
        out = list(text)
        for match in self._pattern.finditer(text):
            at = match.start()
            if plain[at] != _PLACEHOLDER:
                out[at] = chr(LITERAL + ord(text[at]) - STAND_IN)
        return "".join(out)


def _decoder(spec: Any) -> Decoder | None:
    """The tokenizer's decoder alone, built through a tokenizer that has nothing else."""
    if spec is None:
        return None
    shell = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
             "normalizer": None, "pre_tokenizer": None, "post_processor": None,
             "decoder": spec, "model": {"type": "WordLevel", "vocab": {}, "unk_token": ""}}
    decoder: Decoder = Tokenizer.from_str(json.dumps(shell)).decoder
    return decoder


@dataclass(frozen=True)
class Vocabulary:
    """A tokenizer's pieces, special ids and decoder: the lookup tables of the hot path."""

    pieces: Sequence[str]
    """``pieces[id]``: raw vocabulary string; ``""`` for an id without an entry."""
    holes: frozenset[int]
    """Ids below ``size`` without an entry (``decode`` skips them, as ``tokenizers`` does)."""
    added_ids: tuple[int, ...]
    """Ids of ``tokenizer.json``'s added tokens (they win a piece shared with the model)."""
    decoder: Joiner | None
    special_ids: frozenset[int]
    eos_id: int | None
    """The tokenizer's ``eos_token`` id: a stop on it leaves ``stop_reason`` null."""
    model_eos_ids: frozenset[int]
    """``eos_id`` plus ``generation_config.json``'s ``eos_token_id`` value(s)."""
    space_marker: str | None
    fast_path: bool
    """True when the decoder is prefix-consistent (see ``_PREFIX_CONSISTENT_DECODERS``)."""
    byte_level: bool = False
    """The decoder is GPT-2's byte-level one alone: every piece spells its bytes in that
    alphabet (what the Harmony parser reads token bytes from)."""
    kind: str = HF
    """Where the vocabulary comes from: ``hf`` (``tokenizer.json``), ``tekken`` or ``tiktoken``."""
    hidden_ids: frozenset[int] = frozenset()
    """Tekken: ids whose text vLLM's Mistral tokenizer drops in ``convert_tokens_to_string``
    (special tokens other than ``TEKKEN_SHOWN``, and any ordinary token spelling one)."""

    @functools.cached_property
    def _ids(self) -> dict[str, int]:
        """Piece → id, built on first use (only the parsers look pieces up)."""
        ids = {piece: index for index, piece in enumerate(self.pieces)
               if index not in self.holes}
        ids.update((self.pieces[index], index) for index in self.added_ids)
        return ids

    def token_id(self, piece: str) -> int | None:
        """The id of a piece (``token_to_id``), None if the vocabulary has no such token."""
        return self._ids.get(piece)

    @functools.cached_property
    def _marked(self) -> dict[tuple[str, ...], Vocabulary]:
        """Marked vocabularies by table."""
        return {}

    def spellings(self, markup: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
        """Each marker of ``markup`` and how it appears in text decoded with
        ``marked_by(markup)``: its stand-in where it is one token, else itself."""
        last = self._last_spellings
        if last and last[0][0] is markup:
            return last[0][1]
        spell = tuple((marker, marker if self.token_id(marker) is None
                       else chr(STAND_IN + index)) for index, marker in enumerate(markup))
        last[:] = [(markup, spell)]
        return spell

    @functools.cached_property
    def _last_spellings(self) -> list[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]]:
        return []

    @functools.cached_property
    def _last_marked(self) -> list[tuple[tuple[str, ...], Vocabulary]]:
        """The last table asked for and its marked vocabulary."""
        return []

    def marked_by(self, markup: tuple[str, ...]) -> Vocabulary:
        """This vocabulary with each single-token marker of ``markup`` decoding to a
        private-use stand-in (``STAND_IN`` + its index in ``markup``), for the parser path; a
        stand-in character the model wrote decodes escaped (``LITERAL``), so the parsers'
        ``restore_table`` gives it back. Built once per table."""
        last = self._last_marked  # the same table as last time: no hashing
        if last and last[0][0] is markup:
            return last[0][1]
        marked = self._marked.get(markup)
        if marked is not None:
            last[:] = [(markup, marked)]
            return marked
        pieces = list(self.pieces)
        stand_ins = set()
        for index, marker in enumerate(markup):
            token = self.token_id(marker)
            if token is not None:
                pieces[token] = chr(STAND_IN + index)
                stand_ins.add(pieces[token])
        marked = dataclasses.replace(
            self, pieces=pieces,
            decoder=_MarkedJoin(self.decoder, frozenset(stand_ins), markup))
        marked = self._marked.setdefault(markup, marked)
        last[:] = [(markup, marked)]
        return marked

    @property
    def restoring(self) -> dict[int, str | int] | None:
        """A marked vocabulary's (``marked_by``) restore table: its text stands for the text
        this table gives back (stop strings match that); None for an unmarked one."""
        return self.decoder.table if isinstance(self.decoder, _MarkedJoin) else None

    @property
    def size(self) -> int:
        """Number of ids, added tokens included; ids at or above it are out of range."""
        return len(self.pieces)

    def join(self, pieces: list[str]) -> str:
        """The decoder over raw pieces (HF ``convert_tokens_to_string``)."""
        if not pieces:
            return ""
        if self.decoder is None:  # what ``tokenizers`` does without a decoder
            return " ".join(pieces)
        return str(self.decoder.decode(pieces))

    def decode(self, ids: list[int]) -> str:
        """Ordinary decode, special tokens kept (HF ``decode``)."""
        holes = self.holes
        return self.join([self.pieces[i] for i in ids if not holes or i not in holes])

    def decode_each(self, ids: list[int]) -> list[str]:
        """``decode([id])`` for every id."""
        return [self.decode([i]) for i in ids]

    def text_view(self, skip_special: bool, spaces: bool = True) -> Vocabulary:
        """The vocabulary vLLM's incremental detokenizer joins, for ``skip_special_tokens``
        and ``spaces_between_special_tokens`` (``spaces``).

        A ``tokenizer.json`` vocabulary is its own view (a fast tokenizer's
        ``convert_tokens_to_string`` is its decoder). vLLM detokenizes the two others with its
        slow path, ``detokenize_incrementally`` over ``convert_ids_to_tokens`` and
        ``convert_tokens_to_string`` of the tokenizer object, which differ:

        - tekken (vLLM's ``MistralTokenizer``): the hidden ids' text is dropped. Skipping special
          tokens, a piece holding a partial UTF-8 character is converted to its bytes, so the
          window decodes as bytes (the byte-level view); keeping them, pieces stay strings
          (each id decoded alone, U+FFFD for a partial character) and are simply concatenated.
        - tiktoken (Kimi's slow ``TikTokenTokenizer``, whose special tokens are its added
          vocabulary): skipping, pieces spelling a special token are dropped too; keeping,
          added tokens stand apart from the decoded runs and the parts are joined by spaces,
          or by nothing when ``spaces_between_special_tokens`` is false (skipping, every added
          token is special and dropped, so there is nothing to join).
        """
        if self.kind == HF:
            return self
        if skip_special:
            return self._skipping_view
        return self._keeping_view if spaces or self.kind == TEKKEN else self._keeping_tight_view

    @functools.cached_property
    def _skipping_view(self) -> Vocabulary:
        pieces = list(self.pieces)
        if self.kind == TEKKEN:
            for index in self.hidden_ids:
                pieces[index] = ""
        else:
            texts = {self.pieces[i] for i in self.special_ids}
            for index, piece in enumerate(self.pieces):
                if piece in texts:
                    pieces[index] = ""
        return dataclasses.replace(self, pieces=pieces, kind=HF)

    @functools.cached_property
    def _keeping_view(self) -> Vocabulary:
        """Built on first use (tekken: every id decoded alone, a few tenths of a second)."""
        if self.kind == TEKKEN:
            added = frozenset(self.added_ids)
            pieces = [
                "" if i in self.hidden_ids
                else self.pieces[i] if i in added
                else self.decode([i])
                for i in range(self.size)
            ]
            return dataclasses.replace(self, pieces=pieces, decoder=_decoder({"type": "Fuse"}),
                                       kind=HF, byte_level=False)
        return self._added_join_view(" ")

    @functools.cached_property
    def _keeping_tight_view(self) -> Vocabulary:
        """tiktoken, special tokens kept, ``spaces_between_special_tokens`` false."""
        return self._added_join_view("")

    def _added_join_view(self, separator: str) -> Vocabulary:
        assert self.decoder is not None
        added_pieces = frozenset(self.pieces[i] for i in self.special_ids)
        return dataclasses.replace(self, decoder=_AddedJoin(self.decoder, added_pieces,
                                                            separator),
                                   kind=HF, fast_path=False, byte_level=False)

    @classmethod
    def load(
        cls,
        spec: Mapping[str, Any],
        tokenizer_config: dict[str, Any],
        generation_config: dict[str, Any],
    ) -> Vocabulary:
        """Build from a ``decode_spec`` and the two parsed config files."""
        version = spec.get("version")
        if version not in (DECODE_SPEC_VERSION, BYTE_SPEC_VERSION):
            raise ValueError(f"decode spec version {version!r} is not {DECODE_SPEC_VERSION} "
                             f"or {BYTE_SPEC_VERSION}: rebuild it with derender.compact")
        kind = str(spec.get("kind")) if version == BYTE_SPEC_VERSION else HF
        if version == BYTE_SPEC_VERSION and kind not in (TEKKEN, TIKTOKEN):
            raise ValueError(f"decode spec version 2 of kind {kind!r}: rebuild it with "
                             f"derender.compact")
        raw: list[str | None] = spec["pieces"]
        holes = frozenset(i for i, piece in enumerate(raw) if piece is None) \
            if None in raw else frozenset()
        pieces = [piece or "" for piece in raw] if holes else cast(list[str], raw)
        added_ids = tuple(int(i) for i in spec["added_ids"])
        by_added = {pieces[i]: i for i in added_ids}

        def token_id(name: str) -> int | None:  # ``token_to_id``: added tokens first
            if name in by_added:
                return by_added[name]
            return pieces.index(name) if name in pieces else None

        if kind == TIKTOKEN:  # Kimi's TikTokenTokenizer's defaults for what the config omits
            tokenizer_config = {**KIMI_DEFAULTS, **tokenizer_config}
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
            extra_special = list(extra_special.values())
        if isinstance(extra_special, list):  # transformers 5 writes the list form (GLM-5)
            special_names.update(
                name for value in extra_special
                if (name := _token_content(value)) is not None
            )
        special_ids = frozenset(i for name in special_names if (i := token_id(name)) is not None)

        eos_name = _token_content(tokenizer_config.get("eos_token"))
        eos_id = token_id(eos_name) if eos_name is not None else None
        if kind == TEKKEN:  # vLLM's Mistral tokenizer ignores tokenizer_config.json
            special_ids = frozenset(int(i) for i in spec["special_ids"])
            eos_id = spec.get("eos_id")
        configured = generation_config.get("eos_token_id")
        if isinstance(configured, int):
            configured = [configured]
        model_eos = {i for i in configured or [] if isinstance(i, int)}
        if eos_id is not None:
            model_eos.add(eos_id)

        decoders = _decoder_types(spec.get("decoder"))
        return cls(
            pieces=pieces,
            holes=holes,
            added_ids=added_ids,
            decoder=_decoder(spec.get("decoder")),
            special_ids=special_ids,
            eos_id=eos_id,
            model_eos_ids=frozenset(model_eos),
            space_marker=spec.get("space_marker"),
            fast_path=bool(decoders) and decoders <= _PREFIX_CONSISTENT_DECODERS,
            byte_level=decoders == {"ByteLevel"},
            kind=kind,
            hidden_ids=frozenset(int(i) for i in spec.get("hidden_ids") or ()),
        )
