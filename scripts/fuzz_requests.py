"""Mutation fuzzing of both derender routes (issue 22): no input may get a 5xx.

Seeds are the recorded vLLM requests (``tests/fixtures/vllm-0.33``) of the embedded model
(``qwen3``, 80 %) and of the other models (whose bodies then select a model this app does
not serve, or half of the time are re-pointed at ``qwen3``); a seed's ``stream_state`` (vLLM's
JSON state) is dropped, so streaming seeds are first calls. Each generated request applies one
to three mutations at random places of a seed:

- a number (or any value) becomes a non-finite string (``"NaN"``, ``"-inf"``, ``"1e400"``...)
  or a non-finite JSON literal (``NaN``, ``Infinity``, ``1e400``);
- a value becomes JSON nested 2 to 3,000 levels deep (lists, objects or both), also in every
  free-form field (``tools``, ``chat_template_kwargs``, ``tool_choice``, ``response_format``,
  ``messages``, ``kv_transfer_params``, ``metrics``);
- a value swaps its type (string, integer, huge or negative integer, float, boolean, null,
  list, object, long or lone-surrogate string);
- a key is dropped, or an unknown one added.

The bodies go to the app in the process (``create_app`` behind Starlette's test client, the
app ``make run`` serves with a fixed signing key). Printed: requests and statuses per route,
and every 5xx with its body; the exit status is 1 when there was any.

    PYTHONPATH=src .venv/bin/python scripts/fuzz_requests.py --requests 20000 --seed 22
"""

from __future__ import annotations

import argparse
import collections
import copy
import functools
import json
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from derender_testing.recorded import case_paths, load_case

ROOT = Path(__file__).resolve().parent.parent

LAYER_MODELS = ROOT / "layers" / "tokenizers"
CHAT = "/v1/chat/completions/derender"
COMPLETIONS = "/v1/completions/derender"
SIGNING_KEYS = "f1:fuzz-signing-key-0123456789abcdef"

NON_FINITE_STRINGS = ("NaN", "nan", "-NaN", "Infinity", "-Infinity", "inf", "-inf", "+inf",
                      "infinity", "1e400", "-1e400", "1E999", "9" * 400, "0x1p1024")
NON_FINITE_LITERALS = ("NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1" + "0" * 5000)
FREE_FORM = ("tools", "chat_template_kwargs", "tool_choice", "response_format", "messages",
             "kv_transfer_params", "metrics", "prompt", "stream_state", "speculative_decoding",
             "per_step_accepted", "stop")

Path_ = tuple[str | int, ...]


