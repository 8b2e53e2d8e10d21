"""The Java target's hook: its type map, and the codec plans the templates format.

Java types per wire type, the unrolled read and write steps of every method and properties
class (one bounds check per run of fixed-size fields plus the length prefix after it), the
reply-code exception names and the test values. Shared facts come from the model,
``amqgen.amqp0.wire`` and ``amqgen.amqp0.policy``; this file only maps them to Java.
"""

import re
from dataclasses import dataclass
from typing import Any

from amqgen.amqp0.behaviour import behaviour_plan
from amqgen.amqp0.plan import codec_plan
from amqgen.amqp0.policy import FRAME_ERROR_CODE, SYNTAX_ERROR_CODE, template_data
from amqgen.amqp0.targets import LARGEST, anchor, target_plan
from amqgen.amqp0.targets import sample as target_sample
from amqgen.amqp0.wire import FRAME_OVERHEAD, HEADER_PREFIX, MAX_TABLE_DEPTH
from amqgen.errors import RenderError
from amqgen.naming import JAVA_RESERVED

#: wire type -> (Java type of a method argument, boxed type of a property, default literal)
JAVA_TYPE: dict[str, tuple[str, str, str]] = {
    "bit": ("boolean", "Boolean", "false"),
    "octet": ("int", "Integer", "0"),
    "short": ("int", "Integer", "0"),
    "long": ("long", "Long", "0L"),
    "longlong": ("long", "Long", "0L"),
    "timestamp": ("long", "Long", "0L"),
    "shortstr": ("String", "String", '""'),
    "longstr": ("Bytes", "Bytes", "Bytes.EMPTY"),
    "table": ("Map<String, Object>", "Map<String, Object>", "Map.of()"),
}
#: fixed-size wire types: (Wire reader, FrameWriter/Wire writer)
FIXED: dict[str, tuple[str, str]] = {
    "octet": ("u8", "put8"),
    "short": ("u16", "put16"),
    "long": ("u32", "put32"),
    "longlong": ("i64", "put64"),
    "timestamp": ("i64", "put64"),
}

#: members of the Method and Properties interfaces (and of every record): a spec field may not take one
RESERVED_MEMBERS = frozenset(
    ["protocolClassId", "protocolMethodId", "protocolName", "kind", "isSynchronous", "hasContent", "direction",
     "responses", "encodeTo", "encode", "toBuilder", "hashCode", "toString", "equals", "getClass", "wait",
     "notify", "notifyAll", "clone", "finalize", "present"]
)
#: types the package defines itself; a method or class name must not produce one of these
FIXED_TYPES = frozenset(
    ["AmqpException", "Bytes", "Checks", "Constants", "DecodeException", "Dialect", "Direction", "EncodeException",
     "FieldTables", "Frame", "FrameReader", "FrameWriter", "Method", "MethodKind", "Methods", "Properties",
     "ReplyCode", "ReplyException", "Rules", "Typed", "Wire", "Engine", "EngineEvent", "ChannelState",
     "LocalProtocolException", "Client", "Delivery", "AmqpUri"]
)
#: what a package name segment may not be: the naming layer's reserved words, less the contextual ones
JAVA_KEYWORDS = JAVA_RESERVED - {"var", "yield", "record", "sealed", "permits", "non-sealed", "when"}


def check_package(name: str) -> str:
    parts = name.split(".")
    for part in parts:
        if not re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", part) or part in JAVA_KEYWORDS:
            raise RenderError(f"option package={name!r} is not a Java package name (segment {part!r})")
    return name


def path_names(options: dict[str, str]) -> dict[str, str]:
    """Output path placeholders: {package_path} is the package's folder (com/example/amqp)."""
    return {"package_path": check_package(options.get("package", "")).replace(".", "/")}


def javadoc(text: str, indent: str = "") -> str:
    """Spec text as the body of a Javadoc comment: HTML-escaped, no comment end, no unicode
    escapes (javac reads backslash-u even in comments), one ' * ' line per line."""
    text = (text or "").strip()
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\\", "&#92;")
    text = text.replace("*/", "*&#47;").replace("@", "&#64;")
    lines = [ln.rstrip() for ln in text.split("\n")]
    return "\n".join(f"{indent} *" + (" " + ln if ln else "") for ln in lines)


