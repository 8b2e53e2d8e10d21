"""The Python target's hook: its type map, and the codec plans the templates format.

Everything a template needs to know about the wire (struct format characters, which length
prefix rides in which precompiled ``struct.Struct``, bit masks, flag masks, annotations,
defaults, test values) is decided here from the lowered model, so the templates only format.

The one idea beyond the model's own segments: a fixed-size run is packed together with the
length prefix of the variable-size item that follows it (``>HB`` = reserved short + the
exchange name's length octet), so each run plus the next length costs one struct call.
"""

import re
from dataclasses import dataclass, field
from typing import Any

from amqgen.amqp0.behaviour import behaviour_plan
from amqgen.amqp0.plan import codec_plan
from amqgen.amqp0.policy import template_data
from amqgen.amqp0.targets import LARGEST, anchor, target_plan
from amqgen.amqp0.targets import sample as target_sample
from amqgen.errors import RenderError

#: the struct format character of an unsigned big-endian integer of each size, and back
STRUCT_BY_SIZE = {1: "B", 2: "H", 4: "I", 8: "Q"}
SIZE = {c: n for n, c in STRUCT_BY_SIZE.items()}
ANNOTATION = {
    "bit": "bool",
    "octet": "int",
    "short": "int",
    "long": "int",
    "longlong": "int",
    "timestamp": "int",
    "shortstr": "str",
    "longstr": "bytes",
    "table": "FieldTable",
}
DEFAULT = {
    "bit": "False",
    "octet": "0",
    "short": "0",
    "long": "0",
    "longlong": "0",
    "timestamp": "0",
    "shortstr": '""',
    "longstr": 'b""',
    "table": "None",
}

#: exception classes exceptions.py defines itself (a reply code must not take one of these names)
FIXED_EXCEPTIONS = frozenset(
    [
        "AMQPError",
        "ReplyError",
        "SoftError",
        "HardError",
        "DecodeError",
        "EncodeError",
        "FrameError",
        "FrameEndError",
        "FrameSizeError",
        "FrameTypeError",
        "TruncatedError",
        "TrailingDataError",
        "InvalidUTF8Error",
        "UnknownMethodError",
        "UnknownClassError",
        "PropertyFlagsError",
        "TableError",
        "TableDepthError",
    ]
)


