#!/usr/bin/env python3
"""Compare the generated AMQP 1.0 Python codec (amqgen, `render --lang python --spec 1-0`) with Qpid Proton's
Python binding (python-qpid-proton: its C codec called from Python) and Azure's pure-Python stack
(azure-servicebus's `_pyamqp`).

Run:  .venv/bin/python bench/bench_amqp10.py [--readme bench/README.md] [--rounds 11] [--quick]
      .venv/bin/python bench/bench_amqp10.py --callgrind [--runs 200,1000] [--readme bench/README.md]
      (instructions per operation with callgrind instead of CPU time: see matrix)

The cases, the same octets and values on every side (``matrix``): decode and encode an `open` frame
(RabbitMQ-like: container-id, hostname, max-frame-size, channel-max, idle-time-out, offered capabilities,
properties), and a `transfer` frame carrying a message (header, properties, application-properties, a data body of
100 B, 1 KiB or 64 KiB). Proton's side: the 8-octet frame header by `struct`, the performative by `proton.Data`, the
message by `proton.Message`; Azure's: its `_decode` / `_encode`, its strings decoded to str and its bodies copied to
bytes as ours are. Before anything is measured, each side's results are checked to be the same values (decode) or
to decode to the same values in the other library (encode).

Measured: CPU time (``time.process_time``) per operation, in interleaved rounds (``bench_common.interleaved``:
every library runs each case for about 0.1 s of CPU in turn, the order rotated per round); reported per case: the
median per library, and each peer's time over ours as the median of the rounds' ratios with the lowest and
highest round (above 1: amqgen ahead).
"""

from __future__ import annotations

import argparse
import collections
import importlib
import itertools
import operator
import platform
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import proton
from proton import Data, Described, Message, symbol, uint, ulong, ushort

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import cpu_model, interleaved, ratios, write_block

ROOT = Path(__file__).resolve().parent.parent
HEAD = struct.Struct(">IBBH")


def render(out: Path) -> Any:
    subprocess.run([sys.executable, "-m", "amqgen", "render", "--lang", "python", "--spec", "1-0", "--out", str(out),
                    "--package", "amqp10bench"], check=True, cwd=ROOT, capture_output=True)
    return load(out)


def load(out: Path) -> Any:
    sys.path.insert(0, str(out))
    return importlib.import_module("amqp10bench")


def cases(a: Any) -> dict[str, Any]:
    open_ = a.Open(container_id="rabbit@bench-host-01", hostname="localhost", max_frame_size=131072,
                   channel_max=65535, idle_time_out=60000,
                   offered_capabilities=["LINK_PAIR_V1_0", "ANONYMOUS-RELAY"],
                   properties={a.Symbol("product"): "RabbitMQ", a.Symbol("version"): "3.10.8",
                               a.Symbol("platform"): "Erlang/OTP 25"})
    msg = a.Message(
        [a.Data(bytes(range(256)) * 4)],
        header=a.Header(durable=True, priority=7),
        properties=a.Properties(message_id="msg-000123", subject="orders.created", content_type="application/json",
                                correlation_id=uuid.UUID(int=0x1234), creation_time=1700000000123),
        application_properties={"tenant": "acme", "attempt": 3, "urgent": True, "score": 0.5},
    )
    transfer = a.Transfer(handle=0, delivery_id=4711, delivery_tag=b"\x00\x00\x12\x67", message_format=0,
                          settled=False)
    return {"open": open_, "message": msg, "transfer": transfer,
            "open_frame": a.encode_frame(open_),
            "transfer_frame": a.encode_frame(transfer, 1, msg.encode())}


# -- Proton's side ---------------------------------------------------------------------------------------------
def proton_performative(frame: bytes) -> Any:
    size, doff, _, channel = HEAD.unpack_from(frame)
    d = Data()
    n = d.decode(frame[doff * 4:size])
    d.rewind()
    d.next()
    return channel, d.get_object(), frame[doff * 4 + n:size]


def proton_decode_open(frame: bytes) -> Any:
    return proton_performative(frame)[1]


def proton_message_values(m: Message) -> tuple[Any, ...]:
    # Proton hands a data body back as a view into the message, freed with it: copied, as ours is bytes
    return (m.durable, m.priority, m.id, m.subject, m.content_type, m.correlation_id, m.creation_time,
            m.properties, bytes(m.body))


