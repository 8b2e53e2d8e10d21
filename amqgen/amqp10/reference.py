"""The view the AMQP 1.0 reference packs (templates/docs10-html, templates/docs10-markdown) format: every type
with a stable anchor, each field's type and archetypes resolved to the anchors they link to, the types grouped by
the part that defines them. Computed once here, so the two packs only spell it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .model import Composite, Primitive, Restricted, Spec

PART_TITLES = {"types": "Types", "transport": "Transport", "messaging": "Messaging", "security": "Security",
               "transactions": "Transactions"}


def anchor(kind: str, name: str) -> str:
    """Stable across runs and specs: the kind and the spec's own name."""
    return f"{kind}-{name}"


@dataclass(frozen=True)
class FieldRow:
    position: int
    name: str
    type: str
    type_anchor: str | None  # None for "*" (any type providing ``requires``)
    mandatory: bool
    multiple: bool
    default: str | None
    value: Any
    requires: tuple[tuple[str, str | None], ...]  # (archetype, its anchor; None when nothing provides it)


@dataclass(frozen=True)
class TypeView:
    kind: str  # "primitive", "composite", "restricted"
    name: str
    anchor: str
    part: str
    descriptor: str | None  # "amqp:open:list 0x00000000:0x00000010"
    provides: tuple[tuple[str, str], ...]  # (archetype, anchor)
    source: tuple[str, str | None] | None  # restricted: (source type, its anchor)
    primitive: str | None
    encodings: tuple[tuple[str, str, int, str | None], ...]  # primitive: (code, category, width, name)
    fields: tuple[FieldRow, ...]
    choices: tuple[tuple[str, Any], ...]
    line: int | None


@dataclass(frozen=True)
class Reference:
    spec: Spec
    parts: tuple[tuple[str, str, tuple[TypeView, ...]], ...]  # (part, title, types in spec order)
    archetypes: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]  # (name, anchor, providers)
    definitions: tuple[tuple[str, str, str, str], ...]  # (name, anchor, value, part)


def build(spec: Spec) -> Reference:
    types = spec.type_by_name()

    def link(name: str) -> str | None:
        if name == "*" or name not in types:
            return None
        t = types[name]
        return anchor("type", t.name)

    def desc(t: Composite | Restricted) -> str | None:
        d = t.descriptor
        return None if d is None else f"{d.name} 0x{d.domain:08x}:0x{d.id:08x}"

    views: list[TypeView] = []
    for p in spec.primitives:
        views.append(_primitive(p))
    for c in spec.composites:
        rows = tuple(FieldRow(i, f.name, f.type, link(f.type), f.mandatory, f.multiple, f.default, f.value,
                              tuple((a, anchor("archetype", a) if a in spec.archetypes else None)
                                    for a in f.requires))
                     for i, f in enumerate(c.fields))
        views.append(TypeView("composite", c.name, anchor("type", c.name), c.part, desc(c),
                              tuple((a, anchor("archetype", a)) for a in c.provides), None, None, (), rows, (),
                              c.location.line))
    for r in spec.restricted:
        views.append(TypeView("restricted", r.name, anchor("type", r.name), r.part, desc(r),
                              tuple((a, anchor("archetype", a)) for a in r.provides), (r.source, link(r.source)),
                              r.primitive, (), (), tuple((ch.name, ch.value) for ch in r.choices), r.location.line))
    by_part = {p: tuple(v for v in views if v.part == p) for p in PART_TITLES}
    ref = Reference(
        spec=spec,
        parts=tuple((p, PART_TITLES[p], by_part[p]) for p in PART_TITLES if by_part[p]),
        archetypes=tuple((a, anchor("archetype", a), tuple((t, anchor("type", t)) for t in providers))
                         for a, providers in sorted(spec.archetypes.items())),
        definitions=tuple((d.name, anchor("definition", d.name), d.value, d.part) for d in spec.definitions),
    )
    anchors = [v.anchor for v in views] + [a[1] for a in ref.archetypes] + [d[1] for d in ref.definitions]
    if len(anchors) != len(set(anchors)):  # a spec defect would make two links ambiguous
        raise AssertionError("duplicate anchors in the 1.0 reference")
    return ref


def _primitive(p: Primitive) -> TypeView:
    return TypeView("primitive", p.name, anchor("type", p.name), "types", None, (), None, p.name,
                    tuple((f"0x{e.code:02x}", e.category, e.width, e.name) for e in p.encodings), (), (),
                    p.location.line)
