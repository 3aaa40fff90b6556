"""Response-template parsers named alone (issue 20, cases 7930-…): vLLM 0.33's ``hf`` as the
tool parser only (the template's thinking is then content) and as the reasoning parser only
(a tool call's text is then content, delimiters included), on the checkpoints of
``response_template.py``.

Usage (the folders of ``response_template.py``):

    "$VLLM_PEER"/start.sh i20rt-json 8381 --served-model-name hf-json-standin \\
        --tool-call-parser hf --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh i20rt-xml 8382 --served-model-name hf-xml-standin \\
        --reasoning-parser hf
    .venv/bin/python scripts/record_tool_fixtures.py response_template_split 8381 8382
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import Case as _Case
from record_tool_fixtures import Format, Server, render_prompt
from tokenizers import Tokenizer

from tool_cases.response_template import (
    EOS,
    HF,
    J_PARIS,
    J_THINK,
    JSON,
    OFF,
    PLAIN,
    THOUGHT,
    X_PARIS,
    X_THINK,
    XML,
    jcall,
    server,
)
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both


def servers(name: str) -> dict[str, Server]:
    """The tool parser alone on the JSON checkpoint, the reasoning parser alone on the XML
    one, for the parser ``name``."""
    return {
        "tools": server(JSON, ["--tool-call-parser", name], f"{name} tool parser alone (JSON "
                        "calls template)", f"{name}-json-tools", (f"parser:{name}",)),
        "reasoning": server(XML, ["--reasoning-parser", name], f"{name} reasoning parser alone "
                            "(XML calls template)", f"{name}-xml-reasoning",
                            ("reasoning", f"reasoning_parser:{name}")),
    }


SERVERS = servers(HF)


def Case(srv: str, shape: str, output: str, stream: str, **fields: Any  # noqa: N802
         ) -> list[_Case]:
    kind = "tool_call" if srv == "tools" else "reasoning"
    return both(_Case(srv, shape, output, **{"eos": EOS, "kind": kind, **fields}), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    t, r = "tools", "reasoning"
    out += Case(t, "think_call", J_THINK + J_PARIS, "small")
    out += Case(t, "parallel", jcall("get_weather", {"city": "Zürich"}) + J_PARIS, "small")
    out += Case(t, "no_call", J_THINK + PLAIN, "small")
    out += Case(t, "cut_in_think", "<think>\n" + THOUGHT, "small", eos=None)
    out += Case(t, "tool_choice_none", J_THINK + J_PARIS, "small", request=NONE)
    out += Case(t, "no_tools", J_PARIS, "small", tools=False)
    out += Case(t, "thinking_off", PLAIN + "\n" + J_PARIS, "small", request=OFF)
    out += Case(r, "think_call", X_THINK + X_PARIS, "small")
    out += Case(r, "no_call", X_THINK + PLAIN, "small")
    out += Case(r, "cut_in_think", THOUGHT, "small", eos=None)
    out += Case(r, "cut_in_name", X_THINK + "<tool_call>\n<function=get_wea", "small", eos=None)
    out += Case(r, "thinking_off", PLAIN + "\n" + X_PARIS, "small", request=OFF)
    out += Case(r, "required", X_THINK + X_PARIS, "small", request=REQUIRED)
    out += Case(r, "named", X_THINK + X_PARIS, "small", request=NAMED_CHOICE)
    out += Case(r, "hide_reasoning", X_THINK + PLAIN, "small",
                request={"include_reasoning": False})
    return out


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    """The server's render of the request with ``tool_choice`` "none" (render refuses "auto"
    without a tool parser, and "required"/named/``parallel_tool_calls`` false with the
    template's; the chat template reads none of them), the tools kept; the derender call
    carries the request as written."""
    chat_request = {k: v for k, v in chat_request.items()
                    if k not in ("tool_choice", "parallel_tool_calls")}
    if chat_request.get("tools"):
        chat_request["tool_choice"] = "none"
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(7930, SERVERS, cases(), tools=TOOLS, user=USER, prompt=prompt)
