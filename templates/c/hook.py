"""The C target's hook: its type map, the C identifiers of the pack's fixed API, and the codec plans
the templates format (one bounds check per run of fixed-size fields, bit groups, flag words).

Shared facts come from the model (slots, segments, flag words), ``amqgen.amqp0.wire`` and ``amqgen.amqp0.policy``;
this file only maps them to C.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from amqgen.amqp0 import refcodec as ref
from amqgen.amqp0.model import Class, Method
from amqgen.amqp0.plan import codec_plan
from amqgen.amqp0.policy import PATH_SYNTAX, SYNTAX_ERROR_CODE, template_data
from amqgen.amqp0.targets import LARGEST, target_plan
from amqgen.amqp0.targets import sample as target_sample
from amqgen.amqp0.vectors import ERROR_KINDS, table_from_json
from amqgen.amqp0.wire import FRAME_OVERHEAD, HEADER_PREFIX, MAX_TABLE_DEPTH, TYPE_CODES
from amqgen.errors import RenderError

#: wire type -> C type of a struct member
C_TYPE = {
    "bit": "bool", "octet": "uint8_t", "short": "uint16_t", "long": "uint32_t", "longlong": "uint64_t",
    "timestamp": "uint64_t", "shortstr": "{p}_bytes_t", "longstr": "{p}_bytes_t", "table": "{p}_table_t",
}
#: fixed-size wire types: the suffix of their internal get/put helpers
FIXED = {"octet": "8", "short": "16", "long": "32", "longlong": "64", "timestamp": "64"}
#: wire type -> the code the decode-error locator's field tables use (methods.c: locate_field_)
WIRE_CODE = {"octet": "o", "short": "s", "long": "l", "longlong": "L", "timestamp": "L", "shortstr": "S",
             "longstr": "X", "table": "F", "bit": "b"}
#: what the rest of the pack declares at file scope besides spec names (suffixes after "P_" / "PU_")
FIXED_FUNCTIONS = ("bytes", "table", "array", "decimal", "field_value", "table_iter", "table_writer", "frame",
                   "reader", "method", "content_header", "status_name", "method_name", "method_has_content",
                   "reply_name", "reply_class", "class_name", "protocol_header", "utf8_valid", "strerror", "cstring",
                   "table_get", "method_copy", "content_header_copy", "decode_error", "method_decode_where",
                   "content_header_decode_where")

#: the status codes: decoders' errors are the corpus's kinds, in the corpus's order (-1 to -11, kept stable);
#: then the library's own, each for one cause. (enum suffix, value, name, what it means)
STATUSES = (
    ("OK", 0, "ok", "success"),
    ("INCOMPLETE", 1, "incomplete", "the frame reader needs more input (not an error)"),
    *((f"ERR_{k.replace('-', '_').upper()}", -1 - i, k, text) for i, (k, text) in enumerate(ERROR_KINDS.items())),
    ("ERR_NO_SPACE", -12, "no-space", "the caller's buffer or storage is too small for what is written into it"),
    ("ERR_VALUE", -13, "value", ("a value the wire cannot carry: a short string or table key over 255 octets, a long "
     "string, table or frame payload over 4 GiB, a table nested deeper than the limit, a type code the dialect lacks")),
    ("ERR_MISUSE", -14, "misuse", ("a call out of order: a table value without its key or a key in an array, "
     "unbalanced begin and end, finishing an open table, feeding a reader before next() returned incomplete")),
    ("ERR_UNKNOWN_ID", -15, "unknown-id", ("a method id, content class, property flag or rule id the spec does not "
     "define, given to an encoder or registry")),
    ("ERR_FRAME_MAX", -16, "frame-max", ("an encoder's frame_max is too small: 8 octets or less, or a method or "
     "header frame larger than it")),
    ("ERR_STORAGE", -17, "storage", ("a frame split across feeds is within frame_max but larger than the storage "
     "the reader was given")),
    # the blocking client's (client/): defined with the library's so that status_name and strerror know them
    ("CLIENT_CLOSED", -100, "client-closed", "the server closed the connection (the client's last event is the close)"),
    ("CLIENT_LOST", -101, "client-lost", ("the connection is gone: a reset, the end of the stream, the peer silent "
     "for two heartbeat intervals, or a write without progress as long")),
    ("CLIENT_TIMEOUT", -102, "client-timeout", "no reply or event within the call's timeout, or no handshake in time"),
    ("CLIENT_CHANNEL_CLOSED", -103, "client-channel-closed", "the server closed the call's channel"),
    ("CLIENT_PROTOCOL", -104, "client-protocol", ("the server broke the protocol; the client closed the connection "
     "with the spec's reply code")),
    ("CLIENT_VERSION", -105, "client-version", "the server answered with the protocol header of another version"),
    ("CLIENT_CONNECT", -106, "client-connect", "no TCP connection: refused, unreachable, or the host name unknown"),
    ("CLIENT_CONSUMER", -107, "client-consumer", "a consumer callback returned non-zero; its channel was closed"),
    ("CLIENT_THREAD", -108, "client-thread", "a client called from a thread that does not own it"),
    # recovery (issue 42, docs/recovery.md)
    ("CLIENT_UNCONFIRMED", -109, "client-unconfirmed", ("publishes were left unconfirmed by a lost connection "
     "that recovered; client_next lists them (the recovery policy did not republish them)")),
    ("CLIENT_RECOVERY_FAILED", -110, "client-recovery-failed", ("the connection was lost and recovery failed: "
     "attempts or time exhausted, a refusal, or a replay the broker refused (the client's recovery_cause says "
     "which)")),
)

#: the pack's own macro and enum names (suffixes after "PU_"): a spec constant must not take one
FIXED_CONSTANTS = ("H", "INTERNAL_H", "TESTS_H", "OK", "INCOMPLETE", "PORT", "FRAME_OVERHEAD", "MAX_TABLE_DEPTH",
                   "FRAME_PROTOCOL_HEADER", "SIGNED_CODES", "UNSIGNED_CODES", "NO_UTF8_CHECK", "SHORTSTR_OK",
                   "TOO_LONG", "ALWAYS_INLINE", "NOINLINE", "SEPARATE_STORES",
                   "POLICY_RABBITMQ", "POLICY_PORTABLE", "POLICY_SPEC",
                   "LIT")


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


@dataclass
class CMethod:
    model: Any
    struct: str
    fn: str  # function name stem: P_basic_publish
    const: str  # PU_BASIC_PUBLISH
    member: str  # basic_publish, in P_method_t's union
    plan: Any  # amqgen.amqp0.plan.MethodPlan: runs, dispatch key
    fields: list[CField]
    f: dict[str, CField]  # by canonical name, for the plan's fields
    checks: list[dict[str, Any]]


@dataclass
class CProperties:
    model: Any
    struct: str
    fn: str
    member: str
    const: str  # PU_CLASS_BASIC
    fields: list[CField]
    plan: Any  # amqgen.amqp0.plan.PropertiesPlan: flag words


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
                              index=i))
        return out

    def method(self, mp: Any) -> CMethod:
        m = mp.method
        fields = self.fields(m.fields)
        return CMethod(model=m, struct=self.naming.type(m.class_name, m.name),
                       fn=self.naming.function(m.class_name, m.name),
                       const=self.naming.constant(m.class_name, m.name), member=self.naming.snake(m.class_name, m.name),
                       plan=mp, fields=fields, f={f.name: f for f in fields}, checks=self.checks(mp, fields))

    def properties(self, pp: Any) -> CProperties:
        c = pp.cls
        fields = self.fields(c.properties)
        if len(fields) > 64:
            raise RenderError(f"class {c.name} has {len(fields)} properties; the C target's presence mask holds 64",
                              c.loc)
        for f in fields:
            f.flag = self.naming.constant(c.name, f.name, "flag")
        return CProperties(c, self.naming.type(c.name, "properties"), self.naming.function(c.name, "properties"),
                           self.naming.snake(c.name), self.naming.constant("class", c.name), fields, pp)

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

    def checks(self, mp: Any, fields: list[CField]) -> list[dict[str, Any]]:
        by_name = {f.name: f for f in fields}
        out: list[dict[str, Any]] = []
        for ch in mp.checks:
            c: dict[str, Any] = template_data(ch, by_name[ch.field.name])
            if ch.pattern is not None:
                c["spec_matcher"] = self.matcher(ch.pattern, ch.field.loc)
                c["portable_matcher"] = self.matcher(ch.portable or ch.pattern, ch.field.loc)
            out.append(c)
        return out


def sample(f: CField, case: str) -> str:
    """A C expression for a field's value in the round-trip tests: zero or its largest."""
    kind = target_sample(f.wire, case)
    if kind == "largest":
        return "UINT64_MAX" if LARGEST[f.wire] == 2**64 - 1 else f"{LARGEST[f.wire]}u"
    if kind == "full":
        return {"shortstr": "sample_shortstr", "longstr": "sample_longstr", "table": "sample_table"}[f.wire]
    if kind == "empty":
        return "sample_empty_table" if f.wire == "table" else "sample_empty"
    return {"true": "true", "false": "false", "zero": "0"}[kind]


