"""Muse Glimmer's reading of Muse's channel framing with ATEM calls, as vLLM 0.33's
``muse_glimmer`` tool and reasoning parsers read it together (``MuseGlimmerToolParser`` and
``MuseGlimmerReasoningParser``: the ``muse`` classes with ``_glimmer_compat`` and other class
attributes; docs/vllm-compat/muse.md, section ``muse_glimmer``).

The framing is Muse Spark's (``formats/muse.py``), the reading is not: the reasoning parser
subtracts regex spans from the whole output (``to=self`` blocks to the next ``<|eom|>``
wherever it is, joined with newlines; the first block still open appended; the content the
first ``to=user`` body, or the whole remainder, framed, once it holds ATEM markup), then the
tool parser reads calls from that content's tool channels (every recipient but none, ``self``
and ``user``; every value JSON-decoded). Whether an early ``to=self`` block is reasoning at
all, and whether the content is an answer's body or the framed remainder, is decided only by
the output's end (docs/vllm-compat/muse.md).

So this machine holds the output (as written) for at most ``MAX_HELD`` bytes of UTF-8 and
gives vLLM's message at its end (``message``: vLLM's regexes, ported, each applied only where
it can match). All along it also reads the output left to right, message by message
(``_Stream``, with the ``muse`` machine's framing reader and invoke scanner), keeping what
that gives while the output is held: ``to=self`` bodies are reasoning (blocks joined with
newlines), ``user`` and recipient-less bodies content, the others' complete invokes calls;
text between messages is dropped; text before the first header is content past
``muse.MAX_LEAD``. An output that passes ``MAX_HELD`` gives what was kept and goes on that way
(so no chunk reads more than its own text, but the last of a held output). The README's
compatibility table says where that reading differs from vLLM's message. Streamed and not
alike: the same output gives the same answer whatever its chunks.

Without the ``muse_glimmer`` reasoning parser (alone, or after another family's: ``ALONE``,
``start_in(ALONE_MODE)``) vLLM's tool parser reads the whole text it is handed
(``message_alone``): no reasoning; with a call the recipient-less and ``user`` bodies, without
one the text as written. Held the same way; past ``MAX_HELD``, with a call read within it the
calls and those bodies as they come, without one the text as written (``AS_WRITTEN``), later
calls still given (README compatibility).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from derender.core.parsers.formats import muse
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer, utf8_prefix, utf8_size

START, MESSAGE, EOM, EOT = muse.START, muse.MESSAGE, muse.EOM, muse.EOT
FUNCTION_CALLS, INVOKE, INVOKE_END = muse.FUNCTION_CALLS, muse.INVOKE, muse.INVOKE_END

MAX_HELD = 1024
"""Bytes (UTF-8) of output held for vLLM's message: a longer output is read left to right."""

# vLLM's MuseReasoningParser (``_glimmer_compat``), on the output as written
_HEADER_PAT = r"to=[^\s<]+<\|message\|>"
_COLLAPSE_RE = re.compile(r"<\|eom\|>(?:(?!to=self<\|message\|>).)*?to=self<\|message\|>",
                          re.DOTALL)
_REASONING_RE = re.compile(r"to=self<\|message\|>(.*?)<\|eom\|>", re.DOTALL)
_CONTENT_RE = re.compile(r"to=user<\|message\|>(.*?)(?=<\|eot\|>|<\|eom\|>|$)", re.DOTALL)
_STRIP_REASONING_RE = re.compile(r"(?:<\|start\|>assistant\s*)?to=self<\|message\|>.*?<\|eom\|>",
                                 re.DOTALL)
_STRIP_OPEN_REASONING_RE = re.compile(
    r"(?:<\|start\|>assistant\s*)?to=self<\|message\|>"
    r"(?:(?!<\|eom\|>)(?!" + _HEADER_PAT + r").)*(?=" + _HEADER_PAT + r"|$)", re.DOTALL)
_OPEN_REASONING_RE = re.compile(
    r"to=self<\|message\|>((?:(?!<\|eom\|>)(?!" + _HEADER_PAT + r").)*)(?=" + _HEADER_PAT
    + r"|$)", re.DOTALL)
_REASONING_OPEN = "to=self<|message|>"

# vLLM's MuseToolParser with MuseGlimmerToolParser's class attributes
_MSG_HEADER_RE = re.compile(
    r"(?:<\|start\|>\s*assistant)?[^\S\n]*(?:to=(?P<rcpt>[A-Za-z0-9_.\-]+))?<\|message\|>")
