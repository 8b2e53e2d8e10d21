"""The recovery soak (tests/faults/protocol.md's ``soak``) on aio-pika's ``connect_robust``, written as an
aio-pika user would: robust connections, a robust server-named queue bound to a direct exchange, a callback
consumer, publisher confirms with returns raised, and the application publishing again what was not confirmed.
The peer our clients' recovery is compared with (scripts/soak-recovery)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aio_pika
from driver_common import Outcome, say, serve


async def _soak(p: dict[str, Any]) -> None:
    url = f"{p['url']}?heartbeat={p['heartbeat']}"
    results = open(p["results"], "a", buffering=1)  # noqa: SIM115 - closed at the end, flushed per line
    seen: set[int] = set()
    done = asyncio.Event()
    count, size = p["count"], p["size"]

    consumer = await aio_pika.connect_robust(url)
    producer = await aio_pika.connect_robust(url)
    for name, conn in (("consumer", consumer), ("producer", producer)):
        conn.close_callbacks.add(lambda *_a, n=name: say("event", "recovery_started", conn=n))
        conn.reconnect_callbacks.add(lambda *_a, n=name: say("event", "recovered", conn=n))

    ch = await consumer.channel()
    await ch.set_qos(prefetch_count=100)
    exchange = await ch.declare_exchange(p["exchange"], aio_pika.ExchangeType.DIRECT)
    queue = await ch.declare_queue("", exclusive=False, auto_delete=False)
    say("event", "queue", name=queue.name)
    await queue.bind(exchange, p["routing_key"])

    async def on_message(msg: aio_pika.abc.AbstractIncomingMessage) -> None:
        ident = int(msg.body[:12])
        results.write(f"D {ident} {int(msg.redelivered or False)}\n")
        seen.add(ident)
        await msg.ack()
        if len(seen) >= count:
            done.set()

    await queue.consume(on_message)

    pch = await producer.channel(publisher_confirms=True, on_return_raises=True)
    pex = await pch.get_exchange(p["exchange"], ensure=False)
    pending = list(range(count))
    published = 0
    start = last_confirm = time.monotonic()
    n = 0
    while pending:
        await asyncio.sleep(max(0.0, start + n * p["window"] / float(p["rate"]) - time.monotonic()))
        n += 1
        window, pending = pending[: p["window"]], pending[p["window"]:]
        bodies = [str(i).zfill(12).encode() + b"x" * (size - 12) for i in window]
        published += len(window)
        sent = await asyncio.gather(*(pex.publish(aio_pika.Message(b), p["routing_key"], mandatory=True)
                                      for b in bodies), return_exceptions=True)
        failed = [i for i, r in zip(window, sent) if isinstance(r, BaseException)]
        results.writelines(f"{'U' if isinstance(r, BaseException) else 'C'} {i}\n" for i, r in zip(window, sent))
        if failed:
            pending = failed + pending
            await asyncio.sleep(0.1)  # disconnected: aio-pika raises at once until it has reconnected
        else:
            last_confirm = time.monotonic()
        if time.monotonic() - last_confirm > 120:
            break
    try:
        await asyncio.wait_for(done.wait(), 120)
    except TimeoutError:
        pass
    results.close()
    await producer.close()
    await consumer.close()
    raise Outcome("ok", published=published, confirmed=count - len(pending), consumed=len(seen))


def run(scenario: str, params: dict[str, Any]) -> None:
    if scenario != "soak":
        raise Outcome("error", type="NotImplemented", message=f"the aio-pika peer runs the soak only, not {scenario}")
    asyncio.run(_soak(params))


if __name__ == "__main__":
    serve(run)
