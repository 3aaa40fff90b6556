"""The compact binary encoding of stream states: unsigned LEB128 varints and length-prefixed
UTF-8 (or bytes). ``stream_state`` lays out a whole state with it; each tool-call format writes and
reads its own part. Only ever decoded after the token's MAC was verified, and still checked:
a malformed payload raises ``ValueError`` (or ``IndexError``/``UnicodeDecodeError``)."""

from __future__ import annotations

MAX_VALUE = 1 << 48
"""Every number a state holds (ids, offsets, counters, the issue time) is far below this;
a decoded number at or above it makes the payload malformed. Any sum the next call adds
to one therefore stays well inside what the encoder writes (below 2**63)."""


class Writer:
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
        self.blob(value.encode("utf-8", "surrogatepass"))

    def blob(self, data: bytes) -> None:
        self.uint(len(data))
        self.out += data


class Reader:
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
        return self.blob().decode("utf-8", "surrogatepass")

    def sized_text(self) -> tuple[str, int]:
        """A text and its size in the state (``utf8_size``), known here without measuring."""
        data = self.blob()
        return data.decode("utf-8", "surrogatepass"), len(data)

    def blob(self) -> bytes:
        size = self.uint()
        data = self.data[self.pos:self.pos + size]
        if len(data) != size:
            raise ValueError("truncated bytes")
        self.pos += size
        return bytes(data)

    def choice(self, options: tuple[str, ...]) -> str:
        """One of ``options``, written as its index."""
        index = self.uint()
        if index >= len(options):
            raise ValueError("unknown choice")
        return options[index]


def utf8_size(text: str) -> int:
    """Bytes ``text`` takes in a state (``Writer.text``: UTF-8, lone surrogates as 3 bytes)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def utf8_prefix(text: str, limit: int) -> str:
    """The longest start of ``text`` that takes at most ``limit`` bytes in a state."""
    text = text[:limit]  # a character takes a byte at least
    if utf8_size(text) <= limit:
        return text
    size = 0
    for at, ch in enumerate(text):
        size += utf8_size(ch)
        if size > limit:
            return text[:at]
    return text
