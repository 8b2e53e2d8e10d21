"""The behaviour plan: what a protocol engine needs to know of a 0-x spec's behaviour, derived once from the model,
target-neutral (the sans-I/O engine of issue 19 and the traffic pipeline's sequence checks read it).

From each method's chassis, ``synchronous``, ``<response>`` and ``content``, the class grammars where the spec
has them (``Class.productions``; Debian's stripped files and RabbitMQ's ``confirm`` class have none, and lose
nothing here but the cross-check), and the frame rules of the spec's prose (4.2.3: connection-class methods and
heartbeats on channel 0, every other class on a channel above 0):

- per method: who may send it, on which channel, the replies a synchronous request accepts (the ``<response>``
  elements and, where the grammar gives more, the grammar's), the requests a reply answers, whether content
  follows it, whether it opens or closes a channel or the connection, whether it is part of the connection's
  negotiation, and its no-wait field;
- the connection's negotiation in order (the ``open-connection`` production where there is one, else the
  connection class's requests in index order): who sends each step and whether it may repeat (``secure``);
- each kind of violation with the reply code the spec gives it (``frame-error``, ``command-invalid``, ...);
- per method, the grammar production that writes it (``open-connection``, ``open-channel``, ``exchange``), which a
  sequence violation names as the rule it breaks;
- what a client that recovers a connection replays (``Recovery``): the methods that declare topology and those
  that remove it, the fields that identify what they declare and name other topology, the replies that name a
  server-named queue or consumer tag, the methods that set a channel's mode, and the reply codes after which a
  client must not reconnect.

Disagreements between the grammar and the ``<response>`` elements are listed in ``conflicts`` (none in the
specs bundled or in Debian's amqp-specs).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal

from .model import Choice, GrammarExpr, Method, NonTerminal, Production, Repeat, Sequence, Spec, Terminal

Role = Literal["client", "server"]
#: the class whose methods travel on channel 0 (AMQP 0-9-1, 4.2.3: "channel 0 ... for all frames which are global
#: to the connection"); the class that opens and closes channels
CONNECTION_CLASS = "connection"
CHANNEL_CLASS = "channel"
_NO_WAIT_FIELDS = ("no-wait", "nowait")


@dataclass(frozen=True)
class MethodBehaviour:
    method: str  # "basic.get"
    key: int  # class id << 16 | method id
    senders: tuple[Role, ...]  # from the chassis: the server implements it -> the client sends it
    channel: Literal["zero", "nonzero"]
    synchronous: bool
    replies: tuple[str, ...]  # the methods that answer it (a synchronous request waits for one)
    answers: tuple[str, ...]  # a reply: the requests it answers
    content: bool  # a content header and body frames follow it
    opens: Literal["connection", "channel"] | None  # the reply that makes the connection / a channel usable
    closes: Literal["connection", "channel"] | None  # close and close-ok
    negotiation: bool  # part of the connection's negotiation (before it is open)
    no_wait: str | None  # the bit field that asks for no reply ("no-wait", "nowait")
    production: str | None = None  # the grammar production that writes it ("open-connection"), for violations


@dataclass(frozen=True)
class Step:
    sender: Role | None  # None: the protocol header (the client's)
    method: str | None  # None: the protocol header
    repeats: bool  # may occur any number of times (the server's challenges)


@dataclass(frozen=True)
class Violation:
    kind: str
    constant: str | None  # the reply code's constant name; None when the spec defines none of them
    code: int | None
    hard: bool  # a connection exception (else a channel exception)
    what: str


@dataclass(frozen=True)
class Limit:
    """A value the connection's tuning agrees: the field of the tune and of the tune-ok that carry it, and what a
    zero in it means ("no-limit": channel-max, frame-max; "none": heartbeat, zero asks for no heartbeat)."""

    name: str  # "frame-max"
    tune_field: str
    tune_ok_field: str
    zero: Literal["no-limit", "none"]


#: the Lifecycle fields that are facts about methods, not methods
_NOT_ROLES = ("limits", "flow_field", "reopen_rule", "publish_fields")


@dataclass(frozen=True)
class Lifecycle:
    """The methods an engine treats by their role, not only by the table (None where the spec has none), so
    that every target's engine reads the same facts: the tuning and its limits, the close and flow handshakes,
    the rule a second channel.open breaks, and publisher confirms where the spec or an overlay has them."""

    tune: str | None  # the server's proposal of the limits
    tune_ok: str | None  # the client's answer: the limits both sides hold to
    limits: tuple[Limit, ...]
    connection_close: str | None
    connection_close_ok: str | None
    channel_open: str | None
    channel_close: str | None
    channel_close_ok: str | None
    flow: str | None  # the peer asks to stop or restart content: answered by flow_ok at once
    flow_ok: str | None
    flow_field: str | None  # the bit of flow and flow-ok ("active")
    reopen_rule: str | None  # the rule a channel.open on a channel not closed breaks
    confirm_select: str | None  # publisher confirms: after it, publishes are numbered from 1
    confirm_select_ok: str | None
    publish: str | None  # the content method a confirm counts
    ack: str | None  # the server's confirms: a delivery tag and ``multiple``
    nack: str | None
    returned: str | None  # an unroutable publish handed back, before its confirm
    publish_fields: tuple[str, ...]  # the fields a returned publish is matched by (exchange, routing key)

    def roles(self) -> dict[str, str | None]:
        """Each method role, in order: role name -> the method's name, None where the spec has none."""
        return {k: v for k, v in vars(self).items() if k not in _NOT_ROLES}


