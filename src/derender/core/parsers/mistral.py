"""The ``mistral`` tool-call format (Mistral, Mixtral, Magistral, Devstral with tokenizer v11+):
``[TOOL_CALLS]name[ARGS]{…}`` per call, or ``[TOOL_CALLS]name{…}``, several calls one after
the other, each after its own ``[TOOL_CALLS]``.

vLLM 0.33's reference (``MistralToolParser``, its ``MistralParser`` engine) reads this grammar
when the tokenizer has ``[ARGS]``: text before the first ``[TOOL_CALLS]`` is content (only
whitespace there is dropped when calls follow), the name runs to ``[ARGS]`` or the first
``{`` (which begins the arguments) and is stripped, the arguments run to the next
``[TOOL_CALLS]``; without streaming they are the first JSON value found there (text after it
is dropped), the text itself when it is not JSON, and ``{}`` when there is none. This machine
serves both modes alike (design §6) the way vLLM's non-streaming answer reads the output:

- before the first call, text is content; whitespace alone before a call is dropped (held
  up to ``MAX_LEADING_SPACE`` characters);
- the name is held until ``[ARGS]``, ``{`` or the next ``[TOOL_CALLS]`` (at most ``MAX_NAME``
  characters), then sent stripped; a call without a name is one (named ``""``) only once it
  has arguments;
- arguments starting with ``{`` or ``[`` stream as written up to the end of that JSON value
  (``json_value.scan``), and what follows up to the next ``[TOOL_CALLS]`` is dropped; other
  arguments stream as written, their trailing whitespace dropped; none at all are ``{}``.

State: the mode, a short holdback (leading whitespace, the name, trailing whitespace), the
call counter, the spoke flag and the JSON scanner.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from derender.core.markers import earliest, pending_prefix
from derender.core.parsers.json_value import ValueScan, scan
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState, merge
from derender.core.state_codec import Reader, Writer

TOOL_CALLS, ARGS = "[TOOL_CALLS]", "[ARGS]"
MAX_NAME = 512
"""Characters of a name held before it is sent as it stands (the rest is arguments)."""
MAX_LEADING_SPACE = 256
"""Whitespace before the first call that is dropped with it; more is content."""
MAX_TRAILING_SPACE = 256
"""Whitespace at the end of non-JSON arguments held back to be dropped at their end."""

CONTENT, NAME, ARGS_START, JSON, RAW, AFTER = range(6)

_ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


@dataclass(frozen=True, slots=True)
class MistralState(ToolState):
    mode: int = CONTENT
    held: str = ""
    """Leading whitespace (CONTENT), the name so far (NAME), trailing whitespace (RAW) or a
    marker's beginning, all read again with the next text."""
    calls: int = 0
    """Calls started so far (the next call's index)."""
    spoke: bool = False
    """Content other than whitespace was emitted."""
    scan: ValueScan = field(default_factory=ValueScan)
    """The JSON arguments being read (JSON)."""
    nameless: bool = False
    """The call being read has an empty name: it is a call (named ``""``, as vLLM returns it)
    only once it has arguments."""


