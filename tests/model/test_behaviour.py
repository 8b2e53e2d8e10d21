"""Class grammars parsed into productions (amqgen.amqp0.grammar) and the behaviour plan (amqgen.amqp0.behaviour).

Expected structures are written here by hand from the XML (the grammars printed in the spec files); the plan is
held against the spec's own two sources: where a spec has grammars, the (request, reply) pairs they write and the
<response> elements must agree, and the negotiation the grammar gives must be the one the connection class's
synchronous methods give in a spec without grammars.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from pytarget import ROOT, SPEC_091, SPEC_091_EXT

from amqgen.amqp0.behaviour import behaviour_plan
from amqgen.amqp0.grammar import format_expr
from amqgen.amqp0.lower import load_spec
from amqgen.amqp0.model import Choice, NonTerminal, Repeat, Sequence, Spec, Terminal
from amqgen.errors import Diagnostic
from amqgen.specs import resolve

BUNDLED = str(ROOT / "spec" / "amqp0-9.xml")


def load(path: str) -> Spec:
    return load_spec(path)


def c(name: str, method: str) -> Terminal:
    return Terminal("client", name, method)


def s(name: str, method: str) -> Terminal:
    return Terminal("server", name, method)


def test_the_0_9_1_grammars_parse_to_what_the_file_says() -> None:
    spec = load(SPEC_091)
    prods = {p.name: p for cl in spec.classes for p in cl.productions}
    assert list(prods) == ["connection", "open-connection", "challenge", "use-connection", "close-connection",
                           "channel", "open-channel", "use-channel", "close-channel", "exchange", "queue", "basic",
                           "tx"]
    assert prods["connection"].expr == Sequence((NonTerminal("open-connection", "connection"),
                                                 Repeat(NonTerminal("use-connection", "connection"), 0, None),
                                                 NonTerminal("close-connection", "connection")))
    assert prods["open-connection"].expr == Sequence((
        Terminal("client", "protocol-header", None), s("start", "connection.start"),
        c("start-ok", "connection.start-ok"), Repeat(NonTerminal("challenge", "connection"), 0, None),
        s("tune", "connection.tune"), c("tune-ok", "connection.tune-ok"), c("open", "connection.open"),
        s("open-ok", "connection.open-ok")))
    assert prods["close-channel"].expr == Choice((
        Sequence((c("close", "channel.close"), s("close-ok", "channel.close-ok"))),
        Sequence((s("close", "channel.close"), c("close-ok", "channel.close-ok")))))
    get = Sequence((c("get", "basic.get"), Choice((Sequence((s("get-ok", "basic.get-ok"), NonTerminal("content", None))),
                                                   s("get-empty", "basic.get-empty")))))
    basic = prods["basic"].expr
    assert isinstance(basic, Choice) and get in basic.options
    assert Sequence((c("publish", "basic.publish"), NonTerminal("content", None))) in basic.options
    assert NonTerminal("functional-class", None) in prods["use-channel"].expr.options  # type: ignore[union-attr]
    # each production's location is the line it starts on in the file
    lines = Path(SPEC_091).read_text().splitlines()
    for p in prods.values():
        assert p.loc.line is not None and re.match(rf"\s*{re.escape(p.name)}\s+=", lines[p.loc.line - 1]), p
    assert not [w for w in spec.warnings if w.code in ("W013", "W014", "W015", "W016", "W017", "W018")]


def test_format_writes_the_notation_back() -> None:
    spec = load(SPEC_091)
    basic = next(p for cl in spec.classes for p in cl.productions if p.name == "basic")
    text = format_expr(basic.expr)
    assert text.startswith("C:QOS S:QOS-OK / C:CONSUME S:CONSUME-OK / ")
    assert "C:GET ( S:GET-OK content / S:GET-EMPTY )" in text


def test_the_bundled_0_9_grammar_defects_are_warnings_with_their_lines() -> None:
    spec = load(BUNDLED)
    found = {(w.code, w.location.line) for w in spec.warnings if w.code in ("W015", "W017")}
    lines = Path(BUNDLED).read_text().splitlines()
    bar = next(i + 1 for i, ln in enumerate(lines) if re.match(r"\s*open-connection\s+=", ln))
    tunnel = next(i + 1 for i, ln in enumerate(lines) if re.match(r"\s*tunnel\s+=", ln))
    assert found == {("W015", bar), ("W017", tunnel)}
    # "C:OPEN S:OPEN-OK | S:REDIRECT" is read as the reply choice its authors meant, not as splitting the production
    open_conn = next(p for cl in spec.classes for p in cl.productions if p.name == "open-connection")
    assert format_expr(open_conn.expr).endswith("C:OPEN ( S:OPEN-OK / S:REDIRECT )")


def _defects(tmp_path: Path, grammar: str) -> list[Diagnostic]:
    text = Path(SPEC_091).read_text()
    start = text.index('<doc type="grammar">', text.index('<class name="tx"'))
    end = text.index("</doc>", start)
    path = tmp_path / "g.xml"
    path.write_text(text[:start] + '<doc type="grammar">\n' + grammar + "\n    " + text[end:])
    return [w for w in load(str(path)).warnings if w.code.startswith("W01") and w.code >= "W013"]


@pytest.mark.parametrize("grammar,code,says", [
    ("tx = C:SELECT ( S:SELECT-OK", "W013", "does not parse"),
    ("tx = C:SELECT S:SELECT-OK\nbasic = C:QOS", "W014", "defined twice"),
    ("tx = C:SELECT S:SELECT-OK | S:NOPE", "W015", "'|'"),
    ("tx = C:SELECT S:SELECTED", "W016", "does not define"),
    ("tx = S:SELECT C:SELECT-OK", "W017", "the server send tx.select"),
    ("tx = C:SELECT S:SELECT-OK nowhere", "W018", "'nowhere', which no grammar defines"),
])
def test_each_grammar_defect_is_a_warning(grammar: str, code: str, says: str, tmp_path: Path) -> None:
    found = [w for w in _defects(tmp_path, grammar) if w.code == code]
    assert found and says in found[0].message, found
    assert len(found) == (2 if code == "W017" else 1)  # W017: both select and select-ok are the wrong way round
    assert found[0].location.line is not None and found[0].location.file.endswith("g.xml")


def test_specs_without_grammars_load_and_plan_the_same_negotiation() -> None:
    stripped = load(str(resolve("amqp-specs:0-9-1-rabbit")))
    full = load(SPEC_091_EXT)
    assert not any(cl.productions for cl in stripped.classes)
    a, b = behaviour_plan(stripped), behaviour_plan(full)
    assert not a.from_grammar and b.from_grammar and b.conflicts == ()
    # Debian's stripped file lost basic.recover's synchronous="1" and <response>: recover-ok is placed by its name
    assert a.conflicts == ("no <response> or grammar names basic.recover-ok: taken as basic.recover's reply (its name)",)
    steps = [(st.sender, st.method, st.repeats) for st in a.negotiation]
    assert steps == [(None, None, False), ("server", "connection.start", False), ("client", "connection.start-ok", False),
                     ("server", "connection.secure", True), ("client", "connection.secure-ok", True),
                     ("server", "connection.tune", False), ("client", "connection.tune-ok", False),
                     ("client", "connection.open", False), ("server", "connection.open-ok", False)]
    assert a.negotiation == b.negotiation
    # the same per-method facts either way (the grammar only cross-checks them) but the flag the file lost, and
    # the grammar production that writes each method, which only the grammar gives
    differ = [(x.method, x.synchronous, y.synchronous) for x, y in zip(a.methods, b.methods, strict=True)
              if x != replace(y, production=None)]
    assert differ == [("basic.recover", False, True)]
    assert all(x.production is None for x in a.methods)
    written = {y.method: y.production for y in b.methods}
    assert (written["connection.start"], written["connection.secure-ok"], written["connection.close-ok"]) == (
        "open-connection", "challenge", "close-connection")
    assert (written["channel.open-ok"], written["channel.flow"], written["exchange.delete-ok"]) == (
        "open-channel", "use-channel", "exchange")


def test_grammar_pairs_and_responses_disagree_only_where_the_files_do() -> None:
    """The official 0-9-1 grammar has C:RECOVER S:RECOVER-OK while its basic.recover names no response (RabbitMQ's
    extended file adds synchronous="1" and the response); 0-9's exchange.bound-ok answers nothing by <response>."""
    conflicts = {path: behaviour_plan(load(path)).conflicts for path in (BUNDLED, SPEC_091, SPEC_091_EXT)}
    assert conflicts == {
        BUNDLED: ("no <response> or grammar names exchange.bound-ok: taken as exchange.bound's reply (its name)",),
        SPEC_091: ("the grammar answers basic.recover with basic.recover-ok, which <response> does not",),
        SPEC_091_EXT: (),
    }
    m = {x.method: x for x in behaviour_plan(load(SPEC_091)).methods}
    assert m["basic.recover"].replies == ("basic.recover-ok",) and m["basic.recover-ok"].answers == ("basic.recover",)


