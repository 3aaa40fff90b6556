"""Decode-only model folders for the tokenizer layer, verified against the originals.

``python -m derender.compact SRC_MODELS DST_MODELS [--text FILE]…`` copies every model folder
of SRC_MODELS to DST_MODELS with its ``tokenizer.json`` replaced by ``decode.json``, the
``decode_spec`` the service reads (pieces as a list in id order, added token ids, decoder,
space marker). Left out is what only encoding uses (BPE merges, normalizer, pre-tokenizer
regexes) and the vocabulary's piece → id map, which takes several times as long to parse as a
list: Qwen3 goes from 11.4 MB to 1.8 MB. Each compacted
folder is then loaded the way the service loads it and checked against the original: the
special and EOS ids and decoder settings read from each, and against the original file's
``tokenizers.Tokenizer`` every id's piece and decode, the decode of real text (the sample below
and any ``--text`` files, encoded by the original, whole and in random slices) and of random
id sequences. A difference stops the build (exit status 1).

A folder with Mistral's ``tekken.json`` or a Kimi-style ``tiktoken.model`` instead (see
``core/decoding/bytevocab.py``) is compacted the same way, to a version 2 ``decode.json``.
Its reference is ``ByteReference``: the original file read again on its own (token bytes from
base64, special names) and decoded as ``mistral_common`` and ``tiktoken`` decode (the UTF-8 of the
bytes with ``errors="replace"``; tekken's special tokens split the runs and show their names),
so the build needs neither package. Every id's piece and decode, the special and EOS ids and
random id sequences are compared (real text needs an encoder, which only ``tokenizer.json``
has here).
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import random
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer

from derender.core.decoding.bytevocab import KIMI_SPECIAL_COUNT, TEKKEN_LEGACY_SPECIALS
from derender.core.decoding.vocab import Vocabulary
from derender.core.registry import (
    DECODE_SPEC,
    TEKKEN,
    TIKTOKEN,
    TOKENIZER,
    load_vocabulary,
    original_spec,
    original_tokenizer,
)

SAMPLE = """\
The lighthouse keeper wrote: "Wind NW, fresh. Lamp lit 16:42."  Two   spaces, tabs\tand
new lines.
Größe, façade, naïve — “quotes” ‘too’ … €5 ≠ ¥7 ∑∫√ Ω
日本語のテキストと中文文本，한국어 문장, हिन्दी वाक्य, العربية, עברית, ไทย
Emoji: 🫠👍🏽👨‍👩‍👧 🇯🇵 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢
def f(x):
    return {'a': [1, 2, 3]}  # comment
