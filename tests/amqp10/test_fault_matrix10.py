"""The AMQP 1.0 fault matrix (tests/faults/matrix10.py) run against the generated 1.0 clients, Python blocking and
asyncio, each through its driver (tests/faults/protocol10.md), as tests/amqp0/clients/test_fault_matrix.py runs the 0-9-1 one.

Per row, the clients it applies to run at the same time, each against a target of its own (RabbitMQ's 1.0 plugin
through a FaultProxy, RabbitMQ directly, a closed port, a silent server, or Qpid Proton's Container as the broker:
proton_peer.ProtonBroker), and each must give the row's outcome within its bound; the outcomes are then compared
across the clients field by field.

``AMQGEN_FAULT_CLIENTS10=aio`` runs one client while it is worked on (the suite runs both).
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from faults import broker
from faults.drivers import Driver, Outcome
from faults.matrix import Row
from faults.matrix10 import CLIENTS10, PROTON, ROWS10, SPELLING10
from faults.proxy import FaultProxy
from faults.server import ScriptedServer
from proton_peer import ProtonBroker

pytestmark = [pytest.mark.broker]

HERE = Path(__file__).resolve().parents[1]
SELECTED = tuple(c for c in os.environ.get("AMQGEN_FAULT_CLIENTS10", ",".join(CLIENTS10)).split(",") if c)
#: phases after which the driver waits for ``go``
WAITS = {("connect", "connected"), ("await_outcome", "ready")}


@pytest.fixture(scope="module")
def plugin() -> None:
    from rabbitmq import rabbitmq_plugins

    proc = rabbitmq_plugins("enable", "rabbitmq_amqp1_0")
    if proc.returncode != 0:
        pytest.fail(f"`rabbitmq-plugins enable rabbitmq_amqp1_0` failed: {proc.stdout}{proc.stderr}")


@pytest.fixture(scope="module")
def drivers(amqp10: ModuleType, plugin: None) -> Iterator[dict[str, Driver]]:
    gen = Path(amqp10.__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(gen), str(HERE), str(HERE / "faults")]),
           "AMQGEN_PACKAGE": amqp10.__name__}
    programs = {"python": "driver10_blocking.py", "aio": "driver10_aio.py"}
    started = {c: Driver(c, [sys.executable, str(HERE / "faults" / programs[c])], env) for c in SELECTED}
    yield started
    for d in started.values():
        d.close()


def _closed_port() -> int:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


class Run10:
    """One row on one client: its target, its fault at its phase, the queue it used deleted after."""

    def __init__(self, row: Row, client: str) -> None:
        self.row, self.client = row, client
        self.queue = f"amqgen.fault10.{row.id}.{client}.{uuid.uuid4().hex[:8]}"
        self.stack = ExitStack()
        self.proxy: FaultProxy | None = None

    def target(self) -> dict[str, Any]:
        """The driver's url, address and usable_address for the row's target."""
        t = self.row.target
        rabbit = {"address": f"/queue/{self.queue}", "usable_address": f"/queue/{self.queue}.usable"}
        if t == "proxy":
            self.proxy = self.stack.enter_context(FaultProxy(broker.PORT, broker.HOST))
            return {"url": f"amqp://guest:guest@127.0.0.1:{self.proxy.port}", **rabbit}
        if t == "broker":
            return {"url": f"amqp://guest:guest@{broker.HOST}:{broker.PORT}", **rabbit}
        if t == "closed":
            return {"url": f"amqp://127.0.0.1:{_closed_port()}", **rabbit}
        if t == "silent":
            srv = self.stack.enter_context(ScriptedServer("silent"))
            return {"url": f"amqp://127.0.0.1:{srv.port}", **rabbit}
        assert t.startswith("proton:"), t
        peer = self.stack.enter_context(ProtonBroker(**PROTON[t.split(":", 1)[1]]))
        return {"url": f"amqp://{peer.url}", "address": self.queue, "usable_address": f"{self.queue}.usable"}

    def apply(self, action: str, args: tuple[Any, ...]) -> None:
        if action == "none":
            return
        p = self.proxy
        assert p is not None, f"{action} needs the proxy"
        {"blackhole": p.blackhole, "cut": p.cut, "segment": lambda: p.segment(args[0]),
         "stall_c2s": lambda: p.stall("c2s")}[action]()

    def execute(self, driver: Driver) -> Outcome:
        row = self.row
        with self.stack:
            params = {**self.target(), "idle": row.params.get("idle", 0), "timeout": row.params.get("timeout", 10),
                      "queue": self.queue}
            params.update({k: v for k, v in row.params.items() if k not in ("idle", "timeout")})
            if row.fault.at is None:
                self.apply(row.fault.action, row.fault.args)

            def on_phase(name: str, fields: dict[str, Any]) -> bool:
                starts = name == row.fault.at
                if starts:
                    self.apply(row.fault.action, row.fault.args)
                if (row.scenario, name) in WAITS:
                    driver.go()
                return starts

            outcome = driver.run(row.scenario, params, on_phase, (row.within or 30) * 3 + 30)
        if row.target in ("proxy", "broker"):
            for q in (self.queue, f"{self.queue}.usable"):
                with contextlib.suppress(Exception):  # a queue the scenario never declared
                    broker.delete_queue(q)
        return outcome


def judge(row: Row, client: str, outcome: Outcome) -> list[str]:
    got = outcome.as_dict()
    bad = [f"{k}={got.get(k)!r}, want {v!r}" for k, v in row.expect.items() if got.get(k) != v]
    if row.within is not None and outcome.seconds > row.within:
        bad.append(f"took {outcome.seconds:.2f} s, bound {row.within} s")
    spelled = SPELLING10.get(outcome.kind, {}).get(client)
    if spelled is not None and got.get("raised") != spelled:
        bad.append(f"raised={got.get('raised')!r}, the documented spelling is {spelled!r}")
    return [f"{client}: {b}  [outcome {got}; {outcome.seconds:.2f} s]" for b in bad]


#: the outcomes of the run, row id -> client -> outcome
RECORDED: dict[str, dict[str, Outcome]] = {}


@pytest.mark.parametrize("row", ROWS10, ids=[r.id for r in ROWS10])
def test_row(row: Row, drivers: dict[str, Driver]) -> None:
    clients = [c for c in SELECTED if c in row.clients]
    assert clients, f"no selected client runs {row.id}"
    with ThreadPoolExecutor(len(clients)) as pool:
        futures = {c: pool.submit(Run10(row, c).execute, drivers[c]) for c in clients}
        results = {c: f.result() for c, f in futures.items()}
    RECORDED[row.id] = results
    failures = [f for c, o in results.items() for f in judge(row, c, o)]
    compared = sorted(set(row.expect) | {"kind", "condition"})
    shapes = {c: tuple((k, o.as_dict().get(k)) for k in compared) for c, o in results.items()}
    if len(set(shapes.values())) > 1:
        failures.append(f"the clients differ: {shapes}")
    assert not failures, "\n".join(failures + [f"--- {c} log:\n{o.log}" for c, o in results.items()
                                                if o.log and failures])
