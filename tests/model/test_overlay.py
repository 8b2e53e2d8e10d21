"""Spec overlays (``--overlay``): the RabbitMQ overlay against RabbitMQ's own extended spec, the
add / change / remove format, every conflict kind with its exact error line, hostile overlays,
provenance in ``inspect --json`` and the docs, and the project file (amqgen.toml).

The oracle for the RabbitMQ overlay is RabbitMQ's amqp0-9-1.extended.xml (and Debian's stripped
0-9-1-rabbit), files we did not write; the conflict lines are written out here by hand, with line
numbers counted by the test itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import lxml.html
import pytest
from click.testing import CliRunner, Result
from py_wire import close_connection, open_connection
from pytarget import RABBITMQ_OVERLAY, ROOT, SPEC_091, SPEC_091_EXT, import_package
from specgen import line_of, spec_text, write
from test_bad_input import CASES as HOSTILE_SPECS

from amqgen.amqp0.lower import load_spec
from amqgen.amqp0.model import Field, Method, Spec
from amqgen.cli import main
from amqgen.errors import ConflictError, Location, SpecError
from amqgen.specs import DEBIAN_SPECS, debian_root

pytestmark = pytest.mark.targets  # its tier, not its folder's (tests/conftest.py)

RABBITMQ_TEXT = RABBITMQ_OVERLAY.read_text(encoding="utf-8")
BROKER_HOST = os.environ.get("AMQP_HOST", "127.0.0.1")
BROKER_PORT = int(os.environ.get("AMQP_PORT", "5672"))
BROKER_USER = os.environ.get("AMQP_USER", "guest")
BROKER_PASSWORD = os.environ.get("AMQP_PASSWORD", "guest")


def cli(*args: str) -> Result:
    """The real command, in this process (the conflict tests run many)."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def error_lines(result: Result) -> list[str]:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and result.stdout == ""
    return result.stderr.strip().split("\n")


# -- the RabbitMQ overlay gives RabbitMQ's extended spec ---------------------------------------------------
def structure(spec: Spec) -> dict[str, Any]:
    """Everything of a model that is on the wire or decides who sends what: ids, names, fields and
    their layout, properties and their flag bits, responses, chassis, constants, domain types and
    asserts. Not docs, labels or rules (the overlay's prose is its own)."""

    def fld(f: Field) -> tuple[Any, ...]:
        return (f.name, f.domain, f.type, f.reserved, f.slot, f.bit, f.flag_word, f.flag_bit,
                tuple((a.check, a.value, a.syntax_rule, a.ref, a.values) for a in f.asserts))

    def meth(m: Method) -> tuple[Any, ...]:
        return (m.index, m.synchronous, m.content, m.deprecated, m.responses, m.direction,
                tuple((c.name, c.implement) for c in m.chassis), tuple(fld(f) for f in m.fields),
                m.slots, m.fixed_prefix_size)

    return {
        "version": (spec.family, spec.major, spec.minor, spec.revision, spec.port),
        "constants": {c.name: (c.value, c.error_class) for c in spec.constants},
        "domains": {d.name: (d.type, tuple((a.check, a.value) for a in d.asserts)) for d in spec.domains},
        "classes": {c.name: (c.index, c.handler, tuple((h.name, h.implement) for h in c.chassis),
                             c.property_flag_words, tuple(fld(p) for p in c.properties)) for c in spec.classes},
        "methods": {m.full_name: meth(m) for m in spec.methods},
    }


def test_rabbitmq_overlay_gives_the_model_of_the_extended_spec() -> None:
    ours = load_spec(SPEC_091, overlays=[RABBITMQ_OVERLAY])
    theirs = load_spec(SPEC_091_EXT)
    a, b = structure(ours), structure(theirs)
    for part in a:
        assert a[part] == b[part], part
    # what the overlay is for, written out by hand
    m = ours.method_by_name
    assert m["exchange.unbind-ok"].id == (40, 51) and m["exchange.bind"].id == (40, 30)
    assert m["basic.nack"].id == (60, 120)
    assert [(f.name, f.type) for f in m["basic.nack"].fields] == [
        ("delivery-tag", "longlong"), ("multiple", "bit"), ("requeue", "bit")]
    assert m["basic.recover"].synchronous and m["basic.recover"].responses == ("basic.recover-ok",)
    assert [(f.name, f.bit, f.reserved) for f in m["exchange.declare"].fields if f.type == "bit"] == [
        ("passive", 0, False), ("durable", 1, False), ("auto-delete", 2, False), ("internal", 3, False),
        ("no-wait", 4, False)]
    assert m["basic.cancel"].direction == "both" and m["basic.ack"].direction == "both"
    assert ours.class_by_name["confirm"].index == 85 and m["confirm.select"].fields[0].name == "nowait"
    assert len(ours.methods) == len(load_spec(SPEC_091).methods) + 7


