"""The Python engine's driver for the differential test (README.md here): one stream in, the canonical event
log out, as the C driver (driver.c) prints it. ``run(engine, lines)`` is what the test calls; ``python
pydriver.py <dir holding the rendered package> <package> < stream`` runs it alone."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from types import ModuleType
from typing import Any


def _unhex(s: str) -> bytes:
    return b"" if s == "-" else bytes.fromhex(s)


def _hex(b: bytes) -> str:
    return b.hex() or "-"


def canonical(methods: ModuleType, ev: Any) -> str | None:
    """One event as a log line; None for the events the log leaves out (README: HeartbeatDue, whose frame is in
    the bytes out, and PublishesUnconfirmed, which the C engine does not report)."""
    name = type(ev).__name__
    if name == "MethodReceived":
        return f"ev method {ev.channel} {_hex(methods.encode_method(ev.method))}"
    if name in ("MessageReceived", "MessageReturned"):
        kind = "message" if name == "MessageReceived" else "returned"
        return (f"ev {kind} {ev.channel} {_hex(methods.encode_method(ev.method))} {_hex(ev.properties.encode())} "
                f"{_hex(bytes(ev.body))}")
    if name == "ConnectionNegotiated":
        return f"ev negotiated {ev.frame_max} {ev.channel_max} {ev.heartbeat}"
    if name == "ChannelOpened":
        return f"ev opened {ev.channel}"
    if name == "ChannelClosed":
        return f"ev channel-closed {ev.channel} {ev.reply_code}"
    if name == "ConnectionClosed":
        return f"ev connection-closed {ev.reply_code}"
    if name in ("PublishAcked", "PublishNacked"):  # the highest tag settled: the C event carries the ack's tag
        return f"ev {'acked' if name == 'PublishAcked' else 'nacked'} {ev.channel} {max(ev.delivery_tags)}"
    if name == "PeerSilent":
        return "ev silent"
    if name == "ProtocolError":
        return f"ev protocol-error {ev.reply_code}"
    if name == "ConnectionLost":
        return f"ev lost {int(ev.closed)}"
    if name in ("HeartbeatDue", "PublishesUnconfirmed"):
        return None
    return f"ev unknown {name}"


def run(engine: ModuleType, lines: Iterable[str]) -> list[str]:
    """The canonical log of one stream fed to a fresh client-role ``engine.Connection``."""
    pkg = engine.__name__.rpartition(".")[0]
    methods = importlib.import_module(f"{pkg}.methods")
    properties = importlib.import_module(f"{pkg}.properties")
    it = iter(lines)
    first = next(it).split()
    if first[0] != "client":
        raise ValueError(f"bad-stream first line {first}")
    conn = engine.Connection("client", channel_max=int(first[1]), frame_max=int(first[2]),
                             heartbeat=int(first[3]))
    log: list[str] = []
    for line in it:
        w = line.split()
        if not w or w[0].startswith("#"):
            continue
        log.append(f"> {w[0]}")
        try:
            if w[0] == "initiate":
                conn.initiate()
            elif w[0] == "recv":
                conn.receive_data(_unhex(w[1]))
            elif w[0] == "eof":
                conn.receive_data(b"")
            elif w[0] == "tick":
                conn.tick(int(w[1]) / 1000)
            elif w[0] == "send":
                conn.send(int(w[1]), methods.decode_method(_unhex(w[2])))
            elif w[0] == "publish":
                header = _unhex(w[3])
                props = properties.PROPERTIES[int.from_bytes(header[:2], "big")].decode(header, 12)
                conn.send(int(w[1]), methods.decode_method(_unhex(w[2])), props, _unhex(w[4]))
            elif w[0] == "close":
                conn.close(int(w[1]), _unhex(w[2]).decode() if len(w) > 2 else "")
            else:
                raise ValueError(f"bad-stream {w[0]}")
        except engine.LocalProtocolError:
            log.append("refused")
        while (ev := conn.next_event()) is not None:
            text = canonical(methods, ev)
            if text is not None:
                log.append(text)
        out = conn.data_to_send()
        if out:
            log.append(f"out {_hex(out)}")
    return log


if __name__ == "__main__":
    sys.path.insert(0, sys.argv[1])
    print("\n".join(run(importlib.import_module(f"{sys.argv[2]}.engine"), sys.stdin.read().splitlines())))
