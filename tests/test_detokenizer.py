"""Incremental detokenization checked against an independent, literal reference.

The reference below is vLLM's per-token algorithm exactly as docs/vllm-compat/api.md §5.3
(seeding) and §5.4 (window of pieces, prefix/read offsets, U+FFFD hold-back) describe it,
written only in terms of the raw ``tokenizers`` objects: ``id_to_token`` for pieces and the
tokenizer's own decoder for ``convert_tokens_to_string``. Special ids come from the fixtures
README table, not from the code under test. Expected values are the reference's output, the
tokenizer's own ``decode``, or literal values from api.md.
"""

from __future__ import annotations

import functools
import itertools
import random
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derender.core.decoding.detokenizer import (
    BLOCK,
    DecodeWindow,
    detokenize,
    seed_window,
)
from derender.core.decoding.vocab import Vocabulary
from derender_testing.models import reference, require_model, vocabulary

MODELS = ("qwen3", "mistral-7b", "deepseek-v4", "gpt2")
ALL_MODELS = (*MODELS, "llama3.1")

# The ids `skip_special_tokens` removes, per tests/fixtures/vllm-0.33/README.md.
SPECIAL_IDS: dict[str, frozenset[int]] = {
    "qwen3": frozenset(range(151643, 151657)),
    "mistral-7b": frozenset({0, 1, 2}),
    "deepseek-v4": frozenset({0, 1}),
    "gpt2": frozenset({50256}),
    "llama3.1": frozenset({128000, 128009}),
}

# Tokenizer sizes from the same README table.
VOCAB_SIZES = {"qwen3": 151669, "mistral-7b": 32000, "deepseek-v4": 129280, "gpt2": 50257,
               "llama3.1": 128256}

FFFD = "\ufffd"

TEXTS = (
    "Hello world! How are you today?",
    "Grüße aus München — naïve café, façade.",
    "日本語のテキストと中文字符の混合です。",
    "Привет, мир! Как дела?",
    "مرحبا بالعالم، كيف حالك؟",
    "🫠🙂👍🏽 family: 👨‍👩‍👧‍👦 flags 🇯🇵🇫🇷",
    "def f(x):\n    return {'a': [1, 2, 3]}  # comment\n\tprint(x)",
    "  leading and trailing spaces   ",
    "Ελληνικά και हिन्दी और 한국어",
    "Math: ∑ᵢ xᵢ² ≤ ∞ ≠ √2 ∫₀¹ dx",
    "tabs\tand\nnewlines\r\n\nend",
    "e\u0301 combining, zero\u200bwidth, ﬁ ligature",
)

# Characters of 1–4 UTF-8 bytes; byte-level BPEs often split the rarer ones over tokens.
CHARS = ("a", " ", "é", "ß", "—", "€", "日", "語", "한", "ह", "🫠", "👍", "🏽", "𝔘", "\u200d",
         "\n", "ñ", "Ω", "∑", "🇯")


def load(name: str) -> Vocabulary:
    require_model(name)
    return vocabulary(name)


# --------------------------------------------------------------------------- the reference


def ref_piece(vocab: Vocabulary, token_id: int) -> str:
    piece = reference(vocab).id_to_token(token_id)
    return "" if piece is None else piece


def ref_join(vocab: Vocabulary, pieces: list[str]) -> str:
    """HF ``convert_tokens_to_string`` of a fast tokenizer: its decoder over raw pieces."""
    return str(reference(vocab).decoder.decode(pieces))


@dataclass
class RefState:
    tokens: list[str] = field(default_factory=list)
    prefix: int = 0
    read: int = 0


def ref_seed(vocab: Vocabulary, prompt: list[int] | None, skip: bool,
             special: frozenset[int]) -> RefState:
    """api.md §5.3, literally."""
    if not prompt:
        return RefState()
    pieces = [ref_piece(vocab, i) for i in prompt[-7:] if not (skip and i in special)]
    read = len(pieces)
    return RefState(pieces, max(read - 5, 0), read)


def ref_step(vocab: Vocabulary, state: RefState, token: int, skip: bool,
             special: frozenset[int]) -> str:
    """api.md §5.4 steps 1–6 for one id; mutates ``state`` and returns the emission."""
    vocab_len = reference(vocab).get_vocab_size(with_added_tokens=True)
    if 0 <= token < vocab_len:
        new = [] if skip and token in special else [ref_piece(vocab, token)]
    else:
        new = [""]
    out = state.tokens + new
    prefix_text = ref_join(vocab, out[state.prefix:state.read])
    new_text = ref_join(vocab, out[state.prefix:])
    if len(new_text) <= len(prefix_text) or new_text.endswith(FFFD):
        emitted = ""
        prefix, read = state.prefix, state.read
    else:
        emitted = new_text[len(prefix_text):]
        prefix, read = state.read, len(state.tokens) + len(new)
    state.tokens = out[prefix:]
    state.read = read - prefix
    state.prefix = 0
    return emitted


