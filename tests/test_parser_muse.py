"""The ``muse`` (= ``musespark1x``) tool and reasoning parsers: one machine,
``formats/muse.py``. Expected values are vLLM 0.33's messages as recorded in
tests/fixtures/vllm-0.33 (cases 7400-7519, cited by number; the conformance replay checks every
one through the app) and, marked, the README compatibility rows where we differ on purpose.
Then: split invariance (any split of any output folds to the whole output's answer, markers as
single tokens and as text), state round trips, the bounds (``MAX_*``) and what happens past
them, and pairing. The model is ``muse-spark-standin`` (a stand-in vocabulary: GPT-2's with
Muse's framing tokens, ``<|start|>``/``<|message|>`` ids unverified).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers.formats import muse
from derender.core.parsers.registry import MARKUP
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer, utf8_size

SPELL = {marker: chr(0xE000 + MARKUP.index(marker)) for marker in MARKUP}
S, M, EOM, EOT = (SPELL[m] for m in (muse.START, muse.MESSAGE, muse.EOM, muse.EOT))
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}}
CONFIG = {"type": "function", "function": {"name": "set_config", "parameters": {
    "type": "object", "properties": {
        "count": {"type": "integer"}, "ratio": {"type": "number"}, "enabled": {"type": "boolean"},
        "tags": {"type": "array"}, "meta": {"type": "object"},
        "note": {"type": ["string", "null"]}, "label": {"type": "string"},
        "level": {"enum": [1, 2, 3]}}}}}
TOOLS = (WEATHER, CONFIG)
KEEP = ToolContext(spell=SPELL, tools=TOOLS)
NOKEEP = ToolContext(spell=SPELL, tools=TOOLS, keep=False)
REQUIRED = ToolContext(spell=SPELL, tools=TOOLS, required=True)
PLAIN = ToolContext(tools=TOOLS)  # no marker a single token: markers spelled as text
THOUGHT = "The user wants Paris weather; call the tool."


def first(rcpt: str, body: str, end: str = EOM) -> str:
    return f" to={rcpt}{M}{body}{end}"


def msg(rcpt: str, body: str, end: str = EOM) -> str:
    return f"{S}assistant to={rcpt}{M}{body}{end}"


def invoke(name: str, **params: str) -> str:
    return (f'<atem:invoke name="{name}">\n' + "".join(
        f'<atem:parameter name="{k}">{v}</atem:parameter>\n' for k, v in params.items())
        + "</atem:invoke>\n")


def call(rcpt: str, *invokes: str, end: str = "") -> str:
    return msg(rcpt, "<atem:function_calls>\n" + "".join(invokes) + "</atem:function_calls>",
               end)


W = "get_weather.get_weather"
SELF = first("self", THOUGHT)
SINGLE = call(W, invoke(W, city="Paris", unit="c"))
PARIS = '{"city": "Paris", "unit": "c"}'


def spelled(text: str) -> str:
    """``text`` with the markers written as text (a vocabulary without them as tokens)."""
    return text.translate({ord(SPELL[m]): m for m in (muse.START, muse.MESSAGE, muse.EOM,
                                                      muse.EOT)})


def read(pieces: list[str], context: ToolContext = KEEP, mode: int = 0, machine: Any = muse
         ) -> tuple[str, str, list[tuple[str, str]]]:
    """Reasoning, content and calls of the machine fed ``pieces``, the last one final; every
    state reached encodes and decodes to itself; a call comes whole, in one delta. ``mode``:
    ``muse.ALONE_MODE`` for the tool parser without its reasoning parser. ``machine``: the
    module (``muse``, or ``muse_glimmer``, which reads the same framing)."""
    state = machine.start_in(mode)
    reasoning = content = ""
    calls: list[tuple[str, str]] = []
    for k, piece in enumerate(pieces):
        more, out, deltas, state = machine.feed_reasoning(state, piece, k == len(pieces) - 1,
                                                          context)
        writer = Writer()
        machine.encode(state, writer)
        reader = Reader(bytes(writer.out))
        assert machine.decode(reader) == state and reader.pos == len(writer.out)
        reasoning, content = reasoning + more, content + out
        for delta in deltas:
            assert delta.index == len(calls) and delta.name is not None
            calls.append((delta.name, delta.arguments))
    return reasoning, content, calls


def whole(text: str, context: ToolContext = KEEP, mode: int = 0
          ) -> tuple[str, str, list[tuple[str, str]]]:
    return read([text], context, mode)


# --------------------------------------------------------------------------- vLLM's messages


def test_reasoning_then_a_call() -> None:  # 7400
    assert whole(SELF + SINGLE) == (THOUGHT, "", [("get_weather", PARIS)])


def test_values_are_typed_unless_the_schema_says_string() -> None:  # 7408, 7410
    typed = invoke("set_config.set_config", count="3", ratio="0.5", enabled="true",
                   tags='["a", "b"]', meta='{"k": 1}', note="null", label="42", level="2")
    assert whole(SELF + call("set_config.set_config", typed))[2] == [(
        "set_config", '{"count": 3, "ratio": 0.5, "enabled": true, "tags": ["a", "b"], '
        '"meta": {"k": 1}, "note": null, "label": "42", "level": 2}')]
    stringy = invoke("set_config.set_config", label='"quoted"', note="plain text",
                     count="three", meta="{not json", tags='"a"')
    assert whole(SELF + call("set_config.set_config", stringy))[2] == [(
        "set_config", '{"label": "\\"quoted\\"", "note": "plain text", "count": "three", '
        '"meta": "{not json", "tags": "a"}')]


def test_names_collapse_only_when_doubled_and_registered() -> None:  # 7402, 7438
    bare = call("get_weather", invoke("get_weather", city="Paris"))
    assert whole(SELF + bare)[2] == [("get_weather", '{"city": "Paris"}')]
    stock = call("get_stock.get_stock", invoke("get_stock.get_stock", symbol="ACME"))
    assert whole(SELF + stock)[2] == [("get_stock.get_stock", '{"symbol": "ACME"}')]


def test_channels() -> None:  # 7418, 7420, 7426, 7430, 7432
    assert whole(SELF + msg("commentary", "Let me check the weather.") + SINGLE) == (
        THOUGHT, "Let me check the weather.", [("get_weather", PARIS)])
    answer = msg("user", "It is sunny.", EOT)
    assert whole(SELF + call(W, invoke(W, city="Paris", unit="c"), end=EOM) + answer) == (
        THOUGHT, "It is sunny.", [("get_weather", PARIS)])
    assert whole(SELF + msg("self", "Second thought.") + answer)[:2] == (
        THOUGHT + "Second thought.", "It is sunny.")
    assert whole(f"{M}{THOUGHT}{EOM}" + answer)[:2] == (THOUGHT, "It is sunny.")
    assert whole(SELF + msg("developer", "internal note") + answer)[:2] == (THOUGHT,
                                                                            "It is sunny.")


def test_unframed_output_is_content_with_its_calls() -> None:  # 7428, 7436
    assert whole("It is sunny.") == ("", "It is sunny.", [])
    echoed = "Example: <atem:function_calls>\n" + invoke(W, city="Paris", unit="c")
    assert whole(SELF + msg("user", echoed, EOT)) == (THOUGHT, echoed,
                                                      [("get_weather", PARIS)])


def test_atem_in_reasoning_is_reasoning() -> None:  # 7434
    text = "I could write " + invoke(W, city="Paris")
    assert whole(first("self", text) + msg("user", "Sunny.", EOT)) == (text, "Sunny.", [])


def test_a_call_message_that_parses_no_call_is_content_as_written() -> None:
    # 7442 (no name), 7444 (no </atem:invoke>), 7458/7460 (cut off in the name, the arguments)
    for body in ("<atem:invoke>\n</atem:invoke>", f'<atem:invoke name="{W}">\n',
                 '<atem:invoke name="get_we', f'<atem:invoke name="{W}">\n'
                 '<atem:parameter name="city">Par'):
        tool = msg(W, "<atem:function_calls>\n" + body, "")
        assert whole(SELF + tool) == (THOUGHT, tool, [])


def test_calls_not_read_leave_the_framed_messages() -> None:  # 7466, 7472, 7510, 7518
    assert whole(SELF + SINGLE + EOM, NOKEEP) == (THOUGHT, SINGLE + EOM, [])
    assert whole(SELF + msg("developer", "note") + SINGLE, NOKEEP) == (THOUGHT, SINGLE, [])
    assert whole(SELF + msg("user", "Sunny.", EOT), NOKEEP) == (THOUGHT, "Sunny.", [])


def test_calls_not_read_a_long_call_message_is_framed_whatever_the_cuts() -> None:
    """As 7466 (the call message as written), with a body past ``MAX_RAW``: the framed text
    held before the ATEM markup is measured up to the markup, not to a chunk's end (a random
    draw found the whole output dropping what its split stream gave)."""
    text = SINGLE + WIDE * 300
    assert utf8_size(text) > muse.MAX_RAW
    assert whole(text, NOKEEP) == ("", text, [])
    for cut in range(len(text) + 1):
        assert read([text[:cut], text[cut:]], NOKEEP) == ("", text, []), cut


def test_body_before_the_first_call_message_stays_its_body() -> None:
    """README compatibility (7512): vLLM's message frames the commentary message too; its
    stream, and ours, cannot: the body went out before the call message came."""
    commentary = msg("commentary", "Let me check.")
    assert whole(SELF + commentary + SINGLE, NOKEEP) == (THOUGHT, "Let me check." + SINGLE, [])


def test_unclosed_parameter_and_reasoning_without_its_end() -> None:  # 7446, 7448
    broken = call(W, f'<atem:invoke name="{W}">\n<atem:parameter name="city">Paris\n'
                     "</atem:invoke>\n")
    assert whole(SELF + broken)[2] == [("get_weather", "{}")]
    assert whole(first("self", THOUGHT, "") + SINGLE) == (THOUGHT, "", [("get_weather", PARIS)])


def test_forced_choice_drops_whitespace_content() -> None:  # 7468
    assert whole(SELF + msg("commentary", "\n") + SINGLE, REQUIRED) == (
        THOUGHT, "", [("get_weather", PARIS)])
    assert whole(SELF + msg("commentary", "\n") + SINGLE)[1] == ""
    assert whole(SELF + msg("commentary", "\n"), NOKEEP)[1] == "\n"


def test_markers_written_as_text_read_alike() -> None:
    text = SELF + msg("commentary", "Hi.") + SINGLE + EOM + msg("user", "Done.", EOT)
    assert whole(spelled(text), PLAIN) == whole(text)


# --------------------------------------------------------------------------- any split

PIECES = [SELF, " to=self", M, EOM, EOT, S, "assistant", " to=", "user", "commentary",
          "developer", W, "get_time.get_time", "<atem:function_calls>", "<atem:invoke",
          ' name="get_weather.get_weather">', '<atem:parameter name="city">',
          "</atem:parameter>", "</atem:invoke>", "</atem:function_calls>", "Zürich 😀 ",
          " ", "\n", "t", "to", "o=x", "<", "{\"k\": 1}", SINGLE, invoke(W, city="Rome"),
          "n" * 150, "\U0001F600" * 300, "x" * 900]
"""Markup pieces, and long runs that cross the bounds (``MAX_PEND``, ``MAX_RAW``,
``MAX_CALL``, ``MAX_LEAD``)."""
texts = st.lists(st.sampled_from(PIECES), max_size=16).map("".join)
CONTEXTS = [KEEP, NOKEEP, REQUIRED]


@settings(max_examples=300, deadline=None)
@given(text=texts, data=st.data())
def test_any_split_reads_as_the_whole(text: str, data: st.DataObject) -> None:
    context = data.draw(st.sampled_from(CONTEXTS), label="context")
    mode = data.draw(st.sampled_from([0, muse.ALONE_MODE]), label="mode")
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=10), label="cuts"))
    bounds = [0, *cuts, len(text)]
    pieces = [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    assert read(pieces, context, mode) == whole(text, context, mode)
    plain = ToolContext(tools=TOOLS, keep=context.keep, required=context.required)
    assert read([spelled(p) for p in pieces], plain, mode) == whole(spelled(text), plain, mode)


# --------------------------------------------------------------------------- bounds

WIDE = "\U0001F600"


def _largest_state(pieces: list[str], context: ToolContext = KEEP, mode: int = 0) -> int:
    state, largest = muse.start_in(mode), 0
    for piece in pieces:
        _, _, _, state = muse.feed_reasoning(state, piece, False, context)
        writer = Writer()
        muse.encode(state, writer)
        largest = max(largest, len(writer.out))
    return largest


def test_a_long_call_keeps_its_complete_parameters() -> None:
    """README compatibility: an invoke is held for ``MAX_CALL`` bytes; past them its arguments
    are the parameters complete within them, the rest skipped; the state stays bounded."""
    long = invoke(W, city="Paris", unit=WIDE * 3000)
    text = SELF + call(W, long, invoke(W, city="Rome"))
    pieces = [text[i:i + 7] for i in range(0, len(text), 7)]
    assert read(pieces) == whole(text) == (THOUGHT, "", [
        ("get_weather", '{"city": "Paris"}'), ("get_weather", '{"city": "Rome"}')])
    limit = muse.MAX_CALL + muse.MAX_RAW + 4 * muse.MAX_PEND + muse.MAX_SPACE + 128
    assert _largest_state(pieces) < limit


def test_the_fallback_text_is_held_for_max_raw_bytes() -> None:
    """README compatibility: a call message that never parses is content as written only if
    it fits ``MAX_RAW`` bytes; past them its text is dropped (the stream could not hold it)."""
    short = msg(W, "<atem:function_calls>\n" + WIDE * 10, "")
    assert whole(SELF + short)[1] == short
    long = msg(W, "<atem:function_calls>\n" + WIDE * 600, "")
    assert utf8_size(long) > muse.MAX_RAW
    assert whole(SELF + long) == (THOUGHT, "", [])


def test_text_before_the_first_header_is_held_for_max_lead_bytes() -> None:
    """README compatibility: past ``MAX_LEAD`` bytes, text before any header is content even
    if a header follows (vLLM drops it then)."""
    lead = WIDE * (muse.MAX_LEAD // 4 + 1)
    # (the space before the first header is text before it too)
    assert whole(lead + SELF + SINGLE) == (THOUGHT, lead + " ", [("get_weather", PARIS)])
    assert whole("x" * 100 + SELF + SINGLE) == (THOUGHT, "", [("get_weather", PARIS)])


def test_a_recipient_longer_than_max_pend_is_not_read() -> None:
    """README compatibility: a header's ``to=RECIPIENT`` is held for ``MAX_PEND`` characters."""
    name = "n" * (muse.MAX_PEND + 10)
    assert whole(SELF + call(name, invoke(name)))[2] == []
    name = "n" * (muse.MAX_PEND - 20)
    assert whole(SELF + call(name, invoke(name)))[2] == [(name, "{}")]


