"""The driver's side of reading: which files, in which order, cut into which parts.

Arguments may be files or directories (searched recursively, hidden files left out). Every file
is sniffed: pcap, pcapng and gzip (of either) are captures; anything else is listed as skipped.
Files are ranked by their first packet's timestamp (then by path), so a rotated set, where one
connection runs from one file into the next, is read as one capture.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import capture, packets


@dataclass
class Inputs:
    files: list[str] = field(default_factory=list)  # by rank: the names rows carry
    paths: list[str] = field(default_factory=list)  # by rank: the file read (an inflated copy for gzip)
    parts: list[capture.Part] = field(default_factory=list)
    packets: int = 0
    octets: int = 0
    problems: list[str] = field(default_factory=list)  # one line per skipped or damaged file
    link_types: set[int] = field(default_factory=set)


def expand(args: list[Path]) -> tuple[list[Path], list[str]]:
    found: list[Path] = []
    problems: list[str] = []
    for a in args:
        if a.is_dir():
            found.extend(sorted(p for p in a.rglob("*") if p.is_file()
                                and not any(part.startswith(".") for part in p.relative_to(a).parts)))
        elif a.is_file():
            found.append(a)
        else:
            problems.append(f"{a}: error: no such file or directory")
    seen: set[Path] = set()
    unique = []
    for p in found:
        r = p.resolve()
        if r not in seen:
            seen.add(r)
            unique.append(p)
    return unique, problems


def prepare(args: list[Path], staging: Path, part_size: int) -> Inputs:
    files, problems = expand(args)
    indexed: list[tuple[int, str, str, capture.FileIndex]] = []
    for path in files:
        name = str(path)
        try:
            fmt = capture.sniff(path)
            source = path
            gz_error = None
            if fmt == "gzip":
                source, gz_error = capture.inflate(path, staging / "inflated")
                if source.stat().st_size == 0 and gz_error:
                    raise capture.CaptureError(gz_error)
                if capture.sniff(source) == "gzip":
                    raise capture.CaptureError("gzip of a gzip file, not of a capture")
            idx = capture.index_file(source, 0, part_size)
            if gz_error:
                idx.error = f"{gz_error}; {idx.error}" if idx.error else gz_error
        except capture.CaptureError as e:
            problems.append(f"{name}: error: {e}; skipped")
            continue
        except OSError as e:
            problems.append(f"{name}: error: {e.strerror or e}; skipped")
            continue
        if idx.error:
            problems.append(f"{name}: error: {idx.error}; the {idx.packets} packets before it were read")
        if not idx.packets:
            if not idx.error:
                problems.append(f"{name}: error: no packets")
            continue
        unsupported = idx.link_types - set(packets.LINK_TYPES)
        if unsupported:
            problems.append(f"{name}: error: link type {', '.join(map(str, sorted(unsupported)))} is not supported "
                            f"(supported: {', '.join(sorted(set(packets.LINK_TYPES.values())))}); its packets are skipped")
        indexed.append((idx.first_ts or 0, name, str(source), idx))
    out = Inputs(problems=problems)
    for rank, (_, name, read_from, idx) in enumerate(sorted(indexed, key=lambda t: (t[0], t[1]))):
        out.files.append(name)
        out.paths.append(read_from)
        out.packets += idx.packets
        out.link_types |= idx.link_types
        for p in idx.parts:
            out.parts.append(capture.Part(rank, p.path, p.fmt, p.endian, p.start, p.end, p.first_packet, p.links,
                                          p.ts_scale))
            out.octets += p.end - p.start
    return out
