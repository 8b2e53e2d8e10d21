"""Streams for the differential test, recorded from the Python engine's client and server roles talking to each
other (README.md here has the stream format). Only the client's side goes into the stream: its calls, and the
server's bytes as ``recv`` lines; the replay then feeds one engine with them, as a socket would."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class Recorder:
    """A client and a server engine wired together; every step of the client is a stream line."""

    def __init__(self, engine: ModuleType, channel_max: int = 32, frame_max: int = 4096, heartbeat: int = 1,
                 server: tuple[int, int, int] = (2047, 131072, 60)) -> None:
        pkg = engine.__name__.rpartition(".")[0]
        self.engine = engine
        self.methods = importlib.import_module(f"{pkg}.methods").METHODS_BY_NAME
        self.encode = importlib.import_module(f"{pkg}.methods").encode_method
        self.properties = importlib.import_module(f"{pkg}.properties").PROPERTIES
        self.cli = engine.Connection("client", channel_max=channel_max, frame_max=frame_max, heartbeat=heartbeat)
        self.srv = engine.Connection("server", channel_max=server[0], frame_max=server[1], heartbeat=server[2])
        self.server_limits = server
        self.lines = [f"client {channel_max} {frame_max} {heartbeat}"]
        self.tune: Any = None

    def m(self, name: str, **fields: Any) -> Any:
        return self.methods[name](**fields)

    def _pump(self) -> None:
        """The client's bytes to the server, and what the server engine answers itself (close-ok) back; the
        client's events are the replay's business, dropped here."""
        while self.cli.next_event() is not None:
            pass
        out = self.cli.data_to_send()
        if out:
            self.srv.receive_data(out)
            while self.srv.next_event() is not None:
                pass
            answer = self.srv.data_to_send()
            if answer:
                self.deliver(answer)

    def initiate(self) -> None:
        self.lines.append("initiate")
        self.cli.initiate()
        self._pump()

    def send(self, channel: int, method: Any) -> None:
        self.lines.append(f"send {channel} {self.encode(method).hex()}")
        self.cli.send(channel, method)
        self._pump()

    def publish(self, channel: int, method: Any, body: bytes, **props: Any) -> None:
        p = self.properties[method.CLASS_ID](**props)
        header = method.CLASS_ID.to_bytes(2, "big") + bytes(2) + len(body).to_bytes(8, "big") + p.encode()
        self.lines.append(f"publish {channel} {self.encode(method).hex()} {header.hex()} {body.hex() or '-'}")
        self.cli.send(channel, method, p, body)
        self._pump()

    def close(self, code: int = 200, text: str = "bye") -> None:
        self.lines.append(f"close {code} {text.encode().hex() or '-'}")
        self.cli.close(code, text)
        self._pump()

    def tick(self, ms: int) -> None:
        self.lines.append(f"tick {ms}")
        self.cli.tick(ms / 1000)
        self._pump()

    def server(self, channel: int, name: str, body: bytes | None = None, **fields: Any) -> None:
        """The server sends a method (with content when ``body`` is given); the client receives its bytes."""
        method = self.m(name, **fields)
        if body is None:
            self.srv.send(channel, method)
        else:
            self.srv.send(channel, method, self.properties[method.CLASS_ID](content_type="text/plain"), body)
        self.deliver(self.srv.data_to_send())

    def deliver(self, data: bytes) -> None:
        self.lines.append(f"recv {data.hex()}")
        self.cli.receive_data(data)
        self._pump()

    def eof(self) -> None:
        self.lines.append("eof")
        self.cli.receive_data(b"")

    def handshake(self) -> None:
        self.initiate()
        self.server(0, "connection.start", version_major=0, version_minor=9, server_properties={"product": "x"},
                    mechanisms=b"PLAIN", locales=b"en_US")
        self.send(0, self.m("connection.start-ok", client_properties={"product": "diff"}, mechanism="PLAIN",
                            response=b"\0guest\0guest", locale="en_US"))
        cm, fm, hb = self.server_limits
        self.server(0, "connection.tune", channel_max=cm, frame_max=fm, heartbeat=hb)
        self.send(0, self.engine.tune_ok_for(self.m("connection.tune", channel_max=cm, frame_max=fm, heartbeat=hb),
                                             self.cli))
        self.send(0, self.m("connection.open", virtual_host="/"))
        self.server(0, "connection.open-ok")

    def open_channel(self, ch: int) -> None:
        self.send(ch, self.m("channel.open"))
        self.server(ch, "channel.open-ok")


def full_session(engine: ModuleType, big: int = 9000) -> list[str]:
    """The scenario list's conversation: handshake, confirms (acks single and multiple, a nack, a return), a
    consumer with deliveries over frame_max and acks, qos, get and get-empty, tx, channel.flow, a channel closed
    by the server (404) and reopened, our channel close, a server-sent basic.cancel, heartbeats through an idle
    stretch, our clean close, the end of the stream."""
    r = Recorder(engine)
    r.handshake()
    r.open_channel(1)
    r.send(1, r.m("confirm.select"))
    r.server(1, "confirm.select-ok")
    r.send(1, r.m("queue.declare", queue="q-diff", exclusive=True))
    r.server(1, "queue.declare-ok", queue="q-diff", message_count=0, consumer_count=0)
    for i, size in enumerate((10, big, 0, 300)):
        r.publish(1, r.m("basic.publish", routing_key="q-diff", mandatory=i == 3), bytes(range(256)) * (size // 256)
                  + bytes(size % 256), content_type="application/octet-stream", headers={"i": i}, priority=i)
    r.server(1, "basic.ack", delivery_tag=1)
    r.server(1, "basic.nack", delivery_tag=2, requeue=False)
    r.server(1, "basic.return", b"returned", reply_code=312, reply_text="NO_ROUTE", exchange="",
             routing_key="q-diff")
    r.server(1, "basic.ack", delivery_tag=4, multiple=True)
    r.send(1, r.m("basic.qos", prefetch_count=10))
    r.server(1, "basic.qos-ok")
    r.send(1, r.m("basic.consume", queue="q-diff", consumer_tag="c1"))
    r.server(1, "basic.consume-ok", consumer_tag="c1")
    for tag, body in ((1, b"small"), (2, b"x" * big), (3, b"")):
        r.server(1, "basic.deliver", body, consumer_tag="c1", delivery_tag=tag, exchange="", routing_key="q-diff")
    r.send(1, r.m("basic.ack", delivery_tag=3, multiple=True))
    r.server(1, "channel.flow", active=False)
    r.server(1, "channel.flow", active=True)
    r.open_channel(2)
    r.send(2, r.m("basic.get", queue="q-diff"))
    r.server(2, "basic.get-empty")
    r.send(2, r.m("basic.get", queue="q-diff"))
    r.server(2, "basic.get-ok", b"got", delivery_tag=1, exchange="", routing_key="q-diff", message_count=0)
    r.send(2, r.m("tx.select"))
    r.server(2, "tx.select-ok")
    r.send(2, r.m("basic.ack", delivery_tag=1))
    r.send(2, r.m("tx.rollback"))
    r.server(2, "tx.rollback-ok")
    r.send(2, r.m("tx.commit"))
    r.server(2, "tx.commit-ok")
    r.send(2, r.m("queue.declare", queue="nope", passive=True))
    r.server(2, "channel.close", reply_code=404, reply_text="NOT_FOUND - no queue 'nope'", class_id=50,
             method_id=10)
    r.open_channel(2)
    r.open_channel(3)
    r.send(3, r.m("channel.close", reply_code=200, reply_text="done"))  # the server engine answers it
    r.server(1, "basic.cancel", consumer_tag="c1", no_wait=True)
    for t in range(0, 3001, 500):  # heartbeat 1 s: beats both ways through an idle stretch
        r.tick(10_000 + t)
        if t % 1000 == 0:
            r.deliver(bytes.fromhex("08000000000000ce"))
    r.close()  # the server engine answers it
    r.eof()
    return r.lines


def server_closes(engine: ModuleType) -> list[str]:
    """The server closes the connection (a forced close: 320); the client answers, the stream ends."""
    r = Recorder(engine, heartbeat=0)
    r.handshake()
    r.open_channel(1)
    r.send(1, r.m("confirm.select"))
    r.server(1, "confirm.select-ok")
    r.publish(1, r.m("basic.publish", routing_key="q"), b"pending")
    r.server(0, "connection.close", reply_code=320, reply_text="CONNECTION_FORCED - closed via management plugin")
    r.eof()
    return r.lines


def unconfirmed_runs(engine: ModuleType) -> list[str]:
    """Publishes that end unconfirmed: channel 1 has 1, 3 and 6 left (2 and 5 acked, 4 nacked), channel 2 its
    3 when the server closes it (406), channel 3 its 2nd when we close it; channel 2 reopened confirms anew from
    tag 1; then the stream ends while the connection is open (channel 1's three runs and channel 2's tag 1)."""
    r = Recorder(engine, heartbeat=0)
    r.handshake()
    for ch in (1, 2, 3):
        r.open_channel(ch)
        r.send(ch, r.m("confirm.select"))
        r.server(ch, "confirm.select-ok")
    for ch, count in ((1, 6), (2, 3), (3, 2)):
        for i in range(count):
            r.publish(ch, r.m("basic.publish", routing_key=f"q{ch}"), bytes([i]) * i)
    r.server(1, "basic.ack", delivery_tag=2)
    r.server(1, "basic.nack", delivery_tag=4, requeue=False)
    r.server(1, "basic.ack", delivery_tag=5)
    r.server(2, "channel.close", reply_code=406, reply_text="PRECONDITION_FAILED", class_id=60, method_id=40)
    r.server(3, "basic.ack", delivery_tag=1)
    r.send(3, r.m("channel.close", reply_code=200, reply_text="done"))  # the server engine answers it
    r.open_channel(2)
    r.send(2, r.m("confirm.select"))
    r.server(2, "confirm.select-ok")
    r.publish(2, r.m("basic.publish", routing_key="q2"), b"again")
    r.eof()
    return r.lines


def peer_silent(engine: ModuleType) -> list[str]:
    """The server goes quiet: our heartbeats go out, then PeerSilent after two intervals, then the end."""
    r = Recorder(engine, heartbeat=2, server=(2047, 131072, 2))
    r.handshake()
    for t in range(0, 6001, 1000):
        r.tick(50_000 + t)
    r.eof()
    return r.lines


def _frames(data: bytes) -> list[bytes]:
    """Octets the server engine wrote, cut into their frames (type, channel, size, payload, end)."""
    out, i = [], 0
    while i < len(data):
        size = int.from_bytes(data[i + 3:i + 7], "big")
        out.append(data[i:i + size + 8])
        i += size + 8
    return out


def interleaved_content(engine: ModuleType) -> list[str]:
    """Two deliveries' content frames interleaved, channel 1's and channel 2's (method 1, method 2, header 1,
    header 2, body 1, body 2, ...; the bodies over frame_max, so three body frames each): the spec orders a
    channel's content frames, not frames of different channels (issue 41: the C engine refused this with 505).
    The server's octets come in three cuts, one inside a frame; then a delivery on channel 1 alone, and a basic.return
    on channel 2 interleaved with a delivery on channel 1."""
    r = Recorder(engine, heartbeat=0)
    r.handshake()
    props = r.properties[60](content_type="text/plain")
    for ch in (1, 2):
        r.open_channel(ch)
        r.send(ch, r.m("basic.consume", queue=f"q{ch}", consumer_tag=f"c{ch}"))
        r.server(ch, "basic.consume-ok", consumer_tag=f"c{ch}")

    def captured(ch: int, name: str, body: bytes, **fields: Any) -> list[bytes]:
        r.srv.send(ch, r.m(name, **fields), props, body)
        return _frames(r.srv.data_to_send())

    one = captured(1, "basic.deliver", bytes(range(256)) * 40, consumer_tag="c1", delivery_tag=1, routing_key="q1")
    two = captured(2, "basic.deliver", b"second channel " * 700, consumer_tag="c2", delivery_tag=1,
                   routing_key="q2")
    mixed = b"".join(f for pair in zip(one, two, strict=True) for f in pair)
    for cut in (mixed[:100], mixed[100:5000], mixed[5000:]):
        r.deliver(cut)
    r.server(1, "basic.deliver", b"alone", consumer_tag="c1", delivery_tag=2, routing_key="q1")
    ret = captured(2, "basic.return", b"returned body", reply_code=312, reply_text="NO_ROUTE", exchange="",
                   routing_key="nowhere")
    three = captured(1, "basic.deliver", b"third" * 1000, consumer_tag="c1", delivery_tag=3, routing_key="q1")
    r.deliver(b"".join([three[0], ret[0], three[1], ret[1], *three[2:], *ret[2:]]))
    for ch, tag in ((1, 1), (2, 1), (1, 2), (1, 3)):
        r.send(ch, r.m("basic.ack", delivery_tag=tag))
    r.close()
    r.eof()
    return r.lines


SCENARIOS = {"full_session": full_session, "server_closes": server_closes, "peer_silent": peer_silent,
             "unconfirmed_runs": unconfirmed_runs, "interleaved_content": interleaved_content}


# -- the server role: the same engines as the server, fed a client's octets ---------------------------------------
class ServerRecorder:
    """A client and a server engine wired together, the server's side recorded: its calls are the stream's lines
    and the client's octets its ``recv`` lines (the first line ``server ...``: the README). ``raw`` puts octets no
    client engine would send (a violation) in the stream, fed to the server alone."""

    def __init__(self, engine: ModuleType, channel_max: int = 32, frame_max: int = 4096, heartbeat: int = 0,
                 client: tuple[int, int, int] = (2047, 131072, 0)) -> None:
        pkg = engine.__name__.rpartition(".")[0]
        self.engine = engine
        self.methods = importlib.import_module(f"{pkg}.methods").METHODS_BY_NAME
        self.encode = importlib.import_module(f"{pkg}.methods").encode_method
        self.properties = importlib.import_module(f"{pkg}.properties").PROPERTIES
        self.cli = engine.Connection("client", channel_max=client[0], frame_max=client[1], heartbeat=client[2])
        self.srv = engine.Connection("server", channel_max=channel_max, frame_max=frame_max, heartbeat=heartbeat)
        self.limits = (channel_max, frame_max, heartbeat)
        self.lines = [f"server {channel_max} {frame_max} {heartbeat}"]

    def m(self, name: str, **fields: Any) -> Any:
        return self.methods[name](**fields)

    def _pump(self) -> None:
        """The server's octets to the client, and what the client engine answers itself (close-ok) back."""
        while self.srv.next_event() is not None:
            pass
        out = self.srv.data_to_send()
        if out:
            self.cli.receive_data(out)
            while self.cli.next_event() is not None:
                pass
            answer = self.cli.data_to_send()
            if answer:
                self.raw(answer)

    def raw(self, data: bytes) -> None:
        self.lines.append(f"recv {data.hex()}")
        self.srv.receive_data(data)
        self._pump()

    def frame(self, channel: int, name: str, **fields: Any) -> bytes:
        """A method frame built by hand (for the violations a client engine refuses to send)."""
        payload: bytes = self.encode(self.m(name, **fields))
        return bytes([1]) + channel.to_bytes(2, "big") + len(payload).to_bytes(4, "big") + payload + b"\xce"

    def client(self, channel: int, name: str, body: bytes | None = None, **fields: Any) -> None:
        method = self.m(name, **fields)
        if body is None:
            self.cli.send(channel, method)
        else:
            self.cli.send(channel, method, self.properties[method.CLASS_ID](
                content_type="text/plain", headers={"h2": "v"}), body)
        self.raw(self.cli.data_to_send())

    def send(self, channel: int, method: Any) -> None:
        self.lines.append(f"send {channel} {self.encode(method).hex()}")
        try:  # a call the engine refuses stays in the stream: both drivers must refuse it
            self.srv.send(channel, method)
        except self.engine.LocalProtocolError:
            pass
        self._pump()

    def publish(self, channel: int, method: Any, body: bytes, **props: Any) -> None:
        p = self.properties[method.CLASS_ID](**props)
        header = method.CLASS_ID.to_bytes(2, "big") + bytes(2) + len(body).to_bytes(8, "big") + p.encode()
        self.lines.append(f"publish {channel} {self.encode(method).hex()} {header.hex()} {body.hex() or '-'}")
        try:  # (refused: the engines must all refuse it)
            self.srv.send(channel, method, p, body)
        except self.engine.LocalProtocolError:
            pass
        self._pump()

    def tick(self, ms: int) -> None:
        """The server's clock (the client's is not ticked: it sends no heartbeat of its own)."""
        self.lines.append(f"tick {ms}")
        self.srv.tick(ms / 1000)
        self._pump()

    def close(self, code: int = 320, text: str = "shutdown") -> None:
        self.lines.append(f"close {code} {text.encode().hex() or '-'}")
        self.srv.close(code, text)
        self._pump()

    def eof(self) -> None:
        self.lines.append("eof")
        self.srv.receive_data(b"")

    def tick(self, ms: int) -> None:
        self.lines.append(f"tick {ms}")
        self.srv.tick(ms / 1000)
        self._pump()

    def handshake(self, tune_ok: Any = None) -> None:
        self.cli.initiate()
        self.raw(self.cli.data_to_send())
        self.send(0, self.m("connection.start", version_major=0, version_minor=9, server_properties={"product": "h2"},
                            mechanisms=b"PLAIN", locales=b"en_US"))
        self.client(0, "connection.start-ok", client_properties={"product": "diff"}, mechanism="PLAIN",
                    response=b"\0guest\0guest", locale="en_US")
        cm, fm, hb = self.limits
        self.send(0, self.m("connection.tune", channel_max=cm, frame_max=fm, heartbeat=hb))
        if tune_ok is not None:  # a tune-ok the client engine would refuse to send
            self.raw(self.frame(0, "connection.tune-ok", **tune_ok))
            return
        self.client(0, "connection.tune-ok", channel_max=cm, frame_max=fm, heartbeat=hb)
        self.client(0, "connection.open", virtual_host="/")
        self.send(0, self.m("connection.open-ok"))

    def open_channel(self, ch: int) -> None:
        self.client(ch, "channel.open")
        self.send(ch, self.m("channel.open-ok"))


