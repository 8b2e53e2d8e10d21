/* The generated C library (amqgen) against librabbitmq 0.11 in one binary and one run; built and run
 * by bench/bench_c.py (see bench/README.md). A program, not a test.
 *
 * This file is compiled three times:
 *   -DBENCH_OURS -DP=ag  -DPU=AG  -DBENCH_HEADER='"ag.h"'    ours, UTF-8 validation on
 *   -DBENCH_OURS -DP=agn -DPU=AGN -DBENCH_HEADER='"agn.h"'   ours, the library built with -DAGN_NO_UTF8_CHECK
 *   (nothing)                                                 librabbitmq and the driver
 *
 * The five cases (the same values as bench/bench_python.py):
 *   1 encode basic.publish + header (content-type, delivery-mode, a 3-entry headers table,
 *     message-id, timestamp) + 128-byte body as wire frames
 *   2 decode those frames
 *   3 decode basic.deliver + header + 1 KiB body
 *   4 decode a RabbitMQ-like connection.start
 *   5 encode and decode queue.declare with a 5-entry arguments table
 * Before timing, every library's encoders must write the same octets and its decoders must report
 * the values below (checked field by field against these constants, not against another library).
 *
 * usage: bench_c [--repeat N] [--min-ns NS]        time every case and library, print a table
 *        bench_c --loop CASE LIB N                 run one case N times in bench_loop() (callgrind)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* -- the values every library encodes or must decode ------------------------------------------ */
#define EXCHANGE "bench.exchange"
#define ROUTING_KEY "bench.orders.created"
#define CONTENT_TYPE "application/json"
#define MESSAGE_ID "b7e3a0c4-2f1d-4c61-9a55-0d3f3b2c1e9a"
#define TIMESTAMP 1700000000u
#define CONSUMER_TAG "amq.ctag-Xq0vZbF3nQ1mYk8T2sJ4uA"
#define DELIVERY_TAG 123456u
#define QUEUE "bench.queue.orders"
#define FRAME_MAX 131072u
#define SL(s) (s), (sizeof(s) - 1)
/* headers (sorted keys; codes every library writes the same way) */
#define H_SOURCE "bench-suite"
#define H_TRACE "5f0c1e2a9b7d4e3f"
/* connection.start server-properties */
static const char *const CAPS[] = {"publisher_confirms",     "exchange_exchange_bindings", "basic.nack",
                                   "consumer_cancel_notify", "connection.blocked",         "consumer_priorities",
                                   "authentication_failure_close", "per_consumer_qos", "direct_reply_to"};
#define N_CAPS 9
static const char *const SERVER_KEYS[] = {"cluster_name", "copyright", "information", "platform", "product",
                                          "version"};
static const char *const SERVER_VALUES[] = {"rabbit@bench-host",
                                            "Copyright (c) 2007-2024 Broadcom Inc and/or its subsidiaries",
                                            "Licensed under the MPL 2.0. Website: https://rabbitmq.com",
                                            "Erlang/OTP 26.2.5", "RabbitMQ", "3.13.7"};
#define N_SERVER 6
/* queue.declare arguments: key, type code, value */
static const char *const QARG_KEYS[] = {"x-dead-letter-exchange", "x-max-length", "x-max-length-bytes",
                                        "x-message-ttl", "x-queue-type"};
static const char *const QARG_S[] = {"bench.dlx", NULL, NULL, NULL, "classic"};
static const int32_t QARG_I[] = {0, 100000, 1073741824, 3600000, 0};
#define N_QARGS 5

/* defined once, by the driver's part (every part sees the same octets) */
extern uint8_t BODY_128[128], BODY_1K[1024];

typedef struct {
  const uint8_t *wire;
  size_t len;
} wire_t;

/* ============================================================================================ */
#ifdef BENCH_OURS
#include BENCH_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define F(n) CAT(P, n)
#define K(n) CAT(PU, n)

static bool eq(const void *p, size_t n, const char *s, size_t sn) { return n == sn && memcmp(p, s, n) == 0; }
#define EQ(b, lit) eq((b).bytes, (b).len, SL(lit))

static uint8_t out_buf[1 << 16];
static uint8_t reader_storage[FRAME_MAX];
static volatile size_t sink;

/* one call per table entry (key and value); literal lengths by sizeof, as for the struct fields */
#define ADD_STR(w, k, v) F(_table_add_str)(w, K(_LIT)(k), K(_LIT)(v))
static void add_str(F(_table_writer_t) * w, const char *k, const char *s) {
  F(_table_add_str)(w, F(_cstring)(k), F(_cstring)(s));
}
static void add_int(F(_table_writer_t) * w, const char *k, int32_t i) { F(_table_add_i32)(w, F(_cstring)(k), i); }

