"""The generated sans-I/O protocol engine (the Python target's ``engine.py``, from the behaviour plan).

- RabbitMQ on 127.0.0.1:5672: a client on the engine over a plain socket logs in, opens 3 channels, declares and
  binds an exchange and queues, publishes 1,000 confirmed messages (some over frame_max, some with headers
  tables), consumes them with basic.qos and acks, uses basic.get, commits and rolls back a transaction, survives a
  server-closed channel (a passive declare of a missing queue), keeps a 1-second heartbeat through an idle
  stretch and closes. Nothing lost.
- Sans-I/O, frame by frame: what the caller may not send is refused with LocalProtocolError and nothing is
  written; what the peer does wrong is a ProtocolError event with the spec's reply code, never an exception.
- Property-based: random legal conversations between a client engine and a server engine (each answering the
  other's requests from the plan) give no error; each single mutation of the client's frames (a method out of
  order, a reply to no request, content without its header, a frame on the wrong channel) gives the documented
  ProtocolError on the server, and no other exception escapes.
"""

from __future__ import annotations

import importlib
import os
import random
import time
from types import ModuleType
from typing import Any

import pytest
from engine_wire import EngineClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.targets  # its tier, not its folder's (tests/conftest.py)

HOST = os.environ.get("AMQP_HOST", "127.0.0.1")
PORT = int(os.environ.get("AMQP_PORT", "5672"))


@pytest.fixture(scope="module")
def pkg(amqp091: ModuleType) -> ModuleType:
    importlib.import_module(f"{amqp091.__name__}.engine")
    return amqp091


