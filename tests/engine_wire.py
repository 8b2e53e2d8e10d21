"""A blocking client over a plain socket, driven entirely by the generated sans-I/O engine (``engine.py``): the
socket and the clock are this module's, every protocol decision the engine's. Used by the engine's broker tests;
every wait has a deadline, so a hang is a failure."""

from __future__ import annotations

import socket
import time
from collections import deque
from types import ModuleType
from typing import Any


class EngineError(AssertionError):
    pass


class EngineClient:
    def __init__(self, pkg: ModuleType, host: str, port: int, *, heartbeat: int = 0, frame_max: int = 4096,
                 timeout: float = 20.0) -> None:
        self.pkg = pkg
        self.e = pkg.engine
        self.m = pkg.methods.METHODS_BY_NAME
        self.props = pkg.properties.PROPERTIES[60]
        self.conn = self.e.Connection("client", heartbeat=heartbeat, frame_max=frame_max)
        self.timeout = timeout
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as err:
            raise EngineError(f"no broker at {host}:{port}: {err}") from err
        self.sock.settimeout(0.05)
        self.events: deque[Any] = deque()
        self.errors: list[Any] = []
        self.conn.initiate()
        self.write(self.conn.data_to_send())

    # -- I/O: the only place the socket and the clock are touched ---------------------------------------------
    def write(self, data: bytes) -> None:
        if data:
            self.sock.sendall(data)

    def send(self, channel: int, name: str, props: Any = None, body: bytes = b"", **fields: Any) -> None:
        self.conn.send(channel, self.m[name](**fields), props, body)
        self.write(self.conn.data_to_send())

    def pump(self) -> None:
        self.conn.tick(time.monotonic())
        self.write(self.conn.data_to_send())
        try:
            data = self.sock.recv(1 << 16)
        except TimeoutError:
            data = None
        if data == b"":
            raise EngineError("the broker closed the socket")
        if data:
            self.conn.receive_data(data)
            self.write(self.conn.data_to_send())
        while (ev := self.conn.next_event()) is not None:
            if isinstance(ev, self.e.ProtocolError):
                self.errors.append(ev)
            self.events.append(ev)

    def wait(self, kind: str, pred: Any = None, *, keep_others: bool = True) -> Any:
        """The first event of class ``kind`` (matching ``pred``); the others stay queued in order."""
        deadline = time.monotonic() + self.timeout
        cls = getattr(self.e, kind)
        while True:
            for i, ev in enumerate(self.events):
                if isinstance(ev, cls) and (pred is None or pred(ev)):
                    del self.events[i]
                    return ev
                if isinstance(ev, self.e.ProtocolError):
                    raise EngineError(f"protocol error: {ev}")
            if time.monotonic() > deadline:
                raise EngineError(f"no {kind} in {self.timeout}s; queued: {list(self.events)[:5]}")
            self.pump()

    def reply(self, channel: int, name: str) -> Any:
        """The method ``name`` received on ``channel`` (a reply)."""
        cls = self.m[name]
        return self.wait("MethodReceived", lambda ev: ev.channel == channel and type(ev.method) is cls).method

    # -- the negotiation ---------------------------------------------------------------------------------------
    def login(self, user: str = "guest", password: str = "guest", vhost: str = "/") -> Any:
        start = self.reply(0, "connection.start")
        mechanisms = bytes(start.mechanisms).split()
        assert b"PLAIN" in mechanisms, mechanisms
        self.send(0, "connection.start-ok", client_properties=self.e.client_properties("amqgen engine test"),
                  mechanism="PLAIN", response=self.e.plain_response(user, password), locale="en_US")
        tune = self.reply(0, "connection.tune")
        self.conn.send(0, self.e.tune_ok_for(tune, self.conn))
        self.write(self.conn.data_to_send())
        self.send(0, "connection.open", virtual_host=vhost)
        return self.wait("ConnectionNegotiated")

    def open_channel(self, channel: int) -> None:
        self.send(channel, "channel.open")
        self.wait("ChannelOpened", lambda ev: ev.channel == channel)

    def close(self) -> Any:
        self.conn.close(200, "bye")
        self.write(self.conn.data_to_send())
        ev = self.wait("ConnectionClosed")
        self.sock.close()
        return ev
