"""MBZUAI K2 Horizon (issue 19, cases 9000-…, branch k2h): vLLM 0.33's ``k2_horizon`` tool and
reasoning parsers (``vllm/tool_parsers/k2_horizon_tool_parser.py``,
``vllm/reasoning/k2_horizon_reasoning_parser.py``) on ``k2h-standin`` (GPT-2's vocabulary with
K2 Horizon's IFM markers appended as single added tokens at unverified ids,
``tests/models/README.md``; K2 Horizon's own vocabulary is not available offline).

Usage (``scripts/peer-model-folders.sh k2h-standin``):

    "$VLLM_PEER"/start.sh k2h-standin 8740 --served-model-name k2h-standin \\
        --tool-call-parser k2_horizon --reasoning-parser k2_horizon --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py k2_horizon 8740

The calls: ``<ifm|tool_calls>``, per call ``<ifm|tool_call>`` BODY ``</ifm|tool_call>``,
``</ifm|tool_calls>``; BODY is, by ``chat_template_kwargs.tool_call_format``, "xml" (default:
NAME then ``<ifm|arg_key>K</ifm|arg_key><ifm|arg_value>V</ifm|arg_value>`` pairs),
"xml_typed" (each pair with ``<ifm|arg_type>T</ifm|arg_type>`` between key and value) or
"json" (``{"name": …, "arguments": {…}}``). Reasoning: the think pair of ``reasoning_effort``
(the top-level one, else the template kwarg's, else "high"): "high" ``<ifm|think>``, "medium"
``<ifm|think_fast>``, "low" ``<ifm|think_faster>``. Every mode is recorded. Then EOS
``<|endoftext|>`` 50256, or none (finish "length"). Every case is recorded non-streaming and
then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

K2H = "k2_horizon"
MODEL = "k2h-standin"
EOS = 50256

SERVER = Server(MODEL, ["--served-model-name", MODEL, "--tool-call-parser", K2H,
                        "--reasoning-parser", K2H, "--enable-auto-tool-choice"],
                "k2_horizon tool and reasoning parsers (k2h-standin vocabulary)", "k2h",
                (f"parser:{K2H}", "reasoning", f"reasoning_parser:{K2H}"),
                ROOT / "tests" / "models" / MODEL / "tokenizer.json")
WIDE = "😀𝄞🀄"
LONG = "lorem ipsum " * 120
THOUGHT = "The user wants Paris weather; call the tool."
PLAIN = "It is sunny in Paris, 22 °C."
THINK, END_THINK = "<ifm|think>", "</ifm|think>"
FAST, END_FAST = "<ifm|think_fast>", "</ifm|think_fast>"
FASTER, END_FASTER = "<ifm|think_faster>", "</ifm|think_faster>"
CALLS, END_CALLS = "<ifm|tool_calls>", "</ifm|tool_calls>"
CALL, END_CALL = "<ifm|tool_call>", "</ifm|tool_call>"
KEY, END_KEY, TYPE, END_TYPE = "<ifm|arg_key>", "</ifm|arg_key>", "<ifm|arg_type>", \
    "</ifm|arg_type>"
VALUE, END_VALUE = "<ifm|arg_value>", "</ifm|arg_value>"
TYPED: dict[str, Any] = {"chat_template_kwargs": {"tool_call_format": "xml_typed"}}
JSON: dict[str, Any] = {"chat_template_kwargs": {"tool_call_format": "json"}}
MEDIUM: dict[str, Any] = {"chat_template_kwargs": {"reasoning_effort": "medium"}}
LOW: dict[str, Any] = {"chat_template_kwargs": {"reasoning_effort": "low"}}
MULTI_TURN: dict[str, Any] = {"messages": [
    {"role": "user", "content": USER},
    {"role": "assistant", "content": "", "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "22 °C, sunny"},
    {"role": "user", "content": "And in Zürich?"}]}


def call(name: str, *args: tuple[str, str], nl: str = "\n") -> str:
    body = "".join(f"{nl}{KEY}{k}{END_KEY}{VALUE}{v}{END_VALUE}" for k, v in args)
    return f"{CALL}{name}{body}{nl}{END_CALL}"


def typed(name: str, *args: tuple[str, str, str]) -> str:
    body = "".join(f"{KEY}{k}{END_KEY}{TYPE}{t}{END_TYPE}{VALUE}{v}{END_VALUE}"
                   for k, t, v in args)
    return f"{CALL}{name}{body}{END_CALL}"


def jcall(body: str) -> str:
    return f"{CALL}{body}{END_CALL}"


def block(*calls: str, nl: str = "\n") -> str:
    return CALLS + nl + nl.join(calls) + nl + END_CALLS


PARIS = call("get_weather", ("city", "Paris"), ("unit", "c"))
SINGLE = block(PARIS)
NO_ARGS = f"{CALLS}{CALL}get_time{END_CALL}{END_CALLS}"
J_PARIS = jcall('{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}')


def Case(shape: str, output: str, stream: str, think: bool = False,  # noqa: N802
         **fields: Any) -> list[_Case]:
    return both(_Case(K2H, shape, output, **{
        "eos": EOS, "kind": "reasoning" if think else "tool_call", **fields}), stream)


def cases() -> list[_Case]:
    out: list[_Case] = []
    # xml (the default format), effort "high" (the default)
    out += Case("single", SINGLE, "small")
    out += Case("think_tool", THOUGHT + END_THINK + "\n" + SINGLE, "small", True)
    out += Case("think_open_tag", THINK + THOUGHT + END_THINK + "\n\n" + PLAIN, "small", True)
    out += Case("think_only", THOUGHT, "small", True, eos=None)
    out += Case("plain", PLAIN, "small")
    out += Case("parallel", block(call("get_weather", ("city", "Zürich")),
                                  call("get_weather", ("city", '東京 "Tokyo"\nline two'),
                                       ("unit", "f"))), "small")
    out += Case("typed", block(call(
        "set_config", ("count", "3"), ("ratio", "0.5"), ("enabled", "true"),
        ("tags", '["a", "b"]'), ("meta", '{"k": 1, "nested": {"ok": true}}'),
        ("note", "null"), ("label", " 42 "), ("level", "2"))), "small")
    out += Case("typed_fallbacks", block(call(
        "set_config", ("count", "three"), ("ratio", "1e3"), ("enabled", "yes"),
        ("tags", "a, b"), ("meta", "{'k': 1}"), ("note", "None"), ("level", "2.0"))), "small")
    out += Case("no_args", NO_ARGS, "one")
    out += Case("reasoning_before_calls", "Let me check the weather for you.\n" + SINGLE,
                "mixed", True)
    out += Case("content_around", THOUGHT + END_THINK + "Checking.\n" + SINGLE
                + "\nI will report back.", "mixed", True)
    out += Case("unknown_tool", THOUGHT + END_THINK + block(call("get_stock", ("symbol", "A"))),
                "small", True)
    out += Case("text_between_calls", END_THINK + CALLS + PARIS + "\nand then\n"
                + call("get_time") + END_CALLS, "small")
    out += Case("spaced", f"{END_THINK}{CALLS} {CALL} get_weather {KEY} city {END_KEY} {VALUE}"
                f" Paris {END_VALUE} {END_CALL} {END_CALLS}", "one")
    out += Case("duplicate_key", END_THINK + block(call("get_weather", ("city", "A"),
                                                        ("city", "B"))), "small")
    out += Case("type_in_xml", END_THINK + block(typed("get_weather", ("city", "string",
                                                                       "Paris"))), "small")
    out += Case("spaced_name_inside", END_THINK + block(call("get weather", ("city", "P"))),
                "small")
    out += Case("no_group_close", "Checking.\n" + END_THINK + CALLS + "\n" + PARIS + "\n",
                "small")
    out += Case("calls_after_group", END_THINK + SINGLE + "\n" + block(call("get_time")),
                "small")
    out += Case("truncated", f"{END_THINK}Sure.\n{CALLS}\n{CALL}get_weather\n{KEY}city{END_KEY}"
                f"\n{VALUE}Paris{END_VALUE}\n{KEY}unit{END_KEY}\n{VALUE}", "one", eos=None)
    out += Case("cut_in_name", f"{END_THINK}Sure.{CALLS}\n{CALL}get_wea", "small", eos=None)
    out += Case("tags_in_text", END_THINK + "Write <ifm|arg_key> and <ifm|tool_calls> "
                "literally.", "small")
    out += Case("wide_chars", WIDE + END_THINK + WIDE + " "
                + block(call("get_weather", ("city", WIDE + " Zürich"))), "small", True)
    out += Case("long_value", END_THINK + block(call("get_weather", ("city", LONG))), "mixed")
    out += Case("tool_choice_none", THOUGHT + END_THINK + "Sure. " + SINGLE, "small", True,
                request=NONE)
    out += Case("required", END_THINK + SINGLE, "small", request=REQUIRED)
    out += Case("named", END_THINK + SINGLE, "mixed", request=NAMED_CHOICE)
    out += Case("named_other", END_THINK + block(call("get_time")), "small",
                request=NAMED_CHOICE)
    out += Case("no_tools", END_THINK + "Sure. " + SINGLE, "small", tools=False)
    out += Case("empty_tools", SINGLE, "small", tools=False, request={"tools": []})
    out += Case("multi_turn", END_THINK + block(call("get_weather", ("city", "Zürich"))),
                "small", request=MULTI_TURN)
    out += Case("keep_special", THOUGHT + END_THINK + "Sure. " + SINGLE, "small", True,
                request={"skip_special_tokens": False})
    out += Case("other_end_marker", THOUGHT + END_FAST + PLAIN, "small", True)
    # xml_typed
    out += Case("xml_typed", END_THINK + block(typed(
        "set_config", ("count", "int", "3"), ("ratio", "float", "0.5"),
        ("enabled", "bool", "false"), ("tags", "array[string]", '["a"]'),
        ("note", "string", "null"), ("label", "integer", "42"),
        ("extra", "any", " x "), ("more", "integer", "7"))), "small", request=TYPED)
    out += Case("xml_typed_weather", THOUGHT + END_THINK + block(typed(
        "get_weather", ("city", "string", " Paris "), ("unit", "string", "c"))), "mixed", True,
        request=TYPED)
    out += Case("xml_typed_missing_type", END_THINK + SINGLE, "small", request=TYPED)
    # json
    out += Case("json", END_THINK + block(J_PARIS), "small", request=JSON)
    out += Case("json_think_parallel", THOUGHT + END_THINK + "Checking.\n" + block(
        J_PARIS, jcall('{"name": "get_time"}')), "mixed", True, request=JSON)
    out += Case("json_typed", END_THINK + block(jcall(
        '{"name": "set_config", "arguments": {"count": "3", "ratio": 2, "enabled": "true", '
        '"tags": "[\\"a\\"]", "meta": {"k": [1, 2]}, "note": null, "label": 42, '
        '"x": "\U0001F600"}}')), "small", request=JSON)
    out += Case("json_bad", END_THINK + "Hi. " + block(jcall('{"name": "get_weather", ')),
                "small", request=JSON)
    out += Case("json_args_list", END_THINK + block(jcall(
        '{"name": "get_weather", "arguments": ["Paris"]}')), "small", request=JSON)
    out += Case("json_in_xml_mode", END_THINK + block(J_PARIS), "small")
    out += Case("bad_format", END_THINK + SINGLE, "small",
                request={"chat_template_kwargs": {"tool_call_format": "yaml"}})
    # efforts
    out += Case("medium", FAST + THOUGHT + END_FAST + PLAIN, "small", True, request=MEDIUM)
    out += Case("medium_tool", THOUGHT + END_FAST + "\n" + SINGLE, "mixed", True,
                request=MEDIUM)
    out += Case("medium_high_end", THOUGHT + END_THINK + PLAIN, "small", True, request=MEDIUM)
    out += Case("low", THOUGHT + END_FASTER + PLAIN, "small", True, request=LOW)
    out += Case("low_tool_json", THOUGHT + "\n" + block(J_PARIS), "small", True,
                request={"chat_template_kwargs": {"reasoning_effort": "low",
                                                  "tool_call_format": "json"}})
    out += Case("top_level_low", THOUGHT + END_FASTER + PLAIN, "small", True,
                request={"reasoning_effort": "low", **MEDIUM})
    out += Case("top_level_none", THOUGHT + END_THINK + PLAIN, "small", True,
                request={"reasoning_effort": "none"})
    out += Case("bad_effort", THOUGHT + END_THINK + PLAIN, "small", True,
                request={"chat_template_kwargs": {"reasoning_effort": "max"}})
    # recorded after the rest (9102-…)
    out += Case("bad_format_no_tools", END_THINK + PLAIN, "small", tools=False,
                request={"chat_template_kwargs": {"tool_call_format": "yaml"}})
    out += Case("bad_format_none", END_THINK + PLAIN, "small",
                request={"tool_choice": "none",
                         "chat_template_kwargs": {"tool_call_format": "yaml"}})
    out += Case("parallel_serial", END_THINK + block(call("get_weather", ("city", "Zürich")),
                                                     PARIS), "small",
                request={"parallel_tool_calls": False})
    out += Case("space_around", "\n\n" + END_THINK + "\n\n" + SINGLE + "\n", "small")
    out += Case("space_then_text_after", END_THINK + "\n\n" + SINGLE + "\nDone.", "small")
    out += Case("json_nan", END_THINK + block(jcall(
        '{"name": "get_weather", "arguments": {"city": NaN}}')), "small", request=JSON)
    out += Case("json_no_schema_nan", END_THINK + block(jcall(
        '{"name": "get_weather", "arguments": {"other": NaN}}')), "small", request=JSON)
    return out


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    """The server's render; a request render refuses (``"tools": []``, an unsupported mode) is
    rendered without what it refuses, the derender call then records vLLM's answer."""
    if chat_request.get("tools") == []:
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    kwargs = chat_request.get("chat_template_kwargs") or {}
    if kwargs.get("tool_call_format") == "yaml" or kwargs.get("reasoning_effort") == "max" \
            or chat_request.get("reasoning_effort") == "none":
        chat_request = {k: v for k, v in chat_request.items()
                        if k not in ("chat_template_kwargs", "reasoning_effort")}
    if chat_request.get("tool_choice") == "none" and not chat_request.get("tools"):
        chat_request = {k: v for k, v in chat_request.items() if k != "tool_choice"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(9000, {K2H: SERVER}, cases(), tools=TOOLS, user=USER, prompt=prompt)
