"""vLLM's response-template parsers (``hf``, ``beam``): the grammar is data, the checkpoint's
own ``response_template`` (the ``tokenizer_config.json`` key Hugging Face tokenizers load it
from), read at start-up. One machine reads every template: the template's delimiters, content
parsers and transforms are its data, so a checkpoint shipping a template needs no new code.

What vLLM 0.33 reads (``vllm/parser/chat_parsing/response_templates.py``,
``vllm/parser/response_template.py``): ``version`` 1, a ``start_anchor`` (literal or list) or
``start_anchor_pattern``, ``defaults`` (``role`` only, for serving), and ``fields`` among
``thinking``, ``content``, ``tool_calls``; a field opens and closes on ``open``/``close``
(literal or list of literals) or ``open_pattern``/``close_pattern`` (a regular expression); at
most one field has no opener (the implicit one, where text outside other fields goes; with
none, and no ``content``, serving adds an implicit ``content``); ``thinking`` and ``content``
are ``text`` without ``transform`` or ``join``; ``tool_calls`` reads its body with one of the
content parsers (``text``, ``int``, ``float``, ``bool``, ``json``, ``xml-inline``,
``kv-lines``), optionally reshaped by ``transform`` (``{name}`` placeholders of the opener's
named groups and ``{content}``), ``transform_each`` for a list.

vLLM matches delimiters with the ``regex`` module's partial matching, which derender does not
depend on: it reads every literal delimiter and these regular expressions, anything else being
refused at start-up (``TemplateError``, naming the field and the reason): literal alternatives
(``(?:…)``, ``|``, ``?``, escapes), and ``BEFORE(?P<g>C+)AFTER`` with ``C`` one character
class and ``BEFORE``/``AFTER`` literal alternatives (a tool call's opener naming the function).

The machine is vLLM's ``ResponseParser`` fed the prompt's text after the start anchor, then the
output; the stream state holds the text held back as a possible delimiter, the open region and,
in a tool-call region, its body (parsed when the region closes: vLLM returns a call whole).
Bounds: a held delimiter at most ``MAX_HELD`` characters (more is text), a tool-call body at
most ``MAX_BODY`` bytes of UTF-8 (more: the call is dropped).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from derender.core.decoding.vocab import LITERAL, STAND_IN, restore_table
from derender.core.parsers.registry import MARKUP
from derender.core.parsers.tools import ToolCallDelta, ToolContext, ToolFormat, ToolState
from derender.core.state.codec import Reader, Writer

THINKING, CONTENT, TOOLS = "thinking", "content", "tool_calls"
FIELDS = (THINKING, CONTENT, TOOLS)
"""The fields vLLM's serving adapter routes (``_SUPPORTED_FIELDS``)."""
CONTENT_PARSERS = ("text", "int", "float", "bool", "json", "xml-inline", "kv-lines")
STREAMABLE = frozenset({"text", "int", "float", "bool"})
MAX_HELD = 256
"""Characters held back as a possible delimiter; a longer pending delimiter is text. Also the
most characters an opener's captures (a function name) may hold: a call whose opener captures
more is dropped."""
MAX_BODY = 4096
"""Bytes of UTF-8 of a tool-call region's body held until it closes; a longer call is
dropped (its text skipped up to its closer)."""
MAX_LITERALS = 16
"""Literal alternatives a delimiter pattern may expand to (vLLM's grammar module's bound)."""

_FIELD_KEYS = frozenset({"open", "open_pattern", "close", "close_pattern", "content",
                         "content_args", "repeats", "join", "optional", "transform",
                         "transform_each"})
_TEMPLATE_KEYS = frozenset({"version", "defaults", "fields", "start_anchor",
                            "start_anchor_pattern"})
_PLACEHOLDER = re.compile(r"\{(\w+(?:\.\w+)*)\}")
_META = frozenset(".^$*+?{}[]\\|()")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t"}
_ESCAPE_STAND_INS: dict[int, int] = {STAND_IN + i: LITERAL + i for i in range(len(MARKUP))}
_RESTORE: dict[int, str | int] = restore_table(MARKUP)


class TemplateError(ValueError):
    """A ``response_template`` derender cannot read (the message says why)."""


# -- delimiters ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Delimiter:
    """An opener or closer: a complete-match pattern, a pattern finding where a proper prefix
    of a match ends the text (``\\Z``), and whether a match ending the text may still grow."""

    whole: re.Pattern[str]
    partial: re.Pattern[str]
    literals: tuple[str, ...] | None
    """Its literal spellings (None: a capture in it)."""
    grows: bool
    """A complete match at the end of the text is held: a regular expression, or literals one
    of which starts another (vLLM's ``_can_grow``)."""
    reach: int
    """Characters a partial match can span (a capture: ``MAX_HELD``, past which a pending
    delimiter is text)."""


