/* A RabbitMQ client written with only the generated C library ("ag", RabbitMQ's 0-9-1 extended spec)
 * and POSIX sockets (run by tests/amqp0/c/test_c_broker.py).
 *
 * usage: broker_run HOST PORT USER PASSWORD NAME COUNT
 * Handshake (PLAIN), tune to frame_max 4096, exchange and queue declared and bound with argument
 * tables, confirm.select, COUNT messages with properties and header tables (every 10th body larger
 * than frame_max, some empty) published in batches of 100 and all confirmed, consumed back and acked,
 * every body and property compared with what was sent, then a clean close of channel and connection.
 * Prints "OK COUNT messages ..." and exits 0, or one line saying what went wrong and exits 1
 * (2: no broker answered).
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "ag.h"

#define FRAME_MAX 4096
#define MAX_BODY (5 * FRAME_MAX)
#define BATCH 100

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("FAIL ", stdout);
  vprintf(fmt, ap);
  fputc('\n', stdout);
  va_end(ap);
  exit(1);
}

/* -- the connection: a socket and the generated frame reader over a receive buffer ------------- */
typedef struct {
  int fd;
  ag_reader_t reader;
  uint8_t storage[1 << 17]; /* gathers frames split across reads (>= any frame_max in use) */
  uint8_t rbuf[1 << 16];    /* what recv() wrote; the reader returns frames in place from here */
  uint8_t wbuf[1 << 20];
  size_t wlen;
} conn_t;

static void send_all(conn_t *c, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      die("send: %s", strerror(errno));
    }
    p += k;
    n -= (size_t)k;
  }
}

static void flush(conn_t *c) {
  send_all(c, c->wbuf, c->wlen);
  c->wlen = 0;
}

static void send_method(conn_t *c, uint16_t channel, const ag_method_t *m) {
  size_t len = 0;
  int st = ag_method_frame_encode(channel, m, c->wbuf + c->wlen, sizeof c->wbuf - c->wlen, &len);
  if (st != AG_OK) die("encode %s: %s", ag_method_name(m->id), ag_status_name(st));
  c->wlen += len;
  flush(c);
}

/* The next frame (valid until the next call). */
static ag_frame_t next_frame(conn_t *c) {
  ag_frame_t f;
  for (;;) {
    ssize_t k;
    int st = ag_reader_next(&c->reader, &f);
    if (st == AG_OK) return f;
    if (st != AG_INCOMPLETE) die("frame reader: %s", ag_status_name(st));
    k = recv(c->fd, c->rbuf, sizeof c->rbuf, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) die("recv: %s (the broker did not answer in time)", strerror(errno));
    if (k == 0) die("the broker closed the connection");
    ag_reader_feed(&c->reader, c->rbuf, (size_t)k);
  }
}

static void decode_method(const ag_frame_t *f, ag_method_t *m) {
  int st;
  if (f->type != AG_FRAME_METHOD) die("expected a method frame, got frame type %d", f->type);
  st = ag_method_decode(f->payload.bytes, f->payload.len, m);
  if (st != AG_OK) die("method decode: %s", ag_status_name(st));
  if (m->id == AG_CONNECTION_CLOSE)
    die("broker closed the connection: %u %.*s", m->u.connection_close.reply_code,
        (int)m->u.connection_close.reply_text.len, (const char *)m->u.connection_close.reply_text.bytes);
  if (m->id == AG_CHANNEL_CLOSE)
    die("broker closed the channel: %u %.*s", m->u.channel_close.reply_code,
        (int)m->u.channel_close.reply_text.len, (const char *)m->u.channel_close.reply_text.bytes);
}

static ag_method_t expect(conn_t *c, uint32_t id) {
  ag_method_t m;
  ag_frame_t f = next_frame(c);
  decode_method(&f, &m);
  if (m.id != id) die("expected %s, got %s", ag_method_name(id), ag_method_name(m.id));
  return m;
}

