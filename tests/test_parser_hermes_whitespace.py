"""hermes: the whitespace before a ``<tool_call>`` is content unless a call reads there.

Expected values are read from recorded vLLM 0.33 answers (cases 1500, 1502, 1540, 1544,
recorded by ``scripts/tool_cases/edge_cases.py``); each is checked whole and in every split
of the output into pieces (the stream folds to the non-streaming message).
"""

from __future__ import annotations

import pytest

from derender.core.parsers.formats import hermes
from derender.core.parsers.tools import ToolContext
from derender_testing.recorded import output_text, recorded_chat
from derender_testing.tool_streams import every_split


@pytest.mark.parametrize("number", [1500, 1502, 1544])
def test_hermes_whitespace_before_an_unreadable_call_is_content(number: int) -> None:
    # 1500: "  \n<tool_call>\nnot a call…</tool_call>"; 1502: "\n\n<tool_call>\n{"name": "get_wea"
    # cut off by the end (finish "length"); 1544: the same under a named tool_choice. vLLM
    # returns the whole output as content, the whitespace before the tag included.
    case = recorded_chat(number)
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


