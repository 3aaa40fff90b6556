"""Thinking Machines Inkling (issue 20, branch inkling, cases 9400-…): vLLM 0.33's ``inkling``
tool and reasoning parsers (``vllm/tool_parsers/inkling_tool_parser.py``,
``vllm/reasoning/inkling_reasoning_parser.py``, both ``vllm/parser/inkling.py``'s
``InklingParser`` on the parser engine) on ``inkling-standin`` (o200k's vocabulary with
Inkling's framing tokens at the ids public sources give, unverified against the real file,
``tests/models/README.md``; Inkling's own vocabulary is not available offline). The prompt is
vLLM's own: the folder declares ``InklingForCausalLM``, so the peer renders chats with its
native ``InklingRenderer`` (no chat template), the turn opened by ``<|message_model|>``.

Usage (``scripts/peer-model-folders.sh inkling-standin``, the folder renamed
``$PEER_HOME/models/ink-standin``):

    "$VLLM_PEER"/start.sh ink-standin 8760 --served-model-name inkling-standin \\
        --tool-call-parser inkling --reasoning-parser inkling --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh ink-standin 8761 --served-model-name inkling-standin \\
        --tool-call-parser inkling --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh ink-standin 8762 --served-model-name inkling-standin \\
        --reasoning-parser inkling
    .venv/bin/python scripts/record_tool_fixtures.py inkling 8760 8761 8762

The output: blocks ``<|message_model|>[AUTHOR]<|content_KIND|>…<|end_message|>`` (the first
block's ``<|message_model|>`` is the prompt's), KIND ``thinking`` (reasoning), ``text``
(content), ``invoke_tool_json`` (a call: ``{"name": NAME, "args": {…}}``, the author the
tool's name), ``invoke_tool_text``/``tool_error`` (content); every marker one special token.
Then EOS ``<|content_model_end_sampling|>`` 200006, or none (finish "length"). Every case is
recorded non-streaming and then streamed.
"""

from __future__ import annotations

import json
from typing import Any

from record_tool_fixtures import ROOT, Format, Server, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

INKLING = "inkling"
MODEL = "inkling-standin"
EOS = 200006

SERVER = Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", INKLING,
                        "--reasoning-parser", INKLING, "--enable-auto-tool-choice"],
                "inkling tool and reasoning parsers (inkling-standin vocabulary)", INKLING,
                (f"parser:{INKLING}", "reasoning", f"reasoning_parser:{INKLING}"),
                ROOT / "tests" / "models" / MODEL / "tokenizer.json")
TOOLS_ALONE = Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", INKLING,
                             "--enable-auto-tool-choice"],
                     "inkling tool parser alone (inkling-standin vocabulary)", "inkling-tools",
                     (f"parser:{INKLING}",), SERVER.tokenizer)
REASONING_ALONE = Server(MODEL, ["--served-model-name", MODEL, "--reasoning-parser", INKLING],
                         "inkling reasoning parser alone (inkling-standin vocabulary)",
                         "inkling-reasoning", ("reasoning", f"reasoning_parser:{INKLING}"),
                         SERVER.tokenizer)

