"""Servers the tests and benchmarks start: a subprocess on a free port of 127.0.0.1, used once
an HTTP probe answers 200 (the app under uvicorn, a moto server)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parents[2]  # the repository (support/derender_testing/../..)


class ServerStartError(RuntimeError):
    """The server exited or did not answer its probe in time; the message ends with its log."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def uvicorn_app(port: int) -> list[str]:
    """The app as ``make run`` serves it."""
    return [sys.executable, "-m", "uvicorn", "--factory", "derender.app.main:create_app",
            "--host", "127.0.0.1", "--port", str(port), "--no-access-log"]


def clean_env(**overrides: str) -> dict[str, str]:
    """This process's environment without any ``DERENDER_`` setting, plus ``overrides``."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("DERENDER_")}
    env.update(overrides)
    return env


class LocalServer:
    """``argv(port)`` running with ``env``, its output in ``log_path``; ``url`` once
    ``url + probe`` answers 200. A port taken between choosing and binding it is retried."""

    def __init__(self, argv: Callable[[int], list[str]], env: Mapping[str, str],
                 log_path: Path, probe: str = "/health", timeout: float = 120.0) -> None:
        self.log_path = log_path
        for attempt in range(3):
            port = free_port()
            with log_path.open("wb") as log:
                self.proc = subprocess.Popen(argv(port), env=dict(env), cwd=ROOT, stdout=log,
                                             stderr=subprocess.STDOUT)
            self.url = f"http://127.0.0.1:{port}"
            if self._answers(probe, timeout):
                return
            self.stop()
            if "address already in use" not in self.log().lower() or attempt == 2:
                break
        raise ServerStartError(f"{argv(0)[:4]} did not start:\n{self.log()[-3000:]}")

    def _answers(self, probe: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(self.url + probe, timeout=2) as answer:
                    if answer.status == 200:
                        return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(15)

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()
