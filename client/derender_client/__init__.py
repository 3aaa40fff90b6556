"""derender's streaming client: engine SSE chunks in, OpenAI chunks out, with the stream state
carried.

The service is stateless; a streaming client sends each engine chunk with the
``stream_state`` the previous call returned. These helpers do that bookkeeping (one state per
choice index, so ``n > 1`` works) for a sync or async iterator of engine chunks, given either
as parsed dicts or as the raw SSE lines of ``/inference/v1/generate``::

    for chunk in stream_derender(engine_lines, base_url=api_url, auth=SigV4("eu-west-1"),
                                 max_delay_ms=5, prompt_token_ids=prompt_ids,
                                 chat_request=request):
        for choice in chunk["choices"]:
            print(choice["delta"].get("content") or "", end="")

What they do on the way (one engine written once, async; the sync API runs it on a private
event loop thread):

- **Coalescing.** Per choice index at most one call is in flight. Engine chunks of that choice
  arriving meanwhile queue up and go in its next call as one ``generate_chunks`` batch (a
  single queued chunk as ``generate_chunk``), at most ``max_batch`` per call. Nothing waits
  that need not: without ``max_delay_ms`` a call starts as soon as its choice has a chunk and
  no call in flight; with it, the oldest queued chunk may wait up to that long for more (a
  full batch, a chunk with a ``finish_reason``, a chunk without choices or the end of the
  engine stream stop the wait). Choices proceed concurrently, each in order. A chunk without
  choices (the usage chunk) goes in order with the choice whose chunk came first, with its state.
- **Order.** One OpenAI chunk comes out per engine chunk, in the order the engine chunks
  arrived, across choices too: a chunk is yielded once its call has returned and every
  earlier chunk has been yielded (when choice 1's call returns before choice 0's earlier one,
  its chunks wait for choice 0's).
- **Retries.** Connection errors, timeouts, an answer whose body cannot be read, 429, 502, 503
  and 504 are retried with the same body (the same state: the service answers the same
  bytes) after a capped exponential backoff with full jitter, or the ``Retry-After`` the answer
  gives (capped), within :class:`RetryPolicy`'s attempts and deadline; then
  :class:`DerenderUnavailableError`. Any other refusal raises :class:`DerenderError` at once,
  with the service's error envelope.
- **Backpressure.** The engine stream is read at most ``max_ahead`` chunks ahead of the
  consumer (read, not yet yielded: queued, in a call, or answered and waiting), so a slow
  consumer slows the reading instead of growing memory with the whole generation.
- **Interruption.** Closing the stream (the sync :class:`SyncStream` from any thread), an
  error or the ``deadline`` ends it at once; ``interrupt`` is then called while the engine
  stream is unfinished, so that a read blocked in it can return.
- **Authentication.** ``auth=SigV4(region, service)`` signs every attempt afresh with botocore's
  SigV4 signer and its default credential chain (``execute-api`` for API Gateway, ``lambda``
  for Function URLs); ``auth=BearerToken(token)`` sends ``Authorization: Bearer …``. Any
  ``httpx.Auth`` works.

A distribution of its own (``derender-client``, the ``client/`` folder of derender's
repository): it requires ``httpx`` only, and botocore for SigV4 (the ``sigv4`` extra:
``pip install './client[sigv4]'``). It imports nothing of the service: the route paths, the
batch limit and the statuses it retries are written here, and derender's tests check them
against the service's own definitions (``tests/test_contract.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import queue
import random
import threading
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
)
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import httpx

__version__ = "0.1.0"
"""The client's version: derender's, whose wire contract it speaks (``tests/test_contract.py``
checks that they agree)."""

JSON = dict[str, Any]
Route = Literal["chat", "completions"]
"""The two derender routes by name (the service's ``contract.routes.DerenderRoute``)."""
State = JSON | str
"""A ``stream_state`` as the service answers it: a JSON object (``DERENDER_STATE_FORM=object``,
the default, as vLLM 0.33 types it) or the bare string of earlier releases; sent back as it
came."""
Item = JSON | str | bytes

PATHS: dict[Route, str] = {"chat": "/v1/chat/completions/derender",
                           "completions": "/v1/completions/derender"}
"""Each route's path (vLLM 0.33's; the service's ``contract.routes.DERENDER``)."""
MAX_BATCH = 4096
"""Most engine chunks the service takes in one ``generate_chunks`` call (its
``settings.MAX_BATCH_CHUNKS``)."""
RETRY_STATUSES = frozenset({429, 502, 503, 504})
"""Answers retried: throttling, the gateway's own failures, and ours when no signing key
could be read (503 ``ServiceUnavailableError``, the only status of the service's own error
types that is retried)."""
RETRY_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
"""Transport failures retried: timeouts, connect/read/write errors, a connection closed or
reset before the whole answer arrived."""
SYNC_THREADS = 64
"""Threads of the sync API that carry calls (one per choice in flight); the engine stream is
read on a thread of its own."""
SHUTDOWN_WAIT = 10.0
"""Most seconds closing a sync stream waits for its event loop to wind down (cancelled
tasks end at once; this only bounds a loop that is already gone, e.g. at process exit)."""
MAX_AHEAD = 1024
"""Default ``max_ahead``: most engine chunks read but not yet taken by the consumer."""
_HEADERS = {"Content-Type": "application/json"}


class DerenderError(Exception):
    """The service refused a call; ``status`` and ``error`` are its envelope."""

    def __init__(self, status: int, error: JSON) -> None:
        super().__init__(f"{status} {error.get('type')}: {error.get('message')}")
        self.status = status
        self.error = error


class StreamDeadlineError(TimeoutError):
    """The stream's ``deadline`` passed before its end; the stream is over (engine read and
    calls in flight abandoned, ``interrupt`` called)."""


class DerenderUnavailableError(DerenderError):
    """Retries ran out (``attempts`` made, or the deadline passed). ``status`` and ``error``
    describe the last failure: the answer's status and envelope, or status 0 and the
    transport error (also the exception's ``__cause__``) when no answer came."""

    def __init__(self, status: int, error: JSON, attempts: int, reason: str) -> None:
        super().__init__(status, error)
        self.attempts = attempts
        self.args = (f"{reason} after {attempts} attempt{'s' if attempts != 1 else ''}; "
                     f"last: {self.args[0]}",)


@dataclass(frozen=True)
class RetryPolicy:
    """How a call is retried. ``attempts`` counts the first one (1: never retry);
    ``deadline`` (seconds, None: none) bounds one call's attempts and waits together."""

    attempts: int = 6
    backoff_base: float = 0.05
    """Seconds; retry k waits uniformly in [0, min(backoff_cap, backoff_base * 2**(k-1)))."""
    backoff_cap: float = 2.0
    deadline: float | None = 60.0
    retry_after_cap: float = 10.0
    """Most seconds a ``Retry-After`` answer makes the client wait."""
    rng: random.Random | None = field(default=None, compare=False, repr=False)
    """Source of the jitter (seed one for reproducible waits); default a fresh one."""

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("RetryPolicy.attempts must be at least 1")
        if self.backoff_base < 0 or self.backoff_cap < 0 or self.retry_after_cap < 0:
            raise ValueError("RetryPolicy waits must not be negative")
        if self.deadline is not None and self.deadline <= 0:
            raise ValueError("RetryPolicy.deadline must be positive (or None)")

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.retry_after_cap)
        ceiling = min(self.backoff_cap, self.backoff_base * 2.0 ** min(retry - 1, 64))
        return rng.uniform(0.0, ceiling)


