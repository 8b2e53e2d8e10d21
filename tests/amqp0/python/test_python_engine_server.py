"""A small AMQP 0-9-1 server built on the generated sans-I/O engine (``engine.Connection(role="server")``), and real
clients against it.

The engine only turns bytes into events and requests into bytes; the socket, the thread and the clock belong to this
test. ``Broker`` listens on 127.0.0.1 (an ephemeral port) and serves its connections one after the other in one thread:
PLAIN and AMQPLAIN logins, queues (server-named too) on the default exchange and on direct exchanges, consumers,
basic.get, acknowledgements, publisher confirms and mandatory returns, with frame_max 4096 so that bodies travel in
several frames both ways.

- pika and py-amqp log in, declare, publish (bodies up to 50 kB, properties with header tables), consume, get and
  close: every message arrives once, bodies and properties equal, get-empty when the queue is empty, the close is
  clean and the server engine saw no ProtocolError. A tap on the socket counts the body frames each way.
- A raw socket that breaks the protocol (a method out of the negotiation's order, on a channel never opened, a body
  without a header, a frame over frame_max, ...) makes the server engine give a ProtocolError with the spec's reply
  code, which the server sends back with ``engine.close(...)``.

Every wait has a timeout: a hang is a failure, never a stuck run.
"""

from __future__ import annotations

import importlib
import random
import select
import socket
import struct
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from types import ModuleType, TracebackType
from typing import Any, Self

import pytest

HOST = "127.0.0.1"
USER = PASSWORD = "guest"
FRAME_MAX = 4096  # the spec's minimum: bodies over 4088 octets travel in several body frames
CHANNEL_MAX = 2047
WAIT = 10.0  # the longest any one wait (socket, thread, client call) may take
SESSION_LIMIT = 20.0  # the longest one connection may last on the server
SERVER_PROPERTIES: dict[str, Any] = {
    "product": "amqgen engine test server",
    "version": "0.1.0",
    "platform": "Python",
    "capabilities": {
        "publisher_confirms": True,
        "basic.nack": True,
        "consumer_cancel_notify": True,
        "exchange_exchange_bindings": True,
        "per_consumer_qos": True,
        "connection.blocked": False,
        "authentication_failure_close": True,
    },
}


