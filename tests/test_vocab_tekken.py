"""A model folder with Mistral's ``tekken.json`` decodes as vLLM 0.33's mistral tokenizer mode.

References: ``mistral_common``'s ``Tekkenizer`` (``decode(ids, KEEP)``, what vLLM's
``MistralTokenizer.decode`` and its logprobs use) on every id and random sequences, and vLLM
0.33's own incremental detokenizer over its ``MistralTokenizer`` (recorded deltas in
``tests/fixtures/byte-vocab/tekken-*.json``).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
from mistral_common.tokens.tokenizers.tekken import Tekkenizer

from derender.compact import CompactionError, compact_folder, verify_folder
from derender.core.registry import DECODE_SPEC, load_vocabulary
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

MODELS = ("tekken-v3", "tekken-v13")
KEEP = SpecialTokenPolicy.KEEP
TEXT = ("Hello world! Grüße aus München — naïve café. 日本語のテキスト、한국어 문장. "
        "Emoji: 🫠👍🏽👨‍👩‍👧 🇯🇵 𝔘𝔫𝔦𝔠𝔬𝔡𝔢\ndef f(x):\n    return {'a': [1, 2]}\n") * 12


@functools.cache
def tekken(name: str) -> Tekkenizer:
    return Tekkenizer.from_file(str(folder(name) / "tekken.json"))


@pytest.mark.parametrize("name", MODELS)
def test_every_id_decodes_as_mistral_common(name: str) -> None:
    t = tekken(name)
    check_every_id(vocab(name), [t.decode([i], KEEP) for i in range(t.n_words)])


@pytest.mark.parametrize("name", MODELS)
def test_random_sequences_decode_as_mistral_common(name: str) -> None:
    t = tekken(name)
    pool = [*range(40), *range(t.num_special_tokens + 128, t.num_special_tokens + 256)]
    check_random(vocab(name), lambda ids: t.decode(ids, KEEP), name, pool)


@pytest.mark.parametrize("name", MODELS)
def test_ids_sizes_and_special_tokens_are_vllms(name: str) -> None:
    t, v, record = tekken(name), vocab(name), recorded(name)
    assert v.size == t.n_words == record["vocab_size"] == 131072
    assert v.eos_id == t.eos_id == 2
    assert v.model_eos_ids == {2}
    shown = {t.get_special_token(s) for s in ("[TOOL_CALLS]", "[ARGS]", "[THINK]", "[/THINK]")
             if t.is_special(s)}
    assert v.special_ids == set(record["all_special_ids"]) - shown
    assert v.token_id("[TOOL_CALLS]") == 9
    if name == "tekken-v13":
        assert (v.token_id("[ARGS]"), v.token_id("[THINK]"), v.token_id("[/THINK]")) == (23, 25, 26)
        assert len(shown) == 4
    assert v.decode([t.num_special_tokens + 1000]) == t.id_to_piece(t.num_special_tokens + 1000)


@pytest.mark.parametrize("name", MODELS)
def test_incremental_detokenization_is_vllms(name: str) -> None:
    assert check_recorded(name) == 240


@pytest.mark.parametrize("name", MODELS)
def test_spaces_between_special_tokens_false_changes_nothing(name: str) -> None:
    """Issue 24: vLLM's tekken detokenization (``MistralTokenizer``) does not consult
    ``spaces_between_special_tokens``; recorded with it false, it answers as by default."""
    assert check_recorded(name, f"{name}-no-spaces") == 120
    assert spaces_matter(name) == 0


@pytest.mark.parametrize("name", MODELS)
def test_streaming_equals_the_whole_decode(name: str) -> None:
    t = tekken(name)
    texts = [t.encode(TEXT, bos=False, eos=False),
             t.encode(TEXT, bos=True, eos=True)[::-1],
             [t.num_special_tokens + 128 + i % 128 for i in range(700)]]
    check_streaming_equals_whole(vocab(name), texts, name)


def test_a_tekken_folder_is_served(tmp_path: Path) -> None:
    """Chat (whole and streamed one id per call) and completions give vLLM's recorded text."""
    http = client("tekken-v3", tmp_path)
    cases = [c for c in recorded("tekken-v3")["cases"] if c["skip_special_tokens"]][:6]
    for case in cases:
        whole, streamed, completion = served_texts(http, "tekken-v3", case["ids"], case["prompt"])
        assert whole == streamed == completion == case["text"], case


@pytest.mark.parametrize("name", MODELS)
def test_compaction_round_trip(tmp_path: Path, name: str) -> None:
    compact_folder(folder(name), tmp_path / name)
    assert not (tmp_path / name / "tekken.json").exists()
    result = verify_folder(folder(name), tmp_path / name, [])
    assert (result.ids, result.random_sequences) == (131072, 2000)
    assert result.compacted_bytes < result.original_bytes / 5
    original, compact = vocab(name), load_vocabulary(tmp_path / name)
    for field in ("pieces", "added_ids", "special_ids", "eos_id", "model_eos_ids", "kind",
                  "hidden_ids", "fast_path", "byte_level"):
        assert getattr(compact, field) == getattr(original, field), field
    for case in recorded(name)["cases"]:
        skip = case["skip_special_tokens"]
        assert per_token(compact, case["prompt"], case["ids"], skip) == case["deltas"]


@pytest.mark.parametrize("change", ["piece", "special", "hidden", "eos", "kind"])
def test_verification_catches_a_difference(tmp_path: Path, change: str) -> None:
    compact_folder(folder("tekken-v3"), tmp_path / "t")
    path = tmp_path / "t" / DECODE_SPEC
    spec = json.loads(path.read_text(encoding="utf-8"))
    if change == "piece":
        spec["pieces"][1000 + 500], spec["pieces"][1000 + 501] = \
            spec["pieces"][1000 + 501], spec["pieces"][1000 + 500]
    elif change == "special":
        spec["special_ids"].remove(3)
    elif change == "hidden":
        spec["hidden_ids"].remove(1)
    elif change == "eos":
        spec["eos_id"] = 1
    else:
        spec["kind"] = "tiktoken"
    path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(CompactionError):
        verify_folder(folder("tekken-v3"), tmp_path / "t", [])
