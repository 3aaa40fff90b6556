"""Beam's response-template parsers named alone (issue 20, cases 8020-…): vLLM 0.33's ``beam``
as the tool parser only and as the reasoning parser only, the cases of
``response_template_split.py``.

Usage (the folders of ``response_template.py``):

    "$VLLM_PEER"/start.sh i20rt-json 8381 --served-model-name hf-json-standin \\
        --tool-call-parser beam --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh i20rt-xml 8382 --served-model-name hf-xml-standin \\
        --reasoning-parser beam
    .venv/bin/python scripts/record_tool_fixtures.py response_template_beam_split 8381 8382
"""

from __future__ import annotations

from record_tool_fixtures import Format

from tool_cases.response_template_split import cases, prompt, servers
from tool_cases.shared import TOOLS, USER

FORMAT = Format(8020, servers("beam"), cases(), tools=TOOLS, user=USER, prompt=prompt)
