/* libFuzzer on the engine's receive path, server role, past the handshake (tests/c/fuzz_engine.c
 * is the client role's: the same steps, the same checks). The handshake is done here: the client's
 * protocol header, start-ok, tune-ok 32/4096/heartbeat and open fed as a client's octets; start,
 * tune and open-ok sent. Then the input is a stream of steps, the caller's and the client's, as
 * tests/engine_diff's server streams have them (tests/c/engine_seeds.py's write_server writes those
 * conversations in this form: the seeds):
 *
 *   octet 0: the heartbeat tuned (its value % 3, seconds)
 *   then steps, each an opcode octet (its value % 6) and its operands (lengths big-endian, cut at
 *   the end):
 *     0 recv    len16 octets                 the client's octets (read in place)
 *     1 send    ch8 len16 method-payload     the caller sends a method: a reply to a request, a
 *                                            basic.ack (one that does not decode is skipped)
 *     2 publish ch8 len16 method len16 header len16 body    a delivery
 *     3 tick    ms16                         time passes by that much
 *     4 close   code16 len8 text             the caller closes the connection
 *     5 eof                                  the end of the stream
 *
 * After every step each event is drained and the octets out are checked: whole frames, each within
 * the frame_max agreed. No event may follow the connection's end; a protocol error is answered with
 * a close, as a caller must; after our close no protocol error comes but for a close or close-ok on
 * a channel above 0. At the end the stream ends: the engine must be lost with nothing left to
 * report. ASan/UBSan report memory and arithmetic errors. Build: clang
 * -fsanitize=fuzzer,address,undefined with the library. */
#include <stdlib.h>
#include <string.h>

#include "ag_engine.h"

static uint8_t in[8192], out[1 << 16], msg[1 << 16];
static int lost;    /* the connection's end was reported */
static int closing; /* our connection.close was taken: only the peer's close or close-ok is read */

/* assert() would vanish under -DNDEBUG: these must hold in every build */
#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c))                                                                                      \
      abort();                                                                                     \
  } while (0)

static void feed_method(ag_engine_t *e, uint16_t ch, const ag_method_t *m) {
  static uint8_t buf[4096];
  size_t n = 0;
  ag_event_t ev;
  CHECK(ag_method_frame_encode(ch, m, buf, sizeof buf, &n) == AG_OK);
  ag_engine_receive(e, buf, n);
  while (ag_engine_next_event(e, &ev) != AG_EV_NONE)
    CHECK(ev.type != AG_EV_PROTOCOL_ERROR);
}

static ag_method_t mk(uint32_t id) {
  ag_method_t m;
  memset(&m, 0, sizeof m);
  m.id = id;
  return m;
}

/* The octets out: whole frames, none over the frame_max agreed. */
static void check_out(ag_engine_t *e) {
  size_t len, i = 0;
  const uint8_t *d = ag_engine_data_to_send(e, &len);
  CHECK(len <= sizeof out);
  while (i < len) {
    CHECK(len - i >= 8);
    uint8_t type = d[i];
    size_t size =
        (size_t)d[i + 3] << 24 | (size_t)d[i + 4] << 16 | (size_t)d[i + 5] << 8 | d[i + 6];
    CHECK(type == 1 || type == 2 || type == 3 || type == 8);
    CHECK(size + 8 <= e->frame_max && size + 8 <= len - i);
    CHECK(d[i + 7 + size] == 0xCE);
    i += size + 8;
  }
}

static void drain(ag_engine_t *e) {
  ag_event_t ev;
  for (int i = 0; i < 100000; i++) {
    int t = ag_engine_next_event(e, &ev);
    check_out(e);
    if (t == AG_EV_NONE)
      return;
    CHECK(!lost); /* nothing follows the end of the stream */
    if (t == AG_EV_CONNECTION_LOST)
      lost = 1;
    if (t == AG_EV_MESSAGE || t == AG_EV_MESSAGE_RETURNED)
      CHECK(ev.body.len == ev.header.body_size && (ev.body.len == 0 || ev.body.bytes != NULL));
    if (t == AG_EV_PUBLISHES_UNCONFIRMED)
      CHECK(ev.channel >= 1 && 1 <= ev.first_tag && ev.first_tag <= ev.delivery_tag);
    /* after our close only the peer's close or close-ok counts: every other frame is discarded */
    if (closing)
      CHECK(t == AG_EV_CONNECTION_CLOSED || t == AG_EV_PROTOCOL_ERROR ||
            t == AG_EV_CONNECTION_LOST || t == AG_EV_PUBLISHES_UNCONFIRMED ||
            t == AG_EV_PEER_SILENT);
    if (t == AG_EV_CONNECTION_CLOSED)
      closing = 0;
    /* after our close the peer's other frames are discarded, not violations: a close or close-ok on
       a channel above 0 is the one left */
    if (t == AG_EV_PROTOCOL_ERROR && closing)
      CHECK(ev.method.id == AG_CONNECTION_CLOSE || ev.method.id == AG_CONNECTION_CLOSE_OK);
    if (t == AG_EV_PROTOCOL_ERROR) /* the caller's part: close, then keep reading */
      closing |= ag_engine_close(e, ev.reply_code, AG_LIT("fuzz")) == AG_OK;
  }
  abort(); /* an engine that never runs out of events */
}

