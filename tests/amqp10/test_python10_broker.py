"""The generated AMQP 1.0 Python codec against a real broker: RabbitMQ 3.10 on 127.0.0.1:5672 (guest/guest) with its
rabbitmq_amqp1_0 plugin, which the module enables itself, and Qpid Proton's Python client as a second peer.

On our side everything on the wire is encoded and decoded by the generated package over a plain TCP socket
(amqp10_wire.py); no Proton. When the broker or the plugin is missing, these tests FAIL with a clear message
(never skip). Host, port and credentials can be overridden with AMQP_HOST / AMQP_PORT / AMQP_USER / AMQP_PASSWORD.

RabbitMQ 3.10's plugin addresses a queue as /queue/NAME (declared if absent, not durable, not auto-deleted):
each run uses fresh queue names and deletes them over AMQP 0-9-1 (pika) at the end.
"""

from __future__ import annotations

import os
import random
import time
import uuid
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pika
import proton
import pytest
from amqp10_wire import Amqp10Client, Delivery
from proton.utils import BlockingConnection
from rabbitmq import rabbitmq_plugins

pytestmark = pytest.mark.broker

HOST = os.environ.get("AMQP_HOST", "127.0.0.1")
PORT = int(os.environ.get("AMQP_PORT", "5672"))
USER = os.environ.get("AMQP_USER", "guest")
PASSWORD = os.environ.get("AMQP_PASSWORD", "guest")

COUNT = 1000
PROTON_COUNT = 60
FRAME_MAX = 4096  # what our open offers: every 10th body below is larger, so deliveries split both ways
BIG_EVERY = 10


# -- fixtures ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module", autouse=True)
def amqp10_plugin() -> None:
    """rabbitmq_amqp1_0 enabled (idempotent, ~2 s, no restart: it shares port 5672, told apart by the protocol
    header). It is left enabled: 0-9-1 clients are unaffected, as test_amqp091_on_the_same_port shows."""
    listed = rabbitmq_plugins("list", "-e", "-m")
    if listed.returncode == 0 and "rabbitmq_amqp1_0" in listed.stdout.split():
        return
    proc = rabbitmq_plugins("enable", "rabbitmq_amqp1_0")
    if proc.returncode != 0:
        pytest.fail(f"`rabbitmq-plugins enable rabbitmq_amqp1_0` failed ({proc.returncode}):\n"
                    f"{proc.stdout}\n{proc.stderr}")


def _pika() -> pika.BlockingConnection:
    params = pika.ConnectionParameters(HOST, PORT, credentials=pika.PlainCredentials(USER, PASSWORD),
                                       socket_timeout=10, blocked_connection_timeout=10)
    try:
        return pika.BlockingConnection(params)
    except pika.exceptions.AMQPError as e:
        pytest.fail(f"no AMQP 0-9-1 broker at {HOST}:{PORT} as {USER}: {e!r}")


@pytest.fixture(scope="module")
def queue_name() -> Iterator[Callable[[str], str]]:
    """Fresh queue names for this run; the queues the 1.0 plugin declared for them are deleted at the end."""
    names: list[str] = []

    def make(tag: str) -> str:
        names.append(f"amqgen-10-{tag}-{uuid.uuid4().hex[:12]}")
        return names[-1]

    yield make
    conn = _pika()
    ch = conn.channel()
    for name in names:
        ch.queue_delete(name)
    conn.close()


def queue_depth(name: str) -> int:
    """The queue's ready messages, asked over 0-9-1 (a passive declare)."""
    conn = _pika()
    try:
        return int(conn.channel().queue_declare(name, passive=True).method.message_count)
    finally:
        conn.close()


