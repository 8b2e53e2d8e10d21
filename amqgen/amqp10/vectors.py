"""The AMQP 1.0 conformance corpus (``amqgen vectors --spec 1-0``): values with their canonical octets and the
equivalent encodings a decoder must read the same, every composite, frames, messages, and malformed octets with
the kind of error a decoder must raise. Built on the reference codec (:mod:`amqgen.amqp10.refcodec`), which
reads every case back before it is written, so a label cannot drift from its octets. docs/vectors.md, "AMQP 1.0".
"""

from __future__ import annotations

import struct
from typing import Any

from ..corpus import FORMAT, VERSION, CaseBuilder, envelope
from ..errors import AmqgenError
from . import refcodec as ref
from . import wire
from .model import Composite, Restricted, Spec
from .plan import VALUE_RULES
from .refcodec import Array, Described, Typed

ERROR_KINDS: dict[str, str] = {
    "truncated": "the input ends before a constructor, a size, a count or the octets they announce",
    "size": "a list, map or array whose size and count disagree with its items, or a map with an odd count",
    "unknown-constructor": "a format code the type system does not define",
    "unknown-descriptor": "a described composite or section whose descriptor no type has",
    "mandatory-null": "a mandatory field of a composite that is null or absent",
    "wrong-type": "a value of the wrong type for its field or place (a boolean octet other than 0 or 1, a "
    "descriptor that is not a ulong or symbol, a composite that is not a list)",
    "invalid-utf8": "a string that is not UTF-8, a symbol that is not ASCII, a char that is not a scalar value",
    "trailing-data": "octets after the one value (or after a performative that carries no payload)",
    "doff": "a frame whose DOFF is under 2 or past its size",
    "frame-size": "a frame whose size is under 8, or over the max-frame-size in force",
    "frame-type": "a frame type other than 0 (AMQP) and 1 (SASL)",
    "protocol-header": "'AMQP' followed by something other than a 1.0 header (id 0, 2 or 3; version 1.0.0)",
    "section-order": "message sections out of order, repeated, or bodies of two kinds",
    "nesting-depth": f"values nested deeper than {ref.MAX_DEPTH}",
}
INPUTS = ("value", "composite", "frames", "message")
SECTIONS = ("values", "composites", "frames", "messages", "malformed")


# -- values as JSON ------------------------------------------------------------------------------------------
_HEX = {"binary", "uuid", "decimal32", "decimal64", "decimal128"}
_WIDE_INT = {"ulong", "long", "timestamp"}  # 64 bits: a JSON number would lose them


def _scalar_json(t: str, x: Any) -> Any:
    if t in _HEX:
        return bytes(x).hex()
    if t in _WIDE_INT:
        return str(x)
    if t == "float":
        return struct.pack(">f", x).hex()
    if t == "double":
        return struct.pack(">d", x).hex()
    return x


def _scalar_from(t: str, x: Any) -> Any:
    if t in _HEX:
        return bytes.fromhex(x)
    if t in _WIDE_INT:
        return int(x)
    if t == "float":
        return struct.unpack(">f", bytes.fromhex(x))[0]
    if t == "double":
        return struct.unpack(">d", bytes.fromhex(x))[0]
    return x


def value_json(v: ref.Value) -> dict[str, Any]:
    if isinstance(v, Described):
        return {"type": "described", "descriptor": value_json(v.descriptor), "value": value_json(v.value)}
    if isinstance(v, Array):
        out: dict[str, Any] = {"type": "array", "element": v.type,
                               "value": [_scalar_json(v.type, x) for x in v.items]}
        if v.descriptor is not None:
            out["descriptor"] = value_json(v.descriptor)
        return out
    if v.type == "list":
        return {"type": "list", "value": [value_json(i) for i in v.value]}
    if v.type == "map":
        return {"type": "map", "value": [[value_json(k), value_json(x)] for k, x in v.value]}
    return {"type": v.type, "value": _scalar_json(v.type, v.value)}


