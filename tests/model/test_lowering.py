"""Lowering (bit octets, flag words, fixed prefixes) against an independent source: pika's
generated 0-9-1 ``spec.py`` from PyPI, plus hand-made specs for the edge cases."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pika.spec
import pytest
from specgen import spec_text, write

from amqgen.amqp0.lower import load_spec
from amqgen.amqp0.model import Method, Spec
from amqgen.amqp0.plan import codec_plan

pytestmark = pytest.mark.peers  # its tier, not its folder's (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[2]
SPEC_091 = ROOT / "spec" / "amqp0-9-1.xml"
EMPTY_SIZE = {"shortstr": 1, "longstr": 4, "table": 4}  # an empty value's encoded size
ZERO: dict[str, Any] = {"shortstr": "", "longstr": "", "table": {}, "bit": False}


@pytest.fixture(scope="module")
def spec091() -> Spec:
    return load_spec(SPEC_091)


def pika_methods() -> list[type]:
    out = []
    for _, holder in inspect.getmembers(pika.spec, inspect.isclass):
        for _, cls in inspect.getmembers(holder, inspect.isclass):
            if issubclass(cls, pika.amqp_object.Method) and hasattr(cls, "INDEX"):
                out.append(cls)
    return sorted(out, key=lambda c: c.INDEX)


def pika_encode(cls: type, method: Method, **overrides: Any) -> bytes:
    params = list(inspect.signature(cls.__init__).parameters)[1:]
    assert len(params) == len(method.fields), (cls.NAME, params, [f.name for f in method.fields])
    kwargs = {p: ZERO.get(f.type, 0) for p, f in zip(params, method.fields, strict=True)}
    kwargs.update(overrides)
    return b"".join(cls(**kwargs).encode())


def test_pika_covers_the_spec(spec091: Spec) -> None:
    methods = pika_methods()
    assert len(methods) >= 50
    ours = {m.id for m in spec091.methods}
    assert {(c.INDEX >> 16, c.INDEX & 0xFFFF) for c in methods} >= ours


def test_every_bit_position_matches_pika(spec091: Spec) -> None:
    """Set each bit field alone, encode with pika, find the changed octet and bit."""
    checked = 0
    for cls in pika_methods():
        method = spec091.method_by_id.get((cls.INDEX >> 16, cls.INDEX & 0xFFFF))
        if method is None:
            continue  # pika also carries RabbitMQ extensions the official spec lacks
        params = list(inspect.signature(cls.__init__).parameters)[1:]
        base = pika_encode(cls, method)
        for p, f in zip(params, method.fields, strict=True):
            if f.type != "bit":
                continue
            flipped = pika_encode(cls, method, **{p: True})
            diff = [i for i, (a, b) in enumerate(zip(base, flipped, strict=True)) if a != b]
            assert len(diff) == 1, (method.full_name, f.name)
            octet = diff[0]
            assert flipped[octet] ^ base[octet] == 1 << f.bit, (method.full_name, f.name)
            assert f.slot is not None
            expected_octet = sum(s.size or EMPTY_SIZE[s.type] for s in method.slots[: f.slot])
            assert octet == expected_octet, (method.full_name, f.name)
            checked += 1
    assert checked >= 30


def test_fixed_prefix_sizes_match_pika(spec091: Spec) -> None:
    """A method with only fixed-size arguments encodes to exactly its fixed prefix."""
    checked = 0
    for cls in pika_methods():
        method = spec091.method_by_id.get((cls.INDEX >> 16, cls.INDEX & 0xFFFF))
        if method is None:
            continue
        encoded = pika_encode(cls, method)
        if all(s.size is not None for s in method.slots):
            assert len(encoded) == method.fixed_prefix_size, method.full_name
            checked += 1
        else:
            assert len(encoded) > method.fixed_prefix_size
            assert len(encoded) == sum(s.size or EMPTY_SIZE[s.type] for s in method.slots)
    assert checked >= 15


def test_named_methods(spec091: Spec) -> None:
    qos = spec091.method_by_name["basic.qos"]
    assert [(s.kind, s.fields, s.offset) for s in qos.slots] == [
        ("value", ("prefetch-size",), 0), ("value", ("prefetch-count",), 4), ("bits", ("global",), 6)]
    assert qos.fixed_prefix_size == 7 and len(codec_plan(spec091).method("basic.qos").runs) == 1
    consume = spec091.method_by_name["basic.consume"]
    bits = consume.slots[3]
    assert bits.kind == "bits" and bits.fields == ("no-local", "no-ack", "exclusive", "no-wait")
    assert consume.fixed_prefix_size == 2  # reserved-1 short, then the queue name
    # runs: reserved-1 closed by the queue name, then the consumer tag, then the bits closed by arguments
    runs = codec_plan(spec091).method("basic.consume").runs
    assert [(r.size, r.var.field.name if r.var else None) for r in runs] == [
        (2, "queue"), (0, "consumer-tag"), (1, "arguments")]
    declare = spec091.method_by_name["queue.declare"]
    assert declare.slots[2].fields == ("passive", "durable", "exclusive", "auto-delete", "no-wait")
    assert [f.bit for f in declare.fields if f.type == "bit"] == [0, 1, 2, 3, 4]


def test_basic_property_flags_match_pika(spec091: Spec) -> None:
    basic = spec091.class_by_name["basic"]
    flags = {k[5:].lower().replace("_", "-"): v for k, v in vars(pika.spec.BasicProperties).items() if k.startswith("FLAG_")}
    assert len(flags) == len(basic.properties) == 14
    # The official 0-9-1 XML names the 14th property "reserved"; pika keeps 0-8's "cluster-id".
    renamed = {"reserved": "cluster-id"}
    for p in basic.properties:
        assert flags[renamed.get(p.name, p.name)] == p.flag_mask, p.name
        assert p.flag_word == 0
    assert basic.property_flag_words == 1


def bit_spec(nbits: int, nprops: int) -> str:
    fields = "".join(f'<field name="b{i}" domain="bit"/>' for i in range(nbits))
    props = "".join(f'<field name="p{i}" domain="octet"/>' for i in range(nprops))
    return spec_text(
        f'<class name="c" index="10">{props}<chassis name="server" implement="MUST"/>'
        f'<method name="m" index="10"><chassis name="server" implement="MUST"/>'
        f'<field name="a" domain="short"/>{fields}<field name="s" domain="shortstr"/><field name="z" domain="bit"/>'
        f"</method></class>\n"
    )


@pytest.mark.parametrize("nbits,octets", [(1, 1), (8, 1), (9, 2), (16, 2), (17, 3)])
def test_bit_runs_pack_at_most_eight_per_octet(tmp_path: Path, nbits: int, octets: int) -> None:
    m = load_spec(write(tmp_path, "s.xml", bit_spec(nbits, 0))).method_by_name["c.m"]
    bit_slots = [s for s in m.slots if s.kind == "bits"]
    assert len(bit_slots) == octets + 1  # plus the lone bit after the shortstr
    assert [len(s.fields) for s in bit_slots[:-1]] == [8] * (nbits // 8) + ([nbits % 8] if nbits % 8 else [])
    assert m.fixed_prefix_size == 2 + octets
    b8 = next((f for f in m.fields if f.name == "b8"), None)
    if b8 is not None:
        assert (b8.slot, b8.bit) == (2, 0)
    assert bit_slots[-1].offset is None  # after a variable-size slot offsets are unknown


@pytest.mark.parametrize("nprops,words", [(0, 1), (1, 1), (15, 1), (16, 2), (30, 2), (31, 3)])
def test_property_flag_words(tmp_path: Path, nprops: int, words: int) -> None:
    cls = load_spec(write(tmp_path, "s.xml", bit_spec(1, nprops))).class_by_name["c"]
    assert cls.property_flag_words == words
    for i, p in enumerate(cls.properties):
        assert (p.flag_word, p.flag_bit) == (i // 15, 15 - i % 15)
        assert p.flag_bit != 0  # bit 0 is the continuation flag
    if nprops >= 16:
        assert (cls.properties[15].flag_word, cls.properties[15].flag_bit) == (1, 15)
