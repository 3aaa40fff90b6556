"""poolside Laguna (issue 19, cases 6300-…, branch glm2): vLLM 0.33's ``poolside_v1`` tool and
reasoning parsers (``vllm/tool_parsers/poolside_v1_tool_parser.py``,
``vllm/reasoning/poolside_v1_reasoning_parser.py``) on ``poolside-standin`` (GPT-2's vocabulary
with ``<assistant>``, the think tags and GLM-4's call tags appended as single added tokens at
unverified ids, ``tests/models/README.md``; Laguna's own vocabulary is not available offline).

Usage (``scripts/peer-model-folders.sh poolside-standin``, or copy the derived folder to
``$PEER_HOME/models/i19gl-poolside``):

    "$VLLM_PEER"/start.sh i19gl-poolside 8342 --served-model-name poolside-standin \\
        --tool-call-parser poolside_v1 --reasoning-parser poolside_v1 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py poolside 8342

The calls: GLM-4's ``<tool_call>NAME\\n<arg_key>K</arg_key>\\n<arg_value>V</arg_value>…
</tool_call>``. Reasoning is ``deepseek_v3``'s: read when the template kwargs ``thinking`` or
``enable_thinking`` say so. Then EOS ``<|endoftext|>`` 50256, or none (finish "length"). Every
case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

POOLSIDE = "poolside_v1"
MODEL = "poolside-standin"
EOS = 50256

SERVER = Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", POOLSIDE,
                        "--reasoning-parser", POOLSIDE, "--enable-auto-tool-choice"],
                "poolside_v1 tool and reasoning parsers (poolside-standin vocabulary)", POOLSIDE,
                (f"parser:{POOLSIDE}", "reasoning", f"reasoning_parser:{POOLSIDE}"),
                ROOT / "tests" / "models" / MODEL / "tokenizer.json")
WIDE = "😀𝄞🀄"
LONG = "lorem ipsum " * 120
THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
THINKING: dict[str, Any] = {"chat_template_kwargs": {"thinking": True}}
ENABLE: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": True}}
MULTI_TURN: dict[str, Any] = {"messages": [
    {"role": "user", "content": USER},
    {"role": "assistant", "content": "", "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "22 °C, sunny"},
    {"role": "user", "content": "And in Zürich?"}]}


def call(name: str, *args: tuple[str, str], nl: str = "\n") -> str:
    body = "".join(f"<arg_key>{k}</arg_key>{nl}<arg_value>{v}</arg_value>{nl}" for k, v in args)
    return f"<tool_call>{name}{nl}{body}</tool_call>"


PARIS = call("get_weather", ("city", "Paris"), ("unit", "c"))


def Case(shape: str, output: str, stream: str, reasoning: bool = False,  # noqa: N802
         **fields: Any) -> list[_Case]:
    return both(_Case(POOLSIDE, shape, output, **{
        "eos": EOS, "kind": "reasoning" if reasoning else "tool_call", **fields}), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    out += Case("single", PARIS, "small")
    out += Case("single_inline", call("get_weather", ("city", "Paris"), nl=""), "one")
    out += Case("parallel", call("get_weather", ("city", "Zürich")) + "\n"
                + call("get_weather", ("city", '東京 "Tokyo"\nline two'), ("unit", "f")), "small")
    out += Case("typed", call(
        "set_config", ("count", "3"), ("ratio", "0.5"), ("enabled", "true"),
        ("tags", '["a", "b"]'), ("meta", '{"k": 1, "nested": {"ok": true}}'),
        ("note", "null"), ("label", " 42 "), ("level", " 2 ")), "small")
    out += Case("typed_fallbacks", call(
        "set_config", ("count", "three"), ("ratio", "1e3"), ("enabled", "True"),
        ("tags", "a, b"), ("meta", "{'k': (1, 2)}"), ("note", "None"), ("level", "{1, 2}"),
        ("extra", " 7 ")), "small")
    out += Case("no_args", "<tool_call>get_time</tool_call>", "one")
    out += Case("no_args_newline", "<tool_call>get_time\n</tool_call>", "small")
    out += Case("parallel_serial", call("get_weather", ("city", "Zürich")) + PARIS, "small",
                request={"parallel_tool_calls": False})
    out += Case("content_before", "Let me check the weather for you.\n" + PARIS, "mixed")
    out += Case("content_after", PARIS + "\nI will report back shortly.", "small")
    out += Case("content_between", PARIS + "\nand then\n" + call("get_time"), "small")
    out += Case("space_before", "\n\n" + PARIS, "small")
    out += Case("unknown_tool", call("get_stock", ("symbol", "ACME")), "small")
    out += Case("spaced_name", "<tool_call>  get_weather  \n <arg_key> city </arg_key>\n"
                "<arg_value> Paris </arg_value></tool_call>", "one")
    out += Case("empty_call", "Hi.<tool_call></tool_call>", "small")
    out += Case("empty_then_call", "Hi.<tool_call></tool_call>\n" + PARIS, "small")
    out += Case("junk_before_args", "<tool_call>get_weather\nnote: <arg_key>city</arg_key>"
                "<arg_value>Paris</arg_value></tool_call>", "small")
    out += Case("bad_then_good", "Sure.\n<tool_call>get_weather\nx\ny<arg_key>city</arg_key>"
                "<arg_value>Oslo</arg_value></tool_call>\n" + PARIS, "small")
    out += Case("nested_call", "<tool_call>get_weather<tool_call>get_time</tool_call>", "small")
    out += Case("no_value_close", "<tool_call>get_weather\n<arg_key>city</arg_key>\n"
                "<arg_value>Paris\n<arg_key>unit</arg_key>\n<arg_value>c</arg_value>\n"
                "</tool_call>", "small")
    out += Case("no_call_close", "Checking.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
                "<arg_value>Paris</arg_value>\n", "small")
    out += Case("good_then_unclosed", PARIS + "\n<tool_call>get_time\n", "small")
    out += Case("truncated", "Sure.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
                "<arg_value>Par", "one", eos=None)
    out += Case("cut_in_name", "Sure.<tool_call>get_wea", "small", eos=None)
    out += Case("tags_in_text", "Write <arg_key> and </arg_value> literally, then stop.",
                "small")
    out += Case("wide_chars", WIDE + " " + call("get_weather", ("city", WIDE + " Zürich")),
                "small")
    out += Case("long_value", call("get_weather", ("city", LONG)), "mixed")
    out += Case("tool_choice_none", "Sure. " + PARIS, "small", request=NONE)
    out += Case("required", PARIS, "small", request=REQUIRED)
    out += Case("named", PARIS, "mixed", request=NAMED_CHOICE)
    out += Case("no_tools", "Sure. " + PARIS, "small", tools=False)
    out += Case("empty_tools", PARIS, "small", tools=False, request={"tools": []})
    out += Case("multi_turn", call("get_weather", ("city", "Zürich")), "small",
                request=MULTI_TURN)
    out += Case("keep_special", "Sure. " + PARIS, "small",
                request={"skip_special_tokens": False})
    out += Case("think_off", "<think>" + THOUGHT + "</think>" + PLAIN, "small")
    out += Case("think_on", THOUGHT + "</think>" + PLAIN, "small", True, request=THINKING)
    out += Case("think_enable", THOUGHT + "</think>\n\n" + PLAIN, "small", True, request=ENABLE)
    out += Case("think_tool", THOUGHT + "</think>\n" + PARIS, "small", True, request=THINKING)
    out += Case("think_open_tag", "<think>" + THOUGHT + "</think>" + PLAIN, "small", True,
                request=THINKING)
    out += Case("think_only", THOUGHT, "small", True, request=THINKING, eos=None)
    out += Case("think_effort", THOUGHT + "</think>" + PLAIN, "small", True,
                request={"reasoning_effort": "high"})
    out += Case("think_tool_in_reasoning", THOUGHT + "\n" + PARIS, "small", True,
                request=THINKING)
    return out


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    """The server's render; ``"tools": []`` is refused by the render step (400): rendered
    without, the derender call then records vLLM's refusal."""
    if chat_request.get("tools") == []:
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(6300, {POOLSIDE: SERVER}, cases(), tools=TOOLS, user=USER, prompt=prompt)
