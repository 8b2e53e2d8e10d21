"""The 1.0 fault driver of the generated Python asyncio client (``aio.py``): tests/faults/protocol10.md's
scenarios, the blocking driver's steps with await. The package is the one rendered for the test run
(``AMQGEN_PACKAGE``, on PYTHONPATH)."""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import time
from typing import Any

from driver_common import Outcome, body, fds, say, serve

aio: Any = importlib.import_module(f"{os.environ['AMQGEN_PACKAGE']}.aio")

KINDS = (("ConnectTimeout", "connect_timeout"), ("ConnectError", "connect_failed"),
         ("ConnectionLostError", "connection_lost"), ("ConnectionClosedError", "connection_closed"),
         ("SessionError", "session_error"), ("LinkError", "link_error"), ("MessageSizeError", "local_error"),
         ("Timeout", "timeout"))
USABLE = ("session_error", "link_error", "local_error", "timeout", "cancelled")


async def outcome_of(exc: BaseException, conn: Any = None, p: dict[str, Any] | None = None,
                     **fields: Any) -> Outcome:
    for name, kind in KINDS:
        if isinstance(exc, getattr(aio, name)):
            out = Outcome(kind, raised=type(exc).__name__, **fields)
            if exc.condition:
                out.fields["condition"] = exc.condition
            if kind in USABLE and conn is not None and p is not None:
                out.fields["usable"] = await usable(conn, p)
            return out
    return Outcome("error", type=type(exc).__name__, message=str(exc)[:300].replace("\n", " "))


async def usable(conn: Any, p: dict[str, Any]) -> int:
    try:
        sender = await conn.sender(p["usable_address"])
        return int(type(await sender.send(b"usable", timeout=10)).__name__ == "Accepted")
    except Exception:  # noqa: BLE001 - what usable=0 reports
        return 0


async def connect(p: dict[str, Any]) -> Any:
    return await aio.connect(p["url"], idle_timeout=p["idle"] or None, connect_timeout=p["timeout"], timeout=30)


async def wait_go() -> None:
    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    if line.strip() != "go":
        raise SystemExit(f"expected go, got {line!r}")


async def run(scenario: Any, p: dict[str, Any]) -> None:
    conn = await connect(p)
    try:
        result = await scenario(conn, p)
    except Outcome:
        await conn.close()
        raise
    except Exception as e:  # noqa: BLE001 - mapped to an outcome kind
        out = await outcome_of(e, conn, p)
        await conn.close()
        raise out from None
    await conn.close()
    raise Outcome("ok", **(result or {}))


async def s_connect(p: dict[str, Any]) -> None:
    before = fds()
    try:
        conn = await connect(p)
    except Exception as e:  # noqa: BLE001
        raise await outcome_of(e, fds=fds() - before) from None
    say("phase", "connected")
    await wait_go()
    await conn.close()
    raise Outcome("ok", fds=fds() - before)


async def receive_idle(conn: Any, p: dict[str, Any]) -> None:
    receiver = await conn.receiver(p["address"], credit=10)
    say("phase", "receiving")
    await receiver.receive(timeout=60)


async def await_outcome(conn: Any, p: dict[str, Any]) -> None:
    sender = await conn.sender(p["address"])
    say("phase", "ready")
    await wait_go()
    await sender.send(b"0123456789", timeout=60)


async def send_stream(conn: Any, p: dict[str, Any]) -> dict[str, Any]:
    sender = await conn.sender(p["address"])
    payload = bytes(p["size"])
    say("phase", "sending")
    sent = 0
    end = time.monotonic() + p["seconds"]
    while time.monotonic() < end:
        trackers = [await sender.send(payload, wait=False) for _ in range(p["batch"])]
        for t in trackers:
            await sender.wait(t)
        sent += len(trackers)
    return {"sent": sent}


async def roundtrip(conn: Any, p: dict[str, Any]) -> dict[str, Any]:
    sender = await conn.sender(p["address"])
    for i in range(p["count"]):
        await sender.send(body(i, p["size"]))
    receiver = await conn.receiver(p["address"], credit=10)
    ok = 1
    for i in range(p["count"]):
        d = await receiver.receive(timeout=30)
        ok &= d.body == body(i, p["size"])
        d.accept()
    return {"consumed": p["count"], "body_ok": ok}


async def attach(conn: Any, p: dict[str, Any]) -> None:
    address = f"/amq/queue/{p['queue']}-missing" if p.get("missing") else p["address"]
    await (conn.receiver if p["role"] == "receiver" else conn.sender)(address)


async def send_big(conn: Any, p: dict[str, Any]) -> None:
    await (await conn.sender(p["address"])).send(bytes(p["size"]), timeout=60)


async def send_n(conn: Any, p: dict[str, Any]) -> dict[str, Any]:
    sender = await conn.sender(p["address"])
    sent = 0
    try:
        for _ in range(p["count"]):
            await sender.send(b"0123456789", timeout=p["send_timeout"])
            sent += 1
    except Exception as e:  # noqa: BLE001
        raise await outcome_of(e, conn, p, sent=sent) from None
    return {"sent": sent}


async def receive_timeout(conn: Any, p: dict[str, Any]) -> None:
    await (await conn.receiver(p["address"])).receive(timeout=p["wait"])


async def receive_cancel(conn: Any, p: dict[str, Any]) -> None:
    receiver = await conn.receiver(p["address"])
    task = asyncio.create_task(receiver.receive(timeout=60))
    await asyncio.sleep(0.3)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        raise Outcome("cancelled", raised="CancelledError", usable=await usable(conn, p)) from None


async def per_message_credit(conn: Any, p: dict[str, Any]) -> dict[str, Any]:
    n = p["count"]
    sender = await conn.sender(p["address"])
    send_cpu = []
    for i in range(n):
        if i in (0, n - 1000):
            start = time.process_time()
        await sender.send(b"0123456789")
        if i in (999, n - 1):
            send_cpu.append((time.process_time() - start) / 1000 * 1e6)
    receiver = await conn.receiver(p["address"], credit=100)
    receive_cpu = []
    for i in range(n):
        if i in (0, n - 1000):
            start = time.process_time()
        (await receiver.receive(timeout=30)).accept()
        if i in (999, n - 1):
            receive_cpu.append((time.process_time() - start) / 1000 * 1e6)
    flat = send_cpu[1] <= 3 * send_cpu[0] and receive_cpu[1] <= 3 * receive_cpu[0]
    return {"sent": n, "received": n, "send_first_us": round(send_cpu[0]), "send_last_us": round(send_cpu[1]),
            "receive_first_us": round(receive_cpu[0]), "receive_last_us": round(receive_cpu[1]), "flat": int(flat)}


SCENARIOS = {"receive_idle": receive_idle, "await_outcome": await_outcome, "send_stream": send_stream,
             "roundtrip": roundtrip, "attach": attach, "send_big": send_big, "send_n": send_n,
             "receive_timeout": receive_timeout, "receive_cancel": receive_cancel,
             "per_message_credit": per_message_credit}


def dispatch(scenario: str, p: dict[str, Any]) -> None:
    if scenario == "connect":
        asyncio.run(s_connect(p))
    elif scenario in SCENARIOS:
        asyncio.run(run(SCENARIOS[scenario], p))
    else:
        raise Outcome("error", type="UnknownScenario", message=scenario)


if __name__ == "__main__":
    serve(dispatch)
