"""The tool-call formats as pluggable machines (parsers/tools.py) and their properties.

- The registry: every vLLM parser name we serve is a format with its own tag (and, apart from
  the engine formats, which share the engine's, its own state type).
- The state codec: any state a format reaches encodes to bytes that decode to the same state,
  preceded by the format's tag, so a decoded state is of the format that wrote it; unknown tags
  and another format's state are refused.
- Split invariance (README: Reasoning and tool calls) through the HTTP app, for
  ``llama3_json`` and ``pythonic``:
  for every split of the output ids into chunks (hypothesis draws them: one id per chunk, none,
  random cuts, id-less chunks, batched calls), the folded stream equals the non-streaming
  message for the same ids and request, every returned state stays under the bound of
  test_parser_properties, and for outputs whose reading the format fixes (well-formed calls,
  ``tool_choice`` "auto") the message holds exactly the calls written, arguments as JSON.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.errors import BadRequestError
from derender.core.parsers.formats import hermes, llama3_json, pythonic
from derender.core.parsers.reasoning import ReasoningState
from derender.core.parsers.registry import TOOL_RECORDS, TOOLS_BY_TAG, Machine
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader
from derender.core.state.stream import StreamState, decode_state, encode_state
from derender_testing.models import tokenizer
from derender_testing.tool_streams import (
    check_round_trips,
    check_written,
    ids_of,
    requests,
    run_both,
)
from tests.cost_cases import settings as cost_settings
from tests.cost_cases import start as cost_start
from tests.test_parser_properties import PROPS, json_strings, json_text, json_values
from tests.test_state_fuzz import fields_of, leb128

LLAMA = "llama3.1-tools"
EOT, EOM, PYTHON_TAG = 128009, 128008, 128010
PROMPT = [128000, 128006, 882, 128007, 271, 3923, 596, 279, 9282, 304, 12366, 30, 128009,
          128006, 78191, 128007, 271]
MESSAGES = [{"role": "user", "content": "Weather in Zürich? 🌦"}]
TOOL_NAMES = ("get_weather", "create_note", "search_web")
TOOLS = [{"type": "function", "function": {
    "name": name, "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
    for name in TOOL_NAMES]
FORMATS = (hermes.FORMAT, llama3_json.FORMAT, pythonic.FORMAT)


# --------------------------------------------------------------------------- the registry


def test_every_format_is_registered_with_its_own_tag_and_state() -> None:
    assert {"hermes", "llama3_json", "pythonic", "deepseek_v3", "deepseek_v31", "mistral",
            "qwen3_coder", "mimo", "seed_oss", "deepseek_v32", "deepseek_v4", "deepseek_v41",
            "glm45", "glm47", "kimi_k2", "gemma4", "minimax_m2", "minimax_m3", "granite4",
            "granite-20b-fc", "longcat", "step5", "ling3", "hy_v3",
            "llama4_pythonic", "olmo3", "phi4_mini_json", "jamba", "internlm", "gigachat3",
            "hy_v4", "poolside_v1",
            "lfm2", "functiongemma",
            "kimi_k3",
            "hf", "beam",
            "muse",
            "ernie45", "hunyuan_a13b",
            "plamo3", "granite",
            "step3", "apertus", "minicpm5", "k2_horizon", "inkling",
            "cohere_command3", "cohere_command4", "dots",
            "muse_glimmer", "xlam"} == set(
                {r.name for r in TOOL_RECORDS if r.tag is not None})
    own = [r.name for r in TOOL_RECORDS if r.machine is Machine.OWN]
    assert len({parsers.tool_format(name).state_type for name in own}) == len(own)
    assert len({r.tag for r in TOOL_RECORDS}) == len(TOOL_RECORDS)
    # Harmony: no text format
    aliases = {alias for r in TOOL_RECORDS for alias in r.aliases}
    assert {*(r.name for r in TOOL_RECORDS), *aliases} == parsers.TOOL_PARSERS
    assert {parsers.tag_of(fmt.name) for fmt in FORMATS} == {0, 1, 2}
    assert len({fmt.state_type for fmt in FORMATS}) == len(FORMATS)
    for fmt in FORMATS:
        assert parsers.tool_format(fmt.name) is fmt
        assert TOOLS_BY_TAG[parsers.tag_of(fmt.name)].name == fmt.name


def test_engine_formats_pair_with_their_family() -> None:
    """vLLM runs one engine object as both parsers of a family (``make_adapters``); its tool
    parser alone reads no reasoning (think tags are text: cases 1300-1308, 1318-1326), its
    reasoning parser alone no calls (tool tags are text: 1310-1316, 1328-1334). An engine
    reasoning parser with another family's tool parser is refused (not recorded)."""
    engine_formats = {"deepseek_v32", "deepseek_v4", "deepseek_v41", "glm45", "glm47",
                      "minimax_m2", "minimax_m3", "ling3", "hy_v3", "plamo3",
                      "kimi_k3",  # its own machine, started and paired as an engine record's
                      "inkling"}
    assert engine_formats == {r.name for r in TOOL_RECORDS if r.machine is Machine.ENGINE}
    modes = {("deepseek_v4", "deepseek_v4"): "both", ("deepseek_v41", "deepseek_v41"): "both",
             ("glm45", "glm45"): "both", ("glm47", "glm47"): "both", ("glm45", "glm47"): "both",
             (None, "deepseek_v32"): "tools", ("deepseek_v3", "deepseek_v32"): "foreign",
             (None, "glm47"): "tools", (None, "deepseek_v4"): "tools",
             ("qwen3", "glm45"): "foreign", ("glm47", None): "reasoning",
             ("minimax_m2", "minimax_m2"): "both", ("minimax_m2_append_think", "minimax_m2"):
             "foreign", (None, "minimax_m2"): "tools", ("minimax_m2", None): "reasoning",
             ("deepseek_v4", None): "reasoning", ("deepseek_v3", "deepseek_v31"): None,
             # M3's reasoning parser is an ordinary one (reasoning.FORMATS): it reads first,
             # the engine then reads its content
             ("minimax_m3", "minimax_m3"): "foreign", (None, "minimax_m3"): "tools",
             ("minimax_m3", None): None,
             ("deepseek_v3", None): None, ("qwen3", "hermes"): None,
             # ling3 (issue 19): its own family, GLM-4.7's config (cases 4200-4273)
             ("ling3", "ling3"): "both", (None, "ling3"): "tools", ("ling3", None): "reasoning",
             ("qwen3", "ling3"): "foreign",
             # hy_v3 (issue 19): an ordinary reasoning parser reads first, as minimax_m3's
             ("hy_v3", "hy_v3"): "foreign", (None, "hy_v3"): "tools", ("hy_v3", None): None,
             ("hy_v3", "glm47"): "foreign", ("qwen3", "hy_v3"): "foreign",
             # plamo3 (issue 19, branch qwen2): its own family (cases 6600-6719)
             ("plamo3", "plamo3"): "both", (None, "plamo3"): "tools",
             ("plamo3", None): "reasoning", ("qwen3", "plamo3"): "foreign"}
    # an engine reasoning parser with another family's tool parser (cases 8200-8309): the
    # engine reads the reasoning first (front), then the tool parser, an engine one as after
    # any other family's reasoning parser
    fronts = {("glm45", "hermes"): None, ("deepseek_v4", "deepseek_v41"): "foreign",
              ("deepseek_v4", "glm45"): "foreign", ("glm47", "deepseek_v32"): "foreign",
              ("ling3", "glm47"): "foreign", ("glm47", "ling3"): "foreign",
              ("minimax_m2", "pythonic"): None}
    for pair, mode in {**modes, **fronts}.items():
        assert parsers.pairing_error(*pair) is None, pair
        assert parsers.engine_mode(*pair) == mode, pair
        assert parsers.front(*pair) == (
            parsers.REASONING_BY_NAME[pair[0]].reasoning_config if pair in fronts else None)


