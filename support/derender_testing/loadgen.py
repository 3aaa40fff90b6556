"""Load generator: many concurrent clients against one derender server, every stream checked.

Shared by ``tests/test_load.py`` (a bounded soak on every test run), ``tests/test_concurrency.py``
(the same cases from a thread pool, in process) and ``bench/load.py`` (the figures of
docs/benchmarks.md §6). Not a test module itself.

A *case* is one client action built from real text (slices of ``bench/corpus.txt`` encoded by
the model's own ``tokenizers`` tokenizer):

- ``chat`` / ``completions``: a non-streaming derender of 1-3 choices (completions sometimes
  two ``generate_responses``);
- ``chat stream`` / ``completions stream``: the non-streaming answer for some ids (the oracle),
  then the same ids as engine chunks of random sizes (empty ones too), sent one
  ``generate_chunk`` per call or as ``generate_chunks`` batches, each call carrying the
  ``stream_state`` the previous call of that choice returned; sometimes n > 1 (one state per
  choice index, calls of the choices interleaved), stop strings taken from the text, logprobs,
  an EOS ending, a prompt;
- ``parser stream``: a chat stream of the ``qwen3-parsed`` model (Qwen3 with the qwen3 reasoning
  and hermes tool parsers): ``<think>`` reasoning ``</think>``, then content or a
  ``<tool_call>`` with JSON arguments.

Each stream's chunks are folded per choice (content, reasoning, tool calls, logprobs, the one
finish_reason and its stop_reason) and must equal the oracle's choices exactly. A case is a
generator (``run_case``) that yields HTTP-shaped calls and receives the answers, so the same
case runs over HTTP (``run_load``, asyncio keep-alive connections) or in process (``drive``).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from derender_testing.servers import LocalServer, uvicorn_app

ROOT = Path(__file__).resolve().parents[2]  # the repository (support/derender_testing/../..)
CORPUS = ROOT / "bench" / "corpus.txt"
MODEL_FOLDERS = {"qwen3": ROOT / "layers" / "tokenizers" / "qwen3",
                 "mistral-7b": ROOT / "tests" / "models" / "mistral-7b"}
PARSED = "qwen3-parsed"
"""Served name of a second Qwen3 folder, configured with parsers through DERENDER_PARSERS."""
TOKENIZER_OF = {"qwen3": "qwen3", "mistral-7b": "mistral-7b", PARSED: "qwen3"}
PARSERS_ENV = f"{PARSED}:qwen3:hermes"
SIGNING_KEYS = "load:" + "0123456789abcdef" * 2
CHAT = "/v1/chat/completions/derender"
COMPLETIONS = "/v1/completions/derender"
PATHS = {"chat": CHAT, "completions": COMPLETIONS}
EOS = {"qwen3": "<|im_end|>", "mistral-7b": "</s>"}
PROMPTS = {"qwen3": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
           "mistral-7b": "[INST] hi [/INST]"}
MESSAGES = [{"role": "user", "content": "hi"}]
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "notes": {"type": "string"}}, "required": ["city"]}}}]
KINDS = {"chat": 20, "completions": 15, "chat stream": 30, "completions stream": 25,
         "parser stream": 10}
"""Relative frequency of each case kind."""

JSON = dict[str, Any]
Call = tuple[str, str, JSON]
"""(latency label, path, body) of one HTTP call."""
Answer = tuple[int, Any]
"""(status, parsed JSON body) of its answer."""
CaseRun = Generator[Call, Answer, int]
"""A running case: yields calls, receives answers, returns the number of streams it checked."""


class MismatchError(AssertionError):
    """A refused call, a malformed answer or a stream that differs from its oracle."""


# ----------------------------------------------------------------------------- text


def load_tokenizer(name: str) -> Tokenizer:
    """The model's full ``tokenizers`` tokenizer from its original ``tokenizer.json``."""
    return Tokenizer.from_file(str(MODEL_FOLDERS[name] / "tokenizer.json"))