def ref_detokenize(vocab: Vocabulary, name: str, prompt: list[int] | None, ids: list[int],
                   skip: bool) -> str:
    special = SPECIAL_IDS[name]
    state = ref_seed(vocab, prompt, skip, special)
    return "".join(ref_step(vocab, state, i, skip, special) for i in ids)


# --------------------------------------------------------------------------- helpers


def encode(vocab: Vocabulary, text: str) -> list[int]:
    return list(reference(vocab).encode(text, add_special_tokens=False).ids)


def chunked(vocab: Vocabulary, window: DecodeWindow, ids: list[int], cuts: list[int],
            skip: bool) -> list[str]:
    """Outputs of ``detokenize`` called once per chunk, threading the window."""
    bounds = [0, *sorted(c for c in set(cuts) if 0 < c < len(ids)), len(ids)]
    parts = []
    for start, end in itertools.pairwise(bounds):
        text, window = detokenize(vocab, window, ids[start:end], skip)
        parts.append(text)
    return parts


def pieces_of_window(vocab: Vocabulary, window: DecodeWindow) -> list[str]:
    return [ref_piece(vocab, i) for i in window.ids]


def check_all_ways(vocab: Vocabulary, name: str, prompt: list[int] | None, ids: list[int],
                   skip: bool, cuts: list[int]) -> str:
    """Reference == whole-sequence detokenize == concatenated chunked detokenize."""
    expected = ref_detokenize(vocab, name, prompt, ids, skip)
    seed = seed_window(vocab, prompt, skip)
    whole, _ = detokenize(vocab, seed, ids, skip)
    assert whole == expected, (prompt, ids, skip)
    parts = chunked(vocab, seed, ids, cuts, skip)
    assert "".join(parts) == expected, (prompt, ids, skip, cuts, parts)
    one_by_one = chunked(vocab, seed, ids, list(range(len(ids))), skip)
    assert "".join(one_by_one) == expected, (prompt, ids, skip)
    return expected


# --------------------------------------------------------------------------- vocabulary facts


@pytest.mark.parametrize("name", ALL_MODELS)
def test_special_ids_match_fixture_table(name: str) -> None:
    vocab = load(name)
    assert vocab.special_ids == SPECIAL_IDS[name]


@pytest.mark.parametrize("name", ALL_MODELS)
def test_vocab_size_and_pieces_match_tokenizer(name: str) -> None:
    vocab = load(name)
    assert vocab.size == VOCAB_SIZES[name]
    assert vocab.size == reference(vocab).get_vocab_size(with_added_tokens=True)
    assert list(vocab.pieces) == [ref_piece(vocab, i) for i in range(vocab.size)]


# --------------------------------------------------------------------------- spec worked examples


def test_spec_qwen3_window_evolution_for_split_emoji() -> None:
    """§5.4: `A`, `🫠` (three byte tokens), `B` streamed one id at a time."""
    vocab = load("qwen3")
    ids = encode(vocab, "A🫠B")
    assert [ref_piece(vocab, i) for i in ids] == ["A", "ðŁ", "«", "ł", "B"]
    expected = [  # (emitted, window pieces, read) after each id, per the spec
        ("A", ["A"], 1),
        ("", ["A", "ðŁ"], 1),
        ("", ["A", "ðŁ", "«"], 1),
        ("🫠", ["ðŁ", "«", "ł"], 3),
        ("B", ["B"], 1),
    ]
    # The literal reference reproduces the spec's listing ...
    special = SPECIAL_IDS["qwen3"]
    state = ref_seed(vocab, None, True, special)
    for token, (text, pieces, read) in zip(ids, expected, strict=True):
        assert ref_step(vocab, state, token, True, special) == text
        assert (state.tokens, state.read, state.prefix) == (pieces, read, 0)
    # ... and so does the implementation.
    window = seed_window(vocab, None, True)
    for token, (text, pieces, read) in zip(ids, expected, strict=True):
        got, window = detokenize(vocab, window, [token], True)
        assert got == text
        assert pieces_of_window(vocab, window) == pieces
        assert window.read == read
    # Whole sequence and the emoji alone within one call.
    assert detokenize(vocab, DecodeWindow(), ids, True)[0] == "A🫠B"
    window = detokenize(vocab, DecodeWindow(), ids[:1], True)[1]
    assert detokenize(vocab, window, ids[1:3], True)[0] == ""