@pytest.fixture
def client(amqp10: ModuleType) -> Iterator[Callable[..., Amqp10Client]]:
    """Makes connections: through SASL PLAIN, open (our max-frame-size FRAME_MAX) and begin unless told not to.
    Their sockets are closed at the end whatever happened."""
    made: list[Amqp10Client] = []

    def make(*, handshake: bool = True) -> Amqp10Client:
        try:
            c = Amqp10Client(amqp10, HOST, PORT, max_frame_size=FRAME_MAX, timeout=10.0)
        except OSError as e:
            pytest.fail(f"no broker at {HOST}:{PORT}: {e!r}")
        made.append(c)
        if handshake:
            c.connect(USER, PASSWORD, f"amqgen-test-{uuid.uuid4().hex[:8]}")
        return c

    yield make
    for c in made:
        c.sock.close()


def _shutdown(c: Amqp10Client) -> None:
    """Detach every link, end the session, close the connection: each answered by the broker without error."""
    for link in list(c.links.values()):
        reply = c.detach(link)
        assert reply.handle == link.handle, reply
    c.end()
    c.close()


# -- the messages --------------------------------------------------------------------------------------------
def make_message(g: ModuleType, i: int, rng: random.Random) -> Any:
    """Message ``i``: the body cycles Data / AmqpValue / AmqpSequence (every 10th larger than FRAME_MAX, some with
    two sections); application properties of most simple types; properties with a message id of each kind."""
    big = i % BIG_EVERY == 0
    size = rng.randint(FRAME_MAX, 4 * FRAME_MAX) if big else rng.randint(0, 400)
    kind = i % 3
    body: list[Any]
    if kind == 0:
        body = [g.Data(rng.randbytes(size))]
        if i % 9 == 3:
            body.append(g.Data(b"second section"))
    elif kind == 1:
        body = [g.AmqpValue({"i": i, "text": "x" * size, "list": [g.Int(-i), g.UInt(i), g.ULong(i), True, None, 1.5],
                             g.Symbol("sym"): g.Symbol("v"), "bin": bytes(range(i % 256))})]
    else:
        body = [g.AmqpSequence([i, "seq", rng.randbytes(size), [g.UShort(i % 65536), g.Char("é")]])]
        if i % 9 == 2:
            body.append(g.AmqpSequence([g.Timestamp(1_700_000_000_000 + i), uuid.UUID(int=i)]))
    ids = (f"msg-{i:04d}", g.ULong(i), uuid.UUID(int=i + 1), i.to_bytes(4, "big"))
    return g.Message(
        body,
        header=g.Header(durable=i % 2 == 0, priority=i % 10),
        properties=g.Properties(message_id=ids[i % 4], subject=f"subject {i}", content_type="application/x-test",
                                correlation_id=f"corr-{i}"),
        application_properties={
            "index": i,
            "text": f"message {i} ✓ 東京",
            "flag": i % 2 == 0,
            "ratio": i / 7,
            "count": g.UInt(i),
            "big": g.ULong(2**40 + i),
            "neg": g.Int(-i),
            "small": g.Byte(-(i % 128)),
            "when": g.Timestamp(1_700_000_000_000 + i),
            "id": uuid.UUID(int=i),
            "raw": bytes([i % 256, 0, 255]),
            "sym": g.Symbol(f"s{i}"),
            "void": None,
        },
    )


def typed(g: ModuleType, v: Any) -> Any:
    """``v`` with each value tagged by its exact type, so that UInt(1), 1, True and 1.0 compare unequal. Proton's
    types map to the generated package's (proton.ulong is ULong ...); a map compares without its order."""
    kinds: dict[type, str] = {
        bool: "boolean", int: "long", float: "double", str: "string", bytes: "binary", type(None): "null",
        uuid.UUID: "uuid", g.UByte: "ubyte", g.UShort: "ushort", g.UInt: "uint", g.ULong: "ulong", g.Byte: "byte",
        g.Short: "short", g.Int: "int", g.Float: "float", g.Char: "char", g.Timestamp: "timestamp",
        g.Symbol: "symbol", proton.ubyte: "ubyte", proton.ushort: "ushort", proton.uint: "uint",
        proton.ulong: "ulong", proton.byte: "byte", proton.short: "short", proton.int32: "int",
        proton.float32: "float", proton.char: "char", proton.timestamp: "timestamp", proton.symbol: "symbol",
    }
    if isinstance(v, list):
        return ("list", [typed(g, x) for x in v])
    if isinstance(v, dict):
        keys = [typed(g, k) for k in v]  # (tag, value): the value shown with str, as Proton's reprs differ
        return ("map", sorted(((t, str(k)), typed(g, x)) for (t, k), x in zip(keys, v.values(), strict=True)))
    if isinstance(v, memoryview):  # Proton 0.40 hands some binaries over as memoryviews
        return ("binary", bytes(v))
    assert type(v) in kinds, f"no tag for a {type(v).__name__}: {v!r}"
    return (kinds[type(v)], v)