class Texts:
    """Per tokenizer: the corpus' ids, the EOS id, the prompt ids and a decode."""

    def __init__(self, tokenizer_of: Callable[[str], Tokenizer]) -> None:
        text = CORPUS.read_text(encoding="utf-8")
        self.tokenizers = {name: tokenizer_of(name) for name in MODEL_FOLDERS}
        self.corpus = {name: list(t.encode(text, add_special_tokens=False).ids)
                       for name, t in self.tokenizers.items()}
        self.eos: dict[str, int] = {}
        for name, token in EOS.items():
            eos = self.tokenizers[name].token_to_id(token)
            if eos is None:
                raise RuntimeError(f"{name}: no {token} token")
            self.eos[name] = eos
        self.prompts = {name: self.encode(name, PROMPTS[name]) for name in MODEL_FOLDERS}
        qwen = self.tokenizers["qwen3"]
        markers = [qwen.token_to_id(m) for m in ("<think>", "</think>", "<tool_call>",
                                                 "</tool_call>")]
        self.markers = [m for m in markers if m is not None]
        if len(self.markers) != len(markers):
            raise RuntimeError("qwen3: a parser marker is not a token")

    def encode(self, name: str, text: str) -> list[int]:
        return list(self.tokenizers[name].encode(text, add_special_tokens=False).ids)

    def decode(self, name: str, ids: list[int]) -> str:
        return str(self.tokenizers[name].decode(ids, skip_special_tokens=True))

    def slice(self, rng: random.Random, name: str, count: int) -> list[int]:
        ids = self.corpus[name]
        start = rng.randrange(0, len(ids) - count)
        return ids[start:start + count]


# ----------------------------------------------------------------------------- cases


@dataclass
class Choice:
    ids: list[int]
    finish: str
    logprobs: list[JSON] | None = None


@dataclass
class Case:
    kind: str
    route: str
    model: str
    request_id: str
    choices: list[Choice]
    prompt: list[int] | None
    fields: JSON | None
    """Fields of the embedded chat/completion request (None: no request)."""
    plan: list[tuple[int, list[tuple[int, int]]]] = field(default_factory=list)
    """Streams: the calls in order, each (choice index, [(start, end) of its chunks])."""
    responses: int = 1
    """Completions: ``generate_responses`` entries (the choices repeated)."""

    @property
    def stream(self) -> bool:
        return self.kind.endswith("stream")

    @property
    def label(self) -> str:
        """Latency label prefix of this case's stream calls."""
        return "chat (parser)" if self.kind == "parser stream" else self.route

    def describe(self) -> str:
        lengths = [len(c.ids) for c in self.choices]
        return (f"{self.kind} {self.model} {self.request_id}: ids {lengths}, "
                f"fields {json.dumps(self.fields)[:200]}, calls {len(self.plan)}")


def _logprob_entries(rng: random.Random, pool: list[int], ids: list[int]) -> list[JSON]:
    entries = []
    for position, token in enumerate(ids):
        value = -0.25 * (position % 16)
        top = [{"token_id": token, "logprob": value, "rank": 1}]
        top += [{"token_id": rng.choice(pool), "logprob": -2.0 - k, "rank": k + 2}
                for k in range(rng.randrange(3))]
        entries.append({"token_id": token, "logprob": value, "rank": 1, "top_logprobs": top})
    return entries


def _stop_strings(rng: random.Random, text: str) -> list[str]:
    """1-3 substrings of the text (they match) and sometimes one that never occurs."""
    stops = []
    for _ in range(rng.randint(1, 3)):
        if len(text) > 2:
            start = rng.randrange(len(text) - 1)
            stops.append(text[start:start + rng.randint(2, 6)])
    if rng.random() < 0.3 or not stops:
        stops.append("\x00never")
    return stops[:4]


