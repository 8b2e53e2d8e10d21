"""Thin hook of the Markdown docs pack: the computed view lives in amqgen.amqp0.reference, the escaping
filters in amqgen.docs."""

from __future__ import annotations

from typing import Any

from amqgen.amqp0.model import Spec
from amqgen.amqp0.reference import MARKDOWN_FILTERS
from amqgen.amqp0.reference import context as docs_context
from amqgen.naming import Naming

FILTERS = MARKDOWN_FILTERS


def context(spec: Spec, naming: Naming, options: dict[str, str]) -> dict[str, Any]:
    return docs_context(spec)
