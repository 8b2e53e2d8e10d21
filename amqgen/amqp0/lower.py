"""Build the typed, lowered model from a parsed spec document.

Resolution (names, domains, responses, on-failure codes, ``le`` references), lowering (bit
octets, property flag words, fixed-size prefixes) and the spec-defect warnings all happen
here, once. Every warning has a stable code and a resolution that the README documents.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import cast

from lxml import etree

from ..errors import Diagnostic, Location, SpecError, StrictError
from ..loader import Document, canon, read_document
from .grammar import parse as parse_grammars
from .model import (
    ASSERT_KINDS,
    BITS_PER_OCTET,
    PROPERTIES_PER_FLAG_WORD,
    WIRE_SIZES,
    Assert,
    AssertKind,
    Chassis,
    Class,
    Constant,
    Direction,
    Domain,
    ErrorClass,
    Field,
    Level,
    Method,
    Rule,
    Slot,
    Spec,
    WireType,
)
from .overlay import Merger, Provenance, check_wire

#: Wire type a field gets when it names a domain the spec never defines (W003).
UNKNOWN_DOMAIN_FALLBACK: WireType = "longstr"
KNOWN_SYNTAX_RULES = ("path",)
_LEVEL_RE = re.compile(r"\b(MUST|SHOULD|MAY)\b")
_LEVEL_ORDER: dict[str, int] = {"MUST": 0, "SHOULD": 1, "MAY": 2}


def load_spec(path: str | Path, *, strict: bool = False, overlays: Sequence[str | Path] = ()) -> Spec:
    """Read, resolve and lower a spec file, with ``overlays`` merged in order (see
    :mod:`amqgen.overlay`). With ``strict``, any warning is an error."""
    doc = read_document(path)
    spec = Lowerer(doc).build()
    if overlays:
        merger = Merger(doc)
        for ov in overlays:
            touched = merger.apply(read_document(ov))
            # each overlay is checked against the model before it, so "existing" means what it extends
            after = Lowerer(doc, merger.prov).build()
            check_wire(spec, after, touched, str(ov))
            spec = after
    if strict and spec.warnings:
        raise StrictError(spec.warnings)
    return spec


def _children(el: etree._Element, tag: str) -> list[etree._Element]:
    return [c for c in el if isinstance(c.tag, str) and c.tag == tag]


def _norm_text(text: str) -> str:
    """Dedent and trim a doc; the line layout is kept (grammars depend on it)."""
    lines = textwrap.dedent(text.expandtabs(8)).split("\n")
    lines = [ln.rstrip() for ln in lines]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def _level(text: str) -> Level | None:
    found = _LEVEL_RE.findall(text)
    if not found:
        return None
    return cast(Level, min(found, key=lambda w: _LEVEL_ORDER[w]))


def _same_kind(lo: str, hi: str) -> bool:
    """A range the spec's authors meant as a range: a-z, A-Z or 0-9 style."""
    return (lo.isdigit() and hi.isdigit()) or (lo.islower() and hi.islower()) or (lo.isupper() and hi.isupper())


def _suspicious_ranges(pattern: str) -> list[str]:
    """Ranges in bracket expressions that mix character kinds (``/-_``) or follow another
    range (``0-9-_``, which POSIX regcomp rejects as "Invalid range end")."""
    found: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] != "[":
            i += 1
            continue
        j = i + 1
        if j < len(pattern) and pattern[j] == "^":
            j += 1
        prev_was_range_end = False
        first = True
        while j < len(pattern) and (pattern[j] != "]" or first):
            first = False
            c = pattern[j]
            if c == "\\":
                j += 2
                prev_was_range_end = False
                continue
            if j + 2 < len(pattern) and pattern[j + 1] == "-" and pattern[j + 2] != "]":
                lo, hi = c, pattern[j + 2]
                if not _same_kind(lo, hi):
                    found.append(f"{lo}-{hi}")
                j += 3
                prev_was_range_end = True
                continue
            if c == "-" and prev_was_range_end and j + 1 < len(pattern) and pattern[j + 1] != "]":
                found.append(f"-{pattern[j + 1]} after a range")
            prev_was_range_end = False
            j += 1
        i = j + 1
    return found


