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

from derender.core.detokenizer import DecodeWindow
from derender.core.errors import BadRequestError
from derender.core.parsers import ParserState
from derender.core.parsers.hermes import FORMS, MODES, HermesState
from derender.core.parsers.json_value import ValueScan
from derender.core.parsers.reasoning import ReasoningState

FINGERPRINT_BYTES = 8
MAX_VALUE = 1 << 48
"""Every number a state holds (ids, offsets, counters, the issue time) is far below this;
a decoded number at or above it makes the payload malformed. Any sum the next call adds
to one therefore stays well inside what the encoder writes (below 2**63)."""

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


def fingerprint(*parts: object) -> bytes:
    """Short digest of what a stream is bound to."""
    digest = hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).digest()
    return digest[:FINGERPRINT_BYTES]


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def uint(self, value: int) -> None:
        if not 0 <= value < 1 << 63:
            raise ValueError(f"cannot encode {value} in the stream state")
        while True:
            byte = value & 0x7F
            value >>= 7
            if value:
                self.out.append(byte | 0x80)
            else:
                self.out.append(byte)
                return

    def ints(self, values: tuple[int, ...]) -> None:
        self.uint(len(values))
        for value in values:
            self.uint(value)

    def text(self, value: str) -> None:
        data = value.encode("utf-8", "surrogatepass")
        self.uint(len(data))
        self.out += data


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def uint(self) -> int:
        value = shift = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if value >= MAX_VALUE:
                    raise ValueError("number out of range")
                return value
            shift += 7
            if shift > 63:
                raise ValueError("varint too long")

    def ints(self) -> tuple[int, ...]:
        count = self.uint()
        if count > len(self.data):
            raise ValueError("list longer than the payload")
        return tuple(self.uint() for _ in range(count))

    def text(self) -> str:
        size = self.uint()
        data = self.data[self.pos:self.pos + size]
        if len(data) != size:
            raise ValueError("truncated text")
        self.pos += size
        return data.decode("utf-8", "surrogatepass")


def encode_state(state: StreamState) -> bytes:
    w = _Writer()
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


def _encode_parser(w: _Writer, parser: ParserState | None) -> None:
    if parser is None:
        w.uint(0)
        return
    thought = parser.reasoning
    w.uint(1 + (parser.calls_kept << 1) + ((thought is not None) << 2)
           + ((thought is not None and thought.reasoning) << 3) + ((parser.tools is not None) << 4))
    if thought is not None:
        w.text(thought.held)
    tools = parser.tools
    if tools is not None:
        scan = tools.scan
        w.uint(MODES.index(tools.mode) | FORMS.index(tools.form) << 4)
        w.text(tools.held)
        w.uint(tools.calls)
        w.uint(tools.spoke | scan.started << 1 | scan.in_string << 2 | scan.escaped << 3
               | scan.scalar << 4)
        w.uint(scan.depth)


def _decode_parser(r: _Reader) -> ParserState | None:
    flags = r.uint()
    if not flags & 1:
        return None
    thought = ReasoningState(bool(flags & 8), r.text()) if flags & 4 else None
    tools = None
    if flags & 16:
        mode_form, held, calls, bits, depth = r.uint(), r.text(), r.uint(), r.uint(), r.uint()
        tools = HermesState(MODES[mode_form & 15], held, calls, bool(bits & 1), ValueScan(
            started=bool(bits & 2), depth=depth, in_string=bool(bits & 4),
            escaped=bool(bits & 8), scalar=bool(bits & 16)), FORMS[mode_form >> 4])
    return ParserState(thought, tools, bool(flags & 2))


def decode_state(payload: bytes) -> StreamState:
    r = _Reader(payload)
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