<think>reasoning</think><tool_call>{"name": "f", "arguments": {}}</tool_call>
"""
"""Real text in many scripts, with code, emoji sequences and markup, for the decode check."""

RANDOM_SEQUENCES = 2000
RANDOM_MAX_LEN = 48


class CompactionError(Exception):
    """The compacted folder decodes differently from the original."""


def compact_folder(src: Path, dst: Path) -> None:
    """Copy one model folder, its tokenizer file (``tokenizer.json``, ``tekken.json`` or
    ``tiktoken.model``) replaced by ``decode.json``."""
    original = original_tokenizer(src)
    if original is None:
        raise FileNotFoundError(f"{src}: no tokenizer file to compact")
    dst.mkdir(parents=True, exist_ok=True)
    spec = original_spec(src)
    text = json.dumps(spec, ensure_ascii=False, separators=(",", ":"))
    (dst / DECODE_SPEC).write_text(text, encoding="utf-8")
    for file in sorted(src.iterdir()):
        if file.is_file() and file != original and file.name != DECODE_SPEC:
            shutil.copyfile(file, dst / file.name)


class ByteReference:
    """A ``tekken.json`` or ``tiktoken.model`` decoded straight from the file, as
    ``Tekkenizer.decode(ids, KEEP)`` and ``tiktoken.Encoding.decode`` do."""

    def __init__(self, src: Path) -> None:
        path = original_tokenizer(src)
        assert path is not None and path.name in (TEKKEN, TIKTOKEN)
        self.special_count = 0
        if path.name == TEKKEN:
            data = json.loads(path.read_bytes())
            config = data["config"]
            count = int(config["default_num_special_tokens"])
            listed = data.get("special_tokens")
            names = [t["token_str"] for t in listed] if listed is not None \
                else list(TEKKEN_LEGACY_SPECIALS)
            names += [f"<SPECIAL_{i}>" for i in range(len(names), count)]
            inner = int(config["default_vocab_size"]) - count
            self.tokens = [name.encode("utf-8") for name in names]
            self.tokens += [base64.b64decode(e["token_bytes"]) for e in data["vocab"][:inner]]
            self.special_count = count
        else:
            lines = [line.split() for line in path.read_bytes().splitlines() if line.strip()]
            ranked = sorted((int(rank), base64.b64decode(token)) for token, rank in lines)
            self.tokens = [raw for _, raw in ranked]
            config = json.loads((src / "tokenizer_config.json").read_bytes()) \
                if (src / "tokenizer_config.json").is_file() else {}
            added = {int(i): t["content"] for i, t in
                     (config.get("added_tokens_decoder") or {}).items()}
            base = len(self.tokens)
            self.tokens += [added.get(i, f"<|reserved_token_{i}|>").encode("utf-8")
                            for i in range(base, base + KIMI_SPECIAL_COUNT)]

    @property
    def size(self) -> int:
        return len(self.tokens)

    def decode(self, ids: Sequence[int]) -> str:
        parts = []
        for special, run in itertools.groupby(ids, lambda i: i < self.special_count):
            data = b"".join(self.tokens[i] for i in run)
            parts.append(data.decode("utf-8") if special else data.decode("utf-8", "replace"))
        return "".join(parts)


@dataclass(frozen=True)
class Verified:
    """What was compared for one model."""

    ids: int
    texts: int
    random_sequences: int
    original_bytes: int
    compacted_bytes: int


def _mismatch(what: str, ids: Sequence[int], expected: str, got: str) -> CompactionError:
    return CompactionError(f"{what}: ids {list(ids)[:32]} decode to {got[:80]!r}, "
                              f"the original to {expected[:80]!r}")


def _same_fields(compacted: Vocabulary, full: Vocabulary) -> None:
    for field in ("special_ids", "eos_id", "model_eos_ids", "space_marker", "fast_path",
                  "byte_level", "kind", "hidden_ids", "added_ids"):
        if getattr(compacted, field) != getattr(full, field):
            raise CompactionError(f"{field} is {getattr(compacted, field)!r}, "
                                     f"{getattr(full, field)!r} from the original")


def _verify_bytes(src: Path, dst: Path, seed: int) -> Verified:
    """``verify_folder`` for a ``tekken.json`` or ``tiktoken.model`` folder."""
    reference = ByteReference(src)
    compacted, full = load_vocabulary(dst), load_vocabulary(src)
    _same_fields(compacted, full)
    if compacted.size != reference.size:
        raise CompactionError(f"{compacted.size} ids, the original has {reference.size}")
    for token_id in range(reference.size):
        if compacted.pieces[token_id] != full.pieces[token_id]:
            raise CompactionError(f"id {token_id} is {compacted.pieces[token_id]!r}, "
                                     f"the original {full.pieces[token_id]!r}")
        expected, got = reference.decode([token_id]), compacted.decode([token_id])
        if got != expected:
            raise _mismatch("single id", [token_id], expected, got)
    rng = random.Random(seed)
    for _ in range(RANDOM_SEQUENCES):
        ids = [rng.randrange(reference.size) for _ in range(rng.randrange(1, RANDOM_MAX_LEN))]
        expected, got = reference.decode(ids), compacted.decode(ids)
        if got != expected:
            raise _mismatch("random ids", ids, expected, got)
    original = original_tokenizer(src)
    assert original is not None
    return Verified(ids=reference.size, texts=0, random_sequences=RANDOM_SEQUENCES,
                    original_bytes=original.stat().st_size,
                    compacted_bytes=(dst / DECODE_SPEC).stat().st_size)


def verify_folder(src: Path, dst: Path, texts: Iterable[str], seed: int = 0) -> Verified:
    """Check that ``dst`` (compacted) decodes exactly as ``src``'s original tokenizer."""
    if not (src / TOKENIZER).is_file():
        return _verify_bytes(src, dst, seed)
    original = Tokenizer.from_file(str(src / TOKENIZER))
    compacted: Vocabulary = load_vocabulary(dst)
    full = load_vocabulary(src)
    _same_fields(compacted, full)
    size = original.get_vocab_size(with_added_tokens=True)
    if compacted.size != size:
        raise CompactionError(f"{compacted.size} ids, the original has {size}")
    for token_id in range(size):
        expected = original.id_to_token(token_id) or ""
        if compacted.pieces[token_id] != expected:
            raise CompactionError(f"id {token_id} is {compacted.pieces[token_id]!r}, "
                                     f"the original {expected!r}")
    singles = original.decode_batch([[i] for i in range(size)], skip_special_tokens=False)
    for token_id, expected in enumerate(singles):
        if compacted.decode([token_id]) != expected:
            raise _mismatch("single id", [token_id], expected, compacted.decode([token_id]))

    def check(what: str, ids: list[int]) -> None:
        expected = original.decode(ids, skip_special_tokens=False)
        got = compacted.decode(ids)
        if got != expected:
            raise _mismatch(what, ids, expected, got)

    rng = random.Random(seed)
    count = 0
    for text in texts:
        count += 1
        ids = list(original.encode(text, add_special_tokens=False).ids)
        check("text", ids)
        for _ in range(50):  # slices start and end inside multi-token characters too
            start = rng.randrange(len(ids) + 1)
            check("text slice", ids[start:rng.randrange(start, len(ids) + 1)])
    for _ in range(RANDOM_SEQUENCES):
        check("random ids", [rng.randrange(size) for _ in range(rng.randrange(1, RANDOM_MAX_LEN))])
    return Verified(ids=size, texts=count, random_sequences=RANDOM_SEQUENCES,
                    original_bytes=(src / TOKENIZER).stat().st_size,
                    compacted_bytes=(dst / DECODE_SPEC).stat().st_size)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m derender.compact", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("src", type=Path, help="folder of model folders (originals)")
    parser.add_argument("dst", type=Path, help="where the compacted model folders go")
    parser.add_argument("--text", type=Path, action="append", default=[],
                        help="a UTF-8 text file to decode-check (repeatable)")
    args = parser.parse_args(argv)
    texts = [SAMPLE, *(path.read_text(encoding="utf-8") for path in args.text)]
    folders = sorted(p for p in args.src.iterdir() if original_tokenizer(p) is not None)
    if not folders:
        print(f"no model folder with a {TOKENIZER}, {TEKKEN} or {TIKTOKEN} in {args.src}",
              file=sys.stderr)
        return 1
    for folder in folders:
        started = time.perf_counter()
        compact_folder(folder, args.dst / folder.name)
        try:
            result = verify_folder(folder, args.dst / folder.name, texts)
        except CompactionError as exc:
            print(f"{folder.name}: compacted tokenizer differs: {exc}", file=sys.stderr)
            return 1
        print(f"{folder.name}: {result.original_bytes:,} → {result.compacted_bytes:,} bytes; "
              f"{result.ids:,} ids, {result.texts} texts and {result.random_sequences} random "
              f"sequences decode identically ({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
