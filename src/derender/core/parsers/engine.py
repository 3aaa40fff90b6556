"""The parser engine: one incremental machine reading reasoning and tool calls of the formats
vLLM 0.33 runs on its declarative engine (``vllm/parser/engine/``), each format a config.

As in vLLM, a config names *terminals* (literal tags; single-token markers arrive as stand-in
characters, ``registry.MARKUP``) and a transition table ``(phase, terminal) → (phase, events)``
over the phases CONTENT, REASONING, PREAMBLE, NAME, ARGS and BETWEEN; text between terminals
belongs to the phase (content, reasoning, the call's name, its arguments; dropped in PREAMBLE
and BETWEEN). A terminal without a transition in the phase is text of the phase. The raw
arguments of a call are read by the format's *argument grammar* (``DsmlArgs``, ``GlmArgs``),
a sub-machine that emits each parameter as JSON once its value is complete, typed as vLLM
types it (``schema.coerce``: vLLM's ``coerce_to_schema_type``, applied as its
``ParserEngine._coerce_value`` does, nested objects and arrays included), so the argument
fragments concatenate to exactly the JSON text of the non-streaming answer.

One machine serves both modes (docs/design.md, Parsers): non-streaming is the whole output fed at
once with ``final``. Where vLLM's stream and message disagree we follow the message. Text that may
still become a terminal is held back, nothing else; a value is held until its end, at most
``MAX_VALUE`` characters (longer: a string, streamed as written); a name at most ``MAX_NAME``.
Content follows vLLM's ``_events_to_delta``/``_strip_content_whitespace``: whitespace alone
before a call is dropped, text after a returned call is dropped, and where the config strips
content (GLM) the whitespace ending the text before a returned call is dropped (the whitespace
starting it stays: a stream cannot know a call will follow). Reasoning loses its trailing
whitespace (held, at most ``MAX_SPACE``). ``tool_choice`` "none" hides the calls and their
markup; without ``tools`` calls are read and dropped (``ToolContext``: ``keep``, ``tools``).

State (``EngineState``): phase and argument sub-phase, the held text, the name/key/value being
read, the open call's tool (an index into the request's ``tools``), whitespace held before
content and after reasoning, a held ``arguments``/``input`` wrapper parameter (DSML; given up
as soon as another parameter tag begins, so it never sits beside a held value), the call
counter and flags: all bounded, at most about 6.5 KB of UTF-8 (``tests/test_parser_dsml.py``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from typing import Any, Protocol, TypeVar

from derender.core.decoding.markers import Finder, pending_prefix
from derender.core.parsers.primitives import (
    MAX_LEADING_SPACE,
    Run,
    bounded,
    escape,
    forced_call,
    member,
    merge,
    split_space,
    unread,
)
from derender.core.parsers.registry import BOTH, FOREIGN, MARKUP, REASONING_ONLY, TOOLS
from derender.core.parsers.schema import (
    fix_object,
    fix_value,
    tool_index,
    tool_name,
    tool_properties,
)
from derender.core.parsers.tools import (
    ToolCallDelta,
    ToolContext,
    ToolFormat,
    ToolState,
    spell_key,
)
from derender.core.state.codec import Reader, Writer


class Phase(IntEnum):
    """The machine's phases (their numbers are the stream-state encoding)."""

    CONTENT = 0
    REASONING = 1
    PREAMBLE = 2
    NAME = 3
    ARGS = 4
    BETWEEN = 5
    # Inkling (issue 20): the next numbers
    HEADER = 6
    """A block's header (Inkling's ``<|message_model|>AUTHOR``): held, dropped when the
    block opens, content when it ends there (``SHOW``) or the output does."""
    SPAN = 7
    """Content inside a call block the reasoning parser alone passes through as text."""


CONTENT, REASONING, PREAMBLE, NAME, ARGS, BETWEEN, HEADER, SPAN = Phase
PHASES = tuple(phase.name.lower() for phase in Phase)
_PHASE = tuple(Phase)
"""Phases by number (indexing a tuple: an ``IntEnum`` call costs a µs a chunk)."""


class Event(IntFlag):
    """Transition events: a call starts (its name follows); its name ends; it ends; the
    terminal is text of the new phase; the terminal is held (``EngineConfig.held_end``)."""

    START = 1
    NAMED = 2
    END = 4
    TEXT = 8
    HOLD = 16
    SHOW = 32
    """Leaving HEADER: the held header is content (else it is dropped)."""


START, NAMED, END, TEXT, HOLD, SHOW = Event
__all__ = ["BOTH", "FOREIGN", "REASONING_ONLY", "TOOLS"]  # what the machine reads (registry)

MAX_NAME = 128
"""Characters of a function name or GLM parameter key; a longer name makes no call, a longer
key no parameter."""
MAX_VALUE = 1024
"""Characters of a parameter value held until its end; a longer one is a string."""
MAX_HEAD = 160
"""Characters of a DSML parameter head (``name="…" string="…">``)."""
MAX_HEADER = 128
"""Characters of a block header held (``HEADER``); a longer one is content from there."""
MAX_HELD = 96
"""Characters of text held as a possible terminal (every terminal is shorter)."""
MAX_SPACE = 256
"""Whitespace held: at the end of content (dropped if a returned call follows) and at the end
of reasoning (dropped if the reasoning ends there); more is emitted."""



