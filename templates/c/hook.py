"""The C target's hook: its type map, the C identifiers of the pack's fixed API, and the codec plans
the templates format (one bounds check per run of fixed-size fields, bit groups, flag words).

Shared facts come from the model (slots, segments, flag words), ``amqgen.wire`` and ``amqgen.policy``;
this file only maps them to C.
"""

import re
from dataclasses import dataclass, field
from typing import Any

from amqgen.errors import RenderError
from amqgen.policy import PATH_SYNTAX, SYNTAX_ERROR_CODE
from amqgen.policy import checks as policy_checks
from amqgen.wire import FRAME_DEFAULTS, FRAME_OVERHEAD, HEADER_PREFIX, MAX_TABLE_DEPTH, TYPE_CODES

#: wire type -> C type of a struct member
C_TYPE = {
    "bit": "bool", "octet": "uint8_t", "short": "uint16_t", "long": "uint32_t", "longlong": "uint64_t",
    "timestamp": "uint64_t", "shortstr": "{p}_bytes_t", "longstr": "{p}_bytes_t", "table": "{p}_table_t",
}
#: fixed-size wire types: octets and the internal get/put helper suffix
FIXED = {"octet": (1, "8"), "short": (2, "16"), "long": (4, "32"), "longlong": (8, "64"), "timestamp": (8, "64")}
#: the largest value of each integer wire type, as a C literal (round-trip tests)
INT_MAX = {"octet": "255u", "short": "65535u", "long": "4294967295u", "longlong": "UINT64_MAX",
           "timestamp": "UINT64_MAX"}
#: what the rest of the pack declares at file scope besides spec names (suffixes after "P_" / "PU_")
FIXED_FUNCTIONS = ("bytes", "table", "array", "decimal", "field_value", "table_iter", "table_writer", "frame",
                   "reader", "method", "content_header", "status_name", "method_name", "method_has_content",
                   "reply_name", "reply_class", "class_name", "protocol_header", "utf8_valid")


def check_prefix(prefix: str) -> str:
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", prefix) or prefix.endswith("_") or len(prefix) > 24:
        raise RenderError(f"option prefix={prefix!r} is not a C identifier prefix (a letter, then letters, digits, "
                          "underscores, not ending in '_')")
    return prefix


def comment(text: str, indent: str = "") -> str:
    """Spec text as the lines of a C block comment (no comment end, no trigraph or line splice)."""
    text = (text or "").strip().replace("*/", "* /").replace("??", "? ?").replace("\\", "/")
    return "\n".join(f"{indent} *" + (" " + ln.rstrip() if ln.strip() else "") for ln in text.split("\n"))


def inline(text: str) -> str:
    return " ".join(comment(text).replace(" *", " ").split())


@dataclass
class CField:
    name: str
    path: str
    ident: str
    wire: str
    ctype: str
    reserved: bool
    label: str
    index: int = 0  # properties: position in the class (bit of the presence mask)
    flag: str = ""  # properties: the presence constant
    flag_word: int = 0
    flag_mask: int = 0  # properties: the bit in its flag word
    bit_mask: int = 0  # method bits: the bit in their octet


@dataclass
class Step:
    """One slot of a fixed run: a value at an offset, or an octet of bits."""

    kind: str  # "value" or "bits"
    offset: int
    fields: list[CField]


@dataclass
class Group:
    """A run of fixed-size slots handled after one bounds check, then at most one variable-size field."""

    size: int = 0
    steps: list[Step] = field(default_factory=list)
    var: CField | None = None


@dataclass
class CMethod:
    model: Any
    struct: str
    fn: str  # function name stem: P_basic_publish
    const: str  # PU_BASIC_PUBLISH
    member: str  # basic_publish, in P_method_t's union
    key: int
    fields: list[CField]
    groups: list[Group]
    checks: list[dict[str, Any]]


@dataclass
class CProperties:
    model: Any
    struct: str
    fn: str
    member: str
    const: str  # PU_CLASS_BASIC
    fields: list[CField]
    words: int
    known: list[int]  # per flag word: bits of the properties this class has (continuation bit excluded)


