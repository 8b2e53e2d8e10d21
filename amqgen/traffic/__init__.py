"""The traffic pipeline: AMQP captures -> Parquet, decoded with the codec rendered from the spec.

One module per stage: :mod:`capture` (file formats, record index), :mod:`packets` (link/IP/TCP
layers), :mod:`index` (a part's packets gathered with numpy, per connection, without payloads),
:mod:`reassembly` (TCP streams), :mod:`framing` (frames, decoded by the generated codec),
:mod:`conformance` (spec checks and contents), :mod:`session` (the stages wired per connection),
:mod:`records` (the datasets' columns), :mod:`output` (a task's Parquet files and summary),
:mod:`job` (Spark: the only module importing pyspark), :mod:`summary` and :mod:`report` (what a
person reads). docs/traffic.md is the user's guide.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ..amqp0.model import Spec
from ..errors import AmqgenError, UsageError

POLICIES = ("rabbitmq", "portable", "spec")

#: the spec each family is decoded with when the command line and the project name none: RabbitMQ's 0-9-1 with
#: connection.blocked and unblocked (0-9-1 plus RabbitMQ's extensions, which other 0-9-1 peers simply do not send)
#: and Debian's AMQP 1.0 file set
DEFAULT_0X = "0-9-1-rabbit"
DEFAULT_0X_OVERLAYS = ("rabbitmq-blocked",)
DEFAULT_10 = "1-0"



def _requirements() -> None:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as e:
        raise UsageError(f"amqgen traffic needs PySpark and pyarrow ({e.name} is missing): "
                         "pip install 'amqgen[traffic]'") from None
    if shutil.which("java") is None and not _java_home():
        raise UsageError("amqgen traffic needs a Java runtime for Spark (JDK 17 or later): "
                         "apt-get install openjdk-17-jre-headless, or set JAVA_HOME")


def _java_home() -> bool:
    import os

    home = os.environ.get("JAVA_HOME")
    return home is not None and Path(home, "bin", "java").exists()


def traffic_start(out: Path, master: str | None, conf: dict[str, str], verbose: bool = False) -> Any:
    """Check what the run needs (PySpark, Java, a usable ``out``) and start Spark in the background, so
    that its JVM starts while the caller reads the spec; :func:`traffic_run` takes what this returns."""
    _requirements()
    _check_out(out)
    from . import job

    return job.start(master, conf, verbose)


def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / "summary.json").is_file())):
        raise UsageError(f"{out} exists and is not an amqgen traffic output directory; choose another --out")


def traffic_run(captures: list[Path], out: Path, spec: Spec, *, master: str | None, ports: tuple[int, ...],
                policy: str, bodies: bool, split_size: int, conf: dict[str, str], verbose: bool = False,
                starting: Any = None, spec10: Any = None) -> int:
    """Run the job, print the summary table; return how many inputs were skipped or damaged."""
    import click

    _requirements()
    _check_out(out)
    from . import job, summary
    from .session import Options

    options = Options(ports=frozenset(ports or (spec.port,)), policy=policy, bodies=bodies)

    def progress(line: str) -> None:
        click.echo(line, err=True)

    try:
        result = job.run(captures, out, spec, master=master, options=options, part_size=split_size, conf=conf,
                         progress=progress, verbose=verbose, starting=starting, spec10=spec10)
    except job.TrafficError as e:
        raise AmqgenError(f"amqgen traffic: {e}") from None
    except Exception as e:
        if type(e).__module__.startswith(("py4j", "pyspark")):
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise AmqgenError(f"amqgen traffic: Spark failed: {type(e).__name__}: {first}") from None
        raise
    click.echo(summary.table(result))
    return len(result["skipped"])
