"""Random AMQP 1.0 conversations between our engine's two roles in memory, checked as they run (issue 35).

``Conversation`` sets up a client and a server (SASL or not, the frame sizes and windows given), one session and
two links (client to server and back), then ``run`` plays a list of operations: credit grants with drain and echo,
sends (pre-settled or not, over many frames, left open with ``more`` and aborted), dispositions with each outcome
from either end, partial deliveries of the bytes on the wire, detach / end / close with and without an error, EOF.
An operation this end may not do now raises ``LocalProtocolError``, which must leave nothing written.

The checks come from the spec, not from the engine: every delivery arrives whole, in order, with its tag and
settlement (or as aborted); every outcome reaches the sender of an unsettled delivery once; no event follows the
connection's end; after every step no credit or window is negative, and whenever the wire is empty both ends
agree on each link's delivery-count and credit (2.6.7) and on which deliveries are unsettled (2.6.12).

``mutate`` replays the bytes one end received in a recorded conversation, flipped, cut or grown, into a fresh
engine of that role with the same local operations at the same points: only ``LocalProtocolError`` (from the
local operations) may escape, and no event follows the connection's end.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

#: the conditions of the violations replays reported (scripts/soak-amqp10-engine prints them)
VIOLATIONS: Counter[str] = Counter()
SPEC_10 = Path("/usr/share/amqp/specs/1-0")
OUTCOMES = ("Accepted", "Rejected", "Released", "Modified")


@dataclass
class Side:
    name: str  # "c" or "s"
    engine: Any
    channel: int = -1
    send_handle: int = -1  # this end's sending link
    recv_handle: int = -1  # this end's receiving link
    inbox: bytearray = field(default_factory=bytearray)  # bytes on the wire towards this end
    received: list[bytes] = field(default_factory=list)  # what this end was fed, in order (for ``mutate``)
    ended: bool = False  # the connection's end was reported
    events: list[Any] = field(default_factory=list)


class Conversation:
    def __init__(self, eng: ModuleType, amqp10: ModuleType, *, client_frame: int = 512, server_frame: int = 512,
                 window: int = 2048, sasl: bool = True) -> None:
        self.eng, self.amqp10 = eng, amqp10
        self.c = Side("c", eng.Engine(client=True, sasl=("PLAIN", "u", "p") if sasl else None,
                                      max_frame_size=client_frame, incoming_window=window))
        self.s = Side("s", eng.Engine(client=False, mechanisms=("PLAIN",) if sasl else (),
                                      authenticate=lambda m, r: "u", max_frame_size=server_frame,
                                      incoming_window=window))
        self.script: list[tuple[str, int, str, tuple[Any, ...]]] = []  # (side, offset fed so far, request, args)
        # what each sender sent and each receiver must see: per direction, in order
        self.expect: dict[str, list[tuple[int, bytes, bytes, bool, bool]]] = {"c": [], "s": []}
        self.unsettled: dict[str, dict[int, bytes]] = {"c": {}, "s": {}}  # by the sender: id -> tag
        self.outcomes: dict[str, dict[int, list[str]]] = {"c": {}, "s": {}}  # by the receiver: id -> outcomes
        self.open_delivery: dict[str, tuple[int, bytes, bytes, bool] | None] = {"c": None, "s": None}
        self.size = 0
        self.refused = False  # the last request was refused
        self.gone: dict[str, bool] = {"c": False, "s": False}  # by the sender: its link was detached

    def peer(self, x: Side) -> Side:
        return self.s if x is self.c else self.c

    # ---------------------------------------------------------------- the plumbing
    def request(self, x: Side, name: str, *args: Any, **kw: Any) -> Any:
        """A request to one end, recorded for ``mutate``; refused ones must write nothing."""
        e = x.engine
        before = list(e._out)
        self.script.append((x.name, sum(map(len, x.received)), name, (args, kw)))
        self.refused = False
        try:
            return getattr(e, name)(*args, **kw)
        except self.eng.LocalProtocolError:
            assert e._out == before, f"{name} refused but wrote {e._out[len(before):]}"
            self.refused = True
            return None

    def move(self, to: Side, limit: int | None = None) -> None:
        """Moves what the other end wrote onto the wire, then up to ``limit`` octets of the wire into ``to``."""
        src = self.peer(to)
        to.inbox += src.engine.data_to_send()
        if src.engine.eof or to.engine.eof:
            to.inbox.clear()  # nobody reads a stream that has ended
            return
        n = len(to.inbox) if limit is None else min(limit, len(to.inbox))
        if n == 0:
            return
        chunk = bytes(to.inbox[:n])
        del to.inbox[:n]
        to.received.append(chunk)
        to.engine.receive_data(chunk)
        self.collect(to)

    def eof(self, x: Side) -> None:
        if not x.engine.eof:
            x.received.append(b"")
            x.engine.receive_data(b"")
            self.collect(x)

    def settle_wire(self) -> None:
        for _ in range(400):
            a, b = self.c.engine._out or self.s.inbox, self.s.engine._out or self.c.inbox
            if not a and not b:
                return
            self.move(self.s)
            self.move(self.c)
        raise AssertionError("the two ends never went quiet")

    def collect(self, x: Side) -> None:
        eng = self.eng
        while (ev := x.engine.next_event()) is not None:
            assert not x.ended, f"{x.name}: {ev} after the connection's end"
            x.events.append(ev)
            assert not isinstance(ev, eng.ProtocolViolation), f"{x.name}: a violation in a legal conversation: {ev}"
            if isinstance(ev, eng.ConnectionClosed) or isinstance(ev, eng.Authenticated) and ev.code != 0:
                x.ended = True
            elif isinstance(ev, eng.Delivered):
                self.delivered(x, ev)
            elif isinstance(ev, eng.Settled):
                self.settled(x, ev)
            elif isinstance(ev, eng.LinkDetached):
                self.gone[x.name if ev.handle == x.send_handle else self.peer(x).name] = True
        self.check(x)

    # ---------------------------------------------------------------- what each end must see
    def delivered(self, x: Side, ev: Any) -> None:
        want = self.expect[self.peer(x).name]
        assert want, f"{x.name}: a delivery nobody sent: {ev}"
        did, tag, payload, settled, aborted = want.pop(0)
        assert (ev.delivery_id, ev.tag, ev.settled, ev.aborted) == (did, tag, settled, aborted), (ev, want)
        assert aborted or ev.payload == payload, f"{x.name}: delivery {did}: payload differs"
        assert ev.handle == x.recv_handle

    def settled(self, x: Side, ev: Any) -> None:
        if ev.handle == x.send_handle:  # a receiver's outcome for what this end sent
            held = self.unsettled[x.name]
            assert ev.delivery_id in held and held[ev.delivery_id] == ev.tag, (x.name, ev, held)
            chosen = self.outcomes[self.peer(x).name].get(ev.delivery_id) or ["nothing"]
            assert chosen.pop(0) == type(ev.state).__name__, (x.name, ev, chosen)
            if ev.settled:
                del held[ev.delivery_id]
        else:  # the sender settled what this end received
            assert ev.handle == x.recv_handle, (x.name, ev)

    def check(self, x: Side) -> None:
        """After every step: nothing negative; whenever the wire is empty both ends agree (2.6.7, 2.6.12)."""
        e = x.engine
        for s in e._sessions.values():
            assert s.incoming_window >= 0 and s.remote_incoming_window >= 0, (x.name, s)
            for link in s.links.values():
                assert link.credit >= 0 and 0 <= link.delivery_count < 1 << 32, (x.name, link)

    def agree(self) -> None:
        c, s = self.c.engine, self.s.engine
        if c.closed or s.closed or self.c.ended or self.s.ended:
            return
        for a, b in ((self.c, self.s), (self.s, self.c)):
            sa = a.engine._sessions.get(a.channel)
            sb = b.engine._sessions.get(b.channel)
            if sa is None or sb is None or sa.end_sent or sb.end_sent:
                continue
            if self.gone[a.name]:  # once detached at both ends, neither holds the link's deliveries
                if a.send_handle not in sa.links and b.recv_handle not in sb.links:
                    assert not sa.unsettled and not sb.received, (a.name, sa.unsettled, sb.received)
                    self.unsettled[a.name].clear()
                continue
            cont = self.open_delivery[a.name]
            going = {cont[0]} if cont is not None else set()  # sent with more: not received whole yet
            assert set(sa.unsettled) - going == set(sb.received) == set(self.unsettled[a.name]) - going, (
                a.name, sa.unsettled, sb.received, self.unsettled[a.name])
            snd, rcv = sa.links.get(a.send_handle), sb.links.get(b.recv_handle)
            if snd is None or rcv is None or snd.detached or rcv.detached:
                continue
            assert (snd.delivery_count, snd.credit) == (rcv.delivery_count, rcv.credit), (a.name, snd, rcv)
            assert sa.next_outgoing_id == sb.next_incoming_id, (a.name, sa, sb)

    # ---------------------------------------------------------------- set-up and the operations
    def start(self) -> None:
        eng, c, s = self.eng, self.c, self.s
        self.settle_wire()
        self.request(c, "open")
        self.request(s, "open")
        self.settle_wire()
        c.channel = self.request(c, "begin")
        self.settle_wire()
        s.channel = next(ev.channel for ev in s.events if isinstance(ev, eng.SessionBegun))
        self.request(s, "begin", answer=s.channel)
        c.send_handle = self.request(c, "attach", c.channel, "c2s", eng.SENDER, "src", "q")
        c.recv_handle = self.request(c, "attach", c.channel, "s2c", eng.RECEIVER, "q", "dst")
        self.settle_wire()
        attached = [ev for ev in s.events if isinstance(ev, eng.LinkAttached)]
        s.recv_handle = self.request(s, "attach", s.channel, "c2s", eng.RECEIVER, "src", "q",
                                     answer=attached[0].handle)
        s.send_handle = self.request(s, "attach", s.channel, "s2c", eng.SENDER, "q", "dst",
                                     answer=attached[1].handle)
        self.settle_wire()
        self.agree()

    def op(self, op: tuple[Any, ...]) -> bool:
        """Plays one operation; False when the connection is over."""
        kind, who = op[0], self.c if op[1] == 0 else self.s
        other = self.peer(who)
        e = who.engine
        if kind == "credit":  # who's receiving link grants op[2], maybe draining, maybe asking for an echo
            self.request(who, "flow", who.channel, who.recv_handle, op[2], drain=op[3], echo=op[4])
        elif kind == "send":  # op: size, settled, more
            size, settled, more = op[2], op[3], op[4]
            payload = bytes((self.size + i) % 251 for i in range(size))
            self.size += 1
            tag = b"t%d" % self.size
            cont = self.open_delivery[who.name]
            did = self.request(who, "send", who.channel, who.send_handle, payload, tag, settled=settled, more=more)
            if not self.refused:
                if cont is not None:
                    _, tag, payload0, settled = cont
                    payload = payload0 + payload
                link = e._sessions[who.channel].links[who.send_handle]
                settled = settled or link.snd_settle_mode == 1
                if more:
                    self.open_delivery[who.name] = (did, tag, payload, settled)
                else:
                    self.open_delivery[who.name] = None
                    self.expect[who.name].append((did, tag, payload, settled, False))
                if cont is None and not settled:
                    self.unsettled[who.name][did] = tag
        elif kind == "abort":
            cont = self.open_delivery[who.name]
            self.request(who, "abort", who.channel, who.send_handle)
            if not self.refused:
                assert cont is not None
                did, tag, _, settled = cont
                self.open_delivery[who.name] = None
                self.expect[who.name].append((did, tag, b"", settled, True))
                self.unsettled[who.name].pop(did, None)
        elif kind == "drained":
            s = e._sessions.get(who.channel)
            link = s.links.get(who.send_handle) if s else None
            if link is not None and link.drain and not link.detached and link.outgoing is None:
                self.request(who, "drained", who.channel, who.send_handle)
        elif kind == "dispose":  # who's receiver settles (or just states) a range of what it holds
            s = e._sessions.get(who.channel)
            held = sorted(s.received) if s else []
            if held:
                first = held[op[2] % len(held)]
                last = held[min(len(held) - 1, op[2] % len(held) + op[3])]
                outcome = OUTCOMES[op[4]]
                settled = op[5]
                self.request(who, "settle", who.channel, first, last, getattr(self.amqp10, outcome)(),
                             settled=settled)
                if not self.refused:
                    for d in held:
                        if first <= d <= last:
                            self.outcomes[who.name].setdefault(d, []).append(outcome)
        elif kind == "sender-settle":  # who's sender settles one delivery it holds, without an outcome
            cont = self.open_delivery[who.name]
            held = sorted(set(self.unsettled[who.name]) - ({cont[0]} if cont else set()))
            if held:
                d = held[op[2] % len(held)]
                self.request(who, "settle", who.channel, d, None, self.amqp10.Accepted(), role=self.eng.SENDER)
                if not self.refused:
                    del self.unsettled[who.name][d]
        elif kind == "wire":  # op[2] octets of the wire towards ``who``
            self.move(who, op[2])
        elif kind == "flush":
            self.settle_wire()
            self.agree()
        elif kind == "tick":
            self.request(who, "tick", float(op[2]))
        elif kind == "detach":
            h = who.send_handle if op[2] else who.recv_handle
            self.request(who, "detach", who.channel, h, **self.error(op[3]))
            if not self.refused:
                self.gone[who.name if op[2] else other.name] = True
        elif kind == "end":
            self.request(who, "end", who.channel, **self.error(op[2]))
        elif kind == "close":
            self.request(who, "close", **self.error(op[2]))
            self.settle_wire()
            return False
        elif kind == "eof":
            self.settle_wire() if op[2] else None
            self.eof(who)
            self.move(other)
            self.eof(other)
            return False
        if kind in ("credit", "send") and len(op) > 5 and op[5]:  # and the wire moved at once
            self.settle_wire()
            self.agree()
        return True

    @staticmethod
    def error(with_error: bool) -> dict[str, str]:
        return {"condition": "amqp:internal-error", "description": "h4 test"} if with_error else {}

    def finish(self) -> None:
        """The end: both ends see the connection end, then EOF, and nothing after."""
        self.settle_wire()
        if not self.c.engine.closed and not self.c.engine.eof:
            self.request(self.c, "close")
        self.settle_wire()
        for x in (self.c, self.s):
            self.eof(x)
            assert x.ended, f"{x.name}: the connection ended without ConnectionClosed"


def run(eng: ModuleType, amqp10: ModuleType, ops: list[tuple[Any, ...]], **kw: Any) -> Conversation:
    conv = Conversation(eng, amqp10, **kw)
    conv.start()
    for op in ops:
        if not conv.op(op):
            break
    conv.finish()
    return conv


def replay(eng: ModuleType, conv: Conversation, who: str, stream: bytes, cuts: list[int]) -> Any:
    """Feeds ``stream`` (bytes towards ``who``, maybe mutated) to a fresh engine of that role in pieces cut at
    ``cuts``, doing the recorded requests of that end at the same offsets. Returns the engine."""
    x = conv.c if who == "c" else conv.s
    e = eng.Engine(client=x.engine.client, sasl=x.engine.sasl, mechanisms=x.engine.mechanisms,
                   authenticate=x.engine.authenticate, max_frame_size=x.engine.local_max_frame_size,
                   incoming_window=x.engine.incoming_window)
    script = [(at, name, args) for side, at, name, args in conv.script if side == who]
    conditions = spec_conditions()
    ended = False
    pos = 0
    points = sorted({0, *cuts, len(stream), *(at for at, _, _ in script)})
    for stop in points:
        if stop > pos and stream[pos:stop]:  # (offsets past a truncated stream: nothing more to feed)
            e.receive_data(stream[pos:stop])
            pos = stop
        ended = drain(eng, e, ended, conditions)
        while script and script[0][0] <= pos:
            _, name, (args, kw) = script.pop(0)
            before = list(e._out)
            try:
                getattr(e, name)(*args, **kw)
            except eng.LocalProtocolError:
                assert e._out == before, f"{name} refused but wrote"
            ended = drain(eng, e, ended, conditions)
        e.data_to_send()
    if not e.eof:
        e.receive_data(b"")
    drain(eng, e, ended, conditions)
    return e


def spec_conditions() -> set[str]:
    """Every error condition the 1.0 XML names (2.8.15-2.8.18), read here with ElementTree, not via amqgen."""
    root = ET.parse(SPEC_10 / "transport.bare.xml").getroot()
    kinds = ("amqp-error", "connection-error", "session-error", "link-error")
    ns = "{http://www.amqp.org/schema/amqp.xsd}"
    return {c.get("value", "") for t in root.iter(ns + "type") if t.get("name") in kinds
            for c in t.iter(ns + "choice")}


def drain(eng: ModuleType, e: Any, ended: bool, conditions: set[str]) -> bool:
    """The events of a replay: none after the connection's end, each violation with a condition the spec names,
    and no credit or window below zero."""
    while (ev := e.next_event()) is not None:
        assert not ended, f"{ev} after the connection's end"
        if isinstance(ev, eng.ProtocolViolation):
            assert ev.condition in conditions and ev.scope in ("connection", "session", "link"), ev
            VIOLATIONS[f"{ev.condition} ({ev.scope})"] += 1
        if isinstance(ev, eng.ConnectionClosed) or isinstance(ev, eng.Authenticated) and ev.code != 0 or (
                isinstance(ev, eng.ProtocolViolation) and ev.scope == "connection"):
            ended = True
    for s in e._sessions.values():
        assert s.incoming_window >= 0 and s.remote_incoming_window >= 0, s
        assert all(link.credit >= 0 for link in s.links.values()), s.links
    return ended
