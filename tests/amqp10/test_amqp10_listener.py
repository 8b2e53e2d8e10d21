"""Issue 43: the generated package's listener (``server.py``, the engine's server role as an API): the example broker
(examples/amqp10_broker.py, at most 50 code lines; Proton's Container broker example is 57) served to Qpid Proton's
Container and to our own blocking and asyncio clients; and the API's parts (refusing a link, the credit policy,
settlements reaching the handler, a drain answered, a handler's exception) each observed from Proton's side.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from proton import Delivery, Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

ROOT = Path(__file__).resolve().parents[2]
BROKER = ROOT / "examples" / "amqp10_broker.py"


def code_lines(path: Path) -> int:
    """Lines of code: not blank, not a comment, not the module docstring."""
    src = path.read_text()
    code = src.split('"""')[0] + src.split('"""', 2)[2]
    return len([ln for ln in code.splitlines() if ln.strip() and not ln.strip().startswith("#")])


def free_port() -> int:
    s = socket.create_server(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(scope="module")
def package_path(amqp10: ModuleType) -> str:
    """A folder where the rendered package is importable as amqp10_codec (the examples' name)."""
    pkg = Path(amqp10.__file__).parent
    link = pkg.parent / "amqp10_codec"
    if not link.exists():
        link.symlink_to(pkg.name)
    return str(pkg.parent)


@pytest.fixture
def example_broker(package_path: str) -> Iterator[int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(BROKER), str(port)], env={**os.environ, "PYTHONPATH": package_path},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    yield port
    proc.terminate()
    _, err = proc.communicate(timeout=10)
    assert "Traceback" not in err, err


def run_proton(handler: MessagingHandler) -> None:
    thread = threading.Thread(target=Container(handler).run, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "Proton's container did not finish"


def test_the_example_broker_is_short(amqp10: ModuleType) -> None:
    assert code_lines(BROKER) <= 50, code_lines(BROKER)
    assert code_lines(ROOT / "examples" / "amqp10_client_aio.py") <= 30


def test_our_clients_run_the_workload_through_the_example_broker(example_broker: int, package_path: str) -> None:
    """The review's 2,000-message workload, the blocking and the asyncio example, through the example broker."""
    env = {**os.environ, "PYTHONPATH": package_path}
    for example, url in (("amqp10_client.py", f"amqp://127.0.0.1:{example_broker}"),
                         ("amqp10_client_aio.py", f"amqp://guest:guest@127.0.0.1:{example_broker}")):
        p = subprocess.run([sys.executable, str(ROOT / "examples" / example), url, f"q-{example}", "2000"], env=env,
                           capture_output=True, text=True, timeout=120, check=False)
        assert p.returncode == 0 and p.stdout.strip() == "2000 messages sent and received in order", p.stderr


def test_protons_container_through_the_example_broker(example_broker: int) -> None:
    """Proton sends 40 messages (every 10th 180 kB, split over frames) awaiting our broker's Accepted, then reads
    them back with a credit of 7 and accepts each: the same bodies, in order."""
    bodies = [b"proton %d " % i * (20000 if i % 10 == 0 else 1) for i in range(40)]

    class Client(MessagingHandler):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(prefetch=7)
            self.sent = self.accepted = 0
            self.got: list[bytes] = []

        def on_start(self, event: Any) -> None:
            self.conn = event.container.connect(f"127.0.0.1:{example_broker}")
            event.container.create_sender(self.conn, "pq")

        def on_sendable(self, event: Any) -> None:
            while event.sender.credit and self.sent < len(bodies):
                event.sender.send(Message(body=bodies[self.sent]))
                self.sent += 1

        def on_accepted(self, event: Any) -> None:
            self.accepted += 1
            if self.accepted == len(bodies):
                event.container.create_receiver(self.conn, "pq")

        def on_message(self, event: Any) -> None:
            self.got.append(bytes(event.message.body))
            if len(self.got) == len(bodies):
                self.conn.close()

    client = Client()
    run_proton(client)
    assert client.accepted == len(bodies) and client.got == bodies


# -- the API, with the listener in a thread of the test ----------------------------------------------------------
class Served:
    """A Listener for ``handler`` on its own event loop in a thread; ``url`` once it listens."""

    def __init__(self, server: ModuleType, handler: Any, **kw: Any) -> None:
        self.listener = server.Listener(handler, port=0, **kw)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._serve(),), daemon=True)
        self.ready = threading.Event()
        self.thread.start()
        assert self.ready.wait(10)
        self.url = f"127.0.0.1:{self.listener.port}"

    async def _serve(self) -> None:
        await self.listener.start()
        self.ready.set()
        self.task = asyncio.current_task()
        await self.listener.serve()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.task.cancel)  # type: ignore[union-attr]
        self.thread.join(10)


@pytest.fixture(scope="module")
def server(amqp10: ModuleType) -> ModuleType:
    return importlib.import_module(f"{amqp10.__name__}.server")


