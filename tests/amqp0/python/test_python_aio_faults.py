"""The generated asyncio client (aio.py) under what networks, brokers and callers do (issue 41, items 1-12 as they
apply to asyncio), against RabbitMQ, through tests/faults' proxy where the network misbehaves. The fault matrix
(test_fault_matrix.py) runs the shared scenarios; these check what is asyncio's own: tasks sharing a connection,
the paused transport, the dispatcher task, the iterator's cancellation, the notifications, the types.

Every run is bounded by ``_run``'s guard (60 s): a hang fails the test, it is not a timing threshold."""

from __future__ import annotations

import asyncio
import importlib
import os
import select
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Awaitable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import pytest
from faults.proxy import FaultProxy

HOST = os.environ.get("AMQP_HOST", "127.0.0.1")
PORT = int(os.environ.get("AMQP_PORT", "5672"))
URL = f"amqp://guest:guest@{HOST}:{PORT}/"
VENV_BIN = Path(sys.executable).parent

pytestmark = pytest.mark.broker

T = TypeVar("T")


@pytest.fixture(scope="module")
def aio(amqp091: ModuleType) -> ModuleType:
    return importlib.import_module(f"{amqp091.__name__}.aio")


def _run(main: Awaitable[T]) -> T:
    async def guarded() -> T:
        return await asyncio.wait_for(main, 60)

    return asyncio.run(guarded())


def _queue() -> str:
    return f"amqgen.aio.{uuid.uuid4().hex[:12]}"


class _Server:
    """A 0-9-1 server on the generated engine's server role, in a thread, for what RabbitMQ will not do on
    request: it logs the client in with heartbeat 1 and opens its channels; then, by ``script``:

    - ``stops_reading``: after the first channel is open it never reads again, and sends a heartbeat every 0.5 s
      (it is alive: only our writes make no progress);
    - ``deliver_with_consume_ok``: answers basic.consume with consume-ok and three deliveries in one write.
    """

    HEARTBEAT = b"\x08\x00\x00\x00\x00\x00\x00\xce"

    def __init__(self, package: str, script: str) -> None:
        self.eng = importlib.import_module(f"{package}.engine")
        self.methods = importlib.import_module(f"{package}.methods")
        self.props = importlib.import_module(f"{package}.properties")
        self.script = script
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        sock, _ = self.listener.accept()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        m = self.methods
        conn = self.eng.Connection(role="server", channel_max=16, frame_max=131072, heartbeat=1)
        with sock:
            while not self.stop.is_set():
                if select.select([sock], [], [], 0.05)[0]:
                    data = sock.recv(65536)
                    if not data:
                        return
                    conn.receive_data(data)
                while (ev := conn.next_event()) is not None:
                    if isinstance(ev, self.eng.ProtocolHeaderReceived):
                        conn.send(0, m.ConnectionStart(0, 9, {}, b"PLAIN", b"en_US"))
                    elif isinstance(ev, self.eng.MethodReceived):
                        name = ev.method.NAME
                        if name == "connection.start-ok":
                            conn.send(0, m.ConnectionTune(16, 131072, 1))
                        elif name == "connection.open":
                            conn.send(0, m.ConnectionOpenOk())
                        elif name == "channel.open":
                            conn.send(ev.channel, m.ChannelOpenOk())
                        elif name == "basic.consume":
                            tag = ev.method.consumer_tag
                            conn.send(ev.channel, m.BasicConsumeOk(tag))
                            for i in range(1, 4):
                                conn.send(ev.channel, m.BasicDeliver(tag, i, False, "", "q"),
                                          self.props.BasicProperties(), b"%d" % i)
                    elif isinstance(ev, self.eng.ConnectionClosed):
                        sock.sendall(conn.data_to_send())
                        return
                sock.sendall(conn.data_to_send())  # one write: consume-ok and the deliveries together
                if self.script == "stops_reading" and any(ch.state == "open" for ch in conn.channels.values()):
                    while not self.stop.wait(0.5):
                        sock.sendall(self.HEARTBEAT)

    def close(self) -> None:
        self.stop.set()
        self.listener.close()
        self.thread.join(10)


