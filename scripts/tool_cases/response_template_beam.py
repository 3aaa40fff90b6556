"""Beam's response-template parsers (issue 20, cases 7970-…): vLLM 0.33's ``beam`` tool and
reasoning parsers (``vllm/parser/beam.py``: ``BeamParser``, vLLM's ``ResponseTemplateParser``
plus a structural-tag grammar derived from the template for generation), on the checkpoints
of ``response_template.py``, a selection of its outputs.

Usage (the folders of ``response_template.py``):

    "$VLLM_PEER"/start.sh i20rt-json 8381 --served-model-name hf-json-standin \\
        --tool-call-parser beam --reasoning-parser beam --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh i20rt-xml 8382 --served-model-name hf-xml-standin \\
        --tool-call-parser beam --reasoning-parser beam --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py response_template_beam 8381 8382
"""

from __future__ import annotations

from dataclasses import replace

from record_tool_fixtures import Case, Format

from tool_cases.response_template import (
    JSON,
    XML,
    json_cases,
    prompt,
    server,
    xml_cases,
)
from tool_cases.shared import TOOLS, USER

BEAM = "beam"
FLAGS = ["--tool-call-parser", BEAM, "--reasoning-parser", BEAM]
FEATURES = (f"parser:{BEAM}", "reasoning", f"reasoning_parser:{BEAM}")
SERVERS = {
    "json": server(JSON, FLAGS, "beam tool and reasoning parsers (JSON calls template)",
                   "beam-json", FEATURES),
    "xml": server(XML, FLAGS, "beam tool and reasoning parsers (XML calls template)",
                  "beam-xml", FEATURES),
}
SHAPES = {
    "json": ("think_call", "parallel", "typed_strings", "malformed", "no_close", "cut_in_args",
             "tool_choice_none", "required", "named", "no_tools", "thinking_off",
             "parallel_serial"),
    "xml": ("think_call", "typed", "cut_in_name", "cut_in_args", "wide_chars",
            "tool_choice_none", "required", "named", "thinking_off", "hide_reasoning"),
}


def cases() -> list[Case]:
    picked = [c for c in json_cases() if c.shape in SHAPES["json"]]
    picked += [c for c in xml_cases() if c.shape in SHAPES["xml"]]
    return [replace(c) for c in picked]


FORMAT = Format(7970, SERVERS, cases(), tools=TOOLS, user=USER, prompt=prompt)
