"""The reference codec behind the conformance corpus (``amqgen vectors``).

It walks the model's classes, methods and fields and nothing else: bit grouping and property flag
positions are recomputed here from field order and wire types, type codes have their own table,
integers go through ``int.to_bytes``. It shares no code with any generated target (nor with the
lowering that targets read), so a mistake in one does not hide in the other; the project's tests
check it against pika, pamqp and py-amqp. It is written for clarity, not speed.

Values are plain Python: bit -> bool; octet/short/long/longlong/timestamp -> int; shortstr -> str;
longstr -> bytes; table -> :data:`Table`. A table is a list of ``(key, (code, value))`` entries in
wire order; table values are: t bool, integer codes int, f/d the IEEE-754 bit pattern as an int,
D ``(scale, unscaled)``, S/x (and qpid s) bytes, T int, F Table, A list of ``(code, value)``, V None.
"""

from __future__ import annotations

from typing import Any

from .model import Class, Field, Method, Spec

Typed = tuple[str, Any]
Table = list[tuple[str, Typed]]

FRAME_END = 0xCE
FRAME_TYPES = {1: "method", 2: "header", 3: "body", 8: "heartbeat"}
MAX_DEPTH = 100  # tables and arrays, the outermost counting as 1

# code -> (octets, signed) for the integer codes every dialect shares
_INTS = {"b": (1, True), "B": (1, False), "u": (2, False), "U": (2, True), "I": (4, True), "i": (4, False),
         "L": (8, True)}
_WIRE_INTS = {"octet": 1, "short": 2, "long": 4, "longlong": 8, "timestamp": 8}


class RefError(Exception):
    """A decoding failure of one kind of the corpus (``truncated``, ``table``...)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


def int_codes(dialect: str) -> dict[str, tuple[int, bool]]:
    extra = {"s": (2, True), "l": (8, True)} if dialect == "rabbitmq" else {"l": (8, False)}
    return {**_INTS, **extra}


def _u(n: int, size: int) -> bytes:
    return n.to_bytes(size, "big", signed=False)


# -- encoding --------------------------------------------------------------------------------------
def encode_value(code: str, value: Any, dialect: str) -> bytes:
    """The type code octet and the value's octets."""
    ints = int_codes(dialect)
    head = code.encode("ascii")
    if code in ints:
        size, signed = ints[code]
        return head + int(value).to_bytes(size, "big", signed=signed)
    if code == "t":
        return head + (b"\x01" if value else b"\x00")
    if code == "f":
        return head + _u(value, 4)
    if code == "d":
        return head + _u(value, 8)
    if code == "D":
        scale, unscaled = value
        return head + _u(scale, 1) + int(unscaled).to_bytes(4, "big", signed=True)
    if code in ("S", "x"):
        return head + _u(len(value), 4) + bytes(value)
    if code == "s":  # qpid: a short string
        return head + _u(len(value), 1) + bytes(value)
    if code == "T":
        return head + _u(value, 8)
    if code == "F":
        return head + encode_table(value, dialect)
    if code == "A":
        return head + encode_array(value, dialect)
    if code == "V":
        return head
    raise ValueError(f"no type code {code!r}")


def table_body(table: Table, dialect: str) -> bytes:
    """A field table's entries, without its length."""
    body = b""
    for key, (code, value) in table:
        k = key.encode("utf-8")
        body += _u(len(k), 1) + k + encode_value(code, value, dialect)
    return body


def encode_table(table: Table, dialect: str) -> bytes:
    """A field table with its 4-octet length."""
    body = table_body(table, dialect)
    return _u(len(body), 4) + body


def encode_array(items: list[Typed], dialect: str) -> bytes:
    body = b"".join(encode_value(code, value, dialect) for code, value in items)
    return _u(len(body), 4) + body


def _encode_field(wire: str, value: Any, dialect: str) -> bytes:
    if wire in _WIRE_INTS:
        return _u(value, _WIRE_INTS[wire])
    if wire == "shortstr":
        raw = str(value).encode("utf-8")
        return _u(len(raw), 1) + raw
    if wire == "longstr":
        return _u(len(value), 4) + bytes(value)
    if wire == "table":
        return encode_table(value, dialect)
    raise ValueError(f"no wire type {wire!r}")