def test_state_stays_small_over_a_long_stream() -> None:
    pieces = [SELF[:5], SELF[5:], msg("user", "")[:-1]] + ["Zürich 東京 😀 "] * 5000
    assert _largest_state(pieces) < 64
    pieces = [SELF, S, "assistant to=", "x" * 4, M, "<atem:function_calls>"]
    pieces += ["<atem:parameter"] * 2000
    assert _largest_state(pieces) < muse.MAX_CALL + muse.MAX_RAW + 64


# --------------------------------------------------------------------------- the tool parser alone

ALONE = muse.ALONE_MODE


def test_alone_the_reasoning_is_dropped_and_the_bodies_are_content() -> None:  # 7490, 7492
    assert whole(SELF + SINGLE, mode=ALONE) == ("", "", [("get_weather", PARIS)])
    text = SELF + msg("commentary", "Let me check.") + SINGLE
    assert whole(text, mode=ALONE) == ("", "Let me check.", [("get_weather", PARIS)])
    text = SELF + SINGLE + EOM + msg("user", "It is sunny.", EOT)  # 7498
    assert whole(text, mode=ALONE) == ("", "It is sunny.", [("get_weather", PARIS)])


def test_alone_without_a_call_the_output_is_content_as_written() -> None:
    answer = SELF + msg("user", "It is sunny.", EOT)  # 7494
    assert whole(answer, mode=ALONE) == ("", answer, [])
    echoed = first("self", "I could write " + SINGLE[SINGLE.index(M) + 1:]) + msg(
        "user", "Sunny.", EOT)  # 7500: an invoke in the reasoning is no call
    assert whole(echoed, mode=ALONE) == ("", echoed, [])
    cut = SELF + SINGLE[:-60]  # 7502
    assert whole(cut, mode=ALONE) == ("", cut, [])
    for context in (NOKEEP, ToolContext(spell=SPELL, keep=False)):  # 7504, 7506
        assert whole(SELF + SINGLE, context, ALONE) == ("", SELF + SINGLE, [])
    # with a header, an invoke in an answer's body is no call (vLLM's tool parser reads tool
    # bodies only); without any, the output is read whole, and is the content (its
    # ``_extract_content``: no framing at all, the whole text; 7428 with both parsers)
    echo = msg("user", "<atem:function_calls>" + invoke(W, city="Paris", unit="c")
               + "</atem:function_calls>", EOT)
    assert whole(echo, mode=ALONE) == ("", echo, [])
    bare = "Sure. " + invoke(W, city="Paris", unit="c")
    assert whole(bare, mode=ALONE) == ("", bare, [("get_weather", PARIS)])


