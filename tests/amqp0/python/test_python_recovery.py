"""Connection recovery in the generated Python clients (issue 42, docs/recovery.md): the shared policy and topology
(client_core: RecoveryPolicy, Topology) checked against hand-written expectations, and the blocking client's
RecoveringConnection checked against what RabbitMQ itself reports after a forced close (rabbitmqctl
list_channels, passive declares, basic.get). The fault matrix's recovery rows and the soak compare the clients'
outcomes; these pin the parts a row does not look at."""

from __future__ import annotations

import importlib
import threading
import time
import uuid
from types import ModuleType
from typing import Any

import pytest

from faults import broker
from faults.proxy import FaultProxy

pytestmark = pytest.mark.broker

URL = f"amqp://guest:guest@{broker.HOST}:{broker.PORT}/"


@pytest.fixture(scope="module")
def core(amqp091: ModuleType) -> ModuleType:
    return importlib.import_module(f"{amqp091.__name__}.client_core")


@pytest.fixture(scope="module")
def client(amqp091: ModuleType) -> ModuleType:
    return importlib.import_module(f"{amqp091.__name__}.client")


@pytest.fixture(scope="module")
def m(amqp091: ModuleType) -> Any:
    return importlib.import_module(f"{amqp091.__name__}.methods").METHODS_BY_NAME


# -- the shared policy and topology, without I/O ----------------------------------------------------------------
def test_topology_records_replays_and_forgets_as_the_policy_says(core: ModuleType, m: Any) -> None:
    t = core.Topology()
    ok = m["queue.declare-ok"]
    t.record(1, m["exchange.declare"](exchange="x1", type_="direct"), None)
    t.record(1, m["exchange.declare"](exchange="x2", type_="fanout"), None)
    t.record(1, m["queue.declare"](queue="", exclusive=True), ok(queue="amq.gen-A", message_count=0,
                                                                  consumer_count=0))
    t.record(1, m["queue.declare"](queue="named"), ok(queue="named", message_count=0, consumer_count=0))
    t.record(1, m["queue.declare"](queue="named", passive=True), ok(queue="named", message_count=3,
                                                                     consumer_count=0))
    t.record(2, m["queue.declare"](queue="", no_wait=True), None)  # no reply named it: nothing to replay
    t.record(1, m["queue.bind"](queue="amq.gen-A", exchange="x1", routing_key="a"), None)
    t.record(1, m["queue.bind"](queue="named", exchange="x1", routing_key="b"), None)
    t.record(1, m["queue.bind"](queue="named", exchange="x2", routing_key="c"), None)
    t.record(1, m["exchange.bind"](destination="x2", source="x1", routing_key="d"), None)
    t.record(2, m["basic.consume"](queue="amq.gen-A", consumer_tag="t1"), None)
    t.record(3, m["basic.consume"](queue="named", consumer_tag="t2"), None)
    t.record(2, m["basic.qos"](prefetch_count=10), None)
    t.record(2, m["basic.qos"](prefetch_count=20), None)
    t.record(2, m["basic.qos"](prefetch_count=5, global_=True), None)
    t.record(2, m["confirm.select"](nowait=True), None)

    def shown() -> list[tuple[str, ...]]:
        out = []
        for d in t.declarations():
            f = d.method
            out.append({"exchange": lambda: ("exchange", f.exchange), "queue": lambda: ("queue", f.queue),
                        "queue-binding": lambda: ("qbind", f.queue, f.exchange, f.routing_key),
                        "exchange-binding": lambda: ("xbind", f.destination, f.source)}[d.kind]())
        return out

    # by kind (exchanges, queues, exchange bindings, queue bindings), as declared within a kind; the passive
    # declare and the unnamed no-wait one are not there
    assert shown() == [("exchange", "x1"), ("exchange", "x2"), ("queue", "amq.gen-A"), ("queue", "named"),
                       ("xbind", "x2", "x1"), ("qbind", "amq.gen-A", "x1", "a"), ("qbind", "named", "x1", "b"),
                       ("qbind", "named", "x2", "c")]
    assert [d.server_named for d in t.declarations() if d.kind == "queue"] == [True, False]
    assert not core.Topology.outlives(t.declarations()[2].method)  # exclusive: goes with the connection
    assert core.Topology.outlives(t.declarations()[3].method)
    # the channel's settings: the last qos of each global value, then confirm mode, replayed waiting
    settings = t.replayed_settings(2)
    assert [(type(s).__name__, getattr(s, "prefetch_count", None)) for s in settings] == [
        ("BasicQos", 20), ("BasicQos", 5), ("ConfirmSelect", None)]
    assert settings[2].nowait is False
    # a recovery renamed the server-named queue: its binding and consumer follow, and any name it had maps
    t.renamed("amq.gen-A", "amq.gen-B")
    t.renamed("amq.gen-B", "amq.gen-C")
    assert t.current("amq.gen-A") == t.current("amq.gen-B") == "amq.gen-C" and t.current("named") == "named"
    assert ("qbind", "amq.gen-C", "x1", "a") in shown()
    assert [d.method.queue for d in t.consumers(2)] == ["amq.gen-C"]
    # removals: an unbind, a queue with its bindings and consumers, an exchange with the bindings naming it
    t.record(1, m["queue.unbind"](queue="named", exchange="x2", routing_key="c"), None)
    assert ("qbind", "named", "x2", "c") not in shown()
    t.record(1, m["queue.delete"](queue="amq.gen-C"), None)
    assert t.consumers(2) == [] and ("queue", "amq.gen-C") not in shown()
    t.record(1, m["exchange.delete"](exchange="x2"), None)
    assert shown() == [("exchange", "x1"), ("queue", "named"), ("qbind", "named", "x1", "b")]
    # a cancel forgets a consumer; a closed channel forgets its consumers and settings
    t.record(3, m["basic.cancel"](consumer_tag="t2"), None)
    assert t.consumers(3) == []
    t.channel_closed(2)
    assert t.replayed_settings(2) == []
    # a redeclare replaces (its arguments now), keeping one entry
    t.record(1, m["queue.declare"](queue="named", arguments={"x-max-length": 5}), None)
    assert [d.method.arguments for d in t.declarations() if d.kind == "queue"] == [{"x-max-length": 5}]


