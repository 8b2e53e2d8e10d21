"""The conformance corpus checked against independent peers: pika, pamqp and py-amqp.

Each check takes a corpus document (the JSON data, as a target reads it) and returns what it found:
``problems`` (a peer disagrees with the corpus), ``gaps`` (cases a peer cannot handle for a reason
documented here, each reason named by a key of ``GAP_REASONS``) and counts of what was compared.
The tests assert there are no problems and that the gaps are exactly the documented ones, so a
wrong octet in the corpus (or in the reference codec behind it) shows up as a problem, never as a
silent gap. Nothing here uses amqgen's codecs: values are rebuilt from the JSON by this module.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial
from typing import Any

import amqp.serialization
import pamqp.decode
import pamqp.encode
import pamqp.frame
import pamqp.header
import pika.data
import pika.frame
import pika.spec
from py_peers import PAMQP_PROP_PARAMS, PIKA_PROP_PARAMS, PeerMethod, pamqp_methods, pika_methods

UTC = dt.UTC

#: Why a peer cannot check a case. Keys are what the tests count; the texts are the documentation.
GAP_REASONS = {
    "pika-float": "pika decodes 'f' and 'd' through int() (pika/data.py): 1.5 becomes 1, NaN and infinities raise",
    "pamqp-U": "pamqp has no 'U' (signed 16-bit) in its decoder's type table",
    "pamqp-T-ms": "pamqp reads a timestamp above 2**32 - 1 as milliseconds (pamqp/decode.py timestamp)",
    "peer-T-range": "pika and py-amqp turn 'T' into a datetime, which ends at the year 9999",
    "pamqp-delivery-mode": "pamqp's Basic.Properties accepts only delivery modes 1 and 2",
    "pamqp-cluster-id": "pamqp's Basic.Properties accepts only an empty cluster-id",
    "pamqp-longlong": "pamqp reads a longlong argument (unsigned 64-bit) as signed: 2**64 - 1 becomes -1",
    "pamqp-empty-body": "pamqp cannot read a body frame with an empty payload ('No frame size')",
}


@dataclass
class Report:
    compared: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    gaps: Counter[str] = field(default_factory=Counter)


class Unsupported(Exception):
    """The peer cannot represent this case; ``args[0]`` is a key of GAP_REASONS."""


# -- comparable forms --------------------------------------------------------------------------------
def norm(value: Any) -> Any:
    """A peer's decoded value in comparable form. Strings and byte strings compare as octets (peers
    differ on which they return), floats by their binary64 bits, datetimes as POSIX seconds."""
    if isinstance(value, bool):
        return ("t", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", struct.pack(">d", value))
    if isinstance(value, Decimal):
        return ("dec", value)
    if isinstance(value, str):
        return ("oct", value.encode())
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ("oct", bytes(value))
    if isinstance(value, dt.datetime):
        v = value if value.tzinfo else value.replace(tzinfo=UTC)
        return ("time", int(v.timestamp()))
    if value is None:
        return None
    if isinstance(value, dict):
        return {(k.decode() if isinstance(k, bytes) else k): norm(v) for k, v in value.items()}
    if isinstance(value, list):
        return [norm(v) for v in value]
    raise TypeError(type(value))


def expected_typed(tv: dict[str, Any], peer: str) -> Any:
    """The comparable form of a corpus typed value, as ``peer`` decodes it (or Unsupported)."""
    code, value = tv["type"], tv["value"]
    if code == "t":
        return ("t", value)
    if code in "bBsuUIilL":
        if code == "U" and peer == "pamqp":
            raise Unsupported("pamqp-U")
        return ("int", int(value))
    if code in "fd":
        f = struct.unpack(">f" if code == "f" else ">d", bytes.fromhex(value))[0]
        if peer == "pika":
            if not math.isfinite(f) or f != int(f):
                raise Unsupported("pika-float")
            return ("int", int(f))
        return ("float", struct.pack(">d", f))
    if code == "D":
        return ("dec", Decimal(value["unscaled"]).scaleb(-value["scale"]))
    if code in "Sx":
        return ("oct", bytes.fromhex(value))
    if code == "T":
        seconds = int(value)
        if peer == "pamqp" and seconds > 0xFFFF_FFFF:
            raise Unsupported("pamqp-T-ms")
        if seconds > 253402300799:
            raise Unsupported("peer-T-range")
        return ("time", seconds)
    if code == "F":
        return expected_table(value, peer)
    if code == "A":
        return [expected_typed(item, peer) for item in value]
    if code == "V":
        return None
    raise AssertionError(code)


def expected_table(entries: list[Any], peer: str) -> dict[str, Any]:
    return {key: expected_typed(tv, peer) for key, tv in entries}


def expected_field(wire: str, value: Any, peer: str) -> Any:
    if wire == "bit":
        return ("t", value)
    if wire in ("octet", "short", "long"):
        return ("int", value)
    if wire == "timestamp":
        if peer == "pamqp":  # pamqp reads timestamp properties as datetimes, with its table rules
            return expected_typed({"type": "T", "value": value}, peer)
        return ("time", int(value))
    if wire == "longlong":
        if peer == "pamqp" and int(value) >= 2**63:
            raise Unsupported("pamqp-longlong")
        return ("int", int(value))
    if wire == "shortstr":
        return ("oct", value.encode())
    if wire == "longstr":
        return ("oct", bytes.fromhex(value))
    return expected_table(value, peer)


def peer_field(wire: str, value: Any) -> Any:
    """A peer's decoded argument in comparable form (pika gives timestamps as ints)."""
    if wire == "timestamp" and isinstance(value, int) and not isinstance(value, bool):
        return ("time", value)
    if wire == "table" and value is None:
        return {}
    return norm(value)


