"""``amqgen diff OLD NEW``: what changed between two specs, each change classified as breaking wire
compatibility or not, so the command can gate a CI job that updates a spec.

"Breaking" means a peer built from OLD and a peer built from NEW can misread each other's frames,
refuse them, or wait for frames the other never sends. Elements are matched by name (classes by name,
methods by class and name, fields and properties by name within their method or class); a field or
property whose name changed but whose wire position and type did not is matched as a rename.

Breaking:
- the protocol version (family, major, minor, revision): the protocol header differs, peers refuse it;
- a class or method removed, or its index changed (dispatch goes by class id and method id);
- a method argument removed or retyped (its wire type, not its domain name, changed), reordered
  relative to the other arguments, or added in a way that changes the argument layout (a value
  inserted or appended: one side expects octets the other does not send);
- a method's content flag (content frames follow or not), synchronous flag or set of responses
  changed, or a chassis side dropped (a peer sends a method the other no longer accepts);
- a content property removed, retyped, reordered, or inserted before existing ones (property flag
  bits are positional: a shifted bit means a different property);
- a constant removed or its value or error class changed (frame types and reply codes are on the
  wire; soft or hard decides whether a channel or the whole connection closes).

Not breaking:
- a class, method or constant added (old peers never see it unless they ask for it);
- a field renamed in place, a domain renamed with the same wire type, a reserved flag changed;
- a bit argument added in an unused bit of an octet that already exists (old peers send 0 there);
- a property appended after the existing ones (old peers never set its flag; a NEW peer that sets
  it sends a header OLD cannot read fully, which the change's detail says);
- domains added, removed or retyped (a domain is a name; the fields using it are compared by wire
  type and reported themselves), the default port;
- labels, docs, grammars, rules (text, level, on-failure, scenario), asserts, chassis levels,
  the deprecated flag: they change what a careful implementation checks or documents, not the
  bytes on the wire.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .. import changes
from .model import Assert, Chassis, Class, Constant, Domain, Field, Method, Rule, Spec

#: Every kind of change, and the area it belongs to (for grouping in tools).
KINDS: dict[str, str] = {
    "version-changed": "spec", "port-changed": "spec",
    "class-added": "class", "class-removed": "class", "class-index-changed": "class",
    "method-added": "method", "method-removed": "method", "method-index-changed": "method",
    "method-synchronous-changed": "method", "method-content-changed": "method",
    "method-responses-changed": "method", "method-deprecated-changed": "method",
    "chassis-added": "chassis", "chassis-removed": "chassis", "chassis-level-changed": "chassis",
    "field-added": "field", "field-removed": "field", "field-retyped": "field", "field-moved": "field",
    "field-renamed": "field", "field-domain-changed": "field", "field-reserved-changed": "field",
    "property-added": "property", "property-removed": "property", "property-retyped": "property",
    "property-moved": "property", "property-renamed": "property", "property-domain-changed": "property",
    "constant-added": "constant", "constant-removed": "constant", "constant-value-changed": "constant",
    "constant-error-class-changed": "constant",
    "domain-added": "domain", "domain-removed": "domain", "domain-retyped": "domain",
    "assert-added": "assert", "assert-removed": "assert",
    "rule-added": "rule", "rule-removed": "rule", "rule-changed": "rule",
    "doc-changed": "doc",
}


class Diff(changes.Diff[Spec]):
    KINDS = KINDS

    def side(self, s: Spec) -> dict[str, Any]:
        side: dict[str, Any] = {"name": s.name, "sha256": s.sha256, "family": s.family,
                                "version": [s.major, s.minor, s.revision]}
        if s.overlays:  # only then: the JSON of a spec alone is unchanged
            side["overlays"] = [{"name": o.name, "sha256": o.sha256} for o in s.overlays]
        return side

    def head(self) -> str:
        return f"amqgen diff {self.old.title} ({_version(self.old)}) -> {self.new.title} ({_version(self.new)})"


# -- comparing -------------------------------------------------------------------------------

def diff_specs(old: Spec, new: Spec) -> Diff:
    d = Diff(old, new)
    ov, nv = (old.family, old.major, old.minor, old.revision), (new.family, new.major, new.minor, new.revision)
    if ov != nv:
        d.add("version-changed", "spec", True,
              f"protocol version {_version(old)} -> {_version(new)}: the protocol header differs",
              _version(old), _version(new))
    if old.port != new.port:
        d.add("port-changed", "spec", False, f"default port {old.port} -> {new.port}", old.port, new.port)
    _constants(d, old.constants, new.constants)
    _domains(d, old.domains, new.domains)
    _classes(d, old.classes, new.classes)
    return d


def _version(s: Spec) -> str:
    return f"{s.family} ({s.major}-{s.minor}-{s.revision})"


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


def _docs(d: Diff, path: str, old: Any, new: Any, grammar: bool = False) -> None:
    what = [n for n in ("label", "doc") if _norm(getattr(old, n)) != _norm(getattr(new, n))]
    if grammar and (old.grammar or "").split() != (new.grammar or "").split():
        what.append("grammar")
    if what:
        d.add("doc-changed", path, False, f"{' and '.join(what)} text changed", what, None)


def _rules(d: Diff, path: str, old: Sequence[Rule], new: Sequence[Rule]) -> None:
    o, n = {r.name: r for r in old}, {r.name: r for r in new}
    for name, r in o.items():
        if name not in n:
            d.add("rule-removed", r.id, False, f"rule {r.id} removed ({r.level or 'no level'})")
    for name, r in n.items():
        if name not in o:
            d.add("rule-added", r.id, False, f"rule {r.id} added ({r.level or 'no level'}"
                  + (f", on failure {r.on_failure}" if r.on_failure else "") + ")")
            continue
        before = o[name]
        what = []
        if before.level != r.level:
            what.append(f"level {before.level} -> {r.level}")
        if before.on_failure != r.on_failure:
            what.append(f"on-failure {before.on_failure} -> {r.on_failure}")
        if _norm(before.doc) != _norm(r.doc):
            what.append("text")
        if _norm(before.scenario) != _norm(r.scenario):
            what.append("scenario")
        if what:
            d.add("rule-changed", r.id, False, f"rule {r.id}: {', '.join(what)}")
    del path


def _assert_key(a: Assert) -> tuple[Any, ...]:
    return (a.check, a.value, a.syntax_rule, a.ref, a.values)


def _assert_text(a: Assert) -> str:
    arg = a.value or a.ref or a.syntax_rule or ",".join(a.values)
    return f"{a.check} {arg}" if arg else a.check


def _asserts(d: Diff, path: str, old: Iterable[Assert], new: Iterable[Assert]) -> None:
    o = sorted((_assert_key(a), _assert_text(a)) for a in old)
    n = sorted((_assert_key(a), _assert_text(a)) for a in new)
    ok, nk = [k for k, _ in o], [k for k, _ in n]
    for k, text in o:
        if k not in nk:
            d.add("assert-removed", path, False, f"assert {text} removed from {path}", text, None)
    for k, text in n:
        if k not in ok:
            d.add("assert-added", path, False, f"assert {text} added to {path}", None, text)


def _own_asserts(f: Field) -> tuple[Assert, ...]:
    return tuple(a for a in f.asserts if a.loc.path == f.path)


def _constants(d: Diff, old: Sequence[Constant], new: Sequence[Constant]) -> None:
    o, n = {c.name: c for c in old}, {c.name: c for c in new}
    for name, c in o.items():
        p = f"constant.{name}"
        if name not in n:
            d.add("constant-removed", p, True, f"constant {name} ({c.value}) removed: a peer may still send it",
                  c.value, None)
            continue
        after = n[name]
        if after.value != c.value:
            d.add("constant-value-changed", p, True, f"constant {name} {c.value} -> {after.value}", c.value, after.value)
        if after.error_class != c.error_class:
            d.add("constant-error-class-changed", p, True,
                  f"constant {name} error class {c.error_class} -> {after.error_class}", c.error_class, after.error_class)
        if _norm(after.doc) != _norm(c.doc):
            d.add("doc-changed", p, False, "doc text changed", ["doc"], None)
    for name, c in n.items():
        if name not in o:
            d.add("constant-added", f"constant.{name}", False, f"constant {name} ({c.value}) added", None, c.value)


def _domains(d: Diff, old: Sequence[Domain], new: Sequence[Domain]) -> None:
    o, n = {x.name: x for x in old}, {x.name: x for x in new}
    for name, x in o.items():
        p = f"domain.{name}"
        if name not in n:
            d.add("domain-removed", p, False, f"domain {name} ({x.type}) removed", x.type, None)
            continue
        y = n[name]
        if x.type != y.type:
            d.add("domain-retyped", p, False,
                  f"domain {name} {x.type} -> {y.type} (fields using it are reported themselves)", x.type, y.type)
        _docs(d, p, x, y)
        _asserts(d, p, x.asserts, y.asserts)
        _rules(d, p, x.rules, y.rules)
    for name, y in n.items():
        if name not in o:
            d.add("domain-added", f"domain.{name}", False, f"domain {name} ({y.type}) added", None, y.type)


def _chassis(d: Diff, path: str, old: Sequence[Chassis], new: Sequence[Chassis]) -> None:
    o, n = {c.name: c.implement for c in old}, {c.name: c.implement for c in new}
    for side, level in o.items():
        if side not in n:
            d.add("chassis-removed", path, True, f"{path} no longer implemented by the {side} ({level} before)",
                  side, None)
        elif n[side] != level:
            d.add("chassis-level-changed", path, False, f"{path}: {side} {level} -> {n[side]}", level, n[side])
    for side, level in n.items():
        if side not in o:
            d.add("chassis-added", path, False, f"{path} now implemented by the {side} ({level})", None, side)


def _classes(d: Diff, old: Sequence[Class], new: Sequence[Class]) -> None:
    o, n = {c.name: c for c in old}, {c.name: c for c in new}
    for name, c in o.items():
        if name not in n:
            d.add("class-removed", name, True,
                  f"class {name} ({c.index}) removed with its {len(c.methods)} methods", c.index, None)
            continue
        after = n[name]
        if after.index != c.index:
            d.add("class-index-changed", name, True, f"class {name} index {c.index} -> {after.index}", c.index, after.index)
        _docs(d, name, c, after, grammar=True)
        _chassis(d, name, c.chassis, after.chassis)
        _rules(d, name, c.rules, after.rules)
        _properties(d, name, c.properties, after.properties)
        _methods(d, c, after)
    for name, c in n.items():
        if name not in o:
            d.add("class-added", name, False, f"class {name} ({c.index}) added with {len(c.methods)} methods",
                  None, c.index)


def _methods(d: Diff, old: Class, new: Class) -> None:
    o, n = old.method_by_name, new.method_by_name
    for name, m in o.items():
        if name not in n:
            taken = new.method_by_index.get(m.index)
            reuse = f"; its id {m.class_index}.{m.index} now belongs to {taken.full_name}" if taken else ""
            d.add("method-removed", m.full_name, True, f"method {m.full_name} ({m.class_index}.{m.index}) removed{reuse}",
                  list(m.id), None)
            continue
        _method(d, m, n[name])
    for name, m in n.items():
        if name not in o:
            d.add("method-added", m.full_name, False, f"method {m.full_name} ({m.class_index}.{m.index}) added",
                  None, list(m.id))


def _method(d: Diff, a: Method, b: Method) -> None:
    p = a.full_name
    if a.id != b.id:
        d.add("method-index-changed", p, True, f"method {p} id {a.class_index}.{a.index} -> {b.class_index}.{b.index}",
              list(a.id), list(b.id))
    if a.synchronous != b.synchronous:
        d.add("method-synchronous-changed", p, True,
              f"{p} is {'now' if b.synchronous else 'no longer'} synchronous", a.synchronous, b.synchronous)
    if a.content != b.content:
        d.add("method-content-changed", p, True,
              f"{p} {'now carries' if b.content else 'no longer carries'} content", a.content, b.content)
    if set(a.responses) != set(b.responses):
        gone = sorted(set(a.responses) - set(b.responses))
        came = sorted(set(b.responses) - set(a.responses))
        parts = ([f"removed {', '.join(gone)}"] if gone else []) + ([f"added {', '.join(came)}"] if came else [])
        d.add("method-responses-changed", p, True, f"{p} responses: {'; '.join(parts)}",
              list(a.responses), list(b.responses))
    if a.deprecated != b.deprecated:
        d.add("method-deprecated-changed", p, False, f"{p} {'now' if b.deprecated else 'no longer'} deprecated",
              a.deprecated, b.deprecated)
    _docs(d, p, a, b)
    _chassis(d, p, a.chassis, b.chassis)
    _rules(d, p, a.rules, b.rules)
    _arguments(d, a, b)


def _pairs(old: Sequence[Field], new: Sequence[Field], pos: Any) -> tuple[
    list[tuple[Field, Field]], list[Field], list[Field]
]:
    """Match by name, then unmatched fields at the same wire position with the same type as renames."""
    nb = {f.name: f for f in new}
    ob = {f.name: f for f in old}
    pairs = [(f, nb[f.name]) for f in old if f.name in nb]
    gone = [f for f in old if f.name not in nb]
    came = [f for f in new if f.name not in ob]
    for f in list(gone):
        twin = next((g for g in came if pos(g) == pos(f) and g.type == f.type), None)
        if twin is not None:
            pairs.append((f, twin))
            gone.remove(f)
            came.remove(twin)
    pairs.sort(key=lambda p: old.index(p[0]))
    return pairs, gone, came


def _out_of_order(pairs: list[tuple[Field, Field]], new: Sequence[Field]) -> set[str]:
    """Names of matched fields outside a longest run that keeps its relative order: the moved ones."""
    seq = [new.index(b) for _, b in pairs]
    n = len(seq)
    best = [1] * n
    prev = [-1] * n
    for i in range(n):
        for j in range(i):
            if seq[j] < seq[i] and best[j] + 1 > best[i]:
                best[i], prev[i] = best[j] + 1, j
    keep: set[int] = set()
    i = max(range(n), key=lambda k: best[k]) if n else -1
    while i != -1:
        keep.add(i)
        i = prev[i]
    return {pairs[k][0].name for k in range(n) if k not in keep}


def _field_common(d: Diff, what: str, path: str, a: Field, b: Field) -> None:
    if a.name != b.name:
        d.add(f"{what}-renamed", path, False,
              f"{path} renamed to {b.name} (same position and wire type)", a.name, b.name)
    if a.domain != b.domain and a.type == b.type:
        d.add(f"{what}-domain-changed", path, False, f"{path} domain {a.domain} -> {b.domain} (wire type {a.type} kept)",
              a.domain, b.domain)
    if a.reserved != b.reserved and what == "field":
        d.add("field-reserved-changed", path, False, f"{path} {'now' if b.reserved else 'no longer'} reserved",
              a.reserved, b.reserved)
    _docs(d, path, a, b)
    _asserts(d, path, _own_asserts(a), _own_asserts(b))
    _rules(d, path, a.rules, b.rules)


def _arguments(d: Diff, a: Method, b: Method) -> None:
    def pos(f: Field) -> tuple[int | None, int | None]:
        return (f.slot, f.bit)

    pairs, gone, came = _pairs(a.fields, b.fields, pos)
    same_layout = [(s.kind, s.type) for s in a.slots] == [(s.kind, s.type) for s in b.slots]
    moved = _out_of_order(pairs, b.fields)
    for x, y in pairs:
        p = x.path
        if x.type != y.type:
            d.add("field-retyped", p, True, f"{p} wire type {x.type} -> {y.type}", x.type, y.type)
        if x.name in moved:
            d.add("field-moved", p, True,
                  f"{p} moved from argument {a.fields.index(x) + 1} to {b.fields.index(y) + 1}",
                  a.fields.index(x) + 1, b.fields.index(y) + 1)
        _field_common(d, "field", p, x, y)
    for x in gone:
        d.add("field-removed", x.path, True, f"{x.path} ({x.type}, argument {a.fields.index(x) + 1}) removed",
              x.type, None)
    for y in came:
        i = b.fields.index(y)
        later = [f.name for f in b.fields[i + 1 :] if any(f is q for _, q in pairs)]
        if same_layout and y.type == "bit" and all(pos(x) == pos(z) for x, z in pairs):
            d.add("field-added", y.path, False,
                  f"{y.path} (bit) added in an unused bit of an existing octet: old peers send it as 0", None, y.type)
        elif later:
            d.add("field-added", y.path, True,
                  f"{y.path} ({y.type}) inserted before {', '.join(later)}: the argument layout changes", None, y.type)
        else:
            d.add("field-added", y.path, True,
                  f"{y.path} ({y.type}) appended: the argument layout changes", None, y.type)


def _properties(d: Diff, cls: str, old: Sequence[Field], new: Sequence[Field]) -> None:
    def pos(f: Field) -> tuple[int | None, int | None]:
        return (f.flag_word, f.flag_bit)

    pairs, gone, came = _pairs(old, new, pos)
    moved = _out_of_order(pairs, new)
    for x, y in pairs:
        p = x.path
        if x.type != y.type:
            d.add("property-retyped", p, True, f"{p} wire type {x.type} -> {y.type}", x.type, y.type)
        if x.name in moved:
            d.add("property-moved", p, True, f"{p} flag bit moved: word {x.flag_word} bit {x.flag_bit} -> "
                  f"word {y.flag_word} bit {y.flag_bit}", [x.flag_word, x.flag_bit], [y.flag_word, y.flag_bit])
        _field_common(d, "property", p, x, y)
    for x in gone:
        d.add("property-removed", x.path, True, f"{x.path} ({x.type}) removed", x.type, None)
    for y in came:
        i = new.index(y)
        later = [f.name for f in new[i + 1 :] if any(f is q for _, q in pairs)]
        if later:
            d.add("property-added", y.path, True,
                  f"{y.path} ({y.type}) inserted before {', '.join(later)}: their flag bits shift", None, y.type)
        else:
            d.add("property-added", y.path, False,
                  f"{y.path} ({y.type}) appended: old peers never set its flag, but cannot read a header "
                  "that sets it", None, y.type)
    del cls
