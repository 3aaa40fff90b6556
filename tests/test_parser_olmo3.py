"""OLMo 3's ``olmo3`` tool and reasoning parsers (formats/olmo3.py, ``olmo3`` in reasoning.py),
as vLLM 0.33's ``Olmo3PythonicToolParser`` and ``Olmo3ReasoningParser`` read them.

Expected values are the recorded answers of cases 3462-3555 (named per test; on
``olmo3-standin``, where ``<think>`` and ``<function_calls>`` are text as in OLMo 3) or vLLM's
source. Split invariance: each machine fed any split of an output gives what it gives fed the
whole (pure, every character boundary, states round-tripped through their codec), and streams
through the HTTP app fold to the message (``run_both``).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core.parsers import reasoning
from derender.core.parsers.formats import olmo3
from derender.core.parsers.primitives import MAX_LEADING_SPACE, merge
from derender.core.parsers.registry import REASONING_BY_NAME
from derender.core.parsers.tools import ToolCallDelta, ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.models import vocabulary
from derender_testing.recorded import output_text, recorded_chat
from derender_testing.tool_streams import requests, run_both
from tests.test_parser_properties import PROPS
from tests.test_parser_rules import calls, chat, fields, ids_of

MODEL = "olmo3-standin"
EOS = 100265
IM_START = 100264
PLAMO3_EOS = 50260  # plamo3-standin's end of turn (scripts/tool_cases/plamo3.py)
THOUGHT = "The user wants Paris weather; call the tool."
PARIS_C = ("get_weather", {"city": "Paris", "unit": "c"})
SINGLE = "<function_calls>\nget_weather(city='Paris', unit='c')\n</function_calls>"
TOOLS = [{"type": "function", "function": {"name": name, "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}}
    for name in ("get_weather", "get_time")]
MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]


def prompt(ending: str = "") -> list[int]:
    """A stand-in ChatML prompt opening the assistant's turn, then ``ending``."""
    return [IM_START, *ids_of("user\nWeather in Paris?", name=MODEL), EOS,
            *ids_of("\n", name=MODEL), IM_START, *ids_of("assistant\n" + ending, name=MODEL)]


@pytest.fixture(scope="module")
def both(client_for: Any) -> Any:
    return client_for(MODEL, "olmo3", "olmo3")


@pytest.fixture(scope="module")
def tool(client_for: Any) -> Any:
    return client_for(MODEL, None, "olmo3")


def ask(client: Any, text: str, finish: str = "stop", ending: str = "", **request: Any
        ) -> dict[str, Any]:
    request.setdefault("tools", TOOLS)
    ids = ids_of(text, *([EOS] if finish == "stop" else []), name=MODEL)
    return chat(client, ids, model=MODEL, finish=finish, prompt=prompt(ending), **request)


def test_a_block_of_calls_one_a_line(tool: Any) -> None:  # 3550, 3464, 3466, 3488
    assert calls(ask(tool, SINGLE)) == [PARIS_C]
    block = "<function_calls>\nget_weather(city='Paris')\nget_time()\n</function_calls>"
    assert calls(ask(tool, block)) == [("get_weather", {"city": "Paris"}), ("get_time", {})]
    same_line = "<function_calls>\nget_weather(city='Paris'), get_time()\n</function_calls>"
    assert calls(ask(tool, same_line)) == [("get_weather", {"city": "Paris"}), ("get_time", {})]
    spaced = ("<function_calls>\n\n  get_weather(city='Paris')  \n\n\t get_time() \n"
              "</function_calls>")
    assert fields(ask(tool, spaced)) == (None, None, 2, "tool_calls")


def test_lines_are_joined_as_vllm_joins_them(tool: Any) -> None:  # 3494, 3492, 3468
    newline = "<function_calls>\nget_weather(city='Pa\nris')\n</function_calls>"
    assert calls(ask(tool, newline)) == [("get_weather", {"city": "Pa, ris"})]
    split = "<function_calls>\nget_weather(\ncity='Paris'\n)\n</function_calls>"
    assert fields(ask(tool, split)) == (split, None, 0, "stop")
    literals = "<function_calls>\nget_weather(city=null, unit=true)\n</function_calls>"
    assert calls(ask(tool, literals)) == [("get_weather", {"city": None, "unit": True})]


def test_without_tags_and_outside_the_block(tool: Any) -> None:  # 3478, 3480, 3500, 3484
    assert calls(ask(tool, "get_weather(city='Paris', unit='c')")) == [PARIS_C]
    assert len(calls(ask(tool, "get_weather(city='Paris')\nget_time()"))) == 2
    two = SINGLE + "\n<function_calls>\nget_time()\n</function_calls>"
    assert fields(ask(tool, two)) == (None, None, 1, "tool_calls")
    assert fields(ask(tool, SINGLE + "\nI will report back.")) == (None, None, 1, "tool_calls")


