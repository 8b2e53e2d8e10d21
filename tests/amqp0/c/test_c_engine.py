"""The C target's sans-I/O engine (include/<prefix>_engine.h, rendered from the behaviour plan) against a real
RabbitMQ on 127.0.0.1:5672 (guest/guest), driven by tests/c/engine_run.c over a POSIX socket: the Python engine's
scenario list (PLAIN handshake with heartbeat 1 s and frame_max 4096, 3 channels, 1,000 confirmed messages with
bodies over frame_max, basic.qos and acks, a 404 channel close survived, basic.get and get-empty, tx rollback and
commit, a server-sent basic.cancel, local misuse refused with nothing written, an idle stretch kept alive by the
engine's heartbeats, clean close and the EOF after it, then a forced close by rabbitmqctl on a second connection).
The blocking client on it (client/<prefix>_client.h) runs the issue's exercise (examples/c_client/main.c, at
most 63 code lines), an AMQPLAIN / confirms / get / wrong-password run (tests/c/client_run.c), and a confirming
channel's end over hand-built server frames (tests/c/client_ends.c), the client under faults (tests/c/client_faults.c,
issue 41: a black-holed link, a refused login, the server's close, a 16 MiB message); OpenSSL as its transport
(examples/c_client/tls.c) through a TLS-terminating forwarder; the exercise again, built by CMake against the
rendered CMakeLists.txt's client library. Built with warnings as errors, ASan and UBSan.
Without a broker it FAILS (never skips).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "c"))
import cbuild
from tls_forwarder import TlsForwarder, self_signed

pytestmark = [pytest.mark.peers, pytest.mark.broker]

HOST = os.environ.get("AMQP_HOST", "127.0.0.1")
PORT = os.environ.get("AMQP_PORT", "5672")
USER = os.environ.get("AMQP_USER", "guest")
PASSWORD = os.environ.get("AMQP_PASSWORD", "guest")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cbuild.render(tmp_path_factory.mktemp("c-engine") / "gen")


EXAMPLE = cbuild.ROOT / "examples" / "c_client" / "main.c"
TLS_EXAMPLE = cbuild.ROOT / "examples" / "c_client" / "tls.c"
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


def link(tree: Path, objects: list[str], source: Path, name: str, libs: tuple[str, ...] = ()) -> Path:
    exe = tree.parent / name
    proc = subprocess.run([cbuild.tool("clang"), *FLAGS, "-I", str(tree / "include"), "-I", str(tree / "client"),
                           str(source), *objects, "-o", str(exe), *libs], capture_output=True, text=True, check=False)
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


def close_connection(port: int) -> None:
    """Closes the broker's connection from our local ``port`` (that one only) with rabbitmqctl."""
    ctl = shutil.which("rabbitmqctl")
    assert ctl, "rabbitmqctl is not installed (Debian package rabbitmq-server)"
    listed = subprocess.run([ctl, "list_connections", "-q", "pid", "peer_port"], capture_output=True, text=True,
                            timeout=60, check=False)
    assert listed.returncode == 0, listed.stderr
    pids = [ln.split("\t")[0] for ln in listed.stdout.splitlines() if ln.split("\t")[-1].strip() == str(port)]
    assert len(pids) == 1, f"no broker connection from port {port}: {listed.stdout}"
    closed = subprocess.run([ctl, "close_connection", pids[0], "forced by test_c_engine"], capture_output=True,
                            text=True, timeout=60, check=False)
    assert closed.returncode == 0, closed.stderr


