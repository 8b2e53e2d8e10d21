"""The AMQP 1.0 Python target's hook: Python's spelling of the 1.0 codec plan (amqgen.amqp10.plan).

It decides only what is Python's: the Python type of each AMQP type, the wrapper class that keeps a value's AMQP
type where no field declares it (a ``UInt`` in a map), the ``struct`` format of each fixed width, and identifiers.
"""


import re
from dataclasses import dataclass
from typing import Any

from amqgen.amqp10 import wire
from amqgen.amqp10.behaviour import behaviour_plan
from amqgen.amqp10.model import Spec
from amqgen.amqp10.plan import KEY_TYPES, Constructor, FieldPlan, codec_plan
from amqgen.amqp10.vectors import ERROR_KINDS
from amqgen.errors import RenderError
from amqgen.naming import Naming

#: the Python type a declared field of each primitive holds
ANNOTATION = {
    "null": "None", "boolean": "bool", "ubyte": "int", "ushort": "int", "uint": "int", "ulong": "int", "byte": "int",
    "short": "int", "int": "int", "long": "int", "float": "float", "double": "float", "decimal32": "bytes",
    "decimal64": "bytes", "decimal128": "bytes", "char": "str", "timestamp": "int", "uuid": "uuid.UUID",
    "binary": "bytes", "string": "str", "symbol": "str", "list": "list[Any]", "map": "dict[Any, Any]",
    "array": "Array",
}
#: where no field declares the type (maps, lists, ``*`` fields, amqp-value), a value keeps its AMQP type by class;
#: the rest are Python's own: None, bool, int (long), float (double), str (string), bytes (binary), uuid.UUID,
#: list, dict
WRAPPER = {
    "ubyte": "UByte", "ushort": "UShort", "uint": "UInt", "ulong": "ULong", "byte": "Byte", "short": "Short",
    "int": "Int", "float": "Float", "char": "Char", "timestamp": "Timestamp", "symbol": "Symbol",
    "decimal32": "Decimal32", "decimal64": "Decimal64", "decimal128": "Decimal128",
}
#: the Python class each wrapper extends
WRAPPER_BASE = {p: "float" if p == "float" else "str" if p in ("char", "symbol") else
                "bytes" if p.startswith("decimal") else "int" for p in WRAPPER}
UNSIGNED = {"ubyte", "ushort", "uint", "ulong"}
SIGNED = {"byte", "short", "int", "long", "timestamp"}
STRUCT = {("u", 1): "B", ("u", 2): "H", ("u", 4): "I", ("u", 8): "Q", ("s", 1): "b", ("s", 2): "h", ("s", 4): "i",
          ("s", 8): "q", ("f", 4): "f", ("f", 8): "d"}
#: the value of each constructor that carries no octets, by the encoding's name in the XML
ZERO_WIDTH = {"null": "None", "true": "True", "false": "False", "uint0": "0", "ulong0": "0", "list0": "[]"}


def isort_key(name: str) -> tuple[int, list[Any]]:
    """ruff's (isort's) order of imported names and __all__: constants, then classes, then the rest, each in
    natural order (Decimal32 before Decimal128)."""
    bare = name.lstrip("_")
    group = 0 if name.isupper() else 1 if bare[:1].isupper() and not name.startswith("_") else 2
    parts = re.split(r"(\d+)", name if group == 1 else name.lower())
    return group, [int(p) if p.isdigit() else p for p in parts]


def isort(names: Any) -> list[str]:
    return sorted(names, key=isort_key)


FILTERS = {"isort": isort}


@dataclass(frozen=True)
class Reader:
    """One constructor's decoder: ``plain`` returns the Python value, ``typed`` the value in its wrapper."""

    code: int
    plain: str  # function name
    typed: str
    primitive: str
    category: str
    width: int
    kind: str  # zero, int, float, bool, char, uuid, raw, text, compound, array
    fmt: str  # struct format, or the constant of a zero-width constructor
    wrapper: str | None


