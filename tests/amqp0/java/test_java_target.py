"""The Java target across every supported spec: the bundled 0-9, 0-9-1 and 0-9-1
extended, and every 0-8 / 0-9 / 0-9-1 file of Debian's amqp-specs.

Every rendering (with the conformance tests option) compiles with ``javac -Xlint:all -Werror`` (Java 17,
one javac run for all of them), and its generated JUnit 5 tests, the whole conformance corpus in both
table dialects and round trips of every method and properties class, pass in one JUnit console launcher
run. One rendering is built and tested the way a user would: Maven, offline, against Debian's Maven
repository. Rendering is deterministic, every file names its generator and spec, and bad options fail
with one line.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
from javatarget import (
    JUNIT_LAUNCHER,
    MAVEN_REPO,
    RABBIT_PACKAGE,
    Build,
    Case,
    cases,
    jar,
    java,
    rabbit_spec,
    render,
    spec_of,
    tool,
)
from pytarget import ROOT

from amqgen import __version__

CASES = cases()
IDS = [c.key for c in CASES]


def test_generated_junit_tests_pass_for_every_spec(java_build: Build) -> None:
    launcher = jar(JUNIT_LAUNCHER, "junit5")
    args = ["-jar", launcher, "-cp", str(java_build.classes), "--disable-banner", "--details=summary",
            "--fail-if-no-tests"]
    for c in CASES:
        args += ["--select-package", c.package]
    proc = subprocess.run([tool("java", "openjdk-17-jdk-headless"), *args], capture_output=True, text=True,
                          timeout=600, check=False)
    out = proc.stdout + proc.stderr
    found = re.search(r"(\d+) tests successful", out)
    failed = re.search(r"(\d+) tests failed", out)
    assert proc.returncode == 0 and failed and failed.group(1) == "0", out[-8000:]
    # 12 corpus tests (6 sections x 2 dialects) per spec, plus one round trip per method and content class
    want = sum(12 + len(spec_of(c).methods) + len(spec_of(c).content_classes) for c in CASES)
    assert found and int(found.group(1)) == want, out[-3000:]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_file_names_its_generator_and_spec(java_build: Build, case: Case) -> None:
    digest = hashlib.sha256(case.path.read_bytes()).hexdigest()
    files = sorted(p for p in java_build.trees[case.key].rglob("*") if p.is_file() and not p.name.startswith("."))
    spec = spec_of(case)
    # pom, README.md, package-info, 26 fixed classes (5 of them the engine and the client), one per method and
    # content class, 4 test classes, 2 corpus files
    assert len(files) == 1 + 1 + 1 + 26 + len(spec.methods) + len(spec.content_classes) + 4 + 2
    for f in files:
        head = f.read_text(encoding="utf-8")[:2000]
        assert f"amqgen {__version__}" in head and case.path.name in head and digest in head, f


def test_output_matches_its_spec(java_build: Build) -> None:
    """Facts from the model, read back through the compiled classes (a small Java program)."""
    program = java_build.root / "Facts.java"
    program.write_text(
        "import amqgen.rabbit.*;\n"
        "public class Facts { public static void main(String[] a) {\n"
        "  for (MethodKind k : MethodKind.values()) System.out.println(k.specName() + ' ' + k.classId() + ' '"
        " + k.methodId() + ' ' + k.isSynchronous() + ' ' + k.hasContent() + ' ' + k.direction() + ' '"
        " + k.responses().stream().map(MethodKind::specName).toList() + ' ' + k.type().getSimpleName());\n"
        "  for (ReplyCode r : ReplyCode.values()) System.out.println(\"reply \" + r.value() + ' ' + r.specName()"
        " + ' ' + r.errorClass());\n"
        "  System.out.println(\"port \" + Constants.PORT + \" rules \" + Rules.RULES.size() + \" header \""
        " + Bytes.of(Constants.protocolHeader()).hex());\n"
        "}}\n",
        encoding="utf-8",
    )
    proc = java(java_build, str(program))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    spec = rabbit_spec()
    want = [
        f"{m.full_name} {m.class_index} {m.index} {str(m.synchronous).lower()} {str(m.content).lower()} "
        f"{m.direction.upper().replace('-', '_')} [{', '.join(m.responses)}] "
        + "".join(w.capitalize() for w in re.split(r"[-.]", m.full_name))
        for m in spec.methods
    ]
    want += [f"reply {c.value} {c.name} {c.error_class if c.error_class else 'null'}" for c in spec.reply_codes]
    want += [f"port {spec.port} rules {len(spec.all_rules())} header {spec.protocol_header.hex()}"]
    assert lines == want


def test_render_is_deterministic(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.package == RABBIT_PACKAGE)
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        proc = render(case, out)
        assert proc.returncode == 0, proc.stderr
    files_a = {p.relative_to(a): p.read_bytes() for p in a.rglob("*") if p.is_file() and p.name != ".amqgen-java"}
    files_b = {p.relative_to(b): p.read_bytes() for p in b.rglob("*") if p.is_file() and p.name != ".amqgen-java"}
    assert files_a == files_b and len(files_a) > 80


@pytest.mark.parametrize("package", ["com.class.x", "1abc", "com..x", "com.ex-ample"])
def test_bad_package_option_is_one_error_line(tmp_path: Path, package: str) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "amqgen", "render", "--lang", "java", "--out", str(out), "--option",
         f"package={package}"],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a Java package name" in lines[0] and "Traceback" not in proc.stderr
    assert not out.exists()


@pytest.mark.slow
def test_maven_builds_and_tests_offline(tmp_path: Path) -> None:
    """What a user does with the output: `mvn package`, here offline against Debian's Maven repository."""
    mvn = tool("mvn", "maven")
    assert MAVEN_REPO.is_dir(), f"{MAVEN_REPO} is missing (Debian packages maven, libmaven-compiler-plugin-java...)"
    case = next(c for c in CASES if c.key == "bundled-0-9-1")
    out = tmp_path / "tree"
    proc = render(case, out)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run(
        [mvn, "-o", "-B", f"-Dmaven.repo.local={MAVEN_REPO}", "-Dmaven.compiler.failOnWarning=true",
         "-Dmaven.compiler.compilerArgument=-Werror", "package"],
        capture_output=True, text=True, cwd=out, timeout=600, check=False,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "BUILD SUCCESS" in log, log[-6000:]
    spec = spec_of(case)
    total = 12 + len(spec.methods) + len(spec.content_classes)  # 6 corpus sections x 2 dialects
    assert f"Tests run: {total}, Failures: 0, Errors: 0, Skipped: 0" in log, log[-4000:]
    assert (out / "target" / f"{case.package.replace('.', '-')}-{__version__}.jar").is_file()