def server_session(engine: ModuleType) -> list[str]:
    """A client's handshake; a channel opened, a queue declared and answered, confirms; a publish whose body
    takes two body frames at frame_max 4096, confirmed; a consumer and a delivery over two body frames; a
    second channel opened and closed by the client; the client's close, the end of the stream."""
    r = ServerRecorder(engine)
    r.handshake()
    r.open_channel(1)
    r.client(1, "queue.declare", queue="h2-q", exclusive=True)
    r.send(1, r.m("queue.declare-ok", queue="h2-q", message_count=0, consumer_count=0))
    r.client(1, "confirm.select")
    r.send(1, r.m("confirm.select-ok"))
    r.client(1, "basic.publish", bytes(range(256)) * 24, routing_key="h2-q")  # 6144 octets: two body frames
    r.send(1, r.m("basic.ack", delivery_tag=1))
    r.client(1, "basic.consume", queue="h2-q", consumer_tag="c1")
    r.send(1, r.m("basic.consume-ok", consumer_tag="c1"))
    r.publish(1, r.m("basic.deliver", consumer_tag="c1", delivery_tag=1, routing_key="h2-q"), b"d" * 5000,
              content_type="text/plain")
    r.client(1, "basic.ack", delivery_tag=1)
    r.open_channel(2)
    r.client(2, "channel.close", reply_code=200, reply_text="done")
    r.client(0, "connection.close", reply_code=200, reply_text="bye")
    r.eof()
    return r.lines


