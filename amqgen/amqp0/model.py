"""The one typed, lowered model of an AMQP 0-8 / 0-9 / 0-9-1 spec that every target reads.

Everything here is immutable. Wire arithmetic (bit packing, property flags, fixed-size
prefixes) is computed once by :mod:`amqgen.lower`, so templates only format.
Names are canonical: lower case, words joined by hyphens (``prefetch-count``), whatever
separator the spec file used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from ..errors import Diagnostic, Location

WireType = Literal[
    "bit", "octet", "short", "long", "longlong", "timestamp", "shortstr", "longstr", "table"
]

#: Octets each wire type takes, or None when the size depends on the value.
#: A lone bit is None here: bits only exist on the wire packed into octets (see Slot).
WIRE_SIZES: dict[str, int | None] = {
    "bit": None,
    "octet": 1,
    "short": 2,
    "long": 4,
    "longlong": 8,
    "timestamp": 8,
    "shortstr": None,
    "longstr": None,
    "table": None,
}
WIRE_TYPES: tuple[str, ...] = tuple(WIRE_SIZES)

Level = Literal["MUST", "SHOULD", "MAY"]
Direction = Literal["client-to-server", "server-to-client", "both"]
ErrorClass = Literal["soft", "hard"]
AssertKind = Literal["notnull", "null", "length", "regexp", "le", "ne", "syntax", "enum"]
ASSERT_KINDS: tuple[str, ...] = ("notnull", "null", "length", "regexp", "le", "ne", "syntax", "enum")

#: Bits in one property flag word that carry properties; bit 0 is the continuation flag.
PROPERTIES_PER_FLAG_WORD = 15
#: Bit fields packed into one octet.
BITS_PER_OCTET = 8


@dataclass(frozen=True)
class Assert:
    """A machine-checkable constraint from an ``<assert>`` element."""

    check: AssertKind
    value: str | None  # length limit, ne operand, regexp as written in the spec
    syntax_rule: str | None  # check="syntax": the named syntax, e.g. "path"
    ref: str | None  # check="le": the field compared against, "connection.tune.channel-max"
    values: tuple[str, ...]  # check="enum": the allowed value names
    portable_value: str | None  # check="regexp": the pattern with suspicious ranges made literal
    loc: Location
    added_by: Location | None = None  # provenance: see Field
    changed_by: tuple[Location, ...] = ()


@dataclass(frozen=True)
class Rule:
    """A prose rule: ``id`` is the parent path plus the rule name, e.g. ``basic.consume.queue.01``."""

    name: str
    id: str
    parent: str  # "basic", "basic.consume", "basic.consume.queue", "domain.delivery-tag"
    level: Level | None  # strongest of MUST / SHOULD / MAY found in its text
    on_failure: str | None  # constant name, e.g. "access-refused"
    on_failure_code: int | None  # that constant's value
    doc: str
    scenario: str | None
    loc: Location
    added_by: Location | None = None  # provenance: see Field
    changed_by: tuple[Location, ...] = ()


@dataclass(frozen=True)
class Chassis:
    name: str  # "client" or "server"
    implement: Level
    loc: Location
    added_by: Location | None = None  # provenance: see Field
    changed_by: tuple[Location, ...] = ()


@dataclass(frozen=True)
class Constant:
    name: str
    value: int
    error_class: ErrorClass | None  # soft-error: channel exception; hard-error: connection exception
    doc: str
    loc: Location
    added_by: Location | None = None  # provenance: see Field
    changed_by: tuple[Location, ...] = ()


@dataclass(frozen=True)
class Domain:
    name: str
    type: WireType  # resolved through any chain of domains
    label: str | None
    doc: str
    asserts: tuple[Assert, ...]
    rules: tuple[Rule, ...]
    loc: Location
    added_by: Location | None = None  # provenance: see Field
    changed_by: tuple[Location, ...] = ()


@dataclass(frozen=True)
class Field:
    """A method argument or a content-class property."""

    name: str
    path: str  # "basic.consume.queue"
    domain: str | None  # None when the spec gives a wire type directly (type="...")
    type: WireType
    reserved: bool
    label: str | None
    doc: str
    asserts: tuple[Assert, ...]  # the field's own asserts, then its domain's
    rules: tuple[Rule, ...]  # the field's own rules (domain rules stay on the domain)
    loc: Location
    # Lowering, method arguments: bits share an octet slot; bit 0 is the first field of the run.
    slot: int | None = None  # index into Method.slots
    bit: int | None = None
    # Lowering, properties: flag word index and bit (15 = first property of a word).
    flag_word: int | None = None
    flag_bit: int | None = None
    # Provenance (spec overlays): the overlay element that added this one (None: the spec itself;
    # ``loc`` is then where it is defined), and the overlay elements that changed it, in the order applied.
    added_by: Location | None = None
    changed_by: tuple[Location, ...] = ()

    @property
    def size(self) -> int | None:
        return WIRE_SIZES[self.type]

    @property
    def flag_mask(self) -> int | None:
        return None if self.flag_bit is None else 1 << self.flag_bit


@dataclass(frozen=True)
class Slot:
    """One item on the wire: a single field, or one octet holding up to 8 consecutive bits."""

    kind: Literal["value", "bits"]
    type: WireType  # "octet" for a bit group
    fields: tuple[str, ...]  # field names; for bits, bit 0 first
    size: int | None  # octets, None when variable
    offset: int | None  # from the start of the arguments, while every earlier slot is fixed


@dataclass(frozen=True)
class Method:
    name: str
    full_name: str  # "basic.consume"
    class_name: str
    class_index: int
    index: int
    synchronous: bool
    content: bool
    deprecated: bool
    responses: tuple[str, ...]  # full names of the reply methods
    chassis: tuple[Chassis, ...]
    direction: Direction  # from chassis: server implements it -> client sends it
    fields: tuple[Field, ...]
    rules: tuple[Rule, ...]
    label: str | None
    doc: str
    loc: Location
    slots: tuple[Slot, ...]  # the codecs' runs over them: amqgen.plan
    fixed_prefix_size: int  # octets before the first variable-size slot
    added_by: Location | None = None  # provenance: see Field
    changed_by: tuple[Location, ...] = ()

    @property
    def id(self) -> tuple[int, int]:
        return (self.class_index, self.index)

    @property
    def is_reply(self) -> bool:
        return self.name.endswith("-ok")


# -- a class's grammar (<doc type="grammar">), parsed: amqgen.grammar ------------------------------------------
@dataclass(frozen=True)
class Terminal:
    """``C:START-OK`` / ``S:START``: the sender (C client, S server) and the method of the grammar's class it names
    (``method`` None when the class has no such method: a warning), or ``C:protocol-header``."""

    sender: Literal["client", "server"]
    name: str  # as written, lower case: "start-ok", "protocol-header"
    method: str | None  # the full name, "connection.start-ok"; None for the protocol header or an unknown name
    kind: Literal["terminal"] = "terminal"  # each grammar node says what it is (inspect --json)


@dataclass(frozen=True)
class NonTerminal:
    """A production's name used in another: ``*channel``, ``content``, ``functional-class``."""

    name: str
    defined_in: str | None  # the class whose grammar defines it; None: built in ("content") or undefined
    kind: Literal["nonterminal"] = "nonterminal"


