"""The Spark job: the only module that imports pyspark.

1. The driver finds the capture files, inflates gzip ones into the staging directory, and indexes
   every file into parts of whole records (:mod:`capture`).
2. Four tasks per core index the parts, one part at a time (:mod:`index`): one record per connection
   found in a part, holding that connection's packets in the part (numbers, times, sequence numbers,
   flags, where each payload lies in the file) but no payload octets, appended to the task's own
   index file in the staging directory (beside the output: a file system every executor shares).
   Its result says where each record lies and how many packets it holds.
3. The driver deals the connections to twice as many decode tasks as there are cores, by size, and
   gives each task the places of its connections' records, sorted by connection and capture order
   (file, first packet), so one task sees each connection whole and in order. Spark carries a few
   small rows per part: no shuffle, no cache.
4. Each decode task runs :class:`session.Connection` over its connections: it reads the payloads from
   the capture file by offset, reassembles, frames, decodes with the codec rendered from ``--spec``
   (shipped to the executors as a zip), checks, and writes the four datasets as Parquet files of its
   own (:mod:`output`). Its result is one small record per file written and one with its summary.
5. The driver keeps the files the successful attempts name, in partition order, and merges the
   summaries. Frames and messages never pass through the JVM.

Spark's RDD API carries it: every record is made and read by Python, so Spark's SQL planner and code
generation would only add start-up time.
"""

from __future__ import annotations

import json
import os
import py_compile
import re
import sys
import threading
import zipfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from pyspark import RDD
from pyspark.sql import SparkSession

from . import capture, index, output
from .codec import SpecFacts, load
from .jvm import ClassArchive
from .session import Options, Rows, decode_sorted

#: Rows a task holds before it appends them to its Parquet files (one row group each time).
_FLUSH = 65536

#: Where one index record lies, and what it holds: (connection key, file rank, the part's first packet,
#: packets, index file, offset, length). The record is a blob (:mod:`index`) of that connection's
#: packets in that part.
Located = tuple[str, int, int, int, str, int, int]
#: A decode task's result: (partition, dataset or None, file path or None, rows, summary JSON or None).
Result = tuple[int, str | None, str | None, int, str | None]


def _attempt(split: int) -> str:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return f"{split:05d}-{ctx.taskAttemptId() if ctx else 0}"


# -- stage 2: indexing capture parts ---------------------------------------------------------------
def index_parts(parts: list[capture.Part], directory: str) -> Callable[[int, Iterable[int]], Iterator[Located]]:
    """Over the part numbers: one blob per connection found in each part, appended to this task
    attempt's own index file under ``directory``; the results say where each blob lies."""

    def run(split: int, numbers: Iterable[int]) -> Iterator[Located]:
        os.makedirs(directory, exist_ok=True)  # the driver made it; another host may not see it yet
        path = os.path.join(directory, _attempt(split) + ".aqx")
        got: list[Located] = []
        with open(path, "wb") as f:
            at = 0
            for i in numbers:
                part = parts[i]
                for key, blob in index.by_connection(index.part_index(part)):
                    got.append((key, part.file_rank, part.first_packet, index.blob_packets(blob), path, at, len(blob)))
                    f.write(blob)
                    at += len(blob)
        return iter(got)  # once the file is whole and closed

    return run


def read_located(located: Iterable[Located]) -> Iterator[tuple[str, bytes]]:
    """Each record's (connection key, blob), read from the index files one at a time."""
    fds: dict[str, int] = {}
    try:
        for key, _, _, _, path, offset, length in located:
            fd = fds.get(path)
            if fd is None:
                fd = fds[path] = os.open(path, os.O_RDONLY)
            blob = os.pread(fd, length, offset)
            if len(blob) != length:
                raise index.BlobError(f"{path}: {len(blob)} octets at {offset}, the index said {length}")
            yield key, blob
    finally:
        for fd in fds.values():
            os.close(fd)


