"""llama3_json and pythonic (cases 128-171): two servers on the derived Llama 3.1 tokenizer.

Usage (see derender_testing/tokenizer_variants.py; the model folder holds
tests/models/llama3.1-tools/*.json):

    PEER=$HOME/vllm-peer; mkdir -p $PEER/models/llama3.1-tools
    cp tests/models/llama3.1-tools/*.json $PEER/models/llama3.1-tools/
    "$VLLM_PEER"/start.sh llama3.1-tools 8131 --tool-call-parser llama3_json \\
        --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh llama3.1-tools 8132 --tool-call-parser pythonic \\
        --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py llama3 8131 8132
"""

from __future__ import annotations

from functools import partial

from record_tool_fixtures import NAMED, ROOT, Format, Server
from record_tool_fixtures import Case as _Case

MODEL = "llama3.1-tools"
TOKENIZER = ROOT / "tests" / "models" / MODEL / "tokenizer.json"
EOT, EOM = 128009, 128008
LLAMA, PY = "llama3_json", "pythonic"


def _server(parser: str) -> Server:
    return Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", parser,
                          "--enable-auto-tool-choice"],
                  f"{parser} tool parser", parser, (f"parser:{parser}",), TOKENIZER)


Case = partial(_Case, eos=EOT)

LLAMA_SINGLE = '{"name": "get_weather", "parameters": {"city": "Paris", "unit": "c"}}'
LLAMA_PARALLEL = ('<|python_tag|>{"name": "get_weather", "arguments": {"city": "Zürich"}}; '
                  '{"name": "get_weather", "parameters": {"city": "東京", "unit": "c"}}')
LLAMA_NESTED = ('{"name": "create_note", "parameters": {"title": "Zürich \\ud83c\\udf26 trip", '
                '"body": "line1\\nline2 \\"quoted\\" 東京 🌦", "tags": ["travel", "天気"], '
                '"meta": {"priority": 2, "nested": {"ok": true, "ratio": -0.25, "none": null}}}}')
LLAMA_BEFORE = ('Let me check the weather for you.\n\n'
                '{"name": "get_weather", "parameters": {"city": "Paris"}}')
LLAMA_LIST = ('[{"name": "get_weather", "parameters": {"city": "Paris"}}, '
              '{"name": "create_note", "parameters": {"title": "Paris trip"}}]')
LLAMA_NO_NAME = '{"city": "Paris", "unit": "c"}'
LLAMA_BRACES = "Use the {city} placeholder in your template, e.g. {\"city\": \"Paris\"}."
LLAMA_TRUNCATED = '{"name": "get_weather", "parameters": {"city": "Par'

PY_SINGLE = "[get_weather(city='Paris', unit='c')]"
PY_PARALLEL = ('[get_weather(city="Zürich"), get_weather(city=\'東京\', unit=None), '
               "create_note(title='Trip', tags=['x', \"y\"])]")
PY_LITERALS = ("[create_note(title='He said \"hi\" 🌦', body='line1\\nline2\\ttab \\u00df', "
               "tags=('a', 'ß'), meta={'priority': 2, 'nested': {'ok': True, 'ratio': -0.25, "
               "'none': None, 1: false}}, count=1_000, scale=-1.5e3)]")
PY_BEFORE = "Sure! [get_weather(city='Paris')]"
PY_NOT_LITERAL = "[get_weather(city=Paris)]"
PY_TRAILING = "[get_weather(city='Paris')]\nLet me know if you need anything else."
PY_TRUNCATED = "[get_weather(city='Par"
PY_JSON_LIST = '[{"name": "get_weather", "parameters": {"city": "Paris"}}]'
PY_PLAIN = "The weather in Paris is sunny, 22 °C. [Source: météo]"

