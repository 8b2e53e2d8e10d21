"""The AMQP 1.0 Python target (`amqgen render --lang python --spec 1-0`, pack templates/python10).

What is checked here, beside the generated package's own corpus tests:
- render: `--lang python` picks the 1.0 pack for a 1.0 spec; other packs refuse the family in one line; output is
  byte-identical run to run, clean under mypy --strict, ruff and black;
- interop with Qpid Proton (its C codec, python-qpid-proton): every composite both ways, and random values both
  ways (hypothesis): what the generated code writes Proton reads to equal values, and what Proton writes the
  generated code reads;
- hostile input: mutated frames, values and messages give only DecodeError; nesting and octet-less array
  elements are bounded; the FrameReader's memory is bounded by its cap.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import re
import struct
import subprocess
import sys
import tracemalloc
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

import proton
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from proton_peer import PROTON_TYPE, proton_decode, proton_encode
from proton_peer import same as proton_same
from pytarget import ROOT, render_package10

VENV_BIN = Path(sys.executable).parent
#: mutated inputs per test run; a long run sets more (AMQGEN_FUZZ10_CASES=3000000 AMQGEN_FUZZ10_SEED=N)
FUZZ_CASES = int(os.environ.get("AMQGEN_FUZZ10_CASES", "3000"))
FUZZ_SEED = int(os.environ.get("AMQGEN_FUZZ10_SEED", "10"))


def amqgen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "amqgen", *args], check=False, capture_output=True, text=True,
                          cwd=ROOT)


def corpus() -> dict[str, Any]:
    return json.loads(amqgen("vectors", "--spec", "1-0", "--out", "-").stdout)


CORPUS = corpus()


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_package10("amqp10t", tmp_path_factory.mktemp("py10"), tests=True)


# -- render ---------------------------------------------------------------------------------------------------
def test_render_is_byte_identical_and_lists_the_package(tmp_path: Path) -> None:
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        proc = amqgen("render", "--lang", "python", "--spec", "1-0", "--out", str(out), "--option", "tests=1")
        assert proc.returncode == 0, proc.stderr
        outs.append({p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert outs[0] == outs[1]
    names = {str(p) for p in outs[0]}
    for module in ("__init__", "codec", "composites", "constants", "exceptions", "frames", "message", "types"):
        assert f"amqp10_codec/{module}.py" in names
    assert "amqp10_codec/tests/vectors.json" in names and "amqp10_codec/py.typed" in names
    # the corpus the package tests run is the one `amqgen vectors --spec 1-0` writes
    assert json.loads(outs[0][Path("amqp10_codec/tests/vectors.json")]) == CORPUS


@pytest.mark.parametrize("args,says", [
    (["--lang", "c", "--spec", "1-0"], "pack 'c' renders AMQP 0-8, 0-9, 0-9-1; amqp-1.0 is AMQP 1-0"),
    (["--lang", "java", "--spec", "1-0"], "pack 'java' renders AMQP 0-8, 0-9, 0-9-1; amqp-1.0 is AMQP 1-0"),
    (["--lang", "python10"], "pack 'python10' renders AMQP 1-0"),
])
def test_a_pack_refuses_a_family_it_does_not_render_in_one_line(args: list[str], says: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = amqgen("render", *args, "--out", str(out))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert says in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


def test_mypy_ruff_and_black_are_clean(rendered: Path, tmp_path: Path) -> None:
    # Every module strict, the engine and its clients included (no per-module exclusion)
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\n")
    proc = subprocess.run([str(VENV_BIN / "mypy"), "--config-file", str(config), "--cache-dir", str(tmp_path / "cache"),
                           "-p", "amqp10t"],
                          check=False, capture_output=True, text=True, env={"MYPYPATH": str(rendered), "PATH": str(VENV_BIN)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = re.search(r"Success: no issues found in (\d+) source files", proc.stdout)
    assert found and int(found.group(1)) == 16, proc.stdout  # 8 codec modules, engine, client_core, client, aio, server, 3 tests
    proc = subprocess.run([str(VENV_BIN / "ruff"), "check", "--isolated", "--no-cache", str(rendered / "amqp10t")],
                          check=False, capture_output=True, text=True)
    assert proc.returncode == 0 and "All checks passed" in proc.stdout, proc.stdout + proc.stderr
    proc = subprocess.run([str(VENV_BIN / "black"), "--check", "--quiet", "--line-length", "100", str(rendered)],
                          check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_generated_tests_run_the_whole_corpus(rendered: Path, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rN",
                           str(rendered / "amqp10t" / "tests")], check=False, capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", proc.stdout).group(1))  # type: ignore[union-attr]
    cases = sum(len(CORPUS[k]) for k in ("values", "composites", "frames", "messages", "malformed"))
    assert "skipped" not in proc.stdout and passed > cases, proc.stdout[-500:]


# -- Qpid Proton, both ways ------------------------------------------------------------------------------------
#: AMQP type -> (the generated package's wrapper class name, Proton's class): the types both keep by class
_WRAPPED = {"ubyte": ("UByte", proton.ubyte), "ushort": ("UShort", proton.ushort), "uint": ("UInt", proton.uint),
            "ulong": ("ULong", proton.ulong), "byte": ("Byte", proton.byte), "short": ("Short", proton.short),
            "int": ("Int", proton.int32), "float": ("Float", proton.float32), "char": ("Char", proton.char),
            "timestamp": ("Timestamp", proton.timestamp), "symbol": ("Symbol", proton.symbol)}
_PROTON_OF = {prim: cls for prim, (_, cls) in _WRAPPED.items()}


def _from_proton(pkg: ModuleType, obj: Any) -> Any:
    """Proton's object as the generated package's value (types.py's table)."""
    t = pkg.types
    simple = {cls: getattr(t, name) for name, cls in _WRAPPED.values()}
    if type(obj) in simple:
        return simple[type(obj)](obj)
    if isinstance(obj, (proton.decimal32, proton.decimal64)):
        return (t.Decimal32 if isinstance(obj, proton.decimal32) else t.Decimal64)(
            int(obj).to_bytes(4 if isinstance(obj, proton.decimal32) else 8, "big"))
    if isinstance(obj, proton.decimal128):
        return t.Decimal128(bytes(obj))
    if isinstance(obj, proton.Described):
        return t.Described(_from_proton(pkg, obj.descriptor), _from_proton(pkg, obj.value))
    if isinstance(obj, proton.Array):
        elem = next(k for k, v in PROTON_TYPE.items() if v == obj.type)
        d = None if obj.descriptor is proton.UNDESCRIBED else _from_proton(pkg, obj.descriptor)
        return t.Array(elem, [_plain(pkg, _from_proton(pkg, x)) for x in obj.elements], d)
    if isinstance(obj, list):
        return [_from_proton(pkg, x) for x in obj]
    if isinstance(obj, dict):
        return {_from_proton(pkg, k): _from_proton(pkg, x) for k, x in obj.items()}
    return obj  # None, bool, int (long), float (double), str, bytes, uuid.UUID


def _plain(pkg: ModuleType, x: Any) -> Any:
    for base in (bool, int, float, str, bytes):
        if isinstance(x, base):
            return base(x)
    return x


def _to_proton(pkg: ModuleType, x: Any) -> Any:
    t = pkg.types
    conv = {getattr(t, name): cls for name, cls in _WRAPPED.values()}
    if type(x) in conv:
        return conv[type(x)](x)
    if isinstance(x, (t.Decimal32, t.Decimal64)):
        return (proton.decimal32 if isinstance(x, t.Decimal32) else proton.decimal64)(int.from_bytes(x, "big"))
    if isinstance(x, t.Decimal128):
        return proton.decimal128(bytes(x))
    if isinstance(x, t.Described):
        return proton.Described(_to_proton(pkg, x.descriptor), _to_proton(pkg, x.value))
    if isinstance(x, t.Array):
        wrap = {**_PROTON_OF, "decimal32": lambda v: proton.decimal32(int.from_bytes(v, "big")),
                "decimal64": lambda v: proton.decimal64(int.from_bytes(v, "big"))}.get(x.type, lambda v: v)
        d = proton.UNDESCRIBED if x.descriptor is None else _to_proton(pkg, x.descriptor)
        return proton.Array(d, PROTON_TYPE[x.type], *(wrap(v) for v in x.items))
    if isinstance(x, list):
        return [_to_proton(pkg, v) for v in x]
    if isinstance(x, dict):
        return {_to_proton(pkg, k): _to_proton(pkg, v) for k, v in x.items()}
    return x


def same(a: Any, b: Any) -> bool:
    """Equal with the same Python types all the way down; floats by their bits; maps as sets of pairs (Proton
    keeps no order)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        fmt = ">f" if type(a).__name__ == "Float" else ">d"
        return struct.pack(fmt, a) == struct.pack(fmt, b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return len(a) == len(b) and all(any(same(k, k2) and same(v, b[k2]) for k2 in b if k2 == k)
                                        for k, v in a.items())
    if type(a).__name__ == "Array":
        return (a.type == b.type and same(a.descriptor, b.descriptor) and len(a.items) == len(b.items)
                and all(same(x, y) for x, y in zip(a.items, b.items, strict=True)))
    if type(a).__name__ == "Described":
        return same(a.descriptor, b.descriptor) and same(a.value, b.value)
    return bool(a == b)


@pytest.mark.parametrize("case", CORPUS["composites"], ids=[c["id"] for c in CORPUS["composites"]])
def test_every_composite_both_ways_with_proton(amqp10: ModuleType, case: dict[str, Any]) -> None:
    canonical = bytes.fromhex(case["bytes"])
    ours = amqp10.decode_described(canonical)
    # ours -> Proton: Proton reads what we write as it reads the reference codec's octets
    assert proton_same(proton_decode(ours.encode()), proton_decode(canonical))
    # Proton -> ours: Proton writes its own forms (list32, sym32, array32); we read them to the same object
    theirs = proton_encode(proton_decode(canonical))
    assert amqp10.decode_described(theirs) == ours


def test_proton_writes_other_octets_than_ours_for_most_composites(amqp10: ModuleType) -> None:
    """So the test above reads Proton's own forms, not our octets handed back."""
    cases = CORPUS["composites"]
    differ = sum(proton_encode(proton_decode(bytes.fromhex(c["bytes"]))) != bytes.fromhex(c["bytes"]) for c in cases)
    assert differ > len(cases) // 2, (differ, len(cases))


_SCALARS: dict[str, Any] = {
    "boolean": st.booleans(), "ubyte": st.integers(0, 2**8 - 1), "ushort": st.integers(0, 2**16 - 1),
    "uint": st.integers(0, 2**32 - 1), "ulong": st.integers(0, 2**64 - 1), "byte": st.integers(-(2**7), 2**7 - 1),
    "short": st.integers(-(2**15), 2**15 - 1), "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.integers(-(2**63), 2**63 - 1), "timestamp": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(width=32, allow_nan=False), "double": st.floats(allow_nan=False),
    "char": st.characters(exclude_categories=("Cs",)), "uuid": st.uuids(), "binary": st.binary(max_size=300),
    "string": st.text(max_size=80), "symbol": st.text(alphabet=st.characters(max_codepoint=127), max_size=300),
    "decimal32": st.binary(min_size=4, max_size=4), "decimal64": st.binary(min_size=8, max_size=8),
}


def _values(pkg: ModuleType) -> Any:
    t = pkg.types
    cls = {**{prim: getattr(t, name) for prim, (name, _) in _WRAPPED.items()}, "long": int, "double": float,
           "uuid": lambda u: u, "binary": bytes, "string": str, "boolean": bool, "decimal32": t.Decimal32,
           "decimal64": t.Decimal64}
    scalar = st.one_of(st.none(), *(s.map(cls[k]) for k, s in _SCALARS.items()))
    arrays = st.sampled_from(sorted(_SCALARS)).flatmap(
        lambda k: st.lists(_SCALARS[k], max_size=20).map(lambda xs, k=k: t.Array(k, xs)))
    # map keys: Proton's Python binding cannot hold binary keys (it hashes a writable memoryview)
    keys = st.one_of(*(s.map(cls[k]) for k, s in _SCALARS.items()
                       if k not in ("float", "double", "binary", "decimal32", "decimal64")))
    described = st.tuples(st.one_of(st.integers(2**40, 2**64 - 1).map(t.ULong),
                                    st.text(alphabet="abcxyz:.", min_size=1, max_size=20).map(lambda s: t.Symbol("x:" + s))),
                          scalar).map(lambda p: t.Described(*p))
    return st.recursive(st.one_of(scalar, arrays, described),
                        lambda inner: st.one_of(st.lists(inner, max_size=8),
                                                st.dictionaries(keys, inner, max_size=6)), max_leaves=30)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_values_both_ways_with_proton(amqp10: ModuleType, data: st.DataObject) -> None:
    v = data.draw(_values(amqp10))
    ours = amqp10.encode_value(v)
    assert amqp10.decode_value(ours) is not None or v is None
    assert same(_from_proton(amqp10, proton_decode(ours)), v)  # Proton reads what we write
    theirs = proton_encode(_to_proton(amqp10, v))
    assert same(amqp10.decode_value(theirs), v)  # we read what Proton writes


# -- hostile input ---------------------------------------------------------------------------------------------
def _seeds() -> list[tuple[str, bytes]]:
    out = [("frames", bytes.fromhex(c["bytes"])) for c in CORPUS["frames"]]
    out += [("message", bytes.fromhex(c["bytes"])) for c in CORPUS["messages"]]
    out += [("value", bytes.fromhex(c["bytes"])) for c in CORPUS["composites"] + CORPUS["values"]]
    return out


def _mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        if op == 0 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 1 and b:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        elif op == 2:
            b.insert(rng.randint(0, len(b)), rng.choice([0x00, 0x40, 0x45, 0xA1, 0xC0, 0xD0, 0xE0, 0xF0, 0xFF]))
        elif op == 3 and b:
            del b[rng.randrange(len(b)):][: rng.randint(1, 8)]
        else:
            cut = rng.randint(0, len(b))
            b = b[:cut] + b[cut:][: rng.randint(0, 16)] + b[cut:]
    return bytes(b)


def test_mutated_inputs_give_only_decode_errors(amqp10: ModuleType) -> None:
    rng = random.Random(FUZZ_SEED)
    seeds = _seeds()
    kinds: dict[str, int] = {}
    for _ in range(FUZZ_CASES):
        what, seed = rng.choice(seeds)
        data = _mutate(rng, seed)
        try:
            if what == "frames":
                amqp10.decode_frames(data)
                reader = amqp10.FrameReader(max_frame_size=2**20)
                cut = rng.randint(0, len(data))
                reader.feed(data[:cut])
                reader.feed(data[cut:])
            elif what == "message":
                amqp10.Message.decode(data)
            else:
                amqp10.decode_value(data)
        except amqp10.DecodeError as e:
            assert e.kind in amqp10.exceptions.KINDS
            kinds[e.kind] = kinds.get(e.kind, 0) + 1
    assert len(kinds) >= 8, kinds  # the mutations reach most of the decoder's refusals, not one


def test_nesting_and_octetless_elements_are_bounded(amqp10: ModuleType) -> None:
    deep = b"\x45"
    for _ in range(5000):
        deep = b"\xd0" + (len(deep) + 4).to_bytes(4, "big") + b"\x00\x00\x00\x01" + deep
    with pytest.raises(amqp10.DecodeError) as err:
        amqp10.decode_value(deep)
    assert err.value.kind == "nesting-depth"
    described = b"\x00\x53\x77" * 5000 + b"\x40"
    with pytest.raises(amqp10.DecodeError) as err:
        amqp10.decode_value(described)
    assert err.value.kind == "nesting-depth"
    # 2**32 - 1 null elements in an array of 5 octets: refused, not 4 billion Nones
    with pytest.raises(amqp10.DecodeError) as err:
        amqp10.decode_value(b"\xf0\x00\x00\x00\x05\xff\xff\xff\xff\x40")
    assert err.value.kind == "size"
    # a list announcing 2**32 - 1 items in 4 octets: refused when the octets run out
    with pytest.raises(amqp10.DecodeError) as err:
        amqp10.decode_value(b"\xd0\x00\x00\x00\x04\xff\xff\xff\xff")
    assert err.value.kind == "size"


def test_frame_reader_memory_is_bounded_by_its_cap(amqp10: ModuleType) -> None:
    open_ = amqp10.encode_frame(amqp10.Open(container_id="c", max_frame_size=4096))
    transfer = amqp10.encode_frame(amqp10.Transfer(handle=0, delivery_id=0, delivery_tag=b"t"), 0, bytes(4000))
    stream = transfer * 2000  # 8 MB of frames, fed in 1,000-octet reads
    tracemalloc.start()
    try:
        reader = amqp10.FrameReader()
        assert len(reader.feed(b"AMQP\x00\x01\x00\x00" + open_)) == 2
        reader.max_frame_size = 4096
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        count = 0
        for i in range(0, len(stream), 1000):
            count += len(reader.feed(stream[i:i + 1000]))
            assert reader.buffered < 4096 + 1000
        assert count == 2000
        # a peer announcing a 2 GiB frame: refused from its header, nothing buffered for it
        big = amqp10.FrameReader(max_frame_size=4096)
        with pytest.raises(amqp10.DecodeError) as err:
            big.feed((2**31).to_bytes(4, "big") + b"\x02\x00\x00\x00" + bytes(1000))
        assert err.value.kind == "frame-size" and big.buffered == 0
        grew = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert grew < 2_000_000, grew  # the 8 MB stream went through: nothing accumulated but a frame and a read


def test_uuid_and_wrappers_keep_their_types(amqp10: ModuleType) -> None:
    t = amqp10.types
    value = {t.Symbol("k"): [t.UInt(7), t.ULong(7), 7, t.Int(-1), uuid.UUID(int=5), t.Timestamp(1), t.Char("x")]}
    got = amqp10.decode_value(amqp10.encode_value(value))
    assert same(got, value)
    # by hand: map8 (size 46, count 2), sym8 "k", list8 (size 40, count 7) of smalluint, smallulong, smalllong,
    # smallint, uuid, timestamp, char
    items = "5207" + "5307" + "5507" + "54ff" + "98" + uuid.UUID(int=5).bytes.hex() + "830000000000000001" + "7300000078"
    assert amqp10.encode_value(value).hex() == "c12e02" + "a3016b" + "c02807" + items


def _field_values(cls: Any) -> Any:
    """Random values for a composite's primitive-typed fields (a multiple field: a list); composite and `*`
    fields stay null here (the corpus test above covers them)."""
    fields: dict[str, Any] = {}
    for name, (_, mandatory, prim) in zip(cls.FIELDS, cls._RULES, strict=True):
        if prim in _SCALARS:
            one = _SCALARS[prim]
        elif prim == "any" and mandatory:  # the spec's mandatory `*` fields are txn-ids: binary
            one = st.binary(min_size=1, max_size=16)
        elif prim == "map" and name == "filter_":  # a filter-set: null or described values (3.5.8)
            t = importlib.import_module(cls.__module__.rsplit(".", 1)[0] + ".types")
            one = st.dictionaries(st.text(alphabet="abcdef", min_size=1, max_size=5).map(lambda s: "x-" + s),
                                  st.one_of(st.none(), st.text(max_size=5).map(
                                      lambda v, t=t: t.Described(t.Symbol("x-sel"), v))), max_size=3)
        elif prim == "map":
            one = st.dictionaries(st.text(alphabet="abcdef", min_size=1, max_size=5).map(lambda s: "x-" + s),
                                  st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=5)), max_size=3)
        else:
            continue
        if name in cls.MULTIPLE:
            one = st.lists(one, min_size=1, max_size=3)
        fields[name] = one if mandatory else st.one_of(st.none(), one)
    return st.fixed_dictionaries(fields)


