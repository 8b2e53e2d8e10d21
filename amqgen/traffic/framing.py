"""One direction's byte stream -> AMQP frames, decoded with the generated codec.

The framer finds frame boundaries itself (type octet, channel, size, payload, frame-end octet) so
that one bad frame costs one frame, not the rest of the connection: the generated ``FrameReader``
is fed runs of whole frames and decodes them; when a run fails it is fed again one frame at a time
to pin the error to its frame. After a gap in the capture, or a header that cannot be a frame, the
framer resynchronises: it scans for the next offset where a frame of a known type, a plausible size
and a known method or content class ends in a frame-end octet, followed by another plausible frame
header (or the end of the stream). At most one frame (``cap`` octets) is buffered.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from typing import Any

from .codec import Codec
from .reassembly import Meta

_HEAD = struct.Struct(">BHI").unpack_from
_KEY = struct.Struct(">I").unpack_from
_CLASS = struct.Struct(">H").unpack_from


@dataclass(slots=True)
class Frame:
    """A frame found in a stream; ``decoded`` is the codec's frame object, or None with ``error`` set."""

    offset: int  # stream offset of its first octet
    meta: Meta  # the packet that completed it in stream order (its last octet, or a hole's filler)
    ftype: int
    channel: int
    size: int  # payload octets
    decoded: Any
    error: str | None
    error_kind: str | None  # the codec's exception class name
    raw: bytes | None = None  # header frames: the property octets (flags and values), for a JSON cache


@dataclass
class ProtocolHeader:
    offset: int
    meta: Meta
    header: bytes


@dataclass
class Skipped:
    """Octets passed over while looking for a frame boundary (after a gap, or garbage)."""

    offset: int
    size: int
    meta: Meta
    reason: str


Item = Frame | ProtocolHeader | Skipped


class StreamFramer:
    """One direction's buffered octets, for a family's framer (``Framer`` here, ``framing10.Framer10``): the chunks
    not yet framed, the packets that carried them, and what a gap or the stream's end does to them. A subclass
    finds the frames (``_run``)."""

    cap: int

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._buffered = 0
        self._need = 1
        self.base = 0  # stream offset of the first buffered octet
        self._metas: deque[tuple[int, Meta]] = deque()  # (stream offset after a chunk, its packet)
        self.synced = True
        self.frames = 0
        self.octets = 0

    # -- input ---------------------------------------------------------------------------------
    def data(self, chunk: bytes, meta: Meta) -> list[Any]:
        self._chunks.append(chunk)
        self._buffered += len(chunk)
        self.octets += len(chunk)
        self._metas.append((self.base + self._buffered, meta))
        if self._buffered < self._need:
            return []
        return self._run(final=False)

    def gap(self, size: int, meta: Meta) -> list[Any]:
        """Octets missing from the capture: what was buffered can no longer complete a frame."""
        out: list[Any] = []
        if self._buffered:
            out.append(Skipped(self.base, self._buffered, meta, "cut by a gap in the capture"))
        self.base += self._buffered + size
        self._chunks, self._buffered, self._need = [], 0, 1
        self._metas.clear()
        self.synced = False
        return out

    def end(self, meta: Meta) -> list[Any]:
        """The stream ended: decode what can be, and report an incomplete last frame."""
        out = self._run(final=True) if self._buffered else []
        if self._buffered:
            out.append(Skipped(self.base, self._buffered, meta, "the stream ends inside a frame"))
            self.base += self._buffered
            self._chunks, self._buffered = [], 0
        return out

    # -- work ----------------------------------------------------------------------------------
    def _meta_at(self, offset: int) -> Meta:
        """The packet that carried buffered octet ``offset``."""
        offset += self.base
        for end, meta in self._metas:
            if end > offset:
                return meta
        return self._metas[-1][1]

    def _run(self, final: bool) -> list[Any]:
        raise NotImplementedError