_MSG_END_RE = re.compile(r"<\|eom\|>|<\|eot\|>")
_INVOKE_RE = re.compile(r"(<atem:invoke\b.*?</atem:invoke>)", re.DOTALL)
_PARAM_RE = re.compile(r'<atem:parameter\b[^>]*?\bname="(?P<key>[^"]+)"[^>]*?>'
                       r"(?P<value>.*?)</atem:parameter>", re.DOTALL)
_NON_TOOL = ("self", "user")
_CONTENT_RECIPIENTS = (None, "user")


def _atem(text: str) -> bool:
    return FUNCTION_CALLS in text or INVOKE in text


def extract_reasoning(out: str) -> tuple[str | None, str | None]:
    """vLLM's ``MuseReasoningParser.extract_reasoning`` with ``_glimmer_compat``."""
    # (each regex applied only where it can match: linear where a match cannot be found)
    last = out.rfind(_REASONING_OPEN) + len(_REASONING_OPEN)  # a collapse ends at a block's
    collapsed = _COLLAPSE_RE.sub("\n", out[:last]) + out[last:] if last >= len(
        _REASONING_OPEN) else out
    matches = _REASONING_RE.findall(collapsed, 0, collapsed.rfind(EOM) + len(EOM))
    reasoning = "\n".join(matches) if matches else None
    open_match = _OPEN_REASONING_RE.search(out)
    if open_match and open_match.group(1):
        partial = open_match.group(1)
        reasoning = f"{reasoning}\n{partial}" if reasoning else partial
    last = out.rfind(EOM) + len(EOM)  # a closed span ends at an <|eom|>
    remainder = _STRIP_REASONING_RE.sub("", out[:last]) + out[last:] if last >= len(EOM) \
        else out
    remainder = _STRIP_OPEN_REASONING_RE.sub("", remainder)
    if _atem(remainder):
        return reasoning, remainder or None
    content_match = _CONTENT_RE.search(out)
    if content_match:
        return reasoning, content_match.group(1) or None
    if _REASONING_OPEN in out:
        return reasoning, None
    return None, out or None


def _messages(text: str) -> list[tuple[str | None, str]]:
    """vLLM's ``_iter_messages``: each message's recipient and body."""
    found: list[tuple[str | None, str]] = []
    pos = 0
    while pos < len(text):
        header = _MSG_HEADER_RE.search(text, pos)
        if header is None:
            break
        body_start = header.end()
        end = _MSG_END_RE.search(text, body_start)
        nxt = _MSG_HEADER_RE.search(text, body_start)
        body_end = end.start() if end is not None else len(text)
        if nxt is not None and nxt.start() < body_end:
            body_end = next_pos = nxt.start()
        else:
            next_pos = end.end() if end is not None else len(text)
        body = text[body_start:body_end]
        cut = body.find(START)
        found.append((header.group("rcpt"), body if cut < 0 else body[:cut]))
        pos = next_pos
    return found


def parse_invoke(invoke: str, tools: Any) -> tuple[str, str] | None:
    """One complete invoke's call (vLLM's ``_parse_tool_calls`` on it): every value
    JSON-decoded, else its text; None without a name."""
    found = muse._NAME_RE.search(invoke)
    if found is None:
        return None
    name = muse._normalize(found.group(1), muse._registered(tools))
    closed = invoke.rfind(muse.PARAMETER_END) + len(muse.PARAMETER_END)  # (none past it)
    args = {m.group("key"): muse._decode_value(m.group("value"))
            for m in _PARAM_RE.finditer(invoke, 0, max(closed, 0))}
    return name, json.dumps(args, ensure_ascii=False)


def extract_tool_calls(content: str, tools: Any) -> tuple[list[tuple[str, str]], str | None]:
    """vLLM's ``MuseGlimmerToolParser.extract_tool_calls``: the calls, and the content it
    returns with them."""
    if not _atem(content):
        return [], None
    messages = _messages(content)
    bodies = [body for rcpt, body in messages if rcpt is not None and rcpt not in _NON_TOOL]
    headed = _MSG_HEADER_RE.search(content) is not None
    scoped = "\n".join(bodies) if bodies else "" if headed else content
    invokes = _INVOKE_RE.findall(scoped, 0, scoped.rfind(INVOKE_END) + len(INVOKE_END))
    calls = [call for call in (parse_invoke(i, tools) for i in invokes) if call is not None]
    visible = "".join(body for rcpt, body in messages if rcpt in _CONTENT_RECIPIENTS)
    if visible:
        return calls, visible
    reasoning = "".join(body for rcpt, body in messages if rcpt == "self")
    return calls, (content or None) if not reasoning and not headed else None


