"""Incremental detokenization: vLLM's per-token window algorithm, computed a block at a time.

The reference (vLLM ``detokenize_incrementally``) processes one id at a time: with a window of
pieces ``W`` whose first ``read`` pieces were already emitted, a new piece ``p`` emits
``join(W + [p])[len(join(W[:read])):]`` unless that text is not longer or ends in U+FFFD (an
unfinished multi-byte character), in which case it waits. Chunking never changes the
concatenated text, so streaming and non-streaming share this one machine.

A Python loop over every token would cost several times a plain decode, so each block of ids
first tries a *fast path*: one ``join`` over the window plus the block. When that text has no
U+FFFD at all, every token boundary the reference stops at is a character boundary and its
emissions concatenate to exactly that text. The window that carries on must be the one the
reference holds: when the last piece alone decodes to a clean, non-empty suffix of the text,
the last two steps both emitted and that window is the last piece. Otherwise (the last piece
completes a character begun earlier, or decodes to nothing alone, as a space under a Strip
decoder does) the ids near the end take the exact path: a wider window that merely decodes
alike is not always equivalent (a byte-fallback run that turns invalid later regroups
bytes the reference had already emitted). Anything else (replacement characters, unknown
decoders) takes the exact per-token path too, so the result always equals the reference's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from derender.core.decoding.vocab import REPLACEMENT_CHAR, Vocabulary

BLOCK = 512
"""Ids per fast-path attempt (a window's worth of memory and a bounded retry)."""

EXACT_SPAN = 16
"""Blocks this short that cannot take the fast path go straight to the exact path."""

MAX_WINDOW = 64
"""Pieces the window may hold back. Only a run of this many tokens that never forms a valid
character reaches it; the pending text (with its U+FFFD) is then released so state stays bounded."""

_SEED_IDS = 7
_SEED_WINDOW = 5


@dataclass(frozen=True, slots=True)
class DecodeWindow:
    """Detokenization state: trailing ids and how many of them were already emitted.

    Ids are kept (not pieces) so the state serializes compactly; special ids skipped by
    ``skip_special_tokens`` are never stored.
    """

    ids: tuple[int, ...] = ()
    read: int = 0


def seed_window(vocab: Vocabulary, prompt_ids: Sequence[int] | None, skip_special: bool
                ) -> DecodeWindow:
    """Window that makes the first output token decode as it would after the prompt.

    vLLM maps the last 7 prompt ids to pieces (specials dropped when skipping) and keeps the
    last 5 of them as the window, all counted as read.
    """
    if not prompt_ids:
        return DecodeWindow()
    tail = list(prompt_ids[-_SEED_IDS:])
    if skip_special:
        tail = [i for i in tail if i not in vocab.special_ids]
    kept = tuple(tail[-_SEED_WINDOW:])
    return DecodeWindow(kept, len(kept))


def detokenize(vocab: Vocabulary, window: DecodeWindow, ids: Sequence[int], skip_special: bool,
               spaces: bool = True) -> tuple[str, DecodeWindow]:
    """Text the reference emits for ``ids`` after ``window``, and the window that follows
    (``spaces``: the request's ``spaces_between_special_tokens``)."""
    vocab = vocab.text_view(skip_special, spaces)
    special = vocab.special_ids
    if skip_special and not special.isdisjoint(ids):
        kept = [i for i in ids if i not in special]
    else:
        kept = list(ids)
    parts: list[str] = []
    for start in range(0, len(kept), BLOCK):
        text, window = _block(vocab, window, kept[start:start + BLOCK])
        parts.append(text)
    return "".join(parts), window


def _block(vocab: Vocabulary, window: DecodeWindow, block: list[int]) -> tuple[str, DecodeWindow]:
    """Fast path for the block; if it does not apply, its halves (so only the few ids around
    a U+FFFD take the exact path), down to ``EXACT_SPAN`` ids."""
    if vocab.fast_path:
        fast = _fast_block(vocab, window, block)
        if fast is not None:
            return fast
        if len(block) > EXACT_SPAN:
            half = len(block) // 2
            head, window = _block(vocab, window, block[:half])
            tail, window = _block(vocab, window, block[half:])
            return head + tail, window
    return _exact_block(vocab, window, block)


def _fast_block(vocab: Vocabulary, window: DecodeWindow, block: list[int]
                ) -> tuple[str, DecodeWindow] | None:
    pieces = vocab.pieces
    seq = window.ids + tuple(block)
    seq_pieces = [pieces[i] for i in seq]
    done = vocab.join(seq_pieces[:window.read])
    full = vocab.join(seq_pieces)
    if REPLACEMENT_CHAR in full or not full.startswith(done):
        return None
    tail = vocab.join(seq_pieces[-1:])
    if tail and REPLACEMENT_CHAR not in tail and full.endswith(tail):
        return full[len(done):], DecodeWindow(seq[-1:], 1)
    return None


def _exact_block(vocab: Vocabulary, window: DecodeWindow, block: list[int]
                 ) -> tuple[str, DecodeWindow]:
    """vLLM's algorithm verbatim, one id at a time (prefix offset is 0 after every trim)."""
    pieces = vocab.pieces
    join = vocab.join
    held = [pieces[i] for i in window.ids]
    ids = list(window.ids)
    read = window.read
    parts: list[str] = []
    for token in block:
        ids.append(token)
        held.append(pieces[token])
        done = join(held[:read])
        text = join(held)
        ready = len(text) > len(done) and not text.endswith(REPLACEMENT_CHAR)
        if ready or len(held) > MAX_WINDOW:
            parts.append(text[len(done):])
            del ids[:read], held[:read]
            read = len(ids)
    return "".join(parts), DecodeWindow(tuple(ids), read)
