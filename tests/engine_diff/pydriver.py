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


def runs(tags: tuple[int, ...]) -> list[tuple[int, int]]:
    """Tags as runs of consecutive ones, oldest first (the C engine reports a run per event: no allocation)."""
    out: list[tuple[int, int]] = []
    for t in sorted(tags):
        if out and out[-1][1] + 1 == t:
            out[-1] = (out[-1][0], t)
        else:
            out.append((t, t))
    return out


def canonical(methods: ModuleType, ev: Any) -> str | None:
    """One event as log lines (PublishesUnconfirmed: one a run of tags); None for HeartbeatDue, which the log
    leaves out (README: its frame is in the bytes out)."""
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
        return f"ev lost {int(ev.closed)} {ev.reason}"
    if name == "PublishesUnconfirmed":
        return "\n".join(f"ev unconfirmed {ev.channel} {a} {b}" for a, b in runs(ev.delivery_tags))
    if name == "ProtocolHeaderReceived":
        return "ev protocol-header"
    if name == "HeartbeatDue":
        return None
    return f"ev unknown {name}"


def by_channel(events: list[str]) -> list[str]:
    """Each block of consecutive unconfirmed runs in channel order (the connection's end: the Python engine goes
    through its channels in the order they were first opened, the C engine in number order); a channel's runs
    keep their order."""
    out: list[str] = []
    i = 0
    while i < len(events):
        j = i
        while j < len(events) and events[j].startswith("ev unconfirmed "):
            j += 1
        if j > i:
            out.extend(sorted(events[i:j], key=lambda x: int(x.split()[2])))
            i = j
        else:
            out.append(events[i])
            i += 1
    return out


def run(engine: ModuleType, lines: Iterable[str]) -> list[str]:
    """The canonical log of one stream fed to a fresh ``engine.Connection`` in the role its first line names."""
    pkg = engine.__name__.rpartition(".")[0]
    methods = importlib.import_module(f"{pkg}.methods")
    properties = importlib.import_module(f"{pkg}.properties")
    it = iter(lines)
    first = next(it).split()
    if first[0] not in ("client", "server"):
        raise ValueError(f"bad-stream first line {first}")
    conn = engine.Connection(first[0], channel_max=int(first[1]), frame_max=int(first[2]),
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
        events: list[str] = []
        while (ev := conn.next_event()) is not None:
            text = canonical(methods, ev)
            if text is not None:
                events.extend(text.split("\n"))
        log.extend(by_channel(events))
        out = conn.data_to_send()
        if out:
            log.append(f"out {_hex(out)}")
    return log


if __name__ == "__main__":
    sys.path.insert(0, sys.argv[1])
    print("\n".join(run(importlib.import_module(f"{sys.argv[2]}.engine"), sys.stdin.read().splitlines())))
