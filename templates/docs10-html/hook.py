"""Thin hook of the 1.0 HTML reference: the view comes from amqgen.amqp10.reference; this adds the page's
style (read from this folder) and its CSP hash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from amqgen.amqp10.model import Spec
from amqgen.amqp10.reference import build
from amqgen.docs import HTML_FILTERS, csp_hash, inline_asset
from amqgen.naming import Naming

FILTERS = HTML_FILTERS
_HERE = Path(__file__).resolve().parent


def context(spec: Spec, naming: Naming, options: dict[str, str]) -> dict[str, Any]:
    style = (_HERE / "page.css").read_text(encoding="utf-8")
    return {"ref": build(spec), "style": inline_asset(style), "style_hash": csp_hash(style)}
