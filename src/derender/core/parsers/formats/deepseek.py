"""The DeepSeek tool-call formats: ``deepseek_v3`` (DeepSeek V3, R1-0528) and ``deepseek_v31``
(DeepSeek V3.1, V3.2), as vLLM 0.33's ``DeepSeekV3ToolParser`` and ``DeepSeekV31ToolParser``
read them. Calls are wrapped in marker tokens, matched by id (``registry.MARKUP``)::

    deepseek_v3:  <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
                  ```json
                  {…}
                  ```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>
    deepseek_v31: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}
                  <｜tool▁call▁end｜>… (no line break before the end marker)

One machine for both modes (docs/design.md, Parsers), following vLLM's non-streaming reading:

- before ``<｜tool▁calls▁begin｜>`` text is content (whitespace alone before it is not); output
  without it is all content, any other marker included;
- after it only calls are read and other text is dropped; for ``deepseek_v3`` the text after
  ``<｜tool▁calls▁end｜>`` is content again (vLLM: after the last one), for ``deepseek_v31`` it
  is dropped (calls after it are still read, as vLLM's ``findall`` does);
- a call's name is sent once its head is read (v3: the type, ``<｜tool▁sep｜>``, the name line
  and the ```` ```json ```` fence; v3.1: the name and ``<｜tool▁sep｜>``), then its arguments
  stream as written, raw, to ``<｜tool▁call▁end｜>`` (v3: less the closing fence); a head that
  does not read within ``MAX_HEAD`` characters makes the call unreadable and it is dropped;
- a call cut short (by the end of the output, the next call or the end of the calls) keeps
  the arguments read so far; vLLM returns no call then.

State: the mode, a short holdback (at most a head), the call counter and three flags.

``kimi_k2`` (Kimi K2.x, vLLM's ``KimiK2Parser``) is the same grammar with other markers, and
its differences are data of ``Grammar`` (vLLM 0.33 reads it with its parser engine,
``vllm/parser/kimi_k2.py``; docs/recording-issue14.md, fixtures 1063–1152)::

    <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX
    <|tool_call_argument_begin|>{…}<|tool_call_end|>…<|tool_calls_section_end|>

- the head is the text up to ``<|tool_call_argument_begin|>``, stripped; it must match
  ``.+:\\d+`` (else the call is dropped) and is the call's id as written — vLLM does not
  renumber it — and the name is its part before the first ``:`` less ``functions.``;
- a header that names nothing (no ``:IDX``, or nothing before it) makes vLLM's engine read
  the name from the body (its ``"name": "…"``, the first one): the body is held whole to the
  call's end (at most ``MAX_HEAD`` characters, else the call is dropped: README), then it is
  a call of that name whose arguments are the whole body, stripped, with the id
  ``functions.NAME:IDX`` (IDX: the call's index); without a name there is no call;
- the arguments are the raw text, stripped (held whitespace at either end dropped), ``{}``
  when empty; text after the section end is dropped, calls after it still read (as
  ``deepseek_v31``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from derender.core.decoding.markers import Finder, earliest, pending_prefix
from derender.core.parsers.primitives import (
    MAX_LEADING_SPACE,
    leading_text,
    leads_content,
    merge,
    unread,
)
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer

CALLS_BEGIN, CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CALL_BEGIN, CALL_END, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
MARKERS = (CALLS_BEGIN, CALLS_END, CALL_BEGIN, CALL_END, SEP)
FENCE_OPEN, FENCE_CLOSE = "\n```json\n", "\n```"
MAX_HEAD = 512
"""Characters of a call read before its head (up to its arguments) must be known."""

CONTENT, CALLS, HEAD, ARGS, SKIP, BODY = "content", "calls", "head", "args", "skip", "body"
MODES = (CONTENT, CALLS, HEAD, ARGS, SKIP, BODY)
BODY_NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')
"""kimi_k2: vLLM's ``_NAME_RE`` (its parser engine's ``_try_extract_name``), searched in the
body of a call whose header names nothing."""


@dataclass(frozen=True, slots=True)
class DeepSeekState(ToolState):
    mode: str = CONTENT
    held: str = ""
    calls: int = 0
    """Calls started so far (the next call's index)."""
    spoke: bool = False
    """Content other than whitespace was emitted."""
    opened: bool = False
    """``<｜tool▁calls▁begin｜>`` was read (whitespace alone is then never content)."""
    lead: str = ""
    """deepseek_v3: the whitespace before the calls, content if text follows them."""
    started: bool = False
    """kimi_k2: the open call's arguments have begun (text other than whitespace)."""
    spill: bool = False
    """kimi_k2: the whitespace ending the arguments passed ``MAX_LEADING_SPACE`` and went out;
    the run goes on as written (a run that long is kept whole, streamed or not)."""


@dataclass(frozen=True, slots=True)
class DeepSeekV3State(DeepSeekState):
    pass


@dataclass(frozen=True, slots=True)
class DeepSeekV31State(DeepSeekState):
    pass


@dataclass(frozen=True, slots=True)
class KimiK2State(DeepSeekState):
    pass


Head = tuple[str, int, str | None] | bool
"""A head read: (name, length read, the call's own id or None); True: read on; False: no."""


def _head_v3(head: str, m: dict[str, str]) -> Head:
    """``TYPE<sep>NAME`` line and the fence: (name, length read); True: read on; False: no."""
    line_end = head.find("\n")
    stop = earliest(head, (m[CALL_END], m[CALL_BEGIN], m[CALLS_END]))
    if stop is not None and (line_end < 0 or stop[0] < line_end):
        return False
    if line_end < 0:
        return True
    line = head[:line_end]
    sep = line.rfind(m[SEP])  # vLLM's type is greedy: the name follows the last separator
    if sep < 0:
        return False
    fence = head[line_end:line_end + len(FENCE_OPEN)]
    if not FENCE_OPEN.startswith(fence):
        return False
    if len(fence) < len(FENCE_OPEN):
        return True
    name = line[sep + len(m[SEP]):]
    return (name, line_end + len(FENCE_OPEN), None) if name else False


def _head_v31(head: str, m: dict[str, str]) -> Head:
    """``NAME<sep>``: (name, length read); True: read on; False: no."""
    stop = earliest(head, ("\n", m[SEP], m[CALL_END], m[CALL_BEGIN], m[CALLS_END]))
    if stop is None:
        return True
    at, marker = stop
    if marker != m[SEP] or at == 0:
        return False
    return head[:at], at + len(marker), None


_LONGEST = 64
"""More than any marker's length: a head is read in its first ``MAX_HEAD`` characters and the
marker that may end there, never in the rest of the text."""

KIMI_ID = re.compile(r"(?P<id>.+:\d+)")
"""vLLM's ``_TOOL_ID_RE``, matched at the start of the stripped header."""


def _head_kimi(head: str, m: dict[str, str]) -> Head:
    """``functions.NAME:IDX<sep>``: the header is the id, the name its part before ``:``."""
    stop = earliest(head, (m[SEP], m[CALL_END], m[CALL_BEGIN], m[CALLS_END]))
    if stop is None:
        return True
    at, marker = stop
    if marker != m[SEP]:
        return False
    found = KIMI_ID.match(head[:at].strip())
    call_id = None if found is None else found.group("id").strip()
    name = "" if call_id is None else call_id.split(":")[0].removeprefix("functions.")
    return (name, at + len(marker), call_id) if name else ("", at + len(marker), None)


@dataclass(frozen=True, slots=True)
class Grammar:
    """What tells the DeepSeek-shaped formats apart (the machine is ``_feed``)."""

    markers: dict[str, str]
    """This format's marker for each of DeepSeek's (``MARKERS``)."""
    head: Callable[[str, dict[str, str]], Head]
    content_after: bool = False
    """Text after the calls' end is content again (else dropped)."""
    fence: bool = False
    """The arguments end with a closing ```` ``` ```` fence, not part of them."""
    strip_args: bool = False
    """Whitespace around the arguments is dropped; empty arguments are ``{}``."""


V3_GRAMMAR = Grammar({m: m for m in MARKERS}, _head_v3, content_after=True, fence=True)
V31_GRAMMAR = Grammar({m: m for m in MARKERS}, _head_v31)
KIMI_MARKERS = ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
                "<|tool_call_begin|>", "<|tool_call_end|>", "<|tool_call_argument_begin|>")