class Flag(IntFlag):
    """The state's flags (their bits are the stream-state encoding)."""

    THINKING = 1 << 0
    """The think terminals are read."""
    SPOKE = 1 << 1
    """Content other than whitespace was emitted."""
    SLOT = 1 << 2
    """A call was read (whitespace alone is then no content)."""
    KEPT = 1 << 3
    """A call was returned (content after it is dropped)."""
    GHOST = 1 << 4
    """The open call is not returned."""
    OPENED = 1 << 5
    """The open call's ``{`` was emitted."""
    OVERFLOW = 1 << 6
    """The name or key being read is too long."""
    STRATTR = 1 << 7
    """The open DSML parameter has ``string="true"``."""
    WRAPPED = 1 << 8
    """A wrapper parameter is held."""
    WRAP_INPUT = 1 << 9
    """Its key is ``input`` (else ``arguments``)."""
    WRAP_STRING = 1 << 10
    """It has ``string="true"``."""
    NO_TOOLS = 1 << 11
    """The tool terminals are not read (the reasoning parser alone)."""
    HOLDS_END = 1 << 12
    """``held_end`` is read (``FOREIGN``)."""
    END_HELD = 1 << 13
    """A ``held_end`` was read and is held (the whitespace before it in ``rspace``)."""
    CALL_OPEN = 1 << 14
    """A call's name was read and the call has not ended (PLaMo 3's calls end out of ARGS)."""
    MUTE = 1 << 15
    """The reasoning is read and dropped (Inkling's tool parser alone)."""


(THINKING, SPOKE, SLOT, KEPT, GHOST, OPENED, OVERFLOW, STRATTR, WRAPPED, WRAP_INPUT,
 WRAP_STRING, NO_TOOLS, HOLDS_END, END_HELD, CALL_OPEN, MUTE) = (flag.value for flag in Flag)
"""The flags as plain ints, for the machine's bit arithmetic (an ``IntFlag`` operation costs
about 2 µs, some 40 times an int's, and the machine does several a chunk)."""
FLAG_BITS = len(Flag)
CALL_FLAGS = (GHOST | OPENED | OVERFLOW | STRATTR | WRAPPED | WRAP_INPUT | WRAP_STRING
              | CALL_OPEN)
"""Flags of the open call (cleared when the next one starts)."""


@dataclass(frozen=True, slots=True)
class EngineState(ToolState):
    phase: Phase = CONTENT
    sub: int = 0
    """The argument grammar's own phase (ARGS)."""
    held: str = ""
    """Text that may still become a terminal."""
    acc: str = ""
    """NAME: the name so far; ARGS: the key, head or value being read."""
    key: str = ""
    """ARGS: the open parameter's key."""
    tool: int = 0
    """The open call's tool: 1 + its index in the request's ``tools`` (0: none), whose schema
    types the values."""
    space: str = ""
    """Whitespace of the content held back."""
    rspace: str = ""
    """Whitespace ending the reasoning so far, held back."""
    wrap: str = ""
    """DSML: the raw value of a first parameter ``arguments``/``input`` that may wrap all."""
    calls: int = 0
    """Calls returned so far (the next one's index)."""
    flags: int = 0


S = TypeVar("S", bound=EngineState)


class ArgGrammar(Protocol):
    """How a format writes a call's parameters (the ARGS phase's text)."""

    subs: int
    """Number of sub-phases."""
    max_acc: int
    """Characters of ``EngineState.acc`` the grammar holds at most."""

    def terminals(self, spell: Callable[[str], str]) -> tuple[str, ...]: ...

    def enter(self, run: _Run, terminal: str) -> None:
        """The ARGS phase begins at ``terminal`` (the one that ended the name)."""

    def read(self, run: _Run, region: str, ended: bool) -> int:
        """Read ``region`` (``ended``: nothing follows it in this phase); returns how many
        characters at its end are held (they may begin a tag)."""

    def close(self, run: _Run) -> None:
        """The call ends: finish (or drop) the open parameter."""