def _proton_field(prim: str, multiple: bool, v: Any) -> Any:
    """Our field value as the Proton object of its declared type."""
    if v is None:
        return None
    if multiple:
        wrap = _PROTON_OF.get(prim, lambda x: x)
        if len(v) == 1:
            return wrap(v[0])
        return proton.Array(proton.UNDESCRIBED, PROTON_TYPE[prim], *(wrap(x) for x in v))
    if prim == "map":  # a filter's described value: Proton's Described, its symbol descriptor
        return {proton.symbol(k): proton.Described(proton.symbol(x.descriptor), x.value)
                if hasattr(x, "descriptor") else x for k, x in v.items()}
    if prim in ("decimal32", "decimal64"):
        return getattr(proton, prim)(int.from_bytes(v, "big"))
    return _PROTON_OF.get(prim, lambda x: x)(v)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_composites_both_ways_with_proton(amqp10: ModuleType, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(n for n, c in amqp10.TYPES.items() if hasattr(c, "FIELDS"))))
    cls = amqp10.TYPES[name]
    ours = cls(**data.draw(_field_values(cls)))
    items = [_proton_field(prim, f in cls.MULTIPLE, getattr(ours, f))
             for f, (_, _, prim) in zip(cls.FIELDS, cls._RULES, strict=True)]
    while items and items[-1] is None:
        items.pop()
    theirs = proton.Described(proton.ulong(cls.DESCRIPTOR), items)
    # ours -> Proton: the same described list, value for value, type for type
    assert proton_same(proton_decode(ours.encode()), theirs)
    # Proton -> ours: Proton's octets (list32, sym32, array32, explicit widths) read back to the same object
    assert amqp10.decode_described(proton_encode(theirs)) == ours


def test_bench_script_checks_equal_work_and_reports(tmp_path: Path) -> None:
    """bench/bench_amqp10.py --quick: its equal-work checks pass and it prints a row per case, each with the two
    peers' ratios and their rounds' spread (no timing is asserted: the figures go in bench/README.md from a full
    run)."""
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_amqp10.py"), "--quick"], check=False,
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ") and not line.startswith("| case")]
    cases = ["decode open", "encode open"] + [f"{op} transfer + {size}" for size in ("100 B", "1 KiB", "64 KiB")
                                              for op in ("decode", "encode")]
    assert [r.split("|")[1].strip() for r in rows] == cases * 2  # as measured, then the table
    assert all(re.search(r"\d\.\d\dx \(\d\.\d\d-\d\.\d\d\) \| \d\.\d\dx \(\d\.\d\d-\d\.\d\d\) \|$", r) for r in rows)