def _reader(c: Constructor) -> Reader:
    p, w = c.primitive, c.width
    wrapper = WRAPPER.get(p)
    name = f"_p{c.code:02x}"
    typed = f"_t{c.code:02x}" if wrapper else name
    if c.category == "fixed" and w == 0:
        if c.name not in ZERO_WIDTH:
            raise RenderError(f"constructor 0x{c.code:02x} ({c.name}) carries no octets and no known value")
        return Reader(c.code, name, typed, p, c.category, w, "zero", ZERO_WIDTH[c.name], wrapper)
    if c.category == "fixed":
        if p in UNSIGNED or p in SIGNED:
            kind, fmt = "int", STRUCT[("u" if p in UNSIGNED else "s", w)]
        elif p in ("float", "double"):
            kind, fmt = "float", STRUCT[("f", w)]
        elif p == "boolean":
            kind, fmt = "bool", ""
        elif p == "char":
            kind, fmt = "char", ">I"
        elif p == "uuid":
            kind, fmt = "uuid", ""
        elif p.startswith("decimal"):
            kind, fmt = "raw", ""
        else:
            raise RenderError(f"constructor 0x{c.code:02x}: no Python reading for a fixed {p} of {w} octets")
        return Reader(c.code, name, typed, p, c.category, w, kind, fmt, wrapper)
    if c.category == "variable":
        return Reader(c.code, name, typed, p, c.category, w, "text", {"binary": "", "string": "utf-8",
                                                                      "symbol": "ascii"}[p], wrapper)
    return Reader(c.code, name, name, p, c.category, w, c.category, "", None)


@dataclass(frozen=True)
class PyField:
    index: int
    spec_name: str
    name: str  # the attribute
    annotation: str  # the attribute's type (decoded values)
    param: str  # what __init__ accepts
    kind: str  # primitive, composite, any
    primitive: str | None
    multiple: bool
    mandatory: bool
    default: str  # Python literal of the resolved default, or "None"
    has_default: bool
    accepts: str  # composite fields: the tuple of classes
    type: str  # the spec's type name
    keys: str  # a map with restricted keys: the tuple of the key types' writers; "" for any key
    values: str  # and its values' rule (plan.VALUE_RULES), a Python literal: '"simple"', '"described"' or '""'
    provided: str  # a "*" field requiring an archetype: "(classes), (types)" of the providers; "" otherwise
    requires: str  # what it requires ("message-id")
    checked: bool = False  # its reader may give _WRONG (a declared type or archetype): _read notes it in ``wrong``
    inline: bool = False  # a single primitive: _read looks its constructor up in the type's table itself
    provided_str: bool = False  # a "*" field a string provides (message-id ...): _read reads a str8 in line


@dataclass(frozen=True)
class PyDescribed:
    name: str
    cls: str
    kind: str
    code: int
    symbol: str
    part: str
    provides: tuple[str, ...]
    frame_type: str  # "AMQP", "SASL" or "None": the frame a performative travels in
    fields: tuple[PyField, ...]
    source: str | None
    value_annotation: str
    nones: str  # "v0 = v1 = None": _read's field variables, each None until read
    checks: str  # the condition under which _read checks the field rules (a mandatory None, a wrong type)
    wrong: bool  # a field may read as _WRONG: _read keeps a ``wrong`` flag (one test then, not one per field)
    keys: str = ""  # map sections: the tuple of the key types' writers
    keys_section: str = ""
    values: str = '""'  # map sections: the values' rule (plan.VALUE_RULES), a Python literal


def _union(names: list[str]) -> str:
    return " | ".join(dict.fromkeys(names)) or "Any"


def _key_section(spec: Spec, name: str) -> str:
    """The section of the prose that restricts a map section's keys (plan.KEY_TYPES), through its source chain."""
    types = spec.type_by_name()
    while name and name not in KEY_TYPES:
        t = types.get(name)
        name = getattr(t, "source", "") if t is not None and getattr(t, "source", name) != name else ""
    return KEY_TYPES[name][1] if name else ""