@dataclass(frozen=True, eq=False)
class EngineConfig:
    """One format: its terminals, its transitions, its argument grammar and its policies."""

    name: str
    terminals: Mapping[str, tuple[str, ...]]
    """Terminal → spellings (raw text; markers inside are replaced by their stand-ins)."""
    transitions: Mapping[tuple[Phase, str], tuple[Phase, int]]
    think_transitions: Mapping[tuple[Phase, str], tuple[Phase, int]]
    """Transitions of the think terminals, read when thinking is on or ``think_always``."""
    args: ArgGrammar
    think_always: bool = False
    """The think terminals are read even with thinking off (DSML V4: a ``<think>`` opens
    reasoning, a stray ``</think>`` is dropped)."""
    strip_content: bool = False
    """Content is stripped when calls are returned (vLLM's
    ``strip_content_whitespace_with_tools``)."""
    validate_names: bool = False
    """A call whose name is not one of the request's tools is dropped."""
    unwrap: bool = False
    """DSML: a lone ``arguments``/``input`` parameter holding all properties is unwrapped."""
    clean_name: Callable[[str], str] = str.strip
    """A call's name as read (between the terminals) → its name (vLLM strips it)."""
    cut_name_calls: bool = True
    """A call cut off in its name (the output ends in NAME) is a call (vLLM's engine closes
    it); False: no call (``hy_v3``: its regex needs the separator after the name)."""
    json_when_forced: bool = False
    """Under a forced ``tool_choice`` vLLM's JSON path reads the output, not this grammar
    (``primitives.forced_call``; a legacy parser without a structural tag: ``hy_v3``)."""
    keep_reasoning_space: bool = False
    """Reasoning keeps its trailing whitespace (vLLM's ``strip_trailing_reasoning_whitespace``
    off: PLaMo 3)."""
    tools_think: Callable[[dict[str, object]], bool] | None = None
    """The tool parser alone, or after another family's reasoning parser, reads the think
    terminals too, starting in content, when this switch of the template kwargs is on
    (PLaMo 3: its end-of-thinking marker there is dropped, vLLM's 6700-6709, 9834)."""
    cut_marker: Callable[[str, bool], str] | None = None
    """Applied at the end of the output to the text of content, reasoning and names held
    there (PLaMo 3: a partial marker ending it is dropped); every text that may end so is held
    (``cut_hold``); its second argument: the think terminals are read."""
    cut_hold: tuple[str, ...] = ()
    """Prefixes of these are held in content and reasoning (``cut_marker``'s candidates)."""
    held_end: str = ""
    """MiniMax M2 after another family's reasoning parser (``FOREIGN``): this think terminal
    in the content is dropped when a returned call follows it with only whitespace between
    (vLLM's engine drops it in CONTENT, its message keeps the text when no call is returned);
    held until that is known, kept when other text follows."""
    # Inkling (issue 20)
    keep_after_calls: bool = False
    """Text after a returned call stays content (Inkling's ``_single_pass_parse``)."""
    start_phase: Phase | None = None
    """The phase the output starts in, with the reasoning read (else CONTENT or REASONING as
    thinking says); the tool parser alone starts in CONTENT and drops the reasoning
    (``MUTE``)."""
    reasoning_transitions: Mapping[tuple[Phase, str], tuple[Phase, int]] | None = None
    """The transitions the reasoning parser alone reads (vLLM's ``skip_tool_parsing``), where
    they are not the ones ``_transitions`` derives."""


def spelled(text: str, spell: Mapping[str, str] | None) -> str:
    """``text`` as it appears in marked text: each marker in it by its stand-in."""
    if not spell:
        return text
    if text in spell:
        return spell[text]
    for marker in MARKUP:
        if marker in text:
            text = text.replace(marker, spell.get(marker, marker))
    return text


@dataclass(frozen=True)
class _Table:
    """A config's terminals and transitions, spelled, per phase."""

    by_phase: dict[Phase, tuple[str, ...]]
    moves: dict[tuple[Phase, str], tuple[Phase, int]]
    args: tuple[str, ...]
    spell: Mapping[str, str]
    grows: dict[Phase, frozenset[str]]
    """Per phase, the terminals a longer one of the phase starts with (``_may_grow``)."""


def _transitions(config: EngineConfig, think: bool, tools: bool
                 ) -> dict[tuple[Phase, str], tuple[Phase, int]]:
    """The transitions read: the think ones only when ``think``; without ``tools`` (the
    reasoning parser alone) no tool terminal is read, except that one ending reasoning ends
    it and stays as content (vLLM's ``skip_tool_parsing``)."""
    if not tools and config.reasoning_transitions is not None:
        return dict(config.reasoning_transitions)
    transitions = dict(config.transitions)
    if think:
        transitions.update(config.think_transitions)
    if tools:
        return transitions
    plain = (CONTENT, REASONING)
    out: dict[tuple[Phase, str], tuple[Phase, int]] = {}
    for (phase, terminal), (after, events) in transitions.items():
        if phase in plain and after in plain:
            out[(phase, terminal)] = (after, events)
        elif phase == REASONING:
            out[(phase, terminal)] = (CONTENT, TEXT)
    return out


@functools.lru_cache(maxsize=64)
def _table(config: EngineConfig, spell: tuple[tuple[str, str], ...], think: bool,
           tools: bool, hold_end: bool = False) -> _Table:
    mapping = dict(spell)
    transitions = _transitions(config, think, tools)
    if hold_end and config.held_end:
        transitions[(CONTENT, config.held_end)] = (CONTENT, HOLD)
    moves: dict[tuple[Phase, str], tuple[Phase, int]] = {}
    by_phase: dict[Phase, list[str]] = {p: [] for p in Phase}
    for (phase, terminal), move in transitions.items():
        for literal in config.terminals[terminal]:
            text = spelled(literal, mapping)
            moves[(phase, text)] = move
            by_phase[phase].append(text)
    grows = {p: frozenset(t for t in ts if any(len(u) > len(t) and u.startswith(t) for u in ts))
             for p, ts in by_phase.items()}
    return _Table({p: tuple(ts) for p, ts in by_phase.items()}, moves,
                  config.args.terminals(lambda t: spelled(t, mapping)), mapping, grows)


