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

ROOT = Path(__file__).resolve().parent.parent

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
