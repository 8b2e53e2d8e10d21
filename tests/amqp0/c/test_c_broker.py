"""The generated C library against a real RabbitMQ on 127.0.0.1:5672 (guest/guest), run by
tests/c/broker_run.c: a client written with only the generated library (RabbitMQ's 0-9-1 extended
spec, prefix "ag") and POSIX sockets does the PLAIN handshake, tunes frame_max down to 4096, declares
an exchange and a queue and binds them with argument tables, turns on publisher confirms, publishes
1,000 messages with properties and header tables (nested tables, arrays, decimals, timestamps, byte
strings, signed values; every 10th body larger than frame_max, some empty), waits until all are
confirmed, consumes them back, acks them, compares every body and property, checks the queue is
empty and closes channel and connection cleanly. Built with ASan and UBSan. Without a broker it FAILS
with a clear message (never skips). AMQP_HOST / AMQP_PORT / AMQP_USER / AMQP_PASSWORD override the
defaults.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "c"))
import cbuild

pytestmark = [pytest.mark.peers, pytest.mark.broker]

HOST = os.environ.get("AMQP_HOST", "127.0.0.1")
PORT = os.environ.get("AMQP_PORT", "5672")
USER = os.environ.get("AMQP_USER", "guest")
PASSWORD = os.environ.get("AMQP_PASSWORD", "guest")
COUNT = 1000


@pytest.fixture(scope="module")
def broker_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("c-broker")
    tree = cbuild.render(root / "gen")
    return cbuild.compile_program(tree, [cbuild.C_DIR / "broker_run.c"], root / "broker_run",
                                  flags=(*cbuild.WARN, "-O1", "-g", *cbuild.SANITIZE))


def test_a_thousand_confirmed_messages_through_rabbitmq(broker_run: Path) -> None:
    name = f"amqgen-c-{uuid.uuid4().hex[:12]}"
    proc = subprocess.run([str(broker_run), HOST, PORT, USER, PASSWORD, name, str(COUNT)], capture_output=True,
                          text=True, timeout=300, check=False)
    if proc.returncode == 2 and proc.stdout.startswith("NO BROKER"):
        pytest.fail(f"the RabbitMQ broker test needs a broker on {HOST}:{PORT}: {proc.stdout.strip()[10:]}")
    assert proc.returncode == 0, f"broker run failed: {proc.stdout.strip()} {proc.stderr.strip()}"[-4000:]
    assert proc.stdout.startswith(f"OK {COUNT} messages published, {COUNT} confirmed"), proc.stdout
    assert "100 bodies over frame_max" in proc.stdout, proc.stdout


def test_no_broker_is_a_clear_failure(broker_run: Path) -> None:
    """Nothing listens on port 1: the program says so in one line and exits 2 (the test above turns
    that into a failure, never a skip)."""
    proc = subprocess.run([str(broker_run), "127.0.0.1", "1", USER, PASSWORD, "x", "1"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 2 and proc.stdout.startswith("NO BROKER no AMQP broker answers on 127.0.0.1:1"), (
        proc.stdout + proc.stderr)
