"""Issue 15: where derender differed from vLLM 0.33 without a reason. Every expected value is
read from a recorded vLLM answer (cases 1500-…, ``scripts/tool_cases/issue15.py``), and each
rule is checked for every split of the output into chunks (the stream folds to the
non-streaming message)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from derender.core.parsers import hermes, mistral
from derender.core.parsers.tools import ToolContext
from tests.conftest import FIXTURES, load_case, tokenizer
from tests.tool_streams import feed_all, split

QWEN = "qwen3"


def recorded(number: int) -> dict[str, Any]:
    """The recorded non-streaming case ``number``: its output text, message and request."""
    path = next(FIXTURES.glob(f"{number}-*.json"))
    case = load_case(path)
    call = case["calls"][0]
    ids = call["request"]["generate_response"]["choices"][0]["token_ids"]
    return {"model": case["model"], "ids": ids, "request": call["request"]["chat_request"],
            "message": call["response"]["choices"][0]["message"]}


def output_text(case: dict[str, Any], eos: int) -> str:
    ids = [i for i in case["ids"] if i != eos]
    return str(tokenizer(case["model"]).decode(ids, skip_special_tokens=False))


def every_split(fmt: Any, text: str, context: ToolContext) -> list[tuple[str, list[list[str]]]]:
    """What the machine makes of ``text`` whole and in pieces of 1-12 characters."""
    return [feed_all(fmt, [*split(text, size), ""], context) for size in (0, *range(1, 13))]


# 1. hermes: the whitespace before an unreadable <tool_call> stays -------------------------

@pytest.mark.parametrize("number", [1500, 1502, 1544])
def test_hermes_whitespace_before_an_unreadable_call_is_content(number: int) -> None:
    # 1500: "  \n<tool_call>\nnot a call…</tool_call>"; 1502: "\n\n<tool_call>\n{"name": "get_wea"
    # cut off by the end (finish "length"); 1544: the same under a named tool_choice. vLLM
    # returns the whole output as content, the whitespace before the tag included.
    case = recorded(number)
    text = output_text(case, 151645)
    choice = case["request"].get("tool_choice")
    context = ToolContext(forced_name=(choice or {}).get("function", {}).get("name")
                          if isinstance(choice, dict) else None)
    want = case["message"]["content"]
    assert want == text and not want.startswith("<")  # the recording: all of it, as written
    for content, calls in every_split(hermes.FORMAT, text, context):
        assert (content, calls) == (want, [])


def test_hermes_whitespace_before_a_readable_call_is_still_dropped() -> None:
    # The whitespace is held only until the call's head reads: a call drops it (vLLM 0.33:
    # content null before a call, e.g. case 1540's "\n" after the content is not content).
    text = ' \n<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
    for content, calls in every_split(hermes.FORMAT, text, ToolContext()):
        assert (content, calls) == ("", [["f", '{"a": 1}']])


# 3. mistral, older grammar: arguments written as a JSON string -------------------------------

OLDER_SPELL = {"[TOOL_CALLS]": "\ue007", "[ARGS]": "[ARGS]"}  # [TOOL_CALLS] is one token


@pytest.mark.parametrize("number", [1512, 1514, 1516])
def test_mistral_older_string_arguments_are_the_strings_value(number: int) -> None:
    # 1512: [{"name": "get_weather", "arguments": "{\"city\": \"Kyiv\"}"}]; 1514: one bare
    # object; 1516: a string that is not JSON. vLLM returns the string's value as the
    # arguments ('{"city": "Kyiv"}', 'city=Kyiv'), in both modes.
    case = recorded(number)
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
