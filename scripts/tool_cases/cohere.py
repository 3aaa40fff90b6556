"""Cohere Command A / Command 4 (cases 9600-…): vLLM 0.33's ``cohere_command3`` and
``cohere_command4`` tool and reasoning parsers (``vllm/parser/cohere_command.py``, which reads
the output with the ``cohere_melody`` package's ``cmd3`` / ``cmd4`` filters) on
``cohere-standin`` (GPT-2's vocabulary laid out as Cohere's, Cohere's special tokens at their
ids, most unverified: ``tests/models/README.md``), both parsers, and for ``cmd4`` each alone.

Usage (the peer folder ``coh-standin`` is a copy of ``tests/models/cohere-standin`` once
derived; vLLM renders the prompt with melody, ``--tokenizer-mode cohere``):

    "$VLLM_PEER"/start.sh coh-standin 8770 --served-model-name cohere-standin \\
        --tokenizer-mode cohere --cohere-format cmd3 --tool-call-parser cohere_command3 \\
        --reasoning-parser cohere_command3 --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh coh-standin 8771 --served-model-name cohere-standin \\
        --tokenizer-mode cohere --cohere-format cmd4 --tool-call-parser cohere_command4 \\
        --reasoning-parser cohere_command4 --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh coh-standin 8772 --served-model-name cohere-standin \\
        --tokenizer-mode cohere --cohere-format cmd4 --tool-call-parser cohere_command4 \\
        --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh coh-standin 8773 --served-model-name cohere-standin \\
        --tokenizer-mode cohere --cohere-format cmd4 --reasoning-parser cohere_command4
    .venv/bin/python scripts/record_tool_fixtures.py cohere 8770 8771 8772 8773

The output is sections between Cohere's special tokens: ``<|START_THINKING|>…<|END_THINKING|>``
reasoning, ``<|START_RESPONSE|>…<|END_RESPONSE|>`` (and for cmd4 ``<|START_TEXT|>…``) the
answer, ``<|START_ACTION|>[{"tool_call_id": "0", "tool_name": …, "parameters": {…}}, …]
<|END_ACTION|>`` the calls; the turn ends on ``<|END_OF_TURN_TOKEN|>`` (255001).
"""

from __future__ import annotations

import json
from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.no_tools import prompt
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

MODEL = "cohere-standin"
EOT = 255001
TOK = ROOT / "tests" / "models" / MODEL / "tokenizer.json"
C3, C4, C4T, C4R = "cmd3", "cmd4", "cmd4-tool", "cmd4-reasoning"


def _server(version: str, tools: bool, reasoning: bool) -> Server:
    name = f"cohere_command{version[-1]}"
    flags = ["--served-model-name", MODEL, "--tokenizer-mode", "cohere", "--cohere-format",
             version]
    features: tuple[str, ...] = ()
    label = []
    if tools:
        flags += ["--tool-call-parser", name]
        features += (f"parser:{name}",)
        label.append(f"{name} tool parser")
    if reasoning:
        flags += ["--reasoning-parser", name]
        features += ("reasoning", f"reasoning_parser:{name}")
        label.append(f"{name} reasoning parser")
    if tools:
        flags.append("--enable-auto-tool-choice")
    slug = f"cohere-{version}" + ("" if tools and reasoning else "-tool" if tools
                                   else "-reasoning")
    return Server(MODEL, flags, " and ".join(label), slug, features, TOK)


SERVERS = {C3: _server("cmd3", True, True), C4: _server("cmd4", True, True),
           C4T: _server("cmd4", True, False), C4R: _server("cmd4", False, True)}

T, ET = "<|START_THINKING|>", "<|END_THINKING|>"
R, ER = "<|START_RESPONSE|>", "<|END_RESPONSE|>"
A, EA = "<|START_ACTION|>", "<|END_ACTION|>"
TX, ETX = "<|START_TEXT|>", "<|END_TEXT|>"


def call(index: int, name: str, params: Any) -> str:
    return json.dumps({"tool_call_id": str(index), "tool_name": name, "parameters": params},
                      ensure_ascii=False)


def action(*calls: str, end: str = EA) -> str:
    return A + "[\n    " + ",\n    ".join(calls) + "\n]" + end


