"""Builds the C client's fault driver (tests/c/fault_driver.c) against a rendering of the C pack."""

from __future__ import annotations

from pathlib import Path


def c_driver_command(tmp: Path) -> tuple[list[str], dict[str, str] | None]:
    raise AssertionError("the C client's fault driver (tests/c/fault_driver.c) is not written yet")