class _Run(Run):
    """A working copy of the state while text is fed."""

    def __init__(self, state: EngineState, config: EngineConfig, context: ToolContext) -> None:
        self.phase, self.sub, self.acc, self.key = state.phase, state.sub, state.acc, state.key
        self.tool, self.space, self.rspace, self.wrap = state.tool, state.space, state.rspace, \
            state.wrap
        self.calls, self.flags = state.calls, state.flags
        self.config, self.context = config, context
        self.suppress = not context.keep and bool(context.tools)
        """``tool_choice`` "none": calls and their markup are invisible."""
        self.reject = not context.keep and not context.tools
        """No ``tools``: calls are read and dropped."""
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.deltas: list[ToolCallDelta] = []
        self.table: _Table | None = None

    # text of the phases

    def text(self, piece: str) -> None:
        if not piece:
            return
        if self.phase in (CONTENT, SPAN):
            self.content_text(piece)
        elif self.phase == REASONING:
            self.reasoning_text(piece)
        elif self.phase == NAME:
            self.name_text(piece)
        elif self.phase == HEADER:
            self.header_text(piece)

    def header_text(self, piece: str) -> None:
        """More of a block's header: held (at most ``MAX_HEADER`` characters, past which it is
        content from there on, ``OVERFLOW``)."""
        if not self.has(OVERFLOW):
            if len(self.acc) + len(piece) <= MAX_HEADER:
                self.acc += piece
                return
            piece, self.acc = self.acc + piece, ""
            self.set(OVERFLOW)
        self.content_text(piece)

    def leave_header(self, show: bool) -> None:
        """The header ends: content (``show``) or dropped."""
        header, self.acc = self.acc, ""
        self.set(OVERFLOW, False)
        if show:
            self.content_text(header)

    def content_text(self, piece: str) -> None:
        if self.has(KEPT) and not self.config.keep_after_calls:
            return  # text after a returned call is dropped
        if self.suppress:
            self.content.append(piece)
            return
        combined = self.space + piece
        if self.has(END_HELD) and combined.strip():
            self.release_end()
        if not self.has(SPOKE):
            if not combined.strip() and len(combined) <= MAX_LEADING_SPACE:
                self.space = combined  # whitespace alone: no content if a call follows
                return
            self.set(SPOKE)
        body, self.space = split_space(combined, MAX_SPACE if self.config.strip_content else 0)
        self.content.append(body)

    def end_text(self) -> str:
        assert self.table is not None
        return spelled(self.config.terminals[self.config.held_end][0], self.table.spell)

    def hold_end(self) -> None:
        """``held_end`` in the content: held with the whitespace before it."""
        if self.has(KEPT) or self.suppress:
            self.content_text(self.end_text())
            return
        if self.has(END_HELD):
            self.release_end()
        self.set(SPOKE)
        self.rspace, self.space = self.space, ""
        self.set(END_HELD)

    def release_end(self) -> None:
        """The held ``held_end`` is content after all."""
        self.content.append(self.rspace + self.end_text())
        self.rspace = ""
        self.set(END_HELD, False)

    def reasoning_text(self, piece: str) -> None:
        if self.has(MUTE):
            return
        if self.config.keep_reasoning_space:
            self.reasoning.append(piece)
            return
        body, self.rspace = split_space(self.rspace + piece, MAX_SPACE)
        self.reasoning.append(body)

    def name_text(self, piece: str) -> None:
        """More of a name or key (past ``MAX_NAME``: none, until the next one begins)."""
        self.accumulate(piece, MAX_NAME, OVERFLOW)

    # calls

    def start_call(self) -> None:
        if self.has(CALL_OPEN):  # a call not ended (PLaMo 3: no arguments) ends here
            self.close_call()
        self.acc, self.tool = "", 0
        self.flags &= ~CALL_FLAGS
        if self.suppress:
            self.set(GHOST)
            return
        self.set(SLOT)
        if not self.has(SPOKE):
            self.space = ""  # whitespace alone before a call is no content

    def open_call(self) -> None:
        """The name has been read: the call is returned, or not."""
        name = self.config.clean_name(self.acc)
        self.acc = ""
        self.set(CALL_OPEN)
        if self.has(GHOST):
            return
        tools = self.context.tools
        index = tool_index(tools, name)
        accepted = (not self.reject and bool(name) and not self.has(OVERFLOW)
                    and (not self.config.validate_names or not tools or index >= 0))
        self.set(OVERFLOW, False)
        if not accepted:
            self.set(GHOST)
            if self.has(END_HELD):
                self.release_end()
            if self.space and self.has(SPOKE):
                self.content.append(self.space)  # no call returned: the text stays whole
                self.space = ""
            return
        if self.has(SPOKE) and self.config.strip_content:
            self.space = ""
        if self.has(END_HELD):  # dropped: a call follows
            self.rspace = ""
            self.set(END_HELD, False)
        self.tool = index + 1
        self.set(KEPT)
        self.new_call(name)

    def close_call(self) -> None:
        self.config.args.close(self)
        if not self.has(GHOST) and not getattr(self.config.args, "closes_itself", False):
            self.emit("}" if self.has(OPENED) else "{}")
        self.acc, self.key, self.tool, self.wrap, self.sub = "", "", 0, "", 0
        self.flags &= ~CALL_FLAGS

    def emit(self, text: str) -> None:
        if not self.has(GHOST):
            self.arguments(text)

    def param(self, key: str, value: Any) -> None:
        """A complete parameter of the open call, already typed."""
        if self.has(GHOST):
            return
        self.emit(member(key, not self.has(OPENED)) + json.dumps(value, ensure_ascii=False))
        self.set(OPENED)

    def open_string(self, key: str, text: str) -> None:
        """A value too long to hold: a string from here, streamed as written."""
        self.emit(member(key, not self.has(OPENED)) + '"' + escape(text))
        self.set(OPENED)

    def properties(self) -> Mapping[str, Any]:
        tools = self.context.tools
        if not 0 < self.tool <= len(tools):
            return {}
        name = tool_name(tools[self.tool - 1])
        return tool_properties(tools, name) if name is not None else {}


# the machine

