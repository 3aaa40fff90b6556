"""``step5`` (issue 19): vLLM 0.33's ``Step5ToolParser`` (the Qwen3 grammar, ``qwen3_coder``'s
machine with the content before the calls kept as written) and its ``step5`` reasoning parser
(``DeepSeekR1ReasoningParser``: an alias of ``deepseek_r1``).

Expected values are vLLM's, as recorded in tests/fixtures/vllm-0.33 (case numbers in brackets,
docs/vllm-compat/qwen3_family.md "step5"); the replays themselves are in test_conformance.py.
Here: the registry, the rules on the machine, the pairing with a legacy reasoning parser, split
invariance through the app on the Qwen3 tokenizer, state round trips and bounds, garbage.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from derender.contract.requests import ChatRequest
from derender.core import parsers
from derender.core.parsers.formats import qwen3_coder
from derender.core.parsers.registry import REASONING_BY_NAME, TOOLS_BY_NAME
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.models import vocabulary
from derender_testing.tool_streams import (
    check_round_trips,
    feed_all,
    ids_of,
    requests,
    run_both,
    split,
)
from tests.test_parser_properties import END_THINK, IM_END, PROMPTS, PROPS, QWEN, THINK, enc
from tests.test_parser_qwen3_coder import TOOLS, outputs

STEP5 = qwen3_coder.STEP5_FORMAT
AUTO = ToolContext(tools=TOOLS)
WEATHER = ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
           "<parameter=unit>\nc\n</parameter>\n</function>\n</tool_call>")
PARIS = ["get_weather", '{"city": "Paris", "unit": "c"}']


def request(**fields: Any) -> ChatRequest:
    return ChatRequest.model_validate({"messages": [{"role": "user", "content": "x"}],
                                       **fields})


# --------------------------------------------------------------------------- the registry


def test_step5_is_a_tool_format_of_its_own_and_a_reasoning_alias() -> None:
    """vLLM's tool_parsers/__init__.py: step5 → Step5ToolParser (its own config);
    reasoning/__init__.py: step5 → DeepSeekR1ReasoningParser."""
    record = TOOLS_BY_NAME["step5"]
    assert record.name == "step5" and record.tag == 100 and record.under_none
    assert parsers.tool_format("step5") is STEP5
    assert parsers.tag_of("step5") not in {parsers.tag_of("qwen3_coder"), parsers.tag_of("mimo")}
    assert REASONING_BY_NAME["step5"] is REASONING_BY_NAME["deepseek_r1"]
    assert REASONING_BY_NAME["step5"].legacy
    assert not REASONING_BY_NAME["qwen3"].legacy  # an engine adapter in vLLM
    with pytest.raises(ValueError, match="not a qwen3_coder state"):
        qwen3_coder.FORMAT.step(STEP5.start(), "x", False, AUTO)
    assert parsers.pairing_error("step5", "step5") is None
    assert parsers.pairing_error("qwen3", "step5") is None


# --------------------------------------------------------------------------- the machine


def test_content_before_the_calls_is_kept_as_written() -> None:
    """[4612]: "\\n\\n  Let me check the weather for you. \\n\\n" (qwen3_coder strips it);
    [4668] without the reasoning parser."""
    text = "\n\n  Let me check the weather for you. \n\n" + WEATHER
    for size in (0, 1, 3, 7):
        assert feed_all(STEP5, split(text, size), AUTO) == (
            "\n\n  Let me check the weather for you. \n\n", [PARIS])
    assert feed_all(qwen3_coder.FORMAT, [text], AUTO)[0] == \
        "\n\n  Let me check the weather for you."


def test_whitespace_alone_before_a_call_is_no_content() -> None:
    """[4600] "\\n\\n", [4614] "\\n\\n \\n\\n", [4670] " \\n\\n": content None; without a call it
    stays [4632: the content after </think> as written]."""
    for space in ("\n\n", "\n\n \n\n", " \n\n"):
        for size in (0, 1, 2):
            assert feed_all(STEP5, split(space + WEATHER, size), AUTO) == ("", [PARIS])
    assert feed_all(STEP5, split("\n\nIt is sunny.", 2), AUTO) == ("\n\nIt is sunny.", [])
    assert feed_all(STEP5, ["\n\n", ""], AUTO) == ("\n\n", [])


def test_longer_whitespace_alone_is_content() -> None:
    """README: whitespace alone is held up to MAX_SPACE characters; more is content."""
    space = " " * (qwen3_coder.MAX_SPACE + 1)
    assert feed_all(STEP5, split(space + WEATHER, 16), AUTO) == (space, [PARIS])
    longer = space + " \n"  # a run past the bound is content whole, wherever a chunk ends in it
    for cut in range(len(longer) + 1):
        assert feed_all(STEP5, [longer[:cut], longer[cut:] + WEATHER, ""], AUTO) == (
            longer, [PARIS]), cut
    held = " " * qwen3_coder.MAX_SPACE
    assert feed_all(STEP5, split(held + WEATHER, 16), AUTO) == ("", [PARIS])


def test_text_after_the_calls_is_dropped() -> None:
    """[4616] content None; [4618] "\\n\\nChecking.\\n" (the "\\nDone." after the call
    dropped)."""
    assert feed_all(STEP5, split("\n\n" + WEATHER + "\nI will report back shortly.", 3),
                    AUTO) == ("", [PARIS])
    assert feed_all(STEP5, split("\n\nChecking.\n" + WEATHER + "\nDone.", 5), AUTO) == (
        "\n\nChecking.\n", [PARIS])


def test_values_are_typed_as_qwen3_coder_types_them() -> None:
    """[4604]: the tools' schema types every value."""
    text = ("<tool_call>\n<function=set_config>\n<parameter=count>\n3\n</parameter>\n"
            "<parameter=ratio>\n0.5\n</parameter>\n<parameter=enabled>\ntrue\n</parameter>\n"
            "<parameter=note>\nnull\n</parameter>\n<parameter=label>\n42\n</parameter>\n"
            "</function>\n</tool_call>")
    _, calls = feed_all(STEP5, split(text, 4), AUTO)
    assert [(n, json.loads(a)) for n, a in calls] == [
        ("set_config", {"count": 3, "ratio": 0.5, "enabled": True, "note": None,
                        "label": "42"})]


