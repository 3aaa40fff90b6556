"""Response-template parsers (issue 20, cases 7800-…): vLLM 0.33's ``hf`` tool and reasoning
parsers (``vllm/parser/response_template.py``, one ``ResponseTemplateParser`` behind both
names), whose grammar is the checkpoint's ``response_template`` (``tokenizer_config.json``).
Two checkpoints, both Qwen3's vocabulary (``layers/tokenizers/qwen3``) with a template of
their own (``tests/models/README.md``):

- ``hf-json-standin``: Qwen3's chat template; the template's literal ``start_anchor``,
  ``<think>``/``</think>``, ``<tool_call>`` JSON ``</tool_call>`` reshaped by a ``transform``,
  no ``content`` field (serving adds an implicit one);
- ``hf-xml-standin``: a chat template opening ``<think>\\n`` in the prompt (closed
  ``<think>\\n\\n</think>\\n\\n`` with ``enable_thinking`` false); ``start_anchor_pattern``,
  literal lists, an ``open_pattern`` capturing the function name, a ``close_pattern``, and
  ``xml-inline`` parameters typed by the tool's schema.

Usage (copy the test folders to ``$PEER_HOME/models/i20rt-json`` and ``i20rt-xml``):

    "$VLLM_PEER"/start.sh i20rt-json 8381 --served-model-name hf-json-standin \\
        --tool-call-parser hf --reasoning-parser hf --enable-auto-tool-choice
    "$VLLM_PEER"/start.sh i20rt-xml 8382 --served-model-name hf-xml-standin \\
        --tool-call-parser hf --reasoning-parser hf --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py response_template 8381 8382

Then EOS ``<|im_end|>`` 151645, or none (finish "length"). Every case is recorded
non-streaming and then streamed.
"""

from __future__ import annotations

import json
from typing import Any

from record_tool_fixtures import ROOT, Format, Server, render_prompt
from record_tool_fixtures import Case as _Case
from tokenizers import Tokenizer

from tool_cases.shared import NAMED_CHOICE, NONE, REQUIRED, TOOLS, USER, both

HF = "hf"
EOS = 151645
JSON, XML = "hf-json-standin", "hf-xml-standin"


def server(model: str, flags: list[str], label: str, slug: str, features: tuple[str, ...]
           ) -> Server:
    auto = ["--enable-auto-tool-choice"] if "--tool-call-parser" in flags else []
    return Server(model, ["--served-model-name", model, *flags, *auto],
                  label, slug, features, ROOT / "tests" / "models" / model / "tokenizer.json")


BOTH = ["--tool-call-parser", HF, "--reasoning-parser", HF]
BOTH_FEATURES = (f"parser:{HF}", "reasoning", f"reasoning_parser:{HF}")
SERVERS = {
    "json": server(JSON, BOTH, "hf tool and reasoning parsers (JSON calls template)",
                   "hf-json", BOTH_FEATURES),
    "xml": server(XML, BOTH, "hf tool and reasoning parsers (XML calls template)",
                  "hf-xml", BOTH_FEATURES),
}
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


