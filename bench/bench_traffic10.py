#!/usr/bin/env python3
"""Issue 45's speed figures: both families in one capture, against tshark.

    .venv/bin/python bench/bench_traffic10.py [--mb 1024] [--dir /tmp/amqgen-bench-traffic10] [--rounds 3]

1. A seed capture, recorded live with tcpdump on lo: the generated AMQP 1.0 client and pika against RabbitMQ on
   5672 at the same time, small messages (128 octets): 1.0 transfers with their dispositions and flows, 0-9-1
   publishes (method, header, body frames) and deliveries with their acks. Two connections per family.
2. Per frame, without Spark (the decode stages only, in this process, CPU time): the 1.0 connections of the seed
   against its 0-9-1 connections, ``--rounds`` times each, interleaved.
3. The seed made ``--mb`` large synthetically (recording a gigabyte live takes far longer than decoding it): its
   connections copied again and again, each copy on new client ports and later in time, the TCP and AMQP octets
   untouched. Then, in one run each, ``amqgen traffic BIG --out DIR --master local[2]`` (no --spec) and
   ``tshark -o tcp.desegment_tcp_streams:TRUE -o tcp.reassemble_out_of_order:TRUE -Y amqp`` counting frames: wall
   time and CPU of the process trees, and the frame counts of both (which must be equal).
"""

from __future__ import annotations

import argparse
import json
import shutil
import struct
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from traffic_measure import Accounting

RUN = "amqgen-bench10-" + uuid.uuid4().hex[:8]
BODY = 128


