"""The packet layers of one captured record: link (Ethernet with any number of VLAN tags, Linux cooked SLL and
SLL2, BSD loopback NULL and LOOP, raw IP), IPv4 or IPv6, and TCP. :func:`tcp` is all the capture reader asks.
"""

from __future__ import annotations

import struct

# Link-layer header types (tcpdump.org/linktypes.html) this reader decodes.
LINK_NULL, LINK_ETHERNET, LINK_RAW, LINK_LOOP, LINK_SLL, LINK_IPV4, LINK_IPV6, LINK_SLL2 = 0, 1, 101, 108, 113, 228, 229, 276
LINK_RAW_ALIASES = {12: LINK_RAW, 14: LINK_RAW}
LINK_TYPES = {
    LINK_NULL: "BSD loopback", LINK_ETHERNET: "Ethernet", LINK_RAW: "raw IP", LINK_LOOP: "OpenBSD loopback",
    LINK_SLL: "Linux cooked (SLL)", LINK_IPV4: "raw IPv4", LINK_IPV6: "raw IPv6", LINK_SLL2: "Linux cooked (SLL2)",
}
_ETH_IPV4, _ETH_IPV6 = 0x0800, 0x86DD
_ETH_VLAN = frozenset((0x8100, 0x88A8, 0x9100, 0x9200))  # 802.1Q, 802.1ad and the old QinQ TPIDs
# BSD loopback address families: AF_INET is 2 everywhere; AF_INET6 is 24, 28 or 30 by BSD, 10 on Linux.
_AF_INET, _AF_INET6 = frozenset((2,)), frozenset((10, 24, 28, 30))

TCP_FIN, TCP_SYN, TCP_RST, TCP_ACK = 0x01, 0x02, 0x04, 0x10


def link_type(code: int) -> int:
    """A capture's link type, with the aliases some writers use for raw IP."""
    return LINK_RAW_ALIASES.get(code, code)


#: (source "ip:port", destination, seq, ack, flags, payload, octets the snap length cut off)
TCPInfo = tuple[str, str, int, int, int, bytes, int]
_U16 = struct.Struct(">H").unpack_from
_TCP_HEAD = struct.Struct(">HHIIBB").unpack_from


def tcp(data: bytes, off: int, end: int, cut: int, link: int) -> TCPInfo | None:
    """Decode link, IP and TCP headers of one packet ``data[off:end]``; None if it is not TCP."""
    if link == LINK_ETHERNET:
        if end - off < 14:
            return None
        etype = _U16(data, off + 12)[0]
        off += 14
        while etype in _ETH_VLAN and end - off >= 4:
            etype = _U16(data, off + 2)[0]
            off += 4
        if etype == _ETH_IPV4:
            return _ipv4(data, off, end, cut)
        if etype == _ETH_IPV6:
            return _ipv6(data, off, end, cut)
        return None
    if link == LINK_SLL or link == LINK_SLL2:
        hlen = 16 if link == LINK_SLL else 20
        if end - off < hlen:
            return None
        etype = _U16(data, off + (14 if link == LINK_SLL else 0))[0]
        off += hlen
        if etype == _ETH_IPV4:
            return _ipv4(data, off, end, cut)
        if etype == _ETH_IPV6:
            return _ipv6(data, off, end, cut)
        return None
    if link == LINK_NULL or link == LINK_LOOP:
        if end - off < 4:
            return None
        raw = data[off:off + 4]
        af = int.from_bytes(raw, "big") if link == LINK_LOOP else (
            # NULL is in the capturing host's byte order: a small value fits one end or the other
            int.from_bytes(raw, "little") if raw[0] else int.from_bytes(raw, "big"))
        off += 4
        if af in _AF_INET:
            return _ipv4(data, off, end, cut)
        if af in _AF_INET6:
            return _ipv6(data, off, end, cut)
        return None
    if link == LINK_RAW or link == LINK_IPV4 or link == LINK_IPV6:
        if end <= off:
            return None
        version = data[off] >> 4
        if version == 4:
            return _ipv4(data, off, end, cut)
        if version == 6:
            return _ipv6(data, off, end, cut)
    return None


def _ipv4(data: bytes, off: int, end: int, cut: int) -> TCPInfo | None:
    if end - off < 20:
        return None
    vihl = data[off]
    ihl = (vihl & 0x0F) * 4
    if vihl >> 4 != 4 or ihl < 20 or data[off + 9] != 6:
        return None
    if _U16(data, off + 6)[0] & 0x3FFF:  # a fragment (more-fragments flag or an offset): not reassembled
        return None
    total = _U16(data, off + 2)[0]
    # A total length of 0 is a segment captured before the card split it (TCP segmentation offload):
    # it runs to the record's end, as tshark takes it.
    if total:
        ip_end = off + total
        if ip_end < end:  # link padding after the datagram
            end = ip_end
        else:  # cut short by the snap length: what the datagram says it holds, less what is here
            cut = ip_end - end
    src = ".".join(map(str, data[off + 12:off + 16]))
    dst = ".".join(map(str, data[off + 16:off + 20]))
    return _tcp_segment(data, off + ihl, end, cut, src, dst)


def _v6(raw: bytes) -> str:
    import ipaddress

    return f"[{ipaddress.IPv6Address(raw)}]"


_IPV6_EXT = frozenset((0, 43, 60))  # hop-by-hop, routing, destination options


def _ipv6(data: bytes, off: int, end: int, cut: int) -> TCPInfo | None:
    if end - off < 40 or data[off] >> 4 != 6:
        return None
    plen = _U16(data, off + 4)[0]
    nxt = data[off + 6]
    src, dst = _v6(data[off + 8:off + 24]), _v6(data[off + 24:off + 40])
    ip_end = off + 40 + plen
    if ip_end < end:
        end = ip_end
    elif plen:
        cut = ip_end - end
    off += 40
    while nxt in _IPV6_EXT and end - off >= 8:
        nxt, hlen = data[off], (data[off + 1] + 1) * 8
        off += hlen
    if nxt != 6:  # not TCP, or a fragment header: fragments are not reassembled
        return None
    return _tcp_segment(data, off, end, cut, src, dst)


def _tcp_segment(data: bytes, off: int, end: int, cut: int, src: str, dst: str) -> TCPInfo | None:
    if end - off < 20:
        return None
    sport, dport, seq, ack, hoff, flags = _TCP_HEAD(data, off)
    hlen = (hoff >> 4) * 4
    if hlen < 20:
        return None
    payload = data[off + hlen:end] if end > off + hlen else b""
    if not payload and not flags & (TCP_SYN | TCP_FIN | TCP_RST):
        return None  # a bare acknowledgement says nothing the streams need
    return f"{src}:{sport}", f"{dst}:{dport}", seq, ack, flags, payload, max(cut, 0)
