#!/usr/bin/env python3
"""A small AMQP 1.0 broker on the generated package's listener (package amqp10_codec, rendered with
`amqgen render --lang python --spec 1-0 --out DIR`, DIR on PYTHONPATH): a queue per address; messages from the
peers' senders are accepted and queued, and go out to the peers' receivers on that address as their credit
allows. Any AMQP 1.0 client talks to it: Qpid Proton, the generated blocking and asyncio clients.

Usage:  python examples/amqp10_broker.py [PORT]     (default 5672; listens on 127.0.0.1)
"""

import sys
from collections import defaultdict, deque

from amqp10_codec import Accepted
from amqp10_codec.server import Handler, Listener, ServerDelivery, ServerLink


class Broker(Handler):
    def __init__(self) -> None:
        self.queues: dict[str | None, deque[ServerDelivery]] = defaultdict(deque)
        self.consumers: dict[str | None, list[ServerLink]] = defaultdict(list)

    def on_link(self, link: ServerLink) -> None:
        if link.outgoing:  # a peer's receiver: the queue's messages go to it
            self.consumers[link.address].append(link)

    def on_unlink(self, link: ServerLink, error: object) -> None:
        if link in self.consumers[link.address]:
            self.consumers[link.address].remove(link)

    def on_message(self, link: ServerLink, delivery: ServerDelivery) -> Accepted:
        self.queues[link.address].append(delivery)
        self.dispatch(link.address)
        return Accepted()

    def on_credit(self, link: ServerLink) -> None:
        self.dispatch(link.address)

    def dispatch(self, address: str | None) -> None:
        queue = self.queues[address]
        for link in self.consumers[address]:
            while queue and link.credit:
                link.send(queue.popleft())


Listener(Broker(), port=int(sys.argv[1]) if len(sys.argv) > 1 else 5672).run()
