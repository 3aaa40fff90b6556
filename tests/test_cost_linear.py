"""The parsers' cost is linear in the output (issue 22): for every parser pairing and every
adversarial output of ``tests/cost_cases.py`` (unclosed markers, repeated openers, long names
and values, deep nesting, thousands of calls, a call of thousands of parameters closed or
not, markup mixed at random), the CPU time per input character stays flat as the output
grows 4× and 16×, non-streaming and streamed in batches.

A ratio in one run, not an absolute time: per-character time at 4× and 16× the base size
within ``LIMIT`` of the base's, each from one run of the process's own CPU time (other work on
the machine does not count); a case past the limit is measured again, the best of six runs,
before it fails, so a moment's noise does not fail the suite. The non-streaming
sizes are large enough for the quadratic scans issue 22 found to show (``qwen3_coder``'s
unclosed parameters: 3.2× at 16× on the code before the fix, the DeepSeek heads 7.8×);
streaming is fed in batches, each call bounded by its batch and the state, so it is
measured at smaller sizes. ``bench/cost_sweep.py`` prints the same sweep at larger sizes.

The formats that read their text by position (hermes, llama3_json, pythonic, gemma4, mistral)
are held to more: time per input byte at 16x the small input within 2.0x of the small input's
(they copied the rest of the text at every marker: llama3_json 2.9x at 16x before).
"""

from __future__ import annotations

import pytest

from derender.core.parsers import ParserSettings
from derender.core.parsers.registry import REASONING_RECORDS, TOOL_RECORDS, Machine
from tests import cost_cases
from tests.cost_cases import PAIRS, pairing_name

pytestmark = pytest.mark.serial  # timing: run alone, after the parallel phase (`make test`)

WHOLE_SIZES = (2000, 8000, 32000)
STREAM_SIZES = (500, 2000, 8000)
LIMIT = 2.5
"""Most per-character time at 4× and 16× the base size, as a multiple of the base's."""


def _ratios(setup: ParserSettings, texts: list[str], streamed: bool, repeats: int
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
            ratios = _ratios(setup, texts, streamed, 1)
            if max(ratios) > LIMIT:  # measured again, longer, before it counts
                ratios = _ratios(setup, texts, streamed, 6)
            label = f"{case.name} {'streamed' if streamed else 'whole'}"
            worst = max(worst, (max(ratios), label))
            if max(ratios) > LIMIT:
                failures.append(f"{label}: x{ratios[0]:.2f} at 4x, x{ratios[1]:.2f} at 16x")
    print(f"{pairing_name(reasoning_parser, tool_parser)}: worst x{worst[0]:.2f} ({worst[1]})")
    assert not failures, failures


BY_POSITION = ("hermes", "llama3_json", "pythonic", "gemma4", "mistral")
"""The formats that read their text by position (``json_value.scan`` and the machines take a
start, issue 22): they copied the rest of the text at every marker, 3.01x per character at
16x for llama3_json (``bench/cost_sweep.py``, docs/benchmarks.md)."""
BY_POSITION_PAIRS = tuple(pair for pair in PAIRS if pair[1] in BY_POSITION and pair[0] is None)
"""Each of them alone: reading by position is the tool parser's (its pairings with reasoning
parsers are swept by ``test_cost_per_character_is_flat``)."""
BY_POSITION_SIZES = {False: (4000, 64000), True: (500, 8000)}
"""The small and the 16x input, whole and streamed."""
BY_POSITION_LIMIT = 2.0
"""Most time per input byte at 16x the small input, as a multiple of the small input's."""


def _per_byte_ratio(setup: ParserSettings, texts: tuple[str, str], streamed: bool,
                    repeats: int) -> float:
    small, large = (cost_cases.per_char(setup, text, streamed, repeats) * len(text)
                    / len(text.encode("utf-8", "surrogatepass")) for text in texts)
    return large / small


@pytest.mark.parametrize(("reasoning_parser", "tool_parser"), BY_POSITION_PAIRS,
                         ids=[pairing_name(r, t) for r, t in BY_POSITION_PAIRS])
def test_cost_per_byte_is_flat_reading_by_position(reasoning_parser: str | None,
                                                   tool_parser: str | None) -> None:
    """Every adversarial output of a pairing of these formats, non-streaming and streamed:
    the CPU time per input byte of the 16x input within ``BY_POSITION_LIMIT`` of the small
    input's (a ratio in one run; a case past it is measured again, longer, before it
    counts)."""
    setup = cost_cases.settings(reasoning_parser, tool_parser)
    failures = []
    worst = (0.0, "")
    for case in cost_cases.cases(reasoning_parser, tool_parser):
        for streamed, (small, large) in BY_POSITION_SIZES.items():
            texts = (case.build(small), case.build(large))
            ratio = _per_byte_ratio(setup, texts, streamed, 1)
            if ratio > BY_POSITION_LIMIT:  # measured again, longer, before it counts
                ratio = _per_byte_ratio(setup, texts, streamed, 6)
            label = f"{case.name} {'streamed' if streamed else 'whole'}"
            worst = max(worst, (ratio, label))
            if ratio > BY_POSITION_LIMIT:
                failures.append(f"{label}: x{ratio:.2f} per byte at 16x")
    print(f"{pairing_name(reasoning_parser, tool_parser)}: worst x{worst[0]:.2f} per byte "
          f"at 16x ({worst[1]})")
    assert not failures, failures


def test_the_by_position_formats_are_swept() -> None:
    """Each of them is a swept pairing's tool parser (a renamed format fails here, not
    silently out of the test above)."""
    assert {tool for _, tool in BY_POSITION_PAIRS} == set(BY_POSITION)


def test_every_parser_is_swept() -> None:
    """A format added to the registry (the breadth issues) must have a template here, so it
    is swept too (Harmony, read from token ids, is not: its held header is bounded in bytes)."""
    tools = {r.name for r in TOOL_RECORDS if r.machine is not Machine.HARMONY}
    thinking = {r.name for r in REASONING_RECORDS if r.machine is not Machine.HARMONY}
    assert tools <= set(cost_cases.TEMPLATES)
    assert thinking <= set(cost_cases.REASONING_TEMPLATES)
    swept = {name for pair in PAIRS for name in pair}
    assert tools | thinking <= swept
