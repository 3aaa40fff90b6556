"""MiniMax M2 / M3 (cases 727-…): ``minimax_m2`` tool and reasoning parsers on
``minimax-m2.7`` (and the ``minimax_m2_append_think`` reasoning parser), ``minimax_m3`` tool and
reasoning parsers on ``minimax-m3`` (M3's vocabulary on M2's architecture: M3's own cannot be
loaded by the peer). Their tokenizers are fetched at test time (licences), see
tests/models/README.md.

Usage (`scripts/peer-model-folders.sh NAME...` first copies tests/models/NAME, tokenizer
fetched, into the peer's models folder):

    "$VLLM_PEER"/start.sh minimax-m2.7 8740 --tool-call-parser minimax_m2 \\
        --reasoning-parser minimax_m2 --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh minimax-m2.7 8741 --tool-call-parser minimax_m2 \\
        --reasoning-parser minimax_m2_append_think --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh minimax-m3 8742 --tool-call-parser minimax_m3 \\
        --reasoning-parser minimax_m3 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py minimax 8740 8741 8742

M2's generation prompt ends ``]~b]ai\\n<think>\\n``: the output is reasoning, ``</think>``, then
content and ``<minimax:tool_call>`` blocks of ``<invoke name="…">`` with ``<parameter
name="…">…</parameter>`` (``<think>``, ``</think>``, ``<minimax:tool_call>``,
``</minimax:tool_call>`` are added tokens). M3 prefixes every tag with ``]<]minimax[>[`` (an
added token, as are ``<tool_call>`` and ``<mm:think>``/``</mm:think>``); parameters are elements
named after the argument, nested for objects and arrays (``<item>``); its prompt opens
``<mm:think>`` only with ``chat_template_kwargs.thinking_mode`` "enabled" (``</mm:think>`` with
"disabled", nothing by default). EOS 200020 ``[e~[`` (or none, finish "length"). Every case is
recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

EOS = 200020
M2, M2A, M3 = "m2", "m2+append", "m3"


def _server(model: str, slug: str, tool: str, reasoning: str, label: str) -> Server:
    return Server(model, ["--served-model-name", model, "--tool-call-parser", tool,
                          "--reasoning-parser", reasoning, "--enable-auto-tool-choice"],
                  label, slug, (f"parser:{tool}", "reasoning", f"reasoning_parser:{reasoning}"),
                  ROOT / "tests" / "models" / model / "tokenizer.json")


SERVERS = {
    M2: _server("minimax-m2.7", "minimax_m2", "minimax_m2", "minimax_m2",
                "minimax_m2 tool and reasoning parsers"),
    M2A: _server("minimax-m2.7", "minimax_m2-append", "minimax_m2", "minimax_m2_append_think",
                 "minimax_m2 tool parser with the minimax_m2_append_think reasoning parser"),
    M3: _server("minimax-m3", "minimax_m3", "minimax_m3", "minimax_m3",
                "minimax_m3 tool and reasoning parsers"),
}


def m2_invoke(name: str, *params: tuple[str, str], quote: str = '"') -> str:
    body = "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in params)
    q = quote
    return f"<invoke name={q}{name}{q}>\n{body}</invoke>\n"


def m2_block(*invokes: str) -> str:
    return "<minimax:tool_call>\n" + "".join(invokes) + "</minimax:tool_call>"


NS = "]<]minimax[>["


def el(name: str, value: str) -> str:
    return f"{NS}<{name}>{value}{NS}</{name}>"


def m3_invoke(name: str, *elements: str) -> str:
    return f'{NS}<invoke name="{name}">' + "".join(elements) + f"{NS}</invoke>\n"


def m3_block(*invokes: str) -> str:
    return f"{NS}<tool_call>\n" + "".join(invokes) + f"{NS}</tool_call>"


THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."

M2_PARIS = m2_block(m2_invoke("get_weather", ("city", "Paris"), ("unit", "c")))
M2_OUT = {
    "single": M2_PARIS,
    "parallel": m2_block(m2_invoke("get_weather", ("city", "Zürich")),
                         m2_invoke("get_weather", ("city", '東京 "Tokyo"\nline two'),
                                   ("unit", "f"))),
    "typed": m2_block(m2_invoke("set_config", ("count", "3"), ("ratio", "0.5"),
                                ("enabled", "true"), ("tags", '["a", "b"]'),
                                ("meta", '{"k": 1, "nested": {"ok": true}}'), ("note", "null"),
                                ("label", "42"), ("level", "2"))),
    "typed_fallbacks": m2_block(m2_invoke("set_config", ("count", "three"), ("ratio", "1e999"),
                                          ("enabled", "yes"), ("tags", "a, b"),
                                          ("meta", "{'k': 1}"), ("note", "None"),
                                          ("level", "2.0"), ("extra", "7"))),
    "no_args": m2_block('<invoke name="get_time">\n</invoke>\n'),
    "content_before": "Let me check the weather for you.\n" + M2_PARIS,
    "content_after": M2_PARIS + "\nI will report back shortly.",
    "unknown_tool": m2_block(m2_invoke("get_stock", ("symbol", "ACME"))),
    "quotes": m2_block(m2_invoke("get_weather", ("city", "Paris"), quote="'"),
                       '<invoke name=get_time>\n</invoke>\n'),
    "no_param_close": m2_block('<invoke name="get_weather">\n<parameter name="city">Paris\n'
                               '<parameter name="unit">c</parameter>\n</invoke>\n'),
    "bare_invoke": m2_invoke("get_weather", ("city", "Paris")),
    "no_block_close": "<minimax:tool_call>\n" + m2_invoke("get_weather", ("city", "Paris")),
    "tags_in_text": 'Write <parameter name="x"> and </invoke> literally, then stop.',
    "partial_tag_text": "The answer is near. <invoke na",
}
M2_TRUNCATED = '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Par'

M3_PARIS = m3_block(m3_invoke("get_weather", el("city", "Paris"), el("unit", "c")))
M3_OUT = {
    "single": M3_PARIS,
    "parallel": m3_block(m3_invoke("get_weather", el("city", "Zürich")),
                         m3_invoke("get_weather", el("city", '東京 "Tokyo"\nline two'),
                                   el("unit", "f"))),
    # scalars are text typed by the schema; arrays are <item> elements, objects child elements
    "typed": m3_block(m3_invoke("set_config", el("count", "3"), el("ratio", "0.5"),
                                el("enabled", "true"),
                                el("tags", el("item", "a") + el("item", "b")),
                                el("meta", el("k", "1") + el("nested", el("ok", "true"))),
                                el("note", "null"), el("label", "42"), el("level", "2"))),
    "typed_fallbacks": m3_block(m3_invoke("set_config", el("count", "three"),
                                          el("enabled", "yes"), el("tags", ""),
                                          el("meta", ""), el("label", el("x", "1")),
                                          el("extra", "7"), el("extra", "8"))),
    "mixed_text": m3_block(m3_invoke("set_config", el("meta", "note " + el("k", "1") + " end"))),
    "no_args": m3_block(f'{NS}<invoke name="get_time">{NS}</invoke>\n'),
    "content_before": "Let me check the weather for you.\n" + M3_PARIS,
    "content_after": M3_PARIS + "\nI will report back shortly.",
    "unknown_tool": m3_block(m3_invoke("get_stock", el("symbol", "ACME"))),
    "unclosed_element": m3_block(m3_invoke("get_weather", el("city", "Paris"),
                                           f"{NS}<unit>c")),
    "bare_invoke": m3_invoke("get_weather", el("city", "Paris")),
    "no_ns": '<tool_call>\n<invoke name="get_weather"><city>Paris</city></invoke>\n</tool_call>',
    "tags_in_text": f"Write {NS}<city> literally, then stop.",
    "partial_tag_text": f"The answer is near. {NS}<tool",
}
M3_TRUNCATED = f'{NS}<tool_call>\n{NS}<invoke name="get_weather">{NS}<city>Par'

ENABLED: dict[str, Any] = {"chat_template_kwargs": {"thinking_mode": "enabled"}}
DISABLED: dict[str, Any] = {"chat_template_kwargs": {"thinking_mode": "disabled"}}


def Case(server: str, shape: str, output: str, stream: str,  # noqa: N802
         **fields: Any) -> list[_Case]:
    return both(_Case(server, shape, output, **{"eos": EOS, "kind": "reasoning", **fields}),
                stream)


SHAPES = (("single", "one"), ("parallel", "small"), ("typed", "one"),
          ("typed_fallbacks", "small"), ("no_args", "one"), ("content_before", "mixed"),
          ("content_after", "small"), ("unknown_tool", "small"), ("bare_invoke", "one"),
          ("tags_in_text", "one"), ("partial_tag_text", "one"))


def m2_cases() -> list[_Case]:
    lead = THOUGHT + "\n</think>\n\n"
    out: list[_Case] = []
    for shape, stream in (*SHAPES, ("quotes", "one"), ("no_param_close", "one"),
                          ("no_block_close", "small")):
        out += Case(M2, shape, lead + M2_OUT[shape], stream)
    out += Case(M2, "truncated", lead + M2_TRUNCATED, "one", eos=None)
    out += Case(M2, "tool_choice_none", lead + M2_PARIS, "small", request=NONE)
    out += Case(M2, "required", lead + M2_PARIS, "small", request=REQUIRED)
    out += Case(M2, "named", lead + M2_PARIS, "mixed", request=NAMED_CHOICE)
    out += Case(M2, "no_tools", lead + M2_PARIS, "small", tools=False)
    out += Case(M2, "reasoning_content", lead + PLAIN, "small")
    out += Case(M2, "reasoning_only", THOUGHT, "one", eos=None)
    out += Case(M2, "no_think_end", PLAIN, "small")
    out += Case(M2, "think_both", "<think>\n" + lead + PLAIN, "one")
    out += Case(M2, "tool_ends_reasoning", THOUGHT + "\n" + M2_PARIS, "one")
    for shape, output in (("reasoning_content", lead + PLAIN), ("single", lead + M2_PARIS),
                          ("think_both", "<think>\n" + lead + PLAIN)):
        out += Case(M2A, shape, output, "small")
    return out


def m3_cases() -> list[_Case]:
    lead = "<mm:think>" + THOUGHT + "</mm:think>"
    out: list[_Case] = []
    for shape, stream in (*SHAPES, ("mixed_text", "one"), ("unclosed_element", "one"),
                          ("no_ns", "small")):
        out += Case(M3, shape, lead + M3_OUT[shape], stream)
    out += Case(M3, "truncated", lead + M3_TRUNCATED, "one", eos=None)
    out += Case(M3, "tool_choice_none", lead + M3_PARIS, "small", request=NONE)
    out += Case(M3, "required", lead + M3_PARIS, "small", request=REQUIRED)
    out += Case(M3, "named", lead + M3_PARIS, "mixed", request=NAMED_CHOICE)
    out += Case(M3, "no_tools", lead + M3_PARIS, "small", tools=False)
    out += Case(M3, "reasoning_content", lead + PLAIN, "small")
    out += Case(M3, "plain", PLAIN, "small")
    out += Case(M3, "reasoning_only", "<mm:think>" + THOUGHT, "one", eos=None)
    out += Case(M3, "enabled", THOUGHT + "</mm:think>" + PLAIN, "one", request=ENABLED)
    out += Case(M3, "enabled_tool", THOUGHT + "</mm:think>" + M3_PARIS, "one", request=ENABLED)
    out += Case(M3, "disabled", PLAIN, "small", request=DISABLED)
    out += Case(M3, "disabled_think_text", lead + PLAIN, "one", request=DISABLED)
    out += Case(M3, "think_tag_text", "<think>" + THOUGHT + "</think>" + PLAIN, "small")
    return out


def cases() -> list[_Case]:
    return [*m2_cases(), *m3_cases()]


FORMAT = Format(727, SERVERS, cases(), tools=TOOLS, user=USER)
