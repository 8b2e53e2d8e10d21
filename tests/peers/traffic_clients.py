"""Real clients talking to the broker on 127.0.0.1:5672, for captures the traffic tests record.

Every queue and exchange name carries a per-run prefix, so parallel runs never collide. The
crafted violations are encoded with the codec amqgen renders and sent over a plain socket.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import amqp  # py-amqp, celery's client
import pika
from traffic_tools import Recorder, keep_connections_with

RUN = "amqgen-traffic-" + uuid.uuid4().hex[:10]
BROKER = ("127.0.0.1", 5672)


def pika_publish_consume(name: str, sizes: list[int], frame_max: int = 131072) -> int:
    """Declare a queue, publish with confirms (bodies of ``sizes``), consume them all back."""
    params = pika.ConnectionParameters(*BROKER, frame_max=frame_max, heartbeat=30)
    conn = pika.BlockingConnection(params)
    ch = conn.channel()
    q = f"{RUN}-{name}"
    ch.exchange_declare(f"{RUN}-x", "direct", auto_delete=True)
    ch.queue_declare(q, auto_delete=True)
    ch.queue_bind(q, f"{RUN}-x", routing_key=f"rk.{name}")
    ch.confirm_delivery()
    for i, size in enumerate(sizes):
        props = pika.BasicProperties(content_type="application/octet-stream", delivery_mode=2,
                                     headers={"i": i, "name": name, "<b>": "x&y"}, message_id=f"m{i}")
        ch.basic_publish(f"{RUN}-x", f"rk.{name}", bytes(range(256)) * (size // 256) + b"z" * (size % 256), props)
    got = 0
    for method, _, _ in ch.consume(q, inactivity_timeout=2):
        if method is None:
            break
        ch.basic_ack(method.delivery_tag)
        got += 1
        if got == len(sizes):
            break
    ch.cancel()
    ch.basic_qos(prefetch_count=5)
    ch.queue_delete(q)
    conn.close()
    return got


def pyamqp_session(name: str, n: int) -> int:
    """py-amqp: publish n messages to the default exchange, basic.get them back, then tx."""
    conn = amqp.Connection(f"{BROKER[0]}:{BROKER[1]}", userid="guest", password="guest")
    conn.connect()
    ch = conn.channel()
    q = f"{RUN}-{name}"
    ch.queue_declare(q, auto_delete=False)
    for i in range(n):
        ch.basic_publish(amqp.Message(f"py-amqp {i}".encode() * (i + 1), content_type="text/plain"),
                         routing_key=q)
    got = 0
    while (msg := ch.basic_get(q)) is not None:
        ch.basic_ack(msg.delivery_tag)
        got += 1
    # attacker-controlled text for the report to escape (unroutable: the broker drops it)
    ch.basic_publish(amqp.Message(b"<b>body</b>", application_headers={"x-evil": "<img src=x onerror=alert(1)>"}),
                     routing_key='<script>alert("rk")</script>')
    ch.tx_select()
    ch.basic_publish(amqp.Message(b"in a transaction"), routing_key=q)
    ch.tx_commit()
    ch.queue_purge(q)
    ch.queue_delete(q)
    # py-amqp closes with reply-code 0 unless told, which the spec's notnull assert on reply-code forbids
    ch.close(reply_code=200, reply_text="bye")
    conn.close(reply_code=200, reply_text="bye")
    return got


def record_clean(path: Path) -> dict[str, Any]:
    """The reference live capture: three connections at once (two pika, one py-amqp), small and large
    bodies (some over frame_max, so split across body frames)."""
    results: dict[str, Any] = {}
    sizes = [0, 1, 100, 4000, 5000, 131072 - 8, 131072, 200_000, 300_001, 17, 42, 65536]

    def run(key: str, fn: Any, *args: Any) -> None:
        results[key] = fn(*args)

    with Recorder(path):
        threads = [threading.Thread(target=run, args=("pika-a", pika_publish_consume, "a", sizes)),
                   threading.Thread(target=run, args=("pika-b", pika_publish_consume, "b", sizes[::-1], 4096)),
                   threading.Thread(target=run, args=("py-amqp", pyamqp_session, "c", 25))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    keep_connections_with(path, RUN.encode())
    return results


# -- crafted violations --------------------------------------------------------------------------------
class RawClient:
    """A socket speaking AMQP through the generated codec ``c`` (a package module), frame by frame."""

    def __init__(self, c: Any) -> None:
        self.c = c
        self.sock = socket.create_connection(BROKER, timeout=5)
        self.reader = c.frames.FrameReader(0)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frames(self, want: int = 1, timeout: float = 3.0) -> list[Any]:
        got: list[Any] = []
        deadline = time.monotonic() + timeout
        while len(got) < want and time.monotonic() < deadline:
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                break
            if not data:
                break
            got.extend(self.reader.feed(data))
        return got

    def open(self, frame_max: int = 4096) -> None:
        m = self.c.methods
        self.send(self.c.constants.PROTOCOL_HEADER)
        self.recv_frames()  # connection.start
        self.send(m.ConnectionStartOk(client_properties={"product": "amqgen-traffic-test"}, mechanism="PLAIN",
                                      response=b"\x00guest\x00guest", locale="en_US").encode_frame(0))
        self.recv_frames()  # connection.tune
        self.send(m.ConnectionTuneOk(channel_max=16, frame_max=frame_max, heartbeat=0).encode_frame(0))
        self.send(m.ConnectionOpen(virtual_host="/").encode_frame(0))
        self.recv_frames()  # open-ok
        self.send(m.ChannelOpen().encode_frame(1))
        self.recv_frames()  # channel.open-ok

    def close(self) -> None:
        try:
            self.recv_frames(timeout=1.0)  # let the broker answer (it closes the connection after an error)
        finally:
            self.sock.close()


def record_violations(path: Path, c: Any) -> list[str]:
    """One connection per deliberate error; returns the kinds expected, in order."""
    m, f = c.methods, c.frames
    q = f"{RUN}-v"
    props = c.properties.BasicProperties(content_type="text/plain")
    expected = []
    with Recorder(path):
        # 1. a frame whose frame-end octet is wrong
        r = RawClient(c)
        r.open()
        frame = bytearray(m.QueueDeclare(queue=q, auto_delete=True).encode_frame(1))
        frame[-1] = 0x00
        r.send(bytes(frame))
        r.close()
        expected.append("frame-end")
        # 2. a frame over the negotiated frame_max (4096)
        r = RawClient(c)
        r.open(frame_max=4096)
        r.send(f.encode_message(1, m.BasicPublish(exchange="", routing_key=q), props, b"x" * 6000, frame_max=0))
        r.close()
        expected.append("frame-size")
        # 3. a channel-class method on channel 0
        r = RawClient(c)
        r.open()
        r.send(m.QueueDeclare(queue=q, auto_delete=True).encode_frame(0))
        r.close()
        expected.append("channel")
        # 4. a body larger than the header says
        r = RawClient(c)
        r.open()
        msg = f.encode_message(1, m.BasicPublish(exchange="", routing_key=q), props, b"y" * 10)
        head_end = len(msg) - (7 + 10 + 1)
        body = f.BodyFrame(1, b"y" * 12).encode()
        r.send(msg[:head_end] + body)
        r.close()
        expected.append("body-size")
    keep_connections_with(path, RUN.encode())
    return expected


def frame_header(ftype: int, channel: int, size: int) -> bytes:
    return struct.pack(">BHI", ftype, channel, size)
