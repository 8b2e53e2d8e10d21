"""The harness side of the drivers' protocol (tests/faults/protocol.md): a ``Driver`` is one driver process
(a program on one generated client) that runs scenarios on request and reports phases, events and outcomes."""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote


def encode(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={quote(str(v), safe='')}" for k, v in params.items())


def decode(tokens: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for t in tokens:
        k, _, v = t.partition("=")
        v = unquote(v)
        out[k] = int(v) if v.lstrip("-").isdigit() else v
    return out


@dataclass
class Outcome:
    kind: str
    fields: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)
    seconds: float = 0.0  # from the fault (or the run's start) to the outcome line
    log: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.fields}


class DriverDied(AssertionError):
    pass


class Driver:
    """One driver process: ``cmd`` started once, scenarios run one at a time."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str] | None = None) -> None:
        self.name, self.cmd = name, cmd
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1, env=env)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)
            del self.stderr[:-200]

    def _send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def run(self, scenario: str, params: dict[str, Any], on_phase: Callable[[str, dict[str, Any]], bool],
            timeout: float, on_event: Callable[[str, dict[str, Any]], None] | None = None) -> Outcome:
        """Runs ``scenario``; ``on_phase(name, fields)`` is called on each phase line (it applies the fault and
        returns True when the clock of the row's bound starts there); a phase the protocol says waits is
        answered with ``go`` after it; ``on_event`` sees each event as it comes. ``timeout`` bounds the time between
        two lines. The outcome, or ``DriverDied``/a ``hung`` outcome."""
        while not self.lines.empty():  # leftovers of an earlier, failed run
            self.lines.get_nowait()
        self._send(f"run {scenario} {encode(params)}")
        start = time.monotonic()
        deadline = start + timeout
        events: list[tuple[str, dict[str, Any]]] = []
        phases: list[str] = []
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return Outcome("hung", {"after": f"{timeout:.0f} s"}, events, phases, time.monotonic() - start,
                               "".join(self.stderr[-30:]))
            if line is None:
                raise DriverDied(f"{self.name} driver exited ({self.proc.poll()}):\n{''.join(self.stderr[-40:])}")
            words = line.split()
            if not words:
                continue
            if words[0] == "phase":
                phases.append(words[1])
                if on_phase(words[1], decode(words[2:])):
                    start = time.monotonic()
                deadline = time.monotonic() + timeout
            elif words[0] == "event":
                events.append((words[1], decode(words[2:])))
                if on_event is not None:
                    on_event(*events[-1])
                deadline = time.monotonic() + timeout
            elif words[0] == "outcome":
                return Outcome(words[1], decode(words[2:]), events, phases, time.monotonic() - start,
                               "".join(self.stderr[-30:]))

    def go(self) -> None:
        self._send("go")

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self._send("quit")
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
