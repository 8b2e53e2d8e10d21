"""Hypothesis over the generated AMQP 1.0 engine (issue 35): random legal conversations between its client and
server roles in memory, and the bytes of recorded ones flipped, cut or grown, fed to each role
(tests/amqp10_conversation.py says what is checked); then one regression test per bug those runs found, each from
hand-built frames or from requests whose expected result the spec gives.

``scripts/soak-amqp10-engine`` runs the same properties for many more examples.
"""

from __future__ import annotations

import importlib
import struct
from types import ModuleType
from typing import Any

import amqp10_conversation as cv
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.targets  # its tier, not its folder's (tests/conftest.py)


@pytest.fixture(scope="module")
def eng(amqp10: ModuleType) -> ModuleType:
    return importlib.import_module(f"{amqp10.__name__}.engine")


WHO = st.integers(0, 1)
SIZES = (0, 1, 10, 300, 480, 1500, 5000)
#: the operations of a conversation (tests/amqp10_conversation.py, Conversation.op), drawn flat (kind, end, bits) and
#: spelt out by ``op``: one draw per field made Hypothesis spend most of the time drawing. Credit, sends and moving
#: the bytes appear more than once, so most conversations carry deliveries.
KINDS = ("credit",) * 3 + ("send",) * 4 + ("flush",) * 2 + ("dispose",) * 2 + ("wire",) * 2 + (
    "abort", "drained", "sender-settle", "tick")
OPS = st.tuples(st.sampled_from(KINDS), WHO, st.integers(0, (1 << 16) - 1))


def op(kind: str, who: int, bits: int) -> tuple[Any, ...]:
    now = (bits >> 9) % 3 != 2  # the wire moved at once after it (else frames in flight cross)
    if kind == "credit":  # credit, drain, echo
        return (kind, who, bits % 9, bits >> 4 & 1 == 1, bits >> 5 & 1 == 1, now)
    if kind == "send":  # size, settled, more (one in eight: the delivery goes on with the next send, or aborts)
        return (kind, who, SIZES[bits % 7], bits >> 3 & 1 == 1, (bits >> 4) % 8 == 0, now)
    if kind == "dispose":  # which held delivery, how many after it, the outcome, settled (three in four)
        return (kind, who, bits % 8, (bits >> 3) % 3, (bits >> 5) % 4, (bits >> 7) % 4 != 0)
    if kind == "sender-settle":
        return (kind, who, bits % 8)
    if kind == "wire":  # that many octets of the wire towards this end
        return (kind, who, 1 + bits % 700)
    if kind == "tick":
        return (kind, who, bits % 100)
    return (kind, who)


#: a detach or an end somewhere in the conversation (rarely: after it most requests are refused)
CUT = st.one_of(st.none(), st.tuples(st.integers(0, 60), st.one_of(
    st.tuples(st.just("detach"), WHO, st.booleans(), st.booleans()), st.tuples(st.just("end"), WHO, st.booleans()))))
ENDING = st.one_of(st.none(), st.tuples(st.just("close"), WHO, st.booleans()),
                   st.tuples(st.just("eof"), WHO, st.booleans()))
SETUP = st.fixed_dictionaries({"client_frame": st.sampled_from([512, 600, 4096]),
                               "server_frame": st.sampled_from([512, 1000]),
                               "window": st.sampled_from([4, 16, 2048]), "sasl": st.booleans()})
CONVERSATION = st.tuples(SETUP, st.lists(OPS, min_size=15, max_size=60), CUT, ENDING)
MUTATION = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 1 << 20), st.integers(0, 255),
                              st.binary(min_size=1, max_size=8)), min_size=1, max_size=3)


def play(eng: ModuleType, amqp10: ModuleType, conversation: Any) -> cv.Conversation:
    setup, drawn, cut, ending = conversation
    ops = [op(*o) for o in drawn]
    if cut is not None:
        ops = ops[:cut[0]] + [cut[1]] + ops[cut[0]:]
    return cv.run(eng, amqp10, ops + ([ending] if ending else []), **setup)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(conversation=CONVERSATION)