def _alternation(strings: Sequence[str]) -> str:
    ordered = sorted(dict.fromkeys(strings), key=len, reverse=True)
    return "|".join(re.escape(s) for s in ordered)


def _prefixes(literals: Sequence[str], empty: bool) -> str:
    found = {lit[:end] for lit in literals for end in range(0 if empty else 1, len(lit))}
    if not found:
        return "(?!)"
    return "(?:" + "|".join(re.escape(p) if p else "" for p in
                            sorted(found, key=len, reverse=True)) + ")"


def _literal_delimiter(literals: Sequence[str], pattern: bool) -> Delimiter:
    literals = tuple(dict.fromkeys(literals))
    extend = any(a != b and a.startswith(b) for a in literals for b in literals)
    return Delimiter(re.compile(_alternation(literals), re.DOTALL),
                     re.compile(_prefixes(literals, False) + r"\Z", re.DOTALL),
                     literals, pattern or extend, max(map(len, literals)))


def expand(pattern: str) -> list[str] | None:
    """The literal strings a pattern of literal alternatives matches (``(?:…)``, ``|``, a
    ``?`` after an atom, escaped characters), or None when it is no such pattern."""
    literals, index = _alternatives(pattern, 0)
    return literals if literals is not None and index == len(pattern) else None


def _alternatives(pattern: str, index: int) -> tuple[list[str] | None, int]:
    found: list[str] = []
    while True:
        branch, index = _concatenation(pattern, index)
        if branch is None:
            return None, index
        found.extend(branch)
        if not pattern.startswith("|", index):
            break
        index += 1
    found = list(dict.fromkeys(found))
    return (found if len(found) <= MAX_LITERALS else None), index


def _concatenation(pattern: str, index: int) -> tuple[list[str] | None, int]:
    found = [""]
    while index < len(pattern) and pattern[index] not in "|)":
        atom: list[str]
        if pattern.startswith("(?:", index):
            inner, index = _alternatives(pattern, index + 3)
            if inner is None or not pattern.startswith(")", index):
                return None, index
            atom, index = inner, index + 1
        elif pattern[index] == "\\" and index + 1 < len(pattern):
            escaped = pattern[index + 1]
            if escaped.isalnum() and escaped not in _ESCAPES:
                return None, index
            atom, index = [_ESCAPES.get(escaped, escaped)], index + 2
        elif pattern[index] in _META:
            return None, index
        else:
            atom, index = [pattern[index]], index + 1
        if pattern.startswith("?", index):
            atom, index = ["", *atom], index + 1
        found = [a + b for a in found for b in atom]
        if len(found) > MAX_LITERALS:
            return None, index
    return found, index


_CLASS = re.compile(r"\[(?:\\.|[^\]\\])+\]|\\[wWdDsS]|\.")


def _captured_delimiter(pattern: str, what: str) -> Delimiter:
    """``BEFORE(?P<g>C+)AFTER``, ``C`` one character class."""
    match = re.fullmatch(r"(?P<before>.*?)\(\?P<(?P<group>\w+)>(?P<cls>.+?)\+\)(?P<after>.*)",
                         pattern, re.DOTALL)
    if match is None or not _CLASS.fullmatch(match["cls"]):
        raise TemplateError(
            f"{what} {pattern!r} is a regular expression derender does not match "
            "incrementally (it reads literal alternatives, and BEFORE(?P<name>C+)AFTER with C "
            "one character class and BEFORE/AFTER literal alternatives)")
    before, after = expand(match["before"]), expand(match["after"])
    if before is None or after is None:
        raise TemplateError(f"{what} {pattern!r}: the text around the group must be literal "
                            "alternatives")
    try:
        whole = re.compile(pattern, re.DOTALL)
        cls = re.compile(match["cls"], re.DOTALL)
    except re.error as error:
        raise TemplateError(f"{what} {pattern!r} is not a valid pattern: {error}") from None
    head = _alternation(before) if any(before) else ""
    head = f"(?:{head})" if head else ""
    tail = _prefixes(after, True) if any(after) else ""
    partial = "|".join(p for p in (
        _prefixes(before, False) if any(before) else "",
        f"{head}(?:{cls.pattern})*{tail}") if p)
    return Delimiter(whole, re.compile(f"(?:{partial})\\Z", re.DOTALL), None, True,
                     MAX_HELD)


