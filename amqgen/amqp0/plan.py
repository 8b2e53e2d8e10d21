"""The codec plan: the wire arithmetic of every method and content class, computed once for every target.

A pack reads ``codec`` from its render context and only spells it in its language. Per method the
arguments are cut into runs: the fixed-size values and bit octets up to the next variable-size argument
(a string or a table), with their offsets inside the run, then that argument, whose length prefix a
decoder reads under the same bounds check as the run before it. So one check of ``Run.need`` octets
covers a run and the prefix after it, and a method with no variable-size argument is one run.

Per content class the plan gives its flag words: which bits name a property (``known``), which a
decoder must refuse (``refuse``: bits no property has, and the continuation bit of the last word).

The reference codec (:mod:`amqgen.refcodec`) does not read this module, so the conformance corpus stays
an independent check of it (tests/model/test_plan.py measures every plan against the reference's encodings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Literal

from . import policy, wire
from .model import PROPERTIES_PER_FLAG_WORD, WIRE_SIZES, Class, Field, Method, Spec

#: octets of the length prefix of each variable-size wire type, and the longest value it can announce
LENGTH_PREFIX: dict[str, int] = {"shortstr": 1, "longstr": 4, "table": 4}
MAX_LENGTH: dict[str, int] = {"shortstr": 2**8 - 1, "longstr": 2**32 - 1, "table": 2**32 - 1}
FLAG_CONTINUATION = wire.FLAG_CONTINUATION
FLAG_WORD_BITS = (1 << 8 * wire.FLAG_WORD_SIZE) - 1


@dataclass(frozen=True)
class Value:
    """A fixed-size argument at ``offset`` octets from the start of its run."""

    field: Field
    offset: int
    size: int
    kind: Literal["value"] = "value"


@dataclass(frozen=True)
class BitOctet:
    """One octet of up to 8 bit arguments at ``offset`` in its run: (field, mask), bit 0 first."""

    offset: int
    bits: tuple[tuple[Field, int], ...]
    kind: Literal["bits"] = "bits"

    @property
    def fields(self) -> tuple[Field, ...]:
        return tuple(f for f, _ in self.bits)


@dataclass(frozen=True)
class Variable:
    """The variable-size argument that closes a run: its length prefix's octets and longest length."""

    field: Field
    prefix: int
    max_length: int


@dataclass(frozen=True)
class Run:
    """Fixed-size items read or written after one bounds check, then at most one variable-size item."""

    size: int  # octets of the fixed items
    items: tuple[Value | BitOctet, ...]
    var: Variable | None
    need: int  # octets one decoder bounds check needs: the fixed items and the prefix of ``var``


#: One round-trip test case: (field name, "max" for its largest value, or a bit's value); fields not named keep
#: their defaults (zero, empty, false).
Case = tuple[tuple[str, str | bool], ...]


@dataclass(frozen=True)
class MethodPlan:
    method: Method
    key: int  # the dispatch key: class id << 16 | method id, as the first 4 payload octets read
    runs: tuple[Run, ...]
    min_size: int  # octets of the arguments when every variable-size one is empty
    checks: tuple[policy.Check, ...]  # amqgen.policy's checks of the arguments' asserts
    cases: tuple[Case, ...]  # round trips every target's tests run

    @property
    def fields(self) -> tuple[Field, ...]:
        return self.method.fields


@dataclass(frozen=True)
class FlagWord:
    index: int
    first: int  # the class's index of the property its bit 15 flags (15 per word)
    known: int  # bits of the properties this word flags
    unknown: int  # bits no property has (the continuation bit aside)
    refuse: int  # bits a decoder must find clear: ``unknown``, and the continuation bit of the last word
    last: bool


@dataclass(frozen=True)
class Property:
    """A property: its flag (word and mask in it), and its size or the prefix of its length."""

    field: Field
    word: int
    mask: int
    size: int | None  # octets of a fixed-size property; 0 for a bit (its flag is its value); None: variable
    prefix: int  # octets of the length prefix of a variable-size one, else 0
    max_length: int  # its longest length (variable-size), else 0


@dataclass(frozen=True)
class PropertiesPlan:
    cls: Class
    words: tuple[FlagWord, ...]
    properties: tuple[Property, ...]
    cases: tuple[Case, ...]  # round trips: no property, every property, each property alone (at its largest)

    @property
    def fields(self) -> tuple[Field, ...]:
        return self.cls.properties


@dataclass(frozen=True)
class FramePlan:
    """Frame facts from :mod:`amqgen.wire`, for the packs that spell frames."""

    overhead: int  # octets outside a payload: the header and the frame-end octet
    header: tuple[tuple[str, int], ...]  # (name, octets) of the frame header, in order
    method_id: tuple[tuple[str, int], ...]  # (name, octets) before a method's arguments
    content_header_prefix: int  # octets of a content header before its flag words
    content_header_at: dict[str, int]  # offset of each content header field: class-id, weight, body-size
    method_type: int  # the frame type of a method frame
    end: int  # the frame-end octet
    protocol_header: bytes  # the spec's, e.g. b"AMQP\x00\x00\x09\x01"

    @property
    def header_size(self) -> int:
        return sum(n for _, n in self.header)

    @property
    def method_id_size(self) -> int:
        return sum(n for _, n in self.method_id)

    @property
    def method_start(self) -> int:
        """Where a method frame's arguments start: after the frame header and the method id."""
        return self.header_size + self.method_id_size

    @property
    def properties_start(self) -> int:
        """Where a content header frame's flag words start: after the frame header and the header's prefix."""
        return self.header_size + self.content_header_prefix