/* case 1: the application fills its structs and builds the headers table each time */
size_t F(_op_encode_publish)(uint8_t *out, size_t cap) {
  F(_method_t) m;
  F(_content_header_t) h;
  F(_table_writer_t) w;
  uint8_t headers[256];
  size_t len = 0;
  memset(&m, 0, sizeof m);
  m.id = K(_BASIC_PUBLISH);
  m.u.basic_publish.exchange.bytes = (const uint8_t *)EXCHANGE;
  m.u.basic_publish.exchange.len = sizeof EXCHANGE - 1;
  m.u.basic_publish.routing_key.bytes = (const uint8_t *)ROUTING_KEY;
  m.u.basic_publish.routing_key.len = sizeof ROUTING_KEY - 1;
  F(_table_writer_init)(&w, headers, sizeof headers);
  ADD_STR(&w, "source", H_SOURCE);
  ADD_STR(&w, "trace-id", H_TRACE);
  F(_table_add_bool)(&w, K(_LIT)("urgent"), true);
  memset(&h, 0, sizeof h);
  h.class_id = K(_CLASS_BASIC);
  if (F(_table_writer_finish)(&w, &h.u.basic.headers) != K(_OK)) return 0;
  h.u.basic.flags = K(_BASIC_CONTENT_TYPE_FLAG) | K(_BASIC_HEADERS_FLAG) | K(_BASIC_DELIVERY_MODE_FLAG) |
                    K(_BASIC_MESSAGE_ID_FLAG) | K(_BASIC_TIMESTAMP_FLAG);
  h.u.basic.content_type.bytes = (const uint8_t *)CONTENT_TYPE;
  h.u.basic.content_type.len = sizeof CONTENT_TYPE - 1;
  h.u.basic.delivery_mode = 2;
  h.u.basic.message_id.bytes = (const uint8_t *)MESSAGE_ID;
  h.u.basic.message_id.len = sizeof MESSAGE_ID - 1;
  h.u.basic.timestamp = TIMESTAMP;
  if (F(_message_encode)(1, &m, &h, BODY_128, sizeof BODY_128, FRAME_MAX, out, cap, &len) != K(_OK)) return 0;
  return len;
}

/* What a decode reports: enough to check every value against the constants. */
typedef struct {
  int methods, headers, bodies;
  F(_method_t) m[2];
  F(_content_header_t) h;
  const uint8_t *body;
  size_t body_len;
} got_t;

/* cases 2-4 (and 5's decode half): a fresh reader over the whole buffer, every frame decoded */
static int decode(const uint8_t *wire, size_t len, got_t *g) {
  F(_reader_t) r;
  F(_frame_t) f;
  int st;
  g->methods = g->headers = g->bodies = 0;
  F(_reader_init)(&r, reader_storage, sizeof reader_storage, FRAME_MAX);
  F(_reader_feed)(&r, wire, len);
  while ((st = F(_reader_next)(&r, &f)) == K(_OK)) {
    if (f.type == K(_FRAME_METHOD)) {
      if (g->methods == 2 || F(_method_decode)(f.payload.bytes, f.payload.len, &g->m[g->methods]) != K(_OK))
        return -1;
      g->methods++;
    } else if (f.type == K(_FRAME_HEADER)) {
      if (F(_content_header_decode)(f.payload.bytes, f.payload.len, &g->h) != K(_OK)) return -1;
      g->headers++;
    } else if (f.type == K(_FRAME_BODY)) {
      g->body = f.payload.bytes; /* zero copy: the body stays in the caller's buffer */
      g->body_len = f.payload.len;
      g->bodies++;
    } else {
      return -1;
    }
  }
  return st == K(_INCOMPLETE) ? 0 : -1;
}

static got_t g_got;
int F(_op_decode)(const wire_t *w) {
  int st = decode(w->wire, w->len, &g_got);
  sink += (size_t)g_got.methods;
  return st;
}

/* case 5: build the arguments table and encode the method frame, then decode it */
size_t F(_op_declare)(uint8_t *out, size_t cap) {
  F(_method_t) m;
  F(_table_writer_t) w;
  uint8_t args[512];
  size_t len = 0;
  int i;
  memset(&m, 0, sizeof m);
  m.id = K(_QUEUE_DECLARE);
  m.u.queue_declare.queue.bytes = (const uint8_t *)QUEUE;
  m.u.queue_declare.queue.len = sizeof QUEUE - 1;
  m.u.queue_declare.durable = true;
  F(_table_writer_init)(&w, args, sizeof args);
  for (i = 0; i < N_QARGS; i++) {
    if (QARG_S[i]) add_str(&w, QARG_KEYS[i], QARG_S[i]);
    else add_int(&w, QARG_KEYS[i], QARG_I[i]);
  }
  if (F(_table_writer_finish)(&w, &m.u.queue_declare.arguments) != K(_OK)) return 0;
  if (F(_method_frame_encode)(1, &m, out, cap, &len) != K(_OK)) return 0;
  if (decode(out, len, &g_got) != 0) return 0;
  sink += (size_t)g_got.methods;
  return len;
}

