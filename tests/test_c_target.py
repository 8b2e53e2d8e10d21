"""The C target across every spec the Python and Java targets cover (tests/javatarget.py's cases), in both
table dialects.

Every rendering (with the conformance tests option) compiles with gcc and clang under
``-std=c99 -Wall -Wextra -Wpedantic -Wconversion -Wshadow -Werror``; its generated runner passes the whole
``amqgen vectors`` corpus (expected octets from amqgen/refcodec.py, decoded values compared with text computed
from the corpus's values) and round trips of every method and properties class, also under AddressSanitizer
and UndefinedBehaviorSanitizer. The output is clang-format clean and deterministic, every file names its
generator and spec, CMake builds and installs it and a program links it through pkg-config, the fuzz targets
build with libFuzzer and run a bounded slice, and bad options fail with one line and exit 2.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ctarget import DIALECTS, PREFIX, SANITIZE, STRICT, Build, build_all, compile_c, render, run, tool
from javatarget import Case, cases
from pytarget import ROOT

from amqgen import __version__
from amqgen import vectors as vectors_module
from amqgen.lower import load_spec

CASES = cases()
IDS = [c.key for c in CASES]
CLANG_FORMAT_STYLE = "{BasedOnStyle: LLVM, ColumnLimit: 100, SortIncludes: false}"  # templates/c/pack.toml


@pytest.fixture(scope="module")
def c_build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    return build_all(tmp_path_factory.mktemp("c"))


def expected_count(case: Case, dialect: str) -> int:
    """Checks the runner makes: one per corpus case (and per whole-message frame case), two round trips per
    method and per properties class."""
    spec = load_spec(case.path)
    doc = vectors_module.corpus(spec, dialect)
    messages = sum(1 for f in doc["frames"] if "message" in f)
    corpus = sum(len(doc[k]) for k in ("methods", "properties", "frames", "tables", "malformed")) + messages
    return corpus + 2 * len(spec.methods) + 2 * len(spec.content_classes)


def test_every_rendering_compiles_strict_with_gcc_and_clang(c_build: Build) -> None:
    assert not c_build.errors, "\n".join(c_build.errors)
    assert len(c_build.exes) == len(CASES) * len(DIALECTS) * 3


@pytest.mark.parametrize("kind", ["gcc", "clang", "asan"])
@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_generated_tests_pass(c_build: Build, case: Case, dialect: str, kind: str) -> None:
    exe = c_build.exes.get((case.key, dialect, kind))
    assert exe is not None, "did not compile:\n" + "\n".join(c_build.errors)
    proc = run(exe)
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0 and re.fullmatch(r"\d+ passed, 0 failed", last), (proc.stdout + proc.stderr)[-4000:]
    assert int(last.split()[0]) == expected_count(case, dialect)


def test_runner_fails_on_a_wrong_decoder(c_build: Build, tmp_path: Path) -> None:
    """The runner is not vacuous: a decoder reading a signed 16-bit table value wrongly, and one that takes
    the second property's flag for the first, each make it fail with a non-zero exit."""
    tree = c_build.trees[("shared-0-9-1-extended", "rabbitmq")]
    mutants = [("tables", "(int64_t)x - 0x10000", "(int64_t)x - 0x1000"),
               ("properties", "if (w & 0x4000u)", "if (w & 0x2000u)")]
    for name, old, new in mutants:
        mutant = tmp_path / name
        subprocess.run(["cp", "-r", str(tree), str(mutant)], check=True)
        src = mutant / "src" / f"{PREFIX}_{name}.c"
        text = src.read_text()
        assert old in text
        src.write_text(text.replace(old, new, 1))
        exe = tmp_path / f"{name}.bin"
        proc = compile_c("gcc", mutant, exe, ["-std=c99"])
        assert proc.returncode == 0, proc.stderr
        out = run(exe)
        assert out.returncode == 1 and re.search(r"\d+ passed, [1-9]\d* failed$", out.stdout.strip()), out.stdout[-2000:]


