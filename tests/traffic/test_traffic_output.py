"""The traffic job's plain parts around Spark: task files and their commit, the summaries' merge, how
connections are dealt to tasks, the filter that keeps Spark's start-up lines off the console, and rows
made as contents complete (memory bounded by what is open, not by the connection)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from traffic_fixtures import DATA, pipeline

from amqgen.traffic import capture, output, records, session
from amqgen.traffic.job import _QuietStderr, balance

pytestmark = pytest.mark.broker  # the plain pipeline fixture renders against the bundled 0-9-1 specs only


def _frame(ftype: str, method: str | None, direction: str, error: str | None = None) -> tuple[Any, ...]:
    return ("f.pcap", 1, 1_700_000_000_000_000, "a>b", direction, 0, 1, ftype, 5,
            None, None, method, None, None, None, None, error)


def _connection(client_bytes: int, files: list[str]) -> tuple[Any, ...]:
    row: list[Any] = [None] * len(records.CONNECTIONS)
    names = [c for c, _, _ in records.CONNECTIONS]
    row[names.index("connection")] = "a>b"
    row[names.index("bytes_client")] = client_bytes
    row[names.index("bytes_server")] = 7
    row[names.index("gaps")] = 1
    row[names.index("files")] = files
    return tuple(row)


def test_task_files_are_committed_in_partition_order_and_strays_are_not(tmp_path: Path) -> None:
    staging, target = tmp_path / "tasks", tmp_path / "out"
    written = []
    for tag, frames in (("00001-7", [_frame("body", None, "client-to-server")]),
                        ("00000-3", [_frame("method", "basic.ack", "server-to-client")] * 2)):
        task = output.TaskOutput(staging, tag)
        rows = session.Rows()
        rows.frames.extend(frames)
        task.write(rows)
        assert rows.frames == []  # written rows are let go
        written += [(0 if tag.startswith("00000") else 1, *w) for w in task.close()]
    # a failed attempt of partition 0 left a file that no result names
    stray = output.TaskOutput(staging, "00000-2")
    rows = session.Rows()
    rows.frames.append(_frame("heartbeat", None, "client-to-server"))
    stray.write(rows)
    stray.close()
    output.commit([w[1:] for w in sorted(written)], target)
    output.discard(staging)
    parts = sorted(p.name for p in (target / "frames").iterdir())
    assert parts == ["part-00000.parquet", "part-00001.parquet"]
    assert [r["frame_type"] for r in pq.read_table(target / "frames" / "part-00000.parquet").to_pylist()] == [
        "method", "method"]
    assert [r["frame_type"] for r in pq.read_table(target / "frames").to_pylist()].count("heartbeat") == 0
    # datasets no task wrote: one empty file each, with the documented columns
    for kind in ("messages", "connections", "violations"):
        files = list((target / kind).iterdir())
        assert len(files) == 1 and pq.read_metadata(files[0]).num_rows == 0
        assert pq.read_schema(files[0]).names == [c for c, _, _ in records.DATASETS[kind]]
    assert not staging.exists()


def test_summaries_merge_to_the_counts_of_all_rows(tmp_path: Path) -> None:
    texts = []
    for tag, frames, conns, kinds in (
            ("a", [_frame("method", "basic.ack", "client-to-server"), _frame("body", None, "client-to-server",
                                                                             "TruncatedError: x")],
             [_connection(10, ["one.pcap"])], ["frame-end"]),
            ("b", [_frame("method", "basic.ack", "client-to-server"), _frame("method", "basic.ack",
                                                                             "server-to-client")],
             [_connection(5, ["one.pcap", "two.pcap"])], ["frame-end", "channel"])):
        task = output.TaskOutput(tmp_path, tag)
        rows = session.Rows()
        rows.frames.extend(frames)
        rows.connections.extend(conns)
        rows.violations.extend(("a>b", "client-to-server", 1, "f", 1, 0, k, 501, "frame-error", None, None, "d")
                               for k in kinds)
        task.write(rows)
        task.close()
        texts.append(task.summary.to_json())
    s = output.merge(texts)
    assert s["frames"] == 4 and s["frames_by_type"] == {"body": 1, "method": 3}
    assert s["methods_by_direction"] == [{"method": "basic.ack", "direction": "client-to-server", "count": 2},
                                         {"method": "basic.ack", "direction": "server-to-client", "count": 1}]
    assert s["decode_errors"] == 1 and s["connections"] == 2 and s["bytes"] == {"client": 15, "server": 14}
    assert s["gaps"] == 2 and s["violations"] == 3 and s["violations_by_kind"] == {"channel": 1, "frame-end": 2}
    assert s["amqp_files"] == ["one.pcap", "two.pcap"] and json.loads(texts[0])["messages"] == 0


def test_connections_are_dealt_by_size() -> None:
    equal = {f"c{i:02d}": 100 for i in range(12)}
    bins = balance(equal, 4)
    assert sorted(list(bins.values()).count(b) for b in range(4)) == [3, 3, 3, 3]
    # largest first into the lightest task: a90 | b60 | c50 | d40, then e30 -> d, f20 -> c, g10 -> b, and h10
    # to the lightest of 90, 70, 70, 70 with the lowest number: b. Loads a 90, b+g+h 80, c+f 70, d+e 70.
    skewed = {"a": 90, "b": 60, "c": 50, "d": 40, "e": 30, "f": 20, "g": 10, "h": 10}
    got = balance(skewed, 4)
    loads = [sum(skewed[k] for k, b in got.items() if b == i) for i in range(4)]
    assert loads == [90, 80, 70, 70] and got["a"] == 0 and got["h"] == got["b"] == 1 and got["e"] == 3
    assert balance(dict(reversed(list(skewed.items()))), 4) == got  # the input's order changes nothing
    assert set(balance({"x": 5}, 1).values()) == {0}


def _pump(data: list[bytes]) -> bytes:
    r, w = os.pipe()
    out_r, out_w = os.pipe()
    t = threading.Thread(target=_QuietStderr._pump, args=(r, out_w))
    t.start()
    for chunk in data:
        os.write(w, chunk)
    os.close(w)
    t.join(10)
    os.close(out_w)
    got = b""
    while chunk := os.read(out_r, 65536):
        got += chunk
    os.close(out_r)
    return got


def test_spark_start_up_lines_are_dropped_and_the_rest_passes() -> None:
    got = _pump([b"WARNING: Using incubator modules: jdk.incubator.vector\n",
                 b"Setting default log level to \"",  # a line that arrives in pieces
                 b"WARN\".\nTo adjust logging level use sc.setLogLevel(newLevel).\n",
                 b"\r[Stage 0:>      (0 + 1) / 1]", b"\r[Stage 0:=====>(1 + 0) / 1]",
                 b"26/11/25 ERROR Executor: a real error\n", b"partial tail"])
    assert got == (b"\r[Stage 0:>      (0 + 1) / 1]\r[Stage 0:=====>(1 + 0) / 1]"
                   b"26/11/25 ERROR Executor: a real error\npartial tail")


def test_messages_and_violations_become_rows_as_they_complete(tmp: Any = None) -> None:
    """A long connection must not hold every message it carried until it ends."""
    p = pipeline(_Tmp())
    path = DATA / "pika-small.pcap"
    idx = capture.index_file(path, 0, 1 << 20)
    segs = [s for part in idx.parts for s in capture.read_part(part)]
    rows = session.Rows()
    conn = session.Connection(p.codec, session.Options(), [str(path)], rows)
    seen_mid = 0
    for s in segs:
        conn.segment(s)
        assert not conn.checker.messages  # handed over at once
        seen_mid = max(seen_mid, len(rows.messages))
    assert seen_mid == 10  # every message of the capture became a row before the connection ended
    conn.finish()
    assert len(rows.messages) == 10 and len(rows.connections) == 1
    # the same rows, properties JSON included, as a connection decoded at once
    whole = p.run([path])
    assert sorted(rows.messages) == sorted(whole.messages)


class _Tmp:
    """The plain pipeline fixture wants a pytest TempPathFactory; a fresh directory does as well."""

    def mktemp(self, name: str) -> Path:
        import tempfile

        return Path(tempfile.mkdtemp(prefix=name))
