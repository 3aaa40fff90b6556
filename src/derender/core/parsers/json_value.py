"""A resumable scanner that finds where one JSON value ends, a chunk at a time.

Tool-call arguments are streamed as the model writes them; the scanner only tracks nesting
depth, strings and escapes (a few integers of state), never re-parsing what came before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SCALAR_END = frozenset(",}] \t\r\n")

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


def scan(state: ValueScan, text: str) -> tuple[int | None, ValueScan]:
    """Where in ``text`` the value ends (index just past it), or None and the state to
    resume from. Leading whitespace before the value is skipped (and counted)."""
    started, depth = state.started, state.depth
    in_string, escaped, scalar = state.in_string, state.escaped, state.scalar
    for i, ch in enumerate(text):
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


JSON_SPACE = " \t\n\r"
"""JSON's whitespace (what ``str.strip`` strips is more)."""
SPACE_PATTERN = "[ \t\n\r]*"
_HEAD_KEYS = ('"arguments"', '"parameters"')


def could_be_head(text: str) -> bool:
    """Whether more text could still make ``text`` begin a call's head, ``{"name": "…",
    "arguments":`` (or ``"parameters":``), JSON whitespace allowed between its parts
    (llama3_json, mistral's older grammar)."""
    pos = 0
    for part in ("{", '"name"', ":", None, ",", _HEAD_KEYS, ":"):
        while pos < len(text) and text[pos] in JSON_SPACE:
            pos += 1
        rest = text[pos:]
        if not rest:
            return True
        if part is None:  # the name: a JSON string
            match = re.match(STRING_PATTERN, rest)
            if match is None:
                return re.fullmatch(r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{0,4})*'
                                    r'\\?', rest) is not None
            pos += match.end()
            continue
        options = (part,) if isinstance(part, str) else part
        for option in options:
            if rest.startswith(option):
                pos += len(option)
                break
            if option.startswith(rest):
                return True
        else:
            return False
    return True
