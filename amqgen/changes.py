"""The one diff document both families write: the change record, the JSON envelope and the text report.

A family's diff module compares two specs of its own and subclasses :class:`Diff` with what only it
knows: its kinds of change, how a spec is named in the JSON (``side``) and the text report's head line.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

FORMAT = "amqgen-diff"
VERSION = 1

S = TypeVar("S")


@dataclass(frozen=True)
class Change:
    kind: str  # "method-removed", "field-retyped", ... (the family's KINDS lists them)
    path: str  # the element: "basic.nack", "basic.qos.prefetch-count", "open.max-frame-size"
    breaking: bool
    detail: str  # one sentence for people
    old: Any = None  # JSON-serialisable before/after values, when they say something
    new: Any = None


@dataclass
class Diff(Generic[S]):
    old: S
    new: S
    changes: list[Change] = field(default_factory=list)

    #: every kind of change the family reports, and the area it belongs to (for grouping in tools)
    KINDS: ClassVar[Mapping[str, str]] = {}

    @property
    def breaking(self) -> list[Change]:
        return [c for c in self.changes if c.breaking]

    def add(self, kind: str, path: str, breaking: bool, detail: str, old: Any = None, new: Any = None) -> None:
        assert kind in self.KINDS, kind
        self.changes.append(Change(kind, path, breaking, detail, old, new))

    def side(self, spec: S) -> dict[str, Any]:
        """How the JSON document names one of the two specs."""
        raise NotImplementedError

    def head(self) -> str:
        """The text report's first line."""
        raise NotImplementedError


def to_json(d: Diff[Any]) -> str:
    kinds: dict[str, int] = {}
    for c in d.changes:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "old": d.side(d.old),
        "new": d.side(d.new),
        "summary": {"changes": len(d.changes), "breaking": len(d.breaking), "by_kind": dict(sorted(kinds.items()))},
        "changes": [{**asdict(c), "area": d.KINDS[c.kind]} for c in d.changes],
    }
    return json.dumps(doc, indent=2) + "\n"


def to_text(d: Diff[Any]) -> str:
    return "\n".join([d.head(), *text_lines(d.changes)]) + "\n"


def text_lines(changes: Sequence[Change]) -> list[str]:
    """The body of the text report, after its head line."""
    lines: list[str] = []
    if not changes:
        lines.append("no changes")
        return lines
    breaking = [c for c in changes if c.breaking]
    lines.append(f"{len(changes)} changes, {len(breaking)} breaking wire compatibility")
    other = [c for c in changes if not c.breaking]
    if breaking:
        lines.append("")
        lines.append(f"Breaking ({len(breaking)}):")
        lines.extend(f"  ! {c.kind:<28} {c.detail}" for c in breaking)
    docs = [c for c in other if c.kind == "doc-changed"]
    rest = [c for c in other if c.kind != "doc-changed"]
    if rest:
        lines.append("")
        lines.append(f"Not breaking ({len(rest)}):")
        lines.extend(f"    {c.kind:<28} {c.detail}" for c in rest)
    if docs:
        lines.append("")
        lines.append(f"Documentation text changed ({len(docs)}):")
        lines.extend(textwrap.wrap(", ".join(c.path for c in docs), 100, initial_indent="    ",
                                   subsequent_indent="    ", break_on_hyphens=False))
    return lines