def test_a_peer_that_stops_reading_ends_a_paused_publish(aio: ModuleType) -> None:
    """Item 2: a server that stops reading what the client sends, while its heartbeats keep coming: publish
    awaits the paused transport, and the write deadline (two heartbeat intervals without progress) ends the
    connection with ConnectionLostError; the transport is aborted, nothing waits for the buffer to flush. Before:
    publish waited for ever (the heartbeat task only looked at the broker's silence, and would have called
    transport.close(), which waits to flush)."""
    server = _Server(aio.__name__.rsplit(".", 1)[0], "stops_reading")

    async def main() -> None:
        conn = await aio.connect(f"amqp://guest:guest@127.0.0.1:{server.port}/", heartbeat=1)
        ch = await conn.channel()
        with pytest.raises(aio.ConnectionLostError) as info:
            while True:  # 64 KiB at a time into a transport nobody reads: it pauses, then the deadline
                await ch.publish(bytes(65536), routing_key="amqgen.nowhere")
        assert "no progress" in str(info.value)
        with pytest.raises(aio.ConnectionLostError):
            await ch.basic_qos(prefetch_count=1)  # the connection stays ended
        await conn.close()  # after the end: only the transport closes, without error

    try:
        _run(main())
    finally:
        server.close()


def test_a_broker_gone_silent_ends_an_awaited_confirm(aio: ModuleType) -> None:
    """Item 2 (the read side): the link black-holed while a publish awaits its confirm: the broker's silence for
    two heartbeat intervals ends it with ConnectionLostError, and the error lists the unconfirmed publish."""

    async def main() -> None:
        with FaultProxy() as proxy:
            conn = await aio.connect(f"amqp://guest:guest@127.0.0.1:{proxy.port}/", heartbeat=1)
            ch = await conn.channel()
            await ch.confirm_select()
            proxy.blackhole()
            with pytest.raises(aio.ConnectionLostError) as info:
                await ch.publish(b"lost?", routing_key="amqgen.nowhere")
            assert [m.body for m in info.value.unconfirmed] == [b"lost?"]
            await conn.close()

    _run(main())


def test_tasks_share_a_connection_and_a_channel(aio: ModuleType) -> None:
    """Item 7 (asyncio's kind): 20 tasks make a synchronous call on one channel at once, and 10 tasks each open a
    channel and call on it, while another task waits on an idle consumer and is then cancelled: every call gets
    its own reply, and the cancelled waiter leaves the others waiting. Before: the engine refused a second
    request on a channel still waiting for its reply."""

    async def main() -> None:
        q = _queue()
        async with await aio.connect(URL, heartbeat=10) as conn:
            ch = await conn.channel()
            await ch.queue_declare(queue=q)
            idle = await ch.consume(q)
            waiter = asyncio.ensure_future(anext(idle))
            await asyncio.sleep(0)  # the waiter waits

            async def declare(channel: Any) -> int:
                return int((await channel.queue_declare(queue=q, passive=True)).consumer_count)

            async def on_own_channel() -> int:
                return await declare(await conn.channel())

            shared = asyncio.gather(*(declare(ch) for _ in range(20)))
            own = asyncio.gather(*(on_own_channel() for _ in range(10)))
            waiter.cancel()
            assert await shared == [1] * 20
            assert await own == [1] * 10
            with pytest.raises(asyncio.CancelledError):
                await waiter
            await idle.cancel()
            assert await declare(ch) == 0
            await ch.queue_delete(queue=q)

    _run(main())


