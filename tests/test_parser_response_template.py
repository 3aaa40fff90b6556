"""vLLM's response-template parsers (``hf``; parsers/formats/response_template.py): the grammar
is the checkpoint's ``response_template``, read at start-up from the model folder (and from a
layer folder ``derender.compact`` made), one machine for every template.

The rules are vLLM 0.33's (``vllm/parser/response_template.py``,
``vllm/parser/chat_parsing/``, docs/vllm-compat/response_template.md); the recorded cases
7800-7959 replay them against the real server (test_conformance). Here: what start-up refuses
(vLLM's own validation messages, ``validate_tokenizer_response_template``), which parser pairs
are served, the delimiter forms read, split invariance through the HTTP app on both recorded
checkpoints (the prompt's text after the start anchor read, as vLLM reads it), and the bounds
(README compatibility rows).
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from derender.compact import compact_folder
from derender.core import parsers
from derender.core.parsers.formats import response_template as rt
from derender.core.parsers.tools import ToolContext
from derender.core.registry import read_model_info
from derender_testing.models import model_folder, tokenizer
from derender_testing.tool_streams import (
    check_written,
    draw_finish,
    ended,
    requests,
    run_both,
    spoil,
)
from tests.test_parser_properties import PROPS

JSON_MODEL, XML_MODEL = "hf-json-standin", "hf-xml-standin"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]


def template_of(model: str) -> dict[str, Any]:
    config = json.loads((model_folder(model) / "tokenizer_config.json").read_text("utf-8"))
    spec: dict[str, Any] = config["response_template"]
    return spec


def folder_with(tmp_path: Path, template: Any, name: str = "i20rt-bad") -> Path:
    """``hf-json-standin`` with another ``response_template`` (None: none)."""
    source = model_folder(JSON_MODEL)
    target = tmp_path / name
    shutil.copytree(source, target)
    config = json.loads((target / "tokenizer_config.json").read_text("utf-8"))
    config.pop("response_template")
    if template is not None:
        config["response_template"] = template
    (target / "tokenizer_config.json").write_text(json.dumps(config), "utf-8")
    return target


def edited(change: dict[str, Any], field: str | None = None, drop: tuple[str, ...] = ()
           ) -> dict[str, Any]:
    """The JSON checkpoint's template with ``change`` made (to ``field``), keys dropped."""
    spec = copy.deepcopy(template_of(JSON_MODEL))
    target = spec if field is None else spec["fields"].setdefault(field, {})
    target.update(change)
    for key in drop:
        target.pop(key)
    return spec


THINKING = {"open": "<think>", "close": "</think>"}


# start-up: vLLM's checks (validate_tokenizer_response_template), the folder named


@pytest.mark.parametrize(("template", "parsers_named", "reason"), [
    (None, ("hf", "hf"), "requires `response_template` metadata"),
    (edited({"fields": {"thinking": THINKING}}), (None, "hf"),
     "requires a response_template with a tool_calls field"),
    (edited({"fields": {"tool_calls": template_of(JSON_MODEL)["fields"]["tool_calls"]}}),
     ("hf", None), "requires a response_template with a thinking field"),
    (edited({"content": "json"}, "thinking"), ("hf", "hf"), "cannot be streamed"),
    (edited({"open": "[C]"}, "citations"), ("hf", "hf"), "serving reads only the fields"),
    (edited({"version": 2}), ("hf", "hf"), "unsupported response_template version"),
    (edited({"role": "assistant"}, "thinking"), ("hf", "hf"), "unknown keys"),
    (edited({}, drop=("start_anchor",)), ("hf", "hf"), "must define 'start_anchor'"),
    (edited({"open": ""}, "thinking"), ("hf", "hf"), "must be a non-empty string"),
    (edited({"open_pattern": "<think>"}, "thinking"), ("hf", "hf"), "cannot specify both"),
    (edited({"open_pattern": "<tool_call>(?=\\{)"}, "tool_calls", ("open",)), ("hf", "hf"),
     "does not match incrementally"),
    (edited({"open_pattern": "<think (?P<mode>\\w+)>"}, "thinking", ("open",)), ("hf", "hf"),
     "without a 'transform'"),
    (edited({"fields": {"thinking": {"close": "</think>"}, "content": {},
                        "tool_calls": template_of(JSON_MODEL)["fields"]["tool_calls"]}}),
     ("hf", "hf"), "at most one field"),
])
def test_a_template_derender_cannot_read_stops_the_start_up(
        tmp_path: Path, template: Any, parsers_named: tuple[str | None, str | None],
        reason: str) -> None:
    """Each refused with the folder's name and why; vLLM refuses the same templates at its
    start-up (its messages, ``vllm/parser/chat_parsing/response_templates.py`` and
    ``validate_tokenizer_response_template``), except the lookahead, which vLLM reads and
    derender's delimiters cannot match incrementally (README compatibility)."""
    folder = folder_with(tmp_path, template)
    with pytest.raises(RuntimeError) as error:
        read_model_info(folder, parsers_named)
    assert str(error.value).startswith("i20rt-bad: ")
    assert reason in str(error.value), error.value