def docstring(text: str, indent: str = "    ") -> str:
    """A docstring body: backslashes and triple quotes escaped, continuation lines indented."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').strip()
    if text.endswith('"'):
        text += " "
    lines = [ln.rstrip() for ln in text.split("\n")]
    return ("\n" + indent).join(lines).replace("\n" + indent + "\n", "\n\n").replace("\n" + indent + "\n", "\n\n")


class Structs:
    """The struct formats a module precompiles; the templates bind ``_P_<fmt>`` (pack) and
    ``_U_<fmt>`` (unpack_from) once per format, so a hot path pays no attribute lookup."""

    def __init__(self) -> None:
        self.packs: set[str] = set()
        self.unpacks: set[str] = set()

    def pack(self, fmt: str) -> str:
        self.packs.add(fmt)
        return fmt

    def unpack(self, fmt: str) -> str:
        self.unpacks.add(fmt)
        return fmt

    def both(self, fmt: str) -> str:
        return self.unpack(self.pack(fmt))


@dataclass
class PyField:
    name: str  # canonical
    ident: str
    wire: str
    annotation: str
    default: str
    label: str
    reserved: bool
    local: str
    mask: int = 0  # properties: the bit in their flag word
    flag_word: int = 0
    flag_local: str = ""  # properties: the decoder's boolean "is present"


@dataclass
class Op:
    """One step of an unrolled codec. kinds:
    encode: pack (struct, args) | raw (local)
    decode: unpack (struct, targets, size) | octet (local) | shortstr/longstr/table (local; size: octets of a
    length prefix read in place, 0 when an unpack before it read the length into n) | bits (local, [(target, mask)])
    """

    kind: str
    struct: str = ""
    args: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    size: int = 0
    local: str = ""
    bits: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class EncodePlan:
    prep: list[tuple[str, str, str]]  # (wire, local, ident)
    pieces: list[Op]
    fixed: int  # octets packed by the struct calls (frame variant: after the 7-octet header, with frame-end)
    raw_locals: list[str]


@dataclass
class PyMethod:
    model: Any
    cls: str
    fields: list[PyField]
    encode: EncodePlan
    frame: EncodePlan
    decode: list[Op]
    responses: list[str]
    doc: str
    checks: list[dict[str, Any]]


@dataclass
class FlagOctet:
    """One octet of a property flag word, as the decoder reads it: the names its eight bits
    unpack into (most significant first; "_" where the class has no property)."""

    local: str
    names: list[str]


@dataclass
class FlagWord:
    """A property flag word: its two octets, and the test that is true when a bit is set that
    must be clear (no such property; the continuation bit of the last word), "" when none can be."""

    hi: FlagOctet
    lo: FlagOctet
    unknown_test: str


@dataclass
class PyProperties:
    model: Any
    cls: str
    fields: list[PyField]
    flag_words: int
    words: list[FlagWord]
    p: dict[str, Any]  # the plan's properties (amqgen.amqp0.plan.Property) by canonical name


def _bits_expr(bits: list[tuple[PyField, int]], prefix: str) -> str:
    terms = [f"{mask} if {prefix}{f.ident} else 0" for f, mask in bits]
    return terms[0] if len(terms) == 1 else " | ".join(f"({t})" for t in terms)


class Planner:
    def __init__(self, spec: Any, naming: Any) -> None:
        self.spec = spec
        self.codec = codec_plan(spec)
        self.naming = naming
        self.structs = Structs()
        self.regexps = target_plan(spec).regexps

    def fields(self, model_fields: Any) -> list[PyField]:
        out = []
        for f in model_fields:
            ident = self.naming.member(f.name)
            out.append(
                PyField(
                    name=f.name,
                    ident=ident,
                    wire=f.type,
                    annotation=ANNOTATION[f.type],
                    default=DEFAULT[f.type],
                    label=f.label or "",
                    reserved=f.reserved,
                    local="v_" + ident.rstrip("_"),
                    mask=f.flag_mask or 0,
                    flag_word=f.flag_word or 0,
                )
            )
        return out

    # -- methods --------------------------------------------------------------------------
    def encode_plan(self, mp: Any, by_name: dict[str, PyField], frame: bool) -> EncodePlan:
        """The plan's runs as struct calls: each run packs with the length prefix of the item after it. The
        frame variant starts with the frame header and method id and ends with the frame-end octet."""
        m = mp.method
        fp = self.codec.frame
        prep: list[tuple[str, str, str]] = []
        pieces: list[Op] = []
        fmt = "".join(STRUCT_BY_SIZE[n] for _, n in (*fp.header, *fp.method_id)) if frame else ""
        args = [str(fp.method_type), "channel", "size", str(m.class_index), str(m.index)] if frame else []
        fixed = 0
        raw_locals: list[str] = []

        safe_octets: set[int] = set()  # positions in args of lengths and bit octets (never negative)

        def close() -> None:
            nonlocal fmt, args, fixed
            if fmt == "B" and 0 in safe_octets:
                # one octet that is a length or bits: index a table of one-octet strings
                pieces.append(Op("octet", args=args))
                fixed += 1
            elif fmt:
                pieces.append(Op("pack", struct=self.structs.pack(fmt), args=args))
                fixed += sum(SIZE[c] for c in fmt)
            fmt, args = "", []
            safe_octets.clear()

        for run in mp.runs:
            for item in run.items:
                if item.kind == "bits":
                    safe_octets.add(len(args))
                    fmt += "B"
                    args.append(_bits_expr([(by_name[f.name], mask) for f, mask in item.bits], "self.") or "0")
                    continue
                f = by_name[item.field.name]
                fmt += STRUCT_BY_SIZE[item.size]
                args.append(f"self.{f.ident}")
            if run.var is None:
                continue
            f = by_name[run.var.field.name]
            prep.append((f.wire, f.local, f.ident))
            if run.var.prefix == 1:
                safe_octets.add(len(args))
            fmt += STRUCT_BY_SIZE[run.var.prefix]
            args.append(f"len({f.local})")
            close()
            pieces.append(Op("raw", local=f.local))
            raw_locals.append(f.local)
        if frame and fmt:
            fmt += "B"  # the frame-end octet rides with the last fixed run
            args.append(str(fp.end))
            close()
        elif frame:
            pieces.append(Op("raw", local=repr(bytes([fp.end])).replace("'", '"')))
            fixed += 1
        else:
            close()
        if frame:
            fixed -= fp.overhead  # the frame size counts neither the header nor the frame-end
        return EncodePlan(prep, pieces, fixed, raw_locals)

    def decode_plan(self, mp: Any, by_name: dict[str, PyField]) -> list[Op]:
        """The plan's runs as unpack calls: each run unpacks with the length prefix after it."""
        ops: list[Op] = []
        fmt = ""
        targets: list[str] = []
        pending: list[Op] = []  # bit expansions after the unpack that reads their octet
        nbits = 0

        def close() -> None:
            nonlocal fmt, targets, pending
            if fmt:
                if fmt == "B":
                    ops.append(Op("octet", local=targets[0]))
                else:
                    ops.append(
                        Op("unpack", struct=self.structs.unpack(fmt), targets=targets, size=sum(SIZE[c] for c in fmt))
                    )
                ops.extend(pending)
            fmt, targets, pending = "", [], []

        for run in mp.runs:
            for item in run.items:
                if item.kind == "bits":
                    local = f"bits{nbits}"
                    nbits += 1
                    fmt += "B"
                    targets.append(local)
                    pending.append(Op("bits", local=local, bits=[(by_name[f.name].local, mask) for f, mask in item.bits]))
                    continue
                fmt += STRUCT_BY_SIZE[item.size]
                targets.append(by_name[item.field.name].local)
            if run.var is None:
                continue
            f = by_name[run.var.field.name]
            if not fmt:
                # the length prefix stands alone: read in place (size = its octets), no struct call of its own
                ops.append(Op(f.wire, local=f.local, size=run.var.prefix))
                continue
            fmt += STRUCT_BY_SIZE[run.var.prefix]
            targets.append("n")
            close()
            ops.append(Op(f.wire, local=f.local))
        close()
        return ops

    def method(self, mp: Any) -> PyMethod:
        m = mp.method
        fields = self.fields(m.fields)
        by_name = {f.name: f for f in fields}
        doc_parts = [m.label[:1].upper() + m.label[1:] + "." if m.label else f"The {m.full_name} method."]
        if m.doc:
            doc_parts.append(m.doc)
        if fields:
            doc_parts.append(
                "Fields:\n"
                + "\n".join(
                    f"- {f.ident} ({f.wire}{', reserved' if f.reserved else ''}){': ' + f.label if f.label else ''}"
                    for f in fields
                )
            )
        return PyMethod(
            model=m,
            cls=self.naming.type(m.class_name, m.name),
            fields=fields,
            encode=self.encode_plan(mp, by_name, frame=False),
            frame=self.encode_plan(mp, by_name, frame=True),
            decode=self.decode_plan(mp, by_name),
            responses=[self.naming.type(*r.split(".", 1)) for r in m.responses],
            doc=docstring("\n\n".join(doc_parts)),
            checks=self.checks(mp, by_name),
        )

    # -- properties -----------------------------------------------------------------------
    def properties(self, pp: Any) -> PyProperties:
        c = pp.cls
        fields = self.fields(c.properties)
        words = len(pp.words)
        names = [["_"] * 16 for _ in range(words)]
        for f in fields:
            f.flag_local = "has_" + f.ident.rstrip("_")
            names[f.flag_word][15 - (f.mask.bit_length() - 1)] = f.flag_local
        flag_words = []
        for w in pp.words:
            # the decoder reads a word as two octets (struct "BB"): the refuse mask split the same way
            hi, lo = FlagOctet(f"hi{w.index}", names[w.index][:8]), FlagOctet(f"lo{w.index}", names[w.index][8:])
            test = [f"{o.local} & {m}" for o, m in ((hi, w.refuse >> 8), (lo, w.refuse & 0xFF)) if m]
            flag_words.append(FlagWord(hi, lo, " or ".join(test)))
        return PyProperties(c, self.naming.type(c.name, "properties"), fields, words, flag_words,
                            {pr.field.name: pr for pr in pp.properties})

    # -- checks ---------------------------------------------------------------------------
    def checks(self, mp: Any, by_name: dict[str, PyField]) -> list[dict[str, Any]]:
        """The plan's checks (amqgen.amqp0.policy) with this target's field and regexp names."""
        out: list[dict[str, Any]] = []
        for ch, rx in zip(mp.checks, self.regexps[mp.method.full_name], strict=True):
            c: dict[str, Any] = template_data(ch, by_name[ch.field.name])
            if rx is not None:
                c["re"] = f"_RE_{rx.number}"
                c["pattern"] = anchor(rx.pattern, "\\Z")
                c["portable"] = anchor(rx.portable, "\\Z")
            out.append(c)
        return out


