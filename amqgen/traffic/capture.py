"""Capture files: pcap and pcapng (plain or gzip), their record index, and the link, IP and TCP layers.

Two halves. The driver calls :func:`index_file` on each input: a walk over record headers (pcap) or
block lengths (pcapng) that touches no packet data and yields the byte ranges of :class:`Part`
objects, each holding whole records and at most about ``part_size`` octets. An executor calls
:func:`read_part` on one part: it decodes the link layer (Ethernet with any number of VLAN tags,
Linux cooked SLL and SLL2, BSD loopback NULL and LOOP, raw IP), IPv4 or IPv6, and TCP, and yields
one :class:`Segment` per TCP packet that carries data or opens or closes a connection.

A gzip file cannot be split at a record boundary without inflating everything before it, so the
driver inflates it once into the job's staging directory and indexes the copy like any other file.
"""

from __future__ import annotations

import gzip
import mmap
import os
import shutil
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_PCAP_MAGIC = {
    b"\xd4\xc3\xb2\xa1": ("<", 1_000),  # microseconds, little-endian
    b"\xa1\xb2\xc3\xd4": (">", 1_000),
    b"\x4d\x3c\xb2\xa1": ("<", 1),  # nanoseconds
    b"\xa1\xb2\x3c\x4d": (">", 1),
}
_PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"
_GZIP_MAGIC = b"\x1f\x8b"

# pcapng block types that carry a packet (enhanced, simple, the obsolete packet block)
_EPB, _SPB, _OPB, _IDB = 6, 3, 2, 1
_SHB = 0x0A0D0D0A

# Link-layer header types (tcpdump.org/linktypes.html) this reader decodes.
LINK_NULL, LINK_ETHERNET, LINK_RAW, LINK_LOOP, LINK_SLL, LINK_IPV4, LINK_IPV6, LINK_SLL2 = 0, 1, 101, 108, 113, 228, 229, 276
_LINK_RAW_ALIASES = {12: LINK_RAW, 14: LINK_RAW}
LINK_TYPES = {
    LINK_NULL: "BSD loopback", LINK_ETHERNET: "Ethernet", LINK_RAW: "raw IP", LINK_LOOP: "OpenBSD loopback",
    LINK_SLL: "Linux cooked (SLL)", LINK_IPV4: "raw IPv4", LINK_IPV6: "raw IPv6", LINK_SLL2: "Linux cooked (SLL2)",
}
_ETH_IPV4, _ETH_IPV6 = 0x0800, 0x86DD
_ETH_VLAN = frozenset((0x8100, 0x88A8, 0x9100, 0x9200))  # 802.1Q, 802.1ad and the old QinQ TPIDs
# BSD loopback address families: AF_INET is 2 everywhere; AF_INET6 is 24, 28 or 30 by BSD, 10 on Linux.
_AF_INET, _AF_INET6 = frozenset((2,)), frozenset((10, 24, 28, 30))

#: A record longer than this is taken as a corrupt header, not a packet (jumbo and offloaded
#: segments stay far below it).
MAX_RECORD = 16 * 1024 * 1024

TCP_FIN, TCP_SYN, TCP_RST, TCP_ACK = 0x01, 0x02, 0x04, 0x10


class CaptureError(Exception):
    """A file is not a capture, or is damaged at a given offset (the records before it stay usable)."""


@dataclass(frozen=True)
class Part:
    """Whole records of one file, ``start`` to ``end`` octets, the first being packet ``first_packet``.

    ``links`` maps a pcapng interface id to (link type, timestamp units per second); a pcap file has one.
    """

    file_rank: int
    path: str
    fmt: str  # "pcap" or "pcapng"
    endian: str
    start: int
    end: int
    first_packet: int
    links: tuple[tuple[int, int], ...]
    ts_scale: int = 1_000  # pcap: nanoseconds per timestamp fraction unit


@dataclass
class FileIndex:
    path: str
    fmt: str
    parts: list[Part] = field(default_factory=list)
    packets: int = 0
    first_ts: int | None = None  # nanoseconds since the epoch of the first record
    error: str | None = None  # why the walk stopped early (the records before it are kept)
    link_types: set[int] = field(default_factory=set)