# -- RabbitMQ ----------------------------------------------------------------------------------------------------
@pytest.mark.broker
def test_a_whole_client_on_the_engine_against_rabbitmq(pkg: ModuleType) -> None:
    c = EngineClient(pkg, HOST, PORT, heartbeat=1, frame_max=4096)
    negotiated = c.login()
    assert negotiated.frame_max == 4096 and negotiated.heartbeat == 1 and negotiated.channel_max > 0
    for ch in (1, 2, 3):
        c.open_channel(ch)
    tag = f"amqgen-engine-{os.getpid()}-{int(time.time())}"
    c.send(1, "exchange.declare", exchange=tag, type_="topic")
    c.reply(1, "exchange.declare-ok")
    c.send(1, "queue.declare", queue=f"{tag}-q")  # deleted at the end: an auto-delete one goes with the consumer
    queue = c.reply(1, "queue.declare-ok").queue
    c.send(1, "queue.bind", queue=queue, exchange=tag, routing_key="msg.#")
    c.reply(1, "queue.bind-ok")

    # 1,000 confirmed messages on channel 2: every 10th body over frame_max, headers tables on some
    c.send(2, "confirm.select")
    c.reply(2, "confirm.select-ok")
    rng = random.Random(19)
    sent: list[tuple[bytes, dict[str, Any] | None]] = []
    for i in range(1000):
        body = rng.randbytes(rng.randint(5000, 20000) if i % 10 == 0 else rng.randint(0, 300))
        headers = {"i": i, "name": f"m{i}", "nested": {"even": i % 2 == 0}} if i % 3 == 0 else None
        assert c.conn.channels[2].next_publish_tag == i + 1  # the engine numbers the publishes as RabbitMQ does
        c.send(2, "basic.publish", c.props(headers=headers, message_id=str(i)), body, exchange=tag,
               routing_key=f"msg.{i}")
        sent.append((body, headers))
        if i % 50 == 49:
            c.pump()
    acked: list[int] = []
    deadline = time.monotonic() + 30
    while len(acked) < 1000 and time.monotonic() < deadline:
        acked += c.wait("PublishAcked", lambda ev: ev.channel == 2).delivery_tags  # `multiple` resolved
    assert sorted(acked) == list(range(1, 1001))  # each once
    assert c.conn.channels[2].unconfirmed == () and c.conn.channels[2].confirming

    # consume them on channel 3 with qos and acks every 100
    c.send(3, "basic.qos", prefetch_count=200)
    c.reply(3, "basic.qos-ok")
    c.send(3, "basic.consume", queue=queue, consumer_tag="engine")
    c.reply(3, "basic.consume-ok")
    got: list[Any] = []
    while len(got) < 1000:
        ev = c.wait("MessageReceived", lambda ev: ev.channel == 3)
        got.append(ev)
        if len(got) % 100 == 0:
            c.send(3, "basic.ack", delivery_tag=ev.method.delivery_tag, multiple=True)
    assert [(ev.body, ev.properties.headers) for ev in got] == sent
    assert [int(ev.properties.message_id) for ev in got] == list(range(1000))
    c.send(3, "basic.cancel", consumer_tag="engine")
    c.reply(3, "basic.cancel-ok")
    # a server-sent basic.cancel (RabbitMQ's consumer_cancel_notify): the consumed queue deleted from elsewhere
    c.send(1, "queue.declare", queue=f"{tag}-gone", auto_delete=False)
    gone = c.reply(1, "queue.declare-ok").queue
    c.send(3, "basic.consume", queue=gone, consumer_tag="doomed")
    c.reply(3, "basic.consume-ok")
    c.send(1, "queue.delete", queue=gone)
    c.reply(1, "queue.delete-ok")
    cancel = c.reply(3, "basic.cancel")
    assert cancel.consumer_tag == "doomed"
    if not cancel.no_wait:  # the server waits for cancel-ok only when it asked for one
        c.send(3, "basic.cancel-ok", consumer_tag="doomed")

    # basic.get with content, then get-empty
    c.send(1, "basic.publish", c.props(content_type="text/plain"), b"one", exchange=tag, routing_key="msg.get")
    c.send(1, "basic.get", queue=queue, no_ack=True)
    assert c.wait("MessageReceived", lambda ev: ev.channel == 1).body == b"one"
    c.send(1, "basic.get", queue=queue, no_ack=True)
    c.reply(1, "basic.get-empty")

    # a transaction: a rolled-back publish is not delivered, a committed one is
    c.send(1, "tx.select")
    c.reply(1, "tx.select-ok")
    c.send(1, "basic.publish", c.props(), b"rolled back", exchange=tag, routing_key="msg.tx")
    c.send(1, "tx.rollback")
    c.reply(1, "tx.rollback-ok")
    c.send(1, "basic.publish", c.props(), b"committed", exchange=tag, routing_key="msg.tx")
    c.send(1, "tx.commit")
    c.reply(1, "tx.commit-ok")
    c.send(1, "basic.get", queue=queue, no_ack=True)
    assert c.wait("MessageReceived", lambda ev: ev.channel == 1).body == b"committed"

    # the server closes channel 2 (a passive declare of a missing queue): a 404 event, the engine's close-ok sent
    c.send(2, "queue.declare", queue=f"{tag}-missing", passive=True)
    closed = c.wait("ChannelClosed", lambda ev: ev.channel == 2)
    assert closed.reply_code == 404 and closed.by_peer and closed.class_id == 50
    with pytest.raises(c.e.LocalProtocolError):
        c.conn.send(2, c.m["basic.qos"]())  # refused: the channel is closed; nothing written
    c.open_channel(2)  # the connection is still usable, and the channel id again
    c.send(2, "queue.declare", queue=queue, passive=True)
    assert c.reply(2, "queue.declare-ok").message_count == 0

    # an idle stretch of 3.5 s with a 1 s heartbeat: the engine's heartbeats keep RabbitMQ from closing
    end = time.monotonic() + 3.5
    while time.monotonic() < end:
        c.pump()
    beats = [ev for ev in c.events if isinstance(ev, c.e.HeartbeatDue)]
    assert len(beats) >= 2 and not [ev for ev in c.events if isinstance(ev, c.e.PeerSilent)]
    c.send(1, "queue.declare", queue=queue, passive=True)
    c.reply(1, "queue.declare-ok")
    c.send(1, "queue.delete", queue=queue)
    c.reply(1, "queue.delete-ok")
    c.send(1, "exchange.delete", exchange=tag)
    c.reply(1, "exchange.delete-ok")
    closed_conn = c.close()
    assert closed_conn.reply_code == 200 and not closed_conn.by_peer
    assert c.errors == []


