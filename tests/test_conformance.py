"""Replays the vLLM 0.33.0 recordings (tests/fixtures/vllm-0.33) and compares every field.

Normalisation follows the corpus README: ``created`` is ignored, tool-call ids only for
presence, and for schema errors (type ``Bad Request``) the message's first line only — its
entries are pydantic's wording. Where design.md deliberately differs from vLLM the expected
answer is ours, listed in ``DEVIATIONS`` with the reason.
"""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from derender.core.state.token import NOT_A_TOKEN
from derender.settings import Settings
from derender_testing.openai_types import check_openai_body, check_openai_chunk
from derender_testing.recorded import (
    FIXTURES,
    NOT_MATCHED_YET,
    case_name,
    case_path,
    case_paths,
    load_case,
    numbered,
    pending_reason,
    summaries,
)

# case name -> (status, error type, message start) of the call where we deliberately differ
# (README, Compatibility with vLLM 0.33); calls before it in a stream must still match vLLM.
DEVIATIONS: dict[str, tuple[int, str, str]] = {
    # a bare NaN literal is not JSON: refused while reading the body (vLLM reads it, then
    # answers 400 "Out of range float values are not JSON compliant", as for "NaN" strings)
    "2928-i22-nonfinite-chat-logprob-literal_nan-qwen3":
        (400, "Bad Request", "1 validation error:"),
    # token id >= vocabulary size: 400 naming the id (vLLM decodes it as "")
    "125-error-out_of_vocab-chat-mistral-7b":
        (400, "BadRequestError", "token id 10000000 in choice 0 is out of range"),
    "127-error-out_of_vocab-logprobs-gpt2":
        (400, "BadRequestError", "token id 1000000000 in choice 0 of response pub-127-err "
                                 "logprobs is out of range"),
    "126-error-out_of_vocab-stream-deepseek-v3":
        (400, "BadRequestError", "token id 1000000 in choice 0 is out of range"),
    # negative ids are refused while streaming too, as they are without streaming
    "123-error-negative_token_ids-stream-qwen3":
        (400, "BadRequestError", "token id -"),
    # vLLM's JSON states (altered or not) are refused: the state is our signed token
    "106-error-stream_state_garbage-deepseek-v3": (400, "BadRequestError", NOT_A_TOKEN),
    "107-error-stream_state_bad_offsets-gpt2": (400, "BadRequestError", NOT_A_TOKEN),
    "108-error-stream_state_bad_lens-qwen3": (400, "BadRequestError", NOT_A_TOKEN),
    "109-error-stream_state_too_long-llama3.1": (400, "BadRequestError", NOT_A_TOKEN),
    "110-error-stream_state_fake_pieces-mistral-7b": (400, "BadRequestError", NOT_A_TOKEN),
    "111-error-stream_state_parser_garbage-qwen3-parsers": (400, "BadRequestError", NOT_A_TOKEN),
    # a string state: vLLM's model refuses the type; we read it as our (earlier) token form
    "2213-i21-plain-edge-semantic_stream_state_string":
        (400, "BadRequestError", "stream_state is not a valid token"),
}

# Cases where we answer 200 and vLLM refuses: stop strings while streaming (README, Compatibility).
SUPPORTED_BEYOND_VLLM = {"116-error-stream_stop_strings-deepseek-v3",
                         "2217-i21-plain-chat-stream-i21_stop_then_length-small",
                         "2219-i21-plain-chat-stream-i21_stop_at_end_length-small",
                         "2221-i21-plain-chat-stream-i21_stop_then_stop-small",
                         # glm2: vLLM's poolside_v1 stream fails (400) at its end on a set
                         # value (its message: all content; tests/test_parser_poolside.py)
                         "6309-poolside_v1-chat-stream-typed_fallbacks-small",
                         # vLLM's jamba stream fails (400) on a lone surrogate its partial JSON
                         # parser makes of an escaped pair split across chunks
                         "3862-jamba-chat-stream-typed_values-mixed",
                         # outputs vLLM's internlm message raises on (400, 500): we answer
                         # (tests/test_parser_json_wrapped.py checks what)
                         *(_n for _n in (
                             "3932-internlm-chat-cut_in_name", "3933-internlm-chat-cut_in_args",
                             "3934-internlm-chat-malformed", "3935-internlm-chat-two_calls",
                             "3936-internlm-chat-trailing_in_action",
                             "3937-internlm-chat-not_a_call"))}

# Their streams (vLLM refuses them at the first chunk) folded to vLLM's non-streaming answer
# for the same output: stop strings apply only to a "stop" finish (docs/recording/dropin.md).
STOP_STRING_TWINS = {
    "2217-i21-plain-chat-stream-i21_stop_then_length-small": 2216,
    "2219-i21-plain-chat-stream-i21_stop_at_end_length-small": 2218,
    "2221-i21-plain-chat-stream-i21_stop_then_stop-small": 2220,
}

# A body vLLM parses (and refuses naming max_model_len) is over our body limit: 413 (README
# compatibility table). Their requests are not stored (tens of MB): rebuilt here.
BODY_LIMIT = {"2214-i21-plain-edge-big_token_ids", "2215-i21-plain-edge-big_logprobs"}

CASES = case_paths()


_pending_reason = pending_reason
"""Cases whose feature is recorded ahead of its implementation (said when skipped)."""


# Parser streams where vLLM's stream disagrees with its own non-streaming output; we match
# the non-streaming one (README compatibility notes). name -> how vLLM's
# concatenated stream differs.
STREAM_QUIRKS = {
    # whitespace between </think> and <tool_call> is content "\n\n" only when streaming
    **dict.fromkeys(("082-parser-chat-stream-tool_single-small",
                     "083-parser-chat-stream-tool_parallel-one",
                     "086-parser-chat-stream-named_tagged-one",
                     "087-parser-chat-stream-parallel_false-mixed",
                     "089-parser-chat-stream-complex_args-small",
                     "090-parser-chat-stream-malformed-small"), "whitespace-before-call"),
    # an EOS in a chunk without finish leaks into streamed content
    "079-parser-chat-stream-reasoning_content-mixed": "eos-leak",
    "080-parser-chat-stream-preopen-one": "eos-leak",
    # after a prompt closing </think>, vLLM streams everything as content; non-streaming (095,
    # same output) splits the explicit <think>...</think>
    "097-r1-chat-stream-explicit_think-small": "r1-closed-prompt",
}