def test_a_cancelled_call_leaves_its_channel_usable(aio: ModuleType) -> None:
    """Item 7 (asyncio's kind): a task cancelled while its queue.declare waits for the reply: the next call on the
    channel gets its own reply (the late one is dropped), not the cancelled call's, and no refusal of a second
    request. Before: the late reply answered the next call, or the engine refused it."""

    async def main() -> None:
        q1, q2 = _queue(), _queue()
        async with await aio.connect(URL, heartbeat=10) as conn:
            ch = await conn.channel()
            first = asyncio.ensure_future(ch.queue_declare(queue=q1))
            await asyncio.sleep(0)  # sent: it waits for its reply
            first.cancel()
            with pytest.raises(asyncio.CancelledError):
                await first
            assert (await ch.queue_declare(queue=q2)).queue == q2
            assert (await ch.queue_delete(queue=q1)).message_count == 0
            await ch.queue_delete(queue=q2)

    _run(main())


def test_acks_from_worker_threads(aio: ModuleType) -> None:
    """Item 7: 200 deliveries with prefetch 10, each acked by one of 4 worker threads: every ack reaches the broker
    (the consumer gets all 200; none is left to requeue when the channel closes). An ack from another thread is
    handed to the loop's thread, which writes it in its next turn (the transport is not thread-safe). (main's client
    passed this by chance: its transport.write from a worker thread went straight to an empty socket buffer.)"""
    from concurrent.futures import ThreadPoolExecutor

    async def main() -> None:
        q = _queue()
        async with await aio.connect(URL, heartbeat=10) as conn:
            ch = await conn.channel()
            await ch.queue_declare(queue=q)
            await ch.confirm_select()
            for i in range(200):
                await ch.publish(b"%d" % i, routing_key=q, wait=False)
            await ch.wait_for_confirms()
            acked = threading.Semaphore(0)

            def ack(msg: Any) -> None:
                msg.ack()
                acked.release()

            got = 0
            with ThreadPoolExecutor(4) as workers:
                async for msg in ch.consume(q, prefetch=10):
                    workers.submit(ack, msg)
                    got += 1
                    if got == 200:
                        break
            assert all(acked.acquire(timeout=0) for _ in range(200))
            await ch.basic_qos(prefetch_count=10)  # the loop's turn: the acks handed over are written meanwhile
            await ch.close()
            ch2 = await conn.channel()
            assert (await ch2.queue_delete(queue=q)).message_count == 0  # nothing came back unacked

    _run(main())


def test_a_callback_that_raises_closes_its_channel_not_the_connection(aio: ModuleType) -> None:
    """Item 4: a consumer callback raises: its channel is closed with 200 and ConsumerCallbackError (the exception
    as its cause) comes out of ``wait_closed`` and of the next call on that channel; the connection goes on (a
    new channel works, a coroutine callback on it gets every delivery). Before: the exception escaped
    data_received and the transport died (``Fatal error: protocol.data_received() call failed``)."""

    async def main() -> None:
        q = _queue()
        boom = ValueError("boom")
        async with await aio.connect(URL, heartbeat=10) as conn:
            ch = await conn.channel()
            await ch.queue_declare(queue=q)
            for i in range(3):
                await ch.publish(b"%d" % i, routing_key=q)

            def callback(msg: Any) -> None:
                raise boom

            await ch.on_message(q, callback)
            with pytest.raises(aio.ConsumerCallbackError) as info:
                await ch.wait_closed()
            assert info.value.reply_code == 200 and info.value.__cause__ is boom
            with pytest.raises(aio.ConsumerCallbackError):
                await ch.queue_declare(queue=q, passive=True)
            ch2 = await conn.channel()
            got: list[bytes] = []
            done = asyncio.Event()

            async def coroutine_callback(msg: Any) -> None:
                await asyncio.sleep(0)
                got.append(msg.body)
                msg.ack()
                if len(got) == 3:
                    done.set()

            await ch2.on_message(q, coroutine_callback)
            await done.wait()
            assert sorted(got) == [b"0", b"1", b"2"]  # the closed channel's unacked delivery came back
            await ch2.queue_delete(queue=q)

    _run(main())


