"""Qpid Proton (python-qpid-proton's proton.Data, its C core) as the AMQP 1.0 peer of the tests: the reference
codec's values as Proton objects, Proton's objects compared by exact type, and Proton's decode and encode."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import proton
from proton import Data

from amqgen.amqp10 import refcodec as ref
from amqgen.amqp10.refcodec import Array, Described

PROTON_TYPE = {"null": Data.NULL, "boolean": Data.BOOL, "ubyte": Data.UBYTE, "ushort": Data.USHORT,
               "uint": Data.UINT, "ulong": Data.ULONG, "byte": Data.BYTE, "short": Data.SHORT, "int": Data.INT,
               "long": Data.LONG, "float": Data.FLOAT, "double": Data.DOUBLE, "decimal32": Data.DECIMAL32,
               "decimal64": Data.DECIMAL64, "decimal128": Data.DECIMAL128, "char": Data.CHAR,
               "timestamp": Data.TIMESTAMP, "uuid": Data.UUID, "binary": Data.BINARY, "string": Data.STRING,
               "symbol": Data.SYMBOL, "list": Data.LIST, "map": Data.MAP, "array": Data.ARRAY}


# -- our values <-> Proton's objects -------------------------------------------------------------------------
def _scalar(t: str, x: Any) -> Any:
    conv = {"ubyte": proton.ubyte, "ushort": proton.ushort, "uint": proton.uint, "ulong": proton.ulong,
            "byte": proton.byte, "short": proton.short, "int": proton.int32, "long": int, "float": proton.float32,
            "double": float, "char": proton.char, "timestamp": proton.timestamp, "symbol": proton.symbol,
            "string": str, "binary": bytes, "boolean": bool}
    if t == "null":
        return None
    if t in ("decimal32", "decimal64"):
        return getattr(proton, t)(int.from_bytes(x, "big"))
    if t == "decimal128":
        return proton.decimal128(x)
    if t == "uuid":
        return uuid.UUID(bytes=x)
    return conv[t](x)


def to_proton(v: ref.Value) -> Any:
    if isinstance(v, Described):
        return proton.Described(to_proton(v.descriptor), to_proton(v.value))
    if isinstance(v, Array):
        d = to_proton(v.descriptor) if v.descriptor is not None else proton.UNDESCRIBED
        return proton.Array(d, PROTON_TYPE[v.type], *(_scalar(v.type, x) for x in v.items))
    if v.type == "list":
        return [to_proton(i) for i in v.value]
    if v.type == "map":
        return {to_proton(k): to_proton(x) for k, x in v.value}
    return _scalar(v.type, v.value)


def norm(v: ref.Value) -> Any:
    """Our value as Proton hands it back (maps as dicts: Proton has no ordered map)."""
    return to_proton(v)


def same(a: Any, b: Any) -> bool:
    """Proton's objects compared with their exact types (ubyte(1) is not uint(1)); floats by bit pattern."""
    if isinstance(a, proton.Described) and isinstance(b, proton.Described):
        return same(a.descriptor, b.descriptor) and same(a.value, b.value)
    if isinstance(a, proton.Array) and isinstance(b, proton.Array):
        return (a.type == b.type and same(a.descriptor, b.descriptor) and len(a.elements) == len(b.elements)
                and all(same(x, y) for x, y in zip(a.elements, b.elements, strict=True)))
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return len(a) == len(b) and all(k in b and same(x, b[k]) for k, x in a.items())
    if isinstance(a, float):
        fmt = ">f" if isinstance(a, proton.float32) else ">d"
        return struct.pack(fmt, a) == struct.pack(fmt, b)
    return bool(a == b)


def proton_decode(data: bytes) -> Any:
    d = Data()
    n = d.decode(data)
    assert n == len(data), f"Proton read {n} of {len(data)} octets"
    d.rewind()
    assert d.next() is not None
    return _own(d.get_object())


def _own(obj: Any) -> Any:
    """Proton hands binary back as a view into the Data, which is freed with it: copy while it lives."""
    if isinstance(obj, memoryview):
        return bytes(obj)
    if isinstance(obj, proton.Described):
        return proton.Described(_own(obj.descriptor), _own(obj.value))
    if isinstance(obj, proton.Array):
        return proton.Array(_own(obj.descriptor), obj.type, *(_own(x) for x in obj.elements))
    if isinstance(obj, list):
        return [_own(x) for x in obj]
    if isinstance(obj, dict):
        return {_own(k): _own(x) for k, x in obj.items()}
    return obj


