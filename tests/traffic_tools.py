"""Test helpers for the traffic pipeline, written independently of amqgen.traffic.

- ``Recorder``: tcpdump on the loopback interface while real clients talk to the broker.
- ``tshark_frames``: Wireshark's AMQP dissector as the oracle, one tuple per AMQP frame.
- pcap reading and writing, and rewrites of a capture: link layers (VLAN, QinQ, SLL, SLL2, BSD
  loopback, raw IP, IPv6), formats (pcapng, nanosecond, big-endian, gzip), and hostile network
  behaviour (reorder, duplicate, overlap, drop, one octet per packet, rotation).
"""

from __future__ import annotations

import gzip
import shutil
import signal
import socket
import struct
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

TCPDUMP = shutil.which("tcpdump") or "/usr/bin/tcpdump"
TSHARK = shutil.which("tshark") or "/usr/bin/tshark"


def need(tool: str) -> str:
    path = shutil.which(tool) or (f"/usr/bin/{tool}" if Path(f"/usr/bin/{tool}").exists() else None)
    if path is None:
        raise AssertionError(f"{tool} is not installed (deps/debian.txt lists it; run scripts/test-env)")
    return path


class Recorder:
    """``with Recorder(path, port): ...`` captures the loopback traffic on ``port`` while the block runs."""

    def __init__(self, path: Path, port: int = 5672, snaplen: int = 0) -> None:
        self.path, self.port, self.snaplen = path, port, snaplen

    def __enter__(self) -> Recorder:  # noqa: PYI034
        cmd = [need("tcpdump"), "-i", "lo", "-B", "65536", "-U", "-n", "-Z", "root", "-w", str(self.path),
               f"tcp port {self.port}"]
        if self.snaplen:
            cmd[1:1] = ["-s", str(self.snaplen)]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()  # "listening on lo, ..." once the capture is running
        assert "listening" in line, f"tcpdump did not start: {line}"
        return self

    def __exit__(self, *exc: object) -> None:
        # tcpdump hands packets over in blocks that retire after its 1 s timeout: wait for that,
        # then until the file stops growing, so the last packets are in it
        time.sleep(1.2)
        last, stable = -1, 0
        while stable < 2:
            time.sleep(0.3)
            size = self.path.stat().st_size if self.path.exists() else 0
            stable = stable + 1 if size == last else 0
            last = size
        self.proc.send_signal(signal.SIGINT)
        _, err = self.proc.communicate(timeout=30)
        assert "\n0 packets dropped by kernel" in "\n" + err, err


# -- the oracle ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OFrame:
    """One AMQP frame as tshark reports it."""

    packet: int
    src_port: int
    dst_port: int
    ftype: int | None  # None: a protocol header
    channel: int | None
    class_id: int | None
    method_id: int | None
    body_size: int | None  # content headers


