"""What the 0-x reference-documentation packs (``templates/docs-html``, ``templates/docs-markdown``) need
beyond the model: a view of the spec with everything computed (sorting, grouping, reverse links,
anchors, wire positions, assert wording). The text filters that escape spec text for each format are
shared with the 1.0 reference (:mod:`amqgen.docs`).

The packs' hooks are thin: they hand :func:`context` and the format's filters to the render machinery,
so templates only format. Anchors are stable and match the links people already use:
``#class.method``, ``#class.method.field``, ``#domain.NAME``, ``#constant.NAME``; a class is ``#class``,
a property ``#class.property`` (e.g. ``#basic.content-type``), a rule ``#rule.RULE-ID``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from .. import docs
from ..errors import Diagnostic, Location, RenderError
from .grammar import linked
from .model import Assert, Class, Constant, Domain, Field, Method, Rule, Spec


@dataclass(frozen=True)
class RuleView:
    rule: Rule
    anchor: str
    on_failure_anchor: str | None  # the constant's anchor, when the spec defines it
    origin: str  # "added by rabbitmq.xml:46", "changed by ...", or "" (from the spec itself)


@dataclass(frozen=True)
class FieldView:
    field: Field
    ordinal: int
    anchor: str
    domain_anchor: str | None  # None when the field names a wire type or an undefined domain
    wire: str  # where it sits: "offset 2", "bit 1 of octet 3", "flag word 0 bit 15 (0x8000)"
    asserts: tuple[str, ...]  # own asserts first, then the domain's, worded for people
    rules: tuple[RuleView, ...]
    search: str  # what the filter box matches
    origin: str


@dataclass(frozen=True)
class MethodView:
    method: Method
    anchor: str
    accepted_by: tuple[str, ...]  # "server (MUST)"
    responses: tuple[tuple[str, str], ...]  # (full name, anchor)
    response_to: tuple[tuple[str, str], ...]  # methods this one answers
    fields: tuple[FieldView, ...]
    rules: tuple[RuleView, ...]
    search: str
    toc_search: str  # the contents entry also matches the method's field names
    origin: str


@dataclass(frozen=True)
class ClassView:
    cls: Class
    anchor: str
    chassis: tuple[str, ...]  # "server MUST"
    properties: tuple[FieldView, ...]
    methods: tuple[MethodView, ...]
    rules: tuple[RuleView, ...]
    search: str
    origin: str


@dataclass(frozen=True)
class DomainView:
    domain: Domain
    anchor: str
    asserts: tuple[str, ...]
    rules: tuple[RuleView, ...]
    used_by: int  # fields and properties that name this domain
    search: str
    origin: str


@dataclass(frozen=True)
class ConstantView:
    constant: Constant
    anchor: str
    kind: str  # "frame type", "reply code", "value"
    failing_rules: tuple[tuple[str, str], ...]  # (rule id, anchor) naming it as on-failure
    search: str
    origin: str


@dataclass(frozen=True)
class Touched:
    """One element an overlay added, changed or removed, for the reference's overlay section."""

    what: str  # "method", "field", ...
    path: str
    anchor: str | None  # None for a removed element
    where: str  # the overlay's file name and line


@dataclass(frozen=True)
class OverlayView:
    name: str
    sha256: str
    added: tuple[Touched, ...]  # outermost only: a method added with its fields is one entry
    changed: tuple[Touched, ...]
    removed: tuple[Touched, ...]


@dataclass(frozen=True)
class WarningView:
    code: str
    where: str  # spec file name and line: never the absolute path, so output does not depend on it
    anchor: str | None  # the element it concerns, when it has an anchor
    path: str
    message: str
    resolution: str


@dataclass(frozen=True)
class Reference:
    spec: Spec
    domains: tuple[DomainView, ...]  # sorted by name, as the 2006 reference did
    constants: tuple[ConstantView, ...]
    classes: tuple[ClassView, ...]
    warnings: tuple[WarningView, ...]
    counts: dict[str, int]
    overlays: tuple[OverlayView, ...]


# -- wording ---------------------------------------------------------------------------------

def describe_assert(a: Assert) -> str:
    """One line a person can read: what the assert requires."""
    if a.check == "notnull":
        return "must not be empty (notnull)"
    if a.check == "null":
        return "must be empty (null)"
    if a.check == "length":
        return f"at most {a.value} octets (length)"
    if a.check == "ne":
        return f"must not equal {a.value} (ne)"
    if a.check == "le":
        return f"at most the value of {a.ref} (le)"
    if a.check == "syntax":
        return f"must follow the {a.syntax_rule} syntax (syntax)"
    if a.check == "enum":
        return "one of " + ", ".join(a.values) + " (enum)"
    text = f"must match {a.value} (regexp)"
    if a.portable_value and a.portable_value != a.value:
        text += f"; read portably as {a.portable_value}"
    return text