NO_RETRY = RetryPolicy(attempts=1, deadline=None)


# ----------------------------------------------------------------------------- auth


class BearerToken(httpx.Auth):
    """``Authorization: Bearer <token>`` (a ``jwt`` endpoint); a callable is asked for the
    token on every attempt, so it may refresh it."""

    def __init__(self, token: str | Callable[[], str]) -> None:
        self._token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self._token() if callable(self._token) else self._token
        request.headers["Authorization"] = f"Bearer {token}"
        yield request


class SigV4(httpx.Auth):
    """AWS Signature Version 4 for an ``iam`` endpoint, by botocore's ``SigV4Auth``.

    ``service``: ``execute-api`` for API Gateway, ``lambda`` for a Function URL.
    ``credentials``: botocore credentials; default the default chain
    (``botocore.session.Session().get_credentials()``: environment, shared files, container or
    instance role), looked up on the first signature. Every attempt is signed afresh (its
    ``X-Amz-Date`` is the time of the attempt; refreshable credentials are refreshed). Signed:
    ``content-type``, ``host``, ``x-amz-date`` (and ``x-amz-security-token`` with session
    credentials); the payload hash covers the body. botocore is imported on first use.
    """

    requires_request_body = True

    def __init__(self, region: str, service: str = "execute-api",
                 credentials: Any = None) -> None:
        self.region = region
        self.service = service
        self._credentials = credentials
        self._lock = threading.Lock()

    def credentials(self) -> Any:
        with self._lock:
            if self._credentials is None:
                import botocore.session  # noqa: PLC0415 - only when signing is asked for

                found = botocore.session.Session().get_credentials()
                if found is None:
                    raise RuntimeError("SigV4: no AWS credentials found by botocore's default "
                                       "chain (environment, ~/.aws, container or instance role)")
                self._credentials = found
            return self._credentials

    def sign(self, request: httpx.Request) -> None:
        """Add ``Authorization``, ``X-Amz-Date`` (and ``X-Amz-Security-Token``) to ``request``."""
        from botocore.auth import SigV4Auth  # noqa: PLC0415 - only when signing is asked for
        from botocore.awsrequest import AWSRequest  # noqa: PLC0415

        credentials = self.credentials()
        frozen = credentials.get_frozen_credentials()
        signed = {"Content-Type": request.headers.get("content-type", "application/json")}
        aws = AWSRequest(method=request.method, url=str(request.url), data=request.content,
                         headers=signed)
        SigV4Auth(frozen, self.service, self.region).add_auth(aws)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            value = aws.headers.get(name)
            if value is not None:
                request.headers[name] = value

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        self.sign(request)
        yield request


