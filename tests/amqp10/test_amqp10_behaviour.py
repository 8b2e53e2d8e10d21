"""The AMQP 1.0 behaviour plan (issue 35, part 1): the facts below are written out by hand from the OASIS AMQP 1.0
specification (part 2 sections 2.4-2.8, part 5.3), not taken from amqgen's output."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from amqgen.amqp10.behaviour import behaviour_plan
from amqgen.amqp10.loader import load_spec
from amqgen.amqp10.model import Spec
from amqgen.errors import SpecError

pytestmark = pytest.mark.model  # its tier, not its folder's (tests/conftest.py)

FOLDER = Path("/usr/share/amqp/specs/1-0")

#: 2.7: name -> (descriptor id, channel, endpoint, opens/closes/acts)
PERFORMATIVES = {
    "open": (0x10, "channel-0", "connection", "open"), "begin": (0x11, "session-channel", "session", "open"),
    "attach": (0x12, "session-channel", "link", "open"), "flow": (0x13, "session-channel", "link", "act"),
    "transfer": (0x14, "session-channel", "delivery", "act"),
    "disposition": (0x15, "session-channel", "delivery", "act"),
    "detach": (0x16, "session-channel", "link", "close"), "end": (0x17, "session-channel", "session", "close"),
    "close": (0x18, "channel-0", "connection", "close"),
}
#: 2.8.15-2.8.18: the conditions on the wire
CONDITIONS = {
    "window-violation": "amqp:session:window-violation", "handle-in-use": "amqp:session:handle-in-use",
    "unattached-handle": "amqp:session:unattached-handle", "errant-link": "amqp:session:errant-link",
    "transfer-limit-exceeded": "amqp:link:transfer-limit-exceeded",
    "message-size-exceeded": "amqp:link:message-size-exceeded", "framing": "amqp:connection:framing-error",
    "frame-too-large": "amqp:connection:framing-error", "decode": "amqp:decode-error",
    "idle-timeout": "amqp:resource-limit-exceeded", "frame-size-too-small": "amqp:frame-size-too-small",
    "before-open": "amqp:illegal-state",
}


@pytest.fixture(scope="module")
def spec() -> Spec:
    assert FOLDER.is_dir(), f"{FOLDER} is missing (Debian package amqp-specs, deps/debian.txt)"
    return load_spec(FOLDER)


def test_performatives_travel_and_endpoints(spec: Spec) -> None:
    b = behaviour_plan(spec)
    got = {p.name: (p.code, p.travel, p.endpoint, p.action) for p in b.performatives if p.frame_type == 0}
    assert got == PERFORMATIVES
    sasl = {p.name: p.code for p in b.performatives if p.frame_type == 1}  # 5.3.3
    assert sasl == {"sasl-mechanisms": 0x40, "sasl-init": 0x41, "sasl-challenge": 0x42, "sasl-response": 0x43,
                    "sasl-outcome": 0x44}
    assert all(p.section.startswith("2.7.") for p in b.performatives if p.frame_type == 0)


def test_conditions_and_defaults(spec: Spec) -> None:
    b = behaviour_plan(spec)
    assert {n: b.violation(n).condition for n in CONDITIONS} == CONDITIONS
    assert b.violation("window-violation").scope == "session"
    assert b.violation("transfer-limit-exceeded").scope == "link"
    assert b.default("open.max-frame-size") == 4294967295 and b.default("open.channel-max") == 65535  # 2.7.1
    assert b.default("begin.handle-max") == 4294967295  # 2.7.2
    assert b.default("attach.snd-settle-mode") == 2 and b.default("attach.rcv-settle-mode") == 0  # 2.7.3
    assert b.min_max_frame_size == 512
    assert dict(b.sasl_codes) == {"ok": 0, "auth": 1, "sys": 2, "sys-perm": 3, "sys-temp": 4}  # 5.3.3.6
    assert dict(b.roles) == {"sender": False, "receiver": True}
    assert behaviour_plan(spec) is b  # computed once per model


def test_a_spec_without_a_condition_fails_here(spec: Spec) -> None:
    # a file set whose session-error lost window-violation: the plan says so, rather than an engine without it
    restricted = tuple(dataclasses.replace(r, choices=tuple(c for c in r.choices if c.name != "window-violation"))
                       if r.name == "session-error" else r for r in spec.restricted)
    broken = dataclasses.replace(spec, restricted=restricted)
    with pytest.raises(SpecError, match="window-violation"):
        behaviour_plan(broken)
