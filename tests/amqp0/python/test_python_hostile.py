"""Hostile input against the generated 0-9-1 (RabbitMQ extended) codec: every malformed input
raises a subclass of the package's DecodeError (FrameError, UnknownMethodError, TableError...),
nothing else escapes, and nothing loops or buffers without bound.

Malformed octets are built with struct and with pika (an independent encoder), not with the
codec under test, so a bug shared by our encoder and decoder cannot hide here.
"""

from __future__ import annotations

import os
import signal
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType, ModuleType
from typing import Any

import pika.frame
import pika.spec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from py_peers import SPEC, VARIANTS, method_values, pika_defaults, pika_encode, pika_methods, pika_table

FRAME_END = b"\xce"


def frame(ftype: int, channel: int, payload: bytes, end: bytes = FRAME_END) -> bytes:
    return struct.pack(">BHI", ftype, channel, len(payload)) + payload + end


def method_payload(class_id: int, method_id: int, args: bytes) -> bytes:
    return struct.pack(">HH", class_id, method_id) + args


# A valid basic.publish, content header and body as pika writes them.
PUBLISH = pika.spec.Basic.Publish(exchange="ex", routing_key="rk", mandatory=True)
PROPS = pika.spec.BasicProperties(content_type="text/plain", headers={"a": 1, "n": {"m": [1, "x"]}}, delivery_mode=2,
                                  message_id="id", timestamp=1700000000)
BODY = b"hello hostile world"
PUBLISH_FRAME = pika.frame.Method(1, PUBLISH).marshal()
HEADER_FRAME = pika.frame.Header(1, len(BODY), PROPS).marshal()
BODY_FRAME = pika.frame.Body(1, BODY).marshal()
PUBLISH_ARGS = b"".join(PUBLISH.encode())
PROPS_BYTES = b"".join(PROPS.encode())


def _valid_corpus() -> list[bytes]:
    """One method frame per spec method (pika-encoded, non-trivial values), plus header and body."""
    out = [PUBLISH_FRAME, HEADER_FRAME, BODY_FRAME, pika.frame.Heartbeat().marshal()]
    for pm in pika_methods():
        if pm.index not in SPEC.method_by_id:
            continue
        m = SPEC.method_by_id[pm.index]
        defaults = pika_defaults(pm)
        reserved = {f.name: defaults[p] for f, p in zip(m.fields, pm.params) if f.reserved}
        values = method_values(m, VARIANTS[2], pika_table(), 2**64 - 1, reserved)
        # keep the corpus small: long strings trimmed so that mutations land on structure
        kwargs = {}
        for f, p in zip(m.fields, pm.params):
            v = values[f.name]
            kwargs[p] = v[:40] if isinstance(v, str) else v
        out.append(frame(1, 3, method_payload(*pm.index, pika_encode(pm, kwargs))))
    return out


CORPUS = _valid_corpus()


class Hang(Exception):
    """Raised by the wall-clock guard: an example ran far longer than any decode should."""


