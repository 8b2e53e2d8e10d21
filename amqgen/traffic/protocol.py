"""Which protocol family a connection speaks, from the first octets its client sent.

Every AMQP connection opens with an 8-octet protocol header, ``AMQP`` and four octets that name the protocol:

- 0-x: ``AMQP\\x00\\x00\\x09\\x01`` (0-9-1), ``AMQP\\x01\\x01\\x00\\x09`` (0-9), ``AMQP\\x01\\x01\\x08\\x00`` (0-8) and
  any other ``AMQP`` + protocol class ``\\x01`` (the 0-8 and 0-9 headers' class and instance octets);
- 1.0: ``AMQP\\x00\\x01\\x00\\x00`` (AMQP), ``AMQP\\x03\\x01\\x00\\x00`` (SASL), ``AMQP\\x02\\x01\\x00\\x00`` (TLS, 5.2);
- a TLS record (handshake, content type 22, version 3.x): an AMQPS connection, whose octets are not readable.

A connection captured after it began has no header: its first octets are a frame, and the two families' frame
headers differ enough to tell them apart (:func:`sniff`).
"""

from __future__ import annotations

AMQP0 = "0-x"
AMQP10 = "1-0"
TLS = "tls"

#: protocol id octet -> what a 1.0 header announces (amqgen.amqp10.wire holds the same ids with their sections)
_IDS_10 = {0: "amqp", 2: "tls", 3: "sasl"}


def classify(first: bytes) -> tuple[str, str | None] | None:
    """(family, the header's layer or version) for a client's first octets; None when they start no known header
    or record. Needs 8 octets for a header, 3 for a TLS record."""
    if len(first) >= 3 and first[0] == 0x16 and first[1] == 3:
        return TLS, "record"
    if len(first) < 8 or first[:4] != b"AMQP":
        return None
    a, b, c, d = first[4:8]
    if b == 1 and c == 0 and d == 0 and a in _IDS_10:
        return (TLS if a == 2 else AMQP10), _IDS_10[a]
    if a == 0 and b == 0:  # 0-9-1 (AMQP 0 0 9 1): protocol id 0, then the version
        return AMQP0, f"0-{c}-{d}"
    if a == 1 and b == 1:  # 0-8 and 0-9 (AMQP 1 1 8 0, 1 1 0 9): class and instance 1, then the version
        return AMQP0, f"0-{c}" if d == 0 else f"0-{d}" if c == 0 else f"{c}-{d}"
    return AMQP0, None  # an AMQP header of no version amqgen knows: the 0-x decoder reports it


def sniff(first: bytes) -> str | None:
    """The family of a stream captured mid-way, from a frame header: a 1.0 frame starts with its 4-octet size (the
    first octet 0 under 16 MiB), then DOFF 2 and type 0 or 1; a 0-x frame with its type octet (1, 2, 3 or 8)."""
    if len(first) >= 8 and first[0] == 0 and first[4] == 2 and first[5] in (0, 1):
        return AMQP10
    return None
