"""The engine's close paths, output order, limits and confirms (issue 32), client engine against server engine in
memory; each numbered test reproduces one defect of the issue and fails on the engine of commit 22bc3d5.

The calls go through ``out()``, which writes what a caller of either API writes: the bytes a call returned (the
old engine's second output) and then ``data_to_send()``; on the one-output-path engine calls return None.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def pkg(amqp091: ModuleType) -> ModuleType:
    importlib.import_module(f"{amqp091.__name__}.engine")
    return amqp091


def out(conn: Any, returned: Any = None) -> bytes:
    """What a caller writes after a call: the call's own bytes (old API), then the engine's queue."""
    return (returned or b"") + conn.data_to_send()


def drain(conn: Any) -> list[Any]:
    evs = []
    while (ev := conn.next_event()) is not None:
        evs.append(ev)
    return evs


def pair(pkg: ModuleType, **client_opts: Any) -> tuple[Any, Any]:
    """A client and a server engine, negotiated (frame_max 4096) with channel 1 open."""
    e, m = pkg.engine, pkg.methods.METHODS_BY_NAME
    client = e.Connection("client", **{"frame_max": 4096, "heartbeat": 0, **client_opts})
    server = e.Connection("server")
    server.receive_data(out(client, client.initiate()))
    steps = [(server, 0, m["connection.start"](mechanisms=b"PLAIN", locales=b"en_US")),
             (client, 0, m["connection.start-ok"](mechanism="PLAIN", response=b"\0u\0p")),
             (server, 0, m["connection.tune"](channel_max=10, frame_max=8192, heartbeat=60))]
    for who, ch, method in steps:
        other = client if who is server else server
        other.receive_data(out(who, who.send(ch, method)))
    tune = next(ev.method for ev in drain(client) if isinstance(ev, e.MethodReceived)
                and type(ev.method).__name__ == "ConnectionTune")
    server.receive_data(out(client, client.send(0, e.tune_ok_for(tune, client))))
    server.receive_data(out(client, client.send(0, m["connection.open"](virtual_host="/"))))
    client.receive_data(out(server, server.send(0, m["connection.open-ok"]())))
    server.receive_data(out(client, client.send(1, m["channel.open"]())))
    client.receive_data(out(server, server.send(1, m["channel.open-ok"]())))
    drain(client)
    drain(server)
    return client, server


def names(events: list[Any]) -> list[str]:
    return [type(ev).__name__ for ev in events]


def deliver(pkg: ModuleType, tag: int, body: bytes) -> bytes:
    """A basic.deliver with its header and body on channel 1, built with the codec (not the engine)."""
    m = pkg.methods.METHODS_BY_NAME
    method = m["basic.deliver"](consumer_tag="c", delivery_tag=tag, exchange="", routing_key="q")
    return pkg.frames.encode_message(1, method, pkg.properties.PROPERTIES[60](), body, 4096)


# -- the defects ---------------------------------------------------------------------------------------------
def test_1_close_while_deliveries_are_in_flight(pkg: ModuleType) -> None:
    """After our connection.close, content frames are discarded with their method; the close-ok closes."""
    client, server = pair(pkg)
    closing = out(client, client.close())
    in_flight = deliver(pkg, 1, b"x" * 100) + deliver(pkg, 2, b"")
    client.receive_data(in_flight)  # sent by the broker before it read our close
    server.receive_data(closing)
    assert names(drain(server)) == ["ConnectionClosed"]
    client.receive_data(out(server))
    evs = drain(client)
    assert names(evs) == ["ConnectionClosed"] and evs[0].by_peer is False
    assert client.state == "closed"


def test_2_close_ok_leaves_before_a_reopen(pkg: ModuleType) -> None:
    """The server closes channel 1 (404); the caller reopens it at once: the close-ok must leave first."""
    m = pkg.methods.METHODS_BY_NAME
    client, server = pair(pkg)
    client.receive_data(out(server, server.send(1, m["channel.close"](reply_code=404, reply_text="NOT_FOUND",
                                                                      class_id=50, method_id=10))))
    assert names(drain(client)) == ["ChannelClosed"]
    wire = out(client, client.send(1, m["channel.open"]()))
    frames = pkg.frames.decode_frames(wire)[0]
    assert [f.method.NAME for f in frames] == ["channel.close-ok", "channel.open"]
    server.receive_data(wire)
    assert names(drain(server)) == ["ChannelClosed", "MethodReceived"]  # no ProtocolError: the order is right


def test_3_frames_over_frame_max_are_refused_on_send(pkg: ModuleType) -> None:
    e, m = pkg.engine, pkg.methods.METHODS_BY_NAME
    client, _ = pair(pkg)
    big = {f"h{i}": "v" * 90 for i in range(100)}  # a table of about 10 KB
    props = pkg.properties.PROPERTIES[60](headers=big)
    with pytest.raises(e.LocalProtocolError, match="content header is .* over frame_max 4096"):
        client.send(1, m["basic.publish"](routing_key="q"), props, b"body")
    assert client.data_to_send() == b""  # nothing written
    with pytest.raises(e.LocalProtocolError, match="method frame is .* over frame_max 4096"):
        client.send(1, m["queue.declare"](queue="q", arguments=big))
    assert client.data_to_send() == b""
    client.send(1, m["queue.declare"](queue="q"))  # the channel is still usable: nothing was recorded
    assert client.data_to_send()


def test_4_end_of_stream_is_an_event(pkg: ModuleType) -> None:
    e = pkg.engine
    client, _ = pair(pkg)
    client.receive_data(b"")
    evs = drain(client)
    assert names(evs) == ["ConnectionLost"] and evs[0].closed is False
    assert client.state == "failed"
    client.receive_data(b"")
    client.receive_data(deliver(pkg, 1, b"late"))
    assert drain(client) == []  # nothing after the end
    fresh = e.Connection("client")
    out(fresh, fresh.initiate())
    fresh.receive_data(b"")  # refused before the connection opened: still an event, not a silent stall
    assert names(drain(fresh)) == ["ConnectionLost"] and fresh.state == "failed"


def test_5_nothing_is_read_after_the_peers_close(pkg: ModuleType) -> None:
    m = pkg.methods.METHODS_BY_NAME
    client, server = pair(pkg)
    wire = out(server, server.close(320, "CONNECTION_FORCED"))
    client.receive_data(wire + deliver(pkg, 1, b"after"))
    evs = drain(client)
    assert names(evs) == ["ConnectionClosed"] and evs[0].reply_code == 320
    assert client.state == "closed"
    client.receive_data(m["basic.qos-ok"]().encode_frame(1))
    assert drain(client) == [] and client.state == "closed"


def test_6_heartbeat_zero_is_honoured(pkg: ModuleType) -> None:
    e, m = pkg.engine, pkg.methods.METHODS_BY_NAME
    tune = m["connection.tune"](channel_max=0, frame_max=131072, heartbeat=60)
    assert e.tune_ok_for(tune, e.Connection("client", heartbeat=0)).heartbeat == 0
    assert e.tune_ok_for(tune, e.Connection("client", heartbeat=30)).heartbeat == 30
    assert e.tune_ok_for(tune, e.Connection("client", heartbeat=90)).heartbeat == 60
    no_beat = m["connection.tune"](channel_max=0, frame_max=131072, heartbeat=0)
    assert e.tune_ok_for(no_beat, e.Connection("client", heartbeat=30)).heartbeat == 30
    client, _ = pair(pkg)  # pair()'s client wants 0 of a server proposing 60
    assert client.negotiated.heartbeat == 0


def test_7_messages_say_what_happened(pkg: ModuleType) -> None:
    e, m = pkg.engine, pkg.methods.METHODS_BY_NAME
    client, server = pair(pkg)
    client.send(1, m["channel.close"](reply_code=200, reply_text="bye", class_id=0, method_id=0))
    with pytest.raises(e.LocalProtocolError, match="channel 1 is still closing"):
        client.send(1, m["channel.open"]())
    client.receive_data(out(server, server.close(320, "CONNECTION_FORCED")))
    with pytest.raises(e.LocalProtocolError, match="already closed"):
        client.close()
    # one spelling of no-wait: the plan knows each method's field, however the spec spells it
    assert e.no_wait_field(m["confirm.select"]) == "nowait"
    assert e.no_wait_field(m["basic.consume"]) == "no_wait"
    assert e.no_wait_field(m["basic.publish"]) is None
    assert e.expects_reply(m["confirm.select"]()) and not e.expects_reply(m["confirm.select"](nowait=True))


# -- publisher confirms ----------------------------------------------------------------------------------------
def test_confirms_returns_and_unconfirmed(pkg: ModuleType) -> None:
    m = pkg.methods.METHODS_BY_NAME
    client, server = pair(pkg)
    server.receive_data(out(client, client.send(1, m["confirm.select"]())))
    client.receive_data(out(server, server.send(1, m["confirm.select-ok"]())))
    drain(client)
    ch = client.channels[1]
    assert ch.confirming and ch.next_publish_tag == 1
    for i in range(6):
        client.send(1, m["basic.publish"](exchange="x", routing_key="a" if i % 2 else "b", mandatory=True),
                    None, b"%d" % i)
    server.receive_data(client.data_to_send())
    assert ch.unconfirmed == (1, 2, 3, 4, 5, 6) and ch.next_publish_tag == 7
    ret = m["basic.return"](reply_code=312, reply_text="NO_ROUTE", exchange="x", routing_key="a")
    codec = pkg.frames.encode_message
    wire = (codec(1, ret, pkg.properties.PROPERTIES[60](), b"1", 4096)  # publish 2 (the first "a")
            + codec(1, ret, pkg.properties.PROPERTIES[60](), b"3", 4096)  # publish 4
            + m["basic.ack"](delivery_tag=3, multiple=True).encode_frame(1)
            + m["basic.nack"](delivery_tag=5, multiple=False, requeue=False).encode_frame(1)
            + m["basic.ack"](delivery_tag=4, multiple=False).encode_frame(1))
    client.receive_data(wire)
    evs = drain(client)
    assert [(type(ev).__name__, getattr(ev, "delivery_tag", None) or getattr(ev, "delivery_tags", None))
            for ev in evs] == [("MessageReturned", 2), ("MessageReturned", 4), ("PublishAcked", (1, 2, 3)),
                               ("PublishNacked", (5,)), ("PublishAcked", (4,))]
    assert evs[0].body == b"1" and ch.unconfirmed == (6,)
    client.receive_data(m["channel.close"](reply_code=406, reply_text="PRECONDITION_FAILED", class_id=60,
                                           method_id=40).encode_frame(1))
    evs = drain(client)
    assert names(evs) == ["PublishesUnconfirmed", "ChannelClosed"] and evs[0].delivery_tags == (6,)


def test_an_ack_of_no_publish_is_the_peers_error(pkg: ModuleType) -> None:
    e, m = pkg.engine, pkg.methods.METHODS_BY_NAME
    client, server = pair(pkg)
    server.receive_data(out(client, client.send(1, m["confirm.select"]())))
    client.receive_data(out(server, server.send(1, m["confirm.select-ok"]())))
    drain(client)
    client.receive_data(m["basic.ack"](delivery_tag=7, multiple=False).encode_frame(1))
    (err,) = drain(client)
    assert isinstance(err, e.ProtocolError) and "delivery tag 7" in err.reply_text


def test_unconfirmed_reported_when_the_connection_ends(pkg: ModuleType) -> None:
    m = pkg.methods.METHODS_BY_NAME
    client, server = pair(pkg)
    server.receive_data(out(client, client.send(1, m["confirm.select"]())))
    client.receive_data(out(server, server.send(1, m["confirm.select-ok"]())))
    client.send(1, m["basic.publish"](routing_key="q"), None, b"a")
    client.data_to_send()
    drain(client)
    client.receive_data(b"")
    evs = drain(client)
    assert names(evs) == ["PublishesUnconfirmed", "ConnectionLost"] and evs[0].delivery_tags == (1,)


# -- hypothesis: close, EOF and errors interleaved on both roles -------------------------------------------------
ACTIONS = ("c_publish", "c_declare", "c_close", "c_chclose", "c_reopen", "s_reply", "s_chclose", "s_close",
           "s_deliver", "c_eof", "s_eof", "c_junk", "s_junk", "flush_c", "flush_s", "c_abort_s", "s_abort_c")
ENDS = ("ConnectionClosed", "ConnectionLost", "ProtocolError")


def _act(pkg: ModuleType, client: Any, server: Any, action: str, part: int) -> None:
    e, m = pkg.engine, pkg.methods.METHODS_BY_NAME
    calls: dict[str, Any] = {
        "c_publish": lambda: client.send(1, m["basic.publish"](routing_key="q"), None, b"p" * 5000),
        "c_declare": lambda: client.send(1, m["queue.declare"](queue="q")),
        "c_close": lambda: client.close(),
        "c_chclose": lambda: client.send(1, m["channel.close"](reply_code=200, reply_text="", class_id=0,
                                                                method_id=0)),
        "c_reopen": lambda: client.send(1, m["channel.open"]()),
        "s_reply": lambda: server.send(1, m["queue.declare-ok"](queue="q")),
        "s_chclose": lambda: server.send(1, m["channel.close"](reply_code=404, reply_text="", class_id=50,
                                                                method_id=10)),
        "s_close": lambda: server.close(320, "forced"),
        "s_deliver": lambda: server.send(1, m["basic.deliver"](consumer_tag="c", delivery_tag=1), None, b"d" * 9000),
    }
    if action in calls:
        try:
            calls[action]()
        except e.LocalProtocolError:
            pass  # the documented refusal: nothing queued
    elif action == "flush_c":  # part of what the client queued reaches the server
        data = client.data_to_send()
        server.receive_data(data[: part % (len(data) + 1)] if part % 3 == 0 else data)
    elif action == "flush_s":
        data = server.data_to_send()
        client.receive_data(data[: part % (len(data) + 1)] if part % 3 == 0 else data)
    elif action == "c_eof":
        client.receive_data(b"")
    elif action == "s_eof":
        server.receive_data(b"")
    elif action == "c_junk":
        client.receive_data(bytes([1, 0, 1, 0, 0, 0, 2, 0, 0, 0xCE]))  # a method frame too short to decode
    elif action == "s_junk":
        server.receive_data(bytes([3, 0, 1, 0, 0, 0, 1, 0, 0xCE]))  # a body where none is expected
    elif action == "c_abort_s":  # the client's bytes are lost and the transport ends both ways
        client.data_to_send()
        server.receive_data(b"")
    elif action == "s_abort_c":
        server.data_to_send()
        client.receive_data(b"")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from(ACTIONS), st.integers(0, 10**6)), max_size=25))
def test_close_eof_and_error_interleavings(pkg: ModuleType, steps: list[tuple[str, int]]) -> None:
    """Any interleaving: no exception but LocalProtocolError, no event after the connection's end (a
    ConnectionLost is the last; after ConnectionClosed or ProtocolError only a ConnectionLost), and the state
    consistent with the events."""
    client, server = pair(pkg)
    history: dict[int, list[str]] = {id(client): [], id(server): []}
    for action, part in steps:
        _act(pkg, client, server, action, part)
        for conn in (client, server):
            seen = history[id(conn)]
            seen += names(drain(conn))
            ends = [i for i, n in enumerate(seen) if n in ENDS]
            if ends:
                after = seen[ends[0] + 1:]
                if seen[ends[0]] == "ProtocolError":  # then only our close's answer and the end of stream
                    assert set(after) <= {"ConnectionClosed", "ConnectionLost"}, seen
                    assert conn.state in ("failed", "closing", "closed"), (conn.state, seen)
                else:
                    assert set(after) <= {"ConnectionLost"}, seen
            if "ConnectionLost" in seen:
                assert seen[-1] == "ConnectionLost" and seen.count("ConnectionLost") == 1, seen
                assert conn.state in ("closed", "failed")
                assert conn.state == ("closed" if "ConnectionClosed" in seen else "failed"), (conn.state, seen)
            elif "ConnectionClosed" in seen:
                assert conn.state == "closed", (conn.state, seen)
            for ch in conn.channels.values():
                assert ch.state in ("opening", "open", "closing", "closed")
                assert all(t < ch.next_publish_tag for t in ch.unconfirmed)


# -- the behaviour plan's lifecycle roles -------------------------------------------------------------------------
def test_the_plan_carries_the_lifecycle_roles() -> None:
    """The facts the C and Java engines will read: checked against the spec text (0-9-1's connection.tune
    documents "zero means no limit" for channel-max and frame-max, "does not want a heartbeat" for heartbeat)."""
    import re
    from pathlib import Path

    from pytarget import SPEC_091_EXT

    from amqgen.amqp0.behaviour import behaviour_plan
    from amqgen.amqp0.lower import load_spec
    from amqgen.specs import resolve

    life = behaviour_plan(load_spec(SPEC_091_EXT)).lifecycle
    text = Path(SPEC_091_EXT).read_text()
    tune = text[text.index('<method name="tune"'):text.index('<method name="tune-ok"')]
    for limit in life.limits:  # what zero means, from the field's own documentation in the spec file
        doc = tune[tune.index(f'<field name="{limit.tune_field}"'):]
        doc = doc[:doc.index("</field>")]
        wants_none = re.search(r"Zero\s+means\s+the\s+server\s+does\s+not\s+want", doc)
        no_limit = re.search(r"Zero\s+(indicates\s+no\s+specified\s+limit|means\s+that\s+the\s+server\s+does\s+"
                             r"not\s+impose)", doc)
        assert bool(wants_none) != bool(no_limit), doc
        assert limit.zero == ("none" if wants_none else "no-limit"), (limit, doc)
    assert [lim.name for lim in life.limits] == ["channel-max", "frame-max", "heartbeat"]
    roles = life.roles()
    assert roles["tune"] == "connection.tune" and roles["flow_ok"] == "channel.flow-ok"
    assert roles["confirm_select"] == "confirm.select" and roles["returned"] == "basic.return"
    assert life.flow_field == "active" and life.publish_fields == ("exchange", "routing-key")
    old = behaviour_plan(load_spec(str(resolve("0-8")))).lifecycle  # 0-8 has no confirm class
    assert old.confirm_select is None and old.ack is None and old.roles()["tune"] == "connection.tune"


def test_the_plan_carries_the_client_roles(amqp091: ModuleType) -> None:
    """The methods the generated clients are written around come from the plan (the hook names none): each role's
    method is, by its class and method ids, the one pika's own 0-9-1 spec module names so (an independent
    table), and the rendered client_core uses those classes."""
    import pika.spec
    from pytarget import SPEC_091_EXT

    from amqgen.amqp0.behaviour import behaviour_plan
    from amqgen.amqp0.lower import load_spec

    roles = behaviour_plan(load_spec(SPEC_091_EXT)).client.roles()
    assert None not in roles.values(), roles
    methods = importlib.import_module(f"{amqp091.__name__}.methods")
    by_name = methods.METHODS_BY_NAME
    pika_names = {cls.INDEX: cls.NAME for cls in pika.spec.methods.values()}
    for role, name in roles.items():
        cls = by_name[name]
        cls_name, meth = name.split(".")
        expected = f"{cls_name.capitalize()}.{''.join(w.capitalize() for w in meth.split('-'))}"
        assert pika_names[(cls.CLASS_ID << 16) | cls.METHOD_ID] == expected, role
    core = importlib.import_module(f"{amqp091.__name__}.client_core")
    assert core._DELIVER is by_name[roles["deliver"]] and core._START_OK is by_name[roles["start_ok"]]
    assert core._BASIC_ACK is by_name[roles["delivery_ack"]]
