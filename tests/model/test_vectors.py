"""The conformance corpus (``amqgen vectors``): checked against pika, pamqp and py-amqp, against
octets built by hand here, deterministic, valid against its schema, and sharp enough that
deliberate breakages of the reference codec behind it are caught by the peer checks.

The generated Python package running the whole corpus for every spec is in test_python_target.py
(its ``--option tests=1`` output runs it).
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pytarget import ROOT, SPEC_091, SPEC_091_EXT
from specgen import spec_text, write
from vector_peers import GAP_REASONS, Report, check_frames, check_methods, check_properties, check_tables, peer_rejects

from amqgen.amqp0 import refcodec, vectors
from amqgen.amqp0.lower import load_spec
from amqgen.amqp0.model import Spec
from amqgen.corpus import dumps

pytestmark = pytest.mark.peers  # its tier, not its folder's (tests/conftest.py)

PEER_SPECS = {"official-0-9-1": SPEC_091, "rabbitmq-0-9-1-extended": SPEC_091_EXT}


@pytest.fixture(autouse=True)
def deep_recursion() -> Iterator[None]:
    """100-deep tables: json and jsonschema recurse once per level, several frames each."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20000))
    yield
    sys.setrecursionlimit(old)


def amqgen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "amqgen", *args], check=False, capture_output=True, text=True,
                          cwd=ROOT)


def document(spec: Spec, dialect: str = "rabbitmq") -> dict[str, Any]:
    """The corpus as a target reads it: the written text, parsed."""
    data: dict[str, Any] = json.loads(dumps(vectors.corpus(spec, dialect)))
    return data


def fields_of(spec: Spec) -> dict[str, list[tuple[str, str]]]:
    return {m.full_name: [(f.name, f.type) for f in m.fields] for m in spec.methods}


def basic_properties(spec: Spec) -> list[tuple[str, str]]:
    return [(p.name, p.type) for p in spec.class_by_name["basic"].properties]


def peer_reports(spec: Spec, doc: dict[str, Any]) -> dict[str, Report]:
    return {
        "methods": check_methods(doc, fields_of(spec)),
        "properties": check_properties(doc, basic_properties(spec)),
        "tables": check_tables(doc),
        "frames": check_frames(doc, fields_of(spec)),
    }


@pytest.fixture(scope="module", params=list(PEER_SPECS), ids=list(PEER_SPECS))
def peer_spec(request: pytest.FixtureRequest) -> tuple[Spec, dict[str, Any]]:
    spec = load_spec(PEER_SPECS[request.param])
    return spec, document(spec)


# -- the peers agree with the corpus -----------------------------------------------------------------------
def test_peers_decode_every_method_case_and_encode_what_they_can(peer_spec: tuple[Spec, dict[str, Any]]) -> None:
    spec, doc = peer_spec
    r = check_methods(doc, fields_of(spec))
    assert not r.problems, "\n".join(r.problems[:20])
    n = len(doc["methods"])
    # pika decodes every method case; pamqp every case but those its documented gaps name
    assert r.compared["pika:method-decode"] == n
    assert r.compared["pamqp:method-decode"] + r.gaps["pamqp-U"] + r.gaps["pamqp-longlong"] == n
    assert set(r.gaps) <= {"pamqp-U", "pamqp-longlong"}
    # byte-identical wherever the peer picks the corpus's type codes: all but the "max" tables
    assert r.compared["pika:method-encode"] >= n - sum(1 for m in spec.methods if any(f.type == "table" for f in m.fields))
    assert r.compared["pamqp:method-encode"] > n // 2