def sniff(path: Path) -> str:
    """"pcap", "pcapng" or "gzip" from a file's first octets; CaptureError for anything else."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head[:2] == _GZIP_MAGIC:
        return "gzip"
    if head in _PCAP_MAGIC:
        return "pcap"
    if head == _PCAPNG_SHB:
        return "pcapng"
    if len(head) < 4:
        raise CaptureError("empty or too short to be a capture")
    raise CaptureError("not a pcap or pcapng capture (unknown magic number)")


def inflate(path: Path, staging: Path) -> tuple[Path, str | None]:
    """Inflate a gzip capture into ``staging``. A damaged stream still gives what inflated before
    the damage, with the reason as the second value."""
    staging.mkdir(parents=True, exist_ok=True)
    out = staging / f"{len(os.listdir(staging)):04d}-{path.name.removesuffix('.gz')}"
    with open(out, "wb") as dst:
        try:
            with gzip.open(path, "rb") as src:
                shutil.copyfileobj(src, dst, 1 << 20)
        except (OSError, EOFError, zlib.error) as e:
            return out, f"damaged gzip stream ({e})"
    return out, None


def index_file(path: Path, file_rank: int, part_size: int) -> FileIndex:
    """Walk the record headers of a pcap or pcapng file and cut it into parts of about ``part_size``."""
    fmt = sniff(path)
    if fmt == "gzip":
        raise CaptureError("gzip file: inflate it first")
    size = path.stat().st_size
    idx = FileIndex(str(path), fmt)
    if size == 0:
        raise CaptureError("empty file")
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        if fmt == "pcap":
            _index_pcap(buf, idx, file_rank, part_size)
        else:
            _index_pcapng(buf, idx, file_rank, part_size)
    return idx


def _index_pcap(buf: mmap.mmap, idx: FileIndex, rank: int, part_size: int) -> None:
    size = len(buf)
    if size < 24:
        raise CaptureError("truncated pcap file header")
    endian, scale = _PCAP_MAGIC[bytes(buf[:4])]
    link = struct.unpack_from(endian + "I", buf, 20)[0] & 0xFFFF
    link = _LINK_RAW_ALIASES.get(link, link)
    idx.link_types.add(link)
    rec = struct.Struct(endian + "IIII").unpack_from
    off, start, first, n = 24, 24, 1, 0
    while off < size:
        if size - off < 16:
            idx.error = f"truncated record header at offset {off}"
            break
        sec, frac, caplen, _ = rec(buf, off)
        if caplen > MAX_RECORD:
            idx.error = f"implausible record length {caplen} at offset {off}"
            break
        if off + 16 + caplen > size:
            idx.error = f"truncated record at offset {off} (packet {n + 1})"
            break
        if idx.first_ts is None:
            idx.first_ts = sec * 1_000_000_000 + frac * scale
        off += 16 + caplen
        n += 1
        if off - start >= part_size:
            idx.parts.append(Part(rank, idx.path, "pcap", endian, start, off, first, ((link, 0),), scale))
            start, first = off, n + 1
    if off > start:
        idx.parts.append(Part(rank, idx.path, "pcap", endian, start, off, first, ((link, 0),), scale))
    idx.packets = n


def _tsresol(opts: bytes, endian: str) -> int:
    """Timestamp units per second from an interface block's options (if_tsresol, default 10**6)."""
    off = 0
    while off + 4 <= len(opts):
        code, length = struct.unpack_from(endian + "HH", opts, off)
        if code == 0:
            break
        if code == 9 and length >= 1:
            v = opts[off + 4]
            return int(2 ** (v & 0x7F) if v & 0x80 else 10 ** v)
        off += 4 + ((length + 3) & ~3)
    return 1_000_000


def _index_pcapng(buf: mmap.mmap, idx: FileIndex, rank: int, part_size: int) -> None:
    size = len(buf)
    off, start, first, n = 0, 0, 1, 0
    endian = "<"
    links: list[tuple[int, int]] = []  # the current section's interfaces so far
    start_links: tuple[tuple[int, int], ...] = ()  # those defined before the current part starts

    def cut(at: int) -> None:
        nonlocal start, first, start_links
        if at > start:
            idx.parts.append(Part(rank, idx.path, "pcapng", endian, start, at, first, start_links))
        start, first, start_links = at, n + 1, tuple(links)

    while off < size:
        if size - off < 12:
            idx.error = f"truncated block header at offset {off}"
            break
        if bytes(buf[off:off + 4]) == _PCAPNG_SHB:
            cut(off)  # every section starts a part: its byte order and interfaces are its own
            bom = bytes(buf[off + 8:off + 12])
            if bom == b"\x4d\x3c\x2b\x1a":
                endian = "<"
            elif bom == b"\x1a\x2b\x3c\x4d":
                endian = ">"
            else:
                idx.error = f"bad section byte-order magic at offset {off}"
                break
            links, start_links = [], ()
        btype, blen = struct.unpack_from(endian + "II", buf, off)
        if blen < 12 or blen % 4 or blen > MAX_RECORD:
            idx.error = f"implausible block length {blen} at offset {off}"
            break
        if off + blen > size:
            idx.error = f"truncated block at offset {off} (after packet {n})"
            break
        if btype == _IDB:
            link = struct.unpack_from(endian + "H", buf, off + 8)[0]
            links.append((_LINK_RAW_ALIASES.get(link, link), _tsresol(bytes(buf[off + 16:off + blen - 4]), endian)))
            idx.link_types.add(links[-1][0])
        elif btype in (_EPB, _SPB, _OPB):
            n += 1
            if idx.first_ts is None and btype != _SPB:
                iface = struct.unpack_from(endian + ("I" if btype == _EPB else "H"), buf, off + 8)[0]
                hi, lo = struct.unpack_from(endian + "II", buf, off + 12)
                units = links[iface][1] if iface < len(links) else 1_000_000
                idx.first_ts = ((hi << 32) | lo) * 1_000_000_000 // units
        off += blen
        if off - start >= part_size:
            cut(off)
    cut(off)
    idx.packets = n


