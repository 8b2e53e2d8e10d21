"""Seeds for tests/c/fuzz_engine.c and tests/c/fuzz_engine_server.c: the recorded conversations of
tests/engine_diff/streams.py (client role: SCENARIOS; server role: SERVER_SCENARIOS), past their handshake (the
harnesses do their own), as the harnesses' binary steps (their header comments have the format)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine_diff"))
import streams

CONNECTION_OPEN = "000a0028"  # class 10, method 40: the handshake ends with its open-ok
CONNECTION_OPEN_OK = "000a0029"  # the server's handshake ends with its own open-ok sent


def _chunk(b: bytes) -> bytes:
    assert len(b) < 1 << 16
    return len(b).to_bytes(2, "big") + b


def _hex(s: str) -> bytes:
    return b"" if s == "-" else bytes.fromhex(s)


def encode(lines: list[str]) -> bytes:
    """One stream (tests/engine_diff/README.md's text form) -> the harness's input."""
    heartbeat = int(lines[0].split()[3])
    if lines[0].startswith("server "):  # the server's handshake is the lines up to its open-ok
        start = next(i for i, x in enumerate(lines) if x.startswith("send 0 " + CONNECTION_OPEN_OK)) + 1
    else:
        opened = next(i for i, x in enumerate(lines) if x.startswith("send 0 " + CONNECTION_OPEN))
        start = next(i for i in range(opened, len(lines)) if lines[i].startswith("recv ")) + 1
    out, now = bytearray([heartbeat % 3]), None
    for line in lines[start:]:
        w = line.split()
        if w[0] == "recv":
            data = _hex(w[1])
            for k in range(0, len(data), 0xFFFF):  # a recv longer than len16 goes in as several
                out += b"\x00" + _chunk(data[k:k + 0xFFFF])
        elif w[0] == "send":
            out += b"\x01" + bytes([int(w[1])]) + _chunk(_hex(w[2]))
        elif w[0] == "publish":
            out += b"\x02" + bytes([int(w[1])]) + _chunk(_hex(w[2])) + _chunk(_hex(w[3])) + _chunk(_hex(w[4]))
        elif w[0] == "tick":  # the harness's clock starts at 0 and steps forward: the first tick a second in
            ms = int(w[1])
            out += b"\x03" + min(1000 if now is None else ms - now, 0xFFFF).to_bytes(2, "big")
            now = ms
        elif w[0] == "close":
            text = _hex(w[2]) if len(w) > 2 else b""
            out += b"\x04" + int(w[1]).to_bytes(2, "big") + bytes([len(text)]) + text
        elif w[0] == "eof":
            out += b"\x05"
        else:
            raise ValueError(f"a stream line the harness has no step for: {line[:60]}")
    return bytes(out)


def write(engine: ModuleType, corpus: Path) -> int:
    """Each recorded conversation (recorded with the Python ``engine``) as a seed file in ``corpus``."""
    corpus.mkdir(parents=True, exist_ok=True)
    for name, make in streams.SCENARIOS.items():
        (corpus / name).write_bytes(encode(make(engine)))
    return len(streams.SCENARIOS)


def write_server(engine: ModuleType, corpus: Path) -> int:
    """Each recorded server conversation that gets past the handshake (not the refused version, not the tune-ok
    over the limit: the harness's handshake is a good one) as a seed file in ``corpus``."""
    corpus.mkdir(parents=True, exist_ok=True)
    n = 0
    for name, make in streams.SERVER_SCENARIOS.items():
        lines = make(engine)
        if any(x.startswith("send 0 " + CONNECTION_OPEN_OK) for x in lines):
            (corpus / name).write_bytes(encode(lines))
            n += 1
    return n


def encode_contract(lines: list[str], msg_size: int = 2) -> bytes:
    """One whole stream, handshake included, as tests/c/fuzz_engine_contract.c's input (its header comment has the
    format): the engine's role and limits from the first line, the message storage starting at 64 << msg_size
    octets (growing as the messages need), the octets out taken after every step."""
    role, channel_max, frame_max, heartbeat = lines[0].split()
    flags = (1 if role == "server" else 0) | (int(heartbeat) % 8) << 1 | (msg_size % 8) << 4
    out, now = bytearray([flags]) + int(channel_max).to_bytes(2, "big") + (int(frame_max) // 16).to_bytes(2, "big"), 0
    for line in lines[1:]:
        w = line.split()
        if w[0] == "initiate":
            out += b"\x06"
        elif w[0] == "recv":
            data = _hex(w[1])
            for k in range(0, len(data), 0xFFFF):
                out += b"\x00" + _chunk(data[k:k + 0xFFFF])
        elif w[0] == "send":
            out += b"\x01" + bytes([int(w[1])]) + _chunk(_hex(w[2]))
        elif w[0] == "publish":
            out += b"\x02" + bytes([int(w[1])]) + _chunk(_hex(w[2])) + _chunk(_hex(w[3])) + _chunk(_hex(w[4]))
        elif w[0] == "tick":
            ms = int(w[1])
            out += b"\x03" + min(max(ms - now, 0), 0xFFFF).to_bytes(2, "big")
            now = ms
        elif w[0] == "close":
            text = _hex(w[2]) if len(w) > 2 else b""
            out += b"\x04" + int(w[1]).to_bytes(2, "big") + bytes([len(text)]) + text
        elif w[0] == "eof":
            out += b"\x05"
        else:
            raise ValueError(f"a stream line the harness has no step for: {line[:60]}")
        out += b"\x09"
    return bytes(out)


def write_contract(engine: ModuleType, corpus: Path) -> int:
    """Every recorded conversation, client and server role, handshakes included, as seeds of the contract
    harness (tests/c/fuzz_engine_contract.c)."""
    corpus.mkdir(parents=True, exist_ok=True)
    n = 0
    for role, scenarios in (("client", streams.SCENARIOS), ("server", streams.SERVER_SCENARIOS)):
        for name, make in scenarios.items():
            (corpus / f"{role}-{name}").write_bytes(encode_contract(make(engine)))
            n += 1
    return n