CASES = [
    Case(LLAMA, "single", LLAMA_SINGLE),
    Case(LLAMA, "python_tag_parallel", LLAMA_PARALLEL, eos=EOM),
    Case(LLAMA, "content_before", LLAMA_BEFORE),
    Case(LLAMA, "nested_args", LLAMA_NESTED),
    Case(LLAMA, "json_list", LLAMA_LIST),
    Case(LLAMA, "malformed_no_name", LLAMA_NO_NAME),
    Case(LLAMA, "text_with_braces", LLAMA_BRACES),
    Case(LLAMA, "truncated", LLAMA_TRUNCATED, eos=None),
    Case(LLAMA, "tool_choice_none", LLAMA_SINGLE, request={"tool_choice": "none"}),
    Case(LLAMA, "required", LLAMA_SINGLE, request={"tool_choice": "required"}),
    Case(LLAMA, "required_text", "I cannot look that up.",
         request={"tool_choice": "required"}),
    Case(LLAMA, "named", LLAMA_SINGLE, request={"tool_choice": NAMED}),
    Case(LLAMA, "parallel_false", LLAMA_PARALLEL, eos=EOM,
         request={"parallel_tool_calls": False}),
    Case(LLAMA, "single", LLAMA_SINGLE, stream="small"),
    Case(LLAMA, "python_tag_parallel", LLAMA_PARALLEL, eos=EOM, stream="one",
         usage_chunk=True),
    Case(LLAMA, "content_before", LLAMA_BEFORE, stream="mixed"),
    Case(LLAMA, "nested_args", LLAMA_NESTED, stream="small", finish_alone=True),
    Case(LLAMA, "json_list", LLAMA_LIST, stream="small"),
    Case(LLAMA, "malformed_no_name", LLAMA_NO_NAME, stream="small"),
    Case(LLAMA, "tool_choice_none", LLAMA_SINGLE, stream="mixed",
         request={"tool_choice": "none"}),
    Case(LLAMA, "named", LLAMA_SINGLE, stream="one", request={"tool_choice": NAMED}),
    Case(LLAMA, "parallel_false", LLAMA_PARALLEL, eos=EOM, stream="mixed",
         request={"parallel_tool_calls": False}),
    Case(PY, "single", PY_SINGLE),
    Case(PY, "parallel", PY_PARALLEL),
    Case(PY, "literals", PY_LITERALS),
    Case(PY, "content_before", PY_BEFORE),
    Case(PY, "not_literal", PY_NOT_LITERAL),
    Case(PY, "trailing_text", PY_TRAILING),
    Case(PY, "truncated", PY_TRUNCATED, eos=None),
    Case(PY, "plain_text", PY_PLAIN),
    Case(PY, "tool_choice_none", PY_SINGLE, request={"tool_choice": "none"}),
    Case(PY, "required_json", PY_JSON_LIST, request={"tool_choice": "required"}),
    Case(PY, "required_pythonic", PY_SINGLE, request={"tool_choice": "required"}),
    Case(PY, "named_json", '{"city": "Paris", "unit": "f"}',
         request={"tool_choice": NAMED}),
    Case(PY, "parallel_false", PY_PARALLEL, request={"parallel_tool_calls": False}),
    Case(PY, "single", PY_SINGLE, stream="one"),
    Case(PY, "parallel", PY_PARALLEL, stream="small", usage_chunk=True),
    Case(PY, "literals", PY_LITERALS, stream="mixed"),
    Case(PY, "content_before", PY_BEFORE, stream="small"),
    Case(PY, "not_literal", PY_NOT_LITERAL, stream="small"),
    Case(PY, "truncated", PY_TRUNCATED, eos=None, stream="one"),
    Case(PY, "required_json", PY_JSON_LIST, stream="small",
         request={"tool_choice": "required"}),
    Case(PY, "named_json", '{"city": "Paris", "unit": "f"}', stream="small",
         finish_alone=True, request={"tool_choice": NAMED}),
    Case(PY, "parallel_false", PY_PARALLEL, stream="mixed",
         request={"parallel_tool_calls": False}),
]

FORMAT = Format(128, {LLAMA: _server(LLAMA), PY: _server(PY)}, CASES)
