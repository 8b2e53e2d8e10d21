#!/usr/bin/env python3
"""Compare the generated 0-9-1 codec (amqgen) with pika, pamqp and py-amqp (`amqp` on PyPI).

Run:  .venv/bin/python bench/bench_python.py [--spec FILE] [--readme bench/README.md] [--mypyc]

Five cases, each library through its own codec API, on the same values and the same octets:
  1. encode basic.publish + content header (content-type, delivery-mode, 3-entry headers table,
     message-id, timestamp) + 128-byte body, as complete wire frames;
  2. decode those three frames;
  3. decode basic.deliver + content header + 1 KiB body;
  4. decode a RabbitMQ-like connection.start (server-properties with a nested capabilities table);
  5. encode and decode queue.declare with an arguments table.
Before timing, every library's output is checked: encoders must produce the same octets, decoders
the same values. Reported: ops/s per library and amqgen's ratio to the fastest peer.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import io
import os
import platform
import subprocess
import sys
import tempfile
import timeit
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import amqp.basic_message
import amqp.method_framing
import amqp.serialization
import amqp.spec
import amqp.transport
import pamqp.body
import pamqp.commands
import pamqp.frame
import pamqp.header
import pika.frame
import pika.spec

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SPEC = ROOT.parent / "shared" / "specs" / "amqp0-9-1.extended.xml"
LIBS = ("amqgen", "pika", "pamqp", "py-amqp")
PEERS = LIBS[1:]
FRAME_MAX = 131072

# -- the values every library encodes / must decode ----------------------------------------------------
EXCHANGE = "bench.exchange"
ROUTING_KEY = "bench.orders.created"
CONTENT_TYPE = "application/json"
MESSAGE_ID = "b7e3a0c4-2f1d-4c61-9a55-0d3f3b2c1e9a"
TIMESTAMP = 1_700_000_000
TIMESTAMP_DT = dt.datetime.fromtimestamp(TIMESTAMP, dt.UTC)
# Sorted keys and types every library encodes with the same codes (pamqp sorts keys; ints would
# get different codes from pamqp), so all four write identical octets.
HEADERS: dict[str, Any] = {"source": "bench-suite", "trace-id": "5f0c1e2a9b7d4e3f", "urgent": True}
BODY_128 = bytes(range(128))
BODY_1K = bytes(i * 7 % 256 for i in range(1024))
CONSUMER_TAG = "amq.ctag-Xq0vZbF3nQ1mYk8T2sJ4uA"
DELIVERY_TAG = 123_456
QUEUE = "bench.queue.orders"
# Integers in 65536..2**31-1: every library picks 'I' for them, so the octets agree here too.
QUEUE_ARGS: dict[str, Any] = {
    "x-dead-letter-exchange": "bench.dlx",
    "x-max-length": 100_000,
    "x-max-length-bytes": 1_073_741_824,
    "x-message-ttl": 3_600_000,
    "x-queue-type": "classic",
}
SERVER_PROPERTIES: dict[str, Any] = {
    "capabilities": {
        "publisher_confirms": True,
        "exchange_exchange_bindings": True,
        "basic.nack": True,
        "consumer_cancel_notify": True,
        "connection.blocked": True,
        "consumer_priorities": True,
        "authentication_failure_close": True,
        "per_consumer_qos": True,
        "direct_reply_to": True,
    },
    "cluster_name": "rabbit@bench-host",
    "copyright": "Copyright (c) 2007-2024 Broadcom Inc and/or its subsidiaries",
    "information": "Licensed under the MPL 2.0. Website: https://rabbitmq.com",
    "platform": "Erlang/OTP 26.2.5",
    "product": "RabbitMQ",
    "version": "3.13.7",
}
START_ARGS = {"version_major": 0, "version_minor": 9, "server_properties": SERVER_PROPERTIES,
              "mechanisms": "AMQPLAIN PLAIN", "locales": "en_US"}


def render(spec: Path, out: Path, mypyc: bool) -> ModuleType:
    cmd = [sys.executable, "-m", "amqgen", "render", "--lang", "python", "--spec", str(spec),
           "--package", "amqp091x", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode != 0:
        sys.exit(f"bench: amqgen render failed: {proc.stderr.strip()}")
    if mypyc:  # an experiment (see README): the table codec compiled to a C extension
        proc = subprocess.run([sys.executable, "-m", "mypyc", "amqp091x/table.py"], capture_output=True, text=True,
                              cwd=out, check=False)
        if proc.returncode != 0:
            sys.exit(f"bench: mypyc failed: {proc.stdout.strip()[-2000:]} {proc.stderr.strip()[-2000:]}")
    sys.path.insert(0, str(out))
    pkg = importlib.import_module("amqp091x")
    for sub in ("frames", "methods", "properties", "table"):
        importlib.import_module(f"amqp091x.{sub}")
    return pkg


# -- py-amqp plumbing: its real writer and reader, on an in-memory transport --------------------------
class _Sink:
    def __init__(self) -> None:
        self.out: list[bytes] = []

    def write(self, data: Any) -> None:
        self.out.append(bytes(data))  # py-amqp hands over a view of its reused buffer


def _amqp_reader() -> Any:
    """py-amqp's TCPTransport.read_frame, reading from memory instead of a socket."""
    t = object.__new__(amqp.transport.TCPTransport)
    t._read_buffer = b""
    return t