KIMI_GRAMMAR = Grammar(dict(zip(MARKERS, KIMI_MARKERS, strict=True)), _head_kimi,
                       strip_args=True)


def _feed(state: DeepSeekState, text: str, final: bool, context: ToolContext, g: Grammar
          ) -> tuple[str, list[ToolCallDelta], tuple[str, str, int, bool, bool, str, bool, bool]]:
    """Content and tool-call deltas of new text, and the next state's fields."""
    v3 = g.content_after
    m = {marker: context.spelled(g.markers[marker]) for marker in MARKERS}
    started, spill = state.started, state.spill
    buffer = state.held + text
    mode, calls, spoke, opened = state.mode, state.calls, state.spoke, state.opened
    lead = state.lead
    content: list[str] = []
    deltas: list[ToolCallDelta] = []
    held = ""
    ends = (m[CALL_BEGIN], m[CALL_END], m[CALLS_END]) if v3 else (m[CALL_BEGIN], m[CALL_END])
    # read by position (no copies of the rest), each marker's next place looked up once
    finder, pos = Finder(buffer), 0
    while pos < len(buffer):
        if mode == CONTENT:
            found = finder.earliest((m[CALLS_BEGIN],), pos)
            if found is None:  # whitespace around the calls is no content
                out, held, spoke = leading_text(buffer[pos:], (m[CALLS_BEGIN],), final, spoke,
                                                opened)
                content.append(out)
                break
            before = buffer[pos:found[0]]
            if leads_content(before, spoke):
                content.append(before)
                spoke = True
            elif v3 and not opened:
                lead = before
            mode, opened, pos = CALLS, True, found[0] + len(found[1])
        elif mode in (CALLS, SKIP):  # between calls (or in an unreadable one): dropped
            found = finder.earliest(ends, pos)
            if found is None:
                _, held = unread(buffer[pos:], ends, final)
                break
            at, marker = found
            pos = at + len(marker)
            mode = HEAD if marker == m[CALL_BEGIN] else CALLS
            if marker == m[CALLS_END]:  # v3: text after the calls is content again
                mode = CONTENT
                if lead and not spoke:  # read again before the rest (once: lead is gone)
                    buffer, pos = lead + buffer[pos:], 0
                    finder = Finder(buffer)
                lead = ""
        elif mode == HEAD:
            window = buffer[pos:pos + MAX_HEAD + _LONGEST]  # a head is read within MAX_HEAD
            head = g.head(window, m)
            if head is True and not final and len(buffer) - pos < MAX_HEAD:
                held = buffer[pos:]
                break
            if isinstance(head, tuple) and head[1] <= MAX_HEAD and not head[0]:
                mode, pos = BODY, pos + head[1]  # kimi_k2: the name is read from the body
            elif isinstance(head, tuple) and head[1] <= MAX_HEAD:
                deltas.append(ToolCallDelta(calls, head[0], "", head[2]))
                calls += 1
                mode, pos, started, spill = ARGS, pos + head[1], False, False
            else:
                mode = SKIP  # not a call we can read: dropped to its end
        elif mode == BODY:  # held whole to its end, then a call if it names one
            stops = (m[CALL_END], m[CALLS_END], m[CALL_BEGIN])
            found = finder.earliest(stops, pos)
            if found is None and not final:
                if len(buffer) - pos > MAX_HEAD:  # too long to hold: dropped (README)
                    mode = SKIP
                    continue
                held = buffer[pos:]
                break
            at = len(buffer) if found is None else found[0]
            body = buffer[pos:at]
            named = BODY_NAME.search(body)
            if named is not None and named.group(1):
                name = named.group(1)
                deltas.append(ToolCallDelta(calls, name, body.strip() or "{}",
                                            f"functions.{name}:{calls}"))
                calls += 1
                started = True
            if found is None:
                pos = len(buffer)
            else:
                pos = at + len(found[1])
                mode = HEAD if found[1] == m[CALL_BEGIN] else CALLS
        else:  # ARGS: raw up to the call's end (v3: less the closing fence)
            stops = (m[CALL_END], m[CALLS_END], m[CALL_BEGIN])
            found = finder.earliest(stops, pos)
            if found is not None:  # the call's end; or, cut short, the calls' or the next
                at, marker = found
                piece = buffer[pos:at]
                if g.fence and piece.endswith(FENCE_CLOSE):
                    piece = piece[:-len(FENCE_CLOSE)]
                if g.strip_args:
                    body = piece.strip() if not started else piece.rstrip()
                    long = (spill and not body) or len(piece) - len(piece.rstrip()) \
                        > MAX_LEADING_SPACE  # (a run that long is kept: a place, not a cut)
                    piece = piece.lstrip() if long and not started else piece if long else body
                    piece = piece or ("" if started else "{}")
                spill = False
                pos = at + len(marker)
                mode = CALLS if marker == m[CALL_END] else HEAD if marker == m[CALL_BEGIN] \
                    else CONTENT if v3 else CALLS
                if mode == CONTENT:
                    if lead and not spoke:
                        buffer, pos = lead + buffer[pos:], 0
                        finder = Finder(buffer)
                    lead = ""
            else:
                rest = buffer[pos:]
                closes = stops + tuple(FENCE_CLOSE + stop for stop in stops) if g.fence \
                    else stops
                hold = 0 if final else pending_prefix(rest, closes)
                if g.strip_args:  # whitespace around the arguments is dropped
                    if not started:
                        rest = rest.lstrip()
                    kept = rest.rstrip()
                    spill = spill and not kept
                    if spill or len(rest) - len(kept) > MAX_LEADING_SPACE:
                        spill = True  # a run that long goes out whole, streamed or not
                    elif final:
                        rest = kept or ("" if started else "{}")
                    else:  # may end them: held
                        hold = max(hold, len(rest) - len(kept))
                piece, held = rest[:len(rest) - hold], rest[len(rest) - hold:]
                pos = len(buffer)
            if piece:
                deltas.append(ToolCallDelta(calls - 1, None, piece))
                started = started or bool(piece.strip())
    if final and mode == ARGS and g.strip_args and not started and not held:
        deltas.append(ToolCallDelta(calls - 1, None, "{}"))  # cut off before its arguments
        started = True
    return "".join(content), merge(deltas), (mode, held, calls, spoke, opened, lead, started,
                                              spill and mode == ARGS)


