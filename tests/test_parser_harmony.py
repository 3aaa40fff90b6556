"""gpt-oss Harmony output (parsers/harmony.py): its rules, checked on the machine fed token ids;
split invariance through the HTTP app on the gpt-oss tokenizer; the state's codec and bound;
and the registry's pairing of Harmony models with the Harmony parsers.

Expected values come from the Harmony format as openai_harmony parses it (vLLM 0.33's
``HarmonyParser``), not from our code: the recorded cases 320-363 (scripts/tool_cases/harmony.py
lists their outputs) show most rules against the real server, and the comments name them.
The header grammar: the header's bytes decoded strictly as UTF-8; ``<|channel|>`` and the
channel name (up to whitespace or ``<``) taken out, and every later ``<|channel|>`` with the
name after it; trimmed; a space put before
``<|constrain|>``; split on ASCII whitespace; the first message's role is the assistant's (a
leading ``assistant`` part is dropped), later messages name it first (exact case); of the parts
left, the last ``to=`` one is the recipient, a single one is the recipient, else the last is the
content type and the one before the recipient; anything more refuses the header; vLLM cuts a
recipient at ``<|constrain|>``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from derender.core.parsers.formats import harmony
from derender.core.parsers.formats.harmony import (
    MAX_HEADER,
    HarmonyState,
    Kind,
    Phase,
)
from derender.core.registry import ModelRegistry, read_model_info
from derender.core.state.codec import Reader, Writer
from derender_testing.chat_streams import post
from derender_testing.models import model_folder, require_model, tokenizer, vocabulary
from derender_testing.recorded import state_token
from derender_testing.tool_streams import auto_with_tools, ids_of, requests, run_both
from tests.test_parser_properties import PROPS
from tests.test_streaming_properties import bytes_to_unicode

MODEL = "gpt-oss"
START, END, MESSAGE, CHANNEL, CONSTRAIN = 200006, 200007, 200008, 200005, 200003
RETURN, CALL, ENDOFTEXT = 200002, 200012, 199999
REPLACEMENT = "\ufffd"


@pytest.fixture(scope="module", autouse=True)
def _gpt_oss() -> None:
    require_model(MODEL)


def enc(text: str) -> list[int]:
    """Text as gpt-oss tokens; the Harmony markers are added tokens, so each is its one id."""
    return list(tokenizer(MODEL).encode(text, add_special_tokens=False).ids)


BYTE_CHARS = bytes_to_unicode()


def byte(value: int) -> int:
    """The id of the token that is the single byte ``value``."""
    token = tokenizer(MODEL).token_to_id(BYTE_CHARS[value])
    assert token is not None, value
    return token


def test_the_markers_are_single_ids() -> None:
    assert enc("<|start|><|end|><|message|><|channel|><|constrain|><|return|><|call|>"
               "<|endoftext|>") == [START, END, MESSAGE, CHANNEL, CONSTRAIN, RETURN, CALL,
                                    ENDOFTEXT]
    assert tokenizer(MODEL).decode([byte(0xC3), byte(0xA9)]) == "é"


# --------------------------------------------------------------------------- the machine

Parts = list[int | str]


def run(parts: Parts, tools: bool = True, size: int = 0
        ) -> tuple[str, str, list[tuple[str, str]]]:
    """(reasoning, content, calls) of the output ``parts`` fed to the machine in pieces of
    ``size`` ids (0: at once), then finished; the calls' deltas checked on the way."""
    ids = ids_of(parts, enc)
    marks = harmony.tokens(vocabulary(MODEL))
    pieces = [ids[i:i + size] for i in range(0, len(ids), size)] if size else [ids]
    state = HarmonyState()
    reasoning = content = ""
    calls: dict[int, list[str]] = {}
    for k, piece in enumerate([*pieces, []]):
        delta, state = harmony.feed(state, tools, marks, piece, k == len(pieces))
        reasoning += delta.reasoning
        content += delta.content
        for call in delta.calls:
            if call.index not in calls:  # the first delta names the call, no later one does
                assert call.name is not None, call
                calls[call.index] = [call.name, ""]
            else:
                assert call.name is None, call
            calls[call.index][1] += call.arguments
    assert sorted(calls) == list(range(len(calls)))  # indexes count up from 0
    return reasoning, content, [(name, args) for name, args in calls.values()]


