"""The stream-state key ring from AWS: SSM Parameter Store or Secrets Manager, cached.

The stored value has the ``DERENDER_SIGNING_KEYS`` format (``id:secret[,id:secret...]``,
the first entry signs). It is read on the first streaming call, not at import, and re-read
once the cache is older than ``DERENDER_SIGNING_KEYS_TTL_SECONDS``, so a rotation reaches
every container within that time. A failed re-read keeps the cached ring (with a warning)
and tries again a little later; with nothing cached the call gets a 503.

``boto3`` is imported inside the fetchers only: importing it costs cold start, and the
service without an AWS key source never needs it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from derender.contract.errors import ServiceUnavailableError
from derender.core.state.token import KeyRing

log = logging.getLogger("derender")

Fetch = Callable[[], str]
"""Reads the stored key ring text; raises on any failure."""

RETRY_AFTER_FAILURE_SECONDS = 30.0
"""With a cached ring, how long a failed re-read waits before the next attempt (capped by
the TTL), so an outage does not put an AWS round trip on every call."""

_clock: Callable[[], float] = time.monotonic
"""The provider's clock (tests move it)."""


class SigningKeysUnavailableError(ServiceUnavailableError):
    """503: the key ring could not be read from AWS and none is cached."""


def boto3_client(service: str) -> Any:
    """A boto3 client with short timeouts and few retries (a streaming call is waiting).

    Region, credentials and ``AWS_ENDPOINT_URL`` come from the environment as usual.
    """
    import boto3  # noqa: PLC0415 - deferred: costs cold start
    from botocore.config import Config  # noqa: PLC0415

    config = Config(connect_timeout=2, read_timeout=5,
                    retries={"max_attempts": 2, "mode": "standard"})
    return boto3.client(service, config=config)


def preload_boto3() -> None:
    """Import boto3 ahead of the first streaming call (about half a second), for inits whose
    time no caller waits for."""
    import boto3  # noqa: F401, PLC0415
    import botocore.config  # noqa: F401, PLC0415


class AwsFetch:
    """Reads the stored key ring text through one boto3 client, made on first use.

    ``reset()`` drops the client, so the next read opens new connections (after a SnapStart
    restore, connections of the snapshot are not this container's).
    """

    def __init__(self, service: str, read: Callable[[Any], str]) -> None:
        self._service = service
        self._read = read
        self._client: Any = None

    def __call__(self) -> str:
        if self._client is None:
            self._client = boto3_client(self._service)
        return self._read(self._client)

    def reset(self) -> None:
        self._client = None


def ssm_fetcher(name: str) -> AwsFetch:
    """Reads SSM parameter ``name`` (a SecureString is decrypted)."""

    def read(client: Any) -> str:
        response = client.get_parameter(Name=name, WithDecryption=True)
        return str(response["Parameter"]["Value"])

    return AwsFetch("ssm", read)


def secret_fetcher(secret_id: str) -> AwsFetch:
    """Reads the string of Secrets Manager secret ``secret_id`` (name or ARN)."""

    def read(client: Any) -> str:
        response = client.get_secret_value(SecretId=secret_id)
        value = response.get("SecretString")
        if not isinstance(value, str):
            raise ValueError(f"secret {secret_id!r} has no string value")
        return value

    return AwsFetch("secretsmanager", read)


class CachedKeyRing:
    """``provider()`` → the current ring; re-read through ``fetch`` after ``ttl_seconds``."""

    def __init__(self, fetch: AwsFetch | Fetch, ttl_seconds: float, source: str) -> None:
        self._fetch = fetch
        self._ttl = ttl_seconds
        self._source = source
        self._ring: KeyRing | None = None
        self._next_read = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> KeyRing:
        ring = self._ring
        if ring is not None and _clock() < self._next_read:
            return ring
        with self._lock:
            if self._ring is not None and _clock() < self._next_read:
                return self._ring
            return self._refresh()

    def renew(self) -> None:
        """After a SnapStart restore: read the ring again on the next call and through new
        connections. The age of a ring read before the snapshot says nothing about how long
        ago that was (the snapshot may be days old), so it counts as due; the ring itself is
        kept as the fallback should that read fail."""
        with self._lock:
            self._next_read = 0.0
            if isinstance(self._fetch, AwsFetch):
                self._fetch.reset()

    def _refresh(self) -> KeyRing:
        try:
            ring = KeyRing.parse(self._fetch())
        except Exception as exc:  # any AWS, network or format failure
            if self._ring is None:
                log.error("cannot read the stream-state signing keys from %s: %s",
                          self._source, _describe(exc))
                raise SigningKeysUnavailableError(
                    "streaming is unavailable: the stream-state signing keys could not be "
                    "read") from None
            log.warning("cannot re-read the stream-state signing keys from %s, keeping the "
                        "cached ones: %s", self._source, _describe(exc))
            self._next_read = _clock() + min(self._ttl, RETRY_AFTER_FAILURE_SECONDS)
            return self._ring
        if self._ring is not None and ring.current != self._ring.current:
            log.info("stream-state signing key is now %r (from %s)", ring.current,
                     self._source)
        self._ring = ring
        self._next_read = _clock() + self._ttl
        return ring


def _describe(exc: Exception) -> str:
    # KeyRing.parse's messages name key ids and the format, never a secret
    return f"{type(exc).__name__}: {exc}"


def aws_key_provider(ssm_parameter: str | None, secret_id: str | None,
                     ttl_seconds: float) -> CachedKeyRing | None:
    """The provider for the configured AWS source, or None when there is none."""
    if ssm_parameter:
        return CachedKeyRing(ssm_fetcher(ssm_parameter), ttl_seconds,
                             f"SSM parameter {ssm_parameter!r}")
    if secret_id:
        return CachedKeyRing(secret_fetcher(secret_id), ttl_seconds,
                             f"Secrets Manager secret {secret_id!r}")
    return None
