"""MBZUAI K2 Horizon (parsers/formats/k2_horizon.py): ``k2_horizon``'s IFM calls in the
request's ``tool_call_format`` ("xml", "xml_typed", "json"), read whole with Hy4's held-block
machine; its reasoning parser's think markers chosen by ``reasoning_effort`` ("high",
"medium", "low"). Both modes are read when the stream starts and carried in its state.

The rules are vLLM 0.33's (``vllm/tool_parsers/k2_horizon_tool_parser.py``,
``vllm/reasoning/k2_horizon_reasoning_parser.py``, docs/vllm-compat/k2_horizon.md); the
recorded cases 9000-9115 replay them against the real server (test_conformance) and each rule
test below names the cases it restates. Split invariance on the machine (every form) and
through the HTTP app on ``k2h-standin`` (every marker a single token there; every mode drawn).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from derender.contract.requests import ChatRequest
from derender.core import parsers
from derender.core.errors import BadRequestError
from derender.core.parsers import reasoning, registry
from derender.core.parsers.formats import hy
from derender.core.parsers.formats import k2_horizon as k2h
from derender.core.parsers.tools import ToolContext, ToolFormat
from derender.core.state.codec import Reader, Writer
from derender_testing.chat_streams import post
from derender_testing.models import vocabulary
from derender_testing.recorded import load_case, numbered
from derender_testing.tool_streams import check_written, feed_all, requests, run_text
from tests.test_parser_dsml import TOOLS
from tests.test_parser_properties import PROPS

AUTO = ToolContext(tools=TOOLS)
NAMED = ToolContext(forced_name="get_weather", tools=TOOLS)
MODEL = "k2h-standin"
CALLS, END_CALLS, CALL, END_CALL = k2h.CALLS, k2h.END_CALLS, k2h.CALL, k2h.END_CALL
KEY, END_KEY, TYPE, END_TYPE = k2h.KEY, k2h.END_KEY, k2h.TYPE, k2h.END_TYPE
VALUE, END_VALUE = k2h.VALUE, k2h.END_VALUE
FORMS = {name: i for i, name in enumerate(k2h.CALL_FORMS)}


def machine(form: int) -> ToolFormat[Any]:
    """``k2h.FORMAT`` started in ``form`` (``feed_all`` starts with ``start()``)."""
    return dataclasses.replace(k2h.FORMAT, start=lambda: k2h.FORMAT.start_in(form))  # type: ignore[misc]


def parse(text: str, form: int = k2h.XML, context: ToolContext = AUTO
          ) -> tuple[str, list[tuple[str, Any]]]:
    content, calls = feed_all(machine(form), [text], context, names_first=True)
    return content, [(name, json.loads(args)) for name, args in calls]


def call(name: str, *params: tuple[str, str], nl: str = "\n") -> str:
    body = "".join(f"{nl}{KEY}{k}{END_KEY}{VALUE}{v}{END_VALUE}" for k, v in params)
    return f"{CALL}{name}{body}{nl}{END_CALL}"


def typed(name: str, *params: tuple[str, str, str]) -> str:
    body = "".join(f"{KEY}{k}{END_KEY}{TYPE}{t}{END_TYPE}{VALUE}{v}{END_VALUE}"
                   for k, t, v in params)
    return f"{CALL}{name}{body}{END_CALL}"


def block(*calls: str, nl: str = "\n") -> str:
    return CALLS + nl + nl.join(calls) + nl + END_CALLS


PARIS = call("get_weather", ("city", "Paris"), ("unit", "c"))
PARIS_CALL = ("get_weather", {"city": "Paris", "unit": "c"})
J_PARIS = CALL + '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}' + END_CALL


def test_a_whole_group_is_read() -> None:
    """[9000] a call; [9010] parallel; [9016] no arguments: {}; [9020] text before and after
    the group is the content; [9036] a second group is content; [9108] whitespace alone
    around the calls: none; [9110] whitespace before the group leads the text after it."""
    assert parse(block(PARIS)) == ("", [PARIS_CALL])
    assert parse(block(call("get_weather", ("city", "Zürich")), PARIS)) == (
        "", [("get_weather", {"city": "Zürich"}), PARIS_CALL])
    assert parse(f"{CALLS}{CALL}get_time{END_CALL}{END_CALLS}") == ("", [("get_time", {})])
    assert parse("Checking.\n" + block(PARIS) + "\nI will report back.") == (
        "Checking.\n\nI will report back.", [PARIS_CALL])
    second = block(call("get_time"))
    assert parse(block(PARIS) + "\n" + second) == ("\n" + second, [PARIS_CALL])
    assert parse("\n\n" + block(PARIS) + "\n") == ("", [PARIS_CALL])
    assert parse("\n\n" + block(PARIS) + "\nDone.") == ("\n\n\nDone.", [PARIS_CALL])


@pytest.mark.parametrize(("text", "context"), [
    (block(call("get_stock", ("symbol", "A"))), AUTO),  # [9022] not one of the tools
    (CALLS + PARIS + "\nand then\n" + call("get_time") + END_CALLS, AUTO),  # [9024]
    (block(call("get_weather", ("city", "A"), ("city", "B"))), AUTO),  # [9028] a key twice
    (block(typed("get_weather", ("city", "string", "Paris"))), AUTO),  # [9030] a type in xml
    (block(call("get weather", ("city", "P"))), AUTO),  # [9032] whitespace in the name
    ("Checking.\n" + CALLS + "\n" + PARIS + "\n", AUTO),  # [9034] never closed
    (f"Sure.\n{CALLS}\n{CALL}get_weather\n{KEY}city{END_KEY}\n{VALUE}", AUTO),  # [9038]
    (f"Sure.{CALLS}\n{CALL}get_wea", AUTO),  # [9040] cut off in the name
    (block(call("get_time")), NAMED),  # [9054] not the named tool
    (block(J_PARIS), AUTO),  # [9082] JSON in the xml form
    (block(), AUTO),  # no call
    ("\n" + block(call("get_weather", ("city", "é" * hy.MAX_BLOCK))), AUTO),  # too long to hold
])
def test_a_faulty_group_makes_the_whole_output_content(text: str, context: ToolContext) -> None:
    assert parse(text, context=context) == (text, [])


def test_names_are_stripped_and_values_typed_by_the_schema() -> None:
    """[9026] name stripped, a string value as written; [9012] typed by the schema; [9014]
    text that does not read as the type stays text."""
    spaced = (f"{CALLS} {CALL} get_weather {KEY} city {END_KEY} {VALUE} Paris {END_VALUE} "
              f"{END_CALL} {END_CALLS}")
    assert parse(spaced) == ("", [("get_weather", {"city": " Paris "})])
    assert parse(block(call(
        "set_config", ("count", "3"), ("ratio", "0.5"), ("enabled", "true"),
        ("tags", '["a", "b"]'), ("meta", '{"k": 1, "nested": {"ok": true}}'), ("note", "null"),
        ("label", " 42 "), ("level", "2"))))[1] == [("set_config", {
            "count": 3, "ratio": 0.5, "enabled": True, "tags": ["a", "b"],
            "meta": {"k": 1, "nested": {"ok": True}}, "note": None, "label": " 42 ",
            "level": 2})]
    assert parse(block(call(
        "set_config", ("count", "three"), ("ratio", "1e3"), ("enabled", "yes"),
        ("tags", "a, b"), ("meta", "{'k': 1}"), ("note", "None"), ("level", "2.0"))))[1] == [(
            "set_config", {"count": "three", "ratio": 1000, "enabled": "yes", "tags": "a, b",
                           "meta": "{'k': 1}", "note": "None", "level": 2.0})]


def test_the_typed_form() -> None:
    """[9066] the written type where the schema has several or none ("any": as written);
    [9068] strings as written; [9070] a pair without a type makes the output content."""
    text = block(typed(
        "set_config", ("count", "int", "3"), ("ratio", "float", "0.5"),
        ("enabled", "bool", "false"), ("tags", "array[string]", '["a"]'),
        ("note", "string", "null"), ("label", "integer", "42"), ("extra", "any", " x "),
        ("more", "integer", "7")))
    assert parse(text, k2h.XML_TYPED) == ("", [("set_config", {
        "count": 3, "ratio": 0.5, "enabled": False, "tags": ["a"], "note": "null",
        "label": "42", "extra": " x ", "more": 7})])
    weather = block(typed("get_weather", ("city", "string", " Paris "), ("unit", "string", "c")))
    assert parse(weather, k2h.XML_TYPED) == ("", [("get_weather",
                                                   {"city": " Paris ", "unit": "c"})])
    assert parse(block(PARIS), k2h.XML_TYPED) == (block(PARIS), [])


def test_the_json_form() -> None:
    """[9072] a call; [9074] parallel, "arguments" absent: {}; [9076] values kept unless the
    schema retypes their text; [9078] bad JSON, [9080] arguments not an object, [9112, 9114]
    a value JSON cannot write: the output is content."""
    assert parse(block(J_PARIS), k2h.JSON) == ("", [PARIS_CALL])
    assert parse("Checking.\n" + block(J_PARIS, CALL + '{"name": "get_time"}' + END_CALL),
                 k2h.JSON) == ("Checking.\n", [PARIS_CALL, ("get_time", {})])
    values = ('{"name": "set_config", "arguments": {"count": "3", "ratio": 2, "enabled": '
              '"true", "tags": "[\\"a\\"]", "meta": {"k": [1, 2]}, "note": null, "label": 42, '
              '"x": "\U0001F600"}}')
    assert parse(block(CALL + values + END_CALL), k2h.JSON) == ("", [("set_config", {
        "count": 3, "ratio": 2, "enabled": True, "tags": ["a"], "meta": {"k": [1, 2]},
        "note": None, "label": "42", "x": "😀"})])
    for body in ('{"name": "get_weather", ', '{"name": "get_weather", "arguments": ["Paris"]}',
                 '{"name": "get_weather", "arguments": {"city": NaN}}',
                 '{"name": "get_weather", "arguments": {"other": NaN}}'):
        text = "Hi. " + block(CALL + body + END_CALL)
        assert parse(text, k2h.JSON) == (text, [])


@pytest.mark.parametrize(("kwargs", "effort", "mode"), [
    ({}, None, 0), ({"reasoning_effort": "medium"}, None, 1),  # [9000, 9086]
    ({"reasoning_effort": "low"}, None, 2),  # [9092]
    ({"reasoning_effort": "medium"}, "low", 2),  # [9096] the top-level one first
    ({"reasoning_effort": "medium"}, "auto", 1),  # "auto" is unset (vLLM's merge_kwargs)
])
def test_the_effort_picks_the_reasoning_mode(kwargs: dict[str, Any], effort: str | None,
                                             mode: int) -> None:
    request = ChatRequest(messages=[{"role": "user", "content": "hi"}],
                          chat_template_kwargs=kwargs, reasoning_effort=effort)
    assert k2h.effort(parsers.template_kwargs(request)) == mode


@pytest.mark.parametrize(("kwargs", "effort", "message"), [
    ({}, "none", "Unsupported reasoning_effort 'none'. Supported values: high, medium, "
                 "low."),  # [9098]
    ({"reasoning_effort": "max"}, None, "Unsupported reasoning_effort 'max'. Supported values: "
                                        "high, medium, low."),  # [9100]
])
def test_an_unknown_effort_is_refused(kwargs: dict[str, Any], effort: str | None,
                                      message: str) -> None:
    request = ChatRequest(messages=[{"role": "user", "content": "hi"}],
                          chat_template_kwargs=kwargs, reasoning_effort=effort)
    with pytest.raises(BadRequestError, match="^" + message.replace(".", r"\.") + "$"):
        parsers.parser_settings("k2_horizon", None, request, vocabulary(MODEL))


@pytest.mark.parametrize(("extra", "refused"), [
    ({"tools": TOOLS}, True),  # [9084]
    ({}, False),  # [9102] no tools: calls are not read
    ({"tools": TOOLS, "tool_choice": "none"}, False),  # [9104]
])
def test_an_unknown_call_form_is_refused_where_calls_are_read(extra: dict[str, Any],
                                                              refused: bool) -> None:
    request = ChatRequest(messages=[{"role": "user", "content": "hi"}],
                          chat_template_kwargs={"tool_call_format": "yaml"}, **extra)
    if refused:
        with pytest.raises(BadRequestError, match=r"^Unsupported tool_call_format 'yaml'\. "
                                                  r"Supported values: json, xml, xml_typed\.$"):
            parsers.parser_settings("k2_horizon", "k2_horizon", request, vocabulary(MODEL))
    else:
        settings = parsers.parser_settings("k2_horizon", "k2_horizon", request,
                                           vocabulary(MODEL))
        assert settings.tool_format is None and settings.tool_mode == 0


THOUGHT, PLAIN = "The user wants Paris weather; call the tool.", "It is sunny in Paris, 22 °C."


@pytest.mark.parametrize(("mode", "text", "want"), [
    (0, k2h.EFFORTS["high"][0] + THOUGHT + "</ifm|think>\n\n" + PLAIN,
     (THOUGHT, "\n\n" + PLAIN)),  # [9004]
    (0, THOUGHT, ("", THOUGHT)),  # [9006] never ended: content
    (0, "Let me check.\n" + CALLS + "x", ("Let me check.\n", CALLS + "x")),  # [9018]
    (0, THOUGHT + "</ifm|think_fast>" + PLAIN,
     ("", THOUGHT + "</ifm|think_fast>" + PLAIN)),  # [9064] another mode's end is text
    (1, "<ifm|think_fast>" + THOUGHT + "</ifm|think_fast>" + PLAIN, (THOUGHT, PLAIN)),  # [9086]
    (1, THOUGHT + "</ifm|think>" + PLAIN, ("", THOUGHT + "</ifm|think>" + PLAIN)),  # [9090]
    (2, THOUGHT + "</ifm|think_faster>" + PLAIN, (THOUGHT, PLAIN)),  # [9092]
])
def test_the_reasoning_reads_its_modes_markers(mode: int, text: str,
                                               want: tuple[str, str]) -> None:
    fmt = reasoning.FORMATS["k2_horizon"]
    vocab = vocabulary(MODEL)
    for size in (0, 1, 3):
        pieces = [text] if size == 0 else [text[i:i + size] for i in range(0, len(text), size)]
        state = reasoning.start(fmt, vocab, None, True, mode=mode)
        assert state is not None
        got = ["", ""]
        for k, piece in enumerate(pieces):
            delta, state = reasoning.feed(fmt, state, piece, k == len(pieces) - 1, {})
            got[0] += delta.reasoning
            got[1] += delta.content
            writer = Writer()
            reasoning.encode(state, writer)
            assert reasoning.decode(state.reasoning, Reader(bytes(writer.out))) == state
            assert state.mode == mode  # carried
        assert tuple(got) == want


def test_a_state_carries_its_call_form() -> None:
    """The form read when the stream starts stays the state's: a JSON group read in "json"."""
    fmt = k2h.FORMAT
    assert fmt.start_in is not None
    state = fmt.start_in(k2h.JSON)
    text = block(J_PARIS)
    for piece in (text[:7], text[7:30]):
        _, _, state = fmt.feed(state, piece, False, AUTO)
        writer = Writer()
        fmt.encode(state, writer)
        state = fmt.decode(Reader(bytes(writer.out)))
        assert state.form == k2h.JSON
    _, calls, _ = fmt.feed(state, text[30:], True, AUTO)
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [PARIS_CALL]


