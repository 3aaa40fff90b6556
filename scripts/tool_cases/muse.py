"""Muse Spark (cases 7400-…): the ``muse`` tool and reasoning parsers (vLLM 0.33's
``muse_tool_parser.py`` / ``muse_reasoning_parser.py``; ``musespark1x`` is their alias) on
``muse-spark-standin`` (GPT-2's vocabulary padded to 200,000 ids, then Muse's framing tokens
``<|start|>`` 200005, ``<|message|>`` 200006, ``<|eom|>`` 200007, ``<|eot|>`` 200008 as special
tokens; the first two ids unverified), both parsers and the tool parser alone.

Usage (the peer folder is a copy of ``tests/models/muse-spark-standin`` once derived):

    "$VLLM_PEER"/start.sh i20mu-muse 8371 --served-model-name muse-spark-standin \\
        --tool-call-parser muse --reasoning-parser muse --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh i20mu-muse 8372 --served-model-name muse-spark-standin \\
        --tool-call-parser muse --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh i20mu-muse 8373 --served-model-name muse-spark-standin \\
        --reasoning-parser muse
    .venv/bin/python scripts/record_tool_fixtures.py muse 8371 8372 8373

The prompt ends ``<|start|>assistant``; the output is channel messages ``" to=RECIPIENT
<|message|>BODY<|eom|>"`` (the first without ``<|start|>assistant``, later ones with it):
``self`` (or no recipient) is reasoning, ``user`` and ``commentary`` content, ``developer``
dropped, any other recipient a tool whose body is ATEM markup
``<atem:function_calls><atem:invoke name="…"><atem:parameter name="…">VALUE</atem:parameter>
</atem:invoke></atem:function_calls>``. A turn ending in a call stops on ``<|eom|>`` (200007),
one ending in an answer on ``<|eot|>`` (200008). Every case is recorded non-streaming, then
streamed.
"""

from __future__ import annotations

import json
from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.no_tools import prompt
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

MODEL = "muse-spark-standin"
EOM, EOT = 200007, 200008
M, MT = "muse", "muse-tool"


def _server(reasoning: bool) -> Server:
    r = ["--reasoning-parser", "muse"] if reasoning else []
    return Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", "muse", *r,
                          "--enable-auto-tool-choice"],
                  "muse tool and reasoning parsers" if reasoning else "muse tool parser",
                  "muse" if reasoning else "muse-tool",
                  ("parser:muse", *(("reasoning", "reasoning_parser:muse")
                                    if reasoning else ())),
                  ROOT / "tests" / "models" / MODEL / "tokenizer.json")


MR, MG = "muse-reasoning", "muse_glimmer"
SERVERS = {M: _server(True), MT: _server(False),
           MR: Server(MODEL, ["--served-model-name", MODEL, "--reasoning-parser", "muse"],
                      "muse reasoning parser", MR, ("reasoning", "reasoning_parser:muse"),
                      ROOT / "tests" / "models" / MODEL / "tokenizer.json"),
           MG: Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", "muse_glimmer",
                              "--reasoning-parser", "muse_glimmer", "--enable-auto-tool-choice"],
                      "muse_glimmer tool and reasoning parsers", "muse_glimmer",
                      ("parser:muse_glimmer", "reasoning", "reasoning_parser:muse_glimmer"),
                      ROOT / "tests" / "models" / MODEL / "tokenizer.json")}

START, MSG, END_M, END_T = "<|start|>assistant", "<|message|>", "<|eom|>", "<|eot|>"


def first(rcpt: str, body: str, end: str = END_M) -> str:
    """The turn's first message (the prompt already wrote ``<|start|>assistant``)."""
    return f" to={rcpt}{MSG}{body}{end}"


def msg(rcpt: str, body: str, end: str = END_M) -> str:
    return f"{START} to={rcpt}{MSG}{body}{end}"


def invoke(name: str, **params: str) -> str:
    return (f'<atem:invoke name="{name}">\n'
            + "".join(f'<atem:parameter name="{k}">{v}</atem:parameter>\n'
                      for k, v in params.items()) + "</atem:invoke>\n")


def atem(*invokes: str) -> str:
    return "<atem:function_calls>\n" + "".join(invokes) + "</atem:function_calls>"


def call(rcpt: str, *invokes: str, end: str = "") -> str:
    return msg(rcpt, atem(*invokes), end)


THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
SELF = first("self", THOUGHT)
W = "get_weather.get_weather"
PARIS = invoke(W, city="Paris", unit="c")
SINGLE = call(W, PARIS)
TYPED = invoke("set_config.set_config", count="3", ratio="0.5", enabled="true",
               tags='["a", "b"]', meta='{"k": 1}', note="null", label="42", level="2")