@dataclass(frozen=True)
class Sequence:
    items: tuple[GrammarExpr, ...]
    kind: Literal["sequence"] = "sequence"


@dataclass(frozen=True)
class Choice:
    options: tuple[GrammarExpr, ...]
    kind: Literal["choice"] = "choice"


@dataclass(frozen=True)
class Repeat:
    """``*x`` (min 0, max None), ``1*x``, ``[x]`` (min 0, max 1)."""

    item: GrammarExpr
    min: int
    max: int | None
    kind: Literal["repeat"] = "repeat"


GrammarExpr = Terminal | NonTerminal | Sequence | Choice | Repeat


@dataclass(frozen=True)
class Production:
    name: str  # "open-connection"
    expr: GrammarExpr
    loc: Location  # the line it starts on


@dataclass(frozen=True)
class Class:
    name: str
    index: int
    handler: str | None
    label: str | None
    doc: str
    grammar: str | None  # line layout kept
    chassis: tuple[Chassis, ...]
    properties: tuple[Field, ...]
    methods: tuple[Method, ...]
    rules: tuple[Rule, ...]
    loc: Location
    property_flag_words: int  # flag words a content header for this class carries (>= 1)
    added_by: Location | None = None  # provenance: see Field
    changed_by: tuple[Location, ...] = ()
    productions: tuple[Production, ...] = ()  # the grammar parsed (amqgen.grammar), in the order written

    @property
    def property_flag_masks(self) -> tuple[int, ...]:
        """Per flag word, the bits of the properties this class has (bit 0, the continuation flag, is never
        one of them): what a decoder accepts, and the complement of what it must refuse."""
        masks = [0] * self.property_flag_words
        for p in self.properties:
            masks[p.flag_word or 0] |= p.flag_mask or 0
        return tuple(masks)

    @property
    def has_content(self) -> bool:
        return bool(self.properties) or any(m.content for m in self.methods)

    @cached_property
    def method_by_name(self) -> dict[str, Method]:
        return {m.name: m for m in self.methods}

    @cached_property
    def method_by_index(self) -> dict[int, Method]:
        return {m.index: m for m in self.methods}


@dataclass(frozen=True)
class Overlay:
    """An overlay file applied to the spec (``--overlay``), in the order applied."""

    name: str  # file name
    sha256: str
    removed: tuple[Location, ...]  # each element it removed: path, and the overlay line that removed it


