"""Render the Java target for every spec, compile it all in one javac run, run Java programs (shared by the
Java tests). javac and the JVM are slow to start, so everything the Java tests need is compiled once per
session: every spec's package with its generated JUnit tests, and the hand-written programs under
tests/java/ (client interop, broker run, mutation test, which use package ``amqgen.rabbit``).

Everything comes from Debian packages listed in deps/debian.txt: the JDK, Maven, JUnit 5, and the
RabbitMQ Java client. A missing one makes the tests fail with its name, never skip.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytarget import ROOT, SPEC_091, SPEC_091_EXT

from amqgen.specs import DEBIAN_SPECS, debian_root

JAVA_DIR = ROOT / "tests" / "java"
SHARE = Path("/usr/share/java")
JUNIT_COMPILE = ["junit-jupiter-api.jar", "junit-jupiter-params.jar", "apiguardian-api.jar", "opentest4j.jar",
                 "junit-platform-commons.jar"]
JUNIT_LAUNCHER = "junit-platform-console-standalone.jar"
CLIENT_JAR = "amqp-client.jar"  # librabbitmq-client-java 5.0.0
MAVEN_REPO = Path("/usr/share/maven-repo")
#: the package the hand-written programs import: RabbitMQ's 0-9-1 extended spec
RABBIT_PACKAGE = "amqgen.rabbit"


@dataclass(frozen=True)
class Case:
    key: str
    spec_arg: str | None  # what --spec gets (None: the bundled default)
    path: Path
    package: str
    overlays: tuple[str, ...] = ()  # bundled overlays' names, given to render as --overlay


def cases() -> list[Case]:
    out = [
        Case("bundled-0-9", None, ROOT / "spec" / "amqp0-9.xml", "gen.bundled09"),
        # with RabbitMQ's connection.blocked and unblocked, which its extended XML predates (the client's notices)
        Case("bundled-0-9-1-extended", SPEC_091_EXT, Path(SPEC_091_EXT), RABBIT_PACKAGE, ("rabbitmq-blocked",)),
        Case("bundled-0-9-1", SPEC_091, Path(SPEC_091), "gen.bundled091"),
    ]
    for name in ("0-8", "0-8-qpid", "0-9", "0-9-qpid", "0-9-1", "0-9-1-qpid", "0-9-1-rabbit"):
        out.append(Case(f"debian-{name}", f"amqp-specs:{name}", debian_root() / DEBIAN_SPECS[name],
                        "gen.debian" + name.replace("-", "")))
    return out


def spec_of(case: Case) -> Any:
    """The model a case renders: its spec with its overlays."""
    from amqgen.amqp0.lower import load_spec
    from amqgen.specs import resolve_overlay

    return load_spec(case.path, overlays=[resolve_overlay(o) for o in case.overlays])


def rabbit_spec() -> Any:
    """The model of the package the hand-written programs import (amqgen.rabbit)."""
    return spec_of(next(c for c in cases() if c.package == RABBIT_PACKAGE))


def tool(name: str, package: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        raise AssertionError(f"{name} is not installed (Debian package {package}; scripts/test-env installs it)")
    return exe


def jar(name: str, package: str) -> str:
    path = SHARE / name
    if not path.is_file():
        raise AssertionError(f"{path} is missing (Debian package {package}; scripts/test-env installs it)")
    return str(path)


def compile_classpath() -> list[str]:
    return [jar(j, "junit5") for j in JUNIT_COMPILE] + [jar(CLIENT_JAR, "librabbitmq-client-java")]


def render(case: Case, out: Path, *, tests: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "amqgen", "render", "--lang", "java", "--out", str(out), "--option",
           f"package={case.package}"]
    if case.spec_arg is not None:
        cmd += ["--spec", case.spec_arg]
    for overlay in case.overlays:
        cmd += ["--overlay", overlay]
    if tests:
        cmd += ["--option", "tests=1"]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)


@dataclass(frozen=True)
class Build:
    root: Path
    trees: dict[str, Path]  # case key -> rendered tree
    classes: Path  # every package, its tests and resources, and tests/java's programs
    javac_seconds: float

    def classpath(self, *extra: str) -> str:
        return ":".join([str(self.classes), *extra])

    def to_json(self) -> str:
        return json.dumps({"root": str(self.root), "trees": {k: str(v) for k, v in self.trees.items()},
                           "classes": str(self.classes), "javac_seconds": self.javac_seconds})

    @classmethod
    def from_json(cls, text: str) -> Build:
        d = json.loads(text)
        return cls(Path(d["root"]), {k: Path(v) for k, v in d["trees"].items()}, Path(d["classes"]), d["javac_seconds"])


def build_all(root: Path) -> Build:
    """Render every case (two at a time), then one javac -Xlint:all -Werror over all of it."""
    import time

    javac = tool("javac", "openjdk-17-jdk-headless")
    missing = [c.path for c in cases() if not c.path.is_file()]
    assert not missing, f"spec files missing (Debian package amqp-specs?): {missing}"

    def one(case: Case) -> tuple[str, Path]:
        out = root / case.key
        proc = render(case, out)
        assert proc.returncode == 0, f"{case.key}: render failed: {proc.stderr}"
        return case.key, out

    with ThreadPoolExecutor(max_workers=2) as pool:
        trees = dict(pool.map(one, cases()))
    classes = root / "classes"
    sources = sorted(str(p) for t in trees.values() for p in (t / "src").rglob("*.java"))
    sources += sorted(str(p) for p in JAVA_DIR.glob("*.java"))
    argfile = root / "sources.txt"
    argfile.write_text("\n".join(sources) + "\n", encoding="utf-8")
    started = time.monotonic()
    proc = subprocess.run(
        [javac, "--release", "17", "-Xlint:all", "-Werror", "-encoding", "UTF-8", "-d", str(classes), "-cp",
         ":".join(compile_classpath()), f"@{argfile}"],
        capture_output=True, text=True, check=False,
    )
    seconds = time.monotonic() - started
    assert proc.returncode == 0, f"javac -Xlint:all -Werror failed:\n{proc.stdout}{proc.stderr}"[-6000:]
    for tree in trees.values():
        resources = tree / "src" / "test" / "resources"
        shutil.copytree(resources, classes, dirs_exist_ok=True)
    return Build(root, trees, classes, seconds)


def java(build: Build, main: str, *args: str, classpath: tuple[str, ...] = (), timeout: float = 300,
         jvm: tuple[str, ...] = (), input: str | None = None) -> subprocess.CompletedProcess[str]:
    exe = tool("java", "openjdk-17-jdk-headless")
    return subprocess.run([exe, *jvm, "-cp", build.classpath(*classpath), main, *args], capture_output=True,
                          text=True, timeout=timeout, check=False, input=input)
