"""The ``pythonic`` tool-call format (Llama 3.2/4, ToolACE and others): the whole output is a
Python list of calls with literal keyword arguments, ``[get_weather(city='Paris'), ping()]``.

As vLLM 0.33's ``PythonicToolParser``: the output must begin with ``[`` directly followed by the
first call's name and ``(``, then ``)`` or its first keyword directly followed by ``=`` (else it
is all content); names are ``[a-zA-Z]\\w*``; arguments become a JSON object
(``python_literals``); content is null when calls are read. One machine serves streaming
and non-streaming (docs/design.md, Parsers):

- a call is held until its ``)`` and the ``,`` or ``]`` after it arrive, then returned whole,
  name and arguments; one longer than ``MAX_HELD`` characters returns its name and the
  arguments read so far there, then streams the rest of its arguments as they arrive;
- a call that cannot be read (not a literal, cut off by the end of the output) within those
  characters makes its text and everything after it content; as vLLM returns all the text as
  content when any call is unreadable, this is exactly vLLM's answer when the first call is
  the unreadable one (calls already returned stay returned);
- text after the closing ``]`` is dropped;
- with ``tool_choice`` "required" a JSON list of ``{"name", "parameters"}`` and with a named
  function the bare JSON arguments are read too (the JSON-schema forms vLLM parses for this
  format), by the hermes machine's JSON-form reader.

State: the mode, the held text (at most ``MAX_HELD`` characters), the call counter and the
argument translator's state, or the JSON-form reader's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from derender.core.parsers.formats import hermes
from derender.core.parsers.formats.hermes import HermesState
from derender.core.parsers.primitives import MAX_LEADING_SPACE, merge, skip_space
from derender.core.parsers.python_literals import (
    KINDS,
    MAX_DEPTH,
    MAX_TOKEN,
    QUOTES,
    Literals,
    translate,
)
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer

MAX_HELD = 512
"""Characters of a call held until it closes; past them its name and arguments are sent."""

START, LIST, STREAM, CONTENT, DONE, JSON = "start", "list", "stream", "content", "done", "json"
MODES = (START, LIST, STREAM, CONTENT, DONE, JSON)

_NAME = re.compile(r"[a-zA-Z]\w*")
_WS = " \t\n\r"
_CALL_PHASES, _CONTAINER_PHASES = "AaEeVC", "lmLtuTkjKvD"
_NO_TAGS = ("\ufdd0", "\ufdd1")
"""The hermes machine reads only the JSON forms here: tags no output contains."""


@dataclass(frozen=True, slots=True)
class PythonicState(ToolState):
    mode: str = START
    held: str = ""
    calls: int = 0
    """Calls started so far (the next call's index)."""
    literals: Literals = field(default_factory=Literals)
    """The arguments of a call being streamed (STREAM)."""
    json: HermesState = field(default_factory=HermesState)
    """The JSON-form reader (JSON)."""


@dataclass(frozen=True, slots=True)
class _Region:
    """What the held text is: more needed, not a call, a call, or the end of the list."""

    kind: str  # "more", "bad", "call", "end"
    used: int = 0
    name: str = ""
    arguments: str = ""
    literals: Literals | None = None


def feed(state: PythonicState, text: str, final: bool, context: ToolContext
         ) -> tuple[str, list[ToolCallDelta], PythonicState]:
    """Content and tool-call deltas of new text; ``final`` settles what was held back."""
    buffer = state.held + text
    size = len(buffer)
    pos = 0
    """Where the text not read yet begins (``buffer`` is read in place, by position: a copy
    of the rest after every call is quadratic, issue 22)."""
    mode, calls, literals, json_state = state.mode, state.calls, state.literals, state.json
    content: list[str] = []
    deltas: list[ToolCallDelta] = []
    held = ""
    while pos < size or final:
        if mode == START:
            mode = _opening(buffer, final, context)
            if mode == START:
                if final:  # whitespace alone
                    content.append("" if context.forced_name or context.required else buffer)
                    break
                held = buffer
                break
        elif mode == JSON:
            out, json_deltas, json_state = hermes.feed(
                json_state, buffer[pos:], final, context.forced_name, context.required,
                _NO_TAGS)
            content.append(out)
            deltas += json_deltas
            calls = json_state.calls
            break
        elif mode == LIST:
            region = _read_region(buffer[pos:pos + MAX_HELD], first=calls == 0)
            if region.kind == "more" and not final and size - pos < MAX_HELD:
                held = buffer[pos:]
                break
            if region.kind == "call":
                deltas.append(ToolCallDelta(calls, region.name, region.arguments))
                calls += 1
                pos += region.used
            elif region.kind == "end":
                mode, pos = DONE, size
            elif region.kind == "more" and region.literals is not None \
                    and size - pos >= MAX_HELD:  # a long call: its arguments stream from here
                deltas.append(ToolCallDelta(calls, region.name, region.arguments))
                calls += 1
                mode, literals, pos = STREAM, region.literals, pos + MAX_HELD
            else:  # not a call (or cut off by the end of the output): content from here on
                content.append(buffer[pos:])
                mode, pos = CONTENT, size
        elif mode == STREAM:
            out, after, end, broken = translate(literals, buffer, pos)
            if out:
                deltas.append(ToolCallDelta(calls - 1, None, out))
            if broken is not None:
                content.append(buffer[broken:])
                mode, pos = CONTENT, size
            elif end is not None:
                mode, literals, pos = LIST, Literals(), end
            else:
                literals = after
                break
        elif mode == CONTENT:
            content.append(buffer[pos:])
            break
        else:  # DONE
            break
    return ("".join(content), merge(deltas),
            PythonicState(mode, held, calls, literals, json_state))


def _opening(buffer: str, final: bool, context: ToolContext) -> str:
    """How the output starts: a call list (LIST), a JSON form (JSON), neither (CONTENT), or
    not known yet (START)."""
    if buffer[:1] == "[":
        if len(buffer) == 1:
            return CONTENT if final else START
        if _NAME.match(buffer, 1):
            return LIST
    first = skip_space(buffer, 0, _WS)  # read in place, not stripped
    if context.forced_name is not None and buffer.startswith("{", first):
        return JSON
    if context.required and buffer.startswith("[", first):
        inner = skip_space(buffer, first + 1, _WS)
        if buffer.startswith("{", inner):
            return JSON
        if inner == len(buffer) and not final and len(buffer) <= MAX_LEADING_SPACE:
            return START
    forced = context.forced_name is not None or context.required
    if forced and first == len(buffer) and len(buffer) <= MAX_LEADING_SPACE:
        return START
    return CONTENT


def _read_region(region: str, first: bool) -> _Region:
    """Read a held region: ``[`` and the first call, or ``,`` and the next call, or ``]``."""
    pos = 1 if first else skip_space(region, 0, _WS)
    if not first:
        if pos == len(region):
            return _Region("more")
        if region[pos] == "]":
            return _Region("end")
        if region[pos] != ",":
            return _Region("bad")
        pos = skip_space(region, pos + 1, _WS)
        if region[pos:pos + 1] == "]":  # a trailing comma
            return _Region("end")
    name = _NAME.match(region, pos)
    if name is None:
        return _Region("more" if pos == len(region) else "bad")
    if name.end() == len(region):
        return _Region("more")
    if region[name.end()] != "(":
        return _Region("bad")
    start = name.end() + 1
    if first:  # as vLLM's pattern: "[name(" then ")" or a keyword written "name=" at once
        keyword = _NAME.match(region, start)
        if keyword is None and region[start:start + 1] not in ("", ")"):
            return _Region("bad")
        if keyword is not None and keyword.end() < len(region) and region[keyword.end()] != "=":
            return _Region("bad")
    arguments, literals, end, broken = translate(Literals(), region, start)
    if broken is not None:
        return _Region("bad")
    if end is None:
        return _Region("more", name=name.group(), arguments=arguments, literals=literals)
    after = skip_space(region, end, _WS)  # a call is followed by "," or "]"
    if after == len(region):
        return _Region("more")
    if region[after] not in ",]":
        return _Region("bad")
    return _Region("call", end, name.group(), arguments)


def _encode(state: PythonicState, w: Writer) -> None:
    literals = state.literals
    w.uint(MODES.index(state.mode))
    w.text(state.held)
    w.uint(state.calls)
    w.text(literals.stack)
    w.text(literals.token)
    w.uint(KINDS.index(literals.kind) | QUOTES.index(literals.quote) << 2
           | literals.triple << 4 | literals.raw << 5 | literals.fmt << 6)
    if state.mode == JSON:
        hermes.FORMAT.encode(state.json, w)


def _decode(r: Reader) -> PythonicState:
    mode = r.choice(MODES)
    held, calls, stack, token, bits = r.text(), r.uint(), r.text(), r.text(), r.uint()
    if bits >> 7 or not stack or stack[0] not in _CALL_PHASES or len(stack) > MAX_DEPTH \
            or stack.strip(_CONTAINER_PHASES) != stack[0] or len(token) > 2 * MAX_TOKEN:
        raise ValueError("malformed pythonic state")
    literals = Literals(stack, token, KINDS[bits & 3], QUOTES[bits >> 2 & 3], bool(bits & 16),
                        bool(bits & 32), bool(bits & 64))
    json_state = hermes.FORMAT.decode(r) if mode == JSON else HermesState()
    return PythonicState(mode, held, calls, literals, json_state)


FORMAT = ToolFormat("pythonic", PythonicState, PythonicState, feed, _encode, _decode)