def _portable_regexp(pattern: str) -> str:
    """The pattern with every hyphen in a bracket expression that is not a same-kind range
    (a-z, A-Z, 0-9) escaped as a literal: what the spec's authors evidently meant."""
    out: list[str] = []
    i = 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if not in_class:
            in_class = c == "["
            out.append(c)
            i += 1
            continue
        if c == "]":
            in_class = False
            out.append(c)
            i += 1
            continue
        if i + 2 < len(pattern) and pattern[i + 1] == "-" and pattern[i + 2] != "]":
            if _same_kind(c, pattern[i + 2]):
                out.append(pattern[i : i + 3])
                i += 3
                continue
            out.append(c)
            i += 1
            continue
        out.append("\\-" if c == "-" else c)
        i += 1
    return "".join(out)


class Lowerer:
    """Walks one Document into a Spec; collects warnings; raises SpecError on real errors."""

    def __init__(self, doc: Document, prov: Provenance | None = None) -> None:
        self.doc = doc
        self.prov = prov or Provenance()
        self.warnings: list[Diagnostic] = []
        self.grammar_lines: dict[str, Location] = {}  # class -> the first line of its grammar text
        self.constants: dict[str, Constant] = {}
        self.domains: dict[str, Domain] = {}
        self.domain_spelling: dict[str, str] = {}  # canonical name -> name as defined

    # -- helpers -----------------------------------------------------------------------
    def loc(self, el: etree._Element, path: str = "", attr: str | None = None) -> Location:
        """Where ``el`` comes from (the spec or an overlay); with ``attr``, where that attribute was set."""
        if attr is not None and (el, attr) in self.prov.attributes:
            return replace(self.prov.attributes[(el, attr)], path=path)
        return Location(self.prov.file_of(el, self.doc.path), el.sourceline, path)

    def added(self, el: etree._Element, path: str) -> Location | None:
        return self.loc(el, path) if el in self.prov.files else None

    def changed(self, el: etree._Element) -> tuple[Location, ...]:
        return tuple(self.prov.changes.get(el, ()))

    def warn(self, code: str, el: etree._Element, message: str, resolution: str, path: str = "",
             attr: str | None = None) -> None:
        self.warnings.append(Diagnostic(code, message, resolution, self.loc(el, path, attr)))

    def error(self, el: etree._Element, message: str, path: str = "", attr: str | None = None) -> SpecError:
        return SpecError(message, self.loc(el, path, attr))

    def name_of(self, el: etree._Element, what: str, path: str = "") -> str:
        raw = el.get("name")
        if raw is None or not raw.strip():
            raise self.error(el, f"<{what}> has no name", path)
        return canon(raw)

    def int_attr(self, el: etree._Element, attr: str, path: str) -> int:
        raw = el.get(attr)
        if raw is None:
            raise self.error(el, f"<{el.tag!s} name=\"{el.get('name')}\"> has no {attr}", path)
        try:
            return int(raw.strip())
        except ValueError:
            raise self.error(el, f"{attr}=\"{raw}\" is not a number", path, attr) from None

    def flag(self, el: etree._Element, attr: str) -> bool:
        return (el.get(attr) or "0").strip() in ("1", "true", "yes")

    def docs(self, el: etree._Element, path: str) -> tuple[str, str | None, str | None]:
        """(doc, grammar, scenario) of an element; defects in doc use become warnings."""
        plain: list[str] = []
        grammar: list[str] = []
        scenario: list[str] = []
        for d in _children(el, "doc"):
            text = _norm_text("".join(d.itertext()))
            kind = d.get("type")
            if kind == "grammar":
                grammar.append(text)
            elif kind == "scenario":
                scenario.append(text)
            else:
                if d.get("name") == "rule":
                    self.warn(
                        "W008", d, '<doc name="rule"> is not a <rule> element',
                        "its text is kept in the parent's documentation, not counted as a rule", path,
                    )
                plain.append(text)
        return (
            "\n\n".join(t for t in plain if t),
            "\n\n".join(grammar) if grammar else None,
            "\n\n".join(scenario) if scenario else None,
        )

    def label(self, el: etree._Element, path: str) -> str | None:
        label = el.get("label")
        loose = _norm_text(el.text or "")
        if loose and "\n" not in loose and label is None:
            self.warn(
                "W009", el, f'label written as element text ("{loose}") instead of a label attribute',
                "the text is used as the label", path,
            )
            return loose
        return label

    # -- elements ----------------------------------------------------------------------
    def build(self) -> Spec:
        root = self.doc.root
        if self.doc.version_note:
            self.warn("W010", root, self.doc.version_note, "the version is normalised as stated")
        for el in _children(root, "constant"):
            self.constant(el)
        raw_domains = _children(root, "domain")
        for el in raw_domains:
            name = self.name_of(el, "domain")
            if name in self.domain_spelling:
                raise self.error(el, f"duplicate domain {name!r}", f"domain.{name}")
            self.domain_spelling[name] = (el.get("name") or "").strip()
        by_name = {canon(el.get("name") or ""): el for el in raw_domains}
        for el in raw_domains:
            self.domain(el, by_name, ())
        classes = self.classes()
        productions, defects = parse_grammars(classes, self.grammar_lines)
        classes = tuple(replace(c, productions=productions.get(c.name, ())) for c in classes)
        self.warnings.extend(defects)
        return Spec(
            name=self.doc.name,
            family=self.doc.family,
            major=self.doc.major,
            minor=self.doc.minor,
            revision=self.doc.revision,
            port=int(root.get("port") or 5672),
            comment=root.get("comment"),
            sha256=self.doc.sha256,
            constants=tuple(self.constants.values()),
            domains=tuple(self.domains.values()),
            classes=classes,
            warnings=tuple(self.warnings),
            overlays=tuple(self.prov.overlays),
        )

    def constant(self, el: etree._Element) -> None:
        name = self.name_of(el, "constant")
        path = f"constant.{name}"
        if name in self.constants:
            raise self.error(el, f"duplicate constant {name!r}", path)
        value = self.int_attr(el, "value", path)
        raw_class = el.get("class")
        error_class: ErrorClass | None = None
        if raw_class is not None and canon(raw_class) in ("soft-error", "hard-error"):
            error_class = "soft" if canon(raw_class) == "soft-error" else "hard"
        elif raw_class is not None:
            self.warn("W011", el, f'constant class "{raw_class}" is neither soft-error nor hard-error',
                      "the constant is kept without an error class", path)
        doc, _, _ = self.docs(el, path)
        self.constants[name] = Constant(name, value, error_class, doc, self.loc(el, path), self.added(el, path),
                                        self.changed(el))

    def domain(self, el: etree._Element, by_name: dict[str, etree._Element], chain: tuple[str, ...]) -> Domain:
        name = canon(el.get("name") or "")
        if name in self.domains:
            return self.domains[name]
        path = f"domain.{name}"
        if name in chain:
            raise self.error(el, f"domain {name!r} is defined in terms of itself", path)
        raw_type = el.get("type")
        if raw_type is None:
            raise self.error(el, f"domain {name!r} has no type", path)
        t = canon(raw_type)
        if t in WIRE_SIZES:
            wire = cast(WireType, t)
        elif t in by_name and t != name:
            wire = self.domain(by_name[t], by_name, (*chain, name)).type
        else:
            raise self.error(el, f"domain {name!r} has unknown wire type {raw_type!r}", path, "type")
        doc, _, _ = self.docs(el, path)
        d = Domain(
            name=name,
            type=wire,
            label=el.get("label"),
            doc=doc,
            asserts=self.asserts(el, path, None),
            rules=self.rules(el, path),
            loc=self.loc(el, path),
            added_by=self.added(el, path),
            changed_by=self.changed(el),
        )
        self.domains[name] = d
        return d

    def rules(self, el: etree._Element, parent: str) -> tuple[Rule, ...]:
        out: list[Rule] = []
        seen: set[str] = set()
        for n, r in enumerate(_children(el, "rule"), 1):
            raw = r.get("name")
            name = canon(raw) if raw and raw.strip() else f"{n:02d}"
            if not (raw and raw.strip()):
                self.warn("W012", r, "rule has no name", f"named {name!r} by its position", parent)
            rid = f"{parent}.{name}"
            if name in seen:
                raise self.error(r, f"duplicate rule name {name!r} in {parent}", rid)
            seen.add(name)
            doc, _, scenario = self.docs(r, rid)
            on_failure = r.get("on-failure")
            code: int | None = None
            if on_failure is not None:
                on_failure = canon(on_failure)
                const = self.constants.get(on_failure)
                if const is None:
                    raise self.error(r, f"rule on-failure names no constant: {on_failure!r}", rid)
                code = const.value
            out.append(Rule(name, rid, parent, _level(doc), on_failure, code, doc, scenario, self.loc(r, rid),
                            self.added(r, rid), self.changed(r)))
        return tuple(out)

    def asserts(self, el: etree._Element, path: str, cls: etree._Element | None) -> tuple[Assert, ...]:
        out: list[Assert] = []
        for a in _children(el, "assert"):
            check = (a.get("check") or "").strip()
            if check not in ASSERT_KINDS:
                raise self.error(a, f"unknown assert kind {check!r} (known: {', '.join(ASSERT_KINDS)})", path)
            value = a.get("value")
            syntax_rule = a.get("rule") if check == "syntax" else None
            ref: str | None = None
            portable: str | None = None
            values: tuple[str, ...] = ()
            if check in ("length", "ne"):
                if value is None or not re.fullmatch(r"\s*-?\d+\s*", value):
                    raise self.error(a, f'assert check="{check}" needs a numeric value', path)
            elif check == "regexp":
                if value is None:
                    raise self.error(a, 'assert check="regexp" has no value', path)
                try:
                    re.compile(value)
                except re.error as e:
                    raise self.error(a, f"assert regexp {value!r} does not compile: {e}", path) from None
                bad = _suspicious_ranges(value)
                portable = value
                if bad:
                    portable = _portable_regexp(value)
                    self.warn(
                        "W007", a, f"regexp {value!r} has suspicious character ranges ({', '.join(bad)})",
                        f"the pattern is kept as written; portable_value {portable!r} reads those hyphens "
                        "as literals, and targets choose between them by policy", path,
                    )
            elif check == "syntax":
                if syntax_rule not in KNOWN_SYNTAX_RULES:
                    raise self.error(a, f"assert syntax rule {syntax_rule!r} is not known", path)
            elif check == "le":
                ref = self.le_ref(a, path, cls)
            elif check == "enum":
                values = tuple(canon(v.get("name") or "") for v in _children(a, "value"))
                if not values:
                    raise self.error(a, 'assert check="enum" lists no <value>', path)
            out.append(Assert(cast(AssertKind, check), value, syntax_rule, ref, values, portable, self.loc(a, path),
                              self.added(a, path), self.changed(a)))
        return tuple(out)

    def le_ref(self, a: etree._Element, path: str, cls: etree._Element | None) -> str:
        method, fld = a.get("method"), a.get("field")
        if cls is None or not method or not fld:
            raise self.error(a, 'assert check="le" needs method and field inside a class', path)
        for m in _children(cls, "method"):
            if canon(m.get("name") or "") == canon(method):
                for f in _children(m, "field"):
                    if canon(f.get("name") or "") == canon(fld):
                        return f"{canon(cls.get('name') or '')}.{canon(method)}.{canon(fld)}"
        raise self.error(a, f'assert check="le" refers to {method}.{fld}, which does not exist', path)

    def chassis(self, el: etree._Element, path: str) -> tuple[Chassis, ...]:
        out: list[Chassis] = []
        for c in _children(el, "chassis"):
            name = self.name_of(c, "chassis", path)
            impl = (c.get("implement") or "").strip().upper()
            if impl not in _LEVEL_ORDER:
                raise self.error(c, f'chassis implement="{c.get("implement")}" is not MUST, SHOULD or MAY', path)
            out.append(Chassis(name, cast(Level, impl), self.loc(c, path), self.added(c, path), self.changed(c)))
        return tuple(out)

    def field(self, el: etree._Element, owner: str, cls: etree._Element) -> Field:
        name = self.name_of(el, "field", owner)
        path = f"{owner}.{name}"
        raw_domain, raw_type = el.get("domain"), el.get("type")
        reserved = self.flag(el, "reserved")
        domain: Domain | None = None
        wire: WireType
        if raw_domain is None and raw_type is None:
            raise self.error(el, f"field {path} has neither domain nor type", path)
        ref = raw_domain if raw_domain is not None else cast(str, raw_type)
        cref = canon(ref)
        if raw_domain is None and cref in WIRE_SIZES and cref not in self.domains:
            wire = cast(WireType, cref)  # a wire type named directly, as 0-8 does throughout
        elif raw_domain is None and cref in WIRE_SIZES:
            wire = cast(WireType, cref)
            domain = self.domains[cref]
        else:
            domain = self.domains.get(cref)
            if domain is None and cref in WIRE_SIZES:
                wire = cast(WireType, cref)  # domain="octet" in a spec without elementary domains
            elif domain is None:
                self.warn(
                    "W003", el, f"field {path} names domain {ref!r}, which the spec does not define",
                    f"the field is given wire type {UNKNOWN_DOMAIN_FALLBACK} (opaque bytes)", path,
                    "domain" if raw_domain is not None else "type",
                )
                wire = UNKNOWN_DOMAIN_FALLBACK
            else:
                wire = domain.type
        if raw_domain is None and not reserved and self.doc.family != "0-8":
            # 0-8 writes type= on fields throughout and 0-9-1 on reserved fields; elsewhere it is a slip.
            self.warn(
                "W002", el, f'field {path} uses type="{raw_type}" instead of domain="{raw_type}"',
                f"read as domain {cref!r}", path,
            )
        if domain is not None and ref.strip() != self.domain_spelling[domain.name]:
            self.warn(
                "W001", el, f"field {path} names domain {ref!r}, which is spelled {self.domain_spelling[domain.name]!r}",
                f"resolved to domain {domain.name!r}", path,
            )
        doc, _, _ = self.docs(el, path)
        own_asserts = self.asserts(el, path, cls)
        return Field(
            name=name,
            path=path,
            domain=domain.name if domain else (None if cref in WIRE_SIZES else cref),
            type=wire,
            reserved=reserved,
            label=self.label(el, path),
            doc=doc,
            asserts=own_asserts + (domain.asserts if domain else ()),
            rules=self.rules(el, path),
            loc=self.loc(el, path),
            added_by=self.added(el, path),
            changed_by=self.changed(el),
        )

    def fields(self, els: Iterable[etree._Element], owner: str, cls: etree._Element) -> tuple[Field, ...]:
        out: list[Field] = []
        seen: dict[str, Field] = {}
        for el in els:
            f = self.field(el, owner, cls)
            if f.name in seen:
                raise self.error(el, f"duplicate field name {f.name!r} in {owner} (first at line {seen[f.name].loc.line})", f.path)
            seen[f.name] = f
            out.append(f)
        return tuple(out)

    def classes(self) -> tuple[Class, ...]:
        root = self.doc.root
        els = _children(root, "class")
        by_index: dict[int, etree._Element] = {}
        names: dict[str, etree._Element] = {}
        out: list[Class] = []
        last_index = -1
        for el in els:
            name = self.name_of(el, "class")
            index = self.int_attr(el, "index", name)
            if index in by_index:
                raise self.error(el, f"duplicate class index {index}: {name!r} and {canon(by_index[index].get('name') or '')!r} (line {by_index[index].sourceline})", name)
            if name in names:
                raise self.error(el, f"duplicate class name {name!r} (first at line {names[name].sourceline})", name)
            if index < last_index:
                self.warn("W005", el, f"class {name} (index {index}) follows a class with index {last_index}",
                          "document order is kept; lookups go by index", name)
            last_index = max(last_index, index)
            by_index[index] = el
            names[name] = el
            out.append(self.klass(el, name, index))
        return tuple(out)

    def klass(self, el: etree._Element, name: str, index: int) -> Class:
        doc, grammar, _ = self.docs(el, name)
        first = next((d for d in _children(el, "doc") if d.get("type") == "grammar"), None)
        if first is not None:  # the line the grammar's text starts on, for its productions' locations
            lead = "".join(first.itertext())
            skipped = lead[: len(lead) - len(lead.lstrip())].count("\n")
            at = self.loc(first, name)
            self.grammar_lines[name] = Location(at.file, (at.line or 0) + skipped if at.line else None, name)
        props = lower_properties(self.fields(_children(el, "field"), name, el))
        methods = self.methods(el, name, index)
        return Class(
            name=name,
            index=index,
            handler=el.get("handler"),
            label=el.get("label"),
            doc=doc,
            grammar=grammar,
            chassis=self.chassis(el, name),
            properties=props,
            methods=methods,
            rules=self.rules(el, name),
            loc=self.loc(el, name),
            property_flag_words=max(1, -(-len(props) // PROPERTIES_PER_FLAG_WORD)),
            added_by=self.added(el, name),
            changed_by=self.changed(el),
        )

    def methods(self, cls: etree._Element, cname: str, cindex: int) -> tuple[Method, ...]:
        els = _children(cls, "method")
        names = {self.name_of(m, "method", cname): m for m in els}
        by_index: dict[int, str] = {}
        seen: set[str] = set()
        out: list[Method] = []
        last = -1
        warned_order = False
        for el in els:
            name = self.name_of(el, "method", cname)
            full = f"{cname}.{name}"
            index = self.int_attr(el, "index", full)
            if name in seen:
                raise self.error(el, f"duplicate method name {full!r}", full)
            if index in by_index:
                raise self.error(el, f"duplicate method index {index} in class {cname}: {name!r} and {by_index[index]!r}", full)
            if index < last and not warned_order:
                warned_order = True
                self.warn("W004", el, f"method indexes are out of order in class {cname} ({name} = {index} after {last})",
                          "document order is kept; dispatch goes by (class id, method id)", full)
            last = max(last, index)
            seen.add(name)
            by_index[index] = name
            responses: list[str] = []
            for r in _children(el, "response"):
                rname = self.name_of(r, "response", full)
                if rname not in names:
                    raise self.error(r, f"response {rname!r} of {full} names no method of class {cname}", full)
                responses.append(f"{cname}.{rname}")
            chassis = self.chassis(el, full)
            sides = {c.name for c in chassis}
            direction: Direction
            if sides == {"server"}:
                direction = "client-to-server"
            elif sides == {"client"}:
                direction = "server-to-client"
            else:
                direction = "both"
                if not sides & {"client", "server"}:
                    self.warn("W006", el, f"method {full} has no client or server chassis",
                              "its direction is taken as both", full)
            doc, _, _ = self.docs(el, full)
            fields = self.fields(_children(el, "field"), full, cls)
            fields, slots, prefix = lower_arguments(fields)
            out.append(
                Method(
                    name=name,
                    full_name=full,
                    class_name=cname,
                    class_index=cindex,
                    index=index,
                    synchronous=self.flag(el, "synchronous"),
                    content=self.flag(el, "content"),
                    deprecated=self.flag(el, "deprecated"),
                    responses=tuple(responses),
                    chassis=chassis,
                    direction=direction,
                    fields=fields,
                    rules=self.rules(el, full),
                    label=self.label(el, full),
                    doc=doc,
                    loc=self.loc(el, full),
                    slots=slots,
                    fixed_prefix_size=prefix,
                    added_by=self.added(el, full),
                    changed_by=self.changed(el),
                )
            )
        return tuple(out)


def lower_arguments(
    fields: tuple[Field, ...],
) -> tuple[tuple[Field, ...], tuple[Slot, ...], int]:
    """Pack consecutive bits into octets (at most 8 each), give every field its slot, and measure the
    fixed-size prefix (the codecs' runs over the slots are amqgen.plan's)."""
    slots: list[Slot] = []
    placed: list[Field] = []
    offset: int | None = 0
    run: list[str] = []

    def close_run() -> None:
        nonlocal offset
        if run:
            slots.append(Slot("bits", "octet", tuple(run), 1, offset))
            offset = None if offset is None else offset + 1
            run.clear()

    for f in fields:
        if f.type == "bit":
            if len(run) == BITS_PER_OCTET:
                close_run()
            placed.append(replace(f, slot=len(slots), bit=len(run)))
            run.append(f.name)
            continue
        close_run()
        size = WIRE_SIZES[f.type]
        placed.append(replace(f, slot=len(slots)))
        slots.append(Slot("value", f.type, (f.name,), size, offset))
        offset = None if (offset is None or size is None) else offset + size
    close_run()

    # the first variable-size slot starts where the fixed prefix ends; with none, the prefix is everything
    prefix = next((s.offset for s in slots if s.size is None), offset) or 0
    return tuple(placed), tuple(slots), prefix


def lower_properties(props: tuple[Field, ...]) -> tuple[Field, ...]:
    """Property i sits in flag word i // 15 at bit 15 - i % 15; bit 0 of a word flags another word."""
    return tuple(
        replace(p, flag_word=i // PROPERTIES_PER_FLAG_WORD, flag_bit=15 - i % PROPERTIES_PER_FLAG_WORD)
        for i, p in enumerate(props)
    )