@dataclass(frozen=True)
class ClientRoles:
    """The methods a client is written around beyond the engine's Lifecycle (None where the spec has none): the
    greeting and login it answers for the caller, the open of the virtual host and of a channel, the content it
    publishes and is delivered, the consumer's start and cancel (the server may send the cancel where the spec
    lets it), and the answers to a delivery. The Python clients and the Java engine read them; Lifecycle keeps
    the tuning, the close and flow handshakes and the confirms, so the engines that read Lifecycle.roles() are
    as they were."""

    start: str | None  # the server's greeting: the mechanisms and locales offered
    start_ok: str | None  # the client's choice and its response (the login)
    connection_open: str | None  # the virtual host asked for
    connection_open_ok: str | None
    channel_open_ok: str | None
    publish: str | None  # the content method a client publishes with (Lifecycle.publish is it where confirms are)
    deliver: str | None  # a consumer's message, pushed by the server, by consumer tag
    consume: str | None
    consume_ok: str | None
    cancel: str | None  # ends a consumer: sent by the client, or by the server where the spec lets it
    cancel_ok: str | None
    delivery_ack: str | None  # the client settles a delivery
    delivery_reject: str | None

    def roles(self) -> dict[str, str | None]:
        """Each role, in order: role name -> the method's name, None where the spec has none."""
        return dict(vars(self))


TopologyKind = Literal["exchange", "queue", "exchange-binding", "queue-binding", "consumer"]


@dataclass(frozen=True)
class Declaration:
    """A method that declares topology the broker loses with the connection (exclusive and server-named queues,
    consumers) or on a restart (non-durable exchanges and queues): a client that recovers replays it."""

    method: str  # "queue.bind"
    kind: TopologyKind
    key: tuple[str, ...]  # the fields that identify what it declares: a removal with equal values removes it
    refers: tuple[tuple[str, Literal["exchange", "queue"]], ...]  # its fields that name other topology
    removal: str | None  # the method that removes what it declares ("queue.unbind")
    check: str | None  # the bit that makes it a check of what exists, not a declaration ("passive"): not replayed
    named_by: tuple[str, str] | None  # (reply, field): an empty key field asks the server for a name, the reply has it
    tied: tuple[str, ...]  # the bits that tie what it declares to the connection: declared with none, it outlives it


@dataclass(frozen=True)
class Removal:
    """A method that removes declared topology, and what goes with it (a queue's bindings and consumers)."""

    method: str  # "queue.delete"
    kind: TopologyKind
    key: tuple[str, ...]  # matched against the declaration's key, field for field
    cascades: tuple[TopologyKind, ...]  # declarations that refer to the removed one go too