def c_bytes(hexstr: str) -> str:
    """Hex octets as the body of a C array initializer (at least one element: C has no empty arrays)."""
    data = bytes.fromhex(hexstr)
    if not data:
        return "0"
    return ", ".join(f"0x{b:02x}" for b in data)


def context(spec: Any, naming: Any, options: dict[str, str]) -> dict[str, Any]:
    codec = codec_plan(spec)
    prefix = check_prefix(options.get("prefix", ""))
    dialect = options.get("dialect", "")
    if dialect not in TYPE_CODES:
        raise RenderError(f"option dialect={dialect!r} is not a table dialect (known: {', '.join(TYPE_CODES)})")
    for opt in ("tests", "fuzz"):
        if options.get(opt, "0").lower() not in ("0", "1", "true", "false", "yes", "no", "on", "off", ""):
            raise RenderError(f"option {opt}={options[opt]!r} is not a boolean (1 or 0)")
    planner = Planner(naming, prefix)
    methods = [planner.method(mp) for mp in codec.methods]
    props = [planner.properties(pp) for pp in codec.properties]
    tp = target_plan(spec)
    constants = [{"ident": naming.constant(c.name), "value": c.value, "doc": c.doc, "name": c.name}
                 for c in spec.constants]
    constants += [{"ident": naming.constant(k), "value": v, "doc": "", "name": k}
                  for k, v in tp.missing_frame_constants]
    values = {k["name"]: k["value"] for k in constants}
    frame_types = [values[n] for n in ("frame-method", "frame-header", "frame-body", "frame-heartbeat")]
    if any(not 0 <= t < 32 for t in frame_types):  # frame_parse tests them as bits of a 32-bit mask
        raise RenderError(f"{spec.name}: frame types {frame_types}: the C target needs them in 0..31")
    reply = [{"name": r.name, "value": r.value, "error_class": r.error_class} for r in tp.replies]
    classes = [{"name": c.name, "index": c.index, "const": naming.constant("class", c.name)} for c in spec.classes]
    # Every file-scope identifier the spec gives must be unique, and distinct from the pack's own.
    seen: dict[str, str] = {}
    fixed = {f"{prefix}_{n}" for n in FIXED_FUNCTIONS} | {f"{prefix}_{n}_t" for n in FIXED_FUNCTIONS}
    fixed |= {f"{prefix.upper()}_{n}" for n in (*FIXED_CONSTANTS, *(s[0] for s in STATUSES))}
    own = [(c["ident"], c["name"]) for c in constants] + [(c["const"], "class " + c["name"]) for c in classes]
    for cm in methods:
        own += [(cm.const, cm.model.full_name), (cm.struct, cm.model.full_name)]
        own += [(cm.fn + s, cm.model.full_name) for s in ("_encode", "_decode", "_check")]
    for cp in props:
        own += [(cp.struct, cp.model.name + " properties")] + [(f.flag, f.path) for f in cp.fields]
    for ident, what in own:
        if ident in fixed or (ident in seen and seen[ident] != what):
            owner = repr(seen[ident]) if ident in seen else "the C library itself"
            raise RenderError(f"{spec.name}: {what!r} gives C identifier {ident!r}, which {owner} uses")
        seen[ident] = what
    return {
        "c": {
            "p": prefix,
            "pu": prefix.upper(),
            "statuses": [{"suffix": s, "value": v, "name": n, "meaning": m} for s, v, n, m in STATUSES],
            "dialect": dialect,
            "type_codes": TYPE_CODES[dialect],
            "methods": methods,
            "properties": props,
            "classes": classes,
            "header": list(spec.protocol_header),
            "constants": constants,
            "reply": reply,
            "frame_overhead": FRAME_OVERHEAD,
            "frame_type_mask": sum(1 << t for t in frame_types),
            "rev8": [int(f"{b:08b}"[::-1], 2) for b in range(256)],
            "header_prefix": HEADER_PREFIX,
            "max_table_depth": MAX_TABLE_DEPTH,
            "syntax_error_code": SYNTAX_ERROR_CODE,
            "rules": spec.all_rules(),
            "fixed": FIXED,
            "wire_code": WIRE_CODE,
            "matchers": planner.matchers,
            "sample": sample,
            "case_writer": lambda: CaseWriter(prefix, dialect),
            "method_by_name": {cm.model.full_name: cm for cm in methods},
            "props_by_name": {cp.model.name: cp for cp in props},
            **test_context(spec, dialect),
            "negotiated": sorted({c["ref"] for cm in methods for c in cm.checks if c["kind"] == "le" and c["ref"]}),
            "engine": engine_context(spec, naming, methods),
        },
    }


