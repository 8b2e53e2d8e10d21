"""`amqgen traffic report DIR --out report.html`: one self-contained page about a traffic output.

The page is plain HTML with inline CSS and inline SVG charts: no script, nothing fetched, and a
Content-Security-Policy that forbids both. Every string that comes from the traffic (routing keys,
exchange and queue names, header values, reply texts) is HTML-escaped where it is placed. It reads
the Parquet datasets with pyarrow (no Spark needed).
"""

from __future__ import annotations

import datetime as dt
import html
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .records import DATASETS

_COLORS = ("#2563eb", "#ea580c", "#16a34a", "#9333ea", "#dc2626")


def _e(v: Any) -> str:
    return html.escape("" if v is None else str(v), quote=True)


def _load(directory: Path) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    import pyarrow.parquet as pq

    summary_path = directory / "summary.json"
    if not summary_path.is_file():
        raise UsageError(f"{directory}: not an amqgen traffic output (no summary.json)")
    try:
        summary = json.loads(summary_path.read_text())
        data = {k: pq.read_table(directory / k, columns=[c for c, _, _ in cols if c != "body"]).to_pylist()
                for k, cols in DATASETS.items()}
    except (OSError, ValueError) as e:
        raise UsageError(f"{directory}: cannot read the traffic output: {e}") from None
    return data, summary


# -- charts (inline SVG) -------------------------------------------------------------------------------
def _bars(title: str, items: list[tuple[str, list[int]]], series: list[str], width: int = 720) -> str:
    """Horizontal bars, one row per item, one bar per series value (stacked)."""
    if not items:
        return f'<figure class="chart"><figcaption>{_e(title)}</figcaption><p class="none">none</p></figure>'
    label_w, row_h = 260, 22
    top = max(sum(v) for _, v in items) or 1
    h = row_h * len(items) + 30
    out = [f'<figure class="chart"><figcaption>{_e(title)}</figcaption>',
           f'<svg role="img" aria-label="{_e(title)}" viewBox="0 0 {width} {h}" width="{width}" height="{h}">']
    for i, (label, values) in enumerate(items):
        y = i * row_h
        out.append(f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" class="lbl">{_e(label[:40])}</text>')
        x = float(label_w)
        for j, v in enumerate(values):
            w = (width - label_w - 70) * v / top
            if v:
                out.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{max(w, 1):.1f}" height="{row_h - 6}" '
                           f'fill="{_COLORS[j % len(_COLORS)]}"><title>{_e(label)}: {_e(series[j])} {v}</title></rect>')
            x += w
        out.append(f'<text x="{x + 4:.1f}" y="{y + 15}" class="num">{sum(values)}</text>')
    legend_y = row_h * len(items) + 18
    if len(series) > 1:
        for j, s in enumerate(series):
            lx = label_w + j * 170
            out.append(f'<rect x="{lx}" y="{legend_y - 10}" width="12" height="12" fill="{_COLORS[j]}"/>'
                       f'<text x="{lx + 16}" y="{legend_y}" class="lbl">{_e(s)}</text>')
    out.append("</svg></figure>")
    return "".join(out)


def _lines(title: str, series: dict[str, Counter[int]], width: int = 720, height: int = 220) -> str:
    """Per-second counts over time, one line per series."""
    seconds = sorted(set().union(*(c.keys() for c in series.values()))) if series else []
    if not seconds:
        return f'<figure class="chart"><figcaption>{_e(title)}</figcaption><p class="none">none</p></figure>'
    t0, t1 = seconds[0], max(seconds[-1], seconds[0] + 1)
    top = max(max(c.values(), default=0) for c in series.values()) or 1
    left, bottom, right = 50, 30, 10
    pw, ph = width - left - right, height - bottom - 10

    def xy(t: int, v: int) -> str:
        return f"{left + pw * (t - t0) / (t1 - t0):.1f},{10 + ph * (1 - v / top):.1f}"

    out = [f'<figure class="chart"><figcaption>{_e(title)}</figcaption>',
           f'<svg role="img" aria-label="{_e(title)}" viewBox="0 0 {width} {height}" width="{width}" height="{height}">',
           f'<line x1="{left}" y1="{10 + ph}" x2="{width - right}" y2="{10 + ph}" class="axis"/>',
           f'<line x1="{left}" y1="10" x2="{left}" y2="{10 + ph}" class="axis"/>',
           f'<text x="{left - 4}" y="16" text-anchor="end" class="num">{top}</text>',
           f'<text x="{left - 4}" y="{10 + ph}" text-anchor="end" class="num">0</text>',
           f'<text x="{left}" y="{height - 8}" class="num">{_e(_when(t0))}</text>',
           f'<text x="{width - right}" y="{height - 8}" text-anchor="end" class="num">+{t1 - t0} s</text>']
    for j, (name, counts) in enumerate(series.items()):
        pts = " ".join(xy(t, counts.get(t, 0)) for t in range(t0, t1 + 1)) if t1 - t0 <= 4000 else \
            " ".join(xy(t, counts.get(t, 0)) for t in seconds)
        out.append(f'<polyline fill="none" stroke="{_COLORS[j]}" stroke-width="1.5" points="{pts}">'
                   f'<title>{_e(name)} per second</title></polyline>')
        lx = left + 10 + j * 160
        out.append(f'<rect x="{lx}" y="14" width="12" height="3" fill="{_COLORS[j]}"/>'
                   f'<text x="{lx + 16}" y="19" class="lbl">{_e(name)}/s</text>')
    out.append("</svg></figure>")
    return "".join(out)


