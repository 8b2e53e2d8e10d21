#!/usr/bin/env python3
"""The review's AMQP 1.0 workload on the generated blocking client (package amqp10_codec, rendered with
`amqgen render --lang python --spec 1-0 --out DIR`, DIR on PYTHONPATH): N messages through a queue, half sent
pre-settled and half awaiting the broker's Accepted, every 50th one larger than a frame; read back with credit,
accepted, checked in order and equal. SASL PLAIN with the URL's user, ANONYMOUS without one.

Usage:  python examples/amqp10_client.py amqp://guest:guest@127.0.0.1:5672 QUEUE [N]
"""

import sys

from amqp10_codec import Accepted
from amqp10_codec.client import Connection

url, queue = sys.argv[1], sys.argv[2]
count = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
bodies = [b"message %d " % i * (9000 if i % 50 == 0 else 1) for i in range(count)]

with Connection(url, max_frame_size=4096) as conn:
    sender = conn.sender(queue)
    for i, body in enumerate(bodies):
        outcome = sender.send(body, settled=i % 2 == 0)
        if i % 2 and not isinstance(outcome, Accepted):
            sys.exit(f"message {i}: {outcome!r}")
    received = []
    for delivery in conn.receiver(queue, credit=100):
        received.append(delivery.body)
        delivery.accept()
        if len(received) == count:
            break
if received != bodies:
    sys.exit("the messages read back differ from those sent")
print(f"{count} messages sent and received in order")