def check(parts: Parts, reasoning: str, content: str, calls: list[tuple[str, str]] | None = None,
          tools: bool = True) -> None:
    want = (reasoning, content, calls or [])
    for size in (0, 1, 2, 3, 7):
        assert run(parts, tools, size) == want, size


NEXT = "<|end|><|start|>assistant"
ANALYSIS = "<|channel|>analysis<|message|>The user wants the weather in Paris."
FINAL = "<|channel|>final<|message|>It is sunny in Paris, 22 °C."
WEATHER = ('<|channel|>commentary to=functions.get_weather <|constrain|>json'
           '<|message|>{"city": "Paris", "unit": "c"}')
NOTE = ('<|channel|>commentary to=functions.create_note <|constrain|>json'
        '<|message|>{"title": "Paris trip", "tags": ["travel"]}')
THOUGHT, SUNNY = "The user wants the weather in Paris.", "It is sunny in Paris, 22 °C."
WEATHER_ARGS = '{"city": "Paris", "unit": "c"}'

CHANNEL_RULES: list[tuple[str, Parts, str, str, list[tuple[str, str]]]] = [
    # 320: analysis is reasoning, final is content
    ("analysis_final", [ANALYSIS + NEXT + FINAL, RETURN], THOUGHT, SUNNY, []),
    ("final_only", [FINAL, RETURN], "", SUNNY, []),  # 321
    # 340: commentary to nobody is content, joined to the final with "\n"
    ("commentary_final", ["<|channel|>commentary<|message|>Let me check." + NEXT + FINAL,
                          RETURN], "", "Let me check.\n" + SUNNY, []),
    # 322: a function recipient after the channel, <|constrain|>json content type
    ("recipient_after", [ANALYSIS + NEXT + WEATHER, CALL], THOUGHT, "",
     [("get_weather", WEATHER_ARGS)]),
    # 323: the recipient before the channel, a bare " json" content type
    ("recipient_before", [ANALYSIS + NEXT + ' to=functions.get_weather<|channel|>commentary json'
                          '<|message|>{"city": "Paris"}', CALL], THOUGHT, "",
     [("get_weather", '{"city": "Paris"}')]),
    ("later_recipient_before", [FINAL + "<|end|><|start|>assistant to=functions.get_weather"
                                "<|channel|>commentary <|constrain|>json<|message|>{}", CALL],
     "", SUNNY, [("get_weather", "{}")]),
    # the channel name ends at "<", and <|constrain|> gets a space before it: glued to the
    # recipient it is still the content type
    ("constrain_glued", [" to=functions.get_weather<|channel|>commentary<|constrain|>json"
                         "<|message|>{}", CALL], "", "", [("get_weather", "{}")]),
    # a last part starting "to=" is the recipient: the content type before it is left over,
    # and refuses the header
    ("content_type_first", ["<|channel|>commentary<|constrain|>json to=functions.get_weather"
                            "<|message|>{}", CALL], "", "", []),
    ("no_content_type", ["<|channel|>commentary to=functions.get_weather<|message|>{}", CALL],
     "", "", [("get_weather", "{}")]),
    # the arguments are the message's own text, not re-serialised (337: not even JSON)
    ("raw_arguments", ['<|channel|>commentary to=functions.get_weather json<|message|>'
                       '{ "city" :"Zürich",\n  "unit":"c" }', CALL], "", "",
     [("get_weather", '{ "city" :"Zürich",\n  "unit":"c" }')]),
    ("non_json", [ANALYSIS + NEXT + "<|channel|>commentary to=functions.create_note "
                  "<|constrain|>text<|message|>title: Paris trip\nbody: sunny<|call|>"
                  "<|start|>assistant<|channel|>commentary to=functions.get_weather code"
                  "<|message|>city=Paris", CALL], THOUGHT, "",
     [("create_note", "title: Paris trip\nbody: sunny"), ("get_weather", "city=Paris")]),
    # 324: two calls, indexes 0 and 1; a call ended by <|call|> then another message
    ("two_calls", [ANALYSIS + NEXT + WEATHER + "<|call|><|start|>assistant" + NOTE, CALL],
     THOUGHT, "", [("get_weather", WEATHER_ARGS),
                   ("create_note", '{"title": "Paris trip", "tags": ["travel"]}')]),
    ("empty_arguments", ["<|channel|>commentary to=functions.get_weather<|message|>", CALL],
     "", "", [("get_weather", "")]),
    ("empty_arguments_then_final", ["<|channel|>commentary to=functions.get_weather<|message|>"
                                    + NEXT + FINAL, RETURN], "", SUNNY, [("get_weather", "")]),
    # a recipient without "functions." is a function too
    ("bare_recipient", ["<|channel|>commentary to=lookup<|message|>q=1", CALL], "", "",
     [("lookup", "q=1")]),
    ("bare_recipient_in_analysis", ["<|channel|>analysis to=lookup json<|message|>{}", CALL],
     "", "", [("lookup", "{}")]),
    # 336: the built-in tools are no functions: python in analysis is reasoning, a browser
    # message in commentary (to someone) is dropped
    ("builtins", ["<|channel|>analysis to=python<|message|>print(2 + 2)" + NEXT
                  + '<|channel|>commentary to=browser.search <|constrain|>json<|message|>'
                  '{"query": "Paris weather"}' + NEXT
                  + "<|channel|>commentary to=container.exec<|message|>ls" + NEXT + FINAL,
                  RETURN], "print(2 + 2)", SUNNY, []),
    ("python_in_commentary", ["<|channel|>commentary to=python<|message|>1/0", RETURN], "", "",
     []),
    # the assistant is no function: its final message is content
    ("to_assistant", ["<|channel|>final to=assistant<|message|>Hi.", RETURN], "", "Hi.", []),
    ("assistant_part_dropped", ["<|channel|>commentary assistant<|message|>Hi.", RETURN], "",
     "Hi.", []),
    # 342: a message from someone else after the first is dropped
    ("user_message", [ANALYSIS + "<|end|><|start|>user<|channel|>final<|message|>Not mine."
                      "<|end|><|start|>assistant" + FINAL, RETURN], THOUGHT, SUNNY, []),
    ("tool_role", [FINAL + "<|end|><|start|>tool<|channel|>final<|message|>Not mine.", RETURN],
     "", SUNNY, []),
    # an unknown first part followed by more is the tool's role: dropped
    ("unknown_role", [FINAL + "<|end|><|start|>bob to=functions.get_weather<|channel|>"
                      "commentary<|message|>{}<|call|><|start|>assistant<|channel|>final"
                      "<|message|>Bye.", RETURN], "", SUNNY + "\nBye.", []),
    # the first header names no role: "user" is its recipient, so a function
    ("first_user", ["user<|channel|>final<|message|>Hi there", RETURN], "", "",
     [("user", "Hi there")]),
    # roles are case-sensitive: "Assistant" alone is refused and its message dropped, up to
    # the next <|start|>
    ("capital_role", [FINAL + "<|end|><|start|>Assistant<|channel|>final<|message|>Lost."
                      "<|end|><|start|>assistant<|channel|>final<|message|>Kept.", RETURN],
     "", SUNNY + "\nKept.", []),
    # 343: more than three parts refuse the header; its message is dropped
    ("bad_header", ["<|channel|>final a b c<|message|>Broken header." + NEXT + FINAL, RETURN],
     "", SUNNY, []),
    ("channel_then_space", ["<|channel|> final<|message|>Lost." + NEXT + FINAL, RETURN], "",
     SUNNY, []),
    ("channel_then_nothing", ["<|channel|><|message|>Lost." + NEXT + FINAL, RETURN], "", SUNNY,
     []),
    ("refused_skips_to_start", ["<|channel|>final a b c<|message|>Lost.<|end|>also lost"
                                "<|message|><|channel|>final<|message|>lost too<|end|>"
                                "<|start|>assistant<|channel|>final<|message|>Kept.", RETURN],
     "", "Kept.", []),
    # text between messages is dropped
    ("between_messages", ["<|channel|>final<|message|>A.<|end|>junk <|message|> text"
                          "<|start|>assistant<|channel|>final<|message|>B.", RETURN], "",
     "A.\nB.", []),
    ("after_last_message", ["<|channel|>final<|message|>A.<|end|> trailing", RETURN], "", "A.",
     []),
    # 334, 335: parts of a kind joined with "\n"
    ("two_finals", [FINAL + NEXT + "<|channel|>final<|message|> Anything else?", RETURN], "",
     SUNNY + "\n Anything else?", []),
    ("two_analyses", [ANALYSIS + NEXT + "<|channel|>analysis<|message|>I know it already."
                      + NEXT + FINAL, RETURN], THOUGHT + "\nI know it already.", SUNNY, []),
    # 341: an empty part is none: no reasoning and no separator
    ("empty_analysis", ["<|channel|>analysis<|message|>" + NEXT + FINAL, RETURN], "", SUNNY,
     []),
    ("empty_between", ["<|channel|>analysis<|message|>A" + NEXT + "<|channel|>analysis"
                       "<|message|>" + NEXT + "<|channel|>analysis<|message|>B" + NEXT
                       + "<|channel|>final<|message|>" + NEXT + "<|channel|>final<|message|>C",
                       RETURN], "A\nB", "C", []),
    # the markers spelled by ordinary text are text
    ("markers_in_content", ["<|channel|>final<|message|>a <|channel|>b <|start|>c <|message|>d",
                            RETURN], "", "a <|channel|>b <|start|>c <|message|>d", []),
    # 339: <|endoftext|> stops nothing: in content it is its text
    ("endoftext_eos", [ANALYSIS + NEXT + FINAL, ENDOFTEXT], THOUGHT, SUNNY + "<|endoftext|>",
     []),
    ("endoftext_inside", ["<|channel|>final<|message|>A", ENDOFTEXT, "B<|end|>"], "",
     "A<|endoftext|>B", []),
    # 333: an output cut inside a message keeps what it said
    ("truncated_content", ["<|channel|>analysis<|message|>The user wants the weather in Par"],
     "The user wants the weather in Par", "", []),
    ("truncated_arguments", ['<|channel|>commentary to=functions.get_weather<|message|>{"ci'],
     "", "", [("get_weather", '{"ci')]),
    # 332: an output ending inside a header returns that message's bytes, markers spelled
    ("truncated_header", ["<|channel|>analysis<|message|>Hmm<|end|><|start|>assistant"
                          "<|channel|>fin"], "Hmm", "<|start|>assistant<|channel|>fin", []),
    # 331: no Harmony at all: the whole output, its EOS spelled, is content
    ("plain_text", ["Hello world", RETURN], "", "Hello world<|return|>", []),
    ("plain_text_cut", ["Hello world, no channels here."], "",
     "Hello world, no channels here.", []),
    # 364: the first <|channel|> names the channel; every later one leaves the header with
    # its name (so "final get_weather<|channel|>analysis" is a call to get_weather)
    ("later_channels", ["<|channel|>final<|channel|>analysis<|message|>Final after all." + NEXT
                        + "<|channel|>final get_weather<|channel|>analysis<|message|>Paris",
                        CALL], "", "Final after all.", [("get_weather", "Paris")]),
    # 365: a recipient starting with <|constrain|> is cut there (vLLM's _normalize_recipient):
    # none is left, so commentary is content
    ("constrained_commentary", [ANALYSIS + NEXT + "<|channel|>commentary<|constrain|>json"
                                "<|message|>{}", RETURN], THOUGHT, "{}", []),
]