def _when(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _sizes(messages: list[dict[str, Any]]) -> list[tuple[str, list[int]]]:
    buckets: Counter[int] = Counter()
    for m in messages:
        size = m["body_size"] if m["body_size"] is not None else m["body_received"]
        buckets[0 if not size else int(math.log2(size)) + 1] += 1
    return [("0 B" if b == 0 else f"{_human(2 ** (b - 1))} - {_human(2 ** b - 1)}", [buckets[b]])
            for b in range(min(buckets, default=0), max(buckets, default=-1) + 1)]


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n} {unit}"
        n //= 1024
    return f"{n} TiB"


def _top(counter: Counter[str], n: int = 15) -> list[tuple[str, list[int]]]:
    return [(k if k != "" else "(default)", [v]) for k, v in counter.most_common(n)]


# -- the page ------------------------------------------------------------------------------------------
def _anchor_link(docs: str, anchor: str | None, text: Any) -> str:
    if not anchor:
        return _e(text)
    return f'<a href="{_e(docs)}#{_e(anchor)}">{_e(text)}</a>'


def _table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    if not rows:
        return '<p class="none">none</p>'
    h = "".join(f"<th>{_e(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>'


def report(directory: Path, docs_url: str = "reference/index.html") -> str:
    data, s = _load(directory)
    frames, messages, conns, violations = data["frames"], data["messages"], data["connections"], data["violations"]
    fps: Counter[int] = Counter(int(f["ts"].timestamp()) for f in frames if f["ts"] is not None)
    mps: Counter[int] = Counter(int(m["ts"].timestamp()) for m in messages if m["ts"] is not None)
    by_method: dict[str, list[int]] = {}
    for f in frames:
        if f["method"]:
            by_method.setdefault(f["method"], [0, 0])[0 if f["direction"] == "client-to-server" else 1] += 1
    methods = sorted(by_method.items(), key=lambda kv: (-sum(kv[1]), kv[0]))
    exchanges = Counter(m["exchange"] for m in messages if m["exchange"] is not None)
    keys = Counter(m["routing_key"] for m in messages if m["routing_key"] is not None)
    queues: Counter[str] = Counter()
    for f in frames:
        if f["arguments"] and '"queue"' in f["arguments"]:
            q = json.loads(f["arguments"]).get("queue")
            if isinstance(q, str):
                queues[q] += 1
    # the reference page is the 0-x spec's: a 1.0 row names its condition and section as text
    vrows = [[_e(v["family"]), _e(v["kind"]),
              (_e(v["condition"]) if v["family"] == "1-0" else
               _anchor_link(docs_url, f"constant.{v['reply_name']}" if v["reply_name"] else None,
                            f"{v['reply_code']} {v['reply_name']}" if v["reply_code"] else "")),
              (_e(v["rule"] or "") if v["family"] == "1-0" else
               _anchor_link(docs_url, _rule_anchor(v["rule"]), v["rule"] or "")),
              (_e(v["method"] or "") if v["family"] == "1-0" else
               _anchor_link(docs_url, v["method"], v["method"] or "")),
              _e(v["connection"]), _e(v["direction"]),
              _e(v["channel"]), _e(f"{Path(v['file']).name}#{v['packet']}"), _e(v["detail"])]
             for v in sorted(violations, key=lambda v: (v["ts"] is None, v["ts"], v["kind"]))[:500]]
    crows = [[_e(c["connection"]), _e(c["family"]), _e(c["protocol_header"]),
              _e(c["container_id"] or c["virtual_host"]), _e(c["mechanism"]),
              _e(c["frame_max"]), _e(c["channel_max"]),
              _e(c["heartbeat"] if c["family"] != "1-0" else c["server_idle_time_out"]),
              _e(c["frames_client"]), _e(c["frames_server"]),
              _e(c["bytes_client"]), _e(c["bytes_server"]), _e(c["closed_by"]),
              _e(f"{c['close_code'] or ''} {c['close_condition'] or ''} {c['close_text'] or ''}".strip()),
              _e(c["gaps"])]
             for c in sorted(conns, key=lambda c: (str(c["first_ts"]), c["connection"]))[:500]]
    families = s.get("connections_by_family", {})
    cards = [("files", len(s.get("files", []))), ("packets", s.get("packets", 0)), ("connections", s["connections"]),
             *((f"{fam} connections", n) for fam, n in sorted(families.items())),
             ("frames", s["frames"]), ("messages", s["messages"]), ("violations", s["violations"]),
             ("gaps", s.get("gaps", 0)), ("decode errors", s.get("decode_errors", 0))]
    addresses = Counter(m["address"] for m in messages if m["address"] is not None)
    vkinds = sorted(s.get("violations_by_kind", {}).items(), key=lambda kv: -kv[1])
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        ("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
         "img-src data:\">"),
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>AMQP traffic: {_e(directory.name)}</title>",
        f"<style>{_CSS}</style></head><body>",
        (f"<h1>AMQP traffic report</h1><p class=\"sub\">{_e(directory)} &middot; spec {_e(s.get('spec'))} "
         + (f"&middot; 1.0: {_e(s['spec_1_0'])} " if s.get("spec_1_0") else "")
         + f"&middot; {len(s.get('files', []))} capture file(s)</p>"),
        '<div class="cards">' + "".join(f'<div class="card"><b>{_e(v)}</b><span>{_e(k)}</span></div>'
                                        for k, v in cards) + "</div>",
        _lines("Frames and messages per second", {"frames": fps, "messages": mps}),
        _bars("Methods (0-x) and performatives (1.0) by direction", [(m, v) for m, v in methods[:40]],
              ["client to server", "server to client"]),
        '<div class="grid">',
        _bars("Busiest exchanges (messages)", _top(exchanges), ["messages"], 520),
        _bars("Busiest routing keys (messages)", _top(keys), ["messages"], 520),
        _bars("Busiest queues (methods naming them)", _top(queues), ["methods"], 520),
        _bars("Busiest 1.0 link addresses (messages)", _top(addresses), ["messages"], 520),
        _bars("Message size distribution (body octets)", _sizes(messages), ["messages"], 520),
        "</div>",
        _bars("Violations by kind", [(k, [v]) for k, v in vkinds], ["violations"]),
        "<h2 id=\"violations\">Violations</h2>",
        _table(["family", "kind", "reply code or condition", "rule or section", "method or performative",
                "connection", "direction", "channel", "packet", "detail"], vrows, "violations"),
        "<h2 id=\"connections\">Connections</h2>",
        _table(["connection", "family", "protocol", "vhost or container", "mechanism", "frame_max", "channel_max",
                "heartbeat s (1.0: server idle ms)", "frames c>s", "frames s>c", "bytes c>s", "bytes s>c", "closed by",
                "close", "gaps"], crows, "connections"),
        "</body></html>\n",
    ]
    return "\n".join(parts)


def _rule_anchor(rule: str | None) -> str | None:
    """Rules are ``rule.ID`` in the reference page; a field path is its own anchor."""
    return None if not rule else rule


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1120px;color:#111;padding:0 16px}
h1{margin:0}.sub{color:#555;margin-top:4px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:16px 0}
.card{border:1px solid #ddd;border-radius:8px;padding:8px 14px;min-width:96px}
.card b{display:block;font-size:20px}.card span{color:#555}
.chart{margin:18px 0}.chart figcaption{font-weight:600;margin-bottom:6px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:8px}
svg text{font:12px system-ui,sans-serif}svg .num{fill:#444}svg .axis{stroke:#999}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{border-bottom:1px solid #eee;padding:4px 6px;
text-align:left;vertical-align:top}th{background:#f6f6f6}td{word-break:break-word}.none{color:#777}
"""
