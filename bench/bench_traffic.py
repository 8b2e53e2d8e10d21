#!/usr/bin/env python3
"""`amqgen traffic` end to end against tshark: time, CPU per frame of the whole process tree, peak
memory, linearity in size, and (``--cluster``) scale-out on a standalone cluster the bench starts.

    .venv/bin/python bench/bench_traffic.py [--sizes 50,100,200] [--kinds frame,byte] [--cluster]
        [--dir /tmp/amqgen-bench-traffic] [--readme bench/README.md]
    .venv/bin/python bench/bench_traffic.py --quick     # the test's mode: a fixture, local, seconds

1. Captures, recorded with tcpdump on lo while pika clients talk to the broker on 127.0.0.1:5672
   (12 connections at once, each publishing a batch to its own queue and consuming it back with one
   multiple ack), then cut, streaming, to the connections of this run and to the size asked for:
   - ``frame``: frame-heavy, 99 % of 20-400 octets and 1 % of 4-64 KiB, batches of 200
     (``capture-{MB}mb.pcap``, the name earlier runs used);
   - ``byte``: byte-heavy, bodies of 16-256 KiB, batches of 8 (``capture-byte-{MB}mb.pcap``).
   Captures already in ``--dir`` are reused.
2. On each capture, in one run: ``tshark -r FILE -Y amqp -T fields ...`` (TCP reassembly in and out of
   order on) and ``amqgen traffic FILE --out DIR --master local[2]`` as a fresh process. Both are
   measured the same way (see traffic_measure.py): wall time, CPU of the whole process tree (the
   JVM, its Python workers) and its peak RSS. Their counts of frames by type and of methods by class
   and method id must be equal. A least-squares fit of time = fixed + slope x MB per kind and tool,
   and of CPU = fixed + slope x frames (the CPU per frame at the margin).
3. ``--cluster``: a standalone master and workers of 1 core each on 127.0.0.1 (traffic_cluster.py),
   ``amqgen traffic FILE --master spark://...`` with 1 worker, then with 2, on one capture; wall time,
   throughput ratio, CPU of the driver and of the cluster's processes, and each output's rows
   compared with local mode's. Spark's event log of every run says where the time went.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import struct
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from traffic_cluster import AppLog, Standalone, breakdown, event_log, find_log
from traffic_measure import Accounting, Usage, Watch

SPEC = str(ROOT / "spec" / "amqp0-9-1.extended.xml")
RUN = "amqgen-bench-" + uuid.uuid4().hex[:8]
FIXTURE = ROOT / "tests" / "data" / "traffic" / "pika-small.pcap"
# messages per batch, per kind: a byte-heavy batch is 1-2 MB per connection in the broker at a time
KINDS = {"frame": 200, "byte": 8}


# -- recording --------------------------------------------------------------------------------------------
def message_size(kind: str, rnd: random.Random) -> int:
    if kind == "byte":
        return rnd.randrange(16 << 10, 256 << 10)
    return rnd.randrange(4 << 10, 64 << 10) if rnd.random() < 0.01 else rnd.randrange(20, 400)


def client(kind: str, idx: int, stop: threading.Event, counts: Counter[str], rate: float) -> None:
    """Publish a batch, consume it back with one multiple ack, until told to stop; at most ``rate``
    octets of bodies per second each way (0: no limit)."""
    import pika

    rnd = random.Random(idx)
    batch = KINDS[kind]
    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", 5672, heartbeat=0))
    ch = conn.channel()
    q = f"{RUN}-{idx}"
    ch.queue_declare(q)  # not auto-delete: the consumer is cancelled after every batch
    ch.basic_qos(prefetch_count=500)
    big = bytes(range(256)) * 1024
    props = pika.BasicProperties(content_type="application/octet-stream", headers={"n": idx}, delivery_mode=1)
    start, sent = time.monotonic(), 0
    while not stop.is_set():
        for _ in range(batch):
            size = message_size(kind, rnd)
            ch.basic_publish("", q, big[:size], props)
            sent += size
        counts["published"] += batch
        got, last = 0, 0
        for method, _, _ in ch.consume(q, inactivity_timeout=2):
            if method is None:
                break
            got, last = got + 1, method.delivery_tag
            if got == batch:
                break
        if last:
            ch.basic_ack(last, multiple=True)
        ch.cancel()
        if rate:
            stop.wait(max(0.0, sent / rate - (time.monotonic() - start)))
    ch.queue_delete(q)
    conn.close()


def pcap_records(f: IO[bytes]) -> Iterable[tuple[bytes, bytes]]:
    """(16-octet record header, data) of each record of a little-endian pcap (what tcpdump writes
    here), read one at a time: a capture of any size needs one record's memory."""
    while len(head := f.read(16)) == 16:
        cap = struct.unpack_from("<I", head, 8)[0]
        yield head, f.read(cap)