def value_from_json(j: dict[str, Any]) -> ref.Value:
    t = j["type"]
    if t == "described":
        d = value_from_json(j["descriptor"])
        assert isinstance(d, Typed)
        return Described(d, value_from_json(j["value"]))
    if t == "array":
        ad = value_from_json(j["descriptor"]) if "descriptor" in j else None
        assert ad is None or isinstance(ad, Typed)
        return Array(j["element"], tuple(_scalar_from(j["element"], x) for x in j["value"]), ad)
    if t == "list":
        return Typed("list", tuple(value_from_json(i) for i in j["value"]))
    if t == "map":
        return Typed("map", tuple((value_from_json(k), value_from_json(x)) for k, x in j["value"]))
    return Typed(t, _scalar_from(t, j["value"]))


# -- the cases -----------------------------------------------------------------------------------------------
#: every primitive at its edges; each goes through its canonical constructor, and its equivalents
EDGES: list[Typed] = [
    Typed("null", None), Typed("boolean", True), Typed("boolean", False),
    *[Typed("ubyte", x) for x in (0, 255)], *[Typed("ushort", x) for x in (0, 65535)],
    *[Typed("uint", x) for x in (0, 1, 255, 256, 2**32 - 1)], *[Typed("ulong", x) for x in (0, 1, 255, 256, 2**64 - 1)],
    *[Typed("byte", x) for x in (-128, 0, 127)], *[Typed("short", x) for x in (-(2**15), 2**15 - 1)],
    *[Typed("int", x) for x in (-(2**31), -129, -128, 0, 127, 128, 2**31 - 1)],
    *[Typed("long", x) for x in (-(2**63), -129, -128, 0, 127, 128, 2**63 - 1)],
    Typed("float", 1.5), Typed("float", float("inf")), Typed("double", -0.0), Typed("double", 1e308),
    Typed("decimal32", bytes.fromhex("22500001")), Typed("decimal64", bytes.fromhex("2238000000000001")),
    Typed("decimal128", bytes.fromhex("22080000000000000000000000000001")),
    Typed("char", "A"), Typed("char", "\u00e9"), Typed("char", "\U0001f407"),
    Typed("timestamp", 1311704463521), Typed("timestamp", -1),
    Typed("uuid", bytes.fromhex("f81d4fae7dec11d0a76500a0c91e6bf6")),
    *[Typed("binary", bytes(range(256)) * (n // 256) + bytes(range(n % 256))) for n in (0, 1, 255, 256)],
    *[Typed("string", "x" * n) for n in (0, 255, 256)], Typed("string", "zürich·東京·🐇"),
    *[Typed("symbol", "s" * n) for n in (0, 255, 256)], Typed("symbol", "amqp:accepted:list"),
]
#: containers: list0 / list8 / list32, map8 / map32, array8 / array32, described values
CONTAINERS: list[ref.Value] = [
    Typed("list", ()),
    Typed("list", (Typed("uint", 1), Typed("string", "a"), Typed("null", None), Typed("boolean", True))),
    Typed("list", tuple(Typed("ubyte", i % 256) for i in range(300))),
    Typed("map", ()),
    Typed("map", ((Typed("symbol", "k"), Typed("uint", 300)), (Typed("string", "s"), Typed("list", ())))),
    Typed("map", tuple((Typed("uint", i), Typed("binary", b"xyz")) for i in range(60))),
    Array("uint", ()), Array("uint", (0, 1, 255)), Array("uint", (1, 256)), Array("int", (-1, 2**31 - 1)),
    Array("symbol", ("a", "b")), Array("symbol", ("a", "b" * 256)), Array("boolean", (True, False, True)),
    Array("ubyte", tuple(range(256))),
    Array("ulong", (1, 2), Typed("ulong", 0x2B)),
    Described(Typed("ulong", 0x77), Typed("string", "an amqp-value")),
    Described(Typed("symbol", "com.example:thing"), Typed("list", (Typed("uint", 7),))),
    Described(Typed("ulong", 2**64 - 1), Typed("null", None)),
]


def _equivalents(v: ref.Value, canonical: bytes) -> list[bytes]:
    """Other legal encodings of the same value, each different from the canonical one."""
    out = []
    if isinstance(v, Typed) and v.type in ("uint", "ulong", "int", "long") and v.value is not None:
        small = {"uint": 0x52, "ulong": 0x53, "int": 0x54, "long": 0x55}[v.type]
        lo, hi = (0, 255) if v.type in ("uint", "ulong") else (-128, 127)
        if lo <= v.value <= hi and canonical[0] != small:
            out.append(bytes((small,)) + struct.pack(">B" if lo == 0 else ">b", v.value))
    wide = ref.encode(v, wide=True)
    if wide != canonical:
        out.append(wide)
    if isinstance(v, Typed) and v.type == "boolean":
        out = [b"\x56" + (b"\x01" if v.value else b"\x00")]
    return [e for i, e in enumerate(out) if e != canonical and e not in out[:i]]


def _sample(c: ref.Composites, spec: Spec, ftype: str, multiple: bool, requires: tuple[str, ...],
            depth: int = 0) -> ref.Value:
    """A value for a field: a choice, a described section, a nested composite (its mandatory fields), or a
    primitive's pattern; ``multiple`` fields get an array of two."""
    if ftype == "*":
        providers = spec.archetypes.get(requires[0], ())
        return _sample(c, spec, providers[0], False, (), depth) if providers else Typed("binary", b"txn-1")
    t = c.types[ftype]
    if isinstance(t, Composite):
        values = {f.name: _sample(c, spec, f.type, f.multiple, f.requires, depth + 1) for f in t.fields
                  if f.mandatory}
        return ref.decode(c.encode(t.name, values))
    if isinstance(t, Restricted):
        if t.descriptor is not None:
            inner = _sample(c, spec, t.source if t.source != "*" else "string", False, (), depth)
            return Described(Typed("ulong", t.descriptor.code), inner)
        if t.choices:
            x = t.choices[-1].value
            return Array(t.primitive, (x, t.choices[0].value)) if multiple else Typed(t.primitive, x)
        if VALUE_RULES.get(t.name, ("",))[0] == "described":  # a filter-set: a filter, as a selector (3.5.8)
            selector = Described(Typed("symbol", "apache.org:selector-filter:string"), Typed("string", "a = 1"))
            return Typed("map", ((Typed("symbol", "x-opt-k"), selector),))
        ftype = t.primitive
    if ftype == "map":
        return Typed("map", ((Typed("symbol", "x-opt-k"), Typed("string", "v")),))
    if ftype == "list":
        return Typed("list", (Typed("uint", 1),))
    pattern = {"boolean": True, "ubyte": 0xA5, "ushort": 0x1234, "uint": 0x89ABCDEF, "ulong": 0x0123456789ABCDEF,
               "byte": -91, "short": -4660, "int": -123456789, "long": -(2**40), "float": 1.5, "double": -2.25,
               "timestamp": 1700000000123, "uuid": bytes(range(16)), "binary": b"\x00\xffbin",
               "string": "zürich", "symbol": "amqp:sym", "char": "x", "decimal32": bytes(4),
               "decimal64": bytes(8), "decimal128": bytes(16)}[ftype]
    return Array(ftype, (pattern, pattern)) if multiple else Typed(ftype, pattern)


def _single(v: ref.Value) -> ref.Value:
    assert isinstance(v, Array)
    return Typed(v.type, v.items[0])


class Builder(CaseBuilder):
    def __init__(self, spec: Spec) -> None:
        super().__init__()
        self.spec = spec
        self.c = ref.Composites(spec)

    def values(self) -> list[dict[str, Any]]:
        out = []
        for v in [*EDGES, *CONTAINERS]:
            canonical = ref.encode(v)
            if ref.decode(canonical) != v and not (isinstance(v, Typed) and v.type in ("float", "double")):
                raise AssertionError(f"{v!r} does not read back")
            eq = _equivalents(v, canonical)
            for e in eq:
                if ref.decode(e) != ref.decode(canonical):
                    raise AssertionError(f"{e.hex()} is not equivalent to {canonical.hex()}")
            name = v.type if not isinstance(v, Described) else "described"
            out.append({"id": self._id(f"values/{name}/{canonical.hex()[:24]}/{len(canonical)}"),
                        "value": value_json(v), "bytes": canonical.hex(), "equivalent": [e.hex() for e in eq]})
        return out

    def composites(self) -> list[dict[str, Any]]:
        out = []
        for comp in self.spec.composites:
            sample = {f.name: _sample(self.c, self.spec, f.type, f.multiple, f.requires) for f in comp.fields}
            mandatory = {n: x for n, x in sample.items() if next(f for f in comp.fields if f.name == n).mandatory}
            sets = [("mandatory", mandatory), ("all", sample)]
            sets += [(f"each/{f.name}", {**mandatory, f.name: sample[f.name]}) for f in comp.fields if not f.mandatory]
            # a multiple field holding one value is written as that value, not an array of one (1.4, "multiple")
            sets += [(f"single/{f.name}", {**mandatory, f.name: _single(sample[f.name])}) for f in comp.fields
                     if f.multiple and isinstance(sample[f.name], Array)]
            for name, values in sets:
                canonical = self.c.encode(comp.name, values)
                eq = [self.c.encode(comp.name, values, symbolic=True), self.c.encode(comp.name, values, wide=True)]
                if len(values) < len(comp.fields):
                    eq.append(self.c.encode(comp.name, values, keep_nulls=True))
                for e in [canonical, *eq]:
                    if self.c.decode(e)[1] != {f.name: values.get(f.name) for f in comp.fields}:
                        raise AssertionError(f"{comp.name}/{name}: {e.hex()} does not read back")
                out.append({"id": self._id(f"{comp.name}/{name}"), "type": comp.name,
                            "fields": {f.name: value_json(values[f.name]) if f.name in values else None
                                       for f in comp.fields},
                            "bytes": canonical.hex(), "equivalent": [e.hex() for e in dict.fromkeys(eq)]})
        return out

    def frames(self) -> list[dict[str, Any]]:
        c = self.c
        open_ = c.encode("open", {"container-id": Typed("string", "amqgen"), "max-frame-size": Typed("uint", 4096)})
        begin = c.encode("begin", {"next-outgoing-id": Typed("uint", 0), "incoming-window": Typed("uint", 100),
                                   "outgoing-window": Typed("uint", 100)})
        transfer = c.encode("transfer", {"handle": Typed("uint", 0), "delivery-id": Typed("uint", 1),
                                         "delivery-tag": Typed("binary", b"\x00\x01")})
        payload = self.message_bytes()[0][1]
        mechs = c.encode("sasl-mechanisms", {"sasl-server-mechanisms": Array("symbol", ("PLAIN", "ANONYMOUS"))})
        cases = [
            ("headers", wire.AMQP_HEADER + wire.SASL_HEADER + wire.TLS_HEADER,
             [{"type": "protocol-header", "id": 0}, {"type": "protocol-header", "id": 3},
              {"type": "protocol-header", "id": 2}]),
            ("open", ref.encode_frame(0, 0, open_), [self._frame(0, 0, b"", open_)]),
            ("open-begin", wire.AMQP_HEADER + ref.encode_frame(0, 0, open_) + ref.encode_frame(0, 1, begin),
             [{"type": "protocol-header", "id": 0}, self._frame(0, 0, b"", open_), self._frame(0, 1, b"", begin)]),
            ("extended-header", ref.encode_frame(0, 5, begin, b"\x01\x02\x03\x04\x05\x06\x07\x08"),
             [self._frame(0, 5, b"\x01\x02\x03\x04\x05\x06\x07\x08", begin)]),
            ("heartbeat", ref.encode_frame(0, 0, b""), [self._frame(0, 0, b"", b"")]),
            ("transfer-with-payload", ref.encode_frame(0, 3, transfer + payload),
             [self._frame(0, 3, b"", transfer, payload)]),
            ("sasl-mechanisms", wire.SASL_HEADER + ref.encode_frame(1, 0, mechs),
             [{"type": "protocol-header", "id": 3}, self._frame(1, 0, b"", mechs)]),
        ]
        out = []
        for name, data, frames in cases:
            got = ref.read_frames(data)
            if len(got) != len(frames):
                raise AssertionError(f"frames/{name}: {len(got)} frames read")
            out.append({"id": self._id(f"frames/{name}"), "frames": frames, "bytes": data.hex()})
        return out

    def _frame(self, ftype: int, channel: int, extended: bytes, body: bytes, payload: bytes = b"") -> dict[str, Any]:
        f: dict[str, Any] = {"type": "amqp" if ftype == 0 else "sasl", "channel": channel,
                             "extended": extended.hex()}
        if body:
            comp, fields, _ = ref.split_body(self.c, body + payload)
            f["performative"] = comp.name
            f["fields"] = {k: value_json(x) if x is not None else None for k, x in fields.items()}
            f["payload"] = payload.hex()
        return f

    def message_bytes(self) -> list[tuple[str, bytes, list[tuple[str, ref.Value]]]]:
        spec = self.spec
        described: list[Composite | Restricted] = [*spec.composites, *spec.restricted]
        code = {t.name: t.descriptor.code for t in described if t.descriptor is not None}

        def d(name: str, v: ref.Value) -> ref.Value:
            return Described(Typed("ulong", code[name]), v)

        header = ref.decode(self.c.encode("header", {"durable": Typed("boolean", True), "priority": Typed("ubyte", 9)}))
        props = ref.decode(self.c.encode("properties", {"message-id": Typed("string", "m-1"),
                                                        "content-type": Typed("symbol", "text/plain")}))
        ann = Typed("map", ((Typed("symbol", "x-opt-a"), Typed("uint", 1)),))
        app = Typed("map", ((Typed("string", "k"), Typed("int", -1)),))
        full = [("header", header), ("delivery-annotations", d("delivery-annotations", ann)),
                ("message-annotations", d("message-annotations", ann)), ("properties", props),
                ("application-properties", d("application-properties", app)),
                ("data", d("data", Typed("binary", b"part one "))), ("data", d("data", Typed("binary", b"part two"))),
                ("footer", d("footer", ann))]
        value = [("properties", props), ("amqp-value", d("amqp-value", Typed("list", (Typed("uint", 1),))))]
        sequence = [("amqp-sequence", d("amqp-sequence", Typed("list", (Typed("string", "a"),)))),
                    ("amqp-sequence", d("amqp-sequence", Typed("list", ())))]
        out = []
        for name, sections in (("data-full", full), ("amqp-value", value), ("amqp-sequence", sequence)):
            data = b"".join(ref.encode(v) for _, v in sections)
            out.append((name, data, sections))
        return out

    def messages(self) -> list[dict[str, Any]]:
        out = []
        for name, data, sections in self.message_bytes():
            if [n for n, _ in ref.read_message(self.spec, data)] != [n for n, _ in sections]:
                raise AssertionError(f"messages/{name} does not read back")
            out.append({"id": self._id(f"messages/{name}"),
                        "sections": [{"section": n, "value": value_json(v)} for n, v in sections],
                        "bytes": data.hex()})
        return out

    def malformed(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        counter: dict[str, int] = {}
        c = self.c

        def add(kind: str, inp: str, data: bytes, why: str) -> None:
            self._check(kind, inp, data)
            counter[kind] = counter.get(kind, 0) + 1
            out.append({"id": self._id(f"malformed/{kind}/{counter[kind]}"), "kind": kind, "input": inp,
                        "bytes": data.hex(), "why": why})

        for v in (Typed("uint", 2**32 - 1), Typed("string", "abc"), Typed("list", (Typed("uint", 1),)),
                  Array("uint", (1, 256)), Typed("ulong", 2**64 - 1)):
            enc = ref.encode(v)
            add("truncated", "value", enc[:-1], f"{value_json(v)['type']} without its last octet")
        add("truncated", "value", b"", "no constructor at all")
        add("size", "value", b"\xc0\x02\x02\x40\x40", "a list8 of count 2 whose size holds one item")
        add("size", "value", b"\xc0\x04\x01\x40\x40\x40", "a list8 of count 1 whose size holds three")
        add("size", "value", b"\xc1\x03\x01\x40\x40"[:4] + b"\x40", "a map8 with an odd count")
        add("size", "value", b"\xe0\x04\x02\x70\x00\x00", "an array8 of two uints with octets for half of one")
        for code in (0x01, 0x0F, 0x46, 0x9F, 0xFF):
            add("unknown-constructor", "value", bytes((code,)), f"format code 0x{code:02x}")
        add("unknown-constructor", "value", b"\xe0\x03\x01\x0f\x00", "an array of elements of format code 0x0f")
        add("wrong-type", "value", b"\x56\x02", "a boolean octet of 2")
        add("size", "value", b"\xe0\x03\x05\x40\x40", "an array8 of five nulls (no octets) with an octet left over")
        add("size", "value", b"\xf0\x00\x00\x00\x05\x00\x10\x00\x01\x40",
            f"an array32 of {0x100001} nulls in 10 octets: over the decode's budget of {ref.EMPTY_PER_OCTET} "
            "elements of no octets per input octet")
        add("size", "value", b"\xe0\x07\x02\x70\x00\x00\x00\x01\x40",
            "an array8 of two uints whose size holds one and an octet")
        add("invalid-utf8", "value", b"\xa1\x02\xc3\x28", "a str8 that is not UTF-8")
        add("invalid-utf8", "value", b"\xa3\x01\xe9", "a sym8 that is not ASCII")
        add("invalid-utf8", "value", b"\x73\x00\x00\xd8\x00", "a char that is a UTF-16 surrogate")
        add("trailing-data", "value", b"\x43\x43", "two values where one is read")
        nested = b"\x45"
        for _ in range(ref.MAX_DEPTH + 1):
            nested = b"\xd0" + (len(nested) + 4).to_bytes(4, "big") + b"\x00\x00\x00\x01" + nested
        add("nesting-depth", "value", nested, f"lists nested {ref.MAX_DEPTH + 2} deep")
        open_ = c.encode("open", {"container-id": Typed("string", "c")})
        add("mandatory-null", "composite", b"\x00\x53\x10\xc0\x02\x01\x40", "open with a null container-id")
        add("mandatory-null", "composite", b"\x00\x53\x10\x45", "open with no fields at all")
        add("mandatory-null", "composite", b"\x00\x53\x11\xc0\x04\x03\x40\x43\x43",
            "begin with its outgoing-window (mandatory, the fourth field) absent")
        add("unknown-descriptor", "composite", b"\x00\x53\x99\x45", "descriptor 0x99, which no type has")
        add("unknown-descriptor", "composite", b"\x00\xa3\x0aamqp:nope!\x45", "a symbolic descriptor no type has")
        add("wrong-type", "composite", b"\x00\x53\x10\xc0\x02\x01\x43", "open whose container-id is a uint")
        add("wrong-type", "composite", b"\x00\x53\x10\xa1\x01x", "open whose value is not a list")
        add("trailing-data", "composite", open_ + b"\x40", "open followed by a null")
        frame_open = ref.encode_frame(0, 0, open_)
        add("truncated", "frames", frame_open[:-1], "an open frame one octet short")
        add("truncated", "frames", frame_open[:7], "seven octets of a frame header")
        add("frame-size", "frames", b"\x00\x00\x00\x07\x02\x00\x00\x00", "a frame size of 7")
        add("doff", "frames", b"\x00\x00\x00\x08\x01\x00\x00\x00", "DOFF 1")
        add("doff", "frames", b"\x00\x00\x00\x0c\x04\x00\x00\x00\x00\x00\x00\x00", "DOFF 4 in a frame of 12 octets")
        add("frame-type", "frames", b"\x00\x00\x00\x08\x02\x02\x00\x00", "frame type 2")
        add("protocol-header", "frames", b"AMQP\x01\x01\x00\x00", "protocol id 1")
        add("protocol-header", "frames", b"AMQP\x00\x00\x09\x01", "an AMQP 0-9-1 header")
        add("trailing-data", "frames", ref.encode_frame(0, 0, open_ + b"\x40"), "an open frame with a payload")
        add("protocol-header", "frames", wire.AMQP_HEADER + frame_open + wire.AMQP_HEADER,
            "a protocol header after an open frame (a header opens the stream or follows sasl-outcome)")
        sections = [ref.encode(v) for _, v in self.message_bytes()[0][2]]
        add("section-order", "message", sections[3] + sections[0], "properties before header")
        add("section-order", "message", sections[0] + sections[0], "two headers")
        value_body = ref.encode(self.message_bytes()[1][2][1][1])
        add("section-order", "message", sections[5] + value_body, "a data body, then an amqp-value body")
        add("section-order", "message", value_body + value_body, "two amqp-value bodies")
        add("unknown-descriptor", "message", b"\x00\x53\x79\x45", "a section with descriptor 0x79")
        return out

    def _check(self, kind: str, inp: str, data: bytes) -> None:
        try:
            if inp == "value":
                ref.decode(data)
            elif inp == "composite":
                self.c.decode(data)
            elif inp == "frames":
                for f in ref.read_frames(data):
                    if isinstance(f, ref.Frame) and f.body:
                        ref.split_body(self.c, f.body)
            else:
                ref.read_message(self.spec, data)
        except ref.RefError as e:
            if e.kind != kind:
                raise AssertionError(f"malformed case labelled {kind} reads as {e.kind}: {e} ({data.hex()})") from None
            return
        raise AssertionError(f"malformed case labelled {kind} reads without error: {data.hex()}")


def corpus(spec: Spec) -> dict[str, Any]:
    b = Builder(spec)
    try:
        return {
            **envelope(spec, {"name": spec.name, "family": spec.family, "sha256": spec.sha256}),
            "limits": {"max_depth": ref.MAX_DEPTH, "empty_per_octet": ref.EMPTY_PER_OCTET,
                       "list0_cost": ref.LIST0_COST},
            "error_kinds": ERROR_KINDS,
            "values": b.values(),
            "composites": b.composites(),
            "frames": b.frames(),
            "messages": b.messages(),
            "malformed": b.malformed(),
        }
    except (AssertionError, ValueError, KeyError) as e:  # a bug in amqgen, not the user's input
        raise AmqgenError(f"cannot build the 1.0 corpus: {type(e).__name__}: {e}") from e


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the 1.0 corpus document."""
    hexs = {"type": "string", "pattern": "^([0-9a-f]{2})*$"}
    case_id = {"type": "string", "minLength": 1}
    value = {"$ref": "#/$defs/value"}
    fields = {"type": "object", "additionalProperties": {"anyOf": [value, {"type": "null"}]}}

    def obj(props: dict[str, Any], optional: tuple[str, ...] = ()) -> dict[str, Any]:
        return {"type": "object", "required": [k for k in props if k not in optional], "additionalProperties": False,
                "properties": props}

    frame = {"oneOf": [
        obj({"type": {"const": "protocol-header"}, "id": {"enum": [0, 2, 3]}}),
        obj({"type": {"enum": ["amqp", "sasl"]}, "channel": {"type": "integer", "minimum": 0, "maximum": 65535},
             "extended": hexs, "performative": {"type": "string"}, "fields": fields, "payload": hexs},
            optional=("performative", "fields", "payload")),
    ]}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://amqgen.invalid/schemas/amqgen-vectors-1.0-1.json",
        "title": "amqgen conformance corpus of AMQP 1.0 (amqgen vectors --spec 1-0), version 1",
        **obj({
            "format": {"const": FORMAT}, "version": {"const": VERSION}, "generator": {"type": "string"},
            "notice": {"type": "string"},
            "spec": obj({"name": {"type": "string"}, "family": {"const": "1-0"},
                         "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"}}),
            "limits": obj({"max_depth": {"type": "integer", "minimum": 1},
                           "empty_per_octet": {"type": "integer", "minimum": 1},
                           "list0_cost": {"type": "integer", "minimum": 1}}),
            "error_kinds": {"type": "object", "propertyNames": {"enum": list(ERROR_KINDS)},
                            "additionalProperties": {"type": "string"}},
            "values": {"type": "array", "items": obj({"id": case_id, "value": value, "bytes": hexs,
                                                      "equivalent": {"type": "array", "items": hexs}})},
            "composites": {"type": "array", "items": obj({"id": case_id, "type": {"type": "string"}, "fields": fields,
                                                          "bytes": hexs,
                                                          "equivalent": {"type": "array", "items": hexs}})},
            "frames": {"type": "array", "items": obj({"id": case_id, "frames": {"type": "array", "items": frame},
                                                      "bytes": hexs})},
            "messages": {"type": "array", "items": obj({
                "id": case_id, "bytes": hexs,
                "sections": {"type": "array", "items": obj({"section": {"type": "string"}, "value": value})}})},
            "malformed": {"type": "array", "items": obj({"id": case_id, "kind": {"enum": list(ERROR_KINDS)},
                                                         "input": {"enum": list(INPUTS)}, "bytes": hexs,
                                                         "why": {"type": "string"}})},
        }),
        "$defs": {
            "value": {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}},
                      "oneOf": [
                          obj({"type": {"const": "described"}, "descriptor": value, "value": value}),
                          obj({"type": {"const": "array"}, "element": {"type": "string"}, "descriptor": value,
                               "value": {"type": "array"}}, optional=("descriptor",)),
                          obj({"type": {"const": "list"}, "value": {"type": "array", "items": value}}),
                          obj({"type": {"const": "map"}, "value": {"type": "array", "items": {
                              "type": "array", "prefixItems": [value, value], "minItems": 2, "maxItems": 2}}}),
                          obj({"type": {"not": {"enum": ["described", "array", "list", "map"]}},
                               "value": {"type": ["boolean", "integer", "string", "null"]}}),
                      ]},
        },
    }