def proton_decode_transfer(frame: bytes) -> Any:
    _, perf, payload = proton_performative(frame)
    m = Message()
    m.decode(payload)
    return perf, proton_message_values(m)


def proton_open_object() -> Any:
    return Described(ulong(0x10), ["rabbit@bench-host-01", "localhost", uint(131072), ushort(65535), uint(60000),
                                   None, None,
                                   proton.Array(proton.UNDESCRIBED, Data.SYMBOL, symbol("LINK_PAIR_V1_0"),
                                                symbol("ANONYMOUS-RELAY")),
                                   None, {symbol("product"): "RabbitMQ", symbol("version"): "3.10.8",
                                          symbol("platform"): "Erlang/OTP 25"}])


def proton_frame(obj: Any, channel: int, payload: bytes = b"") -> bytes:
    d = Data()
    d.put_object(obj)
    body = d.encode() + payload
    return HEAD.pack(8 + len(body), 2, 0, channel) + body


def proton_encode_open() -> bytes:
    return proton_frame(proton_open_object(), 0)


def proton_encode_transfer(body: bytes = bytes(range(256)) * 4) -> bytes:
    m = Message(body=body, durable=True, priority=7, id="msg-000123", subject="orders.created",
                content_type="application/json", correlation_id=uuid.UUID(int=0x1234),
                creation_time=1700000000.123,
                properties={"tenant": "acme", "attempt": 3, "urgent": True, "score": 0.5})
    m.inferred = True  # a binary body goes out as a data section, as ours does
    transfer = Described(ulong(0x14), [uint(0), uint(4711), b"\x00\x00\x12\x67", uint(0), False])
    return proton_frame(transfer, 1, m.encode())