def test_spec_mistral_seeded_keeps_leading_space() -> None:
    """§5.3: unseeded Mistral output `Tokyo. …`, seeded ` Tokyo. …`."""
    vocab = load("mistral-7b")
    prompt = [1, *encode(vocab, "[INST] What is the capital of Japan? [/INST]")]
    answer = encode(vocab, "Tokyo. It is the capital of Japan.")
    assert ref_piece(vocab, answer[0]) == "▁Tokyo"
    ids = [*answer, 2]
    plain = reference(vocab).decode(answer, skip_special_tokens=True)
    assert plain == "Tokyo. It is the capital of Japan."
    unseeded, _ = detokenize(vocab, seed_window(vocab, None, True), ids, True)
    seeded, _ = detokenize(vocab, seed_window(vocab, prompt, True), ids, True)
    assert unseeded == plain
    assert seeded == " " + plain
    assert seeded == ref_detokenize(vocab, "mistral-7b", prompt, ids, True)
    # An explicit empty prompt is no seed at all.
    assert seed_window(vocab, [], True) == DecodeWindow()
    assert detokenize(vocab, seed_window(vocab, [], True), ids, True)[0] == plain


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("skip", [True, False])
def test_seed_matches_reference_state(name: str, skip: bool) -> None:
    """§5.3: last 7 ids, specials dropped when skipping, last 5 pieces form the window."""
    vocab = load(name)
    special = sorted(SPECIAL_IDS[name])
    words = encode(vocab, "The quick brown fox jumps over the lazy dog again")
    prompts = [
        words,
        words[:3],
        [*words, special[0], special[-1]],
        [special[0], *words[:2], special[-1]],
        [*words[:6], special[0]],
        [special[0]] * 9,
    ]
    for prompt in prompts:
        ref = ref_seed(vocab, prompt, skip, SPECIAL_IDS[name])
        window = seed_window(vocab, prompt, skip)
        assert pieces_of_window(vocab, window) == ref.tokens[ref.prefix:]
        assert window.read == ref.read - ref.prefix
        assert window.read == len(window.ids) <= 5
        tail = [i for i in prompt[-7:] if not (skip and i in SPECIAL_IDS[name])][-5:]
        assert list(window.ids) == tail


def test_qwen3_skip_special_tokens_in_text() -> None:
    """Special ids vanish with skip and are kept verbatim without; `<think>` is not special."""
    vocab = load("qwen3")
    ids = [9707, 151645, 151667, 1879, 151643]
    assert detokenize(vocab, DecodeWindow(), ids, True)[0] == "Hello<think> world"
    assert (detokenize(vocab, DecodeWindow(), ids, False)[0]
            == "Hello<|im_end|><think> world<|endoftext|>")
    for skip in (True, False):
        assert (detokenize(vocab, DecodeWindow(), ids, skip)[0]
                == ref_detokenize(vocab, "qwen3", None, ids, skip))


def test_invalid_byte_run_after_a_stripped_space_regroups_like_the_reference() -> None:
    """Mistral ``<unk>``, ``<0x20>``, ``<0xC3>``, ``<unk>`` (found by hypothesis). By §5.4 the
    space is emitted when it arrives; the window is then ``[<0x20>]``, which alone decodes to
    "" (the decoder's Strip); ``<0xC3>`` makes the byte run invalid, so ByteFallback turns both
    bytes into U+FFFD, held; the last ``<unk>`` emits all of "��<unk>" (nothing of the window
    counts as already emitted). A wider window that decodes alike would emit one U+FFFD."""
    vocab = load("mistral-7b")
    ids = [0, 35, 198, 0]
    assert check_all_ways(vocab, "mistral-7b", None, ids, False, [2]) == "<unk> \ufffd\ufffd<unk>"


def test_mistral_byte_fallback_run() -> None:
    """`<0xNN>` pieces (ids 3–258) hold back until the character is complete."""
    vocab = load("mistral-7b")
    assert [ref_piece(vocab, i) for i in (3, 258)] == ["<0x00>", "<0xFF>"]
    emoji = [3 + b for b in "🫠".encode()]
    ids = [*encode(vocab, "Hi"), *emoji, *encode(vocab, "there")]
    window = DecodeWindow()
    outputs = []
    for token in ids:
        text, window = detokenize(vocab, window, [token], True)
        outputs.append(text)
    hi = len(encode(vocab, "Hi"))
    assert outputs[hi:hi + 3] == ["", "", ""]
    assert outputs[hi + 3] == "🫠"
    assert "".join(outputs) == ref_detokenize(vocab, "mistral-7b", None, ids, True)
    assert "".join(outputs) == reference(vocab).decode(ids)


