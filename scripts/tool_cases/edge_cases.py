"""Edge cases across formats (cases 1500-…), recorded where derender had differed from vLLM.

Four servers: Qwen3 with the hermes tool parser (no reasoning parser: whitespace before a
call stays content), Qwen3 with qwen3_coder, and the two derived Mistral tokenizers of
``tool_cases/mistral.py`` (with ``[ARGS]`` and without):

    S="$VLLM_PEER"/start.sh   # the peer kit's start.sh
    scripts/peer-model-folders.sh mistral-tools mistral-tools-v3
    $S qwen3 8601 --tool-call-parser hermes --enable-auto-tool-choice
    $S qwen3 8602 --tool-call-parser qwen3_coder --enable-auto-tool-choice
    $S mistral-tools 8603 --tool-call-parser mistral --enable-auto-tool-choice \\
        --reasoning-parser mistral
    $S mistral-tools-v3 8604 --tool-call-parser mistral --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py edge_cases 8601 8602 8603 8604

1. hermes: whitespace before an unreadable ``<tool_call>`` or one cut off in its head;
2. mistral: argument values typed by the tool's schema;
3. mistral, older grammar: ``arguments`` written as a JSON string holding an object;
4. calls without ``tools``, with ``"tools": []`` and under ``tool_choice`` "none";
5. private-use characters U+E000… (the parser markers' stand-ins) in the model's text.

Mistral outputs are encoded as ``tool_cases/mistral.py`` encodes them (markers by id, the
prompt ``<s>[INST] … [/INST]``); Qwen3 outputs with the tokenizer (``<tool_call>`` by id).
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import NAMED, ROOT, TOOLS, Format, Server, encode_plain, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases import mistral
from tool_cases.shared import CONFIG

QWEN3 = ROOT / "layers" / "tokenizers" / "qwen3" / "tokenizer.json"
IM_END, MISTRAL_EOS = 151645, 2
HERMES, CODER, MISTRAL, OLDER = "hermes", "qwen3_coder", "mistral", "mistral-v3"


def _qwen3(parser: str, reasoning: bool) -> Server:
    r = ["--reasoning-parser", "qwen3"] if reasoning else []
    return Server("qwen3", ["--served-model-name", "qwen3", "--tool-call-parser", parser, *r,
                            "--enable-auto-tool-choice"],
                  f"{parser} tool parser", f"i15-{parser}",  # "i15-": the recorded files' names
                  (f"parser:{parser}", *(("reasoning", "parser:qwen3") if reasoning else ())),
                  QWEN3)


def _mistral(model: str, flags: list[str], label: str) -> Server:
    server = mistral._server(model, flags, label)
    server.slug = "i15-mistral" if model == mistral.MODEL else "i15-mistral-v3"
    return server


SERVERS = {
    HERMES: _qwen3("hermes", False),
    CODER: _qwen3("qwen3_coder", False),
    MISTRAL: _mistral(mistral.MODEL, ["--reasoning-parser", "mistral"],
                      "tool and reasoning parsers"),
    OLDER: _mistral(mistral.OLDER, [], "tool parser (older grammar)"),
}


def Case(server: str, shape: str, output: str, **fields: Any) -> list[_Case]:  # noqa: N802
    """The case non-streaming and streamed ("small" chunks unless ``stream`` says)."""
    eos = IM_END if server in (HERMES, CODER) else MISTRAL_EOS
    stream = fields.pop("stream", "small")
    base = {"eos": eos, **fields}
    return [_Case(server, shape, output, **base),
            _Case(server, shape, output, stream=stream, **base)]


NO_TOOLS: dict[str, Any] = {}
EMPTY_TOOLS: dict[str, Any] = {"tools": []}
NONE: dict[str, Any] = {"tool_choice": "none"}

# 1. hermes
BAD_HEAD = '  \n<tool_call>\nnot a call at all\n</tool_call>'
CUT_HEAD = '\n\n<tool_call>\n{"name": "get_wea'
BAD_THEN_CALL = (' \n<tool_call>{"oops": 1}</tool_call>\n'
                 '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
                 '</tool_call>')
HERMES_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'

# 2. mistral typing
TYPED = ('[TOOL_CALLS]set_config[ARGS]{"count": "2", "enabled": "true", "ratio": "450", '
         '"label": 42, "level": "3", "note": "null", "tags": "[\\"a\\"]", '
         '"meta": "{\\"k\\": 1}"}')
TYPED_KEPT = ('[TOOL_CALLS]set_config[ARGS]{"count": "two", "enabled": "yes", '
              '"ratio": 1.5, "label": "x", "level": 2, "other": "7"}')
TYPED_V3 = '[TOOL_CALLS][{"name": "set_config", "arguments": {"count": "2", "enabled": "true"}}]'

# 3. mistral, older grammar: arguments as a JSON string holding an object
STRING_ARGS = '[TOOL_CALLS][{"name": "get_weather", "arguments": "{\\"city\\": \\"Kyiv\\"}"}]'
STRING_ARGS_OBJECT = ('[TOOL_CALLS]{"name": "get_weather", '
                      '"arguments": "{\\"city\\": \\"Kyiv\\", \\"unit\\": \\"c\\"}"}')
STRING_ARGS_NOT_JSON = '[TOOL_CALLS][{"name": "get_weather", "arguments": "city=Kyiv"}]'

# 4. no tools
MISTRAL_CALL = 'Hello [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
V3_CALL = 'Hello [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]'
CODER_CALL = ("Sure.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
              "</parameter>\n</function>\n</tool_call>")

# 5. private-use characters
PRIVATE = "Stand-ins \ue000\ue002\ue003 \ue007 and \ue00f\ue010 stay as written."
PRIVATE_CALL = ("Look: \ue002 \ue003\n<tool_call>\n"
                '{"name": "get_weather", "arguments": {"city": "\ue002Paris\ue000"}}\n'
                "</tool_call>")
PRIVATE_CODER = ("Look \ue002\n<tool_call>\n<function=get_weather>\n<parameter=city>\n"
                 "\ue003Paris\n</parameter>\n</function>\n</tool_call>")

CASES = [
    *Case(HERMES, "i15_bad_head_space", BAD_HEAD),
    *Case(HERMES, "i15_cut_head_space", CUT_HEAD, eos=None, stream="one"),
    *Case(HERMES, "i15_bad_then_call", BAD_THEN_CALL),
    *Case(MISTRAL, "i15_typed", TYPED, request={"tools": [CONFIG]}),
    *Case(MISTRAL, "i15_typed_kept", TYPED_KEPT, request={"tools": [CONFIG]}, stream="one"),
    *Case(OLDER, "i15_typed_v3", TYPED_V3, request={"tools": [CONFIG]}),
    *Case(OLDER, "i15_string_args", STRING_ARGS),
    *Case(OLDER, "i15_string_args_object", STRING_ARGS_OBJECT, stream="one"),
    *Case(OLDER, "i15_string_args_not_json", STRING_ARGS_NOT_JSON),
    *Case(HERMES, "i15_no_tools", HERMES_CALL, tools=False),
    *Case(HERMES, "i15_empty_tools", HERMES_CALL, tools=False, request=EMPTY_TOOLS),
    *Case(HERMES, "i15_tool_choice_none", HERMES_CALL, request=NONE),
    *Case(CODER, "i15_no_tools", CODER_CALL, tools=False),
    *Case(CODER, "i15_empty_tools", CODER_CALL, tools=False, request=EMPTY_TOOLS),
    *Case(CODER, "i15_tool_choice_none", CODER_CALL, request=NONE),
    *Case(MISTRAL, "i15_no_tools", MISTRAL_CALL, tools=False),
    *Case(MISTRAL, "i15_empty_tools", MISTRAL_CALL, tools=False, request=EMPTY_TOOLS),
    *Case(OLDER, "i15_no_tools", V3_CALL, tools=False),
    *Case(OLDER, "i15_empty_tools", V3_CALL, tools=False, request=EMPTY_TOOLS),
    *Case(HERMES, "i15_private_use", PRIVATE, stream="one"),
    *Case(HERMES, "i15_private_use_call", PRIVATE_CALL, stream="one"),
    *Case(CODER, "i15_private_use_call", PRIVATE_CODER, stream="one"),
    *Case(HERMES, "i15_named_no_call", "  \n<tool_call>\nnope\n</tool_call>",
          request={"tool_choice": NAMED}),
]


def _is_mistral(tokenizer: Tokenizer) -> bool:
    return tokenizer.token_to_id("[TOOL_CALLS]") is not None


def encode(tokenizer: Tokenizer, output: str) -> list[int]:
    if _is_mistral(tokenizer):
        return mistral.encode(tokenizer, output)
    ids = encode_plain(tokenizer, output)
    assert tokenizer.decode(ids, skip_special_tokens=False) == output, output
    return ids


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    if _is_mistral(tokenizer):
        return mistral.prompt(port, tokenizer, chat_request)
    if chat_request.get("tools") == []:  # refused by the render step: rendered without
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(1500, SERVERS, CASES, tools=TOOLS, encode=encode, prompt=prompt)