def client_port(data: bytes, server: int = 5672) -> int | None:
    """The client's port of an Ethernet / IPv4 / TCP record on the broker's port, else None."""
    if len(data) < 34 or data[12:14] != b"\x08\x00" or data[23] != 6:
        return None
    tcp = 14 + (data[14] & 0x0F) * 4
    sport, dport = struct.unpack_from(">HH", data, tcp)
    return dport if sport == server else sport if dport == server else None


def cut(path: Path, marker: bytes, limit: int) -> None:
    """Keep the connections whose data contains ``marker`` (the broker is shared: other runs talk to
    it while we record), up to the record where the file reaches ``limit`` octets. Two streaming
    passes over the file, so recording 1 GB does not need 1 GB of memory."""
    ours: set[int] = set()
    with path.open("rb") as f:
        header = f.read(24)
        if header[:4] != b"\xd4\xc3\xb2\xa1":
            raise SystemExit(f"bench: {path} is not a little-endian microsecond pcap (tcpdump's)")
        for _, data in pcap_records(f):
            if marker in data and (port := client_port(data)) is not None:
                ours.add(port)
    tmp = path.with_suffix(".cut")
    total = 24
    with path.open("rb") as f, tmp.open("wb") as out:
        out.write(f.read(24))
        for head, data in pcap_records(f):
            if total >= limit:
                break
            if client_port(data) in ours:
                out.write(head + data)
                total += 16 + len(data)
    os.replace(tmp, path)


def record(path: Path, kind: str, mb: int, connections: int, rate_mb: float) -> None:
    from traffic_tools import Recorder

    stop = threading.Event()
    counts: Counter[str] = Counter()
    limit = mb * 1_000_000
    # big messages cross lo faster than tcpdump writes them out (it drops packets, and Recorder
    # fails on a drop): byte-heavy clients are held to a total rate, each direction
    rate = rate_mb * 1e6 / 2 / connections if kind == "byte" else 0.0
    raw = path.with_suffix(".recording")
    try:
        with Recorder(raw):
            threads = [threading.Thread(target=client, args=(kind, i, stop, counts, rate)) for i in range(connections)]
            for t in threads:
                t.start()
            # a little over the size: other sessions' connections on the shared broker are cut out
            while raw.stat().st_size < limit * 1.05 + 1_000_000 and all(t.is_alive() for t in threads):
                time.sleep(0.2)
            stop.set()
            for t in threads:
                t.join(300)
        cut(raw, RUN.encode(), limit)
        os.replace(raw, path)
    finally:
        raw.unlink(missing_ok=True)
    size = path.stat().st_size
    note = "" if size >= limit * 0.99 else f" (SHORT of {mb} MB: other traffic on the broker? delete and rerun)"
    print(f"  recorded {path.name}: {size / 1e6:.1f} MB, {counts['published']} messages published{note}",
          file=sys.stderr)


def capture_path(work: Path, kind: str, mb: int) -> Path:
    return work / (f"capture-{mb}mb.pcap" if kind == "frame" else f"capture-{kind}-{mb}mb.pcap")


# -- the two tools ------------------------------------------------------------------------------------------
def tshark_run(acct: Accounting, path: Path) -> tuple[Usage, Counter[str]]:
    cmd = ["tshark", "-r", str(path), "-n", "-o", "tcp.desegment_tcp_streams:TRUE",
           "-o", "tcp.reassemble_out_of_order:TRUE", "-Y", "amqp", "-T", "fields", "-E", "aggregator=,",
           "-e", "frame.number", "-e", "amqp.type", "-e", "amqp.channel", "-e", "amqp.method.class",
           "-e", "amqp.method.method", "-e", "amqp.header.class", "-e", "amqp.header.body-size"]
    counts: Counter[str] = Counter()

    def consume(out: IO[str]) -> None:  # line by line: tshark's output on 1 GB is hundreds of MB
        for line in out:
            f = line.rstrip("\n").split("\t")
            for ty in f[1].split(","):
                if ty:
                    counts[f"type {ty}"] += 1
            for c, m in zip([x for x in f[3].split(",") if x], [x for x in f[4].split(",") if x], strict=True):
                counts[f"method {c}.{m}"] += 1

    use = acct.run(cmd, "tshark", consume=consume)
    if use.returncode:
        raise SystemExit(f"tshark failed:\n{use.stderr[-3000:]}")
    return use, counts


