"""The 0-x family (0-8, 0-9, 0-9-1) behind the one family interface (:class:`amqgen.family.Family`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..naming import Naming
from . import wire
from .lower import load_spec
from .model import Class, Method, Spec

if TYPE_CHECKING:
    from .diff import Diff

# The plans, the corpus, the diff and the schema are imported by the methods that use them: every CLI
# command starts a process, and `validate` or `inspect` need none of them (a third of the start-up time).


def _origin(el: Any) -> str:
    """`` [added by rabbitmq.xml:30]`` / `` [changed by rabbitmq.xml:95]``, for elements an overlay touched."""
    if el.added_by is not None:
        return f" [added by {Path(el.added_by.file).name}:{el.added_by.line}]"
    if el.changed_by:
        return f" [changed by {', '.join(f'{Path(c.file).name}:{c.line}' for c in el.changed_by)}]"
    return ""


class Amqp0:
    title: str = "AMQP 0-x"
    fanouts: tuple[str, ...] = ("spec", "class", "content-class", "method")
    dialects: tuple[str, ...] = wire.DIALECTS
    corpus_sections: tuple[str, ...] = ("methods", "properties", "frames", "tables", "malformed", "accepted")

    def __init__(self) -> None:
        self.docs_packs: Mapping[str, str] = {"html": "docs-html", "markdown": "docs-markdown"}

    def load(self, path: Path, overlays: Sequence[Path], strict: bool) -> Spec:
        return load_spec(path, strict=strict, overlays=tuple(overlays))

    def summary(self, spec: Spec) -> str:
        fields = sum(len(m.fields) for m in spec.methods)
        props = sum(len(c.properties) for c in spec.classes)
        return (
            f"{spec.title}: AMQP {spec.family} (header {spec.major}-{spec.minor}-{spec.revision}), "
            f"{len(spec.constants)} constants, {len(spec.domains)} domains, {len(spec.classes)} classes, "
            f"{len(spec.methods)} methods, {fields} fields, {props} properties, {len(spec.all_rules())} rules, "
            f"{len(spec.all_asserts())} asserts, {len(spec.warnings)} warnings"
        )

    def inspect_text(self, spec: Spec) -> list[str]:
        lines = [f"{spec.name} AMQP {spec.family} port {spec.port} sha256 {spec.sha256}"]
        for o in spec.overlays:
            lines.append(f"overlay {o.name} sha256 {o.sha256}"
                         + (f" removes {', '.join(r.path for r in o.removed)}" if o.removed else ""))
        for c in spec.classes:
            props = ", ".join(f"{p.name}:{p.type}@{p.flag_word}.{p.flag_bit}{_origin(p)}" for p in c.properties)
            lines.append(f"class {c.name} {c.index}{_origin(c)}" + (f"  properties [{props}]" if props else ""))
            for m in c.methods:
                flags = " ".join(x for x, on in (("sync", m.synchronous), ("content", m.content)) if on)
                args = []
                for s in m.slots:
                    where = f"@{s.offset}" if s.offset is not None else ""
                    args.append(f"bits({','.join(s.fields)}){where}" if s.kind == "bits"
                                else f"{s.fields[0]}:{s.type}{where}")
                lines.append(
                    f"  {c.index}.{m.index} {m.name} [{m.direction}{' ' + flags if flags else ''}]"
                    f" prefix={m.fixed_prefix_size} ({'; '.join(args)})"
                    + (f" -> {', '.join(m.responses)}" if m.responses else "") + _origin(m)
                )
        return lines

    def inspect_json(self, spec: Spec) -> str:
        from .schema import to_json

        return to_json(spec)

    def json_schema(self) -> dict[str, Any]:
        from .schema import json_schema

        return json_schema()

    def corpus(self, spec: Spec, dialect: str) -> dict[str, Any]:
        from . import vectors

        return vectors.corpus(spec, dialect)

    def corpus_schema(self) -> dict[str, Any]:
        from . import vectors

        return vectors.json_schema()

    def diff(self, old: Spec, new: Spec) -> Diff:
        from .diff import diff_specs

        return diff_specs(old, new)

    def check_names(self, naming: Naming, spec: Spec) -> None:
        naming.check_spec(spec)

    def render_context(self, spec: Spec, corpus_text: Callable[[str], str]) -> dict[str, Any]:
        from .behaviour import behaviour_plan
        from .plan import codec_plan

        corpora: dict[str, Any] = {}

        def vectors_json(dialect: str = "rabbitmq") -> str:
            """The conformance corpus document, exactly as ``amqgen vectors`` writes it."""
            return corpus_text(dialect)

        def corpus_data(dialect: str = "rabbitmq") -> Any:
            """The conformance corpus for this spec and dialect, as ``json.loads`` of the document."""
            if dialect not in corpora:
                corpora[dialect] = json.loads(corpus_text(dialect))
            return corpora[dialect]

        return {
            "wire": wire,  # shared wire facts: type codes per dialect, frame defaults, limits
            "codec": codec_plan(spec),  # the codec plan: runs, offsets, masks, flag words (amqp0.plan)
            "behaviour": behaviour_plan(spec),  # who sends what, replies, content, negotiation (amqp0.behaviour)
            "vectors": corpus_data,
            "vectors_json": vectors_json,
        }

    def targets(self, per: str, spec: Spec) -> list[tuple[Class | None, Method | None]]:
        if per == "spec":
            return [(None, None)]
        if per == "class":
            return [(c, None) for c in spec.classes]
        if per == "content-class":
            return [(c, None) for c in spec.content_classes]
        return [(c, m) for c in spec.classes for m in c.methods]


FAMILY = Amqp0()
