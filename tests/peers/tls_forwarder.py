"""A TLS-terminating forwarder in front of the broker, for the clients' TLS tests (tests/amqp0/python/test_python_client.py,
tests/amqp0/c/test_c_engine.py; the fixture ``tls_forwarder`` in conftest.py): RabbitMQ here has no TLS listener."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import threading
from pathlib import Path

HOST = os.environ.get("AMQP_HOST", "127.0.0.1")
PORT = int(os.environ.get("AMQP_PORT", "5672"))


class TlsForwarder:
    """Accepts TLS on an ephemeral port with a self-signed certificate and pumps the plaintext to and from
    HOST:PORT. It records, per accepted connection, the TLS version the client negotiated and the first octets it
    decrypted, so a test sees that the client spoke AMQP inside TLS, and the server name each client sent (SNI)."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.server_names: list[str | None] = []
        self.ctx.sni_callback = self._server_name
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.seen: list[tuple[str | None, bytes]] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _server_name(self, _sock: ssl.SSLObject, name: str | None, _ctx: ssl.SSLContext) -> None:
        self.server_names.append(name)  # None answers: go on with this context

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            tls = self.ctx.wrap_socket(raw, server_side=True)
            first = tls.recv(8)
        except OSError:
            raw.close()
            return
        self.seen.append((tls.version(), first))
        upstream = socket.create_connection((HOST, PORT))
        upstream.sendall(first)
        threading.Thread(target=self._pump, args=(upstream, tls), daemon=True).start()
        self._pump(tls, upstream)

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.listener.close()


def self_signed(folder: Path, name: str = "localhost") -> tuple[Path, Path]:
    """A self-signed certificate for DNS name ``name`` and its key (openssl), in ``folder``."""
    openssl = shutil.which("openssl")
    assert openssl, "openssl is not installed (Debian package openssl; scripts/test-env installs it)"
    cert, key = folder / f"{name}-cert.pem", folder / f"{name}-key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={name}",
                    "-addext", f"subjectAltName=DNS:{name}", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key
