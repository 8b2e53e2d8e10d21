"""AMQP 1.0 clients (the generated blocking client and Qpid Proton) talking to RabbitMQ's 1.0 plugin on 5672,
recorded together with 0-9-1 clients (pika, py-amqp) on the same port: the mixed capture of issue 45."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

import pika
from traffic_clients import RUN, pika_publish_consume, pyamqp_session
from traffic_tools import Recorder, keep_connections_with

URL = "amqp://guest:guest@127.0.0.1:5672"


def bodies(tag: str, n: int) -> list[bytes]:
    """n bodies, every 10th larger than the 4,096-octet frame the clients ask for (split across transfers)."""
    return [(f"{RUN} {tag} {i} ".encode()) * (400 if i % 10 == 0 else 1) for i in range(n)]


def gen10_session(amqp10: ModuleType, queue: str, n: int, sasl: bool = True) -> int:
    """The generated blocking client: n messages, even ones pre-settled, odd ones awaiting Accepted; read back
    with credit and accepted."""
    client = __import__(f"{amqp10.__name__}.client", fromlist=["Connection"])
    sent = bodies("gen", n)
    with client.Connection(URL if sasl else "amqp://127.0.0.1:5672", max_frame_size=4096,
                           container_id=f"{RUN}-gen") as conn:
        sender = conn.sender(f"/queue/{queue}")
        for i, body in enumerate(sent):
            sender.send(body, settled=i % 2 == 0)
        got = []
        for delivery in conn.receiver(f"/queue/{queue}", credit=20):
            got.append(delivery.body)
            delivery.accept()
            if len(got) == n:
                break
    assert got == sent
    return len(got)


def proton_session(queue: str, n: int) -> int:
    """Qpid Proton's BlockingConnection: n messages sent (each awaiting its outcome), received and accepted."""
    from proton import Message
    from proton.utils import BlockingConnection

    conn = BlockingConnection(URL, timeout=30, container_id=f"{RUN}-proton", max_frame_size=4096)
    sender = conn.create_sender(f"/queue/{queue}")
    sent = bodies("proton", n)
    for body in sent:
        sender.send(Message(body=body))
    receiver = conn.create_receiver(f"/queue/{queue}", credit=10)
    got = []
    for _ in range(n):
        msg = receiver.receive(timeout=30)
        got.append(bytes(msg.body))  # Proton hands a view of a buffer it reuses
        receiver.accept()
    conn.close()
    assert got == sent, [i for i, (a, b) in enumerate(zip(got, sent)) if a != b][:5]
    return len(got)


def _delete(*queues: str) -> None:
    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1"))
    ch = conn.channel()
    for q in queues:
        ch.queue_delete(q)
    conn.close()


def record_mixed(path: Path, amqp10: ModuleType, n10: int = 60) -> dict[str, Any]:
    """Two 1.0 connections (generated client with SASL PLAIN, Proton) and two 0-9-1 ones (pika, py-amqp) at once."""
    results: dict[str, Any] = {}
    q_gen, q_proton = f"{RUN}-gen10-{uuid.uuid4().hex[:6]}", f"{RUN}-proton10-{uuid.uuid4().hex[:6]}"

    def run(key: str, fn: Any, *args: Any) -> None:
        try:
            results[key] = fn(*args)
        except Exception as e:  # noqa: BLE001 -- reported by the caller's assertion on results
            results[key] = repr(e)

    with Recorder(path):
        threads = [threading.Thread(target=run, args=("gen10", gen10_session, amqp10, q_gen, n10)),
                   threading.Thread(target=run, args=("proton", proton_session, q_proton, n10)),
                   threading.Thread(target=run, args=("pika", pika_publish_consume, "m", [0, 10, 5000, 200_000])),
                   threading.Thread(target=run, args=("py-amqp", pyamqp_session, "m2", 10))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    _delete(q_gen, q_proton)
    keep_connections_with(path, RUN.encode())
    return results