def test_the_templates_read_and_the_layer_keeps_them(tmp_path: Path) -> None:
    """Both recorded checkpoints' templates are read (the ``content`` field serving adds where
    there is none); a layer folder made by ``derender.compact`` (``decode.json`` for the
    tokenizer, the other files copied) reads the same template."""
    json_info = read_model_info(model_folder(JSON_MODEL), ("hf", "hf"))
    xml_info = read_model_info(model_folder(XML_MODEL), ("hf", "hf"))
    assert [f.name for f in json_info.response_template.fields] == [
        "thinking", "tool_calls", "content"]
    assert json_info.response_template.implicit == 2
    assert [f.name for f in xml_info.response_template.fields] == [
        "thinking", "content", "tool_calls"]
    compact_folder(model_folder(XML_MODEL), tmp_path / "layer")
    layer = read_model_info(tmp_path / "layer", ("hf", "hf"))
    assert layer.response_template == xml_info.response_template
    assert read_model_info(model_folder(JSON_MODEL), (None, None)).response_template is None


def test_pairs_served_as_vllm_serves_them() -> None:
    """vLLM's ParserManager: a response-template parser stands for both parsers, alone or as
    both; with another family's parser it refuses to start ("cannot be combined")."""
    assert parsers.pairing_error("hf", "hf") is None
    assert parsers.pairing_error(None, "hf") is None
    assert parsers.pairing_error("hf", None) is None
    assert parsers.pairing_error("beam", "beam") is None
    for pair in (("hf", "hermes"), ("qwen3", "hf"), ("deepseek_v4", "hf"), ("hf", "beam"),
                 ("beam", "hf"), ("beam", "hermes")):
        error = parsers.pairing_error(*pair)
        assert error is not None and "cannot be combined" in error


# the delimiter forms (vLLM's regex partial matching, derender's literal and captured forms)


@pytest.mark.parametrize(("pattern", "literals"), [
    ("<think>", ["<think>"]), ("<think>\\n?", ["<think>", "<think>\n"]),
    ("(?:<a>|<b>)x", ["<a>x", "<b>x"]), ("\\[TOOL\\]", ["[TOOL]"]),
    ("a.b", None), ("x+", None), ("^<a>", None),
])
def test_literal_alternatives_expand(pattern: str, literals: list[str] | None) -> None:
    got = rt.expand(pattern)
    assert (sorted(got) if got is not None else None) == (
        sorted(literals) if literals is not None else None)


def feed(template: rt.Template, prompt: str, pieces: list[str], context: ToolContext
         ) -> tuple[str, str, list[tuple[str, str]]]:
    state = rt.start(template, prompt)
    reasoning, content, calls = "", "", []
    for k, piece in enumerate(pieces):
        more, out, found, state = rt.feed_reasoning(state, piece, k == len(pieces) - 1,
                                                    context)
        reasoning, content = reasoning + more, content + out
        calls += [(c.name or "", c.arguments) for c in found]
    return reasoning, content, calls


XML_OUTPUT = ("Thinking.\n</think>\n\nText <tool_call>\n<function=get_weather>\n"
              "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
              "</function>\n</tool_call>")
"""As 7866's output: the prompt opened ``<think>\\n``."""


def test_a_captured_opener_is_read_in_any_split() -> None:
    """``<tool_call>\\n?<function=(?P<name>[^>\\n]+)>`` names the call; the prompt's held
    ``<think>\\n`` (a literal a longer one extends) opens the reasoning [7866]; whole and in
    pieces of every size alike."""
    template = rt.load_template(template_of(XML_MODEL))
    context = ToolContext(tools=TOOLS, template=template, parse_reasoning=True,
                          parse_tools=True)
    prompt = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"
    whole = feed(template, prompt, [XML_OUTPUT], context)
    assert whole == ("Thinking.", "\n\nText ",
                     [("get_weather", '{"city": "Paris", "days": 3}')])
    for size in range(1, 12):
        pieces = [XML_OUTPUT[i:i + size] for i in range(0, len(XML_OUTPUT), size)]
        assert feed(template, prompt, pieces, context) == whole


