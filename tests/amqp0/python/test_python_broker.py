"""The generated 0-9-1 (RabbitMQ extended) codec against a real RabbitMQ on 127.0.0.1:5672 (guest/guest).

Everything on the wire is encoded and decoded by the generated package over a plain TCP socket
(see py_wire.py). When no broker answers, these tests FAIL with a clear message (never skip).
Host, port and credentials can be overridden with AMQP_HOST / AMQP_PORT / AMQP_USER / AMQP_PASSWORD.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import socket
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from py_peers import SPEC, member, norm_field
from py_wire import close_connection, open_connection
from pytarget import import_package

pytestmark = pytest.mark.broker

HOST = os.environ.get("AMQP_HOST", "127.0.0.1")
PORT = int(os.environ.get("AMQP_PORT", "5672"))
USER = os.environ.get("AMQP_USER", "guest")
PASSWORD = os.environ.get("AMQP_PASSWORD", "guest")
ROOT = Path(__file__).resolve().parents[3]

COUNT = 1000
FRAME_MAX = 4096  # the spec's minimum: many bodies below span several frames
BASIC_PROPS = SPEC.class_by_name["basic"].properties


def message(i: int, rng: random.Random) -> tuple[dict[str, Any], bytes]:
    """Properties (by canonical name) and body of message ``i``: every 10th body is larger than
    frame_max, some are empty, the rest random sizes; header tables vary per message."""
    if i % 10 == 0:
        size = rng.randint(FRAME_MAX, 5 * FRAME_MAX)
    elif i % 37 == 0:
        size = 0
    else:
        size = rng.randint(1, FRAME_MAX - 100)
    body = rng.randbytes(size)
    headers: dict[str, Any] = {
        "index": i,
        "neg": -i - 1,
        "big": 2**40 + i,
        "text": f"message {i} ✓ 東京",
        "flag": i % 2 == 0,
        "nested": {"level": {"i": i, "arr": [i, "x", {"deep": True}, []]}},
        "array": [1, "two", 3.5, None, Decimal("-1.25")],
        "dec": Decimal(i) / Decimal(100),
        "when": dt.datetime(2025, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=i),
        "raw": bytes([i % 256, 0, 255]),
        "float": i / 7,
        "void": None,
    }
    props: dict[str, Any] = {
        "content-type": "application/octet-stream",
        "content-encoding": "identity" if i % 3 else None,
        "headers": headers,
        "delivery-mode": 1 + i % 2,
        "priority": i % 10,
        "correlation-id": f"corr-{i}",
        "reply-to": f"replies.{i}" if i % 5 == 0 else None,
        "expiration": "600000",
        "message-id": f"msg-{i:04d}",
        "timestamp": 1_700_000_000 + i,
        "type": "amqgen.test",
        "user-id": USER,  # RabbitMQ checks user-id against the authenticated user
        "app-id": "amqgen",
        "reserved": None,
    }
    return props, body


def _props(codec: ModuleType, values: dict[str, Any]) -> Any:
    return codec.properties.BasicProperties(**{member(n): v for n, v in values.items()})


def _cmp_props(got: Any) -> dict[str, Any]:
    return {f.name: norm_field(f.type, getattr(got, member(f.name))) for f in BASIC_PROPS}


def test_publish_confirm_consume_1000(amqp091: ModuleType) -> None:
    try:
        w, start = open_connection(amqp091, HOST, PORT, USER, PASSWORD, frame_max=FRAME_MAX)
    except AssertionError as e:
        pytest.fail(f"RabbitMQ broker test needs a broker on {HOST}:{PORT}: {e}")
    assert w.frame_max == FRAME_MAX
    caps = start.server_properties.get("capabilities", {})
    assert caps.get("publisher_confirms") is True, start.server_properties
    assert start.server_properties.get("product") == "RabbitMQ"

    run = uuid.uuid4().hex[:12]
    exchange, queue, key, tag = f"amqgen.x.{run}", f"amqgen.q.{run}", f"rk.{run}", f"ctag-{run}"
    rng = random.Random(run)
    ch = 1
    w.call(ch, w.m("channel.open"))
    w.call(ch, w.m("exchange.declare", exchange=exchange, type_="direct", auto_delete=True,
                   arguments={"x-amqgen": {"run": run, "list": [1, "a"]}}))
    ok = w.call(ch, w.m("queue.declare", queue=queue, exclusive=True, auto_delete=True,
                        arguments={"x-max-length": 100_000, "x-message-ttl": 600_000, "x-queue-type": "classic"}))
    assert (ok.queue, ok.message_count, ok.consumer_count) == (queue, 0, 0)
    w.call(ch, w.m("queue.bind", queue=queue, exchange=exchange, routing_key=key, arguments={"x-note": "bind"}))
    w.call(ch, w.m("confirm.select"))

    # Publish in batches, waiting for the broker's confirms after each (acks may be multiple).
    sent: list[tuple[dict[str, Any], bytes]] = []
    confirmed: set[int] = set()
    publish = w.m("basic.publish", exchange=exchange, routing_key=key, mandatory=True)
    for batch_start in range(0, COUNT, 100):
        for i in range(batch_start, batch_start + 100):
            values, body = message(i, rng)
            sent.append((values, body))
            w.send_message(ch, publish, _props(amqp091, values), body)
        while len(confirmed) < len(sent):
            f = w.next_frame()
            assert f.method.NAME == "basic.ack", f"unexpected {f.method!r} while waiting for confirms"
            last = f.method.delivery_tag
            assert 1 <= last <= len(sent)
            confirmed.update(range(1, last + 1) if f.method.multiple else (last,))
    assert confirmed == set(range(1, COUNT + 1))

    # Consume everything back, acking each message; order is the publish order (one queue, one consumer).
    w.call(ch, w.m("basic.qos", prefetch_count=50))
    consume_ok = w.call(ch, w.m("basic.consume", queue=queue, consumer_tag=tag))
    assert consume_ok.consumer_tag == tag
    for i in range(COUNT):
        deliver, header, body = w.read_message(ch, "basic.deliver")
        values, want_body = sent[i]
        assert (deliver.consumer_tag, deliver.delivery_tag, deliver.redelivered) == (tag, i + 1, False)
        assert (deliver.exchange, deliver.routing_key) == (exchange, key)
        assert header.class_id == 60 and header.body_size == len(want_body)
        assert body == want_body, f"message {i}: body differs"
        want = {f.name: norm_field(f.type, values[f.name]) for f in BASIC_PROPS}
        assert _cmp_props(header.properties) == want, f"message {i}: properties differ"
        w.send(ch, w.m("basic.ack", delivery_tag=deliver.delivery_tag))
    assert w.body_frame_sizes and max(w.body_frame_sizes) == FRAME_MAX - 8  # the broker split large bodies
    assert sum(1 for v, b in sent if len(b) > FRAME_MAX) >= COUNT // 10

    w.call(ch, w.m("basic.cancel", consumer_tag=tag))
    deleted = w.call(ch, w.m("queue.delete", queue=queue))
    assert deleted.message_count == 0  # nothing left behind: every message was consumed and acked
    w.call(ch, w.m("exchange.delete", exchange=exchange))
    w.call(ch, w.m("channel.close", reply_code=200, reply_text="bye", class_id=0, method_id=0))
    close_connection(w)


def test_broker_reports_errors_through_generated_exceptions(amqp091: ModuleType) -> None:
    """A passive declare of a missing queue: the broker closes the channel with 404, which maps to
    the generated soft error; an inequivalent redeclare gives 406; the connection stays usable."""
    try:
        w, _ = open_connection(amqp091, HOST, PORT, USER, PASSWORD)
    except AssertionError as e:
        pytest.fail(f"RabbitMQ broker test needs a broker on {HOST}:{PORT}: {e}")
    w.call(1, w.m("channel.open"))
    w.send(1, w.m("queue.declare", queue=f"amqgen.missing.{uuid.uuid4().hex}", passive=True))
    close = w.expect(1, "channel.close")
    assert close.reply_code == 404 and close.class_id == 50 and close.method_id == 10
    err = amqp091.exceptions.EXCEPTION_BY_CODE[close.reply_code]
    assert issubclass(err, amqp091.exceptions.SoftError)
    assert amqp091.constants.REPLY_CODE_CLASS[amqp091.constants.ReplyCode(404)] == "soft"
    w.send(1, w.m("channel.close-ok"))

    # The broker really read our argument table: redeclaring with a different x-max-length is
    # refused as inequivalent (406), naming the argument.
    queue = f"amqgen.args.{uuid.uuid4().hex}"
    w.call(2, w.m("channel.open"))
    w.call(2, w.m("queue.declare", queue=queue, exclusive=True, arguments={"x-max-length": 10}))
    w.send(2, w.m("queue.declare", queue=queue, exclusive=True, arguments={"x-max-length": 11}))
    close = w.expect(2, "channel.close")
    assert close.reply_code == 406 and "x-max-length" in close.reply_text, close
    assert issubclass(amqp091.exceptions.EXCEPTION_BY_CODE[406], amqp091.exceptions.SoftError)
    w.send(2, w.m("channel.close-ok"))

    # An unroutable mandatory message comes back as basic.return + header + body (reply code 312,
    # which RabbitMQ sends although its 0-9-1 extended XML defines no constant for it).
    w.call(3, w.m("channel.open"))
    body = b"returned \xce body"
    w.frame_max = 4096
    w.send_message(3, w.m("basic.publish", exchange="amq.direct", routing_key=f"nowhere.{uuid.uuid4().hex}",
                          mandatory=True), amqp091.properties.BasicProperties(message_id="ret-1"), body)
    ret, header, got = w.read_message(3, "basic.return")
    assert (ret.reply_code, ret.reply_text, ret.exchange) == (312, "NO_ROUTE", "amq.direct")
    assert header.properties.message_id == "ret-1" and got == body
    w.call(3, w.m("channel.close", reply_code=200, reply_text="", class_id=0, method_id=0))
    close_connection(w)


def test_broker_accepts_unused_bits_of_a_bit_octet(amqp091: ModuleType) -> None:
    """Issue 18, item 4 (docs/vectors.md, `accepted`): RabbitMQ reads the bits of basic.publish's flags octet it
    knows and ignores the six unused ones: a publish with 0xfc is routed as an ordinary one, and with 0xfd
    (mandatory and the unused bits) an unroutable message comes back as mandatory. The generated decoders
    accept the same octets the same way (the corpus's `accepted` cases)."""
    try:
        w, _ = open_connection(amqp091, HOST, PORT, USER, PASSWORD)
    except AssertionError as e:
        pytest.fail(f"RabbitMQ broker test needs a broker on {HOST}:{PORT}: {e}")
    w.call(1, w.m("channel.open"))
    queue = f"amqgen.bits.{uuid.uuid4().hex}"
    w.call(1, w.m("queue.declare", queue=queue, exclusive=True))
    props = amqp091.properties.BasicProperties(message_id="bits")

    def publish(routing_key: str, mandatory: bool, unused: int) -> None:
        data = bytearray(amqp091.frames.encode_message(
            1, w.m("basic.publish", exchange="", routing_key=routing_key, mandatory=mandatory), props, b"body", 4096))
        flags = 7 + int.from_bytes(data[3:7], "big") - 1  # the method frame's last payload octet: the flags
        assert data[flags] == int(mandatory)
        data[flags] |= unused
        sent = amqp091.frames.FrameReader(4096).feed(bytes(data))[0].method  # our decoder accepts it too
        assert (sent.mandatory, sent.immediate) == (mandatory, False)
        w.send_raw(bytes(data))

    publish(queue, False, 0xFC)
    ok = w.call(1, w.m("basic.get", queue=queue, no_ack=True))
    assert ok.NAME == "basic.get-ok" and ok.routing_key == queue
    header = w.next_frame()
    body = w.next_frame()
    assert header.properties.message_id == "bits" and bytes(body.payload) == b"body"
    publish(f"nowhere.{uuid.uuid4().hex}", True, 0xFC)
    ret, header, got = w.read_message(1, "basic.return")
    assert (ret.reply_code, ret.reply_text) == (312, "NO_ROUTE") and got == b"body"
    w.call(1, w.m("channel.close", reply_code=200, reply_text="", class_id=0, method_id=0))
    close_connection(w)


def _example_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"AMQP_HOST": HOST, "AMQP_PORT": str(PORT), "AMQP_USER": USER, "AMQP_PASSWORD": PASSWORD})
    return env