static ag_method_t call(conn_t *c, uint16_t channel, const ag_method_t *m, uint32_t reply) {
  send_method(c, channel, m);
  return expect(c, reply);
}

static ag_bytes_t str(const char *s) {
  ag_bytes_t b;
  b.bytes = (const uint8_t *)s;
  b.len = strlen(s);
  return b;
}

static void key(ag_table_writer_t *w, const char *k) { ag_table_put_key(w, ag_cstring(k)); }
static void put_i(ag_table_writer_t *w, char code, int64_t i) {
  ag_field_value_t v;
  memset(&v, 0, sizeof v);
  v.type = (uint8_t)code;
  v.v.i = i;
  ag_table_put(w, &v);
}
static void put_u(ag_table_writer_t *w, char code, uint64_t u) {
  ag_field_value_t v;
  memset(&v, 0, sizeof v);
  v.type = (uint8_t)code;
  v.v.u = u;
  ag_table_put(w, &v);
}
static void put_s(ag_table_writer_t *w, char code, const void *p, size_t n) {
  ag_field_value_t v;
  memset(&v, 0, sizeof v);
  v.type = (uint8_t)code;
  v.v.bytes.bytes = p;
  v.v.bytes.len = n;
  ag_table_put(w, &v);
}
static void put_t(ag_table_writer_t *w, bool b) {
  ag_field_value_t v;
  memset(&v, 0, sizeof v);
  v.type = 't';
  v.v.boolean = b;
  ag_table_put(w, &v);
}
/* one-call entries (key and value) */
static void add_i(ag_table_writer_t *w, const char *k, int32_t i) { ag_table_add_i32(w, ag_cstring(k), i); }
static void add_s(ag_table_writer_t *w, const char *k, const char *s) {
  ag_table_add_str(w, ag_cstring(k), ag_cstring(s));
}
static void add_t(ag_table_writer_t *w, const char *k, bool b) { ag_table_add_bool(w, ag_cstring(k), b); }
static ag_table_t finish(ag_table_writer_t *w) {
  ag_table_t t;
  int st = ag_table_writer_finish(w, &t);
  if (st != AG_OK) die("table writer: %s", ag_status_name(st));
  return t;
}

/* Walks a decoded table for one key; the value's type must be `type`. */
static bool find(ag_table_t t, const char *k, ag_field_value_t *out) {
  ag_table_iter_t it;
  ag_bytes_t kk;
  ag_table_iter_init(&it, t);
  while (ag_table_next(&it, &kk, out) == 1)
    if (kk.len == strlen(k) && memcmp(kk.bytes, k, kk.len) == 0) return true;
  return false;
}

/* Two tables equal entry by entry: keys, type codes and values (nested tables and arrays too). */
static bool same_value(const ag_field_value_t *a, const ag_field_value_t *b);
static bool same_table(ag_table_t a, ag_table_t b) {
  ag_table_iter_t ia, ib;
  ag_bytes_t ka, kb;
  ag_field_value_t va, vb;
  int ra, rb;
  ag_table_iter_init(&ia, a);
  ag_table_iter_init(&ib, b);
  for (;;) {
    ra = ag_table_next(&ia, &ka, &va);
    rb = ag_table_next(&ib, &kb, &vb);
    if (ra != rb || ra < 0) return false;
    if (ra == 0) return true;
    if (ka.len != kb.len || memcmp(ka.bytes, kb.bytes, ka.len) != 0 || !same_value(&va, &vb)) return false;
  }
}
static bool same_array(ag_array_t a, ag_array_t b) {
  ag_table_iter_t ia, ib;
  ag_field_value_t va, vb;
  int ra, rb;
  ag_array_iter_init(&ia, a);
  ag_array_iter_init(&ib, b);
  for (;;) {
    ra = ag_array_next(&ia, &va);
    rb = ag_array_next(&ib, &vb);
    if (ra != rb || ra < 0) return false;
    if (ra == 0) return true;
    if (!same_value(&va, &vb)) return false;
  }
}
static bool same_bytes(ag_bytes_t a, ag_bytes_t b) {
  return a.len == b.len && (a.len == 0 || memcmp(a.bytes, b.bytes, a.len) == 0);
}
static bool same_value(const ag_field_value_t *a, const ag_field_value_t *b) {
  if (a->type != b->type) return false;
  switch (a->type) {
    case 't': return a->v.boolean == b->v.boolean;
    case 'b': case 's': case 'I': case 'l': case 'L': case 'U': return a->v.i == b->v.i;
    case 'B': case 'u': case 'i': return a->v.u == b->v.u;
    case 'f': return a->v.f32_bits == b->v.f32_bits;
    case 'd': return a->v.f64_bits == b->v.f64_bits;
    case 'D': return a->v.decimal.scale == b->v.decimal.scale && a->v.decimal.value == b->v.decimal.value;
    case 'S': case 'x': return same_bytes(a->v.bytes, b->v.bytes);
    case 'T': return a->v.timestamp == b->v.timestamp;
    case 'F': return same_table(a->v.table, b->v.table);
    case 'A': return same_array(a->v.array, b->v.array);
    case 'V': return true;
    default: return false;
  }
}