# -- stage 3: connections -> Parquet files ---------------------------------------------------------
def decode_partition(facts: SpecFacts, options: Options, files: list[str], paths: list[str],
                     directory: str) -> Callable[[int, Iterable[list[Located]]], Iterator[Result]]:
    def keyed(tasks: Iterable[list[Located]]) -> Iterator[tuple[str, capture.Segment]]:
        for located in tasks:
            for key, blob in read_located(located):
                for seg in index.segments([blob], paths):
                    yield key, seg

    def run(split: int, tasks: Iterable[list[Located]]) -> Iterator[Result]:
        out = output.TaskOutput(Path(directory), _attempt(split))
        rows = Rows()
        for full in decode_sorted(load(facts), options, files, keyed(tasks), rows, _FLUSH):
            out.write(full)
        for kind, path, n in out.close():
            yield split, kind, path, n, None
        yield split, None, None, 0, out.summary.to_json()

    return run


# -- the driver ------------------------------------------------------------------------------------
@dataclass
class Plan:
    files: list[str]  # by rank: the names rows carry
    paths: list[str]  # by rank: where executors read the file (an inflated copy for gzip)
    parts: list[capture.Part]
    packets: int
    octets: int


#: The console lines Spark's JVM prints on every start, whatever log4j says, that tell an amqgen user nothing.
_JVM_NOISE = re.compile(rb"^(WARNING: Using incubator modules: |Setting default log level to |To adjust logging level use )")
_LOG4J = Path(__file__).with_name("log4j2-quiet.properties")


def _user_log4j(conf: dict[str, str]) -> bool:
    """Whether the user configured Spark's logging: a log4j2 file in Spark's conf directory, or JVM
    options of their own (which replace amqgen's)."""
    if "spark.driver.extraJavaOptions" in conf:
        return True
    conf_dir = os.environ.get("SPARK_CONF_DIR") or (
        os.path.join(os.environ["SPARK_HOME"], "conf") if os.environ.get("SPARK_HOME") else None)
    if not conf_dir:
        return False
    return any(Path(conf_dir, n).is_file() for n in (
        "log4j2.properties", "log4j2.xml", "log4j2.yaml", "log4j2.yml", "log4j2.json"))


class _QuietStderr:
    """The driver JVM inherits this process's standard error. While it starts, that descriptor is a
    pipe read by a thread that passes everything on (Spark's progress bar, and what this process
    writes meanwhile, included) but the JVM's own start-up lines; afterwards this process writes to
    its standard error directly again, and the JVM keeps the pipe."""

    def __init__(self) -> None:
        self.saved = -1
        self.thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        sys.stderr.flush()
        r, w = os.pipe()
        self.saved = os.dup(2)
        os.dup2(w, 2)
        os.close(w)
        self.thread = threading.Thread(target=self._pump, args=(r, os.dup(self.saved)), daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        os.dup2(self.saved, 2)  # ours again; the JVM keeps the pipe for as long as it lives
        os.close(self.saved)

    @staticmethod
    def _pump(r: int, real: int) -> None:
        pending = b""
        while chunk := os.read(r, 65536):
            pending += chunk
            out = []
            # whole lines are judged; a progress bar redraws with carriage returns and passes at once
            while (cut := max(pending.rfind(b"\n"), pending.rfind(b"\r"))) >= 0 or pending:
                if cut < 0:
                    if b"\n" not in pending and pending.startswith((b"WARNING", b"Setting", b"To adjust")):
                        break  # maybe the start of a noise line: wait for its end
                    out.append(pending)
                    pending = b""
                    break
                head, pending = pending[:cut + 1], pending[cut + 1:]
                for line in head.splitlines(keepends=True):
                    if not _JVM_NOISE.match(line):
                        out.append(line)
            if out:
                os.write(real, b"".join(out))
        if pending:
            os.write(real, pending)
        os.close(r)


def spark_session(master: str | None, conf: dict[str, str], verbose: bool = False) -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = (SparkSession.builder.master(master or "local[*]").appName("amqgen traffic")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "true")
         .config("spark.pyspark.python", sys.executable)
         .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable))
    local = not master or master.startswith("local")
    archive = ClassArchive.for_this_install()
    # The driver JVM only schedules and moves a few records (the work is Python's): C1-compiled code is
    # enough, and C2's compiler threads would take CPU from the Python workers, which in local mode, or
    # on a cluster sharing the driver's machine, run beside it.
    java = ["-XX:TieredStopAtLevel=1", *archive.options()]
    if local:
        b = b.config("spark.driver.memory", "2g")  # the driver is the executor here
    quiet = not verbose and not _user_log4j(conf)
    if quiet:
        java.append(f"-Dlog4j2.configurationFile={_LOG4J.as_uri()}")
    b = b.config("spark.driver.extraJavaOptions", " ".join(java))
    if not local:
        # Executors only schedule and move a few records here (the work is in their Python workers):
        # C1 code and the driver's class archive, where it fits, make them start on less CPU.
        b = b.config("spark.executor.extraJavaOptions",
                     " ".join(["-XX:TieredStopAtLevel=1", *archive.executor_options()]))
    for k, v in conf.items():  # a --conf spark.driver.extraJavaOptions=... replaces all of the above
        b = b.config(k, v)
    if quiet:
        with _QuietStderr():
            spark = b.getOrCreate()
    else:
        spark = b.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    if "spark.driver.extraJavaOptions" not in conf:
        archive.started(spark)
    return spark


