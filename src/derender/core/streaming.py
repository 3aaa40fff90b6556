"""Streaming derender: one engine chunk (of one choice) in, one OpenAI chunk out.

Each call resumes from a ``StreamState`` and returns the next one; the app carries it in the
signed token. The text machinery is the non-streaming one (``detokenize``, stop-token
dropping), so for any split of a sequence into chunks the concatenated text equals the
non-streaming text. Stop strings work while streaming: text that could begin a stop string
is held back in the state until the next characters decide.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from derender.contract.errors import ErrorType
from derender.contract.requests import (
    ChatRequest,
    CompletionRequest,
    GenerateStreamChoice,
    GenerateTokensStreamResponse,
    GenerateUsage,
)
from derender.core import parsers
from derender.core.bounds import check_logprob_range, check_stream_bounds, check_token_range
from derender.core.decoding.detokenizer import detokenize, seed_window
from derender.core.decoding.logprobs import CONTEXT_IDS, Resolved, resolve_logprobs
from derender.core.decoding.markers import pending_prefix
from derender.core.decoding.sequence import DecodeSettings
from derender.core.decoding.stops import (
    StopReason,
    cut_at_stop_string,
    cut_at_stop_string_marked,
    drop_stop_token,
    find_stop_string,
    find_stop_string_marked,
    is_stop_token,
    matched_from,
    pending_prefix_marked,
    stop_string_candidates,
)
from derender.core.decoding.vocab import Vocabulary
from derender.core.errors import BadRequestError, DerenderError
from derender.core.parsers import ParserSettings
from derender.core.parsers.tools import ToolCallDelta
from derender.core.registry import ServedModel
from derender.core.state.canonical import canonical_json
from derender.core.state.stream import StopProgress, StreamState, fingerprint, request_digest
from derender.core.usage import usage
from derender.settings import Settings

if TYPE_CHECKING:
    from derender.contract.responses import Usage

Chunk = TypeVar("Chunk")
Route = Literal["chat", "completions"]

NOT_THIS_STREAM = "stream_state does not belong to this stream"

abandoned: ContextVar[Callable[[], bool] | None] = ContextVar("abandoned", default=None)
"""Set by the app around a call whose client may go away: true once it has; a stream call
then stops before its next chunk (``CallAbandonedError``)."""


class CallAbandonedError(DerenderError):
    """The client went away during the call; nobody reads the answer (499, as nginx logs)."""

    error_type = ErrorType.CLIENT_CLOSED

MAX_CHOICE_INDEX = 1 << 31

MATCHED_HOLD_CHARS = Settings.max_stop_string_chars - 1
"""The most characters held from a matched stop string on while the finish is not known: the
stop-string holdback's bound (one character less than the longest stop string allowed by
default), so the state's size bound is unchanged."""