# ----------------------------------------------------------------------------- SSE and bodies


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


def _as_chunk(item: Item) -> JSON | None:
    return item if isinstance(item, dict) else parse_sse(item)


@dataclass
class StreamSession:
    """The request fields repeated on every call of a stream."""

    route: Route = "chat"
    model: str | None = None
    prompt_token_ids: list[int] | None = None
    prompt_tokens: int | None = None
    request: JSON | None = None
    """The ``chat_request`` / ``completion_request`` from render."""

    def body(self, chunks: list[JSON], state: State | None) -> JSON:
        """The call for ``chunks`` (consecutive chunks of one choice) continuing ``state``."""
        body: JSON = {"stream": True, "model": self.model,
                      "prompt_token_ids": self.prompt_token_ids,
                      "prompt_tokens": self.prompt_tokens}
        body["chat_request" if self.route == "chat" else "completion_request"] = self.request
        if len(chunks) == 1:
            body["generate_chunk"] = chunks[0]
        else:
            body["generate_chunks"] = chunks
        if state is not None:
            body["stream_state"] = state
        return body


def _envelope(raw: bytes) -> JSON:
    try:
        data = json.loads(raw)
    except ValueError:
        return {"message": raw[:500].decode("utf-8", "replace")}
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else {"message": str(data)[:500]}


def _answer(raw: bytes, count: int) -> tuple[list[JSON], State] | None:
    """The chunks and state of a 200 answer to ``count`` chunks; None when the body cannot
    be read (cut short or not JSON: retried)."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    chunks = data.get("chunks", [data.get("chunk")]) if isinstance(data, dict) else None
    state = data.get("stream_state") if isinstance(data, dict) else None
    if (not isinstance(chunks, list) or len(chunks) != count
            or not all(isinstance(c, dict) for c in chunks) or not isinstance(state, (dict, str))):
        raise DerenderError(200, {"type": "UnexpectedAnswer", "message":
                                  f"expected {count} chunk(s) and a stream_state, got "
                                  f"{raw[:300].decode('utf-8', 'replace')}"})
    return chunks, state


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """A ``Retry-After`` header's wait: delay-seconds or an HTTP-date (None: absent/unreadable)."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


