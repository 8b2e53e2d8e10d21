"""The Spark job: the only module that imports pyspark.

1. The driver finds the capture files, inflates gzip ones into the staging directory, and indexes
   every file into parts of whole records (:mod:`capture`).
2. ``spark.range`` gives one single-row partition per part; ``mapInArrow`` reads the part on an
   executor and yields Arrow batches of TCP segments.
3. The segments are repartitioned by connection and sorted by capture order (file, packet), so
   one task sees each connection whole and in order; Spark spills that sort to disk when it must.
4. ``mapInArrow`` runs :class:`session.Connection` over each connection: reassembly, framing and
   decoding with the codec rendered from ``--spec`` (shipped to the executors as a zip), checks.
   Its output is one row per frame, message, connection or violation, persisted once.
5. Writing the frames dataset as Parquet decodes everything into the cache; the other three
   datasets and the summary's one aggregation then run as concurrent jobs over it.
"""

from __future__ import annotations

import json
import os
import sys
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from . import capture, records
from .codec import SpecFacts, load
from .jvm import ClassArchive
from .session import Options, Rows, connection_key, decode_sorted

_ARROW = {
    "string": pa.string(), "int": pa.int32(), "long": pa.int64(), "bool": pa.bool_(),
    "ts": pa.timestamp("us", tz="UTC"), "binary": pa.binary(), "strings": pa.list_(pa.string()),
}
_DDL = {"string": "string", "int": "int", "long": "bigint", "bool": "boolean", "ts": "timestamp", "binary": "binary",
        "strings": "array<string>"}

KINDS = tuple(records.DATASETS)  # frames, messages, connections, violations
_STRUCTS = {k: pa.struct([pa.field(n, _ARROW[t]) for n, t, _ in cols]) for k, cols in records.DATASETS.items()}
OUT_SCHEMA = pa.schema([pa.field("kind", pa.int8()), *(pa.field(k, _STRUCTS[k]) for k in KINDS)])
OUT_DDL = "kind tinyint, " + ", ".join(
    f"{k} struct<{', '.join(f'{n}: {_DDL[t]}' for n, t, _ in cols)}>" for k, cols in records.DATASETS.items())

SEGMENT_DDL = ("conn string, file_rank int, packet bigint, ts bigint, src string, dst string, seq bigint, "
               "ack bigint, flags int, payload binary, missing int")
_SEGMENT_SCHEMA = pa.schema([
    ("conn", pa.string()), ("file_rank", pa.int32()), ("packet", pa.int64()), ("ts", pa.int64()),
    ("src", pa.string()), ("dst", pa.string()), ("seq", pa.int64()), ("ack", pa.int64()), ("flags", pa.int32()),
    ("payload", pa.binary()), ("missing", pa.int32()),
])
_BATCH = 8192