@dataclass(frozen=True)
class Refusal:
    """A reply code after which a recovering client must not reconnect: the broker would refuse again."""

    constant: str  # "access-refused"
    code: int
    why: str


@dataclass(frozen=True)
class Recovery:
    """What a recovering client replays after a reconnect, in this order: the channels' modes as each channel
    reopens (``channel_settings``), then the declarations by kind (exchanges, queues, exchange bindings, queue
    bindings, consumers; in the order they were made within a kind), renaming a server-named queue in every later
    declaration that refers to it. Empty where the spec has none of these methods."""

    declarations: tuple[Declaration, ...]  # in replay order of their kinds
    removals: tuple[Removal, ...]
    channel_settings: tuple[str, ...]  # basic.qos, confirm.select, tx.select: replayed on the reopened channel
    refusals: tuple[Refusal, ...]


@dataclass(frozen=True)
class Notices:
    """The server's notices about the whole connection that a client passes on to the application (None where
    the spec has none; RabbitMQ's are in the bundled overlay rabbitmq-blocked): the server stopped reading the
    connection's publishes, and reads them again. A client advertises that it takes them only where the spec
    has them, since a server sends them only to a client that says so."""

    blocked: str | None
    unblocked: str | None


@dataclass(frozen=True)
class BehaviourPlan:
    methods: tuple[MethodBehaviour, ...]
    negotiation: tuple[Step, ...]
    violations: tuple[Violation, ...]
    lifecycle: Lifecycle
    from_grammar: bool  # the spec has grammars: the replies and the negotiation were cross-checked with them
    conflicts: tuple[str, ...]  # where the grammar and <response> disagree, in words
    client: ClientRoles  # the roles a client needs beyond the lifecycle
    recovery: Recovery  # what a recovering client replays
    notices: Notices  # the server's notices about the connection, which a client hands to the application
    #: the capabilities a client advertises (client_properties "capabilities", each true): RabbitMQ's names for
    #: what it does only for a client that says it handles it, each where the spec has the methods it needs
    capabilities: tuple[str, ...] = ()


#: each violation kind, the reply-code constants that may name it (first defined wins), hard or soft, and why
VIOLATIONS: tuple[tuple[str, tuple[str, ...], bool, str], ...] = (
    ("malformed-frame", ("frame-error",), True, "a frame that cannot be decoded, or over frame_max"),
    ("bad-heartbeat", ("frame-error",), True, "a heartbeat frame on a channel other than 0"),
    ("bad-field", ("syntax-error",), True, "a field value the spec's asserts refuse"),
    ("out-of-sequence", ("command-invalid",), True,
     ("a method the state does not allow: a reply to no request, a second synchronous request before the reply, "
      "a method before the connection is open")),
    ("channel-not-open", ("channel-error",), True, "a method on a channel that is not open, or over channel_max"),
    ("unexpected-frame", ("unexpected-frame", "command-invalid"), True,
     "a content header or body where none is expected, or a method where the body is"),
    ("not-sendable", ("not-implemented", "command-invalid"), True, "a method the sender's chassis does not send"),
)


def _terminals_in_order(expr: GrammarExpr, defs: dict[str, Production], repeated: bool = False,
                        seen: frozenset[str] = frozenset()) -> list[tuple[Terminal, bool]]:
    """The terminals in the order written, productions of the same grammar expanded (``*challenge``)."""
    if isinstance(expr, Terminal):
        return [(expr, repeated)]
    if isinstance(expr, Sequence):
        return [t for x in expr.items for t in _terminals_in_order(x, defs, repeated, seen)]
    if isinstance(expr, Choice):  # a choice in the negotiation: its first option (OPEN-OK before 0-9's REDIRECT)
        return _terminals_in_order(expr.options[0], defs, repeated, seen)
    if isinstance(expr, Repeat):
        return _terminals_in_order(expr.item, defs, repeated or expr.max != 1, seen)
    if expr.name in defs and expr.name not in seen:
        return _terminals_in_order(defs[expr.name].expr, defs, repeated, seen | {expr.name})
    return []


