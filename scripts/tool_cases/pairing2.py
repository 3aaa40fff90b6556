"""An engine tool parser after another family's reasoning parser (issues 19/20, cases 9800-…):
what vLLM 0.33 does when ``--tool-call-parser`` names a parser-engine family's tool parser
(``kimi_k3``, ``plamo3``) and ``--reasoning-parser`` a parser of another family (``qwen3``,
``olmo3``; vLLM refuses ``deepseek_r1`` on the PLaMo 3 stand-in, whose vocabulary has no
``<think>`` token), and Muse Spark's parsers with another family's (served since: see
docs/vllm-compat/muse.md, "Pairing"). vLLM's ``DelegatingParser``
(``vllm/parser/parser_manager.py``) lets the reasoning parser read the reasoning and the engine
tool parser the content it leaves (derender: ``engine_mode`` ``FOREIGN``).

Usage (copies of the derived ``kimi-k3-standin`` and ``plamo3-standin`` folders as
``$PEER_HOME/models/pr2-kimi-k3`` and ``pr2-plamo3``):

    "$VLLM_PEER"/start.sh pr2-kimi-k3 8780 --served-model-name kimi-k3-standin \\
        --tokenizer-mode kimi_k3 --reasoning-parser qwen3 --tool-call-parser kimi_k3 \\
        --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh pr2-plamo3 8781 --served-model-name plamo3-standin \\
        --reasoning-parser olmo3 --tool-call-parser plamo3 --enable-auto-tool-choice
    M="$VLLM_PEER/start.sh pr2-muse"; F="--served-model-name muse-spark-standin"
    $M 8782 $F --reasoning-parser muse --tool-call-parser hermes --enable-auto-tool-choice
    $M 8783 $F --reasoning-parser qwen3 --tool-call-parser muse --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py pairing2 8780 8781 8782 8783

Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases import kimi_k3 as k3
from tool_cases import muse as mu
from tool_cases import plamo3 as p3
from tool_cases.no_tools import prompt
from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

PAIRS = {  # server key: (model, reasoning parser, tool parser, EOS id)
    "qwen3_k3": ("kimi-k3-standin", "qwen3", "kimi_k3", k3.EOS),
    "olmo3_plamo3": ("plamo3-standin", "olmo3", "plamo3", p3.EOS),
    # Muse Spark with another family
    "muse_hermes": ("muse-spark-standin", "muse", "hermes", mu.EOM),
    "qwen3_muse": ("muse-spark-standin", "qwen3", "muse", mu.EOM),
}
EXTRA_FLAGS = {"qwen3_k3": ["--tokenizer-mode", "kimi_k3"]}


def _server(key: str) -> Server:
    model, reasoning, tool, _ = PAIRS[key]
    return Server(model, ["--served-model-name", model, *EXTRA_FLAGS.get(key, []),
                          "--reasoning-parser", reasoning,
                          "--tool-call-parser", tool, "--enable-auto-tool-choice"],
                  f"{reasoning} reasoning parser with the {tool} tool parser",
                  f"{reasoning}-with-{tool}",
                  (f"parser:{tool}", "reasoning", f"reasoning_parser:{reasoning}",
                   "parser:pairing"),
                  ROOT / "tests" / "models" / model / "tokenizer.json")


SERVERS = {key: _server(key) for key in PAIRS}

THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
WIDE = "😀𝄞🀄"
# per tool parser: (single call, parallel calls, an answer, a call cut in its arguments,
# the family's own end of reasoning, what closes the turn)
K3_PARALLEL = k3.tools(
    k3.call("get_weather", 1, k3.arg("city", "string", "東京 " + WIDE)),
    k3.call("get_weather", 2, k3.arg("city", "string", "Zürich"), k3.arg("unit", "string", "f")))
P3_PARALLEL = p3.block(p3.call("get_weather", '{"city": "Zürich"}'),
                       p3.call("get_weather", '{"city": "東京 ' + WIDE + '", "unit": "f"}'),
                       nl="\n")
SHAPES: dict[str, tuple[str, str, str, str, str, str]] = {
    "kimi_k3": (k3.SINGLE, k3.resp("Checking both.") + K3_PARALLEL, k3.resp(PLAIN), k3.TRUNC_ARGS,
                k3.THINK_END, k3.END),
    "plamo3": (p3.SINGLE, "Checking both.\n" + P3_PARALLEL, PLAIN,
               p3.REQUESTS + p3.tag("tool_request") + p3.tag("tool_name") + "get_weather"
               + p3.tag("tool_name", True) + p3.ARGS + '{"city": "Par',
               p3.THINK_END, ""),
}
BEFORE = {"kimi_k3": k3.resp("Let me check the weather for you."),
          "plamo3": "Let me check the weather for you.\n"}


def server_cases(key: str) -> list[_Case]:
    _, reasoning, tool, eos = PAIRS[key]
    single, parallel, answer, cut, own_end, close = SHAPES[tool]
    lead = THOUGHT + "</think>" + ("\n\n" if reasoning == "qwen3" else "")
    off: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": False,
                                                    "thinking": False}}

    def case(shape: str, output: str, stream: str, **fields: Any) -> list[_Case]:
        return both(_Case(key, shape, output, **{"eos": eos, "kind": "reasoning", **fields}),
                    stream)

    return [
        *case("single", lead + single + close, "one"),
        *case("content_before", lead + BEFORE[tool] + single + close, "mixed"),
        *case("reasoning_content", lead + answer + close, "small"),
        *case("parallel", lead + parallel + close, "small"),
        *case("own_reasoning_end", THOUGHT + own_end + single + close, "small"),
        *case("no_reasoning", single + close, "small", request=off),
        *case("no_tools", lead + single + close, "small", tools=False),
        *case("tool_choice_none", lead + single + close, "small", request=NONE),
        *case("required", lead + single + close, "small", request=REQUIRED),
        *case("named", lead + single + close, "small", request=NAMED_CHOICE),
        *case("cut_in_reasoning", THOUGHT + " I will call get_weather " + WIDE, "small",
              eos=None),
        *case("cut_in_arguments", lead + cut, "small", eos=None),
        *case("markup_in_reasoning", "I could write " + single + " now." + lead + answer
              + close, "mixed"),
    ]


HERMES = ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n'
          "</tool_call>")


def muse_cases(key: str) -> list[_Case]:
    """The muse reasoning parser before hermes, and qwen3's before the muse tool parser: the
    same Muse Spark outputs (``tool_cases/muse.py``), calls as the tool parser writes them."""
    eos = PAIRS[key][3]
    answer = mu.msg("user", PLAIN, mu.END_T)

    def case(shape: str, output: str, stream: str, end: int | None = eos,
             **fields: Any) -> list[_Case]:
        return both(_Case(key, shape, output, **{"eos": end, "kind": "reasoning", **fields}),
                    stream)

    if key == "muse_hermes":
        return [
            *case("single", mu.SELF + mu.msg("user", HERMES, mu.END_T), "small"),
            *case("content_before", mu.SELF + mu.msg("user", "Let me check.\n" + HERMES,
                                                     mu.END_T), "mixed"),
            *case("reasoning_content", mu.SELF + answer, "small", None),
            *case("atem_call", mu.SELF + mu.SINGLE, "small"),
            *case("unframed", "Sure. " + HERMES, "small"),
            *case("tool_choice_none", mu.SELF + mu.msg("user", HERMES, mu.END_T), "small",
                  request=NONE),
            *case("truncated_reasoning", mu.first("self", THOUGHT, ""), "small", None),
        ]
    think = THOUGHT + "</think>\n\n"
    return [
        *case("single", think + mu.SINGLE, "small"),
        *case("framed", mu.SELF + mu.SINGLE, "mixed"),
        *case("commentary_before", think + mu.msg("commentary", "Let me check.") + mu.SINGLE,
              "mixed"),
        *case("reasoning_content", think + answer, "small", None),
        *case("plain", think + PLAIN, "small", mu.EOT),
        *case("no_tools", think + mu.SINGLE, "small", tools=False),
        *case("truncated_args", think + mu.msg(mu.W, '<atem:function_calls>\n<atem:invoke '
                                                  f'name="{mu.W}">\n<atem:parameter '
                                                  'name="city">Par', ""), "small", None),
    ]


def cases() -> list[_Case]:
    return [case for key in SERVERS
            for case in (muse_cases(key) if "muse" in key else server_cases(key))]


FORMAT = Format(9800, SERVERS, cases(), tools=TOOLS, user=USER, prompt=prompt)