def _feed_v3(state: DeepSeekV3State, text: str, final: bool, context: ToolContext
             ) -> tuple[str, list[ToolCallDelta], DeepSeekV3State]:
    content, deltas, fields = _feed(state, text, final, context, V3_GRAMMAR)
    return content, deltas, DeepSeekV3State(*fields)


def _feed_v31(state: DeepSeekV31State, text: str, final: bool, context: ToolContext
              ) -> tuple[str, list[ToolCallDelta], DeepSeekV31State]:
    content, deltas, fields = _feed(state, text, final, context, V31_GRAMMAR)
    return content, deltas, DeepSeekV31State(*fields)


def _feed_kimi(state: KimiK2State, text: str, final: bool, context: ToolContext
               ) -> tuple[str, list[ToolCallDelta], KimiK2State]:
    content, deltas, fields = _feed(state, text, final, context, KIMI_GRAMMAR)
    return content, deltas, KimiK2State(*fields)


def _encode(state: DeepSeekState, w: Writer) -> None:
    w.uint(MODES.index(state.mode) | state.spoke << 3 | state.opened << 4 | state.started << 5
           | state.spill << 6)
    w.text(state.held)
    w.uint(state.calls)
    w.text(state.lead)


def _fields(r: Reader) -> tuple[str, str, int, bool, bool, str, bool, bool]:
    bits, held, calls, lead = r.uint(), r.text(), r.uint(), r.text()
    if bits >> 7 or bits & 7 >= len(MODES) or (bits & 64 and MODES[bits & 7] != ARGS) \
            or len(held) > MAX_HEAD + MAX_LEADING_SPACE \
            or len(lead) > MAX_LEADING_SPACE or lead.strip():
        raise ValueError("malformed deepseek state")
    return (MODES[bits & 7], held, calls, bool(bits & 8), bool(bits & 16), lead,
            bool(bits & 32), bool(bits & 64))


def _decode_v3(r: Reader) -> DeepSeekV3State:
    return DeepSeekV3State(*_fields(r))


def _decode_v31(r: Reader) -> DeepSeekV31State:
    return DeepSeekV31State(*_fields(r))


V3 = ToolFormat("deepseek_v3", DeepSeekV3State, DeepSeekV3State, _feed_v3, _encode,
                _decode_v3)
V31 = ToolFormat("deepseek_v31", DeepSeekV31State, DeepSeekV31State, _feed_v31, _encode,
                 _decode_v31)


def _decode_kimi(r: Reader) -> KimiK2State:
    return KimiK2State(*_fields(r))


KIMI_K2 = ToolFormat("kimi_k2", KimiK2State, KimiK2State, _feed_kimi, _encode,
                     _decode_kimi)
"""Tags 20, 21 and 22 (this module's range, apart from the other formats')."""
