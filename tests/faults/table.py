"""The docs table of the fault matrix: what each generated client does on each fault, rendered from
tests/faults/matrix.py (the rows the suite runs, and each client's spelling of each outcome), so the page cannot
drift from what is tested. ``python tests/faults/table.py FILE`` rewrites the table between its markers in FILE;
tests/model/test_docs.py checks the page holds what this renders."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from faults.matrix import CLIENTS, ROWS, SPELLING, Row, runs

BEGIN, END = "<!-- fault-matrix: begin (tests/faults/table.py renders it) -->", "<!-- fault-matrix: end -->"
NAMES = {"python": "Python blocking", "aio": "Python asyncio", "c": "C", "java": "Java"}


def _outcome(row: Row) -> str:
    e = row.expect
    text = e["kind"].replace("_", " ")
    if "code" in e:
        text += f" {e['code']}"
    extra = [f"{k} {v}" for k, v in e.items() if k not in ("kind", "code", "fds", "usable", "body_ok", "close_ok")]
    if e.get("usable") == 1:
        extra.append("the connection goes on")
    if e.get("fds") == 0:
        extra.append("no socket left open")
    if row.events:
        extra.append("notified: " + ", ".join(row.events))
    return text + (f" ({'; '.join(extra)})" if extra else "")


def _cell(row: Row, client: str) -> str:
    if client not in row.clients:
        return "n/a"
    if not runs(row.id, client):
        return "not yet"
    return SPELLING.get(row.expect["kind"], {}).get(client, "yes")


def render() -> str:
    head = ["fault", "outcome (every client)", "within"] + [NAMES[c] for c in CLIENTS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in ROWS:
        within = f"{r.within:g} s" if r.within is not None else ""
        cells = [r.what, _outcome(r), within] + [f"`{_cell(r, c)}`" if _cell(r, c) not in ("n/a", "yes", "not yet")
                                                 else _cell(r, c) for c in CLIENTS]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def replace(text: str) -> str:
    """``text`` with the table between the markers rendered anew."""
    before, sep, rest = text.partition(BEGIN)
    _, sep2, after = rest.partition(END)
    assert sep and sep2, f"the page has no {BEGIN} ... {END} markers"
    return f"{before}{BEGIN}\n{render()}{END}{after}"


if __name__ == "__main__":
    page = Path(sys.argv[1])
    page.write_text(replace(page.read_text(encoding="utf-8")), encoding="utf-8")
