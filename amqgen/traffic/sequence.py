"""Sequence violations: the order and state of one connection's methods, checked by the generated engine.

The generated package's ``engine.Observer`` (the engine's state machine, watching from outside) is fed the
connection's protocol headers and method frames, both directions, in the order the pipeline decodes them, each
with its packet's timestamp, so that what the two directions' relative order alone explains is not reported.
What it finds becomes a violation of kind ``sequence``: a method out of the negotiation's order, on a channel
that is not open (or over channel_max, or opened twice), a second synchronous request before the reply, a reply
to no request, a method after the connection closed. Its reply code is the one the spec gives
(``command-invalid``, ``channel-error``), its rule the grammar production the method breaks (``open-connection``,
``open-channel``) or the spec's rule (``channel.open.state``).

What the conformance checker reports is not reported again: content frames are left to it (the observer is
built with ``contents=False``), so are a frame's direction, channel and asserts; a frame the checker already
reported a violation for gives no sequence row (the observer still takes it in, to stay in step).

The observer is also where the checker reads the negotiated limits: its ``tune`` (the server's proposal, for the
``le`` asserts) and ``tune_ok`` (the frame_max every later frame is checked against, and the connection row's
limits), as its state machine took them in.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from .codec import Codec
from .framing import Frame
from .reassembly import Meta

#: the checker's ``violation(direction, channel, meta, kind, detail, method, rule, code)``
Report = Callable[[int, int | None, Meta, str, str, str | None, str | None, int | None], None]

KIND = "sequence"
#: the observer's kinds that are about order and state (its others are the conformance checker's)
_REPORTED = frozenset(("out-of-sequence", "channel-not-open"))
_SENDER = {"client": 0, "server": 1}


class Sequence:
    """One connection's sequence checks, reported through the checker's ``violation``."""

    def __init__(self, codec: Codec, report: Report) -> None:
        engine: Any = importlib.import_module(f"{codec.facts.package}.engine")
        self.observer = engine.Observer(contents=False)
        self.report = report
        self._frame = self.observer.frame

    def method(self, direction: int, f: Frame, reported: bool) -> None:
        """A decoded method frame; ``reported``: the checker found a violation in it already."""
        # the tag: the frame's packet, or None where the checker reported it already; ``at``: the capture's
        # timestamp, not the packet's number (two directions' packets may be captured out of order, their
        # timestamps still say which came first)
        found = self._frame(direction, f.decoded, None if reported else f.meta, f.meta[2])
        if found:
            self._report(found)

    def protocol_header(self, direction: int, header: bytes, meta: Meta, reported: bool) -> None:
        found = self.observer.protocol_header(direction, header, None if reported else meta)
        if found:
            self._report(found)

    def end(self) -> None:
        found = self.observer.end()
        if found:
            self._report(found)

    def _report(self, found: Any) -> None:
        for o in found:
            meta, e = o.tag, o.error
            if meta is None or e.kind not in _REPORTED:
                continue
            self.report(_SENDER[o.sender], e.channel if o.method else None, meta, KIND, e.reply_text, o.method,
                        e.rule, e.reply_code)
