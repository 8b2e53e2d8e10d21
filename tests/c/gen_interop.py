"""Write the per-method part of the librabbitmq interop program (tests/amqp0/c/test_c_interop.py).

librabbitmq's own header (amqp_framing.h) says which methods and basic properties it implements,
their fields in wire order and their C types; the spec (through amqgen's model and the C naming
layer, the API contract of the generated library) says our struct members. Fields are paired by
position and their wire types must agree, so a field missing or out of order on either side stops
the generation with a clear message. The C written here only moves values and compares them; the
random values and the table comparison are hand-written in interop_rt.h.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from amqgen.amqp0.lower import load_spec
from amqgen.amqp0.model import Spec
from amqgen.naming import Naming

HEADER = Path("/usr/include/amqp_framing.h")
#: librabbitmq's C type for each of our wire types
LIB_TYPE = {"octet": "uint8_t", "short": "uint16_t", "long": "uint32_t", "longlong": "uint64_t",
            "timestamp": "uint64_t", "bit": "amqp_boolean_t", "shortstr": "amqp_bytes_t",
            "longstr": "amqp_bytes_t", "table": "amqp_table_t"}
BITS = {"octet": 8, "short": 16, "long": 32, "longlong": 64, "timestamp": 64}
CTYPE = {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uint64_t"}


@dataclass(frozen=True)
class LibStruct:
    name: str  # amqp_basic_publish_t
    fields: tuple[tuple[str, str], ...]  # (C type, member)


def lib_structs(text: str) -> dict[str, LibStruct]:
    out = {}
    for body, name in re.findall(r"typedef struct \w+_t_ \{(.*?)\} (amqp_\w+_t);", text, re.DOTALL):
        fields = tuple(re.findall(r"^\s*(\w+)\s+(\w+);", body, re.MULTILINE))
        out[name] = LibStruct(name, fields)
    return out


def lib_method_ids(text: str) -> dict[int, str]:
    """method number -> struct stem (connection_start), from the AMQP_*_METHOD defines."""
    found = re.findall(r"#define AMQP_(\w+)_METHOD\s*\\?\s*\(\(amqp_method_number_t\)(0x[0-9A-Fa-f]+)\)", text)
    return {int(v, 16): name.lower() for name, v in found}


def generate(spec_path: Path, prefix: str = "ag", overlays: tuple[Path, ...] = ()) -> tuple[str, int]:
    """C source of the per-method checks and the number of methods it covers."""
    text = HEADER.read_text()
    structs = lib_structs(text)
    ids = lib_method_ids(text)
    spec: Spec = load_spec(spec_path, overlays=overlays)
    n = Naming("c", prefix)
    pu = prefix.upper()
    out: list[str] = []
    names: list[str] = []
    for m in spec.methods:
        num = (m.class_index << 16) | m.index
        if num not in ids:
            continue  # librabbitmq does not implement it
        stem = ids[num]
        lib = structs[f"amqp_{stem}_t"]
        lib_fields = [f for f in lib.fields if f[1] != "dummy"]  # librabbitmq pads empty structs
        if len(lib_fields) != len(m.fields):
            raise SystemExit(f"{m.full_name}: librabbitmq has {len(lib_fields)} fields, the spec {len(m.fields)}")
        ours_t = n.type(m.class_name, m.name)
        fn = n.function(m.class_name, m.name)
        union = n.snake(m.class_name, m.name)
        fill, cmp_lib, cmp_ours = [], [], []
        for i, (f, (ltype, lname)) in enumerate(zip(m.fields, lib_fields, strict=True)):
            if LIB_TYPE[f.type] != ltype:
                raise SystemExit(f"{m.full_name}.{f.name}: librabbitmq {ltype} {lname}, the spec {f.type}")
            o = n.member(f.name)
            where = f'"{m.full_name}.{f.name}"'
            if f.type in BITS:
                bits = BITS[f.type]
                fill.append(f"  a.{lname} = o.{o} = ({CTYPE[bits]})rnd_int(r, round, {bits});")
                cmp_lib.append(f"  CHECK(d.{o} == a.{lname}, {where});")
                cmp_ours.append(f"  CHECK(ld->{lname} == o.{o}, {where});")
            elif f.type == "bit":
                fill.append(f"  o.{o} = round == 0 || (rnd(r) & 1); a.{lname} = o.{o};")
                cmp_lib.append(f"  CHECK(d.{o} == (a.{lname} != 0), {where});")
                cmp_ours.append(f"  CHECK((ld->{lname} != 0) == o.{o}, {where});")
            elif f.type in ("shortstr", "longstr"):
                fill.append(f"  fill_{f.type}(r, round, &pool, &a.{lname}, &o.{o});")
                cmp_lib.append(f"  CHECK(same_bytes(d.{o}.bytes, d.{o}.len, a.{lname}.bytes, a.{lname}.len), {where});")
                cmp_ours.append(
                    f"  CHECK(same_bytes(ld->{lname}.bytes, ld->{lname}.len, o.{o}.bytes, o.{o}.len), {where});")
            else:  # table
                fill.append(f"  fill_table(r, round, &pool, &a.{lname}, &o.{o}, tbuf + {i} * TCAP, TCAP);")
                cmp_lib.append(f"  CHECK(cmp_table(&a.{lname}, d.{o}, {where}), {where});")
                cmp_ours.append(f"  CHECK(cmp_table(&ld->{lname}, o.{o}, {where}), {where});")
        names.append(m.full_name)
        out.append(f"""