def _spans(rng: random.Random, count: int) -> list[tuple[int, int]]:
    """Chunk boundaries over ``count`` ids: random sizes by a per-stream profile, sometimes an
    empty chunk; the last chunk holds at least one id."""
    low, high = rng.choice([(1, 1), (1, 4), (1, 16), (8, 64)] if count <= 64
                           else [(1, 4), (1, 16), (8, 64)])
    spans = []
    start = 0
    while start < count:
        if start and rng.random() < 0.05:
            spans.append((start, start))
        end = min(count, start + rng.randint(low, high))
        spans.append((start, end))
        start = end
    return spans


def _calls(rng: random.Random, index: int, spans: list[tuple[int, int]]
           ) -> list[tuple[int, list[tuple[int, int]]]]:
    """Chunks grouped into calls: one ``generate_chunk``, or a ``generate_chunks`` batch."""
    calls = []
    at = 0
    batching = rng.random() < 0.4
    while at < len(spans):
        size = rng.randint(2, 8) if batching and rng.random() < 0.7 else 1
        calls.append((index, spans[at:at + size]))
        at += size
    return calls


def _interleave(rng: random.Random, per_index: list[list[tuple[int, list[tuple[int, int]]]]]
                ) -> list[tuple[int, list[tuple[int, int]]]]:
    order = [i for i, calls in enumerate(per_index) for _ in calls]
    rng.shuffle(order)
    position = [0] * len(per_index)
    plan = []
    for index in order:
        plan.append(per_index[index][position[index]])
        position[index] += 1
    return plan


def make_case(rng: random.Random, texts: Texts, request_id: str, kind: str | None = None
              ) -> Case:
    """A random case (of ``kind``, else drawn by ``KINDS``)."""
    kind = kind or rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
    if kind == "parser stream":
        return _parser_case(rng, texts, request_id)
    route = "chat" if kind.startswith("chat") else "completions"
    model = "qwen3" if rng.random() < 0.6 else "mistral-7b"
    pool = texts.corpus[model]
    n = rng.choice([1, 1, 1, 1, 2, 3]) if kind.endswith("stream") else rng.choice([1, 1, 2, 3])
    long = rng.random() < 0.1
    fields: JSON = {}
    logprobs = rng.random() < 0.3
    if logprobs:
        fields.update({"logprobs": True, "top_logprobs": rng.randrange(3)} if route == "chat"
                      else {"logprobs": rng.randrange(3)})
    stops = rng.random() < 0.3
    choices = []
    for _ in range(n):
        ids = texts.slice(rng, model, rng.randint(120, 400) if long else rng.randint(1, 120))
        # An engine applying stop strings ends with "stop" once one occurs; "length" would
        # mean none occurred, which random text cannot promise (see README, streaming).
        finish = "stop" if stops else "length"
        if rng.random() < 0.4:
            ids, finish = [*ids, texts.eos[model]], "stop"
        choices.append(Choice(ids, finish,
                              _logprob_entries(rng, pool, ids) if logprobs else None))
    if stops:
        fields["stop"] = _stop_strings(rng, texts.decode(model, choices[0].ids))
        fields["include_stop_str_in_output"] = rng.random() < 0.5
    prompt = texts.prompts[model] if rng.random() < 0.5 else None
    case = Case(kind, route, model, request_id, choices, prompt,
                fields if fields or rng.random() < 0.5 else None)
    if not case.stream and route == "completions" and n == 1 and rng.random() < 0.3:
        case.responses = 2
    if case.stream:
        case.plan = _interleave(rng, [_calls(rng, i, _spans(rng, len(c.ids)))
                                      for i, c in enumerate(choices)])
    return case


