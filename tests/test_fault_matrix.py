"""The fault matrix (tests/faults/matrix.py) run against every generated 0-9-1 client: Python blocking, Python
asyncio, C and Java, each through its driver (tests/faults/protocol.md).

Per row, the clients it applies to run at the same time, each against a fault proxy of its own (or the broker, a
closed port, a scripted server), and each must give the row's outcome within its bound; the outcomes are then
compared across the clients field by field (a difference between two clients fails the row even where both
match what the row asks, as the engine differential compares logs).

``AMQGEN_FAULT_CLIENTS=python,c`` runs a subset while a client is being worked on (the suite runs all four).
"""

from __future__ import annotations

import contextlib
import os
import socket
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
from faults.matrix import CLIENTS, ROWS, Row
from faults.proxy import FaultProxy
from faults.server import ScriptedServer

pytestmark = [pytest.mark.broker]

HERE = Path(__file__).resolve().parent
SELECTED = tuple(c for c in os.environ.get("AMQGEN_FAULT_CLIENTS", ",".join(CLIENTS)).split(",") if c)
#: phases after which the driver waits for ``go`` (tests/faults/protocol.md)
WAITS = {("connect", "connected"), ("await_confirm", "ready"), ("blocked", "connected"), ("blocked", "blocked"),
         ("consume_leave", "left")}


def _python_commands(amqp091: ModuleType) -> dict[str, tuple[list[str], dict[str, str]]]:
    gen = str(Path(amqp091.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([gen, str(HERE)]), "AMQGEN_PACKAGE": amqp091.__name__}
    return {
        "python": ([sys.executable, str(HERE / "faults" / "driver_blocking.py")], env),
        "aio": ([sys.executable, str(HERE / "faults" / "driver_aio.py")], env),
    }


@pytest.fixture(scope="module")
def drivers(amqp091: ModuleType, request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Driver]]:
    """One driver process per selected client for the whole module (the C driver built, the Java one compiled
    with tests/java's programs)."""
    cmds = _python_commands(amqp091)
    if "c" in SELECTED:
        from faults.c_driver import c_driver_command

        cmds["c"] = c_driver_command(tmp_path_factory.mktemp("c-fault-driver"))
    if "java" in SELECTED:
        from faults.java_driver import java_driver_command

        cmds["java"] = java_driver_command(request.getfixturevalue("java_build"))
    started = {c: Driver(c, *cmds[c]) for c in SELECTED}
    yield started
    for d in started.values():
        d.close()


@pytest.fixture(scope="module")
def engine(amqp091: ModuleType) -> ModuleType:
    import importlib

    return importlib.import_module(f"{amqp091.__name__}.engine")


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


