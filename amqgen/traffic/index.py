"""A capture part's TCP packets as an index (no payload bytes), grouped per connection into compact blobs.

Stage 1 of the job reads a part with :func:`part_index` and ships one blob per connection
(:func:`by_connection`) instead of every payload; the decode task turns a connection's blobs back into
:class:`capture.Segment` objects with :func:`segments`, reading the payloads from the capture files by
offset. The index holds exactly the packets :func:`capture.read_part` yields a segment for, in the same
order and with the same fields (tests/traffic/test_traffic_index.py holds the two side by side).

Only the walk that finds where records start is a Python loop (it is sequential: each record's length
says where the next one starts); the link, IP and TCP headers are gathered with numpy over all records
at once. A packet the vector path cannot decide alone (IPv6 extension headers, more than two VLAN
tags) goes through the scalar layers of :mod:`packets`, so both paths agree by construction.

Differences from :func:`capture.read_part`, on damaged input only: a record that runs past the end of
its part (the file changed since it was indexed) is dropped here, where read_part decodes a clipped
copy or raises struct.error; a pcapng timestamp past 2**63-1 ns (year 2262) is held at 2**63-1.

Blob format (little-endian throughout; one blob is one connection's packets in one part):

====== ======================================================================================
octets
====== ======================================================================================
4      magic ``b"AQX1"``
4      file rank (u32): the caller maps it to the capture file's path
4      packet count ``n`` (u32)
2, 2   lengths of the two endpoint strings ``a`` and ``b`` (u16 each; ``a|b`` is the connection key)
..     ``a`` then ``b``, ASCII
42*n   the packets, numpy dtype :data:`PACKET`: packet (i8), ts ns (i8), payload's absolute file
       offset (i8), seq (u4), ack (u4), payload length (u4), missing (u4), flags (u1), and
       ``dir`` (u1): 0 when ``a`` sent the packet, 1 when ``b`` did
====== ======================================================================================

:func:`read_blob` checks all of it and raises :class:`BlobError` for anything else.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from . import capture, packets

Arr = npt.NDArray[Any]

#: One packet of a blob (packed: 42 octets).
PACKET = np.dtype([
    ("packet", "<i8"), ("ts", "<i8"), ("offset", "<i8"), ("seq", "<u4"), ("ack", "<u4"), ("length", "<u4"),
    ("missing", "<u4"), ("flags", "u1"), ("dir", "u1"),
])
_MAGIC = b"AQX1"
_HEAD = struct.Struct("<4sIIHH")
_TS_MAX = 2**63 - 1
_VLAN = np.array(sorted(packets._ETH_VLAN), dtype=np.int64)
_VLAN_SET = packets._ETH_VLAN
_AF6 = np.array(sorted(packets._AF_INET6), dtype=np.int64)
_IPV6_EXT = np.array(sorted(packets._IPV6_EXT), dtype=np.int64)
_RAW_LINKS = (packets.LINK_RAW, packets.LINK_IPV4, packets.LINK_IPV6)
_U16 = struct.Struct(">H").unpack_from


class BlobError(ValueError):
    """A blob is truncated or garbled, or names a file or payload range that is not there."""


@dataclass(frozen=True)
class PartIndex:
    """The TCP packets of one part that carry data or open or close a connection, in capture order.

    ``src`` and ``dst`` index ``endpoints`` ("ip:port", "[v6]:port"), which is sorted, so comparing
    two ids compares the strings (the connection key is ``min|max``). ``offset`` is the payload's
    absolute offset in the part's file; ``length`` its captured length.
    """

    file_rank: int
    path: str
    endpoints: tuple[str, ...]
    packet: Arr  # int64
    ts: Arr  # int64, nanoseconds since the epoch
    src: Arr  # int64
    dst: Arr
    seq: Arr  # int64 (u32 values)
    ack: Arr
    flags: Arr  # int64 (u8 values)
    offset: Arr  # int64
    length: Arr  # int64
    missing: Arr  # int64

    def __len__(self) -> int:
        return len(self.packet)


# -- gathering fields ------------------------------------------------------------------------------------
def _window(d: Arr, pos: Arr, width: int) -> Arr:
    """``width`` octets at each position (clipped at the end of ``d``: such rows are masked off by the
    length checks, which compare with record ends inside ``d``)."""
    return d.take(pos[:, None] + np.arange(width, dtype=np.int64), mode="clip")


def _be16(w: Arr, k: int) -> Arr:
    return (w[:, k].astype(np.int64) << 8) | w[:, k + 1]


def _be32(w: Arr, k: int) -> Arr:
    return ((w[:, k].astype(np.int64) << 24) | (w[:, k + 1].astype(np.int64) << 16)
            | (w[:, k + 2].astype(np.int64) << 8) | w[:, k + 3])


def _u32(w: Arr, k: int, endian: str) -> Arr:
    return np.ascontiguousarray(w[:, k:k + 4]).view(endian + "u4")[:, 0].astype(np.int64)


# -- the walks: where each record is ---------------------------------------------------------------------
@dataclass
class _Records:
    """Per record of a part: packet number, ts, [start, end) of its packet data in the part, the octets
    the snap length cut off (wire length less captured length), link type."""

    packet: Arr
    ts: Arr
    start: Arr
    end: Arr
    cut: Arr
    link: Arr


def _pcap_records(data: bytes, part: capture.Part) -> _Records:
    size = len(data)
    caplen_at = struct.Struct(part.endian + "I").unpack_from
    heads: list[int] = []
    add = heads.append
    off, limit = 0, size - 16
    # The one loop per record, kept to the bone (0.2 us a record): a record's length says where the next
    # begins. Only the last record can run past the part (the file changed since the index): dropped.
    while off <= limit:
        add(off)
        off += 16 + caplen_at(data, off + 8)[0]
    if off > size:
        heads.pop()
    h = np.array(heads, dtype=np.int64)
    d = np.frombuffer(data, dtype=np.uint8)
    w = _window(d, h, 16) if len(h) else np.zeros((0, 16), np.uint8)
    sec, frac, caplen, wirelen = (_u32(w, k, part.endian) for k in (0, 4, 8, 12))
    return _Records(
        packet=part.first_packet + np.arange(len(h), dtype=np.int64),
        ts=sec * 1_000_000_000 + frac * part.ts_scale,
        start=h + 16, end=h + 16 + caplen, cut=wirelen - caplen,
        link=np.full(len(h), part.links[0][0], dtype=np.int64))


def _pcapng_records(data: bytes, part: capture.Part) -> _Records:
    size = len(data)
    e = part.endian
    head = struct.Struct(e + "II").unpack_from
    links = list(part.links)
    at: list[int] = []  # packet blocks' offsets: their type and length are gathered below
    add = at.append
    idbs: list[int] = []  # per interface block in the part: how many packet blocks came before it
    orders: list[tuple[int, str]] = [(0, e)]  # (first packet block, byte order of the block headers)
    is_epb, is_opb, is_spb, off = capture._EPB, capture._OPB, capture._SPB, 0
    # The same checks as capture._pcapng_blocks, whose first failure ends read_part's walk.
    while off <= size - 12:
        btype, blen = head(data, off)
        if btype == capture._SHB:  # its octets read the same in either byte order
            bom = capture._BOM.get(data[off + 8:off + 12])
            if bom is None:
                break
            head = struct.Struct(bom + "II").unpack_from
            btype, blen = head(data, off)
            orders.append((len(at), bom))
        if blen < 12 or blen % 4 or blen > capture.MAX_RECORD or off + blen > size:
            break
        if btype == is_epb or btype == is_opb or btype == is_spb:
            add(off)
        elif btype == capture._IDB:
            links.append(capture._idb_link(data, off, blen, e))  # read_part reads it in the part's byte order
            idbs.append(len(at))
        off += blen
    n = len(at)
    pos = np.array(at, dtype=np.int64)
    d = np.frombuffer(data, dtype=np.uint8)
    w = _window(d, pos, 28) if n else np.zeros((0, 28), np.uint8)
    # block type and length in their section's byte order; the packet fields in the part's (as read_part)
    kind, sizes = _u32(w, 0, e), _u32(w, 4, e)
    for first, order in orders[1:]:
        kind[first:], sizes[first:] = _u32(w[first:], 0, order), _u32(w[first:], 4, order)
    nlinks = len(part.links) + np.searchsorted(np.array(idbs, dtype=np.int64), np.arange(n), side="right")
    w = w[:, 8:]
    spb = kind == capture._SPB
    epb = kind == capture._EPB
    iface = np.where(epb, _u32(w, 0, e), w.view(np.uint8)[:, 0:2].copy().view(e + "u2")[:, 0].astype(np.int64))
    hi, lo, caplen, wirelen = (_u32(w, k, e) for k in (4, 8, 12, 16))
    # a simple packet block: no interface field (the first), no timestamp, captured length from its size
    spb_wire = _u32(w, 0, e)
    spb_cap = np.minimum(spb_wire, sizes - 16)
    li = np.where(spb, np.where(nlinks > 0, 0, -1), np.where(iface < nlinks, iface, -1))
    caplen = np.where(spb, spb_cap, caplen)
    wirelen = np.where(spb, spb_wire, wirelen)
    start = pos + np.where(spb, 12, 28)
    end = start + caplen
    # fields read past the part end (a short block last in the part): read_part fails there
    inside = (end <= size) & (spb | (pos + 28 <= size))
    link_codes = np.array([lk for lk, _ in links] + [-1], dtype=np.int64)  # [-1]: li == -1
    link = link_codes[li]
    ticks = (hi.astype(np.uint64) << np.uint64(32)) | lo.astype(np.uint64)
    ts = np.zeros(n, dtype=np.int64)
    for k in np.unique(li[~spb]).tolist():
        sel = (li == k) & ~spb
        units = links[k][1] if k >= 0 else 1_000_000
        ts[sel] = _nanoseconds(ticks[sel], units)
    keep = np.nonzero(inside)[0]
    packet = part.first_packet + np.arange(n, dtype=np.int64)
    return _Records(packet=packet[keep], ts=ts[keep], start=start[keep], end=end[keep],
                    cut=(wirelen - caplen)[keep], link=link[keep])


def _nanoseconds(ticks: Arr, units: int) -> Arr:
    """``ticks * 10**9 // units`` exactly, held at 2**63-1."""
    if 1_000_000_000 % units == 0:
        mult = 1_000_000_000 // units
        limit = _TS_MAX // mult
        return np.where(ticks > limit, _TS_MAX, (ticks * np.uint64(mult)).astype(np.int64))
    # resolutions that are not a divisor of a nanosecond (2**-k, picoseconds): exact Python integers
    return np.array([min(t * 1_000_000_000 // units, _TS_MAX) for t in ticks.tolist()], dtype=np.int64)


# -- the layers ---------------------------------------------------------------------------------------------
def _layers(data: bytes, r: _Records) -> tuple[Arr, Arr, Arr, Arr, Arr, Arr, Arr, Arr, Arr, list[str]]:
    """Link, IP and TCP headers of every record. Returns the kept records' indexes, then per kept record:
    source and destination endpoint ids into the returned (unsorted) strings, seq, ack, flags, payload
    offset in ``data``, payload length, missing."""
    d = np.frombuffer(data, dtype=np.uint8)
    n = len(r.start)
    start, end, link = r.start, r.end, r.link
    length = end - start
    ipver = np.zeros(n, dtype=np.int64)
    ip = start.copy()
    w1 = _window(d, start, 22)

    def ether(idx: Arr, etype: Arr, off: Arr) -> None:
        ipver[idx] = np.where(etype == 0x0800, 4, np.where(etype == 0x86DD, 6, 0))
        ip[idx] = off

    m = np.nonzero((link == packets.LINK_ETHERNET) & (length >= 14))[0]
    if len(m):
        w = w1[m]
        etype = _be16(w, 12)
        off = start[m] + 14
        for rel in (16, 20):  # up to two tags from the window (QinQ); more go octet by octet below
            tag = np.isin(etype, _VLAN) & (end[m] - off >= 4)
            etype = np.where(tag, _be16(w, rel), etype)
            off = np.where(tag, off + 4, off)
        for j in np.nonzero(np.isin(etype, _VLAN) & (end[m] - off >= 4))[0].tolist():
            o, et, stop = int(off[j]), int(etype[j]), int(end[m[j]])
            while et in _VLAN_SET and stop - o >= 4:
                et = _U16(data, o + 2)[0]
                o += 4
            etype[j], off[j] = et, o
        ether(m, etype, off)
    for code, hlen, at in ((packets.LINK_SLL, 16, 14), (packets.LINK_SLL2, 20, 0)):
        m = np.nonzero((link == code) & (length >= hlen))[0]
        if len(m):
            ether(m, _be16(w1[m], at), start[m] + hlen)
    m = np.nonzero(((link == packets.LINK_NULL) | (link == packets.LINK_LOOP)) & (length >= 4))[0]
    if len(m):
        w = w1[m]
        big = _be32(w, 0)
        little = np.ascontiguousarray(w[:, 0:4]).view("<u4")[:, 0].astype(np.int64)
        # NULL is in the capturing host's byte order: a small value fits one end or the other
        af = np.where((link[m] == packets.LINK_NULL) & (w[:, 0] != 0), little, big)
        ipver[m] = np.where(af == 2, 4, np.where(np.isin(af, _AF6), 6, 0))
        ip[m] = start[m] + 4
    m = np.nonzero(np.isin(link, _RAW_LINKS) & (length >= 1))[0]
    if len(m):
        v = w1[m, 0] >> 4
        ipver[m] = np.where(v == 4, 4, np.where(v == 6, 6, 0))

    # IP: the segment's end (padding after the datagram dropped) and what the snap length cut off
    seg_end = end.copy()
    cut = r.cut.copy()
    tcp_at = np.zeros(n, dtype=np.int64)
    ok = np.zeros(n, dtype=bool)
    fallback = np.zeros(n, dtype=bool)
    v4 = np.nonzero(ipver == 4)[0]
    w4 = _window(d, ip[v4], 20)
    if len(v4):
        vihl = w4[:, 0].astype(np.int64)
        ihl = (vihl & 0x0F) * 4
        total = _be16(w4, 2)
        good = ((end[v4] - ip[v4] >= 20) & (vihl >> 4 == 4) & (ihl >= 20) & (w4[:, 9] == 6)
                & (_be16(w4, 6) & 0x3FFF == 0))  # not a fragment: those are not reassembled
        _ip_end(v4, ip[v4] + total, total, seg_end, cut, True)
        ok[v4] = good
        tcp_at[v4] = ip[v4] + ihl
    v6 = np.nonzero(ipver == 6)[0]
    w6 = _window(d, ip[v6], 40)
    if len(v6):
        plen = _be16(w6, 4)
        nxt = w6[:, 6].astype(np.int64)
        good = (end[v6] - ip[v6] >= 40) & (w6[:, 0] >> 4 == 6)
        _ip_end(v6, ip[v6] + 40 + plen, plen, seg_end, cut, False)
        fallback[v6] = good & np.isin(nxt, _IPV6_EXT)
        ok[v6] = good & (nxt == 6)
        tcp_at[v6] = ip[v6] + 40

    # TCP
    t = np.nonzero(ok)[0]
    wt = _window(d, tcp_at[t], 20)
    hl = (wt[:, 12].astype(np.int64) >> 4) * 4
    flags = wt[:, 13].astype(np.int64)
    pay = tcp_at[t] + hl
    tend = seg_end[t]
    plen = np.where(tend > pay, tend - pay, 0)
    keep_t = ((tend - tcp_at[t] >= 20) & (hl >= 20)
              & ((plen > 0) | (flags & (packets.TCP_SYN | packets.TCP_FIN | packets.TCP_RST) != 0)))
    t, wt, flags, pay, tend, plen = t[keep_t], wt[keep_t], flags[keep_t], pay[keep_t], tend[keep_t], plen[keep_t]
    sport, dport = _be16(wt, 0), _be16(wt, 2)

    # endpoints: one string per distinct (address, port), never per packet
    names: list[str] = []
    src = np.zeros(len(t), dtype=np.int64)
    dst = np.zeros(len(t), dtype=np.int64)
    is4 = ipver[t] == 4
    s4 = np.nonzero(is4)[0]
    if len(s4):
        rows = np.searchsorted(v4, t[s4])
        keys = np.concatenate([(_be32(w4[rows], 12) << 16) | sport[s4], (_be32(w4[rows], 16) << 16) | dport[s4]])
        uniq, inv = np.unique(keys, return_inverse=True)
        base = len(names)
        names.extend(f"{k >> 40}.{(k >> 32) & 255}.{(k >> 24) & 255}.{(k >> 16) & 255}:{k & 0xFFFF}"
                     for k in uniq.tolist())
        src[s4], dst[s4] = base + inv[:len(s4)], base + inv[len(s4):]
    s6 = np.nonzero(~is4)[0]
    if len(s6):
        rows = np.searchsorted(v6, t[s6])
        ports = np.stack([np.concatenate([sport[s6], dport[s6]]) >> 8,
                          np.concatenate([sport[s6], dport[s6]]) & 255], axis=1).astype(np.uint8)
        addrs = np.concatenate([w6[rows, 8:24], w6[rows, 24:40]])
        keys6 = np.ascontiguousarray(np.concatenate([addrs, ports], axis=1)).view("V18")[:, 0]
        uniq6, inv6 = np.unique(keys6, return_inverse=True)
        base = len(names)
        for k in uniq6.tolist():
            raw = bytes(k)
            names.append(f"{packets._v6(raw[:16])}:{int.from_bytes(raw[16:], 'big')}")
        src[s6], dst[s6] = base + inv6[:len(s6)], base + inv6[len(s6):]
    keep = t
    seq, ack = _be32(wt, 4), _be32(wt, 8)
    missing = np.maximum(cut[t], 0)
    offset = np.where(plen > 0, pay, tend)  # an empty payload's offset stays inside the record

    # the rest through the scalar layers: their strings join the table, their offsets come from where
    # the payload must end (the IP layer's end, known here)
    fb = np.nonzero(fallback)[0]
    if len(fb):
        got: list[tuple[int, int, int, int, int, int, int, int, int]] = []
        ids: dict[str, int] = {}
        for i in fb.tolist():
            info = packets.tcp(data, int(start[i]), int(end[i]), int(r.cut[i]), int(link[i]))
            if info is None:
                continue
            s, dd, sq, ak, fl, payload, miss = info
            stop = int(seg_end[i])
            got.append((i, ids.setdefault(s, len(names) + len(ids)), ids.setdefault(dd, len(names) + len(ids)),
                        sq, ak, fl, stop - len(payload), len(payload), miss))
        names.extend(ids)
        if got:
            g = np.array(got, dtype=np.int64)
            keep = np.concatenate([keep, g[:, 0]])
            order = np.argsort(keep, kind="stable")
            keep = keep[order]
            src, dst = np.concatenate([src, g[:, 1]])[order], np.concatenate([dst, g[:, 2]])[order]
            seq, ack = np.concatenate([seq, g[:, 3]])[order], np.concatenate([ack, g[:, 4]])[order]
            flags = np.concatenate([flags, g[:, 5]])[order]
            offset, plen = np.concatenate([offset, g[:, 6]])[order], np.concatenate([plen, g[:, 7]])[order]
            missing = np.concatenate([missing, g[:, 8]])[order]
    return keep, src, dst, seq, ack, flags, offset, plen, missing, names


def _ip_end(rows: Arr, ip_end: Arr, declared: Arr, seg_end: Arr, cut: Arr, zero_is_whole: bool) -> None:
    """The IP layer's say on where the segment ends: link padding after the datagram is dropped; a
    datagram cut short by the snap length is missing what it declares beyond the record.
    ``zero_is_whole`` (IPv4): a length of 0 runs to the record's end (segmentation offload, as in
    packets._ipv4)."""
    end = seg_end[rows]
    pad = (ip_end < end) & (declared != 0) if zero_is_whole else ip_end < end
    cut[rows] = np.where(pad | (declared == 0), cut[rows], ip_end - end)
    seg_end[rows] = np.where(pad, ip_end, end)


# -- the API ---------------------------------------------------------------------------------------------------
def part_index(part: capture.Part) -> PartIndex:
    """The packets :func:`capture.read_part` yields segments for, with the payloads' file offsets."""
    with open(part.path, "rb") as f:
        f.seek(part.start)
        data = f.read(part.end - part.start)
    r = _pcap_records(data, part) if part.fmt == "pcap" else _pcapng_records(data, part)
    if len(r.start):
        keep, src, dst, seq, ack, flags, offset, plen, missing, names = _layers(data, r)
    else:
        z = np.zeros(0, dtype=np.int64)
        keep, src, dst, seq, ack, flags, offset, plen, missing, names = z, z, z, z, z, z, z, z, z, []
    # one id per distinct string, in string order (the scalar path and the vector one may both name one)
    endpoints = sorted(set(names))
    where = {s: k for k, s in enumerate(endpoints)}
    remap = np.array([where[s] for s in names] or [0], dtype=np.int64)
    return PartIndex(
        file_rank=part.file_rank, path=part.path, endpoints=tuple(endpoints),
        packet=r.packet[keep], ts=r.ts[keep], src=remap[src], dst=remap[dst], seq=seq, ack=ack, flags=flags,
        offset=offset + part.start, length=plen, missing=missing)


def by_connection(index: PartIndex) -> list[tuple[str, bytes]]:
    """One (connection key, blob) per connection in the part, keys in string order. The key is
    :func:`session.connection_key`'s for either direction."""
    n = len(index)
    if not n:
        return []
    lo, hi = np.minimum(index.src, index.dst), np.maximum(index.src, index.dst)
    width = len(index.endpoints)
    conns, inv = np.unique(lo * width + hi, return_inverse=True)
    order = np.argsort(inv, kind="stable")  # stable: capture order within each connection
    rec = np.empty(n, dtype=PACKET)
    for name in ("packet", "ts", "offset", "seq", "ack", "length", "missing", "flags"):
        rec[name] = getattr(index, name)
    rec["dir"] = index.src != lo
    rec = rec[order]
    bounds = np.concatenate([[0], np.cumsum(np.bincount(inv, minlength=len(conns)))]).tolist()
    out = []
    for k, code in enumerate(conns.tolist()):
        a, b = index.endpoints[code // width].encode(), index.endpoints[code % width].encode()
        count = bounds[k + 1] - bounds[k]
        blob = _HEAD.pack(_MAGIC, index.file_rank, count, len(a), len(b)) + a + b + rec[bounds[k]:bounds[k + 1]].tobytes()
        out.append((f"{a.decode()}|{b.decode()}", blob))
    out.sort(key=lambda kb: kb[0])
    return out


def blob_packets(blob: bytes) -> int:
    """How many packets a blob holds (from its header; :func:`read_blob` checks the rest)."""
    if len(blob) < _HEAD.size:
        raise BlobError(f"truncated blob: {len(blob)} octets, the header alone is {_HEAD.size}")
    return int(_HEAD.unpack_from(blob, 0)[2])


def read_blob(blob: bytes) -> tuple[int, str, str, Arr]:
    """A blob's file rank, its two endpoints and its packets (a structured array of :data:`PACKET`);
    :class:`BlobError` if it is not one."""
    if len(blob) < _HEAD.size:
        raise BlobError(f"truncated blob: {len(blob)} octets, the header alone is {_HEAD.size}")
    magic, rank, count, la, lb = _HEAD.unpack_from(blob, 0)
    if magic != _MAGIC:
        raise BlobError(f"not a packet blob (magic {magic!r})")
    body = _HEAD.size + la + lb
    if len(blob) != body + count * PACKET.itemsize:
        raise BlobError(f"blob of {len(blob)} octets, its header says {body + count * PACKET.itemsize}")
    try:
        a, b = blob[_HEAD.size:_HEAD.size + la].decode("ascii"), blob[_HEAD.size + la:body].decode("ascii")
    except UnicodeDecodeError:
        raise BlobError("garbled endpoint in blob") from None
    rec = np.frombuffer(blob, dtype=PACKET, offset=body, count=count)
    if count and (int(rec["dir"].max()) > 1 or int(rec["offset"].min()) < 0):
        raise BlobError("garbled packet in blob")
    return rank, a, b, rec


def segments(blobs: Iterable[bytes], paths: Sequence[str]) -> Iterator[capture.Segment]:
    """The packets of ``blobs`` (one connection's, in capture order) as segments, their payloads read
    from ``paths[file rank]`` (plain capture files: a gzip input's inflated copy). Each file is mapped
    once per call. :class:`BlobError` for a garbled blob, a rank without a path, or a payload past the
    end of its file; OSError if a file cannot be read."""
    if isinstance(paths, str):
        raise TypeError("paths: a sequence of paths by file rank, not one path")
    files: dict[int, tuple[Any, bytes | mmap.mmap]] = {}
    Segment = capture.Segment
    try:
        for blob in blobs:
            rank, a, b, rec = read_blob(blob)
            if rank not in files:
                if rank >= len(paths):
                    raise BlobError(f"blob of file rank {rank}, only {len(paths)} files given")
                f = open(paths[rank], "rb")  # noqa: SIM115 (closed in the finally below)
                try:
                    m: bytes | mmap.mmap = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                except ValueError:  # an empty file cannot be mapped
                    m = b""
                files[rank] = (f, m)
            buf = files[rank][1]
            size = len(buf)
            if len(rec) and bool(((rec["offset"] > size) | (rec["length"] > size - rec["offset"])).any()):
                raise BlobError(f"blob names octets past the end of {paths[rank]} ({len(buf)} octets)")
            ends = (a, b)
            for p, ts, off, seq, ack, ln, miss, flags, d in zip(
                    rec["packet"].tolist(), rec["ts"].tolist(), rec["offset"].tolist(), rec["seq"].tolist(),
                    rec["ack"].tolist(), rec["length"].tolist(), rec["missing"].tolist(), rec["flags"].tolist(),
                    rec["dir"].tolist(), strict=True):
                yield Segment(rank, p, ts, ends[d], ends[1 - d], seq, ack, flags, buf[off:off + ln], miss)
    finally:
        for f, m in files.values():
            if isinstance(m, mmap.mmap):
                m.close()
            f.close()
