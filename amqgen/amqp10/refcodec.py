"""A small reference codec for AMQP 1.0's type system (part 1) and its composites, written from the
specification and sharing no code with any generated target: the independent side the 1.0 corpus and tests
check targets and peers against. Simple rather than fast.

Values: :class:`Typed` (a primitive's name and a Python value), :class:`Described` and :class:`Array`. A list's
value is a tuple of values, a map's a tuple of (key, value) pairs in wire order.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .model import Composite, Restricted, Spec

MAX_DEPTH = 100  # containers and described values nested deeper are refused (a decoder's stack is bounded)
#: Array elements of a constructor that takes no octets (null, true, false, uint0, ulong0, list0) are the one thing
#: no size bounds (a 10-octet array32 may announce 4 billion nulls): one decode (a value, a frame, a message) may
#: build EMPTY_PER_OCTET of them per octet of its input, all its arrays together. Every other value takes at least
#: one octet, so a decode builds at most (EMPTY_PER_OCTET + 1) values per input octet.
EMPTY_PER_OCTET = 16
#: a list0 element is a new list each (the others share one value): it costs this many of the budget above
LIST0_COST = 8


@dataclass(frozen=True)
class Typed:
    type: str  # a primitive's name: "uint", "string", "list", ...
    value: Any


@dataclass(frozen=True)
class Described:
    descriptor: Value  # a ulong (domain << 32 | id) or a symbol; any other value is kept too
    value: Value


@dataclass(frozen=True)
class Array:
    type: str  # the elements' primitive
    items: tuple[Any, ...]  # the elements' Python values
    descriptor: Value | None = None  # an array of described values shares one descriptor


Value = Typed | Described | Array


class RefError(Exception):
    """A malformed input, with the corpus's kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# -- constructors (part 1.6), written out here, not taken from the model (tests compare the two) --------------
#: fixed-width constructors: code -> (primitive, width, struct format or None for raw octets)
FIXED = {
    0x40: ("null", 0, None), 0x56: ("boolean", 1, ">B"), 0x41: ("boolean", 0, None), 0x42: ("boolean", 0, None),
    0x50: ("ubyte", 1, ">B"), 0x60: ("ushort", 2, ">H"), 0x70: ("uint", 4, ">I"), 0x52: ("uint", 1, ">B"),
    0x43: ("uint", 0, None), 0x80: ("ulong", 8, ">Q"), 0x53: ("ulong", 1, ">B"), 0x44: ("ulong", 0, None),
    0x51: ("byte", 1, ">b"), 0x61: ("short", 2, ">h"), 0x71: ("int", 4, ">i"), 0x54: ("int", 1, ">b"),
    0x81: ("long", 8, ">q"), 0x55: ("long", 1, ">b"), 0x72: ("float", 4, ">f"), 0x82: ("double", 8, ">d"),
    0x74: ("decimal32", 4, None), 0x84: ("decimal64", 8, None), 0x94: ("decimal128", 16, None),
    0x73: ("char", 4, ">I"), 0x83: ("timestamp", 8, ">q"), 0x98: ("uuid", 16, None), 0x45: ("list", 0, None),
}
#: variable-width: code -> (primitive, width of the size)
VARIABLE = {0xA0: ("binary", 1), 0xB0: ("binary", 4), 0xA1: ("string", 1), 0xB1: ("string", 4),
            0xA3: ("symbol", 1), 0xB3: ("symbol", 4)}
#: compound (size, count, items) and array (size, count, one constructor, elements)
COMPOUND = {0xC0: ("list", 1), 0xD0: ("list", 4), 0xC1: ("map", 1), 0xD1: ("map", 4)}
ARRAYS = {0xE0: 1, 0xF0: 4}
DESCRIBED = 0x00
#: the octets that start a sasl-outcome (descriptor 0x00000000:0x00000044 as a smallulong), after which the AMQP
#: protocol header comes (5.3.2)
SASL_OUTCOME_PREFIX = b"\x00\x53\x44"


