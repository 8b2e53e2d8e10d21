"""The C target across every spec the Python and Java targets cover (tests/javatarget.py's cases), in both
table dialects.

Every rendering (with the conformance tests option) compiles with gcc and clang under
``-std=c99 -Wall -Wextra -Wpedantic -Wconversion -Wshadow -Werror``; its generated runner passes the whole
``amqgen vectors`` corpus (expected octets from amqgen/amqp0/refcodec.py, decoded values compared with text computed
from the corpus's values) and round trips of every method and properties class, also under AddressSanitizer
and UndefinedBehaviorSanitizer. The output is clang-format clean and deterministic, every file names its
generator and spec, CMake builds and installs it and a program links it through pkg-config, the fuzz targets
build with libFuzzer and run a bounded slice, and bad options fail with one line and exit 2.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from ctarget import DIALECTS, KINDS, PREFIX, SANITIZE, STRICT, Build, build_all, builds, compile_c, render, run, tool
from javatarget import Case, cases
from pytarget import ROOT

from amqgen import __version__
from amqgen.amqp0 import vectors as vectors_module
from amqgen.amqp0.lower import load_spec
from amqgen.amqp0.wire import TYPE_CODES

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
    corpus = sum(len(doc[k]) for k in ("methods", "properties", "frames", "tables", "malformed", "accepted")) + messages
    return corpus + 2 * len(spec.methods) + 2 * len(spec.content_classes)


def test_every_rendering_compiles_strict_with_gcc_and_clang(c_build: Build) -> None:
    assert not c_build.errors, "\n".join(c_build.errors)
    assert sorted(c_build.exes) == sorted(builds(IDS))


@pytest.mark.parametrize("case,dialect,kind", [(c, d, k) for c in CASES for d in DIALECTS for k in KINDS
                                               if (c.key, d, k) in builds(IDS)],
                         ids=[f"{c}-{d}-{k}" for c, d, k in builds(IDS)])
def test_generated_tests_pass(c_build: Build, case: Case, dialect: str, kind: str) -> None:
    exe = c_build.exes.get((case.key, dialect, kind))
    assert exe is not None, "did not compile:\n" + "\n".join(c_build.errors)
    proc = run(exe)
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0 and re.fullmatch(r"\d+ passed, 0 failed", last), (proc.stdout + proc.stderr)[-4000:]
    assert int(last.split()[0]) == expected_count(case, dialect)


def test_runner_fails_on_a_wrong_decoder(c_build: Build, tmp_path: Path) -> None:
    """The runner is not vacuous: a decoder reading a signed 16-bit table value wrongly, one that drops
    the first property of every flag word, and one that leaves absent properties' members as they were
    (the runner decodes into a struct filled with 0xA5) each make it fail with a non-zero exit."""
    tree = c_build.trees[("bundled-0-9-1-extended", "rabbitmq")]
    mutants = [("tables", "(int64_t)x - 0x10000", "(int64_t)x - 0x1000"),
               ("properties", "(rev16(w) & 0x7FFFu)", "(rev16(w) & 0x7FFEu)"),
               ("properties", "memset(p, 0, sizeof *p);", "")]
    for no, (name, old, new) in enumerate(mutants):
        mutant = tmp_path / f"{name}-{no}"
        subprocess.run(["cp", "-r", str(tree), str(mutant)], check=True)
        src = mutant / "src" / f"{PREFIX}_{name}.c"
        text = src.read_text()
        assert old in text
        src.write_text(text.replace(old, new, 1))
        exe = tmp_path / f"{name}-{no}.bin"
        proc = compile_c("gcc", mutant, exe, ["-std=c99"])
        assert proc.returncode == 0, proc.stderr
        out = run(exe)
        assert out.returncode == 1 and re.search(r"\d+ passed, [1-9]\d* failed$", out.stdout.strip()), out.stdout[-2000:]


def test_clang_format_clean(c_build: Build) -> None:
    exe = tool("clang-format")
    """Every library file of every tree, and the (large, similar) test files of one tree per dialect."""
    files = sorted(str(p) for t in c_build.trees.values() for d in ("include", "src") for p in (t / d).iterdir())
    files += sorted(str(p) for d in DIALECTS for p in (c_build.trees[(CASES[0].key, d)] / "tests").iterdir())
    proc = subprocess.run([exe, f"--style={CLANG_FORMAT_STYLE}", "--dry-run", "-Werror", *files],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_file_names_its_generator_and_spec(c_build: Build, case: Case) -> None:
    digest = hashlib.sha256(case.path.read_bytes()).hexdigest()
    tree = c_build.trees[(case.key, "rabbitmq")]
    files = sorted(p for p in tree.rglob("*") if p.is_file() and not p.name.startswith("."))
    # header, engine header, internal header, 9 sources (engine.c), client header and source, CMakeLists.txt,
    # .pc.in, README.md, 4 test files
    assert len(files) == 21, files
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


def test_a_spec_name_taking_a_library_identifier_fails_with_one_line(tmp_path: Path) -> None:
    """A spec constant named "ok" would be AMQPC_OK, the library's status code: one error line, exit 2."""
    spec = (tmp_path / "ok.xml")
    text = (ROOT / "spec" / "amqp0-9-1.xml").read_text(encoding="utf-8")
    spec.write_text(text.replace('<constant name="reply-success"', '<constant name="ok" value="7"/>'
                                 '<constant name="reply-success"', 1), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "amqgen", "render", "--lang", "c", "--spec", str(spec), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT, check=False)
    lines = [ln for ln in proc.stderr.splitlines() if "spec warnings" not in ln]
    assert proc.returncode == 2 and len(lines) == 1 and "AMQPC_OK" in lines[0], proc.stderr


