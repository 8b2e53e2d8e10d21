"""The AMQP 1.0 behaviour plan: what the spec states about the endpoints as data, computed once from the model
beside the codec plan (:mod:`amqgen.amqp10.plan`), so every 1.0 engine target (Python now, C and Java later) reads
the same facts instead of writing them again.

- each performative (the ``frame`` archetype) and SASL frame (``sasl-frame``): its frame type, where it travels
  (channel 0, a session's channel, ignored), and the endpoint it opens, closes or acts on (OASIS AMQP 1.0, part 2
  sections 2.4 connections, 2.5 sessions, 2.6 links, 2.7 performatives; part 5.3 SASL);
- each violation an engine detects, with the error condition the spec names for it: the condition's symbol is read
  from the model's ``amqp-error`` / ``connection-error`` / ``session-error`` / ``link-error`` choices, so a spec
  that lost one fails here rather than in a generated engine;
- the defaults (max-frame-size, channel-max, handle-max, the settle modes) read from the fields' defaults in the
  XML, and the definitions (MIN-MAX-FRAME-SIZE, the protocol versions).

What only the prose says and is not a table (how windows move, when a delivery settles) is written once, in the
engine, with its section numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..errors import Location, SpecError
from . import wire
from .model import Composite, Restricted, Spec

Endpoint = Literal["connection", "session", "link", "delivery", "sasl"]
Action = Literal["open", "close", "act"]
Travel = Literal["channel-0", "session-channel", "ignored"]


@dataclass(frozen=True)
class Performative:
    name: str  # "attach"
    code: int  # its descriptor
    frame_type: int  # 0 AMQP, 1 SASL (2.3.1, 5.3.1)
    travel: Travel  # where its channel points: always 0 (open, close), the session's channel, or ignored (SASL)
    endpoint: Endpoint  # the endpoint it opens, closes or acts on
    action: Action
    section: str  # the spec's section, "2.7.3"


@dataclass(frozen=True)
class Violation:
    name: str  # the engine's name for what went wrong: "window-violation"
    restricted: str  # the restricted type whose choice names it: "session-error"
    choice: str  # the choice's name: "window-violation"
    condition: str  # the symbol on the wire, from the model: "amqp:session:window-violation"
    scope: Endpoint  # what the error ends: the connection (close), the session (end) or the link (detach)
    section: str
    why: str


@dataclass(frozen=True)
class Behaviour:
    performatives: tuple[Performative, ...]
    violations: tuple[Violation, ...]
    defaults: tuple[tuple[str, Any], ...]  # ("open.max-frame-size", 4294967295), ...
    conditions: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # every error-condition type: its choices
    sasl_codes: tuple[tuple[str, int], ...]  # sasl-code's choices (5.3.3.6)
    roles: tuple[tuple[str, bool], ...]  # role's choices (2.8.1)
    sender_settle_modes: tuple[tuple[str, int], ...]  # 2.8.2
    receiver_settle_modes: tuple[tuple[str, int], ...]  # 2.8.3
    min_max_frame_size: int  # 2.7.1: no peer may agree to less (MIN-MAX-FRAME-SIZE)
    protocol_ids: tuple[tuple[str, int], ...]  # 2.2, 5.2, 5.3

    def performative(self, name: str) -> Performative:
        return {p.name: p for p in self.performatives}[name]

    def violation(self, name: str) -> Violation:
        return {v.name: v for v in self.violations}[name]

    def default(self, name: str) -> Any:
        return dict(self.defaults)[name]

    def choice(self, table: str, name: str) -> Any:
        """A choice's value: ``choice("sasl_codes", "ok")`` is 0."""
        return dict(getattr(self, table))[name]