# Parser streams where vLLM's stream disagrees with its own non-streaming answer for the same
# output and request (the twin case named here); ours folds to the twin's message (with the
# twin's MESSAGE_DIFFERENCES applied). name -> twin, with how vLLM's stream differs.
STREAM_AS_MESSAGE = {
    # llama3_json streams read calls only when the output starts with "{" or <|python_tag|>
    "143-llama3_json-chat-stream-content_before-mixed": "130-llama3_json-chat-content_before",
    "145-llama3_json-chat-stream-json_list-small": "132-llama3_json-chat-json_list",
    # an object that is not a call streams nothing at all (its text is lost)
    "146-llama3_json-chat-stream-malformed_no_name-small":
        "133-llama3_json-chat-malformed_no_name",
    # a number split across chunks is mangled in the streamed arguments ("-1.00.0")
    "165-pythonic-chat-stream-literals-mixed": "152-pythonic-chat-literals",
    # an unreadable call streams nothing (its text is lost)
    "167-pythonic-chat-stream-not_literal-small": "154-pythonic-chat-not_literal",
    # a call cut off by the end of the output streams as a call; non-streaming it is content
    "168-pythonic-chat-stream-truncated-one": "156-pythonic-chat-truncated",
    # the EOS of a chunk without finish leaks into the streamed arguments ("…}<|eot_id|>")
    "170-pythonic-chat-stream-named_json-small": "161-pythonic-chat-named_json",
    # deepseek_v3/v31 streams: text before the calls loses its end (cut at the chunk holding
    # <｜tool▁calls▁begin｜>) and the arguments of that chunk's call
    "214-deepseek_v3-chat-stream-content_before-mixed": "202-deepseek_v3-chat-content_before",
    "230-deepseek_v31-chat-stream-content_before-mixed":
        "221-deepseek_v31-chat-content_before",
    # an unreadable deepseek_v3 call (no ```json fence) streams as a call with its name
    "218-deepseek_v3-chat-stream-no_fence-small": "206-deepseek_v3-chat-no_fence",
    # deepseek_v31 streams text after <｜tool▁calls▁end｜> as content; non-streaming drops it
    "231-deepseek_v31-chat-stream-content_after-small": "222-deepseek_v31-chat-content_after",
    # the EOS of a chunk without finish leaks into content ("<｜end▁of▁sentence｜>")
    "232-deepseek_v31-chat-stream-nested_args-small": "223-deepseek_v31-chat-nested_args",
    # whitespace between </think> and the calls is content "\n\n" only when streaming
    "235-deepseek_v3-chat-stream-r1_think-small": "234-deepseek_v3-chat-r1_think",
    # and deepseek_v31 loses argument text arriving in the chunk of a call's first token
    "237-deepseek_v31-chat-stream-r1_think-mixed": "236-deepseek_v31-chat-r1_think",
    # the same deepseek streams on DeepSeek-V3.1's own vocabulary (cases 367-404: 200-237
    # recorded again; the chunks differ, seeded by the case number), where they differ alike
    "383-deepseek_v3-v31vocab-chat-stream-nested_args-small":  # EOS leak, as 232
        "371-deepseek_v3-v31vocab-chat-nested_args",
    "385-deepseek_v3-v31vocab-chat-stream-no_fence-small": "373-deepseek_v3-v31vocab-chat-no_fence",
    "397-deepseek_v31-v31vocab-chat-stream-content_before-mixed":
        "388-deepseek_v31-v31vocab-chat-content_before",
    "398-deepseek_v31-v31vocab-chat-stream-content_after-small":
        "389-deepseek_v31-v31vocab-chat-content_after",
    "402-deepseek_v3-v31vocab-chat-stream-r1_think-small": "401-deepseek_v3-v31vocab-chat-r1_think",
    "404-deepseek_v31-v31vocab-chat-stream-r1_think-mixed":
        "403-deepseek_v31-v31vocab-chat-r1_think",
    # mistral streams lose a "\n" of the whitespace between the content and [TOOL_CALLS]
    "261-mistral-chat-stream-content_before-small": "243-mistral-chat-content_before",
    # text after a mistral call's JSON arguments streams into them; non-streaming drops it
    "263-mistral-chat-stream-trailing_text-small": "245-mistral-chat-trailing_text",
    # a mistral call's name and arguments stream unstripped (" get_weather ")
    "272-mistral-chat-stream-spaced-small": "257-mistral-chat-spaced",
    # vLLM parses the older mistral grammar under tool_choice "none" only when streaming (the
    # calls dropped); non-streaming the whole text is content
    "278-mistral-chat-stream-v3_tool_choice_none-mixed": "275-mistral-chat-v3_tool_choice_none",
    # qwen3_coder streams keep the whitespace between the content and the first call
    "303-qwen3_coder-chat-stream-content_before-small": "285-qwen3_coder-chat-content_before",
    "307-qwen3_coder-chat-stream-plain_text-small": "290-qwen3_coder-chat-plain_text",
    # qwen3_coder streams text after a call as content; non-streaming drops it
    "304-qwen3_coder-chat-stream-content_after-mixed": "286-qwen3_coder-chat-content_after",
    # a qwen3_coder parameter cut off by </function> or the end streams into the arguments,
    # which are then not JSON ('{"city": "Paris", "unit": "c'); non-streaming drops it
    "305-qwen3_coder-chat-stream-no_param_end-small": "288-qwen3_coder-chat-no_param_end",
    "306-qwen3_coder-chat-stream-truncated-one": "289-qwen3_coder-chat-truncated",
    # engine formats (DSML, GLM, MiniMax M2): a call cut off inside a value streams its partial
    # arguments ('{"city": "' for DSML, '{"city": "Par' for GLM and MiniMax M2), not JSON; the
    # message has '{}'
    "434-deepseek_v32-chat-stream-truncated-one": "433-deepseek_v32-chat-truncated",
    "496-deepseek_v4-chat-stream-truncated-one": "495-deepseek_v4-chat-truncated",
    "560-deepseek_v41-chat-stream-truncated-one": "559-deepseek_v41-chat-truncated",
    "644-glm45-chat-stream-truncated-one": "643-glm45-chat-truncated",
    "700-glm47-chat-stream-truncated-one": "699-glm47-chat-truncated",
    "756-minimax_m2-chat-stream-truncated-one": "755-minimax_m2-chat-truncated",
    # deepseek_v3 thinking via enable_thinking / reasoning_effort on DeepSeek-V3.1, whose
    # template then closes </think> in the prompt: the R1 stream is all content, </think> too
    "602-deepseek_v31-v3r-chat-stream-r_enable_thinking-small":
        "601-deepseek_v31-v3r-chat-r_enable_thinking",
    "604-deepseek_v31-v3r-chat-stream-r_effort_low-small": "603-deepseek_v31-v3r-chat-r_effort_low",
    # whitespace between </think> and the calls is content "\n\n" only when streaming
    "608-deepseek_v31-v3r-chat-stream-r_thinking_on_tool-one":
        "607-deepseek_v31-v3r-chat-r_thinking_on_tool",
    # GLM streams keep the content around the calls as written (whitespace before a call, text
    # after it); the message strips it and drops the text after the calls
    "626-glm45-chat-stream-content_before-mixed": "625-glm45-chat-content_before",
    "628-glm45-chat-stream-content_after-small": "627-glm45-chat-content_after",
    "682-glm47-chat-stream-content_before-mixed": "681-glm47-chat-content_before",
    "684-glm47-chat-stream-content_after-small": "683-glm47-chat-content_after",
    "1303-glm47-tools_alone-chat-stream-content_before-mixed":
        "1302-glm47-tools_alone-chat-content_before",
    # the same for ling3 (GLM-4.7's parser; issue 19), and its call cut off inside a value
    "4211-ling3-chat-stream-content_before-mixed": "4210-ling3-chat-content_before",
    "4213-ling3-chat-stream-content_after-small": "4212-ling3-chat-content_after",
    "4229-ling3-chat-stream-truncated-one": "4228-ling3-chat-truncated",
    "4257-ling3-chat-stream-wide_chars-small": "4256-ling3-chat-wide_chars",
    # hy_v3 streams (issue 19): whitespace alone before <tool_calls> streams as content (the
    # message: none), keys stream stripped (the message keeps them as written), a call cut off
    # streams its partial arguments (not JSON), a second <think> streams into the reasoning
    "4301-hy_v3-chat-stream-space_before-small": "4300-hy_v3-chat-space_before",
    "4305-hy_v3-chat-stream-spaced_name-one": "4304-hy_v3-chat-spaced_name",
    "4309-hy_v3-chat-stream-no_call_close-small": "4308-hy_v3-chat-no_call_close",
    "4315-hy_v3-chat-stream-truncated-one": "4314-hy_v3-chat-truncated",
    "4345-hy_v3-chat-stream-effort_tool-small": "4344-hy_v3-chat-effort_tool",
    "4347-hy_v3-chat-stream-effort_open_tag-small": "4346-hy_v3-chat-effort_open_tag",
    # plamo3 streams (issue 19, branch qwen2): arguments stream as written (the message types
    # them and strips them; empty: "{}"), names stream unstripped, text after the calls
    # streams, a call named without arguments is not streamed
    "6609-plamo3-chat-stream-typed_strings-small": "6608-plamo3-chat-typed_strings",
    "6613-plamo3-chat-stream-spaced_json-small": "6612-plamo3-chat-spaced_json",
    "6615-plamo3-chat-stream-no_args-one": "6614-plamo3-chat-no_args",
    "6621-plamo3-chat-stream-content_after-small": "6620-plamo3-chat-content_after",
    "6689-plamo3-chat-stream-piece_in_name-small": "6688-plamo3-chat-piece_in_name",
    "6695-plamo3-chat-stream-name_no_args-small": "6694-plamo3-chat-name_no_args",
    "6697-plamo3-chat-stream-args_then_text-small": "6696-plamo3-chat-args_then_text",
    # minicpmv streams (issue 19, branch qwen2): vLLM streams the reasoning as content
    # (<think> blocks included) and its markers, escapes recovered
    "6801-minicpmv-chat-stream-tool-small": "6800-minicpmv-chat-tool",
    "6803-minicpmv-chat-stream-answer-small": "6802-minicpmv-chat-answer",
    "6805-minicpmv-chat-stream-escapes-one": "6804-minicpmv-chat-escapes",
    "6807-minicpmv-chat-stream-escapes_code-small": "6806-minicpmv-chat-escapes_code",
    "6809-minicpmv-chat-stream-escape_cut-small": "6808-minicpmv-chat-escape_cut",
    "6811-minicpmv-chat-stream-escape_in_args-small": "6810-minicpmv-chat-escape_in_args",
    "6813-minicpmv-chat-stream-escape_before_tool-small": "6812-minicpmv-chat-escape_before_tool",
    "6815-minicpmv-chat-stream-markers-small": "6814-minicpmv-chat-markers",
    "6817-minicpmv-chat-stream-tool_in_reasoning-small": "6816-minicpmv-chat-tool_in_reasoning",
    "6819-minicpmv-chat-stream-open_tag-small": "6818-minicpmv-chat-open_tag",
    "6821-minicpmv-chat-stream-only_reasoning-small": "6820-minicpmv-chat-only_reasoning",
    "6825-minicpmv-chat-stream-off_think-small": "6824-minicpmv-chat-off_think",
    "6831-minicpmv-chat-stream-tool_choice_none-small": "6830-minicpmv-chat-tool_choice_none",
    "6833-minicpmv-chat-stream-required-small": "6832-minicpmv-chat-required",
    "6835-minicpmv-chat-stream-named-small": "6834-minicpmv-chat-named",
    "6837-minicpmv-chat-stream-keep_special-small": "6836-minicpmv-chat-keep_special",
    "6839-minicpmv-chat-stream-no_reasoning_out-small": "6838-minicpmv-chat-no_reasoning_out",
    "6845-minicpmv-alone-chat-stream-alone_off-small": "6844-minicpmv-alone-chat-alone_off",
    # kimi_k2 streams empty arguments as "" (the message: "{}")
    "1074-kimi_k2-chat-stream-empty_args-one": "1073-kimi_k2-chat-empty_args",
    # gemma4 streams keep the content around the calls as written (the "\n" before a call,
    # the text after it); the message strips it and drops the text after the calls
    "1170-gemma4-chat-stream-content_before-mixed": "1169-gemma4-chat-content_before",
    "1172-gemma4-chat-stream-content_after-small": "1171-gemma4-chat-content_after",
    "738-minimax_m2-chat-stream-content_before-mixed": "737-minimax_m2-chat-content_before",
    "740-minimax_m2-chat-stream-content_after-small": "739-minimax_m2-chat-content_after",
    # minimax_m2_append_think streams lose the </think> text and keep the whitespace before
    # the calls; the message keeps </think> unless a call follows it
    "776-minimax_m2-append-chat-stream-reasoning_content-small":
        "775-minimax_m2-append-chat-reasoning_content",
    "778-minimax_m2-append-chat-stream-single-small": "777-minimax_m2-append-chat-single",
    "780-minimax_m2-append-chat-stream-think_both-small": "779-minimax_m2-append-chat-think_both",
    # Harmony streams run two final messages together; non-streaming joins them with "\n"
    "358-harmony-chat-stream-two_finals-small": "334-harmony-chat-two_finals",
    # the bytes of a character cut off by the end never stream; non-streaming they are "\ufffd"
    "360-harmony-chat-stream-partial_utf8-one": "345-harmony-chat-partial_utf8",
    # hermes (edge cases 1500-…): streams lose an unreadable <tool_call> (or one cut off in its
    # head) and all that follows; non-streaming returns the whole output, whitespace before it too
    "1501-i15-hermes-chat-stream-i15_bad_head_space-small":
        "1500-i15-hermes-chat-i15_bad_head_space",
    "1503-i15-hermes-chat-stream-i15_cut_head_space-one": "1502-i15-hermes-chat-i15_cut_head_space",
    "1505-i15-hermes-chat-stream-i15_bad_then_call-small": "1504-i15-hermes-chat-i15_bad_then_call",
    "1545-i15-hermes-chat-stream-i15_named_no_call-small": "1544-i15-hermes-chat-i15_named_no_call",
    # mistral streams send argument values as written; non-streaming types them by the
    # tool's schema ("2" -> 2 for an integer)
    "1507-i15-mistral-chat-stream-i15_typed-small": "1506-i15-mistral-chat-i15_typed",
    # without tools vLLM still parses qwen3_coder and mistral calls (and drops them): as
    # with calls returned, qwen3_coder streams keep the whitespace before the call (as 303)
    # and mistral streams lose a whitespace character before [TOOL_CALLS] (as 261)
    "1525-i15-qwen3_coder-chat-stream-i15_no_tools-small": "1524-i15-qwen3_coder-chat-i15_no_tools",
    "1531-i15-mistral-chat-stream-i15_no_tools-small": "1530-i15-mistral-chat-i15_no_tools",
    "1543-i15-qwen3_coder-chat-stream-i15_private_use_call-one":  # as 303
        "1542-i15-qwen3_coder-chat-i15_private_use_call",
}