def _delimiter(spec: Mapping[str, Any], literal_key: str, pattern_key: str, what: str
               ) -> Delimiter | None:
    if literal_key in spec and pattern_key in spec:
        raise TemplateError(f"{what}: cannot specify both '{literal_key}' and '{pattern_key}'")
    if literal_key in spec:
        raw = spec[literal_key]
        literals = [raw] if isinstance(raw, str) else raw
        if not isinstance(literals, list) or not literals or not all(
                isinstance(s, str) and s for s in literals):
            raise TemplateError(f"{what}: '{literal_key}' must be a non-empty string or a "
                                "non-empty list of non-empty strings")
        return _literal_delimiter(literals, False)
    if pattern_key in spec:
        pattern = spec[pattern_key]
        if not isinstance(pattern, str):
            raise TemplateError(f"{what}: '{pattern_key}' must be a string")
        try:
            re.compile(pattern)
        except re.error as error:
            raise TemplateError(f"{what}: invalid {pattern_key} regex: {error}") from None
        literals = expand(pattern)
        if literals is not None and all(literals):
            return _literal_delimiter(literals, True)
        return _captured_delimiter(pattern, f"{what}: {pattern_key}")
    return None


# -- the template -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    opener: Delimiter | None
    closer: Delimiter | None
    content: str
    args: Mapping[str, Any]
    repeats: bool
    transform: Any
    transform_each: bool
    tag_pattern: re.Pattern[str] | None = None
    """``xml-inline``: its ``tag_pattern``."""
    value_tags: tuple[re.Pattern[str], ...] = ()
    """Nested ``value_parser`` patterns, compiled (``xml-inline`` within values)."""


@dataclass(frozen=True, slots=True)
class Template:
    """A checked ``response_template``, in vLLM's streaming form."""

    fields: tuple[Field, ...]
    implicit: int | None
    """The index of the field without an opener (None: text outside fields is dropped)."""
    anchor: re.Pattern[str]
    anchors: tuple[str, ...]
    """The start anchor's literal spellings (none when it is no literal pattern)."""
    source: Mapping[str, Any] = field(default_factory=dict)

    def index(self, name: str) -> int | None:
        return next((i for i, f in enumerate(self.fields) if f.name == name), None)


def _check_transform(what: str, transform: Any) -> None:
    if isinstance(transform, dict):
        for value in transform.values():
            _check_transform(what, value)
    elif isinstance(transform, list):
        for value in transform:
            _check_transform(what, value)
    elif isinstance(transform, str) and _PLACEHOLDER.search(transform) and \
            not _PLACEHOLDER.fullmatch(transform):
        raise TemplateError(f"{what}: transform string {transform!r} mixes a {{placeholder}} "
                            "with literal text")


def literal_tail(pattern: str) -> str:
    """The literal text every match of ``pattern`` ends with ("" when none is certain): a
    match ends at an occurrence of it, so no match reaches past its last one."""
    if "(?=" in pattern or "(?!" in pattern or "(?<" in pattern.replace("(?P<", ""):
        return ""
    tail: list[str] = []
    i = len(pattern) - 1
    while i >= 0:
        char = pattern[i]
        escaped = i >= 1 and pattern[i - 1] == "\\"
        if escaped and i >= 2 and pattern[i - 2] == "\\":
            break
        if escaped and (not char.isalnum() or char in _ESCAPES):
            tail.append(_ESCAPES.get(char, char))
            i -= 2
        elif not escaped and char not in _META:
            tail.append(char)
            i -= 1
        else:
            break
    return "".join(reversed(tail))


def _compile_tags(what: str, args: Any) -> re.Pattern[str]:
    pattern = args.get("tag_pattern") if isinstance(args, dict) else None
    if not isinstance(pattern, str):
        raise TemplateError(f"{what}: xml-inline needs a 'tag_pattern' content_arg")
    try:
        return re.compile(pattern, re.DOTALL)
    except re.error as error:
        raise TemplateError(f"{what}: tag_pattern {pattern!r} is not a regular expression "
                            f"derender reads: {error}") from None