# Fixed knowledge from the prose, as data: (performative, travel, endpoint, action, section). Open and close travel
# on channel 0 only (2.7.1, 2.7.9); begin and end name the session by their channel (2.5.1); attach, flow, transfer,
# disposition and detach travel on their session's channel and name a link by handle (2.6.2); a flow without a
# handle acts on the session alone (2.7.4). SASL frames ignore the channel (5.3.1).
_PERFORMATIVES: tuple[tuple[str, Travel, Endpoint, Action, str], ...] = (
    ("open", "channel-0", "connection", "open", "2.7.1"),
    ("begin", "session-channel", "session", "open", "2.7.2"),
    ("attach", "session-channel", "link", "open", "2.7.3"),
    ("flow", "session-channel", "link", "act", "2.7.4"),
    ("transfer", "session-channel", "delivery", "act", "2.7.5"),
    ("disposition", "session-channel", "delivery", "act", "2.7.6"),
    ("detach", "session-channel", "link", "close", "2.7.7"),
    ("end", "session-channel", "session", "close", "2.7.8"),
    ("close", "channel-0", "connection", "close", "2.7.9"),
    ("sasl-mechanisms", "ignored", "sasl", "open", "5.3.3.1"),
    ("sasl-init", "ignored", "sasl", "act", "5.3.3.2"),
    ("sasl-challenge", "ignored", "sasl", "act", "5.3.3.3"),
    ("sasl-response", "ignored", "sasl", "act", "5.3.3.4"),
    ("sasl-outcome", "ignored", "sasl", "close", "5.3.3.5"),
)

# The violations an engine detects, each with the condition the spec names (the restricted type and its choice,
# looked up in the model) and what it ends.
_VIOLATIONS: tuple[tuple[str, str, str, Endpoint, str, str], ...] = (
    ("framing", "connection-error", "framing-error", "connection", "2.3.1",
     "a frame whose size or data offset is impossible, or a protocol header inside the frame stream"),
    ("frame-too-large", "connection-error", "framing-error", "connection", "2.7.1",
     "a frame larger than the max-frame-size this end announced"),
    ("decode", "amqp-error", "decode-error", "connection", "2.3.2",
     "a frame body that does not decode as one performative"),
    ("not-a-frame", "amqp-error", "not-allowed", "connection", "2.3.2",
     "a frame body that decodes but is not a performative of this frame type"),
    ("before-open", "amqp-error", "illegal-state", "connection", "2.4.1",
     "a performative other than open before the peer's open, or a second open"),
    ("after-close", "amqp-error", "illegal-state", "connection", "2.4.3",
     "a frame after the peer's close"),
    ("channel-max", "connection-error", "framing-error", "connection", "2.7.1",
     "a channel number above the channel-max this end announced"),
    ("unknown-channel", "amqp-error", "not-allowed", "connection", "2.5.1",
     "a session performative on a channel no begin has mapped"),
    ("channel-in-use", "amqp-error", "not-allowed", "connection", "2.5.1",
     "a begin on a channel the peer already uses"),
    ("frame-size-too-small", "amqp-error", "frame-size-too-small", "connection", "2.7.1",
     "an open whose max-frame-size is below MIN-MAX-FRAME-SIZE"),
    ("invalid-field", "amqp-error", "invalid-field", "connection", "2.7.1",
     "a performative field whose value the spec forbids (a begin answering an unknown channel)"),
    ("idle-timeout", "amqp-error", "resource-limit-exceeded", "connection", "2.4.5",
     "no frame from the peer within its announced idle time-out"),
    ("window-violation", "session-error", "window-violation", "session", "2.5.6",
     "a transfer beyond the incoming window this end announced"),
    ("link-name-in-use", "amqp-error", "invalid-field", "connection", "2.6.1",
     "an attach naming a link (name and role) the peer has attached on this session already"),
    ("handle-in-use", "session-error", "handle-in-use", "session", "2.6.2",
     "an attach on a handle the peer already uses"),
    ("unattached-handle", "session-error", "unattached-handle", "session", "2.6.2",
     "a flow, transfer or detach naming a handle no attach has mapped"),
    ("handle-max", "amqp-error", "not-allowed", "session", "2.7.2",
     "an attach whose handle is above the handle-max this end announced"),
    ("errant-link", "session-error", "errant-link", "session", "2.6.3",
     "a transfer or flow for a link in the wrong role (a transfer to a sending link)"),
    ("transfer-limit-exceeded", "link-error", "transfer-limit-exceeded", "link", "2.6.7",
     "a transfer on a link without credit"),
    ("message-size-exceeded", "link-error", "message-size-exceeded", "link", "2.7.3",
     "a message larger than the link's max-message-size"),
    ("delivery-id", "amqp-error", "not-allowed", "session", "2.7.5",
     "a transfer whose delivery id is not the next one, or a continuation that changes it"),
    ("unknown-delivery", "amqp-error", "illegal-state", "session", "2.7.6",
     "a disposition naming deliveries the other side never sent (past the last delivery id it used)"),
)