def _require(name: str) -> Any:
    """A client library the test needs: a clear failure (never a skip) when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        pytest.fail(f"this test needs the {name!r} client library (pip install '.[test]'): {e}")


@pytest.fixture(scope="module")
def engine(amqp091: ModuleType) -> ModuleType:
    """The engine module of the rendered python pack (``amqp091x.engine``)."""
    try:
        return importlib.import_module(f"{amqp091.__name__}.engine")
    except ModuleNotFoundError as e:
        pytest.fail(f"the rendered python pack has no engine module ({amqp091.__name__}.engine): {e}")


def _sub(eng: ModuleType, name: str) -> ModuleType:
    """A sibling module of the engine in the rendered package (methods, properties, frames, table)."""
    return importlib.import_module(f"{eng.__name__.rpartition('.')[0]}.{name}")


# -- the server -------------------------------------------------------------------------------------------------------
@dataclass
class Stored:
    """A message in a queue, as published."""

    exchange: str
    routing_key: str
    properties: Any
    body: bytes


@dataclass
class Consumer:
    channel: int
    tag: str
    queue: str
    no_ack: bool


@dataclass
class ChannelState:
    next_tag: int = 1  # the next delivery tag (deliver and get-ok share them)
    unacked: dict[int, tuple[str, Stored]] = field(default_factory=dict)  # tag -> (queue, message)
    confirming: bool = False
    published: int = 0  # publishes seen in confirm mode: the confirm's delivery tag


@dataclass
class Session:
    """What the server saw on one connection."""

    events: list[Any] = field(default_factory=list)
    errors: list[Any] = field(default_factory=list)  # the engine's ProtocolError events
    failures: list[str] = field(default_factory=list)  # exceptions in the server's own code
    mechanism: str = ""
    response: bytes = b""
    client_properties: dict[str, Any] = field(default_factory=dict)
    negotiated: Any = None
    published: list[Stored] = field(default_factory=list)
    acked: list[int] = field(default_factory=list)  # delivery tags the client acknowledged
    confirms: int = 0  # basic.ack sent for publisher confirms
    frames_in: dict[str, int] = field(default_factory=dict)  # frame type -> count, from a tap on the socket
    frames_out: dict[str, int] = field(default_factory=dict)
    tap_errors: list[str] = field(default_factory=list)  # frames the taps could not read
    closed_by_peer: bool | None = None
    finished: threading.Event = field(default_factory=threading.Event)

    def methods(self) -> list[str]:
        """The names of the methods received, content methods included, in order."""
        return [e.method.NAME for e in self.events if hasattr(e, "method")]


class ServerConnection:
    """One accepted socket, driven by the server engine until the connection is closed."""

    def __init__(self, broker: Broker, sock: socket.socket) -> None:
        self.broker = broker
        self.eng = broker.eng
        self.m = broker.methods
        self.sock = sock
        self.conn = broker.eng.Connection(
            role="server", channel_max=CHANNEL_MAX, frame_max=FRAME_MAX, heartbeat=broker.heartbeat
        )
        self.session = Session()
        frames = broker.frames
        # taps: the same octets through a second reader, to count frames (and check they respect frame_max)
        self.tap_in = frames.FrameReader(max_frame_size=FRAME_MAX)
        self.tap_out = frames.FrameReader(max_frame_size=FRAME_MAX)
        self.channels: dict[int, ChannelState] = {}
        self.done = False
        self.closing = False  # we sent connection.close

    # -- the loop ---------------------------------------------------------------------------------------------------
    def run(self) -> None:
        s = self.session
        deadline = time.monotonic() + SESSION_LIMIT
        self.sock.settimeout(WAIT)  # for sendall; reads wait in select
        try:
            while not self.done and not self.broker.stopping.is_set():
                if time.monotonic() > deadline:
                    s.failures.append(f"the connection lasted over {SESSION_LIMIT} s")
                    break
                readable, _, _ = select.select([self.sock], [], [], 0.05)
                if readable:
                    data = self.sock.recv(65536)
                    if not data:
                        break  # the peer closed the socket
                    self._tap(self.tap_in, data, s.frames_in)
                    self.conn.receive_data(data)
                self.conn.tick(time.monotonic())
                self._pump()
                self._write(self.conn.data_to_send())
        except Exception:  # noqa: BLE001 - the test reports it
            s.failures.append(traceback.format_exc())
        finally:
            self._release_all()
            self._linger()
            s.finished.set()

    def _linger(self) -> None:
        """Close gracefully: no more writes, then read (and drop) what the peer still sends until it closes, so that
        unread input cannot turn the close into a reset that loses our last frames."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                readable, _, _ = select.select([self.sock], [], [], 0.05)
                if readable and not self.sock.recv(65536):
                    break
        except OSError:
            pass  # the peer is gone already
        finally:
            self.sock.close()

    def _tap(self, reader: Any, data: bytes, counts: dict[str, int]) -> None:
        """Count the frames; a frame the tap cannot read (say, over frame_max) is noted, the engine judges it."""
        try:
            frames = reader.feed(data)
        except self.broker.exceptions.DecodeError as e:
            self.session.tap_errors.append(f"{type(e).__name__}: {e}")
            frames = e.frames
        for f in frames:
            name = type(f).__name__
            counts[name] = counts.get(name, 0) + 1

    def _write(self, data: bytes) -> None:
        if data:
            self._tap(self.tap_out, data, self.session.frames_out)
            self.sock.sendall(data)

    def _send(self, channel: int, method: Any, properties: Any = None, body: bytes = b"") -> None:
        self.conn.send(channel, method, properties, body)
        self._write(self.conn.data_to_send())

    def _pump(self) -> None:
        eng = self.eng
        while (ev := self.conn.next_event()) is not None:
            self.session.events.append(ev)
            if isinstance(ev, eng.ProtocolHeaderReceived):
                self._send(0, self.m.ConnectionStart(0, 9, SERVER_PROPERTIES, b"PLAIN AMQPLAIN", b"en_US"))
            elif isinstance(ev, eng.MethodReceived):
                if ev.channel == 0:
                    self._connection_method(ev.method)
                else:
                    self._channel_method(ev.channel, ev.method)
            elif isinstance(ev, eng.MessageReceived):
                self._publish(ev.channel, ev.method, ev.properties, ev.body)
            elif isinstance(ev, eng.ConnectionNegotiated):
                self.session.negotiated = ev
            elif isinstance(ev, eng.ChannelClosed):
                self._release(ev.channel)  # the engine queued the close-ok of a peer's close itself
            elif isinstance(ev, eng.ConnectionClosed):
                self.session.closed_by_peer = ev.by_peer  # the engine queued the close-ok of a peer's close
                self.done = True
            elif isinstance(ev, eng.ProtocolError):
                self.session.errors.append(ev)
                self._close(ev.reply_code, ev.reply_text, ev.class_id, ev.method_id)
                if ev.reply_code == 501:  # frame-error: the engine reads nothing more, so no close-ok: we are done
                    self.done = True
            elif isinstance(ev, eng.PeerSilent):
                self.session.failures.append(f"the peer was silent for {ev.seconds:.1f} s")
                self.done = True

    def _close(self, reply_code: int, reply_text: str, class_id: int = 0, method_id: int = 0) -> None:
        if not self.closing:
            self.closing = True
            self.conn.close(reply_code, reply_text, class_id, method_id)
            self._write(self.conn.data_to_send())

    # -- channel 0 --------------------------------------------------------------------------------------------------
    def _connection_method(self, m: Any) -> None:
        s = self.session
        if m.NAME == "connection.start-ok":
            s.mechanism, s.response, s.client_properties = m.mechanism, m.response, m.client_properties
            if self._authenticated(m.mechanism, m.response):
                self._send(0, self.m.ConnectionTune(CHANNEL_MAX, FRAME_MAX, self.broker.heartbeat))
            else:
                self._close(403, f"ACCESS_REFUSED - login refused using mechanism {m.mechanism}", m.CLASS_ID,
                            m.METHOD_ID)
        elif m.NAME == "connection.open":
            self._send(0, self.m.ConnectionOpenOk())
        # connection.tune-ok: the engine keeps the values, given in ConnectionNegotiated after open-ok

    def _authenticated(self, mechanism: str, response: bytes) -> bool:
        if mechanism == "PLAIN":
            return response == b"\0" + USER.encode() + b"\0" + PASSWORD.encode()
        if mechanism == "AMQPLAIN":  # a field table without its length
            table, _ = self.broker.table.decode_table(struct.pack(">I", len(response)) + response)
            return table == {"LOGIN": USER, "PASSWORD": PASSWORD}
        return False

    # -- the channels -----------------------------------------------------------------------------------------------
    def _channel_method(self, ch: int, m: Any) -> None:
        M, queues = self.m, self.broker.queues
        name = m.NAME
        if name == "channel.open":
            self.channels[ch] = ChannelState()
            self._send(ch, M.ChannelOpenOk())
        elif name == "channel.flow":
            pass  # the engine answered with flow-ok itself
        elif name == "exchange.declare":
            if m.type_ != "direct":
                self._close(540, f"NOT_IMPLEMENTED - {m.type_} exchanges", m.CLASS_ID, m.METHOD_ID)
                return
            self.broker.exchanges.setdefault(m.exchange, set())
            if not m.no_wait:
                self._send(ch, M.ExchangeDeclareOk())
        elif name == "queue.declare":
            queue = m.queue or f"amq.gen-{self.broker.next_id()}"
            if m.passive and queue not in queues:
                self._send(ch, M.ChannelClose(404, f"NOT_FOUND - no queue '{queue}'", m.CLASS_ID, m.METHOD_ID))
                return
            queues.setdefault(queue, deque())
            if not m.no_wait:
                consumers = sum(c.queue == queue for c in self.broker.consumers.values())
                self._send(ch, M.QueueDeclareOk(queue, len(queues[queue]), consumers))
        elif name == "queue.bind":
            if m.exchange not in self.broker.exchanges or m.queue not in queues:
                self._send(ch, M.ChannelClose(404, "NOT_FOUND - no exchange or queue", m.CLASS_ID, m.METHOD_ID))
                return
            self.broker.exchanges[m.exchange].add((m.routing_key, m.queue))
            if not m.no_wait:
                self._send(ch, M.QueueBindOk())
        elif name == "queue.purge":
            count = len(queues.get(m.queue, ()))
            queues.get(m.queue, deque()).clear()
            if not m.no_wait:
                self._send(ch, M.QueuePurgeOk(count))
        elif name == "queue.delete":
            count = len(queues.pop(m.queue, ()))
            if not m.no_wait:
                self._send(ch, M.QueueDeleteOk(count))
        elif name == "basic.qos":
            self._send(ch, M.BasicQosOk())
        elif name == "confirm.select":
            self.channels[ch].confirming = True
            if not m.nowait:
                self._send(ch, M.ConfirmSelectOk())
        elif name == "basic.consume":
            if m.queue not in queues:
                self._send(ch, M.ChannelClose(404, f"NOT_FOUND - no queue '{m.queue}'", m.CLASS_ID, m.METHOD_ID))
                return
            tag = m.consumer_tag or f"amq.ctag-{self.broker.next_id()}"
            self.broker.consumers[tag] = Consumer(ch, tag, m.queue, m.no_ack)
            if not m.no_wait:
                self._send(ch, M.BasicConsumeOk(tag))
            self._dispatch(m.queue)
        elif name == "basic.cancel":
            self.broker.consumers.pop(m.consumer_tag, None)
            if not m.no_wait:
                self._send(ch, M.BasicCancelOk(m.consumer_tag))
        elif name == "basic.get":
            q = queues.get(m.queue)
            if q is None:
                self._send(ch, M.ChannelClose(404, f"NOT_FOUND - no queue '{m.queue}'", m.CLASS_ID, m.METHOD_ID))
            elif not q:
                self._send(ch, M.BasicGetEmpty())
            else:
                msg = q.popleft()
                tag = self._tag(ch, m.queue, msg, m.no_ack)
                ok = M.BasicGetOk(tag, False, msg.exchange, msg.routing_key, len(q))
                self._send(ch, ok, msg.properties, msg.body)
        elif name in ("basic.ack", "basic.nack", "basic.reject"):
            self._settle(ch, m)
        else:
            self._close(540, f"NOT_IMPLEMENTED - {name}", m.CLASS_ID, m.METHOD_ID)

    def _publish(self, ch: int, m: Any, properties: Any, body: bytes) -> None:
        M, s = self.m, self.session
        msg = Stored(m.exchange, m.routing_key, properties, body)
        s.published.append(msg)
        if m.exchange == "":  # the default exchange: the queue of that name
            targets = [m.routing_key] if m.routing_key in self.broker.queues else []
        elif m.exchange in self.broker.exchanges:
            targets = sorted(q for k, q in self.broker.exchanges[m.exchange] if k == m.routing_key)
        else:
            self._send(ch, M.ChannelClose(404, f"NOT_FOUND - no exchange '{m.exchange}'", m.CLASS_ID, m.METHOD_ID))
            return
        for queue in targets:
            self.broker.queues[queue].append(msg)
        if not targets and m.mandatory:
            self._send(ch, M.BasicReturn(312, "NO_ROUTE", m.exchange, m.routing_key), properties, body)
        state = self.channels[ch]
        if state.confirming:
            state.published += 1
            self._send(ch, M.BasicAck(state.published, False))
            s.confirms += 1
        for queue in targets:
            self._dispatch(queue)

    def _tag(self, ch: int, queue: str, msg: Stored, no_ack: bool) -> int:
        state = self.channels[ch]
        tag, state.next_tag = state.next_tag, state.next_tag + 1
        if not no_ack:
            state.unacked[tag] = (queue, msg)
        return tag

    def _dispatch(self, queue: str) -> None:
        """Deliver what waits in ``queue`` to its consumers on this connection, in turn."""
        consumers = [c for c in self.broker.consumers.values() if c.queue == queue and c.channel in self.channels]
        q = self.broker.queues.get(queue)
        i = 0
        while consumers and q:
            c = consumers[i % len(consumers)]
            msg = q.popleft()
            tag = self._tag(c.channel, queue, msg, c.no_ack)
            deliver = self.m.BasicDeliver(c.tag, tag, False, msg.exchange, msg.routing_key)
            self._send(c.channel, deliver, msg.properties, msg.body)
            i += 1

    def _settle(self, ch: int, m: Any) -> None:
        state = self.channels[ch]
        multiple = getattr(m, "multiple", False)
        tags = [t for t in state.unacked if t <= m.delivery_tag] if multiple else [m.delivery_tag]
        if multiple and m.delivery_tag == 0:
            tags = list(state.unacked)
        if any(t not in state.unacked for t in tags):
            reason = f"PRECONDITION_FAILED - unknown delivery tag {m.delivery_tag}"
            self._send(ch, self.m.ChannelClose(406, reason, m.CLASS_ID, m.METHOD_ID))
            return
        requeue = m.NAME != "basic.ack" and m.requeue
        for t in tags:
            queue, msg = state.unacked.pop(t)
            if m.NAME == "basic.ack":
                self.session.acked.append(t)
            if requeue and queue in self.broker.queues:
                self.broker.queues[queue].appendleft(msg)
        if requeue:
            self._dispatch_all()

    def _dispatch_all(self) -> None:
        for queue in list(self.broker.queues):
            self._dispatch(queue)

    def _release(self, ch: int) -> None:
        """A channel closed: its consumers go, its unacknowledged messages return to their queues, in order."""
        for tag in [t for t, c in self.broker.consumers.items() if c.channel == ch]:
            del self.broker.consumers[tag]
        state = self.channels.pop(ch, None)
        if state is not None:
            for _, (queue, msg) in sorted(state.unacked.items(), reverse=True):
                if queue in self.broker.queues:
                    self.broker.queues[queue].appendleft(msg)

    def _release_all(self) -> None:
        for ch in list(self.channels):
            self._release(ch)