def test_rabbitmq_overlay_on_debians_stripped_files() -> None:
    """Debian's amqp-specs 0-9-1 (no docs) with the overlay is Debian's 0-9-1-rabbit, but for one
    thing: that file, from an older rabbitmq-codegen, still has basic.recover asynchronous with no
    response (the broker has answered it with recover-ok for years; the bundled extended XML, spec/amqp0-9-1.extended.xml, agrees)."""
    root = debian_root()
    base, rabbit = root / DEBIAN_SPECS["0-9-1"], root / DEBIAN_SPECS["0-9-1-rabbit"]
    assert base.is_file() and rabbit.is_file(), "Debian package amqp-specs is not installed"
    a, b = structure(load_spec(base, overlays=[RABBITMQ_OVERLAY])), structure(load_spec(rabbit))
    recover_a, recover_b = a["methods"].pop("basic.recover"), b["methods"].pop("basic.recover")
    assert (recover_a[1], recover_a[4]) == (True, ("basic.recover-ok",))
    assert (recover_b[1], recover_b[4]) == (False, ())
    assert recover_a[:1] + recover_a[2:4] + recover_a[5:] == recover_b[:1] + recover_b[2:4] + recover_b[5:]
    for part in a:
        assert a[part] == b[part], part


def test_diff_reports_no_wire_change_between_base_plus_overlay_and_the_extended_spec() -> None:
    for args in ((SPEC_091_EXT, SPEC_091, "--overlay", "rabbitmq"), (SPEC_091, SPEC_091_EXT, "--old-overlay", "rabbitmq")):
        r = cli("diff", *args, "--json")
        assert r.exit_code == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["summary"]["breaking"] == 0
        # only prose differs: RabbitMQ's rules and docs against the overlay's own
        assert set(doc["summary"]["by_kind"]) <= {"rule-added", "rule-removed", "rule-changed", "doc-changed"}
        side = doc["new"] if args[2] == "--overlay" else doc["old"]
        assert [o["name"] for o in side["overlays"]] == ["rabbitmq.xml"]
    text = cli("diff", SPEC_091_EXT, SPEC_091, "--overlay", "rabbitmq")
    assert "amqp0-9-1.xml + rabbitmq.xml" in text.stdout.splitlines()[0] and "0 breaking" in text.stdout


def test_diff_of_the_base_with_and_without_the_overlay_lists_the_extensions() -> None:
    r = cli("diff", SPEC_091, SPEC_091, "--overlay", "rabbitmq", "--json")
    doc = json.loads(r.stdout)
    kinds = {(c["kind"], c["path"]) for c in doc["changes"] if c["kind"] not in ("doc-changed", "rule-added")}
    assert kinds == {
        ("field-renamed", "exchange.declare.reserved-2"), ("field-reserved-changed", "exchange.declare.reserved-2"),
        ("field-renamed", "exchange.declare.reserved-3"), ("field-reserved-changed", "exchange.declare.reserved-3"),
        ("method-added", "exchange.bind"), ("method-added", "exchange.bind-ok"), ("method-added", "exchange.unbind"),
        ("method-added", "exchange.unbind-ok"), ("chassis-added", "basic.cancel"),
        ("chassis-added", "basic.cancel-ok"), ("chassis-added", "basic.ack"), ("method-added", "basic.nack"),
        ("class-added", "confirm"), ("method-synchronous-changed", "basic.recover"),
        ("method-responses-changed", "basic.recover"),
    }
    # diff's rules call a newly synchronous method breaking (a peer may wait for the reply): exit 1
    assert r.exit_code == 1


@pytest.fixture
def deep_recursion() -> Iterator[None]:
    """100-deep tables in the corpus: jsonschema recurses several frames per level."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20000))
    yield
    sys.setrecursionlimit(old)


@pytest.mark.usefixtures("deep_recursion")
def test_vectors_of_base_plus_overlay_are_the_extended_spec_cases(tmp_path: Path) -> None:
    out = tmp_path / "v.json"
    r = cli("vectors", "--spec", SPEC_091, "--overlay", str(RABBITMQ_OVERLAY), "--out", str(out))
    assert r.exit_code == 0, r.stderr
    ours = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(ours, json.loads(cli("vectors", "--json-schema").stdout))
    assert ours["spec"]["overlays"][0]["name"] == "rabbitmq.xml" and "rabbitmq.xml (sha256 " in ours["notice"]
    theirs = json.loads(cli("vectors", "--spec", SPEC_091_EXT, "--out", "-").stdout)
    assert ours["methods"] == theirs["methods"] and ours["frames"] == theirs["frames"]
    assert ours["properties"] == theirs["properties"] and ours["malformed"] == theirs["malformed"]


# -- the format ----------------------------------------------------------------------------------------------
DEMO = """<class name="demo" index="10">
<chassis name="server" implement="MUST"/>
<method name="run" index="10" synchronous="1">
<chassis name="server" implement="MUST"/>
<response name="run-ok"/>
<field name="a" domain="short"/>
<field name="b" domain="bit"/>
<field name="c" domain="shortstr"/>
</method>
<method name="run-ok" index="11" synchronous="1"><chassis name="client" implement="MUST"/></method>
<method name="stop" index="20"><chassis name="server" implement="MUST"/>
<doc>Stops.</doc>
<rule name="first"><doc>The server MUST stop.</doc></rule>
<rule><doc>It SHOULD stop soon.</doc></rule>
</method>
</class>
"""
BASE = spec_text(DEMO)


def overlay(body: str, version: str = 'major="0" minor="9" revision="1"') -> str:
    """An overlay document: the root is line 2, ``body`` starts on line 3."""
    return f'<?xml version="1.0"?>\n<amqp {version}>\n{body}</amqp>\n'


@pytest.fixture
def files(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(base.xml, ov.xml); tests write ov.xml."""
    yield write(tmp_path, "base.xml", BASE), tmp_path / "ov.xml"


