#!/usr/bin/env python3
"""The review's program on the generated asyncio client: publish N messages of 0-200 KB with a headers table,
each confirm awaited, consume them with basic.qos 100 and acks, check every body and table, delete the queue and
close cleanly. The package is rendered from RabbitMQ's 0-9-1 first (amqgen render).

Usage:  python examples/client_asyncio.py [--url amqp://guest:guest@127.0.0.1/] [--count 10000] [--build-dir DIR] [--package NAME]
"""

import argparse
import asyncio
import importlib
import os
import random
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--url", default="amqp://guest:guest@127.0.0.1:5672/")
ap.add_argument("--count", type=int, default=10_000)
ap.add_argument("--build-dir", default=None)  # a package already rendered there is used as it is
ap.add_argument("--package", default="amqp091")
args = ap.parse_args()
build = args.build_dir or tempfile.mkdtemp()
if not os.path.exists(os.path.join(build, args.package)):
    subprocess.run([sys.executable, "-m", "amqgen", "render", "--lang", "python", "--spec", "0-9-1-rabbit",
                    "--package", args.package, "--out", build], check=True, capture_output=True)
sys.path.insert(0, build)
aio = importlib.import_module(f"{args.package}.aio")
props = importlib.import_module(f"{args.package}.properties").BasicProperties


async def main() -> None:
    rng = random.Random(32)
    sizes = [rng.randrange(200_001) for _ in range(args.count)]
    async with await aio.connect(args.url) as conn:
        ch = await conn.channel()
        queue = (await ch.queue_declare(queue="", exclusive=True)).queue
        await ch.confirm_select()
        for i, size in enumerate(sizes):
            headers = {"index": i, "size": size, "name": f"message {i}"}
            await ch.publish(bytes([i % 251]) * size, routing_key=queue, properties=props(headers=headers))
        i = -1
        async for msg in ch.consume(queue, prefetch=100):
            i += 1
            assert msg.body == bytes([i % 251]) * sizes[i], f"message {i}: wrong body"
            assert msg.headers == {"index": i, "size": sizes[i], "name": f"message {i}"}, f"message {i}: wrong headers"
            msg.ack()
            if i + 1 == args.count:
                break
        await ch.queue_delete(queue=queue)
    print(f"{args.count} messages published with confirms, consumed, acked and checked")


asyncio.run(main())