def server_violation(engine: ModuleType) -> list[str]:
    """After the handshake and a channel, the client sends a method only a server sends (basic.deliver)."""
    r = ServerRecorder(engine)
    r.handshake()
    r.open_channel(1)
    r.raw(r.frame(1, "basic.deliver", consumer_tag="c1", delivery_tag=1, routing_key="q"))
    r.send(1, r.m("channel.open-ok"))  # refused after the violation: nothing written
    r.close(540, "not implemented")
    r.eof()
    return r.lines


def server_tune_over(engine: ModuleType) -> list[str]:
    """The client answers a tune of frame_max 4096 with a tune-ok of 8192."""
    r = ServerRecorder(engine)
    r.handshake(tune_ok={"channel_max": 32, "frame_max": 8192, "heartbeat": 0})
    r.eof()
    return r.lines


def server_wrong_version(engine: ModuleType) -> list[str]:
    """A server refuses to initiate; a client speaking another version: the server answers with its own header
    and fails."""
    r = ServerRecorder(engine)
    r.lines.append("initiate")  # a client's call: both engines refuse it in the server role
    r.raw(b"AMQP\x01\x01\x00\x0a")
    r.eof()
    return r.lines


def server_role_closes(engine: ModuleType) -> list[str]:
    """The server closes the connection (320) with a channel open; the client's close-ok ends it."""
    r = ServerRecorder(engine)
    r.handshake()
    r.open_channel(1)
    r.client(1, "basic.qos", prefetch_count=5)
    r.send(1, r.m("channel.open-ok"))  # refused: answers no request of the client's
    r.send(1, r.m("basic.qos-ok"))
    r.close()
    r.eof()
    return r.lines