def constructors() -> dict[int, tuple[str, str, int]]:
    """Every constructor: code -> (primitive, category, width), as the model spells its encodings."""
    out = {c: (p, "fixed", w) for c, (p, w, _) in FIXED.items()}
    out |= {c: (p, "variable", w) for c, (p, w) in VARIABLE.items()}
    out |= {c: (p, "compound", w) for c, (p, w) in COMPOUND.items()}
    out |= {c: ("array", "array", w) for c, w in ARRAYS.items()}
    return out


# -- encoding -----------------------------------------------------------------------------------------------
_INT_RANGE = {"ubyte": (0, 0xFF), "ushort": (0, 0xFFFF), "uint": (0, 0xFFFF_FFFF), "ulong": (0, 2**64 - 1),
              "byte": (-128, 127), "short": (-(2**15), 2**15 - 1), "int": (-(2**31), 2**31 - 1),
              "long": (-(2**63), 2**63 - 1), "timestamp": (-(2**63), 2**63 - 1), "char": (0, 0x10FFFF)}
_MAIN = {"null": 0x40, "boolean": 0x56, "ubyte": 0x50, "ushort": 0x60, "uint": 0x70, "ulong": 0x80, "byte": 0x51,
         "short": 0x61, "int": 0x71, "long": 0x81, "float": 0x72, "double": 0x82, "decimal32": 0x74,
         "decimal64": 0x84, "decimal128": 0x94, "char": 0x73, "timestamp": 0x83, "uuid": 0x98}


def _body(code: int, value: Any) -> bytes:
    """The octets after a fixed or variable constructor."""
    if code in FIXED:
        prim, width, fmt = FIXED[code]
        if width == 0:
            return b""
        if fmt is None:
            if not isinstance(value, bytes) or len(value) != width:
                raise ValueError(f"{prim} takes {width} octets")
            return value
        if prim == "char":
            return struct.pack(fmt, ord(value))
        if prim == "boolean":
            return bytes((1 if value else 0,))
        return struct.pack(fmt, value)
    prim, width = VARIABLE[code]
    raw: bytes = value if prim == "binary" else value.encode("utf-8" if prim == "string" else "ascii")
    return (len(raw).to_bytes(width, "big") if width == 4 else bytes((len(raw),))) + raw


def smallest(v: Typed) -> int:
    """The canonical constructor of a value: the smallest that holds it (1.6)."""
    t, x = v.type, v.value
    if t == "boolean":
        return 0x41 if x else 0x42
    if t in ("uint", "ulong"):
        return {"uint": (0x43, 0x52, 0x70), "ulong": (0x44, 0x53, 0x80)}[t][0 if x == 0 else 1 if x <= 255 else 2]
    if t in ("int", "long"):
        return {"int": (0x54, 0x71), "long": (0x55, 0x81)}[t][0 if -128 <= x <= 127 else 1]
    if t in ("binary", "string", "symbol"):
        n = len(x if t == "binary" else x.encode("utf-8" if t == "string" else "ascii"))
        return {"binary": 0xA0, "string": 0xA1, "symbol": 0xA3}[t] + (0 if n <= 255 else 0x10)
    if t == "list":
        return 0x45 if not x else 0xC0  # list8 or list32 is decided by size (encode)
    if t == "map":
        return 0xC1
    return _MAIN[t]


def _check(v: Typed) -> None:
    if v.type in _INT_RANGE:
        lo, hi = _INT_RANGE[v.type]
        ok = isinstance(v.value, str) and len(v.value) == 1 if v.type == "char" else isinstance(v.value, int)
        if not ok or not lo <= (ord(v.value) if v.type == "char" else v.value) <= hi:
            raise ValueError(f"{v.value!r} is not a {v.type}")


