"""A scripted misbehaving 0-9-1 server for the fault matrix: it listens on 127.0.0.1 (an ephemeral port), and per
accepted connection runs one script:

- ``silent``: accepts and never answers (reads and drops what comes);
- ``half_frame``: answers the protocol header with the first half of a connection.start frame, then nothing;
- ``header_close``: answers the protocol header with AMQP 0-10's header and closes (a server that speaks another
  version);
- ``interleaved``: logs the client in on the generated engine's server role (``engine.Connection(role="server")``),
  opens its channels, answers basic.consume, then sends one delivery on channel 1 and one on channel 2 with their
  frames interleaved (method 1, method 2, header 1, header 2, body 1, body 2, ...): the spec lets frames of
  different channels interleave; only one channel's content frames must be in order. Those frames are built by hand
  here (struct), not by the generated codec, so the check is independent of it.
"""

from __future__ import annotations

import itertools
import select
import socket
import struct
import threading
import time
from types import ModuleType
from typing import Any, Self

#: the interleaved deliveries' bodies, 3 body frames each with frame_max 4096
BODIES = {1: bytes(range(256)) * 40, 2: b"second channel " * 700}
FRAME_MAX = 4096


def _frame(kind: int, channel: int, payload: bytes) -> bytes:
    return struct.pack(">BHI", kind, channel, len(payload)) + payload + b"\xce"


def _short(s: str) -> bytes:
    return bytes([len(s)]) + s.encode()


def deliver_frames(channel: int, tag: str, delivery_tag: int, body: bytes) -> list[bytes]:
    """basic.deliver (60, 60), its content header (no properties) and its body frames, by hand."""
    args = _short(tag) + struct.pack(">QB", delivery_tag, 0) + _short("") + _short(f"q{channel}")
    frames = [_frame(1, channel, struct.pack(">HH", 60, 60) + args),
              _frame(2, channel, struct.pack(">HHQH", 60, 0, len(body), 0))]
    chunk = FRAME_MAX - 8
    frames += [_frame(3, channel, body[i:i + chunk]) for i in range(0, len(body), chunk)]
    return frames


class ScriptedServer:
    """``with ScriptedServer(script, engine_module) as srv: connect to srv.port``."""

    def __init__(self, script: str, engine: ModuleType | None = None) -> None:
        assert script in ("silent", "half_frame", "header_close", "interleaved"), script
        self.script, self.engine = script, engine
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.failures: list[str] = []
        self.stopping = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        try:
            getattr(self, f"_{self.script}")(sock)
        except OSError:
            pass  # the client went away: its driver reports what it saw
        except Exception as e:  # noqa: BLE001 - a failure of the script itself, reported by the test
            self.failures.append(f"{type(e).__name__}: {e}")
        finally:
            sock.close()

    def _drop_until_closed(self, sock: socket.socket) -> None:
        deadline = time.monotonic() + 30
        while not self.stopping.is_set() and time.monotonic() < deadline:
            r, _, _ = select.select([sock], [], [], 0.1)
            if r and not sock.recv(65536):
                return

    def _silent(self, sock: socket.socket) -> None:
        self._drop_until_closed(sock)

    def _read_header(self, sock: socket.socket) -> bytes:
        data = b""
        while len(data) < 8:
            chunk = sock.recv(8 - len(data))
            if not chunk:
                raise OSError("closed before the protocol header")
            data += chunk
        return data

    def _half_frame(self, sock: socket.socket) -> None:
        self._read_header(sock)
        start = _frame(1, 0, struct.pack(">HHBB", 10, 10, 0, 9) + struct.pack(">I", 0)
                       + struct.pack(">I", 5) + b"PLAIN" + struct.pack(">I", 5) + b"en_US")
        sock.sendall(start[:len(start) // 2])
        self._drop_until_closed(sock)

    def _header_close(self, sock: socket.socket) -> None:
        self._read_header(sock)
        sock.sendall(b"AMQP\x01\x01\x00\x0a")

    def _interleaved(self, sock: socket.socket) -> None:
        eng = self.engine
        assert eng is not None, "the interleaved script runs the generated engine's server role"
        methods = _sibling(eng, "methods")
        conn = eng.Connection(role="server", channel_max=16, frame_max=FRAME_MAX, heartbeat=0)
        consumers: dict[int, str] = {}
        sent = False
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not self.stopping.is_set():
            r, _, _ = select.select([sock], [], [], 0.05)
            if r:
                data = sock.recv(65536)
                if not data:
                    return
                conn.receive_data(data)
            while (ev := conn.next_event()) is not None:
                if isinstance(ev, eng.ProtocolHeaderReceived):
                    conn.send(0, methods.ConnectionStart(0, 9, {"product": "amqgen fault server"}, b"PLAIN",
                                                         b"en_US"))
                elif isinstance(ev, eng.MethodReceived):
                    m: Any = ev.method
                    if m.NAME == "connection.start-ok":
                        conn.send(0, methods.ConnectionTune(16, FRAME_MAX, 0))
                    elif m.NAME == "connection.open":
                        conn.send(0, methods.ConnectionOpenOk())
                    elif m.NAME == "channel.open":
                        conn.send(ev.channel, methods.ChannelOpenOk())
                    elif m.NAME == "basic.qos":
                        conn.send(ev.channel, methods.BasicQosOk())
                    elif m.NAME == "basic.consume":
                        tag = m.consumer_tag or f"ctag-{ev.channel}"
                        consumers[ev.channel] = tag
                        if not m.no_wait:
                            conn.send(ev.channel, methods.BasicConsumeOk(tag))
                    elif m.NAME in ("basic.ack", "basic.reject", "basic.nack"):
                        pass
                elif isinstance(ev, eng.ProtocolError):
                    self.failures.append(f"the client broke the protocol: {ev.reply_code} {ev.reply_text}")
                    conn.close(ev.reply_code, ev.reply_text[:255])
                elif isinstance(ev, eng.ConnectionClosed):
                    sock.sendall(conn.data_to_send())
                    return
            sock.sendall(conn.data_to_send())
            if not sent and set(consumers) >= {1, 2}:
                sent = True
                one = deliver_frames(1, consumers[1], 1, BODIES[1])
                two = deliver_frames(2, consumers[2], 1, BODIES[2])
                sock.sendall(b"".join(f for pair in itertools.zip_longest(one, two, fillvalue=b"") for f in pair))
        self.failures.append("the interleaved script timed out")

    def close(self) -> None:
        self.stopping.set()
        self.listener.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _sibling(engine: ModuleType, name: str) -> ModuleType:
    import importlib

    return importlib.import_module(f"{engine.__name__.rpartition('.')[0]}.{name}")