def test_the_plan_of_rabbitmqs_spec() -> None:
    plan = behaviour_plan(load(SPEC_091_EXT))
    m = {x.method: x for x in plan.methods}
    assert m["basic.get"].replies == ("basic.get-ok", "basic.get-empty") and m["basic.get"].synchronous
    assert m["basic.get-ok"].answers == ("basic.get",) and m["basic.get-ok"].content
    assert m["basic.publish"].content and not m["basic.publish"].synchronous and m["basic.publish"].senders == ("client",)
    assert m["basic.deliver"].senders == ("server",) and m["basic.deliver"].content
    assert m["basic.ack"].senders == ("client", "server")  # publisher confirms: the server acks too
    assert m["basic.nack"].senders == ("client", "server")
    assert m["basic.cancel"].senders == ("client", "server")  # RabbitMQ's server-sent cancel
    assert m["confirm.select"].replies == ("confirm.select-ok",) and m["confirm.select"].no_wait == "nowait"
    assert m["queue.declare"].no_wait == "no-wait" and m["queue.declare"].replies == ("queue.declare-ok",)
    assert m["connection.start"].channel == "zero" and m["channel.open"].channel == "nonzero"
    assert m["channel.open-ok"].opens == "channel" and m["connection.open-ok"].opens == "connection"
    assert {x.method for x in plan.methods if x.closes} == {"connection.close", "connection.close-ok",
                                                            "channel.close", "channel.close-ok"}
    assert {x.method for x in plan.methods if x.negotiation} == {
        "connection.start", "connection.start-ok", "connection.secure", "connection.secure-ok", "connection.tune",
        "connection.tune-ok", "connection.open", "connection.open-ok"}
    codes = {v.kind: (v.code, v.hard) for v in plan.violations}
    assert codes == {"malformed-frame": (501, True), "bad-heartbeat": (501, True), "bad-field": (502, True),
                     "out-of-sequence": (503, True), "channel-not-open": (504, True),
                     "unexpected-frame": (505, True), "not-sendable": (540, True)}
    assert len(plan.methods) == sum(len(cl.methods) for cl in load(SPEC_091_EXT).classes)