def wire_position(method: Method | None, f: Field) -> str:
    if f.flag_word is not None and f.flag_bit is not None:
        return f"flag word {f.flag_word} bit {f.flag_bit} (0x{f.flag_mask:04x})"
    if method is None or f.slot is None:
        return ""
    slot = method.slots[f.slot]
    where = f"offset {slot.offset}" if slot.offset is not None else f"slot {f.slot} (after a variable-size field)"
    if slot.kind == "bits":
        return f"bit {f.bit} of the octet at {where}"
    return where


def _where(loc: Location) -> str:
    """File name and line: never the absolute path, so output does not depend on it."""
    return f"{PurePath(loc.file).name}:{loc.line}" if loc.line else PurePath(loc.file).name


def origin(el: Any) -> str:
    """Which overlay added or changed a model element ("" when it comes from the spec as written)."""
    if el.added_by is not None:
        return f"added by {_where(el.added_by)}"
    if el.changed_by:
        return "changed by " + ", ".join(_where(c) for c in el.changed_by)
    return ""


def _overlay_views(spec: Spec) -> tuple[OverlayView, ...]:
    touched: dict[str, tuple[list[Touched], list[Touched]]] = {o.name: ([], []) for o in spec.overlays}

    def note(what: str, path: str, anchor: str, el: Any) -> bool:
        """Record ``el`` under the overlays that touched it; True when an overlay added it."""
        if el.added_by is not None:
            touched.setdefault(PurePath(el.added_by.file).name, ([], []))[0].append(
                Touched(what, path, anchor, _where(el.added_by)))
            return True
        for c in el.changed_by:
            touched.setdefault(PurePath(c.file).name, ([], []))[1].append(Touched(what, path, anchor, _where(c)))
        return False

    def rules(rs: tuple[Rule, ...]) -> None:
        for r in rs:
            note("rule", r.id, f"rule.{r.id}", r)

    for k in spec.constants:
        note("constant", k.name, f"constant.{k.name}", k)
    for d in spec.domains:
        if not note("domain", d.name, f"domain.{d.name}", d):
            rules(d.rules)
    for c in spec.classes:
        if note("class", c.name, c.name, c):
            continue
        rules(c.rules)
        for p in c.properties:
            if not note("property", p.path, p.path, p):
                rules(p.rules)
        for m in c.methods:
            if note("method", m.full_name, m.full_name, m):
                continue
            rules(m.rules)
            for f in m.fields:
                if not note("field", f.path, f.path, f):
                    rules(f.rules)
    return tuple(
        OverlayView(o.name, o.sha256, tuple(touched[o.name][0]), tuple(touched[o.name][1]),
                    tuple(Touched("element", r.path, None, _where(r)) for r in o.removed))
        for o in spec.overlays
    )


def _search(*parts: str | None) -> str:
    return " ".join(p.lower() for p in parts if p)


# -- the view ----------------------------------------------------------------------------------

