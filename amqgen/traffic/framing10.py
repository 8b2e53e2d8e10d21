"""One direction's byte stream of an AMQP 1.0 connection -> protocol headers and frames, decoded with the
generated 1.0 codec.

The framer finds the boundaries itself (2.3.1: a 4-octet size, DOFF, type, channel) so that one bad frame costs one
frame: runs of whole frames go to the generated package's stateless ``decode_frames`` in one call; where it
refuses one, that frame is reported with the codec's error and the run goes on after it. A header that cannot be a
frame (DOFF under 2 or past the frame, a type that is neither AMQP nor SASL, a size under 8 or over the cap), and
a gap in the capture, lose the boundary: the framer then resynchronises on the next offset where a plausible frame
header is followed by another (or by the end of the stream). At most one frame (``cap`` octets) is buffered.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from .framing import ProtocolHeader, Skipped, StreamFramer
from .reassembly import Meta

_HEAD = struct.Struct(">IBBH").unpack_from
_MAGIC = b"AMQP"
_TYPES = (0, 1)


@dataclass(slots=True)
class Frame10:
    """A 1.0 frame found in a stream; ``decoded`` is the codec's ``Frame`` (None with ``error`` set)."""

    offset: int
    meta: Meta
    ftype: int
    channel: int
    size: int  # the whole frame's octets (its size field)
    decoded: Any
    error: str | None
    error_kind: str | None


Item10 = Frame10 | ProtocolHeader | Skipped


class Framer10(StreamFramer):
    def __init__(self, codec10: Any, cap: int) -> None:
        super().__init__()
        self.cap = cap
        self._decode_frames = codec10.frames.decode_frames
        self._decode_error = codec10.exceptions.DecodeError

    def _plausible(self, buf: bytes, off: int, total: int) -> int | None:
        """The end of a plausible frame or header at ``off``; -1 when more octets are needed; None if none."""
        if total - off < 8:
            return -1
        if buf[off:off + 4] == _MAGIC:
            return off + 8 if buf[off + 5:off + 8] == b"\x01\x00\x00" else None
        size: int = _HEAD(buf, off)[0]
        doff, ftype = buf[off + 4], buf[off + 5]
        if size < 8 or size > self.cap or doff < 2 or doff * 4 > size or ftype not in _TYPES:
            return None
        return off + size

    def _resync(self, buf: bytes, off: int, total: int, final: bool) -> tuple[int, int]:
        """(p, 0): a frame at p confirmed by a plausible one right after it (or the stream's end); (p, n): p needs
        n octets from p to tell; (-1, 0): nothing buffered can start a frame."""
        for p in range(off, total):
            if buf[p] != 0 and buf[p] != 0x41:  # a size under 16 MiB starts with 0; a header with "A"
                continue
            end = self._plausible(buf, p, total)
            if end is None:
                continue
            if end < 0:
                if final:
                    continue
                return p, 8 + 8
            if end > total:
                if final:
                    continue
                return p, end - p + 8
            if end == total:
                return (p, 0) if final else (p, end - p + 8)
            nxt = self._plausible(buf, end, total)
            if nxt is None:
                continue
            if nxt < 0 and not final:
                return p, end + 8 - p
            return p, 0
        return -1, 0

    def _run(self, final: bool) -> list[Item10]:
        buf = self._chunks[0] if len(self._chunks) == 1 else b"".join(self._chunks)
        total = len(buf)
        out: list[Item10] = []
        off = 0
        need = 1
        run: list[tuple[int, int, int, int]] = []  # (offset, size, type, channel) of whole frames
        cap = self.cap
        while off < total:
            if not self.synced:
                self._flush(buf, run, out)
                run = []
                found, wait = self._resync(buf, off, total, final)
                if found < 0:
                    keep = total if final else max(off, total - 7)
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
            if buf[off] == 0x41:  # "A": a protocol header (a frame this large is over any cap)
                if total - off < 8:
                    need = 8
                    break
                self._flush(buf, run, out)
                run = []
                out.append(ProtocolHeader(self.base + off, self._meta_at(off + 7), buf[off:off + 8]))
                off += 8
                continue
            if total - off < 8:
                need = 8
                break
            size, doff, ftype, channel = _HEAD(buf, off)
            if size < 8 or size > cap or doff < 2 or doff * 4 > size or ftype not in _TYPES:
                self._flush(buf, run, out)
                run = []
                why = (f"a frame of {size} octets" if size < 8 or size > cap else
                       f"DOFF {doff}" if doff < 2 or doff * 4 > size else f"frame type {ftype}")
                out.append(Frame10(self.base + off, self._meta_at(off + 7), ftype, channel, size, None,
                                   f"{why}: lost the frame boundary", "framing"))
                self.frames += 1
                self.synced = False
                off += 1
                continue
            if total - off < size:
                need = size
                break
            run.append((off, size, ftype, channel))
            off += size
        self._flush(buf, run, out)
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

    def _flush(self, buf: bytes, run: list[tuple[int, int, int, int]], out: list[Item10]) -> None:
        """Decode a run of whole frames in one call; a frame the codec refuses is reported alone."""
        i = 0
        base = self.base
        one = self._metas[0][1] if len(self._metas) == 1 else None  # one chunk: every frame ended in it
        meta_at = self._meta_at
        while i < len(run):
            start = run[i][0]
            last_off, last_size = run[-1][0], run[-1][1]
            try:
                decoded = self._decode_frames(buf[start:last_off + last_size])
                bad: Any = None
            except self._decode_error as e:
                decoded, bad = e.frames, e
            except Exception as e:  # noqa: BLE001 -- hostile octets: even a codec bug costs one frame
                decoded, bad = [], e
            for f in decoded:
                off, size, ftype, channel = run[i]
                out.append(Frame10(base + off, one or meta_at(off + size - 1), ftype, channel, size, f, None, None))
                i += 1
            if bad is not None and i < len(run):
                off, size, ftype, channel = run[i]
                kind = getattr(bad, "kind", type(bad).__name__)
                out.append(Frame10(base + off, meta_at(off + size - 1), ftype, channel, size, None,
                                   str(bad) or type(bad).__name__, str(kind)))
                i += 1
        self.frames += len(run)
