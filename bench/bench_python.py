#!/usr/bin/env python3
"""Compare the generated 0-9-1 codec (amqgen) with pika, pamqp and py-amqp (`amqp` on PyPI).

Run:  .venv/bin/python bench/bench_python.py [--spec FILE] [--cases 2,7] [--readme bench/README.md]
      .venv/bin/python bench/bench_python.py --instructions [--cases 6,7]   # callgrind counts

Eight cases, each library on its leanest real path, on the same values and the same octets:
  1. encode basic.publish + content header (content-type, delivery-mode, 3-entry headers table,
     message-id, timestamp) + 128-byte body, as complete wire frames;
  2. decode those three frames;
  3. decode basic.deliver + content header + 1 KiB body;
  4. decode a RabbitMQ-like connection.start (server-properties with a nested capabilities table);
  5. encode and decode queue.declare with an arguments table;
  6. decode that queue.declare frame alone;
  7. decode one basic.ack frame;
  8. decode a buffer of 100 frames: 25 x (basic.deliver + header + 64-byte body, basic.ack).
Decoding starts from nothing on every operation (no reader kept between operations). Before
timing, every library's output is checked: encoders must write the same octets, decoders give the
same values. Reported: ops/s per library and amqgen's ratio to the fastest peer.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import importlib
import itertools
import operator
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
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
import pamqp.body
import pamqp.commands
import pamqp.frame
import pamqp.header
import pika.frame
import pika.spec
from bench_common import cpu_model, write_block

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SPEC = ROOT / "spec" / "amqp0-9-1.extended.xml"
PACKAGE = "amqp091x"
LIBS = ("amqgen", "pika", "pamqp", "py-amqp")
PEERS = LIBS[1:]
#: what is timed for amqgen besides the main column: a fresh FrameReader fed the whole buffer
READER = "amqgen FrameReader"
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
BODY_64 = bytes(range(64, 128))
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
MIXED_MESSAGES = 25  # case 8: this many (deliver + header + body, ack) groups: 100 frames

#: per method: the argument names compared, and py-amqp's argument format with the positions of
#: those names in what `amqp.serialization.loads` returns (it also returns reserved fields)
ARGS: dict[tuple[int, int], tuple[tuple[str, ...], str, tuple[int, ...]]] = {
    (10, 10): (("version_major", "version_minor", "server_properties", "mechanisms", "locales"), "ooFSS",
               (0, 1, 2, 3, 4)),
    (50, 10): (("queue", "passive", "durable", "exclusive", "auto_delete", "nowait", "arguments"), "BsbbbbbF",
               (1, 2, 3, 4, 5, 6, 7)),
    (60, 40): (("exchange", "routing_key", "mandatory", "immediate"), "Bssbb", (1, 2, 3, 4)),
    (60, 60): (("consumer_tag", "delivery_tag", "redelivered", "exchange", "routing_key"), "sLbss", (0, 1, 2, 3, 4)),
    (60, 80): (("delivery_tag", "multiple"), "Lb", (0, 1)),
}
AMQP_ARGSIG = {sig: fmt for sig, (_, fmt, _) in ARGS.items()}
OUR_NAMES = {"nowait": "no_wait"}  # the spec's "no-wait"; pika and pamqp write nowait


def render(spec: Path, out: Path, mypyc: bool) -> None:
    cmd = [sys.executable, "-m", "amqgen", "render", "--lang", "python", "--spec", str(spec),
           "--package", PACKAGE, "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode != 0:
        sys.exit(f"bench: amqgen render failed: {proc.stderr.strip()}")
    if mypyc:  # an experiment (see README): the table codec compiled to a C extension
        proc = subprocess.run([sys.executable, "-m", "mypyc", f"{PACKAGE}/table.py"], capture_output=True, text=True,
                              cwd=out, check=False)
        if proc.returncode != 0:
            sys.exit(f"bench: mypyc failed: {proc.stdout.strip()[-2000:]} {proc.stderr.strip()[-2000:]}")


def load(out: Path) -> ModuleType:
    sys.path.insert(0, str(out))
    pkg = importlib.import_module(PACKAGE)
    for sub in ("frames", "methods", "properties", "table"):
        importlib.import_module(f"{PACKAGE}.{sub}")
    return pkg


# -- each peer's leanest decoding loop over a buffer of frames ----------------------------------------
_frame_size = struct.Struct(">I").unpack_from


def pika_decoder(wire: bytes) -> Callable[[], Any]:
    """pika.frame.decode_frame in a loop, handed exactly one frame each time (pika's connection
    hands it the whole rest of its buffer, a copy that grows with the buffer)."""
    decode_frame = pika.frame.decode_frame
    end = len(wire)

    def run() -> Any:
        frames, off = [], 0
        while off < end:
            used, frame = decode_frame(wire[off:off + 8 + _frame_size(wire, off + 3)[0]])
            frames.append(frame)
            off += used
        return frames
    return run


def pamqp_decoder(wire: bytes) -> Callable[[], Any]:
    """pamqp.frame.unmarshal in a loop, handed exactly one frame each time."""
    unmarshal = pamqp.frame.unmarshal
    end = len(wire)

    def run() -> Any:
        frames, off = [], 0
        while off < end:
            used, _channel, frame = unmarshal(wire[off:off + 8 + _frame_size(wire, off + 3)[0]])
            frames.append(frame)
            off += used
        return frames
    return run


def amqp_decoder(wire: bytes) -> Callable[[], Any]:
    """py-amqp: frames split by a minimal loop (type, channel, size; frame-end checked), handed
    to `amqp.method_framing.frame_handler` (py-amqp's inbound path: it assembles content header
    and body into a Message and decodes the properties), and the method arguments decoded with
    `amqp.serialization.loads`, as `Channel.dispatch_method` does. No transport emulation."""
    loads, unpack_from = amqp.serialization.loads, struct.unpack_from
    got: list[Any] = []
    append = got.append
    argsig = AMQP_ARGSIG

    def callback(channel: int, method_sig: Any, buf: Any, msg: Any) -> None:
        append((method_sig, loads(argsig[method_sig], buf, 4)[0], msg))

    handler = amqp.method_framing.frame_handler(
        SimpleNamespace(bytes_recv=0), callback,
        # py-amqp, a client, never expects to receive basic.publish with content; the bench does
        content_methods=frozenset([(60, 40), (60, 50), (60, 60), (60, 71)]),
    )
    end = len(wire)

    def run() -> Any:
        got.clear()
        off = 0
        while off < end:
            frame_type, channel, size = unpack_from(">BHI", wire, off)
            stop = off + 7 + size
            if wire[stop] != 206:
                raise ValueError("bad frame-end")
            handler((frame_type, channel, wire[off + 7:stop]))
            off = stop + 1
        return got
    return run


# -- cases ---------------------------------------------------------------------------------------------
Case = dict[str, Callable[[], Any]]


def _mixed_wire() -> bytes:
    """Case 8's buffer, written by pika: what a consumer with publisher confirms (or the traffic
    pipeline) reads."""
    props = pika.spec.BasicProperties(content_type=CONTENT_TYPE, delivery_mode=2, headers=HEADERS,
                                      message_id=MESSAGE_ID, timestamp=TIMESTAMP)
    parts = []
    for i in range(MIXED_MESSAGES):
        tag = DELIVERY_TAG + i
        parts.append(pika.frame.Method(1, pika.spec.Basic.Deliver(
            consumer_tag=CONSUMER_TAG, delivery_tag=tag, redelivered=bool(i % 2), exchange=EXCHANGE,
            routing_key=f"{ROUTING_KEY}.{i}")).marshal())
        parts.append(pika.frame.Header(1, len(BODY_64), props).marshal())
        parts.append(pika.frame.Body(1, BODY_64).marshal())
        parts.append(pika.frame.Method(1, pika.spec.Basic.Ack(delivery_tag=tag, multiple=i % 5 == 0)).marshal())
    return b"".join(parts)


def build_cases(ours: ModuleType) -> list[tuple[str, Case]]:
    fr, me, pr = ours.frames, ours.methods, ours.properties
    FrameReader = fr.FrameReader
    decode_frames = fr.decode_frames
    sink: list[bytes] = []
    conn = SimpleNamespace(frame_max=FRAME_MAX, bytes_sent=0, bytes_recv=0)
    amqp_write = amqp.method_framing.frame_writer(conn, SimpleNamespace(write=lambda d: sink.append(bytes(d))))
    amqp_dumps = amqp.serialization.dumps
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
        sink.clear()
        msg = Message(BODY_128, content_type=CONTENT_TYPE, delivery_mode=2, application_headers=HEADERS,
                      message_id=MESSAGE_ID, timestamp=TIMESTAMP)
        amqp_write(1, 1, amqp.spec.Basic.Publish, amqp_dumps("Bssbb", (0, EXCHANGE, ROUTING_KEY, False, False)), msg)
        return sink[0]

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
    declare_wire = pika.frame.Method(1, pika.spec.Queue.Declare(queue=QUEUE, durable=True,
                                                                arguments=QUEUE_ARGS)).marshal()
    ack_wire = pika.frame.Method(1, pika.spec.Basic.Ack(delivery_tag=DELIVERY_TAG, multiple=True)).marshal()
    mixed_wire = _mixed_wire()

    # decoding: amqgen's stateless decode_frames (and, for the second column, a fresh reader)
    def ours_decoder(wire: bytes) -> Callable[[], Any]:
        def run() -> Any:
            return decode_frames(wire, 0, FRAME_MAX)
        return run

    def reader_decoder(wire: bytes) -> Callable[[], Any]:
        def run() -> Any:
            return FrameReader(FRAME_MAX).feed(wire)
        return run

    # (5) queue.declare round trip
    def ours_declare() -> Any:
        # Method.encode_frame(channel): the generated package's one-call method frame (the same
        # octets as frames.encode_frame(MethodFrame(...)), without building the NamedTuple).
        data = me.QueueDeclare(queue=QUEUE, durable=True, arguments=QUEUE_ARGS).encode_frame(1)
        return data, decode_frames(data, 0, FRAME_MAX)

    def reader_declare() -> Any:
        data = me.QueueDeclare(queue=QUEUE, durable=True, arguments=QUEUE_ARGS).encode_frame(1)
        return data, FrameReader(FRAME_MAX).feed(data)

    probe = me.QueueDeclare(queue=QUEUE, durable=True, arguments=QUEUE_ARGS)
    if probe.encode_frame(1) != fr.encode_frame(fr.MethodFrame(1, probe)):
        sys.exit("bench: Method.encode_frame and frames.encode_frame disagree")

    def pika_declare() -> Any:
        data = pika.frame.Method(1, pika.spec.Queue.Declare(queue=QUEUE, durable=True, arguments=QUEUE_ARGS)).marshal()
        return data, [pika.frame.decode_frame(data)[1]]

    def pamqp_declare() -> Any:
        data = pamqp.frame.marshal(pamqp.commands.Queue.Declare(queue=QUEUE, durable=True, arguments=QUEUE_ARGS), 1)
        return data, [pamqp.frame.unmarshal(data)[2]]

    declare_read = amqp_decoder(declare_wire)

    def amqp_declare() -> Any:
        sink.clear()
        amqp_write(1, 1, amqp.spec.Queue.Declare,
                   amqp_dumps("BsbbbbbF", (0, QUEUE, False, True, False, False, False, QUEUE_ARGS)), None)
        data = sink[0]
        if data != declare_wire:  # the reader was built for these octets
            raise AssertionError("py-amqp wrote another queue.declare")
        return data, declare_read()

    def decoders(wire: bytes) -> Case:
        return {"amqgen": ours_decoder(wire), READER: reader_decoder(wire), "pika": pika_decoder(wire),
                "pamqp": pamqp_decoder(wire), "py-amqp": amqp_decoder(wire)}

    return [
        ("1 encode basic.publish+header+128B body", {
            "amqgen": ours_encode_publish, "pika": pika_encode_publish,
            "pamqp": pamqp_encode_publish, "py-amqp": amqp_encode_publish}),
        ("2 decode basic.publish+header+128B body", decoders(publish_wire)),
        ("3 decode basic.deliver+header+1KiB body", decoders(deliver_wire)),
        ("4 decode connection.start (RabbitMQ-like)", decoders(start_wire)),
        ("5 encode+decode queue.declare w/ arguments", {
            "amqgen": ours_declare, READER: reader_declare, "pika": pika_declare, "pamqp": pamqp_declare,
            "py-amqp": amqp_declare}),
        ("6 decode queue.declare w/ arguments", decoders(declare_wire)),
        ("7 decode basic.ack", decoders(ack_wire)),
        ("8 decode 100 frames: 25x(deliver+header+64B body, ack)", decoders(mixed_wire)),
    ]


# -- checking that every library did the same work ------------------------------------------------------
def _ts(v: Any) -> int:
    return int(v.timestamp()) if isinstance(v, dt.datetime) else int(v)


def _s(v: Any) -> Any:
    return v.decode() if isinstance(v, (bytes, bytearray)) else v


def _props(p: Any) -> tuple[Any, ...]:
    if isinstance(p, dict):  # py-amqp
        return (p.get("content_type"), p.get("delivery_mode"), p.get("application_headers"), p.get("message_id"),
                _ts(p["timestamp"]))
    return (p.content_type, p.delivery_mode, p.headers, p.message_id, _ts(p.timestamp))


def messages(lib: str, result: Any) -> list[tuple[Any, ...]]:
    """What a decode result says, the same way for every library: per method its (class id,
    method id), compared arguments, and for content its five properties and the whole body."""
    out: list[tuple[Any, ...]] = []
    if lib == "py-amqp":
        for sig, args, msg in result:
            names, _, pos = ARGS[sig]
            vals = tuple(_s(args[i]) for i in pos)
            content = None if msg is None else (msg.body_size, _props(msg.properties), bytes(msg.body))
            out.append((sig, vals, content))
        return out
    items: list[tuple[str, Any]] = []
    if lib in ("amqgen", READER):
        frames = result[0] if lib == "amqgen" else result  # decode_frames gives (frames, end)
        for f in frames:
            kind = type(f).__name__
            if kind == "MethodFrame":
                items.append(("method", f.method))
            elif kind == "HeaderFrame":
                items.append(("header", (f.body_size, f.properties)))
            else:
                items.append(("body", bytes(f.payload)))
    elif lib == "pika":
        for f in result:
            if isinstance(f, pika.frame.Method):
                items.append(("method", f.method))
            elif isinstance(f, pika.frame.Header):
                items.append(("header", (f.body_size, f.properties)))
            else:
                items.append(("body", bytes(f.fragment)))
    else:
        for f in result:
            if isinstance(f, pamqp.header.ContentHeader):
                items.append(("header", (f.body_size, f.properties)))
            elif isinstance(f, pamqp.body.ContentBody):
                items.append(("body", bytes(f.value)))
            else:
                items.append(("method", f))
    pending: list[Any] = []
    for kind, value in items:
        if kind == "method":
            m = value
            if lib in ("amqgen", READER):
                sig = (m.CLASS_ID, m.METHOD_ID)
            elif lib == "pika":
                sig = (m.INDEX >> 16, m.INDEX & 0xFFFF)
            else:
                sig = (m.index >> 16, m.index & 0xFFFF)
            names = ARGS[sig][0]
            if lib in ("amqgen", READER):
                names = tuple(OUR_NAMES.get(n, n) for n in names)
            pending = [sig, tuple(_s(getattr(m, n)) for n in names), None]
            out.append(tuple(pending))
        elif kind == "header":
            size, p = value
            pending[2] = [size, _props(p), b""]
        else:
            pending[2][2] += value
            if len(pending[2][2]) == pending[2][0]:
                out[-1] = (pending[0], pending[1], tuple(pending[2]))
    return out


def expected(name: str) -> list[tuple[Any, ...]]:
    """Case by case, what every decoder must report: written out from the values, not taken from
    any library's output."""
    props = (CONTENT_TYPE, 2, HEADERS, MESSAGE_ID, TIMESTAMP)
    if name.startswith("2"):
        return [((60, 40), (EXCHANGE, ROUTING_KEY, False, False), (len(BODY_128), props, BODY_128))]
    if name.startswith("3"):
        return [((60, 60), (CONSUMER_TAG, DELIVERY_TAG, True, EXCHANGE, ROUTING_KEY), (len(BODY_1K), props, BODY_1K))]
    if name.startswith("4"):
        return [((10, 10), (0, 9, SERVER_PROPERTIES, "AMQPLAIN PLAIN", "en_US"), None)]
    if name.startswith(("5", "6")):
        return [((50, 10), (QUEUE, False, True, False, False, False, QUEUE_ARGS), None)]
    if name.startswith("7"):
        return [((60, 80), (DELIVERY_TAG, True), None)]
    out: list[tuple[Any, ...]] = []
    for i in range(MIXED_MESSAGES):
        tag = DELIVERY_TAG + i
        out.append(((60, 60), (CONSUMER_TAG, tag, bool(i % 2), EXCHANGE, f"{ROUTING_KEY}.{i}"),
                    (len(BODY_64), props, BODY_64)))
        out.append(((60, 80), (tag, i % 5 == 0), None))
    return out