def test_bounds() -> None:
    """README compatibility rows: a pending delimiter longer than ``MAX_HELD`` characters is
    text; a call whose body passes ``MAX_BODY`` bytes, or whose opener captures more than
    ``MAX_HELD`` characters, is dropped; the held text and the body stay within them."""
    template = rt.load_template(template_of(XML_MODEL))
    context = ToolContext(tools=TOOLS, template=template, parse_reasoning=True,
                          parse_tools=True)
    prompt = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    long_name = "<tool_call>\n<function=" + "n" * (rt.MAX_HELD + 10)
    pieces = [long_name[i:i + 7] for i in range(0, len(long_name), 7)]
    state = rt.start(template, prompt)
    content = ""
    for piece in pieces:
        _, out, calls, state = rt.feed_reasoning(state, piece, False, context)
        content += out
        assert len(state.held) <= rt.MAX_HELD and not calls
    assert (content + state.held) == long_name
    big = "\U0001F600" * (rt.MAX_BODY // 4 + 1)
    call = ("<tool_call>\n<function=get_weather>\n<parameter=city>\n" + big
            + "\n</parameter>\n</function>\n</tool_call>After.")
    state = rt.start(template, prompt)
    found = []
    for i in range(0, len(call), 50):
        _, out, calls, state = rt.feed_reasoning(state, call[i:i + 50], i + 50 >= len(call),
                                                 context)
        found += calls
        assert len(state.body.encode()) <= rt.MAX_BODY
    assert found == [] and out.endswith("After.")
    named = f"<tool_call>\n<function={'g' * (rt.MAX_HELD + 1)}>\n</function>\n</tool_call>"
    assert feed(template, prompt, [named], context)[2] == []


# split invariance through the HTTP app


def json_call(name: str, arguments: dict[str, Any]) -> str:
    return ("<tool_call>\n" + json.dumps({"name": name, "arguments": arguments},
                                         ensure_ascii=False) + "\n</tool_call>")


def xml_call(name: str, arguments: dict[str, Any]) -> str:
    params = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in arguments.items())
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


VALUES = st.sampled_from(["Paris", "Zürich 😀", 'a "quoted"\nline', "", "x" * 40])


@st.composite
def outputs(draw: st.DrawFn, model: str) -> tuple[str, list[Any], bool]:
    """Reasoning (closed, or opened in the output), text, calls in the model's template, text
    after them; spoiled at times (cut, broken markup)."""
    text = ""
    if draw(st.booleans()):
        opened = "<think>\n" if model == JSON_MODEL or draw(st.booleans()) else ""
        text += opened + draw(st.sampled_from(["Think.", "😀 deep", ""])) + "\n</think>\n\n"
    text += draw(st.sampled_from(["", "Sure. ", "Text <tool_call "]))
    written: list[Any] = []
    for _ in range(draw(st.integers(0, 2))):
        arguments = {"city": draw(VALUES)} if draw(st.booleans()) else {}
        if model == JSON_MODEL and draw(st.booleans()):
            arguments["days"] = draw(st.integers(0, 9))
        write = json_call if model == JSON_MODEL else xml_call
        text += write("get_weather", arguments) + draw(st.sampled_from(["", "\n"]))
        written.append(["get_weather", {k: (v.strip() if model == XML_MODEL and
                                            isinstance(v, str) else v)
                                        for k, v in arguments.items()}])
    text += draw(st.sampled_from(["", "Done."]))
    text, clean = spoil(draw, text, ["<tool_call>\n{", "</think>", "<tool_call>\n<function=",
                                     "</function>", "<think"])
    return text, written, clean


@pytest.mark.parametrize(("model", "reasoning_parser", "tool_parser"), [
    (JSON_MODEL, "hf", "hf"), (XML_MODEL, "hf", "hf"), (JSON_MODEL, None, "hf"),
    (XML_MODEL, "hf", None), (XML_MODEL, "beam", "beam")])
@PROPS
@given(data=st.data())
def test_stream_folds_to_message(client_for: Any, model: str, reasoning_parser: str | None,
                                 tool_parser: str | None, data: st.DataObject) -> None:
    client = client_for(model, reasoning_parser, tool_parser)
    request = data.draw(requests([{"role": "user", "content": "Weather?"}], TOOLS, 3),
                        label="chat_request")
    if tool_parser is None:
        request.pop("tools", None)
        request.pop("tool_choice", None)
    off = data.draw(st.booleans(), label="thinking off")
    text, written, clean = data.draw(outputs(model), label="output")
    ids, finish = ended(model, text, draw_finish(data))
    head = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
    if model == XML_MODEL:
        head += "<think>\n\n</think>\n\n" if off else "<think>\n"
    prompt = list(tokenizer(model).encode(head, add_special_tokens=False).ids)
    expected = run_both(client, model, ids, finish, prompt, request, data)
    # the written calls are calls unless a reasoning region holds them (the XML checkpoint's
    # prompt opens <think> with thinking on)
    in_reasoning = model == XML_MODEL and not off
    if clean and tool_parser is not None and "think>" not in text and finish == "stop" \
            and not in_reasoning:
        check_written(expected, written, request)
