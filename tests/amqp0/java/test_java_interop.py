"""The generated Java codec against the RabbitMQ Java client 5.0 (Debian's librabbitmq-client-java),
both ways, run by tests/java/ClientInterop.java: every method AMQImpl implements (all of RabbitMQ's
0-9-1 extended spec), BasicProperties with every property, and tables with every type code the client
writes (S I D T F A b d f l s t x V), with edge values and seeded random ones. Frames the client writes
(Method.toFrame, AMQContentHeader.toFrame, Frame.writeTo) decode with ours to equal values; ours read
back with Frame.readFrom + AMQImpl.readMethodFrom / readContentHeaderFrom hold the values we wrote; and
both sides write the same octets.
"""

from __future__ import annotations

import re

import pytest
from javatarget import CLIENT_JAR, Build, jar, java, rabbit_spec

pytestmark = pytest.mark.peers  # its tier, not its folder's (tests/conftest.py)

ROUNDS = 200


def test_both_ways_with_the_rabbitmq_java_client(java_build: Build) -> None:
    client = jar(CLIENT_JAR, "librabbitmq-client-java")
    proc = java(java_build, "ClientInterop", "20261123", str(ROUNDS), classpath=(client,))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    methods = len(rabbit_spec().methods)
    assert f"methods: {methods} methods x {ROUNDS} rounds" in proc.stdout
    summary = re.search(r"(\d+) checks, (\d+) failed", proc.stdout)
    assert summary and summary.group(2) == "0" and int(summary.group(1)) > methods * ROUNDS * 3, proc.stdout
