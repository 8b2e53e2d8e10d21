"""The fault matrix (tests/faults/matrix.py) run against every generated 0-9-1 client: Python blocking, Python
asyncio, C and Java, each through its driver (tests/faults/protocol.md).

Per row, the clients it applies to run at the same time, each against a fault proxy of its own (or the broker, a
closed port, a scripted server), and each must give the row's outcome within its bound; the outcomes are then
compared across the clients field by field (a difference between two clients fails the row even where both
match what the row asks, as the engine differential compares logs).

``AMQGEN_FAULT_CLIENTS=python,c`` runs a subset while a client is being worked on (the suite runs all four).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import pytest
from faults.drivers import Driver, Outcome
from faults.harness import Run, judge, start_drivers
from faults.matrix import CLIENTS, ROWS, Row, runs
from pytarget import SPEC_091_EXT, import_package

pytestmark = [pytest.mark.broker]

SELECTED = tuple(c for c in os.environ.get("AMQGEN_FAULT_CLIENTS", ",".join(CLIENTS)).split(",") if c)


@pytest.fixture(scope="module")
def amqp091_faults(gen_root: Path) -> ModuleType:
    """The Python package the Python drivers run: RabbitMQ's 0-9-1 extended spec with the bundled overlay
    rabbitmq-blocked (connection.blocked and unblocked, for the memory-alarm row), as the C and Java drivers'
    clients are rendered."""
    return import_package(SPEC_091_EXT, "amqp091f", gen_root, overlays=("rabbitmq-blocked",))


@pytest.fixture(scope="module")
def drivers(amqp091_faults: ModuleType, request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Driver]]:
    """One driver process per selected client for the whole module."""
    started = start_drivers(tuple(c for c in SELECTED if any(runs(r.id, c) for r in RUN)), amqp091_faults, request,
                            tmp_path_factory)
    yield started
    for d in started.values():
        d.close()


@pytest.fixture(scope="module")
def engine(amqp091_faults: ModuleType) -> ModuleType:
    import importlib

    return importlib.import_module(f"{amqp091_faults.__name__}.engine")


#: the outcomes of the run, row id -> client -> outcome (compared across clients, rendered into the docs table)
RECORDED: dict[str, dict[str, Outcome]] = {}


#: the rows some client passes (matrix.NOT_YET holds the others back, and the docs table says so)
RUN = [r for r in ROWS if any(runs(r.id, c) for c in CLIENTS)]


@pytest.mark.parametrize("row", RUN, ids=[r.id for r in RUN])
def test_row(row: Row, drivers: dict[str, Driver], engine: ModuleType) -> None:
    clients = [c for c in SELECTED if runs(row.id, c)]
    if not clients and SELECTED != CLIENTS:
        return  # AMQGEN_FAULT_CLIENTS chose none of this row's clients (a developer's run, never the suite's)
    assert clients, f"no client runs {row.id}"
    with ThreadPoolExecutor(len(clients)) as pool:
        futures = {c: pool.submit(Run(row, c, engine).execute, drivers[c]) for c in clients}
        results = {c: f.result() for c, f in futures.items()}
    RECORDED[row.id] = {c: r[0] for c, r in results.items()}
    failures = [f for c, (o, checks) in results.items() for f in judge(row, c, o, checks)]
    compared = sorted(set(row.expect) | {"kind", "code"})
    shapes = {c: tuple((k, o.as_dict().get(k)) for k in compared) for c, (o, _) in results.items()}
    if len(set(shapes.values())) > 1:
        failures.append(f"the clients differ: {shapes}")
    assert not failures, "\n".join(failures + [f"--- {c} log:\n{o.log}" for c, (o, _) in results.items()
                                                if o.log and failures])
