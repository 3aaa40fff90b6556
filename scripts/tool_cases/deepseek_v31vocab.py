"""deepseek_v3 and deepseek_v31 on DeepSeek-V3.1's own vocabulary (cases 367-404): the cases of
``deepseek`` (200-237) again, on the ``deepseek-v3.1`` test model (``<think>`` 128798, the
tool-call markers at the same ids as V4's, EOS 1; DeepSeek-V3.1's real chat template, which
reads ``thinking`` and defaults it to false, so the prompt ends ``<｜Assistant｜></think>``).

Usage (``scripts/peer-model-folders.sh deepseek-v3.1`` first copies tests/models/deepseek-v3.1,
tokenizer unpacked, into the peer's models folder):

    for spec in "8710 deepseek_v3" "8711 deepseek_v31"; do set -- $spec
        "$VLLM_PEER"/start.sh deepseek-v3.1 $1 --tool-call-parser $2 --enable-auto-tool-choice
    done
    "$VLLM_PEER"/start.sh deepseek-v3.1 8712 --tool-call-parser deepseek_v3 \\
        --reasoning-parser deepseek_r1 --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh deepseek-v3.1 8713 --tool-call-parser deepseek_v31 \\
        --reasoning-parser deepseek_r1 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py deepseek_v31vocab 8710 8711 8712 8713
"""

from __future__ import annotations

from record_tool_fixtures import ROOT, Format

from tool_cases.deepseek import cases, servers

MODEL = "deepseek-v3.1"
TOKENIZER = ROOT / "tests" / "models" / MODEL / "tokenizer.json"

FORMAT = Format(367, servers(MODEL, TOKENIZER, "-v31vocab"), cases())
