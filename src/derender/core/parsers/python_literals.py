"""Python keyword arguments with literal values, translated to a JSON object as they arrive.

The ``pythonic`` format writes calls as Python (``f(city='Zürich', days=[1, 2], raw=None)``);
vLLM reads them with ``ast`` and keeps literal values only (strings, numbers, ``True``/
``False``/``None`` and JSON's ``true``/``false``/``null``, lists, tuples, dicts with literal
keys), serialised with ``json.dumps``. This scanner does the same a chunk at a time: ``translate``
reads text after a call's ``(`` and returns the JSON text of what it read, the state to resume
from, and where the call's ``)`` was (or where the text stopped being a literal call). Its state
is a stack of container phases (bounded depth) and one pending token (a number or name, an
escape sequence, the quotes that may close a string), so it never re-reads what came before.

Deliberately smaller than Python: tuples become lists (as vLLM does) but so does a value in
parentheses ``(x)``; sets, comments, implicit string concatenation, bytes and f-strings with
placeholders are not literals here (vLLM refuses the last two as well).
"""

from __future__ import annotations

import ast
import json
import keyword
import re
import unicodedata
from dataclasses import dataclass

MAX_DEPTH = 32
"""Containers nested deeper than this are not read (the state holds one phase per level)."""
MAX_TOKEN = 128
"""Longest number, name or ``\\N{…}`` escape read."""

# Phases of the stack, one character per level. The bottom one is the call's:
#   A: no keyword yet, a keyword or ")" expected   a: after ",", a keyword or ")" expected
#   E/e: after a keyword's name (the first / a later one), "=" expected
#   V: a keyword's value expected                  C: after a value, "," or ")" expected
# Containers: list l (first value or "]"), m (after ",": value or "]"), L (after a value);
# tuple t/u/T likewise with ")"; dict k (first key or "}"), j (after ",": key or "}"),
# K (after a key: ":"), v (value), D (after a value: "," or "}").
_AFTER = {"V": "C", "l": "L", "m": "L", "t": "T", "u": "T", "v": "D", "k": "K", "j": "K"}
_COMMA = {"C": "a", "L": "m", "T": "u", "D": "j"}
_CLOSE = {"]": "lmL", ")": "tuT", "}": "kjD"}
_OPEN = {"[": ("l", "["), "(": ("t", "["), "{": ("k", "{")}
_VALUE = frozenset("Vlmtuv")
_KEY = frozenset("kj")
_SEPARATED = frozenset("muj")
"""Phases where a value or key follows a comma: ", " goes before it."""

_NAMES = {"True": "true", "False": "false", "None": "null",
          "true": "true", "false": "false", "null": "null"}
_KEY_NAMES = {"True": "true", "False": "false", "None": "null"}
"""Names that are constants in Python (JSON's spellings are names, not valid dict keys)."""
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n",
            "r": "\r", "t": "\t", "v": "\v"}
_HEX = {"x": 2, "u": 4, "U": 8}
_STRING_PREFIXES = frozenset({"r", "u", "f", "rf", "fr"})
_WORD = re.compile(r"[\w.]")
_JSON_SHORT = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b",
               "\f": "\\f"}
_PLAIN = {  # runs of string characters needing no attention, by (quote, triple, f-string)
    (q, triple, fmt): re.compile("[^\\\\" + q + ("" if triple else "\n\r") + ("{}" if fmt else "")
                                 + "\x00-\x1f\ud800-\udfff]+")
    for q in "'\"" for triple in (False, True) for fmt in (False, True)}

NONE, WORD, OPEN, STRING = "", "word", "open", "string"
KINDS = (NONE, WORD, OPEN, STRING)
QUOTES = ("", "'", '"')


@dataclass(frozen=True, slots=True)
class Literals:
    """Where the translation of one call's arguments stands."""

    stack: str = "A"
    token: str = ""
    """The pending word, opening quotes, escape sequence, closing quotes or f-string brace."""
    kind: str = NONE
    quote: str = ""
    triple: bool = False
    raw: bool = False
    fmt: bool = False
    """An f-string (no placeholders allowed)."""


class _NotLiteralError(Exception):
    """The text is not a call with literal keyword arguments."""


def translate(state: Literals, text: str, start: int = 0
              ) -> tuple[str, Literals, int | None, int | None]:
    """JSON text of ``text[start:]`` read from ``state``; the state after it; the index in
    ``text`` just past the call's ``)`` (the rest is not read), or None; the index where the
    text stopped being a literal call (JSON text up to there is returned), or None. The text
    is read in place (a machine reading a long text by position passes it, not a copy)."""
    scanner = _Scanner(state, start)
    try:
        end = scanner.run(text)
    except _NotLiteralError:
        return "".join(scanner.out), state, None, scanner.pos
    return "".join(scanner.out), scanner.state(), end, None


