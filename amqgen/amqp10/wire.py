"""AMQP 1.0 wire facts the XML does not carry, each with the OASIS AMQP 1.0 section it comes from (part.section).

The XML defines the type system and the performatives; the framing, the protocol headers and the message's
layout are prose in the specification, so they live here, once, for every 1.0 stage and pack.
"""

from __future__ import annotations

#: 2.2 Version negotiation: "AMQP", then the protocol id, major 1, minor 0, revision 0.
PROTOCOL_ID_AMQP = 0
PROTOCOL_ID_TLS = 2  # 5.2 TLS: a TLS session is negotiated first, then the AMQP header is exchanged again
PROTOCOL_ID_SASL = 3  # 5.3 SASL: the SASL frames come first, then the AMQP header again


def protocol_header(protocol_id: int) -> bytes:
    """2.2: the 8-octet header of one protocol layer."""
    if protocol_id not in (PROTOCOL_ID_AMQP, PROTOCOL_ID_TLS, PROTOCOL_ID_SASL):
        raise ValueError(f"protocol id {protocol_id} is not 0 (AMQP), 2 (TLS) or 3 (SASL)")
    return b"AMQP" + bytes((protocol_id, 1, 0, 0))


AMQP_HEADER = protocol_header(PROTOCOL_ID_AMQP)
TLS_HEADER = protocol_header(PROTOCOL_ID_TLS)
SASL_HEADER = protocol_header(PROTOCOL_ID_SASL)

#: 2.3.1 Frame layout: SIZE (4 octets, the whole frame), DOFF (data offset in 4-octet words), TYPE, then two
#: octets the type defines (the channel for an AMQP frame, ignored for SASL), the extended header up to DOFF * 4,
#: then the frame body.
FRAME_HEADER = (("size", 4), ("doff", 1), ("type", 1), ("channel", 2))
FRAME_HEADER_SIZE = 8
#: 2.3.1: DOFF counts 4-octet words, and is at least 2 (the fixed header itself).
DOFF_WORD = 4
MIN_DOFF = 2
#: 2.3.1 / 5.3.1: frame types
FRAME_TYPE_AMQP = 0x00
FRAME_TYPE_SASL = 0x01
#: 2.4.5 Idle time-out: a frame with no body (size 8) is a heartbeat, on any channel.
EMPTY_FRAME_SIZE = FRAME_HEADER_SIZE

#: 2.3.2 An AMQP frame's body is one performative, then (for transfer only) payload octets.
PERFORMATIVE_WITH_PAYLOAD = "transfer"

#: 3.2 Message format: the bare message is wrapped by annotations; the sections, in this order, each at most
#: once but the body, which is one or more data, one or more amqp-sequence, or one amqp-value (3.2.4-3.2.10).
SECTION_ORDER = (
    "header",
    "delivery-annotations",
    "message-annotations",
    "properties",
    "application-properties",
    "body",  # data+ | amqp-sequence+ | amqp-value
    "footer",
)
BODY_SECTIONS = ("data", "amqp-sequence", "amqp-value")