def message(out: str, context: ToolContext) -> tuple[str | None, str | None, list[tuple[str, str]]]:
    """vLLM's message for an output (both parsers: ``parser/abstract_parser.py``'s ``parse``;
    ``context.keep`` false: the reasoning parser's split alone, as under ``tool_choice``
    "none", without ``tools`` or without the tool parser): reasoning, content, calls."""
    reasoning, content = extract_reasoning(out)
    if not context.keep:
        return reasoning, content, []
    calls, called = extract_tool_calls(content or "", context.tools)
    if calls:
        return reasoning, None if called is not None and not called.strip() else called, calls
    if (context.required or context.forced_name is not None) and (
            content is None or not content.strip()):
        return reasoning, None, []
    return reasoning, content, []


def message_alone(out: str, context: ToolContext
                  ) -> tuple[str | None, str | None, list[tuple[str, str]]]:
    """vLLM's message for the tool parser without the ``muse_glimmer`` reasoning parser
    (alone, or on another family's reasoning parser's content): ``extract_tool_calls`` on the
    whole text handed over; with calls, its content (the no-recipient and ``user`` bodies,
    null when blank); without, the text as written (``parser/abstract_parser.py``'s
    ``_extract_tool_calls``: content stays its input)."""
    if not context.keep:
        return None, out or None, []
    calls, called = extract_tool_calls(out, context.tools)
    if calls:
        return None, None if called is not None and not called.strip() else called, calls
    if (context.required or context.forced_name is not None) and not out.strip():
        return None, None, []
    return None, out or None, []


# the state

REASONED = muse.Flag.SPOKE
"""(Read left to right) a ``to=self`` block was opened: the next one starts with a newline.
(The ``muse`` flag that this reading has no use for.)"""
ALONE = muse.Flag.ALONE
"""The tool parser without the ``muse_glimmer`` reasoning parser (``start_in(ALONE_MODE)``):
vLLM's ``MuseGlimmerToolParser`` on the whole text handed over (``message_alone``)."""
AS_WRITTEN = muse.Flag.WHOLE_GIVEN
"""``ALONE``: the output passed ``MAX_HELD`` before a call was read: its content is the
output as written from then on (else the content bodies read left to right)."""
_MODE = ALONE | AS_WRITTEN
_FLAGS = (muse.Flag.UNFRAMED | muse.Flag.CALLABLE | muse.Flag.TOOL_SEEN | muse.Flag.IN_INVOKE
          | muse.Flag.SKIP | muse.Flag.FROM_TOOL | REASONED | _MODE)


@dataclass(frozen=True, slots=True)
class GlimmerState(ToolState):
    whole: str = ""
    """The output so far, as written (marked), while it is within ``MAX_HELD``."""
    streaming: bool = False
    """The output passed ``MAX_HELD``: what the left-to-right reading gives is given."""
    given: tuple[str, ...] = ("", "")
    """While held: the reasoning and content the left-to-right reading gave so far, then the
    text of each complete invoke it read (given, and the invokes parsed, if the output passes
    ``MAX_HELD``)."""
    phase: int = muse.Phase.LEAD
    kind: int = muse.Kind.REASONING
    flags: int = 0
    calls: int = 0
    pend: str = ""
    lead: str = ""
    """The text before the first header (``muse.MAX_LEAD``)."""
    inv: str = ""


