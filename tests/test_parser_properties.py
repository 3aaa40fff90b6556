"""Property tests of the reasoning and tool-call parsers through the HTTP app.

Semantics under test (README: "Reasoning and tool calls", "Compatibility"): streaming and
non-streaming are the same machine, so for every split of the output ids into chunks the folded
stream (content and reasoning concatenated, null as ""; tool calls per index: name, id and type
"function" from the first delta, arguments the concatenated fragments, exactly one id per call
and equal to the non-streaming call's id; the finish_reason of the last chunk) equals the
non-streaming message for the same ids, chat_request and prompt. The prompt goes to both places
the parser reads it: ``generate_response.prompt_token_ids`` (non-streaming) and the top-level
``prompt_token_ids`` (streaming).

Outputs are built like real generations: optional ``<think>``…``</think>`` (single marker
ids), multilingual and emoji text, 0–3 hermes calls whose arguments hold nested objects,
escaped quotes, unicode escapes and ``</tool_call>`` inside strings, text between calls,
the JSON list form (``tool_choice`` "required") and bare arguments (named ``tool_choice``),
unterminated reasoning, an unterminated or truncated last call, unreadable call heads; then
EOS (finish "stop") or not (finish "length"). Besides the stream/non-stream equality, a
structural model written from docs/vllm-compat/api.md §7.1/§7.3/§7.4 (with our documented
differences: arguments are the model's own JSON text; whitespace-only content before a call
is null) predicts the message for the outputs whose reading the spec fixes unambiguously.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from derender_testing.chat_streams import (
    check_equal,
    chunkings,
    fold,
    non_streaming,
    streaming,
)
from derender_testing.models import tokenizer

QWEN, DEEPSEEK = "qwen3", "deepseek-v4"

THINK, END_THINK, TOOL, END_TOOL = 151667, 151668, 151657, 151658
IM_START, IM_END = 151644, 151645
ASSISTANT, NEWLINE = 77091, 198
DS_THINK, DS_END_THINK, DS_EOS = 128821, 128822, 1
MARKER_TEXT = {THINK: "<think>", END_THINK: "</think>", TOOL: "<tool_call>",
               END_TOOL: "</tool_call>", IM_START: "<|im_start|>", IM_END: "<|im_end|>",
               DS_THINK: "<think>", DS_END_THINK: "</think>"}

PROPS = settings(max_examples=30, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
"""The shared settings of the split-invariance properties: 30 derandomized examples each in
``make test`` (most of them stream through the app, a request per chunk; each format's recorded
streams and its machine-level properties cover the rest); ``make explore`` draws at random."""

MESSAGES = [{"role": "user", "content": "Weather in Zürich? 🌦"}]
TOOL_NAMES = ("get_weather", "create_note", "search_web")
TOOLS = [{"type": "function", "function": {
    "name": name, "description": f"the {name} tool",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
    for name in TOOL_NAMES]

Part = int | str


def enc(text: str, name: str = QWEN) -> list[int]:
    return list(tokenizer(name).encode(text, add_special_tokens=False).ids)


def ids_of(parts: list[Part], name: str) -> list[int]:
    out: list[int] = []
    for part in parts:
        out.extend([part] if isinstance(part, int) else enc(part, name))
    return out


def text_of(parts: list[Part]) -> str:
    return "".join(MARKER_TEXT[p] if isinstance(p, int) else p for p in parts)


USER_TURN = [IM_START, *enc("user\nWeather in Zürich? 🌦"), IM_END, *enc("\n")]
PROMPTS = {  # name -> (ids, leaves reasoning open per §7.3's backward scan)
    "open": ([*USER_TURN, IM_START, ASSISTANT, NEWLINE], True),
    "closed": ([*USER_TURN, IM_START, ASSISTANT, NEWLINE, THINK, *enc("\n\n"), END_THINK,
                *enc("\n\n")], False),
    "pre-opened": ([*USER_TURN, IM_START, ASSISTANT, NEWLINE, THINK, *enc("\n")], True),
}
DS_PROMPTS = {
    "plain": enc("<｜User｜>hi<｜Assistant｜>", DEEPSEEK),
    "open": [*enc("<｜User｜>hi<｜Assistant｜>", DEEPSEEK), DS_THINK, *enc("\n", DEEPSEEK)],
    "closed": [*enc("<｜User｜>hi<｜Assistant｜>", DEEPSEEK), DS_THINK, DS_END_THINK],
}


# --------------------------------------------------------------------------- text and JSON

WORDS = ["Let me think", " about", " the weather", " in Zürich", " 東京", "では", " 🌦",
         "👍🏽", " 🇫🇷", "ß", "—", " naïve", " привет", " مرحبا", " 😀🫠", " 1+1=2", ".", "!",
         " ok", "\n", " ", "\t", "\"quoted\"", " a\\b", "{x}", " [1, 2]"]
DIRTY = ["<", " a < b", "</", "<thi", "nk>", "</think", "<tool", "_call>", ">", "tool_call",
         "<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>", "<|im_start|>"]
"""Marker-like text: markers spelled by ordinary tokens where pieces meet, and the markers
themselves (the tokenizer turns them into their single ids) where the template does not put
them. The stream must agree with the non-streaming answer; the structural model does not try
to predict these."""

plain_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map("".join)
any_text = st.lists(st.sampled_from(WORDS + DIRTY), min_size=1, max_size=6).map("".join)
gap_text = st.sampled_from(["", "", "\n", "\n\n", " \n", "Sure — 🌦 here:", "Checking 東京.\n\n"])

STRING_PIECES = ["a", "Zürich", "東京", "🫠", "👍🏽", '"', '\\', "\n", "\t", "/", "{", "}", "[",
                 "]", ",", ":", " ", "</tool_call>", "<tool_call>", 'say "hi"', "\u00df",
                 "\u0001", "'"]
DIRTY_STRING_PIECES = ["</think>", "<think>", "<|im_end|>", "<|im_start|>", "</thi"]
json_strings = st.lists(st.sampled_from(STRING_PIECES), max_size=4).map("".join)
dirty_json_strings = st.lists(st.sampled_from(STRING_PIECES + DIRTY_STRING_PIECES),
                              max_size=4).map("".join)
json_keys = st.sampled_from(["q", "city", "unit", "nested", "tags", "ß", "emoji 😀", "k\"q"])


def json_values(strings: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                        st.sampled_from([0.5, -0.25, 1e-05, 3.0]), strings)
    return st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=3),
                                st.dictionaries(json_keys, inner, max_size=3)),
        max_leaves=6)


@st.composite
def json_text(draw: st.DrawFn, value: Any) -> str:
    """The model's own spelling of a JSON value (spacing and escaping vary)."""
    style = draw(st.sampled_from(["spaced", "compact", "indented"]))
    ascii_only = draw(st.booleans())
    if style == "indented":
        return json.dumps(value, ensure_ascii=ascii_only, indent=2)
    separators = (", ", ": ") if style == "spaced" else (",", ":")
    return json.dumps(value, ensure_ascii=ascii_only, separators=separators)


