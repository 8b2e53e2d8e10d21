"""Render the C target and compile programs against it: the one helper every C test, bench/bench_c.py and
scripts/fuzz-c build with (tests/ctarget.py builds the corpus runners on it).

A missing tool or library is a failure naming its Debian package, never a skip.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
C_DIR = ROOT / "tests" / "c"
SPEC_091_EXT = ROOT / "spec" / "amqp0-9-1.extended.xml"
#: adds the 4 methods librabbitmq implements that the extended spec lacks (connection.blocked/unblocked,
#: access.request/request-ok), so the interop covers all of librabbitmq's methods
LIBRABBITMQ_EXTRAS = ROOT / "tests" / "data" / "librabbitmq-extras.xml"
#: the prefix the programs here are written for (librabbitmq owns "amqp_")
PREFIX = "ag"
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
WARN = ["-std=c99", "-Wall", "-Wextra", "-Werror"]


class BuildError(AssertionError):
    pass


#: Debian package of each tool the C tests run
PACKAGES = {"gcc": "gcc", "clang": "clang", "clang-format": "clang-format", "cmake": "cmake",
            "pkg-config": "pkg-config", "make": "make", "valgrind": "valgrind"}


def tool(name: str, package: str | None = None) -> str:
    """The path of ``name``, or a failure naming the Debian package that brings it."""
    exe = shutil.which(name)
    if exe is None:
        pkg = package or PACKAGES.get(name, name)
        raise BuildError(f"{name} is not installed (Debian package {pkg}; scripts/test-env installs it)")
    return exe


def librabbitmq() -> list[str]:
    """Compiler and linker flags of librabbitmq 0.11 (pkg-config), or a failure naming the package."""
    pkg = tool("pkg-config")
    proc = subprocess.run([pkg, "--cflags", "--libs", "librabbitmq"], capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not Path("/usr/include/amqp_framing.h").is_file():
        raise BuildError("librabbitmq is not installed (Debian package librabbitmq-dev; scripts/test-env installs it)")
    return proc.stdout.split()


def render_cli(out: Path, *, spec: Path | str | None = SPEC_091_EXT, prefix: str | None = PREFIX,
               options: tuple[str, ...] = (), overlays: tuple[Path, ...] = ()) -> subprocess.CompletedProcess[str]:
    """The real CLI, ``python -m amqgen render --lang c``; ``spec`` None is the bundled default and ``prefix``
    None the pack's own."""
    cmd = [sys.executable, "-m", "amqgen", "render", "--lang", "c", "--out", str(out)]
    if spec is not None:
        cmd += ["--spec", str(spec)]
    if prefix is not None:
        cmd += ["--option", f"prefix={prefix}"]
    for overlay in overlays:
        cmd += ["--overlay", str(overlay)]
    for opt in options:
        cmd += ["--option", opt]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)


def render(out: Path, *, prefix: str = PREFIX, spec: Path = SPEC_091_EXT, options: tuple[str, ...] = (),
           overlays: tuple[Path, ...] = ()) -> Path:
    """`amqgen render --lang c` into ``out``, or a failure with render's message; returns ``out``."""
    proc = render_cli(out, spec=spec, prefix=prefix, options=options, overlays=overlays)
    if proc.returncode != 0:
        raise BuildError(f"amqgen render --lang c failed: {proc.stderr.strip()}")
    return out


def library_sources(tree: Path) -> list[str]:
    return sorted(str(p) for p in (tree / "src").glob("*.c"))


