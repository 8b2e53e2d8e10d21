"""`amqgen traffic` for real: the Spark job in local mode and on a standalone master + worker the test
starts from the installed PySpark, the Parquet it writes (checked against tshark and against the
plain-Python stages), bad input through the CLI, and the report page in headless Chromium.

One local SparkSession serves the module; the standalone run is a second `amqgen traffic` process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from browser import browser, console_errors  # noqa: F401 -- the module's Chromium fixture
from click.testing import CliRunner
from pytarget import SPEC_091_EXT
from traffic_fixtures import DATA, live_capture, ours_as_oracle, pipeline, rows_as_dicts, violations_capture
from traffic_tools import free_port, synth_capture, tshark_frames

from amqgen.cli import main
from amqgen.traffic import records

pytestmark = [pytest.mark.broker, pytest.mark.slow]


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return tmp_path_factory


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from amqgen.traffic.job import spark_session

    s = spark_session("local[2]", {})
    yield s
    s.stop()


@pytest.fixture(scope="module")
def inputs(tmp: Any) -> list[Path]:
    return [live_capture(tmp), violations_capture(tmp)[0], DATA / "pika-small.pcap"]


@pytest.fixture(scope="module")
def local_out(tmp: Any, spark: Any, inputs: list[Path]) -> Path:
    """`amqgen traffic` through the CLI, in this process (so on the module's local SparkSession)."""
    out = tmp.mktemp("local") / "out"
    result = CliRunner().invoke(main, ["traffic", *map(str, inputs), "--out", str(out), "--spec", SPEC_091_EXT,
                                       "--split-size", "1"])
    assert result.exit_code == 0, result.output
    assert "frames by type:" in result.output and "violations by kind:" in result.output
    return out


def table(out: Path, name: str) -> list[dict[str, Any]]:
    return pq.read_table(out / name).to_pylist()


def test_datasets_have_the_documented_schemas(local_out: Path) -> None:
    kinds = {"string": "string", "int": "int32", "long": "int64", "bool": "bool", "ts": "timestamp[us, tz=UTC]",
             "binary": "binary", "strings": "list<element: string>"}
    for name, cols in records.DATASETS.items():
        schema = pq.read_schema(next((local_out / name).glob("*.parquet")))
        assert [(f.name, str(f.type)) for f in schema] == [(c, kinds[k]) for c, k, _ in cols], name
    summary = json.loads((local_out / "summary.json").read_text())
    assert summary["format"] == "amqgen-traffic-summary" and summary["skipped"] == []
    assert summary["frames"] == len(table(local_out, "frames"))
    assert summary["violations_by_kind"] == {"body-size": 1, "channel": 1, "frame-end": 1, "frame-size": 1}


def test_spark_output_matches_tshark_per_file(local_out: Path, inputs: list[Path]) -> None:
    frames = table(local_out, "frames")
    for path in inputs:
        mine = [f for f in frames if f["file"] == str(path)]
        assert ours_as_oracle(mine) == Counter(tshark_frames(path)), path.name


def test_spark_output_equals_the_plain_stages(tmp: Any, local_out: Path, inputs: list[Path]) -> None:
    """The job's partitioning, shuffle and sort change nothing: same rows as one process reading it all."""
    plain = pipeline(tmp).run(inputs)
    for name, cols in records.DATASETS.items():
        got = table(local_out, name)
        want = rows_as_dicts(getattr(plain, name), cols)
        for row in want:  # what Parquet gives back: timestamps as datetimes
            for c, kind, _ in cols:
                if kind == "ts" and row[c] is not None:
                    row[c] = _ts(row[c])
        assert sorted(map(_key, got)) == sorted(map(_key, want)), name


def _ts(us: int) -> Any:
    import datetime as dt

    return dt.datetime.fromtimestamp(us // 1_000_000, dt.UTC).replace(microsecond=us % 1_000_000)


def _key(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)


# -- bad input ------------------------------------------------------------------------------------------
def test_bad_inputs_are_listed_and_the_rest_decoded(tmp: Any, spark: Any, tmp_path: Path) -> None:
    d = tmp_path / "in"
    d.mkdir()
    (d / "good.pcap").write_bytes((DATA / "pika-small.pcap").read_bytes())
    (d / "notes.txt").write_text("not a capture\n")
    raw = (DATA / "violations.pcap").read_bytes()
    (d / "truncated.pcap").write_bytes(raw[: len(raw) * 2 // 3])
    synth_capture(d / "http.pcap", [("c", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"), ("s", b"HTTP/1.1 200 OK\r\n\r\n")],
                  server_port=8080)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["traffic", str(d), str(tmp_path / "missing.pcap"), "--out", str(out),
                                       "--spec", SPEC_091_EXT])
    assert result.exit_code == 2, result.output
    err = result.stderr if hasattr(result, "stderr") else result.output
    lines = [ln for ln in err.splitlines() if ": error: " in ln]
    assert len(lines) == 4 and "Traceback" not in result.output, err
    assert any("notes.txt: error: not a pcap or pcapng capture" in ln for ln in lines)
    assert any("truncated.pcap: error: truncated record" in ln and "packets before it were read" in ln for ln in lines)
    assert any("http.pcap: error: no AMQP connection found" in ln for ln in lines)
    assert any("missing.pcap: error: no such file or directory" in ln for ln in lines)
    # what could be read is there: the good file whole, the truncated one up to the damage
    files = {f["file"] for f in table(out, "frames")}
    assert files == {str(d / "good.pcap"), str(d / "truncated.pcap")}
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["skipped"]) == 4


def test_nothing_readable_writes_nothing(spark: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.pcap"
    bad.write_text("nope")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["traffic", str(bad), "--out", str(out)])
    assert result.exit_code == 2 and "no capture could be read" in result.output and "Traceback" not in result.output
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]
    other = tmp_path / "taken"
    other.mkdir()
    (other / "precious.txt").write_text("keep me")
    result = CliRunner().invoke(main, ["traffic", str(DATA / "pika-small.pcap"), "--out", str(other)])
    assert result.exit_code == 2 and "is not an amqgen traffic output" in result.output
    assert (other / "precious.txt").read_text() == "keep me"


# -- a Spark standalone cluster -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def standalone(tmp: Any) -> Iterator[str]:
    import pyspark

    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    assert spark_class.is_file(), "PySpark's bin/spark-class is missing"
    port, work = free_port(), tmp.mktemp("spark-work")
    env = {**os.environ, "SPARK_LOG_DIR": str(work), "SPARK_WORKER_DIR": str(work), "PYSPARK_PYTHON": sys.executable}
    url = f"spark://127.0.0.1:{port}"
    logs = [open(work / "master.log", "w"), open(work / "worker.log", "w")]  # noqa: SIM115 -- closed below
    procs = [subprocess.Popen([str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", str(free_port())],
                              env=env, stdout=subprocess.DEVNULL, stderr=logs[0], start_new_session=True)]
    try:
        _wait_for(work / "master.log", "I have been elected leader")
        procs.append(subprocess.Popen([str(spark_class), "org.apache.spark.deploy.worker.Worker", url, "--host",
                                       "127.0.0.1", "--cores", "2", "--memory", "2g", "--webui-port", str(free_port()),
                                       "--work-dir", str(work)],
                                      env=env, stdout=subprocess.DEVNULL, stderr=logs[1], start_new_session=True))
        _wait_for(work / "worker.log", "Successfully registered with master")
        yield url
    finally:
        for p in reversed(procs):
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(30)
        for f in logs:
            f.close()


def _wait_for(log: Path, text: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        time.sleep(0.3)
    raise AssertionError(f"{text!r} not in {log}:\n{log.read_text(errors='replace')[-3000:]}")


def test_standalone_cluster_gives_identical_parquet(tmp: Any, standalone: str, local_out: Path,
                                                     inputs: list[Path]) -> None:
    out = tmp.mktemp("cluster") / "out"
    proc = subprocess.run([sys.executable, "-m", "amqgen", "traffic", *map(str, inputs), "--out", str(out),
                           "--spec", SPEC_091_EXT, "--master", standalone, "--split-size", "1"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"starting Spark ({standalone})" in proc.stderr
    for noise in SPARK_NOISE:  # quiet by default (the class archive test's --verbose run shows them)
        assert noise not in proc.stderr, noise
    for name in records.DATASETS:
        assert sorted(map(_key, table(out, name))) == sorted(map(_key, table(local_out, name))), name
    a, b = (json.loads((d / "summary.json").read_text()) for d in (out, local_out))
    a.pop("seconds"), b.pop("seconds")
    assert a == b


SPARK_NOISE = ("Using incubator modules", "log4j", "NativeCodeLoader", "Setting default log level")


def test_each_task_decodes_the_connections_dealt_to_it(local_out: Path) -> None:
    """Connections are dealt to 2 tasks per core by size (packets), and each task's file holds exactly
    its connections: recomputed here from the connections dataset's packet counts."""
    from amqgen.traffic.job import balance

    conns = table(local_out, "connections")
    key = {c["connection"]: "|".join(sorted((c["client"], c["server"]))) for c in conns}
    sizes = {key[c["connection"]]: c["packets"] for c in conns}
    deal = balance(sizes, min(len(sizes), 2 * 2))  # local[2]
    want = {frozenset(k for k, b in deal.items() if b == i) for i in set(deal.values())}
    files = sorted((local_out / "frames").glob("*.parquet"))
    got = {frozenset(key[c] for c in pq.read_table(f, columns=["connection"]).column(0).to_pylist()) for f in files}
    assert len(sizes) >= 4 and len(files) == len(want) and got == want


def test_index_records_are_dealt_whole_and_in_capture_order(tmp_path: Path) -> None:
    """Each decode task gets all the records of its connections, sorted by connection, file and first
    packet, by the size deal; a record whose index file is shorter than it says is an error."""
    from amqgen.traffic.index import BlobError
    from amqgen.traffic.job import deal_records, read_located

    f = tmp_path / "i.aqx"
    f.write_bytes(b"abcdefgh")
    recs = [("b|c", 1, 1, 5, str(f), 0, 2), ("a|b", 0, 9, 1, str(f), 2, 2), ("b|c", 0, 7, 5, str(f), 4, 2),
            ("a|b", 0, 3, 1, str(f), 6, 2), ("c|d", 0, 1, 3, str(f), 0, 1)]
    assert len(deal_records(recs, 8)) == 3  # never more tasks than connections
    tasks = deal_records(recs, 2)  # b|c: 10 packets, alone; a|b (2) and c|d (3) share the other task
    assert [[(r[0], r[1], r[2]) for r in t] for t in tasks] == [
        [("b|c", 0, 7), ("b|c", 1, 1)], [("a|b", 0, 3), ("a|b", 0, 9), ("c|d", 0, 1)]]
    assert list(read_located(tasks[1])) == [("a|b", b"gh"), ("a|b", b"cd"), ("c|d", b"a")]
    with pytest.raises(BlobError, match="the index said 4"):
        list(read_located([("a|b", 0, 1, 1, str(f), 6, 4)]))


# -- the report page ---------------------------------------------------------------------------------------
def test_report_in_chromium(local_out: Path, tmp_path: Path, browser: Any) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    page = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["traffic", "report", str(local_out), "--out", str(page)])
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert "<script" not in html.lower().replace("&lt;script", "")  # no script at all, and none injected
    browser.get(page.as_uri())
    assert console_errors(browser) == []
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    charts = browser.find_elements(By.CSS_SELECTOR, "figure.chart svg")
    assert len(charts) >= 7
    assert all(c.size["width"] > 100 and c.size["height"] > 20 for c in charts)
    marks = browser.execute_script("return document.querySelectorAll('svg rect, svg polyline').length")
    assert marks > 50
    # strings from the traffic are text, never markup: the routing key and header py-amqp sent
    assert browser.find_elements(By.CSS_SELECTOR, "img") == []
    body = browser.execute_script("return document.body.textContent")
    assert '<script>alert("rk")</script>' in body
    # violations link to the spec's reference page
    links = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "table.violations a")]
    assert any(h.endswith("#constant.frame-error") for h in links)
    assert any(h.endswith("#queue.declare") for h in links)
    bad = tmp_path / "not-an-output"
    bad.mkdir()
    result = CliRunner().invoke(main, ["traffic", "report", str(bad), "--out", str(tmp_path / "x.html")])
    assert result.exit_code == 2 and "not an amqgen traffic output" in result.output


def test_driver_jvm_gets_the_class_archive_options(spark: Any) -> None:
    from amqgen.traffic.jvm import ClassArchive

    args = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    archive = ClassArchive.for_this_install()
    assert "-XX:TieredStopAtLevel=1" in args
    assert f"-XX:SharedArchiveFile={archive.final}" in args or any(
        a.startswith("-XX:ArchiveClassesAtExit=") and a.endswith(".jsa.pending") for a in args), args


def test_class_archive_notes_no_writer_for_a_jvm_started_without_its_option(spark: Any, tmp_path: Path) -> None:
    from amqgen.traffic.jvm import ClassArchive

    archive = ClassArchive(tmp_path, "k")
    assert archive.options()[-1].startswith("-XX:ArchiveClassesAtExit=")
    archive.started(spark)  # the module's JVM was not started with this pending path
    assert list(tmp_path.iterdir()) == []


def test_a_first_run_leaves_a_class_archive_that_the_next_jvm_maps(tmp_path: Path) -> None:
    """End to end, with a cache of its own: a run that ends normally leaves the archive (its JVM
    writes it after the run's process has exited), and the next driver JVM maps that file. A JVM
    refuses an archive that does not match its build or class path, and says nothing of it: only
    its memory map shows the archive is in use. The first run is --verbose: it shows what Spark says
    (what the quiet default hides, test_standalone_cluster_gives_identical_parquet)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "SPARK_LOCAL_IP": "127.0.0.1"}
    first = subprocess.run([sys.executable, "-m", "amqgen", "traffic", str(DATA / "pika-small.pcap"), "--out",
                            str(tmp_path / "out"), "--spec", SPEC_091_EXT, "--master", "local[1]", "--verbose"],
                           env=env, capture_output=True, text=True, timeout=600, check=False)
    assert first.returncode == 0, first.stderr[-4000:]
    assert all(noise in first.stderr for noise in SPARK_NOISE[:2]), first.stderr[-4000:]
    assert "amqgen traffic: decoding" in first.stderr
    cache = tmp_path / "cache" / "amqgen"
    markers = list(cache.glob("spark-*.jsa.pid"))
    assert len(markers) == 1, list(cache.iterdir())
    pid = int(markers[0].read_text())
    deadline = time.monotonic() + 120
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not Path(f"/proc/{pid}").exists(), "the first run's driver JVM did not exit"
    later = subprocess.run([sys.executable, "-c", """
from pathlib import Path
from amqgen.traffic.job import spark_session
from amqgen.traffic.jvm import ClassArchive
spark = spark_session("local[1]", {})
jvm = spark.sparkContext._jvm
pid = jvm.java.lang.ProcessHandle.current().pid()
final = ClassArchive.for_this_install().final
print(final.is_file(), final.stat().st_size if final.is_file() else 0, str(final) in Path(f"/proc/{pid}/maps").read_text())
spark.sparkContext._jsc.stop()
"""], env={**env, "PYSPARK_PYTHON": sys.executable}, capture_output=True, text=True, timeout=600, check=False)
    assert later.returncode == 0, later.stderr[-4000:]
    whole, size, mapped = later.stdout.split()
    assert whole == "True" and int(size) > 10_000_000 and mapped == "True", later.stdout
    assert not list(cache.glob("*.pending")) and not list(cache.glob("*.pid"))


def test_class_archive_is_adopted_only_once_its_writer_is_gone(tmp_path: Path) -> None:
    import os
    import time

    from amqgen.traffic.jvm import ClassArchive

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    first = ClassArchive(tmp_path, "k")
    assert first.options()[-1] == f"-XX:ArchiveClassesAtExit={first.pending}" and first.dumping
    # a run whose JVM is still writing (this process is alive): not adopted
    first.pending.write_bytes(b"half")
    first.pending.with_suffix(".pid").write_text(f"{os.getpid()}\n")
    assert ClassArchive(tmp_path, "k").options()[-1].startswith("-XX:ArchiveClassesAtExit=")
    assert not first.final.exists()
    # its JVM has exited: the next run takes the archive whole and maps it
    first.pending.with_suffix(".pid").write_text(f"{dead.pid}\n")
    later = ClassArchive(tmp_path, "k")
    assert later.options()[-1] == f"-XX:SharedArchiveFile={later.final}" and not later.dumping
    assert later.final.read_bytes() == b"half" and not first.pending.exists()
    assert not first.pending.with_suffix(".pid").exists()
    # a second first run's archive, once its JVM has gone too, is removed, not left on disk
    second = tmp_path / "spark-k.2.jsa.pending"
    second.write_bytes(b"other")
    second.with_suffix(".pid").write_text(f"{dead.pid}\n")
    ClassArchive(tmp_path, "k").options()
    assert not second.exists() and not second.with_suffix(".pid").exists() and later.final.read_bytes() == b"half"
    # a pending file without its JVM's pid: kept while young, removed after an hour
    orphan = tmp_path / "spark-j.1.jsa.pending"
    orphan.write_bytes(b"x")
    ClassArchive(tmp_path, "j").options()
    assert orphan.exists()
    old = time.time() - 7200
    os.utime(orphan, (old, old))
    ClassArchive(tmp_path, "j").options()
    assert not orphan.exists()
    # the marker of a JVM killed before it wrote anything goes once that JVM has gone; a live one's stays
    killed, writing = tmp_path / "spark-j.3.jsa.pid", tmp_path / "spark-j.4.jsa.pid"
    killed.write_text(f"{dead.pid}\n")
    writing.write_text(f"{os.getpid()}\n")
    ClassArchive(tmp_path, "j").options()
    assert not killed.exists() and writing.exists()
    # no usable cache directory: no archive options at all
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert ClassArchive(blocked / "sub", "k").options() == []