@pytest.mark.parametrize(("parts", "reasoning", "content", "calls"),
                         [r[1:] for r in CHANNEL_RULES], ids=[r[0] for r in CHANNEL_RULES])
def test_rules(parts: Parts, reasoning: str, content: str, calls: list[tuple[str, str]]
               ) -> None:
    check(parts, reasoning, content, calls)


def test_without_the_tool_parser_function_messages_are_dropped() -> None:
    # 349 (the openai_gptoss reasoning parser alone)
    check([ANALYSIS + NEXT + WEATHER, CALL], THOUGHT, "", tools=False)
    check(["<|channel|>commentary to=lookup<|message|>x" + NEXT + FINAL, RETURN], "", SUNNY,
          tools=False)
    # the built-in and the non-function recipients read as with it
    check(["<|channel|>analysis to=python<|message|>1+1" + NEXT + FINAL, RETURN], "1+1",
          SUNNY, tools=False)


def test_invalid_utf8_in_a_header_refuses_it() -> None:
    for bad in ([byte(0x80)], [byte(0xC3)], [byte(0xF0), byte(0x9F)]):
        check(["<|channel|>final to=functions.get_weather", *bad, "<|message|>{}<|call|>"
               "<|start|>assistant<|channel|>final<|message|>Kept.", RETURN], "", "Kept.")
    # valid UTF-8 made of byte tokens is a header like any other
    check(["<|channel|>commentary to=functions.caf", byte(0xC3), byte(0xA9),
           "<|message|>{}", CALL], "", "", [("café", "{}")])