# Non-streaming parser answers where we deliberately differ from vLLM (README compatibility
# table): name -> (content, [(name, arguments)], finish_reason) of our message; arguments as
# parsed JSON, or the exact text where it is not JSON. The rest of the response is vLLM's.
MESSAGE_DIFFERENCES: dict[str, tuple[str | None, list[tuple[str, Any]], str]] = {
    # text before a llama3_json call stays content (vLLM drops all text around the calls)
    "130-llama3_json-chat-content_before": (
        "Let me check the weather for you.\n\n", [("get_weather", {"city": "Paris"})],
        "tool_calls"),
    # a call cut off by the end of the output is returned with the arguments read so far
    # (vLLM: no call, the whole text as content)
    "135-llama3_json-chat-truncated": (None, [("get_weather", '{"city": "Par')], "length"),
    # text after a pythonic list's "]" is dropped (vLLM: the whole text as content unless the
    # rest is Python)
    "155-pythonic-chat-trailing_text": (None, [("get_weather", {"city": "Paris"})], "tool_calls"),
    # tool_choice "required": the model's pythonic list is read as well as the JSON-schema list
    # (vLLM, strict, reads only the JSON list: no call, content "")
    "160-pythonic-chat-required_pythonic": (
        "", [("get_weather", {"city": "Paris", "unit": "c"})], "tool_calls"),
    # a deepseek call cut off by the end of the output is returned with the arguments read so
    # far, as vLLM streams it (vLLM non-streaming: no call)
    "205-deepseek_v3-chat-truncated": (None, [("get_weather", '{"city": "Par')], "length"),
    "224-deepseek_v31-chat-truncated": (None, [("get_weather", '{"city": "Par')], "length"),
    # content before mistral calls is kept as written, as vLLM streams it (vLLM non-streaming
    # strips it when calls follow, which a stream cannot know in time)
    "242-mistral-chat-brace": (" Sure.", [("get_weather", {"city": "Paris"})], "tool_calls"),
    "243-mistral-chat-content_before": (
        " Let me check the weather for you.\n\n", [("get_weather", {"city": "Paris"})],
        "tool_calls"),
    # a qwen3_coder parameter cut off by </function> or the end of the output keeps the value
    # read so far, as vLLM streams it (vLLM non-streaming drops the parameter)
    "288-qwen3_coder-chat-no_param_end": (
        None, [("get_weather", {"city": "Paris", "unit": "c"})], "tool_calls"),
    "289-qwen3_coder-chat-truncated": (
        None, [("set_config", {"count": 3, "label": "half a la"})], "length"),
    # GLM content before a returned call keeps the whitespace starting it (vLLM strips it: a
    # stream cannot know a call will follow); the whitespace ending it is dropped, as in vLLM
    "625-glm45-chat-content_before": (
        "\nLet me check the weather for you.", [("get_weather", {"city": "Paris", "unit": "c"})],
        "tool_calls"),
    # kimi_k2 arguments are the model's text as written, as vLLM streams them (vLLM's message
    # types string values by the schema: "3" -> 3)
    "1069-kimi_k2-chat-string_values": (None, [("set_config", {
        "count": "3", "ratio": "0.5", "enabled": "true", "tags": '["a"]', "level": "2",
        "extra": "7"})], "tool_calls"),
    # a stray gemma4 <channel|> after content is dropped, as vLLM streams it (vLLM's message
    # makes the text before it reasoning: its first feed is the whole output)
    "1213-gemma4-chat-stray_channel_end": ("It is sunny in Paris, 22 °C. more", [], "stop"),
    # the same for MiniMax M2 (the "\n\n" after </think> starts the content)
    "737-minimax_m2-chat-content_before": (
        "\n\nLet me check the weather for you.",
        [("get_weather", {"city": "Paris", "unit": "c"})], "tool_calls"),
    # content before mistral calls as written, as 242/243, also when the request has no
    # tools (vLLM parses the calls and drops them)
    "1530-i15-mistral-chat-i15_no_tools": (" Hello ", [], "stop"),
    # an unreadable hermes call comes back as content (with the whitespace before it) and the
    # readable one after it is kept (vLLM: no call, the whole output as content)
    "1504-i15-hermes-chat-i15_bad_then_call": (
        ' \n<tool_call>{"oops": 1}</tool_call>\n', [("get_weather", {"city": "Paris"})],
        "tool_calls"),
}
MESSAGE_REASONING = {"1213-gemma4-chat-stray_channel_end": None}
"""The reasoning of our message where MESSAGE_DIFFERENCES changes it too."""

def _case_name(number: int) -> str:
    """A recorded case's name from its number."""
    return case_name(numbered(number))


# The Qwen3-grammar family and aliases (docs/vllm-compat/qwen3_family.md, README compatibility):
# streams that fold to their twin's message (twin = the case before) ...
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    840, 870, 928, 984,  # content before the calls kept as written
    872, 930, 986,  # text after the calls streamed as content (the message drops it)
    882, 940, 996, 1000,  # a call inside prose: the prose streamed as written
    842, 888, 944, 1002,  # cut-off call: partial arguments text (the message: {})
    844, 846,  # qwen3_json (hermes): "\n\n" after </think> is content only when streaming
    850, 858,  # qwen3_json/llama4_json: a cut-off call streamed as a call with "" arguments
    856,  # llama4_json: text before the JSON makes vLLM's stream all content
    1052, 1054,  # nemotron_v3: vLLM swaps reasoning and content only non-streaming
)})
# llama4_pythonic (docs/vllm-compat/pythonic.md): vLLM streams an output opening with
# <|python_start|> with that marker's first tokens as content and <|python_end|> inside the
# arguments; streams nothing for an unreadable first call or one cut off by the end of the
# output (or streams the cut-off call); and streams the first call before an unreadable second
# one. The message strips the markers, or keeps the whole output as content.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    3415, 3417, 3419, 3421, 3423, 3433, 3435, 3439, 3441, 3443, 3451, 3457, 3461)})
# hy_v4 (glm2, docs/vllm-compat/hy.md): vLLM streams calls as they come, not strictly (a
# faulty, unclosed or cut-off block streams calls or drops its text; the message is the whole
# output as content), whitespace alone before the block and "\n" after </think> as content,
# a second block's calls, and reasoning opened by a <think> in the output keeps its "\n\n".
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    6221, 6225, 6229, 6231, 6233, 6235, 6237, 6239, 6241, 6243, 6245, 6247, 6251, 6253, 6267,
    6281, 6285)})
# poolside_v1 (glm2, docs/vllm-compat/poolside.md): vLLM streams calls as they come (a call
# its message skips, or one never closed, streams; its text is lost), text after and between
# calls as content, whitespace alone before a call, "\n" after </think>, a <think> written in
# the output into the reasoning.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    6305, 6319, 6321, 6323, 6329, 6331, 6333, 6335, 6337, 6341, 6343, 6345, 6347, 6375,
    6377)})
# ... and its messages where we differ as for pythonic (155, 160, README compatibility): text
# after the "]" dropped; a later unreadable call keeps the calls before it; the model's list
# read under tool_choice "required" and a named choice.
_PARIS_C = ("get_weather", {"city": "Paris", "unit": "c"})
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (3424, (None, [_PARIS_C], "tool_calls")),
    (3430, (None, [_PARIS_C], "tool_calls")),
    (3434, (", get_time(x=)]", [("get_weather", {"city": "Paris"})], "tool_calls")),
    (3450, ("", [_PARIS_C], "tool_calls")),
    (3456, ("", [_PARIS_C], "stop")),
)})
# olmo3 (docs/vllm-compat/pythonic.md): vLLM's reasoning parser streams everything as
# reasoning until a </think>, so with both parsers every stream without one is reasoning; the
# tool parser streams only output starting with "<" and cannot join lines across chunks.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    *range(3463, 3476, 2), *range(3479, 3506, 2), 3507, 3511, 3513, 3515, 3517, 3521, 3527,
    3529, 3531, 3533, 3537, 3539, 3541, 3543, 3545, 3547, 3553, 3555)})
# ... and its messages where we differ on purpose (README compatibility, olmo3 rows): text
# before <function_calls> stays content; a later unreadable call keeps the calls before it;
# the block is read under "required" and a named choice. (Reasoning: vLLM's message, 3512-3516;
# 3477's stream passes the 512 characters held for a </think>: reasoning, as vLLM's stream.)
_THOUGHT = "The user wants Paris weather; call the tool."
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (3482, ("Let me check the weather.\n", [_PARIS_C], "tool_calls")),
    (3498, (", get_time(x=)</function_calls>", [("get_weather", {"city": "Paris"})],
            "tool_calls")),
    (3536, ("", [_PARIS_C], "tool_calls")),
    (3542, ("", [_PARIS_C], "stop")),
    (3552, ("<think>" + _THOUGHT + "</think>", [_PARIS_C], "tool_calls")),
)})
# lfm2 (branch pythonic2, docs/vllm-compat/pythonic.md): vLLM streams the text around the
# block unstripped and an echo after it before its end marker arrives, nothing for an
# unreadable block or one cut off by the end of the output (or streams the first call of an
# unreadable list); the message strips, drops the echo, or keeps the whole output as content.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    5817, 5819, 5821, 5823, 5825, 5827, 5829, 5847, 5849, 5851, 5853, 5855, 5861, 5863, 5871,
    5877, 5883)})
# ... and its messages where we differ as for pythonic (README compatibility): the block is
# read under tool_choice "required" and a named choice.
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (5870, ("", [_PARIS_C], "tool_calls")),
    (5876, ("", [_PARIS_C], "stop")),
)})
# functiongemma (branch pythonic2, docs/vllm-compat/gemma4.md): vLLM's stream closes each
# argument with "}" as it goes ('{"city": "Paris"} "unit": "c"}'), numbers calls from the
# start markers seen, streams text around and after calls, nothing for a header it cannot
# read, and "" for arguments without pairs; the message reads the whole output.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    5901, 5903, 5905, 5907, 5911, 5915, 5917, 5919, 5921, 5923, 5927, 5929, 5931, 5933, 5935,
    5937, 5939, 5945, 5947, 5955, 5961, 5965, 5967)})
