"""The AMQP 1.0 codec plan: what every 1.0 codec target needs to know, computed once from the model, so a pack's
hook only spells it in its language (the 0-x codec plan, :mod:`amqgen.plan`, does the same for 0-8 to 0-9-1).

- each constructor of the type system: its code, primitive, category and width, and the canonical (smallest)
  constructors an encoder picks between;
- each described type (composites and described restricted types): descriptor code and symbol, its fields in
  list order, each field's reading (a primitive, a composite, a described section, or any value) and the types a
  composite-typed field accepts;
- restricted types with their choices, archetypes with the types providing them, the message's sections in
  order, and the definitions (PORT, MIN-MAX-FRAME-SIZE, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..errors import Location, SpecError
from . import wire
from .model import Composite, Restricted, Spec
from .refcodec import EMPTY_PER_OCTET, LIST0_COST, MAX_DEPTH  # every 1.0 codec's bounds: the corpus's limits

FieldKind = Literal["primitive", "composite", "any"]

#: the key types of the maps whose keys only the prose restricts (the XML says only source="map"): restricted type
#: -> (the key primitives, the section saying so). A type restricting one of these (node-properties is fields)
#: inherits its keys. An encoder writes a str key as the first primitive and refuses keys of no listed type.
KEY_TYPES: dict[str, tuple[tuple[str, ...], str]] = {
    "fields": (("symbol",), "part 2, 2.8.13"),
    "annotations": (("symbol", "ulong"), "part 3, 3.2.10"),
    "application-properties": (("string",), "part 3, 3.2.5"),
    "filter-set": (("symbol",), "part 3, 3.5.8"),
}
#: the values of those maps, where the prose restricts them too: "simple" (no list, map or array: 3.2.5 says
#: application-properties hold simple types only) or "described" (null or a described value: 3.5.8, a filter).
#: An encoder refuses another value; a decoder reads it (a peer's message is not refused for it).
VALUE_RULES: dict[str, tuple[str, str]] = {
    "application-properties": ("simple", "part 3, 3.2.5"),
    "filter-set": ("described", "part 3, 3.5.8"),
}


@dataclass(frozen=True)
class Constructor:
    code: int
    primitive: str  # "uint"; "array" for the array constructors
    category: str  # fixed, variable, compound, array
    width: int  # fixed: the value's octets; others: the size (and count) field's width
    name: str  # "smalluint", "uint0", or the primitive's own name for its main encoding


@dataclass(frozen=True)
class FieldPlan:
    index: int
    name: str
    type: str  # the spec's type name, or "*"
    kind: FieldKind
    primitive: str | None  # kind "primitive": the wire primitive ("uint", "symbol", "map")
    accepts: tuple[str, ...]  # kind "composite": the described types the field takes; "any": the providers
    mandatory: bool
    multiple: bool
    default: Any  # resolved to the primitive's value; None when the spec gives none
    requires: tuple[str, ...]
    key_types: tuple[str, ...] = ()  # a map whose keys the prose restricts (KEY_TYPES); () for any key
    value_rule: str = ""  # and its values (VALUE_RULES): "simple", "described" or "" for any value


@dataclass(frozen=True)
class DescribedPlan:
    name: str
    kind: Literal["composite", "section"]  # a composite (a list of fields) or a described restricted type
    code: int  # the numeric descriptor, domain << 32 | id
    symbol: str
    part: str
    provides: tuple[str, ...]
    fields: tuple[FieldPlan, ...]  # composites
    source: str | None  # sections: the primitive the value has ("binary", "list", "map", "*")
    key_types: tuple[str, ...] = ()  # map sections: the keys' primitives (KEY_TYPES)
    value_rule: str = ""  # map sections: what the values may be (VALUE_RULES)


@dataclass(frozen=True)
class RestrictedPlan:
    name: str
    primitive: str
    choices: tuple[tuple[str, Any], ...]
    provides: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    constructors: tuple[Constructor, ...]
    described: tuple[DescribedPlan, ...]
    restricted: tuple[RestrictedPlan, ...]  # the undescribed ones (choices, or a name for a primitive)
    archetypes: tuple[tuple[str, tuple[str, ...]], ...]
    sections: tuple[str, ...]  # the message's sections in wire order, each body kind listed
    body_sections: tuple[str, ...]
    definitions: tuple[tuple[str, str], ...]
    max_depth: int
    empty_per_octet: int  # array elements of no octets one decode may build per octet of its input
    list0_cost: int  # what one list0 element (a new list) costs of that budget
    frame_header_size: int
    frame_types: tuple[tuple[str, int], ...]
    protocol_ids: tuple[tuple[str, int], ...]
    min_max_frame_size: int

    def described_by_name(self) -> dict[str, DescribedPlan]:
        return {d.name: d for d in self.described}


_PLANS: dict[int, tuple[Spec, Plan]] = {}  # by the model's identity (a Spec holds a dict: no hash)


def codec_plan(spec: Spec) -> Plan:
    """The plan of ``spec``, computed once per model object (a second call gives the same object)."""
    hit = _PLANS.get(id(spec))
    if hit is None or hit[0] is not spec:
        hit = _PLANS[id(spec)] = (spec, _build(spec))
    return hit[1]


def _build(spec: Spec) -> Plan:
    types = spec.type_by_name()
    constructors = tuple(
        Constructor(e.code, "array" if e.category == "array" else p.name, e.category, e.width, e.name or p.name)
        for p in spec.primitives for e in p.encodings
    )
    sections = {r.name for r in spec.restricted if r.descriptor is not None} | {
        c.name for c in spec.composites if "section" in c.provides}

    def keys(name: str) -> tuple[str, ...]:
        return KEY_TYPES[k][0] if (k := restricting(name)) else ()

    def values(name: str) -> str:
        return VALUE_RULES[k][0] if (k := restricting(name)) in VALUE_RULES else ""

    def restricting(name: str) -> str:
        """The type of KEY_TYPES ``name`` restricts (itself, or one up its source chain), or ""."""
        seen: set[str] = set()
        while name not in KEY_TYPES:
            t = types.get(name)
            if not isinstance(t, Restricted) or name in seen:
                return ""
            seen.add(name)
            name = t.source
        return name

    def field(i: int, f: Any) -> FieldPlan:
        if f.type == "*":
            providers = tuple(t for a in f.requires for t in spec.archetypes.get(a, ()))
            return FieldPlan(i, f.name, f.type, "any", None, providers, f.mandatory, f.multiple, f.value,
                             f.requires)
        t = types[f.type]
        if isinstance(t, Composite) or (isinstance(t, Restricted) and t.descriptor is not None):
            return FieldPlan(i, f.name, f.type, "composite", None, (f.type,), f.mandatory, f.multiple, f.value,
                             f.requires)
        prim = t.primitive if isinstance(t, Restricted) else t.name
        return FieldPlan(i, f.name, f.type, "primitive", prim, (), f.mandatory, f.multiple, f.value, f.requires,
                         keys(f.type), values(f.type))

    described: list[DescribedPlan] = []
    for c in spec.composites:
        described.append(DescribedPlan(c.name, "composite", c.descriptor.code, c.descriptor.name, c.part, c.provides,
                                       tuple(field(i, f) for i, f in enumerate(c.fields)), None))
    for r in spec.restricted:
        if r.descriptor is not None:
            described.append(DescribedPlan(r.name, "section", r.descriptor.code, r.descriptor.name, r.part,
                                           r.provides, (), r.primitive, keys(r.name), values(r.name)))
    restricted = tuple(RestrictedPlan(r.name, r.primitive, tuple((ch.name, ch.value) for ch in r.choices), r.provides)
                       for r in spec.restricted if r.descriptor is None)
    order = tuple(n for s in wire.SECTION_ORDER for n in (wire.BODY_SECTIONS if s == "body" else (s,)))
    missing = [n for n in order if n not in sections]
    if missing:  # the section names are fixed knowledge (3.2); a spec that lost one cannot make a message codec
        raise SpecError(f"message sections {missing} are not described types of this file set", Location(spec.path))
    return Plan(
        constructors=constructors,
        described=tuple(described),
        restricted=restricted,
        archetypes=tuple(spec.archetypes.items()),
        sections=order,
        body_sections=wire.BODY_SECTIONS,
        definitions=tuple((d.name, d.value) for d in spec.definitions),
        max_depth=MAX_DEPTH,
        empty_per_octet=EMPTY_PER_OCTET,
        list0_cost=LIST0_COST,
        frame_header_size=wire.FRAME_HEADER_SIZE,
        frame_types=(("amqp", wire.FRAME_TYPE_AMQP), ("sasl", wire.FRAME_TYPE_SASL)),
        protocol_ids=(("amqp", wire.PROTOCOL_ID_AMQP), ("tls", wire.PROTOCOL_ID_TLS), ("sasl", wire.PROTOCOL_ID_SASL)),
        min_max_frame_size=int(spec.definition("MIN-MAX-FRAME-SIZE").value),
    )
