"""The four output datasets: their columns, types and meaning (docs/traffic.md prints these).

Kinds: ``string``, ``int`` (32-bit), ``long`` (64-bit), ``bool``, ``ts`` (UTC timestamp,
microseconds), ``binary``, ``strings`` (a list of strings). Decoded values that vary by method or class (arguments, properties,
peer properties) are a JSON object per row, encoded by :func:`to_json`.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

Column = tuple[str, str, str]  # name, kind, meaning

FRAMES: tuple[Column, ...] = (
    ("file", "string", "capture file of the packet that completed the frame"),
    ("packet", "long", ("number (1-based) of the packet that completed the frame in stream order: the one with "
                        "its last octet, or a later one that filled a hole before it (as tshark counts)")),
    ("ts", "ts", "that packet's timestamp"),
    ("connection", "string", "connection id: client ip:port > server ip:port"),
    ("direction", "string", "client-to-server or server-to-client"),
    ("stream_offset", "long", "offset of the frame's first octet in its direction's byte stream"),
    ("channel", "int", "channel number"),
    ("frame_type", "string", ("0-x: method, header, body, heartbeat or protocol-header, the type octet for others; "
                              "1.0: amqp, sasl, heartbeat (the empty frame) or protocol-header")),
    ("size", "long", "0-x: payload octets (the frame is 8 more); 1.0: the frame's size less its 8-octet header"),
    ("class_id", "int", "method frames: class id; header frames: the content class id"),
    ("method_id", "int", "method frames: method id"),
    ("method", "string", "method frames: the spec's name, e.g. basic.publish; 1.0: the performative, e.g. transfer"),
    ("arguments", "string", ("method frames: JSON object of the decoded arguments, by the codec's field names; "
                             "1.0: the performative's fields set (composites as objects with their \"type\")")),
    ("content_class", "string", "header frames: the content class name, e.g. basic"),
    ("body_size", "long", "header frames: the body size the header announces; 1.0 transfers: their payload octets"),
    ("properties", "string", "header frames: JSON object of the properties present"),
    ("error", "string", "why the frame could not be decoded (the codec's exception class and message)"),
    ("family", "string", "the connection's protocol: 0-9-1, 0-9, 0-8 (the 0-x family, by its header) or 1-0"),
)

#: A row of FRAMES, in its column order: the builders below are the only places that order is spelled.
FrameRow = tuple[Any, ...]


def frame_row(file: str, packet: int, ts_us: int, connection: str, direction: str, offset: int, channel: int | None,
              frame_type: str, size: int, error: str | None, family: str = "0-9-1") -> FrameRow:
    """A frame with nothing decoded: body, heartbeat, an unknown type, or one whose decoding failed."""
    return (file, packet, ts_us, connection, direction, offset, channel, frame_type, size,
            None, None, None, None, None, None, None, error, family)


def method_row(file: str, packet: int, ts_us: int, connection: str, direction: str, offset: int, channel: int,
               size: int, class_id: int, method_id: int, method: str, arguments: str, error: str | None,
               family: str = "0-9-1") -> FrameRow:
    return (file, packet, ts_us, connection, direction, offset, channel, "method", size,
            class_id, method_id, method, arguments, None, None, None, error, family)


def header_row(file: str, packet: int, ts_us: int, connection: str, direction: str, offset: int, channel: int,
               size: int, class_id: int, content_class: str | None, body_size: int, properties: str,
               error: str | None, family: str = "0-9-1") -> FrameRow:
    return (file, packet, ts_us, connection, direction, offset, channel, "header", size,
            class_id, None, None, None, content_class, body_size, properties, error, family)


def protocol_header_row(file: str, packet: int, ts_us: int, connection: str, direction: str, offset: int,
                        size: int, family: str = "0-9-1") -> FrameRow:
    return (file, packet, ts_us, connection, direction, offset, None, "protocol-header", size,
            None, None, None, None, None, None, None, None, family)


def performative_row(file: str, packet: int, ts_us: int, connection: str, direction: str, offset: int,
                     channel: int, frame_type: str, size: int, performative: str | None, fields: str | None,
                     payload: int | None, error: str | None) -> FrameRow:
    """An AMQP 1.0 frame: ``frame_type`` amqp, sasl or heartbeat (the empty frame), its performative's name in the
    method column, its fields as JSON in arguments, a transfer's payload octets in body_size."""
    return (file, packet, ts_us, connection, direction, offset, channel, frame_type, size,
            None, None, performative, fields, None, payload, None, error, "1-0")


