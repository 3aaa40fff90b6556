"""The ``muse_glimmer`` tool and reasoning parsers: one machine, ``formats/muse_glimmer.py``.
Expected values are vLLM 0.33's messages as recorded in tests/fixtures/vllm-0.33 (cases
7520-7543 and 9300-9389, cited by number; the conformance replay checks every one through the
app) and, marked, the README compatibility rows where we differ on purpose. Then: split
invariance (any split of any output folds to the whole output's answer, markers as single
tokens and as text, within ``MAX_HELD`` and past it), state round trips and size, pairing. The
model is ``muse-spark-standin`` (Muse's framing tokens in GPT-2's vocabulary).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.contract.requests import ChatRequest
from derender.core import parsers
from derender.core.parsers.formats import muse, muse_glimmer
from derender.core.parsers.registry import MARKUP
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer, utf8_size
from derender_testing.models import vocabulary
from tests.test_parser_muse import read as muse_read

SPELL = {marker: chr(0xE000 + MARKUP.index(marker)) for marker in MARKUP}
S, M, EOM, EOT = (SPELL[m] for m in (muse.START, muse.MESSAGE, muse.EOM, muse.EOT))
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}}
TOOLS = (WEATHER,)
KEEP = ToolContext(spell=SPELL, tools=TOOLS)
NOKEEP = ToolContext(spell=SPELL, tools=TOOLS, keep=False)
REQUIRED = ToolContext(spell=SPELL, tools=TOOLS, required=True)
PLAIN = ToolContext(tools=TOOLS)  # no marker a single token: markers spelled as text
THOUGHT = "The user wants Paris weather; call the tool."
ANSWER = "It is sunny in Paris, 22 °C."
W = "get_weather.get_weather"
PARIS = '{"city": "Paris", "unit": "c"}'
SELF = f" to=self{M}{THOUGHT}"
CALL = (f"{S}assistant to={W}{M}<atem:function_calls>\n<atem:invoke name=\"{W}\">\n"
        '<atem:parameter name="city">Paris</atem:parameter>\n'
        '<atem:parameter name="unit">c</atem:parameter>\n</atem:invoke>\n</atem:function_calls>')


def as_text(text: str) -> str:
    """``text`` with the markers written as text (a vocabulary without them as tokens)."""
    return text.translate({ord(SPELL[m]): m for m in (muse.START, muse.MESSAGE, muse.EOM,
                                                      muse.EOT)})


def read(pieces: list[str], context: ToolContext = KEEP, mode: int = 0
         ) -> tuple[str, str, list[tuple[str, str]]]:
    """Reasoning, content and calls of the machine fed ``pieces``, the last one final (started
    in ``mode``); every state reached encodes and decodes to itself; a call comes whole, in
    one delta (``test_parser_muse.read`` with this machine)."""
    return muse_read(pieces, context, mode, muse_glimmer)


def whole(text: str, context: ToolContext = KEEP, mode: int = 0
          ) -> tuple[str, str, list[tuple[str, str]]]:
    return read([text], context, mode)


ALONE = muse_glimmer.ALONE_MODE


# --------------------------------------------------------------------------- vLLM's messages


def test_reasoning_blocks_join_with_newlines() -> None:  # 7528, 7530
    answer = f"{S}assistant to=user{M}{ANSWER}{EOT}"
    assert whole(SELF + EOM + answer) == (THOUGHT, ANSWER, [])
    two = SELF + EOM + f"{S}assistant to=self{M}Second thought.{EOM}" + answer
    assert whole(two) == (THOUGHT + "\nSecond thought.", ANSWER, [])


def test_unframed_output_is_content() -> None:  # 7532
    assert whole(ANSWER) == ("", ANSWER, [])


def test_a_block_reaches_the_next_eom_wherever_it_is() -> None:  # 9342, 9344
    reasoning, content, calls = whole(SELF + CALL + EOM)
    assert (reasoning, content, calls) == (
        as_text(THOUGHT + CALL) + "\n" + THOUGHT + as_text(S) + "assistant ", "", [])
    answer = f"{S}assistant to=user{M}{ANSWER}{EOT}"
    assert whole(SELF + EOT + answer) == (
        THOUGHT + as_text(EOT + S) + "assistant ", ANSWER, [])


def test_an_answer_runs_across_a_later_header() -> None:  # 9318
    text = SELF + EOM + f"{S}assistant to=user{M}{ANSWER}{S}assistant to=self{M}Late.{EOM}"
    assert whole(text) == (THOUGHT + "\nLate.",
                           ANSWER + as_text(S) + "assistant to=self" + as_text(M) + "Late.", [])


def test_calls_and_the_framed_remainder() -> None:  # 9322, 9340, 7538, 9356
    commentary = CALL.replace(f"to={W}", "to=commentary")
    assert whole(SELF + EOM + commentary + EOM) == (THOUGHT, "", [("get_weather", PARIS)])
    unclosed = CALL.replace("Paris</atem:parameter>\n<atem:parameter name=\"unit\">c"
                            "</atem:parameter>", "Paris")
    assert whole(SELF + EOM + unclosed + EOM) == (THOUGHT, "", [("get_weather", "{}")])
    cut = CALL[:CALL.index("Paris") + 3]
    assert whole(SELF + EOM + cut) == (THOUGHT, " " + as_text(cut), [])
    assert whole(SELF + EOM + cut, NOKEEP) == (THOUGHT, " " + as_text(cut), [])
    assert whole(SELF + EOM + CALL + EOM, REQUIRED) == (THOUGHT, "", [("get_weather", PARIS)])


def test_cut_off_reasoning() -> None:  # 9348
    assert whole(SELF) == (THOUGHT, "", [])


def test_markers_written_as_text_read_alike() -> None:
    text = SELF + EOM + CALL + EOM + f"{S}assistant to=user{M}Done.{EOT}"
    assert whole(as_text(text), PLAIN) == whole(text)


def test_the_tool_parser_alone() -> None:  # 9370-9381
    """vLLM's ``MuseGlimmerToolParser.extract_tool_calls`` on the whole output (run in the
    peer's venv on these texts), composed by ``parser/abstract_parser.py``: no reasoning; with
    a call, the no-recipient and ``user`` bodies (null when none); without, the output as
    written, framing included."""
    answer = f"{S}assistant to=user{M}{ANSWER}{EOT}"
    text = SELF + EOM + answer
    assert whole(text, KEEP, ALONE) == ("", as_text(text), [])
    assert whole(SELF + EOM + CALL + EOM + answer, KEEP, ALONE) == (
        "", ANSWER, [("get_weather", PARIS)])
    assert whole(SELF + EOM + CALL + EOM, KEEP, ALONE) == ("", "", [("get_weather", PARIS)])
    bare = f"{M}{THOUGHT}{EOM}" + CALL + EOM + answer
    assert whole(bare, KEEP, ALONE) == ("", THOUGHT + ANSWER, [("get_weather", PARIS)])
    cut = SELF + EOM + CALL[:CALL.index("Paris") + 3]
    assert whole(cut, KEEP, ALONE) == ("", as_text(cut), [])
    # calls not read (tool_choice "none"): the output as handed over
    assert whole(SELF + EOM + CALL + EOM, NOKEEP, ALONE) == ("", SELF + EOM + CALL + EOM, [])


def test_the_tool_parser_alone_past_max_held() -> None:
    """README compatibility: an output over ``MAX_HELD`` bytes, read alone: with a call read
    by then, the calls and the content bodies read left to right; without, the output as
    written (the calls read after it still given)."""
    long = WIDE * (muse_glimmer.MAX_HELD // 4)
    answer = f"{S}assistant to=user{M}{ANSWER}{EOT}"
    called = [SELF + EOM, CALL, EOM, f"{S}assistant to=user{M}", long, EOT]
    assert read(called, KEEP, ALONE) == ("", long, [("get_weather", PARIS)])
    late = [SELF + long + EOM, CALL, EOM, answer]
    assert read(late, KEEP, ALONE) == ("", "".join(late), [("get_weather", PARIS)])
    # within the bound, vLLM's message: the answer's body with the call
    assert whole("".join(late).replace(long, ""), KEEP, ALONE) == (
        "", ANSWER, [("get_weather", PARIS)])


def test_alone_the_bound_is_a_place_in_the_output_not_a_chunk() -> None:
    """Whether a call was read within ``MAX_HELD`` is decided at that byte of the output, not
    at the end of the chunk that crosses it, so every cut reads alike (a chunk that carried
    the bound and a later call read as a call within it)."""
    long = WIDE * (muse_glimmer.MAX_HELD // 4)
    late = SELF + long + EOM + CALL + EOM + f"{S}assistant to=user{M}{ANSWER}{EOT}"
    early = SELF + EOM + CALL + EOM + f"{S}assistant to=user{M}" + long + EOT
    assert whole(late, KEEP, ALONE) == ("", late, [("get_weather", PARIS)])
    assert whole(early, KEEP, ALONE) == ("", long, [("get_weather", PARIS)])
    for text in (late, early):
        for cut in range(len(text) + 1):
            assert read([text[:cut], text[cut:]], KEEP, ALONE) == whole(text, KEEP, ALONE), cut


# --------------------------------------------------------------------------- any split

WIDE = "\U0001F600"
PIECES = [SELF, " to=self", M, EOM, EOT, S, "assistant", " to=", "user", "commentary", W,
          "<atem:function_calls>", "<atem:invoke", f' name="{W}">',
          '<atem:parameter name="city">', "</atem:parameter>", "</atem:invoke>", CALL,
          "Zürich 😀 ", " ", "\n", "t", "to", "<", '{"k": 1}', WIDE * 300, "x" * 900]
"""Markup pieces, and long runs that cross ``MAX_HELD`` (and the left-to-right reading's
bounds past it)."""
texts = st.lists(st.sampled_from(PIECES), max_size=16).map("".join)


@settings(max_examples=100, deadline=None)
@given(text=texts, data=st.data())
def test_any_split_reads_as_the_whole(text: str, data: st.DataObject) -> None:
    """With both parsers, and the tool parser alone (``ALONE_MODE``)."""
    context = data.draw(st.sampled_from([KEEP, NOKEEP, REQUIRED]), label="context")
    mode = data.draw(st.sampled_from([0, ALONE]), label="mode")
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=10), label="cuts"))
    bounds = [0, *cuts, len(text)]
    pieces = [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    assert read(pieces, context, mode) == whole(text, context, mode)
    plain = ToolContext(tools=TOOLS, keep=context.keep, required=context.required)
    assert read([as_text(p) for p in pieces], plain, mode) == whole(as_text(text), plain, mode)


# --------------------------------------------------------------------------- past MAX_HELD


def test_within_max_held_nothing_is_given_before_the_end() -> None:
    state = muse_glimmer.start()
    for piece in (SELF, EOM, CALL):
        reasoning, content, calls, state = muse_glimmer.feed_reasoning(state, piece, False,
                                                                       KEEP)
        assert (reasoning, content, calls) == ("", "", [])


def test_past_max_held_messages_are_read_left_to_right() -> None:
    """README compatibility: an output over ``MAX_HELD`` bytes is read message by message:
    reasoning bodies joined with newlines, ``user`` bodies content, calls from tool bodies; a
    later unterminated block no longer takes the earlier reasoning away, text between
    messages is dropped and a call message that parses no call is not content."""
    long = WIDE * (muse_glimmer.MAX_HELD // 4)
    second = f"{S}assistant to=self{M}more"
    answer = f"{S}assistant to=user{M}{ANSWER}{EOT}"
    pieces = [SELF + long, EOM, CALL, EOM, answer, second]
    assert utf8_size("".join(pieces)) > muse_glimmer.MAX_HELD
    assert read(pieces) == whole("".join(pieces)) == (
        THOUGHT + long + "\nmore", ANSWER, [("get_weather", PARIS)])
    # within the bound, vLLM's message (its classes, run on this text, give it): the
    # unterminated last block is all the reasoning
    short = "".join(pieces).replace(long, "")
    assert whole(short) == ("more", f"{ANSWER}", [("get_weather", PARIS)])


def test_state_stays_under_its_bound() -> None:
    """Held: the output (``MAX_HELD``) and what the left-to-right reading gave of it; read
    left to right: ``muse``'s bounds (an invoke, ``MAX_CALL``; framing, ``MAX_PEND``)."""
    bound = 2 * muse_glimmer.MAX_HELD + muse.MAX_CALL + 4 * muse.MAX_PEND
    for mode, pieces in [(mode, pieces) for mode in (0, ALONE) for pieces in (
            [SELF, EOM, f'{S}assistant to={W}{M}<atem:invoke name="x">'] + [WIDE] * 3000,
            [SELF] + [WIDE] * 3000, [WIDE] * 3000)]:
        state, largest = muse_glimmer.start_in(mode), 0
        for piece in pieces:
            _, _, _, state = muse_glimmer.feed_reasoning(state, piece, False, KEEP)
            writer = Writer()
            muse_glimmer.encode(state, writer)
            largest = max(largest, len(writer.out))
        assert state.streaming
        assert muse_glimmer.MAX_HELD < largest < bound