@dataclass
class JField:
    name: str  # canonical
    path: str
    ident: str
    cap: str  # ident with a capital first letter, for withX / hasX
    wire: str
    jtype: str
    boxed: str
    default: str
    label: str
    reserved: bool
    mask: int = 0  # properties: the bit in their flag word
    flag_word: int = 0


@dataclass
class JMethod:
    model: Any
    cls: str
    kind: str  # the MethodKind constant
    fields: list[JField]
    f: dict[str, JField]  # by canonical name, for the plan's fields
    plan: Any  # amqgen.amqp0.plan.MethodPlan: runs, dispatch key
    responses: list[str]
    checks: list[dict[str, Any]]


@dataclass
class JProperties:
    model: Any
    cls: str
    fields: list[JField]
    plan: Any  # amqgen.amqp0.plan.PropertiesPlan: flag words, property sizes
    p: dict[str, Any]  # the plan's properties by canonical name

    @property
    def flag_words(self) -> int:
        return len(self.plan.words)


def _cap(ident: str) -> str:
    return ident[:1].upper() + ident[1:]


class Planner:
    def __init__(self, spec: Any, naming: Any) -> None:
        self.naming = naming
        self.regexps = target_plan(spec).regexps

    def fields(self, model_fields: Any, where: str) -> list[JField]:
        out = []
        for f in model_fields:
            ident = self.naming.member(f.name)
            if ident in RESERVED_MEMBERS:
                raise RenderError(f"{where}: field {f.name!r} would be Java member {ident!r}, which the package uses",
                                  f.loc)
            jtype, boxed, default = JAVA_TYPE[f.type]
            out.append(JField(
                name=f.name, path=f.path, ident=ident, cap=_cap(ident.rstrip("_")), wire=f.type, jtype=jtype,
                boxed=boxed, default=default, label=f.label or "", reserved=f.reserved,
                mask=f.flag_mask or 0, flag_word=f.flag_word or 0,
            ))
        return out

    def method(self, mp: Any) -> JMethod:
        m = mp.method
        fields = self.fields(m.fields, m.full_name)
        return JMethod(
            model=m,
            cls=self.naming.type(m.class_name, m.name),
            kind=self.naming.constant(m.class_name, m.name),
            fields=fields,
            f={f.name: f for f in fields},
            plan=mp,
            responses=[self.naming.type(*r.split(".", 1)) for r in m.responses],
            checks=self.checks(mp, fields),
        )

    def properties(self, pp: Any) -> JProperties:
        c = pp.cls
        return JProperties(c, self.naming.type(c.name, "properties"), self.fields(c.properties, c.name + " properties"),
                           pp, {pr.field.name: pr for pr in pp.properties})

    def checks(self, mp: Any, fields: list[JField]) -> list[dict[str, Any]]:
        """The plan's checks (amqgen.amqp0.policy) with this target's field and pattern names."""
        by_name = {f.name: f for f in fields}
        out: list[dict[str, Any]] = []
        for ch, rx in zip(mp.checks, self.regexps[mp.method.full_name], strict=True):
            c: dict[str, Any] = template_data(ch, by_name[ch.field.name])
            if rx is not None:
                c["re"] = f"RE_{rx.number}"
                c["pattern"] = anchor(rx.pattern, "\\z")
                c["portable"] = anchor(rx.portable, "\\z")
            out.append(c)
        return out


def long_literal(value: int) -> str:
    """An unsigned integer as a Java literal: int up to 2^31 - 1, then long, two's complement past 2^63 - 1."""
    if value < 2**31:
        return str(value)
    return f"{value - 2**64 if value >= 2**63 else value}L"


# -- test values (the conformance tests option) --------------------------------------------------------------
def sample(f: JField, case: str) -> str:
    """A Java expression for a field's value in the round-trip tests: its default or its largest."""
    kind = target_sample(f.wire, case)
    if kind == "true":
        return "true"
    if kind == "largest":
        return long_literal(LARGEST[f.wire])
    if kind == "full":
        return {"shortstr": "Samples.SHORTSTR_MAX", "longstr": "Samples.LONGSTR_MAX", "table": "Samples.table()"}[f.wire]
    return f.default


