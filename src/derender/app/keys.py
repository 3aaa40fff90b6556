"""Where the stream-state key ring comes from: AWS, configuration, or a development key."""

from __future__ import annotations

import logging
import secrets
import threading
from typing import Protocol

from derender.aws.keys import aws_key_provider
from derender.contract.errors import ServiceUnavailableError
from derender.core.state.token import KeyRing
from derender.settings import (
    SIGNING_KEYS,
    SIGNING_KEYS_SECRET,
    SIGNING_KEYS_SSM_PARAMETER,
    Settings,
)

log = logging.getLogger("derender")


class SigningKeyMissingError(ServiceUnavailableError):
    """503: streaming needs a signing key and none is configured."""


def key_ring(settings: Settings) -> KeyRing:
    """The configured ring; locally a random development key (said loudly), on Lambda none.

    A development key lives only as long as the process: streams cannot move between
    processes, and every restart invalidates the streams in flight.
    """
    if settings.signing_keys:
        return KeyRing.parse(settings.signing_keys)
    if settings.on_lambda:
        raise SigningKeyMissingError(
            f"streaming is disabled: no stream-state signing key is configured ({SIGNING_KEYS}, "
            f"{SIGNING_KEYS_SSM_PARAMETER} or {SIGNING_KEYS_SECRET})")
    log.warning("%s is not set: signing stream states with a random development key. "
                "Streams will not survive a restart or span several processes; set "
                "%s=id:secret for anything but local development.", SIGNING_KEYS, SIGNING_KEYS)
    return KeyRing(current="dev", keys={"dev": secrets.token_bytes(32)})


class KeyProvider(Protocol):
    """Asked once per streaming call for the ring to verify and sign with."""

    def __call__(self) -> KeyRing: ...

    def renew(self) -> None:
        """After a SnapStart restore: forget what was read or timed before the snapshot."""


class ConfiguredKeyRing:
    """``key_ring`` built on first use and kept.

    Nothing to renew after a restore: a configured ring is the same in every container, and
    a development key (made on first use, never during init) is refused on Lambda anyway.
    """

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        # a configured ring is parsed now, so a malformed one (a key id given twice, a
        # short key) stops the start-up rather than failing every streaming call
        self._ring: KeyRing | None = (KeyRing.parse(settings.signing_keys)
                                      if settings.signing_keys else None)
        self._lock = threading.Lock()

    def __call__(self) -> KeyRing:
        ring = self._ring
        if ring is None:
            with self._lock:  # concurrent first calls must share one (development) key
                if self._ring is None:
                    self._ring = key_ring(self._settings)
                ring = self._ring
        return ring

    def renew(self) -> None:
        return None


def key_provider(settings: Settings) -> KeyProvider:
    """The ring's source: an AWS parameter or secret (cached, re-read after its TTL) when
    one is configured, else the configured (or development) ring."""
    aws = aws_key_provider(settings.signing_keys_ssm_parameter, settings.signing_keys_secret,
                           settings.signing_keys_ttl_seconds)
    if aws is not None:
        return aws
    return ConfiguredKeyRing(settings)
