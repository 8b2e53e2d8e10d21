"""Rewriting one marked results block of bench/README.md (shared by the bench scripts)."""

from __future__ import annotations

import sys
from pathlib import Path


def write_block(readme: Path, tag: str, block: str) -> None:
    """Replace what stands between ``<!-- TAG:start -->`` and ``<!-- TAG:end -->`` with ``block``."""
    text = readme.read_text(encoding="utf-8")
    start, end = f"<!-- {tag}:start -->", f"<!-- {tag}:end -->"
    if start not in text or end not in text:
        sys.exit(f"bench: {readme} has no {start} ... {end} section")
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    readme.write_text(f"{before}{start}\n{block}\n{end}{after}", encoding="utf-8")
    print(f"wrote {readme}")