def method_cases(jm: JMethod) -> list[list[str]]:
    """The plan's round-trip cases as constructor arguments (a field the case does not name keeps its default)."""
    unique: dict[str, list[str]] = {}
    for case in jm.plan.cases:
        given = dict(case)
        args = [str(given[f.name]).lower() if isinstance(given.get(f.name), bool) else sample(f, given.get(f.name, "min"))
                for f in jm.fields]
        unique.setdefault(", ".join(args), args)
    return list(unique.values())


# -- the render context ----------------------------------------------------------------------------------------
def context(spec: Any, naming: Any, options: dict[str, str]) -> dict[str, Any]:
    package = check_package(options.get("package", ""))
    codec = codec_plan(spec)
    planner = Planner(spec, naming)
    methods = [planner.method(mp) for mp in codec.methods]
    props = [planner.properties(pp) for pp in codec.properties]
    clash = sorted({jm.cls for jm in methods} & FIXED_TYPES | {jp.cls for jp in props} & FIXED_TYPES)
    if clash:
        raise RenderError(f"{spec.name}: method or class names give Java types the package defines itself: {clash}")
    tp = target_plan(spec)
    constants = [{"ident": naming.constant(c.name), "value": c.value, "doc": c.doc, "name": c.name}
                 for c in spec.constants]
    missing = [{"ident": naming.constant(k), "value": v} for k, v in tp.missing_frame_constants]
    reply = [{
        "name": r.name,
        "const": naming.constant(r.name),
        "value": r.value,
        "error_class": r.error_class,
        "cls": naming.type(r.name, "exception") if r.error_class else None,
        "doc": r.doc,
        "frame_error": r.frame_error,
    } for r in tp.replies]
    frame_error = next((r for r in reply if r["frame_error"] and r["error_class"] == "hard"), None)
    return {
        "engine": engine_context(spec, naming),
        "java": {
            "package": package,
            "methods": methods,
            "properties": props,
            "header": list(spec.protocol_header),
            "constants": constants,
            "missing_frame_constants": missing,
            "frame_overhead": FRAME_OVERHEAD,
            "header_prefix": HEADER_PREFIX,
            "max_table_depth": MAX_TABLE_DEPTH,
            "reply": reply,
            "frame_error": frame_error,
            "syntax_error_code": SYNTAX_ERROR_CODE,
            "rules": spec.all_rules(),
            "fixed": FIXED,
            "method_cases": {jm.cls: method_cases(jm) for jm in methods},
            "sample": sample,
        },
    }


def jinline(text: str) -> str:
    """Spec text inside one Javadoc line: escaped as javadoc() does, whitespace collapsed."""
    return " ".join(javadoc(text).replace(" *", " ").split())


def _hex(value: int, width: int = 8) -> str:
    return f"0x{value:0{width}X}"


FILTERS = {"javadoc": javadoc, "jinline": jinline, "hex": _hex}


# -- the engine and the client (issue 34) ----------------------------------------------------------------------
#: what a violation's reply code is when the spec defines none of the constants the plan looks for
_FALLBACK_CODE = FRAME_ERROR_CODE
#: the content assembly limit: a content header announcing more is refused (memory bounded, see Engine's Javadoc)
MAX_BODY_SIZE = 1 << 30


def _kind(naming: Any, full: str) -> str:
    return str(naming.constant(*full.split(".", 1)))


