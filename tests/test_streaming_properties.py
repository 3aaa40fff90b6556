"""Property tests: streaming derender equals non-streaming derender, whatever the chunking.

README (Compatibility with vLLM 0.33): for every way of splitting a token sequence into chunks,
the concatenated stream equals the non-streaming result; stop strings are supported while streaming
("concatenated chunks equal the non-streaming text"); ``generate_chunks`` answers the same
chunks as one call per chunk; a retry of the same call returns the same chunk and token.

The oracle is the service's own non-streaming answer for the same ids, prompt and request,
which is checked against vLLM's recordings elsewhere (test_conformance.py). Inputs come from
the real tokenizers (``tokenizers``' own encoder): text with multi-byte characters, raw byte
tokens (Mistral's ``<0xNN>`` byte fallback, byte-level BPE single-byte tokens) that split or
break UTF-8 characters, arbitrary vocabulary ids (special and added tokens included) and the
models' EOS ids. Everything goes through the HTTP app.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import derender.core.streaming as streaming_module
from derender.app.main import create_app
from derender.core.registry import ModelRegistry
from derender.settings import Settings
from derender_testing.models import model_folder, require_model, tokenizer, vocabulary
from derender_testing.openai_types import check_openai_chunk
from derender_testing.recorded import state_token

MODELS = ("qwen3", "mistral-7b", "deepseek-v4", "gpt2", "llama3.1")
CHAT = "/v1/chat/completions/derender"
COMPLETIONS = "/v1/completions/derender"
ROUTES = {"chat": CHAT, "completions": COMPLETIONS}
MAX_IDS = 40
"""Output ids before the optional final stop id: sequences stay well under 60 ids."""

FAST = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FEWER = settings(FAST, max_examples=25)
FEWEST = settings(FAST, max_examples=15)

REPLACEMENT = "\ufffd"
MESSAGES = [{"role": "user", "content": "hi"}]
PIECES = ["a", "b", "Z", "7", " ", "  ", "\n", ".", "!", "é", "ß", "ñ", "中", "文", "語", "한",
          "😀", "🫠", "👍🏽", "🇫🇷", "Hello", " world", "—", "\u00a0", "<", "|"]


# --------------------------------------------------------------------------- apps and helpers


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``client(name)``: an entered TestClient of an app serving that model (fixed key)."""
    root = tmp_path_factory.mktemp("stream-props")
    clients: dict[str, TestClient] = {}
    with ExitStack() as stack:

        def get(name: str) -> TestClient:
            require_model(name)
            if name not in clients:
                folder = root / name
                folder.mkdir()
                (folder / name).symlink_to(model_folder(name), target_is_directory=True)
                app = create_app(Settings(models_dir=folder, signing_keys="p1:" + "x" * 32),
                                 ModelRegistry(folder))
                clients[name] = stack.enter_context(TestClient(app))
            return clients[name]

        yield get


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte → printable character table (byte-level BPE single-byte pieces)."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    chars = list(printable)
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, (chr(c) for c in chars), strict=True))


@functools.cache
def byte_ids(name: str) -> tuple[int, ...]:
    """Id of the single-byte token of every byte 0..255 (``<0xNN>`` or byte-level piece)."""
    index = {piece: i for i, piece in enumerate(vocabulary(name).pieces) if piece}
    fallback = [index.get(f"<0x{b:02X}>") for b in range(256)]
    if all(i is not None for i in fallback):
        return tuple(i for i in fallback if i is not None)
    table = bytes_to_unicode()
    level = [index.get(table[b]) for b in range(256)]
    assert all(i is not None for i in level), f"{name}: no single-byte token for some byte"
    return tuple(i for i in level if i is not None)


def encode(name: str, text: str) -> list[int]:
    return list(tokenizer(name).encode(text, add_special_tokens=False).ids)


