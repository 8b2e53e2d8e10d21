"""The C engine's server role against a real client (issue 33): tests/c/engine_server.c, a one-connection server
on the generated engine over POSIX sockets, and librabbitmq's client (tests/c/rmq_publish.c) logging in,
opening a channel, declaring a queue, putting the channel in confirm mode and publishing 6,000 octets with an
"h2" header (two body frames at the server's frame_max 4096) and then 5 octets, each confirmed by the server's
basic.ack (numbered by the server program, as the engine's header says: the engine does not number a client's
publishes), then closing. Both built with warnings as errors, ASan and UBSan. The expected body is
built here, as librabbitmq's program builds it (octet i is i % 251), not taken from either program."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "c"))
import cbuild
import server_program

pytestmark = pytest.mark.peers  # its tier, not its folder's (tests/conftest.py)

FLAGS = (*cbuild.WARN, "-O1", "-g", *cbuild.SANITIZE)


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("c-server")
    tree = cbuild.render(root / "gen")
    server = cbuild.compile_program(tree, [cbuild.C_DIR / "engine_server.c"], root / "engine_server", flags=FLAGS)
    client = root / "rmq_publish"
    proc = subprocess.run([cbuild.tool("clang"), *FLAGS, str(cbuild.C_DIR / "rmq_publish.c"), *cbuild.librabbitmq(),
                           "-o", str(client)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return server, client


@pytest.mark.slow  # a rendered library built with sanitizers: about 50 s
def test_librabbitmq_client_against_the_c_engine_server(programs: tuple[Path, Path]) -> None:
    server, client = programs
    seen: list[subprocess.CompletedProcess[str]] = []

    def run_client(port: int) -> None:
        seen.append(subprocess.run([str(client), "127.0.0.1", str(port)], capture_output=True, text=True,
                                   timeout=60, check=False))

    log = server_program.serve([str(server)], run_client)
    cli = seen[0]
    assert (cli.returncode, cli.stderr) == (0, ""), cli.stdout + cli.stderr[-3000:]
    # the client agreed the server's frame_max and got its declare-ok with the queue's name
    # ... and librabbitmq read one basic.ack per publish, tags 1 and 2 (publisher confirms' numbering)
    assert cli.stdout.splitlines() == ["frame_max 4096", "declare-ok h2-server-q", "ack 1", "ack 2", "closed"]
    body = bytes(i % 251 for i in range(6000)).hex()
    assert log == [
        "login guest", "negotiated 4096 8 0", "channel-open 1", "declare h2-server-q", "confirm-select 1",
        f"publish h2-server-q h2=from-librabbitmq body={body}", "ack 1 1",
        f"publish h2-server-q h2=from-librabbitmq body={body[:10]}", "ack 1 2", "channel-closed 1 200",
        "connection-closed 200", "lost 1 end of stream after the connection closed"]


@pytest.mark.slow  # (the module's build)
def test_pika_against_the_c_engine_server(programs: tuple[Path, Path]) -> None:
    """pika's blocking client, the same conversation: its tune-ok takes the server's frame_max, its publish of
    6,000 octets arrives in two body frames, its close closes the channel first."""
    import pika

    server, _ = programs
    body = bytes(i % 251 for i in range(6000))

    def client(port: int) -> None:
        conn = pika.BlockingConnection(pika.ConnectionParameters(
            "127.0.0.1", port, credentials=pika.PlainCredentials("guest", "guest"), heartbeat=0,
            blocked_connection_timeout=None, socket_timeout=30))
        ch = conn.channel()
        ok = ch.queue_declare("h2-server-q", exclusive=True)
        assert ok.method.queue == "h2-server-q"
        assert conn._impl.params.frame_max == 4096  # (pika keeps the agreed value in its parameters)
        ch.basic_publish("", "h2-server-q", body, pika.BasicProperties(headers={"h2": "from-pika"}))
        conn.close()

    assert server_program.serve([str(server)], client) == [
        "login guest", "negotiated 4096 8 0", "channel-open 1", "declare h2-server-q",
        f"publish h2-server-q h2=from-pika body={body.hex()}", "channel-closed 1 200", "connection-closed 200",
        "lost 1 end of stream after the connection closed"]
