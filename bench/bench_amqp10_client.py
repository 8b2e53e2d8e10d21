#!/usr/bin/env python3
"""Client CPU per message, AMQP 1.0: the generated blocking client and asyncio client (client.py and aio.py on the
sans-I/O engine) against Qpid Proton's BlockingConnection, each against two peers:

- RabbitMQ's 1.0 plugin (127.0.0.1:5672, guest/guest), which grants credit in windows;
- Qpid Proton's Container as a broker granting one credit at a time (tests/peers/proton_peer.ProtonBroker, credit "one":
  a new credit after each message it takes), the peer against which a client that kept every event and scanned
  them on each wait grew slower with every send (issue 43).

Each client sends N messages of 128 octets, unsettled, awaiting each one's Accepted, then receives them with a
credit of 500 and accepts each. Each run is a process of its own that reports its CPU time (``time.process_time``:
user + system, the broker's work not counted) for the two phases; the runs are interleaved in rounds (the
clients' order rotated per round) and the ratio is ours over Proton's per round: the median and the lowest and
highest round (the goal: at most 0.5).

Usage:  .venv/bin/python bench/bench_amqp10_client.py [--count 5000] [--rounds 5] [--readme bench/README.md]
        (renders the package itself; RabbitMQ with rabbitmq_amqp1_0 on 127.0.0.1:5672)
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_common import cpu_model, write_block

BODY = b"x" * 128
CLIENTS = ("amqgen", "amqgen-aio", "proton")


# -- one run: a process of its own ---------------------------------------------------------------------------------
def run_ours(pkg: str, url: str, address: str, n: int) -> tuple[float, float]:
    client = importlib.import_module(f"{pkg}.client")
    with client.Connection(url, timeout=60) as conn:
        sender = conn.sender(address)
        t = time.process_time()
        for _ in range(n):
            sender.send(BODY)
        sent = time.process_time() - t
        receiver = conn.receiver(address, credit=500)
        t = time.process_time()
        for _ in range(n):
            d = receiver.receive(timeout=60)
            assert d.body == BODY
            d.accept()
        return sent, time.process_time() - t


def run_ours_aio(pkg: str, url: str, address: str, n: int) -> tuple[float, float]:
    aio = importlib.import_module(f"{pkg}.aio")

    async def run() -> tuple[float, float]:
        async with aio.Connection(url, timeout=60) as conn:
            sender = await conn.sender(address)
            t = time.process_time()
            for _ in range(n):
                await sender.send(BODY)
            sent = time.process_time() - t
            receiver = await conn.receiver(address, credit=500)
            t = time.process_time()
            for _ in range(n):
                d = await receiver.receive(timeout=60)
                assert d.body == BODY
                d.accept()
            return sent, time.process_time() - t

    return asyncio.run(run())


def run_proton(url: str, address: str, n: int) -> tuple[float, float]:
    from proton import Message
    from proton.utils import BlockingConnection

    conn = BlockingConnection(url, timeout=60)
    sender = conn.create_sender(address)
    t = time.process_time()
    for _ in range(n):
        sender.send(Message(body=BODY))  # waits for the outcome, as ours does
    sent = time.process_time() - t
    receiver = conn.create_receiver(address, credit=500)
    t = time.process_time()
    for _ in range(n):
        m = receiver.receive(timeout=60)
        assert m.body == BODY
        receiver.accept()
    received = time.process_time() - t
    conn.close()
    return sent, received


def child(lib: str, pkg: str, url: str, address: str, n: int) -> None:
    if lib == "amqgen":
        out = run_ours(pkg, url, address, n)
    elif lib == "amqgen-aio":
        out = run_ours_aio(pkg, url, address, n)
    else:
        out = run_proton(url, address, n)
    print(json.dumps(out))


# -- the rounds -----------------------------------------------------------------------------------------------------
def measure(pkg_dir: Path, peer: str, url: str, n: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pkg_dir), str(ROOT / "tests")])}
    out: dict[str, list[tuple[float, float]]] = {c: [] for c in CLIENTS}
    for r in range(rounds):
        for lib in CLIENTS[r % len(CLIENTS):] + CLIENTS[:r % len(CLIENTS)]:
            name = f"bench-{lib}-{uuid.uuid4().hex[:8]}"
            address = f"/queue/{name}" if peer == "RabbitMQ" else name
            proc = subprocess.run([sys.executable, __file__, "--child", lib, "amqp10bench", url, address, str(n)],
                                  env=env, capture_output=True, text=True, timeout=900, check=False)
            if proc.returncode != 0:
                sys.exit(f"bench: {lib} against {peer} failed:\n{proc.stderr[-3000:]}")
            sent, received = json.loads(proc.stdout.strip().splitlines()[-1])
            out[lib].append((sent / n, received / n))
            if peer == "RabbitMQ":
                _delete(name)
            print(f"  {peer} round {r + 1} {lib}: send {sent / n * 1e6:.1f} us, receive {received / n * 1e6:.1f} us",
                  flush=True)
    return out


def _delete(queue: str) -> None:
    import pika  # the plugin declared the queue: delete it over 0-9-1

    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1"))
    conn.channel().queue_delete(queue)
    conn.close()


def rows(peer: str, results: dict[str, list[tuple[float, float]]]) -> list[str]:
    lines = []
    proton = [s + r for s, r in results["proton"]]
    for lib in CLIENTS:
        per = [s + r for s, r in results[lib]]
        sends = statistics.median(s for s, _ in results[lib]) * 1e6
        receives = statistics.median(r for _, r in results[lib]) * 1e6
        ratio = sorted(o / p for o, p in zip(per, proton, strict=True))
        shown = "1" if lib == "proton" else f"{statistics.median(ratio):.2f} ({ratio[0]:.2f}-{ratio[-1]:.2f})"
        lines.append(f"| {peer} | {lib} | {sends:.1f} | {receives:.1f} | {statistics.median(per) * 1e6:.1f} | "
                     f"{shown} |")
    return lines


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, lib, pkg, url, address, n = sys.argv
        child(lib, pkg, url, address, int(n))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=5000, help="messages per run (default 5000)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--readme", type=Path, default=None, help="write the results table into this README")
    args = ap.parse_args()
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "peers")]
    from proton_peer import ProtonBroker

    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "amqgen", "render", "--lang", "python", "--spec", "1-0", "--out", tmp,
                        "--package", "amqp10bench"], check=True, cwd=ROOT, capture_output=True)
        lines = [f"Machine: {cpu_model(platform.processor() or 'unknown')}, Python {platform.python_version()}, "
                 f"python-qpid-proton {metadata.version('python-qpid-proton')}; {args.count} messages of "
                 f"{len(BODY)} octets per run, {args.rounds} interleaved rounds (median; ratio: lowest-highest "
                 "round).", "",
                 "| peer | client | send us CPU | receive us CPU | per message | over Proton's |",
                 "|---|---|---:|---:|---:|---:|"]
        lines += rows("RabbitMQ 3.10", measure(Path(tmp), "RabbitMQ", "amqp://guest:guest@127.0.0.1:5672",
                                               args.count, args.rounds))
        with ProtonBroker(credit="one") as broker:
            lines += rows("Proton, one credit at a time", measure(Path(tmp), "Proton", f"amqp://{broker.url}",
                                                                   args.count, args.rounds))
    block = "\n".join(lines)
    print(block)
    if args.readme is not None:
        write_block(args.readme, "bench-amqp10-client", block)


if __name__ == "__main__":
    main()
