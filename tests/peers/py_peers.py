"""Shared helpers for the Python-target interop tests: the model's view of 0-9-1 extended, value
generation from field types, normalisation of decoded values, and adapters for pika and pamqp.

The peers are enumerated from their own modules (never hand-listed); field values come from the
model's wire types and asserts, so nothing here is copied from the generated code.
"""

from __future__ import annotations

import datetime as dt
import inspect
import struct
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pamqp.base
import pamqp.commands
import pamqp.header
import pika.amqp_object
import pika.spec
from pytarget import SPEC_091_EXT

from amqgen.amqp0.lower import load_spec
from amqgen.amqp0.model import Field, Method
from amqgen.naming import Naming

SPEC = load_spec(SPEC_091_EXT)
NAMING = Naming("python")
UTC = dt.UTC

# The characters the spec's exchange-name / queue-name regexp allows (^[a-zA-Z0-9-_.:]*$).
NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:"
# Multi-byte UTF-8 text: 2-, 3- and 4-byte sequences.
RICH = "zürich-東京-🐇-"

INT_MAX = {"octet": 0xFF, "short": 0xFFFF, "long": 0xFFFF_FFFF, "longlong": 0xFFFF_FFFF_FFFF_FFFF}
# A mid-range value per width with every byte distinct, so a byte-order slip shows.
INT_PATTERN = {"octet": 0xA5, "short": 0x1234, "long": 0x89AB_CDEF, "longlong": 0x0123_4567_89AB_CDEF}


def member(name: str) -> str:
    return NAMING.member(name)