# -- sans-I/O, frame by frame --------------------------------------------------------------------------------
def server_and_client(pkg: ModuleType) -> tuple[Any, Any]:
    """A client engine and a server engine, negotiated in memory (frame_max 4096, one channel open)."""
    e, m = pkg.engine, pkg.methods.METHODS_BY_NAME
    client, server = e.Connection("client", frame_max=4096, heartbeat=0), e.Connection("server")
    client.initiate()
    server.receive_data(client.data_to_send())
    assert isinstance(server.next_event(), e.ProtocolHeaderReceived)
    server.send(0, m["connection.start"](mechanisms=b"PLAIN", locales=b"en_US"))
    client.receive_data(server.data_to_send())
    assert [type(ev.method).__name__ for ev in drain(client)] == ["ConnectionStart"]
    client.send(0, m["connection.start-ok"](mechanism="PLAIN", response=b"\0u\0p"))
    server.receive_data(client.data_to_send())
    server.send(0, m["connection.tune"](channel_max=10, frame_max=8192, heartbeat=0))
    client.receive_data(server.data_to_send())
    tune = next(ev.method for ev in drain(client) if isinstance(ev, e.MethodReceived))
    client.send(0, e.tune_ok_for(tune, client))
    server.receive_data(client.data_to_send())
    client.send(0, m["connection.open"](virtual_host="/"))
    server.receive_data(client.data_to_send())
    server.send(0, m["connection.open-ok"]())
    client.receive_data(server.data_to_send())
    assert client.negotiated == e.ConnectionNegotiated(frame_max=4096, channel_max=10, heartbeat=0)
    client.send(1, m["channel.open"]())
    server.receive_data(client.data_to_send())
    server.send(1, m["channel.open-ok"]())
    client.receive_data(server.data_to_send())
    drain(client)
    drain(server)
    return client, server


def drain(conn: Any) -> list[Any]:
    out = []
    while (ev := conn.next_event()) is not None:
        out.append(ev)
    return out


def test_the_caller_is_refused_what_the_protocol_does_not_allow(pkg: ModuleType) -> None:
    e, m = pkg.engine, pkg.methods.METHODS_BY_NAME
    fresh = e.Connection("client")
    with pytest.raises(e.LocalProtocolError, match="next step"):
        fresh.send(0, m["connection.start-ok"]())  # before the protocol header
    client, _ = server_and_client(pkg)
    refusals = [
        (1, m["basic.deliver"](), "a client does not send basic.deliver"),
        (5, m["queue.declare"](), "channel 5 is not open"),
        (11, m["channel.open"](), "over channel_max 10"),
        (0, m["queue.declare"](), "travels on a channel above 0"),
        (1, m["connection.tune-ok"](), "travels on channel 0"),
        (1, m["queue.declare-ok"](), "a client does not send"),
        (1, m["channel.flow-ok"](), "answers no request"),
        (0, m["connection.open"](), "the negotiation, which is over"),
    ]
    for channel, method, says in refusals:
        with pytest.raises(e.LocalProtocolError, match=says):
            client.send(channel, method)
    client.send(1, m["queue.declare"](queue="q"))
    with pytest.raises(e.LocalProtocolError, match="still waiting for its reply"):
        client.send(1, m["exchange.declare"](exchange="x"))
    client.data_to_send()
    client.send(1, m["queue.declare"](queue="r", no_wait=True))
    assert client.data_to_send()  # no-wait: no reply to wait for
    with pytest.raises(e.LocalProtocolError, match="carries no content"):
        client.send(1, m["basic.ack"](delivery_tag=1), None, b"body")
    # a refused send changed nothing: the reply to the first declare is still expected and accepted
    client.receive_data(m["queue.declare-ok"](queue="q").encode_frame(1))
    assert [type(ev).__name__ for ev in drain(client)] == ["MethodReceived"]
    # a content method is split to frame_max by the engine
    client.send(1, m["basic.publish"](routing_key="q"), None, bytes(10000))
    data = client.data_to_send()
    frames = pkg.frames.decode_frames(data)[0]
    assert [type(f).__name__ for f in frames] == ["MethodFrame", "HeaderFrame", "BodyFrame", "BodyFrame",
                                                  "BodyFrame"]
    assert max(len(f.encode()) for f in frames) <= 4096