def _field(name: str, spec: Any) -> Field:
    what = f"field '{name}'"
    if not isinstance(spec, dict):
        raise TemplateError(f"{what} must be a dict")
    unknown = set(spec) - _FIELD_KEYS
    if unknown:
        raise TemplateError(f"{what}: unknown keys {sorted(unknown)}")
    content = spec.get("content", "text")
    if content not in CONTENT_PARSERS:
        raise TemplateError(f"{what}: unknown content parser {content!r}")
    args = spec.get("content_args", {})
    if not isinstance(args, dict):
        raise TemplateError(f"{what}: content_args must be a dict")
    opener = _delimiter(spec, "open", "open_pattern", what)
    closer = _delimiter(spec, "close", "close_pattern", what)
    join = spec.get("join")
    if join is not None and (not isinstance(join, str) or not spec.get("repeats", False)):
        raise TemplateError(f"{what}: 'join' must be a string and requires 'repeats': true")
    transform = spec.get("transform")
    each = spec.get("transform_each", False)
    if not isinstance(each, bool) or (each and transform is None):
        raise TemplateError(f"{what}: transform_each must be a bool and needs a transform")
    groups = set()
    for delimiter in (opener, closer):
        if delimiter is not None:
            groups |= set(delimiter.whole.groupindex)
    if transform is not None:
        _check_transform(what, transform)
    elif groups:
        raise TemplateError(f"{what}: named group(s) {sorted(groups)} without a 'transform'")
    if name not in FIELDS:
        raise TemplateError(f"{what}: serving reads only the fields {sorted(FIELDS)}")
    if name != TOOLS and (content != "text" or transform is not None or join is not None):
        raise TemplateError(f"{what} uses semantics that cannot be streamed (text only)")
    if join is not None:
        raise TemplateError(f"{what}: 'join' is not read for tool calls")
    tags = _compile_tags(what, args) if content == "xml-inline" else None
    nested: list[re.Pattern[str]] = []
    inner = args.get("value_parser")
    while isinstance(inner, dict) and inner.get("name") == "xml-inline":
        nested.append(_compile_tags(what, inner.get("args", {})))
        inner = (inner.get("args") or {}).get("value_parser")
    if isinstance(inner, dict) and inner.get("name", "text") not in CONTENT_PARSERS:
        raise TemplateError(f"{what}: unknown value parser {inner.get('name')!r}")
    return Field(name, opener, closer, content, args, bool(spec.get("repeats", False)),
                 transform, each, tags, tuple(nested))


def load_template(spec: Any) -> Template:
    """A ``response_template`` checked as vLLM's loader and serving adapter check it, in the
    form vLLM streams it (an implicit ``content`` added when every field has an opener and
    there is no ``content``); TemplateError says why it cannot be read."""
    if not isinstance(spec, dict):
        raise TemplateError(f"response_template must be a dict, got {type(spec).__name__}")
    if spec.get("version", 1) != 1:
        raise TemplateError(f"unsupported response_template version: {spec.get('version')}")
    unknown = set(spec) - _TEMPLATE_KEYS
    if unknown:
        raise TemplateError(f"unknown keys in response_template: {sorted(unknown)}")
    defaults = spec.get("defaults", {})
    if not isinstance(defaults, dict) or set(defaults) - {"role"}:
        raise TemplateError("response_template.defaults may hold only 'role'")
    raw = spec.get("fields")
    if not isinstance(raw, dict) or not raw:
        raise TemplateError("response_template.fields must be a non-empty dict")
    fields = [_field(name, value) for name, value in raw.items()]
    if CONTENT not in raw and all(f.opener is not None for f in fields):
        fields.append(_field(CONTENT, {}))
    implicit = [i for i, f in enumerate(fields) if f.opener is None]
    if len(implicit) > 1:
        raise TemplateError("at most one field may omit 'open'/'open_pattern' (found: "
                            f"{', '.join(fields[i].name for i in implicit)})")
    anchor = _delimiter(spec, "start_anchor", "start_anchor_pattern", "response_template")
    if anchor is None:
        raise TemplateError("response_template must define 'start_anchor' or "
                            "'start_anchor_pattern'")
    anchor_pattern = (re.compile(_alternation(anchor.literals), re.DOTALL)
                      if "start_anchor" in spec and anchor.literals is not None
                      else re.compile(spec["start_anchor_pattern"], re.DOTALL))
    return Template(tuple(fields), implicit[0] if implicit else None, anchor_pattern,
                    anchor.literals or (), spec)


# -- content parsers (vLLM's ``content_parsers.py``) ----------------------------------------


def _text(text: str, args: Mapping[str, Any]) -> str:
    return text.strip() if args.get("strip", True) else text


