"""Read AMQP 1.0's OASIS XML (the folder of Debian's amqp-specs ``1-0``) into the typed model of
:mod:`amqgen.amqp10.model`.

The six files are read with the 0-x loader's secure parser (no network, no DTD, no entities, a size limit);
every problem is one :class:`SpecError` with file:line. ``index.bare.xml`` defines nothing (it lists the
parts in the full specification), so the file set is fixed knowledge here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from lxml import etree

from ..errors import Diagnostic, Location, SpecError
from ..loader import parse_secure
from .model import (
    Category,
    Choice,
    Composite,
    Definition,
    Descriptor,
    Encoding,
    Field,
    Primitive,
    Restricted,
    Spec,
    SpecFile,
)

NAMESPACE = "http://www.amqp.org/schema/amqp.xsd"
#: the parts, in the specification's order; each file is PART.bare.xml (Debian) or PART.xml
PARTS = ("types", "transport", "messaging", "security", "transactions")
INDEX = "index"
#: 1.0's files are small (the largest, transport, is 11 KB stripped); a full one with docs stays under this
MAX_FILE_BYTES = 4 * 1024 * 1024
CATEGORIES: tuple[Category, ...] = ("fixed", "variable", "compound", "array")
#: primitives whose values are Python ints, floats, bools; the rest are text (strings, symbols) or octets
INT_TYPES = {"ubyte", "ushort", "uint", "ulong", "byte", "short", "int", "long", "timestamp"}
FLOAT_TYPES = {"float", "double"}


def is_amqp10(path: str | Path) -> bool:
    """A folder holding the 1.0 file set (the caller loads it with :func:`load_spec`)."""
    p = Path(path)
    return p.is_dir() and _part_file(p, "types") is not None and _part_file(p, "transport") is not None


def _part_file(folder: Path, part: str) -> Path | None:
    for name in (f"{part}.bare.xml", f"{part}.xml"):
        if (folder / name).is_file():
            return folder / name
    return None


def _bool(el: etree._Element, attr: str, where: Location) -> bool:
    raw = el.get(attr)
    if raw is None:
        return False
    if raw not in ("true", "false"):
        raise SpecError(f'{attr}="{raw}" is not "true" or "false"', where)
    return raw == "true"


def _names(raw: str | None) -> tuple[str, ...]:
    return tuple(x.strip() for x in (raw or "").split(",") if x.strip())


class _Reader:
    def __init__(self, folder: Path, shown: str) -> None:
        self.folder = folder
        self.shown = shown
        self.primitives: list[Primitive] = []
        self.composites: list[Composite] = []
        self.restricted: list[tuple[etree._Element, str, Location]] = []
        self.definitions: list[Definition] = []
        self.files: list[SpecFile] = []
        self.seen: dict[str, Location] = {}
        self.codes: dict[int, Location] = {}
        self.descriptor_names: dict[str, Location] = {}
        self.descriptor_codes: dict[int, Location] = {}

    def loc(self, path: Path, el: etree._Element) -> Location:
        return Location(str(path), el.sourceline)

    def read(self) -> None:
        for part in (*PARTS, INDEX):
            path = _part_file(self.folder, part)
            if path is None:
                raise SpecError(f"the AMQP 1.0 file set lacks {part}.bare.xml (or {part}.xml)", Location(self.shown))
            root, data = parse_secure(path, MAX_FILE_BYTES)
            self.files.append(SpecFile(path.name, hashlib.sha256(data).hexdigest()))
            if etree.QName(root).localname != "amqp" or etree.QName(root).namespace != NAMESPACE:
                raise SpecError(f"root element is <{etree.QName(root).localname}>, expected <amqp xmlns=\"{NAMESPACE}\">",
                                self.loc(path, root))
            if root.get("name") != part:
                raise SpecError(f'<amqp name="{root.get("name")}">, expected name="{part}"', self.loc(path, root))
            if part == INDEX:
                if any(isinstance(c.tag, str) for c in root.iter() if c is not root):
                    raise SpecError("the 1.0 index is expected to define nothing", self.loc(path, root))
                continue
            for el in root.iter():
                if not isinstance(el.tag, str):
                    continue
                tag = etree.QName(el).localname
                if tag == "type":
                    self.type(path, part, el)
                elif tag == "definition":
                    self.definition(path, part, el)

    def _name(self, path: Path, el: etree._Element, what: str) -> str:
        name = el.get("name")
        if not name:
            raise SpecError(f"a <{what}> without a name", self.loc(path, el))
        return name

    def _kids(self, el: etree._Element, tag: str) -> list[etree._Element]:
        return [c for c in el if isinstance(c.tag, str) and etree.QName(c).localname == tag]

    def type(self, path: Path, part: str, el: etree._Element) -> None:
        where = self.loc(path, el)
        name = self._name(path, el, "type")
        if name in self.seen:
            raise SpecError(f"type {name!r} is defined twice (first at {self.seen[name]})", where)
        self.seen[name] = where
        cls = el.get("class")
        if cls == "primitive":
            self.primitives.append(Primitive(name, tuple(self.encoding(path, e) for e in self._kids(el, "encoding")),
                                             where))
            if not self.primitives[-1].encodings:
                raise SpecError(f"primitive type {name!r} has no <encoding>", where)
        elif cls == "composite":
            if el.get("source") != "list":
                raise SpecError(f'composite type {name!r} has source="{el.get("source")}"; 1.0 composites are lists',
                                where)
            d = self.descriptor(path, el, name)
            if d is None:
                raise SpecError(f"composite type {name!r} has no <descriptor>", where)
            fields = tuple(self.field(path, f) for f in self._kids(el, "field"))
            seen = set()
            for f in fields:
                if f.name in seen:
                    raise SpecError(f"field {f.name!r} appears twice in {name!r}", f.location)
                seen.add(f.name)
            self.composites.append(Composite(name, "list", _names(el.get("provides")), d, fields, part, where))
        elif cls == "restricted":
            if not el.get("source"):
                raise SpecError(f"restricted type {name!r} has no source", where)
            self.restricted.append((el, part, where))
        else:
            raise SpecError(f'type {name!r} has class="{cls}"; expected primitive, composite or restricted', where)

    def encoding(self, path: Path, el: etree._Element) -> Encoding:
        where = self.loc(path, el)
        try:
            code = int(el.get("code") or "", 16)
            width = int(el.get("width") or "")
        except ValueError:
            raise SpecError(f'<encoding code="{el.get("code")}" width="{el.get("width")}">: not numbers', where) from None
        category = el.get("category")
        if category not in CATEGORIES:
            raise SpecError(f'<encoding category="{category}">: expected one of {", ".join(CATEGORIES)}', where)
        if not 0x40 <= code <= 0xFF or code in self.codes:
            raise SpecError(f"encoding code 0x{code:02x} is outside 0x40..0xff or used twice", where)
        self.codes[code] = where
        if category != "fixed" and width not in (1, 4):
            raise SpecError(f"a {category} encoding has width {width}; its size field is 1 or 4 octets", where)
        return Encoding(code, category, width, el.get("name"), where)

    def descriptor(self, path: Path, el: etree._Element, owner: str) -> Descriptor | None:
        kids = self._kids(el, "descriptor")
        if not kids:
            return None
        d = kids[0]
        where = self.loc(path, d)
        raw = d.get("code") or ""
        domain, sep, ident = raw.partition(":")
        try:
            if not sep:
                raise ValueError
            code = int(domain, 16) << 32 | int(ident, 16)
        except ValueError:
            raise SpecError(f'descriptor code "{raw}" of {owner!r} is not 0xDOMAIN:0xID', where) from None
        name = d.get("name") or ""
        if not name or code > 0xFFFF_FFFF_FFFF_FFFF:
            raise SpecError(f"descriptor of {owner!r} lacks a name or its code is over 64 bits", where)
        for key, table in ((name, self.descriptor_names), (code, self.descriptor_codes)):
            if key in table:
                raise SpecError(f"descriptor {name} ({raw}) is used twice (first at {table[key]})", where)  # type: ignore[index]
            table[key] = where  # type: ignore[index]
        return Descriptor(name, code)

    def field(self, path: Path, el: etree._Element) -> Field:
        where = self.loc(path, el)
        name = self._name(path, el, "field")
        ftype = el.get("type")
        if not ftype:
            raise SpecError(f"field {name!r} has no type", where)
        requires = _names(el.get("requires"))
        if ftype == "*" and not requires:
            raise SpecError(f"field {name!r} of type * names no archetype it requires", where)
        return Field(name, ftype, _bool(el, "mandatory", where), _bool(el, "multiple", where), el.get("default"),
                     None, requires, where)

    def definition(self, path: Path, part: str, el: etree._Element) -> None:
        where = self.loc(path, el)
        name = self._name(path, el, "definition")
        value = el.get("value")
        if value is None:
            raise SpecError(f"definition {name!r} has no value", where)
        self.definitions.append(Definition(name, value, part, where))


def _typed(raw: str, primitive: str, where: Location) -> Any:
    """A value written in the XML, as the Python value of its primitive type."""
    try:
        if primitive in INT_TYPES:
            return int(raw, 0)
        if primitive in FLOAT_TYPES:
            return float(raw)
    except ValueError:
        raise SpecError(f"{raw!r} is not a {primitive} value", where) from None
    if primitive == "boolean":
        if raw not in ("true", "false"):
            raise SpecError(f"{raw!r} is not a boolean value", where)
        return raw == "true"
    return raw


def load_spec(folder: str | Path, *, strict: bool = False) -> Spec:
    """The 1.0 model of the file set in ``folder``. With ``strict``, any warning is an error."""
    from ..errors import StrictError

    shown = str(folder)
    p = Path(folder)
    if not p.is_dir():
        raise SpecError("not a folder holding the AMQP 1.0 file set", Location(shown))
    r = _Reader(p, shown)
    r.read()
    primitives = {t.name for t in r.primitives}
    known = primitives | {c.name for c in r.composites} | {el.get("name") or "" for el, _, _ in r.restricted}

    # restricted types: their source chain down to a primitive, then their choices typed by it
    sources = {el.get("name") or "": (el.get("source") or "", where) for el, _, where in r.restricted}

    def primitive_of(name: str, where: Location, seen: tuple[str, ...] = ()) -> str:
        if name in primitives or name == "*":
            return name
        if name in seen or name not in sources:
            raise SpecError(f"type {seen[0] if seen else name!r} restricts {name!r}, which is "
                            + ("a cycle" if name in seen else "not a primitive or restricted type"), where)
        return primitive_of(sources[name][0], sources[name][1], (*seen, name))

    restricted = []
    for el, part, where in r.restricted:
        name = el.get("name") or ""
        prim = primitive_of(name, where)
        choices = []
        for ch in r._kids(el, "choice"):
            cw = r.loc(Path(where.file), ch)
            choices.append(Choice(r._name(Path(where.file), ch, "choice"), _typed(ch.get("value") or "", prim, cw), cw))
        restricted.append(Restricted(name, el.get("source") or "", _names(el.get("provides")),
                                     r.descriptor(Path(where.file), el, name), tuple(choices), prim, part, where))
    by_name: dict[str, Restricted] = {t.name: t for t in restricted}

    # fields: types known, defaults resolved (a choice's name to its value, then typed by the primitive)
    composites = []
    for c in r.composites:
        fields = []
        for f in c.fields:
            if f.type != "*" and f.type not in known:
                raise SpecError(f"field {c.name}.{f.name} has type {f.type!r}, which no file defines", f.location)
            value = None
            if f.default is not None:
                raw = f.default
                t = by_name.get(f.type)
                if t is not None and any(ch.name == raw for ch in t.choices):
                    value = next(ch.value for ch in t.choices if ch.name == raw)
                else:
                    prim = t.primitive if t is not None else f.type
                    value = _typed(raw, prim, f.location)
            fields.append(Field(f.name, f.type, f.mandatory, f.multiple, f.default, value, f.requires, f.location))
        composites.append(Composite(c.name, c.source, c.provides, c.descriptor, tuple(fields), c.part, c.location))

    # archetypes: what provides each; a required one that nothing provides is a spec defect (a warning)
    archetypes: dict[str, list[str]] = {}
    typs: list[Composite | Restricted] = [*composites, *restricted]
    for typ in typs:
        for a in typ.provides:
            archetypes.setdefault(a, []).append(typ.name)
    warnings = []
    reported: set[str] = set()
    for c in composites:
        for f in c.fields:
            for a in f.requires:
                if a not in archetypes and a not in reported:
                    reported.add(a)
                    warnings.append(Diagnostic(
                        "10-unprovided-archetype",
                        f"field {c.name}.{f.name} requires {a!r}, which no type provides",
                        "the field accepts any value until a type provides it", f.location))
    digest = hashlib.sha256("".join(f"{f.name}:{f.sha256}\n" for f in r.files).encode()).hexdigest()
    spec = Spec(
        name="amqp-1.0",
        path=shown,
        files=tuple(r.files),
        sha256=digest,
        primitives=tuple(r.primitives),
        composites=tuple(composites),
        restricted=tuple(restricted),
        definitions=tuple(r.definitions),
        archetypes={k: tuple(v) for k, v in archetypes.items()},
        warnings=tuple(warnings),
    )
    if strict and spec.warnings:
        raise StrictError(spec.warnings)
    return spec
