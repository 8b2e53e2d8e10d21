#!/usr/bin/env python3
"""The generated clients' CPU per message against pika and aio-pika (issue 32), against RabbitMQ on 127.0.0.1:5672.

Run:  .venv/bin/python bench/bench_client.py [--count 100000] [--readme bench/README.md]

Four clients, each in its own process, one after the other in one run: the generated blocking client
(``client.py``), the generated asyncio client (``aio.py``), pika's BlockingConnection and aio-pika. Each, on a fresh
queue, with messages of 128 octets:

1. publish COUNT with confirms, each confirm awaited before the next publish;
2. publish COUNT with confirms pipelined: batches of 1,000 publishes, then their confirms awaited (pika's
   BlockingConnection has no such mode: it awaits every confirm in basic_publish);
3. consume the COUNT messages of 2 with basic.qos 100, each acked.

Reported per phase: the client process's CPU (user + system, ``resource.getrusage``) per message, and messages
per second of wall time. Every client asks for RabbitMQ's default heartbeat (60 s): benches run with a real
heartbeat, never 0 (it hid issue 41's worst defects). The broker shares the machine (2 cores), so the wall figures move from run to run.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import write_block

ROOT = Path(__file__).resolve().parent.parent
URL = "amqp://guest:guest@127.0.0.1:5672/"
#: the heartbeat every client asks for: RabbitMQ's default, never 0
HEARTBEAT = 60
BODY = bytes(range(128))
BATCH = 1000
PHASES = ("each", "pipelined", "consume")


class Meter:
    """CPU and wall time of each phase of this process."""

    def __init__(self) -> None:
        self.results: dict[str, tuple[float, float]] = {}

    def start(self) -> None:
        r = resource.getrusage(resource.RUSAGE_SELF)
        self._cpu, self._wall = r.ru_utime + r.ru_stime, time.monotonic()

    def stop(self, phase: str) -> None:
        r = resource.getrusage(resource.RUSAGE_SELF)
        self.results[phase] = (r.ru_utime + r.ru_stime - self._cpu, time.monotonic() - self._wall)


def ours_blocking(build: str, n: int, m: Meter) -> None:
    sys.path.insert(0, build)
    client = importlib.import_module("amqp091b.client")
    with client.connect(URL, heartbeat=HEARTBEAT) as conn:
        ch = conn.channel()
        q1, q2 = (ch.queue_declare(queue=f"bench-client-{uuid.uuid4()}").queue for _ in range(2))
        ch.confirm_select()
        m.start()
        for _ in range(n):
            ch.publish(BODY, routing_key=q1)
        m.stop("each")
        m.start()
        for i in range(n):
            ch.publish(BODY, routing_key=q2, wait=False)
            if (i + 1) % BATCH == 0 or i + 1 == n:
                ch.wait_for_confirms()
        m.stop("pipelined")
        m.start()
        for i, msg in enumerate(ch.consume(q2, prefetch=100)):
            msg.ack()
            if i + 1 == n:
                break
        m.stop("consume")
        ch2 = conn.channel()
        for q in (q1, q2):
            ch2.queue_delete(queue=q)


async def ours_asyncio(build: str, n: int, m: Meter) -> None:
    sys.path.insert(0, build)
    aio = importlib.import_module("amqp091b.aio")
    conn = await aio.connect(URL, heartbeat=HEARTBEAT)
    ch = await conn.channel()
    q1 = (await ch.queue_declare(queue=f"bench-client-{uuid.uuid4()}")).queue
    q2 = (await ch.queue_declare(queue=f"bench-client-{uuid.uuid4()}")).queue
    await ch.confirm_select()
    m.start()
    for _ in range(n):
        await ch.publish(BODY, routing_key=q1)
    m.stop("each")
    m.start()
    for i in range(n):
        await ch.publish(BODY, routing_key=q2, wait=False)
        if (i + 1) % BATCH == 0 or i + 1 == n:
            await ch.wait_for_confirms()
    m.stop("pipelined")
    m.start()
    i = 0
    async for msg in ch.consume(q2, prefetch=100):
        msg.ack()
        i += 1
        if i == n:
            break
    m.stop("consume")
    ch2 = await conn.channel()
    for q in (q1, q2):
        await ch2.queue_delete(queue=q)
    await conn.close()


def pika_blocking(build: str, n: int, m: Meter) -> None:
    import pika

    conn = pika.BlockingConnection(pika.URLParameters(URL + f"?heartbeat={HEARTBEAT}"))
    ch = conn.channel()
    q1, q2 = (ch.queue_declare(queue=f"bench-client-{uuid.uuid4()}").method.queue for _ in range(2))
    ch.confirm_delivery()
    m.start()
    for _ in range(n):
        ch.basic_publish("", q1, BODY)
    m.stop("each")
    for _ in range(n):  # the queue consumed below (no pipelined mode in BlockingConnection: not timed)
        ch.basic_publish("", q2, BODY)
    ch.basic_qos(prefetch_count=100)
    m.start()
    for i, (method, _props, _body) in enumerate(ch.consume(q2)):
        ch.basic_ack(method.delivery_tag)
        if i + 1 == n:
            break
    m.stop("consume")
    ch.cancel()
    for q in (q1, q2):
        ch.queue_delete(q)
    conn.close()


async def aio_pika_client(build: str, n: int, m: Meter) -> None:
    import aio_pika

    conn = await aio_pika.connect(URL + f"?heartbeat={HEARTBEAT}")
    ch = await conn.channel(publisher_confirms=True)
    q1 = await ch.declare_queue(f"bench-client-{uuid.uuid4()}")
    q2 = await ch.declare_queue(f"bench-client-{uuid.uuid4()}")
    ex = ch.default_exchange
    m.start()
    for _ in range(n):
        await ex.publish(aio_pika.Message(BODY), routing_key=q1.name)
    m.stop("each")
    m.start()
    for start in range(0, n, BATCH):
        await asyncio.gather(*(ex.publish(aio_pika.Message(BODY), routing_key=q2.name)
                               for _ in range(min(BATCH, n - start))))
    m.stop("pipelined")
    await ch.set_qos(prefetch_count=100)
    m.start()
    i = 0
    async with q2.iterator() as it:
        async for msg in it:
            await msg.ack()
            i += 1
            if i == n:
                break
    m.stop("consume")
    for q in (q1, q2):
        await q.delete(if_unused=False, if_empty=False)
    await conn.close()


CLIENTS: dict[str, Callable[..., Any]] = {
    "amqgen client.py (blocking)": ours_blocking, "amqgen aio.py (asyncio)": ours_asyncio,
    "pika BlockingConnection": pika_blocking, "aio-pika": aio_pika_client,
}
PEERS = {"amqgen client.py (blocking)": "pika BlockingConnection", "amqgen aio.py (asyncio)": "aio-pika"}


def child(name: str, build: str, n: int) -> None:
    m = Meter()
    run = CLIENTS[name]
    if asyncio.iscoroutinefunction(run):
        asyncio.run(run(build, n, m))
    else:
        run(build, n, m)
    print(json.dumps(m.results))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--readme", type=Path, default=None)
    ap.add_argument("--child", default=None)
    ap.add_argument("--build", default=None)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.build, args.count)
        return
    build = tempfile.mkdtemp()
    subprocess.run([sys.executable, "-m", "amqgen", "render", "--lang", "python", "--spec", "0-9-1-rabbit",
                    "--package", "amqp091b", "--out", build], check=True, cwd=ROOT, capture_output=True)
    results = {}
    for name in CLIENTS:
        out = subprocess.run([sys.executable, __file__, "--child", name, "--build", build, "--count",
                              str(args.count)], check=True, capture_output=True, text=True)
        results[name] = json.loads(out.stdout.strip().splitlines()[-1])
        print(name, results[name], flush=True)
    head = (f"{args.count:,} messages of 128 octets, one run ({time.strftime('%Y-%m-%d')}); CPU = user + system "
            "of the client process per message; peer: pika for the blocking client, aio-pika for asyncio.")
    lines = [head, "",
             "| client | phase | CPU us/msg | msgs/s | CPU vs peer |", "|---|---|---|---|---|"]
    for name, res in results.items():
        for phase in PHASES:
            if phase not in res:
                continue
            cpu, wall = res[phase]
            peer = results.get(PEERS.get(name, ""), {}).get(phase)
            ratio = f"{cpu / peer[0]:.2f}" if peer else "-"
            lines.append(f"| {name} | {phase} | {cpu / args.count * 1e6:.1f} | {args.count / wall:,.0f} | {ratio} |")
    block = "\n".join(lines)
    print(block)
    if args.readme:
        write_block(args.readme, "bench-client", block)


if __name__ == "__main__":
    main()