@contextmanager
def guard(seconds: float = 20.0) -> Iterator[None]:
    """Turn a loop into a test failure instead of a stuck run (a guard, not a timing assertion)."""

    def fire(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"no result after {seconds}s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def feed_all(amqp091: ModuleType, data: bytes, step: int = 0, max_frame_size: int = 131072) -> list[Any]:
    reader = amqp091.frames.FrameReader(max_frame_size=max_frame_size)
    out: list[Any] = []
    step = step or len(data) or 1
    for i in range(0, len(data), step):
        out.extend(reader.feed(data[i : i + step]))
    return out


# -- the error hierarchy ------------------------------------------------------------------------------
def test_error_classes_are_decode_errors(amqp091: ModuleType) -> None:
    """The concrete errors templates/python/README.md documents all sit under DecodeError."""
    exc = amqp091.exceptions
    assert issubclass(exc.DecodeError, exc.AMQPError) and issubclass(exc.DecodeError, ValueError)
    for name in ("FrameError", "UnknownMethodError", "TableError", "TableDepthError", "TruncatedError",
                 "InvalidUTF8Error", "UnknownClassError", "PropertyFlagsError", "FrameEndError", "FrameSizeError",
                 "FrameTypeError", "TrailingDataError"):
        assert issubclass(getattr(exc, name), exc.DecodeError), name


# -- frames -----------------------------------------------------------------------------------------
def test_valid_corpus_reads_back(amqp091: ModuleType) -> None:
    """The baseline the mutations start from: every corpus frame is accepted as it is."""
    frames = feed_all(amqp091, b"".join(CORPUS), step=5)
    assert len(frames) == len(CORPUS)


def test_truncated_frame_waits_then_completes(amqp091: ModuleType) -> None:
    """A frame cut anywhere is incomplete, not an error: no frame until its last octet arrives."""
    for cut in range(len(PUBLISH_FRAME)):
        reader = amqp091.frames.FrameReader()
        assert reader.feed(PUBLISH_FRAME[:cut]) == []
        got = reader.feed(PUBLISH_FRAME[cut:])
        assert len(got) == 1 and got[0].method.exchange == "ex"


# A connection.close (reply 320, "bye"), built by hand, and junk after it: an unknown frame type.
CLOSE_FRAME = frame(1, 0, method_payload(10, 50, (320).to_bytes(2, "big") + b"\x03bye" + bytes(4)))
JUNK = b"\x09" + bytes(6) + b"\xce"


@pytest.mark.parametrize("step", [0, 1, 3, 7])
def test_frames_before_an_error_ride_on_it_and_the_reader_stays_failed(amqp091: ModuleType, step: int) -> None:
    """Issue 18, item 1: the close that explains an error is not lost with it; the reader is sticky after."""
    exc = amqp091.exceptions
    data = PUBLISH_FRAME + CLOSE_FRAME + JUNK
    reader = amqp091.frames.FrameReader()
    got: list[Any] = []
    step = step or len(data)
    with pytest.raises(exc.FrameTypeError) as info:
        for i in range(0, len(data), step):
            got.extend(reader.feed(data[i : i + step]))
    got.extend(info.value.frames)  # the frames the failing feed completed before the junk
    assert [type(f.method).__name__ for f in got] == ["BasicPublish", "ConnectionClose"]
    assert got[1].method.reply_code == 320 and got[1].method.reply_text == "bye"
    for again in (PUBLISH_FRAME, b"", JUNK):
        with pytest.raises(exc.FrameTypeError, match="failed earlier") as later:
            reader.feed(again)
        assert list(later.value.frames) == []
    assert reader.buffered == 0


def test_decode_frames_carries_the_frames_before_the_error(amqp091: ModuleType) -> None:
    with pytest.raises(amqp091.exceptions.FrameTypeError) as info:
        amqp091.frames.decode_frames(HEADER_FRAME + CLOSE_FRAME + JUNK)
    assert [type(f).__name__ for f in info.value.frames] == ["HeaderFrame", "MethodFrame"]
    assert info.value.offset == len(HEADER_FRAME + CLOSE_FRAME)
    with pytest.raises(amqp091.exceptions.FrameTypeError) as first:
        amqp091.frames.decode_frames(JUNK + CLOSE_FRAME)
    assert list(first.value.frames) == [] and first.value.offset == 0


@pytest.mark.parametrize("end", [b"\x00", b"\xcd", b"\xff", b"A"])
def test_wrong_frame_end(amqp091: ModuleType, end: bytes) -> None:
    bad = PUBLISH_FRAME[:-1] + end
    with pytest.raises(amqp091.exceptions.FrameEndError):
        feed_all(amqp091, bad)
    # Also when the bad frame follows a good one in the same chunk.
    with pytest.raises(amqp091.exceptions.FrameEndError):
        feed_all(amqp091, HEADER_FRAME + bad)


def test_frame_size_over_the_limit_fails_at_the_header(amqp091: ModuleType) -> None:
    """The size check happens on the 7-octet header: no waiting for (or buffering) the payload."""
    for size in (4097, 2**31, 2**32 - 1):
        reader = amqp091.frames.FrameReader(max_frame_size=4096)
        with pytest.raises(amqp091.exceptions.FrameSizeError):
            reader.feed(struct.pack(">BHI", 3, 1, size))
    # A body frame one octet over frame_max (frame_max counts header and frame-end).
    over = frame(3, 1, b"x" * (4096 - 8 + 1))
    with pytest.raises(amqp091.exceptions.FrameSizeError):
        feed_all(amqp091, over, max_frame_size=4096)
    assert len(feed_all(amqp091, frame(3, 1, b"x" * (4096 - 8)), max_frame_size=4096)) == 1


def test_memory_before_tune_is_bounded(amqp091: ModuleType) -> None:
    """Issue 18, item 2: a reader made with no arguments (before tune) refuses a header announcing 2 GiB at once,
    and even with no limit (0) holds only the octets that arrived, never what a header announced."""
    import tracemalloc

    fr = amqp091.frames
    assert fr.FrameReader().max_frame_size == fr.DEFAULT_MAX_FRAME_SIZE == 131072
    assert amqp091.FRAME_MIN_SIZE == 4096
    for reader in (fr.FrameReader(), fr.FrameReader(amqp091.FRAME_MIN_SIZE)):
        with pytest.raises(amqp091.exceptions.FrameSizeError) as info:
            reader.feed(struct.pack(">BHI", 3, 1, 2**31))
        assert info.value.frames == [] and reader.buffered == 0
    reader = fr.FrameReader(0)
    chunk = b"\xab" * 65536
    tracemalloc.start()
    try:
        assert reader.feed(struct.pack(">BHI", 3, 1, 2**31)) == []
        for _ in range(16):
            assert reader.feed(chunk) == []
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert reader.buffered == 7 + 16 * 65536
    assert peak < 2 * reader.buffered + (1 << 20), f"{peak} octets held for {reader.buffered} received"


@pytest.mark.parametrize("ftype", [0, 4, 5, 9, 255])
def test_unknown_frame_type(amqp091: ModuleType, ftype: int) -> None:
    with pytest.raises(amqp091.exceptions.FrameTypeError):
        feed_all(amqp091, frame(ftype, 1, b"abc"))


def test_method_frame_payload_truncated(amqp091: ModuleType) -> None:
    """A complete frame whose payload stops inside the arguments (or the ids)."""
    payload = method_payload(60, 40, PUBLISH_ARGS)
    for cut in range(len(payload)):
        with pytest.raises(amqp091.exceptions.DecodeError):
            feed_all(amqp091, frame(1, 1, payload[:cut]))


def test_header_frame_malformed(amqp091: ModuleType) -> None:
    exc = amqp091.exceptions
    good = struct.pack(">HHQ", 60, 0, len(BODY)) + PROPS_BYTES
    assert len(feed_all(amqp091, frame(2, 1, good))) == 1
    for cut in range(len(good)):
        with pytest.raises(exc.DecodeError):
            feed_all(amqp091, frame(2, 1, good[:cut]))
    # Content header for a class that has no content (connection) or does not exist.
    for cid in (10, 61, 999):
        with pytest.raises(exc.UnknownClassError):
            feed_all(amqp091, frame(2, 1, struct.pack(">HHQ", cid, 0, 1) + b"\x00\x00"))


# -- methods ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("ids", [(0, 0), (10, 12), (60, 41), (60, 999), (11, 10), (65535, 65535), (30, 10)])
def test_unknown_class_or_method(amqp091: ModuleType, ids: tuple[int, int]) -> None:
    exc = amqp091.exceptions
    payload = method_payload(*ids, b"\x00" * 32)
    with pytest.raises(exc.UnknownMethodError):
        amqp091.methods.decode_method(payload)
    with pytest.raises(exc.UnknownMethodError):
        feed_all(amqp091, frame(1, 1, payload))


def test_every_method_truncated_anywhere(amqp091: ModuleType) -> None:
    """For every spec method with arguments: each proper prefix of a valid payload is rejected."""
    checked = 0
    for data in CORPUS[4:]:
        payload = data[7:-1]
        cid, mid = struct.unpack_from(">HH", payload)
        if len(payload) == 4:
            continue  # no arguments: nothing to truncate after the ids
        for cut in range(len(payload)):
            with pytest.raises(amqp091.exceptions.DecodeError):
                amqp091.methods.decode_method(payload[:cut])
        with pytest.raises(amqp091.exceptions.DecodeError):
            amqp091.methods.METHODS[(cid, mid)].decode(payload[4:-1])
        checked += 1
    assert checked >= 40


def test_trailing_octets_after_the_arguments(amqp091: ModuleType) -> None:
    """Octets after the last argument mean the peer and we disagree on the layout: rejected."""
    with pytest.raises(amqp091.exceptions.TrailingDataError):
        amqp091.methods.decode_method(method_payload(60, 40, PUBLISH_ARGS + b"\x00"))
    with pytest.raises(amqp091.exceptions.TrailingDataError):
        amqp091.properties.BasicProperties.decode(PROPS_BYTES + b"\x00")


def test_shortstr_length_past_the_end(amqp091: ModuleType) -> None:
    # basic.publish: reserved short, exchange shortstr claiming 200 octets with 3 present.
    args = struct.pack(">HB", 0, 200) + b"abc"
    with pytest.raises(amqp091.exceptions.TruncatedError):
        amqp091.methods.decode_method(method_payload(60, 40, args))


def test_longstr_length_past_the_end(amqp091: ModuleType) -> None:
    # connection.secure: challenge longstr claims 2**32-1 octets.
    args = struct.pack(">I", 2**32 - 1) + b"short"
    with pytest.raises(amqp091.exceptions.TruncatedError):
        amqp091.methods.decode_method(method_payload(10, 20, args))


@pytest.mark.parametrize("field", ["exchange", "routing_key"])
def test_invalid_utf8_in_shortstr(amqp091: ModuleType, field: str) -> None:
    bad = b"\xff\xfe\xc3("  # not UTF-8: stray continuation / truncated sequence
    ex = bad if field == "exchange" else b"ok"
    rk = bad if field == "routing_key" else b"ok"
    args = struct.pack(">H", 0) + bytes([len(ex)]) + ex + bytes([len(rk)]) + rk + b"\x00"
    with pytest.raises(amqp091.exceptions.InvalidUTF8Error):
        amqp091.methods.decode_method(method_payload(60, 40, args))
    with pytest.raises(amqp091.exceptions.InvalidUTF8Error):
        feed_all(amqp091, frame(1, 1, method_payload(60, 40, args)))


def test_invalid_utf8_in_property_and_table_key(amqp091: ModuleType) -> None:
    exc = amqp091.exceptions
    # content-type present (flag bit 15) with invalid UTF-8
    props = struct.pack(">H", 1 << 15) + b"\x02\xc3\x28"
    with pytest.raises(exc.InvalidUTF8Error):
        amqp091.properties.BasicProperties.decode(props)
    entry = b"\x02\xc3\x28" + b"t\x01"
    with pytest.raises(exc.InvalidUTF8Error):  # a key is a short string: the corpus's invalid-utf8 kind
        amqp091.table.decode_table(struct.pack(">I", len(entry)) + entry)


# -- properties ---------------------------------------------------------------------------------------
def test_properties_malformed(amqp091: ModuleType) -> None:
    exc = amqp091.exceptions
    cls = amqp091.properties.BasicProperties
    for cut in range(len(PROPS_BYTES)):
        with pytest.raises(exc.DecodeError):
            cls.decode(PROPS_BYTES[:cut])
    # Continuation bit set on every flag word: the flag words run off the end of the data.
    with pytest.raises(exc.DecodeError):
        cls.decode(b"\x00\x01" * 1000)
    # Flag bit 1 names a property basic does not have (14 properties use bits 15..2).
    with pytest.raises(exc.PropertyFlagsError):
        cls.decode(struct.pack(">H", 0b10))


# -- tables ----------------------------------------------------------------------------------------------
def _t(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


def test_table_length_runs_past_its_frame(amqp091: ModuleType) -> None:
    exc = amqp091.exceptions
    # queue.declare whose arguments table claims more octets than the frame carries.
    args = struct.pack(">HB", 0, 1) + b"q" + b"\x00" + struct.pack(">I", 500) + b"\x01at\x01"
    with pytest.raises(exc.DecodeError):
        amqp091.methods.decode_method(method_payload(50, 10, args))
    with pytest.raises(exc.DecodeError):
        feed_all(amqp091, frame(1, 1, method_payload(50, 10, args)))
    # the input ends inside the table: the corpus's "truncated" kind, not a malformed table
    with pytest.raises(exc.TruncatedError):
        amqp091.table.decode_table(struct.pack(">I", 500) + b"\x01at\x01")


def test_nested_lengths_that_overrun_the_outer_table(amqp091: ModuleType) -> None:
    """An inner table / array / string claims octets beyond its enclosing table's end, though
    still inside the buffer: it must not read into what follows."""
    exc = amqp091.exceptions
    inner = struct.pack(">I", 10) + b"\x01bt\x01"  # claims 10, has 4
    outer = _t(b"\x01nF" + inner)
    trailing = b"\x01ct\x01" * 4  # octets past the outer table that the inner length reaches
    for data in (
        outer + trailing,
        _t(b"\x01nA" + struct.pack(">I", 10) + b"t\x01") + trailing,
        _t(b"\x01nS" + struct.pack(">I", 10) + b"ab") + trailing,
        _t(b"\x01nx" + struct.pack(">I", 10) + b"ab") + trailing,
    ):
        with pytest.raises(exc.TableError):
            amqp091.table.decode_table(data)


@pytest.mark.parametrize(
    "body",
    [
        b"\x01a",  # key without a type code
        b"\x01aZ",  # unknown type code
        b"\x05ab",  # key length past the end
        b"\x01aI\x00\x00",  # int32 cut short
        b"\x01aD\x02",  # decimal cut short
        b"\x01aT\x00\x00\x00",  # timestamp cut short
        b"\x01aS\x00\x00",  # longstr length cut short
    ],
)
def test_table_entries_malformed(amqp091: ModuleType, body: bytes) -> None:
    with pytest.raises(amqp091.exceptions.TableError):
        amqp091.table.decode_table(_t(body))


def test_array_malformed(amqp091: ModuleType) -> None:
    exc = amqp091.exceptions
    with pytest.raises(exc.TableError):  # an unknown type code inside the array
        amqp091.table.decode_array(struct.pack(">I", 2) + b"Z\x00")
    for data in (struct.pack(">I", 9) + b"t\x01", b"\x00\x00"):  # the input ends inside the array
        with pytest.raises(exc.TruncatedError):
            amqp091.table.decode_array(data)


@pytest.mark.parametrize("kind", ["table", "array", "mixed"])
def test_deep_nesting(amqp091: ModuleType, kind: str) -> None:
    """10,000 levels: a typed error, not RecursionError or a crash."""
    depth = 10_000
    value = b""
    for level in range(depth):
        use_table = kind == "table" or (kind == "mixed" and level % 2 == 0)
        if use_table:
            value = b"F" + _t(b"\x01n" + value) if value else b"F" + _t(b"")
        else:
            value = b"A" + _t(value) if value else b"A" + _t(b"")
    data = _t(b"\x01r" + value)
    with guard(), pytest.raises(amqp091.exceptions.TableDepthError):
        amqp091.table.decode_table(data)
    # A modest depth still decodes (the limit is a guard, not a ban on nesting).
    shallow = b"F" + _t(b"")
    for _ in range(20):
        shallow = b"F" + _t(b"\x01n" + shallow)
    got, _ = amqp091.table.decode_table(_t(b"\x01r" + shallow))
    for _ in range(21):
        got = got["r" if "r" in got else "n"]
    assert got == {}


# -- property-based: random and mutated input ---------------------------------------------------------------
MAX_INPUT = 4096


def _only_typed_errors(amqp091: ModuleType, fn: Callable[[], Any]) -> None:
    with guard():
        try:
            fn()
        except amqp091.exceptions.DecodeError:
            pass  # the one acceptable failure; anything else propagates and fails the test


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(CORPUS)))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "set", "cut", "insert", "length"]))
        if not data:
            break
        pos = draw(st.integers(0, len(data) - 1))
        if op == "flip":
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "set":
            data[pos] = draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xCE, 0xFF]))
        elif op == "cut":
            del data[pos:]
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        else:  # overwrite four octets with a large or small length
            data[pos : pos + 4] = struct.pack(">I", draw(st.sampled_from([0, 1, 255, 2**16, 2**31 - 1, 2**32 - 1])))
    return bytes(data[:MAX_INPUT])