MESSAGES: tuple[Column, ...] = (
    ("connection", "string", "connection id"),
    ("direction", "string", "who sent the content"),
    ("channel", "int", "channel number"),
    ("method", "string", ("the content method: basic.publish, basic.deliver, basic.get-ok, basic.return; 1.0: "
                          "transfer (one row per delivery, its transfers assembled)")),
    ("exchange", "string", "the method's exchange argument, when it has one"),
    ("routing_key", "string", "the method's routing-key argument, when it has one"),
    ("delivery_tag", "long", "the method's delivery-tag argument, when it has one"),
    ("consumer_tag", "string", "the method's consumer-tag argument, when it has one"),
    ("content_class", "string", "the content header's class name"),
    ("properties", "string", "JSON object of the content header's properties"),
    ("body_size", "long", "body size the content header announced; 1.0: the delivery's payload octets"),
    ("body_received", "long", "body octets that arrived in body frames; 1.0: the same as body_size"),
    ("complete", "bool", ("header and every body octet arrived, nothing else in between; 1.0: its last transfer "
                          "arrived and it was not aborted")),
    ("body_sha256", "string", "SHA-256 of the received body, hex; 1.0: of the payload (the message's sections)"),
    ("body", "binary", "the body itself, only with --bodies"),
    ("file", "string", "capture file of the method frame"),
    ("packet", "long", "packet number of the method frame"),
    ("ts", "ts", "timestamp of the method frame"),
    ("family", "string", "the connection's protocol: 0-9-1, 0-9, 0-8 or 1-0"),
    ("session", "int", "1.0: the sender's channel of the session (0-x: null)"),
    ("link", "string", "1.0: the link's name"),
    ("handle", "long", "1.0: the link's handle on the sender's side"),
    ("address", "string", "1.0: the link's address (a sending link's target, a receiving link's source)"),
    ("delivery_id", "long", "1.0: the delivery id"),
    ("tag", "string", "1.0: the delivery tag, hex"),
    ("transfers", "int", "1.0: the transfer frames that carried the delivery (more than one: split by more)"),
    ("settled", "bool", "1.0: settled: sent pre-settled, or a disposition settled it"),
    ("outcome", "string", ("1.0: the delivery state of the disposition that settled it (or its last one): "
                           "accepted, rejected, released, modified, received; aborted when the sender aborted it")),
)

CONNECTIONS: tuple[Column, ...] = (
    ("connection", "string", "connection id: client > server"),
    ("client", "string", "client ip:port"),
    ("server", "string", "server ip:port"),
    ("protocol_header", "string", ("the client's protocol header, e.g. AMQP 0-0-9-1, AMQP 3-1-0-0 (1.0 SASL) "
                                   "(null if not captured)")),
    ("server_protocol_header", "string", ("0-x: a protocol header the server sent back (refusing the version); "
                                          "1.0: the server's first header")),
    ("server_properties", "string", "JSON: connection.start server-properties; 1.0: the server's open properties"),
    ("client_properties", "string", "JSON: connection.start-ok client-properties; 1.0: the client's open properties"),
    ("mechanism", "string", "connection.start-ok mechanism; 1.0: the sasl-init mechanism"),
    ("virtual_host", "string", "connection.open virtual-host; 1.0: the client's open hostname"),
    ("channel_max", "int", "negotiated: connection.tune-ok channel-max; 1.0: the smaller open channel-max"),
    ("frame_max", "long", "negotiated: connection.tune-ok frame-max; 1.0: the smaller open max-frame-size"),
    ("heartbeat", "int", "negotiated: connection.tune-ok heartbeat (seconds)"),
    ("first_ts", "ts", "first packet of the connection"),
    ("last_ts", "ts", "last packet of the connection"),
    ("packets", "long", "TCP packets with data or SYN/FIN/RST"),
    ("frames_client", "long", "frames the client sent"),
    ("frames_server", "long", "frames the server sent"),
    ("bytes_client", "long", "stream octets the client sent"),
    ("bytes_server", "long", "stream octets the server sent"),
    ("close_code", "int", "reply code of connection.close"),
    ("close_text", "string", "reply text of connection.close; 1.0: the close error's description"),
    ("closed_by", "string", ("client or server (connection.close or 1.0 close sender), else tcp-fin, tcp-rst "
                             "or null")),
    ("gaps", "int", "holes in the capture (segments never captured), both directions"),
    ("gap_bytes", "long", "octets in those holes"),
    ("skipped_bytes", "long", "octets passed over to find frame boundaries again"),
    ("files", "strings", "capture files the connection appears in, in order"),
    ("family", "string", ("the protocol, from the client's protocol header: 0-9-1, 0-9, 0-8 (0-x), 1-0, or tls "
                          "(an encrypted connection: counted, not decoded)")),
    ("container_id", "string", "1.0: the client's open container-id"),
    ("server_container_id", "string", "1.0: the server's open container-id"),
    ("max_frame_size", "long", "1.0: the client's open max-frame-size"),
    ("server_max_frame_size", "long", "1.0: the server's open max-frame-size"),
    ("idle_time_out", "long", "1.0: the client's open idle-time-out (milliseconds)"),
    ("server_idle_time_out", "long", "1.0: the server's open idle-time-out (milliseconds)"),
    ("sasl_outcome", "string", "1.0: the sasl-outcome code: ok, auth, sys, sys-perm, sys-temp (null: no SASL)"),
    ("close_condition", "string", "1.0: the error condition of the first close, e.g. amqp:connection:forced"),
)

