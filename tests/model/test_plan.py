"""The codec plan (amqgen/amqp0/plan.py) against the reference codec's own encodings, for every method and content
class of every spec the targets cover.

The reference codec (amqgen/amqp0/refcodec.py) does not read the plan: it walks the model's fields itself. So every
size, offset, mask and prefix width the plan states is measured here on octets it did not produce.
"""

from __future__ import annotations

from typing import Any

import pytest
from javatarget import Case, cases

from amqgen.amqp0 import refcodec as ref
from amqgen.amqp0.lower import load_spec
from amqgen.amqp0.model import Field, Spec
from amqgen.amqp0.plan import CodecPlan, codec_plan

CASES = cases()
DIALECT = "rabbitmq"
#: a non-empty value of each variable-size type, and the length its prefix must announce
VARIABLE = {
    "shortstr": ("abc", 3),
    "longstr": (b"wxyz!", 5),
    "table": ([("k", ("t", True))], len(ref.table_body([("k", ("t", True))], DIALECT))),
}


def empty(f: Field) -> Any:
    return {"bit": False, "shortstr": "", "longstr": b"", "table": []}.get(f.type, 0)


def pattern(size: int) -> int:
    """An integer whose octets are all distinct and non-zero, so a misplaced or short write shows."""
    return int.from_bytes(bytes(range(0x11, 0x11 + size)), "big")


@pytest.fixture(scope="module", params=CASES, ids=[c.key for c in CASES])
def loaded(request: pytest.FixtureRequest) -> tuple[Spec, CodecPlan]:
    case: Case = request.param
    assert case.path.is_file(), f"{case.path} is missing (Debian package amqp-specs?)"
    spec = load_spec(case.path)
    return spec, codec_plan(spec)


def test_plan_is_computed_once_per_spec(loaded: tuple[Spec, CodecPlan]) -> None:
    spec, plan = loaded
    assert codec_plan(spec) is plan
    assert [mp.method.full_name for mp in plan.methods] == [m.full_name for m in spec.methods]
    assert [pp.cls.name for pp in plan.properties] == [c.name for c in spec.content_classes]


def test_method_runs_against_reference_encodings(loaded: tuple[Spec, CodecPlan]) -> None:
    spec, plan = loaded
    checked = 0
    for mp in plan.methods:
        m = mp.method
        base = {f.name: empty(f) for f in m.fields}
        payload = ref.encode_method(m, base, DIALECT)
        assert payload[:4] == mp.key.to_bytes(4, "big"), f"{m.full_name}: dispatch key"
        args = payload[4:]
        assert len(args) == mp.min_size, f"{m.full_name}: minimum size"
        start = 0  # where the run starts when every variable-size argument is empty
        for run in mp.runs:
            assert run.need == run.size + (run.var.prefix if run.var else 0)
            assert sum(1 if i.kind == "bits" else i.size for i in run.items) == run.size
            for item in run.items:
                at = start + item.offset
                if item.kind == "value":
                    v = pattern(item.size)
                    got = ref.encode_arguments(m.fields, {**base, item.field.name: v}, DIALECT)
                    want = bytearray(args)
                    want[at : at + item.size] = v.to_bytes(item.size, "big")
                    assert got == bytes(want), f"{item.field.path}: offset {item.offset} size {item.size}"
                    checked += 1
                    continue
                for f, mask in item.bits:
                    got = ref.encode_arguments(m.fields, {**base, f.name: True}, DIALECT)
                    want = bytearray(args)
                    want[at] = mask
                    assert got == bytes(want), f"{f.path}: bit octet at {item.offset}, mask {mask:#04x}"
                    checked += 1
            if run.var is not None:
                f = run.var.field
                value, n = VARIABLE[f.type]
                got = ref.encode_arguments(m.fields, {**base, f.name: value}, DIALECT)
                at = start + run.size
                assert int.from_bytes(got[at : at + run.var.prefix], "big") == n, f"{f.path}: length prefix"
                assert len(got) == mp.min_size + n
                assert run.var.max_length == 2 ** (8 * run.var.prefix) - 1
                checked += 1
            start += run.need
        assert start == len(args)
    assert checked == sum(len(m.fields) for m in spec.methods)  # every argument measured once


