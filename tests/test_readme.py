"""The README's snippets run, so the front door cannot rot: its ``sh try`` block (the render commands, then one
build-and-run line per program, each with ``# prints: ...``) runs in a temporary folder holding the README's
named blocks (```python hello.py, ```c hello.c, ...) as files. The programs talk to RabbitMQ on 127.0.0.1:5672;
what they print comes from the broker (its product name, its version), not from amqgen."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def blocks() -> list[tuple[str, str]]:
    """(info string, body) of every fenced block of README.md."""
    return [(m.group(1).strip(), m.group(2)) for m in FENCE.finditer((ROOT / "README.md").read_text(encoding="utf-8"))]


def test_readme_blocks_are_named_and_the_try_block_runs_every_program() -> None:
    found = blocks()
    files = {info.split()[1] for info, _ in found if len(info.split()) == 2 and info.split()[1] != "try"}
    assert files == {"hello.py", "hello10.py", "hello.c", "Hello.java"}, files
    (script,) = [body for info, body in found if info == "sh try"]
    for name in files:
        assert sum(name in line for line in script.splitlines() if "# prints:" in line) == 1, name


def test_readme_snippets_run_against_rabbitmq(tmp_path: Path) -> None:
    found = blocks()
    for info, body in found:
        words = info.split()
        if len(words) == 2 and words[1] != "try":
            (tmp_path / words[1]).write_text(body, encoding="utf-8")
    (script,) = [body for info, body in found if info == "sh try"]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    ran = 0
    for line in script.splitlines():
        command, _, expected = line.partition("# prints:")
        proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300, check=False)
        assert proc.returncode == 0, f"README line failed: {line}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
        if expected:
            want = [part.strip() for part in expected.split(" / ")]
            assert proc.stdout.splitlines() == want, f"{line}\n{proc.stdout}"
            ran += 1
    assert ran == 4


def test_readme_and_docs_links_resolve() -> None:
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        prose = FENCE.sub("", page.read_text(encoding="utf-8"))  # code is not links
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", prose):
            if "://" not in target:
                assert (page.parent / target).exists(), f"{page.name}: link to missing {target}"