def utf8_text(nbytes: int, seed: str) -> str:
    """A string of exactly ``nbytes`` UTF-8 octets with multi-byte characters when room allows."""
    unit = seed + RICH
    text = unit * (nbytes // len(unit.encode()) + 1)
    raw = text.encode()[:nbytes]
    # Cut on a character boundary, then pad with ASCII to the exact size.
    out = raw.decode("utf-8", errors="ignore")
    return out + "x" * (nbytes - len(out.encode()))


def name_text(nchars: int, seed: int) -> str:
    return "".join(NAME_CHARS[(seed + i * 7) % len(NAME_CHARS)] for i in range(nchars))


def constrained(field: Field) -> bool:
    """Fields whose domain carries a length or regexp assert get names the spec allows."""
    return any(a.check in ("length", "regexp") for a in field.asserts)


# -- field tables -------------------------------------------------------------------------------
T0 = dt.datetime(2024, 2, 29, 23, 59, 58, tzinfo=UTC)


def common_table() -> dict[str, Any]:
    """Values every implementation encodes with the same type codes (sorted keys for pamqp)."""
    return {
        "a-text": RICH * 3,
        "b-true": True,
        "c-false": False,
        "d-nested": {"deep": {"deeper": {"deepest": ["x", True, {"k": "v"}]}}, "empty": {}},
        "e-array": ["one", False, ["n1", ["n2", []]], {"in-array": "yes"}],
        "f-void": None,
        "g-decimal": Decimal("-123.4567"),
        "h-time": T0,
        "i-empty-text": "",
    }


def pika_table() -> dict[str, Any]:
    """Everything pika's encoder accepts (pika/data.py encode_value): adds ints, bytes, decimals."""
    t = common_table()
    t.update(
        {
            "j-int-zero": 0,
            "k-int-neg": -1,
            "l-int32-min": -(2**31),
            "m-int32-max": 2**31 - 1,
            "n-int64-above": 2**31,
            "o-int64-min": -(2**63),
            "p-int64-max": 2**63 - 1,
            "q-bytes": b"\x00\xff\xceraw\x01",
            "r-decimal-int": Decimal(42),
            "s-array-mixed": [1, -(2**40), b"\x01", Decimal("0.5"), None],
        }
    )
    return t


def pamqp_table() -> dict[str, Any]:
    """Everything pamqp's encoder accepts (pamqp/encode.py encode_table_value): every integer width,
    float (as 'f', so values exact in binary32), bytearray (as 'x')."""
    t = common_table()
    t.update(
        {
            "j-int8": -128,
            "k-int16": -32768,
            "l-uint16": 65535,
            "m-int32": -(2**31),
            "n-uint32": 2**32 - 1,
            "o-int64": -(2**63),
            "p-int64-max": 2**63 - 1,
            "q-float": 1.5,
            "r-float-neg": -0.15625,
            "s-bytearray": bytearray(b"\x00\xff\xce"),
        }
    )
    return dict(sorted(t.items()))


def ours_table() -> dict[str, Any]:
    """What a user hands our encoder: every Python type the contract maps (float -> 'd')."""
    t = pika_table()
    t.update({"t-float": 0.1, "u-float-big": -1.7976931348623157e308})
    return t


# -- normalisation ------------------------------------------------------------------------------
def norm(value: Any) -> Any:
    """Comparable form of a table value. Bools are tagged so True never equals 1; bytearray and
    bytes compare equal; datetimes compare as whole POSIX seconds (the wire carries seconds)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ("bytes", bytes(value))
    if isinstance(value, dt.datetime):
        v = value if value.tzinfo else value.replace(tzinfo=UTC)
        return ("time", int(v.timestamp()))
    if isinstance(value, float):
        return ("float", value)
    if isinstance(value, Decimal):
        return ("decimal", value)
    if isinstance(value, dict):
        return {str(k): norm(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [norm(v) for v in value]
    return value


def norm_field(wire_type: str, value: Any) -> Any:
    """Comparable form of a method argument / property by its wire type."""
    if value is None:
        return None
    if wire_type == "longstr":  # peers differ (pika: bytes, pamqp: str): compare the octets
        return value.encode() if isinstance(value, str) else bytes(value)
    if wire_type == "timestamp":  # pika: int seconds, pamqp: datetime
        if isinstance(value, dt.datetime):
            v = value if value.tzinfo else value.replace(tzinfo=UTC)
            return int(v.timestamp())
        return int(value)
    if wire_type == "bit":
        return ("bool", bool(value)) if isinstance(value, bool) else ("not-bool", value)
    if wire_type == "table":
        return norm(value)
    return value


def drop_floats(value: Any) -> Any:
    """pika decodes 'f' and 'd' through int() (pika/data.py decode_value), so a float cannot survive
    a trip through pika; comparisons that go through pika's decoder leave floats out."""
    if isinstance(value, dict):
        return {k: drop_floats(v) for k, v in value.items() if not isinstance(v, float)}
    if isinstance(value, list):
        return [drop_floats(v) for v in value if not isinstance(v, float)]
    return value


# -- an independent table walker (from the 0-9-1 errata grammar) -------------------------------
FIXED = {"t": 1, "b": 1, "B": 1, "s": 2, "u": 2, "U": 2, "I": 4, "i": 4, "l": 8, "L": 8, "f": 4, "d": 8, "D": 5,
         "T": 8, "V": 0}


def table_codes(buf: bytes, offset: int = 0) -> tuple[Any, int]:
    """The type-code tree of an encoded table: {key: code or (code, subtree)}. Used to decide
    where two encoders chose the same codes (then their bytes must be identical)."""
    (size,) = struct.unpack_from(">I", buf, offset)
    pos, end = offset + 4, offset + 4 + size
    out: list[tuple[str, Any]] = []
    while pos < end:
        klen = buf[pos]
        key = bytes(buf[pos + 1 : pos + 1 + klen]).decode()
        code, pos = _value_codes(buf, pos + 1 + klen)
        out.append((key, code))
    return tuple(out), end


def _value_codes(buf: bytes, pos: int) -> tuple[Any, int]:
    code = chr(buf[pos])
    pos += 1
    if code in FIXED:
        return code, pos + FIXED[code]
    if code in "Sx":
        (n,) = struct.unpack_from(">I", buf, pos)
        return code, pos + 4 + n
    if code == "F":
        sub, pos = table_codes(buf, pos)
        return (code, sub), pos
    if code == "A":
        (n,) = struct.unpack_from(">I", buf, pos)
        end, items = pos + 4 + n, []
        pos += 4
        while pos < end:
            c, pos = _value_codes(buf, pos)
            items.append(c)
        return (code, tuple(items)), end
    raise ValueError(f"unknown type code {code!r}")


# -- values per field ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Variant:
    name: str
    bits: Callable[[int], bool]  # bit value by its position among the method's bit fields


VARIANTS = (
    Variant("max", lambda i: True),
    Variant("min", lambda i: False),
    Variant("alt", lambda i: i % 2 == 0),
    Variant("alt-inv", lambda i: i % 2 == 1),
)


def only(k: int) -> Callable[[int], bool]:
    """A bit (or property) pattern with position ``k`` alone set."""
    return lambda i: i == k


def single_bit_variants(n: int) -> list[Variant]:
    return [Variant(f"bit{k}", only(k)) for k in range(n)]


def field_value(f: Field, variant: str, bit_index: int, bitv: bool, table: dict[str, Any], seed: int,
                longlong_max: int) -> Any:
    """A value for one argument, derived from its wire type and asserts."""
    t = f.type
    if t == "bit":
        return bitv
    if t in INT_MAX:
        if variant == "min":
            return 0
        if variant == "max":
            return longlong_max if t == "longlong" else INT_MAX[t]
        return INT_PATTERN[t] if t != "longlong" else min(INT_PATTERN[t], longlong_max)
    if t == "timestamp":
        return {"min": 0, "max": 2**32 - 1}.get(variant, int(T0.timestamp()))
    if t == "shortstr":
        if constrained(f):
            return {"min": "", "max": name_text(127, seed)}.get(variant, name_text(5 + seed % 30, seed))
        return {"min": "", "max": utf8_text(255, f.name)}.get(variant, utf8_text(40 + seed % 50, f.name))
    if t == "longstr":
        return {"min": "", "max": utf8_text(70000, f.name)}.get(variant, utf8_text(300 + seed, f.name))
    if t == "table":
        return {} if variant == "min" else table
    raise AssertionError(f"no value rule for wire type {t}")


def method_values(m: Method, variant: Variant, table: dict[str, Any], longlong_max: int,
                  reserved: dict[str, Any]) -> dict[str, Any]:
    """Values by canonical field name. Reserved fields take the value ``reserved`` gives (the
    peer's default, which its validators insist on)."""
    out: dict[str, Any] = {}
    bit_i = 0
    for i, f in enumerate(m.fields):
        bitv = variant.bits(bit_i) if f.type == "bit" else False
        if f.type == "bit":
            bit_i += 1
        if f.reserved:
            out[f.name] = reserved[f.name]
            continue
        out[f.name] = field_value(f, variant.name, bit_i, bitv, table, seed=m.index + 13 * i,
                                  longlong_max=longlong_max)
    return out


# -- peers ---------------------------------------------------------------------------------------
@dataclass
class PeerMethod:
    index: tuple[int, int]
    name: str
    cls: Any  # the peer's method class
    params: tuple[str, ...]  # argument names in wire order
    types: tuple[str, ...] | None  # wire types when the peer declares them


def pika_methods() -> Iterator[PeerMethod]:
    """Every Method subclass nested in a pika.spec Class subclass."""
    for ccls in vars(pika.spec).values():
        if not (inspect.isclass(ccls) and issubclass(ccls, pika.amqp_object.Class)) or ccls is pika.amqp_object.Class:
            continue
        for mcls in vars(ccls).values():
            m: Any = mcls
            if inspect.isclass(m) and issubclass(m, pika.amqp_object.Method):
                params = tuple(p for p in inspect.signature(m.__init__).parameters if p != "self")
                idx: int = vars(m)["INDEX"]
                yield PeerMethod((idx >> 16, idx & 0xFFFF), vars(m)["NAME"], m, params, None)


def pamqp_methods() -> Iterator[PeerMethod]:
    """Every pamqp.base.Frame subclass nested in a pamqp.commands class."""
    for ccls in vars(pamqp.commands).values():
        if not (inspect.isclass(ccls) and hasattr(ccls, "frame_id")) or issubclass(ccls, pamqp.base._AMQData):
            continue
        for mcls in vars(ccls).values():
            if inspect.isclass(mcls) and issubclass(mcls, pamqp.base.Frame):
                params = tuple(mcls.__slots__)
                types = tuple(mcls.amqp_type(p) for p in params)
                idx = mcls.index
                yield PeerMethod((idx >> 16, idx & 0xFFFF), mcls.name, mcls, params, types)


def pika_defaults(pm: PeerMethod) -> dict[str, Any]:
    sig = inspect.signature(pm.cls.__init__)
    return {p: sig.parameters[p].default for p in pm.params}


def pamqp_defaults(pm: PeerMethod) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pamqp warns on methods 0-9-1 deprecates
        obj = pm.cls()
    return {p: getattr(obj, p) for p in pm.params}


def pika_encode(pm: PeerMethod, kwargs: dict[str, Any]) -> bytes:
    return b"".join(pm.cls(**kwargs).encode())


def pika_decode(pm: PeerMethod, data: bytes) -> dict[str, Any]:
    obj = pm.cls.__new__(pm.cls)
    obj.decode(data, 0)
    return {p: getattr(obj, p) for p in pm.params}


def pamqp_encode(pm: PeerMethod, kwargs: dict[str, Any]) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pamqp warns on methods 0-9-1 deprecates
        data: bytes = pm.cls(**kwargs).marshal()
    return data


def pamqp_decode(pm: PeerMethod, data: bytes) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        obj = pm.cls()
        obj.unmarshal(data)
    return {p: getattr(obj, p) for p in pm.params}


def pamqp_props_encode(kwargs: dict[str, Any]) -> bytes:
    """Flag words + values, as pamqp writes them into a content header (after class/weight/size)."""
    props = pamqp.commands.Basic.Properties(**kwargs)
    return pamqp.header.ContentHeader(0, 0, props).marshal()[12:]


def pamqp_props_decode(data: bytes) -> dict[str, Any]:
    header = pamqp.header.ContentHeader()
    header.unmarshal(struct.pack(">HHQ", 60, 0, 0) + data)
    return dict(iter(header.properties))


PIKA_PROP_PARAMS = tuple(p for p in inspect.signature(pika.spec.BasicProperties.__init__).parameters if p != "self")
PAMQP_PROP_PARAMS = tuple(pamqp.commands.Basic.Properties.__slots__)
PAMQP_PROP_TYPES = tuple(pamqp.commands.Basic.Properties.amqp_type(p) for p in PAMQP_PROP_PARAMS)
