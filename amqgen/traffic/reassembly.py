"""TCP reassembly of one direction of one connection.

Segments arrive in capture order. Each is placed by its sequence number relative to the next octet
the stream expects (32-bit arithmetic, so wraparound needs no special case): octets already delivered
(retransmissions, overlaps) are dropped, a segment ahead of the stream waits in a reorder buffer, and
a segment that fills the hole releases what waited behind it, reported at the filling segment's packet
(that is when those octets reach the application, and where tshark reports them). When the octets
ahead of a hole pass ``window`` (or the stream ends) the hole is a gap in the capture: it is reported
once, with its size, and the stream goes on from the first octet after it. Memory is bounded by
``window`` plus one segment.
"""

from __future__ import annotations

from dataclasses import dataclass

from .packets import TCP_SYN

Meta = tuple[int, int, int]  # (file rank, packet number, timestamp in ns) of the packet an event comes from

_MOD = 1 << 32
_HALF = 1 << 31

#: Octets buffered ahead of a hole before it is declared a gap.
DEFAULT_WINDOW = 4 * 1024 * 1024


def _rel(a: int, b: int) -> int:
    """a - b as a signed 32-bit distance between sequence numbers."""
    d = (a - b) & (_MOD - 1)
    return d - _MOD if d >= _HALF else d


@dataclass
class Data:
    data: bytes
    meta: Meta


@dataclass
class Gap:
    size: int  # octets missing from the capture
    meta: Meta  # the packet after the gap (where the stream resumes)


Event = Data | Gap


class Reassembler:
    def __init__(self, window: int = DEFAULT_WINDOW) -> None:
        self.window = window
        self.next_seq: int | None = None
        self._pending: dict[int, tuple[bytes, int, Meta]] = {}  # seq -> (payload, octets cut off, meta)
        self._pending_bytes = 0
        self.duplicate_bytes = 0
        self.gaps = 0
        self.gap_bytes = 0

    @property
    def holding(self) -> bool:
        """Octets wait behind a hole: what this direction sent before them has not been read yet."""
        return bool(self._pending)

    def feed(self, seq: int, flags: int, payload: bytes, missing: int, meta: Meta) -> list[Event]:
        if seq == self.next_seq and payload and not missing and not self._pending and not flags & TCP_SYN:
            # the usual segment: the next octets, whole, nothing waiting (the general path below gives
            # the same, at twice the cost)
            self.next_seq = (seq + len(payload)) & (_MOD - 1)
            return [Data(payload, meta)]
        out: list[Event] = []
        if flags & TCP_SYN:
            seq = (seq + 1) & (_MOD - 1)  # the SYN takes one sequence number
            if self.next_seq is None:  # (a SYN captured after data it preceded changes nothing)
                self.next_seq = seq
        length = len(payload) + missing
        if not length:
            return out
        if self.next_seq is None:  # the connection began before the capture
            self.next_seq = seq
        rel = _rel(seq, self.next_seq)
        if rel + length <= 0:
            self.duplicate_bytes += length
            return out
        if rel > 0:
            held = self._pending.get(seq)
            if held is None or len(held[0]) + held[1] < length:
                self._pending_bytes += length - (len(held[0]) + held[1] if held else 0)
                self._pending[seq] = (payload, missing, meta)
            else:
                self.duplicate_bytes += length
            while self._pending_bytes > self.window:
                self._skip_hole(out)
            return out
        self._deliver(-rel, payload, missing, meta, out)
        self._drain(out, meta)
        return out

    def flush(self) -> list[Event]:
        """The stream ended: whatever waits behind a hole is delivered after a gap."""
        out: list[Event] = []
        while self._pending:
            self._skip_hole(out)
        return out

    def _deliver(self, skip: int, payload: bytes, missing: int, meta: Meta, out: list[Event]) -> None:
        """Deliver a segment that starts ``skip`` octets before the next expected one."""
        assert self.next_seq is not None
        if skip:
            self.duplicate_bytes += skip
            if skip >= len(payload):
                missing -= skip - len(payload)
                payload = b""
            else:
                payload = payload[skip:]
        if payload:
            out.append(Data(payload, meta))
        if missing > 0:
            self._gap(missing, meta, out)
        self.next_seq = (self.next_seq + len(payload) + max(missing, 0)) & (_MOD - 1)

    def _gap(self, size: int, meta: Meta, out: list[Event]) -> None:
        self.gaps += 1
        self.gap_bytes += size
        out.append(Gap(size, meta))

    def _drain(self, out: list[Event], released_by: Meta | None = None) -> None:
        """Deliver what waited and now follows on; ``released_by``: the packet that filled the hole."""
        assert self.next_seq is not None
        progress = True
        while progress and self._pending:
            progress = False
            for seq in list(self._pending):
                rel = _rel(seq, self.next_seq)
                if rel > 0:
                    continue
                payload, missing, meta = self._pending.pop(seq)
                length = len(payload) + missing
                self._pending_bytes -= length
                if rel + length <= 0:
                    self.duplicate_bytes += length
                else:
                    self._deliver(-rel, payload, missing, released_by or meta, out)
                progress = True

    def _skip_hole(self, out: list[Event]) -> None:
        assert self.next_seq is not None
        nxt = self.next_seq
        first = min(self._pending, key=lambda s: _rel(s, nxt))
        self._gap(_rel(first, nxt), self._pending[first][2], out)
        self.next_seq = first
        self._drain(out)