def proton_encode(obj: Any) -> bytes:
    d = Data()
    d.put_object(obj)
    return bytes(d.encode())


# -- Proton as a broker (its Container listening): the peer RabbitMQ cannot play ----------------------------------
class ProtonBroker:
    """Qpid Proton's Container as a small broker, in a thread of its own: a queue per address (a list of message
    bodies, each accepted as it comes); every protocol decision is Proton's. Options:

    - ``credit``: "window" (Proton's prefetch of ``window`` per receiving link), "one" (one credit at a time: a new
      one after each message, the per-message-credit peer of issue 43), or a number (granted once, never more);
    - ``max_message_size``: announced on every link Proton attaches (a client must not send more);
    - ``refuse``: addresses whose links Proton refuses: its attach names no address, then (``detach=True``) its
      detach carries amqp:not-found; with ``detach=False`` no detach follows;
    - ``close_with``: (condition, description) Proton closes each connection with once a link is up.

    ``received``: the bodies every sending link brought, per address; ``url``: ``host:port``."""

    def __init__(self, *, credit: str | int = "window", window: int = 10, max_message_size: int | None = None,
                 refuse: tuple[str, ...] = (), detach: bool = True,
                 close_with: tuple[str, str] | None = None) -> None:
        import socket
        import threading

        from proton.handlers import MessagingHandler
        from proton.reactor import Container

        broker = self
        self.queues: dict[str, list[bytes]] = {}
        self.received: dict[str, int] = {}
        self.errors: list[Any] = []
        self.listening = threading.Event()
        probe = socket.create_server(("127.0.0.1", 0))
        self.url = f"127.0.0.1:{probe.getsockname()[1]}"
        probe.close()

        class Handler(MessagingHandler):  # type: ignore[misc]
            def __init__(self) -> None:
                super().__init__(prefetch=window if credit == "window" else 0)
                self.senders: dict[Any, str] = {}

            def on_start(self, event: Any) -> None:
                broker.container = event.container
                broker.acceptor = event.container.listen(broker.url)
                broker.listening.set()

            def on_link_opening(self, event: Any) -> None:
                link = event.link
                address = (link.remote_source if link.is_sender else link.remote_target).address
                if max_message_size is not None:
                    link.max_message_size = max_message_size
                if address in refuse:
                    return  # the answer names no address: refused (2.6.3)
                if link.is_sender:
                    link.source.address = address
                    self.senders[link] = address
                else:
                    link.target.address = address

            def on_link_opened(self, event: Any) -> None:
                link = event.link
                address = (link.remote_source if link.is_sender else link.remote_target).address
                if address in refuse:
                    if detach:
                        link.condition = proton.Condition("amqp:not-found", f"no node {address}")
                        link.close()
                    return
                if link.is_receiver and credit != "window":
                    link.flow(1 if credit == "one" else int(credit))
                if close_with is not None:
                    event.connection.condition = proton.Condition(*close_with)
                    event.connection.close()

            def on_sendable(self, event: Any) -> None:
                self.drain(event.link)

            def drain(self, link: Any) -> None:
                q = broker.queues.setdefault(self.senders.get(link, ""), [])
                while link.credit > 0 and q:
                    link.send(proton.Message(body=q.pop(0), inferred=True))

            def on_message(self, event: Any) -> None:
                address = event.link.target.address
                broker.queues.setdefault(address, []).append(bytes(event.message.body))
                broker.received[address] = broker.received.get(address, 0) + 1
                if credit == "one":
                    event.receiver.flow(1)
                for link, a in list(self.senders.items()):
                    if a == address:
                        self.drain(link)

            def on_transport_error(self, event: Any) -> None:
                broker.errors.append(event.transport.condition)

        self.thread = threading.Thread(target=Container(Handler()).run, daemon=True)
        self.thread.start()
        assert self.listening.wait(10), "Proton's container did not listen"

    def stop(self) -> None:
        """Stops listening and the container (its connections dropped)."""
        self.container.schedule(0, _Stop(self))
        self.thread.join(10)

    def __enter__(self) -> ProtonBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Stop:
    def __init__(self, broker: ProtonBroker) -> None:
        self.broker = broker

    def on_timer_task(self, event: Any) -> None:
        self.broker.acceptor.close()
        event.container.stop()