def reverses_sections(peer_open: Any) -> bool:
    """RabbitMQ before 3.11 hands a body of several sections back in reverse order (its plugin keeps the
    fragments as a reversed list; fixed by rabbitmq-server PR #7001, "keep original order of sections")."""
    version = (peer_open.properties or {}).get("version", "")
    major_minor = tuple(int(x) for x in version.split(".")[:2] if x.isdigit())
    return bool(major_minor) and major_minor < (3, 11)


def assert_same_message(g: ModuleType, got: Any, sent: Any, what: str, *, reversed_body: bool = False) -> None:
    """What we sent arrived as sent, compared with exact types; a section or field the broker added is ignored
    (RabbitMQ adds first-acquirer to the header). ``reversed_body``: expect several body sections reversed."""
    body = sent.body[::-1] if reversed_body else sent.body
    assert [type(s) for s in got.body] == [type(s) for s in body], f"{what}: body {got.body!r}"
    assert [typed(g, s.value) for s in got.body] == [typed(g, s.value) for s in body], what
    assert typed(g, got.application_properties) == typed(g, sent.application_properties), what
    for f in ("message_id", "subject", "content_type", "correlation_id"):
        assert typed(g, getattr(got.properties, f)) == typed(g, getattr(sent.properties, f)), f"{what}: {f}"
    assert got.header is not None, what
    assert got.header.durable == sent.header.durable, f"{what}: {got.header!r}"
    assert got.header.priority == sent.header.priority, f"{what}: {got.header!r}"


