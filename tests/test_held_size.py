"""The held-call machines carry their held text's size in the state (``hy.Hy4State.size``,
``poolside.PoolsideState.size``, muse's ``MuseState.held_size``; not encoded: the decoder
takes it from the bytes it read) instead of measuring the whole held text on every chunk
(docs/benchmarks.md section 22). At every step of a stream, and after each state's encode and
decode as between two calls, a size carried is the held text's (``utf8_size``), and the stream
reads the same whether its states go through the codec or not."""

from __future__ import annotations

from typing import Any

import pytest

from derender.core.parsers import tool_format
from derender.core.parsers.tools import ToolContext
from derender.core.state.codec import Reader, Writer, utf8_size
from tests.cost_cases import TEMPLATES, TOOLS

SIZE_FIELD = {"hy_v4": "size", "step3": "size", "k2_horizon": "size", "poolside_v1": "size",
              "dots": "size", "minicpm5": "size", "muse": "held_size"}
VALUE = "notes é 😀 \ud800 " * 40  # not ASCII (a lone surrogate too): sizes are not lengths
CONTEXT = ToolContext(tools=list(TOOLS))


def _stream(name: str, through_codec: bool) -> tuple[str, list[Any], int]:
    """Content and calls of the template fed 7 characters at a time; how many states carried
    a size. Every carried size is checked against the held text."""
    fmt = tool_format(name)
    text = TEMPLATES[name].replace("NAME", "f").replace("VALUE", VALUE)
    pieces = [text[i:i + 7] for i in range(0, len(text), 7)]
    state, content, calls, carried = fmt.start(), [], [], 0
    for k, piece in enumerate(pieces):
        said, deltas, state = fmt.feed(state, piece, k == len(pieces) - 1, CONTEXT)
        content.append(said)
        calls.extend((d.index, d.name, d.arguments) for d in deltas)
        if through_codec:
            w = Writer()
            fmt.encode(state, w)
            reader = Reader(bytes(w.out))
            decoded = fmt.decode(reader)
            assert decoded == state and reader.pos == len(w.out)
            assert getattr(decoded, SIZE_FIELD[name]) == utf8_size(decoded.held)
            state = decoded
        size = getattr(state, SIZE_FIELD[name])
        if size >= 0:
            assert size == utf8_size(state.held), (k, piece)
            carried += 1
    return "".join(content), calls, carried


@pytest.mark.parametrize("name", sorted(SIZE_FIELD))
def test_the_size_carried_is_the_held_texts(name: str) -> None:
    read = _stream(name, through_codec=True)
    alone = _stream(name, through_codec=False)
    assert read[:2] == alone[:2]
    assert read[1], "the template's call is read"
    assert alone[2] > 20, "the held call's size is carried from chunk to chunk"
