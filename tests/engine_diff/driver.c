/* The C engine's driver for the differential test (tests/engine_diff/README.md): reads one stream (the format
 * there) on stdin, drives a <prefix>_engine in the role its first line names with it and prints the canonical
 * event log on stdout. Every byte of the stream is the test's, so a line that does not parse is "bad-stream"
 * and exit 2. */
#include "ag_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ag_engine_t eng;
static uint8_t in_store[1 << 17], out_store[1 << 20];

/* The message storage starts at 1 KiB and grows (realloc) to at most 64 MiB: the engine's packing and growing
   run on every stream, and a message is too large only when its header says it is over that (a hostile change). */
static uint8_t *grow(void *ctx, uint8_t *old, size_t old_cap, size_t need, size_t *cap) {
  (void)ctx;
  (void)old_cap;
  uint8_t *p = need <= (64u << 20) ? realloc(old, need) : NULL;
  if (p != NULL)
    *cap = need;
  return p;
}
static char line[1 << 21];
/* the bytes of the current step: receive reads frames from them in place until the events are drained */
static uint8_t a[1 << 19], b[1 << 19], c[1 << 19];

static void bad(const char *what) {
  printf("bad-stream %s\n", what);
  exit(2);
}

static size_t unhex(const char *s, uint8_t *dst, size_t cap) {
  size_t n = strcmp(s, "-") == 0 ? 0 : strlen(s);
  if (n % 2 || n / 2 > cap)
    bad("hex");
  for (size_t i = 0; i < n / 2; i++) {
    unsigned v;
    if (sscanf(s + 2 * i, "%2x", &v) != 1)
      bad("hex");
    dst[i] = (uint8_t)v;
  }
  return n / 2;
}

static void hex(const uint8_t *p, size_t n) {
  if (n == 0)
    putchar('-');
  for (size_t i = 0; i < n; i++)
    printf("%02x", p[i]);
}

static void method_hex(const ag_method_t *m) {
  static uint8_t buf[1 << 17];
  size_t n = 0;
  if (ag_method_encode(m, buf, sizeof buf, &n) != AG_OK)
    bad("re-encode of a decoded method");
  hex(buf, n);
}

static void props_hex(const ag_content_header_t *h) {
  static uint8_t buf[1 << 17];
  size_t n = 0;
  if (ag_content_header_encode(h, buf, sizeof buf, &n) != AG_OK || n < 12)
    bad("re-encode of a decoded content header");
  hex(buf + 12, n - 12); /* the properties: class, weight and body size are in the other fields */
}

static void drain(void) {
  ag_event_t ev;
  int t;
  while ((t = ag_engine_next_event(&eng, &ev)) != AG_EV_NONE) {
    switch (t) {
    case AG_EV_METHOD:
      printf("ev method %u ", ev.channel);
      method_hex(&ev.method);
      break;
    case AG_EV_MESSAGE:
    case AG_EV_MESSAGE_RETURNED:
      printf("ev %s %u ", t == AG_EV_MESSAGE ? "message" : "returned", ev.channel);
      method_hex(&ev.method);
      putchar(' ');
      props_hex(&ev.header);
      putchar(' ');
      hex(ev.body.bytes, ev.body.len);
      break;
    case AG_EV_CONNECTION_NEGOTIATED:
      printf("ev negotiated %u %u %u", eng.frame_max, eng.channel_max, eng.heartbeat);
      break;
    case AG_EV_CHANNEL_OPENED:
      printf("ev opened %u", ev.channel);
      break;
    case AG_EV_CHANNEL_CLOSED:
      printf("ev channel-closed %u %u", ev.channel, ev.reply_code);
      break;
    case AG_EV_CONNECTION_CLOSED:
      printf("ev connection-closed %u", ev.reply_code);
      break;
    case AG_EV_PUBLISH_ACKED:
    case AG_EV_PUBLISH_NACKED:
      printf("ev %s %u %llu", t == AG_EV_PUBLISH_ACKED ? "acked" : "nacked", ev.channel,
             (unsigned long long)ev.delivery_tag);
      break;
    case AG_EV_PEER_SILENT:
      printf("ev silent");
      break;
    case AG_EV_PROTOCOL_HEADER:
      printf("ev protocol-header");
      break;
    case AG_EV_PROTOCOL_ERROR:
      printf("ev protocol-error %u", ev.reply_code);
      break;
    case AG_EV_CONNECTION_LOST:
      printf("ev lost %d %s", ev.closed ? 1 : 0, ev.what);
      break;
    case AG_EV_MESSAGE_TOO_LARGE:
      printf("ev too-large %u %llu", ev.channel, (unsigned long long)ev.header.body_size);
      break;
    case AG_EV_PUBLISHES_UNCONFIRMED:
      printf("ev unconfirmed %u %llu %llu", ev.channel, (unsigned long long)ev.first_tag,
             (unsigned long long)ev.delivery_tag);
      break;
    default:
      printf("ev unknown %d", t);
    }
    putchar('\n');
  }
  size_t n;
  const uint8_t *d = ag_engine_data_to_send(&eng, &n);
  if (n) {
    printf("out ");
    hex(d, n);
    putchar('\n');
  }
}