# -- values a peer can encode (its own choice of type codes) -----------------------------------------------
def pika_code(value: Any) -> str:
    if isinstance(value, bool):
        return "t"
    if isinstance(value, int):
        return "I" if -(2**31) <= value < 2**31 else "l"
    # pika/data.py encode_value has no float branch: it refuses floats
    return {Decimal: "D", str: "S", bytes: "x", dict: "F", list: "A", type(None): "V",
            dt.datetime: "T"}.get(type(value), "none")


def pamqp_code(value: Any) -> str:
    if isinstance(value, bool):
        return "t"
    if isinstance(value, int):
        for code, lo, hi in (("b", -128, 127), ("s", -32768, 32767), ("u", 0, 65535), ("I", -(2**31), 2**31 - 1),
                             ("i", 0, 2**32 - 1), ("l", -(2**63), 2**63 - 1)):
            if lo <= value <= hi:
                return code
    return {float: "f", Decimal: "D", str: "S", bytearray: "x", dict: "F", list: "A", type(None): "V",
            dt.datetime: "T"}[type(value)]


def peer_value(tv: dict[str, Any], peer: str) -> Any:
    """The Python value a peer is handed to encode a corpus typed value; Unsupported when the peer
    would choose another type code for it (then its octets cannot be compared)."""
    code, value = tv["type"], tv["value"]
    out: Any
    if code == "t":
        out = value
    elif code in "bBsuUIilL":
        out = int(value)
    elif code in "fd":
        out = struct.unpack(">f" if code == "f" else ">d", bytes.fromhex(value))[0]
    elif code == "D":
        out = Decimal(value["unscaled"]).scaleb(-value["scale"])
    elif code == "S":
        try:
            out = bytes.fromhex(value).decode()
        except UnicodeDecodeError:
            raise Unsupported("binary S") from None
    elif code == "x":
        out = bytes.fromhex(value) if peer == "pika" else bytearray.fromhex(value)
    elif code == "T":
        if int(value) > 253402300799:
            raise Unsupported("peer-T-range")
        out = dt.datetime.fromtimestamp(int(value), UTC)
    elif code == "F":
        out = peer_table(value, peer)
    elif code == "A":
        out = [peer_value(item, peer) for item in value]
    else:
        out = None
    chosen = (pika_code if peer == "pika" else pamqp_code)(out)
    if chosen != code:
        raise Unsupported(f"{peer} writes {chosen} for {code}")
    if code == "D" and peer == "pika" and out != out.normalize():
        raise Unsupported("pika normalises decimals")
    return out


def peer_table(entries: list[Any], peer: str) -> dict[str, Any]:
    keys = [key for key, _ in entries]
    if peer == "pamqp" and keys != sorted(keys):
        raise Unsupported("pamqp writes keys sorted")
    if peer == "pamqp" and any(len(k.encode()) > 128 for k in keys):
        raise Unsupported("pamqp truncates keys to 128 octets")
    return {key: peer_value(tv, peer) for key, tv in entries}


