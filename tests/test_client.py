"""The client helper replays recorded vLLM streams: engine SSE lines in, OpenAI chunks out."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from tokenizers import Tokenizer

import derender_client as client_module
from derender_client import DerenderError, astream_derender, parse_sse, stream_derender
from derender_testing.models import ROOT
from derender_testing.openai_types import check_openai_chunk
from derender_testing.recorded import case_path, load_case
from derender_testing.servers import LocalServer, clean_env
from tests.test_conformance import normalize

CASES = ["047-chat-stream-one-basic-gpt2", "061-chat-stream-n2-mistral-7b",
         "062-comp-stream-n3-gpt2", "056-comp-stream-8-logprobs-split-qwen3"]


def _engine_lines(case: dict[str, Any]) -> list[str]:
    """The engine's SSE stream as /inference/v1/generate sends it, [DONE] included."""
    lines = [f"data: {json.dumps(chunk['generate_chunk'])}\n" for chunk in case["chunks"]]
    return [*lines, "data: [DONE]\n"]


def _session_fields(case: dict[str, Any]) -> dict[str, Any]:
    first = case["chunks"][0]
    route = "chat" if "chat" in case["endpoint"] else "completions"
    request_key = "chat_request" if route == "chat" else "completion_request"
    return {"route": route, "model": first.get("model"),
            "prompt_token_ids": first.get("prompt_token_ids"),
            "prompt_tokens": first.get("prompt_tokens"), request_key: first.get(request_key)}


def _expected(case: dict[str, Any]) -> list[Any]:
    return [normalize(call["response"])["chunk"] for call in case["calls"]]


@pytest.mark.parametrize("name", CASES)
def test_sync_helper_replays_recorded_stream(name: str, client_for: Any) -> None:
    case = load_case(case_path(name))
    client = client_for(case["model"])
    got = list(stream_derender(_engine_lines(case), base_url="http://test", client=client,
                               **_session_fields(case)))
    assert [normalize({"chunk": c})["chunk"] for c in got] == _expected(case)
    for chunk in got:
        check_openai_chunk(chunk)


@pytest.mark.parametrize("name", CASES)
def test_async_helper_replays_recorded_stream(name: str, client_for: Any) -> None:
    case = load_case(case_path(name))
    app = client_for(case["model"]).app

    async def run() -> list[dict[str, Any]]:
        async def engine() -> Any:
            for line in _engine_lines(case):
                yield line

        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            return [c async for c in astream_derender(engine(), base_url="http://test",
                                                      client=http, **_session_fields(case))]

    got = asyncio.run(run())
    assert [normalize({"chunk": c})["chunk"] for c in got] == _expected(case)


def test_refusal_raises_with_the_envelope(client_for: Any) -> None:
    chunk = {"request_id": "r", "choices": [{"index": 0, "token_ids": [1]}]}
    with pytest.raises(DerenderError) as caught:
        list(stream_derender([chunk], base_url="http://test", client=client_for("gpt2"),
                             model="no-such-model"))
    assert caught.value.status == 404
    assert caught.value.error["type"] == "NotFoundError"


def test_parse_sse_ignores_comments_and_done() -> None:
    assert parse_sse(": keep-alive") is None
    assert parse_sse("data: [DONE]") is None
    assert parse_sse(b'data: {"a": 1}\n') == {"a": 1}


def _readme_streaming_section() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme[readme.index("### Streaming from Python"):readme.index("## Configuration")]


def test_readme_streaming_examples_are_valid_and_name_real_options() -> None:
    """The README's "Streaming from Python" examples parse, import names the module has,
    and pass only the helper's keyword arguments; the options table names real ones."""
    section = _readme_streaming_section()
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) >= 2
    parameters = set(inspect.signature(stream_derender).parameters)
    assert parameters == set(inspect.signature(astream_derender).parameters)
    for block in blocks:
        tree = ast.parse(block)
        imports = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        assert imports and all(node.module == "derender_client" for node in imports)
        names = {alias.name for node in imports for alias in node.names}
        assert names and all(hasattr(client_module, name) for name in names)
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Name) and node.func.id == "stream_derender"]
        assert calls and {k.arg for k in calls[0].keywords} <= parameters
    options = re.findall(r"^\| `(\w+)` \|", section, re.M)
    assert options and set(options) <= parameters


def _serve(port: int) -> list[str]:
    """``make run``: ``derender serve`` on the embedded model."""
    return [sys.executable, "-m", "derender.cli", "serve", "--host", "127.0.0.1", "--port",
            str(port)]


def test_readme_first_streaming_example_runs_against_the_local_server(
        tmp_path: Path) -> None:
    """The first example, as written but for the port, against ``derender serve`` on the
    embedded model (no AWS): it prints the text the tokenizer decodes from its ids, which its
    closing comment shows."""
    code = re.findall(r"```python\n(.*?)```", _readme_streaming_section(), re.S)[0]
    assert 'base_url="http://127.0.0.1:8000"' in code  # make run's address
    models = ROOT / "layers" / "tokenizers"
    env = clean_env(DERENDER_MODELS_DIR=str(models))
    with LocalServer(_serve, env, tmp_path / "serve.log", timeout=60) as server:
        out = io.StringIO()
        namespace: dict[str, Any] = {}
        with contextlib.redirect_stdout(out):
            exec(compile(code.replace("http://127.0.0.1:8000", server.url), "README", "exec"),
                 namespace)
    ids = [i for chunk in namespace["engine_chunks"] for c in chunk["choices"]
           for i in c["token_ids"]]
    text = Tokenizer.from_file(str(models / "qwen3" / "tokenizer.json")).decode(
        ids, skip_special_tokens=True)
    assert out.getvalue() == text + "\n"
    assert f"# → {text}\n" in code