# --------------------------------------------------------------------------- pairing


def test_with_deepseek_r1_calls_are_read_only_when_they_may_be_returned() -> None:
    """vLLM's ``_engine_based`` is false with a legacy reasoning parser: under "none" and
    without ``tools`` the markup is content [4646, 4652]; the tool parser alone drops it
    [4678, 4680]."""
    vocab = vocabulary(QWEN)
    for fields in ({"tools": TOOLS, "tool_choice": "none"}, {}):
        paired = parsers.parser_settings("step5", "step5", request(**fields), vocab)
        assert paired.tool_format is None
        alone = parsers.parser_settings(None, "step5", request(**fields), vocab)
        assert alone.tool_format == "step5" and not alone.keep_calls
    auto = parsers.parser_settings("step5", "step5", request(tools=TOOLS), vocab)
    assert auto.tool_format == "step5" and auto.keep_calls


# --------------------------------------------------------------------------- states


def test_states_round_trip_and_stay_bounded() -> None:
    rng = random.Random(19)
    body = "".join(rng.choice([" ", "\n", "Hi ", "é", "🌦"]) for _ in range(300)) + "".join(
        "<tool_call>\n<function=set_config>\n<parameter=label>"
        + "".join(rng.choice(["a", "\n", "<", "é", "🌦"]) for _ in range(40))
        + "</parameter>\n</function>\n</tool_call>\n" for _ in range(100))
    pieces = split(body, 4)
    check_round_trips(STEP5, pieces, AUTO)
    state = STEP5.start()
    for piece in pieces:
        _, _, state = STEP5.feed(state, piece, False, AUTO)
        w = Writer()
        STEP5.encode(state, w)
        assert len(w.out) < qwen3_coder.MAX_VALUE + 2 * qwen3_coder.MAX_NAME + 64
        assert len(state.space) <= qwen3_coder.MAX_SPACE


def test_garbage_states_are_refused_and_garbage_text_never_fails() -> None:
    rng = random.Random(5)
    for _ in range(300):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 12)))
        try:
            STEP5.decode(Reader(raw))
        except (ValueError, IndexError, UnicodeDecodeError):
            continue
    with pytest.raises(ValueError, match="malformed Step5State"):
        STEP5.decode(Reader(bytes([99, 0, 0, 0, 0, 0, 0, 0])))
    alphabet = ["<", ">", "/", "=", "function", "parameter", "tool_call", "\n", " ", "é",
                "{", "}", "\x00", "\ufffd"]
    for _ in range(50):
        text = "".join(rng.choice(alphabet) for _ in range(200))
        whole = feed_all(STEP5, [text], AUTO)
        assert feed_all(STEP5, split(text, rng.randrange(1, 9)), AUTO) == whole


# --------------------------------------------------------------------------- through the app


@PROPS
@given(data=st.data())
def test_step5_stream_folds_to_message(client_for: Any, data: st.DataObject) -> None:
    """Split invariance through the app on the Qwen3 tokenizer, with and without the step5
    reasoning parser, any request (thinking on or off), any prompt."""
    reasoning = data.draw(st.sampled_from(["step5", None]), label="reasoning")
    client = client_for(QWEN, reasoning, "step5")
    chat = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS),
                     label="chat_request")
    chat["chat_template_kwargs"] = data.draw(st.sampled_from([
        None, {"enable_thinking": False}, {"enable_thinking": True}]), label="kwargs")
    parts, _, _ = data.draw(outputs(), label="output")
    space = data.draw(st.sampled_from([[], ["\n\n"], [" \n "], ["  Sure. \n"]]), label="lead")
    thought = data.draw(st.sampled_from([[], ["Hmm, weather.\n"], [THINK, "a < b\n  "]]))
    closing = data.draw(st.sampled_from([[], [END_THINK]]))
    parts = [*thought, *closing, *space, *parts]
    finish = data.draw(st.sampled_from(["stop", "length"]), label="finish")
    ids = ids_of(parts, enc)
    if finish == "stop" or not ids:
        ids.append(IM_END)
        finish = "stop"
    prompt = data.draw(st.sampled_from(["open", "closed"]), label="prompt")
    run_both(client, QWEN, ids, finish, PROMPTS[prompt][0], chat, data)
