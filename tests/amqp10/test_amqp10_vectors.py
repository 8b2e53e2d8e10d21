"""The AMQP 1.0 corpus (``amqgen vectors --spec 1-0``) against Qpid Proton: every value case and each of its
equivalent encodings reads in proton.Data as the case's value; every composite case and its equivalents as the
described list of the case's fields; the frames' performatives the same, and the AMQP frames are taken by a Proton
Transport (its frame reader and state machine) without a framing error; each message's sections read in order;
each malformed case is refused by the reference codec with its kind, and by Proton unless the gap is listed with
its reason. The document is deterministic and validates against its JSON Schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import proton
import pytest
from proton import Data
from proton_peer import norm, proton_decode, same

from amqgen.amqp10 import refcodec as ref
from amqgen.amqp10 import vectors as v10
from amqgen.amqp10.loader import load_spec
from amqgen.amqp10.refcodec import Typed

FOLDER = Path("/usr/share/amqp/specs/1-0")
#: (kind, input) of the malformed cases Qpid Proton accepts, and why (the reference codec, as a strict decoder must,
#: refuses them); any other acceptance fails the test
PROTON_ACCEPTS = {
    ("mandatory-null", "composite"): "proton.Data knows no composite: field rules are the engine's",
    ("unknown-descriptor", "composite"): "proton.Data reads any described value",
    ("unknown-descriptor", "message"): "proton.Data reads any described value",
    ("wrong-type", "value"): "proton.Data reads a boolean octet of 2 as true and a null descriptor",
    ("wrong-type", "composite"): "proton.Data reads any value in any place",
    ("size", "value"): "proton.Data reads items up to the count and does not compare sizes",
    ("size", "composite"): "proton.Data knows no composite's field count",
    ("nesting-depth", "value"): "proton.Data reads lists nested past 100",
    ("invalid-utf8", "value"): "proton.Data checks neither UTF-8 in strings nor ASCII in symbols nor chars",
    ("truncated", "frames"): "Proton's transport, told the stream ended inside a frame, closes with no condition",
}


def amqgen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "amqgen", *args], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("v10") / "v.json"
    proc = amqgen("vectors", "--spec", "1-0", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    d: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return d


def test_deterministic_and_valid(doc: dict[str, Any], tmp_path: Path) -> None:
    again = amqgen("vectors", "--spec", str(FOLDER), "--out", "-")
    assert json.loads(again.stdout) == doc
    schema = json.loads(amqgen("vectors", "--spec", "1-0", "--json-schema").stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(doc, schema)
    assert {c["kind"] for c in doc["malformed"]} == set(doc["error_kinds"]), "every kind has cases"
    ids = [c["id"] for s in v10.SECTIONS for c in doc[s]]
    assert len(ids) == len(set(ids))
    broken = dict(doc, malformed=[dict(doc["malformed"][0], kind="no-such-kind")])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_every_value_and_equivalent_reads_the_same_in_proton(doc: dict[str, Any]) -> None:
    n = 0
    for case in doc["values"]:
        want = norm(v10.value_from_json(case["value"]))
        for enc in [case["bytes"], *case["equivalent"]]:
            got = proton_decode(bytes.fromhex(enc))
            assert same(got, want), f"{case['id']}: {enc} reads {got!r} in Proton"
            n += 1
    assert n > len(doc["values"]) + 30  # the equivalents are there: uint as 0x52 and 0x70, list32, str32, ...


def _fields_as_list(spec_fields: list[str], fields: dict[str, Any]) -> list[Any]:
    items = [norm(v10.value_from_json(fields[f])) if fields[f] is not None else None for f in spec_fields]
    while items and items[-1] is None:
        items.pop()
    return items


def test_every_composite_and_equivalent_reads_the_same_in_proton(doc: dict[str, Any]) -> None:
    spec = load_spec(FOLDER)
    comp = {c.name: c for c in spec.composites}
    assert {c["type"] for c in doc["composites"]} == set(comp)
    for case in doc["composites"]:
        c = comp[case["type"]]
        want = _fields_as_list([f.name for f in c.fields], case["fields"])
        for i, enc in enumerate([case["bytes"], *case["equivalent"]]):
            got = proton_decode(bytes.fromhex(enc))
            assert isinstance(got, proton.Described), case["id"]
            assert got.descriptor in (c.descriptor.code, c.descriptor.name), case["id"]
            items = list(got.value)
            if i:  # an equivalent may keep its trailing nulls
                while items and items[-1] is None:
                    items.pop()
            assert same(items, want), f"{case['id']} ({enc}): Proton reads {got.value!r}"


def _transport(frames: bytes) -> tuple[Any, list[str]]:
    t = proton.Transport(proton.Transport.SERVER)
    conn = proton.Connection()
    col = proton.Collector()
    conn.collect(col)
    t.bind(conn)
    t.push(frames)
    events = []
    while col.peek():
        events.append(str(col.peek().type))
        col.pop()
    return t, events


def test_the_frames_read_in_proton_and_its_transport_takes_them(doc: dict[str, Any]) -> None:
    spec = load_spec(FOLDER)
    c = ref.Composites(spec)
    header = b"AMQP\x00\x01\x00\x00"
    seen = set()
    for case in doc["frames"]:
        data = bytes.fromhex(case["bytes"])
        frames = [f for f in ref.read_frames(data) if isinstance(f, ref.Frame)]
        for f, want in zip(frames, [x for x in case["frames"] if x["type"] != "protocol-header"], strict=True):
            if "performative" not in want:
                assert f.body == b""  # the heartbeat
                continue
            r = ref.Reader(f.body)
            ref.decode_value(r)
            got = proton_decode(f.body[:r.pos])
            comp = next(x for x in spec.composites if x.name == want["performative"])
            assert got.descriptor == comp.descriptor.code
            assert same(list(got.value), _fields_as_list([x.name for x in comp.fields], want["fields"]))
            assert f.body[r.pos:].hex() == want["payload"]
        if any(x.get("type") == "sasl" for x in case["frames"]) or case["id"] == "frames/headers":
            continue  # the Transport below is an AMQP one; SASL frames and the three headers are read above
        stream = data if data.startswith(header) else header + data
        if case["id"] == "frames/transfer-with-payload":  # a transfer needs its session and link first
            attach = c.encode("attach", {"name": Typed("string", "l"), "handle": Typed("uint", 0),
                                         "role": Typed("boolean", False)})
            begin = c.encode("begin", {"next-outgoing-id": Typed("uint", 0), "incoming-window": Typed("uint", 10),
                                       "outgoing-window": Typed("uint", 10)})
            opened = c.encode("open", {"container-id": Typed("string", "peer")})
            stream = header + b"".join(ref.encode_frame(0, ch, body) for ch, body in
                                       ((0, opened), (3, begin), (3, attach))) + data
        if case["id"] == "frames/transfer-with-payload":
            t, events = _transport(stream[:len(stream) - len(data)])
            conn = t.connection
            conn.open()
            ssn = conn.session_head(0)
            ssn.incoming_capacity = 1 << 20  # Proton's own side: room for the transfer
            ssn.open()
            link = conn.link_head(0)
            link.open()
            link.flow(10)
            t.pending()  # let Proton write its answers, so its windows are in force
            t.push(data)
            delivery = link.current  # the transfer arrived whole: its payload is the delivery's
            payload = bytes.fromhex(case["frames"][0]["payload"])
            assert delivery is not None and link.recv(len(payload) + 1) == payload
            events.append("PN_DELIVERY")
        else:
            t, events = _transport(stream)
        assert t.condition is None, f"{case['id']}: {t.condition}"
        seen.update(events)
    assert {"PN_CONNECTION_REMOTE_OPEN", "PN_SESSION_REMOTE_OPEN", "PN_LINK_REMOTE_OPEN", "PN_DELIVERY"} <= seen


def test_each_message_reads_in_order_in_proton(doc: dict[str, Any]) -> None:
    for case in doc["messages"]:
        data = bytes.fromhex(case["bytes"])
        got, pos = [], 0
        while pos < len(data):  # proton.Data reads one value per decode
            d = Data()
            n = d.decode(data[pos:])
            got.append(proton_decode(data[pos:pos + n]))
            pos += n
        want = [norm(v10.value_from_json(s["value"])) for s in case["sections"]]
        assert len(got) == len(want) and all(same(g, w) for g, w in zip(got, want, strict=True)), case["id"]
        msg = proton.Message()
        msg.decode(data)  # Proton's message reader takes the sections as a whole
    full = next(c for c in doc["messages"] if c["id"] == "messages/data-full")
    msg = proton.Message()
    msg.decode(bytes.fromhex(full["bytes"]))
    assert msg.id == "m-1" and msg.durable and msg.priority == 9 and msg.content_type == "text/plain"
    assert msg.properties == {"k": -1} and msg.annotations == {proton.symbol("x-opt-a"): proton.uint(1)}


def _proton_refuses(inp: str, data: bytes) -> bool:
    if inp == "frames":
        t, _ = _transport(data if data.startswith(b"AMQP") else b"AMQP\x00\x01\x00\x00" + data)
        if t.condition is None:
            t.close_tail()  # the stream ends here: a frame cut short is an error only now
        return t.condition is not None
    d = Data()
    try:
        n = d.decode(data)
    except proton.DataException:
        return True
    return n != len(data)


def test_every_malformed_case_is_refused(doc: dict[str, Any]) -> None:
    spec = load_spec(FOLDER)
    c = ref.Composites(spec)
    accepted = []
    for case in doc["malformed"]:
        data = bytes.fromhex(case["bytes"])
        with pytest.raises(ref.RefError) as info:
            if case["input"] == "value":
                ref.decode(data)
            elif case["input"] == "composite":
                c.decode(data)
            elif case["input"] == "frames":
                for f in ref.read_frames(data):
                    if isinstance(f, ref.Frame) and f.body:
                        ref.split_body(c, f.body)
            else:
                ref.read_message(spec, data)
        assert info.value.kind == case["kind"], case["id"]
        if not _proton_refuses(case["input"], data):
            accepted.append((case["kind"], case["input"], case["id"]))
    unexplained = [a for a in accepted if a[:2] not in PROTON_ACCEPTS]
    assert not unexplained, f"Proton accepts {unexplained} and no reason is listed"
    assert len(accepted) < len(doc["malformed"]) // 2 + 10  # Proton refuses the structural ones itself


def test_tshark_dissects_every_frame_case_without_a_malformed_packet(doc: dict[str, Any], tmp_path: Path) -> None:
    """Each frames case, sent by a client over one TCP connection made up here (tests/traffic_tools.py), read by
    tshark's AMQP 1.0 dissector: the performatives it names are the case's, and no packet is malformed."""
    from traffic_tools import need, synth_capture

    tshark = need("tshark")
    spec = load_spec(FOLDER)
    code = {c.name: c.descriptor.id for c in spec.composites}
    for case in doc["frames"]:
        data = bytes.fromhex(case["bytes"])
        if not data.startswith(b"AMQP"):
            data = b"AMQP\x00\x01\x00\x00" + data
        cap = tmp_path / (case["id"].replace("/", "_") + ".pcap")
        synth_capture(cap, [("c", data)])
        proc = subprocess.run([tshark, "-r", str(cap), "-d", "tcp.port==5672,amqp", "-T", "fields",
                               "-e", "amqp.performative", "-e", "amqp.sasl.method", "-e", "_ws.malformed",
                               "-e", "_ws.expert.severity"], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        named = [int(x) for line in proc.stdout.splitlines() for col in line.split("\t")[:2] for x in col.split(",")
                 if x]
        want = [code[f["performative"]] for f in case["frames"] if "performative" in f]
        assert named == want, f"{case['id']}: tshark names {named}, the case {want}"
        warning = 0x600000  # tshark's expert severity of a warning; notes and chats are the made-up TCP's
        for line in proc.stdout.splitlines():
            malformed, severity = (line.split("\t") + ["", ""])[2:4]
            worst = max((int(x) for x in severity.split(",") if x), default=0)
            assert not malformed and worst < warning, f"{case['id']}: tshark reports {line!r}"


def test_proton_s_transport_ignores_a_symbolic_descriptor(doc: dict[str, Any]) -> None:
    """A peer gap, documented: the spec lets a descriptor be its symbol ("amqp:open:list"), the reference codec and
    proton.Data read it, but Proton's Transport passes over a performative so described (no error, no open)."""
    spec = load_spec(FOLDER)
    c = ref.Composites(spec)
    for symbolic, active in ((False, True), (True, False)):
        body = c.encode("open", {"container-id": Typed("string", "peer")}, symbolic=symbolic)
        assert c.decode(body)[0].name == "open"
        t, _ = _transport(b"AMQP\x00\x01\x00\x00" + ref.encode_frame(0, 0, body))
        assert t.condition is None
        assert bool(t.connection.state & proton.Endpoint.REMOTE_ACTIVE) == active, symbolic
    assert any(case["id"].startswith("open/") and any(e.startswith("00a3") for e in case["equivalent"])
               for case in doc["composites"]), "the corpus carries symbolic descriptors as equivalents"