def with_overlays(base: Path, *overlays: Path) -> Spec:
    return load_spec(base, overlays=list(overlays))


def test_add_change_remove_and_provenance(files: tuple[Path, Path]) -> None:
    base, ov = files
    text = overlay("""<constant name="gone-away" value="320" class="hard-error"/>
<class name="demo" overlay="change" label="demo, extended">
<method name="run" overlay="change" synchronous="0">
<field name="b" overlay="change" rename="flag" label="renamed in place"/>
<field name="d" domain="bit" after="flag"/>
<response name="run-ok" overlay="remove"/>
</method>
<method name="run-ok" overlay="remove"/>
<method name="stop" overlay="change">
<doc overlay="change">Stops, now documented by the overlay.</doc>
<doc type="scenario">A scenario doc is added.</doc>
<rule name="02" overlay="change"><doc overlay="change">It MAY stop soon.</doc></rule>
<rule name="first" overlay="remove"/>
<chassis name="client" implement="MAY"/>
</method>
<method name="pause" index="30" before="stop"><chassis name="server" implement="MUST"/></method>
</class>
""")
    write(ov.parent, ov.name, text)
    spec = with_overlays(base, ov)
    demo = spec.class_by_name["demo"]
    assert demo.label == "demo, extended"
    assert [m.name for m in demo.methods] == ["run", "pause", "stop"]
    run = demo.method_by_name["run"]
    assert not run.synchronous and run.responses == ()
    assert [(f.name, f.slot, f.bit) for f in run.fields] == [("a", 0, None), ("flag", 1, 0), ("d", 1, 1), ("c", 2, None)]
    stop = demo.method_by_name["stop"]
    assert stop.doc == "Stops, now documented by the overlay."
    # the unnamed rule was "02" when the overlay changed it; once "first" is gone it is "01" (the loader
    # names unnamed rules by position)
    assert [(r.name, r.level) for r in stop.rules] == [("01", "MAY")]
    assert stop.direction == "both"
    assert spec.constant_by_name["gone-away"].error_class == "hard"
    # provenance: where each element comes from, and which overlay lines changed it

    def L(needle: str) -> int:
        return line_of(text, needle)

    assert demo.changed_by == (Location(str(ov), L('<class name="demo"'), "demo"),)
    assert run.changed_by == (Location(str(ov), L('<method name="run"'), "demo.run"),)
    flag = run.fields[1]
    assert flag.loc.file == str(base) and flag.changed_by == (Location(str(ov), L('rename="flag"'), "demo.run.flag"),)
    d = run.fields[2]
    assert d.loc == d.added_by == Location(str(ov), L('<field name="d"'), "demo.run.d")
    pause = demo.method_by_name["pause"]
    assert pause.added_by == Location(str(ov), L('<method name="pause"'), "demo.pause")
    assert pause.chassis[0].added_by == Location(str(ov), L('<method name="pause"'), "demo.pause")
    assert stop.rules[0].changed_by == (Location(str(ov), L('<rule name="02"'), "demo.stop.02"),)
    assert stop.chassis[1].added_by is not None and stop.chassis[0].added_by is None
    assert run.fields[0].added_by is None and run.fields[0].changed_by == ()
    assert [o.name for o in spec.overlays] == ["ov.xml"]
    assert [(r.path, r.line) for r in spec.overlays[0].removed] == [
        ("demo.run", L('<response name="run-ok"')), ("demo.run-ok", L('<method name="run-ok" overlay')),
        ("demo.stop.first", L('<rule name="first"'))]


def test_overlays_apply_in_order_and_a_later_one_changes_what_an_earlier_one_added(files: tuple[Path, Path]) -> None:
    base, ov = files
    write(ov.parent, "ov.xml", overlay('<class name="demo" overlay="change"><method name="pause" index="30"/></class>\n'))
    second = write(ov.parent, "two.xml", overlay(
        '<class name="demo" overlay="change">\n<method name="pause" overlay="change" synchronous="1">\n'
        '<response name="run-ok"/></method></class>\n'))
    spec = with_overlays(base, ov, second)
    pause = spec.method_by_name["demo.pause"]
    assert pause.synchronous and pause.responses == ("demo.run-ok",)
    assert pause.added_by is not None and pause.added_by.file == str(ov)
    assert pause.changed_by == (Location(str(second), 4, "demo.pause"),)
    with pytest.raises(SpecError, match="overlay changes method demo.pause, which"):
        with_overlays(base, second, ov)
    assert [o.name for o in spec.overlays] == ["ov.xml", "two.xml"]


def test_a_bit_in_an_unused_bit_of_an_existing_octet_is_no_wire_change(files: tuple[Path, Path]) -> None:
    base, ov = files
    write(ov.parent, "ov.xml", overlay('<class name="demo" overlay="change"><method name="run" overlay="change">\n'
                                       '<field name="e" domain="bit" after="b"/></method></class>\n'))
    run = with_overlays(base, ov).method_by_name["demo.run"]
    assert [(f.name, f.slot, f.bit) for f in run.fields] == [("a", 0, None), ("b", 1, 0), ("e", 1, 1), ("c", 2, None)]


