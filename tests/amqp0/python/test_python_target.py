"""The Python target across every supported spec: the bundled 0-9, 0-9-1 and
0-9-1 extended, the 0-9-1 with the bundled RabbitMQ overlay, and every 0-8 / 0-9 / 0-9-1 file of
Debian's amqp-specs.

Each rendering (with the conformance tests option) must import, pass `mypy --strict` and
`ruff check` (ruff's default rules, run isolated from any project config), and its generated
tests must pass under pytest in a subprocess. Rendering is deterministic. The protocol header of
each family is checked against pika and pamqp for 0-9-1 (test_python_broker.py checks each family's header
against RabbitMQ).
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import json
import re
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pamqp.constants
import pamqp.header
import pika.frame
import pytest
from pytarget import RABBITMQ_OVERLAY, ROOT, SPEC_091, SPEC_091_EXT
from specgen import spec_text, write

from amqgen import __version__
from amqgen.amqp0.lower import load_spec
from amqgen.amqp0.model import Spec
from amqgen.specs import DEBIAN_SPECS, debian_root

VENV_BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Case:
    key: str  # test id
    spec_arg: str | None  # what --spec gets (None: the bundled default)
    path: Path  # the file, for loading the model independently of the render
    package: str
    overlays: tuple[Path, ...] = ()  # what --overlay gets, in order


def _cases() -> list[Case]:
    out = [
        Case("bundled-0-9", None, ROOT / "spec" / "amqp0-9.xml", "gen_bundled_0_9"),
        Case("bundled-0-9-1-extended", SPEC_091_EXT, Path(SPEC_091_EXT), "gen_bundled_0_9_1x"),
        Case("bundled-0-9-1", SPEC_091, Path(SPEC_091), "gen_bundled_0_9_1"),
        Case("bundled-0-9-1+rabbitmq", SPEC_091, Path(SPEC_091), "gen_bundled_0_9_1_rabbitmq", (RABBITMQ_OVERLAY,)),
    ]
    for name in ("0-8", "0-8-qpid", "0-9", "0-9-qpid", "0-9-1", "0-9-1-qpid", "0-9-1-rabbit"):
        out.append(
            Case(f"debian-{name}", f"amqp-specs:{name}", debian_root() / DEBIAN_SPECS[name],
                 "gen_debian_" + name.replace("-", "_"))
        )
    return out


CASES = _cases()
IDS = [c.key for c in CASES]


def render(spec_arg: str | None, package: str, out: Path, *, tests: bool = True,
           overlays: tuple[Path, ...] = ()) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "amqgen", "render", "--lang", "python", "--out", str(out), "--package", package]
    if spec_arg is not None:
        cmd += ["--spec", spec_arg]
    for o in overlays:
        cmd += ["--overlay", str(o)]
    if tests:
        cmd += ["--option", "tests=1"]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=ROOT)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every case rendered once with tests=1 (two renders at a time: black dominates)."""
    root = tmp_path_factory.mktemp("python-target")
    missing = [c.path for c in CASES if not c.path.is_file()]
    assert not missing, f"spec files missing (Debian package amqp-specs?): {missing}"

    def one(case: Case) -> tuple[str, Path]:
        out = root / case.key
        proc = render(case.spec_arg, case.package, out, overlays=case.overlays)
        assert proc.returncode == 0, f"{case.key}: render failed: {proc.stderr}"
        return case.key, out

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, CASES))


@pytest.fixture(scope="module")
def imported(rendered: dict[str, Path]) -> Iterator[dict[str, ModuleType]]:
    mods: dict[str, ModuleType] = {}
    added = []
    for case in CASES:
        out = str(rendered[case.key])
        sys.path.insert(0, out)
        added.append(out)
        pkg = importlib.import_module(case.package)
        for sub in ("constants", "exceptions", "table", "methods", "properties", "frames", "checks", "rules"):
            importlib.import_module(f"{case.package}.{sub}")
        mods[case.key] = pkg
    yield mods
    for out in added:
        sys.path.remove(out)


