"""MiniMax's formats: ``minimax_m2`` on the parser engine, as vLLM 0.33 configures it
(``vllm/parser/minimax_m2.py``)::

    <think>…</think>                    (the prompt opens <think>: only </think> is generated)
    <minimax:tool_call>
    <invoke name="NAME">                (double, single or no quotes)
    <parameter name="KEY">VALUE</parameter>
    </invoke>
    </minimax:tool_call>

The output starts in reasoning (the prompt ends ``<think>\\n``); a generated ``<think>`` is
absorbed, ``</think>`` and ``<minimax:tool_call>`` end it, a later ``</think>`` is dropped. An
``<invoke>`` without the wrapper is a call; a name that is not one of the request's tools
drops the call; values are verbatim (a value also ends at the next ``<parameter name=``) and
typed by the tool's schema (``engine.DsmlArgs`` with M2's tag pattern). Content is stripped
when calls are returned, text after them dropped (see ``engine``).

With the ``minimax_m2_append_think`` reasoning parser (``reasoning.py``: no reasoning, the
content is ``"<think>" + output``) the tool parser reads that content: a ``</think>`` followed
by a returned call is dropped (``EngineConfig.held_end``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
    EngineState,
    make_format,
)

THINK_START, THINK_END = "<think>", "</think>"
M2_TOOL_START, M2_TOOL_END = "<minimax:tool_call>", "</minimax:tool_call>"

_M2_HEAD = re.compile(r"""\s*(?:"([^"]*)"|'([^']*)'|([^>\s]+))\s*>""", re.DOTALL)
"""A parameter tag after ``<parameter name=``: vLLM's ``_PARAM_RE`` name in double, single
or no quotes (the first group that matched is the name, stripped)."""


def _m2_name(text: str) -> str:
    """The name between ``<invoke name=`` and ``>``: stripped, its quotes removed (vLLM's
    ``NAME_END_DQ``/``NAME_END_SQ`` terminals)."""
    name = text.strip()
    for quote in ('"', "'"):
        if len(name) >= 2 and name[0] == quote and name[-1] == quote:
            return name[1:-1].strip()
    return name


def _m2_config() -> EngineConfig:
    terminals = {
        "THINK_START": (THINK_START,), "THINK_END": (THINK_END,),
        "TOOL_START": (M2_TOOL_START,), "TOOL_END": (M2_TOOL_END,),
        "INVOKE_PREFIX": ("<invoke name=",), "NAME_END": (">",),
        "INVOKE_END": ("</invoke>",),
    }
    calls = {
        (CONTENT, "TOOL_START"): (PREAMBLE, 0),
        (CONTENT, "INVOKE_PREFIX"): (NAME, START),
        (PREAMBLE, "INVOKE_PREFIX"): (NAME, START),
        (BETWEEN, "INVOKE_PREFIX"): (NAME, START),
        (NAME, "NAME_END"): (ARGS, NAMED),
        (ARGS, "INVOKE_END"): (BETWEEN, END),
        (PREAMBLE, "TOOL_END"): (CONTENT, 0),
        (BETWEEN, "TOOL_END"): (CONTENT, 0),
        (CONTENT, "TOOL_END"): (CONTENT, 0),
    }
    think = {
        (REASONING, "THINK_START"): (REASONING, 0),  # "some versions write both"
        (REASONING, "THINK_END"): (CONTENT, 0),
        (CONTENT, "THINK_END"): (CONTENT, 0),  # a later </think> is dropped
        (REASONING, "TOOL_START"): (PREAMBLE, 0),  # a block ends reasoning
    }
    return EngineConfig("minimax_m2", terminals, calls, think,
                        DsmlArgs("<parameter name=", "</parameter>", _M2_HEAD, verbatim=True,
                                 lookahead=False),
                        strip_content=True, validate_names=True, clean_name=_m2_name,
                        held_end="THINK_END")


M2_CONFIG = _m2_config()


@dataclass(frozen=True, slots=True)
class MinimaxM2State(EngineState):
    pass


M2 = make_format(M2_CONFIG, 55, MinimaxM2State)
"""Tags 55-59 (this module's range)."""


def m2_thinking(kwargs: dict[str, object]) -> bool:
    """``minimax_m2``: always thinking (the config starts in REASONING; no switch)."""
    return True