/* {m.full_name} */
static void check_{stem}(rng_t *r, int round) {{
  amqp_pool_t pool;
  amqp_{stem}_t a, *ld = NULL;
  {ours_t} o, d;
  {prefix}_method_t om, dm;
  static uint8_t tbuf[{max(1, len(m.fields))} * TCAP], lbuf[BUFCAP], obuf[BUFCAP], mbuf[BUFCAP];
  size_t olen = 0, mlen = 0;
  int llen, st, enc;
  (void)tbuf;
  (void)r;
  (void)round;
  memset(&a, 0, sizeof a);
  memset(&o, 0, sizeof o);
  memset(&d, 0, sizeof d);
  init_amqp_pool(&pool, 4096);
{chr(10).join(fill)}
  /* both encoders: the same octets */
  llen = amqp_encode_method(0x{num:08X}, &a, abytes(lbuf, sizeof lbuf));
  CHECK(llen >= 0, "{m.full_name}: amqp_encode_method %d", llen);
  enc = st = {fn}_encode(&o, obuf, sizeof obuf, &olen);
  CHECK(st == {pu}_OK, "{m.full_name}: encode %s", {prefix}_status_name(st));
  if (llen >= 0 && st == {pu}_OK) {{
    CHECK(same_bytes(lbuf, (size_t)llen, obuf, olen), "{m.full_name}: octets differ");
    if (!same_bytes(lbuf, (size_t)llen, obuf, olen)) hexdiff("{m.full_name}", lbuf, (size_t)llen, obuf, olen);
  }}
  if (g_mutate && llen > 0) lbuf[llen - 1] ^= 1; /* self-test: the last field's value now differs */
  if (g_mutate && olen > 0) obuf[olen - 1] ^= 1;
  /* the dispatching encoder: class id, method id, then the same arguments */
  memset(&om, 0, sizeof om);
  om.id = {n.constant(m.class_name, m.name)};
  om.u.{union} = o;
  st = {prefix}_method_encode(&om, mbuf, sizeof mbuf, &mlen);
  CHECK(st == {pu}_OK && mlen == olen + 4 && (g_mutate || same_bytes(mbuf + 4, mlen - 4, obuf, olen)) && mbuf[0] == {m.class_index >> 8} && mbuf[1] == {m.class_index & 0xFF}
        && mbuf[2] == {m.index >> 8} && mbuf[3] == {m.index & 0xFF},
        "{m.full_name}: method_encode");
  CHECK(om.id == 0x{num:08X}u, "{m.full_name}: method id constant");
  CHECK(strcmp({prefix}_method_name(0x{num:08X}u), "{m.full_name}") == 0, "{m.full_name}: method_name");
  CHECK({prefix}_method_has_content(0x{num:08X}u) == (amqp_method_has_content(0x{num:08X}) != 0), "has_content");
  /* librabbitmq's octets, decoded by ours: the values librabbitmq was given */
  if (llen >= 0) {{
    st = {fn}_decode(lbuf, (size_t)llen, &d);
    CHECK(st == {pu}_OK, "{m.full_name}: decode of librabbitmq's octets: %s", {prefix}_status_name(st));
    if (st == {pu}_OK) {{
{chr(10).join("  " + c for c in cmp_lib)}
    }}
    memset(&d, 0, sizeof d);
    memcpy(mbuf, "\\x{m.class_index >> 8:02x}\\x{m.class_index & 0xFF:02x}\\x{m.index >> 8:02x}\\x{m.index & 0xFF:02x}", 4);
    memcpy(mbuf + 4, lbuf, (size_t)llen);
    memset(&dm, 0, sizeof dm);
    st = {prefix}_method_decode(mbuf, (size_t)llen + 4, &dm);
    CHECK(st == {pu}_OK && dm.id == 0x{num:08X}u, "{m.full_name}: method_decode %s", {prefix}_status_name(st));
    if (st == {pu}_OK) {{
      d = dm.u.{union};
{chr(10).join("  " + c for c in cmp_lib)}
    }}
  }}
  /* our octets, decoded by librabbitmq: the values we were given */
  if (enc == {pu}_OK) {{
    st = amqp_decode_method(0x{num:08X}, &pool, abytes(obuf, olen), (void **)&ld);
    CHECK(st == 0 && ld != NULL, "{m.full_name}: amqp_decode_method %d", st);
    if (st == 0 && ld != NULL) {{
{chr(10).join("  " + c for c in cmp_ours)}
    }}
  }}
  empty_amqp_pool(&pool);
}}
""")
    calls = "\n".join(f"  check_{ids[(m.class_index << 16) | m.index]}(r, round);"
                      for m in spec.methods if (m.class_index << 16) | m.index in ids)
    out.append(f"""