def encode_arguments(fields: tuple[Field, ...], values: dict[str, Any], dialect: str) -> bytes:
    """Method arguments in order; consecutive bits share octets, first bit in the lowest bit."""
    out = bytearray()
    bit_octet = -1  # index in out of the octet collecting the current run of bits
    nbits = 0
    for f in fields:
        if f.type == "bit":
            if bit_octet < 0 or nbits == 8:
                out.append(0)
                bit_octet, nbits = len(out) - 1, 0
            if values[f.name]:
                out[bit_octet] |= 1 << nbits
            nbits += 1
            continue
        bit_octet = -1
        out += _encode_field(f.type, values[f.name], dialect)
    return bytes(out)


def encode_method(m: Method, values: dict[str, Any], dialect: str) -> bytes:
    """A method frame payload: class id, method id, arguments."""
    return _u(m.class_index, 2) + _u(m.index, 2) + encode_arguments(m.fields, values, dialect)


def flag_position(i: int) -> tuple[int, int]:
    """Property ``i`` of a class: (flag word, bit). 15 properties per word, the first at bit 15;
    bit 0 of a word says another word follows."""
    return i // 15, 15 - i % 15


def encode_properties(c: Class, values: dict[str, Any], dialect: str) -> bytes:
    """Flag words (as few as the present properties need, at least one), then the properties."""
    words = [0] * max(1, (len(c.properties) + 14) // 15)
    body = b""
    for i, p in enumerate(c.properties):
        if p.name not in values:
            continue
        word, bit = flag_position(i)
        if p.type == "bit":  # a bit property is its flag; no octets follow
            if values[p.name]:
                words[word] |= 1 << bit
            continue
        words[word] |= 1 << bit
        body += _encode_field(p.type, values[p.name], dialect)
    while len(words) > 1 and words[-1] == 0:
        words.pop()
    flags = b"".join(_u(w | (1 if i < len(words) - 1 else 0), 2) for i, w in enumerate(words))
    return flags + body


def encode_header(c: Class, body_size: int, values: dict[str, Any], dialect: str) -> bytes:
    """A content header payload: class id, weight 0, body size, flags, properties."""
    return _u(c.index, 2) + _u(0, 2) + _u(body_size, 8) + encode_properties(c, values, dialect)


def encode_frame(ftype: int, channel: int, payload: bytes) -> bytes:
    return _u(ftype, 1) + _u(channel, 2) + _u(len(payload), 4) + payload + _u(FRAME_END, 1)


def encode_message(m: Method, values: dict[str, Any], c: Class, properties: dict[str, Any], body: bytes,
                   channel: int, frame_max: int, dialect: str) -> bytes:
    """Method frame, header frame, then body frames of at most ``frame_max`` octets (0: one frame)."""
    out = encode_frame(1, channel, encode_method(m, values, dialect))
    out += encode_frame(2, channel, encode_header(c, len(body), properties, dialect))
    chunk = frame_max - 8 if frame_max else max(len(body), 1)
    for i in range(0, len(body), chunk):
        out += encode_frame(3, channel, body[i : i + chunk])
    return out


# -- decoding --------------------------------------------------------------------------------------
class Reader:
    """Reads a bounded region of octets; running past its end is ``truncated`` (or, inside a
    table, ``table``)."""

    def __init__(self, data: bytes, start: int = 0, end: int | None = None, past: str = "truncated") -> None:
        self.data = data
        self.pos = start
        self.end = len(data) if end is None else end
        self.past = past

    def take(self, n: int, what: str) -> bytes:
        if self.pos + n > self.end:
            raise RefError(self.past, f"{what} needs {n} octets, {self.end - self.pos} left")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def uint(self, n: int, what: str) -> int:
        return int.from_bytes(self.take(n, what), "big")

    def text(self, what: str) -> str:
        raw = self.take(self.uint(1, what + " length"), what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise RefError("invalid-utf8", f"{what} is not UTF-8") from None

    def left(self) -> int:
        return self.end - self.pos


def _decode_value(r: Reader, dialect: str, depth: int) -> Typed:
    code_octet = r.uint(1, "type code")
    code = chr(code_octet)
    ints = int_codes(dialect)
    if code in ints:
        size, signed = ints[code]
        return code, int.from_bytes(r.take(size, code), "big", signed=signed)
    if code == "t":
        return code, r.uint(1, "t") != 0
    if code == "f":
        return code, r.uint(4, "f")
    if code == "d":
        return code, r.uint(8, "d")
    if code == "D":
        scale = r.uint(1, "D scale")
        return code, (scale, int.from_bytes(r.take(4, "D"), "big", signed=True))
    if code in ("S", "x"):
        return code, r.take(r.uint(4, code + " length"), code)
    if code == "s" and dialect == "qpid":
        raw = r.take(r.uint(1, "s length"), "s")
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            raise RefError("invalid-utf8", "a short string table value is not UTF-8") from None
        return code, raw
    if code == "T":
        return code, r.uint(8, "T")
    if code in ("F", "A"):
        size = r.uint(4, code + " length")
        if r.pos + size > r.end:
            raise RefError("table", f"a nested {code} of {size} octets runs past its container")
        inner = Reader(r.data, r.pos, r.pos + size, past="table")
        value: Any = _table_body(inner, dialect, depth + 1) if code == "F" else _array_body(inner, dialect, depth + 1)
        r.pos += size
        return code, value
    if code == "V":
        return code, None
    raise RefError("table", f"unknown type code {code_octet:#04x}")


def _table_body(r: Reader, dialect: str, depth: int) -> Table:
    if depth > MAX_DEPTH:
        raise RefError("table-depth", f"tables nested {depth} deep")
    out: Table = []
    while r.left():
        key = r.text("table key")
        out.append((key, _decode_value(r, dialect, depth)))
    return out


def _array_body(r: Reader, dialect: str, depth: int) -> list[Typed]:
    if depth > MAX_DEPTH:
        raise RefError("table-depth", f"arrays nested {depth} deep")
    out: list[Typed] = []
    while r.left():
        out.append(_decode_value(r, dialect, depth))
    return out


def _decode_container(r: Reader, dialect: str, array: bool) -> Any:
    size = r.uint(4, "table length")
    if r.pos + size > r.end:
        raise RefError("truncated", f"a table of {size} octets, {r.left()} left")
    inner = Reader(r.data, r.pos, r.pos + size, past="table")
    value = _array_body(inner, dialect, 1) if array else _table_body(inner, dialect, 1)
    r.pos += size
    return value


def decode_table(data: bytes, dialect: str) -> Table:
    """A field table (4-octet length, entries), using up ``data`` exactly."""
    r = Reader(data)
    table = _decode_container(r, dialect, array=False)
    if r.left():
        raise RefError("trailing-data", f"{r.left()} octets after the table")
    return table  # type: ignore[no-any-return]


def decode_array(data: bytes, dialect: str) -> list[Typed]:
    r = Reader(data)
    items = _decode_container(r, dialect, array=True)
    if r.left():
        raise RefError("trailing-data", f"{r.left()} octets after the array")
    return items  # type: ignore[no-any-return]


def _decode_field(r: Reader, wire: str, dialect: str, what: str) -> Any:
    if wire in _WIRE_INTS:
        return r.uint(_WIRE_INTS[wire], what)
    if wire == "shortstr":
        return r.text(what)
    if wire == "longstr":
        return r.take(r.uint(4, what + " length"), what)
    if wire == "table":
        return _decode_container(r, dialect, array=False)
    raise ValueError(wire)


def decode_method(spec: Spec, data: bytes, dialect: str) -> tuple[Method, dict[str, Any]]:
    r = Reader(data)
    class_id = r.uint(2, "class id")
    method_id = r.uint(2, "method id")
    cls = next((c for c in spec.classes if c.index == class_id), None)
    if cls is None:
        raise RefError("unknown-class", f"class {class_id}")
    m = next((x for x in cls.methods if x.index == method_id), None)
    if m is None:
        raise RefError("unknown-method", f"method {method_id} of class {cls.name}")
    values: dict[str, Any] = {}
    bits = 0
    nbits = 8  # no octet of bits open
    for f in m.fields:
        if f.type == "bit":
            if nbits == 8:
                bits, nbits = r.uint(1, f.path), 0
            values[f.name] = bool(bits >> nbits & 1)
            nbits += 1
            continue
        nbits = 8
        values[f.name] = _decode_field(r, f.type, dialect, f.path)
    if r.left():
        raise RefError("trailing-data", f"{r.left()} octets after {m.full_name}'s arguments")
    return m, values


def decode_header(spec: Spec, data: bytes, dialect: str) -> tuple[Class, int, dict[str, Any]]:
    """A content header payload: (class, body size, present properties)."""
    r = Reader(data)
    class_id = r.uint(2, "class id")
    r.uint(2, "weight")
    body_size = r.uint(8, "body size")
    cls = next((c for c in spec.classes if c.index == class_id), None)
    if cls is None or not cls.has_content:
        raise RefError("unknown-class", f"class {class_id} carries no content")
    nwords = max(1, (len(cls.properties) + 14) // 15)
    words = []
    while True:
        w = r.uint(2, "property flags")
        words.append(w)
        if not w & 1:
            break
        if len(words) == nwords:
            raise RefError("property-flags", f"{cls.name} has {nwords} flag word(s); the last says more follow")
    values: dict[str, Any] = {}
    known = set()
    for i, p in enumerate(cls.properties):
        word, bit = flag_position(i)
        known.add((word, bit))
        if word < len(words) and words[word] >> bit & 1:
            values[p.name] = True if p.type == "bit" else _decode_field(r, p.type, dialect, f"{cls.name}.{p.name}")
    for wi, w in enumerate(words):
        for bit in range(1, 16):
            if w >> bit & 1 and (wi, bit) not in known:
                raise RefError("property-flags", f"flag word {wi} bit {bit}: {cls.name} has no such property")
    if r.left():
        raise RefError("trailing-data", f"{r.left()} octets after {cls.name}'s properties")
    return cls, body_size, values


def read_frames(spec: Spec, data: bytes, frame_max: int, dialect: str) -> list[dict[str, Any]]:
    """Every frame in ``data``, each decoded; ``frame_max`` 0 means no limit. Data that ends
    inside a frame is ``truncated`` (a stream reader would wait for more)."""
    frames: list[dict[str, Any]] = []
    pos = 0
    while pos < len(data):
        if data[pos] == 0x41:  # "A": a protocol header
            if data[pos : pos + 4] != b"AMQP":
                raise RefError("frame-type", "an octet 'A' that does not start 'AMQP'")
            if len(data) - pos < 8:
                raise RefError("truncated", "a protocol header of fewer than 8 octets")
            frames.append({"type": "protocol-header", "bytes": data[pos : pos + 8]})
            pos += 8
            continue
        if data[pos] not in FRAME_TYPES:
            raise RefError("frame-type", f"frame type {data[pos]}")
        if len(data) - pos < 7:
            raise RefError("truncated", "a frame header of fewer than 7 octets")
        ftype = FRAME_TYPES[data[pos]]
        channel = int.from_bytes(data[pos + 1 : pos + 3], "big")
        size = int.from_bytes(data[pos + 3 : pos + 7], "big")
        if frame_max and size + 8 > frame_max:
            raise RefError("frame-size", f"a frame of {size + 8} octets over frame_max {frame_max}")
        end = pos + 7 + size
        if end >= len(data):
            raise RefError("truncated", "the data ends inside a frame")
        if data[end] != FRAME_END:
            raise RefError("frame-end", f"frame-end octet {data[end]:#04x}")
        payload = data[pos + 7 : end]
        frame: dict[str, Any] = {"type": ftype, "channel": channel}
        if ftype == "method":
            m, values = decode_method(spec, payload, dialect)
            frame.update(method=m.full_name, values=values)
        elif ftype == "header":
            c, body_size, props = decode_header(spec, payload, dialect)
            frame.update({"class": c.name, "class_id": c.index, "body_size": body_size, "values": props})
        elif ftype == "body":
            frame["payload"] = payload
        pos = end + 1
        frames.append(frame)
    return frames
