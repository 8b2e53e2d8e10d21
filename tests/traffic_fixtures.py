"""Captures and the pipeline's stages for the traffic tests, made once per test session.

``live_capture`` and ``violations_capture`` are recorded by tcpdump while real clients (and the
crafted raw client) talk to the broker; ``pipeline`` is the codec amqgen renders for the 0-9-1
extended spec plus a function running the plain-Python stages (no Spark) over capture files.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from pytarget import SPEC_091_EXT, import_package
from traffic_clients import record_clean, record_violations
from traffic_tools import OFrame

from amqgen.amqp0.lower import load_spec
from amqgen.traffic import capture, codec, session

DATA = Path(__file__).resolve().parent / "data" / "traffic"

_cache: dict[str, Any] = {}


def _root(tmp: Any) -> Path:
    if "root" not in _cache:
        _cache["root"] = tmp.mktemp("traffic")
    return Path(_cache["root"])


def live_capture(tmp: Any) -> Path:
    if "live" not in _cache:
        path = _root(tmp) / "live.pcap"
        results = record_clean(path)
        assert results == {"pika-a": 12, "pika-b": 12, "py-amqp": 25}, results
        _cache["live"] = path
    return Path(_cache["live"])


def violations_capture(tmp: Any) -> tuple[Path, list[str]]:
    if "violations" not in _cache:
        gen = import_package(SPEC_091_EXT, "amqp091x", _root(tmp) / "gen")
        path = _root(tmp) / "violations.pcap"
        _cache["violations"] = (path, record_violations(path, gen))
    return _cache["violations"]  # type: ignore[no-any-return]


class Pipeline:
    """The plain-Python stages over capture files: index, read, reassemble, decode, check."""

    def __init__(self, tmp: Any, spec: str = SPEC_091_EXT) -> None:
        self.spec = load_spec(spec)
        root = _root(tmp) / "codec"  # each spec's package in a folder of its own name
        codec.render_codec(self.spec, root)
        self.codec = codec.load(codec.spec_facts(self.spec, codec.package_name(self.spec)), str(root))

    def segments(self, paths: list[Path], part_size: int = 1 << 20) -> list[capture.Segment]:
        out = []
        for rank, p in enumerate(paths):
            idx = capture.index_file(p, rank, part_size)
            assert idx.error is None, idx.error
            out.extend(s for part in idx.parts for s in capture.read_part(part))
        return out

    def run(self, paths: list[Path], part_size: int = 1 << 20, **options: Any) -> session.Rows:
        return session.decode_segments(self.codec, session.Options(**options), [str(p) for p in paths],
                                       self.segments(paths, part_size))


def pipeline(tmp: Any) -> Pipeline:
    if "pipeline" not in _cache:
        _cache["pipeline"] = Pipeline(tmp)
    return _cache["pipeline"]  # type: ignore[no-any-return]


# -- comparing with tshark ---------------------------------------------------------------------------
FRAME_CODES = {"method": 1, "header": 2, "body": 3, "heartbeat": 8}


def ours_as_oracle(frames: list[dict[str, Any]]) -> Counter[OFrame]:
    """Our frames rows in tshark's terms (protocol headers left out: tshark does not mark them)."""
    out: Counter[OFrame] = Counter()
    for r in frames:
        if r["frame_type"] == "protocol-header":
            continue
        client, server = r["connection"].split(">")
        src, dst = (client, server) if r["direction"] == "client-to-server" else (server, client)
        ftype = FRAME_CODES[r["frame_type"]]
        out[OFrame(r["packet"], int(src.rsplit(":", 1)[1]), int(dst.rsplit(":", 1)[1]), ftype, r["channel"],
                   r["class_id"] if ftype in (1, 2) else None, r["method_id"] if ftype == 1 else None,
                   r["body_size"] if ftype == 2 else None)] += 1
    return out


def rows_as_dicts(rows: list[tuple[Any, ...]], columns: tuple[tuple[str, str, str], ...]) -> list[dict[str, Any]]:
    names = [c[0] for c in columns]
    return [dict(zip(names, r, strict=True)) for r in rows]
