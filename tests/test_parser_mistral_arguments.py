"""mistral: how a call's arguments read — the older grammar's arguments written as a JSON
string, and the v11+ grammar's values typed by the tool's schema (bounded).

Expected values are read from recorded vLLM 0.33 answers (cases 1506-1516, recorded by
``scripts/tool_cases/edge_cases.py``); each is checked whole and in every split of the
output into pieces.
"""

from __future__ import annotations

from typing import Any

import pytest

from derender.core.parsers.formats import mistral
from derender.core.parsers.tools import ToolContext
from derender_testing.recorded import output_text, recorded_chat
from derender_testing.tool_streams import every_split, feed_all, split

# The older grammar: arguments written as a JSON string ---------------------------------------

OLDER_SPELL = {"[TOOL_CALLS]": "\ue007", "[ARGS]": "[ARGS]"}  # [TOOL_CALLS] is one token


@pytest.mark.parametrize("number", [1512, 1514, 1516])
def test_mistral_older_string_arguments_are_the_strings_value(number: int) -> None:
    # 1512: [{"name": "get_weather", "arguments": "{\"city\": \"Kyiv\"}"}]; 1514: one bare
    # object; 1516: a string that is not JSON. vLLM returns the string's value as the
    # arguments ('{"city": "Kyiv"}', 'city=Kyiv'), in both modes.
    case = recorded_chat(number)
    text = output_text(case, 2).replace("[TOOL_CALLS]", OLDER_SPELL["[TOOL_CALLS]"])
    want = [[c["function"]["name"], c["function"]["arguments"]]
            for c in case["message"]["tool_calls"]]
    assert case["message"]["content"] is None
    for content, calls in every_split(mistral.FORMAT, text, ToolContext(spell=OLDER_SPELL)):
        assert (content, calls) == ("", want)


@pytest.mark.parametrize(("arguments", "value"), [
    (r'"a\"b\\c\/\n\u00e9\ud83c\udf26 \u12"', 'a"b\\c/\n\u00e9\U0001f326 \\u12'),
    ('""', ""),
    (r'"x\q"', "x\\q"),
])
def test_mistral_older_string_arguments_decode_escapes_in_any_split(arguments: str,
                                                                     value: str) -> None:
    # JSON's string escapes (an escape split across chunks included; a surrogate pair is one
    # character); an escape JSON does not have is kept as written.
    text = '\ue007[{"name": "f", "arguments": ' + arguments + "}]"
    for content, calls in every_split(mistral.FORMAT, text, ToolContext(spell=OLDER_SPELL)):
        assert content == ""
        assert calls == ([["f", value]] if value else [["f", ""]])


# The v11+ grammar: argument values typed by the tool's schema -----------------------------

SPELL = {"[TOOL_CALLS]": "\ue007", "[ARGS]": "\ue008"}  # both single tokens (v11+ grammar)


@pytest.mark.parametrize("number", [1506, 1508])
def test_mistral_arguments_are_typed_by_the_schema(number: int) -> None:
    # 1506: {"count": "2", "enabled": "true", "ratio": "450", "label": 42, "level": "3",
    # "note": "null", "tags": "[\"a\"]", "meta": "{\"k\": 1}"} for set_config (integer,
    # boolean, number, string, enum [1, 2, 3], string|null, array, object): vLLM answers
    # {"count": 2, "enabled": true, "ratio": 450, "label": "42", "level": 3, "note": null,
    # "tags": ["a"], "meta": {"k": 1}}; 1508: values no type reads (and a parameter the
    # schema lacks) stay as written, the text unchanged. Ours, in every split, is that text.
    case = recorded_chat(number)
    text = output_text(case, 2)
    for marker, spelled in SPELL.items():
        text = text.replace(marker, spelled)
    want = [[c["function"]["name"], c["function"]["arguments"]]
            for c in case["message"]["tool_calls"]]
    context = ToolContext(spell=SPELL, tools=case["request"]["tools"])
    for content, calls in every_split(mistral.FORMAT, text, context):
        assert (content, calls) == ("", want)


def test_mistral_typing_is_bounded() -> None:
    # Arguments longer than MAX_TYPED stream as written, untyped (README); the state stays
    # small whatever the split.
    tools = recorded_chat(1506)["request"]["tools"]
    long = '{"label": "' + "x" * mistral.MAX_TYPED + '", "count": "2"}'
    text = "\ue007set_config\ue008" + long
    context = ToolContext(spell=SPELL, tools=tools)
    for content, calls in every_split(mistral.FORMAT, text, context):
        assert (content, calls) == ("", [["set_config", long]])
    short = '{"label": "x", "count": "2"}'
    assert feed_all(mistral.FORMAT, ["\ue007set_config\ue008" + short, ""], context)[1] == [
        ["set_config", '{"label": "x", "count": 2}']]

    def small(state: Any) -> None:
        assert len(state.typed) <= mistral.MAX_TYPED
    feed_all(mistral.FORMAT, [*split(text, 7), ""], context, check=small)