class Run:
    """One row on one client: its target, its fault, its checks afterwards."""

    def __init__(self, row: Row, client: str, engine: ModuleType) -> None:
        self.row, self.client, self.engine = row, client, engine
        self.queue = f"amqgen.fault.{row.id}.{client}.{uuid.uuid4().hex[:8]}"
        self.stack = ExitStack()
        self.proxy: FaultProxy | None = None

    def url(self) -> str:
        row = self.row
        user, password, vhost = "guest", row.params.get("password", "guest"), row.params.get("vhost", "")
        if row.target == "proxy":
            self.proxy = self.stack.enter_context(FaultProxy())
            port, host = self.proxy.port, "127.0.0.1"
        elif row.target == "broker":
            port, host = broker.PORT, broker.HOST
        elif row.target == "closed":
            port, host = _closed_port(), "127.0.0.1"
        elif row.target == "unknown_host":
            port, host = 5672, "no-such-host.invalid"
        else:
            srv = self.stack.enter_context(ScriptedServer(row.target.split(":", 1)[1], self.engine))
            port, host = srv.port, "127.0.0.1"
        url = f"amqp://{user}:{password}@{host}:{port}/{vhost}"
        query = row.params.get("query")
        if row.id == "url_parameters":
            query = f"{query}&name=amqgen-fault-{self.client}"
        return f"{url}?{query}" if query else url

    def apply(self, action: str, args: tuple[Any, ...]) -> None:
        p = self.proxy
        if action == "none":
            return
        if action == "close_connection":
            assert p is not None
            broker.close_connection(p.connections()[-1][1])
        elif action == "delete_queue":
            broker.delete_queue(self.queue)
        elif action == "memory_alarm":
            self.stack.enter_context(broker.memory_alarm())
        else:
            assert p is not None, f"{action} needs the proxy"
            {"blackhole": lambda: p.blackhole(), "cut": lambda: p.cut(), "stall_c2s": lambda: p.stall("c2s"),
             "throttle_c2s": lambda: p.throttle(args[0], "c2s"), "segment": lambda: p.segment(args[0]),
             "coalesce": lambda: p.coalesce(args[0])}[action]()

    def execute(self, driver: Driver) -> tuple[Outcome, list[str]]:
        row = self.row
        with self.stack:
            params = {"url": self.url(), "heartbeat": row.params.get("heartbeat", 10), "queue": self.queue,
                      "timeout": row.params.get("timeout", 10)}
            params.update({k: v for k, v in row.params.items()
                           if k not in ("query", "password", "vhost", "heartbeat", "timeout")})
            if row.scenario in ("consume_ack", "worker_acks"):
                broker.fill(self.queue, row.params["count"])
            if row.fault.at is None:
                self.apply(row.fault.action, row.fault.args)
            checks: list[str] = []

            def on_phase(name: str, fields: dict[str, Any]) -> bool:
                starts = False
                if name == row.fault.at:
                    self.apply(row.fault.action, row.fault.args)
                    starts = True
                if row.scenario == "blocked" and name == "blocked":
                    self.stack.close()  # the alarm restored: the broker unblocks
                if row.id == "url_parameters" and name == "connected":
                    checks.extend(self._broker_saw_parameters())
                if (row.scenario, name) in WAITS:
                    driver.go()
                return starts

            timeout = (row.within or 30) * 3 + 30
            outcome = driver.run(row.scenario, params, on_phase, timeout)
            if row.after == "queue_holds_unacked":
                messages, _ = broker.depth(self.queue)
                want = row.params["count"] - row.params["ack"]
                if messages != want:
                    checks.append(f"the queue holds {messages} messages after the close, not {want}: acks lost")
        with contextlib.suppress(Exception):  # the queue may never have been declared
            broker.delete_queue(self.queue)
        return outcome, checks

    def _broker_saw_parameters(self) -> list[str]:
        assert self.proxy is not None
        seen = broker.connection_by_port(self.proxy.connections()[-1][1], "timeout", "frame_max", "channel_max",
                                         "client_properties")
        want = {"timeout": "5", "frame_max": "8192", "channel_max": "100"}
        bad = [f"the broker saw {k}={seen[k]}, not {v}" for k, v in want.items() if seen[k] != v]
        if f"amqgen-fault-{self.client}" not in seen["client_properties"]:
            bad.append(f"the broker saw no connection_name in {seen['client_properties']}")
        return bad


def _judge(row: Row, client: str, outcome: Outcome, checks: list[str]) -> list[str]:
    got = outcome.as_dict()
    bad = [f"{k}={got.get(k)!r}, want {v!r}" for k, v in row.expect.items() if got.get(k) != v]
    if row.within is not None and outcome.seconds > row.within:
        bad.append(f"took {outcome.seconds:.2f} s, bound {row.within} s")
    kinds = [k for k, _ in outcome.events]
    missing = [e for e in row.events if e not in kinds]
    if missing:
        bad.append(f"no event {missing} (events: {kinds})")
    bad += checks
    return [f"{client}: {b}  [outcome {got}; {outcome.seconds:.2f} s]" for b in bad]


#: the outcomes of the run, row id -> client -> outcome (compared across clients, rendered into the docs table)
RECORDED: dict[str, dict[str, Outcome]] = {}


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_row(row: Row, drivers: dict[str, Driver], engine: ModuleType) -> None:
    clients = [c for c in SELECTED if c in row.clients]
    assert clients, f"no selected client runs {row.id}"
    with ThreadPoolExecutor(len(clients)) as pool:
        futures = {c: pool.submit(Run(row, c, engine).execute, drivers[c]) for c in clients}
        results = {c: f.result() for c, f in futures.items()}
    RECORDED[row.id] = {c: r[0] for c, r in results.items()}
    failures = [f for c, (o, checks) in results.items() for f in _judge(row, c, o, checks)]
    compared = sorted(set(row.expect) | {"kind", "code"})
    shapes = {c: tuple((k, o.as_dict().get(k)) for k in compared) for c, (o, _) in results.items()}
    if len(set(shapes.values())) > 1:
        failures.append(f"the clients differ: {shapes}")
    assert not failures, "\n".join(failures + [f"--- {c} log:\n{o.log}" for c, (o, _) in results.items()
                                                if o.log and failures])
