"""DeepSeek's DSML formats on the parser engine: ``deepseek_v32`` (DeepSeek V3.2),
``deepseek_v4`` (V4) and ``deepseek_v41`` (V4.1), as vLLM 0.33 configures them
(``vllm/parser/deepseek_v32.py``, ``deepseek_v4.py``, ``deepseek_v41.py``)::

    <｜DSML｜function_calls>           (V4: tool_calls; V4.1: "<｜DSML｜ calls>")
    <｜DSML｜invoke name="NAME">
    <｜DSML｜parameter name="KEY" string="true|false">VALUE</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>

``｜DSML｜`` is one token (a stand-in here), each tag several. One grammar, the differences as
data: the wrapper's spellings (V4 also ``<｜DSML｜toolcalls>`` and ``<｜DSML｜tool>``), V4.1's
space after ``｜DSML｜`` in every tag, and V4/V4.1's ``<think>…</think>`` reasoning in the
same machine (on unless the template kwargs turn it off). Text before the block is content
as written (whitespace alone dropped when a call follows), text after it is dropped; an
``invoke`` without the wrapper is a call; parameters typed by ``string`` and then by the
tool's schema (``engine.DsmlArgs``).
"""

from __future__ import annotations

from derender.core.parsers.engine import (
    ARGS,
    BETWEEN,
    CONTENT,
    END,
    NAME,
    NAMED,
    PREAMBLE,
    REASONING,
    START,
    DsmlArgs,
    EngineConfig,
    make_format,
)

DSML = "｜DSML｜"
THINK_START, THINK_END = "<think>", "</think>"

_CALLS = {
    (CONTENT, "TOOL_START"): (PREAMBLE, 0),
    (CONTENT, "INVOKE_PREFIX"): (NAME, START),
    (PREAMBLE, "INVOKE_PREFIX"): (NAME, START),
    (NAME, "INVOKE_NAME_END"): (ARGS, NAMED),
    (ARGS, "INVOKE_END"): (BETWEEN, END),
    (ARGS, "TOOL_END"): (BETWEEN, END),
    (BETWEEN, "INVOKE_PREFIX"): (NAME, START),
    (BETWEEN, "TOOL_END"): (BETWEEN, 0),  # a call ends the turn: text after it is dropped
    (BETWEEN, "TOOL_START"): (PREAMBLE, 0),
}
_THINK = {
    (CONTENT, "THINK_START"): (REASONING, 0),
    (CONTENT, "THINK_END"): (CONTENT, 0),  # a stray </think> is dropped
    (REASONING, "THINK_START"): (REASONING, 0),  # a repeated <think> is dropped
    (REASONING, "THINK_END"): (CONTENT, 0),
    (REASONING, "TOOL_START"): (PREAMBLE, 0),  # a block inside reasoning ends it
}


def _config(name: str, space: str, wrappers: tuple[str, ...], end: str, thinking: bool
            ) -> EngineConfig:
    tag = "<" + DSML + space
    terminals = {
        "TOOL_START": tuple(tag + w + ">" for w in wrappers),
        "TOOL_END": ("</" + DSML + space + end + ">",),
        "INVOKE_PREFIX": (tag + 'invoke name="',),
        "INVOKE_NAME_END": ('">',),
        "INVOKE_END": ("</" + DSML + space + "invoke>",),
        "THINK_START": (THINK_START,),
        "THINK_END": (THINK_END,),
    }
    return EngineConfig(name, terminals, _CALLS, _THINK if thinking else {},
                        DsmlArgs(tag + "parameter", "</" + DSML + space + "parameter>"),
                        think_always=thinking, unwrap=True)


V32_CONFIG = _config("deepseek_v32", "", ("function_calls",), "function_calls", False)
V4_CONFIG = _config("deepseek_v4", "", ("tool_calls", "toolcalls", "tool"), "tool_calls", True)
V41_CONFIG = _config("deepseek_v41", " ", ("calls",), "calls", True)

V32, V4, V41 = make_format(V32_CONFIG), make_format(V4_CONFIG), make_format(V41_CONFIG)
"""The formats (their records: ``registry.TOOL_RECORDS``)."""


def thinking(kwargs: dict[str, object]) -> bool:
    """V4/V4.1 (``DeepSeekV4Parser``): on unless the kwargs set ``thinking`` or
    ``enable_thinking`` and neither is truthy; off when their ``reasoning_effort`` is "none"."""
    on = bool(kwargs.get("thinking") or kwargs.get("enable_thinking"))
    if "thinking" not in kwargs and "enable_thinking" not in kwargs:
        on = True
    return on and kwargs.get("reasoning_effort") != "none"