@st.composite
def arguments(draw: st.DrawFn, dirty: bool = False) -> str:
    values = json_values(dirty_json_strings if dirty else json_strings)
    args = draw(st.dictionaries(json_keys, values, max_size=4))
    return draw(json_text(args))


HEADS = [
    '{{"name": "{name}", "arguments": {args}}}',
    '{{"name":"{name}","arguments":{args}}}',
    '{{\n  "name": "{name}",\n  "arguments": {args}\n}}',
]
MALFORMED = ["not json", "{name: get_weather}", '{"name": 42, "arguments": {}}', "[1, 2]", "",
             '{"function": "get_weather"}', '{"name": "get_weather"}', "{'name': 'x'}"]


# --------------------------------------------------------------------------- qwen3 outputs


@dataclass
class Call:
    name: str
    args: str
    ending: str = "closed"
    """"closed" (``</tool_call>``), "open" (complete JSON, no closing tag) or "truncated"."""


@dataclass
class QwenOutput:
    """One generation, by structure: what each part is, and its ids."""

    has_think: bool
    reasoning: str
    has_end: bool
    gap: str
    """Text between reasoning and the tool section."""
    form: str
    """"none", "tagged", "list" or "bare"."""
    calls: list[Call]
    between: list[str]
    trailing: str
    malformed: list[str] = field(default_factory=list)
    """Texts of unreadable ``<tool_call>`` regions, in the tagged section."""
    dirty: bool = False
    section: list[Part] = field(default_factory=list)

    def parts(self) -> list[Part]:
        head: list[Part] = [THINK] if self.has_think else []
        head += [self.reasoning] if self.reasoning else []
        head += [END_THINK] if self.has_end else []
        gap: list[Part] = [self.gap] if self.gap else []
        tail: list[Part] = [self.trailing] if self.trailing else []
        return [*head, *gap, *self.section, *tail]


