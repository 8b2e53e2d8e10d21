/* Hand-written support for the librabbitmq interop program (tests/amqp0/c/test_c_interop.py).
 *
 * The generated library is rendered with prefix "ag" (librabbitmq owns "amqp_"). This file builds
 * the same random values into both libraries' structures (librabbitmq's amqp_table_t and our
 * ag_table_writer_t side by side, so the two sides never learn values from each other's output),
 * and compares a librabbitmq table with one of ours by walking both. The per-method code that uses
 * it is written by tests/c/gen_interop.py from librabbitmq's own header.
 */
#ifndef AMQGEN_INTEROP_RT_H
#define AMQGEN_INTEROP_RT_H

#include <amqp.h>
#include <amqp_framing.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag.h"

static unsigned long g_checks, g_failed;
/* self-test: ours gets long strings and 'x' values that differ from librabbitmq's in one octet, so
   every comparison touching them must fail (proves the checks are not vacuous) */
static int g_mutate;

#define CHECK(cond, ...)                                                                          \
  do {                                                                                           \
    g_checks++;                                                                                  \
    if (!(cond)) {                                                                               \
      g_failed++;                                                                                \
      if (g_failed <= 40) {                                                                      \
        fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                          \
        fprintf(stderr, __VA_ARGS__);                                                            \
        fputc('\n', stderr);                                                                     \
      }                                                                                          \
    }                                                                                            \
  } while (0)

/* xorshift64*: deterministic from the seed on the command line */
typedef struct { uint64_t s; } rng_t;
static uint64_t rnd(rng_t *r) {
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  return r->s * 2685821657736338717ULL;
}
static uint32_t rnd_below(rng_t *r, uint32_t n) { return (uint32_t)(rnd(r) % n); }

/* A non-default value of `bits` width: every third round all ones (edge), else random non-zero. */
static uint64_t rnd_int(rng_t *r, int round, int bits) {
  uint64_t mask = bits == 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1);
  uint64_t v;
  if (round % 3 == 1) return mask;
  do { v = rnd(r) & mask; } while (v == 0);
  return v;
}

/* Valid UTF-8 of exactly n octets (ASCII, 2-, 3- and 4-octet sequences), from the pool. */
static void rnd_utf8(rng_t *r, uint8_t *p, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t left = n - i;
    uint32_t k = rnd_below(r, 6);
    if (k == 3 && left >= 2) { /* U+0080..U+07FF */
      uint32_t c = 0x80 + rnd_below(r, 0x780);
      p[i++] = (uint8_t)(0xC0 | (c >> 6));
      p[i++] = (uint8_t)(0x80 | (c & 0x3F));
    } else if (k == 4 && left >= 3) { /* U+0800..U+FFFF minus surrogates */
      uint32_t c;
      do { c = 0x800 + rnd_below(r, 0xF800); } while (c >= 0xD800 && c <= 0xDFFF);
      p[i++] = (uint8_t)(0xE0 | (c >> 12));
      p[i++] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
      p[i++] = (uint8_t)(0x80 | (c & 0x3F));
    } else if (k == 5 && left >= 4) { /* U+10000..U+10FFFF */
      uint32_t c = 0x10000 + rnd_below(r, 0x100000);
      p[i++] = (uint8_t)(0xF0 | (c >> 18));
      p[i++] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
      p[i++] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
      p[i++] = (uint8_t)(0x80 | (c & 0x3F));
    } else {
      p[i++] = (uint8_t)(0x20 + rnd_below(r, 0x5F));
    }
  }
}

/* shortstr: 1..255 octets of UTF-8 (255 on edge rounds); one copy shared by both sides. */
static void fill_shortstr(rng_t *r, int round, amqp_pool_t *pool, amqp_bytes_t *a, ag_bytes_t *o) {
  size_t n = round % 3 == 1 ? 255 : 1 + rnd_below(r, 40);
  uint8_t *p = amqp_pool_alloc(pool, n);
  rnd_utf8(r, p, n);
  a->bytes = p;
  a->len = n;
  o->bytes = p;
  o->len = n;
}

/* longstr: any octets (not checked as UTF-8), sometimes longer than 255. */
static void fill_longstr(rng_t *r, int round, amqp_pool_t *pool, amqp_bytes_t *a, ag_bytes_t *o) {
  size_t n = round % 3 == 1 ? 300 + rnd_below(r, 700) : 1 + rnd_below(r, 64);
  uint8_t *p = amqp_pool_alloc(pool, n);
  size_t i;
  for (i = 0; i < n; i++) p[i] = (uint8_t)rnd(r);
  a->bytes = p;
  a->len = n;
  if (g_mutate) {
    uint8_t *q = amqp_pool_alloc(pool, n);
    memcpy(q, p, n);
    q[n - 1] ^= 1;
    p = q;
  }
  o->bytes = p;
  o->len = n;
}