def json_char(ch: str, written: bool = True) -> str:
    """``ch`` inside a JSON string (as ``json.dumps(ensure_ascii=False)``). A lone surrogate
    an escape made (``written`` false) is escaped so the text stays valid UTF-8; one in the
    text as written is an escaped private-use character of the marked vocabulary
    (``vocab.LITERAL``), kept for the parser path to restore."""
    short = _JSON_SHORT.get(ch)
    if short is not None:
        return short
    if ch < " " or (not written and "\ud800" <= ch <= "\udfff"):
        return f"\\u{ord(ch):04x}"
    return ch


class _Scanner:
    def __init__(self, state: Literals, start: int = 0) -> None:
        self.stack, self.token, self.kind = state.stack, state.token, state.kind
        self.quote, self.triple, self.raw, self.fmt = (state.quote, state.triple, state.raw,
                                                       state.fmt)
        self.out: list[str] = []
        self.pos = start

    def state(self) -> Literals:
        return Literals(self.stack, self.token, self.kind, self.quote, self.triple, self.raw,
                        self.fmt)

    def run(self, text: str) -> int | None:
        n = len(text)
        while self.pos < n:
            ch = text[self.pos]
            if self.kind == STRING:
                if not self.token:
                    run = _PLAIN[self.quote, self.triple, self.fmt].match(text, self.pos)
                    if run is not None:
                        self.out.append(json.dumps(run.group(), ensure_ascii=False)[1:-1])
                        self.pos = run.end()
                        continue
                self._string(ch)
            elif self.kind == OPEN:
                self._opening(ch)
            elif self.kind == WORD:
                if _WORD.match(ch) or (ch in "+-" and self._exponent()):
                    self.token += ch
                    if len(self.token) > MAX_TOKEN:
                        raise _NotLiteralError
                elif ch in "'\"" and self.token.lower() in _STRING_PREFIXES \
                        and self.stack[-1] in _VALUE | _KEY:
                    prefix = self.token.lower()
                    if "f" in prefix and self.stack[-1] in _KEY:
                        raise _NotLiteralError
                    self._open_string(ch, raw="r" in prefix, fmt="f" in prefix)
                else:
                    self._word_end()
                    continue  # ch is read again, after the word
            elif self._between(ch):
                return self.pos + 1
            self.pos += 1
        return None

    # -- between tokens

    def _between(self, ch: str) -> bool:
        """Read ``ch`` outside any token; True when it closes the call."""
        top = self.stack[-1]
        if ch in " \t\r\n\f":
            return False
        if top in "Ee":
            if ch != "=" or not self.token:
                raise _NotLiteralError
            name = json.dumps(self.token, ensure_ascii=False)
            self.out.append(("{" if top == "E" else ", ") + name + ": ")
            self.stack, self.token = self.stack[:-1] + "V", ""
            return False
        if ch == ")" and top in "AaC":
            self.out.append("{}" if top == "A" else "}")
            return True
        if top in "Aa":
            if not (ch.isalpha() or ch == "_"):
                raise _NotLiteralError
            self.kind, self.token = WORD, ch
            return False
        if top in _COMMA and ch == ",":
            self.stack = self.stack[:-1] + _COMMA[top]
            return False
        if ch in _CLOSE and top in _CLOSE[ch]:
            self.stack = self.stack[:-1]
            self.out.append("}" if ch == "}" else "]")
            return False
        if top == "K" and ch == ":":
            self.out.append(": ")
            self.stack = self.stack[:-1] + "v"
            return False
        if top in _VALUE or top in _KEY:
            if ch in _OPEN and top in _VALUE:
                if len(self.stack) >= MAX_DEPTH:
                    raise _NotLiteralError
                phase, opening = _OPEN[ch]
                self.out.append((", " if top in _SEPARATED else "") + opening)
                self.stack = self.stack[:-1] + _AFTER[top] + phase
                return False
            if ch in "'\"":
                self._open_string(ch, raw=False, fmt=False)
                return False
            if ch.isalnum() or (ch in "_.+-" and top in _VALUE):
                self.kind, self.token = WORD, ch
                return False
        raise _NotLiteralError

    # -- words: numbers and names

    def _exponent(self) -> bool:
        """A sign continues a word only right after a decimal number's exponent ``e``."""
        token = self.token.lstrip("+-")
        return token[-1:] in ("e", "E") and (token[:1].isdigit() or token[:1] == ".") \
            and not token.lower().startswith(("0x", "0b", "0o"))

    def _word_end(self) -> None:
        word, top = self.token, self.stack[-1]
        self.kind, self.token = NONE, ""
        if top in "Aa":  # a keyword's name
            if not word.isidentifier() or keyword.iskeyword(word):
                raise _NotLiteralError
            self.stack, self.token = self.stack[:-1] + ("E" if top == "A" else "e"), word
            return
        if top in _KEY:
            text = _KEY_NAMES.get(word)
            if text is None:
                text = json.dumps(_number(word, signed=False))
            self._value(json.dumps(text))
            return
        text = _NAMES.get(word)
        self._value(text if text is not None else json.dumps(_number(word, signed=True)))

    def _value(self, text: str) -> None:
        top = self.stack[-1]
        self.out.append((", " if top in _SEPARATED else "") + text)
        self.stack = self.stack[:-1] + _AFTER[top]

    # -- strings

    def _open_string(self, quote: str, raw: bool, fmt: bool) -> None:
        top = self.stack[-1]
        self.out.append((", " if top in _SEPARATED else "") + '"')
        self.stack = self.stack[:-1] + _AFTER[top]
        self.kind, self.token, self.quote = OPEN, quote, quote
        self.triple, self.raw, self.fmt = False, raw, fmt

    def _opening(self, ch: str) -> None:
        """After one or two quotes: an empty string, a one-quote string or a triple one."""
        if ch == self.quote and len(self.token) == 1:
            self.token += ch
            return
        if ch == self.quote:  # a third quote
            self.kind, self.token, self.triple = STRING, "", True
            return
        if len(self.token) == 2:  # '' : the empty string, ch comes after it
            self._close_string()
            self.pos -= 1
            return
        self.kind, self.token = STRING, ""
        self.pos -= 1  # ch is the string's first character

    def _close_string(self) -> None:
        self.out.append('"')
        self.kind, self.token, self.quote = NONE, "", ""
        self.triple = self.raw = self.fmt = False

    def _string(self, ch: str) -> None:
        token = self.token
        if token.startswith("\\"):
            self._escape(ch)
        elif token.startswith(self.quote) and token:  # closing quotes of a triple string
            if ch == self.quote:
                if len(token) == 2:
                    self._close_string()
                else:
                    self.token += ch
            else:
                self.out.append(json_char(self.quote) * len(token))
                self.token = ""
                self.pos -= 1
        elif token in ("{", "}"):  # f-string braces must be doubled
            if ch != token:
                raise _NotLiteralError
            self.out.append(ch)
            self.token = ""
        elif ch == "\\":
            self.token = ch
        elif ch == self.quote:
            if self.triple:
                self.token = ch
            else:
                self._close_string()
        elif ch in "\n\r" and not self.triple:
            raise _NotLiteralError
        elif ch in "{}" and self.fmt:
            self.token = ch
        else:
            self.out.append(json_char(ch))

    def _escape(self, ch: str) -> None:
        token = self.token
        if self.raw:  # a backslash keeps the next character (even a quote) as it is
            self.out.append("\\\\" + json_char(ch))
            self.token = ""
            return
        if len(token) == 1:
            if ch in "\n":
                self.token = ""
            elif ch in _ESCAPES:
                self.out.append(json_char(_ESCAPES[ch]))
                self.token = ""
            elif ch in "01234567xuUN":
                self.token += ch
            else:  # an unknown escape keeps its backslash
                self.out.append("\\\\" + json_char(ch))
                self.token = ""
            return
        kind = token[1]
        if kind in "01234567":
            if ch in "01234567" and len(token) < 4:
                self.token += ch
                if len(self.token) < 4:
                    return
                self._escaped(chr(int(self.token[1:], 8)))
                return
            self._escaped(chr(int(token[1:], 8)))
            self.pos -= 1
            return
        if kind in _HEX:
            if ch not in "0123456789abcdefABCDEF":
                raise _NotLiteralError
            self.token += ch
            if len(self.token) == 2 + _HEX[kind]:
                code = int(self.token[2:], 16)
                if code > 0x10FFFF:
                    raise _NotLiteralError
                self._escaped(chr(code))
            return
        # \N{NAME}
        if (len(token) == 2 and ch != "{") or len(token) > MAX_TOKEN:
            raise _NotLiteralError
        if ch != "}":
            self.token += ch
            return
        try:
            self._escaped(unicodedata.lookup(token[3:]))
        except KeyError:
            raise _NotLiteralError from None

    def _escaped(self, ch: str) -> None:
        self.out.append(json_char(ch, written=False))
        self.token = ""


def _number(word: str, signed: bool) -> int | float:
    """A Python number literal (with a sign where a value may have one)."""
    if not word or (word[0] in "+-" and (not signed or word[1:2] in ("+", "-", ""))):
        raise _NotLiteralError
    digits = word.lstrip("+-")
    if not (digits[:1].isdigit() or (digits[:1] == "." and digits[1:2].isdigit())):
        raise _NotLiteralError
    try:
        value = ast.literal_eval(word)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise _NotLiteralError from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _NotLiteralError
    return value