def verify(cases: list[tuple[str, Case]]) -> None:
    """Fail loudly unless every library wrote the same octets and decoded the same values."""
    for name, case in cases:
        if name.startswith("1"):
            enc = {lib: fn() for lib, fn in case.items()}
            assert len(set(enc.values())) == 1, f"{name}: different octets: { {k: len(v) for k, v in enc.items()} }"
            continue
        want = expected(name)
        wires = set()
        for lib, fn in case.items():
            result = fn()
            if name.startswith("5"):
                data, result = result
                wires.add(data)
            got = messages(lib, result)
            assert got == want, f"{name}: {lib} decoded {got[:2]} ... != {want[:2]} ..."
        assert len(wires) <= 1, f"{name}: libraries wrote different octets"


# -- timing -----------------------------------------------------------------------------------------------
def ops_per_second(fn: Callable[[], Any], repeat: int = 5) -> float:
    """Best of ``repeat`` runs, each long enough (timeit's autorange, >= 0.2 s) to be stable."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    best = min(timer.repeat(repeat=repeat, number=number))
    return number / best


def machine_note() -> str:
    cpu = cpu_model(platform.processor() or platform.machine())
    versions = ", ".join(f"{d} {metadata.version(d)}" for d in ("pika", "pamqp", "amqp"))
    return (f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, "
            f"CPython {platform.python_version()}; {versions}")


def load_note() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def table(results: dict[str, dict[str, float]], unit: str = "ops/s") -> str:
    """Higher is better for ops/s; for instructions per operation lower is better."""
    ops = unit == "ops/s"
    head = f"| case | amqgen | pika | pamqp | py-amqp | fastest peer | amqgen / fastest | {READER} / fastest |"
    rows = [head, "|---|---:|---:|---:|---:|---|---:|---:|"]
    for name, r in results.items():
        fastest = (max if ops else min)(PEERS, key=lambda p: r[p])
        ratio = r["amqgen"] / r[fastest] if ops else r[fastest] / r["amqgen"]
        reader = "" if READER not in r else (
            f"{r[READER] / r[fastest]:.2f}x" if ops else f"{r[fastest] / r[READER]:.2f}x")
        rows.append(f"| {name} | " + " | ".join(f"{r[lib]:,.0f}" for lib in LIBS)
                    + f" | {fastest} | {ratio:.2f}x | {reader} |")
    return "\n".join(rows)


# -- instruction counts (callgrind) -----------------------------------------------------------------------
def child(out: Path, case_no: int, lib: str, iterations: int) -> int:
    """Run one case's closure ``iterations`` times inside deque.extend, which callgrind is told to
    count alone (--toggle-collect): imports and set-up stay out of the count."""
    cases = build_cases(load(out))
    fn = cases[case_no - 1][1][lib]
    fn()  # warm up: caches, specialised bytecode
    collections.deque(map(operator.call, itertools.repeat(fn, iterations)), maxlen=0)
    return 0


def instructions(out: Path, case_no: int, lib: str, fn: Callable[[], Any]) -> float:
    """Instructions per operation, from one callgrind run of about 20 ms worth of operations."""
    start = time.perf_counter()
    fn()
    iterations = max(20, min(2000, int(0.02 / max(time.perf_counter() - start, 1e-7))))
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "--collect-atstart=no",
           "--toggle-collect=deque_extend", sys.executable, __file__,
           "--child", str(out), str(case_no), lib, str(iterations)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or not found or int(found.group(1)) == 0:
        sys.exit(f"bench: callgrind counted nothing (a Python without symbols?): {proc.stderr[-2000:]}")
    return int(found.group(1)) / iterations


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, out, case_no, lib, n = sys.argv
        return child(Path(out), int(case_no), lib, int(n))
    ap = argparse.ArgumentParser(description="amqgen Python codec vs pika / pamqp / py-amqp")
    ap.add_argument("--spec", type=Path, default=DEFAULT_SPEC)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cases", help="comma-separated case numbers (default: all)")
    ap.add_argument("--readme", type=Path, help="also write the table between the bench markers of this file")
    ap.add_argument("--mypyc", action="store_true", help="compile the generated table.py with mypyc first")
    ap.add_argument("--instructions", action="store_true",
                    help="count instructions per operation with callgrind instead of timing")
    args = ap.parse_args()
    if args.instructions and not shutil.which("valgrind"):
        sys.exit("bench: --instructions needs valgrind (Debian package valgrind)")
    with tempfile.TemporaryDirectory(prefix="amqgen-bench-") as tmp:
        render(args.spec, Path(tmp), args.mypyc)
        cases = build_cases(load(Path(tmp)))
        verify(cases)
        print("verified: all libraries encode the same octets and decode the same values", flush=True)
        wanted = {int(c) for c in args.cases.split(",")} if args.cases else set(range(1, len(cases) + 1))
        load_before = load_note()
        results: dict[str, dict[str, float]] = {}
        for no, (name, case) in enumerate(cases, 1):
            if no not in wanted:
                continue
            if args.instructions:
                results[name] = {lib: instructions(Path(tmp), no, lib, fn) for lib, fn in case.items()}
                print(f"  {name}: " + ", ".join(f"{lib} {v:,.0f} Ir/op" for lib, v in results[name].items()),
                      flush=True)
            else:
                results[name] = {lib: ops_per_second(fn, args.repeat) for lib, fn in case.items()}
                print(f"  {name}: " + ", ".join(f"{lib} {v:,.0f}/s" for lib, v in results[name].items()),
                      flush=True)
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    unit = "Ir/op" if args.instructions else "ops/s"
    out = table(results, unit)
    note = (f"Run {when} on {machine_note()}. Load average (1/5/15 min) {load_before} before, "
            f"{load_note()} after." + (" amqgen's table.py compiled with mypyc." if args.mypyc else ""))
    print()
    print(out)
    print()
    print(note)
    if args.readme:
        if args.instructions:
            tag, head = "bench-instructions", (
                "Instructions per operation (callgrind), lower is better; ratio: the peer with the fewest "
                "instructions over amqgen (goal >= 2x).")
        else:
            tag = "bench-mypyc" if args.mypyc else "bench"
            head = "ops/s, higher is better (ratio: amqgen over the fastest peer; goal >= 2x)."
        write_block(args.readme, tag, f"{head}\n\n{out}\n\n{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
