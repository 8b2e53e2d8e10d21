"""Hostile input for the generated Java codec, run by tests/java/Hostile.java: seeded random mutations
of the conformance corpus's frames (and of its method, header and table octets wrapped in frames, and
tables nested 10,000 deep) fed to FrameReader in random pieces and decoded as a method, a content header
and a table. Nothing but DecodeException may escape, and no decode may allocate more than its input
justifies (measured per case; the JVM runs with a 64 MiB heap, so a length field that buys memory the
input does not back shows as an OutOfMemoryError). A bounded slice here; `Hostile SEEDFILE SEED N` with
a large N is the long run (see templates/java/README.md).

The engine too (issue 34), by tests/java/EngineHostile.java: the recorded conversations of
tests/engine_diff/streams.py with their peer's octets mutated, replayed into a fresh Engine (both roles) with the
caller's sends at their places; only LocalProtocolException may escape, ConnectionLost is the last event, nothing
follows a ProtocolError but the caller's close, and every frame out is within the frame_max in force.
`EngineHostile STREAMFILE SEED N` with a large N is the long run.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from types import ModuleType

from javatarget import Build, java
from pytarget import SPEC_091_EXT

from amqgen.amqp0 import vectors
from amqgen.amqp0.lower import load_spec

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "engine_diff"))
import streams

CASES = 20000


def frame(ftype: int, payload: bytes) -> bytes:
    return bytes([ftype]) + (1).to_bytes(2, "big") + len(payload).to_bytes(4, "big") + payload + b"\xce"


def seeds(path: Path) -> int:
    doc = vectors.corpus(load_spec(SPEC_091_EXT), "rabbitmq")
    lines = [c["bytes"] for c in doc["frames"]]
    lines += [frame(1, bytes.fromhex(c["bytes"])).hex() for c in doc["methods"]]
    lines += [frame(2, bytes.fromhex(c["bytes"])).hex() for c in doc["properties"]]
    lines += [c["bytes"] for c in doc["tables"]]
    lines += [c["bytes"] for c in doc["malformed"]]
    # 10,000 nested tables: {"a": {"a": ...}} built inside out
    inner = b""
    for _ in range(10000):
        entry = b"\x01aF" + len(inner).to_bytes(4, "big") + inner
        inner = entry
    lines.append((len(inner).to_bytes(4, "big") + inner).hex())
    lines = [line for line in lines if line]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def test_mutated_frames_raise_only_decode_errors(java_build: Build, tmp_path: Path) -> None:
    seed_file = tmp_path / "seeds.txt"
    n = seeds(seed_file)
    proc = java(java_build, "Hostile", str(seed_file), "7", str(CASES), jvm=("-Xmx64m", "-Xss512k"), timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    assert proc.stdout.startswith(f"OK {CASES} mutated inputs from {n} seeds"), proc.stdout


def test_frames_before_an_error_ride_on_it_and_the_reader_stays_failed(java_build: Build) -> None:
    """Issue 18, item 1: a peer's connection.close followed by junk is not lost with the error, whole or split
    feeds, array or ByteBuffer; every later feed throws DecodeException.Failed of the same kind."""
    proc = java(java_build, "ReaderContract", timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("OK "), (proc.stdout + proc.stderr)[-4000:]


ENGINE_CASES = 4000


def write_streams(path: Path, conversations: list[list[str]]) -> None:
    path.write_text("".join("\n".join(lines) + "\n%%\n" for lines in conversations), encoding="utf-8")


def recorded(amqp091: ModuleType) -> dict[str, list[str]]:
    engine = importlib.import_module(f"{amqp091.__name__}.engine")
    return {name: make(engine) for name, make in streams.SCENARIOS.items()}


def test_mutated_conversations_give_the_engine_only_documented_outcomes(java_build: Build, amqp091: ModuleType,
                                                                        tmp_path: Path) -> None:
    conversations = recorded(amqp091)
    path = tmp_path / "streams.txt"
    write_streams(path, list(conversations.values()))
    proc = java(java_build, "EngineHostile", str(path), "34", str(ENGINE_CASES), timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    head = f"OK {ENGINE_CASES} mutated streams from {len(conversations)} conversations"
    assert proc.stdout.startswith(head), proc.stdout
    # most streams get past the handshake, the mutations bite (a ProtocolError in many, not all), and the caller's
    # later sends are refused
    m = re.search(r"(\d+) past the handshake, (\d+) events, (\d+) streams with a ProtocolError, (\d+) sends "
                  r"refused", proc.stdout)
    assert m, proc.stdout
    past, events, errors, refused = map(int, m.groups())
    assert past > ENGINE_CASES // 2 and events > 5 * ENGINE_CASES, proc.stdout
    assert ENGINE_CASES // 4 < errors < ENGINE_CASES and refused > 0, proc.stdout


def test_mutated_server_conversations_give_the_engine_only_documented_outcomes(java_build: Build,
                                                                               amqp091: ModuleType,
                                                                               tmp_path: Path) -> None:
    """The same in the server role: streams.SERVER_SCENARIOS with the client's octets mutated, replayed into an
    Engine.server() with the server's calls at their places (a delivery over frame_max is refused with nothing
    written; the frame_max in force is the client's tune-ok once the engine took it)."""
    engine = importlib.import_module(f"{amqp091.__name__}.engine")
    conversations = [make(engine) for make in streams.SERVER_SCENARIOS.values()]
    path = tmp_path / "streams.txt"
    write_streams(path, conversations)
    proc = java(java_build, "EngineHostile", str(path), "33", str(ENGINE_CASES), timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    assert proc.stdout.startswith(f"OK {ENGINE_CASES} mutated streams from {len(conversations)} conversations"), \
        proc.stdout
    m = re.search(r"(\d+) past the handshake, (\d+) events, (\d+) streams with a ProtocolError, (\d+) sends "
                  r"refused", proc.stdout)
    assert m, proc.stdout
    past, events, errors, refused = map(int, m.groups())
    assert past > ENGINE_CASES // 2 and events > 4 * ENGINE_CASES, proc.stdout
    assert ENGINE_CASES // 4 < errors < ENGINE_CASES and refused > 0, proc.stdout


def frame_on(ftype: int, channel: int, payload: bytes) -> bytes:
    return bytes([ftype]) + channel.to_bytes(2, "big") + len(payload).to_bytes(4, "big") + payload + b"\xce"


def test_after_our_close_the_peers_other_methods_are_discarded(java_build: Build, amqp091: ModuleType,
                                                               tmp_path: Path) -> None:
    """Found by the engine's mutation fuzzing: after our connection.close the Java engine still checked the peer's
    other methods (who may send them, on which channel) and gave a ProtocolError for a connection.tune on channel
    1, where the spec says any method but close and close-ok is discarded (the Python engine's order, and the
    engine's Javadoc). Frames built by hand: connection.tune on channel 1, basic.publish (a client's method) and
    channel.open-ok on channel 0, then the close-ok."""
    hs = recorded(amqp091)["server_closes"]
    opened = next(i for i, x in enumerate(hs) if x.startswith("send 0 000a0028"))
    handshake = hs[:opened + 2]
    assert handshake[-1].startswith("recv ")
    tune = b"\x00\x0a\x00\x1e" + (0).to_bytes(2, "big") + (4096).to_bytes(4, "big") + (0).to_bytes(2, "big")
    publish = b"\x00\x3c\x00\x28" + b"\x00\x00" + b"\x00" + b"\x00" + b"\x00"
    open_ok = b"\x00\x14\x00\x0b" + b"\x00\x00\x00\x00"
    close_ok = b"\x00\x0a\x00\x33"
    junk = frame_on(1, 1, tune) + frame_on(1, 0, publish) + frame_on(1, 0, open_ok)
    stream = [*handshake, "close 200 " + b"bye".hex(), f"recv {junk.hex()}", f"recv {frame_on(1, 0, close_ok).hex()}",
              "eof"]
    path = tmp_path / "streams.txt"
    write_streams(path, [stream])
    proc = java(java_build, "EngineHostile", str(path), "replay", timeout=120)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert proc.stdout.split() == ["MethodReceived", "MethodReceived", "ConnectionNegotiated", "ConnectionClosed",
                                   "ConnectionLost"], proc.stdout
