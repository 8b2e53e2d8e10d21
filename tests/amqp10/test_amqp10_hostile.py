"""Issue 43: the generated AMQP 1.0 codec and engine against hostile input, with octets built by hand from the
spec (1.2 constructors, 2.3.1 frame header) and the reference codec (amqgen/amqp10/refcodec.py, written apart from
the target) as the second implementation.

- Decode amplification: one decode (a value, a frame's body, a message) builds at most EMPTY_PER_OCTET array
  elements of no octets per octet of its input, its arrays together; every other value takes an octet, so a decode
  of n octets builds at most (EMPTY_PER_OCTET + 1) * n values. A property test over hand-built inputs, and the
  review's two reproductions (a 231-octet transfer whose amqp-value is a list of 20 arrays of 2**20 list0 elements:
  1.48 GB before; a 502-octet open sent to the server role: 3.3 GB before) refused with a typed error within
  bounded memory (tracemalloc).
"""

from __future__ import annotations

import importlib
import tracemalloc
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amqgen.amqp10 import refcodec as ref

pytestmark = pytest.mark.targets  # its tier, not its folder's (tests/conftest.py)

AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
SASL_HEADER = b"AMQP\x03\x01\x00\x00"


@pytest.fixture(scope="module")
def eng(amqp10: ModuleType) -> ModuleType:
    return importlib.import_module(f"{amqp10.__name__}.engine")


# -- hand-built octets (OASIS AMQP 1.0, 1.6) -------------------------------------------------------------------
def u32(n: int) -> bytes:
    return n.to_bytes(4, "big")


def array32_of_nothing(ctor: int, count: int) -> bytes:
    """An array32 of ``count`` elements of the constructor ``ctor`` (one that takes no octets): 10 octets."""
    return b"\xf0" + u32(5) + u32(count) + bytes((ctor,))


def list32(items: list[bytes]) -> bytes:
    body = b"".join(items)
    return b"\xd0" + u32(4 + len(body)) + u32(len(items)) + body


def map32(pairs: list[tuple[bytes, bytes]]) -> bytes:
    body = b"".join(k + v for k, v in pairs)
    return b"\xd1" + u32(4 + len(body)) + u32(2 * len(pairs)) + body


def frame(body: bytes, ftype: int = 0, channel: int = 0) -> bytes:
    return u32(8 + len(body)) + bytes((2, ftype)) + channel.to_bytes(2, "big") + body


def transfer_231() -> bytes:
    """The review's transfer: 231 octets, its payload an amqp-value holding a list of 20 arrays of 2**20 list0
    elements each (20,971,520 empty lists from 200 octets)."""
    transfer = b"\x00\x53\x14\xc0\x06\x03\x43\x43\xa0\x01t"  # handle 0, delivery-id 0, delivery-tag "t"
    value = b"\x00\x53\x77" + list32([array32_of_nothing(0x45, 1 << 20)] * 20)
    return frame(transfer + value)


def open_502() -> bytes:
    """The review's open: 502 octets, its properties a map of 35 symbol keys to arrays of 2**20 list0 elements."""
    props = map32([(b"\xa3\x01" + bytes((65 + i,)), array32_of_nothing(0x45, 1 << 20)) for i in range(35)])
    fields = b"\xa1\x08cccccccc" + b"\x40" * 8 + props
    return frame(b"\x00\x53\x10\xd0" + u32(4 + len(fields)) + u32(10) + fields)


def peak_of(fn: Any) -> tuple[Any, int]:
    """``fn()``'s result (or the exception it raised) and the peak of memory traced while it ran."""
    tracemalloc.start()
    try:
        try:
            out = fn()
        except Exception as e:  # noqa: BLE001 - handed back to the test, which asserts on its type
            out = e
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_reviews_transfer_is_refused_in_bounded_memory(amqp10: ModuleType) -> None:
    # before: 1.48 GB and 11 s to decode the payload (a cap of 2**20 elements per array, not per input octet)
    data = transfer_231()
    assert len(data) == 231
    f = amqp10.decode_frames(data)[0]
    assert type(f.performative) is amqp10.Transfer
    err, peak = peak_of(lambda: amqp10.Message.decode(f.payload))
    assert isinstance(err, amqp10.DecodeError) and err.kind == "size", err
    assert "no octets" in str(err)
    assert peak < 64 * 1024, peak
    # the reference codec, written apart, refuses it for the same reason
    with pytest.raises(ref.RefError) as refused:
        ref.decode(bytes(f.payload))
    assert refused.value.kind == "size"


