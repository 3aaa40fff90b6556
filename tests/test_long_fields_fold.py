"""Every pairing's stream folds to its own message with fields past every hold's bound.

The per-format split properties draw markup from short pieces, which seldom pass a hold's
bound (``MAX_HELD_SPACE``, ``MAX_RAW``, ``MAX_NAME``, …). Here each pairing's call template
(``tests/cost_cases``) is filled as ``tests/test_state_bounds.py`` fills it: names, values and
the whitespace around the markup in 4-byte and 3-byte characters, up to well past every bound,
cut anywhere. The output read whole (the non-streaming answer: the machine fed everything at
once) must equal the fold of the same output cut at one to four places: a bound is a place in
the output, not the end of a chunk (docs/design.md).

Where a README compatibility row says that only a stream can pass a bound (the message read
whole does not apply it), the pairing is listed in ``STREAM_ONLY_BOUNDS`` with that row, and the
row is checked to exist.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from derender.core import parsers
from derender.core.parsers.primitives import merge
from tests import cost_cases
from tests.test_state_bounds import CASES, IDS, _setup, outputs

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")

STREAM_ONLY_BOUNDS = {
    "-+cohere_command3": "Cohere Command: held text",
    "-+cohere_command4": "Cohere Command: held text",
    "cohere_command3+-": "Cohere Command: held text",
    "cohere_command4+-": "Cohere Command: held text",
    "olmo3+-": "`olmo3` reasoning: where it starts and ends",
    "olmo3+olmo3": "`olmo3` reasoning: where it starts and ends",
    "nemotron_v3+-+force-content": "`nemotron_v3` reasoning/content swap",
    "nemotron_v3+qwen3_coder+force-content": "`nemotron_v3` reasoning/content swap",
    "granite_thinking_parser+qwen3_coder+force-content": "`granite_thinking_parser` streams",
    "-+hf": "`hf`, `beam` (response template): bounds",
    "-+beam": "`hf`, `beam` (response template): bounds",
    "hf+hf": "`hf`, `beam` (response template): bounds",
    "beam+beam": "`hf`, `beam` (response template): bounds",
}
"""Pairings with a bound that only a stream passes, and the README row that says so."""


def read(setup: parsers.ParserSettings, pieces: list[str]
         ) -> tuple[str, str, list[tuple[int, str | None, str]]]:
    """Reasoning, content and calls (index, name, arguments) of ``pieces``, the last final."""
    state = cost_cases.start(setup)
    reasoning, content, calls = [], [], []
    for k, piece in enumerate(pieces):
        delta, state = parsers.feed(setup, state, piece, k == len(pieces) - 1)
        reasoning.append(delta.reasoning)
        content.append(delta.content)
        calls.extend(delta.calls)
    merged = merge(sorted(calls, key=lambda call: call.index))  # (stable: chunk order kept)
    return "".join(reasoning), "".join(content), [(c.index, c.name, c.arguments) for c in merged]


def test_each_stream_only_bound_is_a_readme_row() -> None:
    assert set(STREAM_ONLY_BOUNDS) <= set(IDS)
    for row in set(STREAM_ONLY_BOUNDS.values()):
        assert f"| {row} |" in README, row


FOLDING = [(case, name) for case, name in zip(CASES, IDS, strict=True)
           if name not in STREAM_ONLY_BOUNDS]


@pytest.mark.parametrize(("case", "name"), FOLDING, ids=[name for _, name in FOLDING])
def test_a_long_output_cut_anywhere_reads_as_the_whole(
        case: tuple[str | None, str | None, bool], name: str) -> None:
    reasoning_parser, tool_parser, forced_content = case
    setup = _setup(reasoning_parser, tool_parser, forced_content)

    @settings(max_examples=15, deadline=None)
    @given(outputs(reasoning_parser, tool_parser), st.data())
    def check(text: str, data: st.DataObject) -> None:
        cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), min_size=1, max_size=4),
                                label="cuts"))
        bounds = [0, *cuts, len(text)]
        pieces = [text[a:b] for a, b in pairwise(bounds)]
        assert read(setup, pieces) == read(setup, [text]), (name, cuts)

    check()


@pytest.mark.parametrize(("tool_parser", "text"), [
    # a terminal that a longer one grows from, cut between them (engine._may_grow)
    ("minimax_m3", ']<]minimax[>[<tool_call>]<]minimax[>[<invoke name="'),
    ("minimax_m3", ']<]minimax[>[<tool_call>]<]minimax[>[<invoke name="f">'
                   ']<]minimax[>[<parameter name="a">1]<]minimax[>[</parameter>'),
])
def test_short_outputs_random_draws_found_read_alike_at_every_cut(tool_parser: str,
                                                                  text: str) -> None:
    setup = _setup(None, tool_parser, False)
    whole = read(setup, [text])
    for cut in range(len(text) + 1):
        assert read(setup, [text[:cut], text[cut:]]) == whole, cut
