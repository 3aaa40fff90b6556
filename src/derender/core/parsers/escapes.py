"""MiniCPM-V's newline recovery (vLLM 0.33's ``EscapedNewlineNormalizer``,
``vllm/parser/minicpmv.py``): the model writes a newline as the two characters ``\\`` ``n``;
served with the ``minicpmv`` parser, vLLM turns ``\\n``, ``\\r`` and ``\\r\\n`` in the
reasoning and the content (not in tool-call arguments) into a newline, except inside code
(`` ` ``…`` ` ``, ```` ``` ````…```` ``` ````), LaTeX (``$``…``$``, ``$$``…``$$``, ``\\(``…``\\)``,
``\\[``…``\\]``) and after a run of backslashes (kept as written).

Incremental, as vLLM's: the state is the open span's closing marker and the text held (a
marker or an escape that may still be completed by the next text: at most 3 characters; a
run of backslashes is held as its last two, which decide the same). The whole text fed at
once, ``final``, is vLLM's ``recover_newlines``."""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"[`$\\]")
_HELD_ESCAPES = ("\\", "\\r", "\\r\\")


def recover(closing: str, pending: str, text: str, final: bool) -> tuple[str, str, str]:
    """(text out, closing marker, held text) after ``text``; ``final`` releases what is held."""
    text = pending + text
    pending = ""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if closing:
            at = text.find(closing, i)
            if at >= 0:
                out.append(text[i:at + len(closing)])
                i, closing = at + len(closing), ""
                continue
            if not final:
                for k in range(max(i, n - len(closing) + 1), n):
                    if closing.startswith(text[k:]):
                        out.append(text[i:k])
                        return "".join(out), closing, text[k:]
            out.append(text[i:])
            break
        match = _SPECIAL.search(text, i)
        if match is None:
            out.append(text[i:])
            break
        at = match.start()
        out.append(text[i:at])
        i = at
        c = text[i]
        if c == "`":
            if not final and text[i:] in ("`", "``"):
                pending = text[i:]
                break
            closing = "```" if text.startswith("```", i) else "`"
            out.append(closing)
            i += len(closing)
            continue
        if c == "$":
            if not final and i == n - 1:
                pending = "$"
                break
            closing = "$$" if text.startswith("$$", i) else "$"
            out.append(closing)
            i += len(closing)
            continue
        end = i + 1
        while end < n and text[end] == "\\":
            end += 1
        if end - i > 1:  # a run of backslashes: as written (what follows it too)
            if not final and end == n:
                out.append(text[i:end - 2])
                pending = "\\\\"
                break
            out.append(text[i:end])
            i = end
            continue
        if not final and text[i:] in _HELD_ESCAPES:
            pending = text[i:]
            break
        if text.startswith("\\r\\n", i):
            out.append("\n")
            i += 4
        elif text.startswith(("\\n", "\\r"), i):
            out.append("\n")
            i += 2
        elif text.startswith(("\\(", "\\["), i):
            out.append(text[i:i + 2])
            closing = "\\)" if text[i + 1] == "(" else "\\]"
            i += 2
        else:
            out.append("\\")
            i += 1
    if final and pending:
        out.append(pending)
        pending = ""
    return "".join(out), closing, pending