def _terminals(expr: GrammarExpr) -> list[Terminal]:
    """Every terminal an expression writes itself, each option of a choice included."""
    if isinstance(expr, Terminal):
        return [expr]
    if isinstance(expr, Sequence):
        return [t for x in expr.items for t in _terminals(x)]
    if isinstance(expr, Choice):
        return [t for x in expr.options for t in _terminals(x)]
    if isinstance(expr, Repeat):
        return _terminals(expr.item)
    return []


def _pairs(expr: GrammarExpr, replies: set[str]) -> list[tuple[str, str]]:
    """(request, reply) pairs the grammar writes: a request (a method that answers nothing) followed by the other
    side's terminal; a choice after a request gives each option's first terminal. ``S:SELECT-OK C:START`` is not a
    pair: select-ok is a reply."""
    out: list[tuple[str, str]] = []
    if isinstance(expr, Sequence):
        for a, b in zip(expr.items, expr.items[1:], strict=False):
            if isinstance(a, Terminal) and a.method and a.method not in replies:
                for first in _firsts(b):
                    if first.method and first.sender != a.sender:
                        out.append((a.method, first.method))
        for x in expr.items:
            out += _pairs(x, replies)
    elif isinstance(expr, Choice):
        for x in expr.options:
            out += _pairs(x, replies)
    elif isinstance(expr, Repeat):
        out += _pairs(expr.item, replies)
    return out


def _firsts(expr: GrammarExpr) -> list[Terminal]:
    if isinstance(expr, Terminal):
        return [expr]
    if isinstance(expr, Sequence):
        return _firsts(expr.items[0])
    if isinstance(expr, Choice):
        return [t for x in expr.options for t in _firsts(x)]
    if isinstance(expr, Repeat):
        return _firsts(expr.item)
    assert isinstance(expr, NonTerminal)
    return []


def _no_wait(m: Method) -> str | None:
    return next((f.name for f in m.fields if f.name in _NO_WAIT_FIELDS and f.type == "bit"), None)