def _hex(value: int, width: int = 8) -> str:
    return f"0x{value:0{width}X}"


def fnv(text: str) -> str:
    """FNV-1a 64 of canonical text, as a C literal: the generated runner compares hashes (C99 caps string
    literals at 4095 characters; --dump prints the texts themselves)."""
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"UINT64_C(0x{h:016x})"


FILTERS = {"fnv": fnv, "ccomment": comment, "cinline": inline, "hex": _hex, "cbytes": c_bytes}


# -- the conformance tests option: corpus values as C data and as canonical text ---------------------------------
# The canonical text is what the generated runner's dump of a decoded value must equal. It is computed here from
# the corpus's JSON values (never from C output), so a decoding mistake in C cannot hide.

def canon_typed(tv: dict[str, Any], dialect: str) -> str:
    code: str = tv["type"]
    v = tv["value"]
    kind = next(t.kind for t in TYPE_CODES[dialect] if t.code == code)
    if kind == "bool":
        return code + ("1" if v else "0")
    if kind in ("int", "timestamp"):
        return code + str(int(v))
    if kind in ("float", "longstr", "bytes", "shortstr"):
        return code + str(v).lower()  # hex text in the corpus
    if kind == "decimal":
        return f"{code}{v['scale']},{v['unscaled']}"
    if kind == "table":
        return code + canon_table(v, dialect)
    if kind == "array":
        return code + "[" + ",".join(canon_typed(x, dialect) for x in v) + "]"
    return code


