"""Gemma 4: the ``gemma4`` tool-call and reasoning parsers, as vLLM 0.33's ``Gemma4Parser``
(``vllm/parser/gemma4.py``, one engine for both) reads them (docs/recording-issue14.md,
fixtures 1153–1228)::

    <|channel>thought
    …reasoning…<channel|><|tool_call>call:NAME{key:<|"|>text<|"|>,n:3}<tool_call|>

Reasoning (``REASONING``, data of the reasoning machine in ``reasoning.py``): output starts
as content; ``<|channel>`` opens a block (again), ``<channel|>`` ends it and is dropped in
content, ``<|tool_call>`` ends it and stays for the tool parser; ``thought\\n`` after
``<|channel>`` is removed (``thought`` alone too when the block ends there); output that
starts with ``thought\\n`` is a block whose ``<|channel>`` was left out (vLLM injects it); a
prompt ending inside an open ``<|channel>`` block (none of ``<channel|>``, ``<|tool_call>``,
``<|turn>``, ``<|tool_response>`` after it) starts the output in reasoning.

Tool calls (``FORMAT``): ``<|tool_call>``, then ``call:`` (or a bare ``:``), the name up to
``{`` or ``(``, the body up to ``<tool_call|>`` (or the end of the output, or the next
``<|tool_call>``). The body is vLLM's ``_parse_gemma4_args`` grammar, lexed here
incrementally: ``key:value`` fields separated by commas, bare keys (whitespace around them
stripped), values ``<|"|>…<|"|>`` (verbatim), ``{…}``/``[…]`` (nested, their values strings)
or bare text up to ``,``, ``}`` or ``]`` (stripped); at the end of the body its closing ``}``
(or an unmatched ``)``) is dropped. Values are then typed by the request's schema as vLLM's
engine does (``schema.fix_value``, its ``_coerce_value``: ``coerce`` for strings; nested objects
and arrays by their ``properties``/``items``); a key the schema does not know stays a string.

One O(delta) machine serves both modes (docs/design.md, Parsers). A ``<|"|>`` value whose parameter
can only be a string streams as it arrives (holding back only whitespace and a ``}``/``)`` that
may close the body); any other value is held until it ends, at most ``MAX_VALUE``
characters, then written typed; past that it streams as a string (README). Text before the
first call is content, its trailing whitespace held back and dropped when a call follows;
text after a call is dropped (vLLM's message; its stream keeps both). State: the mode, a
short holdback, the key and the value being read, the function's name, the call counter,
flags, the nesting depth and the parenthesis balance.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from enum import IntEnum, IntFlag
from typing import Any

from derender.core.decoding.markers import Finder, earliest, pending_prefix
from derender.core.parsers import schema
from derender.core.parsers.primitives import escape, member, merge, skip_space, split_space
from derender.core.parsers.reasoning import ReasoningFormat
from derender.core.parsers.schema import STRING
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer

TOOL_START, TOOL_END, QUOTE = "<|tool_call>", "<tool_call|>", '<|"|>'
CHANNEL_START, CHANNEL_END = "<|channel>", "<channel|>"
MAX_NAME = 256
"""Characters of a function name, a key, or the text before ``call:``; longer: not read."""
MAX_VALUE = 1024
"""Characters of a value held until its end (typed); past that it streams as a string."""
MAX_SPACE = 256
"""Trailing whitespace of content held back (dropped if a call follows); more is content."""
_BARE_END = re.compile(r"[,}\]]")
"""What ends a bare value."""

REASONING = ReasoningFormat(
    "gemma4", ends_implicitly=(TOOL_START,), drops_late_end=True, start=CHANNEL_START,
    end=CHANNEL_END, starts_in_content=True, reopens=True, prefix="thought\n",
    prefix_opens=True, prompt_closers=(CHANNEL_END, TOOL_START, "<|turn>", "<|tool_response>"))
"""vLLM's ``gemma4`` reasoning parser, as data of the reasoning machine."""



class Mode(IntEnum):
    """Where the machine is (its number is the stream-state encoding): content; before
    ``call:``; in the name; in the body: a key, the gap before a value, a ``<|"|>`` value, a
    bare value, a nested value; skipping the rest of the call."""

    CONTENT = 0
    PRE = 1
    NAME = 2
    KEY = 3
    GAP = 4
    STR = 5
    BARE = 6
    NEST = 7
    SKIP = 8


