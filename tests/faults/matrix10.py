"""The AMQP 1.0 fault matrix (issue 43), as data: one row per fault with the outcome the generated 1.0 clients
(Python blocking ``client`` and asyncio ``aio``) must give, and within how long. The same shape as the 0-9-1
matrix (``matrix.py``, whose rows and vocabulary stay its own): a row names a scenario (the drivers' steps,
``tests/faults/protocol10.md``), a fault (``matrix.Fault``: what the harness does, at which phase), the expected
outcome and the clients it applies to. ``tests/amqp10/test_fault_matrix10.py`` runs each row on every client at once and
compares their outcomes field by field.

Targets: ``proxy`` (RabbitMQ's 1.0 plugin through a ``FaultProxy``), ``broker`` (RabbitMQ directly), ``closed``
(a port nobody listens on), ``silent`` (a server that accepts and never answers), and ``proton:<name>`` (Qpid
Proton's Container as the broker, ``proton_peer.ProtonBroker`` with the options ``PROTON[name]``) for the rows
whose peer RabbitMQ cannot play: 3.10's plugin lists no 1.0 connection to ``rabbitmqctl close_connection``, never
refuses a link without ending its session, announces no max-message-size, and grants credit in windows.

Outcome kinds (a driver maps only its client's own error types to them; anything else is ``error``):

- ``ok``: the scenario ran to its end.
- ``connect_failed`` / ``connect_timeout``: no connection (``ConnectError``) / not within the connect timeout
  (``ConnectTimeout``).
- ``connection_lost``: the transport ended (a reset, the peer silent past twice the idle time-out).
- ``connection_closed``: the peer closed the connection; ``condition`` is its error's.
- ``session_error`` / ``link_error``: the peer ended the session / refused or detached the link (``condition``);
  ``usable=1`` when a message then went through on the same connection.
- ``local_error``: the client refused the call before writing anything (``usable`` as above).
- ``timeout``: a wait ran past the timeout the caller gave (``usable`` as above).
- ``cancelled``: the caller cancelled the wait (asyncio; ``usable`` as above).
- ``error``: anything else: always a failure.
"""

from __future__ import annotations

from typing import Any

from faults.matrix import Fault, Row

#: the generated 1.0 clients the matrix runs (driver names: tests/faults/driver10_*.py)
CLIENTS10 = ("python", "aio")
#: each client's spelling of an outcome kind (its exception class), checked against the drivers' raised= field
SPELLING10: dict[str, dict[str, str]] = {
    kind: {"python": cls, "aio": cls} for kind, cls in (
        ("connect_failed", "ConnectError"), ("connect_timeout", "ConnectTimeout"),
        ("connection_lost", "ConnectionLostError"), ("connection_closed", "ConnectionClosedError"),
        ("session_error", "SessionError"), ("link_error", "LinkError"), ("local_error", "MessageSizeError"),
        ("timeout", "Timeout"), ("cancelled", "CancelledError"))
}
#: the Proton brokers the rows use: ProtonBroker's options
PROTON: dict[str, dict[str, Any]] = {
    "plain": {},
    "closing": {"close_with": ("amqp:connection:forced", "closed by the fault matrix")},
    "refusing": {"refuse": ("nowhere",), "detach": True},
    "small": {"max_message_size": 1000},
    "stingy": {"credit": 2},  # two credits per link, never more
    "one_at_a_time": {"credit": "one"},  # a new credit after each message: the per-message-credit peer
}

#: the idle time-out (s) of the rows that detect a silent peer: "lost within 2 time-outs" (plus slack)
IDLE = 1
MiB = 1 << 20