/* The type codes both libraries know, with one meaning each (librabbitmq reads 'L' as unsigned,
   the rabbitmq dialect as signed: same octets, compared as bit patterns). 'U' is ours only. */
static const char SHARED_CODES[] = "tbBsuIilLfdDSxTVFA";

static void build_value(rng_t *r, int round, int depth, amqp_pool_t *pool, amqp_field_value_t *a,
                        ag_table_writer_t *w);

static void build_entries(rng_t *r, int round, int depth, amqp_pool_t *pool, amqp_table_t *t,
                          ag_table_writer_t *w, int n) {
  int i;
  t->num_entries = n;
  t->entries = n ? amqp_pool_alloc(pool, sizeof(amqp_table_entry_t) * (size_t)n) : NULL;
  for (i = 0; i < n; i++) {
    /* keys: short, distinct (an index suffix), sometimes multi-octet UTF-8 */
    size_t stem = 1 + rnd_below(r, 12), len;
    uint8_t *k = amqp_pool_alloc(pool, stem + 4);
    rnd_utf8(r, k, stem);
    len = stem + (size_t)sprintf((char *)k + stem, "%d", i);
    t->entries[i].key.bytes = k;
    t->entries[i].key.len = len;
    ag_table_put_key(w, (ag_bytes_t){k, len});
    build_value(r, round, depth, pool, &t->entries[i].value, w);
  }
}

static void build_value(rng_t *r, int round, int depth, amqp_pool_t *pool, amqp_field_value_t *a,
                        ag_table_writer_t *w) {
  ag_field_value_t v;
  size_t ncodes = depth >= 3 ? strlen(SHARED_CODES) - 2 : strlen(SHARED_CODES); /* no F/A deeper */
  char code = SHARED_CODES[rnd_below(r, (uint32_t)ncodes)];
  uint64_t x = rnd(r);
  memset(&v, 0, sizeof v);
  memset(a, 0, sizeof *a);
  if (round % 3 == 1) x = (x & 1) ? ~(uint64_t)0 : ((uint64_t)1 << 63); /* edges: -1 / min */
  a->kind = (uint8_t)code;
  v.type = (uint8_t)code;
  switch (code) {
    case 't': a->value.boolean = (int)(x & 1); v.v.boolean = (x & 1) != 0; break;
    case 'b': a->value.i8 = (int8_t)(uint8_t)x; v.v.i = a->value.i8; break;
    case 'B': a->value.u8 = (uint8_t)x; v.v.u = a->value.u8; break;
    case 's': a->value.i16 = (int16_t)(uint16_t)x; v.v.i = a->value.i16; break;
    case 'u': a->value.u16 = (uint16_t)x; v.v.u = a->value.u16; break;
    case 'I': a->value.i32 = (int32_t)(uint32_t)x; v.v.i = a->value.i32; break;
    case 'i': a->value.u32 = (uint32_t)x; v.v.u = a->value.u32; break;
    case 'l': a->value.i64 = (int64_t)x; v.v.i = a->value.i64; break;
    case 'L': a->value.u64 = x; v.v.i = (int64_t)x; break;
    case 'f': a->value.u32 = (uint32_t)x; v.v.f32_bits = (uint32_t)x; break; /* any bits, NaNs too */
    case 'd': a->value.u64 = x; v.v.f64_bits = x; break;
    case 'D':
      a->value.decimal.decimals = (uint8_t)x;
      a->value.decimal.value = (uint32_t)(x >> 16);
      v.v.decimal.scale = (uint8_t)x;
      v.v.decimal.value = (uint32_t)(x >> 16);
      break;
    case 'T': a->value.u64 = x; v.v.timestamp = x; break;
    case 'S':
    case 'x': {
      size_t n = rnd_below(r, 40);
      uint8_t *p = amqp_pool_alloc(pool, n + 1);
      size_t i;
      if (code == 'S') rnd_utf8(r, p, n);
      else for (i = 0; i < n; i++) p[i] = (uint8_t)rnd(r);
      a->value.bytes.bytes = p;
      a->value.bytes.len = n;
      if (g_mutate && code == 'x' && n > 0) {
        uint8_t *q = amqp_pool_alloc(pool, n);
        memcpy(q, p, n);
        q[0] ^= 0x80;
        p = q;
      }
      v.v.bytes.bytes = p;
      v.v.bytes.len = n;
      break;
    }
    case 'V': break;
    case 'F':
      ag_table_begin_table(w);
      build_entries(r, round, depth + 1, pool, &a->value.table, w, (int)rnd_below(r, 4));
      ag_table_end_table(w);
      return;
    case 'A': {
      int n = (int)rnd_below(r, 4), i;
      a->value.array.num_entries = n;
      a->value.array.entries = n ? amqp_pool_alloc(pool, sizeof(amqp_field_value_t) * (size_t)n) : NULL;
      ag_table_begin_array(w);
      for (i = 0; i < n; i++) build_value(r, round, depth + 1, pool, &a->value.array.entries[i], w);
      ag_table_end_array(w);
      return;
    }
    default: abort();
  }
  ag_table_put(w, &v);
}