_SHIPPED: dict[int, set[str]] = {}


def zip_modules(codec_root: Path, package: str, staging: Path, *more: str) -> dict[str, Path]:
    """Zip the rendered codec (and ``more`` packages rendered beside it: the 1.0 codec) and amqgen's own Python
    modules for the executors, each module with its bytecode beside it: {package: zip}. Plain Python, so the
    driver does it while the JVM starts."""
    import amqgen

    zips: dict[str, Path] = {}
    for root, pkg in ((codec_root, package), *((codec_root, m) for m in more),
                      (Path(amqgen.__file__).resolve().parent.parent, "amqgen")):
        z = zips[pkg] = staging / f"{pkg}.zip"
        with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
            for f in sorted((root / pkg).rglob("*.py")):
                arc = f.relative_to(root).as_posix()
                zf.write(f, arc)
                # Compiled beside the source: a Python worker imports from the zip, which keeps no
                # bytecode cache, and compiling the codec there cost each worker about 0.2 s of CPU.
                # (An interpreter of another version finds a foreign magic number and compiles the source.)
                pyc = staging / "module.pyc"
                py_compile.compile(str(f), cfile=str(pyc), doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
                zf.write(pyc, arc[:-3] + ".pyc")
    return zips


def ship(spark: SparkSession, zips: dict[str, Path], codec_root: Path) -> None:
    """Add the zips (:func:`zip_modules`) to every executor."""
    shipped = _SHIPPED.setdefault(id(spark.sparkContext), set())
    for pkg, z in zips.items():
        if pkg in shipped:  # a context takes each file name once; the same spec gives the same package
            continue
        shipped.add(pkg)
        spark.sparkContext.addPyFile(str(z))
    if str(codec_root) not in sys.path:  # the driver imports it too (the summary names frame types)
        sys.path.insert(0, str(codec_root))


def balance(sizes: dict[str, int], bins: int) -> dict[str, int]:
    """Connections into ``bins`` tasks of about equal work, by packets: the largest first, each into
    the lightest bin so far (ties broken by key and bin number, so the same input gives the same
    tasks). Bin 0 ends up the heaviest, and Spark starts tasks in partition order."""
    load = [0] * bins
    out: dict[str, int] = {}
    for key, n in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])):
        b = min(range(bins), key=lambda i: (load[i], i))
        out[key] = b
        load[b] += n
    order = sorted(range(bins), key=lambda i: (-load[i], i))
    rank = {b: r for r, b in enumerate(order)}
    return {k: rank[b] for k, b in out.items()}


def deal_records(located: list[Located], most: int) -> list[list[Located]]:
    """The index records of each decode task (at most ``most`` tasks, none empty): connections dealt
    by size (:func:`balance`), each task's records sorted by connection and capture order (file,
    first packet)."""
    sizes: dict[str, int] = {}
    for rec in located:
        sizes[rec[0]] = sizes.get(rec[0], 0) + rec[3]
    bins = min(len(sizes), most)
    deal = balance(sizes, bins)
    tasks: list[list[Located]] = [[] for _ in range(bins)]
    for rec in sorted(located, key=lambda r: (r[0], r[1], r[2])):
        tasks[deal[rec[0]]].append(rec)
    return tasks


