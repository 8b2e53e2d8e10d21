"""Render the C target and compile the hand-written C programs of tests/c/ against it (shared by
tests/test_c_interop.py, tests/test_c_broker.py, tests/test_c_fuzz_regressions.py, bench/bench_c.py
and scripts/fuzz-c).

A missing tool or library is a failure naming its Debian package, never a skip.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
C_DIR = ROOT / "tests" / "c"
SPEC_091_EXT = ROOT.parent / "shared" / "specs" / "amqp0-9-1.extended.xml"
#: the prefix the programs here are written for (librabbitmq owns "amqp_")
PREFIX = "ag"
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
WARN = ["-std=c99", "-Wall", "-Wextra", "-Werror"]


class BuildError(AssertionError):
    pass


def tool(name: str, package: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        raise BuildError(f"{name} is not installed (Debian package {package}; scripts/test-env installs it)")
    return exe


def librabbitmq() -> list[str]:
    """Compiler and linker flags of librabbitmq 0.11 (pkg-config), or a failure naming the package."""
    pkg = tool("pkg-config", "pkg-config")
    proc = subprocess.run([pkg, "--cflags", "--libs", "librabbitmq"], capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not Path("/usr/include/amqp_framing.h").is_file():
        raise BuildError("librabbitmq is not installed (Debian package librabbitmq-dev; scripts/test-env installs it)")
    return proc.stdout.split()


def render(out: Path, *, prefix: str = PREFIX, spec: Path = SPEC_091_EXT, options: tuple[str, ...] = ()) -> Path:
    """`amqgen render --lang c` into ``out``; returns ``out``."""
    cmd = [sys.executable, "-m", "amqgen", "render", "--lang", "c", "--spec", str(spec), "--out", str(out),
           "--option", f"prefix={prefix}"]
    for opt in options:
        cmd += ["--option", opt]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode != 0:
        raise BuildError(f"amqgen render --lang c failed: {proc.stderr.strip()}")
    return out


def library_sources(tree: Path) -> list[str]:
    return sorted(str(p) for p in (tree / "src").glob("*.c"))


def compile_program(tree: Path, sources: list[Path | str], exe: Path, *, cc: str = "clang",
                    flags: tuple[str, ...] = (), libs: tuple[str, ...] = (), include: tuple[Path, ...] = ()) -> Path:
    """One compiler run: the generated library's sources + ``sources`` -> ``exe``."""
    compiler = tool(cc, "clang-14" if cc == "clang" else "gcc")
    cmd = [compiler, *flags, "-I", str(tree / "include"), "-I", str(tree / "src")]
    for inc in include:
        cmd += ["-I", str(inc)]
    cmd += [*library_sources(tree), *map(str, sources), "-o", str(exe), *libs]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(f"compiling {exe.name} failed:\n{' '.join(cmd)}\n{proc.stdout}{proc.stderr}"[-8000:])
    return exe