# The defaults an engine needs: (composite, field); the value is the XML's default.
_DEFAULTS: tuple[tuple[str, str], ...] = (
    ("open", "max-frame-size"), ("open", "channel-max"), ("begin", "handle-max"), ("attach", "snd-settle-mode"),
    ("attach", "rcv-settle-mode"), ("flow", "drain"), ("flow", "echo"), ("transfer", "more"),
    ("transfer", "aborted"),
)

_BEHAVIOURS: dict[int, tuple[Spec, Behaviour]] = {}  # by the model's identity, like codec_plan


def behaviour_plan(spec: Spec) -> Behaviour:
    """The behaviour plan of ``spec``, computed once per model object."""
    hit = _BEHAVIOURS.get(id(spec))
    if hit is None or hit[0] is not spec:
        hit = _BEHAVIOURS[id(spec)] = (spec, _build(spec))
    return hit[1]


def _build(spec: Spec) -> Behaviour:
    types = spec.type_by_name()
    where = Location(spec.path)

    def restricted(name: str) -> Restricted:
        t = types.get(name)
        if not isinstance(t, Restricted):
            raise SpecError(f"the 1.0 engine needs the restricted type {name!r}, which this file set lacks", where)
        return t

    def composite(name: str) -> Composite:
        t = types.get(name)
        if not isinstance(t, Composite):
            raise SpecError(f"the 1.0 engine needs the composite {name!r}, which this file set lacks", where)
        return t

    frames = set(spec.archetypes.get("frame", ()))
    sasl = set(spec.archetypes.get("sasl-frame", ()))
    performatives = []
    for name, travel, endpoint, action, section in _PERFORMATIVES:
        if name not in frames | sasl:
            raise SpecError(f"{name!r} is not a frame or sasl-frame of this file set", where)
        performatives.append(Performative(
            name, composite(name).descriptor.code, wire.FRAME_TYPE_SASL if name in sasl else wire.FRAME_TYPE_AMQP,
            travel, endpoint, action, section))
    left = (frames | sasl) - {p[0] for p in _PERFORMATIVES}
    if left:  # a new performative has no behaviour yet: say so rather than generate an engine that drops it
        raise SpecError(f"performatives without a behaviour: {sorted(left)}", where)

    violations = []
    for name, rtype, choice, scope, section, why in _VIOLATIONS:
        named = {c.name: c.value for c in restricted(rtype).choices}
        if choice not in named:
            raise SpecError(f"{rtype} has no choice {choice!r}", where)
        violations.append(Violation(name, rtype, choice, str(named[choice]), scope, section, why))

    defaults = []
    for cname, fname in _DEFAULTS:
        field = {f.name: f for f in composite(cname).fields}.get(fname)
        if field is None or field.value is None:
            raise SpecError(f"{cname}.{fname} has no default in this file set", where)
        defaults.append((f"{cname}.{fname}", field.value))

    def choices(name: str) -> tuple[tuple[str, Any], ...]:
        return tuple((c.name, c.value) for c in restricted(name).choices)

    return Behaviour(
        performatives=tuple(performatives),
        violations=tuple(violations),
        defaults=tuple(defaults),
        conditions=tuple((n, tuple((c, str(v)) for c, v in choices(n)))
                         for n in spec.archetypes.get("error-condition", ())),
        sasl_codes=tuple((n, int(v)) for n, v in choices("sasl-code")),
        roles=tuple((n, bool(v)) for n, v in choices("role")),
        sender_settle_modes=tuple((n, int(v)) for n, v in choices("sender-settle-mode")),
        receiver_settle_modes=tuple((n, int(v)) for n, v in choices("receiver-settle-mode")),
        min_max_frame_size=int(spec.definition("MIN-MAX-FRAME-SIZE").value),
        protocol_ids=(("amqp", wire.PROTOCOL_ID_AMQP), ("tls", wire.PROTOCOL_ID_TLS), ("sasl", wire.PROTOCOL_ID_SASL)),
    )
