"""Core decode cost: derender's non-streaming chat core against a bare ``tokenizers`` decode.

For each model and output length (real English + multilingual text from ``bench/corpus.txt``,
ending with the EOS id, finish_reason "stop") this times, interleaved in one loop so that
machine noise hits all three alike:

  (a) ``Tokenizer.decode(ids, skip_special_tokens=True)``: the floor any Python service pays;
  (b) ``derender_chat(body, model, ...)``: the whole non-streaming chat core (bounds, stop
      token, detokenization, response dict), the request body validated before timing;
  (c) ``detokenize(vocab, seed, ids, skip_special=True)`` alone.

It prints a markdown table of medians and the ratios (b)/(a), (c)/(a). Target: (b)/(a) <= 2
at 8k tokens.

    python bench/core_decode.py                      # repo models, default repetitions
    python bench/core_decode.py --model mistral-7b=/path/to/folder --scale 0.2
    python bench/core_decode.py --profile            # also: where (b) spends its time at 8k
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from _common import (
    REPO,
    load_line,
    machine_line,
    median,
    real_text_ids,
    revision,
    time_interleaved,
)
from tokenizers import Tokenizer

from derender.contract.requests import DerenderChatRequest
from derender.core.bounds import check_token_range
from derender.core.chat import derender_chat
from derender.core.decoding.detokenizer import DecodeWindow, detokenize, seed_window
from derender.core.decoding.vocab import Vocabulary
from derender.core.registry import ServedModel, load_vocabulary, read_model_info

DEFAULT_MODELS = {
    "qwen3": REPO / "layers" / "tokenizers" / "qwen3",
    "mistral-7b": REPO / "tests" / "models" / "mistral-7b",
}
SIZES = (256, 1024, 8192)
REPEATS = {256: 3000, 1024: 1200, 8192: 200}
"""Interleaved rounds per size at ``--scale 1`` (each round times all three variants once)."""
TARGET_SIZE = 8192
TARGET_RATIO = 2.0
MAX_N_SEQUENCES = 16384
WARMUP = 20
PROFILES: list[str] = []


@dataclass
class Case:
    """One model and output length, ready to time."""

    model: str
    tokens: int
    rounds: int
    funcs: list[Callable[[], object]]
    exact_blocks: str
    passes: list[tuple[float, float, float]] = field(default_factory=list)
    """Per pass: median ns of (a), (b), (c)."""
    samples: list[list[float]] = field(default_factory=lambda: [[], [], []])

    def med(self, index: int) -> float:
        return median(self.samples[index])

    def ratio(self, index: int) -> float:
        return self.med(index) / self.med(0)

    def ratio_range(self, index: int) -> tuple[float, float]:
        ratios = [p[index] / p[0] for p in self.passes]
        return min(ratios), max(ratios)


def chat_body(model_name: str, ids: list[int]) -> DerenderChatRequest:
    return DerenderChatRequest.model_validate({
        "model": model_name,
        "generate_response": {"request_id": "bench", "choices": [
            {"index": 0, "token_ids": ids, "finish_reason": "stop"}]},
        "prompt_tokens": 12,
        "chat_request": {"model": model_name, "messages": [{"role": "user", "content": "hi"}]},
    })


def exact_path_blocks(model: ServedModel, ids: list[int]) -> str:
    """How many detokenizer blocks miss the fast path (diagnostic; uses private helpers)."""
    from derender.core.decoding import detokenizer as det

    fast = getattr(det, "_fast_block", None)
    exact = getattr(det, "_exact_block", None)
    block = getattr(det, "BLOCK", None)
    if fast is None or exact is None or not isinstance(block, int):
        return "n/a"
    vocab = model.vocab
    kept = [i for i in ids if i not in vocab.special_ids]
    window = DecodeWindow()
    missed = total = 0
    for start in range(0, len(kept), block):
        chunk = kept[start:start + block]
        total += 1
        result = fast(vocab, window, chunk) if vocab.fast_path else None
        if result is None:
            missed += 1
            result = exact(vocab, window, chunk)
        window = result[1]
    return f"{missed}/{total}"


def exact_path_ids(vocab: Vocabulary, ids: list[int]) -> int:
    """Ids the detokenizer sends through its exact per-token path (counted by wrapping it)."""
    from derender.core.decoding import detokenizer as det

    count = 0
    original = det._exact_block

    def counting(vocab: Vocabulary, window: DecodeWindow, block: list[int]
                 ) -> tuple[str, DecodeWindow]:
        nonlocal count
        count += len(block)
        return original(vocab, window, block)

    det._exact_block = counting  # type: ignore[assignment]
    try:
        detokenize(vocab, DecodeWindow(), ids, True)
    finally:
        det._exact_block = original  # type: ignore[assignment]
    return count


def stage_breakdown(name: str, model: ServedModel, tokenizer: Tokenizer, ids: list[int],
                    rounds: int) -> str:
    """Median µs of the steps (b) is made of, at one size (uses private detokenizer helpers)."""
    from derender.core.decoding import detokenizer as det

    vocab = model.vocab
    kept = [i for i in ids[:-1] if i not in vocab.special_ids]
    pieces = [vocab.pieces[i] for i in kept]
    block = det.BLOCK
    blocks: list[tuple[DecodeWindow, list[int]]] = []
    window = DecodeWindow()
    for start in range(0, len(kept), block):
        chunk = kept[start:start + block]
        blocks.append((window, chunk))
        result = det._fast_block(vocab, window, chunk) if vocab.fast_path else None
        window = (result or det._exact_block(vocab, window, chunk))[1]
    missed = [(w, c) for w, c in blocks
              if not vocab.fast_path or det._fast_block(vocab, w, c) is None]
    special = vocab.special_ids
    exact_ids = exact_path_ids(vocab, ids[:-1])
    stages: list[tuple[str, Callable[[], object]]] = [
        ("(a) tokenizers decode, for reference",
         lambda: tokenizer.decode(ids, skip_special_tokens=True)),
        ("check_token_range (min + max over the ids)",
         lambda: check_token_range(ids, vocab.size, "choice 0")),
        ("special-id test `special.isdisjoint(ids)` (the filter runs only if one occurs)",
         lambda: special.isdisjoint(kept)),
        ("ids → pieces lookup", lambda: [vocab.pieces[i] for i in kept]),
        ("decoder over all pieces in one call (the fast path's floor)",
         lambda: vocab.join(pieces)),
        ("fast-path attempts, every block (incl. failed ones)",
         lambda: [det._fast_block(vocab, w, c) for w, c in blocks]),
        (f"`_block` on the {len(missed)} block(s) missing the fast path (failed attempt, "
         f"then halves; {exact_ids} ids reach the exact per-token path)",
         lambda: [det._block(vocab, w, c) for w, c in missed]),
    ]
    medians = [median(c) for c in time_interleaved([f for _, f in stages], rounds, WARMUP)]
    lines = [f"Stages of (b) for {name}, {len(ids)} ids (median µs, {rounds} rounds):", "",
             "| stage | µs |", "|---|---:|"]
    lines += [f"| {label} | {ns / 1e3:.1f} |" for (label, _), ns in zip(stages, medians,
                                                                         strict=True)]
    return "\n".join(lines)


def profile_chat(name: str, model: ServedModel, body: DerenderChatRequest, calls: int) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        derender_chat(body, model, MAX_N_SEQUENCES)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(12)
    text = out.getvalue()
    start = text.find("   ncalls")
    return (f"cProfile of {calls} × derender_chat, {name}, "
            f"{len(body.generate_response.choices[0].token_ids or [])} ids (sorted by tottime):"
            f"\n\n```\n{text[start:].rstrip()}\n```")


def prepare_model(name: str, folder: Path, scale: float, profile: bool) -> list[Case]:
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    model = ServedModel(info=read_model_info(folder), vocab=load_vocabulary(folder))
    vocab = model.vocab
    if vocab.eos_id is None:
        raise RuntimeError(f"{name}: tokenizer_config.json names no eos_token")
    seed = seed_window(vocab, None, True)
    cases: list[Case] = []
    for size in SIZES:
        ids = [*real_text_ids(tokenizer, size - 1), vocab.eos_id]
        body = chat_body(name, ids)

        # Sanity: the core returns what a plain decode gives for clean text ending in EOS.
        expected = tokenizer.decode(ids, skip_special_tokens=True)
        choice = derender_chat(body, model, MAX_N_SEQUENCES)["choices"][0]
        if choice["message"]["content"] != expected or choice["finish_reason"] != "stop":
            print(f"WARNING {name} {size}: derender_chat content differs from "
                  "tokenizers.decode", file=sys.stderr)
        if detokenize(vocab, seed, ids, True)[0] != expected:
            print(f"WARNING {name} {size}: detokenize differs from tokenizers.decode",
                  file=sys.stderr)

        rounds = max(31, int(REPEATS[size] * scale))
        cases.append(Case(name, size, rounds, [
            lambda ids=ids: tokenizer.decode(ids, skip_special_tokens=True),
            lambda body=body: derender_chat(body, model, MAX_N_SEQUENCES),
            lambda ids=ids: detokenize(vocab, seed, ids, True),
        ], exact_path_blocks(model, ids)))
        if profile and size == TARGET_SIZE:
            PROFILES.append(stage_breakdown(name, model, tokenizer, ids, rounds))
            PROFILES.append(profile_chat(name, model, body, max(20, rounds // 2)))
    return cases


def table(cases: list[Case]) -> str:
    lines = [
        "| model | output tokens | rounds | (a) tokenizers decode µs | (b) derender_chat µs "
        "| (c) detokenize µs | (b)/(a) | (b)/(a) per pass | (c)/(a) "
        "| blocks missing the fast path |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in cases:
        low, high = c.ratio_range(1)
        lines.append(
            f"| {c.model} | {c.tokens} | {c.rounds}×{len(c.passes)} | {c.med(0) / 1e3:.1f} "
            f"| {c.med(1) / 1e3:.1f} | {c.med(2) / 1e3:.1f} | {c.ratio(1):.2f}× "
            f"| {low:.2f}–{high:.2f}× | {c.ratio(2):.2f}× | {c.exact_blocks} |")
    return "\n".join(lines)


def parse_models(values: list[str]) -> dict[str, Path]:
    models = dict(DEFAULT_MODELS)
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--model expects NAME=FOLDER, got {value!r}")
        models[name] = Path(path)
    return models


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", default=[], metavar="NAME=FOLDER",
                        help="add or replace a model folder (defaults: qwen3 from "
                             "layers/tokenizers, mistral-7b from tests/models)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="benchmark only these models")
    parser.add_argument("--profile", action="store_true",
                        help=f"also break (b) down into stages and cProfile it at {TARGET_SIZE}")
    parser.add_argument("--passes", type=int, default=3,
                        help="passes over every case (default 3)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply the number of rounds (default 1.0)")
    args = parser.parse_args(argv)

    models = parse_models(args.model)
    if args.only:
        models = {n: p for n, p in models.items() if n in args.only}
    load_before = load_line()
    cases: list[Case] = []
    skipped: list[str] = []
    for name, folder in models.items():
        try:
            cases.extend(prepare_model(name, folder, args.scale, args.profile))
        except Exception as exc:  # a model that cannot load is reported, not fatal
            skipped.append(f"{name} ({folder}): {type(exc).__name__}: {exc}")
            print(f"  {name}: SKIPPED: {exc}", file=sys.stderr)

    # Passes over every case, so slow drifts of the machine spread over all of them.
    for number in range(args.passes):
        for case in cases:
            columns = time_interleaved(case.funcs, case.rounds, WARMUP)
            case.passes.append((median(columns[0]), median(columns[1]), median(columns[2])))
            for target, column in zip(case.samples, columns, strict=True):
                target.extend(column)
        print(f"  pass {number + 1}/{args.passes} done", file=sys.stderr)

    print(f"machine: {machine_line()}; derender {revision()}")
    print(f"before: {load_before}; after: {load_line()}")
    print()
    print(table(cases))
    print()
    print(f"Medians over all rounds of {args.passes} passes (gc disabled while timing); "
          f"'per pass' is the spread of the pass medians' ratio. Target: (b)/(a) ≤ "
          f"{TARGET_RATIO:g}× at {TARGET_SIZE} tokens.")
    for c in cases:
        if c.tokens == TARGET_SIZE:
            verdict = "met" if c.ratio(1) <= TARGET_RATIO else (
                f"MISSED by {(c.ratio(1) / TARGET_RATIO - 1) * 100:.0f}%")
            print(f"- {c.model}: (b)/(a) = {c.ratio(1):.2f}× → {verdict}")
    for line in skipped:
        print(f"- skipped {line}")
    for text in PROFILES:
        print()
        print(text)
    return 1 if skipped else 0


if __name__ == "__main__":
    sys.exit(main())
