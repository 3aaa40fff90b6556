"""xLAM's JSON calls: ``xlam``, vLLM 0.33's ``xLAMToolParser``
(``vllm/tool_parsers/xlam_tool_parser.py``; docs/vllm-compat/xlam.md).

vLLM reads one JSON text, the first of: the text after the first ``</think>`` (stripped) if it
is JSON, else the first JSON match of the patterns below within it; the first JSON match of
` ```(?:json)?\\s*(…)``` `, ``[TOOL_CALLS](…)`` (to the line's end), ``<tool_call>(…)
</tool_call>`` (each pattern in turn) over the whole output; the whole output if it starts
with ``[`` (after whitespace). That JSON must be a list; its elements holding ``"name"`` and
``"arguments"`` are the calls (object arguments written anew, string arguments as their text,
any other value fails the whole answer). Content: the output up to its ``</think>``; the output
with every match of the pattern removed; none for a bare list — each stripped at both ends.
With no call (no JSON found, not a list, no element a call) the whole output is content.

The answer depends on the whole output (a bare list followed by text is no call), so the
machine holds: before any opener (` ``` `, ``[TOOL_CALLS]``, ``<tool_call>``, ``</think>``, or
``[`` opening the output) text streams as content, the whitespace ending it held (up to
``MAX_LEADING_SPACE``, as is an opener's beginning); from the first opener on the text is held
to the end of the output, at most ``MAX_HELD`` bytes of UTF-8, and then read as vLLM reads it
(``answer``), the content streamed before it in front (whitespace starting it is not stripped:
a stream cannot know a call will follow). An opener more than ``MAX_HELD`` bytes from the end
of the output is content, and reading goes on after it (so a code block in the content does
not hide a list after it; a longer list is content): README compatibility.

Under a forced ``tool_choice`` vLLM's JSON path reads the output (``primitives.forced_call``
for a named function; "required": the output held to its end, at most ``MAX_HELD`` bytes, as a
list of ``{"name", "parameters"}``), as for ``step3``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from derender.core.decoding.markers import pending_prefix
from derender.core.parsers.formats.qwen3_coder import _listed_calls
from derender.core.parsers.primitives import (
    MAX_LEADING_SPACE,
    forced_call,
    skip_space,
    split_space,
)
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer, utf8_size

MAX_HELD = 4096
"""Bytes (UTF-8, as the state holds them) of text held from the first opener to the end."""

END_THINK = "</think>"
OPENERS = ("```", "[TOOL_CALLS]", "<tool_call>", END_THINK)
"""The texts from which the output is held (besides ``[`` opening it)."""
PATTERNS = ("```", "[TOOL_CALLS]", "<tool_call>")
"""vLLM's ``json_code_block_patterns``, tried in this order, by their opening text:
` ```(?:json)?\\s*([\\s\\S]*?)``` `, ``\\[TOOL_CALLS\\]([\\s\\S]*?)(?=\\n|$)``,
``<tool_call>([\\s\\S]*?)</tool_call>`` (read by ``_matches``, in one pass)."""
_CLOSERS = {"```": "```", "[TOOL_CALLS]": "\n", "<tool_call>": "</tool_call>"}
_FENCE_SPACE = re.compile(r"\s*")

OPEN, HELD, DONE = range(3)
"""Before an opener (content streams); from it (all held); "required" past its bound (nothing
more is read)."""

_SPOKEN = "x"
"""Stands for the content already streamed when the held text is read: a character that is
neither whitespace nor part of an opener, so vLLM's reading keeps it first."""


@dataclass(frozen=True, slots=True)
class XlamState(ToolState):
    mode: int = OPEN
    held: str = ""
    space: str = ""
    """A named ``tool_choice``'s leading whitespace (``forced_call``)."""
    spoke: bool = False
    """Content was streamed."""
    calls: int = 0
    blank: bool = False
    """Calls were returned with nothing else left as content: the message's content is ``""``
    (vLLM's, for a block's calls), not null."""


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _matches(opener: str, text: str) -> list[tuple[int, int, str]]:
    """The matches ``re.findall`` finds of the pattern opening with ``opener``: (start, end,
    group), read in one pass with ``str.find`` (the regular expression, lazy up to its closer,
    scans to the end from every opener that has none: quadratic in the held text). When an
    opener has no closer after it, no later one has."""
    closer, found, at = _CLOSERS[opener], [], 0
    while (start := text.find(opener, at)) >= 0:
        body = start + len(opener)
        if opener == "```":
            body += 4 if text.startswith("json", body) else 0
            match = _FENCE_SPACE.match(text, body)
            body = body if match is None else match.end()
        end = text.find(closer, body)
        if end < 0 and closer != "\n":
            break
        if end < 0:  # [TOOL_CALLS]: to the line's end or the text's
            end = len(text)
        found.append((start, end if closer == "\n" else end + len(closer), text[body:end]))
        at = found[-1][1]
    return found


def _preprocess(output: str) -> tuple[str | None, str | None]:
    """vLLM's ``preprocess_model_output``: (content, the JSON text read or None)."""
    at = output.find(END_THINK)
    if at >= 0:
        content = output[:at + len(END_THINK)].strip()
        thinking = output[at + len(END_THINK):].strip()
        if _is_json(thinking):
            return content, thinking
        for opener in PATTERNS:
            for _, _, found in _matches(opener, thinking):
                if _is_json(found):
                    return content, found
    for opener in PATTERNS:
        matches = _matches(opener, output)
        for _, _, found in matches:
            if _is_json(found):
                kept, at = [], 0
                for start, end, _ in matches:  # every match removed
                    kept.append(output[at:start])
                    at = end
                return ("".join(kept) + output[at:]).strip(), found
    if output.strip().startswith("[") and (_is_json(output) or (
            "{" in output and "name" in output and "arguments" in output)):
        return None, output
    return output, None


def answer(output: str) -> tuple[str | None, list[tuple[str, str]]]:
    """vLLM's message for ``output``: (content, calls); no call: the whole output is content."""
    content, listed = _preprocess(output)
    if not listed:
        return output, []
    try:
        data: Any = json.loads(listed)
    except (ValueError, RecursionError):
        return output, []
    if not isinstance(data, list):
        return output, []
    calls: list[tuple[str, str]] = []
    for call in data:
        if not isinstance(call, dict) or "name" not in call or "arguments" not in call:
            continue
        name, arguments = call["name"], call["arguments"]
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments, ensure_ascii=False)
        if not isinstance(name, str) or not isinstance(arguments, str):
            return output, []  # vLLM's FunctionCall refuses it: the whole answer fails
        calls.append((name, arguments))
    return (content, calls) if calls else (output, [])


