"""The service's routes, defined once: the app mounts them, the Lambda telemetry names them,
the OpenAPI document describes them and ``template.yaml`` is checked against them
(``tests/test_template.py``). The light client (``client/derender_client``, a distribution of
its own) writes the derender paths itself; ``tests/test_contract.py`` checks them against these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DerenderRoute = Literal["chat", "completions"]
"""The two derender routes by name."""


@dataclass(frozen=True, slots=True)
class Route:
    """One route: its method and path, and the name it is known by."""

    name: str
    method: Literal["GET", "POST"]
    path: str


CHAT = Route("chat", "POST", "/v1/chat/completions/derender")
"""Engine token ids into a ``chat.completion`` (or chunks); vLLM 0.33's path."""
COMPLETIONS = Route("completions", "POST", "/v1/completions/derender")
"""Engine token ids into a ``text_completion`` (or chunks); vLLM 0.33's path."""
HEALTH = Route("health", "GET", "/health")
"""Liveness."""
MODELS = Route("models", "GET", "/v1/models")
"""The served model names (OpenAI list shape)."""
OPENAPI = Route("openapi", "GET", "/openapi.json")
"""The OpenAPI 3.1 document (built on its first request)."""

VERSION = Route("version", "GET", "/version")
"""The service's version."""
METRICS = Route("metrics", "GET", "/metrics")
"""Prometheus metrics (local server only, when ``prometheus_client`` is installed; not in the
OpenAPI document)."""

ROUTES: tuple[Route, ...] = (CHAT, COMPLETIONS, HEALTH, MODELS, VERSION)
"""The routes the document describes (every one but the document itself)."""
DERENDER: dict[DerenderRoute, Route] = {"chat": CHAT, "completions": COMPLETIONS}
"""The derender routes by name."""
