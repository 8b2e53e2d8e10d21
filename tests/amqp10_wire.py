"""A minimal AMQP 1.0 client over a plain TCP socket whose every octet is encoded and decoded by the generated
Python package (``g``, the module the ``amqp10`` fixture imports): SASL PLAIN, open, one session, sender and
receiver links with credit, multi-frame deliveries, dispositions, and the orderly detach / end / close.

It is a test tool, not a library: any frame it does not expect (a detach, end or close carrying an error, a
performative it has no rule for) fails the test at once, and every read has a deadline, so a hang is a
failure rather than a stall.
"""

from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest

#: the window we offer the broker for its transfers; renewed with every flow we send
INCOMING_WINDOW = 65535


@dataclass
class Delivery:
    """One delivery received on a receiver link, its frames' payloads joined."""

    handle: int
    delivery_id: int
    tag: bytes
    settled: bool
    payload: bytes
    frames: int


@dataclass
class Link:
    """Our end of a link: its handle and the credit state of 2.6.7 as we track it."""

    name: str
    handle: int
    role: bool  # False: we send (the spec's role "sender"); True: we receive
    attach: Any = None  # the broker's attach
    detach: Any = None  # the broker's detach
    delivery_count: int = 0  # deliveries sent (sender) or received (receiver)
    credit: int = 0  # sender: what the broker's last flow leaves; receiver: what we granted and is unused
    partial: list[Any] = field(default_factory=list)  # receiver: the transfers of a delivery still arriving


