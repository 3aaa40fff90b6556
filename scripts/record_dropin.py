"""Record issue 21's behaviours from the real vLLM 0.33.0 render server (cases 2000-2299).

    PEER_HOME=$HOME/vllm-peer .venv/bin/python scripts/record_dropin.py tools [PORT [MODULE:KEY...]]
    PEER_HOME=$HOME/vllm-peer .venv/bin/python scripts/record_dropin.py others [PORT]

``tools`` (2000-…): for every tool format's server (the servers of ``tool_cases/*.py``), the
output its own "no tools" recording used, in a request without ``tools``, with
``"tools": []`` and under ``tool_choice`` "none"; each non-streaming then streamed ("small").
The model folders must be in the peer's models folder (``scripts/peer-model-folders.sh``).
Each server is started with the peer kit's ``start.sh`` on PORT (default 8800), recorded, and
stopped.

``others`` (2200-…): section 2's single behaviours and section 3's envelope edges (see
``OTHERS`` below), on the servers they name.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from derender_testing.recorded import write_case

sys.path.insert(0, str(Path(__file__).resolve().parent))

import record_tool_fixtures as rtf

sys.modules.setdefault("record_tool_fixtures", rtf)

PEER_HOME = Path(os.environ.get("PEER_HOME", Path.home() / "vllm-peer"))
_PEER = os.environ.get("VLLM_PEER")
"""The folder of the vLLM 0.33 peer kit's scripts (``install.sh``, ``start.sh``)."""
START = Path(_PEER) / "start.sh" if _PEER else None

TOOL_SERVERS: list[tuple[str, str, int]] = [
    # (module, server key, the case whose output is used)
    ("edge_cases", "hermes", 1518), ("edge_cases", "qwen3_coder", 1524),
    ("edge_cases", "mistral", 1530), ("edge_cases", "mistral-v3", 1534),
    ("no_tools", "llama3_json", 1546), ("no_tools", "pythonic", 1548),
    ("no_tools", "deepseek_v3", 1550), ("no_tools", "deepseek_v31", 1552),
    ("harmony", "harmony", 327),
    ("deepseek_dsml", "v32", 441), ("deepseek_dsml", "v4", 503), ("deepseek_dsml", "v41", 567),
    ("engine_alone", "v4_t", 1324), ("engine_alone", "glm_t", 1306),
    ("glm", "glm45", 651), ("glm", "glm47", 707),
    ("minimax", "m2", 763), ("minimax", "m3", 817),
    ("qwen3_family", "mimo", 895), ("qwen3_family", "step3p5", 951),
    ("qwen3_family", "seed_oss", 1009), ("qwen3_family", "nemotron_v3", 1061),
    ("kimi", "kimi_k2", 1113), ("gemma4", "gemma4", 1195),
    # vLLM's aliases (2144-2161): qwen3_xml (qwen3_coder), qwen3_json (hermes), llama4_json
    ("qwen3_family", "qwen3_xml", 835), ("qwen3_family", "qwen3_json", 843),
    ("qwen3_family", "llama4_json", 851),
]
MODES: list[tuple[str, bool, dict[str, Any]]] = [
    ("i21_no_tools", False, {}), ("i21_empty_tools", False, {"tools": []}),
    ("i21_tool_choice_none", True, {"tool_choice": "none"})]


def start(model: str, port: int, flags: list[str]) -> int:
    if START is None:
        sys.exit("set VLLM_PEER to the vLLM 0.33 peer kit's folder (its start.sh)")
    flags = list(flags)
    if "--served-model-name" in flags:
        at = flags.index("--served-model-name")
        del flags[at:at + 2]
    for attempt in range(3):  # start.sh gives up after 180 s: a loaded machine needs more
        out = subprocess.run([str(START), model, str(port), *flags], check=attempt == 2,
                             text=True, capture_output=True,
                             env={**os.environ, "PEER_HOME": str(PEER_HOME)})
        if out.returncode == 0:
            break
    return int(out.stdout.strip().splitlines()[-1])


def stop(pid: int) -> None:
    subprocess.run(["kill", str(pid)], check=False)
    subprocess.run(["sh", "-c", f"while kill -0 {pid} 2>/dev/null; do sleep 0.2; done"],
                   check=False, timeout=60)


def tool_prompt(fmt: rtf.Format) -> Any:
    """The format's prompt, rendered without ``tools`` when they are ``[]`` (refused)."""
    def prompt(port: int, tokenizer: Any, chat_request: dict[str, Any]) -> list[int]:
        if chat_request.get("tools") == []:
            chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
        return fmt.prompt(port, tokenizer, chat_request)
    return prompt


def record_tools(port: int, only: list[str], first: int = 2000) -> None:
    """The servers named ``module:key`` in ``only`` (all if empty), in that order, numbered
    by their place in ``TOOL_SERVERS``."""
    places = {f"{m}:{k}": at for at, (m, k, _) in enumerate(TOOL_SERVERS)}
    for name in only or list(places):
        at = places[name]
        module, key, source = TOOL_SERVERS[at]
        number = first + at * len(MODES) * 2
        fmt = importlib.import_module(f"tool_cases.{module}").FORMAT
        case = fmt.cases[source - fmt.first]
        server = dataclasses.replace(fmt.servers[key], slug=f"i21-{fmt.servers[key].slug}")
        base = {k: v for k, v in case.request.items() if k not in ("tools", "tool_choice")}
        cases = [dataclasses.replace(case, shape=shape, tools=tools,
                                     request={**base, **request}, stream=stream)
                 for shape, tools, request in MODES for stream in (None, "small")]
        sub = rtf.Format(number, {key: server}, cases, tools=fmt.tools, user=fmt.user,
                         encode=fmt.encode, prompt=tool_prompt(fmt))
        pid = start(server.model, port, server.flags)
        try:
            tokenizer = rtf.Tokenizer.from_file(str(server.tokenizer))
            for offset, c in enumerate(sub.cases):
                data = rtf.record(sub, c, number + offset, port, tokenizer)
                data["features"] = sorted({*data["features"], "issue21:tools_absent"})
                data["description"] += f" (issue 21; output of case {source})"
                out = write_case(rtf.FIXTURES, data["name"], rtf.layout(data))
                print(out.name, data["kind"], flush=True)
        finally:
            stop(pid)


def main() -> None:
    what = sys.argv[1]
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 8800
    if what == "tools":
        record_tools(port, sys.argv[3:])
    else:
        import record_dropin_others  # noqa: PLC0415 (it imports this module)
        record_dropin_others.main(port, sys.argv[3:])


if __name__ == "__main__":
    main()
