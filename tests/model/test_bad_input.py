"""Bad input: one line with file:line on stderr, exit 2, never a traceback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from specgen import line_of, spec_text, write

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "spec" / "amqp0-9.xml"


def amqgen(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "amqgen", *args], capture_output=True, text=True, cwd=cwd or ROOT)


def one_error(proc: subprocess.CompletedProcess[str], path: Path, line: int | None) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().split("\n")
    assert len(lines) == 1, proc.stderr
    where = f"{path}:{line}: error: " if line else f"{path}: error: "
    assert lines[0].startswith(where), (lines[0], where)
    return lines[0]


GOOD_CLASS = """<class name="c" index="10"><chassis name="server" implement="MUST"/>
<method name="m" index="10"><chassis name="server" implement="MUST"/><response name="m-ok"/>
<field name="f" domain="short"/></method>
<method name="m-ok" index="11"><chassis name="client" implement="MUST"/></method>
</class>
"""

CASES: dict[str, tuple[str, str, str]] = {
    # name: (document, needle whose line the error must name, message fragment)
    "duplicate class index": (
        spec_text(GOOD_CLASS + '<class name="d" index="10"><method name="x" index="1"/></class>\n'),
        '<class name="d"', "duplicate class index 10",
    ),
    "duplicate method index": (
        spec_text(GOOD_CLASS.replace('<method name="m-ok" index="11">', '<method name="m-ok" index="10">')),
        '<method name="m-ok"', "duplicate method index 10",
    ),
    "duplicate class name": (
        spec_text(GOOD_CLASS + '<class name="c" index="20"><method name="x" index="1"/></class>\n'),
        '<class name="c" index="20"', "duplicate class name",
    ),
    "duplicate field name": (
        spec_text(GOOD_CLASS.replace('<field name="f" domain="short"/>', '<field name="f" domain="short"/>\n<field name="f" domain="octet"/>')),
        '<field name="f" domain="octet"', "duplicate field name",
    ),
    "dangling response": (
        spec_text(GOOD_CLASS.replace('<response name="m-ok"/>', '<response name="nowhere"/>')),
        '<response name="nowhere"', "response 'nowhere'",
    ),
    "unknown assert kind": (
        spec_text(GOOD_CLASS.replace('<field name="f" domain="short"/>', '<field name="f" domain="short">\n<assert check="between"/></field>')),
        '<assert check="between"', "unknown assert kind 'between'",
    ),
    "unknown wire type": (
        spec_text('<domain name="weird" type="quadword"/>\n' + GOOD_CLASS),
        '<domain name="weird"', "unknown wire type 'quadword'",
    ),
    "dangling le reference": (
        spec_text(GOOD_CLASS.replace('<field name="f" domain="short"/>', '<field name="f" domain="short">\n<assert check="le" method="m" field="nope"/></field>')),
        '<assert check="le"', "m.nope",
    ),
    "unknown on-failure constant": (
        spec_text(GOOD_CLASS.replace('<field name="f" domain="short"/>', '<field name="f" domain="short">\n<rule name="r" on-failure="no-such-code"><doc>x</doc></rule></field>')),
        '<rule name="r"', "no-such-code",
    ),
    "wrong root element": ('<?xml version="1.0"?>\n\n<spec major="0" minor="9"/>\n', "<spec", "root element is <spec>"),
    "xxe": (
        '<?xml version="1.0"?>\n<!DOCTYPE amqp [\n<!ENTITY xxe SYSTEM "file:///etc/passwd">\n]>\n<amqp major="0" minor="9">&xxe;</amqp>\n',
        "<!ENTITY", "entity declarations are not allowed",
    ),
    "billion laughs": (
        '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">\n'
        ' <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">\n]>\n<amqp major="0" minor="9">&lol3;</amqp>\n',
        "<!ENTITY", "entity declarations are not allowed",
    ),
    "truncated xml": (spec_text(GOOD_CLASS)[:-40], "", "not well-formed XML"),
    "unsupported 0-10": ('<?xml version="1.0"?>\n<amqp major="0" minor="10" port="5672"/>\n', "<amqp", "unsupported spec family 0-10"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_spec_gives_one_located_error(tmp_path: Path, case: str) -> None:
    text, needle, fragment = CASES[case]
    path = write(tmp_path, "bad.xml", text)
    proc = amqgen("validate", "--spec", str(path))
    expected_line = line_of(text, needle) if needle else None
    if case == "truncated xml":
        assert proc.returncode == 2 and re.match(rf"^{re.escape(str(path))}:\d+: error: ", proc.stderr)
        expected_line = int(proc.stderr.split(":")[1])
        assert expected_line >= text.count("\n")  # the parser stops at the end of the file
    line = one_error(proc, path, expected_line)
    assert fragment in line, line


def test_xxe_does_not_read_the_file(tmp_path: Path) -> None:
    secret = write(tmp_path, "secret.txt", "TOPSECRET")
    text = f'<?xml version="1.0"?>\n<!DOCTYPE amqp [<!ENTITY x SYSTEM "file://{secret}">]>\n<amqp major="0" minor="9">&x;</amqp>\n'
    proc = amqgen("inspect", "--json", "--spec", str(write(tmp_path, "x.xml", text)))
    assert proc.returncode == 2 and "TOPSECRET" not in proc.stdout + proc.stderr


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.xml"
    assert "no such file" in one_error(amqgen("validate", "--spec", str(path)), path, None)


def test_not_xml(tmp_path: Path) -> None:
    path = tmp_path / "blob.xml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    line = one_error(amqgen("validate", "--spec", str(path)), path, 1)
    assert "not well-formed XML" in line


def test_unknown_domain_is_a_warning_then_an_error_under_strict(tmp_path: Path) -> None:
    text = spec_text(GOOD_CLASS.replace('<field name="f" domain="short"/>', '<field name="f" domain="content"/>'))
    path = write(tmp_path, "s.xml", text)
    ok = amqgen("validate", "--spec", str(path))
    assert ok.returncode == 0, ok.stderr
    where = line_of(text, 'domain="content"')
    assert f"{path}:{where}: warning: " in ok.stderr and "[W003]" in ok.stderr
    strict = amqgen("validate", "--strict", "--spec", str(path))
    line = one_error(strict, path, where)
    assert "'content'" in line and "[W003]" in line


def test_bundled_spec_under_strict_fails_with_every_defect() -> None:
    proc = amqgen("validate", "--strict")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().split("\n")
    assert len(lines) == 18 and all(re.match(r"^\S+amqp0-9\.xml:\d+: error: .* \[W\d{3}\]$", ln) for ln in lines)


def test_unknown_spec_name() -> None:
    proc = amqgen("validate", "--spec", "0-7")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "unknown spec '0-7'" in proc.stderr


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert amqgen("render", "--out", str(tmp_path / "o")).returncode == 2  # --lang missing
    proc = amqgen("render", "--lang", "nope", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "no pack 'nope'" in proc.stderr
    proc = amqgen("render", "--lang", "summary", "--out", str(tmp_path / "o"), "--option", "colour=blue")
    assert proc.returncode == 2 and "has no option 'colour'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()