@cache
def behaviour_plan(spec: Spec) -> BehaviourPlan:
    methods = [m for c in spec.classes for m in c.methods]
    by_name = {m.full_name: m for m in methods}
    grammar_pairs: dict[str, set[str]] = {}
    productions = {p.name: p for c in spec.classes for p in c.productions}
    all_replies = {r for m in methods for r in m.responses}
    for c in spec.classes:
        for p in c.productions:
            for req, rep in _pairs(p.expr, all_replies):
                grammar_pairs.setdefault(req, set()).add(rep)
    conflicts: list[str] = []
    replies: dict[str, tuple[str, ...]] = {}
    for m in methods:
        # every method's replies, synchronous or not: 0-9's message class answers asynchronous requests
        grammar = grammar_pairs.get(m.full_name, set())
        extra = sorted(grammar - set(m.responses))
        missing = [r for r in m.responses if grammar and r not in grammar]
        if extra:
            conflicts.append(f"the grammar answers {m.full_name} with {', '.join(extra)}, which <response> does not")
        if missing:
            conflicts.append(f"<response> answers {m.full_name} with {', '.join(missing)}, which the grammar does not")
        replies[m.full_name] = tuple(m.responses) + tuple(r for r in extra if r in by_name)
    # a reply no <response> names and no grammar places: by the naming the model uses (Method.is_reply), X-ok
    # answers X (Debian's stripped 0-9-1 files drop basic.recover's response to basic.recover-ok)
    placed = {r for reps in replies.values() for r in reps}
    for m in methods:
        if m.is_reply and m.full_name not in placed:
            request = m.full_name[: -len("-ok")]
            if request in by_name and not replies[request]:
                replies[request] = (m.full_name,)
                conflicts.append(f"no <response> or grammar names {m.full_name}: taken as {request}'s reply (its name)")
    answers: dict[str, list[str]] = {}
    for req, reps in replies.items():
        for r in reps:
            answers.setdefault(r, []).append(req)

    # the first production (in the spec's order) whose own expression names the method
    written: dict[str, str] = {}
    for c in spec.classes:
        for p in c.productions:
            for t in _terminals(p.expr):
                if t.method:
                    written.setdefault(t.method, p.name)
    negotiation = _negotiation(spec, productions)
    in_negotiation = {s.method for s in negotiation if s.method}
    senders: dict[str, tuple[Role, ...]] = {
        "client-to-server": ("client",), "server-to-client": ("server",), "both": ("client", "server")}
    out = []
    for m in methods:
        cls = m.class_name
        opens: Literal["connection", "channel"] | None = None
        closes: Literal["connection", "channel"] | None = None
        if cls in (CONNECTION_CLASS, CHANNEL_CLASS):
            scope: Literal["connection", "channel"] = "connection" if cls == CONNECTION_CLASS else "channel"
            if m.name == "open-ok":
                opens = scope
            if m.name in ("close", "close-ok"):
                closes = scope
        out.append(MethodBehaviour(
            method=m.full_name, key=m.class_index << 16 | m.index, senders=senders[m.direction],
            channel="zero" if cls == CONNECTION_CLASS else "nonzero", synchronous=m.synchronous,
            replies=replies[m.full_name], answers=tuple(answers.get(m.full_name, ())), content=m.content,
            opens=opens, closes=closes, negotiation=m.full_name in in_negotiation, no_wait=_no_wait(m),
            production=written.get(m.full_name)))
    constants = {c.name: c for c in spec.constants}
    violations = []
    for kind, names, hard, what in VIOLATIONS:
        found = next((constants[n] for n in names if n in constants), None)
        violations.append(Violation(kind, found.name if found else None, found.value if found else None, hard, what))
    return BehaviourPlan(tuple(out), negotiation, tuple(violations), _lifecycle(spec, by_name), bool(productions),
                         tuple(conflicts), _client_roles(by_name), _recovery(spec, by_name, replies),
                         Notices(blocked=_has(by_name, f"{CONNECTION_CLASS}.blocked"),
                                 unblocked=_has(by_name, f"{CONNECTION_CLASS}.unblocked")),
                         _capabilities(by_name, {mb.method: mb.senders for mb in out}))


#: RabbitMQ's client capabilities (rabbit_reader, its docs' "Client Capabilities") and the methods each needs the
#: client to take (sent by the server) or to send: advertised only where the spec has them, since the broker then
#: sends them (a client that cannot decode connection.blocked would fail on it)
CAPABILITIES: tuple[tuple[str, tuple[tuple[str, Role], ...]], ...] = (
    ("publisher_confirms", (("confirm.select", "client"), ("basic.ack", "server"))),
    ("exchange_exchange_bindings", (("exchange.bind", "client"),)),
    ("basic.nack", (("basic.nack", "server"),)),
    ("consumer_cancel_notify", (("basic.cancel", "server"),)),
    ("connection.blocked", (("connection.blocked", "server"), ("connection.unblocked", "server"))),
    # a refused login is a connection.close 403 before the socket closes, not a bare close (needs only the close)
    ("authentication_failure_close", ((f"{CONNECTION_CLASS}.close", "server"),)),
)


def _capabilities(by_name: dict[str, Method], senders: dict[str, tuple[Role, ...]]) -> tuple[str, ...]:
    return tuple(name for name, needs in CAPABILITIES
                 if all(m in by_name and role in senders.get(m, ()) for m, role in needs))


#: the tuning's limits: the field, and what zero means in it (0-9-1's connection.tune: "zero means ... no limit"
#: for channel-max and frame-max; "zero means the server does not want a heartbeat", and so in tune-ok)
_LIMITS = (("channel-max", "no-limit"), ("frame-max", "no-limit"), ("heartbeat", "none"))


