/* The C client's fault driver (issue 41): tests/faults/protocol.md's scenarios on the generated blocking client
 * (client/ag_client.h, rendered with tests/data/librabbitmq-extras.xml so connection.blocked and unblocked are
 * there), for tests/amqp0/clients/test_fault_matrix.py. Reads "run SCENARIO k=v ...", "go" and "quit" lines on stdin; writes
 * "phase", "event" and "outcome" lines on stdout (values percent-encoded); logs on stderr.
 *
 * Only the client's own statuses become outcome kinds: AG_CLIENT_CLOSED connection_closed (code: c->last's),
 * AG_CLIENT_LOST connection_lost, AG_CLIENT_CHANNEL_CLOSED channel_closed, AG_CLIENT_CONNECT connect_failed,
 * AG_CLIENT_TIMEOUT from a connect connect_timeout, AG_CLIENT_VERSION version_refused, AG_CLIENT_CONSUMER
 * callback_error; anything else (a library status, a timeout of a call) is "error" with its status name. The C
 * client has no consumer iterator (its consume loop is ag_client_next) and no close callback: the connection's
 * end is the status its calls return, which the driver reports as the "closed" event where the protocol asks
 * for it. Built by tests/faults/c_driver.py (ASan, UBSan, warnings as errors). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ag_client.h"

static ag_client_t client; /* large (its buffers): static */
static char line[1 << 16];

/* -- the protocol's lines -------------------------------------------------------------------------------------- */

static char params[32][2][1024];
static int nparams;

static const char *param(const char *key, const char *otherwise) {
  for (int i = 0; i < nparams; i++)
    if (strcmp(params[i][0], key) == 0)
      return params[i][1];
  return otherwise;
}

static long num(const char *key, long otherwise) {
  const char *v = param(key, NULL);
  return v ? strtol(v, NULL, 10) : otherwise;
}

static void unescape(char *dst, const char *src, size_t cap) {
  size_t j = 0;
  for (size_t i = 0; src[i] && j + 1 < cap; i++) {
    unsigned v;
    if (src[i] == '%' && src[i + 1] && src[i + 2] && sscanf(src + i + 1, "%2x", &v) == 1) {
      dst[j++] = (char)v;
      i += 2;
    } else {
      dst[j++] = src[i];
    }
  }
  dst[j] = 0;
}

/* the fields of the line being made: " k=v" each, the value percent-encoded */
static char fields[8192];

static void field(const char *k, const char *v) {
  size_t n = strlen(fields);
  n += (size_t)snprintf(fields + n, sizeof fields - n, " %s=", k);
  for (const unsigned char *p = (const unsigned char *)v; *p && n + 4 < sizeof fields; p++)
    if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr("-._~", *p))
      fields[n++] = (char)*p;
    else
      n += (size_t)snprintf(fields + n, sizeof fields - n, "%%%02X", *p);
  fields[n] = 0;
}

/* "kind name" and the fields made since the last line */
static void say(const char *kind, const char *name) {
  printf("%s %s%s\n", kind, name, fields);
  fflush(stdout);
  fields[0] = 0;
}

static const char *itoa_(long v) {
  static char bufs[8][32];
  static int k;
  char *b = bufs[k++ % 8];
  snprintf(b, 32, "%ld", v);
  return b;
}
#define I(v) itoa_((long)(v))

static void wait_go(void) {
  if (!fgets(line, sizeof line, stdin) || strncmp(line, "go", 2) != 0) {
    fprintf(stderr, "fault_driver: expected go, got %s\n", line);
    exit(2);
  }
}

static int fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL)
    return -1;
  while (readdir(d) != NULL)
    n++;
  closedir(d);
  return n;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* -- outcomes -------------------------------------------------------------------------------------------------- */

/* the outcome of a status out of the client (with the fields made before it); raised= the status's name, as
   tests/faults/matrix.py's SPELLING has it (the prefix left out) */