def test_the_recovery_plan_reads_the_spec() -> None:
    """What a recovering client replays, against the 0-9-1 text: exchange.declare/delete, queue.declare/delete
    (declare-ok names a server-named queue), exchange.bind/unbind and queue.bind/unbind identified by their
    names, routing key and arguments, basic.consume/cancel by the consumer tag (consume-ok names a server-made one);
    "passive" makes a declare a check; queue.delete: "all consumers are cancelled"; qos, confirm and tx set a
    channel's mode; 403 ACCESS_REFUSED and 530 NOT_ALLOWED refuse a login and a virtual host."""
    r = behaviour_plan(load(SPEC_091_EXT)).recovery
    got = [(d.method, d.kind, d.key, d.refers, d.removal, d.check, d.named_by) for d in r.declarations]
    assert got == [
        ("exchange.declare", "exchange", ("exchange",), (), "exchange.delete", "passive", None),
        ("queue.declare", "queue", ("queue",), (), "queue.delete", "passive", ("queue.declare-ok", "queue")),
        ("exchange.bind", "exchange-binding", ("destination", "source", "routing-key", "arguments"),
         (("destination", "exchange"), ("source", "exchange")), "exchange.unbind", None, None),
        ("queue.bind", "queue-binding", ("queue", "exchange", "routing-key", "arguments"),
         (("queue", "queue"), ("exchange", "exchange")), "queue.unbind", None, None),
        ("basic.consume", "consumer", ("consumer-tag",), (("queue", "queue"),), "basic.cancel", None,
         ("basic.consume-ok", "consumer-tag")),
    ]
    assert {x.method: (x.kind, x.key, x.cascades) for x in r.removals} == {
        "exchange.delete": ("exchange", ("exchange",), ("exchange-binding", "queue-binding")),
        "queue.delete": ("queue", ("queue",), ("queue-binding", "consumer")),
        "exchange.unbind": ("exchange-binding", ("destination", "source", "routing-key", "arguments"), ()),
        "queue.unbind": ("queue-binding", ("queue", "exchange", "routing-key", "arguments"), ()),
        "basic.cancel": ("consumer", ("consumer-tag",), ()),
    }
    # exclusive: "deleted when that connection closes"; a server-named queue with neither bit outlives it
    assert {d.method: d.tied for d in r.declarations if d.tied} == {
        "exchange.declare": ("auto-delete",), "queue.declare": ("exclusive", "auto-delete"),
        "basic.consume": ("exclusive",)}
    assert r.channel_settings == ("basic.qos", "confirm.select", "tx.select")
    assert [(x.constant, x.code) for x in r.refusals] == [("access-refused", 403), ("not-allowed", 530)]
    # 0-9: access tickets are no part of what is declared; no exchange bindings, no confirms
    r9 = behaviour_plan(load(str(resolve("0-9")))).recovery
    assert [d.method for d in r9.declarations] == ["exchange.declare", "queue.declare", "queue.bind", "basic.consume"]
    assert r9.declarations[2].key == ("queue", "exchange", "routing-key", "arguments")
    assert r9.channel_settings == ("basic.qos", "tx.select")
    # 0-8 has no queue.unbind: a binding is still identified by what it names and carries
    r8 = behaviour_plan(load(str(resolve("amqp-specs:0-8")))).recovery
    bind = next(d for d in r8.declarations if d.method == "queue.bind")
    assert bind.removal is None and bind.key == ("queue", "exchange", "routing-key", "arguments")


