"""Every spec file loads; the model agrees with independent XPath counts over the raw XML."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import etree

from amqgen.amqp0.lower import canon, load_spec
from amqgen.amqp0.model import Spec
from amqgen.specs import DEBIAN_SPECS, FOLDERS, UNSUPPORTED, debian_root

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "spec" / "amqp0-9.xml"
#: the bundled full 0-9-1 and RabbitMQ's extended 0-9-1, as published (licence text included)
BUNDLED_091 = [ROOT / "spec" / "amqp0-9-1.xml", ROOT / "spec" / "amqp0-9-1.extended.xml"]
DEBIAN = {k: debian_root() / v for k, v in DEBIAN_SPECS.items() if k not in UNSUPPORTED and k not in FOLDERS}
ALL_SPECS = [BUNDLED, *BUNDLED_091, *DEBIAN.values()]
WIRE = {"bit", "octet", "short", "long", "longlong", "timestamp", "shortstr", "longstr", "table"}


def ids(paths: list[Path]) -> list[str]:
    return [f"{p.parent.name}/{p.name}" for p in paths]


def test_all_fixture_specs_are_present() -> None:
    # The test command installs amqp-specs; a missing file must fail here, not be skipped.
    missing = [str(p) for p in ALL_SPECS if not p.is_file()]
    assert not missing, f"spec files missing (Debian package amqp-specs not installed?): {missing}"


def test_bundled_specs_are_the_published_files() -> None:
    # sha256 of the files as published (amqp0-9.xml, amqp0-9-1.xml from amqp.org, amqp0-9-1.extended.xml from
    # RabbitMQ), taken when they were copied in: an edit to a bundled spec must be deliberate
    digests = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in [BUNDLED, *BUNDLED_091]}
    assert digests == {
        "amqp0-9.xml": "d9f4941f70668549791ee81027331fe9169296eba45b12b08e725b101f39125a",
        "amqp0-9-1.xml": "28e650f0cd903df3dc96d537284d1f9d75f44ac11d6b80cddedd8809d33fad4b",
        "amqp0-9-1.extended.xml": "74d0f91c8db0b74456392e35aba07711574d4534398729f77b0113850037388e",
    }
    for p in BUNDLED_091:  # the licence that lets us copy them stays inside them
        assert "license to (i) copy, display," in p.read_text(encoding="utf-8")[:3000], p


@pytest.mark.parametrize("path", ALL_SPECS, ids=ids(ALL_SPECS))
def test_spec_loads_and_counts_match_xpath(path: Path) -> None:
    spec = load_spec(path)
    raw = etree.parse(str(path)).getroot()
    assert len(spec.classes) == int(raw.xpath("count(/amqp/class)"))
    assert len(spec.methods) == int(raw.xpath("count(/amqp/class/method)"))
    assert sum(len(m.fields) for m in spec.methods) == int(raw.xpath("count(/amqp/class/method/field)"))
    assert sum(len(c.properties) for c in spec.classes) == int(raw.xpath("count(/amqp/class/field)"))
    assert len(spec.all_rules()) == int(raw.xpath("count(//rule)"))
    assert len(spec.all_asserts()) == int(raw.xpath("count(//assert)"))
    assert len(spec.constants) == int(raw.xpath("count(/amqp/constant)"))
    assert len(spec.domains) == int(raw.xpath("count(/amqp/domain)"))


def test_bundled_counts_are_the_known_ones() -> None:
    spec = load_spec(BUNDLED)
    assert (len(spec.classes), len(spec.methods), len(spec.all_rules()), len(spec.all_asserts())) == (12, 105, 199, 26)
    assert spec.family == "0-9" and (spec.major, spec.minor, spec.revision, spec.port) == (0, 9, 0, 5672)


@pytest.mark.parametrize("path", ALL_SPECS, ids=ids(ALL_SPECS))
def test_field_types_resolve_like_the_xml_says(path: Path) -> None:
    """Resolve every field's wire type straight from the XML (domain table, names with spaces
    or hyphens) and compare with the model."""
    raw = etree.parse(str(path)).getroot()
    domains = {canon(d.get("name")): canon(d.get("type")) for d in raw.iter("domain")}
    spec = load_spec(path)
    checked = 0
    for c in raw.iter("class"):
        cls = spec.class_by_name[canon(c.get("name"))]
        for m in c.findall("method"):
            method = cls.method_by_name[canon(m.get("name"))]
            for xf, f in zip(m.findall("field"), method.fields, strict=True):
                ref = canon(xf.get("domain") or xf.get("type"))
                expected = domains.get(ref, ref if ref in WIRE else "longstr")  # undefined domain -> longstr (W003)
                assert f.type == expected, f.path
                assert f.name == canon(xf.get("name"))
                assert f.loc.line == xf.sourceline
                checked += 1
    assert checked == int(raw.xpath("count(/amqp/class/method/field)"))


@pytest.mark.parametrize("path", ALL_SPECS, ids=ids(ALL_SPECS))
def test_every_element_keeps_its_source_line(path: Path) -> None:
    raw = etree.parse(str(path)).getroot()
    spec = load_spec(path)
    xml_classes = raw.findall("class")
    for xc, c in zip(xml_classes, spec.classes, strict=True):
        assert c.loc.line == xc.sourceline and c.loc.file == str(path)
        for xm, m in zip(xc.findall("method"), c.methods, strict=True):
            assert m.loc.line == xm.sourceline
            assert [r.loc.line for r in m.rules] == [r.sourceline for r in xm.findall("rule")]
    for xd, d in zip(raw.findall("constant"), spec.constants, strict=True):
        assert d.loc.line == xd.sourceline


def test_source_lines_by_text_search() -> None:
    """Independent of lxml: the line numbers in the model match a plain text search."""
    text = BUNDLED.read_text(encoding="utf-8", errors="replace").split("\n")
    spec = load_spec(BUNDLED)
    qos = spec.method_by_name["basic.qos"]
    assert 'name = "qos"' in text[qos.loc.line - 1]
    pc = next(f for f in qos.fields if f.name == "prefetch-count")
    assert 'name = "prefetch-count"' in text[pc.loc.line - 1]


def test_bundled_details() -> None:
    spec = load_spec(BUNDLED)
    # responses resolved to methods, all of them
    assert spec.method_by_name["connection.open"].responses == ("connection.open-ok", "connection.redirect")
    # direction from chassis
    assert spec.method_by_name["basic.publish"].direction == "client-to-server"
    assert spec.method_by_name["basic.deliver"].direction == "server-to-client"
    assert spec.method_by_name["channel.close"].direction == "both"
    # content and synchronous flags
    assert spec.method_by_name["basic.deliver"].content and not spec.method_by_name["basic.ack"].content
    assert spec.method_by_name["basic.qos"].synchronous
    # the le assert resolved to its method/field
    channel_max = next(f for f in spec.method_by_name["connection.tune-ok"].fields if f.name == "channel-max")
    le = [a for a in channel_max.asserts if a.check == "le"]
    assert len(le) == 1 and le[0].ref == "connection.tune.channel-max"
    # domain asserts reach fields; the broken regexp gets a portable reading
    vhost = next(f for f in spec.method_by_name["connection.open"].fields if f.name == "virtual-host")
    assert vhost.domain == "path" and {a.check for a in vhost.asserts} == {"regexp", "notnull", "syntax", "length"}
    rx = next(a for a in vhost.asserts if a.check == "regexp")
    assert rx.value == "^[a-zA-Z0-9/-_]+$"
    assert re.fullmatch(rx.value, "@:;") and not re.fullmatch(rx.value, "a-b")  # what the spec really says
    assert rx.portable_value and re.fullmatch(rx.portable_value, "a-b_/c") and not re.fullmatch(rx.portable_value, "@")
    # constants and their error classes
    assert spec.constant_by_name["not-found"].error_class == "soft"
    assert spec.constant_by_name["frame-error"].error_class == "hard"
    assert spec.constant_by_name["frame-end"].value == 206 and spec.constant_by_name["frame-end"].error_class is None
    # keyword names survive as canonical names
    assert {"global", "type", "return", "open", "delete"} <= {
        n for c in spec.classes for n in (*(m.name for m in c.methods), *(f.name for m in c.methods for f in m.fields),
                                          *(p.name for p in c.properties))
    }


def test_rules_ids_levels_and_on_failure() -> None:
    spec = load_spec(BUNDLED)
    raw = etree.parse(str(BUNDLED)).getroot()
    rules = {r.id: r for r in spec.all_rules()}
    assert len(rules) == 199  # ids are unique
    # ids are the parent path plus the rule name: class, method, field and domain rules
    assert rules["basic.01"].parent == "basic"
    assert rules["basic.qos.prefetch-size.01"].parent == "basic.qos.prefetch-size"
    assert rules["connection.start.protocol-name"].parent == "connection.start"
    # on-failure: every XML on-failure attribute is resolved to that constant's value
    xml_on_failure = [(x.get("on-failure"), x.sourceline) for x in raw.iter("rule") if x.get("on-failure")]
    by_line = {x.loc.line: x for x in rules.values()}
    consts = {c.get("name"): int(c.get("value")) for c in raw.iter("constant")}
    assert len(xml_on_failure) == 28
    for name, line in xml_on_failure:
        assert by_line[line].on_failure == name and by_line[line].on_failure_code == consts[name]
    # level: strongest keyword of the text; scenario kept
    for x in rules.values():
        words = set(re.findall(r"\b(MUST|SHOULD|MAY)\b", x.doc))
        expected = "MUST" if "MUST" in words else "SHOULD" if "SHOULD" in words else "MAY" if "MAY" in words else None
        assert x.level == expected, x.id
    assert sum(1 for x in rules.values() if x.scenario) == int(raw.xpath("count(//rule/doc[@type='scenario'])"))
    dt = rules["domain.delivery-tag.channel-local"]
    assert dt.parent == "domain.delivery-tag" and dt.level == "MUST"


def test_grammar_keeps_line_layout() -> None:
    spec = load_spec(BUNDLED)
    grammar = spec.class_by_name["connection"].grammar
    assert grammar is not None
    lines = grammar.split("\n")
    assert lines[0] == "connection = open-connection *use-connection close-connection"
    assert "S:TUNE C:TUNE-OK" in lines and lines[-1] == "/ S:CLOSE C:CLOSE-OK"


def test_0_8_family_and_spaced_names() -> None:
    spec = load_spec(DEBIAN["0-8"])
    assert spec.family == "0-8" and (spec.major, spec.minor) == (8, 0)
    start = spec.method_by_name["connection.start"]
    assert [f.name for f in start.fields][:2] == ["version-major", "version-minor"]
    assert spec.constant_by_name["not-found"].error_class == "soft"  # class="soft error" in 0-8
    assert not [w for w in spec.warnings if w.code in ("W001", "W002")]  # spaces and type= are 0-8's convention


def test_0_9_1_qpid_minor_91_is_normalised_with_a_warning() -> None:
    spec = load_spec(DEBIAN["0-9-1-qpid"])
    assert (spec.family, spec.major, spec.minor, spec.revision) == ("0-9-1", 0, 9, 1)
    assert any(w.code == "W010" for w in spec.warnings)


def test_bundled_defects_are_warnings_with_locations() -> None:
    spec = load_spec(BUNDLED)
    text = BUNDLED.read_text(encoding="utf-8", errors="replace")
    codes = {w.code for w in spec.warnings}
    assert {"W001", "W002", "W003", "W004", "W007"} <= codes
    w1 = next(w for w in spec.warnings if w.code == "W001")
    assert 'domain = "queue name"' in text.split("\n")[w1.location.line - 1]
    w3 = next(w for w in spec.warnings if w.code == "W003")
    assert 'domain = "content"' in text.split("\n")[w3.location.line - 1]
    assert {w.location.path for w in spec.warnings if w.code == "W004"} == {"queue.purge", "basic.recover-sync-ok"}
    assert {w.location.path for w in spec.warnings if w.code == "W002"} == {
        "exchange.bound.routing-key", "basic.recover-sync.requeue"}


@pytest.mark.parametrize("name", ["0-10", "0-10-qpid", "1-0"])
def test_unsupported_families_exit_2(name: str) -> None:
    path = debian_root() / ("1-0/messaging.bare.xml" if name == "1-0" else DEBIAN_SPECS[name])
    proc = subprocess.run([sys.executable, "-m", "amqgen", "validate", "--spec", str(path)], capture_output=True, text=True)
    assert proc.returncode == 2
    lines = proc.stderr.strip().split("\n")
    # one 1.0 file alone: the way to read 1.0 (tests/amqp10/test_amqp10_model.py reads the folder)
    want = "read as the folder of its six files" if name == "1-0" else "unsupported spec family"
    assert len(lines) == 1 and want in lines[0] and lines[0].startswith(f"{path}:")


def test_spec_is_frozen() -> None:
    spec: Spec = load_spec(BUNDLED)
    with pytest.raises(AttributeError):
        spec.classes[0].name = "x"  # type: ignore[misc]
