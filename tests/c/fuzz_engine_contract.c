/* libFuzzer on the engine through its header's contract alone (include/ag_engine.h, issue 41): whatever the header
 * lets a caller do, done the way a caller that trusts it would. Every chunk given to receive is a fresh malloc'd
 * copy, freed as soon as next_event returned AG_EV_NONE (the header says the engine then holds no pointer into
 * it); the message storage starts small and grows through engine_set_grow's function (realloc, up to a limit, so the
 * too-large path is reached too), and is moved to fresh storage on request (the old freed at once); an event's
 * memory is read in full (re-encoded) before the next call. ASan then finds any read of memory the header says
 * the caller may have freed. No handshake is done here: the input starts from a fresh engine in either role, so
 * the protocol header, the negotiation and every later state are the fuzzer's.
 *
 *   octet 0: bit 0 the role (server when set); bits 1-3 the heartbeat; bits 4-6 the msg storage's first size
 *            (64 << n octets); bit 7 no grow (the storage is all there is)
 *   octets 1-2: channel_max; octets 3-4: frame_max / 16 (under 4096: 4096)
 *   then steps, each an opcode octet (its value % 10) and its operands (lengths big-endian, cut at the end):
 *     0 recv    len16 octets                          the peer's octets (a malloc'd copy)
 *     1 send    ch8 len16 method-payload              the caller sends a method (one that does not decode is
 *                                                     skipped: the caller's methods are typed)
 *     2 publish ch8 len16 method len16 header len16 body
 *     3 tick    ms16                                  time passes by that much
 *     4 close   code16 len8 text                      the caller closes the connection
 *     5 eof                                           the end of the stream
 *     6 initiate                                      the client's protocol header
 *     7 parts   ch8 len16 method len16 header len16 body len16 part   publish_begin, then publish_body by parts
 *                                                     (the octets out taken between them)
 *     8 move    len8 extra                            set_msg_storage to fresh storage of msg_used + extra octets
 *     9 take                                          data_to_send (the octets out are checked: whole frames)
 *
 * After every step each event is drained; no event may follow the connection's end; a message's body is as
 * long as its header says; a protocol error is answered with a close. At the end the stream ends: the engine
 * must be lost with nothing left to report. Build: clang -fsanitize=fuzzer,address,undefined with the library.
 * tests/c/engine_seeds.py's write_contract writes the recorded conversations (handshakes included) as seeds. */
#include <stdlib.h>
#include <string.h>

#include "ag_engine.h"

#define CHECK(c)                                                                                                       \
  do {                                                                                                                 \
    if (!(c))                                                                                                          \
      abort();                                                                                                         \
  } while (0)

#define GROW_LIMIT (1u << 20)

static uint8_t in[1 << 17], out[1 << 16], scratch[1 << 17];
static uint8_t *msg;
static int lost, closing;

static uint8_t *grow(void *ctx, uint8_t *old, size_t old_cap, size_t need, size_t *cap) {
  (void)ctx;
  (void)old_cap;
  if (need > GROW_LIMIT)
    return NULL;
  uint8_t *p = realloc(old, need);
  if (p == NULL)
    return NULL;
  msg = p;
  *cap = need;
  return p;
}

/* reads every octet the event points at: ASan finds it if the engine gave memory that is gone */
static void touch(const ag_event_t *ev) {
  size_t n = 0;
  unsigned sum = 0;
  if (ev->type == AG_EV_METHOD || ev->type == AG_EV_MESSAGE || ev->type == AG_EV_MESSAGE_RETURNED ||
      ev->type == AG_EV_MESSAGE_TOO_LARGE)
    (void)ag_method_encode(&ev->method, scratch, sizeof scratch, &n);
  if ((ev->type == AG_EV_MESSAGE || ev->type == AG_EV_MESSAGE_RETURNED ||
       (ev->type == AG_EV_MESSAGE_TOO_LARGE && ev->header.class_id != 0)))
    CHECK(ag_content_header_encode(&ev->header, scratch, sizeof scratch, &n) == AG_OK);
  for (size_t i = 0; i < ev->body.len; i++)
    sum += ev->body.bytes[i];
  for (size_t i = 0; i < ev->reply_text.len; i++)
    sum += ev->reply_text.bytes[i];
  scratch[0] = (uint8_t)sum;
}