/* A table of n (>= 1) entries with several type codes, in both libraries. */
static void fill_table(rng_t *r, int round, amqp_pool_t *pool, amqp_table_t *a, ag_table_t *o, uint8_t *buf,
                       size_t cap) {
  ag_table_writer_t w;
  int st;
  ag_table_writer_init(&w, buf, cap);
  build_entries(r, round, 1, pool, a, &w, 3 + (int)rnd_below(r, 6));
  st = ag_table_writer_finish(&w, o);
  CHECK(st == AG_OK, "table writer: %s", ag_status_name(st));
}

/* -- comparing ------------------------------------------------------------------------------- */
static bool same_bytes(const void *a, size_t alen, const void *b, size_t blen) {
  return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static bool cmp_array(const amqp_array_t *a, ag_array_t o, const char *where);
static bool cmp_table(const amqp_table_t *a, ag_table_t o, const char *where);

/* One librabbitmq value against one of ours. */
static bool cmp_value(const amqp_field_value_t *a, const ag_field_value_t *v, const char *where) {
  if (a->kind != v->type) {
    fprintf(stderr, "%s: type %c != %c\n", where, a->kind, v->type);
    return false;
  }
  switch (a->kind) {
    case 't': return (a->value.boolean != 0) == v->v.boolean;
    case 'b': return v->v.i == a->value.i8;
    case 'B': return v->v.u == a->value.u8;
    case 's': return v->v.i == a->value.i16;
    case 'u': return v->v.u == a->value.u16;
    case 'I': return v->v.i == a->value.i32;
    case 'i': return v->v.u == a->value.u32;
    case 'l': return v->v.i == a->value.i64;
    case 'L': return (uint64_t)v->v.i == a->value.u64;
    case 'f': return v->v.f32_bits == a->value.u32;
    case 'd': return v->v.f64_bits == a->value.u64;
    case 'D': return v->v.decimal.scale == a->value.decimal.decimals && v->v.decimal.value == a->value.decimal.value;
    case 'T': return v->v.timestamp == a->value.u64;
    case 'S':
    case 'x': return same_bytes(a->value.bytes.bytes, a->value.bytes.len, v->v.bytes.bytes, v->v.bytes.len);
    case 'V': return true;
    case 'F': return cmp_table(&a->value.table, v->v.table, where);
    case 'A': return cmp_array(&a->value.array, v->v.array, where);
    default: fprintf(stderr, "%s: unknown kind %c\n", where, a->kind); return false;
  }
}

static bool cmp_table(const amqp_table_t *a, ag_table_t o, const char *where) {
  ag_table_iter_t it;
  ag_bytes_t key;
  ag_field_value_t v;
  int i, st;
  ag_table_iter_init(&it, o);
  for (i = 0; i < a->num_entries; i++) {
    st = ag_table_next(&it, &key, &v);
    if (st != 1) {
      fprintf(stderr, "%s: entry %d: next() = %d\n", where, i, st);
      return false;
    }
    if (!same_bytes(a->entries[i].key.bytes, a->entries[i].key.len, key.bytes, key.len)) {
      fprintf(stderr, "%s: entry %d: key differs\n", where, i);
      return false;
    }
    if (!cmp_value(&a->entries[i].value, &v, where)) {
      fprintf(stderr, "%s: entry %d (%.*s): value differs\n", where, i, (int)key.len, (const char *)key.bytes);
      return false;
    }
  }
  st = ag_table_next(&it, &key, &v);
  if (st != 0) fprintf(stderr, "%s: %d entries expected, next() = %d after them\n", where, a->num_entries, st);
  return st == 0;
}

static bool cmp_array(const amqp_array_t *a, ag_array_t o, const char *where) {
  ag_table_iter_t it;
  ag_field_value_t v;
  int i, st;
  ag_array_iter_init(&it, o);
  for (i = 0; i < a->num_entries; i++) {
    st = ag_array_next(&it, &v);
    if (st != 1 || !cmp_value(&a->entries[i], &v, where)) {
      fprintf(stderr, "%s: array item %d differs (next() = %d)\n", where, i, st);
      return false;
    }
  }
  return ag_array_next(&it, &v) == 0;
}

static amqp_bytes_t abytes(void *p, size_t n) {
  amqp_bytes_t b;
  b.bytes = p;
  b.len = n;
  return b;
}

static void hexdiff(const char *what, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  size_t i, n = alen < blen ? alen : blen;
  for (i = 0; i < n && a[i] == b[i]; i++) {
  }
  fprintf(stderr, "%s: librabbitmq %zu octets, ours %zu; first difference at %zu\n", what, alen, blen, i);
}

#endif