/* -- checking the values against the constants ------------------------------------------------ */
/* the next n entries: keys[i] with a value of type code (S: vals[i]; t: true) */
static int check_entries(F(_table_iter_t) * it, const char *const *keys, const char *const *vals, int n, char code) {
  F(_bytes_t) k;
  F(_field_value_t) v;
  int i;
  for (i = 0; i < n; i++) {
    if (F(_table_next)(it, &k, &v) != 1 || !eq(k.bytes, k.len, keys[i], strlen(keys[i])) || v.type != code)
      return 0;
    if (code == 'S' && !eq(v.v.bytes.bytes, v.v.bytes.len, vals[i], strlen(vals[i]))) return 0;
    if (code == 't' && !v.v.boolean) return 0;
  }
  return 1;
}

static int check_props(const F(_content_header_t) * h, size_t body_size) {
  const F(_basic_properties_t) *p = &h->u.basic;
  F(_table_iter_t) it;
  F(_bytes_t) k;
  F(_field_value_t) v;
  if (h->class_id != 60 || h->body_size != body_size) return 0;
  if (p->flags != (K(_BASIC_CONTENT_TYPE_FLAG) | K(_BASIC_HEADERS_FLAG) | K(_BASIC_DELIVERY_MODE_FLAG) |
                   K(_BASIC_MESSAGE_ID_FLAG) | K(_BASIC_TIMESTAMP_FLAG)))
    return 0;
  if (!EQ(p->content_type, CONTENT_TYPE) || p->delivery_mode != 2 || !EQ(p->message_id, MESSAGE_ID) ||
      p->timestamp != TIMESTAMP)
    return 0;
  F(_table_iter_init)(&it, p->headers);
  if (F(_table_next)(&it, &k, &v) != 1 || !EQ(k, "source") || v.type != 'S' || !EQ(v.v.bytes, H_SOURCE)) return 0;
  if (F(_table_next)(&it, &k, &v) != 1 || !EQ(k, "trace-id") || v.type != 'S' || !EQ(v.v.bytes, H_TRACE)) return 0;
  if (F(_table_next)(&it, &k, &v) != 1 || !EQ(k, "urgent") || v.type != 't' || !v.v.boolean) return 0;
  return F(_table_next)(&it, &k, &v) == 0;
}

/* 0 when the decode of case `c` reported exactly the case's values */
int F(_check)(int c, const wire_t *w) {
  got_t *g = &g_got;
  if (c != 5 && decode(w->wire, w->len, g) != 0) return 1;
  switch (c) {
    case 2: {
      const F(_basic_publish_t) *m = &g->m[0].u.basic_publish;
      if (g->methods != 1 || g->headers != 1 || g->bodies != 1 || g->m[0].id != K(_BASIC_PUBLISH)) return 2;
      if (!EQ(m->exchange, EXCHANGE) || !EQ(m->routing_key, ROUTING_KEY) || m->mandatory || m->immediate) return 3;
      if (!check_props(&g->h, 128)) return 4;
      if (g->body_len != 128 || memcmp(g->body, BODY_128, 128) != 0) return 5;
      return 0;
    }
    case 3: {
      const F(_basic_deliver_t) *m = &g->m[0].u.basic_deliver;
      if (g->methods != 1 || g->headers != 1 || g->bodies != 1 || g->m[0].id != K(_BASIC_DELIVER)) return 2;
      if (!EQ(m->consumer_tag, CONSUMER_TAG) || m->delivery_tag != DELIVERY_TAG || !m->redelivered ||
          !EQ(m->exchange, EXCHANGE) || !EQ(m->routing_key, ROUTING_KEY))
        return 3;
      if (!check_props(&g->h, 1024)) return 4;
      if (g->body_len != 1024 || memcmp(g->body, BODY_1K, 1024) != 0) return 5;
      return 0;
    }
    case 4: {
      const F(_connection_start_t) *m = &g->m[0].u.connection_start;
      F(_table_iter_t) it;
      F(_bytes_t) k;
      F(_field_value_t) v;
      if (g->methods != 1 || g->m[0].id != K(_CONNECTION_START)) return 2;
      if (m->version_major != 0 || m->version_minor != 9 || !EQ(m->mechanisms, "AMQPLAIN PLAIN") ||
          !EQ(m->locales, "en_US"))
        return 3;
      F(_table_iter_init)(&it, m->server_properties);
      if (F(_table_next)(&it, &k, &v) != 1 || !EQ(k, "capabilities") || v.type != 'F') return 4;
      {
        F(_table_iter_t) ci;
        F(_table_iter_init)(&ci, v.v.table);
        if (!check_entries(&ci, CAPS, NULL, N_CAPS, 't') || F(_table_next)(&ci, &k, &v) != 0) return 5;
      }
      if (!check_entries(&it, SERVER_KEYS, SERVER_VALUES, N_SERVER, 'S')) return 6;
      return F(_table_next)(&it, &k, &v) == 0 ? 0 : 7;
    }
    case 5: {
      const F(_queue_declare_t) *m = &g->m[0].u.queue_declare;
      F(_table_iter_t) it;
      F(_bytes_t) k;
      F(_field_value_t) v;
      int i;
      if (F(_op_declare)(out_buf, sizeof out_buf) == 0) return 1;
      if (g->methods != 1 || g->m[0].id != K(_QUEUE_DECLARE)) return 2;
      if (!EQ(m->queue, QUEUE) || m->passive || !m->durable || m->exclusive || m->auto_delete || m->no_wait) return 3;
      F(_table_iter_init)(&it, m->arguments);
      for (i = 0; i < N_QARGS; i++) {
        if (F(_table_next)(&it, &k, &v) != 1 || !eq(k.bytes, k.len, QARG_KEYS[i], strlen(QARG_KEYS[i]))) return 4;
        if (QARG_S[i] ? (v.type != 'S' || !eq(v.v.bytes.bytes, v.v.bytes.len, QARG_S[i], strlen(QARG_S[i])))
                      : (v.type != 'I' || v.v.i != QARG_I[i]))
          return 5;
      }
      return F(_table_next)(&it, &k, &v) == 0 ? 0 : 6;
    }
    default: return 9;
  }
}