CONTENT, PRE, NAME, KEY, GAP, STR, BARE, NEST, SKIP = Mode
MODES = tuple(Mode)
BODY = (KEY, GAP, STR, BARE, NEST, SKIP)


class Flag(IntFlag):
    """The state's flags (their bits are the stream-state encoding)."""

    SPOKE = 1
    """Content other than whitespace was emitted."""
    DROP = 2
    """A call was read (later content is dropped)."""
    FIELD = 4
    """The open call has a field written."""
    STREAM = 8
    """The open value streams as a string."""
    INSTR = 16
    """The open nested value is inside a ``<|"|>`` string."""
    STOPPED = 32
    """The body reads no more fields (vLLM's parser stops there, or a key is too long)."""
    ARRAY = 64
    """The open nested value is an array."""
    SPILL = 128
    """The whitespace ending the streamed value passed ``MAX_SPACE`` and went out: the run goes
    on as written (a run that long is kept whole, streamed or not)."""


SPOKE, DROP, FIELD, STREAM, INSTR, STOPPED, ARRAY, SPILL = (flag.value for flag in Flag)
"""The flags as plain ints, for the machine's bit arithmetic (``IntFlag`` arithmetic costs
about 40 times an int's)."""
KEPT = SPOKE | DROP


@dataclass(frozen=True, slots=True)
class Gemma4State(ToolState):
    mode: Mode = CONTENT
    held: str = ""
    """Unread text (what may still become a marker)."""
    acc: str = ""
    """PRE/NAME/KEY: the text so far; a held value: its raw text so far; a streaming value:
    the tail held back."""
    key: str = ""
    space: str = ""
    """Trailing whitespace of the content, held back."""
    fn: str = ""
    calls: int = 0
    flags: int = 0
    depth: int = 0
    parens: int = 0
    """The open body's ``)`` count less its ``(`` count."""


class _Run:
    """A working copy of the state while text is fed."""

    def __init__(self, state: Gemma4State, context: ToolContext) -> None:
        self.s = state
        self.context = context
        self.q = context.spelled(QUOTE)
        self.content: list[str] = []
        self.deltas: list[ToolCallDelta] = []

    def set(self, **changes: Any) -> None:
        self.s = replace(self.s, **changes)

    def flag(self, bit: int, on: bool = True) -> None:
        self.set(flags=self.s.flags | bit if on else self.s.flags & ~bit)

    def has(self, bit: int) -> bool:
        return bool(self.s.flags & bit)

    def args(self, text: str) -> None:
        if text:
            self.deltas.append(ToolCallDelta(self.s.calls - 1, None, text))

    def say(self, text: str) -> None:
        """Content (unless a call was read), its trailing whitespace held back."""
        if self.has(DROP) or not text:
            return
        out, space = split_space(self.s.space + text, MAX_SPACE)
        self.content.append(out)
        self.set(space=space)
        self.flag(SPOKE, self.has(SPOKE) or bool(out.strip()))

    def open_field(self, key: str) -> None:
        self.args(member(key, not self.has(FIELD)))
        self.flag(FIELD)

    def field(self, key: str, value: Any) -> None:
        self.open_field(key)
        self.args(json.dumps(schema.fix_value(value, schema.tool_properties(
            self.context.tools, self.s.fn).get(key)),
                             ensure_ascii=False))

    def overflow(self) -> None:
        """A held value past ``MAX_VALUE``: streamed as a string from here."""
        self.open_field(self.s.key)
        raw = self.s.acc[len(self.q):] if self.s.mode == STR else self.s.acc
        self.args('"' + escape(raw))
        self.set(acc="")
        self.flag(STREAM)