def test_what_is_not_a_call_is_content_as_written(tool: Any) -> None:  # 3486, 3496, 3502, 3528
    for text in ("<function_calls>\nget_weather(city='Paris')",
                 "<function_calls>\nget_weather(city=Paris)\n</function_calls>",
                 "The weather in Paris is sunny, 22 °C.", "Sunny"):
        assert fields(ask(tool, text)) == (text, None, 0, "stop")
    cut = "<function_calls>\nget_weather(city='Par"
    assert fields(ask(tool, cut, finish="length")) == (cut, None, 0, "length")


def test_tool_choice_none_and_no_tools_leave_the_text(tool: Any) -> None:  # 3530, 3532
    assert fields(ask(tool, SINGLE, tool_choice="none")) == (SINGLE, None, 0, "stop")
    assert fields(ask(tool, SINGLE, tools=None)) == (SINGLE, None, 0, "stop")


def test_reasoning_then_calls_or_content(both: Any) -> None:  # 3506, 3508, 3510, 3522, 3524
    choice = ask(both, "<think>" + THOUGHT + "</think>" + SINGLE)
    assert fields(choice) == (None, THOUGHT, 1, "tool_calls")
    assert calls(choice) == [PARIS_C]
    assert fields(ask(both, "<think>" + THOUGHT + "</think>It is sunny.")) == (
        "It is sunny.", THOUGHT, 0, "stop")
    assert fields(ask(both, "<think></think>It is sunny.")) == ("It is sunny.", None, 0, "stop")
    assert fields(ask(both, "<think>" + SINGLE + "</think>It is sunny.")) == (
        "It is sunny.", SINGLE, 0, "stop")


def test_markers_after_the_start_are_text(both: Any) -> None:  # 3518, 3520
    assert fields(ask(both, "<think>a</think>b</think>c")) == ("b</think>c", "a", 0, "stop")
    assert fields(ask(both, "<think>a<think>b</think>c")) == ("c", "a<think>b", 0, "stop")


@pytest.mark.parametrize(("number", "eos"), [(3512, EOS), (3514, EOS), (3516, EOS), (3548, EOS),
                                             (9830, PLAMO3_EOS), (9846, -1)])
def test_reasoning_is_the_text_before_the_first_end(number: int, eos: int) -> None:
    """vLLM's message (recorded): the text before the first ``</think>`` is reasoning (a
    leading ``<think>`` dropped) whatever the prompt, the rest content; without a
    ``</think>`` the output is content as written (9830, 9846: before plamo3's tools)."""
    case = recorded_chat(number)
    text = output_text(case, eos)
    message = case["message"]
    fmt = reasoning.FORMATS["olmo3"]
    delta, _ = reasoning.feed(fmt, reasoning.start(fmt, vocabulary(case["model"]), None, True),
                              text, True, {})
    assert (delta.reasoning or None, delta.content or None) == (
        message["reasoning"], message["content"])


def test_a_legacy_parser() -> None:
    """vLLM's ``Olmo3ReasoningParser`` is not engine-based (``engine_based_streaming`` false):
    paired with it an engine tool parser reads calls only when they may be returned (plamo3
    without ``tools`` or under "none": the markup is content, 9838, 9840)."""
    assert REASONING_BY_NAME["olmo3"].legacy


@pytest.mark.parametrize("ending", ["", "<think>", "<think>\n"])
def test_the_prompt_does_not_open_or_close_reasoning(both: Any, ending: str) -> None:
    choice = ask(both, THOUGHT + "</think>It is sunny.", ending=ending)  # 3512
    assert fields(choice) == ("It is sunny.", THOUGHT, 0, "stop")
    choice = ask(both, "<think>" + THOUGHT, ending=ending)  # 3514
    assert fields(choice) == ("<think>" + THOUGHT, None, 0, "stop")


def test_without_reasoning_the_tool_parser_reads_all(both: Any) -> None:  # 3462, 3502
    assert calls(ask(both, SINGLE)) == [PARIS_C]
    plain = "The weather in Paris is sunny, 22 °C."
    assert fields(ask(both, plain)) == (plain, None, 0, "stop")


# --------------------------------------------------------------------------- split invariance

AUTO = ToolContext(tools=TOOLS)
PIECES = ("<function_calls>", "</function_calls>", "<function_", "_calls>", "\n", "  ", "\t",
          "get_weather(", "city='a'", 'unit="ü🌦"', ")", ", ", "get_time()", "x=y", "Sure. ",
          "null", "(", "<think>", "</think>", "<th", "k>")


