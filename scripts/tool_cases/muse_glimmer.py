"""Muse Glimmer (issue 20, cases 9300-…, branch glimmer): vLLM 0.33's ``muse_glimmer`` tool and
reasoning parsers (``vllm/tool_parsers/muse_glimmer_tool_parser.py``,
``vllm/reasoning/muse_glimmer_reasoning_parser.py``: the ``muse`` parsers with Glimmer's
profile: only ``to=self`` is reasoning, read by the older regular expressions, blocks joined
with ``"\\n"``; ``None``/``user`` recipients are the tool parser's content, every other one a
tool channel; every value JSON-decoded), recorded beyond 7520-7543 (``muse.py``): both
parsers, the tool parser alone and the reasoning parser alone, on ``muse-spark-standin``
(the outputs and helpers of ``muse.py``).

Usage (the peer folder is a copy of ``tests/models/muse-spark-standin`` once derived; the
recording used one named ``gg-muse``):

    "$VLLM_PEER"/start.sh gg-muse 8752 --served-model-name muse-spark-standin \\
        --tool-call-parser muse_glimmer --reasoning-parser muse_glimmer --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh gg-muse 8753 --served-model-name muse-spark-standin \\
        --tool-call-parser muse_glimmer --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh gg-muse 8754 --served-model-name muse-spark-standin \\
        --reasoning-parser muse_glimmer
    .venv/bin/python scripts/record_tool_fixtures.py muse_glimmer 8752 8753 8754

Every case is recorded non-streaming, then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.muse import (
    ANSWER,
    END_M,
    END_T,
    EOM,
    EOT,
    LONG,
    MODEL,
    MSG,
    PARIS,
    PLAIN,
    SELF,
    SINGLE,
    START,
    THOUGHT,
    UNICODE,
    W,
    _history,
    atem,
    call,
    first,
    invoke,
    msg,
)
from tool_cases.no_tools import prompt
from tool_cases.shared import NAMED_CHOICE, REQUIRED, TOOLS, USER, both

G, GT, GR = "glimmer", "glimmer-tool", "glimmer-reasoning"
TOKENIZER = ROOT / "tests" / "models" / MODEL / "tokenizer.json"
SERVERS = {
    G: Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", "muse_glimmer",
                      "--reasoning-parser", "muse_glimmer", "--enable-auto-tool-choice"],
              "muse_glimmer tool and reasoning parsers", "muse_glimmer",
              ("parser:muse_glimmer", "reasoning", "reasoning_parser:muse_glimmer"), TOKENIZER),
    GT: Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", "muse_glimmer",
                       "--enable-auto-tool-choice"],
               "muse_glimmer tool parser", "muse_glimmer-tool", ("parser:muse_glimmer",),
               TOKENIZER),
    GR: Server(MODEL, ["--served-model-name", MODEL, "--reasoning-parser", "muse_glimmer"],
               "muse_glimmer reasoning parser", "muse_glimmer-reasoning",
               ("reasoning", "reasoning_parser:muse_glimmer"), TOKENIZER),
}
CALL_OUT = SELF + SINGLE
TRUNC_ARGS = SELF + msg(W, '<atem:function_calls>\n<atem:invoke name="' + W
                        + '">\n<atem:parameter name="city">Par', "")
# (shape, output, eos, stream)
OUTPUTS: list[tuple[str, str, int | None, str]] = [
    ("parallel", SELF + call(W, PARIS, invoke(W, city="Zürich")), EOM, "mixed"),
    ("two_messages", SELF + call(W, PARIS, end=END_M) + call("get_time.get_time",
                                                             invoke("get_time.get_time")),
     EOM, "mixed"),
    ("bare_name", SELF + call("get_weather", invoke("get_weather", city="Paris")), EOM, "small"),
    ("unicode", SELF + call(W, UNICODE), EOM, "small"),
    ("long_value", SELF + call(W, invoke(W, city=LONG)), EOM, "mixed"),
    ("no_params", SELF + call("get_time.get_time", invoke("get_time.get_time")), EOM, "small"),
    ("content_after", SELF + call(W, PARIS, end=END_M) + ANSWER, None, "mixed"),
    ("no_reasoning", first(W, atem(PARIS)), EOM, "small"),
    ("two_answers", SELF + ANSWER + msg("user", "And more.", END_T), None, "small"),
    ("answer_unterminated", SELF + msg("user", PLAIN, "") + msg("self", "Late."), None,
     "small"),
    ("bare_with_call", f"{MSG}{THOUGHT}{END_M}" + SINGLE, EOM, "small"),
    ("commentary_call", SELF + call("commentary", PARIS), EOM, "small"),
    ("developer_call", SELF + msg("developer", "note") + SINGLE, EOM, "small"),
    ("commentary_answer", SELF + msg("commentary", "Let me check.") + ANSWER, None, "small"),
    ("text_before", "Hello. " + SELF + ANSWER, None, "small"),
    ("invoke_in_reasoning", first("self", "I could write " + atem(PARIS)) + ANSWER, None,
     "mixed"),
    ("invoke_in_answer", SELF + msg("user", "Example: " + atem(PARIS), END_T), None, "mixed"),
    ("unknown_tool", SELF + call("get_stock.get_stock",
                                 invoke("get_stock.get_stock", symbol="ACME")), EOM, "small"),
    ("no_wrapper", SELF + msg(W, PARIS), EOM, "small"),
    ("invoke_no_name", SELF + call(W, '<atem:invoke>\n<atem:parameter name="city">Paris'
                                   '</atem:parameter>\n</atem:invoke>\n'), EOM, "small"),
    ("param_unclosed", SELF + call(W, f'<atem:invoke name="{W}">\n<atem:parameter name="city">'
                                   'Paris\n</atem:invoke>\n'), EOM, "small"),
    ("reasoning_unterminated", first("self", THOUGHT, "") + SINGLE, EOM, "small"),
    ("reasoning_eot", first("self", THOUGHT, END_T) + ANSWER, None, "small"),
    ("newlines_between", SELF + "\n" + SINGLE, EOM, "small"),
    ("truncated_reasoning", first("self", THOUGHT, ""), None, "small"),
    ("truncated_name", SELF + msg(W, '<atem:function_calls>\n<atem:invoke name="get_we', ""),
     None, "small"),
    ("truncated_header", SELF + START + " to=get_wea", None, "one"),
    ("split_markers", CALL_OUT, EOM, "one"),
]


def Case(server: str, shape: str, output: str, eos: int | None, stream: str,  # noqa: N802
         **fields: Any) -> list[_Case]:
    kind = "tool_call" if server == GT else "reasoning"
    return both(_Case(server, shape, output, eos, kind=kind, **fields), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    for shape, output, eos, stream in OUTPUTS:
        out += Case(G, shape, output, eos, stream)
    out += Case(G, "required", CALL_OUT, EOM, "small", request=REQUIRED)
    out += Case(G, "named", CALL_OUT, EOM, "small", request=NAMED_CHOICE)
    out += Case(G, "empty_tools", CALL_OUT, EOM, "small", tools=False, request={"tools": []})
    out += Case(G, "history", CALL_OUT, EOM, "small", request={"messages": _history()})
    out += Case(G, "skip_special_true", CALL_OUT, EOM, "small",
                request={"skip_special_tokens": True})
    out += Case(G, "thinking_off", SELF + ANSWER, None, "small",
                request={"chat_template_kwargs": {"enable_thinking": False}})
    out += Case(G, "no_reasoning_field", SELF + ANSWER, None, "small",
                request={"include_reasoning": False})
    for shape, output, eos, stream in (
            ("single", CALL_OUT, EOM, "small"),
            ("reasoning_content", SELF + ANSWER, None, "small"),
            ("bare_recipient", f"{MSG}{THOUGHT}{END_M}" + ANSWER, None, "small"),
            ("commentary_call", SELF + call("commentary", PARIS), EOM, "small"),
            ("plain", PLAIN, EOT, "small"),
            ("truncated_args", TRUNC_ARGS, None, "small")):
        out += Case(GT, shape, output, eos, stream)
    for shape, output, eos, stream in (
            ("single", CALL_OUT, EOM, "small"),
            ("reasoning_content", SELF + ANSWER, None, "small"),
            ("reasoning_two_blocks", SELF + msg("self", "Second thought.") + ANSWER, None,
             "small"),
            ("plain", PLAIN, EOT, "small")):
        out += Case(GR, shape, output, eos, stream, tools=False)
    return out


FORMAT = Format(9300, SERVERS, cases(), tools=TOOLS, user=USER, prompt=prompt)
