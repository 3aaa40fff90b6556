"""Any reasoning parser with any tool parser, as in vLLM 0.33 (issue 19), for the formats whose
one machine reads both (``Machine.FAMILY``: ``muse``, ``cohere_command3``/``4``):

- the ``muse`` tool parser alone or after another family's reasoning parser reads every
  channel itself (``ToolRecord.alone_mode``): recordings 7490-7509 and 9866-9879; so does
  ``muse_glimmer``'s (9370-9381; its split invariance in test_parser_muse_glimmer.py);
- the ``muse`` reasoning parser before another family's tool parser reads the reasoning alone
  first, then that tool parser the content it leaves (``parsers.front``): 9852-9865;
- a Cohere reasoning parser with any tool parser is read as with its own (vLLM's
  ``CohereCommandParser``, ``ReasoningRecord.stands_for_tools``): 10600-10625.

The replays themselves are in test_conformance.py. Here: which pairs vLLM refuses (its source,
not our records), and split invariance through the app for each kind of pairing.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.contract.requests import ChatRequest
from derender.core import parsers
from derender_testing.models import tokenizer, vocabulary
from derender_testing.recorded import load_case, numbered
from derender_testing.tool_streams import ids_of, requests, run_both
from tests.test_parser_properties import PROPS

# vLLM 0.33's refusals, read in its source: ParserManager._compose_parser raises TypeError
# when a response-template parser is combined with a parser standing for another (or for
# none: any non-template parser); CohereCommandParser.__init__ asserts that its reasoning
# parser, when one is named, is a Cohere one (seen at start-up: docs/recording/cohere.md)
TEMPLATE_PARSERS = {"hf", "beam"}
COHERE = {"cohere_command3", "cohere_command4"}


def refused_by_vllm(reasoning_parser: str | None, tool_parser: str | None) -> bool:
    if reasoning_parser is None or tool_parser is None:
        return False
    if {reasoning_parser, tool_parser} & TEMPLATE_PARSERS:
        return reasoning_parser != tool_parser
    return tool_parser in COHERE and reasoning_parser not in COHERE


def test_every_pair_is_served_unless_vllm_refuses_it() -> None:
    reasoning_names = [None, *sorted(parsers.REASONING_PARSERS)]
    tool_names = [None, *sorted(parsers.TOOL_PARSERS)]
    refused = []
    for reasoning_parser in reasoning_names:
        for tool_parser in tool_names:
            error = parsers.pairing_error(reasoning_parser, tool_parser)
            assert (error is not None) == refused_by_vllm(reasoning_parser, tool_parser), (
                reasoning_parser, tool_parser, error)
            if error is None and (reasoning_parser or tool_parser):
                parsers.load(reasoning_parser, tool_parser)  # every machine it needs exists
            else:
                refused.append((reasoning_parser, tool_parser))
    assert ("qwen3", "cohere_command4") in refused and ("hf", "hermes") in refused
    assert ("cohere_command4", "hermes") not in refused


def test_what_reads_each_kind_of_pairing() -> None:
    # a family reasoning parser reads first, then the other family's tool parser
    assert parsers.front("muse", "hermes") == "muse"
    assert parsers.front("musespark1x", "kimi_k3") == "muse"
    # Cohere's reasoning parser stands for its tool parser (10600: cohere's calls; 10620:
    # cohere_command3's reading, <|START_TEXT|> kept as text, with cohere_command4's tools)
    assert parsers.served_pair("cohere_command4", "hermes") == ("cohere_command4",
                                                                 "cohere_command4")
    assert parsers.served_pair("cohere_command3", "cohere_command4") == ("cohere_command3",
                                                                         "cohere_command3")
    assert parsers.front("cohere_command4", "hermes") is None
    # a family tool parser without its reasoning parser reads in its alone mode
    for name in ("muse", "muse_glimmer"):
        record = parsers.tool_record(name)
        assert record is not None and record.alone_mode
    assert parsers.served_pair("qwen3", "muse") == ("qwen3", "muse")


def message(number: int) -> dict[str, Any]:
    choice: dict[str, Any] = load_case(numbered(number))["calls"][0]["response"]["choices"][0]
    got: dict[str, Any] = choice["message"]
    return got


@pytest.mark.parametrize(("number", "content", "reasoning"), [
    # the muse tool parser alone: the reasoning dropped; no call: the output as written
    (7490, None, None),
    (7494, " to=self<|message|>The user wants Paris weather; call the tool.<|eom|>"
     "<|start|>assistant to=user<|message|>It is sunny in Paris, 22 °C.<|eot|>", None),
    # the muse reasoning parser before hermes: hermes reads the answer's body
    (9852, None, "The user wants Paris weather; call the tool."),
    # cohere_command4's reasoning parser with hermes: cohere's calls, hermes' markup is text
    (10602, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": '
     '"c"}}\n</tool_call>', "The user wants Paris weather; I will call the tool.")])
def test_the_recorded_messages(number: int, content: str | None, reasoning: str | None) -> None:
    """What the replays hold us to, spelled out (vLLM's messages as recorded)."""
    got = message(number)
    assert got["content"] == content and got["reasoning"] == reasoning


# --------------------------------------------------------------------------- any split

MUSE = "muse-spark-standin"
THOUGHT = "The user wants Paris weather; call the tool."
HERMES = ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n'
          "</tool_call>")
