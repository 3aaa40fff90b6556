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
  arguments object (the JSON-schema form).

The model is ``llama3.1-tools``: the Llama 3.1 tokenizer with its 3.1 token names
(``<|python_tag|>`` 128010, ``<|eom_id|>`` 128008), see tests/tokenizer_variants.py.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.test_parser_rules import (
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
    sizes = [len(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))) for s in states]
    assert max(sizes) <= 600, max(sizes)
    assert max(sizes[-100:]) <= max(sizes[:100]) + 16  # nothing accumulates
    [(name, arguments)] = folded["calls"].values()
    assert (name, json.loads(arguments)) == ("create_note", {"title": "t", "body": body})
