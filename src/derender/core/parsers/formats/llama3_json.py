"""The ``llama3_json`` tool-call format (Llama 3.x): JSON objects ``{"name": …,
"parameters": …}`` (or ``"arguments"``), optionally after ``<|python_tag|>``, several
separated by ``;`` or written as a JSON list.

vLLM 0.33's reference (``Llama3JsonToolParser``) reads, without streaming, every ``{`` of the
output as a JSON object, and returns calls only if each one is a call, dropping all other text;
its streaming reads calls only when the output starts with ``{`` or ``<|python_tag|>``. This
machine serves both modes alike (docs/design.md, Parsers), so it reads the calls wherever they are
and keeps the state small:

- before the first call, text is content; whitespace alone before a call is not (at most its
  last ``MAX_LEADING_SPACE`` characters: what comes before them is content, so the stream
  never holds more); the opener right before a call is dropped: ``<|python_tag|>``, a ``[``
  opening the output, or both (``[<|python_tag|>{…``, ``<|python_tag|>[{…``), with whitespace
  between; when no call follows, the whitespace and the opener are content with what follows;
- a ``{`` opens a call when ``{"name": "…", "parameters"|"arguments":`` can be read within
  ``MAX_HEAD`` characters: the call's first delta carries the name, then the arguments stream
  as the model writes them (``json_value.scan`` finds their end); an object with its keys in
  another order is read whole if it closes within ``MAX_HEAD`` characters;
- any other object before the first call comes back as content; after the first call only
  calls are read and everything else (``;``, ``]``, text) is dropped;
- with a named ``tool_choice``, an object at the start that is not a call is the function's
  bare arguments (the JSON-schema form).

State: the mode, a short holdback, the call counter, the spoke flag and the JSON scanner.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from derender.core.decoding.markers import Finder, pending_prefix
from derender.core.parsers.json_value import (
    JSON_SPACE,
    SPACE_PATTERN,
    STRING_PATTERN,
    ValueScan,
    could_be_head,
    scan,
)
from derender.core.parsers.primitives import (
    MAX_LEADING_SPACE,
    merge,
    scan_bits,
    skip_space,
    unpack_scan,
)
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer

PYTHON_TAG = "<|python_tag|>"
MAX_HEAD = 512
"""Characters of an object read before it must be known as a call (its head, or the whole
object when its keys come in another order); past that its text is not a call."""

CONTENT, OPENER, OBJECT, ARGS, TAIL, AFTER = "content", "opener", "object", "args", "tail", "after"
MODES = (CONTENT, OPENER, OBJECT, ARGS, TAIL, AFTER)

_WS, _W = JSON_SPACE, SPACE_PATTERN
_HEAD = re.compile(rf'\{{{_W}"name"{_W}:{_W}{STRING_PATTERN}{_W},'
                   rf'{_W}"(?:arguments|parameters)"{_W}:{_W}')


@dataclass(frozen=True, slots=True)
class Llama3JsonState(ToolState):
    mode: str = CONTENT
    held: str = ""
    calls: int = 0
    """Calls started so far (the next call's index)."""
    spoke: bool = False
    """Content other than whitespace was emitted."""
    scan: ValueScan = field(default_factory=ValueScan)
    """The arguments being read (ARGS), or the rest of their object (TAIL)."""
    bare: bool = False
    """The arguments being read are the whole output (named ``tool_choice``)."""
    lead: int = 0
    """Characters of the held text before its opener (OPENER: whitespace) or before its object
    (OBJECT: whitespace, ``[`` and ``<|python_tag|>``): dropped if a call follows, content if
    not."""


def feed(state: Llama3JsonState, text: str, final: bool, context: ToolContext
         ) -> tuple[str, list[ToolCallDelta], Llama3JsonState]:
    """Content and tool-call deltas of new text; ``final`` settles what was held back."""
    tag = context.spelled(PYTHON_TAG)
    forced = context.forced_name is not None or context.required
    buffer = state.held + text
    size = len(buffer)
    pos = 0
    """Where the text not read yet begins: ``buffer`` is read in place, by position (a copy
    of the rest at every marker is quadratic, issue 22), and markers are looked up in the
    whole text, each one's next place once."""
    finder = Finder(buffer)
    mode, calls, spoke, scanner, bare = state.mode, state.calls, state.spoke, state.scan, state.bare
    lead = state.lead
    content: list[str] = []
    deltas: list[ToolCallDelta] = []
    held = ""
    while pos < size or final:
        if mode == CONTENT:
            found = finder.earliest(("{", tag), pos)
            if not spoke and calls == 0:
                at = skip_space(buffer, pos, _WS)
                if buffer.startswith("[", at) and (found is None or at < found[0]):
                    found = (at, "[")
            if found is None:
                hold = 0 if final else pending_prefix(buffer, (tag,), pos)
                out = buffer[pos:size - hold]
                if not spoke and not out.strip():  # whitespace alone so far
                    if not final:  # its last MAX_LEADING_SPACE may precede a call
                        hold += min(len(out), MAX_LEADING_SPACE)
                        out = buffer[pos:size - hold]
                    elif forced:  # forced tool choice: whitespace alone is no content
                        out = out[:max(0, len(out) - MAX_LEADING_SPACE)]
                content.append(out)
                spoke = spoke or bool(out.strip())
                held = buffer[size - hold:]
                break
            at, marker = found
            before = buffer[pos:at]
            lead = 0
            if spoke or before.strip():
                content.append(before)
                spoke = True
            else:  # whitespace: its last MAX_LEADING_SPACE go with what follows
                lead = min(len(before), MAX_LEADING_SPACE)
                content.append(before[:len(before) - lead])
            mode, pos = (OBJECT if marker == "{" else OPENER), at - lead
        elif mode == OPENER:  # whitespace (lead), then "[" and/or <|python_tag|>, then "{"
            at, space, more = pos + lead, 0, False
            parts: list[str] = []
            while True:
                if parts:
                    gap = skip_space(buffer, at, _WS) - at
                    at, space = at + gap, space + gap
                    if space > MAX_LEADING_SPACE:
                        break
                    if buffer.startswith("{", at):
                        break
                part = next((p for p in (tag, "[")
                             if p not in parts and buffer.startswith(p, at)), None)
                if part is None:
                    more = not final and (at == size or (
                        tag not in parts and size - at <= len(tag)
                        and tag.startswith(buffer[at:])))
                    break
                parts.append(part)
                at += len(part)
            if buffer.startswith("{", at) and space <= MAX_LEADING_SPACE:
                mode, lead = OBJECT, at - pos
            elif more:
                held = buffer[pos:]
                break
            else:  # not followed by a call: the whitespace and the first part are content
                first = pos + lead + len(parts[0])
                content.append(buffer[pos:first])
                spoke, mode, pos, lead = True, CONTENT, first, 0
        elif mode == OBJECT:  # an opener (``lead`` characters), then "{"
            obj = pos + lead
            match = _HEAD.match(buffer, obj)
            if match is not None and match.end() - obj <= MAX_HEAD:
                deltas.append(ToolCallDelta(calls, json.loads(f'"{match.group(1)}"'), ""))
                calls += 1
                mode, pos, scanner, bare = ARGS, match.end(), ValueScan(), False
                lead = 0
                continue
            if not final and size - obj < MAX_HEAD and could_be_head(buffer, obj):
                held = buffer[pos:]
                break
            if context.forced_name is not None and calls == 0 and not spoke:
                deltas.append(ToolCallDelta(calls, context.forced_name, ""))
                calls += 1
                mode, pos, scanner, bare, lead = ARGS, obj, ValueScan(), True, 0
                continue
            cut = 1  # not an object with keys: only its "{" is passed
            if buffer.startswith('"', skip_space(buffer, obj + 1, _WS)):
                end, _ = scan(ValueScan(), buffer, obj, obj + MAX_HEAD)
                if end is None and not final and size - obj < MAX_HEAD:
                    held = buffer[pos:]
                    break
                call = None if end is None else _whole_call(buffer[obj:end])
                if call is not None and end is not None:
                    deltas.append(ToolCallDelta(calls, *call))
                    calls += 1
                    mode, pos, lead = AFTER, end, 0
                    continue
                cut = min(size - obj, MAX_HEAD) if end is None else end - obj
            if calls:  # after the calls, what is not a call is dropped
                mode, pos = AFTER, obj + cut
            else:  # not a call: its text (with the opener before it) is content
                content.append(buffer[pos:obj + cut])
                spoke, mode, pos = True, CONTENT, obj + cut
            lead = 0
        elif mode == ARGS:
            started = scanner.started
            value_end, after = scan(scanner, buffer, pos)
            stop = size if value_end is None else value_end
            piece = buffer[pos:stop]
            if value_end is None:
                scanner = after
            else:
                scanner = ValueScan(started=True, depth=1)  # the rest of the call's object
                mode = AFTER if bare else TAIL
            if not started:
                piece = piece.lstrip(_WS)
            if piece:
                deltas.append(ToolCallDelta(calls - 1, None, piece))
            if mode == ARGS:
                break
            pos = stop
        elif mode == TAIL:  # other keys of the call's object, then its "}"
            object_end, after = scan(scanner, buffer, pos)
            if object_end is None:
                scanner = after
                break
            mode, pos, scanner = AFTER, object_end, ValueScan()
        else:  # AFTER: only calls are read
            brace = finder.earliest(("{",), pos)
            if brace is None:
                break
            mode, pos = OBJECT, brace[0]
    return ("".join(content), merge(deltas),
            Llama3JsonState(mode, held, calls, spoke, scanner, bare, lead if held else 0))


def _whole_call(region: str) -> tuple[str, str] | None:
    """Name and arguments of a whole object that is a call with its keys in any order."""
    try:
        call: Any = json.loads(region)
    except ValueError:
        return None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return None
    for key in ("arguments", "parameters"):
        if key in call:
            return call["name"], json.dumps(call[key], ensure_ascii=False)
    return None


def _encode(state: Llama3JsonState, w: Writer) -> None:
    scan_ = state.scan
    w.uint(MODES.index(state.mode) | state.bare << 3)
    w.text(state.held)
    w.uint(state.calls)
    w.uint(state.spoke | scan_bits(scan_))
    w.uint(scan_.depth)
    w.uint(state.lead)


def _decode(r: Reader) -> Llama3JsonState:
    mode_bare, held, calls, bits, depth = r.uint(), r.text(), r.uint(), r.uint(), r.uint()
    lead = r.uint()
    if mode_bare >> 4 or bits >> 5 or lead > len(held):
        raise ValueError("malformed llama3_json state")
    return Llama3JsonState(MODES[mode_bare & 7], held, calls, bool(bits & 1),
                           unpack_scan(bits, depth), bool(mode_bare & 8), lead)


FORMAT = ToolFormat("llama3_json", Llama3JsonState, Llama3JsonState, feed, _encode, _decode)