def post(client: TestClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(path, content=json.dumps(body), headers={
        "content-type": "application/json"})
    data: dict[str, Any] = response.json()
    assert response.status_code == 200, data
    return data


# --------------------------------------------------------------------------- strategies


@st.composite
def id_runs(draw: st.DrawFn, name: str) -> list[int]:
    """Output ids: encoded text, raw byte runs (valid or broken UTF-8), arbitrary ids."""
    size = vocabulary(name).size
    bytes_of = byte_ids(name)
    kind = draw(st.sampled_from(["text", "text", "bytes", "broken", "ids"]))
    if kind == "text":
        text = "".join(draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=10)))
        return encode(name, text)
    if kind == "bytes":  # the UTF-8 bytes of multi-byte characters, one token per byte
        chars = draw(st.lists(st.sampled_from(["é", "中", "😀", "🫠", "👍🏽", "a"]),
                              min_size=1, max_size=3))
        return [bytes_of[b] for b in "".join(chars).encode("utf-8")]
    if kind == "broken":  # arbitrary bytes: truncated and invalid UTF-8 sequences
        return [bytes_of[b] for b in draw(st.lists(st.integers(0x80, 0xFF), min_size=1,
                                                   max_size=6))]
    return draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=4))


@st.composite
def output_ids(draw: st.DrawFn, name: str) -> list[int]:
    ids: list[int] = []
    for run in draw(st.lists(id_runs(name), min_size=1, max_size=4)):
        ids.extend(run)
    ids = ids[:MAX_IDS]
    return ids or encode(name, "ok")


@st.composite
def splits(draw: st.DrawFn, n: int) -> list[tuple[int, int]]:
    """Chunk boundaries over ``n`` ids as (start, end) pairs; the last chunk ends at ``n`` and
    holds at least one id; empty chunks may appear before it."""
    mode = draw(st.sampled_from(["ones", "random", "random", "whole"]))
    if mode == "ones":
        cuts = list(range(1, n))
    elif mode == "whole":
        cuts = []
    else:
        cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=n - 1))) if n > 1 else []
    bounds = [0, *cuts, n]
    spans = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
    empties = draw(st.lists(st.integers(0, len(spans) - 1), max_size=2))
    for at in sorted(empties, reverse=True):
        start = spans[at][0]
        spans.insert(at, (start, start))
    return spans


@st.composite
def prompts(draw: st.DrawFn, name: str) -> list[int] | None:
    kind = draw(st.sampled_from(["none", "empty", "text", "special"]))
    if kind == "none":
        return None
    if kind == "empty":
        return []
    ids = encode(name, draw(st.sampled_from(["Question: what?", "Tokyo is", "日本語で ", "x"])))
    if kind == "special":
        ids = [*sorted(vocabulary(name).special_ids)[:1], *ids]
    return ids


@st.composite
def endings(draw: st.DrawFn, name: str, ids: list[int]
            ) -> tuple[list[int], str, int | None, dict[str, Any]]:
    """How the sequence ends: (ids, finish_reason, engine stop_reason, request fields)."""
    vocab = vocabulary(name)
    kind = draw(st.sampled_from(["length", "stop", "eos", "model_eos", "stop_token_id",
                                 "reported_int"]))
    fields: dict[str, Any] = {}
    if kind == "length":
        return ids, "length", None, fields
    if kind == "stop":
        return ids, "stop", None, fields
    if kind == "eos":
        assert vocab.eos_id is not None
        return [*ids, vocab.eos_id], "stop", None, fields
    if kind == "model_eos":
        return [*ids, draw(st.sampled_from(sorted(vocab.model_eos_ids)))], "stop", None, fields
    extra = draw(st.sampled_from([*ids[-3:], *sorted(vocab.model_eos_ids)]))
    if kind == "stop_token_id":
        fields["stop_token_ids"] = [extra]
        return [*ids, extra], "stop", None, fields
    return [*ids, extra], "stop", extra, fields


@st.composite
def request_fields(draw: st.DrawFn) -> dict[str, Any] | None:
    """Decode settings of the embedded request (None: no request at all)."""
    if draw(st.booleans()) and draw(st.booleans()):
        return None
    fields: dict[str, Any] = {}
    skip = draw(st.sampled_from([None, True, False, "absent"]))
    if skip != "absent":
        fields["skip_special_tokens"] = skip
    if draw(st.booleans()):
        fields["include_stop_str_in_output"] = True
    if draw(st.booleans()):
        fields["ignore_eos"] = True
    return fields