def test_content_is_lossy_utf8() -> None:
    # 346: a lone continuation byte is U+FFFD
    check(["<|channel|>final<|message|>Bad ", byte(0x80), " byte, then more text.", RETURN],
          "", f"Bad {REPLACEMENT} byte, then more text.")
    # an incomplete sequence cut by ASCII is one U+FFFD, then the ASCII
    check(["<|channel|>final<|message|>Sun ", byte(0xF0), byte(0x9F), "ny", RETURN], "",
          f"Sun {REPLACEMENT}ny")
    # 345: an incomplete emoji at the end of the output is one U+FFFD
    check(["<|channel|>analysis<|message|>Rain?" + NEXT + "<|channel|>final<|message|>Sun ",
           byte(0xF0), byte(0x9F)], "Rain?", f"Sun {REPLACEMENT}")
    # ... and at the end of a message (its stop token ends it)
    check(["<|channel|>analysis<|message|>Hm ", byte(0xE6), byte(0x9D),
           "<|end|><|start|>assistant<|channel|>final<|message|>ok", RETURN],
          f"Hm {REPLACEMENT}", "ok")
    # a character whose bytes are single-byte tokens is that character, in any pieces
    check(["<|channel|>final<|message|>", *(byte(b) for b in "🌦 東".encode()), RETURN], "",
          "🌦 東")
    check(['<|channel|>commentary to=functions.create_note<|message|>{"t": "',
           *(byte(b) for b in "é".encode()), '"}', CALL], "", "", [("create_note", '{"t": "é"}')])