/* the messages being read: each region within the storage, under msg_top, none overlapping another */
static void check_regions(const ag_engine_t *e) {
  size_t used = 0;
  for (int i = 1; i <= AG_ENGINE_MAX_CHANNELS; i++) {
    const ag_channel_state_t *a = &e->ch[i];
    if (a->msg_len == 0)
      continue;
    CHECK(a->in_content && a->msg_at + a->msg_len <= e->msg_top && e->msg_top <= e->cfg.msg_cap);
    CHECK(a->method_len + (a->msg_header ? a->header_len + a->body_size : 0) <= a->msg_len);
    used += a->msg_len;
    for (int j = i + 1; j <= AG_ENGINE_MAX_CHANNELS; j++) {
      const ag_channel_state_t *b = &e->ch[j];
      CHECK(b->msg_len == 0 || a->msg_at + a->msg_len <= b->msg_at || b->msg_at + b->msg_len <= a->msg_at);
    }
  }
  CHECK(used == ag_engine_msg_used(e));
}

static void drain(ag_engine_t *e) {
  ag_event_t ev;
  for (int i = 0; i < 100000; i++) {
    int t = ag_engine_next_event(e, &ev);
    check_regions(e);
    if (t == AG_EV_NONE)
      return;
    CHECK(!lost); /* nothing follows the end of the stream */
    touch(&ev);
    if (t == AG_EV_CONNECTION_LOST)
      lost = 1;
    if (t == AG_EV_MESSAGE || t == AG_EV_MESSAGE_RETURNED)
      CHECK(ev.body.len == ev.header.body_size && (ev.body.len == 0 || ev.body.bytes != NULL));
    if (t == AG_EV_MESSAGE_TOO_LARGE)
      CHECK(ev.body.len == 0 && ev.channel >= 1);
    if (t == AG_EV_PUBLISHES_UNCONFIRMED)
      CHECK(ev.channel >= 1 && 1 <= ev.first_tag && ev.first_tag <= ev.delivery_tag);
    if (t == AG_EV_CONNECTION_CLOSED)
      closing = 0;
    if (t == AG_EV_PROTOCOL_ERROR) /* the caller's part: close, then keep reading */
      closing |= ag_engine_close(e, ev.reply_code, AG_LIT("fuzz")) == AG_OK;
  }
  abort(); /* an engine that never runs out of events */
}

/* The octets out: frames, each whole and within frame_max, or a protocol header. */
static void take_out(ag_engine_t *e) {
  size_t len, i = 0;
  const uint8_t *d = ag_engine_data_to_send(e, &len);
  CHECK(len <= sizeof out);
  while (i < len) {
    CHECK(len - i >= 8);
    if (memcmp(d + i, "AMQP", 4) == 0) {
      i += 8;
      continue;
    }
    size_t size = (size_t)d[i + 3] << 24 | (size_t)d[i + 4] << 16 | (size_t)d[i + 5] << 8 | d[i + 6];
    CHECK(d[i] == 1 || d[i] == 2 || d[i] == 3 || d[i] == 8);
    CHECK(size + 8 <= len - i && size + 8 <= (e->frame_max > e->cfg.frame_max ? e->frame_max : e->cfg.frame_max));
    CHECK(d[i + 7 + size] == 0xCE);
    i += size + 8;
  }
}

static size_t take(const uint8_t *data, size_t size, size_t *at, size_t n) {
  size_t k = size - *at < n ? size - *at : n;
  size_t v = 0;
  for (size_t j = 0; j < k; j++)
    v = v << 8 | data[*at + j];
  *at += k;
  return v;
}