def _parser_case(rng: random.Random, texts: Texts, request_id: str) -> Case:
    think, end_think, tool_call, end_tool_call = texts.markers
    ids = [think, *texts.slice(rng, "qwen3", rng.randint(1, 80)), end_think]
    if rng.random() < 0.6:
        notes = texts.decode("qwen3", texts.slice(rng, "qwen3", rng.randint(1, 60)))
        call = json.dumps({"name": "get_weather",
                           "arguments": {"city": "Lisbon", "notes": notes}}, ensure_ascii=False)
        ids += [*texts.encode("qwen3", "\n\n"), tool_call,
                *texts.encode("qwen3", f"\n{call}\n"), end_tool_call]
    else:
        ids += texts.encode("qwen3", "\n\n" + texts.decode(
            "qwen3", texts.slice(rng, "qwen3", rng.randint(1, 60))))
    ids.append(texts.eos["qwen3"])
    case = Case("parser stream", "chat", PARSED, request_id, [Choice(ids, "stop")],
                texts.prompts["qwen3"], {"tools": TOOLS})
    case.plan = _calls(rng, 0, _spans(rng, len(ids)))
    return case


# ----------------------------------------------------------------------------- bodies


def _embedded(case: Case) -> JSON:
    if case.fields is None:
        return {}
    if case.route == "chat":
        return {"chat_request": {"messages": MESSAGES, **case.fields}}
    return {"completion_request": {"prompt": "hi", **case.fields}}


def _engine_choice(choice: Choice, index: int, start: int, end: int, last: bool) -> JSON:
    out: JSON = {"index": index, "token_ids": choice.ids[start:end],
                 "finish_reason": choice.finish if last else None}
    if choice.logprobs is not None:
        out["logprobs"] = {"content": choice.logprobs[start:end]}
    return out


def oracle_body(case: Case) -> JSON:
    """The non-streaming call for all of the case's ids."""
    choices = [_engine_choice(c, i, 0, len(c.ids), True) for i, c in enumerate(case.choices)]
    if case.route == "chat":
        body: JSON = {"model": case.model, "prompt_token_ids": case.prompt,
                      "generate_response": {"request_id": case.request_id,
                                            "prompt_token_ids": case.prompt,
                                            "choices": choices}}
    else:
        body = {"model": case.model,
                "prompt_token_ids": None if case.prompt is None else [case.prompt] * case.responses,
                "generate_responses": [{"request_id": case.request_id, "choices": choices}
                                       for _ in range(case.responses)]}
    body.update(_embedded(case))
    return body


def stream_body(case: Case, index: int, spans: list[tuple[int, int]], state: JSON | str | None
                ) -> JSON:
    choice = case.choices[index]
    chunks = [{"request_id": case.request_id,
               "choices": [_engine_choice(choice, index, start, end, end == len(choice.ids))]}
              for start, end in spans]
    body: JSON = {"stream": True, "model": case.model, "prompt_token_ids": case.prompt,
                  **_embedded(case)}
    if len(chunks) == 1:
        body["generate_chunk"] = chunks[0]
    else:
        body["generate_chunks"] = chunks
    if state is not None:
        body["stream_state"] = state
    return body


# ----------------------------------------------------------------------------- checking


def _expected(route: str, choice: JSON) -> JSON:
    """What a folded stream of this choice must equal."""
    if route == "completions":
        return {"text": choice["text"], "logprobs": choice["logprobs"],
                "finish_reason": choice["finish_reason"], "stop_reason": choice["stop_reason"]}
    message = choice["message"]
    return {"content": message["content"] or "", "reasoning": message["reasoning"] or "",
            "tool_calls": [(c["id"], c["function"]["name"], c["function"]["arguments"])
                           for c in message.get("tool_calls") or []],
            "logprobs": choice["logprobs"], "finish_reason": choice["finish_reason"],
            "stop_reason": choice["stop_reason"]}