def test_a_refused_link_and_the_credit_policy_as_proton_sees_them(server: ModuleType, amqp10: ModuleType) -> None:
    """on_link refuses "nowhere" with amqp:not-found: Proton's link closes with that condition; credit_for gives
    the link "three" 3 credits, kept granted as they are used: Proton's sender sees 3, and its 10 messages all
    reach on_message."""

    class H(server.Handler):  # type: ignore[misc, name-defined]
        got: list[bytes] = []

        def on_link(self, link: Any) -> str | None:
            return "amqp:not-found" if link.address == "nowhere" else None

        def credit_for(self, link: Any) -> int:
            return 3

        def on_message(self, link: Any, delivery: Any) -> Any:
            self.got.append(delivery.message.body[0].value)
            return amqp10.Accepted()

    served = Served(server, H())

    class Client(MessagingHandler):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.conditions: list[str] = []
            self.credits: list[int] = []
            self.sent = self.accepted = 0

        def on_start(self, event: Any) -> None:
            self.conn = event.container.connect(served.url)
            event.container.create_receiver(self.conn, "nowhere")
            event.container.create_sender(self.conn, "three")

        def on_link_error(self, event: Any) -> None:
            self.conditions.append(event.link.remote_condition.name)

        def on_sendable(self, event: Any) -> None:
            self.credits.append(event.sender.credit)
            while event.sender.credit and self.sent < 10:
                event.sender.send(Message(body=b"m%d" % self.sent, inferred=True))
                self.sent += 1

        def on_accepted(self, event: Any) -> None:
            self.accepted += 1
            if self.accepted == 10:
                self.conn.close()

    client = Client()
    run_proton(client)
    served.stop()
    assert client.conditions == ["amqp:not-found"]
    assert client.credits[0] == 3 and max(client.credits) <= 3
    assert H.got == [b"m%d" % i for i in range(10)] and client.accepted == 10


def test_settlements_and_a_drain_reach_the_handler(server: ModuleType, amqp10: ModuleType) -> None:
    """Our listener sends 3 messages on a link Proton receives on with a drain of 10: Proton accepts, rejects and
    releases them (on_settled gets each outcome), and the 7 unused credits come back drained (2.6.7)."""
    settled: list[tuple[int, str]] = []

    class H(server.Handler):  # type: ignore[misc, name-defined]
        def on_credit(self, link: Any) -> None:
            while link.credit and getattr(self, "n", 0) < 3:
                self.n = getattr(self, "n", 0) + 1
                link.send(amqp10.Message([amqp10.Data(b"d%d" % self.n)]))

        def on_settled(self, link: Any, tracker: Any) -> None:
            settled.append((tracker.delivery_id, type(tracker.state).__name__))

    served = Served(server, H())

    class Client(MessagingHandler):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(prefetch=0, auto_accept=False)
            self.got: list[bytes] = []
            self.drained: list[int] = []

        def on_start(self, event: Any) -> None:
            self.conn = event.container.connect(served.url)
            self.receiver = event.container.create_receiver(self.conn, "out")
            self.receiver.drain(10)

        def on_message(self, event: Any) -> None:
            self.got.append(bytes(event.message.body))
            state = (Delivery.ACCEPTED, Delivery.REJECTED, Delivery.RELEASED)[len(self.got) - 1]
            event.delivery.update(state)
            event.delivery.settle()

        def on_link_flow(self, event: Any) -> None:
            if not event.link.draining() and not self.drained and len(self.got) == 3:
                self.drained.append(event.link.drained())
                event.container.schedule(0.3, self)

        def on_timer_task(self, event: Any) -> None:
            self.conn.close()

    client = Client()
    run_proton(client)
    served.stop()
    assert client.got == [b"d1", b"d2", b"d3"] and client.drained == [7]
    # (Proton settles in the order it likes: the outcomes by delivery id)
    assert sorted(settled) == [(0, "Accepted"), (1, "Rejected"), (2, "Released")]


def test_a_handler_that_raises_closes_its_connection_with_internal_error(server: ModuleType) -> None:
    errors: list[Any] = []

    class H(server.Handler):  # type: ignore[misc, name-defined]
        def on_message(self, link: Any, delivery: Any) -> Any:
            raise RuntimeError("the application's bug")

        def on_disconnect(self, conn: Any, error: Any) -> None:
            errors.append(error)

    served = Served(server, H())

    class Client(MessagingHandler):  # type: ignore[misc]
        condition: Any = None

        def on_start(self, event: Any) -> None:
            self.conn = event.container.connect(served.url)
            event.container.create_sender(self.conn, "q")

        def on_sendable(self, event: Any) -> None:
            if event.sender.credit and not getattr(self, "sent", False):
                self.sent = True
                event.sender.send(Message(body=b"x"))

        def on_connection_error(self, event: Any) -> None:
            self.condition = event.connection.remote_condition
            event.connection.close()

    client = Client()
    run_proton(client)
    served.stop()
    assert client.condition is not None and client.condition.name == "amqp:internal-error"
    assert "RuntimeError" in client.condition.description
    assert len(errors) == 1 and isinstance(errors[0], RuntimeError)


def test_our_blocking_client_against_a_listener_with_logins_checked(server: ModuleType, amqp10: ModuleType) -> None:
    """authenticate checks PLAIN: a wrong password is an AuthenticationError for our client; the right one
    connects, and the identity reaches on_connection."""
    client = importlib.import_module(f"{amqp10.__name__}.client")
    who: list[str] = []

    class H(server.Handler):  # type: ignore[misc, name-defined]
        def on_connection(self, conn: Any) -> None:
            who.append(conn.identity)

    served = Served(server, H(), authenticate=lambda m, r: "alice" if r == b"\0alice\0secret" else None)
    with pytest.raises(client.AuthenticationError):
        client.Connection(f"amqp://alice:wrong@{served.url}", connect_timeout=5)
    with client.Connection(f"amqp://alice:secret@{served.url}", timeout=10) as conn:
        assert type(conn.sender("q").send(b"x")).__name__ == "Accepted"
    # a peer that skips SASL is refused where logins are checked (2.2: the server answers with its own header)
    with socket.create_connection(("127.0.0.1", served.listener.port), timeout=5) as raw:
        raw.sendall(b"AMQP\x00\x01\x00\x00")
        assert raw.recv(8) == b"AMQP\x03\x01\x00\x00"
    served.stop()
    assert who == ["alice"]
