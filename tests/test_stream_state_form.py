"""``stream_state`` as vLLM 0.33 types it (issue 21, section 1).

vLLM 0.33 declares the state a JSON object (``DerenderStreamState``); real coordinators
(Huawei MindIE Motor's render client) validate the answer with ``stream_state: dict[str, Any]``,
keep one state per choice and deep-copy it around engine retries. Some validate with vLLM's own
``DerenderChatStreamResponse``, whose ``DerenderStreamState`` drops unknown fields and adds
every field's default on dump. derender answers ``{"prev_tokens": ["derender:<token>"]}``: the
one field of that model that carries a string through its validation and dump.

The double of vLLM's models below copies the fields, types, bounds and defaults of
``vllm/entrypoints/scale_out/token_in_token_out/protocol.py`` (vLLM 0.33.0, the peer kit's
venv); its behaviour was checked against the real models there with
``scripts/check_vllm_state_models.py`` (docs/recording/dropin.md: a dump of our object keeps
``prev_tokens`` and adds the nine other fields at their defaults; unknown fields are dropped; a
string is refused).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Annotated, Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field, ValidationError, model_validator
from tokenizers import Tokenizer

from derender.app.main import create_app
from derender.core.registry import ModelRegistry
from derender.settings import Settings
from tests.conftest import model_folder, require_model

CHAT = "/v1/chat/completions/derender"
RING = "k1:current-secret-0123456789abcdef"
PROMPT = "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n"
OUTPUT = ('Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}'
          '\n</tool_call>')
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
REQUEST = {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": TOOLS}


# --------------------------------------------------------------------------- vLLM's models


class VllmStreamState(BaseModel):
    """Double of vLLM 0.33's ``DerenderStreamState``: these fields and defaults; pydantic's
    default ``extra="ignore"`` drops anything else."""

    prev_tokens: list[str] = Field(default_factory=list, max_length=1024)
    prefix_offset: int = Field(default=0, ge=0)
    read_offset: int = Field(default=0, ge=0)
    role_sent: bool = False
    logprob_context_token_ids: list[int] = Field(default_factory=list, max_length=4)
    logprob_text_offset: int = Field(default=0, ge=0)
    output_token_ids: list[int] = Field(default_factory=list)
    output_chunk_lens: list[Annotated[int, Field(gt=0)]] = Field(default_factory=list)
    tools_streamed: bool = False
    last_tool_call_ids: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _lens(self) -> VllmStreamState:
        if sum(self.output_chunk_lens) != len(self.output_token_ids):
            raise ValueError("output_chunk_lens must sum to len(output_token_ids)")
        return self


class VllmChatStreamResponse(BaseModel):
    """Double of vLLM 0.33's ``DerenderChatStreamResponse`` (the chunk left as a dict)."""

    chunk: dict[str, Any]
    stream_state: VllmStreamState


class MotorStreamResponse(BaseModel):
    """How MindIE Motor's render client types the answer: the state a ``dict[str, Any]``."""

    chunk: dict[str, Any]
    stream_state: dict[str, Any]


def test_the_double_behaves_as_vllms_models() -> None:
    """What the real models do (checked in the peer venv): defaults added on dump, unknown
    fields dropped, a string refused."""
    dumped = VllmStreamState.model_validate({"prev_tokens": ["x"], "token": "y"}).model_dump()
    assert dumped == {"prev_tokens": ["x"], "prefix_offset": 0, "read_offset": 0,
                      "role_sent": False, "logprob_context_token_ids": [],
                      "logprob_text_offset": 0, "output_token_ids": [],
                      "output_chunk_lens": [], "tools_streamed": False,
                      "last_tool_call_ids": []}
    assert VllmStreamState.model_validate({"derender": "tok"}).model_dump()["prev_tokens"] == []
    with pytest.raises(ValidationError):
        VllmChatStreamResponse.model_validate({"chunk": {}, "stream_state": "a-token"})


# --------------------------------------------------------------------------- the app


