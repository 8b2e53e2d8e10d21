"""Render the Python target for a spec into a temporary tree and import it (shared by tests)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
#: the bundled full 0-9-1 XML and RabbitMQ's extended one (`--spec 0-9-1`, `--spec 0-9-1-rabbit`)
SPEC_091 = str(ROOT / "spec" / "amqp0-9-1.xml")
SPEC_091_EXT = str(ROOT / "spec" / "amqp0-9-1.extended.xml")
#: The bundled overlay that turns SPEC_091 into RabbitMQ's extended spec (`--overlay rabbitmq`).
RABBITMQ_OVERLAY = ROOT / "spec" / "overlays" / "rabbitmq.xml"

_rendered: dict[tuple[str, str, bool, tuple[str, ...]], Path] = {}


def render_package(spec: str, package: str, out_root: Path, *, tests: bool = False,
                   overlays: tuple[str, ...] = ()) -> Path:
    """Run the real CLI (`python -m amqgen render --lang python`) and return the output dir."""
    key = (spec, package, tests, overlays)
    if key in _rendered:
        return _rendered[key]
    out = out_root / f"{package}{'_t' if tests else ''}"
    cmd = [sys.executable, "-m", "amqgen", "render", "--lang", "python", "--out", str(out),
           "--spec", spec, "--package", package]
    if tests:
        cmd += ["--option", "tests=1"]
    for o in overlays:
        cmd += ["--overlay", o]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise AssertionError(f"render failed ({proc.returncode}): {proc.stderr}")
    _rendered[key] = out
    return out


def import_package(spec: str, package: str, out_root: Path, *, overlays: tuple[str, ...] = ()) -> ModuleType:
    """Render (once per session) and import `package` with all its submodules."""
    out = render_package(spec, package, out_root, overlays=overlays)
    if str(out) not in sys.path:
        sys.path.insert(0, str(out))
    mod = importlib.import_module(package)
    for sub in ("constants", "exceptions", "table", "methods", "properties", "frames", "engine", "checks", "rules"):
        importlib.import_module(f"{package}.{sub}")
    return mod


#: the AMQP 1.0 file set (Debian's amqp-specs)
SPEC_10 = "/usr/share/amqp/specs/1-0"


def render_package10(package: str, out_root: Path, *, tests: bool = False) -> Path:
    """Run the real CLI (`python -m amqgen render --lang python --spec 1-0`) and return the output dir."""
    key = (SPEC_10, package, tests, ())
    if key in _rendered:
        return _rendered[key]
    out = out_root / f"{package}{'_t' if tests else ''}"
    cmd = [sys.executable, "-m", "amqgen", "render", "--lang", "python", "--spec", "1-0", "--out", str(out),
           "--package", package]
    if tests:
        cmd += ["--option", "tests=1"]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise AssertionError(f"render failed ({proc.returncode}): {proc.stderr}")
    _rendered[key] = out
    return out


def import_package10(package: str, out_root: Path) -> ModuleType:
    """Render (once per session) and import the 1.0 package with all its submodules."""
    out = render_package10(package, out_root)
    if str(out) not in sys.path:
        sys.path.insert(0, str(out))
    mod = importlib.import_module(package)
    for sub in ("types", "codec", "composites", "constants", "exceptions", "message", "frames"):
        importlib.import_module(f"{package}.{sub}")
    return mod