# -- the tests -----------------------------------------------------------------------------------------------
def test_thousand_messages_round_trip(amqp10: ModuleType, client: Callable[..., Amqp10Client],
                                      queue_name: Callable[[str], str]) -> None:
    """1,000 messages sent on a sender link and received on a receiver link of one session through the same queue:
    mixed settled and unsettled (each unsettled one accepted by the broker), every 10th split over
    several frames both ways, each received once, in order, equal to what was sent, and settled (the queue is
    left empty); then detach, end and close answered in kind."""
    g = amqp10
    rng = random.Random(10)
    messages = [make_message(g, i, rng) for i in range(COUNT)]
    encoded = [m.encode() for m in messages]
    name = queue_name("bulk")
    address = f"/queue/{name}"

    c = client()
    assert c.peer_open.max_frame_size is not None and 512 <= c.peer_open.max_frame_size
    snd = c.attach("amqgen-sender", 0, role=g.Role.SENDER, address=address)
    rcv = c.attach("amqgen-receiver", 1, role=g.Role.RECEIVER, address=address)
    assert snd.attach.role is g.Role.RECEIVER and snd.attach.target.address == address, snd.attach
    assert rcv.attach.role is g.Role.SENDER and rcv.attach.source.address == address, rcv.attach
    c.grant(rcv, 200)

    unsettled: set[int] = set()
    split_sent = 0
    sent = 0
    deadline = time.monotonic() + 40

    def done() -> bool:
        return sent == COUNT and len(c.received) >= COUNT and unsettled <= c.accepted

    while not done():
        assert time.monotonic() < deadline, f"sent {sent}, received {len(c.received)}, accepted {len(c.accepted)}"
        # a batch of transfers within the broker's link credit and session window, then whatever came back,
        # so that neither side's socket buffers fill while the other is not reading
        batch = 0
        while sent < COUNT and batch < 25:
            settled = sent % 3 == 0
            r = c.try_transfer(snd, encoded[sent], settled=settled)
            if r is None:
                break
            delivery_id, frames = r
            if not settled:
                unsettled.add(delivery_id)
            split_sent += frames > 1
            sent += 1
            batch += 1
        c.pump(0 if batch else 0.5)
        c.poll()
        c.settle_received()
        c.top_up(rcv, 200)

    # nothing more arrives (no duplicate): a short quiet spell with credit still open
    end_quiet = time.monotonic() + 0.3
    while time.monotonic() < end_quiet:
        c.pump(0.05)
    c.settle_received()
    _shutdown(c)

    # every unsettled delivery accepted (RabbitMQ's disposition ranges also span the pre-settled ones between)
    assert unsettled <= c.accepted
    assert queue_depth(name) == 0, "messages left in the queue: our dispositions were not all taken"
    assert split_sent == COUNT // BIG_EVERY, "every large message must have gone out over several frames"
    got: list[Delivery] = c.received
    assert len(got) == COUNT, f"{len(got)} deliveries for {COUNT} messages"
    assert sum(d.frames > 1 for d in got) >= COUNT // BIG_EVERY, "the broker's large deliveries came in one frame?"
    assert [d.delivery_id for d in got] == list(range(got[0].delivery_id, got[0].delivery_id + COUNT))
    decoded = [g.Message.decode(d.payload) for d in got]
    ids = [repr(m.properties.message_id) for m in decoded]
    assert len(set(ids)) == COUNT, "a message arrived twice"
    reverse = reverses_sections(c.peer_open)
    for i, (m, sent_m) in enumerate(zip(decoded, messages, strict=True)):
        assert_same_message(g, m, sent_m, f"message {i}", reversed_body=reverse)


def frame_sizes(raw: bytes) -> list[int]:
    """The size of each protocol header (8) and frame in a stream, read from the frame headers alone."""
    sizes: list[int] = []
    pos = 0
    while pos < len(raw):
        sizes.append(8 if raw[pos : pos + 4] == b"AMQP" else int.from_bytes(raw[pos : pos + 4], "big"))
        pos += sizes[-1]
    return sizes


def test_broker_handshake_frames(amqp10: ModuleType, client: Callable[..., Amqp10Client],
                                 queue_name: Callable[[str], str]) -> None:
    """SASL offers PLAIN and accepts guest; the broker's open fits the 512 octets in force before open (2.4.1); its
    SASL and AMQP frames decode the same whether read whole (decode_frames) or incrementally (FrameReader); each
    re-encodes to a value equal to the one read, and where RabbitMQ wrote trailing nulls (begin, attach) our
    canonical encoding is shorter."""
    g = amqp10
    c = client(handshake=False)
    mechs, outcome = c.sasl_plain(USER, PASSWORD)
    assert outcome.code == g.SaslCode.OK
    assert g.Symbol("PLAIN") in mechs.sasl_server_mechanisms
    peer_open = c.open("amqgen-handshake")
    assert peer_open.container_id, peer_open
    c.begin()
    address = f"/queue/{queue_name('probe')}"
    link = c.attach("probe", 0, role=g.Role.RECEIVER, address=address)
    assert link.attach.source.address == address and link.attach.role is g.Role.SENDER, link.attach
    _shutdown(c)

    raw = bytes(c.raw)
    assert g.decode_frames(raw) == c.raw_frames, "the whole-stream decoder and the reader disagree"
    sizes = frame_sizes(raw)
    assert len(sizes) == len(c.raw_frames)
    shorter: list[str] = []
    for f, size in zip(c.raw_frames, sizes, strict=True):
        if not isinstance(f, g.Frame) or f.performative is None:
            continue
        again = g.encode_frame(f.performative, f.channel)
        assert g.decode_frames(again) == [g.Frame(f.type, f.channel, f.performative)], f
        assert len(again) <= size, f
        if len(again) < size:
            shorter.append(f.performative.NAME)
        if isinstance(f.performative, g.Open):
            assert size <= g.MIN_MAX_FRAME_SIZE, f"the broker's open is {size} octets"
    assert {"begin", "attach"} <= set(shorter), f"RabbitMQ's trailing nulls: expected in begin and attach: {shorter}"