def test_a_state_of_another_format_is_refused() -> None:
    settings_ = parsers.ParserSettings(
        reasoning=None, thinking=True, tool_format="hermes", keep_calls=True, forced=False,
        named=False, forced_name=None, parallel=True, include_reasoning=True)
    foreign = parsers.ParserState(None, llama3_json.FORMAT.start(),
                                  tool_tag=parsers.tag_of("llama3_json"))
    with pytest.raises(BadRequestError, match="another format"):
        parsers.feed(settings_, foreign, "text", final=False)
    with pytest.raises(ValueError, match="not a hermes state"):
        hermes.FORMAT.step(foreign.tools, "text", False, ToolContext())  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the state codec

TEXT_PIECES = ['{', '}', '"name"', '"parameters"', '"arguments"', ': ', ', ', ' ', '\n', '; ',
               '"get_weather"', '{"city": "Paris"}', '[', ']', '(', ')', "'東京'", 'get_weather',
               'city=', "'a\\'b", '"""', "'''", '\\', '<|python_tag|>', '<tool_call>', 'Sure',
               '42', '-1e', 'None', 'r"', '{{', '\\N{SNOW', '\\x4', "[ping(", "[get_weather("]
contexts = st.sampled_from([ToolContext(), ToolContext(forced_name="get_weather"),
                            ToolContext(required=True)])


