"""AMQP 1.0's OASIS XML (Debian's amqp-specs, /usr/share/amqp/specs/1-0) read into its own typed model (issue 20,
first part): the counts, descriptors and defaults below are written out by hand from the OASIS AMQP 1.0
specification, not taken from amqgen's output."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from amqgen.amqp10 import wire
from amqgen.amqp10.loader import load_spec
from amqgen.amqp10.model import Composite, Restricted, Spec, json_schema, to_json
from amqgen.errors import SpecError, StrictError

pytestmark = pytest.mark.model  # its tier, not its folder's (tests/conftest.py)

FOLDER = Path("/usr/share/amqp/specs/1-0")

#: OASIS AMQP 1.0: every descriptor, domain 0x00000000 (amqp), by id (parts 2.7, 2.8, 3.2, 3.4, 3.5, 4.5, 5.3)
DESCRIPTORS = {
    "open": 0x10, "begin": 0x11, "attach": 0x12, "flow": 0x13, "transfer": 0x14, "disposition": 0x15,
    "detach": 0x16, "end": 0x17, "close": 0x18, "error": 0x1D,
    "received": 0x23, "accepted": 0x24, "rejected": 0x25, "released": 0x26, "modified": 0x27,
    "source": 0x28, "target": 0x29, "delete-on-close": 0x2B, "delete-on-no-links": 0x2C,
    "delete-on-no-messages": 0x2D, "delete-on-no-links-or-messages": 0x2E,
    "coordinator": 0x30, "declare": 0x31, "discharge": 0x32, "declared": 0x33, "transactional-state": 0x34,
    "sasl-mechanisms": 0x40, "sasl-init": 0x41, "sasl-challenge": 0x42, "sasl-response": 0x43, "sasl-outcome": 0x44,
    "header": 0x70, "delivery-annotations": 0x71, "message-annotations": 0x72, "properties": 0x73,
    "application-properties": 0x74, "data": 0x75, "amqp-sequence": 0x76, "amqp-value": 0x77, "footer": 0x78,
}


@pytest.fixture(scope="module")
def spec() -> Spec:
    assert FOLDER.is_dir(), f"{FOLDER} is missing (Debian package amqp-specs, deps/debian.txt)"
    return load_spec(FOLDER)


def amqgen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "amqgen", *args], capture_output=True, text=True, check=False)


def test_counts(spec: Spec) -> None:
    assert (len(spec.primitives), len(spec.composites), len(spec.restricted)) == (24, 33, 39)
    cats = [e.category for e in spec.encodings]
    assert len(cats) == 39 and [cats.count(c) for c in ("fixed", "variable", "compound", "array")] == [27, 6, 4, 2]
    f = spec.fields
    assert len(f) == 125
    assert sum(x.mandatory for x in f) == 25 and sum(x.default is not None for x in f) == 23
    assert sum(x.multiple for x in f) == 13 and sum(bool(x.requires) for x in f) == 19
    assert sum(x.type == "*" for x in f) == 16
    assert sum(len(r.choices) for r in spec.restricted) == 54 and sum(1 for r in spec.restricted if r.choices) == 13
    assert len(spec.archetypes) == 14 and len(spec.definitions) == 13 and len(spec.descriptors) == 40


def test_descriptors_are_the_oasis_numbers(spec: Spec) -> None:
    got = {t.name: t.descriptor for t in (*spec.composites, *spec.restricted) if t.descriptor is not None}
    assert set(got) == set(DESCRIPTORS)
    for name, ident in DESCRIPTORS.items():
        d = got[name]
        assert (d.domain, d.id, d.code) == (0, ident, ident), name
        assert d.name.startswith(f"amqp:{name}:"), d.name


def test_encodings_by_hand(spec: Spec) -> None:
    """Part 1.6: a few constructors of each category, with their widths."""
    enc = {e.code: (e.category, e.width, e.name) for e in spec.encodings}
    assert enc[0x40] == ("fixed", 0, None)  # null
    assert enc[0x56] == ("fixed", 1, None) and enc[0x41][2] == "true" and enc[0x42][2] == "false"
    assert enc[0x70] == ("fixed", 4, None) and enc[0x52] == ("fixed", 1, "smalluint") and enc[0x43][:2] == ("fixed", 0)
    assert enc[0xA1] == ("variable", 1, "str8-utf8") and enc[0xB1] == ("variable", 4, "str32-utf8")
    assert enc[0x45][:2] == ("fixed", 0) and enc[0xC0][:2] == ("compound", 1) and enc[0xD0][:2] == ("compound", 4)
    assert enc[0xE0][:2] == ("array", 1) and enc[0xF0][:2] == ("array", 4)
    assert enc[0x98] == ("fixed", 16, None) and enc[0x94][:2] == ("fixed", 16)  # uuid, decimal128


def test_defaults_resolved_and_choices_typed(spec: Spec) -> None:
    comp = {c.name: c for c in spec.composites}
    by = {(c, f.name): f for c in comp for f in comp[c].fields}
    # the six defaults that name a choice (part 2.8.2, 2.8.3, 3.5.3, 3.5.4): to the choice's value
    assert by[("attach", "snd-settle-mode")].value == 2  # mixed
    assert by[("attach", "rcv-settle-mode")].value == 0  # first
    assert by[("source", "durable")].value == 0 and by[("target", "durable")].value == 0  # none
    assert by[("source", "expiry-policy")].value == "session-end" == by[("target", "expiry-policy")].value  # symbol
    # numeric and boolean defaults, typed by the field's primitive
    assert by[("open", "max-frame-size")].value == 4294967295 and by[("open", "channel-max")].value == 65535
    assert by[("flow", "drain")].value is False and by[("begin", "handle-max")].value == 4294967295
    assert by[("open", "container-id")].mandatory and by[("open", "offered-capabilities")].multiple
    rest = {r.name: r for r in spec.restricted}
    assert {c.name: c.value for c in rest["sender-settle-mode"].choices} == {"unsettled": 0, "settled": 1, "mixed": 2}
    assert {c.name: c.value for c in rest["role"].choices} == {"sender": False, "receiver": True}
    assert rest["milliseconds"].primitive == "uint" and rest["amqp-value"].primitive == "*"


def test_archetypes_are_unions_of_types(spec: Spec) -> None:
    a = spec.archetypes
    assert a["frame"] == ("open", "begin", "attach", "flow", "transfer", "disposition", "detach", "end", "close")
    assert set(a["sasl-frame"]) == {"sasl-mechanisms", "sasl-init", "sasl-challenge", "sasl-response", "sasl-outcome"}
    assert set(a["outcome"]) == {"accepted", "rejected", "released", "modified", "declared"}
    assert set(a["delivery-state"]) == set(a["outcome"]) | {"received", "transactional-state"}
    assert set(a["section"]) == {"header", "delivery-annotations", "message-annotations", "properties",
                                 "application-properties", "data", "amqp-sequence", "amqp-value", "footer"}
    # the seven described restricted types are message sections (header and properties are composites)
    described = [t for t in spec.restricted if t.descriptor is not None]
    assert len(described) == 7 and all("section" in t.provides for t in described)
    assert isinstance(spec.type_by_name()["header"], Composite)
    assert isinstance(spec.type_by_name()["data"], Restricted)


def test_a_required_archetype_nobody_provides_is_a_warning(spec: Spec) -> None:
    (w,) = spec.warnings
    assert "global-tx-id" in w.message and w.code == "10-unprovided-archetype"
    assert w.location.file.endswith("transactions.bare.xml") and w.location.line is not None
    line = (FOLDER / "transactions.bare.xml").read_text().splitlines()[w.location.line - 1]
    assert 'requires="global-tx-id"' in line
    with pytest.raises(StrictError):
        load_spec(FOLDER, strict=True)


def test_wire_facts_agree_with_the_xml(spec: Spec) -> None:
    d = {x.name: x.value for x in spec.definitions}
    version = bytes((int(d["MAJOR"]), int(d["MINOR"]), int(d["REVISION"])))
    assert wire.AMQP_HEADER == b"AMQP\x00" + version and wire.SASL_HEADER == b"AMQP\x03" + version
    assert wire.TLS_HEADER == b"AMQP\x02" + version
    assert bytes((int(d["SASL-MAJOR"]), int(d["SASL-MINOR"]), int(d["SASL-REVISION"]))) == version
    assert d["PORT"] == "5672" and d["SECURE-PORT"] == "5671" and d["MIN-MAX-FRAME-SIZE"] == "512"
    assert sum(n for _, n in wire.FRAME_HEADER) == wire.FRAME_HEADER_SIZE == wire.MIN_DOFF * wire.DOFF_WORD
    assert set(wire.BODY_SECTIONS) <= set(spec.archetypes["section"])
    assert set(wire.SECTION_ORDER) - {"body"} <= set(spec.archetypes["section"])
    with pytest.raises(ValueError):
        wire.protocol_header(1)


def test_cli_validate_inspect_and_json(tmp_path: Path) -> None:
    v = amqgen("validate", "--spec", "1-0")
    assert v.returncode == 0, v.stderr
    assert "24 primitive types (39 encodings), 33 composite types, 39 restricted types (54 choices)" in v.stdout
    assert "global-tx-id" in v.stderr
    text = amqgen("inspect", "--spec", str(FOLDER))
    assert text.returncode == 0 and "composite open amqp:open:list 0x00000000:0x00000010 provides frame" in text.stdout
    one = amqgen("inspect", "--spec", "1-0", "--json")
    two = amqgen("inspect", "--spec", str(FOLDER) + "/", "--json")
    assert one.returncode == 0 and one.stdout == two.stdout  # deterministic, wherever the folder is named
    doc = json.loads(one.stdout)
    assert doc["family"] == "1-0" and doc == json.loads(json.dumps(to_json(load_spec(FOLDER))))
    schema = json.loads(amqgen("inspect", "--spec", "1-0", "--json-schema").stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(doc, schema)
    assert schema == json_schema()
    doc["composites"][0]["descriptor"]["code"] = "16"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)
    assert "amqp-specs:1-0" in amqgen("specs").stdout


@pytest.mark.parametrize("args", [["render", "--lang", "c", "--spec", "1-0", "--out", "OUT"],
                                  ["render", "--lang", "java", "--spec", "1-0", "--out", "OUT"],
                                  ["validate", "--spec", "1-0", "--overlay", "rabbitmq"]])
def test_what_does_not_read_1_0_yet_says_so_in_one_line(args: list[str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = amqgen(*[str(out) if a == "OUT" else a for a in args])
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "1.0" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "1-0"
    shutil.copytree(FOLDER, dst)
    return dst


@pytest.mark.parametrize("file,old,new,message", [
    ("transport.bare.xml", '<field name="hostname" type="string"/>', '<field name="hostname" type="string">',
     "not well-formed XML"),
    ("messaging.bare.xml", 'source="ulong" provides="message-id"', 'source="ulongg" provides="message-id"',
     "not a primitive or restricted type"),
    ("transport.bare.xml", '<field name="hostname" type="string"/>', '<field name="hostname" type="strng"/>',
     "type 'strng', which no file defines"),
    ("transport.bare.xml", 'code="0x00000000:0x00000011"', 'code="0x00000000:0x00000010"', "used twice"),
    ("types.bare.xml", 'code="0x52" category="fixed"', 'code="0x52" category="fuzzy"', "category"),
    ("transport.bare.xml", 'default="4294967295"', 'default="lots"', "is not a uint value"),
    ("transport.bare.xml", '<amqp name="transport"', '<!DOCTYPE amqp [<!ENTITY x "y">]>\n<amqp name="transport"',
     "entity declarations are not allowed"),
])
def test_bad_input_is_one_line_with_file_and_line(tmp_path: Path, file: str, old: str, new: str,
                                                  message: str) -> None:
    folder = _copy(tmp_path)
    path = folder / file
    text = path.read_text()
    if old not in text:
        pytest.fail(f"{old!r} is not in {file}: the test's edit no longer applies")
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(SpecError) as info:
        load_spec(folder)
    assert message in str(info.value) and f"{file}:" in str(info.value), str(info.value)
    proc = amqgen("validate", "--spec", str(folder))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert f"{path}:" in proc.stderr and "Traceback" not in proc.stderr


def test_a_missing_file_of_the_set(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / "security.bare.xml").unlink()
    with pytest.raises(SpecError, match="lacks security.bare.xml"):
        load_spec(folder)


def test_one_1_0_file_given_alone_is_refused_with_the_way_to_read_it() -> None:
    proc = amqgen("validate", "--spec", str(FOLDER / "transport.bare.xml"))
    assert proc.returncode == 2 and "read as the folder of its six files" in proc.stderr


# -- amqgen diff on two 1.0 file sets -----------------------------------------------------------------------
ATTACH_SETTLE = ('<field name="snd-settle-mode" type="sender-settle-mode" default="mixed"/>\n'
                 '      <field name="rcv-settle-mode" type="receiver-settle-mode" default="first"/>')


@pytest.mark.parametrize("file,old,new,kinds,breaking", [
    ("transport.bare.xml", ATTACH_SETTLE, "\n      ".join(reversed(ATTACH_SETTLE.split("\n      "))),
     {"field-moved"}, True),
    ("transport.bare.xml", '<field name="max-frame-size" type="uint"', '<field name="max-frame-size" type="ulong"',
     {"field-retyped"}, True),
    ("transport.bare.xml", '<field name="echo" type="boolean"', '<field name="echo2" type="boolean"',
     {"field-renamed"}, False),
    ("transport.bare.xml", '<field name="handle" type="handle"/>\n      <field name="delivery-count"',
     '<field name="handle" type="uint"/>\n      <field name="delivery-count"', {"field-type-renamed"}, False),
    ("transport.bare.xml", 'code="0x00000000:0x00000017"', 'code="0x00000000:0x00000097"', {"descriptor-changed"},
     True),
    ("transport.bare.xml", '<choice name="unsettled" value="0"/>', "", {"choice-removed"}, True),
    ("transport.bare.xml", '<field name="drain" type="boolean" default="false"/>',
     '<field name="drain" type="boolean" default="true"/>', {"field-default-changed"}, True),
    ("transport.bare.xml", '<definition name="MIN-MAX-FRAME-SIZE" value="512"/>',
     '<definition name="MIN-MAX-FRAME-SIZE" value="1024"/>', {"definition-changed"}, True),
])
def test_diff_classifies_1_0_changes(tmp_path: Path, file: str, old: str, new: str, kinds: set[str],
                                     breaking: bool) -> None:
    folder = _copy(tmp_path)
    text = (folder / file).read_text()
    if old not in text:
        pytest.fail(f"{old!r} is not in {file}: the test's edit no longer applies")
    (folder / file).write_text(text.replace(old, new, 1))
    proc = amqgen("diff", "1-0", str(folder), "--json")
    assert proc.returncode == (1 if breaking else 0), proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["format"] == "amqgen-diff" and doc["old"]["family"] == doc["new"]["family"] == "1-0"
    assert {c["kind"] for c in doc["changes"]} == kinds, doc["changes"]
    assert all(c["breaking"] == breaking for c in doc["changes"])
    text_out = amqgen("diff", "1-0", str(folder))
    assert text_out.returncode == proc.returncode and ("Breaking" in text_out.stdout) == breaking


def test_diff_appending_an_optional_field_is_not_breaking_inserting_is(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    path = folder / "transport.bare.xml"
    text = path.read_text()
    close = '<field name="error" type="error"/>\n    </type>'
    assert text.count(close) >= 1
    path.write_text(text.replace(close, '<field name="error" type="error"/>\n      <field name="extra" type="uint"/>'
                                        "\n    </type>", 1))
    proc = amqgen("diff", "1-0", str(folder), "--json")
    changes = json.loads(proc.stdout)["changes"]
    assert proc.returncode == 0 and [c["kind"] for c in changes] == ["field-added"] and not changes[0]["breaking"]
    path.write_text(text.replace('<field name="container-id" type="string" mandatory="true"/>',
                                 '<field name="extra" type="uint"/>\n      '
                                 '<field name="container-id" type="string" mandatory="true"/>', 1))
    proc = amqgen("diff", "1-0", str(folder), "--json")
    kinds = {c["kind"] for c in json.loads(proc.stdout)["changes"]}
    assert proc.returncode == 1 and "field-added" in kinds and "field-moved" in kinds


def test_diff_of_1_0_against_0_x_is_one_line() -> None:
    proc = amqgen("diff", "1-0", "0-9")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "families" in proc.stderr
    same = amqgen("diff", "1-0", str(FOLDER))
    assert same.returncode == 0 and "no changes" in same.stdout
