"""Render the C target for every spec the Java and Python tests cover, and compile it (shared by the C tests).

Everything the C tests need is rendered and compiled once per session (two at a time): every spec in both
table dialects with the conformance tests option, each built with gcc under the strict warning set, and with
clang under the same warnings plus AddressSanitizer and UndefinedBehaviorSanitizer (builds() says which). Tools come from Debian
packages listed in deps/debian.txt; a missing one fails the test with the package's name, never skips it.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from javatarget import Case, cases
from pytarget import ROOT

sys.path.insert(0, str(ROOT / "tests" / "c"))
import cbuild  # tests/c is not a package: on the path above
from cbuild import tool

DIALECTS = ("rabbitmq", "qpid")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Wconversion", "-Wshadow", "-Werror"]
#: -O0: the corpus runner is large straight-line code, and -O1 makes its sanitized build six times slower
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g", "-O0"]
PREFIX = "amqpc"
#: the builds of a rendering: gcc with STRICT, and clang with STRICT plus SANITIZE
KINDS = ("gcc", "asan")
#: the sanitized build runs for every spec in the pack's default dialect and, in the other, for the bundled 0-9
#: and 0-9-1 specs: the dialect changes the table codec (the same code for every spec) and the corpus's tables,
#: while gcc builds and runs every spec in both (a build at -O0 with the sanitizers costs twice gcc's)
SANITIZED_QPID = ("bundled-0-9", "bundled-0-9-1")


def builds(keys: list[str]) -> list[tuple[str, str, str]]:
    """(case key, dialect, kind) of every build build_all makes."""
    return [(k, d, kind) for k in keys for d in DIALECTS for kind in KINDS
            if kind == "gcc" or d == "rabbitmq" or k in SANITIZED_QPID]


def render(case: Case, out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """The real CLI, ``python -m amqgen render --lang c``, for ``case``'s spec with the pack's own prefix."""
    return cbuild.render_cli(out, spec=case.spec_arg, prefix=None, options=options)


def sources(tree: Path, *, tests: bool = True) -> list[str]:
    """The rendered conformance runner's sources (the library's own come with every build)."""
    return sorted(str(p) for p in (tree / "tests").glob("*.c")) if tests else []


def compile_c(cc: str, tree: Path, exe: Path, flags: list[str], *, tests: bool = True,
              extra: tuple[str, ...] = (), source_flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return cbuild.compile_cli(cc, tree, [*sources(tree, tests=tests), *extra], exe, flags, include=(tree / "tests",),
                              source_flags=source_flags)


@dataclass
class Build:
    root: Path
    trees: dict[tuple[str, str], Path] = field(default_factory=dict)  # (case key, dialect) -> rendered tree
    exes: dict[tuple[str, str, str], Path] = field(default_factory=dict)  # (case, dialect, gcc|asan)
    errors: list[str] = field(default_factory=list)  # compile failures, reported by the tests that need them


def build_all(root: Path) -> Build:
    """Render every case in both dialects, then compile each with gcc (strict) and clang (strict + sanitizers)."""
    for t in ("gcc", "clang"):
        tool(t)
    build = Build(root)
    jobs = [(c, d) for c in cases() for d in DIALECTS]
    missing = [c.path for c in cases() if not c.path.is_file()]
    assert not missing, f"spec files missing (Debian package amqp-specs?): {missing}"

    def one(job: tuple[Case, str]) -> tuple[tuple[str, str], Path]:
        case, dialect = job
        out = root / f"{case.key}-{dialect}"
        proc = render(case, out, "tests=1", f"dialect={dialect}")
        assert proc.returncode == 0, f"{case.key} ({dialect}): render failed: {proc.stderr}"
        return (case.key, dialect), out

    with ThreadPoolExecutor(max_workers=2) as pool:
        build.trees = dict(pool.map(one, jobs))

    def comp(job: tuple[str, str, str]) -> None:
        key, dialect, kind = job
        tree = build.trees[(key, dialect)]
        exe = root / "bin" / f"{key}-{dialect}-{kind}"
        exe.parent.mkdir(exist_ok=True)
        # clang builds once: strict warnings and the sanitizers together
        proc = compile_c("clang", tree, exe, [*STRICT, *SANITIZE]) if kind == "asan" else compile_c(kind, tree, exe, STRICT)
        if proc.returncode != 0:
            build.errors.append(f"{key} {dialect} {kind}:\n{proc.stderr[-3000:]}")
        else:
            build.exes[(key, dialect, kind)] = exe

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(comp, builds([c.key for c in cases()])))
    return build


def run(exe: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout, check=False)
