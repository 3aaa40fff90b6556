"""harmony (cases 320-366): gpt-oss Harmony output on three servers of the gpt-oss tokenizer
(``o200k_harmony``), whose config says model_type gpt_oss, so vLLM reads the output with its
Harmony parser: the ``openai`` tool parser and the ``openai_gptoss`` reasoning parser together,
the tool parser alone, the reasoning parser alone. (Recorded: without a reasoning parser vLLM
still answers the analysis messages as reasoning; without a tool parser it drops the calls.)

Usage:

    "$VLLM_PEER"/start.sh gpt-oss 8330 --reasoning-parser openai_gptoss \\
        --tool-call-parser openai --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh gpt-oss 8331 --tool-call-parser openai --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh gpt-oss 8332 --reasoning-parser openai_gptoss
    .venv/bin/python scripts/record_tool_fixtures.py harmony 8330 8331 8332 [--only N...]

Each case is a hand-written assistant output after the prompt's ``<|start|>assistant``: a
sequence of messages, each a header (``<|channel|>analysis``, ``<|channel|>final``,
``<|channel|>commentary``, a recipient ``to=functions.NAME`` or a builtin ``to=python``,
``to=browser.search``, a content type ``<|constrain|>json`` or `` json``), ``<|message|>``, the
content and ``<|end|>``, ``<|call|>`` or ``<|return|>``; later messages open with
``<|start|>assistant``. The Harmony tokens are added tokens, so they become their ids; then an
EOS id: 200002 ``<|return|>``, 200012 ``<|call|>`` or 199999 ``<|endoftext|>`` (or none,
finish "length"). ``⟪HH⟫`` in an output is the single byte 0xHH as its byte-level token (a
partial UTF-8 character, an invalid byte). The prompt is the server's own render.
"""

from __future__ import annotations

import re
from typing import Any

from record_tool_fixtures import NAMED, ROOT, Format, Server
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

MODEL = "gpt-oss"
TOKENIZER = ROOT / "tests" / "models" / "gpt-oss" / "tokenizer.json"
RETURN, CALL, ENDOFTEXT = 200002, 200012, 199999
BOTH, TOOLS_ONLY, REASONING_ONLY = "harmony", "harmony-tools", "harmony-reasoning"
TOOL_FLAGS = ["--tool-call-parser", "openai", "--enable-auto-tool-choice"]
REASONING_FLAGS = ["--reasoning-parser", "openai_gptoss"]


def _server(slug: str, flags: list[str], label: str, features: tuple[str, ...]) -> Server:
    return Server(MODEL, ["--served-model-name", MODEL, *flags], label, slug, features,
                  TOKENIZER)


SERVERS = {
    BOTH: _server(BOTH, [*REASONING_FLAGS, *TOOL_FLAGS],
                  "openai tool parser with the openai_gptoss reasoning parser",
                  ("parser:openai", "reasoning", "parser:openai_gptoss")),
    TOOLS_ONLY: _server(TOOLS_ONLY, TOOL_FLAGS, "openai tool parser (no reasoning parser)",
                        ("parser:openai",)),
    REASONING_ONLY: _server(REASONING_ONLY, REASONING_FLAGS,
                            "openai_gptoss reasoning parser (no tool parser)",
                            ("reasoning", "parser:openai_gptoss")),
}


def Case(server: str, shape: str, output: str, **fields: Any) -> _Case:  # noqa: N802
    """EOS ``<|return|>``; the feature "reasoning" for an output with an analysis message."""
    return _Case(server, shape, output, **{
        "eos": RETURN,
        "kind": "reasoning" if "<|channel|>analysis" in output else "tool_call", **fields})


NEXT = "<|end|><|start|>assistant"
ANALYSIS = "<|channel|>analysis<|message|>The user wants the weather in Paris."
FINAL = "<|channel|>final<|message|>It is sunny in Paris, 22 °C."
PREAMBLE = "<|channel|>commentary<|message|>Let me check the weather for you."
WEATHER_CALL = ('<|channel|>commentary to=functions.get_weather <|constrain|>json'
                '<|message|>{"city": "Paris", "unit": "c"}')
NOTE_CALL = ('<|channel|>commentary to=functions.create_note <|constrain|>json'
             '<|message|>{"title": "Paris trip", "tags": ["travel"]}')

