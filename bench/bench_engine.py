#!/usr/bin/env python3
"""The generated sans-I/O engine's cost (issue 19).

Run:  .venv/bin/python bench/bench_engine.py [--count 100000] [--readme bench/README.md] [--quick]

1. The engine's cost per published and per delivered message over the bare codec, in memory: publishing is
   ``Connection.send(channel, BasicPublish, props, body)`` against ``frames.encode_message`` of the same method,
   properties and body; delivering is ``receive_data`` of a basic.deliver + header + body plus ``next_event``
   against ``FrameReader.feed`` of the same octets. Ratio = engine time / codec time (one run, best of 5).
2. A whole client against RabbitMQ on 127.0.0.1:5672: engine + plain socket publishing COUNT messages of 128
   octets to a fresh queue and consuming them back (acks every 100), against pika's BlockingConnection doing the
   same. Each side runs in its own process; reported: that process's CPU time (user + system, from
   ``resource.getrusage``) per message, and messages per second of wall time. The broker shares the machine.
"""

from __future__ import annotations

import argparse
import importlib
import platform
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import cpu_model, write_block

ROOT = Path(__file__).resolve().parent.parent
SPEC = "0-9-1-rabbit"  # the bundled RabbitMQ 0-9-1 extended XML
BODY = bytes(range(128))


def render(out: Path) -> Any:
    subprocess.run([sys.executable, "-m", "amqgen", "render", "--lang", "python", "--spec", SPEC, "--package",
                    "amqp091b", "--out", str(out)], check=True, cwd=ROOT, capture_output=True)
    sys.path.insert(0, str(out))
    for sub in ("engine", "methods", "properties", "frames"):
        importlib.import_module(f"amqp091b.{sub}")
    return importlib.import_module("amqp091b")


def open_pair(pkg: Any) -> tuple[Any, Any]:
    """A client and a server engine, negotiated in memory, channel 1 open."""
    e, m = pkg.engine, pkg.methods.METHODS_BY_NAME
    client, server = e.Connection("client"), e.Connection("server")
    client.initiate()
    server.receive_data(client.data_to_send())
    server.send(0, m["connection.start"](mechanisms=b"PLAIN", locales=b"en_US"))
    client.receive_data(server.data_to_send())
    client.next_event()
    client.send(0, m["connection.start-ok"](mechanism="PLAIN", response=b"\0u\0p"))
    server.receive_data(client.data_to_send())
    server.send(0, m["connection.tune"](channel_max=0, frame_max=131072, heartbeat=0))
    client.receive_data(server.data_to_send())
    client.next_event()
    client.send(0, m["connection.tune-ok"](channel_max=0, frame_max=131072, heartbeat=0))
    server.receive_data(client.data_to_send())
    client.send(0, m["connection.open"](virtual_host="/"))
    server.receive_data(client.data_to_send())
    server.send(0, m["connection.open-ok"]())
    client.receive_data(server.data_to_send())
    client.send(1, m["channel.open"]())
    server.receive_data(client.data_to_send())
    server.send(1, m["channel.open-ok"]())
    client.receive_data(server.data_to_send())
    for c in (client, server):
        while c.next_event() is not None:
            pass
    return client, server


def micro(pkg: Any, quick: bool) -> list[tuple[str, float, float]]:
    m, f = pkg.methods.METHODS_BY_NAME, pkg.frames
    props = pkg.properties.PROPERTIES[60](content_type="application/octet-stream", delivery_mode=2)
    publish = m["basic.publish"](routing_key="bench")
    client, _ = open_pair(pkg)
    deliver = m["basic.deliver"](consumer_tag="c", delivery_tag=1, routing_key="bench")
    wire = f.encode_message(1, deliver, props, BODY, 131072)
    _, server_side = open_pair(pkg)
    receiver, _ = open_pair(pkg)
    reader = f.FrameReader()
    client.send(1, publish, props, BODY)
    assert client.data_to_send() == f.encode_message(1, publish, props, BODY, 131072)  # equal work

    def engine_recv() -> Any:
        receiver.receive_data(wire)
        return receiver.next_event()

    ev = engine_recv()
    assert ev.body == BODY and ev.properties == props  # the engine assembled the same message the frames hold
    n = 2000 if quick else 20000
    rows = []
    for name, ours, bare in (
        ("publish: engine.send + data_to_send vs encode_message",
         lambda: (client.send(1, publish, props, BODY), client.data_to_send()),
         lambda: f.encode_message(1, publish, props, BODY, 131072)),
        ("deliver: receive_data + next_event vs FrameReader.feed", engine_recv, lambda: reader.feed(wire)),
    ):
        t_engine = min(timeit.repeat(ours, number=n, repeat=5)) / n
        t_codec = min(timeit.repeat(bare, number=n, repeat=5)) / n
        rows.append((name, t_engine * 1e6, t_codec * 1e6))
    del server_side
    return rows