# ... and its messages where we differ as for pythonic (README compatibility): the calls are
# read under tool_choice "required" and a named choice.
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (5954, ("", [_PARIS_C], "tool_calls")),
    (5960, ("", [_PARIS_C], "stop")),
)})
# MiniMax M3 (docs/vllm-compat/minimax.md): vLLM's stream judges from the default prompt (which
# mentions <mm:think>/</mm:think>) that reasoning has ended and streams an output's
# <mm:think> block, tags included, as content; the message splits it
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1)
                          for n in (*range(782, 821, 2), 824, 832)})
# ... without tools and under "none" too (issue 21; the message: 2102, 2106)
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (2103, 2107)})
# gemma4 with the thought channel opened by the prompt: vLLM streams a call after the
# reasoning as content (markup included, finish "stop"); its message reads the call
STREAM_AS_MESSAGE.update({_case_name(2225): _case_name(2224)})
# kimi_k2 with a header naming nothing: vLLM's stream sends the call (named from the body) with
# arguments "", its message the whole body as arguments
STREAM_AS_MESSAGE.update({_case_name(2231): _case_name(2230)})
# seed_oss under "required": vLLM's message reads the content after the reasoning as a JSON
# list of calls (2234, 2238: strict and not); its stream returns no call
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (2235, 2239)})
# granite_thinking_parser (granite-inkling, docs/vllm-compat/granite.md): on a vocabulary
# without ChatML turn markers vLLM's stream judges from the prompt's <tool_call> (the tools'
# system text) that reasoning has ended and streams it all as content; its message does not
# read the prompt and splits the reasoning off (no tools: 5057; thinking off: 5035-5039); with
# thinking off its stream keeps the newlines starting the content, its message drops them (5033)
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1)
                          for n in (*range(5001, 5034, 2), *range(5041, 5066, 2))
                          if n not in (5043, 5057)})
# granite (granite-inkling, docs/vllm-compat/granite.md): vLLM's streams keep the whitespace
# ending the content before the calls (5117) and without tools (5155), send the text after the
# calls (5119, 5147), the arguments "" for "arguments": "x" (5129) and no call under "required"
# (5161); the messages strip, drop, read. Arguments written as a JSON string stay as written
# (vLLM: the string's text), as granite4's (README compatibility)
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1)
                          for n in (5117, 5119, 5129, 5147, 5155, 5161)})
MESSAGE_DIFFERENCES.update({_case_name(5128): (None, [("get_weather", '"x"')], "tool_calls")})
# ... and messages where we differ on purpose, as for qwen3_coder, hermes and llama3_json:
# whitespace before the content that precedes a call stays (vLLM strips it, which a stream
# cannot know in time); a call cut off inside a parameter keeps the value read so far (vLLM:
# {}); llama3_json keeps the text before a call and returns a cut-off call with its arguments
# so far.
_WEATHER = ("get_weather", {"city": "Paris", "unit": "c"})
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (839, ("\n\nLet me check.", [_WEATHER], "tool_calls")),
    (869, ("\n\nLet me check the weather for you.", [_WEATHER], "tool_calls")),
    (927, ("\n\nLet me check the weather for you.", [_WEATHER], "tool_calls")),
    (983, ("\n\nLet me check the weather for you.", [_WEATHER], "tool_calls")),
    (881, ("\n\nUse <b>bold</b> when x > 3, and write", [("f", {})], "tool_calls")),
    (939, ("\n\nUse <b>bold</b> when x > 3, and write", [("f", {})], "tool_calls")),
    (995, ("\n\nUse <b>bold</b> when x > 3, and write", [("f", {})], "tool_calls")),
    (999, ("\n\n<tool_call>", [("get_weather", {"city": "Paris"})], "tool_calls")),
    (841, (None, [("get_weather", {"city": "Par"})], "length")),
    (887, (None, [("get_weather", {"city": "\nPar"})], "length")),  # mimo: as written
    (943, (None, [("get_weather", {"city": "Par"})], "length")),
    (1001, (None, [("get_weather", {"city": "Par"})], "length")),
    (855, ("Let me check the weather for you.\n\n", [_WEATHER], "tool_calls")),
    (857, (None, [("get_weather", '{"')], "length")),
)})

# phi4_mini_json (issue 19, docs/vllm-compat/json_wrapped.md): vLLM streams nothing at all
# (its streaming method returns None), so every stream folds to its twin's message (the case
# before); messages where we differ on purpose: text before `functools[` stays content, an
# element that is not a call stays content with the wrapper, a call cut off keeps the
# arguments read so far, a `]` inside the arguments is theirs (vLLM's regex stops at the
# first `]` and the JSON fails: no call), the arguments as written.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    *range(3801, 3834, 2), *range(3836, 3849, 2))})
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (3804, ("Let me check that. ", [_WEATHER], "tool_calls")),
    (3816, (None, [("get_weather", '{"city": "Pa')], "length")),
    (3818, ("functools[not json at all] trailing", [], "stop")),
    (3822, (None, [("set_config", {"tags": ["a", "b"], "count": 1})], "tool_calls")),
    (3828, ("Ok ", [_WEATHER], "tool_calls")),
    (3845, ("Hi<|tool_call|> ", [_WEATHER], "tool_calls")),
)})

# jamba (issue 19, docs/vllm-compat/json_wrapped.md): vLLM's streams re-serialise partial JSON
# and lose or mangle argument text (3852, 3858, 3866, 3870, 3872, 3878); ours fold to the
# twin's message. Its message differs from ours where a call is cut off (3869) or the list has
# no </tool_calls> after it (3871): the whole output is content there, ours keeps the call.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    *range(3850, 3861, 2), *range(3864, 3891, 2), *range(3893, 3906, 2))})
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (3869, (None, [("get_weather", '{"city": "Pa')], "length")),
    (3871, (None, [_WEATHER], "tool_calls")),
)})

# internlm (issue 19): vLLM's stream emits whitespace before the call as content (3911), a call
# without arguments as "" (3925) and no call when text stands before its "{" (3927); ours fold
# to the twin's message.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    *range(3907, 3932, 2), *range(3939, 3942, 2), *range(3944, 3955, 2))})

# gigachat3 (issue 19): vLLM's streams drop the separator text it keeps in its message (3968),
# stream text after the object or keys after the arguments into them (3974, 3978), string
# arguments (3976); ours fold to the twin's message. Messages where we differ: a call without
# a separator before it keeps no content (vLLM: the whole output as content, 3963), text after
# the object is dropped (vLLM: no call, all content, 3977), a cut-off call keeps its arguments
# (3981).
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    *range(3956, 3989, 2), *range(3991, 4002, 2))})
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (3963, (None, [_WEATHER], "tool_calls")),
    (3977, (None, [_WEATHER], "tool_calls")),
    (3981, (None, [("get_weather", '{"city": "Pa')], "length")),
)})


# granite4 (docs/vllm-compat/granite.md): vLLM's streams lose the text of an unreadable or
# unclosed call and keep whitespace-only content; its messages make the whole output content
# when any call is unreadable or unclosed. Our streams fold to the message, which differs on
# purpose as hermes' does (README compatibility): each unreadable call's own text is content,
# readable calls are kept, a call cut off keeps the arguments read so far, arguments written as
# a JSON string or null stay as written, tool_choice "required"/named read the model's calls.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    3005, 3021, 3023, 3029, 3031, 3035, 3039, 3041, 3043, 3047, 3049, 3051, 3055, 3057, 3065,
    3069)})
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (3028, (None, [("get_weather", '"{\\"city\\": \\"Paris\\"}"')], "tool_calls")),
    (3030, (None, [("get_time", None)], "tool_calls")),
    (3040, (None, [_WEATHER, ("get_time", "{")], "tool_calls")),
    (3042, ("Checking.\n", [_WEATHER], "tool_calls")),
    (3050, (None, [("get_weather", {"city": "a</tool_call>b"})], "tool_calls")),
    (3056, (None, [("get_weather", '{"city": "Par')], "length")),
    (3064, ("", [_WEATHER], "tool_calls")),
    (3068, ("", [_WEATHER], "stop")),
)})
# granite-20b-fc (docs/vllm-compat/granite.md): the same, with <function_call> and no closing
# tag; vLLM's streams also lose content before a call and calls after the first
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    3089, 3097, 3099, 3103, 3105, 3113, 3115, 3117, 3123, 3125, 3127, 3133, 3135, 3141)})
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (3116, ("<function_call> {oops}", [_WEATHER], "tool_calls")),
    (3118, (None, [("get_weather", {"city": "a<function_call>b"})], "tool_calls")),
    (3126, (None, [("get_weather", '{"city": "Par')], "length")),
    (3132, ("", [_WEATHER], "tool_calls")),
    (3134, ("", [_WEATHER], "stop")),
)})
# longcat (docs/vllm-compat/granite.md): hermes with <longcat_tool_call>, its rows (1504):
# vLLM's streams keep whitespace before a call, lose unreadable calls, mangle keys in another
# order; its message makes the whole output content for an unreadable or cut-off call
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    3171, 3175, 3177, 3179, 3181, 3189)})
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (3180, ('<longcat_tool_call>{"oops": 1}</longcat_tool_call>', [_WEATHER], "tool_calls")),
    (3190, (None, [("get_weather", '{"city": "Par')], "length")),
)})


def _on_v31_vocabulary(name: str) -> str:
    """Cases 367-404 are 200-237 recorded again on DeepSeek-V3.1's own vocabulary (model
    ``deepseek-v3.1``), with the same answers: "214-deepseek_v3-chat-…" is
    "381-deepseek_v3-v31vocab-chat-…"."""
    return f"{int(name[:3]) + 167:03d}" + name[3:].replace("-chat-", "-v31vocab-chat-", 1)


def _deepseek_v4_vocabulary(name: str) -> bool:
    return name[:3].isdigit() and 200 <= int(name[:3]) <= 237


MESSAGE_DIFFERENCES.update({_on_v31_vocabulary(name): ours
                            for name, ours in list(MESSAGE_DIFFERENCES.items())
                            if _deepseek_v4_vocabulary(name)})

