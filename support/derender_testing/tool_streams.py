"""The HTTP split-invariance harness the tool-call format tests share.

For a model output (ids) and a chat request, the non-streaming message is the oracle: the
stream of the same ids, split into chunks hypothesis draws (tests/test_parser_properties.py's
``chunkings``), folds to it (``check_equal``). Each format's test file keeps its own outputs
strategy and encoding; this module holds the request strategy, the run of both sides, the
check of the calls an output wrote and the folding of a format machine's deltas.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from hypothesis import event, note
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers import engine
from derender.core.parsers.primitives import merge
from derender.core.parsers.registry import TOOLS_BY_TAG
from derender.core.parsers.tools import ToolCallDelta, ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.chat_streams import check_equal, chunkings, fold, non_streaming, streaming
from derender_testing.models import tokenizer, vocabulary

NAMED = {"type": "function", "function": {"name": "get_weather"}}


@st.composite
def requests(draw: st.DrawFn, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
             reasoning_off: int | None = None) -> dict[str, Any]:
    """Chat requests: mostly with ``tools``, any ``tool_choice`` (named: get_weather),
    sometimes ``parallel_tool_calls`` false, logprobs, token ids; with ``reasoning_off``,
    ``include_reasoning`` false once in ``reasoning_off + 1``."""
    request: dict[str, Any] = {"messages": messages}
    if draw(st.integers(0, 5)) > 0:
        request["tools"] = tools
        choice = draw(st.sampled_from(["auto", "absent", "absent", "required", "named", "none"]))
        if choice == "named":
            request["tool_choice"] = NAMED
        elif choice != "absent":
            request["tool_choice"] = choice
    if draw(st.integers(0, 3)) == 0:
        request["parallel_tool_calls"] = False
    if draw(st.booleans()):
        request["logprobs"] = True
        request["top_logprobs"] = 1
    if draw(st.booleans()):
        request["return_token_ids"] = True
    if reasoning_off is not None and draw(st.integers(0, reasoning_off)) == 0:
        request["include_reasoning"] = False
    return request


def ids_of(parts: Iterable[int | str], encode: Callable[[str], list[int]]) -> list[int]:
    """Text parts encoded, marker ids spliced in as given."""
    ids: list[int] = []
    for part in parts:
        ids.extend([part] if isinstance(part, int) else encode(part))
    return ids


def run_both(client: Any, model: str, ids: list[int], finish: str, prompt: list[int],
             request: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """The non-streaming choice for ``ids``, checked against a stream of them in chunks drawn
    from ``data``; returns the choice."""
    note(f"ids={ids}\ntext={tokenizer(model).decode(ids, skip_special_tokens=False)!r}")
    rid = f"props-{data.draw(st.integers(0, 10**6), label='rid')}"
    expected = non_streaming(client, model, ids, finish, prompt, request, rid)
    note(f"message={expected['message']} finish={expected['finish_reason']}")
    chunks = streaming(client, model, ids, finish, prompt, request, rid,
                       data.draw(chunkings(len(ids)), label="chunking"))
    check_equal(fold(chunks, request), expected, ids, request, finish)
    event(f"calls: {len(expected['message'].get('tool_calls') or [])}")
    return expected


def ended(model: str, text: str, finish: str) -> tuple[list[int], str]:
    """An output written as text, encoded with ``model``'s vocabulary and ended by its eos
    unless ``finish`` is "length" (an empty output always ends): its ids and its finish."""
    ids = list(tokenizer(model).encode(text, add_special_tokens=False).ids)
    eos = vocabulary(model).eos_id
    assert eos is not None
    if finish == "stop" or not ids:
        return [*ids, eos], "stop"
    return ids, finish


def draw_finish(data: st.DataObject) -> str:
    return data.draw(st.sampled_from(["stop", "stop", "length"]), label="finish")


def run_text(client: Any, model: str, text: str, request: dict[str, Any],
             data: st.DataObject) -> dict[str, Any]:
    """``run_both`` for an output written as text (``ended``, the finish drawn), after the
    prompt "Weather?"."""
    ids, finish = ended(model, text, draw_finish(data))
    prompt = tokenizer(model).encode("Weather?", add_special_tokens=False).ids
    return run_both(client, model, ids, finish, prompt, request, data)


def auto_with_tools(request: dict[str, Any]) -> bool:
    return bool(request.get("tools")) and request.get("tool_choice", "auto") == "auto"


def check_written(expected: dict[str, Any], written: list[Any], request: dict[str, Any]) -> bool:
    """Where the request leaves the reading to the format (tools, ``tool_choice`` "auto"), the
    message holds exactly the calls written, ``(name, arguments)`` (the first alone under
    ``parallel_tool_calls`` false), arguments as JSON. Returns whether it checked."""
    if not auto_with_tools(request):
        return False
    event("written calls checked")
    got = [[c["function"]["name"], json.loads(c["function"]["arguments"])]
           for c in expected["message"].get("tool_calls") or []]
    want = written[:1] if request.get("parallel_tool_calls") is False else written
    assert got == json.loads(json.dumps(want))
    return True


def feed_all(fmt: Any, pieces: list[str], context: ToolContext,
             check: Callable[[Any], None] | None = None,
             names_first: bool = False) -> tuple[str, list[list[str]]]:
    """Content and calls (``[name, arguments]`` in index order) of a format machine fed
    ``pieces``, the last one final; ``check`` sees every state reached; ``names_first``:
    a call's first delta, and only that one, carries its name."""
    state = fmt.start()
    content = ""
    calls: dict[int, list[str]] = {}
    for k, piece in enumerate(pieces):
        out, deltas, state = fmt.feed(state, piece, k == len(pieces) - 1, context)
        if check is not None:
            check(state)
        content += out
        for delta in deltas:
            if names_first:
                assert (delta.name is not None) == (delta.index not in calls)
            entry = calls.setdefault(delta.index, ["", ""])
            entry[0] += delta.name or ""
            entry[1] += delta.arguments
    return content, [calls[i] for i in sorted(calls)]