def decode(spark: SparkSession, plan: Plan, facts: SpecFacts, options: Options, index_dir: Path,
           directory: Path) -> RDD[Result] | None:
    """The job: its results, which name the files each task wrote under ``directory`` and carry the
    tasks' summaries; None when no part holds a TCP packet. ``index_dir``: where the index tasks
    write the index, on the same shared file system as ``directory``.

    Spark's RDD API, not its SQL: every row here is made and read by Python, and the rows are few (a
    part's packets of one connection each), so Spark's planner and code generation would only add
    start-up time (about a second and a half of CPU on each run, measured)."""
    sc = spark.sparkContext
    n_parts = len(plan.parts)
    cores = sc.defaultParallelism
    # Four index tasks per core (each reads its parts one at a time, so its memory stays that of one
    # part): on 1 GB, 8 tasks of 7-8 parts took 1.8-2.2 s where 60 of one part took 4.6-5.2 s.
    # The index goes to files beside the output, not through Spark: kept in Spark's cache and shuffled
    # to the decode tasks, it took a stage and a Python pass of its own, and the executors' JVMs spent
    # twice the CPU (1 GB, 2 executors: 11.4 s against 5.6 s; the run took 4.8 s longer).
    sc.setJobDescription("amqgen traffic: index the parts")
    located = (sc.parallelize(range(n_parts), min(n_parts, 4 * cores))
               .mapPartitionsWithIndex(index_parts(plan.parts, str(index_dir))).collect())
    if not located:
        return None
    # A task decodes whole connections, so the connections are the parallelism: they are dealt to
    # twice as many tasks as there are cores, by size (hashing the keys instead left some tasks with
    # three connections and others with none); task i is partition i, and Spark starts partition 0
    # (the heaviest) first.
    tasks = deal_records(located, 2 * cores)
    sc.setJobDescription("amqgen traffic: decode")
    return sc.parallelize(tasks, len(tasks)).mapPartitionsWithIndex(
        decode_partition(facts, options, plan.files, plan.paths, str(directory)))


def collect(result: RDD[Result] | None, target: Path) -> dict[str, Any]:
    """Run the job, keep the files its successful tasks wrote (in partition order) under ``target``,
    and return the merged summary."""
    rows = result.collect() if result is not None else []
    written = sorted((partition, kind, path, n) for partition, kind, path, n, _ in rows if kind is not None)
    output.commit([(kind, path, n) for _, kind, path, n in written if path is not None], target)
    return output.merge(summary for *_, summary in rows if summary is not None)


def _end(spark: SparkSession) -> None:
    """End the application this run started: the JVM side at once (executors released, the event log
    closed as ended: 0.07 s), and PySpark's own bookkeeping in the background, because its stop()
    then waits about a second for its accumulator server's thread, and a run's process usually ends
    right after the run."""
    spark.sparkContext._jsc.stop()
    threading.Thread(target=spark.stop, name="amqgen-spark-stop", daemon=True).start()


# -- the whole run ---------------------------------------------------------------------------------
class TrafficError(Exception):
    """The run could not produce an output directory (nothing readable, or Spark failed)."""


@dataclass
class Starting:
    """A SparkSession on its way (started in a thread), and whether this run started it."""

    future: Future[SparkSession]
    ours: bool  # False: getOrCreate returns a session the caller made, the caller's to stop


def start(master: str | None, conf: dict[str, str], verbose: bool = False) -> Starting:
    """Start Spark in the background: the JVM starts while the caller goes on (reads the spec, indexes)."""
    ours = SparkSession.getActiveSession() is None
    future: Future[SparkSession] = Future()

    def run() -> None:
        try:
            future.set_result(spark_session(master, conf, verbose))
        except BaseException as e:  # noqa: BLE001 -- handed to whoever waits for the session
            future.set_exception(e)

    # a daemon thread: a caller that fails first (a bad spec) exits at once, and its JVM with it
    threading.Thread(target=run, name="amqgen-spark-start", daemon=True).start()
    return Starting(future, ours)