def logprob_entries(draw: st.DrawFn, name: str, ids: list[int]) -> list[dict[str, Any]]:
    size = vocabulary(name).size
    entries = []
    for position, token in enumerate(ids):
        candidates = draw(st.lists(st.integers(0, size - 1), max_size=3))
        top = [{"token_id": token, "logprob": -0.25 * position, "rank": 1}]
        top += [{"token_id": c, "logprob": -1.5 - k, "rank": k + 2}
                for k, c in enumerate(candidates)]
        entries.append({"token_id": token, "logprob": -0.25 * position, "rank": 1,
                        "top_logprobs": top if draw(st.booleans()) else []})
    return entries


# --------------------------------------------------------------------------- request builders


def embedded(route: str, fields: dict[str, Any] | None) -> dict[str, Any]:
    if fields is None:
        return {}
    if route == "chat":
        return {"chat_request": {"messages": MESSAGES, **fields}}
    return {"completion_request": {"prompt": "hi", **fields}}


def non_streaming(client: TestClient, name: str, route: str, request_id: str,
                  choices: list[dict[str, Any]], prompt: list[int] | None,
                  fields: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The non-streaming choices for the same ids (the oracle)."""
    if route == "chat":
        body: dict[str, Any] = {
            "model": name, "prompt_token_ids": prompt,
            "generate_response": {"request_id": request_id, "choices": choices}}
    else:
        body = {"model": name, "prompt_token_ids": None if prompt is None else [prompt],
                "generate_responses": [{"request_id": request_id, "choices": choices}]}
    body.update(embedded(route, fields))
    result: list[dict[str, Any]] = post(client, ROUTES[route], body)["choices"]
    return result


def chunk_choices(ids: list[int], spans: list[tuple[int, int]], finish: str,
                  stop_reason: int | str | None, index: int = 0,
                  logprobs: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The engine's stream choices: the last chunk carries finish and stop reason."""
    out = []
    for k, (start, end) in enumerate(spans):
        last = k == len(spans) - 1
        choice: dict[str, Any] = {"index": index, "token_ids": ids[start:end],
                                  "finish_reason": finish if last else None,
                                  "stop_reason": stop_reason if last else None}
        if logprobs is not None:
            choice["logprobs"] = {"content": logprobs[start:end]}
        out.append(choice)
    return out


def stream_body(name: str, route: str, request_id: str, choice: dict[str, Any] | None,
                prompt: list[int] | None, fields: dict[str, Any] | None,
                state: str | None) -> dict[str, Any]:
    chunk = {"request_id": request_id, "choices": [] if choice is None else [choice]}
    body: dict[str, Any] = {"stream": True, "model": name, "generate_chunk": chunk,
                            "prompt_token_ids": prompt, **embedded(route, fields)}
    if state is not None:
        body["stream_state"] = state
    return body


def stream(client: TestClient, name: str, route: str, request_id: str,
           choices: list[dict[str, Any]], prompt: list[int] | None,
           fields: dict[str, Any] | None, state: str | None = None
           ) -> tuple[list[dict[str, Any]], str]:
    """One call per engine chunk, each echoing the previous state; the chunks and last state."""
    chunks = []
    for choice in choices:
        data = post(client, ROUTES[route],
                    stream_body(name, route, request_id, choice, prompt, fields, state))
        assert state_token(data["stream_state"])
        state = data["stream_state"]
        chunks.append(data["chunk"])
    assert state is not None
    return chunks, state


def text_of(route: str, choice: dict[str, Any]) -> str:
    if route == "chat":
        content = choice["delta"]["content"]
        assert content != "", "an empty delta content is sent as null"
        return str(content or "")
    return str(choice["text"])


def expected_text(route: str, choice: dict[str, Any]) -> str:
    return str(choice["message"]["content"] if route == "chat" else choice["text"])


def check_stream(route: str, chunks: list[dict[str, Any]], expected: dict[str, Any],
                 index: int = 0, finish_on_last: bool = True) -> None:
    """Concatenated text, role, finish and stop reason of a stream against the oracle."""
    choices = []
    for chunk in chunks:
        check_openai_chunk(chunk)
        assert len(chunk["choices"]) == 1
        assert chunk["choices"][0]["index"] == index
        choices.append(chunk["choices"][0])
    text = "".join(text_of(route, c) for c in choices)
    assert text == expected_text(route, expected)
    if route == "chat":
        roles = [c["delta"]["role"] for c in choices]
        assert roles == ["assistant"] + [None] * (len(roles) - 1)
    finishing = [k for k, c in enumerate(choices) if c["finish_reason"] is not None]
    assert len(finishing) == 1, [c["finish_reason"] for c in choices]
    if finish_on_last:
        assert finishing == [len(choices) - 1]
    done = choices[finishing[0]]
    assert (done["finish_reason"], done["stop_reason"]) == (
        expected["finish_reason"], expected["stop_reason"])


def concat_logprobs(route: str, choices: list[dict[str, Any]]) -> Any:
    if route == "chat":
        content: list[Any] = []
        for choice in choices:
            content.extend(choice["logprobs"]["content"])
        return {"content": content}
    merged: dict[str, list[Any]] = {"text_offset": [], "token_logprobs": [], "tokens": [],
                                    "top_logprobs": []}
    for choice in choices:
        for key, values in merged.items():
            values.extend(choice["logprobs"][key])
    return merged


# --------------------------------------------------------------------------- the properties


@pytest.mark.parametrize("name", MODELS)
@FAST
@given(data=st.data())
def test_any_split_concatenates_to_the_non_streaming_text(
        client: Any, name: str, data: st.DataObject) -> None:
    """Chat (``delta.content``, null = "") and completions (``text``): one call per chunk,
    chunks of any size (one id, several, all, empty ones in between), multi-byte characters
    and broken UTF-8 split anywhere, any prompt seed, any decode settings and stop-token
    ending; the text, the role delta, finish_reason and stop_reason equal non-streaming."""
    c = client(name)
    route = data.draw(st.sampled_from(sorted(ROUTES)))
    ids, finish, stop_reason, extra = data.draw(endings(name, data.draw(output_ids(name))))
    fields = data.draw(request_fields())
    if extra:
        fields = {**(fields or {}), **extra}
    prompt = data.draw(prompts(name))
    spans = data.draw(splits(len(ids)))
    [expected] = non_streaming(c, name, route, "rs", [
        {"index": 0, "token_ids": ids, "finish_reason": finish, "stop_reason": stop_reason}],
        prompt, fields)
    chunks, _ = stream(c, name, route, "rs", chunk_choices(ids, spans, finish, stop_reason),
                       prompt, fields)
    event(f"chunks: {'1' if len(spans) == 1 else 'per id' if len(spans) == len(ids) else 'n'}")
    event(f"U+FFFD in text: {REPLACEMENT in expected_text(route, expected)}")
    check_stream(route, chunks, expected)


@pytest.mark.parametrize("name", MODELS)
@FEWER
@given(data=st.data())
def test_logprobs_concatenate_to_the_non_streaming_ones(
        client: Any, name: str, data: st.DataObject) -> None:
    """Chat: the logprob entries concatenate; completions: ``text_offset`` continues across
    chunks, so all four lists concatenate to the non-streaming ones."""
    c = client(name)
    route = data.draw(st.sampled_from(sorted(ROUTES)))
    ids, finish, stop_reason, extra = data.draw(endings(name, data.draw(output_ids(name))))
    entries = logprob_entries(data.draw, name, ids)
    if route == "chat":
        fields: dict[str, Any] | None = data.draw(st.sampled_from([
            None, {"logprobs": True, "top_logprobs": 2}, {"logprobs": True, "top_logprobs": 0},
            {"logprobs": False}]))
    else:
        fields = data.draw(st.sampled_from([None, {"logprobs": 1}, {"logprobs": 0},
                                            {"logprobs": -1}]))
    if extra:
        fields = {**(fields or {}), **extra}
    prompt = data.draw(prompts(name))
    spans = data.draw(splits(len(ids)))
    [expected] = non_streaming(c, name, route, "rl", [
        {"index": 0, "token_ids": ids, "finish_reason": finish, "stop_reason": stop_reason,
         "logprobs": {"content": entries}}], prompt, fields)
    chunks, _ = stream(c, name, route, "rl",
                       chunk_choices(ids, spans, finish, stop_reason, logprobs=entries),
                       prompt, fields)
    check_stream(route, chunks, expected)
    streamed = concat_logprobs(route, [chunk["choices"][0] for chunk in chunks])
    assert streamed == expected["logprobs"]
    if route == "completions":
        assert streamed["text_offset"] == sorted(streamed["text_offset"])


@st.composite
def stop_strings(draw: st.DrawFn, text: str) -> list[str]:
    """1-4 stop strings: substrings of the text (so they match), and sometimes one that
    does not occur or only overlaps it."""
    out: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        if text and draw(st.integers(0, 4)):
            start = draw(st.integers(0, len(text) - 1))
            size = draw(st.integers(1, min(6, len(text) - start)))
            out.append(text[start:start + size])
        else:
            out.append(draw(st.sampled_from(["\x00never", "a" * 7, text[-2:] + "#" if text
                                             else "#"])))
    if text and draw(st.booleans()):  # a near miss: the text's last chars then more
        out.append(text[-3:] + "q")
    return [s for s in out if s][:4] or ["#"]


@pytest.mark.parametrize("name", MODELS)
@FAST
@given(data=st.data())
def test_stop_strings_while_streaming_match_the_non_streaming_cut(
        client: Any, name: str, data: st.DataObject) -> None:
    """README, Compatibility: text that could begin a stop string is held back, so the concatenated
    chunks equal the non-streaming text (cut at the earliest-ending stop string, outside the
    ``min_tokens`` head, with or without the stop string) and the stop_reason agrees; the
    finish is reported once, on the chunk where the stream's text ends."""
    c = client(name)
    route = data.draw(st.sampled_from(sorted(ROUTES)))
    vocab = vocabulary(name)
    ids = data.draw(output_ids(name))
    skip = data.draw(st.sampled_from([None, False]))
    decoded = tokenizer(name).decode(ids, skip_special_tokens=skip is not False)
    stops = data.draw(stop_strings(decoded))
    fields: dict[str, Any] = {"stop": stops if len(stops) > 1 or data.draw(st.booleans())
                              else stops[0],
                              "include_stop_str_in_output": data.draw(st.booleans()),
                              "min_tokens": data.draw(st.integers(0, 4))}
    if skip is not None:
        fields["skip_special_tokens"] = skip
    ending = data.draw(st.sampled_from(["eos", "plain", "reported"]))
    stop_reason: str | None = None
    if ending == "eos":
        assert vocab.eos_id is not None
        ids = [*ids, vocab.eos_id]
    elif ending == "reported":  # the engine names the (single) stop string it matched
        fields["stop"] = [stops[0]]
        stop_reason = stops[0]
    prompt = data.draw(prompts(name))
    spans = data.draw(splits(len(ids)))
    [expected] = non_streaming(c, name, route, "rstop", [
        {"index": 0, "token_ids": ids, "finish_reason": "stop", "stop_reason": stop_reason}],
        prompt, fields)
    chunks, _ = stream(c, name, route, "rstop",
                       chunk_choices(ids, spans, "stop", stop_reason), prompt, fields)
    event(f"stop_reason: {type(expected['stop_reason']).__name__}")
    # a stop string that matched may end the text before the last engine chunk
    check_stream(route, chunks, expected,
                 finish_on_last=not isinstance(expected["stop_reason"], str))


@pytest.mark.parametrize("name", MODELS)
@FEWER
@given(data=st.data())
def test_two_choices_interleaved_each_with_its_own_state(
        client: Any, name: str, data: st.DataObject) -> None:
    """n > 1: one state per choice index; any interleaving gives each index its
    non-streaming text, its own role delta and its own finish."""
    c = client(name)
    route = data.draw(st.sampled_from(sorted(ROUTES)))
    sequences = [data.draw(endings(name, data.draw(output_ids(name)))) for _ in range(2)]
    fields: dict[str, Any] | None = None
    prompt = data.draw(prompts(name))
    per_index = []
    ns_choices = []
    for index, (ids, finish, reported, extra) in enumerate(sequences):
        # a stop_token_id ending becomes an engine-reported int stop_reason (no request here)
        stop_reason = extra["stop_token_ids"][0] if extra else reported
        per_index.append(chunk_choices(ids, data.draw(splits(len(ids))), finish, stop_reason,
                                       index=index))
        ns_choices.append({"index": index, "token_ids": ids, "finish_reason": finish,
                           "stop_reason": stop_reason})
    expected = non_streaming(c, name, route, "rn", ns_choices, prompt, fields)
    order = data.draw(st.permutations([0] * len(per_index[0]) + [1] * len(per_index[1])))
    states: dict[int, str | None] = {0: None, 1: None}
    got: dict[int, list[dict[str, Any]]] = {0: [], 1: []}
    position = {0: 0, 1: 0}
    for index in order:
        choice = per_index[index][position[index]]
        position[index] += 1
        data_ = post(c, ROUTES[route],
                     stream_body(name, route, "rn", choice, prompt, fields, states[index]))
        states[index] = data_["stream_state"]
        got[index].append(data_["chunk"])
    for index in (0, 1):
        check_stream(route, got[index], expected[index], index=index)


@st.composite
def batches(draw: st.DrawFn, count: int) -> list[int]:
    """Sizes of consecutive ``generate_chunks`` batches covering ``count`` chunks."""
    sizes: list[int] = []
    left = count
    while left:
        size = draw(st.integers(1, left))
        sizes.append(size)
        left -= size
    return sizes


FIXED_NOW = 1_800_000_000


@pytest.mark.parametrize("name", MODELS)
@FEWER
@given(data=st.data())
def test_generate_chunks_batch_equals_one_call_per_chunk(
        client: Any, name: str, data: st.DataObject) -> None:
    """The batched call answers exactly the chunks of one call per chunk (``created``
    included: it is the stream's first-chunk time) and a state that continues identically."""
    c = client(name)
    route = data.draw(st.sampled_from(sorted(ROUTES)))
    ids, finish, stop_reason, extra = data.draw(endings(name, data.draw(output_ids(name))))
    fields = data.draw(request_fields())
    if extra:
        fields = {**(fields or {}), **extra}
    prompt = data.draw(prompts(name))
    choices: list[dict[str, Any] | None] = list(
        chunk_choices(ids, data.draw(splits(len(ids))), finish, stop_reason))
    if data.draw(st.booleans()):  # a usage-only chunk up front (role deferred past it)
        choices.insert(0, None)
    head, final = choices[:-1], choices[-1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streaming_module, "time", SimpleNamespace(time=lambda: FIXED_NOW))
        one_by_one: list[dict[str, Any]] = []
        state: str | None = None
        for choice in head:
            body = stream_body(name, route, "rb", choice, prompt, fields, state)
            if choice is None:
                body["generate_chunk"]["usage"] = {"prompt_tokens": 3, "completion_tokens": 0}
            answer = post(c, ROUTES[route], body)
            one_by_one.append(answer["chunk"])
            state = answer["stream_state"]
        sequential_state = state

        batched: list[dict[str, Any]] = []
        state = None
        start = 0
        for size in data.draw(batches(len(head))) if head else []:
            group = head[start:start + size]
            start += size
            body = stream_body(name, route, "rb", None, prompt, fields, state)
            del body["generate_chunk"]
            body["generate_chunks"] = [
                {"request_id": "rb", "choices": [] if choice is None else [choice]}
                for choice in group]
            for chunk, choice in zip(body["generate_chunks"], group, strict=True):
                if choice is None:
                    chunk["usage"] = {"prompt_tokens": 3, "completion_tokens": 0}
            answer = post(c, ROUTES[route], body)
            assert "chunk" not in answer
            assert len(answer["chunks"]) == len(group)
            batched.extend(answer["chunks"])
            state = answer["stream_state"]
        assert batched == one_by_one
        assert state == sequential_state

        after_sequential = post(c, ROUTES[route], stream_body(
            name, route, "rb", final, prompt, fields, sequential_state))
        after_batched = post(c, ROUTES[route], stream_body(
            name, route, "rb", final, prompt, fields, state))
    assert after_batched == after_sequential
    for chunk in [*one_by_one, after_sequential["chunk"]]:
        assert chunk["created"] == FIXED_NOW


@pytest.mark.parametrize("name", MODELS)
@FEWEST
@given(data=st.data())
def test_retrying_a_call_returns_the_same_chunk_and_state(
        client: Any, name: str, data: st.DataObject) -> None:
    """Every call, sent twice with the same state, answers byte-identical bodies (the first
    call too, within one second: its state's issue time is the call's time)."""
    c = client(name)
    route = data.draw(st.sampled_from(sorted(ROUTES)))
    ids, finish, stop_reason, extra = data.draw(endings(name, data.draw(output_ids(name))))
    fields = data.draw(request_fields())
    if extra:
        fields = {**(fields or {}), **extra}
    prompt = data.draw(prompts(name))
    choices = chunk_choices(ids, data.draw(splits(len(ids))), finish, stop_reason)
    state: str | None = None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streaming_module, "time", SimpleNamespace(time=lambda: FIXED_NOW))
        for choice in choices:
            body = json.dumps(stream_body(name, route, "rr", choice, prompt, fields, state))
            first = c.post(ROUTES[route], content=body,
                           headers={"content-type": "application/json"})
            again = c.post(ROUTES[route], content=body,
                           headers={"content-type": "application/json"})
            assert first.status_code == again.status_code == 200, first.json()
            assert first.content == again.content
            state = first.json()["stream_state"]


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("route", ["chat", "completions"])
def test_retry_of_a_later_call_does_not_depend_on_the_clock(
        client: Any, name: str, route: str) -> None:
    """After the first call the issue time comes from the state, not the clock."""
    c = client(name)
    ids = encode(name, "Hello 世界 😀 ok")
    choices = chunk_choices(ids, [(0, 2), (2, len(ids))], "stop", None)
    body = stream_body(name, route, "rc", choices[0], None, None, None)
    state = post(c, ROUTES[route], body)["stream_state"]
    second = stream_body(name, route, "rc", choices[1], None, None, state)
    answers = []
    for later in (5, 1000):  # seconds after the first call, well within the one-hour TTL
        clock = SimpleNamespace(time=lambda later=later: time.time() + later)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(streaming_module, "time", clock)
            answers.append(post(c, ROUTES[route], second))
    assert answers[0] == answers[1]


