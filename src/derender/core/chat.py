"""Chat derender: an engine result into a ``chat.completion``, or engine chunks into
``chat.completion.chunk``s, with reasoning/tool-call parsing when the model has parsers."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from derender.contract.requests import (
    ChatRequest,
    DerenderChatRequest,
    DerenderChatStreamBatchRequest,
    DerenderChatStreamRequest,
    GenerateTokensStreamResponse,
)
from derender.core import parsers
from derender.core.bounds import (
    check_logprob_range,
    check_prompt_length,
    check_response_bounds,
    check_token_range,
)
from derender.core.decoding.detokenizer import seed_window
from derender.core.decoding.logprobs import chat_logprobs, resolve_logprobs
from derender.core.decoding.sequence import decode_settings, sequence_text
from derender.core.errors import BadRequestError
from derender.core.parsers.tools import ParsedDelta
from derender.core.registry import ServedModel
from derender.core.state.stream import StreamState
from derender.core.streaming import (
    ChoiceStep,
    StreamSettings,
    run_stream,
    stream_chunks,
    stream_usage,
)
from derender.core.usage import usage

if TYPE_CHECKING:
    from derender.contract.responses import (
        ChatChoice,
        ChatChunkChoice,
        ChatCompletion,
        ChatCompletionChunk,
        ChatDelta,
        ChatLogprobs,
        ChatMessage,
        ToolCall,
    )

PARSER_NEEDS_PROMPT_IDS = (
    "prompt_token_ids is required when a tool or reasoning parser is configured. Without it "
    "parse_delta cannot tell whether the prompt left reasoning open (e.g. a chat template that "
    "pre-opens <think>) and would misclassify reasoning content as plain content."
)
PARSER_NEEDS_CHAT_REQUEST = (
    "chat_request is required when a tool or reasoning parser is configured because plain "
    "detokenization would leak raw parser markup into content."
)


def chat_top_logprobs(request: ChatRequest | None) -> int | None:
    """Candidates kept per position (None: all) — vLLM's chat rule."""
    if request is None or not request.logprobs:
        return None
    if request.logprob_token_ids is not None or request.top_logprobs == -1:
        return None
    return request.top_logprobs


def parsed_message(parsing: parsers.ParserSettings, parsed: ParsedDelta, request_id: str,
                   index: int, message: ChatMessage, blank: bool = False) -> None:
    """Content, reasoning and tool calls of a whole parsed output into ``message`` (vLLM
    docs/vllm-compat/api.md §7.1)."""
    calls: dict[int, list[str]] = {}
    ids: dict[int, str] = {}
    for delta in parsed.calls:
        name_args = calls.setdefault(delta.index, ["", ""])
        name_args[0] += delta.name or ""
        name_args[1] += delta.arguments
        if delta.id is not None:
            ids.setdefault(delta.index, delta.id)
    content: str | None = parsed.content or ("" if blank else None)
    if parsing.forced:
        content = content or ""
    message["content"] = content
    empty = "" if (parsing.reasoning is not None and parsing.reasoning.empty_reasoning
                   and parsing.include_reasoning) else None
    message["reasoning"] = parsed.reasoning or empty
    if calls:
        tool_calls: list[ToolCall] = [
            {"id": ids.get(i) or parsers.tool_call_id(request_id, index, i, parsing.tool_format),
             "type": "function",
             "function": {"name": name, "arguments": arguments}}
            for i, (name, arguments) in sorted(calls.items())
        ]
        message["tool_calls"] = tool_calls


