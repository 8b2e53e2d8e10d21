"""The C target's sans-I/O engine (include/<prefix>_engine.h, rendered from the behaviour plan) against a real
RabbitMQ on 127.0.0.1:5672 (guest/guest), driven by tests/c/engine_run.c over a POSIX socket: PLAIN handshake
with heartbeat 1 s and frame_max 4096, an exclusive queue, publisher confirms, bodies over frame_max, basic.qos
and acks, a 404 channel close survived, basic.get and get-empty, tx rollback and commit, local misuse refused
with nothing written, an idle stretch kept alive by the engine's heartbeats, clean close and the EOF after it.
Built with warnings as errors, ASan and UBSan. Without a broker it FAILS (never skips).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "c"))
import cbuild

pytestmark = pytest.mark.broker

HOST = os.environ.get("AMQP_HOST", "127.0.0.1")
PORT = os.environ.get("AMQP_PORT", "5672")
USER = os.environ.get("AMQP_USER", "guest")
PASSWORD = os.environ.get("AMQP_PASSWORD", "guest")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cbuild.render(tmp_path_factory.mktemp("c-engine") / "gen")


@pytest.fixture(scope="module")
def engine_run(tree: Path) -> Path:
    return cbuild.compile_program(tree, [cbuild.C_DIR / "engine_run.c"], tree.parent / "engine_run",
                                  flags=(*cbuild.WARN, "-O1", "-g", *cbuild.SANITIZE))


def run(exe: Path, count: int) -> subprocess.CompletedProcess[str]:
    name = f"amqgen-c-engine-{uuid.uuid4().hex[:12]}"
    proc = subprocess.run([str(exe), HOST, PORT, USER, PASSWORD, name, str(count)], capture_output=True, text=True,
                          timeout=120, check=False)
    if proc.returncode == 2 and proc.stdout.startswith("NO BROKER"):
        pytest.fail(f"the C engine test needs a broker on {HOST}:{PORT}: {proc.stdout.strip()[10:]}")
    return proc


def test_the_engine_runs_the_scenario_against_rabbitmq(engine_run: Path) -> None:
    proc = run(engine_run, 300)
    assert proc.returncode == 0, f"engine run failed: {proc.stdout.strip()} {proc.stderr.strip()}"[-4000:]
    assert proc.stdout.startswith("OK 300 messages published, 300 confirmed, 30 bodies over frame_max"), proc.stdout


def test_the_engine_compiles_clean_and_clang_formatted(tree: Path) -> None:
    """engine.c and engine.h as rendered are what clang-format makes of them (render formats them), and they
    compile with warnings as errors under gcc too."""
    fmt = cbuild.tool("clang-format")
    style = "{BasedOnStyle: LLVM, ColumnLimit: 100, SortIncludes: false}"
    for f in (tree / "src" / f"{cbuild.PREFIX}_engine.c", tree / "include" / f"{cbuild.PREFIX}_engine.h"):
        proc = subprocess.run([fmt, f"--style={style}", str(f)], capture_output=True, text=True, check=True)
        assert proc.stdout == f.read_text(), f"{f.name} is not clang-formatted"
    proc = subprocess.run([cbuild.tool("gcc"), *cbuild.WARN, "-O2", "-I", str(tree / "include"), "-I",
                           str(tree / "src"), "-c", str(tree / "src" / f"{cbuild.PREFIX}_engine.c"), "-o",
                           str(tree.parent / "engine.o")], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
