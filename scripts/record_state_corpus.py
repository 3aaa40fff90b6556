"""Record a corpus of encoded parser states from the parser tests (a pytest plugin).

Every parser state the tests encode into a stream state (``stream._encode_parser``: the
reasoning, tool-call and Harmony states with their flags) and every tool-call state a format's
``feed`` returns (encoded with its format's ``encode``) is recorded, deduplicated, and written
to ``tests/fixtures/parser-states.json``. ``tests/test_state_corpus.py`` decodes each one and
re-encodes it, which must give the same bytes: a state issued by the code that recorded the
corpus still reads (and writes) the same after a change to the machines.

    PYTHONPATH=src .venv/bin/pytest -q -p no:cacheprovider -p scripts.record_state_corpus \\
        tests/test_parser_*.py tests/test_tool_formats.py ...

Then, with the same code on the path, ``python scripts/record_state_corpus.py describe`` keeps
an evenly spaced part of them (``KEEP_TOOLS``, ``KEEP_PARSER``) and adds what that code
decodes each one to (``tests.test_state_corpus.describe``), in the same order.

Recorded once, from the code before issue 18's parser-machinery change (609459c's ``src`` on
``PYTHONPATH``); not to be recorded again from changed code (that would prove nothing).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from derender.core.parsers import FORMATS_BY_TAG, engine
from derender.core.state import stream
from derender.core.state.codec import Reader, Writer

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "parser-states.json"
PER_KIND = 400
"""Distinct payloads kept per format tag (and per parser-flag set) while recording: the first
ones seen."""
KEEP_TOOLS, KEEP_PARSER = 150, 50
"""Payloads kept per tag / per flag set in the end (evenly spaced among those recorded)."""

_parser: dict[int, list[str]] = {}
_tools: dict[int, list[str]] = {}
_seen: set[tuple[str, int, str]] = set()


def _keep(store: dict[int, list[str]], kind: str, key: int, payload: bytes) -> None:
    text = payload.hex()
    if (kind, key, text) in _seen:
        return
    _seen.add((kind, key, text))
    bucket = store.setdefault(key, [])
    if len(bucket) < PER_KIND:
        bucket.append(text)


def pytest_configure(config: pytest.Config) -> None:
    if OUT.exists():  # a recording in parts: add to what an earlier part kept
        old = json.loads(OUT.read_text())
        for store, kind in ((_parser, "parser"), (_tools, "tool")):
            for key, payloads in old["parser" if kind == "parser" else "tools"].items():
                for payload in payloads:
                    _keep(store, kind, int(key), bytes.fromhex(payload))
    original = stream._encode_parser

    def encode_parser(w: Writer, parser: Any) -> None:
        inner = Writer()
        original(inner, parser)
        payload = bytes(inner.out)
        if parser is not None:
            _keep(_parser, "parser", Reader(payload).uint(), payload)
        w.out += payload

    stream._encode_parser = encode_parser  # type: ignore[assignment]

    for fmt in FORMATS_BY_TAG.values():
        def wrap(feed: Callable[..., Any], tag: int, encode: Callable[..., None]
                 ) -> Callable[..., Any]:
            def recorded(*args: Any, **kwargs: Any) -> Any:
                result = feed(*args, **kwargs)
                w = Writer()
                encode(result[-1], w)
                _keep(_tools, "tool", tag, bytes(w.out))
                return result
            return recorded
        object.__setattr__(fmt, "feed", wrap(fmt.feed, fmt.tag, fmt.encode))

    engine_feed = engine.feed
    tags = {fmt.name: fmt.tag for fmt in FORMATS_BY_TAG.values()}

    def feed(config: Any, *args: Any, **kwargs: Any) -> Any:
        result = engine_feed(config, *args, **kwargs)
        w = Writer()
        engine.encode(result[-1], w)
        _keep(_tools, "tool", tags[config.name], bytes(w.out))
        return result

    engine.feed = feed  # type: ignore[assignment]


def pytest_unconfigure(config: pytest.Config) -> None:
    data = {
        "about": "Encoded parser states recorded by scripts/record_state_corpus.py from the "
                 "parser tests, before issue 18's machinery change (hex). parser: "
                 "stream._encode_parser payloads by their flags word; tools: a format's "
                 "encoded state by its tag.",
        "parser": {str(k): v for k, v in sorted(_parser.items())},
        "tools": {str(k): v for k, v in sorted(_tools.items())},
    }
    OUT.write_text(json.dumps(data, indent=0) + "\n")


def _describe_all() -> None:
    sys.path.insert(0, str(OUT.parent.parent.parent))  # the repository's root, for ``tests``
    from tests.test_state_corpus import describe  # noqa: PLC0415

    data = json.loads(OUT.read_text())
    for store, cap in (("parser", KEEP_PARSER), ("tools", KEEP_TOOLS)):
        for key, payloads in data[store].items():
            step = max(1, len(payloads) / cap)
            data[store][key] = [payloads[int(i * step)] for i in range(min(cap, len(payloads)))]
    meaning: dict[str, dict[str, list[Any]]] = {"parser": {}, "tools": {}}
    for flags, payloads in data["parser"].items():
        meaning["parser"][flags] = [describe(stream._decode_parser(Reader(bytes.fromhex(p))))
                                    for p in payloads]
    for tag, payloads in data["tools"].items():
        fmt = FORMATS_BY_TAG[int(tag)]
        meaning["tools"][tag] = [describe(fmt.decode(Reader(bytes.fromhex(p))))
                                 for p in payloads]
    data["meaning"] = meaning
    OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] == ["describe"]:
        _describe_all()
