"""Stop-token dropping, stop strings and logprob resolution against docs/vllm-compat/api.md
§5.5, §5.6, §5.8, §8.

Expected values are api.md's observed examples (Qwen3 tokenizer), values derived by hand
from its rules, the tokenizer's own ``decode``/``encode``, or a literal reference of
§5.8 written here on top of the raw tokenizer.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derender.contract.requests import ChatRequest, CompletionRequest, GenerateLogProbs
from derender.core.chat import chat_top_logprobs
from derender.core.completions import completion_keep
from derender.core.decoding.detokenizer import DecodeWindow
from derender.core.decoding.logprobs import chat_logprobs, completion_logprobs, resolve_logprobs
from derender.core.decoding.sequence import decode_settings, sequence_text
from derender.core.decoding.stops import StopReason
from derender.core.decoding.vocab import Vocabulary
from derender_testing.models import reference, require_model, vocabulary

HELLO = [9707, 1879, 0, 2585, 525, 498]  # "Hello world! How are you" (spec, Qwen3)
TEXT = "Hello world! How are you"
IM_END = 151645  # <|im_end|>: the tokenizer EOS
ENDOFTEXT = 151643  # <|endoftext|>: the extra generation_config EOS
FFFD = "\ufffd"


def load(name: str) -> Vocabulary:
    require_model(name)
    return vocabulary(name)


def chat_request(**fields: Any) -> ChatRequest:
    return ChatRequest.model_validate({"messages": [{"role": "user", "content": "hi"}],
                                       **fields})


def completion_request(**fields: Any) -> CompletionRequest:
    return CompletionRequest.model_validate({"prompt": "hi", **fields})


def run(ids: list[int], finish: str | None = "stop", reported: StopReason = None,
        request: dict[str, Any] | None = None) -> tuple[str, StopReason]:
    vocab = load("qwen3")
    settings = decode_settings(None if request is None else chat_request(**request))
    return sequence_text(vocab, DecodeWindow(), ids, finish, reported, settings)


def test_qwen3_ids_and_eos_facts() -> None:
    vocab = load("qwen3")
    assert list(reference(vocab).encode(TEXT, add_special_tokens=False).ids) == HELLO
    assert reference(vocab).id_to_token(IM_END) == "<|im_end|>"
    assert reference(vocab).id_to_token(ENDOFTEXT) == "<|endoftext|>"
    assert vocab.eos_id == IM_END
    assert vocab.model_eos_ids == {IM_END, ENDOFTEXT}


# --------------------------------------------------------------------------- §5.5 stop tokens


@pytest.mark.parametrize(("ids", "finish", "reported", "request_", "expected"), [
    # Observed (api.md §5.5).
    ([*HELLO, IM_END], "stop", None, None, (TEXT, None)),
    ([*HELLO, ENDOFTEXT], "stop", None, None, (TEXT, ENDOFTEXT)),
    (HELLO, "stop", None, {"stop_token_ids": [498]}, ("Hello world! How are", 498)),
    (HELLO, "stop", None, {"stop_token_ids": [498], "include_stop_str_in_output": True},
     (TEXT, 498)),
    # Derived from the rules, made visible by keeping special tokens in the text.
    ([*HELLO, IM_END], "stop", None, {"skip_special_tokens": False}, (TEXT, None)),
    ([*HELLO, ENDOFTEXT], "stop", None, {"skip_special_tokens": False}, (TEXT, ENDOFTEXT)),
    ([*HELLO, IM_END], "length", None, {"skip_special_tokens": False},
     (TEXT + "<|im_end|>", None)),
    ([*HELLO, IM_END], "abort", None, {"skip_special_tokens": False},
     (TEXT + "<|im_end|>", None)),
    ([*HELLO, IM_END], None, None, {"skip_special_tokens": False},
     (TEXT + "<|im_end|>", None)),
    ([*HELLO, IM_END], "stop", None,
     {"skip_special_tokens": False, "include_stop_str_in_output": True},
     (TEXT + "<|im_end|>", None)),
    ([*HELLO, ENDOFTEXT], "stop", None,
     {"skip_special_tokens": False, "include_stop_str_in_output": True},
     (TEXT + "<|endoftext|>", ENDOFTEXT)),
    # ignore_eos: neither EOS rule applies ...
    ([*HELLO, IM_END], "stop", None, {"skip_special_tokens": False, "ignore_eos": True},
     (TEXT + "<|im_end|>", None)),
    ([*HELLO, ENDOFTEXT], "stop", None, {"skip_special_tokens": False, "ignore_eos": True},
     (TEXT + "<|endoftext|>", None)),
    # ... but stop_token_ids still do, and report the id.
    ([*HELLO, IM_END], "stop", None,
     {"skip_special_tokens": False, "ignore_eos": True, "stop_token_ids": [IM_END]},
     (TEXT, IM_END)),
    # A request without ignore_eos honours the EOS rules.
    ([*HELLO, ENDOFTEXT], "stop", None, {"skip_special_tokens": False}, (TEXT, ENDOFTEXT)),
    # Reported int stop_reason: stopped iff it is the last id.
    (HELLO, "stop", 498, None, ("Hello world! How are", 498)),
    (HELLO, "stop", 9707, None, (TEXT, 9707)),
    ([*HELLO, ENDOFTEXT], "stop", 498, {"skip_special_tokens": False},
     (TEXT + "<|endoftext|>", 498)),
    # A non-EOS last id that is in no list: nothing dropped.
    (HELLO, "stop", None, None, (TEXT, None)),
    # Length finish ignores stop_token_ids.
    (HELLO, "length", None, {"stop_token_ids": [498]}, (TEXT, None)),
])
def test_stop_token_dropping(ids: list[int], finish: str | None, reported: StopReason,
                             request_: dict[str, Any] | None,
                             expected: tuple[str, StopReason]) -> None:
    assert run(ids, finish, reported, request_) == expected


def test_empty_ids_keep_reported_reason() -> None:
    assert run([], "stop", 7, None) == ("", 7)
    assert run([], "stop", None, None) == ("", None)


# --------------------------------------------------------------------------- §5.6 stop strings


@pytest.mark.parametrize(("ids", "finish", "reported", "request_", "expected"), [
    # Observed (api.md §5.6).
    (HELLO, "stop", None, {"stop": ["world"]}, ("Hello ", "world")),
    (HELLO, "stop", None, {"stop": ["world"], "include_stop_str_in_output": True},
     ("Hello world", "world")),
    (HELLO, "stop", None, {"stop": ["are", "! "]}, ("Hello world", "! ")),
    (HELLO, "stop", "How", None, ("Hello world! ", "How")),
    (HELLO, "stop", None, {"stop": ["world"], "min_tokens": 2}, (TEXT, None)),
    (HELLO, "stop", None, {"stop": ["world"], "min_tokens": 1}, ("Hello ", "world")),
    ([*HELLO, IM_END], "stop", None, {"stop": ["world"]}, ("Hello ", "world")),
    (HELLO, "stop", "xyz", None, (TEXT, "xyz")),
    # §9 item 7 (observed): a reported "" cuts to the first character.
    (HELLO, "stop", "", None, ("H", "")),
    # Derived from the rules.
    (HELLO, "stop", None, {"stop": "world"}, ("Hello ", "world")),
    (HELLO, "stop", None, {"stop": ""}, (TEXT, None)),
    (HELLO, "stop", None, {"stop": ["", "How"]}, ("Hello world! ", "How")),
    (HELLO, "stop", None, {"stop": []}, (TEXT, None)),
    (HELLO, "stop", None, {"stop": ["nothere"]}, (TEXT, None)),
    # ties on the end position go to list order
    (HELLO, "stop", None, {"stop": ["rld", "world"]}, ("Hello wo", "rld")),
    (HELLO, "stop", None, {"stop": ["world", "rld"]}, ("Hello ", "world")),
    # earliest end wins over list order
    (HELLO, "stop", None, {"stop": ["you", "How"]}, ("Hello world! ", "How")),
    # a match may start in the min_tokens head as long as it ends in the tail
    (HELLO, "stop", None, {"stop": ["lo w"], "min_tokens": 1}, ("Hel", "lo w")),
    # the first occurrence from the search start, even if a later one exists
    (HELLO, "stop", None, {"stop": ["o"]}, ("Hell", "o")),
    (HELLO, "stop", None, {"stop": ["o"], "min_tokens": 1}, ("Hello w", "o")),
    # include with a match at the very end: nothing cut
    (HELLO, "stop", None, {"stop": ["you"], "include_stop_str_in_output": True},
     (TEXT, "you")),
    # min_tokens covering everything: no tail, no match
    (HELLO, "stop", None, {"stop": ["you"], "min_tokens": 6}, (TEXT, None)),
    # not a stop finish, or an int reason: no stop strings
    (HELLO, "length", None, {"stop": ["world"]}, (TEXT, None)),
    (HELLO, None, None, {"stop": ["world"]}, (TEXT, None)),
    ([*HELLO, ENDOFTEXT], "stop", None, {"stop": ["world"]}, ("Hello ", "world")),
    (HELLO, "stop", 498, {"stop": ["world"]}, ("Hello world! How are", 498)),
    # a reported string replaces the request's list
    (HELLO, "stop", "are", {"stop": ["world"]}, ("Hello world! How ", "are")),
])
def test_stop_strings(ids: list[int], finish: str | None, reported: StopReason,
                      request_: dict[str, Any] | None,
                      expected: tuple[str, StopReason]) -> None:
    assert run(ids, finish, reported, request_) == expected


def test_stop_string_after_multibyte_character() -> None:
    """Offsets are code points: a cut after `🫠` keeps the whole character."""
    vocab = load("qwen3")
    ids = list(reference(vocab).encode("A🫠B🫠C", add_special_tokens=False).ids)
    assert run(ids, "stop", None, {"stop": ["B"]}) == ("A🫠", "B")
    assert run(ids, "stop", None, {"stop": ["🫠C"]}) == ("A🫠B", "🫠C")
    assert run(ids, "stop", None, {"stop": ["🫠"], "include_stop_str_in_output": True}) \
        == ("A🫠", "🫠")


# --------------------------------------------------------------------------- §5.8 reference


@functools.cache
def leading_space_marker(name: str) -> str | None:
    """The Metaspace ``replacement`` of the tokenizer.json pre-tokenizer (§5.1), if any."""
    def find(spec: Any) -> str | None:
        if not isinstance(spec, dict):
            return None
        if spec.get("type") == "Metaspace":
            return str(spec.get("replacement", "▁"))
        for child in spec.get("pretokenizers") or []:
            if (found := find(child)) is not None:
                return found
        return None
    return find(json.loads(reference(load(name)).to_str()).get("pre_tokenizer"))


def ref_resolve(name: str, token_id: int, context: list[int]
                ) -> tuple[str, list[int] | None]:
    """api.md §5.8 steps 2–3 for one id, literally, on the raw tokenizer."""
    tok = reference(load(name))
    piece = tok.id_to_token(token_id)
    if piece is None:
        return "", None

    def dec(ids: list[int]) -> str:
        return str(tok.decode(ids, skip_special_tokens=False))

    s = dec([token_id])
    marker = leading_space_marker(name)
    if marker is not None:
        n = len(piece) - len(piece.lstrip(marker))
        missing = n - (len(s) - len(s.lstrip(" ")))
        if missing > 0:
            s = " " * missing + s
    if s.endswith(FFFD):
        resolved = ""
        for j in range(1, min(4, len(context)) + 1):
            ctx = context[-j:]
            full = dec([*ctx, token_id])
            if full.endswith(FFFD):
                continue
            kept = list(ctx)
            while kept and dec([kept[-1]]).endswith(FFFD):
                kept.pop()
            clean = dec(kept) if kept else ""
            if full.startswith(clean):
                resolved = full[len(clean):]
            else:
                common = 0
                while (common < min(len(full), len(clean))
                       and full[common] == clean[common]):
                    common += 1
                resolved = full[common:]
            break
        s = resolved
    return s, list(s.encode("utf-8"))


def logprobs_of(entries: list[tuple[int, list[int]]]) -> GenerateLogProbs:
    """Engine logprobs: (sampled id, candidate ids); logprobs -0.1·position, -1-i."""
    return GenerateLogProbs.model_validate({"content": [
        {"token_id": tid, "logprob": -0.1 * n,
         "top_logprobs": [{"token_id": c, "logprob": -1.0 - i} for i, c in enumerate(cands)]}
        for n, (tid, cands) in enumerate(entries)
    ]})


def test_spec_emoji_logprobs_qwen3() -> None:
    """§5.8 observed: 🫠 = three Qwen3 tokens → "", "", "🫠"."""
    vocab = load("qwen3")
    ids = list(reference(vocab).encode("🫠", add_special_tokens=False).ids)
    assert len(ids) == 3
    positions, context = resolve_logprobs(vocab, logprobs_of([(i, []) for i in ids]), None, ())
    assert [p.token for p in positions] == ["", "", "🫠"]
    assert [p.token_bytes for p in positions] == [[], [], [240, 159, 171, 160]]
    assert context == ids
    body = chat_logprobs(positions)
    assert body is not None
    assert [e["token"] for e in body["content"]] == ["", "", "🫠"]
    assert [e["bytes"] for e in body["content"]] == [[], [], [240, 159, 171, 160]]
    assert [e["logprob"] for e in body["content"]] == [-0.0, -0.1, -0.2]


def test_candidates_resolve_with_the_same_context() -> None:
    vocab = load("qwen3")
    a, e1, e2, e3, b = reference(vocab).encode("A🫠B", add_special_tokens=False).ids
    positions, _ = resolve_logprobs(
        vocab, logprobs_of([(a, [a, b]), (e1, [e1]), (e2, [e2, a]), (e3, [e3, b, IM_END])]),
        None, ())
    assert [[c[0] for c in p.candidates] for p in positions] == [
        ["A", "B"], [""], ["", "A"], ["🫠", "B", "<|im_end|>"]]
    assert positions[3].candidates[2][1] == list(b"<|im_end|>")
    assert [c[2] for c in positions[3].candidates] == [-1.0, -2.0, -3.0]


def test_special_token_logprob_is_its_text() -> None:
    """Special tokens decode to their text even though the output text skips them."""
    vocab = load("qwen3")
    positions, _ = resolve_logprobs(vocab, logprobs_of([(9707, []), (IM_END, [])]), None, ())
    assert [(p.token, p.token_bytes) for p in positions] == [
        ("Hello", list(b"Hello")), ("<|im_end|>", list(b"<|im_end|>"))]


def test_spec_row3_hello_world_candidates() -> None:
    """§8 row 3: tokens `Hello` / ` world`; 2 and 0 candidates kept without a request; with
    `chat_request {logprobs: true, top_logprobs: 1}` the first keeps 1."""
    vocab = load("qwen3")
    logprobs = GenerateLogProbs.model_validate({"content": [
        {"token_id": 9707, "logprob": -1.0,
         "top_logprobs": [{"token_id": 9707, "logprob": -1.0},
                          {"token_id": 1879, "logprob": -2.5}]},
        {"token_id": 1879, "logprob": -0.5},
    ]})
    positions, _ = resolve_logprobs(vocab, logprobs, chat_top_logprobs(None), ())
    body = chat_logprobs(positions)
    assert body == {"content": [
        {"token": "Hello", "logprob": -1.0, "bytes": list(b"Hello"), "top_logprobs": [
            {"token": "Hello", "logprob": -1.0, "bytes": list(b"Hello")},
            {"token": " world", "logprob": -2.5, "bytes": list(b" world")}]},
        {"token": " world", "logprob": -0.5, "bytes": list(b" world"), "top_logprobs": []},
    ]}
    keep = chat_top_logprobs(chat_request(logprobs=True, top_logprobs=1))
    positions, _ = resolve_logprobs(vocab, logprobs, keep, ())
    assert [len(p.candidates) for p in positions] == [1, 0]
    assert positions[0].candidates[0][0] == "Hello"


def test_mistral_logprob_strings_lose_leading_space() -> None:
    """Fixtures README (observed): `▁word` → "word", a lone `▁` → "" on mistral-7b (its
    pre-tokenizer has no Metaspace marker); byte-fallback pieces resolve on the last byte."""
    vocab = load("mistral-7b")
    assert leading_space_marker("mistral-7b") is None
    assert vocab.space_marker is None
    tokyo = reference(vocab).token_to_id("▁Tokyo")
    space = reference(vocab).token_to_id("▁")
    emoji = [3 + b for b in "🫠".encode()]
    positions, _ = resolve_logprobs(
        vocab, logprobs_of([(tokyo, []), (space, []), *[(i, []) for i in emoji]]), None, ())
    assert [p.token for p in positions] == ["Tokyo", "", "", "", "", "🫠"]
    assert positions[-1].token_bytes == [240, 159, 171, 160]


@pytest.mark.parametrize("name", ["qwen3", "mistral-7b", "deepseek-v4", "gpt2", "llama3.1"])
def test_space_marker_matches_tokenizer_json(name: str) -> None:
    vocab = load(name)
    assert vocab.space_marker == leading_space_marker(name)


@pytest.mark.parametrize("name", ["qwen3", "mistral-7b", "deepseek-v4", "gpt2"])
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_resolve_matches_reference(name: str, data: st.DataObject) -> None:
    vocab = load(name)
    tok = reference(vocab)
    chars = ["a", " the", "é", "日本", "🫠", "👍🏽", "𝔘", "\n", "한"]
    pieces: list[int] = []
    for _ in range(data.draw(st.integers(1, 6), label="atoms")):
        kind = data.draw(st.sampled_from(["text", "partial", "random", "byte"]))
        if kind == "text":
            pieces += tok.encode(data.draw(st.sampled_from(chars)),
                                 add_special_tokens=False).ids
        elif kind == "partial":
            pieces += tok.encode(data.draw(st.sampled_from(chars)),
                                 add_special_tokens=False).ids[:-1]
        elif kind == "byte" and name == "mistral-7b":
            pieces += [3 + b for b in data.draw(st.sampled_from(chars)).encode()]
        else:
            pieces.append(data.draw(st.integers(0, vocab.size - 1)))
    ids = pieces[:24]
    if not ids:
        ids = [0]
    context = data.draw(st.lists(st.integers(0, vocab.size - 1), max_size=4), label="ctx")
    entries = [(i, data.draw(st.lists(st.sampled_from([*ids, 0, vocab.size - 1]),
                                      max_size=3))) for i in ids]
    keep = data.draw(st.sampled_from([None, 0, 1, 2]), label="keep")
    positions, carried = resolve_logprobs(vocab, logprobs_of(entries), keep, context)
    running = list(context)
    for (tid, cands), p in zip(entries, positions, strict=True):
        assert (p.token, p.token_bytes) == ref_resolve(name, tid, running)
        kept = cands if keep is None else cands[:keep]
        assert [(s, b) for s, b, _ in p.candidates] == [ref_resolve(name, c, running)
                                                         for c in kept]
        assert p.had_candidates == bool(cands)
        running.append(tid)
    assert carried == running[-4:]
    # One position per call, threading the carried context, gives the same strings.
    ctx: list[int] = list(context)
    for (tid, cands), p in zip(entries, positions, strict=True):
        (single,), ctx = resolve_logprobs(vocab, logprobs_of([(tid, cands)]), keep, ctx)
        assert (single.token, single.token_bytes) == (p.token, p.token_bytes)
        assert len(ctx) <= 4


# --------------------------------------------------------------------------- candidate cut


@pytest.mark.parametrize(("fields", "expected"), [
    (None, None),
    ({}, None),
    ({"logprobs": False}, None),
    ({"logprobs": None}, None),
    ({"logprobs": True}, 0),
    ({"logprobs": True, "top_logprobs": 0}, 0),
    ({"logprobs": True, "top_logprobs": 3}, 3),
    ({"logprobs": True, "top_logprobs": -1}, None),
    ({"logprobs": True, "top_logprobs": 3, "logprob_token_ids": [5, 6]}, None),
    ({"logprobs": True, "top_logprobs": 0, "logprob_token_ids": [5]}, None),
])
def test_chat_candidate_cut(fields: dict[str, Any] | None, expected: int | None) -> None:
    request = None if fields is None else chat_request(**fields)
    assert chat_top_logprobs(request) == expected


@pytest.mark.parametrize(("fields", "expected"), [
    (None, None),
    ({}, None),
    ({"logprobs": None}, None),
    ({"logprobs": -1}, None),
    ({"logprobs": 0}, 1),
    ({"logprobs": 2}, 3),
    ({"logprobs": 5}, 6),
    ({"logprobs": 2, "logprob_token_ids": [5]}, None),
])
def test_completion_candidate_cut(fields: dict[str, Any] | None, expected: int | None) -> None:
    request = None if fields is None else completion_request(**fields)
    assert completion_keep(request) == expected


def test_chat_top_logprobs_zero_keeps_no_candidates() -> None:
    vocab = load("qwen3")
    keep = chat_top_logprobs(chat_request(logprobs=True, top_logprobs=0))
    positions, _ = resolve_logprobs(vocab, logprobs_of([(9707, [9707, 1879])]), keep, ())
    body = chat_logprobs(positions)
    assert body is not None
    assert body["content"][0]["top_logprobs"] == []


# --------------------------------------------------------------------------- completions shape


def a_emoji_b(vocab: Vocabulary) -> list[int]:
    ids = list(reference(vocab).encode("A🫠B", add_special_tokens=False).ids)
    assert len(ids) == 5
    return ids


def test_spec_row9_text_offset_non_streaming() -> None:
    """§8 row 9 numbers: tokens A, "", "", 🫠, B at offsets 0, 1, 1, 1, 2; next offset 3."""
    vocab = load("qwen3")
    ids = a_emoji_b(vocab)
    positions, _ = resolve_logprobs(vocab, logprobs_of([(i, []) for i in ids]), None, ())
    body, end = completion_logprobs(positions, 0)
    assert body["tokens"] == ["A", "", "", "🫠", "B"]
    assert body["text_offset"] == [0, 1, 1, 1, 2]
    assert body["token_logprobs"] == [-0.1 * n for n in range(5)]
    assert body["top_logprobs"] == [None] * 5
    assert end == 3


def test_spec_row9_text_offset_continues_one_id_per_call() -> None:
    vocab = load("qwen3")
    ids = a_emoji_b(vocab)
    context: list[int] = []
    offset = 0
    tokens: list[str] = []
    offsets: list[int] = []
    for token_id in ids:
        positions, context = resolve_logprobs(vocab, logprobs_of([(token_id, [])]),
                                              completion_keep(None), context)
        body, offset = completion_logprobs(positions, offset)
        tokens += body["tokens"]
        offsets += body["text_offset"]
    assert tokens == ["A", "", "", "🫠", "B"]
    assert offsets == [0, 1, 1, 1, 2]
    assert offset == 3


def test_completion_top_logprobs_null_dict_and_collapse() -> None:
    """§8 row 5: `logprobs: 0` keeps one entry per dict; no input candidates → null; equal
    candidate strings collapse (last wins); special tokens count by their text length."""
    vocab = load("qwen3")
    e1, e2 = a_emoji_b(vocab)[1:3]
    keep = completion_keep(completion_request(logprobs=0))
    positions, _ = resolve_logprobs(
        vocab, logprobs_of([(9707, [9707, 1879]), (1879, []), (IM_END, [IM_END])]), keep, ())
    body, end = completion_logprobs(positions, 0)
    assert body["top_logprobs"] == [{"Hello": -1.0}, None, {"<|im_end|>": -1.0}]
    assert body["text_offset"] == [0, 5, 11]
    assert end == 11 + len("<|im_end|>")
    # Two candidates that both resolve to "" (unfinished bytes, no context): one key.
    positions, _ = resolve_logprobs(vocab, logprobs_of([(e1, [e1, e2])]), None, ())
    body, _ = completion_logprobs(positions, 7)
    assert body["top_logprobs"] == [{"": -2.0}]
    assert body["text_offset"] == [7]
