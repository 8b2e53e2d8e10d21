"""The C target's checks against the Python target's checks.validate, differentially: for every method of the
bundled 0-9 spec (every assert kind: notnull, null, length, regexp, syntax, le, ne) and of RabbitMQ's 0-9-1
extended spec that has asserts, each asserted field takes each of a set of values on either side of the
spec's limits (empty, 127 / 128 / 255 octets, multi-byte UTF-8, the characters the broken W007 regexps get
wrong, paths, 0, values around a negotiated limit of 10), under each of the three policies. Both targets must
agree on every case: valid, or the reply code. The rules registry is exercised too.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from ctarget import STRICT, compile_c, render, run
from javatarget import cases
from pytarget import ROOT, SPEC_091_EXT, import_package

from amqgen.amqp0.lower import load_spec
from amqgen.amqp0.policy import POLICIES, checks
from amqgen.naming import Naming
from amqgen.render import _c_string

STRINGS = ["", "x", "a-b", "a@b", "a/b", "a\nb", "ab\n", "/a\n", "/", "//", "/vhost", "/a/b", "/a/", "amq.direct",
           "ok.name:1", "x" * 127, "x" * 128, "\u00e9" * 64, "x" * 255]
INTS = [0, 1, 5, 10, 11, 255]
SPECS = {"bundled-0-9": str(ROOT / "spec" / "amqp0-9.xml"), "bundled-0-9-1-extended": SPEC_091_EXT}


@pytest.mark.parametrize("key", list(SPECS))
def test_c_checks_agree_with_the_python_target(key: str, gen_root: Path, tmp_path: Path) -> None:
    spec_path = SPECS[key]
    spec = load_spec(Path(spec_path))
    pkg: ModuleType = import_package(spec_path, "cchecks_" + key.replace("-", "_"), gen_root)
    case = next(c for c in cases() if c.key == key)
    tree = tmp_path / "tree"
    proc = render(case, tree)
    assert proc.returncode == 0, proc.stderr
    py, c = Naming("python"), Naming("c", prefix="amqpc")
    refs = sorted({ch.ref for m in spec.methods for ch in checks(m) if ch.kind == "le" and ch.ref})
    rows: list[tuple[str, str, str, object]] = []
    for m in spec.methods:
        for f in sorted({ch.field.name: ch.field for ch in checks(m)}.values(), key=lambda f: f.name):
            if f.type == "table":
                continue
            values: list[object] = (STRINGS if f.type == "shortstr" else ["", "x"] if f.type == "longstr"
                                    else [True, False] if f.type == "bit" else INTS)
            rows += [(m.full_name, policy, f.name, v) for v in values for policy in POLICIES]
    assert len(rows) > 300

    def python_outcome(name: str, policy: str, field: str, value: object) -> str:
        m = spec.method_by_name[name]
        f = next(x for x in m.fields if x.name == field)
        v = value.encode() if f.type == "longstr" else value  # type: ignore[union-attr]
        method = pkg.methods.METHODS_BY_NAME[name](**{py.member(field): v})
        try:
            pkg.checks.validate(method, negotiated={r: 10 for r in refs}, policy=policy)
        except pkg.exceptions.ReplyError as e:
            return str(e.reply_code)
        return "0"

    lines = ['#include <stdio.h>', '#include <string.h>', '#include "amqpc.h"', "int main(void) {",
             "  amqpc_method_t m;", "  amqpc_negotiated_t n;", "  const char *why;", "  memset(&n, 0, sizeof n);"]
    lines += [f"  n.{c.snake(r.replace('.', '-'))} = 10;" for r in refs]
    for name, policy, field, value in rows:
        m = spec.method_by_name[name]
        f = next(x for x in m.fields if x.name == field)
        member = c.snake(m.class_name, m.name)
        if isinstance(value, str):
            raw = value.encode()
            cvalue = f"(amqpc_bytes_t){{(const uint8_t *){_c_string(value)}, {len(raw)}}}"
        else:
            cvalue = ("true" if value else "false") if isinstance(value, bool) else f"{value}u"
        lines += ["  memset(&m, 0, sizeof m);", f"  m.id = {c.constant(m.class_name, m.name)};",
                  f"  m.u.{member}.{c.member(field)} = {cvalue};",
                  f"  printf(\"%d\\n\", amqpc_method_check(&m, AMQPC_POLICY_{policy.upper()}, &n, &why));"]
    lines += ["  return 0;", "}"]
    program = tmp_path / "checks.c"
    program.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "checks"
    built = compile_c("gcc", tree, exe, STRICT, tests=False, extra=(str(program),))
    assert built.returncode == 0, built.stderr[-3000:]
    out = run(exe)
    assert out.returncode == 0, out.stderr
    got = out.stdout.split()
    assert len(got) == len(rows)
    wrong = [(r, g, want) for r, g in zip(rows, got, strict=True) if g != (want := python_outcome(*r))]
    assert not wrong, f"{len(wrong)} of {len(rows)} differ, e.g. {wrong[:5]}"
    assert {"0", "502"} <= set(got), "both outcomes occur"


def test_rules_registry(tmp_path: Path) -> None:
    case = next(c for c in cases() if c.key == "bundled-0-9-1-extended")
    spec = load_spec(case.path)
    rules = spec.all_rules()
    tree = tmp_path / "tree"
    assert render(case, tree).returncode == 0
    first = rules[0]
    must = next(r for r in rules if r.level == "MUST" and r.on_failure_code)
    program = tmp_path / "rules.c"
    program.write_text(
        '#include <stdio.h>\n#include <string.h>\n#include "amqpc.h"\n'
        "static int calls;\n"
        "static int pass_rule(const amqpc_rule_t *r, void *ctx) { (void)r; (void)ctx; calls++; return 0; }\n"
        "static int fail_rule(const amqpc_rule_t *r, void *ctx) { (void)ctx; calls++; return r->on_failure_code; }\n"
        "int main(void) {\n"
        "  amqpc_rule_registry_t reg; const amqpc_rule_t *failed = NULL, *r;\n"
        "  amqpc_rule_registry_init(&reg);\n"
        f"  r = amqpc_rule_find({_c_string(must.id)});\n"
        "  if (r == NULL) return 1;\n"
        "  printf(\"%u %s %s %s %d\\n\", (unsigned)amqpc_rule_count, r->id, r->level, r->on_failure, r->on_failure_code);\n"
        "  if (amqpc_rule_register(&reg, \"no.such.rule\", pass_rule) != AMQPC_ERR_UNKNOWN_ID) return 2;\n"
        f"  if (amqpc_rule_register(&reg, {_c_string(first.id)}, pass_rule) != AMQPC_OK) return 3;\n"
        f"  if (amqpc_rule_register(&reg, {_c_string(must.id)}, fail_rule) != AMQPC_OK) return 4;\n"
        "  int rc = amqpc_rule_run_all(&reg, NULL, &failed);\n"
        "  printf(\"%d %s %d\\n\", rc, failed ? failed->id : \"-\", calls);\n"
        "  return 0;\n}\n")
    exe = tmp_path / "rules"
    built = compile_c("gcc", tree, exe, STRICT, tests=False, extra=(str(program),))
    assert built.returncode == 0, built.stderr[-3000:]
    out = run(exe)
    assert out.returncode == 0, out.stdout + out.stderr
    code = must.on_failure_code
    calls = 2 if first.id != must.id else 1
    assert out.stdout == (f"{len(rules)} {must.id} MUST {must.on_failure} {code}\n"
                          f"{code} {must.id} {calls}\n"), out.stdout
