"""Faults the broker makes, driven by the tests: a connection closed by the operator (``rabbitmqctl
close_connection``, matched by the client's port as the broker sees it), a queue deleted under its consumer (by
another connection: pika, an independent client), a memory alarm (the broker blocks publishers) set and always
restored, and what the harness reads back (queue depth and consumers, connections' negotiated values)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator

import pika

HOST = os.environ.get("AMQP_HOST", "127.0.0.1")
PORT = int(os.environ.get("AMQP_PORT", "5672"))


def ctl(*args: str, timeout: float = 60) -> str:
    exe = shutil.which("rabbitmqctl") or "/usr/sbin/rabbitmqctl"
    assert os.path.exists(exe), "rabbitmqctl is not installed (Debian package rabbitmq-server)"
    proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"rabbitmqctl {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}"
    return proc.stdout


def connections(*items: str) -> list[dict[str, str]]:
    """``rabbitmqctl list_connections`` with these items (``peer_port`` always), one dict per connection."""
    names = ("peer_port", *[i for i in items if i != "peer_port"])
    rows = []
    for line in ctl("list_connections", "-q", "--no-table-headers", *names).splitlines():
        values = line.split("\t")
        if len(values) == len(names):
            rows.append(dict(zip(names, values)))
    return rows


def connection_by_port(port: int, *items: str) -> dict[str, str]:
    found = [c for c in connections("pid", *items) if c["peer_port"] == str(port)]
    assert len(found) == 1, f"no broker connection (or several) from port {port}: {found}"
    return found[0]


def close_connection(port: int, reason: str = "closed by the fault matrix") -> None:
    """The operator closes the connection from ``port`` (as the broker sees it): connection.close 320."""
    ctl("close_connection", connection_by_port(port)["pid"], reason)


@contextlib.contextmanager
def channel() -> Iterator[pika.adapters.blocking_connection.BlockingChannel]:
    conn = pika.BlockingConnection(pika.ConnectionParameters(HOST, PORT, heartbeat=0))
    try:
        yield conn.channel()
    finally:
        conn.close()


def fill(queue: str, count: int, size: int = 100) -> None:
    """Declares ``queue`` (as the drivers do) and puts ``count`` messages in it, confirmed."""
    with channel() as ch:
        ch.queue_declare(queue)
        ch.confirm_delivery()
        for i in range(count):
            ch.basic_publish("", queue, i.to_bytes(4, "big") + bytes(size - 4))


def delete_queue(queue: str) -> None:
    with channel() as ch:
        ch.queue_delete(queue)


def depth(queue: str) -> tuple[int, int]:
    """(messages, consumers) of ``queue`` (passive declare)."""
    with channel() as ch:
        ok = ch.queue_declare(queue, passive=True).method
        return ok.message_count, ok.consumer_count


def consumer_ports(queue: str) -> list[int]:
    """The peer port of the connection (as the broker sees it) of each consumer of ``queue``; -1 where the
    connection went between the listings."""
    def table(*args: str) -> list[list[str]]:
        return [line.split("\t") for line in ctl(*args, "-q", "--no-table-headers").splitlines()]
    ports = {pid: int(port) for pid, port in table("list_connections", "pid", "peer_port")}
    channels = {pid: conn for pid, conn in table("list_channels", "pid", "connection")}
    return [ports.get(channels.get(ch, ""), -1) for q, ch in table("list_consumers", "queue_name", "channel_pid")
            if q == queue]


def _watermark() -> str:
    """The watermark the broker is configured with (its application environment; RabbitMQ's default 0.4), not
    the one in force: a run killed inside memory_alarm, or two runs overlapping, would otherwise hand the
    lowered one on as the one to restore, and the broker would block every publisher until restarted."""
    conf = ctl("eval", "application:get_env(rabbit, vm_memory_high_watermark).").strip()
    return conf[len("{ok,"):-1].strip() if conf.startswith("{ok,") else "0.4"


@contextlib.contextmanager
def memory_alarm() -> Iterator[None]:
    """Sets the memory high watermark under what the broker uses (it raises its memory alarm and blocks
    publishing connections) and restores the configured watermark on leaving, also when the test fails."""
    before = _watermark()
    try:
        ctl("set_vm_memory_high_watermark", "0.0000001")
        yield
    finally:
        if before.startswith("{absolute"):
            ctl("set_vm_memory_high_watermark", "absolute", before.split(",")[1].rstrip("}").strip())
        else:
            ctl("set_vm_memory_high_watermark", before)
