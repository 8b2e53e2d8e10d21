"""amqgen.traffic.index against capture.read_part: the same segments per connection, field by field and in
order, for every committed capture and every kind of synthetic one (link layers, formats, odd packets), at
several part sizes; random records compared with the scalar path; damaged blobs. Plain Python, no Spark."""

from __future__ import annotations

import struct
import tempfile
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from traffic_fixtures import DATA
from traffic_tools import (
    Rec,
    bsd_loop,
    bsd_null,
    ipv6,
    raw_ip,
    read_pcap,
    sll,
    sll2,
    synth_capture,
    vlan,
    write_pcap,
    write_pcapng,
)

from amqgen.traffic import capture, index, session

SMALL = DATA / "pika-small.pcap"
PART_SIZES = (1, 100, 700, 4096, 1 << 40)  # 1: a part per record


def by_key(segs: list[capture.Segment]) -> dict[str, list[capture.Segment]]:
    out: dict[str, list[capture.Segment]] = defaultdict(list)
    for s in segs:
        out[session.connection_key(s)].append(s)
    return out


def check(paths: list[Path], part_size: int) -> int:
    """read_part's segments grouped by connection == index -> by_connection -> segments; the number of
    segments compared."""
    want: dict[str, list[capture.Segment]] = defaultdict(list)
    blobs: dict[str, list[bytes]] = defaultdict(list)
    for rank, path in enumerate(paths):
        fi = capture.index_file(path, rank, part_size)
        for part in fi.parts:
            per_part = by_key(list(capture.read_part(part)))
            pairs = index.by_connection(index.part_index(part))
            assert [k for k, _ in pairs] == sorted(per_part), part
            for k, blob in pairs:
                blobs[k].append(blob)
            for k, segs in per_part.items():
                want[k].extend(segs)
    got = {k: list(index.segments(b, [str(p) for p in paths])) for k, b in blobs.items()}
    assert got.keys() == want.keys()
    for k, segs in want.items():
        assert len(got[k]) == len(segs), k
        for a, b in zip(got[k], segs, strict=True):
            assert a == b, (k, a, b)
    return sum(map(len, want.values()))


# -- synthetic captures ---------------------------------------------------------------------------------------
def _ip_tcp(d: bytes) -> tuple[int, int]:
    """(offset of the IPv4 header, of the TCP header) in an Ethernet record."""
    return 14, 14 + (d[14] & 0x0F) * 4


def _set(d: bytes, at: int, value: bytes) -> bytes:
    return d[:at] + value + d[at + len(value):]


def _ipv6_ext(d: bytes) -> bytes:
    """IPv6 with a hop-by-hop and a destination-options header (8 and 16 octets) before the TCP header."""
    v6 = ipv6(d)
    head, seg = v6[14:54], v6[54:]
    ext = bytes([60, 0]) + b"\x00" * 6 + bytes([6, 1]) + b"\x00" * 14
    plen = struct.unpack_from(">H", head, 4)[0] + len(ext)
    head = head[:4] + struct.pack(">H", plen) + bytes([0]) + head[7:]
    return v6[:14] + head + ext + seg


def _odd(recs: list[Rec]) -> list[Rec]:
    """Snap-length cuts, Ethernet padding, fragments, UDP and ARP, RSTs, a non-TCP IPv4 option-laden header."""
    out: list[Rec] = []
    for i, r in enumerate(recs):
        d = r.data
        ip, tcp = _ip_tcp(d)
        k = i % 9
        if k == 0 and len(d) > 90:
            out.append(Rec(r.ts, d[:90], len(d)))  # snap length
        elif k == 1:
            out.append(Rec(r.ts, d + b"\x00" * 7))  # Ethernet padding after the datagram
        elif k == 2:
            out.append(Rec(r.ts, _set(d, ip + 6, b"\x20\x00")))  # more fragments
        elif k == 3:
            out.append(Rec(r.ts, _set(d, ip + 6, b"\x00\x10")))  # a fragment offset
        elif k == 4:
            out.append(Rec(r.ts, _set(d, ip + 9, b"\x11")))  # UDP
            out.append(Rec(r.ts, d[:12] + b"\x08\x06" + b"\x00" * 28))  # ARP
        elif k == 5 and len(d) - tcp == 20 + (d[tcp + 12] >> 4) * 4 - 20:
            out.append(Rec(r.ts, _set(d, tcp + 13, b"\x04")))  # a bare ACK made a RST
        elif k == 6:
            out.append(Rec(r.ts, _set(d, ip + 2, b"\x00\x00")))  # IP total length 0 (segmentation offload)
        elif k == 7 and len(d) > 80:
            out.append(Rec(r.ts, d[:60], len(d) + 5))  # cut, with a wire length past the datagram
        else:
            out.append(r)
    return out