def test_example_publish_consume(tmp_path: Path) -> None:
    """examples/publish_consume.py renders the binding with the CLI and round-trips messages."""
    script = ROOT / "examples" / "publish_consume.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--build-dir", str(tmp_path / "build"), "--count", "5"],
        capture_output=True, text=True, timeout=180, env=_example_env(), cwd=tmp_path, check=False,
    )
    assert proc.returncode == 0, f"example failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    assert any(line.startswith("connected to RabbitMQ") for line in lines), proc.stdout
    published = [line for line in lines if line.startswith("published ")]
    received = [line for line in lines if line.startswith("received ")]
    assert len(published) == 5 and len(received) == 5, proc.stdout
    for i, line in enumerate(received):
        assert f"#{i}" in line and "body=" in line
    assert lines[-1] == "done: 5 published, 5 confirmed, 5 received", proc.stdout
    assert (tmp_path / "build" / "amqp091" / "methods.py").is_file()


def test_example_without_broker_fails_clearly(tmp_path: Path) -> None:
    """Pointed at a closed port, the example exits non-zero with one clear line, no traceback."""
    env = _example_env()
    env["AMQP_PORT"] = "1"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "publish_consume.py"), "--build-dir", str(tmp_path / "b")],
        capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path, check=False,
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "cannot connect" in proc.stderr


