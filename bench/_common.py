"""Shared helpers of the benchmarks: the text corpus, clean id slices, statistics, machine info."""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tokenizers import Tokenizer

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
CORPUS = BENCH_DIR / "corpus.txt"
REPLACEMENT_CHAR = "\ufffd"


def real_text_ids(tokenizer: Tokenizer, count: int, corpus: Path = CORPUS) -> list[int]:
    """``count`` ids of real text (the corpus, repeated as needed) that decode cleanly.

    The slice starts at the first offset where neither end splits a multi-byte character, so
    the ids look like a finished generation (no U+FFFD in the decoded text).
    """
    text = corpus.read_text(encoding="utf-8")
    ids: list[int] = tokenizer.encode(text, add_special_tokens=False).ids
    repeats = 1
    while len(ids) < count + 64:
        repeats += 1
        ids = tokenizer.encode(text * repeats, add_special_tokens=False).ids
    for start in range(64):
        chosen = ids[start:start + count]
        if REPLACEMENT_CHAR not in tokenizer.decode(chosen, skip_special_tokens=False):
            return chosen
    raise RuntimeError(f"no clean slice of {count} ids found in {corpus}")


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    index = min(len(sorted_values) - 1, max(0, round(fraction * (len(sorted_values) - 1))))
    return sorted_values[index]


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_line() -> str:
    """One line describing where the figures were taken."""
    return (f"{os.cpu_count()} CPUs, {cpu_model()}, Python {platform.python_version()} "
            f"({platform.python_implementation()}), {platform.system()} {platform.release()}")


def load_line() -> str:
    """The machine's load averages: other work running beside the benchmark."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min)"


def revision() -> str:
    """The checkout's commit, and whether src/ has uncommitted changes."""
    import subprocess

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                              check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return "unknown revision"
    dirty = git("status", "--porcelain", "--", "src")
    return f"commit {commit}" + (" (src/ modified)" if dirty else "")


def time_interleaved(funcs: Sequence[Callable[[], object]], rounds: int, warmup: int = 200
                     ) -> list[list[float]]:
    """Ns samples of each function, called in rotating order, round after round."""
    samples: list[list[int]] = [[] for _ in funcs]
    order = list(range(len(funcs)))
    clock = time.perf_counter_ns
    for _ in range(warmup):
        for f in funcs:
            f()
    gc.collect()
    gc.disable()
    try:
        for r in range(rounds):
            shift = r % len(order)
            for index in order[shift:] + order[:shift]:
                f = funcs[index]
                t0 = clock()
                f()
                samples[index].append(clock() - t0)
    finally:
        gc.enable()
    return [[float(s) for s in column] for column in samples]


def stream_summary(ratio: float, last: int, target: float, sizes: list[int]) -> None:
    """The closing lines of a per-position stream benchmark (``engine_stream``,
    ``pythonic_stream``): the last position against chunk 10, and the largest state."""
    print()
    print(f"Target: flat, chunk {last} / chunk 10 ≤ {target:g}×: {ratio:.2f}× → "
          + ("met" if ratio <= target else "MISSED"))
    top = max(sizes)
    print()
    print(f"Largest stream_state: {top} characters (chunk {sizes.index(top) + 1}); first 100 "
          f"chunks {max(sizes[:100])}, last 100 {max(sizes[-100:])}.")
    print()


def run_formats(description: str, keys: Sequence[str],
                run: Callable[[str, argparse.Namespace, Path], None]) -> None:
    """The command line of a per-format stream benchmark: ``--only KEY``, ``--scale``,
    ``--passes``; ``run(key, args, scratch folder)`` for each format asked."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--only", choices=sorted(keys))
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for key in keys:
            if args.only in (None, key):
                run(key, args, Path(tmp))
