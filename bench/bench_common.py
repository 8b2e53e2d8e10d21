"""What the bench scripts share: the machine's CPU name, and rewriting one marked block of bench/README.md."""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


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


def interleaved(fns: dict[str, Callable[[], Any]], rounds: int = 11, target: float = 0.1) -> dict[str, list[float]]:
    """CPU seconds per operation (``time.process_time``: this process's user + system time, blind to other
    processes on a shared machine), per function, per round. Each round runs every function for about ``target``
    seconds of CPU, in turn, the order rotated from round to round, so that whatever drifts (the machine's load,
    its clock) meets every function alike; the spread of the rounds says how far one run can be trusted."""
    counts = {}
    for name, fn in fns.items():  # calibrate: operations for about `target` s, after a warm-up
        for _ in range(20):
            fn()
        n, spent = 1, 0.0
        while spent < target / 10:
            n *= 2
            start = time.process_time()
            for _ in range(n):
                fn()
            spent = time.process_time() - start
        counts[name] = max(1, int(n * target / spent))
    out: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn, n = fns[name], counts[name]
            start = time.process_time()
            for _ in range(n):
                fn()
            out[name].append((time.process_time() - start) / n)
    return out


def ratios(ours: list[float], theirs: list[float]) -> tuple[float, float, float]:
    """Their time over ours per round (above 1: ours is faster): the median, and the lowest and highest round."""
    per_round = sorted(t / o for o, t in zip(ours, theirs, strict=True))
    return statistics.median(per_round), per_round[0], per_round[-1]
