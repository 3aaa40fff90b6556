"""Every bound of the service (README: Limits; no input yields a 500): at the bound a
call is served, one past it the call is refused with 400 (413 for the body) in the envelope,
with a message naming the limit (and its variable when configurable) — and nothing was
decoded: the bound is checked before any decoding.

"Nothing was decoded" is observed two ways: the decoding entry points of the routes are
wrapped to record their calls (none for a refused call, some for a served one), and the
refused bodies also carry an out-of-vocabulary id in their output, which a check run after
decoding had started would report instead of the limit.

Bounds from the model use a model folder whose manifest sets ``max_model_len`` 16 and
``max_logprobs`` 2 (Qwen3's tokenizer), so the bodies at the bound stay small.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import derender.core.chat as chat_module
import derender.core.completions as completions_module
import derender.core.streaming as streaming_module
from derender.app.main import create_app
from derender.core.registry import ModelRegistry
from derender.settings import Settings
from derender_testing.models import LAYER_MODELS
from derender_testing.recorded import state_token
from tests.test_state_token import RING

CHAT = "/v1/chat/completions/derender"
COMPLETIONS = "/v1/completions/derender"
ID = 9707  # "Hello" (Qwen3)
UNKNOWN_ID = 10**9
MAX_MODEL_LEN = 16
MAX_LOGPROBS = 2
MAX_N_SEQUENCES = 3
MAX_BODY_BYTES = 8192

DECODERS = ((chat_module, "seed_window"), (chat_module, "sequence_text"),
            (chat_module, "resolve_logprobs"), (completions_module, "seed_window"),
            (completions_module, "sequence_text"), (completions_module, "resolve_logprobs"),
            (streaming_module, "seed_window"), (streaming_module, "detokenize"),
            (streaming_module, "resolve_logprobs"))
"""Where the routes start turning ids into text (non-streaming, streaming)."""


# --------------------------------------------------------------------------- apps


def _tiny_models(root: Path) -> Path:
    """A models folder serving Qwen3's tokenizer as ``tiny``, with small model bounds."""
    folder = root / "tiny"
    folder.mkdir(parents=True)
    source = LAYER_MODELS / "qwen3"
    for file in source.iterdir():
        if file.name != "derender.json":
            (folder / file.name).symlink_to(file)
    (folder / "derender.json").write_text(json.dumps({
        "served_names": ["tiny"], "max_model_len": MAX_MODEL_LEN,
        "max_logprobs": MAX_LOGPROBS}))
    return root


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _tiny_models(tmp_path_factory.mktemp("limits"))


