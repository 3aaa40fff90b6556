"""Issue 21's other recordings (cases 2200-…), run by ``scripts/record_dropin.py others PORT``.

Section 2: Gemma 4 with the thought channel opened by the prompt, Kimi K2 calls without the
``functions.NAME:IDX`` header, Seed-OSS's JSON list under ``tool_choice`` "required", stop
strings in an output that ends with "length". Section 3: unknown routes and methods, schema
errors in the union bodies, a body far over derender's size limit. Each on a peer server
started and stopped here (the tool formats' servers as their ``tool_cases`` tables define
them; plain ``qwen3`` without parsers for the rest).
"""

from __future__ import annotations

import dataclasses
import json
import os
import urllib.error
import urllib.request
from typing import Any

import record_dropin as rd
import record_tool_fixtures as rtf
from tokenizers import Tokenizer
from tool_cases import gemma4, kimi, qwen3_family

from derender_testing.recorded import write_case

FIRST = 2200
QWEN3 = rtf.ROOT / "layers" / "tokenizers" / "qwen3" / "tokenizer.json"
PLAIN = rtf.Server("qwen3", ["--served-model-name", "qwen3"], "no parsers", "i21-plain", (), QWEN3)
IM_END = 151645


def _write(data: dict[str, Any]) -> None:
    out = write_case(rtf.FIXTURES, data["name"], rtf.layout(data))
    print(out.name, data["kind"], flush=True)


def _tool_cases(fmt: rtf.Format, key: str, cases: list[rtf.Case], number: int,
                feature: str, port: int, prompt: Any = None) -> int:
    server = dataclasses.replace(fmt.servers[key], slug=f"i21-{fmt.servers[key].slug}")
    sub = rtf.Format(number, {key: server}, cases, tools=fmt.tools, user=fmt.user,
                     encode=fmt.encode, prompt=prompt or fmt.prompt)
    pid = rd.start(server.model, port, server.flags)
    try:
        tokenizer = Tokenizer.from_file(str(server.tokenizer))
        for offset, case in enumerate(cases):
            data = rtf.record(sub, case, number + offset, port, tokenizer)
            data["features"] = sorted({*data["features"], feature})
            _write(data)
    finally:
        rd.stop(pid)
    return number + len(cases)


def _both(server: str, shape: str, output: str, eos: int | None, **fields: Any) -> list[rtf.Case]:
    return [rtf.Case(server, shape, output, eos, **fields),
            rtf.Case(server, shape, output, eos, stream="small", **fields)]


def gemma_prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    """The server's render, then ``<|channel>thought\\n``: the prompt opens the channel."""
    ids = rtf.render_prompt(port, tokenizer, chat_request)
    return ids + list(tokenizer.encode("<|channel>thought\n", add_special_tokens=False).ids)


def http(port: int, method: str, path: str, body: Any = None,
         raw: bytes | None = None) -> tuple[int, Any]:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                     method=method,
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            text = response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        text, status = error.read(), error.code
    try:
        return status, json.loads(text)
    except ValueError:
        return status, {"raw": text.decode("utf-8", "replace")}


CHAT, COMPLETIONS = "/v1/chat/completions/derender", "/v1/completions/derender"
CHUNK = {"request_id": "i21-edge", "choices": [{"index": 0, "token_ids": [9707, 1879]}]}
RESPONSE = {"request_id": "i21-edge", "choices": [{"index": 0, "token_ids": [9707, 1879],
                                                   "finish_reason": "stop"}]}
