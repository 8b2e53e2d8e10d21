"""The 1.0 fault driver of the generated Python blocking client (``client.py``): tests/faults/protocol10.md's
scenarios. The package is the one rendered for the test run (``AMQGEN_PACKAGE``, on PYTHONPATH)."""

from __future__ import annotations

import importlib
import os
import time
from typing import Any

from driver_common import Outcome, body, fds, say, serve, wait_go

client: Any = importlib.import_module(f"{os.environ['AMQGEN_PACKAGE']}.client")

KINDS = (("ConnectTimeout", "connect_timeout"), ("ConnectError", "connect_failed"),
         ("ConnectionLostError", "connection_lost"), ("ConnectionClosedError", "connection_closed"),
         ("SessionError", "session_error"), ("LinkError", "link_error"), ("MessageSizeError", "local_error"),
         ("Timeout", "timeout"))
USABLE = ("session_error", "link_error", "local_error", "timeout")


def outcome_of(exc: BaseException, conn: Any = None, p: dict[str, Any] | None = None, **fields: Any) -> Outcome:
    """The client's own errors as outcome kinds (the most specific class first); anything else is an error."""
    for name, kind in KINDS:
        if isinstance(exc, getattr(client, name)):
            out = Outcome(kind, raised=type(exc).__name__, **fields)
            if exc.condition:
                out.fields["condition"] = exc.condition
            if kind in USABLE and conn is not None and p is not None:
                out.fields["usable"] = usable(conn, p)
            return out
    return Outcome("error", type=type(exc).__name__, message=str(exc)[:300].replace("\n", " "))


def usable(conn: Any, p: dict[str, Any]) -> int:
    try:
        return int(type(conn.sender(p["usable_address"]).send(b"usable", timeout=10)).__name__ == "Accepted")
    except Exception:  # noqa: BLE001 - what usable=0 reports
        return 0


def connect(p: dict[str, Any]) -> Any:
    return client.Connection(p["url"], idle_timeout=p["idle"] or None, connect_timeout=p["timeout"], timeout=30)


def run(scenario: Any, p: dict[str, Any]) -> None:
    """Connects, runs ``scenario(conn, p)`` and ends with its outcome; the connection closed in every case."""
    conn = connect(p)
    try:
        result = scenario(conn, p)
    except Outcome:
        conn.close()
        raise
    except Exception as e:  # noqa: BLE001 - mapped to an outcome kind
        out = outcome_of(e, conn, p)
        conn.close()
        raise out from None
    conn.close()
    raise Outcome("ok", **(result or {}))


def s_connect(p: dict[str, Any]) -> None:
    before = fds()
    try:
        conn = connect(p)
    except Exception as e:  # noqa: BLE001
        raise outcome_of(e, fds=fds() - before) from None
    say("phase", "connected")
    wait_go()
    conn.close()
    raise Outcome("ok", fds=fds() - before)


def receive_idle(conn: Any, p: dict[str, Any]) -> None:
    receiver = conn.receiver(p["address"], credit=10)
    say("phase", "receiving")
    receiver.receive(timeout=60)


def await_outcome(conn: Any, p: dict[str, Any]) -> None:
    sender = conn.sender(p["address"])
    say("phase", "ready")
    wait_go()
    sender.send(b"0123456789", timeout=60)


def send_stream(conn: Any, p: dict[str, Any]) -> dict[str, Any]:
    sender = conn.sender(p["address"])
    payload = bytes(p["size"])
    say("phase", "sending")
    sent = 0
    end = time.monotonic() + p["seconds"]
    while time.monotonic() < end:
        trackers = [sender.send(payload, wait=False) for _ in range(p["batch"])]
        for t in trackers:
            sender.wait(t)
        sent += len(trackers)
    return {"sent": sent}


def roundtrip(conn: Any, p: dict[str, Any]) -> dict[str, Any]:
    sender = conn.sender(p["address"])
    for i in range(p["count"]):
        sender.send(body(i, p["size"]))
    receiver = conn.receiver(p["address"], credit=10)
    ok = 1
    for i in range(p["count"]):
        d = receiver.receive(timeout=30)
        ok &= d.body == body(i, p["size"])
        d.accept()
    return {"consumed": p["count"], "body_ok": ok}


def attach(conn: Any, p: dict[str, Any]) -> None:
    address = f"/amq/queue/{p['queue']}-missing" if p.get("missing") else p["address"]
    (conn.receiver if p["role"] == "receiver" else conn.sender)(address)


def send_big(conn: Any, p: dict[str, Any]) -> None:
    conn.sender(p["address"]).send(bytes(p["size"]), timeout=60)


def send_n(conn: Any, p: dict[str, Any]) -> dict[str, Any]:
    sender = conn.sender(p["address"])
    sent = 0
    try:
        for _ in range(p["count"]):
            sender.send(b"0123456789", timeout=p["send_timeout"])
            sent += 1
    except Exception as e:  # noqa: BLE001
        raise outcome_of(e, conn, p, sent=sent) from None
    return {"sent": sent}


def receive_timeout(conn: Any, p: dict[str, Any]) -> None:
    conn.receiver(p["address"]).receive(timeout=p["wait"])


def per_message_credit(conn: Any, p: dict[str, Any]) -> dict[str, Any]:
    n = p["count"]
    sender = conn.sender(p["address"])
    send_cpu = []
    for i in range(n):
        if i in (0, n - 1000):
            start = time.process_time()
        sender.send(b"0123456789")
        if i in (999, n - 1):
            send_cpu.append((time.process_time() - start) / 1000 * 1e6)
    receiver = conn.receiver(p["address"], credit=100)
    receive_cpu = []
    for i in range(n):
        if i in (0, n - 1000):
            start = time.process_time()
        receiver.receive(timeout=30).accept()
        if i in (999, n - 1):
            receive_cpu.append((time.process_time() - start) / 1000 * 1e6)
    flat = send_cpu[1] <= 3 * send_cpu[0] and receive_cpu[1] <= 3 * receive_cpu[0]
    return {"sent": n, "received": n, "send_first_us": round(send_cpu[0]), "send_last_us": round(send_cpu[1]),
            "receive_first_us": round(receive_cpu[0]), "receive_last_us": round(receive_cpu[1]), "flat": int(flat)}


SCENARIOS = {"receive_idle": receive_idle, "await_outcome": await_outcome, "send_stream": send_stream,
             "roundtrip": roundtrip, "attach": attach, "send_big": send_big, "send_n": send_n,
             "receive_timeout": receive_timeout, "per_message_credit": per_message_credit}


def dispatch(scenario: str, p: dict[str, Any]) -> None:
    if scenario == "connect":
        s_connect(p)
    elif scenario in SCENARIOS:
        run(SCENARIOS[scenario], p)
    else:
        raise Outcome("error", type="UnknownScenario", message=scenario)


if __name__ == "__main__":
    serve(dispatch)
