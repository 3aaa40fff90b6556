"""Cold start and warm memory of a Lambda function, from the built layers, on this machine.

    make layers LAYER_ARCH=x86_64 LAYERS=build/layers-host   # this machine's architecture
    python bench/cold_start.py [--layers build/layers-host] [--rounds 15] [--warm-rounds 20]
        [--shipped-only] [--compare before=build/layers-before]

Each run is a fresh Python 3.12 process with only the dependencies layer and the chat
function's folder on ``sys.path`` (``bench/_cold_start_child.py``): the time from starting the
process to the first response through the real handler (and the CPU time the process used
until then, which other work on the machine inflates less), split into imports, init (the app
and the default model) and the first call, then the resident memory after serving every event of
``events/``, an 8,000-token chat response and the largest request Lambda accepts
``--warm-rounds`` times, and the slowest of those warm calls. Three builds run
interleaved, round by round, so machine noise hits each alike:

- ``shipped``: the layers as built (byte-compiled, decode-only tokenizer.json);
- ``no .pyc``: the same without byte-compiled files (Lambda's /opt is read-only, so nothing
  gets cached: every cold start compiles every module);
- ``full tokenizer.json``: the original Qwen3 file (with its BPE merges) instead.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import REPO, load_line, machine_line, median, percentile, real_text_ids
from tokenizers import Tokenizer

CHILD = Path(__file__).resolve().parent / "_cold_start_child.py"
IM_END = 151645
LAMBDA_PAYLOAD_BYTES = 6 * 1024 * 1024


def lambda_python() -> str:
    """A Python 3.12, the Lambda runtime's version (the layer is byte-compiled for it)."""
    found = subprocess.run([str(REPO / "scripts/lambda-python.sh")], capture_output=True,
                           text=True, check=False)
    if found.returncode != 0:
        sys.exit("no Python 3.12 found (set LAMBDA_PYTHON)")
    return found.stdout.strip()


def chat_event(ids: list[int], choices: int) -> dict[str, object]:
    event: dict[str, object] = json.loads((REPO / "events/http-api-v2.chat.json").read_text())
    body = json.loads(str(event["body"]))
    body["generate_response"]["choices"] = [
        {"index": i, "token_ids": ids, "finish_reason": "stop"} for i in range(choices)]
    request = body.setdefault("chat_request", {"messages": [{"role": "user", "content": "hi"}]})
    request["n"] = choices
    event["body"] = json.dumps(body, separators=(",", ":"))
    return event


def write_events(folder: Path) -> tuple[int, int]:
    """``events/`` and a chat answering with 8,000 tokens of real text into ``folder``; beside
    it ``largest.json``, the largest request Lambda accepts (a 6 MB synchronous payload):
    as many choices of Qwen3's longest output (40,960 tokens, max_model_len) as fit. Returns
    that request's size in bytes and its number of choices."""
    for event in (REPO / "events").glob("*.json"):
        shutil.copyfile(event, folder / event.name)
    tokenizer = Tokenizer.from_file(str(REPO / "layers/tokenizers/qwen3/tokenizer.json"))
    text = real_text_ids(tokenizer, 40959)
    (folder / "long.json").write_text(json.dumps(chat_event([*text[:8000], IM_END], 1)))
    choices = 1
    while len(json.dumps(chat_event([*text, IM_END], choices + 1))) <= LAMBDA_PAYLOAD_BYTES:
        choices += 1
    largest = json.dumps(chat_event([*text, IM_END], choices))
    (folder.parent / "largest.json").write_text(largest)
    return len(largest), choices


