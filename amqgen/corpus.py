"""The one conformance-corpus envelope both families write (``amqgen vectors``, docs/vectors.md): the head
every document starts with, and the deterministic text the document is written as. What follows the head
(the sections of cases) is the family's: :mod:`amqgen.amqp0.vectors`, :mod:`amqgen.amqp10.vectors`.
"""

from __future__ import annotations

import json
from typing import Any

from . import __version__
from .notice import Origin, notice

FORMAT = "amqgen-vectors"
VERSION = 1


def envelope(spec: Origin, described: dict[str, Any]) -> dict[str, Any]:
    """The document's head: format, version, the generator, the notice, and the spec as ``described``."""
    return {"format": FORMAT, "version": VERSION, "generator": f"amqgen {__version__}", "notice": notice(spec),
            "spec": described}


class CaseBuilder:
    """The base of each family's corpus builder: the ids of a document's cases, each used once."""

    def __init__(self) -> None:
        self.ids: set[str] = set()

    def _id(self, text: str) -> str:
        if text in self.ids:
            raise AssertionError(f"duplicate case id {text}")  # a builder bug, never the user's input
        self.ids.add(text)
        return text


def dumps(doc: dict[str, Any]) -> str:
    """Deterministic text: the header keys one per line, then one case per line."""
    lines = ["{"]
    items = list(doc.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if isinstance(value, list):
            lines.append(f"  {json.dumps(key)}: [")
            for j, case in enumerate(value):
                lines.append("    " + _compact(case) + ("," if j < len(value) - 1 else ""))
            lines.append("  ]" + comma)
        else:
            lines.append(f"  {json.dumps(key)}: {_compact(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
