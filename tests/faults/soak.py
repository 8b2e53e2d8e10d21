"""The recovery soak (issue 42): a client's producer and consumer (the driver's ``soak`` scenario,
tests/faults/protocol.md) run through a fault proxy that cuts their connections every 3-7 s (RST and black-hole in
turn) while ``rabbitmqctl close_connection`` closes them every 10 s; the harness then reads what was confirmed and
what was consumed. scripts/soak-recovery runs it long, on our clients and the peers (the RabbitMQ Java client's
automatic recovery, aio-pika's connect_robust); the suite runs a bounded slice on each of our clients."""

from __future__ import annotations

import contextlib
import random
import statistics
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faults import broker
from faults.drivers import Driver, Outcome
from faults.proxy import FaultProxy

EXCHANGE = "amqgen.soak"


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (/proc/PID/stat), all its threads."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class SoakReport:
    client: str
    count: int
    outcome: Outcome
    confirmed: int = 0
    consumed: int = 0  # distinct ids delivered
    deliveries: int = 0
    lost: list[int] = field(default_factory=list)  # confirmed, never delivered
    duplicated: int = 0  # ids delivered more than once
    unexplained: list[int] = field(default_factory=list)  # duplicates neither unconfirmed at a cut nor redelivered
    republished: int = 0  # ids reported unconfirmed (and published again)
    max_consumers: int = 0  # the most consumers the queue had at a sample, on connections the proxy still carries
    #: the most consumers at a sample on connections the proxy black-holed: gone for the client, not yet for the
    #: broker (it drops them at its own heartbeat deadline); they get nothing it can deliver, so they are not
    #: duplicate consumers
    held_consumers: int = 0
    faults: list[str] = field(default_factory=list)  # what the harness did, in order
    recovery: list[float] = field(default_factory=list)  # seconds from a fault to each connection's recovery
    recovery_failed: list[str] = field(default_factory=list)
    cpu: float = 0.0  # the client process's CPU seconds during the soak
    seconds: float = 0.0

    def problems(self) -> list[str]:
        out = []
        if self.outcome.kind != "ok":
            out.append(f"outcome {self.outcome.as_dict()}")
        if self.lost:
            out.append(f"{len(self.lost)} confirmed messages lost (e.g. {self.lost[:5]})")
        if self.unexplained:
            out.append(f"{len(self.unexplained)} duplicates neither unconfirmed nor redelivered "
                       f"(e.g. {self.unexplained[:5]})")
        if self.max_consumers > 1:
            out.append(f"the queue had {self.max_consumers} consumers")
        if self.recovery_failed:
            out.append(f"recovery failed: {self.recovery_failed}")
        return out

    def row(self) -> dict[str, Any]:
        rec = sorted(self.recovery)
        return {"client": self.client, "messages": self.count, "confirmed": self.confirmed, "lost": len(self.lost),
                "duplicated": self.duplicated, "unexplained": len(self.unexplained),
                "republished": self.republished, "faults": len(self.faults), "recoveries": len(rec),
                "recovery_median_s": round(statistics.median(rec), 2) if rec else None,
                "recovery_worst_s": round(rec[-1], 2) if rec else None, "max_consumers": self.max_consumers,
                "held_consumers": self.held_consumers,
                "cpu_s": round(self.cpu, 2), "cpu_us_per_msg": round(self.cpu / max(1, self.count) * 1e6, 1),
                "seconds": round(self.seconds, 1)}


class _Faults(threading.Thread):
    """Cuts (RST and black-hole in turn) every ``period`` seconds and closes the connections with rabbitmqctl every
    ``close_every`` seconds, until stopped; notes when it did what."""

    def __init__(self, proxy: FaultProxy, seed: int, period: tuple[float, float], close_every: float) -> None:
        super().__init__(daemon=True)
        self.proxy, self.rng, self.period, self.close_every = proxy, random.Random(seed), period, close_every
        self.stop = threading.Event()
        self.log: list[tuple[float, str]] = []

    def run(self) -> None:
        next_cut = time.monotonic() + self.rng.uniform(*self.period)
        next_close = time.monotonic() + self.close_every
        black = False
        while not self.stop.wait(0.05):
            now = time.monotonic()
            if now >= next_cut:
                black = not black
                self.proxy.blackhole() if black else self.proxy.cut()
                self.log.append((now, "blackhole" if black else "cut"))
                next_cut = now + self.rng.uniform(*self.period)
            if now >= next_close:
                for _, up in self.proxy.connections():
                    with contextlib.suppress(AssertionError):  # gone meanwhile (cut, or not yet open)
                        broker.close_connection(up, "soak: forced close")
                self.log.append((now, "close_connection"))
                next_close = now + self.close_every


