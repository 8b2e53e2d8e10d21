"""Issue 35's codec review, one reproducer each, against the generated 1.0 package (`amqp10` fixture) with Qpid
Proton's Python binding as the peer where one reads the same octets, and hand-built octets elsewhere.

Each test failed on the codec before the fix (commit 22bc3d5): the message of the old failure is in the comment.
"""

from __future__ import annotations

import tracemalloc
import uuid
from types import ModuleType
from typing import Any

import proton
import pytest
from pytarget import SPEC_10

from amqgen.amqp10 import refcodec as ref

# the octets
OPEN_11_FIELDS = bytes.fromhex("005310c0100ba10163404040404040404040a10178")
STRING_DESCRIPTOR = bytes.fromhex("00a1017840")
NULLS_81 = bytes.fromhex("f0000000050000005140")
TRUES_33 = bytes.fromhex("e0022141")


def proton_reads(data: bytes) -> Any:
    d = proton.Data()
    n = d.decode(data)
    assert n == len(data)
    d.rewind()
    d.next()
    return d.get_object()


# -- forward compatibility: extra trailing fields -------------------------------------------------------------
def test_open_with_an_eleventh_field_is_read_as_proton_reads_it(amqp10: ModuleType) -> None:
    # old: SizeError: open has 10 fields, the list 11
    ours = amqp10.Open.decode(OPEN_11_FIELDS)
    peer = proton_reads(OPEN_11_FIELDS)
    assert isinstance(peer, proton.Described) and peer.value[0] == "c" and peer.value[10] == "x"
    assert ours == amqp10.Open(container_id=peer.value[0])
    # Proton's engine takes it too: fed as the peer's first frames after a header, its transport reads the open
    t = proton.Transport()
    c = proton.Connection()
    t.bind(c)
    t.push(b"AMQP\x00\x01\x00\x00" + _frame(OPEN_11_FIELDS))
    assert c.remote_container == "c" and t.condition is None
    # and a live FrameReader goes on
    reader = amqp10.FrameReader()
    frames = reader.feed(_frame(OPEN_11_FIELDS) + _frame(amqp10.Close().encode()))
    assert [type(f.performative).__name__ for f in frames] == ["Open", "Close"]


def _frame(body: bytes) -> bytes:
    return (8 + len(body)).to_bytes(4, "big") + b"\x02\x00\x00\x00" + body


def test_the_reference_codec_reads_extra_fields_too(amqp10: ModuleType) -> None:
    from amqgen.amqp10.loader import load_spec

    comps = ref.Composites(load_spec(SPEC_10))
    c, fields = comps.decode(OPEN_11_FIELDS)
    assert c.name == "open" and fields["container-id"] == ref.Typed("string", "c")


# -- a descriptor of another type -------------------------------------------------------------------------------
def test_a_string_descriptor_is_kept_as_a_described_value(amqp10: ModuleType) -> None:
    # old: WrongTypeError: a descriptor that is not a ulong or a symbol
    peer = proton_reads(STRING_DESCRIPTOR)
    assert isinstance(peer, proton.Described) and peer.descriptor == "x" and peer.value is None
    ours = amqp10.decode_value(STRING_DESCRIPTOR)
    assert isinstance(ours, amqp10.Described) and ours.descriptor == "x" and ours.value is None
    # in an array too
    arr = bytes.fromhex("e00701") + b"\x00\xa1\x01x\x52\x07"
    a = amqp10.decode_value(arr)
    assert a.descriptor == "x" and a.items == [7]


# -- arrays of elements that take no octets, bounded exactly ----------------------------------------------------
def test_arrays_of_octetless_elements_read_as_proton_reads_them(amqp10: ModuleType) -> None:
    # old: SizeError: an array of 81 elements that take no octets, in 5 octets (and 33 in 2)
    for data, n, value in ((NULLS_81, 81, None), (TRUES_33, 33, True)):
        peer = proton_reads(data)
        assert isinstance(peer, proton.Array) and len(peer.elements) == n
        assert set(peer.elements) == {value}
        ours = amqp10.decode_value(data)
        assert ours.items == [value] * n
        assert ref.decode(data).items == (value,) * n


