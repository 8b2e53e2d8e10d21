"""The Java client's fault driver (tests/java/FaultDriver.java), compiled with tests/java's programs by the
java_build fixture (tests/javatarget.py) against the package amqgen.rabbit: its command."""

from __future__ import annotations

from typing import Any


def java_driver_command(build: Any) -> tuple[list[str], dict[str, str] | None]:
    from javatarget import tool

    return [tool("java", "openjdk-17-jdk-headless"), "-cp", build.classpath(), "FaultDriver"], None