/* ============================================================================================ */
#else /* librabbitmq and the driver */
#include <amqp.h>
#include <amqp_framing.h>

/* ours, twice (see the top of the file) */
#define OURS_DECL(p)                                                                                 \
  size_t p##_op_encode_publish(uint8_t *out, size_t cap);                                            \
  int p##_op_decode(const wire_t *w);                                                                \
  size_t p##_op_declare(uint8_t *out, size_t cap);                                                   \
  int p##_check(int c, const wire_t *w);
OURS_DECL(ag)
OURS_DECL(agn)

uint8_t BODY_128[128], BODY_1K[1024];
static void init_bodies(void) {
  int i;
  for (i = 0; i < 128; i++) BODY_128[i] = (uint8_t)i;
  for (i = 0; i < 1024; i++) BODY_1K[i] = (uint8_t)(i * 7 % 256);
}

static volatile size_t sink;
static amqp_bytes_t ab(const void *p, size_t n) {
  amqp_bytes_t b;
  b.bytes = (void *)p;
  b.len = n;
  return b;
}
#define AB(lit) ab(lit, sizeof(lit) - 1)

static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}
static void put64(uint8_t *p, uint64_t v) {
  put32(p, (uint32_t)(v >> 32));
  put32(p + 4, (uint32_t)v);
}

/* What amqp_send_frame does before writing to its socket: frame header, the payload encoded in
   place, frame-end. */
static size_t lib_method_frame(uint8_t *out, size_t cap, uint16_t ch, amqp_method_number_t id, void *m) {
  int n;
  out[0] = AMQP_FRAME_METHOD;
  out[1] = (uint8_t)(ch >> 8);
  out[2] = (uint8_t)ch;
  put32(out + 7, id);
  n = amqp_encode_method(id, m, ab(out + 11, cap - 12));
  if (n < 0) return 0;
  put32(out + 3, (uint32_t)n + 4);
  out[11 + n] = AMQP_FRAME_END;
  return 12 + (size_t)n;
}
static size_t lib_header_frame(uint8_t *out, size_t cap, uint16_t ch, uint64_t body_size, amqp_basic_properties_t *p) {
  int n;
  out[0] = AMQP_FRAME_HEADER;
  out[1] = (uint8_t)(ch >> 8);
  out[2] = (uint8_t)ch;
  out[7] = 0;
  out[8] = 60;
  out[9] = out[10] = 0;
  put64(out + 11, body_size);
  n = amqp_encode_properties(60, p, ab(out + 19, cap - 20));
  if (n < 0) return 0;
  put32(out + 3, (uint32_t)n + 12);
  out[19 + n] = AMQP_FRAME_END;
  return 20 + (size_t)n;
}
static size_t lib_body_frame(uint8_t *out, uint16_t ch, const uint8_t *body, size_t n) {
  out[0] = AMQP_FRAME_BODY;
  out[1] = (uint8_t)(ch >> 8);
  out[2] = (uint8_t)ch;
  put32(out + 3, (uint32_t)n);
  memcpy(out + 7, body, n);
  out[7 + n] = AMQP_FRAME_END;
  return 8 + n;
}

static void entry_s(amqp_table_entry_t *e, const char *k, const char *v) {
  e->key = ab(k, strlen(k));
  e->value.kind = AMQP_FIELD_KIND_UTF8;
  e->value.value.bytes = ab(v, strlen(v));
}
static void entry_b(amqp_table_entry_t *e, const char *k, int b) {
  e->key = ab(k, strlen(k));
  e->value.kind = AMQP_FIELD_KIND_BOOLEAN;
  e->value.value.boolean = b;
}
static void entry_i(amqp_table_entry_t *e, const char *k, int32_t i) {
  e->key = ab(k, strlen(k));
  e->value.kind = AMQP_FIELD_KIND_I32;
  e->value.value.i32 = i;
}

/* The properties of cases 1-3 (what an application fills, headers table entries included). */
static void lib_fill_properties(amqp_basic_properties_t *p, amqp_table_entry_t headers[3]) {
  entry_s(&headers[0], "source", H_SOURCE);
  entry_s(&headers[1], "trace-id", H_TRACE);
  entry_b(&headers[2], "urgent", 1);
  memset(p, 0, sizeof *p);
  p->_flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
              AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG;
  p->content_type = AB(CONTENT_TYPE);
  p->headers.num_entries = 3;
  p->headers.entries = headers;
  p->delivery_mode = 2;
  p->message_id = AB(MESSAGE_ID);
  p->timestamp = TIMESTAMP;
}

