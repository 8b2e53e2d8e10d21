"""The one interface both spec families implement, and the one place that picks a family for a spec file.

The CLI, render, the project file and the docs command ask :func:`family_of` once and then call the family:
no command branches on 0-x versus 1.0. Each family lives in its own package (:mod:`amqgen.amqp0`,
:mod:`amqgen.amqp10`) and implements :class:`Family` in its ``family`` module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import amqgen.amqp10.loader
import amqgen.amqp10.model

from .changes import Diff
from .errors import Diagnostic
from .naming import Naming


class Model(Protocol):
    """What shared machinery reads of a loaded spec of either family."""

    @property
    def family(self) -> str: ...  # "0-8", "0-9", "0-9-1", "1-0"

    @property
    def title(self) -> str: ...

    @property
    def origin(self) -> str: ...

    @property
    def warnings(self) -> Sequence[Diagnostic]: ...


class Family(Protocol):
    """One spec family. ``spec`` arguments are the family's own model (what :meth:`load` returns)."""

    #: how messages name the family: "AMQP 0-x", "AMQP 1.0"
    title: str
    #: the fan-outs its packs may use (pack.toml ``per``); 1.0 renders each output once per spec
    fanouts: tuple[str, ...]
    #: the field-table dialects its corpus is built for (empty: the corpus has none)
    dialects: tuple[str, ...]
    #: the corpus document's sections of cases, in the order `amqgen vectors` counts them
    corpus_sections: tuple[str, ...]
    #: `amqgen docs --format` -> the reference pack
    docs_packs: Mapping[str, str]

    def load(self, path: Path, overlays: Sequence[Path], strict: bool) -> Any:
        """The lowered model, with its warnings (strict: a warning is an error)."""

    def summary(self, spec: Any) -> str:
        """`amqgen validate`'s one summary line."""

    def inspect_text(self, spec: Any) -> list[str]:
        """`amqgen inspect`'s lines."""

    def inspect_json(self, spec: Any) -> str:
        """`amqgen inspect --json`: the whole model as versioned JSON text."""

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of :meth:`inspect_json`."""

    def corpus(self, spec: Any, dialect: str) -> dict[str, Any]:
        """The conformance corpus document (:mod:`amqgen.corpus` gives its envelope)."""

    def corpus_schema(self) -> dict[str, Any]:
        """The JSON Schema of :meth:`corpus`."""

    def diff(self, old: Any, new: Any) -> Diff[Any]:
        """What changed from ``old`` to ``new`` (:mod:`amqgen.changes` writes it)."""

    def check_names(self, naming: Naming, spec: Any) -> None:
        """Stop with a NamingError when two names of the spec give one identifier."""

    def render_context(self, spec: Any, corpus_text: Callable[[str], str]) -> dict[str, Any]:
        """What every template of the family sees beside the spec, naming, options and notice.
        ``corpus_text(dialect)`` is the corpus document as `amqgen vectors` writes it, built once per render."""

    def targets(self, per: str, spec: Any) -> list[tuple[Any, Any]]:
        """The (class, method) pairs an output with fan-out ``per`` is rendered for ((None, None): once)."""


# Each family's package is imported when a spec of it is first met: every CLI command is a process of its
# own, and one on a 0-x spec need not load 1.0's modules (nor the reverse).


def amqp0() -> Family:
    """The 0-8 / 0-9 / 0-9-1 family, for the commands that read it alone (traffic)."""
    import amqgen.amqp0.family

    return amqgen.amqp0.family.FAMILY


def amqp10() -> Family:
    """The AMQP 1.0 family."""
    import amqgen.amqp10.family

    return amqgen.amqp10.family.FAMILY


def family_of_model(spec: Model) -> Family:
    """The family of a loaded spec (render takes the model alone)."""
    return amqp10() if spec.family == amqgen.amqp10.model.FAMILY else amqp0()


def family_of(path: Path) -> Family:
    """The family of a spec path: a folder holding the 1.0 file set is AMQP 1.0, anything else 0-x."""
    return amqp10() if amqgen.amqp10.loader.is_amqp10(path) else amqp0()