def build(spec: Spec) -> Reference:
    constant_names = {c.name for c in spec.constants}

    def rule_views(rules: tuple[Rule, ...]) -> tuple[RuleView, ...]:
        return tuple(
            RuleView(r, f"rule.{r.id}", f"constant.{r.on_failure}" if r.on_failure in constant_names else None,
                     origin(r))
            for r in rules
        )

    def field_view(f: Field, ordinal: int, method: Method | None) -> FieldView:
        return FieldView(
            field=f,
            ordinal=ordinal,
            anchor=f.path,
            domain_anchor=f"domain.{f.domain}" if f.domain in spec.domain_by_name else None,
            wire=wire_position(method, f),
            asserts=tuple(describe_assert(a) for a in f.asserts),
            rules=rule_views(f.rules),
            search=_search(f.path, f.domain, f.type, f.label),
            origin=origin(f),
        )

    answered_by: dict[str, list[str]] = defaultdict(list)
    for m in spec.methods:
        for r in m.responses:
            answered_by[r].append(m.full_name)

    classes: list[ClassView] = []
    for c in spec.classes:
        methods = tuple(
            MethodView(
                method=m,
                anchor=m.full_name,
                accepted_by=tuple(f"{ch.name} ({ch.implement})" for ch in m.chassis),
                responses=tuple((r, r) for r in m.responses),
                response_to=tuple((r, r) for r in answered_by.get(m.full_name, [])),
                fields=tuple(field_view(f, i, m) for i, f in enumerate(m.fields, 1)),
                rules=rule_views(m.rules),
                search=_search(m.full_name, m.label),
                toc_search=_search(m.full_name, m.label, *(f.name for f in m.fields)),
                origin=origin(m),
            )
            for m in c.methods
        )
        classes.append(
            ClassView(
                cls=c,
                anchor=c.name,
                chassis=tuple(f"{ch.name} {ch.implement}" for ch in c.chassis),
                properties=tuple(
                    field_view(p, i, None) for i, p in enumerate(c.properties, 1)
                ),
                methods=methods,
                rules=rule_views(c.rules),
                search=_search(c.name, c.label),
                origin=origin(c),
            )
        )

    used: dict[str, int] = defaultdict(int)
    for c in spec.classes:
        for f in (*c.properties, *(f for m in c.methods for f in m.fields)):
            if f.domain:
                used[f.domain] += 1
    domains = tuple(
        DomainView(
            domain=d,
            anchor=f"domain.{d.name}",
            asserts=tuple(describe_assert(a) for a in d.asserts),
            rules=rule_views(d.rules),
            used_by=used[d.name],
            search=_search(d.name, d.type, d.label),
            origin=origin(d),
        )
        for d in sorted(spec.domains, key=lambda d: d.name)
    )

    failing: dict[str, list[str]] = defaultdict(list)
    for rule in spec.all_rules():
        if rule.on_failure:
            failing[rule.on_failure].append(rule.id)
    constants = tuple(
        ConstantView(
            constant=k,
            anchor=f"constant.{k.name}",
            kind=_constant_kind(k),
            failing_rules=tuple((rid, f"rule.{rid}") for rid in failing.get(k.name, [])),
            search=_search(k.name, str(k.value), k.error_class),
            origin=origin(k),
        )
        for k in spec.constants
    )

    anchors = _check_anchors(domains, constants, classes)
    warnings = tuple(_warning_view(spec, w, anchors) for w in spec.warnings)
    counts = {
        "domains": len(spec.domains),
        "constants": len(spec.constants),
        "classes": len(spec.classes),
        "methods": len(spec.methods),
        "fields": sum(len(m.fields) for m in spec.methods),
        "properties": sum(len(c.properties) for c in spec.classes),
        "rules": len(spec.all_rules()),
        "scenarios": sum(1 for r in spec.all_rules() if r.scenario),
        "asserts": len(spec.all_asserts()),
        "warnings": len(spec.warnings),
    }
    return Reference(spec, domains, constants, tuple(classes), warnings, counts, _overlay_views(spec))


def _constant_kind(k: Constant) -> str:
    if k.name.startswith("frame-") and k.name not in ("frame-error", "frame-min-size", "frame-end"):
        return "frame type"
    if k.error_class is not None or k.name == "reply-success":
        return "reply code"
    return "value"


def _check_anchors(
    domains: tuple[DomainView, ...], constants: tuple[ConstantView, ...], classes: list[ClassView]
) -> set[str]:
    """Every anchor once; a clash (a property named like a method of its class) is an error, not a
    silently broken link."""
    seen: set[str] = set()
    names: list[str] = [d.anchor for d in domains] + [k.anchor for k in constants]
    for c in classes:
        names.append(c.anchor)
        names.extend(p.anchor for p in c.properties)
        names.extend(r.anchor for r in c.rules)
        names.extend(r.anchor for p in c.properties for r in p.rules)
        for m in c.methods:
            names.append(m.anchor)
            names.extend(f.anchor for f in m.fields)
            names.extend(r.anchor for r in m.rules)
            names.extend(r.anchor for f in m.fields for r in f.rules)
    names.extend(r.anchor for d in domains for r in d.rules)
    for n in names:
        if n in seen:
            raise RenderError(f"two elements of the spec would share the documentation anchor #{n}")
        seen.add(n)
    return seen


def _warning_view(spec: Spec, w: Diagnostic, anchors: set[str]) -> WarningView:
    path = w.location.path
    return WarningView(
        code=w.code,
        where=_where(w.location),  # the spec's file, or the overlay's
        anchor=path if path in anchors else None,
        path=path,
        message=w.message,
        resolution=w.resolution,
    )


def context(spec: Spec) -> dict[str, Any]:
    return {"ref": build(spec)}


def grammar_links(cls: Class, spec: Spec) -> list[tuple[str, str | None, str | None]]:
    """A class's grammar as written, in pieces linked to its methods and to the productions of every class."""
    return linked(cls, (p.name for c in spec.classes for p in c.productions))


HTML_FILTERS = {**docs.HTML_FILTERS, "grammar": grammar_links}
MARKDOWN_FILTERS = docs.MARKDOWN_FILTERS