static void outcome_of(int rc, bool connecting) {
  if (rc <= AG_CLIENT_CLOSED && rc >= AG_CLIENT_THREAD) {
    static const char *const names[] = {"CLIENT_CLOSED",         "CLIENT_LOST",     "CLIENT_TIMEOUT",
                                        "CLIENT_CHANNEL_CLOSED", "CLIENT_PROTOCOL", "CLIENT_VERSION",
                                        "CLIENT_CONNECT",        "CLIENT_CONSUMER", "CLIENT_THREAD"};
    field("raised", names[AG_CLIENT_CLOSED - rc]);
  }
  switch (rc) {
  case AG_CLIENT_CLOSED:
    field("code", I(client.last.reply_code));
    say("outcome", "connection_closed");
    return;
  case AG_CLIENT_LOST:
    field("what", client.last.what ? client.last.what : "");
    say("outcome", "connection_lost");
    return;
  case AG_CLIENT_CHANNEL_CLOSED:
    field("code", I(client.last.reply_code));
    say("outcome", "channel_closed");
    return;
  case AG_CLIENT_CONNECT:
    field("os_error", I(client.os_error));
    say("outcome", "connect_failed");
    return;
  case AG_CLIENT_VERSION: {
    char server[32];
    snprintf(server, sizeof server, "%u.%u.%u.%u", client.server_header[4], client.server_header[5],
             client.server_header[6], client.server_header[7]);
    field("server", server);
    say("outcome", "version_refused");
    return;
  }
  default:
    if (rc == AG_CLIENT_TIMEOUT && connecting) {
      say("outcome", "connect_timeout");
      return;
    }
    field("type", ag_status_name(rc));
    field("message", ag_strerror(rc));
    say("outcome", "error");
  }
}

/* the scenario ends with a status: the connection closed first (close_ok says whether that returned OK) */
static void closing(int rc) {
  field("close_ok", I(ag_client_close(&client) == AG_OK));
  outcome_of(rc, false);
}

static int open_client(void) {
  ag_client_options_t o;
  ag_client_options_init(&o);
  o.heartbeat = (uint16_t)num("heartbeat", 60);
  o.connection_timeout_ms = (int)(num("timeout", 10) * 1000);
  if (ag_client_options_url(&o, param("url", "")) != AG_OK)
    return AG_ERR_VALUE;
  return ag_client_connect(&client, &o);
}

