"""The fault driver of the generated Python asyncio client (``aio.py``): tests/faults/protocol.md's scenarios, the
blocking driver's steps awaited (one event loop per scenario). The package is the one rendered for the test run
(``AMQGEN_PACKAGE``, on PYTHONPATH)."""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from driver_common import Outcome, Windows, body, fds, say, serve

aio: Any = importlib.import_module(f"{os.environ['AMQGEN_PACKAGE']}.aio")
properties: Any = importlib.import_module(f"{os.environ['AMQGEN_PACKAGE']}.properties")

#: how long a scenario waits for a notification before it says none came
NOTICE_WAIT = 30.0

#: the client's errors as outcome kinds, subclasses first
KINDS = ((aio.ConnectTimeoutError, "connect_timeout"), (aio.ConnectFailedError, "connect_failed"),
         (aio.VersionRefusedError, "version_refused"), (aio.ConnectionClosedError, "connection_closed"),
         (aio.ConnectionLostError, "connection_lost"), (aio.ConsumerCallbackError, "callback_error"),
         (aio.ChannelClosedError, "channel_closed"), (aio.ConsumerCancelledError, "consumer_cancelled"),
         (aio.EncodeError, "local_error"), (aio.RecoveryFailedError, "recovery_failed"),
         (aio.PublishNotConfirmed, "unconfirmed"))


def outcome_of(exc: BaseException) -> Outcome:
    """The client's own errors as outcome kinds (``raised=`` its class); anything else is an error."""
    for cls, kind in KINDS:
        if isinstance(exc, cls):
            # a local refusal is an EncodeError or a subclass (the engine's FrameTooLargeError): the documented one
            out = Outcome(kind, raised=cls.__name__ if kind == "local_error" else type(exc).__name__)
            if hasattr(exc, "reply_code") and kind in ("connection_closed", "channel_closed", "callback_error"):
                out.fields["code"] = exc.reply_code
            if kind == "version_refused":
                out.fields["server"] = exc.server
            if kind == "unconfirmed":
                out.fields["messages"] = len(exc.messages)
            elif getattr(exc, "unconfirmed", None):
                out.fields["unconfirmed"] = len(exc.unconfirmed)
            return out
    return Outcome("error", type=type(exc).__name__, message=str(exc)[:300].replace("\n", " "))


async def connect(p: dict[str, Any]) -> Any:
    return await aio.connect(p["url"], heartbeat=p["heartbeat"], timeout=p["timeout"])


async def closing(conn: Any, exc: BaseException) -> Outcome:
    out = outcome_of(exc)
    try:
        await conn.close()
        out.fields["close_ok"] = 1
    except Exception:  # noqa: BLE001 - the close's own failure is what close_ok reports
        out.fields["close_ok"] = 0
    return out


async def wait_go() -> None:
    """Reads ``go`` without blocking the loop (the connection's heartbeats go on meanwhile)."""
    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    if line.strip() != "go":
        raise SystemExit(f"expected go, got {line!r}")


async def scenario(p: dict[str, Any], steps: Callable[[Any], Awaitable[dict[str, Any] | None]]) -> None:
    """Connects, runs ``steps(conn)``; its fields are the ok outcome's; the client's errors are outcomes after a
    close."""
    conn = await connect(p)
    try:
        result = await steps(conn)
    except Outcome:
        await conn.close()
        raise
    except Exception as e:  # noqa: BLE001
        raise await closing(conn, e) from None
    await conn.close()
    raise Outcome("ok", **(result or {}))


async def usable(conn: Any, p: dict[str, Any], ch: Any = None) -> int:
    """1 when a queue.declare of ``queue`` works (on ``ch``, else a new channel of ``conn``)."""
    try:
        ch = ch or await conn.channel()
        await ch.queue_declare(queue=p["queue"])
        return 1
    except Exception as e:  # noqa: BLE001 - what usable=0 reports
        print(f"not usable: {e!r}", file=sys.stderr)
        return 0


async def s_connect(p: dict[str, Any]) -> None:
    before = fds()
    try:
        conn = await connect(p)
    except Exception as e:  # noqa: BLE001
        out = outcome_of(e)
        out.fields["fds"] = fds() - before
        raise out from None
    say("phase", "connected")
    await wait_go()
    neg = conn.negotiated
    await conn.close()
    raise Outcome("ok", heartbeat=neg.heartbeat, frame_max=neg.frame_max, channel_max=neg.channel_max,
                  fds=fds() - before)


