"""mistral (cases 240-279): two servers on derived Mistral tokenizers (see
derender_testing/tokenizer_variants.py), their model folders holding
tests/models/mistral-tools*/*.json.

Usage:

    PEER=$HOME/vllm-peer; mkdir -p $PEER/models/mistral-tools
    cp tests/models/mistral-tools/*.json $PEER/models/mistral-tools/
    "$VLLM_PEER"/start.sh mistral-tools 8220 --tool-call-parser mistral \\
        --enable-auto-tool-choice --reasoning-parser mistral
    # likewise tests/models/mistral-tools-v3/*.json into $PEER/models/mistral-tools-v3
    "$VLLM_PEER"/start.sh mistral-tools-v3 8221 --tool-call-parser mistral \\
        --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py mistral 8220 8221 [--only N...]

The tokenizer has ``[ARGS]`` and ``[THINK]``, so vLLM's MistralParser reads the tokenizer-v11+
grammar (``[TOOL_CALLS]name[ARGS]{…}`` or ``[TOOL_CALLS]name{…}``) and special-token
reasoning (cases 240-272); ``mistral-tools-v3`` has ``[TOOL_CALLS]`` alone, the older grammar
of tokenizers before v11, ``[TOOL_CALLS][{"name": …, "arguments": …}, …]`` (cases 273-279).
Each case is a hand-written model output: the markers become their ids and the text
between them is encoded on its own without the ``▁`` this (pre-v3) tokenizer prepends to every
segment, so the decoded output is the text as written; then an EOS id (or none, finish
"length"). The prompt is ``<s>[INST] … [/INST]`` (the files have no chat template for vLLM to
render).
"""

from __future__ import annotations

import re
from typing import Any

from record_tool_fixtures import NAMED, ROOT, USER, Format, Server
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

MODEL, OLDER = "mistral-tools", "mistral-tools-v3"
EOS = 2
MARKERS = ("[TOOL_CALLS]", "[ARGS]", "[THINK]", "[/THINK]")


def _server(model: str, flags: list[str], parsers: str) -> Server:
    return Server(model, ["--served-model-name", model, "--tool-call-parser", "mistral",
                          "--enable-auto-tool-choice", *flags],
                  f"mistral {parsers}", "mistral", ("parser:mistral",),
                  ROOT / "tests" / "models" / model / "tokenizer.json")


def Case(server: str, shape: str, output: str, **fields: Any) -> _Case:  # noqa: N802
    """EOS 2; the feature "reasoning" for an output with [THINK], else "tool_call"."""
    return _Case(server, shape, output, **{
        "eos": EOS, "kind": "reasoning" if "[THINK]" in output else "tool_call", **fields})


SINGLE = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "unit": "c"}'
PARALLEL = ('[TOOL_CALLS]get_weather[ARGS]{"city": "Zürich"}'
            '[TOOL_CALLS]get_weather[ARGS]{"city": "東京", "unit": "c"}'
            '[TOOL_CALLS]create_note[ARGS]{"title": "Trip", "tags": ["x", "y"]}')
BRACE = 'Sure.[TOOL_CALLS]get_weather{"city": "Paris"}'
BEFORE = ('Let me check the weather for you.\n\n'
          '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}')
NESTED = ('[TOOL_CALLS]create_note[ARGS]{"title": "Zürich \\ud83c\\udf26 trip", '
          '"body": "line1\\nline2 \\"quoted\\" 東京 🌦 {not: a call}", "tags": ["travel", "天気"], '
          '"meta": {"priority": 2, "nested": {"ok": true, "ratio": -0.25, "none": null}}}')
TRAILING = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"} Let me know if you need more.'
TRUNCATED = '[TOOL_CALLS]get_weather[ARGS]{"city": "Par'
PLAIN = "The weather in Paris is [sunny], {22 °C}."
THINK_TOOL = ("[THINK]The user wants the weather. I should call get_weather.  \n[/THINK]"
              '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}')
THINK_CONTENT = "[THINK]Let me think.  \n[/THINK]\n\nIt is sunny in Paris."
THINK_IMPLICIT = ('[THINK]Just call it. [THINK]again  '
                  '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}')
NONE_OUTPUT = 'Hello [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
NAME_ONLY = "[TOOL_CALLS]get_weather"
V3_LIST = ('Sure. [TOOL_CALLS] [{"name": "get_weather", "arguments": {"city":"Zürich"}}, '
           '{"arguments": {"title": "Trip", "tags": ["x"]}, "name": "create_note"}, '
           '{"name": "get_weather", "arguments": {"city": "東京", "unit": "c"}}]')
