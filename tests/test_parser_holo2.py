"""``holo2`` (issue 19): vLLM 0.33's ``DeepSeekV3ReasoningWithThinkingParser``, served as
``deepseek_v3``'s reasoning format with its own switch (``reasoning.holo2_switch``: on unless
the template kwargs set ``thinking`` or ``enable_thinking``).

Expected values are vLLM's, as recorded in tests/fixtures/vllm-0.33 (case numbers in brackets,
docs/vllm-compat/deepseek.md "holo2"); the replays themselves are in test_conformance.py. Here:
the registry, the switch, the pairing with an engine tool parser, split invariance through the
app on the Qwen3 tokenizer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from derender.contract.requests import ChatRequest
from derender.core import parsers
from derender.core.parsers import reasoning
from derender.core.parsers.registry import REASONING_BY_NAME
from derender_testing.models import vocabulary
from derender_testing.tool_streams import ids_of, requests, run_both
from tests.test_parser_properties import END_THINK, IM_END, PROMPTS, PROPS, QWEN, THINK, enc
from tests.test_parser_qwen3_coder import TOOLS, outputs

TOOL, END_TOOL = 151657, 151658


def settings(tool: str = "hermes", **fields: Any) -> parsers.ParserSettings:
    request = ChatRequest.model_validate({"messages": [{"role": "user", "content": "x"}],
                                          **fields})
    return parsers.parser_settings("holo2", tool, request, vocabulary(QWEN))


def test_holo2_is_deepseek_v3s_format_with_its_own_switch() -> None:
    record = REASONING_BY_NAME["holo2"]
    assert record.legacy and record.switch is not None
    holo2, v3 = parsers.reasoning_format("holo2"), reasoning.FORMATS["deepseek_v3"]
    assert holo2.name == "holo2" and holo2 == dataclasses.replace(v3, name="holo2")
    assert parsers.pairing_error("holo2", "hermes") is None
    assert parsers.pairing_error("holo2", "qwen3_coder") is None


def test_thinking_is_on_unless_the_kwargs_say_otherwise() -> None:
    """On by default [4708]; ``enable_thinking`` false [4722] or ``thinking`` false [4726]:
    off (the whole output content, tags included); ``thinking`` true [4728], ``enable_thinking``
    true [4730]; ``thinking`` false with ``enable_thinking`` true: on [4732]; a top-level
    ``reasoning_effort`` "none": off [4734], "high": on [4736]."""
    cases: list[tuple[dict[str, Any], bool]] = [
        ({}, True),
        ({"chat_template_kwargs": {"enable_thinking": False}}, False),
        ({"chat_template_kwargs": {"thinking": False}}, False),
        ({"chat_template_kwargs": {"thinking": True}}, True),
        ({"chat_template_kwargs": {"enable_thinking": True}}, True),
        ({"chat_template_kwargs": {"thinking": False, "enable_thinking": True}}, True),
        ({"reasoning_effort": "none"}, False),
        ({"reasoning_effort": "high"}, True),
    ]
    for fields, on in cases:
        assert settings(**fields).thinking is on, fields
    # deepseek_v3 itself is off by default (its own switch is unchanged)
    assert not reasoning.v3_switch({}) and reasoning.holo2_switch({})


def test_with_holo2_an_engine_tool_parser_reads_only_callable_outputs() -> None:
    """holo2 is not engine-based in vLLM: qwen3_coder's calls stay content under "none" [4754]
    and without tools [4756]; with tools they are read [4752]."""
    assert settings("qwen3_coder", tools=TOOLS, tool_choice="none").tool_format is None
    assert settings("qwen3_coder").tool_format is None
    assert settings("qwen3_coder", tools=TOOLS).tool_format == "qwen3_coder"
    assert parsers.parser_settings(None, "qwen3_coder", ChatRequest.model_validate(
        {"messages": [{"role": "user", "content": "x"}]}), vocabulary(QWEN)).tool_format == \
        "qwen3_coder"  # the engine alone reads every output


HERMES = ['{"name": "get_weather", "arguments": {"city": "Zürich 🌦"}}',
          '{"name": "set_config", "arguments": {"count": 3, "tags": ["a"]}}',
          '{"name": "get_weather", "arguments": {"city": "Par']


@PROPS
@given(data=st.data())
def test_holo2_stream_folds_to_message(client_for: Any, data: st.DataObject) -> None:
    """Split invariance through the app on the Qwen3 tokenizer, with hermes or qwen3_coder,
    any request (thinking on or off by either kwarg or ``reasoning_effort``), any prompt."""
    tool = data.draw(st.sampled_from(["hermes", "qwen3_coder"]), label="tool")
    client = client_for(QWEN, "holo2", tool)
    chat = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS),
                     label="chat_request")
    chat["chat_template_kwargs"] = data.draw(st.sampled_from([
        None, {"enable_thinking": False}, {"thinking": True}, {"thinking": False}]),
        label="kwargs")
    if data.draw(st.booleans(), label="effort"):
        chat["reasoning_effort"] = data.draw(st.sampled_from(["none", "high"]))
    if tool == "qwen3_coder":
        calls, _, _ = data.draw(outputs(), label="output")
    else:
        calls = []
        for body in data.draw(st.lists(st.sampled_from(HERMES), max_size=2), label="calls"):
            calls += [TOOL, "\n" + body + "\n", END_TOOL, "\n"]
    thought = data.draw(st.sampled_from([[], ["Hmm, weather.\n"], [THINK, "a < b\n  "]]))
    closing = data.draw(st.sampled_from([[], [END_THINK, "\n\n"]]))
    lead = data.draw(st.sampled_from([[], ["Sure.\n"]]), label="lead")
    parts = [*thought, *closing, *lead, *calls]
    finish = data.draw(st.sampled_from(["stop", "length"]), label="finish")
    ids = ids_of(parts, enc)
    if finish == "stop" or not ids:
        ids.append(IM_END)
        finish = "stop"
    prompt = data.draw(st.sampled_from(["open", "closed"]), label="prompt")
    run_both(client, QWEN, ids, finish, PROMPTS[prompt][0], chat, data)