def test_every_spec_the_targets_cover_has_a_plan() -> None:
    for name in ("0-8", "0-8-qpid", "0-9", "0-9-qpid", "0-9-1", "0-9-1-qpid", "0-9-1-rabbit"):
        plan = behaviour_plan(load(str(resolve(f"amqp-specs:{name}"))))
        assert plan.negotiation[1].method == "connection.start" and plan.negotiation[-1].method == "connection.open-ok"
        assert all(v.code for v in plan.violations), name  # every kind has a reply code in every spec


def test_inspect_json_carries_the_productions_and_the_plan() -> None:
    out = subprocess.run([sys.executable, "-m", "amqgen", "inspect", "--json", "--spec", SPEC_091],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    doc = json.loads(out)
    basic = next(cl for cl in doc["spec"]["classes"] if cl["name"] == "basic")
    assert basic["productions"][0]["name"] == "basic" and basic["productions"][0]["expr"]["kind"] == "choice"
    get = next(x for x in doc["behaviour"]["methods"] if x["method"] == "basic.get")
    assert get["replies"] == ["basic.get-ok", "basic.get-empty"] and get["key"] == 60 << 16 | 70
    assert doc["behaviour"]["recovery"]["declarations"][1]["named_by"] == ["queue.declare-ok", "queue"]


def test_the_capabilities_a_client_advertises() -> None:
    """RabbitMQ's client capabilities where the spec has what each needs (issue 41: without
    authentication_failure_close a refused login is a bare socket close, not 403): the extended spec lacks
    connection.blocked/unblocked (tests/data/librabbitmq-extras.xml adds them, and with them the capability); the
    0-9-1 text has no confirms, nacks, exchange bindings or server-sent cancel; 0-9 neither."""
    ext = ("publisher_confirms", "exchange_exchange_bindings", "basic.nack", "consumer_cancel_notify")
    assert behaviour_plan(load(SPEC_091_EXT)).capabilities == (*ext, "authentication_failure_close")
    extras = load_spec(SPEC_091_EXT, overlays=[ROOT / "tests" / "data" / "librabbitmq-extras.xml"])
    assert behaviour_plan(extras).capabilities == (*ext, "connection.blocked", "authentication_failure_close")
    assert behaviour_plan(load(SPEC_091)).capabilities == ("authentication_failure_close",)
    assert behaviour_plan(load(str(resolve("0-9")))).capabilities == ("authentication_failure_close",)
