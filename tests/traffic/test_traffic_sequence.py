"""Sequence violations: the generated engine's Observer, and the traffic pipeline's ``sequence`` rows from it.

- The Observer on the rendered package: a clean conversation gives nothing; each kind of fault gives the one
  violation expected, with the spec's reply code (503 command-invalid, 504 channel-error, 505 unexpected-frame),
  its rule and the caller's tag, and the observer goes on; a capture beginning mid-connection gives nothing; a
  reply captured before its request (timestamps in order) gives nothing, the same frames really in that order
  give the violation; random and mutated frame sequences never raise and give the same answer twice.
- The pipeline: the committed and recorded clean captures give no ``sequence`` row; crafted captures each give
  exactly the rows written out here (kind, reply code, method, channel, direction, packet, rule).

Expected values are written by hand from the spec (the reply-code constants, the grammar's productions).
"""

from __future__ import annotations

import random
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from traffic_fixtures import DATA, live_capture, pipeline, rows_as_dicts, violations_capture
from traffic_tools import packets, read_pcap, synth_capture, write_pcap

from amqgen.traffic.records import VIOLATIONS

C, S = 0, 1  # the Observer's directions: client to server, server to client


# -- the engine's Observer --------------------------------------------------------------------------------------
def opening(pkg: ModuleType, channel_max: int = 10) -> list[tuple[int, Any]]:
    """The negotiation and channel 1 opened, as (direction, frame)."""
    m, f = pkg.methods, pkg.frames
    return [
        (S, f.MethodFrame(0, m.ConnectionStart(version_major=0, version_minor=9, mechanisms=b"PLAIN",
                                               locales=b"en_US"))),
        (C, f.MethodFrame(0, m.ConnectionStartOk(mechanism="PLAIN", response=b"\0u\0p", locale="en_US"))),
        (S, f.MethodFrame(0, m.ConnectionTune(channel_max=channel_max, frame_max=4096, heartbeat=0))),
        (C, f.MethodFrame(0, m.ConnectionTuneOk(channel_max=channel_max, frame_max=4096, heartbeat=0))),
        (C, f.MethodFrame(0, m.ConnectionOpen(virtual_host="/"))),
        (S, f.MethodFrame(0, m.ConnectionOpenOk())),
        (C, f.MethodFrame(1, m.ChannelOpen())),
        (S, f.MethodFrame(1, m.ChannelOpenOk())),
    ]


def work(pkg: ModuleType) -> list[tuple[int, Any]]:
    """Legal use of channel 1 and a clean close."""
    m, f = pkg.methods, pkg.frames
    props = pkg.properties.BasicProperties(content_type="text/plain")
    return [
        (C, f.MethodFrame(1, m.QueueDeclare(queue="q"))),
        (S, f.MethodFrame(1, m.QueueDeclareOk(queue="q"))),
        (C, f.MethodFrame(1, m.BasicPublish(routing_key="q"))),
        (C, f.HeaderFrame(1, 60, 2, props)),
        (C, f.BodyFrame(1, b"hi")),
        (C, f.MethodFrame(1, m.BasicConsume(queue="q", consumer_tag="t"))),
        (S, f.MethodFrame(1, m.BasicConsumeOk(consumer_tag="t"))),
        (S, f.MethodFrame(1, m.BasicDeliver(consumer_tag="t", delivery_tag=1, routing_key="q"))),
        (S, f.HeaderFrame(1, 60, 2, props)),
        (S, f.BodyFrame(1, b"hi")),
        (C, f.MethodFrame(1, m.BasicAck(delivery_tag=1))),
        (S, f.HeartbeatFrame(0)),
        (C, f.MethodFrame(1, m.ChannelClose(reply_code=200))),
        (S, f.MethodFrame(1, m.ChannelCloseOk())),
        (C, f.MethodFrame(0, m.ConnectionClose(reply_code=200))),
        (S, f.MethodFrame(0, m.ConnectionCloseOk())),
    ]