def test_a_state_over_its_bound_is_refused() -> None:
    writer = Writer()
    muse_glimmer.encode(muse_glimmer.GlimmerState("x" * (muse_glimmer.MAX_HELD + 1)), writer)
    with pytest.raises(ValueError, match="not a muse_glimmer state"):
        muse_glimmer.decode(Reader(bytes(writer.out)))


# --------------------------------------------------------------------------- registry


@pytest.mark.parametrize(("reasoning_parser", "tool_parser", "alone"), [
    ("muse_glimmer", "muse_glimmer", False),
    # the tool parser alone, or after another family's reasoning parser: its alone mode
    # (vLLM's MuseGlimmerToolParser on the whole text handed over: 9370-9381)
    (None, "muse_glimmer", True), ("muse", "muse_glimmer", True),
    ("qwen3", "muse_glimmer", True),
    # the muse_glimmer reasoning parser alone reads first, then the other tool parser reads
    # its content (as vLLM's abstract parser composes any two; muse's in its own alone mode)
    ("muse_glimmer", None, False), ("muse_glimmer", "muse", True),
    ("muse_glimmer", "hermes", False),
])
def test_pairing(reasoning_parser: str | None, tool_parser: str | None, alone: bool) -> None:
    """Every pairing vLLM accepts is served (none refused at start-up)."""
    assert parsers.pairing_error(reasoning_parser, tool_parser) is None
    request = ChatRequest.model_validate({"messages": [{"role": "user", "content": "Hi"}],
                                          "tools": [WEATHER]})
    settings = parsers.parser_settings(reasoning_parser, tool_parser, request,
                                       vocabulary("muse-spark-standin"))
    assert settings.tool_mode == (1 if alone else 0)  # (muse's ALONE_MODE and this one's)
    if tool_parser == "muse_glimmer":
        started = muse_glimmer.start_in(settings.tool_mode)
        assert bool(started.flags & muse_glimmer.ALONE) == alone