class Broker:
    """Listens on 127.0.0.1 (an ephemeral port); serves the connections it accepts one after the other, in a thread."""

    def __init__(self, eng: ModuleType, *, heartbeat: int = 0) -> None:
        self.eng = eng
        self.methods = _sub(eng, "methods")
        self.frames = _sub(eng, "frames")
        self.table = _sub(eng, "table")
        self.exceptions = _sub(eng, "exceptions")
        self.heartbeat = heartbeat
        self.queues: dict[str, deque[Stored]] = {}
        self.exchanges: dict[str, set[tuple[str, str]]] = {}  # direct exchange -> its bindings (routing key, queue)
        self.consumers: dict[str, Consumer] = {}
        self.sessions: list[Session] = []
        self.failures: list[str] = []
        self.stopping = threading.Event()
        self._ids = 0
        self.listener = socket.create_server((HOST, 0))
        self.port: int = self.listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, name="engine-server", daemon=True)

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stopping.set()
        self._thread.join(WAIT)
        self.listener.close()
        assert not self._thread.is_alive(), "the server thread did not stop"

    def _serve(self) -> None:
        self.listener.settimeout(0.05)
        try:
            while not self.stopping.is_set():
                try:
                    sock, _ = self.listener.accept()
                except TimeoutError:
                    continue
                served = ServerConnection(self, sock)
                self.sessions.append(served.session)
                served.run()
        except Exception:  # noqa: BLE001 - the test reports it
            self.failures.append(traceback.format_exc())

    def session(self, index: int = 0) -> Session:
        """The ``index``-th connection's record, once the server has finished with it."""
        deadline = time.monotonic() + WAIT
        while len(self.sessions) <= index:
            assert time.monotonic() < deadline, f"the server accepted no connection #{index}"
            time.sleep(0.01)
        s = self.sessions[index]
        assert s.finished.wait(WAIT), f"the server did not finish connection #{index}: {s.methods()}"
        return s