def test_wire_change_lets_an_overlay_change_the_layout(files: tuple[Path, Path]) -> None:
    base, ov = files
    write(ov.parent, "ov.xml", overlay(
        '<domain name="short" overlay="change" type="long" wire="change"/>\n'
        '<class name="demo" overlay="change"><method name="run" overlay="change">\n'
        '<field name="x" domain="octet" before="a" wire="change"/><field name="c" overlay="remove" wire="change"/>\n'
        '</method></class>\n'))
    run = with_overlays(base, ov).method_by_name["demo.run"]
    assert [(f.name, f.type) for f in run.fields] == [("x", "octet"), ("a", "long"), ("b", "bit")]


# -- conflicts: one line each, naming both places ----------------------------------------------------------
def base_line(needle: str) -> int:
    return line_of(BASE, needle)


WIRE = 'say wire="change" on this overlay element if that is meant'
CONFLICTS: dict[str, tuple[str, str, str]] = {
    # name: (overlay body, needle of the overlay line, the message after "error: ", {base:NEEDLE} -> base file:line)
    "class index used twice": (
        '<class name="other" index="10"/>\n', '<class name="other"',
        'class other takes index 10, which class demo already has ({base:<class name="demo"})'),
    "method index used twice": (
        '<class name="demo" overlay="change">\n<method name="new" index="11"/>\n</class>\n', '<method name="new"',
        'method demo.new takes index 11, which method demo.run-ok already has ({base:<method name="run-ok"})'),
    "index changed to one in use": (
        '<class name="demo" overlay="change">\n<method name="stop" overlay="change" index="10"/>\n</class>\n',
        '<method name="stop"',
        'method demo.stop takes index 10, which method demo.run already has ({base:<method name="run"})'),
    "name reused for another element": (
        '<class name="demo" overlay="change">\n<method name="run" index="30"/>\n</class>\n', '<method name="run"',
        ('overlay adds method demo.run, which {base:<method name="run"} already defines '
        '(say overlay="change" to change it)')),
    "domain name reused": (
        '<domain name="short" type="long"/>\n', '<domain name="short"',
        ('overlay adds domain short, which {base:<domain name="short"} already defines '
        '(say overlay="change" to change it)')),
    "rename onto an existing field": (
        ('<class name="demo" overlay="change"><method name="run" overlay="change">\n'
        '<field name="a" overlay="change" rename="c"/>\n</method></class>\n'), 'rename="c"',
        "field demo.run.a cannot be renamed to 'c': field demo.run.c already exists ({base:<field name=\"c\"})"),
    "field appended to an existing method": (
        ('<class name="demo" overlay="change"><method name="run" overlay="change">\n'
        '<field name="d" domain="short"/>\n</method></class>\n'), '<field name="d"',
        'demo.run.d (short) appended: the argument layout changes (demo.run is at {base:<method name="run"}); '
        + WIRE),
    "field inserted before existing ones": (
        ('<class name="demo" overlay="change"><method name="run" overlay="change">\n'
        '<field name="d" domain="octet" before="c"/>\n</method></class>\n'), '<field name="d"',
        'demo.run.d (octet) inserted before c: the argument layout changes (demo.run is at {base:<method name="run"}); '
        + WIRE),
    "bit that opens a new octet": (
        ('<class name="demo" overlay="change"><method name="run" overlay="change">\n'
        '<field name="d" domain="bit" after="c"/>\n</method></class>\n'), '<field name="d"',
        'demo.run.d (bit) appended: the argument layout changes (demo.run is at {base:<method name="run"}); ' + WIRE),
    "field removed": (
        ('<class name="demo" overlay="change"><method name="run" overlay="change">\n'
        '<field name="a" overlay="remove"/>\n</method></class>\n'), '<field name="a"',
        'demo.run.a (short, argument 1) removed (demo.run.a is at {base:<field name="a"}); ' + WIRE),
    "type change of an existing field": (
        ('<class name="demo" overlay="change"><method name="run" overlay="change">\n'
        '<field name="a" overlay="change" domain="octet"/>\n</method></class>\n'), '<field name="a"',
        'demo.run.a wire type short -> octet (demo.run.a is at {base:<field name="a"}); ' + WIRE),
    "type change through its domain": (
        '<domain name="short" overlay="change" type="long"/>\n', '<domain name="short"',
        'demo.run.a wire type short -> long (through domain.short; demo.run.a is at {base:<field name="a"}); ' + WIRE),
    "method index changed": (
        '<class name="demo" overlay="change">\n<method name="stop" overlay="change" index="21"/>\n</class>\n',
        '<method name="stop"',
        'method demo.stop id 10.20 -> 10.21 (demo.stop is at {base:<method name="stop"}); ' + WIRE),
    "change of something that does not exist": (
        '<class name="demo" overlay="change">\n<method name="halt" overlay="change" synchronous="1"/>\n</class>\n',
        '<method name="halt"',
        "overlay changes method demo.halt, which base.xml and the overlays before this one do not define"),
    "misspelt attribute": (
        '<class name="demo" overlay="change">\n<method name="run" overlay="change" synchronus="0"/>\n</class>\n',
        '<method name="run"',
        "method demo.run: overlay cannot change synchronus (it changes index, synchronous, content, deprecated, label)"),
    "an attribute an overlay set is checked where it was set": (
        '<class name="demo" overlay="change">\n<method name="run" overlay="change" index="ten"/>\n</class>\n',
        '<method name="run"', 'index="ten" is not a number'),
}