@dataclass(frozen=True)
class Spec:
    name: str  # file name of the source, e.g. "amqp0-9.xml"
    family: Literal["0-8", "0-9", "0-9-1"]
    major: int  # as written in the file (0-8 files say major 8, minor 0)
    minor: int
    revision: int
    port: int
    comment: str | None
    sha256: str
    constants: tuple[Constant, ...]
    domains: tuple[Domain, ...]
    classes: tuple[Class, ...]
    warnings: tuple[Diagnostic, ...] = field(default=())
    overlays: tuple[Overlay, ...] = field(default=())

    @property
    def title(self) -> str:
        """The spec's file name, then each overlay's: ``amqp0-9-1.xml + rabbitmq.xml``."""
        return " + ".join((self.name, *(o.name for o in self.overlays)))

    @property
    def origin(self) -> str:
        """What generated files say they come from: every input file with its sha256."""
        return " + ".join(f"{n} (sha256 {h})" for n, h in ((self.name, self.sha256),
                                                             *((o.name, o.sha256) for o in self.overlays)))

    @cached_property
    def class_by_index(self) -> dict[int, Class]:
        return {c.index: c for c in self.classes}

    @cached_property
    def class_by_name(self) -> dict[str, Class]:
        return {c.name: c for c in self.classes}

    @cached_property
    def method_by_id(self) -> dict[tuple[int, int], Method]:
        return {m.id: m for c in self.classes for m in c.methods}

    @cached_property
    def method_by_name(self) -> dict[str, Method]:
        return {m.full_name: m for c in self.classes for m in c.methods}

    @cached_property
    def constant_by_name(self) -> dict[str, Constant]:
        return {c.name: c for c in self.constants}

    @cached_property
    def domain_by_name(self) -> dict[str, Domain]:
        return {d.name: d for d in self.domains}

    def name_scopes(self) -> list[tuple[str, str, list[tuple[str, Location | None]]]]:
        """Where a target declares names, for the naming layer's collision check: (scope, role, names)."""
        scopes: list[tuple[str, str, list[tuple[str, Location | None]]]] = [
            ("classes", "type", [(c.name, c.loc) for c in self.classes]),
            ("constants", "constant", [(c.name, c.loc) for c in self.constants]),
            ("method types", "type", [(f"{m.class_name}-{m.name}", m.loc) for m in self.methods]),
            ("domains", "type", [(d.name, d.loc) for d in self.domains]),
        ]
        for c in self.classes:
            scopes.append((f"{c.name} properties", "member", [(p.name, p.loc) for p in c.properties]))
            scopes.extend((f"{m.full_name} fields", "member", [(f.name, f.loc) for f in m.fields]) for m in c.methods)
        return scopes

    @property
    def protocol_header(self) -> bytes:
        """The 8 octets a client opens a connection with. 0-9-1: "AMQP" 0 0 9 1 (protocol id 0,
        then major minor revision). 0-8 and 0-9, from before the 0-9-1 renumbering: "AMQP" 1 1
        then major and minor as the file writes them: AMQP 1 1 8 0 for 0-8 (files say major 8,
        minor 0) and AMQP 1 1 0 9 for 0-9."""
        if self.family == "0-9-1":
            return b"AMQP" + bytes([0, self.major, self.minor, self.revision])
        return b"AMQP" + bytes([1, 1, self.major, self.minor])

    @property
    def methods(self) -> tuple[Method, ...]:
        return tuple(m for c in self.classes for m in c.methods)

    @property
    def content_classes(self) -> tuple[Class, ...]:
        return tuple(c for c in self.classes if c.has_content)

    @property
    def reply_codes(self) -> tuple[Constant, ...]:
        """Constants that are reply codes: the error ones, plus reply-success."""
        return tuple(
            c for c in self.constants if c.error_class is not None or c.name == "reply-success"
        )

    def all_rules(self) -> tuple[Rule, ...]:
        """Every rule in document order: domains, then per class its rules, properties, methods, fields."""
        out: list[Rule] = []
        for d in self.domains:
            out.extend(d.rules)
        for c in self.classes:
            out.extend(c.rules)
            for p in c.properties:
                out.extend(p.rules)
            for m in c.methods:
                out.extend(m.rules)
                for f in m.fields:
                    out.extend(f.rules)
        return tuple(out)

    def all_asserts(self) -> tuple[Assert, ...]:
        """Every assert element once (domain asserts counted on the domain, not per field)."""
        out: list[Assert] = []
        for d in self.domains:
            out.extend(d.asserts)
        for c in self.classes:
            for f in (*c.properties, *(f for m in c.methods for f in m.fields)):
                out.extend(a for a in f.asserts if a.loc.path == f.path)
        return tuple(out)