ROWS10: tuple[Row, ...] = (
    # -- connecting --------------------------------------------------------------------------------------------
    Row("closed_port", "connect to a port nobody listens on", "connect", {"timeout": 5},
        expect={"kind": "connect_failed", "fds": 0}, within=2.0, target="closed"),
    Row("never_answers", "a server accepts the connection and never answers", "connect", {"timeout": 2},
        expect={"kind": "connect_timeout", "fds": 0}, within=3.5, target="silent"),
    # -- the network ---------------------------------------------------------------------------------------------
    Row("blackhole_idle_receive", f"black-hole while a receiver waits, idle time-out {IDLE} s", "receive_idle",
        {"idle": IDLE}, fault=Fault("blackhole", "receiving"), expect={"kind": "connection_lost"},
        within=2 * IDLE + 1.5),
    Row("blackhole_awaiting_outcome", f"black-hole, then a send whose outcome is awaited, idle time-out {IDLE} s",
        "await_outcome", {"idle": IDLE}, fault=Fault("blackhole", "ready"), expect={"kind": "connection_lost"},
        within=2 * IDLE + 1.5),
    Row("reset_mid_frame", "RST in the middle of a stream of 64 KiB messages", "send_stream",
        {"size": 65536, "seconds": 60, "batch": 16}, fault=Fault("cut", "sending"),
        expect={"kind": "connection_lost"}, within=1.0),
    Row("random_segments", "random segment sizes and gaps, both ways", "roundtrip", {"count": 30, "size": 20000},
        fault=Fault("segment", None, ("random",)), expect={"kind": "ok", "consumed": 30, "body_ok": 1},
        within=60.0),
    # -- the peer --------------------------------------------------------------------------------------------------
    Row("peer_closes_with_error", "the peer closes the connection with amqp:connection:forced", "receive_idle",
        {}, expect={"kind": "connection_closed", "condition": "amqp:connection:forced"}, within=5.0,
        target="proton:closing"),
    Row("session_ended_missing_queue", "RabbitMQ ends the session: a receiver from a queue that does not exist",
        "attach", {"role": "receiver", "missing": 1},
        expect={"kind": "session_error", "condition": "amqp:not-found", "usable": 1}, within=5.0, target="broker"),
    Row("session_ended_message_too_large", "RabbitMQ ends the session: a 150 MiB message (its limit is 128 MiB)",
        "send_big", {"size": 150 * MiB},
        expect={"kind": "session_error", "condition": "amqp:precondition-failed", "usable": 1}, within=30.0,
        target="broker"),
    Row("link_refused", "the peer refuses the link: its attach names no address, its detach amqp:not-found",
        "attach", {"role": "receiver", "address": "nowhere"},
        expect={"kind": "link_error", "condition": "amqp:not-found", "usable": 1}, within=5.0,
        target="proton:refusing"),
    Row("credit_exhausted", "the peer grants two credits and no more: the third send waits past its timeout",
        "send_n", {"count": 3, "send_timeout": 2}, expect={"kind": "timeout", "sent": 2, "usable": 1}, within=10.0,
        target="proton:stingy"),
    Row("over_max_message_size", "a message over the max-message-size the peer's attach announced (1000)",
        "send_big", {"size": 2000}, expect={"kind": "local_error", "usable": 1}, within=5.0, target="proton:small"),
    # -- the caller --------------------------------------------------------------------------------------------
    Row("receive_timeout", "a receive with a timeout of 1 s, nothing comes", "receive_timeout", {"wait": 1},
        expect={"kind": "timeout", "usable": 1}, within=5.0, target="broker"),
    Row("receive_cancelled", "the caller cancels a waiting receive", "receive_cancel", {},
        expect={"kind": "cancelled", "usable": 1}, within=5.0, target="broker", clients=frozenset({"aio"})),
    Row("per_message_credit", "20,000 sends, each awaiting Accepted, to a peer granting one credit at a time; "
        "then received back: CPU per message flat", "per_message_credit", {"count": 20000},
        expect={"kind": "ok", "sent": 20000, "received": 20000, "flat": 1}, within=400.0,
        target="proton:one_at_a_time"),
)

BY_ID10 = {r.id: r for r in ROWS10}
assert len(BY_ID10) == len(ROWS10), "row ids are unique"
