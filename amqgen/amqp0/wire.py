"""Wire facts every target shares that the spec file itself does not state.

The spec gives classes, methods, fields and most constants; these come from the protocol's prose
(the protocol header layout, the field-table type codes of each dialect) or fill constants some
spec files omit. Targets read them from here (through the render context), never from another
target's hook. The reference codec (:mod:`amqgen.refcodec`) deliberately keeps its own copy, so a
mistake here cannot hide in the conformance corpus.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: Frame constants every target defines, with the value all three families give them; a spec
#: file that lacks one still gets it.
FRAME_DEFAULTS: dict[str, int] = {
    "frame-method": 1,
    "frame-header": 2,
    "frame-body": 3,
    "frame-heartbeat": 8,
    "frame-end": 206,
    "frame-min-size": 4096,
}

#: The frame header, field by field with its octets: type, channel, payload size.
FRAME_HEADER: tuple[tuple[str, int], ...] = (("type", 1), ("channel", 2), ("size", 4))
#: Octets of a frame outside its payload: the header (7) and the frame-end octet (1).
FRAME_OVERHEAD = sum(n for _, n in FRAME_HEADER) + 1
#: What a method frame's payload starts with, before the method's arguments.
METHOD_ID: tuple[tuple[str, int], ...] = (("class-id", 2), ("method-id", 2))
#: A content header payload before its property flags, field by field with its octets.
CONTENT_HEADER: tuple[tuple[str, int], ...] = (("class-id", 2), ("weight", 2), ("body-size", 8))
#: Octets of a content header payload before its property flags: class id, weight, body size.
HEADER_PREFIX = sum(n for _, n in CONTENT_HEADER)
#: Octets of a property flag word, and its bit that says another word follows.
FLAG_WORD_SIZE = 2
FLAG_CONTINUATION = 0x0001
#: Deepest nesting of field tables and arrays a decoder accepts (the outermost counts as 1).
MAX_TABLE_DEPTH = 100

TypeKind = Literal[
    "bool", "int", "float", "decimal", "longstr", "shortstr", "bytes", "timestamp", "table", "array", "void"
]


@dataclass(frozen=True)
class TypeCode:
    """One field-table type code: what its value is and how many octets it takes."""

    code: str
    kind: TypeKind
    size: int | None = None  # int and float: octets of the value; None when variable or n/a
    signed: bool = False


_COMMON = (
    TypeCode("t", "bool", 1),
    TypeCode("b", "int", 1, True),
    TypeCode("B", "int", 1),
    TypeCode("u", "int", 2),
    TypeCode("U", "int", 2, True),
    TypeCode("I", "int", 4, True),
    TypeCode("i", "int", 4),
    TypeCode("L", "int", 8, True),
    TypeCode("f", "float", 4),
    TypeCode("d", "float", 8),
    TypeCode("D", "decimal", 5),
    TypeCode("S", "longstr"),
    TypeCode("x", "bytes"),
    TypeCode("T", "timestamp", 8),
    TypeCode("F", "table"),
    TypeCode("A", "array"),
    TypeCode("V", "void", 0),
)

#: The type codes of each table dialect, in the order "t b B s u U I i l L f d D S x T F A V".
#: rabbitmq: RabbitMQ's / the 0-9-1 errata's reading (what pika, pamqp, py-amqp and the RabbitMQ
#: clients use); qpid: the 0-9-1 spec's own grammar, as Qpid reads it. They differ in s and l.
TYPE_CODES: dict[str, tuple[TypeCode, ...]] = {
    "rabbitmq": (*_COMMON[:3], TypeCode("s", "int", 2, True), *_COMMON[3:7], TypeCode("l", "int", 8, True), *_COMMON[7:]),
    "qpid": (*_COMMON[:3], TypeCode("s", "shortstr"), *_COMMON[3:7], TypeCode("l", "int", 8, False), *_COMMON[7:]),
}
DIALECTS: tuple[str, ...] = tuple(TYPE_CODES)
DEFAULT_DIALECT = "rabbitmq"


def type_code(dialect: str, code: str) -> TypeCode:
    for t in TYPE_CODES[dialect]:
        if t.code == code:
            return t
    raise KeyError(code)
