"""The parser rules of docs/vllm-compat/api.md §7, one request each, with the expected values
written from the spec text (and the tokenizer), not from our output.

- §7.1: every observed row of the assembly table (qwen3 + hermes, each output followed by
  the EOS ``151645``);
- §7.2: ``reasoning_effort`` and ``chat_template_kwargs.enable_thinking``;
- §7.3: qwen3 marker rules and the prompt scan that decides where output starts;
- §7.4: the hermes rules we share with vLLM (and, marked, where the README compatibility
  table says we differ: arguments are the model's own JSON text, compared here
  as parsed JSON; an unreadable call comes back as content instead of vLLM's
  all-or-nothing);
- §7.6: deepseek_r1 non-streaming rules;
- the stream state stays bounded (long reasoning, a long argument).

Everything goes through the HTTP app (``client_for`` of conftest).
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

from derender.core.parsers.formats import hermes
from derender.core.parsers.primitives import MAX_LEADING_SPACE
from derender_testing.models import tokenizer
from derender_testing.recorded import state_token

CHAT = "/v1/chat/completions/derender"
QWEN, DEEPSEEK = "qwen3", "deepseek-v4"

# Qwen3 single-token markers
THINK, END_THINK, TOOL, END_TOOL = 151667, 151668, 151657, 151658
IM_START, IM_END = 151644, 151645
EOS = IM_END
ASSISTANT, NEWLINE = 77091, 198
# DeepSeek-V3
DS_THINK, DS_END_THINK, DS_EOS = 128821, 128822, 1

MESSAGES = [{"role": "user", "content": "What's the weather in Paris?"}]
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
NOTE = {"type": "function", "function": {
    "name": "create_note", "parameters": {"type": "object", "properties": {
        "title": {"type": "string"}, "body": {"type": "string"}}}}}
TOOLS = [WEATHER, NOTE]
NAMED = {"type": "function", "function": {"name": "get_weather"}}
TOOL_ID = re.compile(r"chatcmpl-tool-[0-9a-f]{16}")


def enc(text: str, name: str = QWEN) -> list[int]:
    return list(tokenizer(name).encode(text, add_special_tokens=False).ids)


def ids_of(*parts: str | int, name: str = QWEN) -> list[int]:
    """Text pieces encoded with the model's tokenizer, marker ids spliced in as given."""
    out: list[int] = []
    for part in parts:
        out.extend([part] if isinstance(part, int) else enc(part, name))
    return out


def text_of(ids: list[int], name: str = QWEN) -> str:
    return str(tokenizer(name).decode(ids, skip_special_tokens=False))


# Prompts as the Qwen3 chat template renders them.
USER_TURN = [IM_START, *enc("user\nWhat's the weather in Paris?"), IM_END, *enc("\n")]
OPEN_PROMPT = [*USER_TURN, IM_START, ASSISTANT, NEWLINE]  # …<|im_start|>assistant\n
CLOSED_PROMPT = [*OPEN_PROMPT, THINK, *enc("\n\n"), END_THINK, *enc("\n\n")]  # thinking off

# §7.1's R and TC
R = [THINK, *enc("x"), END_THINK]
TC_ARGS = {"city": "Paris"}
TC = [TOOL, *enc('\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'), END_TOOL]