# -- cases ---------------------------------------------------------------------------------------------
Case = dict[str, Callable[[], Any]]


def build_cases(ours: ModuleType) -> list[tuple[str, Case]]:
    fr, me, pr = ours.frames, ours.methods, ours.properties
    sink = _Sink()
    conn = SimpleNamespace(frame_max=FRAME_MAX, bytes_sent=0, bytes_recv=0)
    amqp_write = amqp.method_framing.frame_writer(conn, sink)
    amqp_dumps, amqp_loads = amqp.serialization.dumps, amqp.serialization.loads
    Message = amqp.basic_message.Message

    # (1) encode publish
    def ours_encode_publish() -> bytes:
        props = pr.BasicProperties(content_type=CONTENT_TYPE, delivery_mode=2, headers=HEADERS,
                                   message_id=MESSAGE_ID, timestamp=TIMESTAMP)
        wire: bytes = fr.encode_message(1, me.BasicPublish(exchange=EXCHANGE, routing_key=ROUTING_KEY), props,
                                        BODY_128, FRAME_MAX)
        return wire

    def pika_encode_publish() -> bytes:
        props = pika.spec.BasicProperties(content_type=CONTENT_TYPE, delivery_mode=2, headers=HEADERS,
                                          message_id=MESSAGE_ID, timestamp=TIMESTAMP)
        wire: bytes = (
            pika.frame.Method(1, pika.spec.Basic.Publish(exchange=EXCHANGE, routing_key=ROUTING_KEY)).marshal()
            + pika.frame.Header(1, len(BODY_128), props).marshal() + pika.frame.Body(1, BODY_128).marshal())
        return wire

    def pamqp_encode_publish() -> bytes:
        props = pamqp.commands.Basic.Properties(content_type=CONTENT_TYPE, delivery_mode=2, headers=HEADERS,
                                                message_id=MESSAGE_ID, timestamp=TIMESTAMP_DT)
        return (pamqp.frame.marshal(pamqp.commands.Basic.Publish(exchange=EXCHANGE, routing_key=ROUTING_KEY), 1)
                + pamqp.frame.marshal(pamqp.header.ContentHeader(0, len(BODY_128), props), 1)
                + pamqp.frame.marshal(pamqp.body.ContentBody(BODY_128), 1))

    def amqp_encode_publish() -> bytes:
        sink.out.clear()
        msg = Message(BODY_128, content_type=CONTENT_TYPE, delivery_mode=2, application_headers=HEADERS,
                      message_id=MESSAGE_ID, timestamp=TIMESTAMP)
        amqp_write(1, 1, amqp.spec.Basic.Publish, amqp_dumps("Bssbb", (0, EXCHANGE, ROUTING_KEY, False, False)), msg)
        return sink.out[0]

    publish_wire = pika_encode_publish()
    deliver_props = pika.spec.BasicProperties(content_type=CONTENT_TYPE, delivery_mode=2, headers=HEADERS,
                                              message_id=MESSAGE_ID, timestamp=TIMESTAMP)
    deliver_wire = (
        pika.frame.Method(1, pika.spec.Basic.Deliver(consumer_tag=CONSUMER_TAG, delivery_tag=DELIVERY_TAG,
                                                     redelivered=True, exchange=EXCHANGE,
                                                     routing_key=ROUTING_KEY)).marshal()
        + pika.frame.Header(1, len(BODY_1K), deliver_props).marshal() + pika.frame.Body(1, BODY_1K).marshal()
    )
    start_wire = pika.frame.Method(0, pika.spec.Connection.Start(**START_ARGS)).marshal()

    # (2)-(4) decode: each library's frame reader plus its method / property decoders
    ours_reader = fr.FrameReader(max_frame_size=FRAME_MAX)

    def ours_decoder(wire: bytes) -> Callable[[], Any]:
        def run() -> Any:
            return ours_reader.feed(wire)
        return run

    def pika_decoder(wire: bytes) -> Callable[[], Any]:
        decode_frame = pika.frame.decode_frame

        def run() -> Any:
            frames, offset, end = [], 0, len(wire)
            while offset < end:
                used, frame = decode_frame(wire[offset:])
                frames.append(frame)
                offset += used
            return frames
        return run

    def pamqp_decoder(wire: bytes) -> Callable[[], Any]:
        unmarshal = pamqp.frame.unmarshal

        def run() -> Any:
            frames, offset, end = [], 0, len(wire)
            while offset < end:
                used, _channel, frame = unmarshal(wire[offset:])
                frames.append(frame)
                offset += used
            return frames
        return run

    def amqp_decoder(wire: bytes, nframes: int, argsig: str, content: bool) -> Callable[[], Any]:
        """read_frame + frame_handler (py-amqp's inbound path; it assembles header and body into a
        Message) + loads of the method arguments, as Channel.dispatch_method does."""
        reader = _amqp_reader()
        got: list[Any] = []
        sig = (60, 40) if content else (0, 0)

        def callback(channel: int, method_sig: Any, buf: Any, msg: Any) -> None:
            got.append((method_sig, amqp_loads(argsig, buf, 4)[0], msg))

        handler = amqp.method_framing.frame_handler(
            SimpleNamespace(bytes_recv=0), callback,
            content_methods=frozenset([sig, (60, 60)]),  # py-amqp, a client, never expects to receive publish
        )

        def run() -> Any:
            got.clear()
            reader._quick_recv = io.BytesIO(wire).read
            for _ in range(nframes):
                handler(reader.read_frame())
            return got[0]
        return run

    # (5) queue.declare round trip
    def ours_declare() -> Any:
        # Method.encode_frame(channel): the generated package's one-call method frame (the same
        # octets as frames.encode_frame(MethodFrame(...)), without building the NamedTuple).
        data = me.QueueDeclare(queue=QUEUE, durable=True, arguments=QUEUE_ARGS).encode_frame(1)
        return data, ours_reader.feed(data)

    probe = me.QueueDeclare(queue=QUEUE, durable=True, arguments=QUEUE_ARGS)
    if probe.encode_frame(1) != fr.encode_frame(fr.MethodFrame(1, probe)):
        sys.exit("bench: Method.encode_frame and frames.encode_frame disagree")

    def pika_declare() -> Any:
        data = pika.frame.Method(1, pika.spec.Queue.Declare(queue=QUEUE, durable=True, arguments=QUEUE_ARGS)).marshal()
        return data, pika.frame.decode_frame(data)

    def pamqp_declare() -> Any:
        data = pamqp.frame.marshal(pamqp.commands.Queue.Declare(queue=QUEUE, durable=True, arguments=QUEUE_ARGS), 1)
        return data, pamqp.frame.unmarshal(data)

    declare_reader = _amqp_reader()

    def amqp_declare() -> Any:
        sink.out.clear()
        amqp_write(1, 1, amqp.spec.Queue.Declare,
                   amqp_dumps("BsbbbbbF", (0, QUEUE, False, True, False, False, False, QUEUE_ARGS)), None)
        data = sink.out[0]
        declare_reader._quick_recv = io.BytesIO(data).read
        _type, _channel, payload = declare_reader.read_frame()
        return data, amqp_loads("BsbbbbbF", payload, 4)[0]

    cases: list[tuple[str, Case]] = [
        ("1 encode basic.publish+header+128B body", {
            "amqgen": ours_encode_publish, "pika": pika_encode_publish,
            "pamqp": pamqp_encode_publish, "py-amqp": amqp_encode_publish}),
        ("2 decode basic.publish+header+128B body", {
            "amqgen": ours_decoder(publish_wire), "pika": pika_decoder(publish_wire),
            "pamqp": pamqp_decoder(publish_wire), "py-amqp": amqp_decoder(publish_wire, 3, "Bssbb", True)}),
        ("3 decode basic.deliver+header+1KiB body", {
            "amqgen": ours_decoder(deliver_wire), "pika": pika_decoder(deliver_wire),
            "pamqp": pamqp_decoder(deliver_wire), "py-amqp": amqp_decoder(deliver_wire, 3, "sLbss", True)}),
        ("4 decode connection.start (RabbitMQ-like)", {
            "amqgen": ours_decoder(start_wire), "pika": pika_decoder(start_wire),
            "pamqp": pamqp_decoder(start_wire), "py-amqp": amqp_decoder(start_wire, 1, "ooFSS", False)}),
        ("5 encode+decode queue.declare w/ arguments", {
            "amqgen": ours_declare, "pika": pika_declare, "pamqp": pamqp_declare, "py-amqp": amqp_declare}),
    ]
    return cases