async def s_publish_stream(p: dict[str, Any]) -> None:
    count = {"published": 0, "confirmed": 0}

    async def steps(conn: Any) -> dict[str, Any]:
        ch = await conn.channel()
        await ch.confirm_select()
        await ch.queue_declare(queue=p["queue"])
        payload = bytes(p["size"])
        say("phase", "publishing")
        loop = asyncio.get_running_loop()
        end = loop.time() + p["seconds"]
        while loop.time() < end:
            for _ in range(p["batch"]):
                await ch.publish(payload, routing_key=p["queue"], wait=False)
                count["published"] += 1
            await ch.wait_for_confirms()
            count["confirmed"] = count["published"]
        return count

    await scenario(p, steps)


async def s_await_confirm(p: dict[str, Any]) -> None:
    async def steps(conn: Any) -> None:
        ch = await conn.channel()
        await ch.confirm_select()
        await ch.queue_declare(queue=p["queue"])
        say("phase", "ready")
        await wait_go()
        await ch.publish(b"0123456789", routing_key=p["queue"])

    await scenario(p, steps)


async def s_consume_idle(p: dict[str, Any]) -> None:
    async def steps(conn: Any) -> None:
        ch = await conn.channel()
        await ch.queue_declare(queue=p["queue"])
        it = await ch.consume(p["queue"])
        say("phase", "consuming")
        async for _ in it:
            break

    await scenario(p, steps)


async def s_roundtrip(p: dict[str, Any]) -> None:
    count, size = p["count"], p["size"]

    async def steps(conn: Any) -> dict[str, Any]:
        ch = await conn.channel()
        await ch.confirm_select()
        await ch.queue_declare(queue=p["queue"])
        for i in range(count):
            await ch.publish(body(i, size), routing_key=p["queue"], wait=False)
        await ch.wait_for_confirms()
        ok, got = True, 0
        async for msg in ch.consume(p["queue"]):
            ok = ok and msg.body == body(got, size)
            msg.ack()
            got += 1
            if got == count:
                break
        return {"consumed": got, "body_ok": ok}

    await scenario(p, steps)


async def s_consume_ack(p: dict[str, Any]) -> None:
    conn = await connect(p)
    conn.on_close(lambda err: say("event", "closed", code=getattr(err, "reply_code", 0)))
    try:
        ch = await conn.channel()
        got = 0
        async for msg in ch.consume(p["queue"], prefetch=p["count"]):
            got += 1
            if got <= p["ack"]:
                msg.ack()
            if got == p["count"]:
                say("phase", "acked")
    except Exception as e:  # noqa: BLE001
        raise await closing(conn, e) from None
    await conn.close()
    raise Outcome("ok")


async def s_consumer_cancel(p: dict[str, Any]) -> None:
    async def steps(conn: Any) -> None:
        ch = await conn.channel()
        await ch.queue_declare(queue=p["queue"])
        if p["style"] == "iterator":
            it = await ch.consume(p["queue"])
            say("phase", "consuming")
            async for _ in it:
                pass
            raise Outcome("ok", note="the iterator ended without saying the broker cancelled it")
        cancelled = asyncio.Event()
        await ch.on_message(p["queue"], lambda msg: None, on_cancel=lambda tag: cancelled.set())
        say("phase", "consuming")
        try:
            await asyncio.wait_for(cancelled.wait(), NOTICE_WAIT)
        except TimeoutError:
            raise Outcome("error", type="NoNotification", message="no cancel notification") from None
        raise Outcome("consumer_cancelled", raised="Channel.on_message(on_cancel)")

    await scenario(p, steps)


async def s_confirm_closed(p: dict[str, Any]) -> None:
    async def steps(conn: Any) -> None:
        ch = await conn.channel()
        await ch.confirm_select()
        try:
            for _ in range(p["count"]):
                await ch.publish(b"0123456789", exchange="amqgen.fault.missing", routing_key=p["queue"], wait=False)
            await ch.wait_for_confirms()
            out = Outcome("ok", acked=1)
        except aio.ChannelClosedError as e:
            out = outcome_of(e)
            out.fields["unconfirmed"] = len(e.unconfirmed)
        out.fields["usable"] = await usable(conn, p)
        raise out

    await scenario(p, steps)