@settings(max_examples=300, deadline=None)
@given(fmt=st.sampled_from(FORMATS), context=contexts,
       pieces=st.lists(st.lists(st.sampled_from(TEXT_PIECES), max_size=4).map("".join),
                       max_size=8))
def test_every_reached_state_round_trips(fmt: Any, context: ToolContext,
                                         pieces: list[str]) -> None:
    check_round_trips(fmt, pieces, context)


def test_the_stream_state_carries_the_format_tag() -> None:
    """A stream state holding each format's state encodes the format's tag above the parser
    flags and decodes to that format's state; with another tag in those bits the payload is
    malformed (an unknown tag, or another format's reader meeting bytes it did not write)."""
    for fmt, text in ((llama3_json.FORMAT, '{"name": "get_weather", "parameters": {"q": "a'),
                      (pythonic.FORMAT, "[get_weather(q='a" + "b" * 600),
                      (hermes.FORMAT, '<tool_call>{"na')):
        _, _, tools = fmt.feed(fmt.start(), text, False, ToolContext())
        state = StreamState(fingerprint=b"0123456789abcdef", issued_at=1,
                            parser=parsers.ParserState(ReasoningState(True, "<thi"), tools, True,
                                                       tool_tag=parsers.tag_of(fmt.name)))
        fields = fields_of(state)
        parser = fields["parser"]
        assert parser[0] >> 6 == parsers.tag_of(fmt.name)  # the tag above the six flag bits
        again = decode_state(encode_state(state))
        assert again == state
        assert isinstance(again.parser.tools, fmt.state_type)  # type: ignore[union-attr]
        head = b"".join(v for k, v in fields.items() if k != "parser")
        for other in {0, 1, 2, 3, 63} - {parsers.tag_of(fmt.name)}:
            forged = head + leb128(parser[0] & 63 | other << 6) + parser[1:]
            with pytest.raises(BadRequestError, match="malformed"):
                decode_state(forged)