def feed(state: Gemma4State, text: str, final: bool, context: ToolContext
         ) -> tuple[str, list[ToolCallDelta], Gemma4State]:
    """Content and tool-call deltas of new text; ``final`` settles what was held back."""
    run = _Run(replace(state, held=""), context)
    start, end = context.spelled(TOOL_START), context.spelled(TOOL_END)
    buffer = state.held + text
    size = len(buffer)
    pos = 0
    """Where the text not read yet begins: ``buffer`` is read in place, by position (a copy
    of the rest at every marker is quadratic, issue 22), and markers are looked up in the
    whole text, each one's next place once."""
    finder = Finder(buffer)
    while pos < size:
        mode = run.s.mode
        if mode == CONTENT:
            found = finder.earliest((start,), pos)
            if found is None:
                hold = 0 if final else pending_prefix(buffer, (start,), pos)
                run.say(buffer[pos:size - hold])
                run.set(held=buffer[size - hold:])
                break
            run.say(buffer[pos:found[0]])
            run.set(mode=PRE, acc="", space="")
            pos = found[0] + len(start)
            continue
        stops = (end, start)
        found = finder.earliest(stops, pos)
        hold = 0 if final or found is not None else pending_prefix(buffer, stops, pos)
        ended = final or found is not None
        _call(run, buffer[pos:(size if found is None else found[0]) - hold], ended)
        if found is None:
            run.set(held=buffer[size - hold:] if hold else "")
            break
        pos = found[0] + (len(end) if found[1] == end else 0)
        run.set(mode=CONTENT, acc="", key="", fn="", depth=0, parens=0,
                flags=run.s.flags & KEPT)
    if final and run.s.mode != CONTENT:  # the output ends inside a call
        _call(run, "", True)
    if final:
        if run.s.mode == CONTENT and not run.has(DROP):
            run.content.append(run.s.space)
        run.set(space="", held="")
    return "".join(run.content), merge(run.deltas), run.s


def _call(run: _Run, region: str, ended: bool) -> None:
    """Read part of a call (``ended``: the call ends after it)."""
    i, counted = 0, False
    while i < len(region) or (ended and run.s.mode in (PRE, NAME)):
        mode = run.s.mode
        if mode == PRE:  # up to "call:" or a bare ":"
            text = run.s.acc + region[i:]
            found = earliest(text, ("call:", ":"))
            if found is None and not ended \
                    and len(text) - pending_prefix(text, ("call:",)) <= MAX_NAME:
                run.set(acc=text)  # (all of it: the bound is on what precedes "call:")
                return
            if found is None or found[0] > MAX_NAME:  # more than MAX_NAME before it, cut
                run.set(acc="", mode=SKIP)  # or not: no call (a place in the output)
                return
            run.set(mode=NAME, acc="")
            i = len(region) - (len(text) - found[0] - len(found[1]))
        elif mode == NAME:  # up to "{" or "("
            text = run.s.acc + region[i:]
            found = earliest(text, ("{", "("))
            name = (text if found is None else text[:found[0]]).strip()
            if found is None and not ended:
                run.set(acc=text, mode=NAME if len(text) <= MAX_NAME else SKIP)
                return
            if not name or len(text if found is None else text[:found[0]]) > MAX_NAME:
                run.set(mode=SKIP)  # (the name as held, whitespace and all: whatever the cuts)
                return
            run.deltas.append(ToolCallDelta(run.s.calls, name, ""))
            run.set(calls=run.s.calls + 1, fn=name, acc="", mode=KEY, flags=run.s.flags | DROP)
            if found is None:  # the call ended at its name
                run.args("{}")
                run.set(mode=SKIP)
                return
            i = len(region) - (len(text) - found[0] - 1)
        elif mode == SKIP:
            return
        else:
            if not counted:  # vLLM's closer rule counts the body's parentheses
                counted = True
                run.set(parens=run.s.parens + region.count(")", i) - region.count("(", i))
            i = _body(run, region, i)
    if ended and run.s.mode in BODY and run.s.mode != SKIP:
        _finish(run)