REASONING_FINAL = ANALYSIS + NEXT + FINAL
FINAL_ONLY = FINAL
PREAMBLE_TOOL = ANALYSIS + NEXT + PREAMBLE + NEXT + WEATHER_CALL
RECIPIENT_FIRST = (ANALYSIS + NEXT + ' to=functions.get_weather<|channel|>commentary json'
                   '<|message|>{"city": "Paris"}')
TWO_CALLS = ANALYSIS + NEXT + WEATHER_CALL + "<|call|><|start|>assistant" + NOTE_CALL
REASONING_TOOL = ANALYSIS + NEXT + WEATHER_CALL
PLAIN = "Hello world, no channels here."
TRUNCATED_HEADER = "<|channel|>analysis<|message|>Hmm<|end|><|start|>assistant<|channel|>fin"
TRUNCATED_CONTENT = "<|channel|>analysis<|message|>The user wants the weather in Par"
TWO_FINALS = FINAL + NEXT + "<|channel|>final<|message|> Anything else?"
TWO_ANALYSIS = (ANALYSIS + NEXT + "<|channel|>analysis<|message|>I know it already." + NEXT
                + FINAL)
BUILTIN = ("<|channel|>analysis to=python<|message|>print(2 + 2)" + NEXT
           + "<|channel|>commentary to=browser.search <|constrain|>json"
             '<|message|>{"query": "Paris weather"}' + NEXT + FINAL)
NON_JSON = (ANALYSIS + NEXT + "<|channel|>commentary to=functions.create_note <|constrain|>text"
            "<|message|>title: Paris trip\nbody: sunny" + "<|call|><|start|>assistant"
            + "<|channel|>commentary to=functions.get_weather code<|message|>city=Paris")
INVALID_JSON = (ANALYSIS + NEXT + "<|channel|>commentary to=functions.get_weather "
                "<|constrain|>json<|message|>{\"city\": \"Paris\", unit: c")
COMMENTARY_FINAL = PREAMBLE + NEXT + FINAL
EMPTY_ANALYSIS = "<|channel|>analysis<|message|>" + NEXT + FINAL
USER_MESSAGE = (ANALYSIS + "<|end|><|start|>user<|channel|>final<|message|>Not mine.<|end|>"
                "<|start|>assistant" + FINAL)
BAD_HEADER = "<|channel|>final a b c<|message|>Broken header." + NEXT + FINAL
UNICODE = ("<|channel|>analysis<|message|>Café in 東京? Weather 🌦 first." + NEXT
           + '<|channel|>commentary to=functions.create_note <|constrain|>json<|message|>'
             '{"title": "東京 café 🌦", "body": "é"}<|call|><|start|>assistant'
           + "<|channel|>final<|message|>Noted: 東京, café, 🌦.")
PARTIAL_UTF8 = ("<|channel|>analysis<|message|>Rain?" + NEXT
                + "<|channel|>final<|message|>Sun ⟪F0⟫⟪9F⟫")
INVALID_BYTE = "<|channel|>final<|message|>Bad ⟪80⟫ byte, then more text."
LATER_CHANNELS = ("<|channel|>final<|channel|>analysis<|message|>Final after all." + NEXT
                  + "<|channel|>final get_weather<|channel|>analysis<|message|>Paris")
CONSTRAINED_COMMENTARY = ANALYSIS + NEXT + "<|channel|>commentary<|constrain|>json<|message|>{}"