class Fold:
    """One choice's chunks joined as a client joins them."""

    def __init__(self, route: str, index: int) -> None:
        self.route = route
        self.index = index
        self.chunks = 0
        self.text = ""
        self.reasoning = ""
        self.calls: dict[int, list[Any]] = {}
        self.logprobs: Any = None
        self.finishes: list[tuple[str, Any]] = []

    def add(self, chunk: JSON) -> None:
        choices = chunk["choices"]
        if len(choices) != 1 or choices[0]["index"] != self.index:
            raise MismatchError(f"chunk choices {[c.get('index') for c in choices]}, "
                           f"expected one of index {self.index}")
        choice = choices[0]
        if self.route == "chat":
            delta = choice["delta"]
            if delta["role"] != ("assistant" if self.chunks == 0 else None):
                raise MismatchError(f"role {delta['role']!r} on chunk {self.chunks}")
            if delta["content"] == "" or delta.get("reasoning") == "":
                raise MismatchError("an empty delta is sent as null")
            self.text += delta["content"] or ""
            self.reasoning += delta.get("reasoning") or ""
            for call in delta.get("tool_calls") or []:
                if call["id"] is not None:
                    self.calls[call["index"]] = [call["id"], call["function"]["name"], ""]
                self.calls[call["index"]][2] += call["function"]["arguments"] or ""
        else:
            self.text += choice["text"]
        self._add_logprobs(choice["logprobs"])
        if choice["finish_reason"] is not None:
            self.finishes.append((choice["finish_reason"], choice["stop_reason"]))
        self.chunks += 1

    def _add_logprobs(self, logprobs: Any) -> None:
        if logprobs is None:
            return
        if self.logprobs is None:
            self.logprobs = {key: [] for key in logprobs}
        for key, values in logprobs.items():
            self.logprobs[key].extend(values)

    def result(self) -> JSON:
        if len(self.finishes) != 1:
            raise MismatchError(f"choice {self.index}: {len(self.finishes)} finishing chunks")
        finish, stop_reason = self.finishes[0]
        common = {"logprobs": self.logprobs, "finish_reason": finish, "stop_reason": stop_reason}
        if self.route == "completions":
            return {"text": self.text, **common}
        return {"content": self.text, "reasoning": self.reasoning,
                "tool_calls": [tuple(self.calls[i]) for i in sorted(self.calls)], **common}


def _ok(call: Call, answer: Answer) -> JSON:
    status, data = answer
    if status != 200 or not isinstance(data, dict):
        raise MismatchError(f"{call[1]} answered {status}: {json.dumps(data)[:300]}")
    return data


def run_case(case: Case) -> CaseRun:
    """Run one case: its oracle call, then its stream calls; returns the streams checked."""
    call: Call = (case.route, PATHS[case.route], oracle_body(case))
    oracle = _ok(call, (yield call))
    expected_count = len(case.choices) * case.responses
    if len(oracle["choices"]) != expected_count:
        raise MismatchError(f"{len(oracle['choices'])} choices, expected {expected_count}")
    if not case.stream:
        return 0
    folds = [Fold(case.route, i) for i in range(len(case.choices))]
    states: dict[int, JSON | str] = {}
    for index, spans in case.plan:
        label = f"{case.label} {'batch' if len(spans) > 1 else 'chunk'}"
        call = (label, PATHS[case.route], stream_body(case, index, spans, states.get(index)))
        data = _ok(call, (yield call))
        chunks = data["chunks"] if "chunks" in data else [data["chunk"]]
        if len(chunks) != len(spans) or not isinstance(data["stream_state"], (dict, str)):
            raise MismatchError(f"{len(chunks)} chunks for {len(spans)} engine chunks")
        states[index] = data["stream_state"]
        for chunk in chunks:
            folds[index].add(chunk)
    for fold, choice in zip(folds, oracle["choices"], strict=True):
        got, want = fold.result(), _expected(case.route, choice)
        if got != want:
            diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
            raise MismatchError(f"choice {fold.index}: stream differs from non-streaming: "
                           f"{json.dumps(diff, ensure_ascii=False)[:600]}")
    return len(folds)


def drive(case: Case, post: Callable[[Call], Answer]) -> tuple[int, list[Answer]]:
    """Run a case synchronously through ``post``; the streams checked and every answer."""
    answers: list[Answer] = []
    run = run_case(case)
    answer: Answer | None = None
    while True:
        try:
            call = run.send(answer) if answer is not None else next(run)
        except StopIteration as done:
            return int(done.value), answers
        answer = post(call)
        answers.append(answer)


