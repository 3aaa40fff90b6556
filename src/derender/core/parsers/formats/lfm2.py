"""The ``lfm2`` tool-call format (LiquidAI LFM2, LFM2.5): a ``pythonic`` call list inside
``<|tool_call_start|>`` … ``<|tool_call_end|>``, read with vLLM's repairs.

As vLLM 0.33's ``Lfm2ToolParser`` (the markers are special tokens, kept in the text on the
parser path, and matched as text):

- no ``<|tool_call_start|>``: the output as written is the content;
- the block is the text from the first ``<|tool_call_start|>`` to the first
  ``<|tool_call_end|>`` after it (or to the output's end); stripped, it must be ``[`` … ``]``
  and parse as Python after vLLM's repairs, each tried only where the text does not parse
  (raw control characters in strings escaped, zero-padded integers ``07`` read as ``7``, a
  string broken by nested quotes closed at the one quote that makes the text parse, Python
  keywords as parameter names), into a non-empty list of calls (dotted names kept, positional
  arguments ignored, literal values as ``pythonic`` reads them plus sets as lists): else the
  output as written is the content;
- calls read: the content is the text before the block, stripped, and the text after it with
  everything up to its last ``<|tool_call_end|>`` dropped (LFM2 echoes the block), stripped,
  joined by ``"\\n"`` (null when both are empty); a later ``<|tool_call_start|>`` block is
  dropped with the echo or stays text.

One machine for streaming and non-streaming (a filter in front of ``pythonic``'s reader):

- before the block, content streams; whitespace at the output's start (at most
  ``MAX_LEADING_SPACE`` characters) and before the start marker is held, and so is a possible
  start of the marker;
- a block is held until its end marker (at most ``MAX_BLOCK`` characters) and read whole as
  vLLM reads it (``read_block``): calls, or the held text as written is content and so is
  the rest of the output;
- a longer block is read by the ``pythonic`` machine as it arrives, without the repairs
  (README compatibility);
- after the block, its text is held while an end marker may still make it an echo: one that
  starts within ``MAX_AFTER`` characters of the block's end (or of the last such marker,
  whitespace skipped) drops the text before it; past that the text streams and later markers
  stay in it (README compatibility).

Under a forced ``tool_choice`` an output starting with ``{`` or ``[`` (after whitespace) is
read by ``pythonic`` (the JSON-schema forms), anything else as above (vLLM reads only the JSON
forms there: README compatibility).

State: the phase, the held text, the held whitespace, whether content came before the block,
and the ``pythonic`` state of a long block.
"""

from __future__ import annotations

import ast
import json
import keyword
import warnings
from dataclasses import dataclass, field
from typing import Any

from derender.core.parsers.formats import pythonic
from derender.core.parsers.formats.pythonic import PythonicState
from derender.core.parsers.primitives import MAX_LEADING_SPACE, merge, skip_space
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer

START_MARK, END_MARK = "<|tool_call_start|>", "<|tool_call_end|>"
MAX_BLOCK = 1024
"""A block whose end marker starts within this many characters is held and read whole; a
longer one is read as it arrives."""
MAX_AFTER = 512
"""Characters after the block held while a later end marker may drop them."""

OPENING, TEXT, BLOCK, LONG, AFTER, PLAIN, RAW = (
    "opening", "text", "block", "long", "after", "plain", "raw")
"""Phases: at the output's start (whitespace held); content before the block; inside a held
block; inside a long block (the ``pythonic`` machine reads it); after the block's calls;
everything content as written; read by ``pythonic`` alone (forced ``tool_choice``)."""
PHASES = (OPENING, TEXT, BLOCK, LONG, AFTER, PLAIN, RAW)


@dataclass(frozen=True, slots=True)
class Lfm2State(ToolState):
    phase: str = OPENING
    held: str = ""
    """OPENING/TEXT: held whitespace and a possible start of the start marker; BLOCK: the
    block so far; LONG: a possible start of the end marker; AFTER: the text after the block
    (or its trailing whitespace, once ``spilled``)."""
    space: str = ""
    """The whitespace (and the start marker) before the block, put back if it is content."""
    before: bool = False
    """Content came before the block (the text after it is led by ``"\\n"``)."""
    spilled: bool = False
    """AFTER: text after the block was sent (no longer stripped or dropped)."""
    inner: PythonicState = field(default_factory=PythonicState)


