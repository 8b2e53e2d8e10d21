/* libFuzzer on the engine's receive path, client role, past the handshake: a server's start, tune, open-ok,
 * channel.open-ok and confirm.select-ok are fed (and the client's answers sent) first, three messages are
 * published on the confirming channel 1, then the fuzz input is fed in two chunks (split where its first octet
 * says), every event drained, then the end of the stream. ASan/UBSan report what goes wrong; the engine's own
 * invariants are asserted here. Build: clang -fsanitize=fuzzer,address,undefined with the library. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "ag_engine.h"

static uint8_t in[8192], out[1 << 16], msg[1 << 16], body[5000];

static void feed_method(ag_engine_t *e, uint16_t ch, const ag_method_t *m) {
  static uint8_t buf[4096];
  size_t n = 0;
  ag_event_t ev;
  if (ag_method_frame_encode(ch, m, buf, sizeof buf, &n) != AG_OK)
    abort();
  ag_engine_receive(e, buf, n);
  while (ag_engine_next_event(e, &ev) != AG_EV_NONE) {
    if (ev.type == AG_EV_PROTOCOL_ERROR)
      abort();
  }
}

static void send_method(ag_engine_t *e, uint16_t ch, const ag_method_t *m) {
  if (ag_engine_send_method(e, ch, m) != AG_OK)
    abort();
}

static ag_method_t mk(uint32_t id) {
  ag_method_t m;
  memset(&m, 0, sizeof m);
  m.id = id;
  return m;
}

static void drain(ag_engine_t *e) {
  ag_event_t ev;
  size_t len;
  for (int i = 0; i < 100000; i++) {
    int t = ag_engine_next_event(e, &ev);
    (void)ag_engine_data_to_send(e, &len);
    assert(len <= sizeof out);
    if (t == AG_EV_NONE)
      return;
    if (t == AG_EV_MESSAGE || t == AG_EV_MESSAGE_RETURNED)
      assert(ev.body.len == ev.header.body_size && (ev.body.len == 0 || ev.body.bytes != NULL));
    if (t == AG_EV_PUBLISHES_UNCONFIRMED) /* a run of the three publishes on channel 1 */
      assert(ev.channel == 1 && 1 <= ev.first_tag && ev.first_tag <= ev.delivery_tag && ev.delivery_tag <= 3);
    if (t == AG_EV_PROTOCOL_ERROR) /* the caller's part: close, then keep reading */
      (void)ag_engine_close(e, ev.reply_code, AG_LIT("fuzz"));
  }
  abort(); /* an engine that never runs out of events */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static ag_engine_t e;
  ag_engine_config_t cfg = {4096, 4, 1, in, sizeof in, out, sizeof out, msg, sizeof msg, AG_ROLE_CLIENT};
  ag_method_t m, t;
  size_t len;
  if (ag_engine_init(&e, &cfg) != AG_OK || ag_engine_initiate(&e) != AG_OK)
    abort();
  m = mk(AG_CONNECTION_START);
  m.u.connection_start.version_major = 0;
  m.u.connection_start.version_minor = 9;
  m.u.connection_start.mechanisms = AG_LIT("PLAIN");
  m.u.connection_start.locales = AG_LIT("en_US");
  feed_method(&e, 0, &m);
  m = mk(AG_CONNECTION_START_OK);
  m.u.connection_start_ok.mechanism = AG_LIT("PLAIN");
  send_method(&e, 0, &m);
  m = mk(AG_CONNECTION_TUNE);
  m.u.connection_tune.channel_max = 4;
  m.u.connection_tune.frame_max = 4096;
  m.u.connection_tune.heartbeat = 1;
  feed_method(&e, 0, &m);
  ag_engine_tune_ok(&e, &m, &t);
  send_method(&e, 0, &t);
  send_method(&e, 0, (m = mk(AG_CONNECTION_OPEN), &m));
  feed_method(&e, 0, (m = mk(AG_CONNECTION_OPEN_OK), &m));
  send_method(&e, 1, (m = mk(AG_CHANNEL_OPEN), &m));
  feed_method(&e, 1, (m = mk(AG_CHANNEL_OPEN_OK), &m));
  send_method(&e, 1, (m = mk(AG_CONFIRM_SELECT), &m));
  feed_method(&e, 1, (m = mk(AG_CONFIRM_SELECT_OK), &m));
  for (int i = 0; i < 3; i++) {
    ag_content_header_t h;
    memset(&h, 0, sizeof h);
    h.class_id = AG_CLASS_BASIC;
    m = mk(AG_BASIC_PUBLISH);
    if (ag_engine_publish(&e, 1, &m, &h, body, sizeof body, NULL) != AG_OK)
      abort();
  }
  (void)ag_engine_data_to_send(&e, &len);
  size_t cut = size ? (size_t)data[0] * size / 256 : 0;
  if (cut > 0) {
    ag_engine_receive(&e, data, cut);
    ag_engine_tick(&e, 1500);
    drain(&e);
  }
  if (size > cut) {
    ag_engine_receive(&e, data + cut, size - cut);
    ag_engine_tick(&e, 2500);
    drain(&e);
  }
  ag_engine_receive(&e, data, 0);
  drain(&e);
  /* the end of the stream reported every publish left unconfirmed */
  assert(e.state == 6 && !e.held_due && e.reporting == 0 && e.ch[1].unconfirmed == 0);
  return 0;
}