# -- every rendering imports and describes its spec ------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_output_imports_and_matches_its_spec(imported: dict[str, ModuleType], case: Case) -> None:
    pkg = imported[case.key]
    spec: Spec = load_spec(case.path, overlays=case.overlays)
    assert pkg.SPEC_NAME == case.path.name
    assert pkg.SPEC_SHA256 == hashlib.sha256(case.path.read_bytes()).hexdigest()
    assert pkg.AMQGEN_VERSION == __version__
    assert set(pkg.methods.METHODS) == {m.id for m in spec.methods}
    for m in spec.methods:
        cls = pkg.methods.METHODS[m.id]
        assert (cls.CLASS_ID, cls.METHOD_ID, cls.NAME) == (m.class_index, m.index, m.full_name)
        assert (cls.SYNCHRONOUS, cls.HAS_CONTENT, cls.DIRECTION) == (m.synchronous, m.content, m.direction)
        assert [r.NAME for r in cls.RESPONSES] == list(m.responses)
        assert len(cls.FIELDS) == len(m.fields)
    assert set(pkg.properties.PROPERTIES) == {c.index for c in spec.content_classes}
    for c in spec.content_classes:
        assert len(pkg.properties.PROPERTIES[c.index].FIELDS) == len(c.properties)
    codes = {c.value: c.error_class for c in spec.reply_codes}
    assert {int(r) for r in pkg.constants.ReplyCode} == set(codes)
    for r in pkg.constants.ReplyCode:
        assert r.error_class == codes[int(r)]
        if codes[int(r)] is not None:
            exc = pkg.exceptions.EXCEPTION_BY_CODE[int(r)]
            assert exc.reply_code == int(r)
            branch = pkg.exceptions.SoftError if codes[int(r)] == "soft" else pkg.exceptions.HardError
            assert issubclass(exc, branch)
    assert len(pkg.rules.RULES) == len(spec.all_rules())
    assert pkg.constants.PORT == spec.port


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_file_names_its_generator_and_spec(rendered: dict[str, Path], case: Case) -> None:
    """... and every overlay, with its digest, after the spec's."""
    inputs = [f"{p.name} (sha256 {hashlib.sha256(p.read_bytes()).hexdigest()})" for p in (case.path, *case.overlays)]
    files = sorted(p for p in (rendered[case.key] / case.package).rglob("*.py"))
    assert len(files) >= 15  # 10 modules + 5 under tests/
    for f in files:
        first = f.read_text(encoding="utf-8").splitlines()[0]
        assert f"amqgen {__version__} from {' + '.join(inputs)}. Do not edit." in first, f