ATEM = ('<|start|>assistant to=get_weather.get_weather<|message|><atem:function_calls>\n'
        '<atem:invoke name="get_weather.get_weather">\n'
        '<atem:parameter name="city">Zürich 😀</atem:parameter>\n'
        "</atem:invoke>\n</atem:function_calls><|eom|>")
MUSE_PIECES = [" to=self<|message|>" + THOUGHT + "<|eom|>", " to=self<|message|>", THOUGHT,
               "<|eom|>", "<|start|>assistant to=user<|message|>",
               "<|start|>assistant to=commentary<|message|>", "Let me check.", HERMES, ATEM,
               "</think>\n\n", THOUGHT + "</think>", "<|eot|>", "Sure. ", "\n", " 東京 "]
KINDS = {  # kind: (model, reasoning parser, tool parser, pieces, EOS id)
    "muse tools alone": (MUSE, None, "muse", MUSE_PIECES, 200008),
    "muse tools after another reasoning parser": (MUSE, "qwen3", "muse", MUSE_PIECES, 200008),
    "muse reasoning before another tool parser": (MUSE, "muse", "hermes", MUSE_PIECES, 200007),
}
"""The kinds read by more than one machine, or by one in a mode of its own; a Cohere reasoning
parser with another tool parser is read exactly as with its own (next test), whose split
invariance test_parser_cohere.py checks."""
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}}}}
MESSAGES = [{"role": "user", "content": "What's the weather in Paris?"}]


@pytest.mark.parametrize("request_fields", [
    {}, {"tools": [WEATHER]}, {"tools": [WEATHER], "tool_choice": "none"},
    {"tools": [WEATHER], "tool_choice": "required"}, {"include_reasoning": False},
    {"chat_template_kwargs": {"reasoning_type": "disabled"}}])
def test_cohere_reasoning_reads_as_with_its_own_tool_parser(request_fields: dict[str, Any]
                                                            ) -> None:
    vocab = vocabulary("cohere-standin")
    request = ChatRequest.model_validate({"messages": MESSAGES, **request_fields})
    for reasoning_parser, other, own in (("cohere_command4", "hermes", "cohere_command4"),
                                         ("cohere_command3", "cohere_command4",
                                          "cohere_command3"),
                                         ("cohere_command3", "muse", "cohere_command3")):
        assert parsers.parser_settings(reasoning_parser, other, request, vocab) == \
            parsers.parser_settings(reasoning_parser, own, request, vocab)


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(PROPS, max_examples=15)
@given(data=st.data())
def test_any_split_folds_to_the_message(kind: str, client_for: Any, data: st.DataObject
                                        ) -> None:
    model, reasoning_parser, tool_parser, pieces, eos = KINDS[kind]
    client = client_for(model, reasoning_parser, tool_parser)
    parts = data.draw(st.lists(st.sampled_from(pieces), max_size=8), label="output")
    ids = ids_of(parts, lambda text: list(tokenizer(model).encode(
        text, add_special_tokens=False).ids))
    request = data.draw(requests(MESSAGES, [WEATHER]), label="chat_request")
    finish = data.draw(st.sampled_from(["stop", "length"]), label="finish") if ids else "stop"
    run_both(client, model, ids + ([eos] if finish == "stop" else []), finish, [1], request,
             data)