# -- checking that every library did the same work ------------------------------------------------------
def _ts(v: Any) -> int:
    return int(v.timestamp()) if isinstance(v, dt.datetime) else int(v)


def _s(v: Any) -> str:
    return v.decode() if isinstance(v, (bytes, bytearray)) else str(v)


def _msg_view(lib: str, result: Any) -> dict[str, Any]:
    """Method fields, the five properties and the body, from each library's decode result."""
    if lib == "py-amqp":
        sig, args, msg = result
        p = msg.properties
        props = (p["content_type"], p["delivery_mode"], p["application_headers"], p["message_id"], p["timestamp"])
        return {"sig": sig, "args": list(args), "props": props[:4] + (_ts(props[4]),), "body": bytes(msg.body)}
    method_f, header_f, body_f = result
    if lib == "pika":
        m, p, body, sig = method_f.method, header_f.properties, body_f.fragment, None
        ts = p.timestamp
    elif lib == "pamqp":
        m, p, body = method_f, header_f.properties, body_f.value
        ts = p.timestamp
    else:
        m, p, body = method_f.method, header_f.properties, bytes(body_f.payload)
        ts = p.timestamp
    if lib == "amqgen":
        sig = (m.CLASS_ID, m.METHOD_ID)
    elif lib == "pika":
        sig = (m.INDEX >> 16, m.INDEX & 0xFFFF)
    else:
        sig = (m.index >> 16, m.index & 0xFFFF)
    if sig == (60, 40):
        args = [0, m.exchange, m.routing_key, m.mandatory, m.immediate]
    else:
        args = [m.consumer_tag, m.delivery_tag, m.redelivered, m.exchange, m.routing_key]
    return {"sig": sig, "args": args,
            "props": (p.content_type, p.delivery_mode, p.headers, p.message_id, _ts(ts)), "body": bytes(body)}


