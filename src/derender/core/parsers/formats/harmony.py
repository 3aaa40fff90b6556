"""gpt-oss Harmony output, parsed from token ids as vLLM 0.33's ``HarmonyParser`` does.

A Harmony output is a run of messages, each a header, ``<|message|>``, content and a stop token
(``<|end|>``, ``<|call|>``, ``<|return|>``); messages after the first open with ``<|start|>``.
The header names the author's role, the channel and the recipient: ``analysis`` is reasoning,
``final`` (and ``commentary`` to nobody) is content, a message to a function (``to=functions.
get_weather``) is a tool call whose content is its arguments. Only the special tokens' *ids*
delimit anything: the same characters spelled by ordinary tokens are text.

The machine follows ``openai_harmony``'s ``StreamableParser`` (the oss-harmony 0.0.11 build vLLM
0.33 runs) token by token: a token it refuses (anything but ``<|start|>`` between messages, the
``<|message|>`` of a header that does not parse) is skipped; content is the lossy UTF-8
decoding of the message's bytes; the output ending inside a header returns the bytes of the
unfinished message as content (vLLM's recovery). The whole text reads like vLLM's
non-streaming ``parse``: reasoning parts and content parts of assistant messages each joined
with ``"\\n"``, one tool call per function message. Streaming yields the same text in pieces.

The state is bounded: a header (with what the recovery would return) longer than
``MAX_HEADER`` bytes is no Harmony header, and from there the output is content (``RAW``).
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import IntEnum

from derender.core.decoding.vocab import Vocabulary
from derender.core.parsers.primitives import merge
from derender.core.parsers.tools import ParsedDelta, ToolCallDelta
from derender.core.state.codec import Reader, Writer

START, MESSAGE, CHANNEL, CONSTRAIN = "<|start|>", "<|message|>", "<|channel|>", "<|constrain|>"
STOPS = ("<|end|>", "<|call|>", "<|return|>")
"""The tokens ending a message's content (``<|endoftext|>`` is none: it is text there)."""
MAX_HEADER = 1024
"""Bytes a header (with the unfinished message before it) may hold while it is parsed."""
ROLES = frozenset({"user", "assistant", "system", "developer", "tool"})
BUILTIN_TOOLS = frozenset({"python", "browser", "container"})
"""Recipients that are gpt-oss's built-in tools, not functions (vLLM 0.33)."""
WHITE_SPACE = ("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
               "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
"""Unicode's White_Space, which ends a channel name and is trimmed off a header (Rust's
``char::is_whitespace``; Python's ``str.isspace`` also takes U+001C-U+001F)."""
ASCII_SPACE = " \t\n\f\r"
"""What splits a header into its parts (Rust's ``split_ascii_whitespace``: no U+000B)."""


class Phase(IntEnum):
    HEADER = 0
    BETWEEN = 1
    """After a message, or a header that did not parse: only ``<|start|>`` is taken."""
    CONTENT = 2
    RAW = 3
    """Not Harmony (a header past ``MAX_HEADER``): every token's text is content."""


class Kind(IntEnum):
    """What a message's content is."""

    IGNORED = 0
    REASONING = 1
    CONTENT = 2
    TOOL = 3


@dataclass(frozen=True, slots=True)
class HarmonyState:
    """Where the machine stands between two chunks: plain data, at most ``MAX_HEADER`` bytes
    held, encoded into the stream state by ``encode``."""

    phase: Phase = Phase.HEADER
    held: bytes = b""
    """HEADER/BETWEEN: the bytes of the unfinished message (what the recovery returns);
    CONTENT/RAW: an incomplete UTF-8 sequence waiting for its next bytes."""
    header_len: int = 0
    """HEADER: how many bytes at the end of ``held`` are the header."""
    kind: Kind = Kind.IGNORED
    """CONTENT: what the current message is."""
    role_given: bool = True
    """No header parsed yet: the first message's role is the assistant's, not in its header."""
    said: frozenset[Kind] = frozenset()
    """Kinds with a non-empty part so far (a later part is joined with "\\n")."""
    part_open: bool = False
    """The current message has given text (it already joined its kind's parts)."""
    calls: int = 0


@dataclass(frozen=True, slots=True)
class Header:
    """What of a header decides a message's kind (its content type only places the
    recipient: arguments are kept as written, whatever type they claim)."""

    role: str
    channel: str | None
    recipient: str | None


@dataclass(frozen=True, slots=True)
class Tokens:
    """The vocabulary's Harmony token ids and the bytes of every id."""

    start: int
    message: int
    stops: frozenset[int]
    token_bytes: Callable[[int], bytes]


def _byte_level_table() -> dict[int, int]:
    """GPT-2 byte-level alphabet: the character standing for each byte → that byte."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    others = [b for b in range(256) if b not in printable]
    table = {b: b for b in printable}
    table.update((0x100 + n, b) for n, b in enumerate(others))
    return table


_UNBYTE = _byte_level_table()


_TOKENS: dict[int, tuple[Vocabulary, Tokens]] = {}
"""``tokens`` per vocabulary (by identity; a served model's vocabulary lives as long as the
process), so a chunk does not look the markers up again."""


def tokens(vocab: Vocabulary) -> Tokens:
    """The Harmony ids of a byte-level vocabulary (``ValueError`` for any other)."""
    known = _TOKENS.get(id(vocab))
    if known is not None and known[0] is vocab:
        return known[1]
    found = _find_tokens(vocab)
    _TOKENS[id(vocab)] = (vocab, found)
    return found


def _find_tokens(vocab: Vocabulary) -> Tokens:
    ids = {name: vocab.token_id(name) for name in (START, MESSAGE, *STOPS)}
    missing = [name for name, token in ids.items() if token is None]
    if missing:
        raise ValueError(f"the vocabulary has no Harmony token {', '.join(missing)}")
    if not vocab.byte_level:
        raise ValueError("Harmony parsing needs a byte-level vocabulary (gpt-oss's o200k)")
    pieces, added = vocab.pieces, frozenset(vocab.added_ids)

    def token_bytes(token: int) -> bytes:
        piece = pieces[token]
        if token in added:
            return piece.encode()
        return piece.translate(_UNBYTE).encode("latin-1")

    start, message = ids[START], ids[MESSAGE]
    assert start is not None and message is not None
    return Tokens(start, message, frozenset(t for n in STOPS if (t := ids[n]) is not None),
                  token_bytes)


def _trim(text: str) -> str:
    return text.strip(WHITE_SPACE)


def parse_header(raw: bytes, role_given: bool) -> Header | None:
    """A header's role, channel and recipient; None where the Harmony parser refuses it.
    vLLM then cuts a recipient at ``<|constrain|>`` (older Harmony builds left content types
    there)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    channel = None
    while (at := text.find(CHANNEL)) >= 0:  # the first names the channel; later ones go too
        after = text[at + len(CHANNEL):]
        end = next((i for i, c in enumerate(after) if c in WHITE_SPACE or c == "<"), len(after))
        if channel is None:
            if end == 0:
                return None
            channel = after[:end]
        text = text[:at] + after[end:]
    text = _trim(text)
    if CONSTRAIN in text:
        text = _trim(text.replace(CONSTRAIN, " " + CONSTRAIN))
    parts = [p for p in _split_ascii(text) if p]
    if role_given:
        role = "assistant"
    elif not parts:
        return None
    elif parts[0] in ROLES:
        role = parts[0]
    elif len(parts) > 1 or parts[0].startswith("to="):
        parts.pop(0)
        role = "tool"
    else:
        return None
    if parts and parts[0] == role:
        parts.pop(0)
    recipient = None
    if parts:
        count, last = len(parts), parts.pop()
        if last.startswith("to="):
            recipient = last[3:]
        elif count == 1:
            recipient = last
        else:  # the last part is the content type, the one before it the recipient
            recipient = parts.pop().removeprefix("to=")
    if parts:
        return None
    if recipient is not None and (cut := recipient.find(CONSTRAIN)) >= 0:
        recipient = recipient[:cut].rstrip() or None  # vLLM's _normalize_recipient
    return Header(role, channel, recipient)


def _split_ascii(text: str) -> list[str]:
    for space in ASCII_SPACE[1:]:
        text = text.replace(space, " ")
    return text.split(" ")


def is_function(recipient: str) -> bool:
    """vLLM's chat rule: any recipient but the assistant, a built-in tool or a token."""
    if not recipient or recipient.startswith("<|") or recipient == "assistant":
        return False
    if recipient.startswith("functions."):
        return len(recipient) > len("functions.")
    return recipient.split(".", 1)[0] not in BUILTIN_TOOLS


def kind_of(header: Header, tools: bool) -> Kind:
    """``tools``: the ``openai`` tool parser is configured (else function messages are
    dropped). Analysis is always reasoning: vLLM gives gpt-oss models the ``openai_gptoss``
    reasoning parser by default."""
    if header.role != "assistant":
        return Kind.IGNORED
    if header.recipient and is_function(header.recipient):
        return Kind.TOOL if tools else Kind.IGNORED
    if header.channel == "analysis":
        return Kind.REASONING
    if header.channel == "final" or (header.channel == "commentary" and header.recipient is None):
        return Kind.CONTENT
    return Kind.IGNORED


def _decode(held: bytes, data: bytes, final: bool) -> tuple[str, bytes]:
    """Lossy UTF-8 of ``held + data``; an incomplete last sequence is held unless ``final``."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    decoder.setstate((held, 0))
    text = decoder.decode(data, final)
    return text, decoder.getstate()[0]


class _Run:
    """One call's walk over token ids, collecting what it says."""

    def __init__(self, state: HarmonyState, tools: bool) -> None:
        self.state = state
        self.tools = tools
        self.reasoning: list[str] = []
        self.content: list[str] = []
        self.calls: list[ToolCallDelta] = []

    def say(self, kind: Kind, text: str) -> None:
        """Text of the current message (or the recovered one), joined to its kind's parts."""
        if not text or kind is Kind.IGNORED:
            return
        state = self.state
        if kind is Kind.TOOL:
            self.calls.append(ToolCallDelta(state.calls - 1, None, text))
            return
        if not state.part_open:
            if kind in state.said:
                text = "\n" + text
            self.state = replace(state, part_open=True, said=state.said | {kind})
        (self.reasoning if kind is Kind.REASONING else self.content).append(text)

    def content_bytes(self, data: bytes, final: bool) -> None:
        text, held = _decode(self.state.held, data, final)
        self.state = replace(self.state, held=held)
        self.say(self.state.kind, text)

    def header_token(self, data: bytes) -> None:
        state = self.state
        held = state.held + data
        if len(held) > MAX_HEADER:
            self.state = replace(state, phase=Phase.RAW, kind=Kind.CONTENT, held=b"",
                                 header_len=0, part_open=False)
            self.content_bytes(held, final=False)
        else:
            self.state = replace(state, held=held, header_len=state.header_len + len(data))

    def open_message(self) -> None:
        state = self.state
        header = parse_header(state.held[len(state.held) - state.header_len:], state.role_given)
        if header is None:  # refused: the header stays in what the recovery would return
            self.state = replace(state, phase=Phase.BETWEEN, header_len=0)
            return
        kind = kind_of(header, self.tools)
        calls = state.calls
        if kind is Kind.TOOL:
            assert header.recipient is not None
            self.calls.append(ToolCallDelta(calls, header.recipient.removeprefix("functions."),
                                            ""))
            calls += 1
        self.state = replace(state, phase=Phase.CONTENT, kind=kind, held=b"", header_len=0,
                             role_given=False, part_open=False, calls=calls)

    def end_message(self) -> None:
        self.content_bytes(b"", final=True)
        self.state = replace(self.state, phase=Phase.BETWEEN, kind=Kind.IGNORED,
                             part_open=False)

    def feed(self, ids: Iterable[int], harmony: Tokens) -> None:
        run: list[bytes] = []  # content bytes not yet decoded
        for token in ids:
            phase = self.state.phase
            if phase is Phase.CONTENT and token in harmony.stops:
                self.content_bytes(b"".join(run), final=False)
                run.clear()
                self.end_message()
            elif phase is Phase.CONTENT or phase is Phase.RAW:
                run.append(harmony.token_bytes(token))
            elif phase is Phase.HEADER:
                if token == harmony.message:
                    self.open_message()
                else:
                    self.header_token(harmony.token_bytes(token))
            elif token == harmony.start:  # BETWEEN; anything else is refused
                self.state = replace(self.state, phase=Phase.HEADER)
                self.header_token(harmony.token_bytes(token))
                self.state = replace(self.state, header_len=0)  # the header starts after it
        if run:
            self.content_bytes(b"".join(run), final=False)

    def finish(self) -> None:
        """The end of the output: a message in progress is complete; one ending inside its
        header returns its bytes as content (vLLM's recovery)."""
        state = self.state
        if state.phase in (Phase.CONTENT, Phase.RAW):
            self.end_message()
        elif state.phase is Phase.HEADER:
            text, _ = _decode(b"", state.held, final=True)
            self.state = replace(state, phase=Phase.BETWEEN, held=b"", header_len=0,
                                 part_open=False)
            self.say(Kind.CONTENT, text)
            self.state = replace(self.state, part_open=False)


def feed(state: HarmonyState, tools: bool, harmony: Tokens, ids: Iterable[int], final: bool
         ) -> tuple[ParsedDelta, HarmonyState]:
    """Reasoning, content and tool-call deltas of new token ids; ``final``: the output ends."""
    run = _Run(state, tools)
    run.feed(ids, harmony)
    if final:
        run.finish()
    return (ParsedDelta("".join(run.reasoning), "".join(run.content), merge(run.calls)),
            run.state)


_KINDS = tuple(Kind)


def encode(state: HarmonyState, w: Writer) -> None:
    said = sum(1 << kind for kind in state.said)
    w.uint(state.phase | state.kind << 2 | state.role_given << 4 | state.part_open << 5
           | said << 6)
    w.blob(state.held)
    w.uint(state.header_len)
    w.uint(state.calls)


def decode(r: Reader) -> HarmonyState:
    flags = r.uint()
    held = r.blob()
    header_len, calls = r.uint(), r.uint()
    if flags >> 10 or header_len > len(held) or len(held) > MAX_HEADER:
        raise ValueError("not a Harmony state")
    return HarmonyState(phase=Phase(flags & 3), held=held, header_len=header_len,
                        kind=Kind(flags >> 2 & 3), role_given=bool(flags & 16),
                        said=frozenset(k for k in _KINDS if flags >> 6 & 1 << k),
                        part_open=bool(flags & 32), calls=calls)
