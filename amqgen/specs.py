"""Where spec files and template packs live, and how ``--spec NAME`` finds a file.

A name resolves to a bundled spec or to a file of Debian's ``amqp-specs`` package; a
qualified name (``bundled:0-9``, ``amqp-specs:0-9``) picks one source explicitly. Where both
sources have a name (0-9, 0-9-1, 0-9-1-rabbit) a bare name picks the bundled file: it is the
full one, with the documentation and rules Debian's stripped copy drops.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import Location, UsageError

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """``templates`` or ``spec``: inside the installed package, or at the top of a checkout."""
    for candidate in (_PKG / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    raise UsageError(f"amqgen is installed without its {name}/ directory (reinstall it)")


BUNDLED_DEFAULT = "0-9"
BUNDLED = {
    "0-9": "amqp0-9.xml",
    "0-9-1": "amqp0-9-1.xml",  # the official 0-9-1 XML, with its documentation and rules
    "0-9-1-rabbit": "amqp0-9-1.extended.xml",  # RabbitMQ's: 0-9-1 plus confirm, exchange.bind, basic.nack...
}
#: Overlays shipped with amqgen (``--overlay NAME``): name -> file under spec/.
BUNDLED_OVERLAYS = {"rabbitmq": "overlays/rabbitmq.xml", "rabbitmq-blocked": "overlays/rabbitmq-blocked.xml"}

#: Debian's amqp-specs: name -> file under /usr/share/amqp/specs/ (overridable for tests).
DEBIAN_SPECS = {
    "0-8": "0-8/amqp0-8.stripped.xml",
    "0-8-qpid": "0-8-qpid/amqp0-8-qpid.stripped.xml",
    "0-9": "0-9/amqp0-9.stripped.xml",
    "0-9-qpid": "0-9-qpid/amqp0-9-qpid.stripped.xml",
    "0-9-1": "0-9-1/amqp0-9-1.stripped.xml",
    "0-9-1-qpid": "0-9-1-qpid/amqp0-9-1.stripped.xml",
    "0-9-1-rabbit": "0-9-1-rabbit/amqp0-9-1.stripped.extended.xml",
    "0-10": "0-10/amqp.0-10.stripped.xml",
    "0-10-qpid": "0-10-qpid/amqp.0-10-qpid-errata.stripped.xml",
    # AMQP 1.0: a folder of six files, read as a set (amqgen.amqp10); validate and inspect read it
    "1-0": "1-0",
}
UNSUPPORTED = ("0-10", "0-10-qpid")
#: names that are a folder of files read as a set (AMQP 1.0), not one spec file
FOLDERS = ("1-0",)


def debian_root() -> Path:
    return Path(os.environ.get("AMQGEN_DEBIAN_SPECS", "/usr/share/amqp/specs"))


@dataclass(frozen=True)
class SpecEntry:
    name: str  # qualified: "bundled:0-9", "amqp-specs:0-9-1"
    short: str  # "0-9-1"
    path: Path
    source: str  # "bundled" or "amqp-specs (Debian)"
    present: bool
    supported: bool


def available() -> list[SpecEntry]:
    out = [
        SpecEntry(f"bundled:{k}", k, data_dir("spec") / v, "bundled", (data_dir("spec") / v).is_file(), True)
        for k, v in BUNDLED.items()
    ]
    root = debian_root()
    for k, v in DEBIAN_SPECS.items():
        p = root / v
        out.append(SpecEntry(f"amqp-specs:{k}", k, p, "amqp-specs (Debian)", p.is_file() or p.is_dir(),
                             k not in UNSUPPORTED))
    return out


def _as_path(value: str, base: Path | None) -> Path | None:
    """``value`` as a file path (relative to ``base`` when given), or None when it is a name."""
    p = Path(value) if base is None or Path(value).is_absolute() else base / value
    if p.suffix.lower() == ".xml" or os.sep in value or "/" in value or p.exists():
        return p  # a path: the loader reports a missing file with its name
    return None


def overlays() -> list[tuple[str, Path]]:
    return [(k, data_dir("spec") / v) for k, v in BUNDLED_OVERLAYS.items()]


def resolve_overlay(overlay: str, base: Path | None = None) -> Path:
    """An overlay file path (relative to ``base``, a project's folder, when given) or a bundled overlay's name."""
    p = _as_path(overlay, base)
    if p is not None:
        return p
    name = overlay.removeprefix("bundled:")
    if name in BUNDLED_OVERLAYS:
        return data_dir("spec") / BUNDLED_OVERLAYS[name]
    raise UsageError(f"unknown overlay {overlay!r}: give a file path or one of {', '.join(sorted(BUNDLED_OVERLAYS))}")


def resolve(spec: str | None, base: Path | None = None) -> Path:
    """A path (relative to ``base``, a project's folder, when given), a name, or None for the bundled default."""
    if spec is None:
        return data_dir("spec") / BUNDLED[BUNDLED_DEFAULT]
    p = _as_path(spec, base)
    if p is not None:
        return p
    source, _, short = spec.rpartition(":")
    for entry in available():
        if entry.short == short and (not source or entry.name.startswith(source + ":")) and entry.present:
            return entry.path
    known = sorted({e.short for e in available()})
    if short in known:
        raise UsageError(
            f"spec {spec!r} is not installed here (Debian package amqp-specs puts it under {debian_root()})",
            Location(spec),
        )
    raise UsageError(f"unknown spec {spec!r}: give a file path or one of {', '.join(known)}")