@dataclass(frozen=True, slots=True)
class StreamSettings:
    """What a stream's requests say about how to derender it (the same on every call)."""

    route: Route
    model: ServedModel
    decode: DecodeSettings
    keep: int | None
    """Logprob candidates kept per position (None: all)."""
    ttl_seconds: int
    parsing: ParserSettings | None = None
    """Reasoning/tool parsing (chat with a parser configured)."""
    caller: str | None = None
    """The authenticated caller (``derender.aws.callers``); None where the call names none."""
    request: ChatRequest | CompletionRequest | None = field(default=None, repr=False,
                                                             compare=False)
    """The embedded request, whose parser inputs (tools...) the binding digests."""
    digest: bytes = field(init=False, repr=False, compare=False)
    """The request-level part of the binding, computed once per call (``request_parts``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "digest", request_digest(canonical_json(self.request_parts())))

    @property
    def text_vocab(self) -> Vocabulary:
        """The vocabulary text is decoded with: markers as stand-ins on the parser path."""
        return self.model.vocab if self.parsing is None else parsers.marked(self.model.vocab)

    def request_parts(self) -> list[Any]:
        """Everything a stream is bound to but the request id, as plain JSON: route, model,
        decode settings, logprob candidates kept, the raw request fields the parsers read
        (tools, tool choice, template kwargs...) when parsing, and the caller.

        Raw request parts rather than ``ParserSettings``: one canonical serialisation, never
        recursive, of what the request said (the parser settings derive from it and the
        model's parser configuration, which the served model's name fixes).
        """
        stops = self.decode.stops
        parser_inputs: list[Any] | None = None
        request = self.request
        if self.parsing is not None and isinstance(request, ChatRequest):
            parser_inputs = [request.tools, request.tool_choice, request.parallel_tool_calls,
                             request.include_reasoning, request.chat_template_kwargs,
                             request.reasoning_effort]
        elif self.parsing is not None:
            parser_inputs = []
        return [
            self.route, self.model.info.name, self.model.vocab.size,
            self.decode.skip_special, stops.has_request, list(stops.stop),
            sorted(stops.stop_token_ids), stops.ignore_eos, stops.include_stop_str_in_output,
            stops.min_tokens, self.keep, parser_inputs,
            *(() if self.caller is None else (self.caller,)),
            *(() if self.decode.spaces else ("no-spaces-between-special-tokens",)),
        ]

    def binding(self, chunk: GenerateTokensStreamResponse) -> bytes:
        """Fingerprint of the request-level digest and the chunk's request id.

        A chunk without its own ``request_id`` (the engine always sends one) binds to none.
        """
        request_id = chunk.request_id if "request_id" in chunk.model_fields_set else None
        return fingerprint(self.digest, request_id)


@dataclass(frozen=True, slots=True)
class ChoiceStep:
    """What one chunk's choice became."""

    index: int
    text: str
    finish_reason: str | None
    stop_reason: StopReason
    logprobs: list[Resolved] | None
    """Resolved positions, or None when the engine sent no logprobs."""
    logprobs_null_content: bool
    """The engine sent ``logprobs: {"content": null}``."""
    text_offset: int
    """Completions: ``text_offset`` of this chunk's first logprob token."""
    token_ids: list[int]
    reasoning: str = ""
    calls: tuple[ToolCallDelta, ...] = ()


def open_stream(settings: StreamSettings, state: StreamState | None,
                chunk: GenerateTokensStreamResponse, prompt_ids: Sequence[int] | None,
                now: int | None = None) -> StreamState:
    """The state to continue from: checked against this stream, or a fresh seeded one."""
    now = int(time.time()) if now is None else now
    binding = settings.binding(chunk)
    if state is None:
        vocab = settings.model.vocab
        seed = prompt_ids if prompt_ids is not None else chunk.prompt_token_ids
        check_token_range(seed, vocab.size, "prompt_token_ids")
        window = seed_window(vocab, seed, settings.decode.skip_special)
        parser = (None if settings.parsing is None else
                  parsers.start(settings.parsing, vocab, prompt_ids))
        return StreamState(fingerprint=binding, issued_at=now, window=window,
                           stop=StopProgress(head_chars=0 if settings.decode.stops.min_tokens
                                             <= 0 else None), parser=parser)
    if state.fingerprint != binding:
        raise BadRequestError(NOT_THIS_STREAM)
    held = (*state.window.ids, *state.logprob_context,
            *(() if state.pending is None else (state.pending,)))
    if held and max(held) >= settings.model.vocab.size:  # signed, but not by this model
        raise BadRequestError("stream_state holds token ids this model does not have")
    if now > state.issued_at + settings.ttl_seconds:
        raise BadRequestError(f"stream_state expired: streams may last "
                              f"{settings.ttl_seconds} seconds from their first chunk")
    return state


def single_choice(chunk: GenerateTokensStreamResponse, route: Route
                  ) -> GenerateStreamChoice | None:
    """The chunk's choice; a stream call carries at most one."""
    if len(chunk.choices) > 1:
        if route == "chat":
            raise BadRequestError("derender_chat_stream expects at most one choice per chunk "
                                  f"(got {len(chunk.choices)}).")
        raise BadRequestError("derender_completion_stream expects at most one choice per chunk")
    return chunk.choices[0] if chunk.choices else None