def test_a_header_past_max_header_makes_the_output_content() -> None:
    fits = "<|channel|>final" + " " * (MAX_HEADER - len("<|channel|>final"))
    assert len(fits.encode()) == MAX_HEADER
    check([fits, "<|message|>x", RETURN], "", "x")
    # one byte more: no Harmony header, the whole output from its start is content
    too_long: Parts = [fits + " ", "<|message|>x<|end|>more", RETURN]
    text = tokenizer(MODEL).decode(ids_of(too_long, enc), skip_special_tokens=False)
    assert text == fits + " <|message|>x<|end|>more<|return|>"
    check(too_long, "", text)
    long_plain: Parts = ["word " * 600, "<|channel|>final<|message|>x", RETURN]
    check(long_plain, "", "word " * 600 + "<|channel|>final<|message|>x<|return|>")


# --------------------------------------------------------------------------- split invariance

TOOLS = [{"type": "function", "function": {
    "name": name, "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    for name in ("get_weather", "create_note")]
MESSAGES = [{"role": "user", "content": "Weather in Paris? 🌦"}]
FUNCTIONS = ("functions.get_weather", "functions.create_note", "lookup")
RECIPIENTS = [None, None, None, *FUNCTIONS, "python", "browser.search", "assistant"]
CONTENT_TYPES = ["", " json", " <|constrain|>json", "<|constrain|>json"]
TEXTS: list[tuple[Parts, str]] = [
    ([], ""), (["Hi."], "Hi."), (['{"city": "Paris"}'], '{"city": "Paris"}'),
    (["Zürich 東京 🌦"], "Zürich 東京 🌦"),
    (["a <|channel|>b <|start|>"], "a <|channel|>b <|start|>"),
    (["\n  spaced \n"], "\n  spaced \n"), ([0xC3, 0xA9], "é"), ([0x80], REPLACEMENT),
    ([0xF0, 0x9F, "ok"], REPLACEMENT + "ok"), ([0xF0, 0x9F, 0x8C, 0xA6], "🌦"),
]
"""(parts, the text they read as); an int here is a byte, its token spliced in."""


def _spliced(parts: Parts) -> Parts:
    return [byte(p) if isinstance(p, int) else p for p in parts]


@st.composite
def harmony_outputs(draw: st.DrawFn) -> tuple[Parts, list[tuple[str, str | None, str]], bool]:
    """(parts, the messages written as (channel, recipient, text), clean: well-formed assistant
    messages only, so the messages say exactly what they read as)."""
    parts: Parts = []
    written: list[tuple[str, str | None, str]] = []
    clean = True
    for k in range(draw(st.integers(0, 4))):
        if k:
            parts.append("<|start|>")
            role = draw(st.sampled_from(["assistant"] * 12 + ["user", "Assistant", "tool"]))
            clean = clean and role == "assistant"
            parts.append(role)
        channel = draw(st.sampled_from(["analysis", "final", "commentary"]))
        recipient = draw(st.sampled_from(RECIPIENTS))
        to = f" to={recipient}" if recipient else ""
        kind = draw(st.sampled_from(CONTENT_TYPES)) if recipient else ""
        if draw(st.booleans()):
            parts.append(f"<|channel|>{channel}{to}{kind}")
        else:
            parts.append(f"{to}<|channel|>{channel}{kind}")
        if draw(st.integers(0, 14)) == 0:  # a refused header
            refusals: Parts = [" a b c", " x y z w", byte(0xFF)]  # too many parts, not UTF-8
            parts.append(draw(st.sampled_from(refusals)))
            clean = False
        parts.append(MESSAGE)
        text_parts, text = [], ""
        for piece, reads in draw(st.lists(st.sampled_from(TEXTS), max_size=3)):
            text_parts += piece
            text += reads
        parts += _spliced(text_parts)
        written.append((channel, recipient, text))
        parts.append(draw(st.sampled_from([END, END, CALL, RETURN])))
        if draw(st.integers(0, 11)) == 0:  # junk between messages
            parts.append(draw(st.sampled_from(["junk", "<|message|>x", "<|channel|>final"])))
            clean = False
    if parts and draw(st.integers(0, 3)) == 0:  # the last message unfinished
        parts.pop()
    return parts, written, clean


def read_as(written: list[tuple[str, str | None, str]], tools: bool
            ) -> tuple[str, str, list[tuple[str, str]]]:
    """What clean messages read as, by the format's rules (see the rule tests)."""
    reasoning: list[str] = []
    content: list[str] = []
    calls: list[tuple[str, str]] = []
    for channel, recipient, text in written:
        if recipient in FUNCTIONS:
            if tools:
                calls.append((recipient.removeprefix("functions."), text))
        elif channel == "analysis":
            reasoning.append(text)
        elif channel == "final" or (channel == "commentary" and recipient is None):
            content.append(text)
    return ("\n".join(t for t in reasoning if t), "\n".join(t for t in content if t), calls)


PROMPT = enc("<|start|>user<|message|>Weather in Paris? 🌦<|end|><|start|>assistant")
SERVERS = {"both": ("openai_gptoss", "openai"), "reasoning_only": ("openai_gptoss", None)}


@settings(PROPS, max_examples=200)
@given(data=st.data())
def test_harmony_stream_folds_to_message(client_for: Any, data: st.DataObject) -> None:
    server = data.draw(st.sampled_from(["both", "both", "both", "reasoning_only"]),
                       label="server")
    client = client_for(MODEL, *SERVERS[server])
    request = data.draw(requests(MESSAGES, TOOLS, reasoning_off=4), label="chat_request")
    if data.draw(st.booleans(), label="auto"):  # often the calls' own reading: tools, "auto"
        request = {**request, "tools": TOOLS, "tool_choice": "auto"}
    parts, written, clean = data.draw(harmony_outputs(), label="output")
    ids = ids_of(parts, enc)
    if ids and data.draw(st.integers(0, 4)) == 0:  # cut anywhere
        ids = ids[:data.draw(st.integers(1, len(ids)), label="cut")]
        clean = False
    eos = data.draw(st.sampled_from([RETURN, CALL, ENDOFTEXT, None]), label="eos")
    if eos is not None or not ids:
        ids.append(eos or RETURN)
        finish = "stop"
    else:
        finish = "length"
    expected = run_both(client, MODEL, ids, finish, PROMPT, request, data)
    if not clean:
        return
    calls: list[tuple[str, str]] = []
    if not written:  # 331: all of it one unfinished header, returned as content
        reasoning, content = "", tokenizer(MODEL).decode(ids, skip_special_tokens=False)
    else:
        # 339: <|endoftext|> is text in the message it ends; after a stop it is refused
        if eos == ENDOFTEXT and parts[-1] not in (END, CALL, RETURN):
            channel, recipient, text = written[-1]
            written = [*written[:-1], (channel, recipient, text + "<|endoftext|>")]
        reasoning, content, calls = read_as(written, SERVERS[server][1] is not None)
    event("clean: values checked")
    message = expected["message"]
    assert (message["content"] or "") == content
    if request.get("include_reasoning") is not False:
        assert (message["reasoning"] or "") == reasoning
    if auto_with_tools(request):
        want = calls[:1] if request.get("parallel_tool_calls") is False else calls
        assert [(c["function"]["name"], c["function"]["arguments"])
                for c in message.get("tool_calls") or []] == want
        event(f"clean: {len(want)} calls checked")


# --------------------------------------------------------------------------- state


@st.composite
def harmony_states(draw: st.DrawFn) -> HarmonyState:
    held = draw(st.binary(max_size=MAX_HEADER))
    return HarmonyState(phase=draw(st.sampled_from(list(Phase))), held=held,
                        header_len=draw(st.integers(0, len(held))),
                        kind=draw(st.sampled_from(list(Kind))), role_given=draw(st.booleans()),
                        said=frozenset(draw(st.sets(st.sampled_from(list(Kind))))),
                        part_open=draw(st.booleans()), calls=draw(st.integers(0, 10**6)))


@settings(max_examples=300, deadline=None)
@given(state=harmony_states())
def test_states_round_trip(state: HarmonyState) -> None:
    writer = Writer()
    harmony.encode(state, writer)
    reader = Reader(bytes(writer.out))
    assert harmony.decode(reader) == state
    assert reader.pos == len(writer.out)


def _payload(flags: int, held: bytes, header_len: int, calls: int = 0) -> Reader:
    writer = Writer()
    writer.uint(flags)
    writer.blob(held)
    writer.uint(header_len)
    writer.uint(calls)
    return Reader(bytes(writer.out))


def test_decode_refuses_garbage() -> None:
    assert harmony.decode(_payload(0, b"ab", 2)) == HarmonyState(role_given=False, held=b"ab",
                                                                header_len=2)
    with pytest.raises(ValueError):
        harmony.decode(_payload(1 << 10, b"", 0))  # a flag no state has
    with pytest.raises(ValueError):
        harmony.decode(_payload(0, b"ab", 3))  # a header longer than what is held
    with pytest.raises(ValueError):
        harmony.decode(_payload(0, b"x" * (MAX_HEADER + 1), 0))  # more than a header holds
    with pytest.raises((ValueError, IndexError)):
        harmony.decode(Reader(b"\x00\x05ab"))  # cut short


def test_a_long_headerless_stream_keeps_a_small_state(client_for: Any) -> None:
    """5,000 tokens of plain text: the header held until it is past MAX_HEADER, then content;
    every returned stream_state stays far under the service's max_state_chars (12,288)."""
    client = client_for(MODEL, "openai_gptoss", "openai")
    ids = enc("Hello" + " world" * 6000)[:5000]
    assert len(ids) == 5000
    request = {"messages": MESSAGES, "tools": TOOLS}
    state: str | None = None
    content = ""
    sizes = []
    for at in range(0, len(ids), 125):
        last = at + 125 >= len(ids)
        body: dict[str, Any] = {
            "stream": True, "model": MODEL, "prompt_token_ids": PROMPT, "chat_request": request,
            "generate_chunk": {"request_id": "long-plain", "choices": [{
                "index": 0, "token_ids": ids[at:at + 125],
                "finish_reason": "length" if last else None}]}}
        if state is not None:
            body["stream_state"] = state
        data = post(client, body)
        state = data["stream_state"]
        sizes.append(len(state_token(state)))
        content += data["chunk"]["choices"][0]["delta"]["content"] or ""
    assert max(sizes) < 3000, sizes
    assert content == tokenizer(MODEL).decode(ids, skip_special_tokens=False)
    # the same inside a long analysis message: its text is streamed, not held
    head = enc("<|channel|>analysis<|message|>")
    ids = [*head, *ids]
    state, reasoning = None, ""
    for at in range(0, len(ids), 500):
        body = {"stream": True, "model": MODEL, "prompt_token_ids": PROMPT,
                "chat_request": request, "generate_chunk": {"request_id": "long-analysis",
                                                            "choices": [{
                    "index": 0, "token_ids": ids[at:at + 500],
                    "finish_reason": "length" if at + 500 >= len(ids) else None}]}}
        if state is not None:
            body["stream_state"] = state
        data = post(client, body)
        state = data["stream_state"]
        assert len(state_token(state)) < 3000, state
        sizes.append(len(state_token(state)))
        reasoning += data["chunk"]["choices"][0]["delta"]["reasoning"] or ""
    assert reasoning == tokenizer(MODEL).decode(ids[len(head):])
    print("stream_state sizes (chars):", min(sizes), max(sizes))


# --------------------------------------------------------------------------- registry


def _model_dir(root: Path, source: str, manifest: dict[str, Any] | None) -> Path:
    """A models folder holding one model: ``source``'s files linked, ``manifest`` written."""
    models = root / "models"
    folder = models / source
    folder.mkdir(parents=True)
    for file in model_folder(source).iterdir():
        if file.name != "derender.json":
            (folder / file.name).symlink_to(file)
    if manifest is not None:
        (folder / "derender.json").write_text(json.dumps(manifest))
    return models


@pytest.mark.parametrize("manifest", [
    {"reasoning_parser": "qwen3"}, {"tool_parser": "hermes"},
    {"reasoning_parser": "openai_gptoss", "tool_parser": "hermes"},
    {"reasoning_parser": "deepseek_r1", "tool_parser": "openai"},
])
def test_a_gpt_oss_model_takes_only_the_harmony_parsers(tmp_path: Path,
                                                        manifest: dict[str, Any]) -> None:
    models = _model_dir(tmp_path, MODEL, manifest)
    with pytest.raises(RuntimeError, match="Harmony"):
        ModelRegistry(models)


@pytest.mark.parametrize("manifest", [
    {"tool_parser": "openai"}, {"reasoning_parser": "openai_gptoss"},
    {"reasoning_parser": "openai_gptoss", "tool_parser": "openai"},
])
def test_the_harmony_parsers_take_only_gpt_oss(tmp_path: Path, manifest: dict[str, Any]) -> None:
    require_model("gpt2")
    models = _model_dir(tmp_path, "gpt2", manifest)
    assert json.loads((models / "gpt2" / "config.json").read_text()).get("model_type") != \
        "gpt_oss"
    with pytest.raises(RuntimeError, match="Harmony"):
        ModelRegistry(models)


def test_a_gpt_oss_model_reads_harmony_by_default(tmp_path: Path) -> None:
    models = _model_dir(tmp_path, MODEL, None)
    info = read_model_info(models / MODEL)
    assert (info.reasoning_parser, info.tool_parser) == ("openai_gptoss", None)
    assert ModelRegistry(models).get(MODEL).info.reasoning_parser == "openai_gptoss"
    # with the tool parser named alone, the reasoning parser is still the Harmony one
    other = tmp_path / "other"
    shutil.copytree(models, other, symlinks=True)
    (other / MODEL / "derender.json").write_text(json.dumps({"tool_parser": "openai"}))
    info = read_model_info(other / MODEL)
    assert (info.reasoning_parser, info.tool_parser) == ("openai_gptoss", "openai")
