"""A TCP proxy the tests drive to put a client under network faults: ``FaultProxy`` starts it as a process of its
own (``python tests/faults/proxy.py``: an in-process proxy would compete with a Python client under test for the
GIL) and sends it commands.

Between the client and the upstream (the broker, or a scripted server) it forwards both directions, or, on the
connections open now (a connection made later is forwarded normally, as a client reconnecting would find it):
- ``blackhole()``: stops reading and writing both ways; no FIN, no RST (a dead link or a dropped route);
- ``cut()``: resets both sides (SO_LINGER 0, then close: RST);
- ``stall("c2s" | "s2c")``: stops reading one direction (the other keeps flowing);
and on every connection, from now on:
- ``throttle(rate, "c2s" | "s2c")``: forwards one direction at ``rate`` octets per second;
- ``segment("one" | "random")``: delivers in 1-octet segments, or random sizes (1-4096) with random gaps;
- ``coalesce(ms)``: holds each direction's octets for ``ms`` and writes them in one send;
- ``refuse(seconds)``: closes the listening socket (connections are refused) and listens again after ``seconds``;
- ``normal()``: back to plain forwarding (for new reads; a black-holed connection stays so).
``connections()`` lists (client port, upstream local port) per connection: the broker knows a connection by the
second (``rabbitmqctl list_connections peer_port``).
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Self

# -- the controller (test side) -------------------------------------------------------------------------


class FaultProxy:
    """``with FaultProxy(upstream_port) as proxy: client connects to proxy.port``."""

    def __init__(self, upstream_port: int = 5672, upstream_host: str = "127.0.0.1", *, rcvbuf: int = 65536,
                 seed: int = 0) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), upstream_host, str(upstream_port), str(rcvbuf),
             str(seed)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self._lock = threading.Lock()
        first = self._line()
        assert first.startswith("port "), first
        self.port = int(first.split()[1])

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the fault proxy exited ({self.proc.poll()})")
        return line.strip()

    def command(self, *words: object) -> str:
        assert self.proc.stdin is not None
        with self._lock:  # (a soak's fault thread and its samples share the proxy)
            self.proc.stdin.write(" ".join(map(str, words)) + "\n")
            self.proc.stdin.flush()
            reply = self._line()
        assert reply.startswith("ok"), reply
        return reply[2:].strip()

    def blackhole(self) -> None:
        self.command("blackhole")

    def cut(self) -> None:
        self.command("cut")

    def stall(self, direction: str) -> None:
        self.command("stall", direction)

    def throttle(self, rate: int, direction: str = "c2s") -> None:
        self.command("throttle", direction, rate)

    def segment(self, how: str) -> None:
        self.command("segment", how)

    def coalesce(self, ms: int) -> None:
        self.command("coalesce", ms)

    def refuse(self, seconds: float) -> None:
        self.command("refuse", seconds)

    def normal(self) -> None:
        self.command("normal")

    def blackholed(self) -> set[int]:
        """The upstream ports of the connections held black-holed: the broker may not have seen them end yet."""
        return {int(p) for p in self.command("held").split()}

    def connections(self) -> list[tuple[int, int]]:
        out = self.command("conns")
        return [(int(a), int(b)) for a, b in (p.split(":") for p in out.split())]

    def url(self, user: str = "guest", password: str = "guest", vhost: str = "") -> str:
        """No path for the default virtual host: the RabbitMQ URI spec reads ``amqp://h/`` as the vhost ""."""
        return f"amqp://{user}:{password}@127.0.0.1:{self.port}" + (f"/{vhost}" if vhost else "")

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- the proxy (its own process) ------------------------------------------------------------------------


class _Mode:
    """How the proxy forwards now (shared by every connection; read on each chunk)."""

    def __init__(self) -> None:
        self.rate: dict[str, int] = {}
        self.segment = ""
        self.coalesce_ms = 0