static int n_methods = {len(names)};
static void check_all_methods(rng_t *r, int round) {{
{calls}
}}
""")
    out.append(properties(spec, structs, text, n, prefix))
    return "".join(out), len(names)


def properties(spec: Spec, structs: dict[str, LibStruct], text: str, n: Naming, prefix: str) -> str:
    """Basic properties: every subset librabbitmq can express, values as for methods."""
    cls = spec.class_by_name["basic"]
    lib = structs["amqp_basic_properties_t"]
    lib_fields = [f for f in lib.fields if f[1] != "_flags"]
    if len(lib_fields) != len(cls.properties):
        raise SystemExit(f"basic properties: librabbitmq {len(lib_fields)}, the spec {len(cls.properties)}")
    pu = prefix.upper()
    fill, cmp_lib, cmp_ours = [], [], []
    for i, (p, (ltype, lname)) in enumerate(zip(cls.properties, lib_fields, strict=True)):
        if LIB_TYPE[p.type] != ltype:
            raise SystemExit(f"basic.{p.name}: librabbitmq {ltype} {lname}, the spec {p.type}")
        flag_macro = f"AMQP_BASIC_{lname.upper()}_FLAG"
        if flag_macro not in text:
            raise SystemExit(f"{flag_macro} missing from {HEADER}")
        ours_flag = n.constant("basic", p.name, "flag")
        o = n.member(p.name)
        where = f'"basic.{p.name}"'
        fill.append(f"  if (round == 0 || (round > 1 && (rnd(r) & 1))) {{ a._flags |= {flag_macro}; o.flags |= {ours_flag};")
        if p.type in BITS:
            bits = BITS[p.type]
            fill.append(f"    a.{lname} = o.{o} = ({CTYPE[bits]})rnd_int(r, round, {bits}); }}")
            cmp_lib.append(f"  CHECK(d.{o} == a.{lname}, {where});")
            cmp_ours.append(f"  CHECK(ld->{lname} == o.{o}, {where});")
        elif p.type in ("shortstr", "longstr"):
            fill.append(f"    fill_{p.type}(r, round, &pool, &a.{lname}, &o.{o}); }}")
            cmp_lib.append(f"  CHECK(same_bytes(d.{o}.bytes, d.{o}.len, a.{lname}.bytes, a.{lname}.len), {where});")
            cmp_ours.append(f"  CHECK(same_bytes(ld->{lname}.bytes, ld->{lname}.len, o.{o}.bytes, o.{o}.len), {where});")
        elif p.type == "table":
            fill.append(f"    fill_table(r, round, &pool, &a.{lname}, &o.{o}, tbuf + {i} * TCAP, TCAP); }}")
            cmp_lib.append(f"  CHECK(cmp_table(&a.{lname}, d.{o}, {where}), {where});")
            cmp_ours.append(f"  CHECK(cmp_table(&ld->{lname}, o.{o}, {where}), {where});")
        else:
            raise SystemExit(f"basic.{p.name}: type {p.type} not handled")
        # a field is compared only when its flag is set on both sides
        cmp_lib[-1] = f"  if (a._flags & {flag_macro}) {cmp_lib[-1].strip()}"
        cmp_ours[-1] = f"  if (o.flags & {ours_flag}) {cmp_ours[-1].strip()}"
        flag_pairs = f"  CHECK(((a._flags & {flag_macro}) != 0) == ((d.flags & {ours_flag}) != 0), {where});"
        cmp_lib.append(flag_pairs)
        cmp_ours.append(f"  CHECK(((ld->_flags & {flag_macro}) != 0) == ((o.flags & {ours_flag}) != 0), {where});")
    return f"""
