"""The Java engine's server role against real clients (issue 34): tests/java/EngineServer.java, a one-connection
server on the generated engine (package amqgen.rabbit) over a plain socket, and two clients that log in, open a
channel, declare a queue, publish 6,000 octets with an "h2" header (two body frames at the server's frame_max
4096) and close: the RabbitMQ Java client 5.0 (tests/java/RmqClientPublish.java, Debian's jar) and pika. Both
programs are compiled by the session's java_build (tests/java/ is part of its one javac run). The expected body
is built here (octet i is i % 251), not taken from either program."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import javatarget
import pytest
import server_program
from javatarget import CLIENT_JAR, Build, jar

pytestmark = pytest.mark.peers  # its tier, not its folder's (tests/conftest.py)

QUEUE = "h1-java-server-q"


def serve(java_build: Build, client: Callable[[int], None]) -> list[str]:
    """EngineServer in its own JVM; ``client(port)`` talks to it; the server's log once it exits (status 0)."""
    return server_program.serve([javatarget.tool("java", "openjdk-17-jdk-headless"), "-cp", java_build.classpath(),
                                 "EngineServer"], client)


def expected(h2: str, body: bytes) -> list[str]:
    return ["login guest", "negotiated 4096 8 0", "channel-open 1", f"declare {QUEUE}",
            f"publish {QUEUE} h2={h2} body={body.hex()}", "channel-closed 1 200", "connection-closed 200",
            "lost 1 end of stream after the connection closed"]


def test_rabbitmq_java_client_against_the_java_engine_server(java_build: Build) -> None:
    """The RabbitMQ Java client 5.0: its tune-ok takes the server's frame_max (it asks for none), its publish of
    6,000 octets arrives in two body frames, its channel and connection closes are answered."""
    cp = java_build.classpath(jar(CLIENT_JAR, "librabbitmq-client-java"), jar("slf4j-api.jar", "libslf4j-java"),
                              jar("slf4j-nop.jar", "libslf4j-java"))
    seen: list[subprocess.CompletedProcess[str]] = []

    def client(port: int) -> None:
        seen.append(subprocess.run([javatarget.tool("java", "openjdk-17-jdk-headless"), "-cp", cp,
                                    "RmqClientPublish", "127.0.0.1", str(port), QUEUE],
                                   capture_output=True, text=True, timeout=60, check=False))

    log = serve(java_build, client)
    cli = seen[0]
    assert (cli.returncode, cli.stderr) == (0, ""), cli.stdout + cli.stderr[-3000:]
    # the agreed frame_max, the declare-ok's queue, and a clean close: the application's, 200, answered
    assert cli.stdout.splitlines() == ["frame_max 4096", f"declare-ok {QUEUE}", "closed by-us 200 not-open"]
    assert log == expected("from-java-client", bytes(i % 251 for i in range(6000)))


def test_pika_against_the_java_engine_server(java_build: Build) -> None:
    """pika's blocking client, the same conversation: its tune-ok takes the server's frame_max, its close closes
    the channel first, and the close completes (no exception, the connection closed)."""
    import pika

    body = bytes(i % 251 for i in range(6000))

    def client(port: int) -> None:
        conn = pika.BlockingConnection(pika.ConnectionParameters(
            "127.0.0.1", port, credentials=pika.PlainCredentials("guest", "guest"), heartbeat=0,
            blocked_connection_timeout=None, socket_timeout=30))
        ch = conn.channel()
        ok = ch.queue_declare(QUEUE, exclusive=True)
        assert ok.method.queue == QUEUE
        assert conn._impl.params.frame_max == 4096  # (pika keeps the agreed value in its parameters)
        ch.basic_publish("", QUEUE, body, pika.BasicProperties(headers={"h2": "from-pika"}))
        conn.close()
        assert conn.is_closed and ch.is_closed

    assert serve(java_build, client) == expected("from-pika", body)
