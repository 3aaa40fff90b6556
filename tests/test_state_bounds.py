"""Every stream state the service issues is one it accepts (issue 22): with every holdback of
a parser full of 4-byte characters (3-byte whitespace where only whitespace is held) and the
stop-string holdback at its bound, the signed ``stream_state`` is within
``DERENDER_MAX_STATE_CHARS``.

The state is base64 of its payload, so its size follows the payload's UTF-8 bytes, not its
characters: a holdback bounded in characters holds four times as many bytes of emoji as of
ASCII. Per parser pairing (``tests/cost_cases.PAIRS``: every tool format and reasoning
parser), hypothesis draws a model output from the pairing's call template with its name, its
values (string and typed) and the whitespace around its markup filled with such characters,
cut anywhere, streamed in batches of any size; after every batch the stream state is built as
the service issues it (with a stop-string holdback of the longest stop string allowed, in
4-byte characters) and signed, and its size checked against the cap.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers.formats import minimax, response_template
from derender.core.state.codec import Writer, utf8_prefix, utf8_size
from derender.core.state.stream import StopProgress, StreamState, _encode_parser, encode_state
from derender.core.state.token import KeyRing, sign
from derender.settings import Settings
from tests import cost_cases
from tests.cost_cases import PAIRS, pairing_name

DEFAULTS = Settings(models_dir=Path("."))
CAP = DEFAULTS.max_state_chars
WIDE = "\U0001F600"
"""A 4-byte character."""
WIDE_SPACE = "\u3000"
"""The widest whitespace: 3 bytes (ideographic space)."""
RING = KeyRing.parse("k1:" + "s" * 32)
STOP_HELD = WIDE * (DEFAULTS.max_stop_string_chars - 1)
"""The stop-string holdback at its bound: one character less than the longest stop string."""


def payload(parser: parsers.ParserState) -> bytes:
    """The payload of the stream state a call issues with this parser state (window and
    counters as a long stream has them)."""
    state = StreamState(fingerprint=b"\x00" * 8, issued_at=1_800_000_000, choice_index=0,
                        role_sent=True, tokens_seen=1 << 20,
                        stop=StopProgress(held=STOP_HELD, text_chars=1 << 24),
                        parser=parser)
    return encode_state(state)


def issued(parser: parsers.ParserState) -> str:
    """The signed stream state a call issues with this parser state."""
    return sign(RING, payload(parser))


@st.composite
def outputs(draw: st.DrawFn, reasoning_parser: str | None, tool_parser: str | None) -> str:
    """The pairing's template, its fields filled with wide characters, cut anywhere."""
    base = cost_cases.template(reasoning_parser, tool_parser)
    name = draw(st.sampled_from(["f", WIDE * draw(st.integers(1, 1200))]))
    value = WIDE * draw(st.integers(0, 2000))
    typed = WIDE * draw(st.integers(0, 1200))
    space = WIDE_SPACE * draw(st.integers(0, 300))
    text = base.replace("NAME", name).replace("VALUE", value).replace("1", typed)
    text = space + text.replace("\n", "\n" + space).replace(">", ">" + space)
    return text[:draw(st.integers(0, len(text)))] + space


CASES = [(r, t, False) for r, t in PAIRS] + [("nemotron_v3", None, True),
                                             ("nemotron_v3", "qwen3_coder", True),
                                             # granite-inkling
                                             ("granite_thinking_parser", "qwen3_coder", True)]
"""Every pairing; nemotron_v3 and granite_thinking_parser also with content forced (their swap
holds reasoning)."""
IDS = [pairing_name(r, t) + ("+force-content" if f else "") for r, t, f in CASES]


def _setup(reasoning_parser: str | None, tool_parser: str | None, forced_content: bool
           ) -> parsers.ParserSettings:
    return replace(cost_cases.settings(reasoning_parser, tool_parser),
                   force_content=forced_content)


def _stream(setup: parsers.ParserSettings, text: str, batch: int) -> int:
    """The largest state issued streaming ``text`` in batches, checked against the cap. A
    token's length grows with its payload's, so each payload longer than all before it is
    signed and checked (the others make shorter tokens)."""
    state = cost_cases.start(setup)
    largest, longest = 0, -1
    for at in range(0, len(text), batch):
        _, state = parsers.feed(setup, state, text[at:at + batch], False)
        data = payload(state)
        if len(data) > longest:
            longest = len(data)
            token = sign(RING, data)
            largest = len(token)
            assert len(token) <= CAP, (len(token), at, state)
    return largest