@pytest.mark.slow
def test_the_engine_runs_the_scenario_list_against_rabbitmq(engine_run: Path) -> None:
    """The Python engine's RabbitMQ scenario list on the C engine (tests/c/engine_run.c says what each step
    checks); the broker's forced close is rabbitmqctl's, run here on the program's second connection only."""
    name = f"amqgen-c-engine-{uuid.uuid4().hex[:12]}"
    proc = subprocess.Popen([str(engine_run), HOST, PORT, USER, PASSWORD, name, "1000"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line.strip())
            if line.startswith("READY "):
                close_connection(int(line.split()[1]))
            if line.startswith(("FAIL", "NO BROKER", "OK forced close")):
                break
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    if proc.returncode == 2 and seen and seen[0].startswith("NO BROKER"):
        pytest.fail(f"the C engine test needs a broker on {HOST}:{PORT}: {seen[0][10:]}")
    assert proc.returncode == 0 and len(seen) == 10, f"engine run failed: {seen} {err}"[-4000:]
    beats = re.fullmatch(r"OK idle 3 s, (\d+) heartbeats sent", seen[6] if len(seen) > 6 else "")
    assert beats and int(beats.group(1)) >= 2, seen  # one a second of our silence (RabbitMQ closes after 2 missed)
    assert seen == [
        "OK negotiated heartbeat 1 frame_max 4096",
        "OK 1000 published, 1000 confirmed",
        "OK qos 10, 1000 deliveries acked, 100 bodies over frame_max, bodies and headers as published",
        "OK 404 closed channel 2, the engine answered, channel 2 reopened",
        "OK get-empty, tx rollback not delivered, tx commit delivered by get-ok",
        "OK server-sent basic.cancel on channel 3",
        seen[6],
        "OK clean close, then the end of the stream: end of stream after the connection closed",
        seen[8] if re.fullmatch(r"READY \d+", seen[8]) else "READY <port>",
        "OK forced close 320 answered, then the end of the stream: end of stream after the connection closed",
    ], seen


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


CONSUMER = """cmake_minimum_required(VERSION 3.13)
project(client_consumer C)
add_subdirectory(${TREE} amqp)
add_executable(example ${EXAMPLE})
target_link_libraries(example PRIVATE ag::client)
"""


def test_the_client_library_built_by_cmake(tree: Path, tmp_path: Path) -> None:
    """The rendered CMakeLists.txt's client library: a CMake project that add_subdirectory()s the rendered tree and
    links ag::client (nothing else named: the codec and the include folders come with it) builds the issue's
    exercise (examples/c_client/main.c) with warnings as errors, and it runs against the broker."""
    cmake = cbuild.tool("cmake")
    (tmp_path / "CMakeLists.txt").write_text(CONSUMER)
    build = tmp_path / "build"
    for cmd in ([cmake, "-S", str(tmp_path), "-B", str(build), f"-DTREE={tree}", f"-DEXAMPLE={EXAMPLE}",
                 f"-D{cbuild.PREFIX.upper()}_BUILD_SHARED=OFF", "-DCMAKE_C_FLAGS=" + " ".join(cbuild.WARN)],
                [cmake, "--build", str(build), "-j", "2"]):
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert (build / "amqp" / f"lib{cbuild.PREFIX}_client.a").is_file()
    proc = run(str(build / "example"), HOST, PORT)
    assert proc.returncode == 0 and proc.stdout == "OK 100 messages published and read back with acks\n", (
        proc.stdout + proc.stderr)[-4000:]


def test_the_blocking_client_against_rabbitmq(tree: Path, objects: list[str]) -> None:
    """AMQPLAIN, confirms with bodies over frame_max waited for, basic.get back, get-empty, close; a wrong
    password refused with <PREFIX>_CLIENT_CLOSED."""
    name = f"amqgen-c-client-{uuid.uuid4().hex[:12]}"
    proc = run(str(link(tree, objects, cbuild.C_DIR / "client_run.c", "client_run")), HOST, PORT, name)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert proc.stdout.startswith("OK AMQPLAIN, 50 confirmed, 50 got back"), proc.stdout


def test_the_client_when_a_confirming_channel_ends(tree: Path, objects: list[str]) -> None:
    """tests/c/client_ends.c, the client over a scripted transport of hand-built server frames: wait_confirms and
    a call whose channel the server closes with publishes unconfirmed return <PREFIX>_CLIENT_CLOSED with the
    close in last, the unconfirmed runs go to on_event, and the close-ok of our close ends it."""
    proc = subprocess.run([str(link(tree, objects, cbuild.C_DIR / "client_ends.c", "client_ends"))],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0 and proc.stdout == (
        "OK wait_confirms and a call end with the channel's close, unconfirmed 1:2..3 1:1..1\n"), (
        proc.stdout + proc.stderr)[-4000:]


def openssl_libs() -> tuple[str, ...]:
    """The flags that link libssl, or a failure naming its Debian package."""
    proc = subprocess.run([cbuild.tool("pkg-config"), "--libs", "openssl"], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0 and Path("/usr/include/openssl/ssl.h").is_file(), (
        "libssl is not installed (Debian package libssl-dev; scripts/test-env installs it)")
    return tuple(proc.stdout.split())


def test_the_tls_example_through_a_tls_forwarder(tree: Path, objects: list[str], tmp_path: Path,
                                                 tls_forwarder: tuple[TlsForwarder, Path]) -> None:
    """examples/c_client/tls.c, OpenSSL as the client's transport, through tests/peers/tls_forwarder.py (TLS with a
    self-signed certificate for localhost, in front of the broker): the forwarder negotiated TLS 1.2+, got SNI
    localhost and decrypted the AMQP protocol header; the 5 confirmed messages came back. A CA that did not sign
    the certificate, and a trusted certificate for another name, each end it with one line and status 1 before
    any AMQP."""
    fwd, cert = tls_forwarder
    exe = link(tree, objects, TLS_EXAMPLE, "tls", openssl_libs())
    proc = run(str(exe), str(cert), "localhost", str(fwd.port))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    lines = proc.stdout.splitlines()
    assert re.fullmatch(r"TLSv1\.[23], certificate verified for localhost", lines[0]), lines
    assert lines[1:] == [*(f"received secret {i}" for i in range(5)),
                         "OK 5 messages published with confirms over TLS and read back with acks"], lines
    assert len(fwd.seen) == 1 and fwd.seen[0][0] in ("TLSv1.2", "TLSv1.3"), fwd.seen
    assert fwd.seen[0][1] == b"AMQP\x00\x00\x09\x01"  # the 0-9-1 protocol header, decrypted by the forwarder
    assert fwd.server_names == ["localhost"]

    # a certificate for another name: as the CA, it did not sign the forwarder's; trusted, it does not name localhost
    other, other_key = self_signed(tmp_path, "elsewhere.invalid")
    elsewhere = TlsForwarder(other, other_key)
    try:
        for port, why in ((fwd.port, "self-signed certificate"), (elsewhere.port, "hostname mismatch")):
            proc = run(str(exe), str(other), "localhost", str(port))
            assert (proc.returncode, proc.stdout, proc.stderr) == (
                1, "", f"tls: localhost:{port}: certificate verify failed: {why}\n"), proc
    finally:
        elsewhere.close()
    assert len(fwd.seen) == 1 and elsewhere.seen == []  # no AMQP through either


# -- the client under faults (issue 41): tests/c/client_faults.c, on the calls the client had before the fixes --
@pytest.fixture(scope="module")
def client_faults(tree: Path, objects: list[str]) -> Path:
    return link(tree, objects, cbuild.C_DIR / "client_faults.c", "client_faults")


def test_the_client_ends_lost_within_two_heartbeats_on_a_black_hole(client_faults: Path) -> None:
    """Defect 15: heartbeat 1 s through a proxy that black-holes both ways: queue.declare ends with
    AG_CLIENT_LOST within 2 intervals + 1 s (+ 0.5 s slack), client_next after it at once, client_close AG_OK (the
    old client handed the peer-silent event to on_event and waited its whole timeout: 8 s here, AG_CLIENT_TIMEOUT)."""
    from faults.proxy import FaultProxy

    with FaultProxy(int(PORT), HOST) as proxy:
        proc = subprocess.Popen([str(client_faults), "silent", "127.0.0.1", str(proxy.port)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdin is not None
        ready = proc.stdout.readline()
        assert ready == "READY\n", ready + (proc.stderr.read() if proc.stderr else "")
        proxy.blackhole()
        out, err = proc.communicate("go\n", timeout=60)
    assert proc.returncode == 0 and out.startswith("OK lost"), (out + err)[-4000:]


def test_a_refused_login_is_403_and_leaves_nothing_open(client_faults: Path) -> None:
    """Defects 16, 17, 19: a wrong password is AG_CLIENT_CLOSED with the broker's 403 (the client advertises
    authentication_failure_close; before, RabbitMQ dropped the socket: reply code 0), the failed open leaves no
    file descriptor (it kept its socket), status_name knows the client's statuses (was "unknown"), and a later
    client_close is AG_OK (was -14, misuse)."""
    proc = run(str(client_faults), "refused", HOST, PORT)
    assert proc.returncode == 0 and proc.stdout.startswith("OK refused"), (proc.stdout + proc.stderr)[-4000:]


def test_the_servers_close_is_a_status_and_close_returns_ok(client_faults: Path) -> None:
    """Defect 19: rabbitmqctl closes the connection (320): client_next returns AG_CLIENT_CLOSED with 320 (was a
    positive event type from client_next but a negative status from calls), a later call the same, and
    client_close AG_OK (was -14)."""
    proc = subprocess.Popen([str(client_faults), "closed", HOST, PORT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    ready = proc.stdout.readline()
    assert ready.startswith("READY "), ready
    close_connection(int(ready.split()[1]))
    out, err = proc.communicate("go\n", timeout=60)
    assert proc.returncode == 0 and out.startswith("OK closed"), (out + err)[-4000:]


def test_a_16_mib_message_both_ways(client_faults: Path) -> None:
    """Defect 18: a 16 MiB message published (written from the caller's memory in frame_max parts) and consumed
    (into a heap buffer up to max_message, freed once handed out), its body compared; the old client refused the
    publish with AG_ERR_NO_SPACE (and a delivery over its 1 MiB buffer killed the connection)."""
    proc = run(str(client_faults), "big", HOST, PORT, f"amqgen-c-big-{uuid.uuid4().hex[:12]}")
    assert proc.returncode == 0 and proc.stdout == "OK 16 MiB published and consumed back\n", (
        proc.stdout + proc.stderr)[-4000:]


def test_a_message_over_max_message_is_reported_and_the_connection_goes_on(client_faults: Path) -> None:
    """Defect 18: with max_message 1.5 MiB, a 3 MiB delivery is AG_EV_MESSAGE_TOO_LARGE (its method and header,
    no body), the program rejects it by its tag, and the next delivery comes whole on the same connection (the old
    client ended the connection with code 0 on a delivery over its buffer, and the message stayed queued)."""
    proc = run(str(client_faults), "toolarge", HOST, PORT, f"amqgen-c-toolarge-{uuid.uuid4().hex[:12]}")
    assert proc.returncode == 0 and proc.stdout.startswith("OK too large"), (proc.stdout + proc.stderr)[-4000:]


def test_calls_from_another_thread_are_refused(client_faults: Path) -> None:
    """The thread contract (client.h): a client is one thread's; another thread's calls return AG_CLIENT_THREAD
    and change nothing (the owner's next call works), ag_client_handover moves the ownership."""
    proc = run(str(client_faults), "thread", HOST, PORT)
    assert proc.returncode == 0 and proc.stdout.startswith("OK threads"), (proc.stdout + proc.stderr)[-4000:]
