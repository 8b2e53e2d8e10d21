"""The generated blocking (client.py) and asyncio (aio.py) clients against RabbitMQ (issue 32): the review's
program in examples/ on both, login refused, a channel error and the connection going on, the broker closing our
connection with unacked deliveries, the transport cut mid-consume, close with deliveries in flight; and (issue 41)
what the fault matrix (tests/test_fault_matrix.py) does not pin down by itself: each of those tests failed on
the blocking client before issue 41 (callbacks ran inside unrelated calls and on the heartbeat thread, the
README's hello failed ``mypy --strict``, URL query parameters were ignored, ``Message.reject`` requeued by
default while ``basic_reject`` did not, returns without confirms were dropped, connect errors were builtins)."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
HOST = os.environ.get("AMQP_HOST", "127.0.0.1")
PORT = int(os.environ.get("AMQP_PORT", "5672"))
URL = f"amqp://guest:guest@{HOST}:{PORT}/"

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def client(amqp091: ModuleType) -> ModuleType:
    return importlib.import_module(f"{amqp091.__name__}.client")


@pytest.fixture(scope="module")
def aio(amqp091: ModuleType) -> ModuleType:
    return importlib.import_module(f"{amqp091.__name__}.aio")


def _props(amqp091: ModuleType) -> type:
    return importlib.import_module(f"{amqp091.__name__}.properties").BasicProperties  # type: ignore[no-any-return]


@pytest.mark.parametrize("script", ["client_blocking.py", "client_asyncio.py"])
def test_the_review_program_runs_on_both_clients(script: str, amqp091: ModuleType) -> None:
    """examples/client_blocking.py and client_asyncio.py: confirmed publishes of 0-200 KB with headers, consumed
    with qos 100 and acks, every body and table checked (by the example's asserts), queue deleted, clean close.
    They use the session's rendered package (the example renders its own when run alone)."""
    build = Path(amqp091.__file__).parent.parent
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), "--url", URL, "--count", "300",
                           "--build-dir", str(build), "--package", amqp091.__name__],
                          check=False, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "300 messages published with confirms, consumed, acked and checked" in proc.stdout


def test_a_wrong_password_raises_403(client: ModuleType, aio: ModuleType) -> None:
    """RabbitMQ closes with 403 ACCESS_REFUSED (authentication_failure_close): raised, not waited on forever."""
    with pytest.raises(client.ConnectionClosedError) as info:
        client.connect(f"amqp://guest:wrong@{HOST}:{PORT}/", timeout=30)
    assert info.value.reply_code == 403

    async def go() -> None:
        with pytest.raises(aio.ConnectionClosedError) as info:
            await aio.connect(f"amqp://guest:wrong@{HOST}:{PORT}/", timeout=30)
        assert info.value.reply_code == 403

    asyncio.run(go())


def test_a_missing_queue_raises_404_and_the_connection_goes_on(client: ModuleType, aio: ModuleType) -> None:
    missing = f"amqgen-missing-{uuid.uuid4()}"
    with client.connect(URL) as conn:
        ch = conn.channel()
        with pytest.raises(client.ChannelClosedError) as info:
            ch.queue_declare(queue=missing, passive=True)
        assert info.value.reply_code == 404 and missing in info.value.reply_text
        with pytest.raises(client.ChannelClosedError):  # the channel stays closed
            ch.queue_declare(queue="", exclusive=True)
        ch2 = conn.channel()  # the same channel number is taken again: channel.open after the close-ok
        assert ch2.number == ch.number
        ok = ch2.queue_declare(queue="", exclusive=True)
        assert ok.queue.startswith("amq.gen-")

    async def go() -> None:
        async with await aio.connect(URL) as conn:
            ch = await conn.channel()
            with pytest.raises(aio.ChannelClosedError) as info:
                await ch.queue_declare(queue=missing, passive=True)
            assert info.value.reply_code == 404
            ch2 = await conn.channel()
            assert (await ch2.queue_declare(queue="", exclusive=True)).queue.startswith("amq.gen-")

    asyncio.run(go())


