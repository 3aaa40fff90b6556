"""A model folder with a ``tiktoken.model`` and its ``tokenizer_config.json`` decodes as Kimi's.

References: the ``tiktoken`` package (``tiktoken.Encoding(name, pat_str, mergeable_ranks,
special_tokens).decode``, which is what Kimi's ``TikTokenTokenizer.decode`` returns) on every id
and random sequences, and vLLM 0.33's incremental detokenizer over a Kimi-style slow tokenizer
(recorded deltas in ``tests/fixtures/byte-vocab/kimi-tiktoken.json``). The ``tiktoken.model``
is generated (derender_testing/byte_vocab_models.py): real Kimi files cannot be fetched here.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import tiktoken
from tiktoken.load import load_tiktoken_bpe

from derender.compact import CompactionError, compact_folder, verify_folder
from derender.core.decoding.bytevocab import tiktoken_spec
from derender.core.registry import DECODE_SPEC, ModelRegistry, load_vocabulary
from derender_testing.byte_vocab_checks import (
    check_every_id,
    check_random,
    check_recorded,
    check_streaming_equals_whole,
    client,
    folder,
    per_token,
    recorded,
    served_texts,
    spaces_matter,
    vocab,
)

NAME = "kimi-tiktoken"
TEXT = ("Hello world! Grüße aus München — naïve café. 日本語のテキスト、한국어 문장. "
        "Emoji: 🫠👍🏽👨‍👩‍👧 🇯🇵 𝔘𝔫𝔦𝔠𝔬𝔡𝔢\ndef f(x):\n    return {'a': [1, 2]}\n") * 12


@functools.cache
def encoding() -> tiktoken.Encoding:
    """The tokenizer as Kimi's ``TikTokenTokenizer.__init__`` builds it."""
    ranks = load_tiktoken_bpe(str(folder(NAME) / "tiktoken.model"))
    config = json.loads((folder(NAME) / "tokenizer_config.json").read_text(encoding="utf-8"))
    names = {int(i): t["content"] for i, t in config["added_tokens_decoder"].items()}
    base = len(ranks)
    specials = {names.get(i, f"<|reserved_token_{i}|>"): i for i in range(base, base + 258)}
    return tiktoken.Encoding(name="kimi", pat_str=r"\S+|\s+", mergeable_ranks=ranks,
                             special_tokens=specials)


def test_every_id_decodes_as_tiktoken() -> None:
    enc = encoding()
    check_every_id(vocab(NAME), [enc.decode([i]) for i in range(enc.n_vocab)])


def test_random_sequences_decode_as_tiktoken() -> None:
    enc = encoding()
    pool = [*range(128, 256), *range(enc.n_vocab - 258, enc.n_vocab)]
    check_random(vocab(NAME), enc.decode, NAME, pool)


def test_ids_and_special_tokens_are_kimis() -> None:
    v, record, enc = vocab(NAME), recorded(NAME), encoding()
    assert v.size == enc.n_vocab == record["vocab_size"] == 130072 + 258
    assert v.special_ids == set(record["all_special_ids"])  # transformers' all_special_ids
    assert v.eos_id == enc.encode_single_token("[EOS]")
    assert v.model_eos_ids == {v.eos_id, enc.encode_single_token("<|im_end|>")}
    assert v.token_id("<think>") == enc.encode_single_token("<think>")
    assert v.decode([enc.encode_single_token("<|café|>")]) == "<|café|>"
    assert v.decode([130072 + 100]) == "<|reserved_token_130172|>"


def test_incremental_detokenization_is_vllms() -> None:
    assert check_recorded(NAME) == 240


def test_spaces_between_special_tokens_false_is_vllms() -> None:
    """Issue 24: the request's ``spaces_between_special_tokens`` reaches the slow join (vLLM
    recorded with it false); a good share of those cases read differently with the default."""
    assert check_recorded(NAME, f"{NAME}-no-spaces") == 120
    assert spaces_matter(NAME) >= 10


