"""The text filters both families' reference-documentation packs share: how spec text is split into
paragraphs and escaped for HTML and Markdown. What each family's reference shows is computed beside its
model (:mod:`amqgen.amqp0.reference`, :mod:`amqgen.amqp10.reference`).
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import urllib.parse

from markupsafe import Markup

BlockKind = str  # "p": a paragraph to reflow; "pre": lines whose layout matters


# -- text ------------------------------------------------------------------------------------

_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s")


def blocks(text: str | None) -> list[tuple[BlockKind, str]]:
    """Split a doc into paragraphs to reflow ("p") and blocks whose line layout matters ("pre"):
    indented lines, lists, tables and examples keep their layout."""
    out: list[tuple[BlockKind, str]] = []
    for chunk in re.split(r"\n\s*\n", text or ""):
        lines = chunk.split("\n")
        if not chunk.strip():
            continue
        if any(ln[:1].isspace() for ln in lines[1:]) or lines[0][:1].isspace() or any(
            _LIST_ITEM.match(ln) for ln in lines
        ):
            out.append(("pre", chunk))
        else:
            out.append(("p", " ".join(ln.strip() for ln in lines)))
    return out


# HTML: the pack autoescapes every value; the one trusted string is the page's own script.

def inline_asset(text: str) -> Markup:
    """A script or style from the pack itself (never spec text), inserted verbatim."""
    return Markup(text)


def csp_hash(text: str) -> str:
    """The Content-Security-Policy source for an inline script or style, so nothing else runs."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


HTML_FILTERS = {"blocks": blocks}


# Markdown (GitHub-flavoured): spec text is literal text, never markup.

# Inline punctuation that Markdown reads as markup anywhere in a line ("(" only matters after "]").
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md_text(text: str | None) -> str:
    """Inline text: HTML-significant characters become entities (a <script> in a doc stays text),
    Markdown punctuation is backslash-escaped, and line breaks become spaces."""
    s = (text or "").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = " ".join(_MD_SPECIAL.sub(r"\\\1", s).split())
    # What would open a list, a heading, a setext underline or a numbered list at the start of a paragraph.
    s = re.sub(r"^(\d+)([.)])", r"\1\\\2", s)
    return "\\" + s if s[:1] in ("-", "=", "+", "#") else s


def md_cell(text: str | None) -> str:
    """Text for a table cell: like md_text (pipes are escaped there); never empty-looking."""
    return md_text(text)


def md_fence(text: str | None) -> str:
    """A code fence longer than any backtick run inside the block."""
    runs = [len(r) for r in re.findall(r"`+", text or "")]
    return "`" * max(3, max(runs, default=0) + 1)


def html_attr(text: str | None) -> str:
    """A value for an HTML attribute written by hand in Markdown (``<a id="...">``)."""
    return html.escape(text or "", quote=True)


def url_fragment(anchor: str) -> str:
    """An anchor as a link target: percent-encoded, so odd names cannot end the link."""
    return "#" + urllib.parse.quote(anchor, safe="-._~")


MARKDOWN_FILTERS = {
    "blocks": blocks, "md": md_text, "md_cell": md_cell, "fence": md_fence, "attr": html_attr, "href": url_fragment,
}