def feed_checked(fmt: Any, parts: list[str], context: ToolContext
                 ) -> tuple[str, list[ToolCallDelta]]:
    """Content and merged call deltas of ``fmt`` fed ``parts`` (the last one final), each
    state it reaches checked to round-trip through its encoding."""
    state = fmt.start()
    content: list[str] = []
    deltas: list[ToolCallDelta] = []
    for k, part in enumerate(parts):
        out, more, state = fmt.feed(state, part, k == len(parts) - 1, context)
        content.append(out)
        deltas += more
        w = Writer()
        fmt.encode(state, w)
        assert fmt.decode(Reader(bytes(w.out))) == state
    return "".join(content), merge(deltas)


def cut(text: str, data: st.DataObject) -> list[str]:
    """``text`` cut at up to eight places drawn from ``data``."""
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8), label="cuts"))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def split(text: str, size: int) -> list[str]:
    """``text`` in pieces of ``size`` (0: whole)."""
    return [text[i:i + size] for i in range(0, len(text), size)] if size else [text]


def every_split(fmt: Any, text: str, context: ToolContext) -> list[tuple[str, list[list[str]]]]:
    """What the machine makes of ``text`` whole and in pieces of 1-12 characters."""
    return [feed_all(fmt, [*split(text, size), ""], context) for size in (0, *range(1, 13))]


def check_round_trips(fmt: Any, pieces: list[str], context: ToolContext) -> None:
    """Every state ``fmt`` reaches on ``pieces`` encodes, after the format's tag, to bytes
    that read back as the format and the same state, to the last byte."""
    state = fmt.start()
    for piece in pieces:
        _, _, state = fmt.feed(state, piece, False, context)
        writer = Writer()
        writer.uint(parsers.tag_of(fmt.name))
        fmt.encode(state, writer)
        reader = Reader(bytes(writer.out))
        assert parsers.tool_format(TOOLS_BY_TAG[reader.uint()].name) is fmt
        assert fmt.decode(reader) == state
        assert reader.pos == len(writer.out)


def feed_engine(fmt: Any, pieces: list[str], context: ToolContext, thinking: bool = False,
                check: Callable[[Any], None] | None = None
                ) -> tuple[str, str, list[tuple[str, str]]]:
    """Reasoning, content and calls (``(name, arguments)``) of a parser-engine format
    (parsers/engine.py) fed ``pieces``, the last one final, starting as a request with
    thinking ``thinking`` starts it; ``check`` sees every state reached. A call's first delta,
    and only that one, carries its name."""
    config = parsers.engine_config(fmt.name)
    state = engine.start(fmt, config, thinking)
    reasoning, content = "", ""
    calls: dict[int, list[str]] = {}
    for k, piece in enumerate(pieces):
        more, out, deltas, state = engine.feed(config, state, piece, k == len(pieces) - 1,
                                               context)
        if check is not None:
            check(state)
        reasoning += more
        content += out
        for delta in deltas:
            assert (delta.name is not None) == (delta.index not in calls)
            entry = calls.setdefault(delta.index, ["", ""])
            entry[0] += delta.name or ""
            entry[1] += delta.arguments
    return reasoning, content, [(calls[i][0], calls[i][1]) for i in sorted(calls)]


def spoil(draw: Any, text: str, dirt: list[str]) -> tuple[str, bool]:
    """A drawn change to a well-formed output for the hypothesis strategies: none (most
    often), cut anywhere, ordinary text after it, or one of ``dirt`` (broken markup) after it;
    also whether the calls written are still what must be read (``clean``)."""
    change = draw(st.sampled_from(["", "", "", "cut", "trail", "dirty"]))
    if change == "cut":
        text = text[:draw(st.integers(0, len(text)))]
    elif change == "trail":
        text += "Anything else?"
    elif change == "dirty":
        text += draw(st.sampled_from(dirt))
    return text, change in ("", "trail")


def feed_long_stream(fmt: Any, model: str, text: str, context: ToolContext,
                     thinking: bool = True) -> tuple[str, str, list[tuple[str, str]], int]:
    """``feed_engine`` over ``text`` (over 5,000 tokens of ``model``), one token a piece,
    checking that every state reached decodes to itself; also the largest encoding (bytes)."""
    ids = tokenizer(model).encode(text, add_special_tokens=False).ids
    assert len(ids) > 5000
    pieces = [tokenizer(model).decode([i], skip_special_tokens=False) for i in ids]
    largest = 0

    def check(state: Any) -> None:
        nonlocal largest
        writer = Writer()
        fmt.encode(state, writer)
        largest = max(largest, len(writer.out))
        assert fmt.decode(Reader(bytes(writer.out))) == state

    reasoning, content, calls = feed_engine(fmt, pieces, context, thinking, check)
    return reasoning, content, calls, largest