def peer_arg(wire: str, value: Any, peer: str) -> Any:
    if wire in ("longlong", "timestamp"):
        n = int(value)
        return dt.datetime.fromtimestamp(n, UTC) if wire == "timestamp" and peer == "pamqp" else n
    if wire == "longstr":
        raw = bytes.fromhex(value)
        if peer == "pamqp":
            try:
                return raw.decode()
            except UnicodeDecodeError:
                raise Unsupported("pamqp longstr is text") from None
        return raw
    if wire == "table":
        return peer_table(value, peer)
    return value


# -- the checks ----------------------------------------------------------------------------------------------
def _by_index(peer: str) -> dict[tuple[int, int], PeerMethod]:
    return {p.index: p for p in (pika_methods() if peer == "pika" else pamqp_methods())}


def _quiet(fn: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pamqp warns on deprecated methods
        return fn()


def _gap_or(report: Report, peer: str, what: Callable[[], None], case_id: str, section: str) -> None:
    try:
        what()
        report.compared[f"{peer}:{section}"] += 1
    except Unsupported as e:
        report.gaps[e.args[0]] += 1
    except AssertionError as e:
        report.problems.append(f"{peer}: {case_id}: {e}")
    except Exception as e:  # noqa: BLE001 - a peer failing on a valid case is a problem to report
        report.problems.append(f"{peer}: {case_id}: {type(e).__name__}: {e}")


def check_methods(doc: dict[str, Any], fields: dict[str, list[tuple[str, str]]]) -> Report:
    """``fields``: per method name, (field name, wire type) in wire order (from the spec file)."""
    report = Report()
    for peer in ("pika", "pamqp"):
        methods = _by_index(peer)
        for case in doc["methods"]:
            pm = methods.get((case["class_id"], case["method_id"]))
            if pm is None:
                report.problems.append(f"{peer} lacks {case['method']}")
                continue
            names = fields[case["method"]]
            data = bytes.fromhex(case["bytes"])

            def decode(pm: PeerMethod = pm, names: list[tuple[str, str]] = names, data: bytes = data,
                       case: dict[str, Any] = case, peer: str = peer) -> None:
                want = {n: expected_field(w, case["values"][n], peer) for n, w in names}
                obj = pm.cls.__new__(pm.cls) if peer == "pika" else _quiet(pm.cls)
                if peer == "pika":
                    obj.decode(data[4:], 0)
                else:
                    _quiet(lambda: obj.unmarshal(data[4:]))
                got = {n: peer_field(w, getattr(obj, p)) for (n, w), p in zip(names, pm.params, strict=True)}
                assert got == want, f"decodes to {got}, the corpus says {want}"

            def encode(pm: PeerMethod = pm, names: list[tuple[str, str]] = names, case: dict[str, Any] = case,
                       peer: str = peer) -> None:
                kwargs = {p: peer_arg(w, case["values"][n], peer) for (n, w), p in zip(names, pm.params, strict=True)}
                try:
                    obj = _quiet(lambda: pm.cls(**kwargs))
                    raw = b"".join(obj.encode()) if peer == "pika" else _quiet(obj.marshal)
                except (ValueError, TypeError) as e:
                    raise Unsupported(f"{peer} refuses the values") from e
                assert struct.pack(">HH", *pm.index).hex() + raw.hex() == case["bytes"], "encodes to other octets"

            _gap_or(report, peer, decode, case["id"], "method-decode")
            try:
                encode()
                report.compared[f"{peer}:method-encode"] += 1
            except Unsupported:
                pass  # the peer would choose other type codes, or refuses a value: nothing to compare
            except AssertionError as e:
                report.problems.append(f"{peer}: {case['id']}: {e}")
    return report


def check_properties(doc: dict[str, Any], props: list[tuple[str, str]]) -> Report:
    """Basic properties (the only content class of 0-9-1); ``props``: (name, wire type) in flag order."""
    report = Report()
    pika_params = list(PIKA_PROP_PARAMS)
    pamqp_params = list(PAMQP_PROP_PARAMS)
    for case in doc["properties"]:
        data = bytes.fromhex(case["bytes"])
        for peer, params in (("pika", pika_params), ("pamqp", pamqp_params)):
            decode = partial(_decode_properties, peer, params, props, case, data)
            _gap_or(report, peer, decode, case["id"], "properties-decode")
        # pika writes what it is given, in flag order: compare where its codes are the corpus's
        try:
            kwargs = {p: peer_arg(w, case["values"][n], "pika") for (n, w), p in zip(props, pika_params, strict=True)
                      if n in case["values"]}
            raw = b"".join(pika.spec.BasicProperties(**kwargs).encode())
        except Unsupported:
            continue
        report.compared["pika:properties-encode"] += 1
        if raw.hex() != case["bytes"][24:]:
            report.problems.append(f"pika: {case['id']}: encodes to other octets")
    return report


def _decode_properties(peer: str, params: list[str], props: list[tuple[str, str]], case: dict[str, Any],
                       data: bytes) -> None:
    want = {n: (expected_field(w, case["values"][n], peer) if n in case["values"] else None) for n, w in props}
    if peer == "pamqp":
        values = case["values"]
        if "delivery-mode" in values and values["delivery-mode"] not in (1, 2):
            raise Unsupported("pamqp-delivery-mode")
        if values.get("cluster-id", values.get("reserved", "")) != "":
            raise Unsupported("pamqp-cluster-id")
        header = pamqp.header.ContentHeader()
        header.unmarshal(data)
        assert header.body_size == int(case["body_size"]), "body size differs"
        got_raw = {p: getattr(header.properties, p) for p in params}
        if not got_raw.get("cluster_id"):
            got_raw["cluster_id"] = None  # pamqp's default '' means absent
    else:
        obj = pika.spec.BasicProperties()
        obj.decode(data, 12)
        got_raw = {p: getattr(obj, p) for p in params}
    got = {n: (peer_field(w, got_raw[p]) if got_raw[p] is not None else None)
           for (n, w), p in zip(props, params, strict=True)}
    assert got == want, f"decodes to {got}, the corpus says {want}"


def _decode_table(peer: str, case: dict[str, Any], data: bytes) -> None:
    is_table = case["kind"] == "table"
    want = expected_typed(_table_value(case), peer)
    if peer == "pika":
        got, end = pika.data.decode_table(data, 0) if is_table else pika.data.decode_value(b"A" + data, 0)
        end -= 0 if is_table else 1
    elif peer == "pamqp":
        end, got = pamqp.decode.field_table(data) if is_table else pamqp.decode.field_array(data)
    else:
        (got,), end = amqp.serialization.loads("F" if is_table else "A", data, 0)
    assert end == len(data), f"used {end} of {len(data)} octets"
    assert norm(got) == want, f"decodes to {norm(got)}, the corpus says {want}"


def _table_value(case: dict[str, Any]) -> dict[str, Any]:
    if case["kind"] == "table":
        return {"type": "F", "value": case["value"]}
    return {"type": "A", "value": case["value"]}


def check_tables(doc: dict[str, Any]) -> Report:
    report = Report()
    for case in doc["tables"]:
        data = bytes.fromhex(case["bytes"])
        is_table = case["kind"] == "table"
        for peer in ("pika", "pamqp", "py-amqp"):
            decode = partial(_decode_table, peer, case, data)
            _gap_or(report, peer, decode, case["id"], "table-decode")
        for peer in ("pika", "pamqp"):
            try:
                value = peer_value(_table_value(case), peer)
            except Unsupported:
                continue
            try:
                if peer == "pika":
                    pieces: list[bytes] = []
                    if is_table:
                        pika.data.encode_table(pieces, value)
                        raw = b"".join(pieces)
                    else:
                        pika.data.encode_value(pieces, value)
                        raw = b"".join(pieces)[1:]
                else:
                    raw = pamqp.encode.field_table(value) if is_table else pamqp.encode.field_array(value)
            except Exception:  # noqa: BLE001, S112 - a value the peer cannot write: nothing to compare
                continue
            report.compared[f"{peer}:table-encode"] += 1
            if raw != data:
                report.problems.append(f"{peer}: {case['id']}: encodes to {raw.hex()}, the corpus says {data.hex()}")
    return report


def check_frames(doc: dict[str, Any], fields: dict[str, list[tuple[str, str]]]) -> Report:
    """Every frame case read by pika's and pamqp's frame decoders: frame types, channels, method ids,
    body sizes and payloads, frame by frame."""
    report = Report()
    for case in doc["frames"]:
        data = bytes.fromhex(case["bytes"])
        for peer in ("pika", "pamqp"):
            got: list[tuple[Any, ...]] = []
            pos = 0
            gap = _frame_gap(case, peer)
            if gap:
                report.gaps[gap] += 1
                continue
            try:
                while pos < len(data):
                    if peer == "pika":
                        used, frame = pika.frame.decode_frame(data[pos:])
                        got.append(_pika_frame(frame))
                    else:
                        used, channel, frame = pamqp.frame.unmarshal(data[pos:])
                        got.append(_pamqp_frame(channel, frame))
                    assert used > 0, "no progress"
                    pos += used
            except Exception as e:  # noqa: BLE001 - any failure of a peer on a valid case is a problem
                report.problems.append(f"{peer}: {case['id']}: {type(e).__name__}: {e}")
                continue
            want = [_want_frame(f) for f in case["frames"]]
            report.compared[f"{peer}:frames"] += 1
            if got != want:
                report.problems.append(f"{peer}: {case['id']}: frames {got}, the corpus says {want}")
    return report


def _frame_gap(case: dict[str, Any], peer: str) -> str | None:
    for f in case["frames"]:
        if peer == "pamqp" and f["type"] == "body" and not f["payload"]:
            return "pamqp-empty-body"
        if f["type"] == "header" and "timestamp" in f["values"]:
            try:
                expected_field("timestamp", f["values"]["timestamp"], peer)
            except Unsupported as e:
                return str(e.args[0])
    return None


def _want_frame(f: dict[str, Any]) -> tuple[Any, ...]:
    if f["type"] == "method":
        return ("method", f["channel"], f["method"])
    if f["type"] == "header":
        return ("header", f["channel"], f["class_id"], int(f["body_size"]))
    if f["type"] == "body":
        return ("body", f["channel"], f["payload"])
    if f["type"] == "heartbeat":
        return ("heartbeat", f["channel"])
    return ("protocol-header",)


def _pika_frame(frame: Any) -> tuple[Any, ...]:
    if isinstance(frame, pika.frame.Method):
        return ("method", frame.channel_number, _pika_name(frame.method.NAME))
    if isinstance(frame, pika.frame.Header):
        return ("header", frame.channel_number, 60, frame.body_size)
    if isinstance(frame, pika.frame.Body):
        return ("body", frame.channel_number, frame.fragment.hex())
    if isinstance(frame, pika.frame.Heartbeat):
        return ("heartbeat", frame.channel_number)
    if isinstance(frame, pika.frame.ProtocolHeader):
        return ("protocol-header",)
    raise AssertionError(f"pika returned {frame!r}")


def _pika_name(name: str) -> str:
    """pika names methods "Basic.Publish", "Connection.StartOk": the spec's basic.publish, connection.start-ok."""
    cls, _, method = name.partition(".")
    out = "".join("-" + c.lower() if c.isupper() else c for c in method).lstrip("-")
    return f"{cls.lower()}.{out}"


def _pamqp_frame(channel: int, frame: Any) -> tuple[Any, ...]:
    import pamqp.body
    import pamqp.heartbeat

    if isinstance(frame, pamqp.header.ProtocolHeader):
        return ("protocol-header",)
    if isinstance(frame, pamqp.header.ContentHeader):
        return ("header", channel, 60, frame.body_size)
    if isinstance(frame, pamqp.body.ContentBody):
        return ("body", channel, bytes(frame.value).hex())
    if isinstance(frame, pamqp.heartbeat.Heartbeat):
        return ("heartbeat", channel)
    return ("method", channel, _pika_name(frame.name))


# -- malformed input ----------------------------------------------------------------------------------------------
def peer_rejects(peer: str, case: dict[str, Any]) -> bool:
    """Whether the peer's decoder for the case's input raises (any exception counts)."""
    data = bytes.fromhex(case["bytes"])
    inp = case["input"]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if peer == "pika":
                if inp in ("method", "properties", "frame"):
                    frame = data if inp == "frame" else _wrap(inp, data)
                    pos = 0
                    while pos < len(frame):
                        used, got = pika.frame.decode_frame(frame[pos:])
                        if not used or got is None:
                            return False  # waits for more data
                        pos += used
                else:
                    pika.data.decode_table(data, 0)
            else:
                if inp in ("method", "properties", "frame"):
                    frame = data if inp == "frame" else _wrap(inp, data)
                    pos = 0
                    while pos < len(frame):
                        used, _, _ = pamqp.frame.unmarshal(frame[pos:])
                        pos += used
                else:
                    pamqp.decode.field_table(data)
    except Exception:  # noqa: BLE001 - a peer rejecting input may raise anything
        return True
    return False


def _wrap(inp: str, payload: bytes) -> bytes:
    return bytes((1 if inp == "method" else 2,)) + b"\x00\x01" + len(payload).to_bytes(4, "big") + payload + b"\xce"