def test_the_backoff_and_what_is_recovered(core: ModuleType) -> None:
    p = core.RecoveryPolicy(initial_delay=0.1, max_delay=1.0)
    for n, d in ((0, 0.1), (1, 0.2), (3, 0.8), (4, 1.0), (60, 1.0), (10_000, 1.0)):
        waits = [p.delay(n) for _ in range(200)]
        assert all(d / 2 <= w <= d for w in waits), (n, min(waits), max(waits))
        assert max(waits) - min(waits) > d / 10  # jitter
    assert p.recovers(core.ConnectionLostError("reset"))
    assert p.recovers(core.ConnectionClosedError(320, "CONNECTION_FORCED"))
    assert p.recovers(core.ConnectionClosedError(541, "INTERNAL_ERROR"))
    assert not p.recovers(core.ConnectionClosedError(403, "ACCESS_REFUSED"))
    assert not p.recovers(core.ConnectionClosedError(530, "NOT_ALLOWED"))
    assert not p.recovers(core.ConnectionClosedError(505, "UNEXPECTED_FRAME", by_peer=False))
    assert not p.recovers(None)
    assert core.REFUSALS == {403, 530}


# -- the blocking client against RabbitMQ ------------------------------------------------------------------------
def _port(conn: Any) -> int:
    return int(conn._conn._sock.getsockname()[1])


def _channels(port: int) -> dict[int, tuple[int, str]]:
    """The broker's view of a connection's channels: number -> (prefetch_count, confirm)."""
    out = {}
    for line in broker.ctl("list_channels", "-q", "--no-table-headers", "name", "number", "prefetch_count",
                           "confirm").splitlines():
        name, number, prefetch, confirm = line.split("\t")
        if name.startswith(f"127.0.0.1:{port} ->"):
            out[int(number)] = (int(prefetch), confirm)
    return out


