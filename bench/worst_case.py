"""Worst-case call durations through the Lambda handler: the largest events Lambda accepts.

Each shape is one API Gateway (HTTP API, payload 2.0) event of at most ``--event-mb`` MB
(Lambda's synchronous payload limit is 6 MB, event included), run through
``derender.awslambda.adapter.LambdaHandler`` in this process (no worker pool, as on Lambda)
``--repeat`` times after one warm-up; printed: the event size, the status, the slowest and
median wall durations and the slowest CPU time (``time.process_time``: on a shared machine
the wall time also holds the other processes' turns; a Lambda vCPU is the function's own).
Models: Qwen3, and Qwen3 with the qwen3 reasoning and hermes tool parsers (``qwen3-parsed``).
The README's cost section is computed from the slowest shape.

    python bench/worst_case.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import REPO, load_line, machine_line, real_text_ids, revision
from tokenizers import Tokenizer

from derender_testing.lambda_context import FakeLambdaContext
from derender_testing.loadgen import PARSED, PARSERS_ENV, SIGNING_KEYS, make_models_dir

CHAT = "/v1/chat/completions/derender"
COMPLETIONS = "/v1/completions/derender"
PROMPT = [151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198]
MAX_MODEL_LEN = 40960
JSON = dict[str, Any]


def event(path: str, body: JSON) -> JSON:
    raw = json.dumps(body, separators=(",", ":"))
    return {"version": "2.0", "routeKey": f"POST {path}", "rawPath": path,
            "rawQueryString": "", "headers": {"content-type": "application/json",
                                              "content-length": str(len(raw))},
            "requestContext": {"accountId": "123456789012", "apiId": "bench",
                               "http": {"method": "POST", "path": path, "protocol": "HTTP/1.1",
                                        "sourceIp": "203.0.113.10", "userAgent": "bench"},
                               "requestId": "bench", "routeKey": f"POST {path}",
                               "stage": "$default", "timeEpoch": 1795974600000},
            "body": raw, "isBase64Encoded": False}


def tool(index: int, size: int) -> JSON:
    """A tool definition of about ``size`` bytes of JSON (a deep-ish schema, long texts)."""
    properties = {f"p{i}": {"type": "string", "description": "d" * 200,
                            "enum": [f"v{j}" for j in range(10)]} for i in range(size // 330)}
    return {"type": "function", "function": {"name": f"tool_{index}", "description": "x",
                                             "parameters": {"type": "object",
                                                            "properties": properties}}}


def shapes(ids: list[int], limit: int) -> dict[str, Callable[[], tuple[str, JSON]]]:
    def tools_stream() -> tuple[str, JSON]:
        # issue 22's case: ~5.75 MB of tools (90 of 64 KB) and 400 chunks, parsers on
        tools = [tool(i, 63_000) for i in range(90)]
        return CHAT, {"stream": True, "model": PARSED, "prompt_token_ids": PROMPT,
                      "chat_request": {"messages": [{"role": "user", "content": "hi"}],
                                       "tools": tools},
                      "generate_chunks": [{"request_id": "w1", "choices": [
                          {"index": 0, "token_ids": ids[i * 2:i * 2 + 2]}]}
                          for i in range(400)]}

    def logprob_chunks() -> tuple[str, JSON]:
        # 4096 chunks (the most per call), 1 id each with 20 candidates (max_logprobs)
        chunks = []
        for i in range(4096):
            token = ids[i]
            top = [{"token_id": token, "logprob": -0.25, "rank": 1}] + [
                {"token_id": ids[(i + k) % len(ids)], "logprob": -1.5 - k, "rank": k + 1}
                for k in range(1, 20)]
            chunks.append({"request_id": "w2", "choices": [{"index": 0, "token_ids": [token],
                           "logprobs": {"content": [{"token_id": token, "logprob": -0.25,
                                                     "top_logprobs": top}]}}]})
        return CHAT, {"stream": True, "model": "qwen3", "prompt_token_ids": PROMPT,
                      "chat_request": {"messages": [], "logprobs": True, "top_logprobs": 20},
                      "generate_chunks": chunks}

    def parser_chunks() -> tuple[str, JSON]:
        # 4096 chunks of 8 ids each of reasoning then tool-call text, parsers on
        text_ids = ids * (4096 * 8 // len(ids) + 1)
        return CHAT, {"stream": True, "model": PARSED, "prompt_token_ids": PROMPT,
                      "chat_request": {"messages": [], "tools": [tool(0, 2000)]},
                      "generate_chunks": [{"request_id": "w3", "choices": [
                          {"index": 0, "token_ids": text_ids[i * 8:i * 8 + 8]}]}
                          for i in range(4096)]}

    def many_sequences() -> tuple[str, JSON]:
        # non-streaming completions: as many full-length sequences as fit the event
        per = MAX_MODEL_LEN
        count = max(1, limit // (per * 7))
        seq = (ids * (per // len(ids) + 1))[:per]
        return COMPLETIONS, {"model": "qwen3", "completion_request": {"prompt": "x"},
                             "generate_responses": [{"request_id": f"w4-{i}", "choices": [
                                 {"index": 0, "token_ids": seq, "finish_reason": "length"}]}
                                 for i in range(count)]}

    def chat_logprobs() -> tuple[str, JSON]:
        # non-streaming chat, one choice of max_model_len ids... cut to the event, 20 candidates
        count = min(MAX_MODEL_LEN, limit // 750)
        seq = (ids * (count // len(ids) + 1))[:count]
        content = [{"token_id": t, "logprob": -0.5, "top_logprobs": [
            {"token_id": seq[(i + k) % count], "logprob": -1.0 - k} for k in range(20)]}
            for i, t in enumerate(seq)]
        return CHAT, {"model": "qwen3", "chat_request": {"messages": [], "logprobs": True,
                                                         "top_logprobs": 20},
                      "generate_response": {"request_id": "w5", "choices": [
                          {"index": 0, "token_ids": seq, "finish_reason": "length",
                           "logprobs": {"content": content}}]}}

    return {"5.75 MB of tools, 400 chunks, parsers (issue 22's case)": tools_stream,
            "4096 chunks, 1 id + 20 candidates each": logprob_chunks,
            "4096 chunks of 8 ids, parsers": parser_chunks,
            "non-streaming completions, full-length sequences": many_sequences,
            "non-streaming chat, logprobs with 20 candidates": chat_logprobs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--event-mb", type=float, default=5.9)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    limit = int(args.event_mb * 1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        models = make_models_dir(Path(tmp))
        os.environ.update({"DERENDER_MODELS_DIR": str(models), "DERENDER_SIGNING_KEYS":
                           SIGNING_KEYS, "DERENDER_PARSERS": PARSERS_ENV,
                           "DERENDER_DEFAULT_MODEL": "qwen3",
                           "AWS_LAMBDA_FUNCTION_NAME": "derender-bench"})
        from derender.awslambda.adapter import LambdaHandler  # the env first

        handler = LambdaHandler()
        tokenizer = Tokenizer.from_file(str(REPO / "layers/tokenizers/qwen3/tokenizer.json"))
        ids = real_text_ids(tokenizer, 4096)
        print(f"{machine_line()}; revision {revision()}; {load_line()}", flush=True)
        print("| shape | event MB | status | slowest s | median s | slowest CPU s |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, build in shapes(ids, limit).items():
            path, body = build()
            payload = event(path, body)
            size = len(json.dumps(payload))
            if size > limit:
                print(f"| {name} | {size / 1e6:.2f} | (over {args.event_mb} MB: skipped) | | | |")
                continue
            handler(payload, FakeLambdaContext())  # warm-up
            times, cpu = [], []
            status = 0
            for _ in range(args.repeat):
                started, started_cpu = time.perf_counter(), time.process_time()
                answer = handler(payload, FakeLambdaContext())
                times.append(time.perf_counter() - started)
                cpu.append(time.process_time() - started_cpu)
                status = int(answer["statusCode"])
            print(f"| {name} | {size / 1e6:.2f} | {status} | {max(times):.3f} | "
                  f"{statistics.median(times):.3f} | {max(cpu):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
