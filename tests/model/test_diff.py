"""`amqgen diff`: what changed between real specs, checked against the XML read here on its own, and
the breaking / not-breaking classification on specs edited in known ways."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from lxml import etree

from amqgen.amqp0.diff import KINDS

ROOT = Path(__file__).resolve().parents[2]
SPEC_09 = ROOT / "spec" / "amqp0-9.xml"
SPEC_091 = ROOT / "spec" / "amqp0-9-1.xml"
SPEC_091_EXT = ROOT / "spec" / "amqp0-9-1.extended.xml"


def amqgen_diff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "amqgen", "diff", *args], check=False, capture_output=True, text=True, cwd=ROOT)


def diff_json(old: Path | str, new: Path | str, expect_rc: int) -> dict[str, Any]:
    proc = amqgen_diff(str(old), str(new), "--json")
    assert proc.returncode == expect_rc, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    jsonschema.validate(doc, SCHEMA)
    # The summary agrees with the list it summarises.
    assert doc["summary"]["changes"] == len(doc["changes"])
    assert doc["summary"]["breaking"] == sum(c["breaking"] for c in doc["changes"])
    assert sum(doc["summary"]["by_kind"].values()) == len(doc["changes"])
    assert (doc["summary"]["breaking"] > 0) == (expect_rc == 1)
    assert all(c["area"] == KINDS[c["kind"]] for c in doc["changes"])
    return doc


def changes(doc: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {c["path"]: c for c in doc["changes"] if c["kind"] == kind}


SIDE = {
    "type": "object",
    "required": ["name", "sha256", "family", "version"],
    "properties": {
        "name": {"type": "string"},
        "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "family": {"enum": ["0-8", "0-9", "0-9-1"]},
        "version": {"type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 3},
    },
}
SCHEMA = {
    "type": "object",
    "required": ["format", "version", "old", "new", "summary", "changes"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": "amqgen-diff"},
        "version": {"const": 1},
        "old": SIDE,
        "new": SIDE,
        "summary": {
            "type": "object",
            "required": ["changes", "breaking", "by_kind"],
            "additionalProperties": False,
            "properties": {
                "changes": {"type": "integer", "minimum": 0},
                "breaking": {"type": "integer", "minimum": 0},
                "by_kind": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1}},
            },
        },
        "changes": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["kind", "area", "path", "breaking", "detail", "old", "new"],
                "additionalProperties": False,
                "properties": {
                    "kind": {"enum": sorted(KINDS)},
                    "area": {"type": "string"},
                    "path": {"type": "string", "minLength": 1},
                    "breaking": {"type": "boolean"},
                    "detail": {"type": "string", "minLength": 1},
                    "old": {"type": ["null", "string", "integer", "boolean", "array"]},
                    "new": {"type": ["null", "string", "integer", "boolean", "array"]},
                },
            },
        },
    },
}


# -- the XML, read here without amqgen --------------------------------------------------------

def canon(name: str | None) -> str:
    return re.sub(r"\s+", "-", (name or "").strip().lower())


def number(el: Any, attr: str) -> int:
    value = el.get(attr)
    assert value is not None, f"<{el.tag}> without {attr}"
    return int(value)


def xml_model(path: Path) -> dict[str, Any]:
    root = etree.parse(str(path)).getroot()
    classes = {canon(c.get("name")): number(c, "index") for c in root.findall("class")}
    methods = {
        f"{canon(c.get('name'))}.{canon(m.get('name'))}": (number(c, "index"), number(m, "index"))
        for c in root.findall("class") for m in c.findall("method")
    }
    constants = {canon(k.get("name")): number(k, "value") for k in root.findall("constant")}
    return {"classes": classes, "methods": methods, "constants": constants}


@pytest.mark.parametrize("old,new", [(SPEC_09, SPEC_091), (SPEC_091, SPEC_091_EXT), (SPEC_091_EXT, SPEC_09)])
def test_added_and_removed_match_the_xml(old: Path, new: Path) -> None:
    a, b = xml_model(old), xml_model(new)
    doc = diff_json(old, new, 1)
    assert set(changes(doc, "class-removed")) == set(a["classes"]) - set(b["classes"])
    assert set(changes(doc, "class-added")) == set(b["classes"]) - set(a["classes"])
    # Methods of a class that came or went are reported with their class, not one by one.
    both = set(a["classes"]) & set(b["classes"])
    assert set(changes(doc, "method-removed")) == {m for m in set(a["methods"]) - set(b["methods"]) if m.split(".")[0] in both}
    assert set(changes(doc, "method-added")) == {m for m in set(b["methods"]) - set(a["methods"]) if m.split(".")[0] in both}
    moved = {m for m in set(a["methods"]) & set(b["methods"]) if a["methods"][m] != b["methods"][m]}
    assert set(changes(doc, "method-index-changed")) == moved
    assert set(changes(doc, "constant-removed")) == {f"constant.{k}" for k in set(a["constants"]) - set(b["constants"])}
    assert set(changes(doc, "constant-added")) == {f"constant.{k}" for k in set(b["constants"]) - set(a["constants"])}
    for kind in ("class-removed", "method-removed", "method-index-changed", "constant-removed"):
        assert all(c["breaking"] for c in changes(doc, kind).values())
    for kind in ("class-added", "method-added", "constant-added", "doc-changed", "rule-added", "rule-changed"):
        assert not any(c["breaking"] for c in changes(doc, kind).values())


def test_0_9_to_0_9_1_facts_checked_by_hand() -> None:
    doc = diff_json(SPEC_09, SPEC_091, 1)
    assert doc["old"]["name"] == "amqp0-9.xml" and doc["new"]["version"] == [0, 9, 1]
    # amqp0-9.xml has <class name="file" index="70">, "stream" 80, "access" 30; amqp0-9-1.xml has none of them.
    removed = changes(doc, "class-removed")
    assert {"file", "stream", "access", "dtx", "tunnel", "message"} == set(removed)
    assert removed["file"]["old"] == 70 and removed["stream"]["old"] == 80 and removed["access"]["old"] == 30
    # The protocol header differs (0-9 -> 0-9-1): breaking.
    assert changes(doc, "version-changed")["spec"]["breaking"]
    # 0-9 basic.recover is 60.100; in 0-9-1 60.100 is recover-async and recover moved to 60.110.
    assert changes(doc, "method-index-changed")["basic.recover"]["new"] == [60, 110]
    assert changes(doc, "method-added")["basic.recover-async"]["new"] == [60, 100]
    # frame-oob-method (4) and no-route (312) exist only in 0-9.
    assert changes(doc, "constant-removed")["constant.frame-oob-method"]["old"] == 4
    assert changes(doc, "constant-removed")["constant.no-route"]["old"] == 312
    # connection.open lost its redirect response along with connection.redirect.
    assert changes(doc, "method-responses-changed")["connection.open"]["breaking"]
    # 0-9's "ticket" short became 0-9-1's "reserved-1" short in place: a rename, not a wire change.
    renamed = changes(doc, "field-renamed")
    assert renamed["basic.publish.ticket"]["new"] == "reserved-1" and not renamed["basic.publish.ticket"]["breaking"]
    assert renamed["exchange.declare.nowait"]["new"] == "no-wait"
    assert changes(doc, "property-renamed")["basic.cluster-id"]["new"] == "reserved"
    # basic.qos is the same on the wire in both: nothing about it is breaking.
    assert not [c for c in doc["changes"] if c["path"].startswith("basic.qos") and c["breaking"]]
    # Removed assert: 0-9's connection.open.virtual-host regexp is gone in 0-9-1.
    assert "connection.open.virtual-host" in changes(doc, "assert-removed")


def test_0_9_1_to_rabbitmq_extended_facts_checked_by_hand() -> None:
    doc = diff_json(SPEC_091, SPEC_091_EXT, 1)
    # RabbitMQ's extensions: <class name="confirm" index="85">, basic.nack 60.120, exchange.bind 40.30.
    assert changes(doc, "class-added")["confirm"]["new"] == 85
    added = changes(doc, "method-added")
    assert added["basic.nack"]["new"] == [60, 120]
    assert added["exchange.bind"]["new"] == [40, 30] and added["exchange.unbind-ok"]["new"] == [40, 51]
    assert not any(c["breaking"] for c in added.values())
    # exchange.declare's reserved-2 bit is auto-delete again in RabbitMQ's file: same bit, renamed.
    assert changes(doc, "field-renamed")["exchange.declare.reserved-2"]["new"] == "auto-delete"
    # The one breaking change: RabbitMQ marks basic.recover synchronous with response recover-ok
    # (amqp0-9-1.xml line 2677 has neither), so a client waits for a reply the other never sends.
    breaking = [c for c in doc["changes"] if c["breaking"]]
    assert {(c["kind"], c["path"]) for c in breaking} == {
        ("method-synchronous-changed", "basic.recover"),
        ("method-responses-changed", "basic.recover"),
    }
    assert changes(doc, "chassis-added")["basic.ack"]["new"] == "client"


def test_identical_specs_exit_0(tmp_path: Path) -> None:
    proc = amqgen_diff(str(SPEC_091), str(SPEC_091))
    assert proc.returncode == 0 and "no changes" in proc.stdout
    doc = diff_json(SPEC_091, "amqp-specs:0-9-1", 0)  # Debian's stripped copy: same wire, docs stripped
    assert doc["summary"]["breaking"] == 0
    assert doc["changes"] and all(c["kind"] in ("doc-changed", "rule-changed", "rule-removed", "rule-added",
                                                "assert-added", "assert-removed") for c in doc["changes"])


def test_text_report_lists_breaking_first() -> None:
    proc = amqgen_diff(str(SPEC_091), str(SPEC_091_EXT))
    assert proc.returncode == 1
    out = proc.stdout
    assert out.index("Breaking (2):") < out.index("Not breaking")
    assert "! method-synchronous-changed" in out and "basic.recover is now synchronous" in out
    assert "class confirm (85) added" in out


# -- classification on specs edited in known ways ------------------------------------------------

def edited(tmp_path: Path, name: str, *edits: tuple[str, str]) -> Path:
    text = SPEC_091.read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    out = tmp_path / name
    out.write_text(text, encoding="utf-8")
    return out


QOS_COUNT = '<field name="prefetch-count" domain="short" label="prefetch window in messages">'
QOS_GLOBAL = '<field name="global" domain="bit" label="apply to entire connection">'
ACK_MULTIPLE = '<field name="multiple" domain="bit" label="acknowledge multiple messages">'


@pytest.mark.parametrize(
    "edits,kind,path,breaking",
    [
        ([(QOS_COUNT, QOS_COUNT.replace('"short"', '"long"'))], "field-retyped", "basic.qos.prefetch-count", True),
        ([(ACK_MULTIPLE, ACK_MULTIPLE.replace("multiple", "multiple-x", 1))], "field-renamed", "basic.ack.multiple", False),
        # A bit after global lands in global's octet, unused so far; before global it shifts global's bit.
        ([(QOS_GLOBAL, QOS_GLOBAL + '</field><field name="extra" domain="bit">')], "field-added", "basic.qos.extra",
         False),
        ([(QOS_GLOBAL, '<field name="extra" domain="bit"/>' + QOS_GLOBAL)], "field-added", "basic.qos.extra", True),
        ([(QOS_COUNT, '<field name="extra" domain="long"/>' + QOS_COUNT)], "field-added", "basic.qos.extra", True),
        ([(QOS_GLOBAL, QOS_GLOBAL + '</field><field name="extra" domain="short">')], "field-added", "basic.qos.extra", True),
        ([('<method name="qos" synchronous="1" index="10"', '<method name="qos" synchronous="1" index="12"')],
         "method-index-changed", "basic.qos", True),
        ([('<constant name="frame-end" value="206"/>', '<constant name="frame-end" value="207"/>')],
         "constant-value-changed", "constant.frame-end", True),
        ([('<constant name="not-found" value="404" class="soft-error">',
           '<constant name="not-found" value="404" class="hard-error">')],
         "constant-error-class-changed", "constant.not-found", True),
        ([('label="prefetch window in messages"', 'label="how many messages ahead"')], "doc-changed",
         "basic.qos.prefetch-count", False),
    ],
)
def test_classification_of_known_edits(tmp_path: Path, edits: list[tuple[str, str]], kind: str, path: str,
                                       breaking: bool) -> None:
    new = edited(tmp_path, "edited.xml", *edits)
    doc = diff_json(SPEC_091, new, 1 if breaking else 0)
    found = changes(doc, kind)
    assert path in found, doc["changes"]
    assert found[path]["breaking"] is breaking


def test_removed_and_reordered_fields_are_breaking(tmp_path: Path) -> None:
    src = SPEC_091.read_text(encoding="utf-8")
    # Remove basic.ack.multiple (the whole element) and swap qos's prefetch-size and prefetch-count.
    start = src.index(ACK_MULTIPLE)
    end = src.index("</field>", start) + len("</field>")
    size_start = src.index('<field name="prefetch-size"')
    size_end = src.index("</field>", size_start) + len("</field>")
    count_end = src.index("</field>", src.index(QOS_COUNT)) + len("</field>")
    qos = src[size_start:count_end]
    size_el, count_el = src[size_start:size_end], src[src.index(QOS_COUNT):count_end]
    swapped = count_el + "\n" + size_el
    text = src[:start] + src[end:]
    text = text.replace(qos, swapped)
    out = tmp_path / "reordered.xml"
    out.write_text(text, encoding="utf-8")
    doc = diff_json(SPEC_091, out, 1)
    assert changes(doc, "field-removed")["basic.ack.multiple"]["breaking"]
    moved = changes(doc, "field-moved")
    assert set(moved) & {"basic.qos.prefetch-size", "basic.qos.prefetch-count"}
    assert all(c["breaking"] for c in moved.values())
    assert not changes(doc, "field-retyped")  # size is long, count is short: their types moved with them


def test_properties_appended_or_inserted(tmp_path: Path) -> None:
    anchor = '<field name="content-type" domain="shortstr" label="MIME content type"/>'
    src = SPEC_091.read_text(encoding="utf-8")
    assert src.count(anchor) == 1
    last = '<field name="reserved" domain="shortstr" label="reserved, must be empty"/>'
    assert src.count(last) == 1
    appended = tmp_path / "appended.xml"
    appended.write_text(src.replace(last, last + '<field name="extra" domain="shortstr"/>'), encoding="utf-8")
    doc = diff_json(SPEC_091, appended, 0)
    assert not changes(doc, "property-added")["basic.extra"]["breaking"]
    inserted = tmp_path / "inserted.xml"
    inserted.write_text(src.replace(anchor, '<field name="extra" domain="shortstr"/>' + anchor), encoding="utf-8")
    doc = diff_json(SPEC_091, inserted, 1)
    assert changes(doc, "property-added")["basic.extra"]["breaking"]


@pytest.mark.parametrize(
    "args",
    [["{tmp}/missing.xml", str(SPEC_091)], [str(SPEC_091), "no-such-spec"], ["{tmp}/bad.xml", str(SPEC_091)]],
)
def test_bad_input_exit_2_one_line(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "bad.xml").write_text("<amqp><class", encoding="utf-8")
    proc = amqgen_diff(*[a.format(tmp=tmp_path) for a in args])
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_same_output_every_run() -> None:
    a = amqgen_diff(str(SPEC_09), str(SPEC_091), "--json").stdout
    b = amqgen_diff(str(SPEC_09), str(SPEC_091), "--json").stdout
    assert a == b and len(a) > 1000
