"""Read a spec file safely and decide which AMQP family it belongs to.

The parser never touches the network, never loads a DTD and never expands entities; a file
that declares entities (the shape of "billion laughs" and XXE attacks) is refused outright,
because no real AMQP spec needs them.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lxml import etree

from .errors import Location, SpecError

Family = Literal["0-8", "0-9", "0-9-1"]

#: Files larger than this are not AMQP 0-x specs (the largest real one is ~200 KB).
MAX_SPEC_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Document:
    """A parsed spec file: the raw element tree plus what lowering needs to know about it."""

    path: str  # as the user named it; used in every file:line message
    name: str  # file name, used in generated headers (stable across machines)
    sha256: str
    root: etree._Element
    family: Family
    major: int
    minor: int
    revision: int
    version_note: str | None  # set when the version attributes needed interpretation


def canon(name: str) -> str:
    """Canonical spec name: lower case, words joined by single hyphens (0-8 used spaces)."""
    return re.sub(r"\s+", "-", name.strip().lower())


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_blank_text=False,
    )


def _line_of(data: bytes, needle: bytes) -> int | None:
    pos = data.find(needle)
    return data.count(b"\n", 0, pos) + 1 if pos >= 0 else None


def read_document(path: str | Path) -> Document:
    """Parse ``path`` into a :class:`Document`, or raise :class:`SpecError` with file:line."""
    root, data = parse_secure(path)
    shown = str(path)
    family, major, minor, revision, note = _family(root, shown)
    return Document(
        path=shown,
        name=Path(path).name,
        sha256=hashlib.sha256(data).hexdigest(),
        root=root,
        family=family,
        major=major,
        minor=minor,
        revision=revision,
        version_note=note,
    )


def parse_secure(path: str | Path, max_bytes: int = MAX_SPEC_BYTES) -> tuple[etree._Element, bytes]:
    """The root element of an XML file and its octets, read with every safety of the spec loader (no network,
    no DTD, no entities, a size limit); any problem is a :class:`SpecError` with file:line. Every spec family
    (0-x here, 1.0 in :mod:`amqgen.amqp10.loader`) reads its files through this."""
    shown = str(path)
    p = Path(path)
    try:
        if p.is_dir():
            raise SpecError("is a directory, not a spec file", Location(shown))
        if p.stat().st_size > max_bytes:
            raise SpecError(f"file is larger than {max_bytes} bytes", Location(shown))
        data = p.read_bytes()
    except FileNotFoundError:
        raise SpecError("no such file", Location(shown)) from None
    except OSError as e:
        raise SpecError(f"cannot read: {e.strerror}", Location(shown)) from None

    # Refuse entity declarations before parsing: libxml2 would still read an internal
    # subset, and a spec has no use for one.
    # Comments are blanked (same length, newlines kept) so a comment that merely mentions
    # an entity is not refused and line numbers stay right.
    uncommented = re.sub(rb"<!--.*?-->", lambda m: re.sub(rb"[^\n]", b" ", m.group()), data, flags=re.DOTALL)
    if b"<!ENTITY" in uncommented:
        raise SpecError(
            "entity declarations are not allowed in a spec (XXE / entity expansion refused)",
            Location(shown, _line_of(uncommented, b"<!ENTITY")),
        )
    try:
        root = etree.fromstring(data, _parser(), base_url=None)
    except etree.XMLSyntaxError as e:
        line = e.lineno if e.lineno else None
        msg = re.sub(r",? line \d+, column \d+", "", str(e.msg or e)).strip()
        raise SpecError(f"not well-formed XML: {msg}", Location(shown, line)) from None
    if root is None:
        raise SpecError("empty document", Location(shown))
    tree = root.getroottree()
    dtd = tree.docinfo.internalDTD
    if dtd is not None and any(True for _ in dtd.iterentities()):
        raise SpecError("entity declarations are not allowed in a spec", Location(shown, 1))
    for node in root.iter(etree.Entity):
        raise SpecError("entity references are not allowed in a spec", Location(shown, node.sourceline))
    return root, data


def _int_attr(root: etree._Element, name: str, shown: str) -> int | None:
    raw = root.get(name)
    if raw is None:
        return None
    try:
        return int(raw.strip())
    except ValueError:
        raise SpecError(f"<amqp {name}=\"{raw}\"> is not a number", Location(shown, root.sourceline)) from None


def _family(root: etree._Element, shown: str) -> tuple[Family, int, int, int, str | None]:
    loc = Location(shown, root.sourceline)
    tag = root.tag if isinstance(root.tag, str) else ""
    local = etree.QName(root).localname if tag else ""
    if local != "amqp":
        raise SpecError(f"root element is <{local or '?'}>, expected <amqp>", loc)
    major = _int_attr(root, "major", shown)
    minor = _int_attr(root, "minor", shown)
    revision = _int_attr(root, "revision", shown) or 0
    namespaced = etree.QName(root).namespace is not None
    if major is None or minor is None:
        # AMQP 1.0 files carry a name and no version; they are read as a set (amqgen.amqp10).
        raise SpecError("an AMQP 1.0 spec file (no major/minor version): 1.0 is read as the folder of its six files "
                        "(--spec 1-0, or the folder's path)", loc)
    if (major, minor) == (0, 10) or namespaced:
        raise SpecError(f"unsupported spec family {major}-{minor}; amqgen reads 0-8, 0-9 and 0-9-1", loc)
    if (major, minor) == (8, 0):
        # The 0-8 spec famously says major=8 minor=0, and peers send exactly that in the header.
        return "0-8", 8, 0, 0, None
    if (major, minor) == (0, 8):
        return "0-8", 8, 0, 0, "version 0-8 written as major=0 minor=8; the 0-8 protocol header carries 8-0"
    if (major, minor) == (0, 9) and revision == 0:
        return "0-9", 0, 9, 0, None
    if (major, minor, revision) == (0, 9, 1):
        return "0-9-1", 0, 9, 1, None
    if (major, minor) == (0, 91):
        return "0-9-1", 0, 9, 1, 'minor="91" read as version 0-9-1'
    raise SpecError(
        f"unsupported spec family {major}-{minor}" + (f"-{revision}" if revision else "")
        + "; amqgen reads 0-8, 0-9 and 0-9-1",
        loc,
    )
