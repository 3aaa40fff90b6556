"""The ``mistral`` tool-call format and the ``mistral`` reasoning parser (vLLM 0.33's
MistralParser with a tokenizer that has ``[ARGS]`` and ``[THINK]``): the rules, the call ids,
the state codec and split invariance through the HTTP app (``mistral-tools``, the derived
tokenizer of derender_testing/tokenizer_variants.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers import reasoning
from derender.core.parsers.formats import mistral
from derender.core.parsers.primitives import MAX_LEADING_SPACE
from derender.core.parsers.tools import ToolContext
from derender_testing.models import tokenizer
from derender_testing.tool_streams import (
    check_round_trips,
    check_written,
    feed_all,
    ids_of,
    requests,
    run_both,
    split,
)
from tests.test_parser_properties import PROPS, json_strings, json_text, json_values

MODEL = "mistral-tools"
TOOL_CALLS, ARGS, THINK, END_THINK, EOS = 32000, 32001, 32002, 32003, 2
MARKERS = {TOOL_CALLS: "[TOOL_CALLS]", ARGS: "[ARGS]", THINK: "[THINK]", END_THINK: "[/THINK]"}
CONTEXT = ToolContext()
"""Markers as their own text (where the vocabulary has them, as stand-ins: same rules)."""
TOOL_NAMES = ("get_weather", "create_note", "search_web")
TOOLS = [{"type": "function", "function": {
    "name": name, "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
    for name in TOOL_NAMES]
MESSAGES = [{"role": "user", "content": "Weather in Zürich? 🌦"}]


def run(text: str, size: int = 0, context: ToolContext = CONTEXT
        ) -> tuple[str, list[tuple[str, str]]]:
    """Content and calls of ``text`` fed in pieces of ``size`` (0: at once), then finished."""
    content, calls = feed_all(mistral.FORMAT, [*split(text, size), ""], context)
    return content, [(name, args) for name, args in calls]


RULES = [
    ('[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', "", [("get_weather", '{"city": "Paris"}')]),
    ('Sure.[TOOL_CALLS]get_weather{"city": "Paris"}', "Sure.",
     [("get_weather", '{"city": "Paris"}')]),
    (' \n [TOOL_CALLS]a[ARGS]{"x": [1, {}]}[TOOL_CALLS]b[ARGS]{"t": "a}[\\""}', "",
     [("a", '{"x": [1, {}]}'), ("b", '{"t": "a}[\\""}')]),
    ('[TOOL_CALLS] get_weather [ARGS] {"city": "Paris"} ', "",
     [("get_weather", '{"city": "Paris"}')]),
    ('[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"} and more text', "",
     [("get_weather", '{"city": "Paris"}')]),
    ("[TOOL_CALLS]get_weather", "", [("get_weather", "{}")]),
    ("[TOOL_CALLS]get_weather[ARGS]  ", "", [("get_weather", "{}")]),
    ("[TOOL_CALLS]a[TOOL_CALLS]b[ARGS]{}", "", [("a", "{}"), ("b", "{}")]),
    ("[TOOL_CALLS]g[ARGS]not json  ", "", [("g", "not json")]),
    ('[TOOL_CALLS]g[ARGS]{"c": "Par', "", [("g", '{"c": "Par')]),
    ('[TOOL_CALLS][ARGS]{"n": 5}[TOOL_CALLS][ARGS] [TOOL_CALLS]', "", [("", '{"n": 5}')]),
    ("The weather is [sunny], {22 °C}.", "The weather is [sunny], {22 °C}.", []),
    ("  \n", "  \n", []),
]


@pytest.mark.parametrize(("text", "content", "calls"), RULES)
def test_rules_in_any_pieces(text: str, content: str, calls: list[tuple[str, str]]) -> None:
    for size in (0, 1, 2, 3, 7):
        assert run(text, size) == (content, calls), size


def test_holdbacks_are_bounded() -> None:
    state = mistral.FORMAT.start()
    _, _, state = mistral.FORMAT.feed(state, " " * 300, False, CONTEXT)
    assert state.held == ""  # more whitespace than MAX_LEADING_SPACE is content
    _, deltas, state = mistral.FORMAT.feed(mistral.FORMAT.start(),
                                           "[TOOL_CALLS]" + "n" * 600, False, CONTEXT)
    # README: of a name longer than MAX_NAME, the first MAX_NAME + 1 characters are the name
    name = "n" * (mistral.MAX_NAME + 1)
    assert deltas and deltas[0].name == name and state.held == ""
    text = "[TOOL_CALLS]" + "n" * 600 + '[ARGS]{"a": 1}'
    whole = feed_all(mistral.FORMAT, [text, ""], CONTEXT)
    assert whole[1][0][0] == name
    for cut in range(len(text) + 1):
        assert feed_all(mistral.FORMAT, [text[:cut], text[cut:], ""], CONTEXT) == whole, cut
    _, _, state = mistral.FORMAT.feed(state, "x" + " " * 300, False, CONTEXT)
    assert len(state.held) <= mistral.MAX_TRAILING_SPACE


def test_whitespace_alone_before_a_call_is_dropped_up_to_its_bound_whatever_the_cuts() -> None:
    """README row (content before the calls): whitespace alone before a call is dropped up to
    ``MAX_LEADING_SPACE`` characters; a longer run is content, streamed or not."""
    call = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
    for size, content in ((MAX_LEADING_SPACE, ""), (MAX_LEADING_SPACE + 1, None)):
        text = " " * size + call
        whole = feed_all(mistral.FORMAT, [text, ""], CONTEXT)
        assert whole[0] == (" " * size if content is None else content)
        for cut in range(size + 13):
            assert feed_all(mistral.FORMAT, [text[:cut], text[cut:], ""], CONTEXT) == whole, cut


def test_call_ids_are_mistral_form_and_deterministic() -> None:
    ids = {parsers.tool_call_id("req", c, i, "mistral") for c in range(3) for i in range(50)}
    assert len(ids) == 150
    assert all(len(i) == 9 and i.isalnum() and i.isascii() for i in ids)
    assert parsers.tool_call_id("req", 0, 1, "mistral") == mistral.call_id("req", 0, 1)
    assert parsers.tool_call_id("req", 0, 1, "hermes").startswith("chatcmpl-tool-")


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(st.sampled_from(
    ["[TOOL_CALLS]", "[ARGS]", "{", "}", "[", "]", '"', "\\", " ", "\n", "get_weather", "x",
     '{"city": "Par', "is\"}", "Sure."]), max_size=12))
def test_every_reached_state_round_trips(pieces: list[str]) -> None:
    check_round_trips(mistral.FORMAT, pieces, CONTEXT)


# --------------------------------------------------------------------------- reasoning

SPELL = {m: m for m in ("[THINK]", "[/THINK]", "[TOOL_CALLS]")}
REASONING_RULES = [
    ("[THINK]Let me think.  \n[/THINK]\n\nThe answer.", "Let me think.", "\n\nThe answer."),
    ("No think here.[/THINK] more", "", "No think here. more"),
    ("[THINK]a [THINK]b[/THINK]c[THINK]d[/THINK]e", "a bd", "ce"),
    ("[THINK]plan  [TOOL_CALLS]get[ARGS]{}", "plan", "[TOOL_CALLS]get[ARGS]{}"),
    ("[THINK]unfinished  ", "unfinished", ""),
    ("[THINK]x" + " " * 300 + "y[/THINK]", "x" + " " * 300 + "y", ""),
]


@pytest.mark.parametrize(("text", "thought", "content"), REASONING_RULES)
def test_reasoning_rules(text: str, thought: str, content: str) -> None:
    fmt = reasoning.FORMATS["mistral"]
    for size in (1, 2, 5, len(text)):
        state: reasoning.ReasoningState | None = reasoning.ReasoningState(False)
        assert state == reasoning.start(fmt, None, None, True)  # type: ignore[arg-type]
        assert state is not None
        got_r = got_c = ""
        pieces = [text[i:i + size] for i in range(0, len(text), size)]
        for k, piece in enumerate([*pieces, ""]):
            delta, state = reasoning.feed(fmt, state, piece, k == len(pieces), SPELL)
            got_r += delta.reasoning
            got_c += delta.content
            assert len(state.held) <= reasoning.MAX_HELD_SPACE + len("[/THINK]")
        assert (got_r, got_c) == (thought, content), size


# --------------------------------------------------------------------------- split invariance


def enc(text: str) -> list[int]:
    """Text after a marker, without the ``▁`` this tokenizer prepends to a segment."""
    return list(tokenizer(MODEL).encode("\x00" + text, add_special_tokens=False).ids)[2:]


PROMPT = [1, 733, 16289, 28793, 816, 1223, 297, 28705]
"""``<s>[INST] Weather in`` (any prompt will do: mistral's parsers do not read it)."""


@pytest.fixture(scope="module")
def both(client_for: Any) -> Any:
    return client_for(MODEL, "mistral", "mistral")


@st.composite
def outputs(draw: st.DrawFn) -> tuple[list[int | str], list[tuple[str, Any]], bool]:
    """(parts, calls written, clean: exactly those calls are read)."""
    parts: list[int | str] = []
    if draw(st.booleans()):
        parts += [THINK, draw(st.sampled_from(["Let me think.", "Zürich 東京 🌦  ", " {x} \n"]))]
        if draw(st.integers(0, 4)):
            parts.append(END_THINK)
    lead = draw(st.sampled_from(["", "", "", "\n\n", "Sure — 🌦 checking.\n", "[x] {y}"]))
    if lead:
        parts.append(lead)
    written: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(TOOL_NAMES))
        args = draw(st.dictionaries(st.sampled_from(["q", "city", "ß", "k\"q"]),
                                    json_values(json_strings), max_size=3))
        written.append((name, args))
        parts += [TOOL_CALLS, name]
        spelled = draw(json_text(args))
        if draw(st.booleans()):
            parts += [ARGS, spelled]
        else:
            parts[-1] += spelled
    junk = draw(st.sampled_from(["", "", "", " Hope that helps!", " {oops}", "[/THINK]"]))
    if junk == "[/THINK]":
        parts.append(END_THINK)
    elif junk:
        parts.append(junk)
    cut = draw(st.integers(0, 6)) == 0
    return parts, written, not cut and junk in ("", " Hope that helps!", "[/THINK]")


