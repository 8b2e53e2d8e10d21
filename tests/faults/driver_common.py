"""What the Python drivers share: the protocol's lines (tests/faults/protocol.md), the bodies, the fd count."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, unquote


def body(i: int, size: int) -> bytes:
    """The roundtrip pattern: ``i`` in 4 octets, then (i + k) % 256."""
    head = i.to_bytes(4, "big")
    return head + bytes((i + k) % 256 for k in range(max(0, size - 4)))


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def say(kind: str, name: str, /, **fields: Any) -> None:
    words = [kind, name] + [f"{k}={quote(str(int(v) if isinstance(v, bool) else v), safe='')}"
                            for k, v in fields.items()]
    sys.stdout.write(" ".join(words) + "\n")
    sys.stdout.flush()


def wait_go() -> None:
    line = sys.stdin.readline()
    if line.strip() != "go":
        raise SystemExit(f"expected go, got {line!r}")


class Outcome(Exception):
    """Raised by a scenario to end with this outcome."""

    def __init__(self, kind: str, **fields: Any) -> None:
        super().__init__(kind)
        self.kind, self.fields = kind, fields


def serve(run: Callable[[str, dict[str, Any]], None]) -> None:
    """Reads ``run`` lines and calls ``run(scenario, params)``; the scenario prints its outcome (or raises
    Outcome); any other exception is ``outcome error``."""
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            return
        assert words[0] == "run", line
        params: dict[str, Any] = {}
        for t in words[2:]:
            k, _, v = t.partition("=")
            v = unquote(v)
            params[k] = int(v) if v.lstrip("-").isdigit() else v
        try:
            run(words[1], params)
        except Outcome as o:
            say("outcome", o.kind, **o.fields)
        except BaseException as e:  # noqa: BLE001 - reported to the harness, never fatal
            traceback.print_exc()
            say("outcome", "error", type=type(e).__name__, message=str(e)[:300].replace("\n", " "))


class Windows:
    """The soak producer's windows (protocol.md, "The recovery soak"): which ids go next (those reported unconfirmed
    first), when the window may start, and each window's outcome as result lines."""

    def __init__(self, count: int, window: int, rate: float) -> None:
        self.count, self.window, self.rate = count, window, rate
        self.retry: list[int] = []
        self.next_id = self.n = self.confirmed = 0

    def due(self, start: float) -> float:
        """When the next window may start (``start``: the first one's time)."""
        return start + self.n * self.window / self.rate

    def batch(self) -> list[int]:
        self.n += 1
        out: list[int] = []
        while len(out) < self.window and (self.retry or self.next_id < self.count):
            if self.retry:
                out.append(self.retry.pop(0))
            else:
                out.append(self.next_id)
                self.next_id += 1
        return out

    def settle(self, batch: list[int], bad: set[int], line: Callable[[str], None]) -> None:
        """The window's confirm wait reported ``bad`` (unconfirmed, nacked or returned ids): those are published
        again, the others confirmed."""
        for ident in batch:
            if ident in bad:
                line(f"U {ident}")
                self.retry.append(ident)
            else:
                line(f"C {ident}")
                self.confirmed += 1
        for ident in bad - set(batch):  # reported late: counted confirmed in an earlier window
            line(f"U {ident}")