def derender_chat(body: DerenderChatRequest, model: ServedModel, max_n_sequences: int
                  ) -> ChatCompletion:
    info, vocab = model.info, model.vocab
    response = body.generate_response
    check_response_bounds(response, info, max_n_sequences)
    check_prompt_length(body.prompt_token_ids, info)
    if info.has_parser and body.chat_request is None:
        raise BadRequestError(PARSER_NEEDS_CHAT_REQUEST)

    request = body.chat_request
    settings = decode_settings(request, preserve_special=info.has_parser)
    parsing = (parsers.parser_settings(info.reasoning_parser, info.tool_parser, request, vocab,
                                       info.response_template)
               if info.has_parser and request is not None else None)
    text_vocab = parsers.marked(vocab) if parsing is not None else vocab
    hide = parsing is not None and not parsing.include_reasoning
    prompt_ids = body.prompt_token_ids
    if prompt_ids is None:
        prompt_ids = response.prompt_token_ids
    check_token_range(prompt_ids, vocab.size, "prompt_token_ids")
    seed = seed_window(vocab, prompt_ids, settings.skip_special)
    keep = chat_top_logprobs(request)
    return_ids = bool(request and request.return_token_ids)

    choices: list[ChatChoice] = []
    completion_tokens = 0
    for choice in response.choices:
        ids = choice.token_ids
        if not ids:
            raise BadRequestError(f"choice {choice.index} has empty or null token_ids")
        check_token_range(ids, vocab.size, f"choice {choice.index}")
        check_logprob_range(choice.logprobs, vocab.size, f"choice {choice.index}")
        completion_tokens += len(ids)
        text, stop_reason = sequence_text(text_vocab, seed, ids, choice.finish_reason,
                                          choice.stop_reason, settings)
        logprobs: ChatLogprobs | None = None
        if choice.logprobs is not None and not hide:
            positions = (resolve_logprobs(vocab, choice.logprobs, keep, ())[0]
                         if choice.logprobs.content is not None else None)
            logprobs = chat_logprobs(positions)
        message: ChatMessage = {"role": "assistant", "content": text, "refusal": None,
                                "annotations": None, "audio": None, "function_call": None,
                                "reasoning": None}
        finish = choice.finish_reason or "stop"
        if parsing is not None:
            # The parser sees only generate_response's prompt ids, as in vLLM
            # (docs/vllm-compat/api.md §7.1).
            start = parsers.start(parsing, vocab, response.prompt_token_ids)
            parsed, end = parsers.step(parsing, start, vocab, text, ids, final=True)
            parsed_message(parsing, parsed, response.request_id, choice.index, message,
                           parsers.blank_content(parsing, end))
            finish = parsers.finish_reason(parsing, finish, "tool_calls" in message) or finish
        choices.append({
            "index": choice.index,
            "message": message,
            "logprobs": logprobs,
            "finish_reason": finish,
            "stop_reason": stop_reason,
            "token_ids": list(ids) if return_ids and not hide else None,
            "routed_experts": None,
            "weight_versions": None,
        })

    prompt_tokens = body.prompt_tokens or 0
    return {
        "id": response.request_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.model or info.name,
        "choices": choices,
        "service_tier": None,
        "system_fingerprint": None,
        "usage": usage(prompt_tokens, completion_tokens),
        "prompt_logprobs": (None if response.prompt_logprobs is None else
                            [None if p is None else {k: v.model_dump() for k, v in p.items()}
                             for p in response.prompt_logprobs]),
        "prompt_token_ids": response.prompt_token_ids if return_ids else None,
        "prompt_text": None,
        "kv_transfer_params": response.kv_transfer_params,
        "ec_transfer_params": None,
        "metrics": None if response.metrics is None else response.metrics.model_dump(),
    }



def derender_chat_stream(
    body: DerenderChatStreamRequest | DerenderChatStreamBatchRequest,
    model: ServedModel,
    state: StreamState | None,
    ttl_seconds: int,
    caller: str | None = None,
) -> tuple[list[ChatCompletionChunk], StreamState]:
    """One ``chat.completion.chunk`` per engine chunk, and the state to continue from (bound
    to ``caller`` when the call has an authenticated one)."""
    info = model.info
    request = body.chat_request
    parsing = None
    if info.has_parser:
        if request is None:
            raise BadRequestError(PARSER_NEEDS_CHAT_REQUEST)
        if body.prompt_token_ids is None:
            raise BadRequestError(PARSER_NEEDS_PROMPT_IDS)
        parsing = parsers.parser_settings(info.reasoning_parser, info.tool_parser, request,
                                          model.vocab, info.response_template)
    settings = StreamSettings("chat", model, decode_settings(request, info.has_parser),
                              chat_top_logprobs(request), ttl_seconds, parsing, caller, request)
    hide = parsing is not None and not parsing.include_reasoning
    return_ids = bool(request and request.return_token_ids) and not hide
    name = body.model or info.name

    def render(chunk: GenerateTokensStreamResponse, step: ChoiceStep | None,
               before: StreamState) -> ChatCompletionChunk:
        choices: list[ChatChunkChoice] = []
        if step is not None:
            logprobs: ChatLogprobs | None = None
            if (step.logprobs is not None or step.logprobs_null_content) and not hide:
                logprobs = chat_logprobs(step.logprobs)
            delta: ChatDelta = {"role": None if before.role_sent else "assistant",
                                "content": step.text or None,
                                "reasoning": step.reasoning or None}
            if step.calls:
                delta["tool_calls"] = [
                    {"id": call.id or parsers.tool_call_id(
                        chunk.request_id, step.index, call.index,
                        parsing.tool_format if parsing else None),
                     "type": "function", "index": call.index,
                     "function": {"name": call.name, "arguments": call.arguments or None}}
                    if call.name is not None else
                    {"id": None, "type": None, "index": call.index,
                     "function": {"name": None, "arguments": call.arguments}}
                    for call in step.calls
                ]
            choices.append({
                "index": step.index,
                "delta": delta,
                "logprobs": logprobs,
                "finish_reason": step.finish_reason,
                "stop_reason": step.stop_reason,
                "token_ids": step.token_ids if return_ids else None,
                "weight_versions": None,
            })
        return {
            "id": chunk.request_id,
            "object": "chat.completion.chunk",
            "created": before.issued_at,
            "model": name,
            "choices": choices,
            "usage": stream_usage(chunk.usage, body.prompt_tokens),
            "system_fingerprint": None,
            "prompt_token_ids": chunk.prompt_token_ids if return_ids else None,
            "prompt_text": None,
            "metrics": None if chunk.metrics is None else chunk.metrics.model_dump(),
            "kv_transfer_params": None,
        }

    return run_stream(settings, state, stream_chunks(body), body.prompt_token_ids, render)
