"""A content-addressed cache of formatted outputs, so that rendering an unchanged spec again is fast.

Formatting is most of a render's time (black takes ~15 s on the Python pack's 700 KB; the templates take
under a second), and a build step renders the same text again and again. An entry is keyed by the
formatter, its version and style, and the unformatted text, so a hit gives exactly the bytes the formatter
would: output stays byte-identical with or without the cache. Each entry carries the SHA-256 of its
content and is ignored when that does not match (a truncated or edited file); entries are written
atomically, so concurrent renders share the folder safely.

Where: ``$AMQGEN_CACHE_DIR``, else ``$XDG_CACHE_HOME/amqgen/format``, else ``~/.cache/amqgen/format``.
``AMQGEN_CACHE_DIR=off`` turns it off. A folder that cannot be written is not an error: the render formats
as if there were no cache. Entries not used for 30 days are removed by the render that notices them.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from pathlib import Path

_MAX_AGE = 30 * 24 * 3600
_PRUNED: set[Path] = set()  # folders this process pruned already: once per run is enough


def folder() -> Path | None:
    """The cache folder, or None when the cache is off."""
    env = os.environ.get("AMQGEN_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in ("", "off", "0", "no") else Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "amqgen" / "format"


def key(formatter: str, version: str, style: str, text: str) -> str:
    h = hashlib.sha256()
    for part in (formatter, version, style):
        h.update(part.encode("utf-8") + b"\0")
    h.update(text.encode("utf-8"))
    return h.hexdigest()


def get(k: str) -> str | None:
    root = folder()
    if root is None:
        return None
    path = root / k[:2] / k
    try:
        data = path.read_bytes()
    except OSError:
        return None
    digest, _, body = data.partition(b"\n")
    if hashlib.sha256(body).hexdigest().encode() != digest:
        return None  # damaged: the caller formats anew and put() replaces it
    try:
        os.utime(path)  # recently used: keep it from pruning
    except OSError:
        pass
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


def put(k: str, formatted: str) -> None:
    root = folder()
    if root is None:
        return
    body = formatted.encode("utf-8")
    sub = root / k[:2]
    try:
        sub.mkdir(parents=True, exist_ok=True)
        _prune(root)
        fd, tmp = tempfile.mkstemp(dir=sub, prefix=f".{k}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
            os.replace(tmp, sub / k)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return  # a read-only or full disk: formatting still happened, only the saving is lost


def _prune(root: Path) -> None:
    if root in _PRUNED:
        return
    _PRUNED.add(root)
    cutoff = time.time() - _MAX_AGE
    for sub in root.iterdir():
        if not sub.is_dir():
            continue
        for entry in sub.iterdir():
            try:
                if entry.stat().st_mtime < cutoff:
                    entry.unlink()
            except OSError:
                pass
