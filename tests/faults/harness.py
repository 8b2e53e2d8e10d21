"""The fault matrix's runner, shared by tests/amqp0/clients/test_fault_matrix.py and scripts/fault-row: the driver commands of
each client, and ``Run``, one row on one client (its target, its fault at its phase, its checks afterwards)."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import uuid
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType
from typing import Any

from faults import broker
from faults.drivers import Driver, Outcome
from faults.matrix import SPELLING, Row
from faults.proxy import FaultProxy
from faults.server import ScriptedServer

HERE = Path(__file__).resolve().parent.parent  # tests/
#: phases after which the driver waits for ``go`` (tests/faults/protocol.md)
WAITS = {("connect", "connected"), ("await_confirm", "ready"), ("blocked", "connected"), ("blocked", "blocked"),
         ("consume_leave", "left")}


def python_commands(gen: Path, package: str) -> dict[str, tuple[list[str], dict[str, str]]]:
    """The Python drivers' commands, for ``package`` rendered into the folder ``gen``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(gen), str(HERE)]), "AMQGEN_PACKAGE": package}
    return {
        "python": ([sys.executable, str(HERE / "faults" / "driver_blocking.py")], env),
        "aio": ([sys.executable, str(HERE / "faults" / "driver_aio.py")], env),
    }


def start_drivers(clients: tuple[str, ...], amqp091: ModuleType, request: Any, tmp_path_factory: Any) -> dict[str, Driver]:
    """One driver process per client (the C driver built, the Java one compiled with tests/java's programs by the
    java_build fixture), for a test module."""
    cmds = python_commands(Path(str(amqp091.__file__)).resolve().parent.parent, amqp091.__name__)
    if "c" in clients:
        from faults.c_driver import c_driver_command

        cmds["c"] = c_driver_command(tmp_path_factory.mktemp("c-fault-driver"))
    if "java" in clients:
        from faults.java_driver import java_driver_command

        cmds["java"] = java_driver_command(request.getfixturevalue("java_build"))
    return {c: Driver(c, *cmds[c]) for c in clients}


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
        self.alarm = ExitStack()  # the memory alarm alone: restored at the blocked phase (the proxy stays up)
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
        # no path for the default virtual host: the RabbitMQ URI spec reads "amqp://h/" as the vhost ""
        url = f"amqp://{user}:{password}@{host}:{port}" + (f"/{vhost}" if vhost else "")
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
            self.alarm.enter_context(broker.memory_alarm())
        elif action in ("restart", "refuse_long"):
            assert p is not None
            p.refuse(10 if action == "restart" else 30)
            p.cut()
        elif action == "blackhole_then_cut":
            assert p is not None
            p.blackhole()
            timer = threading.Timer(1.0, p.cut)
            timer.start()
            self.stack.callback(timer.cancel)
        else:
            assert p is not None, f"{action} needs the proxy"
            {"blackhole": lambda: p.blackhole(), "cut": lambda: p.cut(), "stall_c2s": lambda: p.stall("c2s"),
             "throttle_c2s": lambda: p.throttle(args[0], "c2s"), "segment": lambda: p.segment(args[0]),
             "coalesce": lambda: p.coalesce(args[0])}[action]()

    def execute(self, driver: Driver) -> tuple[Outcome, list[str]]:
        row = self.row
        with self.stack, self.alarm:
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
                    self.alarm.close()  # the alarm restored: the broker unblocks
                if row.id == "url_parameters" and name == "connected":
                    checks.extend(self._broker_saw_parameters())
                if row.after == "left_cancelled" and name == "left" and fields.get("consumers") != 0:
                    checks.append(f"the broker still had {fields.get('consumers')} consumers after the loop was left")
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
            elif row.after in ("queue_depth_0", "queue_depth_count"):
                messages, _ = broker.depth(self.queue)
                want = 0 if row.after == "queue_depth_0" else row.params["count"]
                if messages != want:
                    checks.append(f"the queue holds {messages} messages, not {want}")
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
    spelled = SPELLING.get(outcome.kind, {}).get(client)
    if spelled is not None and got.get("raised") != spelled:
        bad.append(f"raised={got.get('raised')!r}, the documented spelling is {spelled!r}")
    kinds = [k for k, _ in outcome.events]
    missing = [e for e in row.events if e not in kinds]
    if missing:
        bad.append(f"no event {missing} (events: {kinds})")
    unwanted = [e for e in row.refused if e in kinds]
    if unwanted:
        bad.append(f"events it must not give: {unwanted}")
    bad += checks
    return [f"{client}: {b}  [outcome {got}; {outcome.seconds:.2f} s]" for b in bad]




def judge(row: Row, client: str, outcome: Outcome, checks: list[str]) -> list[str]:
    """What differs from the row's expectation, one line each (empty: the client gave the row's outcome)."""
    got = outcome.as_dict()
    bad = [f"{k}={got.get(k)!r}, want {v!r}" for k, v in row.expect.items() if got.get(k) != v]
    if row.within is not None and outcome.seconds > row.within:
        bad.append(f"took {outcome.seconds:.2f} s, bound {row.within} s")
    spelled = SPELLING.get(outcome.kind, {}).get(client)
    if spelled is not None and got.get("raised") != spelled:
        bad.append(f"raised={got.get('raised')!r}, the documented spelling is {spelled!r}")
    kinds = [k for k, _ in outcome.events]
    missing = [e for e in row.events if e not in kinds]
    if missing:
        bad.append(f"no event {missing} (events: {kinds})")
    unwanted = [e for e in row.refused if e in kinds]
    if unwanted:
        bad.append(f"events it must not give: {unwanted}")
    bad += checks
    return [f"{client}: {b}  [outcome {got}; {outcome.seconds:.2f} s]" for b in bad]