def expand(message: str, base: Path) -> str:
    out = message
    while "{base:" in out:
        start = out.index("{base:")
        end = out.index("}", start)
        out = out[:start] + f"{base}:{base_line(out[start + 6:end])}" + out[end + 1:]
    return out


@pytest.mark.parametrize("case", sorted(CONFLICTS))
def test_each_conflict_is_one_line_naming_both_places(files: tuple[Path, Path], case: str) -> None:
    base, ov = files
    body, needle, message = CONFLICTS[case]
    text = overlay(body)
    write(ov.parent, ov.name, text)
    lines = error_lines(cli("validate", "--spec", str(base), "--overlay", str(ov)))
    assert lines == [f"{ov}:{line_of(text, needle)}: error: {expand(message, base)}"]


def test_every_conflict_of_an_overlay_is_reported(files: tuple[Path, Path]) -> None:
    base, ov = files
    text = overlay('<class name="other" index="10"/>\n<domain name="short" type="long"/>\n'
                   '<class name="demo" overlay="chnage"/>\n<class name="demo" overlay="change"><foo/></class>\n')
    write(ov.parent, ov.name, text)
    lines = error_lines(cli("validate", "--spec", str(base), "--overlay", str(ov)))
    assert [ln.split(": error: ")[0] for ln in lines] == [f"{ov}:{n}" for n in (3, 4, 5, 6)]
    assert 'overlay="chnage" is not one of add, change, remove' in lines[2]
    assert "<foo> cannot appear in <class>" in lines[3]
    with pytest.raises(ConflictError) as e:
        with_overlays(base, ov)
    assert len(e.value.problems) == 4


def test_a_conflict_between_two_overlays_names_both(files: tuple[Path, Path]) -> None:
    base, ov = files
    first = overlay('<class name="demo" overlay="change">\n<method name="pause" index="30"/>\n</class>\n')
    write(ov.parent, ov.name, first)
    second = write(ov.parent, "two.xml", overlay('<class name="demo" overlay="change">\n\n<method name="hold" index="30"/>\n</class>\n'))
    lines = error_lines(cli("validate", "--spec", str(base), "--overlay", str(ov), "--overlay", str(second)))
    assert lines == [f"{second}:5: error: method demo.hold takes index 30, which method demo.pause already has ({ov}:4)"]


@pytest.mark.parametrize("version, family", [('major="0" minor="9"', "0-9"), ('major="8" minor="0"', "0-8")])
def test_an_overlay_of_another_family_is_refused(files: tuple[Path, Path], version: str, family: str) -> None:
    base, ov = files
    write(ov.parent, ov.name, overlay('<constant name="x" value="1"/>\n', version))
    lines = error_lines(cli("validate", "--spec", str(base), "--overlay", str(ov)))
    assert lines == [(f"{ov}:2: error: overlay is AMQP {family} but spec base.xml is AMQP 0-9-1 "
                     "(an overlay extends a spec of its own family)")]


def test_the_bundled_overlay_is_refused_on_the_bundled_0_9() -> None:
    lines = error_lines(cli("validate", "--overlay", "rabbitmq"))
    assert lines == [(f"{RABBITMQ_OVERLAY}:{line_of(RABBITMQ_TEXT, '<amqp ')}: error: overlay is AMQP 0-9-1 but spec "
                     "amqp0-9.xml is AMQP 0-9 (an overlay extends a spec of its own family)")]


HOSTILE = ("wrong root element", "xxe", "billion laughs", "truncated xml", "unsupported 0-10")


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_overlay_is_refused_like_a_hostile_spec(tmp_path: Path, case: str) -> None:
    """The same one line, exit 2, whether the file comes as --spec or as --overlay."""
    bad = write(tmp_path, "bad.xml", HOSTILE_SPECS[case][0])
    base = write(tmp_path, "base.xml", BASE)
    as_spec = error_lines(cli("validate", "--spec", str(bad)))
    as_overlay = error_lines(cli("validate", "--spec", str(base), "--overlay", str(bad)))
    assert as_overlay == as_spec and len(as_spec) == 1 and as_spec[0].startswith(f"{bad}:")


def test_an_overlay_that_is_no_file_is_refused(tmp_path: Path) -> None:
    base = write(tmp_path, "base.xml", BASE)
    assert error_lines(cli("validate", "--spec", str(base), "--overlay", str(tmp_path / "nope.xml"))) == [
        f"{tmp_path / 'nope.xml'}: error: no such file"]
    assert error_lines(cli("validate", "--spec", str(base), "--overlay", str(tmp_path))) == [
        f"{tmp_path}: error: is a directory, not a spec file"]
    assert error_lines(cli("validate", "--spec", str(base), "--overlay", "no-such-overlay")) == [
        "error: unknown overlay 'no-such-overlay': give a file path or one of rabbitmq, rabbitmq-blocked"]


