"""GLM-4.5 / GLM-4.7 on the parser engine: ``glm45`` = ``glm47`` (and ``ling3``, Ling 3's
copy of the GLM-4.7 parser), as vLLM 0.33 configures them (``vllm/parser/glm47_moe.py``,
``vllm/parser/ling3.py``)::

    <think>…</think><tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>…</tool_call>

All eight tags are single tokens (stand-ins here). Thinking (on unless the template kwargs
set ``thinking``/``enable_thinking`` and neither is truthy) starts the output in reasoning,
even where the prompt does not open ``<think>``; ``</think>`` and ``<tool_call>`` end it, a
later ``<think>`` re-enters it; with thinking off the think tags are plain text. A call's
name (stripped) runs to ``<arg_key>`` or ``</tool_call>``; a name that is not one of the
request's tools drops the call; keys are stripped, values verbatim and typed by the tool's
schema (``engine.GlmArgs``). Content is stripped when calls are returned, text after them
dropped (see ``engine`` for what a stream can do of that).
"""

from __future__ import annotations

from derender.core.parsers.engine import (
    ARGS,
    CONTENT,
    END,
    NAME,
    NAMED,
    REASONING,
    START,
    EngineConfig,
    GlmArgs,
    make_format,
)


def _config(name: str) -> EngineConfig:
    terminals = {
        "THINK_START": ("<think>",), "THINK_END": ("</think>",),
        "TOOL_START": ("<tool_call>",), "TOOL_END": ("</tool_call>",),
        "ARG_KEY_START": ("<arg_key>",),
    }
    calls = {
        (REASONING, "THINK_START"): (REASONING, 0),
        (REASONING, "TOOL_START"): (NAME, START),
        (CONTENT, "TOOL_START"): (NAME, START),
        (NAME, "ARG_KEY_START"): (ARGS, NAMED),
        (NAME, "TOOL_END"): (CONTENT, NAMED | END),
        (ARGS, "TOOL_END"): (CONTENT, END),
    }
    think = {
        (CONTENT, "THINK_START"): (REASONING, 0),
        (REASONING, "THINK_END"): (CONTENT, 0),
        (CONTENT, "THINK_END"): (CONTENT, 0),
    }
    return EngineConfig(name, terminals, calls, think, GlmArgs(), strip_content=True,
                        validate_names=True)


GLM45_CONFIG, GLM47_CONFIG = _config("glm45"), _config("glm47")
GLM45, GLM47 = make_format(GLM45_CONFIG), make_format(GLM47_CONFIG)
LING3_CONFIG = _config("ling3")
"""Ling 3 (``vllm/parser/ling3.py``): GLM-4.7's config renamed, the same thinking switch
(``thinking`` below; vLLM's ``Ling3Parser`` never reads the template for GLM-5.3's
always-thinking header, which derender reads for no format either)."""
LING3 = make_format(LING3_CONFIG)


def thinking(kwargs: dict[str, object]) -> bool:
    """``Glm47MoeParser``: on unless ``thinking`` or ``enable_thinking`` is set and neither is
    truthy."""
    if kwargs.get("thinking") is None and kwargs.get("enable_thinking") is None:
        return True
    return bool(kwargs.get("thinking")) or bool(kwargs.get("enable_thinking"))