def test_the_reviews_open_to_the_server_role_is_refused_in_bounded_memory(eng: ModuleType) -> None:
    # before: 3.3 GB and 26 s, before any authentication
    data = open_502()
    assert len(data) == 502
    server = eng.Engine(client=False, sasl_required=False)
    _, peak = peak_of(lambda: server.receive_data(AMQP_HEADER + data))
    assert peak < 256 * 1024, peak
    events = list(iter(server.next_event, None))
    assert [type(e).__name__ for e in events] == ["ProtocolViolation"], events
    assert events[0].condition == "amqp:decode-error" and "no octets" in events[0].description
    assert b"amqp:decode-error" in server.data_to_send()  # the close that says why


def test_the_budget_is_for_the_whole_input_not_per_array(amqp10: ModuleType) -> None:
    per = amqp10.constants.EMPTY_PER_OCTET
    # 20 arrays of 10 octets in a list of 209 octets: each alone would fit a budget of its own 10 octets (160), all
    # together not the list's 209 * 16 = 3,344
    ok = list32([array32_of_nothing(0x40, 160)] * 20)
    assert len(amqp10.decode_value(ok)) == 20
    over = list32([array32_of_nothing(0x40, 200)] * 20)
    assert 20 * 200 > per * len(over)
    with pytest.raises(amqp10.DecodeError) as err:
        amqp10.decode_value(over)
    assert err.value.kind == "size"
    # a large input carries a large array of nulls: the budget is the input's, not a fixed cap per array
    padded = list32([array32_of_nothing(0x40, 100_000)] + [b"\xa0\xff" + bytes(255)] * 30)
    assert len(amqp10.decode_value(padded)[0]) == 100_000
    # list0 elements are new objects: they cost LIST0_COST each
    cost = amqp10.constants.LIST0_COST
    fits = array32_of_nothing(0x45, 10 * per // cost)
    assert len(amqp10.decode_value(fits)) == 10 * per // cost
    with pytest.raises(amqp10.DecodeError):
        amqp10.decode_value(array32_of_nothing(0x45, 10 * per // cost + 1))


# -- the property: values built <= (EMPTY_PER_OCTET + 1) * octets, for any input --------------------------------
_ZERO_WIDTH = (0x40, 0x41, 0x42, 0x43, 0x44, 0x45)  # null, true, false, uint0, ulong0, list0


@st.composite
def _zero_array(draw: Any) -> bytes:
    ctor = draw(st.sampled_from(_ZERO_WIDTH))
    count = draw(st.one_of(st.integers(0, 300), st.integers(0, (1 << 32) - 1), st.just((1 << 32) - 1)))
    if count < 256 and draw(st.booleans()):
        return b"\xe0\x02" + bytes((count, ctor))
    return array32_of_nothing(ctor, count)


_LEAVES = st.one_of(st.sampled_from([b"\x40", b"\x41", b"\x45", b"\x50\x07", b"\x71\x00\x00\x00\x05",
                                     b"\xa1\x03abc", b"\xa3\x01s", b"\xa0\x00"]), _zero_array())


def _containers(children: Any) -> Any:
    lists = st.lists(children, max_size=6).map(list32)
    maps = st.lists(st.tuples(st.sampled_from([b"\xa3\x01k", b"\xa1\x01k", b"\x53\x01"]), children),
                    max_size=4).map(map32)
    described = children.map(lambda v: b"\x00\x53\x77" + v)
    odd = children.map(lambda v: b"\x00\xa1\x01d" + v)  # a string descriptor: kept as a Described
    return st.one_of(lists, maps, described, odd)


INPUTS = st.recursive(_LEAVES, _containers, max_leaves=24)


def values_in(v: Any, amqp10: ModuleType) -> int:
    """The values a decode built: every list item, map key and value, array element, descriptor and described
    value, counted once each (an Array's elements by position: a shared None is one per element)."""
    if isinstance(v, amqp10.Array):
        return 1 + sum(values_in(x, amqp10) for x in v.items) + (
            0 if v.descriptor is None else values_in(v.descriptor, amqp10))
    if isinstance(v, (list, tuple)):
        return 1 + sum(values_in(x, amqp10) for x in v)
    if isinstance(v, dict):
        return 1 + sum(values_in(k, amqp10) + values_in(x, amqp10) for k, x in v.items())
    if isinstance(v, amqp10.Described):
        return 1 + values_in(v.descriptor, amqp10) + values_in(v.value, amqp10)
    if hasattr(v, "value") and type(v).__module__.endswith(".composites"):
        return 1 + values_in(v.value, amqp10)
    return 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=INPUTS)
def test_values_built_are_bounded_by_the_octets_read(amqp10: ModuleType, data: bytes) -> None:
    """For any input of n octets: the decode builds at most (EMPTY_PER_OCTET + 1) * n values and its memory stays
    within a constant per octet; the reference codec, with the same budget written apart, agrees on what it
    accepts and on the kind of what it refuses."""
    n = len(data)
    bound = (amqp10.constants.EMPTY_PER_OCTET + 1) * n
    got, peak = peak_of(lambda: amqp10.decode_value(data))
    try:
        ref.decode(data)
        theirs: str | None = None
    except ref.RefError as e:
        theirs = e.kind
    if isinstance(got, Exception):
        assert isinstance(got, amqp10.DecodeError), repr(got)
        assert got.kind == theirs, (got, theirs, data.hex())
    else:
        assert theirs is None, (theirs, data.hex())
        assert values_in(got, amqp10) <= bound, data.hex()
    # an empty list and a list slot: about 64 octets for each of the 2 list0 elements an octet may pay for, or 8
    # for each of 16 shared ones; the rest is the decoder's own small change
    assert peak <= 200 * n + 32 * 1024, (peak, n)


# -- the engine: frames built by the reference codec (written apart from the target) ---------------------------
@pytest.fixture(scope="module")
def refc() -> ref.Composites:
    from pytarget import SPEC_10

    from amqgen.amqp10.loader import load_spec

    return ref.Composites(load_spec(SPEC_10))


def T(t: str, v: Any) -> ref.Typed:  # noqa: N802 - a typed value, as the reference codec holds it
    return ref.Typed(t, v)


def ref_frame(refc: ref.Composites, name: str, values: dict[str, Any], channel: int = 0) -> bytes:
    ftype = 1 if name.startswith("sasl-") else 0
    return ref.encode_frame(ftype, channel, refc.encode(name, values))


def names_of(events: list[Any]) -> list[str]:
    return [type(e).__name__ for e in events]


def test_an_empty_sasl_frame_is_a_framing_error_in_both_roles(eng: ModuleType) -> None:
    # before: AttributeError: 'NoneType' object has no attribute 'NAME', out of receive_data
    empty_sasl = frame(b"", ftype=1)
    assert empty_sasl == b"\x00\x00\x00\x08\x02\x01\x00\x00"
    server = eng.Engine(client=False)
    server.receive_data(SASL_HEADER + empty_sasl)
    client = eng.Engine(client=True, sasl=("ANONYMOUS",))
    client.receive_data(SASL_HEADER + empty_sasl)
    for e in (server, client):
        events = list(iter(e.next_event, None))
        assert names_of(events) == ["ProtocolViolation"], events
        assert events[0].condition == "amqp:connection:framing-error" and "SASL" in events[0].description
        assert e.closed and e.remote_closed


def sasl_then_open(refc: ref.Composites) -> bytes:
    """What a client writes at once: SASL header, sasl-init (PLAIN), AMQP header, open."""
    init = ref_frame(refc, "sasl-init", {"mechanism": T("symbol", "PLAIN"),
                                         "initial-response": T("binary", b"\0alice\0secret")})
    open_ = ref_frame(refc, "open", {"container-id": T("string", "split-client"), "max-frame-size": T("uint", 4096)})
    begin = ref_frame(refc, "begin", {"next-outgoing-id": T("uint", 0), "incoming-window": T("uint", 100),
                                      "outgoing-window": T("uint", 100)}, channel=3)
    return SASL_HEADER + init + AMQP_HEADER + open_ + begin


def serve(eng: ModuleType, chunks: list[bytes]) -> tuple[list[str], bytes, list[Any]]:
    server = eng.Engine(client=False, authenticate=lambda m, r: "alice" if r == b"\0alice\0secret" else None)
    events: list[Any] = []
    for c in chunks:
        server.receive_data(c)
        events += list(iter(server.next_event, None))
    return names_of(events), server.data_to_send(), events


def test_the_server_reads_the_same_however_the_octets_are_segmented(eng: ModuleType, refc: ref.Composites) -> None:
    # before: in one receive_data, "a protocol header after a frame" (framing error); one octet at a time, fine
    data = sasl_then_open(refc)
    whole = serve(eng, [data])
    assert whole[0] == ["Authenticated", "ConnectionOpened", "SessionBegun"], whole[2]
    assert whole[2][0].code == 0 and whole[2][0].identity == "alice"
    assert whole[2][1].container_id == "split-client" and whole[2][2].answered is False
    assert serve(eng, [data[i:i + 1] for i in range(len(data))])[:2] == whole[:2]
    for k in range(1, len(data)):  # every split point
        assert serve(eng, [data[:k], data[k:]])[:2] == whole[:2], k


def test_a_link_name_attached_twice_by_the_peer_is_refused(eng: ModuleType, refc: ref.Composites) -> None:
    # before: the second attach was taken as a second link (2.6.1: a name is unique per role on a session);
    # Proton closes the connection with amqp:invalid-field (test_amqp10_proton_container.py checks Proton does)
    server = eng.Engine(client=False, mechanisms=())
    opened = AMQP_HEADER + ref_frame(refc, "open", {"container-id": T("string", "c")}) + ref_frame(
        refc, "begin", {"next-outgoing-id": T("uint", 0), "incoming-window": T("uint", 100),
                        "outgoing-window": T("uint", 100)})
    server.receive_data(opened)
    assert names_of(list(iter(server.next_event, None))) == ["ConnectionOpened", "SessionBegun"]
    server.open()
    server.begin(answer=0)

    def attach(handle: int, role: bool) -> bytes:
        return ref_frame(refc, "attach", {"name": T("string", "dup"), "handle": T("uint", handle),
                                          "role": T("boolean", role), "target": ref.Described(
                                              T("ulong", 0x29), T("list", (T("string", "q"),))),
                                          "initial-delivery-count": T("uint", 0)})

    server.receive_data(attach(0, False))
    events = list(iter(server.next_event, None))
    assert names_of(events) == ["LinkAttached"]
    server.attach(0, "dup", True, None, "q", answer=events[0].handle)
    server.receive_data(attach(5, True))  # the same name, the other role: another link (2.6.1)
    assert names_of(list(iter(server.next_event, None))) == ["LinkAttached"]
    server.data_to_send()
    server.receive_data(attach(7, False))  # the same name and role again
    events = list(iter(server.next_event, None))
    assert names_of(events) == ["ProtocolViolation"], events
    assert events[0].condition == "amqp:invalid-field" and "dup" in events[0].description
    assert b"amqp:invalid-field" in server.data_to_send()
    # and locally: attaching a name this end has attached in that role is refused before anything is written
    client = eng.Engine(client=True, sasl=None)
    client.receive_data(AMQP_HEADER + ref_frame(refc, "open", {"container-id": T("string", "s")}))
    client.open()
    ch = client.begin()
    client.attach(ch, "mine", eng.SENDER, None, "q")
    client.attach(ch, "mine", eng.RECEIVER, "q", None)
    with pytest.raises(eng.LocalProtocolError, match="2.6.1"):
        client.attach(ch, "mine", eng.SENDER, None, "q2")


def test_credit_granted_before_the_senders_attach_is_kept(eng: ModuleType, refc: ref.Composites) -> None:
    # before: the sender's attach reset the limit: its first transfer was refused as transfer-limit-exceeded
    client = eng.Engine(client=True, sasl=None)
    client.receive_data(AMQP_HEADER + ref_frame(refc, "open", {"container-id": T("string", "s")}))
    client.open()
    ch = client.begin()
    client.receive_data(ref_frame(refc, "begin", {"remote-channel": T("ushort", ch), "next-outgoing-id": T("uint", 0),
                                                  "incoming-window": T("uint", 100),
                                                  "outgoing-window": T("uint", 100)}))
    h = client.attach(ch, "early", eng.RECEIVER, "q", None)
    client.flow(ch, h, 3)  # granted before the sender's attach comes back, as Proton does
    written = [f for f in ref.read_frames(client.data_to_send()) if isinstance(f, ref.Frame) and f.body]
    flow = refc.decode(written[-1].body)
    assert flow[0].name == "flow" and flow[1]["link-credit"] == T("uint", 3)
    assert flow[1]["delivery-count"] is None  # unknown before the attach: the sender counts from its own (2.7.4)
    list(iter(client.next_event, None))
    client.receive_data(ref_frame(refc, "attach", {
        "name": T("string", "early"), "handle": T("uint", 9), "role": T("boolean", False),
        "source": ref.Described(T("ulong", 0x28), T("list", (T("string", "q"),))),
        "initial-delivery-count": T("uint", 7)}))
    for i in range(3):
        client.receive_data(ref.encode_frame(0, 0, refc.encode("transfer", {
            "handle": T("uint", 9), "delivery-id": T("uint", i), "delivery-tag": T("binary", b"t%d" % i),
            "settled": T("boolean", True)}) + b"\x00\x53\x75\xa0\x01x"))
    events = list(iter(client.next_event, None))
    assert names_of(events) == ["LinkAttached", "Delivered", "Delivered", "Delivered"], events
    link = client._sessions[ch].links[h]
    assert (link.delivery_count, link.credit) == (10, 0)
