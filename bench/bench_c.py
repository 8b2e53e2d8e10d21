#!/usr/bin/env python3
"""Build and run bench/bench_c.c: the generated C library against librabbitmq 0.11, one binary, one run.

Run:  .venv/bin/python bench/bench_c.py [--readme bench/README.md] [--repeat 5] [--no-instructions]

Renders RabbitMQ's 0-9-1 extended spec with `amqgen render --lang c` twice into a temporary
directory: prefix `ag` (UTF-8 validation of short strings on, the default) and prefix `agn`, compiled
with `-DAGN_NO_UTF8_CHECK`. bench_c.c is compiled three times (ours twice, librabbitmq + driver once)
with clang -O2 and linked with Debian's librabbitmq (its shared -O2 build). The program checks equal
work first (same octets from every encoder, every decoder reports the case's values, checked against
constants), then times each case (best of N runs of at least 0.2 s each, ns per operation). With
valgrind, instructions per operation come from `callgrind --toggle-collect=bench_loop` (one run per
case and library; only the timed loop is counted).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "c"))
import cbuild
from bench_common import cpu_model, write_block

BENCH = ROOT / "bench" / "bench_c.c"
LIBS = ("amqgen", "amqgen no-UTF-8-check", "librabbitmq handle_input", "librabbitmq decoders")
CALLGRIND_ITERATIONS = 20000


def sh(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"bench_c: {' '.join(cmd)[:300]} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return proc


def build(tmp: Path, cc: str, opt: str) -> Path:
    lib_flags = cbuild.librabbitmq()
    compiler = cbuild.tool(cc, "clang-14")
    objs: list[str] = []
    for prefix, defines in (("ag", []), ("agn", ["-DAGN_NO_UTF8_CHECK"])):
        tree = cbuild.render(tmp / prefix, prefix=prefix)
        for src in cbuild.library_sources(tree):
            obj = tmp / f"{prefix}-{Path(src).stem}.o"
            sh([compiler, "-std=c99", opt, *defines, "-I", str(tree / "include"), "-I", str(tree / "src"), "-c", src,
                "-o", str(obj)])
            objs.append(str(obj))
        obj = tmp / f"bench-{prefix}.o"
        sh([compiler, "-std=c99", opt, "-Wall", "-Wextra", "-DBENCH_OURS", f"-DP={prefix}", f"-DPU={prefix.upper()}",
            f'-DBENCH_HEADER="{prefix}.h"', "-I", str(tree / "include"), "-c", str(BENCH), "-o", str(obj)])
        objs.append(str(obj))
    main_obj = tmp / "bench-main.o"
    sh([compiler, "-std=c99", opt, "-g", "-Wall", "-Wextra", "-c", str(BENCH), "-o", str(main_obj),
        *[f for f in lib_flags if f.startswith("-I")]])
    exe = tmp / "bench_c"
    sh([compiler, opt, str(main_obj), *objs, "-o", str(exe), *[f for f in lib_flags if not f.startswith("-I")]])
    return exe


def run_times(exe: Path, repeat: int) -> tuple[dict[str, dict[str, float]], str]:
    proc = sh([str(exe), "--repeat", str(repeat)])
    version = re.search(r"librabbitmq (\S+)", proc.stdout)
    results: dict[str, dict[str, float]] = {}
    for line in proc.stdout.splitlines():
        if line.startswith("case\t"):
            parts = line.split("\t")
            results[parts[1]] = {k: float(v) for k, v in (p.rsplit("=", 1) for p in parts[2:])}
    assert len(results) == 5, proc.stdout
    return results, version.group(1) if version else "?"


def instructions(exe: Path, case: int, lib: int) -> float:
    valgrind = cbuild.tool("valgrind", "valgrind")
    proc = subprocess.run(
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", "--collect-atstart=no",
         "--toggle-collect=bench_loop", str(exe), "--loop", str(case), str(lib), str(CALLGRIND_ITERATIONS)],
        capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or not found or int(found.group(1)) == 0:
        sys.exit(f"bench_c: callgrind counted nothing: {proc.stderr[-2000:]}")
    return int(found.group(1)) / CALLGRIND_ITERATIONS


def table(results: dict[str, dict[str, float]], unit: str) -> str:
    """Per case: each library's figure, the faster librabbitmq path, our ratios to it (lower is better)."""
    rows = [("| case | amqgen | amqgen, no UTF-8 check | librabbitmq handle_input | librabbitmq decoders "
            "| amqgen / librabbitmq | no-check / librabbitmq |"),
            "|---|---:|---:|---:|---:|---:|---:|"]
    for name, r in results.items():
        lib = min(r[LIBS[2]], r[LIBS[3]])
        digits = 0 if unit == "Ir/op" else 1
        rows.append(f"| {name} | " + " | ".join(f"{r[k]:,.{digits}f}" for k in LIBS)
                    + f" | {r[LIBS[0]] / lib:.2f}x | {r[LIBS[1]] / lib:.2f}x |")
    return "\n".join(rows)


def machine_note(version: str, cc: str, opt: str) -> str:
    cpu = cpu_model(platform.machine())
    ccv = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False).stdout.splitlines()[0]
    return f"{cpu}, {os.cpu_count()} CPUs; {ccv} {opt}; librabbitmq {version} (Debian's shared library)"


def main() -> int:
    ap = argparse.ArgumentParser(description="amqgen's C library vs librabbitmq 0.11")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cc", default="clang")
    ap.add_argument("--opt", default="-O2")
    ap.add_argument("--no-instructions", action="store_true", help="skip the callgrind counts")
    ap.add_argument("--readme", type=Path, help="also write the tables between the bench-c markers of this file")
    ap.add_argument("--keep", type=Path, help="build here (kept) instead of a temporary directory")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="amqgen-bench-c-") as tmpdir:
        tmp = args.keep or Path(tmpdir)
        tmp.mkdir(parents=True, exist_ok=True)
        exe = build(tmp, args.cc, args.opt)
        load_before = "/".join(f"{x:.2f}" for x in os.getloadavg())
        times, version = run_times(exe, args.repeat)
        load_after = "/".join(f"{x:.2f}" for x in os.getloadavg())
        print("verified: every encoder writes the same octets, every decoder reports the case's values")
        print()
        head = ("ns per operation, lower is better (ratio: amqgen over the faster librabbitmq path; goal <= 0.8x "
                "with the UTF-8 check off, <= 1.0x with it on).")
        out = [f"{head}\n\n{table(times, 'ns')}"]
        if not args.no_instructions:
            counts = {name: {lib: instructions(exe, no, li) for li, lib in enumerate(LIBS)}
                      for no, name in enumerate(times, 1)}
            out.append(f"Instructions per operation (callgrind), lower is better.\n\n{table(counts, 'Ir/op')}")
        when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        note = (f"Run {when} on {machine_note(version, shutil.which(args.cc) or args.cc, args.opt)}. "
                f"Load average (1/5/15 min) {load_before} before the timing, {load_after} after.")
        block = "\n\n".join(out) + "\n\n" + note
        print(block)
        if args.readme:
            write_block(args.readme, "bench-c", block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
