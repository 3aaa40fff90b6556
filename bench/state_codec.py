"""The signed ``stream_state``'s cost per byte: what a stream pays on every chunk for the text
its parser holds (a call held whole, as some formats must, docs/benchmarks.md section 21).

For payloads of several sizes (random bytes: the codec neither knows nor cares what they hold),
medians in µs of ``sign`` and ``verify`` (``derender.core.state.token``), and of the steps
they are made of: base64 encode and decode of the token's bytes (``pybase64``, as the codec
does; ``--binascii``: CPython's own, which the codec used before) and HMAC-SHA256 over
them. Interleaved, gc off. The last line is what the held call of
``bench/engine_stream.py`` (1,741 bytes at chunk 4,000) adds to every chunk: the floor.

    python bench/state_codec.py
    python bench/state_codec.py --rounds 20000
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import hmac
import random
from collections.abc import Callable

import pybase64
from _common import load_line, machine_line, median, revision, time_interleaved

from derender.core.state.token import KeyRing, sign, verify

SIZES = (50, 500, 1741, 4000, 8000)
"""Payload bytes: a stream's plain state, a held value, the held call of ``bench/engine_stream.py``
at chunk 4,000 (hf), and larger."""
RING = KeyRing.parse("k1:" + "s" * 32)
SECRET = RING.keys[RING.current]


def _steps(payload: bytes, stdlib: bool) -> tuple[str, list[Callable[[], object]]]:
    """The token of ``payload``, and the steps timed: sign, verify, then base64 encode, base64
    decode and HMAC of the token's bytes."""
    token = sign(RING, payload)
    assert verify(RING, token, 1 << 20) == payload
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    data = base64.b64encode(raw)
    if stdlib:
        encode: Callable[[], object] = lambda: binascii.b2a_base64(raw, newline=False)  # noqa: E731
        decode: Callable[[], object] = lambda: binascii.a2b_base64(data)  # noqa: E731
    else:
        encode = lambda: pybase64.b64encode(raw, altchars=b"-_")  # noqa: E731
        decode = lambda: pybase64.b64decode(data, validate=True)  # noqa: E731
    return token, [lambda: sign(RING, payload), lambda: verify(RING, token, 1 << 20),
                   encode, decode, lambda: hmac.digest(SECRET, raw, hashlib.sha256)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5000)
    parser.add_argument("--binascii", action="store_true",
                        help="time CPython's base64 steps instead of pybase64's")
    args = parser.parse_args()
    print(f"machine: {machine_line()}; derender {revision()}; before: {load_line()}")
    print()
    print("| payload bytes | token chars | sign µs | verify µs | b64 encode µs | b64 decode µs "
          "| HMAC µs |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    rng = random.Random(21)
    for size in SIZES:
        payload = bytes(rng.getrandbits(8) for _ in range(size))
        token, funcs = _steps(payload, args.binascii)
        medians = [median(s) / 1e3 for s in time_interleaved(funcs, args.rounds)]
        rows.append((size, len(token), medians))
        print(f"| {size} | {len(token)} | " + " | ".join(f"{m:.2f}" for m in medians) + " |")
    (small, _, first), (held, _, call) = rows[0], rows[SIZES.index(1741)]
    added = (call[0] - first[0]) + (call[1] - first[1])
    print()
    print(f"a {held:,}-byte held call adds {added:.1f} µs to every chunk (sign and verify at "
          f"{held:,} bytes against {small}); base64 decoding is "
          f"{call[3] / held * 1e3:.1f} ns per byte of it")
    print(f"after: {load_line()}")


if __name__ == "__main__":
    main()