# --------------------------------------------------------------------------- targeted cases


@pytest.mark.parametrize("name", MODELS)
def test_multibyte_characters_split_across_one_token_chunks(client: Any, name: str) -> None:
    """Every character split over byte tokens arrives whole, exactly once (non-streaming
    text = the tokenizer's own decode of the same ids)."""
    c = client(name)
    text = "Héllo 世界 😀🫠 👍🏽 🇫🇷 ok"
    bytes_of = byte_ids(name)
    ids = [*encode(name, "say "), *(bytes_of[b] for b in text.encode("utf-8"))]
    expected_full = tokenizer(name).decode(ids, skip_special_tokens=True)
    for route in ("chat", "completions"):
        [expected] = non_streaming(c, name, route, "rm", [
            {"index": 0, "token_ids": ids, "finish_reason": "length"}], None, None)
        assert expected_text(route, expected) == expected_full
        chunks, _ = stream(c, name, route, "rm",
                           chunk_choices(ids, [(i, i + 1) for i in range(len(ids))],
                                         "length", None), None, None)
        check_stream(route, chunks, expected)
        pieces = [text_of(route, chunk["choices"][0]) for chunk in chunks]
        assert REPLACEMENT not in "".join(pieces)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("route", ["chat", "completions"])
@pytest.mark.parametrize("skip", [True, False])
def test_finish_on_an_id_less_chunk_after_the_stop_token(
        client: Any, name: str, route: str, skip: bool) -> None:
    """A split where the last id (a model EOS) arrives in one chunk and the finish in a
    following chunk without ids (docs/vllm-compat/api.md §6.3 names such id-less finish chunks): the
    README says every split concatenates to the non-streaming result."""
    c = client(name)
    vocab = vocabulary(name)
    # a generation_config EOS other than the tokenizer's (reported as an int) where there is one
    eos = min(vocab.model_eos_ids - {vocab.eos_id} or vocab.model_eos_ids)
    ids = [*encode(name, "Hello world"), eos]
    fields = {"skip_special_tokens": skip}
    [expected] = non_streaming(c, name, route, "re", [
        {"index": 0, "token_ids": ids, "finish_reason": "stop"}], None, fields)
    choices = [{"index": 0, "token_ids": ids, "finish_reason": None},
               {"index": 0, "token_ids": [], "finish_reason": "stop"}]
    chunks, _ = stream(c, name, route, "re", choices, None, fields)
    check_stream(route, chunks, expected)