@st.composite
def qwen_outputs(draw: st.DrawFn, choice: Any = "auto") -> QwenOutput:
    """An output; the JSON forms are likelier when ``tool_choice`` asks for them."""
    dirty = draw(st.integers(0, 5)) == 5
    text = any_text if dirty else plain_text
    has_think = draw(st.booleans())
    reasoning = draw(st.one_of(st.just(""), text))
    has_end = draw(st.integers(0, 3)) > 0
    if choice == "required":
        forms = ["list", "list", "tagged", "none"]
    elif isinstance(choice, dict):
        forms = ["bare", "bare", "tagged", "none"]
    else:
        forms = ["tagged", "tagged", "tagged", "tagged", "none", "list", "bare"]
    form = draw(st.sampled_from(forms))
    if form in ("list", "bare") and draw(st.integers(0, 3)) > 0:
        gap = draw(st.sampled_from(["", "\n\n", "\n"]))  # JSON right after the reasoning
    else:
        gap = draw(st.one_of(gap_text, text))
    calls: list[Call] = []
    between: list[str] = []
    malformed: list[str] = []
    section: list[Part] = []
    if form == "tagged":
        n = draw(st.sampled_from([1, 2, 3, 1, 0]))
        regions: list[Call | str] = [
            Call(draw(st.sampled_from(TOOL_NAMES)), draw(arguments(dirty))) for _ in range(n)]
        for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
            bad = "\n" + draw(st.sampled_from(MALFORMED)) + "\n"
            if draw(st.integers(0, 3)) == 3:  # never closed (kept under MAX_HEAD = 512
                bad = "\x00" + bad  # characters: longer ones are test_parser_rules' case)
            regions.insert(draw(st.integers(0, max(0, len(regions) - 1))) if regions else 0,
                           bad)
        for k, region in enumerate(regions):
            if k:
                gap_between = draw(st.sampled_from(["", "\n", "\n\n", " then ", "🫠\n"]))
                between.append(gap_between)
                if gap_between:
                    section.append(gap_between)
            if isinstance(region, str):
                if region.startswith("\x00"):
                    malformed.append("<tool_call>" + region[1:])
                    section += [TOOL, region[1:]]
                else:
                    malformed.append("<tool_call>" + region + "</tool_call>")
                    section += [TOOL, region, END_TOOL]
                continue
            calls.append(region)
            body = draw(st.sampled_from(HEADS)).format(name=region.name, args=region.args)
            newline = draw(st.booleans())
            last = k == len(regions) - 1
            region.ending = draw(st.sampled_from(["closed", "closed", "open", "truncated"])
                                 ) if last else "closed"
            if region.ending == "truncated":
                cut = body.index(region.args) + draw(st.integers(1, max(1, len(region.args) - 1)))
                section += [TOOL, ("\n" if newline else "") + body[:cut]]
            elif region.ending == "open":
                section += [TOOL, ("\n" if newline else "") + body]
            else:
                section += [TOOL, ("\n" + body + "\n") if newline else body, END_TOOL]
    elif form == "list":
        n = draw(st.integers(1, 3))
        calls = [Call(draw(st.sampled_from(TOOL_NAMES)), draw(arguments(dirty))) for _ in range(n)]
        items = [f'{{"name": "{c.name}", "parameters": {c.args}}}' for c in calls]
        section = ["[" + ", ".join(items) + "]"]
    elif form == "bare":
        calls = [Call("", draw(arguments(dirty)))]
        section = [calls[0].args]
    trailing = draw(st.one_of(st.just(""), st.just(""), text))
    return QwenOutput(has_think, reasoning, has_end, gap, form, calls, between, trailing,
                      malformed, dirty, section)


