"""DeepSeek DSML and the deepseek_v3 reasoning parser (cases 405-…): five servers.

- ``deepseek_v32`` tool parser on ``deepseek-v3.2`` (architecture DeepseekV32ForCausalLM, so
  vLLM renders prompts with its deepseek_v32 tokenizer mode), alone and with the
  ``deepseek_v3`` reasoning parser;
- ``deepseek_v4`` tool and reasoning parsers on ``deepseek-v4-native`` (DeepseekV4ForCausalLM);
- ``deepseek_v41`` tool and reasoning parsers on ``deepseek-v4.1-native``
  (DeepseekV41ForCausalLM, V4's vocabulary);
- ``deepseek_v31`` tool parser with the ``deepseek_v3`` reasoning parser on ``deepseek-v3.1``
  (DeepSeek-V3.1's chat template, which reads only ``thinking``).

Usage (`scripts/peer-model-folders.sh NAME...` first copies tests/models/NAME, tokenizer
unpacked, into the peer's models folder):

    "$VLLM_PEER"/start.sh deepseek-v3.2 8720 --tool-call-parser deepseek_v32 \\
        --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh deepseek-v3.2 8721 --tool-call-parser deepseek_v32 \\
        --reasoning-parser deepseek_v3 --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh deepseek-v4-native 8722 --tool-call-parser deepseek_v4 \\
        --reasoning-parser deepseek_v4 --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh deepseek-v4.1-native 8723 --tool-call-parser deepseek_v41 \\
        --reasoning-parser deepseek_v41 --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh deepseek-v3.1 8724 --tool-call-parser deepseek_v31 \\
        --reasoning-parser deepseek_v3 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py deepseek_dsml 8720 8721 8722 8723 8724

Outputs are plain text encoded with the tokenizer: ``｜DSML｜`` and ``<think>``/``</think>``
are added tokens and become their ids (``<｜DSML｜invoke name="`` is then several tokens),
followed by EOS 1 ``<｜end▁of▁sentence｜>`` (or none, finish "length"). Every case is recorded
non-streaming and streamed. The prompt is the server's own render of the request.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

EOS = 1
D = "｜DSML｜"
V32, V32_R, V4, V41, V31_R = "v32", "v32+v3", "v4", "v41", "v31+v3"


def _server(model: str, slug: str, tool: str, reasoning: str | None, label: str) -> Server:
    r = ["--reasoning-parser", reasoning] if reasoning else []
    features = (f"parser:{tool}",
                *(("reasoning", f"reasoning_parser:{reasoning}") if reasoning else ()))
    return Server(model, ["--served-model-name", model, "--tool-call-parser", tool, *r,
                          "--enable-auto-tool-choice"], label, slug, features,
                  ROOT / "tests" / "models" / model / "tokenizer.json")


SERVERS = {
    V32: _server("deepseek-v3.2", "deepseek_v32", "deepseek_v32", None,
                 "deepseek_v32 tool parser"),
    V32_R: _server("deepseek-v3.2", "deepseek_v32-r", "deepseek_v32", "deepseek_v3",
                   "deepseek_v32 tool parser with the deepseek_v3 reasoning parser"),
    V4: _server("deepseek-v4-native", "deepseek_v4", "deepseek_v4", "deepseek_v4",
                "deepseek_v4 tool and reasoning parsers"),
    V41: _server("deepseek-v4.1-native", "deepseek_v41", "deepseek_v41", "deepseek_v41",
                 "deepseek_v41 tool and reasoning parsers"),
    V31_R: _server("deepseek-v3.1", "deepseek_v31-v3r", "deepseek_v31", "deepseek_v3",
                   "deepseek_v31 tool parser with the deepseek_v3 reasoning parser"),
}


def param(name: str, value: str, string: str | None = "true", sp: str = "") -> str:
    attr = "" if string is None else f' string="{string}"'
    return f'<{D}{sp}parameter name="{name}"{attr}>{value}</{D}{sp}parameter>'


def invoke(name: str, *params: str, sp: str = "") -> str:
    body = "\n".join(params)
    return f'<{D}{sp}invoke name="{name}">\n{body}\n</{D}{sp}invoke>' if params else \
        f'<{D}{sp}invoke name="{name}">\n</{D}{sp}invoke>'


def block(wrapper: str, *invokes: str, sp: str = "") -> str:
    return f"<{D}{sp}{wrapper}>\n" + "\n".join(invokes) + f"\n</{D}{sp}{wrapper}>"


def _calls(wrapper: str, sp: str = "") -> dict[str, str]:
    """The outputs of one DSML dialect: its wrapper and its tag spelling."""
    def p(name: str, value: str, string: str | None = "true") -> str:
        return param(name, value, string, sp)

    def inv(name: str, *params: str) -> str:
        return invoke(name, *params, sp=sp)

    def blk(*invokes: str) -> str:
        return block(wrapper, *invokes, sp=sp)

    paris = inv("get_weather", p("city", "Paris"), p("unit", "c"))
    typed = inv("set_config", p("count", "3", "false"), p("ratio", "0.5", "false"),
                p("enabled", "true", "false"), p("tags", '["a", "b"]', "false"),
                p("meta", '{"k": 1, "nested": {"ok": true}}', "false"),
                p("note", "null", "false"), p("label", "42"), p("level", "2", "false"))
    return {
        "single": blk(paris),
        "parallel": blk(inv("get_weather", p("city", "Zürich")),
                        inv("get_weather", p("city", '東京 "Tokyo"\nline two'), p("unit", "f"))),
        "typed": blk(typed),
        # string="true" keeps the text as it is, "false" reads JSON or falls back to the text,
        # a missing attribute is read like "false"
        "string_flags": blk(inv("set_config", p("count", "3"), p("ratio", "1e999", "false"),
                                p("enabled", "yes", "false"), p("label", "{\"a\": 1}", "false"),
                                p("tags", '["x"]', None), p("note", "free text", None))),
        "no_args": blk(inv("get_time")),
        "content_before": "Let me check the weather for you.\n\n" + blk(paris),
        "content_after": blk(paris) + "\nI will report back shortly.",
        "unknown_tool": blk(inv("get_stock", p("symbol", "ACME"))),
        "wrapped_args": blk(inv("get_weather", p("arguments", '{"city": "Paris"}', "false"))),
        "truncated": f"<{D}{sp}{wrapper}>\n" + f'<{D}{sp}invoke name="get_weather">\n'
                     + f'<{D}{sp}parameter name="city" string="true">Par',
        "no_param_close": blk(inv("get_weather", f'<{D}{sp}parameter name="city" string="true">'
                                  f'Paris\n{p("unit", "c")}')),
        "no_invoke_close": (f"<{D}{sp}{wrapper}>\n" + f'<{D}{sp}invoke name="get_weather">\n'
                            + p("city", "Paris") + f"\n</{D}{sp}{wrapper}>"),
        "bare_invoke": inv("get_weather", p("city", "Paris")),
        "partial_tag_end": f"The answer is near. <{D}{sp}func",
        "lookalike": f"Use <{D}{sp} as a marker and <{D}{sp}invoke> too, then stop.",
    }


V32_CALLS = _calls("function_calls")
V4_CALLS = _calls("tool_calls")
V41_CALLS = _calls("calls", sp=" ")
PLAIN = "It is sunny in Paris, 22 °C."
THOUGHT = "The user wants Paris weather; call the tool."
THINKING: dict[str, Any] = {"chat_template_kwargs": {"thinking": True}}
NOT_THINKING: dict[str, Any] = {"chat_template_kwargs": {"thinking": False}}
ENABLE_THINKING: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": True}}


def Case(server: str, shape: str, output: str, stream: str,  # noqa: N802
         reasoning: bool = False, **fields: Any) -> list[_Case]:
    return both(_Case(server, shape, output, **{
        "eos": EOS, "kind": "reasoning" if reasoning else "tool_call", **fields}), stream)


def dsml_cases(server: str, calls: dict[str, str], thinking_server: bool) -> list[_Case]:
    """The tool-call shapes of one DSML dialect; on a V4/V4.1 server (thinking on by default)
    the outputs open after the prompt's ``<think>``, so they start with reasoning."""
    lead = THOUGHT + "</think>\n\n" if thinking_server else ""
    r = thinking_server
    out = []
    for shape, stream in (("single", "one"), ("parallel", "small"), ("typed", "one"),
                          ("string_flags", "small"), ("no_args", "one"),
                          ("content_before", "mixed"), ("content_after", "small"),
                          ("unknown_tool", "small"), ("wrapped_args", "one"),
                          ("no_param_close", "one"), ("no_invoke_close", "small"),
                          ("bare_invoke", "one"), ("partial_tag_end", "one"),
                          ("lookalike", "one")):
        out += Case(server, shape, lead + calls[shape], stream, r)
    out += Case(server, "truncated", lead + calls["truncated"], "one", r, eos=None)
    out += Case(server, "tool_choice_none", lead + calls["single"], "small", r, request=NONE)
    out += Case(server, "required", lead + calls["single"], "small", r, request=REQUIRED)
    out += Case(server, "named", lead + calls["single"], "mixed", r, request=NAMED_CHOICE)
    out += Case(server, "no_tools", lead + calls["single"], "small", r, tools=False)
    out += Case(server, "plain", lead + PLAIN, "small", r)
    return out