static size_t take(const uint8_t *data, size_t size, size_t *at, size_t n) {
  size_t k = size - *at < n ? size - *at : n;
  size_t v = 0;
  for (size_t j = 0; j < k; j++)
    v = v << 8 | data[*at + j];
  *at += k;
  return v;
}

/* len16 octets from the input: where they start, how many there are (cut at the end) */
static const uint8_t *chunk(const uint8_t *data, size_t size, size_t *at, size_t *n) {
  size_t want = take(data, size, at, 2);
  const uint8_t *p = data + *at;
  *n = size - *at < want ? size - *at : want;
  *at += *n;
  return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static ag_engine_t e;
  static const uint8_t amqp[8] = {'A', 'M', 'Q', 'P', 0, 0, 9, 1};
  uint16_t hb = size ? data[0] % 3 : 1;
  ag_engine_config_t cfg = {4096, 32,         hb,  in,         sizeof in,
                            out,  sizeof out, msg, sizeof msg, AG_ROLE_SERVER};
  ag_method_t m, t;
  ag_event_t ev;
  size_t len, at = 1;
  uint64_t now = 0;
  lost = closing = 0;
  CHECK(ag_engine_init(&e, &cfg) == AG_OK);
  ag_engine_receive(&e, amqp, sizeof amqp);
  CHECK(ag_engine_next_event(&e, &ev) == AG_EV_PROTOCOL_HEADER);
  m = mk(AG_CONNECTION_START);
  m.u.connection_start.version_major = 0;
  m.u.connection_start.version_minor = 9;
  m.u.connection_start.mechanisms = AG_LIT("PLAIN");
  m.u.connection_start.locales = AG_LIT("en_US");
  CHECK(ag_engine_send_method(&e, 0, &m) == AG_OK);
  m = mk(AG_CONNECTION_START_OK);
  m.u.connection_start_ok.mechanism = AG_LIT("PLAIN");
  m.u.connection_start_ok.response = AG_LIT("\0guest\0guest");
  m.u.connection_start_ok.locale = AG_LIT("en_US");
  feed_method(&e, 0, &m);
  ag_engine_tune(&e, &t);
  CHECK(t.u.connection_tune.frame_max == 4096 && t.u.connection_tune.heartbeat == hb);
  CHECK(ag_engine_send_method(&e, 0, &t) == AG_OK);
  m = mk(AG_CONNECTION_TUNE_OK);
  m.u.connection_tune_ok.channel_max = t.u.connection_tune.channel_max;
  m.u.connection_tune_ok.frame_max = t.u.connection_tune.frame_max;
  m.u.connection_tune_ok.heartbeat = hb;
  feed_method(&e, 0, &m);
  m = mk(AG_CONNECTION_OPEN);
  m.u.connection_open.virtual_host = AG_LIT("/");
  feed_method(&e, 0, &m);
  CHECK(ag_engine_send_method(&e, 0, (m = mk(AG_CONNECTION_OPEN_OK), &m)) == AG_OK);
  int negotiated = 0;
  while (ag_engine_next_event(&e, &ev) != AG_EV_NONE)
    negotiated |= ev.type == AG_EV_CONNECTION_NEGOTIATED;
  CHECK(negotiated && e.state == 2 && e.frame_max == 4096);
  (void)ag_engine_data_to_send(&e, &len);
  while (at < size) {
    switch (data[at++] % 6) {
    case 0: {
      const uint8_t *p = chunk(data, size, &at, &len);
      if (len) /* a receive of 0 octets is the end of the stream: step 5's */
        ag_engine_receive(&e, p, len);
      break;
    }
    case 1:
    case 2: {
      int publish = data[at - 1] % 6 == 2;
      uint16_t ch = (uint16_t)take(data, size, &at, 1);
      size_t hn = 0, bn = 0;
      const uint8_t *mp = chunk(data, size, &at, &len), *hp = NULL, *bp = NULL;
      ag_content_header_t h;
      if (publish) {
        hp = chunk(data, size, &at, &hn);
        bp = chunk(data, size, &at, &bn);
      }
      if (ag_method_decode(mp, len, &m) != AG_OK)
        break;
      if (!publish)
        (void)ag_engine_send_method(&e, ch, &m);
      else if (ag_content_header_decode(hp, hn, &h) == AG_OK)
        (void)ag_engine_publish(&e, ch, &m, &h, bp, bn, NULL);
      break;
    }
    case 3:
      now += take(data, size, &at, 2);
      ag_engine_tick(&e, now);
      break;
    case 4: {
      uint16_t code = (uint16_t)take(data, size, &at, 2);
      size_t n = take(data, size, &at, 1);
      ag_bytes_t text = {data + at, size - at < n ? size - at : n};
      at += text.len;
      closing |= ag_engine_close(&e, code, text) == AG_OK;
      break;
    }
    default:
      ag_engine_receive(&e, data, 0);
      break;
    }
    drain(&e);
  }
  ag_engine_receive(&e, data, 0);
  drain(&e);
  /* the end of the stream was reported, after every publish left unconfirmed */
  CHECK(lost && e.state == 6 && !e.held_due && e.reporting == 0);
  for (int c = 0; c <= AG_ENGINE_MAX_CHANNELS; c++)
    CHECK(e.ch[c].unconfirmed == 0);
  return 0;
}
