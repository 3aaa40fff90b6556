"""Calls in a request without tools, or under ``tool_choice`` "none", and an empty ``tools``
list: what vLLM 0.33 does per format, read from its recorded answers (cases 1518-1556 and
earlier ``none`` cases, recorded by ``scripts/tool_cases/edge_cases.py`` and
``scripts/tool_cases/no_tools.py``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from derender.contract.requests import ChatRequest
from derender.core import parsers
from derender.core.parsers.registry import WithoutTools
from derender.core.registry import load_vocabulary
from derender_testing.models import model_folder
from derender_testing.recorded import load_case, numbered, recorded_chat

OPENERS = ("<tool_call>", "[TOOL_CALLS]", '{"name"', "[get_weather(", "<｜tool▁calls▁begin｜>")
"""How each format's calls begin in these outputs: still in vLLM's content = not parsed."""


@pytest.mark.parametrize("number", [
    # no tools: hermes, qwen3_coder, mistral, mistral (older), llama3_json, pythonic,
    # deepseek_v3, deepseek_v31
    1518, 1524, 1530, 1534, 1546, 1548, 1550, 1552,
    # tool_choice "none", the same formats
    1522, 1528, 252, 275, 136, 158, 208, 1554])
def test_calls_parsed_without_tools_or_under_none_as_vllm(number: int) -> None:
    """Whether the format reads calls (and drops them, markup and all) is what vLLM's answer
    shows: its content still holds the calls' markup exactly when they were not parsed. The
    calls are never returned. (gpt-oss: 326/327, replayed by test_conformance.)"""
    case = recorded_chat(number)
    flags = dict(zip(case["flags"], [*case["flags"][1:], None], strict=True))
    tool_parser = flags["--tool-call-parser"]
    folder = {"deepseek-v3": "deepseek-v4"}.get(case["model"], case["model"])
    vocab = load_vocabulary(model_folder(folder))
    request = ChatRequest.model_validate(case["request"])
    settings = parsers.parser_settings(flags.get("--reasoning-parser"), tool_parser, request,
                                       vocab)
    content = case["message"]["content"] or ""
    parsed_by_vllm = not any(opener in content for opener in OPENERS)
    assert settings.tools == parsed_by_vllm
    assert not settings.keep_calls
    record = parsers.tool_record(tool_parser)
    assert record is not None
    as_called = record.without_tools is WithoutTools.AS_CALLED
    assert as_called == parsed_by_vllm or request.tools


def test_empty_tools_are_refused_as_vllm_refuses_them(qwen: Any) -> None:
    # 1520 (and 1526, 1532, 1536, 1556): "`tools` must not be an empty array…", 400, before
    # any parsing, for every format.
    case = load_case(numbered(1520))
    call = case["calls"][0]
    response = qwen.post("/v1/chat/completions/derender", content=json.dumps(call["request"]),
                         headers={"content-type": "application/json"})
    assert response.status_code == call["status"] == 400
    assert response.json()["error"]["message"] == call["response"]["error"]["message"]
