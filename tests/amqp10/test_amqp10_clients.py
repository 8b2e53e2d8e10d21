"""Issue 43: the generated AMQP 1.0 clients (blocking ``client`` and asyncio ``aio``) against real peers: RabbitMQ
3.10's 1.0 plugin, and Qpid Proton's Container as a broker where a row needs a peer RabbitMQ cannot play
(``proton_peer.ProtonBroker``: refusing a link, announcing a max-message-size). Each test failed on the clients
before the issue's fixes (the old failure in its comment).

The fault matrix (tests/amqp10/test_fault_matrix10.py) runs the network and broker faults through the same clients.
"""

from __future__ import annotations

import asyncio
import importlib
import socket
import time
import uuid
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pika
import pytest
from faults.proxy import FaultProxy
from proton_peer import ProtonBroker

RABBIT = "amqp://guest:guest@127.0.0.1:5672"


@pytest.fixture(scope="module")
def client(amqp10: ModuleType) -> ModuleType:
    return importlib.import_module(f"{amqp10.__name__}.client")


@pytest.fixture(scope="module")
def aio(amqp10: ModuleType) -> ModuleType:
    return importlib.import_module(f"{amqp10.__name__}.aio")


@pytest.fixture(scope="module")
def plugin() -> None:
    from rabbitmq import rabbitmq_plugins

    proc = rabbitmq_plugins("enable", "rabbitmq_amqp1_0")
    if proc.returncode != 0:
        pytest.fail(f"`rabbitmq-plugins enable rabbitmq_amqp1_0` failed: {proc.stdout}{proc.stderr}")


@pytest.fixture
def queue() -> Iterator[str]:
    """A fresh queue name (RabbitMQ's plugin declares /queue/NAME): deleted at the end over 0-9-1."""
    name = f"amqgen-t43-{uuid.uuid4().hex[:10]}"
    yield name
    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1"))
    conn.channel().queue_delete(name)
    conn.close()


@pytest.fixture
def broker(request: pytest.FixtureRequest) -> Iterator[ProtonBroker]:
    with ProtonBroker(**getattr(request, "param", {})) as b:
        yield b


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


# -- item 6: a session the peer ends with an error -------------------------------------------------------------
@pytest.mark.broker
def test_a_session_rabbitmq_ends_is_raised_at_once_with_its_condition(client: ModuleType, aio: ModuleType,
                                                                       plugin: None, queue: str) -> None:
    # before: the client waited out its 30 s timeout ("no answer from the peer"); every later call said "no
    # session on channel 0"
    missing = f"/amq/queue/amqgen-t43-missing-{uuid.uuid4().hex[:8]}"  # /amq/queue/ names, never declares
    with client.Connection(RABBIT, timeout=30) as conn:
        start = time.monotonic()
        with pytest.raises(client.SessionError) as raised:
            conn.receiver(missing)
        assert time.monotonic() - start < 5  # the end came at once: not the 30 s timeout
        assert raised.value.condition == "amqp:not-found" and "no queue" in str(raised.value)
        assert type(conn.sender(f"/queue/{queue}").send(b"after")).__name__ == "Accepted"  # a new session

    async def run() -> None:
        async with aio.Connection(RABBIT, timeout=30) as conn:
            start = time.monotonic()
            with pytest.raises(aio.SessionError) as raised:
                await conn.receiver(missing)
            assert time.monotonic() - start < 5
            assert raised.value.condition == "amqp:not-found"
            sender = await conn.sender(f"/queue/{queue}")
            assert type(await sender.send(b"after")).__name__ == "Accepted"

    asyncio.run(run())


# -- item 7: one asyncio connection, several tasks -------------------------------------------------------------
def test_the_asyncio_client_is_shared_by_tasks(aio: ModuleType, broker: ProtonBroker) -> None:
    # before: RuntimeError: read() called while another coroutine is already waiting for incoming data; close()
    # failed after it too
    n = 200

    async def produce(conn: Any, address: str) -> int:
        sender = await conn.sender(address)
        for i in range(n):
            outcome = await sender.send(b"%s %d" % (address.encode(), i), settled=i % 3 == 0)
            assert i % 3 == 0 or type(outcome).__name__ == "Accepted", outcome
        return n

    async def consume(conn: Any, address: str) -> list[bytes]:
        receiver = await conn.receiver(address, credit=7)
        got = []
        while len(got) < n:
            d = await receiver.receive(timeout=20)
            got.append(d.body)
            d.accept()
        return got

    async def run() -> list[Any]:
        conn = await aio.connect(f"amqp://{broker.url}", timeout=20)
        results = await asyncio.gather(consume(conn, "a"), consume(conn, "b"), produce(conn, "a"),
                                       produce(conn, "b"), consume(conn, "c"), produce(conn, "c"))
        await conn.close()
        await conn.close()  # twice: still fine
        return results

    results = asyncio.run(run())
    for address, got in zip("abc", (results[0], results[1], results[4]), strict=True):
        assert got == [b"%s %d" % (address.encode(), i) for i in range(n)]


def test_a_cancelled_asyncio_receive_leaves_the_connection_usable(aio: ModuleType, broker: ProtonBroker) -> None:
    async def run() -> Any:
        async with aio.Connection(f"amqp://{broker.url}", timeout=20) as conn:
            receiver = await conn.receiver("cancel")
            waiting = asyncio.create_task(receiver.receive())
            await asyncio.sleep(0.2)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            sender = await conn.sender("cancel")
            await sender.send(b"after the cancel")
            return (await receiver.receive(timeout=10)).body

    assert asyncio.run(run()) == b"after the cancel"


