"""Tencent Hy3 (issue 19, cases 4280-…): vLLM 0.33's ``hy_v3`` tool and reasoning parsers
(``vllm/tool_parsers/hy_v3_tool_parser.py``, ``vllm/reasoning/hy_v3_reasoning_parser.py``) on
``hy3-standin`` (GPT-2's vocabulary with Hy3's markers appended as single added tokens at
unverified ids, ``tests/models/README.md``; Hy3's own vocabulary is not available offline).

Usage (``scripts/peer-model-folders.sh hy3-standin``, or copy the derived folder to
``$PEER_HOME/models/i19glm-hy3``):

    "$VLLM_PEER"/start.sh i19glm-hy3 8281 --served-model-name hy3-standin \\
        --tool-call-parser hy_v3 --reasoning-parser hy_v3 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py hy3 8281

The calls: ``<tool_calls>``, per call ``<tool_call>NAME<tool_sep>`` and per parameter
``<arg_key>K</arg_key><arg_value>V</arg_value>``, ``</tool_call>``, ``</tool_calls>`` (newlines
between the tags, as Hy3 writes them, or none). Reasoning is read only when
``reasoning_effort`` (the template kwarg, else the request's) is set and not "no_think".
Then EOS ``<|endoftext|>`` 50256, or none (finish "length"). Every case is recorded
non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

HY3 = "hy_v3"
MODEL = "hy3-standin"
EOS = 50256

SERVER = Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", HY3,
                        "--reasoning-parser", HY3, "--enable-auto-tool-choice"],
                "hy_v3 tool and reasoning parsers (hy3-standin vocabulary)", HY3,
                (f"parser:{HY3}", "reasoning", f"reasoning_parser:{HY3}"),
                ROOT / "tests" / "models" / MODEL / "tokenizer.json")
WIDE = "😀𝄞🀄"
LONG = "lorem ipsum " * 120
THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
EFFORT: dict[str, Any] = {"chat_template_kwargs": {"reasoning_effort": "high"}}
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
    body = "".join(f"{nl}<arg_key>{k}</arg_key>{nl}<arg_value>{v}</arg_value>" for k, v in args)
    return f"<tool_call>{name}<tool_sep>{body}{nl}</tool_call>"


def block(*calls: str, nl: str = "\n") -> str:
    return "<tool_calls>" + nl + nl.join(calls) + nl + "</tool_calls>"


PARIS = call("get_weather", ("city", "Paris"), ("unit", "c"))
SINGLE = block(PARIS)
NO_ARGS = "<tool_calls><tool_call>get_weather<tool_sep></tool_call></tool_calls>"


def Case(shape: str, output: str, stream: str, reasoning: bool = False,  # noqa: N802
         **fields: Any) -> list[_Case]:
    return both(_Case(HY3, shape, output, **{
        "eos": EOS, "kind": "reasoning" if reasoning else "tool_call", **fields}), stream)


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
    out += Case("unknown_tool", block(call("get_stock", ("symbol", "ACME"))), "small")
    out += Case("spaced_name", "<tool_calls><tool_call> get_weather <tool_sep><arg_key> city "
                "</arg_key> <arg_value> Paris </arg_value></tool_call></tool_calls>", "one")
    out += Case("no_value_close", "<tool_calls><tool_call>get_weather<tool_sep><arg_key>city"
                "</arg_key><arg_value>Paris<arg_key>unit</arg_key><arg_value>c</arg_value>"
                "</tool_call></tool_calls>", "small")
    out += Case("no_call_close", "<tool_calls>\n<tool_call>get_weather<tool_sep>\n<arg_key>"
                "city</arg_key>\n<arg_value>Paris</arg_value>\n", "small")
    out += Case("no_wrapper", PARIS, "small")
    out += Case("no_sep", "<tool_calls><tool_call>get_weather</tool_call></tool_calls>", "small")
    out += Case("truncated", "<tool_calls>\n<tool_call>get_weather<tool_sep>\n<arg_key>city"
                "</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>unit</arg_key>\n"
                "<arg_value>", "one", eos=None)
    out += Case("cut_in_name", "Sure.<tool_calls>\n<tool_call>get_wea", "small", eos=None)
    out += Case("tags_in_text", "Write <arg_key> and </arg_value> literally, then stop.", "small")
    out += Case("wide_chars", WIDE + " " + block(call("get_weather", ("city", WIDE + " Zürich"))),
                "small")
    out += Case("long_value", block(call("get_weather", ("city", LONG))), "mixed")
    out += Case("tool_choice_none", SINGLE, "small", request=NONE)
    out += Case("required", SINGLE, "small", request=REQUIRED)
    out += Case("named", SINGLE, "mixed", request=NAMED_CHOICE)
    out += Case("no_tools", SINGLE, "small", tools=False)
    out += Case("empty_tools", SINGLE, "small", tools=False, request={"tools": []})
    out += Case("multi_turn", block(call("get_weather", ("city", "Zürich"))), "small",
                request=MULTI_TURN)
    out += Case("keep_special", "Sure. " + SINGLE, "small",
                request={"skip_special_tokens": False})
    out += Case("think_default", "<think>" + THOUGHT + "</think>" + PLAIN, "small")
    out += Case("think_no_think", "<think>" + THOUGHT + "</think>" + PLAIN, "small",
                request=NO_THINK)
    out += Case("effort_content", THOUGHT + "</think>" + PLAIN, "small", True, request=EFFORT)
    out += Case("effort_tool", THOUGHT + "</think>\n" + SINGLE, "small", True, request=EFFORT)
    out += Case("effort_open_tag", "<think>" + THOUGHT + "</think>\n\n" + PLAIN, "small", True,
                request=EFFORT)
    out += Case("effort_only", THOUGHT, "small", True, request=EFFORT, eos=None)
    out += Case("effort_top_level", THOUGHT + "</think>" + PLAIN, "small", True,
                request=TOP_EFFORT)
    out += Case("effort_tool_in_reasoning", THOUGHT + "\n" + SINGLE, "small", True,
                request=EFFORT)
    return out


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    """The server's render; ``"tools": []`` is refused by the render step (400): rendered
    without, the derender call then records vLLM's refusal."""
    if chat_request.get("tools") == []:
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(4280, {HY3: SERVER}, cases(), tools=TOOLS, user=USER, prompt=prompt)