def chat_requests() -> st.SearchStrategy[dict[str, Any]]:
    return requests(MESSAGES, TOOLS, reasoning_off=4)


@settings(PROPS, max_examples=150)
@given(data=st.data())
def test_mistral_stream_folds_to_message(both: Any, data: st.DataObject) -> None:
    request = data.draw(chat_requests(), label="chat_request")
    parts, written, clean = data.draw(outputs(), label="output")
    ids = ids_of(parts, enc)
    finish = data.draw(st.sampled_from(["stop", "stop", "length"]), label="finish")
    if not clean and ids:
        ids = ids[:data.draw(st.integers(1, len(ids)), label="cut")]
    if finish == "stop":
        ids.append(EOS)
    if not ids:
        ids, finish = [EOS], "stop"
    expected = run_both(both, MODEL, ids, finish, PROMPT, request, data)
    calls = expected["message"].get("tool_calls") or []
    assert all(len(c["id"]) == 9 and c["id"].isalnum() for c in calls)
    if clean:
        check_written(expected, [(name, typed_as_string(args)) for name, args in written],
                      request)


def typed_as_string(arguments: Any) -> Any:
    """The arguments as vLLM 0.33 types them for TOOLS' one parameter ``q`` (type string;
    fixture 1506, ``ParserEngine._coerce_value``): a number, boolean or null written for it
    becomes its JSON text, a string; strings, objects and lists stay."""
    if not isinstance(arguments, dict) or "q" not in arguments:
        return arguments
    value = arguments["q"]
    if isinstance(value, str | dict | list):
        return arguments
    return {**arguments, "q": json.dumps(value)}