class Amqp10Client:
    """One connection carrying one session on channel 0."""

    def __init__(self, g: ModuleType, host: str, port: int, *, max_frame_size: int = 4096,
                 timeout: float = 10.0) -> None:
        self.g = g
        self.timeout = timeout
        self.max_frame_size = max_frame_size  # what we offer in our open: the cap on the broker's frames
        self.peer_max_frame_size = 512  # the cap on ours, once the broker's open has said it
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # 2.4.1: until open has been exchanged the frame size in force is 512 (the reader's default)
        self.reader = g.FrameReader()
        self.links: dict[int, Link] = {}
        self.peer_open: Any = None
        self.peer_begin: Any = None
        self.peer_end: Any = None
        self.peer_close: Any = None
        self.raw_frames: list[Any] = []  # every header and frame read, in order
        self.raw = bytearray()  # every octet read, for the tests' own checks (frame sizes, trailing nulls)
        # session state (2.5.6): transfer ids count transfer frames, delivery ids count deliveries
        self.next_outgoing_id = 0  # the transfer id of our next transfer frame
        self.next_delivery_id = 0
        self.remote_next_incoming_id = 0
        self.remote_incoming_window = 0  # how far the broker lets our transfer ids run past remote_next_incoming_id
        self.next_incoming_id = 0  # the transfer id we expect from the broker next
        self.accepted: set[int] = set()  # delivery ids the broker settled as Accepted (its ranges span ours)
        self.received: list[Delivery] = []  # complete deliveries, in arrival order
        self._settled_upto = 0  # received[:_settled_upto] are settled

    # -- octets ----------------------------------------------------------------------------------------------
    def send(self, performative: Any, payload: bytes = b"") -> None:
        self.sock.sendall(self.g.encode_frame(performative, 0, payload))

    def pump(self, wait: float) -> list[Any]:
        """What arrives within ``wait`` seconds (0: only what is already here), each frame dispatched."""
        ready, _, _ = select.select([self.sock], [], [], wait)
        if not ready:
            return []
        data = self.sock.recv(1 << 16)
        if not data:
            raise AssertionError("the broker closed the socket")
        self.raw += data
        out = self.reader.feed(data)
        for f in out:
            self.raw_frames.append(f)
            if isinstance(f, self.g.Frame) and f.type == self.g.FRAME_TYPE_AMQP:
                self._dispatch(f)
        return list(out)

    def poll(self) -> None:
        """Handle whatever has already arrived, without waiting."""
        while self.pump(0):
            pass

    def wait_for(self, done: Any, what: str) -> None:
        """Read and dispatch frames until ``done()`` holds; AssertionError after the timeout."""
        deadline = time.monotonic() + self.timeout
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out after {self.timeout} s waiting for {what}")
            self.pump(left)

    def next_frames(self, n: int, what: str) -> list[Any]:
        """The next ``n`` protocol headers or frames (handshake only: they are not dispatched twice)."""
        got: list[Any] = []
        deadline = time.monotonic() + self.timeout
        while len(got) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {what}; got {got!r}")
            ready, _, _ = select.select([self.sock], [], [], left)
            if ready:
                data = self.sock.recv(1 << 16)
                if not data:
                    raise AssertionError(f"the broker closed the socket waiting for {what}; got {got!r}")
                self.raw += data
                got += self.reader.feed(data)
        assert len(got) == n, f"{what}: more than expected arrived: {got!r}"
        self.raw_frames += got
        return got

    # -- handshake ------------------------------------------------------------------------------------------
    def sasl_plain(self, user: str, password: str) -> tuple[Any, Any]:
        """5.3: the SASL header, mechanisms, init PLAIN, outcome. Returns (mechanisms, outcome)."""
        g = self.g
        self.sock.sendall(g.SASL_HEADER)
        head, mechs = self.next_frames(2, "the SASL header and sasl-mechanisms")
        assert head == g.ProtocolHeader(g.PROTOCOL_ID_SASL), head
        assert isinstance(mechs.performative, g.SaslMechanisms), mechs
        assert "PLAIN" in mechs.performative.sasl_server_mechanisms, mechs
        response = b"\0" + user.encode() + b"\0" + password.encode()
        self.sock.sendall(g.encode_frame(g.SaslInit(mechanism=g.Symbol("PLAIN"), initial_response=response)))
        (outcome,) = self.next_frames(1, "sasl-outcome")
        assert isinstance(outcome.performative, g.SaslOutcome), outcome
        return mechs.performative, outcome.performative

    def open(self, container_id: str) -> Any:
        """2.4.1: the AMQP header and open, both ways. Returns the broker's open."""
        g = self.g
        self.sock.sendall(g.AMQP_HEADER)
        self.send(g.Open(container_id=container_id, max_frame_size=self.max_frame_size, channel_max=0))
        head, opened = self.next_frames(2, "the AMQP header and open")
        assert head == g.ProtocolHeader(g.PROTOCOL_ID_AMQP), head
        assert isinstance(opened.performative, g.Open), opened
        # the reader still held the broker's open to the 512 octets in force before open: RabbitMQ 3.10's open
        # (container-id and six properties, ~280 octets) fits, so the cap is not raised for it
        self.peer_open = opened.performative
        # from here on each side's frames are bounded by what the other's open announced
        self.peer_max_frame_size = self.peer_open.max_frame_size or 0xFFFFFFFF
        self.reader.max_frame_size = self.max_frame_size
        return self.peer_open

    def connect(self, user: str, password: str, container_id: str) -> None:
        """SASL PLAIN (its outcome must be ok), open and begin."""
        _, outcome = self.sasl_plain(user, password)
        assert outcome.code == self.g.SaslCode.OK, f"SASL PLAIN as {user!r} failed: {outcome!r}"
        self.open(container_id)
        self.begin()

    def begin(self) -> Any:
        g = self.g
        self.send(g.Begin(next_outgoing_id=self.next_outgoing_id, incoming_window=INCOMING_WINDOW,
                          outgoing_window=0xFFFFFFFF))
        self.wait_for(lambda: self.peer_begin is not None, "begin")
        return self.peer_begin

    def attach(self, name: str, handle: int, *, role: bool, address: str) -> Link:
        """A sender (role False: target ``address``) or receiver (role True: source ``address``) link."""
        g = self.g
        link = Link(name, handle, role)
        self.links[handle] = link
        if role:
            perf = g.Attach(name=name, handle=handle, role=True, source=g.Source(address=address), target=g.Target())
        else:
            # 2.7.3: a sender's attach must carry initial-delivery-count (RabbitMQ refuses one without it)
            perf = g.Attach(name=name, handle=handle, role=False, source=g.Source(), target=g.Target(address=address),
                            initial_delivery_count=0)
        self.send(perf)
        self.wait_for(lambda: link.attach is not None, f"the attach of {name}")
        return link

    # -- flow and transfers ----------------------------------------------------------------------------------
    def _session_flow(self) -> dict[str, Any]:
        return {"next_incoming_id": self.next_incoming_id, "incoming_window": INCOMING_WINDOW,
                "next_outgoing_id": self.next_outgoing_id, "outgoing_window": 0xFFFFFFFF}

    def grant(self, link: Link, credit: int) -> None:
        """A receiver's flow: ``credit`` deliveries from its delivery-count on."""
        link.credit = credit
        self.send(self.g.Flow(handle=link.handle, delivery_count=link.delivery_count, link_credit=credit,
                              **self._session_flow()))

    def can_send(self, link: Link, frames: int) -> bool:
        """A delivery of ``frames`` transfer frames fits the link credit and the session window the broker gave."""
        window_end = self.remote_next_incoming_id + self.remote_incoming_window
        return link.credit > 0 and self.next_outgoing_id + frames <= window_end

    def try_transfer(self, link: Link, message: bytes, *, settled: bool) -> tuple[int, int] | None:
        """One delivery: ``message`` split by encode_transfer at the broker's max-frame-size, sent if the link
        credit and the session window allow it. Returns (delivery id, frames), or None when they do not."""
        g = self.g
        delivery_id = self.next_delivery_id
        tr = g.Transfer(handle=link.handle, delivery_id=delivery_id, delivery_tag=delivery_id.to_bytes(4, "big"),
                        message_format=0, settled=settled)
        frames = g.encode_transfer(tr, message, 0, self.peer_max_frame_size)
        if not self.can_send(link, len(frames)):
            return None
        self.sock.sendall(b"".join(frames))
        self.next_delivery_id += 1
        self.next_outgoing_id += len(frames)
        link.delivery_count += 1
        link.credit -= 1
        return delivery_id, len(frames)

    def settle(self, first: int, last: int) -> None:
        """Our receiver's disposition: deliveries first..last accepted and settled."""
        self.send(self.g.Disposition(role=True, first=first, last=last, settled=True, state=self.g.Accepted()))

    def settle_received(self) -> None:
        """Accept and settle what was received since the last call (the broker sends unsettled): one disposition
        per run of consecutive delivery ids."""
        ids = [d.delivery_id for d in self.received[self._settled_upto:] if not d.settled]
        self._settled_upto = len(self.received)
        start = 0
        for k in range(1, len(ids) + 1):
            if k == len(ids) or ids[k] != ids[k - 1] + 1:
                self.settle(ids[start], ids[k - 1])
                start = k

    def top_up(self, link: Link, credit: int) -> None:
        """A receiver's credit back to ``credit`` once all of it is used. Not earlier: given a new flow while
        deliveries are in flight, RabbitMQ 3.10 sends what was left of the old credit and then the new credit in
        full, overrunning the limit 2.6.7 sets (delivery-count + link-credit), although its own flow in reply
        states that limit. (Seen: credit 200 at delivery-count 103 brought 380 deliveries, not 303.)"""
        if link.credit == 0:
            self.grant(link, credit)

    def receive(self, link: Link, n: int, credit: int = 100) -> list[Delivery]:
        """``n`` more deliveries on a receiver link, each settled as accepted."""
        start = len(self.received)
        deadline = time.monotonic() + self.timeout
        while len(self.received) - start < n:
            self.settle_received()
            self.top_up(link, credit)
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out: {len(self.received) - start} of {n} deliveries on {link.name}")
            if self.pump(left):
                deadline = time.monotonic() + self.timeout  # progress: the timeout is for a silence
        self.settle_received()
        return self.received[start:]

    # -- closing ---------------------------------------------------------------------------------------------
    def detach(self, link: Link) -> Any:
        self.send(self.g.Detach(handle=link.handle, closed=True))
        self.wait_for(lambda: link.detach is not None, f"the detach of {link.name}")
        return link.detach

    def end(self) -> Any:
        self.send(self.g.End())
        self.wait_for(lambda: self.peer_end is not None, "end")
        return self.peer_end

    def close(self) -> Any:
        """Our close and the broker's, then we close the socket: RabbitMQ 3.10 leaves it open after its close
        (2.4.3 lets either side end the TCP connection once both closes have crossed)."""
        self.send(self.g.Close())
        self.wait_for(lambda: self.peer_close is not None, "close")
        self.sock.close()
        return self.peer_close

    # -- what the broker sends -------------------------------------------------------------------------------
    def _dispatch(self, f: Any) -> None:
        g = self.g
        p = f.performative
        if p is None:  # an empty frame: the broker's heartbeat
            return
        if isinstance(p, g.Transfer):
            self._on_transfer(p, f.payload)
        elif isinstance(p, g.Flow):
            self._on_flow(p)
        elif isinstance(p, g.Disposition):
            # the broker as receiver settling our unsettled deliveries: only Accepted is a pass
            assert p.role is True and isinstance(p.state, g.Accepted), f"a disposition other than accepted: {p!r}"
            self.accepted.update(range(p.first, (p.first if p.last is None else p.last) + 1))
        elif isinstance(p, g.Attach):
            self.links[p.handle].attach = p
        elif isinstance(p, g.Begin):
            self.peer_begin = p
            self.next_incoming_id = p.next_outgoing_id
            self.remote_next_incoming_id = self.next_outgoing_id
            self.remote_incoming_window = p.incoming_window
        elif isinstance(p, g.Detach):
            assert p.error is None, f"the broker detached with an error: {p!r}"
            self.links[p.handle].detach = p
        elif isinstance(p, g.End):
            assert p.error is None, f"the broker ended the session with an error: {p!r}"
            self.peer_end = p
        elif isinstance(p, g.Close):
            assert p.error is None, f"the broker closed the connection with an error: {p!r}"
            self.peer_close = p
        else:
            pytest.fail(f"unexpected from the broker: {f!r}")

    def _on_flow(self, p: Any) -> None:
        # 2.5.6: the broker's incoming window runs from its next-incoming-id (null: our initial id, 0)
        self.remote_next_incoming_id = p.next_incoming_id or 0
        self.remote_incoming_window = p.incoming_window
        if p.handle is not None:
            link = self.links[p.handle]
            if not link.role:
                # 2.6.7: link-credit counts from the receiver's delivery-count (null: the initial count, 0)
                link.credit = (p.delivery_count or 0) + p.link_credit - link.delivery_count
        if p.echo:
            self.send(self.g.Flow(**self._session_flow()))

    def _on_transfer(self, p: Any, payload: bytes) -> None:
        self.next_incoming_id += 1
        link = self.links[p.handle]
        assert link.role, f"a transfer on our sender link: {p!r}"
        link.partial.append((p, payload))
        if p.more:
            return
        first = link.partial[0][0]
        for cont, _ in link.partial[1:]:
            # 2.7.5: a continuation may repeat delivery-id and tag; if it does they must agree with the first
            assert cont.delivery_id in (None, first.delivery_id), cont
            assert cont.delivery_tag in (None, first.delivery_tag), cont
        delivery = Delivery(p.handle, first.delivery_id, first.delivery_tag, bool(first.settled),
                            b"".join(x for _, x in link.partial), len(link.partial))
        link.partial = []
        link.delivery_count += 1
        link.credit -= 1
        assert link.credit >= 0, f"the broker sent {link.name} a delivery beyond the credit we granted"
        self.received.append(delivery)