@pytest.fixture(scope="module")
def app_for(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``app_for(**settings)``: qwen3 with the hermes tool parser, signed with ``RING``."""
    require_model("qwen3")
    root = tmp_path_factory.mktemp("state-form")
    folder = root / "models"
    (folder / "qwen3").mkdir(parents=True)
    for file in model_folder("qwen3").iterdir():
        if file.name != "derender.json":
            (folder / "qwen3" / file.name).symlink_to(file)
    (folder / "qwen3" / "derender.json").write_text(json.dumps(
        {"served_names": ["qwen3"], "reasoning_parser": None, "tool_parser": "hermes"}))
    clients: dict[tuple[Any, ...], TestClient] = {}
    with ExitStack() as stack:

        def get(**overrides: Any) -> TestClient:
            key = tuple(sorted(overrides.items()))
            if key not in clients:
                settings = Settings(models_dir=folder, signing_keys=RING, **overrides)
                app = create_app(settings, ModelRegistry(folder))
                clients[key] = stack.enter_context(TestClient(app))
            return clients[key]

        yield get


def _ids(text: str) -> list[int]:
    tokenizer = Tokenizer.from_file(str(model_folder("qwen3") / "tokenizer.json"))
    return list(tokenizer.encode(text, add_special_tokens=False).ids)


def _engine_chunks() -> list[dict[str, Any]]:
    ids = [*_ids(OUTPUT), 151645]
    sizes = [3, 2, 5, 1, 4, 6, len(ids)]
    chunks, at = [], 0
    for size in sizes:
        part = ids[at:at + size]
        if not part:
            break
        at += len(part)
        chunks.append({"request_id": "form", "choices": [{
            "index": 0, "token_ids": part,
            "finish_reason": "stop" if at >= len(ids) else None}]})
    return chunks


def _call(client: TestClient, chunk: dict[str, Any], state: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"stream": True, "model": "qwen3", "generate_chunk": chunk,
                            "prompt_token_ids": _ids(PROMPT), "chat_request": REQUEST}
    if state is not None:
        body["stream_state"] = state
    response = client.post(CHAT, content=json.dumps(body),
                           headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def _folded(chunks: list[dict[str, Any]]) -> tuple[str, list[tuple[str, str]], str | None]:
    """Content, (name, arguments) of each call, and the finish reason of a chunk stream."""
    content, calls, finish = "", [], None
    for chunk in chunks:
        for choice in chunk["choices"]:
            delta = choice["delta"]
            content += delta.get("content") or ""
            for call in delta.get("tool_calls") or []:
                if call["index"] == len(calls):
                    calls.append(["", ""])
                function = call.get("function") or {}
                calls[call["index"]][0] += function.get("name") or ""
                calls[call["index"]][1] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    return content, [(name, args) for name, args in calls], finish


def _straight(client: TestClient) -> list[dict[str, Any]]:
    state, out = None, []
    for chunk in _engine_chunks():
        answer = _call(client, chunk, state)
        out.append(answer["chunk"])
        state = answer["stream_state"]
    return out


def test_the_state_is_a_json_object_holding_the_signed_token(app_for: Any) -> None:
    answer = _call(app_for(), _engine_chunks()[0], None)
    state = answer["stream_state"]
    assert isinstance(state, dict) and list(state) == ["prev_tokens"]
    (entry,) = state["prev_tokens"]
    assert entry.startswith("derender:") and len(entry) > 60


def test_the_stream_reads_the_call_from_the_recorded_output(app_for: Any) -> None:
    """The reference fold every other test compares with: hermes reads the call."""
    content, calls, finish = _folded(_straight(app_for()))
    assert content == "Let me check.\n"
    assert calls == [("get_weather", '{"city": "Paris"}')]
    assert finish == "tool_calls"


def test_a_dict_typed_client_keeps_its_stream(app_for: Any) -> None:
    """Validated as MindIE Motor types it (``stream_state: dict[str, Any]``) at every call."""
    client = app_for()
    state, out = None, []
    for chunk in _engine_chunks():
        answer = MotorStreamResponse.model_validate(_call(client, chunk, state))
        out.append(answer.chunk)
        state = answer.stream_state
    assert _folded(out) == _folded(_straight(client))


def test_vllms_models_round_trip_keeps_the_stream(app_for: Any) -> None:
    """Each answer validated with (the double of) vLLM's ``DerenderChatStreamResponse`` and
    the state sent back as it dumps it: every default field added, the token kept."""
    client = app_for()
    state: Any = None
    out = []
    for chunk in _engine_chunks():
        answer = VllmChatStreamResponse.model_validate(_call(client, chunk, state))
        out.append(answer.chunk)
        state = answer.stream_state.model_dump(mode="json")
        assert len(state) == 10 and state["prev_tokens"][0].startswith("derender:")
    assert _folded(out) == _folded(_straight(client))


def test_a_deep_copied_snapshot_restores_the_stream_around_a_retried_engine_chunk(
        app_for: Any) -> None:
    """A coordinator snapshots the state (deep copy) before sending an engine chunk; the engine
    is retried and re-sends that chunk, so the answer to the first attempt is thrown away and
    the chunk is sent again with the restored snapshot. The stream is as if sent once."""
    client = app_for()
    chunks = _engine_chunks()
    state: Any = None
    out = []
    for k, chunk in enumerate(chunks):
        snapshot = copy.deepcopy(state)
        first = _call(client, chunk, state)
        if k in (1, 3):  # the engine failed after this chunk: retried from the snapshot
            first["stream_state"]["prev_tokens"].clear()  # whatever the client did to it
            state = snapshot
            again = _call(client, chunk, state)
            assert again == first | {"stream_state": again["stream_state"]}
            first = again
        out.append(first["chunk"])
        state = first["stream_state"]
    assert _folded(out) == _folded(_straight(client))


def test_the_string_form_of_earlier_releases_is_accepted_back(app_for: Any) -> None:
    """A stream begun by a release that answered the bare token continues on this one (the
    same keys), and ``DERENDER_STATE_FORM=string`` still answers that form."""
    old, new = app_for(state_form="string"), app_for()
    chunks = _engine_chunks()
    first = _call(old, chunks[0], None)
    assert isinstance(first["stream_state"], str)
    state, out = first["stream_state"], [first["chunk"]]
    for chunk in chunks[1:]:
        answer = _call(new, chunk, state)
        out.append(answer["chunk"])
        state = answer["stream_state"]
        assert isinstance(state, dict)
    assert _folded(out) == _folded(_straight(new))


@pytest.mark.parametrize("state", [
    {"prev_tokens": []},
    {"prev_tokens": ["Ġthe"], "prefix_offset": 0},
    {"prev_tokens": ["derender:AAAA", "derender:AAAA"]},
    {"token": "derender:AAAA"},
    ["derender:AAAA"],
    42,
])
def test_anything_else_is_refused_with_a_400(app_for: Any, state: Any) -> None:
    body = {"stream": True, "model": "qwen3", "generate_chunk": _engine_chunks()[1],
            "prompt_token_ids": _ids(PROMPT), "chat_request": REQUEST, "stream_state": state}
    response = app_for().post(CHAT, content=json.dumps(body),
                              headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "BadRequestError"
    assert error["message"].startswith("stream_state must be the state returned"), error


def test_a_tampered_token_in_the_object_is_refused(app_for: Any) -> None:
    client = app_for()
    state = _call(client, _engine_chunks()[0], None)["stream_state"]
    entry = state["prev_tokens"][0]
    flipped = entry[:-5] + ("A" if entry[-5] != "A" else "B") + entry[-4:]
    body = {"stream": True, "model": "qwen3", "generate_chunk": _engine_chunks()[1],
            "prompt_token_ids": _ids(PROMPT), "chat_request": REQUEST,
            "stream_state": {"prev_tokens": [flipped]}}
    response = client.post(CHAT, json=body)
    assert response.status_code == 400
    assert "signature does not match" in response.json()["error"]["message"]
