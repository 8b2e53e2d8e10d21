"""A one-connection server program on a generated engine (tests/c/engine_server.c, tests/java/EngineServer.java)
and one client run against it: the program prints ``port N`` once it listens, serves one connection, logs what it
saw and exits."""

from __future__ import annotations

import subprocess
from collections.abc import Callable


def serve(cmd: list[str], client: Callable[[int], None]) -> list[str]:
    """Run the server ``cmd``, then ``client(port)``; the server's log lines once it exits with status 0 and
    nothing on stderr (the server is killed when the client fails or it does not end in 60 s)."""
    srv = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert srv.stdout is not None
        first = srv.stdout.readline().split()
        assert first[:1] == ["port"], first
        client(int(first[1]))
        out, err = srv.communicate(timeout=60)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    assert (srv.returncode, err) == (0, ""), out + err[-3000:]
    return out.splitlines()