class Planner:
    def __init__(self, naming: Any, prefix: str) -> None:
        self.naming = naming
        self.p = prefix
        self.matchers: list[dict[str, Any]] = []

    def fields(self, model_fields: Any) -> list[CField]:
        out = []
        for i, f in enumerate(model_fields):
            out.append(CField(name=f.name, path=f.path, ident=self.naming.member(f.name), wire=f.type,
                              ctype=C_TYPE[f.type].format(p=self.p), reserved=f.reserved, label=f.label or "",
                              index=i, flag_word=f.flag_word or 0, flag_mask=f.flag_mask or 0,
                              bit_mask=(1 << f.bit) if f.bit is not None else 0))
        return out

    def groups(self, m: Any, fields: list[CField]) -> list[Group]:
        by_name = {f.name: f for f in fields}
        groups: list[Group] = []
        cur = Group()
        for slot in m.slots:
            if slot.kind == "bits":
                cur.steps.append(Step("bits", cur.size, [by_name[n] for n in slot.fields]))
                cur.size += 1
                continue
            f = by_name[slot.fields[0]]
            if f.wire in FIXED:
                cur.steps.append(Step("value", cur.size, [f]))
                cur.size += FIXED[f.wire][0]
                continue
            cur.var = f
            groups.append(cur)
            cur = Group()
        if cur.size or not groups:
            groups.append(cur)
        return groups

    def method(self, m: Any) -> CMethod:
        fields = self.fields(m.fields)
        return CMethod(model=m, struct=self.naming.type(m.class_name, m.name),
                       fn=self.naming.function(m.class_name, m.name),
                       const=self.naming.constant(m.class_name, m.name), member=self.naming.snake(m.class_name, m.name),
                       key=(m.class_index << 16) | m.index, fields=fields, groups=self.groups(m, fields),
                       checks=self.checks(m, fields))

    def properties(self, c: Any) -> CProperties:
        fields = self.fields(c.properties)
        if len(fields) > 64:
            raise RenderError(f"class {c.name} has {len(fields)} properties; the C target's presence mask holds 64",
                              c.loc)
        known = [0] * c.property_flag_words
        for f in fields:
            f.flag = self.naming.constant(c.name, f.name, "flag")
            known[f.flag_word] |= f.flag_mask
        return CProperties(c, self.naming.type(c.name, "properties"), self.naming.function(c.name, "properties"),
                           self.naming.snake(c.name), self.naming.constant("class", c.name), fields,
                           c.property_flag_words, known)

    def matcher(self, pattern: str, where: Any) -> dict[str, Any]:
        """A spec regexp as a C matcher: "^[set]*$" / "^[set]+$" become a 256-entry byte set (which
        bytes match is asked of Python's re, octet by octet), PATH_SYNTAX the path matcher."""
        if pattern == PATH_SYNTAX:
            return {"kind": "path"}
        mt = re.fullmatch(r"\^(\[[^\]]*\])([*+])\$", pattern)
        if mt is None:
            raise RenderError(f"regexp {pattern!r} has no C matcher (the C target knows ^[set]*$, ^[set]+$ and "
                              "the path syntax)", where)
        cls = re.compile(mt.group(1))
        table = [1 if b < 128 and cls.fullmatch(chr(b)) else 0 for b in range(256)]
        for mm in self.matchers:
            if mm["table"] == table:
                return {"kind": "set", "name": mm["name"], "min": 1 if mt.group(2) == "+" else 0}
        name = f"{self.p}_set_{len(self.matchers) + 1}"
        self.matchers.append({"name": name, "table": table, "pattern": pattern})
        return {"kind": "set", "name": name, "min": 1 if mt.group(2) == "+" else 0}

    def checks(self, m: Any, fields: list[CField]) -> list[dict[str, Any]]:
        by_name = {f.name: f for f in fields}
        out: list[dict[str, Any]] = []
        for ch in policy_checks(m):
            c: dict[str, Any] = {
                "kind": ch.kind, "path": ch.path, "field": by_name[ch.field.name], "where": ch.where,
                "code": ch.code, "rabbitmq_skip": ch.rabbitmq_skip, "limit": ch.limit,
                "rabbitmq_limit": ch.rabbitmq_limit, "value": ch.value, "suspicious": ch.suspicious,
                "ref": ch.ref, "values": list(ch.values),
            }
            if ch.kind == "le":
                c["ref_const"] = self.naming.constant("negotiated", *ch.ref.split(".")) if ch.ref else None
            if ch.pattern is not None:
                c["spec_matcher"] = self.matcher(ch.pattern, ch.field.loc)
                c["portable_matcher"] = self.matcher(ch.portable or ch.pattern, ch.field.loc)
            out.append(c)
        return out