@pytest.mark.parametrize(("reasoning_parser", "tool_parser", "forced_content"), CASES, ids=IDS)
def test_every_issued_state_is_accepted(reasoning_parser: str | None, tool_parser: str | None,
                                        forced_content: bool) -> None:
    setup = _setup(reasoning_parser, tool_parser, forced_content)
    largest = [0]

    @settings(max_examples=12, deadline=None)
    @given(outputs(reasoning_parser, tool_parser), st.integers(1, 300))
    def check(text: str, batch: int) -> None:
        largest[0] = max(largest[0], _stream(setup, text, batch))

    check()
    print(f"{pairing_name(reasoning_parser, tool_parser)}: largest stream_state "
          f"{largest[0]} characters (cap {CAP})")


@pytest.mark.parametrize(("reasoning_parser", "tool_parser", "forced_content"), CASES, ids=IDS)
def test_the_fullest_holdbacks_are_accepted(reasoning_parser: str | None,
                                            tool_parser: str | None,
                                            forced_content: bool) -> None:
    """Each holdback just within its bound at once: the function name (known, so its typed
    values are held; or 4-byte characters), a typed value and a string value of 4-byte
    characters, 3-byte whitespace after every tag and line break; streamed a few characters
    at a time, so every field is seen at its fullest."""
    setup = _setup(reasoning_parser, tool_parser, forced_content)
    base = cost_cases.template(reasoning_parser, tool_parser)
    largest = 0
    for name in ("f", WIDE * 120, WIDE * 250, WIDE * 500):
        for fill in (120, 250, 500, 1000, 1020):
            space = WIDE_SPACE * min(fill, 250)
            text = base.replace("NAME", name).replace("VALUE", WIDE * fill).replace(
                "1", WIDE * fill)
            text = space + text.replace("\n", "\n" + space).replace(">", ">" + space) + space
            largest = max(largest, _stream(setup, text, 5))
    print(f"{pairing_name(reasoning_parser, tool_parser)}: largest stream_state "
          f"{largest} characters (cap {CAP})")


def test_a_minimax_m3_call_of_cjk_text_streams_within_the_cap() -> None:
    """Issue 22 item 3: ~3,000 CJK characters in one argument made a state over the cap (the
    call was held for 4,096 characters, 12 KiB of UTF-8); held in bytes it stays under it."""
    setup = cost_cases.settings("minimax_m3", "minimax_m3")
    text = cost_cases.template("minimax_m3", "minimax_m3").replace("NAME", "f").replace(
        "VALUE", "\u4e2d" * 3000)
    state = cost_cases.start(setup)
    largest = 0
    for at in range(0, len(text), 16):
        _, state = parsers.feed(setup, state, text[at:at + 16], False)
        largest = max(largest, len(issued(state)))
        w = Writer()
        _encode_parser(w, state)
        assert len(w.out) <= minimax.MAX_CALL + 512
    print(f"largest stream_state: {largest} characters")
    assert largest <= CAP


def test_an_hf_call_at_every_bound_streams_within_the_cap() -> None:
    """Template branch: an ``hf`` call (the response-template machine) whose function name is
    as long as a pending opener may hold (``MAX_HELD`` characters with the opener's text, of
    4-byte characters) and whose body is just within
    ``MAX_BODY`` bytes of 4-byte characters, the reasoning before it and the pending opener
    full too, streamed a few characters at a time: every state issued is within the cap."""
    setup = cost_cases.settings("hf", "hf")
    name = WIDE * (response_template.MAX_HELD - len("<tool_call>\n<function=>"))
    body_room = response_template.MAX_BODY - 200
    text = ("<think>" + WIDE * 600 + "</think>" + "<tool_call>\n<function=" + name + ">\n"
            "<parameter=a>\n" + WIDE * (body_room // 4) + "\n</parameter>\n</function>\n"
            "</tool_call>")
    largest = _stream(setup, text, 5)
    state = cost_cases.start(setup)
    _, state = parsers.feed(setup, state, text[:-30], False)
    assert state.tools is not None and len(state.tools.body.encode()) > body_room  # held
    print(f"largest stream_state: {largest} characters (cap {CAP})")
    assert largest <= CAP


@pytest.mark.parametrize("text", ["abc", "\u4e2d" * 5, WIDE * 7 + "x", "\ud800\udfff" + "é" * 3,
                                  "a" + WIDE])
def test_utf8_size_and_prefix(text: str) -> None:
    """``utf8_size`` is the bytes the state writes (lone surrogates 3 bytes each), and
    ``utf8_prefix`` the longest start within a byte limit."""
    assert utf8_size(text) == len(text.encode("utf-8", "surrogatepass"))
    for limit in range(utf8_size(text) + 2):
        cut = utf8_prefix(text, limit)
        assert text.startswith(cut)
        assert utf8_size(cut) <= limit
        if cut != text:
            assert utf8_size(text[:len(cut) + 1]) > limit


def test_a_tokens_length_grows_with_its_payloads() -> None:
    """What ``_stream`` relies on to sign only the longest payloads: a longer payload never
    makes a shorter token."""
    lengths = [len(sign(RING, b"\xff" * n)) for n in range(300)]
    assert lengths == sorted(lengths) and lengths[0] < lengths[-1]
