"""JSON calls in a wrapper (issue 19, cases 3800-…): ``phi4_mini_json`` (3800-3848) on
``phi4-mini-standin`` (gpt-oss's o200k vocabulary with Phi-4-mini's special tokens at their
ids; tests/models/README.md).

Usage (`scripts/peer-model-folders.sh phi4-mini-standin` first copies the derived folder):

    "$VLLM_PEER"/start.sh phi4-mini-standin 8260 --tool-call-parser phi4_mini_json \\
        --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py json_wrapped 8260

The output is optional text, then ``functools[`` and a JSON list of ``{"name", "arguments"}``
(or ``"parameters"``) objects, ``]``, then EOS ``<|end|>`` 200020, or none (finish
"length"). Each output is recorded non-streaming and then streamed (``both``).
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

PHI4_MODEL = "phi4-mini-standin"
PHI4_END = 200020
PHI4 = "phi4_mini_json"

JAMBA_MODEL = "jamba-standin"
JAMBA_EOS = 50256
JAMBA = "jamba"


def _server(model: str, parser: str) -> Server:
    return Server(model, ["--served-model-name", model, "--tool-call-parser", parser,
                          "--enable-auto-tool-choice"],
                  f"{parser} tool parser", parser, (f"parser:{parser}",),
                  ROOT / "tests" / "models" / model / "tokenizer.json")


INTERNLM_MODEL = "internlm2-standin"
INTERNLM_EOS = 92542
INTERNLM = "internlm"

GIGA_MODEL = "gigachat3-standin"
GIGA_EOS = 50256
GIGA = "gigachat3"

SERVERS = {PHI4: _server(PHI4_MODEL, PHI4), JAMBA: _server(JAMBA_MODEL, JAMBA),
           INTERNLM: _server(INTERNLM_MODEL, INTERNLM), GIGA: _server(GIGA_MODEL, GIGA)}


def Case(server: str, shape: str, output: str, stream: str = "small", **kw: Any  # noqa: N802
         ) -> list[_Case]:
    kw.setdefault("eos", {PHI4: PHI4_END, JAMBA: JAMBA_EOS, INTERNLM: INTERNLM_EOS,
                          GIGA: GIGA_EOS}[server])
    return both(_Case(server, shape, output, **kw), stream)


def phi4(*calls: str) -> str:
    return "functools[" + ", ".join(calls) + "]"


WEATHER = '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}'
WEATHER_P = '{"name": "get_weather", "parameters": {"city": "東京"}}'
CONFIG = ('{"name": "set_config", "arguments": {"count": 3, "ratio": -0.25, "enabled": true, '
          '"meta": {"k": {"deep": null}}, "note": null, "label": "Zürich \\u00df 🌦 \\ud83d\\ude00",'
          ' "level": 2}}')
TAGS = '{"name": "set_config", "arguments": {"tags": ["a", "b"], "count": 1}}'
PING = '{"name": "get_time", "arguments": {}}'
LONG = '{"name": "set_config", "arguments": {"label": "' + "long 𝄞 value " * 60 + '"}}'
HISTORY: dict[str, Any] = {"messages": [
    {"role": "user", "content": USER},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'},
    {"role": "user", "content": "And in Tokyo?"}]}

CASES = [
    *Case(PHI4, "single", phi4(WEATHER)),
    *Case(PHI4, "parallel", phi4(WEATHER, WEATHER_P), stream="mixed"),
    *Case(PHI4, "content_before", "Let me check that. " + phi4(WEATHER)),
    *Case(PHI4, "content_after", phi4(WEATHER) + "\nDone, anything else?"),
    *Case(PHI4, "no_call", "Paris is sunny today [source: météo], 22 °C 🌞."),
    *Case(PHI4, "typed_values", phi4(CONFIG, PING), stream="mixed"),
    *Case(PHI4, "long_value", phi4(LONG), stream="mixed"),
    *Case(PHI4, "cut_in_name", 'functools[{"name": "get_wea', eos=None),
    *Case(PHI4, "cut_in_args", 'functools[{"name": "get_weather", "arguments": {"city": "Pa',
          eos=None),
    *Case(PHI4, "malformed", "functools[not json at all] trailing"),
    *Case(PHI4, "not_a_call", 'functools[{"city": "Paris"}]'),
    *Case(PHI4, "bracket_in_args", phi4(TAGS)),
    *Case(PHI4, "empty_list", "functools[]"),
    *Case(PHI4, "string_args", phi4('{"name": "get_weather", "arguments": "Paris"}')),
    *Case(PHI4, "marker_split", "Ok " + phi4(WEATHER), stream="one"),
    *Case(PHI4, "tool_choice_none", phi4(WEATHER), request=NONE),
    *Case(PHI4, "no_tools", phi4(WEATHER), tools=False),
    _Case(PHI4, "empty_tools", phi4(WEATHER), eos=PHI4_END, tools=False,
          request={"tools": []}),
    *Case(PHI4, "required", phi4(WEATHER), request=REQUIRED),
    *Case(PHI4, "required_json",
          '[{"name": "get_weather", "parameters": {"city": "Paris"}}]', request=REQUIRED),
    *Case(PHI4, "named", phi4(WEATHER), request=NAMED_CHOICE),
    *Case(PHI4, "named_json", '{"city": "Paris", "unit": "f"}', request=NAMED_CHOICE),
    *Case(PHI4, "history", phi4(WEATHER_P), request=HISTORY),
    *Case(PHI4, "keep_special", "Hi<|tool_call|> " + phi4(WEATHER),
          request={"skip_special_tokens": False}),
    *Case(PHI4, "two_wrappers", phi4(WEATHER) + " " + phi4(PING)),
]



def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    if chat_request.get("tools") == []:  # refused by the render step: rendered without
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    return render_prompt(port, tokenizer, chat_request)




def jamba(*calls: str) -> str:
    return "<tool_calls>[" + ", ".join(calls) + "]</tool_calls>"


FLIPPED = '{"arguments": {"city": "Paris"}, "name": "get_weather"}'
CASES += [
    *Case(JAMBA, "single", jamba(WEATHER)),
    *Case(JAMBA, "parallel", jamba(WEATHER, '{"name": "get_time", "arguments": {}}'),
          stream="mixed"),
    *Case(JAMBA, "content_before", "Let me check that.\n" + jamba(WEATHER)),
    *Case(JAMBA, "space_before", "\n\n" + jamba(WEATHER)),
    *Case(JAMBA, "content_after", jamba(WEATHER) + "\nDone, anything else?"),
    *Case(JAMBA, "no_call", "Paris is sunny today [source: météo], 22 °C 🌞."),
    *Case(JAMBA, "typed_values", jamba(CONFIG, PING), stream="mixed"),
    *Case(JAMBA, "long_value", jamba(LONG), stream="mixed"),
    *Case(JAMBA, "bracket_in_args", jamba(TAGS)),
    *Case(JAMBA, "cut_in_name", '<tool_calls>[{"name": "get_wea', eos=None),
    *Case(JAMBA, "cut_in_args", '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Pa',
          eos=None),
    *Case(JAMBA, "no_end_tag", "<tool_calls>[" + WEATHER + "]"),
    *Case(JAMBA, "malformed", "<tool_calls>not json at all</tool_calls> trailing"),
    *Case(JAMBA, "not_a_list", "<tool_calls>" + WEATHER + "</tool_calls>"),
    *Case(JAMBA, "parameters_key", jamba(WEATHER_P)),
    *Case(JAMBA, "keys_flipped", jamba(FLIPPED)),
    *Case(JAMBA, "empty_list", "<tool_calls>[]</tool_calls>"),
    *Case(JAMBA, "space_in_wrapper", "<tool_calls>\n [" + WEATHER + "]\n</tool_calls>"),
    *Case(JAMBA, "string_args", jamba('{"name": "get_weather", "arguments": "Paris"}')),
    *Case(JAMBA, "tool_choice_none", jamba(WEATHER), request=NONE),
    *Case(JAMBA, "no_tools", jamba(WEATHER), tools=False),
    _Case(JAMBA, "empty_tools", jamba(WEATHER), eos=JAMBA_EOS, tools=False,
          request={"tools": []}),
    *Case(JAMBA, "required", jamba(WEATHER), request=REQUIRED),
    *Case(JAMBA, "required_json",
          '[{"name": "get_weather", "parameters": {"city": "Paris"}}]', request=REQUIRED),
    *Case(JAMBA, "named", jamba(WEATHER), request=NAMED_CHOICE),
    *Case(JAMBA, "history", jamba(WEATHER_P), request=HISTORY),
    *Case(JAMBA, "skip_special_false", "Hi " + jamba(WEATHER),
          request={"skip_special_tokens": False}),
    *Case(JAMBA, "two_blocks", jamba(WEATHER) + " " + jamba(PING)),
    *Case(JAMBA, "marker_split", "Ok " + jamba(WEATHER), stream="one"),
]
"""Jamba (cases 3849-…): ``<tool_calls>`` and ``</tool_calls>`` single tokens of the stand-in,
a JSON list of ``{"name", "arguments"}`` between them; EOS ``<|endoftext|>`` 50256."""



def action(call: str) -> str:
    return "<|action_start|><|plugin|>\n" + call + "<|action_end|>"


ACT = "<|action_start|><|plugin|>"
I_WEATHER = '{"name": "get_weather", "parameters": {"city": "Paris", "unit": "c"}}'
I_CONFIG = CONFIG.replace('"arguments"', '"parameters"')


def error_case(shape: str, output: str, **kw: Any) -> _Case:
    """An output vLLM's non-streaming internlm parser raises on (400/500): recorded without a
    stream."""
    return _Case(INTERNLM, shape, output, eos=kw.pop("eos", INTERNLM_EOS), **kw)


CASES += [
    *Case(INTERNLM, "single", action(I_WEATHER)),
    *Case(INTERNLM, "content_before", "Let me check that.\n" + action(I_WEATHER)),
    *Case(INTERNLM, "space_before", "\n\n" + action(I_WEATHER)),
    *Case(INTERNLM, "content_after", action(I_WEATHER) + "\nDone, anything else?"),
    *Case(INTERNLM, "no_call", "Paris is sunny today [source: météo], 22 °C 🌞."),
    *Case(INTERNLM, "typed_values", action(I_CONFIG), stream="mixed"),
    *Case(INTERNLM, "long_value", action(LONG.replace('"arguments"', '"parameters"')),
          stream="mixed"),
    *Case(INTERNLM, "arguments_key", action(WEATHER)),
    *Case(INTERNLM, "keys_flipped",
          action('{"parameters": {"city": "Paris"}, "name": "get_weather"}')),
    *Case(INTERNLM, "no_arguments", action('{"name": "get_time"}')),
    *Case(INTERNLM, "text_before_brace", ACT + "call: " + I_WEATHER + "<|action_end|>"),
    *Case(INTERNLM, "string_args", action('{"name": "get_weather", "parameters": "Paris"}')),
    *Case(INTERNLM, "no_end_marker", ACT + "\n" + I_WEATHER),
    error_case("cut_in_name", ACT + '\n{"name": "get_wea', eos=None),
    error_case("cut_in_args", ACT + '\n{"name": "get_weather", "parameters": {"city": "Pa',
               eos=None),
    error_case("malformed", ACT + "not json at all<|action_end|> trailing"),
    error_case("two_calls", action(I_WEATHER) + action('{"name": "get_time", "parameters": {}}')),
    error_case("trailing_in_action", ACT + I_WEATHER + " and more<|action_end|>"),
    error_case("not_a_call", action('{"city": "Paris"}')),
    *Case(INTERNLM, "tool_choice_none", action(I_WEATHER), request=NONE),
    *Case(INTERNLM, "no_tools", action(I_WEATHER), tools=False),
    _Case(INTERNLM, "empty_tools", action(I_WEATHER), eos=INTERNLM_EOS, tools=False,
          request={"tools": []}),
    *Case(INTERNLM, "required", action(I_WEATHER), request=REQUIRED),
    *Case(INTERNLM, "required_json",
          '[{"name": "get_weather", "parameters": {"city": "Paris"}}]', request=REQUIRED),
    *Case(INTERNLM, "named", action(I_WEATHER), request=NAMED_CHOICE),
    *Case(INTERNLM, "history", action(I_WEATHER), request=HISTORY),
    *Case(INTERNLM, "skip_special_false", "Hi " + action(I_WEATHER),
          request={"skip_special_tokens": False}),
    *Case(INTERNLM, "marker_split", "Ok " + action(I_WEATHER), stream="one"),
]
"""InternLM2 (cases 3906-…): ``<|action_start|><|plugin|>`` then one JSON object
``{"name", "parameters"}`` (or ``"arguments"``) and ``<|action_end|>`` (single tokens of the
stand-in at InternLM2's ids); EOS ``<|im_end|>`` 92542. Outputs vLLM's message raises on
are recorded without a stream (``error_case``)."""

SEP, ROLE, FCALL = "<|message_sep|>", "<|role_sep|>", "<|function_call|>"


def giga(call: str, before: str = "") -> str:
    return before + SEP + "\n\nfunction call" + ROLE + "\n" + call


CASES += [
    *Case(GIGA, "single", giga(WEATHER)),
    *Case(GIGA, "content_before", giga(WEATHER, "Let me check that.")),
    *Case(GIGA, "function_call_token", FCALL + WEATHER),
    *Case(GIGA, "content_then_token", "Let me check. " + FCALL + WEATHER),
    *Case(GIGA, "no_separator", "function call" + ROLE + "\n" + WEATHER),
    *Case(GIGA, "no_call", "Paris is sunny today [source: météo], 22 °C 🌞."),
    *Case(GIGA, "separator_no_call", "Paris is sunny." + SEP + "\n\nAnything else?"),
    *Case(GIGA, "typed_values", giga(CONFIG), stream="mixed"),
    *Case(GIGA, "long_value", giga(LONG), stream="mixed"),
    *Case(GIGA, "keys_flipped", giga('{"arguments": {"city": "Paris"}, "name": "get_weather"}')),
    *Case(GIGA, "string_args", giga('{"name": "get_weather", "arguments": "Paris"}')),
    *Case(GIGA, "trailing_text", giga(WEATHER) + " and more"),
    *Case(GIGA, "cut_in_name", giga('{"name": "get_wea'), eos=None),
    *Case(GIGA, "cut_in_args", giga('{"name": "get_weather", "arguments": {"city": "Pa'),
          eos=None),
    *Case(GIGA, "malformed", giga("not json at all")),
    *Case(GIGA, "tool_choice_none", giga(WEATHER), request=NONE),
    *Case(GIGA, "no_tools", giga(WEATHER), tools=False),
    _Case(GIGA, "empty_tools", giga(WEATHER), eos=GIGA_EOS, tools=False,
          request={"tools": []}),
    *Case(GIGA, "required", giga(WEATHER), request=REQUIRED),
    *Case(GIGA, "required_json",
          '[{"name": "get_weather", "parameters": {"city": "Paris"}}]', request=REQUIRED),
    *Case(GIGA, "named", giga(WEATHER), request=NAMED_CHOICE),
    *Case(GIGA, "history", giga(WEATHER_P.replace("parameters", "arguments")), request=HISTORY),
    *Case(GIGA, "skip_special_false", giga(WEATHER, "Hi"),
          request={"skip_special_tokens": False}),
    *Case(GIGA, "marker_split", giga(WEATHER, "Ok"), stream="one"),
]
"""GigaChat 3 (cases 3955-…): content, ``<|message_sep|>``, then ``function call<|role_sep|>\n``
(or ``<|function_call|>``) and one JSON object ``{"name", "arguments"}`` ending the output;
the three markers single tokens of the stand-in; EOS 50256."""

FORMAT = Format(3800, SERVERS, CASES, tools=TOOLS, user=USER, prompt=prompt)
