"""The generated C library against librabbitmq 0.11 (rabbitmq-c, Debian's librabbitmq-dev), both ways,
in one program (tests/c/interop_main.c) built with ASan and UBSan: for every method librabbitmq
implements (all 64: RabbitMQ's 0-9-1 extended spec has 60 of them; tests/data/librabbitmq-extras.xml,
an overlay, adds connection.blocked, connection.unblocked, access.request and access.request-ok), the
basic properties (every one, none, random subsets), and random field tables with every type code
librabbitmq knows (t b B s u I i l L f d D S x T V F A, nested), with non-default values in every
field and edge values (all ones, 255-octet short strings) every third round:

- librabbitmq's octets (`amqp_encode_method`, `amqp_encode_properties`, `amqp_encode_table`) decode
  with ours (per-method decoders, `ag_method_decode`, `ag_table_validate` + iteration) to the
  values librabbitmq was given;
- ours (per-method encoders, `ag_method_encode`, the table writer) decode with `amqp_decode_method`
  / `amqp_decode_properties` / `amqp_decode_table` to the values we were given;
- both write the same octets (every type code above means the same octets in both libraries;
  librabbitmq reads 'L' as unsigned, the rabbitmq dialect as signed: compared as bit patterns);
- whole messages as frames, both ways: librabbitmq's `amqp_basic_publish` writes to a socket that
  our frame reader reads in odd-sized chunks, and `ag_message_encode` (frame_max 4096) plus a
  heartbeat is read by librabbitmq's `amqp_handle_input`: same method, properties and body, every
  body frame within frame_max (empty, small, exactly one frame and multi-frame bodies).

The per-method C code is written by tests/c/gen_interop.py from librabbitmq's header, field by
field in wire order, with the types checked against the spec's.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "c"))
import cbuild
import gen_interop

from amqgen.amqp0.lower import load_spec

pytestmark = pytest.mark.peers  # its tier, not its folder's (tests/conftest.py)

ROUNDS = 300
SEED = "20261123"
#: every method of librabbitmq 0.11's amqp_framing.h: the extended spec's 60 + the extras overlay's 4
LIBRABBITMQ_METHODS = 64
OVERLAYS = (cbuild.LIBRABBITMQ_EXTRAS,)


@pytest.fixture(scope="module")
def interop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("c-interop")
    flags = cbuild.librabbitmq()
    tree = cbuild.render(root / "gen", overlays=OVERLAYS)
    source, count = gen_interop.generate(cbuild.SPEC_091_EXT, cbuild.PREFIX, OVERLAYS)
    assert count == LIBRABBITMQ_METHODS
    (root / "interop_methods.c").write_text(source, encoding="utf-8")
    return cbuild.compile_program(
        tree, [cbuild.C_DIR / "interop_main.c"], root / "interop",
        flags=(*cbuild.WARN, "-Wno-unused-function", "-O1", "-g", *cbuild.SANITIZE),
        libs=tuple(flags), include=(root, cbuild.C_DIR))


def test_every_method_and_property_both_ways_with_librabbitmq(interop: Path) -> None:
    proc = subprocess.run([str(interop), SEED, str(ROUNDS)], capture_output=True, text=True, timeout=300,
                          check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "librabbitmq 0.11" in proc.stdout
    lib_methods = len(gen_interop.lib_method_ids(gen_interop.HEADER.read_text()))
    spec_methods = len(load_spec(cbuild.SPEC_091_EXT, overlays=OVERLAYS).methods)
    assert lib_methods == spec_methods == LIBRABBITMQ_METHODS  # every method of both sides is covered
    assert f"methods: {LIBRABBITMQ_METHODS} methods x {ROUNDS} rounds" in proc.stdout
    assert f"properties: basic, 14 properties x {ROUNDS} rounds" in proc.stdout
    frames = re.search(r"frames: (\d+) from librabbitmq read by ours, (\d+) from ours read by librabbitmq", proc.stdout)
    # every round one message each way: method + header + (0, 1, 1 or 3+) body frames at frame_max 65536
    # from librabbitmq, body frames of at most 4096 octets from ours
    assert frames and int(frames.group(1)) >= ROUNDS * 3 and int(frames.group(2)) >= ROUNDS * 15, proc.stdout
    summary = re.search(r"(\d+) checks, (\d+) failed", proc.stdout)
    assert summary and summary.group(2) == "0", out[-6000:]
    # at least 10 checks per method and round: a silently empty loop cannot pass
    assert int(summary.group(1)) > LIBRABBITMQ_METHODS * ROUNDS * 10, proc.stdout


def test_a_wrong_value_is_caught(interop: Path) -> None:
    """The checks are not vacuous: with "mutate", the last octet of every encoding is flipped before
    the other library decodes it (so the last field's value differs or the input is malformed), our
    side also gets long strings and 'x' table values that differ from librabbitmq's in one octet; the
    same program must then report at least three failures per method with fields and round (ours
    decoding librabbitmq's octets, per method and through dispatch, and librabbitmq decoding ours)."""
    rounds = 3
    with_fields = sum(1 for m in load_spec(cbuild.SPEC_091_EXT, overlays=OVERLAYS).methods if m.fields)
    proc = subprocess.run([str(interop), SEED, str(rounds), "mutate"], capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 1, (proc.stdout + proc.stderr)[-3000:]
    summary = re.search(r"(\d+) checks, (\d+) failed", proc.stdout)
    assert summary and int(summary.group(2)) >= rounds * with_fields * 3, proc.stdout
