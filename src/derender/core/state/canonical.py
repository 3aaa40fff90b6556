"""Canonical JSON bytes of request parts, for digests: never recursive, so never too deep.

``canonical_json(value)`` is exactly ``json.dumps(value, ensure_ascii=True,
separators=(",", ":"))`` (keys in the order given, lone surrogates escaped) for the values a
parsed JSON body holds: dicts with string keys, lists, strings, ints, floats, booleans and
None. The C encoder writes it when it can; a value nested deeper than the interpreter's
recursion limit allows at the caller's depth is written by an explicit stack instead, with
the same bytes, so the digest of a request does not depend on how deep the call was made.
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring_ascii
from typing import Any

__all__ = ["canonical_json"]

_SEPARATORS = (",", ":")


def canonical_json(value: Any) -> bytes:
    try:
        text = json.dumps(value, ensure_ascii=True, separators=_SEPARATORS)
    except RecursionError:
        text = "".join(_iter_json(value))
    return text.encode("ascii")


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return str(encode_basestring_ascii(value))
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _iter_json(value: Any) -> list[str]:
    """The pieces of ``value``'s JSON text, written with an explicit stack."""
    out: list[str] = []
    # each entry: a pending value to write, or a literal piece of text to emit
    stack: list[tuple[bool, Any]] = [(False, value)]
    while stack:
        literal, item = stack.pop()
        if literal:
            out.append(item)
            continue
        if isinstance(item, dict):
            if not item:
                out.append("{}")
                continue
            out.append("{")
            pending: list[tuple[bool, Any]] = []
            for position, (key, member) in enumerate(item.items()):
                text = (str(encode_basestring_ascii(key)) if isinstance(key, str) else
                        json.dumps({key: 0}, separators=_SEPARATORS)[1:-3])  # as json does
                pending.append((True, ("," if position else "") + text + ":"))
                pending.append((False, member))
            pending.append((True, "}"))
            stack.extend(reversed(pending))
        elif isinstance(item, list | tuple):
            if not item:
                out.append("[]")
                continue
            out.append("[")
            pending = []
            for position, member in enumerate(item):
                if position:
                    pending.append((True, ","))
                pending.append((False, member))
            pending.append((True, "]"))
            stack.extend(reversed(pending))
        else:
            out.append(_scalar(item))
    return out
