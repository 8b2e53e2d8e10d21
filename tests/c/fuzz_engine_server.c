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
#include "fuzz_engine_steps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static ag_engine_t e;
  static const uint8_t amqp[8] = {'A', 'M', 'Q', 'P', 0, 0, 9, 1};
  uint16_t hb = size ? data[0] % 3 : 1;
  ag_engine_config_t cfg = {4096, 32, hb, in, sizeof in, out, sizeof out, msg, sizeof msg, AG_ROLE_SERVER};
  ag_method_t m, t;
  ag_event_t ev;
  size_t len, at = 1;
  lost = closing = 0;
  strict_after_close = 1;
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
  return run_steps(&e, data, size, at);
}