@dataclass
class Ours:
    use: Usage
    counts: Counter[str]
    summary: dict[str, Any]
    app: AppLog | None
    out: Path
    cluster_cpu: float = 0.0
    cluster_rss: int = 0
    cluster_jvm: int = 0
    cluster_python: int = 0
    cluster_python_cpu: float = 0.0


SPARK_CONF: list[str] = []  # --spark-conf, for every amqgen traffic run


def traffic_command(path: Path, out: Path, events: Path, master: str = "local[2]") -> tuple[list[str], dict[str, str]]:
    """The ``amqgen traffic`` command every run uses (its event log under ``events``) and its
    environment; ``out`` and ``events`` are emptied first."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(events, ignore_errors=True)
    events.mkdir(parents=True)
    cmd = [sys.executable, "-m", "amqgen", "traffic", str(path), "--out", str(out), "--spec", SPEC,
           "--master", master, "--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir={events.as_uri()}",
           "--conf", "spark.eventLog.compress=false", *(a for kv in SPARK_CONF for a in ("--conf", kv))]
    # loopback only: the driver's ports too
    return cmd, {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}


def amqgen_run(acct: Accounting, path: Path, out: Path, events: Path, master: str = "local[2]") -> Ours:
    cmd, env = traffic_command(path, out, events, master)
    use = acct.run(cmd, "amqgen", env=env)
    if use.returncode:
        raise SystemExit(f"amqgen traffic failed ({use.returncode}):\n{use.stderr[-3000:]}")
    summary = json.loads((out / "summary.json").read_text())
    logs = find_log(events)
    return Ours(use, frame_counts(out), summary, event_log(logs) if logs else None, out)


def frame_counts(out: Path) -> Counter[str]:
    """Frames by type and methods by class and method id, as tshark_run counts them, batch by batch."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    code = {"method": 1, "header": 2, "body": 3, "heartbeat": 8}
    counts: Counter[str] = Counter()
    frames = ds.dataset(out / "frames", format="parquet")
    for batch in frames.to_batches(columns=["frame_type", "class_id", "method_id"]):
        # grouped in Arrow: millions of frames, a few dozen distinct keys
        groups = pa.Table.from_batches([batch]).group_by(["frame_type", "class_id", "method_id"]).aggregate(
            [([], "count_all")])
        for g in groups.to_pylist():
            ft, n = g["frame_type"], g["count_all"]
            if ft in code:
                counts[f"type {code[ft]}"] += n
            if ft == "method":
                counts[f"method {g['class_id']}.{g['method_id']}"] += n
    return counts


_FINGERPRINTS: dict[Path, dict[str, tuple[int, int, tuple[str, ...]]]] = {}


def fingerprint(out: Path) -> dict[str, tuple[int, int, tuple[str, ...]]]:
    """Per dataset: (rows, the sum of each row's BLAKE2b-128 mod 2**128, the column names). Equal for
    two outputs exactly when their rows sorted are equal (as tests/traffic/test_traffic_spark.py compares
    them; but for a hash collision), without holding or sorting millions of rows. A row is hashed as
    the repr of its values in column order (a quarter of the cost of a JSON key per row)."""
    import pyarrow.dataset as ds

    if out in _FINGERPRINTS:  # local mode's output, compared with each cluster run's
        return _FINGERPRINTS[out]
    got = {}
    for name in sorted(d.name for d in out.iterdir() if d.is_dir()):  # the datasets, whatever they are
        data = ds.dataset(out / name, format="parquet")
        n = acc = 0
        for batch in data.to_batches():
            for row in zip(*batch.to_pydict().values(), strict=True):
                acc += int.from_bytes(hashlib.blake2b(repr(row).encode(), digest_size=16).digest(), "big")
                n += 1
        got[name] = (n, acc % (1 << 128), tuple(data.schema.names))
    _FINGERPRINTS[out] = got
    return got