def _pcapng_mixed(path: Path, recs: list[Rec]) -> None:
    """Two sections (little-, then big-endian); simple and obsolete packet blocks beside enhanced ones; an
    interface defined after packets that name it; nanosecond and 2**-20 timestamp resolutions."""
    out = []
    for endian, half in (("<", recs[: len(recs) // 2]), (">", recs[len(recs) // 2:])):
        def block(btype: int, body: bytes, endian: str = endian) -> bytes:
            body += b"\x00" * (-len(body) % 4)
            return struct.pack(endian + "II", btype, len(body) + 12) + body + struct.pack(endian + "I", len(body) + 12)

        out.append(block(0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1)))
        out.append(block(1, struct.pack(endian + "HHI", 1, 0, 0) + struct.pack(endian + "HHB3x", 9, 1, 9)
                         + b"\x00" * 4))  # nanoseconds
        for i, r in enumerate(half):
            k = i % 5
            if k == 0:
                out.append(block(3, struct.pack(endian + "I", len(r.data)) + r.data))  # simple
            elif k == 1:
                out.append(block(2, struct.pack(endian + "HHIIII", 0, 0, r.ts >> 32, r.ts & 0xFFFFFFFF, len(r.data),
                                                len(r.data)) + r.data))  # obsolete
            else:
                iface = 1 if k == 4 else 0
                ticks = (r.ts << 20) // 10**9 if iface else r.ts
                out.append(block(6, struct.pack(endian + "IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF, len(r.data),
                                                len(r.data)) + r.data))
            if i == 7:  # interface 1 (Ethernet, 2**-20 s): the packets naming it before this are not read
                out.append(block(1, struct.pack(endian + "HHI", 1, 0, 0) + struct.pack(endian + "HHB3x", 9, 1, 0x94)
                                 + b"\x00" * 4))
    path.write_bytes(b"".join(out))


REWRITES: dict[str, tuple[int, Any]] = {
    "vlan": (1, vlan),
    "qinq": (1, lambda d: vlan(d, (0x88A8, 0x8100))),
    "qinq-9100": (1, lambda d: vlan(d, (0x9100, 0x8100))),
    "four-tags": (1, lambda d: vlan(d, (0x88A8, 0x8100, 0x9200, 0x8100))),  # past the two the vector path reads
    "sll": (113, sll),
    "sll2": (276, sll2),
    "null": (0, bsd_null),
    "null-big-endian": (0, lambda d: struct.pack(">I", 2) + d[14:]),
    "null-ipv6": (0, lambda d: struct.pack("<I", 30) + ipv6(d)[14:]),
    "loop": (108, bsd_loop),
    "loop-ipv6": (108, lambda d: struct.pack(">I", 24) + ipv6(d)[14:]),
    "raw": (101, raw_ip),
    "raw-12": (12, raw_ip),
    "raw-ipv6": (229, lambda d: ipv6(d)[14:]),
    "ipv6": (1, ipv6),
    "ipv6-extension-headers": (1, _ipv6_ext),
    "ipv4-length-0": (1, lambda d: d[:16] + b"\x00\x00" + d[18:]),  # segmentation offload
    "ipv6-length-0": (1, lambda d: (lambda v6: v6[:18] + b"\x00\x00" + v6[20:])(ipv6(d))),
    "unsupported-link": (147, lambda d: d),
}


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    tmp = tmp_path_factory.mktemp("index")
    out: dict[str, list[Path]] = {p.name: [p] for p in sorted(DATA.iterdir()) if p.suffix in (".pcap", ".pcapng")}
    link, recs = read_pcap(SMALL)
    for name, (code, fn) in REWRITES.items():
        out[name] = [tmp / f"{name}.pcap"]
        write_pcap(out[name][0], code, [Rec(r.ts, fn(r.data), r.wirelen) for r in recs])
    for name in ("pcapng", "pcapng-big-endian"):
        out[name] = [tmp / name]
        write_pcapng(out[name][0], [113, link], [(1, r) for r in recs], endian=">" if "big" in name else "<")
    out["nanoseconds"] = [tmp / "ns.pcap"]
    write_pcap(out["nanoseconds"][0], link, recs, nanos=True)
    out["big-endian"] = [tmp / "be.pcap"]
    write_pcap(out["big-endian"][0], link, recs, endian=">")
    out["odd-packets"] = [tmp / "odd.pcap"]
    write_pcap(out["odd-packets"][0], link, _odd(recs))
    out["odd-packets-vlan"] = [tmp / "odd-vlan.pcap"]
    write_pcap(out["odd-packets-vlan"][0], link, [replace(r, data=vlan(r.data)) for r in _odd(recs)])
    out["pcapng-mixed"] = [tmp / "mixed.pcapng"]
    _pcapng_mixed(out["pcapng-mixed"][0], recs)
    out["synthetic"] = [tmp / "synth.pcap"]
    synth_capture(out["synthetic"][0], [("c", b"AMQP\x00\x00\x09\x01"), ("s", b"x" * 5000), ("c", b"y" * 30)])
    rotated = [tmp / "rot0.pcap", tmp / "rot1.pcap", tmp / "rot2.pcap"]
    for i, f in enumerate(rotated):
        write_pcap(f, link, recs[i * len(recs) // 3:(i + 1) * len(recs) // 3])
    out["rotated"] = rotated
    return out


NAMES = sorted(["pika-small.pcap", "pika-small.pcapng", "violations.pcap", *REWRITES, "pcapng", "pcapng-big-endian",
                "nanoseconds", "big-endian", "odd-packets", "odd-packets-vlan", "pcapng-mixed", "synthetic", "rotated"])


def test_every_committed_capture_is_listed() -> None:
    assert {p.name for p in DATA.iterdir() if p.suffix in (".pcap", ".pcapng")} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_index_gives_read_parts_segments(captures: dict[str, list[Path]], name: str) -> None:
    counts = {size: check(captures[name], size) for size in PART_SIZES}
    assert len(set(counts.values())) == 1, counts  # the part size changes nothing
    if name not in ("unsupported-link", "ipv6-length-0"):  # tshark finds no TCP payload in the second either
        assert counts[1] > 0


def test_the_fixtures_exercise_what_they_claim(captures: dict[str, list[Path]]) -> None:
    """The odd packets are there: cut payloads, padding, RSTs, SYN and FIN; the mixed pcapng has packets
    with and without timestamps."""
    segs = [s for p in capture.index_file(captures["odd-packets"][0], 0, 1 << 40).parts
            for s in capture.read_part(p)]
    assert any(s.missing for s in segs) and any(s.flags & 4 for s in segs)
    assert any(s.flags & 2 for s in segs) and any(s.flags & 1 for s in segs)
    segs = [s for p in capture.index_file(captures["pcapng-mixed"][0], 0, 1 << 40).parts
            for s in capture.read_part(p)]
    assert any(s.ts == 0 for s in segs) and any(s.ts for s in segs)


# -- random records: the vector path against the scalar one ---------------------------------------------------
LINKS = (0, 1, 1, 12, 101, 108, 113, 228, 229, 276, 147)
u8, u16, u32 = st.integers(0, 255), st.integers(0, 0xFFFF), st.integers(0, 0xFFFFFFFF)


@st.composite
def packet(draw: Any, link: int) -> tuple[bytes, int]:
    """One record for ``link``: mostly plausible headers with random fields, sometimes mangled; and its
    wire length."""
    v = draw(st.sampled_from((4, 4, 4, 4, 6, 6, 0)))
    payload = draw(st.binary(max_size=24))
    hoff = draw(st.sampled_from((0x50, 0x50, 0x50, 0x50, 0x60, 0xF0, 0x40, 0x00))) | draw(st.integers(0, 15))
    tcp = struct.pack(">HHIIBB", draw(u16), draw(u16), draw(u32), draw(u32), hoff, draw(u8)) + b"\x00" * 6
    tcp += draw(st.binary(min_size=0, max_size=12))  # options, maybe fewer or more than the offset says
    body = tcp + payload
    if v == 4:
        ihl = draw(st.sampled_from((5, 5, 5, 6, 4, 15)))
        total = draw(st.sampled_from((ihl * 4 + len(body),) * 3 + (0, 20, 0xFFFF, ihl * 4 + len(body) - 3)))
        frag = draw(st.sampled_from((0, 0, 0x4000, 0x4000, 0x2000, 0x0007)))
        proto = draw(st.sampled_from((6, 6, 6, 6, 17, 1)))
        iphead = struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, total, 0, frag, 64, proto, 0,
                             draw(st.binary(min_size=4, max_size=4)), draw(st.binary(min_size=4, max_size=4)))
        iphead += b"\x00" * max(0, ihl * 4 - 20)
        etype, af = 0x0800, 2
    elif v == 6:
        nxt = draw(st.sampled_from((6, 6, 0, 43, 60, 44, 17)))
        ext = b""
        if nxt in (0, 43, 60):
            n_ext = draw(st.integers(1, 2))
            for k in range(n_ext):
                last = k == n_ext - 1
                extlen = draw(st.integers(0, 2))
                ext += bytes([draw(st.sampled_from((6, 17, 60))) if last else 60, extlen]) + b"\x00" * (6 + 8 * extlen)
        plen = draw(st.sampled_from((len(ext) + len(body), 0, 3, 0xFFFF)))
        iphead = (struct.pack(">IHBB", 6 << 28, plen, nxt, 64) + draw(st.binary(min_size=32, max_size=32))) + ext
        etype, af = 0x86DD, draw(st.sampled_from((10, 24, 28, 30)))
    else:
        iphead = draw(st.binary(max_size=40))
        etype, af = draw(u16), draw(u32)
    if link == 1:
        tags = draw(st.lists(st.sampled_from((0x8100, 0x88A8, 0x9100, 0x9200)), max_size=4))
        head = b"\x00" * 12 + b"".join(struct.pack(">HH", t, 1) for t in tags) + struct.pack(">H", etype)
    elif link == 113:
        head = struct.pack(">HHH8sH", 0, 772, 6, b"\x00" * 8, etype)
    elif link == 276:
        head = struct.pack(">HHIHBB8s", etype, 0, 1, 772, 0, 6, b"\x00" * 8)
    elif link in (0, 108):
        head = struct.pack(draw(st.sampled_from(("<I", ">I"))) if link == 0 else ">I", af & 0xFFFFFFFF)
    else:
        head = b""
    data = head + iphead + body + draw(st.binary(max_size=6))  # link padding
    mangle = draw(st.integers(0, 7))  # mostly plausible packets: garbage in some, cut short in others
    if mangle == 0:
        for at, value in draw(st.lists(st.tuples(st.integers(0, 200), u8), min_size=1, max_size=3)):
            if at < len(data):
                data = data[:at] + bytes([value]) + data[at + 1:]
    elif mangle == 1:
        data = data[:draw(st.integers(0, len(data)))]  # the snap length, or garbage lengths
    wire = len(data) + draw(st.sampled_from((0, 0, 1, 500, -3)))
    return data, max(wire, 0)


@st.composite
def capture_file(draw: Any) -> tuple[bytes, list[int]]:
    """A random pcap or pcapng file of random records, and the offsets where its records end."""
    if draw(st.booleans()):
        endian, link = draw(st.sampled_from(("<", ">"))), draw(st.sampled_from(LINKS))
        magic = draw(st.sampled_from((0xA1B2C3D4, 0xA1B23C4D)))
        out = struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, 65535, link)
        ends = []
        for data, wire in draw(st.lists(packet(link), max_size=8)):
            out += struct.pack(endian + "IIII", draw(u32), draw(u32), len(data), wire) + data
            ends.append(len(out))
        return out, ends
    endian = draw(st.sampled_from(("<", ">")))
    links = draw(st.lists(st.sampled_from(LINKS), min_size=0, max_size=2))

    def block(btype: int, body: bytes) -> bytes:
        body += b"\x00" * (-len(body) % 4)
        return struct.pack(endian + "II", btype, len(body) + 12) + body + struct.pack(endian + "I", len(body) + 12)

    out = block(0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    for lk in links:
        opts = struct.pack(endian + "HHB3x", 9, 1, draw(st.sampled_from((6, 9, 3, 0x94, 12, 0x80, 127, 0)))) \
            if draw(st.booleans()) else b""
        out += block(1, struct.pack(endian + "HHI", lk, 0, 0) + opts)
    ends = []
    for _ in range(draw(st.integers(0, 8))):
        iface = draw(st.integers(0, 2))
        data, wire = draw(packet(links[iface] if iface < len(links) else 1))
        kind = draw(st.sampled_from((6, 6, 3, 2)))
        if kind == 6:
            out += block(6, struct.pack(endian + "IIIII", iface, draw(u32), draw(u32), len(data), wire) + data)
        elif kind == 2:
            out += block(2, struct.pack(endian + "HHIIII", iface, 0, draw(u32), draw(u32), len(data), wire) + data)
        else:
            out += block(3, struct.pack(endian + "I", wire) + data)
        ends.append(len(out))
    return out, ends


def fields(segs: list[capture.Segment]) -> list[tuple[Any, ...]]:
    return [(s.file_rank, s.packet, min(s.ts, 2**63 - 1), s.src, s.dst, s.seq, s.ack, s.flags, s.payload, s.missing)
            for s in segs]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(capture_file(), st.integers(1, 400), st.integers(0, 15))
def test_random_records_vector_equals_scalar(made: tuple[bytes, list[int]], part_size: int, chop: int) -> None:
    raw, ends = made
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "random.cap"
        path.write_bytes(raw)
        for size in (part_size, 1 << 40):
            fi = capture.index_file(path, 0, size)
            assert fi.error is None
            for part in fi.parts:
                ix = index.part_index(part)
                want = fields(list(capture.read_part(part)))
                with open(path, "rb") as f:
                    data = f.read()
                got = [(ix.file_rank, p, t, ix.endpoints[s], ix.endpoints[d], q, a, fl, data[o:o + n], m)
                       for p, t, s, d, q, a, fl, o, n, m in zip(
                           *(getattr(ix, k).tolist() for k in ("packet", "ts", "src", "dst", "seq", "ack", "flags",
                                                               "offset", "length", "missing")), strict=True)]
                assert got == want
                event(f"segments in a part: {min(len(want), 3)}{'+' if len(want) >= 3 else ''}")
                back = [s for _, blob in index.by_connection(ix) for s in index.segments([blob], [str(path)])]
                assert sorted(fields(back), key=lambda f: f[1]) == want
        # a part whose last record runs past its end (the file changed since the index): that record is
        # dropped, the ones before it are read as read_part reads the whole ones
        if ends and chop:
            fi = capture.index_file(path, 0, 1 << 40)
            part = fi.parts[-1]
            cut_at = max(part.start, ends[-1] - chop)
            whole = [e for e in ends if e <= cut_at]
            if whole and whole[-1] > part.start:
                want = fields(list(capture.read_part(replace(part, end=whole[-1]))))
                ix = index.part_index(replace(part, end=cut_at))
                assert ix.packet.tolist() == [w[1] for w in want]


# -- blobs ---------------------------------------------------------------------------------------------------
def test_blob_format(captures: dict[str, list[Path]]) -> None:
    path = captures["synthetic"][0]
    part = capture.index_file(path, 0, 1 << 40).parts[0]
    [(key, blob)] = index.by_connection(index.part_index(part))
    rank, a, b, rec = index.read_blob(blob)
    assert (rank, f"{a}|{b}") == (0, key) and rec.dtype == index.PACKET and index.PACKET.itemsize == 42
    assert len(blob) == 16 + len(a) + len(b) + 42 * len(rec)
    assert rec["dir"].tolist()[:3] == [0, 1, 0]  # SYN from the client (127.0.0.1:40000 < 127.0.0.1:5672), SYN-ACK


def test_damaged_blobs_raise_blob_error(captures: dict[str, list[Path]]) -> None:
    path = captures["synthetic"][0]
    part = capture.index_file(path, 0, 1 << 40).parts[0]
    [(_, blob)] = index.by_connection(index.part_index(part))
    _, a, b, rec = index.read_blob(blob)
    body = 16 + len(a) + len(b)
    first_offset = body + 16  # the first packet's payload offset
    big = struct.pack("<q", path.stat().st_size + 1)
    damaged = {
        "empty": b"",
        "truncated header": blob[:10],
        "truncated packets": blob[:-1],
        "extra octets": blob + b"\x00",
        "bad magic": b"XXXX" + blob[4:],
        "count": blob[:8] + struct.pack("<I", 1 << 30) + blob[12:],
        "endpoint length": blob[:12] + struct.pack("<H", 0xFFFF) + blob[14:],
        "not ascii": blob[:16] + b"\xff" + blob[17:],
        "dir": blob[:body + 41] + b"\x07" + blob[body + 42:],
        "negative offset": blob[:first_offset] + struct.pack("<q", -5) + blob[first_offset + 8:],
        "past the file": blob[:first_offset] + big + blob[first_offset + 8:],
        "huge offset": blob[:first_offset] + struct.pack("<q", 2**63 - 1) + blob[first_offset + 8:],
        "rank": blob[:4] + struct.pack("<I", 3) + blob[8:],
    }
    for name, bad in damaged.items():
        try:
            list(index.segments([bad], [str(path)]))
        except index.BlobError:
            continue
        pytest.fail(f"{name}: no BlobError")
    with pytest.raises(TypeError):
        list(index.segments([blob], str(path)))
    assert len(list(index.segments([blob], [str(path)]))) == len(rec)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120), st.integers(0, 200), st.binary(max_size=4))
def test_garbled_blobs_raise_only_blob_error(noise: bytes, at: int, patch: bytes) -> None:
    blob = (b"AQX1" + noise) if at % 2 else noise
    if at < len(blob):
        blob = blob[:at] + patch + blob[at + len(patch):]
    try:
        list(index.segments([blob], [str(SMALL)]))
    except index.BlobError:
        pass


def test_a_part_over_sections_of_both_byte_orders(captures: dict[str, list[Path]]) -> None:
    """index_file starts a part at every section; a part made by hand over two sections (little-, then
    big-endian) is read as read_part reads it (block headers in their section's order, packet fields in the
    part's), except the records whose garbled captured length runs past the part: read_part decodes a clipped
    copy of those, the index drops them (the module's docstring)."""
    path = captures["pcapng-mixed"][0]
    fi = capture.index_file(path, 0, 1 << 40)
    assert len(fi.parts) == 2
    part = replace(fi.parts[0], end=fi.parts[1].end)
    ix = index.part_index(part)
    with open(path, "rb") as f:
        data = f.read()
    got = {p: (ix.endpoints[s], ix.endpoints[d], q, data[o:o + n]) for p, s, d, q, o, n in zip(
        *(getattr(ix, k).tolist() for k in ("packet", "src", "dst", "seq", "offset", "length")), strict=True)}
    want = {s.packet: (s.src, s.dst, s.seq, s.payload) for s in capture.read_part(part)}
    assert {p: want.get(p) for p in got} == got
    assert len(got) > 30 and max(got) > fi.parts[1].first_packet  # packets of both sections
