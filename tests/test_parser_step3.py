"""Step 3's reasoning parser (``step3``: ``reasoning.FORMATS["step3"]``): everything before the
first ``</think>`` is reasoning, a ``<think>`` included; a legacy parser in vLLM.

The rules are vLLM 0.33's (``vllm/reasoning/step3_reasoning_parser.py``,
docs/vllm-compat/step3.md); the recorded cases 6900-6929 replay them against the real server
(test_conformance) and each rule test below names the cases it restates. Split invariance
through the HTTP app on Qwen3's vocabulary (a stand-in), alone and with ``hermes``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers import reasoning
from derender_testing.models import vocabulary
from derender_testing.tool_streams import ids_of, requests, run_both
from tests.test_parser_properties import END_THINK, IM_END, PROMPTS, PROPS, QWEN, THINK, enc

FMT = reasoning.FORMATS["step3"]
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def think(text: str, thinking: bool = True, pieces: int = 0) -> tuple[str, str]:
    state = reasoning.start(FMT, vocabulary(QWEN), PROMPTS["open"][0], thinking)
    assert state is not None
    chunks = [text[i:i + pieces] for i in range(0, len(text), pieces)] if pieces else [text]
    thought, content = "", ""
    for k, chunk in enumerate([*chunks, ""]):
        delta, state = reasoning.feed(FMT, state, chunk, k == len(chunks), {})
        thought, content = thought + delta.reasoning, content + delta.content
    return thought, content


@pytest.mark.parametrize("pieces", [0, 1, 2, 3, 5])
def test_the_rules(pieces: int) -> None:
    """[6900] until </think>; [6902] a <think> is reasoning text; [6904, 6906] no </think>:
    all reasoning; [6912] a later </think> is content; [6916] enable_thinking not read;
    [6924] a call inside the reasoning stays reasoning."""
    assert think("Hmm, the weather.</think>\n\nSunny.", pieces=pieces) == (
        "Hmm, the weather.", "\n\nSunny.")
    assert think("<think>Hmm.\n</think>Sunny.", pieces=pieces) == ("<think>Hmm.\n", "Sunny.")
    assert think("Hmm, no end.\n", pieces=pieces) == ("Hmm, no end.\n", "")
    assert think("Hmm.</think>Sunny.</think>More.", pieces=pieces) == (
        "Hmm.", "Sunny.</think>More.")
    assert think("Hmm.</think>Sunny.", thinking=False, pieces=pieces) == ("Hmm.", "Sunny.")
    assert think("Hmm.\n" + CALL, pieces=pieces) == ("Hmm.\n" + CALL, "")


def test_the_record() -> None:
    record = parsers.reasoning_record("step3")
    assert record is not None and record.legacy
    assert record.format is not None and record.format.load() is FMT
    assert parsers.pairing_error("step3", "hermes") is None


@pytest.mark.parametrize("tool_parser", ["hermes", None])
@PROPS
@given(data=st.data())
def test_step3_stream_folds_to_message(client_for: Any, tool_parser: str | None,
                                       data: st.DataObject) -> None:
    client = client_for(QWEN, "step3", tool_parser)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], tools),
                        label="chat_request")
    if tool_parser is None:
        request.pop("tools", None)
        request.pop("tool_choice", None)
    parts = data.draw(st.lists(st.sampled_from(
        [[THINK], [END_THINK], "Hmm 😀", "\n", " ", "Sunny.", CALL, "<tool_call>", "</"]),
        max_size=8), label="parts")
    flat = [p[0] if isinstance(p, list) else p for p in parts]
    finish = data.draw(st.sampled_from(["stop", "length"]), label="finish")
    ids = ids_of(flat, enc)
    if finish == "stop" or not ids:
        ids.append(IM_END)
        finish = "stop"
    run_both(client, QWEN, ids, finish, PROMPTS["open"][0], request, data)
