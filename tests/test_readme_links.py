"""The README's links lead somewhere: every ``(#anchor)`` (the contents line at the top, the
configuration groups, cross references) is a heading's anchor as GitHub derives it, and every
relative link is a file or folder of the repository."""

from __future__ import annotations

import re
from collections import Counter

from derender_testing.models import ROOT

README = ROOT / "README.md"


def _text_outside_code() -> str:
    return re.sub(r"^```.*?^```", "", README.read_text(encoding="utf-8"), flags=re.S | re.M)


def _anchors(text: str) -> set[str]:
    """GitHub's: lower case, punctuation but ``-`` and ``_`` dropped, spaces to ``-``; a
    repeated anchor gets ``-1``, ``-2``, …"""
    seen: Counter[str] = Counter()
    anchors = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
        seen[slug] += 1
    return anchors


def test_every_anchor_link_is_a_heading() -> None:
    text = _text_outside_code()
    anchors = _anchors(text)
    links = re.findall(r"\]\(#([^)]+)\)", text)
    assert len(links) >= 15
    assert {"configuration", "models", "signing-keys", "stream-state", "limits",
            "local-server-and-cores", "streaming-from-python"} <= set(links)
    assert not [link for link in links if link not in anchors]


def test_every_relative_link_exists() -> None:
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", _text_outside_code())
    assert links
    assert not [link for link in links if not (ROOT / link).exists()]
