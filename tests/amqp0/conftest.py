"""The 0-9-1 family's fixtures (tests/conftest.py has those every folder uses)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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