def v4_reasoning_cases(server: str, calls: dict[str, str], wrapper: str, sp: str) -> list[_Case]:
    """deepseek_v4/v41 reasoning: thinking is on unless the kwargs or reasoning_effort "none"
    turn it off."""
    return [
        *Case(server, "reasoning_only", THOUGHT, "small", True),
        *Case(server, "reasoning_only_length", THOUGHT, "one", True, eos=None),
        *Case(server, "think_in_output", "<think>" + THOUGHT + "</think>" + PLAIN, "one", True),
        *Case(server, "tool_in_reasoning", THOUGHT + "\n\n" + calls["single"], "one", True),
        *Case(server, "reasoning_then_text_then_tool",
              THOUGHT + "</think>Checking.\n\n" + calls["single"], "mixed", True),
        *Case(server, "thinking_off", PLAIN, "small", False, request=NOT_THINKING),
        *Case(server, "thinking_off_tool", calls["single"], "one", False, request=NOT_THINKING),
        *Case(server, "thinking_off_think_text", THOUGHT + "</think>" + PLAIN, "small", False,
              request=NOT_THINKING),
        *Case(server, "effort_none", PLAIN, "small", False, request={"reasoning_effort": "none"}),
        *Case(server, "enable_thinking", THOUGHT + "</think>" + PLAIN, "small", True,
              request=ENABLE_THINKING),
        *Case(server, "variant_wrapper", THOUGHT + "</think>\n\n"
              + calls["single"].replace(f"<{D}{sp}{wrapper}>", f"<{D}{sp}toolcalls>", 1),
              "one", True),
    ]