@st.composite
def qwen_requests(draw: st.DrawFn) -> dict[str, Any]:
    request: dict[str, Any] = {"messages": MESSAGES}
    if draw(st.integers(0, 5)) > 0:
        request["tools"] = TOOLS
        choice = draw(st.sampled_from(["auto", "absent", "auto", "absent", "required", "named",
                                       "none", "null"]))
    else:
        choice = draw(st.sampled_from(["absent", "none", "null"]))
    if choice == "named":
        request["tool_choice"] = {"type": "function",
                                  "function": {"name": draw(st.sampled_from(TOOL_NAMES))}}
    elif choice == "null":
        request["tool_choice"] = None
    elif choice != "absent":
        request["tool_choice"] = choice
    parallel = draw(st.sampled_from(["absent", "absent", False, True]))
    if parallel != "absent":
        request["parallel_tool_calls"] = parallel
    if draw(st.integers(0, 3)) == 0:
        request["include_reasoning"] = False
    thinking = draw(st.sampled_from(["absent", "absent", "kwargs-off", "kwargs-on",
                                     "effort-none", "effort-low", "kwargs-on-effort-none"]))
    if thinking.startswith("kwargs"):
        request["chat_template_kwargs"] = {"enable_thinking": thinking.startswith("kwargs-on")}
    if thinking.endswith("effort-none"):
        request["reasoning_effort"] = "none"
    elif thinking == "effort-low":
        request["reasoning_effort"] = "low"
    if draw(st.booleans()):
        request["logprobs"] = True
        request["top_logprobs"] = draw(st.integers(0, 2))
    if draw(st.booleans()):
        request["return_token_ids"] = True
    return request


def thinking_on(request: dict[str, Any]) -> bool:
    """§7.2: the request's ``enable_thinking`` wins, else ``reasoning_effort != "none"``."""
    kwargs = request.get("chat_template_kwargs") or {}
    if "enable_thinking" in kwargs:
        return bool(kwargs["enable_thinking"])
    return request.get("reasoning_effort", "auto") != "none"


def tool_choice_of(request: dict[str, Any]) -> Any:
    if "tool_choice" in request:
        return request["tool_choice"]
    return "auto" if request.get("tools") else "none"


# --------------------------------------------------------------------------- the model


