"""A Spark standalone cluster on the loopback interface for the bench, and Spark's event log read back.

``Standalone(work, acct)`` starts a master from the installed PySpark's ``bin/spark-class`` on
127.0.0.1 (free ports, web UIs on free ports too), ``add_worker()`` adds a worker of 1 core and
``--memory`` (each with its own work and log directory under ``work``), and leaving the ``with``
block, error or not, sends SIGTERM to each daemon's process group (a worker's executors are its
children), then SIGKILL to whatever is left after 20 s. All of them are started in one accounting
group (``traffic_measure.Group``), so a run's cluster-side CPU is the group's usage over the run.

``event_log(path)`` sums what one application's JSON event log says: when the application and each
executor started, per stage its wall time, tasks, summed task time and its parts, shuffle octets.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traffic_measure import Accounting, Group, Watch


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_class() -> Path:
    import pyspark

    path = Path(pyspark.__file__).parent / "bin" / "spark-class"
    if not path.is_file():
        raise SystemExit(f"bench: {path} is missing (PySpark without its launcher scripts)")
    return path


class Standalone:
    def __init__(self, work: Path, acct: Accounting, worker_memory: str = "2g") -> None:
        self.work, self.acct, self.worker_memory = work, acct, worker_memory
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Any] = []
        self.url = ""
        self.group: Group | None = None

    def _env(self, d: Path) -> dict[str, str]:
        # loopback only: SPARK_LOCAL_IP binds the daemons' and executors' other ports (block manager,
        # shuffle) to 127.0.0.1 as well
        return {**os.environ, "SPARK_LOG_DIR": str(d), "SPARK_WORKER_DIR": str(d), "SPARK_LOCAL_IP": "127.0.0.1",
                "SPARK_LOCAL_HOSTNAME": "localhost", "PYSPARK_PYTHON": sys.executable}

    def _start(self, name: str, args: list[str], ready: str) -> None:
        d = self.work / name
        d.mkdir(parents=True, exist_ok=True)
        log = open(d / "daemon.log", "w")  # noqa: SIM115 -- closed in __exit__
        self.logs.append(log)
        assert self.group is not None
        cmd = self.group.wrap([str(spark_class()), *args])
        self.procs.append(subprocess.Popen(cmd, env=self._env(d), stdout=subprocess.DEVNULL, stderr=log,
                                           start_new_session=True))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if ready in (d / "daemon.log").read_text(errors="replace"):
                return
            if self.procs[-1].poll() is not None:
                break
            time.sleep(0.3)
        raise RuntimeError(f"{name} did not start ({ready!r} not logged):\n"
                           f"{(d / 'daemon.log').read_text(errors='replace')[-3000:]}")

    def __enter__(self) -> Standalone:  # noqa: PYI034
        self.group = self.acct.group("cluster")
        try:
            port = free_port()
            self.url = f"spark://127.0.0.1:{port}"
            self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                                   str(port), "--webui-port", str(free_port())], "I have been elected leader")
        except BaseException:
            self.__exit__()
            raise
        return self

    def add_worker(self) -> None:
        n = len(self.procs)
        d = self.work / f"worker-{n}"
        self._start(f"worker-{n}", ["org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                                    "--port", str(free_port()), "--webui-port", str(free_port()), "--cores", "1",
                                    "--memory", self.worker_memory, "--work-dir", str(d)],
                    "Successfully registered with master")

    def settle(self, idle: float = 0.05, window: float = 0.5, timeout: float = 60.0) -> float:
        """Wait until the daemons are idle: a worker logs that it registered before its JVM has
        necessarily finished starting, and a timed run should not share the cores with the rest of that
        start (daemons that run for days are idle when a job comes). Returns when one ``window`` passes
        with the cluster's CPU under ``idle`` of a core (or at ``timeout``), giving the seconds waited."""
        watch = Watch(self.pids, self.group)
        start = time.monotonic()
        last = watch.cpu_seconds()
        while time.monotonic() - start < timeout:
            time.sleep(window)
            now = watch.cpu_seconds()
            if now - last < idle * window:
                break
            last = now
        return time.monotonic() - start

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def __exit__(self, *exc: object) -> None:
        for p in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs.clear()
        for f in self.logs:
            f.close()
        self.logs.clear()
        if self.group:
            self.group.close()  # kills any executor or Python worker still in the group
            self.group = None