def test_a_front_engine_state_follows_the_tool_state() -> None:
    """An engine reasoning parser with another family's tool parser (``ParserState.front``):
    the engine's tag and state follow the tool format's, flagged above the 14 tag bits (a
    state issued without a front never sets that bit, so its bytes are unchanged); a front
    naming a format that is no engine, or unknown flag bits, are malformed."""
    settings_ = cost_settings("glm47", "hermes")
    assert settings_.front == "glm47" and settings_.tool_format == "hermes"
    start = cost_start(settings_)
    _, parser = parsers.feed(settings_, start, "Let me think <tool_call>{\"na", False)
    assert parser.front is not None and parser.front_tag == parsers.tag_of("glm47")
    state = StreamState(fingerprint=b"0123456789abcdef", issued_at=1, parser=parser)
    assert decode_state(encode_state(state)) == state
    reader = Reader(fields_of(state)["parser"])
    flags = reader.uint()
    body = fields_of(state)["parser"][reader.pos:]
    assert flags >> 20 == 1 and flags >> 6 & (2**14 - 1) == parsers.tag_of("hermes")
    alone = replace(state, parser=replace(parser, front=None, front_tag=None))
    assert Reader(fields_of(alone)["parser"]).uint() == flags & (2**20 - 1)
    head = b"".join(v for k, v in fields_of(state).items() if k != "parser")
    for bad in (flags | 1 << 21, flags | 1 << 40):
        with pytest.raises(BadRequestError, match="malformed"):
            decode_state(head + leb128(bad) + body)
    not_an_engine = replace(parser, front=hermes.FORMAT.start(),
                            front_tag=parsers.tag_of("hermes"))
    with pytest.raises(BadRequestError, match="malformed"):
        decode_state(encode_state(replace(state, parser=not_an_engine)))


# --------------------------------------------------------------------------- split invariance


def enc(text: str) -> list[int]:
    return list(tokenizer(LLAMA).encode(text, add_special_tokens=False).ids)


@pytest.fixture(scope="module")
def llama(client_for: Any) -> Any:
    return client_for(LLAMA, None, "llama3_json")


@pytest.fixture(scope="module")
def py(client_for: Any) -> Any:
    return client_for(LLAMA, None, "pythonic")


@st.composite
def llama_outputs(draw: st.DrawFn) -> tuple[list[int | str], list[tuple[str, Any]], str, bool]:
    """(parts, calls written, content expected before them, clean)."""
    values = json_values(json_strings)
    lead = draw(st.sampled_from(["", "", "", "\n\n", "Sure — 🌦 checking.\n", "[", "{x} "]))
    tag = draw(st.sampled_from([False, False, True]))
    written: list[tuple[str, Any]] = []
    section: list[str] = []
    for k in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(TOOL_NAMES))
        key = draw(st.sampled_from(["parameters", "arguments"]))
        args = draw(st.dictionaries(st.sampled_from(["q", "city", "ß", "k\"q"]), values,
                                    max_size=3))
        written.append((name, args))
        spelled = draw(json_text(args))
        body = (f'{{"name": "{name}", "{key}": {spelled}}}' if draw(st.integers(0, 4)) else
                f'{{"{key}": {spelled}, "name": "{name}"}}')
        section.append((draw(st.sampled_from(["; ", ";", "\n", ", "])) if k else "") + body)
    junk = draw(st.sampled_from(["", "", "", "", " {oops}", ' {"q": 1}', " Hope that helps!",
                                 "]"]))
    parts: list[int | str] = [p for p in (lead,) if p]
    parts += [PYTHON_TAG] if tag else []
    parts += ["".join(section) + junk] if section or junk else []
    clean = not junk or junk == "]" or not section
    expected_content = lead if written and lead.strip() and lead != "[" else ""
    if tag and not written:
        clean = False
    return parts, written, expected_content, clean and lead != "{x} "