@functools.cache
def seeds(route: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The recorded requests of ``route`` (each once): the embedded model's, the others'.
    Read once per process (the corpus is thousands of files); callers copy what they use."""
    found: list[Any] = []
    others: list[Any] = []
    seen: set[str] = set()
    for file in case_paths():
        case = load_case(file)
        if case.get("endpoint") != route:
            continue
        for call in case.get("calls", []):
            request = call.get("request")
            key = json.dumps(request, sort_keys=True)
            if isinstance(request, dict) and key not in seen:
                seen.add(key)
                (found if case.get("model") == "qwen3" else others).append(request)
    return tuple(found), tuple(others)


def places(value: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every (path, value) in ``value``, the root included."""
    yield path, value
    if isinstance(value, dict):
        for key, member in value.items():
            yield from places(member, (*path, key))
    elif isinstance(value, list):
        for index, member in enumerate(value):
            yield from places(member, (*path, index))


def put(root: Any, path: Path_, value: Any) -> Any:
    if not path:
        return value
    parent = root
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return root


class Mutator:
    """Applies mutations; deep values and raw literals are placeholders in the body, spliced
    into its text afterwards (``json.dumps`` could not write them)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.splices: dict[str, str] = {}

    def placeholder(self, text: str) -> str:
        name = f"__splice_{len(self.splices)}_{self.rng.getrandbits(32):08x}__"
        self.splices[name] = text
        return name

    def deep(self) -> str:
        rng = self.rng
        depth = rng.choice((2, 10, 100, 500, 900, 950, 955, 960, 975, 990, 999, 1000, 1001,
                            1100, 1500, 3000, rng.randint(2, 3000)))
        kind = rng.choice(("list", "object", "mixed"))
        opens, closes = [], []
        for level in range(depth):
            use_list = kind == "list" or (kind == "mixed" and level % 2 == 0)
            opens.append("[" if use_list else '{"k":')
            closes.append("]" if use_list else "}")
        leaf = rng.choice(('"x"', "1", "null", "{}", "[]", '"NaN"', "1.5"))
        return self.placeholder("".join(opens) + leaf + "".join(reversed(closes)))

    def swapped(self, current: Any) -> Any:
        rng = self.rng
        options: list[Any] = ["", "x" * rng.choice((1, 100, 10_000)), "\ud800", 0, -1,
                              2**31, 2**63, 10**30, -(10**30), 1.5, -0.0, True, False, None,
                              [], [1, "a", None], {}, {"a": [1]}, "0", "true", "[]", "{}",
                              rng.choice(NON_FINITE_STRINGS)]
        options = [o for o in options if type(o) is not type(current) or o != current]
        return copy.deepcopy(rng.choice(options))

    def mutate(self, body: Any) -> Any:
        rng = self.rng
        spots = list(places(body))
        path, value = rng.choice(spots)
        roll = rng.random()
        if roll < 0.25:  # non-finite in a number's place (numbers preferred)
            numbers = [(p, v) for p, v in spots if isinstance(v, int | float)
                       and not isinstance(v, bool)]
            if numbers and rng.random() < 0.8:
                path, value = rng.choice(numbers)
            new: Any = (rng.choice(NON_FINITE_STRINGS) if rng.random() < 0.7 else
                        self.placeholder(rng.choice(NON_FINITE_LITERALS)))
            return put(body, path, new)
        if roll < 0.5:  # deep nesting, free-form fields preferred
            free = [(p, v) for p, v in spots if p and p[-1] in FREE_FORM]
            if free and rng.random() < 0.7:
                path, value = rng.choice(free)
                if isinstance(value, list) and value and rng.random() < 0.5:
                    path = (*path, rng.randrange(len(value)))
            if isinstance(body, dict) and rng.random() < 0.15:  # a free-form field added
                holder = body.get("chat_request") or body.get("completion_request")
                target = holder if isinstance(holder, dict) else body
                target[rng.choice(FREE_FORM)] = self.deep()
                return body
            return put(body, path, self.deep())
        if roll < 0.85:
            return put(body, path, self.swapped(value))
        containers = [(p, v) for p, v in spots if isinstance(v, dict) and v]
        if not containers:
            return body
        path, value = rng.choice(containers)
        if rng.random() < 0.6:
            del value[rng.choice(list(value))]
        else:
            value[rng.choice(("extra", "__proto__", "", "generate_chunks", "stream"))] = (
                self.swapped(None))
        return body

    def text(self, body: Any) -> str:
        text = json.dumps(body, ensure_ascii=False)
        for name, raw in self.splices.items():
            text = text.replace(f'"{name}"', raw)
        return text


def generate(route: str, count: int, seed: int) -> Iterator[bytes]:
    rng = random.Random(f"{seed}:{route}")
    own, others = seeds(route)
    for _ in range(count):
        body = copy.deepcopy(rng.choice(own if rng.random() < 0.8 else others))
        if isinstance(body, dict) and isinstance(body.get("stream_state"), dict):
            body.pop("stream_state")
        if isinstance(body, dict) and rng.random() < 0.5:
            body["model"] = "qwen3"  # the model this app serves
        mutator = Mutator(rng)
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            body = mutator.mutate(body)
        yield mutator.text(body).encode("utf-8", "surrogatepass")


def run(count: int, seed: int, quiet: bool = False) -> dict[str, collections.Counter[int]]:
    """Send ``count`` requests per route; statuses per route (5xx bodies printed)."""
    from fastapi.testclient import TestClient  # noqa: PLC0415 - the app's dependencies

    from derender.app.main import create_app  # noqa: PLC0415
    from derender.settings import Settings  # noqa: PLC0415

    app = create_app(Settings(models_dir=LAYER_MODELS, signing_keys=SIGNING_KEYS))
    statuses: dict[str, collections.Counter[int]] = {}
    with TestClient(app, raise_server_exceptions=False) as client:
        for route in (CHAT, COMPLETIONS):
            counts: collections.Counter[int] = collections.Counter()
            started = time.monotonic()
            for raw in generate(route, count, seed):
                answer = client.post(route, content=raw,
                                     headers={"content-type": "application/json"})
                counts[answer.status_code] += 1
                if answer.status_code >= 500:
                    print(f"{route} {answer.status_code}: {answer.text[:300]}\n  body: "
                          f"{raw[:600]!r}", file=sys.stderr)
            statuses[route] = counts
            if not quiet:
                print(f"{route}: {sum(counts.values())} requests in "
                      f"{time.monotonic() - started:.0f} s, "
                      f"5xx: {sum(n for s, n in counts.items() if s >= 500)}, "
                      f"statuses {dict(sorted(counts.items()))}")
    return statuses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=20_000, help="per route")
    parser.add_argument("--seed", type=int, default=22)
    args = parser.parse_args()
    statuses = run(args.requests, args.seed)
    return 1 if any(s >= 500 for counts in statuses.values() for s in counts) else 0


if __name__ == "__main__":
    sys.exit(main())