inputs = st.one_of(st.binary(max_size=MAX_INPUT), mutated())


def _outcome(amqp091: ModuleType, fn: Callable[[], Any]) -> Any:
    """What a decoder made of the input: its result as text (repr: NaN floats compare unequal),
    or the class of the DecodeError it raised."""
    with guard():
        try:
            return repr(fn())
        except amqp091.exceptions.DecodeError as e:
            return type(e)


def frames_one_by_one(amqp091: ModuleType, data: bytes | memoryview) -> tuple[list[Any], int]:
    got, offset = [], 0
    while True:
        frame, after = amqp091.frames.decode_frame(data, offset)
        if frame is None:
            return got, offset
        got.append(frame)
        offset = after


#: examples per fuzz test: a bounded slice in CI; AMQGEN_FUZZ_EXAMPLES=200000 is a long run (templates/python/README.md)
FUZZ_EXAMPLES = int(os.environ.get("AMQGEN_FUZZ_EXAMPLES", "300"))


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=inputs, step=st.integers(1, 64))
def test_fuzz_frame_reader(amqp091: ModuleType, data: bytes, step: int) -> None:
    """In chunks: only typed errors. Whole: FrameReader, decode_frames and decode_frame (one frame
    after another) agree on every input, the frames they return or the error class they raise."""
    _only_typed_errors(amqp091, lambda: feed_all(amqp091, data, step=step))

    def reader() -> tuple[list[Any], int]:
        r = amqp091.frames.FrameReader()
        frames = r.feed(data)
        return frames, len(data) - r.buffered

    want = _outcome(amqp091, reader)
    assert _outcome(amqp091, lambda: amqp091.frames.decode_frames(data)) == want
    assert _outcome(amqp091, lambda: frames_one_by_one(amqp091, memoryview(data))) == want