@pytest.fixture(scope="module")
def app_with(models: Path) -> Iterator[Callable[..., TestClient]]:
    """``app_with(**settings)``: an app serving ``tiny`` with ``max_n_sequences`` 3, the
    test key ring and those settings."""
    clients: dict[tuple[tuple[str, Any], ...], TestClient] = {}

    def get(**overrides: Any) -> TestClient:
        options = {"signing_keys": RING, "max_n_sequences": MAX_N_SEQUENCES, **overrides}
        key = tuple(sorted(options.items()))
        if key not in clients:
            settings = Settings(models_dir=models, **options)
            clients[key] = TestClient(create_app(settings, ModelRegistry(models)))
        return clients[key]

    yield get


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The decoding entry points called during the test, in order."""
    calls: list[str] = []
    for module, name in DECODERS:
        original = getattr(module, name)

        def spy(*args: Any, _name: str = f"{module.__name__}.{name}",
                _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    return calls


# --------------------------------------------------------------------------- bodies


ROUTES = ("chat", "completions")


def base(route: str, stream: bool) -> dict[str, Any]:
    """A minimal valid body: one choice of one id."""
    engine: dict[str, Any] = {"request_id": "r", "choices": [{"index": 0, "token_ids": [ID]}]}
    body: dict[str, Any] = {"model": "tiny"}
    if stream:
        body.update(stream=True, generate_chunk=engine)
    elif route == "chat":
        body["generate_response"] = engine
    else:
        body["generate_responses"] = [engine]
    if route == "chat":
        body["chat_request"] = {"messages": [{"role": "user", "content": "hi"}]}
    else:
        body["completion_request"] = {"prompt": "hi"}
    return body


def engine(body: dict[str, Any]) -> dict[str, Any]:
    """The engine payload: generate_response, the first generate_responses or the chunk."""
    if "generate_chunk" in body:
        found: dict[str, Any] = body["generate_chunk"]
    elif "generate_chunks" in body:
        found = body["generate_chunks"][0]
    else:
        found = body.get("generate_response") or body["generate_responses"][0]
    return found


def first_choice(body: dict[str, Any]) -> dict[str, Any]:
    choice: dict[str, Any] = engine(body)["choices"][0]
    return choice


def request(body: dict[str, Any]) -> dict[str, Any]:
    embedded: dict[str, Any] = body.get("chat_request") or body["completion_request"]
    return embedded


def entries(n: int, candidates: int = 0) -> dict[str, Any]:
    return {"content": [{"token_id": ID, "logprob": -1.0, "top_logprobs": [
        {"token_id": ID + k, "logprob": -1.0} for k in range(candidates)]} for _ in range(n)]}


def tool(name: str = "f", description: str = "") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": {"type": "object"}}}


def compact_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def tool_of_size(size: int) -> dict[str, Any]:
    """A tool whose compact JSON is exactly ``size`` UTF-8 bytes (padded with 2-byte é)."""
    pad = size - compact_size(tool())
    made = tool(description="é" * (pad // 2) + "x" * (pad % 2))
    assert compact_size(made) == size
    return made


def padded(body: dict[str, Any], size: int) -> bytes:
    """``body`` as JSON of exactly ``size`` bytes (an ignored key carries the padding)."""
    body = {**body, "padding": ""}
    raw = json.dumps(body).encode()
    body["padding"] = "x" * (size - len(raw))
    raw = json.dumps(body).encode()
    assert len(raw) == size
    return raw


# --------------------------------------------------------------------------- the bounds


def _token_ids(body: dict[str, Any], n: int) -> None:
    first_choice(body)["token_ids"] = [ID] * n


def _logprob_positions(body: dict[str, Any], n: int) -> None:
    first_choice(body)["logprobs"] = entries(n)


def _candidates(body: dict[str, Any], n: int) -> None:
    first_choice(body)["logprobs"] = entries(1, n)


def _prompt_logprobs(body: dict[str, Any], n: int) -> None:
    engine(body)["prompt_logprobs"] = [None] * n


def _prompt_ids(body: dict[str, Any], n: int) -> None:
    if "generate_responses" in body:
        body["prompt_token_ids"] = [[ID] * n]
    else:
        body["prompt_token_ids"] = [ID] * n
    if body.get("stream"):  # the prompt alone: the chunk adds no output
        first_choice(body)["token_ids"] = []


def _engine_prompt_ids(body: dict[str, Any], n: int) -> None:
    engine(body)["prompt_token_ids"] = [ID] * n


def _cumulative(body: dict[str, Any], n: int) -> None:
    body["prompt_token_ids"] = [ID] * 10
    first_choice(body)["token_ids"] = [ID] * (n - 10)


def _usage_only(body: dict[str, Any], n: int) -> None:
    body["prompt_token_ids"] = [ID] * n
    engine(body)["choices"] = []
    engine(body)["usage"] = {"prompt_tokens": n, "completion_tokens": 0}


def _choices(body: dict[str, Any], n: int) -> None:
    engine(body)["choices"] = [{"index": k, "token_ids": [ID]} for k in range(n)]


def _responses(body: dict[str, Any], n: int) -> None:
    body["generate_responses"] = [copy.deepcopy(engine(body)) for _ in range(n)]


def _batch(body: dict[str, Any], n: int) -> None:
    chunk = body.pop("generate_chunk")
    chunk["choices"][0]["token_ids"] = []
    body["generate_chunks"] = [chunk] * n


def _stop_count(body: dict[str, Any], n: int) -> None:
    request(body)["stop"] = [f"stop-{k}" for k in range(n)]


def _stop_length(body: dict[str, Any], n: int) -> None:
    request(body)["stop"] = ["x", "y" * n]


def _stop_string_length(body: dict[str, Any], n: int) -> None:
    request(body)["stop"] = "é" * n  # characters, not bytes


def _tools(body: dict[str, Any], n: int) -> None:
    request(body)["tools"] = [tool(f"f{k}") for k in range(n)]


def _tool_size(body: dict[str, Any], n: int) -> None:
    request(body)["tools"] = [tool("g"), tool_of_size(n)]


@dataclass(frozen=True)
class Bound:
    """One limit: how a body reaches ``n`` of it, the bound, and the refusal past it."""

    name: str
    apply: Callable[[dict[str, Any], int], None]
    bound: int
    says: tuple[str, ...]
    """Fragments of the message one past the bound (the limit, its value, its variable)."""
    where: tuple[tuple[str, bool], ...]
    """(route, streaming) combinations the bound applies to."""
    param: str | None = None
    error_type: str = "BadRequestError"


ALL = (("chat", False), ("completions", False), ("chat", True), ("completions", True))
NON_STREAMING = (("chat", False), ("completions", False))
STREAMING = (("chat", True), ("completions", True))
CHAT_ONLY = (("chat", False), ("chat", True))
PAST_MODEL_LEN = f"max_model_len ({MAX_MODEL_LEN})"

BOUNDS = (
    Bound("token_ids", _token_ids, MAX_MODEL_LEN,
          ("token_ids length (17) in choice 0", PAST_MODEL_LEN), NON_STREAMING),
    Bound("logprobs.content", _logprob_positions, MAX_MODEL_LEN,
          ("logprobs.content length (17) in choice 0", PAST_MODEL_LEN), ALL),
    Bound("logprob candidates", _candidates, MAX_LOGPROBS,
          ("top_logprobs count (3) in choice 0", f"max_logprobs ({MAX_LOGPROBS})"), ALL),
    Bound("prompt_logprobs", _prompt_logprobs, MAX_MODEL_LEN,
          ("prompt_logprobs length (17) in response 'r'", PAST_MODEL_LEN), NON_STREAMING),
    Bound("prompt_token_ids", _prompt_ids, MAX_MODEL_LEN,
          ("prompt_token_ids length (17)", PAST_MODEL_LEN), ALL),
    Bound("the engine's prompt_token_ids", _engine_prompt_ids, MAX_MODEL_LEN,
          ("prompt_token_ids length (17)", PAST_MODEL_LEN), ALL),
    Bound("prompt plus output (streaming)", _cumulative, MAX_MODEL_LEN,
          ("prompt_token_ids length (10) plus output_token_ids length (0) plus delta (7)",
           PAST_MODEL_LEN), STREAMING),
    Bound("prompt of a usage-only chunk", _usage_only, MAX_MODEL_LEN,
          ("prompt_token_ids length (17)", PAST_MODEL_LEN), STREAMING),
    Bound("choices", _choices, MAX_N_SEQUENCES,
          ("choices count (4) in response 'r'", f"server maximum ({MAX_N_SEQUENCES})",
           "DERENDER_MAX_N_SEQUENCES"), NON_STREAMING),
    Bound("generate_responses", _responses, MAX_N_SEQUENCES,
          ("generate_responses count (4)", f"server maximum ({MAX_N_SEQUENCES})",
           "DERENDER_MAX_N_SEQUENCES"), (("completions", False),)),
    Bound("choices per chunk", _choices, 1, ("at most one choice per chunk",), STREAMING),
    Bound("generate_chunks", _batch, 4096,
          ("'loc': 'body.generate_chunks'", "at most 4096 items"), STREAMING,
          param="body.generate_chunks", error_type="Bad Request"),
    Bound("stop strings", _stop_count, 4,
          ("stop count (5)", "server maximum (4)", "DERENDER_MAX_STOP_STRINGS"), ALL,
          param="stop"),
    Bound("stop string length", _stop_length, 512,
          ("stop string 1 length (513 characters)", "server maximum (512)",
           "DERENDER_MAX_STOP_STRING_CHARS"), ALL, param="stop"),
    Bound("stop string length (one string)", _stop_string_length, 512,
          ("stop string 0 length (513 characters)", "DERENDER_MAX_STOP_STRING_CHARS"), ALL,
          param="stop"),
    Bound("tools", _tools, 128,
          ("tools count (129)", "server maximum (128)", "DERENDER_MAX_TOOLS"), CHAT_ONLY,
          param="tools"),
    Bound("tool size", _tool_size, 64 * 1024,
          ("tools[1] size (65537 bytes of JSON)", "server maximum (65536 bytes)",
           "DERENDER_MAX_TOOL_SCHEMA_BYTES"), CHAT_ONLY, param="tools"),
)

CASES = [pytest.param(bound, route, stream,
                      id=f"{bound.name}-{route}-{'stream' if stream else 'whole'}")
         for bound in BOUNDS for route, stream in bound.where]


def post(client: TestClient, route: str, body: dict[str, Any] | bytes) -> Any:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post(CHAT if route == "chat" else COMPLETIONS, content=raw,
                       headers={"content-type": "application/json"})


def assert_limit(response: Any, status: int, says: tuple[str, ...], error_type: str,
                 param: str | None = None) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["code"], error["type"], error["param"]) == (status, error_type, param)
    for fragment in says:
        assert fragment in error["message"], (fragment, error["message"])
    return str(error["message"])


def poison(body: dict[str, Any]) -> None:
    """An id the vocabulary lacks in the output: reported only if decoding began."""
    chunks = body.get("generate_chunks") or [engine(body)]
    for chunk in chunks:
        for choice in chunk["choices"]:
            if choice.get("token_ids"):
                choice["token_ids"] = [*choice["token_ids"][:-1], UNKNOWN_ID]
                return


@pytest.mark.parametrize("bound, route, stream", CASES)
def test_at_the_bound_served_one_past_refused_before_decoding(
        app_with: Callable[..., TestClient], decoded: list[str], bound: Bound, route: str,
        stream: bool) -> None:
    client = app_with()
    at = base(route, stream)
    bound.apply(at, bound.bound)
    response = post(client, route, at)
    assert response.status_code == 200, response.text
    assert decoded, "the served call decoded nothing: the spies are not wired"

    decoded.clear()
    past = base(route, stream)
    bound.apply(past, bound.bound + 1)
    poison(past)
    assert_limit(post(client, route, past), 400, bound.says, bound.error_type, bound.param)
    assert decoded == []


# --------------------------------------------------------------------------- body size


@pytest.mark.parametrize("route, stream", ALL)
def test_the_body_size_bound(app_with: Callable[..., TestClient], decoded: list[str],
                             route: str, stream: bool) -> None:
    """Exactly ``DERENDER_MAX_BODY_BYTES`` is read; one byte more is a 413 before parsing
    (declared by Content-Length, or found while reading a body sent in chunks without
    one), even when the body is not even JSON."""
    client = app_with(max_body_bytes=MAX_BODY_BYTES)
    body = base(route, stream)
    response = post(client, route, padded(body, MAX_BODY_BYTES))
    assert response.status_code == 200, response.text
    assert decoded

    decoded.clear()
    poison(body)
    says = (f"{MAX_BODY_BYTES + 1} bytes", f"limit of {MAX_BODY_BYTES} bytes",
            "DERENDER_MAX_BODY_BYTES")
    assert_limit(post(client, route, padded(body, MAX_BODY_BYTES + 1)), 413, says,
                 "RequestTooLargeError")
    assert_limit(post(client, route, b"{" * (MAX_BODY_BYTES + 1)), 413, says,
                 "RequestTooLargeError")
    path = CHAT if route == "chat" else COMPLETIONS
    raw = padded(body, MAX_BODY_BYTES + 1)
    chunked = client.post(path, content=iter([raw[:1000], raw[1000:]]),
                          headers={"content-type": "application/json"})
    assert "content-length" not in chunked.request.headers
    assert_limit(chunked, 413, says[1:], "RequestTooLargeError")
    assert decoded == []
    raw = padded(base(route, stream), MAX_BODY_BYTES)
    served = client.post(path, content=iter([raw[:1000], raw[1000:]]),
                         headers={"content-type": "application/json"})
    assert served.status_code == 200, served.text


def test_a_chunked_body_is_not_read_past_the_limit(app_with: Callable[..., TestClient]
                                                   ) -> None:
    """Reading stops at the first part past the limit: the rest is never pulled. (Driven
    at the ASGI level: the test client would read the whole body before sending it.)"""
    app = app_with(max_body_bytes=MAX_BODY_BYTES).app
    pulled: list[int] = []
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        pulled.append(len(pulled))
        return {"type": "http.request", "body": b" " * 1024, "more_body": len(pulled) < 1000}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": CHAT, "raw_path": CHAT.encode(),
             "query_string": b"", "root_path": "", "client": ("test", 1),
             "server": ("test", 80), "headers": [(b"content-type", b"application/json")]}
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 413
    message = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))["error"]["message"]
    assert message == (f"Request body exceeds the limit of {MAX_BODY_BYTES} bytes "
                       "(DERENDER_MAX_BODY_BYTES).")
    assert len(pulled) == MAX_BODY_BYTES // 1024 + 1


# --------------------------------------------------------------------------- streaming over calls


@pytest.mark.parametrize("route", ROUTES)
def test_the_streaming_length_bound_counts_earlier_calls(
        app_with: Callable[..., TestClient], route: str) -> None:
    """Prompt + all output so far + this chunk: 10 + 5 + 1 is served, 10 + 5 + 2 is not."""
    client = app_with()
    first = base(route, True)
    first["prompt_token_ids"] = [ID] * 10
    first_choice(first)["token_ids"] = [ID] * 5
    response = post(client, route, first)
    assert response.status_code == 200, response.text
    state = response.json()["stream_state"]
    for n, served in ((1, True), (2, False)):
        body = base(route, True)
        body.update(prompt_token_ids=[ID] * 10, stream_state=state)
        first_choice(body)["token_ids"] = [ID] * n
        response = post(client, route, body)
        if served:
            assert response.status_code == 200, response.text
        else:
            assert_limit(response, 400, (
                "prompt_token_ids length (10) plus output_token_ids length (5) plus delta (2)",
                PAST_MODEL_LEN), "BadRequestError")


def test_a_batch_is_bounded_before_its_first_chunk_is_decoded(
        app_with: Callable[..., TestClient], decoded: list[str]) -> None:
    """The bounds of every chunk of a ``generate_chunks`` call are checked first: a batch
    whose last chunk is past a bound decodes nothing, not even its valid first chunks."""
    client = app_with()
    body = base("chat", True)
    chunk = body.pop("generate_chunk")
    past = copy.deepcopy(chunk)
    past["choices"][0]["logprobs"] = entries(1, MAX_LOGPROBS + 1)
    body["generate_chunks"] = [chunk, chunk, past]
    assert_limit(post(client, "chat", body), 400, ("top_logprobs count (3)",),
                 "BadRequestError")
    assert decoded == []


# --------------------------------------------------------------------------- stop strings


def test_a_stop_string_at_the_length_bound_still_streams(app_for_qwen3: TestClient) -> None:
    """Streaming holds back text that could begin a stop string, in the state. At the bound
    (512 characters) of the widest characters (4 bytes), the held text (511 characters)
    still fits the default state size, so the stream goes on and ends with the whole text."""
    emoji = [141334]  # 😀
    stop = "😀" * 511 + "!"
    assert len(stop) == 512
    body = base("chat", True)
    body.update(model="qwen3")
    request(body)["stop"] = [stop]
    first_choice(body)["token_ids"] = emoji * 511
    response = post(app_for_qwen3, "chat", body)
    assert response.status_code == 200, response.text
    assert response.json()["chunk"]["choices"][0]["delta"]["content"] is None  # all held
    state = response.json()["stream_state"]
    assert 2700 < len(state_token(state)) < 4096
    body.update(stream_state=state)
    first_choice(body).update(token_ids=[30], finish_reason="length")  # ?
    response = post(app_for_qwen3, "chat", body)
    assert response.status_code == 200, response.text
    assert response.json()["chunk"]["choices"][0]["delta"]["content"] == "😀" * 511 + "?"


@pytest.fixture(scope="module")
def app_for_qwen3() -> TestClient:
    return TestClient(create_app(Settings(models_dir=LAYER_MODELS, signing_keys=RING)))


# --------------------------------------------------------------------------- tools


@pytest.mark.parametrize("depth", [100, 900])
def test_a_deeply_nested_tool_is_a_400(app_with: Callable[..., TestClient], depth: int
                                       ) -> None:
    """However deep a tool's schema is nested (as deep as JSON parses here), it is
    measured or refused, never a 500."""
    body = base("chat", False)
    raw = json.dumps(body).replace(
        '"chat_request": {', '"chat_request": {"tools": [' + '{"a": [' * depth + "1"
        + "]}" * depth + "], ")
    response = post(app_with(max_tool_schema_bytes=10**9), "chat", raw.encode())
    assert response.status_code in (200, 400), response.text


# --------------------------------------------------------------------------- configuration


@pytest.mark.parametrize("setting, variable, bound, apply", [
    ("max_stop_strings", "DERENDER_MAX_STOP_STRINGS", 6, _stop_count),
    ("max_stop_string_chars", "DERENDER_MAX_STOP_STRING_CHARS", 1000, _stop_length),
    ("max_tools", "DERENDER_MAX_TOOLS", 2, _tools),
    ("max_tool_schema_bytes", "DERENDER_MAX_TOOL_SCHEMA_BYTES", 200, _tool_size),
    ("max_n_sequences", "DERENDER_MAX_N_SEQUENCES", 5, _choices),
])
def test_each_configurable_bound_follows_its_variable(
        app_with: Callable[..., TestClient], models: Path, setting: str, variable: str,
        bound: int, apply: Callable[[dict[str, Any], int], None]) -> None:
    settings = Settings.from_env({"DERENDER_MODELS_DIR": str(models), variable: str(bound)})
    assert getattr(settings, setting) == bound
    client = app_with(**{setting: bound})
    for n, status in ((bound, 200), (bound + 1, 400)):
        body = base("chat", False)
        apply(body, n)
        response = post(client, "chat", body)
        assert response.status_code == status, response.text
        if status == 400:
            assert variable in response.json()["error"]["message"]
    with pytest.raises(ValueError, match=variable):
        Settings.from_env({variable: "0"})


def test_the_defaults_are_the_documented_ones() -> None:
    settings = Settings(models_dir=Path("."))
    assert (settings.max_body_bytes, settings.max_n_sequences, settings.max_state_chars,
            settings.max_stop_strings, settings.max_stop_string_chars, settings.max_tools,
            settings.max_tool_schema_bytes) == (32 * 1024 * 1024, 16384, 12288, 4, 512, 128,
                                                65536)
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for row in ("| `DERENDER_MAX_STOP_STRINGS` | 4 |", "| `DERENDER_MAX_STOP_STRING_CHARS` | 512 |",
                "| `DERENDER_MAX_TOOLS` | 128 |", "| `DERENDER_MAX_TOOL_SCHEMA_BYTES` | 65536 |",
                "| `DERENDER_MAX_BODY_BYTES` | 33554432 |",
                "| `DERENDER_MAX_N_SEQUENCES` | 16384 |", "| `DERENDER_MAX_STATE_CHARS` | 12288 |"):
        assert row in readme, row