def _close_from_broker(sock: socket.socket) -> None:
    """`rabbitmqctl close_connection` on the connection of ``sock``."""
    ctl = shutil.which("rabbitmqctl")
    assert ctl is not None, "rabbitmqctl is not installed (RabbitMQ's own CLI)"
    local = sock.getsockname()
    name = f"{local[0]}:{local[1]} -> {HOST}:{PORT}"
    pid = None
    for _ in range(100):  # the broker lists a connection a moment after it opened
        listed = subprocess.run([ctl, "-q", "list_connections", "pid", "name"], capture_output=True, text=True,
                                timeout=60, check=False)
        pid = next((ln.split("\t")[0] for ln in listed.stdout.splitlines() if ln.endswith(name)), None)
        if pid is not None:
            break
        time.sleep(0.2)
    assert pid is not None, listed.stdout + listed.stderr
    proc = subprocess.run([ctl, "close_connection", pid, "amqgen client test"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr


def test_the_broker_closing_our_connection_raises_320_and_loses_nothing(client: ModuleType,
                                                                          amqp091: ModuleType) -> None:
    """Five of twenty messages received unacked, then `rabbitmqctl close_connection`: ConnectionClosedError 320
    from the consume, and all twenty are back in the queue."""
    queue = f"amqgen-forced-{uuid.uuid4()}"
    conn = client.connect(URL)
    ch = conn.channel()
    ch.queue_declare(queue=queue)
    for i in range(20):
        ch.basic_publish(f"m{i}".encode(), routing_key=queue)
    got = []
    with pytest.raises(client.ConnectionClosedError) as info:
        for msg in ch.consume(queue, prefetch=10):
            got.append(msg.body)
            if len(got) == 5:
                _close_from_broker(conn._sock)
    assert info.value.reply_code == 320 and "amqgen client test" in info.value.reply_text
    assert got[:5] == [f"m{i}".encode() for i in range(5)]
    conn.close()  # after the broker's close: nothing to send, the socket is closed
    with client.connect(URL) as again:
        ch = again.channel()
        assert ch.queue_declare(queue=queue, passive=True).message_count == 20
        ch.queue_delete(queue=queue)


class _Proxy:
    """A loopback TCP proxy to the broker that can cut the connection (both sockets closed)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        down, _ = self.server.accept()
        up = socket.create_connection((HOST, PORT))
        self.socks = [down, up]
        for a, b in ((down, up), (up, down)):
            threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass

    def cut(self) -> None:
        for s in self.socks:
            s.shutdown(socket.SHUT_RDWR)
            s.close()
        self.server.close()


def test_the_broker_gone_mid_consume_raises_at_once(client: ModuleType) -> None:
    """The transport cut while the consumer waits: ConnectionLostError from the iterator, well before the
    heartbeat (60 s) could notice, and without spinning (the process's CPU over the wait is a fraction of it)."""
    proxy = _Proxy()
    conn = client.connect(f"amqp://guest:guest@127.0.0.1:{proxy.port}/", heartbeat=60)
    ch = conn.channel()
    queue = ch.queue_declare(queue="", exclusive=True).queue
    threading.Timer(1.0, proxy.cut).start()
    cpu, wall = time.process_time(), time.monotonic()
    with pytest.raises(client.ConnectionLostError):
        for _ in ch.consume(queue):
            pass
    waited, spent = time.monotonic() - wall, time.process_time() - cpu
    assert waited < 30, f"the end of stream took {waited:.1f} s to be raised"
    assert spent < waited / 2, f"{spent:.2f} s of CPU over {waited:.2f} s of waiting: the wait spins"
    conn.close()


def test_close_with_deliveries_in_flight_is_clean(client: ModuleType, aio: ModuleType) -> None:
    """Two hundred deliveries of 10 KB pushed (no prefetch limit, no_ack) while we close after the first: the
    deliveries after connection.close are discarded and the close-ok ends it, no error."""
    with client.connect(URL) as conn:
        ch = conn.channel()
        queue = ch.queue_declare(queue="", exclusive=True).queue
        for _ in range(200):
            ch.basic_publish(b"x" * 10_000, routing_key=queue)
        next(iter(ch.consume(queue, no_ack=True)))
    assert conn._s.closed and conn._s.error is None

    async def go() -> None:
        conn = await aio.connect(URL)
        ch = await conn.channel()
        queue = (await ch.queue_declare(queue="", exclusive=True)).queue
        for _ in range(200):
            await ch.basic_publish(b"x" * 10_000, routing_key=queue)
        async for _ in ch.consume(queue, no_ack=True):
            break
        await conn.close()
        assert conn._s.closed and conn._s.error is None

    asyncio.run(go())


def test_confirms_in_a_batch_and_a_callback_consumer(client: ModuleType, amqp091: ModuleType) -> None:
    """Pipelined publishes then wait_for_confirms; an unroutable mandatory publish reported as returned; a callback
    consumer fed by drain_events."""
    with client.connect(URL) as conn:
        ch = conn.channel()
        queue = ch.queue_declare(queue="", exclusive=True).queue
        ch.confirm_select()
        tags = [ch.publish(f"b{i}".encode(), routing_key=queue, wait=False) for i in range(50)]
        assert tags == list(range(1, 51))
        ch.wait_for_confirms()
        assert ch.unconfirmed == ()
        ch.publish(b"lost", routing_key=f"nowhere-{uuid.uuid4()}", wait=False, mandatory=True)
        with pytest.raises(client.PublishNotConfirmed) as info:
            ch.wait_for_confirms()
        assert info.value.returned == [51] and info.value.nacked == []
        seen: list[bytes] = []
        ch.on_message(queue, lambda m: (seen.append(m.body), m.ack()))
        while len(seen) < 50:
            conn.drain_events(timeout=10)
        assert seen == [f"b{i}".encode() for i in range(50)]


def test_aio_pika_against_the_engine_server_role(amqp091: ModuleType) -> None:
    """aio-pika (the asyncio peer; pika's BlockingConnection is in test_python_engine_server.py) logs in to the
    small broker on the engine's server role, declares, publishes with confirms, consumes and acks, closes: the
    server engine sees no protocol error and every message comes back with its headers."""
    import aio_pika
    from test_python_engine_server import Broker, _assert_clean

    engine = importlib.import_module(f"{amqp091.__name__}.engine")
    bodies = [b"", b"one", bytes(range(256)) * 40, b"x" * 50_000, b"last"]

    async def go(port: int) -> list[tuple[bytes, Any]]:
        conn = await aio_pika.connect(f"amqp://guest:guest@127.0.0.1:{port}/", timeout=20)
        ch = await conn.channel(publisher_confirms=True)
        queue = await ch.declare_queue("", exclusive=True)
        assert queue.name.startswith("amq.gen-")
        for i, body in enumerate(bodies):
            await ch.default_exchange.publish(aio_pika.Message(body, headers={"i": i, "tag": f"m{i}"}),
                                              routing_key=queue.name)
        got = []
        async with queue.iterator() as it:
            async for msg in it:
                got.append((msg.body, msg.headers))
                await msg.ack()
                if len(got) == len(bodies):
                    break
        await conn.close()
        return got

    with Broker(engine) as broker:
        got = asyncio.run(asyncio.wait_for(go(broker.port), 60))
        _assert_clean(broker, broker.session(0))
    assert got == [(body, {"i": i, "tag": f"m{i}"}) for i, body in enumerate(bodies)]


def test_heartbeats_keep_an_idle_connection_open(client: ModuleType, aio: ModuleType) -> None:
    """Heartbeat 1 s agreed with RabbitMQ, then 4 s idle: the adapters' thread / task send the heartbeats (RabbitMQ
    closes a connection silent for two intervals), so the connection still answers afterwards."""
    with client.connect(URL, heartbeat=1) as conn:
        assert conn._s.engine.negotiated.heartbeat == 1
        ch = conn.channel()
        time.sleep(4)
        assert ch.queue_declare(queue="", exclusive=True).queue.startswith("amq.gen-")

    async def go() -> None:
        async with await aio.connect(URL, heartbeat=1) as conn:
            assert conn._s.engine.negotiated.heartbeat == 1
            ch = await conn.channel()
            await asyncio.sleep(4)
            assert (await ch.queue_declare(queue="", exclusive=True)).queue.startswith("amq.gen-")

    asyncio.run(go())


def test_amqps_with_an_ssl_context_on_both_clients(client: ModuleType, aio: ModuleType, tls_forwarder: Any) -> None:
    """``amqps://`` with the caller's ``ssl.SSLContext`` (trusting the forwarder's self-signed certificate): both
    clients negotiate TLS (the forwarder decrypted the AMQP protocol header from each) and work through it (a
    queue declared, a message published with its confirm awaited and read back). Without the context the
    default one refuses the self-signed certificate (ConnectFailedError, the SSL error as its cause)."""
    import ssl

    fwd, cert = tls_forwarder
    ctx = ssl.create_default_context(cafile=str(cert))
    url = f"amqps://guest:guest@localhost:{fwd.port}/"
    queue = f"w36b-amqps-{uuid.uuid4()}"
    with client.connect(url, ssl_context=ctx, heartbeat=0) as conn:
        assert isinstance(conn._sock, ssl.SSLSocket)
        ch = conn.channel()
        ch.queue_declare(queue=queue, auto_delete=True)
        ch.confirm_select()
        ch.publish(b"over tls", routing_key=queue)
        got = ch.basic_get(queue=queue, no_ack=True)
        assert got.body == b"over tls"

    async def on_asyncio() -> bytes:
        conn = await aio.connect(url, ssl_context=ctx, heartbeat=0)
        try:
            assert conn._transport.get_extra_info("ssl_object") is not None
            ch = await conn.channel()
            await ch.queue_declare(queue=queue, auto_delete=True)
            await ch.confirm_select()
            await ch.publish(b"over tls too", routing_key=queue)
            got = await ch.basic_get(queue=queue, no_ack=True)
            await ch.queue_delete(queue=queue)
            return bytes(got.body)
        finally:
            await conn.close()

    assert asyncio.run(on_asyncio()) == b"over tls too"
    assert len(fwd.seen) == 2
    for version, first in fwd.seen:
        assert version in ("TLSv1.2", "TLSv1.3")
        assert first == b"AMQP\x00\x00\x09\x01"  # the 0-9-1 protocol header, read inside TLS
    with pytest.raises(client.ConnectFailedError) as info:  # the client's error, the TLS one as its cause
        client.connect(url, heartbeat=0, timeout=5.0)
    assert isinstance(info.value.__cause__, ssl.SSLCertVerificationError)


# -- issue 41: the blocking client under what callers and brokers do (the fault matrix has the rest) ----------
def test_the_url_query_is_read(client: ModuleType) -> None:
    """heartbeat, frame_max, channel_max, connection_timeout (ms), auth_mechanism and name, as RabbitMQ's URI
    spec spells them; an unknown parameter or a bad value is refused, not ignored."""
    core = importlib.import_module(client.__name__.rsplit(".", 1)[0] + ".client_core")
    u = core.parse_url("amqp://u:p@h:1234/v%2Fx?heartbeat=5&frame_max=8192&channel_max=100"
                       "&connection_timeout=4000&name=my%20app&auth_mechanism=AMQPLAIN")
    assert (u.host, u.port, u.user, u.password, u.vhost) == ("h", 1234, "u", "p", "v/x")
    assert (u.heartbeat, u.frame_max, u.channel_max, u.connection_timeout, u.name, u.mechanism) == \
        (5, 8192, 100, 4.0, "my app", "AMQPLAIN")
    assert core.parse_url("amqp://h").heartbeat is None
    for bad in ("amqp://h/?heartbeat=x", "amqp://h/?heartbeat=-1", "amqp://h/?hearbeat=5"):
        with pytest.raises(ValueError, match="heartbeat|hearbeat"):
            core.parse_url(bad)


def test_the_url_query_wins_over_the_arguments(client: ModuleType) -> None:
    with client.connect(URL + "?heartbeat=7&frame_max=16384&channel_max=9", heartbeat=60) as conn:
        assert (conn.negotiated.heartbeat, conn.negotiated.frame_max, conn.negotiated.channel_max) == (7, 16384, 9)


def test_message_settles_with_the_channel_calls_defaults(client: ModuleType) -> None:
    """Message.reject and Message.nack take requeue (and multiple) with the defaults of basic_reject and
    basic_nack: the same call cannot mean two things."""
    def defaults(fn: object) -> dict[str, object]:
        return {k: p.default for k, p in inspect.signature(fn).parameters.items()  # type: ignore[arg-type]
                if k in ("requeue", "multiple")}

    assert defaults(client.Message.reject) == defaults(client.Channel.basic_reject)
    assert defaults(client.Message.nack) == defaults(client.Channel.basic_nack)
    assert defaults(client.Message.ack) == defaults(client.Channel.basic_ack)


def test_connect_errors_are_the_clients(client: ModuleType) -> None:
    """A refused connection and a host that does not resolve raise the client's ConnectFailedError (a
    ClientError), the OSError as its cause; not a builtin exception."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(client.ConnectFailedError) as info:
        client.connect(f"amqp://guest:guest@127.0.0.1:{port}/", timeout=5)
    assert isinstance(info.value, client.ClientError) and isinstance(info.value.__cause__, ConnectionRefusedError)
    with pytest.raises(client.ConnectFailedError) as info:
        client.connect("amqp://guest:guest@no-such-host.invalid/", timeout=5)
    assert isinstance(info.value.__cause__, socket.gaierror)


def test_a_silent_server_is_a_connect_timeout(client: ModuleType) -> None:
    """A server that accepts and never answers: ConnectTimeoutError after the URL's connection_timeout (ms),
    which wins over the argument."""
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        port = listener.getsockname()[1]
        t0 = time.monotonic()
        with pytest.raises(client.ConnectTimeoutError):
            client.connect(f"amqp://guest:guest@127.0.0.1:{port}/?connection_timeout=500", timeout=30)
        assert time.monotonic() - t0 < 10
    finally:
        listener.close()


def test_callbacks_run_only_in_the_dispatch_calls(client: ModuleType) -> None:
    """Deliveries to a callback consumer wait for a dispatch call: neither queue_declare, publish nor the
    heartbeat thread (heartbeat 1 s, 2.5 s idle) runs them; process_data_events does, in the caller's thread."""
    ran: list[str] = []
    with client.connect(URL, heartbeat=1) as conn:
        ch = conn.channel()
        queue = ch.queue_declare(queue="", exclusive=True).queue
        ch.on_message(queue, lambda m: (ran.append(threading.current_thread().name), m.ack()))
        for i in range(3):
            ch.basic_publish(f"m{i}".encode(), routing_key=queue)
        for _ in range(5):
            ch.queue_declare(queue=queue, passive=True)
        time.sleep(2.5)
        ch.queue_declare(queue=queue, passive=True)
        assert ran == []
        end = time.monotonic() + 10
        while len(ran) < 3 and time.monotonic() < end:
            conn.process_data_events(0.5)
        assert ran == [threading.current_thread().name] * 3


def test_a_callback_that_raises_closes_its_channel_only(client: ModuleType) -> None:
    """The callback's exception comes out of process_data_events as ConsumerCallbackError (200, the exception as
    its cause), not out of an unrelated call; its channel is closed, the connection and other channels go on."""
    with client.connect(URL) as conn:
        ch, other = conn.channel(), conn.channel()
        queue = ch.queue_declare(queue="", exclusive=True).queue
        ch.basic_publish(b"boom", routing_key=queue)
        boom = ValueError("the callback's own error")

        def raising(msg: object) -> None:
            raise boom

        ch.on_message(queue, raising)
        other.queue_declare(queue=queue, passive=True)  # an unrelated call: the callback does not run in it
        with pytest.raises(client.ConsumerCallbackError) as info:
            for _ in range(50):
                conn.process_data_events(0.2)
        assert info.value.reply_code == 200 and info.value.__cause__ is boom and info.value.channel == ch.number
        with pytest.raises(client.ChannelClosedError):
            ch.queue_declare(queue=queue, passive=True)
        assert other.queue_declare(queue=queue, passive=True).message_count == 1  # requeued by the channel's close


def test_returns_reach_on_return_without_confirms(client: ModuleType) -> None:
    """A mandatory publish nobody can route comes back to the channel's on_return callback, with its body (it
    was dropped silently without confirms)."""
    got: list[object] = []
    with client.connect(URL) as conn:
        ch = conn.channel()
        ch.on_return(got.append)
        key = f"nowhere-{uuid.uuid4()}"
        ch.publish(b"back", routing_key=key, mandatory=True)
        end = time.monotonic() + 10
        while not got and time.monotonic() < end:
            conn.process_data_events(0.5)
    (msg,) = got
    assert msg.body == b"back" and msg.routing_key == key and msg.method.reply_code == 312  # type: ignore[attr-defined]


def test_the_client_docstring_example_runs(client: ModuleType) -> None:
    """client.py's own docstring example is a program that works (its comments say what each line does)."""
    example = textwrap.dedent(re.search(r"\n\n(    with connect.*?)\n\n", client.__doc__, re.DOTALL).group(1))  # type: ignore[arg-type,union-attr]
    scope: dict[str, object] = {"connect": lambda url: client.connect(url.replace("localhost", f"{HOST}:{PORT}"))}
    exec(compile(example, "client.py docstring", "exec"), scope)  # noqa: S102 - our own generated docstring


def test_the_readme_hello_and_the_client_pass_mypy_strict(amqp091: ModuleType, tmp_path: Path) -> None:
    """README.md's hello.py (on the blocking client) type-checks under ``mypy --strict`` against the rendered
    package: queue_declare returns its declare-ok (not ``| None``), a Message's properties are the basic ones."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    hello = re.search(r"```python hello.py\n(.*?)```", readme, re.DOTALL).group(1)  # type: ignore[union-attr]
    hello = hello.replace("from amqp091 import", f"from {amqp091.__name__} import")
    hello += "\ngot = ch.basic_get(queue=queue)\n"  # a get-ok is a Message, its properties the basic ones
    hello += "if isinstance(got, client.Message):\n    print(got.properties.headers, got.delivery_tag)\n"
    (tmp_path / "hello.py").write_text(hello, encoding="utf-8")
    gen = Path(amqp091.__file__).resolve().parent.parent  # type: ignore[arg-type]
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-color-output", "--cache-dir",
                           str(tmp_path / "cache"), str(tmp_path / "hello.py")], capture_output=True, text=True,
                          env={**os.environ, "MYPYPATH": str(gen)}, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