def test_on_message_returns_when_its_consume_ok_comes_with_deliveries(aio: ModuleType) -> None:
    """Item 4: ``await ch.on_message(...)`` where consume-ok and three deliveries come in one write (a scripted
    server), then on a RabbitMQ queue holding 200 messages: it returns the consumer tag, and every delivery
    reaches the callback in order (callbacks run in the dispatcher task, never inside the call)."""
    server = _Server(aio.__name__.rsplit(".", 1)[0], "deliver_with_consume_ok")

    async def scripted() -> None:
        conn = await aio.connect(f"amqp://guest:guest@127.0.0.1:{server.port}/", heartbeat=0)
        ch = await conn.channel()
        got: list[bytes] = []
        three = asyncio.Event()

        async def callback(msg: Any) -> None:
            got.append(msg.body)
            if len(got) == 3:
                three.set()

        assert await ch.on_message("q", callback)
        await three.wait()
        assert got == [b"1", b"2", b"3"]
        await conn.close()

    try:
        _run(scripted())
    finally:
        server.close()

    async def main() -> None:
        q = _queue()
        async with await aio.connect(URL, heartbeat=10) as conn:
            ch = await conn.channel()
            await ch.queue_declare(queue=q)
            await ch.confirm_select()
            for i in range(200):
                await ch.publish(b"%d" % i, routing_key=q, wait=False)
            await ch.wait_for_confirms()
            got: list[bytes] = []
            done = asyncio.Event()

            def callback(msg: Any) -> None:
                got.append(msg.body)
                msg.ack()
                if len(got) == 200:
                    done.set()

            tag = await ch.on_message(q, callback)
            assert tag
            await done.wait()
            assert got == [b"%d" % i for i in range(200)]
            await ch.queue_delete(queue=q)

    _run(main())


def test_a_consumer_the_broker_cancels_is_surfaced(aio: ModuleType) -> None:
    """Item 5: the consumer's queue deleted by another channel: the iterator ends with ConsumerCancelledError, a
    callback consumer's on_cancel runs with its tag; the channel goes on. Before: the iterator waited for ever,
    the callback consumer was dropped silently."""

    async def main() -> None:
        q1, q2 = _queue(), _queue()
        async with await aio.connect(URL, heartbeat=10) as conn:
            ch = await conn.channel()
            other = await conn.channel()
            for q in (q1, q2):
                await ch.queue_declare(queue=q)
            it = await ch.consume(q1)
            cancelled: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            tag = await ch.on_message(q2, lambda msg: None, on_cancel=cancelled.set_result)
            await other.queue_delete(queue=q1)
            await other.queue_delete(queue=q2)
            with pytest.raises(aio.ConsumerCancelledError):
                await anext(it)
            assert await cancelled == tag
            await ch.queue_declare(queue="", exclusive=True)  # the channel is still open

    _run(main())


def test_leaving_a_consume_loop_cancels_the_consumer(aio: ModuleType) -> None:
    """Item 6: ``break`` out of ``async for msg in ch.consume(q)``: the consumer is cancelled at once (the broker
    counts 0 consumers on the queue) and the deliveries it held go back to the queue, so the next consume gets
    them, alone. Before: the consumer stayed and the next consume() shared the deliveries with it."""

    async def main() -> None:
        q = _queue()
        async with await aio.connect(URL, heartbeat=10) as conn:
            ch = await conn.channel()
            await ch.queue_declare(queue=q)
            await ch.confirm_select()
            for i in range(10):
                await ch.publish(b"%d" % i, routing_key=q, wait=False)
            await ch.wait_for_confirms()
            async for msg in ch.consume(q, prefetch=5):
                msg.ack()
                break
            assert (await ch.queue_declare(queue=q, passive=True)).consumer_count == 0
            got = []
            async for msg in ch.consume(q):
                got.append(msg.body)
                msg.ack()
                if len(got) == 9:
                    break
            assert sorted(got) == sorted(b"%d" % i for i in range(1, 10))
            await ch.queue_delete(queue=q)

    _run(main())