def frame(pkg: ModuleType, kind: str, channel: int, *args: Any) -> bytes:
    f = pkg.frames
    return {"method": lambda: args[0].encode_frame(channel),
            "header": lambda: f.HeaderFrame(channel, 60, args[0], pkg.properties.PROPERTIES[60]()).encode(),
            "body": lambda: f.BodyFrame(channel, args[0]).encode(),
            "heartbeat": lambda: f.HeartbeatFrame(channel).encode()}[kind]()


@pytest.mark.parametrize("name,code", [
    ("reply to no request", 503), ("header without its method", 505), ("body without its header", 505),
    ("method inside content", 505), ("body longer than announced", 505), ("heartbeat on channel 1", 501),
    ("method on a channel not open", 504), ("connection method on channel 1", 503),
    ("method the client does not send", 540), ("malformed frame", 501), ("second synchronous request", 503),
    ("negotiation method after open", 503),
])
def test_each_peer_violation_is_an_event_with_the_specs_reply_code(pkg: ModuleType, name: str, code: int) -> None:
    e, m = pkg.engine, pkg.methods.METHODS_BY_NAME
    client, server = server_and_client(pkg)
    publish = m["basic.publish"](routing_key="q")
    data = {
        "reply to no request": frame(pkg, "method", 1, m["queue.declare-ok"](queue="q")),
        "header without its method": frame(pkg, "header", 1, 3),
        "body without its header": frame(pkg, "method", 1, publish) + frame(pkg, "body", 1, b"abc"),
        "method inside content": frame(pkg, "method", 1, publish) + frame(pkg, "header", 1, 3)
        + frame(pkg, "method", 1, m["basic.qos"]()),
        "body longer than announced": frame(pkg, "method", 1, publish) + frame(pkg, "header", 1, 2)
        + frame(pkg, "body", 1, b"abc"),
        "heartbeat on channel 1": frame(pkg, "heartbeat", 1),
        "method on a channel not open": frame(pkg, "method", 7, m["basic.qos"]()),
        "connection method on channel 1": frame(pkg, "method", 1, m["connection.close"]()),
        "method the client does not send": frame(pkg, "method", 1, m["basic.deliver"]()),
        "malformed frame": b"\x01\x00\x01\x00\x00\x00\x04\x00\x3c\x00\x0a\x00",  # no frame-end octet
        "second synchronous request": frame(pkg, "method", 1, m["queue.declare"](queue="a"))
        + frame(pkg, "method", 1, m["queue.declare"](queue="b")),
        "negotiation method after open": frame(pkg, "method", 0, m["connection.open"]()),
    }[name]
    peer = client if name == "reply to no request" else server  # a reply only a server sends: to the client
    peer.receive_data(data)
    errors = [ev for ev in drain(peer) if isinstance(ev, e.ProtocolError)]
    assert len(errors) == 1 and errors[0].reply_code == code, errors
    assert peer.state == "failed"
    peer.receive_data(frame(pkg, "method", 1, m["basic.qos-ok"]()))  # nothing is read after the error
    assert drain(peer) == []
    peer.data_to_send()
    peer.close(errors[0].reply_code, errors[0].reply_text, errors[0].class_id, errors[0].method_id)
    closing = peer.data_to_send()
    assert pkg.frames.decode_frames(closing)[0][0].method.reply_code == code