def canon_table(entries: list[Any], dialect: str) -> str:
    return "{" + ",".join(k.encode("utf-8").hex() + ":" + canon_typed(tv, dialect) for k, tv in entries) + "}"


def canon_field(wire: str, v: Any, dialect: str) -> str:
    if wire == "bit":
        return "1" if v else "0"
    if wire in FIXED:
        return str(int(v))
    text: str = v if wire in ("shortstr", "longstr") else ""
    if wire == "shortstr":
        return text.encode("utf-8").hex()
    if wire == "longstr":
        return text.lower()
    return canon_table(v, dialect)


def canon_method(m: Method, values: dict[str, Any], dialect: str) -> str:
    return m.full_name + "(" + ";".join(canon_field(f.type, values[f.name], dialect) for f in m.fields) + ")"


def canon_properties(cls: Class, values: dict[str, Any], dialect: str) -> str:
    return cls.name + "(" + ";".join(f"{i}={canon_field(f.type, values[f.name], dialect)}"
                                     for i, f in enumerate(cls.properties) if f.name in values) + ")"


class CaseWriter:
    """C statements that set a struct's members from a corpus case's values; strings and tables become
    static arrays (declared before the function that uses them)."""

    def __init__(self, prefix: str, dialect: str) -> None:
        self.p = prefix
        self.dialect = dialect
        self.arrays: list[str] = []
        self.n = 0

    def array(self, data: bytes) -> str:
        self.n += 1
        name = f"d{self.n}"
        self.arrays.append(f"static const uint8_t {name}[] = {{{c_bytes(data.hex())}}};")
        return name

    def value(self, wire: str, v: Any) -> str:
        if wire == "bit":
            return "true" if v else "false"
        if wire in FIXED:
            return f"UINT64_C({int(v)})" if wire in ("longlong", "timestamp") else f"{int(v)}u"
        # A table's entries come from the reference codec, as the corpus's octets do: the peers (pika, pamqp,
        # py-amqp) check those in tests/model/test_vectors.py, so a second table encoder here would add no check.
        encoders: dict[str, Callable[[], bytes]] = {"shortstr": lambda: v.encode("utf-8"), "longstr": lambda: bytes.fromhex(v),
                "table": lambda: ref.table_body(table_from_json(v, self.dialect), self.dialect)}
        data = encoders[wire]()
        kind = "table" if wire == "table" else "bytes"
        return f"({self.p}_{kind}_t){{{self.array(data)}, {len(data)}}}"

    def take(self) -> list[str]:
        out, self.arrays = self.arrays, []
        return out