# step5 (docs/vllm-compat/qwen3_family.md, "step5"; README compatibility): vLLM's streams differ
# from its messages, which we follow; the stream folds to its twin's message (the case before):
# whitespace alone before the calls streamed as content (the message drops it), <think> kept in
# streamed reasoning when it shares a chunk (deepseek_r1), text after the calls streamed, a
# cut-off parameter streamed as partial arguments text, and with thinking off the stream reads
# the closed prompt while the message does not (all reasoning)
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    4601, 4603, 4605, 4607, 4609, 4611, 4615, 4617, 4619, 4621, 4623, 4625, 4627, 4629, 4635,
    4637, 4639, 4641, 4649, 4651, 4653, 4657, 4659, 4661, 4663, 4665, 4671, 4675)})
# ... and a parameter cut off by the end of the output keeps the value read so far (vLLM: {}),
# as for qwen3_coder
MESSAGE_DIFFERENCES[_case_name(4636)] = (None, [("get_weather", {"city": "Par"})], "length")
# holo2 (deepseek_v3's rules, thinking on by default) with hermes and qwen3_coder: the streams
# differ from the messages as deepseek_r1's and hermes's do (whitespace between </think> and a
# call, <think> kept in streamed reasoning, a cut-off call's text lost)
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    4701, 4703, 4705, 4717, 4719, 4721, 4731, 4737, 4739, 4741, 4743, 4745, 4749, 4751, 4753,
    4755, 4757)})
# ... and hermes's own differences (README: a call cut off by the end of the output keeps the
# arguments written so far; arguments are the model's text as written, JSON or not)
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (4718, (None, [("get_weather", '{"city": "Par')], "length")),
    (4720, (None, [("get_weather", "{city: Paris}")], "tool_calls")),
)})

# An engine format's reasoning parser with another family's tool parser (8200-8309): the
# tool parser's own rows apply to what the engine leaves as content. hermes under "required"
# and named (README: JSON-schema output is parsed); qwen3_coder's stripped content (README:
# whitespace before the text stays) and its streams as written; whitespace between </think>
# and a hermes call streamed as content (README: streaming vs non-streaming)
_PARIS = ("get_weather", {"city": "Paris"})
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (8214, ("", [_PARIS], "tool_calls")), (8216, ("", [_PARIS], "stop")),
    (8258, ("", [_PARIS], "tool_calls")), (8260, ("", [_PARIS], "stop")),
    (8290, ("\n\nLet me check the weather for you.", [_WEATHER], "tool_calls")),
)})
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    8215, 8217, 8225, 8243, 8245, 8251, 8259, 8261, 8291, 8325, 8327)})
# kimi_k3's reasoning parser with hermes (8310-8331): hermes's JSON forms as above; a
# reasoning cut off leaves content null where vLLM's KimiK3Parser gives "" (README: kimi_k3
# pairing)
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (8324, ("", [_PARIS], "tool_calls")), (8326, ("", [_PARIS], "stop")),
    (8328, (None, [], "length")),
)})
# kimi_k3 (issue 20, docs/vllm-compat/kimi_k3.md; README compatibility): vLLM's streams differ
# from its messages, which we follow; the stream folds to its twin's message: whitespace alone
# in the response channel before calls (7033), a message closing after an unclosed response
# (7059), an output opening with a response channel streamed as reasoning (7063), text before a
# written think tag (7069), a think closing with spaces in it (7073), the reasoning parser
# alone streaming the tools channel after the response channel (7129-7133); and the streams of
# the messages below where we differ (7025, 7051, 7127)
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    7025, 7033, 7051, 7059, 7063, 7069, 7073, 7127, 7129, 7131, 7133)})
# ... and messages where we differ on purpose: a call streams from its header, so a call left
# unclosed (7024) or cut off (7050, 7126) keeps the arguments read so far; text before a
# channel that opens later stays where it was read (reasoning before a written think tag 7068;
# content before a response channel, 7098, 7112, 7120: vLLM keeps only the channel's text)
_K3_THOUGHT = "The user wants Paris weather; call the tool."
_K3_SUNNY = "It is sunny in Paris, 22 °C."
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (7024, (None, [("get_weather", {"city": "Paris"})], "tool_calls")),
    (7050, ("Hi", [("get_weather", '{"city": "Par')], "length")),
    (7068, (_K3_SUNNY, [], "stop")),
    (7098, (f"{_K3_THOUGHT}<|close|>think<|sep|>{_K3_SUNNY}", [], "stop")),
    (7112, (f"{_K3_THOUGHT}<|close|>think<|sep|>Let me check the weather for you.", [_WEATHER],
            "tool_calls")),
    (7120, (f"{_K3_THOUGHT}<|close|>think<|sep|>Let me check the weather for you.", [],
            "stop")),
    (7126, ("Hi", [("get_weather", '{"city": "Par')], "length")),
)})
MESSAGE_REASONING[_case_name(7068)] = f"abc<|open|>think<|sep|>{_K3_THOUGHT}"
# ernie45 (wrapped2, docs/vllm-compat/ernie45.md): vLLM's streams lose an unreadable
# call's text, "</response>" in the content and the newlines before a call's tag after
# reasoning, and (with its reasoning parser) keep text around <response>…</response> and a
# <think> sharing a chunk; ours fold to the twin's message. Messages where we differ: an
# unreadable call's own text is content and the other calls are kept (hermes' rule),
# "required" and named read the model's tags too (as hermes), text before <think> is reasoning
# (deepseek_r1's row).
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    5437, 5439, 5447, 5459, 5463, 5477, 5481, 5483, 5485, 5487, 5489, 5493, 5495, 5501, 5507,
    5509, 5511, 5513)})
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (5438, ('<tool_call>{"name": "get_time", "arguments": {,}}</tool_call>', [_PARIS_C],
            "tool_calls")),
    (5458, ("", [_PARIS_C], "tool_calls")),
    (5462, ("", [_PARIS_C], "stop")),
    (5494, ("It is sunny in Paris, 22 °C 🌞.", [], "stop")),
    (5512, ("", [_PARIS_C], "tool_calls")),
)})
MESSAGE_REASONING.update({_case_name(5494): "Hmm. The user wants Paris weather; call the tool."})
# hunyuan_a13b (wrapped2, docs/vllm-compat/json_wrapped.md "hunyuan_a13b"): vLLM's streams
# send the list's text as content, lose calls or mangle arguments; ours fold to the twin's
# message. Messages where we differ, as jamba's rows: an element without "arguments" ends the
# reading (vLLM skips it), string arguments stay JSON, an empty list is no content, a list
# without </tool_calls> or cut off keeps its calls, a list inside <think>…</think> is read.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    5521, 5523, 5525, 5529, 5533, 5535, 5537, 5539, 5545, 5547, 5549, 5551, 5553, 5559, 5561,
    5563, 5565, 5569, 5571, 5587, 5589, 5591)})
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (5548, ('<tool_calls>[{"name": "get_time"}, {"name": "get_weather", "arguments": '
            '{"city": "Paris", "unit": "c"}}]</tool_calls>', [], "stop")),
    (5550, (None, [("get_weather", '"Paris"')], "tool_calls")),
    (5552, ("Hi ", [], "stop")),
    (5560, ("Hi ", [_PARIS_C], "tool_calls")),
    (5564, ("<think>maybe ", [_PARIS_C], "tool_calls")),
    (5570, (None, [("get_weather", '{"city": "Par')], "length")),
)})
# ... and with its reasoning parser (5592-5619): vLLM's one-token streams lose the answer's
# first text or keep its end tag; ours fold to the twin's message. Its message reads a
# "<think>\n" block after other text (a fallback regex); ours keeps that output as content.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    5593, 5595, 5597, 5599, 5601, 5603, 5609, 5613, 5617, 5619)})
MESSAGE_DIFFERENCES.update({_case_name(5610): (
    "Hmm. <think>\nParis weather; call the tool.\n</think>\n<answer>\nSunny.", [], "stop")})
# apertus (branch json3, docs/vllm-compat/json_wrapped.md "apertus"): vLLM's streams keep
# whitespace its message strips, lose the text after a block or a malformed block's text,
# number calls by their list position, stream null arguments as "" and cut-off arguments as
# partial text; its unicode stream fails (400) on an escaped pair split across chunks. Ours fold
# to the twin's message. The message where we differ: content before a block keeps its
# leading whitespace (8418).
SUPPORTED_BEYOND_VLLM.add(_case_name(8409))
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    8417, 8419, 8427, 8431, 8433, 8435, 8439, 8441, 8443, 8445, 8447, 8449, 8459, 8461, 8463,
    8465, 8485)})
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (8418, ("  Checking.\nDone.", [_PARIS_C], "tool_calls")),
)})
MESSAGE_REASONING.update({_case_name(5610): None})
# step3 reasoning (issue 19, branch qwen2): an output opening with </think> has an empty
# reasoning, which vLLM's message gives as "" and ours as null (README compatibility)
MESSAGE_DIFFERENCES[_case_name(6908)] = (None, [], "stop")
MESSAGE_REASONING[_case_name(6908)] = None
# ... its streams: with thinking off everything streams as content, and the whitespace between
# </think> and a hermes call streams as content (the messages: split; none)
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (6917, 6923)})
# step3 tool parser (issue 19, branch qwen3x, docs/vllm-compat/step3.md): vLLM streams text
# before and after the block unstripped, markup split across chunks or after a split marker as
# content, calls of a block never closed or without a separator, and no arguments for a call
# without parameters; ours fold to the twin's message.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    8611, 8613, 8615, 8617, 8619, 8621, 8625, 8627, 8629, 8637, 8663, 8665, 8667, 8671)})
# ... and its messages where we differ: whitespace opening content that is said before the
# calls is kept (vLLM strips it; README compatibility)
_PARIS_STEP3 = [("get_weather", {"city": "Paris", "unit": "c"})]
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (8616, ("  Checking \n\n then done.", _PARIS_STEP3, "tool_calls")),
    (8666, ("\n\nSure.\n\nDone.", _PARIS_STEP3, "tool_calls")),
)})

# granite reasoning (issue 19, branch glimmer, docs/vllm-compat/granite.md): vLLM's streams read
# the markers only where the output starts (text before them, and an unmatched thought, stream
# as content), cut them at the ":" they look for (pieces of a marker leak into the reasoning,
# a second response marker ends it again) and lose or repeat text at the switch; with the
# granite tool parser they send the call's markup as content, and under "required"/named
# their JSON path reads differently. Ours fold to the twin's message.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    9203, 9209, 9211, 9215, 9221, 9223, 9225, 9229, 9231, 9233, 9235, 9245, 9247, 9249, 9251,
    9255, 9257)})