def think(text: str) -> str:
    return T + text + ET


def answer(text: str) -> str:
    return R + text + ER


THOUGHT = "The user wants Paris weather; I will call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
PARIS = call(0, "get_weather", {"city": "Paris", "unit": "c"})
SINGLE = think(THOUGHT) + action(PARIS)
TYPED = call(0, "set_config", {"count": 3, "ratio": 0.5, "enabled": True, "tags": ["a", "b"],
                               "meta": {"k": 1}, "note": None, "label": "42", "level": 2})
LONG = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 6
UNICODE = call(0, "get_weather", {"city": '東京 "Tokyo" 😀\nline two & <b>'})
# (shape, output, eos, stream)
OUTPUTS: list[tuple[str, str, int | None, str]] = [
    ("single", SINGLE, EOT, "small"),
    ("parallel", think(THOUGHT) + action(PARIS, call(1, "get_weather", {"city": "Zürich"})),
     EOT, "mixed"),
    ("typed", think(THOUGHT) + action(TYPED), EOT, "mixed"),
    ("unicode", think(THOUGHT) + action(UNICODE), EOT, "small"),
    ("long_value", think(THOUGHT) + action(call(0, "get_weather", {"city": LONG})), EOT,
     "mixed"),
    ("no_params", think(THOUGHT) + action(call(0, "get_time", {})), EOT, "small"),
    ("compact_json", think(THOUGHT) + A + '[{"tool_call_id":"0","tool_name":"get_weather",'
     '"parameters":{ "city" :  "Paris","unit":"c"}}]' + EA, EOT, "mixed"),
    ("no_reasoning", action(PARIS), EOT, "small"),
    ("reasoning_content", think(THOUGHT) + answer(PLAIN), EOT, "small"),
    ("response_only", answer(PLAIN), EOT, "small"),
    ("plain", PLAIN, EOT, "small"),
    ("text_before_action", "Let me check. " + action(PARIS), EOT, "small"),
    ("response_before_action", think(THOUGHT) + answer("Let me check.") + action(PARIS), EOT,
     "mixed"),
    ("content_after", think(THOUGHT) + action(PARIS) + answer(PLAIN), EOT, "mixed"),
    ("two_actions", think(THOUGHT) + action(PARIS) + action(call(1, "get_time", {})), EOT,
     "mixed"),
    ("whitespace", T + "\n " + THOUGHT + " \n" + ET + "\n" + R + "\n" + PLAIN + "\n" + ER,
     EOT, "small"),
    ("citations", think("I saw <co>rain</co: 1:[0]> in the notes.")
     + answer("It is <co>sunny</co: 0:[0,1]> today, <co: 0:[2]>22 °C</co: 0:[2]>."), EOT,
     "mixed"),
    ("angle_text", answer("a < b and <b>bold</b> <co"), EOT, "small"),
    ("start_text", think(THOUGHT) + TX + PLAIN + ETX, EOT, "small"),
    ("text_after_response", answer(PLAIN) + " trailing", EOT, "small"),
    ("action_in_reasoning", T + "I could " + action(PARIS) + ET + answer(PLAIN), EOT,
     "small"),
    ("key_order", think(THOUGHT) + A + '[{"tool_name": "get_weather", "parameters": '
     '{"city": "Paris"}, "tool_call_id": "0"}]' + EA, EOT, "small"),
    ("no_call_id", think(THOUGHT) + A + '[{"tool_name": "get_weather", "parameters": '
     '{"city": "Paris"}}]' + EA, EOT, "small"),
    ("params_not_object", think(THOUGHT) + A + '[{"tool_call_id": "0", "tool_name": '
     '"get_weather", "parameters": "Paris"}]' + EA, EOT, "small"),
    ("malformed", think(THOUGHT) + A + '[{"tool_call_id": "0", "tool_name": "get_weather", '
     '"parameters": {"city": }]' + EA, EOT, "small"),
    ("not_a_list", think(THOUGHT) + A + PARIS + EA, EOT, "small"),
    ("empty_list", think(THOUGHT) + A + "[]" + EA, EOT, "small"),
    ("unknown_tool", think(THOUGHT) + action(call(0, "get_stock", {"symbol": "ACME"})), EOT,
     "small"),
    ("action_unterminated", think(THOUGHT) + action(PARIS, end=""), EOT, "small"),
    ("truncated_reasoning", T + THOUGHT, None, "small"),
    ("truncated_response", think(THOUGHT) + R + PLAIN, None, "small"),
    ("truncated_name", think(THOUGHT) + A + '[\n    {"tool_call_id": "0", "tool_name": "get_we',
     None, "small"),
    ("truncated_args", think(THOUGHT) + A + '[\n    {"tool_call_id": "0", "tool_name": '
     '"get_weather", "parameters": {"city": "Par', None, "small"),
    ("split_markers", SINGLE, EOT, "one"),
]


