"""The fault driver of the generated Python blocking client (``client.py``): tests/faults/protocol.md's scenarios.
The package is the one rendered for the test run (``AMQGEN_PACKAGE``, on PYTHONPATH).

Only the client's own errors map to outcome kinds (``raised=`` their class name, as matrix.SPELLING spells it for
"python"); anything else is ``outcome error``. Callbacks and notifications run in the client's dispatch calls
(``process_data_events``, a consumer iterator's ``next``), so the scenarios that wait for one call those."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from driver_common import Outcome, Windows, body, fds, say, serve, wait_go

client: Any = importlib.import_module(f"{os.environ['AMQGEN_PACKAGE']}.client")
properties: Any = importlib.import_module(f"{os.environ['AMQGEN_PACKAGE']}.properties")

#: the longest a scenario waits for a notification it is told will come
NOTICE_WAIT = 60.0

#: the client's errors, most specific first, and the kind each is
KINDS: tuple[tuple[type[BaseException], str], ...] = (
    (client.RecoveryFailedError, "recovery_failed"),
    (client.ConnectTimeoutError, "connect_timeout"),
    (client.ConnectFailedError, "connect_failed"),
    (client.VersionRefusedError, "version_refused"),
    (client.ConnectionClosedError, "connection_closed"),
    (client.ConnectionLostError, "connection_lost"),
    (client.ConsumerCallbackError, "callback_error"),
    (client.ChannelClosedError, "channel_closed"),
    (client.ConsumerCancelledError, "consumer_cancelled"),
    (client.EncodeError, "local_error"),
)


def outcome_of(exc: BaseException) -> Outcome:
    """The client's own errors as outcome kinds; anything else is an error."""
    if isinstance(exc, client.PublishNotConfirmed):
        return Outcome("unconfirmed", messages=len(exc.messages), raised=type(exc).__name__)
    for cls, kind in KINDS:
        if isinstance(exc, cls):
            out = Outcome(kind, raised=cls.__name__)
            if hasattr(exc, "reply_code"):
                out.fields["code"] = exc.reply_code
            if isinstance(exc, client.VersionRefusedError):
                out.fields["server"] = exc.server
            if getattr(exc, "unconfirmed", None):
                out.fields["unconfirmed"] = len(exc.unconfirmed)
            return out
    return Outcome("error", type=type(exc).__name__, message=str(exc)[:300].replace("\n", " "))


def connect(p: dict[str, Any], **kw: Any) -> Any:
    return client.connect(p["url"], heartbeat=p["heartbeat"], timeout=float(p["timeout"]), **kw)


def closing(conn: Any, exc: BaseException) -> Outcome:
    out = outcome_of(exc)
    try:
        conn.close()
        out.fields["close_ok"] = 1
    except Exception:  # noqa: BLE001 - the close's own failure is what close_ok reports
        out.fields["close_ok"] = 0
    return out


def until(conn: Any, cond: Any, what: str, seconds: float = NOTICE_WAIT) -> None:
    """Runs the dispatch call until ``cond()`` (the notification came), at most ``seconds``."""
    end = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > end:
            raise Outcome("error", type="NoNotification", message=f"no {what} in {seconds:.0f} s")
        conn.process_data_events(0.2)


def usable(conn: Any, queue: str) -> int:
    """1 when a new channel then declares ``queue`` on the same connection."""
    try:
        conn.channel().queue_declare(queue=queue)
        return 1
    except Exception as e:  # noqa: BLE001 - what it raised is the answer
        print(f"not usable: {e!r}", file=sys.stderr)
        return 0


def consumers(conn: Any, queue: str) -> int:
    ch = conn.channel()
    n = int(ch.queue_declare(queue=queue, passive=True).consumer_count)
    ch.close()
    return n


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
    neg = conn.negotiated
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
    conn.on_close(lambda err: say("event", "closed", code=getattr(err, "reply_code", 0)))
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
    conn.close()
    raise Outcome("ok")