def test_an_overlay_cannot_smuggle_overlay_attributes_or_entities(files: tuple[Path, Path]) -> None:
    base, ov = files
    text = overlay('<class name="extra" index="99">\n<method name="m" index="1" overlay="change"/>\n</class>\n')
    write(ov.parent, ov.name, text)
    assert error_lines(cli("validate", "--spec", str(base), "--overlay", str(ov))) == [
        f"{ov}:4: error: <method> inside an added element cannot carry overlay: the whole element is added as written"]
    secret = write(ov.parent, "secret.txt", "TOPSECRET")
    write(ov.parent, ov.name, f'<?xml version="1.0"?>\n<!DOCTYPE amqp [<!ENTITY x SYSTEM "file://{secret}">]>\n'
                              '<amqp major="0" minor="9" revision="1">&x;</amqp>\n')
    r = cli("inspect", "--json", "--spec", str(base), "--overlay", str(ov))
    assert r.exit_code == 2 and "TOPSECRET" not in r.stdout + r.stderr


# -- provenance in inspect --json and the docs ---------------------------------------------------------------
def rabbit_line(needle: str) -> int:
    return line_of(RABBITMQ_TEXT, needle)


def test_inspect_json_says_which_overlay_added_or_changed_each_element() -> None:
    r = cli("inspect", "--json", "--spec", SPEC_091, "--overlay", "rabbitmq")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, json.loads(cli("inspect", "--json-schema").stdout))
    assert doc["schema_version"] == 2  # overlays added fields, none removed or changed in meaning (2: segments went)
    spec = doc["spec"]
    assert [(o["name"], o["removed"]) for o in spec["overlays"]] == [("rabbitmq.xml", [])]
    methods = {f"{c['name']}.{m['name']}": m for c in spec["classes"] for m in c["methods"]}
    nack = methods["basic.nack"]
    assert nack["added_by"] == {"file": "rabbitmq.xml", "line": rabbit_line('<method name="nack"'), "path": "basic.nack"}
    assert nack["loc"] == nack["added_by"] and nack["fields"][1]["added_by"]["line"] == rabbit_line('<field name="multiple"')
    recover = methods["basic.recover"]
    assert recover["added_by"] is None and recover["loc"]["file"] == "amqp0-9-1.xml"
    assert recover["changed_by"] == [{"file": "rabbitmq.xml", "line": rabbit_line('<method name="recover"'),
                                      "path": "basic.recover"}]
    auto_delete = methods["exchange.declare"]["fields"][5]
    assert auto_delete["name"] == "auto-delete" and auto_delete["loc"]["file"] == "amqp0-9-1.xml"
    # libxml2 gives an element the line where its start tag ends
    assert [c["line"] for c in auto_delete["changed_by"]] == [rabbit_line('label="delete when no longer used"')]
    untouched = methods["queue.declare"]
    assert untouched["added_by"] is None and untouched["changed_by"] == []
    # a spec alone: no element claims an overlay
    alone = json.loads(cli("inspect", "--json", "--spec", SPEC_091).stdout)["spec"]
    assert alone["overlays"] == [] and '"added_by": {' not in json.dumps(alone) and '"changed_by": [{' not in json.dumps(alone)


def test_inspect_json_with_an_overlay_is_deterministic() -> None:
    run = [sys.executable, "-m", "amqgen", "inspect", "--json", "--spec", SPEC_091, "--overlay", "rabbitmq"]
    a, b = (subprocess.run(run, capture_output=True, text=True, cwd=ROOT, check=False) for _ in range(2))
    assert a.returncode == 0 and a.stdout == b.stdout


def test_docs_show_the_overlays_additions_with_their_provenance(tmp_path: Path) -> None:
    nack, recover = rabbit_line('<method name="nack"'), rabbit_line('<method name="recover"')
    # libxml2 gives an element the line where its start tag ends
    confirm, auto_delete = rabbit_line('<class name="confirm"'), rabbit_line('label="delete when no longer used"')
    r = cli("docs", "--format", "markdown", "--spec", SPEC_091, "--overlay", "rabbitmq", "--out", str(tmp_path / "md"))
    assert r.exit_code == 0, r.stderr
    md = (tmp_path / "md" / "README.md").read_text(encoding="utf-8")
    assert "## Overlays" in md and "- Overlay 1: rabbitmq.xml, sha256 " in md
    assert f"| added method | [basic.nack](#basic.nack) | rabbitmq.xml:{nack} |" in md
    assert f"| added class | [confirm](#confirm) | rabbitmq.xml:{confirm} |" in md
    assert f"| changed method | [basic.recover](#basic.recover) | rabbitmq.xml:{recover} |" in md
    section = md[md.index("### basic.nack"):]
    assert section.splitlines()[2] == f"- Overlay: added by rabbitmq.xml:{nack}"
    r = cli("docs", "--format", "html", "--spec", SPEC_091, "--overlay", "rabbitmq", "--out", str(tmp_path / "html"))
    assert r.exit_code == 0, r.stderr
    page = lxml.html.parse(str(tmp_path / "html" / "index.html")).getroot()
    facts = page.get_element_by_id("basic.nack").xpath("./dl/dt[.='Overlay']/following-sibling::dd[1]")
    assert [f.text_content() for f in facts] == [f"added by rabbitmq.xml:{nack}"]
    badge = page.get_element_by_id("exchange.declare.auto-delete").xpath(".//span[@class='badge overlay']")
    assert [b.text_content() for b in badge] == [f"changed by rabbitmq.xml:{auto_delete}"]
    overlays = page.get_element_by_id("overlays")
    assert overlays.tag == "h2"
    # the spec alone: no overlay section, no badge
    r = cli("docs", "--format", "markdown", "--spec", SPEC_091, "--out", str(tmp_path / "plain"))
    plain = (tmp_path / "plain" / "README.md").read_text(encoding="utf-8")
    assert "## Overlays" not in plain and "Overlay:" not in plain