def test_peers_accept_unused_bits_and_encode_them_as_zero(peer_spec: tuple[Spec, dict[str, Any]]) -> None:
    """The `accepted` section (docs/vectors.md): pika and pamqp decode each bit octet with its unused bits set
    to the case's values, and encode those values to the case's canonical octets."""
    spec, doc = peer_spec
    cases = doc["accepted"]
    assert any(c["method"] == "basic.publish" and c["bytes"].endswith("fc") for c in cases)
    # two per method with bit arguments (no method of these specs fills a bit octet)
    assert len(cases) == 2 * sum(1 for m in spec.methods if any(f.type == "bit" for f in m.fields))
    as_sent = check_methods({"methods": cases}, fields_of(spec))
    # decoding the octets as sent: no problem; encoding gives other octets (the canonical ones) by design
    assert all("encodes to other octets" in p for p in as_sent.problems), as_sent.problems[:5]
    assert as_sent.compared["pika:method-decode"] == as_sent.compared["pamqp:method-decode"] == len(cases)
    canonical = check_methods({"methods": [dict(c, bytes=c["canonical"]) for c in cases]}, fields_of(spec))
    assert not canonical.problems, canonical.problems[:5]
    assert canonical.compared["pika:method-encode"] == len(cases)


def test_peers_decode_every_properties_case(peer_spec: tuple[Spec, dict[str, Any]]) -> None:
    spec, doc = peer_spec
    r = check_properties(doc, basic_properties(spec))
    assert not r.problems, "\n".join(r.problems[:20])
    n = len(doc["properties"])
    assert n == 2 + 14  # none, all, each of basic's 14 properties
    assert r.compared["pika:properties-decode"] == n
    assert r.compared["pamqp:properties-decode"] + sum(r.gaps.values()) == n
    assert set(r.gaps) <= {"pamqp-T-ms", "pamqp-delivery-mode", "pamqp-cluster-id"}
    assert r.compared["pika:properties-encode"] >= n - 2  # all but the cases with every-code headers


def test_peers_read_every_table_case(peer_spec: tuple[Spec, dict[str, Any]]) -> None:
    _, doc = peer_spec
    r = check_tables(doc)
    assert not r.problems, "\n".join(r.problems[:20])
    n = len(doc["tables"])
    # py-amqp reads every case but the timestamps past the year 9999 (table and array: 2)
    assert r.compared["py-amqp:table-decode"] == n - 2
    assert r.compared["pamqp:table-decode"] >= n - 12 and r.compared["pika:table-decode"] >= n - 30
    assert set(r.gaps) <= {"pamqp-U", "pika-float", "peer-T-range", "pamqp-T-ms"}
    assert r.compared["pika:table-encode"] > 40 and r.compared["pamqp:table-encode"] > 60


def test_no_peer_reads_timestamps_past_9999_so_those_octets_are_checked_by_hand(
        peer_spec: tuple[Spec, dict[str, Any]]) -> None:
    _, doc = peer_spec
    case = next(c for c in doc["tables"] if c["id"] == "tables/T/max")
    entry = b"\x03k-T" + b"T" + b"\xff" * 8
    assert case["bytes"] == (struct.pack(">I", len(entry)) + entry).hex()
    assert case["value"] == [["k-T", {"type": "T", "value": str(2**64 - 1)}]]


def test_peers_read_every_frame_case(peer_spec: tuple[Spec, dict[str, Any]]) -> None:
    spec, doc = peer_spec
    r = check_frames(doc, fields_of(spec))
    assert not r.problems, "\n".join(r.problems[:20])
    n = len(doc["frames"])
    assert r.compared["pika:frames"] == n
    assert r.compared["pamqp:frames"] + sum(r.gaps.values()) == n
    assert set(r.gaps) <= {"pamqp-empty-body", "pamqp-T-ms"}


# The malformed cases both pika and pamqp accept, by (kind, input), and why. The test fails when a
# case outside these is accepted by both, and when a rule here matches nothing any more.
BOTH_ACCEPT = {
    ("trailing-data", "method"): "neither checks that the arguments use up the payload",
    ("trailing-data", "properties"): "neither checks that the properties use up the payload",
    ("trailing-data", "table"): "their table decoders return where the table ends and leave the rest",
    ("truncated", "method"): "both slice a string without checking its length, so a payload cut inside its "
                             "last string reads as a shorter string",
    ("truncated", "frame"): "the same slicing, inside a method frame",
    ("property-flags", "properties"): "neither checks flag bits against the class's properties",
    ("frame-size", "frame"): "neither has a frame_max limit",
    ("table", "table"): "both slice an S value past its table's end",
    ("table-depth", "table"): "neither limits how deep tables nest",
}


