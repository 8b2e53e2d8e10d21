"""Regression inputs for the generated C decoders (tests/data/c-fuzz/TARGET/*), replayed under ASan and
UBSan (-fno-sanitize-recover=all: any report fails the test):

- through tests/c/replay.c, which prints each input's status; tests/data/c-fuzz/expected.tsv says
  what each must give (hand-built inputs modelled on librabbitmq's fuzz-found bugs: the shift by 32
  in property flags, length underflow, uint16 promotion; nesting past the depth limit; lengths
  that wrap; invalid UTF-8), and every file there must be listed;
- through the libFuzzer targets the C pack renders with --option fuzz=1 (built as scripts/fuzz-c
  builds them), each input run once: crash reproducers from scripts/fuzz-c runs go in the same
  folders;
- tests/data/c-fuzz/diff/ holds inputs of the differential target (tests/c/fuzz_diff.c, ours against
  librabbitmq) that once stopped it, replayed through it before its bounded run;
- tests/c/fuzz_engine.c, the engine's receive path past the handshake (client role), seeded with the
  recorded conversations of tests/engine_diff/streams.py: tests/data/c-fuzz/engine/ holds inputs that
  once stopped it, replayed before its bounded run; tests/c/fuzz_engine_server.c, the same in the server role
  (seeded with the server streams), whose inputs there are named server-*;
- tests/c/fuzz_engine_contract.c (issue 41), the engine through its header's contract alone: every chunk freed
  when the header says the engine holds nothing of it, the message storage grown and moved, from a fresh engine
  in either role; tests/data/c-fuzz/contract/ holds what once stopped it (protocol-header-then-close: a server's
  protocol header and more octets in one chunk, freed after EV_NONE, then engine_close: the next call read the
  freed chunk, ASan heap-use-after-free in reader_next).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "c"))
import cbuild
import engine_seeds

pytestmark = pytest.mark.peers  # its tier, not its folder's (tests/conftest.py)

DATA = Path(__file__).resolve().parents[2] / "data" / "c-fuzz"
#: replay.c targets -> the libFuzzer target that takes the same input (header payloads go through method
#: dispatch's neighbour, the frame target, only inside frames, so they are replayed by replay.c alone)
FUZZ_TARGET = {"frame": None, "method": "method", "table": "table", "basic_properties": "basic_properties",
               "header": None}


def expected() -> dict[tuple[str, str], str]:
    out = {}
    for line in (DATA / "expected.tsv").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        target, name, status, _why = line.split("\t")
        out[(target, name)] = status
    return out


def inputs() -> dict[str, list[Path]]:
    """Per decoder target, its inputs (the differential target's folder is replayed on its own)."""
    return {d.name: sorted(p for p in d.iterdir() if p.is_file()) for d in sorted(DATA.iterdir())
            if d.is_dir() and d.name not in ("diff", "engine", "contract")}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The C pack with its fuzz targets, rendered once for the module (cbuild keeps its library objects)."""
    return cbuild.render(tmp_path_factory.mktemp("c-fuzz-gen") / "gen", options=("fuzz=1",))


@pytest.fixture(scope="module")
def built(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    root = tmp_path_factory.mktemp("c-fuzz")
    replay = cbuild.compile_program(tree, [cbuild.C_DIR / "replay.c"], root / "replay",
                                    flags=(*cbuild.WARN, "-O1", "-g", *cbuild.SANITIZE))
    have = cbuild.fuzz_targets(tree)
    wanted = sorted({t for t in FUZZ_TARGET.values() if t} | {"frame"})
    missing = [t for t in wanted if t not in have]
    assert not missing, f"the rendered fuzz file lacks targets {missing} (has {have})"
    fuzzers = {t: cbuild.build_fuzz_target(tree, t, root / f"fuzz_{t}") for t in wanted}
    return replay, fuzzers


def test_every_input_is_listed_with_its_status() -> None:
    files = {(t, p.name) for t, ps in inputs().items() for p in ps}
    assert files == set(expected()), f"unlisted {files - set(expected())}, missing {set(expected()) - files}"
    assert set(inputs()) <= set(FUZZ_TARGET)


def test_replay_gives_the_expected_status(built: tuple[Path, dict[str, Path]]) -> None:
    replay, _ = built
    want = expected()
    got = {}
    for target, files in inputs().items():
        proc = subprocess.run([str(replay), target, *map(str, files)], capture_output=True, text=True, timeout=120,
                              check=False)
        assert proc.returncode == 0, f"{target}: {proc.stdout}{proc.stderr}"[-4000:]
        for line in proc.stdout.splitlines():
            name, status = line.split(" ")
            got[(target, name)] = status
    wrong = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
    assert not wrong, f"(target, file): (got, expected): {wrong}"


def test_fuzz_targets_survive_every_input(built: tuple[Path, dict[str, Path]]) -> None:
    _, fuzzers = built
    ran = 0
    for target, files in inputs().items():
        exe = fuzzers.get(FUZZ_TARGET[target] or "")
        if exe is None:
            continue
        proc = subprocess.run([str(exe), *map(str, files)], capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, f"{target}: {proc.stderr}"[-4000:]
        ran += len(files)
    # frames go through the frame target with its two control octets (frame_max 4096, no split) in front
    frame_dir = DATA / "frame"
    tmp = Path(fuzzers["frame"]).parent / "frame-inputs"
    tmp.mkdir(exist_ok=True)
    for p in sorted(frame_dir.iterdir()):
        (tmp / p.name).write_bytes(b"\x01\x00" + p.read_bytes())
    proc = subprocess.run([str(fuzzers["frame"]), *map(str, sorted(tmp.iterdir()))], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    ran += len(list(tmp.iterdir()))
    assert ran >= 20


DIFF_RUNS = 100_000


def test_differential_fuzzing_against_librabbitmq_bounded(tree: Path, tmp_path: Path) -> None:
    """A bounded run of scripts/fuzz-c's "diff" target (tests/c/fuzz_diff.c), seeded from the corpus:
    every method payload, basic-properties input, field table or stream of frames our decoders accept
    must decode with librabbitmq 0.11 to equal values (frames through its amqp_handle_input) (longer runs: scripts/fuzz-c)."""
    exe = cbuild.build_diff_target(tree, tmp_path / "fuzz_diff", tmp_path)
    corpus = tmp_path / "corpus"
    seeds = cbuild.write_diff_seeds(tree, corpus, tmp_path)
    assert seeds > 100
    kept = sorted((DATA / "diff").iterdir())
    proc = subprocess.run([str(exe), *map(str, kept)], capture_output=True, text=True, timeout=120, check=False)
    assert kept and proc.returncode == 0, proc.stderr[-4000:]
    proc = subprocess.run([str(exe), f"-runs={DIFF_RUNS}", "-seed=20261123", "-max_len=4096",
                           f"-artifact_prefix={tmp_path}/", "-print_final_stats=1", str(corpus)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"stat::number_of_executed_units: {DIFF_RUNS}" in proc.stderr, proc.stderr[-2000:]


ENGINE_RUNS = 30_000


@pytest.mark.slow  # the sanitized library's build and ~5 s of fuzzing
def test_engine_fuzzing_past_the_handshake_bounded(tree: Path, amqp091: ModuleType, tmp_path: Path) -> None:
    """A bounded run of tests/c/fuzz_engine.c (issue 33): the C engine's receive path in the client role, past
    the handshake, seeded with the recorded conversations (their steps after the handshake: the server's octets
    and the caller's sends at their places), under ASan and UBSan; the harness checks that no event follows the
    end of the stream, every frame out is whole and within frame_max, and nothing is left unreported at the end
    (longer runs: scripts/fuzz-c --targets engine)."""
    exe = cbuild.build_engine_target(tree, tmp_path / "fuzz_engine")
    corpus = tmp_path / "corpus"
    assert engine_seeds.write(importlib.import_module(f"{amqp091.__name__}.engine"), corpus) == 5
    kept = sorted(p for p in (DATA / "engine").glob("*") if p.is_file() and not p.name.startswith("server-"))
    # the seeds as they are (each must pass: a recorded conversation is legal), then what once stopped it
    proc = subprocess.run([str(exe), *map(str, sorted(corpus.iterdir())), *map(str, kept)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"Executed {corpus / 'full_session'}" in proc.stderr, proc.stderr[-2000:]
    proc = subprocess.run([str(exe), f"-runs={ENGINE_RUNS}", "-seed=20261127", f"-artifact_prefix={tmp_path}/",
                           "-print_final_stats=1", str(corpus)], capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"stat::number_of_executed_units: {ENGINE_RUNS}" in proc.stderr, proc.stderr[-2000:]


@pytest.mark.slow  # the sanitized library's build and ~5 s of fuzzing
def test_engine_server_role_fuzzing_past_the_handshake_bounded(tree: Path, amqp091: ModuleType,
                                                               tmp_path: Path) -> None:
    """The same in the server role (issue 33): tests/c/fuzz_engine_server.c does the server's handshake (the
    client's header, start-ok, tune-ok, open fed as octets), then steps through the client's octets and the
    server caller's sends, deliveries, ticks, close and end of stream, seeded with the server streams that get
    past the handshake; tests/data/c-fuzz/engine/server-* are replayed first."""
    exe = cbuild.build_engine_server_target(tree, tmp_path / "fuzz_engine_server")
    corpus = tmp_path / "corpus"
    assert engine_seeds.write_server(importlib.import_module(f"{amqp091.__name__}.engine"), corpus) == 6
    kept = sorted((DATA / "engine").glob("server-*"))
    proc = subprocess.run([str(exe), *map(str, sorted(corpus.iterdir())), *map(str, kept)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"Executed {corpus / 'server_session'}" in proc.stderr, proc.stderr[-2000:]
    proc = subprocess.run([str(exe), f"-runs={ENGINE_RUNS}", "-seed=20261127", f"-artifact_prefix={tmp_path}/",
                           "-print_final_stats=1", str(corpus)], capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"stat::number_of_executed_units: {ENGINE_RUNS}" in proc.stderr, proc.stderr[-2000:]


@pytest.mark.slow  # the sanitized library's build and ~5 s of fuzzing
def test_engine_contract_fuzzing_bounded(tree: Path, amqp091: ModuleType, tmp_path: Path) -> None:
    """tests/c/fuzz_engine_contract.c (issue 41): the engine used as its header says a caller may (chunks freed
    after EV_NONE, storage grown by realloc and moved to fresh storage with the old freed), from a fresh engine in
    either role, seeded with every recorded conversation, handshakes included; tests/data/c-fuzz/contract/* (the
    use-after-free's reproducer) first, then a bounded run (longer runs: scripts/fuzz-c --targets contract)."""
    exe = cbuild.build_engine_contract_target(tree, tmp_path / "fuzz_engine_contract")
    corpus = tmp_path / "corpus"
    n = engine_seeds.write_contract(importlib.import_module(f"{amqp091.__name__}.engine"), corpus)
    assert n == 13  # streams.SCENARIOS and SERVER_SCENARIOS
    kept = sorted((DATA / "contract").iterdir())
    proc = subprocess.run([str(exe), *map(str, sorted(corpus.iterdir())), *map(str, kept)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert kept and proc.returncode == 0, proc.stderr[-4000:]
    assert f"Executed {DATA / 'contract' / 'protocol-header-then-close'}" in proc.stderr, proc.stderr[-2000:]
    proc = subprocess.run([str(exe), f"-runs={ENGINE_RUNS}", "-seed=20261128", "-max_len=32768",
                           f"-artifact_prefix={tmp_path}/", "-print_final_stats=1", str(corpus)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"stat::number_of_executed_units: {ENGINE_RUNS}" in proc.stderr, proc.stderr[-2000:]