def feed(state: Lfm2State, text: str, final: bool, context: ToolContext
         ) -> tuple[str, list[ToolCallDelta], Lfm2State]:
    """Content and tool-call deltas of new text; ``final`` settles what was held back."""
    run = _Run(state, context.spelled(END_MARK))
    buffer = state.held + text
    run.held = ""
    if run.phase == OPENING and (context.forced_name is not None or context.required):
        stripped = buffer.lstrip()
        if not stripped and not final and len(buffer) <= MAX_LEADING_SPACE:
            return "", [], Lfm2State(OPENING, buffer)
        if stripped[:1] in ("{", "["):  # the JSON-schema forms
            run.phase = RAW
    while True:
        phase = run.phase
        if phase == RAW:
            out, more, run.inner = pythonic.feed(run.inner, buffer, final, context)
            run.content.append(out)
            run.deltas += more
            break
        if phase == PLAIN:
            run.content.append(buffer)
            break
        if phase in (OPENING, TEXT):
            buffer = run.text(buffer, final)
        elif phase == BLOCK:
            buffer = run.block(buffer, final, context)
        elif phase == LONG:
            buffer = run.long(buffer, final, context)
        else:
            run.after(buffer, final)
            break
        if run.phase == phase or (phase == OPENING and run.phase == TEXT):
            break  # all of the buffer read (or held)
    return "".join(run.content), merge(run.deltas), run.state()


class _Run:
    """One feed's working copy of the state and what it returns."""

    def __init__(self, state: Lfm2State, end: str) -> None:
        self.ends = (END_MARK,) if end == END_MARK else (END_MARK, end)
        """The end marker as text and as the marked vocabulary's stand-in (vLLM matches
        the text, which the token and the same characters written as text both are)."""
        self.phase, self.held, self.space = state.phase, state.held, state.space
        self.before, self.spilled, self.inner = state.before, state.spilled, state.inner
        self.content: list[str] = []
        self.deltas: list[ToolCallDelta] = []

    def state(self) -> Lfm2State:
        return Lfm2State(self.phase, self.held, self.space, self.before, self.spilled,
                         self.inner)

    def text(self, buffer: str, final: bool) -> str:
        """Content before the block; returns the text after the start marker (phase BLOCK)."""
        at = buffer.find(START_MARK)
        keep = "" if at >= 0 or final else _partial(buffer, START_MARK)
        head = buffer[:at] if at >= 0 else buffer[:len(buffer) - len(keep)]
        body = head.rstrip()
        if body:
            self.content.append(self.space + body)
            self.space, self.phase, self.before = "", TEXT, True
        self.space += head[len(body):]
        if at >= 0:
            self.space += START_MARK
            self.phase = BLOCK
            return buffer[at + len(START_MARK):]
        if final or len(self.space) > MAX_LEADING_SPACE:
            self.content.append(self.space)
            self.space, self.phase = "", TEXT
        self.held = keep
        return ""

    def block(self, buffer: str, final: bool, context: ToolContext) -> str:
        """Hold the block to its end marker and read it whole."""
        at, size = self._find(buffer)
        if at > MAX_BLOCK or (at < 0 and len(buffer) >= MAX_BLOCK + len(END_MARK)):
            return self._long(buffer, context)  # no end marker can start within the bound
        if at < 0 and not final:
            self.held = buffer
            return ""
        body = buffer if at < 0 else buffer[:at]
        calls = read_block(body)
        if calls is None:
            self.content.append(self.space + buffer)
            self.space, self.phase = "", PLAIN
            return ""
        self.space = ""
        for index, (name, arguments) in enumerate(calls):
            self.deltas.append(ToolCallDelta(index, name, arguments))
        self.phase = AFTER
        return "" if at < 0 else buffer[at + size:]

    def _long(self, buffer: str, context: ToolContext) -> str:
        """A block past ``MAX_BLOCK``: the ``pythonic`` machine reads it from its ``[``."""
        lead = len(buffer) - len(buffer.lstrip())
        self.space += buffer[:lead]
        self.phase = LONG
        return buffer[lead:]

    def long(self, buffer: str, final: bool, context: ToolContext) -> str:
        at, size = self._find(buffer)
        if at >= 0:
            piece, rest, last = buffer[:at].rstrip(), buffer[at:], True
        else:
            keep = "" if final else _partial(buffer, END_MARK)
            piece, rest, last = buffer[:len(buffer) - len(keep)], keep, final
        calls = self.inner.calls
        out, more, self.inner = pythonic.feed(self.inner, piece, last, context)
        self.deltas += more
        if self.inner.mode == pythonic.CONTENT:  # unreadable: content as written from here
            self.content.append((self.space if calls == 0 and not more else "") + out)
            self.space, self.phase = "", PLAIN
            return rest
        if at >= 0:
            self.space, self.phase = "", AFTER
            return rest[size:]
        if final:
            self.phase = AFTER
        self.held = rest
        return ""

    def after(self, buffer: str, final: bool) -> None:
        """The text after the block: an echo up to an end marker dropped, stripped. An end
        marker starting within ``MAX_AFTER`` characters (after whitespace) drops the text
        before it; once none can, the text is sent and later markers stay text."""
        if not self.spilled:
            pos = 0  # read in place: a copy of the rest after every marker is quadratic
            while True:
                pos = skip_space(buffer, pos)
                at, size = self._find(buffer, pos)
                if at < 0 or at - pos > MAX_AFTER:
                    break
                pos = at + size
            buffer = buffer[pos:]
            if at < 0 and not final and len(buffer) < MAX_AFTER + len(END_MARK):
                self.held = buffer
                return
        body = buffer.rstrip()
        space = buffer[len(body):]
        excess = max(0, len(space) - MAX_AFTER)  # whitespace past the bound is content
        self._say(body + space[:excess])
        self.held = "" if final else space[excess:]

    def _find(self, text: str, pos: int = 0) -> tuple[int, int]:
        """Where the first end marker from ``pos`` on is in ``text`` and its length; -1:
        none."""
        found = [(text.find(end, pos), len(end)) for end in self.ends]
        found = [f for f in found if f[0] >= 0]
        return min(found) if found else (-1, 0)

    def _say(self, text: str) -> None:
        if not text:
            return
        if not self.spilled and self.before:
            text = "\n" + text
        self.spilled = True
        self.content.append(text)