#: the template's key for each plan role (Lifecycle.roles() and ClientRoles.roles()), and the fields it reads of it
_ROLE_KEYS: dict[str, tuple[str, tuple[str, ...]]] = {
    "start": ("start", ("mechanisms",)), "start_ok": ("start_ok", ()),
    "tune": ("tune", ("channel-max", "frame-max", "heartbeat")),
    "tune_ok": ("tune_ok", ("channel-max", "frame-max", "heartbeat")),
    "connection_open": ("open", ("virtual-host",)), "connection_open_ok": ("open_ok", ()),
    "connection_close": ("close", ("reply-code", "reply-text", "class-id", "method-id")),
    "connection_close_ok": ("close_ok", ()), "channel_open": ("ch_open", ()), "channel_open_ok": ("ch_open_ok", ()),
    "channel_close": ("ch_close", ("reply-code", "reply-text", "class-id", "method-id")),
    "channel_close_ok": ("ch_close_ok", ()), "confirm_select": ("confirm", ()),
    "ack": ("ack", ("delivery-tag", "multiple")), "nack": ("nack", ("delivery-tag", "multiple")),
    "publish": ("publish", ()), "deliver": ("deliver", ("consumer-tag", "delivery-tag")),
    "consume": ("consume", ("consumer-tag",)), "consume_ok": ("consume_ok", ("consumer-tag",)),
    "cancel": ("cancel", ("consumer-tag",)), "cancel_ok": ("cancel_ok", ("consumer-tag",)),
    "delivery_reject": ("reject", ("delivery-tag", "requeue")),
}


def _lifecycle(spec: Any, naming: Any) -> dict[str, Any]:
    """The plan's lifecycle and client roles (amqgen.amqp0.behaviour) in this target's names: each role's
    MethodKind constant, record type and the accessors of the fields the templates read. A role the spec lacks,
    or whose method lacks one of those fields, is None and the templates leave out what needs it."""
    plan = behaviour_plan(spec)
    by_name = {m.full_name: m for c in spec.classes for m in c.methods}
    roles = {**plan.client.roles(), **plan.lifecycle.roles()}  # publish: the lifecycle's, the method a confirm counts

    def method(full: str | None, fields: tuple[str, ...]) -> dict[str, Any] | None:
        m = by_name.get(full) if full else None
        if m is None or any(f not in {x.name for x in m.fields} for f in fields):
            return None
        return {"kind": _kind(naming, m.full_name), "cls": naming.type(*m.full_name.split(".", 1)),
                **{f.replace("-", "_"): naming.member(f) for f in fields}}

    lc: dict[str, Any] = {key: method(roles.get(role), fields) for role, (key, fields) in _ROLE_KEYS.items()}
    # channel.flow's bit is the plan's flow_field (both flow and flow-ok carry it)
    flow = (plan.lifecycle.flow_field,) if plan.lifecycle.flow_field else None
    lc["flow"] = method(plan.lifecycle.flow, flow) if flow else None
    lc["flow_ok"] = method(plan.lifecycle.flow_ok, flow) if flow else None
    if lc["flow"] and plan.lifecycle.flow_field:
        lc["flow"]["active"] = naming.member(plan.lifecycle.flow_field)
    # basic.return: a publish handed back, matched to its publish by the plan's publish_fields (the return
    # carries no delivery tag); both methods must carry those fields, else returns are plain messages
    key = plan.lifecycle.publish_fields
    publish, returned = method(plan.lifecycle.publish, key), method(plan.lifecycle.returned, key)
    lc["returned"] = returned if key and publish else None
    lc["return_key"] = [naming.member(f) for f in key] if lc["returned"] else []
    # the server's notices about the connection (RabbitMQ's, in the overlay rabbitmq-blocked), where the spec has them
    lc["blocked"] = method(plan.notices.blocked, ("reason",))
    # a consumer's no-ack bit: without it the deliveries a closed iterator never handed out go back to the queue
    consume = by_name.get(roles.get("consume") or "")
    lc["consume_no_ack"] = naming.member("no-ack") if consume and "no-ack" in {f.name for f in consume.fields} else None
    lc["unblocked"] = method(plan.notices.unblocked, ())
    lc["resource_error"] = next((c.value for c in spec.reply_codes if c.name == "resource-error"), FRAME_ERROR_CODE)
    return lc