CMD4_ONLY = frozenset({"typed", "long_value", "no_params", "split_markers"})
"""Shapes recorded with cmd4 only (its filter reads calls as cmd3's does)."""


def _history() -> list[dict[str, Any]]:
    return [{"role": "user", "content": USER},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "0", "type": "function", "function": {
                    "name": "get_weather", "arguments": json.dumps({"city": "Rome"})}}]},
            {"role": "tool", "tool_call_id": "0", "content": "sunny"},
            {"role": "user", "content": "And in Paris?"}]


def Case(server: str, shape: str, output: str, eos: int | None, stream: str,  # noqa: N802
         **fields: Any) -> list[_Case]:
    kind = "tool_call" if server == C4T else "reasoning"
    return both(_Case(server, shape, output, eos, kind=kind, **fields), stream)


def cohere_cases() -> list[_Case]:
    cases: list[_Case] = []
    for server in (C3, C4):
        for shape, output, eos, stream in OUTPUTS:
            if server == C3 and shape in CMD4_ONLY:
                continue
            cases += Case(server, shape, output, eos, stream)
        answered = think(THOUGHT) + answer(PLAIN)
        cases += Case(server, "tool_choice_none", SINGLE, EOT, "small", request=NONE)
        cases += Case(server, "required", SINGLE, EOT, "small", request=REQUIRED)
        cases += Case(server, "named", SINGLE, EOT, "mixed", request=NAMED_CHOICE)
        cases += Case(server, "no_tools", SINGLE, EOT, "small", tools=False)
        cases += Case(server, "no_tools_answer", answered, EOT, "small", tools=False)
        cases += Case(server, "empty_tools", SINGLE, EOT, "small", tools=False,
                      request={"tools": []})
        cases += Case(server, "history", SINGLE, EOT, "small",
                      request={"messages": _history()})
        cases += Case(server, "skip_special_true", SINGLE, EOT, "small",
                      request={"skip_special_tokens": True})
        cases += Case(server, "skip_special_false", answered, EOT, "small",
                      request={"skip_special_tokens": False})
        cases += Case(server, "thinking_off", answer(PLAIN), EOT, "small",
                      request={"chat_template_kwargs": {"reasoning_type": "disabled"}})
        cases += Case(server, "thinking_on", SINGLE, EOT, "small",
                      request={"chat_template_kwargs": {"reasoning_type": "enabled"}})
        cases += Case(server, "no_reasoning_field", answered, EOT, "small",
                      request={"include_reasoning": False})
    # cmd4, each parser alone
    for server in (C4T, C4R):
        for shape, output, eos, stream in (
                ("single", SINGLE, EOT, "small"),
                ("reasoning_content", think(THOUGHT) + answer(PLAIN), EOT, "small"),
                ("plain", PLAIN, EOT, "small"),
                ("content_after", think(THOUGHT) + action(PARIS) + answer(PLAIN), EOT,
                 "mixed"),
                ("truncated_args", think(THOUGHT) + A + '[{"tool_call_id": "0", "tool_name": '
                 '"get_weather", "parameters": {"city": "Par', None, "small")):
            cases += Case(server, shape, output, eos, stream, tools=server == C4T)
        cases += Case(server, "tool_choice_none", SINGLE, EOT, "small", request=NONE)
    return cases


FORMAT = Format(9600, SERVERS, cohere_cases(), tools=TOOLS, user=USER, prompt=prompt)