class _Openers:
    """Where the next opener begins in a text, from a position on, each opener's next place
    kept (a text is searched once per opener and place, not again on every call)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.next = dict.fromkeys(OPENERS, -2)

    def first(self, pos: int, spoke: bool) -> int:
        """The first opener at or after ``pos`` (-1: none); before any content, ``[`` opening
        the text after at most ``MAX_LEADING_SPACE`` whitespace is one."""
        text = self.text
        if not spoke:
            lead = skip_space(text, pos)
            if text[lead:lead + 1] == "[" and lead - pos <= MAX_LEADING_SPACE:
                return lead
        best = -1
        for opener, known in self.next.items():
            at = known
            if at == -2 or (0 <= at < pos):
                at = self.next[opener] = text.find(opener, pos)
            if at >= 0 and (best < 0 or at < best):
                best = at
        return best


def _last_demoted(buffer: str, opener: int, pos: int, size: int) -> int:
    """Where reading goes on after every opener from ``opener`` on that is more than
    ``MAX_HELD`` bytes from the end of ``buffer`` (``size``: the bytes from ``pos``), as one
    demotion after another would find them (in one step: a text of many openers would
    otherwise cost a step each)."""
    data = buffer[pos:].encode("utf-8", "surrogatepass")
    drop = size - MAX_HELD
    while drop < len(data) and data[drop] & 0xC0 == 0x80:
        drop += 1
    t = pos + len(data[:drop].decode("utf-8", "surrogatepass"))
    """The first place less than ``MAX_HELD`` bytes from the end: an opener before it is
    content."""
    best = -1
    for text in OPENERS:
        at = buffer.rfind(text, opener, t + len(text) - 1)
        if at >= 0 and text == "```":  # openers in a run of backticks: every third
            start = opener + len(buffer[opener:at].rstrip("`"))
            at = start + 3 * ((at - start) // 3)
        if at >= 0:
            best = max(best, at + len(text))
    return best


def _read(state: XlamState, held: str) -> tuple[str, list[ToolCallDelta], XlamState]:
    """The held text at the end of the output, read as vLLM reads the whole output (the
    content streamed before it standing in front)."""
    content, calls = answer(_SPOKEN + held if state.spoke else held)
    if state.spoke and content is not None:
        content = content[len(_SPOKEN):]
    deltas = [ToolCallDelta(i, name, arguments) for i, (name, arguments) in enumerate(calls)]
    return content or "", deltas, replace(state, mode=HELD, held="", calls=len(calls),
                                          blank=bool(calls) and content == "")


def feed(state: XlamState, text: str, final: bool, context: ToolContext
         ) -> tuple[str, list[ToolCallDelta], XlamState]:
    """Content and tool-call deltas of new text; ``final`` settles what was held back."""
    if context.forced_name is not None:
        return forced_call(state, text, final, context, MAX_LEADING_SPACE)
    if context.required:
        return _required(state, text, final)
    buffer, mode, spoke = state.held + text, state.mode, state.spoke
    openers = _Openers(buffer)
    out: list[str] = []
    pos, size = 0, utf8_size(buffer)
    """Where the text not yet read or held begins, and the size in bytes of the text from
    there."""
    while True:
        if mode == OPEN:
            at = openers.first(pos, spoke)
            if at < 0:  # content, less what may begin an opener and the whitespace ending it
                hold = 0 if final else min(pending_prefix(buffer, OPENERS), len(buffer) - pos)
                piece, space = split_space(buffer[pos:len(buffer) - hold], MAX_LEADING_SPACE)
                if final:
                    piece, space = piece + space, ""
                out.append(piece)
                spoke, buffer = spoke or bool(piece), space + buffer[len(buffer) - hold:]
                break
            piece, space = split_space(buffer[pos:at], MAX_LEADING_SPACE)
            out.append(piece)
            spoke, mode = spoke or bool(piece), HELD
            pos, size = pos + len(piece), size - utf8_size(piece)
        if size > MAX_HELD:  # the opener is content; reading goes on after it
            lead = skip_space(buffer, pos)
            cut = next((len(o) for o in OPENERS if buffer.startswith(o, lead)), 1) + lead
            cut = max(cut, _last_demoted(buffer, lead, pos, size))
            out.append(buffer[pos:cut])
            spoke, mode = True, OPEN
            pos, size = cut, size - utf8_size(out[-1])
            continue
        if final:
            content, calls, state = _read(replace(state, spoke=spoke), buffer[pos:])
            return "".join(out) + content, calls, state
        buffer = buffer[pos:]
        break
    return "".join(out), [], replace(state, mode=mode, held=buffer, spoke=spoke)


def _required(state: XlamState, text: str, final: bool
              ) -> tuple[str, list[ToolCallDelta], XlamState]:
    """vLLM's JSON path under "required": the output held to its end (at most ``MAX_HELD``
    bytes, else no call) and read as a list of ``{"name", "parameters"}``; no content."""
    if state.mode == DONE:
        return "", [], state
    listed = state.held + text
    if final:
        return "", _listed_calls(listed), replace(state, held="")
    if utf8_size(listed) > MAX_HELD:
        return "", [], replace(state, mode=DONE, held="")
    return "", [], replace(state, held=listed)


def blank_content(state: XlamState) -> bool:
    return state.blank


def _encode(state: XlamState, w: Writer) -> None:
    w.uint(state.mode)
    w.text(state.held)
    w.text(state.space)
    w.uint(int(state.spoke) | int(state.blank) << 1)
    w.uint(state.calls)


def _decode(r: Reader) -> XlamState:
    mode, held, space, bits, calls = r.uint(), r.text(), r.text(), r.uint(), r.uint()
    if mode > DONE or bits > 3:
        raise ValueError("not an xlam state")
    return XlamState(mode, held, space, bool(bits & 1), calls, bool(bits & 2))


FORMAT: ToolFormat[XlamState] = ToolFormat("xlam", XlamState, XlamState, feed, _encode,
                                           _decode, blank_content=blank_content)
