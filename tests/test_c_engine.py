"""The C target's sans-I/O engine (include/<prefix>_engine.h, rendered from the behaviour plan) against a real
RabbitMQ on 127.0.0.1:5672 (guest/guest), driven by tests/c/engine_run.c over a POSIX socket: PLAIN handshake
with heartbeat 1 s and frame_max 4096, an exclusive queue, publisher confirms, bodies over frame_max, basic.qos
and acks, a 404 channel close survived, basic.get and get-empty, tx rollback and commit, local misuse refused
with nothing written, an idle stretch kept alive by the engine's heartbeats, clean close and the EOF after it.
The blocking client on it (client/<prefix>_client.h) runs the issue's exercise (examples/c_client/main.c, at
most 63 code lines) and an AMQPLAIN / confirms / get / wrong-password run (tests/c/client_run.c). Built with
warnings as errors, ASan and UBSan. Without a broker it FAILS (never skips).
"""

from __future__ import annotations

import os
import re
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


EXAMPLE = cbuild.ROOT / "examples" / "c_client" / "main.c"
FLAGS = (*cbuild.WARN, "-O1", "-g", *cbuild.SANITIZE)


@pytest.fixture(scope="module")
def objects(tree: Path) -> list[str]:
    """The library's and the client's objects, compiled once (ASan, UBSan, warnings as errors) for the three
    programs below."""
    out = tree.parent / "obj"
    out.mkdir()
    objs = []
    for src in [*cbuild.library_sources(tree), str(tree / "client" / f"{cbuild.PREFIX}_client.c")]:
        obj = out / (Path(src).stem + ".o")
        proc = subprocess.run([cbuild.tool("clang"), *FLAGS, "-I", str(tree / "include"), "-I", str(tree / "src"),
                               "-c", src, "-o", str(obj)], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr[-4000:]
        objs.append(str(obj))
    return objs


def link(tree: Path, objects: list[str], source: Path, name: str) -> Path:
    exe = tree.parent / name
    proc = subprocess.run([cbuild.tool("clang"), *FLAGS, "-I", str(tree / "include"), "-I", str(tree / "client"),
                           str(source), *objects, "-o", str(exe)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return exe


@pytest.fixture(scope="module")
def engine_run(tree: Path, objects: list[str]) -> Path:
    return link(tree, objects, cbuild.C_DIR / "engine_run.c", "engine_run")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode == 2 and proc.stdout.startswith("NO BROKER"):  # (engine_run's own check)
        pytest.fail(f"the C engine test needs a broker on {HOST}:{PORT}: {proc.stdout.strip()[10:]}")
    return proc


def test_the_engine_runs_the_scenario_against_rabbitmq(engine_run: Path) -> None:
    name = f"amqgen-c-engine-{uuid.uuid4().hex[:12]}"
    proc = run(str(engine_run), HOST, PORT, USER, PASSWORD, name, "300")
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


def code_lines(path: Path) -> int:
    """Lines with code: comments and blank lines not counted."""
    text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.DOTALL)
    return sum(1 for line in re.sub(r"//[^\n]*", "", text).splitlines() if line.strip())


def test_the_issue_exercise_in_at_most_63_lines(tree: Path, objects: list[str]) -> None:
    """examples/c_client/main.c: log in, exclusive queue, 100 messages with properties and a headers table, read
    back with acks (each message's index header compared), close; librabbitmq 0.11 takes 63 lines."""
    lines = code_lines(EXAMPLE)
    assert lines <= 63, f"the example has {lines} code lines"
    proc = run(str(link(tree, objects, EXAMPLE, "example")), HOST, PORT)
    assert proc.returncode == 0 and proc.stdout == "OK 100 messages published and read back with acks\n", (
        proc.stdout + proc.stderr)[-4000:]


def test_the_blocking_client_against_rabbitmq(tree: Path, objects: list[str]) -> None:
    """AMQPLAIN, confirms with bodies over frame_max waited for, basic.get back, get-empty, close; a wrong
    password refused with <PREFIX>_CLIENT_CLOSED."""
    name = f"amqgen-c-client-{uuid.uuid4().hex[:12]}"
    proc = run(str(link(tree, objects, cbuild.C_DIR / "client_run.c", "client_run")), HOST, PORT, name)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert proc.stdout.startswith("OK AMQPLAIN, 50 confirmed, 50 got back"), proc.stdout
