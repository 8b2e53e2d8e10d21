#!/usr/bin/env python3
"""CPU per packet of reading capture parts: capture.read_part (a Segment per TCP packet, payloads in
hand) against index.part_index + index.by_connection (one blob per connection per part, no payload
bytes), and index.segments (the blobs back into Segments, payloads read from the file by offset).

Run:  .venv/bin/python bench/bench_traffic_index.py CAPTURE [--split-size MB]

Each step timed --repeat times (process CPU time; the least is printed: the machine is shared); before timing, the two paths are checked to give the same segments
per connection. The parts are cut as `amqgen traffic` cuts them (--split-size, default 16 MB).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from amqgen.traffic import capture, index, session

T = TypeVar("T")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("capture", type=Path)
    ap.add_argument("--split-size", type=int, default=16, help="MB per part")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    fi = capture.index_file(args.capture, 0, args.split_size << 20)
    n = fi.packets
    print(f"{args.capture}: {args.capture.stat().st_size / 1e6:.1f} MB, {n:,} packets, {len(fi.parts)} parts")

    def best(fn: Callable[[], T]) -> tuple[float, T]:
        times, out = [], None
        for _ in range(args.repeat):
            t = time.process_time()
            out = fn()
            times.append(time.process_time() - t)
        assert out is not None
        return min(times), out

    t_read, segs = best(lambda: [s for p in fi.parts for s in capture.read_part(p)])
    t_index, idxs = best(lambda: [index.part_index(p) for p in fi.parts])
    t_conn, blobs = best(lambda: [kb for ix in idxs for kb in index.by_connection(ix)])
    per_conn: dict[str, list[bytes]] = defaultdict(list)
    for key, blob in blobs:
        per_conn[key].append(blob)
    paths = [str(args.capture)]
    t_back, back = best(lambda: {key: list(index.segments(bl, paths)) for key, bl in per_conn.items()})

    want: dict[str, list[capture.Segment]] = defaultdict(list)
    for s in segs:
        want[session.connection_key(s)].append(s)
    assert back == want, "index path differs from read_part"
    octets = sum(len(b) for _, b in blobs)

    def row(name: str, secs: float) -> None:
        print(f"  {name:<34} {secs:7.3f} s  {secs / n * 1e6:6.2f} us/packet")

    print(f"{len(segs):,} segments in {len(per_conn)} connections; {len(blobs)} blobs, {octets / 1e6:.2f} MB")
    row("capture.read_part", t_read)
    row("index.part_index", t_index)
    row("index.by_connection", t_conn)
    row("part_index + by_connection", t_index + t_conn)
    row("index.segments (payloads read back)", t_back)


if __name__ == "__main__":
    main()
