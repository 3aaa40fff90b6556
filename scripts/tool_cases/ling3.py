"""Ling 3 (issue 19, cases 4200-…): vLLM 0.33's ``ling3`` tool and reasoning parsers
(``vllm/parser/ling3.py``: GLM-4.7's engine config renamed, thinking on unless the template
kwargs set ``thinking``/``enable_thinking`` and neither is truthy; unlike ``glm47`` it never
reads the chat template for GLM-5.3's always-thinking switch).

Ling 3's own vocabulary is not available offline: the server runs on GLM-4.7-Flash's
vocabulary and chat template (a stand-in folder, ``i19glm-ling3``, a copy of
``tests/models/glm-4.7-flash`` served under that model's name, so the replay reads the same
tokenizer). The GLM tags are single tokens there; Ling 3's real ids are unverified.

Usage (``scripts/peer-model-folders.sh glm-4.7-flash``, then copy that folder to
``$PEER_HOME/models/i19glm-ling3``):

    "$VLLM_PEER"/start.sh i19glm-ling3 8280 --served-model-name glm-4.7-flash \\
        --tool-call-parser ling3 --reasoning-parser ling3 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py ling3 8280

The cases are ``glm.py``'s GLM-4.7 ones on this server, then the breadth of issue 19: 4-byte
characters, a long value, a call cut off in its name, ``"tools": []``, a multi-turn prompt,
``skip_special_tokens`` false, ``thinking`` (not ``enable_thinking``) off, parallel calls
under ``parallel_tool_calls`` false. Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from record_tool_fixtures import ROOT, Format, Server, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases.glm import G47, PLAIN, THOUGHT, call, glm_cases, outputs
from tool_cases.shared import TOOLS, USER, both

LING3 = "ling3"
MODEL = "glm-4.7-flash"
EOS = 154827

SERVER = Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", LING3,
                        "--reasoning-parser", LING3, "--enable-auto-tool-choice"],
                "ling3 tool and reasoning parsers (GLM-4.7-Flash vocabulary)", LING3,
                (f"parser:{LING3}", "reasoning", f"reasoning_parser:{LING3}"),
                ROOT / "tests" / "models" / MODEL / "tokenizer.json")
WIDE = "😀𝄞🀄"
"""4-byte characters."""
LONG = "lorem ipsum " * 120
MULTI_TURN: dict[str, Any] = {"messages": [
    {"role": "user", "content": USER},
    {"role": "assistant", "content": "", "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "22 °C, sunny"},
    {"role": "user", "content": "And in Zürich?"}]}


def Case(shape: str, output: str, stream: str, reasoning: bool = True,  # noqa: N802
         **fields: Any) -> list[_Case]:
    return both(_Case(LING3, shape, output, **{
        "eos": EOS, "kind": "reasoning" if reasoning else "tool_call", **fields}), stream)


def cases() -> list[_Case]:
    out: list[_Case] = [replace(c, server=LING3) for c in glm_cases(G47)]
    lead = THOUGHT + "</think>"
    single = outputs(G47)["single"]
    out += Case("wide_chars", lead + WIDE + " " + call(
        G47, "get_weather", ("city", WIDE + " Zürich")), "small")
    out += Case("long_value", lead + call(G47, "get_weather", ("city", LONG)), "mixed")
    out += Case("cut_in_name", lead + "<tool_call>get_wea", "small", eos=None)
    out += Case("empty_tools", lead + single, "small", tools=False, request={"tools": []})
    out += Case("multi_turn", lead + call(G47, "get_weather", ("city", "Zürich")), "small",
                request=MULTI_TURN)
    out += Case("keep_special", lead + PLAIN, "small", request={"skip_special_tokens": False})
    out += Case("keep_special_tool", lead + single, "small",
                request={"skip_special_tokens": False})
    out += Case("thinking_kwarg_off", PLAIN, "small", False,
                request={"chat_template_kwargs": {"thinking": False}})
    out += Case("serial_parallel", lead + outputs(G47)["parallel"], "small",
                request={"parallel_tool_calls": False})
    return out


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    """The server's render; ``"tools": []`` is refused by the render step (400): rendered
    without, the derender call then records vLLM's refusal."""
    if chat_request.get("tools") == []:
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(4200, {LING3: SERVER}, cases(), tools=TOOLS, user=USER, prompt=prompt)