# ... and an empty reasoning ("Here is my thought process:" right before "Here is my
# response:"), which vLLM's message gives as "" and ours as null, as for step3 (README)
MESSAGE_DIFFERENCES[_case_name(9214)] = (" It is sunny in Paris, 22 °C.", [], "stop")
MESSAGE_REASONING[_case_name(9214)] = None
# k2_horizon (issue 19, branch k2h; docs/vllm-compat/k2_horizon.md, README compatibility): an
# output whose reasoning never ends (no end marker of the request's effort, no
# <ifm|tool_calls>) streams as reasoning where vLLM's message has it as content; ours fold to
# the message
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (9007, 9009, 9065, 9091)})
# ... and a stream whose request names a tool_call_format or reasoning_effort vLLM's k2_horizon
# parsers refuse: vLLM answers the first chunk "invalid stream_state: derender failed"; ours
# gives the non-streaming answer's message
DEVIATIONS.update({
    _case_name(9085): (400, "BadRequestError", "Unsupported tool_call_format 'yaml'."),
    _case_name(9099): (400, "BadRequestError", "Unsupported reasoning_effort 'none'."),
    _case_name(9101): (400, "BadRequestError", "Unsupported reasoning_effort 'max'."),
})

# inkling (issue 20, branch inkling, docs/vllm-compat/inkling.md): vLLM's streams with both
# parsers stream a call's arguments before the schema types them (9409: cut short where the
# typing changes them) and a string "args" as nothing (9421); its tool parser alone streams
# the thinking blocks as reasoning, which its message drops (9507-9517); its reasoning parser
# alone streams the markers and headers its message drops (9519-9529). Ours fold to the
# twin's message.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    9409, 9421, 9507, 9509, 9515, 9517, 9519, 9521, 9523, 9525, 9529)})

# cohere branch: cohere_command3/4 (docs/vllm-compat/cohere.md): vLLM's stream skips a call
# melody read without a name (its message returns it, named "")
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (9637, 9657, 9727, 9747)})
# dots (branch dots, docs/vllm-compat/dots.md): vLLM streams the text between and after the
# blocks (10007, 10029, 10031, 10055), the whitespace ending the content before them (10027,
# 10033, 10035, 10063, 10079, 10081), an unreadable block's inner text as content where its
# message is the whole output (10021, 10023, 10037, 10047, 10049), a failed JSON block before
# a call (10025), drops an unclosed block (10053, 10057, 10059), an empty one (10045) and a
# lone </dots_function_call> (10061); ours fold to the twin's message.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    10007, 10021, 10023, 10025, 10027, 10029, 10031, 10033, 10035, 10037, 10045, 10047, 10049,
    10053, 10055, 10057, 10059, 10061, 10063, 10079, 10081)})
# ... and the message where we differ on purpose (README compatibility, dots): whitespace
# starting the content before the calls stays (a stream cannot know a call will follow)
MESSAGE_DIFFERENCES[_case_name(10034)] = ("  Sure.", [_PARIS_C], "tool_calls")

# xlam (branch xlam2, docs/vllm-compat/xlam.md): vLLM's stream re-reads the whole text at every
# chunk with regular expressions: arguments duplicated or cut (10203, 10205, 10209, 10225,
# 10229, 10231, 10247, 10255, 10276), markup leaked into the content (10235, 10237, 10239,
# 10243, 10249, 10251, 10257, 10261), calls streamed where the message has none (10215, 10219,
# 10241, 10253), content lost where the message is the whole output (10213, 10217, 10223,
# 10227), no call under "required" (10268); ours fold to the twin's message.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    10203, 10205, 10209, 10213, 10215, 10217, 10219, 10223, 10225, 10227, 10229, 10231, 10235,
    10237, 10239, 10241, 10243, 10247, 10249, 10251, 10253, 10255, 10257, 10261, 10268,
    10276)})

# Under VLLM_ENFORCE_STRICT_TOOL_CALLING=1 vLLM leaves JSON-schema output of tool_choice
# "required" in content; we parse it, as its non-strict recordings do.
JSON_TOOL_OUTPUT = {"072-parser-chat-required_json"}


def _aggregate(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """A chat stream folded: text concatenated, tool calls per index, the finish."""
    content, reasoning = "", ""
    calls: dict[int, dict[str, Any]] = {}
    finishes = []
    for chunk in chunks:
        for choice in chunk["choices"]:
            delta = choice["delta"]
            content += delta.get("content") or ""
            reasoning += delta.get("reasoning") or ""
            for call in delta.get("tool_calls") or []:
                entry = calls.setdefault(call["index"], {"name": "", "arguments": "", "ids": 0})
                entry["name"] += call["function"].get("name") or ""
                entry["arguments"] += call["function"].get("arguments") or ""
                entry["ids"] += call.get("id") is not None
            if choice["finish_reason"] is not None:
                finishes.append(choice["finish_reason"])
    for entry in calls.values():
        with contextlib.suppress(ValueError):
            entry["arguments"] = json.loads(entry["arguments"])
    return {"content": content, "reasoning": reasoning, "calls": calls, "finishes": finishes}


# Streams whose EOS arrives in a chunk without finish and the finish in an id-less chunk: vLLM
# reports stop_reason null there; we report the EOS id, as without streaming (README row).
ID_LESS_FINISH_STOP_REASON = {"354-harmony-chat-stream-reasoning_tool-mixed": 200012}


def _check_parser_stream(case: dict[str, Any], ours: list[Any], theirs: list[Any]) -> None:
    """Per chunk: everything but the parsed text; per stream: the folded text and calls."""
    for mine, recorded in zip(ours, theirs, strict=True):
        for got, recorded_choice in zip(mine["choices"], recorded["choices"], strict=True):
            want = dict(recorded_choice)
            if got["finish_reason"] is not None and case["name"] in ID_LESS_FINISH_STOP_REASON:
                want["stop_reason"] = ID_LESS_FINISH_STOP_REASON[case["name"]]
            for key in ("index", "logprobs", "token_ids", "stop_reason"):
                assert got[key] == want[key], key
            assert got["delta"]["role"] == want["delta"]["role"]
        assert mine["usage"] == recorded["usage"]
    expected = _aggregate(theirs)
    twin = STREAM_AS_MESSAGE.get(case["name"])
    if twin is not None:
        expected = _message_fold(twin)
    quirk = STREAM_QUIRKS.get(case["name"])
    if quirk == "whitespace-before-call":
        assert expected["content"].strip() == ""
        expected["content"] = ""
    elif quirk == "eos-leak":
        expected["content"] = expected["content"].replace("<|im_end|>", "")
    elif quirk == "r1-closed-prompt":
        message = load_case(case_path("095-r1-chat-explicit_think"))[
            "calls"][0]["response"]["choices"][0]["message"]
        expected["content"], expected["reasoning"] = message["content"], message["reasoning"]
    got = _aggregate(ours)
    assert got == expected
    assert all(entry["ids"] == 1 for entry in got["calls"].values())


def _recorded_message(name: str) -> dict[str, Any]:
    """A non-streaming case's recorded choice, with our MESSAGE_DIFFERENCES applied."""
    choice: dict[str, Any] = copy.deepcopy(
        load_case(case_path(name))["calls"][0]["response"]["choices"][0])
    difference = MESSAGE_DIFFERENCES.get(name)
    if difference is not None:
        content, calls, finish = difference
        message = choice["message"]
        message["content"] = content
        message.pop("tool_calls", None)
        if calls:
            message["tool_calls"] = [
                {"id": f"call-{i}", "type": "function", "function": {
                    "name": call_name,
                    "arguments": args if isinstance(args, str) else json.dumps(args)}}
                for i, (call_name, args) in enumerate(calls)]
        choice["finish_reason"] = finish
        if name in MESSAGE_REASONING:
            message["reasoning"] = MESSAGE_REASONING[name]
    return choice


def _message_fold(name: str) -> dict[str, Any]:
    """What a stream of the same output folds to: the twin case's message."""
    choice = _recorded_message(name)
    message = choice["message"]
    calls = {}
    for index, call in enumerate(message.get("tool_calls") or []):
        arguments = call["function"]["arguments"]
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
        calls[index] = {"name": call["function"]["name"], "arguments": arguments, "ids": 1}
    return {"content": message["content"] or "", "reasoning": message["reasoning"] or "",
            "calls": calls, "finishes": [choice["finish_reason"]]}


def parsers_of(case: dict[str, Any]) -> tuple[str | None, str | None]:
    """The recorded server's --reasoning-parser and --tool-call-parser."""
    flags = case.get("server_flags", [])
    named = dict(zip(flags, [*flags[1:], None], strict=True))
    return named.get("--reasoning-parser"), named.get("--tool-call-parser")


def normalize(body: Any) -> Any:
    body = copy.deepcopy(body)
    if not isinstance(body, dict):
        return body
    body.pop("stream_state", None)
    inner = body.get("chunk", body)
    if isinstance(inner, dict):
        inner.pop("created", None)
        for choice in inner.get("choices") or []:
            for key in ("message", "delta"):
                for call in (choice.get(key) or {}).get("tool_calls") or []:
                    call["id"] = "<id>" if call.get("id") is not None else None
                    with contextlib.suppress(TypeError, ValueError, KeyError):
                        call["function"]["arguments"] = {
                            "__json__": json.loads(call["function"]["arguments"])}
    error = body.get("error")
    if isinstance(error, dict) and error.get("type") == "Bad Request":
        error["message"] = error["message"].split("\n", 1)[0]
    return body


def replayed_call(case: dict[str, Any], i: int, states: dict[int, Any]
                  ) -> tuple[dict[str, Any], bool]:
    """Call ``i`` of a recorded case as we replay it, and whether it continues a stream: a
    streaming call carries the state our own previous answer in its chain returned (vLLM's
    recorded states are not ours), except a deliberately tampered last call, sent as recorded.
    """
    call = case["calls"][i]
    request = call.get("request")
    streaming = isinstance(request, dict) and request.get("stream") is True
    if not streaming or (case.get("state_tampered") and i == len(case["calls"]) - 1):
        return call, False
    request = dict(case["chunks"][i] if "chunks" in case else request)
    request.pop("chain", None)
    request.pop("stream_state", None)
    chain = call.get("chain", 0)
    if chain in states:
        request["stream_state"] = states[chain]
    return {**call, "request": request}, True


def send_call(client: Any, endpoint: str, call: dict[str, Any]) -> Any:
    headers = {"content-type": (call.get("request_headers") or {}).get(
        "content-type", "application/json")}
    raw = call["request_raw"] if "request_raw" in call else (
        None if call["request"] is None else json.dumps(call["request"]))
    return client.request(call.get("method", "POST"), endpoint, headers=headers,
                          content=None if raw is None else raw.encode("utf-8"))


# muse branch: Muse Spark (docs/vllm-compat/muse.md): vLLM streams no unframed output, an
# ATEM block echoed in the answer as content without its call, and nothing where its message
# gives a malformed or cut-off call message's framed text as content (7443-7461)
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1)
                          for n in (7429, 7437, 7443, 7445, 7459, 7461, 7517)})