def s_consumer_cancel(p: dict[str, Any]) -> None:
    conn = connect(p)
    try:
        ch = conn.channel()
        ch.queue_declare(queue=p["queue"])
        if p["style"] == "iterator":
            it = ch.consume(p["queue"])
            say("phase", "consuming")
            try:
                for _ in it:
                    pass
            except client.ConsumerCancelledError as e:
                conn.close()
                raise Outcome("consumer_cancelled", raised=type(e).__name__) from None
            conn.close()
            raise Outcome("ok", note="the iterator ended without saying the broker cancelled it")
        cancelled: list[str] = []
        ch.on_message(p["queue"], lambda m: None, on_cancel=cancelled.append)
        say("phase", "consuming")
        until(conn, lambda: cancelled, "cancel notification")
        say("event", "cancelled")
    except Outcome:
        raise
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    conn.close()
    raise Outcome("consumer_cancelled", raised="Channel.on_message(on_cancel)")


def s_confirm_closed(p: dict[str, Any]) -> None:
    conn = connect(p)
    try:
        ch = conn.channel()
        ch.confirm_select()
        try:
            for _ in range(p["count"]):
                ch.publish(b"0123456789", exchange="amqgen.fault.missing", routing_key=p["queue"], wait=False)
            ch.wait_for_confirms()
            out = Outcome("ok", acked=1)
        except client.ChannelClosedError as e:
            out = outcome_of(e)
            out.fields["unconfirmed"] = len(e.unconfirmed)
            # the messages themselves, not only their tags: each one's body is what was published
            if not all(m.body == b"0123456789" and m.exchange == "amqgen.fault.missing" for m in e.unconfirmed):
                out = Outcome("error", type="WrongMessages", message="the unconfirmed messages are not the publishes")
        out.fields["usable"] = usable(conn, p["queue"])
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    conn.close()
    raise out


def s_mandatory_return(p: dict[str, Any]) -> None:
    conn = connect(p)
    returned: list[Any] = []

    def on_return(msg: Any) -> None:
        returned.append(msg)
        say("event", "returned", code=msg.method.reply_code)

    try:
        ch = conn.channel()
        ch.confirm_select()
        ch.on_return(on_return)
        ch.publish(b"abc", routing_key=p["queue"], mandatory=True)  # waits for its confirm
        until(conn, lambda: returned, "return notification", 10)
    except Outcome:
        raise
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    conn.close()
    raise Outcome("ok", returned=len(returned), body_ok=int(len(returned) == 1 and returned[0].body == b"abc"))


def s_blocked(p: dict[str, Any]) -> None:
    conn = connect(p)
    seen: list[str] = []

    def blocked(reason: str) -> None:
        seen.append("blocked")
        say("event", "blocked", reason=reason)

    def unblocked() -> None:
        seen.append("unblocked")
        say("event", "unblocked")

    conn.on_blocked(blocked)
    conn.on_unblocked(unblocked)
    try:
        ch = conn.channel()
        say("phase", "connected")
        wait_go()
        ch.basic_publish(b"0123456789", routing_key=p["queue"])
        until(conn, lambda: "blocked" in seen, "blocked notification")
        say("phase", "blocked")
        wait_go()
        until(conn, lambda: "unblocked" in seen, "unblocked notification")
    except Outcome:
        raise
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    conn.close()
    raise Outcome("ok")


def s_callback_raises(p: dict[str, Any]) -> None:
    conn = connect(p)
    boom = RuntimeError("the callback raises")

    def raising(msg: Any) -> None:
        raise boom

    try:
        ch = conn.channel()
        ch.queue_declare(queue=p["queue"])
        ch.basic_publish(b"0123456789", routing_key=p["queue"])
        ch.on_message(p["queue"], raising)
        end = time.monotonic() + NOTICE_WAIT
        try:
            while time.monotonic() < end:
                conn.process_data_events(0.5)
            raise Outcome("error", type="NoNotification", message="the callback's exception never came out")
        except client.ConsumerCallbackError as e:
            if e.__cause__ is not boom:
                raise Outcome("error", type="WrongCause", message=f"cause {e.__cause__!r}") from None
            out = outcome_of(e)
        out.fields["usable"] = usable(conn, p["queue"])
    except Outcome:
        conn.close()
        raise
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    conn.close()
    raise out


