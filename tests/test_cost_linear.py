"""The parsers' cost is linear in the output (issue 22): for every parser pairing and every
adversarial output of ``tests/cost_cases.py`` (unclosed markers, repeated openers, long names
and values, deep nesting, thousands of calls, a call of thousands of parameters closed or
not, markup mixed at random), the CPU time per input character stays flat as the output
grows 4× and 16×, non-streaming and streamed in batches.

A ratio in one run, not an absolute time: per-character time at 4× and 16× the base size
within ``LIMIT`` of the base's, each the best of a few runs of the process's own CPU time
(other work on the machine does not count); a case past the limit is measured again with
more runs before it fails, so a moment's noise does not fail the suite. The non-streaming
sizes are large enough for the quadratic scans issue 22 found to show (``qwen3_coder``'s
unclosed parameters: 3.2× at 16× on the code before the fix, the DeepSeek heads 7.8×);
streaming is fed in batches, each call bounded by its batch and the state, so it is
measured at smaller sizes. ``bench/cost_sweep.py`` prints the same sweep at larger sizes.
"""

from __future__ import annotations

import pytest

from derender.core.parsers.registry import REASONING_RECORDS, TOOL_RECORDS, Machine
from tests import cost_cases
from tests.cost_cases import PAIRS, pairing_name

pytestmark = pytest.mark.serial  # timing: run alone, after the parallel phase (`make test`)

WHOLE_SIZES = (2000, 8000, 32000)
STREAM_SIZES = (500, 2000, 8000)
LIMIT = 2.5
"""Most per-character time at 4× and 16× the base size, as a multiple of the base's."""


def _ratios(setup: cost_cases.ParserSettings, texts: list[str], streamed: bool, repeats: int
            ) -> tuple[float, ...]:
    costs = [cost_cases.per_char(setup, text, streamed, repeats) for text in texts]
    return tuple(cost / costs[0] for cost in costs[1:])


@pytest.mark.parametrize(("reasoning_parser", "tool_parser"), PAIRS,
                         ids=[pairing_name(r, t) for r, t in PAIRS])
def test_cost_per_character_is_flat(reasoning_parser: str | None, tool_parser: str | None
                                    ) -> None:
    setup = cost_cases.settings(reasoning_parser, tool_parser)
    failures = []
    worst = (0.0, "")
    for case in cost_cases.cases(reasoning_parser, tool_parser):
        for streamed, sizes in ((False, WHOLE_SIZES), (True, STREAM_SIZES)):
            texts = [case.build(n) for n in sizes]
            ratios = _ratios(setup, texts, streamed, 2)
            if max(ratios) > LIMIT:  # measured again, longer, before it counts
                ratios = _ratios(setup, texts, streamed, 6)
            label = f"{case.name} {'streamed' if streamed else 'whole'}"
            worst = max(worst, (max(ratios), label))
            if max(ratios) > LIMIT:
                failures.append(f"{label}: x{ratios[0]:.2f} at 4x, x{ratios[1]:.2f} at 16x")
    print(f"{pairing_name(reasoning_parser, tool_parser)}: worst x{worst[0]:.2f} ({worst[1]})")
    assert not failures, failures


def test_every_parser_is_swept() -> None:
    """A format added to the registry (the breadth issues) must have a template here, so it
    is swept too (Harmony, read from token ids, is not: its held header is bounded in bytes)."""
    tools = {r.name for r in TOOL_RECORDS if r.machine is not Machine.HARMONY}
    thinking = {r.name for r in REASONING_RECORDS if r.machine is not Machine.HARMONY}
    assert tools <= set(cost_cases.TEMPLATES)
    assert thinking <= set(cost_cases.REASONING_TEMPLATES)
    swept = {name for pair in PAIRS for name in pair}
    assert tools | thinking <= swept