#define TRY(expr)                                                                                                      \
  do {                                                                                                                 \
    int rc_ = (expr);                                                                                                  \
    if (rc_ != AG_OK) {                                                                                                \
      fprintf(stderr, "fault_driver: %s: %s\n", #expr, ag_status_name(rc_));                                           \
      closing(rc_);                                                                                                    \
      return;                                                                                                          \
    }                                                                                                                  \
  } while (0)

#define CONNECT()                                                                                                      \
  do {                                                                                                                 \
    int rc_ = open_client();                                                                                           \
    if (rc_ != AG_OK) {                                                                                                \
      outcome_of(rc_, true);                                                                                           \
      return;                                                                                                          \
    }                                                                                                                  \
  } while (0)

static ag_bytes_t queue(void) { return ag_cstring(param("queue", "")); }

static int declare(uint16_t channel) {
  ag_queue_declare_t qd;
  memset(&qd, 0, sizeof qd);
  qd.queue = queue();
  return ag_client_queue_declare(&client, channel, &qd, NULL);
}

static int confirm_select(uint16_t channel) {
  ag_confirm_select_t cs;
  memset(&cs, 0, sizeof cs);
  return ag_client_confirm_select(&client, channel, &cs, NULL);
}

static int consume(uint16_t channel, const char *q) {
  ag_basic_consume_t bc;
  memset(&bc, 0, sizeof bc);
  bc.queue = ag_cstring(q);
  return ag_client_basic_consume(&client, channel, &bc, NULL);
}

static int ack(uint16_t channel, uint64_t tag) {
  ag_basic_ack_t a;
  memset(&a, 0, sizeof a);
  a.delivery_tag = tag;
  return ag_client_basic_ack(&client, channel, &a, NULL);
}

/* the roundtrip pattern: i in 4 octets, then (i + k) % 256 */
static void pattern(uint8_t *b, uint32_t i, size_t size) {
  for (size_t k = 0; k < 4 && k < size; k++)
    b[k] = (uint8_t)(i >> (24 - 8 * k));
  for (size_t k = 0; k + 4 < size; k++)
    b[k + 4] = (uint8_t)((i + k) % 256);
}

static uint8_t *body_buffer(size_t size) {
  static uint8_t *buf;
  static size_t cap;
  if (size > cap) {
    free(buf);
    buf = malloc(size ? size : 1);
    cap = size;
  }
  return buf;
}

/* -- the scenarios --------------------------------------------------------------------------------------------- */

static void s_connect(void) {
  int before = fds();
  int rc = open_client();
  if (rc != AG_OK) {
    field("fds", I(fds() - before));
    outcome_of(rc, true);
    return;
  }
  say("phase", "connected");
  wait_go();
  unsigned hb = client.engine.heartbeat, fm = client.engine.frame_max, cm = client.engine.channel_max;
  rc = ag_client_close(&client);
  if (rc != AG_OK) {
    field("fds", I(fds() - before));
    outcome_of(rc, false);
    return;
  }
  field("heartbeat", I(hb));
  field("frame_max", I(fm));
  field("channel_max", I(cm));
  field("fds", I(fds() - before));
  say("outcome", "ok");
}

static void s_publish_stream(void) {
  size_t size = (size_t)num("size", 65536);
  long batch = num("batch", 64), published = 0, confirmed = 0;
  double seconds = (double)num("seconds", 10);
  uint8_t *body = body_buffer(size);
  memset(body, 0, size);
  CONNECT();
  TRY(confirm_select(1));
  TRY(declare(1));
  say("phase", "publishing");
  double end = now_s() + seconds;
  while (now_s() < end) {
    for (long i = 0; i < batch; i++) {
      TRY(ag_client_publish(&client, 1, AG_LIT(""), queue(), NULL, (ag_bytes_t){body, size}, NULL));
      published++;
    }
    TRY(ag_client_wait_confirms(&client, 1));
    confirmed = published;
  }
  TRY(ag_client_close(&client));
  field("published", I(published));
  field("confirmed", I(confirmed));
  say("outcome", "ok");
}

static void s_await_confirm(void) {
  CONNECT();
  TRY(confirm_select(1));
  TRY(declare(1));
  say("phase", "ready");
  wait_go();
  TRY(ag_client_publish(&client, 1, AG_LIT(""), queue(), NULL, AG_LIT("0123456789"), NULL));
  TRY(ag_client_wait_confirms(&client, 1));
  TRY(ag_client_close(&client));
  say("outcome", "ok");
}

/* client_next until an event of type want (its event in *ev), in slices of a second; a status ends it */
static int next_until(int want, ag_event_t *ev, double seconds) {
  double end = now_s() + seconds;
  for (;;) {
    int rc = ag_client_next(&client, ev, 1000);
    if (rc == want)
      return AG_OK;
    if (rc < 0 && rc != AG_CLIENT_TIMEOUT)
      return rc;
    if (now_s() > end)
      return AG_CLIENT_TIMEOUT;
  }
}

static void s_consume_idle(void) {
  ag_event_t ev;
  CONNECT();
  TRY(declare(1));
  TRY(consume(1, param("queue", "")));
  say("phase", "consuming");
  TRY(next_until(AG_EV_MESSAGE, &ev, 120));
  TRY(ag_client_close(&client));
  say("outcome", "ok");
}

static void s_roundtrip(void) {
  long count = num("count", 10), got = 0;
  size_t size = (size_t)num("size", 100);
  uint8_t *body = body_buffer(size), *want = malloc(size ? size : 1);
  bool ok = true;
  CONNECT();
  TRY(confirm_select(1));
  TRY(declare(1));
  for (long i = 0; i < count; i++) {
    pattern(body, (uint32_t)i, size);
    TRY(ag_client_publish(&client, 1, AG_LIT(""), queue(), NULL, (ag_bytes_t){body, size}, NULL));
  }
  TRY(ag_client_wait_confirms(&client, 1));
  TRY(consume(1, param("queue", "")));
  while (got < count) {
    ag_event_t ev;
    TRY(next_until(AG_EV_MESSAGE, &ev, 60));
    pattern(want, (uint32_t)got, size);
    ok = ok && ev.body.len == size && memcmp(ev.body.bytes, want, size) == 0;
    TRY(ack(1, ev.method.u.basic_deliver.delivery_tag));
    got++;
  }
  free(want);
  TRY(ag_client_close(&client));
  field("consumed", I(got));
  field("body_ok", I(ok));
  say("outcome", "ok");
}

static void s_consume_ack(void) {
  long count = num("count", 20), acks = num("ack", 0), got = 0;
  ag_basic_qos_t qos;
  memset(&qos, 0, sizeof qos);
  qos.prefetch_count = (uint16_t)count;
  CONNECT();
  TRY(ag_client_basic_qos(&client, 1, &qos, NULL));
  TRY(consume(1, param("queue", "")));
  for (;;) {
    ag_event_t ev;
    int rc = next_until(AG_EV_MESSAGE, &ev, 120);
    if (rc != AG_OK) {
      if (rc == AG_CLIENT_CLOSED) /* the connection's end, as the client gives it: the status */
        field("code", I(client.last.reply_code));
      say("event", "closed");
      closing(rc);
      return;
    }
    got++;
    if (got <= acks)
      TRY(ack(1, ev.method.u.basic_deliver.delivery_tag));
    if (got == count)
      say("phase", "acked");
  }
}

static int cancelled;

static int on_delivery(ag_client_t *c, const ag_event_t *ev, void *ctx) {
  (void)c;
  (void)ctx;
  if (ev->type == AG_EV_METHOD && ev->method.id == AG_BASIC_CANCEL)
    cancelled = 1;
  return 0;
}

static void s_consumer_cancel(void) {
  ag_basic_consume_t bc;
  memset(&bc, 0, sizeof bc);
  bc.queue = queue();
  cancelled = 0;
  CONNECT();
  TRY(declare(1));
  TRY(ag_client_consume(&client, 1, &bc, on_delivery, NULL, NULL));
  say("phase", "consuming");
  double end = now_s() + 60;
  while (!cancelled && now_s() < end) {
    ag_event_t ev;
    int rc = ag_client_next(&client, &ev, 500);
    if (rc < 0 && rc != AG_CLIENT_TIMEOUT) {
      closing(rc);
      return;
    }
    if (rc == AG_EV_METHOD && ev.method.id == AG_BASIC_CANCEL) /* (a consumer without a callback) */
      cancelled = 1;
  }
  TRY(ag_client_close(&client));
  if (cancelled)
    say("event", "cancelled");
  say("outcome", cancelled ? "consumer_cancelled" : "ok");
}

/* the publishes client_next reports unconfirmed now */
static long unconfirmed(void) {
  ag_event_t ev;
  long n = 0;
  while (ag_client_next(&client, &ev, 0) == AG_EV_PUBLISHES_UNCONFIRMED)
    n += (long)(ev.delivery_tag - ev.first_tag + 1);
  return n;
}

static int usable_on(uint16_t channel) {
  ag_channel_open_t co;
  memset(&co, 0, sizeof co);
  return ag_client_channel_open(&client, channel, &co, NULL) == AG_OK && declare(channel) == AG_OK;
}

static void s_confirm_closed(void) {
  long count = num("count", 1);
  CONNECT();
  TRY(confirm_select(1));
  for (long i = 0; i < count; i++)
    TRY(ag_client_publish(&client, 1, AG_LIT("amqgen.fault.missing"), queue(), NULL, AG_LIT("0123456789"), NULL));
  int rc = ag_client_wait_confirms(&client, 1);
  if (rc != AG_CLIENT_CHANNEL_CLOSED) {
    closing(rc == AG_OK ? AG_ERR_MISUSE : rc);
    return;
  }
  unsigned code = client.last.reply_code;
  long left = unconfirmed();
  int usable = usable_on(2);
  int ok = ag_client_close(&client) == AG_OK;
  field("raised", "CLIENT_CHANNEL_CLOSED");
  field("code", I(code));
  field("unconfirmed", I(left));
  field("usable", I(usable));
  field("close_ok", I(ok));
  say("outcome", "channel_closed");
}

static void s_mandatory_return(void) {
  ag_basic_publish_t pub;
  memset(&pub, 0, sizeof pub);
  pub.routing_key = queue();
  pub.mandatory = true;
  int returned = 0, body_ok = 0;
  CONNECT();
  TRY(confirm_select(1));
  TRY(ag_client_basic_publish(&client, 1, &pub, NULL, AG_LIT("abc"), NULL));
  TRY(ag_client_wait_confirms(&client, 1));
  ag_event_t ev;
  int rc;
  while ((rc = ag_client_next(&client, &ev, 0)) > 0)
    if (rc == AG_EV_MESSAGE_RETURNED) {
      returned++;
      body_ok = ev.body.len == 3 && memcmp(ev.body.bytes, "abc", 3) == 0;
      field("code", I(ev.method.u.basic_return.reply_code));
      say("event", "returned");
    }
  TRY(ag_client_close(&client));
  field("returned", I(returned));
  field("body_ok", I(body_ok));
  say("outcome", "ok");
}

static void s_blocked(void) {
  ag_event_t ev;
  CONNECT();
  say("phase", "connected");
  wait_go();
  TRY(ag_client_publish(&client, 1, AG_LIT(""), queue(), NULL, AG_LIT("blocked?"), NULL));
  for (;;) {
    TRY(next_until(AG_EV_METHOD, &ev, 60));
    if (ev.method.id == AG_CONNECTION_BLOCKED)
      break;
  }
  say("event", "blocked");
  say("phase", "blocked");
  wait_go();
  for (;;) {
    TRY(next_until(AG_EV_METHOD, &ev, 60));
    if (ev.method.id == AG_CONNECTION_UNBLOCKED)
      break;
  }
  say("event", "unblocked");
  TRY(ag_client_close(&client));
  say("outcome", "ok");
}

static int raising(ag_client_t *c, const ag_event_t *ev, void *ctx) {
  (void)c;
  (void)ev;
  (void)ctx;
  return 7; /* a C callback's "raise": non-zero */
}

static void s_callback_raises(void) {
  ag_basic_consume_t bc;
  memset(&bc, 0, sizeof bc);
  bc.queue = queue();
  CONNECT();
  TRY(declare(1));
  TRY(ag_client_publish(&client, 1, AG_LIT(""), queue(), NULL, AG_LIT("raise"), NULL));
  TRY(ag_client_consume(&client, 1, &bc, raising, NULL, NULL));
  ag_event_t ev;
  int rc = next_until(AG_CLIENT_CONSUMER, &ev, 30);
  if (rc != AG_OK) {
    closing(rc);
    return;
  }
  int value = client.consumer_error, usable = usable_on(2);
  int ok = ag_client_close(&client) == AG_OK;
  field("raised", "CLIENT_CONSUMER");
  field("code", "200");
  field("value", I(value));
  field("usable", I(usable));
  field("close_ok", I(ok));
  say("outcome", "callback_error");
}

static uint8_t table_buf[200000];

static void s_local_refusal(void) {
  const char *what = param("what", "");
  CONNECT();
  int rc;
  if (strcmp(what, "routing_key") == 0) {
    char key[301];
    memset(key, 'k', 300);
    key[300] = 0;
    rc = ag_client_publish(&client, 1, AG_LIT(""), ag_cstring(key), NULL, AG_LIT("x"), NULL);
  } else { /* a headers table larger than frame_max */
    static char big[150000];
    ag_table_writer_t w;
    ag_content_header_t h;
    memset(&h, 0, sizeof h);
    memset(big, 'v', sizeof big - 1);
    h.class_id = AG_CLASS_BASIC;
    h.u.basic.flags = AG_BASIC_HEADERS_FLAG;
    ag_table_writer_init(&w, table_buf, sizeof table_buf);
    ag_table_add_str(&w, AG_LIT("big"), ag_cstring(big));
    TRY(ag_table_writer_finish(&w, &h.u.basic.headers));
    rc = ag_client_publish(&client, 1, AG_LIT(""), queue(), &h, AG_LIT("x"), NULL);
  }
  if (rc != AG_ERR_VALUE && rc != AG_ERR_FRAME_MAX) { /* the client's refusals of what the wire cannot carry */
    closing(rc == AG_OK ? AG_ERR_MISUSE : rc);
    return;
  }
  int usable = declare(1) == AG_OK;
  int ok = ag_client_close(&client) == AG_OK;
  field("status", ag_status_name(rc));
  field("usable", I(usable));
  field("close_ok", I(ok));
  say("outcome", "local_error");
}

static void s_big_message(void) {
  size_t size = (size_t)num("size", 1 << 20);
  uint8_t *body = body_buffer(size);
  pattern(body, 0, size);
  CONNECT();
  TRY(confirm_select(1));
  TRY(declare(1));
  TRY(ag_client_publish(&client, 1, AG_LIT(""), queue(), NULL, (ag_bytes_t){body, size}, NULL));
  TRY(ag_client_wait_confirms(&client, 1));
  TRY(consume(1, param("queue", "")));
  ag_event_t ev;
  TRY(next_until(AG_EV_MESSAGE, &ev, 60));
  int ok = ev.body.len == size && memcmp(ev.body.bytes, body, size) == 0;
  TRY(ack(1, ev.method.u.basic_deliver.delivery_tag));
  TRY(ag_client_close(&client));
  field("body_ok", I(ok));
  field("size", I(size));
  say("outcome", "ok");
}

/* tests/faults/server.py's interleaved deliveries: channel 1 bytes(range(256)) * 40, channel 2 b"second channel "
 * 700 */
static int server_body_ok(uint16_t channel, ag_bytes_t b) {
  if (channel == 1) {
    if (b.len != 10240)
      return 0;
    for (size_t i = 0; i < b.len; i++)
      if (b.bytes[i] != (uint8_t)(i % 256))
        return 0;
    return 1;
  }
  static const char unit[] = "second channel ";
  if (channel != 2 || b.len != 700 * (sizeof unit - 1))
    return 0;
  for (size_t i = 0; i < b.len; i++)
    if (b.bytes[i] != (uint8_t)unit[i % (sizeof unit - 1)])
      return 0;
  return 1;
}

static void s_consume_server(void) {
  int got = 0, ok = 1;
  ag_channel_open_t co;
  memset(&co, 0, sizeof co);
  CONNECT();
  TRY(ag_client_channel_open(&client, 2, &co, NULL));
  TRY(consume(1, "q1"));
  TRY(consume(2, "q2"));
  while (got < 2) {
    ag_event_t ev;
    TRY(next_until(AG_EV_MESSAGE, &ev, 10));
    ok = ok && server_body_ok(ev.channel, ev.body);
    got++;
  }
  TRY(ag_client_close(&client));
  field("consumed", I(got));
  field("body_ok", I(ok));
  say("outcome", "ok");
}

static const struct {
  const char *name;
  void (*run)(void);
} scenarios[] = {
    {"connect", s_connect},
    {"publish_stream", s_publish_stream},
    {"await_confirm", s_await_confirm},
    {"consume_idle", s_consume_idle},
    {"roundtrip", s_roundtrip},
    {"consume_ack", s_consume_ack},
    {"consumer_cancel", s_consumer_cancel},
    {"confirm_closed", s_confirm_closed},
    {"mandatory_return", s_mandatory_return},
    {"blocked", s_blocked},
    {"callback_raises", s_callback_raises},
    {"local_refusal", s_local_refusal},
    {"big_message", s_big_message},
    {"consume_server", s_consume_server},
};

int main(void) {
  while (fgets(line, sizeof line, stdin)) {
    char *words[40];
    int n = 0;
    for (char *t = strtok(line, " \n"); t && n < 40; t = strtok(NULL, " \n"))
      words[n++] = t;
    if (n == 0)
      continue;
    if (strcmp(words[0], "quit") == 0)
      return 0;
    if (strcmp(words[0], "run") != 0 || n < 2) {
      fprintf(stderr, "fault_driver: unexpected line %s\n", words[0]);
      return 2;
    }
    nparams = 0;
    for (int i = 2; i < n && nparams < 32; i++) {
      char *eq = strchr(words[i], '=');
      if (eq == NULL)
        continue;
      *eq = 0;
      unescape(params[nparams][0], words[i], sizeof params[nparams][0]);
      unescape(params[nparams][1], eq + 1, sizeof params[nparams][1]);
      nparams++;
    }
    size_t k = 0;
    while (k < sizeof scenarios / sizeof scenarios[0] && strcmp(scenarios[k].name, words[1]) != 0)
      k++;
    if (k == sizeof scenarios / sizeof scenarios[0]) {
      field("type", "NotImplemented");
      field("message", words[1]);
      say("outcome", "error");
      continue;
    }
    fprintf(stderr, "fault_driver: run %s\n", words[1]);
    scenarios[k].run();
  }
  return 0;
}