def _partial(text: str, marker: str) -> str:
    """The longest end of ``text`` that starts ``marker``."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-size:]):
            return text[-size:]
    return ""


# -- a block read whole, as vLLM 0.33's extract_tool_calls reads it


def read_block(block: str) -> list[tuple[str, str]] | None:
    """The calls (name, JSON arguments) of a block's text, or None (content)."""
    text = block.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    renamed = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        try:
            module = ast.parse(text)
        except (SyntaxError, ValueError):
            escaped = _escape_controls(_strip_zeros(text))
            candidates = [escaped]
            requoted, changed = _requote(escaped)
            if changed:
                candidates.append(_escape_controls(requoted))
            rewritten, renamed = _rename_keywords(candidates[-1])
            if renamed:
                candidates.append(rewritten)
            for candidate in candidates:
                try:
                    module = ast.parse(candidate)
                    break
                except (SyntaxError, ValueError):
                    continue
            else:
                return None
        except (RecursionError, MemoryError):
            return None
    parsed = getattr(module.body[0], "value", None) if module.body else None
    if not isinstance(parsed, ast.List) or not parsed.elts \
            or not all(isinstance(e, ast.Call) for e in parsed.elts):
        return None
    try:
        calls = [_call(e, renamed) for e in parsed.elts if isinstance(e, ast.Call)]
    except (_NotLiteralError, RecursionError, TypeError, ValueError):
        return None
    return calls


class _NotLiteralError(Exception):
    pass


_JSON_NAMES = {"null": None, "true": True, "false": False}
_RENAMED = "_pyreservedkw_"


def _call(call: ast.Call, renamed: bool) -> tuple[str, str]:
    parts: list[str] = []
    node: ast.expr = call.func
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise _NotLiteralError
    parts.append(node.id)
    arguments: dict[Any, Any] = {}
    for kw in call.keywords:
        arguments[kw.arg] = _value(kw.value)
    if renamed:
        arguments = {(k[:-len(_RENAMED)] if isinstance(k, str) and k.endswith(_RENAMED)
                      and keyword.iskeyword(k[:-len(_RENAMED)]) else k): v
                     for k, v in arguments.items()}
    return ".".join(reversed(parts)), json.dumps(arguments, ensure_ascii=False)


def _value(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant):
        if node.value is None or isinstance(node.value, str | int | float):
            return node.value
        raise _NotLiteralError
    if isinstance(node, ast.Dict):
        if not all(isinstance(k, ast.Constant) for k in node.keys):
            raise _NotLiteralError
        return {k.value: _value(v) for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant)}
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [_value(v) for v in node.elts]
    if isinstance(node, ast.JoinedStr) and all(isinstance(p, ast.Constant)
                                               for p in node.values):
        return "".join(str(p.value) for p in node.values if isinstance(p, ast.Constant))
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _value(node.operand)
        if isinstance(operand, int | float) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
    raise _NotLiteralError


def _escape_controls(text: str) -> str:
    """Raw newlines, returns, tabs and NULs inside string literals escaped."""
    out: list[str] = []
    quote: str | None = None
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if quote is None:
            if ch in "'\"":
                quote = ch
            out.append(ch)
        elif ch == "\\" and i + 1 < n:
            out.append(text[i:i + 2])
            i += 2
            continue
        elif ch == quote:
            quote = None
            out.append(ch)
        else:
            out.append(_CONTROLS.get(ch, ch))
        i += 1
    return "".join(out)


_CONTROLS = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x00": "\\x00"}