def same_output(a: Path, b: Path) -> tuple[bool, str]:
    fa, fb = fingerprint(a), fingerprint(b)
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (a, b))
    sa.pop("seconds"), sb.pop("seconds")
    bad = [f"{k} ({fa[k][0] if k in fa else 'no'} rows against {fb[k][0] if k in fb else 'no'})"
           for k in sorted(fa.keys() | fb.keys()) if fa.get(k) != fb.get(k)]
    if sa != sb:
        bad.append("summary.json")
    return not bad, ", ".join(bad) or f"the rows of all {len(fa)} datasets and the summary"


# -- the warm-up and Spark's floor ------------------------------------------------------------------------
FLOOR = """
import os, sys
os.environ["PYSPARK_PYTHON"] = sys.executable
from amqgen.traffic.job import spark_session
spark = spark_session("local[2]", {"spark.ui.showConsoleProgress": "false"})
def same(batches):
    yield from batches
assert spark.range(0, 1, 1, 1).mapInArrow(same, "id long").count() == 1
"""


def spark_floor(acct: Accounting) -> Usage:
    """A fresh process that starts the same SparkSession as `amqgen traffic` and runs one Python
    task on one row: what any Spark job from the command line pays before its first octet."""
    use = acct.run([sys.executable, "-c", FLOOR], "floor", env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    if use.returncode:
        raise SystemExit(f"the floor run failed:\n{use.stderr[-3000:]}")
    return use


def warm_up(work: Path) -> Path:
    """One untimed run, then wait until its driver JVM has written the class archive (see
    `jvm.ClassArchive`) and adopt it: the timed runs start as every run after a machine's first does.
    Returns the archive; exits when there is none, as every timed run would then pay the JVM's full
    start (Spark's floor here: 13.5 s without, 4.8-5.5 s with) and the figures would say nothing of
    a user's second run.

    Not through ``Accounting.run``: that kills what a run leaves behind when it exits, and the
    archive is written by the driver JVM as it exits, after the ``amqgen`` process has gone."""
    import subprocess

    from amqgen.traffic.jvm import ClassArchive

    archive = ClassArchive.for_this_install()
    cmd, env = traffic_command(FIXTURE, work / "out-warm-up", work / "events" / "warm-up")
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"the warm-up run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        alive = []
        for m in archive.final.parent.glob(archive.final.stem + ".*.jsa.pid"):
            try:
                os.kill(int(m.read_text()), 0)
                alive.append(m)
            except (ProcessLookupError, ValueError, OSError):
                pass
        if not alive:
            break
        time.sleep(1)
    archive.options()  # adopts the whole pending archive, as the next run would
    if not archive.final.is_file():
        raise SystemExit(f"the warm-up run left no class archive at {archive.final}: the timed runs would measure "
                         "a first run's JVM start every time")
    return archive.final


# -- reporting --------------------------------------------------------------------------------------------
@dataclass
class Row:
    kind: str
    cap: Path
    mb: float
    ours: Ours
    theirs: Usage
    same: bool

    @property
    def frames(self) -> int:
        return sum(v for k, v in self.ours.counts.items() if k.startswith("type "))


def fit(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least squares y = fixed + slope * x: (fixed, slope, largest residual)."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0
    fixed = my - slope * mx
    return fixed, slope, max(abs(y - fixed - slope * x) for x, y in zip(xs, ys, strict=True))


def mb(n: int) -> str:
    return f"{n / 1e6:,.0f}"


def local_tables(rows: list[Row], acct: Accounting, floor: Usage | None, quick: bool) -> list[str]:
    lines = [
        (f"Machine: {os.cpu_count()} cores; `amqgen traffic --master local[2]` (a fresh process: JVM start, "
         "indexing, Spark job, Parquet written) against `tshark -r FILE -Y amqp -T fields` (one core: "
         "tshark does not run in parallel), one after the other on the same file."
         + (" **`--quick` run on a tiny fixture: no figure here says anything about speed.**" if quick else "")),
        f"CPU: {acct.cpu_method}. Peak RSS: {acct.rss_method}."
        + ("" if quick else " The driver JVM's class archive was made by the warm-up run before any timed run "
           "(the bench stops when there is none)."),
        "",
        ("| capture | kind | MB | frames | messages | amqgen s | tshark s | ratio (tshark s / amqgen s) "
        "| amqgen MB/s | tshark MB/s | amqgen CPU s | amqgen CPU us/frame | tshark CPU us/frame | same counts |"),
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        o, t = r.ours.use, r.theirs
        lines.append(f"| {r.cap.name} | {r.kind} | {r.mb:.1f} | {r.frames} | {r.ours.summary['messages']} "
                     f"| {o.wall:.1f} | {t.wall:.1f} | {t.wall / o.wall:.2f} | {r.mb / o.wall:.1f} | {r.mb / t.wall:.1f} "
                     f"| {o.cpu:.1f} | {o.cpu / r.frames * 1e6:.1f} | {t.cpu / r.frames * 1e6:.1f} "
                     f"| {'yes' if r.same else 'NO'} |")
    lines += ["", ("`amqgen traffic`'s processes: from the process start to the Spark application's start (Python, "
                   "indexing, the codec rendered, the driver JVM) and to its first task (from Spark's event log); "
                   "CPU seconds the JVM and the Python processes (the driver and the "
                   "workers) spent themselves, as sampled every 100 ms (so a little short of the total); memory in MB: "
                   "the tree's peak (see the method above), the largest single JVM and the largest Python worker (any "
                   "Python process of the tree but the `amqgen` driver itself) by VmHWM, and tshark's peak:"), "",
              ("| capture | to Spark app s | to first task s | CPU s | JVM CPU s | Python CPU s | tree peak MB "
               "| sampled tree peak MB | largest JVM MB | largest Python worker MB | tshark peak MB |"),
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        o, app = r.ours.use, r.ours.app
        to_app = f"{app.start - o.started:.1f}" if app else "-"
        to_task = f"{app.first_task - o.started:.1f}" if app and app.first_task else "-"
        lines.append(f"| {r.cap.name} | {to_app} | {to_task} | {o.cpu:.1f} | {o.java_cpu:.1f} | {o.python_cpu:.1f} "
                     f"| {mb(o.peak_rss)} | {mb(o.sampled_rss)} | {mb(o.largest_java)} | {mb(o.largest_python)} "
                     f"| {mb(r.theirs.peak_rss)} |")
    fits = []
    for kind in dict.fromkeys(r.kind for r in rows):
        sub = [r for r in rows if r.kind == kind]
        if len(sub) < 2:
            continue
        xs = [r.mb for r in sub]
        for label, ys in (("amqgen traffic", [r.ours.use.wall for r in sub]), ("tshark", [r.theirs.wall for r in sub])):
            fixed, slope, worst = fit(xs, ys)
            # a slope whose whole span is within the residual is noise: no MB/s to quote from it
            rate = (f"{1 / slope:.1f} MB/s" if slope * (max(xs) - min(xs)) > worst
                    else "flat: size moves the time less than the residual")
            fits.append(f"| {kind} | {label} | wall | {fixed:.1f} s | {slope:.4f} s/MB ({rate}) | {worst:.1f} s |")
        frames = [float(r.frames) for r in sub]
        for label, ys in (("amqgen traffic", [r.ours.use.cpu for r in sub]), ("tshark", [r.theirs.cpu for r in sub])):
            fixed, slope, worst = fit(frames, ys)
            fits.append(f"| {kind} | {label} | CPU | {fixed:.1f} s | {slope * 1e6:.1f} us/frame | {worst:.1f} s |")
    if fits:
        lines += ["", ("Least-squares fits per kind: wall time = fixed + slope x MB, and CPU time = fixed + slope x "
                  "frames (the slope is the CPU per frame at the margin, without the fixed cost):"), "",
                  "| kind | tool | fit | fixed | slope | largest residual |", "|---|---|---|---:|---:|---:|", *fits]
    if floor:
        lines += ["", (f"Spark's floor in the same run: a fresh process that starts the same SparkSession and runs one "
                  f"Python task on one row: {floor.wall:.1f} s wall, {floor.cpu:.1f} s CPU, peak RSS "
                  f"{mb(floor.peak_rss)} MB.")]
    return lines + goals(rows)


def goals(rows: list[Row]) -> list[str]:
    """Issue 21's local goals, read off the largest capture of each kind and the fits."""
    out = []
    frame = [r for r in rows if r.kind == "frame"]
    if frame:
        big = max(frame, key=lambda r: r.mb)
        o = big.ours.use
        out.append(f"- CPU per frame of the whole tree, frame-heavy, {big.cap.name}: {o.cpu / big.frames * 1e6:.1f} us "
                   "(goal: at most 15)")
        out.append(f"- Against tshark on {big.cap.name}: {big.theirs.wall / o.wall:.2f}x its speed (goal: at least 1), "
                   f"counts {'equal' if big.same else 'DIFFERENT'}")
        if len(frame) >= 2:
            fixed, _, worst = fit([r.mb for r in frame], [r.ours.use.wall for r in frame])
            out.append(f"- Fixed cost, frame-heavy fit over {', '.join(f'{r.mb:.0f}' for r in frame)} MB: {fixed:.1f} s "
                       f"(goal: at most 6), largest residual {worst:.1f} s")
    for r in (max((r for r in rows if r.kind == k), key=lambda r: r.mb) for k in dict.fromkeys(x.kind for x in rows)):
        out.append(f"- Peak memory on {r.cap.name}: tree {mb(r.ours.use.peak_rss)} MB, largest Python worker "
                   f"{mb(r.ours.use.largest_python)} MB, largest JVM {mb(r.ours.use.largest_java)} MB")
    return ["", "Issue 21's goals, from this run:", "", *out] if out else []


def scaling(one: Ours, many: Ours, label: str) -> str:
    """What shrank with more workers and what did not: each stage's wall time (by the description
    `amqgen traffic` gives its jobs) and the time from the process start to the first task."""
    if not (one.app and many.app):
        return "Per stage: no event log."

    def walls(app: AppLog) -> dict[str, float]:
        return {app.described.get(sid, st.name): st.wall for sid, st in app.stages.items() if st.tasks}

    def start(o: Ours) -> float:
        assert o.app is not None
        return o.app.first_task - o.use.started

    a, b = walls(one.app), walls(many.app)
    stages = ", ".join(f"{name} {a[name]:.1f} s to {b[name]:.1f} s ({a[name] / b[name]:.2f}x)"
                       for name in a if name in b and b[name] > 0)
    return (f"Per stage, 1 worker to {label}: {stages}; process start to first task {start(one):.1f} s to "
            f"{start(many):.1f} s.")


def cluster_tables(ref: Row, runs: list[tuple[str, Ours, bool, str]]) -> list[str]:
    base = next((o.use.wall for label, o, _, _ in runs if label == "1 worker"), None)
    lines = [
        (f"Scale-out on {ref.cap.name} ({ref.mb:.1f} MB, {ref.frames} frames): a standalone master and workers of "
        "1 core each started by the bench on 127.0.0.1, `amqgen traffic --master spark://...` as a fresh process "
        "(its driver on the same machine). Driver CPU: the `amqgen` process tree; cluster CPU: master, workers, "
        "their executors and Python workers, over the run "
        "(local mode: its Python CPU, driver included, under 'of which'). Output compared with local mode's: every row of the "
        "four datasets (as sorted row sets) and summary.json."),
        "",
        ("| run | wall s | MB/s | throughput / 1 worker's | driver CPU s | cluster CPU s | of which Python s "
         "| CPU us/frame | driver peak MB | cluster peak MB | largest executor JVM MB | largest Python worker MB "
         "| output = local |"),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for label, o, same, _ in runs:
        ratio = f"{base / o.use.wall:.2f}" if base else "-"
        cpu = o.use.cpu + o.cluster_cpu
        py = o.cluster_python_cpu if o.cluster_cpu else o.use.python_cpu  # local: the driver is the executor
        lines.append(f"| {label} | {o.use.wall:.1f} | {ref.mb / o.use.wall:.1f} | {ratio} | {o.use.cpu:.1f} "
                     f"| {o.cluster_cpu:.1f} | {py:.1f} | {cpu / ref.frames * 1e6:.1f} | {mb(o.use.peak_rss)} "
                     f"| {mb(o.cluster_rss)} | {mb(o.cluster_jvm or o.use.largest_java)} "
                     f"| {mb(o.cluster_python or o.use.largest_python)} | {'yes' if same else 'NO'} |")
    last = runs[-1]
    if base and last[0] != "1 worker":
        lines += ["", (f"Throughput of {last[0]} over 1 worker's: {base / last[1].use.wall:.2f}x (goal: at least 1.7), "
                  f"output {'equal to' if all(same for _, _, same, _ in runs) else 'DIFFERENT from'} local mode's.")]
        one = next(o for label, o, _, _ in runs if label == "1 worker")
        lines += [scaling(one, last[1], last[0])]
    lines += ["", ("Where the time went (Spark's event log of each run; task time is launch to finish summed over "
                   "tasks, run and JVM CPU are Spark's executor metrics, the Python workers' CPU is not in JVM CPU; "
                   "a shuffle block another executor on the same host wrote is read from its file and counts as local, not "
                   "remote):"), ""]
    for label, o, same, detail in runs:
        lines.append(f"- {label}:" + ("" if same else f" OUTPUT DIFFERS: {detail}"))
        lines += breakdown(o.app, o.use.started) if o.app else ["  - (no event log)"]
    return lines


def write_readme(readme: Path, tag: str, text: str) -> None:
    """Replace the block between ``<!-- TAG:begin -->`` and ``<!-- TAG:end -->`` (appended if absent)."""
    body = readme.read_text()
    begin, end = f"<!-- {tag}:begin -->", f"<!-- {tag}:end -->"
    block = f"{begin}\n{text}\n{end}"
    if begin in body:
        body = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: block, body, flags=re.DOTALL)
    else:
        body += f"\n{block}\n"
    readme.write_text(body)


# -- the run ----------------------------------------------------------------------------------------------
def measure(acct: Accounting, kind: str, cap: Path, work: Path) -> Row:
    size = cap.stat().st_size / 1e6
    print(f"{cap.name}: tshark ...", file=sys.stderr)
    theirs, tcounts = tshark_run(acct, cap)
    print(f"{cap.name}: amqgen traffic ...", file=sys.stderr)
    ours = amqgen_run(acct, cap, work / f"out-{cap.stem}", work / "events" / cap.stem)
    row = Row(kind, cap, size, ours, theirs, ours.counts == tcounts)
    print(f"  {row.frames} frames; amqgen {ours.use.wall:.1f} s, {ours.use.cpu:.1f} s CPU; tshark {theirs.wall:.1f} s; "
          f"counts equal: {row.same}", file=sys.stderr)
    for line in breakdown(ours.app, ours.use.started) if ours.app else ():
        print(line, file=sys.stderr)
    if not row.same:
        print(f"  only amqgen: {ours.counts - tcounts}\n  only tshark: {tcounts - ours.counts}", file=sys.stderr)
    return row


def scale_out(acct: Accounting, ref: Row, work: Path, workers: int, memory: str) -> list[tuple[str, Ours, bool, str]]:
    runs: list[tuple[str, Ours, bool, str]] = [("local[2]", ref.ours, True, "")]
    cdir = work / "cluster"
    shutil.rmtree(cdir, ignore_errors=True)
    print(f"cluster: starting a standalone master on 127.0.0.1 under {cdir} ...", file=sys.stderr)
    with Standalone(cdir, acct, memory) as cluster:
        for n in range(1, workers + 1):
            cluster.add_worker()
            if n not in (1, workers):
                continue
            label = f"{n} worker" + ("s" if n > 1 else "")
            waited = cluster.settle()
            print(f"cluster: {label} of 1 core (idle after {waited:.1f} s), {ref.cap.name} ...", file=sys.stderr)
            with Watch(cluster.pids, cluster.group) as watch:
                o = amqgen_run(acct, ref.cap, cdir / f"out-{n}", cdir / "events" / str(n), cluster.url)
            o.cluster_cpu, o.cluster_rss = watch.cpu, watch.mem.peak
            o.cluster_jvm = watch.mem.largest("java", set(cluster.pids))  # an executor, not a daemon
            o.cluster_python = watch.mem.largest("python")
            o.cluster_python_cpu = watch.cpu_of("python")
            same, detail = same_output(o.out, ref.ours.out)
            print(f"  {o.use.wall:.1f} s, driver {o.use.cpu:.1f} s CPU, cluster {o.cluster_cpu:.1f} s CPU; "
                  f"output equal to local: {same} ({detail})", file=sys.stderr)
            runs.append((label, o, same, detail))
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="50,100,200", help="capture sizes in MB, 1-1000 (default 50,100,200)")
    ap.add_argument("--kinds", default="frame,byte", help="frame (frame-heavy), byte (byte-heavy) or both")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/amqgen-bench-traffic"),
                    help="captures (reused when present), outputs, event logs and the cluster's work directories")
    ap.add_argument("--connections", type=int, default=12)
    ap.add_argument("--record-rate", type=float, default=40,
                    help="MB/s on the wire, both directions, while recording a byte-heavy capture (default 40)")
    ap.add_argument("--cluster", action="store_true", help="also the scale-out runs on a standalone cluster")
    ap.add_argument("--cluster-capture", help="KIND:MB of the capture for --cluster (default the largest frame one)")
    ap.add_argument("--workers", type=int, default=2, help="--cluster: runs with 1 and with this many workers")
    ap.add_argument("--worker-memory", default="2g", help="--cluster: each worker's --memory")
    ap.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting for every amqgen traffic run (repeatable), e.g. spark.executor.memory=2g")
    ap.add_argument("--cpu-method", choices=("auto", "cgroup", "proc"), default="auto",
                    help="auto: a cpuacct cgroup per run when we may make one, else /proc and getrusage")
    ap.add_argument("--no-floor", action="store_true", help="skip timing Spark's floor")
    ap.add_argument("--quick", action="store_true",
                    help="the test's mode: the small fixture capture, local mode, no recording, warm-up or cluster")
    ap.add_argument("--readme", type=Path, help="rewrite the bench_traffic blocks of this file with the tables")
    args = ap.parse_args()
    # a SIGTERM unwinds like Ctrl-C, so the cluster, cgroups and temporary directories are cleaned up
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sizes = [int(x) for x in args.sizes.split(",")]
    kinds = args.kinds.split(",")
    if not all(1 <= s <= 1000 for s in sizes) or not set(kinds) <= set(KINDS):
        ap.error(f"--sizes takes MB from 1 to 1000, --kinds {', '.join(KINDS)}")
    SPARK_CONF.extend(args.spark_conf)
    acct = Accounting.detect(args.cpu_method)
    print(f"CPU: {acct.cpu_method}\nRSS: {acct.rss_method}", file=sys.stderr)
    tmp = None
    if args.quick:
        tmp = Path(tempfile.mkdtemp(prefix="amqgen-bench-traffic-"))
        work = tmp
    else:
        work = args.dir
        work.mkdir(parents=True, exist_ok=True)
    try:
        if args.quick:
            rows = [measure(acct, "fixture", FIXTURE, work)]
            text = "\n".join(local_tables(rows, acct, None, True))
            print(text)
            r = rows[0]
            print(f"quick: counts equal: {'yes' if r.same else 'NO'}; amqgen CPU us per frame: "
                  f"{r.ours.use.cpu / r.frames * 1e6:.1f}; peak RSS MB: {r.ours.use.peak_rss / 1e6:.0f}")
            if not r.same:
                sys.exit(1)
            return
        print("warm-up run (class archive) ...", file=sys.stderr)
        jsa = warm_up(work)
        print(f"  class archive: {jsa} ({jsa.stat().st_size / 1e6:.0f} MB)", file=sys.stderr)
        rows = []
        for kind in kinds:
            for size in sizes:
                cap = capture_path(work, kind, size)
                if not cap.exists():
                    print(f"recording {cap.name} ...", file=sys.stderr)
                    record(cap, kind, size, args.connections, args.record_rate)
                rows.append(measure(acct, kind, cap, work))
        floor = None if args.no_floor else min((spark_floor(acct) for _ in range(3)), key=lambda u: u.wall)
        text = "\n".join(local_tables(rows, acct, floor, False))
        print(text)
        ctext = None
        if args.cluster:
            ckind, _, csize = (args.cluster_capture or f"frame:{max(sizes)}").partition(":")
            if ckind not in KINDS or not csize.isdigit():
                ap.error("--cluster-capture takes KIND:MB, e.g. frame:1000")
            want = capture_path(work, ckind, int(csize))
            ref = next((r for r in rows if r.cap == want), None)
            if ref is None:
                if not want.exists():
                    record(want, ckind, int(csize), args.connections, args.record_rate)
                ref = measure(acct, ckind, want, work)
            ctext = "\n".join(cluster_tables(ref, scale_out(acct, ref, work, args.workers, args.worker_memory)))
            print("\n" + ctext)
        if args.readme:
            write_readme(args.readme, "bench_traffic", text)
            if ctext:
                write_readme(args.readme, "bench_traffic_cluster", ctext)
        if not all(r.same for r in rows):
            sys.exit(1)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
