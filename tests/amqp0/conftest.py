"""The 0-9-1 family's fixtures: the TLS forwarder and every spec's Java build (tests/conftest.py has those every folder
uses)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import javatarget
import pytest
from tls_forwarder import TlsForwarder, self_signed


@pytest.fixture(scope="module")
def tls_forwarder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TlsForwarder, Path]]:
    """A TLS-terminating forwarder to the broker (tests/peers/tls_forwarder.py) serving a self-signed certificate for
    localhost: (forwarder, certificate)."""
    cert, key = self_signed(tmp_path_factory.mktemp("tls"))
    fwd = TlsForwarder(cert, key)
    yield fwd, cert
    fwd.close()


@pytest.fixture(scope="session")
def java_build(tmp_path_factory: pytest.TempPathFactory) -> javatarget.Build:
    """Every spec's Java package (with its generated JUnit tests) and tests/java's programs, compiled once: once
    for the whole run, also when `make test` runs it in two pytest-xdist workers (the first to need it builds it
    under a lock in the run's shared temporary folder, the other waits and reads it)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return javatarget.build_all(tmp_path_factory.mktemp("java"))
    shared = tmp_path_factory.getbasetemp().parent  # the workers' basetemps sit in one folder of the run
    with (shared / "java-build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = shared / "java-build.json"
        if done.is_file():
            return javatarget.Build.from_json(done.read_text(encoding="utf-8"))
        build = javatarget.build_all(shared / "java-build")
        done.write_text(build.to_json(), encoding="utf-8")
        return build
