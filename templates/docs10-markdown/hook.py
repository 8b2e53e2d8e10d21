"""Thin hook of the 1.0 Markdown reference: the view comes from amqgen.amqp10.reference."""

from __future__ import annotations

from typing import Any

from amqgen.amqp10.model import Spec
from amqgen.amqp10.reference import build
from amqgen.docs import MARKDOWN_FILTERS
from amqgen.naming import Naming

FILTERS = MARKDOWN_FILTERS


def context(spec: Spec, naming: Naming, options: dict[str, str]) -> dict[str, Any]:
    return {"ref": build(spec)}