HEARTBEAT = bytes([8, 0, 0, 0, 0, 0, 0, 0xCE])  # type 8, channel 0, size 0, frame-end: built here, not encoded


def server_heartbeats(engine: ModuleType) -> list[str]:
    """The server role's heartbeats (interval 1 s, the client's tune-ok): ticks with nothing sent, a client's
    heartbeat and a channel's open between them, then the client silent past two intervals (reported once, then
    again after it spoke and fell silent anew); the end of the stream. tests/amqp0/engine/test_engine_diff.py says which tick
    gives what."""
    r = ServerRecorder(engine, heartbeat=1)
    r.handshake()
    for ms in (10_000, 10_999, 11_000):  # the first tick starts both clocks
        r.tick(ms)
    r.raw(HEARTBEAT)
    for ms in (11_500, 12_499, 12_500):
        r.tick(ms)
    r.open_channel(1)  # the client's open read, our open-ok sent
    for ms in (13_000, 14_000, 15_000, 15_001, 16_000, 17_000):
        r.tick(ms)
    r.raw(HEARTBEAT)
    for ms in (17_500, 18_000, 19_000, 19_500, 19_501):
        r.tick(ms)
    r.eof()
    return r.lines


def server_silent_client(engine: ModuleType) -> list[str]:
    """A heartbeat of 1 s agreed: the server's heartbeats as its clock runs, the silent client reported
    (PeerSilent), one heartbeat from the client, then its close."""
    r = ServerRecorder(engine, heartbeat=1, client=(2047, 131072, 1))
    r.handshake()
    for ms in (0, 600, 1000, 1500, 2100, 2500):
        r.tick(ms)
    r.raw(bytes.fromhex("08000000000000ce"))
    r.tick(3000)
    r.client(0, "connection.close", reply_code=200, reply_text="bye")
    r.eof()
    return r.lines