MESSAGES = [{"role": "user", "content": "hi"}]
EDGES: list[tuple[str, str, str, Any]] = [
    # (shape, method, path, body)
    ("unknown_route_get", "GET", "/v1/nothing", None),
    ("unknown_route_post", "POST", "/v1/nothing", {"model": "qwen3"}),
    ("wrong_method_get_chat", "GET", CHAT, None),
    ("wrong_method_put_completions", "PUT", COMPLETIONS, {"model": "qwen3"}),
    ("wrong_method_post_health", "POST", "/health", {}),
    ("schema_stream_missing_chunk", "POST", CHAT,
     {"stream": True, "model": "qwen3", "chat_request": {"messages": MESSAGES}}),
    ("schema_nonstream_missing_response", "POST", CHAT,
     {"model": "qwen3", "chat_request": {"messages": MESSAGES}}),
    ("schema_stream_false_missing_response", "POST", CHAT, {"stream": False, "model": "qwen3"}),
    ("schema_stream_bad_chunk", "POST", CHAT,
     {"stream": True, "model": "qwen3", "generate_chunk": {"choices": "x"}}),
    ("schema_completions_stream_missing_chunk", "POST", COMPLETIONS,
     {"stream": True, "model": "qwen3"}),
    ("schema_completions_nonstream_bad", "POST", COMPLETIONS,
     {"model": "qwen3", "generate_responses": [{"choices": [{"index": "a"}]}]}),
    ("semantic_unknown_model", "POST", CHAT,
     {"model": "nope", "generate_response": RESPONSE, "chat_request": {"messages": MESSAGES}}),
    ("semantic_prompt_tokens_length", "POST", COMPLETIONS,
     {"model": "qwen3", "generate_responses": [RESPONSE], "prompt_tokens": [1, 2]}),
    ("semantic_stream_state_string", "POST", CHAT,
     {"stream": True, "model": "qwen3", "generate_chunk": CHUNK, "stream_state": "abc"}),
]
BIG = 1_000_000


def record_edges(port: int, number: int) -> int:
    pid = rd.start("qwen3", port, [])
    try:
        for shape, method, path, body in EDGES:
            status, response = http(port, method, path, body)
            _write({"name": f"{number:04d}-i21-plain-edge-{shape}", "model": "qwen3",
                    "endpoint": path, "server_flags": PLAIN.flags, "kind": "error",
                    "features": ["issue21:envelope", f"edge:{shape}"],
                    "description": f"Issue 21, section 3: {method} {path} ({shape}).",
                    "calls": [{"method": method, "request": body, "status": status,
                               "response": response}]})
            number += 1
        for shape, token_ids, logprobs in (("big_token_ids", [9707] * BIG, False),
                                          ("big_logprobs", [9707] * 4, True)):
            choice: dict[str, Any] = {"index": 0, "token_ids": token_ids,
                                      "finish_reason": "length"}
            if logprobs:
                choice["logprobs"] = {"content": [{"token_id": 9707, "logprob": -0.1}] * BIG}
            body = {"model": "qwen3", "generate_response": {"request_id": "i21-big",
                                                            "choices": [choice]},
                    "chat_request": {"messages": MESSAGES}}
            raw = json.dumps(body).encode()
            status, response = http(port, "POST", CHAT, raw=raw)
            summary = (f"generate_response with {len(token_ids)} token_ids"
                       + (f" and {BIG} logprobs.content entries" if logprobs else "")
                       + f"; {len(raw)} bytes of JSON (not stored: rebuilt by "
                       "scripts/record_dropin_others.py)")
            _write({"name": f"{number:04d}-i21-plain-edge-{shape}", "model": "qwen3",
                    "endpoint": CHAT, "server_flags": PLAIN.flags, "kind": "error",
                    "features": ["issue21:body_limit", f"edge:{shape}"],
                    "description": f"Issue 21, section 3: a body over derender's limit: "
                                   f"{summary}.",
                    "calls": [{"method": "POST", "request": None, "request_summary": summary,
                               "request_bytes": len(raw), "status": status,
                               "response": response}]})
            number += 1
    finally:
        rd.stop(pid)
    return number


def record_stop_length(port: int, number: int) -> int:
    fmt = rtf.Format(number, {"plain": PLAIN}, [], tools=[])
    cases = [
        *_both("plain", "i21_stop_then_length", "It is sunny in Paris today.", None,
               tools=False, request={"stop": ["sunny"]}, kind="stop"),
        *_both("plain", "i21_stop_at_end_length", "It is sunny", None,
               tools=False, request={"stop": ["sunny"]}, kind="stop"),
        *_both("plain", "i21_stop_then_stop", "It is sunny in Paris.", IM_END,
               tools=False, request={"stop": ["sunny"]}, kind="stop"),
    ]
    fmt.cases = cases
    pid = rd.start("qwen3", port, [])
    try:
        tokenizer = Tokenizer.from_file(str(QWEN3))
        for offset, case in enumerate(cases):
            data = rtf.record(fmt, case, number + offset, port, tokenizer)
            data["features"] = sorted({*data["features"], "issue21:stop_length"})
            _write(data)
    finally:
        rd.stop(pid)
    return number + len(cases)