def test_cmake_build_install_and_pkg_config(c_build: Build, tmp_path: Path) -> None:
    cmake, pkg = tool("cmake"), tool("pkg-config")
    src = c_build.trees[("bundled-0-9-1-extended", "rabbitmq")]
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


@pytest.mark.slow
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
                                                "-O0", "-g"], tests=False,
                          extra=(str(tree / "fuzz" / f"{PREFIX}_fuzz.c"),), source_flags=(f"-DFUZZ_{target.upper()}",))
        if build.returncode != 0:
            return f"{target}: build failed: {build.stderr[-2000:]}"
        corpus = tmp_path / f"corpus_{target}"
        corpus.mkdir()
        made = run(seeds, target, str(corpus))
        if made.returncode != 0:
            return f"{target}: seeds failed: {made.stderr}"
        out = subprocess.run([str(exe), "-runs=20000", "-seed=1", f"-artifact_prefix={tmp_path}/crash-{target}-",
                              str(corpus)], capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
        if out.returncode != 0 or "Done 20000 runs" not in out.stderr:
            return f"{target}: {out.stderr[-3000:]}"
        return ""

    with ThreadPoolExecutor(max_workers=2) as pool:
        problems = [p for p in pool.map(one, targets) if p]
    assert not problems, "\n".join(problems)


@pytest.mark.slow
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


# -- the C and Python targets agree on every corpus case -------------------------------------------------------
# The C runner's --dump prints the canonical text of what C decoded (or the error's name); the text is parsed
# back here and compared value by value with what the generated Python package decodes from the same octets.

def _parse_typed(s: str, i: int, dialect: str) -> tuple[tuple[str, Any], int]:
    code = s[i]
    i += 1
    kinds = {t.code: t for t in TYPE_CODES[dialect]}
    kind = kinds[code].kind
    if kind == "table":
        entries, i = _parse_table(s, i, dialect)
        return ("F", entries), i
    if kind == "array":
        assert s[i] == "["
        i += 1
        items: list[tuple[str, Any]] = []
        while s[i] != "]":
            item, i = _parse_typed(s, i, dialect)
            items.append(item)
            if s[i] == ",":
                i += 1
        return ("A", items), i + 1
    found = re.compile(r"-?\d+,-?\d+" if kind == "decimal" else r"-?[0-9a-f]*").match(s, i)
    assert found is not None, s[i:i + 20]
    text = found.group(0)
    i += len(text)
    if kind == "bool":
        return (code, text == "1"), i
    if kind in ("int", "timestamp"):
        return (code, int(text)), i
    if kind == "decimal":
        scale, unscaled = text.split(",")
        return (code, (int(scale), int(unscaled))), i
    if kind == "void":
        return (code, None), i
    return (code, bytes.fromhex(text)), i  # floats as their bit pattern's octets, strings as octets


def _parse_table(s: str, i: int, dialect: str) -> tuple[list[tuple[str, tuple[str, Any]]], int]:
    assert s[i] == "{", s[i:i + 20]
    i += 1
    out: list[tuple[str, tuple[str, Any]]] = []
    while s[i] != "}":
        colon = s.index(":", i)
        key = bytes.fromhex(s[i:colon]).decode("utf-8")
        value, i = _parse_typed(s, colon + 1, dialect)
        out.append((key, value))
        if s[i] == ",":
            i += 1
    return out, i + 1


def _same_typed(tv: tuple[str, Any], got: Any, table: Any) -> bool:
    code, value = tv
    if code == "t":
        return got is value
    if code in "fd":
        return type(got) is float and struct.pack(">f" if code == "f" else ">d", got) == value
    if code == "D":
        want = Decimal(value[1]).scaleb(-value[0])
        return type(got) is Decimal and got == want and got.as_tuple().exponent == -value[0]
    if code in "Ssx" and type(value) is bytes:
        return (got.encode() if type(got) is str else got) == value
    if code == "T":
        if isinstance(got, table.Typed):
            return tuple(got) == ("T", value)
        return type(got) is datetime and got == datetime.fromtimestamp(value, UTC)
    if code == "F":
        return _same_table(value, got, table)
    if code == "A":
        return type(got) is list and len(got) == len(value) and all(
            _same_typed(t, g, table) for t, g in zip(value, got, strict=True))
    if code == "V":
        return got is None
    return type(got) is int and got == value


def _same_table(entries: list[tuple[str, Any]], got: Any, table: Any) -> bool:
    got = {} if got is None else got
    return type(got) is dict and list(got) == [k for k, _ in entries] and all(
        _same_typed(tv, got[k], table) for k, tv in entries)


def _same_field(wire: str, text: str, got: Any, dialect: str, table: Any) -> bool:
    if wire == "bit":
        return got is (text == "1")
    if wire == "table":
        return _same_table(_parse_table(text, 0, dialect)[0], got, table)
    if wire in ("shortstr", "longstr"):
        return (got.encode() if type(got) is str else bytes(got)) == bytes.fromhex(text)
    return type(got) is int and got == int(text)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_c_and_python_targets_agree_on_every_corpus_case(c_build: Build, amqp091: Any, dialect: str) -> None:
    import importlib

    from amqgen.naming import Naming

    pkg = amqp091.__name__
    methods, properties, table, exceptions = (importlib.import_module(f"{pkg}.{m}")
                                              for m in ("methods", "properties", "table", "exceptions"))
    case = next(c for c in CASES if c.key == "bundled-0-9-1-extended")
    spec = load_spec(case.path)
    doc = vectors_module.corpus(spec, dialect)
    exe = c_build.exes[(case.key, dialect, "gcc")]
    proc = run(exe, "--dump")
    assert proc.returncode == 0, proc.stdout[-2000:]
    dumped = dict(line.split("\t", 1) for line in proc.stdout.splitlines())
    member = Naming("python").member
    kinds = {"truncated": "TruncatedError", "trailing-data": "TrailingDataError", "frame-end": "FrameEndError",
             "frame-size": "FrameSizeError", "frame-type": "FrameTypeError", "unknown-class": "UnknownClassError",
             "unknown-method": "UnknownMethodError", "invalid-utf8": "InvalidUTF8Error",
             "property-flags": "PropertyFlagsError", "table": "TableError", "table-depth": "TableDepthError"}
    compared = 0
    table.set_default_dialect(dialect)
    try:
        def same_method(cid: str, text: str, got: Any) -> None:
            m = spec.method_by_name[got.NAME]
            assert text.startswith(m.full_name + "(") and text.endswith(")"), (cid, text)
            parts = text[len(m.full_name) + 1:-1].split(";") if m.fields else []
            assert len(parts) == len(m.fields), cid
            for f, part in zip(m.fields, parts, strict=True):
                assert _same_field(f.type, part, getattr(got, member(f.name)), dialect, table), (cid, f.name)

        def same_properties(cid: str, text: str, class_id: int, got: Any) -> None:
            cls = spec.class_by_index[class_id]
            inner = text[len(cls.name) + 1:-1]
            assert text == f"{cls.name}({inner})", (cid, text)
            present = dict(p.split("=", 1) for p in inner.split(";")) if inner else {}
            for i, f in enumerate(cls.properties):
                have = getattr(got, member(f.name))
                if str(i) not in present:
                    assert have is None, (cid, f.name)
                else:
                    assert _same_field(f.type, present[str(i)], have, dialect, table), (cid, f.name)

        for c in doc["methods"]:
            same_method(c["id"], dumped[c["id"]], methods.decode_method(bytes.fromhex(c["bytes"])))
            compared += 1
        for c in doc["properties"]:
            data = bytes.fromhex(c["bytes"])
            body_size, rest = dumped[c["id"]].split(":", 1)
            assert int(body_size) == int.from_bytes(data[4:12], "big")
            same_properties(c["id"], rest, c["class_id"],
                            properties.PROPERTIES[c["class_id"]].decode(data[12:]))
            compared += 1
        frames_mod = importlib.import_module(f"{pkg}.frames")
        for c in doc["frames"]:
            texts = dumped[c["id"]].split("|")
            got_frames = frames_mod.FrameReader(c["frame_max"]).feed(bytes.fromhex(c["bytes"]))
            assert len(texts) == len(got_frames), (c["id"], texts)
            for text, fr in zip(texts, got_frames, strict=True):
                kind = type(fr).__name__
                if text[0] == "A":
                    assert kind == "ProtocolHeaderFrame" and fr.header.hex() == text[1:], (c["id"], text)
                    continue
                head, _, rest = text.partition(":")
                assert int(head[1:]) == fr.channel, (c["id"], text)
                if text[0] == "M":
                    assert kind == "MethodFrame", (c["id"], kind)
                    same_method(c["id"], rest, fr.method)
                elif text[0] == "H":
                    assert kind == "HeaderFrame", (c["id"], kind)
                    body_size, props = rest.split(":", 1)
                    assert int(body_size) == fr.body_size, c["id"]
                    same_properties(c["id"], props, fr.class_id, fr.properties)
                elif text[0] == "B":
                    assert kind == "BodyFrame" and bytes(fr.payload).hex() == rest, (c["id"], text[:80])
                else:
                    assert text[0] == "8" and kind == "HeartbeatFrame", (c["id"], text)
            compared += 1
        for c in doc["tables"]:
            text = dumped[c["id"]]
            got, _ = table.decode_table(bytes.fromhex(c["bytes"]), 0, dialect) if c["kind"] == "table" else (None, 0)
            if c["kind"] == "table":
                assert _same_table(_parse_table(text, 0, dialect)[0], got, table), c["id"]
            else:
                items, _ = table.decode_array(bytes.fromhex(c["bytes"]), 0, dialect)
                assert _same_typed(_parse_typed("A" + text, 0, dialect)[0], items, table), c["id"]
            compared += 1
        for c in doc["malformed"]:
            data, frame_max = bytes.fromhex(c["bytes"]), c.get("frame_max", 0)
            try:
                if c["input"] == "method":
                    methods.decode_method(data)
                elif c["input"] == "properties":
                    importlib.import_module(f"{pkg}.frames").FrameReader(0).feed(
                        bytes((2, 0, 1)) + len(data).to_bytes(4, "big") + data + b"\xce")
                elif c["input"] == "frame":
                    importlib.import_module(f"{pkg}.frames").FrameReader(frame_max).feed(data)
                else:
                    _, end = table.decode_table(data, 0, dialect)
                    if end != len(data):
                        raise exceptions.TrailingDataError("trailing")
                py = "ok"
            except exceptions.DecodeError as e:
                py = type(e).__name__
            assert kinds.get(dumped[c["id"]]) == py, (c["id"], dumped[c["id"]], py)
            compared += 1
    finally:
        table.set_default_dialect("rabbitmq")
    assert compared == sum(len(doc[k]) for k in ("methods", "properties", "frames", "tables", "malformed"))


EDGES_C = r"""
#include <stdio.h>
#include <string.h>
#include "amqpc.h"
static int checks, failures;
#define CHECK(cond) do { checks++; if (!(cond)) { failures++; printf("failed line %d: %s\n", __LINE__, #cond); } } while (0)
int main(void) {
  static uint8_t buf[65536], storage[64];
  amqpc_frame_t f; amqpc_reader_t r; size_t used = 0, n = 0;
  /* frame_parse: what an incomplete frame needs, errors known from the header alone */
  CHECK(amqpc_frame_parse(buf, 0, 0, &f, &used) == AMQPC_INCOMPLETE && used == 7);
  const uint8_t head[] = {1, 0, 1, 0, 0, 0, 5};
  CHECK(amqpc_frame_parse(head, 2, 0, &f, &used) == AMQPC_INCOMPLETE && used == 7);
  CHECK(amqpc_frame_parse(head, 7, 0, &f, &used) == AMQPC_INCOMPLETE && used == 13);
  CHECK(amqpc_frame_parse(head, 7, 12, &f, &used) == AMQPC_ERR_FRAME_SIZE);
  CHECK(amqpc_frame_parse(head, 7, 13, &f, &used) == AMQPC_INCOMPLETE && used == 13);
  const uint8_t huge[] = {3, 0, 1, 0xff, 0xff, 0xff, 0xff};
  CHECK(amqpc_frame_parse(huge, 7, 0, &f, &used) == AMQPC_INCOMPLETE && used == (size_t)0xffffffffu + 8);
  CHECK(amqpc_frame_parse((const uint8_t *)"AM", 2, 0, &f, &used) == AMQPC_INCOMPLETE && used == 8);
  CHECK(amqpc_frame_parse((const uint8_t *)"AMQX", 4, 0, &f, &used) == AMQPC_ERR_FRAME_TYPE);
  const uint8_t hb[] = {8, 0, 1, 0, 0, 0, 0, 0xce};
  CHECK(amqpc_frame_parse(hb, 8, 0, &f, &used) == AMQPC_ERR_FRAME_TYPE);
  /* reader: a split frame larger than its storage (frame_max 0), and feeding too early */
  uint8_t body[40] = {3, 0, 1, 0, 0, 0, 32};
  body[39] = 0xce;
  amqpc_reader_init(&r, storage, 16, 0);
  amqpc_reader_feed(&r, body, 10);
  CHECK(amqpc_reader_next(&r, &f) == AMQPC_ERR_STORAGE); /* within frame_max: the storage is short */
  CHECK(amqpc_reader_next(&r, &f) == AMQPC_ERR_STORAGE);
  amqpc_reader_init(&r, storage, 16, 39);
  amqpc_reader_feed(&r, body, 10);
  CHECK(amqpc_reader_next(&r, &f) == AMQPC_ERR_FRAME_SIZE); /* over frame_max: the peer's fault */
  amqpc_reader_init(&r, storage, sizeof storage, 0);
  amqpc_reader_feed(&r, body, 40);
  CHECK(amqpc_reader_next(&r, &f) == AMQPC_OK && f.payload.len == 32 && f.payload.bytes == body + 7);
  CHECK(amqpc_reader_next(&r, &f) == AMQPC_INCOMPLETE);
  amqpc_reader_feed(&r, body, 40);
  amqpc_reader_feed(&r, body, 40);
  CHECK(amqpc_reader_next(&r, &f) == AMQPC_ERR_MISUSE);
  /* encoders: values the wire cannot carry, and every buffer too small */
  amqpc_method_t m; memset(&m, 0, sizeof m);
  m.id = AMQPC_BASIC_PUBLISH;
  m.u.basic_publish.routing_key.bytes = buf; m.u.basic_publish.routing_key.len = 256;
  CHECK(amqpc_method_encode(&m, buf + 1024, 4096, &n) == AMQPC_ERR_VALUE);
  m.u.basic_publish.routing_key.len = 255;
  CHECK(amqpc_method_encode(&m, buf + 1024, 4096, &n) == AMQPC_OK && n == 4 + 2 + 1 + 256 + 1);
  m.id = 0xffff0001u;
  CHECK(amqpc_method_encode(&m, buf + 1024, 4096, &n) == AMQPC_ERR_UNKNOWN_ID);
  amqpc_content_header_t h; memset(&h, 0, sizeof h);
  h.class_id = AMQPC_CLASS_BASIC;
  h.u.basic.flags = (uint64_t)1 << 14;
  CHECK(amqpc_content_header_encode(&h, buf, sizeof buf, &n) == AMQPC_ERR_UNKNOWN_ID);
  h.u.basic.flags = AMQPC_BASIC_DELIVERY_MODE_FLAG; h.u.basic.delivery_mode = 2;
  m.id = AMQPC_BASIC_PUBLISH; m.u.basic_publish.routing_key.len = 3;
  size_t whole = 0;
  CHECK(amqpc_message_encode(1, &m, &h, buf, 10000, 4096, buf + 20000, 40000, &whole) == AMQPC_OK);
  /* method frame 8+4+2+1+4+1, header frame 8+12+2+1, body frames of 4088, 4088 and 1824 octets */
  CHECK(whole == 20 + 23 + 3 * 8 + 10000);
  CHECK(h.body_size == 10000);
  for (size_t cap = 0; cap < whole; cap += 97)
    CHECK(amqpc_message_encode(1, &m, &h, buf, 10000, 4096, buf + 20000, cap, &n) == AMQPC_ERR_NO_SPACE);
  CHECK(amqpc_message_encode(1, &m, &h, buf, 10000, 8, buf + 20000, 40000, &n) == AMQPC_ERR_FRAME_MAX);
  CHECK(amqpc_message_encode(1, &m, &h, buf, 10000, 20, buf + 20000, 40000, &n) == AMQPC_ERR_FRAME_MAX);
  /* the table writer: misuse is reported by finish, nesting is bounded */
  amqpc_table_writer_t w; amqpc_table_t t; amqpc_field_value_t v; memset(&v, 0, sizeof v);
  v.type = 'I'; v.v.i = -1;
  amqpc_table_writer_init(&w, buf, 100); amqpc_table_put(&w, &v);
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_ERR_MISUSE);
  amqpc_array_writer_init(&w, buf, 100); amqpc_table_put_key(&w, AMQPC_LIT("k"));
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_ERR_MISUSE);
  amqpc_table_writer_init(&w, buf, 100); amqpc_table_put_key(&w, AMQPC_LIT("k")); amqpc_table_begin_array(&w);
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_ERR_MISUSE);
  amqpc_table_writer_init(&w, buf, 5); amqpc_table_put_key(&w, AMQPC_LIT("k")); amqpc_table_put(&w, &v);
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_ERR_NO_SPACE);
  amqpc_table_writer_init(&w, buf, 300); amqpc_table_put_key(&w, (amqpc_bytes_t){buf + 1024, 256});
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_ERR_VALUE);
  v.type = '?';
  amqpc_table_writer_init(&w, buf, 100); amqpc_table_put_key(&w, AMQPC_LIT("k")); amqpc_table_put(&w, &v);
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_ERR_VALUE);
  amqpc_array_writer_init(&w, buf, sizeof buf);
  for (int i = 1; i < 100; i++) amqpc_table_begin_array(&w);
  for (int i = 1; i < 100; i++) amqpc_table_end_array(&w);
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_OK && t.len == 99 * 5);
  CHECK(amqpc_array_validate((amqpc_array_t){t.bytes, t.len}) == AMQPC_OK);
  amqpc_array_writer_init(&w, buf, sizeof buf);
  for (int i = 1; i < 101; i++) amqpc_table_begin_array(&w);
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_ERR_VALUE);
  /* one-call entries: the octets written out here by hand, in a nested table too; misuse and no room are
     the errors put_key + put report; nothing is written past cap (tb: clear of what the checks below use) */
  uint8_t *tb = buf + 8192;
  static const uint8_t three[] = {2, 'a', 'b', 'S', 0, 0, 0, 3, 'x', 'y', 'z', 1, 't', 't', 1,
                                  1, 'i', 'I', 0xff, 0xff, 0xff, 0xfe};
  for (size_t cap = 0; cap <= sizeof three; cap++) {
    memset(tb, 0xAA, 64);
    amqpc_table_writer_init(&w, tb, cap);
    amqpc_table_add_str(&w, AMQPC_LIT("ab"), amqpc_cstring("xyz"));
    amqpc_table_add_bool(&w, amqpc_cstring("t"), true);
    amqpc_table_add_i32(&w, AMQPC_LIT("i"), -2);
    int st = amqpc_table_writer_finish(&w, &t);
    CHECK(st == (cap == sizeof three ? AMQPC_OK : AMQPC_ERR_NO_SPACE));
    CHECK(tb[cap] == 0xAA);
  }
  CHECK(t.len == sizeof three && memcmp(t.bytes, three, sizeof three) == 0);
  static const uint8_t nested[] = {1, 'n', 'F', 0, 0, 0, 10, 1, 'b', 't', 0, 0, 'S', 0, 0, 0, 0, 1, 'e', 'S', 0, 0, 0, 0};
  amqpc_table_writer_init(&w, tb, 100); amqpc_table_put_key(&w, AMQPC_LIT("n")); amqpc_table_begin_table(&w);
  amqpc_table_add_bool(&w, AMQPC_LIT("b"), false); amqpc_table_add_str(&w, amqpc_cstring(NULL), amqpc_cstring(NULL));
  amqpc_table_end_table(&w);
  amqpc_table_add_str(&w, AMQPC_LIT("e"), AMQPC_LIT(""));
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_OK && t.len == sizeof nested && memcmp(t.bytes, nested, t.len) == 0);
  amqpc_array_writer_init(&w, tb, 100); amqpc_table_add_bool(&w, AMQPC_LIT("k"), true);
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_ERR_MISUSE);
  amqpc_table_writer_init(&w, tb, 100); amqpc_table_put_key(&w, AMQPC_LIT("k")); amqpc_table_add_i32(&w, AMQPC_LIT("j"), 1);
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_ERR_MISUSE);
  amqpc_table_writer_init(&w, tb, 4096); amqpc_table_add_i32(&w, (amqpc_bytes_t){buf + 4096, 256}, 1);
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_ERR_VALUE);
  amqpc_table_writer_init(&w, tb, 4096); amqpc_table_add_i32(&w, (amqpc_bytes_t){buf + 4096, 255}, 1);
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_OK && t.len == 1 + 255 + 5);
  /* errors are sticky: the first is kept and nothing more is written */
  amqpc_table_writer_init(&w, tb, 8); amqpc_table_add_str(&w, AMQPC_LIT("k"), (amqpc_bytes_t){buf + 4096, 100});
  amqpc_table_add_bool(&w, AMQPC_LIT("b"), true);
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_ERR_NO_SPACE && w.pos == 0);
#if SIZE_MAX > 0xFFFFFFFFu
  amqpc_table_writer_init(&w, tb, 4096); amqpc_table_add_str(&w, AMQPC_LIT("k"), (amqpc_bytes_t){buf, (size_t)0x100000000u});
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_ERR_VALUE);
#endif
  amqpc_table_writer_init(&w, tb, 4096); amqpc_table_add_str(&w, AMQPC_LIT("k"), (amqpc_bytes_t){buf, SIZE_MAX});
  CHECK(amqpc_table_writer_finish(&w, &t) == AMQPC_ERR_VALUE);
  /* properties decoded into a reused struct (all present before, then garbage): every member of an absent
     property is zero afterwards, so none points into an earlier, possibly freed, input */
  amqpc_content_header_t d;
  h.u.basic.flags = 0x3fff; /* all 14 present */
  h.u.basic.content_type.bytes = buf; h.u.basic.content_type.len = 1;
  h.u.basic.headers.bytes = NULL; h.u.basic.headers.len = 0;
  h.u.basic.priority = 9; h.u.basic.timestamp = 7;
  CHECK(amqpc_content_header_encode(&h, buf + 30000, 1000, &n) == AMQPC_OK);
  CHECK(amqpc_content_header_decode(buf + 30000, n, &d) == AMQPC_OK && d.u.basic.flags == 0x3fff);
  const uint8_t sparse[] = {0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0x10, 0x00, 2}; /* delivery-mode 2 only */
  for (int garbage = 0; garbage < 2; garbage++) {
    if (garbage)
      memset(&d, 0xA5, sizeof d);
    CHECK(amqpc_content_header_decode(sparse, sizeof sparse, &d) == AMQPC_OK);
    const amqpc_basic_properties_t *q = &d.u.basic;
    CHECK(q->flags == AMQPC_BASIC_DELIVERY_MODE_FLAG && q->delivery_mode == 2 && d.body_size == 5);
    CHECK(q->priority == 0 && q->timestamp == 0);
    const amqpc_bytes_t *strs[] = {&q->content_type, &q->content_encoding, &q->correlation_id, &q->reply_to,
                                   &q->expiration, &q->message_id, &q->type, &q->user_id, &q->app_id,
                                   &q->reserved};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
      CHECK(strs[i]->bytes == NULL && strs[i]->len == 0);
    CHECK(q->headers.bytes == NULL && q->headers.len == 0);
  }
  /* UTF-8: overlongs, surrogates and code points past U+10FFFF are refused */
  CHECK(amqpc_utf8_valid((const uint8_t *)"\xc3\xa9\xe6\x9d\xb1\xf0\x9f\x90\x87", 9));
  CHECK(!amqpc_utf8_valid((const uint8_t *)"\xc0\xaf", 2));
  CHECK(!amqpc_utf8_valid((const uint8_t *)"\xe0\x80\xaf", 3));
  CHECK(!amqpc_utf8_valid((const uint8_t *)"\xed\xa0\x80", 3));
  CHECK(!amqpc_utf8_valid((const uint8_t *)"\xf4\x90\x80\x80", 4));
  CHECK(!amqpc_utf8_valid((const uint8_t *)"\xe6\x9d", 2));
  /* the all-ASCII fast path (words, overlapping ends, two words a round) sees every octet: one 0xFF
     anywhere in 1..80 octets is refused */
  uint8_t ascii[80];
  memset(ascii, 'a', sizeof ascii);
  for (size_t len = 1; len <= sizeof ascii; len++)
    for (size_t at = 0; at < len; at++) {
      ascii[at] = 0xff;
      CHECK(!amqpc_utf8_valid(ascii, len));
      ascii[at] = 'a';
    }
  CHECK(amqpc_utf8_valid(ascii, sizeof ascii));
  printf("%d checks, %d failed\n", checks, failures);
  return failures != 0;
}
"""


def test_frame_table_and_encoder_edges(tmp_path: Path) -> None:
    """Hand-built cases beyond the corpus: what frame_parse asks for, the reader's storage limit and misuse,
    encoder refusals and no-space at every short buffer, body splitting arithmetic, the table writer's misuse
    and depth bound, absent properties zeroed in a reused struct, UTF-8 edge cases. Under the sanitizers."""
    case = next(c for c in CASES if c.key == "bundled-0-9-1-extended")
    tree = tmp_path / "tree"
    assert render(case, tree).returncode == 0
    program = tmp_path / "edges.c"
    program.write_text(EDGES_C, encoding="utf-8")
    exe = tmp_path / "edges"
    built = compile_c("clang", tree, exe, ["-std=c99", "-Wall", "-Wextra", "-Werror", *SANITIZE], tests=False,
                      extra=(str(program),))
    assert built.returncode == 0, built.stderr[-3000:]
    out = run(exe)
    assert out.returncode == 0 and re.fullmatch(r"\d+ checks, 0 failed\n", out.stdout.splitlines()[-1] + "\n"), \
        out.stdout + out.stderr


def test_library_is_warning_clean_for_32_bit_targets(c_build: Build, tmp_path: Path) -> None:
    """size_t of 32 bits (i686, ARMv7): the library still compiles under the strict warnings (-Wconversion
    catches a 64-bit length squeezed into size_t). Freestanding, syntax only: Debian has no 32-bit libc headers
    here, so string.h is a stand-in declaring the seven functions the library uses."""
    include = tmp_path / "include"
    include.mkdir()
    (include / "string.h").write_text(
        "#include <stddef.h>\nvoid *memcpy(void *, const void *, size_t);\nvoid *memmove(void *, const void *, size_t);\n"
        "void *memset(void *, int, size_t);\nvoid *memchr(const void *, int, size_t);\n"
        "int memcmp(const void *, const void *, size_t);\nint strcmp(const char *, const char *);\n"
        "size_t strlen(const char *);\n")
    resource = subprocess.run([tool("clang"), "-print-resource-dir"], capture_output=True, text=True,
                              check=True).stdout.strip()
    problems = []
    for target in ("i686-linux-gnu", "armv7-none-eabi"):
        for dialect in DIALECTS:
            tree = c_build.trees[("bundled-0-9", dialect)]
            proc = subprocess.run(
                [tool("clang"), f"--target={target}", "-ffreestanding", "-nostdlibinc", "-isystem",
                 f"{resource}/include", "-I", str(include), *STRICT, "-I", str(tree / "include"), "-I",
                 str(tree / "src"), "-fsyntax-only", *sorted(str(p) for p in (tree / "src").glob("*.c"))],
                capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                problems.append(f"{target} {dialect}: {proc.stderr[-2000:]}")
    assert not problems, "\n".join(problems)