def observe(pkg: ModuleType, frames: list[tuple[int, Any]], *, header: bool = True, contents: bool = True,
            at: list[int] | None = None) -> list[tuple[str, str, int, str | None, int, str | None, Any]]:
    """(sender, kind, reply code, method, channel, rule, tag) of each violation; the tag is the frame's index."""
    obs = pkg.engine.Observer(contents=contents)
    found = list(obs.protocol_header(C, pkg.constants.PROTOCOL_HEADER, "header")) if header else []
    for i, (d, fr) in enumerate(frames):
        found += obs.frame(d, fr, i, None if at is None else at[i])
    found += obs.end()
    return [(o.sender, o.error.kind, o.error.reply_code, o.method, o.error.channel, o.error.rule, o.tag)
            for o in found]


def test_a_clean_conversation_gives_nothing(amqp091: ModuleType) -> None:
    frames = opening(amqp091) + work(amqp091)
    assert observe(amqp091, frames) == []
    assert observe(amqp091, frames, contents=False) == []
    assert observe(amqp091, frames, at=list(range(len(frames)))) == []


def test_the_observer_holds_the_negotiated_limits(amqp091: ModuleType) -> None:
    """``tune`` and ``tune_ok`` (what the traffic checker reads): None until the observer takes each in; a tune-ok
    after the negotiation is reported and left out, so the limits stay."""
    m, f = amqp091.methods, amqp091.frames
    obs = amqp091.engine.Observer(contents=False)
    obs.protocol_header(C, amqp091.constants.PROTOCOL_HEADER)
    frames = opening(amqp091, channel_max=7)
    for d, fr in frames[:2]:
        obs.frame(d, fr)
    assert obs.tune is None and obs.tune_ok is None
    obs.frame(*frames[2])
    assert (obs.tune.channel_max, obs.tune.frame_max, obs.tune.heartbeat) == (7, 4096, 0) and obs.tune_ok is None
    obs.frame(*frames[3])
    assert (obs.tune_ok.channel_max, obs.tune_ok.frame_max, obs.tune_ok.heartbeat) == (7, 4096, 0)
    for d, fr in frames[4:]:
        assert obs.frame(d, fr) == ()
    late = obs.frame(C, f.MethodFrame(0, m.ConnectionTuneOk(channel_max=1, frame_max=8192, heartbeat=5)))
    assert [(o.error.kind, o.method) for o in late] == [("out-of-sequence", "connection.tune-ok")]
    assert (obs.tune_ok.channel_max, obs.tune_ok.frame_max) == (7, 4096)


def test_each_fault_is_one_violation_and_the_observer_goes_on(amqp091: ModuleType) -> None:
    m, f = amqp091.methods, amqp091.frames
    base = opening(amqp091)
    n = len(base)
    cases: list[tuple[list[tuple[int, Any]], list[Any]]] = [
        # a method on a channel never opened (then used: reported once)
        ([(C, f.MethodFrame(3, m.BasicQos(prefetch_count=1))), (S, f.MethodFrame(3, m.BasicQosOk())),
          (C, f.MethodFrame(3, m.BasicQos(prefetch_count=2))), (S, f.MethodFrame(3, m.BasicQosOk()))],
         [("client", "channel-not-open", 504, "basic.qos", 3, "open-channel", n)]),
        # a second synchronous request before the reply to the first
        ([(C, f.MethodFrame(1, m.QueueDeclare(queue="a"))), (C, f.MethodFrame(1, m.QueueDeclare(queue="b"))),
          (S, f.MethodFrame(1, m.QueueDeclareOk(queue="a"))), (S, f.MethodFrame(1, m.QueueDeclareOk(queue="b")))],
         [("client", "out-of-sequence", 503, "queue.declare", 1, "queue", n + 1)]),
        # a reply to no request (held back for the other direction, reported at the end)
        ([(S, f.MethodFrame(1, m.ExchangeDeclareOk()))],
         [("server", "out-of-sequence", 503, "exchange.declare-ok", 1, "exchange", n)]),
        # channel.open on a channel open already: the spec's rule channel.open "state"
        ([(C, f.MethodFrame(1, m.ChannelOpen())), (S, f.MethodFrame(1, m.ChannelOpenOk()))],
         [("client", "channel-not-open", 504, "channel.open", 1, "channel.open.state", n)]),
        # over the negotiated channel_max (10)
        ([(C, f.MethodFrame(11, m.ChannelOpen())), (S, f.MethodFrame(11, m.ChannelOpenOk()))],
         [("client", "channel-not-open", 504, "channel.open", 11, "open-channel", n)]),
        # a method after the connection closed
        ([(C, f.MethodFrame(0, m.ConnectionClose(reply_code=200))), (S, f.MethodFrame(0, m.ConnectionCloseOk())),
          (C, f.MethodFrame(1, m.BasicQos()))],
         [("client", "out-of-sequence", 503, "basic.qos", 1, "close-connection", n + 2)]),
        # content: a method where channel 1's content header is due (the observer following content)
        ([(C, f.MethodFrame(1, m.BasicPublish(routing_key="q"))), (C, f.MethodFrame(1, m.BasicQos())),
          (S, f.MethodFrame(1, m.BasicQosOk()))],
         [("client", "unexpected-frame", 505, "basic.qos", 1, None, n + 1)]),
    ]
    for tail, expected in cases:
        assert observe(amqp091, base + tail) == expected, tail
    # the same faults, each followed by the clean rest of a connection: nothing more is reported
    for tail, expected in cases[:4]:
        assert observe(amqp091, base + tail + work(amqp091)[2:]) == expected, tail


