"""The typed model of AMQP 1.0's type system, as the OASIS XML defines it (part 1, "Types"; parts 2-5 for the
composite and restricted types of transport, messaging, transactions and security).

Frozen dataclasses, built once by :mod:`amqgen.amqp10.loader`; every element keeps the file and line it came
from. ``to_json`` gives the versioned JSON of ``amqgen inspect --json --spec 1-0``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import Diagnostic, Location

FAMILY = "1-0"
FORMAT = "amqgen-model-1.0"
SCHEMA_VERSION = 1

Category = Literal["fixed", "variable", "compound", "array"]


@dataclass(frozen=True)
class Encoding:
    """One constructor of a primitive type (part 1.6): its format code, and how its octets are laid out."""

    code: int  # the constructor octet, 0x40..0xF0
    category: Category  # fixed width; variable (a size, then octets); compound (size and count); array
    width: int  # fixed: the value's octets; others: the width of the size (and count) fields, 1 or 4
    name: str | None  # "smalluint", "uint0"; None for the type's main encoding
    location: Location


@dataclass(frozen=True)
class Primitive:
    name: str  # "uint", "string", "list"
    encodings: tuple[Encoding, ...]
    location: Location


@dataclass(frozen=True)
class Descriptor:
    """How a described type is marked on the wire: a symbol or a ulong, domain << 32 | id (part 1.5)."""

    name: str  # "amqp:open:list"
    code: int

    @property
    def domain(self) -> int:
        return self.code >> 32

    @property
    def id(self) -> int:
        return self.code & 0xFFFFFFFF


@dataclass(frozen=True)
class Field:
    """A composite's field, by position in its list."""

    name: str
    type: str  # a type's name, or "*" for any type providing each of ``requires``
    mandatory: bool
    multiple: bool  # one value or an array of them
    default: str | None  # as written in the XML ("mixed", "4294967295", "false")
    value: Any  # the default resolved: a choice's name to its value, then to the base primitive's Python value
    requires: tuple[str, ...]  # archetypes the value must provide (type "*")
    location: Location


@dataclass(frozen=True)
class Choice:
    name: str
    value: Any  # typed by the restricted type's primitive source
    location: Location


@dataclass(frozen=True)
class Composite:
    name: str
    source: str  # "list": fields by position
    provides: tuple[str, ...]  # archetypes ("frame", "section", "delivery-state", ...)
    descriptor: Descriptor
    fields: tuple[Field, ...]
    part: str  # the file it is defined in: types, transport, messaging, security, transactions
    location: Location


@dataclass(frozen=True)
class Restricted:
    """A type restricting another (its ``source``): to choices, to a described form, or just by name."""

    name: str
    source: str
    provides: tuple[str, ...]
    descriptor: Descriptor | None  # described restricted types: the message sections but header/properties
    choices: tuple[Choice, ...]
    primitive: str  # the primitive its source chain ends at ("*" for amqp-value, whose source is any type)
    part: str
    location: Location


@dataclass(frozen=True)
class Definition:
    name: str  # "PORT", "MIN-MAX-FRAME-SIZE"
    value: str
    part: str
    location: Location


@dataclass(frozen=True)
class SpecFile:
    name: str  # "transport.bare.xml"
    sha256: str


@dataclass(frozen=True)
class Spec:
    name: str  # "amqp-1.0"
    path: str  # the folder, as the user named it
    files: tuple[SpecFile, ...]
    sha256: str  # of the files' digests, in the fixed order
    primitives: tuple[Primitive, ...]
    composites: tuple[Composite, ...]
    restricted: tuple[Restricted, ...]
    definitions: tuple[Definition, ...]
    archetypes: dict[str, tuple[str, ...]]  # archetype -> the types providing it, in spec order
    warnings: tuple[Diagnostic, ...] = field(default_factory=tuple)

    family: str = FAMILY

    @property
    def title(self) -> str:
        return self.name

    @property
    def origin(self) -> str:
        """What the generated-file notice names: the file set and its hash."""
        return f"AMQP 1.0 ({', '.join(f.name for f in self.files)}; sha256 {self.sha256})"

    @property
    def encodings(self) -> tuple[Encoding, ...]:
        return tuple(e for p in self.primitives for e in p.encodings)

    @property
    def descriptors(self) -> tuple[Descriptor, ...]:
        out = [c.descriptor for c in self.composites]
        out += [r.descriptor for r in self.restricted if r.descriptor is not None]
        return tuple(out)

    @property
    def fields(self) -> tuple[Field, ...]:
        return tuple(f for c in self.composites for f in c.fields)

    def type_by_name(self) -> dict[str, Primitive | Composite | Restricted]:
        out: dict[str, Primitive | Composite | Restricted] = {p.name: p for p in self.primitives}
        out.update({c.name: c for c in self.composites})
        out.update({r.name: r for r in self.restricted})
        return out

    def definition(self, name: str) -> Definition:
        return next(d for d in self.definitions if d.name == name)