def test_a_closed_confirming_channel_lists_its_unconfirmed_messages(aio: ModuleType) -> None:
    """Item 9: 5 pipelined confirmed publishes to a missing exchange: wait_for_confirms raises the broker's 404
    ChannelClosedError, and its ``unconfirmed`` are the 5 messages (bodies and routing keys, to publish again)."""

    async def main() -> None:
        async with await aio.connect(URL, heartbeat=10) as conn:
            ch = await conn.channel()
            await ch.confirm_select()
            for i in range(5):
                await ch.publish(b"%d" % i, exchange="amqgen.aio.missing", routing_key="rk", wait=False)
            with pytest.raises(aio.ChannelClosedError) as info:
                await ch.wait_for_confirms()
            assert info.value.reply_code == 404
            assert [(m.body, m.routing_key) for m in info.value.unconfirmed] == [(b"%d" % i, "rk") for i in range(5)]

    _run(main())


def test_returns_and_close_notifications(aio: ModuleType) -> None:
    """Item 10: a mandatory publish nobody routes reaches ``on_return`` with its body (and is then no confirm
    failure); ``on_close`` runs once with None after our close, and once with the ConnectionLostError when the
    transport is reset."""

    async def main() -> None:
        closes: list[Any] = []
        async with await aio.connect(URL, heartbeat=10) as conn:
            conn.on_close(closes.append)
            ch = await conn.channel()
            await ch.confirm_select()
            returned: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            ch.on_return(returned.set_result)
            await ch.publish(b"abc", routing_key=_queue(), mandatory=True)
            msg = await returned
            assert msg.body == b"abc" and msg.method.reply_code == 312
        assert closes == [None]
        with FaultProxy() as proxy:
            lost: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            conn = await aio.connect(f"amqp://guest:guest@127.0.0.1:{proxy.port}/", heartbeat=10)
            conn.on_close(lost.set_result)
            proxy.cut()
            assert isinstance(await lost, aio.ConnectionLostError)
            with pytest.raises(aio.ConnectionLostError):
                await conn.wait_closed()
            await conn.close()

    _run(main())


def test_connect_errors_url_parameters_and_local_refusals(aio: ModuleType) -> None:
    """Item 12: a closed port is ConnectFailedError (the OSError its cause); the URL's query wins over the
    arguments; a 300-character routing key is refused with EncodeError before anything is written, and the
    channel goes on."""

    async def main() -> None:
        with pytest.raises(aio.ConnectFailedError) as info:
            await aio.connect("amqp://guest:guest@127.0.0.1:1/", timeout=5)
        assert isinstance(info.value.__cause__, OSError)
        async with await aio.connect(URL + "?heartbeat=7&frame_max=8192&channel_max=99", heartbeat=60) as conn:
            n = conn.negotiated
            assert (n.heartbeat, n.frame_max, n.channel_max) == (7, 8192, 99)
            ch = await conn.channel()
            with pytest.raises(aio.EncodeError):
                await ch.publish(b"x", routing_key="k" * 300)
            await ch.queue_declare(queue="", exclusive=True)

    _run(main())


PROGRAM = '''\
import asyncio

from {pkg}.aio import Message, connect


async def main() -> None:
    async with await connect("amqp://guest:guest@localhost/") as conn:
        ch = await conn.channel()
        q: str = (await ch.queue_declare(queue="", exclusive=True)).queue
        count: int = (await ch.queue_delete(queue=q)).message_count
        got = await ch.basic_get(queue=q)
        if isinstance(got, Message):
            headers = got.properties.headers
            print(headers, count)
        async for msg in ch.consume(q):
            msg.ack()
            break


asyncio.run(main())
'''


