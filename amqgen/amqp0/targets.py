"""What every 0-x target pack reads besides the codec and behaviour plans, computed once: the frame constants a
spec leaves out, the reply codes with their error roles, the spec regexps the checks carry (numbered, so every
target names them alike) and the test values of each wire type. The packs' hooks only spell these.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal

from . import policy, wire
from .model import Spec


@dataclass(frozen=True)
class Reply:
    """A reply code (the error ones and reply-success) and its roles."""

    name: str
    value: int
    error_class: str | None  # "soft", "hard", or None (reply-success)
    doc: str  # the spec's text, or the name where it has none
    frame_error: bool  # the code a malformed frame raises (policy.FRAME_ERROR_CODE)
    syntax_error: bool  # the code a failed assert raises (policy.SYNTAX_ERROR_CODE)


@dataclass(frozen=True)
class Regexp:
    """A check's spec regexp: ``number`` counts them in method and check order from 1 (a target's name for it);
    ``pattern`` as written, ``portable`` as the portable policy reads it."""

    number: int
    pattern: str
    portable: str


@dataclass(frozen=True)
class TargetPlan:
    missing_frame_constants: tuple[tuple[str, int], ...]  # (name, value) of wire.FRAME_DEFAULTS the spec lacks
    replies: tuple[Reply, ...]
    regexps: dict[str, tuple[Regexp | None, ...]]  # by method full name: per check (None: no pattern)


@cache
def target_plan(spec: Spec) -> TargetPlan:
    names = {c.name for c in spec.constants}
    replies = tuple(
        Reply(c.name, c.value, c.error_class, c.doc or c.name, c.value == policy.FRAME_ERROR_CODE,
              c.value == policy.SYNTAX_ERROR_CODE)
        for c in spec.reply_codes
    )
    regexps: dict[str, tuple[Regexp | None, ...]] = {}
    n = 0
    for m in spec.methods:
        row: list[Regexp | None] = []
        for ch in policy.checks(m):
            if ch.pattern is None:
                row.append(None)
                continue
            n += 1
            row.append(Regexp(n, ch.pattern, ch.portable or ch.pattern))
        regexps[m.full_name] = tuple(row)
    return TargetPlan(
        missing_frame_constants=tuple((k, v) for k, v in wire.FRAME_DEFAULTS.items() if k not in names),
        replies=replies,
        regexps=regexps,
    )


def anchor(pattern: str, end: str) -> str:
    """A spec regexp's final ``$`` means end of input; in Python and Java ``$`` also matches before a final line
    terminator, so it becomes the language's own end-of-input token ``end``."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        return pattern[:-1] + end
    return pattern


#: what a round-trip test puts in a field: a bit's true or false; an integer's zero or largest; a string's or
#: table's empty value or the test module's largest sample
Sample = Literal["true", "false", "zero", "largest", "empty", "full"]


def sample(wire_type: str, case: str) -> Sample:
    """The test value of a field of ``wire_type`` in a plan's round-trip case ("max" or the default)."""
    big = case == "max"
    if wire_type == "bit":
        return "true" if big else "false"
    if wire_type in LARGEST:
        return "largest" if big else "zero"
    return "full" if big else "empty"


#: the largest value of each integer wire type
LARGEST: dict[str, int] = {"octet": 2**8 - 1, "short": 2**16 - 1, "long": 2**32 - 1, "longlong": 2**64 - 1,
                           "timestamp": 2**64 - 1}