def record_seed(path: Path, gen_root: Path, n: int) -> None:
    import pika
    from pytarget import import_package10
    from traffic_tools import Recorder, keep_connections_with

    amqp10 = import_package10("amqp10bench", gen_root)
    client = __import__(f"{amqp10.__name__}.client", fromlist=["Connection"])

    def one10(i: int) -> None:
        q = f"/queue/{RUN}-10-{i}"
        with client.Connection("amqp://guest:guest@127.0.0.1:5672", container_id=f"{RUN}-{i}") as conn:
            s = conn.sender(q)
            for k in range(n):
                s.send(bytes(BODY), settled=k % 2 == 0, wait=False)
            got = 0
            for d in conn.receiver(q, credit=200):
                d.accept()
                got += 1
                if got == n:
                    break

    def one091(i: int) -> None:
        conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", client_properties={"run": RUN}))
        ch = conn.channel()
        q = f"{RUN}-091-{i}"
        ch.queue_declare(q, auto_delete=True)
        for _ in range(n):
            ch.basic_publish("", q, bytes(BODY))
        ch.basic_qos(prefetch_count=200)
        got = 0
        for method, _, _ in ch.consume(q, inactivity_timeout=5):
            if method is None:
                break
            ch.basic_ack(method.delivery_tag)
            got += 1
            if got == n:
                break
        ch.cancel()
        conn.close()

    with Recorder(path):
        threads = [threading.Thread(target=f, args=(i,)) for i in range(2) for f in (one10, one091)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
    keep_connections_with(path, RUN.encode())
    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1"))
    for i in range(2):
        conn.channel().queue_delete(f"{RUN}-10-{i}")
    conn.close()


def per_frame(seed: Path, rounds: int, work: Path) -> dict[str, list[float]]:
    """CPU microseconds per frame of the decode stages (no Spark) on the seed's 1.0 and 0-9-1 connections."""
    from amqgen.amqp0.lower import load_spec
    from amqgen.amqp10.loader import load_spec as load10
    from amqgen.specs import resolve, resolve_overlay
    from amqgen.traffic import capture, codec, session

    spec = load_spec(resolve("0-9-1-rabbit"), overlays=[resolve_overlay("rabbitmq-blocked")])
    spec10 = load10(resolve("1-0"))
    codec.render_codec(spec, work / "codec")
    codec.render_codec10(spec10, work / "codec")
    c = codec.load(codec.spec_facts(spec, codec.package_name(spec), spec10), str(work / "codec"))
    idx = capture.index_file(seed, 0, 1 << 30)
    segs = [s for part in idx.parts for s in capture.read_part(part)]
    rows = session.decode_segments(c, session.Options(), [str(seed)], segs)
    family = {r[0]: r[26] for r in rows.connections}
    keys = {fam: {session.connection_key(s) for s in segs if _cid(s) in {k for k, f in family.items() if f == fam}}
            for fam in ("1-0", "0-9-1")}
    out: dict[str, list[float]] = {"1-0": [], "0-9-1": []}
    for _ in range(rounds):
        for fam in ("1-0", "0-9-1"):
            mine = [s for s in segs if session.connection_key(s) in keys[fam]]
            t = time.process_time()
            got = session.decode_segments(c, session.Options(), [str(seed)], mine)
            out[fam].append((time.process_time() - t) / len(got.frames) * 1e6)
            out[f"{fam} frames"] = [len(got.frames)]
    return out


def _cid(s: Any) -> str:
    a, b = (s.src, s.dst) if s.dst.endswith(":5672") else (s.dst, s.src)
    return f"{a}>{b}"


def grow(seed: Path, big: Path, mb: int) -> int:
    """``seed`` copied until ``big`` holds ``mb`` MB: copy k moves every client port up by 100 * k (mod the
    ephemeral range) and every timestamp on by k times the seed's span. Returns the copies made."""
    raw = seed.read_bytes()
    header, recs = raw[:24], []
    off = 24
    while off + 16 <= len(raw):
        sec, usec, cap, wire = struct.unpack_from("<IIII", raw, off)
        recs.append((sec * 1_000_000 + usec, raw[off + 16:off + 16 + cap], wire))
        off += 16 + cap
    span = recs[-1][0] - recs[0][0] + 1_000_000
    copies = 0
    with open(big, "wb") as f:
        f.write(header)
        while f.tell() < mb << 20:
            shift = copies * span
            for ts, data, wire in recs:
                ihl = (data[14] & 0x0F) * 4
                t = 14 + ihl
                sport, dport = struct.unpack_from(">HH", data, t)
                moved = bytearray(data)
                if sport == 5672:
                    struct.pack_into(">H", moved, t + 2, 20000 + (dport - 20000 + 100 * copies) % 40000)
                else:
                    struct.pack_into(">H", moved, t, 20000 + (sport - 20000 + 100 * copies) % 40000)
                when = ts + shift
                f.write(struct.pack("<IIII", when // 1_000_000, when % 1_000_000, len(moved), wire) + moved)
            copies += 1
    return copies


def tshark_count(acct: Accounting, path: Path) -> tuple[Any, int]:
    frames = [0]

    def consume(out: IO[str]) -> None:
        for line in out:
            frames[0] += sum(1 for x in line.rstrip("\n").split(",") if x)

    use = acct.run(["tshark", "-r", str(path), "-n", "-o", "tcp.desegment_tcp_streams:TRUE",
                    "-o", "tcp.reassemble_out_of_order:TRUE", "-Y", "amqp", "-T", "fields", "-E", "aggregator=,",
                    "-e", "amqp.type"], "tshark", consume=consume)
    if use.returncode:
        raise SystemExit(f"tshark failed: {use.stderr[-2000:]}")
    return use, frames[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--seed-messages", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/amqgen-bench-traffic10"))
    args = ap.parse_args()
    work = args.dir
    work.mkdir(parents=True, exist_ok=True)
    seed = work / "seed.pcap"
    if not seed.exists():
        t = time.time()
        record_seed(seed, work / "gen", args.seed_messages)
        print(f"seed: {seed.stat().st_size >> 20} MB recorded live in {time.time() - t:.1f} s", flush=True)
    pf = per_frame(seed, args.rounds, work)
    print(json.dumps({"per_frame_us": pf}), flush=True)
    big = work / f"mixed-{args.mb}mb.pcap"
    if not big.exists():
        copies = grow(seed, big, args.mb)
        print(f"{big.name}: {big.stat().st_size >> 20} MB, {copies} copies of the seed", flush=True)
    acct = Accounting.detect()
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    ours = acct.run([sys.executable, "-m", "amqgen", "traffic", str(big), "--out", str(out), "--master", "local[2]"],
                    "amqgen")
    if ours.returncode:
        raise SystemExit(f"amqgen traffic failed: {ours.stderr[-2000:]}")
    summary = json.loads((out / "summary.json").read_text())
    theirs, tshark_frames = tshark_count(acct, big)
    # tshark marks no protocol header as a frame: leave ours out too
    our_frames = summary["frames"] - summary["frames_by_type"].get("protocol-header", 0)
    result = {
        "capture_mb": big.stat().st_size >> 20, "connections_by_family": summary["connections_by_family"],
        "frames_amqgen": our_frames, "frames_tshark": tshark_frames, "equal": our_frames == tshark_frames,
        "amqgen_wall_s": round(ours.wall, 1), "amqgen_cpu_s": round(ours.cpu, 1),
        "tshark_wall_s": round(theirs.wall, 1), "tshark_cpu_s": round(theirs.cpu, 1),
        "speed_ratio_wall": round(theirs.wall / ours.wall, 2),
        "violations_by_kind": summary["violations_by_kind"],
        "per_frame_us_1_0": [round(x, 2) for x in pf["1-0"]], "per_frame_us_0_9_1": [round(x, 2) for x in pf["0-9-1"]],
    }
    print(json.dumps(result, indent=1))
    (work / "result.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