def flags_of(data: bytes) -> list[int]:
    """The flag words at the start of a properties encoding, through the one without a continuation bit."""
    words = []
    for i in range(0, len(data), 2):
        words.append(int.from_bytes(data[i : i + 2], "big"))
        if not words[-1] & 1:
            break
    return words


def test_properties_against_reference_encodings(loaded: tuple[Spec, CodecPlan]) -> None:
    _, plan = loaded
    for pp in plan.properties:
        c = pp.cls
        known = [0] * len(pp.words)
        for f, prop in zip(c.properties, pp.properties, strict=True):
            assert prop.field is f
            data = ref.encode_properties(c, {f.name: True if f.type == "bit" else empty(f)}, DIALECT)
            words = flags_of(data)
            assert len(words) == prop.word + 1, f"{f.path}: flag word {prop.word}"
            assert words[prop.word] == prop.mask, f"{f.path}: flag mask {prop.mask:#06x}"
            assert all(w == 1 for w in words[:-1]), f"{f.path}: earlier words carry only the continuation bit"
            octets = len(data) - 2 * len(words)
            if f.type == "bit":
                assert prop.size == 0 and octets == 0
            elif prop.size is None:
                assert octets == prop.prefix and prop.max_length == 2 ** (8 * prop.prefix) - 1, f.path
            else:
                assert octets == prop.size, f.path
            known[prop.word] |= prop.mask
        assert [w.known for w in pp.words] == known, c.name
        for w in pp.words:
            assert w.unknown & w.known == 0 and w.unknown | w.known == 0xFFFE
            assert w.refuse == w.unknown | (1 if w.last else 0)
            assert w.last == (w.index == len(pp.words) - 1)
            assert w.first == 15 * w.index


def header(c_index: int, words: list[int]) -> bytes:
    return c_index.to_bytes(2, "big") + bytes(2) + bytes(8) + b"".join(w.to_bytes(2, "big") for w in words)


def test_refuse_masks_are_what_the_reference_decoder_refuses(loaded: tuple[Spec, CodecPlan]) -> None:
    """Every bit the plan says to refuse, the reference decoder refuses; every other bit it takes."""
    spec, plan = loaded
    for pp in plan.properties:
        for w in pp.words:
            lead = [1] * w.index  # earlier words: only their continuation bit
            for bit in range(16):
                mask = 1 << bit
                if mask & w.refuse:
                    with pytest.raises(ref.RefError):
                        ref.decode_header(spec, header(pp.cls.index, [*lead, mask]), DIALECT)
                elif mask & w.known:
                    prop = next(p for p in pp.properties if p.word == w.index and p.mask == mask)
                    data = ref.encode_properties(pp.cls, {prop.field.name: True if prop.field.type == "bit"
                                                          else empty(prop.field)}, DIALECT)
                    cls, _, values = ref.decode_header(spec, header(pp.cls.index, []) + data, DIALECT)
                    assert cls is pp.cls or cls.name == pp.cls.name
                    assert prop.field.name in values


def test_round_trip_cases(loaded: tuple[Spec, CodecPlan]) -> None:
    _, plan = loaded
    for mp in plan.methods:
        names = [f.name for f in mp.method.fields]
        assert mp.cases[0] == () and len(set(mp.cases)) == len(mp.cases)
        bits = [f.name for f in mp.method.fields if f.type == "bit"]
        if names:
            assert dict(mp.cases[1]) == {n: True if n in bits else "max" for n in names}
        for b in bits:  # that bit alone set, and that bit alone clear
            assert any(dict(c).get(b) is True and not any(dict(c).get(x) is True for x in bits if x != b)
                       for c in mp.cases)
            if len(bits) > 1:
                assert any(dict(c).get(b) is False and all(dict(c).get(x) is True for x in bits if x != b)
                           for c in mp.cases)
