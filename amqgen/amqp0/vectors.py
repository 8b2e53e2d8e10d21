"""The conformance corpus: one language-neutral set of wire cases per spec and table dialect.

:func:`corpus` builds the document ``amqgen vectors`` writes (format in ``docs/vectors.md``):
values chosen from the model (defaults, extremes, every bit alone, every property alone, every
type code with its edge values, messages split at a frame_max) with the octets the reference codec
(:mod:`amqgen.refcodec`) encodes them to, and malformed octets, each with one defect, labelled with
the kind of error a decoder must raise. Every malformed case is checked against the reference
decoder before it is written, so the labels cannot drift from the octets.
"""

from __future__ import annotations

import struct
from typing import Any

from ..corpus import FORMAT, VERSION, CaseBuilder, envelope
from ..errors import AmqgenError, UsageError
from . import refcodec as ref
from .model import Class, Field, Method, Spec

DIALECTS = ("rabbitmq", "qpid")

ERROR_KINDS: dict[str, str] = {
    "truncated": "the input ends before a value it must hold: a fixed-size field, a length prefix, or the octets "
    "a length prefix announces (including a table's or a frame payload's)",
    "trailing-data": "octets left after the last argument of a method or the last property",
    "frame-end": "a frame whose octet after the payload is not the frame-end (206)",
    "frame-size": "a frame larger than the frame_max in force",
    "frame-type": "a frame type octet that is not method, header, body or heartbeat (nor the start of a protocol "
    "header)",
    "unknown-class": "a class id the spec does not define (method frames), or that carries no content (header "
    "frames)",
    "unknown-method": "a method id its class does not define",
    "invalid-utf8": "a short string (argument, property or table key) that is not UTF-8",
    "property-flags": "a flag bit for a property the class does not have, or a continuation into a flag word the "
    "class does not have",
    "table": "a table or array that is inconsistent inside its own length: an unknown type code, an entry running "
    "past the table's end, a key length past the end",
    "table-depth": f"tables and arrays nested deeper than {ref.MAX_DEPTH}",
}
INPUTS = ("method", "properties", "frame", "table")

INT_MAX = {"octet": 0xFF, "short": 0xFFFF, "long": 0xFFFF_FFFF, "longlong": 2**64 - 1, "timestamp": 2**64 - 1}
# distinct octets per width, so a byte-order slip shows
INT_PATTERN = {"octet": 0xA5, "short": 0x1234, "long": 0x89AB_CDEF, "longlong": 0x0123_4567_89AB_CDEF,
               "timestamp": 1_700_000_000}
RICH = "zürich·東京·🐇·"  # 2-, 3- and 4-octet UTF-8 sequences
LONGSTR_MAX = b"\x00" + bytes(range(256)) + b"\xc3\x28\xed\xa0\x80\xf8\x88\x80\x80\x80\x00"  # NUL, non-UTF-8

F32 = {"zero": 0x0000_0000, "negative-zero": 0x8000_0000, "one-and-a-half": 0x3FC0_0000, "infinity": 0x7F80_0000,
       "negative-infinity": 0xFF80_0000, "nan": 0x7FC0_0000, "negative-nan": 0xFFC0_0000,
       "smallest-subnormal": 0x0000_0001, "largest": 0x7F7F_FFFF}
F64 = {"zero": 0, "negative-zero": 0x8000_0000_0000_0000, "one-and-a-half": 0x3FF8_0000_0000_0000,
       "infinity": 0x7FF0_0000_0000_0000, "negative-infinity": 0xFFF0_0000_0000_0000, "nan": 0x7FF8_0000_0000_0000,
       "negative-nan": 0xFFF8_0000_0000_0000, "smallest-subnormal": 1, "largest": 0x7FEF_FFFF_FFFF_FFFF}