def run(captures: list[Path], out: Path, spec: Any, *, master: str | None = None, options: Options | None = None,
        part_size: int = 16 << 20, conf: dict[str, str] | None = None,
        progress: Callable[[str], None] = print, verbose: bool = False,
        starting: Starting | None = None, spec10: Any = None) -> dict[str, Any]:
    """Decode ``captures`` into ``out``; return the summary. ``starting``: Spark already on its way
    (:func:`start`, with the same master and conf), else it is started here. ``spec``: the 0-x spec;
    ``spec10``: the AMQP 1.0 file set its connections are decoded with (None: they are not decoded)."""
    return _run(captures, out, spec, master, options or Options(), part_size, conf or {}, progress, verbose,
                starting, spec10)


def _run(captures: list[Path], out: Path, spec: Any, master: str | None, options: Options, part_size: int,
         conf: dict[str, str], say: Callable[[str], None], verbose: bool,
         starting: Starting | None, spec10: Any = None) -> dict[str, Any]:
    """Decode ``captures`` into ``out``; return the summary. ``out`` appears whole or not at all."""
    import shutil
    import tempfile
    import time

    from . import inputs
    from .codec import package_name, package_name10, render_codec, render_codec10, spec_facts

    started = time.monotonic()

    def progress(line: str) -> None:
        say(f"{line} [{time.monotonic() - started:.1f} s]" if line.startswith("amqgen traffic:") else line)

    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    target = staging / "out"
    # Spark starts (a JVM, a second or more) while this process indexes the inputs, renders the codec
    # and zips the modules for the executors (the command line starts it earlier still, before it
    # reads the spec); a failure on either side is reported once both have finished.
    starting = starting or start(master, conf, verbose)
    ours = starting.ours
    progress(f"amqgen traffic: starting Spark ({master or 'local[*]'}); indexing {len(captures)} input(s)")
    spark: SparkSession | None = None
    try:
        try:
            plan_in = inputs.prepare(captures, staging / "work", part_size)
            for line in plan_in.problems:
                progress(line)
            if not plan_in.parts:
                raise TrafficError("no capture could be read" + ("" if plan_in.problems else " (no input files)"))
            progress(f"amqgen traffic: {len(plan_in.files)} file(s), {plan_in.packets} packets, "
                     f"{plan_in.octets} octets in {len(plan_in.parts)} part(s); rendering the {spec.title} codec"
                     + (f" and the {spec10.title} codec" if spec10 is not None else ""))
            package = package_name(spec)
            codec_root = staging / "work" / "codec"
            render_codec(spec, codec_root)
            if spec10 is not None:
                render_codec10(spec10, codec_root)
            facts = spec_facts(spec, package, spec10)
            zips = zip_modules(codec_root, package, staging / "work",
                               *([package_name10(spec10)] if spec10 is not None else []))
        finally:
            spark = starting.future.result()
        ship(spark, zips, codec_root)
        plan = Plan(plan_in.files, plan_in.paths, plan_in.parts, plan_in.packets, plan_in.octets)
        progress("amqgen traffic: decoding")
        tasks = staging / "tasks"
        index_dir = staging / "index"
        index_dir.mkdir()
        summary = collect(decode(spark, plan, facts, options, index_dir, tasks), target)
        output.discard(tasks)  # what failed or speculative task attempts left behind
        seen = set(summary.pop("amqp_files"))
        for name in plan.files:
            if name not in seen:
                line = f"{name}: error: no AMQP connection found (ports {', '.join(map(str, sorted(options.ports)))}" \
                       " and any port whose data starts with a protocol header)"
                progress(line)
                plan_in.problems.append(line)
        summary.update({
            "format": "amqgen-traffic-summary", "version": 1, "spec": spec.title, "spec_sha256": spec.sha256,
            "spec_1_0": None if spec10 is None else spec10.title,
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
        if ours and spark is not None:
            _end(spark)
        shutil.rmtree(staging, ignore_errors=True)