static const uint8_t *chunk(const uint8_t *data, size_t size, size_t *at, size_t *n) {
  size_t want = take(data, size, at, 2);
  const uint8_t *p = data + *at;
  *n = size - *at < want ? size - *at : want;
  *at += *n;
  return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static ag_engine_t e;
  size_t at = 0;
  unsigned flags = (unsigned)take(data, size, &at, 1);
  unsigned cm = (unsigned)take(data, size, &at, 2), fm = (unsigned)take(data, size, &at, 2) * 16;
  size_t cap = (size_t)64 << (flags >> 4 & 7);
  uint64_t now = 0;
  msg = malloc(cap);
  CHECK(msg != NULL);
  uint32_t frame_max = fm < 4096 ? 4096 : fm > sizeof in ? (uint32_t)sizeof in : fm;
  uint16_t heartbeat = (uint16_t)(flags >> 1 & 7);
  int role = flags & 1 ? AG_ROLE_SERVER : AG_ROLE_CLIENT;
  ag_engine_config_t cfg = {frame_max, (uint16_t)cm, heartbeat, in, sizeof in, out, sizeof out, msg, cap, role};
  lost = closing = 0;
  CHECK(ag_engine_init(&e, &cfg) == AG_OK);
  ag_engine_set_grow(&e, flags & 128 ? NULL : grow, NULL);
  while (at < size) {
    unsigned op = data[at++] % 10;
    size_t len, hn, bn;
    ag_method_t m;
    ag_content_header_t h;
    if (op == 0) {
      const uint8_t *p = chunk(data, size, &at, &len);
      if (len == 0)
        continue; /* a receive of 0 octets is the end of the stream: step 5's */
      uint8_t *copy = malloc(len);
      CHECK(copy != NULL);
      memcpy(copy, p, len);
      ag_engine_receive(&e, copy, len);
      drain(&e);
      free(copy); /* next_event said none: the engine holds nothing of it */
      continue;
    }
    if (op == 1 || op == 2 || op == 7) {
      uint16_t ch = (uint16_t)take(data, size, &at, 1);
      const uint8_t *mp = chunk(data, size, &at, &len), *hp = NULL, *bp = NULL;
      if (op != 1) {
        hp = chunk(data, size, &at, &hn);
        bp = chunk(data, size, &at, &bn);
      }
      size_t part = op == 7 ? take(data, size, &at, 2) : 0;
      if (ag_method_decode(mp, len, &m) != AG_OK)
        continue;
      if (op == 1) {
        (void)ag_engine_send_method(&e, ch, &m);
      } else if (ag_content_header_decode(hp, hn, &h) == AG_OK) {
        if (op == 2) {
          (void)ag_engine_publish(&e, ch, &m, &h, bp, bn, NULL);
        } else if (ag_engine_publish_begin(&e, ch, &m, &h, bn, NULL) == AG_OK) {
          size_t given = 0;
          for (size_t guard = 0; given < bn && guard < 2 * bn + 10; guard++) {
            size_t n = bn - given < part + 1 ? bn - given : part + 1;
            size_t took = ag_engine_publish_body(&e, bp + given, n);
            given += took;
            if (took < n)
              take_out(&e); /* full: written, then the rest */
          }
          CHECK(given == bn);
          CHECK(ag_engine_publish_body(&e, bp, 0) == 0);
        }
      }
    } else if (op == 3) {
      now += take(data, size, &at, 2);
      ag_engine_tick(&e, now);
    } else if (op == 4) {
      uint16_t code = (uint16_t)take(data, size, &at, 2);
      size_t n = take(data, size, &at, 1);
      ag_bytes_t text = {data + at, size - at < n ? size - at : n};
      at += text.len;
      closing |= ag_engine_close(&e, code, text) == AG_OK;
    } else if (op == 5) {
      ag_engine_receive(&e, data, 0);
    } else if (op == 6) {
      (void)ag_engine_initiate(&e);
    } else if (op == 8) {
      size_t want = ag_engine_msg_used(&e) + take(data, size, &at, 1);
      uint8_t *fresh = malloc(want ? want : 1);
      CHECK(fresh != NULL);
      if (ag_engine_set_msg_storage(&e, fresh, want) == AG_OK) {
        free(msg); /* the engine has moved what it keeps: the old storage is gone */
        msg = fresh;
      } else {
        free(fresh);
      }
    } else {
      take_out(&e);
    }
    drain(&e);
  }
  ag_engine_receive(&e, data, 0);
  drain(&e);
  take_out(&e);
  /* the end of the stream was reported, after every publish left unconfirmed */
  CHECK(lost && e.state == 6 && !e.held_due && e.reporting == 0);
  free(msg);
  return 0;
}