VIOLATIONS: tuple[Column, ...] = (
    ("connection", "string", "connection id"),
    ("direction", "string", "who sent the offending frame"),
    ("channel", "int", "its channel"),
    ("file", "string", "capture file"),
    ("packet", "long", "packet number"),
    ("ts", "ts", "timestamp"),
    ("kind", "string", "what was broken (docs/traffic.md lists the kinds)"),
    ("reply_code", "int", "the reply code a peer closes with for it (spec constant; 1.0: null)"),
    ("reply_name", "string", "that constant's name in the spec, e.g. frame-error (1.0: null, see condition)"),
    ("rule", "string", ("the spec's rule id or field path the violation breaks, where the spec names one; 1.0: the "
                        "section of the specification, e.g. 2.6.7")),
    ("method", "string", "the method involved, when there is one; 1.0: the performative"),
    ("detail", "string", "a sentence saying what was seen"),
    ("family", "string", "the connection's protocol: 0-9-1, 0-9, 0-8 or 1-0"),
    ("condition", "string", "1.0: the error condition the spec gives the violation, e.g. amqp:session:window-violation"),
)

DATASETS: dict[str, tuple[Column, ...]] = {
    "frames": FRAMES,
    "messages": MESSAGES,
    "connections": CONNECTIONS,
    "violations": VIOLATIONS,
}


def _default(v: Any) -> Any:
    if isinstance(v, bytes | bytearray | memoryview):
        return {"bytes": base64.b64encode(bytes(v)).decode("ascii")}
    if isinstance(v, Decimal):
        return {"decimal": str(v)}
    if isinstance(v, dt.datetime):
        return v.isoformat().replace("+00:00", "Z")
    if isinstance(v, float):
        return {"float": repr(v)}
    if hasattr(v, "code") and hasattr(v, "value"):  # the codec's Typed(code, value)
        return {"type": v.code, "value": v.value}
    raise TypeError(f"cannot encode {type(v).__name__}")


# The C encoder made once: JSONEncoder.encode builds it again on every call, which cost more than the
# encoding itself for the small objects of a frame row (about 3 us a frame on the frame-heavy bench).
def _json_encoder() -> Callable[[Any], str]:
    """The C encoder made once: JSONEncoder.encode builds it again on every call, which cost more than
    the encoding itself for the small objects of a frame row (about 3 us a frame on the bench)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover -- CPython always has it; other interpreters may not
        return json.JSONEncoder(default=_default, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
    chunks = make(None, _default, json.encoder.encode_basestring, None, ":", ",", False, False, False)

    def encode(value: Any) -> str:
        return "".join(chunks(value, 0))

    return encode


_encode = _json_encoder()


def to_json(value: Any) -> str:
    """JSON for decoded values: bytes are {"bytes": base64}, decimals {"decimal": "1.50"},
    timestamps ISO 8601 UTC strings, NaN and infinities {"float": "nan"}; everything else as is."""
    try:
        return _encode(value)
    except ValueError:  # NaN or an infinity somewhere: spell every float out
        return json.dumps(_floats(value), default=_default, ensure_ascii=False, separators=(",", ":"))


def _floats(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return {"float": repr(v)}
    if isinstance(v, dict):
        return {k: _floats(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_floats(x) for x in v]
    return v