def writer_calls(p: str, tv: dict[str, Any], dialect: str) -> list[str]:
    """Table writer calls that build one typed value (the tables section tests the writer)."""
    code, v = tv["type"], tv["value"]
    kind = next(t.kind for t in TYPE_CODES[dialect] if t.code == code)
    if kind == "table":
        out = [f"{p}_table_begin_table(&w);"]
        for k, item in v:
            kb = k.encode("utf-8")
            out.append(f"{p}_table_put_key(&w, {p.upper()}_LIT({_cstr(kb)}));")
            out += writer_calls(p, item, dialect)
        return out + [f"{p}_table_end_table(&w);"]
    if kind == "array":
        out = [f"{p}_table_begin_array(&w);"]
        for item in v:
            out += writer_calls(p, item, dialect)
        return out + [f"{p}_table_end_array(&w);"]
    if kind == "int":
        signed = ref.int_codes(dialect)[code][1]  # the reference codec's own table, not amqgen.amqp0.wire's
        n = int(v)
        lit = (f"INT64_C({n})" if n != -(2 ** 63) else "INT64_MIN") if signed else f"UINT64_C({n})"
        stmt = f"fv.v.{'i' if signed else 'u'} = {lit};"
    elif kind in ("longstr", "bytes", "shortstr"):
        data = bytes.fromhex(v)
        stmt = f"fv.v.bytes.bytes = (const uint8_t *){_cstr(data)}; fv.v.bytes.len = {len(data)};"
    elif kind == "bool":
        stmt = f"fv.v.boolean = {'true' if v else 'false'};"
    elif kind == "float":
        stmt = f"fv.v.f32_bits = 0x{v}u;" if len(v) == 8 else f"fv.v.f64_bits = UINT64_C(0x{v});"
    elif kind == "decimal":
        stmt = f"fv.v.decimal.scale = {v['scale']}; fv.v.decimal.value = {int(v['unscaled']) & 0xFFFFFFFF}u;"
    elif kind == "timestamp":
        stmt = f"fv.v.timestamp = UINT64_C({int(v)});"
    else:  # void
        stmt = ""
    return [f"fv.type = '{code}'; {stmt} {p}_table_put(&w, &fv);"]


def _cstr(data: bytes) -> str:
    out = []
    for b in data:
        ch = chr(b)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= b < 127 and ch != "?":
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def test_context(spec: Any, dialect: str) -> dict[str, Any]:
    return {"canon_method": lambda name, values: canon_method(spec.method_by_name[name], values, dialect),
            "canon_properties": lambda name, values: canon_properties(spec.class_by_name[name], values, dialect),
            "canon_table": lambda v: canon_table(v, dialect),
            "canon_array": lambda v: "[" + ",".join(canon_typed(x, dialect) for x in v) + "]",
            "writer_calls": lambda p, tv: writer_calls(p, tv, dialect),
            "spec_method": spec.method_by_name.get}


# -- the engine (engine.h / engine.c): the behaviour plan as C table rows and the lifecycle roles' C names ---------

