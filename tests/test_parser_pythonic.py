"""The ``pythonic`` tool-call format, one request each, expected values written from vLLM
0.33's ``PythonicToolParser`` (vllm/tool_parsers/pythonic_tool_parser.py, ``utils.py``) and,
marked, from the README compatibility table where we differ on purpose:

- the output is a call list only if it matches vLLM's pattern (``[`` at the very start, the
  first name right after it, ``(``, then ``)`` or a keyword directly followed by ``=``) and the
  whole output parses as Python whose first statement is a list of calls; else it is content;
- keyword values must be literals (``ast`` constants, lists, tuples and sets as lists, dicts with
  constant keys, ``true``/``false``/``null``, signed numbers); arguments are ``json.dumps`` of
  them, so non-string dict keys become strings (``1`` → ``"1"``, ``None`` → ``"null"``);
- ``tool_choice`` "required" reads a JSON list of ``{"name", "parameters"}`` and a named choice
  the bare arguments (vLLM's JSON-schema parsing: this format has no structural tag);
- ours: text after the closing ``]`` is dropped (vLLM: all content unless it is Python); a
  call after one that was returned that cannot be read makes its text content (vLLM: no call
  at all); "required" also reads the pythonic list (vLLM: no call, content ""); sets and
  parenthesised single values are not read as vLLM reads them (README).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.conftest import state_token
from tests.test_parser_rules import NAMED, TOOLS, calls, chat, fields, ids_of, stream_fold

LLAMA = "llama3.1-tools"
EOT = 128009
PROMPT = [128000, 128006, 882, 128007, 271, 3923, 596, 279, 9282, 304, 12366, 30, 128009,
          128006, 78191, 128007, 271]


@pytest.fixture(scope="module")
def pythonic(client_for: Any) -> Any:
    return client_for(LLAMA, None, "pythonic")


def ask(client: Any, text: str, finish: str = "stop", eos: bool = True, **request: Any
        ) -> dict[str, Any]:
    request.setdefault("tools", TOOLS)
    token_ids = ids_of(text, *([EOT] if eos else []), name=LLAMA)
    return chat(client, token_ids, model=LLAMA, finish=finish, prompt=PROMPT, **request)


def test_one_call(pythonic: Any) -> None:
    choice = ask(pythonic, "[get_weather(city='Paris', unit='c')]")
    assert fields(choice) == (None, None, 1, "tool_calls")
    assert calls(choice) == [("get_weather", {"city": "Paris", "unit": "c"})]


def test_parallel_calls_and_no_arguments(pythonic: Any) -> None:
    choice = ask(pythonic, '[get_weather(city="Zürich"),create_note(title=\'東京\'), ping()]')
    assert calls(choice) == [("get_weather", {"city": "Zürich"}),
                             ("create_note", {"title": "東京"}), ("ping", {})]


@pytest.mark.parametrize(("literal", "value"), [
    ("'it\\'s'", "it's"), ('"say \\"hi\\""', 'say "hi"'), ("'a\\nb\\tc'", "a\nb\tc"),
    ("'\\x41\\u00e9\\N{SNOWMAN}\\101'", "Aé☃A"), ("r'\\d+'", "\\d+"), ("'\\q'", "\\q"),
    ("'''multi\nline'''", "multi\nline"), ("f'{{x}}'", "{x}"), ("''", ""),
    ("'🌦 東京'", "🌦 東京"), ("1_000", 1000), ("-1.5e3", -1500.0), ("+3", 3), ("0x1F", 31),
    (".5", 0.5), ("True", True), ("false", False), ("None", None), ("null", None),
    ("[1, (2, 3), []]", [1, [2, 3], []]), ("()", []), ("(1,)", [1]),
    ("{'k': [None], 1: 'a', 2.5: True, None: 0, True: 1}",
     {"k": [None], "1": "a", "2.5": True, "null": 0, "true": 1}),
    ("{'a': {'b': {'c': -0.25}}}", {"a": {"b": {"c": -0.25}}}),
])
def test_literal_values_become_json(pythonic: Any, literal: str, value: Any) -> None:
    choice = ask(pythonic, f"[create_note(title={literal})]")
    assert calls(choice) == [("create_note", {"title": value})]


@pytest.mark.parametrize("text", [
    "Sure! [get_weather(city='Paris')]",          # not at the start
    " [get_weather(city='Paris')]",               # not at the very start
    "[ get_weather(city='Paris')]",               # a space after "["
    "[get_weather( city='Paris')]",               # nor after the first "("
    "[get_weather(city = 'Paris')]",              # the first keyword is written "name="
    "get_weather(city='Paris')",                  # not a list
    "[]", "[1, 2]", "[Source: Wikipedia] says hi",
    "[get_weather(city=Paris)]",                  # a name is not a literal
    "[get_weather('Paris')]",                     # positional arguments
    "[get_weather(city=f'{x}')]",                 # an f-string with a placeholder
    "[get_weather(city=b'Paris')]",               # bytes
    "[get_weather(city=1j)]",                     # complex
    "[weather.get(city='Paris')]",                # dotted names do not match vLLM's pattern
    "[get_weather(city='Pa\nris')]",              # a line break in a one-quote string
], ids=lambda text: repr(text)[:40])
def test_output_that_is_not_a_call_list_is_content(pythonic: Any, text: str) -> None:
    choice = ask(pythonic, text)
    assert fields(choice) == (text, None, 0, "stop")


def test_a_call_cut_off_is_content(pythonic: Any) -> None:
    choice = ask(pythonic, "[get_weather(city='Par", finish="length", eos=False)
    assert fields(choice) == ("[get_weather(city='Par", None, 0, "length")


def test_tool_choice_none_leaves_the_text(pythonic: Any) -> None:
    choice = ask(pythonic, "[get_weather(city='Paris')]", tool_choice="none")
    assert fields(choice) == ("[get_weather(city='Paris')]", None, 0, "stop")


def test_required_reads_the_json_list(pythonic: Any) -> None:
    choice = ask(pythonic, '[{"name": "get_weather", "parameters": {"city": "Paris"}}, '
                           '{"name": "create_note", "parameters": {"title": "x"}}]',
                 tool_choice="required")
    assert fields(choice) == ("", None, 2, "tool_calls")


def test_named_reads_the_bare_arguments(pythonic: Any) -> None:
    choice = ask(pythonic, '{"city": "Paris", "unit": "f"}', tool_choice=NAMED)
    assert fields(choice) == ("", None, 1, "stop")
    assert calls(choice) == [("get_weather", {"city": "Paris", "unit": "f"})]


def test_forced_choices_also_read_the_pythonic_list(pythonic: Any) -> None:
    # We differ on purpose (README): vLLM (strict) parses only the JSON forms there, so the
    # list gives no call and content "" for "required", the raw text as arguments when named
    required = ask(pythonic, "[get_weather(city='Paris')]", tool_choice="required")
    assert fields(required) == ("", None, 1, "tool_calls")
    named = ask(pythonic, "[get_weather(city='Paris')]", tool_choice=NAMED)
    assert calls(named) == [("get_weather", {"city": "Paris"})]


def test_parallel_tool_calls_false_keeps_the_first(pythonic: Any) -> None:
    choice = ask(pythonic, "[get_weather(city='Paris'), ping()]", parallel_tool_calls=False)
    assert calls(choice) == [("get_weather", {"city": "Paris"})]


def test_text_after_the_list_is_dropped(pythonic: Any) -> None:
    # We differ on purpose (README): vLLM returns all the text as content (Python after the
    # list, such as a newline, is accepted by both)
    for tail in ("\nLet me know!", "\n", "; x = 1"):
        choice = ask(pythonic, "[get_weather(city='Paris')]" + tail)
        assert fields(choice) == (None, None, 1, "tool_calls"), tail


def test_an_unreadable_later_call_becomes_content(pythonic: Any) -> None:
    # We differ on purpose (README): vLLM returns no call and all the text as content
    choice = ask(pythonic, "[get_weather(city='Paris'), ping(x=y)]")
    assert calls(choice) == [("get_weather", {"city": "Paris"})]
    assert choice["message"]["content"] == ", ping(x=y)]"


def test_a_long_call_streams_its_arguments(pythonic: Any) -> None:
    body = "Forecast for Zürich ☀️ then 🌧; 'umbrella' \"quoted\" (paren) [bracket] \\ " * 40
    text = f"[create_note(title='t', body={body!r}, tags=['a'])]"
    expected = ask(pythonic, text)
    assert calls(expected) == [("create_note", {"title": "t", "body": body, "tags": ["a"]})]
    token_ids = ids_of(text, EOT, name=LLAMA)
    folded, states = stream_fold(pythonic, token_ids, PROMPT, per_chunk=3, model=LLAMA,
                                 tools=TOOLS)
    assert folded["argument_chunks"] > 10  # past MAX_HELD the arguments stream
    sizes = [len(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))
             for s in map(state_token, states)]
    assert max(sizes) <= 1200, max(sizes)  # at most the held call (512 characters)
    [(name, arguments)] = folded["calls"].values()
    assert (name, arguments) == ("create_note",
                                 expected["message"]["tool_calls"][0]["function"]["arguments"])
    assert json.loads(arguments)["body"] == body


def test_a_short_call_arrives_whole_once_closed(pythonic: Any) -> None:
    token_ids = ids_of("[get_weather(city='Paris', unit='c'), ping()]", EOT, name=LLAMA)
    folded, _ = stream_fold(pythonic, token_ids, PROMPT, per_chunk=1, model=LLAMA, tools=TOOLS)
    assert folded["argument_chunks"] == 2  # each call in one delta
    assert (folded["content"], folded["finish"]) == ("", "tool_calls")