class _Stream(muse._Run):
    """The left-to-right reading (``muse``'s framing reader and invoke scanner; this module's
    channels and values). ``invokes``: an output still held keeps each complete invoke's text
    there (parsed if it passes ``MAX_HELD``)."""

    invokes: list[str] | None = None

    def open(self, header: str, recipient: str | None) -> None:
        if self.phase == muse.Phase.LEAD:
            self.held = ""  # text before the first header is no message's
        self.phase = muse.Phase.BODY
        self.flags &= ~muse.Flag.CALLABLE
        if recipient == "self":
            self.kind = muse.Kind.REASONING
            if self.flags & REASONED:
                self.reasoning.append("\n")
            self.flags |= REASONED
        elif recipient in _CONTENT_RECIPIENTS:
            self.kind = muse.Kind.CONTENT
        else:
            self.kind = muse.Kind.TOOL
            if recipient is not None and muse._CALLABLE.fullmatch(recipient):
                self.flags |= muse.Flag.CALLABLE
                if self.flags & muse.Flag.TOOL_SEEN and self.keep:
                    self.scan("\n", True)  # vLLM joins the tool bodies with newlines
                self.flags |= muse.Flag.TOOL_SEEN

    def out(self, text: str) -> None:
        """Text outside bodies: dropped, but before the first header held for ``muse``'s
        ``MAX_LEAD`` bytes, past them content (an output without headers is)."""
        if not text or self.phase != muse.Phase.LEAD:
            return
        if self.flags & muse.Flag.UNFRAMED:
            self.content.append(text)
            return
        self.held += text
        if utf8_size(self.held) > muse.MAX_LEAD:
            self.flags |= muse.Flag.UNFRAMED
            self.content.append(self.held)
            self.held = ""

    def body(self, text: str) -> None:
        if not text:
            return
        if self.kind == muse.Kind.REASONING:
            self.reasoning.append(text)
        elif self.kind == muse.Kind.CONTENT:
            self.content.append(text)
        elif self.keep and self.flags & muse.Flag.CALLABLE:
            self.scan(text, True)

    def call(self, text: str) -> None:
        if self.invokes is not None:
            self.invokes.append(text)
            self.calls += 1
            return
        parsed = parse_invoke(text, self.context.tools)
        if parsed is not None:
            self.deltas.append(ToolCallDelta(self.calls, *parsed))
            self.calls += 1

    def finish(self) -> None:
        if self.phase == muse.Phase.LEAD and self.held:
            self.content.append(self.held)
            self.held = ""
        self.inv = ""
        self.flags &= ~(muse.Flag.IN_INVOKE | muse.Flag.SKIP)


def _as_written(text: str, context: ToolContext) -> str:
    """Marked text with Muse's markers as written (vLLM reads the decoded text)."""
    for marker in (START, MESSAGE, EOM, EOT):
        spelled = context.spelled(marker)
        if spelled != marker and spelled in text:
            text = text.replace(spelled, marker)
    return text


def feed_reasoning(state: GlimmerState, text: str, final: bool, context: ToolContext
                   ) -> tuple[str, str, list[ToolCallDelta], GlimmerState]:
    """Reasoning, content and calls of the output's next text (``final``: its end). The
    left-to-right reading reads every chunk; while the output is within ``MAX_HELD`` what it
    gives is kept, and at the end replaced by vLLM's message."""
    if state.flags & ALONE:
        return _alone(state, text, final, context)
    whole = "" if state.streaming else state.whole + text
    held = not state.streaming and utf8_size(whole) <= MAX_HELD
    run = _Stream(muse.MuseState(state.phase, state.kind, state.flags, state.calls, "",
                                 state.lead, state.inv), context)
    if held:
        run.invokes = []  # (a held output's invokes are parsed when given)
    pend = run.read(state.pend + text, final, muse._marks(context))
    if final:
        run.finish()
    if held and final:
        reasoning, content, calls = message(_as_written(whole, context), context)
        return (reasoning or "", content or "",
                [ToolCallDelta(i, name, args) for i, (name, args) in enumerate(calls)],
                GlimmerState())
    after = GlimmerState(whole if held else "", not held, state.given, run.phase, run.kind,
                         int(run.flags), run.calls, pend, run.held, run.inv)
    reasoning, content = "".join(run.reasoning), "".join(run.content)
    if held:
        given = (state.given[0] + reasoning, state.given[1] + content, *state.given[2:],
                 *(run.invokes or ()))
        return "", "", [], replace(after, given=given)
    deltas = run.deltas
    if not state.streaming:  # the output passed MAX_HELD: what was kept is given
        reasoning, content = state.given[0] + reasoning, state.given[1] + content
        parsed = [parse_invoke(invoke, context.tools) for invoke in state.given[2:]]
        deltas = [ToolCallDelta(i, *call) for i, call in enumerate(
            [call for call in parsed if call is not None]
            + [(d.name or "", d.arguments) for d in deltas])]
        after = replace(after, given=("", ""), calls=len(deltas))
    return reasoning, content, deltas, after