def test_the_readme_program_types_check_strictly(aio: ModuleType, tmp_path: Path) -> None:
    """Item 11: a program using the calls' replies (queue_declare's ``.queue``, queue_delete's count, basic_get's
    Message and its typed properties, the consume iterator) passes ``mypy --strict``. Before: queue_declare
    returned ``X | None``, basic_get was annotated as its method class."""
    pkg = aio.__name__.rsplit(".", 1)[0]
    (tmp_path / "program.py").write_text(PROGRAM.format(pkg=pkg), encoding="utf-8")
    root = Path(importlib.import_module(pkg).__file__ or "").parent.parent
    proc = subprocess.run([str(VENV_BIN / "mypy"), "--strict", "--cache-dir", str(tmp_path / "cache"),
                           "--no-color-output", str(tmp_path / "program.py")], capture_output=True, text=True,
                          env={**os.environ, "MYPYPATH": str(root)}, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- connection recovery (issue 42, docs/recovery.md) ------------------------------------------------------------
def _quick(aio: ModuleType, **kw: Any) -> Any:
    return aio.RecoveryPolicy(initial_delay=0.05, max_delay=0.5, **kw)


async def _recovered(conn: Any) -> asyncio.Event:
    """An event set by the connection's next ``recovered`` notification (a coroutine callback: they may be)."""
    done = asyncio.Event()

    async def note() -> None:
        done.set()

    conn.on_recovered(note)
    return done


def _channels_of(port: int) -> dict[int, tuple[int, str]]:
    """The broker's channels of the connection from ``port``: number -> (prefetch_count, confirm)."""
    from faults import broker

    pid = broker.connection_by_port(port)["pid"]
    out = {}
    for line in broker.ctl("list_channels", "-q", "--no-table-headers", "connection", "number", "prefetch_count",
                           "confirm").splitlines():
        conn, number, prefetch, confirm = line.split("\t")
        if conn == pid:
            out[int(number)] = (int(prefetch), confirm)
    return out


def _exists(queue: str) -> bool:
    from faults import broker

    try:
        broker.depth(queue)
        return True
    except Exception:  # noqa: BLE001 - pika's 404 on the passive declare
        return False


def test_recovery_replays_what_was_recorded_and_nothing_else(aio: ModuleType) -> None:
    """A queue deleted through the connection is not declared again, a passive declare records nothing; each
    channel comes back with its number, its qos and its confirm mode (the broker's view); the same channel objects
    go on."""
    from faults import broker

    kept, deleted, checked = _queue(), _queue(), _queue()
    with broker.channel() as pch:
        pch.queue_declare(checked)

    async def main() -> None:
        with FaultProxy() as proxy:
            conn = await aio.connect_recovering(proxy.url(), policy=_quick(aio), heartbeat=10)
            try:
                one, two = await conn.channel(), await conn.channel()
                await two.basic_qos(prefetch_count=7)
                await two.confirm_select()
                await one.queue_declare(queue=kept)
                await one.queue_declare(queue=deleted)
                await one.queue_delete(queue=deleted)
                await one.queue_declare(queue=checked, passive=True)
                broker.delete_queue(checked)  # gone, by someone else: a check declared nothing to replay
                before = _channels_of(proxy.connections()[-1][1])
                assert before == {1: (0, "false"), 2: (7, "true")}, before
                recovered = await _recovered(conn)
                proxy.cut()
                await asyncio.wait_for(recovered.wait(), 20)
                assert conn.recoveries == 1
                assert (one.number, two.number) == (1, 2)
                after = _channels_of(proxy.connections()[-1][1])
                assert after == before, after
                assert _exists(kept) and not _exists(deleted) and not _exists(checked)
                assert await two.publish(b"x", routing_key=kept) == 1  # confirming again: the new connection's tag
            finally:
                await conn.close()
                broker.delete_queue(kept)

    _run(main())


def test_a_server_named_queue_that_outlives_its_connection_is_kept_with_its_message(aio: ModuleType) -> None:
    """A server-named queue declared neither exclusive nor auto-delete survives a forced close (320): recovery
    checks it is there and keeps it, name and message, instead of declaring a new one; its consumer goes on."""
    from faults import broker

    async def main() -> None:
        with FaultProxy() as proxy:
            conn = await aio.connect_recovering(proxy.url(), policy=_quick(aio), heartbeat=10)
            q = ""
            try:
                ch = await conn.channel()
                await ch.confirm_select()
                q = (await ch.queue_declare(queue="")).queue
                assert q.startswith("amq.gen-")
                await ch.publish(b"kept", routing_key=q)
                started: list[Any] = []
                conn.on_recovery_started(started.append)
                recovered = await _recovered(conn)
                broker.close_connection(proxy.connections()[-1][1], "test: forced close")
                await asyncio.wait_for(recovered.wait(), 20)
                assert isinstance(started[0], aio.ConnectionClosedError) and started[0].reply_code == 320
                assert conn.current_name(q) == q
                assert broker.depth(q) == (1, 0)
                it = await ch.consume(q)
                msg = await asyncio.wait_for(anext(it), 10)
                assert msg.body == b"kept"
                msg.ack()
                await it.cancel()
            finally:
                await conn.close()
                if q:
                    broker.delete_queue(q)

    _run(main())


def test_recovery_gives_up_after_max_attempts_with_the_cause(aio: ModuleType) -> None:
    """Connections refused: after ``max_attempts`` the recovery fails with RecoveryFailedError, its cause the
    last attempt's error; the notification and on_close get it, every call raises it, nothing recovered."""

    async def main() -> None:
        with FaultProxy() as proxy:
            conn = await aio.connect_recovering(proxy.url(), policy=_quick(aio, max_attempts=3), heartbeat=10)
            ch = await conn.channel()
            failed: list[Any] = []
            closed: list[Any] = []
            gave_up = asyncio.Event()

            def on_failed(err: Any) -> None:
                failed.append(err)
                gave_up.set()

            conn.on_recovery_failed(on_failed)
            conn.on_close(closed.append)
            proxy.refuse(30)
            proxy.cut()
            await asyncio.wait_for(gave_up.wait(), 20)
            err = failed[0]
            assert isinstance(err, aio.RecoveryFailedError) and "after 3 attempts" in str(err)
            assert isinstance(err.__cause__, aio.ConnectionLostError)  # a refused or dropped connect
            with pytest.raises(aio.RecoveryFailedError) as raised:
                await ch.queue_declare(queue=_queue())
            assert raised.value is err
            with pytest.raises(aio.RecoveryFailedError):
                await conn.channel()
            with pytest.raises(aio.RecoveryFailedError):
                await conn.wait_closed()
            await conn.close()
            assert closed == [err] and conn.recoveries == 0

    _run(main())


def test_callbacks_of_replayed_consumers_ack_on_the_recovered_connection(aio: ModuleType) -> None:
    """Deliveries taken but not acked before a cut come again to the replayed callback consumers (channel 1's
    while channel 2's consumer is still being replayed): their callbacks run once the recovered connection is
    current, so their acks go out on it (none dropped as stale), and the queues end empty."""
    from faults import broker

    queues = [_queue(), _queue()]
    for q in queues:
        broker.fill(q, 3)

    async def main() -> None:
        with FaultProxy() as proxy:
            conn = await aio.connect_recovering(proxy.url(), policy=_quick(aio), heartbeat=10)
            try:
                recovering = False
                acked: list[tuple[str, bool]] = []

                def take(q: str) -> Any:
                    def callback(msg: Any) -> None:
                        if recovering:
                            msg.ack()
                            acked.append((q, msg.redelivered))

                    return callback

                for q in queues:
                    ch = await conn.channel()
                    await ch.basic_qos(prefetch_count=10)
                    await ch.on_message(q, take(q))
                await asyncio.sleep(0.5)  # the 6 deliveries came, none acked
                assert broker.depth(queues[0])[0] == 0 and not acked
                recovered = await _recovered(conn)
                recovering = True
                proxy.cut()
                await asyncio.wait_for(recovered.wait(), 20)
                for _ in range(100):
                    if len(acked) == 6:
                        break
                    await asyncio.sleep(0.05)
                assert sorted(acked) == sorted((q, True) for q in queues for _ in range(3)), acked
                assert conn.stale_settlements == 0
                await asyncio.sleep(0.3)
                await conn.close()
                assert [broker.depth(q)[0] for q in queues] == [0, 0]  # acked, not requeued by the close
            finally:
                await conn.close()
                for q in queues:
                    broker.delete_queue(q)

    _run(main())


@pytest.mark.parametrize("republish", [False, True])
def test_an_awaited_publish_across_a_cut_is_reported_or_republished(aio: ModuleType, republish: bool) -> None:
    """``publish(wait=True)`` black-holed, then RST: without ``republish`` it raises PublishNotConfirmed naming its
    message (the broker never had it); with it, it returns once the copy published by the recovery is confirmed
    (the queue then holds it once), and ``on_republished`` said so."""
    from faults import broker

    q = _queue()

    async def main() -> None:
        with FaultProxy() as proxy:
            conn = await aio.connect_recovering(proxy.url(), policy=_quick(aio, republish=republish), heartbeat=10)
            try:
                again: list[Any] = []
                conn.on_republished(lambda channel, messages: again.append((channel, messages)))
                ch = await conn.channel()
                await ch.confirm_select()
                await ch.queue_declare(queue=q)
                assert await ch.publish(b"before", routing_key=q) == 1
                proxy.blackhole()
                asyncio.get_running_loop().call_later(0.5, proxy.cut)
                if republish:  # tag 2 on the lost connection, its copy's 1 on the new one
                    assert await ch.publish(b"across", routing_key=q) == 1
                    assert [(n, [m.body for m in ms]) for n, ms in again] == [(1, [b"across"])]
                    assert broker.depth(q)[0] == 2
                else:
                    with pytest.raises(aio.PublishNotConfirmed) as raised:
                        await ch.publish(b"across", routing_key=q)
                    assert [m.body for m in raised.value.messages] == [b"across"]
                    assert broker.depth(q)[0] == 1 and not again
                    await ch.wait_for_confirms()  # reported once: nothing left to report
                assert conn.recoveries == 1
            finally:
                await conn.close()
                broker.delete_queue(q)

    _run(main())


def test_calls_made_while_recovering_wait_and_run_on_the_recovered_connection(aio: ModuleType) -> None:
    """Connections refused for 2 s after a RST: a declare, a new channel and a publish made meanwhile wait for the
    recovery, then run on the recovered connection."""
    from faults import broker

    q = _queue()

    async def main() -> None:
        with FaultProxy() as proxy:
            conn = await aio.connect_recovering(proxy.url(), policy=_quick(aio), heartbeat=10)
            try:
                ch = await conn.channel()
                started = asyncio.Event()
                conn.on_recovery_started(lambda cause: started.set())
                proxy.refuse(2)
                proxy.cut()
                await asyncio.wait_for(started.wait(), 10)
                t0 = time.monotonic()
                await ch.queue_declare(queue=q)
                other = await conn.channel()
                await other.confirm_select()
                await other.publish(b"late", routing_key=q)
                assert time.monotonic() - t0 > 1.0 and conn.recoveries == 1
                assert broker.depth(q)[0] == 1
            finally:
                await conn.close()
                broker.delete_queue(q)

    _run(main())
