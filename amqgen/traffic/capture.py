"""Capture files: pcap and pcapng (plain or gzip), their record index, and their records.

Two halves. The driver calls :func:`index_file` on each input: a walk over record headers (pcap) or
block lengths (pcapng) that touches no packet data and yields the byte ranges of :class:`Part`
objects, each holding whole records and at most about ``part_size`` octets. An executor calls
:func:`read_part` on one part: it walks the same records and hands each packet to the packet layers
(:mod:`amqgen.traffic.packets`), yielding one :class:`Segment` per TCP packet that carries data or
opens or closes a connection. Both walks of a pcapng file go through one block iterator.

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
from typing import NamedTuple

from .packets import link_type, tcp

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

#: A record longer than this is taken as a corrupt header, not a packet (jumbo and offloaded
#: segments stay far below it).
MAX_RECORD = 16 * 1024 * 1024



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
    link = link_type(link)
    idx.link_types.add(link)
    links = ((link, 0),)
    caplen_at = struct.Struct(endian + "I").unpack_from
    limit = size - 16  # the last offset a whole record header fits at
    off, n = 24, 0
    while off < size:
        start, first = off, n + 1
        # The driver's one loop per record (it walks the whole file before any task starts), kept
        # as small as index._pcap_records' (about 0.3 us a record): a part's records, its checks
        # only the length's; a truncated record is found after the loop, which then steps past it.
        stop = min(limit, start + part_size - 1)
        while off <= stop:
            caplen = caplen_at(buf, off + 8)[0]
            if caplen > MAX_RECORD:
                idx.error = f"implausible record length {caplen} at offset {off}"
                break
            off += 16 + caplen
            n += 1
        if off > size:  # the last record stepped over the end of the file: walk back to it
            off, n = start, first - 1
            while off + 16 + caplen_at(buf, off + 8)[0] <= size:
                off += 16 + caplen_at(buf, off + 8)[0]
                n += 1
            idx.error = f"truncated record at offset {off} (packet {n + 1})"
        elif idx.error is None and size - off < 16 and off < size:
            idx.error = f"truncated record header at offset {off}"
        if off > start:
            idx.parts.append(Part(rank, idx.path, "pcap", endian, start, off, first, links, scale))
        if idx.error is not None:
            break
    idx.packets = n
    if n:
        sec, frac = struct.unpack_from(endian + "II", buf, 24)
        idx.first_ts = sec * 1_000_000_000 + frac * scale


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


_BOM = {b"\x4d\x3c\x2b\x1a": "<", b"\x1a\x2b\x3c\x4d": ">"}


def _pcapng_blocks(buf: bytes | mmap.mmap, off: int, end: int, endian: str) -> Iterator[tuple[int, int, int, str]]:
    """Every block of ``buf[off:end]`` as (offset, type, length, byte order): a section header block sets the
    byte order of itself and the blocks after it. A damaged block raises CaptureError; those before it were
    yielded."""
    while off < end:
        if end - off < 12:
            raise CaptureError(f"truncated block header at offset {off}")
        if bytes(buf[off:off + 4]) == _PCAPNG_SHB:
            bom = _BOM.get(bytes(buf[off + 8:off + 12]))
            if bom is None:
                raise CaptureError(f"bad section byte-order magic at offset {off}")
            endian = bom
        btype, blen = struct.unpack_from(endian + "II", buf, off)
        if blen < 12 or blen % 4 or blen > MAX_RECORD:
            raise CaptureError(f"implausible block length {blen} at offset {off}")
        if off + blen > end:
            raise CaptureError(f"truncated block at offset {off}")
        yield off, btype, blen, endian
        off += blen


def _idb_link(buf: bytes | mmap.mmap, off: int, blen: int, endian: str) -> tuple[int, int]:
    """An interface description block's (link type, timestamp units per second)."""
    link = struct.unpack_from(endian + "H", buf, off + 8)[0]
    return link_type(link), _tsresol(bytes(buf[off + 16:off + blen - 4]), endian)