def _loc(loc: Location) -> dict[str, Any]:
    return {"file": loc.file.rsplit("/", 1)[-1], "line": loc.line}


def to_json(spec: Spec) -> dict[str, Any]:
    """The model as JSON-ready data (``amqgen inspect --json --spec 1-0``); file names without folders, so the
    output does not depend on where the spec is installed."""

    def descriptor(d: Descriptor | None) -> dict[str, Any] | None:
        return None if d is None else {"name": d.name, "code": f"0x{d.domain:08x}:0x{d.id:08x}"}

    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "family": spec.family,
        "name": spec.name,
        "sha256": spec.sha256,
        "files": [{"name": f.name, "sha256": f.sha256} for f in spec.files],
        "primitives": [
            {"name": p.name, "location": _loc(p.location),
             "encodings": [{"code": f"0x{e.code:02x}", "category": e.category, "width": e.width, "name": e.name}
                           for e in p.encodings]}
            for p in spec.primitives
        ],
        "composites": [
            {"name": c.name, "part": c.part, "source": c.source, "provides": list(c.provides),
             "descriptor": descriptor(c.descriptor), "location": _loc(c.location),
             "fields": [{"name": f.name, "type": f.type, "mandatory": f.mandatory, "multiple": f.multiple,
                         "default": f.default, "value": f.value, "requires": list(f.requires)} for f in c.fields]}
            for c in spec.composites
        ],
        "restricted": [
            {"name": r.name, "part": r.part, "source": r.source, "primitive": r.primitive,
             "provides": list(r.provides), "descriptor": descriptor(r.descriptor), "location": _loc(r.location),
             "choices": [{"name": ch.name, "value": ch.value} for ch in r.choices]}
            for r in spec.restricted
        ],
        "definitions": [{"name": d.name, "value": d.value, "part": d.part} for d in spec.definitions],
        "archetypes": {k: list(v) for k, v in spec.archetypes.items()},
        "warnings": [{"code": w.code, "message": w.message, "location": _loc(w.location)} for w in spec.warnings],
    }


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of :func:`to_json`'s document (``amqgen inspect --json-schema --spec 1-0``)."""
    name = {"type": "string", "minLength": 1}
    names = {"type": "array", "items": name}
    loc = {"type": "object", "required": ["file", "line"], "additionalProperties": False,
           "properties": {"file": name, "line": {"type": ["integer", "null"]}}}
    descriptor = {"type": ["object", "null"], "required": ["name", "code"], "additionalProperties": False,
                  "properties": {"name": name, "code": {"type": "string", "pattern": "^0x[0-9a-f]{8}:0x[0-9a-f]{8}$"}}}
    value = {"type": ["integer", "number", "string", "boolean", "null"]}

    def obj(props: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object", "required": list(props), "additionalProperties": False, "properties": props}

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://amqgen.invalid/schemas/amqgen-model-1.0-1.json",
        "title": "amqgen's model of AMQP 1.0 (amqgen inspect --json --spec 1-0), schema version 1",
        **obj({
            "format": {"const": FORMAT},
            "schema_version": {"const": SCHEMA_VERSION},
            "family": {"const": FAMILY},
            "name": name,
            "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            "files": {"type": "array", "items": obj({"name": name,
                                                     "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"}})},
            "primitives": {"type": "array", "items": obj({
                "name": name, "location": loc,
                "encodings": {"type": "array", "minItems": 1, "items": obj({
                    "code": {"type": "string", "pattern": "^0x[0-9a-f]{2}$"},
                    "category": {"enum": ["fixed", "variable", "compound", "array"]},
                    "width": {"type": "integer", "minimum": 0}, "name": {"type": ["string", "null"]}})}})},
            "composites": {"type": "array", "items": obj({
                "name": name, "part": name, "source": {"const": "list"}, "provides": names,
                "descriptor": descriptor, "location": loc,
                "fields": {"type": "array", "items": obj({
                    "name": name, "type": name, "mandatory": {"type": "boolean"}, "multiple": {"type": "boolean"},
                    "default": {"type": ["string", "null"]}, "value": value, "requires": names})}})},
            "restricted": {"type": "array", "items": obj({
                "name": name, "part": name, "source": name, "primitive": name, "provides": names,
                "descriptor": descriptor, "location": loc,
                "choices": {"type": "array", "items": obj({"name": name, "value": value})}})},
            "definitions": {"type": "array", "items": obj({"name": name, "value": {"type": "string"}, "part": name})},
            "archetypes": {"type": "object", "additionalProperties": names},
            "warnings": {"type": "array", "items": obj({"code": name, "message": name, "location": loc})},
        }),
    }