def test_clang_format_clean(c_build: Build) -> None:
    exe = tool("clang-format")
    files = sorted(str(p) for t in c_build.trees.values() for p in t.rglob("*") if p.suffix in (".c", ".h"))
    proc = subprocess.run([exe, f"--style={CLANG_FORMAT_STYLE}", "--dry-run", "-Werror", *files],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_file_names_its_generator_and_spec(c_build: Build, case: Case) -> None:
    digest = hashlib.sha256(case.path.read_bytes()).hexdigest()
    tree = c_build.trees[(case.key, "rabbitmq")]
    files = sorted(p for p in tree.rglob("*") if p.is_file() and not p.name.startswith("."))
    # header, internal header, 7 sources, CMakeLists.txt, .pc.in, 4 test files
    assert len(files) == 15, files
    for f in files:
        head = f.read_text(encoding="utf-8")[:3000]
        assert f"amqgen {__version__}" in head and case.path.name in head and digest in head, f


def test_rendering_is_deterministic(c_build: Build, tmp_path: Path) -> None:
    case = CASES[0]
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        proc = render(case, out, "tests=1", "fuzz=1", "prefix=ag", "dialect=qpid")
        assert proc.returncode == 0, proc.stderr

    def tree(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    assert tree(first) == tree(second)
    assert "include/ag.h" in tree(first)


@pytest.mark.parametrize(("option", "message"), [
    ("prefix=9lives", "prefix"), ("prefix=a-b", "prefix"), ("prefix=", "prefix"), ("dialect=amqp", "dialect"),
    ("tests=maybe", "tests"),
])
def test_bad_options_fail_with_one_line(tmp_path: Path, option: str, message: str) -> None:
    proc = render(CASES[0], tmp_path / "out", option)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "spec warnings" not in ln]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_cmake_build_install_and_pkg_config(c_build: Build, tmp_path: Path) -> None:
    cmake, pkg = tool("cmake"), tool("pkg-config")
    src = c_build.trees[("shared-0-9-1-extended", "rabbitmq")]
    build, prefix = tmp_path / "build", tmp_path / "prefix"
    for cmd in ([cmake, "-S", str(src), "-B", str(build), f"-DCMAKE_INSTALL_PREFIX={prefix}",
                 "-DCMAKE_C_FLAGS=" + " ".join(STRICT[1:])],
                [cmake, "--build", str(build), "-j", "2"],
                [cmake, "--install", str(build)]):
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    libdir = next(p.parent for p in prefix.rglob(f"lib{PREFIX}.a"))
    assert list(libdir.glob(f"lib{PREFIX}.so*")), "no shared library installed"
    program = tmp_path / "main.c"
    program.write_text(
        f'#include <stdio.h>\n#include <string.h>\n#include "{PREFIX}.h"\n'
        "int main(void) {\n"
        "  uint8_t buf[256]; size_t n = 0; amqpc_method_t m, d; memset(&m, 0, sizeof m);\n"
        "  m.id = AMQPC_BASIC_PUBLISH; m.u.basic_publish.routing_key.bytes = (const uint8_t *)\"rk\";\n"
        "  m.u.basic_publish.routing_key.len = 2; m.u.basic_publish.mandatory = true;\n"
        "  if (amqpc_method_encode(&m, buf, sizeof buf, &n) != AMQPC_OK) return 1;\n"
        "  if (amqpc_method_decode(buf, n, &d) != AMQPC_OK || !d.u.basic_publish.mandatory) return 1;\n"
        "  printf(\"%s %u %s\\n\", amqpc_method_name(d.id), (unsigned)n, amqpc_reply_name(AMQPC_NOT_FOUND));\n"
        "  return 0;\n}\n")
    env = {**os.environ, "PKG_CONFIG_PATH": str(libdir / "pkgconfig")}
    flags = subprocess.run([pkg, "--cflags", "--libs", "--static", PREFIX], capture_output=True, text=True, env=env,
                           check=False)
    assert flags.returncode == 0, flags.stderr
    exe = tmp_path / "main"
    proc = subprocess.run([tool("gcc"), *STRICT, str(program), "-o", str(exe), *flags.stdout.split(),
                           f"-Wl,-rpath,{libdir}"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    out = run(exe)
    # basic.publish: class and method ids (4), ticket (2), exchange "" (1), routing key "rk" (3), bits (1)
    assert out.returncode == 0 and out.stdout == "basic.publish 11 not-found\n", out.stdout + out.stderr


def test_fuzz_targets_build_and_run_a_bounded_slice(tmp_path: Path) -> None:
    """Every entry point of the bundled 0-9 spec (four content classes), seeded from the corpus."""
    case = CASES[0]
    tree = tmp_path / "tree"
    proc = render(case, tree, "fuzz=1")
    assert proc.returncode == 0, proc.stderr
    seeds = tmp_path / "seeds"
    proc = subprocess.run([tool("gcc"), *STRICT, str(tree / "fuzz" / f"{PREFIX}_seeds.c"), "-o", str(seeds)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    spec = load_spec(case.path)
    targets = ["frame", "method", "table"] + [f"{c.name}_properties" for c in spec.content_classes]
    from concurrent.futures import ThreadPoolExecutor

    def one(target: str) -> str:
        exe = tmp_path / f"fuzz_{target}"
        build = compile_c("clang", tree, exe, ["-std=c99", "-Wall", "-Wextra", "-Wconversion", "-Werror",
                                                "-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=all",
                                                "-O1", "-g", f"-DFUZZ_{target.upper()}"], tests=False,
                          extra=(str(tree / "fuzz" / f"{PREFIX}_fuzz.c"),))
        if build.returncode != 0:
            return f"{target}: build failed: {build.stderr[-2000:]}"
        corpus = tmp_path / f"corpus_{target}"
        corpus.mkdir()
        made = run(seeds, target, str(corpus))
        if made.returncode != 0:
            return f"{target}: seeds failed: {made.stderr}"
        out = subprocess.run([str(exe), "-runs=20000", "-seed=1", str(corpus)], capture_output=True, text=True,
                             timeout=300, check=False)
        if out.returncode != 0 or "Done 20000 runs" not in out.stderr:
            return f"{target}: {out.stderr[-3000:]}"
        return ""

    with ThreadPoolExecutor(max_workers=2) as pool:
        problems = [p for p in pool.map(one, targets) if p]
    assert not problems, "\n".join(problems)


def test_cmake_example_builds_and_runs(tmp_path: Path) -> None:
    """examples/cmake: amqgen as a build step (add_custom_command with --depfile); a second build renders nothing."""
    cmake = tool("cmake")
    build = tmp_path / "build"
    amqgen = Path(sys.executable).parent / "amqgen"
    command = str(amqgen) if amqgen.is_file() else f"{sys.executable} -m amqgen"
    for cmd in ([cmake, "-S", str(ROOT / "examples" / "cmake"), "-B", str(build), f"-DAMQGEN_COMMAND={command}"],
                [cmake, "--build", str(build)]):
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "amqgen: rendering" in proc.stdout
    out = run(build / "example")
    # method frame, header frame, two body frames (4088 + 912 octets)
    assert out.returncode == 0 and out.stdout == "4 frames, 5074 octets, body 5000 octets\n", out.stdout + out.stderr
    again = subprocess.run([cmake, "--build", str(build)], capture_output=True, text=True, check=False)
    assert again.returncode == 0 and "amqgen: rendering" not in again.stdout, again.stdout
