#!/usr/bin/env python3
"""A complete AMQP 0-9-1 client on the generated sans-I/O engine over a plain socket: log in, declare a queue,
publish N messages with properties, read them back, close. The socket and the clock are this file's; every
protocol decision (negotiation, waiting for replies, assembling messages, heartbeats, closes) is the engine's.

Usage:  python examples/engine_client.py [--host H] [--port P] [--count N] [--build-dir DIR] [--spec S]
"""

from __future__ import annotations

import argparse
import importlib
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SPEC = "0-9-1-rabbit"  # RabbitMQ's 0-9-1, bundled with amqgen (`amqgen specs`); a file path works too


def render(build: Path, spec: str = SPEC) -> Any:
    subprocess.run([sys.executable, "-m", "amqgen", "render", "--lang", "python", "--spec", spec, "--package",
                    "amqp091e", "--out", str(build)], check=True, capture_output=True)
    sys.path.insert(0, str(build))
    return importlib.import_module("amqp091e.engine"), importlib.import_module("amqp091e.methods").METHODS_BY_NAME


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=5672)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--build-dir", type=Path, default=None)
    ap.add_argument("--spec", default=SPEC)
    args = ap.parse_args()
    e, m = render(args.build_dir or Path(tempfile.mkdtemp()), args.spec)
    conn = e.Connection("client", heartbeat=30)
    sock = socket.create_connection((args.host, args.port), timeout=10)

    def send(channel: int, name: str, body: bytes | None = None, props: Any = None, **fields: Any) -> None:
        sock.sendall(conn.send(channel, m[name](**fields), props, body or b""))

    def event(kind: type) -> Any:  # the next event of this kind; what the engine must send goes out on the way
        while True:
            while (ev := conn.next_event()) is None:
                conn.tick(time.monotonic())
                conn.receive_data(sock.recv(65536) or b"")
                sock.sendall(conn.data_to_send())
            if isinstance(ev, e.ProtocolError | e.ChannelClosed | e.ConnectionClosed) and kind is not type(ev):
                raise SystemExit(f"the broker said: {ev}")
            if isinstance(ev, kind):
                return ev

    sock.sendall(conn.initiate())
    event(e.MethodReceived)  # connection.start
    send(0, "connection.start-ok", client_properties=e.client_properties(), mechanism="PLAIN",
         response=e.plain_response("guest", "guest"), locale="en_US")
    sock.sendall(conn.send(0, e.tune_ok_for(event(e.MethodReceived).method, conn)))
    send(0, "connection.open", virtual_host="/")
    print("negotiated:", event(e.ConnectionNegotiated))
    send(1, "channel.open")
    event(e.ChannelOpened)
    send(1, "queue.declare", exclusive=True)
    queue = event(e.MethodReceived).method.queue
    props = importlib.import_module("amqp091e.properties").PROPERTIES[60]
    for i in range(args.count):
        send(1, "basic.publish", f"message {i}".encode(), props(content_type="text/plain"), routing_key=queue)
    send(1, "basic.consume", queue=queue, no_ack=True)
    event(e.MethodReceived)  # consume-ok
    bodies = [event(e.MessageReceived).body for _ in range(args.count)]
    assert bodies == [f"message {i}".encode() for i in range(args.count)]
    print(f"{args.count} messages published and read back on {queue}")
    sock.sendall(conn.close())
    event(e.ConnectionClosed)


if __name__ == "__main__":
    main()