# -- each family's protocol header: RabbitMQ accepts AMQP 1 1 8 0 as 0-8 and AMQP 1 1 0 9 as 0-9, and answers
# anything else with its own header
@pytest.fixture(scope="module")
def family_codecs(amqp091: ModuleType, gen_root: Path) -> dict[str, ModuleType]:
    """The generated codec of each family: Debian's 0-8, the bundled 0-9, RabbitMQ's extended 0-9-1."""
    return {"0-8": import_package("amqp-specs:0-8", "brk_hdr_08", gen_root),
            "0-9": import_package(str(ROOT / "spec" / "amqp0-9.xml"), "brk_hdr_09", gen_root), "0-9-1": amqp091}


def _broker_reply(header: bytes) -> bytes:
    """Send a protocol header to the broker; return what it sends back (up to the first frame)."""
    with socket.create_connection((HOST, PORT), timeout=10) as s:
        s.sendall(header)
        data = b""
        while len(data) < 8:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return data


@pytest.mark.parametrize("family", ["0-8", "0-9", "0-9-1"])
def test_broker_accepts_each_familys_header(family_codecs: dict[str, ModuleType], family: str) -> None:
    """RabbitMQ answers a header it supports with connection.start (read here with the codec of
    that family) and any other with its own header; ours must get connection.start."""
    pkg = family_codecs[family]
    reader = pkg.frames.FrameReader()
    frames: list[object] = []
    with socket.create_connection((HOST, PORT), timeout=10) as s:
        s.sendall(pkg.constants.PROTOCOL_HEADER)
        while not frames:
            chunk = s.recv(65536)
            assert chunk, f"broker closed the connection after our {family} header"
            frames.extend(reader.feed(chunk))
    start = frames[0]
    assert isinstance(start, pkg.frames.MethodFrame), start
    assert isinstance(start.method, pkg.methods.METHODS[(10, 10)])
    # The broker states the version it took our header for: 8-0 for 0-8, 0-9 for 0-9 and 0-9-1.
    expected = (8, 0) if family == "0-8" else (0, 9)
    assert (start.method.version_major, start.method.version_minor) == expected
    assert b"PLAIN" in start.method.mechanisms.split()


def test_broker_refuses_a_wrong_header(amqp091: ModuleType) -> None:
    """The negative control for the test above: an unsupported version gets the broker's own
    header back, which the frame reader returns as a ProtocolHeaderFrame."""
    pkg = amqp091
    reply = _broker_reply(b"AMQP\x01\x01\x09\x09")
    frames = pkg.frames.FrameReader().feed(reply)
    assert frames == [pkg.frames.ProtocolHeaderFrame(pkg.constants.PROTOCOL_HEADER)]
