"""One TCP connection, from captured segments to output rows: the stages wired together.

segments (capture order) -> a Reassembler per direction -> a Framer per direction -> the Checker
-> rows of the four datasets (tuples in the column order of :mod:`records`). Plain Python: the
Spark job calls it per connection, and so can a test.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .capture import Segment
from .codec import Codec
from .conformance import C2S, CLIENT, S2C, SERVER, Checker, Message, header_text
from .framing import Frame, Framer, ProtocolHeader, Skipped
from .framing10 import Framer10
from .packets import TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN
from .protocol import AMQP0, AMQP10, TLS, classify, sniff
from .reassembly import DEFAULT_WINDOW, Data, Meta, Reassembler
from .records import FrameRow, frame_row, header_row, method_row, protocol_header_row, to_json

#: Frames larger than this are taken as a lost frame boundary rather than buffered (16 MiB is far
#: above any frame_max a broker accepts; RabbitMQ caps it at 128 KiB by default).
DEFAULT_MAX_FRAME = 16 * 1024 * 1024


@dataclass(frozen=True)
class Options:
    ports: frozenset[int] = frozenset((5672,))
    policy: str = "rabbitmq"
    bodies: bool = False
    window: int = DEFAULT_WINDOW
    max_frame: int = DEFAULT_MAX_FRAME


class Rows:
    """Output rows of the four datasets."""

    def __init__(self) -> None:
        self.frames: list[tuple[Any, ...]] = []
        self.messages: list[tuple[Any, ...]] = []
        self.connections: list[tuple[Any, ...]] = []
        self.violations: list[tuple[Any, ...]] = []

    def __len__(self) -> int:
        return len(self.frames) + len(self.messages) + len(self.connections) + len(self.violations)


def _port(endpoint: str) -> int:
    return int(endpoint.rpartition(":")[2])


class Connection:
    """Both directions of one TCP connection. Feed it segments in capture order, then ``finish``."""

    def __init__(self, codec: Codec, options: Options, files: Sequence[str], rows: Rows) -> None:
        self.codec = codec
        self.options = options
        self.files = files
        self.rows = rows
        self.client: str | None = None
        self.server: str | None = None
        self.amqp: bool | None = None  # None: not decided yet (a port we were not told about)
        self._held: list[Segment] = []
        self._syn_from: str | None = None
        self.checker = Checker(codec, options.policy, options.bodies)
        self.streams = (Reassembler(options.window), Reassembler(options.window))
        self.framers: tuple[Framer, Framer] | tuple[Framer10, Framer10] = (Framer(codec, options.max_frame),
                                                                            Framer(codec, options.max_frame))
        self.frame_counts = [0, 0]
        self.packets = 0
        self.first_ts: int | None = None
        self.last_ts = 0
        self.last_meta: Meta = (0, 0, 0)
        self.file_ranks: list[int] = []
        self.client_header: bytes | None = None
        self.server_header: bytes | None = None
        self.tcp_end: str | None = None
        self.skipped = 0
        self.id = ""
        self._method_frame = codec.frames.MethodFrame
        self._header_frame = codec.frames.HeaderFrame
        self._open_properties: dict[int, tuple[Any, str]] = {}  # id(properties) -> (properties, JSON)
        #: the connection's protocol: None until its first payload says (protocol.classify); the 0-x family is
        #: named by its header's version (else the spec's), 1.0 "1-0", an encrypted connection "tls"
        self.family: str | None = None
        self.conv10: Any = None  # session10.Conversation10 for a 1.0 connection
        self.opaque = False  # counted, not decoded: TLS, or 1.0 without a 1.0 codec
        self._head = b""  # the client's first octets, until they name the family
        self._early: list[Segment] = []  # segments waiting for the family
        self.tls_octets = [0, 0]

    # -- which side is which, and is it AMQP at all ------------------------------------------
    def segment(self, seg: Segment) -> None:
        if self.amqp is False:
            return
        if self.amqp is None and not self._decide(seg):
            self._held.append(seg)
            return
        self._feed(seg)

    def _decide(self, seg: Segment) -> bool:
        ports = self.options.ports
        if seg.flags & TCP_SYN and not seg.flags & TCP_ACK:
            self._syn_from = seg.src
        listed_dst, listed_src = _port(seg.dst) in ports, _port(seg.src) in ports
        if listed_dst != listed_src:
            self._roles(seg.dst if listed_dst else seg.src, seg)
        elif seg.payload:
            # not on a port we were told about: AMQP if the first octets are a protocol header
            if not seg.payload.startswith(self.codec.protocol_header[:4]):
                self.amqp = False
                self._held.clear()
                return False
            client = self._syn_from or seg.src
            self._roles(seg.dst if client == seg.src else seg.src, seg)
        else:
            return False
        held, self._held = self._held, []
        for s in held:
            self._feed(s)
        return True

    def _roles(self, server: str, seg: Segment) -> None:
        self.server = server
        self.client = seg.src if seg.dst == server else seg.dst
        self.id = f"{self.client}>{self.server}"
        self.amqp = True

    # -- data --------------------------------------------------------------------------------
    def _family_known(self, seg: Segment) -> bool:
        """Whether the connection's protocol is known once ``seg`` (with a payload) is taken: from the client's
        first 8 octets (its protocol header, which may come an octet at a time), else (a capture that began
        mid-way, or the server spoke first) the shape of a frame header."""
        if seg.src == self.client:
            self._head += seg.payload
            head = self._head
            if len(head) < 8 and head == b"AMQP"[:len(head)] + head[4:] and len(self._early) < 64:
                return False  # a header still arriving: the segments wait (at most 64 of them)
            self._family(head, True)
        else:
            self._family(seg.payload, False)
        return True

    def _family(self, first: bytes, from_client: bool) -> None:
        got = classify(first) if from_client else None
        family = got[0] if got is not None else (sniff(first) or AMQP0)
        if family == AMQP10 and self.codec.amqp10 is None:
            self.family, self.opaque = "1-0", True  # no 1.0 codec (the file set is not installed): counted
            return
        if family == AMQP0:
            version = got[1] if got is not None else None
            self.family = version if version in ("0-8", "0-9", "0-9-1") else self.codec.facts.family
        elif family == AMQP10:
            from .session10 import Conversation10

            self.family = "1-0"
            self.framers = (Framer10(self.codec.amqp10, self.options.max_frame),
                            Framer10(self.codec.amqp10, self.options.max_frame))
            self.conv10 = Conversation10(self)
            self._items = self.conv10.items  # type: ignore[method-assign]
        else:
            self.family, self.opaque = TLS, True

    def _feed(self, seg: Segment) -> None:
        if self.family is None and (seg.payload or self._early):
            if not seg.payload or not self._family_known(seg):
                self._early.append(seg)
                return
            early, self._early = self._early, []
            for s in early:
                self._taken(s)
        self._taken(seg)

    def _taken(self, seg: Segment) -> None:
        meta: Meta = (seg.file_rank, seg.packet, seg.ts)
        self.packets += 1
        if self.first_ts is None:
            self.first_ts = seg.ts
        self.last_ts = max(self.last_ts, seg.ts)
        self.last_meta = meta
        if seg.file_rank not in self.file_ranks:
            self.file_ranks.append(seg.file_rank)
        if seg.flags & (TCP_FIN | TCP_RST) and self.tcp_end is None:
            self.tcp_end = "tcp-rst" if seg.flags & TCP_RST else "tcp-fin"
        d = CLIENT if seg.src == self.client else SERVER
        if self.opaque:  # encrypted, or no codec for it: counted, not decoded
            self.tls_octets[d] += len(seg.payload)
            return
        for ev in self.streams[d].feed(seg.seq, seg.flags, seg.payload, seg.missing, meta):
            items = self.framers[d].data(ev.data, ev.meta) if isinstance(ev, Data) else self.framers[d].gap(ev.size, ev.meta)
            self._items(d, items)
        if self.checker.messages or self.checker.violations:
            self._drain()

    def _items(self, d: int, items: Iterable[Any]) -> None:
        frames = self.rows.frames
        checker = self.checker
        direction = (C2S, S2C)[d]
        names = self.codec.frame_names
        files = self.files
        cid = self.id
        method_frame, header_frame = self._method_frame, self._header_frame
        family = self.family or self.codec.facts.family
        for it in items:
            if type(it) is Frame:
                rank, packet, ts = it.meta
                dec = it.decoded
                row: FrameRow
                error = None if it.error is None else f"{it.error_kind}: {it.error}"
                if dec is None:
                    row = frame_row(files[rank], packet, ts // 1000, cid, direction, it.offset, it.channel,
                                    names.get(it.ftype, str(it.ftype)), it.size, error, family)
                elif type(dec) is method_frame:
                    m = dec[1]
                    row = method_row(files[rank], packet, ts // 1000, cid, direction, it.offset, it.channel, it.size,
                                     m.CLASS_ID, m.METHOD_ID, m.NAME, arguments_json(m), error, family)
                elif type(dec) is header_frame:
                    row = header_row(files[rank], packet, ts // 1000, cid, direction, it.offset, it.channel, it.size,
                                     dec[1], self.codec.class_names.get(dec[1]), dec[2],
                                     self._properties_json(dec[1], dec[3], it.raw), error, family)
                else:
                    row = frame_row(files[rank], packet, ts // 1000, cid, direction, it.offset, it.channel,
                                    names.get(it.ftype, str(it.ftype)), it.size, error, family)
                frames.append(row)
                self.frame_counts[d] += 1
                checker.frame(d, it)
            elif type(it) is ProtocolHeader:
                rank, packet, ts = it.meta
                frames.append(protocol_header_row(files[rank], packet, ts // 1000, cid, direction, it.offset,
                                                  len(it.header), family))
                if d == CLIENT:
                    self.client_header = self.client_header or it.header
                else:
                    self.server_header = self.server_header or it.header
                self.frame_counts[d] += 1
                checker.protocol_header(d, it.header, it.meta)
            elif type(it) is Skipped:
                self.skipped += it.size

    def _properties_json(self, class_id: int, props: Any, raw: bytes | None) -> str:
        """A header's properties as JSON: the same octets give the same JSON, so it is looked up by
        them (publishers repeat their properties); the message row of the same header finds it by
        the properties object."""
        cache = self.codec.properties_json  # per codec and class: the octets mean what its property list says
        text = cache.get((class_id, raw)) if raw is not None else None
        if text is None:
            text = to_json(_props(props))
            if raw is not None:
                if len(cache) >= _CACHE_SIZE:
                    cache.clear()
                cache[class_id, raw] = text
        if len(self._open_properties) >= _CACHE_SIZE:
            self._open_properties.clear()
        self._open_properties[id(props)] = (props, text)
        return text

    def _drain(self) -> None:
        """Rows for the messages and violations the checker has finished with, so that a long
        connection holds only the contents still open, not every message it carried."""
        files, cid, rows = self.files, self.id, self.rows
        bodies = self.options.bodies
        opened = self._open_properties
        for msg in self.checker.messages:
            props = msg.content.properties
            known = opened.pop(id(props), None) if props is not None else None
            text = known[1] if known is not None and known[0] is props else None
            rows.messages.append(_message_row(msg, files, cid, bodies, text, self.family))
        self.checker.messages.clear()
        for v in self.checker.violations:
            rank, packet, ts = v.meta
            rows.violations.append((cid, v.direction, v.channel, files[rank], packet, ts // 1000, v.kind,
                                    v.reply_code, v.reply_name, v.rule, v.method, v.detail, self.family, None))
        self.checker.violations.clear()

    # -- the end -----------------------------------------------------------------------------
    def finish(self) -> None:
        if not self.amqp:
            return
        if self.family is None and self._early:  # a header cut short: what there is decides
            self._family(self._head, True)
            early, self._early = self._early, []
            for s in early:
                self._taken(s)
        if self.family is None:
            self.family = self.codec.facts.family  # no payload at all: a 0-x connection as far as anyone can tell
        if self.opaque:
            self._emit_tls()
            return
        for d in (CLIENT, SERVER):
            for ev in self.streams[d].flush():
                items = self.framers[d].data(ev.data, ev.meta) if isinstance(ev, Data) else self.framers[d].gap(ev.size, ev.meta)
                self._items(d, items)
            self._items(d, self.framers[d].end(self.last_meta))
        if self.conv10 is not None:
            self.conv10.finish()
            self.rows.connections.append(self.conv10.connection_row())
            return
        self.checker.end()
        self._emit()

    def _emit_tls(self) -> None:
        files, cid = self.files, self.id
        self.rows.connections.append((
            cid, self.client, self.server, None, None, None, None, None, None, None, None, None,
            (self.first_ts or 0) // 1000, self.last_ts // 1000, self.packets, None, None,
            self.tls_octets[0], self.tls_octets[1], None, None, self.tcp_end, None, None, None,
            [files[r] for r in self.file_ranks], self.family, *([None] * 8),
        ))

    def _emit(self) -> None:
        self._drain()
        files, cid, rows = self.files, self.id, self.rows
        s = self.checker.state
        gaps = self.streams[0].gaps + self.streams[1].gaps
        gap_bytes = self.streams[0].gap_bytes + self.streams[1].gap_bytes
        rows.connections.append((
            cid, self.client, self.server,
            header_text(self.client_header) if self.client_header else None,
            header_text(self.server_header) if self.server_header else None,
            None if s.server_properties is None else to_json(s.server_properties),
            None if s.client_properties is None else to_json(s.client_properties),
            s.mechanism, s.virtual_host, s.channel_max, s.frame_max, s.heartbeat,
            (self.first_ts or 0) // 1000, self.last_ts // 1000, self.packets,
            self.frame_counts[0], self.frame_counts[1], self.framers[0].octets, self.framers[1].octets,
            s.close_code, s.close_text, s.closed_by or self.tcp_end, gaps, gap_bytes, self.skipped,
            [files[r] for r in self.file_ranks], self.family, *([None] * 8),
        ))


def _props(props: Any) -> dict[str, Any]:
    return {f: v for f in props.FIELDS if (v := getattr(props, f)) is not None}


_CACHE_SIZE = 4096
_ARGUMENTS: dict[type, Callable[[Any], str]] = {}


def arguments_json(m: Any) -> str:
    """A method's arguments as a JSON object, by the codec's field names (one getter per class)."""
    encode = _ARGUMENTS.get(type(m))
    if encode is None:
        encode = _ARGUMENTS[type(m)] = _arguments_encoder(type(m).FIELDS)
    return encode(m)


def _arguments_encoder(fields: tuple[str, ...]) -> Callable[[Any], str]:
    if not fields:
        return lambda m: "{}"
    get = operator.attrgetter(*fields)
    if len(fields) == 1:
        return lambda m: to_json({fields[0]: get(m)})
    return lambda m: to_json(dict(zip(fields, get(m), strict=True)))


def _arg(m: Any, name: str) -> Any:
    return getattr(m, name) if name in m.FIELDS else None


def _message_row(msg: Message, files: Sequence[str], cid: str, bodies: bool, properties: str | None,
                 family: str | None) -> tuple[Any, ...]:
    c = msg.content
    if properties is None and c.properties is not None:
        properties = to_json(_props(c.properties))
    m = c.method
    rank, packet, ts = c.meta
    return (
        cid, msg.direction, msg.channel, m.NAME, _arg(m, "exchange"), _arg(m, "routing_key"), _arg(m, "delivery_tag"),
        _arg(m, "consumer_tag"), c.class_name, properties,
        c.body_size, c.received, msg.complete, c.digest.hexdigest(),
        b"".join(c.parts) if bodies and c.parts is not None else None,
        files[rank], packet, ts // 1000, family, *_NO_10,
    )


_NO_10 = (None,) * 9  # the 1.0 columns of a message row


def connection_key(seg: Segment) -> str:
    """The same key for both directions of a TCP connection."""
    return f"{seg.src}|{seg.dst}" if seg.src < seg.dst else f"{seg.dst}|{seg.src}"


def decode_sorted(codec: Codec, options: Options, files: Sequence[str], keyed: Iterable[tuple[str, Segment]],
                  rows: Rows, flush_at: int = 0) -> Iterable[Rows]:
    """Run connections over segments grouped by key and in capture order within a key (what the
    Spark job's sort gives); yield ``rows`` whenever it holds ``flush_at`` rows or more (0: only at
    the end), for the caller to drain."""
    current: str | None = None
    conn: Connection | None = None
    for key, seg in keyed:
        if key != current:
            if conn is not None:
                conn.finish()
            current = key
            conn = Connection(codec, options, files, rows)
        assert conn is not None
        conn.segment(seg)
        if flush_at and len(rows.frames) >= flush_at:  # frames outnumber the other rows by far
            yield rows
    if conn is not None:
        conn.finish()
    yield rows


def decode_segments(codec: Codec, options: Options, files: Sequence[str], segments: Iterable[Segment]) -> Rows:
    """Everything in memory, without Spark: sort, then decode (for tests and small tools)."""
    keyed = sorted(((connection_key(s), s) for s in segments), key=lambda ks: (ks[0], ks[1].file_rank, ks[1].packet))
    rows = Rows()
    for _ in decode_sorted(codec, options, files, keyed, rows):
        pass
    return rows