# -- static checks, once over all renderings ---------------------------------------------------------
def test_mypy_strict_on_every_rendering(rendered: dict[str, Path], tmp_path: Path) -> None:
    env_path = ":".join(str(rendered[c.key]) for c in CASES)
    cmd = [str(VENV_BIN / "mypy"), "--strict", "--cache-dir", str(tmp_path / "mypy-cache"), "--no-color-output"]
    for c in CASES:
        cmd += ["-p", c.package]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env={"MYPYPATH": env_path, "PATH": str(VENV_BIN)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # 18 modules (the engine's six and the clients' three among them) and 5 test files per rendering were
    # checked, not an empty set
    found = re.search(r"Success: no issues found in (\d+) source files", proc.stdout)
    assert found and int(found.group(1)) == 23 * len(CASES), proc.stdout


def test_ruff_check_on_every_rendering(rendered: dict[str, Path]) -> None:
    dirs = [str(rendered[c.key] / c.package) for c in CASES]
    proc = subprocess.run([str(VENV_BIN / "ruff"), "check", "--isolated", "--no-cache", *dirs],
                          check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "All checks passed" in proc.stdout


def test_black_leaves_the_rendering_unchanged(rendered: dict[str, Path]) -> None:
    """Render formats with black already, so this checks that its output is stable under a second pass; two
    specs (the bundled default and RabbitMQ's extended one, which has every construct the pack emits) suffice:
    black on all ten renderings took 35 s of the suite."""
    dirs = [str(rendered[key] / case.package) for case in CASES for key in ("bundled-0-9", "bundled-0-9-1-extended")
            if case.key == key]
    assert len(dirs) == 2
    proc = subprocess.run([str(VENV_BIN / "black"), "--check", "--quiet", "--line-length", "100", *dirs],
                          check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- the generated conformance tests -----------------------------------------------------------------
def test_generated_tests_pass(rendered: dict[str, Path], tmp_path: Path) -> None:
    """One pytest run over every rendering's tests/: every round trip and the whole conformance
    corpus (every case of both table dialects, test_vectors.py) pass. The rule scenario
    skeletons (marked live_peer: they need a live peer and are the implementer's to write) are
    deselected, not skipped, and counted separately by collection."""
    targets = [str(rendered[c.key] / c.package / "tests") for c in CASES]
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--strict-markers", "-rN"]
    proc = subprocess.run([*base, "-m", "not live_peer", *targets],
                          check=False, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    want_passed = want_skeletons = 0
    for c in CASES:
        spec = load_spec(c.path, overlays=c.overlays)
        # a round trip per method and properties class; the corpus: 6 sections x 2 table dialects
        want_passed += len(spec.methods) + len(spec.content_classes) + 12
        want_skeletons += sum(1 for r in spec.all_rules() if r.scenario)
    summary = proc.stdout.strip().splitlines()[-1]
    assert re.search(rf"\b{want_passed} passed\b", summary), summary
    assert re.search(rf"\b{want_skeletons} deselected\b", summary), summary
    assert "failed" not in summary and "error" not in summary and "skipped" not in summary
    collected = subprocess.run([*base, "--collect-only", "-m", "live_peer", *targets],
                               check=False, capture_output=True, text=True, cwd=tmp_path)
    assert collected.returncode == 0, collected.stdout[-3000:]
    skeletons = [ln for ln in collected.stdout.splitlines() if "test_rule_scenarios.py::" in ln]
    assert len(skeletons) == want_skeletons > 0


# -- the RabbitMQ overlay gives RabbitMQ's codec ----------------------------------------------------
def _code(path: Path, package: str) -> str:
    """A module's syntax tree without its docstrings and with its package name neutral: what runs."""
    tree = ast.parse(path.read_text(encoding="utf-8").replace(package, "PKG"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


def test_rabbitmq_overlay_renders_the_codec_of_rabbitmqs_extended_spec(rendered: dict[str, Path],
                                                                        tmp_path: Path) -> None:
    """The official 0-9-1 with the bundled RabbitMQ overlay, against RabbitMQ's own extended XML (the
    oracle: a file we did not write): the codec modules are the same code (only docstrings differ:
    the overlay's prose is its own), the conformance corpora are the same cases (only the header
    naming the inputs differs), and each package passes the other's corpus, every case encoded and
    decoded, in both table dialects."""
    ovl_root, ovl_pkg = rendered["bundled-0-9-1+rabbitmq"], "gen_bundled_0_9_1_rabbitmq"
    ext_root, ext_pkg = rendered["bundled-0-9-1-extended"], "gen_bundled_0_9_1x"
    for name in ("methods.py", "properties.py", "table.py", "frames.py", "constants.py", "exceptions.py", "checks.py"):
        assert _code(ovl_root / ovl_pkg / name, ovl_pkg) == _code(ext_root / ext_pkg / name, ext_pkg), name
    corpus: dict[str, dict[str, Path]] = {}
    for dialect in ("rabbitmq", "qpid"):
        files = {pkg: root / pkg / "tests" / f"vectors_{dialect}.json" for root, pkg in ((ovl_root, ovl_pkg),
                                                                                        (ext_root, ext_pkg))}
        a, b = (json.loads(f.read_text(encoding="utf-8")) for f in files.values())
        assert [o["name"] for o in a["spec"].pop("overlays")] == ["rabbitmq.xml"] and "overlays" not in b["spec"]
        assert (a["spec"]["name"], b["spec"]["name"]) == ("amqp0-9-1.xml", "amqp0-9-1.extended.xml")
        for doc in (a, b):  # what names the inputs: their file names and digests
            doc.pop("notice")
            del doc["spec"]["name"], doc["spec"]["sha256"]
        assert a == b, dialect
        assert {c["method"] for c in a["methods"]} >= {"basic.nack", "confirm.select", "exchange.unbind-ok"}
        corpus[dialect] = files
    # each package runs the other's corpus: copy it, swap its data files, run its generated corpus tests
    for (root, pkg), other in (((ovl_root, ovl_pkg), ext_pkg), ((ext_root, ext_pkg), ovl_pkg)):
        copy = tmp_path / pkg
        shutil.copytree(root / pkg, copy / pkg)
        for dialect, files in corpus.items():
            shutil.copyfile(files[other], copy / pkg / "tests" / f"vectors_{dialect}.json")
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rN",
                               str(copy / pkg / "tests" / "test_vectors.py")],
                              check=False, capture_output=True, text=True, cwd=copy)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert re.search(r"\b12 passed\b", proc.stdout.strip().splitlines()[-1]), proc.stdout[-500:]


# -- determinism -----------------------------------------------------------------------------------
def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_rendering_is_deterministic(tmp_path: Path) -> None:
    """The default spec rendered twice (fresh processes, so no shared state): identical bytes;
    --check then finds nothing to do. Without tests=1 there is no tests/ package."""
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        proc = render(None, "amqp_codec", out, tests=False)
        assert proc.returncode == 0, proc.stderr
    a, b = _tree(first), _tree(second)
    assert a == b
    assert "amqp_codec/methods.py" in a and not any("/tests/" in k for k in a)
    check = subprocess.run(
        [sys.executable, "-m", "amqgen", "render", "--lang", "python", "--out", str(first), "--check"],
        check=False, capture_output=True, text=True, cwd=ROOT,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_extended_rendering_matches_the_shared_fixture(rendered: dict[str, Path], amqp091: ModuleType) -> None:
    """The conftest fixture (no tests option, another package name) has the same modules."""
    ours = rendered["bundled-0-9-1-extended"] / "gen_bundled_0_9_1x"
    fixture = Path(str(amqp091.__file__)).parent
    for name in ("methods.py", "properties.py", "table.py", "frames.py"):
        a = (ours / name).read_text(encoding="utf-8").replace("gen_bundled_0_9_1x", "PKG")
        b = (fixture / name).read_text(encoding="utf-8").replace(amqp091.__name__, "PKG")
        assert a == b, name


# -- protocol headers against independent peers ----------------------------------------------------
def test_0_9_1_header_matches_pika_and_pamqp(imported: dict[str, ModuleType]) -> None:
    for key in ("bundled-0-9-1", "bundled-0-9-1-extended", "debian-0-9-1", "debian-0-9-1-qpid", "debian-0-9-1-rabbit"):
        header = imported[key].constants.PROTOCOL_HEADER
        assert header == pika.frame.ProtocolHeader().marshal(), key
        assert header == pamqp.header.ProtocolHeader().marshal(), key
        assert header[4:] == bytes((0, pamqp.constants.VERSION[0], pamqp.constants.VERSION[1], pamqp.constants.VERSION[2]))


def test_every_family_shares_its_header(imported: dict[str, ModuleType]) -> None:
    by_family: dict[str, set[bytes]] = {}
    for c in CASES:
        consts = imported[c.key].constants
        by_family.setdefault(consts.FAMILY, set()).add(consts.PROTOCOL_HEADER)
    assert set(by_family) == {"0-8", "0-9", "0-9-1"}
    assert all(len(v) == 1 for v in by_family.values()), by_family


# -- checks: the spec's asserts and the policies for the known-bad ones ------------------------------
def _raises_reply(pkg: ModuleType, code: int, ids: tuple[int, int], fn: object, *args: object, **kw: object) -> None:
    with pytest.raises(pkg.exceptions.ReplyError) as info:
        fn(*args, **kw)  # type: ignore[operator]
    assert info.value.reply_code == code and (info.value.class_id, info.value.method_id) == ids


def test_checks_virtual_host_policies(imported: dict[str, ModuleType]) -> None:
    """0-9's virtual-host: notnull, path syntax, 127 octets, and the broken regexp ^[a-zA-Z0-9/-_]+$
    whose range /-_ takes '@' and refuses '-'."""
    pkg = imported["bundled-0-9"]
    validate, ConnectionOpen = pkg.checks.validate, pkg.methods.ConnectionOpen
    syntax_error = pkg.exceptions.EXCEPTION_BY_CODE[502]
    assert syntax_error.__name__ == "SyntaxError_"
    for policy in pkg.checks.POLICIES:
        validate(ConnectionOpen(virtual_host="/"), policy=policy)
        _raises_reply(pkg, 502, (10, 40), validate, ConnectionOpen(virtual_host=""), policy=policy)
    # "-": refused by the regexp as written, allowed as its authors meant it, not checked for RabbitMQ
    _raises_reply(pkg, 502, (10, 40), validate, ConnectionOpen(virtual_host="/a-b"), policy="spec")
    validate(ConnectionOpen(virtual_host="/a-b"), policy="portable")
    validate(ConnectionOpen(virtual_host="/a-b"), policy="rabbitmq")
    # "@": the broken range admits it, but the path syntax does not; RabbitMQ takes any name
    for policy in ("spec", "portable"):
        _raises_reply(pkg, 502, (10, 40), validate, ConnectionOpen(virtual_host="/a@b"), policy=policy)
    validate(ConnectionOpen(virtual_host="a@b"), policy="rabbitmq")
    # 127-octet limit (counted in UTF-8 octets): spec and portable keep it, rabbitmq allows 255
    long_host = "/" + "é" * 64  # 129 octets, 65 characters
    _raises_reply(pkg, 502, (10, 40), validate, ConnectionOpen(virtual_host=long_host), policy="portable")
    validate(ConnectionOpen(virtual_host=long_host), policy="rabbitmq")
    with pytest.raises(ValueError):
        validate(ConnectionOpen(virtual_host="/"), policy="lenient")


def test_checks_other_kinds(imported: dict[str, ModuleType]) -> None:
    pkg09, pkg08 = imported["bundled-0-9"], imported["debian-0-8"]
    m09, validate = pkg09.methods, pkg09.checks.validate
    # null: channel.open out-of-band must be empty
    _raises_reply(pkg09, 502, (20, 10), validate, m09.ChannelOpen(out_of_band="x"))
    validate(m09.ChannelOpen())
    # ne: access tickets must not be 0 as written; RabbitMQ ignores tickets
    _raises_reply(pkg09, 502, (60, 40), validate, m09.BasicPublish(ticket=0), policy="spec")
    validate(m09.BasicPublish(ticket=0))
    # le: against the negotiated value; 0 or absent means no limit
    tune_ok = m09.ConnectionTuneOk(channel_max=3000, frame_max=131072)
    _raises_reply(pkg09, 502, (10, 31), validate, tune_ok, negotiated={"connection.tune.channel-max": 2047})
    validate(tune_ok, negotiated={"connection.tune.channel-max": 0})
    validate(tune_ok)
    # enum (0-8 test.integer operation: add, min, max)
    validate(pkg08.methods.TestInteger(operation=2))
    _raises_reply(pkg08, 502, (120, 10), pkg08.checks.validate, pkg08.methods.TestInteger(operation=3))
    # a method without asserts always passes
    assert m09.BasicAck not in pkg09.checks.CHECKED_METHODS
    validate(m09.BasicAck())


def test_checks_on_encode_and_decode(imported: dict[str, ModuleType]) -> None:
    pkg = imported["bundled-0-9-1-extended"]
    bad = pkg.methods.ExchangeDeclare(exchange="")  # notnull in 0-9-1
    with pytest.raises(pkg.exceptions.ReplyError):
        pkg.frames.FrameReader(validate=True).feed(bad.encode_frame(1))
    with pytest.raises(pkg.exceptions.ReplyError):
        pkg.frames.encode_message(1, pkg.methods.BasicPublish(exchange="a" * 300), None, b"", validate=True)
    assert len(pkg.frames.FrameReader().feed(bad.encode_frame(1))) == 1  # off by default
    ok = pkg.frames.encode_message(1, pkg.methods.BasicPublish(exchange="x"), None, b"b", validate=True)
    assert len(pkg.frames.FrameReader(validate=True).feed(ok)) == 3


# -- rules ------------------------------------------------------------------------------------------
def test_rules_registry_and_coverage(imported: dict[str, ModuleType]) -> None:
    pkg = imported["bundled-0-9"]
    rules = pkg.rules
    spec = load_spec(ROOT / "spec" / "amqp0-9.xml")
    assert len(rules.RULES) == 199 == len(spec.all_rules())
    by_id = {r.id: r for r in spec.all_rules()}
    for r in rules.RULES:
        m = by_id[r.id]
        assert (r.level, r.on_failure, r.reply_code, r.doc, r.scenario) == (
            m.level, m.on_failure, m.on_failure_code, m.doc, m.scenario)
    with_code = [r for r in rules.RULES if r.reply_code is not None]
    assert with_code and all(r.reply_code in pkg.exceptions.EXCEPTION_BY_CODE or r.reply_code == 200
                             for r in with_code)
    registry = rules.RuleRegistry()
    first, second = rules.RULES[0].id, rules.RULES[5].id

    @registry.register(first)
    def check_first() -> None:
        """An implementation's check."""

    registry.add(second, check_first)
    with pytest.raises(KeyError):
        registry.add("no.such.rule", check_first)
    cov = registry.coverage()
    assert [r.id for r in cov.covered] == [first, second] and len(cov.missing) == 197
    report = cov.report()
    assert report.splitlines()[0] == "2 of 199 rules have checks"
    assert f"[x] {first}" in report and f"[ ] {rules.RULES[1].id}" in report
    assert registry.checks_for(first) == (check_first,)


# -- table dialects -----------------------------------------------------------------------------------
def test_table_dialects(imported: dict[str, ModuleType]) -> None:
    table = imported["bundled-0-9-1"].table
    # 's' and 'l' differ: RabbitMQ (errata) reads int16 / int64, Qpid (spec grammar) shortstr / uint64.
    entries = b"\x01as\xff\xfe" + b"\x01bl" + b"\xff" * 8
    raw = len(entries).to_bytes(4, "big") + entries
    assert table.decode_table(raw)[0] == {"a": -2, "b": -1}
    entries_q = b"\x01as\x02hi" + b"\x01bl" + b"\xff" * 8
    raw_q = len(entries_q).to_bytes(4, "big") + entries_q
    assert table.decode_table(raw_q, dialect="qpid")[0] == {"a": "hi", "b": 2**64 - 1}
    # Encoding a 64-bit int: 'l' for RabbitMQ, 'L' for Qpid.
    assert table.encode_table({"n": 2**40})[6] == ord("l")
    assert table.encode_table({"n": 2**40}, dialect="qpid")[6] == ord("L")
    # Typed forces a code; floats are 'd' unless asked otherwise.
    assert table.encode_table({"f": table.Typed("f", 1.5)})[6:] == b"f" + bytes.fromhex("3fc00000")
    assert table.encode_table({"f": 1.5})[6] == ord("d")
    with pytest.raises(ValueError):
        table.decode_table(raw, dialect="amqp-1.0")


# -- wire layouts the real specs do not reach: property flag continuation, bits over one octet ------------
WIDE_SPEC = """<?xml version="1.0"?>
<amqp major="0" minor="9" revision="1" port="5672">
<constant name="frame-end" value="206"/>
<constant name="frame-error" value="501" class="hard-error"/>
<constant name="syntax-error" value="502" class="hard-error"/>
<domain name="bit" type="bit"/>
<domain name="octet" type="octet"/>
<domain name="short" type="short"/>
<domain name="long" type="long"/>
<domain name="longlong" type="longlong"/>
<domain name="shortstr" type="shortstr"/>
<domain name="longstr" type="longstr"/>
<domain name="table" type="table"/>
<class name="wide" index="200">
  <chassis name="server" implement="MUST"/>
  <chassis name="client" implement="MUST"/>
{props}
  <method name="send" index="10" content="1">
    <chassis name="server" implement="MUST"/>
{bits}
    <field name="tag" domain="shortstr"/>
  </method>
</class>
</amqp>
"""
WIDE_TYPES = ["shortstr"] * 14 + ["octet", "short", "long", "longlong", "table", "longstr"]


def test_flag_word_continuation_and_multi_octet_bits(tmp_path: Path) -> None:
    """A class with 20 properties needs two flag words (15 properties each, bit 0 = another word
    follows); a method with 9 bits needs two octets. Expected octets are built here with struct."""
    props = "\n".join(f'  <field name="p{i + 1}" domain="{t}"/>' for i, t in enumerate(WIDE_TYPES))
    bits = "\n".join(f'    <field name="b{i}" domain="bit"/>' for i in range(1, 10))
    spec_file = tmp_path / "wide.xml"
    spec_file.write_text(WIDE_SPEC.format(props=props, bits=bits), encoding="utf-8")
    out = tmp_path / "out"
    proc = render(str(spec_file), "gen_wide", out)
    assert proc.returncode == 0, proc.stderr
    sys.path.insert(0, str(out))
    try:
        methods = importlib.import_module("gen_wide.methods")
        properties = importlib.import_module("gen_wide.properties")
        exceptions = importlib.import_module("gen_wide.exceptions")
    finally:
        sys.path.remove(str(out))
    send = methods.WideSend(b1=True, b8=True, b9=True, tag="x")
    assert send.encode() == bytes([0b1000_0001, 0b0000_0001]) + b"\x01x"
    assert methods.WideSend.decode(send.encode()) == send
    cls = properties.WideProperties
    # p1 alone: one flag word, no continuation
    assert cls(p1="a").encode() == struct.pack(">H", 0x8000) + b"\x01a"
    # p16 is property 15: word 1, bit 15; word 0 carries only the continuation bit
    assert cls(p16=7).encode() == struct.pack(">HHH", 0x0001, 0x8000, 7)
    both = cls(p1="a", p16=7, p20=b"\x00\xff")
    wire = struct.pack(">HH", 0x8001, 0x8000 | 0x0800) + b"\x01a" + struct.pack(">H", 7) + struct.pack(">I", 2) + b"\x00\xff"
    assert both.encode() == wire and cls.decode(wire) == both
    assert cls.decode(struct.pack(">HH", 0x0001, 0x0000)) == cls()  # an empty second word is allowed
    with pytest.raises(exceptions.PropertyFlagsError):
        cls.decode(struct.pack(">HH", 0x0001, 0x0001))  # a third word this class does not have
    with pytest.raises(exceptions.PropertyFlagsError):
        cls.decode(struct.pack(">HH", 0x0001, 0x0200))  # bit 9 of word 1 would be property 22
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(out / "gen_wide" / "tests")],
                          check=False, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0 and " passed" in proc.stdout, proc.stdout[-3000:]


def test_error_for_reply_codes(amqp091: ModuleType) -> None:
    ex = amqp091.exceptions
    e = ex.error_for(404, "NOT_FOUND - no queue 'q'", 50, 10)
    assert isinstance(e, ex.NotFoundError) and isinstance(e, ex.SoftError) and e.reply_code == 404
    assert (e.class_id, e.method_id) == (50, 10)
    assert isinstance(ex.error_for(530, "x"), ex.HardError)
    # 312 (no-route) is not in RabbitMQ's 0-9-1 XML though RabbitMQ sends it: the closing method decides
    assert 312 not in ex.EXCEPTION_BY_CODE
    soft = ex.error_for(312, "NO_ROUTE", channel=True)
    hard = ex.error_for(312, "NO_ROUTE")
    assert type(soft) is ex.SoftError and type(hard) is ex.HardError and soft.reply_code == hard.reply_code == 312


def test_more_than_15_properties_decode_through_the_continuation_word(tmp_path: Path) -> None:
    """No supported spec has a content class with more than 15 properties, so the second flag
    word (read as two octets like the first) is exercised on a synthetic spec: the generated round
    trips and the conformance corpus (each property alone, all of them, a continuation past the
    last word, an unused flag bit) must pass."""
    props = "".join(f'<field name="p{i}" domain="octet"/>\n' for i in range(17))
    spec = write(tmp_path, "wide.xml", spec_text(
        f'<class name="wide" index="90" handler="channel">\n{props}'
        '<method name="m" index="10" content="1"><field name="f" domain="octet"/></method>\n</class>\n'))
    out = tmp_path / "out"
    proc = render(str(spec), "wide", out)
    assert proc.returncode == 0, proc.stderr
    assert "if lo0 & 1:" in (out / "wide" / "properties.py").read_text(encoding="utf-8")  # two flag words
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not live_peer",
                          str(out / "wide" / "tests")], check=False, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-1000:]
    assert re.search(r"\b14 passed\b", run.stdout.strip().splitlines()[-1]), run.stdout[-500:]  # 6 corpus sections x 2 dialects, 2 round trips
