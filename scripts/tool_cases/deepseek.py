"""deepseek_v3 and deepseek_v31 (cases 200-237): four servers on the ``deepseek-v4`` test model
folder served as ``deepseek-v3`` (DeepSeek-V4's vocabulary, which has the markers as single
tokens; EOS 1). ``deepseek_v31vocab`` records the same cases on DeepSeek-V3.1's own vocabulary.

Usage:

    for spec in "8210 deepseek_v3" "8211 deepseek_v31"; do set -- $spec
        "$VLLM_PEER"/start.sh deepseek-v3 $1 --tool-call-parser $2 --enable-auto-tool-choice
    done
    "$VLLM_PEER"/start.sh deepseek-v3 8212 --tool-call-parser deepseek_v3 \\
        --reasoning-parser deepseek_r1 --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh deepseek-v3 8213 --tool-call-parser deepseek_v31 \\
        --reasoning-parser deepseek_r1 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py deepseek 8210 8211 8212 8213
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from record_tool_fixtures import NAMED, ROOT, Format, Server
from record_tool_fixtures import Case as _Case

MODEL = "deepseek-v3"
"""The served name; the folder is tests/models/deepseek-v4 (named for its vocabulary)."""
TOKENIZER = ROOT / "tests" / "models" / "deepseek-v4" / "tokenizer.json"
EOS = 1
V3, V31 = "deepseek_v3", "deepseek_v31"
V3_R1, V31_R1 = "deepseek_v3+r1", "deepseek_v31+r1"


def _server(parser: str, reasoning: bool, model: str = MODEL, tokenizer: Path = TOKENIZER,
            slug_suffix: str = "") -> Server:
    r1 = ["--reasoning-parser", "deepseek_r1"] if reasoning else []
    return Server(model, ["--served-model-name", model, "--tool-call-parser", parser, *r1,
                          "--enable-auto-tool-choice"],
                  parser + (" + deepseek_r1 reasoning" if reasoning else "") + " parser"
                  + (f" on {model}" if slug_suffix else ""),
                  parser + slug_suffix, (f"parser:{parser}",
                           *(("reasoning", "parser:deepseek_r1") if reasoning else ())),
                  tokenizer)


def servers(model: str = MODEL, tokenizer: Path = TOKENIZER,
            slug_suffix: str = "") -> dict[str, Server]:
    """The four servers of the table, in the order of the ports."""
    return {V3: _server(V3, False, model, tokenizer, slug_suffix),
            V31: _server(V31, False, model, tokenizer, slug_suffix),
            V3_R1: _server(V3, True, model, tokenizer, slug_suffix),
            V31_R1: _server(V31, True, model, tokenizer, slug_suffix)}


Case = partial(_Case, eos=EOS)

B, E = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
C, F, S = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"


def v3_call(name: str, args: str, kind: str = "function") -> str:
    return f"{C}{kind}{S}{name}\n```json\n{args}\n```{F}"


def v31_call(name: str, args: str) -> str:
    return f"{C}{name}{S}{args}{F}"


PARIS = '{"city": "Paris", "unit": "c"}'
NESTED = ('{\n  "title": "Zürich \\ud83c\\udf26 trip",\n  '
          '"body": "line1\\nline2 \\"quoted\\" 東京 🌦",'
          '\n  "tags": ["travel", "天気"],\n  "meta": {"priority": 2, "nested": {"ok": true, '
          '"ratio": -0.25, "none": null}}\n}')

V3_SINGLE = B + v3_call("get_weather", PARIS) + E
V3_PARALLEL = (B + v3_call("get_weather", '{"city": "Zürich"}') + "\n"
               + v3_call("get_weather", '{"city": "東京", "unit": "c"}') + E)
V3_BEFORE = "Let me check the weather for you.\n\n" + B + v3_call("get_weather",
                                                                 '{"city": "Paris"}') + E
V3_AFTER = V3_SINGLE + "\nI will report back shortly."
V3_NESTED = B + v3_call("create_note", NESTED) + E
V3_TRUNCATED = B + C + "function" + S + 'get_weather\n```json\n{"city": "Par'
V3_NO_FENCE = B + C + "function" + S + 'get_weather\n{"city": "Paris"}' + F + E
V3_NO_BEGIN = v3_call("get_weather", PARIS)

V31_SINGLE = B + v31_call("get_weather", PARIS) + E
V31_PARALLEL = (B + v31_call("get_weather", '{"city": "Zürich"}')
                + v31_call("create_note", '{"title": "東京 trip", "tags": ["x"]}') + E)
V31_BEFORE = "Let me check the weather for you.\n\n" + B + v31_call("get_weather",
                                                                   '{"city": "Paris"}') + E
V31_AFTER = V31_SINGLE + "\nI will report back shortly."
V31_NESTED = B + v31_call("create_note", NESTED) + E
V31_TRUNCATED = B + C + "get_weather" + S + '{"city": "Par'
V31_NO_BEGIN = v31_call("get_weather", PARIS)

THINK = "The user wants Paris weather; call the tool.\n</think>\n\n"

def cases() -> list[_Case]:
    return [
        Case(V3, "single", V3_SINGLE),
        Case(V3, "parallel", V3_PARALLEL),
        Case(V3, "content_before", V3_BEFORE),
        Case(V3, "content_after", V3_AFTER),
        Case(V3, "nested_args", V3_NESTED),
        Case(V3, "truncated", V3_TRUNCATED, eos=None),
        Case(V3, "no_fence", V3_NO_FENCE),
        Case(V3, "no_begin", V3_NO_BEGIN),
        Case(V3, "tool_choice_none", V3_SINGLE, request={"tool_choice": "none"}),
        Case(V3, "required", V3_SINGLE, request={"tool_choice": "required"}),
        Case(V3, "named", V3_SINGLE, request={"tool_choice": NAMED}),
        Case(V3, "parallel_false", V3_PARALLEL, request={"parallel_tool_calls": False}),
        Case(V3, "single", V3_SINGLE, stream="one"),
        Case(V3, "parallel", V3_PARALLEL, stream="small", usage_chunk=True),
        Case(V3, "content_before", V3_BEFORE, stream="mixed"),
        Case(V3, "content_after", V3_AFTER, stream="small"),
        Case(V3, "nested_args", V3_NESTED, stream="small", finish_alone=True),
        Case(V3, "truncated", V3_TRUNCATED, eos=None, stream="one"),
        Case(V3, "no_fence", V3_NO_FENCE, stream="small"),
        Case(V31, "single", V31_SINGLE),
        Case(V31, "parallel", V31_PARALLEL),
        Case(V31, "content_before", V31_BEFORE),
        Case(V31, "content_after", V31_AFTER),
        Case(V31, "nested_args", V31_NESTED),
        Case(V31, "truncated", V31_TRUNCATED, eos=None),
        Case(V31, "no_begin", V31_NO_BEGIN),
        Case(V31, "named", V31_SINGLE, request={"tool_choice": NAMED}),
        Case(V31, "parallel_false", V31_PARALLEL, request={"parallel_tool_calls": False}),
        Case(V31, "single", V31_SINGLE, stream="small"),
        Case(V31, "parallel", V31_PARALLEL, stream="one", usage_chunk=True),
        Case(V31, "content_before", V31_BEFORE, stream="mixed"),
        Case(V31, "content_after", V31_AFTER, stream="small"),
        Case(V31, "nested_args", V31_NESTED, stream="small", finish_alone=True),
        Case(V31, "truncated", V31_TRUNCATED, eos=None, stream="one"),
        Case(V3_R1, "r1_think", THINK + V3_PARALLEL),
        Case(V3_R1, "r1_think", THINK + V3_PARALLEL, stream="small"),
        Case(V31_R1, "r1_think", THINK + V31_PARALLEL),
        Case(V31_R1, "r1_think", THINK + V31_PARALLEL, stream="mixed"),
    ]

FORMAT = Format(200, servers(), cases())
