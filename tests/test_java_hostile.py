"""Hostile input for the generated Java codec, run by tests/java/Hostile.java: seeded random mutations
of the conformance corpus's frames (and of its method, header and table octets wrapped in frames, and
tables nested 10,000 deep) fed to FrameReader in random pieces and decoded as a method, a content header
and a table. Nothing but DecodeException may escape, and no decode may allocate more than its input
justifies (measured per case; the JVM runs with a 64 MiB heap, so a length field that buys memory the
input does not back shows as an OutOfMemoryError). A bounded slice here; `Hostile SEEDFILE SEED N` with
a large N is the long run (see templates/java/README.md).
"""

from __future__ import annotations

from pathlib import Path

from javatarget import Build, java
from pytarget import SPEC_091_EXT

from amqgen.amqp0 import vectors
from amqgen.amqp0.lower import load_spec

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