def test_alone_the_output_is_held_for_max_whole_bytes() -> None:
    """README compatibility (muse tool parser alone): past ``MAX_WHOLE`` bytes with no call
    the output so far is content and the rest follows as written, calls still read."""
    long = msg("user", WIDE * (muse.MAX_WHOLE // 8), EOT)
    assert read([SELF, long], mode=ALONE)[1] == SELF + long  # within the bound: held
    longer = msg("user", WIDE * (muse.MAX_WHOLE // 4), EOT)
    assert utf8_size(SELF + longer) > muse.MAX_WHOLE
    _, content, calls = read([SELF, longer, SINGLE], mode=ALONE)
    assert content == SELF + longer + SINGLE and calls == [("get_weather", PARIS)]
    assert _largest_state([SELF, longer, "x" * 3000], mode=ALONE) < 2 * muse.MAX_WHOLE + 64


def test_alone_the_bound_is_a_place_in_the_output_not_a_chunk() -> None:
    """Whether a call parsed within ``MAX_WHOLE`` is decided at that byte of the output, so
    every cut reads alike (a random draw found a cut that gave the output as written while
    the whole output read its call: the bound was measured only at a chunk's end)."""
    within = WIDE * 260 + SINGLE  # lead text past MAX_LEAD, the call within MAX_WHOLE
    past = WIDE * 520 + SINGLE  # the call's message ends past MAX_WHOLE
    assert utf8_size(within) <= muse.MAX_WHOLE < utf8_size(WIDE * 520)
    for text in (within, past):
        answer = whole(text, mode=ALONE)
        assert answer[2] == [("get_weather", PARIS)]
        for cut in range(len(text) + 1):
            assert read([text[:cut], text[cut:]], mode=ALONE) == answer, cut
    assert whole(past, mode=ALONE)[1] == past  # no call within the bound: as written


def test_alone_states_are_refused_where_they_cannot_be() -> None:
    writer = Writer()
    muse.encode(muse.MuseState(flags=muse.Flag.CALLED), writer)
    with pytest.raises(ValueError, match="not a muse state"):
        muse.decode(Reader(bytes(writer.out)))


# --------------------------------------------------------------------------- registry


@pytest.mark.parametrize(("reasoning_parser", "tool_parser", "refused"), [
    ("muse", "muse", None), ("musespark1x", "musespark1x", None), ("muse", None, None),
    (None, "muse", None), ("qwen3", "musespark1x", None), ("muse", "hermes", None),
    ("muse", "cohere_command4", "cannot be combined"),
])
def test_pairing(reasoning_parser: str | None, tool_parser: str | None,
                 refused: str | None) -> None:
    error = parsers.pairing_error(reasoning_parser, tool_parser)
    assert (error is None) if refused is None else (error is not None and refused in error)
