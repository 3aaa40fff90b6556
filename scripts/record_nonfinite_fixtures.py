"""Record vLLM 0.33's answers to non-finite numbers given as strings (issue 22): fixtures 2900-.

Every float field of the engine payloads (a sampled token's ``logprob``, a top candidate's,
a prompt position's, the ``metrics``) given ``"NaN"``, ``"Infinity"``, ``"-inf"`` or
``"1e400"``, on both routes, streaming and not; and one body with a bare ``NaN`` literal.
Needs a peer serving ``qwen3`` without parsers:

    "$VLLM_PEER"/start.sh qwen3 8980
    python scripts/record_nonfinite_fixtures.py --port 8980
"""

from __future__ import annotations

import argparse
import copy
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "vllm-0.33"
FIRST = 2900
CHAT = "/v1/chat/completions/derender"
COMPLETIONS = "/v1/completions/derender"
VALUES = ("NaN", "Infinity", "-inf", "1e400")
HELLO, EOS = 9707, 151645  # Qwen3 "Hello", <|im_end|>


def chat_body() -> dict[str, Any]:
    return {"model": "qwen3", "prompt_token_ids": [151644, 77091, 198],
            "generate_response": {"request_id": "pub-29xx", "choices": [{
                "index": 0, "token_ids": [HELLO, EOS], "finish_reason": "stop",
                "logprobs": {"content": [
                    {"token_id": HELLO, "logprob": -0.5,
                     "top_logprobs": [{"token_id": HELLO, "logprob": -0.5}]},
                    {"token_id": EOS, "logprob": -0.1,
                     "top_logprobs": [{"token_id": EOS, "logprob": -0.1}]}]}}]},
            "chat_request": {"messages": [{"role": "user", "content": "hi"}],
                             "logprobs": True, "top_logprobs": 1}}


def stream_body() -> dict[str, Any]:
    return {"stream": True, "model": "qwen3", "prompt_token_ids": [151644, 77091, 198],
            "generate_chunk": {"request_id": "pub-29xx", "choices": [{
                "index": 0, "token_ids": [HELLO], "finish_reason": None,
                "logprobs": {"content": [{"token_id": HELLO, "logprob": -0.5, "top_logprobs": [
                    {"token_id": HELLO, "logprob": -0.5}]}]}}]},
            "chat_request": {"messages": [{"role": "user", "content": "hi"}],
                             "logprobs": True, "top_logprobs": 1}}


def completion_body() -> dict[str, Any]:
    return {"model": "qwen3", "generate_responses": [{"request_id": "pub-29xx", "choices": [{
        "index": 0, "token_ids": [HELLO], "finish_reason": "length",
        "logprobs": {"content": [{"token_id": HELLO, "logprob": -0.5, "top_logprobs": [
            {"token_id": HELLO, "logprob": -0.5}]}]}}]}],
        "completion_request": {"prompt": "hi", "logprobs": 1}}


def cases() -> list[tuple[str, str, str, dict[str, Any]]]:
    """(short name, endpoint, description, request) per case."""
    out: list[tuple[str, str, str, dict[str, Any]]] = []
    for value in VALUES:
        slug = value.lstrip("-").lower() if value != "-inf" else "neg_inf"
        body = chat_body()
        body["generate_response"]["choices"][0]["logprobs"]["content"][0]["logprob"] = value
        out.append((f"chat-logprob-{slug}", CHAT, f"chat: a sampled token's logprob {value!r}",
                    body))
        body = chat_body()
        entry = body["generate_response"]["choices"][0]["logprobs"]["content"][1]
        entry["top_logprobs"][0]["logprob"] = value
        out.append((f"chat-top_logprob-{slug}", CHAT,
                    f"chat: a top candidate's logprob {value!r}", body))
        body = chat_body()
        body["generate_response"]["prompt_logprobs"] = [None, {"77091": {"logprob": value}}]
        out.append((f"chat-prompt_logprobs-{slug}", CHAT,
                    f"chat: a prompt position's logprob {value!r}", body))
        body = chat_body()
        body["generate_response"]["metrics"] = {"time_to_first_token_ms": value}
        out.append((f"chat-metrics-{slug}", CHAT, f"chat: metrics.time_to_first_token_ms "
                    f"{value!r}", body))
        body = stream_body()
        body["generate_chunk"]["choices"][0]["logprobs"]["content"][0]["logprob"] = value
        out.append((f"chat-stream-logprob-{slug}", CHAT,
                    f"chat streaming: a sampled token's logprob {value!r}", body))
        body = completion_body()
        entry = body["generate_responses"][0]["choices"][0]["logprobs"]["content"][0]
        entry["top_logprobs"][0]["logprob"] = value
        out.append((f"comp-top_logprob-{slug}", COMPLETIONS,
                    f"completions: a top candidate's logprob {value!r}", body))
        body = completion_body()
        body["completion_request"] = {"prompt": "hi"}
        body["generate_responses"][0]["metrics"] = {"tokens_per_second": value}
        out.append((f"comp-metrics-{slug}", COMPLETIONS,
                    f"completions (no logprobs asked): metrics.tokens_per_second {value!r}",
                    body))
    return out


def post(port: int, endpoint: str, raw: bytes) -> tuple[int, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{endpoint}", data=raw,
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def write(number: int, short: str, endpoint: str, description: str,
          request: dict[str, Any], status: int, response: Any, raw: str | None = None) -> None:
    name = f"{number}-i22-nonfinite-{short}-qwen3"
    call: dict[str, Any] = {"request": request, "status": status, "response": response}
    if raw is not None:
        call = {"request": request, "request_raw": raw, "status": status, "response": response}
    case = {"name": name, "model": "qwen3", "endpoint": endpoint,
            "server_flags": ["--served-model-name", "qwen3"], "kind": "error",
            "features": ["error", "error:non_finite_number"],
            "description": f"{description} -> {status}.", "calls": [call]}
    (FIXTURES / f"{name}.json").write_text(json.dumps(case, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=8980)
    args = parser.parse_args()
    number = FIRST
    for short, endpoint, description, request in cases():
        status, response = post(args.port, endpoint, json.dumps(request).encode())
        write(number, short, endpoint, description, request, status, response)
        print(number, short, status, json.dumps(response)[:100])
        number += 1
    request = chat_body()
    raw = json.dumps(request).replace('"logprob": -0.5', '"logprob": NaN', 1)
    shown = copy.deepcopy(request)
    shown["generate_response"]["choices"][0]["logprobs"]["content"][0]["logprob"] = "NaN"
    status, response = post(args.port, CHAT, raw.encode())
    write(number, "chat-logprob-literal_nan", CHAT,
          "chat: a sampled token's logprob written as the bare literal NaN (request_raw; "
          "'request' shows it as a string)", shown, status, response, raw)
    print(number, "literal NaN", status, json.dumps(response)[:100])


if __name__ == "__main__":
    main()