ENGINE_CLIENT = r"""
import resource, socket, sys, time
sys.path.insert(0, sys.argv[1])
import amqp091b.engine as e, amqp091b.methods, amqp091b.properties
pkg = sys.modules["amqp091b"]
m = pkg.methods.METHODS_BY_NAME
count, queue = int(sys.argv[2]), sys.argv[3]
props = pkg.properties.PROPERTIES[60]()
body = bytes(range(128))
sock = socket.create_connection(("127.0.0.1", 5672))
conn = e.Connection("client", heartbeat=0)
out = bytearray()
def flush():
    out.extend(conn.data_to_send())
    if out:
        sock.sendall(out); out.clear()
def until(pred):
    while True:
        ev = conn.next_event()
        if ev is None:
            flush(); conn.receive_data(sock.recv(1 << 18)); continue
        if isinstance(ev, e.ProtocolError): raise SystemExit(str(ev))
        if pred(ev): return ev
t0, r0 = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
conn.initiate(); flush()
until(lambda ev: True)
conn.send(0, m["connection.start-ok"](client_properties={}, mechanism="PLAIN", response=e.plain_response("guest", "guest"), locale="en_US"))
conn.send(0, e.tune_ok_for(until(lambda ev: True).method, conn))
conn.send(0, m["connection.open"](virtual_host="/")); flush()
until(lambda ev: isinstance(ev, e.ConnectionNegotiated))
conn.send(1, m["channel.open"]()); flush(); until(lambda ev: isinstance(ev, e.ChannelOpened))
conn.send(1, m["queue.declare"](queue=queue, auto_delete=True)); flush(); until(lambda ev: True)
pub = m["basic.publish"](routing_key=queue)
for i in range(count):
    conn.send(1, pub, props, body)
    if i % 512 == 511: flush()
flush()
conn.send(1, m["basic.qos"](prefetch_count=500)); flush(); until(lambda ev: True)
conn.send(1, m["basic.consume"](queue=queue)); flush(); until(lambda ev: True)
got = 0
while got < count:
    ev = until(lambda ev: isinstance(ev, e.MessageReceived))
    got += 1
    if got % 100 == 0:
        conn.send(1, m["basic.ack"](delivery_tag=ev.method.delivery_tag, multiple=True)); flush()
conn.close(); flush(); until(lambda ev: isinstance(ev, e.ConnectionClosed))
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, time.monotonic() - t0)
"""

PIKA_CLIENT = r"""
import resource, sys, time
import pika
count, queue = int(sys.argv[2]), sys.argv[3]
body = bytes(range(128))
t0, r0 = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", 5672))
ch = conn.channel()
ch.queue_declare(queue, auto_delete=True)
props = pika.BasicProperties()
for i in range(count):
    ch.basic_publish("", queue, body, props)
ch.basic_qos(prefetch_count=500)
got = 0
for method, _, _ in ch.consume(queue):
    got += 1
    if got % 100 == 0:
        ch.basic_ack(method.delivery_tag, multiple=True)
    if got == count:
        break
ch.cancel()
conn.close()
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, time.monotonic() - t0)
"""


def whole(build: Path, count: int) -> list[tuple[str, float, float]]:
    rows = []
    for name, code in (("engine + socket", ENGINE_CLIENT), ("pika BlockingConnection", PIKA_CLIENT)):
        queue = f"amqgen-bench-{name.split()[0]}-{int(time.time())}"
        proc = subprocess.run([sys.executable, "-c", code, str(build), str(count), queue], capture_output=True,
                              text=True, check=False, timeout=900)
        if proc.returncode != 0:
            raise SystemExit(f"{name}: {proc.stderr.strip()[-500:]}")
        cpu, wall = (float(x) for x in proc.stdout.split())
        rows.append((name, cpu / count * 1e6, count / wall))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--readme", type=Path, default=None)
    ap.add_argument("--quick", action="store_true", help="short runs (checks, rough figures)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        pkg = render(Path(tmp))
        rows = micro(pkg, args.quick)
        clients = whole(Path(tmp), 2000 if args.quick else args.count)
    lines = [f"Machine: {cpu_model(platform.processor() or 'unknown')}, Python {platform.python_version()}; one run.",
             "", "| in memory | engine us | bare codec us | engine / codec |", "|---|---:|---:|---:|"]
    lines += [f"| {n} | {a:.2f} | {b:.2f} | {a / b:.2f}x |" for n, a, b in rows]
    count = 2000 if args.quick else args.count
    head = (f"| whole client, {count:,} messages of 128 octets published and consumed | CPU us per message "
            "(the client process) | messages per second |")
    lines += ["", head, "|---|---:|---:|"]
    lines += [f"| {n} | {cpu:.1f} | {rate:,.0f} |" for n, cpu, rate in clients]
    lines += ["", f"engine CPU per message / pika's: {clients[0][1] / clients[1][1]:.2f}"]
    block = "\n".join(lines)
    print(block)
    if args.readme is not None:
        write_block(args.readme, "bench-engine", block)


if __name__ == "__main__":
    main()