def client_tune_over(engine: ModuleType) -> list[str]:
    """A client whose own limits are above the server's tune (16 channels, frame_max 8192) asks tune-ok values
    over it (frame_max 8193, channel_max 17, 0 for either: no limit, frame_max 4095 under frame-min-size): each
    refused with nothing written; then the tune's own values, and the connection opens with them."""
    r = Recorder(engine, channel_max=64, frame_max=131072, heartbeat=0, server=(16, 8192, 0))
    r.initiate()
    r.server(0, "connection.start", version_major=0, version_minor=9, server_properties={"product": "x"},
             mechanisms=b"PLAIN", locales=b"en_US")
    r.send(0, r.m("connection.start-ok", client_properties={"product": "diff"}, mechanism="PLAIN",
                  response=b"\0guest\0guest", locale="en_US"))
    r.server(0, "connection.tune", channel_max=16, frame_max=8192, heartbeat=0)
    for cm, fm in ((16, 8193), (17, 8192), (0, 8192), (16, 0), (16, 4095)):  # refused: the stream line only
        r.lines.append(f"send 0 {r.encode(r.m('connection.tune-ok', channel_max=cm, frame_max=fm)).hex()}")
    r.send(0, r.m("connection.tune-ok", channel_max=16, frame_max=8192, heartbeat=0))
    r.send(0, r.m("connection.open", virtual_host="/"))
    r.server(0, "connection.open-ok")
    r.eof()
    return r.lines


