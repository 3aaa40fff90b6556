"""Driving a chat app both ways and folding its stream (the split-invariance oracle).

For a model output (ids), a chat request and a prompt: ``non_streaming`` posts the ids in one
call and returns the choice; ``streaming`` posts them split as a ``Chunking`` says (hypothesis
draws it with ``chunkings``), one or several engine chunks per call, carrying the returned
``stream_state`` on; ``fold`` folds the chunks, checking the per-delta conventions on the way
(content and reasoning concatenated, null as ""; tool calls per index: name, id and type
"function" from the first delta, arguments the concatenated fragments; the finish_reason of the
last chunk), and ``check_equal`` compares the fold with the non-streaming choice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from derender_testing.recorded import state_token

CHAT = "/v1/chat/completions/derender"
STATE_LIMIT = 1500
"""Bound on every returned state here: fixed fields plus holdbacks that do not grow with the
output (an unreadable call head is held at most 512 characters). test_parser_rules checks the
tighter 600 for long reasoning and long arguments."""


def post(client: Any, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(CHAT, content=json.dumps(body),
                           headers={"content-type": "application/json"})
    data: dict[str, Any] = response.json()
    assert response.status_code == 200, data
    return data


def logprob_entries(ids: list[int]) -> list[dict[str, Any]]:
    return [{"token_id": t, "logprob": -0.125 * (k % 7), "rank": 1,
             "top_logprobs": [{"token_id": t, "logprob": -0.125 * (k % 7), "rank": 1},
                              {"token_id": 9707, "logprob": -3.5, "rank": 2}]}
            for k, t in enumerate(ids)]


@dataclass
class Chunking:
    spans: list[tuple[int, int]]
    finish_alone: bool
    """The finish arrives on an extra chunk without ids."""
    calls: list[int]
    """How many engine chunks each HTTP call carries (1: ``generate_chunk``)."""


@st.composite
def chunkings(draw: st.DrawFn, n: int) -> Chunking:
    mode = draw(st.sampled_from(["ones", "random", "random", "whole"]))
    if mode == "ones":
        cuts = list(range(1, n))
    elif mode == "whole":
        cuts = []
    else:
        cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=n - 1))) if n > 1 else []
    bounds = [0, *cuts, n]
    spans = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
    if draw(st.integers(0, 4)) == 0:  # an id-less chunk without finish somewhere
        at = draw(st.integers(0, len(spans) - 1))
        spans.insert(at, (spans[at][0], spans[at][0]))
    finish_alone = draw(st.booleans())
    total = len(spans) + finish_alone
    calls: list[int] = []
    batched = draw(st.booleans())
    while sum(calls) < total:
        size = draw(st.integers(1, 8)) if batched else 1
        calls.append(min(size, total - sum(calls)))
    return Chunking(spans, finish_alone, calls)


def non_streaming(client: Any, model: str, ids: list[int], finish: str, prompt: list[int],
                  request: dict[str, Any], request_id: str) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "token_ids": ids, "finish_reason": finish}
    if request.get("logprobs"):
        choice["logprobs"] = {"content": logprob_entries(ids)}
    body = {"model": model, "prompt_token_ids": prompt, "chat_request": request,
            "generate_response": {"request_id": request_id, "prompt_token_ids": prompt,
                                  "choices": [choice]}}
    result: dict[str, Any] = post(client, body)["choices"][0]
    return result


def streaming(client: Any, model: str, ids: list[int], finish: str, prompt: list[int],
              request: dict[str, Any], request_id: str, chunking: Chunking
              ) -> list[dict[str, Any]]:
    entries = logprob_entries(ids)
    engine: list[dict[str, Any]] = []
    for k, (start, end) in enumerate(chunking.spans):
        last = k == len(chunking.spans) - 1 and not chunking.finish_alone
        choice: dict[str, Any] = {"index": 0, "token_ids": ids[start:end],
                                  "finish_reason": finish if last else None}
        if request.get("logprobs"):
            choice["logprobs"] = {"content": entries[start:end]}
        engine.append({"request_id": request_id, "choices": [choice]})
    if chunking.finish_alone:
        engine.append({"request_id": request_id,
                       "choices": [{"index": 0, "token_ids": [], "finish_reason": finish}]})
    chunks: list[dict[str, Any]] = []
    state = None
    at = 0
    for size in chunking.calls:
        group = engine[at:at + size]
        at += size
        body: dict[str, Any] = {"stream": True, "model": model, "prompt_token_ids": prompt,
                                "chat_request": request}
        if size == 1:
            body["generate_chunk"] = group[0]
        else:
            body["generate_chunks"] = group
        if state is not None:
            body["stream_state"] = state
        data = post(client, body)
        state = data["stream_state"]
        assert len(state_token(state)) <= STATE_LIMIT, state
        chunks.extend(data["chunks"] if size > 1 else [data["chunk"]])
    assert at == len(engine) == len(chunks)
    return chunks


def fold(chunks: list[dict[str, Any]], request: dict[str, Any]) -> dict[str, Any]:
    """The stream folded, checking the per-delta conventions on the way."""
    hidden = request.get("include_reasoning") is False
    content, reasoning = "", ""
    calls: dict[int, dict[str, Any]] = {}
    logprobs: list[Any] = []
    token_ids: list[int] = []
    for k, chunk in enumerate(chunks):
        [choice] = chunk["choices"]
        delta = choice["delta"]
        assert delta["role"] == ("assistant" if k == 0 else None), (k, delta)
        assert delta["content"] != "" and delta["reasoning"] != ""  # empty is sent as null
        content += delta["content"] or ""
        reasoning += delta["reasoning"] or ""
        for call in delta.get("tool_calls") or []:
            index = call["index"]
            if index not in calls:  # the first delta: id, type and the whole name
                assert call["id"] is not None and call["type"] == "function", call
                assert call["function"]["name"], call
                calls[index] = {"id": call["id"], "name": call["function"]["name"],
                                "arguments": call["function"]["arguments"] or ""}
            else:
                assert call["id"] is None and call["type"] is None, call
                assert call["function"]["name"] is None, call
                assert call["function"]["arguments"], call
                calls[index]["arguments"] += call["function"]["arguments"]
        if k < len(chunks) - 1:
            assert choice["finish_reason"] is None, (k, choice)
        if hidden:
            assert delta["reasoning"] is None
            assert choice["logprobs"] is None and choice["token_ids"] is None
            assert chunk["prompt_token_ids"] is None
        if choice["logprobs"] is not None:
            logprobs.extend(choice["logprobs"]["content"])
        token_ids.extend(choice["token_ids"] or [])
    assert sorted(calls) == list(range(len(calls)))
    last = chunks[-1]["choices"][0]
    return {"content": content, "reasoning": reasoning,
            "calls": [calls[i] for i in range(len(calls))], "finish": last["finish_reason"],
            "stop_reason": last["stop_reason"], "logprobs": logprobs, "token_ids": token_ids}


def check_equal(folded: dict[str, Any], expected: dict[str, Any], ids: list[int],
                request: dict[str, Any], finish: str) -> None:
    """The folded stream against the non-streaming choice (the oracle)."""
    message = expected["message"]
    assert folded["content"] == (message["content"] or "")
    assert folded["reasoning"] == (message["reasoning"] or "")
    want_calls = message.get("tool_calls") or []
    assert [(c["id"], c["name"], c["arguments"]) for c in folded["calls"]] == [
        (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in want_calls]
    assert all(c["type"] == "function" for c in want_calls)
    assert len({c["id"] for c in want_calls}) == len(want_calls)
    assert folded["finish"] == expected["finish_reason"]
    assert folded["stop_reason"] == expected["stop_reason"]
    # api.md §5.7: "tool_calls" iff calls exist, the engine said "stop" and the choice is not named
    named = isinstance(request.get("tool_choice"), dict)
    rewritten = bool(want_calls) and finish == "stop" and not named
    assert expected["finish_reason"] == ("tool_calls" if rewritten else finish)
    if request.get("include_reasoning") is False:
        assert message["reasoning"] is None
        assert expected["logprobs"] is None and expected["token_ids"] is None
        assert folded["logprobs"] == [] and folded["token_ids"] == []
        return
    if request.get("logprobs"):
        assert folded["logprobs"] == expected["logprobs"]["content"]
    if request.get("return_token_ids"):
        assert expected["token_ids"] == ids
        assert folded["token_ids"] == ids