def run_once(python: str, deps: Path, models: Path, events: Path, warm_rounds: int
             ) -> dict[str, Any]:
    env = {"PATH": os.environ.get("PATH", ""), "DERENDER_MODELS_DIR": str(models),
           "PYTHONDONTWRITEBYTECODE": "1", "DERENDER_SIGNING_KEYS": "b1:" + "k" * 32}
    started = time.perf_counter()
    child = subprocess.Popen(
        [python, "-S", str(CHILD), str(deps), str(REPO / "functions/chat_completions"),
         str(events), str(warm_rounds), str(events.parent / "largest.json")],
        stdout=subprocess.PIPE, text=True, env=env)
    assert child.stdout is not None
    line = child.stdout.readline()
    answered = time.perf_counter()
    if line.strip() != "answered":
        sys.exit(f"the child failed before answering: {line!r}")
    result: dict[str, Any] = json.loads(child.stdout.readline())
    child.wait()
    result["total"] = answered - started
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=Path, default=REPO / "build/layers-host")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warm-rounds", type=int, default=20)
    parser.add_argument("--compare", action="append", default=[], metavar="LABEL=LAYERS",
                        help="another build's layers (e.g. before a change), run interleaved "
                             "with the others as the build LABEL")
    parser.add_argument("--shipped-only", action="store_true",
                        help="skip the no .pyc and full tokenizer.json builds")
    args = parser.parse_args()
    deps = args.layers / "deps/python"
    models = args.layers / "tokenizers/tokenizers"
    if not deps.is_dir() or not models.is_dir():
        sys.exit(f"no layers in {args.layers}: run `make layers LAYER_ARCH=$(uname -m | "
                 f"sed s/aarch64/arm64/) LAYERS={args.layers}` first")
    python = lambda_python()
    with tempfile.TemporaryDirectory() as tmp:
        events, no_pyc = Path(tmp) / "events", Path(tmp) / "no-pyc"
        events.mkdir()
        largest, choices = write_events(events)
        shutil.copytree(deps, no_pyc, ignore=shutil.ignore_patterns("__pycache__"))
        variants = {"shipped": (deps, models), "no .pyc": (no_pyc, models),
                    "full tokenizer.json": (deps, REPO / "layers/tokenizers")}
        if args.shipped_only:
            variants = {"shipped": variants["shipped"]}
        for label, other in (item.split("=", 1) for item in args.compare):
            variants[label] = (Path(other) / "deps/python", Path(other) / "tokenizers/tokenizers")
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
        run_once(python, deps, models, events, 0)  # page cache warm for every variant alike
        for _ in range(args.rounds):
            for name, (variant_deps, variant_models) in variants.items():
                results[name].append(run_once(python, variant_deps, variant_models, events,
                                              args.warm_rounds))
    print(f"# {machine_line()}; Lambda stand-in: {python} -S")
    print(f"# {load_line()}; {args.rounds} cold starts per build, interleaved")
    print("| build | first response p50 (p90) | CPU to first response | imports | "
          "init (app + model) | first call | RSS warm | peak RSS |")
    print("|---|---|---|---|---|---|---|---|")
    for name, runs in results.items():
        def ms(key: str, runs: list[dict[str, Any]] = runs) -> str:
            values = sorted(run[key] * 1000 for run in runs)
            return f"{median(values):.0f} ms"
        totals = sorted(run["total"] * 1000 for run in runs)
        warm = median([run["rss_warm_kb"] / 1024 for run in runs])
        peak = median([run["hwm_warm_kb"] / 1024 for run in runs])
        print(f"| {name} | {median(totals):.0f} ms ({percentile(totals, 0.9):.0f} ms) | "
              f"{ms('cpu')} | {ms('imports')} | {ms('init')} | {ms('first_call')} | "
              f"{warm:.0f} MB | {peak:.0f} MB |")
    invocations = int(results["shipped"][0]["invocations"])
    print(f"# RSS warm, peak RSS: after {invocations} invocations (every event of events/ and "
          f"an 8,000-token chat, {args.warm_rounds} times)")
    shipped = results["shipped"]
    print(f"# then the largest request Lambda accepts ({largest:,} bytes: chat, "
          f"{choices} choices of 40,960 tokens), warm: "
          f"{median([run['largest'] * 1000 for run in shipped]):.0f} ms, peak RSS "
          f"{median([run['hwm_largest_kb'] / 1024 for run in shipped]):.0f} MB (p50, shipped)")


if __name__ == "__main__":
    main()