# -- property-based: random legal conversations, single mutations ---------------------------------------------
#: client requests the random conversations draw from, with the reply the server engine gives
REQUESTS = [("queue.declare", {"queue": "q"}, "queue.declare-ok", {"queue": "q"}),
            ("exchange.declare", {"exchange": "x", "type_": "direct"}, "exchange.declare-ok", {}),
            ("queue.bind", {"queue": "q", "exchange": "x"}, "queue.bind-ok", {}),
            ("basic.qos", {"prefetch_count": 5}, "basic.qos-ok", {}),
            ("tx.select", {}, "tx.select-ok", {}),
            ("basic.get", {"queue": "q"}, "basic.get-empty", {}),
            ("queue.purge", {"queue": "q"}, "queue.purge-ok", {})]


def conversation(pkg: ModuleType, rng: random.Random, steps: int) -> tuple[list[bytes], Any]:
    """Random legal traffic from client to server on channels 1-3 (the server answering each request): the
    client's writes, one per frame-group, and the server engine that read them."""
    e, m = pkg.engine, pkg.methods.METHODS_BY_NAME
    client, server = server_and_client(pkg)
    for ch in (2, 3):
        client.send(ch, m["channel.open"]())
        server.receive_data(client.data_to_send())
        server.send(ch, m["channel.open-ok"]())
        client.receive_data(server.data_to_send())
    writes: list[bytes] = []
    for _ in range(steps):
        ch = rng.choice((1, 2, 3))
        if rng.random() < 0.4:
            body = bytes(rng.randrange(256) for _ in range(rng.choice((0, 10, 5000))))
            client.send(ch, m["basic.publish"](routing_key="q"), None, body)
            data = client.data_to_send()
            writes.append(data)
            server.receive_data(data)
        else:
            req, fields, rep, rfields = rng.choice(REQUESTS)
            client.send(ch, m[req](**fields))
            data = client.data_to_send()
            writes.append(data)
            server.receive_data(data)
            server.send(ch, m[rep](**rfields))
            client.receive_data(server.data_to_send())
    assert not [ev for ev in drain(server) + drain(client) if isinstance(ev, e.ProtocolError)]
    return writes, server


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 25))
def test_random_legal_conversations_give_no_error(pkg: ModuleType, seed: int, steps: int) -> None:
    conversation(pkg, random.Random(seed), steps)


def replay(pkg: ModuleType, frames: list[Any]) -> list[Any]:
    """The client's frames into a fresh server engine that answers each request as the conversation did; the
    ProtocolError events it gives."""
    e, m = pkg.engine, pkg.methods.METHODS_BY_NAME
    reply_of = {m[req]: (m[rep], rfields) for req, _, rep, rfields in REQUESTS}
    _, server = server_and_client(pkg)
    for ch in (2, 3):
        server.receive_data(m["channel.open"]().encode_frame(ch))
        server.send(ch, m["channel.open-ok"]())
    drain(server)
    for f in frames:
        server.receive_data(pkg.frames.encode_frame(f))  # never raises, whatever the frames are
        if server.state == "failed":
            break
        if type(f) is pkg.frames.MethodFrame and type(f.method) in reply_of:
            rep, rfields = reply_of[type(f.method)]
            try:
                server.send(f.channel, rep(**rfields))
            except e.LocalProtocolError:
                pass  # the mutation put the request where no reply is due
    return [ev for ev in drain(server) if isinstance(ev, e.ProtocolError)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(2, 15), mutation=st.sampled_from(
    ["none", "drop", "duplicate", "swap", "channel", "reply"]))