async def s_mandatory_return(p: dict[str, Any]) -> None:
    returned: list[Any] = []
    came = asyncio.Event()

    def on_return(msg: Any) -> None:
        returned.append(msg)
        say("event", "returned", code=msg.method.reply_code)
        came.set()

    async def steps(conn: Any) -> dict[str, Any]:
        ch = await conn.channel()
        await ch.confirm_select()
        ch.on_return(on_return)
        await ch.publish(b"abc", routing_key=p["queue"], mandatory=True)
        # the return comes before the confirm; its callback runs in the dispatcher task
        await asyncio.wait_for(came.wait(), NOTICE_WAIT)
        return {"returned": len(returned), "body_ok": len(returned) == 1 and returned[0].body == b"abc"}

    await scenario(p, steps)


async def s_blocked(p: dict[str, Any]) -> None:
    blocked, unblocked = asyncio.Event(), asyncio.Event()

    def on_blocked(reason: str) -> None:
        say("event", "blocked", reason=reason)
        blocked.set()

    def on_unblocked() -> None:
        say("event", "unblocked")
        unblocked.set()

    async def steps(conn: Any) -> None:
        conn.on_blocked(on_blocked)
        conn.on_unblocked(on_unblocked)
        ch = await conn.channel()
        say("phase", "connected")
        await wait_go()
        await ch.publish(b"0123456789", routing_key=p["queue"])
        try:
            await asyncio.wait_for(blocked.wait(), NOTICE_WAIT)
            say("phase", "blocked")
            await wait_go()
            await asyncio.wait_for(unblocked.wait(), NOTICE_WAIT)
        except TimeoutError:
            raise Outcome("error", type="NoNotification", message="no blocked or unblocked notification") from None

    await scenario(p, steps)


async def s_callback_raises(p: dict[str, Any]) -> None:
    boom = RuntimeError("the callback raises")

    def callback(msg: Any) -> None:
        raise boom

    async def steps(conn: Any) -> None:
        ch = await conn.channel()
        await ch.queue_declare(queue=p["queue"])
        await ch.publish(b"0123456789", routing_key=p["queue"])
        await ch.on_message(p["queue"], callback)
        try:  # the documented place: the channel's wait_closed (and every later call on it)
            await asyncio.wait_for(ch.wait_closed(), NOTICE_WAIT)
        except aio.ConsumerCallbackError as e:
            if e.__cause__ is not boom:
                raise Outcome("error", type="WrongCause", message=f"cause {e.__cause__!r}") from None
            out = outcome_of(e)
        else:
            raise Outcome("error", type="NoError", message="the channel ended without the callback's error")
        out.fields["usable"] = await usable(conn, p)
        raise out

    await scenario(p, steps)


async def consumers(conn: Any, queue: str) -> int:
    ch = await conn.channel()
    n = int((await ch.queue_declare(queue=queue, passive=True)).consumer_count)
    await ch.close()
    return n


async def s_consume_leave(p: dict[str, Any]) -> None:
    async def steps(conn: Any) -> dict[str, Any]:
        ch = await conn.channel()
        await ch.queue_declare(queue=p["queue"])
        await ch.publish(body(0, 10), routing_key=p["queue"])
        await ch.publish(body(1, 10), routing_key=p["queue"])
        consumed = 0
        async for msg in ch.consume(p["queue"]):
            msg.ack()
            consumed += 1
            break
        say("phase", "left", consumers=await consumers(conn, p["queue"]))
        await wait_go()
        async with await ch.consume(p["queue"]) as it:
            async for msg in it:
                msg.ack()
                consumed += 1
                break
            during = await consumers(conn, p["queue"])
        return {"consumers": during, "consumed": consumed}

    await scenario(p, steps)


def _headers(size: int) -> Any:
    return properties.BasicProperties(headers={"big": "h" * size})


async def s_local_refusal(p: dict[str, Any]) -> None:
    async def steps(conn: Any) -> None:
        ch = await conn.channel()
        try:
            if p["what"] == "routing_key":
                await ch.publish(b"x", routing_key="k" * 300)
            else:
                await ch.publish(b"x", routing_key=p["queue"],
                                 properties=_headers(conn.negotiated.frame_max + 1000))
            out = Outcome("error", type="NotRefused", message="the client sent it")
        except aio.EncodeError as e:
            out = outcome_of(e)
        out.fields["usable"] = await usable(conn, p, ch)
        raise out

    await scenario(p, steps)


