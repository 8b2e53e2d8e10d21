#!/usr/bin/env python3
"""Client CPU per message: the generated Java client against the RabbitMQ Java client 5.0 (bench/JavaClientBench.java).

Run:  .venv/bin/python bench/bench_java_client.py [--rounds 3] [--readme bench/README.md]

Renders the bundled spec/amqp0-9-1.extended.xml with the rabbitmq-blocked overlay (package amqgen.rabbit, as the
tests do), compiles it and JavaClientBench.java against Debian's /usr/share/java/amqp-client.jar (and its slf4j),
then runs each client in its own JVM against the same RabbitMQ, with a real heartbeat: the default (60 s, both
clients' default request) and 5 s. The rounds are interleaved (each round runs every client and heartbeat, in an
order that alternates from round to round), so a change in the machine's load falls on both clients. Per JVM:
warm-up rounds (2), then the timed round of the three phases (each, pipelined, consume; see the Java file). Prints the
median process CPU (user + system) per message of each phase with its spread over the rounds (min-max), messages
per second, and the ratio of the medians, amqgen over the Java client. A third side, "floor", is no client: one
thread on the generated engine over a blocking socket (see the Java file), the least these phases can cost here.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import cpu_model, write_block

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec" / "amqp0-9-1.extended.xml"
JARS = [Path("/usr/share/java/amqp-client.jar"), Path("/usr/share/java/slf4j-api.jar")]
PHASES = ("each", "pipelined", "consume")
SIDES = {"rabbit": "RabbitMQ Java client 5.0", "amqgen": "amqgen Client", "floor": "floor"}


def run(cmd: list[str], **kw: object) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)  # type: ignore[call-overload]
    if proc.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd[:3])} failed:\n{proc.stdout}{proc.stderr}")
    return str(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uri", default="amqp://guest:guest@127.0.0.1:5672")
    ap.add_argument("--each", type=int, default=20_000, help="awaited publishes in the timed round")
    ap.add_argument("--pipelined", type=int, default=100_000, help="pipelined publishes (and deliveries)")
    ap.add_argument("--warmup", type=int, default=2, help="warm-up rounds before the timed one, in each JVM")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--heartbeats", default="60,5")
    ap.add_argument("--readme", type=Path, help="rewrite the bench-java-client block of this file")
    args = ap.parse_args()
    for tool in ("javac", "java"):
        if shutil.which(tool) is None:
            sys.exit(f"bench: {tool} not found (Debian package openjdk-17-jdk-headless)")
    missing = [str(j) for j in JARS if not j.is_file()]
    if missing:
        sys.exit(f"bench: {missing} not found (Debian package librabbitmq-client-java)")
    heartbeats = [int(h) for h in args.heartbeats.split(",")]
    cp = ":".join(str(j) for j in JARS)
    # (side, heartbeat, phase) -> [(n, cpu_ns, wall_ns) per round]
    results: dict[tuple[str, int, str], list[tuple[int, int, int]]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="amqgen-bench-java-client-") as tmp:
        out, classes = Path(tmp) / "src", Path(tmp) / "classes"
        run([sys.executable, "-m", "amqgen", "render", "--lang", "java", "--spec", str(SPEC), "--overlay",
             "rabbitmq-blocked", "--option", "package=amqgen.rabbit", "--out", str(out)], cwd=ROOT)
        sources = [str(p) for p in sorted((out / "src" / "main").rglob("*.java"))]
        sources.append(str(ROOT / "bench" / "JavaClientBench.java"))
        run(["javac", "--release", "17", "-nowarn", "-encoding", "UTF-8", "-d", str(classes), "-cp", cp, *sources])
        for r in range(args.rounds):
            order = [(s, h) for h in heartbeats for s in ("rabbit", "amqgen", "floor")]
            if r % 2:
                order.reverse()
            for side, hb in order:
                t0 = time.monotonic()
                text = run(["java", "-cp", f"{classes}:{cp}", "JavaClientBench", side, args.uri, str(hb),
                            str(args.each), str(args.pipelined), str(args.warmup)], timeout=3600)
                for line in text.splitlines():
                    if line.startswith("RESULT"):
                        _, s, h, phase, n, cpu, wall = line.split()
                        results[(s, int(h), phase)].append((int(n), int(cpu), int(wall)))
                print(f"round {r + 1}: {side} heartbeat {hb} ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    table = render(results, heartbeats, args)
    print(table)
    if args.readme:
        write_block(args.readme, "bench-java-client", table)


def render(results: dict[tuple[str, int, str], list[tuple[int, int, int]]], heartbeats: list[int],
           args: argparse.Namespace) -> str:
    def cpu_us(side: str, hb: int, phase: str) -> list[float]:
        return sorted(cpu / n / 1000 for n, cpu, _ in results[(side, hb, phase)])

    def rate(side: str, hb: int, phase: str) -> float:
        return statistics.median(n / (wall / 1e9) for n, _, wall in results[(side, hb, phase)])

    lines = [(f"{args.rounds} interleaved rounds, {time.strftime('%Y-%m-%d')}, {cpu_model('unknown CPU')} (2 cores, "
             f"RabbitMQ on the same machine); messages of 128 octets: {args.each:,} awaited, {args.pipelined:,} "
             f"pipelined and consumed, after {args.warmup} warm-up rounds in each JVM. CPU = user + system of the "
             "client's JVM per message, median of the rounds (min-max); the last two columns are amqgen's median "
             "and the floor's over the Java client's."), "",
             ("| heartbeat | phase | amqgen CPU µs/msg | Java client CPU µs/msg | floor CPU µs/msg | amqgen msg/s "
             "| Java client msg/s | amqgen / Java client | floor / Java client |"),
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for hb in heartbeats:
        for phase in PHASES:
            ours, theirs = cpu_us("amqgen", hb, phase), cpu_us("rabbit", hb, phase)
            low = cpu_us("floor", hb, phase)
            mo, mt, mf = statistics.median(ours), statistics.median(theirs), statistics.median(low)
            lines.append(f"| {hb} s | {phase} | {mo:.1f} ({ours[0]:.1f}-{ours[-1]:.1f}) | {mt:.1f} "
                         f"({theirs[0]:.1f}-{theirs[-1]:.1f}) | {mf:.1f} ({low[0]:.1f}-{low[-1]:.1f}) | "
                         f"{rate('amqgen', hb, phase):,.0f} | {rate('rabbit', hb, phase):,.0f} | {mo / mt:.2f} | "
                         f"{mf / mt:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
