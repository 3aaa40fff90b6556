"""Kimi K2.x (cases 1063-…): the ``kimi_k2`` tool and reasoning parsers (one engine,
vllm/parser/kimi_k2.py) on ``kimi-k2-standin`` (GPT-2's vocabulary padded to 163,584 ids with
Kimi's special tokens at their real ids; ``model_type: kimi_k2``, which makes vLLM's call ids
``functions.NAME:IDX``), and the tool parser alone.

Usage (`scripts/peer-model-folders.sh kimi-k2-standin` first copies the derived folder):

    "$VLLM_PEER"/start.sh kimi-k2-standin 8850 --tool-call-parser kimi_k2 \\
        --reasoning-parser kimi_k2 --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh kimi-k2-standin 8852 --tool-call-parser kimi_k2 \\
        --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py kimi 8850 8852

The output is reasoning (the stand-in template opens ``<think>`` after ``assistant\\n``; with
``chat_template_kwargs.thinking`` false it writes ``<think></think>``), ``</think>``, content,
then ``<|tool_calls_section_begin|>`` with calls ``<|tool_call_begin|>functions.NAME:IDX
<|tool_call_argument_begin|>{JSON}<|tool_call_end|>`` and ``<|tool_calls_section_end|>``
(all special tokens, ids 163595-163599; ``<think>`` 163606, ``</think>`` 163607), then EOS
``<|im_end|>`` 163586, or none (finish "length"). The ``history_*`` cases send a conversation
whose earlier assistant turns carry tool calls (vLLM counts them for the ids it makes).
Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

import json
from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

MODEL = "kimi-k2-standin"
IM_END = 163586
K, KT = "kimi_k2", "kimi_k2-tool"


def _server(reasoning: bool) -> Server:
    r = ["--reasoning-parser", "kimi_k2"] if reasoning else []
    return Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", "kimi_k2", *r,
                          "--enable-auto-tool-choice"],
                  "kimi_k2 tool and reasoning parsers" if reasoning else "kimi_k2 tool parser",
                  "kimi_k2" if reasoning else "kimi_k2-tool",
                  ("parser:kimi_k2", *(("reasoning", "reasoning_parser:kimi_k2")
                                       if reasoning else ())),
                  ROOT / "tests" / "models" / MODEL / "tokenizer.json")


SERVERS = {K: _server(True), KT: _server(False)}

SEC, SEC_END = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
CALL, ARG, CALL_END = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"


def call(header: str, args: str) -> str:
    return f"{CALL}{header}{ARG}{args}{CALL_END}"


def section(*calls: str) -> str:
    return SEC + "".join(calls) + SEC_END


PARIS = '{"city": "Paris", "unit": "c"}'
SINGLE = section(call("functions.get_weather:0", PARIS))
TYPED = ('{"count": 3, "ratio": 0.5, "enabled": true, "tags": ["a", "b"], "meta": {"k": 1}, '
         '"note": null, "label": "42", "level": 2}')
STRINGY = ('{"count": "3", "ratio": "0.5", "enabled": "true", "tags": "[\\"a\\"]", '
           '"level": "2", "extra": "7"}')
OUTPUTS = {
    "single": SINGLE,
    "parallel": section(call("functions.get_weather:0", '{"city": "Zürich"}'),
                        call("functions.get_weather:1",
                             '{"city": "東京 \\"Tokyo\\"\\nline two", "unit": "f"}')),
    "typed": section(call("functions.set_config:0", TYPED)),
    "string_values": section(call("functions.set_config:0", STRINGY)),
    "no_args": section(call("functions.get_time:0", "{}")),
    "empty_args": section(call("functions.get_time:0", "")),
    "spaced": SEC + "\n" + CALL + " functions.get_weather:0 \n" + ARG + "\n" + PARIS + "\n"
    + CALL_END + "\n" + SEC_END,
    "content_before": "Let me check the weather for you.\n" + SINGLE,
    "content_after": SINGLE + "\nI will report back shortly.",
    "whitespace_before": "\n\n" + SINGLE,
    "unknown_tool": section(call("functions.get_stock:0", '{"symbol": "ACME"}')),
    "header_no_index": section(call("functions.get_weather", PARIS)),
    "header_no_prefix": section(call("get_weather:0", PARIS)),
    "header_other_index": section(call("functions.get_weather:7", PARIS)),
    "header_dotted": section(call("functions.tools.get_weather:0", PARIS)),
    "invalid_json": section(call("functions.get_weather:0", "{'city': 'Paris'}")),
    "no_call_end": SEC + CALL + "functions.get_weather:0" + ARG + PARIS + SEC_END,
    "no_section_end": SEC + call("functions.get_weather:0", PARIS),
    "no_section": call("functions.get_weather:0", PARIS),
    "two_sections": SINGLE + section(call("functions.get_time:1", "{}")),
    "markers_in_text": "Kimi writes functions.get_weather:0 {\"city\": \"Paris\"} as text.",
}
TRUNCATED = SEC + CALL + "functions.get_weather:0" + ARG + '{"city": "Par'

THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
LEAD = THOUGHT + "</think>"
NOT_THINKING: dict[str, Any] = {"chat_template_kwargs": {"thinking": False}}
NOT_ENABLED: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": False}}
THINKING: dict[str, Any] = {"chat_template_kwargs": {"thinking": True}}


def _history(calls: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """A conversation: the user's question, an assistant turn with ``calls`` (id, name,
    arguments) and their results, then the user again."""
    return [{"role": "user", "content": USER},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": cid, "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}}
                for cid, name, args in calls]},
            *({"role": "tool", "tool_call_id": cid, "content": "ok"} for cid, _, _ in calls),
            {"role": "user", "content": "And once more, please."}]


HISTORY_2 = {"messages": _history([("functions.get_weather:0", "get_weather", {"city": "Rome"}),
                                   ("functions.get_time:1", "get_time", {})])}
HISTORY_OTHER_IDS = {"messages": _history([("call_abc", "get_weather", {"city": "Rome"})])}


def Case(server: str, shape: str, output: str, stream: str,  # noqa: N802
         reasoning: bool = True, **fields: Any) -> list[_Case]:
    return both(_Case(server, shape, output, **{
        "eos": IM_END, "kind": "reasoning" if reasoning else "tool_call", **fields}), stream)


def kimi_cases() -> list[_Case]:
    cases: list[_Case] = []
    streams = {"single": "one", "parallel": "small", "typed": "mixed", "string_values": "small",
               "no_args": "one", "empty_args": "one", "spaced": "one",
               "content_before": "mixed", "content_after": "small", "whitespace_before": "one",
               "unknown_tool": "small", "header_no_index": "one", "header_no_prefix": "one",
               "header_other_index": "small", "header_dotted": "small", "invalid_json": "small",
               "no_call_end": "one", "no_section_end": "one", "no_section": "one",
               "two_sections": "small", "markers_in_text": "small"}
    for shape, stream in streams.items():
        cases += Case(K, shape, LEAD + OUTPUTS[shape], stream)
    cases += Case(K, "truncated", LEAD + TRUNCATED, "one", eos=None)
    cases += Case(K, "tool_choice_none", LEAD + SINGLE, "small", request=NONE)
    cases += Case(K, "required", LEAD + SINGLE, "small", request=REQUIRED)
    cases += Case(K, "named", LEAD + SINGLE, "mixed", request=NAMED_CHOICE)
    cases += Case(K, "no_tools", LEAD + SINGLE, "small", tools=False)
    # call ids across the conversation's earlier tool calls
    cases += Case(K, "history_next_index", LEAD + section(
        call("functions.get_weather:2", PARIS)), "small", request=HISTORY_2)
    cases += Case(K, "history_model_restarts", LEAD + OUTPUTS["parallel"], "one",
                  request=HISTORY_2)
    cases += Case(K, "history_no_index", LEAD + OUTPUTS["header_no_index"], "small",
                  request=HISTORY_2)
    cases += Case(K, "history_other_ids", LEAD + section(
        call("functions.get_weather:1", PARIS)), "small", request=HISTORY_OTHER_IDS)
    # reasoning
    cases += Case(K, "reasoning_content", LEAD + "\n\n" + PLAIN, "small")
    cases += Case(K, "reasoning_only", THOUGHT, "one", eos=None)
    cases += Case(K, "think_start_written", "<think>" + LEAD + PLAIN, "one")
    cases += Case(K, "reasoning_trailing_space", THOUGHT + "\n \n</think>" + PLAIN, "one")
    cases += Case(K, "tool_ends_reasoning", THOUGHT + "\n" + SINGLE, "one")
    cases += Case(K, "second_think_end", LEAD + PLAIN + "</think> more", "small")
    cases += Case(K, "thinking_off", PLAIN, "small", request=NOT_THINKING)
    cases += Case(K, "thinking_off_tool", SINGLE, "one", request=NOT_THINKING)
    cases += Case(K, "thinking_off_think_text", "<think>" + THOUGHT + "</think>" + PLAIN, "one",
                  request=NOT_THINKING)
    cases += Case(K, "enable_thinking_off", PLAIN, "small", request=NOT_ENABLED)
    cases += Case(K, "thinking_on_kwarg", LEAD + PLAIN, "small", request=THINKING)
    # the tool parser alone: reasoning markup is content
    cases += Case(KT, "single", LEAD + SINGLE, "small", False)
    cases += Case(KT, "content_before", "Let me check.\n" + SINGLE, "mixed", False)
    cases += Case(KT, "history_next_index", section(call("functions.get_weather:2", PARIS)),
                  "one", False, request=HISTORY_2)
    cases += Case(KT, "reasoning_text", "<think>" + LEAD + PLAIN, "small", False)
    return cases


FORMAT = Format(1063, SERVERS, kimi_cases(), tools=TOOLS, user=USER)
