"""Remove from a `pip install --target` folder every distribution the service cannot reach.

    python scripts/prune_layer.py TARGET ROOT [--drop DIST]...

Keeps ROOT and what its requirements reach (read from each ``*.dist-info/METADATA``,
requirements behind an ``extra`` left out, other markers kept: over-inclusive is safe),
except through a dropped distribution; deletes the rest with the files its ``RECORD`` lists.
derender drops ``huggingface-hub``: ``tokenizers`` requires it only for
``Tokenizer.from_pretrained`` (downloads), and it brings a dozen packages of its own.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from email.parser import Parser
from pathlib import Path

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed(target: Path) -> dict[str, Path]:
    """Canonical distribution name → its dist-info folder."""
    found = {}
    for info in target.glob("*.dist-info"):
        metadata = Parser().parsestr((info / "METADATA").read_text(encoding="utf-8"))
        found[canonical(metadata["Name"])] = info
    return found


def requirements(info: Path) -> set[str]:
    metadata = Parser().parsestr((info / "METADATA").read_text(encoding="utf-8"))
    names = set()
    for requirement in metadata.get_all("Requires-Dist") or []:
        spec, _, marker = requirement.partition(";")
        if "extra" in marker:
            continue
        match = _NAME.match(spec)
        if match:
            names.add(canonical(match.group(1)))
    return names


def remove(target: Path, info: Path) -> int:
    """Delete a distribution's files (its RECORD) and the folders they leave empty."""
    removed = 0
    folders = set()
    for line in (info / "RECORD").read_text(encoding="utf-8").splitlines():
        path = target / line.split(",", 1)[0]
        if path.is_file():
            path.unlink()
            removed += 1
            folders.add(path.parent)
    for leaf in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        folder = leaf
        while folder != target and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent
    shutil.rmtree(info, ignore_errors=True)
    return removed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", type=Path)
    parser.add_argument("root")
    parser.add_argument("--drop", action="append", default=[])
    args = parser.parse_args()
    dists = installed(args.target)
    dropped = {canonical(name) for name in args.drop}
    keep: set[str] = set()
    todo = [canonical(args.root)]
    while todo:
        name = todo.pop()
        if name in keep or name in dropped or name not in dists:
            continue
        keep.add(name)
        todo.extend(requirements(dists[name]))
    for name in sorted(set(dists) - keep):
        print(f"pruned {name} ({remove(args.target, dists[name])} files)")
    print(f"kept {', '.join(sorted(keep))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