def _strip_zeros(text: str) -> str:
    """Zero-padded integer literals outside strings (``07``) written without the zeros."""
    out: list[str] = []
    quote: str | None = None
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if quote is not None:
            if ch == "\\" and i + 1 < n:
                out.append(text[i:i + 2])
                i += 2
                continue
            if ch == quote:
                quote = None
            out.append(ch)
            i += 1
        elif ch in "'\"":
            quote = ch
            out.append(ch)
            i += 1
        elif ch.isalpha() or ch == "_":
            end = i
            while end < n and (text[end].isalnum() or text[end] == "_"):
                end += 1
            out.append(text[i:end])
            i = end
        elif ch.isdigit():
            end = i
            while end < n and (text[end].isdigit() or text[end] == "_"):
                end += 1
            token = text[i:end]
            digits = token.replace("_", "")
            follower = text[end] if end < n else ""
            if digits[0] == "0" and digits.strip("0") and not (i > 0 and text[i - 1] == ".") \
                    and follower not in (".", "e", "E", "j", "J"):
                out.append(str(int(digits)))
            else:
                out.append(token)
            i = end
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _rename_keywords(text: str) -> tuple[str, bool]:
    """Python keywords used as parameter names (``from=1``) renamed, outside strings."""
    out: list[str] = []
    quote: str | None = None
    changed = False
    last = ""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if quote is not None:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
            i += 1
            continue
        if ch in "'\"":
            quote = last = ch
            out.append(ch)
            i += 1
            continue
        if ch.isalpha() or ch == "_":
            end = i
            while end < n and (text[end].isalnum() or text[end] == "_"):
                end += 1
            name = text[i:end]
            look = end
            while look < n and text[look].isspace():
                look += 1
            if keyword.iskeyword(name) and look < n and text[look] == "=" \
                    and (look + 1 >= n or text[look + 1] != "=") and last in ("(", ","):
                out.append(name + _RENAMED)
                changed = True
            else:
                out.append(name)
            last = name[-1]
            i = end
            continue
        out.append(ch)
        if not ch.isspace():
            last = ch
        i += 1
    return "".join(out), changed


_FOLLOWERS = frozenset(",)]}:")


def _requote(text: str) -> tuple[str, bool]:
    """A string broken by nested quotes closed at the one quote that makes the text parse
    (vLLM's ``escape_nested_quotes_in_strings``)."""
    def quotes_after(start: int, quote: str) -> list[int]:
        found, j = [], start
        while j < len(text):
            if text[j] == "\\":
                j += 2
                continue
            if text[j] == quote:
                found.append(j)
            j += 1
        return found

    def closes(pos: int) -> bool:
        k = pos + 1
        while k < len(text) and text[k].isspace():
            k += 1
        return k < len(text) and text[k] in _FOLLOWERS

    prefix: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch not in "'\"":
            prefix.append(ch)
            i += 1
            continue
        found = quotes_after(i + 1, ch)
        if not found:
            return text, False
        if closes(found[0]):
            prefix.append(text[i:found[0] + 1])
            i = found[0] + 1
            continue
        winners = []
        for close in (j for j in found if closes(j)):
            inner = [("\\" + text[j]) if text[j] == ch and not _escaped(text, j) else text[j]
                     for j in range(i + 1, close)]
            candidate = "".join(prefix) + ch + "".join(inner) + ch + text[close + 1:]
            try:
                ast.parse(_escape_controls(candidate))
            except (SyntaxError, ValueError):
                continue
            winners.append(candidate)
        if len(winners) == 1:
            return winners[0], True
        return text, False
    return text, False


def _escaped(text: str, index: int) -> bool:
    count, j = 0, index - 1
    while j >= 0 and text[j] == "\\":
        count += 1
        j -= 1
    return count % 2 == 1


def _encode(state: Lfm2State, w: Writer) -> None:
    w.uint(PHASES.index(state.phase) | state.before << 3 | state.spilled << 4)
    w.text(state.held)
    w.text(state.space)
    pythonic.FORMAT.encode(state.inner, w)


def _decode(r: Reader) -> Lfm2State:
    bits = r.uint()
    if bits >> 5 or bits & 7 >= len(PHASES):
        raise ValueError("malformed lfm2 state")
    held, space = r.text(), r.text()
    if len(held) >= MAX_BLOCK + len(END_MARK) \
            or len(space) > MAX_LEADING_SPACE + len(START_MARK):
        raise ValueError("malformed lfm2 state")
    return Lfm2State(PHASES[bits & 7], held, space, bool(bits & 8), bool(bits & 16),
                     pythonic.FORMAT.decode(r))


FORMAT = ToolFormat("lfm2", Lfm2State, Lfm2State, feed, _encode, _decode)
