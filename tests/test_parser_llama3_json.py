"""The ``llama3_json`` tool-call format, one request each, expected values written from vLLM
0.33's ``Llama3JsonToolParser`` (vllm/tool_parsers/llama_tool_parser.py) and, marked, from the
README compatibility table where we differ on purpose:

- vLLM reads every ``{`` of the output as a JSON object ``{"name", "parameters"|"arguments"}``
  (``raw_decode``); calls found → content null; ``<|python_tag|>``, ``;`` and other text around
  them are not content; arguments are ``json.dumps`` of the value (compared as parsed JSON);
- any object that is not a call (no ``name``, a name that is not a string, bad JSON) → no calls,
  the whole text as content;
- ``tool_choice`` "required"/named: the format has a structural tag, so under strict tool
  calling (the default) vLLM reads them like "auto"; content then "" and a named choice
  finishes "stop";
- ours: text before the first call stays content; after it, text that is not a call is
  dropped (vLLM: all content when any object is not a call); a call cut off by the end of the
  output keeps the arguments read so far; a named ``tool_choice`` also reads the bare
  arguments object (the JSON-schema form); ``[`` and ``<|python_tag|>`` before the first call
  (either or both) are dropped with it, and whitespace before it up to its last 256
  characters.

The model is ``llama3.1-tools``: the Llama 3.1 tokenizer with its 3.1 token names
(``<|python_tag|>`` 128010, ``<|eom_id|>`` 128008), see derender_testing/tokenizer_variants.py.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from derender.core import parsers
from derender.core.parsers.formats import llama3_json
from derender.core.parsers.tools import ToolCallDelta, ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.chat_streams import Chunking, check_equal, fold, non_streaming, streaming
from derender_testing.models import vocabulary
from derender_testing.recorded import state_token
from tests.test_parser_rules import (
    MESSAGES,
    NAMED,
    TOOLS,
    calls,
    chat,
    fields,
    ids_of,
    post,
    stream_fold,
)

LLAMA = "llama3.1-tools"
EOT, EOM, PYTHON_TAG = 128009, 128008, 128010
PROMPT = [128000, 128006, 882, 128007, 271, 3923, 596, 279, 9282, 304, 12366, 30, 128009,
          128006, 78191, 128007, 271]
CALL = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
NOTE_CALL = '{"name": "create_note", "arguments": {"title": "Zürich 🌦", "tags": ["東京"]}}'


@pytest.fixture(scope="module")
def llama(client_for: Any) -> Any:
    return client_for(LLAMA, None, "llama3_json")


def ids(*parts: str | int) -> list[int]:
    return ids_of(*parts, name=LLAMA)


def ask(client: Any, token_ids: list[int], finish: str = "stop", **request: Any
        ) -> dict[str, Any]:
    request.setdefault("tools", TOOLS)
    return chat(client, token_ids, model=LLAMA, finish=finish, prompt=PROMPT, **request)


def test_a_single_call(llama: Any) -> None:
    choice = ask(llama, ids(CALL, EOT))
    assert fields(choice) == (None, None, 1, "tool_calls")
    assert calls(choice) == [("get_weather", {"city": "Paris"})]


def test_python_tag_and_semicolon_separated_calls(llama: Any) -> None:
    choice = ask(llama, ids(PYTHON_TAG, CALL, "; ", NOTE_CALL, EOM))  # <|eom_id|> is an EOS
    assert fields(choice) == (None, None, 2, "tool_calls")
    assert calls(choice) == [("get_weather", {"city": "Paris"}),
                             ("create_note", {"title": "Zürich 🌦", "tags": ["東京"]})]


def test_calls_written_as_a_json_list(llama: Any) -> None:
    # every "{" is read: the list's brackets and commas are text around the calls
    choice = ask(llama, ids(f"[{CALL}, {NOTE_CALL}]", EOT))
    assert [name for name, _ in calls(choice)] == ["get_weather", "create_note"]
    assert choice["message"]["content"] is None


def test_keys_in_another_order(llama: Any) -> None:
    choice = ask(llama, ids('{"parameters": {"city": "Paris"}, "name": "get_weather"}', EOT))
    assert calls(choice) == [("get_weather", {"city": "Paris"})]


def test_arguments_of_any_json_value(llama: Any) -> None:
    choice = ask(llama, ids('{"name": "get_weather", "arguments": "Paris"}; '
                            '{"name": "create_note", "parameters": null}', EOT))
    assert calls(choice) == [("get_weather", "Paris"), ("create_note", None)]


@pytest.mark.parametrize("text", [
    'Use the {city} placeholder, e.g. {"city": "Paris"}.',
    '{"city": "Paris"}',                          # no name
    '{"name": 42, "parameters": {}}',             # a name that is not a string
    '{"name": "get_weather"}',                    # neither parameters nor arguments
    "<|python_tag|>print('hi')",                  # the tag without a JSON call
    "[1, 2, 3] and {}",
], ids=["braces", "no-name", "int-name", "no-arguments", "python-tag-code", "list"])
def test_text_that_is_not_a_call_is_content(llama: Any, text: str) -> None:
    choice = ask(llama, ids(text, EOT))
    assert fields(choice) == (text, None, 0, "stop")


def test_tool_choice_none_and_no_tools_leave_the_text(llama: Any) -> None:
    for request in ({"tool_choice": "none"}, {"tools": None}):
        choice = ask(llama, ids(CALL, EOT), **request)
        assert fields(choice) == (CALL, None, 0, "stop")


def test_required_and_named(llama: Any) -> None:
    required = ask(llama, ids(CALL, EOT), tool_choice="required")
    assert fields(required) == ("", None, 1, "tool_calls")
    named = ask(llama, ids(CALL, EOT), tool_choice=NAMED)
    assert fields(named) == ("", None, 1, "stop")
    assert calls(named) == [("get_weather", {"city": "Paris"})]
    text = ask(llama, ids("I cannot look that up.", EOT), tool_choice="required")
    assert fields(text) == ("I cannot look that up.", None, 0, "stop")


def test_named_tool_choice_reads_the_bare_arguments(llama: Any) -> None:
    # We differ on purpose (README): the JSON-schema form of a named choice is read too
    choice = ask(llama, ids('{"city": "Zürich", "unit": "c"}', EOT), tool_choice=NAMED)
    assert fields(choice) == ("", None, 1, "stop")
    assert calls(choice) == [("get_weather", {"city": "Zürich", "unit": "c"})]


def test_parallel_tool_calls_false_keeps_the_first(llama: Any) -> None:
    choice = ask(llama, ids(PYTHON_TAG, CALL, "; ", NOTE_CALL, EOM), parallel_tool_calls=False)
    assert calls(choice) == [("get_weather", {"city": "Paris"})]


def test_text_before_a_call_stays_content(llama: Any) -> None:
    # We differ on purpose (README): vLLM drops it (content null) without streaming and
    # streams it as content without the call
    choice = ask(llama, ids("Let me check.\n\n", CALL, EOT))
    assert fields(choice) == ("Let me check.\n\n", None, 1, "tool_calls")
    spaces = ask(llama, ids("\n\n", PYTHON_TAG, CALL, EOT))
    assert fields(spaces) == (None, None, 1, "tool_calls")


def test_after_the_first_call_only_calls_are_read(llama: Any) -> None:
    # We differ on purpose (README): vLLM returns no call when any object is not one
    choice = ask(llama, ids(CALL, '; {"oops": 1} Hope that helps! ', NOTE_CALL, EOT))
    assert fields(choice) == (None, None, 2, "tool_calls")


def test_a_call_cut_off_keeps_its_arguments_so_far(llama: Any) -> None:
    # We differ on purpose (README): vLLM returns the text as content
    choice = ask(llama, ids('{"name": "get_weather", "parameters": {"city": "Par'),
                 finish="length")
    message = choice["message"]
    assert (message["content"], choice["finish_reason"]) == (None, "length")
    assert [(c["function"]["name"], c["function"]["arguments"])
            for c in message["tool_calls"]] == [("get_weather", '{"city": "Par')]


def test_streaming_sends_the_name_then_argument_fragments(llama: Any) -> None:
    token_ids = ids(PYTHON_TAG, CALL, "; ", NOTE_CALL, EOM)
    expected = ask(llama, token_ids)
    folded, _ = stream_fold(llama, token_ids, PROMPT, per_chunk=2, model=LLAMA, tools=TOOLS)
    assert folded["argument_chunks"] > 2
    assert list(map(tuple, folded["calls"].values())) == [
        (c["function"]["name"], c["function"]["arguments"])
        for c in expected["message"]["tool_calls"]]
    assert (folded["content"], folded["finish"]) == ("", "tool_calls")


@pytest.mark.parametrize("text", [
    f"{CALL}; {NOTE_CALL}", f"Sure — {CALL}", f"<|python_tag|> {CALL}", f"[{CALL}]",
    'a {b} c {"parameters": {}, "name": "get_weather"}', '{"city": "Paris"} then more',
])
def test_every_two_chunk_split_folds_to_the_message(llama: Any, text: str) -> None:
    token_ids = ids(text, EOT)
    message = ask(llama, token_ids)["message"]
    want = (message["content"] or "", [(c["function"]["name"], c["function"]["arguments"])
                                       for c in message.get("tool_calls") or []])
    for cut in range(1, len(token_ids)):
        folded = _two_chunks(llama, token_ids, cut)
        assert folded == want, cut


def _two_chunks(client: Any, token_ids: list[int], cut: int) -> tuple[str, list[Any]]:
    state = None
    content = ""
    found: dict[int, list[str]] = {}
    for k, span in enumerate((token_ids[:cut], token_ids[cut:])):
        body: dict[str, Any] = {
            "stream": True, "model": LLAMA, "prompt_token_ids": PROMPT,
            "generate_chunk": {"request_id": "rules-1", "choices": [
                {"index": 0, "token_ids": span, "finish_reason": "stop" if k else None}]},
            "chat_request": {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}}
        if state is not None:
            body["stream_state"] = state
        data = post(client, body)
        state = data["stream_state"]
        delta = data["chunk"]["choices"][0]["delta"]
        content += delta["content"] or ""
        for call in delta.get("tool_calls") or []:
            entry = found.setdefault(call["index"], ["", ""])
            entry[0] += call["function"]["name"] or ""
            entry[1] += call["function"]["arguments"] or ""
    return content, [tuple(v) for _, v in sorted(found.items())]


def test_long_arguments_keep_the_state_small(llama: Any) -> None:
    body = "Forecast for Zürich ☀️ then 🌧; \"umbrella\" {braces} \\ " * 60
    token_ids = ids('{"name": "create_note", "parameters": '
                    + json.dumps({"title": "t", "body": body}, ensure_ascii=False) + "}", EOT)
    folded, states = stream_fold(llama, token_ids, PROMPT, per_chunk=1, model=LLAMA,
                                 tools=TOOLS)
    sizes = [len(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))
             for s in map(state_token, states)]
    assert max(sizes) <= 600, max(sizes)
    assert max(sizes[-100:]) <= max(sizes[:100]) + 16  # nothing accumulates
    [(name, arguments)] = folded["calls"].values()
    assert (name, json.loads(arguments)) == ("create_note", {"title": "t", "body": body})


# --------------------------------------------------------------------------- openers and spaces
# What comes before the first call: the opener ("[" opening the output, <|python_tag|>, or
# both, with whitespace) is dropped with the call, as vLLM drops all text around calls without
# streaming, and is content when no call follows; leading whitespace likewise, up to its last
# 256 characters in both modes. The first case is the one tests/test_tool_formats.py's
# property test found (its "[" lead is never content before calls).

BRACKET_TAG = ["[", PYTHON_TAG, '{"parameters": {}, "name": "get_weather"}']
"""``[<|python_tag|>{…}`` with the keys in reversed order: non-streaming and every stream gave
content "[" with the call, where "[" opening the output before a call is dropped."""


@pytest.mark.parametrize(("parts", "arguments"), [
    (BRACKET_TAG, {}),
    (["[ ", PYTHON_TAG, f" {CALL}]"], {"city": "Paris"}),
    ([PYTHON_TAG, f"[{CALL}, {NOTE_CALL}]"], {"city": "Paris"}),
    (["\n", PYTHON_TAG, "\n[", CALL, "]"], {"city": "Paris"}),
], ids=["bracket-tag", "spaced", "tag-bracket", "newlines"])
def test_a_bracket_and_the_python_tag_before_a_call_are_dropped(
        llama: Any, parts: list[str | int], arguments: Any) -> None:
    choice = ask(llama, ids(*parts, EOT))
    assert choice["message"]["content"] is None
    assert calls(choice)[0] == ("get_weather", arguments)


@pytest.mark.parametrize("parts", [
    ["[", PYTHON_TAG, "print('hi')"], ["\n\n{x} hi"], ["\n\n[1, 2]"], [" ", PYTHON_TAG, " [3]"],
    ["[", PYTHON_TAG, '{"q": 1}'],
], ids=["bracket-tag-code", "spaces-braces", "spaces-list", "tag-list", "bracket-tag-object"])
def test_an_opener_and_whitespace_without_a_call_are_content(llama: Any,
                                                             parts: list[str | int]) -> None:
    text = "".join("<|python_tag|>" if p == PYTHON_TAG else str(p) for p in parts)
    assert fields(ask(llama, ids(*parts, EOT))) == (text, None, 0, "stop")


def _every_split(n: int) -> Any:
    """Every way to cut ``n`` items into non-empty consecutive chunks, as chunk bounds."""
    for mask in range(1 << (n - 1)):
        cuts = [k for k in range(1, n) if mask >> (k - 1) & 1]
        bounds = [0, *cuts, n]
        yield [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


def test_bracket_python_tag_and_reversed_keys_fold_alike_for_every_split(llama: Any) -> None:
    """The machine, fed the output's text id by id as the service decodes it, for every split
    of the ids into chunks (the finish with the last chunk or alone), and every state round
    tripped through its encoding."""
    token_ids = ids(*BRACKET_TAG)
    pieces = parsers.marked(vocabulary(LLAMA)).decode_each(token_ids)
    tag = parsers.spelled(vocabulary(LLAMA), "<|python_tag|>")
    assert pieces[:2] == ["[", tag]
    context = ToolContext(spell={"<|python_tag|>": tag})
    fmt = llama3_json.FORMAT
    want = ("", [ToolCallDelta(0, "get_weather", "{}")])
    assert fmt.feed(fmt.start(), "".join(pieces), True, context)[:2] == want
    for spans in _every_split(len(pieces)):
        for alone in (False, True):
            chunks = ["".join(pieces[a:b]) for a, b in spans] + ([""] if alone else [])
            state, content, found = fmt.start(), "", {}
            for k, chunk in enumerate(chunks):
                out, deltas, state = fmt.feed(state, chunk, k == len(chunks) - 1, context)
                writer = Writer()
                fmt.encode(state, writer)
                assert fmt.decode(Reader(bytes(writer.out))) == state
                content += out
                for delta in deltas:
                    name, arguments = found.get(delta.index, (None, ""))
                    found[delta.index] = (name or delta.name, arguments + delta.arguments)
            assert (content, [ToolCallDelta(i, *found[i]) for i in sorted(found)]) == want, (
                spans, alone)


@pytest.mark.parametrize("finish", ["length", "stop"])
def test_bracket_python_tag_and_reversed_keys_stream_as_the_message(llama: Any,
                                                                    finish: str) -> None:
    """Through the service: the property test's failing request and output, non-streaming and
    streamed id by id and in every two-chunk cut, the finish with the last ids or alone."""
    token_ids = ids(*BRACKET_TAG) + ([EOT] if finish == "stop" else [])
    request = {"messages": MESSAGES, "tools": TOOLS, "tool_choice": "auto",
               "parallel_tool_calls": False}
    expected = non_streaming(llama, LLAMA, token_ids, finish, PROMPT, request, "l3-bracket")
    assert expected["message"]["content"] is None
    assert [(c["function"]["name"], c["function"]["arguments"])
            for c in expected["message"]["tool_calls"]] == [("get_weather", "{}")]
    n = len(token_ids)
    splits = [[(k, k + 1) for k in range(n)]] + [[(0, k), (k, n)] for k in range(1, n)]
    for spans in [[(0, n)], *splits]:
        for alone in (False, True):
            chunking = Chunking(spans, alone, [1] * (len(spans) + alone))
            chunks = streaming(llama, LLAMA, token_ids, finish, PROMPT, request, "l3-bracket",
                               chunking)
            check_equal(fold(chunks, request), expected, token_ids, request, finish)


@pytest.mark.parametrize("parts", [
    [" " * 300, CALL], ["\n" * 300, PYTHON_TAG, CALL], [" " * 300], ["\n\n", '{"q": 1} ', CALL],
], ids=["spaces-call", "newlines-tag-call", "spaces-only", "spaces-object-call"])
def test_leading_whitespace_streams_as_the_message(llama: Any, parts: list[str | int]) -> None:
    """Whitespace before the first call is dropped up to its last 256 characters (what comes
    before them is content, so the stream holds no more), and is content before an object
    that is not a call, in both modes."""
    token_ids = ids(*parts, EOT)
    message = ask(llama, token_ids)["message"]
    text = "".join(p for p in parts if isinstance(p, str))
    space = len(text) - len(text.lstrip())
    if CALL in parts:
        want = text[:-len(CALL)] if "q" in text else text[:max(0, space - 256)]
        assert (message["content"] or "", len(message["tool_calls"])) == (want, 1)
    else:
        assert message["content"] == text
    got = (message["content"] or "", [(c["function"]["name"], c["function"]["arguments"])
                                      for c in message.get("tool_calls") or []])
    for cut in range(1, len(token_ids)):
        assert _two_chunks(llama, token_ids, cut) == got, cut