def compile_cli(cc: str, tree: Path, sources: list[Path | str], exe: Path, flags: tuple[str, ...] | list[str] = (),
                *, libs: tuple[str, ...] = (), include: tuple[Path, ...] = (),
                source_flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """The generated library's sources + ``sources`` -> ``exe``, each source compiled on its own (``source_flags``
    and ``include`` only for ``sources``: a libFuzzer target's -DFUZZ_X), then linked; the first failure, or the link, as it is.

    The library's objects are kept by content (objects()), so the many programs the tests build on one tree with
    one set of flags compile the library once."""
    cmd = [tool(cc), *flags, "-I", str(tree / "include"), "-I", str(tree / "src")]
    objs, failed = objects(cmd, library_sources(tree), tree=tree)
    if failed is not None:
        return failed
    mine = [*cmd, *source_flags]
    for inc in include:
        mine += ["-I", str(inc)]
    own, failed = objects(mine, [str(s) for s in sources], work=exe.parent)
    if failed is not None:
        return failed
    link = [tool(cc), *flags, *objs, *own, "-o", str(exe), *libs]
    return subprocess.run(link, capture_output=True, text=True, check=False)


_OBJECT_LOCK = threading.Lock()
_DIR_LOCKS: dict[str, threading.Lock] = {}
_OBJECT_ROOT: list[Path] = []  # made on first use: $AMQGEN_TEST_OBJECTS (a session's folder) or a temporary one


def _object_root() -> Path:
    with _OBJECT_LOCK:
        if not _OBJECT_ROOT:
            env = os.environ.get("AMQGEN_TEST_OBJECTS")
            root = Path(env) if env else Path(tempfile.mkdtemp(prefix="amqgen-c-objects-"))
            if not env:
                atexit.register(shutil.rmtree, root, True)
            root.mkdir(parents=True, exist_ok=True)
            _OBJECT_ROOT.append(root)
        return _OBJECT_ROOT[0]


def objects(compile_cmd: list[str], sources: list[str], *, tree: Path | None = None,
            work: Path | None = None) -> tuple[list[str], subprocess.CompletedProcess[str] | None]:
    """Each source compiled with ``compile_cmd`` + ``-c`` (two at a time); (object paths, first failure or None).

    With ``tree`` (the library's sources), objects are named by the command (the tree's path left out), the
    tree's headers and each source's bytes, and reused by any later call with the same three: the tests render
    the same spec into many folders and compile the library with the same flags in several modules (a tree
    copied and edited is new content, compiled anew). Without, they go to a fresh folder in ``work``."""
    keep = tree is not None
    if tree is not None:
        h = hashlib.sha256("\0".join(compile_cmd).replace(str(tree), "<tree>").encode())
        for hdr in sorted(tree.rglob("*.h")):
            h.update(hdr.relative_to(tree).as_posix().encode() + b"\0" + hdr.read_bytes())
        out_dir = _object_root() / h.hexdigest()[:32]
    else:
        out_dir = Path(tempfile.mkdtemp(prefix=".objs-", dir=work))
    out_dir.mkdir(parents=True, exist_ok=True)

    def one(src: str) -> tuple[str, subprocess.CompletedProcess[str] | None]:
        digest = hashlib.sha256(Path(src).read_bytes()).hexdigest()[:16]
        obj = out_dir / f"{Path(src).stem}-{digest}.o"
        if keep and obj.is_file():
            return str(obj), None
        tmp = obj.with_name(f".{obj.name}.{threading.get_ident()}.tmp")
        proc = subprocess.run([*compile_cmd, "-c", src, "-o", str(tmp)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            return str(obj), proc
        os.replace(tmp, obj)
        return str(obj), None

    # one build of a set of objects at a time: a second caller waits, then finds them made
    with _OBJECT_LOCK:
        lock = _DIR_LOCKS.setdefault(str(out_dir), threading.Lock())
    with lock, ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(one, sources))
    failed = next((p for _, p in done if p is not None), None)
    return [o for o, _ in done], failed


def compile_program(tree: Path, sources: list[Path | str], exe: Path, *, cc: str = "clang",
                    flags: tuple[str, ...] = (), libs: tuple[str, ...] = (), include: tuple[Path, ...] = (),
                    source_flags: tuple[str, ...] = ()) -> Path:
    """As compile_cli, but a failed build fails with the command and the compiler's output."""
    proc = compile_cli(cc, tree, sources, exe, flags, libs=libs, include=include, source_flags=source_flags)
    if proc.returncode != 0:
        raise BuildError(f"compiling {exe.name} failed:\n{' '.join(proc.args)}\n{proc.stdout}{proc.stderr}"[-8000:])
    return exe


# -- fuzz targets (--option fuzz=1) ----------------------------------------------------------------
FUZZ_FLAGS = ["-std=c99", "-g", "-O1", "-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=all",
              "-fno-omit-frame-pointer"]


def fuzz_targets(tree: Path, prefix: str = PREFIX) -> list[str]:
    """The targets the rendered fuzz file defines: frame, method, table, <class>_properties..."""
    import re

    text = (tree / "fuzz" / f"{prefix}_fuzz.c").read_text()
    found = [t.lower() for t in re.findall(r"defined\(FUZZ_(\w+)\)", text)]
    if not found:
        raise BuildError(f"{tree}/fuzz/{prefix}_fuzz.c defines no FUZZ_ targets")
    return found


def build_fuzz_target(tree: Path, target: str, out: Path, prefix: str = PREFIX) -> Path:
    """One libFuzzer binary (ASan + UBSan, stops on the first report) for ``target``."""
    return compile_program(tree, [tree / "fuzz" / f"{prefix}_fuzz.c"], out, flags=tuple(FUZZ_FLAGS),
                           source_flags=(f"-DFUZZ_{target.upper()}",))


def build_engine_target(tree: Path, out: Path) -> Path:
    """tests/c/fuzz_engine.c (the engine's receive path past the handshake, client role) as a libFuzzer binary;
    its seeds come from tests/c/engine_seeds.py."""
    return compile_program(tree, [C_DIR / "fuzz_engine.c"], out, flags=tuple(FUZZ_FLAGS))


def build_engine_server_target(tree: Path, out: Path) -> Path:
    """tests/c/fuzz_engine_server.c (the same, server role) as a libFuzzer binary; seeds: tests/c/engine_seeds.py
    ``write_server``."""
    return compile_program(tree, [C_DIR / "fuzz_engine_server.c"], out, flags=tuple(FUZZ_FLAGS))


def build_engine_contract_target(tree: Path, out: Path) -> Path:
    """tests/c/fuzz_engine_contract.c (the engine through its header's contract alone: chunks freed when the header
    says they may be, storage grown and moved) as a libFuzzer binary; seeds: tests/c/engine_seeds.py
    ``write_contract``."""
    return compile_program(tree, [C_DIR / "fuzz_engine_contract.c"], out, flags=tuple(FUZZ_FLAGS))


def write_seeds(tree: Path, target: str, corpus: Path, work: Path, prefix: str = PREFIX) -> int:
    """The corpus's seeds for ``target`` into ``corpus`` (created); returns how many."""
    exe = work / f"{prefix}_seeds"
    if not exe.exists():
        cc = tool("clang")
        proc = subprocess.run([cc, "-std=c99", "-O1", str(tree / "fuzz" / f"{prefix}_seeds.c"), "-o", str(exe)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError(f"compiling the seed writer failed:\n{proc.stderr}"[-4000:])
    corpus.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([str(exe), target, str(corpus)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(f"seeds {target}: {proc.stderr.strip()}")
    return int(proc.stdout.split()[0])


def build_diff_target(tree: Path, out: Path, work: Path, spec: Path = SPEC_091_EXT) -> Path:
    """tests/c/fuzz_diff.c (ours against librabbitmq on the same octets) as a libFuzzer binary."""
    import gen_interop

    source, _ = gen_interop.generate_diff(spec, PREFIX)
    (work / "fuzz_diff_methods.c").write_text(source, encoding="utf-8")
    return compile_program(tree, [C_DIR / "fuzz_diff.c"], out, flags=tuple(FUZZ_FLAGS),
                           source_flags=("-Wno-unused-function",),
                           libs=tuple(librabbitmq()), include=(work, C_DIR))


def write_diff_seeds(tree: Path, corpus: Path, work: Path) -> int:
    """The method, basic-properties, table and frame seeds, each behind its selector octet (0, 1, 2, 3; the
    frame target's two control octets dropped)."""
    n = 0
    for target, selector in (("method", b"\x00"), ("basic_properties", b"\x01"), ("table", b"\x02"),
                             ("frame", b"\x03")):
        tmp = work / f"diff-seeds-{target}"
        write_seeds(tree, target, tmp, work)
        corpus.mkdir(parents=True, exist_ok=True)
        for p in sorted(tmp.iterdir()):
            data = p.read_bytes()
            (corpus / f"{target}-{p.name}").write_bytes(selector + (data[2:] if target == "frame" else data))
            n += 1
    return n
