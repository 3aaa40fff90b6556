"""Step 3 tool calls (issue 19, cases 8600-…, branch qwen3x): vLLM 0.33's ``step3`` tool parser
(``vllm/tool_parsers/step3_tool_parser.py``), alone and with the ``step3`` reasoning parser, on
Qwen3's vocabulary (``qwen3``, a stand-in: Step 3's own is not available offline; there the
call markers are text of several tokens).

Usage (``scripts/peer-model-folders.sh qwen3``, the folder copied to
``$PEER_HOME/models/q3x-step3``):

    "$VLLM_PEER"/start.sh q3x-step3 8720 --served-model-name qwen3 \\
        --tool-call-parser step3 --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh q3x-step3 8721 --served-model-name qwen3 \\
        --reasoning-parser step3 --tool-call-parser step3 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py step3_tools 8720 8721

The calls: ``<｜tool_calls_begin｜>``, per call ``<｜tool_call_begin｜>function<｜tool_sep｜>``
``<steptml:invoke name="N">`` ``<steptml:parameter name="K">V</steptml:parameter>`` …
``</steptml:invoke><｜tool_call_end｜>``, then ``<｜tool_calls_end｜>``. Then EOS
``<|im_end|>`` 151645, or none (finish "length"). Every case is recorded non-streaming and
then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

QWEN = ROOT / "layers" / "tokenizers" / "qwen3" / "tokenizer.json"
IM_END = 151645
MODEL = "qwen3"
ALONE, PAIR = "step3-tools", "step3-both"
SERVERS = {
    ALONE: Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", "step3",
                          "--enable-auto-tool-choice"],
                  "step3 tool parser alone", "step3-tools", ("parser:step3",), QWEN),
    PAIR: Server(MODEL, ["--served-model-name", MODEL, "--reasoning-parser", "step3",
                         "--tool-call-parser", "step3", "--enable-auto-tool-choice"],
                 "step3 reasoning and tool parsers", "step3-both",
                 ("parser:step3", "reasoning", "reasoning_parser:step3"), QWEN),
}
BEGIN, END = "<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"
CALL, END_CALL, SEP = "<｜tool_call_begin｜>", "<｜tool_call_end｜>", "<｜tool_sep｜>"
WIDE = "😀𝄞🀄"
LONG = "lorem ipsum " * 120
MULTI_TURN: dict[str, Any] = {"messages": [
    {"role": "user", "content": USER},
    {"role": "assistant", "content": "", "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "22 °C, sunny"},
    {"role": "user", "content": "And in Zürich?"}]}


def invoke(name: str, *args: tuple[str, str]) -> str:
    params = "".join(f'\n<steptml:parameter name="{k}">{v}</steptml:parameter>' for k, v in args)
    return f'<steptml:invoke name="{name}">{params}\n</steptml:invoke>'


def call(name: str, *args: tuple[str, str], kind: str = "function") -> str:
    return f"{CALL}{kind}{SEP}{invoke(name, *args)}{END_CALL}"


def block(*calls: str) -> str:
    return BEGIN + "".join(calls) + END


PARIS = call("get_weather", ("city", "Paris"), ("unit", "c"))
SINGLE = block(PARIS)


def Case(shape: str, output: str, stream: str, server: str = ALONE,  # noqa: N802
         **fields: Any) -> list[_Case]:
    kind = "reasoning" if server == PAIR else "tool_call"
    return both(_Case(server, shape, output, **{"eos": IM_END, "kind": kind, **fields}), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    out += Case("single", SINGLE, "small")
    out += Case("single_split", SINGLE, "one")
    out += Case("parallel", block(call("get_weather", ("city", "Zürich")),
                                  call("get_weather", ("city", '東京 "Tokyo"\nline two'),
                                       ("unit", "f"))), "small")
    out += Case("typed", block(call(
        "set_config", ("count", "3"), ("ratio", "2"), ("enabled", "True"),
        ("tags", '["a", "b"]'), ("meta", '{"k": 1}'), ("note", "null"), ("label", " 42 "),
        ("level", "2"))), "small")
    out += Case("typed_fallbacks", block(call(
        "set_config", ("count", "three"), ("ratio", "1e3"), ("enabled", "yes"),
        ("count", " 7 "), ("extra", "null"))), "small")
    out += Case("no_args", block(call("get_time")), "small")
    out += Case("content_before", "Let me check the weather.\n" + SINGLE, "mixed")
    out += Case("content_after", SINGLE + "\nI will report back.", "small")
    out += Case("content_around", "  Checking \n" + SINGLE + "\n then done. \n", "small")
    out += Case("space_before", "\n\n" + SINGLE + "\n", "small")
    out += Case("skipped_calls", block(
        call("get_weather", ("city", "Rome"), kind="python"),
        f"{CALL}function{invoke('get_weather', ('city', 'Oslo'))}{END_CALL}",
        "stray text", PARIS, f"{CALL}function{SEP}<steptml:invoke>{END_CALL}"), "small")
    out += Case("no_valid_call", "Hi. " + block(call("get_time", kind="tool")) + " Bye.", "small")
    out += Case("no_call_end", "Hi. " + BEGIN + CALL + "function" + SEP
                + invoke("get_weather", ("city", "Paris")) + END, "small")
    out += Case("two_blocks", SINGLE + "\n" + block(call("get_time")) + "\n", "small")
    out += Case("stray_end", "Done." + END + " ok " + SINGLE, "small")
    out += Case("unknown_tool", block(call("get_stock", ("symbol", "ACME"))), "small")
    out += Case("dup_and_empty", block(call("get_weather", ("city", "Rome"), ("unit", ""),
                                            ("city", "Paris"))), "small")
    out += Case("cut_in_args", "Sure. " + BEGIN + CALL + "function" + SEP
                + '<steptml:invoke name="get_weather">\n<steptml:parameter name="city">Par',
                "small", eos=None)
    out += Case("cut_in_name", "Sure. " + BEGIN + CALL + "function" + SEP
                + '<steptml:invoke name="get_wea', "one", eos=None)
    out += Case("cut_after_call", "Sure. " + BEGIN + PARIS, "small", eos=None)
    out += Case("tags_in_text", "Write <steptml:invoke name=\"x\"> and <｜tool_sep｜> literally.",
                "small")
    out += Case("wide_chars", WIDE + " " + block(call("get_weather", ("city", WIDE + " Zürich")))
                + " " + WIDE, "one")
    out += Case("long_value", block(call("get_weather", ("city", LONG))), "mixed")
    out += Case("tool_choice_none", "Sure. " + SINGLE, "small", request=NONE)
    out += Case("no_tools", "Sure. " + SINGLE, "small", tools=False)
    out += Case("empty_tools", "Sure. " + SINGLE, "small", tools=False, request={"tools": []})
    out += Case("required", SINGLE, "small", request=REQUIRED)
    out += Case("required_json", '[{"name": "get_weather", "parameters": {"city": "Paris"}}]',
                "small", request=REQUIRED)
    out += Case("named", '{"city": "Paris"}', "small", request=NAMED_CHOICE)
    out += Case("named_markup", SINGLE, "small", request=NAMED_CHOICE)
    out += Case("multi_turn", block(call("get_weather", ("city", "Zürich"))), "small",
                request=MULTI_TURN)
    out += Case("keep_special", "Sure. " + SINGLE, "small",
                request={"skip_special_tokens": False})
    out += Case("think_tool", "Hmm.</think>\n" + SINGLE, "small", PAIR)
    out += Case("think_tool_content", "Hmm.</think>\n\nSure.\n" + SINGLE + "\nDone.", "mixed",
                PAIR)
    out += Case("think_tool_in_reasoning", "Hmm.\n" + SINGLE, "small", PAIR)
    out += Case("think_off", "Hmm.</think>" + SINGLE, "small", PAIR,
                request={"chat_template_kwargs": {"enable_thinking": False}})
    out += Case("think_none", "Hmm.</think>Sure. " + SINGLE, "small", PAIR, request=NONE)
    return out


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    """The server's render; ``"tools": []`` is refused by the render step (400): rendered
    without, the derender call then records vLLM's answer."""
    if chat_request.get("tools") == []:
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(8600, SERVERS, cases(), tools=TOOLS, user=USER, prompt=prompt)