def test_the_records() -> None:
    tool, thought = registry.TOOLS_BY_NAME["k2_horizon"], registry.REASONING_BY_NAME["k2_horizon"]
    assert tool.format is not None and tool.format.load() is k2h.FORMAT
    assert tool.mode is not None and tool.mode.load() is k2h.call_form
    assert thought.mode is not None and thought.mode.load() is k2h.effort
    assert reasoning.FORMATS["k2_horizon"].modes == tuple(k2h.EFFORTS.values())
    assert set(registry.MARKUP) >= {m for pair in k2h.EFFORTS.values() for m in pair} | {
        CALLS, END_CALLS, CALL, END_CALL, *k2h.ARG_MARKERS}
    assert parsers.pairing_error("k2_horizon", "hermes") is None
    assert parsers.pairing_error("qwen3", "k2_horizon") is None


TEXT_PIECES = [CALLS, END_CALLS, CALL, END_CALL, KEY, END_KEY, TYPE, END_TYPE, VALUE, END_VALUE,
               "get_weather", "city", "count", "Paris", "3", "\n", " ", "x", '{"name": ',
               '"get_time"}', '"arguments": {"city": "P"}}', "<ifm|", "string"]


@PROPS
@given(parts=st.lists(st.sampled_from(TEXT_PIECES), max_size=40), form=st.integers(0, 2),
       cuts=st.data())