MSG, END = "<|message_model|>", "<|end_message|>"
THINK, TEXT = "<|content_thinking|>", "<|content_text|>"
JSON_CALL, TEXT_CALL = "<|content_invoke_tool_json|>", "<|content_invoke_tool_text|>"
ERROR, END_SAMPLING = "<|content_tool_error|>", "<|content_model_end_sampling|>"
WIDE = "😀𝄞🀄"
LONG = "lorem ipsum " * 120
THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
EFFORT_NONE: dict[str, Any] = {"chat_template_kwargs": {"reasoning_effort": "none"}}
MULTI_TURN: dict[str, Any] = {"messages": [
    {"role": "user", "content": USER},
    {"role": "assistant", "content": "", "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "22 °C, sunny"},
    {"role": "user", "content": "And in Zürich?"}]}


def think(text: str = THOUGHT) -> str:
    """A thinking block opening the output (its ``<|message_model|>`` is the prompt's)."""
    return THINK + text + END


def text(body: str, first: bool = False) -> str:
    return ("" if first else MSG) + TEXT + body + END


def call(name: str, args: Any, author: str | None = None, first: bool = False,
         raw: str | None = None) -> str:
    """A call block: ``{"name": …, "args": …}`` (``raw``: the payload as written)."""
    payload = raw if raw is not None else json.dumps({"name": name, "args": args},
                                                     ensure_ascii=False)
    return (("" if first else MSG) + (name if author is None else author) + JSON_CALL
            + payload + END)


PARIS = call("get_weather", {"city": "Paris", "unit": "c"})
THEN = think()


def Case(shape: str, output: str, stream: str, server: str = INKLING,  # noqa: N802
         **fields: Any) -> list[_Case]:
    return both(_Case(server, shape, output, **{"eos": EOS, "kind": "tool_call", **fields}),
                stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    out += Case("single", THEN + PARIS, "small")
    out += Case("single_one", THEN + PARIS, "one")
    out += Case("parallel", THEN + call("get_weather", {"city": "Zürich"})
                + call("get_weather", {"city": '東京 "Tokyo"\nline two', "unit": "f"}), "small")
    out += Case("typed", THEN + call("set_config", {
        "count": 3, "ratio": 0.5, "enabled": True, "tags": ["a", "b"],
        "meta": {"k": 1, "nested": {"ok": True}}, "note": None, "label": "x", "level": 2}),
        "small")
    out += Case("typed_strings", THEN + call("set_config", {
        "count": "3", "ratio": "0.5", "enabled": "true", "tags": '["a"]', "note": "null",
        "label": 42, "level": "2", "extra": "7"}), "small")
    out += Case("spaced_json", THEN + call("get_weather", None, raw=(
        '\n { "name" : "get_weather" ,\n  "args" : { "city" : "Paris" , "unit":"c" } }  ')),
        "small")
    out += Case("args_first", THEN + call("get_weather", None, raw=(
        '{"args": {"city": "Paris"}, "name": "get_weather"}')), "small")
    out += Case("arguments_key", THEN + call("get_weather", None, raw=(
        '{"name": "get_weather", "arguments": {"city": "Paris"}}')), "small")
    out += Case("no_args", THEN + call("get_time", None, raw='{"name": "get_time"}'), "one")
    out += Case("empty_args", THEN + call("get_time", {}), "small")
    out += Case("args_not_object", THEN + call("get_weather", None, raw=(
        '{"name": "get_weather", "args": "Paris"}')), "small")
    out += Case("no_name", THEN + call("get_weather", None, raw='{"args": {"city": "Paris"}}'),
                "small")
    out += Case("author_differs", THEN + call("get_weather", {"city": "Paris"},
                                               author="lookup"), "small")
    out += Case("no_author", THEN + call("get_weather", {"city": "Paris"}, author=""),
                "small")
    out += Case("content_before", THEN + text("Let me check the weather for you.") + PARIS,
                "mixed")
    out += Case("content_after", THEN + PARIS + text("I will report back shortly."), "small")
    out += Case("text_between", THEN + call("get_weather", {"city": "Oslo"})
                + text("And another.") + call("get_time", {}), "small")
    out += Case("space_before", THEN + text("\n\n") + PARIS, "small")
    out += Case("answer", THEN + text(PLAIN), "small")
    out += Case("answer_spaced", think(THOUGHT + "\n\n") + text("\n" + PLAIN + "\n"), "small")
    out += Case("two_texts", THEN + text("First part. ") + text("Second part."), "small")
    out += Case("text_first", text(PLAIN, first=True), "small")
    out += Case("call_first", call("get_weather", {"city": "Paris"}, first=True), "small")
    out += Case("no_markers", "Just some words with no block.", "small")
    out += Case("header_then_end", THEN + MSG + "stray header" + END + text(PLAIN), "small")
    out += Case("late_think", THEN + text(PLAIN) + MSG + THINK + "more thought" + END
                + text("end"), "small")
    out += Case("two_thinks", THEN + MSG + THINK + "second thought" + END + text(PLAIN),
                "small")
    out += Case("end_sampling_mid", THINK + THOUGHT + END_SAMPLING + MSG + TEXT + PLAIN
                + END, "small")
    out += Case("tool_text_block", THEN + MSG + "get_weather" + TEXT_CALL
                + "get_weather city=Paris" + END, "small")
    out += Case("tool_error_block", THEN + MSG + ERROR + "tool failed" + END + text(PLAIN),
                "small")
    out += Case("only_reasoning", THINK + THOUGHT, "small", eos=None)
    out += Case("cut_in_header", THEN + MSG + "get_wea", "small", eos=None)
    out += Case("cut_after_marker", THEN + MSG + "get_weather" + JSON_CALL, "small", eos=None)
    out += Case("cut_in_name", THEN + MSG + "get_weather" + JSON_CALL + '{"name": "get_wea',
                "small", eos=None)
    out += Case("truncated", THEN + MSG + "get_weather" + JSON_CALL
                + '{"name": "get_weather", "args": {"city": "Par', "one", eos=None)
    out += Case("cut_in_text", THEN + MSG + TEXT + PLAIN, "small", eos=None)
    out += Case("not_json", THEN + call("get_weather", None, raw=(
        '{"name": "get_weather", "args": {city: Paris}}')), "small")
    out += Case("not_json_no_name", THEN + call("get_weather", None, raw="get_weather(Paris)"),
                "small")
    out += Case("trailing_junk", THEN + call("get_weather", None, raw=(
        '{"name": "get_weather", "args": {"city": "Paris"}} extra')), "small")
    out += Case("unknown_tool", THEN + call("get_stock", {"symbol": "ACME"}), "small")
    out += Case("wide_chars", think(THOUGHT + WIDE) + text(WIDE + " ok") + call(
        "get_weather", {"city": WIDE + " Zürich"}), "small")
    out += Case("long_value", THEN + call("get_weather", {"city": LONG}), "mixed")
    out += Case("tool_choice_none", THEN + text("Checking.") + PARIS, "small", request=NONE)
    out += Case("required", THEN + PARIS, "small", request=REQUIRED)
    out += Case("named", THEN + PARIS, "mixed", request=NAMED_CHOICE)
    out += Case("no_tools", THEN + text("Checking.") + PARIS, "small", tools=False)
    out += Case("empty_tools", THEN + PARIS, "small", tools=False, request={"tools": []})
    out += Case("multi_turn", THEN + call("get_weather", {"city": "Zürich"}), "small",
                request=MULTI_TURN)
    out += Case("keep_special", THEN + text("Sure.") + PARIS, "small",
                request={"skip_special_tokens": False})
    out += Case("no_reasoning_out", THEN + text("Sure.") + PARIS, "small",
                request={"include_reasoning": False})
    out += Case("effort_none", text(PLAIN, first=True), "small", request=EFFORT_NONE)
    out += Case("effort_none_think", THEN + text(PLAIN), "small", request=EFFORT_NONE)
    out += Case("newline_between", THEN + "\n" + MSG + TEXT + "Sure." + END + "\n" + PARIS,
                "small")
    # the tool parser alone, then the reasoning parser alone
    for server, tools in ((TOOLS_ALONE.slug, True), (REASONING_ALONE.slug, False)):
        out += Case("alone_think", THEN + text("Sure.") + PARIS, "small", server, tools=tools)
        out += Case("alone_answer", THEN + text(PLAIN), "small", server, tools=tools)
        out += Case("alone_call_first", call("get_weather", {"city": "Paris"}, first=True)
                    + text("after"), "small", server, tools=tools)
        out += Case("alone_text_first", text(PLAIN, first=True), "small", server, tools=tools)
        out += Case("alone_cut", THEN + MSG + "get_wea", "small", server, tools=tools,
                    eos=None)
        out += Case("alone_late_think", THEN + text(PLAIN) + MSG + THINK + "more" + END
                    + text("end"), "small", server, tools=tools)
    return out


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    """The server's render; ``"tools": []`` is refused by the render step (400): rendered
    without, the derender call then records vLLM's refusal."""
    if chat_request.get("tools") == []:
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(9400, {INKLING: SERVER, TOOLS_ALONE.slug: TOOLS_ALONE,
                       REASONING_ALONE.slug: REASONING_ALONE}, cases(), tools=TOOLS, user=USER,
                prompt=prompt)
