"""The docs table of the AMQP 1.0 fault matrix: what the generated 1.0 clients do on each fault, rendered from
tests/faults/matrix10.py (the rows the suite runs, and each client's spelling of each outcome), as table.py renders
the 0-9-1 one. ``python tests/faults/table10.py docs/amqp10.md`` rewrites the table between its markers;
tests/model/test_docs.py checks the page holds what this renders."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from faults.matrix import Row
from faults.matrix10 import CLIENTS10, ROWS10, SPELLING10

BEGIN, END = "<!-- fault-matrix10: begin (tests/faults/table10.py renders it) -->", "<!-- fault-matrix10: end -->"
NAMES = {"python": "Python blocking", "aio": "Python asyncio"}


def _outcome(row: Row) -> str:
    e = row.expect
    text = e["kind"].replace("_", " ")
    if "condition" in e:
        text += f" {e['condition']}"
    extra = [f"{k} {v}" for k, v in e.items() if k not in ("kind", "condition", "fds", "usable", "body_ok")]
    if e.get("usable") == 1:
        extra.append("the connection goes on")
    if e.get("fds") == 0:
        extra.append("no socket left open")
    return text + (f" ({'; '.join(extra)})" if extra else "")


def _cell(row: Row, client: str) -> str:
    if client not in row.clients:
        return "n/a"
    spelled = SPELLING10.get(row.expect["kind"], {}).get(client)
    return f"`{spelled}`" if spelled else "yes"


def render() -> str:
    head = ["fault", "peer", "outcome (every client)", "within"] + [NAMES[c] for c in CLIENTS10]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    peers = {"proxy": "RabbitMQ (proxied)", "broker": "RabbitMQ", "closed": "none", "silent": "a silent server"}
    for r in ROWS10:
        peer = peers.get(r.target, "Proton") if not r.target.startswith("proton:") else "Proton"
        within = f"{r.within:g} s" if r.within is not None else ""
        cells = [r.what, peer, _outcome(r), within] + [_cell(r, c) for c in CLIENTS10]
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
