"""A resumable scanner that finds where one JSON value ends, a chunk at a time.

Tool-call arguments are streamed as the model writes them; the scanner only tracks nesting
depth, strings and escapes (a few integers of state), never re-parsing what came before.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_SCALAR_END = frozenset(",}] \t\r\n")
_STRING_RUN = re.compile(r'[^"\\]+')

STRING_PATTERN = r'"((?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*)"'
"""A JSON string (group 1: its body, which ``json.loads(f'"{body}"')`` always reads)."""


@dataclass(frozen=True, slots=True)
class ValueScan:
    """Progress through one JSON value."""

    started: bool = False
    depth: int = 0
    in_string: bool = False
    escaped: bool = False
    scalar: bool = False


def scan(state: ValueScan, text: str, start: int = 0, end: int | None = None
         ) -> tuple[int | None, ValueScan]:
    """Where in ``text[start:end]`` the value ends (the index in ``text`` just past it), or
    None and the state to resume from. Leading whitespace before the value is skipped (and
    counted). ``text`` is read in place: a machine reading a long text marker after marker
    passes its position instead of slicing the rest (a copy per marker is quadratic)."""
    started, depth = state.started, state.depth
    in_string, escaped, scalar = state.in_string, state.escaped, state.scalar
    i, stop = start - 1, len(text) if end is None else min(end, len(text))
    while i + 1 < stop:
        i += 1
        ch = text[i]
        if not started:
            if ch.isspace():
                continue
            started = True
            if ch in "{[":
                depth = 1
            elif ch == '"':
                in_string = True
            else:
                scalar = True
            continue
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                if depth == 0:
                    return i + 1, ValueScan()
            else:  # the run of plain characters it begins, at once
                run = _STRING_RUN.match(text, i, stop)
                if run is not None:
                    i = run.end() - 1
            continue
        if scalar:
            if ch in _SCALAR_END:
                return i, ValueScan()
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1, ValueScan()
    return None, ValueScan(started, depth, in_string, escaped, scalar)


_DECODER = json.JSONDecoder()
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def loads(text: str, start: int = 0) -> Any:
    """``json.loads(text[start:])``, read in place (no copy of the rest of the text)."""
    if text.startswith("\ufeff", start):
        raise ValueError("a byte-order mark")
    value, end = _DECODER.raw_decode(text, _skip_json_space(text, start))
    if _skip_json_space(text, end) != len(text):
        raise ValueError("extra data")
    return value


def _skip_json_space(text: str, pos: int) -> int:
    match = _JSON_SPACE.match(text, pos)
    return pos if match is None else match.end()


JSON_SPACE = " \t\n\r"
"""JSON's whitespace (what ``str.strip`` strips is more)."""
SPACE_PATTERN = "[ \t\n\r]*"
_HEAD_KEYS = ('"arguments"', '"parameters"')
_STRING = re.compile(STRING_PATTERN)
_PARTIAL_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{0,4})*'
                             r'\\?')


def could_be_head(text: str, start: int = 0) -> bool:
    """Whether more text could still make ``text[start:]`` begin a call's head, ``{"name":
    "…", "arguments":`` (or ``"parameters":``), JSON whitespace allowed between its parts
    (llama3_json, mistral's older grammar)."""
    pos, size = start, len(text)
    for part in ("{", '"name"', ":", None, ",", _HEAD_KEYS, ":"):
        while pos < size and text[pos] in JSON_SPACE:
            pos += 1
        if pos == size:
            return True
        if part is None:  # the name: a JSON string
            match = _STRING.match(text, pos)
            if match is None:
                return _PARTIAL_STRING.fullmatch(text, pos) is not None
            pos = match.end()
            continue
        options = (part,) if isinstance(part, str) else part
        for option in options:
            if text.startswith(option, pos):
                pos += len(option)
                break
            if size - pos < len(option) and option.startswith(text[pos:]):
                return True
        else:
            return False
    return True