/* case 1, librabbitmq: the application fills its structs (the headers table's entries too) */
static size_t lib_op_encode_publish(uint8_t *out, size_t cap) {
  amqp_basic_publish_t m;
  amqp_basic_properties_t p;
  amqp_table_entry_t headers[3];
  size_t n, len;
  memset(&m, 0, sizeof m);
  m.exchange = AB(EXCHANGE);
  m.routing_key = AB(ROUTING_KEY);
  lib_fill_properties(&p, headers);
  if ((len = lib_method_frame(out, cap, 1, AMQP_BASIC_PUBLISH_METHOD, &m)) == 0) return 0;
  if ((n = lib_header_frame(out + len, cap - len, 1, sizeof BODY_128, &p)) == 0) return 0;
  len += n;
  return len + lib_body_frame(out + len, 1, BODY_128, sizeof BODY_128);
}

/* What librabbitmq reports for a buffer of frames (its decoded structs live in its pools). */
typedef struct {
  int methods, headers, bodies;
  amqp_method_t m[2];
  amqp_basic_properties_t *p;
  uint64_t body_size;
  const uint8_t *body;
  size_t body_len;
} lgot_t;
static lgot_t g_lgot;

/* librabbitmq's inbound path: amqp_handle_input, as amqp_simple_wait_frame calls it on the bytes a
   socket read gave (it copies each frame into its channel pool and decodes it there); the pools are
   recycled after each operation (amqp_maybe_release_buffers), as a client does between messages. */
static amqp_connection_state_t g_conn;
static int lib_decode_handle_input(const uint8_t *wire, size_t len, lgot_t *g) {
  amqp_bytes_t in = ab(wire, len);
  amqp_frame_t f;
  g->methods = g->headers = g->bodies = 0;
  while (in.len > 0) {
    int used = amqp_handle_input(g_conn, in, &f);
    if (used <= 0) return -1;
    in.bytes = (uint8_t *)in.bytes + used;
    in.len -= (size_t)used;
    if (f.frame_type == AMQP_FRAME_METHOD) {
      if (g->methods == 2) return -1;
      g->m[g->methods++] = f.payload.method;
    } else if (f.frame_type == AMQP_FRAME_HEADER) {
      g->p = f.payload.properties.decoded;
      g->body_size = f.payload.properties.body_size;
      g->headers++;
    } else if (f.frame_type == AMQP_FRAME_BODY) {
      g->body = f.payload.body_fragment.bytes;
      g->body_len = f.payload.body_fragment.len;
      g->bodies++;
    } else if (f.frame_type != 0) {
      return -1;
    }
  }
  return 0;
}

/* librabbitmq's decoders alone over frames split by a minimal loop (the leanest use of it):
   amqp_decode_method / amqp_decode_properties into one pool, recycled after each operation. */
static amqp_pool_t g_pool;
static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static int lib_decode_decoders(const uint8_t *wire, size_t len, lgot_t *g) {
  size_t off = 0;
  g->methods = g->headers = g->bodies = 0;
  while (off < len) {
    uint32_t size;
    const uint8_t *pl;
    if (len - off < 8) return -1;
    size = get32(wire + off + 3);
    if (size > len - off - 8 || wire[off + 7 + size] != AMQP_FRAME_END) return -1;
    pl = wire + off + 7;
    switch (wire[off]) {
      case AMQP_FRAME_METHOD:
        if (g->methods == 2 || size < 4) return -1;
        g->m[g->methods].id = get32(pl);
        if (amqp_decode_method(g->m[g->methods].id, &g_pool, ab(pl + 4, size - 4), &g->m[g->methods].decoded) < 0)
          return -1;
        g->methods++;
        break;
      case AMQP_FRAME_HEADER: {
        void *d;
        if (size < 12) return -1;
        if (amqp_decode_properties((uint16_t)(pl[0] << 8 | pl[1]), &g_pool, ab(pl + 12, size - 12), &d) < 0)
          return -1;
        g->p = d;
        g->body_size = (uint64_t)get32(pl + 4) << 32 | get32(pl + 8);
        g->headers++;
        break;
      }
      case AMQP_FRAME_BODY:
        g->body = pl;
        g->body_len = size;
        g->bodies++;
        break;
      default: return -1;
    }
    off += 8 + size;
  }
  return 0;
}

static int lib_op_decode_hi(const wire_t *w) {
  int st = lib_decode_handle_input(w->wire, w->len, &g_lgot);
  amqp_maybe_release_buffers(g_conn);
  sink += (size_t)g_lgot.methods;
  return st;
}
static int lib_op_decode_dec(const wire_t *w) {
  int st = lib_decode_decoders(w->wire, w->len, &g_lgot);
  recycle_amqp_pool(&g_pool);
  sink += (size_t)g_lgot.methods;
  return st;
}

