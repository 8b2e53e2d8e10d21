"""A minimal blocking AMQP 0-9-1 client over a plain TCP socket, built on the generated codec only.

Used by the broker test: every octet on the wire is produced and parsed by the generated package
(``encode_frame`` / ``encode_message`` / ``FrameReader``). Every wait is bounded by a deadline.
"""

from __future__ import annotations

import socket
import time
from collections import deque
from types import ModuleType
from typing import Any

from py_peers import SPEC

from amqgen.naming import Naming

NAMING = Naming("python")


class BrokerError(AssertionError):
    """The broker closed the channel or connection, or said something unexpected."""


def method_class(codec: ModuleType, full_name: str) -> type:
    """The generated class for ``queue.declare`` etc., found through the model's ids."""
    cls: type = codec.methods.METHODS[SPEC.method_by_name[full_name].id]
    return cls


class Wire:
    def __init__(self, codec: ModuleType, host: str, port: int, *, timeout: float = 10.0,
                 deadline: float = 180.0) -> None:
        self.codec = codec
        self.frames = codec.frames
        self.deadline = time.monotonic() + deadline
        self.timeout = timeout
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise BrokerError(f"no AMQP broker answers on {host}:{port}: {e}") from e
        self.sock.settimeout(timeout)
        self.reader = self.frames.FrameReader(max_frame_size=131072)
        self.pending: deque[Any] = deque()
        self.frame_max = 0
        self.body_frame_sizes: list[int] = []  # payload sizes of the body frames received

    def m(self, full_name: str, **fields: Any) -> Any:
        return method_class(self.codec, full_name)(**fields)

    # -- sending -------------------------------------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, channel: int, method: Any) -> None:
        self.sock.sendall(self.frames.encode_frame(self.frames.MethodFrame(channel, method)))

    def send_message(self, channel: int, method: Any, properties: Any, body: bytes) -> None:
        self.sock.sendall(self.frames.encode_message(channel, method, properties, body, self.frame_max))

    # -- receiving -----------------------------------------------------------------------------------
    def next_frame(self) -> Any:
        while not self.pending:
            if time.monotonic() > self.deadline:
                raise BrokerError("overall deadline passed while waiting for the broker")
            try:
                data = self.sock.recv(65536)
            except TimeoutError as e:
                raise BrokerError(f"broker silent for {self.timeout}s") from e
            if not data:
                raise BrokerError("broker closed the socket")
            for f in self.reader.feed(data):
                if isinstance(f, self.frames.HeartbeatFrame):
                    continue
                if isinstance(f, self.frames.BodyFrame):
                    self.body_frame_sizes.append(len(f.payload))
                self.pending.append(f)
        return self.pending.popleft()

    def expect(self, channel: int, full_name: str) -> Any:
        """The next frame must be method ``full_name`` on ``channel``; a close from the broker fails."""
        f = self.next_frame()
        if not isinstance(f, self.frames.MethodFrame):
            raise BrokerError(f"expected {full_name}, got {f!r}")
        if f.method.NAME in ("connection.close", "channel.close") and full_name != f.method.NAME:
            raise BrokerError(f"broker sent {f.method.NAME}: {f.method.reply_code} {f.method.reply_text}")
        if f.channel != channel or f.method.NAME != full_name:
            raise BrokerError(f"expected {full_name} on channel {channel}, got {f.method!r} on {f.channel}")
        return f.method

    def call(self, channel: int, method: Any) -> Any:
        """Send a synchronous method and return its reply (the spec's single response)."""
        self.send(channel, method)
        reply = SPEC.method_by_name[method.NAME].responses[0]
        return self.expect(channel, reply)

    def read_message(self, channel: int, full_name: str) -> tuple[Any, Any, bytes]:
        """Method + header + body frames of one delivered message."""
        method = self.expect(channel, full_name)
        header = self.next_frame()
        if not isinstance(header, self.frames.HeaderFrame) or header.channel != channel:
            raise BrokerError(f"expected a content header, got {header!r}")
        parts: list[bytes] = []
        got = 0
        while got < header.body_size:
            body = self.next_frame()
            if not isinstance(body, self.frames.BodyFrame) or body.channel != channel:
                raise BrokerError(f"expected a body frame, got {body!r}")
            parts.append(bytes(body.payload))
            got += len(body.payload)
        if got != header.body_size:
            raise BrokerError(f"body frames carried {got} octets, header said {header.body_size}")
        return method, header, b"".join(parts)

    def close(self) -> None:
        self.sock.close()


def open_connection(codec: ModuleType, host: str, port: int, user: str, password: str, *,
                    frame_max: int = 4096, vhost: str = "/") -> tuple[Wire, Any]:
    """Protocol header, start / start-ok (PLAIN) / tune / tune-ok / open. Returns the wire and the
    server's connection.start."""
    w = Wire(codec, host, port)
    w.send_raw(codec.constants.PROTOCOL_HEADER)
    start = w.expect(0, "connection.start")
    if (start.version_major, start.version_minor) != (0, 9):
        raise BrokerError(f"server speaks {start.version_major}-{start.version_minor}")
    mechanisms = bytes(start.mechanisms).split() if not isinstance(start.mechanisms, str) else \
        start.mechanisms.encode().split()
    if b"PLAIN" not in mechanisms:
        raise BrokerError(f"PLAIN not offered: {mechanisms!r}")
    client_properties = {
        "product": "amqgen generated codec test",
        "capabilities": {"publisher_confirms": True, "basic.nack": True, "consumer_cancel_notify": True},
    }
    w.send(0, w.m("connection.start-ok", client_properties=client_properties, mechanism="PLAIN",
                  response=b"\x00" + user.encode() + b"\x00" + password.encode(), locale="en_US"))
    tune = w.expect(0, "connection.tune")
    w.frame_max = min(frame_max, tune.frame_max) if tune.frame_max else frame_max
    w.reader.max_frame_size = w.frame_max  # the broker must now keep to the negotiated size
    w.send(0, w.m("connection.tune-ok", channel_max=min(tune.channel_max or 2047, 2047), frame_max=w.frame_max,
                  heartbeat=0))
    w.call(0, w.m("connection.open", virtual_host=vhost))
    return w, start


def close_connection(w: Wire) -> None:
    """connection.close / close-ok; then we shut our side and the broker must end the stream
    without sending anything more."""
    w.call(0, w.m("connection.close", reply_code=200, reply_text="done", class_id=0, method_id=0))
    w.sock.shutdown(socket.SHUT_WR)
    try:
        rest = w.sock.recv(1)
    except TimeoutError as e:
        raise BrokerError("broker kept the socket open after connection.close-ok") from e
    except ConnectionResetError:
        rest = b""  # RabbitMQ may end the stream with a reset once both sides are done
    finally:
        w.close()
    if rest:
        raise BrokerError(f"data after connection.close-ok: {rest!r}")