class _Proxy:
    def __init__(self, host: str, port: int, rcvbuf: int, seed: int) -> None:
        self.upstream = (host, port)
        self.rcvbuf = rcvbuf
        self.mode = _Mode()
        self.rng = random.Random(seed)
        self.conns: list[_Conn] = []
        self.listener: socket.socket | None = None
        self.port = 0
        self.changed = asyncio.Event()  # set on every mode change: paused pumps look again
        self.tasks: set[asyncio.Task[None]] = set()
        self.accepting: asyncio.Task[None] | None = None

    def listen(self) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # a small receive buffer (inherited by accepted sockets) so that a stalled direction blocks the sender soon
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        s.setblocking(False)
        self.port = s.getsockname()[1]
        self.listener = s
        self.accepting = asyncio.get_running_loop().create_task(self.accept(s))
        self._keep(self.accepting)

    def _keep(self, task: asyncio.Task[None]) -> None:
        """The loop holds its tasks weakly: a pump waiting on a socket that was reset would be collected."""
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def accept(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                client, _ = await loop.sock_accept(listener)
            except OSError:
                return  # closed by refuse()
            client.setblocking(False)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            up = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            up.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)
            up.setblocking(False)
            try:
                await loop.sock_connect(up, self.upstream)
            except OSError:
                _reset(client)
                up.close()
                continue
            up.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Conn(client, up)
            self.conns.append(conn)
            for coro in (self.pump(conn, client, up, "c2s"), self.pump(conn, up, client, "s2c")):
                task = loop.create_task(coro)
                conn.tasks.append(task)
                self._keep(task)

    async def _held(self, conn: _Conn, direction: str) -> None:
        """Waits while this direction of ``conn`` must not be read."""
        while conn.blackhole or direction in conn.stalled:
            self.changed.clear()
            await self.changed.wait()

    async def pump(self, conn: _Conn, src: socket.socket, dst: socket.socket, direction: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                await self._held(conn, direction)
                rate = self.mode.rate.get(direction, 0)
                cap = max(1, rate // 50) if rate else 65536  # a throttled direction reads 20 ms' worth at a time
                data = await loop.sock_recv(src, cap)
                if not data:
                    if not conn.blackhole:
                        dst.shutdown(socket.SHUT_WR)  # forward the FIN
                    return
                if self.mode.coalesce_ms:
                    await asyncio.sleep(self.mode.coalesce_ms / 1000)
                    more = _drain_now(src)
                    data += more
                await self._held(conn, direction)  # a black-hole that came while we read holds this chunk too
                if self.mode.segment == "one":
                    for i in range(len(data)):
                        await loop.sock_sendall(dst, data[i:i + 1])
                        await asyncio.sleep(0.0005)
                elif self.mode.segment == "random":
                    i = 0
                    while i < len(data):
                        n = self.rng.randint(1, 4096)
                        await loop.sock_sendall(dst, data[i:i + n])
                        i += n
                        await asyncio.sleep(self.rng.random() * 0.002)
                else:
                    await loop.sock_sendall(dst, data)
                if rate:
                    await asyncio.sleep(len(data) / rate)
        except OSError:
            self.drop(conn)

    def cut(self) -> None:
        for conn in self.conns:
            self.drop(conn)
        self.conns.clear()

    def drop(self, conn: _Conn) -> None:
        """Resets both sides of ``conn``. Its pumps are cancelled and the loop's readers for its sockets removed
        first: a socket closed under a pending sock_recv stays registered in the loop's selector, and the next
        socket given the same descriptor number would then fail to register (the new connection reset)."""
        loop = asyncio.get_running_loop()
        for task in conn.tasks:
            task.cancel()
        for sock in (conn.client, conn.up):
            if sock.fileno() >= 0:
                loop.remove_reader(sock.fileno())
                loop.remove_writer(sock.fileno())
            _reset(sock)

    def refuse(self, seconds: float) -> None:
        """Stops listening (connections are refused) for ``seconds``, then listens on the same port again."""
        listener = self.listener
        assert listener is not None
        self.listener = None
        asyncio.get_running_loop().remove_reader(listener.fileno())
        if self.accepting is not None:
            self.accepting.cancel()
        listener.close()
        asyncio.get_running_loop().call_later(seconds, self.listen)

    def live(self) -> list[_Conn]:
        return [c for c in self.conns if c.client.fileno() >= 0 and c.up.fileno() >= 0]


class _Conn:
    """One proxied connection and the faults on it now."""

    def __init__(self, client: socket.socket, up: socket.socket) -> None:
        self.client, self.up = client, up
        self.blackhole = False
        self.stalled: set[str] = set()
        self.tasks: list[asyncio.Task[None]] = []


def _drain_now(s: socket.socket) -> bytes:
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except (BlockingIOError, InterruptedError):
            return out
        except OSError:
            return out
        if not chunk:
            return out
        out += chunk


def _reset(s: socket.socket) -> None:
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    s.close()


async def _main(host: str, port: int, rcvbuf: int, seed: int) -> None:
    proxy = _Proxy(host, port, rcvbuf, seed)
    proxy.listen()
    print(f"port {proxy.port}", flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    mode = proxy.mode
    while line := (await reader.readline()).decode():
        words = line.split()
        if not words:
            continue
        cmd, args = words[0], words[1:]
        reply = ""
        if cmd == "quit":
            break
        if cmd == "blackhole":
            for c in proxy.live():
                c.blackhole = True
        elif cmd == "cut":
            proxy.cut()
        elif cmd == "stall":
            for c in proxy.live():
                c.stalled.add(args[0])
        elif cmd == "throttle":
            mode.rate[args[0]] = int(args[1])
        elif cmd == "segment":
            mode.segment = args[0]
        elif cmd == "coalesce":
            mode.coalesce_ms = int(args[0])
        elif cmd == "refuse":
            proxy.refuse(float(args[0]))
        elif cmd == "normal":
            proxy.mode = mode = _Mode()
        elif cmd == "held":
            reply = " ".join(str(c.up.getsockname()[1]) for c in proxy.conns if c.blackhole and c.up.fileno() >= 0)
        elif cmd == "conns":
            ports = []
            for c in proxy.live():
                try:
                    ports.append(f"{c.client.getpeername()[1]}:{c.up.getsockname()[1]}")
                except OSError:
                    pass  # reset by its peer since
            reply = " ".join(ports)
        else:
            print(f"error unknown command {cmd}", flush=True)
            continue
        proxy.changed.set()
        print(f"ok {reply}".rstrip(), flush=True)
    for c in proxy.conns:
        c.client.close()
        c.up.close()
    os._exit(0)  # pumps may be blocked in the loop's socket calls


if __name__ == "__main__":
    _h, _p, _r, _s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    asyncio.run(_main(_h, _p, _r, _s))