def _lifecycle(spec: Spec, by_name: dict[str, Method]) -> Lifecycle:
    def has(name: str) -> str | None:
        return name if name in by_name else None

    def fields(name: str | None) -> set[str]:
        return {f.name for f in by_name[name].fields} if name else set()

    tune, tune_ok = has(f"{CONNECTION_CLASS}.tune"), has(f"{CONNECTION_CLASS}.tune-ok")
    limits = tuple(Limit(f, f, f, zero) for f, zero in _LIMITS  # type: ignore[arg-type]
                   if f in fields(tune) and f in fields(tune_ok))
    flow, flow_ok = has(f"{CHANNEL_CLASS}.flow"), has(f"{CHANNEL_CLASS}.flow-ok")
    flow_field = next(iter(sorted(fields(flow) & fields(flow_ok))), None)
    # the rule a second channel.open on a channel not closed breaks (0-9-1's channel.open "state", channel-error)
    reopen = next((r.id for r in spec.all_rules()
                   if r.parent == f"{CHANNEL_CLASS}.open" and r.on_failure == "channel-error"), None)
    select, select_ok = has("confirm.select"), has("confirm.select-ok")
    confirms = select is not None and select_ok is not None
    publish = has("basic.publish")

    def confirm(name: str) -> str | None:
        return has(name) if confirms else None

    return Lifecycle(
        tune=tune, tune_ok=tune_ok, limits=limits,
        connection_close=has(f"{CONNECTION_CLASS}.close"), connection_close_ok=has(f"{CONNECTION_CLASS}.close-ok"),
        channel_open=has(f"{CHANNEL_CLASS}.open"), channel_close=has(f"{CHANNEL_CLASS}.close"),
        channel_close_ok=has(f"{CHANNEL_CLASS}.close-ok"), flow=flow, flow_ok=flow_ok, flow_field=flow_field,
        reopen_rule=reopen, confirm_select=select if confirms else None,
        confirm_select_ok=select_ok if confirms else None, publish=confirm("basic.publish"),
        ack=confirm("basic.ack"), nack=confirm("basic.nack"), returned=confirm("basic.return"),
        publish_fields=tuple(f for f in ("exchange", "routing-key") if f in fields(publish)) if confirms else ())


def _has(by_name: dict[str, Method], name: str) -> str | None:
    return name if name in by_name else None


def _client_roles(by_name: dict[str, Method]) -> ClientRoles:
    def has(name: str) -> str | None:
        return name if name in by_name else None

    conn, chan = CONNECTION_CLASS, CHANNEL_CLASS
    return ClientRoles(
        start=has(f"{conn}.start"), start_ok=has(f"{conn}.start-ok"), connection_open=has(f"{conn}.open"),
        connection_open_ok=has(f"{conn}.open-ok"), channel_open_ok=has(f"{chan}.open-ok"),
        publish=has("basic.publish"), deliver=has("basic.deliver"), consume=has("basic.consume"),
        consume_ok=has("basic.consume-ok"), cancel=has("basic.cancel"), cancel_ok=has("basic.cancel-ok"),
        delivery_ack=has("basic.ack"), delivery_reject=has("basic.reject"))


def _negotiation(spec: Spec, productions: dict[str, Production]) -> tuple[Step, ...]:
    """The connection's negotiation: the ``open-connection`` production's terminals in order, else the connection
    class's requests (start, secure, tune, open) in index order, each with its reply."""
    prod = productions.get("open-connection")
    if prod is not None:
        steps = []
        for t, repeated in _terminals_in_order(prod.expr, productions):
            steps.append(Step(None, None, False) if t.method is None and t.name == "protocol-header"
                          else Step(t.sender, t.method, repeated))
        return tuple(steps)
    conn = next((c for c in spec.classes if c.name == CONNECTION_CLASS), None)
    if conn is None:
        return ()
    by_name = {m.full_name: m for m in conn.methods}
    steps = [Step(None, None, False)]
    for m in conn.methods:
        if not m.synchronous or not m.responses or m.name == "close" or m.is_reply:
            continue
        sender: Role = "server" if m.direction == "server-to-client" else "client"
        repeats = m.name == "secure"  # the server's challenges repeat until it sends tune (the prose of 1.4.2)
        steps.append(Step(sender, m.full_name, repeats))
        reply = by_name.get(m.responses[0])
        if reply is not None:
            steps.append(Step("client" if sender == "server" else "server", reply.full_name, repeats))
    return tuple(steps)