def feed(state: MistralState, text: str, final: bool, context: ToolContext
         ) -> tuple[str, list[ToolCallDelta], MistralState]:
    """Content and tool-call deltas of new text; ``final`` settles what was held back."""
    tc, args = context.spelled(TOOL_CALLS), context.spelled(ARGS)
    buffer = state.held + text
    mode, calls, spoke, scanner = state.mode, state.calls, state.spoke, state.scan
    nameless = state.nameless
    content: list[str] = []
    deltas: list[ToolCallDelta] = []
    held = ""

    def start_call(name: str, arguments: str) -> None:
        nonlocal calls, nameless
        nameless = not name
        if not nameless:
            deltas.append(ToolCallDelta(calls, name, arguments))
            calls += 1

    def add(arguments: str, written: bool = True) -> None:
        nonlocal calls, nameless
        if nameless and written and arguments:
            deltas.append(ToolCallDelta(calls, "", arguments))
            calls, nameless = calls + 1, False
        elif not nameless:
            deltas.append(ToolCallDelta(calls - 1, None, arguments))
    while True:
        if mode == CONTENT:
            found = earliest(buffer, (tc,))
            if found is None:
                hold = 0 if final else pending_prefix(buffer, (tc,))
                out = buffer[:len(buffer) - hold]
                if not spoke and not out.strip() and not final and len(out) <= MAX_LEADING_SPACE:
                    hold, out = len(buffer), ""  # whitespace may precede a call
                content.append(out)
                spoke = spoke or bool(out.strip())
                held = buffer[len(buffer) - hold:]
                break
            before = buffer[:found[0]]
            if spoke or before.strip():
                content.append(before)
                spoke = True
            mode, buffer = NAME, buffer[found[0] + len(tc):]
        elif mode == NAME:
            found = earliest(buffer, (tc, args, "{"))
            if found is None:
                if not final and len(buffer) <= MAX_NAME:
                    held = buffer
                    break
                start_call(buffer.strip(), "{}" if final else "")
                if final:
                    break
                mode, buffer = ARGS_START, ""
                continue
            at, marker = found
            start_call(buffer[:at].strip(), "{}" if marker == tc else "")
            if marker == tc:
                buffer = buffer[at + len(tc):]
            else:
                mode = ARGS_START
                buffer = buffer[at + len(args):] if marker == args else buffer[at:]
        elif mode == ARGS_START:
            rest = buffer.lstrip()
            if not rest:
                if final:
                    add("{}", written=False)
                break
            if rest.startswith(tc):
                add("{}", written=False)
                mode, buffer = NAME, rest[len(tc):]
            else:
                mode, buffer, scanner = (JSON if rest[0] in "{[" else RAW), rest, ValueScan()
        elif mode in (JSON, RAW):
            at = buffer.find(tc)
            region = buffer if at < 0 else buffer[:at]
            hold = 0 if final or at >= 0 else pending_prefix(region, (tc,))
            region = region[:len(region) - hold]
            if mode == JSON:
                end, scanner = scan(scanner, region)
                if end is not None:
                    add(region[:end])
                    mode, buffer, scanner = AFTER, buffer[end:], ValueScan()
                    continue
                piece = region
            elif at >= 0 or final:
                piece = region.rstrip()
            else:
                piece = region.rstrip()
                if len(region) - len(piece) <= MAX_TRAILING_SPACE:
                    hold += len(region) - len(piece)
                else:
                    piece = region
            add(piece)
            if at >= 0:
                mode, buffer, scanner = NAME, buffer[at + len(tc):], ValueScan()
                continue
            held = buffer[len(buffer) - hold:] if hold else ""
            break
        else:  # AFTER: dropped up to the next call
            found = earliest(buffer, (tc,))
            if found is None:
                hold = 0 if final else pending_prefix(buffer, (tc,))
                held = buffer[len(buffer) - hold:] if hold else ""
                break
            mode, buffer = NAME, buffer[found[0] + len(tc):]
    return ("".join(content), merge(deltas),
            MistralState(mode, held, calls, spoke, scanner, nameless))


def call_id(request_id: str, choice_index: int, call_index: int) -> str:
    """Deterministic id in Mistral's form: nine alphanumeric characters (vLLM draws them at
    random; mistral-common's validator accepts only this form)."""
    digest = hashlib.sha256(f"{request_id}\x00{choice_index}\x00{call_index}".encode()).digest()
    number = int.from_bytes(digest[:8], "big")
    chars = []
    for _ in range(9):
        number, digit = divmod(number, len(_ALPHANUMERIC))
        chars.append(_ALPHANUMERIC[digit])
    return "".join(chars)


def _encode(state: MistralState, w: Writer) -> None:
    scan_ = state.scan
    w.uint(state.mode)
    w.text(state.held)
    w.uint(state.calls)
    w.uint(state.spoke | scan_.started << 1 | scan_.in_string << 2 | scan_.escaped << 3
           | scan_.scalar << 4 | state.nameless << 5)
    w.uint(scan_.depth)


def _decode(r: Reader) -> MistralState:
    mode, held, calls, bits, depth = r.uint(), r.text(), r.uint(), r.uint(), r.uint()
    if mode > AFTER or bits >> 6:
        raise ValueError("malformed mistral state")
    return MistralState(mode, held, calls, bool(bits & 1), ValueScan(
        started=bool(bits & 2), depth=depth, in_string=bool(bits & 4), escaped=bool(bits & 8),
        scalar=bool(bits & 16)), bool(bits & 32))


FORMAT = ToolFormat("mistral", 24, MistralState, MistralState, feed, _encode, _decode)