def s_consume_leave(p: dict[str, Any]) -> None:
    conn = connect(p)
    consumed = 0
    try:
        ch = conn.channel()
        ch.queue_declare(queue=p["queue"])
        ch.basic_publish(body(0, 10), routing_key=p["queue"])
        ch.basic_publish(body(1, 10), routing_key=p["queue"])
        for msg in ch.consume(p["queue"]):
            msg.ack()
            consumed += 1
            break  # leaving the loop cancels the consumer
        say("phase", "left", consumers=consumers(conn, p["queue"]))
        wait_go()
        with ch.consume(p["queue"]) as again:
            for msg in again:
                msg.ack()
                consumed += 1
                break
            during = consumers(conn, p["queue"])  # this consumer only: the first one is gone
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    conn.close()
    raise Outcome("ok", consumers=during, consumed=consumed)


def s_worker_acks(p: dict[str, Any]) -> None:
    conn = connect(p)
    count = p["count"]
    acked = threading.Semaphore(0)
    workers = ThreadPoolExecutor(4)
    done = 0
    try:
        ch = conn.channel()
        it = ch.consume(p["queue"], prefetch=p["prefetch"])
        for i, msg in enumerate(it):
            workers.submit(lambda m=msg: (m.ack(), acked.release()))
            if i + 1 == count:
                break
        end = time.monotonic() + NOTICE_WAIT
        while done < count and acked.acquire(timeout=max(0.0, end - time.monotonic())):
            done += 1
        if done < count:
            raise Outcome("error", type="Stalled", message=f"{done} acked")
    except Outcome:
        conn.close()
        raise
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    finally:
        workers.shutdown(wait=False, cancel_futures=True)
    conn.close()
    raise Outcome("ok", consumed=done)


def s_two_threads(p: dict[str, Any]) -> None:
    conn = connect(p)
    slow = 0
    try:
        a = conn.channel()
        a.queue_declare(queue=p["queue"])
        idle = a.consume(p["queue"])
        failed: list[BaseException] = []

        def consume() -> None:
            try:
                for _ in idle:
                    pass
            except Exception as e:  # noqa: BLE001 - reported below
                failed.append(e)

        def calls() -> None:
            nonlocal slow
            try:
                b = conn.channel()
                for _ in range(p["calls"]):
                    t0 = time.monotonic()
                    b.queue_declare(queue=p["queue"], passive=True)
                    slow += time.monotonic() - t0 > 1.0
            except Exception as e:  # noqa: BLE001 - reported below
                failed.append(e)

        consumer = threading.Thread(target=consume)
        consumer.start()
        caller = threading.Thread(target=calls)
        caller.start()
        caller.join()
        idle.cancel()  # from this thread: the consuming thread's iterator ends
        consumer.join(10)
        if consumer.is_alive():
            raise Outcome("error", type="Hung", message="the consuming thread did not end after cancel()")
        if failed:
            raise failed[0]
    except Outcome:
        conn.close()
        raise
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    conn.close()
    raise Outcome("ok", slow_calls=slow)


def s_local_refusal(p: dict[str, Any]) -> None:
    conn = connect(p)
    try:
        ch = conn.channel()
        try:
            if p["what"] == "routing_key":
                ch.basic_publish(b"x", routing_key="k" * 300)
            else:
                big = properties.BasicProperties(headers={"big": "h" * (conn.negotiated.frame_max + 1000)})
                ch.basic_publish(b"x", routing_key=p["queue"], properties=big)
            out = Outcome("error", type="NotRefused", message="the client sent it")
        except client.EncodeError as e:
            out = outcome_of(e)
        try:
            ch.queue_declare(queue=p["queue"])
            out.fields["usable"] = 1
        except Exception as e:  # noqa: BLE001 - what it raised is the answer
            print(f"not usable: {e!r}", file=sys.stderr)
            out.fields["usable"] = 0
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    conn.close()
    raise out


