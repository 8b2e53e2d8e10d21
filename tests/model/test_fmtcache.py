"""The format cache (amqgen/fmtcache.py): a hit gives the formatter's own bytes, a damaged entry is formatted
anew and repaired, a folder that cannot be written changes nothing but speed, and `off` turns it off.

A two-file pack (one black output, one clang-format output) keeps each render well under a second; the
expected texts are written by hand from black's and clang-format's documented styles."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from pytarget import ROOT

RAW_PY = "def f( a,b ):\n  return {'k':a+b}\n"
RAW_C = "int f(int a,int b){return a+b;}\n"
WANT = {"f.py": 'def f(a, b):\n    return {"k": a + b}\n', "f.c": "int f(int a, int b) { return a + b; }\n"}


def make_pack(root: Path) -> Path:
    d = root / "packs" / "fmt"
    d.mkdir(parents=True)
    (d / "pack.toml").write_text(
        'name = "fmt"\nlanguage = "python"\nformatter = "black"\n'
        '[[outputs]]\ntemplate = "f.py.j2"\npath = "f.py"\n'
        '[[outputs]]\ntemplate = "f.c.j2"\npath = "f.c"\nformatter = "clang-format"\n')
    (d / "f.py.j2").write_text(RAW_PY)
    (d / "f.c.j2").write_text(RAW_C)
    return d.parent


def render(packs: Path, out: Path, cache: str) -> dict[str, str]:
    env = {**os.environ, "AMQGEN_CACHE_DIR": cache}
    proc = subprocess.run([sys.executable, "-m", "amqgen", "render", "--lang", "fmt", "--templates", str(packs),
                           "--out", str(out)], capture_output=True, text=True, cwd=ROOT, env=env, check=False)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return {name: (out / name).read_text() for name in WANT}


def entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*") if p.is_file() and not p.name.startswith("."))


def test_hits_misses_damage_and_an_unwritable_folder(tmp_path: Path) -> None:
    packs = make_pack(tmp_path)
    cache = tmp_path / "cache"
    assert render(packs, tmp_path / "off", "off") == WANT
    assert not cache.exists()

    assert render(packs, tmp_path / "cold", str(cache)) == WANT
    stored = entries(cache)
    assert len(stored) == 2, stored
    assert sorted(p.read_bytes().partition(b"\n")[2].decode() for p in stored) == sorted(WANT.values())

    # a hit is served from the cache, not formatted again: entries with a valid digest and other content show
    for p in stored:
        body = p.read_bytes().partition(b"\n")[2] + b"# from the cache\n"
        p.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    served = render(packs, tmp_path / "warm", str(cache))
    assert served == {k: v + "# from the cache\n" for k, v in WANT.items()}

    # a damaged entry (its digest no longer matches) is formatted anew and replaced
    for p in stored:
        p.write_bytes(p.read_bytes()[:-3])
    assert render(packs, tmp_path / "damaged", str(cache)) == WANT
    for p in stored:
        digest, _, body = p.read_bytes().partition(b"\n")
        assert hashlib.sha256(body).hexdigest().encode() == digest and body.decode() in WANT.values()

    # a cache folder that cannot be made (under a regular file): the render is the same, only slower
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    assert render(packs, tmp_path / "unwritable", str(blocker / "cache")) == WANT


def test_the_key_holds_formatter_version_style_and_text() -> None:
    from amqgen import fmtcache

    base = fmtcache.key("black", "26.1", "line-length=100", RAW_PY)
    others = {fmtcache.key("clang-format", "26.1", "line-length=100", RAW_PY),
              fmtcache.key("black", "26.2", "line-length=100", RAW_PY),
              fmtcache.key("black", "26.1", "line-length=99", RAW_PY),
              fmtcache.key("black", "26.1", "line-length=100", RAW_PY + " "),
              # the parts are separated: moving text from one part into the next is another key
              fmtcache.key("black", "26.1line-length=100", "", RAW_PY)}
    assert base not in others and len(others) == 5
