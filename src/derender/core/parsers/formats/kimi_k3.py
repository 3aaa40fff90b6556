"""Kimi K3's XTML channels (``kimi_k3``, tool and reasoning parser; vLLM 0.33's
``vllm/tool_parsers/kimi_k3_tool_parser.py``, ``vllm/reasoning/kimi_k3_reasoning_parser.py``,
composed by ``vllm/parser/kimi_k3.py``; docs/vllm-compat/kimi_k3.md)::

    THOUGHT<|close|>think<|sep|>
    <|open|>response<|sep|>TEXT<|close|>response<|sep|>
    <|open|>tools<|sep|>
      <|open|>call tool="NAME" index="1"<|sep|>
        <|open|>argument key="K" type="string"<|sep|>RAW<|close|>argument<|sep|>
        <|open|>argument key="K2" type="object"<|sep|>{"a": 1}<|close|>argument<|sep|>
      <|close|>call<|sep|>
    <|close|>tools<|sep|>
    <|close|>message<|sep|>

``<|open|>``, ``<|close|>`` and ``<|sep|>`` are single special tokens (stand-ins here); a tag is
one of them, a header of ordinary text and ``<|sep|>`` (whitespace around a tag's name is
allowed, as vLLM's regexes allow it). The prompt opens ``<|open|>think<|sep|>`` (thinking) or
``<|open|>response<|sep|>``, so the output starts inside one of them.

One machine reads what vLLM's pair reads, as its non-streaming answer has it (its streams
differ, README compatibility): reasoning up to the first ``<|close|>think<|sep|>`` (an output
opening with ``<|open|>response<|sep|>`` has none; an opening ``<|open|>think<|sep|>`` is
dropped); then the content is the first ``response`` channel's text (text before it and after
it is not content; without a channel the text before the ``tools`` channel, response and
message closings dropped); the calls are the ``call`` elements of the first ``tools`` channel,
each argument typed by its ``type`` attribute (``string``: the text as written; else JSON, or
the text when it is not JSON), attribute values unescaped (``&quot;``, ``&amp;``). The record is
an engine record (``registry``), so the engine's pairing rules and start state apply; the
reasoning parser alone (``NO_TOOLS``) does not read the ``tools`` channel (it stays content).
Calls stream: the name with the call's header, then each argument (typed values held until
their end, at most ``MAX_VALUE`` bytes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from derender.core.decoding.markers import Finder, pending_prefix
from derender.core.decoding.vocab import restore_table
from derender.core.parsers.engine import (
    CONTENT,
    NO_TOOLS,
    REASONING,
    THINKING,
    EngineConfig,
    GlmArgs,
)
from derender.core.parsers.registry import MARKUP
from derender.core.parsers.tools import (
    ToolCallDelta,
    ToolContext,
    ToolFormat,
    ToolState,
    spell_key,
)
from derender.core.state.codec import Reader, Writer, utf8_size

OPEN, CLOSE, SEP = "<|open|>", "<|close|>", "<|sep|>"

# phases (the engine's start state gives CONTENT 0 or REASONING 1)
PRE, LOOSE, BODY, AFTER, TOOLS, CALL, ARG, POST = 0, 2, 3, 4, 5, 6, 7, 8
PHASES = (PRE, REASONING, LOOSE, BODY, AFTER, TOOLS, CALL, ARG, POST)
"""PRE: content, nothing said yet; REASONING; LOOSE: content said outside a response channel;
BODY: a response channel's text; AFTER: the channel closed (the content is complete); TOOLS:
the tools channel, between calls; CALL: a call, between arguments; ARG: an argument's value;
POST: after the tools channel."""

# flags: the engine's THINKING (1), NO_TOOLS (1 << 11) and HOLDS_END (1 << 12), and these
SPOKE = 1 << 1
"""Content other than whitespace was emitted."""
BEGUN = 1 << 2
"""Reasoning: text other than whitespace was read (an opening tag is no longer read)."""
GHOST = 1 << 3
"""The open call has no tool name: it is not a call (nothing of it is emitted)."""
HAS_ARG = 1 << 4
"""The open call has emitted an argument (the next one is preceded by ``, ``)."""
STRING = 1 << 5
"""The open argument is a string (its text streams, JSON-escaped)."""
CALLED = 1 << 6
"""A call was read (whitespace alone is then no content, when calls are returned)."""
DONE = 1 << 7
"""A response channel was closed."""
KNOWN_FLAGS = THINKING | NO_TOOLS | (1 << 12) | SPOKE | BEGUN | GHOST | HAS_ARG | STRING \
    | CALLED | DONE

MAX_TAG = 256
"""Bytes (UTF-8) of a tag's header held until its ``<|sep|>``; a longer header is text (README
compatibility: vLLM reads a header of any length)."""
MAX_VALUE = 1024
"""Bytes of a typed (non-string) argument value held until its end; past that the value is
emitted as a string of the text as written (README compatibility)."""
MAX_SPACE = 256
"""Bytes of whitespace held: content while it is only whitespace (dropped when a returned call
follows or a response channel opens), reasoning before a possible opening tag."""

_RESTORE = restore_table(MARKUP)
_ATTR = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True, slots=True)
class KimiK3State(ToolState):
    phase: int = PRE
    flags: int = 0
    held: str = ""
    """Text not read yet: a tag whose ``<|sep|>`` has not come, or the start of a marker."""
    space: str = ""
    """Whitespace held back (``MAX_SPACE``)."""
    value: str = ""
    """ARG, typed: the value so far."""
    calls: int = 0
    """Calls read (the next one's index)."""


@lru_cache(maxsize=64)
def _spellings(spell: tuple[tuple[str, str], ...]) -> tuple[str, str, str]:
    table = dict(spell)
    return table.get(OPEN, OPEN), table.get(CLOSE, CLOSE), table.get(SEP, SEP)


def _attrs(header: str) -> dict[str, str]:
    """vLLM's ``_attrs``: ``key="value"`` pairs, ``&quot;`` then ``&amp;`` unescaped."""
    return {m[1]: m[2].replace("&quot;", '"').replace("&amp;", "&")
            for m in _ATTR.finditer(header)}


def _named(header: str, name: str) -> str | None:
    """The attributes of a ``NAME ATTRS`` header (``\\s*NAME\\s+ATTRS``); None: another tag."""
    rest = header.lstrip()
    if rest.startswith(name) and len(rest) > len(name) and rest[len(name)].isspace():
        return rest[len(name):]
    return None


class _Run:
    """One feed: the state's fields as locals, and what is emitted."""

    def __init__(self, state: KimiK3State, context: ToolContext) -> None:
        self.phase, self.flags, self.space = state.phase, state.flags, state.space
        self.value, self.calls = state.value, state.calls
        self.context = context
        self.reasoning: list[str] = []
        self.content: list[str] = []
        self.deltas: list[ToolCallDelta] = []

    def has(self, flag: int) -> bool:
        return bool(self.flags & flag)

    def set(self, flag: int, on: bool = True) -> None:
        self.flags = self.flags | flag if on else self.flags & ~flag

    # text

    def say(self, text: str) -> None:
        """Content: whitespace held until something else is said."""
        if not text:
            return
        if self.has(SPOKE):
            self.content.append(text)
        elif text.isspace():
            self.space += text
            if utf8_size(self.space) > MAX_SPACE:
                self.content.append(self.space)
                self.space = ""
        else:
            self.content.append(self.space + text)
            self.space = ""
            self.set(SPOKE)

    def think(self, text: str) -> None:
        """Reasoning: whitespace opening it held while an opening tag may follow."""
        if not text:
            return
        if self.has(BEGUN):
            self.reasoning.append(text)
        elif text.isspace() and utf8_size(self.space + text) <= MAX_SPACE:
            self.space += text
        else:
            self.reasoning.append(self.space + text)
            self.space = ""
            self.set(BEGUN)

    def text(self, text: str) -> None:
        """``text`` read in the current phase."""
        if not text:
            return
        phase = self.phase
        if phase == REASONING:
            self.think(text)
        elif phase in (PRE, LOOSE, BODY):
            self.say(text)
            if phase == PRE and self.has(SPOKE):
                self.phase = LOOSE
        elif phase == ARG:
            self.arg_text(text)

    def arg_text(self, text: str) -> None:
        if self.has(GHOST):
            return
        if self.has(STRING):
            self.emit(json.dumps(text, ensure_ascii=False)[1:-1])
            return
        self.value += text
        if utf8_size(self.value) > MAX_VALUE:  # too long to hold: the text as a string
            self.emit('"' + json.dumps(self.value, ensure_ascii=False)[1:-1])
            self.value = ""
            self.set(STRING)

    def emit(self, arguments: str) -> None:
        if arguments:
            self.deltas.append(ToolCallDelta(self.calls - 1, None, arguments))

    # tags

    def tag(self, opening: bool, header: str) -> bool:
        """A complete tag read in the current phase; False: it is text there."""
        name = header.strip()
        phase = self.phase
        tools = not self.has(NO_TOOLS)
        if phase == REASONING:
            if not opening and name == "think":
                self.end_reasoning()
                return True
            if opening and not self.has(BEGUN) and name in ("think", "response"):
                self.space = ""
                if name == "think":
                    self.set(BEGUN)
                else:
                    self.phase = BODY
                return True
            return False
        if phase in (PRE, LOOSE, BODY):
            if (not opening and name == "message") or (
                    not opening and name == "response" and phase != BODY):
                return True  # dropped
            if opening and name == "tools" and tools:
                self.phase = TOOLS
                return True
            if phase == BODY:
                if not opening and name == "response":
                    self.phase = AFTER
                    self.set(DONE)
                    return True
                return False
            if opening and name == "response":
                if phase == PRE:
                    self.space = ""
                self.phase = BODY
                return True
            return False
        if phase == AFTER:
            if opening and name == "tools" and tools:
                self.phase = TOOLS
            return True
        if phase == TOOLS:
            attrs = _named(header, "call") if opening else None
            if attrs is not None:
                self.open_call(_attrs(attrs).get("tool", ""))
            elif not opening and name == "tools":
                self.phase = POST
            return True
        if phase == CALL:
            attrs = _named(header, "argument") if opening else None
            if attrs is not None:
                self.open_arg(_attrs(attrs))
            elif not opening and name in ("call", "tools"):
                self.close_call(name)
            return True
        if phase == ARG:
            if opening or name not in ("argument", "call", "tools"):
                return False
            self.close_arg()
            if name != "argument":
                self.close_call(name)
            return True
        # POST: a response channel read only when no content came before
        if (opening and name == "response" and not self.has(SPOKE)
                and not self.has(DONE)):
            self.phase = BODY
        return True

    def end_reasoning(self) -> None:
        if self.space:  # whitespace alone: reasoning
            self.reasoning.append(self.space)
            self.space = ""
        self.set(BEGUN)
        self.phase = PRE

    def open_call(self, name: str) -> None:
        self.set(GHOST | HAS_ARG | STRING, False)
        self.phase = CALL
        if not name:
            self.set(GHOST)
            return
        self.deltas.append(ToolCallDelta(self.calls, name, ""))
        self.calls += 1
        self.set(CALLED)

    def open_arg(self, attrs: Mapping[str, str]) -> None:
        self.phase, self.value = ARG, ""
        string = attrs.get("type", "string") == "string"
        self.set(STRING, string)
        if self.has(GHOST):
            return
        key = json.dumps(attrs.get("key", ""), ensure_ascii=False)
        self.emit(("{" if not self.has(HAS_ARG) else ", ") + key + ": "
                  + ('"' if string else ""))
        self.set(HAS_ARG)

    def close_arg(self) -> None:
        self.phase = CALL
        if self.has(GHOST):
            return
        if self.has(STRING):
            self.emit('"')
            return
        raw = self.value.translate(_RESTORE)
        self.value = ""
        try:
            parsed: Any = json.loads(raw)
        except ValueError:
            parsed = raw
        self.emit(json.dumps(parsed, ensure_ascii=False))

    def close_call(self, name: str) -> None:
        self.phase = TOOLS if name == "call" else POST
        if not self.has(GHOST):
            self.emit("}" if self.has(HAS_ARG) else "{}")
        self.set(GHOST | HAS_ARG | STRING, False)

    def finish(self) -> None:
        """The output ended: whitespace held is said (content: unless a returned call came)."""
        if self.phase == REASONING and not self.has(BEGUN):
            self.reasoning.append(self.space)
        elif self.space and not (self.has(CALLED) and self.context.keep):
            self.content.append(self.space)
        self.space = ""


def feed(state: KimiK3State, text: str, final: bool, context: ToolContext
         ) -> tuple[str, str, list[ToolCallDelta], KimiK3State]:
    """Reasoning, content and tool-call deltas of new text; ``final`` settles what was held."""
    open_, close, sep = _spellings(spell_key(context.spell))
    run = _Run(state, context)
    buf = state.held + text
    finder = Finder(buf)
    starts = (open_, close)
    pos, held = 0, ""
    while pos < len(buf):
        found = finder.earliest(starts, pos)
        if found is None:
            keep = 0 if final else pending_prefix(buf, starts, pos)
            run.text(buf[pos:len(buf) - keep])
            held = buf[len(buf) - keep:]
            break
        at, marker = found
        run.text(buf[pos:at])
        head = at + len(marker)
        end = finder.find(sep, head)
        nxt = finder.earliest(starts, head)
        if end < 0 or (nxt is not None and nxt[0] < end):
            if end < 0 and nxt is None and not final \
                    and utf8_size(buf[head:]) <= MAX_TAG:
                held = buf[at:]  # the header may still end
                break
            run.text(marker)  # no header: the marker is text
            pos = head
            continue
        header = buf[head:end]
        if utf8_size(header) > MAX_TAG or not run.tag(marker == open_, header):
            run.text(buf[at:end + len(sep)])
        pos = end + len(sep)
    if final:
        run.finish()
    return ("".join(run.reasoning), "".join(run.content), run.deltas,
            KimiK3State(run.phase, run.flags, held, run.space, run.value, run.calls))


def _tool_feed(state: KimiK3State, text: str, final: bool, context: ToolContext
               ) -> tuple[str, list[ToolCallDelta], KimiK3State]:
    _, content, deltas, next_state = feed(state, text, final, context)
    return content, deltas, next_state


def _start() -> KimiK3State:
    return KimiK3State()


def _encode(state: KimiK3State, w: Writer) -> None:
    w.uint(state.phase)
    w.uint(state.flags)
    for text in (state.held, state.space, state.value):
        w.text(text)
    w.uint(state.calls)


def _decode(r: Reader) -> KimiK3State:
    phase, flags = r.uint(), r.uint()
    held, space, value = r.text(), r.text(), r.text()
    calls = r.uint()
    if (phase not in PHASES or flags & ~KNOWN_FLAGS or utf8_size(held) > MAX_TAG + 64
            or utf8_size(space) > MAX_SPACE or space.strip() or utf8_size(value) > MAX_VALUE):
        raise ValueError("malformed kimi_k3 state")
    return KimiK3State(phase, flags, held, space, value, calls)


FORMAT: ToolFormat[KimiK3State] = ToolFormat("kimi_k3", KimiK3State, _start, _tool_feed,
                                             _encode, _decode, feed)
"""The format (its record: ``registry.TOOL_RECORDS``)."""

FORMAT_CONFIG = EngineConfig("kimi_k3", {}, {}, {(CONTENT, "THINK_END"): (REASONING, 0)},
                             GlmArgs())
"""What the engine's ``start`` reads of the record (its think terminals: the output starts in
reasoning when thinking is on); the machine is ``feed`` above, not the engine's."""


def thinking(kwargs: dict[str, object]) -> bool:
    """vLLM's switch: the kwargs' ``thinking``, else ``enable_thinking``, else on (a top-level
    ``reasoning_effort`` "none" sets ``enable_thinking`` false: ``parsers.template_kwargs``)."""
    value = kwargs.get("thinking")
    if value is None:
        value = kwargs.get("enable_thinking", True)
    return bool(value)
