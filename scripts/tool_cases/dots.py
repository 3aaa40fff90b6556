"""dots (issue 19, cases 10000-…, branch dots): vLLM 0.33's ``dots`` tool parser
(``vllm/tool_parsers/dots_tool_parser.py``) on ``dots-standin`` (GPT-2's vocabulary with
``<dots_function_call>`` and ``</dots_function_call>`` appended as added tokens at unverified
ids, ``tests/models/README.md``; the dots models' own vocabulary is not available offline).

Usage (``scripts/peer-model-folders.sh dots-standin``, copied to
``$PEER_HOME/models/dots-standin``):

    "$VLLM_PEER"/start.sh dots-standin 8790 --served-model-name dots-standin \\
        --tool-call-parser dots --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py dots 8790

The calls: ``<dots_function_call>`` blocks of ``<invoke name=…><parameter name=…>V</parameter>
</invoke>`` elements, or one JSON object ``{"name": …, "arguments": …}``. No reasoning parser
(the format reads no template kwargs). Then EOS ``<|endoftext|>`` 50256, or none (finish
"length"). Every case is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

DOTS = "dots"
MODEL = "dots-standin"
EOS = 50256

SERVER = Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", DOTS,
                        "--enable-auto-tool-choice"],
                "dots tool parser (dots-standin vocabulary)", DOTS, (f"parser:{DOTS}",),
                ROOT / "tests" / "models" / MODEL / "tokenizer.json")
BOOK = {"type": "function", "function": {
    "name": "book", "description": "Book a table (typed through $ref and anyOf)",
    "parameters": {"type": "object", "$defs": {
        "Day": {"type": "integer"}, "Money": {"type": "number"}}, "properties": {
        "day": {"$ref": "#/$defs/Day"},
        "seats": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
        "price": {"oneOf": [{"$ref": "#/$defs/Money"}]},
        "flags": {"allOf": [{"type": "array"}]},
        "vip": {"type": ["null", "boolean"]},
        "note": {"anyOf": [{"type": "null"}]}}}}}
WIDE = "😀𝄞🀄"
LONG = "lorem ipsum " * 120
MULTI_TURN: dict[str, Any] = {"messages": [
    {"role": "user", "content": USER},
    {"role": "assistant", "content": "", "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "22 °C, sunny"},
    {"role": "user", "content": "And in Zürich?"}]}
START, END = "<dots_function_call>", "</dots_function_call>"


def inv(name: str, *args: tuple[str, str], quote: str = '"') -> str:
    body = "".join(f"<parameter name={quote}{k}{quote}>{v}</parameter>\n" for k, v in args)
    return f"<invoke name={quote}{name}{quote}>\n{body}</invoke>"


def block(*parts: str) -> str:
    return START + "\n" + "\n".join(parts) + "\n" + END


PARIS = block(inv("get_weather", ("city", "Paris"), ("unit", "c")))


def Case(shape: str, output: str, stream: str, **fields: Any) -> list[_Case]:  # noqa: N802
    return both(_Case(DOTS, shape, output, **{"eos": EOS, **fields}), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    out += Case("single", PARIS, "small")
    out += Case("no_args_one", block(inv("get_time")), "one")
    out += Case("parallel_invokes", block(inv("get_weather", ("city", "Zürich")),
                                          inv("get_time")), "small")
    out += Case("parallel_blocks", PARIS + "\n" + block(inv("get_time")), "small")
    out += Case("typed", block(inv(
        "set_config", ("count", " 3 "), ("ratio", "0.5"), ("enabled", "True"),
        ("tags", '["a", "b"]'), ("meta", '{"k": 1, "nested": {"ok": true}}'),
        ("note", "null"), ("label", " 42 "), ("level", "2"))), "small")
    out += Case("typed_fallbacks", block(inv(
        "set_config", ("count", "three"), ("ratio", "2.0"), ("enabled", "yes"),
        ("tags", "a, b"), ("meta", "{bad"), ("label", "NULL"), ("level", "1_000"),
        ("extra", "7"))), "small")
    out += Case("typed_refs", block(inv(
        "book", ("day", "12"), ("seats", "4"), ("price", "1_000"), ("flags", "[1, 2]"),
        ("vip", "1"), ("note", "5"))), "small")
    out += Case("json_block", block('{"name": "get_weather", "arguments": '
                                    '{"city": "Paris", "days": 3, "x": [1.0, null]}}'), "small")
    out += Case("json_parameters", block('{"name": "get_weather", "parameters": '
                                         '{"city": "Oslo"}}'), "small")
    out += Case("json_null_args", block('{"name": "get_time", "arguments": null}'), "small")
    out += Case("json_string_args", block('{"name": "get_weather", "arguments": "Paris"}'),
                "small")
    out += Case("json_list", block('[{"name": "get_time", "arguments": {}}]'), "small")
    out += Case("json_bad_then_good", block('{"name": "get_weather", ') + "\n" + PARIS,
                "small")
    out += Case("content_before", "Let me check the weather for you.\n" + PARIS, "mixed")
    out += Case("content_after", PARIS + "\nI will report back shortly.", "small")
    out += Case("content_between", "Hi " + block("nothing") + " mid " + PARIS + " end",
                "small")
    out += Case("space_before", "\n\n" + PARIS, "small")
    out += Case("space_around_text", "  Sure.  \n" + PARIS, "small")
    out += Case("unknown_tool", block(inv("get_stock", ("symbol", "ACME"))), "small")
    out += Case("unknown_then_known", block(inv("get_stock"), inv("get_time")), "small")
    out += Case("name_spellings", block(inv("get_weather", ("city", " Paris "), quote="'"),
                                        '<invoke  name = get_time >\n</invoke>'), "small")
    out += Case("duplicate_param", block(inv("get_weather", ("city", "Paris"), ("unit", "c"),
                                             ("city", "Oslo"))), "small")
    out += Case("empty_block", "Hi." + START + END, "small")
    out += Case("nested_start", START + PARIS, "small")
    out += Case("invoke_unclosed", block('<invoke name="get_weather">\n'
                                         '<parameter name="city">Paris</parameter>'), "small")
    out += Case("param_unclosed", block('<invoke name="get_weather">\n<parameter name="city">'
                                        'Paris\n<parameter name="unit">c</parameter>\n'
                                        '</invoke>'), "small")
    out += Case("no_block_close", "Checking.\n" + START + "\n" + inv("get_time"), "small")
    out += Case("good_then_unclosed", PARIS + "\n" + START + "\n" + inv("get_time"), "small")
    out += Case("truncated", "Sure.\n" + START + '\n<invoke name="get_weather">\n'
                '<parameter name="city">Par', "small", eos=None)
    out += Case("cut_in_name", "Sure." + START + '\n<invoke name="get_wea', "small", eos=None)
    out += Case("end_tag_in_text", "Write " + END + " literally, then stop.", "small")
    out += Case("wide_chars", WIDE + " " + block(inv("get_weather", ("city", WIDE + " Zürich"))),
                "small")
    out += Case("long_value", block(inv("get_weather", ("city", LONG))), "mixed")
    out += Case("tool_choice_none", "Sure. " + PARIS, "small", request=NONE)
    out += Case("required", PARIS, "small", request=REQUIRED)
    out += Case("named", PARIS, "mixed", request=NAMED_CHOICE)
    out += Case("no_tools", "Sure. " + PARIS, "small", tools=False)
    out += Case("empty_tools", PARIS, "small", tools=False, request={"tools": []})
    out += Case("multi_turn", block(inv("get_weather", ("city", "Zürich"))), "small",
                request=MULTI_TURN)
    out += Case("keep_special", "Sure. " + PARIS, "small",
                request={"skip_special_tokens": False})
    out += Case("template_kwargs", "Sure. " + PARIS, "small",
                request={"chat_template_kwargs": {"enable_thinking": True}})
    return out


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    """The server's render; ``"tools": []`` is refused by the render step (400): rendered
    without, the derender call then records vLLM's refusal."""
    if chat_request.get("tools") == []:
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(10000, {DOTS: SERVER}, cases(), tools=[*TOOLS, BOOK], user=USER,
                prompt=prompt)