def start(fmt: ToolFormat[Any], config: EngineConfig, thinking: bool, mode: str = BOTH
          ) -> EngineState:
    """Initial state: in reasoning when the config has reasoning, the machine reads it and
    thinking is on. The tool parser alone reads no think terminals (they are text: vLLM's
    recordings 1300-1326); the reasoning parser alone no tool terminals; after another
    family's reasoning parser only ``held_end``."""
    state: EngineState = fmt.start()
    reads = mode not in (TOOLS, FOREIGN) and bool(config.think_transitions)
    think = reads and (thinking or config.think_always)
    if mode in (TOOLS, FOREIGN) and config.tools_think is not None and thinking:
        think = True  # read, from content
    phase = REASONING if reads and thinking else CONTENT
    mute = 0
    if config.start_phase is not None:  # the config reads its reasoning itself
        if mode in (TOOLS, FOREIGN):
            mute = MUTE
        else:
            phase = config.start_phase
    return type(state)(phase=phase,
                       flags=(THINKING if think else 0) | mute
                       | (NO_TOOLS if mode == REASONING_ONLY else 0)
                       | (HOLDS_END if mode == FOREIGN and config.held_end else 0))


def feed(config: EngineConfig, state: S, text: str, final: bool, context: ToolContext
         ) -> tuple[str, str, list[ToolCallDelta], S]:
    """Reasoning, content and tool-call deltas of new text; ``final`` settles what was held."""
    if config.json_when_forced and (context.forced_name or context.required):
        content, deltas, forced = forced_call(state, text, final, context, MAX_SPACE)
        return "", content, deltas, forced
    spell = spell_key(context.spell)
    table = _table(config, spell, bool(state.flags & THINKING), not state.flags & NO_TOOLS,
                   bool(state.flags & HOLDS_END))
    run = _Run(state, config, context)
    run.table = table
    buffer = state.held + text
    finder = Finder(buffer)  # read by position: no copies of the rest, each scan done once
    pos = 0
    held = ""
    while True:
        phase = run.phase
        terminals = table.by_phase[phase]
        found = finder.earliest(terminals, pos) if terminals else None
        if found is not None and not final and found[1] in table.grows[phase] \
                and _may_grow(buffer, found, terminals):
            found = None  # (a longer terminal may still be written there: held, as whole)
        if phase == ARGS:
            end = len(buffer) if found is None else found[0]
            if found is None and not final:
                end -= pending_prefix(buffer[pos:], terminals)
            region = buffer[pos:end]
            kept = config.args.read(run, region, found is not None or final)
            if found is None:
                held = region[len(region) - kept:] + buffer[end:] if not final else ""
                break
        elif found is None:
            if config.cut_marker is None:
                now, held = unread(buffer[pos:], terminals, final)
            else:
                now, held = unread(buffer[pos:], terminals + config.cut_hold, final)
                if final and (phase == REASONING
                              or (phase == CONTENT and not run.has(NO_TOOLS))):
                    now = config.cut_marker(now, run.has(THINKING))
            run.text(now)
            break
        else:  # (a header whose end is here is bounded too: the bound is a place in it)
            run.text(buffer[pos:found[0]])
        assert found is not None
        at, terminal = found
        pos = at + len(terminal)
        _move(run, table, terminal)
    if final:
        _finish(run)
    content = "".join(run.content)
    next_state = type(state)(run.phase, run.sub, held, run.acc, run.key, run.tool, run.space,
                             run.rspace, run.wrap, run.calls, run.flags)
    return "".join(run.reasoning), content, merge(run.deltas), next_state


def _may_grow(buffer: str, found: tuple[int, str], terminals: tuple[str, ...]) -> bool:
    """Whether the text from a terminal found to the buffer's end may still be a longer
    terminal that starts with it (minimax_m3's ``<invoke name=`` and ``<invoke name="``):
    the next chunk decides, as the whole output would."""
    at, terminal = found
    rest = len(buffer) - at
    return any(len(t) > rest and t.startswith(terminal) and buffer.startswith(t[:rest], at)
               for t in terminals if len(t) > len(terminal))


def _move(run: _Run, table: _Table, terminal: str) -> None:
    phase, events = table.moves[(run.phase, terminal)]
    if run.phase == HEADER:
        run.leave_header(bool(events & SHOW))
    if events & START:
        run.start_call()
    if events & NAMED:
        run.open_call()
    if phase == ARGS and run.phase != ARGS:
        run.phase = ARGS
        run.sub = 0
        run.config.args.enter(run, terminal)
    if events & END:
        run.close_call()
    run.phase = phase
    if events & TEXT:
        run.text(terminal)
    if events & HOLD:
        run.hold_end()


def _finish(run: _Run) -> None:
    """The end of the output: an open call ends, held whitespace settles."""
    if run.phase == NAME:
        if not run.config.cut_name_calls:
            run.set(GHOST)
        run.open_call()
        run.close_call()
    elif run.phase == ARGS or run.has(CALL_OPEN):
        run.close_call()
    elif run.phase == HEADER:
        run.leave_header(True)
    if run.has(END_HELD):
        run.release_end()
    run.rspace = ""  # reasoning loses its trailing whitespace
    if not run.has(KEPT) and run.space and (run.has(SPOKE) or not run.has(SLOT)):
        run.content.append(run.space)
    run.space = ""


# argument grammars

class DsmlSub(IntEnum):
    """``DsmlArgs``' sub-phases: between parameters; in a parameter's head (``acc``); in its
    value, held (``acc``); in a value too long to hold, streamed as a string."""

    GAP = 0
    HEAD = 1
    VALUE = 2
    LONG = 3


