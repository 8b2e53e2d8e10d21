/* What the two engine fuzz targets share (tests/c/fuzz_engine.c, client role; fuzz_engine_server.c, server
 * role): the buffers, the checks after each step and the step loop. Each target does its role's handshake,
 * then calls run_steps. */
#ifndef FUZZ_ENGINE_STEPS_H
#define FUZZ_ENGINE_STEPS_H
#include <stdlib.h>
#include <string.h>

#include "ag_engine.h"

static uint8_t in[8192], out[1 << 16], msg[1 << 16];
static int lost;               /* the connection's end was reported */
static int closing;            /* our connection.close was taken: only the peer's close or close-ok is read */
static int strict_after_close; /* set by the server harness */

/* assert() would vanish under -DNDEBUG: these must hold in every build */
#define CHECK(c)                                                                                                       \
  do {                                                                                                                 \
    if (!(c))                                                                                                          \
      abort();                                                                                                         \
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
    size_t size = (size_t)d[i + 3] << 24 | (size_t)d[i + 4] << 16 | (size_t)d[i + 5] << 8 | d[i + 6];
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
    /* the server harness's stricter look: after our close only the peer's close or close-ok counts, every
       other frame is discarded */
    if (closing && strict_after_close)
      CHECK(t == AG_EV_CONNECTION_CLOSED || t == AG_EV_PROTOCOL_ERROR || t == AG_EV_CONNECTION_LOST ||
            t == AG_EV_PUBLISHES_UNCONFIRMED || t == AG_EV_PEER_SILENT);
    if (t == AG_EV_CONNECTION_CLOSED)
      closing = 0;
    /* after our close the peer's other frames are discarded, not violations: a close or close-ok on a channel
       above 0 is the one left */
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

/* The steps (the format above) from data[at], each followed by drain(); then the end of the stream, which
   must leave the engine lost with nothing held or unconfirmed. */
static int run_steps(ag_engine_t *e, const uint8_t *data, size_t size, size_t at) {
  ag_method_t m;
  size_t len;
  uint64_t now = 0;
  while (at < size) {
    switch (data[at++] % 6) {
    case 0: {
      const uint8_t *p = chunk(data, size, &at, &len);
      if (len) /* a receive of 0 octets is the end of the stream: step 5's */
        ag_engine_receive(e, p, len);
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
        (void)ag_engine_send_method(e, ch, &m);
      else if (ag_content_header_decode(hp, hn, &h) == AG_OK)
        (void)ag_engine_publish(e, ch, &m, &h, bp, bn, NULL);
      break;
    }
    case 3:
      now += take(data, size, &at, 2);
      ag_engine_tick(e, now);
      break;
    case 4: {
      uint16_t code = (uint16_t)take(data, size, &at, 2);
      size_t n = take(data, size, &at, 1);
      ag_bytes_t text = {data + at, size - at < n ? size - at : n};
      at += text.len;
      closing |= ag_engine_close(e, code, text) == AG_OK;
      break;
    }
    default:
      ag_engine_receive(e, data, 0);
      break;
    }
    drain(e);
  }
  ag_engine_receive(e, data, 0);
  drain(e);
  /* the end of the stream was reported, after every publish left unconfirmed */
  CHECK(lost && e->state == 6 && !e->held_due && e->reporting == 0);
  for (int c = 0; c <= AG_ENGINE_MAX_CHANNELS; c++)
    CHECK(e->ch[c].unconfirmed == 0);
  return 0;
}

#endif