def test_a_junk_padded_megabyte_array_fails_before_building_elements(amqp10: ModuleType) -> None:
    # old: 16 million Nones built (163 MiB) before the size error
    size = 1 << 20
    data = b"\xf0" + size.to_bytes(4, "big") + (0x00FFFFFF).to_bytes(4, "big") + b"\x40" + bytes(size - 5)
    tracemalloc.start()
    try:
        with pytest.raises(amqp10.DecodeError) as e:
            amqp10.decode_value(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert e.value.kind == "size"
    assert peak < 1 << 20  # nothing built: the count and the size disagree before the first element
    # a fixed-width array whose count and size disagree: refused before reading
    with pytest.raises(amqp10.DecodeError, match="elements of 4 octets"):
        amqp10.decode_value(b"\xf0\x00\x10\x00\x05\x00\x00\x10\x00\x70" + bytes(0x100000))
    # a count no size bounds (elements of no octets) is paid from the decode's budget, EMPTY_PER_OCTET per input
    # octet (documented in constants): 10 octets hold 160 nulls, not 161
    per = amqp10.constants.EMPTY_PER_OCTET
    with pytest.raises(amqp10.DecodeError, match="no octets"):
        amqp10.decode_value(b"\xf0\x00\x00\x00\x05" + (10 * per + 1).to_bytes(4, "big") + b"\x40")
    assert len(amqp10.decode_value(b"\xf0\x00\x00\x00\x05" + (10 * per).to_bytes(4, "big") + b"\x40")) == 10 * per


# -- one depth limit, both ways ---------------------------------------------------------------------------------
def _nested(kind: str, levels: int, amqp10: ModuleType) -> Any:
    v: Any = [1]
    for _ in range(levels - 1):
        v = {"k": v} if kind == "map" else amqp10.Described(amqp10.ULong(9), v) if kind == "described" else [v]
    return v


@pytest.mark.parametrize("kind", ["list", "map", "described"])
def test_encode_refuses_exactly_what_decode_refuses(amqp10: ModuleType, kind: str) -> None:
    # old: 150 levels encoded without complaint and refused on decode; 5,001 raised RecursionError
    limit = amqp10.constants.MAX_DEPTH
    for levels in (limit - 1, limit, limit + 1, limit + 2, 150, 5001):
        v = _nested(kind, levels, amqp10)
        try:
            data = amqp10.encode_value(v)
        except amqp10.EncodeError as e:
            assert "nested deeper" in str(e)
            data = None
        # the same value as hand-built octets (the 4-octet forms), judged by the reference decoder
        octets = _octets(kind, levels)
        try:
            ref.decode(octets)
            legal = True
        except ref.RefError as e:
            assert e.kind == "nesting-depth"
            legal = False
        assert (data is not None) == legal, (kind, levels)
        if data is not None:
            assert amqp10.decode_value(data) == amqp10.decode_value(octets)
        else:
            with pytest.raises(amqp10.DecodeError, match="nested"):
                amqp10.decode_value(octets)


def _octets(kind: str, levels: int) -> bytes:
    v = b"\xd0\x00\x00\x00\x06\x00\x00\x00\x01\x55\x01"  # list32 of one smalllong 1
    for _ in range(levels - 1):
        if kind == "map":
            items = b"\xa1\x01k" + v
            v = b"\xd1" + (len(items) + 4).to_bytes(4, "big") + b"\x00\x00\x00\x02" + items
        elif kind == "described":
            v = b"\x00\x53\x09" + v
        else:
            v = b"\xd0" + (len(v) + 4).to_bytes(4, "big") + b"\x00\x00\x00\x01" + v
    return v


def test_composites_and_messages_share_the_limit(amqp10: ModuleType) -> None:
    limit = amqp10.constants.MAX_DEPTH
    deep = _nested("list", limit + 5, amqp10)
    with pytest.raises(amqp10.EncodeError, match="nested deeper"):
        amqp10.Message(body=[amqp10.AmqpValue(deep)]).encode()
    with pytest.raises(amqp10.EncodeError, match="nested deeper"):
        amqp10.Open(container_id="c", properties={"p": deep}).encode()
    ok = _nested("list", limit - 5, amqp10)
    m = amqp10.Message(body=[amqp10.AmqpValue(ok)])
    assert amqp10.Message.decode(m.encode()) == m


# -- re-encoding ------------------------------------------------------------------------------------------------
def test_an_array_of_arrays_re_encodes_as_proton_writes_it(amqp10: ModuleType) -> None:
    # old: EncodeError: an array of arrays is not written by this package
    d = proton.Data()
    d.put_array(False, proton.Data.ARRAY)
    d.enter()
    for items in ((1, 2), (3,)):
        d.put_array(False, proton.Data.INT)
        d.enter()
        for i in items:
            d.put_int(i)
        d.exit()
    d.exit()
    wire = d.encode()
    v = amqp10.decode_value(wire)
    assert v.type == "array" and [a.items for a in v.items] == [[1, 2], [3]]
    again = amqp10.encode_value(v)
    assert amqp10.decode_value(again) == v
    assert ref.decode(again) == ref.decode(wire)
    back = proton_reads(again)
    assert [list(a.elements) for a in back.elements] == [[1, 2], [3]]


def test_an_empty_multiple_field_is_a_dropped_trailing_null(amqp10: ModuleType) -> None:
    # old: 005310c00602a1016340 (the empty list written as a trailing null)
    data = amqp10.Open(container_id="c", offered_capabilities=[]).encode()
    assert data == bytes.fromhex("005310c00401a10163")
    assert data == amqp10.Open(container_id="c").encode()
    # Proton writes the same open with no capabilities
    assert proton_reads(data).value == ["c"]


# -- requires / provides and the prose's key types -------------------------------------------------------------
def test_a_message_id_must_be_a_message_id_type(amqp10: ModuleType) -> None:
    # old: Properties(message_id=5) went out as a long
    with pytest.raises(amqp10.EncodeError, match="message-id"):
        amqp10.Properties(message_id=5).encode()
    for good in (amqp10.ULong(5), "id-1", b"\x01", uuid.UUID(int=7)):
        p = amqp10.Properties(message_id=good)
        assert amqp10.Properties.decode(p.encode()) == p
    # a long on the wire (0x81) is not a message-id either: refused on decode
    bad = bytes.fromhex("005373c00a01810000000000000005")
    with pytest.raises(amqp10.DecodeError) as e:
        amqp10.Properties.decode(bad)
    assert e.value.kind == "wrong-type"


def test_attach_source_and_target_must_be_terminus_types(amqp10: ModuleType) -> None:
    # old: Attach(source="not a source", target=5) encoded and decoded
    with pytest.raises(amqp10.EncodeError, match="source"):
        amqp10.Attach(name="l", handle=0, role=False, source="not a source").encode()
    with pytest.raises(amqp10.EncodeError, match="target"):
        amqp10.Attach(name="l", handle=0, role=False, target=5).encode()
    a = amqp10.Attach(name="l", handle=0, role=False, source=amqp10.Source(address="q"), target=amqp10.Target())
    assert amqp10.Attach.decode(a.encode()) == a
    # a string where the source goes, built by Proton's Data: refused on decode
    d = proton.Data()
    d.put_described()
    d.enter()
    d.put_ulong(0x12)
    d.put_list()
    d.enter()
    d.put_string("l")
    d.put_uint(0)
    d.put_bool(False)
    d.put_null()
    d.put_null()
    d.put_string("not a source")
    d.exit()
    d.exit()
    with pytest.raises(amqp10.DecodeError) as e:
        amqp10.Attach.decode(d.encode())
    assert e.value.kind == "wrong-type"


def test_fields_and_annotations_get_symbol_keys_as_proton_writes_them(amqp10: ModuleType) -> None:
    # old: Open(properties={"product": ...}) wrote string keys
    ours = amqp10.Open(container_id="c", properties={"product": "p"}).encode()
    peer = proton_reads(ours)
    assert peer.value[9] == {"product": "p"}
    assert [type(k) for k in peer.value[9]] == [proton.symbol]
    with pytest.raises(amqp10.EncodeError, match="symbol"):
        amqp10.Open(container_id="c", properties={5: "p"}).encode()
    # annotations: symbol or ulong keys; application-properties: string keys
    m = amqp10.Message(message_annotations={"x-opt": 1, amqp10.ULong(3): 2}, application_properties={"k": 1},
                       body=[amqp10.Data(b"")])
    back = amqp10.Message.decode(m.encode())
    keys = list(back.message_annotations)
    assert type(keys[0]) is amqp10.Symbol and type(keys[1]) is amqp10.ULong
    assert type(next(iter(back.application_properties))) is str
    with pytest.raises(amqp10.EncodeError, match="symbol or ulong"):
        amqp10.Message(message_annotations={1.5: 1}).encode()
    with pytest.raises(amqp10.EncodeError, match="string"):
        amqp10.Message(application_properties={amqp10.ULong(1): 1}).encode()
    pm = proton.Message()
    pm.decode(m.encode())
    assert pm.annotations == {proton.symbol("x-opt"): 1, proton.ulong(3): 2}


def test_the_key_table_is_in_the_plan_with_its_sections() -> None:
    from amqgen.amqp10.plan import KEY_TYPES

    assert KEY_TYPES["fields"] == (("symbol",), "part 2, 2.8.13")
    assert KEY_TYPES["annotations"][0] == ("symbol", "ulong")
    assert KEY_TYPES["application-properties"][0] == ("string",)


# -- protocol headers only where they may come -----------------------------------------------------------------
def test_a_protocol_header_mid_stream_is_refused(amqp10: ModuleType) -> None:
    # old: decode_frames and FrameReader gave back the second header as a ProtocolHeader
    open_ = amqp10.encode_frame(amqp10.Open(container_id="c"))
    stream = b"AMQP\x00\x01\x00\x00" + open_ + b"AMQP\x00\x01\x00\x00"
    with pytest.raises(amqp10.DecodeError) as e:
        amqp10.decode_frames(stream)
    assert e.value.kind == "protocol-header" and len(e.value.frames) == 2
    reader = amqp10.FrameReader()
    with pytest.raises(amqp10.DecodeError) as e2:
        reader.feed(stream)
    assert e2.value.kind == "protocol-header"
    with pytest.raises(ref.RefError):
        ref.read_frames(stream)
    # after SASL's outcome the AMQP header is where it belongs
    sasl = (b"AMQP\x03\x01\x00\x00" + amqp10.encode_frame(amqp10.SaslOutcome(code=0)) + b"AMQP\x00\x01\x00\x00"
            + open_)
    got = amqp10.FrameReader().feed(sasl)
    assert [type(f).__name__ for f in got] == ["ProtocolHeader", "Frame", "ProtocolHeader", "Frame"]
    assert len(ref.read_frames(sasl)) == 4


def test_a_server_allows_the_header_after_the_outcome_it_wrote(amqp10: ModuleType) -> None:
    # A SASL server reads sasl-init and writes the outcome; its reader never sees that outcome, so the engine says
    # so through FrameReader.allow_header() (before: the engine set the reader's private flag)
    init = b"AMQP\x03\x01\x00\x00" + amqp10.encode_frame(amqp10.SaslInit(mechanism=amqp10.Symbol("ANONYMOUS")))
    header = b"AMQP\x00\x01\x00\x00"
    refused = amqp10.FrameReader()
    refused.feed(init)
    with pytest.raises(amqp10.DecodeError) as e:
        refused.feed(header)
    assert e.value.kind == "protocol-header"
    reader = amqp10.FrameReader()
    reader.feed(init)
    reader.allow_header()
    got = reader.feed(header + amqp10.encode_frame(amqp10.Open(container_id="c")))
    assert [type(f).__name__ for f in got] == ["ProtocolHeader", "Frame"] and got[0].protocol_id == 0
    with pytest.raises(amqp10.DecodeError):  # once: a second header is misplaced again
        reader.feed(header)


# -- issue 43, item 11 ---------------------------------------------------------------------------------------------
def test_source_filter_keys_are_symbols_as_proton_reads_them(amqp10: ModuleType) -> None:
    # old: the filter map's keys went out as strings (a1), its values unchecked
    selector = amqp10.Described(amqp10.Symbol("apache.org:selector-filter:string"), "colour = 'red'")
    source = amqp10.Source(address="q", filter_={"sel": selector})
    peer = proton_reads(source.encode())
    filters = peer.value[7]
    assert list(filters) == ["sel"] and type(next(iter(filters))) is proton.symbol
    assert filters["sel"].descriptor == "apache.org:selector-filter:string"
    assert type(filters["sel"].descriptor) is proton.symbol
    with pytest.raises(amqp10.EncodeError, match="null or described"):
        amqp10.Source(address="q", filter_={"sel": "colour = 'red'"}).encode()
    with pytest.raises(amqp10.EncodeError, match="key is a symbol"):
        amqp10.Source(address="q", filter_={7: selector}).encode()


def test_application_properties_take_simple_values_only(amqp10: ModuleType) -> None:
    # old: a list value was written; 3.2.5 allows simple types only (no map, list or array)
    for bad in ([1, 2], (1,), {"a": 1}, amqp10.Array("int", [1])):
        with pytest.raises(amqp10.EncodeError, match="simple type"):
            amqp10.Message([amqp10.Data(b"x")], application_properties={"k": bad}).encode()
    ok = amqp10.Message([amqp10.Data(b"x")], application_properties={"k": amqp10.UInt(3), "s": amqp10.Symbol("v")})
    assert amqp10.Message.decode(ok.encode()) == ok
    # a peer's message holding one is still read: the rule binds what we write
    m = proton.Message(body=b"x", properties={"k": [1, 2]})
    got = amqp10.Message.decode(m.encode())
    assert got.application_properties == {"k": [1, 2]}


def test_a_string_descriptor_re_encodes_as_a_string_descriptor(amqp10: ModuleType) -> None:
    # old: re-encoded as a symbol descriptor (00 a3 01 78 40)
    again = amqp10.encode_value(amqp10.decode_value(STRING_DESCRIPTOR))
    assert again == STRING_DESCRIPTOR
    assert type(proton_reads(again).descriptor) is str  # Proton reads a string descriptor, as it wrote
    symbolic = amqp10.encode_value(amqp10.Described(amqp10.Symbol("x"), None))
    assert symbolic == bytes.fromhex("00a3017840") and type(proton_reads(symbolic).descriptor) is proton.symbol
    arr = bytes.fromhex("e00701") + b"\x00\xa1\x01x\x52\x07"
    assert amqp10.encode_value(amqp10.decode_value(arr)) == arr