# -- the project file --------------------------------------------------------------------------------------
PROJECT = """# the project's amqgen settings
spec = "specs/amqp0-9-1.xml"
overlays = ["rabbitmq", "specs/local.xml"]
strict = false

[[render]]
lang = "docs-markdown"
out = "docs"
depfile = "build/docs.d"

[[render]]
lang = "summary"
out = "gen"
package = "proj_ids"
"""
LOCAL = overlay('<constant name="local-limit" value="7"/>\n')


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "specs").mkdir()
    shutil.copyfile(SPEC_091, tmp_path / "specs" / "amqp0-9-1.xml")
    write(tmp_path / "specs", "local.xml", LOCAL)
    write(tmp_path, "amqgen.toml", PROJECT)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_render_with_no_arguments_in_a_project(project: Path) -> None:
    r = cli("render")
    assert r.exit_code == 0, r.stderr
    md = (project / "docs" / "README.md").read_text(encoding="utf-8")
    assert "- Overlay 1: rabbitmq.xml" in md and "- Overlay 2: local.xml" in md and "constant.local-limit" in md
    ids = (project / "gen" / "proj_ids.py").read_text(encoding="utf-8")
    assert "+ rabbitmq.xml (sha256 " in ids and "+ local.xml (sha256 " in ids
    deps = (project / "build" / "docs.d").read_text(encoding="utf-8")
    for dep in ("specs/amqp0-9-1.xml", str(RABBITMQ_OVERLAY), "specs/local.xml", "amqgen.toml"):
        assert f"  {dep} \\" in deps, dep
    assert cli("render", "--check").exit_code == 0
    # an overlay is an input like the spec: changing it makes the outputs stale
    write(project / "specs", "local.xml", overlay('<constant name="local-limit" value="8"/>\n'))
    drift = cli("render", "--check")
    assert drift.exit_code == 1 and "docs is out of date with amqp0-9-1.xml + rabbitmq.xml + local.xml" in drift.stderr