# --------------------------------------------------------------------------- decode agreement


@pytest.mark.parametrize("name", ALL_MODELS)
@pytest.mark.parametrize("text", TEXTS)
def test_valid_text_equals_tokenizer_decode(name: str, text: str) -> None:
    """For complete text the emissions concatenate to the tokenizer's own decode."""
    vocab = load(name)
    ids = encode(vocab, text)
    for skip in (True, False):
        expected = reference(vocab).decode(ids, skip_special_tokens=skip)
        assert detokenize(vocab, DecodeWindow(), ids, skip)[0] == expected
        assert "".join(chunked(vocab, DecodeWindow(), ids, list(range(len(ids))), skip)) \
            == expected
    assert ref_detokenize(vocab, name, None, ids, True) == reference(vocab).decode(ids)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("text", TEXTS[:8])
def test_specials_skipped_like_tokenizer_decode(name: str, text: str) -> None:
    """Special ids spliced in anywhere (even inside a split character) vanish with skip."""
    vocab = load(name)
    ids = encode(vocab, text)
    special = sorted(SPECIAL_IDS[name])
    rng = random.Random(f"{name}{text}")
    spliced = list(ids)
    for _ in range(4):
        spliced.insert(rng.randrange(len(spliced) + 1), rng.choice(special))
    expected = reference(vocab).decode(spliced, skip_special_tokens=True)
    assert expected == reference(vocab).decode(ids, skip_special_tokens=True)
    assert detokenize(vocab, DecodeWindow(), spliced, True)[0] == expected


@pytest.mark.parametrize("name", ALL_MODELS)
@pytest.mark.parametrize(("before", "after"), [
    ("Answer:", " The café in 東京 serves 🍣 and ramen."),
    ("東京", "は🍣です"),
    ("Question? ", "Yes.\n\nNo."),
    ("[INST] Where? [/INST]", "Tokyo. 🫠 ok"),
    ("def f():\n", "    return 1"),
])
def test_seeded_text_equals_decode_of_continuation(name: str, before: str, after: str) -> None:
    """Seeded by a prompt of complete text, the output text is what decoding prompt + output
    adds after the prompt's own decode."""
    vocab = load(name)
    prompt, out = encode(vocab, before), encode(vocab, after)
    head = reference(vocab).decode(prompt)
    full = reference(vocab).decode(prompt + out)
    assert full.startswith(head)
    text_out, _ = detokenize(vocab, seed_window(vocab, prompt, True), out, True)
    assert text_out == full[len(head):]
    assert text_out == ref_detokenize(vocab, name, prompt, out, True)


# --------------------------------------------------------------------------- long sequences


@functools.cache
def long_ids(name: str) -> list[int]:
    vocab = load(name)
    text = "\n".join(f"{i}: {t}" for i in range(400) for t in TEXTS[i % len(TEXTS):][:2])
    ids = encode(vocab, text)
    assert len(ids) >= 2000 > 3 * BLOCK
    return ids


@functools.cache
def long_reference(name: str, skip: bool, with_specials: bool) -> tuple[list[int], str]:
    vocab = load(name)
    ids = list(long_ids(name))
    if with_specials:
        rng = random.Random(name)
        special = sorted(SPECIAL_IDS[name])
        for _ in range(40):
            ids.insert(rng.randrange(len(ids)), rng.choice(special))
        # stray pieces that are not valid UTF-8 on their own (a lone lead byte)
        lone = 3 + 0xF0 if name == "mistral-7b" else encode(vocab, "🫠")[0]
        assert reference(vocab).decode([lone]).endswith(FFFD)
        for _ in range(10):
            ids.insert(rng.randrange(len(ids)), lone)
    return ids, ref_detokenize(vocab, name, None, ids, skip)