def s_big_message(p: dict[str, Any]) -> None:
    conn = connect(p)
    try:
        ch = conn.channel()
        ch.confirm_select()
        ch.queue_declare(queue=p["queue"])
        b = body(0, p["size"])
        ch.publish(b, routing_key=p["queue"])
        with ch.consume(p["queue"]) as it:
            msg = next(it)
            ok = msg.body == b
            msg.ack()
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    conn.close()
    raise Outcome("ok", body_ok=ok)


#: tests/faults/server.py's bodies
SERVER_BODIES = {1: bytes(range(256)) * 40, 2: b"second channel " * 700}


def s_consume_server(p: dict[str, Any]) -> None:
    conn = connect(p)
    consumed, ok = 0, True
    try:
        one, two = conn.channel(), conn.channel()
        its = [one.consume("q1"), two.consume("q2")]
        for it in its:
            msg = next(it)
            consumed += 1
            ok = ok and msg.body == SERVER_BODIES[msg.channel]
    except Exception as e:  # noqa: BLE001
        raise closing(conn, e) from None
    conn.close()
    raise Outcome("ok", consumed=consumed, body_ok=ok and consumed == 2)


# -- recovery (issue 42): protocol.md's "Recovery" and "The recovery soak" -------------------------------------------
class Recover:
    """A recovering connection's notifications as events (they run in the client's dispatch calls), counted."""

    def __init__(self, conn_name: str | None = None) -> None:
        self.who = {} if conn_name is None else {"conn": conn_name}
        self.recoveries = 0
        self.failed = False
        self.on_recovered: Any = None

    def connect(self, p: dict[str, Any], policy: Any = None) -> Any:
        conn = client.connect_recovering(p["url"], policy=policy or quick(), heartbeat=p["heartbeat"],
                                         timeout=float(p["timeout"]))
        conn.on_recovery_started(lambda e: say("event", "recovery_started", cause=f"{type(e).__name__}: {e}",
                                               **self.who))
        conn.on_recovered(self._recovered)
        conn.on_recovery_failed(self._failed)
        return conn

    def _recovered(self) -> None:
        self.recoveries += 1
        say("event", "recovered", **self.who)
        if self.on_recovered is not None:
            self.on_recovered()

    def _failed(self, e: Any) -> None:
        cause = e.__cause__ or e
        self.failed = True
        say("event", "recovery_failed", cause=f"{type(cause).__name__}: {cause}", **self.who)

    def closing(self, conn: Any, exc: BaseException) -> Outcome:
        out = closing(conn, exc)
        out.fields["recoveries"] = self.recoveries
        return out


def quick(**kw: Any) -> Any:
    """The rows' policy: the defaults, but initial delay 0.1 s and max delay 1 s."""
    return client.RecoveryPolicy(initial_delay=0.1, max_delay=1.0, **kw)


def s_recover_consume(p: dict[str, Any]) -> None:
    r = Recover()
    conn = r.connect(p)
    try:
        ch1 = conn.channel()
        ch1.basic_qos(prefetch_count=10)
        x = p["queue"] + ".x"
        ch1.exchange_declare(exchange=x, type_="direct")
        q = ch1.queue_declare(queue="", exclusive=True).queue
        say("event", "queue", name=q)
        ch1.queue_bind(queue=q, exchange=x, routing_key="k")
        got: list[Any] = []
        it = ch1.consume(q) if p["style"] == "iterator" else None
        if it is None:
            ch1.on_message(q, got.append)
        ch2 = conn.channel()
        ch2.confirm_select()
        consumed = 0
        for text in (b"one", b"two"):
            ch2.publish(text, exchange=x, routing_key="k")
            if it is not None:
                msg = next(it)
            else:
                until(conn, lambda: got, "delivery")
                msg = got.pop(0)
            if msg.body != text:
                conn.close()
                raise Outcome("error", type="NotDelivered", message=f"{text!r}: {msg.body!r}")
            msg.ack()
            consumed += 1
            if text == b"one":
                say("phase", "consuming")
                until(conn, lambda: r.recoveries > 0, "recovered notification")
        now = conn.current_name(q)
        say("event", "queue", name=now)
        ch1.exchange_delete(exchange=x)
    except Outcome:
        raise
    except Exception as e:  # noqa: BLE001
        raise r.closing(conn, e) from None
    conn.close()
    raise Outcome("ok", consumed=consumed, renamed=int(now != q), recoveries=r.recoveries)