# -- stage 2: reading capture parts -----------------------------------------------------------------
def read_parts(parts: list[capture.Part]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """mapInArrow over ``spark.range(len(parts))``: each row names a part; yield its TCP segments."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for i in batch.column(0).to_pylist():
                yield from _segment_batches(parts[i])

    return run


def _segment_batches(part: capture.Part) -> Iterator[pa.RecordBatch]:
    cols: list[list[Any]] = [[] for _ in range(11)]
    for s in capture.read_part(part):
        conn = connection_key(s)
        for col, v in zip(cols, (conn, s.file_rank, s.packet, s.ts, s.src, s.dst, s.seq, s.ack, s.flags,
                                 s.payload, s.missing), strict=True):
            col.append(v)
        if len(cols[0]) >= _BATCH:
            yield pa.RecordBatch.from_arrays([pa.array(c, t.type) for c, t in zip(cols, _SEGMENT_SCHEMA)],
                                             schema=_SEGMENT_SCHEMA)
            cols = [[] for _ in range(11)]
    if cols[0]:
        yield pa.RecordBatch.from_arrays([pa.array(c, t.type) for c, t in zip(cols, _SEGMENT_SCHEMA)],
                                         schema=_SEGMENT_SCHEMA)


# -- stage 4: connections -> rows ------------------------------------------------------------------
def _batches(rows: Rows) -> Iterator[pa.RecordBatch]:
    for i, kind in enumerate(KINDS):
        got: list[tuple[Any, ...]] = getattr(rows, kind)
        if not got:
            continue
        cols = list(zip(*got, strict=True))
        struct = pa.StructArray.from_arrays(
            [pa.array(c, f.type) for c, f in zip(cols, _STRUCTS[kind], strict=True)], fields=list(_STRUCTS[kind]))
        n = len(got)
        arrays = [pa.array([i] * n, pa.int8())]
        for k in KINDS:
            arrays.append(struct if k == kind else pa.nulls(n, _STRUCTS[k]))
        yield pa.RecordBatch.from_arrays(arrays, schema=OUT_SCHEMA)
        got.clear()


def decode_partition(facts: SpecFacts, options: Options, files: list[str]) -> Callable[
        [Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def keyed(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[str, capture.Segment]]:
        Segment = capture.Segment
        for batch in batches:
            d = batch.to_pydict()
            for key, *seg in zip(d["conn"], d["file_rank"], d["packet"], d["ts"], d["src"], d["dst"], d["seq"],
                                 d["ack"], d["flags"], d["payload"], d["missing"], strict=True):
                yield key, Segment(*seg)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = Rows()
        for full in decode_sorted(load(facts), options, files, keyed(batches), rows, _BATCH):
            yield from _batches(full)

    return run


# -- the driver ------------------------------------------------------------------------------------
@dataclass
class Plan:
    files: list[str]  # by rank
    parts: list[capture.Part]
    packets: int
    octets: int


def spark_session(master: str | None, conf: dict[str, str]) -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = (SparkSession.builder.master(master or "local[*]").appName("amqgen traffic")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "true")
         .config("spark.pyspark.python", sys.executable)
         .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
         .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(_BATCH))
         # Parquet's own microsecond UTC timestamps rather than Spark's legacy INT96
         .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
         .config("spark.sql.session.timeZone", "UTC"))
    local = not master or master.startswith("local")
    archive = ClassArchive.for_this_install()
    java = archive.options()
    if local:
        # The driver is the executor here. C1-compiled code is enough for the JVM's share of this
        # job (the decoding is Python), and C2's compiler threads would take a core from it: a
        # trivial local job costs about half the CPU time with this (13 s against 22-24 s measured).
        b = b.config("spark.driver.memory", "2g")
        java = ["-XX:TieredStopAtLevel=1", *java]
    b = b.config("spark.driver.extraJavaOptions", " ".join(java))
    for k, v in conf.items():  # a --conf spark.driver.extraJavaOptions=... replaces all of the above
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if "spark.driver.extraJavaOptions" not in conf:
        archive.started(spark)
    return spark


_SHIPPED: dict[int, set[str]] = {}


def ship(spark: SparkSession, codec_root: Path, package: str, staging: Path) -> None:
    """Zip the rendered codec and amqgen's own Python modules, and add both to every executor."""
    import amqgen

    shipped = _SHIPPED.setdefault(id(spark.sparkContext), set())
    for root, pkg in ((codec_root, package), (Path(amqgen.__file__).resolve().parent.parent, "amqgen")):
        if pkg in shipped:  # a context takes each file name once; the same spec gives the same package
            continue
        shipped.add(pkg)
        z = staging / f"{pkg}.zip"
        with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
            for f in sorted((root / pkg).rglob("*.py")):
                zf.write(f, f.relative_to(root).as_posix())
        spark.sparkContext.addPyFile(str(z))
    if str(codec_root) not in sys.path:  # the driver imports it too (the summary names frame types)
        sys.path.insert(0, str(codec_root))


def decode(spark: SparkSession, plan: Plan, facts: SpecFacts, options: Options) -> DataFrame:
    # One single-row partition per part: spark.range splits 0..n-1 evenly, so part i is task i.
    # (A pyspark.sql.datasource reader does the same, at the cost of two Python planner
    # processes on the driver before the first task runs: 2-6 s measured here.)
    n_parts = len(plan.parts)
    segments = spark.range(0, n_parts, 1, n_parts).mapInArrow(read_parts(plan.parts), SEGMENT_DDL)
    # Many more tasks than cores, so connections of unequal size still keep every core busy to the
    # end (a task holds one connection at a time; an empty task costs tens of milliseconds).
    n = max(8 * spark.sparkContext.defaultParallelism, -(-plan.octets // (32 << 20)))
    ordered = segments.repartition(n, "conn").sortWithinPartitions("conn", "file_rank", "packet")
    return ordered.mapInArrow(decode_partition(facts, options, plan.files), OUT_DDL)


def write(out: DataFrame, target: Path, progress: Callable[[str], None]) -> dict[str, Any]:
    """Write the four datasets under ``target`` from the persisted union ``out`` and return the
    summary. The frames dataset is written first, which decodes everything into the cache; the
    other three and the summary's aggregation then run as concurrent Spark jobs over the cache."""
    from concurrent.futures import ThreadPoolExecutor

    def dataset(kind: str) -> None:
        ds = out.where(F.col("kind") == KINDS.index(kind)).select(f"{kind}.*")
        if kind in ("connections", "violations"):
            ds = ds.coalesce(1)
        ds.write.mode("error").parquet(str(target / kind))

    progress("decoding; writing frames")
    dataset("frames")
    progress("writing messages, connections and violations; summarising")
    with ThreadPoolExecutor(4) as pool:
        jobs = [pool.submit(dataset, k) for k in KINDS[1:]]
        summary = pool.submit(summarise, out)
        for j in jobs:
            j.result()
        return summary.result()


def summarise(out: DataFrame) -> dict[str, Any]:
    """The summary.json object: one Spark aggregation over the persisted union of the datasets."""
    fr, vi, co = F.col("frames"), F.col("violations"), F.col("connections")
    groups = out.groupBy(
        "kind", fr.frame_type.alias("frame_type"), fr.method.alias("method"), fr.direction.alias("direction"),
        fr.error.isNotNull().alias("failed"), vi.kind.alias("violation"),
    ).agg(F.count(F.lit(1)).alias("n"), F.sum(co.bytes_client).alias("c"), F.sum(co.bytes_server).alias("s"),
          F.sum(co.gaps).alias("g"), F.array_distinct(F.flatten(F.collect_list(co.files))).alias("files")).collect()
    frames_by_type: dict[str, int] = {}
    methods: dict[tuple[str, str], int] = {}
    violations: dict[str, int] = {}
    messages = conns = client = server = gaps = failed = 0
    files: set[str] = set()
    for r in groups:
        kind, n = KINDS[r["kind"]], r["n"]
        if kind == "frames":
            frames_by_type[r["frame_type"]] = frames_by_type.get(r["frame_type"], 0) + n
            if r["method"] is not None:
                methods[(r["method"], r["direction"])] = methods.get((r["method"], r["direction"]), 0) + n
            failed += n if r["failed"] else 0
        elif kind == "messages":
            messages += n
        elif kind == "connections":
            conns, client, server, gaps = conns + n, client + (r["c"] or 0), server + (r["s"] or 0), gaps + (r["g"] or 0)
            files.update(r["files"] or ())
        else:
            violations[r["violation"]] = violations.get(r["violation"], 0) + n
    return {
        "frames": sum(frames_by_type.values()),
        "frames_by_type": dict(sorted(frames_by_type.items())),
        "methods_by_direction": [{"method": m, "direction": d, "count": n} for (m, d), n in sorted(methods.items())],
        "connections": conns,
        "messages": messages,
        "bytes": {"client": int(client), "server": int(server)},
        "gaps": int(gaps),
        "decode_errors": failed,
        "violations": sum(violations.values()),
        "violations_by_kind": dict(sorted(violations.items())),
        "amqp_files": sorted(files),
    }


# -- the whole run ---------------------------------------------------------------------------------
class TrafficError(Exception):
    """The run could not produce an output directory (nothing readable, or Spark failed)."""


def run(captures: list[Path], out: Path, spec: Any, *, master: str | None = None, options: Options | None = None,
        part_size: int = 16 << 20, conf: dict[str, str] | None = None,
        progress: Callable[[str], None] = print) -> dict[str, Any]:
    return _run(captures, out, spec, master, options or Options(), part_size, conf or {}, progress)


def _run(captures: list[Path], out: Path, spec: Any, master: str | None, options: Options, part_size: int,
         conf: dict[str, str], say: Callable[[str], None]) -> dict[str, Any]:
    """Decode ``captures`` into ``out``; return the summary. ``out`` appears whole or not at all."""
    import shutil
    import tempfile
    import time

    from . import inputs
    from .codec import package_name, render_codec, spec_facts

    started = time.monotonic()

    def progress(line: str) -> None:
        say(f"{line} [{time.monotonic() - started:.1f} s]" if line.startswith("amqgen traffic:") else line)

    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    target = staging / "out"
    try:
        progress(f"amqgen traffic: indexing {len(captures)} input(s)")
        plan_in = inputs.prepare(captures, staging / "work", part_size)
        for line in plan_in.problems:
            progress(line)
        if not plan_in.parts:
            raise TrafficError("no capture could be read" + ("" if plan_in.problems else " (no input files)"))
        progress(f"amqgen traffic: {len(plan_in.files)} file(s), {plan_in.packets} packets, "
                 f"{plan_in.octets} octets in {len(plan_in.parts)} part(s); rendering the {spec.title} codec")
        package = package_name(spec)
        codec_root = staging / "work" / "codec"
        render_codec(spec, codec_root)
        facts = spec_facts(spec, package)
        progress(f"amqgen traffic: starting Spark ({master or 'local[*]'})")
        spark = spark_session(master, conf)
        ship(spark, codec_root, package, staging / "work")
        plan = Plan(plan_in.files, plan_in.parts, plan_in.packets, plan_in.octets)
        decoded = decode(spark, plan, facts, options).persist()
        try:
            summary = write(decoded, target, lambda m: progress(f"amqgen traffic: {m}"))
            seen = set(summary.pop("amqp_files"))
            for name in plan.files:
                if name not in seen:
                    line = f"{name}: error: no AMQP connection found (ports {', '.join(map(str, sorted(options.ports)))}" \
                           " and any port whose data starts with a protocol header)"
                    progress(line)
                    plan_in.problems.append(line)
        finally:
            decoded.unpersist()
        summary.update({
            "format": "amqgen-traffic-summary", "version": 1, "spec": spec.title, "spec_sha256": spec.sha256,
            "files": plan.files, "skipped": plan_in.problems, "input_octets": plan.octets, "packets": plan.packets,
            "seconds": round(time.monotonic() - started, 3),
        })
        (target / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
        if out.exists():
            if not (out / "summary.json").is_file():
                raise TrafficError(f"{out} exists and is not an amqgen traffic output; choose another --out")
            shutil.rmtree(out)
        os.replace(target, out)
        return summary
    finally:
        shutil.rmtree(staging, ignore_errors=True)