GEMMA_THOUGHT = "The user wants Paris weather.<channel|>It is sunny in Paris."
GEMMA_THOUGHT_CALL = ("The user wants Paris weather.<channel|><|tool_call>call:get_weather"
                      '{city:<|"|>Paris<|"|>}<tool_call|>')
KIMI_HEAD = "The user wants Paris weather; call the tool.</think>"
KIMI_SECTION = "<|tool_calls_section_begin|><|tool_call_begin|>{head}<|tool_call_argument_begin|>"
KIMI_NO_PREFIX = (KIMI_HEAD + KIMI_SECTION.format(head="get_weather:0")
                  + '{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>')
KIMI_NO_INDEX = (KIMI_HEAD + KIMI_SECTION.format(head="get_weather")
                 + '{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>')
KIMI_NAME_IN_BODY = (KIMI_HEAD + KIMI_SECTION.format(head="")
                     + '{"name": "get_weather", "arguments": {"city": "Paris"}}'
                     + "<|tool_call_end|><|tool_calls_section_end|>")
SEED_LIST = '[{"name": "get_weather", "parameters": {"city": "Paris"}}]'
SEED_THINK_LIST = "<seed:think>\nThe user wants Paris weather.\n</seed:think>" + SEED_LIST
SEED_VARIANTS = 2234
"""The variants of 2232-2233 (``seed_oss_variants``): the list after a closed reasoning block
(2234-2235); with ``VLLM_ENFORCE_STRICT_TOOL_CALLING=0`` in the environment (run the group
with it set), the list alone and after the block (2236-2239)."""


def main(port: int, only: list[str]) -> None:
    """Every group in order (``only``: those named: edges, stop, gemma4, kimi, seed_oss)."""
    def wanted(group: str) -> bool:
        return not only or group in only

    number = FIRST
    number = record_edges(port, number) if wanted("edges") else number + len(EDGES) + 2
    number = record_stop_length(port, number) if wanted("stop") else number + 6
    if not wanted("gemma4"):
        number += 4
    else:
        number = _tool_cases(gemma4.FORMAT, "gemma4", [
            *_both("gemma4", "i21_prompt_opens_channel", GEMMA_THOUGHT, 106, kind="reasoning"),
            *_both("gemma4", "i21_prompt_opens_channel_call", GEMMA_THOUGHT_CALL, 106)],
            number, "issue21:gemma4_prompt_channel", port, prompt=gemma_prompt)
    if not wanted("kimi"):
        number += 6
    else:
        number = _tool_cases(kimi.FORMAT, "kimi_k2", [
            *_both("kimi_k2", "i21_no_functions_prefix", KIMI_NO_PREFIX, 163586),
            *_both("kimi_k2", "i21_no_index", KIMI_NO_INDEX, 163586),
            *_both("kimi_k2", "i21_name_in_body", KIMI_NAME_IN_BODY, 163586)],
            number, "issue21:kimi_headerless", port)
    if only == ["seed_oss_variants"]:
        strict = os.environ.get("VLLM_ENFORCE_STRICT_TOOL_CALLING", "1") != "0"
        fmt = qwen3_family.FORMAT
        if not strict:
            server = fmt.servers["seed_oss"]
            fmt = dataclasses.replace(fmt, servers={"seed_oss": dataclasses.replace(
                server, slug=server.slug + "-nonstrict",
                label=server.label + " (VLLM_ENFORCE_STRICT_TOOL_CALLING=0)",
                features=(*server.features, "env:VLLM_ENFORCE_STRICT_TOOL_CALLING=0"))})
        required = {"tool_choice": "required"}
        cases = [*([] if strict else _both("seed_oss", "i21_required_json_list", SEED_LIST,
                                           IM_END, request=required)),
                 *_both("seed_oss", "i21_required_think_json_list", SEED_THINK_LIST, IM_END,
                        request=required)]
        _tool_cases(fmt, "seed_oss", cases, SEED_VARIANTS + (0 if strict else 2),
                    "issue21:seed_oss_required", port)
        return
    if wanted("seed_oss"):
        _tool_cases(qwen3_family.FORMAT, "seed_oss", [
            *_both("seed_oss", "i21_required_json_list", SEED_LIST, IM_END,
                   request={"tool_choice": "required"})],
            number, "issue21:seed_oss_required", port)
