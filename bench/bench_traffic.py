#!/usr/bin/env python3
"""`amqgen traffic` end to end against tshark, on captures of about 50, 100 and 200 MB.

    .venv/bin/python bench/bench_traffic.py [--sizes 50,100,200] [--dir /tmp/amqgen-bench] [--readme bench/README.md]

1. Records each capture with tcpdump on lo while pika clients talk to the broker on 127.0.0.1:5672:
   many connections at once (publish batches of 200, consume them, one multiple ack), small (20-400
   octets, 99 %) and large (4-64 KiB, 1 %) messages. The run's queues carry a unique prefix. Captures are reused when present.
2. Times, in one run on the same files, `amqgen traffic FILE --out DIR --master local[2]` (a fresh
   process: JVM start, indexing, Spark job, Parquet written, summary) and
   `tshark -r FILE -Y amqp -T fields ...` over the same frames (TCP reassembly in and out of order on).
3. Checks that both found the same frames by type and methods by class and method id, and prints
   frames/s, MB/s, the ratio and seconds per MB (linear growth shows as a flat column).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
SPEC = str(ROOT.parent / "shared" / "specs" / "amqp0-9-1.extended.xml")
RUN = "amqgen-bench-" + uuid.uuid4().hex[:8]


def client(idx: int, stop: threading.Event, counts: Counter[str]) -> None:
    """Publish a batch, consume it back with one multiple ack, until told to stop."""
    import pika

    rnd = random.Random(idx)
    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", 5672, heartbeat=0))
    ch = conn.channel()
    q = f"{RUN}-{idx}"
    ch.queue_declare(q)  # not auto-delete: the consumer is cancelled after every batch
    ch.basic_qos(prefetch_count=500)
    big = bytes(range(256)) * 512
    props = pika.BasicProperties(content_type="application/octet-stream", headers={"n": idx}, delivery_mode=1)
    while not stop.is_set():
        for _ in range(200):
            size = rnd.randrange(4 << 10, 64 << 10) if rnd.random() < 0.01 else rnd.randrange(20, 400)
            ch.basic_publish("", q, big[:size], props)
        counts["published"] += 200
        got, last = 0, 0
        for method, _, _ in ch.consume(q, inactivity_timeout=2):
            if method is None:
                break
            got, last = got + 1, method.delivery_tag
            if got == 200:
                break
        if last:
            ch.basic_ack(last, multiple=True)
        ch.cancel()
    ch.queue_delete(q)
    conn.close()


def record(path: Path, mb: int, connections: int) -> None:
    from traffic_tools import Recorder, keep_connections_with

    stop = threading.Event()
    counts: Counter[str] = Counter()
    with Recorder(path):
        threads = [threading.Thread(target=client, args=(i, stop, counts)) for i in range(connections)]
        for t in threads:
            t.start()
        while path.stat().st_size < mb * 1_000_000:
            time.sleep(0.2)
        stop.set()
        for t in threads:
            t.join(300)
    keep_connections_with(path, RUN.encode())
    # tcpdump writes in bursts: cut the capture at the record where it reaches the size asked for
    from traffic_tools import read_pcap, write_pcap

    link, recs = read_pcap(path)
    total, keep = 24, 0
    while keep < len(recs) and total < mb * 1_000_000:
        total += 16 + len(recs[keep].data)
        keep += 1
    write_pcap(path, link, recs[:keep])
    print(f"  recorded {path.name}: {path.stat().st_size / 1e6:.1f} MB, {counts['published']} messages published",
          file=sys.stderr)


def tshark_counts(path: Path) -> tuple[float, Counter[str]]:
    cmd = ["tshark", "-r", str(path), "-n", "-o", "tcp.desegment_tcp_streams:TRUE",
           "-o", "tcp.reassemble_out_of_order:TRUE", "-Y", "amqp", "-T", "fields", "-E", "aggregator=,",
           "-e", "frame.number", "-e", "amqp.type", "-e", "amqp.channel", "-e", "amqp.method.class",
           "-e", "amqp.method.method", "-e", "amqp.header.class", "-e", "amqp.header.body-size"]
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    elapsed = time.perf_counter() - t
    counts: Counter[str] = Counter()
    for line in out.splitlines():
        f = line.split("\t")
        types = [x for x in f[1].split(",") if x]
        for ty in types:
            counts[f"type {ty}"] += 1
        for c, m in zip([x for x in f[3].split(",") if x], [x for x in f[4].split(",") if x], strict=True):
            counts[f"method {c}.{m}"] += 1
    return elapsed, counts


def amqgen_counts(path: Path, out: Path) -> tuple[float, Counter[str], dict[str, object]]:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "amqgen", "traffic", str(path), "--out", str(out), "--spec", SPEC,
           "--master", "local[2]"]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"amqgen traffic failed:\n{proc.stderr[-3000:]}")
    summary = json.loads((out / "summary.json").read_text())
    import pyarrow.parquet as pq

    frames = pq.read_table(out / "frames", columns=["frame_type", "class_id", "method_id"]).to_pylist()
    code = {"method": 1, "header": 2, "body": 3, "heartbeat": 8}
    counts: Counter[str] = Counter()
    for f in frames:
        if f["frame_type"] in code:
            counts[f"type {code[f['frame_type']]}"] += 1
        if f["frame_type"] == "method":
            counts[f"method {f['class_id']}.{f['method_id']}"] += 1
    return elapsed, counts, summary


FLOOR = """
import os, sys
os.environ["PYSPARK_PYTHON"] = sys.executable
from amqgen.traffic.job import spark_session
spark = spark_session("local[2]", {"spark.ui.showConsoleProgress": "false"})
def same(batches):
    yield from batches
