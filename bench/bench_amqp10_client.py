#!/usr/bin/env python3
"""Client CPU per message, AMQP 1.0 through RabbitMQ's 1.0 plugin: the generated blocking client (client.py on the
sans-I/O engine) against Qpid Proton's BlockingConnection, in one run. Each client sends N messages of 128 octets
unsettled, awaiting each Accepted, then receives them with credit and accepts each. CPU is this process's
(time.process_time), so the broker's work is not counted; the ratio is ours over Proton's (goal: at most 0.5).

Usage:  python bench/bench_amqp10_client.py [N]    (render first: amqgen render --lang python --spec 1-0 --out DIR,
        DIR on PYTHONPATH; RabbitMQ with rabbitmq_amqp1_0 on 127.0.0.1:5672, guest/guest)
"""

import sys
import time
import uuid

from amqp10_codec.client import Connection
from proton import Message
from proton.utils import BlockingConnection

URL = "amqp://guest:guest@127.0.0.1:5672"
N = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
BODY = b"x" * 128


def ours(queue: str) -> float:
    t = time.process_time()
    with Connection(URL) as conn:
        sender = conn.sender(queue)
        for _ in range(N):
            sender.send(BODY)
        receiver = conn.receiver(queue, credit=500)
        for i, delivery in enumerate(receiver, 1):
            assert delivery.body == BODY
            delivery.accept()
            if i == N:
                break
    return time.process_time() - t


def protons(queue: str) -> float:
    t = time.process_time()
    conn = BlockingConnection("amqp://guest:guest@127.0.0.1:5672")
    sender = conn.create_sender(queue)
    for _ in range(N):
        sender.send(Message(body=BODY))  # waits for the outcome, as ours does
    receiver = conn.create_receiver(queue, credit=500)
    for _ in range(N):
        m = receiver.receive(timeout=30)
        assert m.body == BODY
        receiver.accept()
    conn.close()
    return time.process_time() - t


if __name__ == "__main__":
    import pika  # the plugin declares the queues: delete them after

    names = [f"bench-amqgen-{uuid.uuid4().hex[:8]}", f"bench-proton-{uuid.uuid4().hex[:8]}"]
    a = ours(f"/queue/{names[0]}")
    b = protons(f"/queue/{names[1]}")
    pc = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1"))
    for name in names:
        pc.channel().queue_delete(name)
    pc.close()
    print(f"{N} messages of {len(BODY)} octets, sent unsettled and accepted, received with credit")
    print(f"amqgen client: {a / N * 1e6:.1f} us CPU per message")
    print(f"Proton BlockingConnection: {b / N * 1e6:.1f} us CPU per message")
    print(f"ratio amqgen / Proton: {a / b:.2f} (goal at most 0.50)")
