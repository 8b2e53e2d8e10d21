"""The driver JVM's class-data-sharing archive: a cache that makes every run after the first start faster.

Plain Python: it only names files and JVM options; the job module starts the JVM with them.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import time
from pathlib import Path
from typing import Any


class ClassArchive:
    """A class-data-sharing archive (the JDK's CDS) of the driver JVM's classes, cached per PySpark
    install and Java runtime under ``$XDG_CACHE_HOME/amqgen`` (default ``~/.cache/amqgen``).

    With it the driver JVM loads Spark's classes mapped from the archive instead of parsing them
    from the jars: a trivial local job took 9.0-9.3 s of CPU against 13.9-16.0 s without (about
    180 MB on disk). The first run has no archive; its JVM dumps one when it exits, after amqgen
    has finished, into a file of its own, and a later run adopts that file once the JVM that wrote it
    has gone, so no run ever maps a half-written archive. The JVM checks the archive against its own
    build and class path and ignores one that does not match (``-Xshare:auto``, the default)."""

    def __init__(self, directory: Path, key: str) -> None:
        self.final = directory / f"spark-{key}.jsa"
        self.pending = directory / f"spark-{key}.{os.getpid()}.jsa.pending"
        self.dumping = False

    @classmethod
    def for_this_install(cls) -> ClassArchive:
        # PySpark's version and folder, found without importing it (only the job module does)
        spec = importlib.util.find_spec("pyspark")
        if spec is None or spec.origin is None:
            raise ModuleNotFoundError("pyspark is not installed (pip install 'amqgen[traffic]')")
        version = importlib.metadata.version("pyspark")
        java = os.environ.get("JAVA_HOME") or os.path.realpath(shutil.which("java") or "java")
        key = hashlib.sha256(f"{version}\0{Path(spec.origin).parent}\0{java}".encode()).hexdigest()
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "amqgen"
        return cls(cache, key[:16])

    def options(self) -> list[str]:
        quiet = ["-Xlog:cds=off", "-Xlog:cds+dynamic=off"]  # the dump's and a mismatch's warnings
        try:
            self.final.parent.mkdir(parents=True, exist_ok=True)
            self._adopt()
        except OSError:
            return []  # no cache directory: run without an archive
        if self.final.is_file():
            return [*quiet, f"-XX:SharedArchiveFile={self.final}"]
        self.dumping = True
        return [*quiet, f"-XX:ArchiveClassesAtExit={self.pending}"]

    def executor_options(self) -> list[str]:
        """For executor JVMs: the archive when one is whole (never the option that writes one: every
        executor would dump to the same file). A JVM on another host, where the file is not, or
        whose class path does not match it, runs without it and says nothing."""
        if not self.final.is_file():
            return []
        return ["-Xlog:cds=off", "-Xlog:cds+dynamic=off", f"-XX:SharedArchiveFile={self.final}"]

    def started(self, spark: Any) -> None:
        """``spark``: the SparkSession this run started (a py4j view of its JVM is all this reads)."""
        # note which JVM writes the pending archive, so that a later run knows when it is whole
        if not self.dumping:
            return
        jvm: Any = spark.sparkContext._jvm
        args = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
        # getOrCreate may have returned a JVM started earlier, without this run's options
        if f"-XX:ArchiveClassesAtExit={self.pending}" in args:
            self.pending.with_suffix(".pid").write_text(f"{jvm.java.lang.ProcessHandle.current().pid()}\n")

    def _adopt(self) -> None:
        """Take the first pending archive whose JVM has gone as the archive; remove the others
        whose JVM has gone (two first runs at once each dump one)."""
        for pending in sorted(self.final.parent.glob(self.final.stem + ".*.jsa.pending")):
            marker = pending.with_suffix(".pid")
            try:
                pid = int(marker.read_text())
            except (OSError, ValueError):  # its JVM is starting, or its run failed before it was noted
                if time.time() - pending.stat().st_mtime > 3600:
                    pending.unlink(missing_ok=True)
                continue
            if _alive(pid):
                continue
            if not self.final.is_file() and pending.stat().st_size > 0:
                os.replace(pending, self.final)
            else:
                pending.unlink(missing_ok=True)
            marker.unlink(missing_ok=True)
        # a JVM that was killed before it wrote its archive leaves its marker alone
        for marker in self.final.parent.glob(self.final.stem + ".*.jsa.pid"):
            if not marker.with_suffix(".pending").exists():
                try:
                    pid = int(marker.read_text())
                except (OSError, ValueError):
                    continue
                if not _alive(pid):
                    marker.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
