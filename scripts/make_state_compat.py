"""Write ``tests/fixtures/state-compat.json``: stream-state payloads of every tool-call format,
the reasoning machine and Harmony, encoded by the code *before* formats became registry
records (commit 609459c), so ``tests/test_format_registry.py`` can check that states issued
before that change still decode to the same state and encode to the same bytes.

Run it against that commit (it uses the API of then: ``parsers.TOOL_FORMATS``,
``vocab.MARKUP``), from a checkout of it::

    git worktree add --detach /tmp/base 609459c
    cd /tmp/base && PYTHONPATH=src python /path/to/scripts/make_state_compat.py OUT.json

Each entry: the format's parser name, its tag, the payload (hex), the tool state's fields, the
reasoning state's fields and the held texts with their stand-ins restored. Text is fed with
every marker spelled as its stand-in (U+E000 + its index then), so the held texts pin the
stand-ins.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

from derender.core import parsers
from derender.core.decoding.vocab import MARKUP, RESTORE_MARKUP, STAND_IN
from derender.core.parsers import engine, reasoning
from derender.core.parsers.formats import harmony
from derender.core.parsers.tools import ToolContext
from derender.core.state.stream import StreamState, encode_state

SPELL = {marker: chr(STAND_IN + i) for i, marker in enumerate(MARKUP)}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}}}]
DS_BEGIN, DS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
DS_CALL, DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>"
KIMI = "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>"
M3 = "]<]minimax[>["
TEXTS = {
    "hermes": ['Hi <tool_call>\n{"name": "f", "arguments": {"a": 1, "b": "x', "y</tool"],
    "llama3_json": ['<|python_tag|>{"name": "f", "parameters": {"b": "hel', "lo"],
    "pythonic": ["[f(a=1, b='hel", "lo"],
    "deepseek_v3": [DS_BEGIN + DS_CALL + "function" + DS_SEP + 'f\n```json\n{"a": ', "1"],
    "deepseek_v31": [DS_BEGIN + DS_CALL + "f" + DS_SEP + '{"a": ', "1, <｜tool"],
    "kimi_k2": ["Sure. " + KIMI + '{"b": "', "hel"],
    "mistral": ['[TOOL_CALLS]f[ARGS]{"b": "hel', "lo"],
    "qwen3_coder": ["Ok <tool_call>\n<function=f>\n<parameter=a>\n1", "2</param"],
    "mimo": ["<tool_call>\n<function=f>\n<parameter=b>\nhel", "lo"],
    "seed_oss": ["<seed:tool_call>\n<function=f>\n<parameter=a>\n1", "2"],
    "gemma4": ['<|tool_call>call:f{b:<|"|>hel', "lo"],
    "deepseek_v32": ['<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">\n'
                     '<｜DSML｜parameter name="b" string="true">hel', "lo"],
    "deepseek_v4": ["reasoning</think>" '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="f">\n'
                    '<｜DSML｜parameter name="a" string="false">1', "2"],
    "deepseek_v41": ['<｜DSML｜ calls>\n<｜DSML｜ invoke name="f">\n'
                     '<｜DSML｜ parameter name="b" string="true">hel', "lo </｜DSML｜ par"],
    "glm45": ["<tool_call>f<arg_key>a</arg_key><arg_value>1", "2"],
    "glm47": ["thought  </think>Hi \n<tool_call>f<arg_key>b</arg_key><arg_value>x", "y"],
    "minimax_m2": ['think</think>\n<minimax:tool_call>\n<invoke name="f">\n<parameter name="b">he',
                   "llo"],
    "minimax_m3": [M3 + "<tool_call>" + M3 + '<invoke name="f">' + M3 + "<b>hel", "lo"],
}
ENGINE_THINKING = {"deepseek_v4": True, "glm47": True, "minimax_m2": True}
REASONING = {  # reasoning format, text fed, thinking
    "qwen3": ("qwen3", ["Let me think", " about it\n<|im_"], True),
    "kimi_k2": ("kimi_k2", ["thinking  ", "   "], True),
    "minimax_m3": ("minimax_m3", ["before <mm:think>inside", "</mm:th"], False),
    "nemotron_v3": ("nemotron_v3", ["reasoned", "  "], True),
}


def fields(state: Any) -> Any:
    return None if state is None else dataclasses.asdict(state)


def restored(text: str) -> str:
    return text.translate(RESTORE_MARKUP)


def spelled(text: str) -> str:
    for marker in MARKUP:
        text = text.replace(marker, SPELL[marker])
    return text


def main() -> None:
    out: list[dict[str, Any]] = []
    context = ToolContext(spell=SPELL, tools=TOOLS)
    for name, pieces in TEXTS.items():
        fmt = parsers.TOOL_FORMATS[name]
        if name in parsers.ENGINE_FORMATS:
            mode = engine.BOTH if name in ENGINE_THINKING else engine.TOOLS
            state: Any = engine.start(fmt, ENGINE_THINKING.get(name, False), mode)
        else:
            state = fmt.start()
        for piece in pieces:
            if name in parsers.ENGINE_FORMATS:
                _, _, _, state = engine.feed(engine.CONFIGS[name], state, spelled(piece), False,
                                             context)
            else:
                _, _, state = fmt.feed(state, spelled(piece), False, context)
        parser = parsers.ParserState(None, state, calls_kept=True)
        payload = encode_state(StreamState(b"\x01" * 8, 1_700_000_000, 0, True, parser=parser))
        out.append({"kind": "tools", "name": name, "tag": fmt.tag, "payload": payload.hex(),
                    "tools": fields(state), "type": type(state).__name__})
    for name, (fmt_name, pieces, thinking) in REASONING.items():
        rfmt = reasoning.FORMATS[fmt_name]
        rstate = reasoning.ReasoningState(not rfmt.starts_in_content and thinking,
                                          swap=rfmt.swaps)
        for piece in pieces:
            _, rstate = reasoning.feed(rfmt, rstate, spelled(piece), False, SPELL)
        hermes = parsers.TOOL_FORMATS["hermes"]
        tools = hermes.feed(hermes.start(), spelled("<tool_call>"), False, context)[2]
        parser = parsers.ParserState(rstate, tools)
        payload = encode_state(StreamState(b"\x02" * 8, 1_700_000_001, None, False,
                                           parser=parser))
        out.append({"kind": "reasoning", "name": name, "tag": hermes.tag,
                    "payload": payload.hex(), "reasoning": fields(rstate),
                    "held": restored(rstate.held), "tools": fields(tools)})
    machine = harmony.HarmonyState()
    payload = encode_state(StreamState(b"\x03" * 8, 1_700_000_002, 1, True,
                                       parser=parsers.ParserState(None, None, True, machine)))
    out.append({"kind": "harmony", "name": "openai", "tag": None, "payload": payload.hex(),
                "harmony": repr(machine)})
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump({"commit": "609459c", "markup": list(MARKUP), "states": out}, f,
                  ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
