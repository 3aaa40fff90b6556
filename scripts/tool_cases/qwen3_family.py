"""The Qwen3-grammar formats (cases 835-…), all on the Qwen3 tokenizer (``qwen3``) but
``llama4_json``: vLLM 0.33's aliases ``qwen3_xml`` (its ``qwen3_coder`` parser), ``qwen3_json``
(``hermes``) and ``llama4_json`` (``llama3_json``, on ``llama3.1-tools`` as the llama3_json
fixtures); the ``mimo``, ``step3p5`` and ``seed_oss`` tool and reasoning parsers (one engine
each, vllm/parser/{mimo,step3p5,seed_oss}.py, Qwen3's XML grammar); the ``nemotron_v3``
reasoning parser with the ``qwen3_coder`` tool parser (vLLM has no nemotron_v3 tool parser;
Nemotron 3 writes Qwen3's XML calls).

Usage (`scripts/peer-model-folders.sh llama3.1-tools` first; ``qwen3`` is the peer's own):

    "$VLLM_PEER"/start.sh qwen3 8835 --reasoning-parser qwen3 --tool-call-parser qwen3_xml \\
        --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh qwen3 8836 --reasoning-parser qwen3 --tool-call-parser qwen3_json \\
        --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh llama3.1-tools 8837 --tool-call-parser llama4_json \\
        --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh qwen3 8838 --reasoning-parser mimo --tool-call-parser mimo \\
        --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh qwen3 8839 --reasoning-parser step3p5 --tool-call-parser step3p5 \\
        --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh qwen3 8840 --reasoning-parser seed_oss --tool-call-parser seed_oss \\
        --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh qwen3 8841 --reasoning-parser nemotron_v3 \\
        --tool-call-parser qwen3_coder --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py qwen3_family 8835 8836 8837 8838 8839 \\
        8840 8841

``<think>``, ``</think>``, ``<tool_call>``, ``</tool_call>`` are Qwen3 added tokens and become
their ids; seed_oss's ``<seed:think>``, ``<seed:tool_call>`` (and closers) are not tokens of
this vocabulary, so they are text of several tokens. Then ``<|im_end|>`` 151645 (Llama:
``<|eot_id|>`` 128009), or none (finish "length"). The prompt is the server's render (Qwen3's
template: ``<|im_start|>assistant\\n``, and ``<think>\\n\\n</think>\\n\\n`` with
``enable_thinking`` false). Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

QWEN = ROOT / "layers" / "tokenizers" / "qwen3" / "tokenizer.json"
LLAMA = ROOT / "tests" / "models" / "llama3.1-tools" / "tokenizer.json"
IM_END, EOT = 151645, 128009
XML, JSON, L4, MIMO, STEP, SEED, NEMO = ("qwen3_xml", "qwen3_json", "llama4_json", "mimo",
                                         "step3p5", "seed_oss", "nemotron_v3")


def _server(model: str, tool: str, reasoning: str | None, slug: str, label: str,
            features: tuple[str, ...]) -> Server:
    r = ["--reasoning-parser", reasoning] if reasoning else []
    return Server(model, ["--served-model-name", model, *r, "--tool-call-parser", tool,
                          "--enable-auto-tool-choice"], label, slug,
                  (f"parser:{tool}", *(("reasoning", f"reasoning_parser:{reasoning}")
                                       if reasoning else ()), *features),
                  QWEN if model == "qwen3" else LLAMA)


SERVERS = {
    XML: _server("qwen3", "qwen3_xml", "qwen3", "qwen3_xml-r",
                 "qwen3_xml tool parser (alias of qwen3_coder) with the qwen3 reasoning parser",
                 ()),
    JSON: _server("qwen3", "qwen3_json", "qwen3", "qwen3_json-r",
                  "qwen3_json tool parser (alias of hermes) with the qwen3 reasoning parser",
                  ()),
    L4: _server("llama3.1-tools", "llama4_json", None, "llama4_json",
                "llama4_json tool parser (alias of llama3_json)", ()),
    MIMO: _server("qwen3", "mimo", "mimo", "mimo", "mimo tool and reasoning parsers", ()),
    STEP: _server("qwen3", "step3p5", "step3p5", "step3p5",
                  "step3p5 tool and reasoning parsers", ()),
    SEED: _server("qwen3", "seed_oss", "seed_oss", "seed_oss",
                  "seed_oss tool and reasoning parsers", ()),
    NEMO: _server("qwen3", "qwen3_coder", "nemotron_v3", "nemotron_v3",
                  "qwen3_coder tool parser with the nemotron_v3 reasoning parser", ()),
}

THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
NOT_THINKING: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": False}}
THINKING: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": True}}
FORCE: dict[str, Any] = {"chat_template_kwargs": {"force_nonempty_content": True}}


def Case(server: str, shape: str, output: str, stream: str,  # noqa: N802
         reasoning: bool = True, **fields: Any) -> list[_Case]:
    eos = EOT if server == L4 else IM_END
    return both(_Case(server, shape, output, **{
        "eos": eos, "kind": "reasoning" if reasoning else "tool_call", **fields}), stream)


TAGS = {SEED: ("<seed:think>", "</seed:think>", "<seed:tool_call>", "</seed:tool_call>")}
QWEN_TAGS = ("<think>", "</think>", "<tool_call>", "</tool_call>")


def xml_call(server: str, name: str, *params: tuple[str, str], compact: bool = False) -> str:
    start, end = TAGS.get(server, QWEN_TAGS)[2:]
    nl = "" if compact else "\n"
    body = "".join(f"<parameter={k}>{nl}{v}{nl}</parameter>\n" for k, v in params)
    return f"{start}\n<function={name}>\n{body}</function>\n{end}"


def xml_outputs(server: str) -> dict[str, str]:
    start, end = TAGS.get(server, QWEN_TAGS)[2:]
    compact = server == MIMO
    paris = xml_call(server, "get_weather", ("city", "Paris"), ("unit", "c"), compact=compact)
    return {
        "single": paris,
        "single_wrapped": xml_call(server, "get_weather", ("city", "Paris"), ("unit", "c")),
        "parallel": xml_call(server, "get_weather", ("city", "Zürich"), compact=compact) + "\n"
        + xml_call(server, "get_weather", ("city", '東京 "Tokyo"\nline two'), ("unit", "f"),
                   compact=compact),
        "typed": xml_call(server, "set_config", ("count", "3"), ("ratio", "0.5"),
                          ("enabled", "true"), ("tags", '["a", "b"]'),
                          ("meta", '{"k": 1, "nested": {"ok": true}}'), ("note", "null"),
                          ("label", "42"), ("level", "2"), compact=compact),
        "typed_fallbacks": xml_call(server, "set_config", ("count", "three"), ("ratio", "1e999"),
                                    ("enabled", "yes"), ("tags", "a, b"), ("meta", "{'k': 1}"),
                                    ("note", "None"), ("level", "2.0"), ("extra", "7"),
                                    compact=compact),
        "no_args": f"{start}\n<function=get_time>\n</function>\n{end}",
        "content_before": "Let me check the weather for you.\n\n" + paris,
        "content_after": paris + "\nI will report back shortly.",
        "unknown_tool": xml_call(server, "get_stock", ("symbol", "ACME"), compact=compact),
        "no_wrapper": "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
                      "</function>",
        "no_param_end": f"{start}\n<function=get_weather>\n<parameter=city>\nParis\n"
                        f"<parameter=unit>\nc\n</parameter>\n</function>\n{end}",
        "no_call_end": f"{start}\n<function=get_weather>\n<parameter=city>\nParis\n"
                       "</parameter>\n",
        "truncated": f"{start}\n<function=get_weather>\n<parameter=city>\nPar",
        "tags_in_text": "Use <b>bold</b> when x > 3, and write <function=f> as text?",
        "partial_tag_text": "The answer is near. <tool_",
        "qwen_tags": xml_call(XML, "get_weather", ("city", "Paris")),
    }


def family_cases(server: str) -> list[_Case]:
    out = xml_outputs(server)
    think, unthink = TAGS.get(server, QWEN_TAGS)[:2]
    # Qwen3-style models write their own <think> after the prompt
    lead = think + "\n" + THOUGHT + "\n" + unthink + "\n\n"
    cases: list[_Case] = []
    shapes = [("single", "one"), ("parallel", "small"), ("typed", "one"),
              ("typed_fallbacks", "small"), ("no_args", "one"), ("content_before", "mixed"),
              ("content_after", "small"), ("unknown_tool", "small"), ("no_wrapper", "one"),
              ("no_param_end", "small"), ("no_call_end", "small"), ("tags_in_text", "one"),
              ("partial_tag_text", "one")]
    if server == MIMO:
        shapes.append(("single_wrapped", "one"))
    if server == SEED:
        shapes.append(("qwen_tags", "one"))
    for shape, stream in shapes:
        cases += Case(server, shape, lead + out[shape], stream)
    cases += Case(server, "truncated", lead + out["truncated"], "one", eos=None)
    cases += Case(server, "tool_choice_none", lead + out["single"], "small", request=NONE)
    cases += Case(server, "required", lead + out["single"], "small", request=REQUIRED)
    cases += Case(server, "named", lead + out["single"], "mixed", request=NAMED_CHOICE)
    cases += Case(server, "no_tools", lead + out["single"], "small", tools=False)
    cases += Case(server, "reasoning_content", lead + PLAIN, "small")
    cases += Case(server, "reasoning_only", think + "\n" + THOUGHT, "one", eos=None)
    cases += Case(server, "no_think_start", THOUGHT + "\n" + unthink + "\n\n" + PLAIN, "small")
    cases += Case(server, "tool_ends_reasoning", think + "\n" + THOUGHT + "\n" + out["single"],
                  "one")
    cases += Case(server, "no_think_tags", PLAIN, "small")
    cases += Case(server, "thinking_off", PLAIN, "small", request=NOT_THINKING)
    cases += Case(server, "thinking_off_tool", out["single"], "one", request=NOT_THINKING)
    cases += Case(server, "thinking_off_think_text", think + THOUGHT + unthink + PLAIN, "one",
                  request=NOT_THINKING)
    cases += Case(server, "thinking_on_kwarg", lead + PLAIN, "small", request=THINKING)
    cases += Case(server, "reasoning_trailing_space", think + "\n" + THOUGHT + "\n\n  \n"
                  + unthink + "\n" + PLAIN, "one")
    return cases


HERMES_SINGLE = ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", '
                 '"unit": "c"}}\n</tool_call>')
HERMES_PARALLEL = ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n'
                   '</tool_call>\n<tool_call>\n{"name": "set_config", "arguments": {"count": 3, '
                   '"tags": ["a"]}}\n</tool_call>')
LLAMA_SINGLE = '{"name": "get_weather", "parameters": {"city": "Paris", "unit": "c"}}'
LLAMA_PARALLEL = ('<|python_tag|>{"name": "get_weather", "arguments": {"city": "Zürich"}}; '
                  '{"name": "get_weather", "parameters": {"city": "東京", "unit": "c"}}')
LEAD = "<think>\n" + THOUGHT + "\n</think>\n\n"


def alias_cases() -> list[_Case]:
    xml = xml_outputs(XML)
    cases: list[_Case] = []
    cases += Case(XML, "single", LEAD + xml["single_wrapped"], "one")
    cases += Case(XML, "typed", LEAD + xml_call(XML, *_typed()), "small")
    cases += Case(XML, "content_before", LEAD + "Let me check.\n\n" + xml["single_wrapped"],
                  "mixed")
    cases += Case(XML, "truncated", LEAD + xml["truncated"], "one", eos=None)
    cases += Case(JSON, "single", LEAD + HERMES_SINGLE, "one")
    cases += Case(JSON, "parallel", LEAD + HERMES_PARALLEL, "small")
    cases += Case(JSON, "content_before", LEAD + "Let me check.\n\n" + HERMES_SINGLE, "mixed")
    cases += Case(JSON, "truncated", LEAD + HERMES_SINGLE[:40], "one", eos=None)
    cases += Case(L4, "single", LLAMA_SINGLE, "small", False)
    cases += Case(L4, "python_tag_parallel", LLAMA_PARALLEL, "one", False, eos=128008)
    cases += Case(L4, "content_before", "Let me check the weather for you.\n\n" + LLAMA_SINGLE,
                  "mixed", False)
    cases += Case(L4, "truncated", LLAMA_SINGLE[:40], "one", False, eos=None)
    return cases


def _typed() -> tuple[str, tuple[str, str], ...]:
    return ("set_config", ("count", "3"), ("ratio", "0.5"), ("enabled", "true"),
            ("tags", '["a", "b"]'), ("note", "null"), ("label", "42"))


NEMO_TOOL = xml_call(XML, "get_weather", ("city", "Paris"), ("unit", "c"))


def nemotron_cases() -> list[_Case]:
    s = NEMO
    cases: list[_Case] = []
    cases += Case(s, "reasoning_content", LEAD + PLAIN, "small")
    cases += Case(s, "reasoning_only", "<think>\n" + THOUGHT, "one", eos=None)
    cases += Case(s, "reasoning_empty_content", LEAD, "one")
    cases += Case(s, "reasoning_then_tool", LEAD + NEMO_TOOL, "small")
    cases += Case(s, "tool_ends_reasoning", "<think>\n" + THOUGHT + "\n" + NEMO_TOOL, "one")
    cases += Case(s, "no_think_tags", PLAIN, "small")
    cases += Case(s, "thinking_off", PLAIN, "small", request=NOT_THINKING)
    cases += Case(s, "thinking_off_think_text", "<think>" + THOUGHT + "</think>" + PLAIN, "one",
                  request=NOT_THINKING)
    cases += Case(s, "thinking_off_reasoning_only", THOUGHT + "\n</think>\n\n", "one",
                  request=NOT_THINKING)
    cases += Case(s, "thinking_off_tool", NEMO_TOOL, "one", request=NOT_THINKING)
    cases += Case(s, "force_content_reasoning_only", LEAD, "small", request=FORCE)
    cases += Case(s, "force_content_unterminated", "<think>\n" + THOUGHT, "one", eos=None,
                  request=FORCE)
    cases += Case(s, "force_content_with_content", LEAD + PLAIN, "small", request=FORCE)
    cases += Case(s, "force_content_tool", LEAD + NEMO_TOOL, "small", request=FORCE)
    cases += Case(s, "reasoning_trailing_space", "<think>\n" + THOUGHT + "\n\n  \n</think>\n"
                  + PLAIN, "one")
    cases += Case(s, "tool_choice_none", LEAD + NEMO_TOOL, "small", request=NONE)
    return cases


def cases() -> list[_Case]:
    return [*alias_cases(), *family_cases(MIMO), *family_cases(STEP), *family_cases(SEED),
            *nemotron_cases()]


FORMAT = Format(835, SERVERS, cases(), tools=TOOLS, user=USER)