def test_negotiation_out_of_order(amqp091: ModuleType) -> None:
    m, f = amqp091.methods, amqp091.frames
    base = opening(amqp091)
    skipped_tune = base[:2] + base[4:]  # connection.open straight after start-ok
    assert observe(amqp091, skipped_tune) == [
        ("client", "out-of-sequence", 503, "connection.open", 0, "open-connection", 2)]
    # a channel opened before the connection is open, and a negotiation method after it is
    early = base[:2] + [(C, f.MethodFrame(1, m.ChannelOpen()))]
    assert observe(amqp091, early)[0] == ("client", "out-of-sequence", 503, "channel.open", 1, "open-channel", 2)
    late = base + [(S, f.MethodFrame(0, m.ConnectionTune(channel_max=5)))]
    assert observe(amqp091, late) == [
        ("server", "out-of-sequence", 503, "connection.tune", 0, "open-connection", len(base))]
    # a protocol header in the middle, and from the server after the negotiation began
    obs = amqp091.engine.Observer()
    assert obs.protocol_header(C, amqp091.constants.PROTOCOL_HEADER) == ()
    for d, fr in base[:1]:
        assert obs.frame(d, fr) == ()
    got = obs.protocol_header(S, amqp091.constants.PROTOCOL_HEADER, "x")
    assert [(o.sender, o.error.reply_code, o.error.rule, o.tag) for o in got] == [
        ("server", 503, "open-connection", "x")]


def test_a_capture_beginning_mid_connection_gives_nothing(amqp091: ModuleType) -> None:
    m, f = amqp091.methods, amqp091.frames
    rest = work(amqp091)
    # from the reply to a request made before the capture began, on a channel opened before it
    assert observe(amqp091, rest[1:], header=False) == []
    assert observe(amqp091, [(S, f.MethodFrame(2, m.BasicQosOk()))] + rest, header=False) == []
    # beginning inside the negotiation, at the tune
    assert observe(amqp091, opening(amqp091)[2:] + rest, header=False) == []
    # but what it did see is held to: a channel it saw closed is not open
    closed = rest[:-2] + [(C, f.MethodFrame(1, m.BasicQos()))]
    assert observe(amqp091, closed[1:], header=False) == [
        ("client", "channel-not-open", 504, "basic.qos", 1, "open-channel", len(closed) - 2)]


def test_directions_out_of_order_by_the_timestamps(amqp091: ModuleType) -> None:
    m, f = amqp091.methods, amqp091.frames
    base = opening(amqp091)
    n = len(base)
    request, reply = (C, f.MethodFrame(1, m.QueueDeclare(queue="q"))), (S, f.MethodFrame(1, m.QueueDeclareOk()))
    after = [(C, f.MethodFrame(1, m.BasicQos())), (S, f.MethodFrame(1, m.BasicQosOk()))]
    frames = base + [reply, request] + after
    # the reply fed first but captured after the request (its timestamp later): nothing
    assert observe(amqp091, frames, at=[*range(n), n + 1, n, n + 2, n + 3]) == []
    # the same order by the timestamps too: the server replied to nothing, then the client's request waits
    assert observe(amqp091, frames, at=list(range(len(frames)))) == [
        ("server", "out-of-sequence", 503, "queue.declare-ok", 1, "queue", n),
        ("client", "out-of-sequence", 503, "basic.qos", 1, "basic", n + 2)]
    # a channel.open-ok before its channel.open, the deliveries behind it waiting too
    frames = base + [(S, f.MethodFrame(2, m.ChannelOpenOk())), (S, f.MethodFrame(2, m.BasicQosOk())),
                     (C, f.MethodFrame(2, m.ChannelOpen())), (C, f.MethodFrame(2, m.BasicQos()))]
    assert observe(amqp091, frames, at=[*range(n), n + 1, n + 3, n, n + 2]) == []