def test_decode_frames_resumes_and_reports_where(amqp091: ModuleType) -> None:
    """A byte stream cut anywhere: the complete frames, and the offset the next call starts from;
    a malformed frame after good ones raises with `offset` at its first octet."""
    fr, exc = amqp091.frames, amqp091.exceptions
    stream = b"".join(CORPUS)
    starts = [0]
    for f in CORPUS:
        starts.append(starts[-1] + len(f))
    for cut in range(0, len(stream), 7):
        first, off = fr.decode_frames(stream[:cut])
        assert off == max(s for s in starts if s <= cut) and len(first) == starts.index(off)
        rest, end = fr.decode_frames(bytearray(stream), off)
        assert end == len(stream) and len(first) + len(rest) == len(CORPUS)
    frame, after = fr.decode_frame(stream, starts[2])
    assert type(frame) is fr.BodyFrame and frame.payload == BODY and after == starts[3]
    assert fr.decode_frame(stream[:-1], starts[-2]) == (None, starts[-2])
    bad = PUBLISH_FRAME[:-1] + b"\x00"
    data, at = HEADER_FRAME + BODY_FRAME + bad, len(HEADER_FRAME + BODY_FRAME)
    for decode, start in ((fr.decode_frames, len(HEADER_FRAME)), (fr.decode_frame, at)):
        with pytest.raises(exc.FrameEndError) as info:
            decode(data, start)
        assert info.value.offset == at
    with pytest.raises(exc.FrameSizeError) as info:
        fr.decode_frames(BODY_FRAME + frame_header_only(), 0, 4096)
    assert info.value.offset == len(BODY_FRAME)
    assert exc.TruncatedError("x").offset is None  # set only by the frame decoders