def test_every_malformed_case_is_rejected_by_a_peer_or_documented(peer_spec: tuple[Spec, dict[str, Any]]) -> None:
    _, doc = peer_spec
    matched: dict[tuple[str, str], int] = dict.fromkeys(BOTH_ACCEPT, 0)
    undocumented = []
    for case in doc["malformed"]:
        if peer_rejects("pika", case) or peer_rejects("pamqp", case):
            continue
        key = (case["kind"], case["input"])
        if key in BOTH_ACCEPT:
            matched[key] += 1
        else:
            undocumented.append(f"{case['id']}: {case['why']}")
    assert not undocumented, "both peers accept:\n" + "\n".join(undocumented)
    assert all(matched.values()), f"rules matching no case: {[k for k, v in matched.items() if not v]}"
    # most malformed input is rejected by at least one peer
    assert sum(matched.values()) < len(doc["malformed"]) // 2


def test_gap_reasons_are_documented() -> None:
    assert all(len(text) > 30 for text in GAP_REASONS.values())


# -- mutation check: a broken reference codec is caught by the peers --------------------------------------
def _mutate_bit_order(mp: pytest.MonkeyPatch) -> None:
    def mirrored(fields: Any, values: dict[str, Any], dialect: str) -> bytes:
        """encode_arguments with the first bit of an octet in its highest bit instead of its lowest."""
        out = bytearray()
        octet, nbits = -1, 0
        for f in fields:
            if f.type == "bit":
                if octet < 0 or nbits == 8:
                    out.append(0)
                    octet, nbits = len(out) - 1, 0
                if values[f.name]:
                    out[octet] |= 0x80 >> nbits
                nbits += 1
                continue
            octet = -1
            out += refcodec._encode_field(f.type, values[f.name], dialect)
        return bytes(out)

    mp.setattr(refcodec, "encode_arguments", mirrored)


