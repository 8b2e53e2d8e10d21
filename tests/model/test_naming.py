"""The naming layer, per language: case conventions, keywords, collisions."""

from __future__ import annotations

import keyword
import subprocess
import sys
from pathlib import Path

import pytest
from specgen import line_of, spec_text, write

from amqgen.amqp0.lower import load_spec
from amqgen.errors import NamingError
from amqgen.naming import LANGUAGES, Naming

ROOT = Path(__file__).resolve().parents[2]
SPEC_NAMES = ["global", "type", "return", "class", "open", "delete", "long", "short", "no-wait", "prefetch-count"]


def test_python() -> None:
    n = Naming("python")
    assert n.type("basic", "consume-ok") == "BasicConsumeOk"
    assert n.member("prefetch-count") == "prefetch_count"
    assert n.constant("frame-min-size") == "FRAME_MIN_SIZE"
    assert [n.member(x) for x in ("global", "type", "return", "class", "open")] == [
        "global_", "type_", "return_", "class_", "open_"]
    assert n.member("delete") == "delete" and n.member("long") == "long"  # not Python words
    assert n.type("none") == "None_" and n.member("01") == "_01"
    for name in SPEC_NAMES:
        ident = n.member(name)
        assert ident.isidentifier() and not keyword.iskeyword(ident)


def test_c() -> None:
    n = Naming("c", prefix="amqp")
    assert n.type("basic", "consume-ok") == "amqp_basic_consume_ok_t"
    assert n.function("basic", "consume", "encode") == "amqp_basic_consume_encode"
    assert n.constant("frame-end") == "AMQP_FRAME_END"
    assert [n.member(x) for x in ("long", "short", "return", "class", "delete", "global", "type")] == [
        "long_", "short_", "return_", "class_", "delete_", "global", "type"]


def test_java() -> None:
    n = Naming("java")
    assert n.type("basic", "consume-ok") == "BasicConsumeOk"
    assert n.member("prefetch-count") == "prefetchCount"
    assert n.constant("reply-success") == "REPLY_SUCCESS"
    assert [n.member(x) for x in ("long", "short", "return", "class", "global", "type")] == [
        "long_", "short_", "return_", "class_", "global", "type"]


def test_unknown_language() -> None:
    with pytest.raises(NamingError):
        Naming("cobol")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_identifiers_compile(lang: str, tmp_path: Path) -> None:
    """Every member name of the bundled spec is accepted by the language itself (Python here;
    C and Java by their keyword lists, which compile tests of those targets exercise)."""
    spec = load_spec(ROOT / "spec" / "amqp0-9.xml")
    n = Naming(lang)
    n.check_spec(spec)
    names = {f.name for m in spec.methods for f in m.fields} | {p.name for c in spec.classes for p in c.properties}
    for name in names:
        ident = n.member(name)
        assert ident.replace("_", "a").isalnum() and not ident[0].isdigit()
        if lang == "python":
            compile(f"{ident} = 1", "<naming>", "exec")


def test_collision_stops_generation(tmp_path: Path) -> None:
    text = spec_text(
        '<class name="c" index="10"><method name="m" index="10"><chassis name="server" implement="MUST"/>\n'
        '<field name="no-wait" domain="bit"/>\n<field name="no--wait" domain="bit"/>\n</method></class>\n')
    path = write(tmp_path, "c.xml", text)
    spec = load_spec(path)
    assert not spec.warnings  # the model keeps both; only a target's identifiers collide
    for lang in LANGUAGES:
        with pytest.raises(NamingError, match="'no-wait' and 'no--wait' both become"):
            Naming(lang).check_spec(spec)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "amqgen", "render", "--lang", "summary", "--out", str(out),
                           "--spec", str(path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and f"{path}:{line_of(text, 'no--wait')}: error: c.m fields:" in proc.stderr
    assert not out.exists()


def test_java_case_collision(tmp_path: Path) -> None:
    path = write(tmp_path, "c.xml", spec_text(
        '<class name="c" index="10"><method name="m" index="10">\n'
        '<field name="x-1" domain="bit"/>\n<field name="x1" domain="bit"/>\n</method></class>\n'))
    spec = load_spec(path)
    Naming("python").check_spec(spec)  # x_1 and x1 differ
    with pytest.raises(NamingError, match="both become java identifier 'x1'"):
        Naming("java").check_spec(spec)