static void status(int rc) {
  if (rc != AG_OK)
    printf("refused\n");
}

int main(void) {
  unsigned cm = 0, fm = 0, hb = 0;
  char role[8];
  if (!fgets(line, sizeof line, stdin) || sscanf(line, "%7s %u %u %u", role, &cm, &fm, &hb) != 4 ||
      (strcmp(role, "client") != 0 && strcmp(role, "server") != 0))
    bad("first line");
  uint8_t *msg_store = malloc(1024);
  int r = role[0] == 's' ? AG_ROLE_SERVER : AG_ROLE_CLIENT;
  ag_engine_config_t cfg = {fm,        (uint16_t)cm,     (uint16_t)hb, in_store, sizeof in_store,
                            out_store, sizeof out_store, msg_store,    1024,     r};
  if (fm > sizeof in_store || ag_engine_init(&eng, &cfg) != AG_OK)
    bad("config");
  ag_engine_set_grow(&eng, grow, NULL);
  static char w1[16], w2[1 << 20], w3[1 << 19], w4[1 << 19], w5[1 << 19];
  while (fgets(line, sizeof line, stdin)) {
    size_t len = strlen(line);
    if (len && line[len - 1] == '\n')
      line[--len] = 0;
    if (len == 0 || line[0] == '#')
      continue;
    int k = sscanf(line, "%15s %1048575s %524287s %524287s %524287s", w1, w2, w3, w4, w5);
    printf("> %s\n", w1);
    if (strcmp(w1, "initiate") == 0) {
      status(ag_engine_initiate(&eng));
    } else if (strcmp(w1, "recv") == 0 && k == 2) {
      ag_engine_receive(&eng, a, unhex(w2, a, sizeof a));
    } else if (strcmp(w1, "eof") == 0) {
      ag_engine_receive(&eng, a, 0);
    } else if (strcmp(w1, "tick") == 0 && k == 2) {
      ag_engine_tick(&eng, strtoull(w2, NULL, 10));
    } else if ((strcmp(w1, "send") == 0 && k == 3) || (strcmp(w1, "publish") == 0 && k == 5)) {
      ag_method_t m;
      if (ag_method_decode(a, unhex(w3, a, sizeof a), &m) != AG_OK)
        bad("method");
      if (w1[0] == 's') {
        status(ag_engine_send_method(&eng, (uint16_t)atoi(w2), &m));
      } else {
        ag_content_header_t h;
        size_t body = unhex(w5, c, sizeof c);
        if (ag_content_header_decode(b, unhex(w4, b, sizeof b), &h) != AG_OK)
          bad("header");
        status(ag_engine_publish(&eng, (uint16_t)atoi(w2), &m, &h, c, body, NULL));
      }
    } else if (strcmp(w1, "close") == 0 && k >= 2) {
      ag_bytes_t text = {a, k == 3 ? unhex(w3, a, sizeof a) : 0};
      status(ag_engine_close(&eng, (uint16_t)atoi(w2), text));
    } else {
      bad(w1);
    }
    drain();
  }
  return 0;
}