def qwen_model(out: QwenOutput, request: dict[str, Any], prompt_open: bool, finish: str
               ) -> dict[str, Any] | None:
    """The message §7.1/§7.3/§7.4 (and our documented differences) give, or None where the
    structure alone does not settle it (marker-like text, unreadable or truncated calls)."""
    if out.dirty or out.malformed or any(c.ending == "truncated" for c in out.calls):
        return None
    section = text_of(out.section)
    thinking = thinking_on(request)
    reasoning = ""
    if not thinking:
        prefix = ("<think>" if out.has_think else "") + out.reasoning + (
            "</think>" if out.has_end else "") + out.gap  # the parser is off: all untouched
    elif not prompt_open:  # reasoning already over: <think> is text, </think> is dropped
        prefix = ("<think>" if out.has_think else "") + out.reasoning + out.gap
    elif out.has_end:
        reasoning, prefix = out.reasoning, out.gap
    elif out.form == "tagged" and out.calls:  # <tool_call> ends reasoning
        reasoning, prefix = out.reasoning + out.gap, ""
    else:  # never closed: everything is reasoning
        if "<tool_call>" in section + out.trailing:
            return None
        reasoning, prefix = out.reasoning + out.gap + section + out.trailing, ""
        section, out = "", QwenOutput(False, "", False, "", "none", [], [], "")

    choice = tool_choice_of(request)
    named = isinstance(choice, dict)
    forced = named or choice == "required"
    tools_active = bool(request.get("tools")) and choice != "none"
    calls: list[tuple[str, str]] = []
    if tools_active and forced and (prefix.strip() or not out.calls):
        lead = (prefix + section + out.trailing).lstrip()[:1]
        if lead == ("{" if named else "["):
            return None  # plain text that opens like the forced JSON form
    if not tools_active or not out.calls:
        content = prefix + section + out.trailing
    elif out.form == "tagged":
        content = prefix if prefix.strip() else ""
        calls = [(c.name, c.args) for c in out.calls]
    elif out.form == "list" and choice == "required" and not prefix.strip():
        content, calls = "", [(c.name, c.args) for c in out.calls]
    elif out.form == "bare" and named and not prefix.strip():
        content, calls = "", [(choice["function"]["name"], out.calls[0].args)]
    else:  # JSON that is not the forced form: plain content
        if "<tool_call>" in section:
            return None
        content = prefix + section + out.trailing
    if not (forced or (choice == "auto" and tools_active)):
        calls = []
    if request.get("parallel_tool_calls") is False:
        calls = calls[:1]
    if forced and not calls and content.strip() == "" and content:
        return None  # whitespace-only forced content: test_parser_rules covers it (§7.1 step 4)
    return {
        "content": content if forced else (content or None),
        "reasoning": None if request.get("include_reasoning") is False else (reasoning or None),
        "calls": calls,
        "finish": "tool_calls" if calls and finish == "stop" and not named else finish,
    }