def verify(cases: list[tuple[str, Case]]) -> None:
    """Fail loudly unless every library produced the same octets / values for every case."""
    (n1, c1), (n2, c2), (n3, c3), (n4, c4), (n5, c5) = cases
    enc = {lib: c1[lib]() for lib in LIBS}
    assert len(set(enc.values())) == 1, f"{n1}: libraries wrote different octets: { {k: len(v) for k, v in enc.items()} }"
    for name, case in ((n2, c2), (n3, c3)):
        views = {lib: _msg_view(lib, case[lib]()) for lib in LIBS}
        ref = views["pika"]
        for lib, v in views.items():
            assert v == ref, f"{name}: {lib} decoded {v} != pika {ref}"
    starts: dict[str, tuple[Any, ...]] = {}
    for lib in LIBS:
        r = c4[lib]()
        if lib == "py-amqp":
            a = r[1]
            starts[lib] = (a[0], a[1], a[2], _s(a[3]), _s(a[4]))
        elif lib == "pamqp":
            m = r[0]
            starts[lib] = (m.version_major, m.version_minor, m.server_properties, _s(m.mechanisms), _s(m.locales))
        else:
            m = r[0].method
            starts[lib] = (m.version_major, m.version_minor, m.server_properties, _s(m.mechanisms), _s(m.locales))
    for lib, start in starts.items():
        assert start == (0, 9, SERVER_PROPERTIES, "AMQPLAIN PLAIN", "en_US"), f"{n4}: {lib} decoded {start}"
    decl_bytes = set()
    for lib in LIBS:
        data, dec = c5[lib]()
        decl_bytes.add(data)
        if lib == "py-amqp":
            q, durable, args = dec[1], dec[3], dec[7]
        elif lib == "pika":
            m = dec[1].method
            q, durable, args = m.queue, m.durable, m.arguments
        elif lib == "pamqp":
            m = dec[2]
            q, durable, args = m.queue, m.durable, m.arguments
        else:
            m = dec[0].method
            q, durable, args = m.queue, m.durable, m.arguments
        assert (q, durable, args) == (QUEUE, True, QUEUE_ARGS), f"{n5}: {lib} round trip gave {(q, durable, args)}"
    assert len(decl_bytes) == 1, f"{n5}: libraries wrote different octets"


