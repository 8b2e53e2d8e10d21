"""One AMQP 1.0 connection's frames -> rows: frames, messages (deliveries), violations, its connection row.

:class:`session.Connection` reassembles and frames the two directions (:mod:`framing10`) and hands the items here.
The generated package's ``observer.Observer`` (the 1.0 engine's rules, watching both sides) says what each side
broke and what each transfer and disposition meant; this module turns that into rows: a delivery's transfers
assembled into one message row across ``more``, with its outcome and settlement from the dispositions (ranges
resolved by the observer), once it is settled, or at the end of the connection.
"""

from __future__ import annotations

import base64
import hashlib
import operator
import uuid
from collections.abc import Iterable
from typing import Any

from .framing import ProtocolHeader, Skipped
from .framing10 import Frame10
from .records import performative_row, protocol_header_row, to_json

C2S, S2C = "client-to-server", "server-to-client"
_PLAIN = (int, bool, str, float, type(None), bytes, bytearray, memoryview)
#: deliveries held waiting for their settlement, per connection; past this the oldest becomes a row as it stands
_MAX_PENDING = 65536
#: where a message row (records.MESSAGES) holds what a disposition changes
_SETTLED, _OUTCOME = 26, 27


def plain(v: Any) -> Any:
    """A decoded 1.0 value as JSON-ready data: composites as {field: value} of their fields set (a described
    type's name under "type"), arrays as lists, UUIDs as strings; bytes stay bytes (records.to_json spells them)."""
    if isinstance(v, _PLAIN):
        return v
    fields = getattr(v, "FIELDS", None)
    if fields is not None:
        out: dict[str, Any] = {"type": v.NAME}
        for f in fields:
            x = getattr(v, f)
            if x is not None:
                out[f] = plain(x)
        return out
    if isinstance(v, dict):
        return {str(plain(k)) if not isinstance(k, str) else k: plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [plain(x) for x in v]
    if isinstance(v, uuid.UUID):
        return str(v)
    items = getattr(v, "items", None)
    if isinstance(items, list):  # the codec's Array
        return [plain(x) for x in items]
    if hasattr(v, "descriptor") and hasattr(v, "value"):  # a described value of no known type
        return {"descriptor": plain(v.descriptor), "value": plain(v.value)}
    return repr(v)


_b64 = base64.b64encode
_GETTERS: dict[type, tuple[tuple[str, ...], Any]] = {}


def fields_json(p: Any) -> str:
    """A performative's fields set, as a JSON object (one getter per class: this runs for every frame)."""
    got = _GETTERS.get(type(p))
    if got is None:
        names = p.FIELDS
        got = _GETTERS[type(p)] = (names, operator.attrgetter(*names) if len(names) > 1 else
                                   (lambda o, n=names[0]: (getattr(o, n),)))
    names, get = got
    # spelled here for the types most fields hold (the same text to_json gives; a test holds them equal): a
    # dict for to_json and its default() for bytes cost twice as much, on every frame
    parts = []
    for n, v in zip(names, get(p), strict=True):
        if v is None:
            continue
        t = type(v)
        if t is bool:
            parts.append(f'"{n}":{"true" if v else "false"}')
        elif t is int:
            parts.append(f'"{n}":{v}')
        elif t is bytes:
            parts.append(f'"{n}":{{"bytes":"{_b64(v).decode("ascii")}"}}')
        else:
            parts.append(f'"{n}":{to_json(plain(v))}')
    return "{" + ",".join(parts) + "}"


class _Delivery:
    """A delivery being assembled, or waiting for its settlement (slots and a plain __init__: one per message)."""

    __slots__ = ("aborted", "address", "channel", "delivery_id", "digest", "direction", "done", "first", "handle",
                 "link", "meta", "outcome", "parts", "settled", "size", "tag", "transfers")

    def __init__(self, direction: str, channel: int, handle: int, link: str | None, address: str | None,
                 delivery_id: int | None, tag: bytes | None, meta: Any) -> None:
        self.direction, self.channel, self.handle, self.link, self.address = direction, channel, handle, link, address
        self.delivery_id, self.tag, self.meta = delivery_id, tag, meta
        self.settled = self.done = self.aborted = False
        self.transfers = self.size = 0
        self.digest: Any = None  # hashlib's, made at the second transfer (one transfer: hashed in one call)
        self.parts: list[bytes] | None = None
        self.outcome: str | None = None
        self.first: Any = b""  # the first transfer's payload until a second one comes; once done, the hex digest


class Conversation10:
    """The 1.0 side of a :class:`session.Connection`: its items in, rows out into the connection's ``rows``."""

    def __init__(self, conn: Any) -> None:  # a session.Connection (which imports this module)
        codec10 = conn.codec.amqp10
        assert codec10 is not None
        self.conn = conn
        self.codec10 = codec10
        self.observer = codec10.observer.Observer()
        self._transfer_seen = codec10.observer.TransferSeen
        self._settled = codec10.observer.Settled
        self._violation = codec10.observer.Violation
        self._transfer = codec10.transfer
        self.open: dict[tuple[bool, int, int], _Delivery] = {}  # (client sent it, channel, handle)
        self.pending: dict[tuple[bool, int, int], list[Any]] = {}  # (client sent it, channel, delivery id) -> row
        self.headers: list[bytes | None] = [None, None]
        self.opens: list[Any] = [None, None]
        self.close: tuple[str, Any] | None = None  # (who, its error)
        # credit and window verdicts given while the receiver's direction held octets behind a hole (a grant may
        # be among them): (direction index, the frame's meta, the violation), decided once those are read
        self.deferred: list[tuple[int, Any, Any]] = []

    # -- items -------------------------------------------------------------------------------------
    def items(self, d: int, items: Iterable[Frame10 | ProtocolHeader | Skipped]) -> None:
        self._items(d, items)
        if self.deferred:  # after the items: a grant among them counts
            self._decide()

    def _items(self, d: int, items: Iterable[Frame10 | ProtocolHeader | Skipped]) -> None:
        conn = self.conn
        frames = conn.rows.frames
        direction = (C2S, S2C)[d]
        client = d == 0
        files, cid = conn.files, conn.id
        obs = self.observer
        transfer = self._transfer
        for it in items:
            if type(it) is Frame10:
                rank, packet, ts = it.meta
                conn.frame_counts[d] += 1
                f = it.decoded
                if f is None:
                    frames.append(performative_row(files[rank], packet, ts // 1000, cid, direction, it.offset,
                                                   it.channel, "sasl" if it.ftype == 1 else "amqp", it.size - 8, None,
                                                   None, None, f"{it.error_kind}: {it.error}"))
                    self._framing(d, it)
                    continue
                p = f.performative
                if p is None:
                    frames.append(performative_row(files[rank], packet, ts // 1000, cid, direction, it.offset,
                                                   it.channel, "heartbeat", it.size - 8, None, None, None, None))
                else:
                    is_transfer = type(p) is transfer
                    frames.append(performative_row(files[rank], packet, ts // 1000, cid, direction, it.offset,
                                                   it.channel, "sasl" if it.ftype == 1 else "amqp", it.size - 8,
                                                   p.NAME, fields_json(p), len(f.payload) if is_transfer else None,
                                                   None))
                    if p.NAME == "open" and self.opens[d] is None:
                        self.opens[d] = p
                    elif p.NAME == "close" and self.close is None:
                        self.close = (("client", "server")[d], p.error)
                events = obs.frame(client, f, it.size)
                if events:
                    self._events(d, it, f, events)
            elif type(it) is ProtocolHeader:
                rank, packet, ts = it.meta
                frames.append(protocol_header_row(files[rank], packet, ts // 1000, cid, direction, it.offset,
                                                  len(it.header), "1-0"))
                conn.frame_counts[d] += 1
                if self.headers[d] is None:
                    self.headers[d] = it.header
                try:
                    h = self.codec10.frames.ProtocolHeader(it.header[4])
                    if it.header[5:] != b"\x01\x00\x00":
                        raise ValueError(it.header)
                except Exception:  # noqa: BLE001 -- not a 1.0 header: a framing violation
                    self._row(d, None, it.meta, "framing", "amqp:connection:framing-error", "2.2",
                              f"protocol header {it.header.hex()} is not AMQP 1.0's", None)
                    continue
                events = obs.header(client, h)
                if events:
                    self._events(d, it, None, events)
            elif type(it) is Skipped:
                conn.skipped += it.size

    def _framing(self, d: int, it: Frame10) -> None:
        kind = it.error_kind or ""
        name = ("frame-too-large" if kind == "frame-size" else
                "framing" if kind in ("framing", "doff", "frame-type", "truncated", "protocol-header") else
                "not-a-frame" if kind in ("unknown-descriptor", "wrong-type") else "decode")
        obs = self.codec10.observer
        self._row(d, it.channel, it.meta, name, obs.CONDITIONS[name], obs.SECTIONS[name], it.error or "", None)

    def _row(self, d: int, channel: int | None, meta: Any, kind: str, condition: str, section: str | None,
             detail: str, performative: str | None) -> None:
        rank, packet, ts = meta
        conn = self.conn
        conn.rows.violations.append((conn.id, (C2S, S2C)[d], channel, conn.files[rank], packet, ts // 1000, kind,
                                     None, None, section, performative, detail, "1-0", condition))

    def _events(self, d: int, it: Any, f: Any, events: list[Any]) -> None:
        for ev in events:
            t = type(ev)
            if t is self._transfer_seen:
                self._transfer_part(ev, it, f)
            elif t is self._settled:
                self._disposed(ev)
            elif t is self._violation:
                sender = 0 if ev.client else 1
                if ev.count is not None and (self.conn.streams[0].holding or self.conn.streams[1].holding):
                    self.deferred.append((sender, it.meta, ev))
                    continue
                self._row(sender, ev.channel, it.meta, ev.name, ev.condition, ev.section, ev.description,
                          ev.performative)

    def _decide(self, final: bool = False) -> None:
        """The deferred verdicts whose receiver has caught up: a row when no grant read since covers them."""
        keep = []
        for sender, meta, ev in self.deferred:
            if not final and (self.conn.streams[0].holding or self.conn.streams[1].holding):
                keep.append((sender, meta, ev))
            elif self.observer.still_over(ev):
                self._row(sender, ev.channel, meta, ev.name, ev.condition, ev.section, ev.description,
                          ev.performative)
        self.deferred = keep

    # -- deliveries --------------------------------------------------------------------------------
    def _transfer_part(self, ev: Any, it: Frame10, f: Any) -> None:
        key = (ev.client, ev.channel, ev.handle)
        dv = self.open.get(key)
        if ev.first and ev.done and dv is None:  # one transfer, one delivery: the row at once (most messages)
            payload = f.payload
            conn = self.conn
            rank, packet, ts = it.meta
            aborted, did = ev.aborted, ev.delivery_id
            row = [conn.id, C2S if ev.client else S2C, ev.channel, "transfer", None, None, None, None, None, None,
                   len(payload), len(payload), not aborted, hashlib.sha256(payload).hexdigest(),
                   bytes(payload) if conn.options.bodies else None, conn.files[rank], packet, ts // 1000,
                   "1-0", ev.channel, ev.link, ev.handle, ev.address, did,
                   None if ev.tag is None else bytes(ev.tag).hex(), 1, ev.settled, "aborted" if aborted else None]
            if ev.settled or aborted or did is None:
                conn.rows.messages.append(tuple(row))
            else:
                self._wait(ev.client, ev.channel, did, row)
            return
        if ev.first or dv is None:
            if dv is not None:  # a delivery cut short by a new one: it is over as it stands
                self._done(dv)
            dv = self.open[key] = _Delivery(C2S if ev.client else S2C, ev.channel, ev.handle, ev.link, ev.address,
                                            ev.delivery_id, ev.tag, it.meta)
            if self.conn.options.bodies:
                dv.parts = []
        payload = f.payload
        dv.transfers += 1
        if payload:
            dv.size += len(payload)
            if dv.transfers == 1:
                dv.first = payload
            else:
                if dv.digest is None:
                    dv.digest = hashlib.sha256(dv.first)
                dv.digest.update(payload)
            if dv.parts is not None:
                dv.parts.append(bytes(payload))
        dv.settled = ev.settled
        if ev.done:
            del self.open[key]
            dv.done = True
            dv.first = (dv.digest or hashlib.sha256(dv.first)).hexdigest()  # the payload is let go
            dv.digest = None
            dv.aborted = ev.aborted
            if dv.aborted:
                dv.outcome = "aborted"
            row = self._row_of(dv)
            if dv.settled or dv.aborted or dv.delivery_id is None:
                self.conn.rows.messages.append(tuple(row))
            else:
                self._wait(ev.client, ev.channel, dv.delivery_id, row)

    def _done(self, dv: _Delivery) -> None:
        self.conn.rows.messages.append(tuple(self._row_of(dv)))

    def _wait(self, client: bool, channel: int, did: int, row: list[Any]) -> None:
        """A delivery's row waits for the disposition that settles it (or the connection's end)."""
        self.pending[client, channel, did] = row
        if len(self.pending) > _MAX_PENDING:
            self.conn.rows.messages.append(tuple(self.pending.pop(next(iter(self.pending)))))

    def _disposed(self, ev: Any) -> None:
        pk = (ev.client, ev.channel, ev.delivery_id)
        row = self.pending.get(pk)
        if row is None:
            return
        if ev.state is not None:
            row[_OUTCOME] = getattr(ev.state, "NAME", None) or repr(ev.state)
        if ev.settled:
            row[_SETTLED] = True
            del self.pending[pk]
            self.conn.rows.messages.append(tuple(row))

    def _row_of(self, dv: _Delivery) -> list[Any]:
        conn = self.conn
        rank, packet, ts = dv.meta
        body = b"".join(dv.parts) if dv.parts is not None else None
        digest = dv.first if dv.done else (dv.digest or hashlib.sha256(dv.first)).hexdigest()
        return [
            conn.id, dv.direction, dv.channel, "transfer", None, None, None, None, None, None,
            dv.size, dv.size, dv.done and not dv.aborted, digest, body,
            conn.files[rank], packet, ts // 1000,
            "1-0", dv.channel, dv.link, dv.handle, dv.address, dv.delivery_id,
            None if dv.tag is None else bytes(dv.tag).hex(), dv.transfers, dv.settled, dv.outcome,
        ]

    # -- the end -----------------------------------------------------------------------------------
    def finish(self) -> None:
        self._decide(final=True)
        self.observer.end()
        for dv in list(self.open.values()):
            self._done(dv)
        self.open.clear()
        for row in self.pending.values():
            self.conn.rows.messages.append(tuple(row))
        self.pending.clear()

    def connection_row(self) -> tuple[Any, ...]:
        from .conformance import header_text

        conn = self.conn
        c, s = self.opens
        obs = self.observer
        gaps = conn.streams[0].gaps + conn.streams[1].gaps
        gap_bytes = conn.streams[0].gap_bytes + conn.streams[1].gap_bytes

        def get(o: Any, name: str) -> Any:
            return None if o is None else getattr(o, name)

        def least(name: str) -> Any:
            vals = [v for v in (get(c, name), get(s, name)) if v is not None]
            return min(vals) if vals else None

        props = [None if get(o, "properties") is None else to_json(plain(o.properties)) for o in (s, c)]
        closed_by, error = self.close if self.close is not None else (None, None)
        code = obs.sasl_code
        return (
            conn.id, conn.client, conn.server,
            header_text(self.headers[0]) if self.headers[0] else None,
            header_text(self.headers[1]) if self.headers[1] else None,
            props[0], props[1], obs.mechanism, get(c, "hostname"), least("channel_max"), least("max_frame_size"),
            None, (conn.first_ts or 0) // 1000, conn.last_ts // 1000, conn.packets,
            conn.frame_counts[0], conn.frame_counts[1], conn.framers[0].octets, conn.framers[1].octets,
            None, get(error, "description"), closed_by or conn.tcp_end, gaps, gap_bytes, conn.skipped,
            [conn.files[r] for r in conn.file_ranks],
            "1-0", get(c, "container_id"), get(s, "container_id"), get(c, "max_frame_size"),
            get(s, "max_frame_size"), get(c, "idle_time_out"), get(s, "idle_time_out"),
            None if code is None else self.codec10.sasl_codes.get(code, str(code)),
            None if get(error, "condition") is None else str(get(error, "condition")),
        )