def encode(v: Value, *, wide: bool = False) -> bytes:
    """One value with its constructor: the canonical (smallest) encoding, or with ``wide`` the widest one of
    the same type (uint as 0x70, list32, str32, ...), which a decoder must read to the same value."""
    if isinstance(v, Described):
        return bytes((DESCRIBED,)) + encode(v.descriptor, wide=wide) + encode(v.value, wide=wide)
    if isinstance(v, Array):
        return _encode_array(v, wide)
    _check(v)
    if v.type == "list":
        items = b"".join(encode(i, wide=wide) for i in v.value)
        return _compound(0xC0, 0xD0, len(v.value), items, wide, empty=0x45)
    if v.type == "map":
        items = b"".join(encode(k, wide=wide) + encode(x, wide=wide) for k, x in v.value)
        return _compound(0xC1, 0xD1, 2 * len(v.value), items, wide)
    code = smallest(v)
    if wide:
        code = {0x41: 0x56, 0x42: 0x56, 0x43: 0x70, 0x52: 0x70, 0x44: 0x80, 0x53: 0x80, 0x54: 0x71, 0x55: 0x81,
                0xA0: 0xB0, 0xA1: 0xB1, 0xA3: 0xB3}.get(code, code)
    return bytes((code,)) + _body(code, v.value)


def _compound(small: int, large: int, count: int, items: bytes, wide: bool, empty: int | None = None) -> bytes:
    if count == 0 and empty is not None and not wide:
        return bytes((empty,))
    if not wide and count <= 255 and len(items) + 1 <= 255:
        return bytes((small, len(items) + 1, count)) + items
    return bytes((large,)) + (len(items) + 4).to_bytes(4, "big") + count.to_bytes(4, "big") + items


def _element_constructor(a: Array, wide: bool) -> int:
    """One constructor for every element: the smallest that holds them all (a value-carrying one, 0x41 or
    0x43, only when every element is that value)."""
    if a.type in ("list", "map"):  # elements of any size: the 4-octet form, whose bodies _encode_array writes
        return {"list": 0xD0, "map": 0xD1}[a.type]
    if a.type == "array":
        raise ValueError("arrays of arrays are written with their own constructors (not in the corpus)")
    if not a.items:  # no element to fit: the type's own constructor (str8 and the like for the variable ones)
        return {"binary": 0xA0, "string": 0xA1, "symbol": 0xA3}.get(a.type) or _MAIN[a.type]
    # elements carry octets, as Proton writes them: an element constructor that carries none (true, uint0, ...)
    # would let a few octets announce any number of elements
    codes = {_WITH_OCTETS.get(c, c) for c in (smallest(Typed(a.type, x)) for x in a.items)}
    widest = {0x41: 0x56, 0x42: 0x56, 0x43: 0x70, 0x52: 0x70, 0x44: 0x80, 0x53: 0x80, 0x54: 0x71, 0x55: 0x81,
              0xA0: 0xB0, 0xA1: 0xB1, 0xA3: 0xB3}
    if wide:
        return widest.get(next(iter(codes)), next(iter(codes)))
    if len(codes) == 1:  # one constructor fits all
        return next(iter(codes))
    return widest.get(min(codes), min(codes))  # mixed sizes: the type's wide form holds every element


#: the zero-octet constructors and the smallest that carries octets for the same values
_WITH_OCTETS = {0x41: 0x56, 0x42: 0x56, 0x43: 0x52, 0x44: 0x53}


def _encode_array(a: Array, wide: bool) -> bytes:
    code = _element_constructor(a, wide)
    ctor = bytes((code,))
    if a.descriptor is not None:
        ctor = bytes((DESCRIBED,)) + encode(a.descriptor, wide=wide) + ctor
    if a.type in ("list", "map"):
        body = b"".join(encode(Typed(a.type, x), wide=True)[1:] for x in a.items)
    else:
        for x in a.items:
            _check(Typed(a.type, x))
        body = b"".join(_body(code, x) for x in a.items)
    n = len(a.items)
    inner = ctor + body
    if not wide and n <= 255 and len(inner) + 1 <= 255:
        return bytes((0xE0, len(inner) + 1, n)) + inner
    return bytes((0xF0,)) + (len(inner) + 4).to_bytes(4, "big") + n.to_bytes(4, "big") + inner


