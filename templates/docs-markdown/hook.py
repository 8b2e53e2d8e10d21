"""Thin hook of the Markdown docs pack: the computed view and the escaping filters live in amqgen.docs."""

from __future__ import annotations

from typing import Any

from amqgen.docs import MARKDOWN_FILTERS
from amqgen.docs import context as docs_context
from amqgen.amqp0.model import Spec
from amqgen.naming import Naming

FILTERS = MARKDOWN_FILTERS


def context(spec: Spec, naming: Naming, options: dict[str, str]) -> dict[str, Any]:
    return docs_context(spec)