@example(parts=[block(PARIS)], form=0, cuts=None)
@example(parts=["\n", CALLS, CALL, "x", END_CALL, END_CALLS, " ", "y"], form=0, cuts=None)
def test_any_text_reads_the_same_whole_and_split(parts: list[str], form: int,
                                                 cuts: st.DataObject | None) -> None:
    text = "".join(parts)
    fmt = machine(form)
    whole = feed_all(fmt, [text], AUTO, names_first=True)
    sizes = [cuts.draw(st.integers(1, 7))] if cuts is not None else list(range(1, 8))
    for size in sizes:
        pieces = [text[i:i + size] for i in range(0, len(text), size)] or [""]
        assert feed_all(fmt, pieces, AUTO, names_first=True) == whole
        state = fmt.start()
        for piece in pieces:
            _, _, state = fmt.feed(state, piece, False, AUTO)
            writer = Writer()
            fmt.encode(state, writer)
            reader = Reader(bytes(writer.out))
            assert fmt.decode(reader) == state and reader.pos == len(writer.out)
    content, calls = whole
    assert (content, calls) == (text, []) or calls or not text.strip()
    for _, arguments in calls:
        json.loads(arguments)


# --------------------------------------------------------------------------- split invariance


@st.composite
def outputs(draw: st.DrawFn, form: str, end: str
            ) -> tuple[str, list[tuple[str, dict[str, Any]]], bool]:
    thought = draw(st.sampled_from(["", "Hmm." + end, "Hmm.", "<ifm|think>Hmm." + end + "\n"]))
    text = draw(st.sampled_from(["", "", "Sure.\n", " x <b>\n", "\n"]))
    written: list[tuple[str, dict[str, Any]]] = []
    calls = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["get_weather", "get_time", "get_stock"]))
        params = {} if name == "get_time" else draw(st.dictionaries(
            st.sampled_from(["city", "unit"]),
            st.sampled_from(["Paris", "Zürich", "a\nb", "", " < ", "🌦"]), max_size=2))
        if form == "json":
            calls.append(CALL + json.dumps({"name": name, "arguments": params},
                                           ensure_ascii=False) + END_CALL)
        elif form == "xml_typed":
            calls.append(typed(name, *((k, "string", v) for k, v in params.items())))
        else:
            calls.append(call(name, *params.items(), nl=draw(st.sampled_from(["", "\n"]))))
        written.append((name, params))
    clean = bool(calls) and "get_stock" not in {n for n, _ in written}
    if calls:
        text += CALLS + "".join(calls) + END_CALLS
    change = draw(st.sampled_from(["", "", "cut", "trail", "dirty"]))
    if change == "cut":
        text = text[:draw(st.integers(0, len(text)))]
    elif change == "trail":
        text += "Anything else?"
    elif change == "dirty":
        text = text.replace(END_CALL, draw(st.sampled_from(["", END_KEY, "x" + END_CALL])), 1)
    return thought + text, written, clean and change in ("", "trail")