def test_streaming_equals_the_whole_decode() -> None:
    enc = encoding()
    ids = enc.encode(TEXT, disallowed_special=())
    specials = [enc.encode_single_token(s) for s in ("<|im_end|>", "<think>", "[EOS]")]
    mixed = [t for i, token in enumerate(ids) for t in ([token, specials[i % 3]] if i % 7 == 0
                                                         else [token])]
    check_streaming_equals_whole(vocab(NAME), [ids, mixed, [128 + i % 128 for i in range(700)]],
                                 NAME)


def test_a_tiktoken_folder_is_served(tmp_path: Path) -> None:
    http = client(NAME, tmp_path)
    cases = [c for c in recorded(NAME)["cases"] if c["skip_special_tokens"]][:6]
    for case in cases:
        whole, streamed, completion = served_texts(http, NAME, case["ids"], case["prompt"])
        assert whole == streamed == completion == case["text"], case


def test_the_service_passes_spaces_between_special_tokens_through(tmp_path: Path) -> None:
    """The request field reaches the decode on every path (chat whole and streamed,
    completion): recorded cases keeping special tokens whose text depends on it."""
    http = client(NAME, tmp_path)
    v = vocab(NAME)
    cases = [c for c in recorded(f"{NAME}-no-spaces")["cases"] if not c["skip_special_tokens"]
             and c["text"] != "".join(per_token(v, c["prompt"], c["ids"], False))][:4]
    assert len(cases) == 4
    for case in cases:
        sampling = {"skip_special_tokens": False, "spaces_between_special_tokens": False}
        texts = served_texts(http, NAME, case["ids"], case["prompt"], sampling)
        assert texts == (case["text"],) * 3, case
        default = served_texts(http, NAME, case["ids"], case["prompt"],
                               {"skip_special_tokens": False})
        assert default[0] == default[1] == default[2] != case["text"]


def test_a_folder_needs_one_tokenizer_file(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "tokenizer_config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(RuntimeError, match="cannot be served: empty"):
        ModelRegistry(tmp_path)
    with pytest.raises(RuntimeError, match="no model folder"):
        ModelRegistry(tmp_path, skip_unservable=True)


def test_a_bad_tiktoken_model_is_refused() -> None:
    with pytest.raises(ValueError, match="line 2"):
        tiktoken_spec(b"IQ== 0\nnot-base64!\n", {})
    with pytest.raises(ValueError, match="gaps"):
        tiktoken_spec(b"IQ== 0\nIg== 2\n", {})


def test_compaction_round_trip(tmp_path: Path) -> None:
    compact_folder(folder(NAME), tmp_path / NAME)
    assert not (tmp_path / NAME / "tiktoken.model").exists()
    assert (tmp_path / NAME / "tokenizer_config.json").is_file()
    result = verify_folder(folder(NAME), tmp_path / NAME, [])
    assert (result.ids, result.random_sequences) == (130330, 2000)
    original, compact = vocab(NAME), load_vocabulary(tmp_path / NAME)
    for field in ("pieces", "added_ids", "special_ids", "eos_id", "model_eos_ids", "kind",
                  "fast_path", "byte_level"):
        assert getattr(compact, field) == getattr(original, field), field
    for case in recorded(NAME)["cases"]:
        skip = case["skip_special_tokens"]
        assert per_token(compact, case["prompt"], case["ids"], skip) == case["deltas"]


@pytest.mark.parametrize("change", ["piece", "special", "added"])
def test_verification_catches_a_difference(tmp_path: Path, change: str) -> None:
    compact_folder(folder(NAME), tmp_path / "k")
    path = tmp_path / "k" / DECODE_SPEC
    spec = json.loads(path.read_text(encoding="utf-8"))
    if change == "piece":
        spec["pieces"][5000] = spec["pieces"][5001]
    elif change == "special":
        spec["pieces"][130074] = "<|im_end|> "
    else:
        spec["added_ids"].remove(130073)
    path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(CompactionError):
        verify_folder(folder(NAME), tmp_path / "k", [])
