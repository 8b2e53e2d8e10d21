"""``amqgen diff OLD NEW`` for two AMQP 1.0 file sets: what changed, each change classified as breaking wire
compatibility or not, in the one document (``amqgen-diff``) and text both families write (:mod:`amqgen.changes`).

Types are matched by name, fields by name within their composite (a field whose name changed but whose position
and type did not is a rename). Breaking: a type removed or its class changed; a descriptor changed (peers
dispatch on it); an encoding removed or changed; a field removed, moved, retyped to another primitive, inserted
before others, made mandatory or multiple (or no longer multiple), or its default changed (an absent field means
its default: two peers would read one frame differently); a choice removed or its value changed; a restricted
type's primitive changed; a definition's value changed (ports, version, the minimum max-frame-size). Not
breaking: a type, encoding or choice added, an optional field appended, a field renamed in place, a field made
optional, a type name changed with the same primitive, ``provides`` changed, a restricted type's source renamed
with the same primitive.
"""

from __future__ import annotations

from typing import Any

from .. import changes
from .model import Composite, Field, Primitive, Restricted, Spec

KINDS: dict[str, str] = {
    "type-added": "type", "type-removed": "type", "type-class-changed": "type", "descriptor-changed": "type",
    "provides-changed": "type",
    "encoding-added": "encoding", "encoding-removed": "encoding", "encoding-changed": "encoding",
    "field-added": "field", "field-removed": "field", "field-moved": "field", "field-renamed": "field",
    "field-retyped": "field", "field-type-renamed": "field", "field-mandatory-changed": "field",
    "field-multiple-changed": "field", "field-default-changed": "field", "field-requires-changed": "field",
    "choice-added": "choice", "choice-removed": "choice", "choice-value-changed": "choice",
    "source-changed": "type", "definition-added": "definition", "definition-removed": "definition",
    "definition-changed": "definition",
}


class Diff(changes.Diff[Spec]):
    KINDS = KINDS

    def side(self, s: Spec) -> dict[str, Any]:
        return {"name": s.name, "sha256": s.sha256, "family": s.family, "files": [f.name for f in s.files]}

    def head(self) -> str:
        return f"amqgen diff {self.old.path} (1-0) -> {self.new.path} (1-0)"


def diff_specs(old: Spec, new: Spec) -> Diff:
    d = Diff(old, new)
    ot, nt = old.type_by_name(), new.type_by_name()
    for name, t in ot.items():
        if name not in nt:
            d.add("type-removed", name, True, f"type {name} removed: a peer still sending it is not understood")
            continue
        u = nt[name]
        if type(t) is not type(u):
            d.add("type-class-changed", name, True, f"type {name} is {_cls(t)}, now {_cls(u)}", _cls(t), _cls(u))
            continue
        if isinstance(t, Primitive) and isinstance(u, Primitive):
            _encodings(d, t, u)
        elif isinstance(t, Composite) and isinstance(u, Composite):
            _descriptor(d, name, t, u)
            _provides(d, name, t.provides, u.provides)
            _fields(d, old, new, t, u)
        elif isinstance(t, Restricted) and isinstance(u, Restricted):
            _descriptor(d, name, t, u)
            _provides(d, name, t.provides, u.provides)
            if t.primitive != u.primitive:
                d.add("source-changed", name, True, f"{name} restricts a {t.primitive}, now a {u.primitive}",
                      t.source, u.source)
            elif t.source != u.source:
                d.add("source-changed", name, False, f"{name}'s source {t.source} -> {u.source}, the same "
                      f"{t.primitive} on the wire", t.source, u.source)
            _choices(d, name, t, u)
    for name in nt:
        if name not in ot:
            d.add("type-added", name, False, f"type {name} added ({_cls(nt[name])})")
    od, nd = {x.name: x.value for x in old.definitions}, {x.name: x.value for x in new.definitions}
    for k, was in od.items():
        if k not in nd:
            d.add("definition-removed", f"definition.{k}", True, f"definition {k} removed", was)
        elif was != nd[k]:
            d.add("definition-changed", f"definition.{k}", True, f"{k} {was} -> {nd[k]}", was, nd[k])
    for k, now in nd.items():
        if k not in od:
            d.add("definition-added", f"definition.{k}", False, f"definition {k} = {now} added", None, now)
    return d


def _cls(t: Primitive | Composite | Restricted) -> str:
    return {Primitive: "primitive", Composite: "composite", Restricted: "restricted"}[type(t)]


def _descriptor(d: Diff, name: str, t: Composite | Restricted, u: Composite | Restricted) -> None:
    a = None if t.descriptor is None else (t.descriptor.name, t.descriptor.code)
    b = None if u.descriptor is None else (u.descriptor.name, u.descriptor.code)
    if a != b:
        d.add("descriptor-changed", name, True, f"{name}'s descriptor {a} -> {b}: peers dispatch on it",
              list(a) if a else None, list(b) if b else None)