def test_the_connection_engine_names_the_rule(amqp091: ModuleType) -> None:
    e, m = amqp091.engine, amqp091.methods
    server = e.Connection("server")
    server.receive_data(amqp091.constants.PROTOCOL_HEADER)
    server.receive_data(m.ConnectionOpen().encode_frame(0))  # before start-ok
    errors = [ev for ev in iter(server.next_event, None) if isinstance(ev, e.ProtocolError)]
    assert [(x.kind, x.reply_code, x.rule) for x in errors] == [("out-of-sequence", 503, "open-connection")]


# -- never raises, deterministic ------------------------------------------------------------------------------
def frame_pool(pkg: ModuleType) -> list[Any]:
    """Every method of the spec with default fields, content frames, heartbeats."""
    f = pkg.frames
    pool: list[Any] = [cls() for cls in pkg.methods.METHODS.values()]
    pool += [f.HeaderFrame(1, 60, 3, pkg.properties.BasicProperties()), f.HeaderFrame(1, 60, 0,
             pkg.properties.BasicProperties()), f.BodyFrame(1, b"abc"), f.BodyFrame(1, b"abcdef"), f.HeartbeatFrame(0)]
    return pool


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), length=st.integers(0, 60), header=st.booleans(), contents=st.booleans(),
       clean_start=st.booleans())
def test_random_and_mutated_sequences_never_raise(amqp091: ModuleType, seed: int, length: int, header: bool,
                                                   contents: bool, clean_start: bool) -> None:
    rng = random.Random(seed)
    pool = frame_pool(amqp091)
    f = amqp091.frames
    legal = opening(amqp091) + work(amqp091)
    frames: list[tuple[int, Any]] = list(legal) if clean_start else []
    if clean_start:  # single mutations of a legal connection
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(frames))
            what = rng.choice(("drop", "duplicate", "swap", "channel", "direction"))
            if what == "drop":
                frames.pop(i)
            elif what == "duplicate":
                frames.insert(i, frames[i])
            elif what == "swap" and i + 1 < len(frames):
                frames[i], frames[i + 1] = frames[i + 1], frames[i]
            elif what == "channel":
                frames[i] = (frames[i][0], frames[i][1]._replace(channel=rng.choice((0, 1, 2, 65535))))
            elif what == "direction":
                frames[i] = (1 - frames[i][0], frames[i][1])
    for _ in range(length):  # then random frames, on random channels, in random directions
        item = rng.choice(pool)
        ch = rng.choice((0, 1, 2, 3, 11))
        fr = f.MethodFrame(ch, item) if not hasattr(item, "_replace") else item._replace(channel=ch)
        frames.insert(rng.randint(0, len(frames)), (rng.choice((C, S)), fr))
    at = sorted(rng.randrange(1000) for _ in frames) if rng.random() < 0.5 else None
    if at is not None and frames:
        at[rng.randrange(len(at))] = -1  # one frame out of order by its timestamp
    first = observe(amqp091, frames, header=header, contents=contents, at=at)
    assert observe(amqp091, frames, header=header, contents=contents, at=at) == first
    codes = set(amqp091.engine.REPLY_CODES.values())
    assert all(v[2] in codes and v[0] in ("client", "server") for v in first)
    assert all(isinstance(v[6], int) or v[6] == "header" for v in first)  # each names the frame it is about


# -- the pipeline -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return tmp_path_factory


def violations(tmp: Any, path: Path) -> list[dict[str, Any]]:
    rows = pipeline(tmp).run([path])
    return rows_as_dicts(rows.violations, VIOLATIONS)


def sequence_rows(tmp: Any, path: Path) -> list[tuple[Any, ...]]:
    return [(v["kind"], v["reply_code"], v["reply_name"], v["method"], v["channel"], v["direction"], v["packet"],
             v["rule"]) for v in violations(tmp, path) if v["kind"] == "sequence"]