static int n_properties = {len(cls.properties)};
/* round 0: every property; round 1: none; later rounds: random subsets */
static void check_basic_properties(rng_t *r, int round) {{
  amqp_pool_t pool;
  amqp_basic_properties_t a, *ld = NULL;
  {prefix}_basic_properties_t o, d;
  {prefix}_content_header_t h, dh;
  static uint8_t tbuf[{len(cls.properties)} * TCAP], lbuf[BUFCAP], obuf[BUFCAP], hbuf[BUFCAP];
  size_t olen = 0, hlen = 0;
  int llen, st;
  memset(&a, 0, sizeof a);
  memset(&o, 0, sizeof o);
  memset(&d, 0, sizeof d);
  init_amqp_pool(&pool, 4096);
{chr(10).join(fill)}
  llen = amqp_encode_properties(60, &a, abytes(lbuf, sizeof lbuf));
  CHECK(llen >= 0, "amqp_encode_properties %d", llen);
  st = {prefix}_basic_properties_encode(&o, obuf, sizeof obuf, &olen);
  CHECK(st == {pu}_OK, "properties encode %s", {prefix}_status_name(st));
  if (llen >= 0 && st == {pu}_OK) {{
    CHECK(same_bytes(lbuf, (size_t)llen, obuf, olen), "basic properties: octets differ");
    if (!same_bytes(lbuf, (size_t)llen, obuf, olen)) hexdiff("basic properties", lbuf, (size_t)llen, obuf, olen);
  }}
  if (g_mutate && llen > 0) lbuf[llen - 1] ^= 1; /* self-test: the last property's value now differs */
  if (g_mutate && olen > 0) obuf[olen - 1] ^= 1;
  if (llen >= 0) {{
    st = {prefix}_basic_properties_decode(lbuf, (size_t)llen, &d);
    CHECK(st == {pu}_OK, "properties decode of librabbitmq's octets: %s", {prefix}_status_name(st));
    if (st == {pu}_OK) {{
{chr(10).join("  " + c for c in cmp_lib)}
    }}
  }}
  st = amqp_decode_properties(60, &pool, abytes(obuf, olen), (void **)&ld);
  CHECK(st == 0 && ld != NULL, "amqp_decode_properties %d", st);
  if (st == 0 && ld != NULL) {{
{chr(10).join("  " + c for c in cmp_ours)}
  }}
  /* a whole content header: class id, weight, body size, then the same properties octets */
  memset(&h, 0, sizeof h);
  h.class_id = 60;
  h.body_size = rnd(r);
  h.u.basic = o;
  st = {prefix}_content_header_encode(&h, hbuf, sizeof hbuf, &hlen);
  CHECK(st == {pu}_OK && hlen == olen + 12 && (g_mutate || same_bytes(hbuf + 12, hlen - 12, obuf, olen)) && hbuf[0] == 0
        && hbuf[1] == 60 && hbuf[2] == 0 && hbuf[3] == 0, "content_header_encode %s", {prefix}_status_name(st));
  memset(&dh, 0, sizeof dh);
  if (st == {pu}_OK) {{
    st = {prefix}_content_header_decode(hbuf, hlen, &dh);
    CHECK(st == {pu}_OK && dh.class_id == 60 && dh.body_size == h.body_size && dh.u.basic.flags == o.flags,
          "content_header_decode %s", {prefix}_status_name(st));
  }}
  empty_amqp_pool(&pool);
}}
"""


def generate_diff(spec_path: Path, prefix: str = "ag") -> tuple[str, int]:
    """C for the differential fuzz target (tests/c/fuzz_diff.c): per method, every field of our decoded
    struct against librabbitmq's decode of the same octets; a dispatcher by method id; the same for
    the basic properties. Fields paired and type-checked as in generate()."""
    text = HEADER.read_text()
    structs = lib_structs(text)
    ids = lib_method_ids(text)
    spec = load_spec(spec_path)
    n = Naming("c", prefix)
    out: list[str] = []
    cases: list[str] = []

    def compare(ftype: str, o: str, lname: str, where: str) -> str:
        if ftype in BITS:
            return f"  CHECK(d->{o} == ld->{lname}, {where});"
        if ftype == "bit":
            return f"  CHECK(d->{o} == (ld->{lname} != 0), {where});"
        if ftype in ("shortstr", "longstr"):
            return f"  CHECK(same_bytes(d->{o}.bytes, d->{o}.len, ld->{lname}.bytes, ld->{lname}.len), {where});"
        return f"  CHECK(cmp_table(&ld->{lname}, d->{o}, {where}), {where});"

    for m in spec.methods:
        num = (m.class_index << 16) | m.index
        if num not in ids:
            continue
        stem = ids[num]
        lib_fields = [f for f in structs[f"amqp_{stem}_t"].fields if f[1] != "dummy"]
        if len(lib_fields) != len(m.fields):
            raise SystemExit(f"{m.full_name}: librabbitmq has {len(lib_fields)} fields, the spec {len(m.fields)}")
        lines = []
        for f, (ltype, lname) in zip(m.fields, lib_fields, strict=True):
            if LIB_TYPE[f.type] != ltype:
                raise SystemExit(f"{m.full_name}.{f.name}: librabbitmq {ltype} {lname}, the spec {f.type}")
            lines.append(compare(f.type, n.member(f.name), lname, f'"{m.full_name}.{f.name}"'))
        out.append(f"""static void diff_{stem}(const {n.type(m.class_name, m.name)} *d, const amqp_{stem}_t *ld) {{
  (void)d;
  (void)ld;
{chr(10).join(lines)}
}}
""")
        cases.append(f"  case 0x{num:08X}u: diff_{stem}(&m->u.{n.snake(m.class_name, m.name)}, lib); break;")
    out.append(f"""static void diff_method(const {prefix}_method_t *m, const void *lib) {{
  switch (m->id) {{
{chr(10).join(cases)}
  default: CHECK(0, "method %08x: librabbitmq does not implement it", (unsigned)m->id);
  }}
}}
""")
    cls = spec.class_by_name["basic"]
    lib_fields = [f for f in structs["amqp_basic_properties_t"].fields if f[1] != "_flags"]
    lines = []
    for p, (ltype, lname) in zip(cls.properties, lib_fields, strict=True):
        if LIB_TYPE[p.type] != ltype:
            raise SystemExit(f"basic.{p.name}: librabbitmq {ltype} {lname}, the spec {p.type}")
        flag_macro = f"AMQP_BASIC_{lname.upper()}_FLAG"
        ours_flag = n.constant("basic", p.name, "flag")
        where = f'"basic.{p.name}"'
        lines.append(f"  CHECK(((ld->_flags & {flag_macro}) != 0) == ((d->flags & {ours_flag}) != 0), {where});")
        lines.append(f"  if (d->flags & {ours_flag}) {compare(p.type, n.member(p.name), lname, where).strip()}")
    out.append(f"""static void diff_basic_properties(const {prefix}_basic_properties_t *d, const amqp_basic_properties_t *ld) {{
{chr(10).join(lines)}
}}
""")
    return "\n".join(out), len(cases)


if __name__ == "__main__":
    import sys

    src, count = generate(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "ag")
    sys.stdout.write(src)
    sys.stderr.write(f"{count} methods\n")
