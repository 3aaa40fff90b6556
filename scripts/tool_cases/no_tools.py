"""Calls without tools for the formats ``edge_cases`` does not record (cases 1546-…): calls
in an output whose request has no ``tools``, ``"tools": []``, or ``tool_choice`` "none", for
llama3_json and pythonic (the derived Llama 3.1 tokenizer, as ``tool_cases/llama3.py``) and
deepseek_v3/deepseek_v31 (the ``deepseek-v3`` folder, as ``tool_cases/deepseek.py``). gpt-oss
(``openai``) has its recordings already: 326 ("none") and 327 (no tools).

    S="$VLLM_PEER"/start.sh   # the peer kit's start.sh
    $S llama3.1-tools 8611 --tool-call-parser llama3_json --enable-auto-tool-choice
    $S llama3.1-tools 8612 --tool-call-parser pythonic --enable-auto-tool-choice
    $S deepseek-v3 8613 --tool-call-parser deepseek_v3 --enable-auto-tool-choice
    $S deepseek-v3 8614 --tool-call-parser deepseek_v31 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py no_tools 8611 8612 8613 8614
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import Case as _Case
from record_tool_fixtures import Format, encode_plain, render_prompt
from tokenizers import Tokenizer

from tool_cases import deepseek, llama3

SERVERS = {llama3.LLAMA: llama3._server(llama3.LLAMA), llama3.PY: llama3._server(llama3.PY),
           deepseek.V3: deepseek._server(deepseek.V3, False),
           deepseek.V31: deepseek._server(deepseek.V31, False)}
for _key, _server in SERVERS.items():
    _server.slug = f"i15-{_server.slug}"  # the recorded files' names

OUTPUTS = {
    llama3.LLAMA: 'Sure. {"name": "get_weather", "parameters": {"city": "Paris"}}',
    llama3.PY: "[get_weather(city='Paris')]",
    deepseek.V3: "Sure." + deepseek.V3_SINGLE,
    deepseek.V31: "Sure." + deepseek.V31_SINGLE,
}
EOS = {llama3.LLAMA: llama3.EOT, llama3.PY: llama3.EOT, deepseek.V3: deepseek.EOS,
       deepseek.V31: deepseek.EOS}


def Case(server: str, shape: str, **fields: Any) -> list[_Case]:  # noqa: N802
    """Non-streaming, then streamed in "small" chunks."""
    base = {"eos": EOS[server], **fields}
    return [_Case(server, shape, OUTPUTS[server], **base),
            _Case(server, shape, OUTPUTS[server], stream="small", **base)]


CASES = [
    *[case for server in SERVERS for case in Case(server, "i15_no_tools", tools=False)],
    *Case(deepseek.V31, "i15_tool_choice_none", request={"tool_choice": "none"}),
    *Case(llama3.LLAMA, "i15_empty_tools", tools=False, request={"tools": []}),
]


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    if chat_request.get("tools") == []:  # refused by the render step: rendered without
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(1546, SERVERS, CASES, encode=encode_plain, prompt=prompt)