def _alone(state: GlimmerState, text: str, final: bool, context: ToolContext
           ) -> tuple[str, str, list[ToolCallDelta], GlimmerState]:
    """The tool parser without its reasoning parser: the output held (as written) for
    ``MAX_HELD`` bytes and ``message_alone`` given at its end; meanwhile read left to right
    (the content bodies and complete invokes kept). Past ``MAX_HELD`` (README compatibility):
    with a call read within it, the calls and the content bodies as they come; without one,
    the output as written, the calls read after it still given. The bound is a byte of the
    output: a chunk that crosses it is read in two, so the cuts do not move it. With the
    calls not read (``tool_choice`` "none", no ``tools``) the text is content as handed over."""
    if not context.keep:
        return "", text, [], state
    if not state.streaming:  # the bound is a place in the output: a chunk that crosses it
        head = utf8_prefix(text, MAX_HELD - utf8_size(state.whole))  # is read in two
        if head and len(head) < len(text):
            state, text = _alone(state, head, False, context)[3], text[len(head):]
    whole = "" if state.streaming else state.whole + text
    held = not state.streaming and utf8_size(whole) <= MAX_HELD
    run = _Stream(muse.MuseState(state.phase, state.kind, state.flags & ~_MODE, state.calls,
                                 "", state.lead, state.inv), context)
    if held:
        run.invokes = []
    pend = run.read(state.pend + text, final, muse._marks(context))
    if final:
        run.finish()
    if held and final:
        _, content, calls = message_alone(_as_written(whole, context), context)
        return ("", content or "",
                [ToolCallDelta(i, name, args) for i, (name, args) in enumerate(calls)],
                GlimmerState(flags=ALONE))
    mode = state.flags & _MODE
    after = GlimmerState(whole if held else "", not held, state.given, run.phase, run.kind,
                         int(run.flags) | mode, run.calls, pend, run.held, run.inv)
    content = "".join(run.content)
    if held:  # (the reasoning is dropped)
        given = ("", state.given[1] + content, *state.given[2:], *(run.invokes or ()))
        return "", "", [], replace(after, given=given)
    deltas = run.deltas
    if not state.streaming:  # the output passed MAX_HELD: what was kept is given
        parsed = [call for call in (parse_invoke(invoke, context.tools)
                                    for invoke in state.given[2:]) if call is not None]
        deltas = [ToolCallDelta(i, *call) for i, call in enumerate(
            parsed + [(d.name or "", d.arguments) for d in deltas])]
        if parsed:  # a call within the bound (its text, not this chunk's, decides)
            content = state.given[1] + content
        else:
            content, mode = whole, mode | AS_WRITTEN  # (as handed over)
        after = replace(after, given=("", ""), calls=len(deltas), flags=int(run.flags) | mode)
    elif mode & AS_WRITTEN:
        content = text
    return "", content, deltas, after


def feed(state: GlimmerState, text: str, final: bool, context: ToolContext
         ) -> tuple[str, list[ToolCallDelta], GlimmerState]:
    _, content, calls, state = feed_reasoning(state, text, final, context)
    return content, calls, state


def encode(state: GlimmerState, w: Writer) -> None:
    w.ints((int(state.streaming), state.phase, state.kind, state.flags, state.calls,
            len(state.given)))
    for text in (state.whole, *state.given, state.pend, state.lead, state.inv):
        w.text(text)


def decode(r: Reader) -> GlimmerState:
    streaming, phase, kind, flags, calls, given = r.ints()
    if (streaming > 1 or phase not in tuple(muse.Phase) or kind not in tuple(muse.Kind)
            or flags & ~_FLAGS or given < 2 or given > len(r.data)):
        raise ValueError("not a muse_glimmer state")
    whole = r.text()
    kept = tuple(r.text() for _ in range(given))
    pend, lead, inv = r.text(), r.text(), r.text()
    if (utf8_size(whole) > MAX_HELD or utf8_size(lead) > muse.MAX_LEAD
            or (streaming and (whole or given > 2 or any(kept)))
            or (flags & AS_WRITTEN and not (flags & ALONE and streaming))
            or (flags & ALONE and kept[0])):
        raise ValueError("not a muse_glimmer state")
    return GlimmerState(whole, bool(streaming), kept, phase, kind, flags, calls, pend, lead,
                        inv)


def start() -> GlimmerState:
    return GlimmerState()


ALONE_MODE = 1
"""The mode of the tool parser without its reasoning parser (``ToolRecord.alone_mode``)."""


def start_in(mode: int) -> GlimmerState:
    return GlimmerState(flags=ALONE) if mode == ALONE_MODE else GlimmerState()


FORMAT: ToolFormat[GlimmerState] = ToolFormat("muse_glimmer", GlimmerState, start, feed, encode,
                                              decode, feed_reasoning=feed_reasoning,
                                              start_in=start_in)