def test_committed_captures_give_no_sequence_violation(tmp: Any) -> None:
    fixtures = sorted(p for p in DATA.iterdir() if p.suffix in (".pcap", ".pcapng"))
    assert len(fixtures) >= 3
    for path in fixtures:
        assert sequence_rows(tmp, path) == [], path.name


@pytest.mark.broker
def test_recorded_captures_give_no_sequence_violation(tmp: Any) -> None:
    assert violations(tmp, live_capture(tmp)) == []
    path, expected = violations_capture(tmp)  # one conformance violation each, and no sequence one
    got = violations(tmp, path)
    assert len(got) == len(expected) and [v["kind"] for v in got if v["kind"] == "sequence"] == []


def talk_open(gen: Any, channel_max: int = 10) -> list[tuple[str, bytes]]:
    m = gen.methods
    return [
        ("c", gen.constants.PROTOCOL_HEADER),
        ("s", m.ConnectionStart(version_major=0, version_minor=9, server_properties={}, mechanisms=b"PLAIN",
                                locales=b"en_US").encode_frame(0)),
        ("c", m.ConnectionStartOk(client_properties={}, mechanism="PLAIN", response=b"\0a\0b",
                                  locale="en_US").encode_frame(0)),
        ("s", m.ConnectionTune(channel_max=channel_max, frame_max=4096, heartbeat=0).encode_frame(0)),
        ("c", m.ConnectionTuneOk(channel_max=channel_max, frame_max=4096, heartbeat=0).encode_frame(0)),
        ("c", m.ConnectionOpen(virtual_host="/").encode_frame(0)),
        ("s", m.ConnectionOpenOk().encode_frame(0)),
    ]


def talk_close(gen: Any) -> list[tuple[str, bytes]]:
    m = gen.methods
    return [("c", m.ConnectionClose(reply_code=200).encode_frame(0)), ("s", m.ConnectionCloseOk().encode_frame(0))]


#: synth_capture's packets: SYN, SYN-ACK, ACK, then one packet per item of the talk
FIRST = 4


def crafted(tmp: Any, tmp_path: Path, name: str, talk: list[tuple[str, bytes]]) -> list[tuple[Any, ...]]:
    path = tmp_path / f"{name}.pcap"
    synth_capture(path, talk)
    return sequence_rows(tmp, path)


