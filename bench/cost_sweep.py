"""Issue 22: the parsers' cost per character as adversarial outputs grow, and what one unit of
the per-call work budget (``DERENDER_MAX_CALL_TOKENS``) costs.

(a) Sweep: every parser pairing and adversarial output of ``tests/cost_cases.py`` (unclosed
    markers, repeated openers, long names and values, deep nesting, thousands of calls, a
    call of thousands of parameters closed or not, markup mixed at random), fed through
    ``derender.core.parsers.feed`` non-streaming (the whole text, final) and streamed (64
    characters a call, the parser state encoded after each); CPU seconds of the process per
    character, best of ``--repeats``, at each of ``--sizes``; printed: per pairing the worst
    ratio of the largest size's per-character time to the smallest's, and every case past
    ``--flag``. ``tests/test_cost_linear.py`` asserts the same at smaller sizes.
(b) Issue 22's report through the whole non-streaming chat core (``derender_chat``) on Qwen3
    (``layers/tokenizers/qwen3``, ``tool_parser`` qwen3_coder, or mimo/seed_oss with
    ``--tool-parser``): ``<tool_call>\\n<function=get_weather>\\n`` then
    ``<parameter=city>\\nParis\\n`` repeated without ``</parameter>`` to ``--ids`` ids
    (40,807 in the report: 3.2 s before the fix). CPU seconds, best of 3.
(c) One unit of the per-call budget at its dearest: a chat choice of ``--logprob-ids`` ids
    with 20 logprob candidates each (the most a model allows), parsed from its JSON body and
    derendered; CPU µs per unit (ids + positions + candidates), and the seconds the default
    budget (262,144 units) would take at that rate.

    python bench/cost_sweep.py                        # all three
    python bench/cost_sweep.py --only qwen3_coder     # the sweep of pairings naming it
    python bench/cost_sweep.py --no-sweep             # (b) and (c) only
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, machine_line, real_text_ids
from tokenizers import Tokenizer

sys.path.insert(0, str(REPO))

from derender.contract.requests import DerenderChatRequest
from derender.core.chat import derender_chat
from derender.core.registry import ServedModel, load_vocabulary, read_model_info
from derender.settings import Settings
from tests import cost_cases

QWEN3 = REPO / "layers" / "tokenizers" / "qwen3"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]


def sweep(args: argparse.Namespace) -> None:
    pairs = [p for p in cost_cases.PAIRS
             if args.only is None or args.only in cost_cases.pairing_name(*p)]
    sizes = tuple(args.sizes)
    print(f"(a) sweep: sizes {sizes} characters, best of {args.repeats}, CPU time; "
          f"ratio = per-character time at {sizes[-1]} / at {sizes[0]}")
    worst_all = (0.0, "")
    flagged = []
    for reasoning_parser, tool_parser in pairs:
        name = cost_cases.pairing_name(reasoning_parser, tool_parser)
        worst = (0.0, "")
        for result in cost_cases.sweep(sizes, [(reasoning_parser, tool_parser)], args.repeats):
            ratio = result.ratios[-1]
            label = f"{result.case} {'streamed' if result.streamed else 'whole'}"
            worst = max(worst, (ratio, label))
            if ratio > args.flag:
                flagged.append(cost_cases.describe(result))
        worst_all = max(worst_all, (worst[0], f"{name} {worst[1]}"))
        print(f"  {name:34} worst x{worst[0]:.2f} ({worst[1]})", flush=True)
    print(f"  worst of all: x{worst_all[0]:.2f} ({worst_all[1]}); past x{args.flag}: "
          f"{len(flagged)}")
    for line in flagged:
        print("   ", line)


def served(root: Path, tool_parser: str) -> ServedModel:
    folder = root / "qwen3"
    folder.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json",
                 "generation_config.json"):
        (folder / name).symlink_to(QWEN3 / name)
    (folder / "derender.json").write_text(json.dumps({
        "served_names": ["qwen3"], "tool_parser": tool_parser}))
    return ServedModel(read_model_info(folder), load_vocabulary(folder))


def best_cpu(run: object, repeats: int = 3) -> float:
    assert callable(run)
    best = float("inf")
    for _ in range(repeats):
        began = time.process_time()
        run()
        best = min(best, time.process_time() - began)
    return best


def issue_case(args: argparse.Namespace, root: Path) -> None:
    tokenizer = Tokenizer.from_file(str(QWEN3 / "tokenizer.json"))
    model = served(root, args.tool_parser)
    head = tokenizer.encode("<tool_call>\n<function=get_weather>\n",
                            add_special_tokens=False).ids
    unit = tokenizer.encode("<parameter=city>\nParis\n", add_special_tokens=False).ids
    ids = head + unit * ((args.ids - len(head)) // len(unit))
    body = DerenderChatRequest.model_validate({
        "model": "qwen3", "generate_response": {"request_id": "r", "choices": [
            {"index": 0, "token_ids": ids, "finish_reason": "length"}]},
        "chat_request": {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}})
    answer: dict[str, object] = {}

    def run() -> None:
        answer.update(derender_chat(body, model, 16)["choices"][0]["message"])

    seconds = best_cpu(run)
    calls = answer.get("tool_calls") or []
    arguments = json.loads(calls[0]["function"]["arguments"]) if calls else None  # type: ignore[index]
    print(f"(b) {args.tool_parser}: {len(ids)} ids, {(len(ids) - len(head)) // len(unit)} "
          f"unclosed <parameter=city>, non-streaming derender_chat: {seconds:.3f} s CPU "
          f"({seconds / len(ids) * 1e6:.1f} µs/id); the call's arguments: {arguments}")


def budget_unit(args: argparse.Namespace, root: Path) -> None:
    tokenizer = Tokenizer.from_file(str(QWEN3 / "tokenizer.json"))
    model = ServedModel(read_model_info(QWEN3), load_vocabulary(QWEN3))
    n, top = args.logprob_ids, 20
    ids = real_text_ids(tokenizer, n)
    raw = json.dumps({"model": "qwen3", "generate_response": {"request_id": "r", "choices": [{
        "index": 0, "token_ids": ids, "finish_reason": "length", "logprobs": {"content": [
            {"token_id": i, "logprob": -0.5, "top_logprobs": [
                {"token_id": (i + k) % 150000, "logprob": -1.0 - k} for k in range(top)]}
            for i in ids]}}]},
        "chat_request": {"messages": [{"role": "user", "content": "hi"}], "logprobs": True,
                         "top_logprobs": top}})
    units = n * (2 + top)

    def run() -> None:
        derender_chat(DerenderChatRequest.model_validate_json(raw), model, 16)

    seconds = best_cpu(run)
    budget = Settings(models_dir=QWEN3).max_call_tokens
    per_unit = seconds / units
    print(f"(c) {n} ids × {top} logprob candidates ({units} units, body {len(raw) / 1e6:.1f} MB):"
          f" {seconds:.2f} s CPU parsing and derendering = {per_unit * 1e6:.1f} µs/unit; the "
          f"default budget of {budget} units at that rate: {budget * per_unit:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4000, 16000, 64000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--flag", type=float, default=2.5)
    parser.add_argument("--only", default=None, help="pairings whose name contains this")
    parser.add_argument("--no-sweep", action="store_true")
    parser.add_argument("--ids", type=int, default=40807)
    parser.add_argument("--tool-parser", default="qwen3_coder")
    parser.add_argument("--logprob-ids", type=int, default=8000)
    args = parser.parse_args()
    print(machine_line())
    if not args.no_sweep:
        sweep(args)
    with tempfile.TemporaryDirectory() as tmp:
        issue_case(args, Path(tmp))
        budget_unit(args, Path(tmp))


if __name__ == "__main__":
    main()