STRINGY = invoke("set_config.set_config", label='"quoted"', note="plain text",
                 count="three", meta="{not json", tags='"a"')
LONG = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 6
UNICODE = invoke(W, city='東京 "Tokyo" 😀\nline two & <b>')
ANSWER = msg("user", PLAIN, END_T)
# (shape, output, eos, stream)
OUTPUTS: list[tuple[str, str, int | None, str]] = [
    ("single", SELF + SINGLE, EOM, "small"),
    ("bare_name", SELF + call("get_weather", invoke("get_weather", city="Paris")), EOM,
     "mixed"),
    ("parallel", SELF + call(W, PARIS, invoke(W, city="Zürich")), EOM, "mixed"),
    ("two_messages", SELF + call(W, PARIS, end=END_M) + call("get_time.get_time",
                                                             invoke("get_time.get_time")),
     EOM, "mixed"),
    ("typed", SELF + call("set_config.set_config", TYPED), EOM, "mixed"),
    ("string_values", SELF + call("set_config.set_config", STRINGY), EOM, "mixed"),
    ("unicode", SELF + call(W, UNICODE), EOM, "small"),
    ("long_value", SELF + call(W, invoke(W, city=LONG)), EOM, "mixed"),
    ("no_params", SELF + call("get_time.get_time", invoke("get_time.get_time")), EOM, "small"),
    ("commentary_before", SELF + msg("commentary", "Let me check the weather.") + SINGLE,
     EOM, "mixed"),
    ("content_after", SELF + call(W, PARIS, end=END_M) + ANSWER, None, "mixed"),
    ("no_reasoning", first(W, atem(PARIS)), EOM, "small"),
    ("reasoning_content", SELF + ANSWER, None, "small"),
    ("reasoning_two_blocks", SELF + msg("self", "Second thought.") + ANSWER, None, "mixed"),
    ("plain", PLAIN, EOT, "small"),
    ("bare_recipient", f"{MSG}{THOUGHT}{END_M}" + ANSWER, None, "small"),
    ("developer", SELF + msg("developer", "internal note") + ANSWER, None, "mixed"),
    ("invoke_in_reasoning", first("self", "I could write " + atem(PARIS)) + ANSWER, None,
     "mixed"),
    ("invoke_in_answer", SELF + msg("user", "Example: " + atem(PARIS), END_T), None, "mixed"),
    ("unknown_tool", SELF + call("get_stock.get_stock",
                                 invoke("get_stock.get_stock", symbol="ACME")), EOM, "small"),
    ("no_wrapper", SELF + msg(W, PARIS), EOM, "small"),
    ("invoke_no_name", SELF + call(W, '<atem:invoke>\n<atem:parameter name="city">Paris'
                                   '</atem:parameter>\n</atem:invoke>\n'), EOM, "small"),
    ("invoke_unclosed", SELF + msg(W, '<atem:function_calls>\n<atem:invoke name="' + W
                                   + '">\n<atem:parameter name="city">Paris'
                                   '</atem:parameter>\n</atem:function_calls>'), EOM, "small"),
    ("param_unclosed", SELF + call(W, f'<atem:invoke name="{W}">\n<atem:parameter name="city">'
                                   'Paris\n</atem:invoke>\n'), EOM, "small"),
    ("reasoning_unterminated", first("self", THOUGHT, "") + SINGLE, EOM, "small"),
    ("newlines_between", SELF + "\n" + SINGLE, EOM, "small"),
    ("eom_in_text", SELF + SINGLE + END_M, EOT, "small"),
    ("eot_ends_call", SELF + SINGLE, EOT, "small"),
    ("truncated_reasoning", first("self", THOUGHT, ""), None, "small"),
    ("truncated_name", SELF + msg(W, '<atem:function_calls>\n<atem:invoke name="get_we', ""),
     None, "small"),
    ("truncated_args", SELF + msg(W, '<atem:function_calls>\n<atem:invoke name="' + W
                                  + '">\n<atem:parameter name="city">Par', ""), None, "small"),
    ("truncated_header", SELF + START + " to=get_wea", None, "one"),
    ("split_markers", SELF + SINGLE, EOM, "one"),
]


def _history() -> list[dict[str, Any]]:
    return [{"role": "user", "content": USER},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {
                    "name": "get_weather", "arguments": json.dumps({"city": "Rome"})}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "user", "content": "And in Paris?"}]


def Case(server: str, shape: str, output: str, eos: int | None, stream: str,  # noqa: N802
         **fields: Any) -> list[_Case]:
    kind = "tool_call" if server == MT else "reasoning"
    return both(_Case(server, shape, output, eos, kind=kind, **fields), stream)