async def s_big_message(p: dict[str, Any]) -> None:
    async def steps(conn: Any) -> dict[str, Any]:
        ch = await conn.channel()
        await ch.confirm_select()
        await ch.queue_declare(queue=p["queue"])
        b = body(0, p["size"])
        await ch.publish(b, routing_key=p["queue"])
        async for msg in ch.consume(p["queue"]):
            msg.ack()
            return {"body_ok": msg.body == b}
        return {"body_ok": 0}

    await scenario(p, steps)


def server_body(channel: int) -> bytes:
    """tests/faults/server.py's bodies: channel 1 bytes(range(256)) * 40, channel 2 "second channel " * 700."""
    return bytes(range(256)) * 40 if channel == 1 else b"second channel " * 700


async def s_consume_server(p: dict[str, Any]) -> None:
    async def steps(conn: Any) -> dict[str, Any]:
        one, two = await conn.channel(), await conn.channel()
        its = [await one.consume("q1"), await two.consume("q2")]
        consumed, ok = 0, True
        for it in its:
            try:
                msg = await asyncio.wait_for(anext(it), 10)
            except TimeoutError:
                continue
            consumed += 1
            ok = ok and msg.body == server_body(msg.channel)
        return {"consumed": consumed, "body_ok": ok and consumed == 2}

    await scenario(p, steps)

# -- recovery (issue 42): protocol.md's "Recovery" and "The recovery soak" ------------------------------------
class Recover:
    """A recovering connection's notifications as events (``conn=`` in the soak), counted; what the scenarios
    wait for."""

    def __init__(self, conn: str | None = None) -> None:
        self.conn = conn
        self.recoveries = 0
        self.notices: asyncio.Queue[str] = asyncio.Queue()
        self.on_recovered: Callable[[], None] = lambda: None

    def who(self, **fields: Any) -> dict[str, Any]:
        return fields if self.conn is None else {**fields, "conn": self.conn}

    def started(self, cause: BaseException) -> None:
        say("event", "recovery_started", **self.who(cause=f"{type(cause).__name__}: {cause}"))

    def recovered(self) -> None:
        self.recoveries += 1
        say("event", "recovered", **self.who())
        self.on_recovered()
        self.notices.put_nowait("recovered")

    def failed(self, err: BaseException) -> None:
        cause = err.__cause__ or err
        say("event", "recovery_failed", **self.who(cause=f"{type(cause).__name__}: {cause}"))
        self.notices.put_nowait("failed")

    async def wait(self, what: str) -> None:
        """Until the next notification of this kind."""
        try:
            async with asyncio.timeout(NOTICE_WAIT):
                while await self.notices.get() != what:
                    pass
        except TimeoutError:
            raise Outcome("error", type="NoNotification", message=f"no {what} in {NOTICE_WAIT} s") from None

    async def connect(self, p: dict[str, Any], policy: Any = None) -> Any:
        """Connects with recovery on: the rows' policy (initial delay 0.1 s, max delay 1 s) unless ``policy``."""
        policy = policy or aio.RecoveryPolicy(initial_delay=0.1, max_delay=1.0)
        conn = await aio.connect_recovering(p["url"], policy=policy, heartbeat=p["heartbeat"], timeout=p["timeout"])
        conn.on_recovery_started(self.started)
        conn.on_recovered(self.recovered)
        conn.on_recovery_failed(self.failed)
        return conn

    async def closing(self, conn: Any, exc: BaseException) -> Outcome:
        out = await closing(conn, exc)
        out.fields["recoveries"] = self.recoveries
        return out