def _body(run: _Run, region: str, i: int) -> int:
    """Read the body from ``region[i]``; where reading stopped. The region is read in place,
    by position (a copy of its rest at every field is quadratic in a call of many fields)."""
    mode, q = run.s.mode, run.q
    if run.has(STOPPED):
        return len(region)
    if mode == KEY:
        acc = run.s.acc
        at = i if acc else skip_space(region, i, " ,\n\t")
        colon = region.find(":", at)
        if colon < 0:
            text = acc + region[at:]
            run.set(acc=text if len(text) <= MAX_NAME else "")
            run.flag(STOPPED, len(text) > MAX_NAME)
            return len(region)
        key = (acc + region[at:colon]).strip()
        if key.startswith(q) and key.endswith(q):
            key = key[len(q):-len(q)]
        run.set(key=key, acc="", mode=GAP)
        return colon + 1
    if mode == GAP:
        at = skip_space(region, i, " \n\t")
        if at == len(region):
            return len(region)
        if region.startswith(q, at):
            if schema.param_types(run.context.tools, run.s.fn, run.s.key) == STRING:
                run.open_field(run.s.key)
                run.args('"')
                run.flag(STREAM)
                run.set(mode=STR, acc="")
            else:
                run.set(mode=STR, acc=q)
            return at + len(q)
        if region[at] in "{[":
            run.set(mode=NEST, acc=region[at], depth=1)
            run.flag(INSTR, False)
            run.flag(ARRAY, region[at] == "[")
            return at + 1
        run.set(mode=BARE, acc="")
        return at
    if mode == STR:
        close = region.find(q, i)
        if close < 0:
            _more(run, region[i:])
            return len(region)
        _end_value(run, region[i:close], q)
        return close + len(q)
    if mode == BARE:
        stop = _BARE_END.search(region, i)
        if stop is None:
            _more(run, region[i:])
            return len(region)
        _end_value(run, region[i:stop.start()], "")
        return stop.start()  # the terminator is read again as the start of the next key
    # NEST: to the matching bracket, <|"|> strings skipped
    opener, closer = ("[", "]") if run.has(ARRAY) else ("{", "}")
    depth, inside, j = run.s.depth, run.has(INSTR), i
    while j < len(region):
        if region.startswith(q, j):
            inside, j = not inside, j + len(q)
            continue
        if not inside:
            depth += (region[j] == opener) - (region[j] == closer)
            if depth == 0:
                break
        j += 1
    run.set(depth=depth)
    run.flag(INSTR, inside)
    if depth:
        _more(run, region[i:])
        return len(region)
    _end_value(run, region[i:j + 1], "")
    return j + 1


def _more(run: _Run, piece: str) -> None:
    """More of an open value: held, or streamed less a tail that may still be dropped."""
    if not run.has(STREAM):
        run.set(acc=run.s.acc + piece)
        if len(run.s.acc) > MAX_VALUE:
            run.overflow()
        return
    text = run.s.acc + piece
    body = text.rstrip()
    visible = _closed(body, run.s.parens)
    spill = run.has(SPILL) and not body  # (the run that went out goes on)
    if spill or len(text) - len(visible) > MAX_SPACE + 1:
        visible, spill = text, True
    run.flag(SPILL, spill)
    run.args(escape(visible))
    run.set(acc=text[len(visible):])


def _closed(text: str, parens: int) -> str:
    """vLLM's ``_drop_call_closer``: a trailing ``}``, or ``)`` with more ``)`` than ``(``."""
    if text.endswith("}") or (text.endswith(")") and parens > 0):
        return text[:-1]
    return text


def _end_value(run: _Run, tail: str, closing: str) -> None:
    """The open value ends with ``tail`` (and its ``closing`` quote, if a string)."""
    if run.has(STREAM):
        run.args(escape(run.s.acc + tail) + '"')
        run.flag(STREAM | SPILL, False)
    else:
        raw = run.s.acc + tail + closing
        if run.s.mode == BARE and not raw.strip():  # vLLM's parser stops here
            run.set(acc="", mode=KEY)
            run.flag(STOPPED)
            return
        value = _fields("k:" + raw, run.q).get("k", "")
        run.field(run.s.key, value)
    run.set(acc="", mode=KEY, depth=0)


def _finish(run: _Run) -> None:
    """The body ends: the open value as vLLM reads the body's end, then the closing brace."""
    mode = run.s.mode
    if mode in (GAP, STR, BARE, NEST) and not run.has(STOPPED):
        if run.has(STREAM):
            run.args(escape(_closed(run.s.acc.rstrip(), run.s.parens)) + '"')
        else:
            raw = _closed(run.s.acc.rstrip(), run.s.parens)
            if mode == GAP:
                run.field(run.s.key, "")
            else:
                value = _fields("k:" + raw, run.q)
                if "k" in value:
                    run.field(run.s.key, value["k"])
    run.args("}" if run.has(FIELD) else "{}")
    run.flag(SPILL, False)
    run.set(mode=SKIP, acc="")


