"""The fault driver of the generated Python blocking client (``client.py``): tests/faults/protocol.md's scenarios.
The package is the one rendered for the test run (``AMQGEN_PACKAGE``, on PYTHONPATH)."""

from __future__ import annotations

import importlib
import os
import time
from typing import Any

from driver_common import Outcome, body, fds, say, serve, wait_go

client: Any = importlib.import_module(f"{os.environ['AMQGEN_PACKAGE']}.client")


def outcome_of(exc: BaseException) -> Outcome:
    """The client's own errors as outcome kinds; anything else is an error."""
    if isinstance(exc, client.ConnectionClosedError):
        return Outcome("connection_closed", code=exc.reply_code)
    if isinstance(exc, client.ConnectionLostError):
        return Outcome("connection_lost")
    if isinstance(exc, client.ChannelClosedError):
        return Outcome("channel_closed", code=exc.reply_code)
    return Outcome("error", type=type(exc).__name__, message=str(exc)[:300].replace("\n", " "))


def connect(p: dict[str, Any]) -> Any:
    return client.connect(p["url"], heartbeat=p["heartbeat"], timeout=p["timeout"])


def closing(conn: Any, exc: BaseException) -> Outcome:
    out = outcome_of(exc)
    try:
        conn.close()
        out.fields["close_ok"] = 1
    except Exception:  # noqa: BLE001 - the close's own failure is what close_ok reports
        out.fields["close_ok"] = 0
    return out


def s_connect(p: dict[str, Any]) -> None:
    before = fds()
    try:
        conn = connect(p)
    except Exception as e:  # noqa: BLE001
        out = outcome_of(e)
        out.fields["fds"] = fds() - before
        raise out from None
    say("phase", "connected")
    wait_go()
    neg = conn._s.engine.negotiated
    conn.close()
    raise Outcome("ok", heartbeat=neg.heartbeat, frame_max=neg.frame_max, channel_max=neg.channel_max,
                  fds=fds() - before)


def s_publish_stream(p: dict[str, Any]) -> None:
    conn = connect(p)
    published = confirmed = 0
    try:
        ch = conn.channel()
        ch.confirm_select()
        ch.queue_declare(queue=p["queue"])
        payload = bytes(p["size"])
        say("phase", "publishing")
        end = time.monotonic() + p["seconds"]
        while time.monotonic() < end:
            for _ in range(p["batch"]):
                ch.publish(payload, routing_key=p["queue"], wait=False)
                published += 1
            ch.wait_for_confirms()
            confirmed = published
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    conn.close()
    raise Outcome("ok", published=published, confirmed=confirmed)


def s_await_confirm(p: dict[str, Any]) -> None:
    conn = connect(p)
    try:
        ch = conn.channel()
        ch.confirm_select()
        ch.queue_declare(queue=p["queue"])
        say("phase", "ready")
        wait_go()
        ch.publish(b"0123456789", routing_key=p["queue"])
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    conn.close()
    raise Outcome("ok")


def s_consume_idle(p: dict[str, Any]) -> None:
    conn = connect(p)
    try:
        ch = conn.channel()
        ch.queue_declare(queue=p["queue"])
        it = ch.consume(p["queue"])
        say("phase", "consuming")
        for _ in it:
            break
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    conn.close()
    raise Outcome("ok")


def s_roundtrip(p: dict[str, Any]) -> None:
    conn = connect(p)
    count, size = p["count"], p["size"]
    try:
        ch = conn.channel()
        ch.confirm_select()
        ch.queue_declare(queue=p["queue"])
        for i in range(count):
            ch.publish(body(i, size), routing_key=p["queue"], wait=False)
        ch.wait_for_confirms()
        ok, got = True, 0
        for i, msg in enumerate(ch.consume(p["queue"])):
            ok = ok and msg.body == body(i, size)
            msg.ack()
            got = i + 1
            if got == count:
                break
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    conn.close()
    raise Outcome("ok", consumed=got, body_ok=ok)


def s_consume_ack(p: dict[str, Any]) -> None:
    conn = connect(p)
    try:
        ch = conn.channel()
        got = 0
        for msg in ch.consume(p["queue"], prefetch=p["count"]):
            got += 1
            if got <= p["ack"]:
                msg.ack()
            if got == p["count"]:
                say("phase", "acked")
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    raise Outcome("ok")


SCENARIOS = {name[2:]: f for name, f in globals().items() if name.startswith("s_")}


def run(scenario: str, params: dict[str, Any]) -> None:
    if scenario not in SCENARIOS:
        raise Outcome("error", type="NotImplemented", message=f"no scenario {scenario} in the blocking driver")
    SCENARIOS[scenario](params)


if __name__ == "__main__":
    serve(run)