def test_generated_sender_to_proton_receiver(amqp10: ModuleType, client: Callable[..., Amqp10Client],
                                             queue_name: Callable[[str], str]) -> None:
    """Messages the generated codec sends (unsettled, each accepted) are received by Proton's BlockingReceiver
    with equal bodies, properties, header and application properties (Proton's types mapped to ours)."""
    g = amqp10
    rng = random.Random(11)
    # one body section per message: Proton's Message holds one
    messages = [make_message(g, i, rng) for i in range(PROTON_COUNT)]
    for m in messages:
        del m.body[1:]
    name = queue_name("to-proton")
    c = client()
    snd = c.attach("amqgen-to-proton", 0, role=g.Role.SENDER, address=f"/queue/{name}")
    unsettled: set[int] = set()
    for m in messages:
        c.wait_for(lambda: c.can_send(snd, 8), "credit")
        r = c.try_transfer(snd, m.encode(), settled=False)
        assert r is not None
        unsettled.add(r[0])
    c.wait_for(lambda: unsettled <= c.accepted, "the broker's accepted dispositions")
    _shutdown(c)
    assert queue_depth(name) == PROTON_COUNT

    conn = BlockingConnection(f"amqp://{USER}:{PASSWORD}@{HOST}:{PORT}", timeout=10)
    try:
        receiver = conn.create_receiver(f"/queue/{name}", credit=PROTON_COUNT)
        for i, sent in enumerate(messages):
            got = receiver.receive(timeout=10)
            receiver.accept()
            what = f"message {i} via Proton"
            section = sent.body[0]
            if isinstance(section, g.Data):  # Proton hands a data section over as its bytes
                assert got.body == section.value and got.inferred, what
            elif isinstance(section, g.AmqpSequence):  # and an amqp-sequence as a list with inferred set
                assert typed(g, got.body) == typed(g, section.value) and got.inferred, what
            else:
                assert typed(g, got.body) == typed(g, section.value) and not got.inferred, what
            assert typed(g, got.properties) == typed(g, sent.application_properties), what
            sent_id = sent.properties.message_id
            # Proton's Message.id hands a ulong message-id over as a plain int (the wire has the ulong)
            assert typed(g, got.id) == typed(g, int(sent_id) if isinstance(sent_id, g.ULong) else sent_id), what
            assert (got.subject, got.content_type, got.correlation_id) == (
                sent.properties.subject, sent.properties.content_type, sent.properties.correlation_id), what
            assert (got.durable, got.priority) == (sent.header.durable, sent.header.priority), what
    finally:
        conn.close()
    assert queue_depth(name) == 0, "Proton's accepts did not empty the queue"