# -- test values (the conformance tests option) --------------------------------------------------
#: module-level names the generated tests define for the largest values of the variable-size types
MAX_VALUE = {"shortstr": "SHORTSTR_MAX", "longstr": "LONGSTR_MAX", "table": "TABLE_SAMPLE"}


def sample(wire: str, case: str) -> str:
    kind = target_sample(wire, case)
    if kind == "largest":
        return str(LARGEST[wire])
    if kind == "full":
        return MAX_VALUE[wire]
    return {"true": "True", "false": "False", "zero": "0", "empty": DEFAULT[wire]}[kind]


def spell_cases(cases: Any, fields: list[PyField]) -> list[str]:
    """The plan's round-trip cases as constructor keyword arguments."""
    by_name = {f.name: f for f in fields}
    out = []
    for case in cases:
        args = [f"{by_name[n].ident}={v if isinstance(v, bool) else sample(by_name[n].wire, v)}" for n, v in case]
        out.append(", ".join(args))
    return list(dict.fromkeys(out))


def isort_key(name: str) -> tuple[int, str]:
    """The order ruff (RUF022, isort style) wants in ``__all__``: CONSTANTS, Classes, others."""
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


def sort_all(names: list[str]) -> list[str]:
    return sorted(names, key=isort_key)


def test_ident(text: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", text).strip("_").lower()


# -- the render context ----------------------------------------------------------------------------
def client_methods(spec: Any, naming: Any, methods: list[PyMethod]) -> list[dict[str, Any]]:
    """The client API's calls (client.py, aio.py): one per method a client sends on a channel, but the channel's
    own open and close (the adapters do those), each with its reply class (None: no reply), its no-wait field
    and whether it carries content."""
    by_name = {pm.model.full_name: pm for pm in methods}
    plan = behaviour_plan(spec)
    lifecycle = {b.method for b in plan.methods if b.opens or b.closes}
    content = {b.method: b.content for b in plan.methods}
    calls = []
    for b in plan.methods:
        if "client" not in b.senders or b.channel == "zero" or b.answers or lifecycle & {b.method, *b.replies}:
            continue
        pm = by_name[b.method]
        # a reply with content (basic.get-ok) reaches the caller as the client's Message
        replies = [("Message" if content[r] else by_name[r].cls) for r in b.replies] if b.synchronous else []
        nowait = next((f.ident for f in pm.fields if f.name == b.no_wait), None) if b.no_wait else None
        calls.append({
            "name": naming.function(b.method.replace(".", "-")),
            "cls": pm.cls,
            "fields": [f for f in pm.fields if not f.reserved and f.ident != nowait],
            "replies": replies,
            "no_wait": nowait,
            "content": b.content,
        })
    return calls


def recovery_table(spec: Any, naming: Any, keys: dict[str, str]) -> dict[str, Any]:
    """The behaviour plan's ``recovery`` in this target's names (client_core's recovery tables): for each declaring
    and removing method its key and the idents of the fields the recovering client reads and rewrites; the channel
    settings with the bits that tell two settings of one method apart; the refusal codes."""
    plan = behaviour_plan(spec)
    by_name = {m.full_name: m for c in spec.classes for m in c.methods}
    no_wait = {b.method: b.no_wait for b in plan.methods if b.no_wait}
    ident = naming.member

    def nowait(method: str) -> str | None:
        return ident(no_wait[method]) if method in no_wait else None

    decls = []
    for d in plan.recovery.declarations:
        named = None
        if d.named_by is not None:
            reply, fld = d.named_by
            fields = {f.name: f for f in by_name[d.method].fields}
            domain = next(f.domain for f in by_name[reply].fields if f.name == fld)
            named = {"reply": keys[reply], "field": ident(fld),
                     "key": ident(next(k for k in d.key if fields[k].domain == domain))}
        decls.append({"key": keys[d.method], "method": d.method, "kind": d.kind, "fields": [ident(k) for k in d.key],
                      "refers": [(ident(f), t) for f, t in d.refers], "check": ident(d.check) if d.check else None,
                      "named": named, "no_wait": nowait(d.method), "tied": [ident(b) for b in d.tied]})
    removals = [{"key": keys[r.method], "method": r.method, "kind": r.kind, "fields": [ident(k) for k in r.key],
                 "cascades": list(r.cascades)} for r in plan.recovery.removals]
    settings = []
    for s in plan.recovery.channel_settings:
        bits = [ident(f.name) for f in by_name[s].fields if f.type == "bit" and not f.reserved and f.name != no_wait.get(s)]
        settings.append({"key": keys[s], "method": s, "bits": bits, "no_wait": nowait(s)})
    kinds = list(dict.fromkeys(d.kind for d in plan.recovery.declarations))
    return {"declarations": decls, "removals": removals, "settings": settings, "kinds": kinds,
            "refusals": [r.code for r in plan.recovery.refusals]}


def context(spec: Any, naming: Any, options: dict[str, str]) -> dict[str, Any]:
    planner = Planner(spec, naming)
    methods = [planner.method(mp) for mp in planner.codec.methods]
    planner.structs.pack("HH")
    planner.structs.unpack("I")
    method_structs = planner.structs
    planner.structs = Structs()
    props = [planner.properties(pp) for pp in planner.codec.properties]
    for fmt in ("B", "H", "I", "Q"):
        planner.structs.both(fmt)
    planner.structs.unpack("BB")  # a flag word's two octets
    constants = [(naming.constant(c.name), c.value, c.doc) for c in spec.constants]
    tp = target_plan(spec)
    missing = [(naming.constant(k), v) for k, v in tp.missing_frame_constants]
    reply = [
        {
            "name": r.name,
            "const": naming.constant(r.name),
            "value": r.value,
            "soft": r.error_class == "soft",
            "cls": naming.type(r.name if r.name.endswith("error") else r.name + "-error"),
            "doc": docstring(r.doc),
            "frame_error": r.frame_error,
            "syntax_error": r.syntax_error,
        }
        for r in tp.replies
        if r.error_class is not None
    ]
    reply_names = {r["cls"] for r in reply}
    clash = (reply_names - {"FrameError"}) & FIXED_EXCEPTIONS
    if clash:
        raise RenderError(f"reply codes named {sorted(clash)} would shadow the package's own exception classes")
    syntax_cls = next((r["cls"] for r in reply if r["syntax_error"]), None)
    rules = [
        {
            "rule": r,
            "test": "test_" + test_ident(r.id),
            "doc": docstring(
                (r.scenario or "")
                + f"\n\nRule {r.id} ({r.level or 'no level'}"
                + (f", on failure {r.on_failure} {r.on_failure_code}" if r.on_failure else "")
                + "):\n\n"
                + r.doc
            ),
        }
        for r in spec.all_rules()
    ]
    # the engine's method keys: every method by full name, and the connection and channel methods it handles
    keys = {m.full_name: f"({m.class_index}, {m.index})" for c in spec.classes for m in c.methods}
    # the engine's lifecycle roles (amqgen.amqp0.behaviour.Lifecycle): each role's method key, None where absent
    bplan = behaviour_plan(spec)
    life = bplan.lifecycle
    # the generated clients (client_core, client, aio) are written around the behaviour plan's client roles
    # (with the lifecycle's tuning and channel open and close, which they drive too)
    client_roles = {**{r: life.roles()[r] for r in ("tune", "channel_open", "channel_close")}, **bplan.client.roles()}
    engine_keys = {naming.constant(role): keys[name] if name else "None" for role, name in life.roles().items()}
    reopen_rule = life.reopen_rule
    senders = {b.method: b.senders for b in bplan.methods}
    return {
        "py_client": (calls := client_methods(spec, naming, methods)),
        "py_client_imports": sort_all(
            ["METHODS", "Method", *{c["cls"] for c in calls}, *{r for c in calls for r in c["replies"] if r != "Message"}]
        ),
        "py_keys": keys,
        "py_client_keys": {role: keys[name] for role, name in client_roles.items() if name},
        # a spec without these (a test's synthetic one) gets client modules that say so on import
        "py_client_missing": [role for role, name in client_roles.items() if not name],
        # what the clients offer where the spec has it (None where it does not): a delivery's nack (the confirms'
        # nack, where a client sends it too), the server's blocked / unblocked notices, and the capabilities the
        # client advertises (the behaviour plan's)
        "py_client_optional": {
            "delivery_nack": keys[life.nack] if life.nack and "client" in senders.get(life.nack, ()) else None,
            "blocked": keys[bplan.notices.blocked] if bplan.notices.blocked else None,
            "unblocked": keys[bplan.notices.unblocked] if bplan.notices.unblocked else None,
        },
        "py_client_capabilities": list(bplan.capabilities),
        "py_recovery": recovery_table(spec, naming, keys),
        # the properties of the content the client publishes and is delivered (basic's), for the Message's type
        "py_client_properties": next((pp.cls for pp in props
                                      if pp.model.name == str(client_roles.get("publish")).split(".")[0]),
                                     "Properties"),
        "py_engine_keys": engine_keys,
        "py_engine_reopen_rule": reopen_rule,
        "py": {
            "methods": methods,
            "properties": props,
            "structs": method_structs,
            "methods_all": sort_all(
                ["CLASS_IDS", "METHODS", "METHODS_BY_NAME", "Method", "decode_method", "encode_method", "method_class", "unknown_method"]
                + [pm.cls for pm in methods]
            ),
            "bit_tables": sorted({len(op.bits) for pm in methods for op in pm.decode if op.kind == "bits"}),
            "checked_imports": sorted({"Method"} | {pm.cls for pm in methods if pm.checks}),
            "method_has_table": any(f.wire == "table" for pm in methods for f in pm.fields),
            "property_has_table": any(f.wire == "table" for pp in props for f in pp.fields),
            "property_structs": planner.structs,
            "header": spec.protocol_header,
            "constants": constants,
            "missing_frame_constants": missing,
            "reply": reply,
            "has_frame_error": any(r["frame_error"] for r in reply),
            "frame_error_cls": "FrameError",
            "syntax_cls": syntax_cls,
            "reply_names": reply_names,
            "rules": rules,
            "scenarios": [r for r in rules if r["rule"].scenario],
            "method_cases": {pm.cls: spell_cases(mp.cases, pm.fields) for pm, mp in zip(methods, planner.codec.methods)},
            "properties_cases": {
                pp.cls: spell_cases(plan.cases, pp.fields) for pp, plan in zip(props, planner.codec.properties)
            },
            "test_wires": sorted(
                {f.wire for pm in methods for f in pm.fields} | {f.wire for pp in props for f in pp.fields}
            ),
            "tests": options.get("tests", "0") not in ("0", "", "no", "false"),
        },
    }


FILTERS = {"sort_all": sort_all, "docstring": docstring, "pybytes": lambda b: repr(bytes(b))}