def _assert_clean(broker: Broker, s: Session) -> None:
    assert not broker.failures, "\n".join(broker.failures)
    assert not s.failures, "\n".join(s.failures)
    assert not s.errors, f"the server engine saw protocol errors: {s.errors}"
    assert not s.tap_errors, f"frames over frame_max or malformed: {s.tap_errors}"


# -- the messages -----------------------------------------------------------------------------------------------------
def _bodies() -> list[bytes]:
    """Bodies of every shape: empty, small, exactly one full frame, just over it, several frames."""
    rng = random.Random(91)
    sizes = [0, 1, 100, FRAME_MAX - 8, FRAME_MAX - 7, 3 * FRAME_MAX, 20_000, 50_000]
    return [rng.randbytes(n) for n in sizes]


def _body_frames(bodies: list[bytes]) -> int:
    """How many body frames the bodies take at FRAME_MAX (frame header and frame-end take 8 octets)."""
    chunk = FRAME_MAX - 8
    return sum(-(-len(b) // chunk) for b in bodies)


def _headers(i: int, *, floats: bool = True) -> dict[str, Any]:
    """Header tables of every field type both clients write (pika writes no floats)."""
    headers: dict[str, Any] = {
        "index": i,
        "big": 2**40 + i,
        "neg": -i - 1,
        "text": f"message {i} ✓ 東京",
        "flag": i % 2 == 0,
        "float": i / 7,
        "dec": Decimal(i) / Decimal(100),
        "raw": bytes([i, 0, 255]),
        "void": None,
        "list": [i, "two", {"deep": [True, None]}],
        "nested": {"level": {"i": i}},
    }
    if not floats:
        del headers["float"]
    return headers


def _wait_until(done: Callable[[], bool], step: Callable[[], None], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        step()


# -- pika -------------------------------------------------------------------------------------------------------------
def test_pika_against_engine_server(engine: ModuleType) -> None:
    pika = _require("pika")
    bodies = _bodies()
    sent = [
        pika.BasicProperties(
            content_type="application/octet-stream",
            content_encoding="identity" if i % 2 else None,
            headers=_headers(i, floats=False),
            delivery_mode=1 + i % 2,
            priority=i % 10,
            correlation_id=f"corr-{i}",
            reply_to=f"replies.{i}" if i % 3 == 0 else None,
            expiration="60000",
            message_id=f"msg-{i}",
            timestamp=1_700_000_000 + i,
            type="amqgen.test",
            user_id=USER,
            app_id="pika",
        )
        for i in range(len(bodies))
    ]
    get_props = pika.BasicProperties(content_type="text/plain", headers={"get": True})
    with Broker(engine, heartbeat=60) as broker:
        params = pika.ConnectionParameters(
            host=HOST,
            port=broker.port,
            credentials=pika.PlainCredentials(USER, PASSWORD),
            connection_attempts=1,
            socket_timeout=WAIT,
            stack_timeout=WAIT,
            blocked_connection_timeout=WAIT,
        )
        conn = pika.BlockingConnection(params)
        caps = conn._impl.server_capabilities
        assert caps["publisher_confirms"] and caps["basic.nack"] and caps["consumer_cancel_notify"], caps
        ch = conn.channel()
        ch.confirm_delivery()  # publisher confirms: every basic_publish below waits for the server's basic.ack

        queue = ch.queue_declare(queue="", exclusive=True).method.queue  # server-named
        assert queue.startswith("amq.gen-"), queue
        ok = ch.queue_declare(queue="amqgen.pika.get").method
        assert (ok.queue, ok.message_count, ok.consumer_count) == ("amqgen.pika.get", 0, 0)

        for props, body in zip(sent, bodies, strict=True):
            ch.basic_publish("", queue, body, props, mandatory=True)
        ch.basic_publish("", "amqgen.pika.get", b"for basic.get", get_props)
        with pytest.raises(pika.exceptions.UnroutableError):  # basic.return (with its content), then basic.ack
            ch.basic_publish("", "amqgen.nowhere", b"returned", mandatory=True)
        assert ch.queue_declare(queue=queue, passive=True).method.message_count == len(bodies)

        received: list[tuple[Any, Any, bytes]] = []

        def on_message(chan: Any, method: Any, props: Any, body: bytes) -> None:
            received.append((method, props, body))
            chan.basic_ack(method.delivery_tag)

        tag = ch.basic_consume(queue, on_message)
        _wait_until(lambda: len(received) >= len(bodies), lambda: conn.process_data_events(time_limit=0.05),
                    "pika's deliveries")
        ch.basic_cancel(tag)

        method, props, body = ch.basic_get("amqgen.pika.get")
        assert method is not None, "basic.get found nothing"
        assert (body, props.content_type, props.headers, method.message_count) == (
            b"for basic.get", "text/plain", {"get": True}, 0)
        ch.basic_ack(method.delivery_tag)
        assert ch.basic_get("amqgen.pika.get") == (None, None, None)  # basic.get-empty

        # a channel the server closes: a passive declare of a queue that does not exist
        ch2 = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as closed:
            ch2.queue_declare(queue="amqgen.missing", passive=True)
        assert closed.value.reply_code == 404

        ch.close()
        conn.close()
        assert conn.is_closed
        s = broker.session()

    _assert_clean(broker, s)
    assert [b for _, _, b in received] == bodies
    assert [p.__dict__ for _, p, _ in received] == [p.__dict__ for p in sent]
    assert [m.consumer_tag for m, _, _ in received] == [tag] * len(bodies)
    assert [m.routing_key for m, _, _ in received] == [queue] * len(bodies)
    assert not any(m.redelivered for m, _, _ in received)

    # the server's side: the handshake, what arrived, and how it travelled
    assert (s.mechanism, s.response) == ("PLAIN", b"\0guest\0guest")
    assert s.client_properties["capabilities"]["publisher_confirms"] is True
    assert (s.negotiated.frame_max, s.negotiated.channel_max, s.negotiated.heartbeat) == (FRAME_MAX, CHANNEL_MAX, 60)
    published = [*bodies, b"for basic.get", b"returned"]
    assert [m.body for m in s.published] == published
    assert s.confirms == len(published)
    assert sorted(s.acked) == list(range(1, len(bodies) + 2))  # deliveries 1..n, then the get-ok
    assert s.frames_in.get("BodyFrame") == _body_frames(published)
    assert s.frames_out.get("BodyFrame") == _body_frames(published)  # deliveries, get-ok, return
    methods = s.methods()
    assert methods[:5] == ["connection.start-ok", "connection.tune-ok", "connection.open", "channel.open",
                           "confirm.select"]
    assert (methods.count("basic.publish"), methods.count("basic.ack")) == (len(published), len(bodies) + 1)
    closes = [(e.channel, e.reply_code, e.by_peer) for e in s.events if isinstance(e, engine.ChannelClosed)]
    assert closes == [(2, 404, False), (1, 0, True)]  # ours (the 404), acknowledged; then pika's (code 0)
    assert s.closed_by_peer is True


def test_pika_with_a_wrong_password_is_refused(engine: ModuleType) -> None:
    pika = _require("pika")
    with Broker(engine) as broker:
        params = pika.ConnectionParameters(host=HOST, port=broker.port, credentials=pika.PlainCredentials(USER, "nope"),
                                           connection_attempts=1, socket_timeout=WAIT, stack_timeout=WAIT)
        with pytest.raises(pika.exceptions.ProbableAuthenticationError) as refused:
            pika.BlockingConnection(params)
        s = broker.session()
    assert "ACCESS_REFUSED" in str(refused.value)
    assert not broker.failures and not s.failures and not s.errors, (broker.failures, s.failures, s.errors)
    assert (s.mechanism, s.response) == ("PLAIN", b"\0guest\0nope")
    assert s.negotiated is None  # the close came in the middle of the negotiation


# -- py-amqp ----------------------------------------------------------------------------------------------------------
def test_py_amqp_against_engine_server(engine: ModuleType) -> None:
    amqp = _require("amqp")
    bodies = _bodies()
    sent = [
        {
            "content_type": "application/octet-stream",
            "application_headers": _headers(i),
            "delivery_mode": 2,
            "priority": i,
            "correlation_id": f"corr-{i}",
            "message_id": f"msg-{i}",
            "timestamp": 1_700_000_000 + i,
            "type": "amqgen.test",
            "app_id": "py-amqp",
        }
        for i in range(len(bodies))
    ]
    with Broker(engine) as broker:
        conn = amqp.Connection(
            host=f"{HOST}:{broker.port}", userid=USER, password=PASSWORD, connect_timeout=WAIT,
            read_timeout=WAIT, write_timeout=WAIT, confirm_publish=True,
        )
        conn.connect()
        try:
            assert conn.server_properties["capabilities"]["publisher_confirms"] is True
            ch = conn.channel()
            queue, count, consumers = ch.queue_declare(queue="", exclusive=True)
            assert queue.startswith("amq.gen-") and (count, consumers) == (0, 0)
            assert ch.queue_declare(queue="amqgen.amqp.get")[0] == "amqgen.amqp.get"
            ch.exchange_declare("amqgen.direct", "direct", auto_delete=True)
            ch.queue_bind(queue, exchange="amqgen.direct", routing_key="rk")
            ch.basic_qos(prefetch_size=0, prefetch_count=len(bodies), a_global=False)
            for props, body in zip(sent, bodies, strict=True):
                ch.basic_publish(amqp.Message(body, **props), exchange="amqgen.direct", routing_key="rk",
                                 mandatory=True)
            ch.basic_publish(amqp.Message(b"for basic.get", content_type="text/plain"), exchange="",
                             routing_key="amqgen.amqp.get")

            got = ch.basic_get("amqgen.amqp.get")
            assert got is not None, "basic.get found nothing"
            assert (got.body, got.properties["content_type"]) == (b"for basic.get", "text/plain")
            ch.basic_ack(got.delivery_tag)
            assert ch.basic_get("amqgen.amqp.get") is None  # basic.get-empty

            received: list[Any] = []

            def on_message(msg: Any) -> None:
                received.append(msg)
                ch.basic_ack(msg.delivery_tag)

            tag = ch.basic_consume(queue, callback=on_message)

            def drain() -> None:
                try:
                    conn.drain_events(timeout=0.05)
                except TimeoutError:
                    pass

            _wait_until(lambda: len(received) >= len(bodies), drain, "py-amqp's deliveries")
            ch.basic_cancel(tag)
            ch.close()
        finally:
            conn.close()
        s = broker.session()

    _assert_clean(broker, s)
    assert [m.body or b"" for m in received] == bodies  # py-amqp gives "" for an empty body
    for msg, props in zip(received, sent, strict=True):
        got_props = {k: msg.properties.get(k) for k in props}
        assert got_props == props
        info = msg.delivery_info
        assert (info["consumer_tag"], info["exchange"], info["routing_key"]) == (tag, "amqgen.direct", "rk")

    assert s.mechanism == "AMQPLAIN"  # py-amqp's first choice among the server's PLAIN AMQPLAIN
    assert (s.negotiated.frame_max, s.negotiated.channel_max, s.negotiated.heartbeat) == (FRAME_MAX, CHANNEL_MAX, 0)
    assert [m.body for m in s.published] == [*bodies, b"for basic.get"]
    assert s.confirms == len(bodies) + 1
    assert sorted(s.acked) == list(range(1, len(bodies) + 2))
    assert s.frames_in.get("BodyFrame") == _body_frames([*bodies, b"for basic.get"])
    assert s.frames_out.get("BodyFrame") == _body_frames([*bodies, b"for basic.get"])
    assert s.closed_by_peer is True
    assert s.methods()[:7] == ["connection.start-ok", "connection.tune-ok", "connection.open", "channel.open",
                               "queue.declare", "queue.declare", "exchange.declare"]


# -- a peer that breaks the protocol ----------------------------------------------------------------------------------
class RawPeer:
    """A client socket: a client engine for the legal steps, hand-made frames for the illegal one."""

    def __init__(self, eng: ModuleType, port: int) -> None:
        self.eng = eng
        self.m = _sub(eng, "methods")
        self.conn = eng.Connection(role="client", channel_max=CHANNEL_MAX, frame_max=FRAME_MAX, heartbeat=0)
        self.sock = socket.create_connection((HOST, port), timeout=WAIT)
        self.events: list[Any] = []

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)

    def next(self, wanted: Callable[[Any], bool], what: str) -> Any:
        """Read until the client engine gives an event ``wanted`` accepts; the events are all kept."""
        deadline = time.monotonic() + WAIT
        while True:
            while (ev := self.conn.next_event()) is not None:
                self.events.append(ev)
                if wanted(ev):
                    return ev
            self.write(self.conn.data_to_send())
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {self.events}"
            data = self.sock.recv(65536)
            assert data, f"the server closed the socket before {what}: {self.events}"
            self.conn.receive_data(data)

    def method(self, name: str) -> Any:
        return self.next(lambda e: isinstance(e, self.eng.MethodReceived) and e.method.NAME == name, name).method

    def open(self, channel: int | None) -> None:
        """The negotiation (and channel ``channel`` open) done by the book."""
        eng = self.eng
        self.conn.initiate()
        self.write(self.conn.data_to_send())
        self.method("connection.start")
        response = eng.plain_response(USER, PASSWORD)
        start_ok = self.m.ConnectionStartOk(eng.client_properties("raw peer"), "PLAIN", response, "en_US")
        self.conn.send(0, start_ok)
        self.write(self.conn.data_to_send())
        tune = self.method("connection.tune")
        self.conn.send(0, eng.tune_ok_for(tune, self.conn))
        self.write(self.conn.data_to_send())
        self.conn.send(0, self.m.ConnectionOpen("/"))
        self.write(self.conn.data_to_send())
        self.next(lambda e: isinstance(e, eng.ConnectionNegotiated), "connection.open-ok")
        if channel is not None:
            self.conn.send(channel, self.m.ChannelOpen())
            self.write(self.conn.data_to_send())
            self.next(lambda e: isinstance(e, eng.ChannelOpened), "channel.open-ok")

    def closed(self) -> Any:
        """The server's connection.close; the engine's close-ok goes back, and the server closes the socket."""
        ev = self.next(lambda e: isinstance(e, self.eng.ConnectionClosed), "connection.close")
        self.write(self.conn.data_to_send())
        deadline = time.monotonic() + WAIT
        while self.sock.recv(65536):
            assert time.monotonic() < deadline, "the server did not close the socket"
        self.sock.close()
        return ev


def _misbehave_channel_open_first(peer: RawPeer) -> None:
    peer.conn.initiate()
    peer.write(peer.conn.data_to_send())
    peer.method("connection.start")
    peer.write(peer.m.ChannelOpen().encode_frame(1))  # instead of start-ok


def _misbehave_stray_body(peer: RawPeer) -> None:
    peer.open(1)
    frames = _sub(peer.eng, "frames")
    peer.write(frames.BodyFrame(1, b"no header before me").encode())


def _misbehave_closed_channel(peer: RawPeer) -> None:
    peer.open(None)
    peer.write(peer.m.QueueDeclare(queue="q").encode_frame(3))  # channel 3 was never opened


def _misbehave_oversized_frame(peer: RawPeer) -> None:
    peer.open(1)
    frames, props = _sub(peer.eng, "frames"), _sub(peer.eng, "properties")
    body = bytes(2 * FRAME_MAX)  # in one body frame: twice the negotiated frame_max
    peer.write(peer.m.BasicPublish(routing_key="q").encode_frame(1))
    peer.write(frames.HeaderFrame(1, 60, len(body), props.BasicProperties()).encode())
    peer.write(frames.BodyFrame(1, body).encode())


def _misbehave_heartbeat_on_channel(peer: RawPeer) -> None:
    peer.open(1)
    peer.write(_sub(peer.eng, "frames").HeartbeatFrame(1).encode())


def _misbehave_server_method(peer: RawPeer) -> None:
    peer.open(1)
    peer.write(peer.m.BasicGetEmpty().encode_frame(1))  # only a server sends it


def _misbehave_second_open(peer: RawPeer) -> None:
    peer.open(None)
    peer.write(peer.m.ConnectionOpen("/").encode_frame(0))  # the negotiation is over


MISBEHAVIOURS: dict[str, tuple[Callable[[RawPeer], None], set[str], int, tuple[int, int]]] = {
    # case: (what the peer does, the engine's kind, the reply code, the offending method's ids)
    "channel.open before start-ok": (_misbehave_channel_open_first, {"out-of-sequence"}, 503, (20, 10)),
    "connection.open after open-ok": (_misbehave_second_open, {"out-of-sequence"}, 503, (10, 40)),
    "method on a channel never opened": (_misbehave_closed_channel, {"channel-not-open"}, 504, (50, 10)),
    "body frame with no header": (_misbehave_stray_body, {"unexpected-frame"}, 505, (0, 0)),
    "a server's method from the client": (_misbehave_server_method, {"not-sendable"}, 540, (60, 72)),
    "frame over frame_max": (_misbehave_oversized_frame, {"malformed-frame"}, 501, (0, 0)),
    # the frame reader refuses it before the engine's own heartbeat check: either kind, the same frame-error
    "heartbeat on channel 1": (_misbehave_heartbeat_on_channel, {"bad-heartbeat", "malformed-frame"}, 501, (0, 0)),
}


@pytest.mark.parametrize("case", list(MISBEHAVIOURS))
def test_misbehaving_peer_gets_the_spec_reply_code(engine: ModuleType, case: str) -> None:
    misbehave, kinds, code, ids = MISBEHAVIOURS[case]
    with Broker(engine) as broker:
        peer = RawPeer(engine, broker.port)
        try:
            misbehave(peer)
            closed = peer.closed()
        except AssertionError as e:
            pytest.fail(f"{e}\nthe server's record: {broker.sessions} {broker.failures}")
        finally:
            peer.sock.close()
        s = broker.session()

    assert not broker.failures, "\n".join(broker.failures)
    assert not s.failures, "\n".join(s.failures)
    assert len(s.errors) == 1, s.errors
    err = s.errors[0]
    assert err.kind in kinds and (err.reply_code, (err.class_id, err.method_id)) == (code, ids), err
    # the server answered with engine.close(...): the peer's engine saw connection.close with that code and ids
    assert closed.by_peer and (closed.reply_code, (closed.class_id, closed.method_id)) == (code, ids), closed
    assert closed.reply_text == err.reply_text
    if code == 501:  # after a frame-error the server does not read on: it closes the socket after its close
        assert s.closed_by_peer is None
    else:  # our close, then the peer's close-ok
        assert s.closed_by_peer is False
