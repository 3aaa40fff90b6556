"""Private-use characters U+E000… (the parser markers' stand-ins) in the model's own text come
back as written: in content, reasoning and a call's arguments, whole and in every split into
chunks. Recorded vLLM answers: cases 1538-1543 (``scripts/tool_cases/edge_cases.py``)."""

from __future__ import annotations

import functools
import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.decoding.detokenizer import DecodeWindow, detokenize
from derender.core.decoding.vocab import Vocabulary
from derender.core.parsers import RESTORE_MARKUP
from derender.core.parsers.registry import MARKUP
from derender.core.parsers.tools import ToolContext
from derender.core.registry import load_vocabulary
from derender_testing.chat_streams import Chunking, check_equal, fold, non_streaming, streaming
from derender_testing.models import model_folder, tokenizer
from derender_testing.recorded import recorded_chat
from derender_testing.tool_streams import every_split, run_both
from tests.test_parser_properties import PROPS

QWEN = "qwen3"


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
    message = recorded_chat(number)["message"]
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


@functools.cache
def _vocabularies() -> tuple[Vocabulary, Vocabulary]:
    """Qwen3's vocabulary and its marked one, built once (each example reads them)."""
    vocab = load_vocabulary(model_folder(QWEN))
    return vocab, parsers.marked(vocab)


@PROPS
@given(text=st.text(st.sampled_from([*"a <>/_\n", *STAND_INS]), max_size=40),
       cuts=st.lists(st.integers(0, 40), max_size=6))
def test_marked_decode_escapes_only_model_text(text: str, cuts: list[int]) -> None:
    """The marked vocabulary's text restores to the plain vocabulary's for any ids, markers
    included, whole and block by block (the detokenizer's joins see any window)."""
    vocab, marked_vocab = _vocabularies()
    ids = qwen_ids(text)
    for k in sorted(set(cuts)):  # markers spliced in
        ids.insert(min(k, len(ids)), (THINK, TOOL, END_TOOL)[k % 3])
    plain, _ = detokenize(vocab, DecodeWindow(), ids, False)
    marked, window, parts = "", DecodeWindow(), []
    bounds = [0, *sorted({min(c, len(ids)) for c in cuts}), len(ids)]
    for start, end in itertools.pairwise(bounds):
        part, window = detokenize(marked_vocab, window, ids[start:end], False)
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




@pytest.mark.parametrize("written", ["\ue000", "\ue002x", "a\ue0ff", "\ue00f\ue010"])
def test_a_call_name_with_stand_ins_comes_back_as_written(qwen: Any, written: str) -> None:
    """A call's name holding private-use characters (the markers' stand-ins, escaped by the
    marked decode) is restored like its arguments: the name is the text the model wrote, as
    the tokenizer decodes it, whole and streamed one id per chunk."""
    name = "get" + written
    ids = [THINK, *qwen_ids("r"), END_THINK, TOOL,
           *qwen_ids(json.dumps({"name": name, "arguments": {"q": 1}}, ensure_ascii=False)),
           END_TOOL, IM_END]
    assert name in tokenizer(QWEN).decode(ids)  # the text the model wrote
    request = {"messages": [{"role": "user", "content": "hi"}],
               "tools": [{"type": "function", "function": {"name": name, "parameters": {}}}]}
    expected = non_streaming(qwen, QWEN, ids, "stop", PROMPT_OPEN, request, "pua-name")
    assert [c["function"]["name"] for c in expected["message"]["tool_calls"]] == [name]
    ones = Chunking([(i, i + 1) for i in range(len(ids))], False, [1] * len(ids))
    chunks = streaming(qwen, QWEN, ids, "stop", PROMPT_OPEN, request, "pua-name", ones)
    check_equal(fold(chunks, request), expected, ids, request, "stop")
