#!/usr/bin/env python3
"""Client CPU per message: the generated Java client against the RabbitMQ Java client 5.0 (bench/JavaClientBench.java).

Run:  .venv/bin/python bench/bench_java_client.py [--uri amqp://guest:guest@127.0.0.1:5672] [-n 100000]

Renders the bundled spec/amqp0-9-1.extended.xml (package amqgen.rabbit), compiles it and JavaClientBench.java
against Debian's /usr/share/java/amqp-client.jar (and its slf4j), then runs each client in its own JVM, in
turn, against the same RabbitMQ: a warm-up round, then N messages of 128 octets published with confirms and
consumed with acks. Prints process CPU (user + system) per message, messages per second, and the ratio.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec" / "amqp0-9-1.extended.xml"
JARS = [Path("/usr/share/java/amqp-client.jar"), Path("/usr/share/java/slf4j-api.jar")]


def run(cmd: list[str], **kw: object) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)  # type: ignore[call-overload]
    if proc.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd[:3])} failed:\n{proc.stdout}{proc.stderr}")
    return str(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uri", default="amqp://guest:guest@127.0.0.1:5672")
    ap.add_argument("-n", type=int, default=100_000, help="messages in the timed round")
    ap.add_argument("--warmup", type=int, default=50_000, help="messages in the warm-up round")
    args = ap.parse_args()
    for tool in ("javac", "java"):
        if shutil.which(tool) is None:
            sys.exit(f"bench: {tool} not found (Debian package openjdk-17-jdk-headless)")
    missing = [str(j) for j in JARS if not j.is_file()]
    if missing:
        sys.exit(f"bench: {missing} not found (Debian package librabbitmq-client-java)")
    cp = ":".join(str(j) for j in JARS)
    with tempfile.TemporaryDirectory(prefix="amqgen-bench-java-client-") as tmp:
        out, classes = Path(tmp) / "src", Path(tmp) / "classes"
        run([sys.executable, "-m", "amqgen", "render", "--lang", "java", "--spec", str(SPEC), "--option",
             "package=amqgen.rabbit", "--out", str(out)], cwd=ROOT)
        sources = [str(p) for p in sorted((out / "src" / "main").rglob("*.java"))]
        sources.append(str(ROOT / "bench" / "JavaClientBench.java"))
        run(["javac", "--release", "17", "-nowarn", "-encoding", "UTF-8", "-d", str(classes), "-cp", cp, *sources])
        results = {}
        for side in ("rabbit", "amqgen"):
            text = run(["java", "-cp", f"{classes}:{cp}", "JavaClientBench", side, args.uri, str(args.n),
                        str(args.warmup)], timeout=1800)
            _, name, n, cpu, wall = next(ln for ln in text.splitlines() if ln.startswith("RESULT")).split()
            results[name] = (int(n), int(cpu), int(wall))
    print(f"{'client':<28} {'CPU us/msg':>11} {'msgs/s':>10}")
    for name, label in (("rabbit", "RabbitMQ Java client 5.0"), ("amqgen", "amqgen generated client")):
        n, cpu, wall = results[name]
        print(f"{label:<28} {cpu / n / 1000:>11.2f} {n / (wall / 1e9):>10.0f}")
    ratio = (results["amqgen"][1] / results["amqgen"][0]) / (results["rabbit"][1] / results["rabbit"][0])
    print(f"CPU per message, amqgen / Java client: {ratio:.2f}")


if __name__ == "__main__":
    main()