static size_t lib_encode_declare(uint8_t *out, size_t cap) {
  amqp_queue_declare_t m;
  amqp_table_entry_t args[N_QARGS];
  int i;
  memset(&m, 0, sizeof m);
  m.queue = AB(QUEUE);
  m.durable = 1;
  for (i = 0; i < N_QARGS; i++) {
    if (QARG_S[i]) entry_s(&args[i], QARG_KEYS[i], QARG_S[i]);
    else entry_i(&args[i], QARG_KEYS[i], QARG_I[i]);
  }
  m.arguments.num_entries = N_QARGS;
  m.arguments.entries = args;
  return lib_method_frame(out, cap, 1, AMQP_QUEUE_DECLARE_METHOD, &m);
}
static uint8_t lib_out[1 << 16];
static size_t lib_op_declare_hi(void) {
  size_t len = lib_encode_declare(lib_out, sizeof lib_out);
  wire_t w;
  w.wire = lib_out;
  w.len = len;
  return lib_op_decode_hi(&w) == 0 ? len : 0;
}
static size_t lib_op_declare_dec(void) {
  size_t len = lib_encode_declare(lib_out, sizeof lib_out);
  wire_t w;
  w.wire = lib_out;
  w.len = len;
  return lib_op_decode_dec(&w) == 0 ? len : 0;
}

/* -- librabbitmq's reported values against the constants --------------------------------------- */
static bool leq(amqp_bytes_t b, const char *s) { return b.len == strlen(s) && memcmp(b.bytes, s, b.len) == 0; }
static bool lib_props_ok(const lgot_t *g, uint64_t size) {
  const amqp_basic_properties_t *p = g->p;
  const amqp_table_t *h = &p->headers;
  return g->body_size == size &&
         p->_flags == (AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                       AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG) &&
         leq(p->content_type, CONTENT_TYPE) && p->delivery_mode == 2 && leq(p->message_id, MESSAGE_ID) &&
         p->timestamp == TIMESTAMP && h->num_entries == 3 && leq(h->entries[0].key, "source") &&
         h->entries[0].value.kind == 'S' && leq(h->entries[0].value.value.bytes, H_SOURCE) &&
         leq(h->entries[1].key, "trace-id") && h->entries[1].value.kind == 'S' &&
         leq(h->entries[1].value.value.bytes, H_TRACE) && leq(h->entries[2].key, "urgent") &&
         h->entries[2].value.kind == 't' && h->entries[2].value.value.boolean;
}
static int lib_check(int c, const lgot_t *g) {
  switch (c) {
    case 2: {
      const amqp_basic_publish_t *m = g->m[0].decoded;
      if (g->methods != 1 || g->headers != 1 || g->bodies != 1 || g->m[0].id != AMQP_BASIC_PUBLISH_METHOD) return 2;
      if (!leq(m->exchange, EXCHANGE) || !leq(m->routing_key, ROUTING_KEY) || m->mandatory || m->immediate) return 3;
      if (!lib_props_ok(g, 128)) return 4;
      return g->body_len == 128 && memcmp(g->body, BODY_128, 128) == 0 ? 0 : 5;
    }
    case 3: {
      const amqp_basic_deliver_t *m = g->m[0].decoded;
      if (g->methods != 1 || g->headers != 1 || g->bodies != 1 || g->m[0].id != AMQP_BASIC_DELIVER_METHOD) return 2;
      if (!leq(m->consumer_tag, CONSUMER_TAG) || m->delivery_tag != DELIVERY_TAG || !m->redelivered ||
          !leq(m->exchange, EXCHANGE) || !leq(m->routing_key, ROUTING_KEY))
        return 3;
      if (!lib_props_ok(g, 1024)) return 4;
      return g->body_len == 1024 && memcmp(g->body, BODY_1K, 1024) == 0 ? 0 : 5;
    }
    case 4: {
      const amqp_connection_start_t *m = g->m[0].decoded;
      const amqp_table_t *t = &m->server_properties, *caps;
      int i;
      if (g->methods != 1 || g->m[0].id != AMQP_CONNECTION_START_METHOD) return 2;
      if (m->version_major != 0 || m->version_minor != 9 || !leq(m->mechanisms, "AMQPLAIN PLAIN") ||
          !leq(m->locales, "en_US") || t->num_entries != 1 + N_SERVER)
        return 3;
      if (!leq(t->entries[0].key, "capabilities") || t->entries[0].value.kind != 'F') return 4;
      caps = &t->entries[0].value.value.table;
      if (caps->num_entries != N_CAPS) return 5;
      for (i = 0; i < N_CAPS; i++)
        if (!leq(caps->entries[i].key, CAPS[i]) || caps->entries[i].value.kind != 't' ||
            !caps->entries[i].value.value.boolean)
          return 5;
      for (i = 0; i < N_SERVER; i++)
        if (!leq(t->entries[1 + i].key, SERVER_KEYS[i]) || t->entries[1 + i].value.kind != 'S' ||
            !leq(t->entries[1 + i].value.value.bytes, SERVER_VALUES[i]))
          return 6;
      return 0;
    }
    case 5: {
      const amqp_queue_declare_t *m = g->m[0].decoded;
      int i;
      if (g->methods != 1 || g->m[0].id != AMQP_QUEUE_DECLARE_METHOD) return 2;
      if (!leq(m->queue, QUEUE) || m->passive || !m->durable || m->exclusive || m->auto_delete || m->nowait) return 3;
      if (m->arguments.num_entries != N_QARGS) return 4;
      for (i = 0; i < N_QARGS; i++) {
        const amqp_table_entry_t *e = &m->arguments.entries[i];
        if (!leq(e->key, QARG_KEYS[i])) return 4;
        if (QARG_S[i] ? (e->value.kind != 'S' || !leq(e->value.value.bytes, QARG_S[i]))
                      : (e->value.kind != 'I' || e->value.value.i32 != QARG_I[i]))
          return 5;
      }
      return 0;
    }
    default: return 9;
  }
}