async def s_recover_consume(p: dict[str, Any]) -> None:
    r = Recover()
    conn = await r.connect(p)
    try:
        ch1 = await conn.channel()
        await ch1.basic_qos(prefetch_count=10)
        x = p["queue"] + ".x"
        await ch1.exchange_declare(exchange=x, type_="direct")
        q = (await ch1.queue_declare(queue="", exclusive=True)).queue
        say("event", "queue", name=q)
        await ch1.queue_bind(queue=q, exchange=x, routing_key="k")
        got: asyncio.Queue[Any] = asyncio.Queue()
        it = None
        if p["style"] == "iterator":
            it = await ch1.consume(q)
        else:
            await ch1.on_message(q, got.put_nowait)
        ch2 = await conn.channel()
        await ch2.confirm_select()
        consumed = 0
        for text in (b"one", b"two"):
            await ch2.publish(text, exchange=x, routing_key="k")
            try:
                async with asyncio.timeout(NOTICE_WAIT):
                    msg = await anext(it) if it is not None else await got.get()
            except TimeoutError:
                msg = None
            if msg is None or msg.body != text:
                await conn.close()
                raise Outcome("error", type="NotDelivered", message=f"{text!r}: {msg!r}")
            msg.ack()
            consumed += 1
            if text == b"one":
                say("phase", "consuming")
                await r.wait("recovered")
        m = conn.current_name(q)
        say("event", "queue", name=m)
        await ch1.exchange_delete(exchange=x)
    except Outcome:
        raise
    except Exception as e:  # noqa: BLE001
        raise await r.closing(conn, e) from None
    await conn.close()
    raise Outcome("ok", consumed=consumed, renamed=m != q, recoveries=r.recoveries)


async def s_recover_refused(p: dict[str, Any]) -> None:
    r = Recover()
    try:
        await (await r.connect(p)).close()
        out = Outcome("ok", note="the connection was not refused")
    except Exception as e:  # noqa: BLE001
        out = outcome_of(e)
    await asyncio.sleep(2)
    out.fields["recoveries"] = r.recoveries
    raise out


async def s_recover_user_close(p: dict[str, Any]) -> None:
    r = Recover()
    conn = await r.connect(p)
    try:
        await conn.channel()
    except Exception as e:  # noqa: BLE001
        raise await r.closing(conn, e) from None
    await conn.close()
    await asyncio.sleep(2)
    raise Outcome("ok", recoveries=r.recoveries)


async def s_recover_channel_error(p: dict[str, Any]) -> None:
    r = Recover()
    conn = await r.connect(p)
    try:
        try:
            await (await conn.channel()).queue_declare(queue=p["queue"], passive=True)
            out = Outcome("ok", note="the passive declare of a missing queue worked")
        except aio.ChannelClosedError as e:
            out = outcome_of(e)
        await asyncio.sleep(2)
        out.fields["usable"] = await usable(conn, p)
    except Exception as e:  # noqa: BLE001
        raise await r.closing(conn, e) from None
    await conn.close()
    out.fields["recoveries"] = r.recoveries
    raise out


async def s_recover_unconfirmed(p: dict[str, Any]) -> None:
    r = Recover()
    conn = await r.connect(p, aio.RecoveryPolicy(initial_delay=0.1, max_delay=1.0, republish=p["republish"] == 1))
    try:
        ch = await conn.channel()
        await ch.confirm_select()
        await ch.queue_declare(queue=p["queue"])
        say("phase", "ready")
        await wait_go()
        for i in range(p["count"]):
            await ch.publish(str(i).encode(), routing_key=p["queue"], wait=False)
        await ch.wait_for_confirms()
    except Exception as e:  # noqa: BLE001
        raise await r.closing(conn, e) from None
    await conn.close()
    raise Outcome("ok", confirmed=p["count"], recoveries=r.recoveries)


async def s_recover_stale_ack(p: dict[str, Any]) -> None:
    r = Recover()
    conn = await r.connect(p)
    try:
        ch = await conn.channel()
        await ch.queue_declare(queue=p["queue"])
        await ch.publish(b"x", routing_key=p["queue"])
        it = await ch.consume(p["queue"])
        before = await anext(it)
        say("phase", "delivered")
        await r.wait("recovered")
        before.ack()  # dropped: its tag was the old connection's
        try:
            async with asyncio.timeout(NOTICE_WAIT):
                again = await anext(it)
        except TimeoutError:
            await conn.close()
            raise Outcome("error", type="NotRedelivered", message="no delivery after the recovery") from None
        again.ack()
        await ch.queue_declare(queue=p["queue"], passive=True)  # raises when the channel was closed
        ok = conn.stale_settlements == 1
    except Outcome:
        raise
    except Exception as e:  # noqa: BLE001
        raise await r.closing(conn, e) from None
    await conn.close()
    raise Outcome("ok", redelivered=again.redelivered, usable=ok, recoveries=r.recoveries)