# ... and the message where we differ on purpose (README compatibility): a commentary or
# answer message before the first tool message holding ATEM markup stays its body when the
# content is the framed messages (a stream gives the body before it can know; vLLM's stream,
# 7513, does the same)
MESSAGE_DIFFERENCES[_case_name(7512)] = (
    "Let me check.<|start|>assistant to=get_weather.get_weather<|message|>"
    '<atem:function_calls>\n<atem:invoke name="get_weather.get_weather">\n'
    '<atem:parameter name="city">Paris</atem:parameter>\n'
    '<atem:parameter name="unit">c</atem:parameter>\n</atem:invoke>\n'
    "</atem:function_calls><|eom|>", [], "stop")

# musepair branch: the muse tool parser without its reasoning parser (alone 7490-7509, after
# qwen3's 9866-9879) and the muse reasoning parser before hermes (9852-9865)
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1)
                          for n in (7491, 7493, 7495, 7497, 7499, 7501, 7503, 7509, 9853, 9855,
                                    9861, 9865, 9873, 9875, 9879)})
# ... and where we differ on purpose (README compatibility, special tokens after an engine
# reasoning parser): the output's last id is the tokenizer's eos <|eot|> (finish "length"),
# which vLLM's qwen3 engine drops from the content it hands over (muse keeps special tokens);
# derender keeps the content as written: qwen3's content of the output, "\n\n" after </think>
MESSAGE_DIFFERENCES[_case_name(9872)] = (
    "\n\n<|start|>assistant to=user<|message|>It is sunny in Paris, 22 °C.<|eot|>", [],
    "length")

# pairing2 branch: the kimi_k3 tool parser after qwen3's reasoning parser (9800-9825): vLLM
# streams the "\n\n" after </think> as content, its message drops it (9823 folds to 9822's
# message with our difference below)
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1)
                          for n in (9801, 9805, 9807, 9817, 9819, 9823, 9825)})
# ... and where we differ on purpose (README compatibility, kimi_k3 calls and pairing): a call
# cut off in its arguments keeps the arguments read so far, as after K3's own reasoning (7050),
# and the content is null (vLLM: no call, the whitespace after </think>, "\n\n")
MESSAGE_DIFFERENCES[_case_name(9822)] = (None, [("get_weather", '{"city": "Par')], "length")
# pair3 branch: the olmo3 reasoning parser before the plamo3 tool parser (9826-9851): vLLM's
# olmo3 streams everything as reasoning until a </think> (its message: content when none
# comes), and its plamo3 loses calls split across chunks; ours fold to the twin's message
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1)
                          for n in (9827, 9829, 9833, 9835, 9837, 9843, 9845, 9847, 9849)})
# ... and the pairings of 10800-10859 (docs/recording/pairing.md): vLLM's streams differ from
# its messages: after olmo3's reasoning an output with no </think> streams as reasoning (10805,
# 10825, 10855) and the calls after one stream as content (10801, 10807, 10821, 10851), an
# inkling text block keeps its framing (10803); hermes after inkling's reasoning streams
# <|end_message|> as content (10813, 10819); step3 after deepseek_r1 streams a call cut off in
# its arguments with "" arguments (10837); minicpm5 after qwen3 streams the call's markup as
# content too (10841); dots after qwen3 streams the "\n\n" after </think> as content (the
# message drops it before a call) and a call cut off in its arguments not at all (10861,
# 10867). Ours fold to the twin's message.
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    10801, 10803, 10805, 10807, 10813, 10819, 10821, 10825, 10837, 10841, 10851, 10855, 10861,
    10867)})
# ... where we differ on purpose (README compatibility): hermes returns a call cut off in its
# arguments with the arguments written so far (its row); inkling's tool parser after a
# reasoning parser that is not engine-based strips its framing from an output with no call
# (vLLM: the output as written, the framing kept)
MESSAGE_DIFFERENCES.update({
    _case_name(10816): (None, [("get_weather", '{"city": "Par')], "length"),
    _case_name(10802): ("It is sunny in Paris, 22 °C.", [], "stop")})


# Muse Glimmer (docs/vllm-compat/muse.md): vLLM's stream differs from its message in these
# (reasoning blocks not joined, text-only and recipient-less content lost, framed content
# without its header, every answer body, ...: README compatibility, "Muse Glimmer: the
# stream"); ours folds to the message
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1)
                          for n in (7531, 7533, 7539, 7541, 7543, 9317, 9319, 9321, 9333, 9339,
                                    9343, 9345, 9351, 9383, 9387, 9389)})
# ... and the tool parser alone (branch glimmeralone): vLLM's stream gives the to=self
# channel as reasoning and only the answer's body as content (its message: no reasoning, the
# output as written when no call parses), and loses an unframed answer; ours folds to the
# message
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1)
                          for n in (9371, 9373, 9375, 9377, 9379, 9381)})


def _check_deviation(name: str, response: Any) -> None:
    status, error_type, message = DEVIATIONS[name]
    got = response.json()
    assert response.status_code == status, got
    assert got["error"]["type"] == error_type
    assert got["error"]["message"].startswith(message), got["error"]["message"]
    assert got["error"]["code"] == status


@pytest.mark.parametrize("path", CASES, ids=[case_name(p) for p in CASES])
def test_replay(path: Path, client_for: Any) -> None:
    case = load_case(path)
    reason = _pending_reason(case)
    if reason:
        pytest.skip(reason)
    if case["name"] in BODY_LIMIT:
        pytest.skip("replayed by test_a_body_vllm_parses_is_over_our_limit (413)")
    parsers = parsers_of(case)
    client = client_for(case["model"], *parsers)
    states: dict[int, Any] = {}
    ours: list[Any] = []
    theirs: list[Any] = []
    for i, call in enumerate(case["calls"]):
        sent, streaming = replayed_call(case, i, states)
        response = send_call(client, case["endpoint"], sent)
        got = response.json()
        last = i == len(case["calls"]) - 1
        if case["name"] in DEVIATIONS and (last or response.status_code != 200):
            _check_deviation(case["name"], response)
            return
        if case["name"] in SUPPORTED_BEYOND_VLLM:
            assert response.status_code == 200, got
            continue
        assert response.status_code == call["status"], got
        if case["name"] in JSON_TOOL_OUTPUT:
            _check_json_tool_output(got, call["response"])
            continue
        if streaming and response.status_code == 200 and any(parsers):
            ours.append(got["chunk"])
            theirs.append(call["response"]["chunk"])
        elif case["name"] in MESSAGE_DIFFERENCES:
            recorded = copy.deepcopy(call["response"])
            recorded["choices"][0] = _recorded_message(case["name"])
            assert normalize(got) == normalize(recorded)
        else:
            assert normalize(got) == normalize(call["response"])
        if response.status_code == 200 and streaming:
            assert set(got["stream_state"]) == {"prev_tokens"}, got["stream_state"]
            states[call.get("chain", 0)] = got["stream_state"]
            check_openai_chunk(got["chunk"])
        elif response.status_code == 200:
            check_openai_body(got)
    if ours:
        _check_parser_stream(case, ours, theirs)


@pytest.mark.parametrize("name", sorted(STOP_STRING_TWINS))
def test_streamed_stop_strings_fold_to_the_non_streaming_answer(name: str,
                                                                client_for: Any) -> None:
    """The twin's output ids streamed (the recorded first chunk, then one id a chunk, the
    twin's finish on the last): the concatenated content, finish and stop_reason are vLLM's
    non-streaming answer (a stop string matched before a "length" finish is not applied)."""
    case = load_case(case_path(name))
    twin = load_case(numbered(STOP_STRING_TWINS[name]))["calls"][0]
    ids = twin["request"]["generate_response"]["choices"][0]["token_ids"]
    expected = twin["response"]["choices"][0]
    first = case["chunks"][0]
    head = len(first["generate_chunk"]["choices"][0]["token_ids"])
    parts = [ids[:head], *([i] for i in ids[head:])]
    client = client_for(case["model"])
    state: Any = None
    content, finishes, reasons = "", [], []
    for at, part in enumerate(parts):
        request = copy.deepcopy(first)
        choice = request["generate_chunk"]["choices"][0]
        choice["token_ids"] = part
        choice["finish_reason"] = expected["finish_reason"] if at == len(parts) - 1 else None
        if state is not None:
            request["stream_state"] = state
        got = client.post(case["endpoint"], json=request)
        assert got.status_code == 200, got.text
        body = got.json()
        state = body["stream_state"]
        (out,) = body["chunk"]["choices"]
        content += out["delta"].get("content") or ""
        finishes.append(out["finish_reason"])
        reasons.append(out.get("stop_reason"))
    assert content == expected["message"]["content"]
    assert [f for f in finishes if f is not None] == [expected["finish_reason"]]
    assert finishes[-1] == expected["finish_reason"]
    assert reasons[-1] == expected["stop_reason"]


@pytest.mark.parametrize("number", range(2205, 2211))
def test_schema_errors_match_vllm_entry_for_entry(number: int, client_for: Any) -> None:
    """A schema error's whole answer is vLLM's: status, type, param and every entry of the
    message (test_replay compares only its first line), for both union branches."""
    case = load_case(numbered(number))
    (call,) = case["calls"]
    assert call["status"] == 400 and call["response"]["error"]["type"] == "Bad Request"
    response = send_call(client_for(case["model"]), case["endpoint"], call)
    assert response.status_code == 400
    assert response.json() == call["response"]
    assert len(call["response"]["error"]["message"].splitlines()) == 4  # "3 validation errors:"


