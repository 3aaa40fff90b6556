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


# Partial JSON, read as vLLM's ``partial_json_parser`` reads a value cut off (``Allow.ALL``)

START, OPEN, VALUE, STRING = 0, 1, 2, 3
"""Where a settled cut stands: before the value, just after a ``{`` or ``[``, after a whole
value, inside a string value."""
MAX_OPEN = 64
"""Containers open at once that a settled reading follows (deeper, it gives up)."""
_KEY = re.compile(rf"{STRING_PATTERN}[ \t\n\r]*:[ \t\n\r]*")
_ESCAPE = re.compile(r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})')
_SCALAR = re.compile(r"[^ \t\n\r,\]}]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_MEMBER = re.compile(rf"[ \t\n\r]*,?[ \t\n\r]*(?:{STRING_PATTERN}[ \t\n\r]*:[ \t\n\r]*)?")
_CLOSERS = {"{": "}", "[": "]"}


@dataclass(frozen=True, slots=True)
class Settled:
    """A JSON value's text read up to a point where it may be cut: what partial JSON makes of
    the text so far is that text, then the closers of ``stack`` (and ``"`` in a string)."""

    stack: str = ""
    """The containers open, outermost first (``{`` and ``[``)."""
    where: int = START


def settle(state: Settled, text: str) -> tuple[int, int | None, Settled, bool]:
    """Read ``text`` on from ``state``: (how much of it is settled, where the value ends or
    None, the state there, whether the text read is JSON). Text after the settled part is a
    member or element not yet whole (a key, ``,``, a number or literal still being written, an
    escape cut off): held back, partial JSON may drop or change it."""
    stack, where = state.stack, state.where
    pos, size = 0, len(text)
    while True:
        if where == STRING:
            while pos < size:
                run = _STRING_RUN.match(text, pos)
                if run is not None:
                    pos = run.end()
                elif text[pos] == '"':
                    pos, where = pos + 1, VALUE
                    break
                else:
                    escape = _ESCAPE.match(text, pos)
                    if escape is None:  # cut off (or not JSON: read as cut off)
                        return pos, None, Settled(stack, STRING), \
                            _PARTIAL_ESCAPE.fullmatch(text, pos) is not None
                    pos = escape.end()
            if where == STRING:
                return pos, None, Settled(stack, STRING), True
            if not stack:
                return pos, pos, Settled(), True
            continue
        cut = pos
        at = _skip_json_space(text, pos)
        if at == size:
            return at, None, Settled(stack, where), True
        char = text[at]
        if where != START and stack and char == _CLOSERS[stack[-1]]:
            stack, pos, where = stack[:-1], at + 1, VALUE
            if not stack:
                return pos, pos, Settled(), True
            continue
        if where == VALUE:
            if char != ",":
                return cut, None, Settled(stack, where), False
            at = _skip_json_space(text, at + 1)
        if where != START and stack[-1] == "{":
            key = _KEY.match(text, at)
            if key is None:  # a key being written, or not JSON
                name = _STRING.match(text, at)
                whole = at == size or _PARTIAL_STRING.fullmatch(text, at) is not None or (
                    name is not None and _skip_json_space(text, name.end()) == size)
                return cut, None, Settled(stack, where), whole
            at = key.end()
        if at == size:
            return cut, None, Settled(stack, where), True
        char = text[at]
        if char == '"':
            pos, where = at + 1, STRING
            continue
        if char in "{[":
            if len(stack) >= MAX_OPEN:
                return cut, None, Settled(stack, where), False
            stack, pos, where = stack + char, at + 1, OPEN
            continue
        scalar = _SCALAR.match(text, at)
        end = at if scalar is None else scalar.end()
        if end == size:  # a number or literal that may go on
            return cut, None, Settled(stack, where), True
        try:
            json.loads(text[at:end])
        except ValueError:
            return cut, None, Settled(stack, where), False
        pos, where = end, VALUE
        if not stack:
            return pos, pos, Settled(), True


_PARTIAL_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?")


def settle_end(state: Settled, held: str) -> str:
    """What partial JSON adds to a value cut off at ``state`` with ``held`` after it: a whole
    last member (a number cut to its longest whole prefix, a literal completed), else nothing
    (a key, a ``,`` or an escape cut off is dropped); then the closers."""
    out = ""
    if state.where == STRING:
        out = '"'
    else:
        member = _MEMBER.match(held)
        lead = held[:member.end()] if member is not None else ""
        scalar = held[len(lead):]
        keyed = bool(state.stack) and state.stack[-1] == "{" and state.where != START
        complete = ":" in lead if keyed else True
        if state.where == VALUE and "," not in lead:
            complete = False
        if complete and scalar:
            literal = next((w for w in ("true", "false", "null") if w.startswith(scalar)), None)
            number = _NUMBER.match(scalar)
            if literal is not None:
                out = lead + literal
            elif number is not None:
                out = lead + number.group()
    return out + "".join(_CLOSERS[c] for c in reversed(state.stack))