/* -- the decode cases' input, written by librabbitmq (and checked equal to ours where we encode) -- */
static uint8_t wire_publish[4096], wire_deliver[4096], wire_start[4096];
static wire_t W[6];

static void build_wires(void) {
  size_t len, n;
  /* 2: what case 1 writes */
  W[2].wire = wire_publish;
  W[2].len = lib_op_encode_publish(wire_publish, sizeof wire_publish);
  /* 3: deliver */
  {
    amqp_basic_deliver_t m;
    amqp_basic_properties_t p;
    amqp_table_entry_t headers[3];
    memset(&m, 0, sizeof m);
    m.consumer_tag = AB(CONSUMER_TAG);
    m.delivery_tag = DELIVERY_TAG;
    m.redelivered = 1;
    m.exchange = AB(EXCHANGE);
    m.routing_key = AB(ROUTING_KEY);
    lib_fill_properties(&p, headers);
    len = lib_method_frame(wire_deliver, sizeof wire_deliver, 1, AMQP_BASIC_DELIVER_METHOD, &m);
    n = lib_header_frame(wire_deliver + len, sizeof wire_deliver - len, 1, sizeof BODY_1K, &p);
    len += n;
    len += lib_body_frame(wire_deliver + len, 1, BODY_1K, sizeof BODY_1K);
    W[3].wire = wire_deliver;
    W[3].len = len;
  }
  /* 4: connection.start */
  {
    amqp_connection_start_t m;
    amqp_table_entry_t top[1 + N_SERVER], caps[N_CAPS];
    int i;
    for (i = 0; i < N_CAPS; i++) entry_b(&caps[i], CAPS[i], 1);
    top[0].key = AB("capabilities");
    top[0].value.kind = AMQP_FIELD_KIND_TABLE;
    top[0].value.value.table.num_entries = N_CAPS;
    top[0].value.value.table.entries = caps;
    for (i = 0; i < N_SERVER; i++) entry_s(&top[1 + i], SERVER_KEYS[i], SERVER_VALUES[i]);
    memset(&m, 0, sizeof m);
    m.version_major = 0;
    m.version_minor = 9;
    m.server_properties.num_entries = 1 + N_SERVER;
    m.server_properties.entries = top;
    m.mechanisms = AB("AMQPLAIN PLAIN");
    m.locales = AB("en_US");
    W[4].wire = wire_start;
    W[4].len = lib_method_frame(wire_start, sizeof wire_start, 0, AMQP_CONNECTION_START_METHOD, &m);
  }
}

/* -- the libraries and cases as a grid of operations ------------------------------------------- */
enum { L_AG, L_AGN, L_HI, L_DEC, N_LIBS };
static const char *const LIB_NAMES[N_LIBS] = {"amqgen", "amqgen no-UTF-8-check", "librabbitmq handle_input",
                                              "librabbitmq decoders"};
static const char *const CASE_NAMES[6] = {"", "1 encode basic.publish+header+128B body",
                                          "2 decode basic.publish+header+128B body",
                                          "3 decode basic.deliver+header+1KiB body",
                                          "4 decode connection.start (RabbitMQ-like)",
                                          "5 encode+decode queue.declare w/ arguments"};
static uint8_t op_out[1 << 16];

/* One operation of case c with library l; non-zero = it worked. */
static int run_op(int c, int l) {
  switch (c) {
    case 1:
      switch (l) {
        case L_AG: return ag_op_encode_publish(op_out, sizeof op_out) != 0;
        case L_AGN: return agn_op_encode_publish(op_out, sizeof op_out) != 0;
        default: return lib_op_encode_publish(op_out, sizeof op_out) != 0;
      }
    case 5:
      switch (l) {
        case L_AG: return ag_op_declare(op_out, sizeof op_out) != 0;
        case L_AGN: return agn_op_declare(op_out, sizeof op_out) != 0;
        case L_HI: return lib_op_declare_hi() != 0;
        default: return lib_op_declare_dec() != 0;
      }
    default:
      switch (l) {
        case L_AG: return ag_op_decode(&W[c]) == 0;
        case L_AGN: return agn_op_decode(&W[c]) == 0;
        case L_HI: return lib_op_decode_hi(&W[c]) == 0;
        default: return lib_op_decode_dec(&W[c]) == 0;
      }
  }
}