assert spark.range(0, 1, 1, 1).mapInArrow(same, "id long").count() == 1
"""


def spark_floor() -> float:
    """A fresh process that starts the same SparkSession as `amqgen traffic` and runs one Python
    task on one row: what any Spark job from the command line pays before its first octet."""
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR], check=True, capture_output=True)
    return time.perf_counter() - t


def warm_up(work: Path) -> None:
    """One untimed run, then wait until its driver JVM has written the class archive (see
    `jvm.ClassArchive`): the timed runs start as every run after a machine's first does."""
    from amqgen.traffic.jvm import ClassArchive

    amqgen_counts(ROOT / "tests" / "data" / "traffic" / "pika-small.pcap", work / "out-warm-up")
    archive = ClassArchive.for_this_install()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        markers = list(archive.final.parent.glob(archive.final.stem + ".*.jsa.pid"))
        alive = []
        for m in markers:
            try:
                os.kill(int(m.read_text()), 0)
                alive.append(m)
            except (ProcessLookupError, ValueError, OSError):
                pass
        if not alive:
            return
        time.sleep(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="50,100,200")
    ap.add_argument("--dir", default="/tmp/amqgen-bench-traffic")
    ap.add_argument("--connections", type=int, default=12)
    ap.add_argument("--readme", type=Path)
    args = ap.parse_args()
    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    print("warm-up run (class archive) ...", file=sys.stderr)
    warm_up(work)
    for mb in (int(x) for x in args.sizes.split(",")):
        cap = work / f"capture-{mb}mb.pcap"
        if not cap.exists():
            record(cap, mb, args.connections)
        size = cap.stat().st_size / 1e6
        print(f"{cap.name}: tshark ...", file=sys.stderr)
        t_tshark, theirs = tshark_counts(cap)
        print(f"{cap.name}: amqgen traffic ...", file=sys.stderr)
        t_ours, ours, summary = amqgen_counts(cap, work / f"out-{mb}")
        same = ours == theirs
        frames = sum(v for k, v in ours.items() if k.startswith("type "))
        rows.append((cap.name, size, frames, summary["connections"], summary["messages"], t_ours, t_tshark, same))
        print(f"  {frames} frames, amqgen {t_ours:.1f} s, tshark {t_tshark:.1f} s, counts equal: {same}",
              file=sys.stderr)
        if not same:
            print(f"  only amqgen: {ours - theirs}\n  only tshark: {theirs - ours}", file=sys.stderr)
    table = [
        f"Machine: {os.cpu_count()} cores; `amqgen traffic --master local[2]` (fresh process, JVM start included) "
        "vs `tshark -r FILE -Y amqp -T fields` (one core: tshark does not run in parallel).",
        "",
        "| capture | MB | frames | connections | messages | amqgen s | tshark s | amqgen frames/s | tshark frames/s "
        "| amqgen MB/s | tshark MB/s | ratio (tshark s / amqgen s) | amqgen s per MB | same counts |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, size, frames, conns, msgs, t_o, t_t, same in rows:
        table.append(f"| {name} | {size:.1f} | {frames} | {conns} | {msgs} | {t_o:.1f} | {t_t:.1f} | {frames / t_o:,.0f} "
                     f"| {frames / t_t:,.0f} | {size / t_o:.1f} | {size / t_t:.1f} | {t_t / t_o:.2f} | {t_o / size:.3f} "
                     f"| {'yes' if same else 'NO'} |")
    if len(rows) >= 2:  # time = fixed + per-MB slope, least squares: the slope is what grows with size
        fits = []
        for label, col in (("amqgen traffic", 5), ("tshark", 6)):
            xs, ys = [r[1] for r in rows], [r[col] for r in rows]
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
            fixed = my - slope * mx
            worst = max(abs(y - (fixed + slope * x)) for x, y in zip(xs, ys, strict=True))
            fits.append(f"| {label} | {fixed:.1f} | {slope:.3f} | {1 / slope if slope > 0 else float('inf'):.1f} "
                        f"| {worst:.1f} |")
        table += ["", "Least-squares fit of wall time = fixed + slope x MB over the three captures:", "",
                  "| tool | fixed s | s per MB | MB/s at the margin | largest residual s |", "|---|---:|---:|---:|---:|",
                  *fits]
    floor = min(spark_floor() for _ in range(3))
    table += ["", f"Spark's floor in the same run: a fresh process that starts the same SparkSession and runs one "
              f"Python task on one row takes {floor:.1f} s (best of 3). 2x tshark's throughput needs amqgen traffic "
              f"under half of tshark's time: " + ", ".join(f"{r[6] / 2:.1f} s on {r[0]}" for r in rows) + "."]
    text = "\n".join(table)
    print(text)
    if args.readme:
        readme = args.readme.read_text()
        begin, end = "<!-- bench_traffic:begin -->", "<!-- bench_traffic:end -->"
        block = f"{begin}\n{text}\n{end}"
        if begin in readme:
            readme = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: block, readme, flags=re.S)
        else:
            readme += f"\n{block}\n"
        args.readme.write_text(readme)


if __name__ == "__main__":
    main()
