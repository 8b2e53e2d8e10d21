"""The check policies every target applies to the spec's asserts, decided once.

Real brokers do not follow every assert the specs write (RabbitMQ allows 255-octet names where the
spec says 127, ignores access tickets, and several regexps in the specs are broken, W007). Targets
offer three policies, and this module says, per assert of a method's field, what each one does:

- ``rabbitmq`` (default): what RabbitMQ enforces; the asserts it ignores are skipped, with the reason.
- ``portable``: every assert, flagged regexps read as their authors meant (``Assert.portable_value``).
- ``spec``: every assert exactly as written.

Targets translate ``pattern`` / ``portable`` into their own regexp dialect (or matcher); the
patterns here are the spec's, only anchored as the spec means them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .model import Field, Method

POLICIES: tuple[str, ...] = ("rabbitmq", "portable", "spec")
#: No assert in the supported specs names an on-failure code; a violation is a syntax error.
SYNTAX_ERROR_CODE = 502
#: The reply code of a malformed frame (frame-error): what a decoder's errors map to.
FRAME_ERROR_CODE = 501
#: The path syntax of the 0-8 / 0-9 ``path`` domain: "/" then names of [A-Za-z0-9] plus [.-_+!=:].
PATH_SYNTAX = (
    r"^/(?:[A-Za-z0-9.\-_+!=:]*[A-Za-z0-9][A-Za-z0-9.\-_+!=:]*"
    r"(?:/[A-Za-z0-9.\-_+!=:]*[A-Za-z0-9][A-Za-z0-9.\-_+!=:]*)*)?$"
)

#: (check, domain or field path) -> why the "rabbitmq" policy skips that assert
RABBITMQ_SKIPS = {
    ("ne", "access-ticket"): "access tickets are obsolete; clients send 0 and RabbitMQ ignores them",
    ("notnull", "connection.tune-ok.channel-max"): "0 means no limit, which RabbitMQ accepts",
}
SYNTAX_SKIP = "RabbitMQ virtual host names are free-form"
W007_SKIP = "the spec's pattern is broken (W007) and RabbitMQ does not check names"


@dataclass(frozen=True)
class Check:
    """One assert of one method field, as every policy applies it."""

    kind: str  # notnull null length regexp le ne syntax enum
    field: Field
    path: str  # "queue.declare.queue"
    where: str  # "domain.queue-name (amqp0-9-1.xml:123)": where the assert is written
    code: int  # the reply code a violation raises
    rabbitmq_skip: str | None  # why the "rabbitmq" policy skips it, or None
    limit: int | None = None  # length: the spec's limit, in octets
    rabbitmq_limit: int | None = None  # length: the limit under "rabbitmq"
    value: int | None = None  # ne: the forbidden value
    pattern: str | None = None  # regexp (as written) or syntax (PATH_SYNTAX); $ means end of string
    portable: str | None = None  # regexp: the pattern under "portable" (== pattern unless suspicious)
    suspicious: bool = False  # regexp: flagged W007, so "portable" and "spec" differ
    syntax_rule: str | None = None  # syntax: the named syntax ("path")
    ref: str | None = None  # le: the field path whose negotiated value bounds this one
    values: tuple[str, ...] = ()  # enum: the allowed value names (an octet is the index of its name)


def template_data(ch: Check, target_field: object) -> dict[str, object]:
    """A check as a template reads it, holding the target's own object for its field. Patterns are
    left out: each target translates them into its own regexp dialect or matcher."""
    return {
        "kind": ch.kind, "path": ch.path, "field": target_field, "where": ch.where, "code": ch.code,
        "rabbitmq_skip": ch.rabbitmq_skip, "limit": ch.limit, "rabbitmq_limit": ch.rabbitmq_limit,
        "value": ch.value, "suspicious": ch.suspicious, "rule": ch.syntax_rule, "ref": ch.ref,
        "values": list(ch.values),
    }


def checks(m: Method) -> tuple[Check, ...]:
    """Every assert on ``m``'s fields, in field order."""
    out: list[Check] = []
    for f in m.fields:
        for a in f.asserts:
            base = Check(
                kind=a.check,
                field=f,
                path=f.path,
                where=f"{a.loc.path or f.path} ({a.loc.file.rsplit('/', 1)[-1]}:{a.loc.line})",
                code=SYNTAX_ERROR_CODE,
                rabbitmq_skip=RABBITMQ_SKIPS.get((a.check, f.domain or "")) or RABBITMQ_SKIPS.get((a.check, f.path)),
            )
            if a.check == "length":
                limit = int(a.value or 0)
                # 127-octet name limits: RabbitMQ allows the whole shortstr (255)
                rl = 255 if f.type == "shortstr" and limit < 255 else limit
                base = replace(base, limit=limit, rabbitmq_limit=rl)
            elif a.check == "ne":
                base = replace(base, value=int(a.value or 0))
            elif a.check == "regexp":
                pattern = a.value or ""
                portable = a.portable_value or pattern
                suspicious = portable != pattern
                base = replace(base, pattern=pattern, portable=portable, suspicious=suspicious,
                               rabbitmq_skip=W007_SKIP if suspicious else base.rabbitmq_skip)
            elif a.check == "syntax":
                base = replace(base, rabbitmq_skip=SYNTAX_SKIP, pattern=PATH_SYNTAX, portable=PATH_SYNTAX,
                               syntax_rule=a.syntax_rule)
            elif a.check == "le":
                base = replace(base, ref=a.ref)
            elif a.check == "enum":
                base = replace(base, values=a.values)
            out.append(base)
    return tuple(out)