def test_each_single_mutation_is_a_protocol_error_and_nothing_escapes(pkg: ModuleType, seed: int, steps: int,
                                                                       mutation: str) -> None:
    e, m = pkg.engine, pkg.methods.METHODS_BY_NAME
    rng = random.Random(seed)
    writes, _ = conversation(pkg, rng, steps)
    frames = [f for w in writes for f in pkg.frames.decode_frames(w)[0]]
    i = rng.randrange(len(frames))
    if mutation == "drop":
        frames.pop(i)
    elif mutation == "duplicate":
        frames.insert(i, frames[i])
    elif mutation == "swap" and len(frames) > 1:
        j = i + 1 if i < len(frames) - 1 else i - 1
        frames[i], frames[j] = frames[j], frames[i]
    elif mutation == "channel":
        frames[i] = frames[i]._replace(channel=9)  # a channel never opened
    elif mutation == "reply":
        frames.insert(i, pkg.frames.MethodFrame(1, m["queue.declare-ok"](queue="q")))  # only a server sends it
    errors = replay(pkg, frames)
    codes = set(e.REPLY_CODES.values())
    assert len(errors) <= 1 and all(err.reply_code in codes for err in errors)
    if mutation == "none":  # the control: the same frames, unmutated, are legal
        assert errors == []
    if mutation == "channel":
        assert errors and errors[0].reply_code in (504, 505), errors  # not open; or content where none is due
    if mutation == "reply":
        assert errors and errors[0].reply_code == 540, errors  # a method the client's chassis does not send


