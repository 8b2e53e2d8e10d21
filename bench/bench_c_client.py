#!/usr/bin/env python3
"""The generated C client's CPU per message against librabbitmq 0.11 (issues 33, 41), against RabbitMQ on
127.0.0.1:5672, with real heartbeats.

Run:  .venv/bin/python bench/bench_c_client.py [--count 30000] [--awaited 3000] [--rounds 5] [--heartbeats 60,5]
                                                [--callgrind-count 5000] [--readme bench/README.md]

bench/bench_c_client.c built twice with clang -O2: on the generated client (`amqgen render --lang c` of RabbitMQ's
0-9-1 extended spec, prefix `ag`, library and client/ compiled in) and on Debian's librabbitmq (its shared -O2
build). Each run is a process on a fresh exclusive queue, messages of 128 octets, three phases:

1. awaited: AWAITED publishes, each one's confirm awaited before the next;
2. pipelined: COUNT publishes in batches of 1,000, each batch's confirms awaited;
3. consume: basic.qos 100, every message consumed and acked (one basic.ack each), its body compared.

Both clients ask for the same heartbeat: RabbitMQ's default (60 s), then 5 s (never 0). Rounds interleave the two
clients (ours first in even rounds, librabbitmq first in odd ones), so both see the same load; reported per phase:
the process's CPU (user + system, getrusage) per message as the median over the rounds with its spread (min-max),
and the ratio of the medians with the spread of the per-round ratios. Beside them, instructions per message
(callgrind, each phase between CALLGRIND_ZERO_STATS and CALLGRIND_DUMP_STATS_AT, a run of --callgrind-count
messages): user space only, where the CPU figures are mostly the kernel's, and steady where wall and CPU times
move with the machine's load (the broker shares it).
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "c"))
sys.path.insert(0, str(ROOT / "bench"))
import cbuild
from bench_common import cpu_model, write_block

BENCH = ROOT / "bench" / "bench_c_client.c"
HOST, PORT = "127.0.0.1", "5672"


def build(tmp: Path) -> dict[str, Path]:
    flags = ("-std=c99", "-O2", "-Wall", "-Wextra", "-Werror")
    tree = cbuild.render(tmp / "gen")
    ours = cbuild.compile_program(tree, [tree / "client" / f"{cbuild.PREFIX}_client.c", BENCH], tmp / "bench-ours",
                                  flags=flags, include=(tree / "client",))
    theirs = tmp / "bench-librabbitmq"
    proc = subprocess.run([cbuild.tool("clang"), *flags, "-DBENCH_LIBRABBITMQ", str(BENCH), "-o", str(theirs),
                           *cbuild.librabbitmq()], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"bench_c_client: building on librabbitmq failed:\n{proc.stderr[-3000:]}")
    return {"amqgen C client": ours, "librabbitmq 0.11": theirs}


def run(exe: Path, count: int, awaited: int, heartbeat: int, *, callgrind: Path | None = None) -> str:
    queue = f"amqgen-bench-c-client-{uuid.uuid4().hex[:12]}"
    cmd = [str(exe), HOST, PORT, queue, str(count), str(awaited), str(heartbeat)]
    if callgrind is not None:
        cmd = [cbuild.tool("valgrind"), "--tool=callgrind", f"--callgrind-out-file={callgrind}", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
    if proc.returncode != 0 or "FAIL" in proc.stdout:
        sys.exit(f"bench_c_client: {exe.name} failed: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc.stdout


PHASES = ("awaited", "pipelined", "consume")
#: a message published pipelined and consumed: the two phases' figures per message added (issue 33's figure)
BOTH = "pipelined + consume"


def phases(out: str) -> dict[str, float]:
    """phase -> CPU (user + system) microseconds per message."""
    found = {m[0]: (int(m[1]) + int(m[2])) / int(m[4])
             for m in re.findall(r"^(awaited|pipelined|consume) (\d+) (\d+) (\d+) (\d+)$", out, re.MULTILINE)}
    if set(found) != set(PHASES):
        sys.exit(f"bench_c_client: no phase figures in {out[-2000:]}")
    return found


def instructions(exe: Path, count: int, awaited: int, heartbeat: int, work: Path) -> dict[str, float]:
    """phase -> instructions per message, from the callgrind dumps the phases trigger."""
    out = work / f"cg-{exe.name}-{heartbeat}"
    counts = {m[0]: int(m[4]) for m in re.findall(r"^(awaited|pipelined|consume) (\d+) (\d+) (\d+) (\d+)$",
                                                  run(exe, count, awaited, heartbeat, callgrind=out), re.MULTILINE)}
    found = {}
    for dump in work.glob(f"{out.name}*"):
        text = dump.read_text()
        trigger = re.search(r"^desc: Trigger: Client Request: (\w+)", text, re.MULTILINE)
        total = re.search(r"^(?:summary|totals): (\d+)", text, re.MULTILINE)
        if trigger and total and trigger.group(1) in PHASES:
            found[trigger.group(1)] = int(total.group(1)) / counts[trigger.group(1)]
    if set(found) != set(PHASES):
        sys.exit(f"bench_c_client: callgrind dumps of {exe.name} lack phases: {sorted(found)}")
    return found


def spread(values: list[float], fmt: str = ".2f") -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=30_000)
    ap.add_argument("--awaited", type=int, default=3_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--heartbeats", default="60,5")
    ap.add_argument("--callgrind-count", type=int, default=5_000)
    ap.add_argument("--readme", type=Path, help="rewrite the bench-c-client block of this README")
    args = ap.parse_args()
    heartbeats = [int(h) for h in args.heartbeats.split(",")]
    if 0 in heartbeats:
        sys.exit("bench_c_client: benches run with a real heartbeat, never 0")
    ours, theirs = "amqgen C client", "librabbitmq 0.11"
    lines = [(f"{args.count:,} pipelined and {args.awaited:,} awaited publishes of 128 octets, then all consumed; "
              f"{args.rounds} interleaved rounds per heartbeat, {dt.date.today().isoformat()}, "
              f"{cpu_model('unknown CPU')}, RabbitMQ on the same machine. CPU µs per message: median over the rounds "
              "(min-max); ratio: ours / librabbitmq's medians (the per-round ratios' min-max); instructions per "
              f"message from callgrind ({args.callgrind_count:,} pipelined, {args.callgrind_count // 10:,} awaited):"),
             ""]
    with tempfile.TemporaryDirectory(prefix="amqgen-bench-c-client-") as tmp:
        exes = build(Path(tmp))
        for hb in heartbeats:
            cpu: dict[str, list[dict[str, float]]] = {ours: [], theirs: []}
            for r in range(args.rounds):
                for name in ([ours, theirs] if r % 2 == 0 else [theirs, ours]):
                    cpu[name].append(phases(run(exes[name], args.count, args.awaited, hb)))
            instr = {name: instructions(exe, args.callgrind_count, args.callgrind_count // 10, hb, Path(tmp))
                     for name, exe in exes.items()}
            lines += [f"Heartbeat {hb} s:", "",
                      "| phase | amqgen CPU µs/msg | librabbitmq CPU µs/msg | ratio | amqgen instr/msg | "
                      "librabbitmq instr/msg | instr ratio |",
                      "|---|---:|---:|---:|---:|---:|---:|"]
            for ph in (*PHASES, BOTH):
                def per(name: str, r: int) -> float:
                    return cpu[name][r]["pipelined"] + cpu[name][r]["consume"] if ph == BOTH else cpu[name][r][ph]
                a = [per(ours, r) for r in range(args.rounds)]
                b = [per(theirs, r) for r in range(args.rounds)]
                ratios = [x / y for x, y in zip(a, b, strict=True)]
                ia = instr[ours]["pipelined"] + instr[ours]["consume"] if ph == BOTH else instr[ours][ph]
                ib = instr[theirs]["pipelined"] + instr[theirs]["consume"] if ph == BOTH else instr[theirs][ph]
                lines.append(f"| {ph} | {spread(a)} | {spread(b)} | {statistics.median(a) / statistics.median(b):.2f} "
                             f"({min(ratios):.2f}-{max(ratios):.2f}) | {ia:,.0f} | {ib:,.0f} | {ia / ib:.2f} |")
            lines.append("")
    block = "\n".join(lines).rstrip()
    print(block)
    if args.readme:
        write_block(args.readme, "bench-c-client", block)


if __name__ == "__main__":
    main()