# -- timing -----------------------------------------------------------------------------------------------
def ops_per_second(fn: Callable[[], Any], repeat: int = 5) -> float:
    """Best of ``repeat`` runs, each long enough (timeit's autorange, >= 0.2 s) to be stable."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    best = min(timer.repeat(repeat=repeat, number=number))
    return number / best


def machine_note() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = ", ".join(f"{d} {metadata.version(d)}" for d in ("pika", "pamqp", "amqp"))
    return (f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, "
            f"CPython {platform.python_version()}; {versions}")


def table(results: dict[str, dict[str, float]]) -> str:
    head = "| case | amqgen | pika | pamqp | py-amqp | fastest peer | amqgen / fastest |"
    rows = [head, "|---|---:|---:|---:|---:|---|---:|"]
    for name, r in results.items():
        fastest = max(PEERS, key=lambda p: r[p])
        ratio = r["amqgen"] / r[fastest]
        rows.append(f"| {name} | " + " | ".join(f"{r[lib]:,.0f}" for lib in LIBS)
                    + f" | {fastest} | {ratio:.2f}x |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description="amqgen Python codec vs pika / pamqp / py-amqp")
    ap.add_argument("--spec", type=Path, default=DEFAULT_SPEC)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--readme", type=Path, help="also write the table between the bench markers of this file")
    ap.add_argument("--mypyc", action="store_true", help="compile the generated table.py with mypyc first")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="amqgen-bench-") as tmp:
        ours = render(args.spec, Path(tmp), args.mypyc)
        cases = build_cases(ours)
        verify(cases)
        print("verified: all libraries encode the same octets and decode the same values", flush=True)
        results: dict[str, dict[str, float]] = {}
        for name, case in cases:
            results[name] = {lib: ops_per_second(case[lib], args.repeat) for lib in LIBS}
            print(f"  {name}: " + ", ".join(f"{lib} {v:,.0f}/s" for lib, v in results[name].items()), flush=True)
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    out = table(results)
    note = f"Run {when} on {machine_note()}." + (" amqgen's table.py compiled with mypyc." if args.mypyc else "")
    print()
    print(out)
    print()
    print(note)
    if args.readme:
        text = args.readme.read_text()
        tag = "bench-mypyc" if args.mypyc else "bench"
        start, end = f"<!-- {tag}:start -->", f"<!-- {tag}:end -->"
        if start not in text or end not in text:
            sys.exit(f"bench: {args.readme} has no {start} ... {end} section")
        before, rest = text.split(start, 1)
        _, after = rest.split(end, 1)
        block = f"{start}\nops/s, higher is better (ratio: amqgen over the fastest peer; goal >= 2x).\n\n{out}\n\n{note}\n{end}"
        args.readme.write_text(before + block + after)
        print(f"wrote {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
