"""Parse response bodies with the official ``openai`` SDK types, as a real client would."""

from __future__ import annotations

from typing import Any

from openai._models import construct_type
from openai.types import Completion, CompletionChoice, CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice as ChatChoice
from openai.types.chat.chat_completion_chunk import Choice as ChunkChoice


def check_openai_body(body: dict[str, Any]) -> ChatCompletion | Completion:
    """Parse a non-streaming body the way the SDK's client does (``construct_type``) and check
    that every part came out as the SDK's own type.

    A strict ``model_validate`` would refuse what vLLM itself returns (completions
    ``top_logprobs`` entries that are ``null``, ``finish_reason`` null or ``"abort"``), so the
    client's parse is the bar: it is what an application using the SDK sees.
    """
    kind = {"chat.completion": ChatCompletion, "text_completion": Completion}[body["object"]]
    parsed = construct_type(type_=kind, value=body)
    assert isinstance(parsed, kind)
    assert parsed.id == body["id"] and parsed.model == body["model"]
    assert isinstance(parsed.usage, CompletionUsage)
    assert parsed.usage.total_tokens == parsed.usage.prompt_tokens + parsed.usage.completion_tokens
    assert len(parsed.choices) == len(body["choices"])
    for choice, raw in zip(parsed.choices, body["choices"], strict=True):
        if isinstance(parsed, ChatCompletion):
            assert isinstance(choice, ChatChoice)
            assert isinstance(choice.message, ChatCompletionMessage)
            assert choice.message.role == "assistant"
            assert choice.message.content == raw["message"]["content"]
        else:
            assert isinstance(choice, CompletionChoice)
            assert choice.text == raw["text"]
    return parsed


def check_openai_chunk(chunk: dict[str, Any]) -> ChatCompletionChunk | Completion:
    """Parse one streamed chunk as the SDK's stream iterator does."""
    kind = {"chat.completion.chunk": ChatCompletionChunk,
            "text_completion": Completion}[chunk["object"]]
    parsed = construct_type(type_=kind, value=chunk)
    assert isinstance(parsed, kind)
    assert parsed.id == chunk["id"] and len(parsed.choices) == len(chunk["choices"])
    for choice, raw in zip(parsed.choices, chunk["choices"], strict=True):
        if isinstance(parsed, ChatCompletionChunk):
            assert isinstance(choice, ChunkChoice)
            assert choice.delta.content == raw["delta"]["content"]
        else:
            assert isinstance(choice, CompletionChoice)
            assert choice.text == raw["text"]
    if chunk.get("usage") is not None:
        assert isinstance(parsed.usage, CompletionUsage)
    return parsed