def soak(client: str, driver: Driver, *, count: int, size: int = 100, heartbeat: int = 2, republish: bool = True,
         window: int = 100, rate: float = 500.0, seed: int = 1, period: tuple[float, float] = (3.0, 7.0), close_every: float = 10.0,
         quiet: float = 120.0) -> SoakReport:
    """Runs the soak on one client's driver; the report says what was lost, duplicated, and how fast it came
    back."""
    with tempfile.TemporaryDirectory(prefix="amqgen-soak-") as tmp, FaultProxy() as proxy:
        results = Path(tmp) / "results.txt"
        results.touch()
        faults = _Faults(proxy, seed, period, close_every)
        queue: list[str] = []
        recovered: list[tuple[float, str]] = []
        failed: list[str] = []
        consumers: list[int] = []
        stale: list[int] = []

        def sample() -> None:
            if queue:
                with contextlib.suppress(Exception):  # the queue may be between names
                    held = proxy.blackholed()
                    ports = broker.consumer_ports(queue[-1])
                    consumers.append(sum(p not in held for p in ports))
                    stale.append(sum(p in held for p in ports))

        def on_event(kind: str, f: dict[str, Any]) -> None:
            if kind == "queue":
                queue.append(str(f["name"]))
            elif kind == "recovered":
                recovered.append((time.monotonic(), str(f.get("conn"))))
                if f.get("conn") == "consumer":  # a second consumer would show once the first is back
                    threading.Timer(1.0, sample).start()
            elif kind == "recovery_failed":
                failed.append(f"{f.get('conn')}: {f.get('cause')}")

        params = {"url": proxy.url(), "heartbeat": heartbeat, "count": count, "size": size, "exchange": EXCHANGE,
                  "routing_key": f"soak.{client}", "results": str(results), "republish": int(republish),
                  "window": window, "rate": rate, "queue": "", "timeout": 10}
        cpu0, t0 = cpu_seconds(driver.proc.pid), time.monotonic()
        faults.start()
        try:
            outcome = driver.run("soak", params, lambda name, f: False, quiet, on_event)
        finally:
            faults.stop.set()
            faults.join()
        report = SoakReport(client, count, outcome, seconds=time.monotonic() - t0,
                            cpu=cpu_seconds(driver.proc.pid) - cpu0)
        for name in dict.fromkeys(queue):  # every name: a client that renames a queue may leave the old one behind
            with contextlib.suppress(Exception):
                broker.delete_queue(name)
        confirmed, unconfirmed, delivered, redelivered = set(), set(), Counter[int](), Counter[int]()
        for line in results.read_text().splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "C":
                confirmed.add(int(rest))
            elif kind == "U":
                unconfirmed.add(int(rest))
            elif kind == "D":
                ident, flag = rest.split()
                delivered[int(ident)] += 1
                redelivered[int(ident)] += int(flag)
        report.confirmed, report.consumed = len(confirmed), len(delivered)
        report.deliveries = sum(delivered.values())
        report.lost = sorted(confirmed - set(delivered))
        dups = [i for i, n in delivered.items() if n > 1]
        report.duplicated = len(dups)
        # a second copy is explained if the publish was unconfirmed at a cut (published again), or if the broker
        # marked every copy after the first redelivered
        report.unexplained = sorted(i for i in dups if i not in unconfirmed and redelivered[i] < delivered[i] - 1)
        report.republished = len(unconfirmed)
        report.max_consumers = max(consumers, default=0)
        report.held_consumers = max(stale, default=0)
        report.faults = [what for _, what in faults.log]
        report.recovery_failed = failed
        for at, _what in faults.log:
            for conn in ("producer", "consumer"):
                after = [t for t, c in recovered if c == conn and t >= at]
                if after:
                    report.recovery.append(after[0] - at)
        return report
