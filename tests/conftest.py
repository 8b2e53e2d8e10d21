from __future__ import annotations

from pathlib import Path
from types import ModuleType

import javatarget
import pytest
from pytarget import SPEC_091_EXT, import_package, import_package10


@pytest.fixture(scope="session")
def gen_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("generated")


@pytest.fixture(scope="session")
def amqp091(gen_root: Path) -> ModuleType:
    """The Python target rendered from RabbitMQ's 0-9-1 extended spec, as package `amqp091x`."""
    return import_package(SPEC_091_EXT, "amqp091x", gen_root)


@pytest.fixture(scope="session")
def amqp10(gen_root: Path) -> ModuleType:
    """The AMQP 1.0 Python target rendered from the OASIS XML (Debian's amqp-specs), as package `amqp10gen`."""
    return import_package10("amqp10gen", gen_root)


@pytest.fixture(scope="session")
def java_build(tmp_path_factory: pytest.TempPathFactory) -> javatarget.Build:
    """Every spec's Java package (with its generated JUnit tests) and tests/java's programs, compiled once."""
    return javatarget.build_all(tmp_path_factory.mktemp("java"))
