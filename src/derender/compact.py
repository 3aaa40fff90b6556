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
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer

from derender.core.registry import DECODE_SPEC, TOKENIZER, load_vocabulary
from derender.core.vocab import Vocabulary, decode_spec

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
    """Copy one model folder, its ``tokenizer.json`` replaced by ``decode.json``."""
    dst.mkdir(parents=True, exist_ok=True)
    for file in sorted(src.iterdir()):
        if file.name == TOKENIZER:
            spec = decode_spec(json.loads(file.read_bytes()))
            text = json.dumps(spec, ensure_ascii=False, separators=(",", ":"))
            (dst / DECODE_SPEC).write_text(text, encoding="utf-8")
        elif file.is_file() and file.name != DECODE_SPEC:
            shutil.copyfile(file, dst / file.name)


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


def verify_folder(src: Path, dst: Path, texts: Iterable[str], seed: int = 0) -> Verified:
    """Check that ``dst`` (compacted) decodes exactly as ``src``'s original tokenizer."""
    original = Tokenizer.from_file(str(src / TOKENIZER))
    compacted: Vocabulary = load_vocabulary(dst)
    full = load_vocabulary(src)
    for field in ("special_ids", "eos_id", "model_eos_ids", "space_marker", "fast_path",
                  "byte_level"):
        if getattr(compacted, field) != getattr(full, field):
            raise CompactionError(f"{field} is {getattr(compacted, field)!r}, "
                                     f"{getattr(full, field)!r} from the original")
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
    folders = sorted(p for p in args.src.iterdir() if (p / TOKENIZER).is_file())
    if not folders:
        print(f"no model folder with a {TOKENIZER} in {args.src}", file=sys.stderr)
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
