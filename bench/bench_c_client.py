#!/usr/bin/env python3
"""The generated C client's CPU per message against librabbitmq 0.11 (issue 33), against RabbitMQ on 127.0.0.1:5672.

Run:  .venv/bin/python bench/bench_c_client.py [--count 100000] [--callgrind-count 10000] [--readme bench/README.md]

bench/bench_c_client.c built twice with clang -O2: on the generated client (`amqgen render --lang c` of RabbitMQ's
0-9-1 extended spec, prefix `ag`, library and client/ compiled in) and on Debian's librabbitmq (its shared -O2
build). Each, in its own process, one after the other in one run, on a fresh exclusive queue with messages of 128
octets:

1. publish COUNT with confirms: batches of 1,000 publishes, each batch's confirms awaited;
2. consume them with basic.qos 100, each delivery acked (one basic.ack a message) and its body compared.

Reported per phase: the process's CPU (user + system, getrusage) per message and messages per second of wall
time, then instructions per message (both phases, callgrind --toggle-collect on the phases' function, a run of
--callgrind-count messages): user space only, where the CPU figures are mostly the kernel's. The broker shares
the machine, so the wall figures move from run to run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
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


def run(exe: Path, count: int, *, callgrind: bool = False) -> str:
    queue = f"amqgen-bench-c-client-{uuid.uuid4().hex[:12]}"
    cmd = [str(exe), HOST, PORT, queue, str(count)]
    if callgrind:
        cmd = [cbuild.tool("valgrind"), "--tool=callgrind", "--callgrind-out-file=/dev/null",
               "--toggle-collect=bench_phases", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
    if proc.returncode != 0 or "FAIL" in proc.stdout:
        sys.exit(f"bench_c_client: {exe.name} failed: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc.stdout + proc.stderr


def phases(out: str) -> dict[str, tuple[int, int, int]]:
    """phase -> (user, sys, wall) in microseconds."""
    found = {m[0]: (int(m[1]), int(m[2]), int(m[3])) for m in re.findall(r"^(publish|consume) (\d+) (\d+) (\d+)$",
                                                                          out, re.MULTILINE)}
    if set(found) != {"publish", "consume"}:
        sys.exit(f"bench_c_client: no phase figures in {out[-2000:]}")
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--callgrind-count", type=int, default=10_000)
    ap.add_argument("--readme", type=Path, help="rewrite the bench-c-client block of this README")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="amqgen-bench-c-client-") as tmp:
        exes = build(Path(tmp))
        timed = {name: phases(run(exe, args.count)) for name, exe in exes.items()}
        instr = {}
        for name, exe in exes.items():
            m = re.search(r"Collected : (\d+)", run(exe, args.callgrind_count, callgrind=True))
            if m is None:
                sys.exit(f"bench_c_client: callgrind gave no count for {name}")
            instr[name] = int(m.group(1)) / args.callgrind_count
    n = args.count
    head = ("| client | publish CPU µs/msg | consume CPU µs/msg | both µs/msg (user + sys) | publish msg/s | "
            f"consume msg/s | instructions/msg ({args.callgrind_count:,} msgs) |")
    rows = [head, "|---|---:|---:|---:|---:|---:|---:|"]
    total = {}
    for name, ph in timed.items():
        pu, ps, pw = ph["publish"]
        cu, cs, cw = ph["consume"]
        total[name] = (pu + ps + cu + cs) / n
        rows.append(f"| {name} | {(pu + ps) / n:.2f} ({pu / n:.2f} + {ps / n:.2f}) | {(cu + cs) / n:.2f} "
                    f"({cu / n:.2f} + {cs / n:.2f}) | {total[name]:.2f} | {n / pw * 1e6:,.0f} | {n / cw * 1e6:,.0f} | "
                    f"{instr[name]:,.0f} |")
    ours, theirs = total["amqgen C client"], total["librabbitmq 0.11"]
    block = "\n".join([
        (f"{n:,} messages of 128 octets, one run, {dt.date.today().isoformat()}, {cpu_model('unknown CPU')}, "
         "RabbitMQ on the same machine:"),
        "",
        *rows,
        "",
        (f"The generated client's CPU per message is {ours / theirs:.0%} of librabbitmq's "
         f"(instructions: {instr['amqgen C client'] / instr['librabbitmq 0.11']:.0%})."),
    ])
    print(block)
    if args.readme:
        write_block(args.readme, "bench-c-client", block)


if __name__ == "__main__":
    main()