def jcall(name: str, arguments: Any, raw: str | None = None) -> str:
    body = raw if raw is not None else json.dumps({"name": name, "arguments": arguments},
                                                  ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def xcall(name: str, *args: tuple[str, str], nl: str = "\n") -> str:
    params = "".join(f"<parameter={k}>{nl}{v}{nl}</parameter>{nl}" for k, v in args)
    return f"<tool_call>{nl}<function={name}>{nl}{params}</function>{nl}</tool_call>"


J_PARIS = jcall("get_weather", {"city": "Paris", "unit": "c"})
X_PARIS = xcall("get_weather", ("city", "Paris"), ("unit", "c"))
J_THINK = "<think>\n" + THOUGHT + "\n</think>\n\n"
X_THINK = THOUGHT + "\n</think>\n\n"


def Case(srv: str, shape: str, output: str, stream: str, reasoning: bool = True,  # noqa: N802
         **fields: Any) -> list[_Case]:
    return both(_Case(srv, shape, output, **{
        "eos": EOS, "kind": "reasoning" if reasoning else "tool_call", **fields}), stream)


def json_cases() -> list[_Case]:
    s = "json"
    out: list[_Case] = []
    out += Case(s, "think_call", J_THINK + J_PARIS, "small")
    out += Case(s, "single", J_PARIS, "one", reasoning=False)
    out += Case(s, "parallel", J_THINK + jcall("get_weather", {"city": "Zürich"}) + "\n"
                + jcall("get_weather", {"city": '東京 "Tokyo"\nline two', "unit": "f"}),
                "small")
    out += Case(s, "typed", jcall("set_config", {
        "count": "3", "ratio": 0.5, "enabled": True, "tags": ["a", "b"],
        "meta": {"k": 1, "nested": {"ok": True}}, "note": None, "label": 42, "level": "2"}),
        "small", reasoning=False)
    out += Case(s, "typed_strings", jcall("set_config", {
        "count": "3.0", "ratio": "1e3", "enabled": "true", "tags": '["a"]',
        "meta": '{"k": 1}', "note": "null", "label": "x"}), "small", reasoning=False)
    out += Case(s, "no_args", jcall("get_time", {}), "one", reasoning=False)
    out += Case(s, "string_args", jcall("", None, '{"name": "get_weather", "arguments": '
                                        '"{\\"city\\": \\"Paris\\"}"}'), "small",
                reasoning=False)
    out += Case(s, "content_before", "Let me check the weather for you.\n" + J_PARIS, "mixed",
                reasoning=False)
    out += Case(s, "content_after", J_PARIS + "\nI will report back shortly.", "small",
                reasoning=False)
    out += Case(s, "no_call", J_THINK + PLAIN, "small")
    out += Case(s, "plain", PLAIN, "small", reasoning=False)
    out += Case(s, "unknown_tool", jcall("get_stock", {"symbol": "ACME"}), "small",
                reasoning=False)
    out += Case(s, "not_a_call", jcall("", None, '{"tool": "get_weather"}'), "small",
                reasoning=False)
    out += Case(s, "malformed", jcall("", None, '{"name": "get_weather", "arguments": '
                                      '{"city": Paris}}') + "\nAfter.", "small",
                reasoning=False)
    out += Case(s, "no_close", "<tool_call>\n" + json.dumps(
        {"name": "get_weather", "arguments": {"city": "Paris"}}), "small", reasoning=False)
    out += Case(s, "cut_in_name", "Sure.<tool_call>\n{\"name\": \"get_wea", "small",
                reasoning=False, eos=None)
    out += Case(s, "cut_in_args", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                "{\"city\": \"Par", "one", reasoning=False, eos=None)
    out += Case(s, "cut_in_think", "<think>\n" + THOUGHT, "small", eos=None)
    out += Case(s, "tags_in_text", "Write <tool_call and </think literally.", "small",
                reasoning=False)
    out += Case(s, "wide_chars", J_THINK.replace("Paris", WIDE) + WIDE + " "
                + jcall("get_weather", {"city": WIDE + " Zürich"}), "small")
    out += Case(s, "long_value", jcall("get_weather", {"city": LONG}), "mixed",
                reasoning=False)
    out += Case(s, "tool_choice_none", J_THINK + J_PARIS, "small", request=NONE)
    out += Case(s, "required", J_PARIS, "small", reasoning=False, request=REQUIRED)
    out += Case(s, "named", J_PARIS, "mixed", reasoning=False, request=NAMED_CHOICE)
    out += Case(s, "no_tools", J_THINK + J_PARIS, "small", tools=False)
    out += Case(s, "empty_tools", J_PARIS, "small", reasoning=False, tools=False,
                request={"tools": []})
    out += Case(s, "multi_turn", jcall("get_weather", {"city": "Zürich"}), "small",
                reasoning=False, request=MULTI_TURN)
    out += Case(s, "keep_special", "Sure. " + J_PARIS, "small", reasoning=False,
                request={"skip_special_tokens": False})
    out += Case(s, "thinking_off", PLAIN + "\n" + J_PARIS, "small", reasoning=False,
                request=OFF)
    out += Case(s, "thinking_off_think", J_THINK + PLAIN, "small", request=OFF)
    out += Case(s, "hide_reasoning", J_THINK + J_PARIS, "small",
                request={"include_reasoning": False})
    out += Case(s, "parallel_serial", jcall("get_weather", {"city": "Zürich"}) + J_PARIS,
                "small", reasoning=False, request={"parallel_tool_calls": False})
    out += Case(s, "two_thoughts", J_THINK + "Mid.<think>again</think>" + PLAIN, "small")
    return out


def xml_cases() -> list[_Case]:
    s = "xml"
    out: list[_Case] = []
    out += Case(s, "think_call", X_THINK + X_PARIS, "small")
    out += Case(s, "think_call_split", X_THINK + X_PARIS, "one")
    out += Case(s, "parallel", X_THINK + xcall("get_weather", ("city", "Zürich")) + "\n"
                + xcall("get_weather", ("city", '東京 "Tokyo"\nline two'), ("unit", "f")),
                "small")
    out += Case(s, "typed", X_THINK + xcall(
        "set_config", ("count", "3"), ("ratio", "0.5"), ("enabled", "True"),
        ("tags", '["a", "b"]'), ("meta", '{"k": 1, "nested": {"ok": true}}'),
        ("note", "null"), ("label", "42"), ("level", "2")), "small")
    out += Case(s, "typed_fallbacks", X_THINK + xcall(
        "set_config", ("count", "three"), ("ratio", "1e3"), ("enabled", "yes"),
        ("tags", "a, b"), ("meta", "{'k': 1}"), ("note", "None"), ("level", "2.0"),
        ("extra", "7")), "small")
    out += Case(s, "inline", X_THINK + xcall("get_weather", ("city", "Paris"), nl=""), "one")
    out += Case(s, "no_args", X_THINK + "<tool_call>\n<function=get_time>\n</function>\n"
                "</tool_call>", "small")
    out += Case(s, "duplicate_param", X_THINK + xcall("get_weather", ("city", "Paris"),
                                                      ("city", "Lyon")), "small")
    out += Case(s, "content_before", X_THINK + "Checking.\n" + X_PARIS, "mixed")
    out += Case(s, "content_after", X_THINK + X_PARIS + "\nDone.", "small")
    out += Case(s, "no_call", X_THINK + PLAIN, "small")
    out += Case(s, "think_tag_again", "<think>\n" + X_THINK + PLAIN, "small")
    out += Case(s, "unknown_tool", X_THINK + xcall("get_stock", ("symbol", "ACME")), "small")
    out += Case(s, "spaced_name", X_THINK + "<tool_call>\n<function= get_weather >\n"
                "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>", "small")
    out += Case(s, "no_close", X_THINK + "<tool_call>\n<function=get_weather>\n<parameter=city>"
                "\nParis\n</parameter>\n", "small")
    out += Case(s, "cut_in_think", THOUGHT, "small", eos=None)
    out += Case(s, "cut_in_name", X_THINK + "Sure.<tool_call>\n<function=get_wea", "small",
                eos=None)
    out += Case(s, "cut_in_args", X_THINK + "<tool_call>\n<function=get_weather>\n"
                "<parameter=city>\nPar", "one", eos=None)
    out += Case(s, "cut_in_closer", X_THINK + "<tool_call>\n<function=get_weather>\n"
                "<parameter=city>\nParis\n</parameter>\n</function>\n</tool", "small",
                eos=None)
    out += Case(s, "wide_chars", WIDE + "\n</think>\n\n" + WIDE + " "
                + xcall("get_weather", ("city", WIDE + " Zürich")), "small")
    out += Case(s, "long_value", X_THINK + xcall("get_weather", ("city", LONG)), "mixed")
    out += Case(s, "tool_choice_none", X_THINK + X_PARIS, "small", request=NONE)
    out += Case(s, "required", X_THINK + X_PARIS, "small", request=REQUIRED)
    out += Case(s, "named", X_THINK + X_PARIS, "mixed", request=NAMED_CHOICE)
    out += Case(s, "no_tools", X_THINK + X_PARIS, "small", tools=False)
    out += Case(s, "empty_tools", X_THINK + X_PARIS, "small", tools=False,
                request={"tools": []})
    out += Case(s, "multi_turn", X_THINK + xcall("get_weather", ("city", "Zürich")), "small",
                request=MULTI_TURN)
    out += Case(s, "keep_special", X_THINK + "Sure. " + X_PARIS, "small",
                request={"skip_special_tokens": False})
    out += Case(s, "thinking_off", PLAIN + "\n" + X_PARIS, "small", reasoning=False,
                request=OFF)
    out += Case(s, "hide_reasoning", X_THINK + X_PARIS, "small",
                request={"include_reasoning": False})
    out += Case(s, "parallel_serial", X_THINK + xcall("get_weather", ("city", "Zürich"))
                + X_PARIS, "small", request={"parallel_tool_calls": False})
    return out


def prompt(port: int, tokenizer: Tokenizer, chat_request: dict[str, Any]) -> list[int]:
    """The server's render. The render step refuses ``"tools": []``, and (the parser's
    ``adjust_request``) ``tool_choice`` "required" or named and ``parallel_tool_calls`` false,
    which the template cannot guarantee (400): the prompt is rendered without them (the
    chat template reads none of them), and the derender call records vLLM's answer."""
    if chat_request.get("tools") == []:
        chat_request = {k: v for k, v in chat_request.items() if k != "tools"}
    if chat_request.get("tool_choice") not in (None, "auto", "none"):
        chat_request = {k: v for k, v in chat_request.items() if k != "tool_choice"}
    chat_request = {k: v for k, v in chat_request.items() if k != "parallel_tool_calls"}
    return render_prompt(port, tokenizer, chat_request)


FORMAT = Format(7800, SERVERS, json_cases() + xml_cases(), tools=TOOLS, user=USER,
                prompt=prompt)