def test_every_spec_command_reads_the_project(project: Path, tmp_path_factory: pytest.TempPathFactory,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    r = cli("validate")
    assert r.exit_code == 0 and r.stdout.startswith("amqp0-9-1.xml + rabbitmq.xml + local.xml: AMQP 0-9-1"), r.stdout
    assert json.loads(cli("inspect", "--json").stdout)["spec"]["constants"][-1]["name"] == "local-limit"
    assert json.loads(cli("vectors", "--out", "-").stdout)["spec"]["overlays"][1]["name"] == "local.xml"
    # --overlay adds to the project's overlays; --spec replaces its spec and overlays
    extra = write(project, "extra.xml", overlay('<constant name="extra" value="9"/>\n'))
    assert "+ local.xml + extra.xml:" in cli("validate", "--overlay", str(extra)).stdout
    assert cli("validate", "--spec", SPEC_091).stdout.startswith("amqp0-9-1.xml: AMQP 0-9-1")
    # from elsewhere, with --project: paths stay relative to the file
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    r = cli("--project", str(project / "amqgen.toml"), "validate")
    assert r.exit_code == 0 and "+ local.xml:" in r.stdout, r.stderr
    assert error_lines(cli("render")) == [
        "error: --lang and --out are required (or run in a project whose amqgen.toml has [[render]] tables)"]


def test_a_strict_project_holds_for_every_command(project: Path) -> None:
    write(project, "amqgen.toml", PROJECT.replace("strict = false", "strict = true"))
    lines = error_lines(cli("validate"))
    # the official 0-9-1's defects, and the overlay's class confirm after tx, each as an error
    assert [ln.rsplit("[", 1)[1] for ln in lines] == ["W007]", "W007]", "W004]", "W005]"], lines
    confirm = line_of(RABBITMQ_TEXT, '<class name="confirm"')
    assert lines[-1].startswith(f"{RABBITMQ_OVERLAY}:{confirm}: error: ")
    assert error_lines(cli("validate", "--spec", SPEC_091))[0].endswith("[W007]")


@pytest.mark.parametrize("text, line, message", [
    ('spec = "x.xml"\noverlay = ["a.xml"]\n', 2, "unknown key 'overlay' (known: spec, overlays, strict, render)"),
    ('spec = "x.xml"\nstrict = "yes"\n', 2, "strict must be true or false"),
    ('[[render]]\nlang = "python"\n', 2, "[[render]] #1: needs lang and out"),
    ('[[render]]\nlang = "python"\nout = "o"\nformat = "x"\n', 4,
     "[[render]] #1: unknown key 'format' (known: lang, out, package, options, templates, depfile)"),
    ('spec = "x.xml\n', 1, "not valid TOML: "),
])
def test_a_bad_project_file_is_one_located_line(project: Path, text: str, line: int, message: str) -> None:
    write(project, "amqgen.toml", text)
    lines = error_lines(cli("validate"))
    assert len(lines) == 1 and lines[0].startswith(f"amqgen.toml:{line}: error: {message}"), lines


def test_render_arguments_go_together(project: Path) -> None:
    assert error_lines(cli("render", "--lang", "python")) == [
        "error: --lang and --out go together (give both, or neither to render the project's [[render]] tables)"]
    assert error_lines(cli("render", "--option", "tests=1")) == [
        ("error: --option, --package, --templates and --depfile go with --lang and --out; a project sets them in its "
        "[[render]] tables (amqgen.toml)")]


# -- a real peer: RabbitMQ speaks what the overlay added -------------------------------------------------------
@pytest.mark.broker
def test_rabbitmq_speaks_the_overlays_additions(gen_root: Path) -> None:
    """The Python codec rendered from 0-9-1 + the RabbitMQ overlay, against the broker: exchange-to-
    exchange bindings (bind-ok, and unbind-ok with RabbitMQ's id 40.51), the renamed declare bits
    (an `internal` exchange refuses direct publishes), confirm mode (server-sent basic.ack),
    basic.nack with requeue, and basic.recover answered by recover-ok. The overlay's methods come
    from the generated package's own tables, not from a model of the extended spec."""
    codec = import_package(SPEC_091, "amqp091_overlay", gen_root, overlays=(str(RABBITMQ_OVERLAY),))
    by_name = codec.methods.METHODS_BY_NAME
    assert by_name["exchange.unbind-ok"].METHOD_ID == 51 and by_name["confirm.select"].CLASS_ID == 85
    try:
        w, _ = open_connection(codec, BROKER_HOST, BROKER_PORT, BROKER_USER, BROKER_PASSWORD)
    except AssertionError as e:
        pytest.fail(f"RabbitMQ broker test needs a broker on {BROKER_HOST}:{BROKER_PORT}: {e}")
    run = uuid.uuid4().hex[:12]
    src, dst, queue = f"amqgen.ovl.src.{run}", f"amqgen.ovl.dst.{run}", f"amqgen.ovl.q.{run}"

    def call(ch: int, name: str, reply: str, **fields: Any) -> Any:
        w.send(ch, by_name[name](**fields))
        return w.expect(ch, reply)

    call(1, "channel.open", "channel.open-ok")
    call(1, "exchange.declare", "exchange.declare-ok", exchange=src, type_="fanout", auto_delete=True)
    call(1, "exchange.declare", "exchange.declare-ok", exchange=dst, type_="fanout", internal=True)
    call(1, "queue.declare", "queue.declare-ok", queue=queue, exclusive=True, auto_delete=True)
    call(1, "queue.bind", "queue.bind-ok", queue=queue, exchange=dst)
    call(1, "exchange.bind", "exchange.bind-ok", destination=dst, source=src)
    call(1, "confirm.select", "confirm.select-ok")
    w.send_message(1, by_name["basic.publish"](exchange=src, routing_key="k"),
                   codec.properties.BasicProperties(message_id=f"m-{run}"), b"via an exchange binding")
    ack = w.expect(1, "basic.ack")  # sent by the server: the overlay made basic.ack go both ways
    assert (ack.delivery_tag, ack.multiple) == (1, False)
    w.send(1, by_name["basic.get"](queue=queue))
    got, header, body = w.read_message(1, "basic.get-ok")
    assert body == b"via an exchange binding" and header.properties.message_id == f"m-{run}" and not got.redelivered
    w.send(1, by_name["basic.nack"](delivery_tag=got.delivery_tag, multiple=False, requeue=True))
    w.send(1, by_name["basic.get"](queue=queue))
    again, _, body = w.read_message(1, "basic.get-ok")  # nack with requeue put it back
    assert again.redelivered and body == b"via an exchange binding"
    call(1, "basic.recover", "basic.recover-ok", requeue=True)  # synchronous now: the broker answers
    call(1, "exchange.unbind", "exchange.unbind-ok", destination=dst, source=src)
    # the `internal` bit (reserved-3 in the official spec) reached the broker: no direct publishing
    w.send_message(1, by_name["basic.publish"](exchange=dst, routing_key="k"), codec.properties.BasicProperties(),
                   b"x")
    close = w.expect(1, "channel.close")
    assert close.reply_code == 403 and "internal" in close.reply_text, close
    w.send(1, by_name["channel.close-ok"]())
    call(2, "channel.open", "channel.open-ok")
    for exchange in (src, dst):
        call(2, "exchange.delete", "exchange.delete-ok", exchange=exchange)
    call(2, "queue.delete", "queue.delete-ok", queue=queue)
    close_connection(w)