V3_OBJECT = '[TOOL_CALLS]{"name": "get_weather", "arguments": {"city": "Paris"}}'
V3_NONE = 'Hello [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]'
V3_BARE = '[{"name": "get_weather", "arguments": {"city": "Paris", "unit": "f"}}]'
SPACED = '[TOOL_CALLS] get_weather [ARGS] {"city": "Paris"} '

CASES = [
    Case(MODEL, "single", SINGLE),
    Case(MODEL, "parallel", PARALLEL),
    Case(MODEL, "brace", BRACE),
    Case(MODEL, "content_before", BEFORE),
    Case(MODEL, "nested_args", NESTED),
    Case(MODEL, "trailing_text", TRAILING),
    Case(MODEL, "truncated", TRUNCATED, eos=None),
    Case(MODEL, "plain_text", PLAIN),
    Case(MODEL, "think_tool", THINK_TOOL),
    Case(MODEL, "think_content", THINK_CONTENT),
    Case(MODEL, "think_implicit", THINK_IMPLICIT),
    Case(MODEL, "think_no_tools", THINK_CONTENT, tools=False),
    Case(MODEL, "tool_choice_none", NONE_OUTPUT, request={"tool_choice": "none"}),
    Case(MODEL, "required", SINGLE, request={"tool_choice": "required"}),
    Case(MODEL, "named", SINGLE, request={"tool_choice": NAMED}),
    Case(MODEL, "parallel_false", PARALLEL, request={"parallel_tool_calls": False}),
    Case(MODEL, "name_only", NAME_ONLY),
    Case(MODEL, "spaced", SPACED),
    Case(MODEL, "single", SINGLE, stream="small"),
    Case(MODEL, "parallel", PARALLEL, stream="one", usage_chunk=True),
    Case(MODEL, "brace", BRACE, stream="mixed"),
    Case(MODEL, "content_before", BEFORE, stream="small"),
    Case(MODEL, "nested_args", NESTED, stream="small", finish_alone=True),
    Case(MODEL, "trailing_text", TRAILING, stream="small"),
    Case(MODEL, "truncated", TRUNCATED, eos=None, stream="one"),
    Case(MODEL, "think_tool", THINK_TOOL, stream="one"),
    Case(MODEL, "think_content", THINK_CONTENT, stream="small"),
    Case(MODEL, "think_implicit", THINK_IMPLICIT, stream="mixed"),
    Case(MODEL, "think_no_tools", THINK_CONTENT, tools=False, stream="mixed"),
    Case(MODEL, "tool_choice_none", NONE_OUTPUT, request={"tool_choice": "none"}, stream="mixed"),
    Case(MODEL, "named", SINGLE, request={"tool_choice": NAMED}, stream="one"),
    Case(MODEL, "parallel_false", PARALLEL, request={"parallel_tool_calls": False}, stream="mixed"),
    Case(MODEL, "spaced", SPACED, stream="small"),
    # the older grammar (a tokenizer without [ARGS]): cases 273-279
    Case(OLDER, "v3_list", V3_LIST),
    Case(OLDER, "v3_object", V3_OBJECT),
    Case(OLDER, "v3_tool_choice_none", V3_NONE, request={"tool_choice": "none"}),
    Case(OLDER, "v3_required", V3_BARE, request={"tool_choice": "required"}),
    Case(OLDER, "v3_list", V3_LIST, stream="small"),
    Case(OLDER, "v3_tool_choice_none", V3_NONE, request={"tool_choice": "none"},
         stream="mixed"),
    Case(OLDER, "v3_required", V3_BARE, request={"tool_choice": "required"},
         stream="mixed"),
]


def encode(tokenizer: Tokenizer, output: str) -> list[int]:
    """Markers as their ids; each segment after one without the prepended ``▁``."""
    ids: list[int] = []
    for part in re.split("(" + "|".join(map(re.escape, MARKERS)) + ")", output):
        if part in MARKERS:
            ids.append(tokenizer.token_to_id(part))
        elif part and not ids:
            ids += tokenizer.encode(part, add_special_tokens=False).ids
        elif part:  # "\x00" takes the prepended "▁" and stands alone as <0x00>
            ids += tokenizer.encode("\x00" + part, add_special_tokens=False).ids[2:]
    assert tokenizer.decode(ids, skip_special_tokens=False) == output, output
    return ids


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    """Mistral 7B v0.1's files carry no chat template (vLLM will not render): its prompt form."""
    return [1, *tokenizer.encode(f"[INST] {USER} [/INST]", add_special_tokens=False).ids]


FORMAT = Format(240, {
    MODEL: _server(MODEL, ["--reasoning-parser", "mistral"], "tool and reasoning parsers"),
    OLDER: _server(OLDER, [], "tool parser (older grammar)")},
    CASES, encode=encode, prompt=prompt)