def v3_reasoning_cases(server: str, single: str) -> list[_Case]:
    """The deepseek_v3 reasoning parser: DeepSeek-R1's rules when the request's
    ``chat_template_kwargs`` turn thinking on (``thinking`` or ``enable_thinking``; a top-level
    ``reasoning_effort`` sets ``enable_thinking``), the text as content otherwise."""
    think = THOUGHT + "</think>" + PLAIN
    out: list[_Case] = []
    for shape, request, on in (("thinking_on", THINKING, True),
                               ("thinking_off", NOT_THINKING, False), ("no_kwargs", {}, False),
                               ("enable_thinking", ENABLE_THINKING, True),
                               ("effort_low", {"reasoning_effort": "low"}, True),
                               ("effort_none", {"reasoning_effort": "none"}, False)):
        out += Case(server, f"r_{shape}", think, "small", on, request=request)
    out += Case(server, "r_thinking_on_tool", THOUGHT + "</think>\n\n" + single, "one", True,
                request=THINKING)
    out += Case(server, "r_thinking_on_open_think", "<think>" + think, "one", True,
                request=THINKING)
    out += Case(server, "r_thinking_on_no_end", THOUGHT, "small", True, request=THINKING)
    out += Case(server, "r_thinking_off_tool", single, "small", False, request=NOT_THINKING)
    return out


B, E = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
C, F, S = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
V31_SINGLE = B + C + "get_weather" + S + '{"city": "Paris", "unit": "c"}' + F + E


def cases() -> list[_Case]:
    return [
        *dsml_cases(V32, V32_CALLS, False),
        *Case(V32, "v4_wrapper", V4_CALLS["single"], "one"),
        *v3_reasoning_cases(V32_R, V32_CALLS["single"]),
        *dsml_cases(V4, V4_CALLS, True),
        *v4_reasoning_cases(V4, V4_CALLS, "tool_calls", ""),
        *Case(V4, "v32_wrapper", THOUGHT + "</think>\n\n" + V32_CALLS["single"], "one", True),
        *dsml_cases(V41, V41_CALLS, True),
        *v4_reasoning_cases(V41, V41_CALLS, "calls", " "),
        *Case(V41, "v4_tags", THOUGHT + "</think>\n\n" + V4_CALLS["single"], "one", True),
        *v3_reasoning_cases(V31_R, V31_SINGLE),
    ]


FORMAT = Format(405, SERVERS, cases(), tools=TOOLS, user=USER)