def post(client: Any, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(CHAT, content=json.dumps(body),
                           headers={"content-type": "application/json"})
    data: dict[str, Any] = response.json()
    assert response.status_code == 200, data
    return data


def chat(client: Any, ids: list[int], model: str = QWEN, finish: str | None = "stop",
         prompt: list[int] | None = OPEN_PROMPT, top_prompt: list[int] | None = None,
         engine_logprobs: bool = False, **request: Any) -> dict[str, Any]:
    """Non-streaming derender of ``ids``; ``prompt`` goes where the parser reads it
    (``generate_response.prompt_token_ids``), ``top_prompt`` to the top-level field."""
    choice: dict[str, Any] = {"index": 0, "token_ids": ids, "finish_reason": finish}
    if engine_logprobs:
        choice["logprobs"] = {"content": [
            {"token_id": t, "logprob": -0.5, "rank": 1,
             "top_logprobs": [{"token_id": t, "logprob": -0.5, "rank": 1}]} for t in ids]}
    response: dict[str, Any] = {"request_id": "rules-1", "choices": [choice]}
    if prompt is not None:
        response["prompt_token_ids"] = prompt
    body: dict[str, Any] = {"model": model, "generate_response": response,
                            "chat_request": {"messages": MESSAGES, **request}}
    if top_prompt is not None:
        body["prompt_token_ids"] = top_prompt
    result: dict[str, Any] = post(client, body)["choices"][0]
    return result


def fields(choice: dict[str, Any]) -> tuple[Any, Any, int, str]:
    """(content, reasoning, number of tool calls, finish_reason)."""
    message = choice["message"]
    return (message["content"], message["reasoning"], len(message.get("tool_calls") or []),
            choice["finish_reason"])


def calls(choice: dict[str, Any]) -> list[tuple[str, Any]]:
    """(name, arguments as parsed JSON) of each call; ids are checked for their shape."""
    out = []
    for call in choice["message"].get("tool_calls") or []:
        assert TOOL_ID.fullmatch(call["id"]), call["id"]
        assert call["type"] == "function"
        out.append((call["function"]["name"], json.loads(call["function"]["arguments"])))
    return out


# --------------------------------------------------------------------------- §7.1 table


def test_table_reasoning_then_content(qwen: Any) -> None:
    # `<think>\nR\n</think>\n\nContent` → content "\n\nContent", reasoning "\nR\n"
    choice = chat(qwen, ids_of(THINK, "\nR\n", END_THINK, "\n\nContent", EOS))
    assert fields(choice) == ("\n\nContent", "\nR\n", 0, "stop")


def test_table_just_text_is_reasoning_by_default(qwen: Any) -> None:
    assert fields(chat(qwen, ids_of("Just text", EOS))) == (None, "Just text", 0, "stop")


@pytest.mark.parametrize("request_fields", [
    {"chat_template_kwargs": {"enable_thinking": False}},
    {"reasoning_effort": "none"},
], ids=["enable_thinking-false", "reasoning_effort-none"])
def test_table_just_text_thinking_off(qwen: Any, request_fields: dict[str, Any]) -> None:
    choice = chat(qwen, ids_of("Just text", EOS), **request_fields)
    assert fields(choice) == ("Just text", None, 0, "stop")


def test_table_text_then_call_is_reasoning(qwen: Any) -> None:
    # `Let me check.\n`+TC, tools → reasoning "Let me check.\n" (<tool_call> ends reasoning)
    choice = chat(qwen, [*enc("Let me check.\n"), *TC, EOS], tools=TOOLS)
    assert fields(choice) == (None, "Let me check.\n", 1, "tool_calls")
    assert calls(choice) == [("get_weather", TC_ARGS)]


def test_table_text_then_call_thinking_off(qwen: Any) -> None:
    choice = chat(qwen, [*enc("Let me check.\n"), *TC, EOS], tools=TOOLS,
                  chat_template_kwargs={"enable_thinking": False})
    assert fields(choice) == ("Let me check.\n", None, 1, "tool_calls")
    assert calls(choice) == [("get_weather", TC_ARGS)]


def test_table_whitespace_then_call_thinking_off(qwen: Any) -> None:
    choice = chat(qwen, [*enc("\n\n"), *TC, EOS], tools=TOOLS,
                  chat_template_kwargs={"enable_thinking": False})
    assert fields(choice) == (None, None, 1, "tool_calls")
    assert calls(choice) == [("get_weather", TC_ARGS)]


def test_table_tool_choice_none_keeps_raw_markup(qwen: Any) -> None:
    choice = chat(qwen, [*R, *TC, EOS], tools=TOOLS, tool_choice="none")
    assert fields(choice) == (text_of(TC), "x", 0, "stop")
    assert choice["message"]["content"].startswith("<tool_call>\n{")


def test_table_required(qwen: Any) -> None:
    choice = chat(qwen, [*R, *TC, EOS], tools=TOOLS, tool_choice="required")
    assert fields(choice) == ("", "x", 1, "tool_calls")
    assert calls(choice) == [("get_weather", TC_ARGS)]


def test_table_required_without_call(qwen: Any) -> None:
    choice = chat(qwen, [*R, *enc("hello"), EOS], tools=TOOLS, tool_choice="required")
    assert fields(choice) == ("hello", "x", 0, "stop")


def test_table_named_finish_stays_stop(qwen: Any) -> None:
    choice = chat(qwen, [*R, *TC, EOS], tools=TOOLS, tool_choice=NAMED)
    assert fields(choice) == ("", "x", 1, "stop")
    assert calls(choice) == [("get_weather", TC_ARGS)]


def test_table_parallel_false_keeps_first(qwen: Any) -> None:
    second = [TOOL, *enc('\n{"name": "create_note", "arguments": {"title": "t"}}\n'), END_TOOL]
    choice = chat(qwen, [*R, *TC, *enc("\n"), *second, EOS], tools=TOOLS,
                  parallel_tool_calls=False)
    assert fields(choice) == (None, "x", 1, "tool_calls")
    assert calls(choice) == [("get_weather", TC_ARGS)]
    both = chat(qwen, [*R, *TC, *enc("\n"), *second, EOS], tools=TOOLS)
    assert calls(both) == [("get_weather", TC_ARGS), ("create_note", {"title": "t"})]
    assert len({c["id"] for c in both["message"]["tool_calls"]}) == 2


def test_table_length_without_eos(qwen: Any) -> None:
    choice = chat(qwen, [*R, *TC], finish="length", tools=TOOLS)
    assert fields(choice) == (None, "x", 1, "length")
    assert calls(choice) == [("get_weather", TC_ARGS)]


def test_table_no_tools_in_request(qwen: Any) -> None:
    choice = chat(qwen, [*R, *TC, EOS])
    assert fields(choice) == (text_of(TC), "x", 0, "stop")


def test_table_tool_choice_null_drops_calls(qwen: Any) -> None:
    choice = chat(qwen, [*R, *enc("pre"), *TC, EOS], tools=TOOLS, tool_choice=None)
    assert fields(choice) == ("pre", "x", 0, "stop")
    assert "tool_calls" not in choice["message"] or not choice["message"]["tool_calls"]


def test_table_include_reasoning_false(qwen: Any) -> None:
    choice = chat(qwen, [*R, *enc("hello"), EOS], engine_logprobs=True, logprobs=True,
                  include_reasoning=False, return_token_ids=True)
    assert fields(choice) == ("hello", None, 0, "stop")
    assert choice["logprobs"] is None
    assert choice["token_ids"] is None


# --------------------------------------------------------------------------- §7.1 step 4


@pytest.mark.parametrize("choice_field", ["required", NAMED], ids=["required", "named"])
def test_forced_whitespace_only_content_without_calls_is_empty(qwen: Any,
                                                               choice_field: Any) -> None:
    # §7.1 step 4: no calls found, "required"/named: whitespace-only content → null; step 5:
    # forced → content = content or "" → "".
    choice = chat(qwen, [*R, *enc("\n\n"), EOS], tools=TOOLS, tool_choice=choice_field)
    assert fields(choice) == ("", "x", 0, "stop")


def test_auto_whitespace_only_content_without_calls_is_unchanged(qwen: Any) -> None:
    # "auto" and no <tool_call>: no calls, content unchanged.
    choice = chat(qwen, [*R, *enc("\n\n"), EOS], tools=TOOLS)
    assert fields(choice) == ("\n\n", "x", 0, "stop")


def test_content_before_call_is_kept_verbatim(qwen: Any) -> None:
    # content = text before the first <tool_call> (not stripped)
    choice = chat(qwen, [*R, *enc("Checking Zürich 🌦 now.\n\n"), *TC, EOS], tools=TOOLS)
    assert fields(choice) == ("Checking Zürich 🌦 now.\n\n", "x", 1, "tool_calls")


# --------------------------------------------------------------------------- §7.2


@pytest.mark.parametrize(("request_fields", "thinking"), [
    ({}, True),
    ({"reasoning_effort": "none"}, False),
    ({"reasoning_effort": "low"}, True),
    ({"reasoning_effort": "high"}, True),
    ({"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "none"}, True),
    ({"chat_template_kwargs": {"enable_thinking": False}, "reasoning_effort": "high"}, False),
    ({"chat_template_kwargs": {"enable_thinking": False}}, False),
    ({"chat_template_kwargs": {"enable_thinking": True}}, True),
    ({"chat_template_kwargs": {"other": 1}, "reasoning_effort": "none"}, False),
], ids=["default", "effort-none", "effort-low", "effort-high", "kwargs-true-wins",
        "kwargs-false-wins", "kwargs-false", "kwargs-true", "other-kwargs-effort-none"])
def test_template_kwargs_switch_thinking(qwen: Any, request_fields: dict[str, Any],
                                         thinking: bool) -> None:
    choice = chat(qwen, ids_of("Just text", EOS), **request_fields)
    expected = (None, "Just text") if thinking else ("Just text", None)
    assert fields(choice)[:2] == expected


# --------------------------------------------------------------------------- §7.3


def test_think_inside_reasoning_is_absorbed(qwen: Any) -> None:
    choice = chat(qwen, ids_of("a", THINK, "b", END_THINK, "c", EOS))
    assert fields(choice) == ("c", "ab", 0, "stop")


def test_second_end_think_in_content_is_dropped(qwen: Any) -> None:
    choice = chat(qwen, ids_of(THINK, "a", END_THINK, "b", END_THINK, "c", EOS))
    assert fields(choice) == ("bc", "a", 0, "stop")


def test_think_in_content_is_kept_as_text(qwen: Any) -> None:
    choice = chat(qwen, ids_of("a", END_THINK, "b", THINK, "c", EOS))
    assert fields(choice) == ("b<think>c", "a", 0, "stop")


def test_chatml_turn_markers_are_removed(qwen: Any) -> None:
    ids = ids_of("r1", IM_START, "r2", IM_END, "r3", END_THINK, "c1", IM_END, "c2", IM_START,
                 "c3", EOS)
    assert fields(chat(qwen, ids)) == ("c1c2c3", "r1r2r3", 0, "stop")


def test_chatml_kept_with_thinking_off(qwen: Any) -> None:
    # §9 item 3: with thinking off a mid-text <|im_end|> stays in content (the parser is off)
    choice = chat(qwen, ids_of("a", IM_END, "b", EOS),
                  chat_template_kwargs={"enable_thinking": False})
    assert fields(choice) == ("a<|im_end|>b", None, 0, "stop")


def test_thinking_off_leaves_markers_untouched(qwen: Any) -> None:
    choice = chat(qwen, ids_of(THINK, "a", END_THINK, "b", EOS), reasoning_effort="none")
    assert fields(choice) == ("<think>a</think>b", None, 0, "stop")


def test_tool_call_ends_reasoning_and_passes_to_tool_phase(qwen: Any) -> None:
    ids = [*enc("thinking 🤔"), *TC, EOS]
    # tool_choice "none": the <tool_call> text is content (handed on, passed through)
    assert fields(chat(qwen, ids, tools=TOOLS, tool_choice="none")) == (
        text_of(TC), "thinking 🤔", 0, "stop")
    # no tools: the same
    assert fields(chat(qwen, ids)) == (text_of(TC), "thinking 🤔", 0, "stop")


def test_whitespace_is_verbatim(qwen: Any) -> None:
    choice = chat(qwen, ids_of("  \n r \t", END_THINK, "\n c  \n\n", EOS))
    assert fields(choice) == ("\n c  \n\n", "  \n r \t", 0, "stop")


def test_unterminated_reasoning_is_all_reasoning(qwen: Any) -> None:
    choice = chat(qwen, ids_of(THINK, "still thinking… 思考中", EOS))
    assert fields(choice) == (None, "still thinking… 思考中", 0, "stop")


@pytest.mark.parametrize(("prompt", "opened"), [
    (OPEN_PROMPT, True),                                      # <|im_start|> met first
    (CLOSED_PROMPT, False),                                   # </think> met first
    ([*OPEN_PROMPT, THINK, *enc("\n")], True),                # <think> met first (pre-opened)
    ([*OPEN_PROMPT, TOOL, *enc("\n")], False),                # <tool_call> met first
    ([*CLOSED_PROMPT[:-2], IM_END, *enc("\n"), *OPEN_PROMPT], True),  # turn marker after
    ([*USER_TURN], True),                                     # <|im_end|> met first
    (enc("plain text prompt"), True),                         # start of prompt
    ([], True),
    (None, True),
], ids=["open", "closed", "pre-opened", "tool_call", "closed-earlier-turn", "im_end",
        "no-markers", "empty", "absent"])
def test_prompt_scan_decides_start(qwen: Any, prompt: list[int] | None, opened: bool) -> None:
    choice = chat(qwen, ids_of("Just text", EOS), prompt=prompt)
    expected = (None, "Just text") if opened else ("Just text", None)
    assert fields(choice)[:2] == expected


def test_non_streaming_reads_only_generate_response_prompt(qwen: Any) -> None:
    # observed: a closed prompt as the top-level field leaves `Just text` as reasoning;
    # inside generate_response it becomes content
    top = chat(qwen, ids_of("Just text", EOS), prompt=None, top_prompt=CLOSED_PROMPT)
    assert fields(top)[:2] == (None, "Just text")
    inner = chat(qwen, ids_of("Just text", EOS), prompt=CLOSED_PROMPT, top_prompt=OPEN_PROMPT)
    assert fields(inner)[:2] == ("Just text", None)


def stream_fold(client: Any, ids: list[int], prompt: list[int], per_chunk: int = 1,
                finish: str = "stop", model: str = QWEN, **request: Any
                ) -> tuple[dict[str, Any], list[str]]:
    """Stream ``ids`` a few per call; the folded delta and every returned state."""
    state = None
    folded: dict[str, Any] = {"content": "", "reasoning": "", "calls": {}, "finish": None,
                              "argument_chunks": 0}
    states: list[str] = []
    spans = [ids[i:i + per_chunk] for i in range(0, len(ids), per_chunk)]
    for k, span in enumerate(spans):
        last = k == len(spans) - 1
        body: dict[str, Any] = {
            "stream": True, "model": model, "prompt_token_ids": prompt,
            "generate_chunk": {"request_id": "rules-s", "choices": [
                {"index": 0, "token_ids": span, "finish_reason": finish if last else None}]},
            "chat_request": {"messages": MESSAGES, **request}}
        if state is not None:
            body["stream_state"] = state
        data = post(client, body)
        state = data["stream_state"]
        states.append(state)
        for choice in data["chunk"]["choices"]:
            delta = choice["delta"]
            folded["content"] += delta["content"] or ""
            folded["reasoning"] += delta["reasoning"] or ""
            carried = False
            for call in delta.get("tool_calls") or []:
                entry = folded["calls"].setdefault(call["index"], ["", ""])
                entry[0] += call["function"]["name"] or ""
                entry[1] += call["function"]["arguments"] or ""
                carried = carried or bool(call["function"]["arguments"])
            folded["argument_chunks"] += carried
            if choice["finish_reason"] is not None:
                folded["finish"] = choice["finish_reason"]
    return folded, states


def test_streaming_reads_the_top_level_prompt(qwen: Any) -> None:
    closed, _ = stream_fold(qwen, ids_of("Just text", EOS), CLOSED_PROMPT)
    assert (closed["content"], closed["reasoning"]) == ("Just text", "")
    opened, _ = stream_fold(qwen, ids_of("Just text", EOS), OPEN_PROMPT)
    assert (opened["content"], opened["reasoning"]) == ("", "Just text")


# --------------------------------------------------------------------------- §7.4


def test_arguments_are_the_models_json_text(qwen: Any) -> None:
    # We differ from vLLM on purpose (README compatibility table): vLLM re-serialises
    # non-streaming arguments (`{"city": "Zürich"}`); we return the model's own text, equal
    # to vLLM's as parsed JSON.
    raw = '{"city":"Z\\u00fcrich","opts":{"unit" :"°C","days":[1, 2]}}'
    ids = [*R, TOOL, *enc('\n{"name": "get_weather", "arguments": ' + raw + '}\n'), END_TOOL,
           EOS]
    choice = chat(qwen, ids, tools=TOOLS)
    assert calls(choice) == [("get_weather", json.loads(raw))]
    assert choice["message"]["tool_calls"][0]["function"]["arguments"] == raw


def test_complex_arguments(qwen: Any) -> None:
    args = {"title": 'He said "hi" </tool_call> <tool_call>', "body": "line1\nline2\ttab\\",
            "tags": ["a", "ß", "🙂"], "meta": {"priority": 2,
                                              "nested": {"ok": True, "ratio": -0.25,
                                                         "none": None}}}
    head = json.dumps({"name": "create_note", "arguments": args})
    choice = chat(qwen, [*R, TOOL, *enc("\n" + head + "\n"), END_TOOL, EOS], tools=TOOLS)
    assert fields(choice) == (None, "x", 1, "tool_calls")
    assert calls(choice) == [("create_note", args)]


def test_text_between_and_after_calls_is_dropped(qwen: Any) -> None:
    second = [TOOL, *enc('\n{"name": "create_note", "arguments": {"title": "t"}}\n'), END_TOOL]
    choice = chat(qwen, [*R, *enc("pre"), *TC, *enc("between"), *second, *enc("after"), EOS],
                  tools=TOOLS)
    assert fields(choice) == ("pre", "x", 2, "tool_calls")


def test_unterminated_last_call_runs_to_the_end(qwen: Any) -> None:
    ids = [*R, TOOL, *enc('\n{"name": "get_weather", "arguments": {"city": "Rome"}}'), EOS]
    choice = chat(qwen, ids, tools=TOOLS)
    assert fields(choice) == (None, "x", 1, "tool_calls")
    assert calls(choice) == [("get_weather", {"city": "Rome"})]


def test_malformed_call_comes_back_as_content(qwen: Any) -> None:
    # vLLM: any failure → no calls, whole text as content. With one unreadable call both agree.
    bad = [TOOL, *enc("\nnot json\n"), END_TOOL]
    choice = chat(qwen, [*R, *bad, EOS], tools=TOOLS)
    assert fields(choice) == ("<tool_call>\nnot json\n</tool_call>", "x", 0, "stop")


def test_malformed_call_beside_a_good_one(qwen: Any) -> None:
    # We differ on purpose (README: "an unreadable <tool_call>: that call's text comes back as
    # content; other calls are kept"); vLLM would drop both calls and return all the text.
    bad = [TOOL, *enc("\nnot json\n"), END_TOOL]
    choice = chat(qwen, [*R, *TC, *enc("\n"), *bad, EOS], tools=TOOLS)
    content, reasoning, n, finish = fields(choice)
    assert (reasoning, n, finish) == ("x", 1, "tool_calls")
    assert "<tool_call>\nnot json\n</tool_call>" in content
    assert calls(choice) == [("get_weather", TC_ARGS)]


def test_missing_arguments_is_not_a_call(qwen: Any) -> None:
    text = '\n{"name": "get_weather"}\n'
    choice = chat(qwen, [*R, TOOL, *enc(text), END_TOOL, EOS], tools=TOOLS)
    assert fields(choice) == ("<tool_call>" + text + "</tool_call>", "x", 0, "stop")


def test_call_with_arguments_before_name(qwen: Any) -> None:
    # §7.4: "each region is JSON-parsed": a region is a call whatever the key order.
    text = '\n{"arguments": {"city": "Paris"}, "name": "get_weather"}\n'
    choice = chat(qwen, [*R, TOOL, *enc(text), END_TOOL, EOS], tools=TOOLS)
    assert fields(choice) == (None, "x", 1, "tool_calls")
    assert calls(choice) == [("get_weather", TC_ARGS)]


def test_long_unreadable_head_then_a_call_streams_as_without_streaming(qwen: Any) -> None:
    # README: for every split into chunks the folded stream equals the non-streaming
    # message. A never-closed unreadable <tool_call> followed by more than 512 characters
    # (MAX_HEAD) and then a real call must be read the same way in both modes.
    prose = "\nI will now call the weather tool for you." * 16
    ids = [*R, TOOL, *enc(prose), *TC, EOS]
    expected = chat(qwen, ids, tools=TOOLS)
    assert "<tool_call>" + prose in expected["message"]["content"]  # never loses text
    folded, _ = stream_fold(qwen, ids, OPEN_PROMPT, per_chunk=1, tools=TOOLS)
    assert "<tool_call>" + prose in folded["content"]
    message = expected["message"]
    assert folded["content"] == (message["content"] or "")
    assert list(map(tuple, folded["calls"].values())) == [
        (c["function"]["name"], c["function"]["arguments"])
        for c in message.get("tool_calls") or []]
    assert folded["finish"] == expected["finish_reason"]


# --------------------------------------------------------------------------- §7.6 deepseek_r1


def ds(*parts: str | int) -> list[int]:
    return ids_of(*parts, name=DEEPSEEK)


DS_CLOSED_PROMPT = ds("<｜User｜>hi<｜Assistant｜>", DS_THINK, "\n\n", DS_END_THINK)


@pytest.mark.parametrize(("ids", "content", "reasoning"), [
    (ds(DS_THINK, "a", DS_END_THINK, "b", DS_EOS), "b", "a"),
    (ds("a", DS_END_THINK, "b", DS_EOS), "b", "a"),              # start marker optional
    (ds(DS_THINK, "a 推理 🧠", DS_EOS), None, "a 推理 🧠"),        # no </think>: all reasoning
    (ds("plain", DS_EOS), None, "plain"),
    (ds(DS_THINK, "a", DS_END_THINK, DS_EOS), None, "a"),         # empty content → null
    (ds(DS_THINK, "a", DS_END_THINK, "b", DS_END_THINK, "c", DS_EOS), "b</think>c", "a"),
    (ds(DS_THINK, "\na\n", DS_END_THINK, "\n\nb", DS_EOS), "\n\nb", "\na\n"),
], ids=["think", "no-start", "unterminated", "plain", "empty-content", "first-end",
        "whitespace"])
def test_deepseek_r1(r1: Any, ids: list[int], content: str | None,
                     reasoning: str | None) -> None:
    choice = chat(r1, ids, model=DEEPSEEK, prompt=None)
    assert fields(choice) == (content, reasoning, 0, "stop")


def test_deepseek_r1_ignores_the_prompt(r1: Any) -> None:
    # non-streaming is text based, prompt ignored: a prompt closing </think> changes nothing
    ids = ds(DS_THINK, "a", DS_END_THINK, "b", DS_EOS)
    choice = chat(r1, ids, model=DEEPSEEK, prompt=DS_CLOSED_PROMPT, top_prompt=DS_CLOSED_PROMPT)
    assert fields(choice) == ("b", "a", 0, "stop")
    plain = chat(r1, ds("plain", DS_EOS), model=DEEPSEEK, prompt=DS_CLOSED_PROMPT)
    assert fields(plain) == (None, "plain", 0, "stop")


def test_deepseek_r1_text_before_think(r1: Any) -> None:
    # We differ on purpose (README compatibility table): vLLM drops the text before the first
    # <think> (reasoning "a"); we keep it as reasoning.
    choice = chat(r1, ds("pre ", DS_THINK, "a", DS_END_THINK, "b", DS_EOS), model=DEEPSEEK,
                  prompt=None)
    assert fields(choice) == ("b", "pre a", 0, "stop")


def test_deepseek_r1_length_keeps_last_token(r1: Any) -> None:
    choice = chat(r1, ds(DS_THINK, "a", DS_END_THINK, "b"), model=DEEPSEEK, finish="length",
                  prompt=None)
    assert fields(choice) == ("b", "a", 0, "length")


# --------------------------------------------------------------------------- bounded state

STATE_LIMIT = 600


def _state_bytes(state: Any) -> int:
    token = state_token(state)
    return len(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))


def test_long_reasoning_stream_keeps_state_small(qwen: Any) -> None:
    sentence = "Thinking about 東京 and Zürich 🌦, step by step; "
    text = ""
    while len(enc(text)) < 2000:
        text += sentence
    ids = enc(text)[:2000]
    while text_of(ids).endswith("\ufffd"):  # end on a whole character
        ids.append(enc(text)[len(ids)])
    reasoning_text = text_of(ids)
    assert "\ufffd" not in reasoning_text
    folded, states = stream_fold(qwen, [THINK, *ids], OPEN_PROMPT, per_chunk=1,
                                 finish="length")
    assert len(states) == len(ids) + 1 >= 2001
    assert max(len(s) for s in states) <= STATE_LIMIT, max(len(s) for s in states)
    assert folded["reasoning"] == reasoning_text
    assert folded["content"] == ""
    assert folded["finish"] == "length"
    # late states are no bigger than early ones (nothing accumulates)
    assert max(map(len, states[-100:])) <= max(map(len, states[:100])) + 16


def test_long_argument_streams_in_fragments_with_small_state(qwen: Any) -> None:
    body = ("Dear team, the forecast for Zürich is ☀️ then 🌧; "
            'quote: "keep an umbrella" \\ path C:\\tmp </tool_call> ') * 40
    args = {"title": "Weekly note", "body": body[:3000]}
    raw = json.dumps(args, ensure_ascii=False)
    assert len(raw) > 3000
    ids = [*R, TOOL, *enc('\n{"name": "create_note", "arguments": ' + raw + "}\n"), END_TOOL,
           EOS]
    expected = chat(qwen, ids, tools=TOOLS)
    assert calls(expected) == [("create_note", args)]
    folded, states = stream_fold(qwen, ids, OPEN_PROMPT, per_chunk=3, tools=TOOLS)
    assert max(len(s) for s in states) <= STATE_LIMIT, max(len(s) for s in states)
    assert folded["argument_chunks"] > 1
    [(name, arguments)] = folded["calls"].values()
    assert name == "create_note"
    assert arguments == expected["message"]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments) == args
    assert folded["finish"] == "tool_calls"
    assert (folded["content"], folded["reasoning"]) == ("", "x")


def test_whitespace_before_a_call_does_not_grow_the_state(qwen: Any) -> None:
    # The state must not grow with the number of tokens generated. Content that
    # is only whitespace so far (tools active) must not be buffered in the state without
    # bound (about 2.7 characters per chunk: past ~1,500 chunks of " \n" the token exceeds
    # the 4,096-character cap and the stream fails with a 400).
    ids = enc(" \n") * 400 + [*TC, EOS]
    folded, states = stream_fold(qwen, ids, CLOSED_PROMPT, per_chunk=1, tools=TOOLS)
    assert max(len(s) for s in states) <= STATE_LIMIT, max(len(s) for s in states)
    assert folded["finish"] == "tool_calls"


@pytest.mark.parametrize("name", ["a\\qb", "a\nb", "a\\u00"], ids=["bad-escape", "raw-newline",
                                                                 "short-unicode"])
def test_a_call_name_that_is_not_a_json_string_is_unreadable(qwen: Any, name: str) -> None:
    # A name JSON cannot read makes the call unreadable (its text comes back as content), as
    # any other unreadable call; it was a 500 (the name was decoded after a looser match).
    text = '{"name": "' + name + '", "arguments": {}}'
    ids = [*R, TOOL, *enc(text), END_TOOL, EOS]
    choice = chat(qwen, ids, tools=TOOLS)
    assert fields(choice) == ("<tool_call>" + text + "</tool_call>", "x", 0, "stop")
    folded, _ = stream_fold(qwen, ids, OPEN_PROMPT, per_chunk=2, tools=TOOLS)
    assert (folded["content"], folded["calls"]) == ("<tool_call>" + text + "</tool_call>", {})


@pytest.mark.parametrize("spaces", [0, 1, 255, 256, 257, 300, 600])
@pytest.mark.parametrize("forced", [False, True])
def test_leading_whitespace_is_split_invariant(spaces: int, forced: bool) -> None:
    """Whitespace before the first call is dropped up to MAX_LEADING_SPACE characters and is
    content past it, however the text is cut into chunks (the stream state stays bounded, so
    a stream cannot hold more; the whole text must then agree with it)."""
    call = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
    text = " " * spaces + ("" if forced else call)  # forced: tool_choice "required"
    whole, calls, _ = hermes.feed(hermes.HermesState(), text, True, required=forced)
    assert whole == ("" if spaces <= MAX_LEADING_SPACE else " " * spaces)
    assert [c.name for c in calls if c.name] == ([] if forced else ["f"])
    assert "".join(c.arguments for c in calls) == ("" if forced else '{"a": 1}')
    for step in range(1, 41):
        state, streamed = hermes.HermesState(), []
        for start in range(0, len(text), step):
            out, _, state = hermes.feed(state, text[start:start + step], False, required=forced)
            streamed.append(out)
        out, _, state = hermes.feed(state, "", True, required=forced)
        assert "".join(streamed) + out == whole, (spaces, step)
