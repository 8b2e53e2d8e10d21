"""The C target's ownership, keys and errors (issue 18, items 5-7), through tests/c/ownership.c under ASan and UBSan:

- a frame split across two reads lives in the reader's storage until the next split frame overwrites it: the
  decoded strings of the first then read the second's octets, and `ag_method_copy` / `ag_content_header_copy`
  keep them (caller storage, the size needed reported, nothing written when it is short);
- table keys are bytes values (`AG_LIT`, `ag_cstring`), a length is never typed by hand, and `AG_LIT` refuses
  anything but a string literal at compile time; `ag_table_get` finds an entry by key;
- every status has its own name and sentence (`ag_strerror`); storage, frame_max, misuse and unknown ids are
  statuses of their own;
- `*_decode_where` says which field broke which rule at which offset, on octets written out by hand, and its
  second reading agrees with the decoder on every malformed corpus input and on thousands of mutated ones.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from pytarget import SPEC_091_EXT

from amqgen.amqp0 import vectors
from amqgen.amqp0.lower import load_spec

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "c"))
import cbuild

MUTATIONS = 4000


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("ownership")
    tree = cbuild.render(root / "gen")
    exe = cbuild.compile_program(tree, [cbuild.C_DIR / "ownership.c"], root / "ownership",
                                 flags=(*cbuild.WARN, "-O1", "-g", *cbuild.SANITIZE))
    return tree, exe


def test_copies_keys_statuses_and_where_on_hand_built_octets(built: tuple[Path, Path]) -> None:
    _, exe = built
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1].endswith(" checks, 0 failed"), \
        (proc.stdout + proc.stderr)[-4000:]


def test_a_key_from_anything_but_a_literal_does_not_compile(built: tuple[Path, Path], tmp_path: Path) -> None:
    tree, _ = built
    good = tmp_path / "good.c"
    bad = tmp_path / "bad.c"
    good.write_text('#include "ag.h"\nsize_t f(void) { return AG_LIT("x-index").len; }\n', encoding="utf-8")
    bad.write_text('#include "ag.h"\nsize_t f(const char *k) { return AG_LIT(k).len; }\n', encoding="utf-8")
    cc = cbuild.tool("clang")
    for src, ok in ((good, True), (bad, False)):
        proc = subprocess.run([cc, "-std=c99", "-Wall", "-Werror", "-c", "-I", str(tree / "include"), str(src), "-o",
                               str(tmp_path / "x.o")], capture_output=True, text=True, check=False)
        assert (proc.returncode == 0) == ok, proc.stderr


def _mutate(data: bytes, r: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(r.randint(1, 3)):
        op = r.randrange(5)
        at = r.randrange(len(b)) if b else 0
        if op == 0 and b:
            b[at] ^= 1 << r.randrange(8)
        elif op == 1 and b:
            b[at] = r.choice((0, 0xFF, 0x80, 0xC3, 0x28, ord("Z"), ord("F"), ord("S")))
        elif op == 2:
            del b[at:]
        elif op == 3:
            b[at:at] = r.randbytes(r.randint(1, 4))
        elif b:
            del b[at:at + r.randint(1, 4)]
    return bytes(b)


def test_where_agrees_with_the_decoder(built: tuple[Path, Path]) -> None:
    """The locator is a second, field-by-field reading: on every malformed corpus input of a method or content
    header, and on mutated valid ones, it must find the decoder's own error, name a field (none only for
    trailing data) and point inside the input."""
    _, exe = built
    doc = vectors.corpus(load_spec(SPEC_091_EXT), "rabbitmq")
    cases = [(c["input"], bytes.fromhex(c["bytes"])) for c in doc["malformed"] if c["input"] in ("method", "properties")]
    valid = [("method", bytes.fromhex(c["bytes"])) for c in doc["methods"]]
    valid += [("properties", bytes.fromhex(c["bytes"])) for c in doc["properties"]]
    r = random.Random(18)
    mutated = []
    for _ in range(MUTATIONS):
        kind, data = r.choice(valid)
        mutated.append((kind, _mutate(data, r)))
    every = cases + mutated
    text = "".join(f"{k} {d.hex()}\n" for k, d in every)
    proc = subprocess.run([str(exe), "where"], input=text, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == len(every)
    wrong = []
    errors = 0
    for (kind, data), line in zip(every, lines, strict=True):
        status, found, offset, field = line.split(" ")
        if status == "ok":
            continue
        errors += 1
        if found != status or int(offset) > len(data) or (field == "-") != (status == "trailing-data"):
            wrong.append(f"{kind} {data.hex()}: {line}")
    assert not wrong, f"{len(wrong)} disagree:\n" + "\n".join(wrong[:20])
    assert errors >= len(cases) + MUTATIONS // 2  # the mutations mostly break something
    fields = {line.split(" ")[3] for line in lines}
    assert {"class-id", "method-id", "flags", "headers", "arguments", "-"} <= fields, sorted(fields)
