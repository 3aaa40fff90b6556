"""What the case tables of the formats recorded from 1300 on share: the request's tools (typed
parameters, a call without arguments) and the pairing of every case with a streaming recording
of the same output."""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import NAMED, WEATHER
from record_tool_fixtures import Case as _Case

CONFIG = {"type": "function", "function": {
    "name": "set_config", "description": "Set configuration values",
    "parameters": {"type": "object", "properties": {
        "count": {"type": "integer"}, "ratio": {"type": "number"},
        "enabled": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
        "meta": {"type": "object"}, "note": {"type": ["string", "null"]},
        "label": {"type": "string"}, "level": {"enum": [1, 2, 3]}}}}}
PING = {"type": "function", "function": {
    "name": "get_time", "description": "The current time, no arguments",
    "parameters": {"type": "object", "properties": {}}}}
TOOLS = [WEATHER, CONFIG, PING]
USER = "What's the weather in Paris? Then set the config."
NAMED_WEATHER = NAMED

NONE: dict[str, Any] = {"tool_choice": "none"}
REQUIRED: dict[str, Any] = {"tool_choice": "required"}
NAMED_CHOICE: dict[str, Any] = {"tool_choice": NAMED}


def both(case: _Case, stream: str) -> list[_Case]:
    """``case`` non-streaming, then the same output and request streamed in ``stream`` chunks
    ("one": a token a chunk, so every multi-token tag is split across chunks)."""
    streamed = _Case(**{**case.__dict__, "stream": stream})
    return [case, streamed]