def advance(settings: StreamSettings, state: StreamState, choice: GenerateStreamChoice
            ) -> tuple[ChoiceStep, StreamState]:
    """Derender one choice chunk from ``state``."""
    vocab = settings.model.vocab
    stops = settings.decode.stops
    if not 0 <= choice.index < MAX_CHOICE_INDEX:
        raise BadRequestError(f"choice index {choice.index} is out of range (0 to "
                              f"{MAX_CHOICE_INDEX - 1})")
    if state.choice_index is not None and state.choice_index != choice.index:
        raise BadRequestError(NOT_THIS_STREAM)
    received = list(choice.token_ids or [])
    check_token_range(received, vocab.size, f"choice {choice.index}")
    check_logprob_range(choice.logprobs, vocab.size, f"choice {choice.index}")

    finish = choice.finish_reason
    ids = received if state.pending is None else [state.pending, *received]
    decoded = state.tokens_seen - (state.pending is not None)  # ids already turned into text
    pending = None
    if finish is None and ids and is_stop_token(vocab, ids[-1], stops):
        pending, ids = ids[-1], ids[:-1]
    kept, stop_reason = drop_stop_token(vocab, ids, finish, choice.stop_reason, stops)
    progress = state.stop
    window = state.window
    if progress.stopped:
        text, finish, stop_reason, pending = "", None, None, None
    else:
        skip, spaces = settings.decode.skip_special, settings.decode.spaces
        head_n = max(0, min(len(kept), stops.min_tokens - decoded))
        head = ""
        if head_n:
            head, window = detokenize(settings.text_vocab, window, kept[:head_n], skip, spaces)
        tail, window = detokenize(settings.text_vocab, window, kept[head_n:], skip, spaces)
        head_chars = progress.head_chars
        if head_chars is None and decoded + len(kept) >= stops.min_tokens:
            head_chars = progress.text_chars + len(head)
        text, progress, matched = _hold_or_cut(
            progress, head + tail, head_chars, settings,
            stops.stop if finish is None else stop_string_candidates(finish, choice.stop_reason,
                                                                     stops),
            final=finish is not None)
        if matched is not None:
            finish, stop_reason = finish or "stop", matched

    parser = state.parser
    reasoning = ""
    calls: tuple[ToolCallDelta, ...] = ()
    if settings.parsing is not None and parser is not None and not state.stop.stopped:
        parsed, parser = parsers.step(settings.parsing, parser, vocab, text, received,
                                      final=finish is not None)
        text, reasoning, calls = parsed.content, parsed.reasoning, tuple(parsed.calls)
        if finish is not None:
            finish = parsers.finish_reason(settings.parsing, finish, parser.calls_kept)

    positions: list[Resolved] | None = None
    offset = state.text_offset
    if choice.logprobs is not None and choice.logprobs.content is not None:
        positions, _ = resolve_logprobs(vocab, choice.logprobs, settings.keep,
                                        state.logprob_context)
    advance_by = sum(len(p.token) for p in positions) if positions else len(text)
    step = ChoiceStep(
        index=choice.index, text=text, finish_reason=finish, stop_reason=stop_reason,
        logprobs=positions,
        logprobs_null_content=choice.logprobs is not None and choice.logprobs.content is None,
        text_offset=offset, token_ids=received, reasoning=reasoning, calls=calls,
    )
    chat = settings.route == "chat"
    return step, StreamState(
        fingerprint=state.fingerprint, issued_at=state.issued_at, choice_index=choice.index,
        role_sent=chat or state.role_sent, window=window,
        logprob_context=(*state.logprob_context, *received)[-CONTEXT_IDS:],
        text_offset=state.text_offset if chat else offset + advance_by,
        tokens_seen=state.tokens_seen + len(received), pending=pending, stop=progress,
        parser=parser,
    )