# -- item 8: a refused link --------------------------------------------------------------------------------------
@pytest.mark.parametrize("broker", [{"refuse": ("nowhere",), "detach": True}], indirect=True)
def test_a_refused_link_is_a_link_error_with_the_peers_condition(client: ModuleType, aio: ModuleType,
                                                                  broker: ProtonBroker) -> None:
    # before: receiver() succeeded on Proton's attach without an address, and receive() timed out
    with client.Connection(f"amqp://{broker.url}", timeout=10) as conn:
        for make in (conn.receiver, conn.sender):
            with pytest.raises(client.LinkError) as raised:
                make("nowhere")
            assert raised.value.condition == "amqp:not-found" and "nowhere" in str(raised.value)
        assert type(conn.sender("elsewhere").send(b"x")).__name__ == "Accepted"  # the connection goes on

    async def run() -> None:
        async with aio.Connection(f"amqp://{broker.url}", timeout=10) as conn:
            with pytest.raises(aio.LinkError) as raised:
                await conn.receiver("nowhere")
            assert raised.value.condition == "amqp:not-found"
            sender = await conn.sender("elsewhere")
            assert type(await sender.send(b"x")).__name__ == "Accepted"

    asyncio.run(run())


@pytest.mark.parametrize("broker", [{"refuse": ("nowhere",), "detach": False}], indirect=True)
def test_a_link_refused_without_a_detach_is_a_link_error_too(client: ModuleType, broker: ProtonBroker) -> None:
    # Proton answers the attach without an address and never detaches: the client waits 1 s for a detach (as
    # Proton's BlockingConnection does), then raises and detaches its end
    with client.Connection(f"amqp://{broker.url}", timeout=10) as conn:
        with pytest.raises(client.LinkError, match="refused"):
            conn.receiver("nowhere")
        assert type(conn.sender("elsewhere").send(b"x")).__name__ == "Accepted"


# -- item 9: the error tree ----------------------------------------------------------------------------------------
def test_errors_are_the_clients_own_with_their_causes(client: ModuleType, aio: ModuleType, amqp10: ModuleType) -> None:
    # before: client.ConnectionError shadowed the builtin and was no OSError; an unreachable broker raised the
    # builtin ConnectionRefusedError; a dropped connection a raw ConnectionResetError
    for mod in (client, aio):
        assert not hasattr(mod, "ConnectionError")
        for name in mod.__all__:
            obj = getattr(mod, name)
            if isinstance(obj, type) and issubclass(obj, Exception):
                assert issubclass(obj, mod.ClientError) and issubclass(obj, amqp10.AMQPError), name
    url = f"amqp://127.0.0.1:{_closed_port()}"
    with pytest.raises(client.ConnectError) as raised:
        client.Connection(url, connect_timeout=5)
    assert isinstance(raised.value.__cause__, ConnectionRefusedError)

    async def refused() -> BaseException:
        with pytest.raises(aio.ConnectError) as raised:
            await aio.connect(url, connect_timeout=5)
        return raised.value

    assert isinstance(asyncio.run(refused()).__cause__, ConnectionRefusedError)
    with pytest.raises(client.ConnectError) as raised:
        client.Connection("amqp://no-such-host.invalid:5672", connect_timeout=5)
    assert isinstance(raised.value.__cause__, socket.gaierror)


def test_a_reset_is_connection_lost_with_its_cause(client: ModuleType, aio: ModuleType, broker: ProtonBroker) -> None:
    port = int(broker.url.split(":")[1])
    with FaultProxy(port) as proxy, client.Connection(f"amqp://127.0.0.1:{proxy.port}", timeout=10) as conn:
        receiver = conn.receiver("reset")
        proxy.cut()
        with pytest.raises(client.ConnectionLostError) as raised:
            receiver.receive(timeout=10)
        assert isinstance(raised.value.__cause__, ConnectionResetError), repr(raised.value.__cause__)

    async def run(proxy: FaultProxy) -> BaseException:
        async with aio.Connection(f"amqp://127.0.0.1:{proxy.port}", timeout=10) as conn:
            receiver = await conn.receiver("reset")
            proxy.cut()
            with pytest.raises(aio.ConnectionLostError) as raised:
                await receiver.receive(timeout=10)
            return raised.value

    with FaultProxy(port) as proxy:  # a proxy of its own: after a cut, its old reads may hold a reused fd
        lost = asyncio.run(run(proxy))
    assert isinstance(lost.__cause__, ConnectionResetError), repr(lost.__cause__)


@pytest.mark.parametrize("broker", [{"max_message_size": 1000}], indirect=True)
def test_a_message_over_the_links_max_message_size_is_a_client_error(client: ModuleType, aio: ModuleType,
                                                                        broker: ProtonBroker) -> None:
    # before: the engine's LocalProtocolError came out of send()
    with client.Connection(f"amqp://{broker.url}", timeout=10) as conn:
        sender = conn.sender("big")
        with pytest.raises(client.MessageSizeError, match="max-message-size of 1000"):
            sender.send(bytes(2000))
        assert type(sender.send(bytes(100))).__name__ == "Accepted"  # nothing was sent: the link goes on

    async def run() -> None:
        async with aio.Connection(f"amqp://{broker.url}", timeout=10) as conn:
            sender = await conn.sender("big")
            with pytest.raises(aio.MessageSizeError):
                await sender.send(bytes(2000))
            assert type(await sender.send(bytes(100))).__name__ == "Accepted"

    asyncio.run(run())
    assert broker.received["big"] == 2
