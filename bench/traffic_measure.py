"""CPU time and peak memory of a whole process tree (a JVM, its Python workers, anything they fork).

``Accounting.detect()`` picks the method once per bench run, and says which in ``.cpu_method`` and
``.rss_method``:

- CPU, ``cgroup``: a cgroup v1 ``cpuacct`` group per measured run, created as a child of the cgroup
  this process is in, but only when that is the hierarchy's root (a cgroup someone else manages, as
  under a job runner, is left alone). The command is started through ``sh -c 'echo $$ >
  GROUP/cgroup.procs; exec CMD'``, so the process is in the group before it execs and everything it
  forks stays there; ``cpuacct.usage`` (nanoseconds, user + system) is read when it has exited.
- CPU, ``proc`` (no writable cpuacct hierarchy): the bench's ``getrusage(RUSAGE_CHILDREN)`` before
  and after, which holds every descendant that was waited for, plus the last sample (below) of the
  utime + stime of descendants still alive when the root exits. A lower bound: a process reparented
  to init and reaped there is missed.
- Peak RSS, ``cgroup``: a ``memory`` group made the same way (same root-only rule), read from
  ``memory.max_usage_in_bytes`` (resident pages plus page cache the tree touched).
- Peak RSS, always sampled too: every 100 ms the VmRSS of every process in the group (or in the tree
  under the root pid), summed; the largest sum is the tree's peak. Each process's own VmHWM is kept,
  so the largest JVM and the largest Python worker are reported apart. Sampling can miss a peak
  shorter than 100 ms.

A ``Watch`` does the same for processes already running (a standalone cluster's master, workers and
the executors they fork): CPU as the difference of its cgroup's ``cpuacct.usage`` (or of the summed
/proc accounting of its trees) between start and stop, RSS sampled meanwhile.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

CGROUP = Path("/sys/fs/cgroup")
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def _own_cgroup(controller: str) -> str | None:
    """This process's path in the v1 hierarchy that has ``controller`` (None: no such hierarchy)."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, ctrls, path = line.split(":", 2)
            if controller in ctrls.split(","):
                return path
    except OSError:
        pass
    return None


def _usable(controller: str, probe: str) -> Path | None:
    """The hierarchy's mount point, if we are at its root there and may create a child group."""
    base = CGROUP / controller
    if _own_cgroup(controller) != "/" or not (base / probe).exists():
        return None
    test = base / f"amqgen-bench-probe-{uuid.uuid4().hex[:8]}"
    try:
        test.mkdir()
        test.rmdir()
        return base
    except OSError:
        return None