# -- the event log ------------------------------------------------------------------------------------------
@dataclass
class Stage:
    name: str
    tasks: int = 0
    wall: float = 0.0  # submission to completion, seconds
    task_time: float = 0.0  # summed launch-to-finish of its tasks
    run: float = 0.0  # summed executor run time
    cpu: float = 0.0  # summed executor CPU time (JVM threads only: the Python workers are other processes)
    deserialize: float = 0.0
    gc: float = 0.0
    shuffle_write: int = 0  # octets
    shuffle_read: int = 0  # octets, local + remote
    shuffle_remote: int = 0
    fetch_wait: float = 0.0
    executors: set[str] = field(default_factory=set)


@dataclass
class AppLog:
    start: float = 0.0  # epoch seconds
    end: float = 0.0
    executors: dict[str, float] = field(default_factory=dict)  # id -> added, epoch seconds
    stages: dict[int, Stage] = field(default_factory=dict)
    first_task: float = 0.0  # epoch seconds
    last_stage: float = 0.0  # epoch seconds: the last stage's completion
    job_of: dict[int, int] = field(default_factory=dict)  # stage id -> job id
    described: dict[int, str] = field(default_factory=dict)  # stage id -> its job's description (job.py sets them)

    def first_executor(self) -> float:
        """Seconds from the application's start to its first executor (0 in local mode: the driver)."""
        others = [t for e, t in self.executors.items() if e != "driver"]
        return min(others) - self.start if others else 0.0


def find_log(directory: Path) -> list[Path]:
    """The event log files of the one application logged under ``directory``, in order: Spark 4
    writes a rolling log (a directory ``eventlog_v2_APP`` of ``events_N_APP`` files) by default, a
    single file otherwise. A log still in progress (an application that did not end cleanly) is read
    too."""
    entries = sorted(directory.iterdir(), key=lambda p: p.stat().st_mtime)
    if not entries:
        return []
    last = entries[-1]
    if last.is_dir():
        parts = [p for p in last.iterdir() if p.name.startswith("events_")]
        return sorted(parts, key=lambda p: int(p.name.split("_")[1]))
    return [last]


def event_log(paths: list[Path]) -> AppLog:
    app = AppLog()
    for line in (ln for p in paths for ln in p.open()):  # ~1 MB of JSON per thousand tasks
        ev = json.loads(line)
        kind = ev.get("Event")
        if kind == "SparkListenerApplicationStart":
            app.start = ev["Timestamp"] / 1000
        elif kind == "SparkListenerApplicationEnd":
            app.end = ev["Timestamp"] / 1000
        elif kind == "SparkListenerExecutorAdded":
            app.executors[ev["Executor ID"]] = ev["Timestamp"] / 1000
        elif kind == "SparkListenerJobStart":
            described = (ev.get("Properties") or {}).get("spark.job.description")
            for sid in ev["Stage IDs"]:
                app.job_of[sid] = ev["Job ID"]
                if described:
                    app.described[sid] = described.removeprefix("amqgen traffic: ")
        elif kind == "SparkListenerStageCompleted":
            info = ev["Stage Info"]
            st = app.stages.setdefault(info["Stage ID"], Stage(info["Stage Name"]))
            st.name = info["Stage Name"]
            st.wall = (info.get("Completion Time", 0) - info.get("Submission Time", 0)) / 1000
            app.last_stage = max(app.last_stage, info.get("Completion Time", 0) / 1000)
        elif kind == "SparkListenerTaskEnd":
            st = app.stages.setdefault(ev["Stage ID"], Stage("?"))
            ti, tm = ev["Task Info"], ev.get("Task Metrics") or {}
            st.tasks += 1
            st.executors.add(ti["Executor ID"])
            st.task_time += (ti["Finish Time"] - ti["Launch Time"]) / 1000
            app.first_task = min(app.first_task or ti["Launch Time"] / 1000, ti["Launch Time"] / 1000)
            st.run += tm.get("Executor Run Time", 0) / 1000
            st.cpu += tm.get("Executor CPU Time", 0) / 1e9
            st.deserialize += tm.get("Executor Deserialize Time", 0) / 1000
            st.gc += tm.get("JVM GC Time", 0) / 1000
            w, r = tm.get("Shuffle Write Metrics") or {}, tm.get("Shuffle Read Metrics") or {}
            st.shuffle_write += w.get("Shuffle Bytes Written", 0)
            st.shuffle_remote += r.get("Remote Bytes Read", 0)
            st.shuffle_read += r.get("Remote Bytes Read", 0) + r.get("Local Bytes Read", 0)
            st.fetch_wait += r.get("Fetch Wait Time", 0) / 1000
    return app