def _recovered(conn: Any, before: int, seconds: float = 20.0) -> None:
    end = time.monotonic() + seconds
    while conn.recoveries == before:
        assert time.monotonic() < end, "no recovery"
        conn.process_data_events(0.1)


def test_a_forced_close_brings_back_channels_settings_and_topology(client: ModuleType) -> None:
    tag = uuid.uuid4().hex[:8]
    conn = client.connect_recovering(URL, heartbeat=10, name=f"recovery-{tag}")
    gone_q, gone_x, named = f"amqgen.rec.{tag}.gone", f"amqgen.rec.{tag}.gonex", f"amqgen.rec.{tag}.named"
    kept = ""
    try:
        ch1 = conn.channel()
        ch1.basic_qos(prefetch_count=7)
        ch1.confirm_select()
        ch2 = conn.channel()
        ch3 = conn.channel()
        ch3.basic_qos(prefetch_count=3)
        ch2.close()
        # a server-named queue that outlives the connection (neither exclusive nor auto-delete), with a message
        kept = ch1.queue_declare(queue="").queue
        ch1.publish(b"kept", routing_key=kept)
        ch1.queue_declare(queue=named)
        ch1.queue_declare(queue=gone_q)
        ch1.exchange_declare(exchange=gone_x, type_="fanout")
        ch1.queue_bind(queue=named, exchange=gone_x)
        ch1.queue_delete(queue=gone_q)
        ch1.exchange_delete(exchange=gone_x)
        port = _port(conn)
        assert _channels(port) == {1: (7, "true"), 3: (3, "false")}
        broker.close_connection(port, "test: forced close")
        _recovered(conn, 0)
        new_port = _port(conn)
        assert new_port != port
        # the broker's own view: the same numbers, prefetch and confirm mode; no spare channel left open
        assert _channels(new_port) == {1: (7, "true"), 3: (3, "false")}
        assert (ch1.number, ch3.number) == (1, 3)
        # the outliving server-named queue was kept (checked, not renamed) with its message
        assert conn.current_name(kept) == kept
        got = ch1.basic_get(queue=kept, no_ack=True)
        assert got is not None and got.body == b"kept"
        # deleted topology stays deleted; the named queue is there
        probe = conn.channel()
        assert probe.queue_declare(queue=named, passive=True).queue == named
        for what, call in (("queue", lambda c: c.queue_declare(queue=gone_q, passive=True)),
                           ("exchange", lambda c: c.exchange_declare(exchange=gone_x, type_="fanout",
                                                                     passive=True))):
            with pytest.raises(client.ChannelClosedError) as err:
                call(conn.channel())
            assert err.value.reply_code == 404, what
        # confirm mode is back for real: a publish on channel 1 is confirmed (a tag from 1 on the new channel)
        assert ch1.publish(b"x", routing_key=named) == 1
    finally:
        with broker.channel() as pch:
            for q in (kept, named, gone_q):
                if q:
                    pch.queue_delete(q)
            pch.exchange_delete(gone_x)
        conn.close()


def test_recovery_gives_up_with_the_cause_and_calls_raise_it(client: ModuleType) -> None:
    failed: list[Any] = []
    closed: list[Any] = []
    started: list[Any] = []
    with FaultProxy() as proxy:
        policy = client.RecoveryPolicy(initial_delay=0.05, max_delay=0.2, max_attempts=3)
        conn = client.connect_recovering(proxy.url(), policy=policy, heartbeat=10)
        conn.on_recovery_started(started.append)
        conn.on_recovery_failed(failed.append)
        conn.on_close(closed.append)
        ch = conn.channel()
        proxy.refuse(30)
        proxy.cut()
        t0 = time.monotonic()
        with pytest.raises(client.RecoveryFailedError) as err:
            while time.monotonic() - t0 < 20:
                conn.process_data_events(0.1)
        assert "3 attempts" in str(err.value)
        assert isinstance(err.value.__cause__, client.ConnectFailedError)  # the last attempt's error
        assert [type(e) for e in started] == [client.ConnectionLostError]
        assert failed == [err.value] and closed == [err.value]  # on_close: once, at the end for good
        with pytest.raises(client.RecoveryFailedError):
            ch.queue_declare(queue="amqgen.rec.never")
        with pytest.raises(client.RecoveryFailedError):
            conn.channel()
        conn.close()
        assert closed == [err.value]