@pytest.mark.broker
def test_the_broker_closing_the_connection_is_an_event_and_the_engine_answers(pkg: ModuleType) -> None:
    """`rabbitmqctl close_connection` makes RabbitMQ send connection.close (320): ConnectionClosed(by_peer) and
    the engine's close-ok in data_to_send()."""
    import shutil
    import subprocess

    c = EngineClient(pkg, HOST, PORT, heartbeat=0)
    c.login()
    local = c.sock.getsockname()
    name = f"{local[0]}:{local[1]} -> {HOST}:{PORT}"
    ctl = shutil.which("rabbitmqctl")
    assert ctl is not None, "rabbitmqctl is not installed (RabbitMQ's own CLI)"
    deadline = time.monotonic() + 15
    pid = None
    while pid is None:  # the broker lists a connection a moment after it opened
        listed = subprocess.run([ctl, "-q", "list_connections", "pid", "name"], capture_output=True, text=True,
                                timeout=60, check=False)
        pid = next((ln.split("\t")[0] for ln in listed.stdout.splitlines() if ln.endswith(name)), None)
        assert pid is not None or time.monotonic() < deadline, listed.stdout + listed.stderr
        time.sleep(0.2)
    proc = subprocess.run([ctl, "close_connection", pid, "amqgen engine test"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    closed = c.wait("ConnectionClosed")
    assert closed.by_peer and closed.reply_code == 320 and "amqgen engine test" in closed.reply_text
    assert c.conn.state == "closed"
    c.sock.close()


def test_a_caller_set_policy_agrees_the_tune(pkg: ModuleType) -> None:
    e, m = pkg.engine, pkg.methods.METHODS_BY_NAME
    seen = []

    def policy(name: str, proposed: int, wanted: int) -> int:
        seen.append((name, proposed, wanted))
        return {"channel_max": 7, "frame_max": proposed, "heartbeat": 0}[name]

    conn = e.Connection("client", channel_max=100, frame_max=65536, heartbeat=30, agree=policy)
    tune = m["connection.tune"](channel_max=2047, frame_max=131072, heartbeat=60)
    ok = e.tune_ok_for(tune, conn)
    assert (ok.channel_max, ok.frame_max, ok.heartbeat) == (7, 131072, 0)
    assert seen == [("channel_max", 2047, 100), ("frame_max", 131072, 65536), ("heartbeat", 60, 30)]
    default = e.tune_ok_for(tune, e.Connection("client", channel_max=0, frame_max=65536, heartbeat=30))
    assert (default.channel_max, default.frame_max, default.heartbeat) == (2047, 65536, 30)  # 0: no limit


def test_closes_tune_limits_and_input_after_our_close(pkg: ModuleType) -> None:
    """Found by the server-role test (test_python_engine_server.py): a channel.close may come while the peer's
    request waits; tune-ok over the server's tune is refused on both sides; after our close, input that no longer
    reads is discarded instead of failing again; a close we started reports what we sent."""
    e, m = pkg.engine, pkg.methods.METHODS_BY_NAME
    client, server = server_and_client(pkg)
    client.send(1, m["queue.declare"](queue="q"))
    server.receive_data(client.data_to_send())
    client.send(1, m["channel.close"](reply_code=200, reply_text="bye"))
    server.receive_data(client.data_to_send())
    evs = drain(server)
    assert [type(ev).__name__ for ev in evs] == ["MethodReceived", "ChannelClosed"] and evs[1].by_peer
    client.receive_data(server.data_to_send())
    assert drain(client) == [e.ChannelClosed(1, 200, "bye", 0, 0, False)]

    fresh_client, fresh_server = e.Connection("client"), e.Connection("server")
    fresh_client.initiate()
    fresh_server.receive_data(fresh_client.data_to_send())
    fresh_server.send(0, m["connection.start"](mechanisms=b"PLAIN"))
    fresh_client.receive_data(fresh_server.data_to_send())
    fresh_client.send(0, m["connection.start-ok"](mechanism="PLAIN", response=b"\0u\0p"))
    fresh_server.receive_data(fresh_client.data_to_send())
    fresh_server.send(0, m["connection.tune"](channel_max=10, frame_max=8192))
    fresh_client.receive_data(fresh_server.data_to_send())
    with pytest.raises(e.LocalProtocolError, match="frame_max 100000 is over the tune's 8192"):
        fresh_client.send(0, m["connection.tune-ok"](channel_max=10, frame_max=100000))
    with pytest.raises(e.LocalProtocolError, match="under frame-min-size"):
        fresh_client.send(0, m["connection.tune-ok"](channel_max=10, frame_max=100))
    fresh_server.receive_data(m["connection.tune-ok"](channel_max=11, frame_max=8192).encode_frame(0))
    errors = [ev for ev in drain(fresh_server) if isinstance(ev, e.ProtocolError)]
    assert [(ev.kind, ev.reply_code) for ev in errors] == [("bad-field", 502)]

    client, server = server_and_client(pkg)
    server.receive_data(b"\x08\x00\x01\x00\x00\x00\x00\xce")  # a heartbeat on channel 1
    (err,) = [ev for ev in drain(server) if isinstance(ev, e.ProtocolError)]
    assert err.reply_code == 501
    server.close(err.reply_code, err.reply_text)
    client.receive_data(server.data_to_send())
    server.receive_data(client.data_to_send())  # the client's close-ok, into a stream that no longer reads
    server.receive_data(b"more octets")
    assert drain(server) == [] and server.state == "closing"
    assert [type(ev).__name__ for ev in drain(client)] == ["ConnectionClosed"]


@pytest.mark.broker
def test_the_engine_bench_checks_equal_work_and_reports(tmp_path: Any) -> None:
    """bench/bench_engine.py --quick: its equal-work checks pass and it reports both tables (no timing asserted)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    proc = subprocess.run([sys.executable, str(root / "bench" / "bench_engine.py"), "--quick"], capture_output=True,
                          text=True, timeout=300, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "| engine + socket |" in proc.stdout and "| pika BlockingConnection |" in proc.stdout
    assert "engine CPU per message / pika's:" in proc.stdout
