"""Per-stream state as plain data, and its compact binary encoding.

Everything a stream must remember between calls lives here: the detokenization window, the
role flag, the logprob context, the completions text offset, token and character counters,
and the stop-string holdback. None of it grows with the number of tokens generated.
The encoding is a sequence of unsigned LEB128 varints and length-prefixed UTF-8; it is only
ever decoded after the token's MAC was verified.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from derender.core.decoding.detokenizer import DecodeWindow
from derender.core.errors import BadRequestError
from derender.core.parsers import ParserState, reasoning, tool_format
from derender.core.parsers.registry import TOOLS_BY_TAG
from derender.core.state.codec import MAX_VALUE, Reader, Writer

__all__ = ["FINGERPRINT_BYTES", "MAX_VALUE", "StopProgress", "StreamState", "decode_state",
           "encode_state", "fingerprint", "request_digest"]

FINGERPRINT_BYTES = 16
"""128 bits: a forged binding needs about 2**127 tries, however many streams are open."""

_ROLE_SENT = 1
_STOPPED = 2


@dataclass(frozen=True, slots=True)
class StopProgress:
    """Stop-string state: text held back because it could begin a stop string."""

    held: str = ""
    text_chars: int = 0
    """Characters of text produced so far, held ones included."""
    head_chars: int | None = None
    """Length of the text of the first ``min_tokens`` ids, once they have all been seen."""
    stopped: bool = False
    """A stop string matched: the stream's text is complete."""


@dataclass(frozen=True, slots=True)
class StreamState:
    """One choice's stream, between two calls."""

    fingerprint: bytes
    """What the stream is bound to (route, model, request id, decode settings)."""
    issued_at: int
    """Unix time of the stream's first call; expiry counts from here."""
    choice_index: int | None = None
    """The choice this stream carries, once a chunk with a choice was seen."""
    role_sent: bool = False
    window: DecodeWindow = field(default_factory=DecodeWindow)
    logprob_context: tuple[int, ...] = ()
    text_offset: int = 0
    """Completions: ``text_offset`` of the next logprob token."""
    tokens_seen: int = 0
    pending: int | None = None
    """A last id that could be the stop token, its text held back until the next chunk says
    whether the stream finished on it (the finish may come in a chunk of its own)."""
    stop: StopProgress = field(default_factory=StopProgress)
    parser: ParserState | None = None
    """Reasoning/tool parser progress (chat with a parser configured)."""


def request_digest(parts: bytes) -> bytes:
    """SHA-256 of a call's request-level parts (their canonical JSON), made once per call."""
    return hashlib.sha256(parts).digest()


def fingerprint(digest: bytes, request_id: str | None) -> bytes:
    """What a stream is bound to: its request-level digest and the chunk's request id."""
    rid = b"\x00" if request_id is None else b"\x01" + request_id.encode("utf-8",
                                                                         "surrogatepass")
    return hashlib.sha256(digest + rid).digest()[:FINGERPRINT_BYTES]


def encode_state(state: StreamState) -> bytes:
    w = Writer()
    w.out += state.fingerprint
    w.uint(state.issued_at)
    w.uint((_ROLE_SENT if state.role_sent else 0) | (_STOPPED if state.stop.stopped else 0))
    w.uint(0 if state.choice_index is None else state.choice_index + 1)
    w.ints(state.window.ids)
    w.uint(state.window.read)
    w.ints(state.logprob_context)
    w.uint(state.text_offset)
    w.uint(state.tokens_seen)
    w.uint(0 if state.pending is None else state.pending + 1)
    w.uint(state.stop.text_chars)
    w.uint(0 if state.stop.head_chars is None else state.stop.head_chars + 1)
    w.text(state.stop.held)
    _encode_parser(w, state.parser)
    return bytes(w.out)


_PARSER, _CALLS_KEPT, _REASONING, _IN_REASONING, _TOOLS, _HARMONY = 1, 2, 4, 8, 16, 32
_TAG_SHIFT, _TAG_BITS = 6, 14
"""The parser flags; above them the tool-call format's tag."""
_FRONT = 1 << (_TAG_SHIFT + _TAG_BITS)
"""Above the tag: the state of an engine reading the reasoning first follows, after its tag
(``ParserState.front``; states issued before it never set this bit)."""