def _json(text: str, args: Mapping[str, Any]) -> Any:
    delims = args.get("string_delims", [])
    if delims and ("\x01" in text or "\x02" in text):
        raise ValueError("json: reserved sentinel characters")
    working, captured = text, []
    for open_d, close_d in delims:
        def capture(m: re.Match[str]) -> str:
            captured.append(m.group(1))
            return f"\x01{len(captured) - 1}\x02"
        working = re.sub(re.escape(open_d) + r"(.*?)" + re.escape(close_d), capture, working,
                         flags=re.DOTALL)
    if args.get("unquoted_keys", False):
        working = re.sub(r"(?<=[{,])(\w+):", r'"\1":', working)
    for i, s in enumerate(captured):
        working = working.replace(f"\x01{i}\x02", json.dumps(s))
    try:
        return json.loads(working)
    except json.JSONDecodeError:
        if args.get("allow_non_json"):
            return _text(text, args)
        raise ValueError("json: not JSON") from None


def _parse(text: str, kind: str, args: Mapping[str, Any], tags: Sequence[re.Pattern[str]]
           ) -> Any:
    if kind == "text":
        return _text(text, args)
    if kind == "int":
        return int(_text(text, args))
    if kind == "float":
        return float(_text(text, args))
    if kind == "bool":
        return _text(text, args).lower() in ("true", "1")
    if kind == "json":
        return _json(text, args)
    inner = args.get("value_parser")
    out: dict[str, Any] = {}
    if kind == "xml-inline":
        # Matches end at the pattern's literal tail: none reaches past its last occurrence, and
        # positions after it would each scan to the end for nothing (quadratic).
        tail = literal_tail(tags[0].pattern)
        last = text.rfind(tail) if tail else len(text)
        for m in tags[0].finditer(text, 0, -1 if last < 0 else last + len(tail)):
            groups = m.groupdict()
            key = groups.get("key")
            if key is None:
                raise ValueError("xml-inline: tag_pattern must have a named group 'key'")
            value = _sub(groups.get("value") or "", inner, tags[1:])
            if key in out and args.get("merge_duplicates", False):
                if not isinstance(out[key], list):
                    out[key] = [out[key]]
                out[key].append(value)
            else:
                out[key] = value
        return out
    for raw in text.split(args.get("line_sep", "\n")):  # kv-lines
        line = _text(raw, args)
        sep = args.get("kv_sep", ":")
        if not line or sep not in line:
            continue
        k, v = line.split(sep, 1)
        out[_text(k, args)] = _sub(_text(v, args), inner, tags)
    return out


def _sub(raw: str, inner: Any, tags: Sequence[re.Pattern[str]]) -> Any:
    if not isinstance(inner, dict):
        return raw
    return _parse(raw, inner.get("name", "text"), inner.get("args", {}), tags)


def _apply(transform: Any, scope: Mapping[str, Any]) -> Any:
    if isinstance(transform, dict):
        return {k: _apply(v, scope) for k, v in transform.items()}
    if isinstance(transform, list):
        return [_apply(v, scope) for v in transform]
    if not isinstance(transform, str):
        return transform
    whole = _PLACEHOLDER.fullmatch(transform)
    if not whole:
        return transform
    root, *keys = whole.group(1).split(".")
    if root not in scope:
        raise KeyError(root)
    value = scope[root]
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            raise ValueError(f"transform placeholder cannot reach {key!r}")
        value = value[key]
    return value


def field_value(f: Field, body: str, captures: Mapping[str, str]) -> Any:
    """vLLM's ``process_field``: the body parsed, then reshaped (KeyError, TypeError,
    ValueError: the region is malformed)."""
    value = _parse(body, f.content, f.args, (f.tag_pattern, *f.value_tags)
                   if f.tag_pattern is not None else ())
    if f.transform is None:
        return value
    if f.transform_each:
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise ValueError("transform_each needs a list of dicts")
        return [_apply(f.transform, {**captures, **item}) for item in value]
    return _apply(f.transform, {**captures, "content": value})


def _schema_types(schema: Any) -> tuple[str, ...]:
    if not isinstance(schema, dict):
        return ()
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else []
    if isinstance(declared, list):
        types.extend(t for t in declared if isinstance(t, str))
    for union in ("anyOf", "oneOf"):
        for choice in schema.get(union) or []:
            types.extend(_schema_types(choice))
    if schema.get("nullable") and "null" not in types:
        types.append("null")
    return tuple(types)


