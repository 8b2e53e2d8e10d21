"""The traffic pipeline's plain-Python stages (no JVM): captures recorded live and committed, checked
against tshark; link layers and file formats; hostile networks; violations.

tests/traffic/test_traffic_spark.py runs the same stages through Spark and the CLI.
"""

from __future__ import annotations

import hashlib
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from traffic_fixtures import DATA, Pipeline, live_capture, ours_as_oracle, pipeline, rows_as_dicts, violations_capture
from traffic_tools import (
    Pkt,
    Rec,
    bsd_loop,
    bsd_null,
    data_indexes,
    ipv6,
    packets,
    raw_ip,
    read_pcap,
    sll,
    sll2,
    synth_capture,
    to_recs,
    tshark_frames,
    vlan,
    write_pcap,
    write_pcapng,
)

from amqgen.traffic import capture
from amqgen.traffic.records import CONNECTIONS, FRAMES, MESSAGES, VIOLATIONS

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return tmp_path_factory


def decode(tmp: Any, paths: list[Path], **kw: Any) -> dict[str, list[dict[str, Any]]]:
    rows = pipeline(tmp).run(paths, **kw)
    return {"frames": rows_as_dicts(rows.frames, FRAMES), "messages": rows_as_dicts(rows.messages, MESSAGES),
            "connections": rows_as_dicts(rows.connections, CONNECTIONS),
            "violations": rows_as_dicts(rows.violations, VIOLATIONS)}


def frame_keys(frames: list[dict[str, Any]], *, with_packet: bool = False) -> Counter[tuple[Any, ...]]:
    """What a frame is, independent of the packets that carried it (for rewritten captures)."""
    cols = ["direction", "stream_offset", "frame_type", "channel", "size", "method", "arguments",
            "body_size", "properties", "error"] + (["packet"] if with_packet else [])
    # the client's port is the connection's identity across rewrites (IPv6 changes the addresses)
    return Counter((r["connection"].split(">")[0].rsplit(":", 1)[1],) + tuple(r[c] for c in cols) for r in frames)


# -- against tshark ----------------------------------------------------------------------------------
def test_live_capture_matches_tshark(tmp: Any) -> None:
    path = live_capture(tmp)
    out = decode(tmp, [path])
    ours, theirs = ours_as_oracle(out["frames"]), Counter(tshark_frames(path))
    assert sum(theirs.values()) > 800
    assert ours == theirs, (sorted((ours - theirs).items())[:10], sorted((theirs - ours).items())[:10])
    # per connection: three, each opened with the 0-9-1 header and closed normally, no holes
    conns = out["connections"]
    assert len(conns) == 3
    for c in conns:
        assert c["protocol_header"] == "AMQP 0-0-9-1"
        assert (c["close_code"], c["closed_by"], c["gaps"], c["skipped_bytes"]) == (200, "client", 0, 0), c
        assert c["frame_max"] in (4096, 131072) and c["client_properties"] and c["server_properties"]
    assert out["violations"] == []
    assert not [f for f in out["frames"] if f["error"]]


