"""A decoded transfer's payload is a read-only view of the frame's octets, and ``Message.decode`` reads a long
view without copying it whole (issue 35, codec speed): the data body is copied once, into its ``bytes``.

Two readers now stand where there was one: a view longer than ``message.VIEW_FROM`` goes through copies of
``message.PREFIX`` octets, anything else through one ``bytes``. The bytes path is the codec as it was, so each
view here is checked against the same octets as ``bytes`` (value, or the defect's kind and message), and the
values against Qpid Proton reading the same payload.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

import proton
import pytest


def _outcome(amqp10: ModuleType, data: Any) -> Any:
    try:
        return amqp10.Message.decode(data)
    except amqp10.DecodeError as e:
        return (type(e).__name__, str(e))


def _messages(amqp10: ModuleType) -> list[Any]:
    """Messages whose payloads sit on both sides of VIEW_FROM, with sections before the body longer and shorter
    than PREFIX, several data sections, a footer, and bodies of the other two kinds."""
    a = amqp10
    big_props = {f"key-{i:04d}": "v" * 20 for i in range(80)}  # about 2.5 KiB, over PREFIX
    out = []
    for size in (0, 100, 256, a.message.VIEW_FROM, a.message.VIEW_FROM + 1, 65536):
        body = bytes(i % 251 for i in range(size))
        out.append(a.Message([a.Data(body)]))
        out.append(a.Message([a.Data(body)], header=a.Header(durable=True, priority=7),
                             properties=a.Properties(message_id="m-1", subject="s", content_type="x/y"),
                             application_properties={"tenant": "acme", "n": 3}))
        out.append(a.Message([a.Data(body), a.Data(b"second"), a.Data(body[:300])],
                             message_annotations={a.Symbol("x-opt-a"): "b"}, application_properties=big_props,
                             footer={a.Symbol("f"): "x" * 700}))
        out.append(a.Message([a.AmqpValue(body)], properties=a.Properties(message_id=a.ULong(5))))
        out.append(a.Message([a.AmqpSequence([body, "s"])], footer={a.Symbol("f"): 1}))
    return out


def _transfer(amqp10: ModuleType, msg: Any) -> bytes:
    t = amqp10.Transfer(handle=0, delivery_id=1, delivery_tag=b"t", message_format=0)
    return amqp10.encode_frame(t, 1, msg.encode())  # type: ignore[no-any-return]


def test_a_transfer_payload_is_a_view_and_decodes_as_bytes_do(amqp10: ModuleType) -> None:
    for msg in _messages(amqp10):
        frame = _transfer(amqp10, msg)
        f = amqp10.decode_frames(frame)[0]
        assert type(f.payload) is memoryview and f.payload.readonly and f.payload.obj is frame
        got = amqp10.Message.decode(f.payload)
        assert got == msg == amqp10.Message.decode(bytes(f.payload))
        assert all(type(s.value) is bytes for s in got.body if type(s) is amqp10.Data)
        # Proton reads the same payload to the same body (one data section, a value, a sequence)
        m = proton.Message()
        m.decode(bytes(f.payload))
        first = msg.body[0].value
        if isinstance(first, list):
            assert [bytes(x) if isinstance(x, memoryview) else x for x in m.body] == first
        elif len(msg.body) == 1:
            assert bytes(m.body) == first
        # the reader, fed in pieces, gives each frame its own octets to view: not its buffer
        reader = amqp10.FrameReader(1 << 20)
        frames = [x for i in range(0, len(frame) + 3, 4096) for x in reader.feed(frame[i : i + 4096])]
        assert frames == [f] and frames[0].payload.obj == frame and reader.buffered == 0
        assert "payload=b'" in repr(frames[0])


def test_a_non_transfer_frame_has_an_empty_payload(amqp10: ModuleType) -> None:
    f = amqp10.decode_frames(amqp10.encode_frame(amqp10.Open(container_id="c")))[0]
    assert f.payload == b"" and type(f.payload) is bytes


@pytest.mark.parametrize("seed", [1, 2])
def test_a_damaged_long_payload_fails_alike_as_view_and_as_bytes(amqp10: ModuleType, seed: int) -> None:
    """Cut short, or one octet changed (section headers, size fields, anywhere): the view's outcome is the
    bytes' outcome, value or defect (its kind and message)."""
    rnd = random.Random(seed)
    longs = [m for m in _messages(amqp10) if len(m.encode()) > amqp10.message.VIEW_FROM]
    checked = 0
    for msg in longs:
        payload = msg.encode()
        heads = [i for i in range(len(payload) - 2) if payload[i] == 0 and payload[i + 1] == 0x53]
        spots = sorted(set(heads + [h + k for h in heads for k in (2, 3, 4, 7)]
                           + [rnd.randrange(len(payload)) for _ in range(20)]))
        cases = [payload[:cut] for cut in sorted({*spots, len(payload) - 1, amqp10.message.PREFIX})]
        for spot in spots:
            if spot < len(payload):
                for octet in (0x00, 0x40, 0x53, 0x75, 0xA0, 0xB0, 0xFF, rnd.randrange(256)):
                    cases.append(payload[:spot] + bytes((octet,)) + payload[spot + 1 :])
        for case in cases:
            if len(case) <= amqp10.message.VIEW_FROM:
                continue
            view = memoryview(case)
            assert repr(_outcome(amqp10, view)) == repr(_outcome(amqp10, case)), (seed, len(case))
            checked += 1
    assert checked > 1000