def _coerce(raw: str, types: tuple[str, ...]) -> Any:
    for kind in types:
        try:
            if kind == "integer":
                try:
                    return int(raw)
                except ValueError:
                    number = float(raw)
                    if not number.is_integer():
                        continue
                    return int(number)
            if kind == "number":
                number = float(raw)
                if math.isnan(number) or math.isinf(number):
                    continue
                return int(number) if number.is_integer() and "." not in raw else number
            if kind == "boolean" and raw.strip().lower() in ("true", "1", "false", "0"):
                return raw.strip().lower() in ("true", "1")
            if kind == "null" and raw.strip() in ("null", "None"):
                return None
            if kind in ("object", "array"):
                decoded = json.loads(raw)
                if isinstance(decoded, dict if kind == "object" else list):
                    return decoded
        except ValueError:
            continue
    return raw


def _tool_params(tools: Sequence[Any]) -> dict[str, dict[str, Any]]:
    params: dict[str, dict[str, Any]] = {}
    for tool in tools:
        fn = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            parameters = fn.get("parameters")
            props = parameters.get("properties") if isinstance(parameters, dict) else None
            params[fn["name"]] = props if isinstance(props, dict) else {}
    return params


def _coerce_calls(value: Any, params: Mapping[str, Mapping[str, Any]]) -> Any:
    if isinstance(value, list):
        return [_coerce_calls(item, params) for item in value]
    fn = value.get("function") if isinstance(value, dict) else None
    if not isinstance(fn, dict):
        return value
    name, arguments = fn.get("name"), fn.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return value
    properties = params.get(name) or {}
    for key, argument in list(arguments.items()):
        types = _schema_types(properties[key]) if key in properties else ()
        if not types:
            continue
        if isinstance(argument, str):
            arguments[key] = _coerce(argument, types)
        elif isinstance(argument, list) and "array" not in types:
            arguments[key] = [_coerce(v, types) if isinstance(v, str) else v for v in argument]
    return value


def _calls(value: Any) -> list[tuple[str, str]]:
    """vLLM's ``_to_tool_calls``: each call's name and arguments, none if any is
    incomplete."""
    found: list[tuple[str, str]] = []
    for item in value if isinstance(value, list) else [value]:
        fn = item.get("function") if isinstance(item, dict) else None
        if not isinstance(fn, dict):
            return []
        name, arguments = fn.get("name"), fn.get("arguments")
        if not isinstance(name, str) or not name or arguments is None:
            return []
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        found.append((name, arguments))
    return found


# -- the machine --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TemplateState(ToolState):
    held: str = ""
    """Text not yet committed: a possible delimiter (and the text after its start)."""
    prompt_held: int = 0
    """Leading characters of ``held`` that are the prompt's (never emitted)."""
    current: int = -1
    """The region text goes to (a field index; -1: none, text is dropped)."""
    opened: bool = False
    captures: tuple[tuple[str, str], ...] = ()
    body: str = ""
    """A tool-call region's text so far (other regions stream theirs)."""
    overflow: bool = False
    """The tool-call body passed ``MAX_BODY``: the call is dropped."""
    calls: int = 0
    output: bool = False
    """Output text was fed (vLLM finalises only then)."""