class GlmSub(IntEnum):
    """``GlmArgs``' sub-phases: between parameters; in a key (``acc``); after a key's closing
    tag (the whitespace in ``acc``); in a value, held (``acc``); in a value too long to hold."""

    GAP = 0
    KEY = 1
    AFTER_KEY = 2
    VALUE = 3
    LONG = 4


class DsmlArgs:
    """DSML parameters: ``<｜DSML｜parameter name="K" string="true|false">V</｜DSML｜parameter>``
    (vLLM's ``_dsml_arg_converter`` regex: the ``string`` attribute optional; a value also ends
    where the next ``<｜DSML｜parameter name=`` begins; other text between them is skipped; a
    parameter without its end is dropped). A first parameter ``arguments``/``input`` the tool
    does not have is held: alone, holding an object of the tool's properties, it is the
    arguments (vLLM's ``_unwrap_wrapper_args``)."""

    GAP, HEAD, VALUE, LONG = DsmlSub
    subs = len(DsmlSub)
    max_acc = MAX_VALUE
    HEAD_RE = re.compile(r'\s+name="([^"]+)"(?:\s+string="([^"]*)")?\s*>', re.DOTALL)
    """A parameter tag after ``param_start``: group 1 the key, group 2 the ``string`` flag."""

    def __init__(self, param_start: str, param_close: str,
                 head: re.Pattern[str] = HEAD_RE, verbatim: bool = False,
                 lookahead: bool = True) -> None:
        self.param_start, self.param_close, self._HEAD = param_start, param_close, head
        self.verbatim = verbatim
        """Every value is text (MiniMax M2: no ``string`` attribute, values verbatim); the key
        is then the head pattern's first matching group, stripped."""
        self.lookahead = lookahead
        """A value also ends at ``param_start`` followed by whitespace and ``name=`` (DSML);
        else at ``param_start`` itself (MiniMax M2, whose ``param_start`` ends in ``name=``)."""

    def terminals(self, spell: Callable[[str], str]) -> tuple[str, ...]:
        return spell(self.param_start), spell(self.param_close)

    def enter(self, run: _Run, terminal: str) -> None:
        run.sub, run.acc = self.GAP, ""

    def read(self, run: _Run, region: str, ended: bool) -> int:
        table = run.table
        assert table is not None
        start, close = table.args
        # read by position (no copies of the rest), each tag's next place looked up once
        finder, pos = Finder(region), 0
        while True:
            if run.sub == self.GAP:
                at = finder.find(start, pos)
                if at < 0:
                    return 0 if ended else pending_prefix(region[pos:], (start,))
                pos = at + len(start)
                run.sub, run.acc = self.HEAD, ""
                self._flush_wrap(run)  # another parameter: no unwrapping (bounds the state)
            elif run.sub == self.HEAD:
                # a head longer than MAX_HEAD is none: look no further for its ">"
                window = region[pos:pos + MAX_HEAD + 1]
                end = _head_end(run.acc + window) - len(run.acc)
                if end < 0:
                    if len(run.acc) + len(region) - pos > MAX_HEAD or ended:
                        region = run.acc + region[pos:]  # no parameter: scan on in it
                        finder, pos, run.acc, run.sub = Finder(region), 0, "", self.GAP
                        continue
                    run.acc += region[pos:]
                    return 0
                head = run.acc + region[pos:pos + end + 1]
                match = self._HEAD.fullmatch(head)
                if match is None or len(head) > MAX_HEAD:  # no parameter: scan on in it
                    if run.acc:
                        region = head + region[pos + end + 1:]
                        finder, pos = Finder(region), 0
                    run.acc, run.sub = "", self.GAP
                    continue
                if self.verbatim:
                    key = next((g for g in match.groups() if g is not None), "").strip()
                    if not key:  # no name: no parameter (vLLM skips it)
                        if run.acc:
                            region = head + region[pos + end + 1:]
                            finder, pos = Finder(region), 0
                        run.acc, run.sub = "", self.GAP
                        continue
                    run.key = key
                    run.set(STRATTR)
                else:
                    run.key = match.group(1)
                    run.set(STRATTR, match.re.groups >= 2 and match.group(2) == "true")
                run.acc, run.sub = "", self.VALUE
                pos += end + 1
            else:  # VALUE, LONG
                found = _value_end(finder, pos, start, close, self.lookahead)
                stop = len(region) if found is None else found[0]
                hold = 0
                if found is None and not ended:
                    hold = _value_pending(region[pos:], start, close, self.lookahead)
                    stop -= hold
                self._value(run, region[pos:stop])
                if found is None:
                    return hold
                at, closed = found
                self._complete(run)
                if closed:
                    pos, run.sub = at + len(close), self.GAP
                else:  # ended by the next parameter's tag
                    pos, run.sub = at + len(start), self.HEAD
                    self._flush_wrap(run)
                run.acc = ""

    def _value(self, run: _Run, piece: str) -> None:
        if run.sub == self.LONG:
            run.emit(escape(piece))
            return
        run.acc += piece
        if len(run.acc) > MAX_VALUE:
            self._flush_wrap(run)
            run.open_string(run.key, run.acc)
            run.acc, run.sub = "", self.LONG

    def _complete(self, run: _Run) -> None:
        if run.sub == self.LONG:
            run.emit('"')
            return
        raw, is_string = run.acc, run.has(STRATTR)
        properties = run.properties()
        first = not run.has(OPENED) and not run.has(WRAPPED)
        if (first and run.config.unwrap and run.key in ("arguments", "input") and properties
                and run.key not in properties):
            run.wrap = raw
            run.set(WRAPPED)
            run.set(WRAP_INPUT, run.key == "input")
            run.set(WRAP_STRING, is_string)
            return
        self._flush_wrap(run)
        run.param(run.key, fix_value(_dsml_value(raw, is_string), properties.get(run.key)))

    @staticmethod
    def _take_wrap(run: _Run) -> tuple[str, Any]:
        key = "input" if run.has(WRAP_INPUT) else "arguments"
        value = _dsml_value(run.wrap, run.has(WRAP_STRING))
        run.flags &= ~(WRAPPED | WRAP_INPUT | WRAP_STRING)
        run.wrap = ""
        return key, value

    def _flush_wrap(self, run: _Run) -> None:
        """A held wrapper parameter is an ordinary one after all (another follows)."""
        if run.has(WRAPPED):
            run.param(*self._take_wrap(run))

    def close(self, run: _Run) -> None:
        if run.sub == self.LONG:
            run.emit('"')  # cut short: kept as read (see MAX_VALUE)
        run.acc = ""
        if not run.has(WRAPPED):
            return
        key, value = self._take_wrap(run)
        properties = run.properties()
        inner = value
        if isinstance(inner, str):
            try:
                inner = json.loads(inner)
            except ValueError:
                inner = None
        if not (isinstance(inner, dict) and set(inner) <= set(properties)):
            run.param(key, value)
            return
        text = json.dumps(fix_object(inner, properties), ensure_ascii=False)
        if inner:  # the object less its "}", which ends the call
            run.emit(text[:-1])
            run.set(OPENED, not run.has(GHOST))