def _mutate_flag_position(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(refcodec, "flag_position", lambda i: (i // 15, 14 - i % 15))


def _mutate_type_code(mp: pytest.MonkeyPatch) -> None:
    original = refcodec.encode_value
    mp.setattr(refcodec, "encode_value",
               lambda code, value, dialect: (b"i" + original(code, value, dialect)[1:]) if code == "I"
               else original(code, value, dialect))


def _mutate_shortstr_length(mp: pytest.MonkeyPatch) -> None:
    original = refcodec._encode_field

    def encode_field(wire: str, value: Any, dialect: str) -> bytes:
        if wire == "shortstr":  # characters counted instead of octets
            return bytes([len(value) % 256]) + value.encode()
        return original(wire, value, dialect)

    mp.setattr(refcodec, "_encode_field", encode_field)


def _mutate_short_byte_order(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(refcodec, "_u", lambda n, size: n.to_bytes(size, "little" if size == 2 else "big"))


def _mutate_decimal_scale(mp: pytest.MonkeyPatch) -> None:
    original = refcodec.encode_value
    mp.setattr(refcodec, "encode_value",
               lambda code, value, dialect: original(code, ((value[0] + 1) % 256, value[1]), dialect) if code == "D"
               else original(code, value, dialect))


MUTATIONS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "bits from the high end": _mutate_bit_order,
    "property flags one bit lower": _mutate_flag_position,
    "'I' written as 'i'": _mutate_type_code,
    "short string length in characters": _mutate_shortstr_length,
    "16-bit integers little-endian": _mutate_short_byte_order,
    "decimal scale off by one": _mutate_decimal_scale,
}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_a_broken_reference_codec_is_caught_by_the_peers(mutation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_spec(SPEC_091_EXT)
    with monkeypatch.context() as mp:
        MUTATIONS[mutation](mp)
        b = vectors.Builder(spec, "rabbitmq")
        doc = json.loads(json.dumps({"methods": b.methods(), "properties": b.properties(), "tables": b.tables(),
                                     "frames": b.frames()}))
    reports = peer_reports(spec, doc)
    problems = sum(len(r.problems) for r in reports.values())
    assert problems > 0, f"{mutation}: the peer checks found nothing"


def test_the_unbroken_corpus_passes_the_same_checks() -> None:
    spec = load_spec(SPEC_091_EXT)
    reports = peer_reports(spec, document(spec))
    assert all(not r.problems for r in reports.values())


# -- hand-built octets ---------------------------------------------------------------------------------------
def test_cases_against_octets_built_by_hand() -> None:
    spec = load_spec(SPEC_091)
    doc = document(spec)
    by_id = {c["id"]: c for section in ("methods", "properties", "frames", "tables") for c in doc[section]}
    # basic.qos: prefetch-size long, prefetch-count short, global bit
    assert by_id["basic.qos/max"]["bytes"] == struct.pack(">HHIHB", 60, 10, 2**32 - 1, 65535, 1).hex()
    # basic.publish: reserved short, exchange, routing-key, mandatory (bit 0) and immediate (bit 1)
    assert by_id["basic.publish/bit/immediate"]["bytes"] == struct.pack(">HHHBBB", 60, 40, 0, 0, 0, 2).hex()
    assert by_id["basic.publish/bit/mandatory"]["bytes"] == struct.pack(">HHHBBB", 60, 40, 0, 0, 0, 1).hex()
    assert "basic.publish/not/immediate" not in by_id  # the same octets as bit/mandatory: written once
    # basic properties: delivery-mode alone is flag bit 12 (the fourth property), then one octet
    each = by_id["basic/each/delivery-mode"]
    assert each["bytes"] == struct.pack(">HHQHB", 60, 0, 1024, 1 << 12, 255).hex()
    assert by_id["basic/none"]["bytes"] == struct.pack(">HHQH", 60, 0, 0, 0).hex()
    assert by_id["frames/heartbeat"]["bytes"] == "080000" + "00000000" + "ce"
    assert by_id["frames/protocol-header"]["bytes"] == b"AMQP\x00\x00\x09\x01".hex()
    assert doc["protocol_header"] == b"AMQP\x00\x00\x09\x01".hex()
    nan = by_id["tables/f/nan"]
    entry = b"\x03k-f" + b"f" + bytes.fromhex("7fc00000")
    assert nan["bytes"] == (struct.pack(">I", len(entry)) + entry).hex()
    dec = by_id["tables/D/scale-255-min"]
    entry = b"\x03k-D" + b"D" + struct.pack(">Bi", 255, -(2**31))
    assert dec["bytes"] == (struct.pack(">I", len(entry)) + entry).hex()
    # a message of 2 * 4088 + 77 octets at frame_max 4096: body frames of 4088, 4088 and 77
    split = next(c for c in doc["frames"] if c["id"].endswith("/split-at-4096"))
    assert [len(f["payload"]) // 2 for f in split["frames"] if f["type"] == "body"] == [4088, 4088, 77]
    assert all(len(f["payload"]) // 2 + 8 <= 4096 for f in split["frames"] if f["type"] == "body")


def test_a_spec_with_more_than_15_properties_gets_the_continuation_flag_word(tmp_path: Path) -> None:
    props = "".join(f'<field name="p{i}" domain="octet"/>\n' for i in range(17))
    text = spec_text(f'<class name="wide" index="90" handler="channel">\n{props}'
                     '<method name="m" index="10" content="1"><field name="f" domain="octet"/></method>\n</class>\n')
    spec = load_spec(write(tmp_path, "wide.xml", text))
    doc = document(spec)
    by_id = {c["id"]: c for c in doc["properties"]}
    # the 16th property (p15) alone: word 0 carries only the continuation bit, word 1 bit 15
    assert by_id["wide/each/p15"]["bytes"] == struct.pack(">HHQHHB", 90, 0, 1024, 0x0001, 0x8000, 255).hex()
    # the first alone: one word, no continuation
    assert by_id["wide/each/p0"]["bytes"] == struct.pack(">HHQHB", 90, 0, 1024, 0x8000, 255).hex()
    every = by_id["wide/all"]["bytes"]
    assert every[24:32] == struct.pack(">HH", 0xFFFF, 0xC000).hex()  # 15 bits + continuation, then p15 and p16
    assert any(c["kind"] == "property-flags" and c["input"] == "properties" for c in doc["malformed"])


# -- the document --------------------------------------------------------------------------------------------
def test_every_kind_has_cases_and_ids_are_unique() -> None:
    for path in (None, SPEC_091):
        spec = load_spec(path) if path else load_spec(ROOT / "spec" / "amqp0-9.xml")
        for dialect in vectors.DIALECTS:
            doc = document(spec, dialect)
            kinds = {c["kind"] for c in doc["malformed"]}
            assert kinds == set(vectors.ERROR_KINDS) == set(doc["error_kinds"])
            assert {c["input"] for c in doc["malformed"]} == set(vectors.INPUTS)
            ids = [c["id"] for s in ("methods", "properties", "frames", "tables", "malformed", "accepted") for c in doc[s]]
            assert len(ids) == len(set(ids))
            assert {c["method"] for c in doc["methods"]} == {m.full_name for m in spec.methods}
            assert {c["class"] for c in doc["properties"]} == {c.name for c in spec.content_classes}
            codes = {tv["type"] for c in doc["tables"] for _, tv in (c["value"] if c["kind"] == "table" else [])}
            assert codes == set(doc["type_codes"]) == set("tbBsuUIilLfdDSxTFAV")


def test_cli_writes_a_deterministic_document_that_validates(tmp_path: Path) -> None:
    schema_proc = amqgen("vectors", "--json-schema")
    assert schema_proc.returncode == 0
    schema = json.loads(schema_proc.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for spec_arg, dialect in ((SPEC_091_EXT, "rabbitmq"), ("0-9", "qpid"), ("amqp-specs:0-8", "rabbitmq")):
        a, b = tmp_path / "a.json", tmp_path / "b.json"
        for out in (a, b):
            proc = amqgen("vectors", "--spec", spec_arg, "--dialect", dialect, "--out", str(out))
            assert proc.returncode == 0, proc.stderr
        assert a.read_bytes() == b.read_bytes()
        doc = json.loads(a.read_text(encoding="utf-8"))
        validator.validate(doc)
        assert doc["dialect"] == dialect and doc["format"] == "amqgen-vectors" and doc["version"] == 1
        broken = dict(doc, malformed=[dict(doc["malformed"][0], kind="no-such-kind")])
        assert not validator.is_valid(broken)
    again = amqgen("vectors", "--spec", "amqp-specs:0-8", "--out", str(a))
    assert again.returncode == 0 and "unchanged" in again.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--spec", "no-such-spec", "--out", "x.json"], "unknown spec 'no-such-spec'"),
        (["--dialect", "amqp10", "--out", "x.json"], "--dialect must be one of rabbitmq, qpid"),
        ([], "--out FILE is required"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "amqgen", "vectors", *args], check=False, capture_output=True,
                          text=True, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and message in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "x.json").exists()


def test_cli_bad_spec_file_names_file_and_line(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.xml", '<?xml version="1.0"?>\n<amqp major="0" minor="9" revision="1">\n<class\n')
    proc = amqgen("vectors", "--spec", str(bad), "--out", str(tmp_path / "v.json"))
    assert proc.returncode == 2 and proc.stderr.startswith(f"{bad}:") and proc.stderr.count("\n") == 1
    assert not (tmp_path / "v.json").exists()
