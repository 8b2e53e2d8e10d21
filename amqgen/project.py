"""The project file, ``amqgen.toml``, and the choice of spec every command loads.

A project commits ``amqgen.toml`` beside its build files; ``amqgen render`` (and validate, inspect,
docs, vectors) run in that folder with no arguments use its spec, overlays and render settings:

    spec = "spec/amqp0-9-1.xml"          # a path (relative to this file) or a name from `amqgen specs`
    overlays = ["rabbitmq", "spec/local.xml"]   # applied in order: paths, or bundled overlay names
    strict = true                        # spec-defect warnings are errors

    [[render]]                           # one table per target; `amqgen render` renders each
    lang = "python"
    out = "src"
    package = "myclient.amqp"            # shortcut for options.package
    options = { tests = "1" }
    templates = ["packs"]                # extra pack folders
    depfile = "build/amqp.d"

Paths are relative to the file. On the command line, ``--spec`` replaces the project's spec and its
overlays (they belong to its spec); ``--overlay`` without ``--spec`` adds to the project's overlays;
``strict = true`` holds for every command run in the project.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import Location, UsageError
from .family import Family, Model, amqp0, family_of
from .specs import resolve, resolve_overlay

PROJECT_FILE = "amqgen.toml"
TOP_KEYS = ("spec", "overlays", "strict", "render")
RENDER_KEYS = ("lang", "out", "package", "options", "templates", "depfile")


@dataclass(frozen=True)
class RenderJob:
    lang: str
    out: Path
    options: dict[str, str]
    templates: tuple[Path, ...]
    depfile: Path | None


@dataclass(frozen=True)
class Project:
    path: Path
    spec: str | None  # as written; resolved against the file's folder
    overlays: tuple[str, ...]
    strict: bool
    renders: tuple[RenderJob, ...]

    @property
    def base(self) -> Path:
        return self.path.parent


def _line(text: str, key: str) -> int | None:
    """The first line that sets ``key`` (tomllib gives no positions for valid documents)."""
    m = re.search(rf"^\s*{re.escape(key)}\s*=", text, re.MULTILINE)
    return text.count("\n", 0, m.start()) + 1 if m else None


def read_project(path: Path) -> Project:
    shown = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError("no such project file", Location(shown)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read project file: {getattr(e, 'strerror', None) or e}", Location(shown)) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise UsageError(f"not valid TOML: {re.sub(r' [(]at .*[)]$', '', str(e))}",
                         Location(shown, int(m.group(1)) if m else None)) from None

    def bad(key: str, message: str) -> UsageError:
        return UsageError(message, Location(shown, _line(text, key.rpartition(".")[2])))

    def string(table: dict[str, Any], key: str, where: str) -> str | None:
        v = table.get(key)
        if v is not None and not isinstance(v, str):
            raise bad(key, f"{where}{key} must be a string")
        return v

    def strings(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
        v = table.get(key, [])
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise bad(key, f"{where}{key} must be a list of strings")
        return tuple(v)

    for key in data:
        if key not in TOP_KEYS:
            raise bad(key, f"unknown key {key!r} (known: {', '.join(TOP_KEYS)})")
    strict = data.get("strict", False)
    if not isinstance(strict, bool):
        raise bad("strict", "strict must be true or false")
    raw_renders = data.get("render", [])
    if isinstance(raw_renders, dict):
        raw_renders = [raw_renders]
    if not isinstance(raw_renders, list) or not all(isinstance(r, dict) for r in raw_renders):
        raise bad("render", "render must be a table ([render]) or tables ([[render]])")
    base = path.parent
    jobs: list[RenderJob] = []
    for n, r in enumerate(raw_renders, 1):
        where = f"[[render]] #{n}: "
        for key in r:
            if key not in RENDER_KEYS:
                raise bad(key, f"{where}unknown key {key!r} (known: {', '.join(RENDER_KEYS)})")
        lang, out = string(r, "lang", where), string(r, "out", where)
        if not lang or not out:
            raise UsageError(f"{where}needs lang and out", Location(shown, _line(text, "lang") or _line(text, "out")))
        options = r.get("options", {})
        if not isinstance(options, dict) or not all(isinstance(v, (str, int, bool)) for v in options.values()):
            raise bad("options", f"{where}options must be a table of strings")
        opts = {str(k): (("1" if v else "0") if isinstance(v, bool) else str(v)) for k, v in options.items()}
        package = string(r, "package", where)
        if package is not None:
            opts["package"] = package
        depfile = string(r, "depfile", where)
        jobs.append(RenderJob(lang, base / out, opts, tuple(base / t for t in strings(r, "templates", where)),
                              base / depfile if depfile else None))
    return Project(path, string(data, "spec", ""), strings(data, "overlays", ""), strict, tuple(jobs))


def find_project(explicit: Path | None) -> Project | None:
    """``explicit`` (``--project FILE``), else ``./amqgen.toml`` when it exists."""
    if explicit is not None:
        return read_project(explicit)
    here = Path(PROJECT_FILE)
    return read_project(here) if here.is_file() else None


@dataclass(frozen=True)
class SpecChoice:
    """What a command loads: ``--spec`` and ``--overlay`` from its command line, completed by the
    project file. Commands get one from :func:`amqgen.cli.spec_option` and load it with :meth:`load`."""

    spec: str | None
    overlays: tuple[str, ...] = ()
    project_file: Path | None = None  # --project; None: ./amqgen.toml when present
    use_project: bool = True  # False for `diff`, whose two specs are its arguments

    def project(self) -> Project | None:
        return find_project(self.project_file) if self.use_project else None

    def files(self) -> tuple[Path, tuple[Path, ...], bool]:
        """The spec file, the overlay files in the order applied, and whether the project asks for strict."""
        project = self.project()
        own = tuple(resolve_overlay(o) for o in self.overlays)
        if project is None:
            return resolve(self.spec), own, False
        if self.spec is not None:  # the project's overlays belong to its spec; its strictness to the project
            return resolve(self.spec), own, project.strict
        ovs = tuple(resolve_overlay(o, project.base) for o in project.overlays)
        spec = resolve(project.spec, project.base) if project.spec is not None else resolve(None)
        return spec, ovs + own, project.strict

    def load_any(self, strict: bool = False) -> tuple[Family, Model]:
        """The spec of either family, with the family that read it (picked once, by the spec's path)."""
        spec, overlays, project_strict = self.files()
        family = family_of(spec)
        return family, family.load(spec, overlays, strict or project_strict)

    def load(self, strict: bool = False) -> Any:
        """The 0-x model (amqgen.amqp0.model.Spec), for a command that reads the 0-x families only (traffic)."""
        spec, overlays, project_strict = self.files()
        if family_of(spec) is not amqp0():
            raise UsageError(f"{spec} is the AMQP 1.0 file set: `amqgen validate`, `inspect`, `vectors`, `docs`, "
                             "`diff` and `render --lang python` read it; this command reads the 0-8, 0-9 and 0-9-1 "
                             "families only, so far")
        return amqp0().load(spec, overlays, strict or project_strict)
