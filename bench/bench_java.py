#!/usr/bin/env python3
"""Compare the generated Java codec with the RabbitMQ Java client 5.0's own codec (bench/JavaBench.java).

Run:  .venv/bin/python bench/bench_java.py [--repeats 9] [--round-ms 400] [--readme bench/README.md]

Renders the bundled 0-9-1-rabbit spec (spec/amqp0-9-1.extended.xml) with `amqgen render --lang java` (package amqgen.rabbit)
into a temporary directory, compiles it and JavaBench.java with javac against Debian's
/usr/share/java/amqp-client.jar, runs one JVM (which checks both sides write the same octets and decode
the same values before timing) and prints the table; --readme rewrites the table in bench/README.md.
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

from bench_common import cpu_model

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec" / "amqp0-9-1.extended.xml"
CLIENT_JAR = Path("/usr/share/java/amqp-client.jar")
START, END = "<!-- bench-java:start -->", "<!-- bench-java:end -->"


def run(cmd: list[str], **kw: object) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)  # type: ignore[call-overload]
    if proc.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd[:3])} failed:\n{proc.stdout}{proc.stderr}")
    return str(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9, help="timed rounds per case and side (the median is reported)")
    ap.add_argument("--round-ms", type=int, default=400, help="length of one timed round")
    ap.add_argument("--readme", type=Path, help="rewrite the results block of this file")
    args = ap.parse_args()
    for tool in ("javac", "java"):
        if shutil.which(tool) is None:
            sys.exit(f"bench: {tool} not found (Debian package openjdk-17-jdk-headless)")
    if not CLIENT_JAR.is_file():
        sys.exit(f"bench: {CLIENT_JAR} not found (Debian package librabbitmq-client-java)")
    with tempfile.TemporaryDirectory(prefix="amqgen-bench-java-") as tmp:
        out, classes = Path(tmp) / "src", Path(tmp) / "classes"
        run([sys.executable, "-m", "amqgen", "render", "--lang", "java", "--spec", str(SPEC), "--option",
             "package=amqgen.rabbit", "--out", str(out)], cwd=ROOT)
        sources = [str(p) for p in sorted((out / "src").rglob("*.java"))] + [str(ROOT / "bench" / "JavaBench.java")]
        run(["javac", "--release", "17", "-encoding", "UTF-8", "-d", str(classes), "-cp", str(CLIENT_JAR), *sources])
        text = run(["java", "-cp", f"{classes}:{CLIENT_JAR}", "JavaBench", str(args.repeats), str(args.round_ms)])
        java_version = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr
    rows = []
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) == 3:
            rows.append((parts[0], float(parts[1]), float(parts[2])))
    jvm = java_version.splitlines()[1] if len(java_version.splitlines()) > 1 else java_version.strip()
    table = [
        "ops/s, higher is better (ratio: amqgen over the RabbitMQ Java client 5.0.0; goal >= 2x).",
        "",
        "| case | amqgen | Java client | amqgen / client |",
        "|---|---:|---:|---:|",
    ]
    table += [f"| {name} | {ours:,.0f} | {theirs:,.0f} | {ours / theirs:.2f}x |" for name, ours, theirs in rows]
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    table += ["", f"Run {when} on {cpu_model(platform.processor() or 'unknown CPU')}, {os.cpu_count()} CPUs, Linux {platform.release()}, {jvm.strip()}; "
              f"median of {args.repeats} rounds of {args.round_ms} ms per case and side, after a 1.5 s warm-up "
              "of each, one JVM."]
    block = "\n".join(table)
    print(block)
    if args.readme:
        readme = args.readme.read_text(encoding="utf-8")
        if START not in readme:
            sys.exit(f"bench: {args.readme} has no {START} ... {END} block")
        new = re.sub(re.escape(START) + ".*?" + re.escape(END), f"{START}\n{block}\n{END}", readme, flags=re.S)
        args.readme.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
