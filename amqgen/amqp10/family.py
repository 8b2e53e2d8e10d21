"""AMQP 1.0 behind the one family interface (:class:`amqgen.family.Family`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..naming import Naming
from . import model, vectors
from .diff import Diff, diff_specs
from .loader import load_spec
from .model import Spec
from .plan import codec_plan


class Amqp10:
    title: str = "AMQP 1.0"
    fanouts: tuple[str, ...] = ("spec",)  # 1.0 has no classes or methods to fan out over
    dialects: tuple[str, ...] = ()  # no field-table dialects: `--dialect` is not read
    corpus_sections: tuple[str, ...] = vectors.SECTIONS

    def __init__(self) -> None:
        self.docs_packs: Mapping[str, str] = {"html": "docs10-html", "markdown": "docs10-markdown"}

    def load(self, path: Path, overlays: Sequence[Path], strict: bool) -> Spec:
        if overlays:
            raise UsageError("overlays extend a 0-x spec; AMQP 1.0 takes none")
        return load_spec(path, strict=strict)

    def summary(self, spec: Spec) -> str:
        choices = sum(len(r.choices) for r in spec.restricted)
        return (
            f"{spec.name}: AMQP {spec.family} ({len(spec.files)} files), {len(spec.primitives)} primitive types "
            f"({len(spec.encodings)} encodings), {len(spec.composites)} composite types, {len(spec.restricted)} "
            f"restricted types ({choices} choices), {len(spec.descriptors)} descriptors, {len(spec.fields)} fields, "
            f"{len(spec.archetypes)} archetypes, {len(spec.definitions)} definitions, {len(spec.warnings)} warnings"
        )

    def inspect_text(self, spec: Spec) -> list[str]:
        lines = [f"{spec.name} AMQP {spec.family} port {spec.definition('PORT').value} sha256 {spec.sha256}"]
        for p in spec.primitives:
            encs = ", ".join(f"0x{e.code:02x} {e.category}/{e.width}" + (f" {e.name}" if e.name else "")
                             for e in p.encodings)
            lines.append(f"primitive {p.name} [{encs}]")
        for c in spec.composites:
            d = c.descriptor
            lines.append(f"composite {c.name} {d.name} 0x{d.domain:08x}:0x{d.id:08x}"
                         + (f" provides {', '.join(c.provides)}" if c.provides else ""))
            for i, f in enumerate(c.fields):
                flags = " ".join(x for x, on in (("mandatory", f.mandatory), ("multiple", f.multiple)) if on)
                lines.append(f"  {i} {f.name}: {f.type}" + (f" requires {', '.join(f.requires)}" if f.requires else "")
                             + (f" {flags}" if flags else "")
                             + (f" default {f.default} = {f.value!r}" if f.default else ""))
        for r in spec.restricted:
            extra = f" {r.descriptor.name}" if r.descriptor else ""
            choices = ", ".join(f"{ch.name}={ch.value!r}" for ch in r.choices)
            lines.append(f"restricted {r.name} <- {r.source} ({r.primitive}){extra}"
                         + (f" provides {', '.join(r.provides)}" if r.provides else "")
                         + (f" [{choices}]" if choices else ""))
        for name, types in spec.archetypes.items():
            lines.append(f"archetype {name}: {', '.join(types)}")
        for df in spec.definitions:
            lines.append(f"definition {df.name} = {df.value}")
        return lines

    def inspect_json(self, spec: Spec) -> str:
        return json.dumps(model.to_json(spec), indent=1, ensure_ascii=False) + "\n"

    def json_schema(self) -> dict[str, Any]:
        return model.json_schema()

    def corpus(self, spec: Spec, dialect: str) -> dict[str, Any]:
        return vectors.corpus(spec)  # no dialects: the one corpus

    def corpus_schema(self) -> dict[str, Any]:
        return vectors.json_schema()

    def diff(self, old: Spec, new: Spec) -> Diff:
        return diff_specs(old, new)

    def check_names(self, naming: Naming, spec: Spec) -> None:
        del naming, spec  # not checked for collisions yet: the 1.0 names are the spec's own, none collide

    def render_context(self, spec: Spec, corpus_text: Callable[[str], str]) -> dict[str, Any]:
        def vectors_json() -> str:
            """The 1.0 conformance corpus, exactly as ``amqgen vectors --spec 1-0`` writes it (built once)."""
            return corpus_text("")

        return {"codec10": codec_plan(spec), "vectors_json": vectors_json}

    def targets(self, per: str, spec: Spec) -> list[tuple[None, None]]:
        return [(None, None)]


FAMILY = Amqp10()
