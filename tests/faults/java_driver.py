"""The Java client's fault driver (tests/java/FaultDriver.java), compiled with tests/java's programs."""

from __future__ import annotations

from typing import Any


def java_driver_command(build: Any) -> tuple[list[str], dict[str, str] | None]:
    raise AssertionError("the Java client's fault driver (tests/java/FaultDriver.java) is not written yet")
