"""PLaMo 3 (issue 19, cases 6600-…): vLLM 0.33's ``plamo3`` tool and reasoning parsers
(``vllm/tool_parsers/plamo3_engine_tool_parser.py``,
``vllm/reasoning/plamo3_engine_reasoning_parser.py``, both ``vllm/parser/plamo3.py``'s
``Plamo3Parser`` on the parser engine) on ``plamo3-standin`` (GPT-2's vocabulary with PLaMo 3's
marker pieces appended at unverified ids, ``tests/models/README.md``; PLaMo 3's own vocabulary
is not available offline).

Usage (``scripts/peer-model-folders.sh plamo3-standin``, the folder renamed
``$PEER_HOME/models/i19qw-plamo3``):

    "$VLLM_PEER"/start.sh i19qw-plamo3 8351 --served-model-name plamo3-standin \\
        --tool-call-parser plamo3 --reasoning-parser plamo3 --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py plamo3 8351

The calls: ``<|plamo:begin_tool_requests:plamo|>``, per call
``<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>NAME
<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json
<|plamo:msg|>{JSON}<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>``, then
``<|plamo:end_tool_requests:plamo|>``; reasoning ``…<|plamo:end_think:plamo|>`` (the output
starts in it unless ``enable_thinking`` is false). Every marker is several tokens. Then EOS
``<|plamo:tag|>`` 50260, or none (finish "length"). Every case is recorded non-streaming and
then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

PLAMO3 = "plamo3"
MODEL = "plamo3-standin"
EOS = 50260

SERVER = Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", PLAMO3,
                        "--reasoning-parser", PLAMO3, "--enable-auto-tool-choice"],
                "plamo3 tool and reasoning parsers (plamo3-standin vocabulary)", PLAMO3,
                (f"parser:{PLAMO3}", "reasoning", f"reasoning_parser:{PLAMO3}"),
                ROOT / "tests" / "models" / MODEL / "tokenizer.json")
TOOLS_ALONE = Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", PLAMO3,
                             "--enable-auto-tool-choice"],
                     "plamo3 tool parser alone (plamo3-standin vocabulary)", "plamo3-tools",
                     (f"parser:{PLAMO3}",), SERVER.tokenizer)
REASONING_ALONE = Server(MODEL, ["--served-model-name", MODEL, "--reasoning-parser", PLAMO3],
                         "plamo3 reasoning parser alone (plamo3-standin vocabulary)",
                         "plamo3-reasoning", ("reasoning", f"reasoning_parser:{PLAMO3}"),
                         SERVER.tokenizer)


def tag(name: str, end: bool = False) -> str:
    return f"<|plamo:{'end' if end else 'begin'}_{name}:plamo|>"


THINK_START, THINK_END = tag("think"), tag("think", True)
REQUESTS, END_REQUESTS = tag("tool_requests"), tag("tool_requests", True)
ARGS = tag("tool_arguments") + "<|plamo:constrain|>json<|plamo:msg|>"
WIDE = "😀𝄞🀄"
LONG = "lorem ipsum " * 120
THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
OFF: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": False}}
MULTI_TURN: dict[str, Any] = {"messages": [
    {"role": "user", "content": USER},
    {"role": "assistant", "content": "", "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "22 °C, sunny"},
    {"role": "user", "content": "And in Zürich?"}]}


def call(name: str, args: str) -> str:
    return (tag("tool_request") + tag("tool_name") + name + tag("tool_name", True) + ARGS
            + args + tag("tool_arguments", True) + tag("tool_request", True))


def block(*calls: str, nl: str = "") -> str:
    return REQUESTS + nl + nl.join(calls) + nl + END_REQUESTS


PARIS = call("get_weather", '{"city": "Paris", "unit": "c"}')
SINGLE = block(PARIS)
THEN = THOUGHT + THINK_END


def Case(shape: str, output: str, stream: str, server: str = PLAMO3,  # noqa: N802
         **fields: Any) -> list[_Case]:
    return both(_Case(server, shape, output, **{"eos": EOS, "kind": "tool_call", **fields}),
                stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    out += Case("single", THEN + SINGLE, "small")
    out += Case("single_one", THEN + SINGLE, "one")
    out += Case("parallel", THEN + block(call("get_weather", '{"city": "Zürich"}'),
                                         call("get_weather", '{"city": "東京 \\"Tokyo\\"\\nline '
                                              'two", "unit": "f"}'), nl="\n"), "small")
    out += Case("typed", THEN + block(call(
        "set_config", '{"count": 3, "ratio": 0.5, "enabled": true, "tags": ["a", "b"], '
        '"meta": {"k": 1, "nested": {"ok": true}}, "note": null, "label": "x", "level": 2}')),
        "small")
    out += Case("typed_strings", THEN + block(call(
        "set_config", '{"count": "3", "ratio": "0.5", "enabled": "true", "tags": "[\\"a\\"]", '
        '"note": "null", "label": 42, "level": "2", "extra": "7"}')), "small")
    out += Case("compact_json", THEN + block(call("get_weather", '{"city":"Paris"}')), "small")
    out += Case("spaced_json", THEN + block(call(" get_weather ", '\n  {"city": "Paris"}  \n')),
                "small")
    out += Case("no_args", THEN + block(call("get_time", "")), "one")
    out += Case("empty_object", THEN + block(call("get_time", "{}")), "small")
    out += Case("content_before", THEN + "Let me check the weather for you.\n" + SINGLE, "mixed")
    out += Case("content_after", THEN + SINGLE + "\nI will report back shortly.", "small")
    out += Case("space_before", THEN + "\n\n" + SINGLE, "small")
    out += Case("reasoning_to_tool", THOUGHT + "\n" + SINGLE, "small")
    out += Case("answer", THEN + PLAIN, "small")
    out += Case("open_tag", THINK_START + THOUGHT + THINK_END + "\n\n" + PLAIN, "small")
    out += Case("late_think", THEN + PLAIN + THINK_START + "more" + THINK_END + "end", "small")
    out += Case("only_reasoning", THOUGHT, "small", eos=None)
    out += Case("off_content", "Sure. " + SINGLE, "small", request=OFF)
    out += Case("off_think_tags", THINK_START + THOUGHT + THINK_END + PLAIN, "small",
                request=OFF)
    out += Case("unknown_tool", THEN + block(call("get_stock", '{"symbol": "ACME"}')), "small")
    out += Case("not_json", THEN + block(call("get_weather", "{city: Paris}")), "small")
    out += Case("no_args_close", THEN + REQUESTS + tag("tool_request") + tag("tool_name")
                + "get_weather" + tag("tool_name", True) + ARGS + '{"city": "Paris"}'
                + tag("tool_request", True) + END_REQUESTS, "small")
    out += Case("no_wrapper", THEN + PARIS, "small")
    out += Case("truncated", THEN + REQUESTS + tag("tool_request") + tag("tool_name")
                + "get_weather" + tag("tool_name", True) + ARGS + '{"city": "Par', "one",
                eos=None)
    out += Case("cut_in_name", THEN + "Sure." + REQUESTS + tag("tool_request")
                + tag("tool_name") + "get_wea", "small", eos=None)
    out += Case("cut_in_marker", THEN + REQUESTS + tag("tool_request") + tag("tool_name")
                + "get_weather<|plamo:end_tool_na", "small", eos=None)
    out += Case("cut_marker_content", THEN + PLAIN + "<|plamo:begin_tool_re", "small",
                eos=None)
    out += Case("cut_marker_reasoning", THOUGHT + "<|plamo:end_thi", "small", eos=None)
    out += Case("markers_as_text", THEN + "Write <|plamo:msg|> and :plamo|> literally.",
                "small")
    out += Case("wide_chars", THEN + WIDE + " " + block(call(
        "get_weather", '{"city": "' + WIDE + ' Zürich"}')), "small")
    out += Case("long_value", THEN + block(call("get_weather", '{"city": "' + LONG + '"}')),
                "mixed")
    out += Case("tool_choice_none", THEN + "Checking. " + SINGLE, "small", request=NONE)
    out += Case("required", THEN + SINGLE, "small", request=REQUIRED)
    out += Case("named", THEN + SINGLE, "mixed", request=NAMED_CHOICE)
    out += Case("no_tools", THEN + "Checking. " + SINGLE, "small", tools=False)
    out += Case("empty_tools", THEN + SINGLE, "small", tools=False, request={"tools": []})
    out += Case("multi_turn", THEN + block(call("get_weather", '{"city": "Zürich"}')), "small",
                request=MULTI_TURN)
    out += Case("keep_special", THEN + "Sure. " + SINGLE, "small",
                request={"skip_special_tokens": False})
    out += Case("no_reasoning_out", THEN + "Sure. " + SINGLE, "small",
                request={"include_reasoning": False})
    # a partial marker ending the output: vLLM drops it when its ids (re-encoded) begin a
    # marker's, here a piece alone or a piece and a whole marker name
    out += Case("cut_piece_reasoning", THOUGHT + "<|plamo:end_", "small", eos=None)
    out += Case("cut_word_reasoning", THOUGHT + "<|plamo:end_think", "small", eos=None)
    out += Case("cut_piece_content", THEN + PLAIN + "<|plamo:begin_", "small", eos=None)
    out += Case("cut_word_content", THEN + PLAIN + " <|plamo:end_tool_name", "small", eos=None)
    out += Case("cut_piece_name", THEN + REQUESTS + tag("tool_request") + tag("tool_name")
                + "get_weather<|plamo:end_", "small", eos=None)
    out += Case("piece_in_name", THEN + block(call("get_weather <|plamo:end_", '{"city": "P"}')),
                "small")
    out += Case("cut_args_marker", THEN + REQUESTS + tag("tool_request") + tag("tool_name")
                + "get_weather" + tag("tool_name", True) + ARGS + '{"city": "Paris"}'
                + "<|plamo:end_tool_argu", "small", eos=None)
    out += Case("cut_after_name", THEN + REQUESTS + tag("tool_request") + tag("tool_name")
                + "get_weather" + tag("tool_name", True), "small", eos=None)
    out += Case("name_no_args", THEN + REQUESTS + tag("tool_request") + tag("tool_name")
                + "get_time" + tag("tool_name", True) + tag("tool_request", True)
                + tag("tool_request") + tag("tool_name") + "get_weather" + tag("tool_name", True)
                + ARGS + '{"city": "Oslo"}' + tag("tool_arguments", True)
                + tag("tool_request", True) + END_REQUESTS, "small")
    out += Case("args_then_text", THEN + REQUESTS + tag("tool_request") + tag("tool_name")
                + "get_weather" + tag("tool_name", True) + ARGS + '{"city": "Oslo"}'
                + tag("tool_arguments", True) + "junk" + tag("tool_request", True) + "more"
                + END_REQUESTS + "after", "small")
    out += Case("off_reasoning_text", "Sure.\n" + SINGLE, "small", request=OFF)
    # the tool parser alone, then the reasoning parser alone
    for server, tools in ((TOOLS_ALONE.slug, True), (REASONING_ALONE.slug, False)):
        out += Case("alone_think", THEN + "Sure. " + SINGLE, "small", server, tools=tools)
        out += Case("alone_answer", THEN + PLAIN, "small", server, tools=tools)
        out += Case("alone_no_end", THOUGHT + "\n" + SINGLE, "small", server, tools=tools)
        out += Case("alone_off", "Sure. " + SINGLE, "small", server, tools=tools, request=OFF)
        out += Case("alone_cut", THEN + PLAIN + "<|plamo:begin_", "small", server, tools=tools,
                    eos=None)
    return out


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    """The server's render; ``"tools": []`` is refused by the render step (400): rendered
    without, the derender call then records vLLM's refusal."""
    if chat_request.get("tools") == []:
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(6600, {PLAMO3: SERVER, TOOLS_ALONE.slug: TOOLS_ALONE,
                       REASONING_ALONE.slug: REASONING_ALONE}, cases(), tools=TOOLS, user=USER,
                prompt=prompt)