def _index_pcapng(buf: mmap.mmap, idx: FileIndex, rank: int, part_size: int) -> None:
    start, first, n = 0, 1, 0
    endian = "<"
    links: list[tuple[int, int]] = []  # the current section's interfaces so far
    start_links: tuple[tuple[int, int], ...] = ()  # those defined before the current part starts

    def cut(at: int) -> None:
        nonlocal start, first, start_links
        if at > start:
            idx.parts.append(Part(rank, idx.path, "pcapng", endian, start, at, first, start_links))
        start, first, start_links = at, n + 1, tuple(links)

    end, size = 0, len(buf)
    try:
        while end < size:
            if idx.first_ts is not None:
                # A run of packet blocks, kept to the bone (the driver walks the whole file before any
                # task starts): type, length and the length's checks only. A block of another type,
                # or one those checks refuse, ends the run and goes through _pcapng_blocks, whose
                # checks and errors are the reference.
                head = struct.Struct(endian + "II").unpack_from
                off = end
                while off <= size - 12:
                    btype, blen = head(buf, off)
                    if (btype != _EPB and btype != _SPB and btype != _OPB) or blen < 12 or blen & 3 \
                            or blen > MAX_RECORD or off + blen > size:
                        break
                    n += 1
                    off += blen
                    if off - start >= part_size:
                        cut(off)
                end = off
                if end >= size:
                    break
            off, btype, blen, block_endian = next(_pcapng_blocks(buf, end, size, endian))
            if btype == _SHB:
                cut(off)  # every section starts a part: its byte order and interfaces are its own
                endian, links, start_links = block_endian, [], ()
            elif btype == _IDB:
                links.append(_idb_link(buf, off, blen, endian))
                idx.link_types.add(links[-1][0])
            elif btype in (_EPB, _SPB, _OPB):
                n += 1
                if idx.first_ts is None and btype != _SPB:
                    iface = struct.unpack_from(endian + ("I" if btype == _EPB else "H"), buf, off + 8)[0]
                    hi, lo = struct.unpack_from(endian + "II", buf, off + 12)
                    units = links[iface][1] if iface < len(links) else 1_000_000
                    idx.first_ts = ((hi << 32) | lo) * 1_000_000_000 // units
            end = off + blen
            if end - start >= part_size:
                cut(end)
    except CaptureError as e:
        idx.error = f"{e} (after packet {n})" if str(e).startswith("truncated block at") else str(e)
    cut(end)
    idx.packets = n


class Segment(NamedTuple):
    """One TCP packet: where it is in the capture, its endpoints, and its payload. (A named tuple:
    one is made per packet on the decode path, where a frozen dataclass cost about 1 us more.)"""

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
        seg = tcp(data, off + 16, off + 16 + caplen, wirelen - caplen, link)
        if seg is not None:
            yield Segment(part.file_rank, n, sec * 1_000_000_000 + frac * scale, *seg)
        off += 16 + caplen
        n += 1


def _pcapng_segments(data: bytes, part: Part) -> Iterator[Segment]:
    e = part.endian
    epb = struct.Struct(e + "IIIII").unpack_from
    opb = struct.Struct(e + "HHIIII").unpack_from
    links = list(part.links)
    n = part.first_packet
    try:
        for off, btype, blen, _ in _pcapng_blocks(data, 0, len(data), e):
            if btype == _IDB:  # interfaces defined inside the part (those before it are in part.links)
                links.append(_idb_link(data, off, blen, e))
            elif btype == _EPB or btype == _OPB:
                if btype == _EPB:
                    iface, hi, lo, caplen, wirelen = epb(data, off + 8)
                else:
                    iface, _, hi, lo, caplen, wirelen = opb(data, off + 8)
                body = off + 28
                link, units = links[iface] if iface < len(links) else (-1, 1_000_000)
                seg = tcp(data, body, body + caplen, wirelen - caplen, link)
                if seg is not None:
                    yield Segment(part.file_rank, n, ((hi << 32) | lo) * 1_000_000_000 // units, *seg)
                n += 1
            elif btype == _SPB:
                wirelen = struct.unpack_from(e + "I", data, off + 8)[0]
                caplen = min(wirelen, blen - 16)
                link = links[0][0] if links else -1
                seg = tcp(data, off + 12, off + 12 + caplen, wirelen - caplen, link)
                if seg is not None:
                    yield Segment(part.file_rank, n, 0, *seg)
                n += 1
    except CaptureError:
        return  # the index walked these blocks whole; a file changed since then ends the part here
