#!/usr/bin/env python3
"""Re-make the committed capture fixtures (needs the broker on 127.0.0.1:5672, tcpdump, editcap).

    .venv/bin/python tests/data/traffic/make_fixtures.py

- pika-small.pcap: one pika connection (frame_max 4096): declare, bind, publish five messages with
  confirms (one of 10000 octets, split into three body frames), consume them, close. Ethernet on lo.
- violations.pcap: the four crafted protocol errors of tests/peers/traffic_clients.py record_violations.
- pika-small.pcapng: pika-small.pcap converted by Wireshark's editcap (pcapng written by another tool).
The tests compare what amqgen traffic decodes from these with tshark, so re-making them needs no
change to the tests.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from pytarget import SPEC_091_EXT, import_package  # noqa: E402
from traffic_clients import RUN, pika_publish_consume, record_violations  # noqa: E402
from traffic_tools import Recorder, keep_connections_with, need  # noqa: E402


def main() -> None:
    with Recorder(HERE / "pika-small.pcap"):
        assert pika_publish_consume("fixture", [0, 10, 300, 10000, 3], frame_max=4096) == 5
    keep_connections_with(HERE / "pika-small.pcap", RUN.encode())
    with tempfile.TemporaryDirectory() as tmp:
        gen = import_package(SPEC_091_EXT, "amqp091x", Path(tmp))
        record_violations(HERE / "violations.pcap", gen)
    subprocess.run([need("editcap"), "-F", "pcapng", str(HERE / "pika-small.pcap"), str(HERE / "pika-small.pcapng")],
                   check=True)


if __name__ == "__main__":
    main()