@st.composite
def python_literals(draw: st.DrawFn) -> tuple[str, Any]:
    """A Python literal and the JSON value vLLM makes of it."""
    kind = draw(st.sampled_from(["str", "str", "int", "float", "const", "list", "tuple",
                                 "dict"]))
    if kind == "str":
        value = draw(json_strings)
        return repr(value), value
    if kind == "int":
        value = draw(st.integers(-10**9, 10**9))
        return draw(st.sampled_from([repr(value), f"{value:_}"])), value
    if kind == "float":
        value = draw(st.sampled_from([0.5, -1.25, 1e-07, 3.0, -1500.0]))
        return repr(value), value
    if kind == "const":
        return draw(st.sampled_from([("True", True), ("False", False), ("None", None),
                                     ("true", True), ("false", False), ("null", None)]))
    items = draw(st.lists(st.tuples(st.sampled_from(["'a'", "1", "None"]),
                                    st.sampled_from([("'x'", "x"), ("-2", -2), ("[]", [])])),
                          max_size=3))
    if kind == "dict":
        keys = {"'a'": "a", "1": "1", "None": "null"}
        return ("{" + ", ".join(f"{k}: {v[0]}" for k, v in items) + "}",
                {keys[k]: v[1] for k, v in items})
    inner = [v for _, v in items]
    if kind == "tuple":
        text = "(" + ", ".join(t for t, _ in inner) + ("," if len(inner) == 1 else "") + ")"
        return text, [v for _, v in inner]
    return "[" + ", ".join(t for t, _ in inner) + "]", [v for _, v in inner]


@st.composite
def pythonic_outputs(draw: st.DrawFn) -> tuple[list[int | str], list[tuple[str, Any]], bool]:
    """(parts, calls written, clean)."""
    written: list[tuple[str, Any]] = []
    texts: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(TOOL_NAMES))
        pairs = draw(st.lists(st.tuples(st.sampled_from(["q", "city", "days", "x2"]),
                                        python_literals()), max_size=3, unique_by=lambda p: p[0]))
        texts.append(name + "(" + draw(st.sampled_from([", ", ","])).join(
            f"{key}={literal}" for key, (literal, _) in pairs) + ")")
        written.append((name, {key: value for key, (_, value) in pairs}))
    text = "[" + draw(st.sampled_from([", ", ",", ",\n "])).join(texts) + "]"
    change = draw(st.sampled_from(["", "", "", "lead", "trail", "cut", "junk", "plain"]))
    if change == "lead":
        text = draw(st.sampled_from([" ", "Sure! ", "\n"])) + text
    elif change == "trail":
        text += draw(st.sampled_from(["\n", "\nDone.", " 🌦"]))
    elif change == "cut":
        text = text[:draw(st.integers(1, len(text) - 1))]
    elif change == "junk":
        text = text[:-1] + ", ping(x=y)]"
    elif change == "plain":
        text = draw(st.sampled_from(["The weather is fine.", "[1] ref", "[]"]))
    return [text], written, change in ("", "trail") and "\n" not in text[-6:]


def ids_and_finish(parts: list[int | str], finish: str, data: st.DataObject
                    ) -> tuple[list[int], str]:
    ids = ids_of(parts, enc)
    if finish == "stop":
        ids.append(data.draw(st.sampled_from([EOT, EOM]), label="eos"))
    if not ids:
        ids = [EOT]
        finish = "stop"
    return ids, finish


SPLITS = settings(PROPS, max_examples=150)


@SPLITS
@given(data=st.data())
def test_llama3_json_stream_folds_to_message(llama: Any, data: st.DataObject) -> None:
    request = data.draw(requests(MESSAGES, TOOLS), label="chat_request")
    parts, written, content, clean = data.draw(llama_outputs(), label="output")
    finish = data.draw(st.sampled_from(["stop", "stop", "length"]), label="finish")
    ids, finish = ids_and_finish(parts, finish, data)
    expected = run_both(llama, LLAMA, ids, finish, PROMPT, request, data)
    if clean and written and check_written(expected, written, request):
        assert expected["message"]["content"] == (content or None)


@SPLITS
@given(data=st.data())
def test_pythonic_stream_folds_to_message(py: Any, data: st.DataObject) -> None:
    request = data.draw(requests(MESSAGES, TOOLS), label="chat_request")
    parts, written, clean = data.draw(pythonic_outputs(), label="output")
    finish = data.draw(st.sampled_from(["stop", "stop", "length"]), label="finish")
    ids, finish = ids_and_finish(parts, finish, data)
    expected = run_both(py, LLAMA, ids, finish, PROMPT, request, data)
    if clean and check_written(expected, written, request):
        assert expected["message"]["content"] is None