def test_legal_conversations(eng: ModuleType, amqp10: ModuleType, conversation: Any) -> None:
    """No violation, every delivery whole and in order, every outcome to its sender, the ends agree."""
    play(eng, amqp10, conversation)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(conversation=CONVERSATION, who=st.sampled_from("cs"), mutation=MUTATION,
       cuts=st.lists(st.integers(0, 1 << 20), max_size=5))
def test_mutated_streams(eng: ModuleType, amqp10: ModuleType, conversation: Any, who: str,
                         mutation: list[tuple[int, int, int, bytes]], cuts: list[int]) -> None:
    """A recorded conversation's bytes towards one end, changed, into a fresh engine of that role with the same
    requests: only LocalProtocolError (from the requests, having written nothing) escapes; each violation names a
    condition of the spec's; no event after the connection's end."""
    mutated(eng, play(eng, amqp10, conversation), who, mutation, cuts)


def mutated(eng: ModuleType, conv: cv.Conversation, who: str, mutation: list[tuple[int, int, int, bytes]],
            cuts: list[int]) -> Any:
    """The bytes ``who`` received in ``conv``, each change applied (flip a bit, cut the rest, insert octets, set
    one; or, inside one frame's performative, past its header and descriptor, set an octet or flip a bit: a field's
    value changes and the frame still parses), replayed into a fresh engine of that role."""
    stream = bytearray(b"".join((conv.c if who == "c" else conv.s).received))
    for kind, at, octet, grown in mutation:
        if not stream:
            break
        i = at % len(stream)
        if kind >= 4:
            bodies = [(pos + 11, pos + size) for pos, size in frames(bytes(stream)) if size > 12]
            if not bodies:
                continue
            start, end = bodies[at % len(bodies)]
            i = start + octet % (end - start)
            if kind == 4:
                stream[i] = grown[0]
            else:
                stream[i] ^= 1 << (octet % 8)
        elif kind == 0:
            stream[i] ^= 1 << (octet % 8)
        elif kind == 1:
            del stream[i:]
        elif kind == 2:
            stream[i:i] = grown
        else:
            stream[i] = octet
    return cv.replay(eng, conv, who, bytes(stream), [c % (len(stream) + 1) for c in cuts])


def frames(stream: bytes) -> list[tuple[int, int]]:
    """(offset, size) of each frame of a stream, the protocol headers skipped (2.2, 2.3.1: a frame starts with
    its 4-octet size)."""
    out, pos = [], 0
    while pos + 8 <= len(stream):
        if stream[pos:pos + 4] == b"AMQP":
            pos += 8
            continue
        size = int.from_bytes(stream[pos:pos + 4], "big")
        if size < 8 or pos + size > len(stream):
            break
        out.append((pos, size))
        pos += size
    return out


# -- regressions: one per bug the properties found -----------------------------------------------------------
def frame(body: bytes, channel: int = 0) -> bytes:
    """A frame by hand (2.3.1): size, doff 2, type 0, channel."""
    return struct.pack(">IBBH", 8 + len(body), 2, 0, channel) + body


def flow(handle: int | None, delivery_count: int, credit: int, echo: bool) -> bytes:
    """A flow (0x13) by hand: next-incoming-id 0, incoming-window 100, next-outgoing-id 0, outgoing-window 100,
    then (with a handle) handle, delivery-count, link-credit, available null, drain false, echo."""
    fields = b"\x43\x52\x64\x43\x52\x64"
    n = 4
    if handle is not None:
        fields += b"\x52" + bytes([handle]) + b"\x52" + bytes([delivery_count]) + b"\x52" + bytes([credit])
        fields += b"\x40\x42" + (b"\x41" if echo else b"\x42")
        n = 10
    return bytes([0x00, 0x53, 0x13, 0xC0, len(fields) + 1, n]) + fields


