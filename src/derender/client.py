"""Client helper: engine SSE chunks in, OpenAI chunks out, with the stream state carried.

The service is stateless; a streaming client sends each engine chunk with the
``stream_state`` the previous call returned. These helpers do that bookkeeping (one state per
choice index, so ``n > 1`` works) for a sync or async iterator of engine chunks, given either
as parsed dicts or as the raw SSE lines of ``/inference/v1/generate``::

    for chunk in stream_derender(engine_lines, base_url="http://127.0.0.1:8000",
                                 prompt_token_ids=prompt_ids, chat_request=request):
        print(chunk["choices"][0]["delta"].get("content") or "", end="")

Requires ``httpx`` (``pip install 'derender[client]'``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

JSON = dict[str, Any]
Route = Literal["chat", "completions"]

PATHS: dict[Route, str] = {
    "chat": "/v1/chat/completions/derender",
    "completions": "/v1/completions/derender",
}


class DerenderError(Exception):
    """The service refused a call; ``status`` and ``error`` are its envelope."""

    def __init__(self, status: int, error: JSON) -> None:
        super().__init__(f"{status} {error.get('type')}: {error.get('message')}")
        self.status = status
        self.error = error


def parse_sse(line: str | bytes) -> JSON | None:
    """One SSE line of the engine's stream → its JSON chunk (None for other lines/[DONE])."""
    text = line.decode("utf-8") if isinstance(line, bytes) else line
    text = text.strip()
    if not text.startswith("data:"):
        return None
    payload = text[len("data:"):].strip()
    if not payload or payload == "[DONE]":
        return None
    chunk: JSON = json.loads(payload)
    return chunk


def _as_chunk(item: JSON | str | bytes) -> JSON | None:
    return item if isinstance(item, dict) else parse_sse(item)


@dataclass
class StreamSession:
    """The request fields repeated on every call, and the per-choice states."""

    route: Route = "chat"
    model: str | None = None
    prompt_token_ids: list[int] | None = None
    prompt_tokens: int | None = None
    request: JSON | None = None
    """The ``chat_request`` / ``completion_request`` from render."""
    states: dict[int, str] = field(default_factory=dict)

    def body(self, chunk: JSON) -> JSON:
        body: JSON = {"stream": True, "model": self.model, "generate_chunk": chunk,
                      "prompt_token_ids": self.prompt_token_ids,
                      "prompt_tokens": self.prompt_tokens}
        body["chat_request" if self.route == "chat" else "completion_request"] = self.request
        choices = chunk.get("choices") or []
        index = choices[0].get("index", 0) if choices else None
        state = self.states.get(index) if index is not None else next(
            iter(self.states.values()), None)
        if state is not None:
            body["stream_state"] = state
        return body

    def take(self, status: int, data: JSON, chunk: JSON) -> JSON:
        if status != 200:
            raise DerenderError(status, data.get("error") or {"message": str(data)})
        choices = chunk.get("choices") or []
        if choices:
            self.states[choices[0].get("index", 0)] = data["stream_state"]
        elif not self.states:
            self.states[0] = data["stream_state"]
        result: JSON = data["chunk"]
        return result


def stream_derender(chunks: Iterable[JSON | str | bytes], *, base_url: str,
                    route: Route = "chat", model: str | None = None,
                    prompt_token_ids: list[int] | None = None, prompt_tokens: int | None = None,
                    chat_request: JSON | None = None, completion_request: JSON | None = None,
                    client: httpx.Client | None = None) -> Iterator[JSON]:
    """Yield one OpenAI chunk per engine chunk, calling the service synchronously."""
    session = StreamSession(route, model, prompt_token_ids, prompt_tokens,
                            chat_request if route == "chat" else completion_request)
    own = client is None
    http = client or httpx.Client(base_url=base_url, timeout=30.0)
    try:
        for item in chunks:
            chunk = _as_chunk(item)
            if chunk is None:
                continue
            response = http.post(PATHS[route], json=session.body(chunk))
            yield session.take(response.status_code, response.json(), chunk)
    finally:
        if own:
            http.close()


async def astream_derender(chunks: AsyncIterable[JSON | str | bytes] | Iterable[JSON | str | bytes],
                           *, base_url: str, route: Route = "chat", model: str | None = None,
                           prompt_token_ids: list[int] | None = None,
                           prompt_tokens: int | None = None, chat_request: JSON | None = None,
                           completion_request: JSON | None = None,
                           client: httpx.AsyncClient | None = None) -> AsyncIterator[JSON]:
    """Async twin of :func:`stream_derender`."""
    session = StreamSession(route, model, prompt_token_ids, prompt_tokens,
                            chat_request if route == "chat" else completion_request)
    own = client is None
    http = client or httpx.AsyncClient(base_url=base_url, timeout=30.0)
    try:
        async for item in _aiter(chunks):
            chunk = _as_chunk(item)
            if chunk is None:
                continue
            response = await http.post(PATHS[route], json=session.body(chunk))
            yield session.take(response.status_code, response.json(), chunk)
    finally:
        if own:
            await http.aclose()


async def _aiter(items: AsyncIterable[JSON | str | bytes] | Iterable[JSON | str | bytes]
                 ) -> AsyncIterator[JSON | str | bytes]:
    if isinstance(items, AsyncIterable):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item