def utf8_text(nbytes: int) -> str:
    """Exactly ``nbytes`` octets of UTF-8 with multi-octet characters, cut on a character boundary."""
    text = ""
    for ch in (RICH * (nbytes // 4 + 1)):
        if len((text + ch).encode()) > nbytes:
            break
        text += ch
    return text + "x" * (nbytes - len(text.encode()))


def _int_edges(code: str, dialect: str) -> dict[str, int]:
    size, signed = ref.int_codes(dialect)[code]
    bits = 8 * size
    if signed:
        return {"min": -(2 ** (bits - 1)), "max": 2 ** (bits - 1) - 1, "minus-one": -1}
    return {"min": 0, "max": 2**bits - 1}


def type_codes(dialect: str) -> dict[str, dict[str, Any]]:
    """What each type code of the dialect is (the document's ``type_codes``)."""
    out: dict[str, dict[str, Any]] = {}
    ints = ref.int_codes(dialect)
    for code in "tbBsuUIilLfdDSxTFAV":
        if code in ints:
            out[code] = {"kind": "int", "size": ints[code][0], "signed": ints[code][1]}
        elif code == "s":
            out[code] = {"kind": "shortstr"}
        else:
            out[code] = dict(OTHER_CODES[code])
    return out


OTHER_CODES: dict[str, dict[str, Any]] = {
    "t": {"kind": "bool"}, "f": {"kind": "float", "size": 4}, "d": {"kind": "float", "size": 8},
    "D": {"kind": "decimal"}, "S": {"kind": "longstr"}, "x": {"kind": "bytes"}, "T": {"kind": "timestamp"},
    "F": {"kind": "table"}, "A": {"kind": "array"}, "V": {"kind": "void"},
}


def every_code_table(dialect: str) -> ref.Table:
    """One entry per type code of the dialect, nested tables and arrays included. Floats are whole
    numbers (65536.0, 2**53) and the timestamp fits 32 bits, so peers that mishandle the
    extremes still read this one table right; the table cases carry the extremes."""
    ints = ref.int_codes(dialect)
    table: ref.Table = [("bool", ("t", True))]
    for code in "bBsuUIilL":
        if code in ints:
            edge = _int_edges(code, dialect)
            table.append((f"int-{code}", (code, edge["min"] if ints[code][1] else edge["max"])))
        elif code == "s":
            table.append(("shortstr-s", ("s", RICH.encode())))
    table += [
        ("float-f", ("f", 0x4780_0000)),
        ("double-d", ("d", 0x4340_0000_0000_0000)),
        ("decimal", ("D", (2, -12345))),
        ("longstr", ("S", (RICH * 3).encode())),
        ("bytes", ("x", b"\x00\xff\x80 binary")),
        ("timestamp", ("T", 1_700_000_000)),
        ("table", ("F", [("deep", ("F", [("deeper", ("F", [("x", ("S", b"y"))]))])), ("empty", ("F", []))])),
        ("array", ("A", [("S", b"one"), ("t", False), ("A", [("I", 7), ("A", [])]), ("F", [("in", ("V", None))])])),
        ("void", ("V", None)),
    ]
    return table


# -- JSON forms of values -----------------------------------------------------------------------------
def field_json(wire: str, value: Any, dialect: str) -> Any:
    if wire == "bit":
        return bool(value)
    if wire in ("longlong", "timestamp"):
        return str(value)
    if wire in ("octet", "short", "long", "shortstr"):
        return value
    if wire == "longstr":
        return bytes(value).hex()
    if wire == "table":
        return table_json(value, dialect)
    raise ValueError(wire)


def table_json(table: ref.Table, dialect: str) -> list[Any]:
    return [[key, typed_json(tv, dialect)] for key, tv in table]


def typed_json(tv: ref.Typed, dialect: str) -> dict[str, Any]:
    code, value = tv
    ints = ref.int_codes(dialect)
    out: Any
    if code in ints:
        out = str(value) if ints[code][0] == 8 else value
    elif code == "t":
        out = bool(value)
    elif code == "f":
        out = f"{value:08x}"
    elif code == "d":
        out = f"{value:016x}"
    elif code == "D":
        out = {"scale": value[0], "unscaled": value[1]}
    elif code in ("S", "x", "s"):
        out = bytes(value).hex()
    elif code == "T":
        out = str(value)
    elif code == "F":
        out = table_json(value, dialect)
    elif code == "A":
        out = [typed_json(item, dialect) for item in value]
    elif code == "V":
        out = None
    else:
        raise ValueError(code)
    return {"type": code, "value": out}


def typed_from_json(tv: dict[str, Any], dialect: str) -> ref.Typed:
    """The inverse of typed_json: a typed value of a corpus document as the reference codec takes it."""
    code, v = tv["type"], tv["value"]
    if code in ref.int_codes(dialect) or code == "T":
        return code, int(v)
    if code in ("f", "d"):
        return code, int(v, 16)
    if code == "D":
        return code, (v["scale"], int(v["unscaled"]))
    if code in ("S", "x", "s"):
        return code, bytes.fromhex(v)
    if code == "F":
        return code, table_from_json(v, dialect)
    if code == "A":
        return code, [typed_from_json(item, dialect) for item in v]
    if code in ("t", "V"):
        return code, v
    raise ValueError(code)


def table_from_json(entries: list[Any], dialect: str) -> ref.Table:
    """The inverse of table_json."""
    return [(key, typed_from_json(tv, dialect)) for key, tv in entries]


def values_json(fields: tuple[Field, ...], values: dict[str, Any], dialect: str) -> dict[str, Any]:
    return {f.name: field_json(f.type, values[f.name], dialect) for f in fields if f.name in values}


# -- value sets ----------------------------------------------------------------------------------------
def _default(wire: str) -> Any:
    return {"bit": False, "shortstr": "", "longstr": b"", "table": []}.get(wire, 0)


def _max(wire: str, dialect: str) -> Any:
    return {"bit": True, "shortstr": utf8_text(255), "longstr": LONGSTR_MAX,
            "table": every_code_table(dialect)}.get(wire, INT_MAX.get(wire))


def _pattern(wire: str, i: int) -> Any:
    if wire == "bit":
        return i % 2 == 0
    if wire == "shortstr":
        return f"name-{i}.x:y_z"
    if wire == "longstr":
        return b"long\x00string"
    if wire == "table":
        return [("x-match", ("S", b"all")), ("x-count", ("I", -2)), ("nested", ("F", [("a", ("A", [("t", True)]))]))]
    return INT_PATTERN[wire]


def method_value_sets(m: Method, dialect: str) -> list[tuple[str, dict[str, Any]]]:
    fs = m.fields
    sets = [
        ("defaults", {f.name: _default(f.type) for f in fs}),
        ("max", {f.name: _max(f.type, dialect) for f in fs}),
        ("pattern", {f.name: _pattern(f.type, i) for i, f in enumerate(fs)}),
    ]
    bits = [f for f in fs if f.type == "bit"]
    for b in bits:
        sets.append((f"bit/{b.name}", {f.name: (f is b) if f.type == "bit" else _default(f.type) for f in fs}))
        sets.append((f"not/{b.name}", {f.name: (f is not b) if f.type == "bit" else _default(f.type) for f in fs}))
    return sets


def _property_value(p: Field, dialect: str) -> Any:
    if p.type == "table":  # the codes pika and pamqp both read, every one of them
        return [e for e in every_code_table(dialect) if e[1][0] != "U"]
    if p.type == "shortstr":
        return utf8_text(255)
    return _max(p.type, dialect)


def properties_value_sets(c: Class, dialect: str) -> list[tuple[str, int, dict[str, Any]]]:
    """(case name, body size, present properties)."""
    every = {p.name: _property_value(p, dialect) for p in c.properties}
    sets = [("none", 0, {}), ("all", 2**64 - 1, every)]
    sets += [(f"each/{p.name}", 1024, {p.name: every[p.name]}) for p in c.properties]
    return sets


# -- the corpus ------------------------------------------------------------------------------------------
def _hex(b: bytes) -> str:
    return bytes(b).hex()


class Builder(CaseBuilder):
    def __init__(self, spec: Spec, dialect: str) -> None:
        super().__init__()
        if dialect not in DIALECTS:
            raise UsageError(f"--dialect must be one of {', '.join(DIALECTS)}, not {dialect!r}")
        self.spec = spec
        self.dialect = dialect

    # -- valid cases
    def methods(self) -> list[dict[str, Any]]:
        out = []
        for m in self.spec.methods:
            seen: set[bytes] = set()
            for name, values in method_value_sets(m, self.dialect):
                data = ref.encode_method(m, values, self.dialect)
                if data in seen and name.startswith("not/"):  # not/X of a lone bit is the defaults
                    continue
                seen.add(data)
                out.append({"id": self._id(f"{m.full_name}/{name}"), "method": m.full_name, "class_id": m.class_index,
                            "method_id": m.index, "values": values_json(m.fields, values, self.dialect),
                            "bytes": _hex(data)})
        return out

    def properties(self) -> list[dict[str, Any]]:
        out = []
        for c in self.spec.content_classes:
            for name, body_size, values in properties_value_sets(c, self.dialect):
                data = ref.encode_header(c, body_size, values, self.dialect)
                out.append({"id": self._id(f"{c.name}/{name}"), "class": c.name, "class_id": c.index,
                            "body_size": str(body_size), "values": values_json(c.properties, values, self.dialect),
                            "bytes": _hex(data)})
        return out

    def accepted(self) -> list[dict[str, Any]]:
        """Inputs a decoder accepts although they are not the canonical encoding of what they carry: bit octets
        with their unused bits set. The spec packs bits "from the low bit" and says nothing of the rest;
        RabbitMQ, pika, librabbitmq and the Java client read the bits they know and ignore the others, so a
        decoder accepts them, and re-encoding gives ``canonical`` (the unused bits zero). docs/vectors.md."""
        out = []
        for m in self.spec.methods:
            bits = [f for f in m.fields if f.type == "bit"]
            if not bits:
                continue
            pattern = method_value_sets(m, self.dialect)[2][1]
            for name, on in (("unused-bits/bits-off", False), ("unused-bits/bits-on", True)):
                values = {**pattern, **{f.name: on for f in bits}}
                canonical = ref.encode_method(m, values, self.dialect)
                # the bit octets are where the encodings with every bit off and every bit on differ; the
                # reference codec finds them, so no plan is consulted
                off = ref.encode_method(m, {**values, **{f.name: False for f in bits}}, self.dialect)
                full = ref.encode_method(m, {**values, **{f.name: True for f in bits}}, self.dialect)
                data = bytearray(canonical)
                for i, (a, b) in enumerate(zip(off, full, strict=True)):
                    if a != b:
                        data[i] |= ~(a ^ b) & 0xFF
                if bytes(data) == canonical:  # every bit octet is full
                    continue
                got_m, got = ref.decode_method(self.spec, bytes(data), self.dialect)
                if got_m is not m or ref.encode_method(m, got, self.dialect) != canonical:
                    raise AssertionError(f"{m.full_name}: unused bits set do not decode to the same values")
                out.append({"id": self._id(f"accepted/{m.full_name}/{name}"), "input": "method",
                            "method": m.full_name, "class_id": m.class_index, "method_id": m.index,
                            "values": values_json(m.fields, values, self.dialect), "bytes": _hex(bytes(data)),
                            "canonical": _hex(canonical),
                            "why": f"every unused bit of {m.full_name}'s bit octets set, its bits "
                                   f"{'set' if on else 'clear'}"})
        return out

    def _content_methods(self) -> list[Method]:
        return [m for m in self.spec.methods if m.content and self.spec.class_by_name[m.class_name].has_content]

    def frames(self) -> list[dict[str, Any]]:
        spec, d = self.spec, self.dialect
        out: list[dict[str, Any]] = []

        def add(name: str, frame_max: int, frames: list[dict[str, Any]], data: bytes, **extra: Any) -> None:
            out.append({"id": self._id(f"frames/{name}"), "frame_max": frame_max, "frames": frames,
                        "bytes": _hex(data), **extra})

        add("protocol-header", 0, [{"type": "protocol-header"}], spec.protocol_header)
        add("heartbeat", 0, [{"type": "heartbeat", "channel": 0}], ref.encode_frame(8, 0, b""))
        first = spec.methods[0]
        for channel in (0, 1, 65535):
            values = dict(method_value_sets(first, d)[2][1])
            add(f"method/{first.full_name}/channel-{channel}", 0,
                [{"type": "method", "channel": channel, "method": first.full_name,
                  "values": values_json(first.fields, values, d)}],
                ref.encode_frame(1, channel, ref.encode_method(first, values, d)))
        add("body/empty", 0, [{"type": "body", "channel": 1, "payload": ""}], ref.encode_frame(3, 1, b""))
        body = bytes(range(256)) * 2
        add("body/binary", 0, [{"type": "body", "channel": 7, "payload": _hex(body)}], ref.encode_frame(3, 7, body))
        for c in spec.content_classes:
            props = properties_value_sets(c, d)[1][2]
            add(f"header/{c.name}", 0,
                [{"type": "header", "channel": 3, "class": c.name, "class_id": c.index, "body_size": "300",
                  "values": values_json(c.properties, props, d)}],
                ref.encode_frame(2, 3, ref.encode_header(c, 300, props, d)))
        # whole messages: every content method with a small body; the first one split at frame_max
        contents = self._content_methods()
        for m in contents:
            self._message(add, m, b"hello", 0, f"message/{m.full_name}")
        if contents:
            m = contents[0]
            fmin = spec.constant_by_name["frame-min-size"].value if "frame-min-size" in spec.constant_by_name else 4096
            chunk = fmin - 8
            for label, size in (("empty", 0), ("one-frame", chunk), ("exact-two", 2 * chunk), ("split", 2 * chunk + 77)):
                body = bytes((i * 7 + 3) % 256 for i in range(size))
                self._message(add, m, body, fmin, f"message/{m.full_name}/{label}-at-{fmin}")
            self._message(add, m, bytes(range(256)) * 40, 0, f"message/{m.full_name}/unsplit")
        return out

    def _message(self, add: Any, m: Method, body: bytes, frame_max: int, name: str) -> None:
        d = self.dialect
        c = self.spec.class_by_name[m.class_name]
        values = dict(method_value_sets(m, d)[2][1])
        # a content type and, where the class has one, an octet property (basic's delivery-mode)
        props: dict[str, Any] = {}
        for p in c.properties:
            if p.type == "shortstr" and not any(isinstance(v, str) for v in props.values()):
                props[p.name] = "application/json; charset=utf-8"
            elif p.type == "octet" and not any(isinstance(v, int) for v in props.values()):
                props[p.name] = 2
        channel = 5
        data = ref.encode_message(m, values, c, props, body, channel, frame_max, d)
        frames: list[dict[str, Any]] = [
            {"type": "method", "channel": channel, "method": m.full_name, "values": values_json(m.fields, values, d)},
            {"type": "header", "channel": channel, "class": c.name, "class_id": c.index, "body_size": str(len(body)),
             "values": values_json(c.properties, props, d)},
        ]
        chunk = frame_max - 8 if frame_max else max(len(body), 1)
        frames += [{"type": "body", "channel": channel, "payload": _hex(body[i : i + chunk])}
                   for i in range(0, len(body), chunk)]
        message = {"channel": channel, "method": m.full_name, "values": values_json(m.fields, values, d),
                   "properties": values_json(c.properties, props, d), "body": _hex(body)}
        add(name, frame_max, frames, data, message=message)

    def tables(self) -> list[dict[str, Any]]:
        d = self.dialect
        out: list[dict[str, Any]] = []

        def add(name: str, kind: str, value: Any) -> None:
            if kind == "table":
                data = ref.encode_table(value, d)
                jv = table_json(value, d)
            else:
                data = ref.encode_array(value, d)
                jv = [typed_json(tv, d) for tv in value]
            out.append({"id": self._id(f"tables/{name}"), "kind": kind, "value": jv, "bytes": _hex(data)})

        ints = ref.int_codes(d)
        for code in "tbBsuUIilLfdDSxTFAV":
            edges: dict[str, Any]
            if code in ints:
                edges = _int_edges(code, d)
            elif code == "t":
                edges = {"true": True, "false": False}
            elif code == "s":  # qpid short string
                edges = {"empty": b"", "max": utf8_text(255).encode()}
            elif code == "f":
                edges = F32
            elif code == "d":
                edges = F64
            elif code == "D":
                edges = {"scale-0-min": (0, -(2**31)), "scale-0-max": (0, 2**31 - 1), "scale-0-zero": (0, 0),
                         "scale-2": (2, -12345), "scale-255-one": (255, 1), "scale-255-min": (255, -(2**31))}
            elif code == "S":
                edges = {"empty": b"", "utf8": RICH.encode(), "binary": LONGSTR_MAX}
            elif code == "x":
                edges = {"empty": b"", "binary": LONGSTR_MAX}
            elif code == "T":
                edges = {"zero": 0, "max": 2**64 - 1, "2023": 1_700_000_000}
            elif code == "F":
                edges = {"empty": [], "nested": [("a", ("F", [("b", ("F", [("c", ("t", True))]))]))]}
            elif code == "A":
                edges = {"empty": [], "mixed": [("I", 1), ("S", b"two"), ("V", None), ("A", [("t", False)])]}
            else:
                edges = {"null": None}
            for label, value in edges.items():
                add(f"{code}/{label}", "table", [(f"k-{code}", (code, value))])
                add(f"array/{code}/{label}", "array", [(code, value)])
        add("empty", "table", [])
        add("every-code", "table", every_code_table(d))
        add("array/every-code", "array", [tv for _, tv in every_code_table(d)])
        add("key/max", "table", [(utf8_text(255), ("V", None))])
        add("key/empty", "table", [("", ("t", True))])
        add(f"depth/{ref.MAX_DEPTH}-tables", "table", _nest_tables(ref.MAX_DEPTH))
        add(f"depth/{ref.MAX_DEPTH}-arrays", "array", _nest_arrays(ref.MAX_DEPTH))
        return out

    # -- malformed cases
    def malformed(self) -> list[dict[str, Any]]:
        spec, d = self.spec, self.dialect
        out: list[dict[str, Any]] = []
        counter: dict[str, int] = {}

        def add(kind: str, inp: str, data: bytes, why: str, frame_max: int = 0, tag: str = "") -> None:
            self._check(kind, inp, data, frame_max)
            key = f"{kind}/{tag}" if tag else kind
            counter[key] = counter.get(key, 0) + 1
            case: dict[str, Any] = {"id": self._id(f"malformed/{key}/{counter[key]}"), "kind": kind, "input": inp,
                                    "bytes": _hex(data), "why": why}
            if inp == "frame":
                case["frame_max"] = frame_max
            out.append(case)

        u16 = struct.Struct(">H").pack
        # -- methods: each with arguments, its pattern payload cut by one octet and grown by one
        for m in spec.methods:
            values = method_value_sets(m, d)[2][1]
            data = ref.encode_method(m, values, d)
            if m.fields:
                add("truncated", "method", data[:-1], f"{m.full_name} without its last octet", tag=m.full_name)
            add("trailing-data", "method", data + b"\x00", f"{m.full_name} with one octet too many", tag=m.full_name)
            strs = [f for f in m.fields if f.type == "shortstr"]
            if strs:
                bad = dict(values)
                for raw, what in ((b"\xc3\x28", "a 2-octet sequence with a bad continuation octet"),
                                  (b"\xc0\x80", "an overlong encoding of NUL"),
                                  (b"\xed\xa0\x80", "a UTF-16 surrogate"), (b"\xff", "the octet 0xff")):
                    add("invalid-utf8", "method", _with_raw_shortstr(m, bad, strs[0], raw, d),
                        f"{strs[0].path} holds {what}", tag=m.full_name)
            tables = [f for f in m.fields if f.type == "table"]
            if tables:
                t = tables[0]
                add("truncated", "method", _with_raw_table(m, values, t, b"\x00\x01\x00\x00" + b"\x01a\x56", d),
                    f"{t.path} announces 65536 octets, fewer follow", tag=m.full_name)
                add("table", "method", _with_raw_table(m, values, t, b"\x00\x00\x00\x03\x01aZ", d),
                    f"{t.path} holds an entry of unknown type code 'Z'", tag=m.full_name)
                add("invalid-utf8", "method", _with_raw_table(m, values, t, b"\x00\x00\x00\x04\x02\xc3\x28V", d),
                    f"{t.path} has a key that is not UTF-8", tag=m.full_name)
                # two defects: the one met first in wire order is the kind (docs/vectors.md, "Which kind")
                add("invalid-utf8", "method", _with_raw_table(m, values, t, b"\x00\x00\x00\x02\x01\xff", d),
                    f"{t.path}: a key that is not UTF-8, then no type code in the table", tag=m.full_name)
                add("table", "method", _with_raw_table(m, values, t, b"\x00\x00\x00\x03\x05\xff\xfe", d),
                    f"{t.path}: a key running past the table, whose octets are not UTF-8 either", tag=m.full_name)
        first = spec.methods[0]
        add("truncated", "method", u16(first.class_index) + b"\x00", "a payload of 3 octets: no method id")
        add("truncated", "method", b"", "an empty payload")
        known_classes = {c.index for c in spec.classes}
        for cid in (0, max(known_classes) + 1, 0xFFFF):
            if cid not in known_classes:
                add("unknown-class", "method", u16(cid) + u16(10) + b"\x00" * 8, f"class id {cid}")
        for c in spec.classes:
            unknown = next(i for i in (0, 0xFFFF, 999, 998) if i not in c.method_by_index)
            add("unknown-method", "method", u16(c.index) + u16(unknown) + b"\x00" * 8,
                f"{c.name} has no method {unknown}", tag=c.name)

        # -- content headers
        for c in spec.content_classes:
            every = properties_value_sets(c, d)[1][2]
            full = ref.encode_header(c, 10, every, d)
            none = ref.encode_header(c, 10, {}, d)
            add("truncated", "properties", none[:11], "11 octets: no room for the body size", tag=c.name)
            add("truncated", "properties", none[:12], "no property flags", tag=c.name)
            if c.properties and any(p.type != "bit" for p in c.properties):
                add("truncated", "properties", full[:-1], f"all {c.name} properties without the last octet", tag=c.name)
            add("trailing-data", "properties", none + b"\x00", "one octet after the (empty) properties", tag=c.name)
            nwords = max(1, (len(c.properties) + 14) // 15)
            used = {ref.flag_position(i) for i in range(len(c.properties))}
            free = [(w, b) for w in range(nwords) for b in range(15, 0, -1) if (w, b) not in used]
            if free:
                w, b = free[0]
                words = [0] * nwords
                words[w] = 1 << b
                flags = b"".join(u16(x | (1 if i < w else 0)) for i, x in enumerate(words[: w + 1]))
                add("property-flags", "properties", none[:12] + flags,
                    f"flag word {w} bit {b}: {c.name} has no such property", tag=c.name)
            add("property-flags", "properties", none[:12] + b"\x00\x01" * nwords + b"\x00\x00",
                f"a continuation past {c.name}'s {nwords} flag word(s)", tag=c.name)
            texts = [(pos, prop) for pos, prop in enumerate(c.properties) if prop.type == "shortstr"]
            if texts:
                pos, prop = texts[0]
                tw, tb = ref.flag_position(pos)
                tflags = b"".join(u16((1 << tb if k == tw else 0) | (1 if k < tw else 0)) for k in range(tw + 1))
                add("invalid-utf8", "properties", none[:12] + tflags + b"\x02\xc3\x28",
                    f"{c.name}.{prop.name} is not UTF-8", tag=c.name)
        no_content = [c for c in spec.classes if not c.has_content]
        for cid in ([no_content[0].index] if no_content else []) + [0xFFFF]:
            add("unknown-class", "properties", u16(cid) + b"\x00\x00" + b"\x00" * 8 + b"\x00\x00",
                f"a content header for class {cid}, which carries no content")

        # -- frames
        heartbeat = ref.encode_frame(8, 0, b"")
        pattern = method_value_sets(first, d)[2][1]
        method_frame = ref.encode_frame(1, 1, ref.encode_method(first, pattern, d))
        for end_octet in (0x00, 0xCD, 0xFF):
            add("frame-end", "frame", heartbeat[:-1] + bytes([end_octet]), f"a heartbeat ending in {end_octet:#04x}")
        add("frame-end", "frame", method_frame[:-1] + b"\x00", f"a {first.full_name} frame ending in 0x00")
        add("frame-end", "frame", heartbeat + ref.encode_frame(3, 1, b"abc")[:-1] + b"\xcf",
            "a body frame after a good heartbeat, ending in 0xcf")
        for ftype in (0, 4, 7, 9, 0xFF):
            add("frame-type", "frame", bytes([ftype]) + b"\x00\x01\x00\x00\x00\x00\xce", f"frame type {ftype}")
        add("frame-type", "frame", b"AMQX\x00\x00\x09\x01", "an 'A' that does not start a protocol header")
        fmin = 4096
        add("frame-size", "frame", ref.encode_frame(3, 1, b"\x00" * (fmin - 7)), f"a body frame of {fmin + 1} octets",
            frame_max=fmin)
        add("frame-size", "frame", b"\x03\x00\x01\xff\xff\xff\xff", "a body frame announcing 4 GiB, header only",
            frame_max=fmin)
        add("frame-size", "frame", b"\x01\x00\x01\x00\x00\x10\x00", "a method frame of 4104 octets, header only",
            frame_max=fmin)
        add("truncated", "frame", ref.encode_frame(1, 1, u16(first.class_index)), "a method frame of 2 octets")
        add("truncated", "frame", ref.encode_frame(2, 1, b"\x00" * 11), "a header frame of 11 octets")
        if first.fields:
            add("truncated", "frame", ref.encode_frame(1, 1, ref.encode_method(first, pattern, d)[:-1]),
                f"a {first.full_name} frame one octet short of its arguments")
        add("unknown-method", "frame",
            ref.encode_frame(1, 1, u16(first.class_index) + u16(next(i for i in (0, 0xFFFF, 999)
                                                                     if i not in spec.class_by_index[first.class_index].method_by_index))),
            "a method frame for a method the class lacks")
        add("unknown-class", "frame", ref.encode_frame(2, 1, u16(0xFFFF) + b"\x00" * 12),
            "a content header for class 65535")
        # two defects, found by tests/amqp0/engine/test_differential.py: the payload ends inside the flag word, and the
        # frame-end octet after it would name unknown properties; the cut is met first
        if spec.content_classes:
            cid = spec.content_classes[0].index
            add("truncated", "frame", ref.encode_frame(2, 1, u16(cid) + b"\x00" * 10 + b"\x00"),
                f"a content header for class {cid} whose payload ends after one octet of its flag word")
        # the type octet is judged as soon as it arrives, before the rest of the header
        add("frame-type", "frame", b"\x09\x00\x01", "frame type 9, three octets of a header")

        # -- tables
        table = "table"
        add("truncated", table, b"\x00\x00\x00", "three octets: no room for the length")
        add("truncated", table, b"\x00\x00\x00\x05\x01aV", "a table announcing 5 octets with 3")
        add("trailing-data", table, b"\x00\x00\x00\x00\x00", "an empty table and one octet more")
        for code in (0x00, 0x5A, 0x7A, 0xFF):
            add(table, table, b"\x00\x00\x00\x03\x01a" + bytes([code]), f"unknown type code {code:#04x}")
        add(table, table, b"\x00\x00\x00\x05\x01aI\x00\x00", "an 'I' entry whose value runs past the table's end")
        add(table, table, b"\x00\x00\x00\x02\x05a", "a key length of 5 in a 2-octet table")
        add(table, table, b"\x00\x00\x00\x01\x01", "a key length octet and nothing after it")
        add(table, table, b"\x00\x00\x00\x07\x01aF\x00\x00\x00\x09", "a nested table longer than its parent")
        add(table, table, b"\x00\x00\x00\x07\x01aA\x00\x00\x00\x09", "a nested array longer than its parent")
        # three defects, found by tests/amqp0/engine/test_differential.py: a nested table one octet longer than its parent,
        # whose key is not UTF-8, and one octet after the parent; the nested table's length is met first
        add(table, table, b"\x00\x00\x00\x0a\x01aF\x00\x00\x00\x04\x02\xc3\x28V",
            "a nested table running one octet past its parent, holding a key that is not UTF-8")
        add(table, table, b"\x00\x00\x00\x0a\x01aA\x00\x00\x00\x04F\x00\x00\x00\x09",
            "a nested array running one octet past its parent, holding a table longer than the array")
        add(table, table, b"\x00\x00\x00\x09\x01aA\x00\x00\x00\x02I\x00", "an array item running past the array")
        add(table, table, b"\x00\x00\x00\x09\x01aS\x00\x00\x00\x10xy", "an S whose length runs past the table")
        add("invalid-utf8", table, b"\x00\x00\x00\x04\x02\xc3\x28V", "a key that is not UTF-8")
        add("invalid-utf8", table, b"\x00\x00\x00\x03\x01\xffV", "a key of one octet 0xff")
        add("table-depth", table, ref.encode_table(_nest_tables(ref.MAX_DEPTH + 1), d),
            f"tables nested {ref.MAX_DEPTH + 1} deep")
        add("table-depth", table, ref.encode_table([("a", ("A", _nest_arrays(ref.MAX_DEPTH)))], d),
            f"a table holding arrays nested {ref.MAX_DEPTH} deep ({ref.MAX_DEPTH + 1} containers)")
        return out

    def _check(self, kind: str, inp: str, data: bytes, frame_max: int) -> None:
        """The reference decoder must fail on the case, with the case's kind."""
        try:
            if inp == "method":
                ref.decode_method(self.spec, data, self.dialect)
            elif inp == "properties":
                ref.decode_header(self.spec, data, self.dialect)
            elif inp == "frame":
                ref.read_frames(self.spec, data, frame_max, self.dialect)
            else:
                ref.decode_table(data, self.dialect)
        except ref.RefError as e:
            if e.kind != kind:
                raise AssertionError(f"malformed case labelled {kind} decodes as {e.kind}: {e}") from None
            return
        raise AssertionError(f"malformed case labelled {kind} decodes without error: {data.hex()}")


def _nest_tables(depth: int) -> ref.Table:
    """``depth`` tables, the outermost included."""
    inner: ref.Table = [("leaf", ("t", True))]
    for _ in range(depth - 1):
        inner = [("n", ("F", inner))]
    return inner


def _nest_arrays(depth: int) -> list[ref.Typed]:
    inner: list[ref.Typed] = [("t", True)]
    for _ in range(depth - 1):
        inner = [("A", inner)]
    return inner


def _with_raw_shortstr(m: Method, values: dict[str, Any], field: Field, raw: bytes, dialect: str) -> bytes:
    """The method's payload with ``field`` (a short string) replaced by ``raw`` octets."""
    marker = "\u0001" * 7
    data = ref.encode_method(m, {**values, field.name: marker}, dialect)
    needle = bytes([7]) + marker.encode()
    assert data.count(needle) == 1
    return data.replace(needle, bytes([len(raw)]) + raw)


def _with_raw_table(m: Method, values: dict[str, Any], field: Field, raw: bytes, dialect: str) -> bytes:
    """The method's payload with ``field`` (a table) replaced by ``raw`` octets (length included)."""
    marker: ref.Table = [("\u0002" * 9, ("V", None))]
    data = ref.encode_method(m, {**values, field.name: marker}, dialect)
    needle = ref.encode_table(marker, dialect)
    assert data.count(needle) == 1
    return data.replace(needle, raw)


def corpus(spec: Spec, dialect: str = "rabbitmq") -> dict[str, Any]:
    """The whole document, as JSON-ready data."""
    b = Builder(spec, dialect)
    try:
        doc = {
            **envelope(spec, {"name": spec.name, "family": spec.family, "sha256": spec.sha256, "major": spec.major,
                              "minor": spec.minor, "revision": spec.revision,
                              # only with --overlay, so a corpus of a spec alone is unchanged
                              **({"overlays": [{"name": o.name, "sha256": o.sha256} for o in spec.overlays]}
                                 if spec.overlays else {})}),
            "dialect": dialect,
            "protocol_header": spec.protocol_header.hex(),
            "limits": {"max_table_depth": ref.MAX_DEPTH},
            "type_codes": type_codes(dialect),
            "error_kinds": ERROR_KINDS,
            "methods": b.methods(),
            "properties": b.properties(),
            "frames": b.frames(),
            "tables": b.tables(),
            "malformed": b.malformed(),
            "accepted": b.accepted(),
        }
    except (AssertionError, ValueError, KeyError) as e:  # a bug in amqgen, not the user's input
        raise AmqgenError(f"cannot build the corpus for {spec.name}: {type(e).__name__}: {e}") from e
    return doc


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) every document of this format and version validates against."""
    hexs = {"type": "string", "pattern": "^([0-9a-f]{2})*$"}
    dec = {"type": "string", "pattern": "^-?[0-9]+$"}
    field_value = {"anyOf": [{"type": "boolean"}, {"type": "integer"}, {"type": "string"},
                             {"$ref": "#/$defs/table"}]}
    values = {"type": "object", "additionalProperties": field_value}
    case_id = {"type": "string", "minLength": 1}
    frame = {
        "type": "object",
        "required": ["type"],
        "properties": {
            "type": {"enum": ["method", "header", "body", "heartbeat", "protocol-header"]},
            "channel": {"type": "integer", "minimum": 0, "maximum": 65535},
            "method": {"type": "string"}, "class": {"type": "string"},
            "class_id": {"type": "integer", "minimum": 0, "maximum": 65535},
            "body_size": dec, "values": values, "payload": hexs,
        },
        "additionalProperties": False,
    }
    typed_alternatives = [
        {"properties": {"type": {"const": "t"}, "value": {"type": "boolean"}}},
        {"properties": {"type": {"enum": list("bBsuUIi")}, "value": {"type": "integer"}}},
        {"properties": {"type": {"enum": list("sSx")}, "value": hexs}},
        {"properties": {"type": {"enum": list("lLT")}, "value": dec}},
        {"properties": {"type": {"const": "f"}, "value": {"type": "string", "pattern": "^[0-9a-f]{8}$"}}},
        {"properties": {"type": {"const": "d"}, "value": {"type": "string", "pattern": "^[0-9a-f]{16}$"}}},
        {"properties": {"type": {"const": "D"}, "value": {
            "type": "object", "required": ["scale", "unscaled"], "additionalProperties": False,
            "properties": {"scale": {"type": "integer", "minimum": 0, "maximum": 255},
                           "unscaled": {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1}}}}},
        {"properties": {"type": {"const": "F"}, "value": {"$ref": "#/$defs/table"}}},
        {"properties": {"type": {"const": "A"}, "value": {"type": "array", "items": {"$ref": "#/$defs/typed"}}}},
        {"properties": {"type": {"const": "V"}, "value": {"type": "null"}}},
    ]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://amqgen.invalid/schemas/amqgen-vectors-1.json",
        "title": "amqgen conformance corpus (amqgen vectors), version 1",
        "type": "object",
        "required": ["format", "version", "generator", "spec", "dialect", "protocol_header", "limits", "type_codes",
                     "error_kinds", "methods", "properties", "frames", "tables", "malformed", "accepted"],
        "properties": {
            "format": {"const": FORMAT},
            "version": {"const": VERSION},
            "generator": {"type": "string"},
            "notice": {"type": "string"},
            "spec": {"type": "object", "required": ["name", "family", "sha256", "major", "minor", "revision"],
                     "properties": {"name": {"type": "string"}, "family": {"enum": ["0-8", "0-9", "0-9-1"]},
                                    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                                    "major": {"type": "integer"}, "minor": {"type": "integer"},
                                    "revision": {"type": "integer"},
                                    "overlays": {"type": "array", "items": {
                                        "type": "object", "required": ["name", "sha256"],
                                        "properties": {"name": {"type": "string"},
                                                       "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"}}}}}},
            "dialect": {"enum": list(DIALECTS)},
            "protocol_header": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
            "limits": {"type": "object", "required": ["max_table_depth"],
                       "properties": {"max_table_depth": {"type": "integer", "minimum": 1}}},
            "type_codes": {"type": "object", "propertyNames": {"pattern": "^[A-Za-z]$"},
                           "additionalProperties": {"type": "object", "required": ["kind"]}},
            "error_kinds": {"type": "object", "propertyNames": {"enum": list(ERROR_KINDS)},
                            "additionalProperties": {"type": "string"}},
            "methods": {"type": "array", "items": {
                "type": "object", "required": ["id", "method", "class_id", "method_id", "values", "bytes"],
                "additionalProperties": False,
                "properties": {"id": case_id, "method": {"type": "string"}, "class_id": {"type": "integer"},
                               "method_id": {"type": "integer"}, "values": values, "bytes": hexs}}},
            "properties": {"type": "array", "items": {
                "type": "object", "required": ["id", "class", "class_id", "body_size", "values", "bytes"],
                "additionalProperties": False,
                "properties": {"id": case_id, "class": {"type": "string"}, "class_id": {"type": "integer"},
                               "body_size": dec, "values": values, "bytes": hexs}}},
            "frames": {"type": "array", "items": {
                "type": "object", "required": ["id", "frame_max", "frames", "bytes"], "additionalProperties": False,
                "properties": {
                    "id": case_id, "frame_max": {"type": "integer", "minimum": 0},
                    "frames": {"type": "array", "items": frame, "minItems": 1}, "bytes": hexs,
                    "message": {"type": "object", "required": ["channel", "method", "values", "properties", "body"],
                                "additionalProperties": False,
                                "properties": {"channel": {"type": "integer"}, "method": {"type": "string"},
                                               "values": values, "properties": values, "body": hexs}}}}},
            "tables": {"type": "array", "items": {
                "type": "object", "required": ["id", "kind", "value", "bytes"], "additionalProperties": False,
                "properties": {"id": case_id, "kind": {"enum": ["table", "array"]},
                               "value": {"anyOf": [{"$ref": "#/$defs/table"},
                                                   {"type": "array", "items": {"$ref": "#/$defs/typed"}}]},
                               "bytes": hexs}}},
            "malformed": {"type": "array", "items": {
                "type": "object", "required": ["id", "kind", "input", "bytes", "why"], "additionalProperties": False,
                "properties": {"id": case_id, "kind": {"enum": list(ERROR_KINDS)}, "input": {"enum": list(INPUTS)},
                               "bytes": hexs, "why": {"type": "string"},
                               "frame_max": {"type": "integer", "minimum": 0}}}},
            "accepted": {"type": "array", "items": {
                "type": "object", "required": ["id", "input", "method", "class_id", "method_id", "values", "bytes",
                                               "canonical", "why"],
                "additionalProperties": False,
                "properties": {"id": case_id, "input": {"const": "method"}, "method": {"type": "string"},
                               "class_id": {"type": "integer"}, "method_id": {"type": "integer"}, "values": values,
                               "bytes": hexs, "canonical": hexs, "why": {"type": "string"}}}},
        },
        "$defs": {
            "table": {"type": "array", "items": {
                "type": "array", "prefixItems": [{"type": "string"}, {"$ref": "#/$defs/typed"}],
                "minItems": 2, "maxItems": 2}},
            "typed": {"type": "object", "required": ["type", "value"], "additionalProperties": False,
                      "properties": {"type": {"type": "string", "pattern": "^[A-Za-z]$"}, "value": True},
                      "oneOf": typed_alternatives},
        },
    }