def exchange(c: Any, s: Any) -> None:
    """Both ends' bytes to the other until neither writes."""
    for _ in range(20):
        a, b = c.data_to_send(), s.data_to_send()
        if not a and not b:
            return
        if a:
            s.receive_data(a)
        if b:
            c.receive_data(b)
    raise AssertionError("the ends never went quiet")


def linked(eng: ModuleType, amqp10: ModuleType) -> cv.Conversation:
    conv = cv.Conversation(eng, amqp10, sasl=False)
    conv.start()
    return conv


def test_nothing_is_written_on_a_session_this_end_has_ended(eng: ModuleType, amqp10: ModuleType) -> None:
    """2.5.5 / 2.7.8: after its end an endpoint sends nothing more on the session. The peer's flow asking for an
    echo (it was sent before our end reached it) is dropped: no echo, no event. (Found: the echo went out.)"""
    conv = linked(eng, amqp10)
    c = conv.c.engine
    c.end(conv.c.channel)
    c.data_to_send()
    c.receive_data(frame(flow(conv.s.recv_handle, 0, 5, True), conv.s.channel))
    assert c.data_to_send() == b"" and c.next_event() is None


def test_a_flow_echo_for_a_link_this_end_detached_is_not_answered(eng: ModuleType, amqp10: ModuleType) -> None:
    """2.6.5: frames for a link this end detached, sent before the peer saw the detach, are dropped. (Found: a
    flow with echo was answered with a flow for the detached handle, which the peer refused.)"""
    conv = linked(eng, amqp10)
    s = conv.s.engine
    s.detach(conv.s.channel, conv.s.send_handle)
    s.data_to_send()
    s.receive_data(frame(flow(conv.c.recv_handle, 0, 5, True), conv.c.channel))
    assert s.data_to_send() == b"" and s.next_event() is None


def test_credit_reduced_while_deliveries_cross_it(eng: ModuleType, amqp10: ModuleType) -> None:
    """2.6.7: a receiver may lower its credit while deliveries are in flight. The two it had allowed are not a
    violation at the receiver, and the sender, whose delivery-count is past the new limit, has no credit: 0, not
    2**32 - 2 (found: the sender's credit wrapped; the receiver detached the link with transfer-limit-exceeded)."""
    conv = linked(eng, amqp10)
    c, s = conv.c.engine, conv.s.engine
    s.flow(conv.s.channel, conv.s.recv_handle, 2)
    c.receive_data(s.data_to_send())
    c.send(conv.c.channel, conv.c.send_handle, b"a", b"1")
    c.send(conv.c.channel, conv.c.send_handle, b"b", b"2")
    to_server = c.data_to_send()
    s.flow(conv.s.channel, conv.s.recv_handle, 0)  # crosses the two transfers
    c.receive_data(s.data_to_send())
    s.receive_data(to_server)
    assert [type(e).__name__ for e in iter(s.next_event, None)] == ["Delivered", "Delivered"]
    credit = [e.credit for e in iter(c.next_event, None) if type(e).__name__ == "CreditChanged"]
    assert credit == [2, 0]
    with pytest.raises(eng.LocalProtocolError):
        c.send(conv.c.channel, conv.c.send_handle, b"c", b"3")
    # a third transfer is past every limit granted (delivery-count 0 + credit 2): still the peer's violation
    s.receive_data(frame(bytes([0x00, 0x53, 0x14, 0xC0, 0x07, 0x03, 0x43, 0x52, 0x02, 0xA0, 0x01, 0x33]) + b"c",
                         conv.c.channel))
    assert [e.condition for e in iter(s.next_event, None)] == ["amqp:link:transfer-limit-exceeded"]


