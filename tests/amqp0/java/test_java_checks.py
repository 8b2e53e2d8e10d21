"""The Java target's Checks against the Python target's checks.validate, differentially: for every method of
RabbitMQ's 0-9-1 extended spec that has asserts, each asserted field takes each of a set of values chosen to
sit on either side of the spec's limits (empty, 127 / 128 / 255 octets, multi-byte UTF-8, the characters the
broken W007 regexps get wrong, 0, values around a negotiated channel-max of 10), under each of the three
policies. Both targets must agree on every case: valid, or the reply code raised. The Rules registry is
exercised too (an unknown rule id is refused; coverage counts a registered check).
"""

from __future__ import annotations

import subprocess
from types import ModuleType

from javatarget import Build, tool
from pytarget import SPEC_091_EXT

from amqgen.amqp0.lower import load_spec
from amqgen.amqp0.policy import POLICIES, checks
from amqgen.naming import Naming

STRINGS = ["", "x", "a-b", "a@b", "a/b", "/", "/vhost", "amq.direct", "ok.name:1", "x" * 127, "x" * 128,
           "\u00e9" * 64, "x" * 255]
INTS = [0, 1, 5, 10, 11, 255]


def test_java_checks_agree_with_the_python_target(java_build: Build, amqp091: ModuleType) -> None:
    spec = load_spec(SPEC_091_EXT)
    py = Naming("python")
    cases: list[tuple[str, str, dict[str, object]]] = []
    for m in spec.methods:
        fields = sorted({c.field.name: c.field for c in checks(m)}.values(), key=lambda f: f.name)
        for f in fields:
            if f.type == "table":
                continue
            values: list[object] = (STRINGS if f.type == "shortstr" else ["", "x"] if f.type == "longstr"
                                    else [True, False] if f.type == "bit" else INTS)
            for v in values:
                for policy in POLICIES:
                    cases.append((m.full_name, policy, {f.name: v}))
    assert len(cases) > 500

    def python_outcome(name: str, policy: str, values: dict[str, object]) -> str:
        m = spec.method_by_name[name]
        kwargs = {py.member(f.name): values[f.name].encode() if f.type == "longstr" else values[f.name]  # type: ignore[union-attr]
                  for f in m.fields if f.name in values}
        method = amqp091.methods.METHODS_BY_NAME[name](**kwargs)
        try:
            amqp091.checks.validate(method, negotiated={"connection.tune.channel-max": 10}, policy=policy)
        except amqp091.exceptions.ReplyError as e:
            return str(e.reply_code)
        return "ok"

    def line(name: str, policy: str, values: dict[str, object]) -> str:
        fields = "\t".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in values.items())
        return f"{name}\t{policy.upper()}\t{fields}"

    proc = subprocess.run(
        [tool("java", "openjdk-17-jdk-headless"), "-cp", java_build.classpath(), "ChecksRun"],
        input="\n".join(line(*c) for c in cases) + "\n", capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout.splitlines()
    got, tail = out[: len(cases)], out[len(cases):]
    want = [python_outcome(*c) for c in cases]
    differ = [f"{c}: java {g}, python {w}" for c, g, w in zip(cases, got, want, strict=True) if g != w]
    assert not differ, f"{len(differ)} of {len(cases)} cases differ:\n" + "\n".join(differ[:30])
    assert {"ok", "502"} <= set(got), "the cases reach both outcomes"
    # the policies really differ on these cases (cases come in rabbitmq, portable, spec triples). Portable and
    # spec agree on this spec: its flagged regexps put the hyphen after a range, which both regexp engines
    # already read as a literal; they differ on the bundled 0-9's /-_ range, which this spec does not have.
    triples = [got[i : i + 3] for i in range(0, len(got), 3)]
    assert any(t[0] != t[1] for t in triples)
    assert tail == ["unknown rule refused", f"1 of {len(spec.all_rules())} rules have checks"]
