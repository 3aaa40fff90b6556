"""Tencent Hy4 (issue 19, cases 6200-…, branch glm2): vLLM 0.33's ``hy_v4`` tool and
reasoning parsers (``vllm/tool_parsers/hy_v4_tool_parser.py``,
``vllm/reasoning/hy_v4_reasoning_parser.py``) on ``hy4-standin`` (GPT-2's vocabulary with Hy4's
markers, suffixed ``:opensource``, appended as single added tokens at unverified ids,
``tests/models/README.md``; Hy4's own vocabulary is not available offline).

Usage (``scripts/peer-model-folders.sh hy4-standin``, or copy the derived folder to
``$PEER_HOME/models/i19gl-hy4``):

    "$VLLM_PEER"/start.sh i19gl-hy4 8341 --served-model-name hy4-standin \\
        --tool-call-parser hy_v4 --reasoning-parser hy_v4 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py hy4 8341

The calls: ``<tool_calls:S>``, per call ``<tool_call:S>NAME`` and per parameter
``<arg_key:S>K</arg_key:S><arg_value:S>V</arg_value:S>``, ``</tool_call:S>``,
``</tool_calls:S>`` (S the suffix). vLLM reads them strictly: any malformed part makes the
whole output content. Reasoning is read unless ``reasoning_effort`` (the template kwarg, else
the request's) is "no_think" (default "high"): most tool cases send "no_think", the rest
write the reasoning's end first. Then EOS ``<|endoftext|>`` 50256, or none (finish
"length"). Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

HY4 = "hy_v4"
MODEL = "hy4-standin"
EOS = 50256
S = ":opensource"

SERVER = Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", HY4,
                        "--reasoning-parser", HY4, "--enable-auto-tool-choice"],
                "hy_v4 tool and reasoning parsers (hy4-standin vocabulary)", HY4,
                (f"parser:{HY4}", "reasoning", f"reasoning_parser:{HY4}"),
                ROOT / "tests" / "models" / MODEL / "tokenizer.json")
WIDE = "😀𝄞🀄"
LONG = "lorem ipsum " * 120
THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
THINK, END_THINK = f"<think{S}>", f"</think{S}>"
CALLS, END_CALLS = f"<tool_calls{S}>", f"</tool_calls{S}>"
CALL, END_CALL = f"<tool_call{S}>", f"</tool_call{S}>"
KEY, END_KEY, VALUE, END_VALUE = f"<arg_key{S}>", f"</arg_key{S}>", f"<arg_value{S}>", \
    f"</arg_value{S}>"
NO_THINK: dict[str, Any] = {"chat_template_kwargs": {"reasoning_effort": "no_think"}}
TOP_EFFORT: dict[str, Any] = {"reasoning_effort": "low"}
MULTI_TURN: dict[str, Any] = {"messages": [
    {"role": "user", "content": USER},
    {"role": "assistant", "content": "", "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "22 °C, sunny"},
    {"role": "user", "content": "And in Zürich?"}]}


def call(name: str, *args: tuple[str, str], nl: str = "\n") -> str:
    body = "".join(f"{nl}{KEY}{k}{END_KEY}{VALUE}{v}{END_VALUE}" for k, v in args)
    return f"{CALL}{name}{body}{nl}{END_CALL}"


def block(*calls: str, nl: str = "\n") -> str:
    return CALLS + nl + nl.join(calls) + nl + END_CALLS


PARIS = call("get_weather", ("city", "Paris"), ("unit", "c"))
SINGLE = block(PARIS)
NO_ARGS = f"{CALLS}{CALL}get_time{END_CALL}{END_CALLS}"


def Case(shape: str, output: str, stream: str, think: bool = False,  # noqa: N802
         **fields: Any) -> list[_Case]:
    """A case; unless ``think``, the request switches thinking off (``no_think``)."""
    request = dict(fields.pop("request", {}))
    if not think:
        request = {**NO_THINK, **request}
    return both(_Case(HY4, shape, output, request=request, **{
        "eos": EOS, "kind": "reasoning" if think else "tool_call", **fields}), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    out += Case("single", SINGLE, "small")
    out += Case("single_inline", block(call("get_weather", ("city", "Paris"), nl=""), nl=""),
                "one")
    out += Case("parallel", block(call("get_weather", ("city", "Zürich")),
                                  call("get_weather", ("city", '東京 "Tokyo"\nline two'),
                                       ("unit", "f"))), "small")
    out += Case("typed", block(call(
        "set_config", ("count", "3"), ("ratio", "0.5"), ("enabled", "True"),
        ("tags", '["a", "b"]'), ("meta", '{"k": 1, "nested": {"ok": true}}'),
        ("note", "null"), ("label", "42"), ("level", "2"))), "small")
    out += Case("typed_fallbacks", block(call(
        "set_config", ("count", "three"), ("ratio", "1e3"), ("enabled", "yes"),
        ("tags", "a, b"), ("meta", "{'k': 1}"), ("note", "None"), ("level", "2.0"),
        ("extra", "7"))), "small")
    out += Case("no_args", NO_ARGS, "one")
    out += Case("no_args_serial", NO_ARGS, "small", request={"parallel_tool_calls": False})
    out += Case("parallel_serial", block(call("get_weather", ("city", "Zürich")), PARIS),
                "small", request={"parallel_tool_calls": False})
    out += Case("content_before", "Let me check the weather for you.\n" + SINGLE, "mixed")
    out += Case("content_after", SINGLE + "\nI will report back shortly.", "small")
    out += Case("space_before", "\n\n" + SINGLE, "small")
    out += Case("text_between_calls", CALLS + "\n" + PARIS + "\nand then\n"
                + call("get_time") + "\n" + END_CALLS, "small")
    out += Case("calls_after_block", SINGLE + "\n" + block(call("get_time")), "small")
    out += Case("unknown_tool", block(call("get_stock", ("symbol", "ACME"))), "small")
    out += Case("spaced_name", f"{CALLS}{CALL} get_weather {KEY} city {END_KEY} {VALUE} Paris "
                f"{END_VALUE}{END_CALL}{END_CALLS}", "one")
    out += Case("key_value_newline", f"{CALLS}\n{CALL}get_weather\n{KEY}city{END_KEY}\n"
                f"{VALUE}Paris{END_VALUE}\n{END_CALL}\n{END_CALLS}", "small")
    out += Case("empty_block", CALLS + "\n" + END_CALLS, "small")
    out += Case("empty_name", f"Hi.{CALLS}{CALL}  {KEY}city{END_KEY}{VALUE}Paris{END_VALUE}"
                f"{END_CALL}{END_CALLS}", "small")
    out += Case("no_value_close", f"Hi.{CALLS}{CALL}get_weather{KEY}city{END_KEY}{VALUE}Paris"
                f"{KEY}unit{END_KEY}{VALUE}c{END_VALUE}{END_CALL}{END_CALLS}", "small")
    out += Case("text_between_args", f"{CALLS}{CALL}get_weather{KEY}city{END_KEY}oops{VALUE}"
                f"Paris{END_VALUE}{END_CALL}{END_CALLS}", "small")
    out += Case("second_call_bad", "Sure.\n" + block(PARIS, f"{CALL}get_time{KEY}x{END_CALL}"),
                "small")
    out += Case("nested_call", block(f"{CALL}get_weather{CALL}get_time{END_CALL}{END_CALL}"),
                "small")
    out += Case("no_call_close", f"{CALLS}\n{CALL}get_weather\n{KEY}city{END_KEY}\n{VALUE}"
                f"Paris{END_VALUE}\n{END_CALLS}", "small")
    out += Case("no_block_close", "Checking.\n" + CALLS + "\n" + PARIS + "\n", "small")
    out += Case("no_wrapper", PARIS, "small")
    out += Case("truncated", f"Sure.\n{CALLS}\n{CALL}get_weather\n{KEY}city{END_KEY}\n{VALUE}"
                f"Paris{END_VALUE}\n{KEY}unit{END_KEY}\n{VALUE}", "one", eos=None)
    out += Case("cut_in_name", f"Sure.{CALLS}\n{CALL}get_wea", "small", eos=None)
    out += Case("tags_in_text", "Write <arg_key:opensource> and <tool_calls> literally, "
                "then stop.", "small")
    out += Case("wide_chars", WIDE + " " + block(call("get_weather", ("city", WIDE + " Zürich"))),
                "small")
    out += Case("long_value", block(call("get_weather", ("city", LONG))), "mixed")
    out += Case("tool_choice_none", "Sure. " + SINGLE, "small", request=NONE)
    out += Case("required", SINGLE, "small", request=REQUIRED)
    out += Case("named", SINGLE, "mixed", request=NAMED_CHOICE)
    out += Case("required_bad", "No call.\n" + CALLS, "small", request=REQUIRED)
    out += Case("no_tools", "Sure. " + SINGLE, "small", tools=False)
    out += Case("empty_tools", SINGLE, "small", tools=False, request={"tools": []})
    out += Case("multi_turn", block(call("get_weather", ("city", "Zürich"))), "small",
                request=MULTI_TURN)
    out += Case("keep_special", "Sure. " + SINGLE, "small",
                request={"skip_special_tokens": False})
    out += Case("no_think_tags", THINK + THOUGHT + END_THINK + PLAIN, "small")
    out += Case("think_default", THOUGHT + END_THINK + PLAIN, "small", True)
    out += Case("think_tool", THOUGHT + END_THINK + "\n" + SINGLE, "small", True)
    out += Case("think_tool_content", THOUGHT + END_THINK + "Checking.\n" + SINGLE, "mixed",
                True)
    out += Case("think_open_tag", THINK + THOUGHT + END_THINK + "\n\n" + PLAIN, "small", True)
    out += Case("think_only", THOUGHT, "small", True, eos=None)
    out += Case("think_top_level", THOUGHT + END_THINK + PLAIN, "small", True,
                request=TOP_EFFORT)
    out += Case("think_kwargs_high", THOUGHT + END_THINK + PLAIN, "small", True,
                request={"chat_template_kwargs": {"reasoning_effort": "high"}})
    out += Case("think_top_none", THOUGHT + END_THINK + PLAIN, "small", True,
                request={"reasoning_effort": "none"})
    out += Case("think_tool_in_reasoning", THOUGHT + "\n" + SINGLE, "small", True)
    out += Case("think_no_tools", THOUGHT + END_THINK + SINGLE, "small", True, tools=False)
    out += Case("think_keep_special", THOUGHT + END_THINK + "Sure. " + SINGLE, "small", True,
                request={"skip_special_tokens": False})
    return out


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    """The server's render; ``"tools": []`` is refused by the render step (400): rendered
    without, the derender call then records vLLM's refusal."""
    if chat_request.get("tools") == []:
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(6200, {HY4: SERVER}, cases(), tools=TOOLS, user=USER, prompt=prompt)