def _dsml_value(raw: str, is_string: bool) -> Any:
    """``string="true"``: the text; else its JSON value, or the text when it is not JSON."""
    if is_string:
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _head_end(text: str) -> int:
    """Where the first ``>`` outside double quotes is in ``text`` (-1: none yet)."""
    quoted = False
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif ch == ">" and not quoted:
            return i
    return -1


_NEXT_PARAM = re.compile(r"\s{1,8}name=")
_SPACE = re.compile(r"\s*")
"""Whitespace (``str.isspace``, as ``lstrip`` reads it: both are Unicode's)."""
_LOOKAHEAD = 8 + len("name=")


def _value_end(finder: Finder, pos: int, start: str, close: str, lookahead: bool = True
               ) -> tuple[int, bool] | None:
    """The end of a DSML value from ``pos``: (position, True) of ``close``, or (position,
    False) of the next parameter's ``start`` followed by whitespace (at most 8) and ``name=``
    (without ``lookahead``: ``start`` alone)."""
    text = finder.text
    found = finder.find(close, pos)
    at = finder.find(start, pos)
    while at >= 0 and (found < 0 or at < found):
        if not lookahead or _NEXT_PARAM.match(text, at + len(start)):
            return at, False
        at = finder.find(start, at + 1)
    return (found, True) if found >= 0 else None


def _value_pending(text: str, start: str, close: str, lookahead: bool = True) -> int:
    """How much of the end of a value may still become its end."""
    hold = pending_prefix(text, (start, close))
    if not lookahead:
        return hold
    at = text.rfind(start, max(0, len(text) - len(start) - _LOOKAHEAD))
    if at >= 0:
        tail = text[at + len(start):]
        body = tail.lstrip()
        gap = len(tail) - len(body)
        if gap <= 8 and "name=".startswith(body) and (gap or not body):
            hold = max(hold, len(text) - at)
    return hold