def tshark_frames(path: Path, ports: tuple[int, ...] = (5672,), display: str = "amqp") -> list[OFrame]:
    """Every AMQP frame tshark finds, with TCP reassembly in and out of order switched on (``display``: a
    display filter; a capture with 1.0 connections leaves them out with amqp.doff and amqp.init fields)."""
    cmd = [need("tshark"), "-r", str(path), "-n", "-o", "tcp.desegment_tcp_streams:TRUE",
           "-o", "tcp.reassemble_out_of_order:TRUE", "-Y", display, "-T", "fields", "-E", "aggregator=,",
           "-e", "frame.number", "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "amqp.type", "-e", "amqp.channel",
           "-e", "amqp.method.class", "-e", "amqp.method.method", "-e", "amqp.header.class",
           "-e", "amqp.header.body-size", "-e", "tcp.len"]
    for p in ports:
        if p != 5672:
            cmd[3:3] = ["-d", f"tcp.port=={p},amqp"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    frames: list[OFrame] = []
    for line in out.splitlines():
        num, sport, dport, types, chans, mclass, mmeth, hclass, bsize, _ = (line.split("\t") + [""] * 10)[:10]

        def ints(s: str) -> list[int]:
            return [int(x) for x in s.split(",") if x]

        t, ch, mc, mm, hc, bs = ints(types), ints(chans), ints(mclass), ints(mmeth), ints(hclass), ints(bsize)
        if not t:  # the protocol header has no frame type field
            frames.append(OFrame(int(num), int(sport), int(dport), None, None, None, None, None))
            continue
        for ftype, channel in zip(t, ch, strict=True):
            if ftype == 1:
                frames.append(OFrame(int(num), int(sport), int(dport), 1, channel, mc.pop(0), mm.pop(0), None))
            elif ftype == 2:
                frames.append(OFrame(int(num), int(sport), int(dport), 2, channel, hc.pop(0), None, bs.pop(0)))
            else:
                frames.append(OFrame(int(num), int(sport), int(dport), ftype, channel, None, None, None))
    return frames


# -- pcap files ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rec:
    ts: int  # nanoseconds
    data: bytes
    wirelen: int = -1  # -1: len(data)


def read_pcap(path: Path) -> tuple[int, list[Rec]]:
    raw = path.read_bytes()
    magic = raw[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    nanos = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    link = struct.unpack_from(endian + "I", raw, 20)[0]
    recs, off = [], 24
    while off + 16 <= len(raw):
        sec, frac, cap, wire = struct.unpack_from(endian + "IIII", raw, off)
        recs.append(Rec(sec * 10**9 + frac * (1 if nanos else 1000), raw[off + 16:off + 16 + cap], wire))
        off += 16 + cap
    return link, recs


def write_pcap(path: Path, link: int, recs: list[Rec], *, nanos: bool = False, endian: str = "<",
               snaplen: int = 262144) -> None:
    magic = 0xA1B23C4D if nanos else 0xA1B2C3D4
    out = [struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, snaplen, link)]
    for r in recs:
        frac = r.ts % 10**9 if nanos else (r.ts % 10**9) // 1000
        wire = len(r.data) if r.wirelen < 0 else r.wirelen
        out.append(struct.pack(endian + "IIII", r.ts // 10**9, frac, len(r.data), wire) + r.data)
    path.write_bytes(b"".join(out))


def write_pcapng(path: Path, interfaces: list[int], recs: list[tuple[int, Rec]], endian: str = "<") -> None:
    """Sections of one SHB, the interfaces' IDBs (microsecond resolution), then EPBs."""
    def block(btype: int, body: bytes) -> bytes:
        body += b"\x00" * (-len(body) % 4)
        n = len(body) + 12
        return struct.pack(endian + "II", btype, n) + body + struct.pack(endian + "I", n)

    out = [block(0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1))]
    for link in interfaces:
        out.append(block(1, struct.pack(endian + "HHI", link, 0, 262144)))
    for iface, r in recs:
        us = r.ts // 1000
        wire = len(r.data) if r.wirelen < 0 else r.wirelen
        out.append(block(6, struct.pack(endian + "IIIII", iface, us >> 32, us & 0xFFFFFFFF, len(r.data), wire) + r.data))
    path.write_bytes(b"".join(out))


def gzip_file(src: Path, dst: Path) -> None:
    dst.write_bytes(gzip.compress(src.read_bytes()))


# -- packets: Ethernet / IPv4 / TCP surgery -----------------------------------------------------------
@dataclass(frozen=True)
class Pkt:
    ts: int
    eth: bytes  # 14 octets
    ip: bytes  # IPv4 header
    tcp: bytes  # TCP header
    payload: bytes

    @property
    def sport(self) -> int:
        return int(struct.unpack_from(">H", self.tcp, 0)[0])

    @property
    def seq(self) -> int:
        return int(struct.unpack_from(">I", self.tcp, 4)[0])

    def with_seq_payload(self, seq: int, payload: bytes, ts: int | None = None) -> Pkt:
        tcp = self.tcp[:4] + struct.pack(">I", seq & 0xFFFFFFFF) + self.tcp[8:]
        return replace(self, tcp=tcp, payload=payload, ts=self.ts if ts is None else ts)

    def ip_bytes(self) -> bytes:
        total = len(self.ip) + len(self.tcp) + len(self.payload)
        return self.ip[:2] + struct.pack(">H", total) + self.ip[4:] + self.tcp + self.payload

    def ethernet(self) -> bytes:
        return self.eth + self.ip_bytes()


def packets(recs: list[Rec]) -> list[Pkt]:
    """Split Ethernet/IPv4/TCP records (what tcpdump writes on lo)."""
    out = []
    for r in recs:
        d = r.data
        assert struct.unpack_from(">H", d, 12)[0] == 0x0800
        ihl = (d[14] & 0x0F) * 4
        total = struct.unpack_from(">H", d, 16)[0]
        tcp_off = 14 + ihl
        thl = (d[tcp_off + 12] >> 4) * 4
        out.append(Pkt(r.ts, d[:14], d[14:tcp_off], d[tcp_off:tcp_off + thl], d[tcp_off + thl:14 + total]))
    return out


def to_recs(pkts: list[Pkt]) -> list[Rec]:
    return [Rec(p.ts, p.ethernet()) for p in pkts]


def data_indexes(pkts: list[Pkt], sport: int | None = None) -> list[int]:
    return [i for i, p in enumerate(pkts) if p.payload and (sport is None or p.sport == sport)]


# link-layer rewrites of one Ethernet record
def vlan(data: bytes, tags: tuple[int, ...] = (0x8100,)) -> bytes:
    """802.1Q tags (TPID + TCI each) after the MAC addresses; the original ethertype follows the last."""
    return data[:12] + b"".join(struct.pack(">HH", tpid, 100 + i) for i, tpid in enumerate(tags)) + data[12:]


def sll(data: bytes) -> bytes:
    return struct.pack(">HHH8sH", 0, 772, 6, b"\x00" * 8, 0x0800) + data[14:]


def sll2(data: bytes) -> bytes:
    return struct.pack(">HHIHBB8s", 0x0800, 0, 1, 772, 0, 6, b"\x00" * 8) + data[14:]


def bsd_null(data: bytes) -> bytes:
    return struct.pack("<I", 2) + data[14:]  # AF_INET in the capturing host's (little-endian) order


def bsd_loop(data: bytes) -> bytes:
    return struct.pack(">I", 2) + data[14:]


def raw_ip(data: bytes) -> bytes:
    return data[14:]


def ipv6(data: bytes) -> bytes:
    """The same TCP segment over IPv6 (::1 to ::1), in Ethernet."""
    ihl = (data[14] & 0x0F) * 4
    total = struct.unpack_from(">H", data, 16)[0]
    seg = data[14 + ihl:14 + total]
    src = b"\x00" * 15 + b"\x01"
    return data[:12] + struct.pack(">H", 0x86DD) + struct.pack(">IHBB", 6 << 28, len(seg), 6, 64) + src + src + seg


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def synth_capture(path: Path, talk: list[tuple[str, bytes]], client_port: int = 40000, server_port: int = 5672,
                  mss: int = 1400) -> None:
    """A capture of one TCP connection made up here: handshake, then each (``"c"`` or ``"s"``, bytes)
    sent as segments of at most ``mss`` octets, then FINs. For traffic no broker would carry."""
    eth = b"\x00" * 12 + b"\x08\x00"

    def seg(src: int, dst: int, seq: int, ack: int, flags: int, payload: bytes) -> bytes:
        tcp = struct.pack(">HHIIBBHHH", src, dst, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0x4000, 64, 6, 0,
                         b"\x7f\x00\x00\x01", b"\x7f\x00\x00\x01")
        return eth + ip + tcp + payload

    seqs = {"c": 1000, "s": 900000}
    ports = {"c": (client_port, server_port), "s": (server_port, client_port)}
    ts = 1_700_000_000 * 10**9
    recs: list[Rec] = []

    def add(side: str, flags: int, payload: bytes = b"") -> None:
        nonlocal ts
        other = "s" if side == "c" else "c"
        recs.append(Rec(ts, seg(*ports[side], seqs[side], seqs[other], flags, payload)))
        seqs[side] += len(payload) + (1 if flags & 0x03 else 0)
        ts += 1000

    add("c", 0x02)
    add("s", 0x12)
    add("c", 0x10)
    for side, data in talk:
        for i in range(0, len(data), mss):
            add(side, 0x18, data[i:i + mss])
    add("c", 0x11)
    add("s", 0x11)
    write_pcap(path, 1, recs)


def keep_connections_with(path: Path, marker: bytes, server_port: int = 5672) -> None:
    """Rewrite a loopback capture keeping only the TCP connections whose data contains ``marker``:
    the broker is shared, and other test runs talk to it while a test records."""
    link, recs = read_pcap(path)
    pkts = packets(recs)

    def client(p: Pkt) -> int:
        sport, dport = struct.unpack_from(">HH", p.tcp, 0)
        return int(dport if sport == server_port else sport)

    ours = {client(p) for p in pkts if marker in p.payload}
    write_pcap(path, link, [r for r, p in zip(recs, pkts, strict=True) if client(p) in ours])