def _encode_parser(w: Writer, parser: ParserState | None) -> None:
    if parser is None:
        w.uint(0)
        return
    thought, tools, tag = parser.reasoning, parser.tools, parser.tool_tag
    record = None if tag is None else TOOLS_BY_TAG.get(tag)
    if (tools is None) != (record is None):
        raise ValueError("a tool-call state needs its format's tag")
    first = parser.front
    front = None if parser.front_tag is None else TOOLS_BY_TAG.get(parser.front_tag)
    if (first is None) != (front is None) or (tag is not None and tag >> _TAG_BITS):
        raise ValueError("a front engine's state needs its format's tag")
    w.uint(_PARSER | (_CALLS_KEPT if parser.calls_kept else 0)
           | (0 if thought is None else _REASONING | (_IN_REASONING if thought.reasoning else 0))
           | (0 if tag is None else _TOOLS | tag << _TAG_SHIFT)
           | (0 if parser.harmony is None else _HARMONY)
           | (0 if first is None else _FRONT))
    if thought is not None:
        reasoning.encode(thought, w)
    if record is not None and tools is not None:
        tool_format(record.name).write(tools, w)
    if front is not None and first is not None and parser.front_tag is not None:
        w.uint(parser.front_tag)
        tool_format(front.name).write(first, w)
    if parser.harmony is not None:
        from derender.core.parsers.formats import harmony  # noqa: PLC0415 (only for gpt-oss)
        harmony.encode(parser.harmony, w)


def _decode_parser(r: Reader) -> ParserState | None:
    flags = r.uint()
    if not flags & _PARSER:
        return None
    thought = reasoning.decode(bool(flags & _IN_REASONING), r) if flags & _REASONING else None
    tools, tag = None, None
    if flags >> (_TAG_SHIFT + _TAG_BITS) & ~1:
        raise ValueError("unknown parser flags")
    if flags & _TOOLS:
        tag = flags >> _TAG_SHIFT & ((1 << _TAG_BITS) - 1)
        record = TOOLS_BY_TAG.get(tag)
        if record is None:
            raise ValueError("unknown tool-call format")
        tools = tool_format(record.name).decode(r)
    elif flags >> _TAG_SHIFT & ((1 << _TAG_BITS) - 1):
        raise ValueError("a tool-call format without its state")
    first, front_tag = None, None
    if flags & _FRONT:
        front_tag = r.uint()
        front = TOOLS_BY_TAG.get(front_tag)
        if front is None or front.config is None:
            raise ValueError("unknown front engine")
        first = tool_format(front.name).decode(r)
    machine = None
    if flags & _HARMONY:
        from derender.core.parsers.formats import harmony  # noqa: PLC0415 (only for gpt-oss)
        machine = harmony.decode(r)
    return ParserState(thought, tools, bool(flags & _CALLS_KEPT), machine, tag, first, front_tag)


def decode_state(payload: bytes) -> StreamState:
    r = Reader(payload)
    try:
        fp = payload[:FINGERPRINT_BYTES]
        r.pos = FINGERPRINT_BYTES
        issued_at = r.uint()
        flags = r.uint()
        index = r.uint()
        window = DecodeWindow(r.ints(), r.uint())
        context = r.ints()
        text_offset, tokens_seen, pending = r.uint(), r.uint(), r.uint()
        text_chars, head = r.uint(), r.uint()
        held = r.text()
        parser = _decode_parser(r)
    except (IndexError, ValueError, UnicodeDecodeError):
        raise BadRequestError("stream_state payload is malformed") from None
    if r.pos != len(payload) or len(fp) != FINGERPRINT_BYTES or window.read > len(window.ids):
        raise BadRequestError("stream_state payload is malformed")
    return StreamState(
        fingerprint=fp, issued_at=issued_at, choice_index=index - 1 if index else None,
        role_sent=bool(flags & _ROLE_SENT), window=window, logprob_context=context,
        text_offset=text_offset, tokens_seen=tokens_seen,
        pending=pending - 1 if pending else None,
        stop=StopProgress(held=held, text_chars=text_chars,
                          head_chars=head - 1 if head else None,
                          stopped=bool(flags & _STOPPED)),
        parser=parser,
    )
