"""amqgen itself is fully annotated (mypy --strict) and lint-clean (ruff)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=ROOT)


def test_mypy_strict() -> None:
    proc = run("mypy", "--strict", "amqgen")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff() -> None:
    proc = run("ruff", "check", "amqgen")
    assert proc.returncode == 0, proc.stdout + proc.stderr