def s_recover_refused(p: dict[str, Any]) -> None:
    r = Recover()
    try:
        r.connect(p).close()
        out = Outcome("ok", note="the connection was not refused")
    except Exception as e:  # noqa: BLE001
        out = outcome_of(e)
    time.sleep(2)
    out.fields["recoveries"] = r.recoveries
    raise out


def s_recover_user_close(p: dict[str, Any]) -> None:
    r = Recover()
    conn = r.connect(p)
    try:
        conn.channel()
    except Exception as e:  # noqa: BLE001
        raise r.closing(conn, e) from None
    conn.close()
    time.sleep(2)
    with contextlib.suppress(client.ClientError):  # (closed: the notifications due run, none is)
        conn.process_data_events(0)
    raise Outcome("ok", recoveries=r.recoveries)


def s_recover_channel_error(p: dict[str, Any]) -> None:
    r = Recover()
    conn = r.connect(p)
    try:
        try:
            conn.channel().queue_declare(queue=p["queue"], passive=True)
            out = Outcome("ok", note="the passive declare of a missing queue worked")
        except client.ChannelClosedError as e:
            out = outcome_of(e)
        end = time.monotonic() + 2
        while time.monotonic() < end:
            conn.process_data_events(0.2)
        out.fields["usable"] = usable(conn, p["queue"])
    except Exception as e:  # noqa: BLE001
        raise r.closing(conn, e) from None
    conn.close()
    out.fields["recoveries"] = r.recoveries
    raise out


def s_recover_unconfirmed(p: dict[str, Any]) -> None:
    r = Recover()
    conn = r.connect(p, quick(republish=bool(p["republish"])))
    try:
        ch = conn.channel()
        ch.confirm_select()
        ch.queue_declare(queue=p["queue"])
        say("phase", "ready")
        wait_go()
        for i in range(p["count"]):
            ch.publish(str(i).encode(), routing_key=p["queue"], wait=False)
        ch.wait_for_confirms()
        conn.process_data_events(0)
    except Exception as e:  # noqa: BLE001
        with contextlib.suppress(client.ClientError):
            conn.process_data_events(0)  # the notifications due
        raise r.closing(conn, e) from None
    conn.close()
    raise Outcome("ok", confirmed=p["count"], recoveries=r.recoveries)


def s_recover_stale_ack(p: dict[str, Any]) -> None:
    r = Recover()
    conn = r.connect(p)
    try:
        ch = conn.channel()
        ch.queue_declare(queue=p["queue"])
        ch.basic_publish(b"x", routing_key=p["queue"])
        it = ch.consume(p["queue"])
        before = next(it)
        say("phase", "delivered")
        until(conn, lambda: r.recoveries > 0, "recovered notification")
        before.ack()  # dropped: its tag was the old connection's
        again = next(it)
        again.ack()
        ch.queue_declare(queue=p["queue"], passive=True)  # raises when the channel was closed
        ok = conn.stale_settlements == 1
    except Exception as e:  # noqa: BLE001
        raise r.closing(conn, e) from None
    conn.close()
    raise Outcome("ok", redelivered=int(again.redelivered), usable=int(ok), recoveries=r.recoveries)


def s_recover_gives_up(p: dict[str, Any]) -> None:
    r = Recover()
    conn = r.connect(p, quick(max_attempts=3))
    try:
        ch = conn.channel()
        say("phase", "connected")
        with contextlib.suppress(client.RecoveryFailedError):  # (the dispatch call raises it once it failed)
            until(conn, lambda: r.failed, "recovery_failed notification")
        ch.queue_declare(queue=p["queue"])
        out = Outcome("ok", note="a call after the recovery failed worked")
    except Exception as e:  # noqa: BLE001
        out = r.closing(conn, e)
    if not r.failed:
        out = Outcome("error", type="NoNotification", message="no recovery_failed notification")
    raise out