/* -- the messages: everything derived from the index, so nothing needs keeping ------------------ */
static uint64_t mix(uint64_t x) { /* splitmix64 */
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

static size_t body_size(int i) {
  if (i % 10 == 0) return FRAME_MAX + (size_t)(mix((uint64_t)i) % (4 * FRAME_MAX)); /* over frame_max */
  if (i % 37 == 0) return 0;
  return 1 + (size_t)(mix((uint64_t)i) % (FRAME_MAX - 100));
}

static void body(int i, uint8_t *out, size_t n) {
  size_t k;
  for (k = 0; k < n; k++) out[k] = (uint8_t)mix(((uint64_t)i << 32) | k);
}

typedef struct {
  char corr[32], reply_to[32], msg_id[32], text[64];
  uint8_t headers[2048];
} scratch_t;

static const char *g_user;

/* Message i's properties (strings point into s). */
static ag_basic_properties_t props(int i, scratch_t *s) {
  ag_basic_properties_t p;
  ag_table_writer_t w;
  ag_field_value_t v;
  uint8_t raw[3];
  memset(&p, 0, sizeof p);
  snprintf(s->corr, sizeof s->corr, "corr-%d", i);
  snprintf(s->reply_to, sizeof s->reply_to, "replies.%d", i);
  snprintf(s->msg_id, sizeof s->msg_id, "msg-%04d", i);
  snprintf(s->text, sizeof s->text, "message %d \xe2\x9c\x93 \xe6\x9d\xb1\xe4\xba\xac", i);
  ag_table_writer_init(&w, s->headers, sizeof s->headers);
  add_i(&w, "index", i);
  key(&w, "neg"); put_i(&w, 'l', -(int64_t)i - 1);
  key(&w, "big"); put_i(&w, 'l', ((int64_t)1 << 40) + i);
  key(&w, "short"); put_i(&w, 's', -(int64_t)(i % 30000));
  key(&w, "byte"); put_i(&w, 'b', -(int64_t)(i % 128));
  key(&w, "ubyte"); put_u(&w, 'B', (uint64_t)(i % 256));
  add_s(&w, "text", s->text);
  add_t(&w, "flag", i % 2 == 0);
  key(&w, "nested");
  ag_table_begin_table(&w);
  key(&w, "level");
  ag_table_begin_table(&w);
  add_i(&w, "i", i);
  key(&w, "arr");
  ag_table_begin_array(&w);
  put_i(&w, 'I', i);
  put_s(&w, 'S', "x", 1);
  ag_table_begin_table(&w);
  add_t(&w, "deep", true);
  ag_table_end_table(&w);
  ag_table_begin_array(&w);
  ag_table_end_array(&w);
  ag_table_end_array(&w);
  ag_table_end_table(&w);
  ag_table_end_table(&w);
  key(&w, "dec");
  memset(&v, 0, sizeof v);
  v.type = 'D';
  v.v.decimal.scale = 2;
  v.v.decimal.value = (uint32_t)i;
  ag_table_put(&w, &v);
  key(&w, "when");
  memset(&v, 0, sizeof v);
  v.type = 'T';
  v.v.timestamp = 1735689600u + (uint64_t)i;
  ag_table_put(&w, &v);
  raw[0] = (uint8_t)i;
  raw[1] = 0;
  raw[2] = 255;
  key(&w, "raw"); put_s(&w, 'x', raw, sizeof raw);
  key(&w, "float");
  memset(&v, 0, sizeof v);
  v.type = 'd';
  {
    double d = i / 7.0;
    memcpy(&v.v.f64_bits, &d, sizeof d);
  }
  ag_table_put(&w, &v);
  key(&w, "void");
  memset(&v, 0, sizeof v);
  v.type = 'V';
  ag_table_put(&w, &v);
  p.headers = finish(&w);
  p.flags = AG_BASIC_CONTENT_TYPE_FLAG | AG_BASIC_HEADERS_FLAG | AG_BASIC_DELIVERY_MODE_FLAG | AG_BASIC_PRIORITY_FLAG |
            AG_BASIC_CORRELATION_ID_FLAG | AG_BASIC_EXPIRATION_FLAG | AG_BASIC_MESSAGE_ID_FLAG |
            AG_BASIC_TIMESTAMP_FLAG | AG_BASIC_TYPE_FLAG | AG_BASIC_USER_ID_FLAG | AG_BASIC_APP_ID_FLAG;
  p.content_type = str("application/octet-stream");
  if (i % 3) {
    p.flags |= AG_BASIC_CONTENT_ENCODING_FLAG;
    p.content_encoding = str("identity");
  }
  p.delivery_mode = (uint8_t)(1 + i % 2);
  p.priority = (uint8_t)(i % 10);
  p.correlation_id = str(s->corr);
  if (i % 5 == 0) {
    p.flags |= AG_BASIC_REPLY_TO_FLAG;
    p.reply_to = str(s->reply_to);
  }
  p.expiration = str("600000");
  p.message_id = str(s->msg_id);
  p.timestamp = 1700000000u + (uint64_t)i;
  p.type = str("amqgen.test");
  p.user_id = str(g_user); /* RabbitMQ checks user-id against the authenticated user */
  p.app_id = str("amqgen");
  return p;
}

/* Every property: present on both or neither, and equal. Returns the first that differs, or NULL. */
static const char *diff_props(const ag_basic_properties_t *a, const ag_basic_properties_t *b) {
  if (a->flags != b->flags) return "flags";
#define SAME_STR(f, flag) if ((a->flags & flag) && !same_bytes(a->f, b->f)) return #f
  SAME_STR(content_type, AG_BASIC_CONTENT_TYPE_FLAG);
  SAME_STR(content_encoding, AG_BASIC_CONTENT_ENCODING_FLAG);
  SAME_STR(correlation_id, AG_BASIC_CORRELATION_ID_FLAG);
  SAME_STR(reply_to, AG_BASIC_REPLY_TO_FLAG);
  SAME_STR(expiration, AG_BASIC_EXPIRATION_FLAG);
  SAME_STR(message_id, AG_BASIC_MESSAGE_ID_FLAG);
  SAME_STR(type, AG_BASIC_TYPE_FLAG);
  SAME_STR(user_id, AG_BASIC_USER_ID_FLAG);
  SAME_STR(app_id, AG_BASIC_APP_ID_FLAG);
#undef SAME_STR
  if ((a->flags & AG_BASIC_DELIVERY_MODE_FLAG) && a->delivery_mode != b->delivery_mode) return "delivery_mode";
  if ((a->flags & AG_BASIC_PRIORITY_FLAG) && a->priority != b->priority) return "priority";
  if ((a->flags & AG_BASIC_TIMESTAMP_FLAG) && a->timestamp != b->timestamp) return "timestamp";
  if ((a->flags & AG_BASIC_HEADERS_FLAG) && !same_table(a->headers, b->headers)) return "headers";
  return NULL;
}

static conn_t g_conn;

int main(int argc, char **argv) {
  conn_t *c = &g_conn;
  const char *host, *port, *pass, *name;
  int count, i, st, confirmed_upto = 0, received = 0, over = 0, empty = 0, acks = 0;
  struct addrinfo hints, *res = NULL, *ai;
  struct timeval tv;
  ag_method_t m, r;
  ag_table_writer_t w;
  uint8_t ctab[1024], xargs[512], qargs[512], bargs[256];
  char response[512], exchange[128], queue[128], rkey[128], ctag[128];
  size_t plen;
  static uint8_t bodybuf[MAX_BODY], expect_body[MAX_BODY];
  uint64_t pending_tag = 0;

  if (argc != 7) {
    fprintf(stderr, "usage: %s HOST PORT USER PASSWORD NAME COUNT\n", argv[0]);
    return 2;
  }
  host = argv[1];
  port = argv[2];
  g_user = argv[3];
  pass = argv[4];
  name = argv[5];
  count = atoi(argv[6]);
  snprintf(exchange, sizeof exchange, "%s.x", name);
  snprintf(queue, sizeof queue, "%s.q", name);
  snprintf(rkey, sizeof rkey, "%s.rk", name);
  snprintf(ctag, sizeof ctag, "%s.ctag", name);

  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, port, &hints, &res) != 0) {
    printf("NO BROKER cannot resolve %s\n", host);
    return 2;
  }
  c->fd = -1;
  for (ai = res; ai && c->fd < 0; ai = ai->ai_next) {
    c->fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (c->fd >= 0 && connect(c->fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      close(c->fd);
      c->fd = -1;
    }
  }
  freeaddrinfo(res);
  if (c->fd < 0) {
    printf("NO BROKER no AMQP broker answers on %s:%s: %s\n", host, port, strerror(errno));
    return 2;
  }
  tv.tv_sec = 30; /* a hang is a failure, not a stuck test */
  tv.tv_usec = 0;
  setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  i = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &i, sizeof i);
  ag_reader_init(&c->reader, c->storage, sizeof c->storage, 0);

  /* -- handshake -- */
  send_all(c, ag_protocol_header, 8);
  r = expect(c, AG_CONNECTION_START);
  {
    ag_field_value_t caps, v;
    const ag_connection_start_t *s = &r.u.connection_start;
    if (s->version_major != 0 || s->version_minor != 9) die("server speaks %d-%d", s->version_major, s->version_minor);
    if (!find(s->server_properties, "product", &v) || v.type != 'S' || v.v.bytes.len != 8 ||
        memcmp(v.v.bytes.bytes, "RabbitMQ", 8) != 0)
      die("server-properties.product is not RabbitMQ");
    if (!find(s->server_properties, "capabilities", &caps) || caps.type != 'F' ||
        !find(caps.v.table, "publisher_confirms", &v) || v.type != 't' || !v.v.boolean)
      die("no publisher_confirms capability");
    {
      size_t n = s->mechanisms.len < sizeof response - 1 ? s->mechanisms.len : sizeof response - 1;
      memcpy(response, s->mechanisms.bytes, n);
      response[n] = '\0';
      if (!strstr(response, "PLAIN")) die("PLAIN not offered (%s)", response);
    }
  }
  ag_table_writer_init(&w, ctab, sizeof ctab);
  key(&w, "product"); put_s(&w, 'S', "amqgen-c", 8);
  key(&w, "platform"); put_s(&w, 'S', "C99 + POSIX sockets", 19);
  key(&w, "capabilities");
  ag_table_begin_table(&w);
  key(&w, "publisher_confirms"); put_t(&w, true);
  key(&w, "consumer_cancel_notify"); put_t(&w, true);
  key(&w, "basic.nack"); put_t(&w, true);
  ag_table_end_table(&w);
  memset(&m, 0, sizeof m);
  m.id = AG_CONNECTION_START_OK;
  m.u.connection_start_ok.client_properties = finish(&w);
  m.u.connection_start_ok.mechanism = str("PLAIN");
  plen = (size_t)snprintf(response, sizeof response, "%c%s%c%s", 0, g_user, 0, pass);
  m.u.connection_start_ok.response.bytes = (const uint8_t *)response;
  m.u.connection_start_ok.response.len = plen;
  m.u.connection_start_ok.locale = str("en_US");
  r = call(c, 0, &m, AG_CONNECTION_TUNE);
  {
    uint16_t channel_max = r.u.connection_tune.channel_max;
    if (r.u.connection_tune.frame_max != 0 && r.u.connection_tune.frame_max < FRAME_MAX)
      die("server frame_max %u", r.u.connection_tune.frame_max);
    memset(&m, 0, sizeof m);
    m.id = AG_CONNECTION_TUNE_OK;
    m.u.connection_tune_ok.channel_max = channel_max ? channel_max : 2047;
    m.u.connection_tune_ok.frame_max = FRAME_MAX;
    m.u.connection_tune_ok.heartbeat = 0;
    send_method(c, 0, &m);
  }
  ag_reader_set_frame_max(&c->reader, FRAME_MAX);
  memset(&m, 0, sizeof m);
  m.id = AG_CONNECTION_OPEN;
  m.u.connection_open.virtual_host = str("/");
  call(c, 0, &m, AG_CONNECTION_OPEN_OK);

  /* -- channel, topology with argument tables, confirms -- */
  memset(&m, 0, sizeof m);
  m.id = AG_CHANNEL_OPEN;
  call(c, 1, &m, AG_CHANNEL_OPEN_OK);

  ag_table_writer_init(&w, xargs, sizeof xargs);
  key(&w, "x-amqgen");
  ag_table_begin_table(&w);
  key(&w, "run"); put_s(&w, 'S', name, strlen(name));
  key(&w, "list");
  ag_table_begin_array(&w);
  put_i(&w, 'I', 1);
  put_s(&w, 'S', "a", 1);
  ag_table_end_array(&w);
  ag_table_end_table(&w);
  memset(&m, 0, sizeof m);
  m.id = AG_EXCHANGE_DECLARE;
  m.u.exchange_declare.exchange = str(exchange);
  m.u.exchange_declare.type = str("direct");
  m.u.exchange_declare.auto_delete = true;
  m.u.exchange_declare.arguments = finish(&w);
  call(c, 1, &m, AG_EXCHANGE_DECLARE_OK);

  ag_table_writer_init(&w, qargs, sizeof qargs);
  key(&w, "x-max-length"); put_i(&w, 'I', 100000);
  key(&w, "x-message-ttl"); put_i(&w, 'l', 600000);
  key(&w, "x-queue-type"); put_s(&w, 'S', "classic", 7);
  memset(&m, 0, sizeof m);
  m.id = AG_QUEUE_DECLARE;
  m.u.queue_declare.queue = str(queue);
  m.u.queue_declare.exclusive = true;
  m.u.queue_declare.auto_delete = true;
  m.u.queue_declare.arguments = finish(&w);
  r = call(c, 1, &m, AG_QUEUE_DECLARE_OK);
  if (!same_bytes(r.u.queue_declare_ok.queue, str(queue)) || r.u.queue_declare_ok.message_count != 0 ||
      r.u.queue_declare_ok.consumer_count != 0)
    die("queue.declare-ok: unexpected values");

  ag_table_writer_init(&w, bargs, sizeof bargs);
  key(&w, "x-note"); put_s(&w, 'S', "bind", 4);
  memset(&m, 0, sizeof m);
  m.id = AG_QUEUE_BIND;
  m.u.queue_bind.queue = str(queue);
  m.u.queue_bind.exchange = str(exchange);
  m.u.queue_bind.routing_key = str(rkey);
  m.u.queue_bind.arguments = finish(&w);
  call(c, 1, &m, AG_QUEUE_BIND_OK);

  memset(&m, 0, sizeof m);
  m.id = AG_CONFIRM_SELECT;
  call(c, 1, &m, AG_CONFIRM_SELECT_OK);

  /* -- publish in batches, each confirmed before the next (acks may be multiple) -- */
  for (i = 0; i < count;) {
    int end = i + BATCH < count ? i + BATCH : count;
    for (; i < end; i++) {
      scratch_t s;
      ag_content_header_t h;
      size_t n = body_size(i), len = 0;
      memset(&m, 0, sizeof m);
      m.id = AG_BASIC_PUBLISH;
      m.u.basic_publish.exchange = str(exchange);
      m.u.basic_publish.routing_key = str(rkey);
      m.u.basic_publish.mandatory = true;
      memset(&h, 0, sizeof h);
      h.class_id = AG_CLASS_BASIC;
      h.u.basic = props(i, &s);
      body(i, expect_body, n);
      if (n > FRAME_MAX) over++;
      if (n == 0) empty++;
      st = ag_message_encode(1, &m, &h, expect_body, n, FRAME_MAX, c->wbuf + c->wlen, sizeof c->wbuf - c->wlen, &len);
      if (st != AG_OK) die("message_encode %d: %s", i, ag_status_name(st));
      if (h.body_size != n) die("message_encode did not set body_size");
      c->wlen += len;
    }
    flush(c);
    while (confirmed_upto < end) {
      ag_frame_t f = next_frame(c);
      decode_method(&f, &r);
      if (r.id == AG_BASIC_ACK) {
        uint64_t tag = r.u.basic_ack.delivery_tag; /* delivery tags count from 1 */
        if (tag <= (uint64_t)confirmed_upto || tag > (uint64_t)end) die("ack for tag %llu", (unsigned long long)tag);
        if (!r.u.basic_ack.multiple && tag != (uint64_t)confirmed_upto + 1) {
          /* a single ack out of order: RabbitMQ confirms in order on one channel, so this is a bug */
          die("ack %llu out of order after %d", (unsigned long long)tag, confirmed_upto);
        }
        confirmed_upto = (int)tag;
        acks++;
      } else if (r.id == AG_BASIC_NACK) {
        die("broker nacked %llu", (unsigned long long)r.u.basic_nack.delivery_tag);
      } else if (r.id == AG_BASIC_RETURN) {
        die("message returned: %.*s", (int)r.u.basic_return.reply_text.len,
            (const char *)r.u.basic_return.reply_text.bytes);
      } else {
        die("unexpected %s while waiting for confirms", ag_method_name(r.id));
      }
    }
  }

  /* -- consume everything back, compare, ack -- */
  memset(&m, 0, sizeof m);
  m.id = AG_BASIC_QOS;
  m.u.basic_qos.prefetch_count = 250;
  call(c, 1, &m, AG_BASIC_QOS_OK);
  memset(&m, 0, sizeof m);
  m.id = AG_BASIC_CONSUME;
  m.u.basic_consume.queue = str(queue);
  m.u.basic_consume.consumer_tag = str(ctag);
  r = call(c, 1, &m, AG_BASIC_CONSUME_OK);
  if (!same_bytes(r.u.basic_consume_ok.consumer_tag, str(ctag))) die("consume-ok: another consumer tag");
  while (received < count) {
    ag_frame_t f = next_frame(c);
    ag_content_header_t h;
    scratch_t s;
    ag_basic_properties_t want;
    const char *bad;
    size_t got = 0, n;
    uint64_t tag;
    decode_method(&f, &r);
    if (r.id != AG_BASIC_DELIVER) die("expected basic.deliver, got %s", ag_method_name(r.id));
    tag = r.u.basic_deliver.delivery_tag;
    if (!same_bytes(r.u.basic_deliver.exchange, str(exchange)) ||
        !same_bytes(r.u.basic_deliver.routing_key, str(rkey)) ||
        !same_bytes(r.u.basic_deliver.consumer_tag, str(ctag)) || r.u.basic_deliver.redelivered)
      die("deliver %d: exchange / routing key / consumer tag / redelivered differ", received);
    f = next_frame(c);
    if (f.type != AG_FRAME_HEADER || f.channel != 1) die("expected a header frame on channel 1");
    st = ag_content_header_decode(f.payload.bytes, f.payload.len, &h);
    if (st != AG_OK) die("content header: %s", ag_status_name(st));
    /* FIFO: the queue gives them back in publish order; message-id says so too */
    want = props(received, &s);
    if ((bad = diff_props(&want, &h.u.basic)) != NULL) die("message %d: property %s differs", received, bad);
    n = body_size(received);
    if (h.class_id != AG_CLASS_BASIC || h.body_size != n) die("message %d: body size %llu, sent %zu", received,
                                                           (unsigned long long)h.body_size, n);
    while (got < n) {
      f = next_frame(c);
      if (f.type != AG_FRAME_BODY || f.payload.len > n - got) die("message %d: bad body frame", received);
      if (f.payload.len + AG_FRAME_OVERHEAD > FRAME_MAX) die("a body frame over frame_max");
      memcpy(bodybuf + got, f.payload.bytes, f.payload.len);
      got += f.payload.len;
    }
    body(received, expect_body, n);
    if (n && memcmp(bodybuf, expect_body, n) != 0) die("message %d: body differs", received);
    received++;
    pending_tag = tag;
    if (received % 50 == 0 || received == count) { /* ack in groups, multiple=true */
      memset(&m, 0, sizeof m);
      m.id = AG_BASIC_ACK;
      m.u.basic_ack.delivery_tag = pending_tag;
      m.u.basic_ack.multiple = true;
      send_method(c, 1, &m);
    }
  }

  /* -- the queue is empty now (everything acked), then cancel and a clean close -- */
  memset(&m, 0, sizeof m);
  m.id = AG_QUEUE_DECLARE;
  m.u.queue_declare.queue = str(queue);
  m.u.queue_declare.passive = true;
  /* still consuming (an auto-delete queue goes with its last consumer) */
  r = call(c, 1, &m, AG_QUEUE_DECLARE_OK);
  if (r.u.queue_declare_ok.message_count != 0)
    die("%u messages left in the queue after acking all", r.u.queue_declare_ok.message_count);
  if (r.u.queue_declare_ok.consumer_count != 1) die("consumer count %u", r.u.queue_declare_ok.consumer_count);
  memset(&m, 0, sizeof m);
  m.id = AG_BASIC_CANCEL;
  m.u.basic_cancel.consumer_tag = str(ctag);
  call(c, 1, &m, AG_BASIC_CANCEL_OK);
  memset(&m, 0, sizeof m);
  m.id = AG_CHANNEL_CLOSE;
  m.u.channel_close.reply_code = AG_REPLY_SUCCESS;
  m.u.channel_close.reply_text = str("bye");
  call(c, 1, &m, AG_CHANNEL_CLOSE_OK);
  memset(&m, 0, sizeof m);
  m.id = AG_CONNECTION_CLOSE;
  m.u.connection_close.reply_code = AG_REPLY_SUCCESS;
  m.u.connection_close.reply_text = str("done");
  call(c, 0, &m, AG_CONNECTION_CLOSE_OK);
  close(c->fd);
  printf("OK %d messages published, %d confirmed (%d acks), consumed, compared and acked; "
         "%d bodies over frame_max, %d empty\n",
         count, confirmed_upto, acks, over, empty);
  return 0;
}