@pytest.mark.parametrize("number", range(2200, 2205))
def test_unknown_routes_and_methods_answer_as_fastapi(number: int, client_for: Any) -> None:
    """vLLM's render server answers unknown routes and methods with FastAPI's own body
    (``{"detail": "Not Found"}`` 404, ``{"detail": "Method Not Allowed"}`` 405), not its error
    envelope; so do we."""
    case = load_case(numbered(number))
    (call,) = case["calls"]
    assert set(call["response"]) == {"detail"}
    response = send_call(client_for(case["model"]), case["endpoint"], call)
    assert (response.status_code, response.json()) == (call["status"], call["response"])


@pytest.mark.parametrize("name", sorted(BODY_LIMIT))
def test_a_body_vllm_parses_is_over_our_limit(name: str, client_for: Any) -> None:
    """vLLM has no body limit: it parses 1,000,000 ids or logprob entries and refuses them
    naming ``max_model_len``. derender answers the same under its body limit (the ids: 7 MB)
    and 413 before parsing over it (the logprobs: 45 MB > DERENDER_MAX_BODY_BYTES)."""
    case = load_case(case_path(name))
    call = case["calls"][0]
    assert call["status"] == 400 and "exceeds max_model_len" in call["response"]["error"][
        "message"]
    choice: dict[str, Any] = {"index": 0, "finish_reason": "length",
                              "token_ids": [9707] * (4 if "logprobs" in name else 1_000_000)}
    if "logprobs" in name:
        choice["logprobs"] = {"content": [{"token_id": 9707, "logprob": -0.1}] * 1_000_000}
    body = {"model": "qwen3", "generate_response": {"request_id": "i21-big",
                                                    "choices": [choice]},
            "chat_request": {"messages": [{"role": "user", "content": "hi"}]}}
    raw = json.dumps(body)
    assert len(raw) == call["request_bytes"]
    response = client_for("qwen3").post(case["endpoint"], content=raw.encode(),
                                        headers={"content-type": "application/json"})
    if len(raw) <= Settings(models_dir=FIXTURES).max_body_bytes:
        assert response.status_code == 400 and response.json() == call["response"]
    else:
        assert response.status_code == 413, response.text
        assert response.json()["error"]["code"] == 413


# minicpm5 (branch minicpm5, docs/vllm-compat/minicpm5.md; README compatibility): vLLM's
# streams differ from its messages (with minicpmv the reasoning streams as content, as for
# 6801-6839; calls stream as they come, their markup leaking into the content; a refused
# call streams its arguments); every stream folds to its twin's message. Messages where we
# differ: text before the first returned call stays content (vLLM's message: null when calls
# are returned; a stream cannot know a call will follow).
STREAM_AS_MESSAGE.update({_case_name(n): _case_name(n - 1) for n in (
    8801, 8803, 8805, 8807, 8809, 8811, 8813, 8815, 8817, 8819, 8821, 8823, 8825, 8827, 8829,
    8831, 8833, 8835, 8837, 8839, 8841, 8843, 8845, 8847, 8849, 8851, 8853, 8855, 8857, 8859,
    8861, 8867, 8869, 8871, 8873, 8875, 8877, 8883, 8887)})
MESSAGE_DIFFERENCES.update({_case_name(n): ours for n, ours in (
    (8806, ("\n\nLet me check.\n", [("get_weather", {"city": "Paris"})], "tool_calls")),
    (8814, ("\n\nOlá 😀 ", [("get_weather", {"city": "Zürich 😀𝄞"})], "tool_calls")),
    (8850, ("\n\nSun ny\n", [("get_weather", {"city": "New York"})], "tool_calls")),
    (8860, ("Sure.\n", [("get_weather", {"city": "Paris"})], "tool_calls")),
    (8876, ("Sure.\n", [("get_weather", {"city": "Paris"})], "tool_calls")),
    (8880, ("Hmm.</think>\n\n", [("get_weather", {"city": "Paris"})], "tool_calls")),
)})


def _check_json_tool_output(got: dict[str, Any], recorded: dict[str, Any]) -> None:
    """vLLM (strict) left the JSON list in content; we return it as the calls it lists."""
    listed = json.loads(recorded["choices"][0]["message"]["content"])
    message = got["choices"][0]["message"]
    assert message["content"] == ""
    assert got["choices"][0]["finish_reason"] == "tool_calls"
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message["tool_calls"]] == [(c["name"], c["parameters"]) for c in listed]


ISSUE_19_20: dict[tuple[int, int], tuple[int, str]] = {
    (3000, 3399): (142 + 62, "granite4, granite-20b-fc; longcat"),
    (3400, 3799): (62 + 94, "llama4_pythonic 3400-3461, olmo3 3462-3555"),
    (3800, 4199): (49 + 57 + 49 + 47, "phi4_mini_json, jamba, internlm, gigachat3"),
    (4200, 4599): (74 + 74, "ling3 4200-4273, hy_v3 4280-4353"),
    (4600, 4999): (84 + 58, "step5, holo2"),
    (8200, 8399): (132, "an engine format's reasoning parser with another family's tool parser"),
    (6200, 6599): (100 + 84, "hy_v4 6200-6299, poolside_v1 6300-6383"),
    (5800, 6199): (84 + 68, "lfm2 5800-5883, functiongemma 5900-5967"),
    (7000, 7399): (140, "kimi_k3 7000-7139"),
    (7800, 8199): (128 + 30 + 44 + 30, "hf 7800-7927 (both parsers), 7930-7959 (each alone); "
                   "beam 7970-8013 (both), 8020-8049 (each alone)"),
    # muse branch
    (7400, 7799): (144, "muse 7400-7519 (musespark1x is its alias), muse_glimmer 7520-7543"),
    # xlam branch
    (10200, 10399): (79, "xlam 10200-10278"),
    (5400, 5799): (118 + 100, "ernie45 5400-5517, hunyuan_a13b 5520-5619"),
    (5000, 5399): (66 + 72, "granite_thinking_parser 5000-5065, granite 5100-5171"),
    (6600, 6999): (120 + 46 + 30, "plamo3 6600-6719, minicpmv 6800-6845, step3 6900-6929"),
    (8600, 8799): (74, "step3 tool parser 8600-8673 (alone, and with the step3 reasoning parser)"),
    (8400, 8599): (86, "apertus 8400-8485"),
    # glimmer branch
    (9200, 9399): (60 + 90, "granite (reasoning) 9200-9259; muse_glimmer 9300-9389 (both "
                            "parsers, the tool parser alone (refused), the reasoning parser "
                            "alone)"),
    # branch minicpm5
    (8800, 8999): (90, "minicpm5 8800-8875, 8886-8889 (with minicpmv), 8876-8885 (alone)"),
    # branch k2h
    (9000, 9199): (116, "k2_horizon 9000-9115 (tools and reasoning, every tool_call_format and "
                        "reasoning_effort)"),
    # inkling branch
    (9400, 9599): (130, "inkling 9400-9529 (both parsers 9400-9505, each alone 9506-9529)"),
    # cohere branch
    (9600, 9799): (84 + 92 + 24, "cohere_command3 9600-9683, cohere_command4 9684-9775 "
                                 "(both parsers), 9776-9799 (each alone)"),
    # pairing2 branch
    (9800, 9999): (80, "kimi_k3 tools after qwen3 reasoning 9800-9825, plamo3 tools after "
                       "olmo3 9826-9851, muse reasoning with hermes "
                       "9852-9865, qwen3 reasoning with muse tools 9866-9879"),
    # branch dots
    (10000, 10199): (82, "dots 10000-10081"),
    # pair3 branch
    (10800, 10999): (70, "olmo3 reasoning with inkling tools 10800-10809, inkling reasoning "
                         "with hermes 10810-10819, olmo3 with dots 10820-10829, deepseek_r1 "
                         "with step3 10830-10839, qwen3 with minicpm5 10840-10849, olmo3 with "
                         "k2_horizon 10850-10859, qwen3 with dots 10860-10869"),
    # musepair branch
    (10600, 10799): (26, "cohere_command4 reasoning with hermes 10600-10617, cohere_command3 "
                         "reasoning with cohere_command4 tools 10618-10625"),
}
"""The recordings of issues 19 and 20 by number range: how many cases, of which names."""


def test_every_case_is_accounted_for() -> None:
    """The corpus is complete (the edge cases are 1500-1557; the drop-in cases 2000-2299;
    stop strings over markup and GLM-5.x 2300-2377; non-finite numbers 2900-2928; issue 19's
    and 20's names and pairs 3000-8399, by range in ``ISSUE_19_20``), each
    replayed, deviating on purpose, or pending by subject (``NOT_MATCHED_YET``)."""
    edge_cases = [p for p in CASES if 1500 <= int(p.name.split("-")[0]) <= 1557]
    assert len(edge_cases) == 58
    dropin = [p for p in CASES if 2000 <= int(p.name.split("-")[0]) <= 2299]
    markup_glm5 = [p for p in CASES if 2300 <= int(p.name.split("-")[0]) <= 2399]
    assert len(markup_glm5) == 15 + 36 + 18
    non_finite = [p for p in CASES if 2900 <= int(p.name.split("-")[0]) <= 2949]
    assert len(non_finite) == 29
    issue_19_20 = 0
    for (first, last), (count, names) in ISSUE_19_20.items():
        recorded = [p for p in CASES if first <= int(p.name.split("-")[0]) <= last]
        assert len(recorded) == count, (first, last, names)
        issue_19_20 += count
    assert len(CASES) == 1226 + len(edge_cases) + len(dropin) + len(markup_glm5) \
        + len(non_finite) + issue_19_20
    summary = summaries()  # each case read once per content (derender_testing.recorded)
    reasons = {case_name(p): _pending_reason(summary[p]._asdict()) for p in CASES}
    replayed = [p for p in CASES if reasons[case_name(p)] is None]
    names = {case_name(p) for p in replayed}
    assert set(DEVIATIONS) <= names
    assert names >= SUPPORTED_BEYOND_VLLM | set(STREAM_QUIRKS) | set(MESSAGE_DIFFERENCES)
    assert names >= set(STREAM_AS_MESSAGE) | set(STREAM_AS_MESSAGE.values())
    assert names >= set(ID_LESS_FINISH_STOP_REASON) | BODY_LIMIT
    # nothing pending but the drop-in cases not matched yet, each of which was recorded, and
    # the cases recorded ahead of their implementation (``NOT_IMPLEMENTED``)
    pending = {case_name(p) for p in CASES} - names
    ahead = {name for name, reason in reasons.items()
             if (reason or "").startswith("recorded ahead")}
    assert pending == set().union(*NOT_MATCHED_YET.values(), ahead), pending