def _tool_all(parts: list[str]) -> tuple[str, list[ToolCallDelta]]:
    state = olmo3.FORMAT.start()
    content: list[str] = []
    deltas: list[ToolCallDelta] = []
    for k, part in enumerate(parts):
        out, more, state = olmo3.feed(state, part, k == len(parts) - 1, AUTO)
        content.append(out)
        deltas += more
        w = Writer()
        olmo3.FORMAT.encode(state, w)
        assert olmo3.FORMAT.decode(Reader(bytes(w.out))) == state
    return "".join(content), merge(deltas)


def _reasoning_all(parts: list[str]) -> tuple[str, str]:
    fmt = reasoning.FORMATS["olmo3"]
    state = reasoning.ReasoningState(True)  # (start's, whatever the prompt)
    pieces: list[tuple[str, str]] = []
    for k, part in enumerate(parts):
        delta, state = reasoning.feed(fmt, state, part, k == len(parts) - 1, {})
        pieces.append((delta.reasoning, delta.content))
        w = Writer()
        reasoning.encode(state, w)
        assert reasoning.decode(state.reasoning, Reader(bytes(w.out))) == state
    return "".join(r for r, _ in pieces), "".join(c for _, c in pieces)


def _cut(text: str, data: st.DataObject) -> list[str]:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8), label="cuts"))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@settings(PROPS, max_examples=300)
@given(pieces=st.lists(st.sampled_from(PIECES), max_size=14), data=st.data())
def test_any_split_reads_as_the_whole(pieces: list[str], data: st.DataObject) -> None:
    text = "".join(pieces)
    assert _tool_all(_cut(text, data)) == _tool_all([text])
    assert _reasoning_all(_cut(text, data)) == _reasoning_all([text])


def test_an_unreadable_first_call_is_kept_as_written_whatever_the_cuts() -> None:
    """Docstring rule: the block's text is kept for ``MAX_RAW`` characters until a call is
    read, so a first call that cannot be read (a name vLLM's pattern refuses) within them
    makes the output content as written (as vLLM's message). The bound is a place in the
    block: a whole output longer than it once read past it at once and gave the joined
    form, while its streams gave the output as written."""
    value = "🌦" * 485
    text = f'<function_calls>\n🌦(a="{value}", n=)\n  🌦(a="{value}")\n</function_calls'
    assert len(text) > olmo3.MAX_RAW
    assert _tool_all([text]) == (text, [])
    for cut in range(len(text) + 1):
        assert _tool_all([text[:cut], text[cut:]]) == (text, []), cut


def test_the_opening_whitespace_bound_is_a_place_in_the_output() -> None:
    """Docstring rule: at the start, whitespace (and what may still be ``<function_calls>``
    or a call's name) is held for ``MAX_LEADING_SPACE`` characters; past them the output is
    content (in which a block still opens). Counted as a stream holds it, whatever the cuts
    (a partial tag once counted against the bound, and a whole output never applied it)."""
    block = "<function_calls>\nget_weather()\n</function_calls>"
    for text, count in ((" " * MAX_LEADING_SPACE + block, 1), (" " * 257 + block, 1),
                        (" " * 240 + "get_weather()", 1), (" " * 250 + "get_weather()", 0)):
        whole = _tool_all([text])
        assert len(whole[1]) == count, text
        for cut in range(len(text) + 1):
            assert _tool_all([text[:cut], text[cut:]]) == whole, (len(text), cut)


@st.composite
def outputs(draw: st.DrawFn) -> str:
    calls_text = draw(st.lists(st.sampled_from(
        ["get_weather(city='Paris')", "get_time()", 'get_weather(city="東京 🌦", unit=null)',
         "get_weather(city=Paris)"]), min_size=1, max_size=3))
    body = draw(st.sampled_from(["\n", "\n\n  ", ", "])).join(calls_text)
    shape = draw(st.sampled_from(["block", "lines", "before", "think", "cut", "plain"]))
    if shape == "block":
        return "<function_calls>\n" + body + "\n</function_calls>"
    if shape == "lines":
        return body
    if shape == "before":
        return "Let me check.\n<function_calls>\n" + body + "\n</function_calls>"
    if shape == "think":
        return "<think>" + THOUGHT + "</think>\n<function_calls>\n" + body + "\n</function_calls>"
    if shape == "cut":
        text = "<function_calls>\n" + body
        return text[:draw(st.integers(1, len(text)))]
    return "It is sunny in Paris (22 °C)."


@settings(PROPS, max_examples=100)
@given(data=st.data())
def test_stream_folds_to_message(both: Any, data: st.DataObject) -> None:
    request = data.draw(requests(MESSAGES, TOOLS), label="chat_request")
    text = data.draw(outputs(), label="output")
    finish = data.draw(st.sampled_from(["stop", "stop", "length"]), label="finish")
    ids = ids_of(text, *([EOS] if finish == "stop" else []), name=MODEL)
    run_both(both, MODEL, ids, finish, prompt(), request, data)