def context(spec: Spec, naming: Naming, options: dict[str, str]) -> dict[str, Any]:
    plan = codec_plan(spec)
    readers = [_reader(c) for c in plan.constructors]
    by_code = {r.code: r for r in readers}
    null = next(c.code for c in plan.constructors if c.primitive == "null")
    cls_of = {d.name: naming.type(d.name) for d in plan.described}
    restricted = {r.name: r for r in plan.restricted}
    naming.check_unique("1.0 described types", "type", ((d.name, None) for d in plan.described))

    def untyped(prim: str) -> str:
        return WRAPPER.get(prim) or ANNOTATION[prim]

    def provider_type(t: str) -> str:
        if t in cls_of:
            return cls_of[t]
        return untyped(restricted[t].primitive)

    def annotation(f: FieldPlan) -> tuple[str, str]:
        if f.kind == "primitive":
            assert f.primitive is not None
            one = ANNOTATION[f.primitive]
        elif f.kind == "composite":
            one = cls_of[f.accepts[0]]
        else:
            one = _union([provider_type(t) for t in f.accepts]) if f.accepts else "Any"
        if f.multiple:
            return f"list[{one}] | None", f"{one} | list[{one}] | None"
        return f"{one} | None", f"{one} | None"

    def keys_of(prims: tuple[str, ...]) -> str:
        return "(" + "".join(f"w_{p}, " for p in prims) + ")" if prims else ""

    def provided_of(f: FieldPlan) -> str:
        # the providers of a "*" field's archetype: composites by class, restricted types by the exact Python type
        # their value has where no field declares it (message-id-ulong: ULong, so a plain int, a long, is refused)
        if f.kind != "any" or not f.accepts:
            return ""
        classes = [cls_of[t] for t in f.accepts if t in cls_of]
        types: list[str] = []
        for t in f.accepts:
            if t in restricted:
                types.append(untyped(restricted[t].primitive))
                types += ["bytearray"] if types[-1] == "bytes" else []
        return "(" + "".join(c + ", " for c in classes) + "), (" + "".join(t + ", " for t in types) + ")"

    def py_field(f: FieldPlan) -> PyField:
        ann, param = annotation(f)
        default = "None" if f.default is None else repr(f.default)
        accepts = "(" + "".join(cls_of[a] + ", " for a in f.accepts) + ")" if f.kind == "composite" else "()"
        return PyField(f.index, f.name, naming.member(f.name), ann, param, f.kind, f.primitive, f.multiple,
                       f.mandatory, default, f.default is not None, accepts, f.type, keys_of(f.key_types),
                       repr(f.value_rule), provided_of(f), " or ".join(f.requires), f.kind != "any" or bool(provided_of(f)),
                       f.kind == "primitive" and not f.multiple,
                       f.kind == "any" and any(t in restricted and restricted[t].primitive == "string"
                                               for t in f.accepts))

    out: list[PyDescribed] = []
    for d in plan.described:
        frame_type = "AMQP" if "frame" in d.provides else "SASL" if "sasl-frame" in d.provides else "None"
        fields = tuple(py_field(f) for f in d.fields)
        naming.check_unique(f"{d.name} fields", "member", ((f.name, None) for f in d.fields))
        value_ann = untyped(d.source) if d.source not in (None, "*") else "Any"
        checks = [f"v{f.index} is None" for f in fields if f.mandatory]
        wrong = any(f.checked for f in fields)
        out.append(PyDescribed(d.name, cls_of[d.name], d.kind, d.code, d.symbol, d.part, d.provides, frame_type, fields,
                               d.source, value_ann, " = ".join([f"v{f.index}" for f in fields] + ["None"]),
                               " or ".join(checks + ["wrong"] * wrong), wrong,
                               keys_of(d.key_types), _key_section(spec, d.name), repr(d.value_rule)))
    archetypes = [(naming.type("any", a), _union([provider_type(t) for t in ts]), a, ts) for a, ts in plan.archetypes]
    clash = {a for a, *_ in archetypes} & set(cls_of.values())
    if clash:
        raise RenderError(f"archetype names {sorted(clash)} are also type names: rename one in the pack")
    choices = [(naming.type(r.name), r.name, r.primitive,
                [(naming.constant(n), repr(v), n) for n, v in r.choices]) for r in plan.restricted if r.choices]
    # the constructors an encoder picks between, by role: "main", "small" (one octet), "zero" (no octets),
    # "true" / "false", "w1" / "w4" (size fields of one or four octets)
    enc: dict[str, dict[str, int]] = {}
    for c in plan.constructors:
        roles = enc.setdefault(c.primitive, {})
        if c.category == "fixed" and c.width == 0 and c.name in ("true", "false"):
            roles[c.name] = c.code
        elif c.category == "fixed" and c.width == 0 and c.primitive != "null":
            roles["zero"] = c.code
        elif c.category == "fixed" and c.name.startswith("small"):
            roles["small"] = c.code
        elif c.category == "fixed":
            roles["main"] = c.code
        else:
            roles[f"w{c.width}"] = c.code
    # the widest constructor of each primitive: what an array of mixed element sizes is written with
    wide = {p: r.get("w4", r.get("main")) for p, r in enc.items()}
    # the writers of the fixed-width primitives: each constructor's struct format and the range it holds, from
    # the model's widths (an integer: signed or not; smallest constructor first)
    width = {c.code: c.width for c in plan.constructors}

    def int_form(prim: str, code: int) -> dict[str, Any]:
        signed = prim in SIGNED
        bits = 8 * width[code]
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        return {"code": code, "fmt": STRUCT[("s" if signed else "u", width[code])], "lo": lo, "hi": hi}

    ints = [{"prim": p, "zero": enc[p].get("zero"),
             "forms": [int_form(p, enc[p][k]) for k in ("small", "main") if k in enc[p]]}
            for p in sorted(enc) if p in UNSIGNED or p in SIGNED]
    floats = [{"prim": p, "code": enc[p]["main"], "fmt": STRUCT[("f", width[enc[p]["main"]])]}
              for p in sorted(enc) if p in ("float", "double")]
    decimals = [{"prim": p, "code": enc[p]["main"], "width": width[enc[p]["main"]]}
                for p in sorted(enc) if p.startswith("decimal")]
    # what a composite's _read reads in line for a field of each primitive, one call less per field: the
    # constructors that carry no octets (their value), the one-octet unsigned ones, the short strings and binaries
    inline_forms = {
        p: {"zero": [(r.code, r.fmt) for r in readers if r.primitive == p and r.kind == "zero" and p != "null"],
            "byte": [r.code for r in readers if r.primitive == p and r.kind == "int" and r.width == 1 and r.fmt == "B"],
            "text8": [(r.code, r.fmt) for r in readers if r.primitive == p and r.kind == "text" and r.width == 1]}
        for p in {r.primitive for r in readers}}
    str8 = next(r.code for r in readers if r.primitive == "string" and r.kind == "text" and r.width == 1)
    comps = [d for d in out if d.kind == "composite"]
    fields_all = [f for d in comps for f in d.fields]
    used = {f"F_{f.primitive.upper()}" for f in fields_all if f.primitive}
    used |= {f"w_{f.primitive}" for f in fields_all if f.primitive}
    used |= {f"w_{d.source}" for d in out if d.kind == "section" and d.source != "*"}
    used |= {"read_multiple", "write_multiple"} if any(f.multiple and f.primitive for f in fields_all) else set()
    used |= {"read_described", "write_described"} if any(f.kind == "composite" for f in fields_all) else set()
    used |= {f"w_{p}" for d in plan.described for p in d.key_types}
    used |= {f"w_{p}" for d in plan.described for f in d.fields for p in f.key_types}
    used |= {"w_map_keys"} if any(f.keys for f in fields_all) or any(d.keys for d in out) else set()
    used |= {"write_provided", "read_provided"} if any(f.provided for f in fields_all) else set()
    used |= {"read_field", "_WRONG", "_too_deep", "_read", "write", "_Short", "descriptor_prefix", "read_list_head", "skip_items",
             "_READ", "_SHORT", "_unknown", "_LIST8",
             "w_composite", "write_list"}
    annotations = " ".join([f.annotation + f.param for f in fields_all] + [d.value_annotation for d in out])
    wrappers_used = sorted({w for w in WRAPPER.values() if w in annotations.replace("|", " ").replace("[", " ")
                            .replace("]", " ").split()} | {"Symbol", "Described"})
    return {
        "py10": {
            "composite_imports": sorted(used, key=lambda n: n.lstrip("_").lower()),
            "composite_wrappers": wrappers_used,
            "composite_uuid": "uuid.UUID" in annotations or any("uuid.UUID" in u for _, u, _, _ in archetypes),
            "composite_array": "Array" in annotations.replace("|", " ").replace("[", " ").replace("]", " ").split(),
            "behaviour": behaviour_plan(spec),  # the engine's facts (engine.py.j2)
            "enc": enc,
            "wide": wide,
            "ints": ints,
            "floats": floats,
            "decimals": decimals,
            "readers": readers,
            "inline_forms": inline_forms,
            "str8": str8,
            "by_code": by_code,
            "null": null,
            "array_codes": [r.code for r in readers if r.category == "array"],
            "primitives": sorted({r.primitive for r in readers if r.primitive != "array"}),
            "wrapper": WRAPPER,
            "wrappers": [(WRAPPER[p], p, WRAPPER_BASE[p]) for p in WRAPPER],
            "described": out,
            "composites": [d for d in out if d.kind == "composite"],
            "sections": [d for d in out if d.kind == "section"],
            "section_ranks": [(cls_of[s], wire.SECTION_ORDER.index("body" if s in plan.body_sections else s))
                              for s in plan.sections],
            "section_names": list(plan.sections),
            "body_sections": [cls_of[s] for s in plan.body_sections],
            "archetypes": archetypes,
            "choices": choices,
            "definitions": [(naming.constant(n), v) for n, v in plan.definitions],
            "error_kinds": [(naming.type(k, "error"), k, why) for k, why in ERROR_KINDS.items()],
            "cls_of": cls_of,
            "all": isort(["AMQPError", "Array", "DecodeError", "Described", "EncodeError", "Frame", "FrameReader",
                          "Message", "ProtocolHeader", "TYPES", "decode_frames", "decode_value", "encode_frame",
                          "encode_transfer", "encode_value", "read_value", "decode_described", *WRAPPER.values(), *cls_of.values(),
                          *(a for a, *_ in archetypes)]),
        },
    }