def engine_context(spec: Any, naming: Any) -> dict[str, Any]:
    """The behaviour plan in this target's names, and the client's generated calls."""
    plan = behaviour_plan(spec)
    by_name = {m.full_name: m for c in spec.classes for m in c.methods}
    methods = []
    calls = []
    for b in plan.methods:
        m = by_name[b.method]
        kind = _kind(naming, b.method)
        no_wait = naming.member(b.no_wait) if b.no_wait else None
        methods.append({
            "kind": kind, "cls": naming.type(*b.method.split(".", 1)), "client": "client" in b.senders,
            "server": "server" in b.senders, "zero": b.channel == "zero", "sync": b.synchronous,
            "replies": [_kind(naming, r) for r in b.replies if r in by_name],
            "answers": [_kind(naming, r) for r in b.answers if r in by_name], "content": b.content,
            "opens": b.opens, "closes": b.closes, "negotiation": b.negotiation, "no_wait": no_wait,
        })
        # the client's calls: what a client sends on a channel that is neither a reply, content, nor the channel's
        # own open and close (the Channel object does those)
        if ("client" in b.senders and b.channel == "nonzero" and not b.answers and not b.content
                and not b.opens and not b.closes):
            replies = [naming.type(*r.split(".", 1)) for r in b.replies if r in by_name]
            waits = b.synchronous and bool(replies)
            calls.append({
                "name": naming.function(*b.method.split(".", 1)), "cls": naming.type(*b.method.split(".", 1)),
                "returns": (replies[0] if len(replies) == 1 else "Method") if waits else "void",
                "no_wait": no_wait, "label": m.label or b.method, "method": b.method,
            })
    steps = [{"sender": (s.sender or "").upper() or None, "kind": _kind(naming, s.method) if s.method else None,
              "repeats": s.repeats} for s in plan.negotiation]
    violations = {v.kind.replace("-", "_"): {"code": v.code if v.code is not None else _FALLBACK_CODE,
                                             "hard": v.hard, "what": v.what} for v in plan.violations}
    return {"methods": methods, "calls": calls, "steps": steps, "violations": violations,
            "lc": _lifecycle(spec, naming), "max_body_size": MAX_BODY_SIZE, "recovery": _recovery(spec, naming)}


# -- connection recovery (issue 42, docs/recovery.md) ------------------------------------------------------------
def _recovery(spec: Any, naming: Any) -> dict[str, Any]:
    """The behaviour plan's ``recovery`` in this target's names: for each declaring and removing method its record
    type and the accessors (and withX names) of the fields the recovering client reads and rewrites; the channel
    settings with the bits that tell two settings of one method apart; the refusal codes."""
    plan = behaviour_plan(spec)
    by_name = {m.full_name: m for c in spec.classes for m in c.methods}
    no_wait = {b.method: b.no_wait for b in plan.methods if b.no_wait}

    def acc(name: str) -> dict[str, str]:
        ident = naming.member(name)
        return {"name": name, "getter": ident, "wither": "with" + _cap(ident.rstrip("_"))}

    decls = []
    for d in plan.recovery.declarations:
        m = by_name[d.method]
        fields = {f.name: f for f in m.fields}
        named = None
        if d.named_by is not None:
            reply, field = d.named_by
            domain = next(f.domain for f in by_name[reply].fields if f.name == field)
            target = next(k for k in d.key if fields[k].domain == domain)
            named = {"reply": naming.type(*reply.split(".", 1)), "field": acc(field), "key": acc(target)}
        decls.append({
            "cls": naming.type(*d.method.split(".", 1)), "method": d.method, "kind": d.kind,
            "key": [acc(k) for k in d.key], "refers": [{**acc(f), "target": t} for f, t in d.refers],
            "check": acc(d.check) if d.check else None, "named": named,
            "no_wait": acc(no_wait[d.method]) if d.method in no_wait else None,
            "tied": [acc(b) for b in d.tied],
        })
    removals = [{"cls": naming.type(*r.method.split(".", 1)), "method": r.method, "kind": r.kind,
                 "key": [acc(k) for k in r.key], "cascades": list(r.cascades)} for r in plan.recovery.removals]
    settings = []
    for s in plan.recovery.channel_settings:
        m = by_name[s]
        bits = [acc(f.name) for f in m.fields if f.type == "bit" and not f.reserved and f.name != no_wait.get(s)]
        settings.append({"cls": naming.type(*s.split(".", 1)), "method": s, "bits": bits,
                         "no_wait": acc(no_wait[s]) if s in no_wait else None})
    return {"declarations": decls, "removals": removals, "settings": settings,
            "refusals": [{"code": r.code, "why": r.why, "constant": r.constant} for r in plan.recovery.refusals]}