CASES = [
    Case(BOTH, "reasoning_final", REASONING_FINAL),
    Case(BOTH, "final_only", FINAL_ONLY),
    Case(BOTH, "preamble_tool", PREAMBLE_TOOL, eos=CALL),
    Case(BOTH, "recipient_first", RECIPIENT_FIRST, eos=CALL),
    Case(BOTH, "two_calls", TWO_CALLS, eos=CALL),
    Case(BOTH, "parallel_false", TWO_CALLS, eos=CALL, request={"parallel_tool_calls": False}),
    Case(BOTH, "tool_choice_none", REASONING_TOOL, eos=CALL, request={"tool_choice": "none"}),
    Case(BOTH, "no_tools", REASONING_TOOL, eos=CALL, tools=False),
    Case(BOTH, "required", REASONING_TOOL, eos=CALL, request={"tool_choice": "required"}),
    Case(BOTH, "named", REASONING_TOOL, eos=CALL, request={"tool_choice": NAMED}),
    Case(BOTH, "no_include_reasoning", REASONING_FINAL, request={"include_reasoning": False}),
    Case(BOTH, "plain_text", PLAIN),
    Case(BOTH, "truncated_header", TRUNCATED_HEADER, eos=None),
    Case(BOTH, "truncated_content", TRUNCATED_CONTENT, eos=None),
    Case(BOTH, "two_finals", TWO_FINALS),
    Case(BOTH, "two_analysis", TWO_ANALYSIS),
    Case(BOTH, "builtin_recipients", BUILTIN),
    Case(BOTH, "non_json_args", NON_JSON, eos=CALL),
    Case(BOTH, "invalid_json", INVALID_JSON, eos=CALL),
    Case(BOTH, "endoftext_eos", REASONING_FINAL, eos=ENDOFTEXT),
    Case(BOTH, "commentary_final", COMMENTARY_FINAL),
    Case(BOTH, "empty_analysis", EMPTY_ANALYSIS),
    Case(BOTH, "user_message", USER_MESSAGE),
    Case(BOTH, "bad_header", BAD_HEADER),
    Case(BOTH, "unicode", UNICODE),
    Case(BOTH, "partial_utf8", PARTIAL_UTF8, eos=None),
    Case(BOTH, "invalid_byte", INVALID_BYTE),
    Case(TOOLS_ONLY, "reasoning_final", REASONING_FINAL),
    Case(TOOLS_ONLY, "reasoning_tool", REASONING_TOOL, eos=CALL),
    Case(REASONING_ONLY, "reasoning_tool", REASONING_TOOL, eos=CALL),
    Case(REASONING_ONLY, "reasoning_final", REASONING_FINAL),
    Case(BOTH, "reasoning_final", REASONING_FINAL, stream="one"),
    Case(BOTH, "reasoning_final", REASONING_FINAL, stream="small", usage_chunk=True),
    Case(BOTH, "preamble_tool", PREAMBLE_TOOL, eos=CALL, stream="small"),
    Case(BOTH, "reasoning_tool", REASONING_TOOL, eos=CALL, stream="mixed", finish_alone=True),
    Case(BOTH, "two_calls", TWO_CALLS, eos=CALL, stream="small"),
    Case(BOTH, "truncated_header", TRUNCATED_HEADER, eos=None, stream="one"),
    Case(BOTH, "plain_text", PLAIN, stream="mixed"),
    Case(BOTH, "two_finals", TWO_FINALS, stream="small"),
    Case(BOTH, "no_include_reasoning", REASONING_FINAL, request={"include_reasoning": False},
         stream="mixed"),
    Case(BOTH, "partial_utf8", PARTIAL_UTF8, eos=None, stream="one"),
    Case(BOTH, "invalid_byte", INVALID_BYTE, stream="one"),
    Case(BOTH, "tool_choice_none", REASONING_TOOL, eos=CALL, request={"tool_choice": "none"},
         stream="small"),
    Case(TOOLS_ONLY, "reasoning_tool", REASONING_TOOL, eos=CALL, stream="small"),
    Case(BOTH, "later_channels", LATER_CHANNELS, eos=CALL),
    Case(BOTH, "constrained_commentary", CONSTRAINED_COMMENTARY),
    Case(BOTH, "later_channels", LATER_CHANNELS, eos=CALL, stream="small"),
]


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte-level alphabet: byte b is the vocabulary piece of this character."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    extra = [b for b in range(256) if b not in printable]
    return {**{b: chr(b) for b in printable},
            **{b: chr(256 + k) for k, b in enumerate(extra)}}


BYTE_PIECES = _bytes_to_unicode()
BYTE = re.compile(r"⟪([0-9A-F]{2})⟫")


def encode(tokenizer: Tokenizer, output: str) -> list[int]:
    """The Harmony tokens as their ids (added tokens); ``⟪HH⟫`` as the single-byte token."""
    ids: list[int] = []
    for k, part in enumerate(BYTE.split(output)):
        if k % 2:
            piece = tokenizer.token_to_id(BYTE_PIECES[int(part, 16)])
            assert piece is not None, part
            ids.append(piece)
        elif part:
            ids += tokenizer.encode(part, add_special_tokens=False).ids
    return ids


FORMAT = Format(320, SERVERS, CASES, encode=encode)
