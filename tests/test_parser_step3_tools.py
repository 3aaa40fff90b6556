"""Step 3's tool parser (``step3``: ``formats/step3.py``, Tencent Hy4's held-block machine with
Step 3's reader and stripped content as data).

The rules are vLLM 0.33's (``vllm/tool_parsers/step3_tool_parser.py``,
docs/vllm-compat/step3.md); the recorded cases 8600-8673 replay them against the real server
(test_conformance) and each rule test below names the cases it restates. Split invariance on
the machine and through the HTTP app on Qwen3's vocabulary (a stand-in), with the ``step3``
reasoning parser.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers import registry
from derender.core.parsers.formats import hy, step3
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer
from derender_testing.tool_streams import check_round_trips, feed_all, ids_of, requests, run_both
from tests.test_parser_dsml import TOOLS
from tests.test_parser_properties import END_THINK, IM_END, PROMPTS, PROPS, QWEN, enc

AUTO = ToolContext(tools=TOOLS)
CALLS, END_CALLS = step3.CALLS, step3.END_CALLS
CALL, END_CALL, SEP = step3.CALL, step3.END_CALL, step3.SEP
PARIS_ARGS = '{"city": "Paris", "unit": "c"}'


def invoke(name: str, *params: tuple[str, str]) -> str:
    body = "".join(f'\n<steptml:parameter name="{k}">{v}</steptml:parameter>'
                   for k, v in params)
    return f'<steptml:invoke name="{name}">{body}\n</steptml:invoke>'


def call(name: str, *params: tuple[str, str], kind: str = "function") -> str:
    return f"{CALL}{kind}{SEP}{invoke(name, *params)}{END_CALL}"


PARIS = call("get_weather", ("city", "Paris"), ("unit", "c"))
SINGLE = CALLS + PARIS + END_CALLS


def parse(text: str, context: ToolContext = AUTO, size: int = 0) -> tuple[str, list[list[str]]]:
    pieces = [text[i:i + size] for i in range(0, len(text), size)] if size else [text]
    return feed_all(step3.FORMAT, pieces or [""], context, names_first=True)


def test_the_record() -> None:
    tool = registry.TOOLS_BY_NAME["step3"]
    assert tool.format is not None and tool.format.load() is step3.FORMAT
    assert tool.reads is registry.Reads.ON_REQUEST and not tool.under_none
    assert {m.text for m in tool.markers} == {CALLS, END_CALLS, CALL, END_CALL, SEP}
    assert parsers.pairing_error("step3", "step3") is None
    assert parsers.pairing_error("qwen3", "step3") is None


@pytest.mark.parametrize("size", [0, 1, 3, 7])
def test_the_rules(size: int) -> None:
    """[8606, 8608] values typed by the schema's type; [8616] the text around the block joined
    and stripped (its opening whitespace, said before the block, kept: README); [8620] calls
    without "function", a separator or an invoke name skipped; [8622] no call read: the whole
    output; [8624, 8634] a call or the block without its end; [8626] a second block is
    content; [8628] an end before the block is text; [8632] a key twice."""
    typed = call("set_config", ("count", "3"), ("ratio", "2"), ("enabled", "True"),
                 ("tags", '["a", "b"]'), ("meta", '{"k": 1}'), ("note", "null"),
                 ("label", " 42 "), ("level", "2"))
    assert parse(CALLS + typed + END_CALLS, size=size) == ("", [[
        "set_config", '{"count": 3, "ratio": 2.0, "enabled": true, "tags": "[\\"a\\", \\"b\\"]",'
        ' "meta": "{\\"k\\": 1}", "note": "null", "label": "42", "level": "2"}']])
    fallbacks = call("set_config", ("count", "three"), ("ratio", "1e3"), ("enabled", "yes"),
                     ("count", " 7 "), ("extra", "null"))
    assert parse(CALLS + fallbacks + END_CALLS, size=size)[1] == [[
        "set_config", '{"count": 7, "ratio": 1000.0, "enabled": "yes", "extra": "null"}']]
    assert parse("  Checking \n" + SINGLE + "\n then done. \n", size=size) == (
        "  Checking \n\n then done.", [["get_weather", PARIS_ARGS]])
    skipped = (call("get_weather", ("city", "Rome"), kind="python")
               + f"{CALL}function{invoke('get_weather', ('city', 'Oslo'))}{END_CALL}"
               + "stray text" + PARIS + f"{CALL}function{SEP}<steptml:invoke>{END_CALL}")
    assert parse(CALLS + skipped + END_CALLS, size=size) == ("", [["get_weather", PARIS_ARGS]])
    for whole in ("Hi. " + CALLS + call("get_time", kind="tool") + END_CALLS + " Bye.",
                  "Hi. " + CALLS + CALL + "function" + SEP + invoke("get_weather") + END_CALLS,
                  "Sure. " + CALLS + PARIS):
        assert parse(whole, size=size) == (whole, [])
    second = CALLS + call("get_time") + END_CALLS
    assert parse(SINGLE + "\n" + second + "\n", size=size) == (
        second, [["get_weather", PARIS_ARGS]])
    assert parse("Done." + END_CALLS + " ok " + SINGLE, size=size) == (
        "Done." + END_CALLS + " ok", [["get_weather", PARIS_ARGS]])
    twice = call("get_weather", ("city", "Rome"), ("unit", ""), ("city", "Paris"))
    assert parse(CALLS + twice + END_CALLS, size=size)[1] == [
        ["get_weather", '{"city": "Paris", "unit": ""}']]


def test_a_forced_choice_reads_vllms_json_path() -> None:
    """[8652, 8654] "required": a JSON list, the model's markup no call; [8656, 8658] named:
    the output as written is the arguments; no content."""
    required = ToolContext(tools=TOOLS, required=True)
    named = ToolContext(forced_name="get_weather", tools=TOOLS)
    assert parse(SINGLE, required, 5) == ("", [])
    assert parse('[{"name": "get_weather", "parameters": {"city": "Paris"}}]', required, 5) == (
        "", [["get_weather", '{"city": "Paris"}']])
    assert parse('{"city": "Paris"}', named, 5) == ("", [["get_weather", '{"city": "Paris"}']])
    assert parse(SINGLE, named, 5) == ("", [["get_weather", SINGLE]])
    assert parse("[" + " " * hy.MAX_BLOCK + "]", required, 64) == ("", [])


def test_held_text_stays_bounded() -> None:
    """The block is held up to ``MAX_BLOCK`` bytes (one byte more: the output is content),
    whitespace that may end the content up to ``MAX_BLOCK_SPACE`` characters."""
    fill = "😀" * (hy.MAX_BLOCK // 4 - 60)
    text = "Hi" + " " * 4 * hy.MAX_BLOCK_SPACE + CALLS + call("get_weather", ("city", fill))
    state = step3.FORMAT.start()
    largest = 0
    for piece in [text[i:i + 5] for i in range(0, len(text), 5)]:
        _, calls, state = step3.FORMAT.feed(state, piece, False, AUTO)
        assert not calls
        writer = Writer()
        step3.FORMAT.encode(state, writer)
        largest = max(largest, len(writer.out))
        assert step3.FORMAT.decode(Reader(bytes(writer.out))) == state
    assert largest <= hy.MAX_BLOCK + 4 * hy.MAX_BLOCK_SPACE + 32
    assert parse(text + END_CALLS)[1] == [["get_weather", json.dumps({"city": fill},
                                                                     ensure_ascii=False)]]
    over = text + "😀" * 20 + END_CALLS
    assert parse(over) == (over, [])


TEXT_PIECES = [CALLS, END_CALLS, CALL, END_CALL, SEP, "function", invoke("get_weather"),
               '<steptml:parameter name="city">', "</steptml:parameter>", "</steptml:invoke>",
               "Paris", "3", "\n", " ", "<｜tool", "x", "😀"]


@PROPS
@given(parts=st.lists(st.sampled_from(TEXT_PIECES), max_size=40), cuts=st.data())
@example(parts=[" ", "x", " ", SINGLE, " ", "\n", "x", " "], cuts=None)
def test_any_text_reads_the_same_whole_and_split(parts: list[str],
                                                 cuts: st.DataObject | None) -> None:
    text = "".join(parts)
    whole = parse(text)
    sizes = [cuts.draw(st.integers(1, 7))] if cuts is not None else list(range(1, 8))
    for size in sizes:
        pieces = [text[i:i + size] for i in range(0, len(text), size)] or [""]
        assert feed_all(step3.FORMAT, pieces, AUTO, names_first=True) == whole
        check_round_trips(step3.FORMAT, pieces, AUTO)
    content, calls = whole
    assert content == text or calls
    for _, arguments in calls:
        json.loads(arguments)


@PROPS
@given(data=st.data())
def test_step3_stream_folds_to_message(client_for: Any, data: st.DataObject) -> None:
    client = client_for(QWEN, "step3", "step3")
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS),
                        label="chat_request")
    parts = data.draw(st.lists(st.sampled_from(
        [[END_THINK], "Hmm 😀", "\n", " ", "Sunny.", SINGLE, CALLS, END_CALLS, PARIS, "<｜"]),
        max_size=8), label="parts")
    flat = [p[0] if isinstance(p, list) else p for p in parts]
    finish = data.draw(st.sampled_from(["stop", "length"]), label="finish")
    ids = ids_of(flat, enc)
    if finish == "stop" or not ids:
        ids.append(IM_END)
        finish = "stop"
    run_both(client, QWEN, ids, finish, PROMPTS["open"][0], request, data)