def test_calls_made_during_a_recovery_wait_and_go_out_after_it(client: ModuleType) -> None:
    """A publisher thread keeps publishing (confirmed, one at a time) through an RST: every publish returns a
    tag or raises PublishNotConfirmed naming its message; none is lost silently, and each confirmed one is in the
    queue once the recovery is over."""
    q = f"amqgen.rec.{uuid.uuid4().hex[:8]}.calls"
    with FaultProxy() as proxy:
        conn = client.connect_recovering(proxy.url(), heartbeat=10,
                                         policy=client.RecoveryPolicy(initial_delay=0.05, max_delay=0.2))
        try:
            ch = conn.channel()
            ch.confirm_select()
            ch.queue_declare(queue=q)
            confirmed, reported = [], []
            stop = threading.Event()

            def publisher() -> None:
                i = 0
                while not stop.is_set():
                    try:
                        ch.publish(b"%d" % i, routing_key=q)
                        confirmed.append(i)
                    except client.PublishNotConfirmed as e:
                        assert [msg.body for msg in e.unconfirmed] == [b"%d" % i]
                        reported.append(i)
                    i += 1

            t = threading.Thread(target=publisher)
            t.start()
            time.sleep(0.5)
            proxy.cut()
            _recovered(conn, 0)
            time.sleep(0.5)
            stop.set()
            t.join(30)
            assert not t.is_alive()
            assert len(confirmed) > 10 and len(reported) <= 1
            assert sorted(confirmed + reported) == list(range(len(confirmed) + len(reported)))
            # every confirmed publish is in the queue (a reported one may be too: the broker may have had it)
            bodies = set()
            while isinstance(got := ch.basic_get(queue=q, no_ack=True), client.Message):
                bodies.add(int(got.body))
            assert set(confirmed) <= bodies <= set(confirmed) | set(reported)
        finally:
            with broker.channel() as pch:
                pch.queue_delete(q)
            conn.close()


def test_callbacks_of_replayed_consumers_ack_on_the_recovered_connection(client: ModuleType) -> None:
    """Deliveries taken but not acked before a cut come again, redelivered, to the replayed callback consumers of
    two channels; their callbacks run in the dispatch call once the recovered connection is current, so their
    acks go out on it (none dropped as stale) and the queues end empty."""
    queues = [f"amqgen.rec.{uuid.uuid4().hex[:8]}.cb{i}" for i in range(2)]
    for q in queues:
        broker.fill(q, 3)
    with FaultProxy() as proxy:
        conn = client.connect_recovering(proxy.url(), heartbeat=10,
                                         policy=client.RecoveryPolicy(initial_delay=0.05, max_delay=0.2))
        try:
            acked: list[tuple[str, bool]] = []
            recovering = False

            def take(q: str) -> Any:
                def callback(msg: Any) -> None:
                    if recovering:
                        msg.ack()
                        acked.append((q, msg.redelivered))
                return callback

            for q in queues:
                ch = conn.channel()
                ch.basic_qos(prefetch_count=10)
                ch.on_message(q, take(q))
            end = time.monotonic() + 0.5
            while time.monotonic() < end:
                conn.process_data_events(0.1)  # the 6 deliveries run, none acked
            assert [broker.depth(q)[0] for q in queues] == [0, 0] and not acked
            recovering = True
            proxy.cut()
            _recovered(conn, 0)
            end = time.monotonic() + 10
            while len(acked) < 6 and time.monotonic() < end:
                conn.process_data_events(0.1)
            assert sorted(acked) == sorted((q, True) for q in queues for _ in range(3)), acked
            assert conn.stale_settlements == 0
            conn.process_data_events(0.3)
        finally:
            conn.close()
        assert [broker.depth(q)[0] for q in queues] == [0, 0]  # acked, not requeued by the close
        for q in queues:
            broker.delete_queue(q)
