"""A seeded fault-injecting HTTP/1.1 proxy in front of a local server (the client's fault tests).

It listens on a free port of 127.0.0.1, runs its own event loop on a thread, and forwards each
request of a keep-alive connection to the upstream server over a connection of its own, or
injects a fault instead. Faults are dealt from shuffled decks (``random.Random(seed)``), so
every kind comes up within each round of a deck, at seeded places:

- per new connection, ``refuse``: the connection is reset as soon as it is accepted, before
  the request is read;
- per request: ``reset`` (forwarded, answered by the server, then the connection is reset
  without sending the answer), ``delay`` (forwarded and answered, the answer held ``delay``
  seconds, past the client's timeout, then sent to whoever still listens), ``429`` / ``503``
  (answered by the proxy with that status and an error envelope, without and with a
  ``Retry-After``), ``slow`` (the server's answer trickled a few bytes at a time), ``ok``.

Only Content-Length framing is read (what the client sends and uvicorn answers for these
routes). ``counts`` tells how many of each kind were dealt.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import socket
import struct
import threading
from collections import Counter
from dataclasses import dataclass, field
from types import TracebackType

REQUEST_FAULTS = ("reset", "delay", "429", "429 retry-after", "503", "503 retry-after", "slow")
FAULTS = ("refuse", *REQUEST_FAULTS)


@dataclass
class FaultPlan:
    """How many cards of each kind in a round of the decks (the rest are ``ok``)."""

    requests: dict[str, int] = field(default_factory=lambda: {
        "reset": 1, "delay": 1, "429": 1, "429 retry-after": 1, "503": 1,
        "503 retry-after": 1, "slow": 2, "ok": 24})
    connections: dict[str, int] = field(default_factory=lambda: {"refuse": 1, "ok": 3})
    delay: float = 1.5
    """Seconds a ``delay`` answer is held: more than the client's timeout."""
    retry_after: str = "1"
    trickle_bytes: int = 97
    trickle_pause: float = 0.004


class _Deck:
    def __init__(self, rng: random.Random, cards: dict[str, int]) -> None:
        self.rng = rng
        self.cards = [kind for kind, count in cards.items() for _ in range(count)]
        self.pile: list[str] = []

    def draw(self) -> str:
        if not self.pile:
            self.pile = list(self.cards)
            self.rng.shuffle(self.pile)
        return self.pile.pop()


async def _read_message(reader: asyncio.StreamReader) -> bytes | None:
    """One HTTP/1.1 message (head and Content-Length body); None at a clean end."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise ConnectionError("connection closed inside a message head") from exc
        return None
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return head + await reader.readexactly(length)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), dropping anything unsent."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def _refusal(status: int, retry_after: str | None) -> bytes:
    reason = {429: "Too Many Requests", 503: "Service Unavailable"}[status]
    body = json.dumps({"error": {"message": f"injected {status}", "type": "InjectedFault",
                                 "param": None, "code": status}}).encode()
    head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n")
    if retry_after is not None:
        head += f"retry-after: {retry_after}\r\n"
    return head.encode() + b"\r\n" + body


class FaultProxy:
    """The proxy (see the module docstring); a context manager, ``url`` to call it."""

    def __init__(self, upstream_url: str, seed: int, plan: FaultPlan | None = None) -> None:
        host, _, port = upstream_url.removeprefix("http://").partition(":")
        self.upstream = (host, int(port))
        self.seed = seed
        self.plan = plan or FaultPlan()
        rng = random.Random(seed)
        self._requests = _Deck(rng, self.plan.requests)
        self._connections = _Deck(rng, self.plan.connections)
        self.counts: Counter[str] = Counter()
        self.errors: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy",
                                        daemon=True)
        self._handlers: set[asyncio.Task[None]] = set()
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop).result(10)
        port_number = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port_number}"

    @property
    def faults(self) -> int:
        return sum(count for kind, count in self.counts.items() if kind != "ok")

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            if self._connections.draw() == "refuse":
                self.counts["refuse"] += 1
                _reset(writer)
                return
            while (request := await _read_message(reader)) is not None:
                kind = self._requests.draw()
                self.counts[kind] += 1
                if kind.startswith(("429", "503")):
                    writer.write(_refusal(int(kind[:3]), self.plan.retry_after
                                          if kind.endswith("retry-after") else None))
                    await writer.drain()
                    continue
                if upstream is None:
                    upstream = await asyncio.open_connection(*self.upstream)
                upstream[1].write(request)
                await upstream[1].drain()
                answer = await _read_message(upstream[0])
                if answer is None:
                    raise ConnectionError("the upstream server closed the connection")
                if kind == "reset":
                    _reset(writer)
                    return
                if kind == "delay":
                    await asyncio.sleep(self.plan.delay)
                if kind == "slow":
                    step = self.plan.trickle_bytes
                    for at in range(0, len(answer), step):
                        writer.write(answer[at:at + step])
                        await writer.drain()
                        await asyncio.sleep(self.plan.trickle_pause)
                else:
                    writer.write(answer)
                    await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass  # the client went away (after a timeout, say): nothing more to do
        except asyncio.CancelledError:
            pass  # closing the proxy: end quietly (start_server's callback would log it)
        except Exception as exc:  # a bug of the proxy: the tests report it
            self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            self._handlers.discard(task)
            if upstream is not None:
                upstream[1].close()
            writer.close()

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            tasks = list(self._handlers)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()