def engine_context(spec: Any, naming: Any, methods: list[CMethod]) -> dict[str, Any]:
    """What engine.h.j2 and engine.c.j2 format: one row per method (who sends it, its channel, synchronous,
    content, opens, closes, the index of its replies in one flat reply list), the no-wait member of the methods
    that have one, and each lifecycle role's method constant and struct member (None where the spec lacks it)."""
    from amqgen.amqp0.behaviour import behaviour_plan

    plan = behaviour_plan(spec)
    by_name = {cm.model.full_name: cm for cm in methods}
    rows: list[dict[str, Any]] = []
    replies: list[str] = []
    for mb in plan.methods:
        cm = by_name[mb.method]
        start = len(replies)
        replies += [by_name[r].const for r in mb.replies if r in by_name]
        rows.append({
            "const": cm.const, "name": mb.method,
            "senders": (1 if "client" in mb.senders else 0) | (2 if "server" in mb.senders else 0),
            "zero": mb.channel == "zero", "synchronous": mb.synchronous, "content": mb.content,
            "opens": {None: 0, "connection": 1, "channel": 2}[mb.opens],
            "closes": {None: 0, "connection": 1, "channel": 2}[mb.closes],
            "reply_start": start, "reply_count": len(replies) - start,
            "no_wait": naming.member(mb.no_wait) if mb.no_wait else None, "member": cm.member, "struct": cm.struct,
            "reply": bool(mb.answers), "negotiation": mb.negotiation})
    # the connection's negotiation in order, as the Python engine's NEGOTIATION (sender bit, method, repeats)
    steps = [{"sender": 2 if st.sender == "server" else 1, "const": by_name[st.method].const if st.method else "0",
              "repeats": st.repeats, "name": st.method or "protocol header"} for st in plan.negotiation]
    lc = plan.lifecycle
    # every role, None where the spec lacks its method (the templates test them)
    roles: dict[str, Any] = {k: None for k, v in vars(lc).items() if v is None or isinstance(v, str)}
    roles |= {role: {"const": by_name[name].const, "member": by_name[name].member, "struct": by_name[name].struct}
              for role, name in lc.roles().items() if name is not None}
    codes = {v.kind: v.code or 0 for v in plan.violations}
    # the blocking client's handshake and publish: the plan's client roles (publish: the lifecycle's where
    # confirms count it, else the client's content method)
    cr = plan.client
    handshake = {"start": cr.start, "start_ok": cr.start_ok, "open": cr.connection_open,
                 "publish": lc.publish or cr.publish}
    roles |= {role: {"const": by_name[name].const, "member": by_name[name].member, "struct": by_name[name].struct}
              for role, name in lc.roles().items() if name is not None}
    codes = {v.kind: v.code or 0 for v in plan.violations}
    # -- issue 33: the blocking client's handshake roles, read off the behaviour plan (no method named by hand):
    # the server's first negotiation step (start), the client's answer to it (start-ok), and the request the
    # method that opens the connection answers (open); publish is the lifecycle's, else (a spec without confirms)
    # the first content method only the client sends
    first = next((i for i, st in enumerate(plan.negotiation) if st.sender == "server" and st.method), None)
    answer = None if first is None else next(
        (st.method for st in plan.negotiation[first + 1:] if st.sender == "client" and st.method), None)
    opener = next((mb for mb in plan.methods if mb.opens == "connection"), None)
    handshake = {"start": None if first is None else plan.negotiation[first].method, "start_ok": answer,
                 "open": opener.answers[0] if opener is not None and opener.answers else None,
                 "publish": lc.publish or next((mb.method for mb in plan.methods
                                                if mb.content and set(mb.senders) == {"client"}), None)}
    roles |= {role: {"const": by_name[name].const, "member": by_name[name].member, "struct": by_name[name].struct}
              if name is not None and name in by_name else None for role, name in handshake.items()}
    # the blocking client's consumers and notifications (issue 41): the plan's client roles (deliver, consume,
    # consume-ok, cancel), and the methods of the blocked capability where the spec has them; and the
    # capabilities it advertises
    from amqgen.amqp0.behaviour import CAPABILITIES

    def c_role(name: str | None) -> dict[str, str] | None:
        cm = by_name.get(name) if name else None
        return None if cm is None else {"const": cm.const, "member": cm.member, "struct": cm.struct}

    client = {role: c_role(name) for role, name in plan.client.roles().items()}
    blocked = dict(CAPABILITIES)["connection.blocked"]
    notices = {"blocked": c_role(blocked[0][0]), "unblocked": c_role(blocked[1][0])}
    return {"rows": rows, "replies": replies or ["0"], "steps": steps, "roles": roles, "codes": codes,
            "flow_field": naming.member(lc.flow_field) if lc.flow_field else None,
            "m": naming.member, "client": client | notices, "capabilities": list(plan.capabilities),
            "recovery": recovery_context(spec, naming, plan, by_name)}