def s_soak(p: dict[str, Any]) -> None:
    count, size, window, rate = p["count"], p["size"], p["window"], float(p["rate"])
    exchange, key = p["exchange"], p["routing_key"]
    results = open(p["results"], "a", encoding="ascii")  # noqa: SIM115 - closed below
    lock = threading.Lock()

    def line(text: str) -> None:
        with lock:
            results.write(text + "\n")

    delivered: set[int] = set()
    cr, pr = Recover("consumer"), Recover("producer")
    cconn = cr.connect(p, client.RecoveryPolicy())
    pconn: Any = None
    stop = threading.Event()
    published = confirmed = 0

    def dispatch(conn: Any) -> None:  # the notifications and the consumer's callback run here
        while not stop.is_set():
            try:
                conn.process_data_events(0.2)
            except client.ClientError as e:
                print(f"soak dispatch: {e!r}", file=sys.stderr)
                if isinstance(e, client.RecoveryFailedError) or stop.is_set():
                    return

    try:
        cch = cconn.channel()
        cch.exchange_declare(exchange=exchange, type_="direct")
        q = cch.queue_declare(queue="").queue
        say("event", "queue", name=q)
        shown = [q]

        def renamed() -> None:
            if (now := cconn.current_name(q)) != shown[0]:
                shown[0] = now
                say("event", "queue", name=now)

        cr.on_recovered = renamed
        cch.queue_bind(queue=q, exchange=exchange, routing_key=key)
        cch.basic_qos(prefetch_count=100)

        def on_message(msg: Any) -> None:
            ident = int(msg.body[:12])
            line(f"D {ident} {int(msg.redelivered)}")
            delivered.add(ident)
            msg.ack()

        cch.on_message(q, on_message)
        threading.Thread(target=dispatch, args=(cconn,), daemon=True).start()
        pconn = pr.connect(p, client.RecoveryPolicy(republish=bool(p["republish"])))
        again: list[int] = []
        pconn.on_republished(lambda n, msgs: again.extend(int(m.body[:12]) for m in msgs))
        threading.Thread(target=dispatch, args=(pconn,), daemon=True).start()
        pch = pconn.channel()
        pch.confirm_select()
        pad = b"x" * max(0, size - 12)
        w, t0 = Windows(count, window, rate), time.monotonic()
        while w.confirmed < count:
            if (pause := w.due(t0) - time.monotonic()) > 0:
                time.sleep(pause)
            if not (batch := w.batch()):
                break
            for ident in batch:
                pch.publish(b"%012d" % ident + pad, exchange=exchange, routing_key=key, mandatory=True, wait=False)
                published += 1
            bad: set[int] = set()
            try:
                pch.wait_for_confirms()
            except client.PublishNotConfirmed as e:
                bad = {int(m.body[:12]) for m in e.messages}
            with lock:
                republished, again[:] = list(again), []
            published += len(republished)
            for ident in republished:
                line(f"U {ident}")
            w.settle(batch, bad, line)
            confirmed = w.confirmed
            with lock:
                results.flush()
        last = time.monotonic()
        while len(delivered) < count and time.monotonic() - last < 120:
            time.sleep(0.05)
        stop.set()
        pconn.close()
        with contextlib.suppress(client.ClientError):
            cch.queue_delete(queue=cconn.current_name(q))
        cconn.close()
    except Exception as e:  # noqa: BLE001
        stop.set()
        if pconn is not None:
            with contextlib.suppress(Exception):
                pconn.close()
        out = cr.closing(cconn, e)
        out.fields.update(published=published, confirmed=confirmed)
        raise out from None
    finally:
        with lock:
            results.flush()
    results.close()
    raise Outcome("ok", published=published, confirmed=confirmed, consumed=len(delivered))


SCENARIOS = {name[2:]: f for name, f in globals().items() if name.startswith("s_")}


def run(scenario: str, params: dict[str, Any]) -> None:
    if scenario not in SCENARIOS:
        raise Outcome("error", type="NotImplemented", message=f"no scenario {scenario} in the blocking driver")
    SCENARIOS[scenario](params)
    raise Outcome("error", type="NoOutcome", message=f"{scenario} ended without an outcome")


if __name__ == "__main__":
    serve(run)
