#!/usr/bin/env python3
"""The same client as engine_client.py over asyncio streams: the engine does not change, only the I/O around it
(an event loop reads and writes; the engine's heartbeats go out from a ticking task).

Usage:  python examples/engine_asyncio.py [--host H] [--port P] [--count N] [--build-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import tempfile
from pathlib import Path
from typing import Any

from engine_client import render


async def run(host: str, port: int, count: int, build: Path) -> None:
    e, m = render(build)
    props = importlib.import_module("amqp091e.properties").PROPERTIES[60]
    conn = e.Connection("client", heartbeat=5)
    reader, writer = await asyncio.open_connection(host, port)
    loop = asyncio.get_running_loop()

    async def ticking() -> None:  # the clock is the caller's: heartbeats leave when the engine says they are due
        while True:
            conn.tick(loop.time())
            writer.write(conn.data_to_send())
            await asyncio.sleep(1)

    ticker = asyncio.create_task(ticking())

    def send(channel: int, name: str, body: bytes = b"", p: Any = None, **fields: Any) -> None:
        writer.write(conn.send(channel, m[name](**fields), p, body))

    async def event(kind: type) -> Any:
        while True:
            while (ev := conn.next_event()) is None:
                conn.receive_data(await reader.read(65536) or b"")
                writer.write(conn.data_to_send())
            if isinstance(ev, e.ProtocolError | e.ChannelClosed | e.ConnectionClosed) and kind is not type(ev):
                raise SystemExit(f"the broker said: {ev}")
            if isinstance(ev, kind):
                return ev

    writer.write(conn.initiate())
    await event(e.MethodReceived)
    send(0, "connection.start-ok", client_properties=e.client_properties(), mechanism="PLAIN",
         response=e.plain_response("guest", "guest"), locale="en_US")
    writer.write(conn.send(0, e.tune_ok_for((await event(e.MethodReceived)).method, conn)))
    send(0, "connection.open", virtual_host="/")
    await event(e.ConnectionNegotiated)
    send(1, "channel.open")
    await event(e.ChannelOpened)
    send(1, "queue.declare", exclusive=True)
    queue = (await event(e.MethodReceived)).method.queue
    for i in range(count):
        send(1, "basic.publish", f"async {i}".encode(), props(), routing_key=queue)
    send(1, "basic.consume", queue=queue, no_ack=True)
    await event(e.MethodReceived)
    bodies = [(await event(e.MessageReceived)).body for _ in range(count)]
    assert bodies == [f"async {i}".encode() for i in range(count)]
    print(f"{count} messages published and read back on {queue} (asyncio)")
    writer.write(conn.close())
    await event(e.ConnectionClosed)
    ticker.cancel()
    writer.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=5672)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--build-dir", type=Path, default=None)
    args = ap.parse_args()
    asyncio.run(run(args.host, args.port, args.count, args.build_dir or Path(tempfile.mkdtemp())))


if __name__ == "__main__":
    main()
