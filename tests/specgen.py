"""Small hand-written spec documents for tests of the loader's error paths and lowering."""

from __future__ import annotations

from pathlib import Path

HEAD = '<?xml version="1.0"?>\n<amqp major="0" minor="9" revision="1" port="5672">\n'
BASE = """<constant name="frame-end" value="206"/>
<constant name="not-found" value="404" class="soft-error"/>
<domain name="bit" type="bit"/>
<domain name="octet" type="octet"/>
<domain name="short" type="short"/>
<domain name="shortstr" type="shortstr"/>
<domain name="table" type="table"/>
"""


def spec_text(body: str, *, base: bool = True) -> str:
    """A 0-9-1 document: the header line is line 2, BASE takes lines 3-9, ``body`` starts on line 10."""
    return HEAD + (BASE if base else "") + body + "</amqp>\n"


def write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text, encoding="utf-8")
    return p


def line_of(text: str, needle: str) -> int:
    """1-based line of the first occurrence of ``needle``: the test's own count, not the loader's."""
    return text[: text.index(needle)].count("\n") + 1
