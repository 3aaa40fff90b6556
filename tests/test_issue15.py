"""Issue 15: where derender differed from vLLM 0.33 without a reason. Every expected value is
read from a recorded vLLM answer (cases 1500-…, ``scripts/tool_cases/issue15.py``), and each
rule is checked for every split of the output into chunks (the stream folds to the
non-streaming message)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from derender.contract.requests import ChatRequest
from derender.core import parsers
from derender.core.decoding.detokenizer import DecodeWindow, detokenize
from derender.core.parsers import RESTORE_MARKUP
from derender.core.parsers.formats import hermes, mistral
from derender.core.parsers.registry import MARKUP, WithoutTools
from derender.core.parsers.tools import ToolContext
from derender.core.registry import load_vocabulary
from tests.conftest import FIXTURES, load_case, model_folder, tokenizer
from tests.test_parser_properties import PROPS
from tests.tool_streams import feed_all, run_both, split

QWEN = "qwen3"


def recorded(number: int) -> dict[str, Any]:
    """The recorded non-streaming case ``number``: its output text, message and request."""
    path = next(FIXTURES.glob(f"{number}-*.json"))
    case = load_case(path)
    call = case["calls"][0]
    ids = call["request"]["generate_response"]["choices"][0]["token_ids"]
    return {"model": case["model"], "ids": ids, "request": call["request"]["chat_request"],
            "message": call["response"]["choices"][0]["message"],
            "flags": case["server_flags"]}


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


# 5. private-use characters of the model's text come back as written --------------------------

STAND_INS = "".join(chr(0xE000 + i) for i in range(len(MARKUP) + 2)) + "\ue0ff"
TEXT = st.text(st.sampled_from([*"ab \n{}\"é🌦", *STAND_INS]), max_size=24)
PROMPT_OPEN = [151644, *tokenizer(QWEN).encode("user\nhi", add_special_tokens=False).ids,
               151645, 198, 151644, 77091, 198]
THINK, END_THINK, TOOL, END_TOOL, IM_END = 151667, 151668, 151657, 151658, 151645


def qwen_ids(text: str) -> list[int]:
    return list(tokenizer(QWEN).encode(text, add_special_tokens=False).ids)


@pytest.mark.parametrize("number", [1538, 1540, 1542])
def test_recorded_private_use_characters_come_back_as_written(number: int) -> None:
    # 1538: "Stand-ins \ue000\ue002\ue003 \ue007 and \ue00f\ue010 stay as written." (the
    # stand-ins of <think>, <tool_call>, </tool_call>, [TOOL_CALLS]) in content; 1540 (hermes)
    # and 1542 (qwen3_coder) in content and in a call's arguments: vLLM returns them as the
    # model wrote them. The replay of these fixtures (test_conformance) checks our answer.
    message = recorded(number)["message"]
    written = json.dumps(message, ensure_ascii=False)
    assert any(chr(0xE000 + i) in written for i in (0, 2, 3))
    assert "<tool_call>" not in (message["content"] or "")


@PROPS
@given(data=st.data(), before=TEXT, inside=TEXT, after=TEXT)
def test_model_text_with_stand_ins_comes_back_as_written(qwen: Any, data: st.DataObject,
                                                         before: str, inside: str,
                                                         after: str) -> None:
    """Reasoning, content and a call's argument string holding private-use characters (the
    markers' stand-ins and their neighbours) come back as the model wrote them, whole and in
    any split into chunks (the stand-ins of ``<think>`` and ``<tool_call>`` around them are
    the real markers' tokens)."""
    argument = json.dumps({"q": inside}, ensure_ascii=False)
    ids = [THINK, *qwen_ids(before), END_THINK, *qwen_ids("x" + after), TOOL,
           *qwen_ids('{"name": "f", "arguments": ' + argument + "}"), END_TOOL, IM_END]
    request = {"messages": [{"role": "user", "content": "hi"}],
               "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}
    choice = run_both(qwen, QWEN, ids, "stop", PROMPT_OPEN, request, data)
    message = choice["message"]
    assert (message["reasoning"] or "") == before
    assert message["content"] == "x" + after
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message["tool_calls"]] == [("f", {"q": inside})]


@PROPS
@given(text=st.text(st.sampled_from([*"a <>/_\n", *STAND_INS]), max_size=40),
       cuts=st.lists(st.integers(0, 40), max_size=6))
def test_marked_decode_escapes_only_model_text(text: str, cuts: list[int]) -> None:
    """The marked vocabulary's text restores to the plain vocabulary's for any ids, markers
    included, whole and block by block (the detokenizer's joins see any window)."""
    vocab = load_vocabulary(model_folder(QWEN))
    ids = qwen_ids(text)
    for k in sorted(set(cuts)):  # markers spliced in
        ids.insert(min(k, len(ids)), (THINK, TOOL, END_TOOL)[k % 3])
    plain, _ = detokenize(vocab, DecodeWindow(), ids, False)
    marked, window, parts = "", DecodeWindow(), []
    bounds = [0, *sorted({min(c, len(ids)) for c in cuts}), len(ids)]
    for start, end in itertools.pairwise(bounds):
        part, window = detokenize(parsers.marked(vocab), window, ids[start:end], False)
        parts.append(part)
    marked = "".join(parts)
    assert marked.translate(RESTORE_MARKUP) == plain
    assert marked.count("\ue002") == ids.count(TOOL)


def test_pythonic_keeps_an_escaped_stand_in_and_escapes_a_surrogate_it_decodes() -> None:
    # A stand-in the model wrote reaches the machine escaped (a lone surrogate, vocab.LITERAL)
    # and must come out unchanged for the restore; a lone surrogate a Python escape makes
    # (\ud800) is JSON-escaped as before.
    from derender.core.parsers.formats import pythonic
    text = "[f(a='x\ud800', b='\\ud800')]"
    for content, calls in every_split(pythonic.FORMAT, text, ToolContext()):
        assert content == ""
        assert calls == [["f", '{"a": "x\ud800", "b": "\\ud800"}']]


# 2. mistral: argument values typed by the tool's schema ---------------------------------------

SPELL = {"[TOOL_CALLS]": "\ue007", "[ARGS]": "\ue008"}  # both single tokens (v11+ grammar)


@pytest.mark.parametrize("number", [1506, 1508])
def test_mistral_arguments_are_typed_by_the_schema(number: int) -> None:
    # 1506: {"count": "2", "enabled": "true", "ratio": "450", "label": 42, "level": "3",
    # "note": "null", "tags": "[\"a\"]", "meta": "{\"k\": 1}"} for set_config (integer,
    # boolean, number, string, enum [1, 2, 3], string|null, array, object): vLLM answers
    # {"count": 2, "enabled": true, "ratio": 450, "label": "42", "level": 3, "note": null,
    # "tags": ["a"], "meta": {"k": 1}}; 1508: values no type reads (and a parameter the
    # schema lacks) stay as written, the text unchanged. Ours, in every split, is that text.
    case = recorded(number)
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
    tools = recorded(1506)["request"]["tools"]
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


# 4. calls in a request without tools, or under tool_choice "none" -----------------------------

OPENERS = ("<tool_call>", "[TOOL_CALLS]", '{"name"', "[get_weather(", "<｜tool▁calls▁begin｜>")
"""How each format's calls begin in these outputs: still in vLLM's content = not parsed."""


@pytest.mark.parametrize("number", [
    # no tools: hermes, qwen3_coder, mistral, mistral (older), llama3_json, pythonic,
    # deepseek_v3, deepseek_v31
    1518, 1524, 1530, 1534, 1546, 1548, 1550, 1552,
    # tool_choice "none", the same formats
    1522, 1528, 252, 275, 136, 158, 208, 1554])
def test_calls_parsed_without_tools_or_under_none_as_vllm(number: int) -> None:
    """Whether the format reads calls (and drops them, markup and all) is what vLLM's answer
    shows: its content still holds the calls' markup exactly when they were not parsed. The
    calls are never returned. (gpt-oss: 326/327, replayed by test_conformance.)"""
    case = recorded(number)
    flags = dict(zip(case["flags"], [*case["flags"][1:], None], strict=True))
    tool_parser = flags["--tool-call-parser"]
    folder = {"deepseek-v3": "deepseek-v4"}.get(case["model"], case["model"])
    vocab = load_vocabulary(model_folder(folder))
    request = ChatRequest.model_validate(case["request"])
    settings = parsers.parser_settings(flags.get("--reasoning-parser"), tool_parser, request,
                                       vocab)
    content = case["message"]["content"] or ""
    parsed_by_vllm = not any(opener in content for opener in OPENERS)
    assert settings.tools == parsed_by_vllm
    assert not settings.keep_calls
    as_called = parsers.tool_record(tool_parser).without_tools is WithoutTools.AS_CALLED  # type: ignore[union-attr]
    assert as_called == parsed_by_vllm or request.tools


def test_empty_tools_are_refused_as_vllm_refuses_them(qwen: Any) -> None:
    # 1520 (and 1526, 1532, 1536, 1556): "`tools` must not be an empty array…", 400, before
    # any parsing, for every format.
    case = load_case(next(FIXTURES.glob("1520-*.json")))
    call = case["calls"][0]
    response = qwen.post("/v1/chat/completions/derender", content=json.dumps(call["request"]),
                         headers={"content-type": "application/json"})
    assert response.status_code == call["status"] == 400
    assert response.json()["error"]["message"] == call["response"]["error"]["message"]
