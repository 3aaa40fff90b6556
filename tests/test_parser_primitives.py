"""The shared parser machinery: primitives.py's rules and the named phases and flags.

Expected values are worked out by hand from each rule's statement (and JSON's grammar), not
taken from the code's output; the machines' behaviour is the other parser tests' business.
"""

from __future__ import annotations

import json

from derender.core.parsers import engine
from derender.core.parsers.formats import gemma4, mistral, qwen3_coder
from derender.core.parsers.json_value import ValueScan
from derender.core.parsers.primitives import (
    Run,
    bounded,
    escape,
    member,
    scan_bits,
    split_space,
    unpack_scan,
    unread,
)
from derender.core.parsers.tools import ToolCallDelta


def test_split_space_holds_trailing_whitespace_up_to_its_bound() -> None:
    assert split_space("ab \n", 8) == ("ab", " \n")
    assert split_space("ab", 8) == ("ab", "")
    assert split_space("   ", 8) == ("", "   ")
    assert split_space("a" + " " * 10, 4) == ("a" + " " * 6, " " * 4)  # the rest is said
    assert split_space("a  ", 0) == ("a  ", "")  # nothing held


def test_unread_holds_what_may_begin_a_marker_until_the_end() -> None:
    assert unread("text <tool", ("<tool_call>",), False) == ("text ", "<tool")
    assert unread("text <tool", ("<tool_call>",), True) == ("text <tool", "")
    assert unread("text <b", ("<tool_call>",), False) == ("text <b", "")


def test_bounded_names_are_none_past_their_bound() -> None:
    assert bounded("get_", "weather", 11) == "get_weather"
    assert bounded("get_", "weather", 10) is None


def test_members_and_string_bodies_are_json() -> None:
    assert member("city", True) == '{"city": '
    assert member("city", False) == ', "city": '
    assert member("city", True, brace=False) == '"city": '
    assert member('a"é', False) == ', "a\\"é": '
    assert escape('say "hi"\n\té') == 'say \\"hi\\"\\n\\té'
    text = '{"k": "' + escape('x"\\\n') + '"}'
    assert json.loads(text) == {"k": 'x"\\\n'}


def test_a_scan_packs_into_bits_1_to_4_and_back() -> None:
    scan = ValueScan(started=True, depth=3, in_string=True, escaped=False, scalar=True)
    assert scan_bits(scan) == 2 | 4 | 16
    assert unpack_scan(scan_bits(scan) | 1, 3) == scan  # bit 0 is the format's own
    assert scan_bits(ValueScan()) == 0


class _Probe(Run):
    def __init__(self) -> None:
        self.flags, self.acc, self.calls, self.deltas = 0, "", 0, []


def test_a_run_accumulates_a_bounded_name_and_emits_a_call() -> None:
    run = _Probe()
    run.accumulate("get_", 8, 4)
    run.accumulate("wea", 8, 4)
    assert (run.acc, run.has(4)) == ("get_wea", False)
    run.accumulate("ther", 8, 4)  # 11 characters: no name
    assert (run.acc, run.has(4)) == ("", True)
    run.accumulate("more", 8, 4)  # ignored until the machine clears the flag
    assert run.acc == ""
    run.set(4, False)
    run.new_call("f", "{")
    run.arguments("")
    run.arguments('"a": 1}')
    assert run.deltas == [ToolCallDelta(0, "f", "{"), ToolCallDelta(0, None, '"a": 1}')]
    assert run.calls == 1


def test_named_phases_and_flags_keep_the_encoded_numbers() -> None:
    # the numbers the states were encoded with before they were named (commit 609459c)
    assert [int(p) for p in engine.Phase] == list(range(8))  # Inkling's HEADER and SPAN: 6, 7
    assert [p.name.lower() for p in engine.Phase] == list(engine.PHASES)
    # (and the flags added after it, each the next bit: PLaMo 3's CALL_OPEN, issue 19;
    # Inkling's MUTE, issue 20)
    assert [int(f) for f in engine.Flag] == [1 << i for i in range(16)]
    assert engine.FLAG_BITS == 16
    assert [int(e) for e in engine.Event] == [1, 2, 4, 8, 16, 32]  # Inkling's SHOW: 32
    assert [int(s) for s in engine.DsmlSub] == [0, 1, 2, 3]
    assert [int(s) for s in engine.GlmSub] == [0, 1, 2, 3, 4]
    assert [m.name.lower() for m in qwen3_coder.Mode] == [
        "content", "preamble", "name", "gap", "pname", "pvalue", "between"]
    assert [int(f) for f in qwen3_coder.Flag] == [1, 2, 4, 8, 16, 32, 64]
    assert [m.name.lower() for m in gemma4.Mode] == [
        "content", "pre", "name", "key", "gap", "str", "bare", "nest", "skip"]
    assert [int(f) for f in gemma4.Flag] == [1, 2, 4, 8, 16, 32, 64, 128]  # SPILL: 128
    assert [int(m) for m in mistral.Mode] == list(range(13))
    assert mistral.STRING_ARGS == 12 and mistral.LIST_START == 6