@PROPS
@given(data=st.data())
def test_k2_horizon_stream_folds_to_message(client_for: Any, data: st.DataObject) -> None:
    client = client_for(MODEL, "k2_horizon", "k2_horizon")
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS, 3),
                        label="chat_request")
    form = data.draw(st.sampled_from(k2h.CALL_FORMS), label="tool_call_format")
    effort = data.draw(st.sampled_from(["high", "medium", "low"]), label="effort")
    kwargs: dict[str, Any] = {"reasoning_effort": effort}
    if form != "xml" or data.draw(st.booleans()):
        kwargs["tool_call_format"] = form
    request["chat_template_kwargs"] = kwargs
    end = k2h.EFFORTS[effort][1]
    text, written, clean = data.draw(outputs(form, end), label="output")
    expected = run_text(client, MODEL, text, request, data)
    if clean:
        check_written(expected, [[n, p] for n, p in written], request)


@pytest.mark.parametrize(("number", "reasoning_parser", "tool_parser"), [
    (9086, "k2_horizon", None),  # medium: no call, so the reasoning parser's split alone
    (9096, "k2_horizon", None),  # the top-level effort
    (9072, None, "k2_horizon"),  # json: the output opens with the effort's end marker
    (9066, None, "k2_horizon"),  # xml_typed
])
def test_each_parser_alone_reads_its_part_as_recorded(client_for: Any, number: int,
                                                      reasoning_parser: str | None,
                                                      tool_parser: str | None) -> None:
    """Each parser alone, on a recorded case whose other part is none: the reasoning
    parser's split of an output without calls, the tool parser's calls (the reasoning
    parser's text before them being "" in the recording, the end marker stays in the
    content)."""
    case = load_case(numbered(number))
    [recorded] = case["calls"]
    request, message = recorded["request"], recorded["response"]["choices"][0]["message"]
    body = {k: v for k, v in request.items() if k != "model"}
    if tool_parser is None:
        body["chat_request"] = {k: v for k, v in body["chat_request"].items()
                                if k not in ("tools", "tool_choice")}
    got = post(client_for(MODEL, reasoning_parser, tool_parser),
               {"model": MODEL, **body})["choices"][0]["message"]
    if tool_parser is None:
        assert (got["reasoning"], got["content"]) == (message["reasoning"], message["content"])
        assert not got.get("tool_calls")
    else:
        assert got["reasoning"] is None
        assert [(c["function"]["name"], json.loads(c["function"]["arguments"]))
                for c in got["tool_calls"]] == [
            (c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message["tool_calls"]]