class Framer(StreamFramer):
    def __init__(self, codec: Codec, cap: int) -> None:
        super().__init__()
        self.codec = codec
        self.cap = cap  # the largest payload taken as a frame, not as a lost stream
        self.reader = codec.frames.FrameReader(0)
        self._decode_frames = codec.frames.decode_frames
        self._decode_error = codec.exceptions.DecodeError
        self._protocol_header_frame = codec.frames.ProtocolHeaderFrame
        self._header_type = codec.constants.FRAME_HEADER
        self.types = frozenset(codec.frame_names)
        self.end_octet = codec.frame_end
        self.magic = codec.protocol_header[:4]

    def _run(self, final: bool) -> list[Item]:
        buf = self._chunks[0] if len(self._chunks) == 1 else b"".join(self._chunks)
        total = len(buf)
        out: list[Item] = []
        off = 0
        run_start = -1
        run: list[tuple[int, int, int, int]] = []  # (offset, type, channel, size) of whole frames
        need = 1
        types, cap, end_octet = self.types, self.cap, self.end_octet
        while off < total:
            if self.synced and not run:
                off = self._fast(buf, off, out)
                if off >= total:
                    break
            if not self.synced:
                found, wait = self._resync(buf, off, total, final)
                if found < 0:  # nothing here can start a frame; a header may still begin in the last 6
                    keep = total if final else max(off, total - 6)
                    if keep > off:
                        out.append(Skipped(self.base + off, keep - off, self._meta_at(keep - 1), "no frame boundary"))
                    off = keep
                    need = total - off + 1
                    break
                if found > off:
                    out.append(Skipped(self.base + off, found - off, self._meta_at(found), "resynchronised"))
                off = found
                if wait:
                    need = wait
                    break
                self.synced = True
            if buf[off] == self.magic[0] and (total - off < 4 or buf[off:off + 4] == self.magic):
                if total - off < 8:
                    need = 8
                    break
                self._flush_run(buf, run_start, run, out)
                run, run_start = [], -1
                out.append(ProtocolHeader(self.base + off, self._meta_at(off + 7), buf[off:off + 8]))
                off += 8
                continue
            if total - off < 7:
                need = 7
                break
            ftype, channel, size = _HEAD(buf, off)
            if ftype not in types or size > cap:
                self._flush_run(buf, run_start, run, out)
                run, run_start = [], -1
                kind = "FrameTypeError" if ftype not in types else "FrameSizeError"
                why = f"unknown frame type {ftype}" if ftype not in types else f"a frame of {size + 8} octets"
                out.append(Frame(self.base + off, self._meta_at(off + 6), ftype, channel, size, None,
                                 f"{why}: lost the frame boundary", kind))
                self.synced = False
                off += 1
                continue
            end = off + 7 + size
            if end >= total:
                need = end + 1 - off
                break
            if buf[end] != end_octet:
                self._flush_run(buf, run_start, run, out)
                run, run_start = [], -1
                out.append(self._decode_one(buf, off, end, ftype, channel, size))
                # the size may be what was wrong: make sure a frame boundary follows before trusting it
                self.synced = False
                off = end + 1
                continue
            if run_start < 0:
                run_start = off
            run.append((off, ftype, channel, size))
            off = end + 1
        self._flush_run(buf, run_start, run, out)
        # keep what is left for the next chunk
        self.base += off
        rest = buf[off:] if off < total else b""
        self._chunks = [rest] if rest else []
        self._buffered = len(rest)
        self._need = need
        while self._metas and self._metas[0][0] <= self.base:
            if len(self._metas) == 1 and rest:
                break
            self._metas.popleft()
        return out

    def _fast(self, buf: bytes, off: int, out: list[Item]) -> int:
        """The whole frames from ``off`` on, decoded by the codec's stateless decoder in one call;
        the offset where it stopped: the end of the buffer, an incomplete frame, or one it refused,
        which the careful path above then takes frame by frame."""
        try:
            decoded, stop = self._decode_frames(buf, off, self.cap + 8)
        except self._decode_error as e:
            decoded, stop = e.frames, e.offset
        stop = int(stop)
        if not decoded:
            return off
        base = self.base
        header, proto = self._header_type, self._protocol_header_frame
        meta = self._metas[0][1] if len(self._metas) == 1 else None  # one chunk: every frame ended in it
        meta_at = self._meta_at
        for frame in decoded:
            if type(frame) is proto:
                out.append(ProtocolHeader(base + off, meta or meta_at(off + 7), frame[0]))
                off += 8
                continue
            ftype, channel, size = _HEAD(buf, off)
            end = off + 7 + size
            out.append(Frame(base + off, meta or meta_at(end), ftype, channel, size, frame, None, None,
                             buf[off + 19:end] if ftype == header else None))
            off = end + 1
            self.frames += 1
        return stop

    def _flush_run(self, buf: bytes, start: int, run: list[tuple[int, int, int, int]], out: list[Item]) -> None:
        if not run:
            return
        last_off, _, _, last_size = run[-1]
        stop = last_off + 8 + last_size
        try:
            decoded = self.reader.feed(buf[start:stop])
        except Exception:  # noqa: BLE001 -- any failure is narrowed to its frame below
            decoded = None
            self.reader = self.codec.frames.FrameReader(0)  # a failed reader stays failed
        if decoded is None or len(decoded) != len(run):
            for off, ftype, channel, size in run:
                out.append(self._decode_one(buf, off, off + 7 + size, ftype, channel, size))
            return
        base = self.base
        header = self.codec.constants.FRAME_HEADER
        # one chunk buffered (the usual case): every frame ended in its packet
        meta = self._metas[0][1] if len(self._metas) == 1 else None
        meta_at = self._meta_at
        for (off, ftype, channel, size), frame in zip(run, decoded, strict=True):
            out.append(Frame(base + off, meta or meta_at(off + 7 + size), ftype, channel, size, frame, None, None,
                             buf[off + 19:off + 7 + size] if ftype == header else None))
        self.frames += len(run)

    def _decode_one(self, buf: bytes, off: int, end: int, ftype: int, channel: int, size: int) -> Frame:
        """Decode one frame alone. A wrong frame-end octet is reported, and the payload decoded anyway."""
        self.frames += 1
        meta = self._meta_at(end)
        bad_end = buf[end] != self.end_octet
        data = buf[off:end] + bytes((self.end_octet,)) if bad_end else buf[off:end + 1]
        try:
            got = self.reader.feed(data)
            if len(got) != 1:
                raise ValueError(f"{len(got)} frames where one was expected")
        except Exception as e:  # noqa: BLE001 -- hostile bytes: even a codec bug costs one frame, not the job
            self.reader = self.codec.frames.FrameReader(0)
            return Frame(self.base + off, meta, ftype, channel, size, None, str(e) or type(e).__name__, type(e).__name__)
        if bad_end:
            return Frame(self.base + off, meta, ftype, channel, size, got[0],
                         f"frame-end octet is {buf[end]:#04x}, not {self.end_octet:#04x}", "FrameEndError")
        return Frame(self.base + off, meta, ftype, channel, size, got[0], None, None)

    def _plausible(self, buf: bytes, off: int, total: int) -> int | None:
        """The end of a plausible frame at ``off`` (index of its frame-end octet), -1 if more input
        is needed to tell, None if no frame can start there."""
        if total - off < 7:
            return -1
        ftype, channel, size = _HEAD(buf, off)
        if ftype not in self.types or size > self.cap:
            return None
        c = self.codec.constants
        if ftype == c.FRAME_METHOD:
            if size < 4 or (total - off >= 11 and _KEY(buf, off + 7)[0] not in self.codec.method_keys):
                return None
        elif ftype == c.FRAME_HEADER:
            if size < 14 or (total - off >= 9 and _CLASS(buf, off + 7)[0] not in self.codec.content_classes):
                return None
        elif ftype == c.FRAME_HEARTBEAT and (size or channel):
            return None
        end = off + 7 + size
        if end >= total:
            return -1
        return end if buf[end] == self.end_octet else None

    def _resync(self, buf: bytes, off: int, total: int, final: bool) -> tuple[int, int]:
        """Where the stream can be picked up again: (p, 0) when a frame at p is confirmed by a
        plausible frame (or the end of the stream) right after it; (p, n) when the frame at p needs
        n octets from p buffered to tell; (-1, 0) when no frame can start in what is buffered."""
        types = self.types
        for p in range(off, total):
            if buf[p] not in types:
                continue
            end = self._plausible(buf, p, total)
            if end is None:
                continue
            if end < 0:
                if final:
                    continue
                size = _HEAD(buf, p)[2] if total - p >= 7 else 0
                return p, 7 + size + 1 + 7
            nxt = self._plausible(buf, end + 1, total)
            if nxt is None:
                continue
            if nxt < 0 and not final and end + 1 + 7 > total:
                return p, end + 1 + 7 - p
            return p, 0
        return -1, 0