#: the kinds of topology, numbered as the generated recovery tables number them (behaviour.TopologyKind's order)
KINDS = ("exchange", "queue", "exchange-binding", "queue-binding", "consumer")
#: the domain of a delivery's tag: deliveries carry it, settlements name it (offset across recoveries)
_DELIVERY_TAG = "delivery-tag"


def recovery_context(spec: Any, naming: Any, plan: Any, by_name: dict[str, CMethod]) -> dict[str, Any]:
    """The behaviour plan's ``recovery`` as rows the C client's recovery tables are formatted from: per declaring
    method its kind, the C members of its identity (key), of the fields naming other topology (refers) with their
    kind, its check bit, the key member a server names (with the reply and its member), and its lifetime bits;
    per removal the members it matches and the kinds that go with it; per channel setting the bits that tell its
    kinds apart (basic.qos's global); the delivery methods and settlements whose delivery tag is offset; the
    refusal codes."""
    rec = plan.recovery

    def fields(name: str) -> dict[str, Any]:
        return {f.name: f for f in spec.method_by_name[name].fields}

    def member(f: Any) -> dict[str, Any]:
        return {"m": naming.member(f.name), "bytes": f.type in ("shortstr", "longstr", "table"), "name": f.name}

    decls = []
    for d in rec.declarations:
        if d.method not in by_name:
            continue
        fs = fields(d.method)
        named = None
        if d.named_by is not None and d.named_by[0] in by_name:
            reply, rfield = d.named_by
            domain = {f.name: f.domain for f in spec.method_by_name[reply].fields}[rfield]
            own = next((k for k in d.key if fs[k].domain == domain), None)
            if own is not None:
                named = {"reply": by_name[reply].member, "reply_m": naming.member(rfield), "m": naming.member(own)}
        decls.append({"const": by_name[d.method].const, "member": by_name[d.method].member, "name": d.method,
                      "kind": KINDS.index(d.kind), "key": [member(fs[k]) for k in d.key],
                      "refers": [{"m": naming.member(f), "kind": KINDS.index(k)} for f, k in d.refers],
                      "check": naming.member(d.check) if d.check else None, "named": named,
                      "goes": [naming.member(b) for b in d.tied]})
    removals = []
    for r in rec.removals:
        if r.method not in by_name:
            continue
        fs = fields(r.method)
        kind = KINDS.index(r.kind)
        # the removed thing's own name (a queue's, an exchange's): what the cascaded declarations refer to
        own = next((k for k in r.key if fs[k].domain in ("exchange-name", "queue-name")
                    and r.kind in ("exchange", "queue")), None)
        removals.append({"const": by_name[r.method].const, "member": by_name[r.method].member, "name": r.method,
                         "kind": kind, "key": [member(fs[k]) for k in r.key],
                         "own": naming.member(own) if own else None,
                         "cascades": [KINDS.index(k) for k in r.cascades]})
    settings = []
    for name in rec.channel_settings:
        if name not in by_name:
            continue
        mb = next(m for m in plan.methods if m.method == name)
        bits = [naming.member(f.name) for f in spec.method_by_name[name].fields
                if f.type == "bit" and not f.reserved and f.name != mb.no_wait]
        settings.append({"const": by_name[name].const, "member": by_name[name].member, "name": name, "bits": bits})
    deliveries, settles = [], []
    for mb in plan.methods:
        tag = next((f for f in spec.method_by_name[mb.method].fields if f.domain == _DELIVERY_TAG), None)
        if tag is None or mb.method not in by_name:
            continue
        row = {"const": by_name[mb.method].const, "member": by_name[mb.method].member, "tag": naming.member(tag.name)}
        if mb.content and "client" not in mb.senders:
            deliveries.append(row)
        elif not mb.content and "client" in mb.senders:
            settles.append(row)
    return {"declarations": decls, "removals": removals, "settings": settings, "deliveries": deliveries,
            "settles": settles, "refusals": [{"code": r.code, "why": r.why, "name": r.constant} for r in rec.refusals],
            "kinds": KINDS}