def _hold_or_cut(progress: StopProgress, new_text: str, head_chars: int | None,
                 settings: StreamSettings, candidates: tuple[str, ...], final: bool
                 ) -> tuple[str, StopProgress, str | None]:
    """Apply stop strings to the text produced so far (those ending after the ``min_tokens``
    head): hold back what could start one, and a matched one with what follows it until the
    finish decides, as vLLM's non-streaming answer applies stop strings only to a "stop"
    finish; at the finish cut there, or flush what is held. A match held past
    ``MATCHED_HOLD_CHARS`` cuts at once (README, Compatibility)."""
    buffer = progress.held + new_text
    start = progress.text_chars - len(progress.held)
    text_chars = progress.text_chars + len(new_text)
    table = parsers.RESTORE_MARKUP if settings.parsing is not None else None  # marked text
    if head_chars is not None and candidates:
        tail = start + len(buffer) - head_chars
        match = (find_stop_string(buffer, tail, candidates) if table is None
                 else find_stop_string_marked(buffer, tail, candidates, table))
        if match is not None:
            at = matched_from(buffer, match, table)
            if final or len(buffer) - at > MATCHED_HOLD_CHARS:
                include = settings.decode.stops.include_stop_str_in_output
                cut = (cut_at_stop_string(buffer, match, include) if table is None
                       else cut_at_stop_string_marked(buffer, match, include, table))
                return cut, StopProgress("", text_chars, head_chars, stopped=True), match[2]
            return buffer[:at], StopProgress(buffer[at:], text_chars, head_chars), None
    stops = settings.decode.stops.stop
    hold = 0 if final else (pending_prefix_marked(buffer, stops, table) if table is not None
                            else pending_prefix(buffer, stops))
    emitted, held = buffer[:len(buffer) - hold], buffer[len(buffer) - hold:]
    return emitted, StopProgress(held, text_chars, head_chars), None


def stream_usage(chunk_usage: GenerateUsage | None, prompt_tokens: int | None) -> Usage | None:
    """Usage of a chunk that reports it: the request's prompt count wins over the engine's."""
    if chunk_usage is None:
        return None
    prompt = prompt_tokens if prompt_tokens is not None else chunk_usage.prompt_tokens or 0
    return usage(prompt, chunk_usage.completion_tokens or 0)


def run_stream(settings: StreamSettings, state: StreamState | None,
               chunks: Sequence[GenerateTokensStreamResponse], prompt_ids: Sequence[int] | None,
               render: Callable[[GenerateTokensStreamResponse, ChoiceStep | None, StreamState],
                                Chunk]) -> tuple[list[Chunk], StreamState]:
    """Derender consecutive chunks of one stream; the same as one call per chunk.

    ``render`` builds a route's chunk from the engine chunk, the step (None without a
    choice) and the state the step started from."""
    out: list[Chunk] = []
    choices = [single_choice(chunk, settings.route) for chunk in chunks]
    check_stream_bounds(chunks, prompt_ids, 0 if state is None else state.tokens_seen,
                        settings.model.info)
    gone = abandoned.get()
    for chunk, choice in zip(chunks, choices, strict=True):
        if gone is not None and gone():
            raise CallAbandonedError("the client closed the connection")
        current = open_stream(settings, state, chunk, prompt_ids)
        step = None
        after = current
        if choice is not None:
            step, after = advance(settings, current, choice)
        out.append(render(chunk, step, current))
        state = after
    if state is None:
        raise BadRequestError("generate_chunks must not be empty")
    return out, state


def stream_chunks(body: Any) -> list[GenerateTokensStreamResponse]:
    """The engine chunks of a stream call: ``generate_chunks`` (batched) or ``generate_chunk``."""
    chunks = getattr(body, "generate_chunks", None)
    if chunks is not None:
        return list(chunks)
    return [body.generate_chunk]
