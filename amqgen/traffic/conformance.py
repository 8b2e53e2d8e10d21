"""Spec checks over one connection's decoded frames, and the contents (messages) they carry.

Everything a check compares with comes from the generated codec or the model: which frame types
exist, which methods carry content (``HAS_CONTENT``), who may send a method (``DIRECTION``, from
the chassis), which replies answer a synchronous request (``RESPONSES``), which classes live on
channel 0 (``handler="connection"``), the asserts (``checks.validate``), the negotiated limits
(the connection's ``connection.tune`` and ``tune-ok`` as the generated engine's Observer took them
in: sequence.py; the checker does not follow the negotiation a second time) and the reply codes
(spec constants).

The kinds of violation, with the constant whose reply code a peer would close with:

==================  ==================  ====================================================
kind                constant            what was seen
==================  ==================  ====================================================
frame-end           frame-error         the octet after the payload is not frame-end
frame-size          frame-error         a frame over the negotiated frame_max
frame-type          frame-error         a type octet that is no frame type (stream lost)
heartbeat-channel   frame-error         a heartbeat frame off channel 0
malformed           frame-error         a payload the codec could not decode
unknown-method      not-implemented     a class or method id the spec does not define
unknown-class       not-implemented     a content header for a class without content
channel             channel-error       a connection-class method off channel 0, or a
                                        channel-class method or content frame on channel 0
direction           command-invalid     a method sent by the peer its chassis does not allow
response            command-invalid     a synchronous request answered by a reply that is not
                                        one of its responses
assert              (the check's code)  a field fails one of the spec's asserts
content-class       unexpected-frame    a content header whose class is not its method's
body-size           unexpected-frame    body frames that do not add up to the header's size
content-interleaved unexpected-frame    another frame on the channel inside a content
unexpected-content  unexpected-frame    a header or body frame with no content method before it
protocol-header     (none)              the client's protocol header is not the spec's
sequence            command-invalid,    a method the connection's state does not allow, by the
                    channel-error       generated engine's Observer (sequence.py)
==================  ==================  ====================================================
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from .codec import Codec
from .framing import Frame
from .reassembly import Meta
from .sequence import KIND as SEQUENCE
from .sequence import Sequence

C2S, S2C = "client-to-server", "server-to-client"
CLIENT, SERVER = 0, 1  # index of a direction in per-direction pairs

_MAX_PENDING = 16  # requests remembered per channel and direction

REPLY_CONSTANT = {
    "frame-end": "frame-error",
    "frame-size": "frame-error",
    "frame-type": "frame-error",
    "heartbeat-channel": "frame-error",
    "malformed": "frame-error",
    "unknown-method": "not-implemented",
    "unknown-class": "not-implemented",
    "channel": "channel-error",
    "direction": "command-invalid",
    "response": "command-invalid",
    "content-class": "unexpected-frame",
    "body-size": "unexpected-frame",
    "content-interleaved": "unexpected-frame",
    "unexpected-content": "unexpected-frame",
}
VIOLATION_KINDS = (*REPLY_CONSTANT, "assert", "protocol-header", SEQUENCE)

#: The codec's decode errors that a framing check already reports under its own kind.
_ERROR_KIND = {
    "FrameEndError": "frame-end",
    "FrameSizeError": "frame-size",
    "FrameTypeError": "frame-type",
    "UnknownMethodError": "unknown-method",
    "UnknownClassError": "unknown-class",
}


@dataclass
class Violation:
    direction: str
    channel: int | None
    meta: Meta
    kind: str
    reply_code: int | None
    reply_name: str | None
    rule: str | None
    method: str | None
    detail: str


@dataclass
class Content:
    """A content in progress on one channel in one direction."""

    method: Any
    meta: Meta
    class_name: str | None = None
    properties: Any = None
    body_size: int | None = None  # None until the header arrives
    received: int = 0
    digest: Any = field(default_factory=hashlib.sha256)
    parts: list[bytes] | None = None
    broken: bool = False  # a frame of it could not be decoded


@dataclass
class Message:
    direction: str
    channel: int
    content: Content
    complete: bool


@dataclass
class Negotiated:
    """What the connection's own methods said; the limits are read from ``observer``, the generated engine's
    Observer, which takes the negotiation in (None until its tune-ok)."""

    observer: Any
    server_properties: Any = None
    client_properties: Any = None
    mechanism: str | None = None
    virtual_host: str | None = None
    close_code: int | None = None
    close_text: str | None = None
    closed_by: str | None = None

    @property
    def channel_max(self) -> int | None:
        return getattr(self.observer.tune_ok, "channel_max", None)

    @property
    def frame_max(self) -> int | None:
        return getattr(self.observer.tune_ok, "frame_max", None)

    @property
    def heartbeat(self) -> int | None:
        return getattr(self.observer.tune_ok, "heartbeat", None)


class Checker:
    """Feeds on one connection's frames (both directions, in arrival order)."""

    def __init__(self, codec: Codec, policy: str, keep_bodies: bool) -> None:
        self.codec = codec
        self.policy = policy
        self.keep_bodies = keep_bodies
        self.violations: list[Violation] = []
        self.messages: list[Message] = []
        self._contents: dict[tuple[int, int], Content] = {}  # (direction index, channel)
        self._pending: dict[tuple[int, int], list[Any]] = {}  # (requester index, channel) -> requests
        self._early: dict[tuple[int, int], tuple[Any, Meta]] = {}  # (requester index, channel) -> reply
        self._limits: dict[str, int] | None = None
        self._limits_of: Any = None  # the tune ``_limits`` was made from
        c = codec.constants
        self._method, self._header, self._body, self._heartbeat = (
            c.FRAME_METHOD, c.FRAME_HEADER, c.FRAME_BODY, c.FRAME_HEARTBEAT)
        self._conn_classes = codec.facts.connection_classes
        self._replies = codec.replies
        self._reply_error = codec.exceptions.ReplyError
        self.sequence = Sequence(codec, self.violation)  # order and state, by the generated engine (sequence.py)
        self._observer = self.sequence.observer
        self.state = Negotiated(self._observer)

    # -- reporting ---------------------------------------------------------------------------
    def violation(self, direction: int, channel: int | None, meta: Meta, kind: str, detail: str,
                  method: str | None = None, rule: str | None = None, code: int | None = None) -> None:
        name = REPLY_CONSTANT.get(kind)
        if code is None and name is not None:
            code = self.codec.reply_codes.get(name)
        elif code is not None:
            name = next((n for n, v in self.codec.reply_codes.items() if v == code), None)
        self.violations.append(Violation((C2S, S2C)[direction], channel, meta, kind, code, name, rule, method, detail))

    def protocol_header(self, direction: int, header: bytes, meta: Meta) -> None:
        seen = len(self.violations)
        if direction == CLIENT and header != self.codec.protocol_header:
            self.violation(direction, None, meta, "protocol-header",
                           f"the client sent {_header_text(header)}; {self.codec.facts.spec_name} is "
                           f"{_header_text(self.codec.protocol_header)} (decode with the matching --spec)")
        self.sequence.protocol_header(direction, header, meta, len(self.violations) > seen)

    # -- frames ------------------------------------------------------------------------------
    def frame(self, direction: int, f: Frame) -> None:
        ch = f.channel
        seen = len(self.violations)
        if f.error is not None:
            kind = _ERROR_KIND.get(f.error_kind or "", "malformed")
            if f.ftype == self._heartbeat and ch:
                kind = "heartbeat-channel"
            method = f.decoded[1].NAME if f.decoded is not None and f.ftype == self._method else None
            self.violation(direction, ch, f.meta, kind, f.error, method)
            if f.decoded is None:
                content = self._contents.get((direction, ch))
                if content is not None and f.ftype in (self._header, self._body):
                    content.broken = True  # its body frames say nothing more
                return
        tuned = self._observer.tune_ok
        limit = tuned.frame_max if tuned is not None else None
        if limit and f.size + 8 > limit:
            self.violation(direction, ch, f.meta, "frame-size",
                           f"a frame of {f.size + 8} octets; the negotiated frame_max is {limit}",
                           rule="connection.tune-ok.frame-max")
        ftype = f.ftype
        if ftype == self._method:
            self._on_method(direction, ch, f.decoded[1], f.meta)
            self.sequence.method(direction, f, len(self.violations) > seen)
        elif ftype == self._header:
            self._on_header(direction, ch, f.decoded, f.meta)
        elif ftype == self._body:
            self._on_body(direction, ch, f.decoded[1], f.meta)

    def _on_method(self, direction: int, ch: int, m: Any, meta: Meta) -> None:
        name = m.NAME
        key = (direction, ch)
        content = self._contents.pop(key, None)
        if content is not None:
            self._interrupted(direction, ch, content, meta, name)
        on_conn_channel = m.CLASS_ID in self._conn_classes
        if on_conn_channel != (ch == 0):
            where = "channel 0" if ch == 0 else f"channel {ch}"
            self.violation(direction, ch, meta, "channel", f"{name} on {where}", name)
        sent = (C2S, S2C)[direction]
        if m.DIRECTION != "both" and m.DIRECTION != sent:
            self.violation(direction, ch, meta, "direction", f"{name} sent {sent}; the spec allows {m.DIRECTION}", name)
        try:
            self.codec.checks.validate(m, negotiated=self._negotiated(), policy=self.policy)
        except self._reply_error as e:
            self.violation(direction, ch, meta, "assert", str(e), name, code=getattr(e, "reply_code", None))
        # synchronous requests and their replies
        other = 1 - direction
        if type(m) in self._replies:
            waiting = self._pending.get((other, ch))
            if waiting:
                self._answered(waiting, m, direction, ch, meta)
            else:
                # a reply before its request: the capture has the two directions out of order (or the
                # request was before the capture began); the next request on the channel may claim it
                self._early[(other, ch)] = (m, meta)
        if m.SYNCHRONOUS and m.RESPONSES and not (getattr(m, "no_wait", False) or getattr(m, "nowait", False)):
            early = self._early.pop(key, None)
            if early is None or type(early[0]) not in m.RESPONSES:  # (an early reply it does not fit: stale)
                waiting = self._pending.setdefault(key, [])
                waiting.append(m)
                del waiting[:-_MAX_PENDING]
        if m.HAS_CONTENT:
            self._contents[key] = Content(m, meta, parts=[] if self.keep_bodies else None)
        self._connection_method(direction, ch, m)

    def _answered(self, waiting: list[Any], reply: Any, direction: int, ch: int, meta: Meta) -> None:
        """``reply`` answers the oldest request waiting on the channel. A peer sends one at a time;
        more than one waits only when the capture has the two directions out of order, so a reply
        that fits a later request is taken as that one's."""
        for i, request in enumerate(waiting):
            if type(reply) in request.RESPONSES:
                del waiting[i]
                return
        request = waiting.pop(0)
        allowed = ", ".join(r.NAME for r in request.RESPONSES)
        self.violation(direction, ch, meta, "response",
                       f"{request.NAME} answered by {reply.NAME}, not by {allowed}", reply.NAME)

    def _interrupted(self, direction: int, ch: int, content: Content, meta: Meta, by: str) -> None:
        name = content.method.NAME
        if content.broken:
            pass
        elif content.body_size is None:
            self.violation(direction, ch, meta, "content-interleaved",
                           f"{by} arrived before the content header of {name}", by)
        else:
            self.violation(direction, ch, meta, "body-size",
                           f"the content of {name} ended after {content.received} of {content.body_size} "
                           f"body octets ({by} came next)", name)
        self.messages.append(Message((C2S, S2C)[direction], ch, content, False))

    def _on_header(self, direction: int, ch: int, h: Any, meta: Meta) -> None:
        _, class_id, body_size, props, _ = h
        content = self._contents.get((direction, ch))
        if ch == 0:
            self.violation(direction, ch, meta, "channel", "a content header on channel 0")
        if content is None or content.body_size is not None:
            what = "a second content header" if content is not None else "a content header with no content method"
            self.violation(direction, ch, meta, "unexpected-content", what)
            if content is not None:
                self._finish(direction, ch, content, False)
            return
        m = content.method
        if class_id != m.CLASS_ID:
            self.violation(direction, ch, meta, "content-class",
                           f"{m.NAME} followed by a content header of class {class_id}", m.NAME)
        content.class_name = self.codec.class_names.get(class_id, str(class_id))
        content.properties = props
        content.body_size = body_size
        if body_size == 0:
            self._finish(direction, ch, content, True)

    def _on_body(self, direction: int, ch: int, payload: bytes, meta: Meta) -> None:
        content = self._contents.get((direction, ch))
        if ch == 0:
            self.violation(direction, ch, meta, "channel", "a content body frame on channel 0")
        if content is not None and content.broken:
            return
        if content is None or content.body_size is None:
            what = "before the content header" if content is not None else "with no content method"
            self.violation(direction, ch, meta, "unexpected-content", f"a content body frame {what}")
            return
        content.received += len(payload)
        content.digest.update(payload)
        if content.parts is not None:
            content.parts.append(payload)
        if content.received > content.body_size:
            self.violation(direction, ch, meta, "body-size",
                           f"body frames carry {content.received} octets; the header said {content.body_size}",
                           content.method.NAME)
            self._finish(direction, ch, content, False)
        elif content.received == content.body_size:
            self._finish(direction, ch, content, True)

    def _finish(self, direction: int, ch: int, content: Content, complete: bool) -> None:
        self._contents.pop((direction, ch), None)
        self.messages.append(Message((C2S, S2C)[direction], ch, content, complete))

    def end(self) -> None:
        """The capture ends: contents still open are messages that did not complete."""
        self.sequence.end()
        for (direction, ch), content in sorted(self._contents.items(), key=lambda kv: kv[0]):
            self.messages.append(Message((C2S, S2C)[direction], ch, content, False))
        self._contents.clear()

    # -- the connection's own methods ----------------------------------------------------------
    def _negotiated(self) -> dict[str, int] | None:
        """The values ``le`` asserts compare with: the server's tune, as the observer took it in."""
        tune = self._observer.tune
        if tune is None:
            return None
        if tune is not self._limits_of:  # made once per connection.tune, not per method
            self._limits_of = tune
            self._limits = {f"connection.tune.{f.replace('_', '-')}": getattr(tune, f) for f in tune.FIELDS}
        return self._limits

    def _connection_method(self, direction: int, ch: int, m: Any) -> None:
        if m.CLASS_ID not in self._conn_classes:
            return
        s = self.state
        fields = m.FIELDS
        if "server_properties" in fields:
            s.server_properties = m.server_properties
        if "client_properties" in fields:
            s.client_properties = m.client_properties
            s.mechanism = getattr(m, "mechanism", None)
        if "virtual_host" in fields:
            s.virtual_host = m.virtual_host
        if "reply_code" in fields and m.SYNCHRONOUS and s.close_code is None:
            s.close_code = m.reply_code
            s.close_text = getattr(m, "reply_text", None)
            s.closed_by = ("client", "server")[direction]


def _header_text(h: bytes) -> str:
    if len(h) == 8 and h[:4] == b"AMQP":
        return "AMQP " + "-".join(str(b) for b in h[4:])
    return repr(h)


header_text = _header_text