@pytest.mark.parametrize("name", MODELS)
def test_long_text_crosses_blocks_and_equals_decode(name: str) -> None:
    vocab = load(name)
    ids = long_ids(name)
    expected = reference(vocab).decode(ids)
    text, _ = detokenize(vocab, DecodeWindow(), ids, True)
    assert text == expected
    assert text == long_reference(name, True, False)[1]
    for cuts in ([BLOCK - 1, BLOCK + 1, 2 * BLOCK], [BLOCK], list(range(0, len(ids), 37))):
        assert "".join(chunked(vocab, DecodeWindow(), ids, cuts, True)) == expected


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("skip", [True, False])
def test_long_mixed_sequence_equals_reference(name: str, skip: bool) -> None:
    vocab = load(name)
    ids, expected = long_reference(name, skip, True)
    assert detokenize(vocab, DecodeWindow(), ids, skip)[0] == expected
    rng = random.Random(len(ids))
    cuts = sorted(rng.sample(range(1, len(ids)), 25))
    assert "".join(chunked(vocab, DecodeWindow(), ids, cuts, skip)) == expected


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_long_text_random_chunking(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(MODELS))
    vocab = load(name)
    ids, expected = long_reference(name, True, True)
    cuts = data.draw(st.lists(st.integers(1, len(ids) - 1), max_size=12))
    assert "".join(chunked(vocab, DecodeWindow(), ids, cuts, True)) == expected


# --------------------------------------------------------------------------- property tests


MAX_LEN = 59


def atoms(name: str, vocab: Vocabulary) -> st.SearchStrategy[list[int]]:
    special = sorted(SPECIAL_IDS[name])
    size = vocab.size
    options = [
        st.integers(0, size - 1).map(lambda i: [i]),
        st.sampled_from(special).map(lambda i: [i]),
        st.sampled_from(CHARS).map(lambda c: encode(vocab, c)),
        st.sampled_from(CHARS).map(lambda c: encode(vocab, c)[:-1]),  # unfinished char
        st.sampled_from(("Hello", " world", "ing", "\n\n", " 日本", "  ", "!"))
        .map(lambda w: encode(vocab, w)),
        # the high and added ids (special and non-special added tokens)
        st.integers(max(0, size - 300), size - 1).map(lambda i: [i]),
    ]
    if name == "mistral-7b":
        options += [
            st.lists(st.integers(3, 258), min_size=1, max_size=5),  # raw byte pieces
            st.sampled_from(CHARS).map(lambda c: [3 + b for b in c.encode()]),
            st.sampled_from(CHARS).map(lambda c: [3 + b for b in c.encode()][:-1]),
            st.just([28705]),  # lone ▁
        ]
    return st.one_of(options)


def sequences(name: str, vocab: Vocabulary, max_len: int) -> st.SearchStrategy[list[int]]:
    return st.lists(atoms(name, vocab), max_size=max_len).map(
        lambda parts: [i for part in parts for i in part][:max_len])


@pytest.mark.parametrize("name", MODELS)
@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_random_ids_match_reference(name: str, data: st.DataObject) -> None:
    vocab = load(name)
    ids = data.draw(sequences(name, vocab, MAX_LEN), label="ids")
    prompt = data.draw(st.one_of(st.none(), sequences(name, vocab, 12)), label="prompt")
    skip = data.draw(st.booleans(), label="skip")
    cuts = data.draw(st.lists(st.integers(1, max(1, len(ids))), max_size=8), label="cuts")
    check_all_ways(vocab, name, prompt, ids, skip, cuts)


@functools.cache
def encoded_texts(name: str) -> tuple[tuple[int, ...], ...]:
    vocab = load(name)
    return tuple(tuple(encode(vocab, t + "\n" + t[::-1])) for t in TEXTS)


@pytest.mark.parametrize("name", MODELS)
@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_real_text_slices_match_reference(name: str, data: st.DataObject) -> None:
    vocab = load(name)
    texts = encoded_texts(name)
    source = list(data.draw(st.sampled_from(texts), label="text"))
    start = data.draw(st.integers(0, len(source)), label="start")
    length = data.draw(st.integers(0, MAX_LEN), label="length")
    ids = source[start:start + length]
    seed_len = data.draw(st.integers(0, 9), label="seed_len")
    prompt = data.draw(st.sampled_from([None, source[max(0, start - seed_len):start]]),
                       label="prompt")
    if prompt is not None and data.draw(st.booleans(), label="special in prompt"):
        prompt = [*prompt, data.draw(st.sampled_from(sorted(SPECIAL_IDS[name])))]
    if ids and data.draw(st.booleans(), label="eos"):
        ids = [*ids[:-1], data.draw(st.sampled_from(sorted(SPECIAL_IDS[name])))]
    skip = data.draw(st.booleans(), label="skip")
    cuts = data.draw(st.lists(st.integers(1, max(1, len(ids))), max_size=8), label="cuts")
    check_all_ways(vocab, name, prompt, ids, skip, cuts)
