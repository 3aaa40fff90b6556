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
a stream cannot know a call will follow). Past ``MAX_HELD`` the held text is content and so is
all that follows (no call): README compatibility.

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
from derender.core.parsers.primitives import MAX_LEADING_SPACE, forced_call, split_space
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

OPEN, HELD, TEXT, DONE = range(4)
"""Before an opener (content streams); from it (all held); all content (the held text
overflowed); "required" past its bound (nothing more is read)."""

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


def _openers(buffer: str, spoke: bool) -> int:
    """Where the first opener begins in ``buffer`` (-1: none)."""
    if not spoke:
        body = buffer.lstrip()
        if body[:1] == "[" and len(buffer) - len(body) <= MAX_LEADING_SPACE:
            return len(buffer) - len(body)
    found = [at for at in (buffer.find(opener) for opener in OPENERS) if at >= 0]
    return min(found, default=-1)


def _settle(state: XlamState, held: str, final: bool) -> tuple[str, list[ToolCallDelta],
                                                                XlamState]:
    """The held text: at the end of the output read as vLLM reads it; past ``MAX_HELD``,
    content (and all that follows)."""
    if utf8_size(held) > MAX_HELD:
        return held, [], replace(state, mode=TEXT, held="", spoke=True)
    if not final:
        return "", [], replace(state, mode=HELD, held=held)
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
    if state.mode == TEXT:
        return text, [], state
    buffer = state.held + text
    if state.mode == HELD:
        return _settle(state, buffer, final)
    at = _openers(buffer, state.spoke)
    if at < 0:  # content, less what may begin an opener and the whitespace ending it
        if final:
            return buffer, [], replace(state, held="", spoke=state.spoke or bool(buffer))
        hold = pending_prefix(buffer, OPENERS)
        out, space = split_space(buffer[:len(buffer) - hold], MAX_LEADING_SPACE)
        return out, [], replace(state, held=space + buffer[len(buffer) - hold:],
                                spoke=state.spoke or bool(out))
    out, space = split_space(buffer[:at], MAX_LEADING_SPACE)
    state = replace(state, spoke=state.spoke or bool(out))
    content, calls, state = _settle(state, space + buffer[at:], final)
    return out + content, calls, state


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