class GlmArgs:
    """GLM arguments: ``<arg_key>K</arg_key><arg_value>V</arg_value>`` (vLLM's ``_ARG_RE``:
    a key runs to the first ``</arg_key>`` followed by whitespace and ``<arg_value>``, a value
    to the first ``</arg_value>``; other text is skipped). Keys are stripped, values kept
    verbatim and typed by the schema."""

    GAP, KEY, AFTER_KEY, VALUE, LONG = GlmSub
    subs = len(GlmSub)
    max_acc = MAX_VALUE
    TAGS = ("<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>")

    def __init__(self, typer: Callable[[str, Any], Any] = fix_value, strip_keys: bool = True,
                 at_key: bool = True) -> None:
        self.typer = typer
        """``(raw value, the parameter's schema or None) -> value``: vLLM's typing."""
        self.strip_keys = strip_keys
        """Keys are stripped (``hy_v3``'s message keeps them as written)."""
        self.at_key = at_key
        """The name ends at ``<arg_key>`` (GLM); else at a separator (``hy_v3``)."""

    def terminals(self, spell: Callable[[str], str]) -> tuple[str, ...]:
        return tuple(spell(t) for t in self.TAGS)

    def enter(self, run: _Run, terminal: str) -> None:
        run.sub, run.acc = (self.KEY if self.at_key else self.GAP), ""

    def read(self, run: _Run, region: str, ended: bool) -> int:
        table = run.table
        assert table is not None
        key_open, key_close, value_open, value_close = table.args
        # read by position (no copies of the rest), each tag's next place looked up once
        finder, pos = Finder(region), 0
        while True:
            sub = run.sub
            if sub == self.GAP:
                at = finder.find(key_open, pos)
                if at < 0:
                    return 0 if ended else pending_prefix(region[pos:], (key_open,))
                pos = at + len(key_open)
                run.sub, run.acc = self.KEY, ""
                run.set(OVERFLOW, False)
            elif sub == self.KEY:
                at = finder.find(key_close, pos)
                piece = region[pos:] if at < 0 else region[pos:at]
                hold = 0 if at >= 0 or ended else pending_prefix(piece, (key_close,))
                run.name_text(piece[:len(piece) - hold])
                if at < 0:
                    return hold
                pos = at + len(key_close)
                run.key, run.acc, run.sub = run.acc, "", self.AFTER_KEY
            elif sub == self.AFTER_KEY:
                blank = _SPACE.match(region, pos).end()  # type: ignore[union-attr]
                space = region[pos:blank]
                if region.startswith(value_open, blank):
                    run.acc, run.sub = "", self.VALUE
                    pos = blank + len(value_open)
                    continue
                body = region[blank:blank + len(value_open)]
                if blank == len(region) or (not ended and value_open.startswith(body)
                                            and blank + len(body) == len(region)):
                    acc = bounded(run.acc, space, MAX_NAME)
                    run.acc = acc or ""
                    if acc is None:
                        run.set(OVERFLOW)
                    return len(region) - blank
                # not a value: the key runs on through its closing tag
                acc = bounded(run.key + key_close + run.acc, space, MAX_NAME)
                run.acc, run.key, run.sub = acc or "", "", self.KEY
                if acc is None:
                    run.set(OVERFLOW)
                pos = blank
            else:  # VALUE, LONG
                at = finder.find(value_close, pos)
                piece = region[pos:] if at < 0 else region[pos:at]
                hold = 0 if at >= 0 or ended else pending_prefix(piece, (value_close,))
                self._value(run, piece[:len(piece) - hold])
                if at < 0:
                    return hold
                self._complete(run)
                pos = at + len(value_close)
                run.sub = self.GAP

    def _value(self, run: _Run, piece: str) -> None:
        if run.has(OVERFLOW):
            return
        if run.sub == self.LONG:
            run.emit(escape(piece))
            return
        run.acc += piece
        if len(run.acc) > MAX_VALUE:
            run.open_string(run.key.strip() if self.strip_keys else run.key, run.acc)
            run.acc, run.sub = "", self.LONG

    def _complete(self, run: _Run) -> None:
        if run.has(OVERFLOW):
            run.set(OVERFLOW, False)
        elif run.sub == self.LONG:
            run.emit('"')
        else:
            key = run.key.strip() if self.strip_keys else run.key
            run.param(key, self.typer(run.acc, run.properties().get(key)))
        run.acc, run.key = "", ""

    def close(self, run: _Run) -> None:
        if run.sub == self.LONG and not run.has(OVERFLOW):
            run.emit('"')  # cut short: kept as read (see MAX_VALUE)
        run.acc, run.key = "", ""


# formats

def encode(state: EngineState, w: Writer) -> None:
    w.uint(state.phase | state.sub << 3)
    for text in (state.held, state.acc, state.key):
        w.text(text)
    w.uint(state.tool)
    for text in (state.space, state.rspace, state.wrap):
        w.text(text)
    w.uint(state.calls)
    w.uint(state.flags)


def decoder(state_type: type[S], subs: int, max_acc: int = MAX_VALUE,
            phases: frozenset[Phase] = frozenset(Phase) - {HEADER, SPAN}
            ) -> Callable[[Reader], S]:
    """The state reader of a format whose machine reaches only ``phases``."""
    def decode(r: Reader) -> S:
        bits = r.uint()
        held, acc, key = r.text(), r.text(), r.text()
        tool = r.uint()
        space, rspace, wrap = r.text(), r.text(), r.text()
        calls, flags = r.uint(), r.uint()
        phase, sub = bits & 7, bits >> 3
        if (phase >= len(PHASES) or _PHASE[phase] not in phases or sub >= subs
                or flags >> FLAG_BITS
                or len(held) > MAX_HELD or len(acc) > max_acc or len(key) > MAX_HEAD
                or len(space) > max(MAX_LEADING_SPACE, MAX_SPACE) or len(rspace) > MAX_SPACE
                or len(wrap) > MAX_VALUE or space.strip() or rspace.strip()):
            raise ValueError("malformed parser engine state")
        return state_type(_PHASE[phase], sub, held, acc, key, tool, space, rspace, wrap, calls,
                          flags)
    return decode


def make_format(config: EngineConfig) -> ToolFormat[EngineState]:
    """The config as a tool-call format (its ``feed`` reads tool calls from content; the
    parser path calls ``feed`` above to read reasoning as well, with the config its record
    names: ``registry.ToolRecord.config``)."""

    def tool_feed(state: EngineState, text: str, final: bool, context: ToolContext
                  ) -> tuple[str, list[ToolCallDelta], EngineState]:
        _, content, deltas, next_state = feed(config, state, text, final, context)
        return content, deltas, next_state

    def both_feed(state: EngineState, text: str, final: bool, context: ToolContext
                  ) -> tuple[str, str, list[ToolCallDelta], EngineState]:
        return feed(config, state, text, final, context)

    return ToolFormat(config.name, EngineState, EngineState, tool_feed, encode,
                      decoder(EngineState, config.args.subs, config.args.max_acc,
                              _phases(config)), both_feed)


def _phases(config: EngineConfig) -> frozenset[Phase]:
    """The phases a config's machine can be in: the five of every config, and HEADER and
    SPAN where its tables or start reach them (a forged state in another is refused)."""
    reached = {*Phase} - {HEADER, SPAN}
    for table in (config.transitions, config.reasoning_transitions or {}):
        for (phase, _), (after, _) in table.items():
            reached |= {phase, after}
    if config.start_phase is not None:
        reached.add(config.start_phase)
    return frozenset(reached)