# ----------------------------------------------------------------------------- the engine


Send = Callable[[bytes, float], Awaitable[tuple[int, Mapping[str, str], bytes]]]
"""One attempt: the body and a timeout in seconds → status, headers and body of the answer."""


@dataclass(frozen=True)
class _Options:
    max_batch: int
    max_delay: float | None
    retry: RetryPolicy
    timeout: float
    max_ahead: int = MAX_AHEAD
    deadline: float | None = None


def _options(max_batch: int, max_delay_ms: float | None, retry: RetryPolicy | None,
             timeout: float, max_ahead: int = MAX_AHEAD,
             deadline: float | None = None) -> _Options:
    if not 1 <= max_batch <= MAX_BATCH:
        raise ValueError(f"max_batch must be between 1 and {MAX_BATCH}")
    if max_delay_ms is not None and max_delay_ms < 0:
        raise ValueError("max_delay_ms must not be negative")
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    if max_ahead < 1:
        raise ValueError("max_ahead must be at least 1")
    if deadline is not None and deadline <= 0:
        raise ValueError("deadline must be positive (or None)")
    return _Options(max_batch, None if not max_delay_ms else max_delay_ms / 1000.0,
                    retry or RetryPolicy(), timeout, max_ahead, deadline)


async def post_with_retries(send: Send, content: bytes, count: int, policy: RetryPolicy,
                            rng: random.Random, timeout: float) -> tuple[list[JSON], State]:
    """One call (``count`` chunks), retried per ``policy`` with the same ``content``."""
    loop = asyncio.get_running_loop()
    end = None if policy.deadline is None else loop.time() + policy.deadline
    attempt = 0
    last: tuple[int, JSON] = (0, {})
    cause: BaseException | None = None
    while True:
        remaining = None if end is None else end - loop.time()
        if attempt and remaining is not None and remaining <= 0:  # the backoff overslept
            raise DerenderUnavailableError(*last, attempt, f"deadline of {policy.deadline} s "
                                           "passed") from cause
        attempt += 1
        cause = None
        retry_after = None
        try:
            per_try = timeout if remaining is None else max(min(timeout, remaining), 0.001)
            async with asyncio.timeout(remaining):  # not wait_for: on 3.11 it can swallow a
                status, headers, raw = await send(content, per_try)  # cancel (gh-86296)
        except TimeoutError as exc:
            if end is not None and loop.time() >= end:  # the deadline passed during the attempt
                if attempt == 1:  # else the last failure seen says more
                    last = (0, {"type": "Timeout", "message": "no answer before the deadline"})
                raise DerenderUnavailableError(
                    *last, attempt, f"deadline of {policy.deadline} s passed") from exc
            cause = exc
            last = (0, {"type": "Timeout", "message": str(exc) or "timed out"})
        except RETRY_ERRORS as exc:
            cause = exc
            last = (0, {"type": type(exc).__name__, "message": str(exc) or type(exc).__name__})
        else:
            if status == 200:
                answer = _answer(raw, count)
                if answer is not None:
                    return answer
                last = (200, {"type": "UnreadableAnswer", "message": "the answer's body is not "
                              "JSON (cut short?)"})
            elif status in RETRY_STATUSES:
                last = (status, _envelope(raw))
                retry_after = retry_after_seconds(headers.get("retry-after"))
            else:
                raise DerenderError(status, _envelope(raw))
        if attempt >= policy.attempts:
            raise DerenderUnavailableError(*last, attempt, "retries exhausted") from cause
        wait = policy.delay(attempt, retry_after, rng)
        if end is not None and loop.time() + wait >= end:
            raise DerenderUnavailableError(*last, attempt, f"deadline of {policy.deadline} s "
                                           "would pass before the next attempt") from cause
        await asyncio.sleep(wait)