def sample(f: CField, case: str) -> str:
    """A C expression for a field's value in the round-trip tests: zero or its largest."""
    if f.wire == "bit":
        return "true" if case == "max" else "false"
    if f.wire in FIXED:
        return INT_MAX[f.wire] if case == "max" else "0"
    if case != "max":
        return "{0, 0}"
    return {"shortstr": "sample_shortstr", "longstr": "sample_longstr", "table": "sample_table"}[f.wire]


def c_bytes(hexstr: str) -> str:
    """Hex octets as the body of a C array initializer (at least one element: C has no empty arrays)."""
    data = bytes.fromhex(hexstr)
    if not data:
        return "0"
    return ", ".join(f"0x{b:02x}" for b in data)


def context(spec: Any, naming: Any, options: dict[str, str]) -> dict[str, Any]:
    prefix = check_prefix(options.get("prefix", ""))
    dialect = options.get("dialect", "")
    if dialect not in TYPE_CODES:
        raise RenderError(f"option dialect={dialect!r} is not a table dialect (known: {', '.join(TYPE_CODES)})")
    for opt in ("tests", "fuzz"):
        if options.get(opt, "0").lower() not in ("0", "1", "true", "false", "yes", "no", "on", "off", ""):
            raise RenderError(f"option {opt}={options[opt]!r} is not a boolean (1 or 0)")
    planner = Planner(naming, prefix)
    methods = [planner.method(m) for m in spec.methods]
    props = [planner.properties(c) for c in spec.content_classes]
    names = {c.name for c in spec.constants}
    constants = [{"ident": naming.constant(c.name), "value": c.value, "doc": c.doc, "name": c.name}
                 for c in spec.constants]
    constants += [{"ident": naming.constant(k), "value": v, "doc": "", "name": k}
                  for k, v in FRAME_DEFAULTS.items() if k not in names]
    reply = [{"name": c.name, "value": c.value, "error_class": c.error_class} for c in spec.reply_codes]
    classes = [{"name": c.name, "index": c.index, "const": naming.constant("class", c.name)} for c in spec.classes]
    # Every file-scope identifier the spec gives must be unique, and distinct from the pack's own.
    seen: dict[str, str] = {}
    fixed = {f"{prefix}_{n}" for n in FIXED_FUNCTIONS} | {f"{prefix}_{n}_t" for n in FIXED_FUNCTIONS}
    own = [(c["ident"], c["name"]) for c in constants] + [(c["const"], "class " + c["name"]) for c in classes]
    for cm in methods:
        own += [(cm.const, cm.model.full_name), (cm.struct, cm.model.full_name)]
        own += [(cm.fn + s, cm.model.full_name) for s in ("_encode", "_decode", "_check")]
    for cp in props:
        own += [(cp.struct, cp.model.name + " properties")] + [(f.flag, f.path) for f in cp.fields]
    for ident, what in own:
        if ident in fixed or (ident in seen and seen[ident] != what):
            raise RenderError(f"{spec.name}: {what!r} gives C identifier {ident!r}, which "
                              f"{seen.get(ident, 'the C library itself')!r} uses")
        seen[ident] = what
    return {
        "c": {
            "p": prefix,
            "pu": prefix.upper(),
            "dialect": dialect,
            "type_codes": TYPE_CODES[dialect],
            "methods": methods,
            "properties": props,
            "classes": classes,
            "header": list(spec.protocol_header),
            "constants": constants,
            "reply": reply,
            "frame_overhead": FRAME_OVERHEAD,
            "header_prefix": HEADER_PREFIX,
            "max_table_depth": MAX_TABLE_DEPTH,
            "syntax_error_code": SYNTAX_ERROR_CODE,
            "rules": spec.all_rules(),
            "fixed": FIXED,
            "matchers": planner.matchers,
            "sample": sample,
            "negotiated": sorted({c["ref"] for cm in methods for c in cm.checks if c["kind"] == "le" and c["ref"]}),
        },
    }


def _hex(value: int, width: int = 8) -> str:
    return f"0x{value:0{width}X}"


FILTERS = {"ccomment": comment, "cinline": inline, "hex": _hex, "cbytes": c_bytes}
