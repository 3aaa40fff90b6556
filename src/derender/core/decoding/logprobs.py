"""Engine logprobs (integer ids) to OpenAI logprobs (token strings and UTF-8 bytes).

Each id is decoded on its own (docs/vllm-compat/api.md §5.8). A character split over several byte
tokens decodes to U+FFFD on its own; the *byte-fallback correction* decodes it again with up to four
preceding sampled ids and keeps only what those add, so the character is reported whole on its last
token and the earlier ones report ``""``. The sampled ids of earlier chunks travel in the
stream state as the context list.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from derender.contract.requests import GenerateLogProbs
from derender.core.decoding.vocab import REPLACEMENT_CHAR, Vocabulary

if TYPE_CHECKING:
    from derender.contract.responses import ChatLogprobs, CompletionLogprobs

CONTEXT_IDS = 4
"""How many previously sampled ids the correction looks back over (and the state keeps)."""


@dataclass(frozen=True, slots=True)
class Resolved:
    """One position's sampled token and kept candidates as (string, bytes, logprob)."""

    token: str
    token_bytes: list[int] | None
    logprob: float
    candidates: list[tuple[str, list[int] | None, float]]
    had_candidates: bool
    """Whether the engine sent any candidate at all (completions: ``null`` vs ``{}``)."""


class TokenText:
    """Per-request memo of single-id decodes: vocabularies repeat ids across positions."""

    def __init__(self, vocab: Vocabulary) -> None:
        self._vocab = vocab
        self._single: dict[int, str] = {}

    def prime(self, ids: Iterable[int]) -> None:
        """Decode all unseen ids in one tokenizer call."""
        todo = list({i for i in ids if i not in self._single})
        if todo:
            self._single.update(zip(todo, self._vocab.decode_each(todo), strict=True))

    def single(self, token_id: int) -> str:
        text = self._single.get(token_id)
        if text is None:
            text = self._single[token_id] = self._vocab.decode([token_id])
        return text

    def resolve(self, token_id: int, context: Sequence[int]) -> tuple[str, list[int] | None]:
        """The token string and bytes vLLM reports for ``token_id`` after ``context``."""
        vocab = self._vocab
        piece = vocab.pieces[token_id]
        if not piece:
            return "", None
        text = self.single(token_id)
        marker = vocab.space_marker
        if marker is not None:
            missing = (len(piece) - len(piece.lstrip(marker))) - (len(text) - len(text.lstrip(" ")))
            if missing > 0:
                text = " " * missing + text
        if text.endswith(REPLACEMENT_CHAR):
            text = self._byte_fallback(token_id, context)
        return text, list(text.encode("utf-8", "surrogatepass"))

    def _byte_fallback(self, token_id: int, context: Sequence[int]) -> str:
        for j in range(1, min(CONTEXT_IDS, len(context)) + 1):
            ctx = list(context[-j:])
            full = self._vocab.decode([*ctx, token_id])
            if full.endswith(REPLACEMENT_CHAR):
                continue
            while ctx and self.single(ctx[-1]).endswith(REPLACEMENT_CHAR):
                ctx.pop()
            clean = self._vocab.decode(ctx) if ctx else ""
            if full.startswith(clean):
                return full[len(clean):]
            shared = next((n for n, (a, b) in enumerate(zip(full, clean, strict=False))
                           if a != b),
                          min(len(full), len(clean)))
            return full[shared:]
        return ""


def resolve_logprobs(
    vocab: Vocabulary,
    logprobs: GenerateLogProbs,
    keep: int | None,
    context: Sequence[int],
) -> tuple[list[Resolved], list[int]]:
    """Resolve every position; ``keep`` candidates per position (all when None).

    Returns the positions and the context (last sampled ids) to carry forward.
    """
    content = logprobs.content or []
    texts = TokenText(vocab)
    texts.prime(
        i for entry in content
        for i in (entry.token_id, *(c.token_id for c in entry.top_logprobs[:keep]))
    )
    running = list(context)
    out: list[Resolved] = []
    for entry in content:
        token, token_bytes = texts.resolve(entry.token_id, running)
        kept = entry.top_logprobs if keep is None else entry.top_logprobs[:keep]
        candidates = [(*texts.resolve(c.token_id, running), c.logprob) for c in kept]
        out.append(Resolved(token, token_bytes, entry.logprob, candidates,
                            bool(entry.top_logprobs)))
        running.append(entry.token_id)
    return out, running[-CONTEXT_IDS:]


def chat_logprobs(positions: list[Resolved] | None) -> ChatLogprobs:
    """OpenAI chat shape: ``{"content": [{token, logprob, bytes, top_logprobs}]}``."""
    if positions is None:
        return {"content": None}
    return {"content": [
        {"token": p.token, "logprob": p.logprob, "bytes": p.token_bytes,
         "top_logprobs": [{"token": s, "logprob": lp, "bytes": b} for s, b, lp in p.candidates]}
        for p in positions
    ]}


def completion_logprobs(positions: list[Resolved], text_offset: int
                        ) -> tuple[CompletionLogprobs, int]:
    """OpenAI completions shape, offsets counted in token-string code points from
    ``text_offset``; returns it and the offset after the last token."""
    offsets: list[int] = []
    for p in positions:
        offsets.append(text_offset)
        text_offset += len(p.token)
    return {
        "text_offset": offsets,
        "token_logprobs": [p.logprob for p in positions],
        "tokens": [p.token for p in positions],
        "top_logprobs": [
            {s: lp for s, _, lp in p.candidates} if p.had_candidates else None
            for p in positions
        ],
    }, text_offset