def test_crafted_captures_give_exactly_the_expected_rows(tmp: Any, tmp_path: Path) -> None:
    gen = pipeline(tmp).codec
    m, f = gen.methods, gen.frames
    props = gen.properties.BasicProperties(content_type="text/plain")
    head = talk_open(gen)
    ch1 = [("c", m.ChannelOpen().encode_frame(1)), ("s", m.ChannelOpenOk().encode_frame(1))]
    n = FIRST + len(head)  # the packet of the first item after the negotiation
    c2s, s2c = "client-to-server", "server-to-client"
    cmd, chan = (503, "command-invalid"), (504, "channel-error")

    # a method on a channel never opened
    got = crafted(tmp, tmp_path, "never-opened", head + ch1 + [
        ("c", m.QueueDeclare(queue="q").encode_frame(2)), ("s", m.QueueDeclareOk(queue="q").encode_frame(2))]
        + talk_close(gen))
    assert got == [("sequence", *chan, "queue.declare", 2, c2s, n + 2, "open-channel")]

    # basic.publish (with its content) before channel.open
    got = crafted(tmp, tmp_path, "publish-first", head + [
        ("c", f.encode_message(1, m.BasicPublish(routing_key="k"), props, b"x"))] + ch1 + talk_close(gen))
    assert got == [("sequence", *chan, "basic.publish", 1, c2s, n, "open-channel")]

    # a second synchronous request before the reply
    got = crafted(tmp, tmp_path, "second-request", head + ch1 + [
        ("c", m.QueueDeclare(queue="a").encode_frame(1)), ("c", m.QueueDeclare(queue="b").encode_frame(1)),
        ("s", m.QueueDeclareOk(queue="a").encode_frame(1)), ("s", m.QueueDeclareOk(queue="b").encode_frame(1))]
        + talk_close(gen))
    assert got == [("sequence", *cmd, "queue.declare", 1, c2s, n + 3, "queue")]

    # a reply to no request
    got = crafted(tmp, tmp_path, "stray-reply", head + ch1 + [("s", m.BasicQosOk().encode_frame(1))]
                  + talk_close(gen))
    assert got == [("sequence", *cmd, "basic.qos-ok", 1, s2c, n + 2, "basic")]

    # a method after connection.close-ok
    got = crafted(tmp, tmp_path, "after-close", head + ch1 + talk_close(gen) + [
        ("c", m.BasicQos(prefetch_count=1).encode_frame(1))])
    assert got == [("sequence", *cmd, "basic.qos", 1, c2s, n + 4, "close-connection")]

    # channel.open over channel_max (10), and on a channel open already
    got = crafted(tmp, tmp_path, "channel-max", head + ch1 + [
        ("c", m.ChannelOpen().encode_frame(11)), ("s", m.ChannelOpenOk().encode_frame(11)),
        ("c", m.ChannelOpen().encode_frame(1))] + talk_close(gen))
    assert got == [("sequence", *chan, "channel.open", 11, c2s, n + 2, "open-channel"),
                   ("sequence", *chan, "channel.open", 1, c2s, n + 4, "channel.open.state")]

    # the negotiation out of order: connection.open with no tune-ok before it
    skipped = head[:4] + head[5:]
    got = crafted(tmp, tmp_path, "negotiation", skipped + ch1 + talk_close(gen))
    assert got == [("sequence", *cmd, "connection.open", 0, c2s, FIRST + 4, "open-connection")]
    # and the same with tune-ok after it: that is out of order too
    swapped = head[:4] + [head[5], head[4]] + head[6:]
    got = crafted(tmp, tmp_path, "swapped", swapped + ch1 + talk_close(gen))
    assert got == [("sequence", *cmd, "connection.open", 0, c2s, FIRST + 4, "open-connection"),
                   ("sequence", *cmd, "connection.tune-ok", 0, c2s, FIRST + 5, "open-connection")]


def test_a_capture_beginning_mid_connection_gives_no_row(tmp: Any, tmp_path: Path) -> None:
    gen = pipeline(tmp).codec
    m, f = gen.methods, gen.frames
    props = gen.properties.BasicProperties(content_type="text/plain")
    talk = [
        ("s", m.QueueDeclareOk(queue="q").encode_frame(1)),  # answering a request from before the capture
        ("c", f.encode_message(1, m.BasicPublish(routing_key="q"), props, b"x")),
        ("s", f.encode_message(2, m.BasicDeliver(consumer_tag="t", delivery_tag=1, routing_key="q"), props, b"x")),
        ("c", m.BasicAck(delivery_tag=1).encode_frame(2)),
        ("c", m.ChannelClose(reply_code=200).encode_frame(1)),
        ("s", m.ChannelCloseOk().encode_frame(1)),
        *talk_close(gen),
    ]
    assert crafted(tmp, tmp_path, "mid", talk) == []
    # the same with the capture's packets of the two directions swapped pairwise (their timestamps kept)
    path = tmp_path / "mid.pcap"
    link, recs = read_pcap(path)
    for i in range(3, len(recs) - 3, 2):
        recs[i], recs[i + 1] = recs[i + 1], recs[i]
    write_pcap(path, link, recs)
    assert sequence_rows(tmp, path) == []


@pytest.mark.parametrize("offset", range(4))
def test_packets_swapped_across_directions_give_no_row(tmp: Any, tmp_path: Path, offset: int) -> None:
    """Each data packet swapped with the next one in the capture, whichever direction either is (timestamps kept):
    replies decoded before their requests, negotiation steps before the other side's."""
    src = DATA / "pika-small.pcap"
    link, recs = read_pcap(src)
    data = [i for i, p in enumerate(packets(recs)) if p.payload]
    for a in data[offset::4]:
        b = data.index(a) + 1
        if b < len(data):
            recs[a], recs[data[b]] = recs[data[b]], recs[a]
    dst = tmp_path / "swapped.pcap"
    write_pcap(dst, link, recs)
    assert sequence_rows(tmp, dst) == []
    assert [v for v in violations(tmp, dst) if v["kind"] == "response"] == []  # the checker's own view agrees
