from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pytarget import SPEC_091_EXT, import_package, import_package10

_CACHE_KEY = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """One format cache (amqgen/fmtcache.py) for the session, shared by every render the tests run in this
    process and in the CLI subprocesses they start: the same spec renders in many tests, and black is most of
    a render's time. It starts empty, so the first render of each text really formats (and the user's own
    cache is neither read nor filled).

    ``AMQGEN_TEST_FMTCACHE=DIR`` (set by ``make test-fast``, the inner loop) keeps the cache in DIR from one run to
    the next instead, as mypy keeps its own: entries are keyed by the formatter, its version and style and the
    unformatted text, so a kept entry is exactly what formatting again would give. ``make test`` (CI) starts
    empty."""
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: it inherited the controller's AMQGEN_CACHE_DIR
        return
    kept = os.environ.get("AMQGEN_TEST_FMTCACHE")
    path = kept or tempfile.mkdtemp(prefix="amqgen-test-fmtcache-")
    os.environ["AMQGEN_CACHE_DIR"] = path
    if not kept:
        config.stash[_CACHE_KEY] = path


def pytest_unconfigure(config: pytest.Config) -> None:
    if _CACHE_KEY in config.stash:
        shutil.rmtree(config.stash[_CACHE_KEY], ignore_errors=True)


@pytest.fixture(scope="session")
def gen_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("generated")


@pytest.fixture(scope="session")
def amqp091(gen_root: Path) -> ModuleType:
    """The Python target rendered from RabbitMQ's 0-9-1 extended spec, as package `amqp091x`."""
    return import_package(SPEC_091_EXT, "amqp091x", gen_root)


@pytest.fixture(scope="session")
def amqp10(gen_root: Path) -> ModuleType:
    """The AMQP 1.0 Python target rendered from the OASIS XML (Debian's amqp-specs), as package `amqp10gen`."""
    return import_package10("amqp10gen", gen_root)


# -- test tiers ------------------------------------------------------------------------------------------------
# Each test module is in one tier, by what it needs (markers declared in pyproject.toml): its folder's, below, or
# its own where it differs, as a mark in the module (`pytestmark = pytest.mark.peers`). A module in no folder
# below stops the collection (no test is left out of a tier). A test marked `broker` in a `model`/`targets` module
# is in `peers` too. `make test-fast` runs `(model or targets) and not peers and not slow`.
FOLDER_TIERS: dict[str, str] = {
    "model": "model",  # the model, the plans, the CLI on specs; no generated code is run
    "amqp0/engine": "targets",  # rendered Python/C/Java code compiled and run, no broker and no peer library
    "amqp0/c": "targets",
    "amqp0/java": "targets",
    "amqp0/python": "peers",  # RabbitMQ, pika / pamqp / py-amqp, Qpid Proton, the Java client, librabbitmq
    "amqp0/clients": "peers",
    "amqp10": "peers",
    "traffic": "traffic",  # Spark, tshark, captures
}
TIER_NAMES = ("model", "targets", "peers", "traffic")
HERE = Path(__file__).resolve().parent


def tier_of(item: pytest.Item) -> str:
    """The module's own tier mark, else its folder's."""
    own = [m.name for m in item.iter_markers() if m.name in TIER_NAMES]
    if own:
        return own[0]
    return FOLDER_TIERS[item.path.resolve().parent.relative_to(HERE).as_posix()]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    stale = sorted(f for f in FOLDER_TIERS if not any((HERE / f).glob("test_*.py")))
    unmapped = sorted({item.path.resolve().parent.relative_to(HERE).as_posix() for item in items}
                      - set(FOLDER_TIERS))
    if stale or unmapped:
        raise pytest.UsageError(
            f"tests/conftest.py FOLDER_TIERS: test folders in no tier: {', '.join(unmapped) or '-'}; "
            f"entries for folders without tests: {', '.join(stale) or '-'}"
        )
    tiers = {}
    for item in items:
        tier = tiers[item.path.stem] = tier_of(item)
        item.add_marker(getattr(pytest.mark, tier))
        if tier in ("model", "targets") and item.get_closest_marker("broker") is not None:
            item.add_marker(pytest.mark.peers)
        if HEAVY_FIXTURES & set(getattr(item, "fixturenames", ())) or item.path.stem in HEAVY_MODULES:
            item.add_marker(pytest.mark.slow)
    _check_groups(items, tiers)


# -- two workers -----------------------------------------------------------------------------------------------
# `make test` runs the suite in two pytest-xdist workers (`-n 2 --dist loadscope`); the scheduler below deals whole
# groups to them, and a worker runs a group's tests in order. A module is never split (its module fixtures are
# built once). Every module with a test that talks to the broker (marked `broker`) and every traffic module are
# one group, so no two of them use the broker at once: the queue and exchange names of different modules are not
# kept apart, and the traffic tests capture every connection to the broker's port (and start Spark). The modules
# on every spec's Java build (java_build) are another; any other module is a group of its own. The scheduler sees
# test ids only, so the two tables are written out here and each collection checks them against the markers and
# fixtures (as FOLDER_TIERS: a module missing from them stops the collection).
BROKER_GROUP = {
    "test_amqp10_clients", "test_amqp10_engine", "test_bench_traffic", "test_c_broker", "test_c_engine", "test_fault_matrix", "test_fault_matrix10",
    "test_java_broker",
    "test_java_engine", "test_overlay", "test_python10_broker", "test_python_aio_faults", "test_python_broker", "test_python_client", "test_python_recovery",
    "test_python_engine", "test_readme", "test_recovery_soak", "test_traffic", "test_traffic_index", "test_traffic_output",
    "test_traffic_sequence", "test_traffic_spark", "test_traffic10",
}
JAVA_GROUP = {
    "test_differential", "test_engine_diff", "test_java_checks", "test_java_hostile", "test_java_interop",
    "test_java_server", "test_java_target",
}


def group_of(module: str) -> str:
    return "broker" if module in BROKER_GROUP else "java" if module in JAVA_GROUP else module


def _check_groups(items: list[pytest.Item], tiers: dict[str, str]) -> None:
    broker: set[str] = set()
    java: set[str] = set()
    for item in items:
        module = item.path.stem
        if item.get_closest_marker("broker") is not None or tiers[module] == "traffic":
            broker.add(module)
        elif "java_build" in getattr(item, "fixturenames", ()):
            java.add(module)
    java -= broker
    collected = {item.path.stem for item in items}
    wrong = sorted((broker ^ (BROKER_GROUP & collected)) | (java ^ (JAVA_GROUP & collected)))
    if wrong:
        raise pytest.UsageError(f"tests/conftest.py BROKER_GROUP / JAVA_GROUP: these modules are in the wrong "
                                f"one (or missing): {', '.join(wrong)}; a module with a `broker` test or in the "
                                "traffic tier is in BROKER_GROUP, else one on java_build in JAVA_GROUP")


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # optional: a run without pytest-xdist still collects
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadscope` deals the groups above (whole) to the workers, as they ask for more."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(Path(nodeid.split("::", 1)[0]).stem)

    return ByGroup(config, log)


#: what compiles every rendering (the C matrix: 32 builds, ~135 s; every spec's Java package, ~60 s) or builds
#: sanitized drivers per module: minutes, not seconds, so `slow` (`make test` runs them, `make test-fast` not)
HEAVY_FIXTURES = {"c_build", "java_build", "classify_c"}
HEAVY_MODULES = {"test_c_checks", "test_engine_diff", "test_c_ownership"}