def _provides(d: Diff, name: str, a: tuple[str, ...], b: tuple[str, ...]) -> None:
    if set(a) != set(b):
        d.add("provides-changed", name, False, f"{name} provides {', '.join(a) or 'nothing'} -> "
              f"{', '.join(b) or 'nothing'}", list(a), list(b))


def _encodings(d: Diff, t: Primitive, u: Primitive) -> None:
    oe, ne = {e.code: e for e in t.encodings}, {e.code: e for e in u.encodings}
    for code, e in oe.items():
        path = f"{t.name}.0x{code:02x}"
        if code not in ne:
            d.add("encoding-removed", path, True, f"{t.name} loses constructor 0x{code:02x}: a peer sending it is "
                  "refused")
        elif (e.category, e.width) != (ne[code].category, ne[code].width):
            d.add("encoding-changed", path, True, f"constructor 0x{code:02x} of {t.name}: {e.category}/{e.width} -> "
                  f"{ne[code].category}/{ne[code].width}")
    for code in ne:
        if code not in oe:
            d.add("encoding-added", f"{u.name}.0x{code:02x}", False, f"{u.name} gains constructor 0x{code:02x}")


def _prim(spec: Spec, type_name: str) -> str:
    t = spec.type_by_name().get(type_name)
    if isinstance(t, Restricted):
        return t.primitive
    return type_name  # a primitive, a composite's own name, or "*"


def _fields(d: Diff, old: Spec, new: Spec, t: Composite, u: Composite) -> None:
    of, nf = list(t.fields), list(u.fields)
    by_new = {f.name: i for i, f in enumerate(nf)}
    matched: dict[int, int] = {}
    for i, f in enumerate(of):
        if f.name in by_new:
            matched[i] = by_new[f.name]
        elif i < len(nf) and nf[i].name not in {x.name for x in of} and _prim(old, f.type) == _prim(new, nf[i].type):
            matched[i] = i
            d.add("field-renamed", f"{t.name}.{f.name}", False, f"{t.name} field {i} renamed {f.name} -> "
                  f"{nf[i].name} (same position and type)", f.name, nf[i].name)
        else:
            d.add("field-removed", f"{t.name}.{f.name}", True, f"{t.name}.{f.name} (position {i}) removed: the "
                  "fields after it shift")
    for i, j in matched.items():
        a, b = of[i], nf[j]
        path = f"{t.name}.{a.name}"
        if i != j:
            d.add("field-moved", path, True, f"{path} moved from position {i} to {j}: fields are positional", i, j)
        _field(d, old, new, path, a, b)
    taken = set(matched.values())
    last_old = max(taken, default=-1)
    for j, f in enumerate(nf):
        if j in taken:
            continue
        appended = j > last_old
        breaking = not appended or f.mandatory
        why = ("appended and optional: old peers omit it" if not breaking else
               "mandatory: old peers never send it" if appended else "inserted: the fields after it shift")
        d.add("field-added", f"{u.name}.{f.name}", breaking, f"{u.name}.{f.name} added at position {j} ({why})")


def _field(d: Diff, old: Spec, new: Spec, path: str, a: Field, b: Field) -> None:
    if a.type != b.type:
        same = _prim(old, a.type) == _prim(new, b.type)
        d.add("field-type-renamed" if same else "field-retyped", path, not same,
              f"{path}: {a.type} -> {b.type}" + (" (the same primitive)" if same else ""), a.type, b.type)
    if a.mandatory != b.mandatory:
        d.add("field-mandatory-changed", path, b.mandatory, f"{path} is {'now' if b.mandatory else 'no longer'} "
              "mandatory" + (": old peers may leave it null" if b.mandatory else ""), a.mandatory, b.mandatory)
    if a.multiple != b.multiple:
        d.add("field-multiple-changed", path, True, f"{path}: multiple {a.multiple} -> {b.multiple}", a.multiple,
              b.multiple)
    if a.value != b.value:
        d.add("field-default-changed", path, True, f"{path}: default {a.default} -> {b.default}: an absent field "
              "reads differently", a.default, b.default)
    if set(a.requires) != set(b.requires):
        d.add("field-requires-changed", path, True, f"{path} requires {', '.join(a.requires)} -> "
              f"{', '.join(b.requires)}", list(a.requires), list(b.requires))


def _choices(d: Diff, name: str, t: Restricted, u: Restricted) -> None:
    oc, nc = {c.name: c.value for c in t.choices}, {c.name: c.value for c in u.choices}
    for k, v in oc.items():
        if k not in nc:
            d.add("choice-removed", f"{name}.{k}", True, f"{name} loses choice {k} ({v!r})", v)
        elif nc[k] != v:
            d.add("choice-value-changed", f"{name}.{k}", True, f"{name}.{k}: {v!r} -> {nc[k]!r}", v, nc[k])
    for k, v in nc.items():
        if k not in oc:
            d.add("choice-added", f"{name}.{k}", False, f"{name} gains choice {k} ({v!r})", None, v)
