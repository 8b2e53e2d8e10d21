"""Builds the C client's fault driver (tests/c/fault_driver.c) against a rendering of the C pack: RabbitMQ's 0-9-1
extended spec with the bundled overlay rabbitmq-blocked (connection.blocked and unblocked, which the extended spec
lacks: the memory-alarm row needs them, and with them the client advertises the connection.blocked capability), as
the other clients of the matrix are rendered,
built as tests/amqp0/c/test_c_engine.py builds its programs (cbuild: warnings as errors, ASan and UBSan)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "c"))
import cbuild  # noqa: E402

EXTRAS = cbuild.ROOT / "spec" / "overlays" / "rabbitmq-blocked.xml"


def build(tmp: Path) -> Path:
    tree = cbuild.render(tmp / "gen", overlays=(EXTRAS,))
    return cbuild.compile_program(
        tree, [tree / "client" / f"{cbuild.PREFIX}_client.c", cbuild.C_DIR / "fault_driver.c"], tmp / "fault_driver",
        flags=(*cbuild.WARN, "-O1", "-g", *cbuild.SANITIZE), include=(tree / "client",))


def c_driver_command(tmp: Path) -> tuple[list[str], dict[str, str] | None]:
    return [str(build(tmp))], None