@dataclass(frozen=True)
class Segment:
    """One TCP packet: where it is in the capture, its endpoints, and its payload."""

    file_rank: int
    packet: int
    ts: int  # nanoseconds since the epoch
    src: str  # "ip:port" ("[v6]:port")
    dst: str
    seq: int
    ack: int
    flags: int
    payload: bytes
    missing: int  # payload octets the snap length cut off


def read_part(part: Part) -> Iterator[Segment]:
    """Every TCP segment in a part (packets of other protocols, and IP fragments, are passed over)."""
    with open(part.path, "rb") as f:
        f.seek(part.start)
        data = f.read(part.end - part.start)
    if part.fmt == "pcap":
        yield from _pcap_segments(data, part)
    else:
        yield from _pcapng_segments(data, part)


def _pcap_segments(data: bytes, part: Part) -> Iterator[Segment]:
    rec = struct.Struct(part.endian + "IIII").unpack_from
    link = part.links[0][0]
    scale = part.ts_scale
    off, n, size = 0, part.first_packet, len(data)
    while off + 16 <= size:
        sec, frac, caplen, wirelen = rec(data, off)
        seg = _tcp(data, off + 16, off + 16 + caplen, wirelen - caplen, link)
        if seg is not None:
            yield Segment(part.file_rank, n, sec * 1_000_000_000 + frac * scale, *seg)
        off += 16 + caplen
        n += 1


def _pcapng_segments(data: bytes, part: Part) -> Iterator[Segment]:
    e = part.endian
    head = struct.Struct(e + "II").unpack_from
    epb = struct.Struct(e + "IIIII").unpack_from
    opb = struct.Struct(e + "HHIIII").unpack_from
    links = list(part.links)
    off, n, size = 0, part.first_packet, len(data)
    while off + 12 <= size:
        btype, blen = head(data, off)
        if btype == _IDB:  # interfaces defined inside the part (those before it are in part.links)
            link = struct.unpack_from(e + "H", data, off + 8)[0]
            links.append((_LINK_RAW_ALIASES.get(link, link), _tsresol(data[off + 16:off + blen - 4], e)))
        elif btype == _EPB or btype == _OPB:
            if btype == _EPB:
                iface, hi, lo, caplen, wirelen = epb(data, off + 8)
                body = off + 28
            else:
                iface, _, hi, lo, caplen, wirelen = opb(data, off + 8)
                body = off + 28
            link, units = links[iface] if iface < len(links) else (-1, 1_000_000)
            seg = _tcp(data, body, body + caplen, wirelen - caplen, link)
            if seg is not None:
                yield Segment(part.file_rank, n, ((hi << 32) | lo) * 1_000_000_000 // units, *seg)
            n += 1
        elif btype == _SPB:
            wirelen = struct.unpack_from(e + "I", data, off + 8)[0]
            caplen = min(wirelen, blen - 16)
            link = links[0][0] if links else -1
            seg = _tcp(data, off + 12, off + 12 + caplen, wirelen - caplen, link)
            if seg is not None:
                yield Segment(part.file_rank, n, 0, *seg)
            n += 1
        off += blen


_TCPInfo = tuple[str, str, int, int, int, bytes, int]
_U16 = struct.Struct(">H").unpack_from
_TCP_HEAD = struct.Struct(">HHIIBB").unpack_from


def _tcp(data: bytes, off: int, end: int, cut: int, link: int) -> _TCPInfo | None:
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


def _ipv4(data: bytes, off: int, end: int, cut: int) -> _TCPInfo | None:
    if end - off < 20:
        return None
    vihl = data[off]
    ihl = (vihl & 0x0F) * 4
    if vihl >> 4 != 4 or ihl < 20 or data[off + 9] != 6:
        return None
    if _U16(data, off + 6)[0] & 0x3FFF:  # a fragment (more-fragments flag or an offset): not reassembled
        return None
    total = _U16(data, off + 2)[0]
    ip_end = off + total
    if ip_end < end:  # link padding after the datagram
        end = ip_end
    elif total:  # cut short by the snap length: what the datagram says it holds, less what is here
        cut = ip_end - end
    src = ".".join(map(str, data[off + 12:off + 16]))
    dst = ".".join(map(str, data[off + 16:off + 20]))
    return _tcp_segment(data, off + ihl, end, cut, src, dst)


def _v6(raw: bytes) -> str:
    import ipaddress

    return f"[{ipaddress.IPv6Address(raw)}]"


_IPV6_EXT = frozenset((0, 43, 60))  # hop-by-hop, routing, destination options


def _ipv6(data: bytes, off: int, end: int, cut: int) -> _TCPInfo | None:
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


def _tcp_segment(data: bytes, off: int, end: int, cut: int, src: str, dst: str) -> _TCPInfo | None:
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