def _labels(app: AppLog, stages: list[tuple[int, Stage]]) -> dict[int, str]:
    """Job id, job description (``amqgen traffic`` names each of its jobs) and call site of each stage,
    and whether the stage writes or reads a shuffle."""
    out = {}
    for sid, st in stages:
        site = st.name.split(" at ")[0]
        what = app.described.get(sid, "")
        flow = "writes a shuffle" if st.shuffle_write else "reads a shuffle" if st.shuffle_read else ""
        out[sid] = (f"job {app.job_of.get(sid, '?')} {site}" + (f" [{what}]" if what else "")
                    + (f" ({flow})" if flow else ""))
    return out


def breakdown(app: AppLog, launched: float) -> list[str]:
    """Lines saying where one run's time went: process start (``launched``, epoch seconds) to the
    application's start (Python imports, indexing, rendering the codec, the driver JVM), to its first
    executor and first task, then each stage that ran tasks."""
    stages = [(sid, st) for sid, st in sorted(app.stages.items()) if st.tasks]
    def rel(t: float) -> float:
        return t - app.start if t else 0.0

    out = [(f"  - driver: process start -> Spark application start {app.start - launched:.1f} s; then first executor "
           f"at +{app.first_executor():.1f} s, first task at +{rel(app.first_task):.1f} s, last stage done at "
           f"+{rel(app.last_stage):.1f} s; executors {', '.join(sorted(app.executors)) or '-'}"),
           (f"  - tasks: {sum(st.tasks for _, st in stages)} in {len(stages)} stages, task time "
           f"{sum(st.task_time for _, st in stages):.1f} s (executor run {sum(st.run for _, st in stages):.1f} s, "
           f"deserialize {sum(st.deserialize for _, st in stages):.1f} s), shuffle written "
           f"{sum(st.shuffle_write for _, st in stages) / 1e6:.1f} MB, read remotely "
           f"{sum(st.shuffle_remote for _, st in stages) / 1e6:.1f} MB")]
    labels = _labels(app, stages)
    for sid, st in stages:
        out.append(f"  - stage {sid} {labels[sid]}: {st.tasks} tasks on {len(st.executors)} executor(s), wall {st.wall:.1f} s, "
                   f"task time {st.task_time:.1f} s (run {st.run:.1f}, JVM CPU {st.cpu:.1f}, deserialize "
                   f"{st.deserialize:.1f}, GC {st.gc:.1f}), shuffle write {st.shuffle_write / 1e6:.1f} MB, read "
                   f"{st.shuffle_read / 1e6:.1f} MB ({st.shuffle_remote / 1e6:.1f} MB remote, fetch wait "
                   f"{st.fetch_wait:.1f} s)")
    return out
