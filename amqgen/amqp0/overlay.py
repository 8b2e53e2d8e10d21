"""Spec overlays: AMQP XML of the spec's own family holding only what it adds, changes or removes.

The flow is ``spec XML + overlays -> one element tree -> lowered model``: each overlay is merged into
the spec's element tree here, in order, and :mod:`amqgen.lower` lowers the result, so every command
and target reads one model. The README ("Spec overlays") is the user's description of the format.

- An overlay element names the element it works on by its tag and key inside its parent, the way the
  spec nests them: ``<class name="basic"><method name="recover" .../></class>`` is ``basic.recover``.
  The key is ``name`` (canonical: ``queue name`` is ``queue-name``), ``check`` for an ``<assert>``,
  ``type`` for a ``<doc>`` (plain, ``grammar`` or ``scenario``). A rule without a name is keyed by its
  position, as the loader names it (``01``, ``02``).
- ``overlay="add"`` (the default) adds an element that must not exist yet: the element and all it
  holds are copied as written. ``before="NAME"`` / ``after="NAME"`` place it next to a sibling of its
  tag; otherwise it follows the last one (field order is wire order).
- ``overlay="change"`` names an existing element: its attributes replace the existing ones (a field's
  ``domain`` and ``type`` replace each other), non-blank text replaces its text, ``rename="NEW"``
  renames a field, and its children are merged the same way, recursively. A changed ``<doc>`` replaces
  every doc of its type (or adds it, when there is none); a changed ``<assert>`` replaces the assert of
  its check.
- ``overlay="remove"`` removes an existing element (for a ``<doc>``: every doc of its type).
- ``wire="change"`` says the element is meant to change the wire layout of something that exists
  (a field or property added before others or appended, removed, retyped; an index or content flag
  changed). Without it, such a change is a conflict.

Conflicts are collected, one :class:`SpecError` each naming both places, and raised together as a
:class:`ConflictError`. Which changes touch the wire is decided by :mod:`amqgen.diff`, the one
definition of wire compatibility, on the models before and after each overlay.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field

from lxml import etree

from ..changes import Change
from ..errors import ConflictError, Location, SpecError
from ..loader import Document, canon
from .diff import diff_specs
from .model import Overlay, Spec

ACTIONS = ("add", "change", "remove")
#: Attributes that steer the merge; they never reach the merged tree.
CONTROL = ("overlay", "before", "after", "wire", "rename")

#: What each element may hold, by tag (the spec's own structure).
CHILDREN: dict[str, tuple[str, ...]] = {
    "amqp": ("constant", "domain", "class"),
    "constant": ("doc",),
    "domain": ("doc", "assert", "rule"),
    "class": ("doc", "chassis", "field", "method", "rule"),
    "method": ("doc", "chassis", "response", "field", "rule"),
    "field": ("doc", "assert", "rule"),
    "rule": ("doc",),
    "chassis": (),
    "response": (),
}

#: The attributes a change may set, by tag (a misspelt one is an error, not silently ignored).
SETTABLE: dict[str, tuple[str, ...]] = {
    "constant": ("value", "class"),
    "domain": ("type", "label"),
    "class": ("index", "handler", "label"),
    "method": ("index", "synchronous", "content", "deprecated", "label"),
    "field": ("domain", "type", "reserved", "label"),
    "rule": ("on-failure",),
    "chassis": ("implement",),
    "response": (),
}

#: Diff kinds that change the bytes of something that exists: they need wire="change".
WIRE_KINDS = frozenset({
    "field-added", "field-removed", "field-retyped", "field-moved",
    "property-added", "property-removed", "property-retyped", "property-moved",
    "class-index-changed", "method-index-changed", "method-content-changed",
})

#: Version attributes of the root are compared by family; these must equal the spec's when given.
ROOT_FIXED = ("port",)
ROOT_FREE = ("major", "minor", "revision", "comment")


def _elements(el: etree._Element) -> Iterator[etree._Element]:
    return (c for c in el if isinstance(c.tag, str))


@dataclass
class Provenance:
    """What the merged tree cannot say by itself: which file each element and attribute came from."""

    files: dict[etree._Element, str] = field(default_factory=dict)  # element an overlay added -> its path
    changes: dict[etree._Element, list[Location]] = field(default_factory=dict)  # -> overlay elements changing it
    attributes: dict[tuple[etree._Element, str], Location] = field(default_factory=dict)  # set by an overlay
    overlays: list[Overlay] = field(default_factory=list)

    def file_of(self, el: etree._Element, default: str) -> str:
        return self.files.get(el, default)


@dataclass
class Touch:
    """An overlay element that added, changed or removed the element at a model path."""

    loc: Location
    wire: bool  # it says wire="change"


class Merger:
    """Applies overlays, in order, to one spec document's element tree (which it changes in place)."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.prov = Provenance()
        # per overlay, set by apply()
        self.ov = doc
        self.problems: list[SpecError] = []
        self.touched: dict[str, list[Touch]] = {}
        self.removed: list[Location] = []

    # -- one overlay ------------------------------------------------------------------------------
    def apply(self, ov: Document) -> dict[str, list[Touch]]:
        """Merge ``ov``; returns what it touched by model path, or raises ConflictError."""
        self.ov, self.problems, self.touched, self.removed = ov, [], {}, []
        root = ov.root
        if (ov.family, ov.major, ov.minor, ov.revision) != (self.doc.family, self.doc.major, self.doc.minor,
                                                              self.doc.revision):
            raise SpecError(f"overlay is AMQP {ov.family} but spec {self.doc.name} is AMQP {self.doc.family} "
                            "(an overlay extends a spec of its own family)", self.here(root))
        for attr, value in root.attrib.items():
            if attr in ROOT_FREE:
                continue
            if attr in ROOT_FIXED and value.strip() == (self.doc.root.get(attr) or "").strip():
                continue
            self.problem(root, f"an overlay's <amqp> cannot set {attr}=\"{value}\" (only the spec's own "
                         f"{attr} is used)" if attr in ROOT_FIXED else f"unknown overlay root attribute {attr!r}")
        self.merge_children(self.doc.root, root, "")
        if self.problems:
            raise ConflictError(tuple(self.problems))
        self.prov.overlays.append(Overlay(ov.name, ov.sha256, tuple(self.removed)))
        return self.touched

    # -- helpers ----------------------------------------------------------------------------------
    def here(self, el: etree._Element, path: str = "") -> Location:
        return Location(self.ov.path, el.sourceline, path)

    def where(self, el: etree._Element) -> Location:
        """Where an element of the merged tree comes from: the spec or an earlier overlay."""
        return Location(self.prov.file_of(el, self.doc.path), el.sourceline)

    def problem(self, el: etree._Element, message: str, path: str = "") -> None:
        self.problems.append(SpecError(message, self.here(el, path)))

    def touch(self, path: str, el: etree._Element) -> None:
        self.touched.setdefault(path, []).append(Touch(self.here(el, path), (el.get("wire") or "") == "change"))

    @staticmethod
    def key(el: etree._Element, position: int) -> str:
        tag = el.tag
        if tag == "doc":
            return (el.get("type") or "").strip()
        if tag == "assert":
            return (el.get("check") or "").strip()
        raw = el.get("name")
        if tag == "rule" and not (raw and raw.strip()):
            return f"{position:02d}"  # the loader's name for an unnamed rule
        return canon(raw or "")

    def find(self, parent: etree._Element, tag: str, key: str) -> list[etree._Element]:
        same = [c for c in _elements(parent) if c.tag == tag]
        return [c for i, c in enumerate(same, 1) if self.key(c, i) == key]

    @staticmethod
    def child_path(parent_tag: str, parent_path: str, tag: str, key: str) -> str:
        """The model path of an element: ``basic``, ``basic.qos``, ``basic.qos.prefetch-count``,
        ``domain.queue-name``, ``constant.frame-end``; a rule's id; for chassis, responses, asserts
        and docs, their parent's path."""
        if parent_tag == "amqp":
            return key if tag == "class" else f"{tag}.{key}"
        if tag in ("field", "method", "rule"):
            return f"{parent_path}.{key}"
        return parent_path

    @staticmethod
    def describe(tag: str, key: str, path: str) -> str:
        """How messages name an element: ``method basic.recover``, ``constant frame-end``,
        ``chassis client of basic.cancel``, ``grammar doc of basic``."""
        if tag in ("chassis", "response", "assert"):
            return f"{tag} {key} of {path}"
        if tag == "doc":
            return f"{key or 'plain'} doc of {path}"
        if tag in ("constant", "domain"):
            return f"{tag} {key}"
        return f"{tag} {path}"

    # -- merging ----------------------------------------------------------------------------------
    def merge_children(self, target: etree._Element, ov_el: etree._Element, path: str) -> None:
        allowed = CHILDREN.get(str(target.tag), ())
        for child in _elements(ov_el):
            tag = str(child.tag)
            if tag not in allowed:
                self.problem(child, f"<{tag}> cannot appear in <{target.tag!s}>"
                             + (f" (it holds {', '.join('<' + a + '>' for a in allowed)})" if allowed else ""), path)
                continue
            action = (child.get("overlay") or "add").strip()
            if action not in ACTIONS:
                self.problem(child, f'overlay="{action}" is not one of {", ".join(ACTIONS)}', path)
                continue
            wire = child.get("wire")
            if wire is not None and wire.strip() != "change":
                self.problem(child, f'wire="{wire}": the only value is wire="change"', path)
                continue
            # an unnamed rule is only ever added: the loader names it by its position
            key = self.key(child, len([c for c in _elements(target) if c.tag == "rule"]) + 1)
            if tag == "rule" and not (child.get("name") or "").strip() and action != "add":
                key = ""
            if not key and tag != "doc":
                self.problem(child, f"<{tag}> has no {'check' if tag == 'assert' else 'name'}", path)
                continue
            cpath = self.child_path(str(target.tag), path, tag, key)
            found = self.find(target, tag, key)
            what = self.describe(tag, key, cpath)
            if action == "add" or (action == "change" and tag == "doc" and not found):
                # a changed doc sets the doc of its type, whether the element has one or not (a stripped
                # spec has none)
                self.add(target, child, tag, key, cpath, what, found)
            elif not found:
                self.problem(child, f"overlay {'changes' if action == 'change' else 'removes'} {what}, which "
                             f"{self.doc.name} and the overlays before this one do not define", cpath)
            elif action == "change":
                self.change(target, child, tag, key, cpath, what, found)
            else:
                self.remove(target, child, cpath, found)

    def add(self, target: etree._Element, child: etree._Element, tag: str, key: str, path: str, what: str,
            found: list[etree._Element]) -> None:
        if found and tag != "doc":
            self.problem(child, f"overlay adds {what}, which {self.where(found[0])} already defines "
                         '(say overlay="change" to change it)', path)
            return
        for sub in child.iter():
            if sub is not child and isinstance(sub.tag, str) and any(sub.get(a) is not None for a in CONTROL):
                self.problem(sub, f"<{sub.tag}> inside an added element cannot carry "
                             f"{', '.join(a for a in CONTROL if sub.get(a) is not None)}: the whole element is added "
                             "as written", path)
                return
        if child.get("rename") is not None:
            self.problem(child, "rename= goes with overlay=\"change\"", path)
            return
        if tag in ("class", "method") and not self.index_free(target, child, tag, path, None):
            return
        index = self.anchor(target, child, tag, path)
        if index is None:
            return
        new = copy.deepcopy(child)
        for a in CONTROL:
            new.attrib.pop(a, None)
        new.tail = None
        for sub in new.iter():
            self.prov.files[sub] = self.ov.path
        target.insert(index, new)
        self.touch(path, child)

    def anchor(self, target: etree._Element, child: etree._Element, tag: str, path: str) -> int | None:
        """Where an added element goes: before/after the named sibling, or after the last of its tag."""
        before, after = child.get("before"), child.get("after")
        kids = list(target)
        if before is not None and after is not None:
            self.problem(child, "give before= or after=, not both", path)
            return None
        if before is not None or after is not None:
            name = canon(before if before is not None else after or "")
            same = [c for c in _elements(target) if c.tag == tag]
            hit = next((c for i, c in enumerate(same, 1) if self.key(c, i) == name), None)
            if hit is None:
                self.problem(child, f"{'before' if before is not None else 'after'}=\"{name}\" names no <{tag}> "
                             "beside it", path)
                return None
            return kids.index(hit) + (0 if before is not None else 1)
        last = [i for i, c in enumerate(kids) if c.tag == tag]
        return last[-1] + 1 if last else len(kids)

    def index_free(self, target: etree._Element, child: etree._Element, tag: str, path: str,
                   itself: etree._Element | None) -> bool:
        raw = child.get("index")
        if raw is None:
            return True  # the loader reports a missing index
        try:
            index = int(raw.strip())
        except ValueError:
            return True  # and a malformed one
        for other in _elements(target):
            if other.tag != tag or other is itself:
                continue
            try:
                taken = int((other.get("index") or "").strip())
            except ValueError:
                continue
            if taken == index:
                name = canon(other.get("name") or "")
                owner = f"class {name}" if tag == "class" else f"method {path.rpartition('.')[0]}.{name}"
                self.problem(child, f"{tag} {path} takes index {index}, which {owner} already has "
                             f"({self.where(other)})", path)
                return False
        return True

    def change(self, target: etree._Element, child: etree._Element, tag: str, key: str, path: str, what: str,
               found: list[etree._Element]) -> None:
        if child.get("before") is not None or child.get("after") is not None:
            self.problem(child, "before= and after= place added elements; to move one, remove it and add it", path)
            return
        if tag in ("doc", "assert"):
            self.replace(target, child, found)
            self.touch(path, child)
            return
        existing = found[0]
        if child.get("rename") is not None and tag != "field":
            self.problem(child, "rename= renames a field or property; other elements are named in other places", path)
            return
        unknown = [a for a in child.attrib if a not in (*SETTABLE.get(tag, ()), "name", *CONTROL)]
        if unknown:
            self.problem(child, f"{what}: overlay cannot change {', '.join(unknown)} "
                         f"(it changes {', '.join(SETTABLE.get(tag, ())) or 'nothing but what it holds'})", path)
            return
        if tag in ("class", "method") and child.get("index") is not None and \
                not self.index_free(target, child, tag, path, existing):
            return
        rename = child.get("rename")
        if rename is not None:
            new = canon(rename)
            clash = self.find(target, tag, new)
            if clash and clash[0] is not existing:
                self.problem(child, f"{what} cannot be renamed to {new!r}: {tag} {path.rpartition('.')[0]}.{new} "
                             f"already exists ({self.where(clash[0])})", path)
                return
            self.touch(path, child)
            existing.set("name", rename.strip())
            path = f"{path.rpartition('.')[0]}.{new}"
        here = self.here(child, path)
        for attr, value in child.attrib.items():
            if attr in ("name", *CONTROL):
                continue
            if tag == "field" and attr in ("domain", "type"):
                existing.attrib.pop("type" if attr == "domain" else "domain", None)
            existing.set(attr, value)
            self.prov.attributes[(existing, attr)] = here
        if child.text and child.text.strip():
            existing.text = child.text
        self.prov.changes.setdefault(existing, []).append(here)
        self.touch(path, child)
        self.merge_children(existing, child, path)

    def replace(self, target: etree._Element, child: etree._Element, found: list[etree._Element]) -> None:
        """A changed doc or assert takes the place of the existing one(s)."""
        new = copy.deepcopy(child)
        for a in CONTROL:
            new.attrib.pop(a, None)
        new.tail = None
        for sub in new.iter():
            self.prov.files[sub] = self.ov.path
        index = list(target).index(found[0])
        for old in found:
            target.remove(old)
        target.insert(index, new)

    def remove(self, target: etree._Element, child: etree._Element, path: str, found: list[etree._Element]) -> None:
        extra = [a for a in child.attrib if a not in ("name", "check", "type", "overlay", "wire")]
        if extra or any(True for _ in _elements(child)):
            self.problem(child, f"overlay=\"remove\" takes only the key of what it removes "
                         f"({', '.join(extra) or 'it holds elements'})", path)
            return
        for old in found:
            target.remove(old)
        self.removed.append(self.here(child, path))
        self.touch(path, child)