@dataclass(slots=True)
class _Run:
    """One feed's working copy: the text, the region, and what it emits."""

    template: Template
    buf: str
    prompt: int
    current: int
    opened: bool
    captures: dict[str, str]
    body: str
    overflow: bool
    calls: int
    route: bool
    reasoning: bool
    tools: bool
    params: Mapping[str, Mapping[str, Any]]
    pos: int = 0
    thought: list[str] = field(default_factory=list)
    content: list[str] = field(default_factory=list)
    found: list[ToolCallDelta] = field(default_factory=list)
    body_bytes: int = -1
    """UTF-8 bytes of ``body`` (-1: not measured yet)."""
    searched: dict[int, tuple[int, re.Match[str] | None]] = field(default_factory=dict)
    """Per delimiter: where it was last searched from, and its match (``search``)."""

    def emitted(self, start: int, end: int) -> str:
        return self.buf[max(start, self.prompt):end] if self.route else ""

    def accumulate(self, start: int, end: int) -> None:
        if start >= end or self.current < 0:
            return
        self.opened = True
        f = self.template.fields[self.current]
        text = self.buf[start:end]
        if f.name == TOOLS and not self.overflow:
            if self.body_bytes < 0:  # measured once a feed, then added to
                self.body_bytes = len(self.body.encode("utf-8", "surrogatepass"))
            self.body += text
            self.body_bytes += len(text.encode("utf-8", "surrogatepass"))
            if self.body_bytes > MAX_BODY:
                self.overflow, self.body = True, ""
        chunk = self.emitted(start, end)
        if not chunk:
            return
        if f.name == THINKING and self.reasoning:
            self.thought.append(chunk)
        elif f.name != TOOLS or not self.tools:
            self.content.append(chunk)

    def reset(self) -> None:
        self.current = -1 if self.template.implicit is None else self.template.implicit
        self.opened, self.captures, self.body, self.overflow = False, {}, "", False
        self.body_bytes = 0

    def close(self, start: int, end: int) -> None:
        if self.current < 0 or not self.opened:
            self.reset()
            return
        f = self.template.fields[self.current]
        if f.name == TOOLS:
            if not self.tools:
                self.content.append(self.emitted(start, end))
            elif self.route and not self.overflow:
                try:
                    value = field_value(f, self.body, self.captures)
                    if self.params:
                        value = _coerce_calls(value, self.params)
                except (KeyError, TypeError, ValueError, IndexError):
                    value = None
                for name, arguments in _calls(value) if value is not None else ():
                    self.found.append(ToolCallDelta(self.calls, name, arguments))
                    self.calls += 1
        self.reset()

    def open(self, index: int, m: re.Match[str]) -> None:
        self.close(m.start(), m.start())
        self.current, self.opened, self.body, self.overflow = index, True, "", False
        self.body_bytes = 0
        self.captures = {k: v for k, v in m.groupdict().items() if v is not None}
        if sum(map(len, self.captures.values())) > MAX_HELD:  # bounded: such a call is dropped
            self.captures, self.overflow = {}, True
        if self.template.fields[index].name == TOOLS and not self.tools:
            self.content.append(self.emitted(m.start(), m.end()))

    def watch(self) -> list[tuple[bool, int, Delimiter]]:
        fields = self.template.fields
        implicit = self.template.implicit
        if self.current >= 0 and self.current != implicit:
            closer = fields[self.current].closer
            return [] if closer is None else [(False, self.current, closer)]
        found = [(True, i, f.opener) for i, f in enumerate(fields) if f.opener is not None]
        closer = fields[implicit].closer if implicit is not None else None
        if implicit is not None and closer is not None:
            found.append((False, implicit, closer))
        return found

    def search(self, delimiter: Delimiter) -> re.Match[str] | None:
        """The leftmost complete match from ``pos``: searched once per feed and delimiter and
        kept while it lies ahead (no match ahead stays none), so a feed costs O(its text)."""
        key = id(delimiter)
        found = self.searched.get(key)
        if found is not None and found[0] <= self.pos and (
                found[1] is None or found[1].start() >= self.pos):
            return found[1]
        m = delimiter.whole.search(self.buf, self.pos)
        self.searched[key] = (self.pos, m)
        return m

    def scan(self, eos: bool) -> tuple[tuple[bool, int, re.Match[str]] | None, int]:
        best: tuple[bool, int, re.Match[str]] | None = None
        best_key: tuple[int, int, int, str] | None = None
        hold = len(self.buf)
        for is_open, index, delimiter in self.watch():
            m = self.search(delimiter)
            if not eos:
                start = max(self.pos, len(self.buf) - delimiter.reach + 1)
                p = delimiter.partial.search(self.buf, start)
                if p is not None and (m is None or p.start() <= m.start()):
                    hold = min(hold, p.start())
                    continue
                if m is None:
                    continue
                if m.end() == len(self.buf) and (m.start() == m.end() or delimiter.grows):
                    hold = min(hold, m.start())
                    continue
            if m is None:
                continue
            key = (m.start(), m.start() - m.end(), 0 if is_open else 1,
                   self.template.fields[index].name)
            if best_key is None or key < best_key:
                best_key, best = key, (is_open, index, m)
        if best is not None and best[2].start() >= hold:
            best = None
        return best, hold

    def process(self, eos: bool) -> None:
        while True:
            best, hold = self.scan(eos)
            if best is not None:
                is_open, index, m = best
                self.accumulate(self.pos, m.start())
                self.pos = m.end()
                if is_open:
                    self.open(index, m)
                else:
                    had = self.opened
                    self.close(m.start(), m.end())
                    if not had and m.start() == m.end():
                        break
                continue
            if eos:
                self.accumulate(self.pos, len(self.buf))
                self.pos = len(self.buf)
                self.close(self.pos, self.pos)
                break
            if len(self.buf) - hold > MAX_HELD:  # bounded: a longer pending delimiter is text
                hold = len(self.buf) - MAX_HELD
            if hold > self.pos:
                self.accumulate(self.pos, hold)
                self.pos = hold
            break

    def closer_rest(self) -> str:
        """vLLM's ``_closer_rest``: the rest of a closer the output stopped in, when only
        the next message's start anchor is missing."""
        if self.current < 0 or not self.opened:
            return ""
        f = self.template.fields[self.current]
        closers = f.closer.literals if f.closer is not None else None
        text = self.buf[self.pos:]
        for closer in closers or ():
            for anchor in self.template.anchors:
                if not closer.endswith(anchor) or closer == anchor:
                    continue
                for cut in range(len(closer) - 1, len(closer) - len(anchor) - 1, -1):
                    if text.endswith(closer[:cut]) or (self.body + text).endswith(closer[:cut]):
                        return closer[cut:]
        return ""

    def state(self, output: bool) -> TemplateState:
        return TemplateState(self.buf[self.pos:], max(0, self.prompt - self.pos), self.current,
                             self.opened, tuple(sorted(self.captures.items())), self.body,
                             self.overflow, self.calls, output)