@dataclass
class _Queued:
    seq: int
    at: float
    chunk: JSON
    final: bool
    """Nothing is expected after it in its queue: a finish_reason, or no choice (usage)."""


@dataclass
class _Lane:
    """One choice index: its queue, its state, a flag raised when something arrives."""

    index: int
    queue: deque[_Queued] = field(default_factory=deque)
    state: State | None = None
    more: asyncio.Event = field(default_factory=asyncio.Event)


class _Run:
    """One stream through the coalescing engine (see the module docstring)."""

    def __init__(self, session: StreamSession, send: Send, options: _Options,
                 consumed: Callable[[], int] | None = None) -> None:
        self.session = session
        self.send = send
        self.options = options
        self.rng = options.retry.rng or random.Random()
        self.loop = asyncio.get_running_loop()
        self.lanes: dict[int, _Lane] = {}
        self.primary: int | None = None
        """The lane of chunks without choices: the first choice seen (0 if none yet)."""
        self.results: dict[int, JSON] = {}
        self.arrived = 0
        self.emitted = 0
        self.room = asyncio.Event()
        """Raised when the consumer takes a chunk (the read-ahead window has room again)."""
        self.consumed = consumed
        """How many chunks the consumer took, where it is not the one iterating ``outputs``
        (the sync API's caller); it then raises ``room`` while ``reader_waiting``."""
        self.reader_waiting = False
        self.source_done = False
        self.error: BaseException | None = None
        self.ready = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []

    def fail(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
        self.ready.set()

    def lane_of(self, chunk: JSON) -> _Lane:
        choices = chunk.get("choices") or []
        index = int(choices[0].get("index", 0)) if choices else (
            self.primary if self.primary is not None else 0)
        lane = self.lanes.get(index)
        if lane is None:
            lane = self.lanes[index] = _Lane(index)
            if self.primary is None:
                self.primary = index
            self.tasks.append(self.loop.create_task(self.work(lane)))
        return lane

    def full(self) -> bool:
        """``max_ahead`` engine chunks are read and not yet taken by the consumer."""
        taken = self.emitted if self.consumed is None else self.consumed()
        return self.arrived - taken >= self.options.max_ahead

    async def read(self, source: AsyncIterator[Item]) -> None:
        """Read the engine stream into the lanes, never more than ``max_ahead`` chunks ahead
        of the consumer: the next item is asked for only when the window has room."""
        try:
            while True:
                while self.full():
                    self.room.clear()
                    self.reader_waiting = True  # then checked again: no wake-up is lost
                    if self.full():
                        await self.room.wait()
                    self.reader_waiting = False
                try:
                    item = await anext(source)
                except StopAsyncIteration:
                    break
                chunk = _as_chunk(item)
                if chunk is None:
                    continue
                choices = chunk.get("choices") or []
                final = not choices or any(c.get("finish_reason") for c in choices)
                lane = self.lane_of(chunk)
                lane.queue.append(_Queued(self.arrived, self.loop.time(), chunk, final))
                self.arrived += 1
                lane.more.set()
        except Exception as exc:
            self.fail(exc)
            return
        self.source_done = True
        for lane in self.lanes.values():
            lane.more.set()
        self.ready.set()

    async def gather_more(self, lane: _Lane) -> None:
        """With ``max_delay``: let the oldest queued chunk wait for more, up to that long."""
        delay = self.options.max_delay
        if delay is None:
            return
        while (len(lane.queue) < self.options.max_batch and not self.source_done
               and not lane.queue[-1].final and not self.full()):
            remaining = lane.queue[0].at + delay - self.loop.time()
            if remaining <= 0:
                return
            lane.more.clear()
            try:
                async with asyncio.timeout(remaining):
                    await lane.more.wait()
            except TimeoutError:
                return

    async def work(self, lane: _Lane) -> None:
        try:
            while True:
                while not lane.queue:
                    if self.source_done:
                        return
                    lane.more.clear()
                    await lane.more.wait()
                await self.gather_more(lane)
                batch = [lane.queue.popleft()
                         for _ in range(min(self.options.max_batch, len(lane.queue)))]
                body = self.session.body([q.chunk for q in batch], lane.state)
                content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
                chunks, lane.state = await post_with_retries(
                    self.send, content, len(batch), self.options.retry, self.rng,
                    self.options.timeout)
                for queued, out in zip(batch, chunks, strict=True):
                    self.results[queued.seq] = out
                self.ready.set()
        except Exception as exc:
            self.fail(exc)

    def overdue(self, end: float | None) -> None:
        if end is not None and self.loop.time() >= end:
            raise StreamDeadlineError(f"the stream's deadline of {self.options.deadline} s "
                                      "passed")

    async def outputs(self, source: AsyncIterator[Item]) -> AsyncGenerator[JSON, None]:
        deadline = self.options.deadline
        end = None if deadline is None else self.loop.time() + deadline
        self.tasks.append(self.loop.create_task(self.read(source)))
        try:
            while True:
                self.overdue(end)
                while self.emitted in self.results:
                    chunk = self.results.pop(self.emitted)
                    self.emitted += 1
                    self.room.set()
                    yield chunk
                    self.overdue(end)
                if self.error is not None:
                    raise self.error
                if self.source_done and self.emitted == self.arrived:
                    return
                self.ready.clear()
                try:
                    async with asyncio.timeout_at(end):
                        await self.ready.wait()
                except TimeoutError:
                    self.overdue(end)
                    raise
        finally:
            tasks = list(self.tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def coalesce(source: AsyncIterator[Item], session: StreamSession, send: Send,
             options: _Options) -> AsyncGenerator[JSON, None]:
    """The engine: OpenAI chunks for the engine chunks of ``source``, in their order."""
    return _Run(session, send, options).outputs(source)


# ----------------------------------------------------------------------------- public API


def _request(route: Route, chat_request: JSON | None, completion_request: JSON | None
             ) -> JSON | None:
    return chat_request if route == "chat" else completion_request


def _auth_kwargs(auth: httpx.Auth | None) -> dict[str, Any]:
    return {} if auth is None else {"auth": auth}


def stream_derender(chunks: Iterable[Item], *, base_url: str, route: Route = "chat",
                    model: str | None = None, prompt_token_ids: list[int] | None = None,
                    prompt_tokens: int | None = None, chat_request: JSON | None = None,
                    completion_request: JSON | None = None, client: httpx.Client | None = None,
                    auth: httpx.Auth | None = None, timeout: float = 30.0,
                    retry: RetryPolicy | None = None, max_batch: int = 64,
                    max_delay_ms: float | None = None, max_ahead: int = MAX_AHEAD,
                    deadline: float | None = None,
                    interrupt: Callable[[], object] | None = None) -> SyncStream:
    """Yield one OpenAI chunk per engine chunk, in order (see the module docstring).

    The engine stream is read on a daemon thread of its own, at most ``max_ahead`` chunks
    ahead of the consumer, and the calls are made on others (up to ``SYNC_THREADS`` choices in
    flight) with ``client`` (default: an ``httpx.Client`` of ``base_url``, closed at the end);
    ``timeout`` applies to each attempt. The answer is a :class:`SyncStream`: an iterator whose
    ``close()`` may be called from any thread, also while another is blocked waiting for its
    next chunk (that one then sees the end of the stream). Closing it, an error, or the
    ``deadline`` (seconds for the whole stream, then :class:`StreamDeadlineError`) ends the
    stream at once: what is queued or in flight is dropped and, while the engine stream is
    not finished, ``interrupt`` (e.g. the engine response's ``close``) is called so that an
    engine read blocked in ``next()`` returns and its thread ends. Without ``interrupt`` a
    read that never returns keeps only that daemon thread, which takes nothing further from
    the engine and does not hold the process at exit.
    """
    options = _options(max_batch, max_delay_ms, retry, timeout, max_ahead, deadline)
    session = StreamSession(route, model, prompt_token_ids, prompt_tokens,
                            _request(route, chat_request, completion_request))
    return SyncStream(iter(chunks), session, options, base_url, client, auth, interrupt)


class _EngineReader:
    """The sync engine iterator, read on a daemon thread of its own, one item per request, so
    that a ``next()`` that blocks holds no shared worker and no process exit."""

    def __init__(self, iterator: Iterator[Item], loop: asyncio.AbstractEventLoop) -> None:
        self.iterator = iterator
        self.loop = loop
        self.requests: queue.SimpleQueue[asyncio.Future[tuple[Item] | None] | None] = (
            queue.SimpleQueue())
        self.finished = False
        """The engine iterator ended or raised: there is nothing left to interrupt."""
        self.thread = threading.Thread(target=self.run, name="derender-client-engine",
                                       daemon=True)
        self.thread.start()

    def run(self) -> None:
        while (future := self.requests.get()) is not None:
            try:
                got = _next(self.iterator)
            except Exception as exc:  # handed to the reading task
                self.finished = True
                self.deliver(future, None, exc)
                return
            self.finished = got is None
            if not self.deliver(future, got, None) or got is None:
                return

    def deliver(self, future: asyncio.Future[tuple[Item] | None], got: tuple[Item] | None,
                error: BaseException | None) -> bool:
        """Hand a read to the loop; False when the loop is gone (the stream ended)."""
        def settle() -> None:
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(got)
        try:
            self.loop.call_soon_threadsafe(settle)
        except RuntimeError:  # the loop is closed
            return False
        return True

    async def items(self) -> AsyncIterator[Item]:
        while True:
            future: asyncio.Future[tuple[Item] | None] = self.loop.create_future()
            self.requests.put(future)
            got = await future
            if got is None:
                return
            yield got[0]

    def stop(self) -> None:
        """No further reads: the thread ends once a read in progress returns."""
        self.requests.put(None)


class SyncStream(Iterator[JSON]):
    """What :func:`stream_derender` returns: the OpenAI chunks, in order (the engine stream is
    read no further ahead of this iterator's caller than ``max_ahead``). ``close()`` (also a
    ``with`` block's end) may be called from any thread, at any time, more than once."""

    def __init__(self, iterator: Iterator[Item], session: StreamSession, options: _Options,
                 base_url: str, client: httpx.Client | None, auth: httpx.Auth | None,
                 interrupt: Callable[[], object] | None) -> None:
        self._closed = False
        self._own = client is None
        self._http = client or httpx.Client(base_url=base_url, timeout=options.timeout)
        self._interrupt = interrupt
        self._lock = threading.Lock()
        self._started = False
        self._consumed = 0
        self._out: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._pool = ThreadPoolExecutor(SYNC_THREADS, thread_name_prefix="derender-client")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever,
                                        name="derender-client-loop", daemon=True)
        self._thread.start()
        self._reader = _EngineReader(iterator, self._loop)
        self._run: _Run | None = None
        path = PATHS[session.route]
        extra = _auth_kwargs(auth)
        http = self._http
        timed = isinstance(http, httpx.Client)  # not e.g. starlette's TestClient
        loop, pool = self._loop, self._pool

        async def send(content: bytes, per_try: float) -> tuple[int, Mapping[str, str], bytes]:
            kwargs: dict[str, Any] = {**extra, "timeout": per_try} if timed else extra

            def post() -> tuple[int, Mapping[str, str], bytes]:
                response = http.post(path, content=content, headers=_HEADERS, **kwargs)
                return response.status_code, response.headers, response.content
            return await loop.run_in_executor(pool, post)

        async def pump() -> None:
            """The engine, on the loop; its chunks go to ``_out`` as they come in order."""
            self._run = _Run(session, send, options, lambda: self._consumed)
            try:
                async for chunk in self._run.outputs(self._reader.items()):
                    self._out.put(("chunk", chunk))
            except Exception as exc:
                self._out.put(("error", exc))
            else:
                self._out.put(("end", None))

        self._pump = pump

    def __iter__(self) -> SyncStream:
        return self

    def __next__(self) -> JSON:
        with self._lock:
            if self._closed:
                raise StopIteration
            if not self._started:
                self._started = True
                asyncio.run_coroutine_threadsafe(self._pump(), self._loop)
        kind, value = self._out.get()
        if kind == "chunk":
            self._consumed += 1
            run = self._run
            if run is not None and run.reader_waiting:  # the window has room again
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    self._loop.call_soon_threadsafe(run.room.set)
            chunk: JSON = value
            return chunk
        self.close()
        if kind == "error":
            raise value
        raise StopIteration  # the end, or closed (by another thread) meanwhile

    def close(self) -> None:
        """End the stream now: drop what is queued or in flight, stop reading the engine
        (calling ``interrupt`` if the engine stream is not finished), release the threads."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._out.put(("closed", None))  # a thread blocked in __next__ sees the end at once
        self._reader.stop()
        if self._interrupt is not None and not self._reader.finished:
            self._interrupt()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            shutdown = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
            with contextlib.suppress(Exception):
                shutdown.result(SHUTDOWN_WAIT)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(SHUTDOWN_WAIT)
        if not self._thread.is_alive():
            self._loop.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._own:
            self._http.close()

    async def _shutdown(self) -> None:
        await _cancel_others()  # the pump: its engine's tasks are cancelled with it
        await self._loop.shutdown_asyncgens()

    def __enter__(self) -> SyncStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # dropped unclosed: close it, unless from its own loop
        if (not getattr(self, "_closed", True)
                and threading.current_thread() is not getattr(self, "_thread", None)):
            self.close()


def _next(iterator: Iterator[Item]) -> tuple[Item] | None:
    """The iterator's next item (in a 1-tuple), None at its end."""
    for item in iterator:
        return (item,)
    return None


async def _cancel_others() -> None:
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def astream_derender(chunks: AsyncIterable[Item] | Iterable[Item], *, base_url: str,
                           route: Route = "chat", model: str | None = None,
                           prompt_token_ids: list[int] | None = None,
                           prompt_tokens: int | None = None, chat_request: JSON | None = None,
                           completion_request: JSON | None = None,
                           client: httpx.AsyncClient | None = None,
                           auth: httpx.Auth | None = None, timeout: float = 30.0,
                           retry: RetryPolicy | None = None, max_batch: int = 64,
                           max_delay_ms: float | None = None, max_ahead: int = MAX_AHEAD,
                           deadline: float | None = None,
                           interrupt: Callable[[], object] | None = None
                           ) -> AsyncIterator[JSON]:
    """Async twin of :func:`stream_derender` (a plain iterable source is read in the loop).

    An async engine read is cancelled when the stream ends early (closed, error,
    ``deadline``); ``interrupt``, if given, is called then too, while the engine stream is
    not finished."""
    options = _options(max_batch, max_delay_ms, retry, timeout, max_ahead, deadline)
    session = StreamSession(route, model, prompt_token_ids, prompt_tokens,
                            _request(route, chat_request, completion_request))
    own = client is None
    http = client or httpx.AsyncClient(base_url=base_url, timeout=timeout)
    path = PATHS[route]
    extra = _auth_kwargs(auth)
    finished: list[bool] = []

    async def send(content: bytes, per_try: float) -> tuple[int, Mapping[str, str], bytes]:
        response = await http.post(path, content=content, headers=_HEADERS, timeout=per_try,
                                   **extra)
        return response.status_code, response.headers, response.content

    try:
        async for chunk in coalesce(_aiter(chunks, finished), session, send, options):
            yield chunk
    finally:
        try:
            if interrupt is not None and not finished:
                interrupt()
        finally:
            if own:
                await http.aclose()


async def _aiter(items: AsyncIterable[Item] | Iterable[Item],
                 finished: list[bool]) -> AsyncIterator[Item]:
    """The items; ``finished`` gets an entry once they ended or raised."""
    try:
        if isinstance(items, AsyncIterable):
            async for item in items:
                yield item
        else:
            for item in items:
                yield item
    except Exception:
        finished.append(True)
        raise
    finished.append(True)