def check_model(model: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    if model is None:
        return
    message = expected["message"]
    got_calls = [(c["function"]["name"], c["function"]["arguments"])
                 for c in message.get("tool_calls") or []]
    assert (message["content"], message["reasoning"], got_calls, expected["finish_reason"]) == (
        model["content"], model["reasoning"], model["calls"], model["finish"])
    for _, args in got_calls:
        json.loads(args)


# --------------------------------------------------------------------------- properties


@PROPS
@given(data=st.data())
def test_qwen3_hermes_stream_folds_to_message(qwen: Any, data: st.DataObject) -> None:
    request = data.draw(qwen_requests(), label="chat_request")
    out = data.draw(qwen_outputs(tool_choice_of(request)), label="output")
    prompt_name = data.draw(st.sampled_from(sorted(PROMPTS)), label="prompt")
    prompt, prompt_open = PROMPTS[prompt_name]
    ending = data.draw(st.sampled_from(["eos", "eos", "length", "stop-no-eos"]), label="ending")
    parts = out.parts()
    if not parts:
        ending = "eos"  # at least one id: the EOS
    ids = ids_of(parts, QWEN)
    text = text_of(parts)
    assert tokenizer(QWEN).decode(ids, skip_special_tokens=False) == text
    finish = "length" if ending == "length" else "stop"
    if ending == "eos":
        ids.append(IM_END)
    note(f"text={text!r}\nids={ids}")
    request_id = f"props-{data.draw(st.integers(0, 10**6), label='rid')}"

    expected = non_streaming(qwen, QWEN, ids, finish, prompt, request, request_id)
    note(f"non-streaming message={expected['message']} finish={expected['finish_reason']}")
    chunking = data.draw(chunkings(len(ids)), label="chunking")
    chunks = streaming(qwen, QWEN, ids, finish, prompt, request, request_id, chunking)
    folded = fold(chunks, request)
    check_equal(folded, expected, ids, request, finish)
    model = qwen_model(out, request, prompt_open, finish)
    event(f"structural model: {'checked' if model is not None else 'skipped'}")
    event(f"tool calls in message: {len(expected['message'].get('tool_calls') or [])}")
    event(f"form: {out.form}")
    check_model(model, expected)

    # never loses text: an unreadable call head comes back as content
    if out.malformed and tool_choice_of(request) == "auto" and request.get("tools"):
        for bad in out.malformed:
            assert bad in (expected["message"]["content"] or ""), bad


@st.composite
def deepseek_outputs(draw: st.DrawFn) -> tuple[list[Part], str, str | None, bool]:
    """(parts, reasoning, content, clean) for deepseek_r1 (§7.6, with our kept text before
    ``<think>``)."""
    clean = draw(st.integers(0, 4)) > 0
    text = plain_text if clean else any_text
    pre = draw(st.sampled_from(["", "", "", "pre 🫠 "])) if clean else ""
    has_think = draw(st.booleans())
    reasoning = draw(st.one_of(st.just(""), text))
    has_end = draw(st.integers(0, 3)) > 0
    content = draw(st.one_of(st.just(""), text)) if has_end else ""
    later = draw(st.sampled_from(["", "", "</think> again"])) if has_end else ""
    parts: list[Part] = [p for p in (pre,) if p]
    parts += [DS_THINK] if has_think else []
    parts += [reasoning] if reasoning else []
    if has_end:
        parts += [DS_END_THINK] + ([content] if content else [])
        if later:
            parts += [DS_END_THINK, " again"]
            content += later
    expected_reasoning = pre + reasoning
    expected_content = content if has_end else None
    return parts, expected_reasoning, expected_content or None, clean


@PROPS
@given(data=st.data())
def test_deepseek_r1_stream_folds_to_message(r1: Any, data: st.DataObject) -> None:
    parts, reasoning, content, clean = data.draw(deepseek_outputs(), label="output")
    request: dict[str, Any] = {"messages": MESSAGES}
    if data.draw(st.integers(0, 3), label="hide") == 0:
        request["include_reasoning"] = False
    if data.draw(st.booleans(), label="logprobs"):
        request["logprobs"] = True
    if data.draw(st.booleans(), label="return_token_ids"):
        request["return_token_ids"] = True
    prompt = DS_PROMPTS[data.draw(st.sampled_from(sorted(DS_PROMPTS)), label="prompt")]
    eos = data.draw(st.booleans(), label="eos") or not parts
    ids = ids_of(parts, DEEPSEEK)
    assert tokenizer(DEEPSEEK).decode(ids, skip_special_tokens=False) == text_of(parts)
    finish = "stop" if eos else "length"
    if eos:
        ids.append(DS_EOS)
    note(f"text={text_of(parts)!r}\nids={ids}")
    expected = non_streaming(r1, DEEPSEEK, ids, finish, prompt, request, "props-r1")
    note(f"non-streaming message={expected['message']}")
    chunking = data.draw(chunkings(len(ids)), label="chunking")
    chunks = streaming(r1, DEEPSEEK, ids, finish, prompt, request, "props-r1", chunking)
    check_equal(fold(chunks, request), expected, ids, request, finish)
    if clean:  # §7.6: the prompt is ignored; split at the first </think>
        message = expected["message"]
        hidden = request.get("include_reasoning") is False
        assert message["reasoning"] == (None if hidden else (reasoning or None))
        assert message["content"] == content
        assert expected["finish_reason"] == finish