@dataclass(frozen=True)
class CodecPlan:
    methods: tuple[MethodPlan, ...]
    properties: tuple[PropertiesPlan, ...]
    frame: FramePlan
    length_prefix: dict[str, int] = field(default_factory=lambda: dict(LENGTH_PREFIX))  # by variable-size type
    flag_word_size: int = wire.FLAG_WORD_SIZE  # octets of a property flag word
    flag_continuation: int = wire.FLAG_CONTINUATION  # its bit that says another word follows

    def method(self, full_name: str) -> MethodPlan:
        return next(mp for mp in self.methods if mp.method.full_name == full_name)

    def content_class(self, name: str) -> PropertiesPlan:
        return next(pp for pp in self.properties if pp.cls.name == name)


def method_plan(m: Method) -> MethodPlan:
    by_name = {f.name: f for f in m.fields}
    runs: list[Run] = []
    items: list[Value | BitOctet] = []
    size = 0
    for slot in m.slots:
        if slot.kind == "bits":
            items.append(BitOctet(size, tuple((by_name[n], 1 << i) for i, n in enumerate(slot.fields))))
            size += 1
            continue
        f = by_name[slot.fields[0]]
        if slot.size is not None:
            items.append(Value(f, size, slot.size))
            size += slot.size
            continue
        var = Variable(f, LENGTH_PREFIX[f.type], MAX_LENGTH[f.type])
        runs.append(Run(size, tuple(items), var, size + var.prefix))
        items, size = [], 0
    if items or not runs:
        runs.append(Run(size, tuple(items), None, size))
    return MethodPlan(
        method=m,
        key=(m.class_index << 16) | m.index,
        runs=tuple(runs),
        min_size=sum(r.need for r in runs),
        checks=policy.checks(m),
        cases=method_cases(m),
    )


def method_cases(m: Method) -> tuple[Case, ...]:
    """Defaults; every field at its largest; for each bit, that bit alone set and that bit alone clear (the other
    fields at their largest). A bit's largest value is true."""
    if not m.fields:
        return ((),)
    bits = [f.name for f in m.fields if f.type == "bit"]
    others: Case = tuple((f.name, "max") for f in m.fields if f.type != "bit")
    cases: list[Case] = [(), tuple((f.name, True if f.type == "bit" else "max") for f in m.fields)]
    for b in bits:
        cases.append((*others, (b, True)))
        cases.append((*others, *((x, x != b) for x in bits)))
    return tuple(dict.fromkeys(cases))


def properties_plan(c: Class) -> PropertiesPlan:
    n = c.property_flag_words
    words = []
    for w, known in enumerate(c.property_flag_masks):
        unknown = FLAG_WORD_BITS & ~FLAG_CONTINUATION & ~known
        last = w == n - 1
        words.append(FlagWord(w, w * PROPERTIES_PER_FLAG_WORD, known, unknown,
                              unknown | (FLAG_CONTINUATION if last else 0), last))
    props = tuple(
        Property(f, f.flag_word or 0, f.flag_mask or 0, 0 if f.type == "bit" else WIRE_SIZES[f.type],
                 LENGTH_PREFIX.get(f.type, 0), MAX_LENGTH.get(f.type, 0))
        for f in c.properties
    )
    if c.properties:
        cases: tuple[Case, ...] = ((), tuple((f.name, "max") for f in c.properties),
                                   *(((f.name, "max"),) for f in c.properties))
    else:
        cases = ((),)
    return PropertiesPlan(c, tuple(words), props, cases)


def _offsets(layout: tuple[tuple[str, int], ...]) -> dict[str, int]:
    out, at = {}, 0
    for name, size in layout:
        out[name] = at
        at += size
    return out


def frame_constant(spec: Spec, name: str) -> int:
    """The spec's value of a frame constant, or the one every family gives it (amqgen.wire)."""
    const = spec.constant_by_name.get(name)
    return const.value if const is not None else wire.FRAME_DEFAULTS[name]


@cache
def codec_plan(spec: Spec) -> CodecPlan:
    """The plan of every method and content class of ``spec`` (cached: the model is frozen)."""
    return CodecPlan(
        methods=tuple(method_plan(m) for m in spec.methods),
        properties=tuple(properties_plan(c) for c in spec.content_classes),
        frame=FramePlan(
            overhead=wire.FRAME_OVERHEAD,
            header=wire.FRAME_HEADER,
            method_id=wire.METHOD_ID,
            content_header_prefix=wire.HEADER_PREFIX,
            content_header_at=_offsets(wire.CONTENT_HEADER),
            method_type=frame_constant(spec, "frame-method"),
            end=frame_constant(spec, "frame-end"),
            protocol_header=spec.protocol_header,
        ),
    )