def test_live_messages_are_what_the_clients_sent(tmp: Any) -> None:
    out = decode(tmp, [live_capture(tmp)])
    sizes = [0, 1, 100, 4000, 5000, 131072 - 8, 131072, 200_000, 300_001, 17, 42, 65536]
    expected = Counter(hashlib.sha256(bytes(range(256)) * (s // 256) + b"z" * (s % 256)).hexdigest() for s in sizes)
    msgs = out["messages"]
    for name in ("a", "b"):
        for method in ("basic.publish", "basic.deliver"):
            mine = [m for m in msgs if m["method"] == method and (m["routing_key"] or "").endswith(f"rk.{name}")]
            assert Counter(m["body_sha256"] for m in mine) == expected
            assert all(m["complete"] and m["body_size"] == m["body_received"] for m in mine)
            assert all('"<b>":"x&y"' in m["properties"] for m in mine)
    pyamqp = [m for m in msgs if m["method"] == "basic.get-ok"]
    assert len(pyamqp) == 25 and all(m["delivery_tag"] for m in pyamqp)


def test_committed_fixtures_match_tshark(tmp: Any) -> None:
    fixtures = sorted(p for p in DATA.iterdir() if p.suffix in (".pcap", ".pcapng"))
    assert len(fixtures) >= 2, "tests/data/traffic/make_fixtures.py makes them"
    for path in fixtures:
        out = decode(tmp, [path])
        ours, theirs = ours_as_oracle(out["frames"]), Counter(tshark_frames(path))
        assert theirs and ours == theirs, path.name


# -- link layers and formats ---------------------------------------------------------------------------
def small(tmp: Any) -> Path:
    return DATA / "pika-small.pcap"


def ipv4_length_0(data: bytes) -> bytes:
    """An Ethernet record of an IPv4 datagram whose total length says 0, as a sending host's capture
    shows a segment the card splits (TCP segmentation offload): tshark takes the record's length."""
    assert data[12:14] == b"\x08\x00"
    return data[:16] + b"\x00\x00" + data[18:]


LINKS = {
    "vlan": (1, lambda d: vlan(d)),
    "qinq": (1, lambda d: vlan(d, (0x88A8, 0x8100))),
    "qinq-9100": (1, lambda d: vlan(d, (0x9100, 0x8100))),
    "sll": (113, sll),
    "sll2": (276, sll2),
    "null": (0, bsd_null),
    "loop": (108, bsd_loop),
    "raw": (101, raw_ip),
    "raw-12": (12, raw_ip),
    "ipv6": (1, ipv6),
    "ipv4-length-0": (1, ipv4_length_0),
}


@pytest.mark.parametrize("name", sorted(LINKS))
def test_link_layers(tmp: Any, tmp_path: Path, name: str) -> None:
    src = small(tmp)
    link, rewrite = LINKS[name]
    _, recs = read_pcap(src)
    path = tmp_path / f"{name}.pcap"
    write_pcap(path, link, [Rec(r.ts, rewrite(r.data)) for r in recs])
    base, got = decode(tmp, [src]), decode(tmp, [path])
    assert frame_keys(got["frames"], with_packet=True) == frame_keys(base["frames"], with_packet=True)
    # tshark reads the rewritten file as the same conversation: the rewrite is a real capture
    if name in ("vlan", "qinq", "sll", "sll2", "null", "ipv6", "ipv4-length-0"):
        assert Counter((o.packet, o.ftype, o.channel, o.class_id, o.method_id, o.body_size)
                       for o in tshark_frames(path)) == \
            Counter((o.packet, o.ftype, o.channel, o.class_id, o.method_id, o.body_size) for o in tshark_frames(src))
    if name == "ipv6":
        assert all(c["client"].startswith("[::1]:") for c in got["connections"])


@pytest.mark.parametrize("variant", ["pcapng", "pcapng-big-endian", "nanoseconds", "big-endian", "gzip"])
def test_formats(tmp: Any, tmp_path: Path, variant: str) -> None:
    src = small(tmp)
    link, recs = read_pcap(src)
    path = tmp_path / variant
    if variant.startswith("pcapng"):
        # interface 0 is a Linux cooked one the packets do not use; they are on interface 1 (Ethernet)
        write_pcapng(path, [113, link], [(1, r) for r in recs], endian=">" if "big" in variant else "<")
    elif variant == "gzip":
        import gzip

        path.write_bytes(gzip.compress(src.read_bytes()))
        inflated, err = capture.inflate(path, tmp_path / "inflated")
        assert err is None and capture.sniff(path) == "gzip"
        path = inflated
    else:
        write_pcap(path, link, recs, nanos=variant == "nanoseconds", endian=">" if variant == "big-endian" else "<")
    base, got = decode(tmp, [src]), decode(tmp, [path])
    assert frame_keys(got["frames"], with_packet=True) == frame_keys(base["frames"], with_packet=True)
    assert [f["ts"] for f in got["frames"]] == [f["ts"] for f in base["frames"]]
    if variant != "gzip":
        assert Counter(tshark_frames(path)) == Counter(tshark_frames(src))


def test_parts_split_at_record_boundaries(tmp: Any, tmp_path: Path) -> None:
    src = live_capture(tmp)
    whole = capture.index_file(src, 0, 1 << 40)
    cut = capture.index_file(src, 0, 64 << 10)
    assert len(whole.parts) == 1 and len(cut.parts) > 20 and whole.packets == cut.packets
    assert all(p.end - p.start <= (64 << 10) + 70_000 for p in cut.parts)  # a part ends after its last record
    assert [s for p in cut.parts for s in capture.read_part(p)] == list(capture.read_part(whole.parts[0]))
    link, recs = read_pcap(src)
    ng = tmp_path / "live.pcapng"
    write_pcapng(ng, [link], [(0, r) for r in recs])
    ng_cut = capture.index_file(ng, 0, 64 << 10)
    assert len(ng_cut.parts) > 20 and ng_cut.packets == whole.packets
    assert [(s.packet, s.payload) for p in ng_cut.parts for s in capture.read_part(p)] == \
        [(s.packet, s.payload) for s in capture.read_part(whole.parts[0])]


# -- hostile networks ------------------------------------------------------------------------------------
def rewrite(src: Path, dst: Path, fn: Any) -> None:
    link, recs = read_pcap(src)
    write_pcap(dst, link, to_recs(fn(packets(recs))))


def reorder(pkts: list[Pkt]) -> list[Pkt]:
    out = list(pkts)
    idx = data_indexes(out)
    for a, b in zip(idx[::7], idx[1::7], strict=False):  # swap some data segments with the next one
        out[a], out[b] = out[b], out[a]
    return out


def duplicate(pkts: list[Pkt]) -> list[Pkt]:
    out = list(pkts)
    for n, i in enumerate(reversed(data_indexes(pkts)[::5])):
        out.insert(min(i + 3 + n % 4, len(out)), pkts[i])  # a retransmission a few packets later
    return out


def overlap(pkts: list[Pkt]) -> list[Pkt]:
    out: list[Pkt] = []
    for i, p in enumerate(pkts):
        if p.payload and len(p.payload) > 40 and i % 3 == 0:
            half = len(p.payload) // 2
            out.append(p.with_seq_payload(p.seq, p.payload[:half + 10]))
            out.append(p.with_seq_payload(p.seq + half - 10, p.payload[half - 10:]))
        else:
            out.append(p)
    return out


def one_octet(pkts: list[Pkt]) -> list[Pkt]:
    out: list[Pkt] = []
    for p in pkts:
        if not p.payload:
            out.append(p)
        else:
            out.extend(p.with_seq_payload(p.seq + i, p.payload[i:i + 1]) for i in range(len(p.payload)))
    return out


def wrap(pkts: list[Pkt]) -> list[Pkt]:
    """Shift every sequence number so that the client's stream wraps past 2**32 early on."""
    first = {p.sport: p.seq for p in reversed(pkts)}
    out = []
    for p in pkts:
        shift = (2**32 - 500 - first[p.sport]) if p.sport != 5672 else 0
        ack_shift = (2**32 - 500 - first[_peer(pkts, p)]) if p.sport == 5672 else 0
        q = p.with_seq_payload(p.seq + shift, p.payload)
        ack = (struct.unpack_from(">I", q.tcp, 8)[0] + ack_shift) & 0xFFFFFFFF
        out.append(Pkt(q.ts, q.eth, q.ip, q.tcp[:8] + struct.pack(">I", ack) + q.tcp[12:], q.payload))
    return out


def _peer(pkts: list[Pkt], p: Pkt) -> int:
    dport = struct.unpack_from(">H", p.tcp, 2)[0]
    return int(dport)


HOSTILE = {"reorder": reorder, "duplicate": duplicate, "overlap": overlap, "wraparound": wrap}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_rewrites_decode_like_the_clean_capture(tmp: Any, tmp_path: Path, name: str) -> None:
    src = live_capture(tmp)
    dst = tmp_path / f"{name}.pcap"
    rewrite(src, dst, HOSTILE[name])
    base, got = decode(tmp, [src]), decode(tmp, [dst])
    assert frame_keys(got["frames"]) == frame_keys(base["frames"])
    assert [(c["gaps"], c["skipped_bytes"]) for c in got["connections"]] == [(0, 0)] * 3
    assert got["violations"] == []


def reorder_each_direction(pkts: list[Pkt]) -> list[Pkt]:
    """Swap some data segments with the next one of the same direction of the same connection, as loopback
    captures now and then show them: the later octets first (held behind a hole), then the filler."""
    out = list(pkts)
    streams: dict[bytes, list[int]] = {}  # one direction of one connection: its ports
    for i in data_indexes(pkts):
        streams.setdefault(pkts[i].tcp[:4], []).append(i)
    for idx in streams.values():
        for a, b in zip(idx[2::5], idx[3::5], strict=False):
            out[a], out[b] = out[b], out[a]
    return out


@pytest.mark.parametrize("name", ["reorder-each-direction", "duplicate", "wraparound"])
def test_hostile_rewrites_match_tshark_packet_for_packet(tmp: Any, tmp_path: Path, name: str) -> None:
    """Which packet a frame is reported at, where segments came out of order: the one that completed it in
    stream order (octets held behind a hole reach the reader with the segment that fills it), as tshark
    says with out-of-order reassembly on. (Overlaps are left out: tshark loses frames there.)"""
    dst = tmp_path / f"{name}.pcap"
    rewrite(live_capture(tmp), dst, {"reorder-each-direction": reorder_each_direction, **HOSTILE}[name])
    ours, theirs = ours_as_oracle(decode(tmp, [dst])["frames"]), Counter(tshark_frames(dst))
    assert sum(theirs.values()) > 800
    assert ours == theirs, (sorted((ours - theirs).items(), key=str)[:5], sorted((theirs - ours).items(), key=str)[:5])


def test_one_octet_per_packet(tmp: Any, tmp_path: Path) -> None:
    src = small(tmp)
    dst = tmp_path / "one-octet.pcap"
    rewrite(src, dst, one_octet)
    base, got = decode(tmp, [src]), decode(tmp, [dst])
    assert frame_keys(got["frames"]) == frame_keys(base["frames"])
    # each frame is reported in the packet of its last octet (tshark cannot follow this capture: it
    # takes one-octet segments for keep-alives), found here from the rewritten packets themselves
    _, recs = read_pcap(dst)
    pk = packets(recs)
    start = {}
    for p in pk:
        if p.tcp[13] & 0x02:  # SYN: the stream's first octet is the next sequence number
            start[p.sport] = p.seq + 1
    where = {(p.sport, (p.seq - start[p.sport]) & 0xFFFFFFFF): n for n, p in enumerate(pk, 1) if p.payload}
    for f in got["frames"]:
        client, server = (int(x.rsplit(":", 1)[1]) for x in f["connection"].split(">"))
        sport = client if f["direction"] == "client-to-server" else server
        last = f["stream_offset"] + (7 if f["frame_type"] == "protocol-header" else f["size"] + 7)
        assert f["packet"] == where[(sport, last)], f


def test_rotation_mid_connection(tmp: Any, tmp_path: Path) -> None:
    src = live_capture(tmp)
    link, recs = read_pcap(src)
    cuts = [0, len(recs) // 3, 2 * len(recs) // 3, len(recs)]
    files = []
    for i in range(3):
        f = tmp_path / f"rotated.pcap{i or ''}"
        write_pcap(f, link, recs[cuts[i]:cuts[i + 1]])
        files.append(f)
    base = decode(tmp, [src])
    rows = pipeline(tmp).run(list(reversed(files)))  # ranked by first timestamp, not by argument order
    del rows
    from amqgen.traffic import inputs

    prepared = inputs.prepare(list(reversed(files)), tmp_path / "staging", 1 << 20)
    assert prepared.files == [str(f) for f in files] and not prepared.problems
    from amqgen.traffic import session

    segs = [s for p in prepared.parts for s in capture.read_part(p)]
    got = session.decode_segments(pipeline(tmp).codec, session.Options(), prepared.files, segs)
    got_frames = rows_as_dicts(got.frames, FRAMES)
    assert frame_keys(got_frames) == frame_keys(base["frames"])
    conns = rows_as_dicts(got.connections, CONNECTIONS)
    assert all(c["gaps"] == 0 and c["close_code"] == 200 for c in conns)
    assert any(len(c["files"]) > 1 for c in conns)


def test_a_dropped_segment_is_one_gap_and_decoding_resumes(tmp: Any, tmp_path: Path) -> None:
    src = live_capture(tmp)
    link, recs = read_pcap(src)
    pkts = packets(recs)
    # a client segment in the middle of a large body frame: the hardest place to find frames again
    client_data = [i for i in data_indexes(pkts) if pkts[i].sport != 5672 and len(pkts[i].payload) > 20000]
    victim = client_data[len(client_data) // 2]
    lost = pkts[victim]
    dst = tmp_path / "dropped.pcap"
    write_pcap(dst, link, to_recs(pkts[:victim] + pkts[victim + 1:]))
    base, got = decode(tmp, [src]), decode(tmp, [dst])
    port = str(lost.sport)
    conn = next(c for c in got["connections"] if c["client"].endswith(f":{port}"))
    assert conn["gaps"] == 1 and conn["gap_bytes"] == len(lost.payload)
    others = [c for c in got["connections"] if c is not conn]
    assert all(c["gaps"] == 0 for c in others)
    # where the hole is in the client's stream: the offsets of the clean frames tell
    first_seq = next(p.seq for p in pkts if p.sport == lost.sport and p.payload)
    hole_start = (lost.seq - first_seq) & 0xFFFFFFFF
    hole_end = hole_start + len(lost.payload)
    clean = frame_keys(base["frames"])
    found = frame_keys(got["frames"])
    assert not (found - clean), "nothing decoded from garbage"
    missing = clean - found
    for key in missing:  # only the frames the hole cut into are missing
        client, direction, offset, _, _, size = key[:6]
        assert client == port and direction == "client-to-server"
        assert offset < hole_end and offset + size + 8 > hole_start, key
    assert missing, "the hole was inside a frame"


# -- violations -----------------------------------------------------------------------------------------
def test_crafted_violations(tmp: Any) -> None:
    path, expected = violations_capture(tmp)
    out = decode(tmp, [path])
    conns = sorted(out["connections"], key=lambda c: c["first_ts"])
    assert len(conns) == len(expected)
    for c, kind in zip(conns, expected, strict=True):
        rows = [v for v in out["violations"] if v["connection"] == c["connection"]]
        assert [v["kind"] for v in rows] == [kind], (kind, rows)
        if c["close_code"] is not None and c["closed_by"] == "server":
            # the broker closed the connection: with the reply code the violation names
            assert rows[0]["reply_code"] == c["close_code"], (rows[0], c["close_text"])
    closed = [c["close_code"] for c in conns]
    assert closed[:3] == [501, 501, 504], closed  # the broker's own verdicts: frame-error, frame-error, channel-error
    # tshark sees the same frames (the crafted frame-end one included)
    assert ours_as_oracle(out["frames"]) == Counter(tshark_frames(path))


def test_synthetic_violations(tmp: Any, tmp_path: Path) -> None:
    """Violations no broker lets through, in a capture made up from frames the codec encodes."""
    gen = pipeline(tmp).codec
    m, f = gen.methods, gen.frames
    props = gen.properties.BasicProperties(content_type="text/plain")
    hb_on_1 = struct.pack(">BHI", gen.constants.FRAME_HEARTBEAT, 1, 0) + bytes((gen.constants.FRAME_END,))
    talk = [
        ("c", gen.constants.PROTOCOL_HEADER),
        ("s", m.ConnectionStart(version_major=0, version_minor=9, server_properties={}, mechanisms=b"PLAIN",
                                locales=b"en_US").encode_frame(0)),
        ("c", m.ConnectionStartOk(client_properties={}, mechanism="PLAIN", response=b"\0a\0b",
                                  locale="en_US").encode_frame(0)),
        ("s", m.ConnectionTune(channel_max=10, frame_max=4096, heartbeat=0).encode_frame(0)),
        ("c", m.ConnectionTuneOk(channel_max=10, frame_max=4096, heartbeat=0).encode_frame(0)),
        ("c", m.ConnectionOpen(virtual_host="/").encode_frame(0)),
        ("s", m.ConnectionOpenOk().encode_frame(0)),
        ("c", m.ChannelOpen().encode_frame(1)),                                   # direction: none
        ("s", m.ChannelOpenOk().encode_frame(1)),
        ("c", m.ConnectionSecure(challenge=b"x").encode_frame(0)),
        ("c", m.QueueDeclare(queue="q").encode_frame(1)),                         # response
        ("s", m.ExchangeDeclareOk().encode_frame(1)),
        ("c", hb_on_1),                                                           # heartbeat-channel
        ("c", m.ConnectionOpen(virtual_host="/").encode_frame(2)),                # channel
        ("c", f.BodyFrame(1, b"stray").encode()),                                 # unexpected-content
        ("c", m.BasicPublish(exchange="", routing_key="k").encode_frame(1)),      # content-interleaved
        ("c", m.BasicQos(prefetch_count=1).encode_frame(1)),
        ("c", m.BasicPublish(exchange="", routing_key="k").encode_frame(1)
         # a header of class 50 (queue), which has no content in 0-9-1: unknown-class; its body is ignored
         + f.HeaderFrame(1, 50, 3, gen.properties.PROPERTIES[60](), 0).encode() + f.BodyFrame(1, b"abc").encode()),
        ("c", struct.pack(">BHIHH", 1, 1, 4, 60, 999) + b"\xce"),                  # unknown-method
        ("c", f.encode_message(1, m.BasicPublish(exchange="", routing_key="k"), props, b"ok")),
    ]
    path = tmp_path / "synthetic.pcap"
    synth_capture(path, talk)
    out = decode(tmp, [path])
    kinds = [v["kind"] for v in sorted(out["violations"], key=lambda v: v["packet"])]
    assert kinds == ["direction", "response", "heartbeat-channel", "channel", "unexpected-content",
                     "content-interleaved", "unknown-class", "unknown-method"], out["violations"]
    codes = {v["kind"]: (v["reply_code"], v["reply_name"]) for v in out["violations"]}
    assert codes["response"] == (503, "command-invalid") and codes["channel"] == (504, "channel-error")
    assert codes["heartbeat-channel"] == (501, "frame-error") and codes["unknown-class"] == (540, "not-implemented")
    # the last message, after all that, is decoded whole
    last = [x for x in out["messages"] if x["complete"]][-1]
    assert last["body_received"] == 2 and last["routing_key"] == "k"


def test_limits_come_from_the_negotiation_the_observer_took_in(tmp: Any, tmp_path: Path) -> None:
    """The checker's limits are the engine Observer's tune and tune-ok: a frame over 4096 octets before the tune-ok
    is no violation, one after it is; a tune-ok channel-max over the tune's breaks the spec's ``le`` assert; the
    connection row carries the tune-ok's values; a tune-ok after the negotiation (left out) changes nothing."""
    gen = pipeline(tmp).codec
    m, f = gen.methods, gen.frames
    big = {"pad": "x" * 5000}  # a connection.start of over 5,000 octets, before any limit is known
    talk = [
        ("c", gen.constants.PROTOCOL_HEADER),
        ("s", m.ConnectionStart(version_major=0, version_minor=9, server_properties=big, mechanisms=b"PLAIN",
                                locales=b"en_US").encode_frame(0)),
        ("c", m.ConnectionStartOk(client_properties={}, mechanism="PLAIN", response=b"\0a\0b",
                                  locale="en_US").encode_frame(0)),
        ("s", m.ConnectionTune(channel_max=10, frame_max=4096, heartbeat=0).encode_frame(0)),
        ("c", m.ConnectionTuneOk(channel_max=20, frame_max=4096, heartbeat=0).encode_frame(0)),  # assert: 20 > 10
        ("c", m.ConnectionOpen(virtual_host="/").encode_frame(0)),
        ("s", m.ConnectionOpenOk().encode_frame(0)),
        ("c", m.ChannelOpen().encode_frame(1)),
        ("s", m.ChannelOpenOk().encode_frame(1)),
        ("c", m.ConnectionTuneOk(channel_max=1, frame_max=131072, heartbeat=9).encode_frame(0)),  # left out
        # a body frame of 5,000 + 8 octets: over the tune-ok's 4096 (not the late one's 131072)
        ("c", f.encode_message(1, m.BasicPublish(exchange="", routing_key="k"), None, b"y" * 5000, 131072)),
    ]
    path = tmp_path / "limits.pcap"
    synth_capture(path, talk)
    out = decode(tmp, [path])
    got = [(v["kind"], v["method"], v["detail"]) for v in sorted(out["violations"], key=lambda v: v["packet"])]
    assert [g[:2] for g in got] == [("assert", "connection.tune-ok"), ("sequence", "connection.tune-ok"),
                                    ("frame-size", None)], got
    assert "channel-max 20" in got[0][2] and got[2][2] == "a frame of 5008 octets; the negotiated frame_max is 4096"
    [c] = out["connections"]
    assert (c["channel_max"], c["frame_max"], c["heartbeat"]) == (20, 4096, 0)


def test_the_same_property_octets_of_two_classes_give_each_its_own_properties(tmp: Any, tmp_path: Path) -> None:
    """0-9's basic and file classes both carry content, with different property lists: flags 0x1000 and one
    octet 2 are basic's delivery-mode but file's priority. Header frames are built here by hand."""

    def header(class_id: int) -> bytes:
        payload = struct.pack(">HHQH", class_id, 0, 0, 0x1000) + b"\x02"
        return struct.pack(">BHI", 2, 1, len(payload)) + payload + b"\xce"

    path = tmp_path / "two-classes.pcap"
    synth_capture(path, [("c", b"AMQP\x01\x01\x00\x09"), ("c", header(60)), ("c", header(70)), ("c", header(60))])
    rows = Pipeline(tmp, str(Path(__file__).resolve().parents[2] / "spec" / "amqp0-9.xml")).run([path])
    props = [r["properties"] for r in rows_as_dicts(rows.frames, FRAMES) if r["frame_type"] == "header"]
    assert props == ['{"delivery_mode":2}', '{"priority":2}', '{"delivery_mode":2}']


def test_asserts_and_protocol_header(tmp: Any, tmp_path: Path) -> None:
    gen = pipeline(tmp).codec
    m = gen.methods
    talk = [
        ("c", b"AMQP\x01\x01\x00\x09"),  # a 0-9 client talking to a 0-9-1 decoder
        ("s", m.ConnectionStart(version_major=0, version_minor=9, server_properties={}, mechanisms=b"",
                                locales=b"en_US").encode_frame(0)),  # notnull mechanisms
    ]
    path = tmp_path / "asserts.pcap"
    synth_capture(path, talk)
    out = decode(tmp, [path])
    got = {(v["kind"], v["method"]) for v in out["violations"]}
    assert got == {("protocol-header", None), ("assert", "connection.start")}
    a = next(v for v in out["violations"] if v["kind"] == "assert")
    assert a["reply_code"] == 502 and "connection.start.mechanisms" in a["detail"]


# -- files that are not what they claim -------------------------------------------------------------------
def test_bad_files(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a capture\n")
    with pytest.raises(capture.CaptureError, match="not a pcap or pcapng"):
        capture.index_file(text, 0, 1 << 20)
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    with pytest.raises(capture.CaptureError):
        capture.index_file(empty, 0, 1 << 20)
    src = DATA / "pika-small.pcap"
    cut = tmp_path / "cut.pcap"
    raw = src.read_bytes()
    cut.write_bytes(raw[: len(raw) // 2])
    idx = capture.index_file(cut, 0, 1 << 20)
    assert idx.error and "truncated" in idx.error and 0 < idx.packets < capture.index_file(src, 0, 1 << 20).packets
    bogus = tmp_path / "bogus.pcap"
    bogus.write_bytes(raw[:24] + struct.pack("<IIII", 0, 0, 0xFFFFFFF0, 0xFFFFFFF0) + b"x" * 64)
    assert "implausible record length" in (capture.index_file(bogus, 0, 1 << 20).error or "")


def test_pcap_walk_parts_and_damage_at_every_cut(tmp_path: Path) -> None:
    """The driver's pcap walk, against arithmetic on a hand-built file: parts start on record
    boundaries and close at the first record end at least ``part_size`` past their start; a file cut
    anywhere keeps every whole record before the cut and names the first broken one by offset and
    packet number; an implausible length stops the walk where it is."""
    lengths = [0, 1, 60, 5, 1500, 17, 16, 200, 3, 90]
    head = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    body, starts = b"", []
    for i, n in enumerate(lengths):
        starts.append(24 + len(body))
        body += struct.pack("<IIII", 1_700_000_000 + i, 7, n, n) + bytes([i]) * n
    full = head + body
    ends = starts[1:] + [len(full)]
    f = tmp_path / "walk.pcap"
    for cut in range(24, len(full) + 1):
        f.write_bytes(full[:cut])
        whole = sum(1 for e in ends if e <= cut)
        for part_size in (1, 16, 40, 100, ends[3] - 24, 1 << 20):  # 16, ends[3] - 24: a record ends on the size
            idx = capture.index_file(f, 0, part_size)
            assert idx.packets == whole
            assert idx.first_ts == (1_700_000_000 * 10**9 + 7_000 if whole else None)
            if cut == (ends[whole - 1] if whole else 24):
                assert idx.error is None
            elif cut - (ends[whole - 1] if whole else 24) < 16:
                assert idx.error == f"truncated record header at offset {ends[whole - 1] if whole else 24}"
            else:
                assert idx.error == f"truncated record at offset {starts[whole]} (packet {whole + 1})"
            bounds = [24] + ends[:whole]
            want, at = [], 0
            while at < whole:  # records [at, k) make a part: the first end >= start + part_size
                k = at + 1
                while k < whole and bounds[k] - bounds[at] < part_size:
                    k += 1
                want.append((bounds[at], bounds[k], at + 1))
                at = k
            assert [(p.start, p.end, p.first_packet) for p in idx.parts] == want
    bad = bytearray(full)
    struct.pack_into("<I", bad, starts[4] + 8, capture.MAX_RECORD + 1)
    f.write_bytes(bytes(bad))
    idx = capture.index_file(f, 0, 40)
    assert idx.packets == 4 and idx.parts[-1].end == starts[4]
    assert idx.error == f"implausible record length {capture.MAX_RECORD + 1} at offset {starts[4]}"


def test_pcapng_walk_parts_and_damage_at_every_cut(tmp_path: Path) -> None:
    """The driver's pcapng walk, against arithmetic on a hand-built file: a run of packet blocks with
    a name resolution block and a simple packet block inside; a file cut anywhere keeps every whole
    block before the cut and names the first broken one; with a part size of 1 every block is a part."""

    def block(btype: int, body: bytes) -> bytes:
        body += bytes(-len(body) % 4)
        return struct.pack("<II", btype, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))

    def epb(ts: int, n: int) -> bytes:
        return block(6, struct.pack("<IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, n, n) + bytes(n))

    blocks = [block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)),
              block(1, struct.pack("<HHI", 1, 0, 65535)),
              epb(5_000_000, 60), epb(5_000_001, 0), block(4, b"\x00" * 8), epb(5_000_002, 7),
              block(3, struct.pack("<I", 9) + bytes(9)), epb(5_000_003, 1)]
    is_packet = [False, False, True, True, False, True, True, True]
    starts = [sum(len(b) for b in blocks[:i]) for i in range(len(blocks))]
    full = b"".join(blocks)
    f = tmp_path / "walk.pcapng"
    for cut in range(28, len(full) + 1):
        f.write_bytes(full[:cut])
        whole = sum(1 for i, b in enumerate(blocks) if starts[i] + len(b) <= cut)
        packets = sum(is_packet[:whole])
        end = starts[whole] if whole < len(blocks) else len(full)
        for part_size in (1, 1 << 20):
            idx = capture.index_file(f, 0, part_size)
            assert idx.packets == packets
            assert idx.first_ts == (5_000_000_000 if packets else None)  # microseconds by default
            if cut == end:
                assert idx.error is None
            elif cut - end < 12:
                assert idx.error == f"truncated block header at offset {end}"
            else:
                assert idx.error == f"truncated block at offset {end} (after packet {packets})"
            if part_size == 1:
                want = [(starts[i], starts[i] + len(blocks[i]), sum(is_packet[:i]) + 1) for i in range(whole)]
            else:
                want = [(0, end, 1)] if end else []
            assert [(p.start, p.end, p.first_packet) for p in idx.parts] == want


def test_amqp_found_on_other_ports(tmp: Any, tmp_path: Path) -> None:
    """Off the listed ports a connection is AMQP when its first octets are a protocol header; --port adds one."""
    gen = pipeline(tmp).codec
    m = gen.methods
    talk = [("c", gen.constants.PROTOCOL_HEADER),
            ("s", m.ConnectionStart(version_major=0, version_minor=9, server_properties={"product": "x"},
                                    mechanisms=b"PLAIN", locales=b"en_US").encode_frame(0))]
    by_header, no_header = tmp_path / "header.pcap", tmp_path / "no-header.pcap"
    synth_capture(by_header, talk, server_port=15672)
    synth_capture(no_header, talk[1:], server_port=15672)
    got = decode(tmp, [by_header])
    assert [(c["client"], c["server"]) for c in got["connections"]] == [("127.0.0.1:40000", "127.0.0.1:15672")]
    assert [f["frame_type"] for f in got["frames"]] == ["protocol-header", "method"]
    assert decode(tmp, [no_header])["connections"] == []
    listed = decode(tmp, [no_header], ports=frozenset((15672,)))
    assert [f["method"] for f in listed["frames"]] == ["connection.start"]


def test_frame_row_builders_follow_the_frames_columns() -> None:
    """Each builder puts every value under its own column of records.FRAMES (one column list, one order)."""
    from amqgen.traffic import records

    names = [c[0] for c in records.FRAMES]
    common = ("f.pcap", 7, 1_000, "a > b", "client-to-server", 42)
    rows = {
        "frame": records.frame_row(*common, 3, "body", 10, "E: bad"),
        "method": records.method_row(*common, 1, 30, 60, 40, "basic.publish", "{}", None),
        "header": records.header_row(*common, 1, 20, 60, "basic", 5, '{"x": 1}', None),
        "protocol-header": records.protocol_header_row(*common, 8),
    }
    for kind, row in rows.items():
        assert len(row) == len(names), kind
    got = {k: dict(zip(names, r, strict=True)) for k, r in rows.items()}
    for r in got.values():
        assert (r["file"], r["packet"], r["ts"], r["connection"], r["direction"], r["stream_offset"]) == common
    assert (got["frame"]["channel"], got["frame"]["frame_type"], got["frame"]["size"], got["frame"]["error"]) == (
        3, "body", 10, "E: bad")
    m = got["method"]
    assert (m["frame_type"], m["size"], m["class_id"], m["method_id"], m["method"], m["arguments"]) == (
        "method", 30, 60, 40, "basic.publish", "{}")
    h = got["header"]
    assert (h["frame_type"], h["class_id"], h["content_class"], h["body_size"], h["properties"], h["method"]) == (
        "header", 60, "basic", 5, '{"x": 1}', None)
    p = got["protocol-header"]
    assert (p["frame_type"], p["size"], p["channel"], p["error"]) == ("protocol-header", 8, None, None)
