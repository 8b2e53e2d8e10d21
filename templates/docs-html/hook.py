"""Thin hook of the HTML docs pack: the computed view comes from amqgen.amqp0.reference; this adds the
page's own script and style (read from this folder) and their CSP hashes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from amqgen.amqp0.model import Spec
from amqgen.amqp0.reference import HTML_FILTERS
from amqgen.amqp0.reference import context as docs_context
from amqgen.docs import csp_hash, inline_asset
from amqgen.naming import Naming

FILTERS = HTML_FILTERS
_HERE = Path(__file__).resolve().parent


def context(spec: Spec, naming: Naming, options: dict[str, str]) -> dict[str, Any]:
    script = (_HERE / "page.js").read_text(encoding="utf-8")
    style = (_HERE / "page.css").read_text(encoding="utf-8")
    return {
        **docs_context(spec),
        "script": inline_asset(script),
        "style": inline_asset(style),
        "script_hash": csp_hash(script),
        "style_hash": csp_hash(style),
    }