def _proton_message(i: int) -> tuple[proton.Message, str, Any]:
    """Proton's message ``i``, the body section it must arrive as, and its message id (Proton's getter would
    hand a ulong back as an int)."""
    props = {"index": i, "text": f"proton {i} ✓", "flag": i % 2 == 1, "ratio": i / 3, "count": proton.uint(i),
             "big": proton.ulong(2**33 + i), "small": proton.byte(-(i % 100)), "sym": proton.symbol(f"p{i}"),
             "when": proton.timestamp(1_600_000_000_000 + i), "id": uuid.UUID(int=i), "raw": b"\x00\xff", "void": None}
    size = 3 * FRAME_MAX if i % BIG_EVERY == 0 else 50
    kind = i % 3
    body: Any
    if kind == 0:
        body, inferred, section = bytes(range(256)) * (size // 256 + 1), True, "data"
    elif kind == 1:
        body, inferred, section = {"i": i, "s": "v" * size, "l": [proton.uint(i), None, True]}, False, "value"
    else:
        body, inferred, section = [i, "seq", proton.symbol("x"), b"\x01" * size], True, "sequence"
    message_id = proton.ulong(i) if i % 2 else f"proton-{i}"
    msg = proton.Message(body=body, inferred=inferred, id=message_id,
                         subject=f"subject {i}", content_type="text/x-proton", correlation_id=f"c{i}",
                         properties=props, durable=i % 2 == 0, priority=i % 10)
    return msg, section, message_id


def test_proton_sender_to_generated_receiver(amqp10: ModuleType, client: Callable[..., Amqp10Client],
                                            queue_name: Callable[[str], str]) -> None:
    """Messages Proton's BlockingSender sends are received by the generated codec's receiver, reassembled from
    their frames and decoded equal to what Proton sent."""
    g = amqp10
    name = queue_name("from-proton")
    sent = [_proton_message(i) for i in range(PROTON_COUNT)]
    conn = BlockingConnection(f"amqp://{USER}:{PASSWORD}@{HOST}:{PORT}", timeout=10)
    try:
        sender = conn.create_sender(f"/queue/{name}")
        for msg, _, _ in sent:
            sender.send(msg)  # blocks until the broker settles it
    finally:
        conn.close()
    assert queue_depth(name) == PROTON_COUNT

    c = client()
    rcv = c.attach("amqgen-from-proton", 0, role=g.Role.RECEIVER, address=f"/queue/{name}")
    got = c.receive(rcv, PROTON_COUNT)
    _shutdown(c)
    assert len(got) == PROTON_COUNT
    assert queue_depth(name) == 0, "our dispositions did not empty the queue"
    assert any(d.frames > 1 for d in got), "the large messages arrived in one frame?"
    sections = {"data": g.Data, "value": g.AmqpValue, "sequence": g.AmqpSequence}
    for i, (d, (msg, section, message_id)) in enumerate(zip(got, sent, strict=True)):
        m = g.Message.decode(d.payload)
        what = f"Proton's message {i}"
        assert [type(s) for s in m.body] == [sections[section]], f"{what}: {m.body!r}"
        assert typed(g, m.body[0].value) == typed(g, msg.body), what
        assert typed(g, m.application_properties) == typed(g, msg.properties), what
        assert typed(g, m.properties.message_id) == typed(g, message_id), what
        assert (m.properties.subject, m.properties.content_type, m.properties.correlation_id) == (
            msg.subject, msg.content_type, msg.correlation_id), what
        # Proton leaves out a header field at its default, so null means the default: durable false, priority 4
        # (3.2.1; the XML the package is rendered from gives header no defaults, so Header.DEFAULTS is empty)
        durable = False if m.header.durable is None else m.header.durable
        priority = 4 if m.header.priority is None else m.header.priority
        assert (durable, priority) == (msg.durable, msg.priority), what


def test_amqp091_on_the_same_port(queue_name: Callable[[str], str]) -> None:
    """With the 1.0 plugin on, AMQP 0-9-1 still works on port 5672: pika declares a queue, publishes and gets."""
    name = queue_name("091")
    conn = _pika()
    try:
        ch = conn.channel()
        ok = ch.queue_declare(name, auto_delete=True)
        assert ok.method.queue == name
        ch.basic_publish("", name, b"0-9-1 next to 1.0")
        for _ in range(50):  # the publish is asynchronous: poll briefly
            method, _, body = ch.basic_get(name, auto_ack=True)
            if method is not None:
                break
            time.sleep(0.02)
        assert body == b"0-9-1 next to 1.0"
    finally:
        conn.close()
