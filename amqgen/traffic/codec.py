"""The generated Python codec the pipeline decodes with, and the few spec facts it does not carry.

The driver renders ``amqgen render --lang python`` for the job's spec into a staging directory
once (:func:`render_codec`); executors import it by its package name (:func:`load`). Everything
about methods, frame types, properties and asserts comes from that package's public API:
``constants``, ``methods.METHODS``, ``properties.PROPERTIES``, ``frames.FrameReader``,
``checks.validate``, ``exceptions``. :class:`SpecFacts` adds what only the model knows: which
classes are handled on channel 0 (``handler="connection"``) and the reply-code constants.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..amqp0.model import Spec


@dataclass(frozen=True)
class SpecFacts:
    """Plain data from the model that executors need beside the generated package."""

    package: str
    spec_name: str
    family: str
    connection_classes: frozenset[int]  # class ids whose handler is the connection (channel 0)
    reply_codes: tuple[tuple[str, int], ...]  # constant name -> value, for violation rows
    #: the AMQP 1.0 codec's package (rendered from the 1.0 file set), None when there is none to decode 1.0 with
    amqp10_package: str | None = None
    amqp10_spec: str | None = None


def spec_facts(spec: Spec, package: str, spec10: Any = None) -> SpecFacts:
    return SpecFacts(
        package=package,
        spec_name=spec.name,
        family=spec.family,
        connection_classes=frozenset(c.index for c in spec.classes if c.handler == "connection"),
        reply_codes=tuple((c.name, c.value) for c in spec.constants if c.error_class is not None),
        amqp10_package=None if spec10 is None else package_name10(spec10),
        amqp10_spec=None if spec10 is None else spec10.title,
    )


def package_name10(spec10: Any) -> str:
    """The 1.0 codec's package name, unique to its file set (the model's sha256 covers every file)."""
    return f"amqgen_traffic10_{spec10.sha256[:12]}"


def render_codec10(spec10: Any, out: Path) -> Path:
    """Render the AMQP 1.0 Python target (pack python10: codec, engine, observer) for ``spec10`` into ``out``."""
    from dataclasses import replace

    from ..render import discover, render, write_tree

    pack = discover()["python10"]
    pack = replace(pack, formatter="none", outputs=tuple(replace(o, formatter=None) for o in pack.outputs))
    package = package_name10(spec10)
    write_tree(out, render(pack, spec10, {"package": package}))
    return out / package


def package_name(spec: Spec) -> str:
    """A package name unique to the spec's files (and overlays), so two jobs' codecs never collide."""
    import hashlib

    digest = hashlib.sha256(" ".join((spec.sha256, *(o.sha256 for o in spec.overlays))).encode()).hexdigest()
    return f"amqgen_traffic_{digest[:12]}"


def render_codec(spec: Spec, out: Path) -> Path:
    """Render the Python target for ``spec`` into ``out``; return the package directory.

    The same code ``amqgen render --lang python`` writes, less black's layout: black only formats
    (it parses what the templates give, so that is valid Python already), and takes seconds."""
    from dataclasses import replace

    from ..render import discover, render, write_tree

    pack = discover()["python"]
    pack = replace(pack, formatter="none", outputs=tuple(replace(o, formatter=None) for o in pack.outputs))
    package = package_name(spec)
    write_tree(out, render(pack, spec, {"package": package}))
    return out / package


class Codec:
    """The generated package's modules, imported by name on whichever process runs a stage."""

    def __init__(self, facts: SpecFacts) -> None:
        self.facts = facts
        pkg = facts.package
        self.constants: Any = importlib.import_module(f"{pkg}.constants")
        self.methods: Any = importlib.import_module(f"{pkg}.methods")
        self.properties: Any = importlib.import_module(f"{pkg}.properties")
        self.frames: Any = importlib.import_module(f"{pkg}.frames")
        self.checks: Any = importlib.import_module(f"{pkg}.checks")
        self.exceptions: Any = importlib.import_module(f"{pkg}.exceptions")
        c = self.constants
        self.frame_names: dict[int, str] = {
            c.FRAME_METHOD: "method", c.FRAME_HEADER: "header", c.FRAME_BODY: "body", c.FRAME_HEARTBEAT: "heartbeat",
        }
        self.protocol_header: bytes = c.PROTOCOL_HEADER
        self.frame_end: int = c.FRAME_END
        self.frame_min_size: int = c.FRAME_MIN_SIZE
        methods: dict[tuple[int, int], Any] = self.methods.METHODS
        self.method_keys: frozenset[int] = frozenset((k[0] << 16) | k[1] for k in methods)
        self.content_classes: frozenset[int] = frozenset(self.properties.PROPERTIES)
        self.class_names: dict[int, str] = {k[0]: m.NAME.split(".")[0] for k, m in methods.items()}
        for cid, p in self.properties.PROPERTIES.items():
            self.class_names.setdefault(cid, p.CLASS_NAME)
        # a method is a reply when some request lists it among its responses
        self.replies: frozenset[Any] = frozenset(r for m in methods.values() for r in m.RESPONSES)
        self.reply_codes = dict(facts.reply_codes)
        #: (class id, a header's property octets) -> their JSON, filled and bounded by the session
        self.properties_json: dict[tuple[int, bytes], str] = {}
        self.amqp10 = Codec10(facts.amqp10_package) if facts.amqp10_package else None


class Codec10:
    """The generated AMQP 1.0 package's modules: frames (``decode_frames``), composites, the observer."""

    def __init__(self, package: str) -> None:
        self.package = package
        self.frames: Any = importlib.import_module(f"{package}.frames")
        self.exceptions: Any = importlib.import_module(f"{package}.exceptions")
        self.observer: Any = importlib.import_module(f"{package}.observer")
        self.composites: Any = importlib.import_module(f"{package}.composites")
        self.types: Any = importlib.import_module(f"{package}.types")
        constants: Any = importlib.import_module(f"{package}.constants")
        codes = constants.SaslCode
        self.sasl_codes: dict[int, str] = {getattr(codes, n): n.lower().replace("_", "-") for n in dir(codes)
                                           if n.isupper()}
        self.transfer = self.composites.Transfer


_CODECS: dict[str, Codec] = {}


def load(facts: SpecFacts, search_path: str | None = None) -> Codec:
    """The codec for ``facts``, imported once per process (``search_path``: where the package is)."""
    codec = _CODECS.get(facts.package)
    if codec is None:
        if search_path and search_path not in sys.path:
            sys.path.insert(0, search_path)
        codec = _CODECS[facts.package] = Codec(facts)
    return codec
