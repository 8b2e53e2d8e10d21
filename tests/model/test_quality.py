"""amqgen itself is fully annotated (mypy --strict) and lint-clean (ruff)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=ROOT)


def test_mypy_strict() -> None:
    proc = run("mypy", "--strict", "amqgen")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff() -> None:
    proc = run("ruff", "check", "amqgen")
    assert proc.returncode == 0, proc.stdout + proc.stderr


HOOKS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "templates").glob("*/hook.py"))


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_mypy_strict(hook: str) -> None:
    """The packs' hooks are typed like amqgen (one run each: every hook is a module named ``hook``)."""
    proc = run("mypy", "--strict", hook)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hooks_ruff() -> None:
    assert len(HOOKS) >= 8, HOOKS
    proc = run("ruff", "check", *HOOKS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def lint_imports(package_parent: Path) -> subprocess.CompletedProcess[str]:
    """import-linter's contracts (pyproject.toml [tool.importlinter]) on the amqgen found under package_parent."""
    exe = Path(sys.executable).with_name("lint-imports")
    assert exe.exists(), f"import-linter is not installed beside {sys.executable} (test extra)"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(package_parent)}
    return subprocess.run(
        [str(exe), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        capture_output=True, text=True, cwd=package_parent, env=env,
    )


def test_layers_kept() -> None:
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout, proc.stdout


def test_layers_catch_an_upward_import(tmp_path: Path) -> None:
    """The contract can fail: vectors importing from render again (the cycle it once had) breaks it, so does
    the model reaching up to the CLI, and so does one family reaching into the other."""
    shutil.copytree(ROOT / "amqgen", tmp_path / "amqgen", ignore=shutil.ignore_patterns("__pycache__"))
    vectors = tmp_path / "amqgen" / "amqp0" / "vectors.py"
    vectors.write_text(vectors.read_text() + "\nfrom ..render import discover  # planted\n")
    proc = lint_imports(tmp_path)
    assert proc.returncode != 0, proc.stdout
    assert "amqgen.amqp0 is not allowed to import amqgen.render" in proc.stdout, proc.stdout
    assert "- amqgen.amqp0.vectors -> amqgen.render (l." in proc.stdout, proc.stdout

    shutil.rmtree(tmp_path / "amqgen")
    shutil.copytree(ROOT / "amqgen", tmp_path / "amqgen", ignore=shutil.ignore_patterns("__pycache__"))
    model = tmp_path / "amqgen" / "amqp0" / "model.py"
    model.write_text(model.read_text() + "\nfrom .. import cli  # planted\n")
    proc = lint_imports(tmp_path)
    assert proc.returncode != 0 and "amqgen.amqp0 is not allowed to import amqgen.cli" in proc.stdout, proc.stdout
    assert "- amqgen.amqp0.model -> amqgen.cli (l." in proc.stdout, proc.stdout

    shutil.rmtree(tmp_path / "amqgen")
    shutil.copytree(ROOT / "amqgen", tmp_path / "amqgen", ignore=shutil.ignore_patterns("__pycache__"))
    plan10 = tmp_path / "amqgen" / "amqp10" / "plan.py"
    plan10.write_text(plan10.read_text() + "\nfrom ..amqp0 import wire as wire0  # planted\n")
    proc = lint_imports(tmp_path)
    assert proc.returncode != 0, proc.stdout
    assert "amqgen.amqp10 is not allowed to import amqgen.amqp0" in proc.stdout, proc.stdout
    assert "- amqgen.amqp10.plan -> amqgen.amqp0.wire (l." in proc.stdout, proc.stdout

    shutil.rmtree(tmp_path / "amqgen")
    shutil.copytree(ROOT / "amqgen", tmp_path / "amqgen", ignore=shutil.ignore_patterns("__pycache__"))
    wire = tmp_path / "amqgen" / "amqp0" / "wire.py"
    wire.write_text(wire.read_text() + "\nfrom . import plan  # planted\n")
    proc = lint_imports(tmp_path)
    assert proc.returncode != 0 and "amqgen.amqp0.wire is not allowed to import amqgen.amqp0.plan" in proc.stdout, (
        proc.stdout)


@pytest.mark.parametrize(
    ("module", "planted", "message"),
    [
        # shared machinery imports neither family (naming once imported the 0-x model)
        ("naming.py", "from .amqp0.model import Spec as Spec0", "amqgen.naming is not allowed to import amqgen.amqp0"),
        ("changes.py", "from .amqp10 import model as model10", "amqgen.changes is not allowed to import amqgen.amqp10"),
        # the families are independent, both ways
        ("amqp0/diff.py", "from ..amqp10 import model as model10", "amqgen.amqp0 is not allowed to import amqgen.amqp10"),
        # a family sits below the module that picks it
        ("amqp10/model.py", "from .. import family", "amqgen.amqp10 is not allowed to import amqgen.family"),
        # the 1.0 family's own floors: the model under the plan
        ("amqp10/model.py", "from . import plan", "amqgen.amqp10.model is not allowed to import amqgen.amqp10.plan"),
        # the 0-x family's interface sits on top of its floors
        ("amqp0/plan.py", "from . import family", "amqgen.amqp0.plan is not allowed to import amqgen.amqp0.family"),
    ],
)
def test_each_contract_catches_a_planted_import(tmp_path: Path, module: str, planted: str, message: str) -> None:
    shutil.copytree(ROOT / "amqgen", tmp_path / "amqgen", ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "amqgen" / module
    target.write_text(target.read_text() + f"\n{planted}  # planted\n")
    proc = lint_imports(tmp_path)
    assert proc.returncode != 0 and message in proc.stdout, proc.stdout