/* callgrind counts this function alone (--toggle-collect=bench_loop) */
__attribute__((noinline)) int bench_loop(int c, int l, long n) {
  long i;
  int ok = 1;
  for (i = 0; i < n; i++) ok &= run_op(c, l);
  return ok;
}

static int fail(const char *what, int c, int code) {
  fprintf(stderr, "bench_c: case %d: %s (check %d)\n", c, what, code);
  return 1;
}

/* Equal work: the same octets from every encoder; every decoder reports the case's values. */
static int verify(void) {
  uint8_t a[4096], b[4096], d[4096];
  size_t la, lb, ld;
  int c, st;
  la = ag_op_encode_publish(a, sizeof a);
  lb = agn_op_encode_publish(b, sizeof b);
  ld = lib_op_encode_publish(d, sizeof d);
  if (la == 0 || la != ld || memcmp(a, d, la) != 0 || lb != la || memcmp(a, b, la) != 0) {
    size_t i;
    for (i = 0; i < la && i < ld && a[i] == d[i]; i++) {
    }
    fprintf(stderr, "amqgen %zu octets, librabbitmq %zu; first difference at %zu\n", la, ld, i);
    for (i = 0; i < la; i++) fprintf(stderr, "%02x", a[i]);
    fprintf(stderr, " (amqgen)\n");
    for (i = 0; i < ld; i++) fprintf(stderr, "%02x", d[i]);
    fprintf(stderr, " (librabbitmq)\n");
    return fail("encoders wrote different octets", 1, 0);
  }
  la = ag_op_declare(a, sizeof a);
  lb = agn_op_declare(b, sizeof b);
  ld = lib_encode_declare(d, sizeof d);
  if (la == 0 || la != ld || memcmp(a, d, la) != 0 || lb != la || memcmp(a, b, la) != 0)
    return fail("encoders wrote different octets", 5, 0);
  for (c = 2; c <= 5; c++) {
    if ((st = ag_check(c, &W[c])) != 0) return fail("amqgen decoded other values", c, st);
    if ((st = agn_check(c, &W[c])) != 0) return fail("amqgen (no UTF-8 check) decoded other values", c, st);
    if (c == 5) {
      W[5].wire = lib_out;
      W[5].len = lib_encode_declare(lib_out, sizeof lib_out);
    }
    if (lib_decode_handle_input(W[c].wire, W[c].len, &g_lgot) != 0 || (st = lib_check(c, &g_lgot)) != 0)
      return fail("librabbitmq handle_input decoded other values", c, st);
    amqp_maybe_release_buffers(g_conn);
    if (lib_decode_decoders(W[c].wire, W[c].len, &g_lgot) != 0 || (st = lib_check(c, &g_lgot)) != 0)
      return fail("librabbitmq decoders decoded other values", c, st);
    recycle_amqp_pool(&g_pool);
  }
  for (c = 1; c <= 5; c++) {
    int l;
    for (l = 0; l < N_LIBS; l++)
      if (!run_op(c, l)) return fail(LIB_NAMES[l], c, -1);
  }
  return 0;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Best of `repeat` runs, each at least min_ns long: ns per operation. */
static double time_op(int c, int l, int repeat, double min_ns) {
  long n = 1;
  double best = 1e300, t0, t;
  int r;
  for (;;) { /* autorange */
    t0 = now_ns();
    bench_loop(c, l, n);
    t = now_ns() - t0;
    if (t >= min_ns) break;
    n *= 2;
  }
  for (r = 0; r < repeat; r++) {
    t0 = now_ns();
    bench_loop(c, l, n);
    t = (now_ns() - t0) / (double)n;
    if (t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  int repeat = 5, c, l;
  double min_ns = 2e8;
  init_bodies();
  g_conn = amqp_new_connection();
  init_amqp_pool(&g_pool, 4096);
  build_wires();
  if (verify() != 0) return 1;
  if (argc == 5 && strcmp(argv[1], "--loop") == 0) {
    c = atoi(argv[2]);
    l = atoi(argv[3]);
    if (c < 1 || c > 5 || l < 0 || l >= N_LIBS) return 2;
    run_op(c, l); /* warm: first-touch of pools and buffers stays out of the count */
    return bench_loop(c, l, atol(argv[4])) ? 0 : 1;
  }
  for (c = 1; c + 1 < argc; c += 2) {
    if (strcmp(argv[c], "--repeat") == 0) repeat = atoi(argv[c + 1]);
    else if (strcmp(argv[c], "--min-ns") == 0) min_ns = atof(argv[c + 1]);
  }
  printf("verified: every encoder writes the same octets, every decoder reports the case's values\n");
  printf("librabbitmq %s\n", amqp_version());
  for (c = 1; c <= 5; c++) {
    printf("case\t%s", CASE_NAMES[c]);
    for (l = 0; l < N_LIBS; l++) printf("\t%s=%.1f", LIB_NAMES[l], time_op(c, l, repeat, min_ns));
    printf("\n");
    fflush(stdout);
  }
  amqp_destroy_connection(g_conn);
  empty_amqp_pool(&g_pool);
  return (int)(sink & 0);
}
#endif