# -- ours ------------------------------------------------------------------------------------------------------
def ours(a: Any, c: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    decode_frames, Message10 = a.decode_frames, a.Message

    def decode_open() -> Any:
        return decode_frames(c["open_frame"])[0].performative

    def decode_transfer() -> Any:
        f = decode_frames(c["transfer_frame"])[0]
        return f.performative, Message10.decode(f.payload)

    def encode_open() -> bytes:
        return a.encode_frame(c["open"])  # type: ignore[no-any-return]

    def encode_transfer() -> bytes:
        return a.encode_frame(c["transfer"], 1, c["message"].encode())  # type: ignore[no-any-return]

    return {"decode open": decode_open, "decode transfer + message": decode_transfer,
            "encode open": encode_open, "encode transfer + message": encode_transfer}


def check(a: Any, c: dict[str, Any]) -> None:
    """Equal work: both sides give the same values, and each side's octets read to them in the other library."""
    theirs = proton_decode_open(c["open_frame"])
    mine = ours(a, c)["decode open"]()
    assert mine == c["open"]
    assert theirs.descriptor == 0x10 and theirs.value[0] == mine.container_id and theirs.value[2] == 131072
    assert a.decode_frames(proton_encode_open())[0].performative == c["open"]
    perf, values = proton_decode_transfer(c["transfer_frame"])
    assert perf.value[1] == 4711 and values[2] == "msg-000123" and values[8] == bytes(range(256)) * 4
    assert values[7] == {"tenant": "acme", "attempt": 3, "urgent": True, "score": 0.5}
    f = a.decode_frames(proton_encode_transfer())[0]
    got = a.Message.decode(f.payload)
    assert f.performative == c["transfer"] and got.body == c["message"].body
    assert got.application_properties == c["message"].application_properties
    assert got.properties.message_id == "msg-000123" and got.header.priority == 7
    assert proton_decode_open(ours(a, c)["encode open"]()).value[9] == theirs.value[9]


# -- Azure's pure-Python stack (azure-servicebus's _pyamqp), a bench-only dependency (the `bench` extra) ----------
def azure_side(a: Any, c: dict[str, Any]) -> dict[str, Callable[..., Any]]:
    """Azure's _pyamqp: decode / encode an open, decode a transfer frame (any body), encode a transfer + message.

    Equal work: Azure's decoder leaves strings and symbols as bytes, ours gives str; so Azure's side also decodes
    the UTF-8 of every string field it returns (the open's container-id, hostname, capabilities and property
    keys and values; the message's message-id, subject, content-type and application-property keys and values).
    Azure's decoder takes the frame body after the 8-octet header, as ours reads the header too (ours does more).
    """
    from azure.servicebus._pyamqp import _decode as adec
    from azure.servicebus._pyamqp import _encode as aenc
    from azure.servicebus._pyamqp import performatives as aperf
    from azure.servicebus._pyamqp.message import Header as AHeader
    from azure.servicebus._pyamqp.message import Message as AMessage
    from azure.servicebus._pyamqp.message import Properties as AProps

    def s(x: Any) -> Any:
        return x.decode() if isinstance(x, (bytes, memoryview)) else x

    def decode_open(frame: bytes) -> Any:
        _, f = adec.decode_frame(memoryview(frame)[8:])
        f[0], f[1] = s(f[0]), s(f[1])
        f[7] = [s(x) for x in f[7]] if isinstance(f[7], list) else s(f[7])
        f[9] = {s(k): s(v) for k, v in f[9].items()}
        return f

    def decode_transfer(frame: bytes) -> Any:
        _, f = adec.decode_frame(memoryview(frame)[8:])
        m = adec.decode_payload(f[-1])
        p = m.properties
        props = (s(p[0]), s(p[3]), s(p[6]))
        app = {s(k): s(v) for k, v in m.application_properties.items()}
        data = [bytes(d) for d in m.data]  # ours gives bytes; Azure a view into the frame
        return f, m, props, app, data

    azure_open = aperf.OpenFrame(container_id="rabbit@bench-host-01", hostname="localhost", max_frame_size=131072,
                                 channel_max=65535, idle_timeout=60000,
                                 offered_capabilities=["LINK_PAIR_V1_0", "ANONYMOUS-RELAY"],
                                 outgoing_locales=None, incoming_locales=None, desired_capabilities=None,
                                 properties={"product": "RabbitMQ", "version": "3.10.8", "platform": "Erlang/OTP 25"})

    def encode_open() -> bytes:
        h, body = aenc.encode_frame(azure_open)
        return h + b"\x00\x00" + bytes(body or b"")  # Azure's transport adds the channel's two octets

    def message(body: bytes) -> Any:
        return AMessage(header=AHeader(durable=True, priority=7),
                        properties=AProps(message_id="msg-000123", subject="orders.created",
                                          content_type="application/json", correlation_id=uuid.UUID(int=0x1234),
                                          creation_time=1700000000123),
                        application_properties={"tenant": "acme", "attempt": 3, "urgent": True, "score": 0.5},
                        data=[body])

    def encode_transfer(amsg: Any) -> bytes:
        payload = bytearray()
        aenc.encode_payload(payload, amsg)
        t = aperf.TransferFrame(handle=0, delivery_id=4711, delivery_tag=b"\x00\x00\x12\x67", message_format=0,
                                settled=False, payload=payload)
        h, b = aenc.encode_frame(t)
        return h + b"\x00\x01" + bytes(b or b"")

    got = decode_open(c["open_frame"])
    assert got[0] == c["open"].container_id and got[9] == {k: v for k, v in c["open"].properties.items()}
    assert a.decode_frames(encode_open())[0].performative.container_id == c["open"].container_id
    return {"decode open": decode_open, "encode open": encode_open, "decode transfer": decode_transfer,
            "message": message, "encode transfer": encode_transfer}


def transfer_frame(a: Any, c: dict[str, Any], body: bytes) -> tuple[Any, bytes]:
    """The bench's message (header, properties, application-properties) with ``body`` as its data section, and
    the transfer frame carrying it."""
    msg = a.Message([a.Data(body)], header=c["message"].header, properties=c["message"].properties,
                    application_properties=c["message"].application_properties)
    return msg, a.encode_frame(c["transfer"], 1, msg.encode())


def ours_transfer(a: Any, c: dict[str, Any], msg: Any, frame: bytes) -> tuple[Callable[[], Any], Callable[[], bytes]]:
    """amqgen's side of a transfer case: decode ``frame`` (the performative and its message), encode ``msg``."""

    def decode() -> Any:
        f = a.decode_frames(frame)[0]
        return f.performative, a.Message.decode(f.payload)

    def encode() -> bytes:
        return a.encode_frame(c["transfer"], 1, msg.encode())  # type: ignore[no-any-return]

    return decode, encode


# -- instruction counts (callgrind): every case, each library ---------------------------------------------------
LIBS = ("amqgen", "Azure", "Proton")
SIZES = (("100 B", 100), ("1 KiB", 1024), ("64 KiB", 65536))


def matrix(a: Any, c: dict[str, Any]) -> dict[str, dict[str, Callable[[], Any]]]:
    """Every case of the tables above, each for amqgen, Azure's _pyamqp and Proton: decode and encode an open,
    and a transfer carrying the message (header, properties, application-properties, a data body) with a body
    of 100 B, 1 KiB and 64 KiB. Each library's work is as in the timed cases (values decoded to what ours gives,
    bodies copied to bytes); its output is checked against ours first."""
    az = azure_side(a, c)
    out: dict[str, dict[str, Callable[[], Any]]] = {
        "decode open": {"amqgen": lambda: a.decode_frames(c["open_frame"])[0].performative,
                        "Azure": lambda: az["decode open"](c["open_frame"]),
                        "Proton": lambda: proton_decode_open(c["open_frame"])},
        "encode open": {"amqgen": lambda: a.encode_frame(c["open"]), "Azure": az["encode open"],
                        "Proton": proton_encode_open},
    }
    for label, size in SIZES:
        body = bytes(i % 251 for i in range(size))
        msg, frame = transfer_frame(a, c, body)
        amsg = az["message"](body)

        ours_decode, ours_encode = ours_transfer(a, c, msg, frame)

        mine = ours_decode()
        assert mine[1] == msg and mine[0] == c["transfer"]
        _, _, props, app, data = az["decode transfer"](frame)
        assert data == [body] and props == ("msg-000123", "orders.created", "application/json")
        assert app == msg.application_properties
        perf, values = proton_decode_transfer(frame)
        assert perf.value[1] == 4711 and values[2] == "msg-000123" and values[8] == body
        for theirs in (az["encode transfer"](amsg), proton_encode_transfer(body)):
            f = a.decode_frames(theirs)[0]
            assert f.performative == c["transfer"] and a.Message.decode(f.payload).body == msg.body
        out[f"decode transfer + {label}"] = {"amqgen": ours_decode,
                                             "Azure": lambda f=frame: az["decode transfer"](f),
                                             "Proton": lambda f=frame: proton_decode_transfer(f)}
        out[f"encode transfer + {label}"] = {"amqgen": ours_encode,
                                             "Azure": lambda m=amsg: az["encode transfer"](m),
                                             "Proton": lambda b=body: proton_encode_transfer(b)}
    return out


def callgrind_child(pkg: Path, case: str, lib: str, runs: tuple[int, int]) -> None:
    """Run one case in two runs of ``runs`` operations, each inside deque.extend, which callgrind counts alone
    (--toggle-collect) and dumps after (--dump-after): imports and set-up stay out of the counts."""
    a = load(pkg)
    fn = matrix(a, cases(a))[case][lib]
    for _ in range(50):  # warm up: specialised bytecode, caches, free lists
        fn()
    for n in runs:
        collections.deque(map(operator.call, itertools.repeat(fn, n)), maxlen=0)


def instructions(pkg: Path, case: str, lib: str, runs: tuple[int, int]) -> float:
    """Instructions per operation: the difference of the two runs' counts over the difference of their lengths,
    so what a run pays once (the loop's set-up, first calls) cancels."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no",
               "--toggle-collect=deque_extend", "--dump-after=deque_extend", sys.executable, __file__, "--child",
               str(pkg), case, lib, f"{runs[0]},{runs[1]}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        counts = []
        for dump in sorted(Path(tmp).glob("cg.out.*"), key=lambda f: int(f.suffix[1:])):
            found = re.search(r"^totals: (\d+)", dump.read_text(), re.MULTILINE)
            counts.append(int(found.group(1)) if found else 0)
    if proc.returncode != 0 or len(counts) != 2 or not all(counts):
        sys.exit(f"bench: callgrind counted nothing (a Python without symbols?): {proc.stderr[-2000:]}")
    return (counts[1] - counts[0]) / (runs[1] - runs[0])


def callgrind_main(readme: Path | None, runs: tuple[int, int]) -> None:
    if not shutil.which("valgrind"):
        sys.exit("bench: --callgrind needs valgrind (Debian package valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        a = render(Path(tmp))
        table = matrix(a, cases(a))  # the checks, before anything is counted
        results: dict[str, dict[str, float]] = {}
        for case in table:
            results[case] = {lib: instructions(Path(tmp), case, lib, runs) for lib in LIBS}
            print(f"  {case}: " + ", ".join(f"{lib} {v:,.0f}" for lib, v in results[case].items()), flush=True)
    lines = [(f"Instructions per operation (callgrind, Python {platform.python_version()}, python-qpid-proton "
             f"{metadata.version('python-qpid-proton')}, azure-servicebus {metadata.version('azure-servicebus')}; "
             f"the difference of runs of {runs[0]} and {runs[1]} operations over {runs[1] - runs[0]}), lower is "
             "better; ratio: the other library's count over amqgen's (above 1: amqgen ahead)."), "",
             "| case | amqgen | Azure _pyamqp | Proton | Azure / amqgen | Proton / amqgen |",
             "|---|---:|---:|---:|---:|---:|"]
    for case, r in results.items():
        lines.append(f"| {case} | {r['amqgen']:,.0f} | {r['Azure']:,.0f} | {r['Proton']:,.0f} | "
                     f"{r['Azure'] / r['amqgen']:.2f}x | {r['Proton'] / r['amqgen']:.2f}x |")
    block = "\n".join(lines)
    print(block)
    if readme is not None:
        write_block(readme, "bench-amqp10-callgrind", block)


def cpu_table(a: Any, c: dict[str, Any], rounds: int, quick: bool) -> str:
    """Every case of ``matrix``, each library's CPU per operation in interleaved rounds: a markdown table."""
    table = matrix(a, c)
    head = ("| case | amqgen us | Azure us | Proton us | Azure / amqgen (rounds: low-high) "
            "| Proton / amqgen (rounds: low-high) |")
    lines = [head, "|---|---:|---:|---:|---:|---:|"]
    for case, fns in table.items():
        r = interleaved(fns, rounds=rounds, target=0.02 if quick else 0.1)
        med = {lib: statistics.median(r[lib]) * 1e6 for lib in LIBS}
        az, pr = ratios(r["amqgen"], r["Azure"]), ratios(r["amqgen"], r["Proton"])
        lines.append(f"| {case} | {med['amqgen']:.2f} | {med['Azure']:.2f} | {med['Proton']:.2f} | "
                     f"{az[0]:.2f}x ({az[1]:.2f}-{az[2]:.2f}) | {pr[0]:.2f}x ({pr[1]:.2f}-{pr[2]:.2f}) |")
        print(lines[-1], flush=True)
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, pkg, case, lib, n = sys.argv
        short, long = (int(x) for x in n.split(","))
        callgrind_child(Path(pkg), case, lib, (short, long))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--readme", type=Path, default=None, help="write the results table into this README")
    ap.add_argument("--quick", action="store_true", help="a short run (checks, and rough figures)")
    ap.add_argument("--rounds", type=int, default=11, help="interleaved rounds (default 11)")
    ap.add_argument("--callgrind", action="store_true",
                    help="count instructions per operation with callgrind (valgrind) instead of timing")
    ap.add_argument("--runs", default="200,1000", help="--callgrind: the two run lengths (operations)")
    args = ap.parse_args()
    if args.callgrind:
        short, long = (int(n) for n in args.runs.split(","))
        callgrind_main(args.readme, (short, long))
        return
    with tempfile.TemporaryDirectory() as tmp:
        a = render(Path(tmp))
        c = cases(a)
        check(a, c)
        rounds = 3 if args.quick else args.rounds
        body = cpu_table(a, c, rounds, args.quick)
    machine = (f"Machine: {cpu_model(platform.processor() or 'unknown')}, Python {platform.python_version()}, "
               f"python-qpid-proton {metadata.version('python-qpid-proton')}, azure-servicebus "
               f"{metadata.version('azure-servicebus')}; CPU time per operation, {rounds} interleaved rounds (median).")
    block = machine + "\n\n" + body
    print(block)
    if args.readme is not None:
        write_block(args.readme, "bench-amqp10", block)


if __name__ == "__main__":
    main()
