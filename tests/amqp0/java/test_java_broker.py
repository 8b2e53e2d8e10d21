"""The generated Java codec against a real RabbitMQ on 127.0.0.1:5672 (guest/guest), run by
tests/java/BrokerRun.java: a client written with only the generated package and java.net.Socket does the
handshake, declares an exchange and a queue with argument tables, turns on publisher confirms, publishes
1,000 messages with properties and header tables (every 10th body larger than frame_max 4096, some
empty), waits until all are confirmed, consumes them back, acks them, compares every body and property,
and closes cleanly. Without a broker it FAILS with a clear message (never skips). Host, port and
credentials can be overridden with AMQP_HOST / AMQP_PORT / AMQP_USER / AMQP_PASSWORD.
"""

from __future__ import annotations

import os
import uuid

import pytest
from javatarget import Build, java

pytestmark = [pytest.mark.peers, pytest.mark.broker]

HOST = os.environ.get("AMQP_HOST", "127.0.0.1")
PORT = os.environ.get("AMQP_PORT", "5672")
USER = os.environ.get("AMQP_USER", "guest")
PASSWORD = os.environ.get("AMQP_PASSWORD", "guest")


def test_a_thousand_confirmed_messages_through_rabbitmq(java_build: Build) -> None:
    prefix = f"amqgen-java-{uuid.uuid4().hex}"
    proc = java(java_build, "BrokerRun", HOST, PORT, USER, PASSWORD, prefix, "1000", timeout=300)
    assert proc.returncode == 0, f"broker run failed: {proc.stdout.strip()} {proc.stderr.strip()}"[-4000:]
    assert proc.stdout.startswith("OK 1000 messages") and "100 bodies over frame_max" in proc.stdout
