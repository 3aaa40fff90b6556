"""qwen3_coder (cases 280-310): two servers on the Qwen3 tokenizer, the second with the qwen3
reasoning parser.

Usage:

    "$VLLM_PEER"/start.sh qwen3 8230 --tool-call-parser qwen3_coder --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh qwen3 8231 --reasoning-parser qwen3 --tool-call-parser qwen3_coder \\
        --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py qwen3_coder 8230 8231 [--only N...]

``<tool_call>`` and ``</think>`` become their ids, then ``<|im_end|>``. The tools carry typed
parameters, since qwen3_coder types each parameter's value from the request's schema.
"""

from __future__ import annotations

from functools import partial

from record_tool_fixtures import NAMED, ROOT, WEATHER, Format, Server
from record_tool_fixtures import Case as _Case

MODEL = "qwen3"
TOKENIZER = ROOT / "layers" / "tokenizers" / MODEL / "tokenizer.json"
IM_END = 151645
CODER, CODER_R = "qwen3_coder", "qwen3_coder+qwen3"

CONFIG = {"type": "function", "function": {
    "name": "set_config", "description": "Set configuration values",
    "parameters": {"type": "object", "properties": {
        "count": {"type": "integer"}, "ratio": {"type": "number"},
        "enabled": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
        "meta": {"type": "object"}, "note": {"type": ["string", "null"]},
        "label": {"type": "string"}, "level": {"enum": [1, 2, 3]},
        "size": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "flag": {"type": "bool"}, "free": {}}}}}
FREE = {"type": "function", "function": {"name": "free_form", "description": "No schema",
                                          "parameters": {"type": "object"}}}
TOOLS = [WEATHER, CONFIG, FREE]
USER = "What's the weather in Paris? Then set the config."


def _server(reasoning: bool) -> Server:
    r = ["--reasoning-parser", "qwen3"] if reasoning else []
    return Server(MODEL, ["--served-model-name", MODEL, *r, "--tool-call-parser", "qwen3_coder",
                          "--enable-auto-tool-choice"],
                  "qwen3_coder tool parser", "qwen3_coder-r" if reasoning else "qwen3_coder",
                  ("parser:qwen3_coder", *(("reasoning", "parser:qwen3") if reasoning else ())),
                  TOKENIZER)


Case = partial(_Case, eos=IM_END)


def call(name: str, *params: tuple[str, str]) -> str:
    body = "".join(f"<parameter={p}>\n{v}\n</parameter>\n" for p, v in params)
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


SINGLE = call("get_weather", ("city", "Paris"), ("unit", "c"))
PARALLEL = (call("get_weather", ("city", "Zürich")) + "\n"
            + call("get_weather", ("city", "東京 \"Tokyo\"\nline two"), ("unit", "f")))
TYPED = call("set_config", ("count", "3"), ("ratio", "0.5"), ("enabled", "true"),
             ("tags", '["a", "b"]'), ("meta", '{"k": 1, "nested": {"ok": true}}'),
             ("note", "null"), ("label", "42"), ("level", "2"), ("size", "7"),
             ("flag", "False"), ("free", "12"))
FALLBACKS = call("set_config", ("count", "three"), ("ratio", "1e999"), ("enabled", "yes"),
                 ("tags", "['a', 'b']"), ("meta", "{'k': 1}"), ("note", "None"),
                 ("level", "2.0"), ("size", "seven"), ("flag", "1"))
NUMBERS = call("set_config", ("count", " 1_000 "), ("ratio", "5.0"), ("level", "-3"),
               ("enabled", "0"), ("note", "NULL"), ("size", "2.5"))
BEFORE = "Let me check the weather for you.\n\n" + SINGLE
AFTER = SINGLE + "\nI will tell you once I know."
NO_TAG = "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>"
NO_PARAM_END = ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
                "<parameter=unit>\nc\n</function>\n</tool_call>")
TRUNCATED = "<tool_call>\n<function=set_config>\n<parameter=count>\n3\n</parameter>\n" \
            "<parameter=label>\nhalf a la"
PLAIN = "Use <b>bold</b> when x > 3, and write <function=f> as text?"
UNKNOWN = call("lookup", ("query", "12"), ("page", "2")) + call("free_form", ("x", "1"))
EMPTY_VALUE = ("<tool_call>\n<function=get_weather>\n<parameter=city>\n\n</parameter>\n"
               "<parameter=unit>c</parameter>\n</function>\n</tool_call>")
THINK = "Let me think about the weather.\n</think>\n\n" + SINGLE
THINK_IMPLICIT = "I should call the tool.\n" + SINGLE

CASES = [
    Case(CODER, "single", SINGLE),
    Case(CODER, "parallel", PARALLEL),
    Case(CODER, "typed", TYPED),
    Case(CODER, "typed_fallbacks", FALLBACKS),
    Case(CODER, "typed_numbers", NUMBERS),
    Case(CODER, "content_before", BEFORE),
    Case(CODER, "content_after", AFTER),
    Case(CODER, "no_tool_call_tag", NO_TAG),
    Case(CODER, "no_param_end", NO_PARAM_END),
    Case(CODER, "truncated", TRUNCATED, eos=None),
    Case(CODER, "plain_text", PLAIN),
    Case(CODER, "unknown_tool", UNKNOWN),
    Case(CODER, "empty_value", EMPTY_VALUE),
    Case(CODER, "tool_choice_none", SINGLE, request={"tool_choice": "none"}),
    Case(CODER, "required", SINGLE, request={"tool_choice": "required"}),
    Case(CODER, "named", SINGLE, request={"tool_choice": NAMED}),
    Case(CODER, "parallel_false", PARALLEL, request={"parallel_tool_calls": False}),
    Case(CODER_R, "think", THINK),
    Case(CODER_R, "think_implicit", THINK_IMPLICIT),
    Case(CODER, "single", SINGLE, stream="small"),
    Case(CODER, "parallel", PARALLEL, stream="one", usage_chunk=True),
    Case(CODER, "typed", TYPED, stream="mixed"),
    Case(CODER, "typed_fallbacks", FALLBACKS, stream="small", finish_alone=True),
    Case(CODER, "content_before", BEFORE, stream="small"),
    Case(CODER, "content_after", AFTER, stream="mixed"),
    Case(CODER, "no_param_end", NO_PARAM_END, stream="small"),
    Case(CODER, "truncated", TRUNCATED, eos=None, stream="one"),
    Case(CODER, "plain_text", PLAIN, stream="small"),
    Case(CODER, "named", SINGLE, stream="mixed", request={"tool_choice": NAMED}),
    Case(CODER_R, "think", THINK, stream="small"),
    Case(CODER_R, "think_implicit", THINK_IMPLICIT, stream="mixed"),
]

FORMAT = Format(280, {CODER: _server(False), CODER_R: _server(True)}, CASES, tools=TOOLS,
                user=USER)
