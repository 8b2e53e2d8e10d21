"""The summary table printed at the end of a run (the same figures as summary.json)."""

from __future__ import annotations

from typing import Any


def _rows(title: str, pairs: list[tuple[str, Any]]) -> list[str]:
    if not pairs:
        return [f"{title}: none"]
    width = max(len(k) for k, _ in pairs)
    return [f"{title}:"] + [f"  {k:<{width}}  {v:>10}" for k, v in pairs]


def table(s: dict[str, Any]) -> str:
    lines = [(
        f"files {len(s['files'])}, packets {s['packets']}, connections {s['connections']}, "
        f"frames {s['frames']}, messages {s['messages']}, "
        f"bytes {s['bytes']['client']} client->server / {s['bytes']['server']} server->client, "
        f"gaps {s['gaps']}, decode errors {s['decode_errors']}, violations {s['violations']}"),
    ]
    if s.get("connections_by_family"):
        lines += _rows("connections by family", sorted(s["connections_by_family"].items()))
    lines += _rows("frames by type", sorted(s["frames_by_type"].items()))
    by_method: dict[str, list[int]] = {}
    for row in s["methods_by_direction"]:
        counts = by_method.setdefault(row["method"], [0, 0])
        counts[0 if row["direction"] == "client-to-server" else 1] += row["count"]
    if by_method:
        width = max(len(m) for m in by_method)
        lines.append(f"methods by direction:{'':<{max(width - 19, 0)}}  client->server  server->client")
        lines += [f"  {m:<{width}}  {c:>14}  {sv:>14}" for m, (c, sv) in sorted(by_method.items())]
    else:
        lines.append("methods by direction: none")
    lines += _rows("violations by kind", sorted(s["violations_by_kind"].items()))
    if s.get("skipped"):
        lines.append("skipped or damaged inputs:")
        lines += [f"  {p}" for p in s["skipped"]]
    return "\n".join(lines)