async def s_recover_gives_up(p: dict[str, Any]) -> None:
    r = Recover()
    conn = await r.connect(p, aio.RecoveryPolicy(initial_delay=0.1, max_delay=1.0, max_attempts=3))
    try:
        ch = await conn.channel()
        say("phase", "connected")
        await r.wait("failed")
        await ch.queue_declare(queue=p["queue"])
        out = Outcome("ok", note="a call after the recovery failed worked")
    except Outcome:
        raise
    except Exception as e:  # noqa: BLE001
        raise await r.closing(conn, e) from None
    await conn.close()
    raise out


def _ident(data: bytes) -> int:
    return int(data[:12])


async def s_soak(p: dict[str, Any]) -> None:
    count, size, window, rate = p["count"], p["size"], p["window"], float(p["rate"])
    exchange, key = p["exchange"], p["routing_key"]
    results = open(p["results"], "a", encoding="utf-8")  # noqa: SIM115 - closed below, also after an error
    delivered = [False] * count
    consumed = 0
    cr, pr = Recover("consumer"), Recover("producer")
    cconn = await cr.connect(p, aio.RecoveryPolicy())
    pconn = None
    published = confirmed = 0
    try:
        cch = await cconn.channel()
        await cch.exchange_declare(exchange=exchange, type_="direct")
        q = (await cch.queue_declare(queue="")).queue
        say("event", "queue", name=q)
        shown = [q]

        def renamed() -> None:
            now = cconn.current_name(q)
            if now != shown[0]:
                shown[0] = now
                say("event", "queue", name=now)

        cr.on_recovered = renamed
        await cch.queue_bind(queue=q, exchange=exchange, routing_key=key)
        await cch.basic_qos(prefetch_count=100)

        def on_delivery(msg: Any) -> None:
            nonlocal consumed
            ident = _ident(msg.body)
            results.write(f"D {ident} {int(msg.redelivered)}\n")
            if not delivered[ident]:
                delivered[ident] = True
                consumed += 1
            msg.ack()

        await cch.on_message(q, on_delivery)
        pconn = await pr.connect(p, aio.RecoveryPolicy(republish=p["republish"] == 1))
        pch = await pconn.channel()
        await pch.confirm_select()
        returned: set[int] = set()
        pch.on_return(lambda msg: returned.add(_ident(msg.body)))
        again: list[int] = []

        def republished(channel: int, messages: list[Any]) -> None:
            for m in messages:
                again.append(_ident(m.body))
                results.write(f"U {_ident(m.body)}\n")

        pconn.on_republished(republished)
        pad = b"x" * max(0, size - 12)
        loop = asyncio.get_running_loop()
        w, t0 = Windows(count, window, rate), loop.time()
        while w.confirmed < count:
            if (delay := w.due(t0) - loop.time()) > 0:
                await asyncio.sleep(delay)
            if not (batch := w.batch()):
                break
            for ident in batch:
                await pch.publish(b"%012d" % ident + pad, routing_key=key, exchange=exchange, mandatory=True,
                                  wait=False)
                published += 1
            bad: set[int] = set()
            try:
                await pch.wait_for_confirms()
            except aio.PublishNotConfirmed as e:
                bad.update(_ident(m.body) for m in e.messages)
            await asyncio.sleep(0)  # a return's callback, queued before its confirm, has run
            published += len(again)  # the client's republishes
            again.clear()
            bad |= returned
            returned.clear()
            w.settle(batch, bad, lambda text: results.write(text + "\n"))
            confirmed = w.confirmed
            results.flush()
        last = loop.time()
        while consumed < count and loop.time() - last < 120:
            await asyncio.sleep(0.05)
        await pconn.close()
        await cch.queue_delete(queue=cconn.current_name(q))
        await cconn.close()
        results.close()
    except Exception as e:  # noqa: BLE001
        results.flush()
        if pconn is not None:
            await pconn.close()
        out = await cr.closing(cconn, e)
        results.close()
        out.fields.update(published=published, confirmed=confirmed)
        raise out from None
    raise Outcome("ok", published=published, confirmed=confirmed, consumed=consumed)


SCENARIOS = {name[2:]: f for name, f in globals().items() if name.startswith("s_")}


def run(name: str, params: dict[str, Any]) -> None:
    if name not in SCENARIOS:
        raise Outcome("error", type="NotImplemented", message=f"no scenario {name} in the asyncio driver")
    asyncio.run(SCENARIOS[name](params))


if __name__ == "__main__":
    serve(run)
