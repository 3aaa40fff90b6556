"""Cohere Command's parsers with another family's (issue 19, cases 10600-…): what vLLM 0.33
does when one of ``--reasoning-parser`` / ``--tool-call-parser`` names ``cohere_command3`` or
``cohere_command4`` and the other a parser of another family. vLLM's ``ParserManager`` then
builds a ``CohereCommandParser`` (``vllm/parser/cohere_command.py``) whatever the other parser
is, whose melody preset is the reasoning parser's when it names one.

Another family's reasoning parser with a Cohere tool parser is refused by vLLM at start-up:
``CohereCommandParser.__init__`` asserts that its reasoning parser (when one is named) is
Cohere's, and ``ParserManager.validate_parser_tokenizer`` turns that into "--tool-call-parser
cohere_command4 and --reasoning-parser olmo3 cannot be used with the tokenizer of …" (seen with
``olmo3`` and ``qwen3`` on ``coh-standin``); nothing of it is recorded.

Usage (``coh-standin`` is the peer folder of ``tests/models/cohere-standin``):

    S="$VLLM_PEER/start.sh coh-standin"; F="--served-model-name cohere-standin \\
        --tokenizer-mode cohere"
    $S 8741 $F --cohere-format cmd4 --reasoning-parser cohere_command4 \\
        --tool-call-parser hermes --enable-auto-tool-choice
    $S 8743 $F --cohere-format cmd3 --reasoning-parser cohere_command3 \\
        --tool-call-parser cohere_command4 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py cohere_pairing 8741 8743

Every case is recorded non-streaming, then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import Case as _Case
from record_tool_fixtures import Format, Server

from tool_cases import cohere as co
from tool_cases.no_tools import prompt
from tool_cases.shared import NONE, REQUIRED, TOOLS, USER, both

PAIRS = {  # server key: (melody format, reasoning parser, tool parser)
    "coh4_hermes": ("cmd4", "cohere_command4", "hermes"),
    "coh3_coh4": ("cmd3", "cohere_command3", "cohere_command4"),
}


def _server(key: str) -> Server:
    version, reasoning, tool = PAIRS[key]
    return Server(co.MODEL, ["--served-model-name", co.MODEL, "--tokenizer-mode", "cohere",
                             "--cohere-format", version, "--reasoning-parser", reasoning,
                             "--tool-call-parser", tool, "--enable-auto-tool-choice"],
                  f"{reasoning} reasoning parser with the {tool} tool parser",
                  f"{reasoning}-with-{tool}",
                  (f"parser:{tool}", "reasoning", f"reasoning_parser:{reasoning}",
                   "parser:pairing"),
                  co.TOK)


SERVERS = {key: _server(key) for key in PAIRS}

HERMES = ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n'
          "</tool_call>")
CUT = co.think(co.THOUGHT) + co.A + ('[{"tool_call_id": "0", "tool_name": "get_weather", '
                                     '"parameters": {"city": "Par')


def Case(server: str, shape: str, output: str, eos: int | None, stream: str,  # noqa: N802
         **fields: Any) -> list[_Case]:
    return both(_Case(server, shape, output, eos, kind="reasoning", **fields), stream)


def pairing_cases() -> list[_Case]:
    eot, single = co.EOT, co.SINGLE
    answered = co.think(co.THOUGHT) + co.answer(co.PLAIN)
    after = co.think(co.THOUGHT) + co.action(co.PARIS) + co.answer(co.PLAIN)
    return [
        # cohere_command4's reasoning parser with hermes tools
        *Case("coh4_hermes", "single", single, eot, "small"),
        *Case("coh4_hermes", "hermes_call", co.think(co.THOUGHT) + co.answer(HERMES), eot,
              "small"),
        *Case("coh4_hermes", "reasoning_content", answered, eot, "small"),
        *Case("coh4_hermes", "plain", co.PLAIN, eot, "small"),
        *Case("coh4_hermes", "content_after", after, eot, "mixed"),
        *Case("coh4_hermes", "no_tools", single, eot, "small", tools=False),
        *Case("coh4_hermes", "tool_choice_none", single, eot, "small", request=NONE),
        *Case("coh4_hermes", "required", single, eot, "small", request=REQUIRED),
        *Case("coh4_hermes", "truncated_args", CUT, None, "small"),
        # cohere_command3's reasoning parser with cohere_command4's tool parser
        *Case("coh3_coh4", "single", single, eot, "small"),
        *Case("coh3_coh4", "start_text", co.think(co.THOUGHT) + co.TX + co.PLAIN + co.ETX, eot,
              "small"),
        *Case("coh3_coh4", "plain", co.PLAIN, eot, "small"),
        *Case("coh3_coh4", "tool_choice_none", single, eot, "small", request=NONE),
    ]


FORMAT = Format(10600, SERVERS, pairing_cases(), tools=TOOLS, user=USER, prompt=prompt)