def frame_header_only() -> bytes:
    return struct.pack(">BHI", 3, 1, 5000)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=inputs, view=st.booleans())
def test_fuzz_decoders(amqp091: ModuleType, data: bytes, view: bool) -> None:
    # Frame payloads are what the decoders see in practice: strip the 7-octet header and frame-end.
    payload = data[7:-1] if len(data) > 8 else data
    buf: bytes | memoryview = memoryview(payload) if view else payload
    _only_typed_errors(amqp091, lambda: amqp091.methods.decode_method(buf))
    _only_typed_errors(amqp091, lambda: amqp091.properties.BasicProperties.decode(buf[12:]))
    _only_typed_errors(amqp091, lambda: amqp091.table.decode_table(buf))
    _only_typed_errors(amqp091, lambda: amqp091.table.decode_array(buf))
    if len(payload) >= 4:
        cid, mid = struct.unpack_from(">HH", payload)
        cls = amqp091.methods.METHODS.get((cid, mid))
        if cls is not None:
            _only_typed_errors(amqp091, lambda: cls.decode(buf, 4))


# -- the encode side: values that do not fit ---------------------------------------------------------------
def test_values_that_do_not_fit_raise_encode_error(amqp091: ModuleType) -> None:
    """Out-of-range or unencodable values raise the package's EncodeError, never a bare struct.error."""
    m, t, exc = amqp091.methods, amqp091.table, amqp091.exceptions
    bad_methods = [
        m.BasicPublish(exchange="x" * 256),  # shortstr over 255 octets
        m.BasicPublish(routing_key="é" * 128),  # 256 octets of UTF-8
        m.BasicPublish(exchange="\ud800"),  # a lone surrogate has no UTF-8 form
        m.BasicQos(prefetch_count=65536),
        m.BasicQos(prefetch_size=-1),
        m.BasicAck(delivery_tag=2**64),
        m.ConnectionStart(version_major=256),
        m.QueueDeclare(arguments={"k": object()}),
    ]
    for method in bad_methods:
        with pytest.raises(exc.EncodeError):
            method.encode()
    deep: dict[str, Any] = {}
    for _ in range(1000):
        deep = {"n": deep}
    for table in ({"k" * 256: 1}, {"k": object()}, {"k": 2**64}, deep, {"k": [object()]}):
        with pytest.raises(exc.EncodeError):
            t.encode_table(table)
    with pytest.raises(exc.EncodeError):
        amqp091.frames.encode_message(1, m.BasicPublish(), amqp091.properties.BasicProperties(), b"x" * 100, 8)
    assert issubclass(exc.EncodeError, exc.AMQPError)
