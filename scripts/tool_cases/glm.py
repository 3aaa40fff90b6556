"""GLM-4.5 / GLM-4.7 (cases 615-…): the ``glm45`` tool and reasoning parsers on ``glm-4.5v``
(GLM-4.5V's tokenizer and chat template on a GLM-4.5-Air text config) and the ``glm47`` ones
on ``glm-4.7-flash``. vLLM 0.33 serves both names with one parser (vllm/parser/glm47_moe.py).

Usage (`scripts/peer-model-folders.sh NAME...` first copies tests/models/NAME, tokenizer
unpacked, into the peer's models folder):

    "$VLLM_PEER"/start.sh glm-4.5v 8730 --tool-call-parser glm45 --reasoning-parser glm45 \\
        --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh glm-4.7-flash 8731 --tool-call-parser glm47 \\
        --reasoning-parser glm47 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py glm 8730 8731

``<think>``, ``</think>``, ``<tool_call>``, ``</tool_call>``, ``<arg_key>``, ``</arg_key>``,
``<arg_value>``, ``</arg_value>`` are added tokens and become their ids; then EOS
``<|user|>`` (GLM ends an assistant turn with the next role token; 151336 / 154827), or none
(finish "length"). GLM-4.5's generation prompt ends ``<|assistant|>`` (the model writes
``<think>`` itself; with ``enable_thinking`` false the prompt adds ``<think></think>\\n``);
GLM-4.7's ends ``<|assistant|><think>`` (``</think>`` when ``enable_thinking`` is false). The
GLM-4.5 calls put a newline after the name and between the tags, GLM-4.7's none. Every case
is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

G45, G47 = "glm45", "glm47"
EOS = {G45: 151336, G47: 154827}
MODEL = {G45: "glm-4.5v", G47: "glm-4.7-flash"}


def _server(name: str) -> Server:
    model = MODEL[name]
    return Server(model, ["--served-model-name", model, "--tool-call-parser", name,
                          "--reasoning-parser", name, "--enable-auto-tool-choice"],
                  f"{name} tool and reasoning parsers", name,
                  (f"parser:{name}", "reasoning", f"reasoning_parser:{name}"),
                  ROOT / "tests" / "models" / model / "tokenizer.json")


SERVERS = {G45: _server(G45), G47: _server(G47)}


def call(style: str, name: str, *args: tuple[str, str]) -> str:
    nl = "\n" if style == G45 else ""
    body = "".join(f"{nl}<arg_key>{k}</arg_key>{nl}<arg_value>{v}</arg_value>" for k, v in args)
    return f"<tool_call>{name}{body}{nl}</tool_call>"


def outputs(style: str) -> dict[str, str]:
    nl = "\n" if style == G45 else ""
    paris = call(style, "get_weather", ("city", "Paris"), ("unit", "c"))
    return {
        "single": paris,
        "parallel": call(style, "get_weather", ("city", "Zürich")) + nl
        + call(style, "get_weather", ("city", '東京 "Tokyo"\nline two'), ("unit", "f")),
        # values are text; the tool's schema types them
        "typed": call(style, "set_config", ("count", "3"), ("ratio", "0.5"), ("enabled", "true"),
                      ("tags", '["a", "b"]'), ("meta", '{"k": 1, "nested": {"ok": true}}'),
                      ("note", "null"), ("label", "42"), ("level", "2")),
        "typed_fallbacks": call(style, "set_config", ("count", "three"), ("ratio", "1e999"),
                                ("enabled", "yes"), ("tags", "a, b"), ("meta", "{'k': 1}"),
                                ("note", "None"), ("level", "2.0"), ("extra", "7")),
        "no_args": call(style, "get_time"),
        "content_before": "Let me check the weather for you.\n" + paris,
        "content_after": paris + "\nI will report back shortly.",
        "unknown_tool": call(style, "get_stock", ("symbol", "ACME")),
        "spaced_name": f"<tool_call> get_weather {nl}<arg_key> city </arg_key>{nl}"
                       f"<arg_value> Paris </arg_value>{nl}</tool_call>",
        "no_value_close": f"<tool_call>get_weather{nl}<arg_key>city</arg_key>{nl}"
                          f"<arg_value>Paris{nl}<arg_key>unit</arg_key>{nl}<arg_value>c"
                          f"</arg_value>{nl}</tool_call>",
        "no_call_close": f"<tool_call>get_weather{nl}<arg_key>city</arg_key>{nl}"
                         "<arg_value>Paris</arg_value>",
        "truncated": f"<tool_call>get_weather{nl}<arg_key>city</arg_key>{nl}<arg_value>Par",
        "key_without_value": f"<tool_call>get_weather{nl}<arg_key>city</arg_key>{nl}</tool_call>",
        "tags_in_text": "Write <arg_key> and </arg_value> literally, then stop.",
        "partial_tag_text": "The answer is near. <tool_",
    }


THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
NOT_THINKING: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": False}}
THINKING: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": True}}


def Case(server: str, shape: str, output: str, stream: str,  # noqa: N802
         reasoning: bool = True, **fields: Any) -> list[_Case]:
    return both(_Case(server, shape, output, **{
        "eos": EOS[server], "kind": "reasoning" if reasoning else "tool_call", **fields}), stream)


def glm_cases(server: str) -> list[_Case]:
    out = outputs(server)
    # After the prompt GLM-4.5 writes its own <think>; GLM-4.7's prompt opened it already.
    open_ = "<think>" if server == G45 else ""
    lead = open_ + THOUGHT + "</think>" + ("\n" if server == G45 else "")
    cases: list[_Case] = []
    for shape, stream in (("single", "one"), ("parallel", "small"), ("typed", "one"),
                          ("typed_fallbacks", "small"), ("no_args", "one"),
                          ("content_before", "mixed"), ("content_after", "small"),
                          ("unknown_tool", "small"), ("spaced_name", "one"),
                          ("no_value_close", "one"), ("no_call_close", "small"),
                          ("key_without_value", "one"), ("tags_in_text", "one"),
                          ("partial_tag_text", "one")):
        cases += Case(server, shape, lead + out[shape], stream)
    cases += Case(server, "truncated", lead + out["truncated"], "one", eos=None)
    cases += Case(server, "tool_choice_none", lead + out["single"], "small", request=NONE)
    cases += Case(server, "required", lead + out["single"], "small", request=REQUIRED)
    cases += Case(server, "named", lead + out["single"], "mixed", request=NAMED_CHOICE)
    cases += Case(server, "no_tools", lead + out["single"], "small", tools=False)
    cases += Case(server, "reasoning_content", lead + PLAIN, "small")
    cases += Case(server, "reasoning_only", open_ + THOUGHT, "one", eos=None)
    cases += Case(server, "tool_ends_reasoning", open_ + THOUGHT + "\n" + out["single"], "one")
    cases += Case(server, "no_think_tags", PLAIN, "small")
    cases += Case(server, "thinking_off", PLAIN, "small", False, request=NOT_THINKING)
    cases += Case(server, "thinking_off_tool", out["single"], "one", False,
                  request=NOT_THINKING)
    cases += Case(server, "thinking_off_think_text", "<think>" + THOUGHT + "</think>" + PLAIN,
                  "one", False, request=NOT_THINKING)
    cases += Case(server, "thinking_on_kwarg", lead + PLAIN, "small", request=THINKING)
    cases += Case(server, "two_think_blocks", lead + "<think>again</think>" + PLAIN, "one")
    return cases


def cases() -> list[_Case]:
    return [*glm_cases(G45), *glm_cases(G47)]


FORMAT = Format(615, SERVERS, cases(), tools=TOOLS, user=USER)