# --------------------------------------------------------------------------- the older grammar

OLDER = "mistral-tools-v3"
OLDER_CONTEXT = ToolContext(spell={"[TOOL_CALLS]": "\ue0f0", "[ARGS]": "[ARGS]"})
"""A vocabulary with ``[TOOL_CALLS]`` (its stand-in) but not ``[ARGS]``."""


def run_older(text: str, size: int = 0, context: ToolContext = OLDER_CONTEXT
              ) -> tuple[str, list[tuple[str, str]]]:
    """``run`` with the older grammar's stand-in marker, arguments normalised as JSON."""
    content, calls = run(text.replace("[TOOL_CALLS]", "\ue0f0"), size, context)
    return content, [(name, json.dumps(json.loads(args))) for name, args in calls]


OLDER_RULES = [
    ('[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}}]', "", [("a", '{"x": 1}')]),
    ('Sure. [TOOL_CALLS] [{"name": "a", "arguments": {"x": "}]"}}, {"arguments": {}, '
     '"name": "b"}, 7, {"name": "c"}] and text [TOOL_CALLS][{"name": "d", "arguments": {}}]',
     "Sure. ", [("a", '{"x": "}]"}'), ("b", "{}"), ("c", "{}")]),
    ('[TOOL_CALLS][TOOL_CALLS]{"name": "a", "arguments": {"x": [1, {"y": null}]}} more', "",
     [("a", '{"x": [1, {"y": null}]}')]),
    ("Hi [TOOL_CALLS]not json", "Hi not json", []),
    ('[{"name": "a", "arguments": {}}]', '[{"name": "a", "arguments": {}}]', []),
]