#: what each declaring method declares, in replay order, and the method that removes it (AMQP 0-9-1: exchanges
#: before the queues and bindings that name them, consumers last, as the RabbitMQ Java client recovers them)
_DECLARATIONS: tuple[tuple[str, TopologyKind, str], ...] = (
    ("exchange.declare", "exchange", "exchange.delete"),
    ("queue.declare", "queue", "queue.delete"),
    ("exchange.bind", "exchange-binding", "exchange.unbind"),
    ("queue.bind", "queue-binding", "queue.unbind"),
    ("basic.consume", "consumer", "basic.cancel"),
)
#: the domains whose values name topology
_NAME_DOMAINS: dict[str, Literal["exchange", "queue"]] = {"exchange-name": "exchange", "queue-name": "queue"}
#: what goes when a thing is removed: a queue's bindings and consumers, an exchange's bindings (0-9-1 queue.delete:
#: "all consumers are cancelled"; bindings to a deleted exchange or queue are removed with it)
_CASCADES: dict[TopologyKind, tuple[TopologyKind, ...]] = {
    "queue": ("queue-binding", "consumer"), "exchange": ("exchange-binding", "queue-binding")}
_CHANNEL_SETTINGS = ("basic.qos", "confirm.select", "tx.select")
#: the bits whose declaration goes with its connection (0-9-1 queue.declare: an exclusive queue "is deleted when
#: that connection closes"; an auto-delete one once its last consumer, which the connection held, is gone)
_TIED = ("exclusive", "auto-delete")
#: reply codes that end a recovery: the broker refused the login or the virtual host, and would again
_REFUSALS = (("access-refused", "the broker refused the login"),
             ("not-allowed", "the broker refused the virtual host"))


def _recovery(spec: Spec, by_name: dict[str, Method], replies: dict[str, tuple[str, ...]]) -> Recovery:
    declarations, removals = [], []
    for name, kind, removal in _DECLARATIONS:
        m = by_name.get(name)
        if m is None:
            continue
        undo = by_name.get(removal)
        flags = {_no_wait(m), _no_wait(undo) if undo else None}
        # 0-8 and 0-9's access tickets are a permission, not part of what is declared
        fields = [f for f in m.fields if not f.reserved and f.domain != "access-ticket"]
        if undo is not None:  # what both name, but their bits: the identity a removal matches
            undo_names = {f.name for f in undo.fields if not f.reserved}
            key = tuple(f.name for f in fields if f.name in undo_names and f.name not in flags)
        else:  # no removal (0-8 has no queue.unbind): what it names and carries, not its bits
            key = tuple(f.name for f in fields if f.type != "bit" and f.name not in flags)
        own = {"exchange": "exchange", "queue": "queue"}.get(kind)
        refers = tuple((f.name, _NAME_DOMAINS[f.domain]) for f in fields
                       if f.domain in _NAME_DOMAINS and not (own and f.name in key))
        check = next((f.name for f in fields if f.name == "passive"), None)
        named_by = next(((r, f.name) for r in replies.get(name, ()) for f in by_name[r].fields
                         if any(k.domain == f.domain for k in fields if k.name in key)), None)
        tied = tuple(f.name for f in fields if f.name in _TIED and f.type == "bit")
        declarations.append(Declaration(name, kind, key, refers, undo.full_name if undo else None, check, named_by,
                                        tied))
        if undo is not None:
            undo_key = tuple(k for k in key if k in {f.name for f in undo.fields})
            removals.append(Removal(undo.full_name, kind, undo_key, _CASCADES.get(kind, ())))
    constants = {c.name: c for c in spec.constants}
    refusals = tuple(Refusal(n, constants[n].value, why) for n, why in _REFUSALS if n in constants)
    return Recovery(tuple(declarations), tuple(removals), tuple(m for m in _CHANNEL_SETTINGS if m in by_name),
                    refusals)
