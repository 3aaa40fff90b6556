"""Our app under uvicorn, timing each POST as Lambda bills it (for stream_cost.py).

    python bench/_timed_server.py --port 8000

Lambda bills a function from the handler's start to its return; here that is the ASGI app's
call for one request, from reading the body to sending the answer. ``GET /bench/durations``
returns the durations (seconds) recorded since the last such call and forgets them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import uvicorn

from derender.app.main import create_app

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class Timed:
    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app
        self.durations: list[float] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/bench/durations":
            body = json.dumps(self.durations).encode()
            self.durations = []
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        started = time.perf_counter()
        await self.app(scope, receive, send)
        if scope["type"] == "http" and scope["method"] == "POST":
            self.durations.append(time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    uvicorn.run(Timed(create_app()), host=args.host, port=args.port, access_log=False,
                log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
