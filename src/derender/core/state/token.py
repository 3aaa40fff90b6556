"""The signed ``stream_state`` token: the only memory a stream has between calls.

Layout (then URL-safe base64 without padding)::

    version (1 byte) | key id length (1 byte) | key id | payload | HMAC-SHA256 (32 bytes)

The MAC covers everything before it and is checked, in constant time, before any byte of the
payload is read. The payload is the state codec's compact binary encoding
(``derender.core.state.stream``). A key ring verifies tokens signed by any of its keys and
signs with its current one, so keys rotate without breaking streams in flight.

On the wire the token travels as a JSON object, as vLLM 0.33 types ``stream_state``
(``DerenderStreamState``): ``{"prev_tokens": ["derender:<token>"]}``. ``prev_tokens`` is the
one field of vLLM's model that carries a string through its validation and dump unchanged
(unknown fields are dropped there, and the other fields are numbers, flags or bounded lists),
so a client that validates our answer with vLLM's own response models and sends back what they
dump keeps its stream; the fields those models add at their defaults are ignored. The bare
string form of earlier releases is still accepted (``token_of``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from derender.core.errors import BadRequestError

if TYPE_CHECKING:  # the response types cost milliseconds to import: for checking only
    from derender.contract.responses import StreamStateObject

VERSION = 1
MAC_BYTES = 32
_KEY_ID = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")

NOT_A_TOKEN = ("stream_state must be the state returned by the previous call of this stream "
               "(the object, or the string of earlier releases); omit it on the first call")

STATE_FIELD = "prev_tokens"
"""The field of vLLM's ``DerenderStreamState`` the token travels in."""
STATE_PREFIX = "derender:"
"""Marks the token in ``STATE_FIELD`` (a vLLM state's window pieces never start with it)."""


def as_state(token: str) -> StreamStateObject:
    """The JSON object form of ``token``: what ``stream_state`` answers by default."""
    return {"prev_tokens": [STATE_PREFIX + token]}


def token_of(state: object) -> str:
    """The token of a ``stream_state`` in either form (the object, or the bare string of
    earlier releases); BadRequestError for anything else. Other fields of the object (those
    vLLM's models add on dump) are ignored: the token alone is signed."""
    if isinstance(state, str):
        return state
    if isinstance(state, dict):
        entries = state.get(STATE_FIELD)
        if (isinstance(entries, list) and len(entries) == 1 and isinstance(entries[0], str)
                and entries[0].startswith(STATE_PREFIX)):
            return entries[0][len(STATE_PREFIX):]
    raise BadRequestError(NOT_A_TOKEN)


@dataclass(frozen=True)
class KeyRing:
    """Signing keys by id; ``current`` signs, every key verifies."""

    current: str
    keys: Mapping[str, bytes]

    def __post_init__(self) -> None:
        if self.current not in self.keys:
            raise ValueError(f"current key id {self.current!r} is not in the key ring")
        for key_id, secret in self.keys.items():
            if not _KEY_ID.match(key_id):
                raise ValueError(f"key id {key_id!r} must be 1-32 of A-Z a-z 0-9 _ . -")
            if len(secret) < 16:
                raise ValueError(f"key {key_id!r} is shorter than 16 bytes")

    @classmethod
    def parse(cls, spec: str) -> KeyRing:
        """``id:secret,id:secret,...``; the first entry is the current signing key. A key id
        given twice is refused: a rotation that reuses an id would silently keep one of the
        two secrets."""
        keys: dict[str, bytes] = {}
        for entry in (e.strip() for e in spec.split(",")):
            if not entry:
                continue
            key_id, sep, secret = entry.partition(":")
            if not sep or not secret:
                raise ValueError("signing keys must be written id:secret[,id:secret...]")
            key_id = key_id.strip()
            if key_id in keys:  # which secret would verify its tokens would be ambiguous
                raise ValueError(f"key id {key_id!r} appears more than once in the key ring")
            keys[key_id] = secret.strip().encode("utf-8")
        if not keys:
            raise ValueError("no signing key given")
        return cls(current=next(iter(keys)), keys=keys)


_B64: list[ModuleType] = []
URL_SAFE = b"-_"


def _b64() -> ModuleType:
    """``pybase64`` (SIMD base64: a token is encoded and decoded on every chunk, and a held
    call's token is kilobytes; CPython's ``binascii`` spends about 4 ns per byte decoding),
    imported on the first token, not at start-up."""
    if not _B64:
        import pybase64  # noqa: PLC0415 (cold start: only streams sign or verify)
        _B64.append(pybase64)
    return _B64[0]


def sign(ring: KeyRing, payload: bytes) -> str:
    key_id = ring.current.encode("ascii")
    head = bytes([VERSION, len(key_id)]) + key_id + payload
    mac = hmac.new(ring.keys[ring.current], head, hashlib.sha256).digest()
    encoded: bytes = _b64().b64encode(head + mac, altchars=URL_SAFE)
    return encoded.rstrip(b"=").decode("ascii")


BAD_ENCODING = "stream_state is not a valid token (bad encoding)"


def _canonical_base64(token: str) -> bytes:
    """The bytes of ``token``, which must be exactly what ``sign`` writes: URL-safe base64
    without padding, the unused low bits of its last character zero. A token written any other
    way (another alphabet, padding, whitespace, set spare bits) is refused, so each payload has
    one token. pybase64's validating decoder checks the alphabet and the length in one pass;
    only the last group can be written two ways, so only it is encoded again to compare (the
    state's largest cost per byte was ``b64decode``'s validating regular expression and a
    second encoding of the whole token, docs/benchmarks.md section 21)."""
    try:
        data = token.encode("ascii")
        if b"+" in data or b"/" in data or b"=" in data:
            raise ValueError("not the URL-safe alphabet without padding")
        raw: bytes = _b64().b64decode(data + b"=" * (-len(data) % 4), altchars=URL_SAFE,
                                      validate=True)
    except ValueError:  # binascii.Error and UnicodeEncodeError are ValueErrors
        raise BadRequestError(BAD_ENCODING) from None
    tail = len(raw) % 3
    if tail and base64.urlsafe_b64encode(raw[-tail:])[:tail + 1] != data[-(tail + 1):]:
        raise BadRequestError(BAD_ENCODING)
    return raw


def verify(ring: KeyRing, state: object, max_chars: int) -> bytes:
    """The payload of a token this ring signed, in either form (``token_of``);
    BadRequestError for anything else."""
    token = token_of(state)
    if len(token) > max_chars:
        raise BadRequestError(f"stream_state is {len(token)} characters, more than the "
                              f"{max_chars} allowed")
    raw = _canonical_base64(token)
    if len(raw) < 2 + MAC_BYTES or raw[0] != VERSION:
        raise BadRequestError("stream_state is not a valid token (unknown version)")
    id_len = raw[1]
    if len(raw) < 2 + id_len + MAC_BYTES:
        raise BadRequestError("stream_state is not a valid token (truncated)")
    key_id = raw[2:2 + id_len].decode("ascii", "replace")
    secret = ring.keys.get(key_id)
    if secret is None:
        raise BadRequestError("stream_state was signed with an unknown key")
    head, mac = raw[:-MAC_BYTES], raw[-MAC_BYTES:]
    if not hmac.compare_digest(hmac.new(secret, head, hashlib.sha256).digest(), mac):
        raise BadRequestError("stream_state signature does not match: the token was altered")
    return head[2 + id_len:]