def _run(template: Template, state: TemplateState, text: str, route: bool,
         context: ToolContext | None) -> _Run:
    return _Run(template, state.held + text, state.prompt_held, state.current, state.opened,
                dict(state.captures), state.body, state.overflow, state.calls, route,
                context.parse_reasoning if context else False,
                context.parse_tools if context else False,
                _tool_params(context.tools) if context and context.parse_tools else {})


def start(template: Template, prompt_text: str) -> TemplateState:
    """The state after the prompt: its text from the last start anchor read, nothing
    emitted (vLLM's ``initial_events``)."""
    ends = [m.end() for m in template.anchor.finditer(prompt_text)]
    prefix = prompt_text[ends[-1]:] if ends else prompt_text
    initial = TemplateState(current=-1 if template.implicit is None else template.implicit)
    if not prefix:
        return initial
    run = _run(template, initial, prefix, False, None)
    run.process(eos=False)
    held = len(run.buf) - run.pos
    return replace(run.state(False), prompt_held=held)


def feed_reasoning(state: TemplateState, text: str, final: bool, context: ToolContext
                   ) -> tuple[str, str, list[ToolCallDelta], TemplateState]:
    """Reasoning, content and calls of new output text (``final``: the output ended)."""
    template = context.template
    if not isinstance(template, Template):
        raise ValueError("the model has no response_template")
    text = text.translate(_RESTORE)
    run = _run(template, state, text, True, context)
    output = state.output or bool(text)
    run.process(eos=False)
    if final and output:
        rest = run.closer_rest()
        if rest:
            run.buf += rest
            run.searched.clear()
            run.process(eos=False)
        run.process(eos=True)
    escape = _ESCAPE_STAND_INS
    calls = [ToolCallDelta(c.index, c.name, c.arguments.translate(escape)) for c in run.found]
    return ("".join(run.thought).translate(escape), "".join(run.content).translate(escape),
            calls, run.state(output))


def _feed(state: TemplateState, text: str, final: bool, context: ToolContext
          ) -> tuple[str, list[ToolCallDelta], TemplateState]:
    _, content, calls, after = feed_reasoning(state, text, final, context)
    return content, calls, after


def _encode(state: TemplateState, w: Writer) -> None:
    w.text(state.held)
    w.uint(state.prompt_held)
    w.uint(state.current + 1)
    w.uint(state.opened | state.overflow << 1 | state.output << 2)
    w.uint(len(state.captures))
    for key, value in state.captures:
        w.text(key)
        w.text(value)
    w.text(state.body)
    w.uint(state.calls)


def _decode(r: Reader) -> TemplateState:
    held, prompt_held, current, bits = r.text(), r.uint(), r.uint() - 1, r.uint()
    count = r.uint()
    if bits >> 3 or count > 8 or prompt_held > len(held):
        raise ValueError("malformed response_template state")
    captures = tuple((r.text(), r.text()) for _ in range(count))
    return TemplateState(held, prompt_held, current, bool(bits & 1), captures, r.text(),
                         bool(bits & 2), r.uint(), bool(bits & 4))


FORMAT: ToolFormat[TemplateState] = ToolFormat(
    "hf", TemplateState, TemplateState, _feed, _encode, _decode, feed_reasoning)
"""vLLM's ``hf`` parser (``ResponseTemplateParser``)."""

BEAM: ToolFormat[TemplateState] = replace(FORMAT, name="beam")
"""vLLM's ``beam`` parser (``BeamParser``): ``hf``'s parsing unchanged; what it adds, a
structural-tag grammar derived from the template, constrains generation, not derendering."""
