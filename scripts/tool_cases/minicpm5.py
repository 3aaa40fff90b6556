"""MiniCPM5 (issue 19, cases 8800-…, branch minicpm5): vLLM 0.33's ``minicpm5`` tool parser
(``vllm/tool_parsers/minicpm5xml_tool_parser.py``: ``<function name="N"><param name="K">V
</param></function>`` blocks read as XML, else by regular expressions) with the ``minicpmv``
reasoning parser, and alone. On Qwen3's vocabulary (``qwen3``, a stand-in: MiniCPM5's own files
were not used; its call tags are text of several ids there, as in MiniCPM5's).

Usage (the ``qwen3`` folder copied to ``$PEER_HOME/models/mc5-qwen3``):

    "$VLLM_PEER"/start.sh mc5-qwen3 8730 --served-model-name qwen3 --reasoning-parser minicpmv \\
        --tool-call-parser minicpm5 --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh mc5-qwen3 8731 --served-model-name qwen3 \\
        --tool-call-parser minicpm5 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py minicpm5 8730 8731

Then EOS ``<|im_end|>`` 151645, or none (finish "length"). Every case is recorded
non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases.shared import CONFIG, NAMED_CHOICE, NONE, PING, REQUIRED, USER, both
from tool_cases.shared import TOOLS as SHARED_TOOLS

QWEN = ROOT / "layers" / "tokenizers" / "qwen3" / "tokenizer.json"
IM_END = 151645
MODEL = "qwen3"
PAIR, ALONE = "minicpm5", "minicpm5-alone"
SERVERS = {
    PAIR: Server(MODEL, ["--served-model-name", MODEL, "--reasoning-parser", "minicpmv",
                         "--tool-call-parser", "minicpm5", "--enable-auto-tool-choice"],
                 "minicpmv reasoning and minicpm5 tool parsers", "minicpm5",
                 ("parser:minicpm5", "reasoning", "reasoning_parser:minicpmv"), QWEN),
    ALONE: Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", "minicpm5",
                          "--enable-auto-tool-choice"],
                  "minicpm5 tool parser alone", "minicpm5-alone", ("parser:minicpm5",), QWEN),
}
# a tool one of vLLM's alias names maps to (get_line_details -> get_details_by_id)
DETAILS = {"type": "function", "function": {
    "name": "get_details_by_id", "description": "Details of a line or plan",
    "parameters": {"type": "object", "properties": {"id": {"type": "string"}},
                   "required": ["id"]}}}
TOOLS = [*SHARED_TOOLS, DETAILS]
assert CONFIG in TOOLS and PING in TOOLS
OFF: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": False}}
WIDE = "Zürich 😀𝄞"
LONG = "lorem ipsum " * 40


def call(name: str, **params: str) -> str:
    body = "".join(f'<param name="{k}">{v}</param>' for k, v in params.items())
    return f'<function name="{name}">{body}</function>'


PARIS = call("get_weather", city="Paris")
TURNS = [{"role": "user", "content": "Weather in Paris?"},
         {"role": "assistant", "content": "", "tool_calls": [{
             "id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
         {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 22 °C"},
         {"role": "user", "content": "And in Rome?"}]


def Case(shape: str, output: str, stream: str, server: str = PAIR,  # noqa: N802
         **fields: Any) -> list[_Case]:
    tools = fields.pop("tools", True)
    kind = "reasoning" if server == PAIR else "tool_call"
    return both(_Case(server, shape, output, **{"eos": IM_END, "kind": kind,
                                                 "tools": tools, **fields}), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    t = "Hmm.</think>\n\n"
    out += Case("tool", t + PARIS, "small")
    out += Case("answer", t + "Sunny.", "small")
    out += Case("parallel", t + PARIS + "\n" + call("get_weather", city="Rome", unit="c"),
                "mixed")
    out += Case("content_before", t + "Let me check.\n" + PARIS, "small")
    out += Case("content_after", t + PARIS + "\nDone.", "small")
    out += Case("typed", t + call("set_config", count="3", ratio="0.5", enabled="true",
                                  tags='["a", "b"]', meta='{"k": 1}', note="null", label="7",
                                  level="2"), "mixed")
    out += Case("typed_python", t + call("set_config", count=" 3 ", enabled="True",
                                         tags="['a']", meta="{'k': None}", ratio="abc"), "small")
    out += Case("unicode", t + "Olá 😀 " + call("get_weather", city=WIDE), "one")
    out += Case("long_value", t + call("set_config", label=LONG), "mixed")
    out += Case("entities", t + call("get_weather", city="A &amp; B &lt;x&gt;"), "small")
    out += Case("cdata", t + call("get_weather", city="<![CDATA[a < b]]>"), "small")
    out += Case("raw_lt", t + call("get_weather", city=" a < b "), "small")
    out += Case("newlines", t + '<function name="get_weather">\n<param name="city">\nParis\n'
                "</param>\n</function>", "small")
    out += Case("missing_required", t + call("get_weather", unit="c"), "small")
    out += Case("unknown_tool", t + call("get_stock", symbol="X"), "small")
    out += Case("unknown_then_known", t + call("get_stock", symbol="X") + PARIS, "small")
    out += Case("extra_param", t + call("get_weather", city="Paris", foo="1"), "small")
    out += Case("duplicate_param", t + call("get_weather", city="Paris") [:-11]
                + '<param name="city">Rome</param></function>', "small")
    out += Case("wrapped", t + call("get_weather", arguments="{'city': 'Paris', 'x': 1}"),
                "small")
    out += Case("nested_arguments", t + '<function name="get_weather"><arguments>'
                '<param name="city">Paris</param></arguments></function>', "small")
    out += Case("alias", t + call("get_line_details", line_id="L1"), "small")
    out += Case("no_param_name", t + '<function name="get_weather"><param>Paris</param>'
                "</function>", "small")
    out += Case("unquoted", t + '<function name=get_weather><param name="city">Paris</param>'
                "</function>", "small")
    out += Case("collapsed", t + '<functionname="get_weather"><paramname="city">Paris'
                "</param></function>", "small")
    out += Case("set_value", t + call("set_config", tags="{1, 2}"), "small")
    out += Case("tokenizer_space", t + "Sun\u0120ny\u010a" + call("get_weather",
                                                                  city="New\u0120York"), "small")
    out += Case("cut_name", t + '<function name="get_wea', "small", eos=None)
    out += Case("cut_args", t + '<function name="get_weather"><param name="city">Par', "small",
                eos=None)
    out += Case("no_end", t + "Sure. " + '<function name="get_weather"><param name="city">'
                "Paris</param>", "small")
    out += Case("tool_in_reasoning", "Hmm.\n" + PARIS, "small")
    out += Case("off_tool", "Sure.\n" + PARIS, "small", request=OFF)
    out += Case("off_answer", "Sunny.", "small", request=OFF)
    out += Case("no_tools", t + "Sure." + PARIS, "small", tools=False)
    out += Case("tool_choice_none", t + "Sure." + PARIS, "small", request=NONE)
    out += Case("required", t + '[{"name": "get_weather", "parameters": {"city": "Paris"}}]',
                "small", request=REQUIRED)
    out += Case("named", t + '{"city": "Paris"}', "small", request=NAMED_CHOICE)
    out += Case("multi_turn", t + call("get_weather", city="Rome"), "small",
                request={"messages": TURNS})
    out += Case("keep_special", t + PARIS, "small", request={"skip_special_tokens": False})
    out += Case("alone_tool", "Sure.\n" + PARIS, "small", ALONE)
    out += Case("alone_think", "Hmm.</think>\n\nSunny.", "small", ALONE)
    out += Case("alone_think_tool", "Hmm.</think>\n\n" + PARIS, "small", ALONE)
    out += Case("alone_unread", "  Hi " + call("get_stock", symbol="X") + "  ", "small", ALONE)
    out += Case("alone_answer", "Sunny.\n", "small", ALONE)
    # MiniCPM-V's escaped newlines: recovered in the reasoning, not in the arguments
    out += Case("escapes", "Hmm.\\nx</think>\n\n" + call("get_weather", city="a\\nb"), "small")
    out += Case("empty_tools", t + PARIS, "small", tools=False, request={"tools": []})
    return out


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    if chat_request.get("tools") == []:  # refused by the render step: rendered without
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(8800, SERVERS, cases(), tools=TOOLS, user=USER, prompt=prompt)