# vLLM's _parse_gemma4_args / _parse_gemma4_array (for values held whole)

def _span(text: str, i: int, opener: str, closer: str, q: str) -> tuple[int, bool]:
    """From just after ``opener`` at ``i``: the end of the bracketed run, and whether it
    closed."""
    depth, n = 1, len(text)
    while i < n and depth > 0:
        if text.startswith(q, i):
            nxt = text.find(q, i + len(q))
            i = n if nxt == -1 else nxt + len(q)
            continue
        depth += (text[i] == opener) - (text[i] == closer)
        i += 1
    return i, depth == 0


def _nested(text: str, i: int, q: str) -> tuple[Any, int]:
    opener = text[i]
    closer = "}" if opener == "{" else "]"
    end, closed = _span(text, i + 1, opener, closer, q)
    inner = text[i + 1:end - 1] if closed else text[i + 1:end]
    parse = _fields if opener == "{" else _array
    return parse(inner, q, partial=not closed), end


def _fields(text: str, q: str, partial: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {}
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " ,\n\t":
            i += 1
        if i >= n:
            break
        colon = text.find(":", i)
        if colon < 0:
            break
        key = text[i:colon].strip()
        if key.startswith(q) and key.endswith(q):
            key = key[len(q):-len(q)]
        i = colon + 1
        while i < n and text[i] in " \n\t":
            i += 1
        if i >= n:
            if not partial:
                result[key] = ""
            break
        if text.startswith(q, i):
            close = text.find(q, i + len(q))
            if close == -1:
                result[key] = text[i + len(q):]
                break
            result[key] = text[i + len(q):close]
            i = close + len(q)
        elif text[i] in "{[":
            result[key], i = _nested(text, i, q)
        else:
            start = i
            while i < n and text[i] not in ",}]":
                i += 1
            raw = text[start:i].strip()
            if (partial and i >= n) or i == start or (partial and raw.endswith(".")):
                break
            result[key] = raw
    return result


def _array(text: str, q: str, partial: bool = False) -> list[Any]:
    items: list[Any] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " ,\n\t":
            i += 1
        if i >= n:
            break
        if text.startswith(q, i):
            close = text.find(q, i + len(q))
            if close == -1:
                items.append(text[i + len(q):])
                break
            items.append(text[i + len(q):close])
            i = close + len(q)
        elif text[i] in "{[":
            item, i = _nested(text, i, q)
            items.append(item)
        else:
            start = i
            while i < n and text[i] not in ",]":
                i += 1
            raw = text[start:i].strip()
            if (partial and i >= n) or i == start or (partial and raw.endswith(".")):
                break
            items.append(raw)
    return items


def _encode(state: Gemma4State, w: Writer) -> None:
    w.uint(state.mode | state.flags << 4)
    for text in (state.held, state.acc, state.key, state.space, state.fn):
        w.text(text)
    w.uint(state.calls)
    w.uint(state.depth)
    w.uint(state.parens * 2 if state.parens >= 0 else -state.parens * 2 - 1)


def _decode(r: Reader) -> Gemma4State:
    bits = r.uint()
    held, acc, key, space, fn = r.text(), r.text(), r.text(), r.text(), r.text()
    calls, depth, parens = r.uint(), r.uint(), r.uint()
    if (bits & 15) >= len(MODES) or bits >> 4 + len(Flag) or len(held) > len(TOOL_START) \
            or len(acc) > MAX_VALUE + MAX_NAME or len(key) > MAX_NAME + MAX_NAME \
            or len(space) > MAX_SPACE or space.strip() or len(fn) > MAX_NAME:
        raise ValueError("malformed gemma4 state")
    return Gemma4State(MODES[bits & 15], held, acc, key, space, fn, calls, bits >> 4, depth,
                       parens // 2 if parens % 2 == 0 else -(parens + 1) // 2)


FORMAT = ToolFormat("gemma4", Gemma4State, Gemma4State, feed, _encode, _decode)
"""Tag 40 (this module's range, apart from the other formats')."""
