"""The recovery soak's bounded slice (issue 42; scripts/soak-recovery runs it long, with the peers beside ours):
on each generated 0-9-1 client, a producer and a consumer with recovery on, 3,000 confirmed messages at 200 a
second (15 s: each client's seeded schedule then has at least two cuts and a forced close in the slice; at 10 s a
client that keeps the pace met only one fault with seed 8) through a fault proxy that cuts their connections
every 3-7 s (RST and black-hole in turn) while rabbitmqctl closes them every 10 s. Every client at once, each with
its own proxy. No confirmed message lost, every
duplicate explained (unconfirmed at a cut, or marked redelivered), never two consumers on the queue, every fault
followed by a recovery."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType

import pytest
from faults.drivers import Driver
from faults.harness import start_drivers
from faults.matrix import CLIENTS, runs
from faults.soak import soak

pytestmark = [pytest.mark.broker]

#: the clients with recovery (matrix.NOT_YET holds the others back)
SELECTED = tuple(c for c in os.environ.get("AMQGEN_FAULT_CLIENTS", ",".join(CLIENTS)).split(",")
                 if c and runs("soak", c))


@pytest.fixture(scope="module")
def drivers(amqp091: ModuleType, request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Driver]]:
    started = start_drivers(SELECTED, amqp091, request, tmp_path_factory)
    yield started
    for d in started.values():
        d.close()


def test_the_soak_slice_loses_nothing_confirmed(drivers: dict[str, Driver]) -> None:
    with ThreadPoolExecutor(len(drivers)) as pool:
        reports = dict(zip(drivers, pool.map(
            lambda c: soak(c, drivers[c], count=3000, rate=200.0, heartbeat=2, seed=7 + CLIENTS.index(c)),
            drivers)))
    problems = [f"{c}: {p}" for c, r in reports.items() for p in r.problems()]
    for c, r in reports.items():
        if len(r.faults) < 2 or not r.recovery:
            problems.append(f"{c}: {len(r.faults)} faults and {len(r.recovery)} recoveries: the slice tested nothing")
        if r.confirmed != r.count:
            problems.append(f"{c}: {r.confirmed} of {r.count} confirmed")
    assert not problems, "\n".join(problems + [str(r.row()) for r in reports.values()])
