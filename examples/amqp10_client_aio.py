#!/usr/bin/env python3
"""The review's AMQP 1.0 workload on the generated asyncio client (package amqp10_codec, rendered with
`amqgen render --lang python --spec 1-0 --out DIR`, DIR on PYTHONPATH): the blocking example's steps
(examples/amqp10_client.py) with await: N messages through a queue, half pre-settled and half awaiting Accepted,
every 50th larger than a frame; read back with credit, accepted, checked in order and equal.

Usage:  python examples/amqp10_client_aio.py amqp://guest:guest@127.0.0.1:5672 QUEUE [N]
"""

import asyncio
import sys

from amqp10_codec import Accepted
from amqp10_codec.aio import Connection

url, queue = sys.argv[1], sys.argv[2]
count = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
bodies = [b"message %d " % i * (9000 if i % 50 == 0 else 1) for i in range(count)]


async def main() -> list[bytes]:
    received = []
    async with Connection(url, max_frame_size=4096) as conn:
        sender = await conn.sender(queue)
        for i, body in enumerate(bodies):
            outcome = await sender.send(body, settled=i % 2 == 0)
            if i % 2 and not isinstance(outcome, Accepted):
                sys.exit(f"message {i}: {outcome!r}")
        async for delivery in await conn.receiver(queue, credit=100):
            received.append(delivery.body)
            delivery.accept()
            if len(received) == count:
                break
    return received

if asyncio.run(main()) != bodies:
    sys.exit("the messages read back differ from those sent")
print(f"{count} messages sent and received in order")