def test_a_detached_link_takes_its_unsettled_deliveries(eng: ModuleType, amqp10: ModuleType) -> None:
    """Without link recovery (2.6.13) a detached link's unsettled deliveries are forgotten at both ends: found as
    deliveries the sender held for ever after the receiver detached."""
    conv = linked(eng, amqp10)
    c, s = conv.c.engine, conv.s.engine
    s.flow(conv.s.channel, conv.s.recv_handle, 3)
    exchange(c, s)
    for tag in (b"x", b"y"):
        c.send(conv.c.channel, conv.c.send_handle, b"m", tag)
    exchange(c, s)
    assert len(c._sessions[conv.c.channel].unsettled) == len(s._sessions[conv.s.channel].received) == 2
    s.detach(conv.s.channel, conv.s.recv_handle)
    exchange(c, s)
    assert c._sessions[conv.c.channel].unsettled == {} and s._sessions[conv.s.channel].received == {}
    assert [type(e).__name__ for e in iter(c.next_event, None)][-1] == "LinkDetached"
    # a late disposition for them (settled, accepted, by hand) gives no event
    c.receive_data(frame(bytes([0x00, 0x53, 0x15, 0xC0, 0x06, 0x04, 0x41, 0x43, 0x52, 0x01, 0x41]),
                         conv.s.channel))
    assert [type(e).__name__ for e in iter(c.next_event, None)] == []


def test_a_defect_after_the_peers_close_in_the_same_read(eng: ModuleType, amqp10: ModuleType) -> None:
    """The peer's close, then junk in the same read: the connection ended with the close (one ConnectionClosed,
    our close written); the junk after it is not a second event. (Found: a ProtocolViolation after the close.)"""
    conv = linked(eng, amqp10)
    c = conv.c.engine
    c.receive_data(frame(b"\x00\x53\x18\x45") + b"\x00\x00\x00\x08\x02\x05\x00\x00")  # close; frame type 5
    assert [type(e).__name__ for e in iter(c.next_event, None)] == ["ConnectionClosed"]
    assert c.data_to_send() == frame(b"\x00\x53\x18\x45")  # our close, without an error


def test_events_about_a_link_before_its_answer_name_the_reserved_handle(eng: ModuleType, amqp10: ModuleType) -> None:
    """A peer's attach and its flow in one read, before this end answers: the flow's CreditChanged names the same
    handle as the LinkAttached, and answering on it keeps the credit. (Found with Proton's Container, which sends
    both at once: the event said handle -1, so a server never answered the drain.) A transfer on a link still
    unanswered is refused by attaching it, then detaching with the error (2.6.3), not with an exception."""
    conv = linked(eng, amqp10)
    s, ch = conv.s.engine, conv.s.channel
    attach = bytes([0x00, 0x53, 0x12, 0xC0, 0x07, 0x03, 0xA1, 0x01, 0x6C, 0x52, 0x02, 0x41])  # "l", handle 2, receiver
    s.receive_data(frame(attach, conv.c.channel) + frame(flow(2, 0, 5, False), conv.c.channel))
    attached, credit = list(iter(s.next_event, None))
    assert (type(attached).__name__, attached.answered, type(credit).__name__) == ("LinkAttached", False,
                                                                                 "CreditChanged")
    assert credit.handle == attached.handle and credit.credit == 5
    h = s.attach(ch, "l", eng.SENDER, "q", None, answer=attached.handle)
    assert h == attached.handle and s.send(ch, h, b"m", b"t") == 0
    sender = bytes([0x00, 0x53, 0x12, 0xC0, 0x07, 0x03, 0xA1, 0x01, 0x6D, 0x52, 0x03, 0x42])  # "m", handle 3, sender
    transfer = bytes([0x00, 0x53, 0x14, 0xC0, 0x07, 0x03, 0x52, 0x03, 0x43, 0xA0, 0x01, 0x78]) + b"x"
    s.data_to_send()
    s.receive_data(frame(sender, conv.c.channel) + frame(transfer, conv.c.channel))
    assert [getattr(e, "condition", None) for e in iter(s.next_event, None)] == [
        None, "amqp:link:transfer-limit-exceeded"]
    out = s.data_to_send()
    assert out.index(b"\x00\x53\x12") < out.index(b"\x00\x53\x16")  # its attach, then its detach
