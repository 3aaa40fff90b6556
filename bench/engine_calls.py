"""Python function calls of one parser-engine chunk: decode + feed + encode of the state.

A measure of the engine's per-chunk work that does not depend on the machine's load (counted
by cProfile over 100 chunks): for DSML (``deepseek_v4``), GLM (``glm47``) and MiniMax M2, a
chunk ``" brass"`` in reasoning and one inside a string parameter's value. Used to compare two
versions of the sources side by side (docs/benchmarks.md section 11)::

    PYTHONPATH=$BEFORE/src python bench/engine_calls.py before
    PYTHONPATH=src python bench/engine_calls.py after
"""

from __future__ import annotations

import cProfile
import pstats
import sys

from derender.core.parsers import TOOL_FORMATS, engine
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer

TOOLS = ({"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "notes": {"type": "string"}}}}},)
CALLS = {
    "deepseek_v4": '</think>\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n'
                   '<｜DSML｜parameter name="notes" string="true">some notes ',
    "glm47": "</think><tool_call>get_weather<arg_key>notes</arg_key><arg_value>some notes ",
    "minimax_m2": '</think>\n\n<minimax:tool_call>\n<invoke name="get_weather">\n'
                  '<parameter name="notes">some notes ',
}


def calls_per_chunk(name: str, before: str) -> int:
    fmt, config = TOOL_FORMATS[name], engine.CONFIGS[name]
    context = ToolContext(tools=TOOLS)
    _, _, _, state = engine.feed(config, engine.start(fmt, True), before, False, context)
    w = Writer()
    engine.encode(state, w)
    payload = bytes(w.out)

    def chunk() -> None:
        decoded = fmt.decode(Reader(payload))
        _, _, _, after = engine.feed(config, decoded, " brass", False, context)
        engine.encode(after, Writer())

    chunk()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(100):
        chunk()
    profile.disable()
    return int(pstats.Stats(profile).total_calls) // 100  # type: ignore[attr-defined]


def main() -> None:
    label = sys.argv[1] if len(sys.argv) > 1 else ""
    for name, call in CALLS.items():
        print(label, name, "reasoning", calls_per_chunk(name, "some reasoning text " * 20),
              "value", calls_per_chunk(name, call))


if __name__ == "__main__":
    main()