# ----------------------------------------------------------------------------- the server


def make_models_dir(root: Path) -> Path:
    """A models folder: qwen3 and mistral-7b as they are, and ``qwen3-parsed`` (Qwen3's files
    with its own manifest; its parsers come from ``DERENDER_PARSERS``)."""
    models = root / "models"
    models.mkdir()
    for name, folder in MODEL_FOLDERS.items():
        (models / name).symlink_to(folder, target_is_directory=True)
    parsed = models / PARSED
    parsed.mkdir()
    for file in MODEL_FOLDERS["qwen3"].iterdir():
        if file.name != "derender.json":
            (parsed / file.name).symlink_to(file)
    (parsed / "derender.json").write_text(json.dumps({"served_names": [PARSED]}))
    return models


def server_env(models_dir: Path) -> dict[str, str]:
    return {"DERENDER_MODELS_DIR": str(models_dir), "DERENDER_DEFAULT_MODEL": "qwen3",
            "DERENDER_SIGNING_KEYS": SIGNING_KEYS, "DERENDER_PARSERS": PARSERS_ENV}


def start_server(models_dir: Path, log_path: Path) -> LocalServer:
    """A uvicorn server of the app on a free port of 127.0.0.1, serving ``models_dir``."""
    return LocalServer(uvicorn_app, {**os.environ, **server_env(models_dir)}, log_path)


def served(root: Path) -> Generator[LocalServer, None, None]:
    """A module fixture's body: ``start_server`` on a fresh models folder under ``root``,
    stopped when the module is done."""
    server = start_server(make_models_dir(root), root / "server.log")
    try:
        yield server
    finally:
        server.stop()


def rss_kib(pid: int) -> int:
    """Resident set size of a process (VmRSS), KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RssSampler:
    """Samples a process's VmRSS every ``interval`` seconds on a thread: (seconds, KiB)."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        self.pid = pid
        self.interval = interval
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.start = time.monotonic()

    def __enter__(self) -> RssSampler:
        self.start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic() - self.start, rss_kib(self.pid)))
            self._stop.wait(self.interval)


# ----------------------------------------------------------------------------- memory


RSS_ALLOWANCE_KIB = 6 * 1024
RSS_ALLOWANCE_FRACTION = 0.03


@dataclass
class RssVerdict:
    """Resident memory over a run: flat when the last third's peak stays within the allowance
    of the first sample after the warm-up (the first third)."""

    warm_kib: int
    """First sample at or after the end of the warm-up."""
    last_third_max_kib: int
    start_kib: int
    peak_kib: int
    allowance_kib: int
    samples: int

    @property
    def growth_kib(self) -> int:
        return self.last_third_max_kib - self.warm_kib

    @property
    def flat(self) -> bool:
        return self.growth_kib <= self.allowance_kib

    def describe(self) -> str:
        return (f"RSS {self.start_kib / 1024:.1f} MiB at the start, {self.warm_kib / 1024:.1f} "
                f"MiB after the warm-up, last third's max {self.last_third_max_kib / 1024:.1f} "
                f"MiB (growth {self.growth_kib / 1024:+.1f} MiB, allowed "
                f"{self.allowance_kib / 1024:.1f}), peak {self.peak_kib / 1024:.1f} MiB, "
                f"{self.samples} samples")


def rss_verdict(samples: list[tuple[float, int]], duration: float) -> RssVerdict:
    """Judge ``samples`` taken over a run that generated load for ``duration`` seconds."""
    warm = [kib for t, kib in samples if t >= duration / 3]
    last = [kib for t, kib in samples if t >= 2 * duration / 3]
    if not warm or not last:
        raise RuntimeError("too few RSS samples")
    allowance = max(RSS_ALLOWANCE_KIB, int(warm[0] * RSS_ALLOWANCE_FRACTION))
    return RssVerdict(warm[0], max(last), samples[0][1], max(k for _, k in samples), allowance,
                      len(samples))


