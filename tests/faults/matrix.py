"""The fault matrix, as data: one row per fault (what the network, the broker, a server or the caller does) with
the outcome every generated 0-9-1 client must give, and within how long.

A row names a *scenario* (what the client program does: the same steps in every language, in the drivers, see
``tests/faults/protocol.md``), a *fault* (what the harness does, and when), the *expected outcome* (a kind from
the vocabulary below and the fields that must match), a bound on the time from the fault to the outcome, and the
clients it applies to. ``tests/amqp0/clients/test_fault_matrix.py`` runs every row against every client it applies to and
compares the outcomes across the clients, as the engine differential compares logs; the docs table of what each
client does on each fault is rendered from these rows and the recorded outcomes.

Outcome kinds (every driver maps only its client's own error types to these; any other exception is ``error``):

- ``ok``: the scenario ran to its end.
- ``connection_lost``: the client reported the transport gone (reset, end of stream, the peer silent past the
  heartbeat deadline, a write stalled past it).
- ``connection_closed``: the broker (or server) closed the connection; ``code`` is its reply code.
- ``channel_closed``: the broker closed the channel (``code``); ``usable=1`` when a new channel then worked.
- ``connect_failed``: no TCP connection (refused, unknown host).
- ``connect_timeout``: no connection or no completed handshake within the timeout the caller set.
- ``callback_error``: a consumer callback raised; the exception came out of the documented call, the client
  closed that channel (``code``), and the connection was still usable (``usable=1``).
- ``consumer_cancelled``: the client surfaced a consumer the broker cancelled.
- ``version_refused``: the server answered the protocol header with its own (it speaks another version) and
  closed; the client says which version it offered (``server=`` the header's last four octets, e.g. ``1.1.0.10``).
- ``unconfirmed``: a wait for confirms raised the client's error listing the publishes left unconfirmed
  (``messages``: how many it listed, messages and not only delivery tags).
- ``recovery_failed``: recovery gave up (attempts or time exhausted); later calls raise its final error.
- ``local_error``: the client refused the call before writing anything (``usable=1``: the connection goes on).
- ``error``: anything else (a builtin exception, a crash): always a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: the generated clients the matrix runs (driver names; tests/faults/drivers.py starts them)
CLIENTS = ("python", "aio", "c", "java")
#: the clients whose API is safe to call from several threads (documented so in their pack READMEs)
THREADED = frozenset({"python", "java"})
#: the clients with an iterator over a consumer's deliveries (the C client hands events from client_next)
ITERATING = frozenset({"python", "aio", "java"})

#: how each client spells an outcome kind (its exception class, or the C client's status): the drivers report
#: it as ``raised=``, the runner checks it, and the docs table (tests/faults/table.py) shows it
SPELLING: dict[str, dict[str, str]] = {}
#: the C client's statuses (client/<prefix>_client.h, without the prefix; its driver reports them as raised=)
_C_SPELLING = {"connection_lost": "CLIENT_LOST", "connection_closed": "CLIENT_CLOSED",
               "channel_closed": "CLIENT_CHANNEL_CLOSED", "connect_failed": "CLIENT_CONNECT",
               "connect_timeout": "CLIENT_TIMEOUT", "version_refused": "CLIENT_VERSION",
               "callback_error": "CLIENT_CONSUMER", "unconfirmed": "CLIENT_UNCONFIRMED",
               "recovery_failed": "CLIENT_RECOVERY_FAILED"}
for _kind, _spelled in _C_SPELLING.items():
    SPELLING.setdefault(_kind, {})["c"] = _spelled

#: heartbeat interval (s) of the rows that detect a silent or stalled peer: "lost within 2 intervals + 1 s"
HB = 1


@dataclass(frozen=True)
class Fault:
    """What the harness does: ``action`` (one of FAULT_ACTIONS) with its arguments, at the driver's phase
    ``at`` (None: before the scenario starts, e.g. a proxy mode for the whole run)."""

    action: str
    at: str | None = None
    args: tuple[Any, ...] = ()


FAULT_ACTIONS = {
    "none": "nothing",
    "blackhole": "the proxy stops forwarding both ways, without FIN or RST",
    "cut": "the proxy resets both sides (RST)",
    "stall_c2s": "the proxy stops reading what the client sends (the broker's octets still flow)",
    "throttle_c2s": "the proxy forwards what the client sends at args[0] octets per second",
    "segment": "the proxy delivers both ways in segments: args[0] 'one' (1 octet each) or 'random'",
    "coalesce": "the proxy holds each direction's octets for args[0] ms and delivers them in one write",
    "close_connection": "rabbitmqctl close_connection on the client's connection (matched by its port)",
    "delete_queue": "another connection deletes the scenario's queue",
    "memory_alarm": "the broker's memory high watermark set under its use (restored at the next phase)",
    "restart": "the proxy refuses connections for 10 s and resets the open ones (a broker restarting)",
    "refuse_long": "the proxy refuses connections for 30 s and resets the open ones (a broker gone)",
    "blackhole_then_cut": "the proxy black-holes the connection, then resets it 1 s later",
}


@dataclass(frozen=True)
class Row:
    id: str
    what: str  # the fault in words, for the docs table
    scenario: str
    params: dict[str, Any] = field(default_factory=dict)
    fault: Fault = Fault("none")
    expect: dict[str, Any] = field(default_factory=dict)  # "kind" plus fields that must match
    within: float | None = None  # seconds from the fault (or the start) to the outcome
    clients: frozenset[str] = frozenset(CLIENTS)
    target: str = "proxy"  # where the client connects: "proxy" (to the broker), "broker", "closed", "server:<script>"
    events: tuple[str, ...] = ()  # notifications the client must have given (event kinds), in this order
    after: str | None = None  # a check the harness makes after the outcome (faults/harness.py, Run.execute)
    refused: tuple[str, ...] = ()  # notifications the client must not have given


MiB = 1 << 20

ROWS: tuple[Row, ...] = (
    # -- connecting --------------------------------------------------------------------------------------
    Row("closed_port", "connect to a port nobody listens on", "connect", {"timeout": 5},
        expect={"kind": "connect_failed"}, within=2.0, target="closed"),
    Row("unknown_host", "connect to a host name that does not resolve", "connect", {"timeout": 5},
        expect={"kind": "connect_failed"}, within=6.0, target="unknown_host"),
    Row("never_answers", "a server accepts the connection and never answers", "connect", {"timeout": 2},
        expect={"kind": "connect_timeout", "fds": 0}, within=3.5, target="server:silent"),
    Row("half_frame", "a server answers half of connection.start, then nothing", "connect", {"timeout": 2},
        expect={"kind": "connect_timeout", "fds": 0}, within=3.5, target="server:half_frame"),
    Row("header_then_close", "a server answers with another protocol header and closes", "connect",
        {"timeout": 5}, expect={"kind": "version_refused", "server": "1.1.0.10", "fds": 0}, within=2.0,
        target="server:header_close"),
    Row("wrong_password", "the broker refuses the login", "connect", {"timeout": 5, "password": "wrong"},
        expect={"kind": "connection_closed", "code": 403, "fds": 0}, within=5.0, target="broker"),
    Row("missing_vhost", "the broker has no such virtual host", "connect", {"timeout": 5, "vhost": "amqgen-none"},
        expect={"kind": "connection_closed", "code": 530, "fds": 0}, within=5.0, target="broker"),
    Row("url_parameters", "the URL's query sets heartbeat, frame_max, channel_max, connection_timeout and name",
        "connect", {"timeout": 5, "query": "heartbeat=5&frame_max=8192&channel_max=100&connection_timeout=4000"},
        expect={"kind": "ok", "heartbeat": 5, "frame_max": 8192, "channel_max": 100}, within=5.0,
        after="broker_saw_parameters"),
    # -- the network ---------------------------------------------------------------------------------------
    Row("throttled_publishing", f"pipelined 64 KiB publishes for 8 s through a link throttled to 3 MiB/s, "
        f"heartbeat {HB} s", "publish_stream", {"heartbeat": HB, "size": 65536, "seconds": 8, "batch": 64},
        fault=Fault("throttle_c2s", None, (3 * MiB,)), expect={"kind": "ok"}, within=30.0),
    Row("blackhole_blocked_write", "black-hole while a write is blocked (4 MiB batches)", "publish_stream",
        {"heartbeat": HB, "size": 65536, "seconds": 60, "batch": 64},
        fault=Fault("blackhole", "publishing"), expect={"kind": "connection_lost"}, within=2 * HB + 1.0),
    Row("peer_stops_reading", "the broker's side stops reading while the client writes (its octets still flow)",
        "publish_stream", {"heartbeat": HB, "size": 65536, "seconds": 60, "batch": 64},
        fault=Fault("stall_c2s", "publishing"), expect={"kind": "connection_lost"}, within=2 * HB + 2.0),
    Row("reset_mid_frame", "RST in the middle of a stream of 64 KiB publishes", "publish_stream",
        {"heartbeat": HB, "size": 65536, "seconds": 60, "batch": 16},
        fault=Fault("cut", "publishing"), expect={"kind": "connection_lost"}, within=1.0),
    Row("blackhole_awaiting_confirm", "black-hole, then a publish whose confirm is awaited", "await_confirm",
        {"heartbeat": HB}, fault=Fault("blackhole", "ready"), expect={"kind": "connection_lost"},
        within=2 * HB + 1.0),
    Row("blackhole_idle_consume", "black-hole while a consumer waits for deliveries", "consume_idle",
        {"heartbeat": HB}, fault=Fault("blackhole", "consuming"), expect={"kind": "connection_lost"},
        within=2 * HB + 1.0),
    Row("one_octet_segments", "every octet in its own TCP segment, both ways", "roundtrip",
        {"heartbeat": 5, "count": 6, "size": 300}, fault=Fault("segment", None, ("one",)),
        expect={"kind": "ok", "consumed": 6}, within=60.0),
    Row("random_segments", "random segment sizes and gaps, both ways", "roundtrip",
        {"heartbeat": 5, "count": 40, "size": 20000}, fault=Fault("segment", None, ("random",)),
        expect={"kind": "ok", "consumed": 40}, within=60.0),
    Row("coalesced", "each direction held for 30 ms and delivered in one write", "roundtrip",
        {"heartbeat": 5, "count": 40, "size": 20000}, fault=Fault("coalesce", None, (30,)),
        expect={"kind": "ok", "consumed": 40}, within=60.0),
    # -- the broker ---------------------------------------------------------------------------------------
    Row("forced_close_with_unacked", "rabbitmqctl close_connection after 12 of 20 deliveries were acked",
        "consume_ack", {"heartbeat": 10, "count": 20, "ack": 12}, fault=Fault("close_connection", "acked"),
        expect={"kind": "connection_closed", "code": 320, "close_ok": 1}, within=5.0,
        after="queue_holds_unacked", events=("closed",)),
    Row("queue_deleted_iterator", "the consumer's queue deleted under an iterating consumer", "consumer_cancel",
        {"heartbeat": 10, "style": "iterator"}, fault=Fault("delete_queue", "consuming"),
        expect={"kind": "consumer_cancelled"}, within=3.0, clients=ITERATING),
    Row("queue_deleted_callback", "the consumer's queue deleted under a callback consumer", "consumer_cancel",
        {"heartbeat": 10, "style": "callback"}, fault=Fault("delete_queue", "consuming"),
        expect={"kind": "consumer_cancelled"}, within=3.0),
    Row("missing_exchange_confirm", "a confirmed publish to an exchange that does not exist", "confirm_closed",
        {"heartbeat": 10, "count": 1}, expect={"kind": "channel_closed", "code": 404, "unconfirmed": 1,
                                               "usable": 1}, within=5.0),
    Row("confirming_channel_closed", "50 pipelined confirmed publishes to a missing exchange", "confirm_closed",
        {"heartbeat": 10, "count": 50}, expect={"kind": "channel_closed", "code": 404, "unconfirmed": 50,
                                                "usable": 1}, within=5.0),
    Row("mandatory_returned", "a mandatory publish nobody can route, on a confirming channel", "mandatory_return",
        {"heartbeat": 10}, expect={"kind": "ok", "returned": 1, "body_ok": 1}, within=5.0, events=("returned",)),
    Row("memory_alarm", "the broker blocks publishers (memory alarm), then unblocks", "blocked", {"heartbeat": 10},
        fault=Fault("memory_alarm", "connected"), expect={"kind": "ok"}, within=20.0,
        events=("blocked", "unblocked")),
    # -- the caller ---------------------------------------------------------------------------------------
    Row("callback_raises", "a consumer callback raises", "callback_raises", {"heartbeat": 10},
        expect={"kind": "callback_error", "usable": 1}, within=5.0),
    Row("leave_consume_loop", "the caller leaves a consume loop, then consumes again", "consume_leave",
        {"heartbeat": 10}, expect={"kind": "ok", "consumers": 1, "consumed": 2}, within=10.0, clients=ITERATING,
        after="left_cancelled"),
    Row("acks_from_worker_threads", "200 deliveries (prefetch 10) acked by worker threads", "worker_acks",
        {"heartbeat": 10, "count": 200, "prefetch": 10}, expect={"kind": "ok", "consumed": 200}, within=20.0,
        clients=THREADED),
    Row("two_threads", "one thread consumes on a channel, another makes 20 calls on a second channel",
        "two_threads", {"heartbeat": 10, "calls": 20}, expect={"kind": "ok", "slow_calls": 0}, within=20.0,
        clients=THREADED),
    Row("long_routing_key", "a 300-character routing key", "local_refusal", {"heartbeat": 10, "what": "routing_key"},
        expect={"kind": "local_error", "usable": 1}, within=5.0),
    Row("header_over_frame_max", "a content header (headers table) larger than frame_max", "local_refusal",
        {"heartbeat": 10, "what": "header"}, expect={"kind": "local_error", "usable": 1}, within=5.0),
    Row("body_over_frame_max", "a 1 MiB body with frame_max 4096 (split into 257 body frames), both ways",
        "big_message", {"heartbeat": 10, "size": MiB, "query": "frame_max=4096"},
        expect={"kind": "ok", "body_ok": 1}, within=20.0),
    Row("message_16mib", "a 16 MiB message, both ways", "big_message", {"heartbeat": 10, "size": 16 * MiB},
        expect={"kind": "ok", "body_ok": 1}, within=30.0),
    # -- a misbehaving server ------------------------------------------------------------------------------
    Row("interleaved_content", "a server interleaves two deliveries' content frames on channels 1 and 2",
        "consume_server", {"heartbeat": 0}, expect={"kind": "ok", "consumed": 2, "body_ok": 1}, within=10.0,
        target="server:interleaved"),
    # -- recovery (issue 42, docs/recovery.md) ----------------------------------------------------------------
    *(Row(f"recover_after_{fault}_{style}",
          f"{what}; {'an' if style == 'iterator' else 'a'} {style} consumer on a server-named queue goes on",
          "recover_consume", {"heartbeat": HB if fault == "blackhole" else 10, "style": style},
          fault=Fault(action, "consuming"), expect={"kind": "ok", "consumed": 2, "renamed": 1},
          within=within, events=("recovery_started", "recovered"),
          clients=ITERATING if style == "iterator" else frozenset(CLIENTS))
      for fault, action, what, within in (
          ("reset", "cut", "RST", 8.0), ("blackhole", "blackhole", "black-hole", 2 * HB + 8.0),
          ("forced_close", "close_connection", "rabbitmqctl close_connection", 10.0),
          ("restart", "restart", "connections refused for 10 s, then RST (a broker restart)", 20.0))
      for style in ("iterator", "callback")),
    Row("no_recovery_on_403", "recovery on, the broker refuses the login", "recover_refused",
        {"heartbeat": 10, "password": "wrong"},
        expect={"kind": "connection_closed", "code": 403, "recoveries": 0}, within=8.0, target="broker",
        refused=("recovery_started",)),
    Row("no_recovery_on_530", "recovery on, the broker refuses the virtual host", "recover_refused",
        {"heartbeat": 10, "vhost": "amqgen-none"}, expect={"kind": "connection_closed", "code": 530, "recoveries": 0},
        within=8.0, target="broker", refused=("recovery_started",)),
    Row("no_recovery_on_close", "recovery on, the application closes the connection", "recover_user_close",
        {"heartbeat": 10}, expect={"kind": "ok", "recoveries": 0}, within=8.0, refused=("recovery_started",)),
    Row("no_recovery_on_channel_error", "recovery on, a passive declare of a missing queue", "recover_channel_error",
        {"heartbeat": 10}, expect={"kind": "channel_closed", "code": 404, "usable": 1, "recoveries": 0}, within=8.0,
        refused=("recovery_started",)),
    Row("recovery_reports_unconfirmed", "20 publishes black-holed, then RST: reported to the caller",
        "recover_unconfirmed", {"heartbeat": 10, "count": 20, "republish": 0},
        fault=Fault("blackhole_then_cut", "ready"), expect={"kind": "unconfirmed", "messages": 20}, within=10.0,
        events=("recovery_started",), after="queue_depth_0"),
    Row("recovery_republishes_unconfirmed", "20 publishes black-holed, then RST: published again",
        "recover_unconfirmed", {"heartbeat": 10, "count": 20, "republish": 1},
        fault=Fault("blackhole_then_cut", "ready"), expect={"kind": "ok", "confirmed": 20}, within=10.0,
        events=("recovery_started", "recovered"), after="queue_depth_count"),
    Row("stale_ack_after_recovery", "a delivery taken before a RST is acked after recovery", "recover_stale_ack",
        {"heartbeat": 10}, fault=Fault("cut", "delivered"),
        expect={"kind": "ok", "redelivered": 1, "usable": 1}, within=10.0, events=("recovered",)),
    Row("recovery_gives_up", "connections refused for 30 s, recovery limited to 3 attempts", "recover_gives_up",
        {"heartbeat": 10}, fault=Fault("refuse_long", "connected"), expect={"kind": "recovery_failed"},
        within=10.0, events=("recovery_started", "recovery_failed")),
)

BY_ID = {r.id: r for r in ROWS}
assert len(BY_ID) == len(ROWS), "row ids are unique"

#: rows a client does not pass yet, by client: the suite does not run them on that client, and the docs table
#: says "not yet" in its cell (never "yes"). Each entry names the open issue that takes it; an entry goes when the
#: client passes the row. "soak" stands for tests/amqp0/clients/test_recovery_soak.py.
NOT_YET: dict[str, frozenset[str]] = {
    "python": frozenset(),
    "aio": frozenset(),
    "c": frozenset(),
    "java": frozenset(),
}


def runs(row_id: str, client: str) -> bool:
    """Whether the suite runs ``row_id`` (or "soak") on ``client``."""
    row = BY_ID.get(row_id)
    return (row is None or client in row.clients) and row_id not in NOT_YET.get(client, frozenset())

# the Java client's spelling of each kind (tests/java/FaultDriver.java reports it as raised=): its exception types,
# nested in the generated Client class, and the package's EncodeException for a value that does not fit. A
# callback's exception reaches Client.onCallbackError as the ChannelClosedException (200) its channel was closed
# with; a consumer the server cancels is a ConsumerCancelledException from the iterator, or the cancelled callback
# of Channel.consume (two spellings: the kind is not in this table for Java)
for _kind, _spelled in {
    "connect_failed": "Client.ConnectFailedException", "connect_timeout": "Client.ConnectTimeoutException",
    "version_refused": "Client.VersionRefusedException", "connection_closed": "Client.ConnectionClosedException",
    "connection_lost": "Client.ConnectionLostException", "channel_closed": "Client.ChannelClosedException",
    "callback_error": "Client.ChannelClosedException", "local_error": "EncodeException",
    "recovery_failed": "Client.RecoveryFailedException", "unconfirmed": "Client.PublishNotConfirmedException",
}.items():
    SPELLING.setdefault(_kind, {})["java"] = _spelled

# the Python blocking client's spelling of each kind (tests/faults/driver_blocking.py reports it as raised=): its
# exception classes (client_core.py). A callback's exception comes out of the dispatch call as the
# ConsumerCallbackError its channel was closed with (200); a local refusal is the package's EncodeError (the
# engine's FrameTooLargeError is one); a consumer the broker cancels is a ConsumerCancelledError from the iterator,
# or the on_cancel notification of Channel.on_message (two spellings: the kind is not in this table). The asyncio
# client (aio.py, tests/faults/driver_aio.py) raises the same classes: its callback's ConsumerCallbackError comes
# out of Channel.wait_closed() and every later call on that channel
for _kind, _spelled in {
    "connect_failed": "ConnectFailedError", "connect_timeout": "ConnectTimeoutError",
    "version_refused": "VersionRefusedError", "connection_closed": "ConnectionClosedError",
    "connection_lost": "ConnectionLostError", "channel_closed": "ChannelClosedError",
    "callback_error": "ConsumerCallbackError", "local_error": "EncodeError",
    # recovery: RecoveryFailedError from every call once recovery gave up; PublishNotConfirmed with the messages a
    # cut left unconfirmed
    "recovery_failed": "RecoveryFailedError", "unconfirmed": "PublishNotConfirmed",
}.items():
    SPELLING.setdefault(_kind, {})["python"] = _spelled
    SPELLING.setdefault(_kind, {})["aio"] = _spelled