# -- decoding -----------------------------------------------------------------------------------------------
class Reader:
    """Octets from ``pos`` to ``end``; running out is ``truncated`` for the input, ``size`` inside a container
    (its size said less than its items need)."""

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None, short: str = "truncated",
                 budget: list[int] | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end
        self.short = short
        # what the whole decode may still build of elements of no octets: shared by the readers inside this one
        self.budget = [EMPTY_PER_OCTET * (self.end - pos)] if budget is None else budget

    def inner(self, end: int) -> Reader:
        """The octets from here to ``end`` (a container's), sharing this decode's budget."""
        return Reader(self.data, self.pos, end, "size", self.budget)

    def take(self, n: int, what: str) -> bytes:
        if self.end - self.pos < n:
            raise RefError(self.short, f"{what}: {n} octets wanted, {self.end - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def uint(self, width: int, what: str) -> int:
        return int.from_bytes(self.take(width, what), "big")


def _fixed(code: int, r: Reader) -> Typed:
    prim, width, fmt = FIXED[code]
    raw = r.take(width, prim)
    if code == 0x40:
        return Typed("null", None)
    if code in (0x41, 0x42):
        return Typed("boolean", code == 0x41)
    if code in (0x43, 0x44):
        return Typed(prim, 0)
    if code == 0x45:
        return Typed("list", ())
    if fmt is None:
        return Typed(prim, raw)
    x = struct.unpack(fmt, raw)[0]
    if prim == "boolean":
        if x > 1:
            raise RefError("wrong-type", f"boolean octet {x}: neither 0 nor 1")
        return Typed(prim, x == 1)
    if prim == "char":
        if x > 0x10FFFF or 0xD800 <= x <= 0xDFFF:
            raise RefError("invalid-utf8", f"char U+{x:X} is not a Unicode scalar value")
        return Typed(prim, chr(x))
    return Typed(prim, x)


def _text(prim: str, raw: bytes) -> Any:
    if prim == "binary":
        return raw
    try:
        return raw.decode("utf-8" if prim == "string" else "ascii")
    except UnicodeDecodeError:
        raise RefError("invalid-utf8", f"a {prim} that is not {'UTF-8' if prim == 'string' else 'ASCII'}") from None


def decode_value(r: Reader, depth: int = 0) -> Value:
    if depth > MAX_DEPTH:
        raise RefError("nesting-depth", f"values nested deeper than {MAX_DEPTH}")
    code = r.take(1, "a constructor")[0]
    if code == DESCRIBED:
        # a descriptor other than a ulong or a symbol is kept, as peers do (1.4.1 names only those two, and a
        # reader that refuses others ends a connection a peer considers fine)
        descriptor = decode_value(r, depth + 1)
        return Described(descriptor, decode_value(r, depth + 1))
    if code in FIXED:
        return _fixed(code, r)
    if code in VARIABLE:
        prim, width = VARIABLE[code]
        n = r.uint(width, f"{prim} size")
        return Typed(prim, _text(prim, r.take(n, prim)))
    if code in COMPOUND:
        prim, width = COMPOUND[code]
        size = r.uint(width, f"{prim} size")
        if size < width:
            raise RefError("size", f"a {prim} size of {size}, less than its count field")
        inner = r.inner(r.pos + size)
        if inner.end > r.end:
            raise RefError(r.short, f"a {prim} of {size} octets, {r.end - r.pos} left")
        count = inner.uint(width, f"{prim} count")
        items = []
        for _ in range(count):
            if inner.pos == inner.end:
                raise RefError("size", f"a {prim} whose {count} items run past its size")
            items.append(decode_value(inner, depth + 1))
        if inner.pos != inner.end:
            raise RefError("size", f"a {prim} of {count} items leaves {inner.end - inner.pos} octets of its size")
        r.pos = inner.end
        if prim == "map":
            if count % 2:
                raise RefError("size", f"a map of {count} items (an odd count)")
            return Typed("map", tuple(zip(items[::2], items[1::2], strict=True)))
        return Typed("list", tuple(items))
    if code in ARRAYS:
        return _decode_array(code, r, depth)
    raise RefError("unknown-constructor", f"constructor 0x{code:02x}")


def _decode_array(code: int, r: Reader, depth: int) -> Array:
    width = ARRAYS[code]
    size = r.uint(width, "array size")
    inner = r.inner(r.pos + size)
    if inner.end > r.end:
        raise RefError(r.short, f"an array of {size} octets, {r.end - r.pos} left")
    if size < width:
        raise RefError("size", "an array size less than its count field")
    count = inner.uint(width, "array count")
    descriptor = None
    ctor = inner.take(1, "the array's constructor")[0]
    if ctor == DESCRIBED:
        descriptor = decode_value(inner, depth + 1)
        ctor = inner.take(1, "the array's constructor")[0]
    left = inner.end - inner.pos
    if ctor in FIXED:  # count and size agree exactly, checked before any element is built
        width = FIXED[ctor][1]
        if width == 0 and left:
            raise RefError("size", f"an array of {count} elements of no octets leaves {left} octets of its size")
        if width == 0:
            inner.budget[0] -= count * (LIST0_COST if ctor == 0x45 else 1)
            if inner.budget[0] < 0:
                raise RefError("size", f"an array of {count} elements of no octets: over the decode's budget of "
                                       f"{EMPTY_PER_OCTET} per input octet")
        if width and count * width != left:
            raise RefError("size", f"an array of {count} elements of {width} octets in {left} octets")
    elif count * (VARIABLE.get(ctor) or COMPOUND.get(ctor) or (None, ARRAYS.get(ctor, 0)))[1] > left:
        raise RefError("size", f"an array of {count} elements whose size fields alone overrun its size")
    items: list[Any] = []
    prim = None
    for _ in range(count):
        if ctor in FIXED:
            v = _fixed(ctor, inner)
        elif ctor in VARIABLE:
            p, w = VARIABLE[ctor]
            v = Typed(p, _text(p, inner.take(inner.uint(w, f"{p} size"), p)))
        elif ctor in COMPOUND:
            # the element is a compound value without its constructor: decode it with one put back
            sub = Reader(bytes((ctor,)) + inner.data[inner.pos:inner.end], short="size", budget=inner.budget)
            v = decode_value(sub, depth + 1)  # type: ignore[assignment]
            inner.pos += sub.pos - 1
        elif ctor in ARRAYS:
            sub = Reader(bytes((ctor,)) + inner.data[inner.pos:inner.end], 1, short="size", budget=inner.budget)
            nested = _decode_array(ctor, sub, depth + 1)
            inner.pos += sub.pos - 1
            items.append(nested)
            prim = "array"
            continue
        else:
            raise RefError("unknown-constructor", f"array element constructor 0x{ctor:02x}")
        assert isinstance(v, Typed)
        prim = v.type
        items.append(v.value)
    if inner.pos != inner.end:
        raise RefError("size", f"an array of {count} elements leaves {inner.end - inner.pos} octets of its size")
    r.pos = inner.end
    if prim is None:
        prim = constructors()[ctor][0] if ctor in constructors() else "null"
    return Array(prim, tuple(items), descriptor)


def decode(data: bytes) -> Value:
    """Exactly one value."""
    r = Reader(data)
    v = decode_value(r)
    if r.pos != len(data):
        raise RefError("trailing-data", f"{len(data) - r.pos} octets after the value")
    return v


# -- composites (parts 2-5): fields by position, trailing nulls dropped ---------------------------------------
class Composites:
    """Encodes and decodes the spec's composite types from field values given by name."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.types = spec.type_by_name()
        self.by_code = {c.descriptor.code: c for c in spec.composites}
        self.by_symbol = {c.descriptor.name: c for c in spec.composites}

    def primitive(self, type_name: str) -> str:
        t = self.types.get(type_name)
        if isinstance(t, Restricted):
            return t.primitive
        if isinstance(t, Composite):
            return "composite"
        return type_name

    def encode(self, name: str, values: Mapping[str, Value | None], *, symbolic: bool = False,
               keep_nulls: bool = False, wide: bool = False) -> bytes:
        """``values``: field name -> a value (already typed) or None; absent fields are null. ``symbolic`` writes
        the symbolic descriptor, ``keep_nulls`` the trailing nulls: both legal, neither canonical."""
        c = self.types[name]
        assert isinstance(c, Composite)
        unknown = set(values) - {f.name for f in c.fields}
        if unknown:
            raise ValueError(f"{name} has no field {sorted(unknown)}")
        items: list[Value] = []
        for f in c.fields:
            v = values.get(f.name)
            if v is None and f.mandatory:
                raise ValueError(f"{name}.{f.name} is mandatory")
            items.append(Typed("null", None) if v is None else v)
        if not keep_nulls:
            while items and items[-1] == Typed("null", None):
                items.pop()
        d = Typed("symbol", c.descriptor.name) if symbolic else Typed("ulong", c.descriptor.code)
        return encode(Described(d, Typed("list", tuple(items))), wide=wide)

    def decode(self, data: bytes) -> tuple[Composite, dict[str, Value | None]]:
        """A described list of a known composite: its fields by name (null and absent as None)."""
        v = decode(data)
        return self.fields_of(v)

    def fields_of(self, v: Value) -> tuple[Composite, dict[str, Value | None]]:
        if not isinstance(v, Described):
            raise RefError("wrong-type", "not a described value")
        d = v.descriptor
        c = None
        if isinstance(d, Typed) and d.type in ("ulong", "symbol"):
            c = self.by_code.get(d.value) if d.type == "ulong" else self.by_symbol.get(d.value)
        if c is None:
            raise RefError("unknown-descriptor", f"descriptor {d!r}")
        if not (isinstance(v.value, Typed) and v.value.type == "list"):
            raise RefError("wrong-type", f"{c.name} is not a list")
        items = v.value.value
        # fields past the spec's are ignored (forward compatibility, as peers read them); they are still read
        out: dict[str, Value | None] = {}
        for i, f in enumerate(c.fields):
            x = items[i] if i < len(items) else None
            if isinstance(x, Typed) and x.type == "null":
                x = None
            if x is None and f.mandatory:
                raise RefError("mandatory-null", f"{c.name}.{f.name} is mandatory and null")
            if x is not None:
                self._check_field(c, f.name, f.type, f.multiple, x)
            out[f.name] = x
        return c, out

    def _check_field(self, c: Composite, name: str, ftype: str, multiple: bool, x: Value) -> None:
        if ftype == "*":
            return  # any type providing the archetype; not checked here
        want = self.primitive(ftype)
        if multiple and isinstance(x, Array):
            got = x.type if x.descriptor is None else "composite"
        elif isinstance(x, Described):
            got = "composite" if isinstance(x.descriptor, Typed) and x.descriptor.type in ("ulong", "symbol") else "?"
            t = self.types.get(ftype)
            if isinstance(t, Restricted) and t.descriptor is not None:
                got = want
        else:
            got = x.type
        if got != want:
            raise RefError("wrong-type", f"{c.name}.{name} is a {ftype} ({want}), not a {got}")


# -- frames (2.3) and messages (3.2) -------------------------------------------------------------------------
@dataclass(frozen=True)
class Frame:
    type: int  # 0 AMQP, 1 SASL
    channel: int  # the type-specific two octets (the channel of an AMQP frame)
    extended: bytes  # the extended header: (DOFF - 2) * 4 octets
    body: bytes  # empty: a heartbeat


@dataclass(frozen=True)
class ProtocolHeader:
    protocol_id: int


def encode_frame(ftype: int, channel: int, body: bytes, extended: bytes = b"") -> bytes:
    if len(extended) % 4:
        raise ValueError("an extended header is a whole number of 4-octet words")
    doff = 2 + len(extended) // 4
    size = 8 + len(extended) + len(body)
    return size.to_bytes(4, "big") + bytes((doff, ftype)) + channel.to_bytes(2, "big") + extended + body


def read_frames(data: bytes, max_frame_size: int = 0) -> list[Frame | ProtocolHeader]:
    """Every frame and protocol header of a whole stream; ``max_frame_size`` 0: no limit but the size field."""
    out: list[Frame | ProtocolHeader] = []
    pos = 0
    header_ok = True  # a protocol header opens the stream, or follows SASL's outcome (5.3.2); nowhere else
    while pos < len(data):
        if data[pos:pos + 1] == b"A":
            if not header_ok:
                raise RefError("protocol-header", "a protocol header after a frame")
            head = data[pos:pos + 8]
            if len(head) < 8:
                raise RefError("truncated", "a protocol header cut short")
            if head[:4] != b"AMQP" or head[4] not in (0, 2, 3) or head[5:] != b"\x01\x00\x00":
                raise RefError("protocol-header", f"not an AMQP 1.0 protocol header: {head.hex()}")
            out.append(ProtocolHeader(head[4]))
            pos += 8
            continue
        if len(data) - pos < 8:
            raise RefError("truncated", "a frame header cut short")
        size = int.from_bytes(data[pos:pos + 4], "big")
        doff, ftype = data[pos + 4], data[pos + 5]
        if size < 8:
            raise RefError("frame-size", f"a frame size of {size}, under the 8 octets of its header")
        if max_frame_size and size > max_frame_size:
            raise RefError("frame-size", f"a frame of {size} octets, over the max-frame-size {max_frame_size}")
        if doff < 2 or doff * 4 > size:
            raise RefError("doff", f"DOFF {doff} in a frame of {size} octets")
        if ftype not in (0, 1):
            raise RefError("frame-type", f"frame type {ftype}")
        if len(data) - pos < size:
            raise RefError("truncated", f"a frame of {size} octets, {len(data) - pos} left")
        out.append(Frame(ftype, int.from_bytes(data[pos + 6:pos + 8], "big"), data[pos + 8:pos + doff * 4],
                         data[pos + doff * 4:pos + size]))
        header_ok = ftype == 1 and data[pos + doff * 4:pos + doff * 4 + 3] == SASL_OUTCOME_PREFIX
        pos += size
    return out


def split_body(c: Composites, body: bytes) -> tuple[Composite, dict[str, Value | None], bytes]:
    """A frame body: the performative, its fields, and the payload after it (transfer only, 2.3.2)."""
    r = Reader(body)
    v = decode_value(r)
    comp, fields = c.fields_of(v)
    payload = body[r.pos:]
    if payload and comp.name != "transfer":
        raise RefError("trailing-data", f"{len(payload)} octets after a {comp.name}, which carries no payload")
    return comp, fields, payload


#: 3.2: the sections in their order; the body is data+, amqp-sequence+ or one amqp-value
_SECTION_RANK = {"header": 0, "delivery-annotations": 1, "message-annotations": 2, "properties": 3,
                 "application-properties": 4, "data": 5, "amqp-sequence": 5, "amqp-value": 5, "footer": 6}


def read_message(spec: Spec, data: bytes) -> list[tuple[str, Value]]:
    """A message's sections, each (name, its described value), in order; out of order is an error."""
    sections: list[Composite | Restricted] = [*spec.composites, *spec.restricted]
    names = {t.descriptor.code: t.name for t in sections if t.descriptor is not None and "section" in t.provides}
    symbols = {t.descriptor.name: t.name for t in sections if t.descriptor is not None and "section" in t.provides}
    r = Reader(data)
    out: list[tuple[str, Value]] = []
    while r.pos < len(data):
        v = decode_value(r)
        if not isinstance(v, Described):
            raise RefError("wrong-type", "a message section that is not described")
        d = v.descriptor
        name = None
        if isinstance(d, Typed):
            name = names.get(d.value) if d.type == "ulong" else symbols.get(d.value) if d.type == "symbol" else None
        if name is None:
            raise RefError("unknown-descriptor", f"section descriptor {d!r}")
        if out:
            prev = out[-1][0]
            rank, last = _SECTION_RANK[name], _SECTION_RANK[prev]
            body_mix = rank == last == 5 and (name != prev or name == "amqp-value")
            if rank < last or (rank == last and rank != 5) or body_mix:
                raise RefError("section-order", f"{name} after {prev}")
        out.append((name, v))
    return out