def muse_cases() -> list[_Case]:
    cases: list[_Case] = []
    for shape, output, eos, stream in OUTPUTS:
        cases += Case(M, shape, output, eos, stream)
    call_out = SELF + SINGLE
    cases += Case(M, "tool_choice_none", call_out, EOM, "small", request=NONE)
    cases += Case(M, "required", call_out, EOM, "small", request=REQUIRED)
    cases += Case(M, "named", call_out, EOM, "mixed", request=NAMED_CHOICE)
    cases += Case(M, "no_tools", call_out, EOM, "small", tools=False)
    cases += Case(M, "no_tools_answer", SELF + ANSWER, None, "small", tools=False)
    cases += Case(M, "empty_tools", call_out, EOM, "small", tools=False, request={"tools": []})
    cases += Case(M, "history", call_out, EOM, "small", request={"messages": _history()})
    cases += Case(M, "skip_special_true", call_out, EOM, "small",
                  request={"skip_special_tokens": True})
    cases += Case(M, "skip_special_false", SELF + ANSWER, None, "small",
                  request={"skip_special_tokens": False})
    cases += Case(M, "thinking_off", SELF + ANSWER, None, "small",
                  request={"chat_template_kwargs": {"enable_thinking": False}})
    cases += Case(M, "thinking_on", call_out, EOM, "small",
                  request={"chat_template_kwargs": {"enable_thinking": True}})
    cases += Case(M, "no_reasoning_field", SELF + ANSWER, None, "small",
                  request={"include_reasoning": False})
    # the tool parser alone reads every channel itself
    for shape, output, eos, stream in (
            ("single", call_out, EOM, "small"),
            ("commentary_before", SELF + msg("commentary", "Let me check.") + SINGLE, EOM,
             "mixed"),
            ("reasoning_content", SELF + ANSWER, None, "small"),
            ("plain", PLAIN, EOT, "small"),
            ("content_after", SELF + call(W, PARIS, end=END_M) + ANSWER, None, "mixed"),
            ("invoke_in_reasoning", first("self", "I could write " + atem(PARIS)) + ANSWER,
             None, "mixed"),
            ("truncated_args", SELF + msg(W, '<atem:function_calls>\n<atem:invoke name="' + W
                                          + '">\n<atem:parameter name="city">Par', ""), None,
             "small")):
        cases += Case(MT, shape, output, eos, stream)
    cases += Case(MT, "tool_choice_none", call_out, EOM, "small", request=NONE)
    cases += Case(MT, "no_tools", call_out, EOM, "small", tools=False)
    cases += Case(MT, "required", call_out, EOM, "small", request=REQUIRED)
    # the reasoning parser alone (7510-): nothing is called; a tool message with ATEM markup
    # makes the content the framed messages
    for shape, output, eos, stream in (
            ("single", call_out, EOM, "small"),
            ("commentary_before", SELF + msg("commentary", "Let me check.") + SINGLE, EOM,
             "mixed"),
            ("reasoning_content", SELF + ANSWER, None, "small"),
            ("plain", PLAIN, EOT, "small"),
            ("developer_and_call", SELF + msg("developer", "note") + SINGLE, EOM, "small")):
        cases += Case(MR, shape, output, eos, stream, tools=False)
    # muse_glimmer, both parsers (7520-): other recipients, every value JSON-decoded, the
    # reasoning read by vLLM's older regexes (recorded ahead of its implementation)
    for shape, output, eos, stream in (
            ("single", call_out, EOM, "small"),
            ("typed", SELF + call("set_config.set_config", TYPED), EOM, "small"),
            ("string_values", SELF + call("set_config.set_config", STRINGY), EOM, "small"),
            ("commentary_before", SELF + msg("commentary", "Let me check.") + SINGLE, EOM,
             "mixed"),
            ("reasoning_content", SELF + ANSWER, None, "small"),
            ("reasoning_two_blocks", SELF + msg("self", "Second thought.") + ANSWER, None,
             "small"),
            ("plain", PLAIN, EOT, "small"),
            ("bare_recipient", f"{MSG}{THOUGHT}{END_M}" + ANSWER, None, "small"),
            ("developer", SELF + msg("developer", "internal note") + ANSWER, None, "small"),
            ("truncated_args", SELF + msg(W, '<atem:function_calls>\n<atem:invoke name="' + W
                                          + '">\n<atem:parameter name="city">Par', ""), None,
             "small")):
        cases += Case(MG, shape, output, eos, stream)
    cases += Case(MG, "tool_choice_none", call_out, EOM, "small", request=NONE)
    cases += Case(MG, "no_tools", call_out, EOM, "small", tools=False)
    return cases


FORMAT = Format(7400, SERVERS, muse_cases(), tools=TOOLS, user=USER, prompt=prompt)
