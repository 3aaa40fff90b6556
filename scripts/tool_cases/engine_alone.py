"""Engine formats served with one parser flag (cases 1300-…): the ``glm47`` and ``deepseek_v4``
tool parsers without a reasoning parser, and their reasoning parsers without a tool parser,
on ``glm-4.7-flash`` and ``deepseek-v4-native`` (what vLLM 0.33 does when a
family's one engine object serves only one side).

Usage (`scripts/peer-model-folders.sh glm-4.7-flash deepseek-v4-native` first):

    "$VLLM_PEER"/start.sh glm-4.7-flash 8931 --tool-call-parser glm47 --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh glm-4.7-flash 8932 --reasoning-parser glm47
    "$VLLM_PEER"/start.sh deepseek-v4-native 8933 --tool-call-parser deepseek_v4 \\
        --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh deepseek-v4-native 8934 --reasoning-parser deepseek_v4
    .venv/bin/python scripts/record_tool_fixtures.py engine_alone 8931 8932 8933 8934

Outputs as in ``glm.py`` (GLM-4.7 style) and ``deepseek_dsml.py`` (V4); every case is
recorded non-streaming and then streamed. A server without a tool parser refuses requests
with tools (``tool_choice`` "auto" needs one), so its cases have none.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.shared import TOOLS, USER, both

GLM_TOOLS, GLM_REASONING, V4_TOOLS, V4_REASONING = "glm_t", "glm_r", "v4_t", "v4_r"
EOS = {GLM_TOOLS: 154827, GLM_REASONING: 154827, V4_TOOLS: 1, V4_REASONING: 1}


def _server(model: str, parser: str, tools: bool) -> Server:
    if tools:
        flags = ["--tool-call-parser", parser, "--enable-auto-tool-choice"]
        label, slug = f"{parser} tool parser alone", f"{parser}-tools_alone"
        features: tuple[str, ...] = (f"parser:{parser}", "parser:alone")
    else:
        flags = ["--reasoning-parser", parser]
        label, slug = f"{parser} reasoning parser alone", f"{parser}-reasoning_alone"
        features = ("reasoning", f"reasoning_parser:{parser}", "reasoning_parser:alone")
    return Server(model, ["--served-model-name", model, *flags], label, slug, features,
                  ROOT / "tests" / "models" / model / "tokenizer.json")


SERVERS = {
    GLM_TOOLS: _server("glm-4.7-flash", "glm47", True),
    GLM_REASONING: _server("glm-4.7-flash", "glm47", False),
    V4_TOOLS: _server("deepseek-v4-native", "deepseek_v4", True),
    V4_REASONING: _server("deepseek-v4-native", "deepseek_v4", False),
}

THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
GLM_CALL = ("<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
            "<arg_key>unit</arg_key><arg_value>c</arg_value></tool_call>")
D = "｜DSML｜"
V4_CALL = (f'<{D}tool_calls>\n<{D}invoke name="get_weather">\n'
           f'<{D}parameter name="city" string="true">Paris</{D}parameter>\n'
           f'<{D}parameter name="unit" string="true">c</{D}parameter>\n'
           f"</{D}invoke>\n</{D}tool_calls>")


def Case(server: str, shape: str, output: str, stream: str, **fields: Any  # noqa: N802
         ) -> list[_Case]:
    kind = "reasoning" if server in (GLM_REASONING, V4_REASONING) else "tool_call"
    return both(_Case(server, shape, output, **{"eos": EOS[server], "kind": kind, **fields}),
                stream)


def server_cases(server: str) -> list[_Case]:
    glm = server in (GLM_TOOLS, GLM_REASONING)
    lead = THOUGHT + ("</think>" if glm else "</think>\n\n")
    call = GLM_CALL if glm else V4_CALL
    off: dict[str, Any] = {"chat_template_kwargs": (
        {"enable_thinking": False} if glm else {"thinking": False})}
    if server in (GLM_REASONING, V4_REASONING):
        # without a tool parser vLLM refuses "auto" tool choice: these requests have no tools
        return [
            *Case(server, "single", lead + call, "one", tools=False),
            *Case(server, "content_before", lead + "Let me check the weather for you.\n" + call,
                  "mixed", tools=False),
            *Case(server, "reasoning_content", lead + PLAIN, "small", tools=False),
            *Case(server, "thinking_off_tool", call, "one", tools=False, request=off),
        ]
    return [
        *Case(server, "single", lead + call, "one"),
        *Case(server, "content_before", lead + "Let me check the weather for you.\n" + call,
              "mixed"),
        *Case(server, "reasoning_content", lead + PLAIN, "small"),
        *Case(server, "no_tools", lead + call, "small", tools=False),
        *Case(server, "thinking_off_tool", call, "one", request=off),
    ]


def cases() -> list[_Case]:
    return [case for server in SERVERS for case in server_cases(server)]


FORMAT = Format(1300, SERVERS, cases(), tools=TOOLS, user=USER)