# ----------------------------------------------------------------------------- the load


@dataclass
class LoadReport:
    """What a load run did and saw."""

    clients: int
    duration: float
    elapsed: float = 0.0
    """Seconds from the first call to the last answer (cases finish after the deadline)."""
    latencies: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    """By label, each call's (start, seconds it took), its start in seconds into the run."""
    chunks: int = 0
    """OpenAI chunks answered by the stream calls."""
    cases: dict[str, int] = field(default_factory=dict)
    streams_checked: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return sum(len(v) for v in self.latencies.values())


class Connection:
    """One keep-alive HTTP/1.1 connection: a POST with a JSON body, the status and body back.

    Deliberately minimal (Content-Length framing only, as uvicorn answers these routes): a
    general client (httpx) costs the load generator about twice the server's CPU per call,
    and on a small machine the figures would then measure the client.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, path: str, data: bytes) -> tuple[int, bytes]:
        if self._streams is None:
            self._streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self._streams
        writer.write(f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                     .encode("ascii") + data)
        await writer.drain()
        status_line = await reader.readline()
        if not status_line:
            raise ConnectionError("the server closed the connection without answering")
        status = int(status_line.split()[1])
        length = None
        close = False
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection":
                close = value.strip().lower() == b"close"
        if length is None:
            raise ConnectionError(f"answer without Content-Length (status {status})")
        body = await reader.readexactly(length)
        if close:
            await self.close()
        return status, body

    async def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


async def _client(number: int, url: str, texts: Texts, seed: int, start: float,
                  deadline: float, report: LoadReport, timeout: float) -> None:
    rng = random.Random(seed * 1000 + number)
    host, _, port = url.removeprefix("http://").partition(":")
    connection = Connection(host, int(port))
    count = 0
    try:
        while time.monotonic() < deadline:
            case = make_case(rng, texts, f"load-{seed}-{number}-{count}")
            count += 1
            run = run_case(case)
            answer: Answer | None = None
            try:
                while True:
                    try:
                        label, path, body = run.send(answer) if answer is not None else next(run)
                    except StopIteration as done:
                        report.streams_checked += int(done.value)
                        break
                    data = json.dumps(body, ensure_ascii=False).encode()
                    t0 = time.perf_counter()
                    status, raw = await asyncio.wait_for(connection.post(path, data), timeout)
                    report.latencies.setdefault(label, []).append(
                        (t0 - start, time.perf_counter() - t0))
                    parsed = json.loads(raw)
                    if status == 200 and "stream_state" in parsed:
                        report.chunks += len(parsed["chunks"]) if "chunks" in parsed else 1
                    answer = (status, parsed)
                report.cases[case.kind] = report.cases.get(case.kind, 0) + 1
            except Exception as exc:  # every failure is reported, the client goes on
                report.errors.append(f"{type(exc).__name__}: {exc} [{case.describe()}]")
                await connection.close()  # a timed-out call leaves the connection unusable
    finally:
        await connection.close()


async def _load(url: str, clients: int, duration: float, texts: Texts, seed: int,
                timeout: float) -> LoadReport:
    report = LoadReport(clients, duration)
    t0, start = time.monotonic(), time.perf_counter()
    deadline = t0 + duration
    await asyncio.gather(*(_client(i, url, texts, seed, start, deadline, report, timeout)
                           for i in range(clients)))
    report.elapsed = time.monotonic() - t0
    return report


def run_load(url: str, clients: int, duration: float, texts: Texts, seed: int = 0,
             timeout: float = 120.0) -> LoadReport:
    """``clients`` concurrent clients, each running random cases until ``duration`` seconds
    have passed (a case under way is finished)."""
    try:
        import uvloop  # optional: uvicorn[standard] brings it
    except ImportError:
        return asyncio.run(_load(url, clients, duration, texts, seed, timeout))
    return uvloop.run(_load(url, clients, duration, texts, seed, timeout))