def server_channel_twice(engine: ModuleType) -> list[str]:
    """The client opens channel 1 a second time while it is open: 504 (channel-error)."""
    r = ServerRecorder(engine)
    r.handshake()
    r.open_channel(1)
    r.raw(r.frame(1, "channel.open"))
    r.close(504, "channel 1 is open")
    r.eof()
    return r.lines


def server_frame_over(engine: ModuleType) -> list[str]:
    """frame_max 4096 both ways: the server's delivery whose content header (a 5,000-octet header value) would be
    over it is refused with nothing written, a small one goes; the client's method frame over it is its violation
    (frame-error 501)."""
    r = ServerRecorder(engine)
    r.handshake()
    r.open_channel(1)
    r.client(1, "basic.consume", queue="h1-q", consumer_tag="c1")
    r.send(1, r.m("basic.consume-ok", consumer_tag="c1"))
    deliver = r.m("basic.deliver", consumer_tag="c1", delivery_tag=1, routing_key="h1-q")
    r.publish(1, deliver, b"big", headers={"big": "y" * 5000})
    r.publish(1, deliver, b"small", headers={"small": "y"})
    r.raw(r.frame(1, "queue.declare", queue="h1-q", arguments={"x": "z" * 5000}))
    r.close(501, "frame over frame_max")
    r.eof()
    return r.lines


SERVER_SCENARIOS = {"server_session": server_session, "server_violation": server_violation,
                    "server_tune_over": server_tune_over, "server_wrong_version": server_wrong_version,
                    "server_closes": server_role_closes, "server_silent_client": server_silent_client,
                    "server_channel_twice": server_channel_twice, "server_frame_over": server_frame_over}