@pytest.mark.parametrize(("text", "content", "calls"), OLDER_RULES)
def test_older_grammar_rules(text: str, content: str, calls: list[tuple[str, str]]) -> None:
    for size in (0, 1, 2, 3, 7):
        assert run_older(text, size) == (content, calls), size


def test_older_grammar_reads_unmarked_json_when_forced() -> None:
    text = '  [{"name": "a", "arguments": {"x": 1}}]'
    for context in (ToolContext(required=True, spell=OLDER_CONTEXT.spell),
                    ToolContext(forced_name="a", spell=OLDER_CONTEXT.spell)):
        for size in (0, 1, 4):
            assert run_older(text, size, context) == ("", [("a", '{"x": 1}')])


def test_older_grammar_is_the_vocabularys() -> None:
    assert mistral.older_grammar(lambda m: m == "[TOOL_CALLS]")
    assert not mistral.older_grammar(lambda m: m in ("[TOOL_CALLS]", "[ARGS]"))
    assert not mistral.older_grammar(lambda m: False)


@pytest.fixture(scope="module")
def older(client_for: Any) -> Any:
    return client_for(OLDER, None, "mistral")


@st.composite
def older_outputs(draw: st.DrawFn) -> tuple[list[int | str], list[tuple[str, Any]], bool]:
    lead = draw(st.sampled_from(["", "", "\n\n", "Sure — 🌦 checking.\n", "[x] {y}"]))
    parts: list[int | str] = [lead] if lead else []
    written: list[tuple[str, Any]] = []
    objects = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(TOOL_NAMES))
        args = draw(st.dictionaries(st.sampled_from(["q", "city", "ß", "k\"q"]),
                                    json_values(json_strings), max_size=3))
        written.append((name, args))
        spelled = draw(json_text(args))
        reordered = f'{{"arguments": {spelled}, "name": "{name}"}}'
        # keys in another order are read only within MAX_HEAD characters (README); longer
        # objects are drawn in the order that is read at any length
        objects.append(reordered if len(reordered) <= mistral.MAX_HEAD and not draw(
            st.integers(0, 3)) else f'{{"name": "{name}", "arguments": {spelled}}}')
    bare = len(objects) == 1 and draw(st.booleans())
    body = objects[0] if bare else "[" + draw(st.sampled_from([", ", ",", ",\n "])).join(
        objects) + "]"
    parts += [TOOL_CALLS, draw(st.sampled_from(["", " ", "\n"])) + body]
    junk = draw(st.sampled_from(["", "", " Hope that helps!", " {oops}"]))
    if junk:
        parts.append(junk)
    return parts, written, draw(st.integers(0, 6)) > 0


@settings(PROPS, max_examples=100)
@given(data=st.data())
def test_older_mistral_stream_folds_to_message(older: Any, data: st.DataObject) -> None:
    request = data.draw(chat_requests(), label="chat_request")
    parts, written, clean = data.draw(older_outputs(), label="output")
    ids = ids_of(parts, enc)
    finish = data.draw(st.sampled_from(["stop", "stop", "length"]), label="finish")
    if not clean:
        ids = ids[:data.draw(st.integers(1, len(ids)), label="cut")]
    if finish == "stop":
        ids.append(EOS)
    expected = run_both(older, OLDER, ids, finish, PROMPT, request, data)
    if clean:
        check_written(expected, written, request)
