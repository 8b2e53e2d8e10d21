"""What the bench scripts share: the machine's CPU name, and rewriting one marked block of bench/README.md."""

from __future__ import annotations

import sys
from pathlib import Path


def cpu_model(default: str) -> str:
    """The CPU's model name from /proc/cpuinfo (``default`` where there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return default


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