# -- the wire check -------------------------------------------------------------------------------

def _locations(spec: Spec) -> dict[str, Location]:
    """Model path -> where the element is defined, for the elements a wire change can affect."""
    out: dict[str, Location] = {}
    for c in spec.classes:
        out[c.name] = c.loc
        for p in c.properties:
            out[p.path] = p.loc
        for m in c.methods:
            out[m.full_name] = m.loc
            for f in m.fields:
                out[f.path] = f.loc
    for d in spec.domains:
        out[f"domain.{d.name}"] = d.loc
    return out


def _candidates(c: Change, before: Spec) -> list[str]:
    """The model paths an overlay element may have touched to cause ``c``, most specific first."""
    out = [c.path]
    if c.kind.endswith("-retyped"):
        domains = {f.domain for cls in before.classes for f in (*cls.properties, *(g for m in cls.methods
                                                                                  for g in m.fields))
                   if f.path == c.path and f.domain}
        out += [f"domain.{d}" for d in sorted(domains)]
    parts = c.path.split(".")
    out += [".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]
    return out


def check_wire(before: Spec, after: Spec, touched: dict[str, list[Touch]], overlay: str) -> None:
    """Raise ConflictError when ``after`` changes the wire layout of something ``before`` has and the
    overlay element that did it does not say wire="change": one line per overlay element."""
    where = _locations(before)
    found: dict[Location, list[Change]] = {}
    for c in diff_specs(before, after).changes:
        if c.kind not in WIRE_KINDS or not c.breaking:
            continue
        path = next((p for p in _candidates(c, before) if p in touched), None)
        touches = touched[path] if path is not None else []
        if any(t.wire for t in touches):
            continue
        loc = touches[-1].loc if touches else Location(overlay)
        found.setdefault(loc, []).append(c)
    problems: list[SpecError] = []
    for loc, changes in found.items():
        first = changes[0]
        existing = first.path if first.path in where else first.path.rpartition(".")[0]
        more = f" (and {len(changes) - 1} more such change{'s' if len(changes) > 2 else ''})" if len(changes) > 1 else ""
        through = f"through {loc.path}; " if loc.path and loc.path != first.path else ""
        at = f" ({through}{existing} is at {where[existing]})" if existing in where else ""
        problems.append(SpecError(f'{first.detail}{more}{at}; say wire="change" on this overlay element if that '
                                  "is meant", loc))
    if problems:
        raise ConflictError(tuple(problems))