class Group:
    """One child cgroup in each usable hierarchy, for one measured run or one cluster."""

    def __init__(self, acct: Accounting, label: str) -> None:
        name = f"amqgen-bench-{label}-{uuid.uuid4().hex[:8]}"
        self.cpu = acct.cpu_base / name if acct.cpu_base else None
        self.mem = acct.mem_base / name if acct.mem_base else None
        try:
            for d in (self.cpu, self.mem):
                if d:
                    d.mkdir()
        except OSError:
            self.close()
            raise

    def wrap(self, cmd: list[str]) -> list[str]:
        """``cmd`` started by a shell that first moves itself into the groups, then execs it."""
        dirs = [d for d in (self.cpu, self.mem) if d]
        if not dirs:
            return cmd
        moves = " && ".join(f"echo $$ > '{d}/cgroup.procs'" for d in dirs)
        return ["/bin/sh", "-c", f'{moves} && exec "$@"', "sh", *cmd]

    def pids(self) -> list[int]:
        d = self.cpu or self.mem
        if d is None:
            return []
        try:
            return [int(x) for x in (d / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def cpu_ns(self) -> int | None:
        return int((self.cpu / "cpuacct.usage").read_text()) if self.cpu else None

    def mem_peak(self) -> int | None:
        return int((self.mem / "memory.max_usage_in_bytes").read_text()) if self.mem else None

    def close(self) -> None:
        """Remove the groups; a process of ours still in one (a daemon that outlived its parent) is
        killed first, since a group with a process in it cannot be removed."""
        for _ in range(50):
            left = self.pids()
            if not left:
                break
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        for d in (self.cpu, self.mem):
            if d:
                with contextlib.suppress(OSError):
                    d.rmdir()


# -- /proc ---------------------------------------------------------------------------------------------
def _stat(pid: int) -> tuple[int, str, int, int] | None:
    """(ppid, comm, utime + stime + cutime + cstime, utime + stime) of a live process, in ticks."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = raw[raw.index("(") + 1:raw.rindex(")")]
    f = raw[raw.rindex(")") + 2:].split()
    own = int(f[11]) + int(f[12])
    return int(f[1]), comm, own + int(f[13]) + int(f[14]), own


def tree(roots: list[int]) -> list[int]:
    """``roots`` and all their live descendants."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))):
            children.setdefault(st[0], []).append(int(entry))
    out, todo = [], list(roots)
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def _status(pid: int) -> tuple[int, int, str] | None:
    """(VmRSS, VmHWM, kind) in bytes; kind is java, python or other, from the executable's name."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
        exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return None
    vals = {}
    for line in text.splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            vals[line[:5]] = int(line.split()[1]) * 1024
    kind = "java" if exe == "java" else "python" if exe.startswith("python") else "other"
    return vals.get("VmRSS", 0), vals.get("VmHWM", 0), kind


@dataclass
class Memory:
    """What the sampler saw."""

    peak: int = 0  # largest sum of VmRSS over the tree at one sample
    hwm: dict[int, tuple[str, int]] = field(default_factory=dict)  # pid -> (kind, VmHWM)
    samples: int = 0
    cpu_ticks: dict[int, int] = field(default_factory=dict)  # pid -> last cumulative ticks (proc method)
    own_ticks: dict[int, tuple[str, int]] = field(default_factory=dict)  # pid -> (kind, its own last ticks)

    def cpu_of(self, kind: str) -> float:
        """Seconds of CPU that processes of ``kind`` spent themselves, as last sampled: short of the
        truth by what each did after its last sample (up to 100 ms of CPU each)."""
        return sum(t for k, t in self.own_ticks.values() if k == kind) / TICK

    def largest(self, kind: str, skip: frozenset[int] | set[int] = frozenset()) -> int:
        return max((h for p, (k, h) in self.hwm.items() if k == kind and p not in skip), default=0)


class Sampler:
    """Samples a set of processes every ``period`` seconds on a thread until stopped."""

    def __init__(self, pids: Callable[[], list[int]], period: float = 0.1) -> None:
        self.pids, self.period, self.mem = pids, period, Memory()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:  # noqa: PYI034
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> None:
        total = 0
        for pid in self.pids():
            st = _status(pid)
            if st is None:
                continue
            rss, hwm, kind = st
            total += rss
            if hwm > self.mem.hwm.get(pid, ("", 0))[1]:
                self.mem.hwm[pid] = (kind, hwm)
            if (s := _stat(pid)) is not None:
                self.mem.cpu_ticks[pid] = s[2]
                self.mem.own_ticks[pid] = (kind, s[3])
        self.mem.peak = max(self.mem.peak, total)
        self.mem.samples += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.period)


# -- measuring --------------------------------------------------------------------------------------------
@dataclass
class Usage:
    """One measured process tree."""

    wall: float  # seconds
    cpu: float  # seconds of CPU, user + system, the whole tree
    peak_rss: int  # bytes: the cgroup's high-water mark where there is one, else the sampled peak
    sampled_rss: int  # bytes: the sampled peak of the tree's summed VmRSS
    largest_java: int  # bytes: the largest VmHWM of one JVM in the tree
    largest_python: int  # bytes: the largest VmHWM of one Python process other than the root
    java_cpu: float = 0.0  # seconds: the JVMs' own CPU, sampled (see Memory.cpu_of)
    python_cpu: float = 0.0  # seconds: the Python processes' own CPU, the root included, sampled
    returncode: int = 0
    stderr: str = ""
    started: float = 0.0  # time.time() at the start, to line up with Spark's event log


@dataclass
class Accounting:
    cpu_base: Path | None
    mem_base: Path | None

    @classmethod
    def detect(cls, method: str = "auto") -> Accounting:
        if method == "proc":
            return cls(None, None)
        got = cls(_usable("cpuacct", "cpuacct.usage"), _usable("memory", "memory.max_usage_in_bytes"))
        if method == "cgroup" and got.cpu_base is None:
            raise SystemExit("bench: --cpu-method cgroup, but no writable cpuacct hierarchy of which we are at the root")
        return got

    @property
    def cpu_method(self) -> str:
        if self.cpu_base:
            return f"cgroup v1 cpuacct.usage of a group per run ({self.cpu_base})"
        return "getrusage(RUSAGE_CHILDREN) + /proc utime+stime of descendants alive at the end (a lower bound)"

    @property
    def rss_method(self) -> str:
        sampled = "VmRSS of every process in the tree summed, sampled every 100 ms"
        if self.mem_base:
            return (f"cgroup v1 memory.max_usage_in_bytes of a group per run, which counts the page cache the run "
                    f"brought in too (also {sampled})")
        return sampled + " (no memory cgroup of our own to nest in)"

    def group(self, label: str) -> Group:
        return Group(self, label)

    def run(self, cmd: list[str], label: str, *, env: dict[str, str] | None = None,
            consume: Callable[[IO[str]], Any] | None = None, timeout: float | None = None) -> Usage:
        """Run ``cmd`` to its end; stdout goes to ``consume`` line by line (else is dropped), stderr is
        kept. Raises nothing on a failing exit status: the caller looks at ``returncode``."""
        import tempfile

        with tempfile.TemporaryFile("w+") as err:
            return self._run(cmd, label, env, consume, timeout, err)

    def _run(self, cmd: list[str], label: str, env: dict[str, str] | None,
             consume: Callable[[IO[str]], Any] | None, timeout: float | None, err: IO[str]) -> Usage:
        group = self.group(label)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started, t0 = time.time(), time.perf_counter()
        try:
            proc = subprocess.Popen(group.wrap(cmd), env=env,
                                    stdout=subprocess.PIPE if consume else subprocess.DEVNULL,
                                    stderr=err, text=True, start_new_session=True)
        except BaseException:
            group.close()
            raise
        sampler = Sampler(group.pids if (group.cpu or group.mem) else lambda: tree([proc.pid]))
        try:
            with sampler:
                if consume:
                    assert proc.stdout is not None
                    consume(proc.stdout)
                proc.wait(timeout)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if group.cpu:
                cpu = (group.cpu_ns() or 0) / 1e9
            else:
                # descendants still alive after the root exited (orphans, so not in our rusage): their
                # last sampled time; they are killed below
                left = sum(t for p, t in sampler.mem.cpu_ticks.items() if p != proc.pid and Path(f"/proc/{p}").exists())
                cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) + left / TICK
            mem = sampler.mem
            peak = group.mem_peak() or mem.peak
            err.seek(0)
            return Usage(wall, cpu, peak, mem.peak, mem.largest("java"), mem.largest("python", {proc.pid}),
                         mem.cpu_of("java"), mem.cpu_of("python"), proc.returncode, err.read(), started)
        finally:
            # the root's process group: the root if it still runs, and what it left behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if proc.stdout:
                proc.stdout.close()
            group.close()


class Watch:
    """CPU and RSS of processes already running (``roots`` and their descendants, or ``group``'s
    members), between ``__enter__`` and ``__exit__``."""

    def __init__(self, roots: list[int], group: Group | None) -> None:
        self.roots, self.group = roots, group
        self.cpu = 0.0
        self.mem = Memory()
        self._base: dict[str, float] = {}

    def _pids(self) -> list[int]:
        return self.group.pids() if self.group and (self.group.cpu or self.group.mem) else tree(self.roots)

    def cpu_seconds(self) -> float:
        """CPU the watched processes have spent so far (the group's usage, or the trees' ticks)."""
        if self.group and self.group.cpu:
            return (self.group.cpu_ns() or 0) / 1e9
        # live trees' own and reaped children's time: the worker waits for its executors
        return sum((st[2] for p in tree(self.roots) if (st := _stat(p))), 0) / TICK

    def cpu_of(self, kind: str) -> float:
        """Like ``Memory.cpu_of``, less what the processes already running had spent at the start."""
        return self.mem.cpu_of(kind) - self._base.get(kind, 0.0)

    def __enter__(self) -> Watch:  # noqa: PYI034
        self._start = self.cpu_seconds()
        self._sampler = Sampler(self._pids)
        self._sampler.sample()  # the daemons' CPU so far, taken off cpu_of
        self._base = {k: self._sampler.mem.cpu_of(k) for k in ("java", "python", "other")}
        self._sampler.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._sampler.__exit__()
        self.cpu = self.cpu_seconds() - self._start
        self.mem = self._sampler.mem
