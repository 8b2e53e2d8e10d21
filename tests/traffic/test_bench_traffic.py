"""bench/bench_traffic.py --quick: on the small fixture capture, `amqgen traffic` in local mode finds the
same frames as tshark, and the bench measures a positive, finite CPU time and peak RSS of its process
tree (no timing asserted: the machine may be busy)."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_the_traffic_bench_quick_mode(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_traffic.py"), "--quick"], capture_output=True,
                          text=True, timeout=300, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = re.search(r"^quick: counts equal: (\w+); amqgen CPU us per frame: ([0-9.e+inf]+); peak RSS MB: (\d+)$",
                  proc.stdout, re.MULTILINE)
    assert m, proc.stdout
    assert m[1] == "yes"
    cpu = float(m[2])
    assert cpu > 0 and math.isfinite(cpu)
    assert int(m[3]) > 0
    assert "| pika-small.pcap | fixture |" in proc.stdout
    assert "CPU: " in proc.stdout and "Peak RSS: " in proc.stdout


def test_the_scale_out_report_compares_each_stage_and_the_start() -> None:
    """From two event logs' figures (built here by hand): each stage's wall time by its job's
    description, the ratio, and the process start to the first task."""
    from types import SimpleNamespace

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from bench_traffic import scaling
        from traffic_cluster import AppLog, Stage
    finally:
        sys.path.remove(str(ROOT / "bench"))

    def run(index: float, decode: float, first_task: float) -> SimpleNamespace:
        app = AppLog(start=1000.0, first_task=1000.0 + first_task)
        app.stages = {0: Stage("collect at job.py:1", tasks=8, wall=index),
                      1: Stage("collect at job.py:2", tasks=4, wall=decode),
                      2: Stage("skipped", tasks=0, wall=0.0)}  # a stage that ran no task is left out
        app.described = {0: "index the parts", 1: "decode"}
        return SimpleNamespace(app=app, use=SimpleNamespace(started=998.0))

    line = scaling(run(4.5, 33.0, 1.9), run(3.0, 16.5, 2.6), "2 workers")  # type: ignore[arg-type]
    assert line == ("Per stage, 1 worker to 2 workers: index the parts 4.5 s to 3.0 s (1.50x), decode 33.0 s to "
                    "16.5 s (2.00x); process start to first task 3.9 s to 4.6 s.")


def test_the_cluster_settles_before_a_timed_run() -> None:
    """``Standalone.settle`` returns only once the daemons stop using CPU: here a stand-in daemon that
    computes for 0.6 s of CPU, then sleeps. Its CPU time when settle returns says whether settle waited."""
    sys.path.insert(0, str(ROOT / "bench"))
    from traffic_cluster import Standalone
    from traffic_measure import TICK, _stat

    code = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\ntime.sleep(60)"
    busy = subprocess.Popen([sys.executable, "-c", code])
    try:
        cluster = Standalone.__new__(Standalone)  # the daemons only: no master started
        cluster.procs, cluster.group = [busy], None
        waited = cluster.settle(window=0.2, timeout=60)
        st = _stat(busy.pid)
        assert st is not None
        cpu = st[3] / TICK  # its own user + system time
        assert cpu >= 0.55 and waited < 60, (cpu, waited)
    finally:
        busy.kill()
        busy.wait()
